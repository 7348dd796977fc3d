//! The harness side of the worker protocol (`src/python/worker.py`): one
//! running worker, the JSON lines it answered, parsed into typed messages.

use crate::interrupt;
use crate::process::Running;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// The worker's `ready` line.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Ready {
    /// `a` or `b`.
    pub name: String,
    /// `os.getpid()` inside the worker (its own pid namespace under bwrap).
    pub pid: i32,
    /// `os.getpgid(0)` inside the worker.
    pub pgid: i32,
    /// The hub's `endpoint` (`ws://127.0.0.1:PORT`).
    pub endpoint: String,
    /// The hub's bound port.
    pub port: u16,
    /// The daemon id the SDK client connected with.
    pub daemon_id: String,
    /// `hub.list_daemons()` ids when ready.
    pub daemons: Vec<String>,
    /// `importlib.metadata.version("langbot-plugin")`.
    pub sdk_version: String,
    /// The `langbot_plugin` package directory the worker imported.
    pub sdk_package: String,
    /// Module name of the hub (`langbot_plugin.api.agent_tools.daemon`).
    pub hub_module: String,
    /// That module's file.
    pub hub_file: String,
    /// The hub class name.
    pub hub_class: String,
    /// The daemon client base class name.
    pub client_class: String,
}

/// A hub event relayed by the worker (`{"type": ..., "data": {...}}`).
#[derive(Debug, Clone, Deserialize)]
pub struct HubEvent {
    /// `run.started`, `run.output`, `run.completed`, `run.failed`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Fixture fields (all optional: hub-made events carry others).
    #[serde(default)]
    pub data: FixtureData,
}

/// Fields of the fixture's events (`worker.py`'s child lines).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FixtureData {
    /// The daemon-side job id (random, made by the hub).
    pub daemon_job_id: Option<String>,
    /// `run.started`: the child's pid as the worker sees it.
    pub child_pid: Option<i32>,
    /// `run.output`: sequence number from 0.
    pub seq: Option<u64>,
    /// The job's nonce (from the harness's `run` command).
    pub nonce: Option<String>,
    /// The conversation id of the `run` command.
    pub conversation_id: Option<String>,
    /// The child's own pid.
    pub pid: Option<i32>,
    /// The child's process group.
    pub pgid: Option<i32>,
    /// The grandchild's pid as the child sees it.
    pub grandchild_pid: Option<i32>,
    /// The fixture label.
    pub label: Option<String>,
    /// `run.completed`: the final output line.
    pub output: Option<String>,
}

/// The answer to `peek`.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Peek {
    /// The path tried.
    pub path: String,
    /// Whether the directory could be listed and its tag file read.
    pub readable: bool,
    /// Entries listed, when readable.
    #[serde(default)]
    pub entries: Option<u64>,
    /// The error, when not readable.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "event")]
enum Message {
    #[serde(rename = "ready")]
    Ready(Ready),
    #[serde(rename = "job.accepted")]
    Accepted {},
    #[serde(rename = "job.event")]
    Event { data: HubEvent },
    #[serde(rename = "job.finished")]
    Finished { events: u64 },
    #[serde(rename = "job.failed")]
    Failed { error: String },
    #[serde(rename = "job.cancelled")]
    Cancelled { state: Option<String> },
    #[serde(rename = "status")]
    Status {
        jobs: BTreeMap<String, String>,
        daemons: Vec<String>,
    },
    #[serde(rename = "peek")]
    Peek(Peek),
    #[serde(rename = "stopped")]
    Stopped {},
    #[serde(rename = "error")]
    Error { error: String },
}

/// The worker's `status` answer.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Job name to state (`running`, `finished`, `cancelled`, `failed`).
    pub jobs: BTreeMap<String, String>,
    /// Daemon ids connected to the worker's hub.
    pub daemons: Vec<String>,
}

/// One running worker and what it said so far. Each worker runs one job.
#[derive(Debug)]
pub struct WorkerProc {
    /// `a` or `b`.
    pub name: &'static str,
    /// The process (its group is stopped on drop).
    pub child: Running,
    /// The `ready` line, once received.
    pub ready: Option<Ready>,
    /// The job's events, in arrival order.
    pub events: Vec<HubEvent>,
    /// `job.finished`: the event count the worker counted.
    pub finished: Option<u64>,
    /// `job.failed`: the error.
    pub failed: Option<String>,
    /// `job.cancelled`: the worker's state word.
    pub cancelled: Option<Option<String>>,
    /// `status` answers.
    pub statuses: Vec<Status>,
    /// `peek` answers.
    pub peeks: Vec<Peek>,
    /// `stopped` received.
    pub stopped: bool,
    /// Lines that were not protocol messages, and `error` answers (first 20).
    pub noise: Vec<String>,
    /// stdout closed.
    pub closed: bool,
}

