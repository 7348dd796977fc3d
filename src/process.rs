//! The one way every gate runs a child process.
//!
//! A [`ChildSpec`] names the program, arguments, working directory, the whole
//! environment (the child inherits nothing), a timeout and the log files. The
//! child gets its own process group; on timeout or interrupt the group is sent
//! SIGTERM, given [`GRACE`], then SIGKILL. After the leader exits the group is
//! swept the same way, so no grandchild outlives the step.

use crate::interrupt;
use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Time between SIGTERM and SIGKILL when a process group is stopped.
pub const GRACE: Duration = Duration::from_secs(3);

/// How often a running child is polled for exit, timeout and interrupt.
const POLL: Duration = Duration::from_millis(10);

/// Most bytes of each stream kept in memory for [`ChildOutput`]; the log files
/// hold everything.
const CAPTURE_LIMIT: u64 = 64 * 1024 * 1024;

/// Names of variables a child may inherit from the harness when a gate asks
/// for the base environment ([`base_env`]).
pub const ALLOWLIST: &[&str] = &["PATH", "LANG"];

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
        let mut text = self.stderr_text();
        if text.trim().is_empty() {
            text = self.stdout_text();
        }
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// "exit status 3", "killed by signal 9" or "timed out".
    pub fn describe(&self) -> String {
        if self.timed_out {
            return "timed out and was stopped".into();
        }
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "unknown status".into(),
        }
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

/// Runs `spec` to completion (or timeout, or interrupt).
///
/// # Errors
/// [`RunError`] when the child cannot be started or its logs created, or when
/// the run is interrupted.
pub fn run(spec: &ChildSpec) -> Result<ChildOutput, RunError> {
    let (out_file, err_file, (out_path, err_path)) = open_logs(&spec.log_stem)?;

    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdout(Stdio::from(out_file))
        .stderr(Stdio::from(err_file))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .process_group(0);
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|source| RunError::Spawn {
        program: spec.program.display().to_string(),
        cwd: spec.cwd.display().to_string(),
        source,
    })?;
    let pgid = Pid::from_child(&child);
    if let (Some(bytes), Some(mut stdin)) = (&spec.stdin, child.stdin.take()) {
        // A child that exits without reading its input is not an error here.
        let _ = stdin.write_all(bytes);
    }

    let mut timed_out = false;
    let mut interrupted = false;
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        if started.elapsed() >= spec.timeout {
            timed_out = true;
            stop_group(pgid);
            break child.wait().unwrap_or_else(|_| ExitStatus::from_raw(9));
        }
        if interrupt::requested() {
            interrupted = true;
            stop_group(pgid);
            break child.wait().unwrap_or_else(|_| ExitStatus::from_raw(9));
        }
        std::thread::sleep(POLL);
    };
    let stragglers_killed = group_alive(pgid);
    if stragglers_killed {
        stop_group(pgid);
    }
    let duration = started.elapsed();

    let mut cmd_log = format!(
        "cwd: {}\nprogram: {}\n",
        spec.cwd.display(),
        spec.program.display()
    );
    for a in &spec.args {
        cmd_log.push_str(&format!("arg: {a}\n"));
    }
    for k in spec.env.keys() {
        cmd_log.push_str(&format!("env: {k}\n"));
    }
    cmd_log.push_str(&format!(
        "status: {status:?}\ntimed_out: {timed_out}\nstragglers_killed: {stragglers_killed}\nduration_ms: {}\n",
        duration.as_millis()
    ));
    let _ = fs::write(with_ext(&spec.log_stem, "cmd"), cmd_log);

    if interrupted {
        return Err(RunError::Interrupted {
            program: spec.program.display().to_string(),
        });
    }
    Ok(ChildOutput {
        status,
        stdout: read_capped(&out_path),
        stderr: read_capped(&err_path),
        timed_out,
        duration,
        stragglers_killed,
        logs: (out_path, err_path),
    })
}

