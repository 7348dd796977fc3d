//! Code under review cannot reach the verifier (issue 20, item 5): the
//! repository's suites run in a sandbox whose init is not the verifier, so
//! good process-group lifecycle tests pass under the default concurrent run,
//! a test that kills or TERMs its parent (`os.getppid()`) fails as a test
//! instead of ending the run, and a verifier killed mid-suites leaves no
//! process of its run behind.
//!
//! Processes of a run are found through /proc (`common::run_processes`): a
//! working directory under the evidence directory or the repository copy,
//! either path in the command line or the environment, or a fixture's marker
//! in the command line (the fixtures' own children carry one, so they are
//! found wherever they were re-parented). Every test kills what it finds on
//! the way out (`KillRunOnDrop`), pass or fail. Deadlines are generous:
//! these tests assert what is left, not how fast.

use crate::common;

use common::{
    both, check, checks, evidence_dir, exit_code, fixture_repo, gate_result,
    profile_with_suite_paths, read_evidence, run_processes, verifier_on, wait_no_run_processes,
    KillRunOnDrop,
};
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};
use verify_coding_candidates::exit;

const RELAY: &str = "Runner/certification-tests/test_coding_relay_v1.py";
const LIFECYCLE: &str = "Runner/certification-tests/test_coding_native_lifecycle.py";
/// `suite-lifecycle`'s suite and its tests, by JUnit name.
const GROUPS: &str = "Runner/certification-tests/test_process_group_lifecycle.py";
const GROUP_TESTS: &[&str] = &[
    "test_native_cancel_awaits_child_and_grandchild_exit[obeys-term]",
    "test_native_cancel_awaits_child_and_grandchild_exit[deaf]",
    "test_daemon_ack_only_after_native_group_exit",
    "test_orphan_is_reparented_to_whatever_init_and_stopped_by_pid",
];
/// `suite-kills-parent`'s suite and test.
const KILLS: &str = "Runner/certification-tests/test_kills_parent.py";
const KILLS_TEST: &str = "test_kills_its_parent_with_sigkill";
/// `suite-terms-parent`'s suite and test.
const TERMS: &str = "Runner/certification-tests/test_terms_parent.py";
const TERMS_TEST: &str = "test_sends_sigterm_to_its_parent";
/// `suite-sleeps`'s suite and the marker in its processes' command lines.
const SLEEPS: &str = "Runner/certification-tests/test_sleeps_long.py";
const SLEEPS_MARKER: &str = "suite-sleeps-marker";

/// How long the processes of a finished or killed run may take to be gone.
const SETTLE: Duration = Duration::from_secs(15);

/// Writes `profile` next to the evidence directory (outside the repository).
fn write_profile(keep: &tempfile::TempDir, paths: &[&str]) -> std::path::PathBuf {
    common::profile_beside(keep, &profile_with_suite_paths(paths))
}

/// The testcases of suites run `name` (`tree` or `extracted`) whose outcome
/// is `outcome`.
fn with_outcome<'a>(evidence: &'a Value, run: &str, outcome: &str) -> Vec<&'a str> {
    let run = evidence["suites"]["runs"]
        .as_array()
        .expect("evidence.suites.runs is an array")
        .iter()
        .find(|r| r["name"] == run)
        .unwrap_or_else(|| panic!("no suites run {run:?} in {}", evidence["suites"]));
    run["testcases"]
        .as_array()
        .expect("testcases is an array")
        .iter()
        .filter(|t| t["outcome"] == outcome)
        .map(|t| t["name"].as_str().expect("testcase name"))
        .collect()
}

/// Processes as `pid: <command line>`, each command line cut to 160
/// characters (the suites driver's is a whole script).
fn brief(procs: &[(i32, String)]) -> Vec<String> {
    procs
        .iter()
        .map(|(pid, cmd)| {
            let cut: String = cmd.chars().take(160).collect();
            let more = if cut.len() < cmd.len() { " ..." } else { "" };
            format!("{pid}: {}{more}", cut.replace('\n', " "))
        })
        .collect()
}

/// Asserts that no process of the run is left within [`SETTLE`].
fn assert_nothing_left(dirs: &[&Path], markers: &[&str], when: &str) {
    let left = wait_no_run_processes(dirs, markers, SETTLE);
    assert!(
        left.is_empty(),
        "{when}: {} process(es) of the run still alive after {} s: {:#?}",
        left.len(),
        SETTLE.as_secs(),
        brief(&left)
    );
}

