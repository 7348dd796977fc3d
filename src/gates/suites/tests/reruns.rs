//! Reruns of failed tests (`[suites] retries`): which runs are rerun, what
//! a sound rerun is, and the checks a flaky test, a test failing every
//! rerun and a rerun that proves nothing give.

use super::super::reruns::{assess, next_request, rerun_request};
use super::*;

/// A run that failed `test_y` (the other items as in [`good_run`]).
fn failing_run(name: &str) -> RunObservation {
    let mut run = good_run(name);
    run.pytest = ran(1);
    run.report = Ok(vec![
        case("test_x", SuiteOutcome::Passed, None),
        case(
            "test_y",
            SuiteOutcome::Failed,
            Some("ValueError: invalid literal for int() with base 10: ''"),
        ),
        case("test_z", SuiteOutcome::Xfailed, Some("known limitation")),
    ]);
    observe_as_reported(&mut run);
    run
}

/// Rerun `k` of `run` that collected `names` and reported each with its
/// outcome, its plugin observing the same.
fn rerun(run: &str, k: usize, cases: &[(&str, SuiteOutcome)]) -> RunObservation {
    let name = format!("{run}-rerun-{k}");
    let failed = cases.iter().any(|(_, o)| *o == SuiteOutcome::Failed);
    let mut r = good_run(run);
    r.name = name.clone();
    r.junit_rel = format!("logs/suites/{name}.xml");
    r.pytest = ran(if failed { 1 } else { 0 });
    r.collection.answer = collected(cases.iter().map(|(n, _)| item(n)).collect(), 0);
    r.report = Ok(cases.iter().map(|(n, o)| case(n, *o, None)).collect());
    observe_as_reported(&mut r);
    r
}

fn with_reruns(mut run: RunObservation, reruns: Vec<RunObservation>) -> RunObservation {
    run.reruns = reruns;
    run
}

fn decide_tree(tree: RunObservation) -> Vec<Check> {
    let mut opts = opts();
    opts.retries = 2;
    decide(
        &Observation {
            runs: vec![tree, good_run("extracted")],
            ..good()
        },
        &opts,
    )
}

#[test]
fn a_test_that_fails_then_passes_when_rerun_is_flaky_a_warning_and_counts_as_passed() {
    let tree = with_reruns(
        failing_run("tree"),
        vec![rerun("tree", 1, &[("test_y", SuiteOutcome::Passed)])],
    );
    let checks = decide_tree(tree.clone());
    assert!(failing(&checks).is_empty(), "{:?}", failing(&checks));
    let outcomes = find(&checks, "tree/outcomes");
    assert_eq!(outcomes.result, CheckResult::Pass, "{}", outcomes.detail);
    assert!(
        outcomes
            .detail
            .contains("1 failed and then passed when rerun"),
        "{}",
        outcomes.detail
    );
    let reruns = find(&checks, "tree/reruns");
    assert_eq!(reruns.result, CheckResult::Warn, "{}", reruns.detail);
    for part in [
        "R.t.test_a::test_y",
        "ValueError: invalid literal",
        "passed in rerun 1",
        "logs/suites/tree-rerun-1.xml",
        "statement is not PASSED",
    ] {
        assert!(reruns.detail.contains(part), "{part}: {}", reruns.detail);
    }
    for c in [outcomes, reruns] {
        assert!(!c.detail.contains("  "), "one sentence: {}", c.detail);
    }
    // Both runs ended with the same outcomes.
    assert_eq!(
        find(&checks, "extracted/same-outcomes").result,
        CheckResult::Pass
    );
    let record = suite_run(&tree);
    assert_eq!(record.flaky, ["R.t.test_a::test_y"]);
    assert_eq!(record.reruns.len(), 1);
    assert_eq!(record.reruns[0].name, "tree-rerun-1");
    // The same first run without a rerun fails as before.
    let checks = decide_tree(failing_run("tree"));
    assert_eq!(find(&checks, "tree/outcomes").result, CheckResult::Fail);
    assert!(checks.iter().all(|c| c.name != "tree/reruns"));
}

