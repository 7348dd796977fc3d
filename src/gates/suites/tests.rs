//! The `suites` gate's decision over observation values, without Python:
//! one counterexample per clause of the catalogue's `proves` sentence, one
//! test per detail and advice, and the JUnit reader over pytest's shapes.

use super::record::{CollectError, CollectedItem, CollectionObs, ProcessRun, XfailMark};
use super::*;
use crate::evidence::sandbox::{LeftProcess, LeftRunning, Network, SandboxRecord};
use crate::evidence::CheckResult;
use crate::profile::LeftRunningPolicy as Policy;

mod candidates;
mod reruns;

/// The report pytest 9.2 wrote for one test of each shape (captured from
/// a real run; tracebacks shortened).
const SHAPES: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="6" time="0.046" timestamp="2026-11-29T18:17:21.411663+00:00" hostname="vm"><testcase classname="test_shapes" name="test_xpass_strict" time="0.001"><failure message="[XPASS(strict)] strictreason">[XPASS(strict)] strictreason</failure></testcase><testcase classname="test_shapes" name="test_xpass_loose" time="0.000" /><testcase classname="test_shapes" name="test_skip" time="0.000"><skipped type="pytest.skip" message="skipreason">/tmp/x/test_shapes.py:12: skipreason</skipped></testcase><testcase classname="test_shapes" name="test_error" time="0.000"><error message="failed on setup with &quot;RuntimeError: fixture boom&quot;">E       RuntimeError: fixture boom&#10;&gt; x</error></testcase><testcase classname="test_shapes" name="test_fail" time="0.001"><failure message="assert 1 == 2">&gt;       assert 1 == 2</failure></testcase><testcase classname="test_shapes" name="test_xfail_imperative" time="0.000"><skipped type="pytest.xfail" message="imperative" /></testcase><testcase classname="Runner.certification-tests.test_a" name="test_ok[p-1]" time="1.019" /></testsuite></testsuites>"#;

const HISTORICAL: &str = "R/t/historical_x.py";
const PY: &str = "/venv/bin/python";

fn xfails() -> HashMap<(String, String), Option<bool>> {
    HashMap::from([
        (
            ("test_shapes".into(), "test_xpass_strict".into()),
            Some(true),
        ),
        (
            ("test_shapes".into(), "test_xpass_loose".into()),
            Some(false),
        ),
    ])
}

fn case(name: &str, outcome: SuiteOutcome, message: Option<&str>) -> SuiteTestCase {
    SuiteTestCase {
        classname: "R.t.test_a".into(),
        name: name.into(),
        outcome,
        message: message.map(str::to_string),
        text: None,
        duration_ms: None,
    }
}

fn item(name: &str) -> CollectedItem {
    CollectedItem {
        nodeid: format!("R/t/test_a.py::{name}"),
        path: "/d/R/t/test_a.py".into(),
        source_file: None,
        classname: "R.t.test_a".into(),
        name: name.into(),
        xfail: None,
        historical: None,
    }
}

fn collected(items: Vec<CollectedItem>, exit_code: i32) -> CollectAnswer {
    CollectAnswer::Collected(Collection {
        exit_code,
        pytest_version: "9.0.2".into(),
        items,
        errors: vec![],
        system_exit: None,
        tests_started: true,
        finished: true,
        observed: vec![],
        deselected: vec![],
        hooks: vec![],
        definitions: Default::default(),
        touched: vec![],
        collect_only: false,
    })
}

/// Records in `r`'s collection that its plugin observed every item as its
/// report says (the observation of a run no hook rewrote).
fn observe_as_reported(r: &mut RunObservation) {
    let cases = r.report.clone().unwrap_or_default();
    if let CollectAnswer::Collected(c) = &mut r.collection.answer {
        c.observed = c
            .items
            .iter()
            .map(|i| {
                let outcome = cases
                    .iter()
                    .find(|t| t.classname == i.classname && t.name == i.name)
                    .map(|t| outcome_word(t.outcome).to_string());
                record::ObservedTest {
                    nodeid: i.nodeid.clone(),
                    classname: i.classname.clone(),
                    name: i.name.clone(),
                    observed: outcome.clone(),
                    logged: outcome,
                    ..Default::default()
                }
            })
            .collect();
    }
}

fn process_ok() -> ProcessRun {
    ProcessRun {
        status: "exit status 0".into(),
        exit_code: Some(0),
        timed_out: false,
        tail: "3 tests collected".into(),
        log: "DIR/logs/suites/tree.stdout and DIR/logs/suites/tree.stderr".into(),
        running: None,
    }
}

fn ran(exit: i32) -> PytestObs {
    PytestObs::Ran {
        exit_code: Some(exit),
        status: format!("exit status {exit}"),
        timed_out: false,
        stragglers_killed: false,
        log: "DIR/logs/suites/tree.stdout".into(),
    }
}

/// A run that collected `test_x`, `test_y` and the strict xfail `test_z`,
/// and whose report says so: two passes, one xfail, exit 0.
fn good_run(name: &str) -> RunObservation {
    let mut z = item("test_z");
    z.xfail = Some(XfailMark {
        strict: Some(true),
        error: None,
    });
    let mut run = RunObservation {
        name: name.into(),
        cwd: format!("roots/suites/{name}/source"),
        source_root: (name == "extracted").then(|| "extracted".to_string()),
        python: PY.into(),
        timeout_secs: 600,
        collection: CollectionObs {
            process: process_ok(),
            answer: collected(vec![item("test_x"), item("test_y"), z], 0),
        },
        pytest: ran(0),
        junit_rel: format!("logs/suites/{name}.xml"),
        junit_written: true,
        report: Ok(vec![
            case("test_x", SuiteOutcome::Passed, None),
            case("test_y", SuiteOutcome::Passed, None),
            case("test_z", SuiteOutcome::Xfailed, Some("known limitation")),
        ]),
        sandbox: confined(name),
        left_running: Some(LeftRunning::Surveyed {
            processes: Vec::new(),
        }),
        reruns: Vec::new(),
    };
    observe_as_reported(&mut run);
    run
}

/// The record of a run confined by bwrap with its private root writable.
fn confined(name: &str) -> SandboxRecord {
    SandboxRecord {
        kind: "bwrap".into(),
        program: Some("/usr/bin/bwrap".into()),
        version: Some("bubblewrap 0.8.0".into()),
        own_pid_namespace: true,
        dies_with_verifier: true,
        network: Some(Network::PrivateLoopback),
        read_only: vec!["/ev/extracted".into()],
        writable: vec![format!("/ev/roots/suites/{name}")],
        unconfined_because: None,
    }
}

#[test]
fn a_run_in_the_sandbox_passes_its_sandbox_check_and_an_unconfined_run_warns() {
    let obs = Observation {
        runs: vec![good_run("tree"), good_run("extracted")],
        ..good()
    };
    let checks = decide(&obs, &opts());
    let sandbox = checks
        .iter()
        .find(|c| c.name == "tree/sandbox")
        .expect("tree/sandbox");
    assert_eq!(sandbox.result, CheckResult::Pass, "{}", sandbox.detail);
    assert_eq!(sandbox.observed.as_ref().unwrap()["kind"], "bwrap");

    let mut unconfined = good_run("tree");
    unconfined.sandbox = SandboxRecord::unconfined(
        "none",
        Some("no `bwrap` executable in the 2 folder(s) of PATH".into()),
    );
    let obs = Observation {
        runs: vec![unconfined, good_run("extracted")],
        ..good()
    };
    let checks = decide(&obs, &opts());
    let sandbox = checks
        .iter()
        .find(|c| c.name == "tree/sandbox")
        .expect("tree/sandbox");
    assert_eq!(sandbox.result, CheckResult::Warn);
    assert!(
        sandbox.detail.contains("ran unconfined"),
        "{}",
        sandbox.detail
    );
    assert!(
        sandbox.detail.contains("no `bwrap` executable"),
        "{}",
        sandbox.detail
    );
    // A bwrap record without its own pid namespace is not a sandbox either.
    let mut half = good_run("extracted");
    half.sandbox.own_pid_namespace = false;
    let obs = Observation {
        runs: vec![good_run("tree"), half],
        ..good()
    };
    let checks = decide(&obs, &opts());
    let sandbox = checks
        .iter()
        .find(|c| c.name == "extracted/sandbox")
        .unwrap();
    assert_eq!(sandbox.result, CheckResult::Warn);
}

