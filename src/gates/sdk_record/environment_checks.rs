//! The `sdk-record` gate's decisions about the interpreter environment as a
//! whole (observed in `environment.rs`): `environment-records`,
//! `environment-bytecode`, `environment-startup`, `environment-unowned`.
//!
//! What runs at every interpreter start must be owned by a verified
//! RECORD: an unowned `.pth` file fails whatever its lines (an executable
//! line runs code; a path line puts an unverified directory on every
//! `sys.path`, where it can supply a module no distribution installs, a
//! `sitecustomize` among them), and so does an unowned `sitecustomize` (or a
//! `usercustomize` that `site` imports). Other unowned files are named, a
//! warning: nothing imports them unless asked to by name.

use super::environment::{EnvironmentObservation, PthFile};
use super::pth::PthLineKind;
use crate::evidence::Check;
use serde_json::json;

/// The four environment checks of `env`, in order.
pub fn environment_checks(env: &EnvironmentObservation) -> Vec<Check> {
    let Some(probe) = &env.probe else {
        let why = env.probe_error.as_deref().unwrap_or("no answer");
        return [
            "environment-records",
            "environment-bytecode",
            "environment-startup",
            "environment-unowned",
        ]
        .iter()
        .map(|name| {
            Check::fail(
                name,
                None,
                format!(
                    "not observed: the site probe did not answer ({why}); expected the interpreter's \
                     site directories, .pth files and start-up modules: see logs/sdk-record/site-probe.*"
                ),
            )
            .with_observed(json!({ "error": why }))
        })
        .collect();
    };
    vec![
        records_check(env, &probe.site_dirs),
        bytecode_check(env),
        startup_check(env),
        unowned_check(env),
    ]
}

fn records_check(env: &EnvironmentObservation, site_dirs: &[String]) -> Check {
    let is_sdk = |name: &str| env.sdk_dist_info.as_deref() == Some(name);
    let failing: Vec<String> = env
        .distributions
        .iter()
        .filter(|d| d.read_error.is_some() || !d.problems.is_empty())
        .filter(|d| !is_sdk(&d.dist_info))
        .map(|d| {
            let mut what: Vec<String> = d.read_error.iter().cloned().collect();
            what.extend(d.problems.iter().cloned());
            format!("{}: {}", d.dist_info, what.join("; "))
        })
        .collect();
    let observed = json!({
        "site_dirs": site_dirs,
        "distributions": env.distributions,
        "verified_files": env.verified_files,
        "interpreter": env.interpreter,
    });
    let dirs = site_dirs.join(", ");
    let sdk_note = match &env.sdk_dist_info {
        Some(name) => format!(" ({name} is judged by record-rows)"),
        None => String::new(),
    };
    if failing.is_empty() {
        return Check::pass(
            "environment-records",
            None,
            format!(
                "all {} distributions in {dirs} match their RECORD{sdk_note}: {} files verified \
                 (sha256 and size)",
                env.distributions.len(),
                env.verified_files
            ),
        )
        .with_observed(observed);
    }
    Check::fail(
        "environment-records",
        None,
        format!(
            "{} of {} distributions in {dirs} do not match their RECORD (every interpreter start may \
             import them, the test runner among them){sdk_note}:\n  {}\nreinstall them into a fresh \
             environment",
            failing.len(),
            env.distributions.len(),
            failing.join("\n  ")
        ),
    )
    .with_observed(observed)
}

fn bytecode_check(env: &EnvironmentObservation) -> Check {
    let observed = json!({
        "equal": env.bytecode_equal,
        "equal_from_cache": env.bytecode_cached,
        "cache": env.bytecode_cache,
        "problems": env.bytecode_problems,
    });
    if env.bytecode_problems.is_empty() {
        return Check::pass(
            "environment-bytecode",
            None,
            format!(
                "{} bytecode files in the site directories are this interpreter's compilation of \
                 their RECORD-verified sources{}; none that Python would load differs or lacks a source",
                env.bytecode_equal,
                super::bytecode::cache_sentence(
                    env.bytecode_equal,
                    env.bytecode_cached,
                    env.bytecode_cache.as_ref()
                ),
            ),
        )
        .with_observed(observed);
    }
    Check::fail(
        "environment-bytecode",
        None,
        format!(
            "{} bytecode file(s) that Python loads instead of their source are not its compilation:\n  {}\n\
             delete them (Python then compiles the verified source) or reinstall into a fresh environment",
            env.bytecode_problems.len(),
            env.bytecode_problems.join("\n  ")
        ),
    )
    .with_observed(observed)
}

fn describe_pth(pth: &PthFile) -> String {
    let exec: Vec<String> = pth
        .lines
        .iter()
        .filter(|l| l.kind == PthLineKind::Executable)
        .map(|l| format!("line {} executes `{}`", l.line, l.text))
        .collect();
    let paths: Vec<String> = pth
        .lines
        .iter()
        .filter(|l| l.kind == PthLineKind::Path)
        .map(|l| format!("line {} adds `{}` to sys.path", l.line, l.text))
        .collect();
    let mut what: Vec<String> = exec.into_iter().chain(paths).collect();
    if let Some(e) = &pth.read_error {
        what.push(format!("unreadable: {e}"));
    }
    if what.is_empty() {
        what.push("no executable or path line".into());
    }
    format!("{} ({})", pth.path, what.join("; "))
}

