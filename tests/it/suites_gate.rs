//! The `suites` gate, run through the built binary (`--only suites`, which
//! adds the build gates it needs) on fixture repositories with the genuine
//! SDK interpreter from `$PYTHON`: the fixture's own pytest suites pass on
//! the tree and on DIR/extracted with their strict xfails counted apart from
//! passes; a strict XPASS, a suite that collects nothing, a suite whose every
//! test is skipped, fewer passes on DIR/extracted than on the tree, a
//! historical file named as a suite, a suite that collects a historical
//! test only when its tests run and a conftest that ends the process at the
//! end of pytest's session each fail the gate at the check that says so.

use crate::common;

use common::{
    both, check, checks, evidence_dir, exit_code, fixture_repo, gate_result, processes_under,
    read_evidence, replay_output, shared_run, stdout_text, verifier,
};
use serde_json::Value;
use std::path::Path;
use verify_coding_candidates::exit;

const RELAY: &str = "Runner/certification-tests/test_coding_relay_v1.py";
const LIFECYCLE: &str = "Runner/certification-tests/test_coding_native_lifecycle.py";
const HISTORICAL: &str = "Runner/certification-tests/historical_coding_runner_shared_blockers.py";

/// The fixture suites' strict xfail tests (known limitations), by JUnit name.
const XFAIL_TESTS: &[&str] = &[
    "test_relay_decodes_run_cancel",
    "test_runner_declares_interrupt[acp-agent-runner]",
    "test_runner_declares_interrupt[claude-code-agent]",
    "test_runner_declares_interrupt[codex-agent]",
];

/// Runs `--only suites` on `repo`, with `--profile` when `profile` is given
/// (written next to the evidence directory, outside the repository).
/// Returns the exit code, the evidence, the evidence directory (kept alive by
/// the returned guard) and the output text.
fn run_suites(
    repo: &Path,
    profile: Option<&str>,
) -> (i32, Value, tempfile::TempDir, std::path::PathBuf, String) {
    run_suites_with(repo, profile, &[])
}

/// [`run_suites`] with extra environment variables for the verifier.
fn run_suites_with(
    repo: &Path,
    profile: Option<&str>,
    env: &[(&str, &str)],
) -> (i32, Value, tempfile::TempDir, std::path::PathBuf, String) {
    let (keep, dir) = evidence_dir();
    let mut cmd = verifier();
    cmd.envs(env.iter().copied());
    cmd.current_dir(repo)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "suites"]);
    if let Some(text) = profile {
        cmd.arg("--profile")
            .arg(common::profile_beside(&keep, text));
    }
    let out = cmd.output().expect("run the verifier");
    let text = common::expect_evidence(&out, &dir);
    (exit_code(&out), read_evidence(&dir), keep, dir, text)
}

/// The recorded run `name` (`tree` or `extracted`).
fn suite_run<'a>(evidence: &'a Value, name: &str) -> &'a Value {
    evidence["suites"]["runs"]
        .as_array()
        .expect("evidence.suites.runs is an array")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no suites run {name:?} in {}", evidence["suites"]))
}

fn counts(run: &Value) -> [u64; 8] {
    let c = &run["counts"];
    [
        "tests",
        "passed",
        "failed",
        "errors",
        "skipped",
        "xfailed",
        "xpassed",
        "xpassed_strict",
    ]
    .map(|k| c[k].as_u64().unwrap_or_else(|| panic!("counts.{k} in {c}")))
}

/// Names of the run's testcases whose outcome is `outcome`.
fn with_outcome<'a>(run: &'a Value, outcome: &str) -> Vec<&'a str> {
    run["testcases"]
        .as_array()
        .expect("testcases is an array")
        .iter()
        .filter(|t| t["outcome"] == outcome)
        .map(|t| t["name"].as_str().expect("testcase name"))
        .collect()
}

/// The `<testsuite name="suite">` element of `junit`, as text.
fn junit_suite<'a>(junit: &'a str, suite: &str) -> &'a str {
    let open = format!("<testsuite name=\"{suite}\"");
    let start = junit
        .find(&open)
        .unwrap_or_else(|| panic!("junit.xml has no testsuite {suite}"));
    let end = start
        + junit[start..]
            .find("</testsuite>")
            .expect("testsuite is closed");
    &junit[start..end]
}

