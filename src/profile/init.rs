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
//! The run's `[sdk] requirement` (the default SDK group) is chosen by
//! [`run_pin`], preferring the pins the verifier carries;
//! a candidate whose own requirement that pin does not satisfy is put in
//! the SDK group (`sdk = ...`, `src/profile/groups.rs`) of a pin the
//! verifier carries a lock list for: its exact pin when carried, else the
//! newest carried version its requirement accepts; a candidate no carried
//! pin satisfies is written commented out, naming its requirement and the
//! carried pins. A candidate's own tests are written as its `tests` key
//! (the `suites` gate runs them from its folder and from its extraction; a
//! candidate without any gets an `untested` warning, which a comment says);
//! its Tool/Command/EventListener/KnowledgeEngine components are listed in
//! comments: `discovery-rpc` calls every component, and each non-Runner one
//! gets a commented `[[discovery.component_probe]]` template.

use crate::manifest::strip_bom;
use pep440_rs::{Operator, Version};
use pep508_rs::{Requirement, VerbatimUrl, VersionOrUrl};
use serde_yaml_ng::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::str::FromStr;

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
        let text = match std::fs::read_to_string(root.join(manifest)) {
            Ok(t) => t,
            Err(e) => {
                skipped.push((manifest.clone(), format!("cannot be read ({e})")));
                continue;
            }
        };
        let value: Value = match serde_yaml_ng::from_str(strip_bom(&text)) {
            Ok(v) => v,
            Err(e) => {
                skipped.push((manifest.clone(), format!("is not valid YAML ({e})")));
                continue;
            }
        };
        if value.get("kind").and_then(Value::as_str) != Some("Plugin") {
            skipped.push((
                manifest.clone(),
                "is not a plugin manifest (its `kind` is not `Plugin`)".into(),
            ));
            continue;
        }
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
        return Err(format!(
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
        ));
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

/// One candidate from its parsed manifest and the tracked files.
fn read_candidate(root: &Path, folder: &str, manifest: &Value, files: &[String]) -> FoundCandidate {
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
    let identity = match (field("author"), field("name"), field("version")) {
        (Some(a), Some(n), Some(v)) => Some(format!("{a}/{n} {v}")),
        (a, Some(n), v) => Some(format!(
            "{}/{n} {}",
            a.unwrap_or_else(|| "?".into()),
            v.unwrap_or_else(|| "?".into())
        )),
        _ => None,
    };
    let prefix = format!("{folder}/");
    let mut components = Vec::new();
    let mut component_problems = Vec::new();
    if let Some(Value::Mapping(kinds)) = manifest.get("spec").and_then(|s| s.get("components")) {
        for (kind, group) in kinds {
            let kind = kind.as_str().unwrap_or("?").to_string();
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
                    None => component_problems
                        .push(format!("{kind}: a fromFiles entry that is not a path")),
                }
            }
            for dir in group
                .get("fromDirs")
                .and_then(Value::as_sequence)
                .into_iter()
                .flatten()
            {
                let Some(path) = dir.get("path").and_then(Value::as_str) else {
                    component_problems.push(format!("{kind}: a fromDirs entry without `path`"));
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
                    (within && (rest.ends_with(".yaml") || rest.ends_with(".yml")))
                        .then(|| f.clone())
                }));
                if manifests.len() == before {
                    component_problems.push(format!("{kind}: no component manifest in {dir}"));
                }
            }
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

/// The first requirement line of `text` naming `langbot-plugin` (PEP 508),
/// as written (stripped).
fn sdk_line(text: &str) -> Option<String> {
    strip_bom(text).lines().map(str::trim).find_map(|line| {
        if line.is_empty() || line.starts_with('#') || line.starts_with('-') {
            return None;
        }
        let req = Requirement::<VerbatimUrl>::from_str(line).ok()?;
        (crate::provision::lock_list::normalize_name(req.name.as_ref()) == SDK)
            .then(|| line.to_string())
    })
}

/// The exact version of an `==` requirement line (`langbot-plugin==0.6.0b5`).
fn exact_pin(line: &str) -> Option<Version> {
    let req = Requirement::<VerbatimUrl>::from_str(line).ok()?;
    match req.version_or_url? {
        VersionOrUrl::VersionSpecifier(specs) => {
            let specs: Vec<_> = specs.iter().collect();
            match specs.as_slice() {
                [one] if *one.operator() == Operator::Equal => Some(one.version().clone()),
                _ => None,
            }
        }
        VersionOrUrl::Url(_) => None,
    }
}

/// Whether the requirement `line` accepts `version` (pre-releases allowed,
/// as the SDK decides); a line that does not parse accepts nothing.
fn accepts(line: &str, version: &Version) -> bool {
    let Ok(req) = Requirement::<VerbatimUrl>::from_str(line) else {
        return false;
    };
    match req.version_or_url {
        None => true,
        Some(VersionOrUrl::VersionSpecifier(specs)) => specs.iter().all(|s| s.contains(version)),
        Some(VersionOrUrl::Url(_)) => false,
    }
}

