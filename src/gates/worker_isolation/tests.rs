//! The `worker-isolation` gate's decisions over observation values, without
//! Python or processes: a good observation passes every check with its
//! observed values, and one counterexample per clause of the catalogue's
//! `proves` sentence (and per way the gate could be fooled) fails the check
//! that says so, with its cause and advice.

use super::decide::*;
use super::roots::Change;
use super::token_probe::HelloOutcome;
use super::worker::{Peek, Status};
use super::*;
use crate::evidence::CheckResult;
use crate::process::survey::Stopped;

fn processes() -> ProcessesObs {
    let w = |name: &str, pid: i32| WorkerProcess {
        worker: name.into(),
        spawned_pid: pid,
        spawned_pgid: Some(pid),
        worker_host_pid: pid + 2,
        worker_pid_in_namespace: 2,
        worker_pgid: pid,
        worker_sid: pid,
        pid_namespace: Some(format!("pid:[{pid}]")),
        hub_endpoint: format!("ws://127.0.0.1:{}", 4000 + pid),
        hub_port: (4000 + pid) as u16,
    };
    ProcessesObs {
        backend: "bwrap".into(),
        new_pid_namespace: true,
        harness_pid: 10,
        harness_pgid: Some(10),
        harness_pid_namespace: Some("pid:[1]".into()),
        workers: vec![w("a", 100), w("b", 200)],
    }
}

const PKG: &str = "/venv/lib/python3.12/site-packages/langbot_plugin";

fn hub() -> HubObs {
    let row = |name: &str| HubRow {
        worker: name.into(),
        sdk_version: "0.6.0b5".into(),
        sdk_package: PKG.into(),
        hub_module: "langbot_plugin.api.agent_tools.daemon".into(),
        hub_class: "AgentRuntimeDaemonHub".into(),
        client_class: "AgentRuntimeDaemonClient".into(),
        hub_file: format!("{PKG}/api/agent_tools/daemon.py"),
        package_is_verified: true,
        hub_file_in_verified: true,
    };
    HubObs {
        verified_package: PKG.into(),
        verified_version: Some("0.6.0b5".into()),
        workers: vec![row("a"), row("b")],
    }
}

fn refused() -> HelloOutcome {
    HelloOutcome::Refused {
        close_code: 1008,
        reason: "invalid token".into(),
    }
}

fn accepted() -> HelloOutcome {
    HelloOutcome::Accepted {
        reply: "daemon.ready".into(),
    }
}

/// Each listener: a's token, b's token, none; own accepted, others refused.
fn probes() -> Vec<TokenProbe> {
    let mut v = Vec::new();
    for (li, listener) in ["a", "b"].iter().enumerate() {
        for token_of in ["a", "b", "none"] {
            v.push(TokenProbe {
                listener: listener.to_string(),
                port: 4100 + li as u16,
                token_of: token_of.into(),
                daemon_id: format!("vcc-token-probe-{}", v.len() + 1),
                result: if token_of == *listener {
                    accepted()
                } else {
                    refused()
                },
            });
        }
    }
    v
}

fn env_row(worker: &str, pid: i32, role: &str) -> EnvRow {
    EnvRow {
        worker: Some(worker.into()),
        pid,
        role: role.into(),
        names: vec!["HOME".into(), "PATH".into(), "TMPDIR".into()],
        leaked_from_harness: vec![],
        unexpected: vec![],
    }
}

fn environment() -> EnvironmentObs {
    EnvironmentObs {
        canary_variable: CANARY_NAME.into(),
        harness_variables_watched: 12,
        allowlist: vec!["HOME".into(), "PATH".into(), "TMPDIR".into()],
        processes: vec![
            env_row("a", 102, "worker"),
            env_row("a", 103, "job child"),
            env_row("a", 104, "job grandchild"),
            env_row("b", 202, "worker"),
        ],
        unreadable: vec![],
    }
}

fn proc_row(pid: i32, pgid: i32) -> ProcRow {
    ProcRow {
        host_pid: pid,
        pid_in_namespace: pid - 100,
        pgid,
        sid: 100,
        still_running: false,
        state_now: None,
    }
}

fn cancel() -> CancelObs {
    CancelObs {
        worker: "a".into(),
        job_pgid: 103,
        child: proc_row(103, 103),
        grandchild: proc_row(104, 103),
        worker_acknowledged_ms: 40,
        worker_state: Some("cancelled".into()),
        quiescent: true,
        waited_ms: 12,
        group_answers_signal_0: false,
        live_after_wait: vec![],
        escalation: vec![],
        needed_kill: vec![],
        escaped_group: vec![],
    }
}

const NONCE_B: &str = "nonce-b-1";

