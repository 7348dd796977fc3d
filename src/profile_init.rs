//! `verify-coding-candidates profile init`: a commented profile written from
//! a repository's plugin manifests.
//!
//! [`scan`] lists the files git tracks at `HEAD` (`git ls-tree -r`, hermetic
//! like every git call of the verifier) and reads, from the work tree, every
//! `manifest.yaml` whose `kind` is `Plugin` (the SDK's plugin manifest): its
//! folder is a candidate. For each it reads the identity
//! (`metadata.author/name/version`), the components the manifest declares
//! (`spec.components.<Kind>.fromDirs[].path`, each `*.yaml` there naming its
//! `kind` and `metadata.name`), the `langbot-plugin` requirement of
//! `requirements.txt` (PEP 508) and its own test files. [`render`] is a pure
//! function from that [`Scan`] to the profile's text, which parses with
//! [`crate::profile::parse`].
//!
//! Each candidate's SDK is its requirement resolved as the installer
//! resolves it today ([`resolve`]: `src/provision/resolve.rs`): an exact pin
//! to itself; a range, an unpinned or an absent requirement to the newest
//! release it accepts (the index's answer, else, offline, the newest carried
//! version it accepts). The version most candidates resolve to is the run's
//! `[sdk] requirement` (the default SDK group); every other candidate is put
//! in the SDK group of its own version (`sdk = ...`, `src/profile/groups.rs`),
//! with the reason as a comment. A candidate whose requirement cannot be
//! resolved is written commented out, with why.
//! A candidate's own tests are written as its `tests` key
//! (the `suites` gate runs them from its folder and from its extraction; a
//! candidate without any gets an `untested` warning, which a comment says);
//! its Tool/Command/EventListener/KnowledgeEngine components are listed in
//! comments: `discovery-rpc` calls every component, and each non-Runner one
//! gets a commented `[[discovery.component_probe]]` template.

use crate::manifest::strip_bom;
use crate::provision::resolve::{sdk_line, Resolved};
use pep440_rs::Version;
use serde_yaml_ng::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The SDK's distribution name (PEP 503 normalised).
const SDK: &str = "langbot-plugin";

/// The built-in `coding-runners` profile's candidates, sorted.
const BUILTIN_CANDIDATES: [&str; 3] = [
    "Runner/acp-agent-runner",
    "Runner/claude-code-agent",
    "Runner/codex-agent",
];

/// What [`scan`] found in a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The repository folder's name (the profile's `name`).
    pub repo_name: String,
    /// `HEAD`'s commit id.
    pub commit: String,
    /// Every candidate, by folder path.
    pub candidates: Vec<FoundCandidate>,
    /// `manifest.yaml` files that are not candidates, and why.
    pub skipped: Vec<(String, String)>,
    /// Tracked test files outside every candidate (`test_*.py`, `*_test.py`).
    pub repository_tests: Vec<String>,
}

/// One candidate folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundCandidate {
    /// Folder, relative to the repository root (`Runner/codex-agent`).
    pub path: String,
    /// `author/name version` from the manifest, when readable.
    pub identity: Option<String>,
    /// `(kind, name)` of every component the manifest's `fromDirs` hold.
    pub components: Vec<(String, String)>,
    /// Component folders or files that could not be read, and why.
    pub component_problems: Vec<String>,
    /// The `langbot-plugin` requirement line of `requirements.txt`.
    pub sdk_requirement: Option<String>,
    /// Whether the candidate has a `requirements.txt`.
    pub has_requirements: bool,
    /// The candidate's own test files, relative to the repository root.
    pub tests: Vec<String>,
}

/// The candidate `path`'s `tests` key from its test files `files`
/// (relative to the repository root): `tests` for those under its `tests/`
/// folder, each other file by its path in the candidate; in order, once.
fn tests_key(path: &str, files: &[String]) -> Vec<String> {
    let mut key: Vec<String> = Vec::new();
    for f in files {
        let Some(rel) = f.strip_prefix(&format!("{path}/")) else {
            continue;
        };
        let entry = if rel.starts_with("tests/") {
            "tests".to_string()
        } else {
            rel.to_string()
        };
        if !key.contains(&entry) {
            key.push(entry);
        }
    }
    key
}

