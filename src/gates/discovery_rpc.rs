//! The `discovery-rpc` gate: the genuine SDK runtime, over a real loopback
//! WebSocket, installs every candidate archive, initializes its plugin and
//! lists its components; each Runner component is probed through its
//! invocation config: a negative control that must fail, then a call that
//! must complete through a local protocol fixture the runner starts itself.
//! Each Tool, Command, EventListener and KnowledgeEngine component is called
//! once through the runtime's host action for its kind (`calls`:
//! `call_tool`, `execute_command`, `emit_event`, `retrieve_knowledge`) with
//! a local input, the profile's `[[discovery.component_probe]]` or one its
//! declaration allows: `component-calls` passes when each replied, warns on
//! a component's own error and fails on a refused, unanswered or replyless
//! call; `uncalled` names what was listed and not exercised.
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

pub(crate) mod calls;
mod components;
mod host;
mod observe;
pub(crate) mod plan;
pub mod spec;
mod survey;
#[cfg(test)]
mod tests;

/// A Runner call's prompts and the archive's declared components, for the
/// `shared-runtime` gate's own `run_runner` calls.
pub(crate) use components::read as read_components;
pub use host::main as host_main;
pub(crate) use host::{probe_prompt, runner_context, PROBE_PROMPT};
pub use observe::{HostFailure, Observation};

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, ComponentCallRecord, DiscoveryRecord, RunnerReplyRecord};
use crate::netns::{NetKind, NetPlan};
use plan::SetupProblem;
use serde_json::json;
use spec::{CandidateOutcome, ComponentId, HostCandidate, HostResult, HostSpec, ProbePlan};
use std::path::Path;

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
        let Some(obs) = observe::observe(ctx)? else {
            return Ok(Vec::new()); // interrupted: the run records that
        };
        for o in obs.result.iter().flat_map(|r| &r.candidates) {
            let planned = obs
                .spec
                .as_ref()
                .and_then(|s| s.candidates.iter().find(|c| c.folder == o.folder));
            let (folder, discovery) = (o.folder.clone(), discovery_record(planned, o));
            out.set(move |ctx| {
                if let Some(record) = ctx.record_mut(&folder) {
                    record.discovery = Some(discovery);
                }
            });
        }
        let mut checks = decide(&obs);
        // A plugin that failed to load on an SDK name: an SDK mismatch.
        for o in obs.result.iter().flat_map(|r| &r.candidates) {
            let text: String = o
                .failure
                .iter()
                .chain(&o.runtime_messages)
                .map(|m| format!("{m}\n"))
                .collect();
            let requirement = ctx
                .profile
                .profile
                .candidates
                .iter()
                .find(|c| c.folder() == o.folder)
                .zip(ctx.staged_root.as_ref())
                .and_then(|(c, staged)| {
                    std::fs::read_to_string(staged.join(&c.path).join("requirements.txt")).ok()
                })
                .and_then(|t| crate::provision::resolve::sdk_line(&t));
            super::sdk_mismatch::annotate(
                checks
                    .iter_mut()
                    .filter(|c| c.candidate.as_deref() == Some(o.folder.as_str())),
                &text,
                ctx.profile.profile.sdk.version(),
                Some(requirement.as_deref()),
            );
        }
        Ok(checks)
    }
}