impl WorkerProc {
    /// Wraps a started worker.
    pub fn new(name: &'static str, child: Running) -> Self {
        Self {
            name,
            child,
            ready: None,
            events: Vec::new(),
            finished: None,
            failed: None,
            cancelled: None,
            statuses: Vec::new(),
            peeks: Vec::new(),
            stopped: false,
            noise: Vec::new(),
            closed: false,
        }
    }

    /// Sends one command line.
    ///
    /// # Errors
    /// When the worker's stdin is closed.
    pub fn send(&mut self, cmd: &serde_json::Value) -> Result<(), String> {
        self.child
            .send_line(&cmd.to_string())
            .map_err(|e| format!("worker {}: cannot send {cmd}: {e}", self.name))
    }

    /// Reads every line available now (waiting up to `wait` for the first).
    pub fn pump(&mut self, wait: Duration) {
        let mut timeout = wait;
        loop {
            match self.child.recv_line(timeout) {
                Ok(line) => self.dispatch(&line),
                Err(RecvTimeoutError::Timeout) => return,
                Err(RecvTimeoutError::Disconnected) => {
                    self.closed = true;
                    return;
                }
            }
            timeout = Duration::ZERO;
        }
    }

    fn dispatch(&mut self, line: &str) {
        match serde_json::from_str::<Message>(line) {
            Ok(Message::Ready(r)) => self.ready = Some(r),
            Ok(Message::Accepted {}) => {}
            Ok(Message::Event { data }) => self.events.push(data),
            Ok(Message::Finished { events }) => self.finished = Some(events),
            Ok(Message::Failed { error }) => self.failed = Some(error),
            Ok(Message::Cancelled { state }) => self.cancelled = Some(state),
            Ok(Message::Status { jobs, daemons }) => self.statuses.push(Status { jobs, daemons }),
            Ok(Message::Peek(p)) => self.peeks.push(p),
            Ok(Message::Stopped {}) => self.stopped = true,
            Ok(Message::Error { error }) => self.note(format!("error answer: {error}")),
            Err(e) => self.note(format!("not a protocol line ({e}): {line}")),
        }
    }

    fn note(&mut self, s: String) {
        if self.noise.len() < 20 {
            self.noise.push(s.chars().take(300).collect());
        }
    }

    /// `run.output` events.
    pub fn outputs(&self) -> impl Iterator<Item = &HubEvent> {
        self.events.iter().filter(|e| e.kind == "run.output")
    }

    /// The child pid of the `run.started` event.
    pub fn child_pid(&self) -> Option<i32> {
        self.events
            .iter()
            .find(|e| e.kind == "run.started")
            .and_then(|e| e.data.child_pid)
    }

    /// The grandchild pid of the first output.
    pub fn grandchild_pid(&self) -> Option<i32> {
        self.outputs().find_map(|e| e.data.grandchild_pid)
    }

    /// A one-line account of the worker, for error messages.
    pub fn describe(&self) -> String {
        format!(
            "worker {}: ready={}, events={}, finished={:?}, failed={:?}, cancelled={:?}, stdout closed={}{}",
            self.name,
            self.ready.is_some(),
            self.events.len(),
            self.finished,
            self.failed,
            self.cancelled,
            self.closed,
            if self.noise.is_empty() {
                String::new()
            } else {
                format!(", noise: {}", self.noise.join(" | "))
            }
        )
    }
}

/// Pumps `workers` until `done(workers)` holds.
///
/// # Errors
/// On timeout (naming `what` and each worker's state), when a worker's stdout
/// closed before `done` held, or when the run is interrupted.
pub fn wait_for(
    workers: &mut [WorkerProc],
    timeout: Duration,
    what: &str,
    done: impl Fn(&[WorkerProc]) -> bool,
) -> Result<Duration, String> {
    let started = Instant::now();
    loop {
        for w in workers.iter_mut() {
            w.pump(Duration::ZERO);
        }
        if done(workers) {
            return Ok(started.elapsed());
        }
        let state = || {
            workers
                .iter()
                .map(WorkerProc::describe)
                .collect::<Vec<_>>()
                .join("; ")
        };
        if interrupt::requested() {
            return Err(format!("interrupted while waiting for {what}"));
        }
        if workers.iter().any(|w| w.closed) {
            return Err(format!(
                "a worker's stdout closed while waiting for {what}: {}",
                state()
            ));
        }
        if started.elapsed() >= timeout {
            return Err(format!(
                "timed out after {} s waiting for {what}: {}",
                timeout.as_secs(),
                state()
            ));
        }
        let wait = Duration::from_millis(10);
        if let Some(w) = workers.first_mut() {
            w.pump(wait);
        }
    }
}
