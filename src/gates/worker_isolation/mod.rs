//! The `worker-isolation` gate: two real workers, apart.
//!
//! Two workers (`src/python/worker.py`, run by the verified interpreter with
//! `-I -B`) are started as separate processes, each in its own process group,
//! with private HOME, TMPDIR and data roots under `DIR/roots/worker-isolation/
//! {a,b}` and an environment cleared but for an allowlist (PATH, LANG, TZ,
//! HOME, TMPDIR, PYTHONDONTWRITEBYTECODE and the worker's own `VCC_*`
//! variables), under the backend `--isolation` selects ([`crate::isolation`]).
//! Each starts the SDK's real daemon hub on `127.0.0.1:0` with its own token
//! and connects the SDK's own daemon client with the same display id
//! (`daemon_id`). Then the gate observes, with the OS as witness:
//!
//! * `listener-token-separation` / `listener-own-token`: the harness's own
//!   WebSocket `daemon.hello` with A's token at B's listener (and B's at A's,
//!   and no token at either) is refused with close code 1008; each worker's
//!   own token is accepted (positive control);
//! * `same-ids-separate-routing`: both jobs use the same display id and the
//!   same conversation id; each job's events reach only its own worker; the
//!   jobs' child processes are different processes;
//! * `environment-allowlist`: a canary the harness put in its own environment
//!   (at process start, before any thread: [`install_canary`]) is in no
//!   worker's, child's or grandchild's `/proc/<pid>/environ`;
//! * `cancel-quiescence` / `independent-cancellation`: A's job is cancelled
//!   mid-run through the hub; A's job process group (child and grandchild)
//!   must be gone by `/proc`, not by the worker's word (the gate escalates
//!   TERM then KILL otherwise, naming who needed it); B's job runs on to its
//!   expected output;
//! * `root-visibility`: each worker tries to read the other's root (bwrap:
//!   must fail; process backend: recorded as a warning);
//! * `teardown`: after `stop`, a survey by process group, environment marker
//!   and working directory (never by program name) finds nothing; survivors
//!   are stopped and reported as RESIDUE;
//! * `private-roots`: the evidence directory changed only under the two
//!   roots, and each root holds only its own worker's files. Gates may run
//!   beside this one: the folders of DIR that the gates running while the
//!   workers lived write (their catalogue `writes`, `logs/<gate>` and
//!   `roots/<gate>`) are left out of the comparison, named in the evidence,
//!   and still scanned for files carrying a worker's tag; with no gate
//!   beside it (`--jobs 1`), the whole of DIR is compared. The gate's own
//!   logs (written while the workers run, so never compared) are read for a
//!   worker's tag too.
//!
//! Test-only hostile variants: see [`hostile`].

mod backend;
mod cancellation;
mod decide;
mod environment;
mod hostile;
mod listeners;
mod roots;
mod run;
mod teardown;
mod token_probe;
mod worker;

#[cfg(test)]
mod tests;

pub use hostile::VARIANT_VAR;

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use crate::isolation::{Backend, Confinement};
use crate::process::procfs::{self, ProcInfo};
use crate::process::{self, LongSpec};
use backend::InterpreterPaths;
use decide::{
    BackendObs, CancelObs, EnvironmentObs, HubObs, IndependenceObs, ProcRow, ProcessesObs,
    RootsObs, RoutingObs, TeardownObs, TokenProbe, VisibilityObs,
};
use run::{canonical, group_answers_signal_0, proc_row, random_hex, role_of, Run};
use serde::Serialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use worker::{wait_for, WorkerProc};

/// The gate id.
pub(crate) const GATE: &str = "worker-isolation";

/// The harness variable whose name or value must never reach a worker.
pub const CANARY_NAME: &str = "VCC_ISOLATION_CANARY";

/// The canary's value for this process, or why it could not be installed;
/// unset until [`install_canary`] ran.
static CANARY: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();

