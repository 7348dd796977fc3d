//! What the `suites` gate observes, as plain data: the runs, their
//! collection records as the run's driver (`suites_run.py`) writes them,
//! and DIR/extracted around them. `observe.rs` (and `candidates.rs`, `kept.rs`)
//! fill these in; the decisions (`suites.rs`, `rewrites.rs`, `deselection.rs`,
//! `uncollected.rs`, `patches.rs`, `reruns.rs`) read them. Nothing here
//! runs or judges.

use crate::evidence::sandbox::{LeftRunning, SandboxRecord};
use crate::evidence::SuiteTestCase;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything the gate observed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Observation {
    /// The commit DIR/staging/source is.
    pub commit: String,
    /// `[suites] paths` that are not in the committed tree.
    pub missing_paths: Vec<String>,
    /// `[suites] historical` files that are not files of the committed tree.
    pub missing_historical: Vec<String>,
    /// Whether `[suites] config` is a file of the committed tree; `None`: the
    /// profile names no configuration.
    pub config_present: Option<bool>,
    /// The runs, `tree` then `extracted`; empty when a path or the
    /// configuration is missing (nothing was run).
    pub runs: Vec<RunObservation>,
    /// DIR/extracted around the runs; `None` when nothing was run.
    pub extraction: Option<ExtractionObservation>,
}

/// One pytest run (`tree` or `extracted`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunObservation {
    /// `tree` or `extracted`.
    pub name: String,
    /// Working directory and rootdir, relative to DIR.
    pub cwd: String,
    /// The source-root variable's value, relative to DIR; `None`: unset.
    pub source_root: Option<String>,
    /// The interpreter path the run used.
    pub python: String,
    /// The profile's time limit for the run, its collection included.
    pub timeout_secs: u64,
    /// What the run recorded of its collection.
    pub collection: CollectionObs,
    /// How the pytest run ended.
    pub pytest: PytestObs,
    /// The JUnit report's path relative to DIR.
    pub junit_rel: String,
    /// pytest wrote the report.
    pub junit_written: bool,
    /// The report's testcases, or why it could not be read.
    pub report: Result<Vec<SuiteTestCase>, String>,
    /// The sandbox the run's process ran in.
    pub sandbox: SandboxRecord,
    /// What the run left running in its sandbox when it exited; `None`
    /// when it ran unconfined (the end-of-run survey sees what it left).
    pub left_running: Option<LeftRunning>,
    /// Reruns of the tests this run failed (`[suites] retries`), in order,
    /// each named `<name>-rerun-<k>`; empty when none was made.
    pub reruns: Vec<RunObservation>,
}

/// The run's process, and the collection record it wrote.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CollectionObs {
    /// How the run's process ended (the same process as [`PytestObs`]).
    pub process: ProcessRun,
    /// Its collection record.
    pub answer: CollectAnswer,
}

/// How a child process ended.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProcessRun {
    /// "exit status 0", "killed by signal 9", "timed out and was stopped".
    pub status: String,
    /// Exit status; `None` when stopped (time limit, signal) or not started.
    pub exit_code: Option<i32>,
    /// The time limit elapsed.
    pub timed_out: bool,
    /// Last lines of its stdout then of its stderr.
    pub tail: String,
    /// Its logs.
    pub log: String,
    /// The node id of the test running when the time limit stopped the run
    /// (`<record>.running`, written by the driver as each test starts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<String>,
}

/// What the run's collection record (`suites_run.py`) says.
#[derive(Debug, Clone, Serialize)]
pub(crate) enum CollectAnswer {
    /// pytest finished its collection and the driver recorded it.
    Collected(Collection),
    /// The interpreter could not import pytest.
    PytestMissing {
        /// `<exception type>: <message>`.
        error: String,
    },
    /// There is no usable record (the process was stopped or ended before
    /// pytest finished collecting, or the record is not the driver's shape).
    NoReport {
        /// Why there is no report.
        error: String,
    },
}

