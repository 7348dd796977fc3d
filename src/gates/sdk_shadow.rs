//! The `sdk-shadow` gate: in the verified interpreter, with the flags and the
//! working directory a worker uses, `langbot_plugin` resolves only to the
//! install `sdk-record` verified, and no second copy is within reach.
//!
//! The SDK runtime starts each worker as `python -m langbot_plugin.cli.__init__
//! run` with cwd = the artifact's code dir (SDK module
//! `langbot_plugin.runtime.plugin.worker_launcher`), so the code dir comes
//! first on the worker's `sys.path`: a `langbot_plugin/` folder shipped inside
//! a plugin shadows the real SDK. `src/python/shadow_probe.py` reproduces that
//! path with `PathFinder.find_spec` (locating only, importing nothing from the
//! candidate) and inventories every other copy: sys.path entries, `.pth`
//! files, editable finders. The staged sources and archive member lists are
//! also searched here, in Rust.
//!
//! The dependency environment the runtime prepares per plugin is not checked
//! here (a later gate owns it).

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use serde_json::json;
use std::path::{Path, PathBuf};

/// The import package whose copies are searched for.
pub const PACKAGE: &str = "langbot_plugin";

/// Variables that change where Python imports from; none may reach a child.
pub const WATCHED_ENV: [&str; 3] = ["PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"];

/// The `sdk-shadow` gate.
pub struct SdkShadow;

mod observe;
mod probe;

#[cfg(test)]
pub(crate) use observe::observe_sources;
pub(crate) use observe::{observe, CandidateObservation, Observation};
pub use probe::*;

/// Whether `spec` is the verified package: found, every search location is
/// the verified directory and the origin lies inside it.
pub fn spec_is_verified(spec: &SpecInfo, verified: &VerifiedPaths, real: &Realpaths) -> bool {
    spec.found
        && !spec.locations.is_empty()
        && spec
            .locations
            .iter()
            .all(|l| real.get(l) == verified.package_dir)
        && spec
            .origin
            .as_deref()
            .is_some_and(|o| real.get(o).starts_with(&verified.package_dir))
}

fn spec_text(spec: &SpecInfo, error: Option<&str>) -> String {
    if let Some(e) = error {
        return format!("find_spec raised {e}");
    }
    if !spec.found {
        return "no spec".into();
    }
    format!(
        "origin {}, search locations [{}]",
        spec.origin.as_deref().unwrap_or("None"),
        spec.locations.join(", ")
    )
}

/// `find-spec`: both the interpreter's and the emulated worker's resolution
/// land in the verified package.
pub fn find_spec_check(
    probe: &ShadowProbe,
    verified: &VerifiedPaths,
    folder: &str,
    real: &Realpaths,
) -> Check {
    let interp_ok = probe.interpreter_spec_error.is_none()
        && spec_is_verified(&probe.interpreter_spec, verified, real);
    let worker_ok =
        probe.worker_spec_error.is_none() && spec_is_verified(&probe.worker_spec, verified, real);
    let observed = json!({
        "verified_package_dir": verified.package_dir.display().to_string(),
        "executable": probe.executable,
        "cwd": probe.cwd,
        "interpreter": {
            "origin": probe.interpreter_spec.origin,
            "locations": probe.interpreter_spec.locations,
            "loader": probe.interpreter_spec.loader,
            "error": probe.interpreter_spec_error,
            "sys_path": probe.sys_path,
        },
        "worker": {
            "origin": probe.worker_spec.origin,
            "locations": probe.worker_spec.locations,
            "loader": probe.worker_spec.loader,
            "error": probe.worker_spec_error,
            "sys_path": probe.worker_path,
        },
    });
    let interp = spec_text(
        &probe.interpreter_spec,
        probe.interpreter_spec_error.as_deref(),
    );
    let worker = spec_text(&probe.worker_spec, probe.worker_spec_error.as_deref());
    if interp_ok && worker_ok {
        return Check::pass(
            "find-spec",
            Some(folder),
            format!(
                "with cwd {}, `{PACKAGE}` resolves to the verified {} both as the interpreter is and on the worker's sys.path (code dir first)",
                probe.cwd,
                verified.package_dir.display()
            ),
        )
        .with_observed(observed);
    }
    let mut found = Vec::new();
    if !interp_ok {
        found.push(format!("the interpreter's find_spec gives {interp}"));
    }
    if !worker_ok {
        found.push(format!(
            "the worker's sys.path [{}, ...] gives {worker}",
            probe.code_dir
        ));
    }
    Check::fail(
        "find-spec",
        Some(folder),
        format!(
            "expected `{PACKAGE}` to resolve to the verified {} only; found: {}. A worker started in {} would import that copy instead of the SDK: remove it from the candidate or the interpreter",
            verified.package_dir.display(),
            found.join("; "),
            probe.code_dir
        ),
    )
    .with_observed(observed)
}