/// The gate's checks from its observation: pure.
pub fn decide(obs: &Observation) -> Vec<Check> {
    let mut checks: Vec<Check> = obs.setup.iter().map(setup_check).collect();
    let (Some(plan), Some(spec)) = (&obs.network, &obs.spec) else {
        return checks;
    };
    match &obs.result {
        Some(result) => {
            if let Some(record) = &result.runtime.sandbox {
                checks.push(crate::isolation::sandbox::check(
                    "runtime-sandbox",
                    None,
                    "the SDK runtime and its plugin workers",
                    record,
                ));
            }
            checks.extend(result_checks(plan, spec, result));
            checks.push(teardown_check(Some(result), &obs.survivors));
        }
        None => {
            let f = obs.host_failure.clone().unwrap_or(HostFailure {
                program: HOST_SUBCOMMAND.into(),
                status: "ended".into(),
                tail: String::new(),
                result_path: spec.result_path.display().to_string(),
                stderr_log: String::new(),
            });
            checks.push(
                Check::fail(
                    "host",
                    None,
                    format!(
                        "the discovery host (`{}`) {} without writing {}; expected a result document; its output tail:\n{}\nsee {}",
                        f.program, f.status, f.result_path, f.tail, f.stderr_log
                    ),
                )
                .with_observed(json!({"status": f.status, "result_path": f.result_path})),
            );
            let teardown = teardown_check(None, &obs.survivors);
            // With no survivor, the only teardown finding is the missing report.
            checks.push(if obs.survivors.is_empty() {
                teardown.consequence_of("host")
            } else {
                teardown
            });
        }
    }
    checks
}

fn setup_check(p: &SetupProblem) -> Check {
    match p {
        SetupProblem::NoArchive { folder } => Check::fail(
            "installation",
            Some(folder),
            format!(
                "{folder}: no archive is recorded for this candidate; expected archive-members to record DIR/packages/{folder}/*.lbpkg; run the lbp-build and archive-members gates first"
            ),
        ),
        SetupProblem::Manifest { folder, error } => Check::fail(
            "components",
            Some(folder),
            format!("{error}; expected a manifest.yaml whose spec.components the SDK can discover; fix the manifest"),
        ),
        SetupProblem::UndeclaredRunner { folder, candidate, runner, runners } => Check::fail(
            "runner-probe-setup",
            Some(folder),
            format!(
                "the profile's discovery.runner_probe for {candidate} names runner {runner:?}, which the archive's manifest does not declare (its Runner components: {runners:?}); expected the probe to name a declared Runner; fix `runner` in the profile or the manifest"
            ),
        ),
        SetupProblem::Unprepared { folder, runner, error } => Check::fail(
            "runner-probe-setup",
            Some(folder),
            format!("cannot prepare the runner probe of `{runner}`: {error}"),
        ),
    }
    .with_observed(serde_json::to_value(p).unwrap_or_default())
}

/// Each non-Runner component's call for `candidates[].discovery`: its
/// input, and its reply or error labelled by origin, or why it was not
/// called.
fn component_records(c: Option<&HostCandidate>, o: &CandidateOutcome) -> Vec<ComponentCallRecord> {
    let Some(c) = c else {
        return Vec::new();
    };
    c.component_plans
        .iter()
        .map(|p| {
            let call = o
                .component_calls
                .iter()
                .find(|k| k.component == p.component);
            let mut r = ComponentCallRecord {
                component: p.component.to_string(),
                action: p.action.clone(),
                input_source: (!p.source.is_empty()).then(|| p.source.clone()),
                input: (p.not_called.is_none()).then(|| p.input.clone()),
                outcome: "not-called".into(),
                reply: None,
                error: None,
                not_called: p.not_called.clone(),
            };
            match call {
                Some(call) => {
                    let (outcome, reply) = calls::judge(call, &c.author, &c.name);
                    r.outcome = outcome.label().into();
                    r.reply = reply;
                    r.error = call.error.clone();
                }
                None if p.not_called.is_none() => {
                    r.not_called = Some(if o.failure.is_some() {
                        "the plugin was not initialized".into()
                    } else {
                        "the host did not call it".into()
                    })
                }
                None => {}
            }
            r
        })
        .collect()
}