fn extraction() -> ExtractionObservation {
    let digests = BTreeMap::from([
        ("a".to_string(), "dir".to_string()),
        ("a/f.py".to_string(), "ab12:6".to_string()),
        ("b".to_string(), "dir".to_string()),
    ]);
    ExtractionObservation {
        root: "/ev/extracted".into(),
        candidates: vec!["a".into(), "b".into()],
        entries: Ok(vec!["a".into(), "b".into()]),
        dirs: vec!["a".into(), "b".into()],
        before: digests.clone(),
        after: digests,
    }
}

fn good() -> Observation {
    Observation {
        commit: "c0ffee".into(),
        missing_paths: vec![],
        missing_historical: vec![],
        config_present: None,
        runs: vec![good_run("tree"), good_run("extracted")],
        extraction: Some(extraction()),
    }
}

fn opts() -> SuitesOptions {
    SuitesOptions {
        paths: vec!["R/t/test_a.py".into()],
        historical: vec![HISTORICAL.into()],
        source_root_env: "CODING_RUNNER_SOURCE_ROOT".into(),
        config: None,
        timeout_secs: 600,
        deselected: vec![],
        python_files: None,
        python_functions: None,
        python_classes: None,
        pytest_plugins: vec!["pytest_asyncio.plugin".into()],
        retries: 0,
        covers: vec![],
        left_running: Policy::Fail,
    }
}

#[test]
fn a_run_that_left_a_daemon_fails_left_running_or_warns_by_the_profile() {
    let daemon = LeftProcess {
        pid: 9,
        ppid: 1,
        pgid: 8,
        sid: 8,
        state: "S".into(),
        cmdline: "python3 -c import time; time.sleep(300)".into(),
        ms_alive: 3000,
    };
    let mut obs = good();
    assert_eq!(
        find(&decide(&obs, &opts()), "tree/left-running").result,
        CheckResult::Pass
    );
    obs.runs[0].left_running = Some(LeftRunning::Surveyed {
        processes: vec![daemon],
    });
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/left-running");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("time.sleep(300)"), "{}", c.detail);
    assert_eq!(
        find(&checks, "extracted/left-running").result,
        CheckResult::Pass
    );
    let warned = SuitesOptions {
        left_running: Policy::Warn,
        ..opts()
    };
    let checks = decide(&obs, &warned);
    assert_eq!(find(&checks, "tree/left-running").result, CheckResult::Warn);
    assert!(!checks.iter().any(|c| c.result == CheckResult::Fail));
}

fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name} in {checks:#?}"))
}

fn failing(checks: &[Check]) -> Vec<(&str, Option<&str>)> {
    checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
        .map(|c| (c.name.as_str(), c.consequence_of.as_deref()))
        .collect()
}

fn names(checks: &[Check]) -> Vec<&str> {
    checks.iter().map(|c| c.name.as_str()).collect()
}

// ----- the passing observation ---------------------------------------------

#[test]
fn a_good_observation_passes_every_check_in_order_and_every_pass_carries_observed() {
    let checks = decide(&good(), &opts());
    assert_eq!(
        names(&checks),
        [
            "suite-paths",
            "tree/sandbox",
            "tree/left-running",
            "tree/collected",
            "tree/historical-not-collected",
            "tree/outcomes",
            "tree/observed-outcomes",
            "tree/deselected",
            "tree/uncollected",
            "tree/pytest-patches",
            "tree/passing",
            "tree/strict-xfail",
            "extracted/source-root",
            "extracted/sandbox",
            "extracted/left-running",
            "extracted/collected",
            "extracted/historical-not-collected",
            "extracted/outcomes",
            "extracted/observed-outcomes",
            "extracted/deselected",
            "extracted/uncollected",
            "extracted/pytest-patches",
            "extracted/passing",
            "extracted/strict-xfail",
            "extracted/extraction-unchanged",
            "extracted/same-outcomes",
        ]
    );
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
        assert_eq!(c.consequence_of, None, "{}", c.name);
        let observed = c.observed.as_ref().unwrap_or_else(|| panic!("{}", c.name));
        assert!(
            !observed.is_null() && observed.as_object().is_some_and(|o| !o.is_empty()),
            "{}: {observed}",
            c.name
        );
    }
    assert_eq!(
        find(&checks, "tree/collected").detail,
        "pytest collected 3 test(s) from R/t/test_a.py"
    );
    assert_eq!(
        find(&checks, "tree/outcomes").detail,
        "pytest exit status 0: 3 test(s): 2 passed, 1 xfailed (expected failures, not passes), 0 skipped, \
         0 xpassed (non-strict)"
    );
    assert_eq!(
        find(&checks, "tree/passing").detail,
        "2 of 3 test(s) passed"
    );
    assert_eq!(
        find(&checks, "extracted/strict-xfail")
            .observed
            .as_deref()
            .cloned(),
        Some(
            json!({"xfailed": ["R.t.test_a::test_z"], "xpassed_strict": [], "strict_xfail_items": 1})
        )
    );
    assert_eq!(
        find(&checks, "extracted/extraction-unchanged").detail,
        "all 3 entries of /ev/extracted are unchanged after the runs (sha256 and size)"
    );
    assert_eq!(
        find(&checks, "extracted/same-outcomes").detail,
        "the tree run and the DIR/extracted run report the same 3 test id(s) with the same outcomes \
         (2 passed in each)"
    );
}

#[test]
fn the_record_holds_both_runs_in_order_with_counts_and_the_pytest_version() {
    let mut obs = good();
    obs.runs[1].junit_written = false;
    obs.runs[1].pytest = PytestObs::Ran {
        exit_code: None,
        status: "timed out and was stopped".into(),
        timed_out: true,
        stragglers_killed: false,
        log: "l".into(),
    };
    let r = record_of(&obs, &opts());
    assert_eq!(r.pytest_version.as_deref(), Some("9.0.2"));
    assert_eq!(
        r.runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["tree", "extracted"]
    );
    assert_eq!(r.runs[0].collected, 3);
    assert_eq!(r.runs[0].exit_code, Some(0));
    assert_eq!(r.runs[0].junit.as_deref(), Some("logs/suites/tree.xml"));
    assert_eq!(r.runs[0].counts.passed, 2);
    assert_eq!(r.runs[0].counts.xfailed, 1);
    assert_eq!(r.runs[1].source_root.as_deref(), Some("extracted"));
    assert_eq!(r.runs[1].exit_code, None);
    assert!(r.runs[1].timed_out);
    assert_eq!(r.runs[1].junit, None);
}

#[test]
fn no_suites_in_the_profile_is_a_warning_that_claims_nothing() {
    let c = no_suites_check();
    assert_eq!(c.result, CheckResult::Warn);
    assert!(c.detail.contains("nothing was run and nothing is claimed"));
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"suites": null}))
    );
}

// ----- profile paths -------------------------------------------------------

#[test]
fn refuses_when_a_suite_path_is_not_in_the_commit_and_runs_nothing() {
    let obs = Observation {
        missing_paths: vec!["R/t/test_gone.py".into()],
        runs: vec![],
        extraction: None,
        ..good()
    };
    let checks = decide(&obs, &opts());
    assert_eq!(names(&checks), ["suite-paths"]);
    assert_eq!(checks[0].result, CheckResult::Fail);
    assert!(
        checks[0].detail.contains(
            "suite path(s) [\"R/t/test_gone.py\"] named by [suites] paths are not in commit c0ffee"
        ),
        "{}",
        checks[0].detail
    );
    assert!(checks[0].detail.contains("commit them or fix the profile"));
}

