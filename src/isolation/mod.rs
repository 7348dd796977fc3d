//! Worker isolation backends, and what the OS says about the processes they run.
//!
//! A backend turns "run this interpreter with these arguments, this
//! environment and this private root" into the command that does it:
//!
//! * [`process`]: the interpreter itself, in its own process group (given by
//!   [`crate::process::spawn_long`]), with the environment cleared but for the
//!   given variables; its private HOME/TMPDIR/data are set by environment only.
//! * [`bwrap`]: Debian's `bubblewrap` around the interpreter: new pid, mount,
//!   IPC and UTS namespaces (`--share-net` keeps loopback shared), a root of
//!   its own with read-only binds of the system, interpreter and SDK, only the
//!   worker's private root bound read-write, `--die-with-parent`,
//!   `--new-session`, `--clearenv`.
//!
//! `crate::process::procfs` reads `/proc`; `crate::process::survey` finds and
//! stops processes tied to a run.

pub mod bwrap;
pub mod left_running;
pub mod process;
pub mod sandbox;

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The `--isolation` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum IsolationChoice {
    /// bwrap when its preflight succeeds, else process; both recorded.
    #[default]
    Auto,
    /// Separate process groups and private roots by environment; no namespaces.
    Process,
    /// bubblewrap namespaces per worker; unavailable bwrap is an error.
    Bwrap,
}

impl IsolationChoice {
    /// The flag's value as written (`auto`, `process`, `bwrap`).
    pub fn word(self) -> &'static str {
        match self {
            IsolationChoice::Auto => "auto",
            IsolationChoice::Process => "process",
            IsolationChoice::Bwrap => "bwrap",
        }
    }
}

/// What one confined program needs, whatever the backend.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// The program's private root (bound read-write under bwrap); absolute.
    pub root: PathBuf,
    /// Working directory (inside `root`).
    pub cwd: PathBuf,
    /// The program's whole environment.
    pub env: BTreeMap<String, String>,
    /// Paths the program reads (interpreter prefixes, SDK); bound read-only
    /// under bwrap, at the same path.
    pub read_only: Vec<PathBuf>,
}

/// A command ready for [`crate::process`]: program, arguments, environment of
/// the started process.
#[derive(Debug, Clone)]
pub struct Command {
    /// Program to start.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The started process's environment (under bwrap, bwrap's own; the
    /// confined program gets [`Confinement::env`] through `--setenv`).
    pub env: BTreeMap<String, String>,
}

/// A selected backend.
#[derive(Debug, Clone)]
pub enum Backend {
    /// No namespaces.
    Process,
    /// bubblewrap, located and preflighted.
    Bwrap(bwrap::Bwrap),
}

impl Backend {
    /// `process` or `bwrap`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Process => "process",
            Backend::Bwrap(_) => "bwrap",
        }
    }

    /// The command running `program args` confined by `c`.
    pub fn command(&self, c: &Confinement, program: &std::path::Path, args: &[String]) -> Command {
        match self {
            Backend::Process => process::command(c, program, args),
            Backend::Bwrap(b) => b.command(c, program, args),
        }
    }

    /// True when the backend gives each worker its own pid namespace.
    pub fn new_pid_namespace(&self) -> bool {
        matches!(self, Backend::Bwrap(_))
    }
}