/// What `suites_run.py` records when pytest finished its collection.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct Collection {
    /// pytest's status for the collection: the session's own when it ended
    /// before any test started (2 collection errors, 3 internal error, 4
    /// usage error, 5 nothing collected, or a code passed to exit); once a
    /// test started, what the collection alone gives (2 with collection
    /// errors, 5 with no item, else 0).
    pub exit_code: i32,
    /// `pytest.__version__`.
    pub pytest_version: String,
    /// Every collected item (and any item a plugin ran that the collection
    /// did not report).
    pub items: Vec<CollectedItem>,
    /// Every collector that failed.
    pub errors: Vec<CollectError>,
    /// The code a conftest or plugin passed to `sys.exit` inside pytest's
    /// session (`repr`), if one did.
    #[serde(default)]
    pub system_exit: Option<String>,
    /// A test had started when the record was written.
    #[serde(default)]
    pub tests_started: bool,
    /// The record was written after the session ended; `false`: the process
    /// ended or was stopped after the collection, before pytest returned.
    #[serde(default)]
    pub finished: bool,
    /// What the run's own plugin observed of each test it ran, apart from
    /// the reports (`suites/rewrites.rs`).
    #[serde(default)]
    pub observed: Vec<ObservedTest>,
    /// Collected items the session does not run (`suites/deselection.rs`).
    #[serde(default)]
    pub deselected: Vec<DeselectedItem>,
    /// Implementations of reporting, test-running and selection hooks
    /// outside pytest's own package.
    #[serde(default)]
    pub hooks: Vec<HookImpl>,
    /// What the driver read from the suites' test files
    /// (`suites/uncollected.rs`).
    /// (Boxed: it keeps [`CollectAnswer`]'s variants of a similar size.)
    #[serde(flatten)]
    pub definitions: Box<Definitions>,
    /// The child folders of the source root (DIR/extracted: candidates'
    /// extractions) the run's process opened a file in, imported from,
    /// listed, changed into or named in a program it started, as its audit
    /// hook saw them; empty for a run without a source root.
    #[serde(default)]
    pub touched: Vec<String>,
    /// pytest's `collectonly` option was set when the run was configured
    /// (`--collect-only`/`--co`, from addopts or a conftest): it runs no test.
    #[serde(default)]
    pub collect_only: bool,
}

/// One collected test item.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct CollectedItem {
    /// pytest's node id.
    pub nodeid: String,
    /// The item's file (absolute).
    pub path: String,
    /// The file its test function is defined in, when known.
    pub source_file: Option<String>,
    /// JUnit classname.
    pub classname: String,
    /// JUnit name.
    pub name: String,
    /// The xfail that applies, if any.
    pub xfail: Option<XfailMark>,
    /// The historical file (profile path) the item's file or source file is,
    /// set by the observation.
    #[serde(default)]
    pub historical: Option<String>,
}

/// The xfail that applies to an item, as pytest evaluated it; `error` when
/// its condition could not be evaluated.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct XfailMark {
    /// `strict=` as evaluated.
    pub strict: Option<bool>,
    /// Why the mark could not be evaluated.
    pub error: Option<String>,
}

/// A collector that failed (import error, syntax error).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct CollectError {
    /// The collector's node id.
    pub nodeid: String,
    /// pytest's report of the failure (last 4000 characters).
    pub longrepr: String,
}

/// How the pytest run ended.
#[derive(Debug, Clone, Serialize)]
pub(crate) enum PytestObs {
    /// pytest ran.
    Ran {
        /// Exit status; `None` when stopped (time limit, signal).
        exit_code: Option<i32>,
        /// "exit status 1", "timed out and was stopped", ...
        status: String,
        /// The time limit elapsed.
        timed_out: bool,
        /// Processes it left behind were stopped.
        stragglers_killed: bool,
        /// Its stdout log.
        log: String,
    },
    /// pytest could not be started.
    NotRun {
        /// Why.
        error: String,
    },
}

/// DIR/extracted as the `extracted` run was given it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ExtractionObservation {
    /// Its absolute path.
    pub root: String,
    /// The candidate folders' last components, which it must hold exactly.
    pub candidates: Vec<String>,
    /// Its entries' names, or why it could not be read.
    pub entries: Result<Vec<String>, String>,
    /// Those entries that are directories.
    pub dirs: Vec<String>,
    /// `relative path -> digest` before the runs.
    pub before: BTreeMap<String, String>,
    /// The same after the runs.
    pub after: BTreeMap<String, String>,
}

/// What the run's plugin observed of one test it ran.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct ObservedTest {
    /// pytest's node id.
    pub nodeid: String,
    /// JUnit classname, as the run's report writes it.
    pub classname: String,
    /// JUnit name.
    pub name: String,
    /// The outcome pytest's rules give for what its phases raised
    /// (`passed`, `failed`, `error`, `skipped`, `xfailed`, `xpassed`,
    /// `xpassed-strict`); `None` when it could not be observed.
    pub observed: Option<String>,
    /// Why it could not be observed.
    #[serde(default)]
    pub unobserved: Option<String>,
    /// Each phase that ran (`setup`, `call`, `teardown`): `ok`, or the
    /// exception it raised (`<type>: <message>`).
    #[serde(default)]
    pub phases: BTreeMap<String, String>,
    /// The exception the test function itself raised, if it did.
    #[serde(default)]
    pub callable_raised: Option<String>,
    /// The outcome of the reports `pytest_runtest_logreport` handed the
    /// plugin; `None`: none reached it.
    #[serde(default)]
    pub logged: Option<String>,
    /// Why the callable called for the test is not the one its collection
    /// ended with (`item.obj` replaced before or during the call, or the
    /// call phase never calling it through the plugin's wrapper).
    #[serde(default)]
    pub callable_problem: Option<String>,
}

