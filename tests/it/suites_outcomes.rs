//! Test outcomes the code under review cannot rewrite, through the built
//! binary (`--only suites`) with the genuine SDK interpreter from `$PYTHON`:
//! a conftest whose `pytest_runtest_makereport` wrapper turns a failure into
//! a pass, one whose `pytest_runtest_logreport` does it as the report is
//! logged, one whose `pytest_runtest_call` wrapper swallows what an async
//! test raised, a configuration whose `addopts` deselect the failing test, and a
//! conftest whose `pytest_collection_modifyitems` drops failing tests each
//! get a pytest exit status 0 and a clean JUnit report, and each fail the
//! `suites` gate at `observed-outcomes` or `deselected`, naming the test
//! and the conftest's file and line. A conftest whose report hooks change no
//! outcome, over every outcome shape, and a deselection the profile declares
//! pass. A test whose callable is swapped or is a `functools.partial`
//! whose failure a call wrapper swallows fails `observed-outcomes`; tests a
//! conftest hides from collection fail `uncollected`; unittest TestCase tests
//! are observed with no false rewrite.

use crate::common;

use common::{
    check, exit_code, fixture_repo, gate_result, read_evidence, stderr_text, stdout_text,
};
use serde_json::Value;
use std::path::Path;
use verify_coding_candidates::exit;

/// Runs `--only suites` on `repo` with the built-in profile whose `[suites]`
/// names `paths`, plus the `extra` lines at the end of `[suites]`. Returns
/// the exit code, the evidence and the output text.
fn run(repo: &Path, paths: &[&str], extra: &str) -> (i32, Value, String) {
    let profile = format!("{}\n{extra}\n", common::profile_with_suite_paths(paths));
    let (out, _keep, dir) = common::run_only_with_profile(repo, "suites", &profile, &[]);
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        stdout_text(&out),
        stderr_text(&out)
    );
    (exit_code(&out), read_evidence(&dir), text)
}

/// The run `name`'s exit status and counts `[tests, passed, failed]`.
fn status_and_counts(ev: &Value, name: &str) -> (Value, [u64; 3]) {
    let run = ev["suites"]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no run {name}"));
    let c = &run["counts"];
    (
        run["exit_code"].clone(),
        ["tests", "passed", "failed"].map(|k| c[k].as_u64().expect("count")),
    )
}

fn detail(c: &Value) -> &str {
    c["detail"].as_str().expect("detail")
}

/// A suite whose report pytest says is clean (exit 0, no failure) and whose
/// `<run>/outcomes` passes, but whose `<run>/observed-outcomes` fails with a
/// detail that starts with `start` (per run) and contains each of `names`.
fn assert_rewritten(overlay: &str, suite: &str, start: &str, names: &[&str]) {
    let repo = fixture_repo(&[overlay]);
    let (code, ev, text) = run(&repo.root, &[suite], "");
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        // The rewrite works on pytest: status 0, both tests "passed".
        let (status, counts) = status_and_counts(&ev, name);
        assert_eq!((status, counts), (Value::from(0), [2, 2, 0]), "{name}");
        let outcomes = check(&ev, "suites", &format!("{name}/outcomes"), None);
        assert_eq!(outcomes["result"], "pass", "{outcomes}");
        let c = check(&ev, "suites", &format!("{name}/observed-outcomes"), None);
        assert_eq!(c["result"], "fail", "{c}");
        assert_eq!(c["consequence_of"], Value::Null, "{c}");
        assert!(detail(c).starts_with(start), "{name}: {}", detail(c));
        for n in names {
            assert!(detail(c).contains(n), "{name}: {n:?} not in {}", detail(c));
        }
        assert_eq!(
            c["observed"]["rewritten"].as_array().unwrap().len(),
            1,
            "{c}"
        );
    }
}

#[test]
fn a_makereport_wrapper_that_turns_a_failure_into_a_pass_fails_observed_outcomes() {
    let dir = "Runner/certification-tests/rewrites-outcome";
    assert_rewritten(
        "suite-rewrites-outcome",
        &format!("{dir}/test_rewrites_outcome.py"),
        &format!(
            "1 test(s) are reported with an outcome the run did not observe: \
             {dir}/test_rewrites_outcome.py::test_relay_fails: observed failed (call raised \
             builtins.AssertionError: the relay is broken"
        ),
        &[
            "reported passed in the JUnit report and passed to pytest_runtest_logreport",
            "the test function raised builtins.AssertionError: the relay is broken",
            &format!(
                "reporting hooks outside pytest: {dir}/conftest.py:15 pytest_runtest_makereport (wrapper)"
            ),
        ],
    );
}