/// The candidate's facts for `evidence.json`'s `candidates[].discovery`.
fn discovery_record(c: Option<&HostCandidate>, o: &CandidateOutcome) -> DiscoveryRecord {
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
        component_calls: component_records(c, o),
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

/// The gate's checks of the host's result, in order: `network-isolation`,
/// `runtime-healthy` (when it fails, every candidate's `initialized` fails
/// as its consequence and nothing else is checked), `control-token`,
/// `control-handshake`, then each candidate's checks.
fn result_checks(plan: &NetPlan, spec: &HostSpec, r: &HostResult) -> Vec<Check> {
    let mut checks = vec![network_check(plan, r)];
    if !r.runtime.healthy {
        checks.push(unhealthy_check(spec, r));
        checks.extend(spec.candidates.iter().map(never_installed_check));
        return checks;
    }
    checks.push(healthy_check(spec, r));
    if let Some(t) = &r.token_control {
        checks.push(token_check(t));
    }
    let handshake = handshake_check(r);
    checks.push(handshake.check);
    for c in &spec.candidates {
        match r.candidates.iter().find(|o| o.folder == c.folder) {
            Some(o) => checks.extend(candidate_checks(c, o, r)),
            None => checks.push(unreached_check(c, r, handshake.ok)),
        }
    }
    checks
}

/// The note the `runtime-healthy` details add when the test hook
/// [`TEST_HEALTH_PORT_ENV`] moved the health probe; empty otherwise.
fn override_note(spec: &HostSpec) -> String {
    match spec.health_port_override {
        Some(p) => format!(
            " (test override {TEST_HEALTH_PORT_ENV}: probed port {p} instead of the control port)"
        ),
        None => String::new(),
    }
}

/// The `runtime-healthy` check's observed value: the runtime's command,
/// pid, ports, health probe and log.
fn runtime_observed(rt: &spec::RuntimeFacts) -> serde_json::Value {
    json!({
        "command": rt.command, "pid": rt.pid, "control_port": rt.control_port,
        "debug_port": rt.debug_port, "health_port": rt.health_port, "health_ms": rt.health_ms,
        "health": rt.health, "log": rt.log,
    })
}

/// The failing `runtime-healthy` check: why the runtime never answered
/// (or could not be started), with its log tail.
fn unhealthy_check(spec: &HostSpec, r: &HostResult) -> Check {
    let rt = &r.runtime;
    let log_tail = indent(&rt.log_tail);
    let override_note = override_note(spec);
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
    Check::fail("runtime-healthy", None, detail).with_observed(runtime_observed(rt))
}

/// One candidate's failing `initialized` check when the runtime never
/// became healthy: a consequence of `runtime-healthy`.
fn never_installed_check(c: &HostCandidate) -> Check {
    Check::fail(
        "initialized",
        Some(&c.folder),
        format!(
            "{}: not installed: the runtime never became healthy (see the runtime-healthy check)",
            c.folder
        ),
    )
    .consequence_of("runtime-healthy")
}

/// The passing `runtime-healthy` check.
fn healthy_check(spec: &HostSpec, r: &HostResult) -> Check {
    let rt = &r.runtime;
    let override_note = override_note(spec);
    Check::pass(
        "runtime-healthy",
        None,
        format!(
            "`{}` answered GET /healthz with \"live\": true after {} ms{override_note}",
            rt.command.join(" "),
            rt.health_ms.unwrap_or(0)
        ),
    )
    .with_observed(runtime_observed(rt))
}

/// The `control-token` check: the runtime refused a wrong control token.
fn token_check(t: &spec::TokenControl) -> Check {
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
    .with_observed(json!({"refused": t.refused, "status": t.status, "header": crate::rpc::TOKEN_HEADER}))
}

/// A check and whether it passed, for a caller whose next checks depend on it.
struct Judged {
    check: Check,
    /// The check passed.
    ok: bool,
}

/// The `control-handshake` check: `__ping` answered pong and
/// `set_runtime_config` was accepted.
fn handshake_check(r: &HostResult) -> Judged {
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
    Judged {
        check: Check::from_bool("control-handshake", None, ping_ok && config_ok, handshake_detail)
            .with_observed(json!({"ping": r.ping, "set_runtime_config": r.runtime_config, "transcript": r.transcript})),
        ok: ping_ok && config_ok,
    }
}

/// The failing `initialized` check of a candidate the host never reached;
/// a consequence of `control-handshake` when that failed (`handshake_ok`
/// false), its one cause then.
fn unreached_check(c: &HostCandidate, r: &HostResult, handshake_ok: bool) -> Check {
    let c = Check::fail(
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
    );
    // A failed handshake is the one cause of every unreached candidate.
    if handshake_ok {
        c
    } else {
        c.consequence_of("control-handshake")
    }
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

/// One candidate's checks, in order: `installation`, then (when installed)
/// `initialized`, then (when initialized) `components`, `runner-probe`,
/// `component-calls` and `uncalled`.
fn candidate_checks(c: &HostCandidate, o: &CandidateOutcome, r: &HostResult) -> Vec<Check> {
    let folder = c.folder.as_str();
    let plugin = format!("{}/{}", c.author, c.name);
    let install = installation_check(c, o, r);
    let mut checks = vec![install.check];
    if !install.ok {
        return checks;
    }
    let init = initialized_check(c, o, r, &plugin);
    checks.push(init.check);
    if !init.ok {
        return checks;
    }
    checks.push(components_check(c, o, &plugin));
    checks.push(runner_check(c, o, &plugin));
    if let Some(check) = calls::check(
        folder,
        &plugin,
        &c.component_plans,
        &o.component_calls,
        &c.author,
        &c.name,
    ) {
        checks.push(check);
    }
    if let Some(check) = uncalled_check(c, o, &plugin) {
        checks.push(check);
    }
    checks
}

/// The `installation` check of one candidate: the runtime accepted the
/// upload and applied it, under a binding naming the archive's sha256.
fn installation_check(c: &HostCandidate, o: &CandidateOutcome, r: &HostResult) -> Judged {
    let apply_ok = o.apply.as_ref().is_some_and(|a| a.ok);
    // The bytes the runtime received, and the binding they were applied
    // under, are the archive's: checked here, not only trusted from the host.
    let bytes_agree = o.uploaded_sha256.as_deref() == Some(c.sha256.as_str())
        && o.binding["artifact_digest"].as_str() == Some(c.sha256.as_str());
    let install_ok = o.upload_error.is_none() && apply_ok && bytes_agree;
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
                .or_else(|| o.apply.as_ref().filter(|a| !a.ok).map(|a| format!("apply_plugin_installation: {}", a.message)))
                .or_else(|| o.apply.is_none().then(|| "no apply response".to_string()))
                .unwrap_or_else(|| format!(
                    "the uploaded bytes hash to {} and the binding's artifact_digest is {}, while the archive's sha256 is {}: the runtime was not given the certified bytes; this is a harness defect: report it",
                    o.uploaded_sha256.as_deref().unwrap_or("nothing"),
                    o.binding["artifact_digest"],
                    c.sha256
                )),
            r.transcript.display()
        )
    };
    let check = Check::from_bool("installation", Some(&c.folder), install_ok, install_detail)
        .with_observed(json!({
            "archive": c.archive, "sha256": c.sha256, "uploaded_sha256": o.uploaded_sha256,
            "uploaded_bytes": o.uploaded_bytes, "chunks": o.chunks, "binding": o.binding,
            "apply": o.apply,
        }));
    Judged {
        check,
        ok: install_ok,
    }
}

