//! What the `worker-isolation` gate observed, check by check, as plain
//! data, and the pure decisions over it: no process, file or clock is
//! touched here. Each observation value is also the check's `observed`.

use super::roots::Change;
use super::token_probe::HelloOutcome;
use super::worker::{Peek, Status};
use super::{CONVERSATION_ID, DISPLAY_ID, GATE, JOB_EVENTS, QUIESCE_TIMEOUT};
use crate::evidence::Check;
use crate::process::survey::{Stopped, Survivor};

use serde::Serialize;
use serde_json::json;

/// `separate-processes`: the OS's view of both workers.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProcessesObs {
    /// `process` or `bwrap`.
    pub backend: String,
    /// The backend gives each worker a new pid namespace.
    pub new_pid_namespace: bool,
    /// The harness's pid.
    pub harness_pid: i32,
    /// The harness's process group.
    pub harness_pgid: Option<i32>,
    /// The harness's pid namespace (`pid:[...]`).
    pub harness_pid_namespace: Option<String>,
    /// One row per worker, `a` then `b`.
    pub workers: Vec<WorkerProcess>,
}

/// One worker as a process.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WorkerProcess {
    /// `a` or `b`.
    pub worker: String,
    /// The pid the harness spawned (bwrap, or the interpreter).
    pub spawned_pid: i32,
    /// The spawned process's group.
    pub spawned_pgid: Option<i32>,
    /// The worker interpreter's host pid.
    pub worker_host_pid: i32,
    /// Its pid in its own namespace.
    pub worker_pid_in_namespace: i32,
    /// Its process group.
    pub worker_pgid: i32,
    /// Its session.
    pub worker_sid: i32,
    /// Its pid namespace.
    pub pid_namespace: Option<String>,
    /// The hub's endpoint.
    pub hub_endpoint: String,
    /// The hub's port.
    pub hub_port: u16,
}

