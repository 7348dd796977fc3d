//! The typed hand-over between the gate and its host process.
//!
//! The gate writes a [`HostSpec`] to `DIR/logs/discovery-rpc/host-spec.json`
//! and starts `verify-coding-candidates __discovery-host --spec FILE`
//! (inside the private network namespace when there is one). The host
//! writes one [`HostResult`] to `spec.result_path` and exits; the gate
//! parses it with serde. Neither file holds the control token: the host
//! generates it and gives it only to the runtime's environment.

use crate::netns::NetKind;
use crate::rpc::InboundCall;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A component as the manifest declares it and the runtime lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ComponentId {
    /// `kind` (`Runner`, `Tool`, ...).
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
}

impl std::fmt::Display for ComponentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind, self.name)
    }
}

/// What the host must do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostSpec {
    /// The verified interpreter.
    pub python: PathBuf,
    /// The runtime's working directory; it keeps `data/` (artifacts,
    /// dependency environments, transfer files) under it.
    pub data_root: PathBuf,
    /// `DIR/roots/discovery-rpc`: every private root of the run, for the
    /// survivor survey.
    pub roots: PathBuf,
    /// The runtime's whole environment, without the control token.
    pub env: BTreeMap<String, String>,
    /// Value of the run's environment marker (`VCC_DISCOVERY_RUN`, also in
    /// `env`), random per run: the survey finds the run's processes by it.
    pub marker: String,
    /// `DIR/logs/discovery-rpc`.
    pub log_dir: PathBuf,
    /// Where the host writes its [`HostResult`].
    pub result_path: PathBuf,
    /// The network isolation the host runs under.
    pub net: NetKind,
    /// `ip` program to bring the namespace's loopback up (`None`: no namespace).
    pub ip: Option<PathBuf>,
    /// Milliseconds the runtime has to answer `/healthz`.
    pub health_timeout_ms: u64,
    /// Milliseconds one plugin has to reach `initialized`.
    pub plugin_timeout_ms: u64,
    /// Milliseconds one request has to be answered.
    pub call_timeout_ms: u64,
    /// Milliseconds one Runner probe may stream.
    pub runner_timeout_ms: u64,
    /// Worker start failures the runtime may report for one installation
    /// before the host stops waiting and calls it failed.
    pub failure_restarts: u64,
    /// Test hook: probe `/healthz` on this port instead of the control port
    /// (set from `VCC_DISCOVERY_TEST_HEALTH_PORT`; a port where nothing
    /// answers makes the runtime look never healthy).
    pub health_port_override: Option<u16>,
    /// At most this many installations start at once (the host's window,
    /// and the runtime's `max_concurrent_restarts`): the run's step width,
    /// 1 under `--jobs 1` (the SDK's default), never the candidate count,
    /// so a plugin's start, and its `plugin_timeout_ms`, does not wait on
    /// more starts as the count grows. 0 is taken as 1.
    #[serde(default)]
    pub start_width: usize,
    /// Candidates, installed one after the other in this order.
    pub candidates: Vec<HostCandidate>,
    /// Paths the runtime reads, bound read-only in its sandbox (the
    /// interpreter's folders, DIR/wheelhouse, the run's bytecode cache);
    /// `roots` is its only writable path.
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
}

/// One candidate archive to install.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostCandidate {
    /// Candidate folder.
    pub folder: String,
    /// Absolute path of the `.lbpkg` archive.
    pub archive: PathBuf,
    /// Its sha256 as recorded by `archive-members` (the installation
    /// binding's `artifact_digest`).
    pub sha256: String,
    /// `metadata.author`.
    pub author: String,
    /// `metadata.name`.
    pub name: String,
    /// Components the archive's manifest declares.
    pub declared: Vec<ComponentId>,
    /// The plugin settings the host answers `get_plugin_settings` with for
    /// this installation: the manifest's `spec.config` defaults, then the
    /// profile's `plugin_config`.
    #[serde(default)]
    pub plugin_config: Value,
    /// The profile's runner probes, one per Runner component it covers
    /// (a Runner without one gets a generic call).
    #[serde(default)]
    pub probes: Vec<ProbePlan>,
    /// Runners whose declared probe could not be prepared: the host does
    /// not call them (the gate's `runner-probe-setup` check says why).
    #[serde(default)]
    pub unprepared: Vec<String>,
    /// One plan per declared component that is not a Runner.
    #[serde(default)]
    pub component_plans: Vec<ComponentPlan>,
}

/// How one Tool, Command, EventListener or KnowledgeEngine component is to
/// be called (planned by the gate: `calls::plan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentPlan {
    /// The component.
    pub component: ComponentId,
    /// The host action that calls it (`call_tool`, ...); `None` for a kind
    /// the gate has no host action for.
    pub action: Option<String>,
    /// `profile` (`[[discovery.component_probe]]`) or `declared` (derived
    /// from the component's own declaration).
    pub source: String,
    /// The input: a Tool's parameters, `{params}` of a Command, an event, a
    /// retrieval context.
    pub input: Value,
    /// Why it is not called, when it is not.
    pub not_called: Option<String>,
}

