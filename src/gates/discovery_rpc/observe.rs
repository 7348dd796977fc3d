//! What the `discovery-rpc` gate observes, and how: it plans each
//! candidate's installation and Runner probe, writes the host's spec, runs
//! the host (this binary's hidden `__discovery-host` subcommand, in a
//! private network namespace when the machine allows one), reads the
//! host's result and surveys what outlived it. [`super::decide`] judges the
//! [`Observation`].

use super::{host, plan::SetupProblem, spec};
use super::{
    plan, survey, CALL_TIMEOUT_MS, FAILURE_RESTARTS, HOST_SUBCOMMAND, ID, RUNNER_TIMEOUT_MS,
    TEST_HEALTH_PORT_ENV,
};
use crate::context::RunContext;
use crate::interrupt;
use crate::netns::{self, NetPlan};
use crate::process::{self, ChildSpec};
use serde::Serialize;
use spec::{HostResult, HostSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the gate observed: plain data, no decision.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Observation {
    /// What could not be planned before the host ran.
    pub setup: Vec<SetupProblem>,
    /// The network isolation chosen for the host and runtime.
    pub network: Option<NetPlan>,
    /// What the host was asked to do (candidates, limits, roots).
    pub spec: Option<HostSpec>,
    /// What the host observed of the runtime, when it wrote its result.
    pub result: Option<HostResult>,
    /// How the host ended without a result.
    pub host_failure: Option<HostFailure>,
    /// Processes tied to the run found after the host exited.
    pub survivors: Vec<spec::Survivor>,
}

/// A host process that wrote no result.
#[derive(Debug, Clone, Serialize)]
pub struct HostFailure {
    /// The host's command.
    pub program: String,
    /// Its exit status, described.
    pub status: String,
    /// Its output tail.
    pub tail: String,
    /// The result file it should have written.
    pub result_path: String,
    /// Its stderr log.
    pub stderr_log: String,
}

/// Runs the host over every candidate that could be planned and observes
/// what it reported and what outlived it; `None` when the run was
/// interrupted while the host ran.
///
/// # Errors
/// When DIR's folders cannot be created, the spec cannot be written, or the
/// host process cannot be started.
pub fn observe(ctx: &RunContext) -> Result<Option<Observation>, String> {
    let folders = folders(ctx)?;
    let mut setup = Vec::new();
    let candidates = plan::host_candidates(ctx, &folders.roots, &mut setup);
    if candidates.is_empty() {
        return Ok(Some(Observation {
            setup,
            ..Observation::default()
        }));
    }
    let (plan, mut host_spec) = host_spec(ctx, &folders, candidates)?;
    let spec_path = write_spec(ctx, &mut host_spec)?;
    let ran = run_and_survey(&plan, &spec_path, &host_spec);
    let host_out = match ran.outcome {
        Err(_) if interrupt::requested() => return Ok(None),
        Err(e) => return Err(format!("{ID}: could not run the host process: {e}")),
        Ok(out) => out,
    };
    let host_failure = ran
        .result
        .is_none()
        .then(|| host_failure(&host_out, &host_spec));
    Ok(Some(Observation {
        setup,
        network: Some(plan),
        spec: Some(host_spec),
        result: ran.result,
        host_failure,
        survivors: ran.survivors,
    }))
}

/// The gate's folders, created: `DIR/logs/discovery-rpc/`, and under
/// `DIR/roots/discovery-rpc/` the runtime's private HOME, TMPDIR and data
/// root.
struct Folders {
    log_dir: PathBuf,
    roots: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    data_root: PathBuf,
}

/// Creates the gate's [`Folders`].
///
/// # Errors
/// A sentence naming the folder that cannot be created.
fn folders(ctx: &RunContext) -> Result<Folders, String> {
    let log_dir = ctx.evidence_dir.join("logs").join(ID);
    let roots = ctx.evidence_dir.join("roots").join(ID);
    std::fs::create_dir_all(&log_dir)
        .map_err(|e| format!("{}: cannot create: {e}", log_dir.display()))?;
    let (home, tmp) = ctx
        .private_roots(ID, "runtime")
        .map_err(|e| format!("{}: cannot create private roots: {e}", roots.display()))?;
    let data_root = roots.join("runtime").join("data");
    std::fs::create_dir_all(&data_root)
        .map_err(|e| format!("{}: cannot create: {e}", data_root.display()))?;
    Ok(Folders {
        log_dir,
        roots,
        home,
        tmp,
        data_root,
    })
}

/// The network isolation chosen and the host's spec for `candidates`: the
/// runtime's environment (with a fresh marker and the run's wheelhouse),
/// the profile's limits and the folders; `read_only` is still empty.
///
/// # Errors
/// When no random marker can be drawn.
fn host_spec(
    ctx: &RunContext,
    folders: &Folders,
    candidates: Vec<spec::HostCandidate>,
) -> Result<(NetPlan, HostSpec), String> {
    let marker = host::random_token()?;
    let mut env = ctx.child_env(&folders.home, &folders.tmp);
    env.insert(survey::MARKER_NAME.into(), marker.clone());
    crate::wheelhouse::point_at_wheelhouse(&mut env, &ctx.evidence_dir);

    let opts = &ctx.profile.profile.discovery;
    let log_dir = &folders.log_dir;
    let plan = netns::plan(log_dir, &process::base_env());
    let health_port_override = std::env::var(TEST_HEALTH_PORT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u16>().ok());
    let host_spec = HostSpec {
        python: ctx.python.clone(),
        data_root: folders.data_root.clone(),
        roots: folders.roots.clone(),
        env,
        marker,
        log_dir: log_dir.clone(),
        result_path: log_dir.join("host-result.json"),
        net: plan.kind.clone(),
        ip: plan.ip.clone(),
        health_timeout_ms: opts.health_timeout_secs * 1000,
        plugin_timeout_ms: opts.plugin_timeout_secs * 1000,
        call_timeout_ms: CALL_TIMEOUT_MS,
        runner_timeout_ms: RUNNER_TIMEOUT_MS,
        failure_restarts: FAILURE_RESTARTS,
        health_port_override,
        start_width: ctx.width(),
        candidates,
        read_only: Vec::new(),
    };
    Ok((plan, host_spec))
}

/// Fills `host_spec.read_only` ([`runtime_inputs`]) and writes the spec to
/// `DIR/logs/discovery-rpc/host-spec.json`; returns that path.
///
/// # Errors
/// When the read-only inputs cannot be listed or the spec cannot be written.
fn write_spec(ctx: &RunContext, host_spec: &mut HostSpec) -> Result<PathBuf, String> {
    let log_dir = host_spec.log_dir.clone();
    let spec_path = log_dir.join("host-spec.json");
    host_spec.read_only = runtime_inputs(ctx, &log_dir)?;
    let text = serde_json::to_vec_pretty(&host_spec).map_err(|e| e.to_string())?;
    std::fs::write(&spec_path, text)
        .map_err(|e| format!("{}: cannot write: {e}", spec_path.display()))?;
    Ok(spec_path)
}

/// How the host ran, what it reported and what outlived it.
struct HostRun {
    /// The host process's end, or why it could not be run.
    outcome: Result<process::ChildOutput, String>,
    /// The host's result file, when it wrote a readable one.
    result: Option<HostResult>,
    /// Processes tied to the run found (and stopped) after the host.
    survivors: Vec<spec::Survivor>,
}

/// Runs the host, reads its result (adopting the signals it journaled),
/// then stops whatever of the run outlived it.
fn run_and_survey(plan: &NetPlan, spec_path: &Path, host_spec: &HostSpec) -> HostRun {
    let host_started_ms = process::journal::clock_ms();
    let outcome = run_host(plan, spec_path, host_spec);
    let result: Option<HostResult> = std::fs::read(&host_spec.result_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if let Some(r) = &result {
        process::journal::adopt(r.signals.clone(), host_started_ms, ID);
    }
    // Whatever happened, nothing of the run may outlive the gate: the
    // runtime's group (if the host reported it), the marker, the roots.
    let pgids: Vec<i32> = result
        .as_ref()
        .and_then(|r| r.runtime.pid)
        .map(|p| p as i32)
        .into_iter()
        .collect();
    let survivors =
        survey::survey_and_stop(&host_spec.roots, &pgids, &host_spec.marker, process::GRACE);
    HostRun {
        outcome,
        result,
        survivors,
    }
}

/// How a host that wrote no result ended: its command, status, output
/// tail and logs.
fn host_failure(host_out: &process::ChildOutput, host_spec: &HostSpec) -> HostFailure {
    HostFailure {
        program: format!(
            "{} {HOST_SUBCOMMAND}",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
        status: host_out.describe(),
        tail: host_out.tail(20),
        result_path: host_spec.result_path.display().to_string(),
        stderr_log: host_out.logs.1.display().to_string(),
    }
}

/// What the runtime's sandbox binds read-only: the interpreter's folders
/// (when bwrap is usable), DIR/wheelhouse and the run's bytecode cache.
fn runtime_inputs(ctx: &RunContext, log_dir: &Path) -> Result<Vec<PathBuf>, String> {
    use crate::isolation::sandbox;
    let mut v = match sandbox::availability(&ctx.evidence_dir.join("logs").join("sandbox")) {
        sandbox::Availability::Bwrap(_) => {
            sandbox::interpreter_paths(&ctx.python, log_dir, &log_dir.join("interpreter-paths"))?
        }
        sandbox::Availability::Unavailable(_) => Vec::new(),
    };
    v.push(ctx.evidence_dir.join("wheelhouse"));
    let pycache = ctx.evidence_dir.join("roots").join("pycache");
    std::fs::create_dir_all(&pycache)
        .map_err(|e| format!("cannot create {}: {e}", pycache.display()))?;
    v.push(pycache);
    Ok(v)
}

/// The host's whole time limit: health, then per candidate its start, one
/// probe per Runner and a few requests, plus teardown margin.
fn host_timeout(spec: &HostSpec) -> Duration {
    let per_candidate: u64 = spec
        .candidates
        .iter()
        .map(|c| {
            // A declared probe makes two calls per Runner.
            let runners = c.declared.iter().filter(|d| d.kind == "Runner").count() as u64;
            let calls = c.component_plans.len() as u64;
            spec.plugin_timeout_ms
                + 2 * runners * spec.runner_timeout_ms
                + (6 + calls) * spec.call_timeout_ms
        })
        .sum();
    Duration::from_millis(spec.health_timeout_ms + per_candidate + 120_000)
}

fn run_host(
    plan: &NetPlan,
    spec_path: &Path,
    spec: &HostSpec,
) -> Result<process::ChildOutput, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this binary: {e}"))?;
    let host_args = vec![
        HOST_SUBCOMMAND.to_string(),
        "--spec".into(),
        spec_path.display().to_string(),
    ];
    let (program, args) = match plan.wrapper.split_first() {
        Some((first, rest)) => {
            let mut args = rest.to_vec();
            args.push(exe.display().to_string());
            args.extend(host_args);
            (PathBuf::from(first), args)
        }
        None => (exe, host_args),
    };
    process::run(&ChildSpec {
        program,
        args,
        cwd: spec.log_dir.clone(),
        env: process::base_env(),
        timeout: host_timeout(spec),
        log_stem: spec.log_dir.join("host"),
        stdin: None,
    })
    .map_err(|e| e.to_string())
}