/// `separate-processes`: two processes, each leading its own group, neither
/// in the harness's group (nor, under bwrap, its pid namespace), two ports.
pub(crate) fn separate_processes(o: &ProcessesObs) -> Check {
    let mut problems = Vec::new();
    for w in &o.workers {
        if w.spawned_pgid != Some(w.spawned_pid) {
            problems.push(format!(
                "worker {}'s spawned process {} does not lead its own process group",
                w.worker, w.spawned_pid
            ));
        }
        if Some(w.worker_pgid) == o.harness_pgid {
            problems.push(format!(
                "worker {} shares the harness's process group",
                w.worker
            ));
        }
        if o.new_pid_namespace && w.pid_namespace == o.harness_pid_namespace {
            problems.push(format!(
                "worker {} runs in the harness's pid namespace",
                w.worker
            ));
        }
    }
    let observed = serde_json::to_value(o).expect("plain data serialises");
    let [a, b] = o.workers.as_slice() else {
        return Check::fail(
            "separate-processes",
            None,
            format!(
                "expected two workers, observed {}; see DIR/logs/{GATE}/worker-*.cmd",
                o.workers.len()
            ),
        )
        .with_observed(observed);
    };
    if a.worker_host_pid == b.worker_host_pid {
        problems.push("both workers are one process".into());
    }
    if a.worker_pgid == b.worker_pgid {
        problems.push(format!(
            "both workers are in process group {}",
            a.worker_pgid
        ));
    }
    if a.hub_port == b.hub_port {
        problems.push("both hubs report the same port".into());
    }
    if o.new_pid_namespace && a.pid_namespace == b.pid_namespace {
        problems.push("both workers share one pid namespace".into());
    }
    if problems.is_empty() {
        Check::pass(
            "separate-processes",
            None,
            format!(
                "workers a (pid {}) and b (pid {}) are separate processes in separate process groups \
                 ({} and {}), each hub on its own loopback port ({})",
                a.worker_host_pid, b.worker_host_pid, a.worker_pgid, b.worker_pgid, o.backend
            ),
        )
    } else {
        Check::fail(
            "separate-processes",
            None,
            format!(
                "expected two separate worker processes, each in its own process group: {}; see \
                 DIR/logs/{GATE}/worker-*.cmd",
                problems.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

/// `sdk-daemon-hub`: which hub each worker imported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct HubObs {
    /// The verified SDK package directory (sdk-record).
    pub verified_package: String,
    /// The version sdk-record verified, if recorded.
    pub verified_version: Option<String>,
    /// One row per worker.
    pub workers: Vec<HubRow>,
}

/// What one worker reported about its hub.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct HubRow {
    /// `a` or `b`.
    pub worker: String,
    /// `importlib.metadata.version("langbot-plugin")` in the worker.
    pub sdk_version: String,
    /// The package directory it imported.
    pub sdk_package: String,
    /// The hub's module.
    pub hub_module: String,
    /// The hub's class.
    pub hub_class: String,
    /// The daemon client's class.
    pub client_class: String,
    /// The hub module's file.
    pub hub_file: String,
    /// `sdk_package`, canonicalised, is the verified package.
    pub package_is_verified: bool,
    /// `hub_file`, canonicalised, is inside the verified package.
    pub hub_file_in_verified: bool,
}

/// `sdk-daemon-hub`: both workers ran the verified SDK's own hub and client.
pub(crate) fn sdk_daemon_hub(o: &HubObs) -> Check {
    let mut problems = Vec::new();
    for r in &o.workers {
        if !r.package_is_verified || !r.hub_file_in_verified {
            problems.push(format!(
                "worker {} imported the hub from {} (package {}), expected the verified SDK at {}",
                r.worker, r.hub_file, r.sdk_package, o.verified_package
            ));
        }
        if r.hub_module != "langbot_plugin.api.agent_tools.daemon"
            || r.hub_class != "AgentRuntimeDaemonHub"
            || r.client_class != "AgentRuntimeDaemonClient"
        {
            problems.push(format!(
                "worker {} used {}.{} / {}, expected langbot_plugin.api.agent_tools.daemon.AgentRuntimeDaemonHub \
                 and AgentRuntimeDaemonClient",
                r.worker, r.hub_module, r.hub_class, r.client_class
            ));
        }
        if let Some(v) = &o.verified_version {
            if &r.sdk_version != v {
                problems.push(format!(
                    "worker {} saw langbot-plugin {}, sdk-record verified {v}",
                    r.worker, r.sdk_version
                ));
            }
        }
    }
    Check::from_bool(
        "sdk-daemon-hub",
        None,
        problems.is_empty(),
        if problems.is_empty() {
            format!(
                "both workers run the verified SDK's own daemon hub and daemon client from {}",
                o.verified_package
            )
        } else {
            format!(
                "{}; the workers must import the verified SDK only (check sdk-shadow and the interpreter)",
                problems.join("; ")
            )
        },
    )
    .with_observed(serde_json::to_value(o).expect("plain data serialises"))
}

/// One `daemon.hello` of the harness at one listener.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TokenProbe {
    /// The worker whose listener was probed.
    pub listener: String,
    /// Its port.
    pub port: u16,
    /// Whose token was sent: `a`, `b` or `none` (empty).
    pub token_of: String,
    /// The probe's daemon id.
    pub daemon_id: String,
    /// What the hub did.
    pub result: HelloOutcome,
}

impl TokenProbe {
    fn is_own(&self) -> bool {
        self.token_of == self.listener
    }
}

/// Each own-token probe not accepted, as a sentence.
fn own_problems(own: &[&TokenProbe]) -> Vec<String> {
    own.iter()
        .filter(|p| !matches!(p.result, HelloOutcome::Accepted { .. }))
        .map(|p| {
            format!(
                "worker {}'s own token at its listener (port {}): {}",
                p.listener,
                p.port,
                describe_outcome(&p.result)
            )
        })
        .collect()
}

/// Each cross-token (or empty-token) probe not refused with close code
/// 1008, as a sentence.
fn cross_problems(cross_bad: &[&&TokenProbe]) -> Vec<String> {
    cross_bad
        .iter()
        .map(|p| {
            format!(
                "{} at worker {}'s listener (port {}): expected refusal with close code 1008, found {}",
                if p.token_of == "none" {
                    "an empty token".to_string()
                } else {
                    format!("worker {}'s token", p.token_of)
                },
                p.listener,
                p.port,
                describe_outcome(&p.result)
            )
        })
        .collect()
}

/// `listener-token-separation` and `listener-own-token`, from every probe.
/// When no own token was accepted, a cross probe that failed without being
/// accepted is a consequence of that (the hub answered nobody), not a
/// separate finding.
pub(crate) fn tokens(probes: &[TokenProbe]) -> [Check; 2] {
    let (own, cross): (Vec<&TokenProbe>, Vec<&TokenProbe>) =
        probes.iter().partition(|p| p.is_own());
    let own_problems = own_problems(&own);
    let cross_bad: Vec<&&TokenProbe> = cross
        .iter()
        .filter(|p| {
            !matches!(
                p.result,
                HelloOutcome::Refused {
                    close_code: 1008,
                    ..
                }
            )
        })
        .collect();
    let cross_problems = cross_problems(&cross_bad);
    let separation = if cross_problems.is_empty() {
        Check::pass(
            "listener-token-separation",
            None,
            "A's token at B's listener, B's token at A's listener and an empty token at either were \
             refused with close code 1008 (invalid token)",
        )
    } else {
        let check = Check::fail(
            "listener-token-separation",
            None,
            format!(
                "{}; each worker's hub must accept only its own token: start it with its own \
                 non-empty token (an empty token disables the SDK hub's check)",
                cross_problems.join("; ")
            ),
        );
        let accepted = cross_bad
            .iter()
            .any(|p| matches!(p.result, HelloOutcome::Accepted { .. }));
        if !own_problems.is_empty() && !accepted {
            check.consequence_of("listener-own-token")
        } else {
            check
        }
    }
    .with_observed(json!({ "probes": cross }));
    let own_check = if own_problems.is_empty() {
        Check::pass(
            "listener-own-token",
            None,
            "positive control: each worker's own token at its own listener was answered with daemon.ready",
        )
    } else {
        Check::fail(
            "listener-own-token",
            None,
            format!(
                "{}; without an accepted own token the refusals prove nothing: check the worker's \
                 hub and DIR/logs/{GATE}/worker-*.stderr",
                own_problems.join("; ")
            ),
        )
    }
    .with_observed(json!({ "probes": own }));
    [separation, own_check]
}

pub(super) fn describe_outcome(o: &HelloOutcome) -> String {
    match o {
        HelloOutcome::Accepted { reply } => format!("accepted ({reply})"),
        HelloOutcome::Refused { close_code, reason } => {
            format!("closed with code {close_code} ({reason})")
        }
        HelloOutcome::Error { error } => format!("error: {error}"),
    }
}

/// `environment-allowlist`: the environments read below each worker.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EnvironmentObs {
    /// The canary's name.
    pub canary_variable: String,
    /// How many of the harness's own `NAME=value` entries were watched.
    pub harness_variables_watched: usize,
    /// Worker a's allowed variable names.
    pub allowlist: Vec<String>,
    /// Every process read.
    pub processes: Vec<EnvRow>,
    /// Live processes whose environment could not be read.
    pub unreadable: Vec<EnvRow>,
}

