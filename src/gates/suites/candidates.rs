//! The `suites` gate's per-candidate runs: each selected candidate's own
//! tests (`[[candidate]] tests`, else its `tests/` folder when the committed
//! tree has one holding test files), run as plugin-local tests are written
//! to run: from the candidate's own folder, one pytest process per run, so
//! two candidates' top-level `components`/`pkg` packages never meet.
//!
//! Two runs per tested candidate, one after the other, each exactly like
//! the repository-level runs (same driver and observation plugin, sandbox,
//! checks, reruns; logs `DIR/logs/suites/<folder>/`, private roots
//! `DIR/roots/suites/<folder>/`):
//!
//! 1. `<folder>/tree`: cwd and rootdir a private copy of the candidate's
//!    folder in DIR/staging/source;
//! 2. `<folder>/extracted`: a private copy of DIR/extracted/<folder> (the
//!    archive's exact extraction), with those of the candidate's test files
//!    the archive does not hold copied from the staged tree (recorded).
//!
//! The driver puts the run's copy first on `sys.path` (as `python -m pytest`
//! from that folder does) and appends the candidate's dependency
//! environment, the one the `dependencies` gate had the SDK prepare from
//! DIR/wheelhouse and verified (no SDK copy, every distribution a wheelhouse
//! file): the bytes that run are the bytes admitted, visible to that
//! candidate's runs only, read-only in the sandbox, after the interpreter's
//! own site-packages so nothing there can stand in for the verified SDK
//! (and one holding anything named `langbot_plugin*` is refused before any
//! run). `.pth` files there are not processed (the folder is appended to
//! `sys.path`, not added as a site directory).
//!
//! Checks (each naming the candidate): `<folder>/untested` (a warning: no
//! tests), `<folder>/test-paths` (every path the profile names is in the
//! commit), `<folder>/no-private-sdk`, then each run's checks as the
//! repository-level runs have them and `<folder>/extracted/same-outcomes`.

use super::observe::{self, RunPlan, SandboxInputs};
use super::record::RunObservation;
use crate::context::RunContext;
use crate::evidence::{Check, CheckResult};
use crate::profile::{CandidateSpec, SuitesOptions};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a candidate's tests come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TestsSource {
    /// `[[candidate]] tests` names them.
    Profile,
    /// The key is unset and the committed folder has a `tests/` folder
    /// holding test files.
    TestsFolder,
    /// `tests = []`.
    ProfileNone,
    /// The key is unset and there is no `tests/` folder holding test files.
    NoTestsFolder,
    /// No tests of its own, and `[suites] covers` names it: the
    /// repository-level runs test it through its extraction.
    Repository,
}

/// What one candidate's own tests gave.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CandidateObservation {
    /// The candidate's folder name.
    pub folder: String,
    /// Its path in the repository.
    pub path: String,
    /// Where its tests come from.
    pub source: TestsSource,
    /// Its pytest paths, relative to its folder.
    pub tests: Vec<String>,
    /// Paths the profile names that are not in the commit.
    pub missing: Vec<String>,
    /// Files of `tests` (relative to the folder) the archive does not hold,
    /// copied from the staged tree into the extraction run's copy.
    pub added: Vec<String>,
    /// The dependency environment's site-packages appended to `sys.path`,
    /// relative to DIR; `None`: none was prepared or it does not exist.
    pub environment: Option<String>,
    /// Why the candidate's dependency environment is unknown (no record of
    /// the `dependencies` gate for it).
    pub environment_error: Option<String>,
    /// Entries of the environment named `langbot_plugin*`.
    pub private_sdk: Vec<String>,
    /// Top-level entries of the candidate's own folder (committed, or its
    /// extraction) named `langbot_plugin*`: the run's copy comes first on
    /// `sys.path`, so such an entry would stand in for the verified SDK.
    pub folder_sdk: Vec<String>,
    /// DIR/extracted/<folder> does not exist.
    pub extraction_missing: bool,
    /// The runs, `<folder>/tree` then `<folder>/extracted`; empty when none
    /// was made.
    pub runs: Vec<RunObservation>,
    /// For a candidate `[suites] covers` names ([`TestsSource::Repository`]):
    /// whether the repository-level `extracted` run read its extraction
    /// (the run's `touched`); `None`: that run made no record of it.
    pub read_by_repository_run: Option<bool>,
}

