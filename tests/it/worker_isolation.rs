//! The `worker-isolation` gate end to end: the built binary, the genuine SDK
//! interpreter from `$PYTHON`, two real workers.
//!
//! The genuine workers pass under both backends; each TEST-ONLY hostile
//! variant (selected with `VCC_TEST_WORKER_VARIANT`, see
//! `src/gates/worker_isolation/hostile.rs`) fails the check it targets. Every
//! test ends by surveying `/proc` for any process tied to its run (the run's
//! environment marker, a working directory or HOME under its evidence
//! directory): none may survive.

use crate::common;

use common::{
    check, evidence_dir, fixture_repo, gate, gate_result, read_evidence, stderr_text, verifier,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use verify_coding_candidates::gates::worker_isolation::{CANARY_NAME, MARKER_NAME, VARIANT_VAR};

const GATE: &str = "worker-isolation";

/// One finished run of `--only worker-isolation`.
struct GateRun {
    _dirs: (common::FixtureRepo, tempfile::TempDir),
    evidence_dir: PathBuf,
    evidence: Value,
    code: i32,
}

/// Runs `--only worker-isolation --isolation <backend>` with extra harness
/// environment `env`, then asserts no process of the run survived.
fn run_gate(backend: &str, env: &[(&str, &str)]) -> GateRun {
    run_with(&["--only", GATE, "--isolation", backend], env)
}

/// Runs the verifier with `args` (and `--evidence`) and extra harness
/// environment `env`, then asserts no process of the run survived.
fn run_with(args: &[&str], env: &[(&str, &str)]) -> GateRun {
    let repo = fixture_repo(&[]);
    let (tmp, dir) = evidence_dir();
    let mut cmd = verifier();
    cmd.current_dir(&repo.root)
        .args(args)
        .arg("--evidence")
        .arg(&dir)
        .env_remove(VARIANT_VAR)
        .env_remove("VCC_BWRAP");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the verifier");
    let code = out
        .status
        .code()
        .expect("the verifier exited (not killed by a signal)");
    assert!(
        dir.join("evidence.json").is_file(),
        "exit {code}, no evidence written: {}",
        stderr_text(&out)
    );
    let evidence = read_evidence(&dir);
    assert_no_survivors(&dir, &evidence);
    GateRun {
        _dirs: (repo, tmp),
        evidence_dir: dir,
        evidence,
        code,
    }
}

/// No live process carries the run's marker, or has its working directory
/// or HOME under the evidence directory.
fn assert_no_survivors(dir: &Path, evidence: &Value) {
    let marker = gate(evidence, GATE)["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "teardown"))
        .and_then(|c| c["observed"]["survey"]["marker"].as_str())
        .map(str::to_string);
    let home_prefix = format!("HOME={}", dir.display());
    let real_dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut survivors = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let entries: Vec<String> = environ
            .split(|b| *b == 0)
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect();
        let by_marker = marker
            .as_ref()
            .is_some_and(|m| entries.iter().any(|e| e == m));
        let by_home = entries.iter().any(|e| e.starts_with(&home_prefix));
        let by_cwd = std::fs::read_link(format!("/proc/{pid}/cwd"))
            .is_ok_and(|c| c.starts_with(dir) || c.starts_with(&real_dir));
        if by_marker || by_home || by_cwd {
            survivors.push(format!(
                "pid {pid} (marker {by_marker}, home {by_home}, cwd {by_cwd})"
            ));
        }
    }
    assert!(
        survivors.is_empty(),
        "processes of the run survived it: {survivors:?}"
    );
}

fn observed<'a>(run: &'a GateRun, name: &str) -> &'a Value {
    &check(&run.evidence, GATE, name, None)["observed"]
}

fn result<'a>(run: &'a GateRun, name: &str) -> &'a str {
    check(&run.evidence, GATE, name, None)["result"]
        .as_str()
        .expect("check result")
}

fn detail<'a>(run: &'a GateRun, name: &str) -> &'a str {
    check(&run.evidence, GATE, name, None)["detail"]
        .as_str()
        .expect("check detail")
}