/// A long-running child started by [`spawn`]: a server the caller talks to
/// (for example the SDK runtime of the `discovery-rpc` gate) rather than a
/// step that runs to completion.
///
/// Same discipline as [`run`]: its own process group, exactly the given
/// environment, output in `<stem>.stdout`/`<stem>.stderr`, the command line
/// and result in `<stem>.cmd` (written by [`Running::stop`]). The spec's
/// `timeout` is not enforced by a thread: the caller polls
/// [`Running::timed_out`] and must end the child with [`Running::stop`].
/// Dropping a `Running` that was not stopped stops its group (TERM, grace,
/// KILL), so an early return never leaves it running.
#[derive(Debug)]
pub struct Running {
    child: Option<std::process::Child>,
    pgid: Pid,
    started: Instant,
    spec: ChildSpec,
    logs: (PathBuf, PathBuf),
}

/// How a [`Running`] child ended.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// Exit status of the group leader.
    pub status: ExitStatus,
    /// The leader had already exited before `stop` was called.
    pub exited_on_its_own: bool,
    /// SIGTERM was not enough within [`GRACE`]: SIGKILL was sent to the group.
    pub needed_kill: bool,
    /// After stopping, no process of the group answered signal 0 (checked
    /// with the operating system for up to [`GRACE`]).
    pub group_empty: bool,
    /// Wall-clock lifetime.
    pub duration: Duration,
}

/// Starts `spec` in its own process group and returns at once.
///
/// # Errors
/// [`RunError`] when the child cannot be started or its logs created.
pub fn spawn(spec: &ChildSpec) -> Result<Running, RunError> {
    let (out_file, err_file, logs) = open_logs(&spec.log_stem)?;
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdout(Stdio::from(out_file))
        .stderr(Stdio::from(err_file))
        .stdin(Stdio::null())
        .process_group(0);
    let child = cmd.spawn().map_err(|source| RunError::Spawn {
        program: spec.program.display().to_string(),
        cwd: spec.cwd.display().to_string(),
        source,
    })?;
    let pgid = Pid::from_child(&child);
    Ok(Running {
        child: Some(child),
        pgid,
        started: Instant::now(),
        spec: spec.clone(),
        logs,
    })
}

impl Running {
    /// Process id of the leader (also the process group id).
    pub fn pid(&self) -> u32 {
        self.pgid.as_raw_nonzero().get() as u32
    }

    /// The process group id.
    pub fn pgid(&self) -> Pid {
        self.pgid
    }

    /// Time since [`spawn`].
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// True once the spec's `timeout` has elapsed.
    pub fn timed_out(&self) -> bool {
        self.elapsed() >= self.spec.timeout
    }

    /// The leader's exit status if it has exited (the group may still hold
    /// other processes).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// `<stem>.stdout`, `<stem>.stderr`.
    pub fn logs(&self) -> &(PathBuf, PathBuf) {
        &self.logs
    }

    /// The last `lines` lines of the stderr log, else of the stdout log.
    pub fn tail(&self, lines: usize) -> String {
        log_tail(&self.logs, lines)
    }