/// Lifecycle tests shaped like a runner's own (a TERM-ignoring grandchild
/// cancelled through its process group, a daemon that acknowledges only
/// after its native group exited, an orphan re-parented to whatever init
/// there is) pass plainly; they must pass under the verifier's default
/// concurrent run too, beside the gates that start plugin workers.
#[test]
fn lifecycle_suites_pass_under_the_default_concurrent_run() {
    let repo = fixture_repo(&["suite-lifecycle"]);
    let (keep, dir) = evidence_dir();
    let _cleanup = KillRunOnDrop {
        dirs: vec![dir.clone(), repo.dir.path().to_path_buf()],
        markers: vec![],
    };
    let profile = write_profile(&keep, &[RELAY, LIFECYCLE, GROUPS]);
    let out = verifier_on(&repo.root, &dir)
        .arg("--profile")
        .arg(&profile)
        .args(["--only", "suites,worker-isolation,discovery-rpc"])
        .output()
        .expect("run the verifier");
    let text = both(&out);
    assert_eq!(
        out.status.signal(),
        None,
        "the verifier was killed by a signal; {text}"
    );
    assert!(dir.join("evidence.json").is_file(), "no evidence; {text}");
    let ev = read_evidence(&dir);
    for run in ["tree", "extracted"] {
        let passed = with_outcome(&ev, run, "passed");
        let missing: Vec<&&str> = GROUP_TESTS.iter().filter(|t| !passed.contains(t)).collect();
        assert!(
            missing.is_empty(),
            "{run}: lifecycle tests that did not pass: {missing:?}; failing checks: {:#?}",
            checks(&ev, "suites")
                .iter()
                .filter(|c| c["result"] == "fail")
                .collect::<Vec<_>>()
        );
        assert_eq!(
            check(&ev, "suites", &format!("{run}/outcomes"), None)["result"],
            "pass",
            "{run}"
        );
    }
    assert_eq!(gate_result(&ev, "suites"), "pass", "{}", ev["gates"]);
    assert_eq!(exit_code(&out), i32::from(exit::SUCCESS), "{text}");
    // A sandboxed step's log does not pass bwrap's own CPU time off as the
    // step's; an unconfined one's has no such line.
    common::require_bwrap("lifecycle_suites_pass_under_the_default_concurrent_run");
    let tree = std::fs::read_to_string(dir.join("logs/suites/tree.cmd")).unwrap();
    assert!(tree.contains("\ncpu_not_counted: "), "{tree}");
    // sdk-record's probes run sandboxed too (nothing of an environment runs
    // before it is judged); `git archive` runs unconfined.
    let probe = std::fs::read_to_string(dir.join("logs/sdk-record/probe.cmd")).unwrap();
    assert!(probe.contains("\ncpu_not_counted: "), "{probe}");
    let git = std::fs::read_to_string(dir.join("logs/stage/git-archive.cmd")).unwrap();
    assert!(!git.contains("cpu_not_counted"), "{git}");
    assert_nothing_left(&[&dir, repo.dir.path()], &[], "after a passing run");
}

/// Runs `--only suites` with `suite` beside the relay suite and returns the
/// output, after checking what every parent-signalling test must leave: a
/// verifier that exited by itself, no process of the run, an evidence
/// directory; the evidence is returned.
fn run_parent_signalling_suite(
    overlay: &str,
    suite: &str,
) -> (std::process::Output, Value, String) {
    run_parent_signalling_suite_with(overlay, suite, &[])
}

/// [`run_parent_signalling_suite`] with `env` set for the verifier.
fn run_parent_signalling_suite_with(
    overlay: &str,
    suite: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, Value, String) {
    let repo = fixture_repo(&[overlay]);
    let (keep, dir) = evidence_dir();
    let _cleanup = KillRunOnDrop {
        dirs: vec![dir.clone(), repo.dir.path().to_path_buf()],
        markers: vec![],
    };
    let profile = write_profile(&keep, &[RELAY, suite]);
    let out = verifier_on(&repo.root, &dir)
        .envs(env.iter().copied())
        .arg("--profile")
        .arg(&profile)
        .args(["--only", "suites"])
        .output()
        .expect("run the verifier");
    let text = both(&out);
    let written = dir.join("evidence.json").is_file();
    let left = wait_no_run_processes(&[&dir, repo.dir.path()], &[], SETTLE);
    assert_eq!(
        out.status.signal(),
        None,
        "a repository test killed the verifier (exit status {:?}; evidence.json written: {written}; \
         {} process(es) of the run alive {} s later: {:#?}); {text}",
        out.status,
        left.len(),
        SETTLE.as_secs(),
        brief(&left)
    );
    assert!(written, "no evidence written; {text}");
    assert!(
        left.is_empty(),
        "{} process(es) of the run still alive {} s after it ended: {:#?}",
        left.len(),
        SETTLE.as_secs(),
        brief(&left)
    );
    (out, read_evidence(&dir), text)
}