/// What the scan found, by kind: the `langbot_plugin` packages and
/// dist-infos (each real path once), and the other copies or install
/// records (an egg-link that names the SDK or points at another copy).
fn sort_found(
    probe: &ShadowProbe,
    verified: &VerifiedPaths,
    real: &Realpaths,
) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<String>) {
    let mut packages: Vec<PathBuf> = Vec::new();
    let mut dist_infos: Vec<PathBuf> = Vec::new();
    let mut others: Vec<String> = Vec::new();
    for f in &probe.found {
        let r = real.get(&f.realpath);
        match f.kind.as_str() {
            "package" => {
                if !packages.contains(&r) {
                    packages.push(r);
                }
            }
            "dist-info" => {
                if !dist_infos.contains(&r) {
                    dist_infos.push(r);
                }
            }
            "egg-link" => {
                let name_mentions = Path::new(&f.path)
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().to_lowercase().contains("langbot"));
                let foreign_copy = f
                    .target_copy
                    .as_deref()
                    .is_some_and(|c| real.get(c) != verified.package_dir);
                if name_mentions || foreign_copy {
                    others.push(format!(
                        "egg-link {} -> {}",
                        f.path,
                        f.target.as_deref().unwrap_or("(unreadable)")
                    ));
                }
            }
            kind => others.push(format!("{kind} {}", f.path)),
        }
    }
    (packages, dist_infos, others)
}

