//! The `discovery-rpc` gate: the genuine SDK runtime, over a real loopback
//! WebSocket, installs every candidate archive, initializes its plugin and
//! lists its components; each Runner component is probed through its
//! invocation config: a negative control that must fail, then a call that
//! must complete through a local protocol fixture the runner starts itself.
//!
//! The runtime's control server binds all interfaces, so the gate runs the
//! runtime and the host client together in a private network namespace when
//! the machine allows one ([`crate::netns`]): it re-executes this binary as
//! the hidden `__discovery-host` subcommand under `unshare`, hands it a
//! [`spec::HostSpec`] and reads back a [`spec::HostResult`]. Without a
//! namespace the same host runs directly and the exposure is a warning.
//!
//! The runtime prepares each plugin's dependencies itself, with its own pip;
//! its environment names the run's wheelhouse as the only index
//! ([`crate::wheelhouse::point_at_wheelhouse`]), built by the `dependencies`
//! gate, the only gate that reaches the package index.
//!
//! Files: `DIR/logs/discovery-rpc/` holds `host-spec.json`,
//! `host-result.json`, `transcript.jsonl` (every message, archive bytes
//! elided), `runtime.{stdout,stderr,cmd}`, `host.*` and the namespace
//! preflights; `DIR/roots/discovery-rpc/` holds the runtime's private HOME,
//! TMPDIR and data root, and `probes/<folder>/<runner>/` the runner probes'
//! fixture program, its `transcript.jsonl` and the private `workspace/`.

mod components;
mod host;
pub mod spec;
mod survey;

pub use host::main as host_main;

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, DiscoveryRecord, RunnerReplyRecord};
use crate::netns::{self, NetKind, NetPlan};
use crate::process::{self, ChildSpec};
use crate::profile::{CandidateSpec, RunnerProbeSpec, NONCE_PLACEHOLDER};
use crate::python;
use crate::{hash, interrupt};
use serde_json::json;
use spec::{CandidateOutcome, ComponentId, HostCandidate, HostResult, HostSpec, ProbePlan};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Gate id.
pub const ID: &str = "discovery-rpc";

/// Name of the hidden subcommand the gate re-executes this binary with.
pub const HOST_SUBCOMMAND: &str = "__discovery-host";

/// Test hook: when set to a port number, the host probes `/healthz` there
/// instead of on the runtime's control port. Pointing it at a port where
/// nothing listens makes the runtime look never healthy (the gate then fails
/// with the runtime's log tail). It can only make the gate fail, and its use
/// is stated in the `runtime-healthy` check.
pub const TEST_HEALTH_PORT_ENV: &str = "VCC_DISCOVERY_TEST_HEALTH_PORT";

/// Label of every Runner reply: what the evidence may and may not claim.
pub const FIXTURE_LABEL: &str = "local protocol fixture, not a vendor call";

/// Milliseconds one control request may take.
const CALL_TIMEOUT_MS: u64 = 30_000;

/// Milliseconds one Runner probe may stream.
const RUNNER_TIMEOUT_MS: u64 = 60_000;

/// Failed worker starts of one installation after which the host stops
/// waiting (the runtime restarts a failed worker after about 1 s, then 2 s).
const FAILURE_RESTARTS: u64 = 2;

/// The `discovery-rpc` gate.
pub struct DiscoveryRpc;

impl super::Gate for DiscoveryRpc {
    fn headline_check(&self) -> Option<&'static str> {
        Some("network-isolation")
    }

    fn id(&self) -> &'static str {
        ID
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
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

        let mut checks = Vec::new();
        let candidates = host_candidates(ctx, &roots, &mut checks);
        if candidates.is_empty() {
            return Ok(checks);
        }
        let marker = host::random_token()?;
        let mut env = ctx.child_env(&home, &tmp);
        env.insert(survey::MARKER_NAME.into(), marker.clone());
        crate::wheelhouse::point_at_wheelhouse(&mut env, &ctx.evidence_dir);

        let opts = &ctx.profile.profile.discovery;
        let plan = netns::plan(&log_dir, &process::base_env());
        let health_port_override = std::env::var(TEST_HEALTH_PORT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u16>().ok());
        let host_spec = HostSpec {
            python: ctx.python.clone(),
            data_root,
            roots: roots.clone(),
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
            candidates,
        };
        let spec_path = log_dir.join("host-spec.json");
        let text = serde_json::to_vec_pretty(&host_spec).map_err(|e| e.to_string())?;
        std::fs::write(&spec_path, text)
            .map_err(|e| format!("{}: cannot write: {e}", spec_path.display()))?;

        let outcome = run_host(&plan, &spec_path, &host_spec);
        let result: Option<HostResult> = std::fs::read(&host_spec.result_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        // Whatever happened, nothing of the run may outlive the gate: the
        // runtime's group (if the host reported it), the marker, the roots.
        let pgids: Vec<i32> = result
            .as_ref()
            .and_then(|r| r.runtime.pid)
            .map(|p| p as i32)
            .into_iter()
            .collect();
        let survivors = survey::survey_and_stop(&roots, &pgids, &host_spec.marker, process::GRACE);
        let host_out = match outcome {
            Err(e) if interrupt::requested() => {
                let _ = e;
                return Ok(Vec::new());
            }
            Err(e) => return Err(format!("{ID}: could not run the host process: {e}")),
            Ok(out) => out,
        };
        let Some(result) = result else {
            checks.push(Check::fail(
                "host",
                None,
                format!(
                    "the discovery host (`{} {HOST_SUBCOMMAND}`) {} without writing {}; expected a result document; its output tail:\n{}\nsee {}",
                    std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
                    host_out.describe(),
                    host_spec.result_path.display(),
                    host_out.tail(20),
                    host_out.logs.1.display()
                ),
            ));
            checks.push(teardown_check(None, &survivors));
            return Ok(checks);
        };
        checks.extend(result_checks(&plan, &host_spec, &result));
        for o in &result.candidates {
            let (folder, discovery) = (o.folder.clone(), discovery_record(o));
            out.set(move |ctx| {
                if let Some(record) = ctx.record_mut(&folder) {
                    record.discovery = Some(discovery);
                }
            });
        }
        checks.push(teardown_check(Some(&result), &survivors));
        Ok(checks)
    }
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
            spec.plugin_timeout_ms + 2 * runners * spec.runner_timeout_ms + 6 * spec.call_timeout_ms
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