/// Asserts that `suites` failed at each run's `outcomes` check naming `test`,
/// a failed testcase, and that the run is a failure, not a cancellation.
fn assert_fails_as_a_test(out: &std::process::Output, ev: &Value, text: &str, test: &str) {
    assert_eq!(
        exit_code(out),
        i32::from(exit::GATE_FAILED),
        "expected a failing gate, not a cancellation ({}); {text}",
        exit::INTERRUPTED
    );
    assert_eq!(ev["verdict"], "fail", "{text}");
    assert_eq!(gate_result(ev, "suites"), "fail", "{text}");
    for run in ["tree", "extracted"] {
        assert_eq!(
            with_outcome(ev, run, "failed"),
            [test],
            "{run}: {}",
            ev["suites"]
        );
        let outcomes = check(ev, "suites", &format!("{run}/outcomes"), None);
        assert_eq!(outcomes["result"], "fail", "{outcomes}");
        let detail = outcomes["detail"].as_str().expect("detail");
        assert!(detail.contains(test), "{run}/outcomes: {detail}");
    }
}

/// `os.kill(os.getppid(), SIGKILL)` in a test reaches the sandbox's init, not
/// the verifier: the test goes on to fail and `suites` reports it.
#[test]
fn a_test_that_sigkills_its_parent_fails_as_a_test_and_the_verifier_lives() {
    let (out, ev, text) = run_parent_signalling_suite("suite-kills-parent", KILLS);
    assert_fails_as_a_test(&out, &ev, &text, KILLS_TEST);
}

/// Without bubblewrap (`VCC_BWRAP` pointing nowhere, a CI host without
/// user namespaces) the same test's parent is the verifier's supervisor
/// process, not the verifier: the supervisor dies, the verifier stops the
/// step's pytest, writes evidence and fails `suites` naming the cause and
/// the test; nothing of the run is left.
#[test]
fn unconfined_a_test_that_sigkills_its_parent_kills_the_supervisor_not_the_verifier() {
    let (out, ev, text) = run_parent_signalling_suite_with(
        "suite-kills-parent",
        KILLS,
        &[("VCC_BWRAP", "/nonexistent/vcc-no-bwrap")],
    );
    assert_eq!(exit_code(&out), i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(ev["verdict"], "fail", "{text}");
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
    let outcomes = check(&ev, "suites", "tree/outcomes", None);
    assert_eq!(outcomes["result"], "fail", "{outcomes}");
    let detail = outcomes["detail"].as_str().expect("detail");
    assert!(
        detail.contains("the step's supervisor was killed")
            && detail.contains("a test signalled its parent")
            && detail.contains(KILLS_TEST),
        "tree/outcomes: {detail}"
    );
}

/// `os.kill(os.getppid(), SIGTERM)` in a test is no CI cancellation: the
/// run ends as a failing `suites` gate naming the test, not as `incomplete`.
#[test]
fn a_test_that_sigterms_its_parent_fails_as_a_test_not_as_a_cancellation() {
    let (out, ev, text) = run_parent_signalling_suite("suite-terms-parent", TERMS);
    assert_fails_as_a_test(&out, &ev, &text, TERMS_TEST);
    assert_ne!(ev["verdict"], "incomplete", "{text}");
}

/// A verifier SIGKILLed while a suite's test sleeps beside a TERM-ignoring
/// child leaves no process of its run behind: the sandbox dies with it.
#[test]
fn sigkill_of_the_verifier_mid_suites_leaves_no_process_of_the_run() {
    let repo = fixture_repo(&["suite-sleeps"]);
    let (keep, dir) = evidence_dir();
    let _cleanup = KillRunOnDrop {
        dirs: vec![dir.clone(), repo.dir.path().to_path_buf()],
        markers: vec![SLEEPS_MARKER],
    };
    let profile = write_profile(&keep, &[SLEEPS]);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin(common::BIN))
        .env("PYTHON", common::python())
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--profile")
        .arg(&profile)
        .args(["--only", "suites"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the verifier");
    let dirs = [dir.as_path(), repo.dir.path()];
    // Mid-suites: the sleeping test's TERM-ignoring child is running.
    let deadline = Instant::now() + Duration::from_secs(300);
    while !run_processes(&dirs, &[SLEEPS_MARKER])
        .iter()
        .any(|(_, c)| c.contains(SLEEPS_MARKER))
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the sleeping test started"
        );
        assert!(Instant::now() < deadline, "no sleeping test within 300 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen = run_processes(&dirs, &[SLEEPS_MARKER]);
    child.kill().expect("SIGKILL the verifier");
    let status = child.wait().expect("reap the verifier");
    assert_eq!(status.signal(), Some(9), "{status:?}");
    let left = wait_no_run_processes(&dirs, &[SLEEPS_MARKER], SETTLE);
    assert!(
        left.is_empty(),
        "{} process(es) of the run still alive {} s after the verifier was killed: {:#?}\n\
         (running when it was killed: {:#?})",
        left.len(),
        SETTLE.as_secs(),
        brief(&left),
        brief(&seen)
    );
}