/// One host action sent for a component, and what the runtime answered.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ComponentCall {
    /// The component.
    pub component: ComponentId,
    /// The host action.
    pub action: String,
    /// The request's `data`.
    pub request: Value,
    /// The `data` of every successful answer (a streamed action's chunks,
    /// without its empty end chunk), at most [`MAX_STREAMED_RESULTS`].
    pub answers: Vec<Value>,
    /// The error the runtime answered with (`code` not 0), or the client's
    /// when no answer came.
    pub error: Option<String>,
    /// No answer came (timeout, connection failure): the client's error.
    pub rpc_error: bool,
}

/// One Runner's probe, as planned by the gate: the invocation configs with
/// their placeholders resolved and the fixture in place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbePlan {
    /// The Runner component's `metadata.name`.
    pub runner: String,
    /// `builtin:NAME` or the fixture's path in the commit.
    pub fixture: String,
    /// The fixture program as written for this probe (`{fixture}`).
    pub fixture_path: PathBuf,
    /// Its sha256.
    pub fixture_sha256: String,
    /// The fresh private workspace (`{workspace}`).
    pub workspace: PathBuf,
    /// Where a built-in fixture appends its transcript (JSON lines).
    pub fixture_transcript: PathBuf,
    /// `VCC-PROBE-` and 16 hex digits, in the prompt of the fixture call.
    pub nonce: String,
    /// Another such nonce, in the prompt of the negative control only: a
    /// fixture transcript holding it shows the invalid config reached the
    /// fixture, and one holding `nonce` shows the fixture call did.
    #[serde(default)]
    pub control_nonce: String,
    /// The probe's invocation config (`RunnerContext.config`).
    pub config: Value,
    /// The negative control's invocation config.
    pub invalid_config: Value,
    /// Text the completed reply must contain.
    pub expect: String,
}

/// The outcome of one request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Step {
    /// Response code 0.
    pub ok: bool,
    /// The runtime's message, or the client's error sentence.
    pub message: String,
    /// Response data.
    pub data: Value,
}

/// The wrong-token positive control.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenControl {
    /// The upgrade was refused.
    pub refused: bool,
    /// HTTP status of the refusal.
    pub status: Option<u16>,
    /// What happened, in words.
    pub detail: String,
}

/// Facts about the runtime process.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RuntimeFacts {
    /// Program and arguments.
    pub command: Vec<String>,
    /// Leader pid (= process group id).
    pub pid: Option<u32>,
    /// `--ws-control-port`.
    pub control_port: u16,
    /// `--ws-debug-port`.
    pub debug_port: u16,
    /// Port `/healthz` was probed on.
    pub health_port: u16,
    /// `/healthz` answered 200 with `"live": true`.
    pub healthy: bool,
    /// Milliseconds from start to healthy.
    pub health_ms: Option<u64>,
    /// The health document.
    pub health: Option<Value>,
    /// The last probe error when not healthy.
    pub health_error: Option<String>,
    /// The runtime exited before it became healthy: its status.
    pub exited_early: Option<String>,
    /// Last lines of the runtime's log at the end.
    pub log_tail: String,
    /// The runtime's stderr log.
    pub log: PathBuf,
    /// The sandbox the runtime (and every plugin worker it starts) ran in;
    /// `None` when the runtime was not started.
    #[serde(default)]
    pub sandbox: Option<crate::evidence::sandbox::SandboxRecord>,
}

/// One `run_runner` request and its streamed reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunnerCall {
    /// `runner_name`.
    pub runner: String,
    /// `context.run_id`.
    #[serde(default)]
    pub run_id: String,
    /// `context.input.text`.
    #[serde(default)]
    pub prompt: String,
    /// `context.config`, the invocation config (`None`: none sent).
    #[serde(default)]
    pub config: Option<Value>,
    /// Each streamed result's `data`, in order (at most
    /// [`MAX_STREAMED_RESULTS`] kept).
    #[serde(default)]
    pub stream: Vec<Value>,
    /// The `type` of every streamed result (`run.completed`, ...).
    pub result_types: Vec<String>,
    /// The assistant message content of `run.completed` or `message.completed`,
    /// else the text the `message.delta` results accumulated, if any.
    pub reply: Option<String>,
    /// The request's error or the run's failure.
    pub error: Option<String>,
    /// The request itself failed (an RPC error or no answer), as opposed to
    /// the run ending in `run.failed`.
    #[serde(default)]
    pub rpc_error: bool,
    /// The reply is the text the `message.delta` results accumulated (no
    /// completed message carried content).
    #[serde(default)]
    pub reply_from_deltas: bool,
}

/// Streamed results kept per [`RunnerCall`].
pub const MAX_STREAMED_RESULTS: usize = 200;

/// One Runner component's probe: the negative control and the fixture call,
/// or one generic call when the profile declares no probe.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunnerProbe {
    /// `runner_name`.
    pub runner: String,
    /// The plan (`None`: no probe declared, one generic call).
    pub plan: Option<ProbePlan>,
    /// The call with the invalid config (probes only).
    pub negative_control: Option<RunnerCall>,
    /// The fixture call, or the generic call.
    pub call: RunnerCall,
    /// The fixture's own transcript (`transcript.jsonl` beside it), read
    /// after both calls: what the vendor process read and wrote.
    #[serde(default)]
    pub fixture_transcript: Vec<Value>,
}