/// The interpreter a candidate's runs use: its SDK group's
/// ([`RunContext::python_for`]).
pub(crate) fn python_for(ctx: &RunContext, candidate: &CandidateSpec) -> PathBuf {
    ctx.python_for(candidate.folder()).to_path_buf()
}

/// The pytest options of a candidate's runs: the profile's `[suites]`
/// options (time limit, retries, plugins, naming rules) or their defaults,
/// with the candidate's `tests` as paths and nothing repository-level
/// (no historical files, configuration or declared deselection: those name
/// repository paths).
pub(crate) fn options_for(base: Option<&SuitesOptions>, tests: &[String]) -> SuitesOptions {
    let mut o = base.cloned().unwrap_or_else(|| {
        toml::from_str("paths = []").expect("[suites] defaults parse with empty paths")
    });
    o.paths = tests.to_vec();
    o.historical.clear();
    o.config = None;
    o.deselected.clear();
    o
}

/// Whether `name` is a test file by pytest's default `python_files`.
fn is_test_file(name: &str) -> bool {
    name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
}

/// The candidate's tests in its committed folder `folder` (in
/// DIR/staging/source): the profile's, else `tests/` when it holds a test
/// file; and the profile's paths missing from the commit.
pub(crate) fn resolve_tests(
    spec: &Option<Vec<String>>,
    folder: &Path,
) -> (TestsSource, Vec<String>, Vec<String>) {
    match spec {
        Some(named) if named.is_empty() => (TestsSource::ProfileNone, Vec::new(), Vec::new()),
        Some(named) => {
            let missing = named
                .iter()
                .filter(|t| std::fs::symlink_metadata(folder.join(t)).is_err())
                .cloned()
                .collect();
            (TestsSource::Profile, named.clone(), missing)
        }
        None => {
            let dir = folder.join("tests");
            let holds_tests = dir.is_dir()
                && walkdir::WalkDir::new(&dir).into_iter().flatten().any(|e| {
                    e.file_type().is_file() && is_test_file(&e.file_name().to_string_lossy())
                });
            if holds_tests {
                (TestsSource::TestsFolder, vec!["tests".into()], Vec::new())
            } else {
                (TestsSource::NoTestsFolder, Vec::new(), Vec::new())
            }
        }
    }
}

/// A candidate without tests of its own (`source` none) that `[suites]
/// covers` names is tested by the repository-level runs
/// ([`TestsSource::Repository`]); any other source stays as it is.
pub(crate) fn with_covers(
    source: TestsSource,
    base: Option<&SuitesOptions>,
    path: &str,
) -> TestsSource {
    let none = matches!(
        source,
        TestsSource::ProfileNone | TestsSource::NoTestsFolder
    );
    if none && base.is_some_and(|b| b.covers.iter().any(|c| c == path)) {
        TestsSource::Repository
    } else {
        source
    }
}

/// The regular files under `tests` (relative to `folder`, files or
/// folders) that `extraction` does not hold and that are test material,
/// sorted: every file of a test path the archive lacks entirely (a `tests/`
/// folder the build leaves out, its helpers and data included), but of a
/// test path the archive holds (`components`, tests kept beside the code)
/// only test files and `conftest.py`: a module or data file the build left
/// out of it is the archive's to carry, never taken from the tree.
pub(crate) fn files_not_in(folder: &Path, tests: &[String], extraction: &Path) -> Vec<String> {
    let mut added = Vec::new();
    for t in tests {
        let held = std::fs::symlink_metadata(extraction.join(t)).is_ok();
        for e in walkdir::WalkDir::new(folder.join(t)).into_iter().flatten() {
            if !e.file_type().is_file() {
                continue;
            }
            let name = e.file_name().to_string_lossy();
            if held && !(is_test_file(&name) || name == "conftest.py") {
                continue;
            }
            let Ok(rel) = e.path().strip_prefix(folder) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            if std::fs::symlink_metadata(extraction.join(&rel)).is_err() {
                added.push(rel);
            }
        }
    }
    added.sort();
    added.dedup();
    added
}

/// Entries of `site_packages` named `langbot_plugin*` (a package, a
/// module, a dist-info), sorted.
pub(crate) fn sdk_entries(site_packages: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(site_packages)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            let n = n.to_ascii_lowercase().replace('-', "_");
            n.starts_with("langbot_plugin")
        })
        .collect();
    found.sort();
    found
}