#[test]
fn refuses_when_the_named_pytest_configuration_is_not_committed() {
    let obs = Observation {
        config_present: Some(false),
        runs: vec![],
        extraction: None,
        ..good()
    };
    let o = SuitesOptions {
        config: Some("pytest.ini".into()),
        ..opts()
    };
    let checks = decide(&obs, &o);
    assert_eq!(names(&checks), ["suite-paths", "config"]);
    let c = find(&checks, "config");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c
        .detail
        .contains("[suites] config names pytest.ini, which is not a file in commit c0ffee"));
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"config": "pytest.ini", "present": false}))
    );
    let ok = decide(
        &Observation {
            config_present: Some(true),
            ..good()
        },
        &o,
    );
    assert_eq!(find(&ok, "config").result, CheckResult::Pass);
    assert_eq!(
        find(&ok, "config").observed.as_deref().cloned(),
        Some(json!({"config": "pytest.ini", "present": true}))
    );
}

#[test]
fn a_historical_file_missing_from_the_commit_is_a_warning() {
    let obs = Observation {
        missing_historical: vec![HISTORICAL.into()],
        ..good()
    };
    let checks = decide(&obs, &opts());
    let c = find(&checks, "historical-files");
    assert_eq!(c.result, CheckResult::Warn);
    assert!(c.detail.contains("not in commit c0ffee"), "{}", c.detail);
    assert_eq!(c.observed.as_ref().unwrap()["missing"], json!([HISTORICAL]));
}

// ----- clause: the genuine interpreter, pytest importable -----------------

#[test]
fn refuses_when_the_interpreter_has_no_pytest_and_names_the_interpreter_as_the_cause() {
    let mut obs = good();
    for r in &mut obs.runs {
        r.collection.answer = CollectAnswer::PytestMissing {
            error: "ModuleNotFoundError: No module named 'pytest'".into(),
        };
        r.pytest = ran(1);
        r.junit_written = false;
        r.report = Err("pytest wrote no JUnit report (logs/suites/tree.xml)".into());
    }
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/collected");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(
            "the interpreter /venv/bin/python cannot import pytest (ModuleNotFoundError: No module named 'pytest')"
        ),
        "{}",
        c.detail
    );
    assert!(c
        .detail
        .contains("/venv/bin/python -m pip install pytest pytest-asyncio"));
    assert!(c.detail.contains("--python"), "{}", c.detail);
    assert_eq!(c.consequence_of, None);
    // Everything else of the run is a consequence of the missing pytest.
    assert_eq!(
        failing(&checks),
        [
            ("tree/collected", None),
            ("tree/historical-not-collected", Some("tree/collected")),
            ("tree/outcomes", Some("tree/collected")),
            ("tree/observed-outcomes", Some("tree/collected")),
            ("tree/deselected", Some("tree/collected")),
            ("tree/uncollected", Some("tree/collected")),
            ("tree/pytest-patches", Some("tree/collected")),
            ("tree/strict-xfail", Some("tree/collected")),
            ("extracted/collected", None),
            (
                "extracted/historical-not-collected",
                Some("extracted/collected")
            ),
            ("extracted/outcomes", Some("extracted/collected")),
            ("extracted/observed-outcomes", Some("extracted/collected")),
            ("extracted/deselected", Some("extracted/collected")),
            ("extracted/uncollected", Some("extracted/collected")),
            ("extracted/pytest-patches", Some("extracted/collected")),
            ("extracted/strict-xfail", Some("extracted/collected")),
            ("extracted/same-outcomes", Some("tree/collected")),
        ]
    );
}

// ----- clause: collected at least one test, exit 5 fails -------------------

#[test]
fn refuses_when_pytest_collects_nothing_exit_5() {
    let mut obs = good();
    obs.runs[0].collection.answer = collected(vec![], 5);
    obs.runs[0].pytest = ran(5);
    obs.runs[0].report = Ok(vec![]);
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/collected");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(
            "pytest collected nothing from [\"R/t/test_a.py\"] (exit status 5, 5 means no tests)"
        ),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("name files that hold `test_*` functions"));
    let o = find(&checks, "tree/outcomes");
    assert!(o.detail.contains("ran no test"), "{}", o.detail);
    assert_eq!(o.consequence_of.as_deref(), Some("tree/collected"));
    assert_eq!(
        find(&checks, "tree/passing").consequence_of.as_deref(),
        Some("tree/collected")
    );
    assert_eq!(
        find(&checks, "extracted/same-outcomes")
            .consequence_of
            .as_deref(),
        Some("tree/collected")
    );
}

#[test]
fn refuses_when_pytest_exits_0_with_no_item() {
    let mut r = good_run("tree");
    r.collection.answer = collected(vec![], 0);
    let c = collected_check(&r, &opts().paths);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("collected nothing"), "{}", c.detail);
    assert_eq!(c.observed.as_ref().unwrap()["items"], 0);
}

#[test]
fn refuses_a_collection_error_with_import_advice_and_puts_the_run_under_it() {
    let mut obs = good();
    obs.runs[1].collection.answer = CollectAnswer::Collected(Collection {
        exit_code: 2,
        pytest_version: "9.0.2".into(),
        items: vec![item("test_x")],
        errors: vec![CollectError {
            nodeid: "R/t/test_b.py".into(),
            longrepr: "ImportError while importing test module\nE   ModuleNotFoundError: No module named 'pkg'"
                .into(),
        }],
        system_exit: None,
        tests_started: false,
        finished: true,
        observed: vec![],
        deselected: vec![],
        hooks: vec![],
        definitions: Default::default(),
        touched: vec![],
        collect_only: false,
    });
    obs.runs[1].pytest = ran(2);
    obs.runs[1].report = Ok(vec![case(
        "R/t/test_b.py",
        SuiteOutcome::Error,
        Some("collection failure"),
    )]);
    let checks = decide(&obs, &opts());
    let c = find(&checks, "extracted/collected");
    assert!(
        c.detail.contains(
            "pytest could not collect 1 of the suites (exit status 2): R/t/test_b.py failed with: ImportError while \
             importing test module | E   ModuleNotFoundError: No module named 'pkg'"
        ),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("fix the import or syntax error"));
    assert!(!c.detail.contains("--python"), "{}", c.detail);
    assert_eq!(
        failing(&checks),
        [
            ("extracted/collected", None),
            ("extracted/outcomes", Some("extracted/collected")),
            ("extracted/passing", Some("extracted/collected")),
            ("extracted/same-outcomes", Some("extracted/collected")),
        ]
    );
}

#[test]
fn a_usage_error_while_collecting_is_about_the_configuration_not_missing_tests() {
    let mut r = good_run("tree");
    r.collection.answer = collected(vec![], 4);
    r.collection.process.tail = "ERROR: usage: pytest: error: unrecognized arguments: -n".into();
    let c = collected_check(&r, &opts().paths);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("(exit status 4, usage error): ERROR: usage"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("fix the pytest configuration"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("collected nothing"), "{}", c.detail);
}

#[test]
fn an_internal_error_while_collecting_names_the_hook() {
    let mut r = good_run("tree");
    r.collection.answer = collected(vec![item("test_x")], 3);
    r.collection.process.tail = "INTERNALERROR> RuntimeError: hook".into();
    let c = collected_check(&r, &opts().paths);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("internal error while collecting"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("INTERNALERROR> RuntimeError: hook"));
}

#[test]
fn another_nonzero_collection_status_fails_with_the_tail() {
    let mut r = good_run("tree");
    r.collection.answer = collected(vec![item("test_x")], 2);
    r.collection.process.tail = "Interrupted".into();
    let c = collected_check(&r, &opts().paths);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("pytest exited with status 2 while collecting [\"R/t/test_a.py\"] (1 item(s), no collector error): Interrupted"),
        "{}",
        c.detail
    );
}

#[test]
fn a_hook_that_calls_exit_after_collection_is_named_and_does_not_blame_the_interpreter() {
    // A conftest's `pytest_sessionfinish` calling `sys.exit(3)` in a session
    // that ran no test (`--collect-only` in the configuration's addopts):
    // collection passed (three items), the session ends with 3. This used to
    // surface as a failed probe with advice about --python.
    let mut obs = good();
    if let CollectAnswer::Collected(c) = &mut obs.runs[0].collection.answer {
        c.exit_code = 3;
        c.system_exit = Some("3".into());
        c.tests_started = false;
    }
    obs.runs[0].collection.process.tail = "suites_run: pytest ended with SystemExit(3)".into();
    obs.runs[0].pytest = ran(3);
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/collected");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.starts_with(
            "a conftest or plugin called exit(3) inside pytest's session while collecting [\"R/t/test_a.py\"], after 3 \
             item(s) were collected (exit status 3)"
        ),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("remove the exit call from the hook"));
    assert!(!c.detail.contains("--python"), "{}", c.detail);
    assert!(!c.detail.contains("internal error"), "{}", c.detail);
    let o = find(&checks, "tree/outcomes");
    assert!(!o.detail.contains("--python"), "{}", o.detail);
    assert_eq!(o.consequence_of.as_deref(), Some("tree/collected"));
}