    /// Stops the whole group (SIGTERM, up to [`GRACE`], SIGKILL), reaps the
    /// leader, checks that the group is empty and writes `<stem>.cmd`.
    pub fn stop(mut self) -> Stopped {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Stopped {
        let Some(mut child) = self.child.take() else {
            return Stopped {
                status: ExitStatus::from_raw(0),
                exited_on_its_own: true,
                needed_kill: false,
                group_empty: live_group_members(self.pgid).is_empty(),
                duration: self.elapsed(),
            };
        };
        let mut status = child.try_wait().ok().flatten();
        let exited_on_its_own = status.is_some();
        // TERM the group, then reap the leader while waiting for the group to
        // empty: an unreaped leader is a zombie that still "belongs" to it.
        let _ = kill_process_group(self.pgid, Signal::TERM);
        let deadline = Instant::now() + GRACE;
        let mut needed_kill = false;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            if status.is_some() && live_group_members(self.pgid).is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                needed_kill = true;
                let _ = kill_process_group(self.pgid, Signal::KILL);
                break;
            }
            std::thread::sleep(POLL);
        }
        let status = match status {
            Some(s) => s,
            None => child.wait().unwrap_or_else(|_| ExitStatus::from_raw(9)),
        };
        let deadline = Instant::now() + GRACE;
        while !live_group_members(self.pgid).is_empty() && Instant::now() < deadline {
            let _ = kill_process_group(self.pgid, Signal::KILL);
            std::thread::sleep(POLL);
        }
        let group_empty = live_group_members(self.pgid).is_empty();
        let duration = self.elapsed();
        write_cmd_log(
            &self.spec,
            &format!(
                "status: {status:?}\nexited_on_its_own: {exited_on_its_own}\nneeded_kill: {needed_kill}\ngroup_empty: {group_empty}\nduration_ms: {}\n",
                duration.as_millis()
            ),
        );
        Stopped {
            status,
            exited_on_its_own,
            needed_kill,
            group_empty,
            duration,
        }
    }
}

/// Live (not zombie) members of process group `pgid`, from `/proc/<pid>/stat`
/// (field 5 is the process group, field 3 the state; a zombie is `Z`). Unlike
/// signal 0, this does not count zombies that only wait to be reaped.
pub fn live_group_members(pgid: Pid) -> Vec<u32> {
    let want = pgid.as_raw_nonzero().get();
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The command name may hold spaces and parentheses: split after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(state), Some(pgrp)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        if *state != "Z" && pgrp.parse::<i32>().ok() == Some(want) {
            out.push(pid);
        }
    }
    out
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop_inner();
        }
    }
}

/// Creates the log folder of `stem` and the empty logs `<stem>.stdout` and
/// `<stem>.stderr` (in that order); returns both files and their paths.
fn open_logs(stem: &Path) -> Result<(File, File, (PathBuf, PathBuf)), RunError> {
    create_log_dir(stem)?;
    let out_path = with_ext(stem, "stdout");
    let err_path = with_ext(stem, "stderr");
    Ok((
        create_log(&out_path)?,
        create_log(&err_path)?,
        (out_path, err_path),
    ))
}