#[test]
fn a_test_that_fails_every_rerun_fails_the_run_and_the_reruns_say_so() {
    let tree = with_reruns(
        failing_run("tree"),
        vec![
            rerun("tree", 1, &[("test_y", SuiteOutcome::Failed)]),
            rerun("tree", 2, &[("test_y", SuiteOutcome::Failed)]),
        ],
    );
    let checks = decide_tree(tree);
    let outcomes = find(&checks, "tree/outcomes");
    assert_eq!(outcomes.result, CheckResult::Fail);
    assert!(
        outcomes
            .detail
            .contains("rerun 2 time(s) ([suites] retries), 1 still failing"),
        "{}",
        outcomes.detail
    );
    let reruns = find(&checks, "tree/reruns");
    assert_eq!(reruns.result, CheckResult::Fail);
    assert_eq!(reruns.consequence_of.as_deref(), Some("tree/outcomes"));
    assert!(
        reruns.detail.contains("again in each of 2 rerun(s)"),
        "{}",
        reruns.detail
    );
    assert!(!reruns.detail.contains("  "), "{}", reruns.detail);
    // A skip in the rerun is not a pass.
    let tree = with_reruns(
        failing_run("tree"),
        vec![rerun("tree", 1, &[("test_y", SuiteOutcome::Skipped)])],
    );
    assert_eq!(
        find(&decide_tree(tree), "tree/outcomes").result,
        CheckResult::Fail
    );
}

#[test]
fn a_rerun_that_collects_other_tests_or_rewrites_its_report_proves_nothing() {
    // It collected nothing of what it was given, and passed.
    let other = rerun("tree", 1, &[("test_x", SuiteOutcome::Passed)]);
    // It collected more than it was given.
    let more = rerun(
        "tree",
        1,
        &[
            ("test_x", SuiteOutcome::Passed),
            ("test_y", SuiteOutcome::Passed),
        ],
    );
    // Its report says passed where its plugin observed a failure.
    let mut rewritten = rerun("tree", 1, &[("test_y", SuiteOutcome::Failed)]);
    rewritten.report = Ok(vec![case("test_y", SuiteOutcome::Passed, None)]);
    rewritten.pytest = ran(0);
    // Its report passes but pytest exited 1.
    let mut status = rerun("tree", 1, &[("test_y", SuiteOutcome::Passed)]);
    status.pytest = ran(1);
    // It ended before pytest returned.
    let mut unfinished = rerun("tree", 1, &[("test_y", SuiteOutcome::Passed)]);
    if let CollectAnswer::Collected(c) = &mut unfinished.collection.answer {
        c.finished = false;
    }
    for (label, bad) in [
        ("other", other),
        ("more", more),
        ("rewritten", rewritten),
        ("status", status),
        ("unfinished", unfinished),
    ] {
        let checks = decide_tree(with_reruns(failing_run("tree"), vec![bad]));
        assert_eq!(
            find(&checks, "tree/outcomes").result,
            CheckResult::Fail,
            "{label}"
        );
        let reruns = find(&checks, "tree/reruns");
        assert_eq!(reruns.result, CheckResult::Fail, "{label}");
        assert_eq!(reruns.consequence_of, None, "{label}: a finding of its own");
        assert!(
            reruns.detail.contains("rerun 1 of the 1 test(s)")
                && reruns.detail.contains("proves nothing"),
            "{label}: {}",
            reruns.detail
        );
        assert!(!reruns.detail.contains("  "), "{}", reruns.detail);
    }
}

