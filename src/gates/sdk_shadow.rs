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
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use walkdir::WalkDir;

/// The import package whose copies are searched for.
pub const PACKAGE: &str = "langbot_plugin";

/// Variables that change where Python imports from; none may reach a child.
pub const WATCHED_ENV: [&str; 3] = ["PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"];

/// The `sdk-shadow` gate.
pub struct SdkShadow;

/// A module spec as the probe describes it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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

/// The real paths of the paths a probe named, resolved (symlinks followed)
/// when the probe answered: the decisions compare these, so they need no
/// file system.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Realpaths(BTreeMap<String, String>);

impl Realpaths {
    /// Resolves every path of `probe` that a decision compares: spec
    /// origins and locations (the interpreter's, the worker's, each
    /// finder's), found copies, egg-link targets, `.pth` copies.
    pub fn of(probe: &ShadowProbe) -> Self {
        let mut paths: Vec<&str> = Vec::new();
        let specs = [&probe.interpreter_spec, &probe.worker_spec]
            .into_iter()
            .chain(probe.meta_path.iter().filter_map(|f| f.spec.as_ref()));
        for s in specs {
            paths.extend(s.origin.as_deref());
            paths.extend(s.locations.iter().map(String::as_str));
        }
        for f in &probe.found {
            paths.push(&f.realpath);
            paths.extend(f.target_copy.as_deref());
        }
        for line in probe.pth.iter().flat_map(|p| &p.lines) {
            paths.extend(line.langbot_copy.as_deref());
        }
        Self(
            paths
                .into_iter()
                .map(|p| (p.to_string(), real(p).display().to_string()))
                .collect(),
        )
    }

    /// The real path of `p` as resolved, or its lexically normalised form.
    pub fn get(&self, p: &str) -> PathBuf {
        match self.0.get(p) {
            Some(r) => PathBuf::from(r),
            None => crate::gates::sdk_record::normalize_join(Path::new(p), "."),
        }
    }
}

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

/// `sys-path-scan`: exactly one package and one dist-info on the worker's
/// path, the verified ones; no module file, egg-info, langbot egg-link or
/// editable install.
pub fn sys_path_scan_check(
    probe: &ShadowProbe,
    verified: &VerifiedPaths,
    folder: &str,
    real: &Realpaths,
) -> Check {
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

/// What the gate observed: the verified install, the harness's own
/// environment, and each candidate.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Observation {
    /// The install `sdk-record` verified, as real paths.
    pub verified: VerifiedPaths,
    /// Those of [`WATCHED_ENV`] set in the harness's own environment.
    pub harness_env: Vec<String>,
    /// Each candidate, in profile order.
    pub candidates: Vec<CandidateObservation>,
}

/// One candidate's sources and the probe run in its extraction.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CandidateObservation {
    /// Candidate folder.
    pub folder: String,
    /// The staged candidate directory.
    pub staged: String,
    /// `/`-separated relative paths of every entry of the staged candidate,
    /// or why it could not be walked.
    pub staged_entries: Result<Vec<String>, String>,
    /// The archive `archive-members` recorded: its path (relative to DIR)
    /// and member names.
    pub archive: Option<(String, Vec<String>)>,
    /// DIR/extracted/<folder>: the worker's code dir and cwd.
    pub code_dir: String,
    /// Whether the code dir is a directory.
    pub code_dir_exists: bool,
    /// What the shadow probe printed, or why it did not answer; none when
    /// there was no code dir to run it in.
    pub probe: Option<Result<ShadowProbe, String>>,
    /// Real paths of the paths the probe named.
    pub real: Realpaths,
}

/// Walks the staged candidate and takes the recorded archive's members.
pub(crate) fn observe_sources(
    folder: &str,
    staged: &Path,
    record: Option<&CandidateRecord>,
) -> CandidateObservation {
    CandidateObservation {
        folder: folder.to_string(),
        staged: staged.display().to_string(),
        staged_entries: relative_entries(staged),
        archive: record.and_then(|r| r.archive.as_ref()).map(|a| {
            (
                a.path.clone(),
                a.members.iter().map(|m| m.name.clone()).collect(),
            )
        }),
        code_dir: String::new(),
        code_dir_exists: false,
        probe: None,
        real: Realpaths::default(),
    }
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

/// Observes every candidate: its sources, and the probe in its code dir.
///
/// # Errors
/// When the SDK was not verified or private roots cannot be created.
pub(crate) fn observe(ctx: &RunContext) -> Result<Observation, String> {
    let sdk = ctx.verified_sdk.clone().ok_or_else(|| {
        "sdk-shadow needs the SDK verified by sdk-record, and none is recorded; run sdk-record first".to_string()
    })?;
    let mut obs = Observation {
        verified: VerifiedPaths::of(&sdk),
        harness_env: WATCHED_ENV
            .iter()
            .filter(|n| std::env::var_os(n).is_some())
            .map(|n| n.to_string())
            .collect(),
        candidates: Vec::new(),
    };
    for spec in ctx.candidate_specs().to_vec() {
        let folder = spec.folder().to_string();
        let record = ctx.candidates.iter().find(|c| c.folder == folder);
        let code_dir = record
            .and_then(|r| r.archive.as_ref())
            .and_then(|a| a.extracted.as_ref())
            .map(|rel| ctx.evidence_dir.join(rel))
            .unwrap_or_else(|| ctx.extracted_root().join(&folder));
        let mut c = observe_sources(&folder, &ctx.staged_candidate(&spec), record);
        c.code_dir = code_dir.display().to_string();
        c.code_dir_exists = code_dir.is_dir();
        if c.code_dir_exists {
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
            if let Ok(p) = &probe {
                c.real = Realpaths::of(p);
            }
            c.probe = Some(probe);
        }
        obs.candidates.push(c);
    }
    Ok(obs)
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