#[test]
fn a_logreport_hook_that_rewrites_a_failure_as_it_is_logged_fails_observed_outcomes() {
    let dir = "Runner/certification-tests/rewrites-logreport";
    assert_rewritten(
        "suite-rewrites-logreport",
        &format!("{dir}/test_rewrites_logreport.py"),
        &format!(
            "1 test(s) are reported with an outcome the run did not observe: \
             {dir}/test_rewrites_logreport.py::test_fixture_fails: observed failed (call raised \
             builtins.AssertionError: the candidate is missing"
        ),
        &[
            "reported passed in the JUnit report and passed to pytest_runtest_logreport",
            &format!(
                "reporting hooks outside pytest: {dir}/conftest.py:15 pytest_runtest_logreport (wrapper), \
                 {dir}/conftest.py:22 pytest_report_teststatus"
            ),
        ],
    );
}

#[test]
fn a_call_wrapper_inside_the_plugins_that_swallows_an_async_failure_fails_observed_outcomes() {
    // No report is rewritten: the call phase itself did not raise. The test
    // function, a coroutine run by pytest-asyncio, did.
    let dir = "Runner/certification-tests/swallows-call";
    assert_rewritten(
        "suite-swallows-call",
        &format!("{dir}/test_swallows_call.py"),
        &format!(
            "1 test(s) are reported with an outcome the run did not observe: \
             {dir}/test_swallows_call.py::test_relay_fails_quietly: observed failed (the test function raised \
             builtins.AssertionError: swallowed"
        ),
        &[
            "reported passed in the JUnit report and passed to pytest_runtest_logreport",
            &format!("{dir}/conftest.py:15 pytest_runtest_call (wrapper)"),
        ],
    );
}

#[test]
fn addopts_that_deselect_the_failing_test_fail_deselected_unless_the_profile_declares_it() {
    let dir = "Runner/certification-tests/deselects-failing";
    let suite = format!("{dir}/test_deselects_failing.py");
    let failing = format!("{suite}::test_fails");
    let config = format!("config = \"{dir}/pytest.ini\"");
    let repo = fixture_repo(&["suite-deselects-failing"]);
    let (code, ev, text) = run(&repo.root, &[&suite], &config);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    for name in ["tree", "extracted"] {
        let (status, counts) = status_and_counts(&ev, name);
        assert_eq!((status, counts), (Value::from(0), [1, 1, 0]), "{name}");
        let c = check(&ev, "suites", &format!("{name}/deselected"), None);
        assert_eq!(c["result"], "fail", "{c}");
        assert!(
            detail(c).starts_with(&format!(
                "1 collected test(s) do not run and the profile does not declare their deselection: \
                 {failing} (announced through pytest_deselected: `--deselect`, `-k`, `-m` or a hook); \
                 selection hooks outside pytest: "
            )),
            "{}",
            detail(c)
        );
        assert!(
            detail(c).contains(&format!("pytest configuration: {dir}/pytest.ini;")),
            "{}",
            detail(c)
        );
        assert_eq!(c["observed"]["deselected"][0]["nodeid"], failing.as_str());
        // Nothing was rewritten: the test that ran is what it observed.
        let o = check(&ev, "suites", &format!("{name}/observed-outcomes"), None);
        assert_eq!(o["result"], "pass", "{o}");
    }

    // Declared, the same deselection passes and is listed.
    let (code, ev, text) = run(
        &repo.root,
        &[&suite],
        &format!("{config}\ndeselected = [\"{failing}\"]"),
    );
    assert_eq!(code, i32::from(exit::SUCCESS), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "pass", "{text}");
    for name in ["tree", "extracted"] {
        let c = check(&ev, "suites", &format!("{name}/deselected"), None);
        assert_eq!(c["result"], "pass", "{c}");
        assert_eq!(c["observed"]["declared"][0], failing.as_str(), "{c}");
        assert_eq!(c["observed"]["deselected"][0]["nodeid"], failing.as_str());
    }
}