/// The `<testcase ... name="name" ...>...</testcase>` element of `suite`.
fn junit_case<'a>(suite: &'a str, name: &str) -> &'a str {
    let needle = format!("name=\"{name}\"");
    let at = suite
        .find(&needle)
        .unwrap_or_else(|| panic!("no testcase {name} in {suite}"));
    let start = suite[..at].rfind("<testcase").expect("testcase element");
    let rest = &suite[start..];
    let open_end = rest.find('>').expect("the start tag ends");
    if rest[..open_end].ends_with('/') {
        &rest[..=open_end]
    } else {
        let close = rest.find("</testcase>").expect("testcase is closed");
        &rest[..close + "</testcase>".len()]
    }
}

#[test]
fn fixture_suites_pass_on_the_tree_and_the_extractions_with_xfail_counted_apart() {
    // The fixture's `--only suites` run, shared with the reviewers' merge test.
    let shared = shared_run(&[], &["--only", "suites"]);
    let text = format!("stdout:\n{}\nstderr:\n{}", shared.stdout, shared.stderr);
    let (code, dir) = (shared.code, &shared.evidence);
    let ev = read_evidence(dir);
    assert_eq!(code, i32::from(exit::SUCCESS), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "pass", "{text}");
    assert!(
        shared.repo_unchanged,
        "the repository under review was modified"
    );

    assert_eq!(ev["suites"]["paths"], serde_json::json!([RELAY, LIFECYCLE]));
    assert_eq!(ev["suites"]["source_root_env"], "CODING_RUNNER_SOURCE_ROOT");
    let runs: Vec<&str> = ev["suites"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["tree", "extracted"]);
    assert_eq!(suite_run(&ev, "tree")["source_root"], Value::Null);
    assert_eq!(suite_run(&ev, "extracted")["source_root"], "extracted");
    assert_eq!(suite_run(&ev, "tree")["cwd"], "roots/suites/tree/source");

    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        assert_eq!(run["exit_code"], 0, "{name}: {run}");
        let [tests, passed, failed, errors, skipped, xfailed, xpassed, xpassed_strict] =
            counts(run);
        assert!(
            xfailed >= 1,
            "{name}: expected the strict xfails to be counted, found {xfailed}"
        );
        assert_eq!(xfailed, XFAIL_TESTS.len() as u64, "{name}");
        assert_eq!(
            (failed, errors, skipped, xpassed, xpassed_strict),
            (0, 0, 0, 0, 0),
            "{name}"
        );
        assert_eq!(
            tests,
            passed + xfailed,
            "{name}: an xfail was counted as a pass"
        );
        assert_eq!(run["collected"].as_u64(), Some(tests), "{name}");
        let mut expected_xfail = with_outcome(run, "xfailed");
        expected_xfail.sort_unstable();
        let mut known: Vec<&str> = XFAIL_TESTS.to_vec();
        known.sort_unstable();
        assert_eq!(expected_xfail, known, "{name}");
        let passed_names = with_outcome(run, "passed");
        assert!(
            XFAIL_TESTS.iter().all(|x| !passed_names.contains(x)),
            "{name}: {passed_names:?}"
        );
        assert!(
            passed_names.contains(&"test_relay_completes_a_job_with_the_genuine_hub[codex-agent]")
        );

        for check_name in [
            "collected",
            "historical-not-collected",
            "outcomes",
            "observed-outcomes",
            "deselected",
            "uncollected",
            "strict-xfail",
        ] {
            let c = check(&ev, "suites", &format!("{name}/{check_name}"), None);
            assert_eq!(c["result"], "pass", "{name}/{check_name}: {c}");
        }
        // The run's own plugin observed every test (the async relay and
        // lifecycle tests included) as its report says.
        let observed = check(&ev, "suites", &format!("{name}/observed-outcomes"), None);
        let observed = observed["observed"]["tests"].as_array().unwrap();
        assert_eq!(observed.len() as u64, tests, "{name}");
        assert!(
            observed
                .iter()
                .all(|t| t["observed"].is_string() && t["observed"] == t["logged"]),
            "{name}: {observed:?}"
        );
        assert!(dir.join(format!("logs/suites/{name}.xml")).is_file());
    }
    assert_eq!(
        check(&ev, "suites", "extracted/source-root", None)["result"],
        "pass"
    );
    assert_eq!(
        check(&ev, "suites", "extracted/extraction-unchanged", None)["result"],
        "pass"
    );

    let junit = std::fs::read_to_string(dir.join("junit.xml")).expect("junit.xml");
    for suite in ["suites:tree", "suites:extracted"] {
        let s = junit_suite(&junit, suite);
        let xfail = junit_case(s, "test_relay_decodes_run_cancel");
        assert!(
            xfail.contains("<skipped") && xfail.contains("pytest.xfail"),
            "{suite}: {xfail}"
        );
        assert!(
            xfail.contains("classname=\"Runner.certification-tests.test_coding_relay_v1\""),
            "{xfail}"
        );
        let pass = junit_case(
            s,
            "test_shared_files_are_byte_identical[pkg/daemon_relay.py]",
        );
        assert!(
            !pass.contains("<skipped") && !pass.contains("<failure"),
            "{suite}: {pass}"
        );
    }
}