fn independence() -> IndependenceObs {
    IndependenceObs {
        a: JobA {
            outputs_at_cancel: 3,
            outputs_total: 3,
            finished_at_cancel: false,
            completed: false,
            state: Some("cancelled".into()),
        },
        b: JobB {
            running_at_cancel: true,
            outputs_at_cancel: 4,
            outputs_total: JOB_EVENTS as usize,
            seqs: (0..JOB_EVENTS).collect(),
            expected_outputs: JOB_EVENTS,
            completion: vec![Some(format!(
                "fixture reply {NONCE_B} after {JOB_EVENTS} events"
            ))],
            expected_completion: format!("fixture reply {NONCE_B} after {JOB_EVENTS} events"),
            finish_error: None,
            failed: None,
            job_pgid: 203,
            group_quiescent_after_finish: true,
            live_after_wait: vec![],
            waited_ms: 5,
        },
    }
}

fn routing() -> RoutingObs {
    let row = |name: &str, base: i32| RoutingRow {
        worker: name.into(),
        status_after_jobs: Some(Status {
            jobs: Default::default(),
            daemons: vec![DISPLAY_ID.into()],
        }),
        daemon_id: DISPLAY_ID.into(),
        hub_daemons: vec![DISPLAY_ID.into()],
        conversation_id: CONVERSATION_ID.into(),
        nonce: format!("nonce-{name}-1"),
        daemon_job_id: Some(format!("job-{name}")),
        events: 44,
        fixture_events: 41,
        foreign_events: 0,
        mismatched_events: 0,
        labelled: true,
        child_pid_in_namespace: Some(3),
        child_pgid_in_namespace: Some(3),
        child_host_pid: Some(base + 3),
        grandchild_host_pid: Some(base + 4),
        job_pgid: Some(base + 3),
    };
    RoutingObs {
        workers: vec![row("a", 100), row("b", 200)],
        fixture: "local protocol fixture, not a vendor reply".into(),
    }
}

fn peek(readable: bool) -> Peek {
    Peek {
        path: "/ev/roots/worker-isolation/b/data".into(),
        readable,
        entries: readable.then_some(2),
        error: (!readable).then(|| "No such file or directory".into()),
    }
}

fn visibility(bwrap: bool) -> VisibilityObs {
    VisibilityObs {
        backend: if bwrap { "bwrap" } else { "process" }.into(),
        bwrap,
        peeks: vec![
            PeekRow {
                worker: "a".into(),
                tried_root_of: "b".into(),
                answer: peek(false),
            },
            PeekRow {
                worker: "b".into(),
                tried_root_of: "a".into(),
                answer: peek(false),
            },
        ],
    }
}

fn stop(name: &str) -> WorkerStop {
    WorkerStop {
        worker: name.into(),
        answered_stopped: true,
        exited_after_stop: true,
        term_sent: false,
        kill_needed: false,
        status: "exit status 0".into(),
    }
}

fn teardown() -> TeardownObs {
    TeardownObs {
        verdict: "CLEAN".into(),
        workers: vec![stop("a"), stop("b")],
        survey: SurveyObs {
            by: vec!["process group".into()],
            process_groups: vec![100, 103, 200, 203],
            marker: "VCC_RUN_MARKER=ab".into(),
            roots: "/ev/roots/worker-isolation".into(),
            found: vec![],
            stopped: vec![],
            remaining_after_kill: vec![],
        },
    }
}

fn root_row(name: &str) -> RootRow {
    RootRow {
        worker: name.into(),
        root: format!("/ev/roots/worker-isolation/{name}"),
        changed_entries: 6,
        own_tagged_files: 4,
        job_child_files: 1,
        foreign_files: vec![],
        missing_tags: vec![],
        entries: vec![format!("roots/worker-isolation/{name}/data/jobs/child-1")],
    }
}

fn roots_obs() -> RootsObs {
    RootsObs {
        snapshot: "DIR before and after".into(),
        outside_roots: vec![],
        workers: vec![root_row("a"), root_row("b")],
        gates_beside: vec![],
        excluded: vec![],
        excluded_changes: 0,
        tagged_in_excluded: vec![],
        parents_mtime_only: vec![],
    }
}

/// `roots_obs` of a run where lbp-build ran beside the workers.
fn roots_obs_beside_lbp_build() -> RootsObs {
    let mut o = roots_obs();
    o.gates_beside = vec!["lbp-build".into()];
    o.excluded = super::teardown::excluded_areas(&o.gates_beside);
    o.excluded_changes = 12;
    o.parents_mtime_only = vec!["logs".into(), "roots".into()];
    o
}

fn backend_obs(requested: &str, selected: &str, failure: Option<&str>) -> BackendObs {
    BackendObs {
        requested: requested.into(),
        selected: selected.into(),
        preflight: if selected == "bwrap" {
            json!({"ok": true, "version": "bubblewrap 0.8.0"})
        } else {
            json!({"ok": false, "error": failure})
        },
        failure: failure.map(str::to_string),
    }
}

