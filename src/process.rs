//! The one way every gate runs a child process.
//!
//! A [`ChildSpec`] names the program, arguments, working directory, the whole
//! environment (the child inherits nothing), a timeout and the log files.
//! [`duct`] spawns, feeds, captures and waits: the environment is cleared and
//! set explicitly, stdin is the given bytes or `/dev/null`, output goes to
//! the log files, a non-zero exit is a result rather than an error, and a
//! `before_spawn` hook gives the child its own process group. What is ours:
//! signals to that group (SIGTERM, [`GRACE`], SIGKILL, then the group swept
//! the same way once the leader is gone) and, in [`residue`], the survey of
//! what outlives a gate however it left its group. Every signal sent and
//! every process reaped is recorded in the [`journal`], which the evidence
//! carries.
//!
//! [`run`] runs a step to completion; [`spawn`] and [`spawn_long`] start a
//! child the caller drives (a server, a worker spoken to in lines) and return
//! one handle type, [`Running`], stopped by [`Running::stop`] or on drop.

pub mod disk;
pub mod journal;
pub mod log_cap;
pub mod priority;
pub mod procfs;
pub mod residue;
pub mod survey;

use crate::evidence::SignalWhy;
use crate::interrupt;
use procfs::ProcInfo;
use rustix::process::{Pid, Signal};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{self, BufRead, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Time between SIGTERM and SIGKILL when a process group is stopped (cut to
/// [`INTERRUPTED_GRACE`] once the run is interrupted: see [`grace`]).
pub const GRACE: Duration = Duration::from_secs(3);

/// Time between the interrupt and SIGKILL for every process of the run: a
/// CI cancel sends SIGKILL a few seconds after SIGTERM, and the evidence must
/// be sealed before it, whatever a child does with SIGTERM.
pub const INTERRUPTED_GRACE: Duration = Duration::from_millis(300);

/// The grace between SIGTERM and SIGKILL a stop allows now, for a nominal
/// `grace`: itself; once SIGINT or SIGTERM was noticed, what is left of
/// [`INTERRUPTED_GRACE`] after it (one deadline for every stop: the
/// pipeline sent SIGTERM to every running step's group when it noticed it,
/// so a stop begun later has nothing left to wait for; a process that left
/// its group gets SIGTERM from the residue sweep and, past the deadline,
/// SIGKILL right after). Stops read it on every poll, so one already waiting
/// is cut short too.
pub fn grace(nominal: Duration) -> Duration {
    match interrupt::since() {
        Some(since) => nominal.min(INTERRUPTED_GRACE.saturating_sub(since)),
        None => nominal,
    }
}

/// How long a stop waits for processes to be gone after SIGKILL, for a
/// nominal `wait`: itself, or at most [`INTERRUPTED_GRACE`] once
/// interrupted (SIGKILL is not refused; a process still there after that is
/// reported, not waited for).
pub fn kill_wait(nominal: Duration) -> Duration {
    if interrupt::requested() {
        nominal.min(INTERRUPTED_GRACE)
    } else {
        nominal
    }
}

/// How often a group is polled for emptiness while it is being stopped.
const POLL: Duration = Duration::from_millis(10);

/// Longest single wait on a running child before the timeout and the
/// interrupt flag are looked at again.
const WAKE: Duration = Duration::from_millis(100);

/// Raw wait status of a process killed by SIGKILL: what a leader whose
/// status could not be read is reported as.
const KILLED: i32 = 9;

/// Most bytes of each stream kept in memory for [`ChildOutput`]; the log files
/// hold everything.
const CAPTURE_LIMIT: u64 = 64 * 1024 * 1024;

/// Longest stdout line kept from a [`spawn_long`] child, in bytes; the rest of
/// a longer line is dropped.
const LONG_LINE_LIMIT: u64 = 1024 * 1024;

/// The nice value of the harness's background work: the threads of every
/// gate but the foreground ones ([`crate::catalogue::GateInfo::foreground`])
/// and so every process those threads start (a child inherits its creating
/// thread's nice value, as does a thread). At 5 a CPU-bound process gets
/// about a third of the share of one at 0 (the kernel's weights 335 and
/// 1024) while both want the CPU, and everything while nothing else does.
/// Not lower: the machine's other work runs at 0 too, and at 19 (weight 15)
/// two CPU hogs beside the run starved the background gates until `lbp
/// build` hit its time limit, a false FAIL.
pub const BACKGROUND_NICE: i32 = 5;

/// Lowers the calling thread's CPU priority to [`BACKGROUND_NICE`] (on
/// Linux the nice value is a thread's own; the threads and processes it
/// starts inherit it). A refusal is ignored: the work then runs at the
/// priority it had, which is slower for the foreground, never wrong.
///
/// `VCC_BACKGROUND_NICE=N` (0 to 19) replaces the value, for measuring what
/// the priority changes (`VCC_BACKGROUND_NICE=0`: none) or for a machine
/// with cores to spare.
pub fn run_in_background() {
    let nice = std::env::var(BACKGROUND_NICE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|n| (0..=19).contains(n))
        .unwrap_or(BACKGROUND_NICE);
    if nice > 0 {
        let _ = rustix::process::setpriority_process(None, nice);
    }
    priority::join_background();
}

/// The variable that replaces [`BACKGROUND_NICE`] (see [`run_in_background`]).
pub const BACKGROUND_NICE_VAR: &str = "VCC_BACKGROUND_NICE";

/// Names of variables a child may inherit from the harness when a gate asks
/// for the base environment ([`base_env`]).
pub const ALLOWLIST: &[&str] = &["PATH", "LANG"];

/// Leaders started here and not yet reaped by their handle: [`residue`] never
/// reaps these (their exit status belongs to the handle).
static HELD: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn held() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// True while a [`Running`] handle owns process `pid` (it will reap it).
pub(crate) fn is_held(pid: u32) -> bool {
    held().contains(&pid)
}

/// A child process to run.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// Program path or name (looked up on the child's `PATH`).
    pub program: PathBuf,
    /// Arguments, without the program.
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The child's whole environment.
    pub env: BTreeMap<String, String>,
    /// Wall-clock limit.
    pub timeout: Duration,
    /// Log file stem: output goes to `<stem>.stdout` and `<stem>.stderr`, the
    /// command line and result to `<stem>.cmd`.
    pub log_stem: PathBuf,
    /// Bytes written to the child's stdin, then closed (none: `/dev/null`).
    pub stdin: Option<Vec<u8>>,
}

/// What a finished child did.
#[derive(Debug, Clone)]
pub struct ChildOutput {
    /// Exit status of the group leader.
    pub status: ExitStatus,
    /// Captured stdout (first [`CAPTURE_LIMIT`] bytes).
    pub stdout: Vec<u8>,
    /// Captured stderr (first [`CAPTURE_LIMIT`] bytes).
    pub stderr: Vec<u8>,
    /// The timeout elapsed and the group was stopped.
    pub timed_out: bool,
    /// Wall-clock duration.
    pub duration: Duration,
    /// Members of the group still alive after the leader exited, stopped by
    /// TERM/KILL (their presence is a finding for the caller).
    pub stragglers_killed: bool,
    /// `<stem>.stdout`, `<stem>.stderr`.
    pub logs: (PathBuf, PathBuf),
}

impl ChildOutput {
    /// True when the leader exited with status 0 and no timeout occurred.
    pub fn success(&self) -> bool {
        self.status.success() && !self.timed_out
    }

    /// stdout as lossy UTF-8.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stderr as lossy UTF-8.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The last `lines` lines of stderr then stdout, for error messages.
    pub fn tail(&self, lines: usize) -> String {
        output_tail(&self.stdout_text(), &self.stderr_text(), lines)
    }

    /// "exit status 3", "killed by signal 9" or "timed out".
    pub fn describe(&self) -> String {
        if self.timed_out {
            return "timed out and was stopped".into();
        }
        describe_status(self.status)
    }
}

/// Why a child could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program could not be started.
    #[error("could not start `{program}` in {cwd}: {source}; check that the program exists and is executable")]
    Spawn {
        /// Program.
        program: String,
        /// Working directory.
        cwd: String,
        /// Cause.
        source: io::Error,
    },
    /// A log file could not be created.
    #[error("could not create log file {path}: {source}")]
    Log {
        /// Path.
        path: String,
        /// Cause.
        source: io::Error,
    },
    /// The run was interrupted (SIGINT/SIGTERM) while the child ran; the
    /// child's group was stopped.
    #[error("interrupted while `{program}` was running; its process group was stopped")]
    Interrupted {
        /// Program.
        program: String,
    },
}