#[test]
fn a_strict_xfail_that_passes_fails_the_gate_and_is_not_counted_as_a_pass() {
    let repo = fixture_repo(&["suite-xpass-strict"]);
    let xpass = "Runner/certification-tests/test_strict_xpass.py";
    let (code, ev, _keep, _dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[RELAY, xpass])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        let [tests, passed, _, _, _, xfailed, _, xpassed_strict] = counts(run);
        assert_eq!(xpassed_strict, 1, "{name}: {run}");
        assert_eq!(
            with_outcome(run, "xpassed-strict"),
            ["test_relay_decodes_run_cleanup"]
        );
        assert!(!with_outcome(run, "passed").contains(&"test_relay_decodes_run_cleanup"));
        assert_eq!(tests, passed + xfailed + xpassed_strict, "{name}");
        assert_eq!(run["exit_code"], 1, "{name}");
        let strict = check(&ev, "suites", &format!("{name}/strict-xfail"), None);
        assert_eq!(strict["result"], "fail", "{strict}");
        let detail = strict["detail"].as_str().unwrap();
        assert!(detail.contains("XPASS(strict)"), "{detail}");
        assert!(
            detail.contains(
                "Runner.certification-tests.test_strict_xpass::test_relay_decodes_run_cleanup"
            ),
            "{detail}"
        );
        assert_eq!(
            check(&ev, "suites", &format!("{name}/outcomes"), None)["result"],
            "fail"
        );
    }
}

#[test]
fn a_suite_that_collects_nothing_fails_the_gate() {
    let repo = fixture_repo(&["suite-collects-nothing"]);
    let empty = "Runner/certification-tests/test_nothing_collected.py";
    let (code, ev, _keep, _dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[empty])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        assert_eq!(run["exit_code"], 5, "{name}: {run}");
        assert_eq!(run["collected"], 0, "{name}");
        assert_eq!(counts(run)[0], 0, "{name}");
        let collected = check(&ev, "suites", &format!("{name}/collected"), None);
        assert_eq!(collected["result"], "fail", "{collected}");
        let detail = collected["detail"].as_str().unwrap();
        assert!(
            detail.contains("collected nothing") && detail.contains("exit status 5"),
            "{detail}"
        );
        assert!(detail.contains(empty), "{detail}");
        let outcomes = check(&ev, "suites", &format!("{name}/outcomes"), None);
        assert_eq!(outcomes["result"], "fail", "{outcomes}");
        assert!(
            outcomes["detail"]
                .as_str()
                .unwrap()
                .contains("exit status 5"),
            "{outcomes}"
        );
    }
}

#[test]
fn naming_the_historical_file_as_a_suite_fails_the_historical_check() {
    let repo = fixture_repo(&[]);
    let (code, ev, _keep, _dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[RELAY, HISTORICAL])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let historical = check(
            &ev,
            "suites",
            &format!("{name}/historical-not-collected"),
            None,
        );
        assert_eq!(historical["result"], "fail", "{historical}");
        let detail = historical["detail"].as_str().unwrap();
        assert!(detail.contains(HISTORICAL), "{detail}");
        assert!(
            detail.contains(
                "historical_coding_runner_shared_blockers.py::test_candidates_share_one_version"
            ),
            "{detail}"
        );
        assert!(
            detail.contains(
                "Runner.certification-tests.historical_coding_runner_shared_blockers::test_every_candidate_has_one_manifest"
            ),
            "{detail}"
        );
        // Its tests are strict xfail, so pytest itself passes: only the
        // historical check catches the collection.
        assert_eq!(
            check(&ev, "suites", &format!("{name}/outcomes"), None)["result"],
            "pass"
        );
        let run = suite_run(&ev, name);
        assert_eq!(run["exit_code"], 0, "{name}");
        assert_eq!(
            counts(run)[5],
            6,
            "{name}: 1 relay xfail + 5 historical xfails"
        );
    }
}