/// The checks every genuine run passes, with their key observed values.
fn assert_genuine_pass(run: &GateRun) {
    assert_eq!(
        gate_result(&run.evidence, GATE),
        "pass",
        "{:#}",
        gate(&run.evidence, GATE)
    );
    assert_eq!(run.code, 0);
    for name in [
        "backend",
        "separate-processes",
        "sdk-daemon-hub",
        "listener-token-separation",
        "listener-own-token",
        "environment-allowlist",
        "cancel-quiescence",
        "independent-cancellation",
        "same-ids-separate-routing",
        "teardown",
        "private-roots",
    ] {
        assert_eq!(result(run, name), "pass", "{name}: {}", detail(run, name));
    }
    // Cross tokens refused with close code 1008; own tokens accepted.
    let cross = observed(run, "listener-token-separation")["probes"]
        .as_array()
        .unwrap();
    assert_eq!(cross.len(), 4);
    for p in cross {
        assert_eq!(p["result"]["outcome"], "refused", "{p}");
        assert_eq!(p["result"]["close_code"], 1008, "{p}");
    }
    let own = observed(run, "listener-own-token")["probes"]
        .as_array()
        .unwrap();
    assert_eq!(own.len(), 2);
    assert!(
        own.iter().all(|p| p["result"]["outcome"] == "accepted"),
        "{own:?}"
    );
    // Same display and conversation id, different child processes.
    let routing = observed(run, "same-ids-separate-routing")["workers"]
        .as_array()
        .unwrap();
    assert_eq!(routing[0]["daemon_id"], routing[1]["daemon_id"]);
    assert_eq!(routing[0]["conversation_id"], routing[1]["conversation_id"]);
    assert_ne!(routing[0]["child_host_pid"], routing[1]["child_host_pid"]);
    assert_ne!(routing[0]["nonce"], routing[1]["nonce"]);
    for w in routing {
        assert_eq!(w["foreign_events"], 0);
        assert_eq!(w["mismatched_events"], 0);
    }
    // A's job group gone by /proc without escalation; B completed.
    let cancel = observed(run, "cancel-quiescence");
    assert_eq!(cancel["quiescent"], true);
    assert_eq!(cancel["escalation"].as_array().unwrap().len(), 0);
    assert_eq!(cancel["child"]["still_running"], false);
    assert_eq!(cancel["grandchild"]["still_running"], false);
    let indep = observed(run, "independent-cancellation");
    assert_eq!(indep["b"]["running_at_cancel"], true);
    assert_eq!(indep["b"]["outputs_total"], indep["b"]["expected_outputs"]);
    assert_eq!(
        indep["b"]["completion"][0],
        indep["b"]["expected_completion"]
    );
    assert_eq!(indep["a"]["completed"], false);
    // Nothing left, nothing leaked.
    assert_eq!(observed(run, "teardown")["verdict"], "CLEAN");
    for p in observed(run, "environment-allowlist")["processes"]
        .as_array()
        .unwrap()
    {
        assert_eq!(p["leaked_from_harness"].as_array().unwrap().len(), 0, "{p}");
    }
    // Each worker's tags are where its HOME, TMPDIR and data root point.
    for w in observed(run, "private-roots")["workers"]
        .as_array()
        .unwrap()
    {
        assert_eq!(w["missing_tags"].as_array().unwrap().len(), 0, "{w}");
        assert!(w["job_child_files"].as_u64().unwrap() >= 1, "{w}");
    }
    // The not-proven list comes from the catalogue.
    let not = gate(&run.evidence, GATE)["does_not_prove"]
        .as_str()
        .unwrap();
    for item in [
        "nsjail mounts",
        "cgroups",
        "kernel escape resistance",
        "production admission",
        "live Workspace isolation",
    ] {
        assert!(not.contains(item), "does_not_prove lacks {item:?}: {not}");
    }
    // Worker tokens never reach the logs: an environment value is not logged,
    // and under bwrap the `--setenv` argument is redacted.
    let cmd = std::fs::read_to_string(
        run.evidence_dir
            .join("logs")
            .join(GATE)
            .join("worker-a.cmd"),
    )
    .unwrap();
    // The token is passed as a file in the worker's own root: never as a
    // command-line argument (world-readable in /proc/<pid>/cmdline) or value.
    assert!(
        cmd.contains("VCC_WORKER_TOKEN_FILE"),
        "the token file is passed: {cmd}"
    );
    assert!(
        !cmd.contains("<redacted>"),
        "no secret needed redacting: {cmd}"
    );
    // The token file is removed once the worker read it: the evidence keeps no token.
    assert!(!run
        .evidence_dir
        .join("roots")
        .join(GATE)
        .join("a")
        .join("token")
        .exists());
}