/// Entries named `langbot_plugin*` at the top of the candidate's committed
/// folder (`tree/<name>`) and of its extraction (`extracted/<name>`), sorted.
pub(crate) fn folder_sdk_entries(committed: &Path, extraction: &Path) -> Vec<String> {
    let mut found: Vec<String> = sdk_entries(committed)
        .into_iter()
        .map(|n| format!("tree/{n}"))
        .chain(
            sdk_entries(extraction)
                .into_iter()
                .map(|n| format!("extracted/{n}")),
        )
        .collect();
    found.sort();
    found
}

/// A candidate's observation before anything runs: which tests it has and
/// where they come from (its own, or the repository's `covers`), the ones
/// named but missing, and whether its extraction exists.
fn tests_found(
    spec: &CandidateSpec,
    base: Option<&SuitesOptions>,
    committed: &Path,
    extraction: &Path,
) -> CandidateObservation {
    let (source, tests, missing) = resolve_tests(&spec.tests, committed);
    let source = with_covers(source, base, &spec.path);
    CandidateObservation {
        folder: spec.folder().to_string(),
        path: spec.path.clone(),
        source,
        tests,
        missing,
        added: Vec::new(),
        environment: None,
        environment_error: None,
        private_sdk: Vec::new(),
        folder_sdk: Vec::new(),
        extraction_missing: !extraction.is_dir(),
        runs: Vec::new(),
        read_by_repository_run: None,
    }
}

/// The candidate's prepared dependency environment, as the `dependencies`
/// gate recorded it: its site-packages goes last on the runs' path, and the
/// SDK distributions it holds are noted in `obs`; `obs.environment_error`
/// is set when the gate recorded none. Returns the folders for the end of
/// the runs' path.
fn prepared_environment(ctx: &RunContext, obs: &mut CandidateObservation) -> Vec<PathBuf> {
    let record = ctx.candidates.iter().find(|c| c.folder == obs.folder);
    let mut path_last = Vec::new();
    match record.and_then(|r| r.dependencies.as_ref()) {
        Some(deps) => {
            if let Some(env) = &deps.environment {
                let site = ctx.evidence_dir.join(env).join("site-packages");
                if site.is_dir() {
                    obs.private_sdk = sdk_entries(&site);
                    obs.environment = Some(format!("{env}/site-packages"));
                    path_last.push(site);
                }
            }
        }
        None => {
            obs.environment_error = Some(
                "the `dependencies` gate recorded no prepared dependency environment for it".into(),
            );
        }
    }
    path_last
}

/// The candidate's two runs: its tests on the committed folder (`tree`)
/// and on its extraction (`extracted`, with the files the archive does not
/// hold added from the committed folder).
fn run_plans(
    folder: &str,
    committed: &Path,
    extraction: &Path,
    added: &[String],
    path_last: Vec<PathBuf>,
    python: PathBuf,
) -> [RunPlan; 2] {
    [
        RunPlan {
            name: format!("{folder}/tree"),
            source_root: None,
            source: committed.to_path_buf(),
            added: Vec::new(),
            added_from: committed.to_path_buf(),
            copy_first_on_path: true,
            path_last: path_last.clone(),
            python: python.clone(),
        },
        RunPlan {
            name: format!("{folder}/extracted"),
            source_root: None,
            source: extraction.to_path_buf(),
            added: added.to_vec(),
            added_from: committed.to_path_buf(),
            copy_first_on_path: true,
            path_last,
            python,
        },
    ]
}