/// The harness's own values of [`ALLOWLIST`] plus `TZ=UTC`: the start of every
/// child environment.
pub fn base_env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for name in ALLOWLIST {
        if let Ok(value) = std::env::var(name) {
            env.insert((*name).to_string(), value);
        }
    }
    env.entry("PATH".into())
        .or_insert_with(|| "/usr/bin:/bin".into());
    env.entry("LANG".into()).or_insert_with(|| "C.UTF-8".into());
    env.insert("TZ".into(), "UTC".into());
    env
}

/// Runs `spec` to completion (or timeout, or interrupt), then stops whatever
/// of its process group is left.
///
/// # Errors
/// [`RunError`] when the child cannot be started or its logs created, or when
/// the run is interrupted.
pub fn run(spec: &ChildSpec) -> Result<ChildOutput, RunError> {
    run_spawned(spec, spawn(spec)?)
}

/// [`run`] for a `spec` that [`crate::isolation::sandbox::confine`] wrapped
/// in bwrap: the child is stopped as [`Running::sandboxed`] says.
///
/// # Errors
/// As [`run`].
pub fn run_sandboxed(spec: &ChildSpec) -> Result<ChildOutput, RunError> {
    // Code under review is not started once the run is interrupted: a
    // sandbox begun now would be stopped while bwrap sets itself up, before
    // its `--die-with-parent` holds.
    if interrupt::requested() {
        return Err(RunError::Interrupted {
            program: spec.program.display().to_string(),
        });
    }
    let mut child = spawn(spec)?;
    child.sandboxed();
    run_spawned(spec, child)
}

fn run_spawned(spec: &ChildSpec, mut child: Running) -> Result<ChildOutput, RunError> {
    let mut timed_out = false;
    let mut interrupted = false;
    while child.try_status().is_none() {
        if child.timed_out() {
            timed_out = true;
            break;
        }
        if interrupt::requested() {
            interrupted = true;
            break;
        }
        let left = spec.timeout.saturating_sub(child.elapsed());
        child.wait_timeout(left.min(WAKE));
    }
    let stopped = child.stop();
    if interrupted {
        return Err(RunError::Interrupted {
            program: spec.program.display().to_string(),
        });
    }
    let (out_path, err_path) = child.logs().clone();
    // Logs are capped once the child ended (`process/log_cap.rs`): a cut
    // is said in the log itself, where it was made. A log in the temporary
    // directory is the verifier's own reading (`git cat-file --batch`),
    // read back whole and deleted with it, never evidence.
    if !out_path.starts_with(std::env::temp_dir()) {
        for log in [&out_path, &err_path] {
            let _ = log_cap::cap_log(log, log_cap::LOG_HEAD, log_cap::LOG_TAIL);
        }
    }
    Ok(ChildOutput {
        status: stopped.status,
        stdout: read_capped(&out_path),
        stderr: read_capped(&err_path),
        timed_out,
        duration: stopped.duration,
        stragglers_killed: stopped.exited_on_its_own && stopped.term_sent,
        logs: (out_path, err_path),
    })
}