/// One process's environment, by name only (values never leave the OS).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EnvRow {
    /// The worker it is below; `None`: marked, outside the worker trees.
    pub worker: Option<String>,
    /// Host pid.
    pub pid: i32,
    /// `worker`, `job child`, `job grandchild`, `bwrap`, `other descendant`,
    /// `marked, outside the worker trees`.
    pub role: String,
    /// Its variable names.
    pub names: Vec<String>,
    /// Names whose exact `NAME=value` is the harness's own (the canary first).
    pub leaked_from_harness: Vec<String>,
    /// For a worker: names outside its allowlist.
    pub unexpected: Vec<String>,
}

/// `environment-allowlist`: no harness variable in any process below a
/// worker; a worker's own environment holds only allowlisted names.
pub(crate) fn environment(o: &EnvironmentObs) -> Check {
    let mut problems = Vec::new();
    for r in &o.unreadable {
        problems.push(format!(
            "worker {}: cannot read /proc/{}/environ of its {}",
            r.worker.as_deref().unwrap_or("?"),
            r.pid,
            r.role
        ));
    }
    for r in &o.processes {
        if !r.leaked_from_harness.is_empty() {
            problems.push(match &r.worker {
                Some(w) => format!(
                    "worker {w}: {} of the harness's variables ({}) reached its {} (pid {})",
                    r.leaked_from_harness.len(),
                    first_names(&r.leaked_from_harness),
                    r.role,
                    r.pid
                ),
                None => format!(
                    "process {} carrying the run's marker holds {} of the harness's variables ({})",
                    r.pid,
                    r.leaked_from_harness.len(),
                    first_names(&r.leaked_from_harness)
                ),
            });
        }
        if !r.unexpected.is_empty() {
            problems.push(format!(
                "worker {}: unexpected variables {:?} in the worker's environment",
                r.worker.as_deref().unwrap_or("?"),
                r.unexpected
            ));
        }
    }
    let observed = serde_json::to_value(o).expect("plain data serialises");
    if problems.is_empty() {
        Check::pass(
            "environment-allowlist",
            None,
            format!(
                "neither the harness canary {} nor any other variable of the harness's own environment (other \
                 than the allowlisted names) is in any of the {} processes of the two workers' trees (workers, \
                 job children, grandchildren); each worker's environment holds only allowlisted variables",
                o.canary_variable,
                o.processes.len()
            ),
        )
    } else {
        Check::fail(
            "environment-allowlist",
            None,
            format!(
                "{}; a worker and everything it starts must get only the allowlisted environment, \
                 never the harness's: fix what copied it",
                problems.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

/// Up to five names, then "and N more".
pub(super) fn first_names(names: &[String]) -> String {
    let mut s = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 5 {
        s.push_str(&format!(" and {} more", names.len() - 5));
    }
    s
}

/// A process as the OS showed it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct ProcRow {
    /// Host pid.
    pub host_pid: i32,
    /// Pid in its own namespace.
    pub pid_in_namespace: i32,
    /// Process group.
    pub pgid: i32,
    /// Session.
    pub sid: i32,
    /// Still running (not exited, not a zombie).
    pub still_running: bool,
    /// State letter now, if the same process is still listed.
    pub state_now: Option<String>,
}

/// `cancel-quiescence`: A's job cancelled mid-run, watched in `/proc`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CancelObs {
    /// Always `a`.
    pub worker: String,
    /// The job's process group.
    pub job_pgid: i32,
    /// The job's child.
    pub child: ProcRow,
    /// The job's grandchild.
    pub grandchild: ProcRow,
    /// Milliseconds until the worker said `job.cancelled`.
    pub worker_acknowledged_ms: u64,
    /// The worker's word on the job's state.
    pub worker_state: Option<String>,
    /// The group had no live member within the wait.
    pub quiescent: bool,
    /// Milliseconds waited.
    pub waited_ms: u64,
    /// `kill(-pgid, 0)` succeeded after the wait (zombies count).
    pub group_answers_signal_0: bool,
    /// Live pids after the wait.
    pub live_after_wait: Vec<i32>,
    /// How the gate stopped what lingered.
    pub escalation: Vec<Stopped>,
    /// Pids that needed KILL.
    pub needed_kill: Vec<i32>,
    /// Child or grandchild that left the job's group and still runs.
    pub escaped_group: Vec<ProcRow>,
}

/// `cancel-quiescence`: A's cancelled job's process group emptied.
pub(crate) fn cancel_quiescence(o: &CancelObs) -> Check {
    let observed = serde_json::to_value(o).expect("plain data serialises");
    if o.quiescent {
        return Check::pass(
            "cancel-quiescence",
            None,
            format!(
                "worker a's cancelled job stopped: its process group {} (child {}, grandchild {}) had no live \
                 member {} ms after the cancellation, as /proc shows",
                o.job_pgid, o.child.host_pid, o.grandchild.host_pid, o.waited_ms
            ),
        )
        .with_observed(observed);
    }
    let mut what = vec![format!(
        "worker a's job (process group {}: child {}, grandchild {}) still had live processes {:?} {} s after \
         its cancellation",
        o.job_pgid,
        o.child.host_pid,
        o.grandchild.host_pid,
        o.live_after_wait,
        QUIESCE_TIMEOUT.as_secs()
    )];
    if !o.escalation.is_empty() {
        what.push(format!(
            "the gate sent TERM to the group's live members; {}",
            if o.needed_kill.is_empty() {
                "TERM stopped them".to_string()
            } else {
                format!("pids {:?} ignored TERM and needed KILL", o.needed_kill)
            }
        ));
    }
    for p in &o.escaped_group {
        what.push(format!(
            "pid {} left the job's process group (now group {}, session {}) and still runs; the end-of-run \
             survey looks for it",
            p.host_pid, p.pgid, p.sid
        ));
    }
    Check::fail(
        "cancel-quiescence",
        None,
        format!(
            "{}; a cancelled job must stop its whole process group: fix the daemon's handling of the hub's \
             run.cleanup",
            what.join("; ")
        ),
    )
    .with_observed(observed)
}

/// `independent-cancellation`: what both jobs did around A's cancellation.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct IndependenceObs {
    /// Worker a's job.
    pub a: JobA,
    /// Worker b's job.
    pub b: JobB,
}

/// Worker a's job around its cancellation.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct JobA {
    /// Outputs received when the cancel was sent.
    pub outputs_at_cancel: usize,
    /// Outputs received in all.
    pub outputs_total: usize,
    /// The job had finished when the cancel was sent.
    pub finished_at_cancel: bool,
    /// A `run.completed` arrived for it.
    pub completed: bool,
    /// The worker's word on the job's state.
    pub state: Option<String>,
}