#[test]
fn a_hook_that_calls_exit_after_the_tests_started_still_fails_collected() {
    // A conftest's `pytest_sessionfinish` calling `sys.exit(0)` after every
    // test passed: pytest's own report and status are replaced by the
    // hook's. The separate collection used to see it too; the run's own
    // record must keep refusing it, naming when it happened.
    let mut obs = good();
    if let CollectAnswer::Collected(c) = &mut obs.runs[0].collection.answer {
        c.exit_code = 0;
        c.system_exit = Some("0".into());
        c.tests_started = true;
    }
    obs.runs[0].collection.process.tail =
        "2 passed, 1 xfailed || suites_run: pytest ended with SystemExit(0)".into();
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/collected");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.starts_with(
            "a conftest or plugin called exit(0) inside pytest's session after the run's 3 collected item(s) had \
             started running (the run: exit status 0): 2 passed"
        ),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("remove the exit call from the hook"));
    assert!(!c.detail.contains("--python"), "{}", c.detail);
    assert_eq!(failing(&checks), [("tree/collected", None)]);
}

#[test]
fn a_run_that_ended_before_recording_its_collection_does_not_blame_the_interpreter() {
    let mut r = good_run("tree");
    r.collection.process = ProcessRun {
        status: "exit status 3".into(),
        exit_code: Some(3),
        timed_out: false,
        tail: "conftest called os._exit(3)".into(),
        log: "L".into(),
        running: None,
    };
    r.collection.answer = CollectAnswer::NoReport {
        error: "its stdout is not one JSON document: EOF".into(),
    };
    let c = collected_check(&r, &opts().paths);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("the pytest run exit status 3 without recording what pytest collected"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("the interpreter is not the cause"));
    assert!(!c.detail.contains("--python"), "{}", c.detail);
    r.collection.process.timed_out = true;
    let c = collected_check(&r, &opts().paths);
    assert!(
        c.detail
            .contains("did not finish within 600 s and was stopped"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("raise [suites] timeout_secs"));
}

// ----- clause: no historical file collected --------------------------------

#[test]
fn refuses_an_item_collected_from_a_historical_file() {
    let mut r = good_run("tree");
    if let CollectAnswer::Collected(c) = &mut r.collection.answer {
        c.items[0].historical = Some(HISTORICAL.into());
    }
    let c = historical_check(
        "tree",
        &opts().historical,
        collection(&r),
        r.report.as_ref().ok(),
    );
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("R/t/test_a.py::test_x (collected item from R/t/historical_x.py)"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_a_junit_testcase_whose_classname_is_a_historical_file() {
    for classname in ["R.t.historical_x", "R.t.historical_x.TestClass"] {
        let mut t = case("test_y", SuiteOutcome::Xfailed, None);
        t.classname = classname.into();
        let c = historical_check("extracted", &opts().historical, None, Some(&vec![t]));
        assert_eq!(c.result, CheckResult::Fail, "{classname}");
        assert!(c.detail.contains(&format!(
            "{classname}::test_y (JUnit testcase of {HISTORICAL})"
        )));
    }
    // A module whose name only starts with the historical one is not it.
    let mut t = case("test_y", SuiteOutcome::Passed, None);
    t.classname = "R.t.historical_x2".into();
    assert_eq!(
        historical_check("tree", &opts().historical, None, Some(&vec![t])).result,
        CheckResult::Pass
    );
}

#[test]
fn historical_check_fails_when_nothing_was_observed() {
    let c = historical_check("tree", &opts().historical, None, None);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("was not observed"), "{}", c.detail);
    let c = historical_check("tree", &opts().historical, None, Some(&vec![]));
    assert_eq!(c.result, CheckResult::Pass);
    assert!(
        c.detail.contains("source file: not observed"),
        "{}",
        c.detail
    );
}

#[test]
fn module_classname_is_pytests_dotted_path() {
    assert_eq!(
        module_classname("Runner/certification-tests/historical_coding_runner_shared_blockers.py"),
        "Runner.certification-tests.historical_coding_runner_shared_blockers"
    );
    assert_eq!(module_classname("R/pkg"), "R.pkg");
}

// ----- clause: exit status 0 with no failure or error ----------------------

#[test]
fn a_suite_that_collects_but_fails_its_run_blames_the_tests_not_the_interpreter() {
    let mut obs = good();
    obs.runs[0].pytest = ran(1);
    obs.runs[0].report = Ok(vec![
        case("test_x", SuiteOutcome::Failed, Some("assert 1 == 2")),
        case("test_y", SuiteOutcome::Error, Some("fixture boom")),
        case("test_z", SuiteOutcome::Xfailed, None),
    ]);
    let checks = decide(&obs, &opts());
    assert_eq!(find(&checks, "tree/collected").result, CheckResult::Pass);
    let c = find(&checks, "tree/outcomes");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of, None);
    assert!(
        c.detail.contains(
            "pytest exit status 1; expected status 0 with no failure or error; found 1 failed, 1 error(s), 0 \
             strict XPASS: R.t.test_a::test_x (failed: assert 1 == 2); R.t.test_a::test_y (error: fixture boom)"
        ),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("fix the tests or the candidates"));
    for word in [
        "--python",
        "PYTHON",
        "interpreter",
        "pytest to be importable",
    ] {
        assert!(!c.detail.contains(word), "{word}: {}", c.detail);
    }
    // No test passed: a consequence of the failures, with their advice.
    let p = find(&checks, "tree/passing");
    assert_eq!(p.consequence_of.as_deref(), Some("tree/outcomes"));
    assert!(
        p.detail.contains("see the `tree/outcomes` check"),
        "{}",
        p.detail
    );
    assert!(!p.detail.contains("skip marks"), "{}", p.detail);
    // The comparison is a finding of its own: the tree is tested less.
    let s = find(&checks, "extracted/same-outcomes");
    assert_eq!(s.result, CheckResult::Fail);
    assert_eq!(s.consequence_of, None);
}

#[test]
fn refuses_an_error_testcase_even_when_pytest_exits_0() {
    let mut r = good_run("tree");
    r.report = Ok(vec![
        case("test_x", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Error, Some("teardown")),
    ]);
    let counts = count(r.report.as_deref().unwrap());
    let c = outcomes_check(&r, &counts);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("found 0 failed, 1 error(s)"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_a_run_whose_session_did_not_end_even_with_exit_0_and_a_clean_report() {
    // A conftest's last `pytest_sessionfinish` calling `os._exit(0)` after
    // the JUnit report was written: status 0, every test passed, but the
    // record of the session's end was never written. The separate
    // collection process used to die of it (collected failed); the one
    // run's record must keep the refusal.
    let mut obs = good();
    if let CollectAnswer::Collected(c) = &mut obs.runs[1].collection.answer {
        c.finished = false;
        c.tests_started = false;
    }
    let checks = decide(&obs, &opts());
    let o = find(&checks, "extracted/outcomes");
    assert_eq!(o.result, CheckResult::Fail);
    assert!(
        o.detail.starts_with(
            "pytest's session did not end as pytest ends it: the run's process ended (exit status 0) after the \
             collection of 3 item(s) was recorded but before pytest returned"
        ),
        "{}",
        o.detail
    );
    assert!(o.detail.contains("os._exit"), "{}", o.detail);
    assert_eq!(o.observed.as_ref().unwrap()["session_finished"], false);
    assert_eq!(
        find(&checks, "extracted/collected").result,
        CheckResult::Pass
    );
    assert_eq!(
        failing(&checks),
        [
            ("extracted/outcomes", None),
            ("extracted/observed-outcomes", Some("extracted/outcomes"))
        ]
    );
    assert_eq!(
        find(&checks, "tree/outcomes").observed.as_ref().unwrap()["session_finished"],
        true
    );
}

#[test]
fn refuses_a_nonzero_exit_with_no_failing_testcase() {
    let mut r = good_run("tree");
    r.pytest = ran(1);
    let counts = count(r.report.as_deref().unwrap());
    let c = outcomes_check(&r, &counts);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("pytest exit status 1; expected status 0"),
        "{}",
        c.detail
    );
    assert_eq!(c.observed.as_ref().unwrap()["exit_code"], 1);
}

#[test]
fn refuses_a_run_that_timed_out_and_puts_its_report_checks_under_it() {
    let mut obs = good();
    obs.runs[0].pytest = PytestObs::Ran {
        exit_code: None,
        status: "timed out and was stopped".into(),
        timed_out: true,
        stragglers_killed: false,
        log: "DIR/logs/suites/tree.stdout".into(),
    };
    obs.runs[0].junit_written = false;
    obs.runs[0].report = Err("pytest wrote no JUnit report (logs/suites/tree.xml)".into());
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/outcomes");
    assert!(
        c.detail.contains(
            "pytest did not finish within 600 s and was stopped; expected the suites to finish"
        ),
        "{}",
        c.detail
    );
    assert_eq!(
        failing(&checks),
        [
            ("tree/outcomes", None),
            ("tree/observed-outcomes", Some("tree/outcomes")),
            ("tree/strict-xfail", Some("tree/outcomes")),
            ("extracted/same-outcomes", Some("tree/outcomes")),
        ]
    );
    // The driver noted the test that was running when the limit hit.
    obs.runs[0].collection.process.running = Some("R/t/test_a.py::test_hangs".into());
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/outcomes");
    assert!(
        c.detail.contains(
            "was stopped while the test R/t/test_a.py::test_hangs was running (the run's plugin noted it"
        ),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_deref().unwrap()["running"],
        "R/t/test_a.py::test_hangs"
    );
}

#[test]
fn refuses_an_unreadable_report_and_a_run_that_could_not_start() {
    let mut r = good_run("tree");
    r.report = Err("malformed JUnit XML at byte 3: x".into());
    let c = outcomes_check(&r, &SuiteCounts::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(
            "pytest exit status 0, and its JUnit report could not be read: malformed JUnit XML"
        ),
        "{}",
        c.detail
    );
    r.pytest = PytestObs::NotRun {
        error: "cannot start /venv/bin/python: No such file".into(),
    };
    let c = outcomes_check(&r, &SuiteCounts::default());
    assert!(
        c.detail
            .starts_with("pytest could not be started: cannot start"),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"started": false, "error": "cannot start /venv/bin/python: No such file"}))
    );
}