#[test]
fn a_suite_whose_every_test_is_skipped_fails_the_passing_check() {
    let repo = fixture_repo(&["suite-all-skipped"]);
    let skipped = "Runner/certification-tests/test_all_skipped.py";
    let (code, ev, _keep, _dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[skipped])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        // pytest itself is content: exit 0, "0 passed, 2 skipped".
        assert_eq!(run["exit_code"], 0, "{name}: {run}");
        let [tests, passed, _, _, skipped_count, ..] = counts(run);
        assert_eq!((tests, passed, skipped_count), (2, 0, 2), "{name}");
        let passing = check(&ev, "suites", &format!("{name}/passing"), None);
        assert_eq!(passing["result"], "fail", "{passing}");
        let detail = passing["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!(
                "no test passed in the {name} run: 2 test(s), 0 passed, 2 skipped"
            )),
            "{detail}"
        );
        assert!(
            detail.contains(
                "Runner.certification-tests.test_all_skipped::test_relay_is_checked (skipped: hostile fixture: every test skipped)"
            ),
            "{detail}"
        );
        assert!(detail.contains("pytestmark = pytest.mark.skip"), "{detail}");
    }
    // Both runs skipped the same tests: they agree, and still fail.
    assert_eq!(
        check(&ev, "suites", "extracted/same-outcomes", None)["result"],
        "pass"
    );
}

#[test]
fn fewer_passes_on_the_extraction_than_on_the_tree_fail_naming_the_test() {
    let repo = fixture_repo(&["suite-skips-on-extraction"]);
    let suite = "Runner/certification-tests/test_skips_on_extraction.py";
    let (code, ev, _keep, _dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[suite])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    assert_eq!(counts(suite_run(&ev, "tree"))[1], 2);
    assert_eq!(counts(suite_run(&ev, "extracted"))[1], 1);
    for name in ["tree", "extracted"] {
        for c in ["outcomes", "passing"] {
            assert_eq!(
                check(&ev, "suites", &format!("{name}/{c}"), None)["result"],
                "pass",
                "{name}/{c}"
            );
        }
    }
    let same = check(&ev, "suites", "extracted/same-outcomes", None);
    assert_eq!(same["result"], "fail", "{same}");
    let detail = same["detail"].as_str().unwrap();
    assert!(
        detail.contains("fewer tests pass on DIR/extracted (1) than on the committed tree (2)"),
        "{detail}"
    );
    assert!(
        detail.contains(
            "Runner.certification-tests.test_skips_on_extraction::test_manifests_only_on_the_tree: tree passed, \
             extracted skipped (hostile fixture: not checked against the archives)"
        ),
        "{detail}"
    );
    assert!(
        !detail.contains("test_candidates_are_present"),
        "only the differing id is named: {detail}"
    );
    assert_eq!(
        same["observed"]["differences"][0]["extracted"],
        serde_json::json!(["skipped"])
    );
}

#[test]
fn a_suite_that_collects_a_historical_test_only_when_run_is_refused_from_what_ran() {
    // The suite's conftest tells it whether pytest only collects; when pytest
    // runs the tests, the module imports a historical test under its own
    // name, so its JUnit classname is not the historical file's. A separate
    // `--collect-only` look would not see it; the run's own collection does,
    // by the item's source file.
    let repo = fixture_repo(&["suite-collects-when-run"]);
    let suite = "Runner/certification-tests/collects-when-run/test_collects_when_run.py";
    let (code, ev, _keep, dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[suite])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let historical = check(
            &ev,
            "suites",
            &format!("{name}/historical-not-collected"),
            None,
        );
        assert_eq!(historical["result"], "fail", "{historical}");
        assert_eq!(historical["consequence_of"], Value::Null, "{historical}");
        let detail = historical["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!(
                "{suite}::test_every_candidate_has_one_manifest (collected item from {HISTORICAL})"
            )),
            "{detail}"
        );
        // Everything else passes: the historical test is a strict xfail,
        // and its classname is the suite's.
        for c in ["collected", "outcomes", "passing", "strict-xfail"] {
            assert_eq!(
                check(&ev, "suites", &format!("{name}/{c}"), None)["result"],
                "pass",
                "{name}/{c}"
            );
        }
        let run = suite_run(&ev, name);
        assert_eq!(run["collected"], 2, "{name}: {run}");
        assert_eq!(counts(run)[..2], [2, 1], "{name}: {run}");
        assert_eq!(
            with_outcome(run, "xfailed"),
            ["test_every_candidate_has_one_manifest"],
            "{name}"
        );
        // One process per run: its collection record, its logs, no others.
        let record: Value = serde_json::from_slice(
            &std::fs::read(dir.join(format!("logs/suites/{name}-collection.json")))
                .expect("the run's collection record"),
        )
        .expect("the collection record is JSON");
        assert_eq!(
            record["items"].as_array().map(Vec::len),
            Some(2),
            "{record}"
        );
        assert!(!dir
            .join(format!("logs/suites/{name}-collect.stdout"))
            .exists());
    }
}