/// Creates the folder that holds the logs of `stem` (and its parents).
fn create_log_dir(stem: &Path) -> Result<(), RunError> {
    if let Some(parent) = stem.parent() {
        fs::create_dir_all(parent).map_err(|source| RunError::Log {
            path: parent.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// Creates (or truncates) the log file `path`.
fn create_log(path: &Path) -> Result<File, RunError> {
    File::create(path).map_err(|source| RunError::Log {
        path: path.display().to_string(),
        source,
    })
}

fn write_cmd_log(spec: &ChildSpec, result: &str) {
    let mut cmd_log = format!(
        "cwd: {}\nprogram: {}\n",
        spec.cwd.display(),
        spec.program.display()
    );
    for a in &spec.args {
        cmd_log.push_str(&format!("arg: {a}\n"));
    }
    for k in spec.env.keys() {
        cmd_log.push_str(&format!("env: {k}\n"));
    }
    cmd_log.push_str(result);
    let _ = fs::write(with_ext(&spec.log_stem, "cmd"), cmd_log);
}

fn log_tail(logs: &(PathBuf, PathBuf), lines: usize) -> String {
    let read = |p: &Path| String::from_utf8_lossy(&read_capped(p)).into_owned();
    let mut text = read(&logs.1);
    if text.trim().is_empty() {
        text = read(&logs.0);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

fn read_capped(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(f) = File::open(path) {
        let _ = f.take(CAPTURE_LIMIT).read_to_end(&mut buf);
    }
    buf
}

/// True while any live (not zombie) process of group `pgid` exists.
///
/// Zombies are not counted: a leader that exited on SIGTERM stays a zombie
/// until its parent reaps it, and counting it would make every stop wait the
/// whole [`GRACE`] and then send SIGKILL to a group that had already obeyed.
pub fn group_alive(pgid: Pid) -> bool {
    test_kill_process_group(pgid).is_ok() && !live_group_members(pgid).is_empty()
}

/// Stops process group `pgid`: SIGTERM, up to [`GRACE`] for it to empty, then
/// SIGKILL. Returns true when SIGKILL was needed.
pub fn stop_group(pgid: Pid) -> bool {
    if kill_process_group(pgid, Signal::TERM).is_err() {
        return false;
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        if !group_alive(pgid) {
            return false;
        }
        std::thread::sleep(POLL);
    }
    let _ = kill_process_group(pgid, Signal::KILL);
    true
}

/// A long-running child spoken to over its stdin/stdout (JSON lines, for
/// example): same discipline as [`run`] (own process group, the whole
/// environment given, logs under `log_stem`), but the caller drives it and
/// stops it. Used for the `worker-isolation` gate's workers.
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

/// Longest stdout line kept, in bytes; the rest of a longer line is dropped.
const LONG_LINE_LIMIT: u64 = 1024 * 1024;

/// How a [`LongChild`] ended, from [`LongChild::stop`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopReport {
    /// The leader had already exited when the stop began.
    pub already_exited: bool,
    /// SIGTERM was sent to the group.
    pub term_sent: bool,
    /// The group was still alive after [`GRACE`], so SIGKILL was sent.
    pub kill_needed: bool,
    /// The leader's exit status, as text (`exit status 0`, `killed by signal 9`).
    pub leader_status: Option<String>,
}

/// A running [`LongSpec`] child. Dropping it stops its process group.
#[derive(Debug)]
pub struct LongChild {
    child: std::process::Child,
    pgid: Pid,
    stdin: Option<std::process::ChildStdin>,
    stdin_log: Option<File>,
    lines: std::sync::mpsc::Receiver<String>,
    reader: Option<std::thread::JoinHandle<()>>,
    cmd_log: PathBuf,
    cmd_text: String,
    started: Instant,
    status: Option<ExitStatus>,
    stop_report: Option<StopReport>,
}

/// Starts `spec` in its own process group with piped stdin and stdout.
///
/// # Errors
/// [`RunError`] when the child cannot be started or its logs created.
pub fn spawn_long(spec: &LongSpec) -> Result<LongChild, RunError> {
    create_log_dir(&spec.log_stem)?;
    let err_file = create_log(&with_ext(&spec.log_stem, "stderr"))?;
    let mut out_log = create_log(&with_ext(&spec.log_stem, "stdout"))?;
    let stdin_log = create_log(&with_ext(&spec.log_stem, "stdin"))?;

    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err_file))
        .process_group(0);
    let mut child = cmd.spawn().map_err(|source| RunError::Spawn {
        program: spec.program.display().to_string(),
        cwd: spec.cwd.display().to_string(),
        source,
    })?;
    let pgid = Pid::from_child(&child);
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut reader = io::BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            match io::BufRead::read_until(
                &mut Read::take(&mut reader, LONG_LINE_LIMIT),
                b'\n',
                &mut buf,
            ) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if !buf.ends_with(b"\n") {
                // Over-long line: drop the rest of it.
                let mut rest = Vec::new();
                let _ = io::BufRead::read_until(&mut reader, b'\n', &mut rest);
                buf.push(b'\n');
            }
            let _ = out_log.write_all(&buf);
            let line = String::from_utf8_lossy(&buf).trim_end().to_string();
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut cmd_text = format!(
        "cwd: {}\nprogram: {}\n",
        spec.cwd.display(),
        spec.program.display()
    );
    for a in &spec.args {
        let mut a = a.clone();
        for secret in spec.redact.iter().filter(|s| !s.is_empty()) {
            a = a.replace(secret.as_str(), "<redacted>");
        }
        cmd_text.push_str(&format!("arg: {a}\n"));
    }
    for k in spec.env.keys() {
        cmd_text.push_str(&format!("env: {k}\n"));
    }
    cmd_text.push_str(&format!("pid: {}\n", child.id()));
    Ok(LongChild {
        stdin: child.stdin.take(),
        child,
        pgid,
        stdin_log: Some(stdin_log),
        lines,
        reader: Some(reader),
        cmd_log: with_ext(&spec.log_stem, "cmd"),
        cmd_text,
        started: Instant::now(),
        status: None,
        stop_report: None,
    })
}

impl LongChild {
    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's process group.
    pub fn pgid(&self) -> Pid {
        self.pgid
    }

    /// Writes `line` and a newline to the child's stdin (and to `<stem>.stdin`).
    ///
    /// # Errors
    /// When stdin is closed or the write fails (the child exited, typically).
    pub fn send_line(&mut self, line: &str) -> io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin closed"))?;
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        if let Some(log) = self.stdin_log.as_mut() {
            let _ = writeln!(log, "{line}");
        }
        Ok(())
    }

    /// Closes the child's stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line, waiting up to `timeout`.
    ///
    /// # Errors
    /// `Timeout` when no line came in time; `Disconnected` once stdout closed.
    pub fn recv_line(
        &self,
        timeout: Duration,
    ) -> Result<String, std::sync::mpsc::RecvTimeoutError> {
        self.lines.recv_timeout(timeout)
    }

    /// The leader's exit status if it exited (reaping it).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.status = Some(s);
            }
        }
        self.status
    }

    /// Waits up to `timeout` for the leader to exit.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Stops the child's process group: SIGTERM, up to [`GRACE`] for the
    /// leader to exit and the group to empty, then SIGKILL. Idempotent: a
    /// second call returns the first report.
    pub fn stop(&mut self) -> StopReport {
        if let Some(r) = &self.stop_report {
            return r.clone();
        }
        let mut report = StopReport {
            already_exited: self.try_wait().is_some(),
            ..StopReport::default()
        };
        self.stdin = None;
        // Zombies waiting for init are not counted (see `live_group_members`).
        if !report.already_exited || !live_group_members(self.pgid).is_empty() {
            report.term_sent = kill_process_group(self.pgid, Signal::TERM).is_ok();
            let deadline = Instant::now() + GRACE;
            while Instant::now() < deadline {
                if self.try_wait().is_some() && live_group_members(self.pgid).is_empty() {
                    break;
                }
                std::thread::sleep(POLL);
            }
            if self.try_wait().is_none() || !live_group_members(self.pgid).is_empty() {
                report.kill_needed = true;
                let _ = kill_process_group(self.pgid, Signal::KILL);
            }
        }
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
        report.leader_status = self.status.map(describe_status);
        if let Some(reader) = self.reader.take() {
            // stdout closes when the last holder of the pipe exits.
            let deadline = Instant::now() + GRACE;
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(POLL);
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
        self.cmd_text.push_str(&format!(
            "status: {}\nterm_sent: {}\nkill_needed: {}\nduration_ms: {}\n",
            report.leader_status.as_deref().unwrap_or("unknown"),
            report.term_sent,
            report.kill_needed,
            self.started.elapsed().as_millis()
        ));
        let _ = fs::write(&self.cmd_log, &self.cmd_text);
        self.stop_report = Some(report.clone());
        report
    }
}

impl Drop for LongChild {
    fn drop(&mut self) {
        self.stop();
    }
}

/// "exit status 3" or "killed by signal 9".
fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!report.already_exited && report.term_sent, "{report:?}");
        assert!(!report.kill_needed, "{report:?}");
        let pid: i32 = fs::read_to_string(dir.path().join("gc.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            crate::isolation::procfs::read(pid).is_none_or(|p| p.exited()),
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
        let members = live_group_members(running.pgid());
        assert!(members.contains(&running.pid()), "{members:?}");
        let pgid = running.pgid();
        let stopped = running.stop();
        assert!(!stopped.exited_on_its_own);
        assert!(stopped.group_empty);
        let pid: i32 = fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!live_group_members(pgid).contains(&(pid as u32)));
        assert!(live_group_members(pgid).is_empty());
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