fn good() -> Observation {
    Observation {
        backend: backend_obs("auto", "bwrap", None),
        processes: Some(processes()),
        hub: Some(hub()),
        tokens: Some(probes()),
        environment: Some(environment()),
        cancel: Some(cancel()),
        independence: Some(independence()),
        routing: Some(routing()),
        visibility: Some(visibility(true)),
        protocol_error: None,
        logs: "/ev/logs/worker-isolation".into(),
        teardown: Some(teardown()),
        roots: Some(roots_obs()),
    }
}

fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name} in {checks:#?}"))
}

fn assert_fails(c: &Check, needle: &str) {
    assert_eq!(c.result, CheckResult::Fail, "{}: {}", c.name, c.detail);
    assert!(
        c.detail.contains(needle),
        "{}: expected {needle:?} in {}",
        c.name,
        c.detail
    );
}

// ----- the passing observation ---------------------------------------------

#[test]
fn a_good_observation_passes_every_check_in_order_and_every_pass_carries_observed() {
    let checks = decide(&good());
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "backend",
            "separate-processes",
            "sdk-daemon-hub",
            "listener-token-separation",
            "listener-own-token",
            "environment-allowlist",
            "cancel-quiescence",
            "independent-cancellation",
            "same-ids-separate-routing",
            "root-visibility",
            "teardown",
            "private-roots",
        ]
    );
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
        assert_eq!(c.consequence_of, None, "{}", c.name);
        let o = c.observed.as_ref().unwrap_or_else(|| panic!("{}", c.name));
        assert!(
            o.as_object().is_some_and(|m| !m.is_empty()),
            "{}: {o}",
            c.name
        );
    }
    assert_eq!(
        find(&checks, "separate-processes").detail,
        "workers a (pid 102) and b (pid 202) are separate processes in separate process groups (100 and 200), \
         each hub on its own loopback port (bwrap)"
    );
    assert!(find(&checks, "backend")
        .detail
        .contains("(bubblewrap 0.8.0)"));
    assert_eq!(
        find(&checks, "teardown").observed.as_ref().unwrap()["verdict"],
        "CLEAN"
    );
    assert_eq!(
        find(&checks, "cancel-quiescence")
            .observed
            .as_ref()
            .unwrap()["grandchild"]["host_pid"],
        104
    );
    assert_eq!(
        find(&checks, "listener-token-separation")
            .observed
            .as_ref()
            .unwrap()["probes"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        find(&checks, "listener-own-token")
            .observed
            .as_ref()
            .unwrap()["probes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(find(&checks, "environment-allowlist")
        .detail
        .contains("in any of the 4 processes"));
}

// ----- clause: the recorded backend ----------------------------------------

#[test]
fn a_requested_bwrap_that_is_unavailable_fails_without_fallback() {
    let c = decide::backend(&backend_obs(
        "bwrap",
        "none",
        Some("bwrap not found on PATH"),
    ));
    assert_fails(
        &c,
        "--isolation bwrap was requested, but bubblewrap is unavailable: bwrap not found on PATH",
    );
    assert!(c.detail.contains("apt-get install bubblewrap"));
    assert_eq!(c.observed.as_ref().unwrap()["selected"], "none");
    let only = decide(&Observation::backend_only(backend_obs(
        "bwrap",
        "none",
        Some("x"),
    )));
    assert_eq!(only.len(), 1);
}

#[test]
fn auto_falls_back_to_the_process_backend_with_a_warning_and_process_passes() {
    let c = decide::backend(&backend_obs("auto", "process", Some("no user namespaces")));
    assert_eq!(c.result, CheckResult::Warn);
    assert!(
        c.detail
            .contains("the bwrap preflight failed (no user namespaces)"),
        "{}",
        c.detail
    );
    let mut p = backend_obs("process", "process", None);
    p.preflight = serde_json::Value::Null;
    let c = decide::backend(&p);
    assert_eq!(c.result, CheckResult::Pass);
    assert!(
        c.detail
            .starts_with("--isolation process: separate processes"),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"requested": "process", "selected": "process", "preflight": null}))
    );
}

// ----- clause: two separate processes, each in its own process group --------

#[test]
fn refuses_two_workers_that_are_one_process() {
    let mut o = processes();
    o.workers[1].worker_host_pid = o.workers[0].worker_host_pid;
    assert_fails(
        &decide::separate_processes(&o),
        "both workers are one process",
    );
}

#[test]
fn refuses_two_workers_in_one_process_group() {
    let mut o = processes();
    o.workers[1].worker_pgid = 100;
    assert_fails(
        &decide::separate_processes(&o),
        "both workers are in process group 100",
    );
}