/// A child spoken to in lines over its stdin and stdout (JSON lines, for
/// example), started by [`spawn_long`]: same discipline as [`run`] (own
/// process group, the whole environment given, logs under `log_stem`), but
/// the caller drives it and stops it. Used for the `worker-isolation` gate's
/// workers.
#[derive(Debug, Clone)]
pub struct LongSpec {
    /// Program path or name (looked up on the child's `PATH`).
    pub program: PathBuf,
    /// Arguments, without the program.
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The child's whole environment.
    pub env: BTreeMap<String, String>,
    /// Log file stem: `<stem>.stdout` (every line the child printed),
    /// `<stem>.stderr`, `<stem>.stdin` (every line sent), `<stem>.cmd`.
    pub log_stem: PathBuf,
    /// Values replaced by `<redacted>` in `<stem>.cmd` (a token passed on the
    /// command line, for example).
    pub redact: Vec<String>,
}

/// A started child: a server the caller talks to (the SDK runtime of the
/// `discovery-rpc` gate, from [`spawn`]), a worker spoken to in lines (from
/// [`spawn_long`]), or a step of [`run`].
///
/// The spec's `timeout` is not enforced by a thread: the caller polls
/// [`Running::timed_out`] and ends the child with [`Running::stop`].
/// Dropping a `Running` that was not stopped stops its group (TERM, grace,
/// KILL), so an early return never leaves it running.
#[derive(Debug)]
pub struct Running {
    handle: duct::Handle,
    pid: u32,
    pgid: Pid,
    started: Instant,
    timeout: Duration,
    logs: (PathBuf, PathBuf),
    cmd_log: PathBuf,
    cmd_text: String,
    status: Option<ExitStatus>,
    /// CPU time of the leader and the descendants it waited for, read from
    /// `/proc/<pid>/stat` while it was a zombie, just before it was reaped.
    cpu: Option<Duration>,
    /// A pidfd of the leader: readable once it exited, without reaping it
    /// (so its CPU time can be read first). `None` where the kernel has no
    /// `pidfd_open` (before Linux 5.3): duct's wait is used, CPU unknown.
    pidfd: Option<std::os::fd::OwnedFd>,
    talk: Option<Talk>,
    stopped: Option<Stopped>,
    /// The leader is bwrap around the step (see [`Running::sandboxed`]).
    sandboxed: bool,
    /// The gate whose thread started it: its signals and its reap are
    /// journalled for that gate whichever thread stops it.
    gate: Option<String>,
    /// The leader as `/proc` showed it just after the spawn (pid identity
    /// and parent, for the journal's reap record); none if unreadable.
    seen: Option<ProcInfo>,
    /// Program and arguments (redacted), for the journal's reap record.
    command: String,
}

/// The line channel of a [`spawn_long`] child.
#[derive(Debug)]
struct Talk {
    stdin: Option<io::PipeWriter>,
    stdin_log: File,
    lines: Receiver<String>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// The CPU time of child `pid` (itself and the descendants it waited for)
/// when it has exited and is not reaped yet: `waitid(WNOWAIT)` sees the
/// zombie without reaping it, and its `/proc/<pid>/stat` still holds
/// `utime`, `stime`, `cutime` and `cstime` (fields 14 to 17, clock ticks).
/// `None` while it runs, or when either read fails.
fn zombie_cpu(pid: u32) -> Option<Duration> {
    use rustix::process::{waitid, WaitId, WaitIdOptions};
    let pid = Pid::from_raw(i32::try_from(pid).ok()?)?;
    // `Some` once it exited: a zombie, still readable.
    waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
    )
    .ok()??;
    let stat = fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())).ok()?;
    cpu_of_stat(&stat)
}

/// `utime + stime + cutime + cstime` of a `/proc/<pid>/stat` line, as a
/// duration (the fields after the parenthesised command, which may itself
/// hold spaces and parentheses).
pub fn cpu_of_stat(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ") ": state is field 3, so utime (14) is the 12th from here.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Some(Duration::from_millis(ticks.saturating_mul(1000) / hz))
}

/// How a [`Running`] child ended, from [`Running::stop`].
#[derive(Debug, Clone)]
pub struct Stopped {
    /// Exit status of the group leader.
    pub status: ExitStatus,
    /// The leader had already exited before `stop` was called.
    pub exited_on_its_own: bool,
    /// SIGTERM was sent to the group (the leader ran, or the group still held
    /// live members after it exited).
    pub term_sent: bool,
    /// SIGTERM was not enough within [`GRACE`]: SIGKILL was sent to the group.
    pub needed_kill: bool,
    /// After stopping, no live process of the group was left (read from
    /// `/proc` for up to [`GRACE`]).
    pub group_empty: bool,
    /// Wall-clock lifetime.
    pub duration: Duration,
    /// User plus system CPU time of the leader and of every descendant it
    /// waited for (`utime + stime + cutime + cstime` of `/proc/<pid>/stat`,
    /// read before the leader was reaped); `None` when it could not be read.
    pub cpu: Option<Duration>,
}

impl Stopped {
    /// The leader's status as text (`exit status 0`, `killed by signal 9`).
    pub fn describe(&self) -> String {
        describe_status(self.status)
    }
}