#[test]
fn process_backend_passes_and_records_what_it_cannot_hide() {
    let run = run_gate("process", &[]);
    assert_genuine_pass(&run);
    let backend = observed(&run, "backend");
    assert_eq!(backend["requested"], "process");
    assert_eq!(backend["selected"], "process");
    // Same user, same mount namespace: the other root is readable, and said so.
    assert_eq!(
        result(&run, "root-visibility"),
        "warn",
        "{}",
        detail(&run, "root-visibility")
    );
    let peeks = observed(&run, "root-visibility")["peeks"]
        .as_array()
        .unwrap();
    assert!(
        peeks.iter().all(|p| p["answer"]["readable"] == true),
        "{peeks:?}"
    );
    let procs = observed(&run, "separate-processes")["workers"]
        .as_array()
        .unwrap();
    assert_ne!(procs[0]["worker_pgid"], procs[1]["worker_pgid"]);
    assert_eq!(procs[0]["spawned_pgid"], procs[0]["spawned_pid"]);
}

#[test]
fn bwrap_backend_passes_and_hides_each_root_from_the_other_worker() {
    common::require_bwrap("bwrap_backend_passes_and_hides_each_root_from_the_other_worker");
    let run = run_gate("bwrap", &[]);
    assert_genuine_pass(&run);
    let backend = observed(&run, "backend");
    assert_eq!(backend["selected"], "bwrap");
    assert_eq!(backend["preflight"]["ok"], true, "{backend}");
    assert_eq!(
        result(&run, "root-visibility"),
        "pass",
        "{}",
        detail(&run, "root-visibility")
    );
    for p in observed(&run, "root-visibility")["peeks"]
        .as_array()
        .unwrap()
    {
        assert_eq!(p["answer"]["readable"], false, "{p}");
        assert!(
            p["answer"]["error"]
                .as_str()
                .unwrap()
                .contains("FileNotFoundError"),
            "{p}"
        );
    }
    let procs = observed(&run, "separate-processes")["workers"]
        .as_array()
        .unwrap();
    assert_ne!(procs[0]["pid_namespace"], procs[1]["pid_namespace"]);
    assert_ne!(
        procs[0]["worker_host_pid"],
        procs[0]["worker_pid_in_namespace"]
    );
}

#[test]
fn auto_selects_bwrap_when_the_preflight_succeeds() {
    common::require_bwrap("auto_selects_bwrap_when_the_preflight_succeeds");
    let run = run_gate("auto", &[]);
    assert_genuine_pass(&run);
    let backend = observed(&run, "backend");
    assert_eq!(backend["requested"], "auto");
    assert_eq!(backend["selected"], "bwrap");
    assert_eq!(backend["preflight"]["ok"], true);
}

#[test]
fn requested_bwrap_that_is_unavailable_fails_without_falling_back() {
    let run = run_gate("bwrap", &[("VCC_BWRAP", "/nonexistent/bwrap")]);
    assert_eq!(run.code, 1);
    assert_eq!(gate_result(&run.evidence, GATE), "fail");
    assert_eq!(result(&run, "backend"), "fail");
    assert!(
        detail(&run, "backend").contains("does not fall back"),
        "{}",
        detail(&run, "backend")
    );
    assert_eq!(observed(&run, "backend")["selected"], "none");
    // No worker was started.
    assert!(!run
        .evidence_dir
        .join("logs")
        .join(GATE)
        .join("worker-a.cmd")
        .exists());
}

