//! How a run ends and whom it shares with, on the built binary: a CI cancel
//! (SIGTERM, then more signals) mid-suites while the suite's processes ignore
//! SIGTERM, and two runs started together into one fresh evidence directory.

use crate::common;

use common::{both, evidence_dir, fixture_repo, processes_under, read_evidence, verifier};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use verify_coding_candidates::exit;

/// The suite of overlay `suite-ignores-term`.
const DEAF_SUITE: &str = "Runner/certification-tests/test_ignores_term.py";

/// The verifier, started (not waited for) with `args` after `--repo` and
/// `--evidence`, output captured.
fn start(repo: &Path, dir: &Path, args: &[&str]) -> Child {
    start_with(repo, dir, args, &[])
}

/// [`start`] with extra environment variables for the verifier.
fn start_with(repo: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin(common::BIN))
        .env("PYTHON", common::python())
        .envs(env.iter().copied())
        .arg("--repo")
        .arg(repo)
        .arg("--evidence")
        .arg(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the verifier")
}

fn send(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {signal} {pid}");
}

/// Every `deaf.pids` under `dir`: pytest's pid and its two deaf children's.
fn deaf_pids(dir: &Path) -> Vec<(PathBuf, Vec<i32>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "deaf.pids")
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let pids = text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            (e.path().to_path_buf(), pids)
        })
        .collect()
}

/// Whether `pid` runs (in /proc and not a zombie).
fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Unconfined (no bubblewrap for this run), so the pids the deaf test
/// writes are the host's and every process must be signalled one by one:
/// the journal is checked process by process.
#[test]
fn sigterm_mid_suites_with_term_deaf_processes_seals_incomplete_evidence_and_leaves_nothing() {
    sigterm_mid_deaf_suites(false);
}

/// In the sandbox, the deaf processes end with its pid namespace: the run
/// is sealed `incomplete` and nothing of it is left.
#[test]
fn sigterm_mid_sandboxed_suites_with_term_deaf_processes_seals_incomplete_evidence_and_leaves_nothing(
) {
    sigterm_mid_deaf_suites(true);
}