#[test]
fn a_collection_hook_that_drops_failing_tests_fails_deselected_naming_both_ways() {
    let dir = "Runner/certification-tests/drops-failing";
    let suite = format!("{dir}/test_drops_failing.py");
    let repo = fixture_repo(&["suite-drops-failing"]);
    let (code, ev, text) = run(&repo.root, &[&suite], "");
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let (status, counts) = status_and_counts(&ev, name);
        assert_eq!((status, counts), (Value::from(0), [1, 1, 0]), "{name}");
        let c = check(&ev, "suites", &format!("{name}/deselected"), None);
        assert_eq!(c["result"], "fail", "{c}");
        assert!(
            detail(c).starts_with(&format!(
                "2 collected test(s) do not run and the profile does not declare their deselection: \
                 {suite}::test_fails_announced (announced through pytest_deselected: `--deselect`, `-k`, `-m` \
                 or a hook), {suite}::test_fails_silently (dropped from the session's items without \
                 pytest_deselected); selection hooks outside pytest: {dir}/conftest.py:11 \
                 pytest_collection_modifyitems"
            )),
            "{}",
            detail(c)
        );
    }
}

#[test]
fn report_hooks_that_change_no_outcome_pass_over_every_outcome_shape() {
    let suite = "Runner/certification-tests/benign-report-hook/test_benign_report_hook.py";
    let repo = fixture_repo(&["suite-benign-report-hook"]);
    let (code, ev, text) = run(&repo.root, &[suite], "");
    assert_eq!(code, i32::from(exit::SUCCESS), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "pass", "{text}");
    for name in ["tree", "extracted"] {
        let c = check(&ev, "suites", &format!("{name}/observed-outcomes"), None);
        assert_eq!(c["result"], "pass", "{c}");
        let observed: Vec<(String, String)> = c["observed"]["tests"]
            .as_array()
            .expect("observed tests")
            .iter()
            .map(|t| {
                let id = t["id"].as_str().unwrap();
                (
                    id[id.rfind("::").unwrap() + 2..].to_string(),
                    t["observed"].as_str().unwrap_or("none").to_string(),
                )
            })
            .collect();
        let want = [
            ("test_candidates_are_present", "passed"),
            ("test_async_pass", "passed"),
            ("test_known_limitation", "xfailed"),
            ("test_skipped", "skipped"),
            ("test_xfail_in_setup", "xfailed"),
            ("test_imperative_xfail", "xfailed"),
            ("test_dynamic_xfail", "xfailed"),
        ]
        .map(|(n, o)| (n.to_string(), o.to_string()));
        assert_eq!(observed, want, "{name}");
        let d = check(&ev, "suites", &format!("{name}/deselected"), None);
        assert_eq!(d["result"], "pass", "{d}");
    }
}