#[test]
fn auto_without_bwrap_runs_the_process_backend_and_says_why() {
    let run = run_gate("auto", &[("VCC_BWRAP", "/nonexistent/bwrap")]);
    assert_eq!(
        result(&run, "backend"),
        "warn",
        "{}",
        detail(&run, "backend")
    );
    assert_eq!(observed(&run, "backend")["selected"], "process");
    assert_eq!(observed(&run, "backend")["preflight"]["ok"], false);
    assert_eq!(gate_result(&run.evidence, GATE), "pass");
    assert_eq!(run.code, 0);
}

#[test]
fn a_worker_leaking_the_harness_environment_fails_the_allowlist() {
    let canary = format!("test-canary-{}", std::process::id());
    let run = run_gate(
        "process",
        &[(VARIANT_VAR, "leak-env"), (CANARY_NAME, &canary)],
    );
    assert_eq!(run.code, 1);
    assert_eq!(result(&run, "test-hook"), "warn");
    assert_eq!(result(&run, "environment-allowlist"), "fail");
    let d = detail(&run, "environment-allowlist");
    assert!(
        d.contains(CANARY_NAME) && d.contains("worker a") && d.contains("job child"),
        "{d}"
    );
    let leaked: Vec<&Value> = observed(&run, "environment-allowlist")["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["leaked_from_harness"].as_array().unwrap().is_empty())
        .collect();
    assert!(leaked.iter().all(|p| p["worker"] == "a"), "{leaked:?}");
    assert!(
        leaked.iter().any(|p| p["role"] == "job child"),
        "{leaked:?}"
    );
    // The genuine worker b is unaffected.
    assert_eq!(result(&run, "independent-cancellation"), "pass");
}

#[test]
fn a_daemon_ignoring_cancellation_is_killed_and_fails_quiescence() {
    let run = run_gate("process", &[(VARIANT_VAR, "ignore-cancel")]);
    assert_eq!(run.code, 1);
    assert_eq!(result(&run, "cancel-quiescence"), "fail");
    let o = observed(&run, "cancel-quiescence");
    assert_eq!(o["quiescent"], false);
    let child = o["child"]["host_pid"].as_i64().unwrap();
    let grandchild = o["grandchild"]["host_pid"].as_i64().unwrap();
    let needed_kill: Vec<i64> = o["needed_kill"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    assert!(
        needed_kill.contains(&child) && needed_kill.contains(&grandchild),
        "{o}"
    );
    let d = detail(&run, "cancel-quiescence");
    assert!(
        d.contains("needed KILL") && d.contains(&child.to_string()),
        "{d}"
    );
    // B still completed; the gate cleaned up, so teardown finds nothing left.
    assert_eq!(result(&run, "independent-cancellation"), "pass");
    assert_eq!(
        result(&run, "teardown"),
        "pass",
        "{}",
        detail(&run, "teardown")
    );
}

#[test]
fn a_grandchild_escaping_with_setsid_is_found_as_residue() {
    let run = run_gate("process", &[(VARIANT_VAR, "setsid-escape")]);
    assert_eq!(run.code, 1);
    assert_eq!(result(&run, "teardown"), "fail");
    let d = detail(&run, "teardown");
    assert!(d.contains("RESIDUE"), "{d}");
    let o = observed(&run, "teardown");
    assert_eq!(o["verdict"], "RESIDUE");
    let found = o["survey"]["found"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{o}");
    let grandchild = observed(&run, "cancel-quiescence")["grandchild"]["host_pid"].clone();
    assert_eq!(found[0]["pid"], grandchild);
    // Its own session: not found by process group, but by marker and cwd.
    assert_eq!(found[0]["sid"], found[0]["pid"]);
    let by: Vec<&str> = found[0]["matched_by"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        by.contains(&"env-marker") && by.contains(&"cwd") && !by.contains(&"pgid"),
        "{by:?}"
    );
    assert_eq!(
        o["survey"]["remaining_after_kill"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert!(d.contains(&format!("pid {grandchild}")), "{d}");
}

#[test]
fn a_listener_accepting_any_token_fails_token_separation() {
    let run = run_gate("process", &[(VARIANT_VAR, "any-token")]);
    assert_eq!(run.code, 1);
    assert_eq!(result(&run, "listener-token-separation"), "fail");
    let d = detail(&run, "listener-token-separation");
    assert!(d.contains("worker b's token at worker a's listener"), "{d}");
    let accepted: Vec<&Value> = observed(&run, "listener-token-separation")["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["result"]["outcome"] == "accepted")
        .collect();
    assert!(
        !accepted.is_empty() && accepted.iter().all(|p| p["listener"] == "a"),
        "{accepted:?}"
    );
    // Worker b's listener still refuses a's token; the positive control holds.
    assert_eq!(result(&run, "listener-own-token"), "pass");
}

#[test]
fn under_bwrap_the_pid_namespace_contains_a_setsid_escape_at_teardown() {
    common::require_bwrap("under_bwrap_the_pid_namespace_contains_a_setsid_escape_at_teardown");
    // The escaped grandchild still outlives its job's cancellation (that is
    // a finding), but it dies with its worker's pid namespace: no residue.
    let run = run_gate("bwrap", &[(VARIANT_VAR, "setsid-escape")]);
    assert_eq!(run.code, 1);
    assert_eq!(result(&run, "cancel-quiescence"), "fail");
    let escaped = observed(&run, "cancel-quiescence")["escaped_group"]
        .as_array()
        .unwrap();
    assert_eq!(escaped.len(), 1, "{escaped:?}");
    assert_eq!(
        result(&run, "teardown"),
        "pass",
        "{}",
        detail(&run, "teardown")
    );
    assert_eq!(observed(&run, "teardown")["verdict"], "CLEAN");
}

#[test]
fn under_bwrap_a_leaking_worker_finds_no_harness_environment_to_leak() {
    common::require_bwrap("under_bwrap_a_leaking_worker_finds_no_harness_environment_to_leak");
    // Its parent is bwrap's own init in a new pid namespace, whose
    // environment bwrap already cleared.
    let canary = format!("test-canary-{}", std::process::id());
    let run = run_gate(
        "bwrap",
        &[(VARIANT_VAR, "leak-env"), (CANARY_NAME, &canary)],
    );
    assert_eq!(
        result(&run, "environment-allowlist"),
        "pass",
        "{}",
        detail(&run, "environment-allowlist")
    );
    assert_eq!(result(&run, "test-hook"), "warn");
    assert_eq!(gate_result(&run.evidence, GATE), "pass");
}

/// The file the `write-outside` variant writes outside its root, at DIR's
/// top and in the shared bytecode cache (see `write_outside.py`).
const ESCAPED: &str = "vcc-write-outside-escaped";
const ESCAPED_IN_CACHE: &str = "roots/pycache/vcc-write-outside-escaped";

/// `private-roots`' changes outside the roots, as `"<change> <path>"`.
fn outside_changes(run: &GateRun) -> Vec<String> {
    observed(run, "private-roots")["outside_roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["change"].as_str().unwrap(),
                c["path"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_worker_writing_outside_its_root_fails_private_roots_with_no_gate_beside_it() {
    // `--jobs 1`: lbp-build runs before worker-isolation, nothing beside it,
    // so the whole of DIR is compared and both writes are plain changes.
    let run = run_with(
        &[
            "--only",
            "lbp-build,worker-isolation",
            "--isolation",
            "process",
            "--jobs",
            "1",
        ],
        &[(VARIANT_VAR, "write-outside")],
    );
    assert_eq!(run.code, 1);
    assert_eq!(result(&run, "test-hook"), "warn");
    assert_eq!(gate_result(&run.evidence, "lbp-build"), "pass");
    assert_eq!(result(&run, "private-roots"), "fail");
    let o = observed(&run, "private-roots");
    assert_eq!(o["gates_beside"], serde_json::json!([]), "{o:#}");
    assert_eq!(o["excluded"], serde_json::json!([]), "{o:#}");
    let outside = outside_changes(&run);
    for want in [
        format!("added {ESCAPED}"),
        format!("added {ESCAPED_IN_CACHE}"),
    ] {
        assert!(outside.contains(&want), "{want} not in {outside:?}");
    }
    let d = detail(&run, "private-roots");
    assert!(d.contains(&format!("added {ESCAPED}")), "{d}");
    // The genuine worker b is unaffected.
    assert_eq!(result(&run, "independent-cancellation"), "pass");
}

#[test]
fn a_worker_writing_outside_its_root_fails_private_roots_beside_another_gate() {
    // Two jobs: lbp-build and worker-isolation both start when sdk-record
    // passes and run side by side. lbp-build's folders (its logs and roots,
    // DIR/packages, DIR/roots/pycache) are left out of the comparison, yet
    // the write at DIR's top is a change outside the roots and the one in the
    // shared bytecode cache carries worker a's tag.
    let run = run_with(
        &[
            "--only",
            "lbp-build,worker-isolation",
            "--isolation",
            "process",
            "--jobs",
            "2",
        ],
        &[(VARIANT_VAR, "write-outside")],
    );
    assert_eq!(run.code, 1);
    assert_eq!(gate_result(&run.evidence, "lbp-build"), "pass");
    let o = observed(&run, "private-roots");
    assert_eq!(
        o["gates_beside"],
        serde_json::json!(["lbp-build"]),
        "lbp-build must have run beside the workers for this test to mean anything: {o:#}"
    );
    let cache = o["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["area"] == "roots/pycache")
        .unwrap_or_else(|| panic!("roots/pycache left out: {o:#}"));
    assert_eq!(cache["written_by"], serde_json::json!(["lbp-build"]));
    assert_eq!(result(&run, "private-roots"), "fail");
    assert_eq!(
        o["tagged_in_excluded"],
        serde_json::json!([{"path": ESCAPED_IN_CACHE, "worker": "a"}]),
        "{o:#}"
    );
    let outside = outside_changes(&run);
    assert!(outside.contains(&format!("added {ESCAPED}")), "{outside:?}");
    let d = detail(&run, "private-roots");
    assert!(
        d.contains(&format!("added {ESCAPED}"))
            && d.contains(&format!("{ESCAPED_IN_CACHE} (worker a)"))
            && d.contains("gates that ran beside the workers (lbp-build)"),
        "{d}"
    );
    assert_eq!(
        check(&run.evidence, GATE, "private-roots", None)["consequence_of"],
        Value::Null
    );
}

#[test]
fn beside_another_gate_the_genuine_workers_pass_and_the_left_out_folders_are_named() {
    let run = run_with(
        &[
            "--only",
            "lbp-build,worker-isolation",
            "--isolation",
            "process",
            "--jobs",
            "2",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{:#}", gate(&run.evidence, GATE));
    assert_genuine_pass(&run);
    let o = observed(&run, "private-roots");
    assert_eq!(o["gates_beside"], serde_json::json!(["lbp-build"]), "{o:#}");
    let areas: Vec<&str> = o["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["area"].as_str().unwrap())
        .collect();
    assert_eq!(
        areas,
        [
            "logs/lbp-build",
            "roots/lbp-build",
            "packages",
            "roots/pycache"
        ]
    );
    assert!(o["excluded_changes"].as_u64().unwrap() > 0, "{o:#}");
    assert_eq!(o["tagged_in_excluded"], serde_json::json!([]));
    assert_eq!(o["outside_roots"], serde_json::json!([]));
}

#[test]
fn an_unknown_test_variant_is_a_gate_error() {
    let run = run_gate("process", &[(VARIANT_VAR, "no-such-variant")]);
    assert_eq!(run.code, 1);
    let d = detail(&run, "gate-error");
    assert!(
        d.contains("no-such-variant") && d.contains("leak-env"),
        "{d}"
    );
}

#[test]
fn the_marker_names_are_stable() {
    // Tests and reviewers search /proc and the evidence by these names.
    assert_eq!(MARKER_NAME, "VCC_RUN_MARKER");
    assert_eq!(CANARY_NAME, "VCC_ISOLATION_CANARY");
    assert_eq!(VARIANT_VAR, "VCC_TEST_WORKER_VARIANT");
}