#[test]
fn stragglers_are_a_warning_naming_the_log() {
    let mut r = good_run("tree");
    r.pytest = PytestObs::Ran {
        exit_code: Some(0),
        status: "exit status 0".into(),
        timed_out: false,
        stragglers_killed: true,
        log: "DIR/logs/suites/tree.stdout".into(),
    };
    let checks = run_checks(&r, &opts());
    let c = find(&checks, "tree/stragglers");
    assert_eq!(c.result, CheckResult::Warn);
    assert!(
        c.detail.contains("see DIR/logs/suites/tree.stdout"),
        "{}",
        c.detail
    );
}

#[test]
fn outcomes_is_the_root_exactly_when_the_outcomes_check_fails_clause_by_clause() {
    // Each way the `outcomes` check fails, alone, and the run that passes:
    // `outcomes_failed` (which decides what the run's other findings are a
    // consequence of) must agree with the check itself.
    let mut variants: Vec<(&str, RunObservation)> = vec![("a good run", good_run("tree"))];
    let mut r = good_run("tree");
    if let PytestObs::Ran { timed_out, .. } = &mut r.pytest {
        *timed_out = true;
    }
    variants.push(("timed out, exit 0", r));
    let mut r = good_run("tree");
    r.pytest = ran(1);
    variants.push(("exit 1 and a clean report", r));
    let mut r = good_run("tree");
    r.report = Ok(vec![]);
    variants.push(("an empty report", r));
    let mut r = good_run("tree");
    r.report.as_mut().unwrap()[0].outcome = SuiteOutcome::Failed;
    variants.push(("a failed testcase, exit 0", r));
    let mut r = good_run("tree");
    if let CollectAnswer::Collected(c) = &mut r.collection.answer {
        c.finished = false;
    }
    variants.push(("a session that did not finish", r));
    let mut r = good_run("tree");
    if let CollectAnswer::Collected(c) = &mut r.collection.answer {
        c.items.push(item("test_never_ran"));
    }
    variants.push(("a collected item with no testcase", r));
    let mut r = good_run("tree");
    r.report = Err("no report".into());
    variants.push(("no report", r));
    for (what, r) in &variants {
        let counts = count(r.report.as_deref().unwrap_or_default());
        let check = outcomes_check(r, &counts);
        assert_eq!(
            outcomes_failed(r),
            check.result == CheckResult::Fail,
            "{what}: {}",
            check.detail
        );
        assert_eq!(
            run_root(r).as_deref() == Some("tree/outcomes"),
            check.result == CheckResult::Fail,
            "{what}"
        );
    }
    assert_eq!(
        variants.iter().filter(|(_, r)| outcomes_failed(r)).count(),
        variants.len() - 1,
        "every variant but the good run fails"
    );
}

#[test]
fn a_report_with_no_testcase_fails_outcomes_even_when_pytest_exits_0() {
    let mut r = good_run("tree");
    r.report = Ok(vec![]);
    let c = outcomes_check(&r, &SuiteCounts::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("exit status 0 and ran no test"),
        "{}",
        c.detail
    );
}

#[test]
fn unreported_items_are_listed_up_to_ten_then_elided() {
    let with_unreported = |n: usize| {
        let mut r = good_run("tree");
        if let CollectAnswer::Collected(c) = &mut r.collection.answer {
            c.items
                .extend((0..n).map(|i| item(&format!("test_gone_{i}"))));
        }
        let counts = count(r.report.as_deref().unwrap());
        outcomes_check(&r, &counts)
    };
    let ten = with_unreported(10);
    assert_eq!(ten.result, CheckResult::Fail);
    assert!(ten.detail.contains("test_gone_9"), "{}", ten.detail);
    assert!(!ten.detail.contains(", ..."), "{}", ten.detail);
    let eleven = with_unreported(11);
    assert!(
        eleven.detail.contains("test_gone_9, ..."),
        "{}",
        eleven.detail
    );
    assert!(!eleven.detail.contains("test_gone_10"), "{}", eleven.detail);
}

#[test]
fn historical_is_a_consequence_only_when_neither_record_nor_report_was_read() {
    // A historical item in the record, the report unread: the record alone
    // shows the finding, which is its own.
    let mut r = good_run("tree");
    if let CollectAnswer::Collected(c) = &mut r.collection.answer {
        c.items[0].historical = Some(HISTORICAL.into());
    }
    r.report = Err("pytest wrote no JUnit report".into());
    let checks = run_checks(&r, &opts());
    let h = find(&checks, "tree/historical-not-collected");
    assert_eq!(h.result, CheckResult::Fail);
    assert_eq!(h.consequence_of, None, "{h:?}");
    // The report read, the record not: a historical classname is its own
    // finding too.
    let mut r = good_run("tree");
    r.collection.answer = CollectAnswer::NoReport {
        error: "stopped".into(),
    };
    r.report.as_mut().unwrap()[0].classname = module_classname(HISTORICAL);
    let checks = run_checks(&r, &opts());
    let h = find(&checks, "tree/historical-not-collected");
    assert_eq!(h.result, CheckResult::Fail);
    assert_eq!(h.consequence_of, None, "{h:?}");
}

// ----- clause: at least one test passed in each run -------------------------

