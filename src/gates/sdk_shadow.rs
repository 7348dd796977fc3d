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

use crate::context::{RunContext, Updates, VerifiedSdk};
use crate::evidence::{CandidateRecord, Check};
use crate::python;
use serde::Deserialize;
use serde_json::json;
use std::path::{Component, Path, PathBuf};
use walkdir::WalkDir;

/// The import package whose copies are searched for.
pub const PACKAGE: &str = "langbot_plugin";

/// Variables that change where Python imports from; none may reach a child.
pub const WATCHED_ENV: [&str; 3] = ["PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"];

/// The `sdk-shadow` gate.
pub struct SdkShadow;

/// A module spec as the probe describes it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SpecInfo {
    /// A spec was found.
    pub found: bool,
    /// `spec.origin` (the `__init__.py` of a regular package).
    pub origin: Option<String>,
    /// `spec.submodule_search_locations`, absolute.
    pub locations: Vec<String>,
    /// The loader's class name.
    pub loader: Option<String>,
}

/// A possible copy found by scanning a path entry.
#[derive(Debug, Clone, Deserialize)]
pub struct FoundCopy {
    /// The sys.path entry (or the code dir) scanned.
    pub entry: String,
    /// `package`, `module`, `dist-info`, `egg-info`, `egg-link` or `editable`.
    pub kind: String,
    /// Its path (`<zip>/<name>` inside a zip file).
    pub path: String,
    /// Its real path.
    pub realpath: String,
    /// For an egg-link: the directory it points to.
    pub target: Option<String>,
    /// For an egg-link: a `langbot_plugin` copy in that directory.
    pub target_copy: Option<String>,
}

/// One meaningful line of a `.pth` file.
#[derive(Debug, Clone, Deserialize)]
pub struct PthLine {
    /// `import` (executed by `site`) or `path` (appended to sys.path).
    pub kind: String,
    /// The line.
    pub text: String,
    /// For a path line: the absolute directory.
    pub resolved: Option<String>,
    /// For a path line: the real path of a `langbot_plugin` copy in it.
    pub langbot_copy: Option<String>,
}

/// A `.pth` file in a site directory on sys.path.
#[derive(Debug, Clone, Deserialize)]
pub struct PthFile {
    /// Its path.
    pub file: String,
    /// Import and path lines (comments and blank lines dropped).
    pub lines: Vec<PthLine>,
    /// Some line mentions `langbot` (case-insensitive).
    pub mentions_langbot: bool,
    /// The probe's own flag: mentions langbot or adds a path holding a copy.
    pub flagged: bool,
}

/// One `sys.meta_path` finder.
#[derive(Debug, Clone, Deserialize)]
pub struct Finder {
    /// Its class's module.
    pub module: String,
    /// Its class's qualified name.
    pub qualname: String,
    /// One of importlib's own finders.
    pub standard: bool,
    /// For a non-standard finder: what it answers for `langbot_plugin`.
    pub spec: Option<SpecInfo>,
    /// For a non-standard finder that raised: the exception.
    pub error: Option<String>,
}

/// What `src/python/shadow_probe.py` prints.
#[derive(Debug, Clone, Deserialize)]
pub struct ShadowProbe {
    /// `sys.executable`.
    pub executable: String,
    /// `os.getcwd()`.
    pub cwd: String,
    /// The code dir emulated at the head of the worker's sys.path.
    pub code_dir: String,
    /// Whether each of [`WATCHED_ENV`] is in the child's `os.environ`.
    pub env: std::collections::BTreeMap<String, bool>,
    /// Names (never values) of the child's environment variables.
    pub env_names: Vec<String>,
    /// The interpreter's `sys.path`.
    pub sys_path: Vec<String>,
    /// `[code_dir] + sys.path`.
    pub worker_path: Vec<String>,
    /// `importlib.util.find_spec(PACKAGE)`, the interpreter as it is.
    pub interpreter_spec: SpecInfo,
    /// Why that raised, if it did.
    pub interpreter_spec_error: Option<String>,
    /// `PathFinder.find_spec(PACKAGE, worker_path)`, the worker's view.
    pub worker_spec: SpecInfo,
    /// Why that raised, if it did.
    pub worker_spec_error: Option<String>,
    /// Possible copies in every worker_path entry.
    pub found: Vec<FoundCopy>,
    /// `.pth` files of the site directories on sys.path.
    pub pth: Vec<PthFile>,
    /// `sys.meta_path`, in order.
    pub meta_path: Vec<Finder>,
    /// Entries the probe could not read (unobserved: a failure).
    pub errors: Vec<String>,
}