#[test]
fn refuses_a_spawned_worker_that_does_not_lead_its_group() {
    let mut o = processes();
    o.workers[0].spawned_pgid = Some(10);
    assert_fails(
        &decide::separate_processes(&o),
        "worker a's spawned process 100 does not lead its own process group",
    );
}

#[test]
fn refuses_a_worker_in_the_harnesss_process_group() {
    let mut o = processes();
    o.workers[1].worker_pgid = 10;
    assert_fails(
        &decide::separate_processes(&o),
        "worker b shares the harness's process group",
    );
}

#[test]
fn refuses_two_hubs_on_one_port() {
    let mut o = processes();
    o.workers[1].hub_port = o.workers[0].hub_port;
    assert_fails(
        &decide::separate_processes(&o),
        "both hubs report the same port",
    );
}

#[test]
fn under_bwrap_refuses_a_worker_in_the_harnesss_or_a_shared_pid_namespace() {
    let mut o = processes();
    o.workers[0].pid_namespace = Some("pid:[1]".into());
    assert_fails(
        &decide::separate_processes(&o),
        "worker a runs in the harness's pid namespace",
    );
    let mut o = processes();
    o.workers[1].pid_namespace = o.workers[0].pid_namespace.clone();
    assert_fails(
        &decide::separate_processes(&o),
        "both workers share one pid namespace",
    );
    // The process backend makes no namespace claim.
    o.new_pid_namespace = false;
    o.workers[0].pid_namespace = Some("pid:[1]".into());
    o.workers[1].pid_namespace = Some("pid:[1]".into());
    assert_eq!(decide::separate_processes(&o).result, CheckResult::Pass);
}

#[test]
fn refuses_fewer_than_two_workers() {
    let mut o = processes();
    o.workers.pop();
    assert_fails(
        &decide::separate_processes(&o),
        "expected two workers, observed 1",
    );
}

// ----- clause: the SDK's own daemon hub and client --------------------------

#[test]
fn refuses_a_hub_imported_from_another_copy_of_the_sdk() {
    let mut o = hub();
    o.workers[1].package_is_verified = false;
    o.workers[1].sdk_package = "/tmp/shadow/langbot_plugin".into();
    assert_fails(
        &decide::sdk_daemon_hub(&o),
        "worker b imported the hub from /venv/lib/python3.12/site-packages/langbot_plugin/api/agent_tools/daemon.py \
         (package /tmp/shadow/langbot_plugin), expected the verified SDK at",
    );
    let mut o = hub();
    o.workers[0].hub_file_in_verified = false;
    assert_fails(
        &decide::sdk_daemon_hub(&o),
        "worker a imported the hub from",
    );
}

#[test]
fn refuses_a_hub_or_client_that_is_not_the_sdks_class() {
    for f in [
        (|r: &mut HubRow| r.hub_class = "MyHub".into()) as fn(&mut HubRow),
        |r| r.hub_module = "my.daemon".into(),
        |r| r.client_class = "MyClient".into(),
    ] {
        let mut o = hub();
        f(&mut o.workers[0]);
        assert_fails(
            &decide::sdk_daemon_hub(&o),
            "expected langbot_plugin.api.agent_tools.daemon.AgentRuntimeDaemonHub and AgentRuntimeDaemonClient",
        );
    }
}

#[test]
fn refuses_a_worker_that_saw_another_sdk_version() {
    let mut o = hub();
    o.workers[0].sdk_version = "0.6.0b4".into();
    assert_fails(
        &decide::sdk_daemon_hub(&o),
        "worker a saw langbot-plugin 0.6.0b4, sdk-record verified 0.6.0b5",
    );
    o.verified_version = None;
    assert_eq!(decide::sdk_daemon_hub(&o).result, CheckResult::Pass);
}

// ----- clause: listener/token separation ------------------------------------

#[test]
fn refuses_a_token_accepted_at_the_other_workers_listener() {
    let mut p = probes();
    p[1].result = accepted(); // b's token at a's listener
    let [sep, own] = decide::tokens(&p);
    assert_fails(
        &sep,
        "worker b's token at worker a's listener (port 4100): expected refusal with close code 1008, found \
         accepted (daemon.ready)",
    );
    assert!(sep.detail.contains("start it with its own non-empty token"));
    assert_eq!(sep.consequence_of, None);
    assert_eq!(own.result, CheckResult::Pass);
}

#[test]
fn refuses_an_empty_token_accepted_or_a_refusal_with_another_close_code() {
    let mut p = probes();
    p[2].result = accepted();
    assert_fails(
        &decide::tokens(&p)[0],
        "an empty token at worker a's listener",
    );
    let mut p = probes();
    p[3].result = HelloOutcome::Refused {
        close_code: 1000,
        reason: "bye".into(),
    };
    let [sep, own] = decide::tokens(&p);
    assert_fails(&sep, "found closed with code 1000 (bye)");
    // Every own token was accepted: the wrong close code is a finding of
    // its own, not a consequence of a hub that answered nobody.
    assert_eq!(own.result, CheckResult::Pass);
    assert_eq!(sep.consequence_of, None);
}