/// Worker b's job, which must run on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct JobB {
    /// Still running when a's cancel was sent.
    pub running_at_cancel: bool,
    /// Outputs received when a's cancel was sent.
    pub outputs_at_cancel: usize,
    /// Outputs carrying a sequence number.
    pub outputs_total: usize,
    /// Sequence numbers of its outputs, in arrival order.
    pub seqs: Vec<u64>,
    /// Outputs expected.
    pub expected_outputs: u64,
    /// Its `run.completed` outputs.
    pub completion: Vec<Option<String>>,
    /// The completion expected.
    pub expected_completion: String,
    /// Waiting for its `job.finished` failed with this.
    pub finish_error: Option<String>,
    /// The worker reported the job failed.
    pub failed: Option<String>,
    /// Its process group.
    pub job_pgid: i32,
    /// The group emptied after the job finished.
    pub group_quiescent_after_finish: bool,
    /// Live pids after the wait.
    pub live_after_wait: Vec<i32>,
    /// Milliseconds waited.
    pub waited_ms: u64,
}

/// `independent-cancellation`: cancelling A's job mid-run left B's job
/// running to its expected output.
pub(crate) fn independent_cancellation(o: &IndependenceObs) -> Check {
    let (a, b) = (&o.a, &o.b);
    let mut problems = Vec::new();
    if let Some(e) = &b.finish_error {
        problems.push(format!("worker b's job did not finish: {e}"));
    }
    if let Some(err) = &b.failed {
        problems.push(format!("worker b's job failed: {err}"));
    }
    let expected_seqs: Vec<u64> = (0..b.expected_outputs).collect();
    if b.seqs != expected_seqs {
        problems.push(format!(
            "worker b's outputs had sequence {} numbers, expected 0..{} in order",
            b.seqs.len(),
            b.expected_outputs
        ));
    }
    if b.completion != vec![Some(b.expected_completion.clone())] {
        problems.push(format!(
            "worker b's completion was {:?}, expected [{:?}]",
            b.completion, b.expected_completion
        ));
    }
    if !b.group_quiescent_after_finish {
        problems.push(format!(
            "worker b's finished job left live processes {:?} in group {}",
            b.live_after_wait, b.job_pgid
        ));
    }
    if !b.running_at_cancel {
        problems.push(format!(
            "worker b's job had already finished ({} outputs) when a's was cancelled, so independence was not \
             observed",
            b.outputs_at_cancel
        ));
    }
    if a.finished_at_cancel || a.completed || a.outputs_at_cancel as u64 >= JOB_EVENTS {
        problems.push("worker a's job was not mid-run when cancelled".into());
    }
    let observed = serde_json::to_value(o).expect("plain data serialises");
    if problems.is_empty() {
        Check::pass(
            "independent-cancellation",
            None,
            format!(
                "cancelling worker a's job mid-run ({} of {JOB_EVENTS} outputs) left worker b's job running ({} \
                 outputs at that moment) to its expected output, all {} events in order; b's job group then \
                 emptied",
                a.outputs_at_cancel, b.outputs_at_cancel, b.expected_outputs
            ),
        )
    } else {
        Check::fail(
            "independent-cancellation",
            None,
            format!(
                "{}; cancelling one worker's job must not touch the other's: see DIR/logs/{GATE}/worker-b.stdout",
                problems.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

/// `same-ids-separate-routing`: where each job's events went.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RoutingObs {
    /// One row per worker.
    pub workers: Vec<RoutingRow>,
    /// The events are a local protocol fixture's.
    pub fixture: String,
}

/// One worker's events.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RoutingRow {
    /// `a` or `b`.
    pub worker: String,
    /// Its last `status` after the jobs.
    pub status_after_jobs: Option<Status>,
    /// The daemon id its client connected with.
    pub daemon_id: String,
    /// The hub's daemons when ready.
    pub hub_daemons: Vec<String>,
    /// The conversation id both jobs used.
    pub conversation_id: String,
    /// Its job's nonce.
    pub nonce: String,
    /// The daemon job id of its `run.started`.
    pub daemon_job_id: Option<String>,
    /// Events received.
    pub events: usize,
    /// Fixture events (`run.output`, `run.completed`) received.
    pub fixture_events: usize,
    /// Fixture events carrying the other worker's nonce.
    pub foreign_events: usize,
    /// Fixture events not from its own job (nonce, job id, conversation or pid).
    pub mismatched_events: usize,
    /// Every fixture event is labelled a local protocol fixture.
    pub labelled: bool,
    /// The job child's pid in the worker's namespace.
    pub child_pid_in_namespace: Option<i32>,
    /// The job child's group in the worker's namespace.
    pub child_pgid_in_namespace: Option<i32>,
    /// The job child's host pid.
    pub child_host_pid: Option<i32>,
    /// The job grandchild's host pid.
    pub grandchild_host_pid: Option<i32>,
    /// The job's process group (host).
    pub job_pgid: Option<i32>,
}

/// `same-ids-separate-routing`: same display and conversation ids, each
/// job's events at its own worker only, in different processes.
pub(crate) fn routing(o: &RoutingObs) -> Check {
    let mut problems = Vec::new();
    for (i, r) in o.workers.iter().enumerate() {
        let other = o
            .workers
            .get(1 - i.min(1))
            .map_or("?", |w| w.worker.as_str());
        if r.daemon_id != DISPLAY_ID || r.hub_daemons != [DISPLAY_ID] {
            problems.push(format!(
                "worker {}'s hub had daemons {:?} (client id {}), expected exactly [{DISPLAY_ID}]",
                r.worker, r.hub_daemons, r.daemon_id
            ));
        }
        if r.foreign_events > 0 {
            problems.push(format!(
                "worker {} received {} event(s) of worker {other}'s job",
                r.worker, r.foreign_events
            ));
        }
        if r.mismatched_events > 0 {
            problems.push(format!(
                "worker {} received {} event(s) not from its own job (nonce, daemon job id, conversation or child \
                 pid differ)",
                r.worker, r.mismatched_events
            ));
        }
        if !r.labelled {
            problems.push(format!(
                "worker {}'s fixture events are not all labelled as a local protocol fixture",
                r.worker
            ));
        }
        if let Some(st) = &r.status_after_jobs {
            if st.daemons != [DISPLAY_ID] {
                problems.push(format!(
                    "worker {}'s hub listed daemons {:?} after the jobs, expected exactly [{DISPLAY_ID}]",
                    r.worker, st.daemons
                ));
            }
        }
    }
    let pick = |f: fn(&RoutingRow) -> Option<i32>| {
        (o.workers.first().and_then(f), o.workers.get(1).and_then(f))
    };
    let (ca, cb) = pick(|r| r.child_host_pid);
    if ca == cb {
        problems.push(format!("both jobs report the same child process {ca:?}"));
    }
    let (ga, gb) = pick(|r| r.grandchild_host_pid);
    if ga == gb {
        problems.push(format!(
            "both jobs report the same grandchild process {ga:?}"
        ));
    }
    let observed = serde_json::to_value(o).expect("plain data serialises");
    if problems.is_empty() {
        Check::pass(
            "same-ids-separate-routing",
            None,
            format!(
                "both workers used display id {DISPLAY_ID} and conversation id {CONVERSATION_ID}; every event of \
                 each job reached only its own worker; the jobs ran in different child processes ({} and {})",
                ca.unwrap_or(0),
                cb.unwrap_or(0)
            ),
        )
    } else {
        Check::fail(
            "same-ids-separate-routing",
            None,
            format!(
                "{}; the same display and conversation ids in two workers must never route one's events to the \
                 other",
                problems.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

/// `root-visibility`: each worker's attempt to read the other's data root.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct VisibilityObs {
    /// `process` or `bwrap`.
    pub backend: String,
    /// The workers ran under bwrap.
    pub bwrap: bool,
    /// One row per worker.
    pub peeks: Vec<PeekRow>,
}

/// One worker's peek.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PeekRow {
    /// The worker that tried.
    pub worker: String,
    /// Whose root it tried.
    pub tried_root_of: String,
    /// What it saw.
    pub answer: Peek,
}

/// `root-visibility`: neither worker can read the other's root (bwrap: a
/// failure; process backend: a warning, roots are private by environment).
pub(crate) fn root_visibility(o: &VisibilityObs) -> Check {
    let readable: Vec<&str> = o
        .peeks
        .iter()
        .filter(|p| p.answer.readable)
        .map(|p| p.worker.as_str())
        .collect();
    let observed = serde_json::to_value(o).expect("plain data serialises");
    if readable.is_empty() {
        Check::pass(
            "root-visibility",
            None,
            "neither worker could list or read the other's data root",
        )
    } else if o.bwrap {
        Check::fail(
            "root-visibility",
            None,
            format!(
                "worker(s) {readable:?} could read the other worker's root inside bwrap; only a worker's own root \
                 may be bound into its sandbox"
            ),
        )
    } else {
        Check::warn(
            "root-visibility",
            None,
            format!(
                "process backend: worker(s) {readable:?} could read the other worker's root (same user, same mount \
                 namespace); roots are private by environment only. Use --isolation bwrap to hide them"
            ),
        )
    }
    .with_observed(observed)
}

/// `teardown`: the workers' stop and the survey after it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TeardownObs {
    /// `CLEAN` when the survey found nothing, else `RESIDUE`.
    pub verdict: String,
    /// How each worker stopped.
    pub workers: Vec<WorkerStop>,
    /// The survey.
    pub survey: SurveyObs,
}

/// How one worker stopped.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WorkerStop {
    /// `a` or `b`.
    pub worker: String,
    /// It answered `stopped`.
    pub answered_stopped: bool,
    /// It exited within the stop time.
    pub exited_after_stop: bool,
    /// The gate sent TERM.
    pub term_sent: bool,
    /// It needed KILL.
    pub kill_needed: bool,
    /// Its exit status.
    pub status: String,
}

/// The end-of-run survey.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SurveyObs {
    /// What ties a process to the run.
    pub by: Vec<String>,
    /// Process groups surveyed.
    pub process_groups: Vec<i32>,
    /// `NAME=value` of the run's marker.
    pub marker: String,
    /// The roots whose working directories tie a process to the run.
    pub roots: String,
    /// Processes found after the settle time.
    pub found: Vec<SurvivorRow>,
    /// How they were stopped.
    pub stopped: Vec<Stopped>,
    /// Still there after TERM, grace and KILL.
    pub remaining_after_kill: Vec<SurvivorRow>,
}

/// A process the survey found (the fields of [`Survivor`]).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SurvivorRow {
    /// Host pid.
    pub pid: i32,
    /// Parent pid.
    pub ppid: i32,
    /// Process group.
    pub pgid: i32,
    /// Session.
    pub sid: i32,
    /// State letter.
    pub state: String,
    /// Why it is tied to the run: `pgid`, `env-marker`, `cwd`.
    pub matched_by: Vec<String>,
    /// Working directory, if readable.
    pub cwd: Option<String>,
    /// Command line (for the reader; never used to match).
    pub cmdline: String,
}

