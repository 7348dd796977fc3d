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
    if let Some(parent) = spec.log_stem.parent() {
        fs::create_dir_all(parent).map_err(|source| RunError::Log {
            path: parent.display().to_string(),
            source,
        })?;
    }
    let out_path = with_ext(&spec.log_stem, "stdout");
    let err_path = with_ext(&spec.log_stem, "stderr");
    let create = |p: &Path| {
        File::create(p).map_err(|source| RunError::Log {
            path: p.display().to_string(),
            source,
        })
    };
    let out_file = create(&out_path)?;
    let err_file = create(&err_path)?;

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

/// True while any process of group `pgid` exists.
pub fn group_alive(pgid: Pid) -> bool {
    test_kill_process_group(pgid).is_ok()
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
        assert!(
            rustix::process::test_kill_process(Pid::from_raw(pid).unwrap()).is_err(),
            "grandchild {pid} survived the timeout"
        );
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