fn sigterm_mid_deaf_suites(sandboxed: bool) {
    let repo = fixture_repo(&["suite-ignores-term"]);
    let (keep, dir) = evidence_dir();
    let profile = common::profile_beside(&keep, &common::profile_with_suite_paths(&[DEAF_SUITE]));
    let profile = profile.display().to_string();
    let env: &[(&str, &str)] = if sandboxed {
        &[]
    } else {
        &[("VCC_BWRAP", "/nonexistent/vcc-no-bwrap")]
    };
    let mut child = start_with(
        &repo.root,
        &dir,
        &["--profile", &profile, "--only", "suites"],
        env,
    );
    // Cancel once a deaf test runs with both its children.
    let deadline = Instant::now() + Duration::from_secs(300);
    while deaf_pids(&dir).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the deaf test started"
        );
        assert!(Instant::now() < deadline, "no deaf test within 300 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let cancelled = Instant::now();
    send("-TERM", child.id());
    // A CI runner (or an impatient user) insists: neither kills the run.
    std::thread::sleep(Duration::from_millis(100));
    send("-TERM", child.id());
    send("-INT", child.id());
    let out = child.wait_with_output().unwrap();
    let sealed = cancelled.elapsed();
    // The figure that matters is seconds (a CI cancel sends SIGKILL a few
    // seconds after SIGTERM); the bound is loose for slow, loaded machines.
    eprintln!("SIGTERM to exit: {} ms", sealed.as_millis());
    assert!(
        sealed < Duration::from_secs(20),
        "took {sealed:?}: {}",
        both(&out)
    );
    assert_eq!(
        out.status.code(),
        Some(i32::from(exit::INTERRUPTED)),
        "{}",
        both(&out)
    );
    let ev = read_evidence(&dir);
    assert_eq!(ev["verdict"], "incomplete", "{}", both(&out));
    assert_eq!(
        ev["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == "suites")
            .unwrap()["result"],
        "skipped",
        "{}",
        ev["gates"]
    );
    assert!(dir.join("SHA256SUMS").is_file());

    if sandboxed {
        // The pids in deaf.pids are the sandbox's own; what matters is that
        // nothing of the run is alive on the host.
        let survivors = processes_under(&dir);
        assert!(survivors.is_empty(), "survived the run: {survivors:#?}");
        return;
    }
    // Nothing of the run is alive: neither pytest nor its deaf children
    // (one out of reach of a group stop), nor anything else under DIR.
    let deaf = deaf_pids(&dir);
    assert!(!deaf.is_empty());
    for (file, pids) in &deaf {
        assert_eq!(pids.len(), 3, "{}", file.display());
        for pid in pids {
            assert!(!runs(*pid), "{pid} of {} still runs", file.display());
        }
    }
    let survivors = processes_under(&dir);
    assert!(survivors.is_empty(), "survived the run: {survivors:#?}");

    // The evidence names every process signalled, each one of the run.
    let signals = ev["signals"].as_array().expect("signals recorded");
    for s in signals {
        assert_eq!(s["descends_from_run"], true, "{s}");
    }
    for (_, pids) in &deaf {
        for pid in pids {
            let mine: Vec<&Value> = signals.iter().filter(|s| s["pid"] == *pid).collect();
            assert!(
                mine.iter().any(|s| s["action"] == "SIGKILL"),
                "{pid}: deaf to SIGTERM, so it needed SIGKILL: {mine:#?}"
            );
            assert!(
                mine.iter()
                    .all(|s| s["gate"] == "suites" || s["gate"].is_null()),
                "{mine:#?}"
            );
        }
    }
    // On the interrupt every process of the run was sent SIGTERM at once (one
    // started a moment later by the next sweep); pytest and its child share
    // the step's group, which its step's stop then killed as a group.
    for (_, pids) in &deaf {
        for pid in pids {
            assert!(
                signals
                    .iter()
                    .any(|s| s["pid"] == *pid && s["action"] == "SIGTERM"),
                "{pid} was sent SIGTERM: {signals:#?}"
            );
        }
        assert!(
            signals.iter().any(|s| s["pid"] == pids[0]
                && s["action"] == "SIGTERM"
                && s["why"] == "interrupt"),
            "pytest was sent SIGTERM on the interrupt: {signals:#?}"
        );
        let pytest = signals
            .iter()
            .find(|s| s["pid"] == pids[0] && s["action"] == "SIGKILL")
            .expect("pytest, deaf to SIGTERM, was sent SIGKILL");
        assert_eq!(pytest["why"], "interrupt", "{pytest}");
        // Unconfined, the step's leader is the verifier's supervisor (the
        // suites' surveying init run without a namespace): pytest is its
        // child, in its group, and the step's stop killed that group.
        let leader = signals
            .iter()
            .find(|s| s["pid"] == pytest["group"])
            .unwrap_or_else(|| panic!("pytest's group leader was signalled: {signals:#?}"));
        assert!(
            leader["cmdline"]
                .as_str()
                .unwrap()
                .contains(" -I -S -B -c # The first process of a sandboxed step"),
            "pytest's group leader is the supervisor: {leader}"
        );
        assert_eq!(pytest["gate"], "suites", "{pytest}");
        assert!(
            pytest["cmdline"].as_str().unwrap().contains("pytest"),
            "{pytest}"
        );
    }
}

#[test]
fn two_runs_into_one_fresh_directory_exactly_one_proceeds() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let args = ["--only", "sdk-record"];
    let first = start(&repo.root, &dir, &args);
    let second = start(&repo.root, &dir, &args);
    let pids = [first.id(), second.id()];
    let outs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    let refused: Vec<usize> = (0..2)
        .filter(|i| outs[*i].status.code() == Some(i32::from(exit::CANNOT_RUN)))
        .collect();
    assert_eq!(
        refused.len(),
        1,
        "exactly one run refused:\n{}\n---\n{}",
        both(&outs[0]),
        both(&outs[1])
    );
    let (loser, winner) = (refused[0], 1 - refused[0]);
    let said = common::stderr_text(&outs[loser]);
    assert!(said.contains(&dir.display().to_string()), "{said}");
    assert!(
        said.contains(&format!("pid {}", pids[winner])),
        "names the run holding it: {said}"
    );
    assert_ne!(
        outs[winner].status.code(),
        Some(i32::from(exit::CANNOT_RUN)),
        "{}",
        both(&outs[winner])
    );
    let ev = read_evidence(&dir);
    assert_eq!(ev["verdict"], "pass", "{}", both(&outs[winner]));
    // The winner's evidence replays: nothing of the loser is in DIR.
    let replay = verifier()
        .args(["replay", "--evidence"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", both(&replay));
}