#[test]
fn an_accepted_cross_token_is_its_own_finding_even_when_an_own_token_failed() {
    let mut p = probes();
    p[1].result = accepted(); // b's token at a's listener
    p[4].result = refused(); // b's own token at b's listener
    let [sep, own] = decide::tokens(&p);
    assert_fails(&own, "worker b's own token at its listener");
    assert_fails(&sep, "worker b's token at worker a's listener");
    assert_eq!(
        sep.consequence_of, None,
        "a hub that accepted the other worker's token is not explained by a refused own token"
    );
}

#[test]
fn refuses_an_own_token_that_is_not_accepted() {
    let mut p = probes();
    p[4].result = refused(); // b's own token at b's listener
    let [sep, own] = decide::tokens(&p);
    assert_eq!(sep.result, CheckResult::Pass);
    assert_fails(
        &own,
        "worker b's own token at its listener (port 4101): closed with code 1008 (invalid token); without an \
         accepted own token the refusals prove nothing",
    );
}

#[test]
fn a_hub_that_answers_nobody_is_one_finding_under_the_own_token_check() {
    let mut p = probes();
    for probe in &mut p {
        probe.result = HelloOutcome::Error {
            error: "connection refused".into(),
        };
    }
    let [sep, own] = decide::tokens(&p);
    assert_fails(&own, "error: connection refused");
    assert_eq!(own.consequence_of, None);
    assert_eq!(sep.result, CheckResult::Fail);
    assert_eq!(sep.consequence_of.as_deref(), Some("listener-own-token"));
}

// ----- clause: an environment cleared but for an allowlist, no canary -------

#[test]
fn refuses_the_harness_canary_in_a_grandchild() {
    let mut o = environment();
    o.processes[2].leaked_from_harness = vec![CANARY_NAME.into()];
    assert_fails(
        &decide::environment(&o),
        "worker a: 1 of the harness's variables (VCC_ISOLATION_CANARY) reached its job grandchild (pid 104)",
    );
}

#[test]
fn refuses_any_other_harness_variable_and_names_at_most_five() {
    let mut o = environment();
    o.processes[3].leaked_from_harness = (1..=7).map(|i| format!("SECRET_{i}")).collect();
    assert_fails(
        &decide::environment(&o),
        "worker b: 7 of the harness's variables (SECRET_1, SECRET_2, SECRET_3, SECRET_4, SECRET_5 and 2 more)",
    );
}

#[test]
fn refuses_a_variable_outside_the_workers_allowlist() {
    let mut o = environment();
    o.processes[0].unexpected = vec!["AWS_PROFILE".into()];
    assert_fails(
        &decide::environment(&o),
        "worker a: unexpected variables [\"AWS_PROFILE\"] in the worker's environment",
    );
}

#[test]
fn refuses_an_unreadable_environment_and_an_escaped_marked_process_with_a_leak() {
    let mut o = environment();
    o.unreadable = vec![env_row("b", 205, "job child")];
    assert_fails(
        &decide::environment(&o),
        "worker b: cannot read /proc/205/environ of its job child",
    );
    let mut o = environment();
    o.processes.push(EnvRow {
        worker: None,
        leaked_from_harness: vec![CANARY_NAME.into()],
        ..env_row("x", 999, "marked, outside the worker trees")
    });
    assert_fails(
        &decide::environment(&o),
        "process 999 carrying the run's marker holds 1 of the harness's variables (VCC_ISOLATION_CANARY)",
    );
}

// ----- clause: independent cancellation, A's group gone by /proc ------------

#[test]
fn refuses_a_cancelled_job_whose_group_still_runs() {
    let mut o = cancel();
    o.quiescent = false;
    o.live_after_wait = vec![104];
    let c = decide::cancel_quiescence(&o);
    assert_fails(
        &c,
        "worker a's job (process group 103: child 103, grandchild 104) still had live processes [104] 5 s after \
         its cancellation",
    );
    assert!(c
        .detail
        .contains("fix the daemon's handling of the hub's run.cleanup"));
    o.escalation = vec![Stopped {
        pid: 104,
        stopped_by: "KILL".into(),
    }];
    o.needed_kill = vec![104];
    assert_fails(
        &decide::cancel_quiescence(&o),
        "pids [104] ignored TERM and needed KILL",
    );
    o.needed_kill = vec![];
    assert_fails(&decide::cancel_quiescence(&o), "TERM stopped them");
}