#[test]
fn a_run_where_everything_is_skipped_fails_the_passing_check() {
    let cases = vec![
        case("test_x", SuiteOutcome::Skipped, Some("unconditional skip")),
        case("test_y", SuiteOutcome::Skipped, Some("unconditional skip")),
    ];
    let mut obs = good();
    obs.runs[0].report = Ok(cases.clone());
    // The run collected exactly the two skipped tests (one testcase each).
    obs.runs[0].collection.answer = collected(vec![item("test_x"), item("test_y")], 0);
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/passing");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of, None, "the skips are the cause");
    assert!(
        c.detail
            .contains("no test passed in the tree run: 2 test(s), 0 passed, 2 skipped"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("R.t.test_a::test_x (skipped: unconditional skip)"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("pytestmark = pytest.mark.skip"),
        "{}",
        c.detail
    );
    assert_eq!(find(&checks, "tree/outcomes").result, CheckResult::Pass);
}

#[test]
fn the_advice_counts_failures_errors_and_strict_xpasses_together() {
    let advice = |failed, errors, xpassed_strict| {
        let counts = SuiteCounts {
            tests: 9,
            failed,
            errors,
            xpassed_strict,
            ..SuiteCounts::default()
        };
        passing_check("tree", &[], &counts).detail
    };
    for (f, e, x, total) in [(1, 0, 0, 1), (0, 1, 0, 1), (0, 0, 1, 1), (2, 3, 4, 9)] {
        let detail = advice(f, e, x);
        assert!(
            detail.contains(&format!(
                "{total} test(s) failed, errored or passed a strict xfail"
            )),
            "{f} {e} {x}: {detail}"
        );
    }
    assert!(advice(0, 0, 0).contains("a suite whose tests are all skipped"));
}

#[test]
fn xfails_and_xpasses_alone_are_not_a_passing_run() {
    let cases = vec![
        case("test_x", SuiteOutcome::Xfailed, None),
        case("test_y", SuiteOutcome::Xpassed, None),
    ];
    assert_eq!(
        passing_check("extracted", &cases, &count(&cases)).result,
        CheckResult::Fail
    );
    assert_eq!(
        passing_check("extracted", &[], &count(&[])).result,
        CheckResult::Fail
    );
    let one = vec![case("test_x", SuiteOutcome::Passed, None), cases[0].clone()];
    let c = passing_check("extracted", &one, &count(&one));
    assert_eq!(c.result, CheckResult::Pass);
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"tests": 2, "passed": 1}))
    );
}

#[test]
fn an_xpass_is_a_warning_and_not_a_pass() {
    let mut r = good_run("tree");
    r.report = Ok(vec![
        case("test_x", SuiteOutcome::Passed, None),
        case("test_z", SuiteOutcome::Xpassed, None),
    ]);
    let checks = run_checks(&r, &opts());
    let c = find(&checks, "tree/xpassed");
    assert_eq!(c.result, CheckResult::Warn);
    assert!(c
        .detail
        .starts_with("1 non-strict xfail test(s) passed (XPASS): R.t.test_a::test_z"));
    assert_eq!(
        find(&checks, "tree/passing").detail,
        "1 of 2 test(s) passed"
    );
}

// ----- clause: strict xfail never a pass, strict XPASS fails ---------------

#[test]
fn refuses_a_strict_xpass_and_puts_the_exit_status_under_it() {
    let mut obs = good();
    obs.runs[0].pytest = ran(1);
    obs.runs[0].report = Ok(vec![
        case("test_x", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Passed, None),
        case(
            "test_z",
            SuiteOutcome::XpassedStrict,
            Some("[XPASS(strict)] known"),
        ),
    ]);
    let checks = decide(&obs, &opts());
    let s = find(&checks, "tree/strict-xfail");
    assert_eq!(s.result, CheckResult::Fail);
    assert_eq!(s.consequence_of, None);
    assert!(
        s.detail
            .starts_with("1 strict xfail test(s) passed (XPASS(strict)): R.t.test_a::test_z;"),
        "{}",
        s.detail
    );
    let o = find(&checks, "tree/outcomes");
    assert_eq!(o.result, CheckResult::Fail);
    assert_eq!(o.consequence_of.as_deref(), Some("tree/strict-xfail"));
    // A strict XPASS beside a real failure: two findings.
    obs.runs[0].report.as_mut().unwrap()[0].outcome = SuiteOutcome::Failed;
    let checks = decide(&obs, &opts());
    assert_eq!(find(&checks, "tree/outcomes").consequence_of, None);
    assert_eq!(find(&checks, "tree/strict-xfail").consequence_of, None);
}

#[test]
fn strict_xfail_check_fails_when_no_report_was_read() {
    let c = strict_xfail_check("tree", None, &SuiteCounts::default(), &HashMap::new());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("no xfail outcome could be observed"));
}

#[test]
fn every_pytest_shape_is_classified() {
    let cases = parse_junit(SHAPES, &xfails()).unwrap();
    let outcomes: Vec<(&str, SuiteOutcome)> =
        cases.iter().map(|c| (c.name.as_str(), c.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            ("test_xpass_strict", SuiteOutcome::XpassedStrict),
            ("test_xpass_loose", SuiteOutcome::Xpassed),
            ("test_skip", SuiteOutcome::Skipped),
            ("test_error", SuiteOutcome::Error),
            ("test_fail", SuiteOutcome::Failed),
            ("test_xfail_imperative", SuiteOutcome::Xfailed),
            ("test_ok[p-1]", SuiteOutcome::Passed),
        ]
    );
    assert_eq!(
        cases[3].message.as_deref(),
        Some("failed on setup with \"RuntimeError: fixture boom\"")
    );
    assert_eq!(
        cases[3].text.as_deref(),
        Some("E       RuntimeError: fixture boom\n> x")
    );
    assert_eq!(cases[4].text.as_deref(), Some(">       assert 1 == 2"));
    assert_eq!(cases[6].duration_ms, Some(1019));
    assert_eq!(cases[6].classname, "Runner.certification-tests.test_a");
}

#[test]
fn xfail_is_never_counted_as_a_pass() {
    let counts = count(&parse_junit(SHAPES, &xfails()).unwrap());
    assert_eq!(
        counts,
        SuiteCounts {
            tests: 7,
            passed: 1,
            failed: 1,
            errors: 1,
            skipped: 1,
            xfailed: 1,
            xpassed: 1,
            xpassed_strict: 1,
        }
    );
}

#[test]
fn a_plain_pass_of_a_strict_xfail_item_is_a_strict_xpass() {
    let map = HashMap::from([(
        ("test_shapes".to_string(), "test_xpass_loose".to_string()),
        Some(true),
    )]);
    let cases = parse_junit(SHAPES, &map).unwrap();
    assert_eq!(cases[1].outcome, SuiteOutcome::XpassedStrict);
}

#[test]
fn xfail_map_keeps_strictness_only_when_the_condition_was_evaluated() {
    let mut a = item("test_a");
    a.xfail = Some(XfailMark {
        strict: Some(true),
        error: None,
    });
    let mut b = item("test_b");
    b.xfail = Some(XfailMark {
        strict: Some(true),
        error: Some("NameError: x".into()),
    });
    let CollectAnswer::Collected(c) = collected(vec![a, b, item("test_c")], 0) else {
        unreachable!()
    };
    let m = xfail_map(&c);
    assert_eq!(m.len(), 2);
    assert_eq!(
        m[&("R.t.test_a".to_string(), "test_a".to_string())],
        Some(true)
    );
    assert_eq!(m[&("R.t.test_a".to_string(), "test_b".to_string())], None);
}

#[test]
fn malformed_reports_are_errors() {
    assert!(
        parse_junit("<testsuites><testcase name=\"a\">", &HashMap::new())
            .unwrap_err()
            .contains("not closed")
    );
    assert!(parse_junit(
        "<testsuites><testcase name=\"a\"></testsuite>",
        &HashMap::new()
    )
    .is_err());
}

#[test]
fn the_most_severe_result_wins_and_only_its_own_text_is_kept() {
    // pytest writes a failed test whose teardown errored as one testcase
    // with a <failure> and an <error>; its output follows in <system-out>.
    let report = "<testsuites><testsuite>\
        <testcase classname=\"t\" name=\"a\"><skipped message=\"s\">skip</skipped>\
          <failure message=\"f\"><![CDATA[assert 1 < 2]]></failure>\
          <system-out>noise</system-out></testcase>\
        <testcase classname=\"t\" name=\"b\"><failure message=\"f\">boom</failure>\
          <error message=\"e\">teardown</error><system-err>more noise</system-err></testcase>\
        <testcase classname=\"t\" name=\"c\"><error message=\"e\">first</error>\
          <failure message=\"f\">later</failure></testcase>\
        </testsuite></testsuites>";
    let cases = parse_junit(report, &HashMap::new()).unwrap();
    let got: Vec<(&str, SuiteOutcome, Option<&str>, Option<&str>)> = cases
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.outcome,
                t.message.as_deref(),
                t.text.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a", SuiteOutcome::Failed, Some("f"), Some("assert 1 < 2")),
            ("b", SuiteOutcome::Error, Some("e"), Some("teardown")),
            ("c", SuiteOutcome::Error, Some("e"), Some("first")),
        ]
    );
}