#[test]
fn a_conftest_that_ends_the_process_at_session_end_fails_outcomes() {
    // Its last `pytest_sessionfinish` calls `os._exit(0)` after the JUnit
    // report is written: status 0, a clean report, but pytest never
    // returned. (A separate `--collect-only` process used to die of the same
    // hook; the one run's record keeps the refusal.)
    let repo = fixture_repo(&["suite-exits-at-session-end"]);
    let suite = "Runner/certification-tests/exits-at-session-end/test_exits_at_session_end.py";
    let (code, ev, _keep, dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[suite])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        assert_eq!(run["exit_code"], 0, "{name}: {run}");
        assert_eq!(counts(run)[..2], [1, 1], "{name}: {run}");
        assert_eq!(
            check(&ev, "suites", &format!("{name}/collected"), None)["result"],
            "pass"
        );
        let outcomes = check(&ev, "suites", &format!("{name}/outcomes"), None);
        assert_eq!(outcomes["result"], "fail", "{outcomes}");
        assert_eq!(outcomes["consequence_of"], Value::Null, "{outcomes}");
        assert!(
            outcomes["detail"]
                .as_str()
                .unwrap()
                .starts_with("pytest's session did not end as pytest ends it"),
            "{outcomes}"
        );
        assert_eq!(
            outcomes["observed"]["session_finished"], false,
            "{outcomes}"
        );
        let record: Value = serde_json::from_slice(
            &std::fs::read(dir.join(format!("logs/suites/{name}-collection.json")))
                .expect("the run's collection record"),
        )
        .expect("the collection record is JSON");
        assert_eq!(record["finished"], false, "{record}");
    }
}

#[test]
fn a_test_that_ends_the_session_early_with_status_0_fails_outcomes() {
    // `pytest.exit(..., returncode=0)` in the second of three tests: pytest
    // returns normally with status 0 and a report without a failure, but the
    // third (failing) test never ran. The run's own collection record holds
    // all three items; the report pairs with only the first.
    let repo = fixture_repo(&["suite-exits-early"]);
    let suite = "Runner/certification-tests/test_exits_early.py";
    let (code, ev, _keep, _dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[suite])),
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        assert_eq!(run["exit_code"], 0, "{name}: {run}");
        assert_eq!(run["collected"], 3, "{name}: {run}");
        assert_eq!(
            check(&ev, "suites", &format!("{name}/collected"), None)["result"],
            "pass"
        );
        let outcomes = check(&ev, "suites", &format!("{name}/outcomes"), None);
        assert_eq!(outcomes["result"], "fail", "{outcomes}");
        assert_eq!(outcomes["consequence_of"], Value::Null, "{outcomes}");
        let detail = outcomes["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(
                "pytest exit status 0, but its report is not the outcome of every test it collected: 2 of the 3 \
                 item(s) the run collected have no testcase in its report"
            ),
            "{outcomes}"
        );
        let pairing = &outcomes["observed"]["pairing"];
        assert_eq!(
            pairing["unreported"],
            serde_json::json!([
                format!("{suite}::test_2_ends_the_session"),
                format!("{suite}::test_3_fails")
            ]),
            "{outcomes}"
        );
    }
}

/// The command line of the process `suite-escapes-group` starts in a session
/// of its own, and the test file that starts it.
const ESCAPED: &str = "sh -c sleep 15; echo late > late.txt";
const ESCAPE_SUITE: &str = "Runner/certification-tests/test_escaped_child.py";

/// Waits past the moment an escaped `sleep 15` would have written `late.txt`,
/// then checks that nothing wrote it and that the evidence replays.
fn assert_no_late_write_and_replay_matches(dir: &Path) {
    std::thread::sleep(std::time::Duration::from_secs(20));
    let late: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "late.txt")
        .map(|e| e.path().display().to_string())
        .collect();
    assert!(late.is_empty(), "written after the run: {late:?}");
    let out = replay_output(dir, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(stdout_text(&out).contains("REPLAY OK"), "{}", both(&out));
}