/// A hook implementation outside pytest's own package and the driver.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct HookImpl {
    /// The hook (`pytest_runtest_makereport`, ...).
    pub hook: String,
    /// pluggy's name of the plugin (a conftest's is its path).
    pub plugin: String,
    /// The file defining it, relative to the rootdir when inside it.
    pub file: Option<String>,
    /// The line of its `def`.
    pub line: Option<u64>,
    /// A wrapper (`wrapper=True` or `hookwrapper=True`).
    #[serde(default)]
    pub wrapper: bool,
}

impl HookImpl {
    /// `file:line hook (wrapper)`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}:{} {}{}",
            self.file.as_deref().unwrap_or(&self.plugin),
            self.line.map_or("?".to_string(), |l| l.to_string()),
            self.hook,
            if self.wrapper { " (wrapper)" } else { "" }
        )
    }

    /// Whether its file is inside the run's rootdir (a conftest or module
    /// of the repository, not an installed plugin).
    pub(crate) fn in_repository(&self) -> bool {
        self.file.as_deref().is_some_and(|f| !f.starts_with('/'))
    }
}

/// The hooks that make, change or log a test's report, or run its phases.
/// With [`SELECTION_HOOKS`] and [`COLLECTION_HOOKS`] these are the hooks
/// the run's driver lists (passed to it: the one list).
pub(crate) const REPORTING_HOOKS: &[&str] = &[
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_report_teststatus",
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_runtest_call",
    "pytest_runtest_teardown",
    "pytest_pyfunc_call",
    "pytest_report_to_serializable",
    "pytest_report_from_serializable",
];

/// `hooks` implementing one of `names`, the repository's first, each as
/// [`HookImpl::describe`].
pub(crate) fn hooks_named(hooks: &[HookImpl], names: &[&str]) -> Vec<String> {
    let mut found: Vec<&HookImpl> = hooks
        .iter()
        .filter(|h| names.contains(&h.hook.as_str()))
        .collect();
    found.sort_by_key(|h| !h.in_repository());
    found.iter().map(|h| h.describe()).collect()
}

/// A collected item the session does not run.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct DeselectedItem {
    /// pytest's node id.
    pub nodeid: String,
    /// `pytest_deselected` (announced: `--deselect`, `-k`, `-m`, a hook
    /// calling it) or `dropped` (removed from the session's items without).
    pub via: String,
}

/// The hooks that choose which collected items run.
pub(crate) const SELECTION_HOOKS: &[&str] = &[
    "pytest_collection_modifyitems",
    "pytest_deselected",
    "pytest_collection_finish",
];

/// What the run's driver read from the suites' test files.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct Definitions {
    /// Every test function and test class method the naming rules name.
    #[serde(default)]
    pub defined: Vec<DefinedTest>,
    /// Test files it could not parse.
    #[serde(default)]
    pub scan_errors: Vec<ScanError>,
    /// Collectors pytest skipped (`pytest.skip(allow_module_level=True)`,
    /// `pytest.importorskip`), with the reason.
    #[serde(default)]
    pub collect_skipped: Vec<CollectSkipped>,
    /// Statements of the run's tree that assign to pytest's objects or the
    /// plugin's (`suites/patches.rs`).
    #[serde(default)]
    pub pytest_patches: PytestPatches,
}

/// One test `def` of a suite file.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct DefinedTest {
    /// The node id pytest gives it (`file::Class::name`, no parameters).
    pub nodeid: String,
    /// Its file, relative to the rootdir.
    pub file: String,
    /// The line of its `def`.
    pub line: u64,
}

/// A test file the driver could not parse.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct ScanError {
    /// The file, relative to the rootdir.
    pub file: String,
    /// `<type>: <message>`.
    pub error: String,
}

/// A collector pytest skipped.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct CollectSkipped {
    /// Its node id.
    pub nodeid: String,
    /// The skip's reason.
    pub reason: String,
}

/// The hooks, and conftest variables, that decide what is collected.
pub(crate) const COLLECTION_HOOKS: &[&str] = &[
    "pytest_ignore_collect",
    "pytest_collect_file",
    "pytest_pycollect_makeitem",
    "pytest_collection_modifyitems",
    "pytest_generate_tests",
    "pytest_collect_directory",
    "pytest_make_collect_report",
    "collect_ignore",
    "collect_ignore_glob",
];

/// What the driver's scan found (`pytest_patches` of the record).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct PytestPatches {
    /// `.py` files read.
    #[serde(default)]
    pub files: u64,
    /// Every patching statement.
    #[serde(default)]
    pub patches: Vec<Patch>,
}

/// One statement assigning to an attribute of pytest's objects or of the
/// run's plugin.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct Patch {
    /// The file, relative to the run's copy of the tree.
    pub file: String,
    /// Its line.
    pub line: u64,
    /// What it assigns to (`_pytest.reports.TestReport.outcome`,
    /// `<plugin>.record`).
    pub target: String,
    /// The statement's first line (at most 160 characters).
    pub statement: String,
}
