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
//!   is in no worker's, child's or grandchild's `/proc/<pid>/environ`;
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
//!   roots, and each root holds only its own worker's files.
//!
//! Test-only hostile variants: see [`hostile`].

mod backend;
mod hostile;
mod roots;
mod token_probe;
mod worker;

pub use hostile::VARIANT_VAR;

use crate::context::RunContext;
use crate::evidence::Check;
use crate::isolation::procfs::{self, ProcInfo};
use crate::isolation::{survey, Backend, Confinement};
use crate::process::{self, LongSpec};
use backend::InterpreterPaths;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use token_probe::HelloOutcome;
use worker::{wait_for, WorkerProc};

/// The gate id.
pub(crate) const GATE: &str = "worker-isolation";

/// The harness variable whose name or value must never reach a worker.
pub const CANARY_NAME: &str = "VCC_ISOLATION_CANARY";

/// The environment marker every worker (and so every child) carries; the
/// end-of-run survey finds processes by it.
pub const MARKER_NAME: &str = "VCC_RUN_MARKER";

/// The display id (`daemon_id`) both workers use.
const DISPLAY_ID: &str = "coding-runner-display-1";
/// The conversation id both jobs use.
const CONVERSATION_ID: &str = "conversation-shared-1";
/// Events each job emits when not cancelled.
const JOB_EVENTS: u64 = 40;
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
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        let sdk = ctx.verified_sdk.clone().ok_or_else(|| {
            "gate worker-isolation: no verified SDK (sdk-record did not pass); run sdk-record first"
                .to_string()
        })?;
        let variant = hostile::from_env()?;
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
        let host: InterpreterPaths = crate::python::run_probe(
            &ctx.python,
            "worker_paths",
            crate::python::WORKER_PATHS_PROBE,
            &[],
            &base.join("preflight"),
            ctx.child_env(&home, &tmp),
            &ctx.log_stem(GATE, "worker-paths"),
        )?;
        let read_only = backend::read_only_paths(&ctx.python, &host);
        let (selected, check) = backend::select(ctx, ctx.isolation, &base, &host, &read_only);
        checks.push(check);
        let Some(backend) = selected else {
            return Ok(checks);
        };
        let run = Run::new(ctx, backend, variant, base, read_only, sdk.package_dir)?;
        checks.extend(run.execute());
        Ok(checks)
    }
}

/// One worker's private settings.
struct WorkerSpec {
    name: &'static str,
    root: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    data: PathBuf,
    id: String,
    token: String,
    nonce: String,
}

/// The OS's view of one worker and its job.
#[derive(Default, Clone)]
struct Observed {
    spawn: Option<ProcInfo>,
    worker: Option<ProcInfo>,
    child: Option<ProcInfo>,
    grandchild: Option<ProcInfo>,
}

struct Run<'a> {
    ctx: &'a RunContext,
    backend: Backend,
    variant: Option<hostile::Variant>,
    base: PathBuf,
    read_only: Vec<PathBuf>,
    sdk_package: PathBuf,
    marker: String,
    canary: String,
    depth: usize,
    specs: Vec<WorkerSpec>,
    workers: Vec<WorkerProc>,
    observed: Vec<Observed>,
    job_pgids: BTreeSet<i32>,
    checks: Vec<Check>,
}

impl<'a> Run<'a> {
    fn new(
        ctx: &'a RunContext,
        backend: Backend,
        variant: Option<hostile::Variant>,
        base: PathBuf,
        read_only: Vec<PathBuf>,
        sdk_package: PathBuf,
    ) -> Result<Self, String> {
        let mut specs = Vec::new();
        for name in NAMES {
            let (home, tmp) = ctx
                .private_roots(GATE, name)
                .map_err(|e| format!("cannot create the private roots of worker {name}: {e}"))?;
            let root = base.join(name);
            let data = root.join("data");
            std::fs::create_dir_all(&data)
                .map_err(|e| format!("cannot create {}: {e}", data.display()))?;
            specs.push(WorkerSpec {
                name,
                root,
                home,
                tmp,
                data,
                id: random_hex(8)?,
                token: random_hex(24)?,
                nonce: format!("nonce-{name}-{}", random_hex(6)?),
            });
        }
        let own = procfs::read(std::process::id() as i32)
            .ok_or("cannot read /proc/self: the gate needs Linux /proc")?;
        let depth = own.ns_pids.len() + usize::from(backend.new_pid_namespace());
        Ok(Self {
            ctx,
            backend,
            variant,
            base,
            read_only,
            sdk_package,
            marker: random_hex(16)?,
            canary: format!("vcc-canary-{}", random_hex(16)?),
            depth,
            specs,
            workers: Vec::new(),
            observed: vec![Observed::default(), Observed::default()],
            job_pgids: BTreeSet::new(),
            checks: Vec::new(),
        })
    }

    fn execute(mut self) -> Vec<Check> {
        let skip = vec![PathBuf::from("logs").join(GATE)];
        let before = roots::snapshot(&self.ctx.evidence_dir, &skip);
        // The canary lives in the harness's environment for the workers' whole
        // life: a leak anywhere below would carry it.
        std::env::set_var(CANARY_NAME, &self.canary);
        if let Err(e) = self.exercise() {
            self.checks.push(Check::fail(
                "worker-protocol",
                None,
                format!(
                    "the workers did not complete the exercise: {e}; see {} for their output, and fix \
                     the worker or its environment",
                    self.ctx.evidence_dir.join("logs").join(GATE).display()
                ),
            ));
        }
        self.teardown();
        std::env::remove_var(CANARY_NAME);
        let after = roots::snapshot(&self.ctx.evidence_dir, &skip);
        self.check_private_roots(&before, &after);
        self.checks
    }

    fn exercise(&mut self) -> Result<(), String> {
        self.spawn_workers()?;
        wait_for(
            &mut self.workers,
            READY_TIMEOUT,
            "both workers' `ready`",
            |ws| ws.iter().all(|w| w.ready.is_some()),
        )?;
        self.resolve_workers()?;
        self.check_processes();
        self.check_tokens();
        self.start_jobs()?;
        self.resolve_jobs()?;
        self.check_environment();
        self.cancel_and_finish()?;
        self.check_routing();
        self.check_root_visibility()?;
        Ok(())
    }

