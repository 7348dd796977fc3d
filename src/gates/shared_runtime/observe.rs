//! What the `shared-runtime` host saw (`src/python/shared_runtime_host.py`
//! writes it as JSON): plain values, judged by [`super::decide`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One host run: installations A and B of one archive on one shared worker.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostObservation {
    /// Why the host stopped early, if it did.
    #[serde(default)]
    pub fatal: Option<String>,
    /// How the shared placement was asked for.
    #[serde(default)]
    pub placement: String,
    /// `set_runtime_config` with `runtime_profile: "shared"`.
    #[serde(default)]
    pub runtime_config: Option<Answer>,
    /// How many fields the candidate's manifest declares in `spec.config`
    /// (of any type), set by the gate from the manifest; `None`: unknown.
    #[serde(default)]
    pub config_declared: Option<usize>,
    /// Why a declared component got no call (e.g. a Parser declaring no
    /// MIME type the host serves), set by the gate from its plan.
    #[serde(default)]
    pub not_called: Vec<String>,
    /// A, then B.
    #[serde(default)]
    pub installations: Vec<Installation>,
    /// `list_plugins` statuses per installation label.
    #[serde(default)]
    pub status: BTreeMap<String, Vec<Option<String>>>,
    /// nsjail and worker processes below the runtime, after attaching.
    #[serde(default)]
    pub workers_attached: Vec<Process>,
    /// The same after the invocations.
    #[serde(default)]
    pub workers_invoked: Vec<Process>,
    /// Every invocation, in order.
    #[serde(default)]
    pub calls: Vec<Call>,
    /// Requests the runtime made of the host.
    #[serde(default)]
    pub host_calls: Vec<HostCall>,
    /// `get_plugin_logs` per installation label.
    #[serde(default)]
    pub logs: BTreeMap<String, Value>,
    /// Live-object scan after the invocations.
    #[serde(default)]
    pub scan_invoked: Option<Scan>,
    /// `remove_plugin_installation` of A.
    #[serde(default)]
    pub revoke: Option<Answer>,
    /// Live-object scan after revoking A (A's canaries only).
    #[serde(default)]
    pub scan_revoked: Option<Scan>,
    /// The runtime's own log (stdout and stderr, its workers' stderr).
    #[serde(default)]
    pub runtime_log: String,
    /// Every nsjail launch of the runtime our wrapper saw, in order.
    #[serde(default)]
    pub launches: Vec<Launch>,
    /// What the runtime and its workers sent out, as the host's sink
    /// received it (empty when the host ran without a private network
    /// namespace).
    #[serde(default)]
    pub outbound: Outbound,
}

/// What reached the host's outbound sink (`OutboundSink` in
/// `src/python/shared_runtime_host.py`): in the private network namespace
/// every IPv4 address is local, so a worker's DNS query reaches the sink's
/// resolver (answered 127.0.0.1) and its TCP connections to ports 80 and
/// 443 reach the sink (kept, then refused). Nothing is forwarded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outbound {
    /// What the sink listened on (`udp 10.255.255.53:53`, `tcp 0.0.0.0:80`);
    /// empty when it was not started.
    #[serde(default)]
    pub listening: Vec<String>,
    /// What could not be set up (a route, a port).
    #[serde(default)]
    pub errors: Vec<String>,
    /// Every query or connection, in order of arrival: at most 400, past
    /// which only those carrying a canary-like token (`vcc-canary-…`) are
    /// kept.
    #[serde(default)]
    pub events: Vec<OutboundEvent>,
    /// Events past the limit without a canary-like token, not kept.
    #[serde(default)]
    pub dropped: u64,
}

/// One DNS query or TCP connection the sink received.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OutboundEvent {
    /// When it arrived, in seconds on the host's monotonic clock (the clock
    /// of [`Call::t0`] and [`Call::t1`]).
    pub t: f64,
    /// `dns`, `http` or `tls`.
    pub kind: String,
    /// The port it was sent to (53, 80 or 443).
    #[serde(default)]
    pub port: u16,
    /// The queried name, the request's first 8 KiB (Latin-1; of at most
    /// 64 KiB read, every canary-like token after them appended), or
    /// `server name: NAME` of a TLS ClientHello.
    #[serde(default)]
    pub text: String,
}

/// One nsjail launch of the runtime, through our wrapper.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Launch {
    /// `pip` (dependency preparation), `worker` or `other`.
    pub kind: String,
    /// nsjail's arguments as the SDK built them.
    #[serde(default)]
    pub sdk_args: Vec<String>,
    /// The arguments the wrapper ran nsjail with.
    #[serde(default)]
    pub args: Vec<String>,
    /// A pip launch's output (stdout and stderr, the last 20 000 characters),
    /// which the SDK itself discards.
    #[serde(default)]
    pub output: Option<String>,
}

/// A response's code, message and data.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Answer {
    /// 0 is success.
    pub code: Option<i64>,
    /// The runtime's message.
    #[serde(default)]
    pub message: Option<String>,
    /// The response data.
    #[serde(default)]
    pub data: Value,
}

/// One installation the host applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Installation {
    /// `A` or `B`.
    pub label: String,
    /// The `InstallationBinding` it was applied under.
    pub binding: Value,
    /// Its canary configuration (field -> canary string).
    pub config: BTreeMap<String, String>,
    /// Each Runner's invocation-config canaries (runner -> field -> canary
    /// string): the string fields of the Runner's own `spec.config`, in the
    /// run context's `config` of every `run_runner` call for this
    /// installation.
    #[serde(default)]
    pub runner_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `apply_plugin_installation`'s answer.
    pub apply: Answer,
}