/// What would run or steer every interpreter start that no verified
/// RECORD owns: `.pth` files, start-up modules `site` imports, and `.pth`
/// lines the probe saw executed that no `.pth` file the verifier read holds.
fn startup_problems(env: &EnvironmentObservation) -> Vec<String> {
    let mut problems = Vec::new();
    for pth in env.pth_files.iter().filter(|p| p.owner.is_none()) {
        let executes = pth.lines.iter().any(|l| l.kind == PthLineKind::Executable);
        problems.push(format!(
            "{}: expected only .pth files a verified RECORD owns, found one no RECORD owns, which \
             `site` reads at every interpreter start{}",
            describe_pth(pth),
            if executes {
                " and whose import line it executes"
            } else {
                ""
            }
        ));
    }
    for module in env
        .startup_modules
        .iter()
        .filter(|m| m.imported_at_start && m.owner.is_none())
    {
        problems.push(format!(
            "{}: expected no `{}` module or one a verified RECORD owns, found {} on the path, which \
             `site` imports at every interpreter start",
            module.origin, module.name, module.origin
        ));
    }
    // The probe recorded what `site` would execute; every such line must be
    // one the verifier read in a .pth file itself.
    let read_lines: Vec<&str> = env
        .pth_files
        .iter()
        .flat_map(|p| p.lines.iter())
        .filter(|l| l.kind == PthLineKind::Executable)
        .map(|l| l.text.trim_end())
        .collect();
    if let Some(probe) = &env.probe {
        for line in &probe.executed_pth_lines {
            if !read_lines.contains(&line.trim_end()) {
                problems.push(format!(
                    "`{}`: the site probe saw `site` execute this .pth line, expected it in a .pth file \
                     of a site directory, found it in none the verifier read",
                    line.trim_end()
                ));
            }
        }
    }
    problems
}

/// `environment-startup`'s passing detail: the owned `.pth` files, the
/// start-up modules on the path and those not imported at start-up.
fn startup_clean_detail(env: &EnvironmentObservation) -> String {
    let owned: Vec<String> = env
        .pth_files
        .iter()
        .filter_map(|p| {
            p.owner
                .as_ref()
                .map(|o| format!("{} (owned by {o})", describe_pth(p)))
        })
        .collect();
    let not_imported: Vec<String> = env
        .startup_modules
        .iter()
        .filter(|m| !m.imported_at_start)
        .map(|m| format!("{} at {} (not imported at start-up)", m.name, m.origin))
        .collect();
    let modules = env
        .startup_modules
        .iter()
        .map(|m| format!("{} at {}", m.name, m.origin))
        .collect::<Vec<_>>();
    format!(
        "every .pth file `site` reads is owned by a verified RECORD ({}); start-up modules on \
         the path: {}{}",
        if owned.is_empty() {
            "none present".to_string()
        } else {
            owned.join(", ")
        },
        if modules.is_empty() {
            "none (no sitecustomize, no usercustomize)".to_string()
        } else {
            modules.join(", ")
        },
        if not_imported.is_empty() {
            String::new()
        } else {
            format!("; {}", not_imported.join(", "))
        }
    )
}

/// `environment-startup`: nothing `site` runs or reads at every interpreter
/// start is outside a verified RECORD.
fn startup_check(env: &EnvironmentObservation) -> Check {
    let problems = startup_problems(env);
    let observed = json!({
        "pth_files": env.pth_files,
        "startup_modules": env.startup_modules,
        "added_path_entries": env.added_path_entries,
        "executed_pth_lines": env.probe.as_ref().map(|p| &p.executed_pth_lines),
        "startup_imports": env.probe.as_ref().map(|p| &p.startup_calls),
        "enable_user_site": env.probe.as_ref().map(|p| p.enable_user_site),
        "flags": env.probe.as_ref().map(|p| &p.flags),
        "initial_path": env.probe.as_ref().map(|p| &p.initial_path),
        "sys_path": env.probe.as_ref().map(|p| &p.sys_path),
        "base_site_packages": env.probe.as_ref().map(|p| &p.base_site_packages),
    });
    if problems.is_empty() {
        return Check::pass("environment-startup", None, startup_clean_detail(env))
            .with_observed(observed);
    }
    Check::fail(
        "environment-startup",
        None,
        format!(
            "{} start-up file(s) no verified RECORD owns would run or steer every interpreter start \
             (the SDK runtime, lbp, pytest and the repository's tests):\n  {}\nremove them, or \
             certify with an interpreter whose environment holds only installed distributions",
            problems.len(),
            problems.join("\n  ")
        ),
    )
    .with_observed(observed)
}

fn unowned_check(env: &EnvironmentObservation) -> Check {
    let observed = json!({
        "unowned": env.unowned,
        "venv_files": env.venv_files,
        "pytest_rewrite_cache": env.pytest_rewrite_cache,
    });
    let pytest = if env.pytest_rewrite_cache.is_empty() {
        String::new()
    } else {
        format!(
            "; {} pytest assertion-rewrite cache files, never read by the verifier's steps (their \
             pytest reads its cache under -X pycache_prefix), are recorded",
            env.pytest_rewrite_cache.len()
        )
    };
    if env.unowned.is_empty() {
        return Check::pass(
            "environment-unowned",
            None,
            format!(
                "every file in the site directories and the scripts directory is owned by a verified \
                 RECORD (bytecode: the compilation of its verified source), besides the venv's own \
                 files: {}",
                env.venv_files.join(", ")
            ) + &pytest,
        )
        .with_observed(observed);
    }
    Check::warn(
        "environment-unowned",
        None,
        format!(
            "{} file(s) in the site directories or the scripts directory are owned by no verified \
             RECORD (nothing imports them at start-up; code importing them by name would run \
             unverified bytes): {}",
            env.unowned.len(),
            env.unowned.join(", ")
        ) + &pytest,
    )
    .with_observed(observed)
}