/// One [`HostCandidate`] per selected candidate with a recorded archive;
/// candidates without one, or whose manifest cannot be read, fail here.
fn host_candidates(ctx: &RunContext, roots: &Path, checks: &mut Vec<Check>) -> Vec<HostCandidate> {
    let mut out = Vec::new();
    for c in ctx.candidate_specs() {
        let folder = c.folder();
        let archive = ctx
            .candidates
            .iter()
            .find(|r| r.folder == folder)
            .and_then(|r| r.archive.as_ref());
        let Some(archive) = archive else {
            checks.push(Check::fail(
                "installation",
                Some(folder),
                format!(
                    "{folder}: no archive is recorded for this candidate; expected archive-members to record DIR/packages/{folder}/*.lbpkg; run the lbp-build and archive-members gates first"
                ),
            ));
            continue;
        };
        let path = ctx.evidence_dir.join(&archive.path);
        match components::read(&path) {
            Ok(declared) => {
                let (probes, unprepared, problems) =
                    plan_probes(ctx, roots, c, &declared.components);
                checks.extend(problems);
                out.push(HostCandidate {
                    folder: folder.to_string(),
                    archive: path,
                    sha256: archive.sha256.clone(),
                    author: declared.author,
                    name: declared.name,
                    plugin_config: plugin_config(ctx, c, &declared.config_defaults),
                    declared: declared.components,
                    probes,
                    unprepared,
                })
            }
            Err(e) => checks.push(Check::fail(
                "components",
                Some(folder),
                format!("{e}; expected a manifest.yaml whose spec.components the SDK can discover; fix the manifest"),
            )),
        }
    }
    out
}

/// Plans the profile's runner probes of one candidate: writes each fixture
/// program into `DIR/roots/discovery-rpc/probes/<folder>/<runner>/fixture.py`
/// beside a fresh `workspace/`, and resolves the placeholders of both
/// invocation configs. A probe that cannot be planned is a failing check.
fn plan_probes(
    ctx: &RunContext,
    roots: &Path,
    candidate: &CandidateSpec,
    declared: &[ComponentId],
) -> (Vec<ProbePlan>, Vec<String>, Vec<Check>) {
    let folder = candidate.folder();
    let mut plans = Vec::new();
    let mut unprepared = Vec::new();
    let mut checks = Vec::new();
    let python = std::path::absolute(&ctx.python).unwrap_or_else(|_| ctx.python.clone());
    let runners: Vec<&str> = declared
        .iter()
        .filter(|d| d.kind == "Runner")
        .map(|d| d.name.as_str())
        .collect();
    for entry in ctx
        .profile
        .profile
        .discovery
        .runner_probes
        .iter()
        .filter(|p| p.candidate == candidate.path)
    {
        let targets: Vec<&str> = match &entry.runner {
            Some(r) if runners.contains(&r.as_str()) => vec![r.as_str()],
            Some(r) => {
                checks.push(Check::fail(
                    "runner-probe-setup",
                    Some(folder),
                    format!(
                        "the profile's discovery.runner_probe for {} names runner {r:?}, which the archive's manifest does not declare (its Runner components: {runners:?}); expected the probe to name a declared Runner; fix `runner` in the profile or the manifest",
                        candidate.path
                    ),
                ));
                continue;
            }
            None => runners.clone(),
        };
        for runner in targets {
            if plans.iter().any(|p: &ProbePlan| p.runner == runner) {
                continue;
            }
            match plan_one(ctx, roots, &python, folder, runner, entry) {
                Ok(plan) => plans.push(plan),
                Err(e) => {
                    unprepared.push(runner.to_string());
                    checks.push(Check::fail(
                        "runner-probe-setup",
                        Some(folder),
                        format!("cannot prepare the runner probe of `{runner}`: {e}"),
                    ));
                }
            }
        }
    }
    (plans, unprepared, checks)
}

fn plan_one(
    ctx: &RunContext,
    roots: &Path,
    python: &Path,
    folder: &str,
    runner: &str,
    entry: &RunnerProbeSpec,
) -> Result<ProbePlan, String> {
    let dir = roots.join("probes").join(folder).join(runner);
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace)
        .map_err(|e| format!("{}: cannot create: {e}", workspace.display()))?;
    let fixture_path = dir.join("fixture.py");
    let (bytes, expect_template) = match entry.builtin() {
        Some(name) => {
            let f = python::fixtures::get(name)
                .ok_or_else(|| format!("no built-in fixture {name:?}"))?;
            (
                f.source.as_bytes().to_vec(),
                python::fixtures::reply_text(name, NONCE_PLACEHOLDER),
            )
        }
        None => {
            let mut source = ctx.staging_source();
            source.extend(entry.fixture.split('/'));
            let bytes = std::fs::read(&source).map_err(|e| {
                format!(
                    "{}: cannot read the profile's fixture {:?} from the staged commit: {e}; expected a committed file",
                    source.display(),
                    entry.fixture
                )
            })?;
            (bytes, entry.expect.clone().unwrap_or_default())
        }
    };
    std::fs::write(&fixture_path, &bytes)
        .map_err(|e| format!("{}: cannot write: {e}", fixture_path.display()))?;
    let nonce = format!("VCC-PROBE-{}", &host::random_token()?[..16]);
    let control_nonce = format!("VCC-PROBE-{}", &host::random_token()?[..16]);
    let vars = [
        ("{python}", python.display().to_string()),
        ("{fixture}", fixture_path.display().to_string()),
        ("{workspace}", workspace.display().to_string()),
    ];
    let resolve = |t: &toml::Table| -> Result<serde_json::Value, String> {
        let v = serde_json::to_value(t).map_err(|e| format!("invocation config: {e}"))?;
        Ok(substitute(v, &vars))
    };
    Ok(ProbePlan {
        runner: runner.to_string(),
        fixture: entry.fixture.clone(),
        fixture_sha256: hash::sha256_bytes(&bytes),
        workspace,
        fixture_transcript: dir.join("transcript.jsonl"),
        config: resolve(&entry.config)?,
        invalid_config: resolve(&entry.invalid_config)?,
        expect: expect_template.replace(NONCE_PLACEHOLDER, &nonce),
        nonce,
        control_nonce,
        fixture_path,
    })
}