/// The verified install, as real paths.
#[derive(Debug, Clone)]
pub struct VerifiedPaths {
    /// Real path of the verified `langbot_plugin` directory.
    pub package_dir: PathBuf,
    /// Real path of the verified dist-info directory.
    pub dist_info: PathBuf,
}

impl VerifiedPaths {
    /// Real paths of `sdk`'s package and dist-info.
    pub fn of(sdk: &VerifiedSdk) -> Self {
        Self {
            package_dir: real(&sdk.package_dir.display().to_string()),
            dist_info: real(&sdk.dist_info.display().to_string()),
        }
    }
}

/// The real path of `p`, or its lexically normalised form when it does not exist.
fn real(p: &str) -> PathBuf {
    Path::new(p)
        .canonicalize()
        .unwrap_or_else(|_| crate::gates::sdk_record::normalize_join(Path::new(p), "."))
}

/// Whether `spec` is the verified package: found, every search location is
/// the verified directory and the origin lies inside it.
pub fn spec_is_verified(spec: &SpecInfo, verified: &VerifiedPaths) -> bool {
    spec.found
        && !spec.locations.is_empty()
        && spec
            .locations
            .iter()
            .all(|l| real(l) == verified.package_dir)
        && spec
            .origin
            .as_deref()
            .is_some_and(|o| real(o).starts_with(&verified.package_dir))
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
pub fn find_spec_check(probe: &ShadowProbe, verified: &VerifiedPaths, folder: &str) -> Check {
    let interp_ok = probe.interpreter_spec_error.is_none()
        && spec_is_verified(&probe.interpreter_spec, verified);
    let worker_ok =
        probe.worker_spec_error.is_none() && spec_is_verified(&probe.worker_spec, verified);
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

/// `sys-path-scan`: exactly one package and one dist-info on the worker's
/// path, the verified ones; no module file, egg-info, langbot egg-link or
/// editable install.
pub fn sys_path_scan_check(probe: &ShadowProbe, verified: &VerifiedPaths, folder: &str) -> Check {
    let mut packages: Vec<PathBuf> = Vec::new();
    let mut dist_infos: Vec<PathBuf> = Vec::new();
    let mut others: Vec<String> = Vec::new();
    for f in &probe.found {
        let r = real(&f.realpath);
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
                    .is_some_and(|c| real(c) != verified.package_dir);
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
pub fn pth_and_finders_check(probe: &ShadowProbe, verified: &VerifiedPaths, folder: &str) -> Check {
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
                if real(copy) != verified.package_dir {
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
            if !spec_is_verified(spec, verified) {
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

/// Relative paths of every entry under `root` (not following links).
///
/// # Errors
/// A sentence naming the entry that could not be read.
pub fn relative_entries(root: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for entry in WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
    {
        let entry = entry.map_err(|e| format!("cannot walk {}: {e}", root.display()))?;
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        let parts: Vec<String> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        out.push(parts.join("/"));
    }
    Ok(out)
}

/// `no-shadow-in-candidates` for one candidate: its staged source and its
/// archive's member names.
pub fn no_shadow_check(folder: &str, staged: &Path, record: Option<&CandidateRecord>) -> Check {
    let mut found = Vec::new();
    let mut not_observed = Vec::new();
    match relative_entries(staged) {
        Ok(entries) => found.extend(
            shadow_paths(entries.iter().map(String::as_str))
                .into_iter()
                .map(|p| format!("staged path {}", staged.join(p).display())),
        ),
        Err(e) => not_observed.push(e),
    }
    let archive = record.and_then(|r| r.archive.as_ref());
    match archive {
        Some(a) => found.extend(
            shadow_paths(a.members.iter().map(|m| m.name.as_str()))
                .into_iter()
                .map(|m| format!("archive member {m} of {}", a.path)),
        ),
        None => not_observed.push("no archive is recorded for this candidate".to_string()),
    }
    let observed = json!({ "staged": staged.display().to_string(), "archive": archive.map(|a| a.path.clone()), "found": found });
    if found.is_empty() && not_observed.is_empty() {
        Check::pass(
            "no-shadow-in-candidates",
            Some(folder),
            format!(
                "no `{PACKAGE}` package or module at any depth in {} or in the members of {}",
                staged.display(),
                archive.map(|a| a.path.as_str()).unwrap_or("")
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

impl super::Gate for SdkShadow {
    fn id(&self) -> &'static str {
        "sdk-shadow"
    }

    fn run(&self, ctx: &RunContext, _out: &mut Updates) -> Result<Vec<Check>, String> {
        let sdk = ctx.verified_sdk.clone().ok_or_else(|| {
            "sdk-shadow needs the SDK verified by sdk-record, and none is recorded; run sdk-record first".to_string()
        })?;
        let verified = VerifiedPaths::of(&sdk);
        let mut checks = Vec::new();
        let in_harness: Vec<&str> = WATCHED_ENV
            .iter()
            .copied()
            .filter(|n| std::env::var_os(n).is_some())
            .collect();
        checks.extend(harness_env_warning(&in_harness));

        for spec in ctx.candidate_specs().to_vec() {
            let folder = spec.folder().to_string();
            let record = ctx.candidates.iter().find(|c| c.folder == folder).cloned();
            let code_dir = record
                .as_ref()
                .and_then(|r| r.archive.as_ref())
                .and_then(|a| a.extracted.as_ref())
                .map(|rel| ctx.evidence_dir.join(rel))
                .unwrap_or_else(|| ctx.extracted_root().join(&folder));
            checks.push(no_shadow_check(
                &folder,
                &ctx.staged_candidate(&spec),
                record.as_ref(),
            ));
            if !code_dir.is_dir() {
                checks.push(Check::fail(
                    "find-spec",
                    Some(&folder),
                    format!(
                        "not observed: expected the archive's exact extraction at {}, found none; archive-members must extract it first",
                        code_dir.display()
                    ),
                ));
                continue;
            }
            let (home, tmp) = ctx.private_roots("sdk-shadow", &folder).map_err(|e| {
                format!("sdk-shadow: cannot create private roots for {folder}: {e}")
            })?;
            let probe: Result<ShadowProbe, String> = python::run_probe(
                &ctx.python,
                "shadow_probe",
                python::SHADOW_PROBE,
                &[PACKAGE.to_string(), code_dir.display().to_string()],
                &code_dir,
                ctx.child_env(&home, &tmp),
                &ctx.log_stem("sdk-shadow", &folder),
            );
            match probe {
                Ok(probe) => {
                    checks.push(find_spec_check(&probe, &verified, &folder));
                    checks.push(sys_path_scan_check(&probe, &verified, &folder));
                    checks.push(pth_and_finders_check(&probe, &verified, &folder));
                    checks.push(env_leak_check(&probe, &folder));
                }
                Err(e) => checks.push(Check::fail(
                    "find-spec",
                    Some(&folder),
                    format!("not observed: {e}"),
                )),
            }
        }
        Ok(checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    fn verified() -> VerifiedPaths {
        VerifiedPaths {
            package_dir: PathBuf::from("/nonexistent/sp/langbot_plugin"),
            dist_info: PathBuf::from("/nonexistent/sp/langbot_plugin-0.6.0b5.dist-info"),
        }
    }

    fn spec_at(dir: &str) -> SpecInfo {
        SpecInfo {
            found: true,
            origin: Some(format!("{dir}/__init__.py")),
            locations: vec![dir.into()],
            loader: Some("SourceFileLoader".into()),
        }
    }

    fn copy(kind: &str, path: &str) -> FoundCopy {
        FoundCopy {
            entry: "/nonexistent/sp".into(),
            kind: kind.into(),
            path: path.into(),
            realpath: path.into(),
            target: None,
            target_copy: None,
        }
    }

    fn clean_probe() -> ShadowProbe {
        ShadowProbe {
            executable: "/v/bin/python".into(),
            cwd: "/ev/extracted/demo".into(),
            code_dir: "/ev/extracted/demo".into(),
            env: WATCHED_ENV.iter().map(|n| (n.to_string(), false)).collect(),
            env_names: vec!["HOME".into(), "PATH".into()],
            sys_path: vec!["/nonexistent/sp".into()],
            worker_path: vec!["/ev/extracted/demo".into(), "/nonexistent/sp".into()],
            interpreter_spec: spec_at("/nonexistent/sp/langbot_plugin"),
            interpreter_spec_error: None,
            worker_spec: spec_at("/nonexistent/sp/langbot_plugin"),
            worker_spec_error: None,
            found: vec![
                copy("package", "/nonexistent/sp/langbot_plugin"),
                copy(
                    "dist-info",
                    "/nonexistent/sp/langbot_plugin-0.6.0b5.dist-info",
                ),
            ],
            pth: vec![PthFile {
                file: "/nonexistent/sp/distutils-precedence.pth".into(),
                lines: vec![PthLine {
                    kind: "import".into(),
                    text: "import os; __import__('_distutils_hack')".into(),
                    resolved: None,
                    langbot_copy: None,
                }],
                mentions_langbot: false,
                flagged: false,
            }],
            meta_path: vec![
                Finder {
                    module: "_distutils_hack".into(),
                    qualname: "DistutilsMetaFinder".into(),
                    standard: false,
                    spec: Some(SpecInfo::default()),
                    error: None,
                },
                Finder {
                    module: "_frozen_importlib_external".into(),
                    qualname: "PathFinder".into(),
                    standard: true,
                    spec: None,
                    error: None,
                },
            ],
            errors: vec![],
        }
    }

    #[test]
    fn a_clean_probe_passes_every_check() {
        let p = clean_probe();
        let v = verified();
        for c in [
            find_spec_check(&p, &v, "demo"),
            sys_path_scan_check(&p, &v, "demo"),
            pth_and_finders_check(&p, &v, "demo"),
            env_leak_check(&p, "demo"),
        ] {
            assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
        }
    }

    #[test]
    fn a_worker_path_shadow_fails_find_spec_naming_the_copy() {
        let mut p = clean_probe();
        p.worker_spec = spec_at("/ev/extracted/demo/langbot_plugin");
        let c = find_spec_check(&p, &verified(), "demo");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("origin /ev/extracted/demo/langbot_plugin/__init__.py"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("worker's sys.path"), "{}", c.detail);
        assert!(
            !c.detail.contains("interpreter's find_spec"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn a_namespace_or_missing_spec_fails_find_spec() {
        let mut p = clean_probe();
        p.interpreter_spec = SpecInfo {
            found: true,
            origin: None,
            locations: vec![
                "/nonexistent/sp/langbot_plugin".into(),
                "/other/langbot_plugin".into(),
            ],
            loader: None,
        };
        p.worker_spec = SpecInfo::default();
        let c = find_spec_check(&p, &verified(), "demo");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("/other/langbot_plugin"), "{}", c.detail);
        assert!(c.detail.contains("gives no spec"), "{}", c.detail);
    }

    #[test]
    fn a_second_package_or_dist_info_fails_the_scan() {
        let mut p = clean_probe();
        p.found
            .push(copy("package", "/ev/extracted/demo/langbot_plugin"));
        p.found.push(copy(
            "dist-info",
            "/nonexistent/sp/langbot_plugin-0.6.0b4.dist-info",
        ));
        p.found
            .push(copy("module", "/nonexistent/lib/langbot_plugin.py"));
        let c = sys_path_scan_check(&p, &verified(), "demo");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains("2 `langbot_plugin` package(s)"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains("/ev/extracted/demo/langbot_plugin"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains("langbot_plugin-0.6.0b4.dist-info"),
            "{}",
            c.detail
        );
        assert!(
            c.detail
                .contains("module /nonexistent/lib/langbot_plugin.py"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn duplicate_sys_path_entries_count_once_and_foreign_egg_links_pass() {
        let mut p = clean_probe();
        p.found
            .push(copy("package", "/nonexistent/sp/langbot_plugin"));
        let mut link = copy("egg-link", "/nonexistent/sp/other.egg-link");
        link.target = Some("/src/other".into());
        p.found.push(link);
        assert_eq!(
            sys_path_scan_check(&p, &verified(), "demo").result,
            CheckResult::Pass
        );
        let mut langbot_link = copy("egg-link", "/nonexistent/sp/langbot-plugin.egg-link");
        langbot_link.target = Some("/src/langbot".into());
        p.found.push(langbot_link);
        let c = sys_path_scan_check(&p, &verified(), "demo");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("egg-link /nonexistent/sp/langbot-plugin.egg-link -> /src/langbot"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn unreadable_entries_are_not_a_pass() {
        let mut p = clean_probe();
        p.errors.push("cannot list /x: Permission denied".into());
        let c = sys_path_scan_check(&p, &verified(), "demo");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("cannot list /x"), "{}", c.detail);
    }

    #[test]
    fn pth_files_and_finders_pointing_elsewhere_fail() {
        let mut p = clean_probe();
        p.pth.push(PthFile {
            file: "/nonexistent/sp/__editable__.langbot_plugin-0.6.0.pth".into(),
            lines: vec![PthLine {
                kind: "import".into(),
                text: "import __editable___langbot_plugin_0_6_0_finder; __editable___langbot_plugin_0_6_0_finder.install()"
                    .into(),
                resolved: None,
                langbot_copy: None,
            }],
            mentions_langbot: true,
            flagged: true,
        });
        p.pth.push(PthFile {
            file: "/nonexistent/sp/vendor.pth".into(),
            lines: vec![PthLine {
                kind: "path".into(),
                text: "../vendor".into(),
                resolved: Some("/nonexistent/vendor".into()),
                langbot_copy: Some("/nonexistent/vendor/langbot_plugin".into()),
            }],
            mentions_langbot: false,
            flagged: true,
        });
        p.meta_path.insert(
            0,
            Finder {
                module: "__editable___langbot_plugin_0_6_0_finder".into(),
                qualname: "_EditableFinder".into(),
                standard: false,
                spec: Some(spec_at("/src/langbot/langbot_plugin")),
                error: None,
            },
        );
        p.meta_path.push(Finder {
            module: "hook".into(),
            qualname: "Sneaky".into(),
            standard: false,
            spec: Some(spec_at("/tmp/x/langbot_plugin")),
            error: None,
        });
        let c = pth_and_finders_check(&p, &verified(), "demo");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("__editable__.langbot_plugin-0.6.0.pth mentions langbot"),
            "{}",
            c.detail
        );
        assert!(
            c.detail
                .contains("vendor.pth adds /nonexistent/vendor which holds another copy"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains(
                "__editable___langbot_plugin_0_6_0_finder._EditableFinder is a langbot finder"
            ),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("hook.Sneaky answers `langbot_plugin` with origin /tmp/x/langbot_plugin/__init__.py"), "{}", c.detail);
    }

    #[test]
    fn a_pth_adding_the_verified_site_is_fine() {
        let mut p = clean_probe();
        p.pth.push(PthFile {
            file: "/nonexistent/sp/self.pth".into(),
            lines: vec![PthLine {
                kind: "path".into(),
                text: ".".into(),
                resolved: Some("/nonexistent/sp".into()),
                langbot_copy: Some("/nonexistent/sp/langbot_plugin".into()),
            }],
            mentions_langbot: false,
            flagged: true,
        });
        assert_eq!(
            pth_and_finders_check(&p, &verified(), "demo").result,
            CheckResult::Pass
        );
    }

    #[test]
    fn a_leaked_variable_fails_and_a_harness_variable_warns() {
        let mut p = clean_probe();
        p.env.insert("PYTHONSTARTUP".into(), true);
        let c = env_leak_check(&p, "demo");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("found PYTHONSTARTUP"), "{}", c.detail);
        assert!(harness_env_warning(&[]).is_none());
        let w = harness_env_warning(&["PYTHONPATH"]).unwrap();
        assert_eq!(w.result, CheckResult::Warn);
        assert!(
            w.detail.starts_with("PYTHONPATH is set in the harness"),
            "{}",
            w.detail
        );
    }

    #[test]
    fn shadow_names_are_recognised_at_any_depth() {
        let paths = [
            "main.py",
            "langbot_plugin/__init__.py",
            "pkg/vendor/langbot_plugin/api.py",
            "langbot_plugin.py",
            "lib/langbot_plugin.cpython-311-x86_64-linux-gnu.so",
            "docs/langbot_plugin.md",
            "langbot_plugins/x.py",
            "my_langbot_plugin.py",
        ];
        assert_eq!(
            shadow_paths(paths),
            [
                "langbot_plugin/__init__.py",
                "pkg/vendor/langbot_plugin/api.py",
                "langbot_plugin.py",
                "lib/langbot_plugin.cpython-311-x86_64-linux-gnu.so"
            ]
        );
    }

    #[test]
    fn no_shadow_check_names_staged_files_and_members() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/langbot_plugin")).unwrap();
        std::fs::write(dir.path().join("sub/langbot_plugin/__init__.py"), b"").unwrap();
        std::fs::write(dir.path().join("main.py"), b"").unwrap();
        // Built from JSON so fields other gates add to the record stay out of this test.
        let member = |name: &str| json!({ "name": name, "sha256": "", "size": 0, "mode": null });
        let record: CandidateRecord = serde_json::from_value(json!({
            "folder": "demo",
            "path": "P/demo",
            "manifest": null,
            "archive": {
                "path": "packages/demo/a-demo-0.1.0.lbpkg",
                "sha256": "",
                "size": 0,
                "content_digest": "",
                "members": [member("main.py"), member("langbot_plugin.py")],
                "extracted": null,
            },
        }))
        .expect("a candidate record");
        let c = no_shadow_check("demo", dir.path(), Some(&record));
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("sub/langbot_plugin, "), "{}", c.detail);
        assert!(
            c.detail.contains("sub/langbot_plugin/__init__.py"),
            "{}",
            c.detail
        );
        assert!(
            c.detail
                .contains("archive member langbot_plugin.py of packages/demo/a-demo-0.1.0.lbpkg"),
            "{}",
            c.detail
        );

        let clean = tempfile::tempdir().unwrap();
        std::fs::write(clean.path().join("main.py"), b"").unwrap();
        let mut r = record.clone();
        r.archive.as_mut().unwrap().members.truncate(1);
        assert_eq!(
            no_shadow_check("demo", clean.path(), Some(&r)).result,
            CheckResult::Pass
        );
        assert_eq!(
            no_shadow_check("demo", clean.path(), None).result,
            CheckResult::Fail
        );
    }

    /// Runs the real probes in the genuine interpreter from `$PYTHON`.
    fn probe_in(code_dir: &Path, logs: &Path) -> (ShadowProbe, VerifiedPaths) {
        let python = std::env::var_os("PYTHON").filter(|p| !p.is_empty()).map(PathBuf::from).unwrap_or_else(
            || panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)"),
        );
        let env = crate::process::base_env();
        let sdk: crate::gates::sdk_record::SdkProbe = python::run_probe(
            &python,
            "sdk_probe",
            python::SDK_PROBE,
            &["langbot-plugin".into(), PACKAGE.into()],
            logs,
            env.clone(),
            &logs.join("sdk"),
        )
        .unwrap();
        let site = PathBuf::from(sdk.site_packages.expect("the SDK is installed"));
        let verified = VerifiedPaths::of(&VerifiedSdk {
            package_dir: site.join(PACKAGE),
            dist_info: PathBuf::from(sdk.dist_info.unwrap()),
            site_packages: site,
        });
        let probe = python::run_probe(
            &python,
            "shadow_probe",
            python::SHADOW_PROBE,
            &[PACKAGE.into(), code_dir.display().to_string()],
            code_dir,
            env,
            &logs.join("shadow"),
        )
        .unwrap();
        (probe, verified)
    }

    #[test]
    fn the_real_probe_finds_a_code_dir_copy_and_passes_a_clean_dir() {
        let logs = tempfile::tempdir().unwrap();
        let clean = tempfile::tempdir().unwrap();
        std::fs::write(clean.path().join("main.py"), b"").unwrap();
        let (probe, verified) = probe_in(clean.path(), logs.path());
        assert_eq!(
            find_spec_check(&probe, &verified, "clean").result,
            CheckResult::Pass
        );
        assert_eq!(
            sys_path_scan_check(&probe, &verified, "clean").result,
            CheckResult::Pass
        );
        assert_eq!(
            pth_and_finders_check(&probe, &verified, "clean").result,
            CheckResult::Pass
        );
        assert_eq!(env_leak_check(&probe, "clean").result, CheckResult::Pass);

        let hostile = tempfile::tempdir().unwrap();
        let shadow = hostile.path().join(PACKAGE);
        std::fs::create_dir(&shadow).unwrap();
        std::fs::write(
            shadow.join("__init__.py"),
            b"# HOSTILE SHADOW FIXTURE, not the SDK.\n",
        )
        .unwrap();
        let (probe, verified) = probe_in(hostile.path(), logs.path());
        let real_init = shadow.canonicalize().unwrap().join("__init__.py");
        let c = find_spec_check(&probe, &verified, "hostile");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains(&format!(
                "the worker's sys.path [{}",
                hostile.path().display()
            )),
            "{}",
            c.detail
        );
        assert!(
            probe
                .worker_spec
                .origin
                .as_deref()
                .is_some_and(|o| real(o) == real_init),
            "{:?}",
            probe.worker_spec
        );
        // The interpreter as it is (`-I`: no cwd on sys.path) still finds the verified SDK.
        assert!(spec_is_verified(&probe.interpreter_spec, &verified));
        let scan = sys_path_scan_check(&probe, &verified, "hostile");
        assert_eq!(scan.result, CheckResult::Fail);
        assert!(
            scan.detail.contains("2 `langbot_plugin` package(s)"),
            "{}",
            scan.detail
        );
    }
}