#[test]
fn a_swapped_callable_and_tests_hidden_from_collection_fail_observed_outcomes_and_uncollected() {
    // One run for both overlays: each finding is a check of its own.
    let swaps = "Runner/certification-tests/swaps-callable";
    let hides = "Runner/certification-tests/hides-collection";
    let suite = format!("{swaps}/test_swaps_callable.py");
    let repo = fixture_repo(&["suite-swaps-callable", "suite-hides-collection"]);
    let (code, ev, text) = run(&repo.root, &[&suite, hides], "");
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        // pytest is content: every test it ran passed, exit 0.
        let (status, counts) = status_and_counts(&ev, name);
        assert_eq!((status, counts), (Value::from(0), [9, 9, 0]), "{name}");
        for clean in ["outcomes", "deselected"] {
            let c = check(&ev, "suites", &format!("{name}/{clean}"), None);
            assert_eq!(c["result"], "pass", "{c}");
        }

        // F3: the partial's failure, swallowed in the call phase, is seen
        // through the wrapper; the two swapped tests are named with what
        // ran instead.
        let c = check(&ev, "suites", &format!("{name}/observed-outcomes"), None);
        assert_eq!(c["result"], "fail", "{c}");
        assert_eq!(c["consequence_of"], Value::Null, "{c}");
        assert!(
            detail(c).starts_with(&format!(
                "1 test(s) are reported with an outcome the run did not observe: \
                 {suite}::test_partial_relay: observed failed (the test function raised \
                 builtins.AssertionError: the partial relay check fails"
            )),
            "{name}: {}",
            detail(c)
        );
        for part in [
            format!(
                "Also, 3 test(s) ran a callable other than the one their collection ended with, so the run did \
                 not observe the test it reports: {suite}::test_swapped_by_fixture: its callable changed between \
                 collection and call: collected test_swapped_by_fixture ({suite}:22), called _passes \
                 ({swaps}/conftest.py:17); {suite}::test_swapped_in_call: item.obj was replaced during the call \
                 phase by _passes ({swaps}/conftest.py:17); {suite}::test_never_called: its call phase ran but \
                 never called the collected test function test_never_called ({suite}:30) through the run's \
                 plugin: a hook or fixture called another callable, or none; reporting hooks outside pytest: \
                 {swaps}/conftest.py:28 pytest_runtest_call (wrapper), {swaps}/conftest.py:38 pytest_pyfunc_call"
            ),
            "remove the fixture or hook that replaces `item.obj`".to_string(),
        ] {
            assert!(detail(c).contains(&part), "{name}: {part:?} not in {}", detail(c));
        }
        let problems: Vec<&str> = c["observed"]["callable_problems"]
            .as_array()
            .expect("callable problems")
            .iter()
            .map(|p| p["nodeid"].as_str().unwrap())
            .collect();
        assert_eq!(
            problems,
            [
                format!("{suite}::test_swapped_by_fixture"),
                format!("{suite}::test_swapped_in_call"),
                format!("{suite}::test_never_called")
            ]
        );

        // F4: three failing tests hidden before any item was reported, each
        // named at its `def`, with every conftest hook and variable that
        // decides collection.
        let u = check(&ev, "suites", &format!("{name}/uncollected"), None);
        assert_eq!(u["result"], "fail", "{u}");
        assert_eq!(u["consequence_of"], Value::Null, "{u}");
        assert!(
            detail(u).starts_with(&format!(
                "3 test(s) the suites' files define were never collected, so they have no outcome and no \
                 deselection lists them: {hides}/test_hides_collection.py::test_vanishes \
                 ({hides}/test_hides_collection.py:20), {hides}/test_ignored_by_hook.py::test_hooked_away \
                 ({hides}/test_ignored_by_hook.py:5), {hides}/test_ignored_by_list.py::test_ignored \
                 ({hides}/test_ignored_by_list.py:5); collection hooks and conftest variables outside pytest: \
                 {hides}/conftest.py:16 pytest_ignore_collect, {hides}/conftest.py:23 pytest_pycollect_makeitem, \
                 {hides}/conftest.py:13 collect_ignore, "
            )),
            "{name}: {}",
            detail(u)
        );
        // The parametrized test and the class method were collected.
        assert_eq!(u["observed"]["defined"], 10, "{u}");
    }
}

#[test]
fn unittest_testcase_tests_are_observed_through_the_unittest_path_and_nothing_reads_as_a_rewrite() {
    let suite = "Runner/certification-tests/test_unittest_cases.py";
    let repo = fixture_repo(&["suite-unittest-cases"]);
    let (code, ev, text) = run(&repo.root, &[suite], "");
    // The failing TestCase test fails the run, as it should...
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    for name in ["tree", "extracted"] {
        let outcomes = check(&ev, "suites", &format!("{name}/outcomes"), None);
        assert_eq!(outcomes["result"], "fail", "{outcomes}");
        assert!(
            detail(outcomes).contains("RelayCases::test_fails (failed: AssertionError: 4 != 5"),
            "{}",
            detail(outcomes)
        );
        // ...and nothing is a rewrite: each test's observed outcome is the
        // one reported.
        let c = check(&ev, "suites", &format!("{name}/observed-outcomes"), None);
        assert_eq!(c["result"], "pass", "{c}");
        let observed: Vec<(String, String)> = c["observed"]["tests"]
            .as_array()
            .expect("observed tests")
            .iter()
            .map(|t| {
                let id = t["id"].as_str().unwrap();
                (
                    id[id.rfind("::").unwrap() + 2..].to_string(),
                    t["observed"].as_str().unwrap_or("none").to_string(),
                )
            })
            .collect();
        let want = [
            ("test_fails", "failed"),
            ("test_known_limitation", "xfailed"),
            ("test_passes", "passed"),
            ("test_skipped", "skipped"),
        ]
        .map(|(n, o)| (n.to_string(), o.to_string()));
        assert_eq!(observed, want, "{name}");
        let u = check(&ev, "suites", &format!("{name}/uncollected"), None);
        assert_eq!(u["result"], "pass", "{u}");
        assert_eq!(u["observed"]["defined"], 4, "{u}");
    }
}