impl Installation {
    /// `installation_uuid` of the binding.
    pub fn uuid(&self) -> &str {
        self.binding["installation_uuid"].as_str().unwrap_or("")
    }

    /// Every canary of this installation: its plugin configuration's, then
    /// its Runners' invocation configurations'.
    pub fn canaries(&self) -> Vec<&str> {
        self.config
            .values()
            .chain(self.runner_config.values().flat_map(BTreeMap::values))
            .map(String::as_str)
            .collect()
    }
}

/// A process below the runtime.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Process {
    /// Host pid.
    pub pid: i64,
    /// Parent pid.
    pub ppid: i64,
    /// `nsjail` or `worker`.
    pub kind: String,
}

/// One invocation of one component for one installation.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Call {
    /// `sequential`, `concurrent` or `after-revoke`.
    pub phase: String,
    /// `A` or `B`.
    pub installation: String,
    /// `Kind/name`.
    pub component: String,
    /// Response code (None: no response).
    pub code: Option<i64>,
    /// Response message or the host's error.
    #[serde(default)]
    pub message: Option<String>,
    /// Response data; for a `run_runner` call, every streamed result's
    /// `data` in order (at most 200).
    #[serde(default)]
    pub reply: Value,
    /// A `parse_document` call's document (`file_key`, `filename`,
    /// `mime_type`, `bytes`), uploaded by `__file_chunk` under the
    /// installation's binding before the call (`None`: not a Parser call).
    #[serde(default)]
    pub document: Option<Value>,
    /// A `run_runner` call's stream, folded (`None`: not a Runner call).
    #[serde(default)]
    pub runner: Option<RunnerOutcome>,
    /// When the host sent the call, in seconds on its monotonic clock.
    #[serde(default)]
    pub t0: Option<f64>,
    /// When the host had its whole answer (or gave up), same clock.
    #[serde(default)]
    pub t1: Option<f64>,
}

/// What one streamed `run_runner` call ended with.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunnerOutcome {
    /// The stream reached its `end` chunk or an error code (false: the host
    /// stopped waiting).
    #[serde(default)]
    pub ended: bool,
    /// The `type` of every streamed result (`run.completed`, ...).
    #[serde(default)]
    pub result_types: Vec<String>,
    /// The completed message's content, else the accumulated deltas.
    #[serde(default)]
    pub reply_text: Option<String>,
    /// The `run.failed` result's code and error, if the run failed.
    #[serde(default)]
    pub failed: Option<RunFailure>,
    /// Answers received (chunks, the end included).
    #[serde(default)]
    pub chunks: u64,
    /// `context.run_id`.
    #[serde(default)]
    pub run_id: String,
    /// `context.config` as sent.
    #[serde(default)]
    pub config: Value,
}

/// A `run.failed` result.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunFailure {
    /// `data.code`.
    #[serde(default)]
    pub code: Option<String>,
    /// `data.error`.
    #[serde(default)]
    pub error: Option<String>,
}

impl RunnerOutcome {
    /// How the run ended, comparable across phases: `completed`,
    /// `run.failed <code>`, or `no terminal result`.
    pub fn outcome(&self) -> String {
        if let Some(f) = &self.failed {
            format!("run.failed {}", f.code.as_deref().unwrap_or("(no code)"))
        } else if self.result_types.iter().any(|t| t == "run.completed") {
            "completed".into()
        } else {
            "no terminal result".into()
        }
    }
}

/// A request the runtime made of the host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostCall {
    /// The binding's installation, when the request carried one.
    pub installation_uuid: Option<String>,
    /// Action name.
    pub action: String,
    /// Request data.
    #[serde(default)]
    pub data: Value,
    /// A storage request's `value_base64`, decoded (Latin-1), so a canary
    /// stored is searched like one sent.
    #[serde(default)]
    pub decoded: Option<String>,
}

impl HostCall {
    /// The request carries `canary`, in its data or its decoded value.
    pub fn carries(&self, canary: &str) -> bool {
        !canary.is_empty()
            && (self.data.to_string().contains(canary)
                || self.decoded.as_deref().is_some_and(|d| d.contains(canary)))
    }
}

/// The in-worker scan's report (`src/python/shared_scan.py`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Scan {
    /// Why the scan failed, if it did.
    #[serde(default)]
    pub error: Option<String>,
    /// Canaries reachable from plugin/component objects and module globals.
    #[serde(default)]
    pub found: Vec<Found>,
    /// Objects visited.
    #[serde(default)]
    pub nodes: u64,
    /// The walk hit its node limit.
    #[serde(default)]
    pub truncated: bool,
    /// Pending asyncio tasks.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// Live threads.
    #[serde(default)]
    pub threads: Vec<Thread>,
}

/// A canary and the path it was reached by.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Found {
    /// The canary string.
    pub canary: String,
    /// `module m.NAME[...]`, `component object C.attr`, `local x`...
    pub path: String,
}

/// A pending task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Task {
    /// Coroutine name and file.
    pub task: String,
    /// Its coroutine is the plugin's own code.
    pub own: bool,
    /// Canaries in its frames.
    #[serde(default)]
    pub canaries: Vec<Found>,
}

/// A live thread.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Thread {
    /// Thread name.
    pub thread: String,
    /// Some frame of its stack is the plugin's own code.
    pub own: bool,
    /// Canaries in its frames.
    #[serde(default)]
    pub canaries: Vec<Found>,
}