/// Observes every candidate of `ctx.selected`, one after the other.
///
/// # Errors
/// A sentence when the gate's own machinery fails (a private root cannot be
/// written, the run was interrupted).
pub(super) fn observe(
    ctx: &RunContext,
    base: Option<&SuitesOptions>,
    staged: &Path,
) -> Result<Vec<CandidateObservation>, String> {
    // Written once a candidate is run.
    let mut private_config: Option<PathBuf> = None;
    let mut inputs: BTreeMap<PathBuf, SandboxInputs> = BTreeMap::new();
    let mut out = Vec::new();
    for spec in &ctx.selected {
        let folder = spec.folder().to_string();
        let committed = staged.join(&spec.path);
        let extraction = ctx.extracted_root().join(&folder);
        let mut obs = tests_found(spec, base, &committed, &extraction);
        let tests = obs.tests.clone();
        if tests.is_empty() || !obs.missing.is_empty() || obs.extraction_missing {
            out.push(obs);
            continue;
        }
        obs.added = files_not_in(&committed, &tests, &extraction);
        obs.folder_sdk = folder_sdk_entries(&committed, &extraction);
        if !obs.folder_sdk.is_empty() {
            out.push(obs);
            continue;
        }
        let path_last = prepared_environment(ctx, &mut obs);
        if obs.environment_error.is_some() || !obs.private_sdk.is_empty() {
            out.push(obs);
            continue;
        }
        let private_config = match &private_config {
            Some(p) => p.clone(),
            None => private_config
                .insert(observe::write_private_config(ctx)?)
                .clone(),
        };
        let python = python_for(ctx, spec);
        if !inputs.contains_key(&python) {
            inputs.insert(
                python.clone(),
                SandboxInputs::observe(ctx, &python, &private_config)?
                    .with_read_only(ctx.extracted_root()),
            );
        }
        let sandbox = &inputs[&python];
        let opts = options_for(base, &tests);
        let plans = run_plans(
            &folder,
            &committed,
            &extraction,
            &obs.added,
            path_last,
            python,
        );
        for plan in &plans {
            obs.runs.push(observe::observe_run(
                ctx,
                &opts,
                &private_config,
                sandbox,
                plan,
            )?);
        }
        out.push(obs);
    }
    Ok(out)
}

/// The checks of one candidate's observation, each naming the candidate.
pub(crate) fn decide(c: &CandidateObservation, base: Option<&SuitesOptions>) -> Vec<Check> {
    let folder = c.folder.as_str();
    let name = |check: &str| format!("{folder}/{check}");
    let observed = json!({
        "tests": c.tests, "source": c.source, "missing": c.missing, "added_to_extraction": c.added,
    });
    if let Some(check) = without_tests_of_its_own(c, observed.clone()) {
        return vec![check];
    }
    let paths = test_paths_check(c, observed);
    if paths.result == CheckResult::Fail {
        return vec![paths];
    }
    let ready = ready_to_run(c);
    let stop = ready.result == CheckResult::Fail;
    let mut checks = vec![paths, ready];
    if stop {
        return checks;
    }
    let opts = options_for(base, &c.tests);
    let mut roots = Vec::new();
    for run in &c.runs {
        checks.extend(super::run_checks(run, &opts));
        roots.push(super::run_root(run));
    }
    if let [tree, extracted] = c.runs.as_slice() {
        checks.push(super::pair_check(
            &name("extracted/same-outcomes"),
            [tree, extracted],
            [&roots[0], &roots[1]],
        ));
    }
    for check in &mut checks {
        check.candidate = Some(c.folder.clone());
    }
    checks
}

/// `<folder>/untested` or `<folder>/covered` for a candidate with no tests
/// of its own; `None` when it has some.
fn without_tests_of_its_own(
    c: &CandidateObservation,
    observed: serde_json::Value,
) -> Option<Check> {
    let folder = c.folder.as_str();
    let name = |check: &str| format!("{folder}/{check}");
    match c.source {
        TestsSource::ProfileNone | TestsSource::NoTestsFolder => {
            let why = if c.source == TestsSource::ProfileNone {
                "the profile says it has none (`tests = []`)"
            } else {
                "not its folder's tests/, and the profile names none"
            };
            Some(
                Check::warn(
                    &name("untested"),
                    Some(folder),
                    format!(
                        "{} has no tests of its own: {why}; nothing of it was run by pytest, and nothing is \
                         claimed: add a tests/ folder to the candidate, or name its tests in [[candidate]] tests",
                        c.path
                    ),
                )
                .with_observed(observed),
            )
        }
        TestsSource::Repository => {
            let check = match c.read_by_repository_run {
                Some(true) => Check::pass(
                    &name("covered"),
                    Some(folder),
                    format!(
                        "{} has no tests of its own; [suites] covers names it, and the repository-level \
                         `extracted` run read its exact extraction (DIR/extracted/{folder}: its audit hook saw \
                         a file opened, imported, listed or a program started there); those runs' own checks \
                         decide whether it passed",
                        c.path
                    ),
                ),
                Some(false) => Check::warn(
                    &name("covered"),
                    Some(folder),
                    format!(
                        "[suites] covers names {}, but the repository-level `extracted` run never opened, \
                         imported, listed or started anything under DIR/extracted/{folder} (its audit hook saw \
                         none): it is not shown to be tested, and nothing is claimed; make the suites read it \
                         through `source_root_env`, or give it tests of its own",
                        c.path
                    ),
                ),
                None => Check::warn(
                    &name("covered"),
                    Some(folder),
                    format!(
                        "[suites] covers names {}, but the repository-level `extracted` run made no record of \
                         what it read (see that run's checks): it is not shown to be tested",
                        c.path
                    ),
                ),
            };
            Some(check.with_observed(observed))
        }
        TestsSource::Profile | TestsSource::TestsFolder => None,
    }
}