/// Whether `path` names a pytest test file by pytest's default rules.
fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
}

/// The tracked `manifest` (relative to `root`) read as a plugin manifest;
/// else why it is skipped: unreadable, not YAML, or not of `kind: Plugin`.
fn plugin_manifest(root: &Path, manifest: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(root.join(manifest))
        .map_err(|e| format!("cannot be read ({e})"))?;
    let value: Value = serde_yaml_ng::from_str(strip_bom(&text))
        .map_err(|e| format!("is not valid YAML ({e})"))?;
    if value.get("kind").and_then(Value::as_str) != Some("Plugin") {
        return Err("is not a plugin manifest (its `kind` is not `Plugin`)".into());
    }
    Ok(value)
}

/// Why `scan` found no candidate in `root`: no tracked plugin manifest,
/// with the other manifests it `skipped` and why.
fn no_plugin_found(root: &Path, skipped: &[(String, String)]) -> String {
    format!(
        "{}: expected at least one tracked manifest.yaml with `kind: Plugin` (a LangBot plugin \
         folder), found none{}; run this in a plugin repository, or write the profile by hand \
         (docs/profiles.md)",
        root.display(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(
                " ({} other manifest.yaml: {})",
                skipped.len(),
                skipped
                    .iter()
                    .map(|(p, why)| format!("{p} {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }
    )
}

/// Reads the candidates of the repository at `repo` (any folder inside a git
/// work tree).
///
/// # Errors
/// A sentence when `repo` is not inside a git work tree, `HEAD` names no
/// commit, or no tracked `manifest.yaml` is a plugin manifest.
pub fn scan(repo: &Path) -> Result<Scan, String> {
    let root = crate::git::toplevel(repo)?;
    let (commit, _) = crate::git::head(&root)?;
    let listing = crate::git::run(
        &root,
        &["ls-tree", "-r", "-z", "--full-tree", "HEAD"],
        None,
        None,
    )?;
    let files: Vec<String> = crate::git::parse_ls_tree_z(&listing.stdout)
        .into_iter()
        .filter(|e| e.kind == "blob")
        .map(|e| e.path)
        .collect();
    let mut candidates = Vec::new();
    let mut skipped = Vec::new();
    for manifest in files
        .iter()
        .filter(|f| *f == "manifest.yaml" || f.ends_with("/manifest.yaml"))
    {
        let folder = manifest
            .strip_suffix("manifest.yaml")
            .unwrap_or_default()
            .trim_end_matches('/');
        let value = match plugin_manifest(&root, manifest) {
            Ok(v) => v,
            Err(why) => {
                skipped.push((manifest.clone(), why));
                continue;
            }
        };
        if folder.is_empty() {
            skipped.push((
                manifest.clone(),
                "is at the repository root: a candidate is a folder inside the repository".into(),
            ));
            continue;
        }
        candidates.push(read_candidate(&root, folder, &value, &files));
    }
    if candidates.is_empty() {
        return Err(no_plugin_found(&root, &skipped));
    }
    let inside = |f: &str| {
        candidates
            .iter()
            .any(|c| f.starts_with(&format!("{}/", c.path)))
    };
    let repository_tests = files
        .iter()
        .filter(|f| is_test_file(f) && !inside(f))
        .cloned()
        .collect();
    Ok(Scan {
        repo_name: root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repository".into()),
        commit,
        candidates,
        skipped,
        repository_tests,
    })
}

/// `author/name version` from the manifest's metadata (`?` for a missing
/// author or version); `None` without a name.
fn manifest_identity(manifest: &Value) -> Option<String> {
    let field = |name: &str| {
        manifest
            .get("metadata")
            .and_then(|m| m.get(name))
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
    };
    match (field("author"), field("name"), field("version")) {
        (Some(a), Some(n), Some(v)) => Some(format!("{a}/{n} {v}")),
        (a, Some(n), v) => Some(format!(
            "{}/{n} {}",
            a.unwrap_or_else(|| "?".into()),
            v.unwrap_or_else(|| "?".into())
        )),
        _ => None,
    }
}

/// The component manifests of the group `kind` of `spec.components`, as
/// the SDK's discovery engine reads a group; a group entry that names none
/// is noted in `problems`.
fn group_manifests(
    kind: &str,
    group: &Value,
    prefix: &str,
    files: &[String],
    problems: &mut Vec<String>,
) -> Vec<String> {
    // As the SDK's discovery engine reads a group
    // (`load_blueprint_comp_group`): `fromFiles` names component
    // manifests; `fromDirs` takes every `.yaml`/`.yml` file of a
    // folder, down to `maxDepth` levels (default 1: the folder itself).
    let mut manifests: Vec<String> = Vec::new();
    for file in group
        .get("fromFiles")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        match file.as_str() {
            Some(f) => manifests.push(format!("{prefix}{}", f.trim_start_matches("./"))),
            None => problems.push(format!("{kind}: a fromFiles entry that is not a path")),
        }
    }
    for dir in group
        .get("fromDirs")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        let Some(path) = dir.get("path").and_then(Value::as_str) else {
            problems.push(format!("{kind}: a fromDirs entry without `path`"));
            continue;
        };
        let depth = dir.get("maxDepth").and_then(Value::as_u64).unwrap_or(1);
        let dir = format!(
            "{prefix}{}/",
            path.trim_start_matches("./").trim_end_matches('/')
        );
        let before = manifests.len();
        manifests.extend(files.iter().filter_map(|f| {
            let rest = f.strip_prefix(&dir)?;
            let within = (rest.matches('/').count() as u64) < depth;
            (within && (rest.ends_with(".yaml") || rest.ends_with(".yml"))).then(|| f.clone())
        }));
        if manifests.len() == before {
            problems.push(format!("{kind}: no component manifest in {dir}"));
        }
    }
    manifests
}

/// One candidate from its parsed manifest and the tracked files.
fn read_candidate(root: &Path, folder: &str, manifest: &Value, files: &[String]) -> FoundCandidate {
    let identity = manifest_identity(manifest);
    let prefix = format!("{folder}/");
    let mut components = Vec::new();
    let mut component_problems = Vec::new();
    if let Some(Value::Mapping(kinds)) = manifest.get("spec").and_then(|s| s.get("components")) {
        for (kind, group) in kinds {
            let kind = kind.as_str().unwrap_or("?").to_string();
            let manifests = group_manifests(&kind, group, &prefix, files, &mut component_problems);
            for file in manifests {
                let parsed = std::fs::read_to_string(root.join(&file))
                    .map_err(|e| e.to_string())
                    .and_then(|t| {
                        serde_yaml_ng::from_str::<Value>(strip_bom(&t)).map_err(|e| e.to_string())
                    });
                match parsed {
                    Ok(v) => {
                        let k = v.get("kind").and_then(Value::as_str).unwrap_or(&kind);
                        let name = v
                            .get("metadata")
                            .and_then(|m| m.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or("?");
                        components.push((k.to_string(), name.to_string()));
                    }
                    Err(e) => component_problems.push(format!("{file}: {e}")),
                }
            }
        }
    }
    let requirements = format!("{prefix}requirements.txt");
    let has_requirements = files.contains(&requirements);
    let sdk_requirement = if has_requirements {
        std::fs::read_to_string(root.join(&requirements))
            .ok()
            .and_then(|text| sdk_line(&text))
    } else {
        None
    };
    let tests = files
        .iter()
        .filter(|f| f.starts_with(&prefix) && is_test_file(f))
        .cloned()
        .collect();
    FoundCandidate {
        path: folder.to_string(),
        identity,
        components,
        component_problems,
        sdk_requirement,
        has_requirements,
        tests,
    }
}

/// Each candidate's SDK, in `scan` order: [`crate::provision::resolve`]
/// over its requirement line, `index` asked once per distinct specifier.
pub fn resolve(
    scan: &Scan,
    index: &mut dyn FnMut(&str) -> Result<Version, String>,
    carried: &[Version],
) -> Vec<Result<Resolved, String>> {
    use crate::provision::resolve::{declared, resolve_with};
    scan.candidates
        .iter()
        .map(|c| {
            let d = declared(c.sdk_requirement.as_deref(), c.has_requirements)?;
            resolve_with(&d, index, carried)
        })
        .collect()
}

/// The run's SDK version: the one most candidates resolve to (ties: the
/// newest); `None` when none resolves.
fn run_pin(resolved: &[Result<Resolved, String>]) -> Option<Version> {
    let mut counts: BTreeMap<Version, usize> = BTreeMap::new();
    for r in resolved.iter().flatten() {
        *counts.entry(r.version.clone()).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    counts
        .into_iter()
        .filter(|(_, n)| *n == most)
        .map(|(v, _)| v)
        .next_back()
}

/// TOML basic string.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The profile text for `scan`, whose candidates' SDKs are `resolved` (in
/// `scan` order, [`resolve`]); `fallback` is the run's SDK version when no
/// candidate's resolves (the built-in profile's).
pub fn render(scan: &Scan, resolved: &[Result<Resolved, String>], fallback: &Version) -> String {
    let pin = run_pin(resolved).unwrap_or_else(|| fallback.clone());
    let mut out = String::new();
    render_header(&mut out, scan);
    render_sdk(&mut out, scan, &pin);
    let mut probes = ProbesToWrite::default();
    for (c, resolved) in scan.candidates.iter().zip(resolved) {
        render_candidate(&mut out, c, resolved, &pin, &mut probes);
    }
    render_discovery(&mut out, &probes);
    render_suites(&mut out, scan);
    out
}

/// The components [`render_candidate`] found that the discovery section
/// names: Runners (for runner probes) and the other kinds (component
/// probes), each with its candidate's path.
#[derive(Default)]
struct ProbesToWrite {
    runners: Vec<(String, String)>,
    uncalled: Vec<(String, String)>,
}

/// Where the profile came from, and the manifests that are not candidates.
fn render_header(out: &mut String, scan: &Scan) {
    let _ = writeln!(
        out,
        "# Written by `verify-coding-candidates profile init` from the plugin manifests of\n\
         # {} at commit {}.\n\
         # Review it, then commit it as verify-coding-candidates.toml at the repository's\n\
         # root (or pass --profile FILE). Every key: docs/profiles.md.",
        scan.repo_name, scan.commit
    );
    let mut found: Vec<&str> = scan.candidates.iter().map(|c| c.path.as_str()).collect();
    found.sort_unstable();
    if found == BUILTIN_CANDIDATES {
        let _ = writeln!(
            out,
            "#\n# These are the built-in `coding-runners` profile's candidates: without a profile\n\
             # file the verifier uses that profile, which also declares their runner probes,\n\
             # shared files, vendored SDK notices and suites (`gates/profiles/coding-runners.toml`)."
        );
    }
    if !scan.skipped.is_empty() {
        let _ = writeln!(out, "#\n# manifest.yaml files that are not candidates:");
        for (path, why) in &scan.skipped {
            let _ = writeln!(out, "#   {path} {why}");
        }
    }
}

/// `name`, and `[sdk]` with every candidate's own requirement, then
/// `[admission]`.
fn render_sdk(out: &mut String, scan: &Scan, pin: &Version) {
    let _ = writeln!(out, "\nname = {}\n\n[sdk]", quoted(&scan.repo_name));
    let _ = writeln!(
        out,
        "# Each candidate is certified under the SDK it will really run with: its requirement\n\
         # resolved as pip resolves it today (a pin to itself; a range, unpinned or absent to the\n\
         # newest release it accepts). The run's SDK (its default group) is the version most\n\
         # candidates resolve to; every other candidate is certified in the SDK group of its own\n\
         # version, with that group's own interpreter: its `sdk = ...` line below. The verifier\n\
         # carries lock lists for {}; any other version is locked on demand from the index.\n\
         # The candidates' own requirements:",
        crate::provision::builtin::carried()
    );
    let mut by_requirement: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for c in &scan.candidates {
        let key = match (&c.sdk_requirement, c.has_requirements) {
            (Some(line), _) => line.clone(),
            (None, true) => "(no langbot-plugin requirement)".into(),
            (None, false) => "(no requirements.txt)".into(),
        };
        by_requirement.entry(key).or_default().push(&c.path);
    }
    for (requirement, paths) in &by_requirement {
        let _ = writeln!(out, "#   {requirement}: {}", paths.join(", "));
    }
    let _ = writeln!(out, "requirement = {}", quoted(&format!("{SDK}=={pin}")));
    let _ = writeln!(
        out,
        "\n[admission]\n\
         # The SDK admits a plugin with no langbot-plugin requirement (the runtime provides it).\n\
         # true: every candidate must pin the SDK in its requirements.txt.\n\
         require_sdk_pin = false"
    );
}

/// One candidate: what was found of it as comments, then its
/// `[[candidate]]` (or why it is left out); its components noted for the
/// discovery section.
fn render_candidate(
    out: &mut String,
    c: &FoundCandidate,
    resolved: &Result<Resolved, String>,
    pin: &Version,
    probes: &mut ProbesToWrite,
) {
    render_found(out, c);
    match resolved {
        Err(why) => {
            let _ = writeln!(
                out,
                "# Left out: its SDK could not be resolved: {why}.\n\
                 # [[candidate]]\n\
                 # path = {}",
                quoted(&c.path)
            );
        }
        Ok(r) => {
            let _ = writeln!(out, "[[candidate]]\npath = {}", quoted(&c.path));
            let tests = tests_key(&c.path, &c.tests);
            if !tests.is_empty() {
                let _ = writeln!(
                    out,
                    "tests = [{}]",
                    tests
                        .iter()
                        .map(|t| quoted(t))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            let _ = writeln!(out, "# SDK {}: {}", r.version, r.reason);
            if &r.version != pin {
                let _ = writeln!(out, "sdk = {}", quoted(&format!("{SDK}=={}", r.version)));
            }
            for (kind, name) in &c.components {
                if kind == "Runner" {
                    probes.runners.push((c.path.clone(), name.clone()));
                } else {
                    probes
                        .uncalled
                        .push((c.path.clone(), format!("{kind}/{name}")));
                }
            }
        }
    }
}

/// What the scan found of candidate `c`, as comments: its identity,
/// components, unread components and tests.
fn render_found(out: &mut String, c: &FoundCandidate) {
    let _ = writeln!(out);
    let mut notes = Vec::new();
    if let Some(id) = &c.identity {
        notes.push(id.clone());
    }
    if !c.components.is_empty() {
        notes.push(format!(
            "components: {}",
            c.components
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for note in &notes {
        let _ = writeln!(out, "# {}: {note}", c.path);
    }
    for problem in &c.component_problems {
        let _ = writeln!(out, "# {}: component not read: {problem}", c.path);
    }
    if c.tests.is_empty() {
        let _ = writeln!(
            out,
            "# {}: no test files of its own (the `suites` gate warns it is untested)",
            c.path
        );
    } else {
        let _ = writeln!(
            out,
            "# {}: its own tests, run from its folder and from its extraction: {}",
            c.path,
            c.tests.join(", ")
        );
    }
}

/// `[discovery]`, with commented probes for every component and Runner.
fn render_discovery(out: &mut String, probes: &ProbesToWrite) {
    let ProbesToWrite { runners, uncalled } = probes;
    let _ = writeln!(
        out,
        "\n[discovery]\n\
         health_timeout_secs = 60\n\
         plugin_timeout_secs = 60"
    );
    if !uncalled.is_empty() {
        let _ = writeln!(
            out,
            "\n# Component probes: discovery-rpc calls each Tool, Command, EventListener and\n\
             # KnowledgeEngine through the real runtime (call_tool, execute_command, emit_event,\n\
             # retrieve_knowledge) with an input its declaration allows: a Tool's required parameters,\n\
             # a Command without arguments, a PersonNormalMessageReceived event, a short query. A\n\
             # component's own error is a warning; another kind is listed, not called. To give the input:"
        );
        for (path, component) in uncalled {
            let _ = writeln!(
                out,
                "# [[discovery.component_probe]]\n\
                 # candidate = {}\n\
                 # component = {}\n\
                 # input = {{ }}",
                quoted(path),
                quoted(component)
            );
        }
    }
    if !runners.is_empty() {
        let _ = writeln!(
            out,
            "\n# Runner probes: discovery-rpc calls a Runner through the runtime twice, with\n\
             # `invalid_config` (must end in run.failed) and with `config` pointing it at a local\n\
             # fixture (must end in run.completed with the fixture's text). `verify-coding-candidates\n\
             # gates` lists the built-in fixtures; docs/profiles.md says how to write one. A Runner\n\
             # without a probe gets one generic call, and a warning."
        );
    }
    for (path, runner) in runners {
        let _ = writeln!(
            out,
            "# [[discovery.runner_probe]]\n\
             # candidate = {}\n\
             # runner = {}\n\
             # fixture = \"builtin:...\"\n\
             # config = {{ }}\n\
             # invalid_config = {{ }}",
            quoted(path),
            quoted(runner)
        );
    }
    if !runners.is_empty() {
        let _ = writeln!(
            out,
            "\n# Uncomment when the runners run their jobs through the SDK's daemon hub: the\n\
             # worker-isolation gate then proves two workers apart (without it, it is skipped).\n\
             # [worker_isolation]"
        );
    }
}

/// `[suites]` over the repository's test files outside the candidates.
fn render_suites(out: &mut String, scan: &Scan) {
    if scan.repository_tests.is_empty() {
        let _ = writeln!(
            out,
            "\n# No test files outside the candidates: no [suites] (the suites gate then runs nothing and says so)."
        );
    } else {
        let _ = writeln!(
            out,
            "\n# The repository's own test files outside the candidates; keep the ones the\n\
             # certification runs (from the repository root, and again against the extraction).\n\
             [suites]\n\
             paths = [\n{}]\n\
             timeout_secs = 600",
            scan.repository_tests
                .iter()
                .map(|t| format!("    {},\n", quoted(t)))
                .collect::<String>()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn candidate(path: &str, sdk: Option<&str>, components: &[(&str, &str)]) -> FoundCandidate {
        FoundCandidate {
            path: path.into(),
            identity: Some(format!("team/{path} 1.0.0")),
            components: components
                .iter()
                .map(|(k, n)| (k.to_string(), n.to_string()))
                .collect(),
            component_problems: Vec::new(),
            sdk_requirement: sdk.map(str::to_string),
            has_requirements: sdk.is_some(),
            tests: Vec::new(),
        }
    }

    fn v(s: &str) -> Version {
        Version::from_str(s).unwrap()
    }

    fn scan_of(candidates: Vec<FoundCandidate>) -> Scan {
        Scan {
            repo_name: "plugins".into(),
            commit: "0".repeat(40),
            candidates,
            skipped: vec![(
                "docs/manifest.yaml".into(),
                "is not a plugin manifest".into(),
            )],
            repository_tests: vec!["tests/test_all.py".into()],
        }
    }

    #[test]
    fn components_are_read_as_the_sdk_discovers_them_from_files_and_dirs_to_max_depth() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            (
                "p/c/ke.yaml",
                "kind: KnowledgeEngine\nmetadata: {name: ke}\n",
            ),
            ("p/r/one.yaml", "kind: Runner\nmetadata: {name: one}\n"),
            ("p/r/sub/two.yml", "kind: Runner\nmetadata: {name: two}\n"),
            ("p/t/tool.yaml", "kind: Tool\nmetadata: {name: tool}\n"),
            (
                "p/t/deeper/hidden.yaml",
                "kind: Tool\nmetadata: {name: hidden}\n",
            ),
            ("p/tests/test_p.py", ""),
        ];
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let manifest: Value = serde_yaml_ng::from_str(
            "kind: Plugin\nmetadata: {author: a, name: p, version: 1.0.0}\nspec:\n  components:\n    \
             KnowledgeEngine: {fromFiles: [c/ke.yaml]}\n    \
             Runner: {fromDirs: [{path: r/, maxDepth: 2}]}\n    \
             Tool: {fromDirs: [{path: ./t}]}\n    \
             Command: {fromDirs: [{path: none/}]}\n",
        )
        .unwrap();
        let listed: Vec<String> = files.iter().map(|(p, _)| p.to_string()).collect();
        let c = read_candidate(dir.path(), "p", &manifest, &listed);
        let mut got = c.components.clone();
        got.sort();
        assert_eq!(
            got,
            [
                ("KnowledgeEngine".to_string(), "ke".to_string()),
                ("Runner".into(), "one".into()),
                ("Runner".into(), "two".into()),
                ("Tool".into(), "tool".into()),
            ]
        );
        assert_eq!(
            c.component_problems,
            ["Command: no component manifest in p/none/"]
        );
        assert_eq!(c.identity.as_deref(), Some("a/p 1.0.0"));
        assert_eq!(c.tests, ["p/tests/test_p.py"]);
        assert!(!c.has_requirements && c.sdk_requirement.is_none());
    }

    /// `scan` resolved against an index whose newest release is `newest`
    /// (or offline when `None`), rendered.
    fn render_at(scan: &Scan, newest: Option<&str>) -> String {
        let carried = [v("0.6.0b5"), v("0.6.1"), v("0.7.18")];
        let mut index = |_: &str| newest.map(v).ok_or_else(|| "--offline".to_string());
        let resolved = resolve(scan, &mut index, &carried);
        render(scan, &resolved, &v("0.6.0b5"))
    }

    #[test]
    fn the_run_pin_is_the_version_most_candidates_resolve_to() {
        let carried = [v("0.6.0b5"), v("0.6.1"), v("0.7.18")];
        let s = scan_of(vec![
            candidate("dify", Some("langbot-plugin==0.7.4"), &[]),
            candidate("demo", Some("langbot-plugin>=0.7.3,<0.8"), &[]),
            candidate("weather", Some("langbot-plugin"), &[]),
            candidate("probe", None, &[]),
            candidate("old", Some("langbot-plugin==0.6.1"), &[]),
        ]);
        let resolved = resolve(&s, &mut |_| Ok(v("0.7.19")), &carried);
        assert_eq!(run_pin(&resolved), Some(v("0.7.19")));
        // Offline: the newest carried version each accepts.
        let resolved = resolve(&s, &mut |_| Err("--offline".into()), &carried);
        let got: Vec<String> = resolved
            .iter()
            .map(|r| r.as_ref().unwrap().version.to_string())
            .collect();
        assert_eq!(got, ["0.7.4", "0.7.18", "0.7.18", "0.7.18", "0.6.1"]);
        assert_eq!(run_pin(&resolved), Some(v("0.7.18")));
        // A tie takes the newest; nothing resolved gives none.
        let s = scan_of(vec![
            candidate("a", Some("langbot-plugin==0.6.1"), &[]),
            candidate("c", Some("langbot-plugin==0.6.0b5"), &[]),
        ]);
        assert_eq!(
            run_pin(&resolve(&s, &mut |_| Ok(v("1")), &carried)),
            Some(v("0.6.1"))
        );
        assert_eq!(run_pin(&[Err("x".into())]), None);
    }

    #[test]
    fn the_rendered_profile_parses_and_comments_out_what_cannot_be_resolved() {
        let s = scan_of(vec![
            candidate(
                "Runner/demo",
                Some("langbot-plugin==0.6.0b5"),
                &[("Runner", "default")],
            ),
            candidate("misc/weather", None, &[("Command", "weather")]),
            candidate(
                "misc/newer",
                Some("langbot-plugin>=0.8"),
                &[("Tool", "search")],
            ),
        ]);
        // Offline, nothing carried accepts `>=0.8`.
        let text = render_at(&s, None);
        let profile = crate::profile::parse(&text, "init").expect("the rendered profile parses");
        let paths: Vec<&str> = profile.candidates.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["Runner/demo", "misc/weather"], "{text}");
        // A tie (0.6.0b5 once, 0.7.18 once) takes the newest.
        assert_eq!(profile.sdk.requirement, "langbot-plugin==0.7.18");
        assert!(!profile.admission.require_sdk_pin);
        assert_eq!(
            profile.suites.as_ref().map(|s| s.paths.clone()),
            Some(vec!["tests/test_all.py".to_string()])
        );
        for needle in [
            "#   langbot-plugin>=0.8: misc/newer",
            "#   (no requirements.txt): misc/weather",
            "# Left out: its SDK could not be resolved: langbot-plugin>=0.8: the index could not be asked (--offline)",
            "# path = \"misc/newer\"",
            "# SDK 0.7.18: no requirements.txt (the host provides the SDK): offline (--offline): 0.7.18, the newest carried version",
            "# SDK 0.6.0b5: pinned ==0.6.0b5\nsdk = \"langbot-plugin==0.6.0b5\"",
            "# candidate = \"misc/weather\"\n# component = \"Command/weather\"\n# input = { }",
            "# candidate = \"Runner/demo\"\n# runner = \"default\"",
            "#   docs/manifest.yaml is not a plugin manifest",
            "misc/weather: no test files of its own (the `suites` gate warns it is untested)",
        ] {
            assert!(text.contains(needle), "{needle:?} not in:\n{text}");
        }
        // A candidate's own tests are its `tests` key, which parses.
        let mut tested = candidate("p/w", Some("langbot-plugin==0.6.0b5"), &[]);
        tested.tests = vec![
            "p/w/tests/test_a.py".into(),
            "p/w/tests/unit/test_b.py".into(),
            "p/w/check_test.py".into(),
        ];
        let text = render_at(&scan_of(vec![tested]), Some("0.7.18"));
        assert!(
            text.contains("path = \"p/w\"\ntests = [\"tests\", \"check_test.py\"]\n"),
            "{text}"
        );
        let profile = crate::profile::parse(&text, "init").unwrap();
        assert_eq!(
            profile.candidates[0].tests.as_deref(),
            Some(&["tests".to_string(), "check_test.py".to_string()][..])
        );
        // An uncarried pin is kept: it is locked on demand.
        let s = scan_of(vec![candidate("a", Some("langbot-plugin==0.5.8"), &[])]);
        let text = render_at(&s, None);
        assert_eq!(
            crate::profile::parse(&text, "init")
                .unwrap()
                .sdk
                .requirement,
            "langbot-plugin==0.5.8"
        );
    }

    #[test]
    fn each_candidate_is_grouped_under_the_version_it_resolves_to_with_the_reason() {
        let s = scan_of(vec![
            candidate("p/a", Some("langbot-plugin"), &[]),
            candidate("p/b", None, &[]),
            candidate("p/exact", Some("langbot-plugin==0.6.1"), &[]),
            candidate("p/range", Some("langbot-plugin>=0.7.3,<0.8"), &[]),
            candidate("p/old", Some("langbot-plugin==0.5.8"), &[]),
        ]);
        let text = render_at(&s, Some("0.7.19"));
        let profile = crate::profile::parse(&text, "init").expect("the rendered profile parses");
        let placed: Vec<(&str, String)> = profile
            .candidates
            .iter()
            .map(|c| (c.path.as_str(), profile.group_of(c)))
            .collect();
        assert_eq!(
            placed,
            [
                ("p/a", "langbot-plugin==0.7.19".to_string()),
                ("p/b", "langbot-plugin==0.7.19".to_string()),
                ("p/exact", "langbot-plugin==0.6.1".to_string()),
                ("p/range", "langbot-plugin==0.7.19".to_string()),
                ("p/old", "langbot-plugin==0.5.8".to_string()),
            ],
            "{text}"
        );
        assert_eq!(profile.sdk_groups().len(), 3);
        for needle in [
            "# SDK 0.7.19: unpinned: pip installs 0.7.19 today\n",
            "# SDK 0.7.19: range >=0.7.3,<0.8: newest accepted 0.7.19 (index)\n",
            "# SDK 0.6.1: pinned ==0.6.1\nsdk = \"langbot-plugin==0.6.1\"",
        ] {
            assert!(text.contains(needle), "{needle:?} not in:\n{text}");
        }
    }
}