/// Puts [`CANARY_NAME`] with a random value (`vcc-canary-<32 hex>`) in this
/// process's environment, for the whole run: `environment-allowlist` then
/// finds it in any worker or child that inherited the harness's environment.
///
/// Call it first thing in `main`, before any thread exists: changing the
/// environment while another thread reads it (every spawn does) is a data
/// race, which is why the gate no longer sets it itself now that gates run
/// side by side. It refuses (and the gate then fails with the reason) when
/// `/proc/self/task` shows more than one thread. Later calls change nothing.
pub fn install_canary() {
    CANARY.get_or_init(|| {
        let threads = std::fs::read_dir("/proc/self/task")
            .map_err(|e| format!("cannot read /proc/self/task: {e}"))?
            .count();
        if threads != 1 {
            return Err(format!(
                "install_canary ran with {threads} threads alive; it must run before any thread exists"
            ));
        }
        let value = format!("vcc-canary-{}", random_hex(16)?);
        std::env::set_var(CANARY_NAME, &value);
        Ok(value)
    });
}

/// The canary [`install_canary`] put in this process's environment.
///
/// # Errors
/// When it was never installed, could not be, or is no longer in the
/// environment with its value: the gate cannot then prove a leak would show.
fn installed_canary() -> Result<String, String> {
    let value = match CANARY.get() {
        Some(Ok(v)) => v.clone(),
        Some(Err(e)) => {
            return Err(format!(
                "the harness canary {CANARY_NAME} could not be installed at process start: {e}"
            ))
        }
        None => {
            return Err(format!(
                "the harness canary {CANARY_NAME} was not installed at process start \
                 (worker_isolation::install_canary, called first in main); without it no leak of the \
                 harness's environment could show: run the gate through the verify-coding-candidates binary"
            ))
        }
    };
    still_installed(std::env::var(CANARY_NAME).ok(), value)
}

/// `value` when the harness's environment still holds it as the canary
/// (`current`), else why the gate cannot go on.
fn still_installed(current: Option<String>, value: String) -> Result<String, String> {
    match current {
        Some(v) if v == value => Ok(value),
        _ => Err(format!(
            "the harness canary {CANARY_NAME} is no longer in the harness's environment with the value set at \
             process start; something changed the environment during the run"
        )),
    }
}

/// The environment marker every worker (and so every child) carries; the
/// end-of-run survey finds processes by it.
pub const MARKER_NAME: &str = "VCC_RUN_MARKER";

/// The display id (`daemon_id`) both workers use.
const DISPLAY_ID: &str = "coding-runner-display-1";
/// The conversation id both jobs use.
const CONVERSATION_ID: &str = "conversation-shared-1";
/// Events each job emits when not cancelled: 8 s of job at
/// [`JOB_INTERVAL_MS`], so that A's job is still mid-run when the gate has
/// resolved both jobs' processes and sends the cancel, even on a loaded
/// machine (with 40, one run beside a test run's pip installs saw A's job
/// finish first: a false FAIL).
const JOB_EVENTS: u64 = 80;
/// Milliseconds between a job's events.
const JOB_INTERVAL_MS: u64 = 100;
/// A's job is cancelled after this many of its outputs arrived.
const CANCEL_AFTER_OUTPUTS: usize = 3;
/// Time for a worker to print `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(90);
/// Time for a job to start, be cancelled or finish.
const JOB_TIMEOUT: Duration = Duration::from_secs(90);
/// Time for a cancelled or finished job's process group to empty.
const QUIESCE_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for a worker to answer `stop` and exit.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// The two workers.
const NAMES: [&str; 2] = ["a", "b"];

/// The `worker-isolation` gate.
pub struct WorkerIsolation;