/// The `initialized` check of one installed candidate: listed
/// `initialized`, still so after its batch, and the runtime asked the host
/// for its settings.
fn initialized_check(
    c: &HostCandidate,
    o: &CandidateOutcome,
    r: &HostResult,
    plugin: &str,
) -> Judged {
    let folder = c.folder.as_str();
    let settings_calls = r
        .inbound
        .iter()
        .filter(|i| {
            i.action == "get_plugin_settings"
                && i.installation_uuid.as_deref() == o.binding["installation_uuid"].as_str()
        })
        .count();
    let still = o.final_status.as_deref() == Some("initialized");
    let listed_initialized =
        o.status.as_deref() == Some("initialized") && o.failure.is_none() && still;
    // The runtime initializes a plugin only after asking the host for its
    // settings: an initialization without that call is not the host's.
    let initialized = listed_initialized && settings_calls > 0;
    let init_observed = json!({
        "plugin": plugin, "status": o.status, "final_status": o.final_status, "init_ms": o.init_ms,
        "worker_failures": o.worker_failures, "get_plugin_settings_answered": settings_calls,
        "runtime_messages": o.runtime_messages, "removed": o.removed, "worker": o.worker,
        "resident_with": o.resident_with, "released": o.released,
    });
    if !initialized {
        let check = Check::fail(
            "initialized",
            Some(folder),
            not_initialized_detail(o, &r.runtime.log, plugin, folder, listed_initialized),
        )
        .with_observed(init_observed);
        return Judged { check, ok: false };
    }
    let check = Check::pass(
        "initialized",
        Some(folder),
        format!(
            "list_plugins shows {plugin} `initialized` {} ms after apply_plugin_installation and still after every candidate of its batch ({} resident at once) was installed and probed; the runtime asked the host for its settings (get_plugin_settings) {settings_calls} time(s)",
            o.init_ms.unwrap_or(0),
            o.resident_with
        ),
    )
    .with_observed(init_observed);
    Judged { check, ok: true }
}