/// The run's SDK version, preferring what the verifier provisions itself:
/// the carried exact pin most candidates declare (ties: the built-in
/// profile's pin if among them, else the highest); else the carried version
/// the most declared requirements accept (same ties); else, when no carried
/// version accepts any declared requirement, the exact pin most candidates
/// declare (the run then needs `--python`); else the built-in profile's pin.
/// A repository whose plugins pin `==0.7.4` once and `>=0.7.3,<0.8` four
/// times runs on a carried 0.7.x, not on the one uncarried pin.
fn run_pin(scan: &Scan, builtin: &Version) -> Version {
    run_pin_among(scan, builtin, &carried_versions())
}

fn run_pin_among(scan: &Scan, builtin: &Version, carried: &[Version]) -> Version {
    let most_of = |counts: BTreeMap<Version, usize>| -> Option<Version> {
        let most = counts.values().copied().filter(|n| *n > 0).max()?;
        let top: Vec<&Version> = counts
            .iter()
            .filter(|(_, n)| **n == most)
            .map(|(v, _)| v)
            .collect();
        Some(if top.contains(&builtin) {
            builtin.clone()
        } else {
            top.last().map(|v| (*v).clone())?
        })
    };
    let exact: Vec<Version> = scan
        .candidates
        .iter()
        .filter_map(|c| c.sdk_requirement.as_deref().and_then(exact_pin))
        .collect();
    let count = |keep: &dyn Fn(&Version) -> bool| {
        let mut counts: BTreeMap<Version, usize> = BTreeMap::new();
        for v in exact.iter().filter(|v| keep(v)) {
            *counts.entry(v.clone()).or_default() += 1;
        }
        counts
    };
    if let Some(pin) = most_of(count(&|v| carried.contains(v))) {
        return pin;
    }
    let accepting: BTreeMap<Version, usize> = carried
        .iter()
        .map(|v| {
            let n = scan
                .candidates
                .iter()
                .filter_map(|c| c.sdk_requirement.as_deref())
                .filter(|line| accepts(line, v))
                .count();
            (v.clone(), n)
        })
        .collect();
    if let Some(pin) = most_of(accepting) {
        return pin;
    }
    most_of(count(&|_| true)).unwrap_or_else(|| builtin.clone())
}

/// The group pin of a candidate whose requirement `line` the run's pin does
/// not satisfy: the newest of `carried` that `line` accepts (an exact pin
/// accepts only itself). None when no carried version satisfies it.
fn group_pin(line: &str, carried: &[Version]) -> Option<Version> {
    carried.iter().filter(|v| accepts(line, v)).max().cloned()
}

/// The versions the verifier carries a lock list for
/// ([`crate::provision::builtin::SDKS`]).
fn carried_versions() -> Vec<Version> {
    crate::provision::builtin::SDKS
        .iter()
        .filter_map(|s| s.requirement.split_once("=="))
        .filter_map(|(_, v)| Version::from_str(v.trim()).ok())
        .collect()
}