/// Fixture transcript lines kept per [`RunnerProbe`].
pub const MAX_FIXTURE_TRANSCRIPT_LINES: usize = 400;

/// What happened to one candidate.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CandidateOutcome {
    /// Candidate folder.
    pub folder: String,
    /// The installation binding sent with every request for this candidate.
    pub binding: Value,
    /// Bytes uploaded with `__file_chunk`.
    pub uploaded_bytes: u64,
    /// Chunks uploaded.
    pub chunks: u64,
    /// sha256 of the bytes uploaded, computed while streaming them.
    pub uploaded_sha256: Option<String>,
    /// Why the upload did not complete.
    pub upload_error: Option<String>,
    /// `apply_plugin_installation`.
    pub apply: Option<Step>,
    /// `status` of the plugin in `list_plugins` (`initialized`, ...).
    pub status: Option<String>,
    /// `status` in `list_plugins` after every candidate of its batch (see
    /// `resident_with`) was installed and probed.
    pub final_status: Option<String>,
    /// Milliseconds from `apply_plugin_installation` to `initialized`.
    pub init_ms: Option<u64>,
    /// Components `list_plugins` reports.
    pub listed_components: Vec<ComponentId>,
    /// Worker start failures the runtime reported (`/healthz`
    /// `restart_coordinator.restart_failures_total` delta).
    pub worker_failures: u64,
    /// Why the plugin did not initialize, in words.
    pub failure: Option<String>,
    /// The runtime's own messages about this installation (its log lines).
    pub runtime_messages: Vec<String>,
    /// The plugin's worker process as the operating system shows it, once
    /// initialized.
    pub worker: Option<WorkerFacts>,
    /// Runner names `list_runners` reports.
    pub runners_listed: Vec<String>,
    /// One probe per declared Runner component.
    pub runner_probes: Vec<RunnerProbe>,
    /// One call per planned (callable) Tool, Command, EventListener and
    /// KnowledgeEngine component.
    #[serde(default)]
    pub component_calls: Vec<ComponentCall>,
    /// `remove_plugin_installation`, sent when the plugin failed (stops the
    /// runtime's restart loop).
    pub removed: Option<Step>,
    /// `remove_plugin_installation`, sent when the plugin's batch was done
    /// (its worker stops before the next batch starts).
    #[serde(default)]
    pub released: Option<Step>,
    /// How many installations were resident beside it, itself included,
    /// when its `final_status` was read (its batch).
    #[serde(default)]
    pub resident_with: usize,
}

/// A worker process of the runtime, read from `/proc`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WorkerFacts {
    /// Its pid.
    pub pid: i32,
    /// Its process group (the runtime's, unless it left it).
    pub pgid: i32,
    /// Its working directory (the artifact's code folder).
    pub cwd: String,
    /// The names (never the values) of its environment variables, sorted.
    pub env_names: Vec<String>,
}

/// A process tied to the run that was still alive when surveyed, and stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Survivor {
    /// Process id.
    pub pid: i32,
    /// What tied it to the run: `pgid`, `env-marker` and/or `cwd`.
    pub matched_by: Vec<String>,
    /// Its working directory, if readable.
    pub cwd: Option<String>,
    /// Its command line (for the reader; never used to match).
    pub cmdline: String,
    /// `TERM`, `KILL`, `exited before a signal` or `still running after KILL`.
    pub stopped_by: String,
}

/// How the runtime was stopped.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Teardown {
    /// The runtime had exited before teardown.
    pub exited_on_its_own: bool,
    /// SIGTERM was not enough: SIGKILL was sent to the group.
    pub needed_kill: bool,
    /// The runtime's process group was empty afterwards.
    pub group_empty: bool,
    /// Leader exit status.
    pub status: String,
    /// Processes tied to the run still alive after the group stop (each
    /// then stopped).
    pub survivors: Vec<Survivor>,
}

/// Everything the host observed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostResult {
    /// Network interfaces the host saw.
    pub interfaces: Vec<String>,
    /// Bringing the namespace's loopback up failed: why.
    pub loopback_error: Option<String>,
    /// The runtime.
    pub runtime: RuntimeFacts,
    /// Wrong-token control.
    pub token_control: Option<TokenControl>,
    /// `__ping`.
    pub ping: Option<Step>,
    /// `set_runtime_config`.
    pub runtime_config: Option<Step>,
    /// Per candidate, in spec order.
    pub candidates: Vec<CandidateOutcome>,
    /// Requests the runtime sent to the host.
    pub inbound: Vec<InboundCall>,
    /// Teardown.
    pub teardown: Option<Teardown>,
    /// An error that stopped the host early.
    pub fatal: Option<String>,
    /// The RPC transcript (JSON lines).
    pub transcript: PathBuf,
    /// Every signal the host sent and every process it reaped, as the
    /// harness's journal records them (`at_ms` from the host's start).
    #[serde(default)]
    pub signals: Vec<crate::evidence::SignalRecord>,
}