impl From<&Survivor> for SurvivorRow {
    fn from(s: &Survivor) -> Self {
        Self {
            pid: s.pid,
            ppid: s.ppid,
            pgid: s.pgid,
            sid: s.sid,
            state: s.state.clone(),
            matched_by: s.matched_by.clone(),
            cwd: s.cwd.clone(),
            cmdline: s.cmdline.clone(),
        }
    }
}

/// `teardown`: both workers exited on their own after `stop`, and the survey
/// found nothing tied to the run.
pub(crate) fn teardown(o: &TeardownObs) -> Check {
    let mut problems = Vec::new();
    for w in &o.workers {
        if !w.answered_stopped || !w.exited_after_stop || w.kill_needed {
            problems.push(format!(
                "worker {} {}",
                w.worker,
                if w.kill_needed {
                    "did not exit after `stop` and ignored TERM: it needed KILL"
                } else if !w.exited_after_stop {
                    "did not exit after `stop`; TERM stopped it"
                } else {
                    "exited without answering `stopped`"
                }
            ));
        }
    }
    let s = &o.survey;
    if !s.found.is_empty() {
        let list: Vec<String> = s
            .found
            .iter()
            .map(|f| {
                let how = s
                    .stopped
                    .iter()
                    .find(|x| x.pid == f.pid)
                    .map_or("?", |x| x.stopped_by.as_str());
                format!(
                    "pid {} (pgid {}, sid {}; matched by {}; stopped by {how})",
                    f.pid,
                    f.pgid,
                    f.sid,
                    f.matched_by.join("+")
                )
            })
            .collect();
        problems.push(format!(
            "RESIDUE: {} process(es) tied to the run survived the workers' stop: {}",
            s.found.len(),
            list.join(", ")
        ));
    }
    if !s.remaining_after_kill.is_empty() {
        problems.push(format!(
            "RESIDUE: pids {:?} still run after TERM, grace and KILL",
            s.remaining_after_kill
                .iter()
                .map(|s| s.pid)
                .collect::<Vec<_>>()
        ));
    }
    let observed = serde_json::to_value(o).expect("plain data serialises");
    if problems.is_empty() {
        Check::pass(
            "teardown",
            None,
            "after `stop` both workers exited on their own, and a survey of /proc by process group, environment \
             marker and working directory found no process tied to the run",
        )
    } else {
        Check::fail(
            "teardown",
            None,
            format!(
                "{}; every process a worker starts must end with it: keep children in the job's process group and \
                 stop the group",
                problems.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

/// `private-roots`: the evidence directory before and after.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RootsObs {
    /// What was compared.
    pub snapshot: String,
    /// Changes outside both workers' roots.
    pub outside_roots: Vec<Change>,
    /// One row per worker.
    pub workers: Vec<RootRow>,
    /// The gates that ran while the workers lived (between the two
    /// snapshots), in start order; empty: the whole of DIR was compared.
    pub gates_beside: Vec<String>,
    /// The folders left out of the comparison: those the gates beside wrote.
    pub excluded: Vec<ExcludedArea>,
    /// Changes found inside the left-out folders (not judged as a worker's,
    /// but each new or changed file read for a worker's tag).
    pub excluded_changes: usize,
    /// Files inside the left-out folders carrying a worker's tag.
    pub tagged_in_excluded: Vec<TaggedFile>,
    /// Folders above a left-out folder whose modification time alone changed
    /// (each of their entries is compared on its own).
    pub parents_mtime_only: Vec<String>,
}

/// A folder of DIR left out of `private-roots`' comparison, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct ExcludedArea {
    /// Relative to DIR (`packages`, `roots/pycache`, `logs/lbp-build`).
    pub area: String,
    /// The gates beside the workers that write it.
    pub written_by: Vec<String>,
    /// Why it was left out.
    pub why: String,
}

/// A file carrying a worker's tag where no worker may write.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct TaggedFile {
    /// Relative to DIR.
    pub path: String,
    /// The worker whose tag it carries.
    pub worker: String,
}

/// One worker's root.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RootRow {
    /// `a` or `b`.
    pub worker: String,
    /// The root.
    pub root: String,
    /// Entries added or changed under it.
    pub changed_entries: usize,
    /// Files carrying its own tag.
    pub own_tagged_files: usize,
    /// Files its job child wrote.
    pub job_child_files: usize,
    /// Files under it carrying the other worker's tag.
    pub foreign_files: Vec<String>,
    /// Where its HOME, TMPDIR and data root point, files without its tag.
    pub missing_tags: Vec<String>,
    /// The first 50 changed entries.
    pub entries: Vec<String>,
}