/// Starts `spec` in its own process group and returns at once: stdin is the
/// spec's bytes (or `/dev/null`), stdout and stderr go to the log files.
///
/// # Errors
/// [`RunError`] when the child cannot be started or its logs created.
pub fn spawn(spec: &ChildSpec) -> Result<Running, RunError> {
    create_log_dir(&spec.log_stem)?;
    let out_path = with_ext(&spec.log_stem, "stdout");
    let err_path = with_ext(&spec.log_stem, "stderr");
    let stdout = create_log(&out_path)?;
    let stderr = create_log(&err_path)?;
    let expression = expression(spec).stdout_file(stdout).stderr_file(stderr);
    let expression = match &spec.stdin {
        Some(bytes) => expression.stdin_bytes(bytes.clone()),
        None => expression.stdin_null(),
    };
    start(spec, &expression, (out_path, err_path), &[], None)
}

/// Starts `spec` in its own process group with stdin and stdout as line
/// channels ([`Running::send_line`], [`Running::recv_line`]); every line goes
/// to the logs too.
///
/// # Errors
/// [`RunError`] when the child cannot be started or its logs created.
pub fn spawn_long(spec: &LongSpec) -> Result<Running, RunError> {
    let child = ChildSpec {
        program: spec.program.clone(),
        args: spec.args.clone(),
        cwd: spec.cwd.clone(),
        env: spec.env.clone(),
        timeout: Duration::MAX,
        log_stem: spec.log_stem.clone(),
        stdin: None,
    };
    create_log_dir(&spec.log_stem)?;
    let out_path = with_ext(&spec.log_stem, "stdout");
    let err_path = with_ext(&spec.log_stem, "stderr");
    let stderr = create_log(&err_path)?;
    let mut out_log = create_log(&out_path)?;
    let stdin_log = create_log(&with_ext(&spec.log_stem, "stdin"))?;
    let pipe_error = |source| RunError::Spawn {
        program: spec.program.display().to_string(),
        cwd: spec.cwd.display().to_string(),
        source,
    };
    let (stdin_read, stdin_write) = io::pipe().map_err(pipe_error)?;
    let (stdout_read, stdout_write) = io::pipe().map_err(pipe_error)?;
    // The expression owns the child's ends; it is dropped once the child has
    // them, so the pipes close when the child (and whatever inherited them) do.
    let expression = expression(&child)
        .stdin_file(stdin_read)
        .stdout_file(stdout_write)
        .stderr_file(stderr);
    let (tx, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut reader = io::BufReader::new(stdout_read);
        loop {
            let mut buf = Vec::new();
            match Read::take(&mut reader, LONG_LINE_LIMIT).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if !buf.ends_with(b"\n") {
                // Over-long line: drop the rest of it.
                let _ = reader.read_until(b'\n', &mut Vec::new());
                buf.push(b'\n');
            }
            let _ = out_log.write_all(&buf);
            if tx
                .send(String::from_utf8_lossy(&buf).trim_end().to_string())
                .is_err()
            {
                break;
            }
        }
    });
    let talk = Talk {
        stdin: Some(stdin_write),
        stdin_log,
        lines,
        reader: Some(reader),
    };
    start(
        &child,
        &expression,
        (out_path, err_path),
        &spec.redact,
        Some(talk),
    )
}

/// The duct expression of `spec`: program, arguments, cwd, exactly the given
/// environment, exit status unchecked, own process group.
fn expression(spec: &ChildSpec) -> duct::Expression {
    // `as_os_str`: a bare name is looked up on PATH as std does (duct would
    // turn a relative `Path` into `./name`).
    duct::cmd(spec.program.as_os_str(), &spec.args)
        .dir(&spec.cwd)
        .full_env(&spec.env)
        .unchecked()
        .before_spawn(|command| {
            command.process_group(0);
            Ok(())
        })
}

fn start(
    spec: &ChildSpec,
    expression: &duct::Expression,
    logs: (PathBuf, PathBuf),
    redact: &[String],
    talk: Option<Talk>,
) -> Result<Running, RunError> {
    let handle = expression.start().map_err(|source| RunError::Spawn {
        program: spec.program.display().to_string(),
        cwd: spec.cwd.display().to_string(),
        source,
    })?;
    let started = Instant::now();
    let pid = handle.pids()[0];
    held().insert(pid);
    priority::started(pid);
    let pgid = Pid::from_raw(pid as i32).expect("a started child has a positive pid");
    let mut cmd_text = format!(
        "cwd: {}\nprogram: {}\n",
        spec.cwd.display(),
        spec.program.display()
    );
    let mut command = spec.program.display().to_string();
    for a in &spec.args {
        let mut a = a.clone();
        for secret in redact.iter().filter(|s| !s.is_empty()) {
            a = a.replace(secret.as_str(), "<redacted>");
        }
        cmd_text.push_str(&format!("arg: {a}\n"));
        command.push(' ');
        command.push_str(&a);
    }
    for k in spec.env.keys() {
        cmd_text.push_str(&format!("env: {k}\n"));
    }
    cmd_text.push_str(&format!("pid: {pid}\n"));
    Ok(Running {
        handle,
        pid,
        pgid,
        started,
        timeout: spec.timeout,
        logs,
        cmd_log: with_ext(&spec.log_stem, "cmd"),
        cmd_text,
        status: None,
        cpu: None,
        pidfd: rustix::process::pidfd_open(pgid, rustix::process::PidfdFlags::empty()).ok(),
        talk,
        stopped: None,
        sandboxed: false,
        gate: journal::current_gate(),
        seen: procfs::read(pid as i32),
        command,
    })
}

impl Running {
    /// Process id of the leader (also the process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The process group id.
    pub fn pgid(&self) -> Pid {
        self.pgid
    }

    /// Time since the child started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// True once the spec's `timeout` has elapsed.
    pub fn timed_out(&self) -> bool {
        self.elapsed() >= self.timeout
    }