/// TOML basic string.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The profile text for `scan`; `builtin_pin` is the built-in profile's SDK
/// version (the verifier provisions it without `--python`).
pub fn render(scan: &Scan, builtin_pin: &Version) -> String {
    let pin = run_pin(scan, builtin_pin);
    let mut out = String::new();
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
    let _ = writeln!(out, "\nname = {}\n\n[sdk]", quoted(&scan.repo_name));
    let _ = writeln!(
        out,
        "# The run's SDK (its default group): the carried pin most candidates declare, else the\n\
         # carried version most of their requirements accept. A candidate\n\
         # it does not satisfy is certified in the SDK group of a pin this verifier carries\n\
         # ({}), with that group's own interpreter: its `sdk = ...` line below.\n\
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
    if &pin != builtin_pin && !carried_versions().contains(&pin) {
        let _ = writeln!(
            out,
            "# Without --python the verifier provisions only langbot-plugin=={builtin_pin}: for this\n\
             # pin, pass --python with an interpreter that has langbot-plugin=={pin} installed."
        );
    }
    let _ = writeln!(out, "requirement = {}", quoted(&format!("{SDK}=={pin}")));
    let _ = writeln!(
        out,
        "\n[admission]\n\
         # The SDK admits a plugin with no langbot-plugin requirement (the runtime provides it).\n\
         # true: every candidate must pin the SDK in its requirements.txt.\n\
         require_sdk_pin = false"
    );
    let mut runners = Vec::new();
    let mut uncalled = Vec::new();
    let carried = carried_versions();
    for c in &scan.candidates {
        let unsatisfied = c
            .sdk_requirement
            .as_deref()
            .filter(|line| !accepts(line, &pin));
        // Its own group when the run's pin does not satisfy it.
        let group = unsatisfied.map(|line| (line, group_pin(line, &carried)));
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
        match group {
            Some((line, None)) => {
                let _ = writeln!(
                    out,
                    "# Left out: it requires `{line}`, which neither langbot-plugin {pin} nor any pin\n\
                     # this verifier carries ({}) satisfies; certify it in a run whose [sdk]\n\
                     # requirement satisfies it (with --python).\n\
                     # [[candidate]]\n\
                     # path = {}",
                    crate::provision::builtin::carried(),
                    quoted(&c.path)
                );
            }
            _ => {
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
                if let Some((line, Some(version))) = &group {
                    let _ = writeln!(
                        out,
                        "# It requires `{line}`, which langbot-plugin {pin} does not satisfy: certified\n\
                         # in the group of langbot-plugin=={version}, with that group's own interpreter.\n\
                         sdk = {}",
                        quoted(&format!("{SDK}=={version}"))
                    );
                }
                for (kind, name) in &c.components {
                    if kind == "Runner" {
                        runners.push((c.path.clone(), name.clone()));
                    } else {
                        uncalled.push((c.path.clone(), format!("{kind}/{name}")));
                    }
                }
            }
        }
    }
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
        for (path, component) in &uncalled {
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
    for (path, runner) in &runners {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_sdk_line_is_found_by_its_normalised_name_and_only_exact_pins_count() {
        assert_eq!(
            sdk_line("# c\n-r other.txt\nrequests\nLangBot_Plugin == 0.6.1\n").as_deref(),
            Some("LangBot_Plugin == 0.6.1")
        );
        assert_eq!(sdk_line("requests\n"), None);
        assert_eq!(exact_pin("langbot-plugin==0.6.0b5"), Some(v("0.6.0b5")));
        assert_eq!(exact_pin("langbot-plugin>=0.7.3,<0.8"), None);
        assert!(accepts("langbot-plugin>=0.7.3,<0.8", &v("0.7.4")));
        assert!(!accepts("langbot-plugin>=0.7.3,<0.8", &v("0.6.0b5")));
        assert!(accepts("langbot-plugin>=0.6.0b1", &v("0.6.0b5")));
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

    #[test]
    fn a_carried_version_most_requirements_accept_wins_over_one_uncarried_exact_pin() {
        let builtin = v("0.6.0b5");
        let carried = [v("0.6.0b5"), v("0.6.1"), v("0.7.18")];
        let s = scan_of(vec![
            candidate("dify", Some("langbot-plugin==0.7.4"), &[]),
            candidate("demo", Some("langbot-plugin>=0.7.3,<0.8"), &[]),
            candidate("n8n", Some("langbot-plugin>=0.7.3,<0.8"), &[]),
            candidate("weather", Some("langbot-plugin"), &[]),
            candidate("probe", None, &[]),
        ]);
        assert_eq!(run_pin_among(&s, &builtin, &carried), v("0.7.18"));
        // Only uncarried pins and nothing a carried version accepts: the
        // most declared pin (the run needs --python).
        let s = scan_of(vec![
            candidate("a", Some("langbot-plugin==0.7.4"), &[]),
            candidate("b", Some("langbot-plugin==0.7.4"), &[]),
            candidate("c", Some("langbot-plugin==0.8.0"), &[]),
        ]);
        assert_eq!(run_pin_among(&s, &builtin, &carried), v("0.7.4"));
        // A carried exact pin comes first, however many ranges there are.
        let s = scan_of(vec![
            candidate("a", Some("langbot-plugin==0.6.1"), &[]),
            candidate("b", Some("langbot-plugin>=0.7.3,<0.8"), &[]),
            candidate("c", Some("langbot-plugin>=0.7.3,<0.8"), &[]),
        ]);
        assert_eq!(run_pin_among(&s, &builtin, &carried), v("0.6.1"));
    }

    #[test]
    fn the_run_pin_is_the_most_declared_exact_pin_else_the_builtin_one() {
        let builtin = v("0.6.0b5");
        let s = scan_of(vec![
            candidate("a", Some("langbot-plugin==0.6.1"), &[]),
            candidate("b", Some("langbot-plugin==0.6.1"), &[]),
            candidate("c", Some("langbot-plugin==0.6.0b5"), &[]),
        ]);
        assert_eq!(run_pin(&s, &builtin), v("0.6.1"));
        let s = scan_of(vec![candidate("a", None, &[])]);
        assert_eq!(run_pin(&s, &builtin), builtin);
        // A tie prefers the pin the verifier provisions.
        let s = scan_of(vec![
            candidate("a", Some("langbot-plugin==0.6.1"), &[]),
            candidate("c", Some("langbot-plugin==0.6.0b5"), &[]),
        ]);
        assert_eq!(run_pin(&s, &builtin), builtin);
    }

    #[test]
    fn the_rendered_profile_parses_keeps_the_satisfied_and_comments_out_the_rest() {
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
        let text = render(&s, &v("0.6.0b5"));
        let profile = crate::profile::parse(&text, "init").expect("the rendered profile parses");
        let paths: Vec<&str> = profile.candidates.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["Runner/demo", "misc/weather"], "{text}");
        assert_eq!(profile.sdk.requirement, "langbot-plugin==0.6.0b5");
        assert!(!profile.admission.require_sdk_pin);
        assert_eq!(
            profile.suites.as_ref().map(|s| s.paths.clone()),
            Some(vec!["tests/test_all.py".to_string()])
        );
        for needle in [
            "#   langbot-plugin>=0.8: misc/newer",
            "#   (no requirements.txt): misc/weather",
            "# Left out: it requires `langbot-plugin>=0.8`",
            "# path = \"misc/newer\"",
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
        let text = render(&scan_of(vec![tested]), &v("0.6.0b5"));
        assert!(
            text.contains("path = \"p/w\"\ntests = [\"tests\", \"check_test.py\"]\n"),
            "{text}"
        );
        assert!(!text.contains("not run"), "{text}");
        let profile = crate::profile::parse(&text, "init").unwrap();
        assert_eq!(
            profile.candidates[0].tests.as_deref(),
            Some(&["tests".to_string(), "check_test.py".to_string()][..])
        );
        // A pin the verifier does not provision says how to run it.
        let s = scan_of(vec![candidate("a", Some("langbot-plugin==0.5.8"), &[])]);
        let text = render(&s, &v("0.6.0b5"));
        assert!(text.contains("pass --python"), "{text}");
        assert_eq!(
            crate::profile::parse(&text, "init")
                .unwrap()
                .sdk
                .requirement,
            "langbot-plugin==0.5.8"
        );
        // One it carries needs no --python.
        let s = scan_of(vec![candidate("a", Some("langbot-plugin==0.6.1"), &[])]);
        assert!(!render(&s, &v("0.6.0b5")).contains("pass --python"));
    }

    #[test]
    fn candidates_the_run_pin_does_not_satisfy_go_to_the_group_of_a_carried_pin_that_does() {
        let s = scan_of(vec![
            candidate("p/a", Some("langbot-plugin==0.6.0b5"), &[]),
            candidate("p/b", Some("langbot-plugin==0.6.0b5"), &[]),
            candidate("p/exact", Some("langbot-plugin==0.6.1"), &[]),
            candidate("p/range", Some("langbot-plugin>=0.6.1,<0.7"), &[]),
            candidate("p/newer", Some("langbot-plugin>=0.7.3,<0.8"), &[]),
            candidate("p/old", Some("langbot-plugin==0.5.8"), &[]),
        ]);
        let text = render(&s, &v("0.6.0b5"));
        let profile = crate::profile::parse(&text, "init").expect("the rendered profile parses");
        let placed: Vec<(&str, String)> = profile
            .candidates
            .iter()
            .map(|c| (c.path.as_str(), profile.group_of(c)))
            .collect();
        assert_eq!(
            placed,
            [
                ("p/a", "langbot-plugin==0.6.0b5".to_string()),
                ("p/b", "langbot-plugin==0.6.0b5".to_string()),
                ("p/exact", "langbot-plugin==0.6.1".to_string()),
                ("p/range", "langbot-plugin==0.6.1".to_string()),
                ("p/newer", "langbot-plugin==0.7.18".to_string()),
            ],
            "{text}"
        );
        assert_eq!(profile.sdk_groups().len(), 3);
        for needle in [
            "# It requires `langbot-plugin>=0.6.1,<0.7`, which langbot-plugin 0.6.0b5 does not satisfy",
            "# It requires `langbot-plugin>=0.7.3,<0.8`, which langbot-plugin 0.6.0b5 does not satisfy: \
             certified\n# in the group of langbot-plugin==0.7.18",
            "# Left out: it requires `langbot-plugin==0.5.8`, which neither langbot-plugin 0.6.0b5 \
             nor any pin\n# this verifier carries (langbot-plugin==0.6.0b5, langbot-plugin==0.6.1, \
             langbot-plugin==0.7.18)",
            "# path = \"p/old\"",
        ] {
            assert!(text.contains(needle), "{needle:?} not in:\n{text}");
        }
        assert_eq!(
            group_pin("langbot-plugin>=0.6", &carried_versions()),
            Some(v("0.7.18"))
        );
        assert_eq!(
            group_pin("langbot-plugin==0.6.0b5", &carried_versions()),
            Some(v("0.6.0b5"))
        );
    }
}