/// `VCC_BWRAP` naming a file that is not there: no sandbox for this run.
const NO_BWRAP: (&str, &str) = ("VCC_BWRAP", "/nonexistent/vcc-no-bwrap");

#[test]
fn a_test_process_that_leaves_its_group_ends_with_the_sandbox_and_never_writes_late() {
    common::require_bwrap(
        "a_test_process_that_leaves_its_group_ends_with_the_sandbox_and_never_writes_late",
    );
    let repo = fixture_repo(&["suite-escapes-group"]);
    let (code, ev, _keep, dir, text) = run_suites(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[RELAY, ESCAPE_SUITE])),
    );
    let survivors = processes_under(&dir);
    assert!(survivors.is_empty(), "survived the run: {survivors:#?}");
    // pytest's exit ended its sandbox's pid namespace, and everything in it:
    // nothing was left for the harness to find. But the sandbox's init saw
    // the pair still running when pytest exited: each run fails
    // `left-running`, naming both.
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    assert!(
        !checks(&ev, "suites").iter().any(|c| c["name"] == "RESIDUE"),
        "{text}"
    );
    for run in ["tree", "extracted"] {
        let c = check(&ev, "suites", &format!("{run}/left-running"), None);
        assert_eq!(c["result"], "fail", "{c}");
        let detail = c["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("): {ESCAPED}")), "{c}");
        assert!(detail.contains("): sleep 15"), "{c}");
        assert_eq!(
            check(&ev, "suites", &format!("{run}/outcomes"), None)["result"],
            "pass"
        );
        let c = check(&ev, "suites", &format!("{run}/sandbox"), None);
        assert_eq!(c["result"], "pass", "{c}");
        assert_eq!(c["observed"]["kind"], "bwrap", "{c}");
        assert_eq!(c["observed"]["own_pid_namespace"], true, "{c}");
        assert_eq!(
            c["observed"]["writable"],
            serde_json::json!([dir.join("roots/suites").join(run).display().to_string()]),
            "{c}"
        );
    }
    assert_no_late_write_and_replay_matches(&dir);
}

#[test]
fn a_daemon_a_conftest_leaves_running_fails_left_running_or_warns_by_the_profile() {
    common::require_bwrap(
        "a_daemon_a_conftest_leaves_running_fails_left_running_or_warns_by_the_profile",
    );
    // `pytest_sessionstart` double-forks a `setsid` daemon, `sleep 301`,
    // and nothing stops it: every test passes, pytest exits 0.
    let repo = fixture_repo(&["suite-leaves-daemon"]);
    let suite = "Runner/certification-tests/leaves-daemon/test_leaves_daemon.py";
    let profile = common::profile_with_suite_paths(&[suite]);
    let (code, ev, _keep, dir, text) = run_suites(&repo.root, Some(&profile));
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for run in ["tree", "extracted"] {
        assert_eq!(suite_run(&ev, run)["exit_code"], 0, "{run}");
        let c = check(&ev, "suites", &format!("{run}/left-running"), None);
        assert_eq!(c["result"], "fail", "{c}");
        assert!(
            c["detail"].as_str().unwrap().contains("): sleep 301"),
            "{c}"
        );
        let left = c["observed"]["processes"].as_array().expect("processes");
        assert_eq!(left.len(), 1, "{c}");
        // An orphan of the sandbox's init, in a session of its own.
        assert_eq!(left[0]["ppid"], 1, "{c}");
        assert_ne!(left[0]["sid"], 1, "{c}");
        assert_eq!(left[0]["cmdline"], "sleep 301", "{c}");
    }
    let survivors = processes_under(&dir);
    assert!(survivors.is_empty(), "survived the run: {survivors:#?}");

    let warned = profile.replacen("\n[suites]\n", "\n[suites]\nleft_running = \"warn\"\n", 1);
    let (code, ev, _keep, _dir, text) = run_suites(&repo.root, Some(&warned));
    assert_eq!(code, 0, "{text}");
    assert_eq!(gate_result(&ev, "suites"), "pass", "{text}");
    for run in ["tree", "extracted"] {
        let c = check(&ev, "suites", &format!("{run}/left-running"), None);
        assert_eq!(c["result"], "warn", "{c}");
        assert!(
            c["detail"].as_str().unwrap().contains("): sleep 301"),
            "{c}"
        );
    }
}

