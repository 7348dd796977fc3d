//! Reruns of failed tests (`[suites] retries`), through the built binary
//! (`--only suites`) with the genuine SDK interpreter from `$PYTHON`: a test
//! that fails once in each run's copy and passes when rerun is flaky (the
//! gate passes with a warning, and fails without reruns); a test that always
//! fails fails every rerun, and so does one that fails on a first attempt
//! in a fresh copy of the tree (each rerun gets a fresh copy); a conftest that rewrites the failure to a pass
//! only when the test is rerun makes the rerun prove nothing, and the gate
//! fails. `replay` re-decides the reruns from the kept logs.

use crate::common;

use common::{
    check, exit_code, fixture_repo, gate_result, read_evidence, replay_output, stderr_text,
    stdout_text,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use verify_coding_candidates::exit;

const FLAKY: &str = "Runner/certification-tests/flaky/test_flaky.py";
const REWRITES: &str = "Runner/certification-tests/rewrites-on-rerun";
const FIRST_ATTEMPT: &str = "Runner/certification-tests/first-attempt/test_first_attempt.py";

/// Runs `--only suites` on `repo` with the built-in profile whose `[suites]`
/// names `paths` and `retries`. Returns the exit code, the evidence, the
/// evidence directory (kept alive by the returned guard) and the output.
fn run(
    repo: &Path,
    paths: &[&str],
    retries: u32,
) -> (i32, Value, tempfile::TempDir, PathBuf, String) {
    let text = common::profile_with_suite_paths(paths);
    assert!(
        text.contains("\nretries = 2\n"),
        "the built-in profile reruns twice"
    );
    let profile = text.replace("\nretries = 2\n", &format!("\nretries = {retries}\n"));
    let (out, keep, dir) = common::run_only_with_profile(repo, "suites", &profile, &[]);
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        stdout_text(&out),
        stderr_text(&out)
    );
    (exit_code(&out), read_evidence(&dir), keep, dir, text)
}

fn suite_run<'a>(ev: &'a Value, name: &str) -> &'a Value {
    ev["suites"]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no run {name}"))
}

fn detail(c: &Value) -> &str {
    c["detail"].as_str().expect("detail")
}

#[test]
fn a_test_that_fails_once_and_passes_when_rerun_is_a_flaky_warning_and_fails_without_reruns() {
    let repo = fixture_repo(&["suite-flaky"]);
    let (code, ev, _keep, dir, text) = run(&repo.root, &[FLAKY], 2);
    assert_eq!(code, 0, "{text}");
    assert_eq!(gate_result(&ev, "suites"), "pass", "{text}");
    let id =
        "Runner.certification-tests.flaky.test_flaky::test_fails_on_its_first_attempt[codex-agent]";
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        assert_eq!(
            run["exit_code"], 1,
            "{name}: the first attempt failed: {run}"
        );
        assert_eq!(run["flaky"], serde_json::json!([id]), "{name}");
        let reruns = run["reruns"].as_array().expect("reruns");
        assert_eq!(reruns.len(), 1, "{name}: one rerun was enough");
        assert_eq!(reruns[0]["name"], format!("{name}-rerun-1"));
        assert_eq!(reruns[0]["exit_code"], 0);
        assert_eq!(reruns[0]["collected"], 1, "only the failed test was rerun");
        let outcomes = check(&ev, "suites", &format!("{name}/outcomes"), None);
        assert_eq!(outcomes["result"], "pass", "{outcomes}");
        let warning = check(&ev, "suites", &format!("{name}/reruns"), None);
        assert_eq!(warning["result"], "warn", "{warning}");
        for part in [
            id,
            "first attempt in this copy",
            "passed in rerun 1",
            "statement is not PASSED",
        ] {
            assert!(
                detail(warning).contains(part),
                "{part}: {}",
                detail(warning)
            );
        }
        assert!(dir
            .join(format!("logs/suites/{name}-rerun-1.xml"))
            .is_file());
    }
    assert_eq!(
        check(&ev, "suites", "extracted/same-outcomes", None)["result"],
        "pass"
    );
    // A reviewer's replay re-decides the reruns from the kept logs.
    let replay = replay_output(&dir, &[]);
    assert_eq!(
        exit_code(&replay),
        0,
        "{}{}",
        stdout_text(&replay),
        stderr_text(&replay)
    );

    // Without reruns the same suite fails.
    let (code, ev, _keep, _dir, text) = run(&repo.root, &[FLAKY], 0);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let outcomes = check(&ev, "suites", "tree/outcomes", None);
    assert_eq!(outcomes["result"], "fail", "{outcomes}");
    assert!(detail(outcomes).contains(id), "{}", detail(outcomes));
    assert!(ev["suites"]["runs"][0].get("reruns").is_none());
}

#[test]
fn a_conftest_that_rewrites_a_failure_only_on_a_rerun_makes_the_rerun_prove_nothing() {
    let repo = fixture_repo(&["suite-rewrites-on-rerun"]);
    let (code, ev, _keep, _dir, text) = run(&repo.root, &[REWRITES], 2);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        // The rerun's own status and report say it passed...
        let reruns = run["reruns"].as_array().expect("reruns");
        assert_eq!(reruns.len(), 1, "{name}: {run}");
        assert_eq!(reruns[0]["exit_code"], 0, "{name}: the rewrite took effect");
        assert!(run.get("flaky").is_none(), "{name}: nothing is flaky");
        // ...but its plugin observed the failure.
        let reruns_check = check(&ev, "suites", &format!("{name}/reruns"), None);
        assert_eq!(reruns_check["result"], "fail", "{reruns_check}");
        assert!(
            reruns_check.get("consequence_of").is_none(),
            "a finding of its own"
        );
        for part in [
            "rerun 1 of the 1 test(s)",
            "proves nothing",
            "test_always_fails",
            "conftest.py",
        ] {
            assert!(
                detail(reruns_check).contains(part),
                "{part}: {}",
                detail(reruns_check)
            );
        }
        assert_eq!(
            check(&ev, "suites", &format!("{name}/outcomes"), None)["result"],
            "fail"
        );
    }
}

#[test]
fn a_test_that_fails_on_a_first_attempt_in_a_fresh_copy_fails_every_rerun() {
    let repo = fixture_repo(&["suite-flaky"]);
    let (code, ev, _keep, dir, text) = run(&repo.root, &[FIRST_ATTEMPT], 2);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    for name in ["tree", "extracted"] {
        let run = suite_run(&ev, name);
        let reruns = run["reruns"].as_array().expect("reruns");
        assert_eq!(reruns.len(), 2, "{name}: {run}");
        for (k, rerun) in reruns.iter().enumerate() {
            assert_eq!(rerun["exit_code"], 1, "{name} rerun {}", k + 1);
            assert_eq!(
                rerun["cwd"],
                format!("roots/suites/{name}/rerun-{}/source", k + 1),
                "each rerun has a fresh copy"
            );
            assert!(dir
                .join(format!("roots/suites/{name}/rerun-{}/home", k + 1))
                .is_dir());
        }
        let reruns_check = check(&ev, "suites", &format!("{name}/reruns"), None);
        assert_eq!(reruns_check["result"], "fail", "{reruns_check}");
        assert_eq!(
            reruns_check["consequence_of"],
            format!("{name}/outcomes"),
            "{reruns_check}"
        );
        assert!(
            detail(reruns_check).contains("again in each of 2 rerun(s)"),
            "{}",
            detail(reruns_check)
        );
    }
}
