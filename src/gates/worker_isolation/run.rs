//! How the `worker-isolation` gate runs its two workers and observes them:
//! the private roots, the spawn under the selected backend, the protocol
//! exercise (listeners and tokens, jobs, the environment, cancellation,
//! routing, root visibility; the steps live in the sibling modules as
//! `impl Run` blocks) and the teardown. [`super::decide`] judges the
//! [`super::Observation`] it fills.

use super::*;

/// One worker's private settings.
pub(super) struct WorkerSpec {
    pub(super) name: &'static str,
    pub(super) root: PathBuf,
    pub(super) home: PathBuf,
    pub(super) tmp: PathBuf,
    pub(super) data: PathBuf,
    pub(super) id: String,
    pub(super) token: String,
    pub(super) nonce: String,
}

/// The OS's view of one worker and its job.
#[derive(Default, Clone)]
pub(super) struct Observed {
    pub(super) spawn: Option<ProcInfo>,
    pub(super) worker: Option<ProcInfo>,
    pub(super) child: Option<ProcInfo>,
    pub(super) grandchild: Option<ProcInfo>,
}

pub(super) struct Run<'a> {
    pub(super) ctx: &'a RunContext,
    pub(super) backend: Backend,
    pub(super) variant: Option<hostile::Variant>,
    pub(super) base: PathBuf,
    pub(super) read_only: Vec<PathBuf>,
    pub(super) sdk_package: PathBuf,
    pub(super) marker: String,
    pub(super) canary: String,
    pub(super) depth: usize,
    pub(super) specs: Vec<WorkerSpec>,
    pub(super) workers: Vec<WorkerProc>,
    pub(super) observed: Vec<Observed>,
    pub(super) job_pgids: BTreeSet<i32>,
    pub(super) obs: Observation,
}

impl<'a> Run<'a> {
    pub(super) fn new(
        ctx: &'a RunContext,
        backend: Backend,
        variant: Option<hostile::Variant>,
        base: PathBuf,
        read_only: Vec<PathBuf>,
        sdk_package: PathBuf,
        canary: String,
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
            canary,
            depth,
            specs,
            workers: Vec::new(),
            observed: vec![Observed::default(), Observed::default()],
            job_pgids: BTreeSet::new(),
            obs: Observation::backend_only(BackendObs {
                requested: String::new(),
                selected: String::new(),
                preflight: serde_json::Value::Null,
                failure: None,
            }),
        })
    }

    pub(super) fn execute(mut self, backend: BackendObs) -> Observation {
        self.obs.backend = backend;
        self.obs.logs = self
            .ctx
            .evidence_dir
            .join("logs")
            .join(GATE)
            .display()
            .to_string();
        let skip = vec![PathBuf::from("logs").join(GATE)];
        // Gates may run beside this one: which did, between the two
        // snapshots, decides what private-roots leaves out.
        let mark = self.ctx.activity.mark();
        let before = roots::snapshot(&self.ctx.evidence_dir, &skip);
        if let Err(e) = self.exercise() {
            self.obs.protocol_error = Some(e);
        }
        self.teardown();
        let after = roots::snapshot(&self.ctx.evidence_dir, &skip);
        // A gate that starts after the second snapshot did no work the
        // comparison could see: its folders stay compared.
        let end = self.ctx.activity.mark();
        let beside = self.ctx.activity.ran_between(mark, end, GATE);
        self.observe_private_roots(&before, &after, &beside);
        self.obs
    }

    fn exercise(&mut self) -> Result<(), String> {
        self.spawn_workers()?;
        wait_for(
            &mut self.workers,
            READY_TIMEOUT,
            "both workers' `ready`",
            |ws| ws.iter().all(|w| w.ready.is_some()),
        )?;
        // Each worker read its token before reporting ready: the evidence
        // directory (uploaded as a CI artifact) must not keep it.
        for spec in &self.specs {
            let token_file = spec.root.join("token");
            std::fs::remove_file(&token_file)
                .map_err(|e| format!("cannot remove {}: {e}", token_file.display()))?;
        }
        self.resolve_workers()?;
        self.observe_processes();
        self.observe_tokens();
        self.start_jobs()?;
        self.resolve_jobs()?;
        self.observe_environment();
        self.cancel_and_finish()?;
        self.observe_routing();
        self.observe_root_visibility()?;
        Ok(())
    }

    // ----- start -------------------------------------------------------

    fn spawn_workers(&mut self) -> Result<(), String> {
        for (i, spec) in self.specs.iter().enumerate() {
            // The token goes in a 0600 file in the worker's own root, never on
            // a command line (bwrap's `--setenv` arguments are world-readable
            // in /proc/<pid>/cmdline) nor in an environment value.
            let token_file = spec.root.join("token");
            write_private(&token_file, spec.token.as_bytes()).map_err(|e| {
                format!(
                    "worker {}: cannot write {}: {e}",
                    spec.name,
                    token_file.display()
                )
            })?;
            let mut env = self.ctx.child_env(&spec.home, &spec.tmp);
            for (k, v) in [
                ("VCC_WORKER_NAME", spec.name.to_string()),
                ("VCC_WORKER_ID", spec.id.clone()),
                ("VCC_WORKER_TOKEN_FILE", token_file.display().to_string()),
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
}

/// The process below `root` whose pid in its own namespace is `inner`, at
/// pid-namespace depth `depth`.
pub(super) fn find_inner(
    procs: &BTreeMap<i32, ProcInfo>,
    root: i32,
    inner: i32,
    depth: usize,
) -> Option<ProcInfo> {
    procfs::descendants(procs, root)
        .into_iter()
        .find(|p| p.inner_pid() == inner && p.ns_pids.len() == depth && !p.exited())
}

pub(super) fn role_of(o: &Observed, p: &ProcInfo, bwrap: bool) -> &'static str {
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
pub(super) fn group_answers_signal_0(pgid: i32) -> bool {
    rustix::process::Pid::from_raw(pgid)
        .is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
}

pub(super) fn proc_row(p: &ProcInfo) -> ProcRow {
    ProcRow {
        host_pid: p.pid,
        pid_in_namespace: p.inner_pid(),
        pgid: p.pgid,
        sid: p.sid,
        still_running: procfs::still_running(p),
        state_now: procfs::read(p.pid)
            .filter(|n| n.start_time == p.start_time)
            .map(|n| n.state.to_string()),
    }
}

pub(super) fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// `n` random bytes from `/dev/urandom`, as lower-case hex.
pub(super) fn random_hex(n: usize) -> Result<String, String> {
    use std::io::Read;
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `bytes` to a new file at `path` readable and writable by its owner only.
pub(super) fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}