/// What is wrong with the roots, as sentences, and whether every problem
/// is only a missing write (`true`), not a write where it does not belong.
fn roots_problems(o: &RootsObs) -> (Vec<String>, bool) {
    let mut problems = Vec::new();
    let mut own = true;
    if !o.outside_roots.is_empty() {
        own = false;
        problems.push(format!(
            "changes outside the workers' roots: {}",
            o.outside_roots
                .iter()
                .take(10)
                .map(|c| format!("{} {}", c.change, c.path))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !o.tagged_in_excluded.is_empty() {
        own = false;
        problems.push(format!(
            "files carrying a worker's tag in folders of the gates that ran beside the workers ({}): {}",
            o.gates_beside.join(", "),
            o.tagged_in_excluded
                .iter()
                .take(10)
                .map(|t| format!("{} (worker {})", t.path, t.worker))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for (i, r) in o.workers.iter().enumerate() {
        let other = o
            .workers
            .get(1 - i.min(1))
            .map_or("?", |w| w.worker.as_str());
        if !r.foreign_files.is_empty() {
            own = false;
            problems.push(format!(
                "worker {}'s root holds files written by worker {other}: {:?}",
                r.worker, r.foreign_files
            ));
        }
        if !r.missing_tags.is_empty() {
            problems.push(format!(
                "worker {} did not write its tag where its HOME, TMPDIR and data root point: missing {:?}",
                r.worker, r.missing_tags
            ));
        }
        if r.job_child_files == 0 {
            problems.push(format!(
                "worker {}'s job child wrote nothing under its data root",
                r.worker
            ));
        }
    }
    (problems, own)
}

/// `private-roots`: each worker wrote only under its own root. `protocol`
/// names the `worker-protocol` failure, if any: a worker that never got to
/// write is a consequence of it, not a finding of its own.
pub(crate) fn private_roots(o: &RootsObs, protocol_failed: bool) -> Check {
    let (problems, own) = roots_problems(o);
    let observed = serde_json::to_value(o).expect("plain data serialises");
    if problems.is_empty() {
        let compared = if o.excluded.is_empty() {
            "the evidence directory changed nowhere else".to_string()
        } else {
            format!(
                "the evidence directory changed nowhere else but in the {} folder(s) written by the gates that \
                 ran beside the workers ({}: left out, see observed.excluded), none of which holds a file \
                 carrying a worker's tag",
                o.excluded.len(),
                o.gates_beside.join(", ")
            )
        };
        return Check::pass(
            "private-roots",
            None,
            format!(
                "each worker (and its job) wrote only under its own root: {compared}, and neither root holds a \
                 file tagged by the other worker"
            ),
        )
        .with_observed(observed);
    }
    let check = Check::fail(
        "private-roots",
        None,
        format!(
            "{}; workers must write only under their own HOME, TMPDIR and data roots",
            problems.join("; ")
        ),
    )
    .with_observed(observed);
    // Only missing writes, after an exercise that did not complete: the
    // workers never got that far.
    if own && protocol_failed {
        check.consequence_of("worker-protocol")
    } else {
        check
    }
}

/// `worker-protocol`: the exercise did not complete.
pub(crate) fn protocol(error: &str, logs: &str) -> Check {
    Check::fail(
        "worker-protocol",
        None,
        format!(
            "the workers did not complete the exercise: {error}; see {logs} for their output, and fix the worker \
             or its environment"
        ),
    )
    .with_observed(json!({ "completed": false, "error": error, "logs": logs }))
}

/// `backend`: what `--isolation` asked for and what the bwrap preflight
/// found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BackendObs {
    /// `auto`, `process` or `bwrap`.
    pub requested: String,
    /// `bwrap`, `process`, or `none` (a requested bwrap was unavailable).
    pub selected: String,
    /// The preflight's record (`null`: not run, `--isolation process`).
    pub preflight: serde_json::Value,
    /// Why the preflight failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

const PROCESS_NOTE: &str =
    "separate processes, each in its own process group, private HOME/TMPDIR/data \
                            roots named by an allowlisted environment; no namespaces";

/// `backend`: the selected isolation backend, with its preflight; a
/// requested bwrap that is unavailable fails (no fallback), `auto` falls
/// back to the process backend with a warning.
pub(crate) fn backend(o: &BackendObs) -> Check {
    let observed =
        json!({"requested": o.requested, "selected": o.selected, "preflight": o.preflight});
    let check = match (o.selected.as_str(), &o.failure) {
        ("process", None) => Check::pass(
            "backend",
            None,
            format!("--isolation {}: {PROCESS_NOTE}", o.requested),
        ),
        ("bwrap", _) => Check::pass(
            "backend",
            None,
            format!(
                "--isolation {}: bwrap preflight succeeded ({}); each worker runs in new pid, mount, IPC and UTS \
                 namespaces with a cleared environment, read-only system/interpreter/SDK binds and only its own \
                 root writable",
                o.requested,
                o.preflight["version"].as_str().unwrap_or("version unknown")
            ),
        ),
        ("process", Some(why)) => Check::warn(
            "backend",
            None,
            format!(
                "--isolation {}: the bwrap preflight failed ({why}), so the workers ran with the process backend \
                 ({PROCESS_NOTE}); install `bubblewrap` for namespace isolation",
                o.requested
            ),
        ),
        (_, why) => Check::fail(
            "backend",
            None,
            format!(
                "--isolation {} was requested, but bubblewrap is unavailable: {}; the gate does not fall back to \
                 another backend. Install Debian's `bubblewrap` (`apt-get install bubblewrap`; `.ci/run` does) or \
                 pass `--isolation process` or `--isolation auto`",
                o.requested,
                why.as_deref().unwrap_or("no preflight result")
            ),
        ),
    };
    check.with_observed(observed)
}
