//! Choosing the isolation backend for `--isolation auto|process|bwrap`, with
//! the bwrap preflight.

use super::decide::BackendObs;
use super::GATE;
use crate::context::RunContext;
use crate::isolation::{bwrap, Backend, Confinement, IsolationChoice};
use crate::process::{self, ChildSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Time limit of the bwrap preflight.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(60);

/// `worker_paths.py`'s answer.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct InterpreterPaths {
    /// `sys.executable`.
    pub executable: String,
    /// Its real path.
    pub realpath: String,
    /// `sys.prefix` (the venv).
    pub prefix: String,
    /// `sys.base_prefix` (the base interpreter).
    pub base_prefix: String,
    /// `sys.exec_prefix`.
    pub exec_prefix: String,
    /// `sys.base_exec_prefix`.
    pub base_exec_prefix: String,
    /// The imported `langbot_plugin` package directory.
    pub sdk_package: String,
    /// `os.getpid()`.
    pub pid: i32,
    /// `readlink /proc/self/ns/pid`.
    pub pid_namespace: String,
}

/// The paths a confined interpreter must read: its prefixes, the directory of
/// the given interpreter path and of its real path, and the SDK package.
pub fn read_only_paths(python: &Path, p: &InterpreterPaths) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [
        &p.prefix,
        &p.base_prefix,
        &p.exec_prefix,
        &p.base_exec_prefix,
        &p.sdk_package,
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    for exe in [python, Path::new(&p.realpath), Path::new(&p.executable)] {
        if let Some(dir) = exe.parent() {
            v.push(dir.to_path_buf());
        }
    }
    bwrap::minimal_cover(&v)
}

/// The selected backend (none when a requested one is unavailable) and what
/// the choice rests on (the `backend` check's observation).
pub fn select(
    ctx: &RunContext,
    choice: IsolationChoice,
    base: &Path,
    host: &InterpreterPaths,
    read_only: &[PathBuf],
) -> (Option<Backend>, BackendObs) {
    let obs = |selected: &str, preflight: serde_json::Value, failure: Option<String>| BackendObs {
        requested: choice.word().to_string(),
        selected: selected.to_string(),
        preflight,
        failure,
    };
    if choice == IsolationChoice::Process {
        return (
            Some(Backend::Process),
            obs("process", serde_json::Value::Null, None),
        );
    }
    match (choice, preflight(ctx, base, host, read_only)) {
        (_, Ok((b, pf))) => (Some(Backend::Bwrap(b)), obs("bwrap", pf, None)),
        (IsolationChoice::Bwrap, Err((why, pf))) => (None, obs("none", pf, Some(why))),
        (_, Err((why, pf))) => (Some(Backend::Process), obs("process", pf, Some(why))),
    }
}

type PreflightError = (String, serde_json::Value);

/// What the probe inside bwrap found wrong: the SDK package resolved
/// elsewhere than on the host, or the harness's own pid namespace.
fn inside_problem(inside: &InterpreterPaths, host: &InterpreterPaths) -> Option<String> {
    if inside.sdk_package != host.sdk_package {
        return Some(format!(
            "inside bwrap `langbot_plugin` resolved to {}, expected {}",
            inside.sdk_package, host.sdk_package
        ));
    }
    if inside.pid_namespace == host.pid_namespace {
        return Some(format!(
            "the probe inside bwrap ran in the harness's pid namespace {}",
            inside.pid_namespace
        ));
    }
    None
}

/// Locates bwrap, reads its version, and runs `worker_paths.py` inside it:
/// it must start, import the same SDK package, and see a new pid namespace.
fn preflight(
    ctx: &RunContext,
    base: &Path,
    host: &InterpreterPaths,
    read_only: &[PathBuf],
) -> Result<(bwrap::Bwrap, serde_json::Value), PreflightError> {
    let program = bwrap::locate().map_err(|e| (e.clone(), json!({"ok": false, "error": e})))?;
    let fail = |e: String| {
        let v = json!({"ok": false, "program": program.display().to_string(), "error": e});
        (e, v)
    };
    let root = base.join("preflight");
    let (home, tmp) = ctx
        .private_roots(GATE, "preflight")
        .map_err(|e| fail(format!("cannot create {}: {e}", root.display())))?;
    let version =
        bwrap::version(&program, &root, &ctx.log_stem(GATE, "bwrap-version")).map_err(fail)?;
    let b = bwrap::Bwrap {
        program: program.clone(),
        version: version.clone(),
    };
    let confinement = Confinement {
        root: root.clone(),
        cwd: root.clone(),
        env: ctx.child_env(&home, &tmp),
        read_only: read_only.to_vec(),
    };
    let args = vec![
        "-I".to_string(),
        "-B".to_string(),
        "-c".to_string(),
        crate::python::WORKER_PATHS_PROBE.to_string(),
    ];
    let cmd = b.command(&confinement, &ctx.python, &args);
    let out = process::run(&ChildSpec {
        program: cmd.program,
        args: cmd.args,
        cwd: root.clone(),
        env: cmd.env,
        timeout: PREFLIGHT_TIMEOUT,
        log_stem: ctx.log_stem(GATE, "bwrap-preflight"),
        stdin: None,
    })
    .map_err(|e| fail(e.to_string()))?;
    if !out.success() {
        return Err(fail(format!(
            "the interpreter did not run inside bwrap: {}: {}",
            out.describe(),
            out.tail(5)
        )));
    }
    let inside: InterpreterPaths = serde_json::from_slice(&out.stdout).map_err(|e| {
        fail(format!(
            "the probe inside bwrap printed no JSON ({e}); see {}",
            out.logs.0.display()
        ))
    })?;
    if let Some(problem) = inside_problem(&inside, host) {
        return Err(fail(problem));
    }
    Ok((
        b,
        json!({
            "ok": true,
            "program": program.display().to_string(),
            "version": version,
            "inside": inside,
            "host_pid_namespace": host.pid_namespace,
            "read_only_binds": read_only.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        }),
    ))
}