/// `sys-path-scan`: exactly one package and one dist-info on the worker's
/// path, the verified ones; no module file, egg-info, langbot egg-link or
/// editable install.
pub fn sys_path_scan_check(
    probe: &ShadowProbe,
    verified: &VerifiedPaths,
    folder: &str,
    real: &Realpaths,
) -> Check {
    let (packages, dist_infos, others) = sort_found(probe, verified, real);
    let mut problems = Vec::new();
    if packages != [verified.package_dir.clone()] {
        problems.push(format!(
            "{} `{PACKAGE}` package(s) [{}] where exactly one, the verified {}, was expected",
            packages.len(),
            packages
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            verified.package_dir.display()
        ));
    }
    if dist_infos != [verified.dist_info.clone()] {
        problems.push(format!(
            "{} `{PACKAGE}` dist-info(s) [{}] where exactly one, the verified {}, was expected",
            dist_infos.len(),
            dist_infos
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            verified.dist_info.display()
        ));
    }
    if !others.is_empty() {
        problems.push(format!(
            "other copies or install records: {}",
            others.join(", ")
        ));
    }
    if !probe.errors.is_empty() {
        problems.push(format!(
            "entries that could not be read (not observed): {}",
            probe.errors.join("; ")
        ));
    }
    let observed = json!({
        "scanned": probe.worker_path,
        "found": probe.found.iter().map(|f| json!({"entry": f.entry, "kind": f.kind, "path": f.path, "target": f.target})).collect::<Vec<_>>(),
        "errors": probe.errors,
    });
    if problems.is_empty() {
        Check::pass(
            "sys-path-scan",
            Some(folder),
            format!(
                "{} path entries scanned (code dir first): one `{PACKAGE}` package and one dist-info, both the verified install",
                probe.worker_path.len()
            ),
        )
    } else {
        Check::fail(
            "sys-path-scan",
            Some(folder),
            format!(
                "on the worker's sys.path (code dir {} first) found {}; remove every other copy so only the verified SDK can be imported",
                probe.code_dir,
                problems.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

/// `pth-and-finders`: no `.pth` line mentions langbot or adds a directory
/// holding another copy; no non-standard meta path finder is about langbot or
/// answers for `langbot_plugin` with another copy.
pub fn pth_and_finders_check(
    probe: &ShadowProbe,
    verified: &VerifiedPaths,
    folder: &str,
    real: &Realpaths,
) -> Check {
    let mut problems = Vec::new();
    for pth in &probe.pth {
        if pth.mentions_langbot {
            let lines: Vec<&str> = pth
                .lines
                .iter()
                .filter(|l| l.text.to_lowercase().contains("langbot"))
                .map(|l| l.text.as_str())
                .collect();
            problems.push(format!(
                ".pth file {} mentions langbot ({})",
                pth.file,
                lines.join(" | ")
            ));
        }
        for line in &pth.lines {
            if let Some(copy) = &line.langbot_copy {
                if real.get(copy) != verified.package_dir {
                    problems.push(format!(
                        ".pth file {} adds {} which holds another copy {copy}",
                        pth.file,
                        line.resolved.as_deref().unwrap_or(&line.text)
                    ));
                }
            }
        }
    }
    let mut nonstandard = Vec::new();
    for f in probe.meta_path.iter().filter(|f| !f.standard) {
        let name = format!("{}.{}", f.module, f.qualname);
        nonstandard.push(name.clone());
        if name.to_lowercase().contains("langbot") {
            problems.push(format!(
                "meta path finder {name} is a langbot finder (an editable install?)"
            ));
        } else if let Some(spec) = f.spec.as_ref().filter(|s| s.found) {
            if !spec_is_verified(spec, verified, real) {
                problems.push(format!(
                    "meta path finder {name} answers `{PACKAGE}` with {}",
                    spec_text(spec, None)
                ));
            }
        }
    }
    let observed = json!({
        "pth": probe.pth.iter().map(|p| json!({"file": p.file, "flagged_by_probe": p.flagged, "lines": p.lines.iter().map(|l| json!({"kind": l.kind, "text": l.text, "resolved": l.resolved, "langbot_copy": l.langbot_copy})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
        "meta_path": probe.meta_path.iter().map(|f| json!({"finder": format!("{}.{}", f.module, f.qualname), "standard": f.standard, "error": f.error})).collect::<Vec<_>>(),
    });
    if problems.is_empty() {
        Check::pass(
            "pth-and-finders",
            Some(folder),
            format!(
                "{} .pth file(s) in the site directories, none about langbot or adding another copy; non-standard meta path finders: {} (none resolves `{PACKAGE}` elsewhere)",
                probe.pth.len(),
                if nonstandard.is_empty() { "none".to_string() } else { nonstandard.join(", ") }
            ),
        )
    } else {
        Check::fail(
            "pth-and-finders",
            Some(folder),
            format!(
                "expected no .pth file or import finder pointing to a copy of `{PACKAGE}` other than {}; found: {}. Uninstall the editable or second install from the interpreter",
                verified.package_dir.display(),
                problems.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

/// `env-leak`: none of [`WATCHED_ENV`] reached the child.
pub fn env_leak_check(probe: &ShadowProbe, folder: &str) -> Check {
    let leaked: Vec<&str> = WATCHED_ENV
        .iter()
        .copied()
        .filter(|n| probe.env.get(*n).copied().unwrap_or(false))
        .collect();
    let observed = json!({ "watched": probe.env, "child_env_names": probe.env_names });
    if leaked.is_empty() {
        Check::pass(
            "env-leak",
            Some(folder),
            format!("none of {} is in the child's environment", WATCHED_ENV.join(", ")),
        )
    } else {
        Check::fail(
            "env-leak",
            Some(folder),
            format!(
                "expected none of {} in the child's environment, found {}; they change where Python imports from: children must get only the allowlisted environment",
                WATCHED_ENV.join(", "),
                leaked.join(", ")
            ),
        )
    }
    .with_observed(observed)
}

/// A warning when the harness itself has any of [`WATCHED_ENV`] set (given
/// the names that are set).
pub fn harness_env_warning(set_in_harness: &[&str]) -> Option<Check> {
    if set_in_harness.is_empty() {
        return None;
    }
    Some(
        Check::warn(
            "env-leak",
            None,
            format!(
                "{} {} set in the harness's own environment and {} not passed on to any child (children get an allowlisted environment); a worker started by hand from this shell would see {}: unset {} there",
                set_in_harness.join(", "),
                if set_in_harness.len() == 1 { "is" } else { "are" },
                if set_in_harness.len() == 1 { "was" } else { "were" },
                if set_in_harness.len() == 1 { "it" } else { "them" },
                if set_in_harness.len() == 1 { "it" } else { "them" },
            ),
        )
        .with_observed(json!({ "set_in_harness": set_in_harness })),
    )
}

/// Whether one path component names a `langbot_plugin` package or module
/// (`langbot_plugin`, `langbot_plugin.py`, or a compiled or extension module).
pub fn is_shadow_name(name: &str) -> bool {
    const SUFFIXES: [&str; 5] = [".py", ".pyc", ".pyw", ".so", ".pyd"];
    name == PACKAGE
        || name
            .strip_prefix(PACKAGE)
            .is_some_and(|rest| rest.starts_with('.') && SUFFIXES.iter().any(|s| rest.ends_with(s)))
}

/// `/`-separated relative paths (from `paths`) with a shadowing component.
pub fn shadow_paths<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    paths
        .into_iter()
        .filter(|p| p.split(['/', '\\']).any(is_shadow_name))
        .map(str::to_string)
        .collect()
}

/// `no-shadow-in-candidates` for one candidate: its staged source and its
/// archive's member names.
pub(crate) fn no_shadow_check(obs: &CandidateObservation) -> Check {
    let folder = obs.folder.as_str();
    let staged = Path::new(&obs.staged);
    let mut found = Vec::new();
    let mut not_observed = Vec::new();
    match &obs.staged_entries {
        Ok(entries) => found.extend(
            shadow_paths(entries.iter().map(String::as_str))
                .into_iter()
                .map(|p| format!("staged path {}", staged.join(p).display())),
        ),
        Err(e) => not_observed.push(e.clone()),
    }
    match &obs.archive {
        Some((path, members)) => found.extend(
            shadow_paths(members.iter().map(String::as_str))
                .into_iter()
                .map(|m| format!("archive member {m} of {path}")),
        ),
        None => not_observed.push("no archive is recorded for this candidate".to_string()),
    }
    let archive = obs.archive.as_ref().map(|(p, _)| p.as_str());
    let observed = json!({
        "staged": obs.staged,
        "staged_entries": obs.staged_entries.as_ref().map(Vec::len).ok(),
        "archive": archive,
        "archive_members": obs.archive.as_ref().map(|(_, m)| m.len()),
        "found": found,
    });
    if found.is_empty() && not_observed.is_empty() {
        Check::pass(
            "no-shadow-in-candidates",
            Some(folder),
            format!(
                "no `{PACKAGE}` package or module at any depth in {} or in the members of {}",
                staged.display(),
                archive.unwrap_or("")
            ),
        )
    } else if !found.is_empty() {
        Check::fail(
            "no-shadow-in-candidates",
            Some(folder),
            format!(
                "candidate {folder} carries its own `{PACKAGE}`: {}; a worker's sys.path starts with the plugin's code dir, so this copy would shadow the verified SDK: delete it from the plugin{}",
                found.join(", "),
                if not_observed.is_empty() { String::new() } else { format!(" (also not observed: {})", not_observed.join("; ")) }
            ),
        )
    } else {
        Check::fail(
            "no-shadow-in-candidates",
            Some(folder),
            format!("not observed: {}; the staged source and the archive must both be searched", not_observed.join("; ")),
        )
    }
    .with_observed(observed)
}

/// The checks the probe makes, after `find-spec`.
const PROBE_CHECKS: [&str; 3] = ["sys-path-scan", "pth-and-finders", "env-leak"];

/// The checks `obs` supports: the harness warning, then per candidate
/// `no-shadow-in-candidates`, `find-spec`, `sys-path-scan`,
/// `pth-and-finders`, `env-leak`. When the probe could not run (no code dir)
/// or did not answer, `find-spec` fails saying so and the other three are
/// its consequences, never absent and never passed.
pub(crate) fn decide(obs: &Observation) -> Vec<Check> {
    let in_harness: Vec<&str> = obs.harness_env.iter().map(String::as_str).collect();
    let mut checks: Vec<Check> = harness_env_warning(&in_harness).into_iter().collect();
    for c in &obs.candidates {
        let folder = c.folder.as_str();
        checks.push(no_shadow_check(c));
        let not_observed = match &c.probe {
            Some(Ok(probe)) => {
                checks.push(find_spec_check(probe, &obs.verified, folder, &c.real));
                checks.push(sys_path_scan_check(probe, &obs.verified, folder, &c.real));
                checks.push(pth_and_finders_check(probe, &obs.verified, folder, &c.real));
                checks.push(env_leak_check(probe, folder));
                continue;
            }
            Some(Err(e)) => format!("not observed: {e}"),
            None => format!(
                "not observed: expected the archive's exact extraction at {}, found none; archive-members must extract it first",
                c.code_dir
            ),
        };
        let observed = json!({ "code_dir": c.code_dir, "code_dir_exists": c.code_dir_exists });
        checks.push(
            Check::fail("find-spec", Some(folder), not_observed).with_observed(observed.clone()),
        );
        for name in PROBE_CHECKS {
            checks.push(
                Check::fail(
                    name,
                    Some(folder),
                    format!(
                        "not observed: the shadow probe did not run in {}",
                        c.code_dir
                    ),
                )
                .with_observed(observed.clone())
                .consequence_of("find-spec"),
            );
        }
    }
    checks
}

impl super::Gate for SdkShadow {
    fn id(&self) -> &'static str {
        "sdk-shadow"
    }

    fn run(&self, ctx: &RunContext, _out: &mut Updates) -> Result<Vec<Check>, String> {
        Ok(decide(&observe(ctx)?))
    }
}

#[cfg(test)]
mod tests;