    // ----- start -------------------------------------------------------

    fn spawn_workers(&mut self) -> Result<(), String> {
        for (i, spec) in self.specs.iter().enumerate() {
            let mut env = self.ctx.child_env(&spec.home, &spec.tmp);
            for (k, v) in [
                ("VCC_WORKER_NAME", spec.name.to_string()),
                ("VCC_WORKER_ID", spec.id.clone()),
                ("VCC_WORKER_TOKEN", spec.token.clone()),
                ("VCC_WORKER_DAEMON_ID", DISPLAY_ID.to_string()),
                ("VCC_WORKER_DATA", spec.data.display().to_string()),
                (MARKER_NAME, self.marker.clone()),
            ] {
                env.insert(k.to_string(), v);
            }
            let variant = if i == 0 { self.variant.as_ref() } else { None };
            let args = vec![
                "-I".to_string(),
                "-B".to_string(),
                "-c".to_string(),
                hostile::worker_source(variant),
            ];
            let confinement = Confinement {
                root: spec.root.clone(),
                cwd: spec.data.clone(),
                env,
                read_only: self.read_only.clone(),
            };
            let cmd = self.backend.command(&confinement, &self.ctx.python, &args);
            let child = process::spawn_long(&LongSpec {
                program: cmd.program,
                args: cmd.args,
                cwd: spec.data.clone(),
                env: cmd.env,
                log_stem: self.ctx.log_stem(GATE, &format!("worker-{}", spec.name)),
                redact: vec![spec.token.clone()],
            })
            .map_err(|e| format!("worker {}: {e}", spec.name))?;
            self.workers.push(WorkerProc::new(spec.name, child));
        }
        Ok(())
    }

    /// Finds each worker's interpreter process below what was spawned.
    fn resolve_workers(&mut self) -> Result<(), String> {
        let procs = procfs::all();
        for (i, w) in self.workers.iter().enumerate() {
            let ready = w.ready.as_ref().expect("waited for ready");
            let spawn_pid = w.child.pid() as i32;
            self.observed[i].spawn = procs.get(&spawn_pid).cloned();
            let found = find_inner(&procs, spawn_pid, ready.pid, self.depth).ok_or_else(|| {
                format!(
                    "worker {}: no process below pid {spawn_pid} has pid {} in a pid namespace {} levels deep",
                    w.name, ready.pid, self.depth
                )
            })?;
            self.observed[i].worker = Some(found);
        }
        Ok(())
    }