#[test]
fn unconfined_a_test_process_that_leaves_its_group_is_residue_stopped_before_the_evidence_is_sealed(
) {
    let repo = fixture_repo(&["suite-escapes-group"]);
    let (code, ev, _keep, dir, text) = run_suites_with(
        &repo.root,
        Some(&common::profile_with_suite_paths(&[RELAY, ESCAPE_SUITE])),
        &[NO_BWRAP],
    );
    for run in ["tree", "extracted"] {
        let c = check(&ev, "suites", &format!("{run}/sandbox"), None);
        assert_eq!(c["result"], "warn", "{c}");
        assert!(
            c["detail"].as_str().unwrap().contains("ran unconfined"),
            "{c}"
        );
    }
    // Right after the run, before anything else: nothing of it is alive.
    let survivors = processes_under(&dir);
    assert!(survivors.is_empty(), "survived the run: {survivors:#?}");

    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    let residue: Vec<&Value> = checks(&ev, "suites")
        .iter()
        .filter(|c| c["name"] == "RESIDUE")
        .collect();
    // Each run (tree, extracted) left `sh` and its `sleep`.
    let cmdlines: Vec<&str> = residue
        .iter()
        .map(|c| c["observed"]["cmdline"].as_str().unwrap())
        .collect();
    assert_eq!(
        cmdlines.iter().filter(|c| **c == ESCAPED).count(),
        2,
        "{residue:#?}"
    );
    assert_eq!(
        cmdlines.iter().filter(|c| **c == "sleep 15").count(),
        2,
        "{residue:#?}"
    );
    assert_eq!(residue.len(), 4, "{residue:#?}");
    for c in &residue {
        assert_eq!(c["result"], "fail", "{c}");
        let pid = c["observed"]["pid"].as_i64().unwrap();
        let cmdline = c["observed"]["cmdline"].as_str().unwrap();
        let detail = c["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!(
                "pid {pid} `{cmdline}` was still running after the gate finished"
            )),
            "{detail}"
        );
        assert!(detail.contains("and reaped"), "{detail}");
        // Gone: no process of that pid with that command line (a reused pid runs something else).
        let now = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert_ne!(
            String::from_utf8_lossy(&now).replace('\0', " ").trim(),
            cmdline,
            "pid {pid} still runs"
        );
    }
    let shells: Vec<&&Value> = residue
        .iter()
        .filter(|c| c["observed"]["cmdline"] == ESCAPED)
        .collect();
    for c in shells {
        let detail = c["detail"].as_str().unwrap();
        assert!(
            detail.contains("re-parented to the harness"),
            "pytest had exited, so the shell was the harness's orphan: {detail}"
        );
    }
    // The other checks still pass: the residue alone failed the gate.
    assert!(
        checks(&ev, "suites")
            .iter()
            .filter(|c| c["name"] != "RESIDUE")
            .all(|c| c["result"] != "fail"),
        "{text}"
    );

    assert_no_late_write_and_replay_matches(&dir);
}