impl super::Gate for WorkerIsolation {
    fn headline_check(&self) -> Option<&'static str> {
        Some("backend")
    }

    fn id(&self) -> &'static str {
        GATE
    }

    fn not_applicable(&self, ctx: &RunContext) -> Option<String> {
        ctx.profile.profile.worker_isolation.is_none().then(|| {
            "the profile has no [worker_isolation] table: it does not declare runners that run \
             jobs through the SDK's daemon hub, so two isolated workers are not proved apart"
                .into()
        })
    }

    fn run(&self, ctx: &RunContext, _out: &mut Updates) -> Result<Vec<Check>, String> {
        let sdk = ctx.verified_sdk.clone().ok_or_else(|| {
            "gate worker-isolation: no verified SDK (sdk-record did not pass); run sdk-record first"
                .to_string()
        })?;
        let variant = hostile::from_env()?;
        let canary = installed_canary()?;
        let base = ctx.evidence_dir.join("roots").join(GATE);
        let mut checks = Vec::new();
        if let Some(v) = &variant {
            checks.push(
                Check::warn(
                    "test-hook",
                    None,
                    format!(
                        "{VARIANT_VAR}={}: worker a ran the TEST-ONLY hostile variant `{}` (built to fail \
                         `{}`); this evidence is a test of the gate, not a certification",
                        v.name, v.name, v.targets
                    ),
                )
                .with_observed(json!({"variable": VARIANT_VAR, "variant": v.name, "worker": "a", "targets": v.targets})),
            );
        }
        let (home, tmp) = ctx
            .private_roots(GATE, "preflight")
            .map_err(|e| format!("cannot create {}: {e}", base.display()))?;
        let host: InterpreterPaths = crate::python::Probe {
            python: &ctx.python,
            name: "worker_paths",
            source: crate::python::WORKER_PATHS_PROBE,
            args: &[],
            cwd: &base.join("preflight"),
            env: ctx.child_env(&home, &tmp),
            log_stem: &ctx.log_stem(GATE, "worker-paths"),
            timeout: crate::python::PROBE_TIMEOUT,
        }
        .run()?;
        let read_only = backend::read_only_paths(&ctx.python, &host);
        let (selected, backend_obs) = backend::select(ctx, ctx.isolation, &base, &host, &read_only);
        let Some(backend) = selected else {
            checks.extend(decide(&Observation::backend_only(backend_obs)));
            return Ok(checks);
        };
        let run = Run::new(
            ctx,
            backend,
            variant,
            base,
            read_only,
            sdk.package_dir,
            canary,
        )?;
        let obs = run.execute(backend_obs);
        checks.extend(decide(&obs));
        Ok(checks)
    }
}

/// Everything the gate observed, check by check; `None`: not reached (the
/// exercise stopped before it, see `protocol_error`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Observation {
    /// The backend choice and its preflight.
    pub backend: BackendObs,
    /// The OS's view of both workers.
    pub processes: Option<ProcessesObs>,
    /// The hub each worker imported.
    pub hub: Option<HubObs>,
    /// The harness's `daemon.hello` probes.
    pub tokens: Option<Vec<TokenProbe>>,
    /// Environments below the workers.
    pub environment: Option<EnvironmentObs>,
    /// A's job around its cancellation.
    pub cancel: Option<CancelObs>,
    /// Both jobs around A's cancellation.
    pub independence: Option<IndependenceObs>,
    /// Which events reached which worker.
    pub routing: Option<RoutingObs>,
    /// Each worker's peek at the other's root.
    pub visibility: Option<VisibilityObs>,
    /// Why the exercise stopped early, if it did.
    pub protocol_error: Option<String>,
    /// DIR/logs/worker-isolation.
    pub logs: String,
    /// The workers' stop and the survey.
    pub teardown: Option<TeardownObs>,
    /// The evidence directory before and after.
    pub roots: Option<RootsObs>,
}

impl Observation {
    /// Only the backend choice: no backend was available, nothing ran.
    fn backend_only(backend: BackendObs) -> Self {
        Self {
            backend,
            processes: None,
            hub: None,
            tokens: None,
            environment: None,
            cancel: None,
            independence: None,
            routing: None,
            visibility: None,
            protocol_error: None,
            logs: String::new(),
            teardown: None,
            roots: None,
        }
    }
}

/// The gate's checks from `obs`, in the order of the exercise.
pub(crate) fn decide(obs: &Observation) -> Vec<Check> {
    let mut checks = vec![decide::backend(&obs.backend)];
    if let Some(o) = &obs.processes {
        checks.push(decide::separate_processes(o));
    }
    if let Some(o) = &obs.hub {
        checks.push(decide::sdk_daemon_hub(o));
    }
    if let Some(o) = &obs.tokens {
        checks.extend(decide::tokens(o));
    }
    if let Some(o) = &obs.environment {
        checks.push(decide::environment(o));
    }
    if let Some(o) = &obs.cancel {
        checks.push(decide::cancel_quiescence(o));
    }
    if let Some(o) = &obs.independence {
        checks.push(decide::independent_cancellation(o));
    }
    if let Some(o) = &obs.routing {
        checks.push(decide::routing(o));
    }
    if let Some(o) = &obs.visibility {
        checks.push(decide::root_visibility(o));
    }
    if let Some(e) = &obs.protocol_error {
        checks.push(decide::protocol(e, &obs.logs));
    }
    if let Some(o) = &obs.teardown {
        checks.push(decide::teardown(o));
    }
    if let Some(o) = &obs.roots {
        checks.push(decide::private_roots(o, obs.protocol_error.is_some()));
    }
    checks
}