    fn start_jobs(&mut self) -> Result<(), String> {
        for (w, spec) in self.workers.iter_mut().zip(&self.specs) {
            w.send(&json!({
                "cmd": "run",
                "job": format!("job-{}", spec.name),
                "conversation_id": CONVERSATION_ID,
                "nonce": spec.nonce,
                "events": JOB_EVENTS,
                "interval_ms": JOB_INTERVAL_MS,
            }))?;
        }
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "both jobs to start (child and grandchild pids reported) and A's first outputs",
            |ws| {
                ws.iter()
                    .all(|w| w.child_pid().is_some() && w.grandchild_pid().is_some())
                    && ws[0].outputs().count() >= CANCEL_AFTER_OUTPUTS
            },
        )?;
        Ok(())
    }

    /// Maps each job's child and grandchild (pids as the worker sees them) to
    /// host processes below the worker, in the worker's pid namespace.
    fn resolve_jobs(&mut self) -> Result<(), String> {
        let procs = procfs::all();
        for (i, w) in self.workers.iter().enumerate() {
            let worker = self.observed[i].worker.clone().expect("resolved");
            let child_inner = w.child_pid().expect("waited for");
            let gc_inner = w.grandchild_pid().expect("waited for");
            let child = find_inner(&procs, worker.pid, child_inner, self.depth).ok_or_else(|| {
                format!(
                    "worker {}: its job child (pid {child_inner} in its namespace) is not a running process below the worker",
                    w.name
                )
            })?;
            let grandchild = find_inner(&procs, child.pid, gc_inner, self.depth).ok_or_else(|| {
                format!(
                    "worker {}: its job grandchild (pid {gc_inner} in its namespace) is not a running process below the child",
                    w.name
                )
            })?;
            self.job_pgids.insert(child.pgid);
            self.observed[i].child = Some(child);
            self.observed[i].grandchild = Some(grandchild);
        }
        Ok(())
    }

    // ----- checks --------------------------------------------------------

    fn check_processes(&mut self) {
        let harness_pgid = procfs::read(std::process::id() as i32).map(|p| p.pgid);
        let harness_ns = procfs::pid_namespace(std::process::id() as i32);
        let mut rows = Vec::new();
        let mut problems = Vec::new();
        for (i, w) in self.workers.iter().enumerate() {
            let ready = w.ready.as_ref().expect("ready");
            let spawn = self.observed[i].spawn.clone();
            let worker = self.observed[i].worker.clone().expect("resolved");
            let ns = procfs::pid_namespace(worker.pid);
            rows.push(json!({
                "worker": w.name,
                "spawned_pid": w.child.pid(),
                "spawned_pgid": spawn.as_ref().map(|s| s.pgid),
                "worker_host_pid": worker.pid,
                "worker_pid_in_namespace": worker.inner_pid(),
                "worker_pgid": worker.pgid,
                "worker_sid": worker.sid,
                "pid_namespace": ns,
                "hub_endpoint": ready.endpoint,
                "hub_port": ready.port,
            }));
            if spawn.as_ref().map(|s| s.pgid) != Some(w.child.pid() as i32) {
                problems.push(format!(
                    "worker {}'s spawned process {} does not lead its own process group",
                    w.name,
                    w.child.pid()
                ));
            }
            if Some(worker.pgid) == harness_pgid {
                problems.push(format!(
                    "worker {} shares the harness's process group",
                    w.name
                ));
            }
            if self.backend.new_pid_namespace() && ns == harness_ns {
                problems.push(format!(
                    "worker {} runs in the harness's pid namespace",
                    w.name
                ));
            }
        }
        let (a, b) = (
            self.observed[0].worker.as_ref().expect("resolved"),
            self.observed[1].worker.as_ref().expect("resolved"),
        );
        if a.pid == b.pid {
            problems.push("both workers are one process".into());
        }
        if a.pgid == b.pgid {
            problems.push(format!("both workers are in process group {}", a.pgid));
        }
        let ports: Vec<u16> = self
            .workers
            .iter()
            .filter_map(|w| w.ready.as_ref().map(|r| r.port))
            .collect();
        if ports.first() == ports.get(1) {
            problems.push("both hubs report the same port".into());
        }
        if self.backend.new_pid_namespace()
            && procfs::pid_namespace(a.pid) == procfs::pid_namespace(b.pid)
        {
            problems.push("both workers share one pid namespace".into());
        }
        let observed = json!({
            "backend": self.backend.name(),
            "harness_pid": std::process::id(),
            "harness_pgid": harness_pgid,
            "workers": rows,
        });
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "separate-processes",
                    None,
                    format!(
                        "workers a (pid {}) and b (pid {}) are separate processes in separate process groups \
                         ({} and {}), each hub on its own loopback port ({backend})",
                        a.pid,
                        b.pid,
                        a.pgid,
                        b.pgid,
                        backend = self.backend.name()
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
            .with_observed(observed),
        );

        let mut hub_rows = Vec::new();
        let mut hub_problems = Vec::new();
        let want_pkg = canonical(&self.sdk_package);
        for w in &self.workers {
            let r = w.ready.as_ref().expect("ready");
            hub_rows.push(json!({
                "worker": w.name,
                "sdk_version": r.sdk_version,
                "sdk_package": r.sdk_package,
                "hub_module": r.hub_module,
                "hub_class": r.hub_class,
                "client_class": r.client_class,
                "hub_file": r.hub_file,
            }));
            if canonical(Path::new(&r.sdk_package)) != want_pkg
                || !canonical(Path::new(&r.hub_file)).starts_with(&want_pkg)
            {
                hub_problems.push(format!(
                    "worker {} imported the hub from {} (package {}), expected the verified SDK at {}",
                    w.name,
                    r.hub_file,
                    r.sdk_package,
                    self.sdk_package.display()
                ));
            }
            if r.hub_module != "langbot_plugin.api.agent_tools.daemon"
                || r.hub_class != "AgentRuntimeDaemonHub"
                || r.client_class != "AgentRuntimeDaemonClient"
            {
                hub_problems.push(format!(
                    "worker {} used {}.{} / {}, expected langbot_plugin.api.agent_tools.daemon.AgentRuntimeDaemonHub \
                     and AgentRuntimeDaemonClient",
                    w.name, r.hub_module, r.hub_class, r.client_class
                ));
            }
            if let Some(v) = &self.ctx.sdk.version {
                if &r.sdk_version != v {
                    hub_problems.push(format!(
                        "worker {} saw langbot-plugin {}, sdk-record verified {v}",
                        w.name, r.sdk_version
                    ));
                }
            }
        }
        self.checks.push(
            Check::from_bool(
                "sdk-daemon-hub",
                None,
                hub_problems.is_empty(),
                if hub_problems.is_empty() {
                    format!(
                        "both workers run the verified SDK's own daemon hub and daemon client from {}",
                        self.sdk_package.display()
                    )
                } else {
                    format!(
                        "{}; the workers must import the verified SDK only (check sdk-shadow and the interpreter)",
                        hub_problems.join("; ")
                    )
                },
            )
            .with_observed(json!({"workers": hub_rows})),
        );
    }

    fn check_tokens(&mut self) {
        let ports: Vec<u16> = self
            .workers
            .iter()
            .map(|w| w.ready.as_ref().expect("ready").port)
            .collect();
        let mut cross = Vec::new();
        let mut own = Vec::new();
        let mut cross_problems = Vec::new();
        let mut own_problems = Vec::new();
        let mut n = 0;
        for (li, listener) in NAMES.iter().enumerate() {
            let candidates: [(&str, &str); 3] = [
                (NAMES[0], self.specs[0].token.as_str()),
                (NAMES[1], self.specs[1].token.as_str()),
                ("none", ""),
            ];
            for (token_of, token) in candidates {
                n += 1;
                let probe_id = format!("vcc-token-probe-{n}");
                let outcome = token_probe::hello(ports[li], &probe_id, token);
                let row = json!({
                    "listener": listener,
                    "port": ports[li],
                    "token_of": token_of,
                    "daemon_id": probe_id,
                    "result": outcome,
                });
                if token_of == *listener {
                    if !matches!(outcome, HelloOutcome::Accepted { .. }) {
                        own_problems.push(format!(
                            "worker {listener}'s own token at its listener (port {}): {}",
                            ports[li],
                            describe_outcome(&outcome)
                        ));
                    }
                    own.push(row);
                } else {
                    let refused = matches!(
                        outcome,
                        HelloOutcome::Refused {
                            close_code: 1008,
                            ..
                        }
                    );
                    if !refused {
                        cross_problems.push(format!(
                            "{} at worker {listener}'s listener (port {}): expected refusal with close code 1008, found {}",
                            if token_of == "none" {
                                "an empty token".to_string()
                            } else {
                                format!("worker {token_of}'s token")
                            },
                            ports[li],
                            describe_outcome(&outcome)
                        ));
                    }
                    cross.push(row);
                }
            }
        }
        self.checks.push(
            if cross_problems.is_empty() {
                Check::pass(
                    "listener-token-separation",
                    None,
                    "A's token at B's listener, B's token at A's listener and an empty token at either were \
                     refused with close code 1008 (invalid token)",
                )
            } else {
                Check::fail(
                    "listener-token-separation",
                    None,
                    format!(
                        "{}; each worker's hub must accept only its own token: start it with its own \
                         non-empty token (an empty token disables the SDK hub's check)",
                        cross_problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({"probes": cross})),
        );
        self.checks.push(
            if own_problems.is_empty() {
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
            .with_observed(json!({"probes": own})),
        );
    }

    fn check_environment(&mut self) {
        let procs = procfs::all();
        // The harness's own variables, as exec'd (`/proc/self/environ`), other
        // than those a worker is given on purpose (PATH, LANG, TZ, HOME, ...):
        // an identical `NAME=value` entry below a worker is a leak, like the
        // canary set at gate start.
        let shared: BTreeSet<String> = self.worker_env_keys(0);
        let harness: BTreeSet<Vec<u8>> = procfs::environ(std::process::id() as i32)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| {
                let name = procfs::env_keys(std::slice::from_ref(e));
                !name.first().is_some_and(|n| shared.contains(n))
            })
            .collect();
        let leaks_in = |env: &[Vec<u8>]| -> Vec<String> {
            let mut names: Vec<String> = env
                .iter()
                .filter(|e| harness.contains(*e))
                .flat_map(|e| procfs::env_keys(std::slice::from_ref(e)))
                .filter(|n| n != CANARY_NAME)
                .collect();
            names.sort();
            names.dedup();
            if procfs::env_contains(env, CANARY_NAME, &self.canary) {
                names.insert(0, CANARY_NAME.to_string());
            }
            names
        };
        let mut rows = Vec::new();
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, w) in self.workers.iter().enumerate() {
            let o = &self.observed[i];
            let allowed: BTreeSet<String> = self.worker_env_keys(i);
            for p in procfs::descendants(&procs, w.child.pid() as i32) {
                seen.insert(p.pid);
                let role = role_of(o, &p, self.backend.new_pid_namespace());
                let Some(env) = procfs::environ(p.pid) else {
                    if procfs::still_running(&p) {
                        problems.push(format!(
                            "worker {}: cannot read /proc/{}/environ of its {role}",
                            w.name, p.pid
                        ));
                    }
                    continue;
                };
                let keys = procfs::env_keys(&env);
                let leaked = leaks_in(&env);
                if !leaked.is_empty() {
                    problems.push(format!(
                        "worker {}: {} of the harness's variables ({}) reached its {role} (pid {})",
                        w.name,
                        leaked.len(),
                        first_names(&leaked),
                        p.pid
                    ));
                }
                let unexpected: Vec<&String> = if role == "worker" {
                    keys.iter().filter(|k| !allowed.contains(*k)).collect()
                } else {
                    Vec::new()
                };
                if !unexpected.is_empty() {
                    problems.push(format!(
                        "worker {}: unexpected variables {unexpected:?} in the worker's environment",
                        w.name
                    ));
                }
                rows.push(json!({
                    "worker": w.name,
                    "pid": p.pid,
                    "role": role,
                    "names": keys,
                    "leaked_from_harness": leaked,
                }));
            }
        }
        // Anything else carrying the run's marker (an escaped process) is read too.
        let marker = format!("{MARKER_NAME}={}", self.marker);
        for p in procs.values() {
            if seen.contains(&p.pid) || p.exited() {
                continue;
            }
            let Some(env) = procfs::environ(p.pid) else {
                continue;
            };
            if env.iter().any(|e| e.as_slice() == marker.as_bytes()) {
                let leaked = leaks_in(&env);
                if !leaked.is_empty() {
                    problems.push(format!(
                        "process {} carrying the run's marker holds {} of the harness's variables ({})",
                        p.pid,
                        leaked.len(),
                        first_names(&leaked)
                    ));
                }
                rows.push(json!({
                    "worker": null,
                    "pid": p.pid,
                    "role": "marked, outside the worker trees",
                    "names": procfs::env_keys(&env),
                    "leaked_from_harness": leaked,
                }));
            }
        }
        let allow: Vec<String> = self.worker_env_keys(0).into_iter().collect();
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "environment-allowlist",
                    None,
                    format!(
                        "neither the harness canary {CANARY_NAME} nor any other variable of the harness's own \
                         environment (other than the allowlisted names) is in any of the {} processes of the two workers' \
                         trees (workers, job children, grandchildren); each worker's environment holds only \
                         allowlisted variables",
                        rows.len()
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
            .with_observed(json!({
                "canary_variable": CANARY_NAME,
                "harness_variables_watched": harness.len(),
                "allowlist": allow,
                "processes": rows,
            })),
        );
    }

    /// Variable names a worker may have: those the harness gave it, plus PWD
    /// under bwrap (bwrap sets it for `--chdir`).
    fn worker_env_keys(&self, i: usize) -> BTreeSet<String> {
        let spec = &self.specs[i];
        let mut keys: BTreeSet<String> = self
            .ctx
            .child_env(&spec.home, &spec.tmp)
            .into_keys()
            .collect();
        for k in [
            "VCC_WORKER_NAME",
            "VCC_WORKER_ID",
            "VCC_WORKER_TOKEN",
            "VCC_WORKER_DAEMON_ID",
            "VCC_WORKER_DATA",
            MARKER_NAME,
        ] {
            keys.insert(k.to_string());
        }
        if self.backend.new_pid_namespace() {
            keys.insert("PWD".into());
        }
        keys
    }

    fn cancel_and_finish(&mut self) -> Result<(), String> {
        self.workers[1].pump(Duration::ZERO);
        self.workers[0].pump(Duration::ZERO);
        let a_outputs_at_cancel = self.workers[0].outputs().count();
        let a_finished_at_cancel = self.workers[0].finished.is_some();
        let b_outputs_at_cancel = self.workers[1].outputs().count();
        let b_running_at_cancel =
            self.workers[1].finished.is_none() && (b_outputs_at_cancel as u64) < JOB_EVENTS;
        self.workers[0].send(&json!({"cmd": "cancel", "job": "job-a"}))?;
        let cancel_sent = Instant::now();
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "worker a's `job.cancelled`",
            |ws| ws[0].cancelled.is_some(),
        )?;
        let acknowledged_ms = cancel_sent.elapsed().as_millis() as u64;

        // A's job: the OS, not the worker, says whether it stopped.
        let a = self.observed[0].clone();
        let (child, gc) = (a.child.expect("resolved"), a.grandchild.expect("resolved"));
        let q = quiesce(&child, &gc, QUIESCE_TIMEOUT, &mut self.workers);
        let mut escalation = Vec::new();
        if !q.quiet {
            let members = procfs::live_group_members(child.pgid);
            let refs: Vec<&ProcInfo> = members.iter().collect();
            escalation = survey::stop_processes(&refs, process::GRACE);
        }
        let needed_kill: Vec<i32> = escalation
            .iter()
            .filter(|s| s.stopped_by.contains("KILL"))
            .map(|s| s.pid)
            .collect();
        let escaped: Vec<ProcInfo> = [&child, &gc]
            .iter()
            .filter(|p| procfs::still_running(p))
            .filter_map(|p| procfs::read(p.pid))
            .filter(|now| now.pgid != child.pgid)
            .collect();
        let observed = json!({
            "worker": "a",
            "job_pgid": child.pgid,
            "child": proc_json(&child),
            "grandchild": proc_json(&gc),
            "worker_acknowledged_ms": acknowledged_ms,
            "worker_state": self.workers[0].cancelled.clone().flatten(),
            "quiescent": q.quiet,
            "waited_ms": q.waited_ms,
            "group_answers_signal_0": group_answers_signal_0(child.pgid),
            "live_after_wait": q.live,
            "escalation": escalation,
            "needed_kill": needed_kill,
            "escaped_group": escaped.iter().map(proc_json).collect::<Vec<_>>(),
        });
        self.checks.push(
            if q.quiet {
                Check::pass(
                    "cancel-quiescence",
                    None,
                    format!(
                        "worker a's cancelled job stopped: its process group {} (child {}, grandchild {}) \
                         had no live member {} ms after the cancellation, as /proc shows",
                        child.pgid, child.pid, gc.pid, q.waited_ms
                    ),
                )
            } else {
                let mut what = vec![format!(
                    "worker a's job (process group {}: child {}, grandchild {}) still had live processes {:?} \
                     {} s after its cancellation",
                    child.pgid,
                    child.pid,
                    gc.pid,
                    q.live,
                    QUIESCE_TIMEOUT.as_secs()
                )];
                if !escalation.is_empty() {
                    what.push(format!(
                        "the gate sent TERM to the group's live members; {}",
                        if needed_kill.is_empty() {
                            "TERM stopped them".to_string()
                        } else {
                            format!("pids {needed_kill:?} ignored TERM and needed KILL")
                        }
                    ));
                }
                for p in &escaped {
                    what.push(format!(
                        "pid {} left the job's process group (now group {}, session {}) and still runs; the \
                         end-of-run survey looks for it",
                        p.pid, p.pgid, p.sid
                    ));
                }
                Check::fail(
                    "cancel-quiescence",
                    None,
                    format!(
                        "{}; a cancelled job must stop its whole process group: fix the daemon's handling \
                         of the hub's run.cleanup",
                        what.join("; ")
                    ),
                )
            }
            .with_observed(observed),
        );

        // B runs on to its expected output.
        let b_result = wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "worker b's `job.finished`",
            |ws| ws[1].finished.is_some() || ws[1].failed.is_some(),
        );
        let b = self.observed[1].clone();
        let (bchild, bgc) = (b.child.expect("resolved"), b.grandchild.expect("resolved"));
        let bq = quiesce(&bchild, &bgc, QUIESCE_TIMEOUT, &mut self.workers);
        if !bq.quiet {
            let members = procfs::live_group_members(bchild.pgid);
            let refs: Vec<&ProcInfo> = members.iter().collect();
            survey::stop_processes(&refs, process::GRACE);
        }
        let bw = &self.workers[1];
        let seqs: Vec<u64> = bw.outputs().filter_map(|e| e.data.seq).collect();
        let expected_seqs: Vec<u64> = (0..JOB_EVENTS).collect();
        let expected_output = format!(
            "fixture reply {} after {JOB_EVENTS} events",
            self.specs[1].nonce
        );
        let completed: Vec<Option<String>> = bw
            .events
            .iter()
            .filter(|e| e.kind == "run.completed")
            .map(|e| e.data.output.clone())
            .collect();
        let a_completed = self.workers[0]
            .events
            .iter()
            .any(|e| e.kind == "run.completed");
        let mut problems = Vec::new();
        if let Err(e) = &b_result {
            problems.push(format!("worker b's job did not finish: {e}"));
        }
        if let Some(err) = &bw.failed {
            problems.push(format!("worker b's job failed: {err}"));
        }
        if seqs != expected_seqs {
            problems.push(format!(
                "worker b's outputs had sequence {} numbers, expected 0..{JOB_EVENTS} in order",
                seqs.len()
            ));
        }
        if completed != vec![Some(expected_output.clone())] {
            problems.push(format!(
                "worker b's completion was {completed:?}, expected [{expected_output:?}]"
            ));
        }
        if !bq.quiet {
            problems.push(format!(
                "worker b's finished job left live processes {:?} in group {}",
                bq.live, bchild.pgid
            ));
        }
        if !b_running_at_cancel {
            problems.push(format!(
                "worker b's job had already finished ({b_outputs_at_cancel} outputs) when a's was cancelled, \
                 so independence was not observed"
            ));
        }
        if a_finished_at_cancel || a_completed || a_outputs_at_cancel as u64 >= JOB_EVENTS {
            problems.push("worker a's job was not mid-run when cancelled".into());
        }
        let observed = json!({
            "a": {"outputs_at_cancel": a_outputs_at_cancel, "outputs_total": self.workers[0].outputs().count(), "completed": a_completed, "state": self.workers[0].cancelled.clone().flatten()},
            "b": {
                "running_at_cancel": b_running_at_cancel,
                "outputs_at_cancel": b_outputs_at_cancel,
                "outputs_total": seqs.len(),
                "expected_outputs": JOB_EVENTS,
                "completion": completed,
                "expected_completion": expected_output,
                "job_pgid": bchild.pgid,
                "group_quiescent_after_finish": bq.quiet,
                "waited_ms": bq.waited_ms,
            },
        });
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "independent-cancellation",
                    None,
                    format!(
                        "cancelling worker a's job mid-run ({a_outputs_at_cancel} of {JOB_EVENTS} outputs) left \
                         worker b's job running ({b_outputs_at_cancel} outputs at that moment) to its expected \
                         output, all {JOB_EVENTS} events in order; b's job group then emptied"
                    ),
                )
            } else {
                Check::fail(
                    "independent-cancellation",
                    None,
                    format!(
                        "{}; cancelling one worker's job must not touch the other's: see \
                         DIR/logs/{GATE}/worker-b.stdout",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(observed),
        );
        for w in self.workers.iter_mut() {
            w.send(&json!({"cmd": "status"}))?;
        }
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "both workers' `status`",
            |ws| ws.iter().all(|w| !w.statuses.is_empty()),
        )?;
        Ok(())
    }

    fn check_routing(&mut self) {
        let mut problems = Vec::new();
        let mut rows = Vec::new();
        for (i, w) in self.workers.iter().enumerate() {
            let own = &self.specs[i];
            let other = &self.specs[1 - i];
            let ready = w.ready.as_ref().expect("ready");
            let o = &self.observed[i];
            if ready.daemon_id != DISPLAY_ID || ready.daemons != [DISPLAY_ID] {
                problems.push(format!(
                    "worker {}'s hub had daemons {:?} (client id {}), expected exactly [{DISPLAY_ID}]",
                    w.name, ready.daemons, ready.daemon_id
                ));
            }
            let started_job = w
                .events
                .iter()
                .find(|e| e.kind == "run.started")
                .and_then(|e| e.data.daemon_job_id.clone());
            let fixture: Vec<_> = w
                .events
                .iter()
                .filter(|e| e.kind == "run.output" || e.kind == "run.completed")
                .collect();
            let foreign = fixture
                .iter()
                .filter(|e| e.data.nonce.as_deref() == Some(other.nonce.as_str()))
                .count();
            let wrong = fixture
                .iter()
                .filter(|e| {
                    e.data.nonce.as_deref() != Some(own.nonce.as_str())
                        || e.data.daemon_job_id != started_job
                        || (e.kind == "run.output"
                            && (e.data.conversation_id.as_deref() != Some(CONVERSATION_ID)
                                || e.data.pid != w.child_pid()))
                })
                .count();
            let labelled = fixture.iter().all(|e| {
                e.data
                    .label
                    .as_deref()
                    .is_some_and(|l| l.contains("local protocol fixture"))
            });
            if foreign > 0 {
                problems.push(format!(
                    "worker {} received {foreign} event(s) of worker {}'s job",
                    w.name, other.name
                ));
            }
            if wrong > 0 {
                problems.push(format!(
                    "worker {} received {wrong} event(s) not from its own job (nonce, daemon job id, conversation or child pid differ)",
                    w.name
                ));
            }
            if !labelled {
                problems.push(format!(
                    "worker {}'s fixture events are not all labelled as a local protocol fixture",
                    w.name
                ));
            }
            let status = w.statuses.last();
            if let Some(st) = status {
                if st.daemons != [DISPLAY_ID] {
                    problems.push(format!(
                        "worker {}'s hub listed daemons {:?} after the jobs, expected exactly [{DISPLAY_ID}]",
                        w.name, st.daemons
                    ));
                }
            }
            rows.push(json!({
                "worker": w.name,
                "status_after_jobs": status,
                "daemon_id": ready.daemon_id,
                "hub_daemons": ready.daemons,
                "conversation_id": CONVERSATION_ID,
                "nonce": own.nonce,
                "daemon_job_id": started_job,
                "events": w.events.len(),
                "fixture_events": fixture.len(),
                "foreign_events": foreign,
                "mismatched_events": wrong,
                "child_pid_in_namespace": w.child_pid(),
                "child_pgid_in_namespace": w.outputs().find_map(|e| e.data.pgid),
                "child_host_pid": o.child.as_ref().map(|p| p.pid),
                "grandchild_host_pid": o.grandchild.as_ref().map(|p| p.pid),
                "job_pgid": o.child.as_ref().map(|p| p.pgid),
            }));
        }
        let (ca, cb) = (
            self.observed[0].child.as_ref().map(|p| p.pid),
            self.observed[1].child.as_ref().map(|p| p.pid),
        );
        if ca == cb {
            problems.push(format!("both jobs report the same child process {ca:?}"));
        }
        let (ga, gb) = (
            self.observed[0].grandchild.as_ref().map(|p| p.pid),
            self.observed[1].grandchild.as_ref().map(|p| p.pid),
        );
        if ga == gb {
            problems.push(format!(
                "both jobs report the same grandchild process {ga:?}"
            ));
        }
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "same-ids-separate-routing",
                    None,
                    format!(
                        "both workers used display id {DISPLAY_ID} and conversation id {CONVERSATION_ID}; every \
                         event of each job reached only its own worker; the jobs ran in different child \
                         processes ({} and {})",
                        ca.unwrap_or(0),
                        cb.unwrap_or(0)
                    ),
                )
            } else {
                Check::fail(
                    "same-ids-separate-routing",
                    None,
                    format!(
                        "{}; the same display and conversation ids in two workers must never route one's \
                         events to the other",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({"workers": rows, "fixture": "local protocol fixture, not a vendor reply"})),
        );
    }

    fn check_root_visibility(&mut self) -> Result<(), String> {
        for i in 0..2 {
            let target = self.specs[1 - i].data.display().to_string();
            self.workers[i].send(&json!({"cmd": "peek", "path": target}))?;
        }
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "both workers' `peek`",
            |ws| ws.iter().all(|w| !w.peeks.is_empty()),
        )?;
        let peeks: Vec<Value> = self
            .workers
            .iter()
            .zip(NAMES.iter().rev())
            .map(|(w, other)| json!({"worker": w.name, "tried_root_of": other, "answer": w.peeks[0]}))
            .collect();
        let readable: Vec<&str> = self
            .workers
            .iter()
            .filter(|w| w.peeks[0].readable)
            .map(|w| w.name)
            .collect();
        let observed = json!({"backend": self.backend.name(), "peeks": peeks});
        let check = match (&self.backend, readable.is_empty()) {
            (_, true) => Check::pass(
                "root-visibility",
                None,
                "neither worker could list or read the other's data root",
            ),
            (Backend::Bwrap(_), false) => Check::fail(
                "root-visibility",
                None,
                format!(
                    "worker(s) {readable:?} could read the other worker's root inside bwrap; only a worker's own \
                     root may be bound into its sandbox"
                ),
            ),
            (Backend::Process, false) => Check::warn(
                "root-visibility",
                None,
                format!(
                    "process backend: worker(s) {readable:?} could read the other worker's root (same user, same \
                     mount namespace); roots are private by environment only. Use --isolation bwrap to hide them"
                ),
            ),
        };
        self.checks.push(check.with_observed(observed));
        Ok(())
    }

    // ----- teardown --------------------------------------------------------

    fn teardown(&mut self) {
        for w in self.workers.iter_mut() {
            let _ = w.send(&json!({"cmd": "stop"}));
        }
        let _ = wait_for(
            &mut self.workers,
            STOP_TIMEOUT,
            "both workers' `stopped`",
            |ws| ws.iter().all(|w| w.stopped || w.closed),
        );
        let deadline = Instant::now() + STOP_TIMEOUT;
        let mut stops = Vec::new();
        let mut problems = Vec::new();
        for w in self.workers.iter_mut() {
            let left = deadline.saturating_duration_since(Instant::now());
            let exited = w.child.wait_timeout(left);
            let report = w.child.stop();
            if !w.stopped || exited.is_none() || report.kill_needed {
                problems.push(format!(
                    "worker {} {}",
                    w.name,
                    if report.kill_needed {
                        "did not exit after `stop` and ignored TERM: it needed KILL".to_string()
                    } else if exited.is_none() {
                        "did not exit after `stop`; TERM stopped it".to_string()
                    } else {
                        "exited without answering `stopped`".to_string()
                    }
                ));
            }
            stops.push(json!({
                "worker": w.name,
                "answered_stopped": w.stopped,
                "exited_after_stop": exited.is_some(),
                "term_sent": report.term_sent,
                "kill_needed": report.kill_needed,
                "status": report.leader_status,
            }));
        }
        let mut pgids: BTreeSet<i32> = self.job_pgids.clone();
        for (i, w) in self.workers.iter().enumerate() {
            pgids.insert(w.child.pid() as i32);
            if let Some(p) = &self.observed[i].worker {
                pgids.insert(p.pgid);
            }
        }
        let rules = survey::SurveyRules {
            pgids,
            marker_name: MARKER_NAME.into(),
            marker_value: self.marker.clone(),
            roots: vec![self.base.clone()],
            exclude: BTreeSet::from([std::process::id() as i32]),
        };
        let survivors = survey::survey(&rules);
        let stopped = survey::stop_all(&survivors, process::GRACE);
        let after = survey::survey(&rules);
        if !survivors.is_empty() {
            let list: Vec<String> = survivors
                .iter()
                .map(|s| {
                    let how = stopped
                        .iter()
                        .find(|x| x.pid == s.pid)
                        .map_or("?", |x| x.stopped_by.as_str());
                    format!(
                        "pid {} (pgid {}, sid {}; matched by {}; stopped by {how})",
                        s.pid,
                        s.pgid,
                        s.sid,
                        s.matched_by.join("+")
                    )
                })
                .collect();
            problems.push(format!(
                "RESIDUE: {} process(es) tied to the run survived the workers' stop: {}",
                survivors.len(),
                list.join(", ")
            ));
        }
        if !after.is_empty() {
            problems.push(format!(
                "RESIDUE: pids {:?} still run after TERM, grace and KILL",
                after.iter().map(|s| s.pid).collect::<Vec<_>>()
            ));
        }
        let observed = json!({
            "verdict": if survivors.is_empty() { "CLEAN" } else { "RESIDUE" },
            "workers": stops,
            "survey": {
                "by": ["process group", "environment marker", "working directory under the run's roots"],
                "process_groups": rules.pgids,
                "marker": format!("{MARKER_NAME}={}", self.marker),
                "roots": self.base.display().to_string(),
                "found": survivors,
                "stopped": stopped,
                "remaining_after_kill": after,
            },
        });
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "teardown",
                    None,
                    "after `stop` both workers exited on their own, and a survey of /proc by process group, \
                     environment marker and working directory found no process tied to the run",
                )
            } else {
                Check::fail(
                    "teardown",
                    None,
                    format!(
                        "{}; every process a worker starts must end with it: keep children in the job's process \
                         group and stop the group",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(observed),
        );
    }

    fn check_private_roots(&mut self, before: &roots::Snapshot, after: &roots::Snapshot) {
        let changes = roots::diff(before, after);
        let roots_rel = PathBuf::from("roots").join(GATE);
        let mut outside = Vec::new();
        let mut per: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for c in &changes {
            let p = Path::new(&c.path);
            match NAMES.iter().find(|n| p.starts_with(roots_rel.join(n))) {
                Some(n) => per.entry(n).or_default().push(c.path.clone()),
                None => outside.push(c.clone()),
            }
        }
        let mut problems = Vec::new();
        if !outside.is_empty() {
            problems.push(format!(
                "changes outside the workers' roots: {}",
                outside
                    .iter()
                    .take(10)
                    .map(|c| format!("{} {}", c.change, c.path))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut rows = Vec::new();
        for (i, spec) in self.specs.iter().enumerate() {
            let other = &self.specs[1 - i];
            let mut foreign = Vec::new();
            let mut own_tagged = 0;
            let added = per.get(spec.name).cloned().unwrap_or_default();
            for rel in &added {
                let path = self.ctx.evidence_dir.join(rel);
                if !path.is_file() {
                    continue;
                }
                match roots::file_tag(&path) {
                    Some(t) if t == spec.id => own_tagged += 1,
                    Some(t) if t == other.id => foreign.push(rel.clone()),
                    _ => {}
                }
            }
            let required = [
                spec.home.join(".vcc-worker"),
                spec.tmp.join(".vcc-worker"),
                spec.data.join(".vcc-worker"),
            ];
            let missing: Vec<String> = required
                .iter()
                .filter(|p| roots::file_tag(p).as_deref() != Some(spec.id.as_str()))
                .map(|p| p.display().to_string())
                .collect();
            let child_files = added
                .iter()
                .filter(|r| r.contains("/jobs/") && r.contains("child-"))
                .count();
            if !foreign.is_empty() {
                problems.push(format!(
                    "worker {}'s root holds files written by worker {}: {foreign:?}",
                    spec.name, other.name
                ));
            }
            if !missing.is_empty() {
                problems.push(format!(
                    "worker {} did not write its tag where its HOME, TMPDIR and data root point: missing {missing:?}",
                    spec.name
                ));
            }
            if child_files == 0 {
                problems.push(format!(
                    "worker {}'s job child wrote nothing under its data root",
                    spec.name
                ));
            }
            rows.push(json!({
                "worker": spec.name,
                "root": spec.root.display().to_string(),
                "changed_entries": added.len(),
                "own_tagged_files": own_tagged,
                "job_child_files": child_files,
                "foreign_files": foreign,
                "missing_tags": missing,
                "entries": added.iter().take(50).collect::<Vec<_>>(),
            }));
        }
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "private-roots",
                    None,
                    "each worker (and its job) wrote only under its own root: the evidence directory changed \
                     nowhere else, and neither root holds a file tagged by the other worker",
                )
            } else {
                Check::fail(
                    "private-roots",
                    None,
                    format!(
                        "{}; workers must write only under their own HOME, TMPDIR and data roots",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({
                "snapshot": "DIR before and after the workers ran (kind, size, mtime, mode), DIR/logs/worker-isolation excluded",
                "outside_roots": outside,
                "workers": rows,
            })),
        );
    }
}

/// Result of waiting for a job's processes to stop.
struct Quiescence {
    quiet: bool,
    waited_ms: u64,
    live: Vec<i32>,
}

/// Waits up to `timeout` until `child` and `grandchild` no longer run and the
/// child's process group has no live member; keeps the workers' output
/// flowing meanwhile.
fn quiesce(
    child: &ProcInfo,
    grandchild: &ProcInfo,
    timeout: Duration,
    workers: &mut [WorkerProc],
) -> Quiescence {
    let started = Instant::now();
    loop {
        let mut live: Vec<i32> = procfs::live_group_members(child.pgid)
            .iter()
            .map(|p| p.pid)
            .collect();
        for p in [child, grandchild] {
            if procfs::still_running(p) && !live.contains(&p.pid) {
                live.push(p.pid);
            }
        }
        live.sort_unstable();
        let waited_ms = started.elapsed().as_millis() as u64;
        if live.is_empty() {
            return Quiescence {
                quiet: true,
                waited_ms,
                live,
            };
        }
        if started.elapsed() >= timeout || crate::interrupt::requested() {
            return Quiescence {
                quiet: false,
                waited_ms,
                live,
            };
        }
        for w in workers.iter_mut() {
            w.pump(Duration::ZERO);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process below `root` whose pid in its own namespace is `inner`, at
/// pid-namespace depth `depth`.
fn find_inner(
    procs: &BTreeMap<i32, ProcInfo>,
    root: i32,
    inner: i32,
    depth: usize,
) -> Option<ProcInfo> {
    procfs::descendants(procs, root)
        .into_iter()
        .find(|p| p.inner_pid() == inner && p.ns_pids.len() == depth && !p.exited())
}

fn role_of(o: &Observed, p: &ProcInfo, bwrap: bool) -> &'static str {
    let is = |x: &Option<ProcInfo>| x.as_ref().is_some_and(|q| q.pid == p.pid);
    if is(&o.worker) {
        "worker"
    } else if is(&o.child) {
        "job child"
    } else if is(&o.grandchild) {
        "job grandchild"
    } else if bwrap && (is(&o.spawn) || p.inner_pid() == 1) {
        "bwrap"
    } else {
        "other descendant"
    }
}

/// `kill(-pgid, 0)` succeeds: some member, zombies included, still exists.
/// Recorded next to the `/proc` reading, which does not count zombies.
fn group_answers_signal_0(pgid: i32) -> bool {
    rustix::process::Pid::from_raw(pgid)
        .is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
}

fn proc_json(p: &ProcInfo) -> Value {
    json!({
        "host_pid": p.pid,
        "pid_in_namespace": p.inner_pid(),
        "pgid": p.pgid,
        "sid": p.sid,
        "still_running": procfs::still_running(p),
        "state_now": procfs::read(p.pid).filter(|n| n.start_time == p.start_time).map(|n| n.state.to_string()),
    })
}

fn describe_outcome(o: &HelloOutcome) -> String {
    match o {
        HelloOutcome::Accepted { reply } => format!("accepted ({reply})"),
        HelloOutcome::Refused { close_code, reason } => {
            format!("closed with code {close_code} ({reason})")
        }
        HelloOutcome::Error { error } => format!("error: {error}"),
    }
}

/// Up to five names, then "and N more".
fn first_names(names: &[String]) -> String {
    let mut s = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 5 {
        s.push_str(&format!(" and {} more", names.len() - 5));
    }
    s
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// `n` random bytes from `/dev/urandom`, as lower-case hex.
fn random_hex(n: usize) -> Result<String, String> {
    use std::io::Read;
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