#[test]
fn only_a_run_whose_failure_is_nothing_but_failed_tests_is_rerun() {
    assert_eq!(
        rerun_request(&failing_run("tree")),
        Some(vec!["R/t/test_a.py::test_y".to_string()])
    );
    assert_eq!(rerun_request(&good_run("tree")), None, "nothing failed");
    let mut timed_out = failing_run("tree");
    timed_out.pytest = PytestObs::Ran {
        exit_code: None,
        status: "timed out and was stopped".into(),
        timed_out: true,
        stragglers_killed: false,
        log: "l".into(),
    };
    let mut unfinished = failing_run("tree");
    if let CollectAnswer::Collected(c) = &mut unfinished.collection.answer {
        c.finished = false;
    }
    let mut strict = failing_run("tree");
    strict.report = Ok(vec![
        case("test_x", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Failed, Some("boom")),
        case(
            "test_z",
            SuiteOutcome::XpassedStrict,
            Some("[XPASS(strict)]"),
        ),
    ]);
    observe_as_reported(&mut strict);
    let mut unnamed = failing_run("tree");
    unnamed.report = Ok(vec![
        case("test_x", SuiteOutcome::Passed, None),
        case("test_y", SuiteOutcome::Passed, None),
        case("test_z", SuiteOutcome::Xfailed, None),
        case("test_w", SuiteOutcome::Failed, Some("boom")),
    ]);
    observe_as_reported(&mut unnamed);
    let mut rewritten = failing_run("tree");
    if let CollectAnswer::Collected(c) = &mut rewritten.collection.answer {
        c.observed[0].observed = Some("failed".into());
    }
    let mut collection_error = failing_run("tree");
    if let CollectAnswer::Collected(c) = &mut collection_error.collection.answer {
        c.errors.push(CollectError {
            nodeid: "R/t/test_b.py".into(),
            longrepr: "ImportError".into(),
        });
    }
    for (label, run) in [
        ("timed out", timed_out),
        ("session unfinished", unfinished),
        ("strict xpass", strict),
        ("a failure no item names", unnamed),
        ("a rewritten outcome", rewritten),
        ("a collection error", collection_error),
    ] {
        assert_eq!(rerun_request(&run), None, "{label}");
        // Reruns an observation holds for such a run are not counted.
        let run = with_reruns(
            run,
            vec![rerun("tree", 1, &[("test_y", SuiteOutcome::Passed)])],
        );
        assert_eq!(assess(&run, &run.reruns), None, "{label}");
        assert!(
            decide_tree(run).iter().all(|c| c.name != "tree/reruns"),
            "{label}"
        );
    }
}

#[test]
fn each_rerun_runs_exactly_the_tests_still_failing() {
    let mut first = good_run("tree");
    first.pytest = ran(1);
    first.report = Ok(vec![
        case("test_x", SuiteOutcome::Failed, Some("first")),
        case("test_y", SuiteOutcome::Error, Some("second")),
        case("test_z", SuiteOutcome::Xfailed, None),
    ]);
    observe_as_reported(&mut first);
    let both = vec![
        "R/t/test_a.py::test_x".to_string(),
        "R/t/test_a.py::test_y".to_string(),
    ];
    assert_eq!(next_request(&first, &[]), Some(both));
    let one = rerun(
        "tree",
        1,
        &[
            ("test_x", SuiteOutcome::Passed),
            ("test_y", SuiteOutcome::Failed),
        ],
    );
    assert_eq!(
        next_request(&first, std::slice::from_ref(&one)),
        Some(vec!["R/t/test_a.py::test_y".to_string()])
    );
    let two = rerun("tree", 2, &[("test_y", SuiteOutcome::Passed)]);
    let reruns = vec![one.clone(), two];
    assert_eq!(next_request(&first, &reruns), None, "everything passed");
    let a = assess(&first, &reruns).unwrap();
    assert!(a.all_flaky());
    assert_eq!(
        a.flaky
            .iter()
            .map(|f| (f.id.as_str(), f.passed_in, f.first_failure.as_str()))
            .collect::<Vec<_>>(),
        [
            ("R.t.test_a::test_x", 1, "first"),
            ("R.t.test_a::test_y", 2, "second")
        ]
    );
    let checks = decide_tree(with_reruns(first.clone(), reruns));
    assert_eq!(find(&checks, "tree/outcomes").result, CheckResult::Pass);
    assert_eq!(find(&checks, "tree/passing").result, CheckResult::Pass);
    // Rerun 2 given both again (not what was still failing) proves nothing.
    let wrong = rerun(
        "tree",
        2,
        &[
            ("test_x", SuiteOutcome::Passed),
            ("test_y", SuiteOutcome::Passed),
        ],
    );
    let reruns = vec![one, wrong];
    assert_eq!(
        next_request(&first, &reruns),
        None,
        "an unsound rerun ends them"
    );
    assert_eq!(
        assess(&first, &reruns).unwrap().unsound.map(|u| u.0),
        Some(2)
    );
}