#[test]
fn refuses_a_job_process_that_left_its_group() {
    let mut o = cancel();
    o.quiescent = false;
    o.escaped_group = vec![ProcRow {
        pgid: 555,
        sid: 555,
        still_running: true,
        ..proc_row(104, 103)
    }];
    assert_fails(
        &decide::cancel_quiescence(&o),
        "pid 104 left the job's process group (now group 555, session 555) and still runs",
    );
}

#[test]
fn refuses_when_b_does_not_run_on_to_its_expected_output() {
    type Case = (fn(&mut IndependenceObs), &'static str);
    let cases: Vec<Case> = vec![
        (
            |o| o.b.finish_error = Some("timed out".into()),
            "worker b's job did not finish: timed out",
        ),
        (|o| o.b.failed = Some("boom".into()), "worker b's job failed: boom"),
        (
            |o| {
                o.b.seqs.pop();
            },
            "worker b's outputs had sequence 79 numbers, expected 0..80 in order",
        ),
        (
            |o| o.b.seqs.swap(0, 1),
            "worker b's outputs had sequence 80 numbers, expected 0..80 in order",
        ),
        (
            |o| o.b.completion = vec![Some("fixture reply nonce-a-1 after 80 events".into())],
            "worker b's completion was [Some(\"fixture reply nonce-a-1 after 80 events\")]",
        ),
        (|o| o.b.completion.push(None), "worker b's completion was"),
        (
            |o| {
                o.b.group_quiescent_after_finish = false;
                o.b.live_after_wait = vec![204];
            },
            "worker b's finished job left live processes [204] in group 203",
        ),
        (
            |o| o.b.running_at_cancel = false,
            "worker b's job had already finished (4 outputs) when a's was cancelled, so independence was not observed",
        ),
        (|o| o.a.finished_at_cancel = true, "worker a's job was not mid-run when cancelled"),
        (|o| o.a.completed = true, "worker a's job was not mid-run when cancelled"),
        (
            |o| o.a.outputs_at_cancel = JOB_EVENTS as usize,
            "worker a's job was not mid-run when cancelled",
        ),
    ];
    for (f, needle) in cases {
        let mut o = independence();
        f(&mut o);
        assert_fails(&decide::independent_cancellation(&o), needle);
    }
    let mut o = independence();
    o.a.outputs_at_cancel = JOB_EVENTS as usize - 1;
    assert_eq!(
        decide::independent_cancellation(&o).result,
        CheckResult::Pass
    );
}

// ----- clause: same display and conversation id handled apart ---------------

#[test]
fn refuses_events_routed_to_the_other_worker() {
    let mut o = routing();
    o.workers[0].foreign_events = 2;
    let c = decide::routing(&o);
    assert_fails(&c, "worker a received 2 event(s) of worker b's job");
    assert!(c
        .detail
        .contains("must never route one's events to the other"));
    let mut o = routing();
    o.workers[1].mismatched_events = 1;
    assert_fails(
        &decide::routing(&o),
        "worker b received 1 event(s) not from its own job",
    );
    let mut o = routing();
    o.workers[1].foreign_events = 3;
    assert_fails(
        &decide::routing(&o),
        "worker b received 3 event(s) of worker a's job",
    );
}

#[test]
fn refuses_hubs_with_other_daemons_or_ids() {
    let mut o = routing();
    o.workers[0].hub_daemons = vec![DISPLAY_ID.into(), "intruder".into()];
    assert_fails(&decide::routing(&o), "worker a's hub had daemons");
    let mut o = routing();
    o.workers[1].daemon_id = "other-display".into();
    assert_fails(
        &decide::routing(&o),
        "(client id other-display), expected exactly [coding-runner-display-1]",
    );
    let mut o = routing();
    o.workers[1].status_after_jobs = Some(Status {
        jobs: Default::default(),
        daemons: vec![],
    });
    assert_fails(
        &decide::routing(&o),
        "worker b's hub listed daemons [] after the jobs",
    );
}

#[test]
fn refuses_jobs_in_one_child_or_grandchild_process() {
    let mut o = routing();
    o.workers[1].child_host_pid = o.workers[0].child_host_pid;
    assert_fails(
        &decide::routing(&o),
        "both jobs report the same child process Some(103)",
    );
    let mut o = routing();
    o.workers[1].grandchild_host_pid = o.workers[0].grandchild_host_pid;
    assert_fails(
        &decide::routing(&o),
        "both jobs report the same grandchild process Some(104)",
    );
}

#[test]
fn refuses_fixture_events_not_labelled_as_a_fixture() {
    let mut o = routing();
    o.workers[0].labelled = false;
    assert_fails(
        &decide::routing(&o),
        "worker a's fixture events are not all labelled as a local protocol fixture",
    );
}

// ----- clause: each worker's root its own ------------------------------------

#[test]
fn under_bwrap_a_readable_foreign_root_fails_and_under_process_it_warns() {
    let mut o = visibility(true);
    o.peeks[1].answer = peek(true);
    assert_fails(
        &decide::root_visibility(&o),
        "worker(s) [\"b\"] could read the other worker's root inside bwrap",
    );
    let mut o = visibility(false);
    o.peeks[0].answer = peek(true);
    let c = decide::root_visibility(&o);
    assert_eq!(c.result, CheckResult::Warn);
    assert!(
        c.detail.contains("Use --isolation bwrap to hide them"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_writes_outside_the_workers_roots_and_foreign_files() {
    let mut o = roots_obs();
    o.outside_roots = vec![Change {
        path: "extracted/a/x".into(),
        change: "added",
    }];
    let c = decide::private_roots(&o, false);
    assert_fails(
        &c,
        "changes outside the workers' roots: added extracted/a/x",
    );
    // A write elsewhere is a finding even when the exercise failed.
    assert_eq!(decide::private_roots(&o, true).consequence_of, None);
    let mut o = roots_obs();
    o.workers[1].foreign_files = vec!["roots/worker-isolation/b/data/x".into()];
    assert_fails(
        &decide::private_roots(&o, false),
        "worker b's root holds files written by worker a: [\"roots/worker-isolation/b/data/x\"]",
    );
}

#[test]
fn beside_other_gates_only_their_folders_are_left_out_and_the_reason_is_recorded() {
    let o = roots_obs_beside_lbp_build();
    let areas: Vec<&str> = o.excluded.iter().map(|a| a.area.as_str()).collect();
    // Exactly lbp-build's own folders and its catalogue `writes`.
    assert_eq!(
        areas,
        [
            "logs/lbp-build",
            "roots/lbp-build",
            "packages",
            "roots/pycache"
        ]
    );
    assert!(o.excluded.iter().all(|a| a.written_by == ["lbp-build"]
        && a.why
            .starts_with("written by lbp-build (gates/catalogue.toml")));
    let c = decide::private_roots(&o, false);
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail.contains(
            "but in the 4 folder(s) written by the gates that ran beside the workers (lbp-build"
        ),
        "{}",
        c.detail
    );
    let observed = c.observed.as_ref().unwrap();
    assert_eq!(observed["gates_beside"], json!(["lbp-build"]));
    assert_eq!(observed["excluded"][2]["area"], "packages");
    assert_eq!(observed["excluded_changes"], 12);
    // A folder written by several gates names each of them.
    let shared = super::teardown::excluded_areas(&["lbp-build".into(), "suites".into()]);
    let cache = shared.iter().find(|a| a.area == "roots/pycache").unwrap();
    assert_eq!(cache.written_by, ["lbp-build", "suites"]);
    // A gate beside that the catalogue does not know leaves nothing out.
    assert!(super::teardown::excluded_areas(&["no-such-gate".into()]).is_empty());
}

#[test]
fn refuses_a_worker_tagged_file_in_a_folder_left_out_for_a_gate_beside() {
    let mut o = roots_obs_beside_lbp_build();
    o.tagged_in_excluded = vec![TaggedFile {
        path: "roots/pycache/escaped".into(),
        worker: "a".into(),
    }];
    let c = decide::private_roots(&o, false);
    assert_fails(
        &c,
        "files carrying a worker's tag in folders of the gates that ran beside the workers (lbp-build): \
         roots/pycache/escaped (worker a)",
    );
    // Not a consequence of an exercise that stopped early: the worker wrote it.
    assert_eq!(decide::private_roots(&o, true).consequence_of, None);
    // And a change outside the left-out folders still fails beside other gates.
    let mut o = roots_obs_beside_lbp_build();
    o.outside_roots = vec![Change {
        path: "escaped".into(),
        change: "added",
    }];
    assert_fails(
        &decide::private_roots(&o, false),
        "changes outside the workers' roots: added escaped",
    );
}

#[test]
fn refuses_a_worker_whose_home_tmp_or_data_does_not_carry_its_tag() {
    let mut o = roots_obs();
    o.workers[0].missing_tags = vec!["/ev/roots/worker-isolation/a/home/.vcc-worker".into()];
    assert_fails(
        &decide::private_roots(&o, false),
        "worker a did not write its tag where its HOME, TMPDIR and data root point",
    );
    let mut o = roots_obs();
    o.workers[1].job_child_files = 0;
    assert_fails(
        &decide::private_roots(&o, false),
        "worker b's job child wrote nothing under its data root",
    );
}

#[test]
fn an_exercise_that_stopped_early_is_the_cause_of_missing_writes() {
    let mut obs = good();
    obs.protocol_error = Some("waiting for both workers' `ready`: timed out after 90 s".into());
    obs.processes = None;
    obs.hub = None;
    obs.tokens = None;
    obs.environment = None;
    obs.cancel = None;
    obs.independence = None;
    obs.routing = None;
    obs.visibility = None;
    let mut r = roots_obs();
    r.workers[0].job_child_files = 0;
    r.workers[1].job_child_files = 0;
    obs.roots = Some(r);
    let checks = decide(&obs);
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["backend", "worker-protocol", "teardown", "private-roots"]
    );
    let p = find(&checks, "worker-protocol");
    assert_fails(
        p,
        "the workers did not complete the exercise: waiting for both workers' `ready`: timed out after 90 s; see \
         /ev/logs/worker-isolation",
    );
    assert_eq!(p.observed.as_ref().unwrap()["completed"], false);
    let r = find(&checks, "private-roots");
    assert_eq!(r.result, CheckResult::Fail);
    assert_eq!(r.consequence_of.as_deref(), Some("worker-protocol"));
}

// ----- clause: quiescence and nothing left running ---------------------------

fn survivor(pid: i32) -> SurvivorRow {
    SurvivorRow {
        pid,
        ppid: 1,
        pgid: 103,
        sid: 100,
        state: "S".into(),
        matched_by: vec!["pgid".into(), "env-marker".into()],
        cwd: Some("/ev/roots/worker-isolation/a/data".into()),
        cmdline: "python -c ...".into(),
    }
}

#[test]
fn refuses_residue_found_by_the_survey_and_names_how_it_was_stopped() {
    let mut o = teardown();
    o.verdict = "RESIDUE".into();
    o.survey.found = vec![survivor(104)];
    o.survey.stopped = vec![Stopped {
        pid: 104,
        stopped_by: "TERM".into(),
    }];
    let c = decide::teardown(&o);
    assert_fails(
        &c,
        "RESIDUE: 1 process(es) tied to the run survived the workers' stop: pid 104 (pgid 103, sid 100; matched \
         by pgid+env-marker; stopped by TERM)",
    );
    assert!(c
        .detail
        .contains("keep children in the job's process group"));
    assert_eq!(c.observed.as_ref().unwrap()["verdict"], "RESIDUE");
    o.survey.remaining_after_kill = vec![survivor(104)];
    assert_fails(
        &decide::teardown(&o),
        "RESIDUE: pids [104] still run after TERM, grace and KILL",
    );
}

#[test]
fn refuses_a_worker_that_needed_kill_or_did_not_answer_stop() {
    let mut o = teardown();
    o.workers[0].kill_needed = true;
    assert_fails(
        &decide::teardown(&o),
        "worker a did not exit after `stop` and ignored TERM: it needed KILL",
    );
    let mut o = teardown();
    o.workers[1].exited_after_stop = false;
    assert_fails(
        &decide::teardown(&o),
        "worker b did not exit after `stop`; TERM stopped it",
    );
    let mut o = teardown();
    o.workers[1].answered_stopped = false;
    assert_fails(
        &decide::teardown(&o),
        "worker b exited without answering `stopped`",
    );
}

// ----- clause: no harness canary (its installation) --------------------------

#[test]
fn the_canary_is_installed_only_before_any_thread_and_the_gate_fails_clearly_without_it() {
    // The test harness runs threads: installing now would race with them, so
    // it is refused, and the gate reports why instead of running unguarded.
    install_canary();
    let err = installed_canary().unwrap_err();
    assert!(
        err.starts_with(
            "the harness canary VCC_ISOLATION_CANARY could not be installed at process start"
        ) && err.contains("must run before any thread exists"),
        "{err}"
    );
    assert!(std::env::var(CANARY_NAME).is_err());
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_the_verified_sdk_is_an_error_not_a_pass() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let e = testing::run(&WorkerIsolation, &testing::ctx(evidence.path()))
        .0
        .unwrap_err();
    assert!(e.contains("run sdk-record first"), "{e}");
    assert_eq!(WorkerIsolation.id(), "worker-isolation");
    assert_eq!(WorkerIsolation.headline_check(), Some("backend"));
}

#[test]
fn up_to_five_names_are_listed_then_how_many_more() {
    let names: Vec<String> = (1..=6).map(|i| format!("n{i}")).collect();
    assert_eq!(decide::first_names(&names[..5]), "n1, n2, n3, n4, n5");
    assert_eq!(decide::first_names(&names), "n1, n2, n3, n4, n5 and 1 more");
    assert_eq!(decide::first_names(&[]), "");
}

#[test]
fn the_canary_counts_only_while_the_environment_still_holds_its_value() {
    let v = "vcc-canary-0123".to_string();
    assert_eq!(
        super::still_installed(Some(v.clone()), v.clone()),
        Ok(v.clone())
    );
    for changed in [
        None,
        Some("vcc-canary-other".to_string()),
        Some(String::new()),
    ] {
        let e = super::still_installed(changed, v.clone()).unwrap_err();
        assert!(e.contains("no longer in the harness's environment"), "{e}");
    }
}