#[test]
fn a_failure_text_is_kept_whole_up_to_eight_kib_then_cut_at_a_character() {
    let report = |text: &str| {
        format!(
            "<testsuites><testsuite><testcase classname=\"t\" name=\"a\">\
             <failure message=\"m\">{text}</failure></testcase></testsuite></testsuites>"
        )
    };
    let kept = "x".repeat(5000);
    let cases = parse_junit(&report(&kept), &HashMap::new()).unwrap();
    assert_eq!(cases[0].text.as_deref(), Some(kept.as_str()));
    // 8 KiB of one-byte characters, then a two-byte one across the limit.
    let long = format!("{}é{}", "y".repeat(8 * 1024 - 1), "z".repeat(100));
    let cases = parse_junit(&report(&long), &HashMap::new()).unwrap();
    let text = cases[0].text.as_deref().unwrap();
    assert_eq!(text, format!("{}…", "y".repeat(8 * 1024 - 1)));
}

// ----- clause: run against DIR/extracted, the exact extractions ------------

#[test]
fn refuses_a_source_root_that_is_not_exactly_the_candidate_folders() {
    let mut e = extraction();
    e.entries = Ok(vec!["a".into(), "b".into(), "c".into()]);
    e.dirs = vec!["a".into(), "c".into()];
    let c = source_root_check(&e);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("(missing [\"b\"], unexpected [\"c\"]): re-run the build gates"),
        "{}",
        c.detail
    );
    e.entries = Err("No such file or directory".into());
    let c = source_root_check(&e);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c
        .detail
        .contains("/ev/extracted cannot be read (No such file or directory)"));
    let c = source_root_check(&extraction());
    assert_eq!(c.result, CheckResult::Pass);
    assert_eq!(
        c.detail,
        "/ev/extracted holds exactly the candidate folders a, b"
    );
}

#[test]
fn refuses_a_source_root_with_only_a_missing_or_only_an_unexpected_folder() {
    let mut e = extraction();
    e.entries = Ok(vec!["a".into()]);
    e.dirs = vec!["a".into()];
    let c = source_root_check(&e);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(r#"(missing ["b"], unexpected [])"#),
        "{}",
        c.detail
    );
    let mut e = extraction();
    e.entries = Ok(vec!["a".into(), "b".into(), "c".into()]);
    e.dirs = vec!["a".into(), "b".into(), "c".into()];
    let c = source_root_check(&e);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(r#"(missing [], unexpected ["c"])"#),
        "{}",
        c.detail
    );
    assert_eq!(source_root_check(&extraction()).result, CheckResult::Pass);
}

// ----- clause: the run left DIR/extracted unchanged ------------------------

#[test]
fn refuses_when_the_runs_changed_added_or_removed_an_extracted_file() {
    let mut e = extraction();
    e.after.insert("a/f.py".into(), "ff00:6".into());
    e.after.insert("a/new.txt".into(), "00:0".into());
    e.after.remove("b");
    let mut obs = good();
    obs.extraction = Some(e);
    let checks = decide(&obs, &opts());
    let c = find(&checks, "extracted/extraction-unchanged");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("the suites modified /ev/extracted, the exact extractions they were to test: changed a/f.py, added a/new.txt, removed b"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("write under their tmp_path"));
    assert_eq!(
        c.observed.as_ref().unwrap()["changes"],
        json!(["changed a/f.py", "added a/new.txt", "removed b"])
    );
}

// ----- clause: both runs report the same ids with the same outcomes --------

#[test]
fn fewer_passes_on_the_extraction_fail_naming_the_ids() {
    let tree = vec![
        case("test_x", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Passed, None),
    ];
    let extracted = vec![
        case("test_x", SuiteOutcome::Passed, None),
        case(
            "test_y",
            SuiteOutcome::Skipped,
            Some("no pkg/ in the extraction"),
        ),
    ];
    let c = same_outcomes_check(Some((&tree, &extracted)));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("fewer tests pass on DIR/extracted (1) than on the committed tree (2)"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains(
            "R.t.test_a::test_y: tree passed, extracted skipped (no pkg/ in the extraction)"
        ),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("test_x:"), "{}", c.detail);
}

#[test]
fn a_difference_gives_its_own_tests_reason_and_equal_passes_are_not_called_fewer() {
    // test_w is skipped in both runs (no difference) and comes first;
    // test_y passes on the tree and xfails on the extraction, test_z the
    // other way round: as many passes on each side.
    let tree = vec![
        case("test_w", SuiteOutcome::Skipped, Some("windows only")),
        case("test_x", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Passed, None),
        case("test_z", SuiteOutcome::Xfailed, Some("known")),
    ];
    let extracted = vec![
        case("test_w", SuiteOutcome::Skipped, Some("windows only")),
        case("test_x", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Xfailed, Some("needs pkg/")),
        case("test_z", SuiteOutcome::Passed, None),
    ];
    let c = same_outcomes_check(Some((&tree, &extracted)));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .starts_with("2 passed on the tree, 2 on DIR/extracted; 2 test id(s) differ"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("R.t.test_a::test_y: tree passed, extracted xfailed (needs pkg/)"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("R.t.test_a::test_z: tree xfailed, extracted passed;"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("windows only"), "{}", c.detail);
}

#[test]
fn a_test_missing_from_one_run_or_changing_outcome_is_a_difference() {
    let tree = vec![
        case("test_x", SuiteOutcome::Xfailed, None),
        case("test_y", SuiteOutcome::Passed, None),
    ];
    let extracted = vec![
        case("test_x", SuiteOutcome::Failed, None),
        case("test_z", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Passed, None),
    ];
    let d = outcome_differences(&tree, &extracted);
    let ids: Vec<&str> = d.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["R.t.test_a::test_x", "R.t.test_a::test_z"]);
    assert_eq!(d[1].tree, []);
    let c = same_outcomes_check(Some((&tree, &extracted)));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("R.t.test_a::test_z: tree not reported, extracted passed"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("R.t.test_a::test_x: tree xfailed, extracted failed"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("1 passed on the tree, 2 on DIR/extracted"),
        "{}",
        c.detail
    );
    // Same ids, same outcomes, any order: agreement.
    let mut shuffled = tree.clone();
    shuffled.reverse();
    assert_eq!(
        same_outcomes_check(Some((&tree, &shuffled))).result,
        CheckResult::Pass
    );
    assert_eq!(same_outcomes_check(None).result, CheckResult::Fail);
}

#[test]
fn a_test_reported_twice_in_one_run_only_is_a_difference() {
    let once = vec![case("test_x", SuiteOutcome::Passed, None)];
    let twice = vec![once[0].clone(), once[0].clone()];
    let d = outcome_differences(&once, &twice);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].extracted, [SuiteOutcome::Passed, SuiteOutcome::Passed]);
}

// ----- helpers ---------------------------------------------------------------

#[test]
fn last_lines_keeps_the_last_n_lines() {
    assert_eq!(last_lines("a\nb\nc", 2), "b | c");
    assert_eq!(last_lines("a", 6), "a");
    assert_eq!(last_lines("", 6), "");
}

