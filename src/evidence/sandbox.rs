//! The sandbox a step ran in, and what it left running, as the evidence
//! records them: plain data, written by `isolation::sandbox` and
//! `isolation::left_running`, which make the sandbox and read its init's
//! report.

use serde::{Deserialize, Serialize};

/// A step's network inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// A network namespace of its own with only loopback up.
    PrivateLoopback,
    /// The harness's own network namespace (itself private where the
    /// harness made one, as `discovery-rpc` does).
    Shared,
}

/// The sandbox a step ran in, as the evidence records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SandboxRecord {
    /// `bwrap`; `supervised` when the step ran unconfined under the
    /// verifier's supervisor process (its parent is not the verifier);
    /// `none` when it ran unconfined as the verifier's own child.
    pub kind: String,
    /// The bwrap program and the first line of its `--version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The first line of `bwrap --version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// True when the step's init is not the verifier (a pid namespace of
    /// its own).
    pub own_pid_namespace: bool,
    /// True when the sandbox ends with the verifier (`--die-with-parent`).
    pub dies_with_verifier: bool,
    /// The step's network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// Paths bound read-only (besides the system directories).
    pub read_only: Vec<String>,
    /// Paths bound read-write.
    pub writable: Vec<String>,
    /// Why the step ran unconfined (`kind` = `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfined_because: Option<String>,
}

impl SandboxRecord {
    /// A step that ran in no sandbox: `kind` (`none`, `supervised`, or `not
    /// kept` for a run whose record was not kept), and why, when known.
    pub fn unconfined(kind: &str, because: Option<String>) -> Self {
        Self {
            kind: kind.to_string(),
            program: None,
            version: None,
            own_pid_namespace: false,
            dies_with_verifier: false,
            network: None,
            read_only: Vec::new(),
            writable: Vec::new(),
            unconfined_because: because,
        }
    }

    /// True when the step ran in a sandbox whose init is not the verifier.
    pub fn confined(&self) -> bool {
        self.kind == "bwrap" && self.own_pid_namespace && self.dies_with_verifier
    }
}

/// A process still in the namespace when the step exited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeftProcess {
    /// Its pid inside the namespace (the step is 2).
    pub pid: i32,
    /// Its parent's pid inside the namespace (1: an orphan).
    pub ppid: i32,
    /// Its process group.
    pub pgid: i32,
    /// Its session (not 1: it left the step's session, as a daemon does).
    pub sid: i32,
    /// `/proc/<pid>/stat` state letter.
    pub state: String,
    /// Its command line, arguments joined by spaces.
    pub cmdline: String,
    /// How long it had been alive when surveyed, in milliseconds.
    pub ms_alive: u64,
}

/// What the survey of a step's namespace found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LeftRunning {
    /// The init's report, read.
    Surveyed {
        /// Every process still there (none: the step left nothing).
        processes: Vec<LeftProcess>,
    },
    /// No report could be read: why.
    NotSurveyed {
        /// The reason, naming the report's path.
        why: String,
    },
}