/// `<folder>/test-paths`: every path the profile names is in the commit
/// (a failure: nothing is run).
fn test_paths_check(c: &CandidateObservation, observed: serde_json::Value) -> Check {
    let folder = c.folder.as_str();
    let name = |check: &str| format!("{folder}/{check}");
    if !c.missing.is_empty() {
        return Check::fail(
                &name("test-paths"),
                Some(folder),
                format!(
                    "[[candidate]] tests of {} names {:?}, not in the committed folder ({}); expected each a \
                     committed file or folder relative to the candidate's folder: commit it or fix the profile",
                    c.path,
                    c.missing,
                    c.missing
                        .iter()
                        .map(|m| format!("{}/{m}", c.path))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_observed(observed);
    }
    let from = if c.source == TestsSource::Profile {
        "[[candidate]] tests"
    } else {
        "its tests/ folder"
    };
    Check::pass(
            &name("test-paths"),
            Some(folder),
            format!(
                "its own tests ({from}): {}, run from a private copy of {} and of DIR/extracted/{folder}{}",
                c.tests.join(", "),
                c.path,
                if c.added.is_empty() {
                    String::from(" (the archive holds every test file)")
                } else {
                    format!(
                        ", to which {} test file(s) the archive does not hold were added from the tree: {}",
                        c.added.len(),
                        c.added.join(", ")
                    )
                }
            ),
        )
        .with_observed(observed)
}

/// What the runs need: the extraction, the dependency environment, and no
/// private SDK in the folder or the environment: `<folder>/no-private-sdk`
/// passed, or the failure (nothing is run).
fn ready_to_run(c: &CandidateObservation) -> Check {
    let folder = c.folder.as_str();
    let name = |check: &str| format!("{folder}/{check}");
    if c.extraction_missing {
        return Check::fail(
            &name("extraction"),
            Some(folder),
            format!(
                "DIR/extracted/{folder} does not exist, so the tests could not run against the archive; expected \
                 the extraction `archive-members` writes: see that gate"
            ),
        );
    }
    if let Some(error) = &c.environment_error {
        return Check::fail(
            &name("dependencies"),
            Some(folder),
            format!(
                "{error}, so its tests could not be given its requirements; expected the environment the SDK \
                 prepared from DIR/wheelhouse: see the `dependencies` gate"
            ),
        );
    }
    if !c.folder_sdk.is_empty() {
        return Check::fail(
                &name("no-private-sdk"),
                Some(folder),
                format!(
                    "{} holds {:?} at its top: expected no copy of the SDK in the candidate, whose folder comes \
                     first on sys.path in its own runs, so its tests would import that copy instead of the \
                     verified SDK (nothing was run); remove it (the `sdk-shadow` gate refuses it too)",
                    c.path, c.folder_sdk
                ),
            )
            .with_observed(json!({ "found": c.folder_sdk }));
    }
    let env_observed = json!({ "environment": c.environment, "found": c.private_sdk });
    if !c.private_sdk.is_empty() {
        return Check::fail(
                &name("no-private-sdk"),
                Some(folder),
                format!(
                    "its dependency environment {} holds {:?}: expected no copy of the SDK there, which its tests \
                     would see; the SDK comes only from the verified interpreter: drop the requirement that \
                     brings it (nothing was run)",
                    c.environment.as_deref().unwrap_or("?"),
                    c.private_sdk
                ),
            )
            .with_observed(env_observed);
    }
    Check::pass(
            &name("no-private-sdk"),
            Some(folder),
            match &c.environment {
                Some(env) => format!(
                    "its dependency environment {env} holds nothing named langbot_plugin*; it is appended to \
                     sys.path after the interpreter's own site-packages (read-only in the sandbox), so the SDK the tests import \
                     is the verified interpreter's"
                ),
                None => "it has no dependency environment (its requirements name nothing beyond the SDK): the \
                         SDK the tests import is the verified interpreter's"
                    .into(),
            },
        )
        .with_observed(env_observed)
}