/// The failing `initialized` check's detail: the failure, the runtime's
/// last message and what to do (`listed_initialized`: list_plugins showed
/// it `initialized` to the end, so only the settings call was missing).
fn not_initialized_detail(
    o: &CandidateOutcome,
    log: &Path,
    plugin: &str,
    folder: &str,
    listed_initialized: bool,
) -> String {
    let message = o
        .runtime_messages
        .iter()
        .rev()
        .find(|m| !m.starts_with('['))
        .or_else(|| o.runtime_messages.last())
        .cloned()
        .unwrap_or_else(|| "(the runtime logged nothing about it)".into());
    format!(
        "plugin {plugin} ({folder}) was not initialized by the runtime: {}; the runtime's message: {message}; expected list_plugins to show it `initialized`; {}",
        o.failure.clone().unwrap_or_else(|| if listed_initialized {
            "list_plugins showed it `initialized`, but the runtime never asked the host for its settings (get_plugin_settings with this installation_uuid), so it did not run with the settings LangBot gives it".to_string()
        } else {
            format!(
                "it was `initialized`, but after every candidate of its batch ({} resident at once) was installed list_plugins showed it {}",
                o.resident_with,
                o.final_status.as_deref().unwrap_or("no longer listed")
            )
        }),
        initialized_advice(o, log)
    )
}