/// `value` with every placeholder of `vars` replaced in every string, in
/// one pass: a value is never scanned again, so a path that happens to hold
/// `{workspace}` is not rewritten. A string that is exactly one placeholder
/// gets the value as it is; within a longer string the value is
/// shell-quoted as Python's `shlex.quote` does (unchanged when it holds only
/// `[A-Za-z0-9@%+=:,./_-]`), because runners split such a string as a
/// command line (Codex reads `command = "{python} {fixture}"` with
/// `shlex.split`): a path with a space stays one word.
fn substitute(value: serde_json::Value, vars: &[(&str, String)]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(substitute_str(&s, vars)),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, substitute(v, vars)))
                .collect(),
        ),
        other => other,
    }
}

fn substitute_str(s: &str, vars: &[(&str, String)]) -> String {
    if let Some((_, v)) = vars.iter().find(|(k, _)| *k == s) {
        return v.clone();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        match vars.iter().find(|(k, _)| rest.starts_with(k)) {
            Some((k, v)) => {
                out.push_str(&shell_quote(v));
                rest = &rest[k.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// `word` quoted for a POSIX shell word split (`shlex.quote`).
fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\"'\"'"))
    }
}

/// The plugin settings of a candidate's installation: its manifest's
/// `spec.config` defaults, then each of its probes' `plugin_config`.
fn plugin_config(
    ctx: &RunContext,
    candidate: &CandidateSpec,
    defaults: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    let mut config = defaults.clone();
    for entry in ctx
        .profile
        .profile
        .discovery
        .runner_probes
        .iter()
        .filter(|p| p.candidate == candidate.path)
    {
        if let Ok(serde_json::Value::Object(o)) = serde_json::to_value(&entry.plugin_config) {
            config.extend(o);
        }
    }
    serde_json::Value::Object(config)
}

/// The candidate's facts for `evidence.json`'s `candidates[].discovery`.
fn discovery_record(o: &CandidateOutcome) -> DiscoveryRecord {
    DiscoveryRecord {
        installation_uuid: o.binding["installation_uuid"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        artifact_digest: o.binding["artifact_digest"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        uploaded_sha256: o.uploaded_sha256.clone(),
        status: o.status.clone(),
        components: o
            .listed_components
            .iter()
            .map(ComponentId::to_string)
            .collect(),
        runners: o
            .runner_probes
            .iter()
            .map(|p| RunnerReplyRecord {
                runner: p.runner.clone(),
                result_types: p.call.result_types.clone(),
                reply: p.call.reply.clone(),
                error: p.call.error.clone(),
                label: FIXTURE_LABEL.into(),
                fixture: p.plan.as_ref().map(|plan| plan.fixture.clone()),
                fixture_sha256: p.plan.as_ref().map(|plan| plan.fixture_sha256.clone()),
                negative_control_result_types: p
                    .negative_control
                    .as_ref()
                    .map(|n| n.result_types.clone()),
                negative_control_error: p.negative_control.as_ref().and_then(|n| n.error.clone()),
            })
            .collect(),
        failure: o
            .failure
            .as_ref()
            .map(|f| {
                match o
                    .runtime_messages
                    .iter()
                    .rev()
                    .find(|m| !m.starts_with('['))
                {
                    Some(m) => format!("{f}; the runtime's message: {m}"),
                    None => f.clone(),
                }
            })
            .or_else(|| o.upload_error.clone()),
    }
}

fn result_checks(plan: &NetPlan, spec: &HostSpec, r: &HostResult) -> Vec<Check> {
    let mut checks = vec![network_check(plan, r)];
    let rt = &r.runtime;
    let log_tail = indent(&rt.log_tail);
    let override_note = match spec.health_port_override {
        Some(p) => format!(
            " (test override {TEST_HEALTH_PORT_ENV}: probed port {p} instead of the control port)"
        ),
        None => String::new(),
    };
    let runtime_observed = json!({
        "command": rt.command, "pid": rt.pid, "control_port": rt.control_port,
        "debug_port": rt.debug_port, "health_port": rt.health_port, "health_ms": rt.health_ms,
        "health": rt.health, "log": rt.log,
    });
    if !rt.healthy {
        let why = match (&rt.exited_early, &rt.health_error) {
            (Some(status), _) => format!("the runtime exited ({status}) before answering"),
            (None, Some(e)) => format!(
                "no healthy answer within {} s (last probe: {e})",
                spec.health_timeout_ms / 1000
            ),
            (None, None) => "it was never probed".into(),
        };
        let detail = match &r.fatal {
            Some(f) => format!("the runtime could not be started: {f}"),
            None => format!(
                "`{}` did not become healthy on 127.0.0.1:{}{override_note}: {why}; expected GET /healthz to answer HTTP 200 with \"live\": true; runtime log tail:\n{log_tail}\nsee {}; check that the interpreter runs `lbp rt` and raise [discovery] health_timeout_secs on a slow machine",
                rt.command.join(" "),
                rt.health_port,
                rt.log.display()
            ),
        };
        checks.push(Check::fail("runtime-healthy", None, detail).with_observed(runtime_observed));
        for c in &spec.candidates {
            checks.push(Check::fail(
                "initialized",
                Some(&c.folder),
                format!("{}: not installed: the runtime never became healthy (see the runtime-healthy check)", c.folder),
            ));
        }
        return checks;
    }
    checks.push(
        Check::pass(
            "runtime-healthy",
            None,
            format!(
                "`{}` answered GET /healthz with \"live\": true after {} ms{override_note}",
                rt.command.join(" "),
                rt.health_ms.unwrap_or(0)
            ),
        )
        .with_observed(runtime_observed),
    );
    if let Some(t) = &r.token_control {
        checks.push(
            Check::from_bool(
                "control-token",
                None,
                t.refused,
                if t.refused {
                    format!("positive control: {}; the control token is enforced", t.detail)
                } else {
                    format!(
                        "positive control failed: {}; expected the runtime (LANGBOT_PLUGIN_RUNTIME_CONTROL_TOKEN set) to refuse any other token with HTTP 401; the control server is not protected by its token",
                        t.detail
                    )
                },
            )
            .with_observed(json!({"refused": t.refused, "status": t.status, "header": crate::rpc::TOKEN_HEADER})),
        );
    }
    let ping_ok = r
        .ping
        .as_ref()
        .is_some_and(|p| p.ok && p.data["message"] == "pong");
    let config_ok = r.runtime_config.as_ref().is_some_and(|c| c.ok);
    let handshake_detail = if ping_ok && config_ok {
        "__ping answered pong and set_runtime_config (runtime_profile oss_dev) was accepted over the token-authenticated WebSocket".to_string()
    } else {
        format!(
            "expected __ping to answer pong and set_runtime_config to be accepted; found __ping: {}, set_runtime_config: {}{}; see {}",
            r.ping.as_ref().map(|p| format!("code ok={} {:?}", p.ok, p.message)).unwrap_or_else(|| "not answered".into()),
            r.runtime_config.as_ref().map(|c| format!("code ok={} {:?}", c.ok, c.message)).unwrap_or_else(|| "not answered".into()),
            r.fatal.as_ref().map(|f| format!("; host error: {f}")).unwrap_or_default(),
            r.transcript.display()
        )
    };
    checks.push(
        Check::from_bool("control-handshake", None, ping_ok && config_ok, handshake_detail)
            .with_observed(json!({"ping": r.ping, "set_runtime_config": r.runtime_config, "transcript": r.transcript})),
    );
    for c in &spec.candidates {
        match r.candidates.iter().find(|o| o.folder == c.folder) {
            Some(o) => checks.extend(candidate_checks(c, o, r)),
            None => checks.push(Check::fail(
                "initialized",
                Some(&c.folder),
                format!(
                    "{}: the host did not reach this candidate{}; see {}",
                    c.folder,
                    r.fatal
                        .as_ref()
                        .map(|f| format!(" ({f})"))
                        .unwrap_or_default(),
                    r.transcript.display()
                ),
            )),
        }
    }
    checks
}

fn network_check(plan: &NetPlan, r: &HostResult) -> Check {
    let observed = json!({
        "isolation": plan.kind, "label": plan.label(), "attempts": plan.attempts,
        "interfaces": r.interfaces, "loopback_error": r.loopback_error,
    });
    match plan.kind {
        NetKind::None => Check::warn(
            "network-isolation",
            None,
            format!(
                "no private network namespace could be created ({}); the runtime's control server bound 0.0.0.0:{} and its debug server 0.0.0.0:{} on this machine's network while the gate ran (the control server required the token; see control-token); to keep them on a private loopback, provide `unshare` (util-linux) and `ip` (iproute2) and run as root or allow unprivileged user namespaces",
                plan.attempts.join("; "),
                r.runtime.control_port,
                r.runtime.debug_port
            ),
        )
        .with_observed(observed),
        _ => {
            let only_lo = r.interfaces.iter().all(|i| i == "lo") && !r.interfaces.is_empty();
            let ok = only_lo && r.loopback_error.is_none();
            Check::from_bool(
                "network-isolation",
                None,
                ok,
                if ok {
                    format!(
                        "runtime and host ran in {}; the only interface was lo, so the 0.0.0.0 listeners were reachable over that loopback alone",
                        plan.label()
                    )
                } else {
                    format!(
                        "expected the namespace from {} to hold only an up loopback; found interfaces {:?}{}",
                        plan.label(),
                        r.interfaces,
                        r.loopback_error.as_ref().map(|e| format!(" and loopback error: {e}")).unwrap_or_default()
                    )
                },
            )
            .with_observed(observed)
        }
    }
}

fn candidate_checks(c: &HostCandidate, o: &CandidateOutcome, r: &HostResult) -> Vec<Check> {
    let folder = c.folder.as_str();
    let plugin = format!("{}/{}", c.author, c.name);
    let mut checks = Vec::new();
    let apply_ok = o.apply.as_ref().is_some_and(|a| a.ok);
    let install_ok = o.upload_error.is_none() && apply_ok;
    let install_detail = if install_ok {
        format!(
            "{} ({} bytes, sha256 {}) uploaded in {} __file_chunk request(s) and applied with an InstallationBinding whose artifact_digest is that sha256",
            c.archive.display(),
            o.uploaded_bytes,
            c.sha256,
            o.chunks
        )
    } else {
        format!(
            "{}: expected the runtime to accept the upload and apply_plugin_installation; found: {}; see {}",
            c.archive.display(),
            o.upload_error
                .clone()
                .or_else(|| o.apply.as_ref().map(|a| format!("apply_plugin_installation: {}", a.message)))
                .unwrap_or_else(|| "no apply response".into()),
            r.transcript.display()
        )
    };
    checks.push(
        Check::from_bool("installation", Some(folder), install_ok, install_detail).with_observed(
            json!({
                "archive": c.archive, "sha256": c.sha256, "uploaded_sha256": o.uploaded_sha256,
                "uploaded_bytes": o.uploaded_bytes, "chunks": o.chunks, "binding": o.binding,
                "apply": o.apply,
            }),
        ),
    );
    if !install_ok {
        return checks;
    }
    let settings_calls = r
        .inbound
        .iter()
        .filter(|i| {
            i.action == "get_plugin_settings"
                && i.installation_uuid.as_deref() == o.binding["installation_uuid"].as_str()
        })
        .count();
    let still = o.final_status.as_deref() == Some("initialized");
    let initialized = o.status.as_deref() == Some("initialized") && o.failure.is_none() && still;
    let init_observed = json!({
        "plugin": plugin, "status": o.status, "final_status": o.final_status, "init_ms": o.init_ms,
        "worker_failures": o.worker_failures, "get_plugin_settings_answered": settings_calls,
        "runtime_messages": o.runtime_messages, "removed": o.removed, "worker": o.worker,
    });
    if !initialized {
        let message = o
            .runtime_messages
            .iter()
            .rev()
            .find(|m| !m.starts_with('['))
            .or_else(|| o.runtime_messages.last())
            .cloned()
            .unwrap_or_else(|| "(the runtime logged nothing about it)".into());
        checks.push(
            Check::fail(
                "initialized",
                Some(folder),
                format!(
                    "plugin {plugin} ({folder}) was not initialized by the runtime: {}; the runtime's message: {message}; expected list_plugins to show it `initialized`; {}",
                    o.failure.clone().unwrap_or_else(|| format!(
                        "it was `initialized`, but after every candidate was installed list_plugins showed it {}",
                        o.final_status.as_deref().unwrap_or("no longer listed")
                    )),
                    initialized_advice(o, &r.runtime.log)
                ),
            )
            .with_observed(init_observed),
        );
        return checks;
    }
    checks.push(
        Check::pass(
            "initialized",
            Some(folder),
            format!(
                "list_plugins shows {plugin} `initialized` {} ms after apply_plugin_installation and still after every candidate was installed; the runtime asked the host for its settings (get_plugin_settings) {settings_calls} time(s)",
                o.init_ms.unwrap_or(0)
            ),
        )
        .with_observed(init_observed),
    );
    let declared: Vec<String> = c.declared.iter().map(ComponentId::to_string).collect();
    let listed: Vec<String> = o
        .listed_components
        .iter()
        .map(ComponentId::to_string)
        .collect();
    checks.push(
        Check::from_bool(
            "components",
            Some(folder),
            declared == listed,
            if declared == listed {
                format!("the runtime lists exactly the components the manifest declares: {}", declared.join(", "))
            } else {
                format!(
                    "{plugin}: expected the runtime to list the manifest's components [{}]; found [{}]; check spec.components and each component manifest's kind and metadata.name",
                    declared.join(", "),
                    listed.join(", ")
                )
            },
        )
        .with_observed(json!({"declared": declared, "listed": listed})),
    );
    checks.push(runner_check(c, o, &plugin));
    checks
}

/// What to do about a plugin the runtime did not initialize: when its
/// dependency installer failed, the likely cause (the wheelhouse) and the log
/// to read; otherwise the plugin itself.
fn initialized_advice(o: &CandidateOutcome, log: &Path) -> String {
    let texts = o
        .failure
        .iter()
        .chain(&o.runtime_messages)
        .map(String::as_str);
    crate::wheelhouse::installer_failure_advice(texts, log).unwrap_or_else(|| {
        format!("fix the plugin (for example its manifest's execution.python path/attr) and see {} for the runtime's log", log.display())
    })
}

/// The `runner-probe` check of one candidate, decided from what the host
/// observed: every declared Runner is listed; a declared probe's negative
/// control ends in `run.failed`, and its fixture call ends in
/// `run.completed` carrying the fixture's text, with no `run.failed`, after
/// a built-in fixture saw the probe's nonce; a Runner without a declared
/// probe completes one generic call and the check warns.
fn runner_check(c: &HostCandidate, o: &CandidateOutcome, plugin: &str) -> Check {
    let folder = c.folder.as_str();
    let runners: Vec<&ComponentId> = c.declared.iter().filter(|d| d.kind == "Runner").collect();
    let observed = json!({
        "label": FIXTURE_LABEL, "runners_listed": o.runners_listed, "probes": o.runner_probes,
    });
    if runners.is_empty() {
        return Check::pass(
            "runner-probe",
            Some(folder),
            format!("{plugin} declares no Runner component; nothing to probe"),
        )
        .with_observed(observed);
    }
    let mut problems = Vec::new();
    let mut generic = Vec::new();
    let mut passed = Vec::new();
    for r in &runners {
        let name = r.name.as_str();
        if !o.runners_listed.iter().any(|l| l == name) {
            problems.push(format!("list_runners does not list `{name}`"));
        }
        if c.unprepared.iter().any(|u| u == name) {
            problems.push(format!(
                "`{name}` was not probed: its declared probe could not be prepared (see runner-probe-setup)"
            ));
            continue;
        }
        let Some(p) = o.runner_probes.iter().find(|p| p.runner == name) else {
            problems.push(format!("`{name}` was not probed"));
            continue;
        };
        match &p.plan {
            None => match completion_problem(&p.call, None) {
                Some(e) => problems.push(format!(
                    "`{name}` (generic call: no runner probe declared, so the run context carried no invocation config): {e}"
                )),
                None => generic.push(format!(
                    "`{name}` → {:?}",
                    p.call.reply.as_deref().unwrap_or("")
                )),
            },
            Some(plan) => {
                let before = problems.len();
                match &p.negative_control {
                    None => problems.push(format!(
                        "`{name}`: the negative control (invalid config) was not run"
                    )),
                    Some(n) => {
                        if let Some(e) = negative_problem(n) {
                            problems.push(format!("`{name}`: {e}"));
                        }
                    }
                }
                let builtin = plan.fixture.starts_with(crate::profile::BUILTIN_FIXTURE_PREFIX);
                if builtin && saw_nonce(&p.fixture_transcript, &plan.control_nonce) {
                    problems.push(format!(
                        "`{name}`: the fixture's transcript ({}) shows it receiving the negative control's nonce {}: the runner reached the fixture with the invalid invocation config, so its run.failed is not a refusal of that config",
                        plan.fixture_transcript.display(),
                        plan.control_nonce
                    ));
                }
                if let Some(e) = completion_problem(&p.call, Some(plan)) {
                    problems.push(format!("`{name}`: {e}"));
                } else if builtin && !saw_nonce(&p.fixture_transcript, &plan.nonce)
                {
                    problems.push(format!(
                        "`{name}`: the reply carries the fixture's text, but the fixture's transcript ({}) does not show it receiving the prompt's nonce {}: the reply did not come from the fixture process",
                        plan.fixture_transcript.display(),
                        plan.nonce
                    ));
                }
                if problems.len() == before {
                    passed.push(format!(
                        "`{name}`: invalid config → {}; {}{} → {:?}",
                        p.negative_control
                            .as_ref()
                            .and_then(|n| n.error.as_deref())
                            .unwrap_or("run.failed"),
                        plan.fixture,
                        if builtin {
                            ""
                        } else {
                            " (a committed file: the repository's own fixture, whose transcript is not checked)"
                        },
                        p.call.reply.as_deref().unwrap_or("")
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Check::fail(
            "runner-probe",
            Some(folder),
            format!(
                "{plugin}: expected each Runner to refuse the invalid invocation config (run.failed) and to complete through its declared local protocol fixture; found: {}; see the RPC transcript and DIR/roots/discovery-rpc/probes/{folder}/",
                problems.join("; ")
            ),
        )
        .with_observed(observed);
    }
    if !generic.is_empty() {
        return Check::warn(
            "runner-probe",
            Some(folder),
            format!(
                "no runner probe declared for {plugin}: one generic run_runner call without an invocation config completed ({}){}; it does not show that the runner reaches a vendor process through its config, nor that it can fail; declare [[discovery.runner_probe]] in the profile ({FIXTURE_LABEL})",
                generic.join("; "),
                if passed.is_empty() { String::new() } else { format!("; probed: {}", passed.join("; ")) }
            ),
        )
        .with_observed(observed);
    }
    Check::pass(
        "runner-probe",
        Some(folder),
        format!(
            "each Runner refused the invalid invocation config and completed through its local protocol fixture, started by the runner from its invocation config: {} ({FIXTURE_LABEL}: no vendor CLI, model or account was contacted)",
            passed.join("; ")
        ),
    )
    .with_observed(observed)
}

/// Why the negative control does not prove the probe can fail, if it does not.
fn negative_problem(n: &spec::RunnerCall) -> Option<String> {
    let config = n.config.as_ref().map(|c| c.to_string()).unwrap_or_default();
    if n.rpc_error {
        return Some(format!(
            "the negative control (invocation config {config}) ended in a request error instead of run.failed: {}",
            n.error.as_deref().unwrap_or("")
        ));
    }
    if n.result_types.iter().any(|t| t == "run.completed") {
        return Some(format!(
            "the negative control with the invalid invocation config {config} completed ({:?}); expected run.failed: a runner that ignores its config would pass this probe, so the probe proves nothing; fix the runner or the profile's invalid_config",
            n.result_types
        ));
    }
    if !n.result_types.iter().any(|t| t == "run.failed") {
        return Some(format!(
            "the negative control with the invalid invocation config {config} streamed {:?} without run.failed; expected the runner to refuse the config with run.failed",
            n.result_types
        ));
    }
    None
}

/// Why a call did not complete as required, if it did not: no request
/// error, no `run.failed`, a `run.completed`, a reply, and (for a probe) the
/// reply carries the expected text.
fn completion_problem(call: &spec::RunnerCall, plan: Option<&ProbePlan>) -> Option<String> {
    let failed = call.result_types.iter().any(|t| t == "run.failed");
    if call.rpc_error || failed {
        let error = call.error.as_deref().unwrap_or("");
        let advice = match plan {
            Some(plan) if error.contains("command_not_found") => format!(
                "; the runner could not start the command its invocation config names: the probe's `config` sets {}; set the config key that names the vendor command (`command`) in the profile's [[discovery.runner_probe]] to the fixture (`{{python}}`/`{{fixture}}`)",
                plan.config
            ),
            Some(plan) => format!(
                "; the fixture call's invocation config was {}; read the runtime log and the fixture's transcript ({})",
                plan.config,
                plan.fixture_transcript.display()
            ),
            None => String::new(),
        };
        return Some(format!(
            "{} {error}{advice}",
            if call.rpc_error {
                "the request failed:"
            } else {
                "the run ended in run.failed:"
            }
        ));
    }
    if !call.result_types.iter().any(|t| t == "run.completed") {
        return Some(format!(
            "streamed {:?} without a run.completed message",
            call.result_types
        ));
    }
    let Some(reply) = &call.reply else {
        return Some(format!(
            "completed ({:?}) without a reply: neither run.completed nor a message.completed carried message content, and no message.delta carried text",
            call.result_types
        ));
    };
    if let Some(plan) = plan {
        if !reply.contains(&plan.expect) {
            return Some(format!(
                "completed, but the reply {reply:?} does not contain the fixture's text {:?}; the reply did not come from {}",
                plan.expect, plan.fixture
            ));
        }
    }
    None
}

/// True when a transcript line the fixture read (anything but its own
/// output) holds `nonce`.
fn saw_nonce(transcript: &[serde_json::Value], nonce: &str) -> bool {
    transcript.iter().any(|line| {
        line.get("direction").and_then(|d| d.as_str()) != Some("out")
            && line.to_string().contains(nonce)
    })
}

fn teardown_check(r: Option<&HostResult>, gate_survivors: &[spec::Survivor]) -> Check {
    let t = r.and_then(|r| r.teardown.as_ref());
    let mut problems = Vec::new();
    match t {
        None => problems.push("the host did not report stopping the runtime".to_string()),
        Some(t) => {
            if !t.group_empty {
                problems.push(
                    "the runtime's process group still had live members after TERM, grace and KILL"
                        .into(),
                );
            }
            if !t.survivors.is_empty() {
                problems.push(format!(
                    "after the runtime's group was stopped, processes tied to the run were still alive: {}",
                    describe(&t.survivors)
                ));
            }
        }
    }
    if !gate_survivors.is_empty() {
        problems.push(format!(
            "after the host exited, processes tied to the run were still alive: {}",
            describe(gate_survivors)
        ));
    }
    let residue: Vec<i32> = t
        .map(|t| t.survivors.as_slice())
        .unwrap_or_default()
        .iter()
        .chain(gate_survivors)
        .filter(|s| s.stopped_by == "still running after KILL")
        .map(|s| s.pid)
        .collect();
    if !residue.is_empty() {
        problems.push(format!("RESIDUE: pids {residue:?} survived SIGKILL"));
    }
    let observed = json!({"teardown": t, "gate_survey": gate_survivors, "residue": residue});
    if problems.is_empty() {
        let t = t.cloned().unwrap_or_default();
        Check::pass(
            "teardown",
            None,
            format!(
                "the runtime and its workers were stopped as one process group ({}; {}); no live member was left, and a survey of /proc (by process group, by the run's environment marker, by cwd under DIR/roots/discovery-rpc) found nothing, from inside the host and again after it exited",
                t.status,
                if t.needed_kill { "SIGKILL was needed" } else { "SIGTERM sufficed" }
            ),
        )
        .with_observed(observed)
    } else {
        Check::fail(
            "teardown",
            None,
            format!(
                "expected nothing of the run to survive its teardown; found: {}; each was stopped (TERM, grace, KILL); a runtime or worker that ignores SIGTERM or leaves its process group must be fixed",
                problems.join("; ")
            ),
        )
        .with_observed(observed)
    }
}

fn describe(survivors: &[spec::Survivor]) -> String {
    survivors
        .iter()
        .map(|s| {
            format!(
                "pid {} ({}; matched by {}; stopped by {})",
                s.pid,
                s.cmdline,
                s.matched_by.join("+"),
                s.stopped_by
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;
    use spec::{RunnerCall, RunnerProbe, Survivor, Teardown};

    fn candidate() -> HostCandidate {
        HostCandidate {
            folder: "codex-agent".into(),
            archive: PathBuf::from("/ev/packages/codex-agent/a.lbpkg"),
            sha256: "ab".repeat(32),
            author: "acme".into(),
            name: "codex-agent".into(),
            declared: vec![ComponentId {
                kind: "Runner".into(),
                name: "default".into(),
            }],
            plugin_config: json!({}),
            probes: vec![],
            unprepared: vec![],
        }
    }

    fn survivor(stopped_by: &str) -> Survivor {
        Survivor {
            pid: 4242,
            matched_by: vec!["cwd".into()],
            cwd: Some("/ev/roots/discovery-rpc/runtime/data".into()),
            cmdline: "python -m langbot_plugin.cli.__init__ run -s --prod".into(),
            stopped_by: stopped_by.into(),
        }
    }

    #[test]
    fn teardown_fails_on_any_survivor_and_names_residue() {
        let clean = HostResult {
            teardown: Some(Teardown {
                group_empty: true,
                ..Teardown::default()
            }),
            ..HostResult::default()
        };
        assert_eq!(teardown_check(Some(&clean), &[]).result, CheckResult::Pass);
        let c = teardown_check(Some(&clean), &[survivor("TERM")]);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("pid 4242"), "{}", c.detail);
        let c = teardown_check(Some(&clean), &[survivor("still running after KILL")]);
        assert!(c.detail.contains("RESIDUE: pids [4242]"), "{}", c.detail);
        assert_eq!(teardown_check(None, &[]).result, CheckResult::Fail);
    }

    #[test]
    fn a_namespace_with_another_interface_fails_and_no_namespace_warns() {
        let plan = NetPlan {
            kind: NetKind::UnshareNet,
            wrapper: vec!["/usr/bin/unshare".into(), "--net".into(), "--".into()],
            ip: Some("/usr/sbin/ip".into()),
            attempts: vec![],
        };
        let mut r = HostResult {
            interfaces: vec!["lo".into()],
            ..HostResult::default()
        };
        assert_eq!(network_check(&plan, &r).result, CheckResult::Pass);
        r.interfaces.push("eth0".into());
        assert_eq!(network_check(&plan, &r).result, CheckResult::Fail);
        let none = NetPlan {
            kind: NetKind::None,
            wrapper: vec![],
            ip: None,
            attempts: vec!["unshare: not found".into()],
        };
        let c = network_check(&none, &r);
        assert_eq!(c.result, CheckResult::Warn);
        assert!(c.detail.contains("0.0.0.0"), "{}", c.detail);
    }

    fn call(types: &[&str], reply: Option<&str>, error: Option<&str>) -> RunnerCall {
        RunnerCall {
            runner: "default".into(),
            result_types: types.iter().map(|t| t.to_string()).collect(),
            reply: reply.map(str::to_string),
            error: error.map(str::to_string),
            ..RunnerCall::default()
        }
    }

    fn plan() -> ProbePlan {
        ProbePlan {
            runner: "default".into(),
            fixture: "builtin:codex-app-server".into(),
            fixture_path: "/ev/roots/discovery-rpc/probes/codex-agent/default/fixture.py".into(),
            fixture_sha256: "cd".repeat(32),
            workspace: "/ev/roots/discovery-rpc/probes/codex-agent/default/workspace".into(),
            fixture_transcript:
                "/ev/roots/discovery-rpc/probes/codex-agent/default/transcript.jsonl".into(),
            nonce: "VCC-PROBE-0123456789abcdef".into(),
            control_nonce: "VCC-PROBE-fedcba9876543210".into(),
            config: json!({"location": "local", "command": "/py /fx.py"}),
            invalid_config: json!({"location": "invalid"}),
            expect: python::fixtures::reply_text("codex-app-server", "VCC-PROBE-0123456789abcdef"),
        }
    }

    /// A candidate whose declared probe passed: the negative control failed,
    /// the fixture answered with the nonce it read.
    fn probed() -> (HostCandidate, CandidateOutcome) {
        let plan = plan();
        let mut c = candidate();
        c.probes = vec![plan.clone()];
        let o = CandidateOutcome {
            runners_listed: vec!["default".into()],
            runner_probes: vec![RunnerProbe {
                runner: "default".into(),
                negative_control: Some(call(
                    &["run.failed"],
                    None,
                    Some("codex.invalid_config: unsupported location"),
                )),
                call: call(
                    &["message.delta", "run.completed"],
                    Some(&format!("fixture says {}", plan.expect)),
                    None,
                ),
                fixture_transcript: vec![
                    json!({"pid": 7, "direction": "in", "line": format!("{{\"prompt\": \"{}\"}}", plan.nonce)}),
                    json!({"pid": 7, "direction": "out", "line": plan.expect}),
                ],
                plan: Some(plan),
            }],
            ..CandidateOutcome::default()
        };
        (c, o)
    }

    #[test]
    fn a_declared_probe_passes_only_with_a_failing_control_and_the_fixture_reply() {
        let (c, o) = probed();
        let pass = runner_check(&c, &o, "acme/codex-agent");
        assert_eq!(pass.result, CheckResult::Pass, "{}", pass.detail);
        assert!(pass.detail.contains(FIXTURE_LABEL));
        assert!(
            pass.detail.contains("codex.invalid_config"),
            "{}",
            pass.detail
        );

        // Counterexamples, one per clause of the check.
        type Mutation = Box<dyn Fn(&mut RunnerProbe)>;
        let cases: Vec<(&str, Mutation)> = vec![
            (
                "a runner that ignores its config would pass",
                Box::new(|p| {
                    p.negative_control =
                        Some(call(&["run.completed"], Some("ignored the config"), None));
                }),
            ),
            (
                "without run.failed",
                Box::new(|p| {
                    p.negative_control = Some(call(&["message.delta"], None, None));
                }),
            ),
            (
                "request error instead of run.failed",
                Box::new(|p| {
                    let mut n = call(&[], None, Some("no answer within 60 s"));
                    n.rpc_error = true;
                    p.negative_control = Some(n);
                }),
            ),
            (
                "negative control (invalid config) was not run",
                Box::new(|p| p.negative_control = None),
            ),
            (
                "ended in run.failed",
                Box::new(|p| {
                    p.call.result_types.insert(0, "run.failed".into());
                    p.call.error = Some("codex.protocol: late".into());
                }),
            ),
            (
                "without a run.completed",
                Box::new(|p| p.call.result_types = vec!["message.delta".into()]),
            ),
            ("without a reply", Box::new(|p| p.call.reply = None)),
            (
                "does not contain the fixture's text",
                Box::new(|p| {
                    p.call.reply = Some("[verify-coding-candidates local protocol fixture builtin:codex-app-server] received VCC-PROBE-ffffffffffffffff".into());
                }),
            ),
            (
                "does not show it receiving the prompt's nonce",
                Box::new(|p| {
                    p.fixture_transcript.retain(|l| l["direction"] == "out");
                }),
            ),
            (
                // The fixture was reached only by the negative control: its
                // transcript holds that call's nonce, not the fixture call's.
                "does not show it receiving the prompt's nonce",
                Box::new(|p| {
                    let control = p.plan.as_ref().unwrap().control_nonce.clone();
                    for line in &mut p.fixture_transcript {
                        let text = line
                            .to_string()
                            .replace("VCC-PROBE-0123456789abcdef", &control);
                        *line = serde_json::from_str(&text).unwrap();
                    }
                }),
            ),
            (
                "receiving the negative control's nonce",
                Box::new(|p| {
                    let control = p.plan.as_ref().unwrap().control_nonce.clone();
                    p.fixture_transcript.insert(
                        0,
                        json!({"pid": 6, "direction": "in", "line": format!("{{\"prompt\": \"{control}\"}}")}),
                    );
                }),
            ),
        ];
        for (needle, mutate) in cases {
            let (c, mut o) = probed();
            mutate(&mut o.runner_probes[0]);
            let k = runner_check(&c, &o, "acme/codex-agent");
            assert_eq!(k.result, CheckResult::Fail, "{needle}: {}", k.detail);
            assert!(k.detail.contains(needle), "{needle}: {}", k.detail);
        }
        let (c, mut o) = probed();
        o.runners_listed.clear();
        assert_eq!(runner_check(&c, &o, "p").result, CheckResult::Fail);
        o.runner_probes.clear();
        assert_eq!(runner_check(&c, &o, "p").result, CheckResult::Fail);
    }

    #[test]
    fn a_missing_command_names_the_config_key_to_set() {
        let (c, mut o) = probed();
        o.runner_probes[0].call = call(
            &["run.failed"],
            None,
            Some("codex.command_not_found: Codex command not found: codex"),
        );
        let k = runner_check(&c, &o, "acme/codex-agent");
        assert_eq!(k.result, CheckResult::Fail);
        assert!(k.detail.contains("codex.command_not_found"), "{}", k.detail);
        assert!(k.detail.contains("(`command`)"), "{}", k.detail);
        assert!(
            k.detail.contains("[[discovery.runner_probe]]"),
            "{}",
            k.detail
        );
    }

    #[test]
    fn a_runner_without_a_declared_probe_warns_and_still_must_complete() {
        let c = candidate();
        let mut o = CandidateOutcome {
            runners_listed: vec!["default".into()],
            runner_probes: vec![RunnerProbe {
                runner: "default".into(),
                call: call(&["run.completed"], Some("[local-fixture] hi"), None),
                ..RunnerProbe::default()
            }],
            ..CandidateOutcome::default()
        };
        let warn = runner_check(&c, &o, "acme/codex-agent");
        assert_eq!(warn.result, CheckResult::Warn);
        assert!(
            warn.detail.contains("no runner probe declared"),
            "{}",
            warn.detail
        );
        o.runner_probes[0].call.error = Some("runner.exception: boom".into());
        o.runner_probes[0].call.rpc_error = true;
        let fail = runner_check(&c, &o, "acme/codex-agent");
        assert_eq!(fail.result, CheckResult::Fail);
        assert!(fail.detail.contains("boom"), "{}", fail.detail);
        o.runner_probes[0].call = call(&["run.completed"], None, None);
        let silent = runner_check(&c, &o, "p");
        assert!(
            silent.detail.contains("without a reply"),
            "{}",
            silent.detail
        );
    }

    #[test]
    fn placeholders_are_replaced_in_every_string() {
        let vars = [
            ("{python}", "/v/bin/python".to_string()),
            ("{fixture}", "/p/fixture.py".to_string()),
        ];
        let got = substitute(
            json!({"command": "{python} {fixture}", "args": ["{fixture}", 3], "nested": {"x": "{python}"}, "n": 1}),
            &vars,
        );
        assert_eq!(
            got,
            json!({"command": "/v/bin/python /p/fixture.py", "args": ["/p/fixture.py", 3], "nested": {"x": "/v/bin/python"}, "n": 1})
        );
    }

    #[test]
    fn a_placeholder_value_is_never_substituted_again() {
        // An evidence directory whose name holds a placeholder.
        let vars = [
            ("{python}", "/v/bin/python".to_string()),
            ("{fixture}", "/ev/{workspace}/fixture.py".to_string()),
            ("{workspace}", "/ev/{workspace}/workspace".to_string()),
        ];
        let got = substitute(json!({"args": ["{fixture}"], "w": "{workspace}"}), &vars);
        assert_eq!(
            got,
            json!({"args": ["/ev/{workspace}/fixture.py"], "w": "/ev/{workspace}/workspace"})
        );
    }

    #[test]
    fn a_placeholder_within_a_command_line_is_shell_quoted() {
        let vars = [
            ("{python}", "/v/bin/python".to_string()),
            ("{fixture}", "/e v/it's/fixture.py".to_string()),
        ];
        let got = substitute(
            json!({"command": "{python} {fixture}", "args": ["{fixture}"]}),
            &vars,
        );
        // What `shlex.split` reads back as two words.
        assert_eq!(
            got,
            json!({"command": "/v/bin/python '/e v/it'\"'\"'s/fixture.py'", "args": ["/e v/it's/fixture.py"]})
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("/a/b-c_d.py"), "/a/b-c_d.py");
    }

    #[test]
    fn components_differing_from_the_manifest_fail() {
        let c = candidate();
        let o = CandidateOutcome {
            apply: Some(spec::Step {
                ok: true,
                ..spec::Step::default()
            }),
            status: Some("initialized".into()),
            final_status: Some("initialized".into()),
            listed_components: vec![ComponentId {
                kind: "Runner".into(),
                name: "other".into(),
            }],
            ..CandidateOutcome::default()
        };
        let checks = candidate_checks(&c, &o, &HostResult::default());
        let comps = checks.iter().find(|k| k.name == "components").unwrap();
        assert_eq!(comps.result, CheckResult::Fail);
        assert!(comps.detail.contains("Runner/default"), "{}", comps.detail);
        assert!(comps.detail.contains("Runner/other"), "{}", comps.detail);
    }
}