#[test]
fn refuses_a_run_that_stopped_its_session_before_every_collected_item_ran() {
    // A test calling `pytest.exit("enough", returncode=0)` after `test_x`
    // passed: pytest exits 0, returns normally (the record is finished) and
    // its report holds `test_x` and the nameless `<testcase time="0.000" />`
    // it writes for the test that ended the session; `test_y` (which would
    // fail) and the strict xfail never ran. Captured from pytest 9.
    let mut obs = good();
    let nameless = SuiteTestCase {
        classname: String::new(),
        name: String::new(),
        outcome: SuiteOutcome::Passed,
        message: None,
        text: None,
        duration_ms: Some(0),
    };
    obs.runs[0].report = Ok(vec![
        case("test_x", SuiteOutcome::Passed, None),
        nameless.clone(),
    ]);
    let checks = decide(&obs, &opts());
    let o = find(&checks, "tree/outcomes");
    assert_eq!(o.result, CheckResult::Fail);
    assert!(
        o.detail.starts_with(
            "pytest exit status 0, but its report is not the outcome of every test it collected: 2 of the 3 \
             item(s) the run collected have no testcase in its report, so they never ran to an outcome: \
             R/t/test_a.py::test_y, R/t/test_a.py::test_z; 1 passing testcase(s) of the report are no item \
             the run collected and ran as a test: ::"
        ),
        "{}",
        o.detail
    );
    assert!(o.detail.contains("pytest.exit"), "{}", o.detail);
    assert_eq!(
        o.observed.as_ref().unwrap()["pairing"],
        json!({
            "unreported": ["R/t/test_a.py::test_y", "R/t/test_a.py::test_z"],
            "unrecorded_passes": ["::"],
        })
    );
    // The comparison with the extraction run fails too, as its consequence.
    let same = find(&checks, "extracted/same-outcomes");
    assert_eq!(same.result, CheckResult::Fail);
    assert!(failing(&checks).contains(&("tree/outcomes", None)));

    // Each half alone is refused: items that never ran ...
    let mut r = good_run("tree");
    r.report = Ok(vec![case("test_x", SuiteOutcome::Passed, None)]);
    let counts = count(r.report.as_deref().unwrap());
    assert_eq!(outcomes_check(&r, &counts).result, CheckResult::Fail);
    assert_eq!(run_root(&r).as_deref(), Some("tree/outcomes"));
    // ... and a pass that is no collected item (an item run around pytest's
    // protocol, a testcase renamed with `record_xml_attribute`), even with
    // every collected item reported.
    let mut r = good_run("tree");
    if let Ok(cases) = &mut r.report {
        let mut renamed = case("test_hidden", SuiteOutcome::Passed, None);
        renamed.classname = "R.t.test_b".into();
        cases.push(renamed);
    }
    let counts = count(r.report.as_deref().unwrap());
    let c = outcomes_check(&r, &counts);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("1 passing testcase(s) of the report are no item the run collected and ran as a test: R.t.test_b::test_hidden"),
        "{}",
        c.detail
    );
    // A skipped or failing extra testcase (a module skipped at import,
    // which pytest reports as a testcase of its own) is not a pass: only
    // the missing items count.
    let mut r = good_run("tree");
    if let Ok(cases) = &mut r.report {
        let mut skipped = case("R.t.test_c", SuiteOutcome::Skipped, Some("no module"));
        skipped.classname = String::new();
        cases.push(skipped);
    }
    assert_eq!(pairing(&r), Some(Pairing::default()));
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_suites_in_the_profile_warns_and_without_the_staged_source_is_an_error() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    assert!(
        ctx.profile.profile.suites.is_some(),
        "the built-in profile names suites"
    );
    let e = testing::run(&Suites, &ctx).0.unwrap_err();
    assert!(e.contains("run `stage` first"), "{e}");
    ctx.profile.profile.suites = None;
    let e = testing::run(&Suites, &ctx).0.unwrap_err();
    assert!(e.contains("run `stage` first"), "{e}");
    // A staged tree whose candidates hold no tests/: the no-suites warning,
    // then one `untested` warning per candidate, and nothing run.
    let staged = tempfile::tempdir().unwrap();
    ctx.staged_root = Some(staged.path().to_path_buf());
    let (checks, after) = testing::run(&Suites, &ctx);
    let checks = checks.unwrap();
    let folders: Vec<&str> = ctx.selected.iter().map(|c| c.folder()).collect();
    assert_eq!(checks.len(), 1 + folders.len(), "{checks:#?}");
    for c in &checks {
        assert_eq!(
            c.result,
            CheckResult::Warn,
            "nothing run is never a pass: {c:?}"
        );
    }
    assert_eq!(checks[0].name, "suites");
    for (c, folder) in checks[1..].iter().zip(&folders) {
        assert_eq!(c.name, format!("{folder}/untested"));
        assert_eq!(c.candidate.as_deref(), Some(*folder));
    }
    assert!(after.suites.is_none());
    assert_eq!(Suites.id(), "suites");
}

#[test]
fn run_with_a_candidate_left_out_fails_the_repository_runs_and_checks_the_others() {
    use crate::gates::testing;
    let evidence = tempfile::tempdir().unwrap();
    let staged = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.staged_root = Some(staged.path().to_path_buf());
    let left = ctx.selected[0].folder().to_string();
    let ctx = ctx.without_candidates(std::slice::from_ref(&left));
    let (checks, after) = testing::run(&Suites, &ctx);
    let checks = checks.unwrap();
    assert_eq!(failing(&checks), [("repository-runs", None)]);
    assert!(checks[0].candidate.is_none());
    assert!(checks[0].detail.contains(&left), "{}", checks[0].detail);
    // The others' own checks follow (untested here), none for the one left out.
    let named: Vec<Option<&str>> = checks[1..].iter().map(|c| c.candidate.as_deref()).collect();
    let others: Vec<Option<&str>> = ctx.selected.iter().map(|c| Some(c.folder())).collect();
    assert_eq!(named, others);
    assert!(after.suites.is_none(), "nothing was run");
}

#[test]
fn a_run_under_collect_only_fails_collected_naming_the_option_not_skip_marks() {
    let mut obs = good();
    // `addopts = --collect-only`: items collected, no test started, an
    // empty report, exit status 0.
    obs.runs[0].report = Ok(vec![]);
    let mut answer = collected(vec![item("test_x"), item("test_y")], 0);
    if let CollectAnswer::Collected(c) = &mut answer {
        c.collect_only = true;
        c.tests_started = false;
    }
    obs.runs[0].collection.answer = answer;
    let checks = decide(&obs, &opts());
    let c = find(&checks, "tree/collected");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("pytest ran with `--collect-only` (`--co`): it collected 2 item(s)")
            && c.detail.contains("remove `--collect-only` from addopts"),
        "{}",
        c.detail
    );
    for name in ["tree/outcomes", "tree/passing"] {
        let p = find(&checks, name);
        assert_eq!(p.result, CheckResult::Fail, "{p:?}");
        assert_eq!(p.consequence_of.as_deref(), Some("tree/collected"), "{p:?}");
    }
    assert!(!find(&checks, "tree/passing").detail.contains("skip marks"));
}

/// Without bubblewrap a test that signals its parent kills the verifier's
/// supervisor: `outcomes` fails naming that cause and the running test.
/// Counterexample: the same status under bwrap (no supervisor) is not
/// blamed on one.
#[test]
fn a_killed_supervisor_fails_outcomes_naming_the_cause_and_the_test() {
    let mut r = good_run("tree");
    r.sandbox = SandboxRecord {
        kind: crate::isolation::sandbox::SUPERVISED.into(),
        program: None,
        version: None,
        own_pid_namespace: false,
        dies_with_verifier: false,
        network: None,
        read_only: Vec::new(),
        writable: Vec::new(),
        unconfined_because: Some("VCC_BWRAP=/nonexistent: not found".into()),
    };
    r.left_running = None;
    r.pytest = PytestObs::Ran {
        exit_code: None,
        status: "killed by signal 9".into(),
        timed_out: false,
        stragglers_killed: true,
        log: "DIR/logs/suites/tree.stdout".into(),
    };
    r.collection.process.running = Some("t.py::test_kills".into());
    r.report = Err("pytest wrote no JUnit report (logs/suites/tree.xml)".into());
    let checks = run_checks(&r, &opts());
    let c = find(&checks, "tree/outcomes");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("the step's supervisor was killed (killed by signal 9)")
            && c.detail.contains("a test signalled its parent")
            && c.detail.contains("t.py::test_kills"),
        "{}",
        c.detail
    );
    r.sandbox = confined("tree");
    let checks = run_checks(&r, &opts());
    let c = find(&checks, "tree/outcomes");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(!c.detail.contains("supervisor"), "{}", c.detail);
}