#[test]
fn sigint_while_an_escaped_process_runs_stops_it_before_the_evidence_is_sealed() {
    use std::time::{Duration, Instant};
    let repo = fixture_repo(&["suite-escapes-group"]);
    let (keep, dir) = evidence_dir();
    // The suite whose test waits after starting the pair: in the sandbox
    // the pair ends with pytest, so `ESCAPE_SUITE`'s (pytest exits at once)
    // can live too briefly to be seen on a loaded machine.
    let suite = "Runner/certification-tests/escaped-waits/test_escaped_child_waits.py";
    let profile = common::profile_beside(&keep, &common::profile_with_suite_paths(&[suite]));
    let mut child =
        std::process::Command::new(assert_cmd::cargo::cargo_bin("verify-coding-candidates"))
            .env("PYTHON", common::python())
            .arg("--repo")
            .arg(&repo.root)
            .arg("--evidence")
            .arg(&dir)
            .arg("--profile")
            .arg(&profile)
            .args(["--only", "suites"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    // Ctrl-C once the escaped shell runs (a terminal's Ctrl-C would not reach
    // it either: it has a session of its own).
    let deadline = Instant::now() + Duration::from_secs(300);
    while !processes_under(&dir).iter().any(|p| p.contains(ESCAPED)) {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the run ended before the escaped process started:\n{}",
                both(&out)
            );
        }
        assert!(Instant::now() < deadline, "no escaped process within 300 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(i32::from(exit::INTERRUPTED)),
        "{}",
        both(&out)
    );
    let survivors = processes_under(&dir);
    assert!(survivors.is_empty(), "survived the run: {survivors:#?}");
    let ev = read_evidence(&dir);
    assert_eq!(ev["verdict"], "incomplete", "{}", both(&out));
    // The interrupt stopped bwrap, and its pid namespace ended with it:
    // nothing of the sandbox was left to sweep.
    assert!(
        !checks(&ev, "suites").iter().any(|c| c["name"] == "RESIDUE"),
        "{}",
        ev["gates"]
    );
    assert_no_late_write_and_replay_matches(&dir);
}

/// `suite-export-ignored-conftest`: two suite folders whose conftest is
/// marked export-ignore. `git archive` (what a build sees) leaves both out;
/// the suites run the commit's every file, so the autouse conftest that
/// fails every test beside it fails the gate, naming the tests, and the
/// conftest that supplies a fixture lets its test pass.
const EXPORT_FAILS: &str =
    "Runner/certification-tests/export-ignored-fails/test_export_ignored_fails.py";
const EXPORT_FIXTURE: &str =
    "Runner/certification-tests/export-ignored-fixture/test_export_ignored_fixture.py";

#[test]
fn an_export_ignored_conftest_that_fails_every_test_fails_the_suites_naming_the_tests() {
    let repo = fixture_repo(&["suite-export-ignored-conftest"]);
    let profile = common::profile_with_suite_paths(&[EXPORT_FAILS]);
    let (code, ev, _keep, dir, text) = run_suites(&repo.root, Some(&profile));
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    // The archive a build sees has no conftest; the suites' tree has it.
    let conftest = "Runner/certification-tests/export-ignored-fails/conftest.py";
    assert!(!dir.join("staging/source").join(conftest).exists());
    assert!(dir.join("staging/tree").join(conftest).is_file());
    let stage = check(&ev, "stage", "export-attributes", None);
    assert_eq!(stage["result"], "pass", "{stage}");
    let detail = stage["detail"].as_str().unwrap();
    assert!(
        detail.contains("still run by the suites") && detail.contains(conftest),
        "{detail}"
    );
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        let [tests, passed, _, errors, ..] = counts(run);
        assert_eq!((tests, passed, errors), (2, 0, 2), "{name}: {run}");
        let outcomes = check(&ev, "suites", &format!("{name}/outcomes"), None);
        assert_eq!(outcomes["result"], "fail", "{outcomes}");
        let detail = outcomes["detail"].as_str().unwrap();
        for test in ["test_export_ignored_one", "test_export_ignored_two"] {
            assert!(detail.contains(test), "{name}: {detail}");
        }
    }
}

#[test]
fn an_export_ignored_conftest_that_supplies_a_fixture_is_run_and_the_suites_pass() {
    let repo = fixture_repo(&["suite-export-ignored-conftest"]);
    let profile = common::profile_with_suite_paths(&[EXPORT_FIXTURE]);
    let (code, ev, _keep, _dir, text) = run_suites(&repo.root, Some(&profile));
    assert_eq!(code, i32::from(exit::SUCCESS), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "pass", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        assert_eq!(counts(run)[..4], [1, 1, 0, 0], "{name}: {run}");
        assert_eq!(
            with_outcome(run, "passed"),
            ["test_uses_the_committed_fixture"]
        );
        // The driver read the tree's modules for patches of pytest: none.
        let patches = check(&ev, "suites", &format!("{name}/pytest-patches"), None);
        assert_eq!(patches["result"], "pass", "{patches}");
        assert!(patches["observed"]["files"].as_u64() > Some(5), "{patches}");
    }
}

/// `suite-ignores-term`: a test deaf to SIGTERM that sleeps ten minutes.
/// The run's time limit stops it, and `outcomes` names the test that was
/// running (the driver notes each test as it starts).
#[test]
fn a_run_stopped_by_its_time_limit_names_the_test_that_hung() {
    let repo = fixture_repo(&["suite-ignores-term"]);
    let profile =
        common::profile_with_suite_paths(&["Runner/certification-tests/test_ignores_term.py"])
            .replace("timeout_secs = 600", "timeout_secs = 15");
    assert!(profile.contains("timeout_secs = 15"), "{profile}");
    let (code, ev, _keep, _dir, text) = run_suites(&repo.root, Some(&profile));
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let outcomes = check(&ev, "suites", "tree/outcomes", None);
    let detail = outcomes["detail"].as_str().unwrap();
    assert!(
        detail.contains("did not finish within 15 s and was stopped while the test")
            && detail.contains("test_ignores_term.py::test_ignores_term_and_waits was running"),
        "{detail}"
    );
}