/// The `components` check of one initialized candidate: the runtime lists
/// exactly the components the manifest declares.
fn components_check(c: &HostCandidate, o: &CandidateOutcome, plugin: &str) -> Check {
    let declared: Vec<String> = c.declared.iter().map(ComponentId::to_string).collect();
    let listed: Vec<String> = o
        .listed_components
        .iter()
        .map(ComponentId::to_string)
        .collect();
    Check::from_bool(
        "components",
        Some(&c.folder),
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
    .with_observed(json!({"declared": declared, "listed": listed}))
}

/// The `uncalled` check of one candidate: a warning naming every declared
/// component that is not a Runner and was listed by the runtime but not
/// exercised, with the reason: a kind the gate has no host action for
/// (Parser, Page, ...), a profile input that cannot be used, or an
/// EventListener the runtime reports as not having handled the event it was
/// given. `None` when every such component was called (`component-calls`
/// judges those) or there is none (Runners are `runner-probe`'s).
fn uncalled_check(c: &HostCandidate, o: &CandidateOutcome, plugin: &str) -> Option<Check> {
    let mut uncalled: Vec<(String, String)> = Vec::new();
    for p in &c.component_plans {
        if let Some(why) = &p.not_called {
            uncalled.push((p.component.to_string(), why.clone()));
            continue;
        }
        let handled = o
            .component_calls
            .iter()
            .find(|k| k.component == p.component)
            .map(|k| calls::judge(k, &c.author, &c.name).0);
        if handled == Some(calls::Outcome::NotHandled) {
            uncalled.push((
                p.component.to_string(),
                format!(
                    "emit_event with a {} event ({} input) reached the plugin, but the runtime reports no handler of this EventListener ran (not in emitted_plugins); declare the event it handles in [[discovery.component_probe]] (`input = {{ event_name = \"...\", ... }}`)",
                    p.input["event_name"].as_str().unwrap_or("?"),
                    p.source
                ),
            ));
        }
    }
    // Declared components the host planned nothing for (an older spec).
    for d in &c.declared {
        if d.kind != "Runner" && !c.component_plans.iter().any(|p| &p.component == d) {
            uncalled.push((d.to_string(), "no call was planned".into()));
        }
    }
    if uncalled.is_empty() {
        return None;
    }
    let names: Vec<&str> = uncalled.iter().map(|(n, _)| n.as_str()).collect();
    Some(
        Check::warn(
            "uncalled",
            Some(c.folder.as_str()),
            format!(
                "{plugin}: {} listed by the runtime and not called, so nothing about {} behaviour is proved (`components` proves only that the runtime lists them): {}",
                names.join(", "),
                if uncalled.len() == 1 { "its" } else { "their" },
                uncalled
                    .iter()
                    .map(|(n, why)| format!("{n}: {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )
        .with_observed(json!({
            "uncalled": names,
            "reasons": uncalled.iter().map(|(n, why)| json!({"component": n, "reason": why})).collect::<Vec<_>>(),
        })),
    )
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
/// probe completes one generic call, or ends it in its own `run.failed`,
/// and the check warns.
fn runner_check(c: &HostCandidate, o: &CandidateOutcome, plugin: &str) -> Check {
    let folder = c.folder.as_str();
    let runners: Vec<&ComponentId> = c.declared.iter().filter(|d| d.kind == "Runner").collect();
    let observed = json!({
        "label": FIXTURE_LABEL, "runners_listed": o.runners_listed, "probes": o.runner_probes,
    });
    if runners.is_empty() {
        // Nothing was called: a warning, never a pass (see `uncalled`).
        return Check::warn(
            "runner-probe",
            Some(folder),
            format!(
                "{plugin} declares no Runner component: no runner was called (its components: {})",
                c.declared
                    .iter()
                    .map(ComponentId::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_observed(observed);
    }
    let mut found = RunnerFindings::default();
    for r in &runners {
        find_runner(c, o, r.name.as_str(), &mut found);
    }
    runner_verdict(&found, folder, plugin).with_observed(observed)
}

/// What the `runner-probe` check found over a candidate's Runners, each
/// list holding one text per Runner, in declaration order.
#[derive(Default)]
struct RunnerFindings {
    /// What failed.
    problems: Vec<String>,
    /// How many of `problems` are the runner-probe-setup finding seen again.
    unprepared: usize,
    /// Generic calls (no probe declared) that completed.
    generic: Vec<String>,
    /// Generic calls that ended in the runner's own `run.failed`.
    own_errors: Vec<String>,
    /// Declared probes that passed.
    passed: Vec<String>,
}

/// Adds to `found` what the host observed of the Runner `name`: listed,
/// prepared, probed, and how its call (generic or declared probe) ended.
fn find_runner(c: &HostCandidate, o: &CandidateOutcome, name: &str, found: &mut RunnerFindings) {
    if !o.runners_listed.iter().any(|l| l == name) {
        found
            .problems
            .push(format!("list_runners does not list `{name}`"));
    }
    if c.unprepared.iter().any(|u| u == name) {
        found.problems.push(format!(
            "`{name}` was not probed: its declared probe could not be prepared (see runner-probe-setup)"
        ));
        found.unprepared += 1;
        return;
    }
    let Some(p) = o.runner_probes.iter().find(|p| p.runner == name) else {
        found.problems.push(format!("`{name}` was not probed"));
        return;
    };
    match &p.plan {
        // Without an invocation config, a runner that ends its run in
        // `run.failed` has answered for itself (n8n-agent: "webhook-url
        // is required"): its own error, recorded and warned, as a
        // component's own error is (`component-calls`); the request
        // failing, or a run that never ends, is still a failure.
        None if own_refusal(&p.call) => found.own_errors.push(format!(
            "`{name}` → run.failed: {}",
            p.call.error.as_deref().unwrap_or("(no error text)")
        )),
        None => match completion_problem(&p.call, None) {
            Some(e) => found.problems.push(format!(
                "`{name}` (generic call: no runner probe declared, so the run context carried no invocation config): {e}"
            )),
            None => found.generic.push(format!(
                "`{name}` → {:?}",
                p.call.reply.as_deref().unwrap_or("")
            )),
        },
        Some(plan) => find_probe(name, p, plan, found),
    }
}

/// Adds to `found` how the declared probe `plan` of the Runner `name` went:
/// its negative control refused, the fixture never saw that control's
/// nonce, and its call completed through the fixture.
fn find_probe(name: &str, p: &spec::RunnerProbe, plan: &ProbePlan, found: &mut RunnerFindings) {
    let problems = &mut found.problems;
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
    let builtin = plan
        .fixture
        .starts_with(crate::profile::BUILTIN_FIXTURE_PREFIX);
    if builtin && saw_nonce(&p.fixture_transcript, &plan.control_nonce) {
        problems.push(format!(
            "`{name}`: the fixture's transcript ({}) shows it receiving the negative control's nonce {}: the runner reached the fixture with the invalid invocation config, so its run.failed is not a refusal of that config",
            plan.fixture_transcript.display(),
            plan.control_nonce
        ));
    }
    if let Some(e) = completion_problem(&p.call, Some(plan)) {
        problems.push(format!("`{name}`: {e}"));
    } else if builtin && !saw_nonce(&p.fixture_transcript, &plan.nonce) {
        problems.push(format!(
            "`{name}`: the reply carries the fixture's text, but the fixture's transcript ({}) does not show it receiving the prompt's nonce {}: the reply did not come from the fixture process",
            plan.fixture_transcript.display(),
            plan.nonce
        ));
    }
    if problems.len() == before {
        found.passed.push(format!(
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

/// The `runner-probe` check (without its observed value) from what was
/// found: a failure when anything failed (a consequence of
/// runner-probe-setup when that is all), a warning when a generic call
/// answered, a pass when every declared probe passed.
fn runner_verdict(found: &RunnerFindings, folder: &str, plugin: &str) -> Check {
    let RunnerFindings {
        problems,
        unprepared,
        generic,
        own_errors,
        passed,
    } = found;
    if !problems.is_empty() {
        let c = Check::fail(
            "runner-probe",
            Some(folder),
            format!(
                "{plugin}: expected each Runner to refuse the invalid invocation config (run.failed) and to complete through its declared local protocol fixture; found: {}; see the RPC transcript and DIR/roots/discovery-rpc/probes/{folder}/",
                problems.join("; ")
            ),
        );
        return if *unprepared == problems.len() {
            c.consequence_of("runner-probe-setup")
        } else {
            c
        };
    }
    if !own_errors.is_empty() {
        return Check::warn(
            "runner-probe",
            Some(folder),
            format!(
                "no runner probe declared for {plugin}: one generic run_runner call without an invocation config ended in the runner's own error ({}){}{}; that is its answer to a call it was given no config for, recorded and not judged: nothing shows the runner completing a run; declare [[discovery.runner_probe]] in the profile ({FIXTURE_LABEL})",
                own_errors.join("; "),
                if generic.is_empty() { String::new() } else { format!("; completed without a config: {}", generic.join("; ")) },
                if passed.is_empty() { String::new() } else { format!("; probed: {}", passed.join("; ")) }
            ),
        );
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
        );
    }
    Check::pass(
        "runner-probe",
        Some(folder),
        format!(
            "each Runner refused the invalid invocation config and completed through its local protocol fixture, started by the runner from its invocation config: {} ({FIXTURE_LABEL}: no vendor CLI, model or account was contacted)",
            passed.join("; ")
        ),
    )
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
/// Whether a call ended in the runner's own `run.failed`, streamed as its
/// run's end over a request that succeeded, with an error text.
fn own_refusal(call: &spec::RunnerCall) -> bool {
    !call.rpc_error
        && call.result_types.last().is_some_and(|t| t == "run.failed")
        && call.error.as_deref().is_some_and(|e| !e.trim().is_empty())
}

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