/// Runs the suites driver directly on the folder `dir` (its own rootdir),
/// with no hooks to list, and returns its record.
fn drive(dir: &Path) -> Value {
    let record = dir.join("record.json");
    let args = serde_json::json!([
        dir.display().to_string(),
        "-p",
        "no:cacheprovider",
        "--rootdir",
        dir.display().to_string(),
        "-q"
    ]);
    let settings = serde_json::json!({
        "hooks": [],
        "scan": {
            "rootdir": dir.display().to_string(),
            "paths": [dir.display().to_string()],
            "python_files": ["test_*.py", "*_test.py"],
            "python_functions": ["test"],
            "python_classes": ["Test"],
        },
    });
    let out = std::process::Command::new(common::python())
        .current_dir(dir)
        .arg("-I")
        .arg("-c")
        .arg(verify_coding_candidates::python::SUITES_RUN_DRIVER)
        .arg(args.to_string())
        .arg(&record)
        .arg(settings.to_string())
        .output()
        .expect("run the driver");
    let text = std::fs::read_to_string(&record).unwrap_or_else(|e| {
        panic!(
            "no record ({e}); stdout:\n{}\nstderr:\n{}",
            stdout_text(&out),
            stderr_text(&out)
        )
    });
    serde_json::from_str(&text).expect("one JSON record")
}

#[test]
fn the_scan_names_only_tests_pytest_collects_under_its_own_rules() {
    // No false `uncollected`: every shape pytest leaves out by its own rules
    // (a class with `__init__`, `__test__ = False`, a fixture named test_*,
    // a file outside python_files, a folder in the default norecursedirs)
    // the scan leaves out too; a class with a base it cannot judge is left
    // out (fewer, never more).
    let d = tempfile::tempdir().expect("temp dir");
    let dir = d.path();
    std::fs::write(
        dir.join("test_rules.py"),
        r#"import unittest

import pytest
from collections import OrderedDict


@pytest.fixture
def test_named_fixture():
    return 1


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n


async def helper():
    return None


class TestWithInit:
    def __init__(self):
        pass

    def test_never(self):
        pass


class TestOptedOut:
    __test__ = False

    def test_never_either(self):
        pass


class TestImportedBase(OrderedDict):
    def test_unjudged(self):
        pass


class TestBase:
    def test_base(self):
        pass


class TestChild(TestBase):
    def test_child(self):
        pass


class TestOuter:
    class TestInner:
        def test_inner(self):
            pass


class Cases(unittest.TestCase):
    def test_case(self):
        pass

    def helper(self):
        pass
"#,
    )
    .expect("write");
    std::fs::write(
        dir.join("helpers_test.py"),
        "def test_suffix():\n    pass\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("notes.py"),
        "def test_not_a_test_file():\n    pass\n",
    )
    .expect("write");
    std::fs::create_dir(dir.join("build")).expect("mkdir");
    std::fs::write(
        dir.join("build/test_built.py"),
        "def test_built():\n    assert False\n",
    )
    .expect("write");
    let record = drive(dir);
    let defined: Vec<&str> = record["defined"]
        .as_array()
        .expect("defined")
        .iter()
        .map(|d| d["nodeid"].as_str().unwrap())
        .collect();
    assert_eq!(
        defined,
        [
            "helpers_test.py::test_suffix",
            "test_rules.py::test_param",
            "test_rules.py::TestBase::test_base",
            "test_rules.py::TestChild::test_child",
            "test_rules.py::TestOuter::TestInner::test_inner",
            "test_rules.py::Cases::test_case",
        ]
    );
    let collected: Vec<String> = record["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            let id = i["nodeid"].as_str().unwrap();
            id.split('[').next().unwrap().to_string()
        })
        .collect();
    for d in &defined {
        assert!(collected.iter().any(|c| c == d), "{d} not in {collected:?}");
    }
    assert_eq!(record["defined"][1]["line"], 13, "{record}");
    assert_eq!(record["scan_errors"], serde_json::json!([]));
}