    /// The leader's exit status if it has exited, reaping it (the group may
    /// still hold other processes).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            if self.cpu.is_none() {
                self.cpu = zombie_cpu(self.pid);
            }
            self.status = match self.handle.try_wait() {
                Ok(Some(output)) => Some(output.status),
                Ok(None) => None,
                // Not ours to wait for any more: report it as killed.
                Err(_) => Some(ExitStatus::from_raw(KILLED)),
            };
        }
        self.status
    }

    /// The leader's exit status if it has exited (reaping it); the same as
    /// [`Running::try_status`].
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.try_status()
    }

    /// Waits up to `timeout` for the leader to exit, returning early (with
    /// `None` while it runs) once the run is interrupted: every caller then
    /// notices within [`WAKE`].
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        loop {
            let left = timeout.saturating_sub(started.elapsed());
            let status = self.wait_once(left.min(WAKE));
            if status.is_some() || left <= WAKE || interrupt::requested() {
                return status;
            }
        }
    }

    /// One wait of up to `timeout` for the leader to exit.
    fn wait_once(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if self.try_status().is_none() {
            match &self.pidfd {
                // Woken when the leader exits, not by polling; it stays a
                // zombie until `try_status` has read its CPU time.
                Some(fd) => {
                    let timeout = rustix::time::Timespec {
                        tv_sec: timeout.as_secs().try_into().unwrap_or(i64::MAX),
                        tv_nsec: timeout.subsec_nanos().into(),
                    };
                    let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
                    let _ = rustix::event::poll(&mut fds, Some(&timeout));
                }
                // Woken by SIGCHLD (duct's waiter), not by polling.
                None => {
                    let _ = self.handle.wait_timeout(timeout);
                }
            }
        }
        self.try_status()
    }

    /// `<stem>.stdout`, `<stem>.stderr`.
    pub fn logs(&self) -> &(PathBuf, PathBuf) {
        &self.logs
    }

    /// The last `lines` lines of the stderr log, else of the stdout log.
    pub fn tail(&self, lines: usize) -> String {
        let read = |p: &Path| String::from_utf8_lossy(&read_capped(p)).into_owned();
        output_tail(&read(&self.logs.0), &read(&self.logs.1), lines)
    }

    /// Writes `line` and a newline to the child's stdin (and to `<stem>.stdin`).
    ///
    /// # Errors
    /// When stdin is closed, was never a channel ([`spawn`]), or the write
    /// fails (the child exited, typically).
    pub fn send_line(&mut self, line: &str) -> io::Result<()> {
        let talk = self
            .talk
            .as_mut()
            .filter(|t| t.stdin.is_some())
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin closed"))?;
        let stdin = talk.stdin.as_mut().expect("checked above");
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        let _ = writeln!(talk.stdin_log, "{line}");
        Ok(())
    }

    /// Closes the child's stdin (end of input).
    pub fn close_stdin(&mut self) {
        if let Some(talk) = self.talk.as_mut() {
            talk.stdin = None;
        }
    }

    /// The next stdout line, waiting up to `timeout`.
    ///
    /// # Errors
    /// `Timeout` when no line came in time, or at once (within [`WAKE`]) once
    /// the run is interrupted; `Disconnected` once stdout closed (or when
    /// stdout was never a channel).
    pub fn recv_line(&self, timeout: Duration) -> Result<String, RecvTimeoutError> {
        let Some(talk) = &self.talk else {
            return Err(RecvTimeoutError::Disconnected);
        };
        let started = Instant::now();
        loop {
            let left = timeout.saturating_sub(started.elapsed());
            match talk.lines.recv_timeout(left.min(WAKE)) {
                Err(RecvTimeoutError::Timeout) if left > WAKE && !interrupt::requested() => {}
                other => return other,
            }
        }
    }

    /// Stops the whole group: SIGTERM (unless the leader exited and left no
    /// one behind), up to [`GRACE`] for the leader to exit and the group to
    /// empty, then SIGKILL; reaps the leader, sweeps the group with SIGKILL
    /// for up to [`GRACE`] more and writes `<stem>.cmd`. Idempotent: a second
    /// call returns the first report.
    /// Marks the leader as bwrap around a step in a pid namespace of its
    /// own ([`crate::isolation::sandbox`]): the step's program is then the
    /// leader's grandchild (bwrap, its init in the namespace, the program),
    /// in a session and process group of its own. [`Running::stop`] then
    /// first stops the program's group as it would stop an unconfined
    /// step's (TERM, [`GRACE`], KILL), so the program can end its own
    /// children, and only then the sandbox; and it waits until every process
    /// the sandbox held is gone.
    pub fn sandboxed(&mut self) {
        self.sandboxed = true;
    }

    /// The process group of the sandboxed program (the leader's grandchild),
    /// and every process below the leader, as `/proc` shows them now.
    fn sandbox_members(&self) -> (Option<Pid>, Vec<crate::process::procfs::ProcInfo>) {
        use crate::process::procfs;
        let procs = procfs::all();
        let below: Vec<procfs::ProcInfo> = procfs::descendants(&procs, self.pid as i32)
            .into_iter()
            .filter(|p| p.pid != self.pid as i32 && !p.exited())
            .collect();
        let init = below.iter().find(|p| p.ppid == self.pid as i32);
        let program = init.and_then(|i| below.iter().find(|p| p.ppid == i.pid));
        (program.and_then(|p| Pid::from_raw(p.pgid)), below)
    }

    /// Stops the sandboxed program's own group (TERM, [`grace`], KILL) while
    /// the sandbox lives, journalling each signal as `why` with `signal`.
    /// Returns what the sandbox held, to wait for.
    fn stop_sandboxed_program(
        &mut self,
        signal: &mut dyn FnMut(Pid, Signal) -> bool,
    ) -> Vec<crate::process::procfs::ProcInfo> {
        let (group, below) = self.sandbox_members();
        let Some(group) = group else {
            return below;
        };
        if self.try_status().is_some() {
            return below;
        }
        signal(group, Signal::TERM);
        let termed = Instant::now();
        while !group_is_empty(group) && self.try_status().is_none() {
            if termed.elapsed() >= grace(GRACE) {
                signal(group, Signal::KILL);
                break;
            }
            std::thread::sleep(POLL);
        }
        below
    }

    /// Why the group is being signalled, as the journal records it: an
    /// interrupt, the time limit, after the leader exited, or a plain stop.
    fn stop_reason(&self, exited_on_its_own: bool) -> SignalWhy {
        if interrupt::requested() {
            SignalWhy::Interrupt
        } else if self.timed_out() {
            SignalWhy::Timeout
        } else if exited_on_its_own {
            SignalWhy::AfterExit
        } else {
            SignalWhy::Stop
        }
    }

    /// `held`, and what the sandbox holds now that `held` does not (the
    /// same process: pid and start time).
    fn with_sandbox_members(
        &self,
        held: Vec<crate::process::procfs::ProcInfo>,
    ) -> Vec<crate::process::procfs::ProcInfo> {
        let mut all = held;
        for p in self.sandbox_members().1 {
            if !all
                .iter()
                .any(|q| q.pid == p.pid && q.start_time == p.start_time)
            {
                all.push(p);
            }
        }
        all
    }

    /// TERM to the group, then KILL once the grace is over while the leader
    /// runs or the group is not empty: `(term sent, KILL needed)`.
    fn term_then_kill(&mut self, signal: &mut dyn FnMut(Pid, Signal) -> bool) -> (bool, bool) {
        let term_sent = signal(self.pgid, Signal::TERM);
        let mut needed_kill = false;
        let termed = Instant::now();
        // The leader is reaped while waiting: unreaped, it is a zombie
        // that still belongs to the group. The grace is read on every
        // poll: an interrupt meanwhile cuts it short.
        while self.try_status().is_none() || !group_is_empty(self.pgid) {
            if termed.elapsed() >= grace(GRACE) {
                needed_kill = true;
                signal(self.pgid, Signal::KILL);
                break;
            }
            if self.wait_once(POLL).is_some() {
                std::thread::sleep(POLL);
            }
        }
        (term_sent, needed_kill)
    }

    /// Joins the stdout reader once it finishes (stdout closes when the
    /// last holder of the pipe exits), waiting a bounded time for it.
    fn join_reader(&mut self) {
        if let Some(reader) = self.talk.as_mut().and_then(|t| t.reader.take()) {
            let waited = Instant::now();
            while !reader.is_finished() && waited.elapsed() < kill_wait(GRACE) {
                std::thread::sleep(POLL);
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
    }

    /// Appends how the step was stopped to its `.cmd` record and writes it.
    fn record_stop(&mut self, stopped: &Stopped) {
        let Stopped {
            exited_on_its_own,
            term_sent,
            needed_kill,
            group_empty,
            ..
        } = *stopped;
        self.cmd_text.push_str(&format!(
            "status: {}\nexited_on_its_own: {exited_on_its_own}\nterm_sent: {term_sent}\n\
             needed_kill: {needed_kill}\ngroup_empty: {group_empty}\ntimed_out: {}\nduration_ms: {}\n\
             cpu_ms: {}\n",
            stopped.describe(),
            self.timed_out(),
            stopped.duration.as_millis(),
            stopped
                .cpu
                .map_or_else(|| "unknown".to_string(), |c| c.as_millis().to_string())
        ));
        if self.sandboxed {
            // bwrap's rusage holds none of its children's CPU time: the
            // figure above is bwrap's own, not the step's.
            self.cmd_text.push_str(
                "cpu_not_counted: the sandbox's processes (bubblewrap passes none of their CPU \
                 time on; cpu_ms is bwrap's own)\n",
            );
        }
        let _ = fs::write(&self.cmd_log, &self.cmd_text);
    }

    pub fn stop(&mut self) -> Stopped {
        if let Some(stopped) = &self.stopped {
            return stopped.clone();
        }
        // Looked at before stdin closes: end of input may end the child.
        let exited_on_its_own = self.try_status().is_some();
        let why = self.stop_reason(exited_on_its_own);
        let gate = self.gate.clone();
        let mut sent = BTreeSet::new();
        let mut signal =
            |pgid, signal| journal::signal_group(pgid, signal, gate.as_deref(), why, &mut sent);
        let held_by_sandbox = if self.sandboxed {
            self.stop_sandboxed_program(&mut signal)
        } else {
            Vec::new()
        };
        self.close_stdin();
        // What the sandbox holds now too: bwrap may have started its init
        // since the first look.
        let held_by_sandbox = if self.sandboxed {
            self.with_sandbox_members(held_by_sandbox)
        } else {
            held_by_sandbox
        };
        let (term_sent, needed_kill) = if !exited_on_its_own || !group_is_empty(self.pgid) {
            self.term_then_kill(&mut signal)
        } else {
            (false, false)
        };
        // After SIGKILL the leader exits at once; the bound only guards
        // against a stdin writer kept waiting by an escaped reader.
        let waited = Instant::now();
        while self.wait_once(POLL).is_none() && waited.elapsed() < kill_wait(GRACE) {}
        let status = self
            .try_status()
            .unwrap_or_else(|| ExitStatus::from_raw(KILLED));
        let swept = Instant::now();
        while !group_is_empty(self.pgid) && swept.elapsed() < kill_wait(GRACE) {
            signal(self.pgid, Signal::KILL);
            std::thread::sleep(POLL);
        }
        kill_held_by_sandbox(&held_by_sandbox, why);
        let group_empty = group_is_empty(self.pgid)
            && !held_by_sandbox
                .iter()
                .any(crate::process::procfs::still_running);
        self.join_reader();
        if self.status.is_some() {
            journal::reaped(
                self.seen.as_ref(),
                self.pid as i32,
                &self.command,
                gate.clone(),
                if exited_on_its_own {
                    SignalWhy::Exited
                } else {
                    why
                },
                Some(self.started),
            );
        }
        held().remove(&self.pid);
        priority::reaped(self.pid);
        let stopped = Stopped {
            status,
            exited_on_its_own,
            term_sent,
            needed_kill,
            group_empty,
            duration: self.elapsed(),
            cpu: self.cpu,
        };
        self.record_stop(&stopped);
        self.stopped = Some(stopped.clone());
        stopped
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Ends what the sandbox held and still runs (the same process: pid and
/// start time) with SIGKILL, and waits a bounded time for it to be gone.
/// The sandbox's pid namespace ends with its init, which bwrap's
/// `--die-with-parent` kills when the leader exits; but a leader stopped
/// while bwrap was still setting up may exit before that holds; killing the
/// namespace's init ends everything in the namespace.
fn kill_held_by_sandbox(held_by_sandbox: &[crate::process::procfs::ProcInfo], why: SignalWhy) {
    for p in held_by_sandbox {
        if crate::process::procfs::still_running(p) {
            journal::signal_process(p, Signal::KILL, why);
        }
    }
    // Its processes may take a moment to be gone once the leader is.
    let gone = Instant::now();
    while held_by_sandbox
        .iter()
        .any(crate::process::procfs::still_running)
        && gone.elapsed() < kill_wait(GRACE)
    {
        std::thread::sleep(POLL);
    }
}

/// True when no live (not zombie) process is in group `pgid`.
fn group_is_empty(pgid: Pid) -> bool {
    // No process at all in the group (the kernel's answer to signal 0, zombies
    // included): empty, without reading every process of the machine. Any
    // other answer (a member, perhaps only a zombie; or EPERM) is settled by
    // `/proc`.
    if rustix::process::test_kill_process_group(pgid) == Err(rustix::io::Errno::SRCH) {
        return true;
    }
    live_group_members(pgid).is_empty()
}

/// Live (not zombie) members of process group `pgid`, from `/proc/<pid>/stat`
/// (field 5 is the process group, field 3 the state; a zombie is `Z`).
///
/// Zombies are not counted: a leader that exited on SIGTERM stays a zombie
/// until its parent reaps it, and counting it would make every stop wait the
/// whole [`GRACE`] and then send SIGKILL to a group that had already obeyed.
pub fn live_group_members(pgid: Pid) -> Vec<u32> {
    let want = pgid.as_raw_nonzero().get();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
            // The command name may hold spaces and parentheses: split after the last ')'.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let (state, pgrp) = (*fields.first()?, fields.get(2)?.parse::<i32>().ok()?);
            (state != "Z" && pgrp == want).then_some(pid)
        })
        .collect()
}

/// "exit status 3" or "killed by signal 9".
fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}

/// Creates the folder that holds the logs of `stem` (and its parents).
pub(crate) fn create_log_dir(stem: &Path) -> Result<(), RunError> {
    if let Some(parent) = stem.parent() {
        fs::create_dir_all(parent).map_err(|source| RunError::Log {
            path: parent.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// Creates (or truncates) the log file `path`.
pub(crate) fn create_log(path: &Path) -> Result<File, RunError> {
    File::create(path).map_err(|source| RunError::Log {
        path: path.display().to_string(),
        source,
    })
}

/// `<stem>.<ext>`: a step's log file (`stdout`, `stderr`, `cmd`).
pub(crate) fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// The first 64 MiB of the log at `path` (empty when it cannot be read).
pub(crate) fn read_capped(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(f) = File::open(path) {
        let _ = f.take(CAPTURE_LIMIT).read_to_end(&mut buf);
    }
    buf
}

/// The last `lines` lines of a step's `stderr`, or of its `stdout` when
/// its stderr is blank: what a failure message quotes.
pub(crate) fn output_tail(stdout: &str, stderr: &str, lines: usize) -> String {
    last_lines(
        if stderr.trim().is_empty() {
            stdout
        } else {
            stderr
        },
        lines,
    )
}

fn last_lines(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::procfs;

    fn spec(dir: &Path, script: &str, timeout: Duration) -> ChildSpec {
        ChildSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: dir.to_path_buf(),
            env: base_env(),
            timeout,
            log_stem: dir.join("logs/child"),
            stdin: None,
        }
    }

    #[test]
    fn cpu_is_read_from_the_four_time_fields_after_the_command() {
        let hz = rustix::param::clock_ticks_per_second();
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
        // majflt cmajflt utime stime cutime cstime ...
        let stat = format!("42 (a b) c) S 1 42 42 0 -1 4194304 10 0 0 0 {hz} {hz} 0 {hz} 20 0 1");
        assert_eq!(cpu_of_stat(&stat), Some(Duration::from_secs(3)));
        assert_eq!(cpu_of_stat("42 (x) S 1 2"), None, "too few fields");
        assert_eq!(cpu_of_stat("no parenthesis"), None);
        let bad = "42 (x) S 1 42 42 0 -1 0 0 0 0 0 x 1 1 1 20";
        assert_eq!(cpu_of_stat(bad), None, "a field that is not a number");
    }

    #[test]
    fn a_child_that_computes_has_its_cpu_time_and_its_waited_childrens_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        // The shell waits for a busy child: its CPU counts as the shell's.
        let script = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done & wait";
        let out = run(&spec(dir.path(), script, Duration::from_secs(60))).unwrap();
        let cmd = fs::read_to_string(dir.path().join("logs/child.cmd")).unwrap();
        let line = cmd
            .lines()
            .find_map(|l| l.strip_prefix("cpu_ms: "))
            .expect("a cpu_ms line");
        let ms: u64 = line
            .parse()
            .unwrap_or_else(|_| panic!("{line:?} in\n{cmd}"));
        assert!(ms > 0, "a busy loop used CPU: {cmd}");
        assert!(
            ms <= out.duration.as_millis() as u64 * 2 + 20,
            "{ms} ms of CPU in {cmd}"
        );
    }

    /// A step's reap carries when it started, on the run's clock: the
    /// report's timeline draws each step from `started_ms` to `at_ms`.
    #[test]
    fn a_steps_reap_records_its_start_before_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let before = journal::clock_ms();
        // The marker makes the command line this test's own.
        let marker = dir.path().display().to_string();
        let script = format!("sleep 0.3; : {marker}");
        let out = run(&spec(dir.path(), &script, Duration::from_secs(60))).unwrap();
        assert!(out.success());
        let reap = journal::snapshot()
            .into_iter()
            .find(|r| {
                r.action == crate::evidence::SignalAction::Reap && r.cmdline.contains(&marker)
            })
            .unwrap_or_else(|| panic!("no reap of the step {script:?}"));
        assert_eq!(reap.why, SignalWhy::Exited);
        let started = reap.started_ms.expect("a step's reap records its start");
        assert!(started >= before, "{started} < {before}");
        assert!(reap.at_ms >= started + 300, "{reap:?}");
    }

    #[test]
    fn long_child_exchanges_lines_and_stop_ends_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_long(&LongSpec {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "sleep 600 & echo $! > gc.pid; while read l; do echo got-$l; done".into(),
                "s3cret-arg".into(),
            ],
            cwd: dir.path().to_path_buf(),
            env: base_env(),
            log_stem: dir.path().join("logs/long"),
            redact: vec!["s3cret".into()],
        })
        .unwrap();
        child.send_line("one").unwrap();
        assert_eq!(child.recv_line(Duration::from_secs(10)).unwrap(), "got-one");
        let report = child.stop();
        assert!(!report.exited_on_its_own && report.term_sent, "{report:?}");
        assert!(!report.needed_kill, "{report:?}");
        let pid: i32 = fs::read_to_string(dir.path().join("gc.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            crate::process::procfs::read(pid).is_none_or(|p| p.exited()),
            "the group's other member {pid} survived stop"
        );
        let logs = dir.path().join("logs");
        assert_eq!(
            fs::read_to_string(logs.join("long.stdin")).unwrap(),
            "one\n"
        );
        assert!(fs::read_to_string(logs.join("long.stdout"))
            .unwrap()
            .contains("got-one"));
        let cmd = fs::read_to_string(logs.join("long.cmd")).unwrap();
        assert!(
            !cmd.contains("s3cret") && cmd.contains("<redacted>-arg"),
            "{cmd}"
        );
    }

    #[test]
    fn child_sees_only_the_given_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("VCC_PROCESS_TEST_CANARY", "leak");
        let out = run(&spec(dir.path(), "env", Duration::from_secs(30))).unwrap();
        assert!(out.success());
        let text = out.stdout_text();
        assert!(!text.contains("VCC_PROCESS_TEST_CANARY"), "{text}");
        assert!(text.contains("TZ=UTC"), "{text}");
        assert!(dir.path().join("logs/child.stdout").exists());
    }

    #[test]
    fn timeout_stops_the_whole_group_including_grandchildren() {
        let dir = tempfile::tempdir().unwrap();
        // The grandchild writes its pid, then sleeps; the leader waits.
        let out = run(&spec(
            dir.path(),
            "sleep 600 & echo $! > gc.pid; wait",
            Duration::from_millis(300),
        ))
        .unwrap();
        assert!(out.timed_out);
        assert!(!out.success());
        let pid: i32 = fs::read_to_string(dir.path().join("gc.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Gone, or a zombie waiting for init to reap it: either way not running.
        let state = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.split_whitespace().next().unwrap_or("").to_string())
            });
        assert!(
            matches!(state.as_deref(), None | Some("Z")),
            "grandchild {pid} survived the timeout (state {state:?})"
        );
    }

    #[test]
    fn a_spawned_group_is_stopped_with_its_grandchildren() {
        let dir = tempfile::tempdir().unwrap();
        let mut running = spawn(&spec(
            dir.path(),
            "sleep 600 & echo $! > gc.pid; wait",
            Duration::from_secs(600),
        ))
        .unwrap();
        let pid_file = dir.path().join("gc.pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pid_file.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(running.try_status().is_none());
        assert!(!running.timed_out());
        let members: Vec<i32> = procfs::live_group_members(running.pid() as i32)
            .iter()
            .map(|p| p.pid)
            .collect();
        assert!(members.contains(&(running.pid() as i32)), "{members:?}");
        let pgid = running.pgid();
        let stopped = running.stop();
        assert!(!stopped.exited_on_its_own);
        assert!(stopped.group_empty);
        let pid: i32 = fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(procfs::read(pid).is_none_or(|p| p.exited()));
        assert!(group_is_empty(pgid));
        let cmd = fs::read_to_string(dir.path().join("logs/child.cmd")).unwrap();
        assert!(cmd.contains("group_empty: true"), "{cmd}");
    }

    #[test]
    fn stragglers_left_by_an_exited_leader_are_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(
            dir.path(),
            "sleep 600 & echo $! > gc.pid",
            Duration::from_secs(30),
        ))
        .unwrap();
        assert!(out.stragglers_killed);
        let pid: i32 = fs::read_to_string(dir.path().join("gc.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Reaped by init or killed: either way it must not answer signal 0 for long.
        let deadline = Instant::now() + Duration::from_secs(10);
        while rustix::process::test_kill_process(Pid::from_raw(pid).unwrap()).is_ok()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(rustix::process::test_kill_process(Pid::from_raw(pid).unwrap()).is_err());
    }
}
