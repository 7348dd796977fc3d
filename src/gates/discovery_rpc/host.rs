//! The host process: `verify-coding-candidates __discovery-host --spec FILE`.
//!
//! Runs inside the private network namespace (when there is one), so the
//! runtime it starts and the WebSocket client it drives share one loopback.
//! It starts the genuine runtime (`python -I -B -m langbot_plugin.cli rt`)
//! in its own process group, acts as the LangBot host over the control
//! connection, stops the runtime's group and writes one [`HostResult`].
//!
//! Protocol sequence (observed with `langbot-plugin` 0.6.0b5, see
//! `SDK-FACTS.md`): `/healthz`; `__ping`; `set_runtime_config` (before it every
//! tenant action is refused); per archive `__file_chunk`s then
//! `apply_plugin_installation`, each carrying a complete InstallationBinding
//! context; the runtime starts a worker, which registers and makes the
//! runtime call `get_plugin_settings` on the host; `list_plugins` with the
//! binding then shows the plugin `initialized`; `list_runners` and
//! `run_runner` reach the plugin's Runner components; `call_tool`,
//! `execute_command` (streamed), `emit_event` and `retrieve_knowledge` reach
//! its other components.

use super::calls;
use super::spec::{
    CandidateOutcome, ComponentCall, ComponentId, HostCandidate, HostResult, HostSpec, RunnerCall,
    RunnerProbe, Step, Teardown, TokenControl, WorkerFacts, MAX_FIXTURE_TRANSCRIPT_LINES,
    MAX_STREAMED_RESULTS,
};
use super::survey;
use crate::evidence::sandbox::Network;
use crate::isolation::sandbox::{self, SandboxPlan};
use crate::process::procfs;
use crate::process::{self, ChildSpec, Running};
use crate::rpc::{self, ConnectError, HostClient, Transcript};
use crate::{hash, interrupt, netns};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Environment variable the runtime reads its control token from
/// (`langbot_plugin.runtime.security.PLUGIN_RUNTIME_CONTROL_TOKEN_ENV`).
pub const TOKEN_ENV: &str = "LANGBOT_PLUGIN_RUNTIME_CONTROL_TOKEN";

/// The prompt of a generic Runner call (no probe declared).
pub const PROBE_PROMPT: &str = "verify-coding-candidates discovery probe";

/// The prompt of each of a declared probe's two calls: it carries that call's nonce, which a
/// built-in fixture echoes.
pub fn probe_prompt(nonce: &str) -> String {
    format!("verify-coding-candidates runner probe {nonce}: answer through your vendor process")
}

/// How often the host polls `/healthz` and `list_plugins`.
const POLL: Duration = Duration::from_millis(250);

/// Runs the host described by the spec file and writes its result.
/// Exit status 0 when the result was written (whatever it says), 2 when the
/// spec cannot be read, 1 when the result cannot be written.
pub fn main(spec_path: &Path) -> ExitCode {
    let spec: HostSpec = match std::fs::read(spec_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            crate::stderr_line!("__discovery-host: {}: {e}", spec_path.display());
            return ExitCode::from(2);
        }
    };
    let _ = interrupt::install();
    process::journal::begin();
    let mut result = HostResult {
        transcript: spec.log_dir.join("transcript.jsonl"),
        ..HostResult::default()
    };
    run(&spec, &mut result);
    // The host's own signals (the runtime's stop, its survey) go into the
    // evidence with the harness's.
    result.signals = process::journal::take();
    let text = serde_json::to_vec_pretty(&result).unwrap_or_default();
    match std::fs::write(&spec.result_path, text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::stderr_line!(
                "__discovery-host: cannot write {}: {e}",
                spec.result_path.display()
            );
            ExitCode::from(1)
        }
    }
}

/// Brings the namespace's loopback up, starts the runtime, waits for it to
/// be healthy, drives it over the control connection, then stops it; what
/// went wrong goes to `result.fatal`.
fn run(spec: &HostSpec, result: &mut HostResult) {
    network(spec, result);
    let control = match control() {
        Ok(c) => c,
        Err(e) => {
            result.fatal = Some(e);
            return;
        }
    };
    let mut rt = match start_runtime(spec, &control, result) {
        Ok(rt) => rt,
        Err(e) => {
            result.fatal = Some(e);
            return;
        }
    };
    wait_healthy(&mut rt, spec, result);
    if result.runtime.healthy {
        if let Err(e) = drive(
            spec,
            &control.token,
            &control.wrong_token,
            control.control_port,
            &mut rt,
            result,
        ) {
            result.fatal = Some(e);
        }
    }
    result.runtime.log_tail = rt.tail(40);
    teardown(rt, spec, result);
}

/// Brings up the loopback of the private namespace (when there is one) and
/// records the interfaces the host sees.
fn network(spec: &HostSpec, result: &mut HostResult) {
    if let Some(ip) = &spec.ip {
        if let Err(e) = loopback_up(ip, &spec.log_dir) {
            result.loopback_error = Some(e);
        }
    }
    result.interfaces = netns::interfaces();
}

/// The runtime's control token, another token for the positive control,
/// and the two free ports its servers listen on.
struct Control {
    token: String,
    wrong_token: String,
    control_port: u16,
    debug_port: u16,
}

/// Draws the tokens and the ports of [`Control`].
///
/// # Errors
/// When no random token can be drawn or no free port found.
fn control() -> Result<Control, String> {
    let (token, wrong_token) = match (random_token(), random_token()) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let (control_port, debug_port) = free_ports()?;
    Ok(Control {
        token,
        wrong_token,
        control_port,
        debug_port,
    })
}

/// Starts the runtime (`python -I -B -m langbot_plugin.cli rt`) with the
/// control token, in its sandbox when one is available, and records its
/// command, ports, sandbox, pid and log in `result.runtime`.
///
/// # Errors
/// When the runtime cannot be spawned.
fn start_runtime(
    spec: &HostSpec,
    control: &Control,
    result: &mut HostResult,
) -> Result<Running, String> {
    let (control_port, debug_port) = (control.control_port, control.debug_port);
    let mut env = spec.env.clone();
    env.insert(TOKEN_ENV.into(), control.token.clone());
    let args = vec![
        "-I".to_string(),
        "-B".into(),
        "-m".into(),
        "langbot_plugin.cli".into(),
        "rt".into(),
        "--ws-control-port".into(),
        control_port.to_string(),
        "--ws-debug-port".into(),
        debug_port.to_string(),
    ];
    let child = ChildSpec {
        program: spec.python.clone(),
        args: args.clone(),
        cwd: spec.data_root.clone(),
        env,
        timeout: Duration::from_secs(24 * 3600),
        log_stem: spec.log_dir.join("runtime"),
        stdin: None,
    };
    let facts = &mut result.runtime;
    facts.command = std::iter::once(spec.python.display().to_string())
        .chain(args)
        .collect();
    facts.control_port = control_port;
    facts.debug_port = debug_port;
    facts.health_port = spec.health_port_override.unwrap_or(control_port);
    let (child, confined) = confine_runtime(spec, child, facts);
    let mut rt = process::spawn(&child).map_err(|e| e.to_string())?;
    if confined {
        rt.sandboxed();
    }
    facts.pid = Some(rt.pid());
    facts.log = rt.logs().1.clone();
    Ok(rt)
}

/// The runtime's command confined to its sandbox (recorded in
/// `facts.sandbox`), and whether it is confined.
fn confine_runtime(
    spec: &HostSpec,
    child: ChildSpec,
    facts: &mut super::spec::RuntimeFacts,
) -> (ChildSpec, bool) {
    // The runtime and its plugin workers run the candidates' code: in a
    // sandbox of their own, sharing the host's (private) network namespace,
    // whose loopback the host speaks to them over.
    let available = sandbox::availability(&spec.log_dir.join("sandbox"));
    let (child, record) = sandbox::confine(
        child,
        &SandboxPlan {
            read_only: spec.read_only.clone(),
            writable: vec![spec.roots.clone()],
            network: Network::Shared,
            survey: None,
        },
        available,
    );
    let confined = record.confined();
    facts.sandbox = Some(record);
    (child, confined)
}

fn loopback_up(ip: &Path, log_dir: &Path) -> Result<(), String> {
    let out = process::run(&ChildSpec {
        program: ip.to_path_buf(),
        args: ["link", "set", "lo", "up"].map(String::from).to_vec(),
        cwd: log_dir.to_path_buf(),
        env: process::base_env(),
        timeout: Duration::from_secs(20),
        log_stem: log_dir.join("loopback-up"),
        stdin: None,
    })
    .map_err(|e| e.to_string())?;
    if out.success() {
        Ok(())
    } else {
        Err(format!(
            "`{} link set lo up`: {}: {}",
            ip.display(),
            out.describe(),
            out.tail(3)
        ))
    }
}

fn wait_healthy(rt: &mut Running, spec: &HostSpec, result: &mut HostResult) {
    let facts = &mut result.runtime;
    let deadline = Instant::now() + Duration::from_millis(spec.health_timeout_ms);
    loop {
        if interrupt::requested() {
            facts.health_error = Some("interrupted".into());
            return;
        }
        if let Some(status) = rt.try_status() {
            facts.exited_early = Some(status.to_string());
            return;
        }
        match rpc::healthz(facts.health_port, Duration::from_secs(2)) {
            Ok((200, body)) => match serde_json::from_str::<Value>(&body) {
                Ok(doc) if doc["live"] == Value::Bool(true) => {
                    facts.healthy = true;
                    facts.health_ms = Some(rt.elapsed().as_millis() as u64);
                    facts.health = Some(doc);
                    return;
                }
                Ok(doc) => {
                    facts.health_error = Some(format!("HTTP 200 without \"live\": true: {doc}"))
                }
                Err(e) => facts.health_error = Some(format!("HTTP 200, body not JSON: {e}")),
            },
            Ok((status, body)) => {
                facts.health_error = Some(format!("HTTP {status}: {}", truncate(&body, 200)))
            }
            Err(e) => facts.health_error = Some(e),
        }
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Drives the healthy runtime over its control connection: the token's
/// positive control, the handshake, then every candidate installed and
/// probed in resident batches ([`install_and_probe`]); the candidates'
/// outcomes go to `result` in the spec's order.
///
/// # Errors
/// When the control connection fails.
fn drive(
    spec: &HostSpec,
    token: &str,
    wrong_token: &str,
    port: u16,
    rt: &mut Running,
    result: &mut HostResult,
) -> Result<(), String> {
    let call_timeout = Duration::from_millis(spec.call_timeout_ms);
    // Positive control first: a different token must not open a connection.
    result.token_control = Some(token_control(port, wrong_token, call_timeout));
    // installation_uuid -> plugin_config, filled before each installation.
    let settings: Rc<RefCell<BTreeMap<String, Value>>> = Rc::default();
    let mut client = connect(port, token, call_timeout, result, Rc::clone(&settings))?;
    let Some(instance_uuid) = handshake(&mut client, spec, call_timeout, result)? else {
        client.close();
        return Ok(());
    };
    let workspace_uuid = random_uuid()?;
    let ids = Ids {
        instance: &instance_uuid,
        workspace: &workspace_uuid,
        settings: &settings,
    };
    install_and_probe(&mut client, spec, rt, port, &ids, result)?;
    // Evidence in the spec's candidate order, whatever order they finished in.
    result.candidates.sort_by_key(|o| {
        spec.candidates
            .iter()
            .position(|c| c.folder == o.folder)
            .unwrap_or(usize::MAX)
    });
    result.inbound = client.inbound.clone();
    client.close();
    Ok(())
}

/// The positive control of the control token: a WebSocket upgrade with
/// `wrong_token` must be refused with an HTTP status.
fn token_control(port: u16, wrong_token: &str, call_timeout: Duration) -> TokenControl {
    match rpc::connect(port, wrong_token, call_timeout) {
        Err(ConnectError::Refused { status, body }) => TokenControl {
            refused: true,
            status: Some(status),
            detail: format!(
                "upgrade with a different random token refused with HTTP {status} ({body})"
            ),
        },
        Err(ConnectError::Failed(e)) => TokenControl {
            refused: false,
            status: None,
            detail: format!(
                "the connection with a different token failed without an HTTP refusal: {e}"
            ),
        },
        Ok(mut ws) => {
            let _ = ws.close(None);
            TokenControl {
                refused: false,
                status: Some(101),
                detail: "a WebSocket with a different random token was accepted (HTTP 101)".into(),
            }
        }
    }
}

/// The control connection with the runtime's own `token`, its messages
/// written to `result.transcript`, answering the runtime's
/// `get_plugin_settings` from `settings` ([`settings_handler`]).
///
/// # Errors
/// When the connection or the transcript cannot be opened.
fn connect(
    port: u16,
    token: &str,
    call_timeout: Duration,
    result: &HostResult,
    settings: Rc<RefCell<BTreeMap<String, Value>>>,
) -> Result<HostClient, String> {
    let ws = rpc::connect(port, token, call_timeout)
        .map_err(|e| format!("control connection with the runtime's own token: {e}"))?;
    let transcript = Transcript::create(&result.transcript)
        .map_err(|e| format!("{}: {e}", result.transcript.display()))?;
    HostClient::new(ws, transcript, settings_handler(settings))
}

/// The host's answers to the runtime's own requests: `get_plugin_settings`
/// from `settings` (installation_uuid -> plugin_config); any other action
/// is refused.
fn settings_handler(settings: Rc<RefCell<BTreeMap<String, Value>>>) -> rpc::InboundHandler {
    Box::new(move |action, _data, context| match action {
        // The settings a freshly installed plugin gets from LangBot: enabled,
        // default priority, the configuration planned for it (its manifest's
        // defaults and the profile's plugin_config), bound to the installation.
        "get_plugin_settings" => {
            let installation = context.and_then(|c| c.get("installation_uuid")).cloned();
            let config = installation
                .as_ref()
                .and_then(Value::as_str)
                .and_then(|u| settings.borrow().get(u).cloned())
                .unwrap_or_else(|| json!({}));
            Ok(json!({
                "enabled": true,
                "priority": 0,
                "plugin_config": config,
                "install_source": "local",
                "install_info": {},
                "installation_uuid": installation.unwrap_or(Value::Null),
            }))
        }
        other => Err(format!("the certification host does not serve {other}")),
    })
}

/// `__ping`, then `set_runtime_config` with a fresh runtime identity, both
/// recorded in `result`; returns the instance uuid, `None` when the
/// configuration was refused.
///
/// # Errors
/// When the control connection fails or no random uuid can be drawn.
fn handshake(
    client: &mut HostClient,
    spec: &HostSpec,
    call_timeout: Duration,
    result: &mut HostResult,
) -> Result<Option<String>, String> {
    let ping = client.call("__ping", json!({}), None, call_timeout)?;
    result.ping = Some(step(&ping));
    let instance_uuid = random_uuid()?;
    let config = client.call(
        "set_runtime_config",
        json!({
            "runtime_identity": {"instance_uuid": instance_uuid, "runtime_id": random_uuid()?},
            // The runtime prepares dependencies and launches workers under one
            // semaphore of `max_concurrent_restarts` permits (SDK default 1:
            // `PluginWorkerPolicy`, `PluginManager._installation_lifecycle_semaphore`);
            // one permit per installation the host starts at once
            // ([`start_width`]) lets those starts overlap, and only those.
            "worker_policy": {
                "max_cpus": 1, "max_memory_mb": 1024, "max_pids": 256,
                "max_open_files": 1024, "max_file_size_mb": 64,
                "max_concurrent_restarts": start_width(spec)
            },
            "runtime_profile": "oss_dev"
        }),
        None,
        call_timeout,
    )?;
    result.runtime_config = Some(step(&config));
    Ok(config.ok().then_some(instance_uuid))
}

/// Installs and probes every candidate, batch after batch.
///
/// Candidates start in a sliding window of `start_width`: an archive is
/// uploaded and applied (the runtime answers apply_plugin_installation
/// with `starting` and starts the worker in the background) whenever
/// fewer than that many are starting, and the host waits for all of them
/// at once, then probes each initialized one. The window, not the
/// candidate count, bounds the starts that overlap: each plugin's
/// `plugin_timeout_ms` runs from its own apply, so with every candidate
/// applied at once the last one's start waited on all the others' (50
/// candidates: 14-28 s each on two cores, against 3 s with 5), and the
/// limit would have had to grow with the count. The one control
/// connection is the SDK's limit: the runtime keeps a single active
/// control handler and a new connection supersedes the previous one
/// (`RuntimeApplication.set_control_handler`), and its `__file_chunk`
/// writes are serialised by one lock (`Handler._file_transfer_lock`); so
/// uploads and requests go one after another on this connection, and the
/// overlap is in the runtime's own work (dependency preparation and worker
/// start, the slow part).
///
/// Installations stay resident in batches of `resident` ([`resident`]):
/// a batch is installed, each of its initialized plugins probed and
/// listed again (still `initialized` beside every other of the batch),
/// then all of its installations are removed, which stops their workers
/// (`PluginManager.remove_plugin_installation` revokes the worker), before
/// the next batch starts. Each worker holds about 55 MiB; with every
/// candidate resident at once the run's memory grew with the candidate
/// count (2.8 GiB at 50 against 0.4 GiB at 5).
///
/// # Errors
/// When the control connection fails.
fn install_and_probe(
    client: &mut HostClient,
    spec: &HostSpec,
    rt: &mut Running,
    port: u16,
    ids: &Ids,
    result: &mut HostResult,
) -> Result<(), String> {
    let resident = resident(spec);
    for batch in spec.candidates.chunks(resident) {
        if interrupt::requested() {
            break;
        }
        run_batch(client, spec, batch, rt, port, ids, result)?;
    }
    Ok(())
}

/// One resident batch: starts and waits for its candidates ([`wait_all`]),
/// probes each initialized one, lists each again to see it still
/// initialized beside the whole batch, then removes the batch's
/// installations; the outcomes go to `result.candidates`.
///
/// # Errors
/// When the control connection fails.
fn run_batch(
    client: &mut HostClient,
    spec: &HostSpec,
    batch: &[HostCandidate],
    rt: &mut Running,
    port: u16,
    ids: &Ids,
    result: &mut HostResult,
) -> Result<(), String> {
    let call_timeout = Duration::from_millis(spec.call_timeout_ms);
    let waited = wait_all(client, spec, batch, rt, port, ids, &mut result.candidates)?;
    let mut outcomes = Vec::with_capacity(waited.len());
    for (cand, mut outcome) in waited {
        if outcome.failure.is_none() && !interrupt::requested() {
            probe_runners(client, spec, cand, &mut outcome)?;
            call_components(client, spec, cand, &mut outcome);
        }
        outcomes.push((cand, outcome));
    }
    // Every plugin of the batch must still be initialized once all of
    // the batch are installed and probed: a later installation must not
    // have disturbed an earlier one.
    for (cand, out) in outcomes
        .iter_mut()
        .filter(|(_, o)| o.status.as_deref() == Some("initialized") && o.failure.is_none())
    {
        let listed = client.call("list_plugins", json!({}), Some(&out.binding), call_timeout)?;
        out.final_status = own_plugin(&listed.data, &cand.author, &cand.name)
            .and_then(|p| p["status"].as_str())
            .map(str::to_string);
        out.resident_with = batch.len();
    }
    // Then the batch leaves, so that the next one starts beside none of
    // it (a failed one was removed when it failed).
    for (_, out) in outcomes.iter_mut().filter(|(_, o)| o.removed.is_none()) {
        release(client, rt, out, call_timeout)?;
    }
    result
        .candidates
        .extend(outcomes.into_iter().map(|(_, o)| o));
    Ok(())
}

fn step(r: &rpc::Response) -> Step {
    Step {
        ok: r.ok(),
        message: r.message.clone(),
        data: r.data.clone(),
    }
}

/// The run's identities, and where installations' settings are planned.
struct Ids<'a> {
    instance: &'a str,
    workspace: &'a str,
    settings: &'a RefCell<BTreeMap<String, Value>>,
}

/// A candidate whose installation was applied and whose worker is starting.
struct Pending<'a> {
    cand: &'a HostCandidate,
    out: CandidateOutcome,
    /// The runtime's answer to apply_plugin_installation.
    apply: Value,
    started: Instant,
}

/// What [`begin`] left: a finished outcome (upload or apply failed) or a
/// starting installation.
enum Begun<'a> {
    Done(CandidateOutcome),
    Starting(Pending<'a>),
}

/// Uploads one archive and applies its installation; errors only when the
/// control connection itself fails.
fn begin<'a>(
    client: &mut HostClient,
    spec: &HostSpec,
    cand: &'a HostCandidate,
    rt: &mut Running,
    ids: &Ids,
) -> Result<Begun<'a>, String> {
    let call_timeout = Duration::from_millis(spec.call_timeout_ms);
    let installation_uuid = random_uuid()?;
    let plugin_config = match &cand.plugin_config {
        Value::Null => json!({}),
        other => other.clone(),
    };
    ids.settings
        .borrow_mut()
        .insert(installation_uuid.clone(), plugin_config);
    let binding = json!({
        "instance_uuid": ids.instance,
        "workspace_uuid": ids.workspace,
        "placement_generation": 1,
        "installation_uuid": installation_uuid,
        "runtime_revision": 1,
        "artifact_digest": cand.sha256,
    });
    let mut out = CandidateOutcome {
        folder: cand.folder.clone(),
        binding: binding.clone(),
        ..CandidateOutcome::default()
    };
    client.note(
        "candidate",
        json!({"folder": cand.folder, "archive": cand.archive}),
    );

    let file_key = match upload(
        client,
        cand,
        &binding,
        &installation_uuid,
        call_timeout,
        &mut out,
    )? {
        Some(k) => k,
        None => return Ok(Begun::Done(out)),
    };

    let log_mark = log_sizes(rt);
    let apply = client.call(
        "apply_plugin_installation",
        json!({"artifact_file_key": file_key, "enabled": true}),
        Some(&binding),
        call_timeout,
    )?;
    out.apply = Some(step(&apply));
    if !apply.ok() {
        out.failure = Some(format!(
            "apply_plugin_installation was refused: {}",
            apply.message
        ));
        out.runtime_messages = runtime_messages(rt, log_mark);
        return Ok(Begun::Done(out));
    }
    if apply.data["state"].as_str() == Some("failed") {
        out.failure = Some(format!(
            "apply_plugin_installation answered state \"failed\": {} {}",
            apply.data["error_code"].as_str().unwrap_or(""),
            apply.data["message"].as_str().unwrap_or("")
        ));
        out.runtime_messages = runtime_messages(rt, log_mark);
        remove(client, rt, &mut out, call_timeout)?;
        return Ok(Begun::Done(out));
    }
    Ok(Begun::Starting(Pending {
        cand,
        out,
        apply: apply.data,
        started: Instant::now(),
    }))
}

/// Stops the runtime's restart loop for a failed installation, as LangBot
/// does when it removes a plugin.
fn remove(
    client: &mut HostClient,
    rt: &mut Running,
    out: &mut CandidateOutcome,
    call_timeout: Duration,
) -> Result<(), String> {
    out.removed = remove_installation(client, rt, &out.binding, call_timeout)?;
    Ok(())
}

/// Removes an installation whose batch is done ([`drive`]), so its worker
/// stops before the next batch starts; the runtime's answer is recorded.
fn release(
    client: &mut HostClient,
    rt: &mut Running,
    out: &mut CandidateOutcome,
    call_timeout: Duration,
) -> Result<(), String> {
    out.released = remove_installation(client, rt, &out.binding, call_timeout)?;
    Ok(())
}

/// `remove_plugin_installation` of `binding` while the runtime is alive
/// (`PluginManager.remove_plugin_installation` revokes its worker); `None`
/// when the runtime has exited.
fn remove_installation(
    client: &mut HostClient,
    rt: &mut Running,
    binding: &Value,
    call_timeout: Duration,
) -> Result<Option<Step>, String> {
    if rt.try_status().is_some() {
        return Ok(None);
    }
    let answer = client.call(
        "remove_plugin_installation",
        json!({}),
        Some(binding),
        call_timeout,
    )?;
    Ok(Some(step(&answer)))
}

/// At most this many installations are resident at once: the start window
/// ([`start_width`]), at least 2 (so that under `--jobs 1` a plugin
/// is still seen beside another), never more than the candidates. It does
/// not grow with the candidate count.
fn resident(spec: &HostSpec) -> usize {
    start_width(spec).max(2).min(spec.candidates.len().max(1))
}

/// At most this many installations start at once: the spec's
/// `start_width` (1 under `--jobs 1`), and never more than the candidates.
fn start_width(spec: &HostSpec) -> usize {
    window(spec.start_width, spec.candidates.len())
}

/// `requested` starts at once, at least 1 and at most `candidates` (1 when
/// there are none).
fn window(requested: usize, candidates: usize) -> usize {
    requested.clamp(1, candidates.max(1))
}

/// Starts the candidates in a window of [`start_width`] and waits for every
/// starting installation at once until each is listed `initialized` or has
/// failed; a candidate whose upload or apply failed goes to `early`.
///
/// Failed worker starts are counted per installation from the runtime's log
/// line "Plugin installation worker exited unexpectedly; restarting <uuid>"
/// (`PluginManager._supervise_plugin_installation`), read on from where the
/// last poll stopped ([`RestartTally`]); `/healthz` counts them only in
/// total (`restart_failures_total`), so that count is attributed to a
/// candidate only while it is the one still starting (counted from the
/// moment it became so, or from just before its apply when it started
/// alone). The larger of the two counts is the candidate's. The runtime's
/// messages of a failed candidate are those logged since its batch
/// began.
fn wait_all<'a>(
    client: &mut HostClient,
    spec: &HostSpec,
    batch: &'a [HostCandidate],
    rt: &mut Running,
    port: u16,
    ids: &Ids,
    early: &mut Vec<CandidateOutcome>,
) -> Result<Vec<(&'a HostCandidate, CandidateOutcome)>, String> {
    // The runtime's log as the batch begins: its messages about a failed
    // candidate are those logged since.
    let wave_mark = log_sizes(rt);
    let mut wave = Wave {
        queue: batch.iter(),
        width: window(spec.start_width, batch.len()),
        pending: Vec::new(),
        done: Vec::new(),
        tally: RestartTally::from_mark(wave_mark),
        alone_since: None,
        wave_mark,
    };
    loop {
        wave.fill(client, spec, rt, port, ids, early)?;
        if wave.pending.is_empty() {
            break;
        }
        client.pump(POLL)?;
        wave.poll(client, spec, rt)?;
        if wave.pending.is_empty() {
            // The window has room: start the next ones, if any.
            continue;
        }
        wave.tally.read_on(rt);
        let alone = wave.alone_failures(port);
        wave.count_failures(client, spec, rt, alone)?;
    }
    Ok(wave.done)
}

/// The state of one batch's starts ([`wait_all`]).
struct Wave<'a> {
    /// The batch's candidates not started yet.
    queue: std::slice::Iter<'a, HostCandidate>,
    /// At most this many start at once.
    width: usize,
    /// The installations starting.
    pending: Vec<Pending<'a>>,
    /// Candidates initialized or failed, in the order they finished.
    done: Vec<(&'a HostCandidate, CandidateOutcome)>,
    /// Failed worker starts per installation, from the runtime's log.
    tally: RestartTally,
    /// The installation still starting alone, and the failures counted
    /// before it was.
    alone_since: Option<(String, Option<u64>)>,
    /// The runtime's log sizes as the batch began.
    wave_mark: (u64, u64),
}

impl<'a> Wave<'a> {
    /// Starts queued candidates ([`begin`]) until the window is full; one
    /// whose upload or apply failed goes to `early`.
    fn fill(
        &mut self,
        client: &mut HostClient,
        spec: &HostSpec,
        rt: &mut Running,
        port: u16,
        ids: &Ids,
        early: &mut Vec<CandidateOutcome>,
    ) -> Result<(), String> {
        while self.pending.len() < self.width && !interrupt::requested() {
            let Some(cand) = self.queue.next() else { break };
            let before = self.pending.is_empty().then(|| restart_failures(port));
            match begin(client, spec, cand, rt, ids)? {
                Begun::Done(outcome) => early.push(outcome),
                Begun::Starting(p) => {
                    if let Some(before) = before {
                        let uuid = p.out.binding["installation_uuid"].as_str().unwrap_or("");
                        self.alone_since = Some((uuid.to_string(), before));
                    }
                    self.pending.push(p);
                }
            }
        }
        Ok(())
    }

    /// Lists each starting installation once: an initialized or failed one
    /// goes to `done` (a failed one removed, with the runtime's messages
    /// since the batch began); the others stay pending.
    fn poll(
        &mut self,
        client: &mut HostClient,
        spec: &HostSpec,
        rt: &mut Running,
    ) -> Result<(), String> {
        let call_timeout = Duration::from_millis(spec.call_timeout_ms);
        let mut still = Vec::new();
        for mut p in self.pending.drain(..) {
            if poll_one(client, spec, rt, &mut p)? {
                self.done.push((p.cand, p.out));
                continue;
            }
            if p.out.failure.is_some() {
                p.out.runtime_messages = runtime_messages(rt, self.wave_mark);
                remove(client, rt, &mut p.out, call_timeout)?;
                self.done.push((p.cand, p.out));
            } else {
                still.push(p);
            }
        }
        self.pending = still;
        Ok(())
    }

    /// Failed worker starts `/healthz` counts for the installation starting
    /// alone since it became so; 0 when several are starting.
    fn alone_failures(&mut self, port: u16) -> u64 {
        match self.pending.as_slice() {
            [p] => {
                let uuid = p.out.binding["installation_uuid"].as_str().unwrap_or("");
                if self.alone_since.as_ref().is_none_or(|(u, _)| u != uuid) {
                    self.alone_since = Some((uuid.to_string(), restart_failures(port)));
                }
                let base = self.alone_since.as_ref().and_then(|(_, b)| *b);
                restart_failures(port)
                    .zip(base)
                    .map(|(now, before)| now.saturating_sub(before))
                    .unwrap_or(0)
            }
            _ => {
                // Not alone (any more): the count restarts when one is.
                self.alone_since = None;
                0
            }
        }
    }

    /// Records each pending installation's failed worker starts (the larger
    /// of its own tally and `alone`); one that reached the spec's
    /// `failure_restarts` fails, is removed and goes to `done`.
    fn count_failures(
        &mut self,
        client: &mut HostClient,
        spec: &HostSpec,
        rt: &mut Running,
        alone: u64,
    ) -> Result<(), String> {
        let call_timeout = Duration::from_millis(spec.call_timeout_ms);
        let mut still = Vec::new();
        for mut p in self.pending.drain(..) {
            let uuid = p.out.binding["installation_uuid"].as_str().unwrap_or("");
            let failures = self.tally.count(uuid).max(alone);
            p.out.worker_failures = failures;
            if failures >= spec.failure_restarts {
                p.out.failure = Some(format!(
                    "the runtime reported {failures} failed start(s) of the plugin's worker and never listed it as initialized"
                ));
                p.out.runtime_messages = runtime_messages(rt, self.wave_mark);
                remove(client, rt, &mut p.out, call_timeout)?;
                self.done.push((p.cand, p.out));
            } else {
                still.push(p);
            }
        }
        self.pending = still;
        Ok(())
    }
}

/// Lists one starting installation: true when it is `initialized` (its
/// start time, components and worker recorded); otherwise sets its failure
/// when listing was refused, the run was interrupted, the runtime exited or
/// the plugin timeout passed.
///
/// # Errors
/// When the control connection fails.
fn poll_one(
    client: &mut HostClient,
    spec: &HostSpec,
    rt: &mut Running,
    p: &mut Pending,
) -> Result<bool, String> {
    let call_timeout = Duration::from_millis(spec.call_timeout_ms);
    let plugin_timeout = Duration::from_millis(spec.plugin_timeout_ms);
    if interrupt::requested() {
        p.out.failure = Some("interrupted while waiting for the plugin".into());
    } else {
        let listed = client.call(
            "list_plugins",
            json!({}),
            Some(&p.out.binding),
            call_timeout,
        )?;
        if !listed.ok() {
            p.out.failure = Some(format!("list_plugins was refused: {}", listed.message));
        } else if let Some(plugin) = own_plugin(&listed.data, &p.cand.author, &p.cand.name) {
            p.out.status = plugin["status"].as_str().map(str::to_string);
            if p.out.status.as_deref() == Some("initialized") {
                p.out.init_ms = Some(p.started.elapsed().as_millis() as u64);
                p.out.listed_components = listed_components(plugin);
                let code_dir = spec
                    .data_root
                    .join(p.apply["artifact_path"].as_str().unwrap_or_default());
                p.out.worker = observe_worker(rt.pid() as i32, &code_dir);
                return Ok(true);
            }
        }
    }
    if p.out.failure.is_none() {
        if let Some(status) = rt.try_status() {
            p.out.failure = Some(format!(
                "the runtime exited ({status}) while the plugin was starting"
            ));
        } else if p.started.elapsed() >= plugin_timeout {
            p.out.failure = Some(format!(
                "not listed as initialized within {} s (last status: {})",
                plugin_timeout.as_secs(),
                p.out.status.as_deref().unwrap_or("not listed")
            ));
        }
    }
    Ok(false)
}

/// Lists the runners of an initialized candidate and probes each Runner.
fn probe_runners(
    client: &mut HostClient,
    spec: &HostSpec,
    cand: &HostCandidate,
    out: &mut CandidateOutcome,
) -> Result<(), String> {
    let call_timeout = Duration::from_millis(spec.call_timeout_ms);
    let binding = out.binding.clone();
    let runners = client.call("list_runners", json!({}), Some(&binding), call_timeout)?;
    out.runners_listed = runners.data["runners"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter_map(|r| r["runner_name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    // One call after another: this client waits for each stream's end (the
    // runtime would run them as separate tasks, but each takes about 0.1 s).
    for comp in cand
        .declared
        .iter()
        .filter(|c| c.kind == "Runner" && !cand.unprepared.contains(&c.name))
    {
        let plan = cand.probes.iter().find(|p| p.runner == comp.name);
        let mut probe = RunnerProbe {
            runner: comp.name.clone(),
            plan: plan.cloned(),
            ..RunnerProbe::default()
        };
        match plan {
            Some(plan) => {
                probe.negative_control = Some(call_runner(
                    client,
                    spec,
                    cand,
                    &comp.name,
                    &binding,
                    "negative-control",
                    &probe_prompt(&plan.control_nonce),
                    Some(&plan.invalid_config),
                ));
                probe.call = call_runner(
                    client,
                    spec,
                    cand,
                    &comp.name,
                    &binding,
                    "fixture",
                    &probe_prompt(&plan.nonce),
                    Some(&plan.config),
                );
            }
            None => {
                probe.call = call_runner(
                    client,
                    spec,
                    cand,
                    &comp.name,
                    &binding,
                    "generic",
                    PROBE_PROMPT,
                    None,
                );
            }
        }
        if let Some(plan) = plan {
            probe.fixture_transcript = read_fixture_transcript(&plan.fixture_transcript);
        }
        out.runner_probes.push(probe);
    }
    Ok(())
}

/// Calls each planned Tool, Command, EventListener and KnowledgeEngine
/// component through its host action, one after another, keeping what the
/// runtime answered (judged by the gate: `calls`).
fn call_components(
    client: &mut HostClient,
    spec: &HostSpec,
    cand: &HostCandidate,
    out: &mut CandidateOutcome,
) {
    let timeout = Duration::from_millis(spec.call_timeout_ms);
    let binding = out.binding.clone();
    for plan in &cand.component_plans {
        if interrupt::requested() {
            break;
        }
        let (Some(action), Some(data)) = (
            plan.action.as_deref(),
            calls::request(plan, &cand.author, &cand.name),
        ) else {
            continue;
        };
        client.note(
            action,
            json!({"folder": cand.folder, "component": plan.component.to_string()}),
        );
        let mut call = ComponentCall {
            component: plan.component.clone(),
            action: action.to_string(),
            request: data.clone(),
            ..ComponentCall::default()
        };
        // execute_command streams; the others answer once.
        let answers = if action == "execute_command" {
            client.call_stream(action, data, Some(&binding), timeout)
        } else {
            client
                .call(action, data, Some(&binding), timeout)
                .map(|r| vec![r])
        };
        match answers {
            Err(e) => {
                call.error = Some(e);
                call.rpc_error = true;
            }
            Ok(answers) => {
                for a in answers {
                    if !a.ok() {
                        call.error = Some(a.message.clone());
                        continue;
                    }
                    let end = a.chunk_status.as_deref() == Some("end")
                        && a.data.as_object().is_some_and(|o| o.is_empty());
                    if !end && call.answers.len() < MAX_STREAMED_RESULTS {
                        call.answers.push(a.data);
                    }
                }
            }
        }
        out.component_calls.push(call);
    }
}

/// Streams the archive in `__file_chunk`s, hashing as it goes. Returns the
/// file key, or `None` when the upload failed (recorded in `out`).
fn upload(
    client: &mut HostClient,
    cand: &HostCandidate,
    binding: &Value,
    installation_uuid: &str,
    timeout: Duration,
    out: &mut CandidateOutcome,
) -> Result<Option<String>, String> {
    let mut file = match std::fs::File::open(&cand.archive) {
        Ok(f) => f,
        Err(e) => {
            out.upload_error = Some(format!("{}: cannot open: {e}", cand.archive.display()));
            return Ok(None);
        }
    };
    let length = file.metadata().map(|m| m.len()).unwrap_or(0);
    let chunk_len = rpc::FILE_CHUNK_LENGTH as u64;
    let amount = length.div_ceil(chunk_len).max(1);
    let file_key = format!(
        "{}-{}.lbpkg",
        &cand.sha256[..16.min(cand.sha256.len())],
        installation_uuid.replace('-', "")
    );
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; rpc::FILE_CHUNK_LENGTH];
    for index in 0..amount {
        let n = read_full(&mut file, &mut buf)
            .map_err(|e| format!("{}: read failed during upload: {e}", cand.archive.display()))?;
        hasher.update(&buf[..n]);
        let r = client.call(
            "__file_chunk",
            json!({
                "file_key": file_key,
                "file_length": length,
                "chunk_base64": base64::engine::general_purpose::STANDARD.encode(&buf[..n]),
                "chunk_index": index,
                "chunk_amount": amount,
                "chunk_size": n,
            }),
            Some(binding),
            timeout,
        )?;
        if !r.ok() {
            out.upload_error = Some(format!(
                "__file_chunk {index} of {amount} refused: {}",
                r.message
            ));
            return Ok(None);
        }
        out.chunks += 1;
        out.uploaded_bytes += n as u64;
    }
    let digest = hash::to_hex(&hasher.finalize());
    out.uploaded_sha256 = Some(digest.clone());
    if digest != cand.sha256 {
        out.upload_error = Some(format!(
            "the archive's bytes hash to {digest} while archive-members recorded {}; the file changed after it was certified",
            cand.sha256
        ));
        return Ok(None);
    }
    Ok(Some(file_key))
}

fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The run context (the SDK's `RunnerContext`, as JSON) of a `run_runner`
/// request from our hosts, with `prompt` as its input text; each call adds
/// its own `run_id`, `event.event_id` and, when it has one, `config`. Used
/// by discovery-rpc and by the `shared-runtime` gate's Runner calls.
pub(crate) fn runner_context(prompt: &str) -> Value {
    json!({
        "trigger": {"type": "message.received", "source": "api"},
        "event": {"event_type": "message.received", "source": "verify-coding-candidates"},
        "input": {"text": prompt},
        "delivery": {"surface": "api", "supports_streaming": true},
        "resources": {},
        "state": {},
        "actor": {"actor_type": "user", "actor_id": "verify-coding-candidates"},
        "runtime": {"metadata": {"component_kind": "Runner", "steering_enabled": false}}
    })
}

/// One `run_runner` request, streamed to its end; the run context carries
/// `config` as the invocation config when given.
#[allow(clippy::too_many_arguments)]
fn call_runner(
    client: &mut HostClient,
    spec: &HostSpec,
    cand: &HostCandidate,
    runner: &str,
    binding: &Value,
    label: &str,
    prompt: &str,
    config: Option<&Value>,
) -> RunnerCall {
    let run_id = format!("vcc-{label}-{}-{runner}", cand.folder);
    let mut context = runner_context(prompt);
    context["run_id"] = json!(run_id);
    context["event"]["event_id"] = json!(format!("vcc-event-{label}-{}", cand.folder));
    if let Some(config) = config {
        context["config"] = config.clone();
    }
    client.note(
        "run_runner",
        json!({"folder": cand.folder, "runner": runner, "call": label}),
    );
    let chunks = client.call_stream(
        "run_runner",
        json!({
            "plugin_author": cand.author,
            "plugin_name": cand.name,
            "runner_name": runner,
            "context": context,
        }),
        Some(binding),
        Duration::from_millis(spec.runner_timeout_ms),
    );
    let mut call = RunnerCall {
        runner: runner.to_string(),
        run_id,
        prompt: prompt.to_string(),
        config: config.cloned(),
        ..RunnerCall::default()
    };
    match chunks {
        Err(e) => {
            call.error = Some(e);
            call.rpc_error = true;
        }
        Ok(chunks) => absorb(&mut call, &chunks),
    }
    call
}

/// Folds a `run_runner` stream into `call`: result types, the reply, the
/// run's failure or the request's error.
fn absorb(call: &mut RunnerCall, chunks: &[rpc::Response]) {
    let mut deltas = String::new();
    for c in chunks {
        if !c.ok() {
            call.error = Some(c.message.clone());
            call.rpc_error = true;
            continue;
        }
        if call.stream.len() < MAX_STREAMED_RESULTS {
            call.stream.push(c.data.clone());
        }
        let Some(kind) = c.data["type"].as_str() else {
            continue;
        };
        call.result_types.push(kind.to_string());
        match kind {
            // The reply is the completed message: on `run.completed`
            // itself, or on an earlier `message.completed` (the SDK
            // lets a runner complete without repeating it).
            "run.completed" | "message.completed" => {
                if let Some(text) = message_text(&c.data["data"]["message"]) {
                    call.reply = Some(text);
                }
            }
            // A streaming runner may complete without any completed
            // message: its reply is then what the deltas accumulated
            // (`chunk.all_content`, else the chunks' `content`).
            "message.delta" => {
                let chunk = &c.data["data"]["chunk"];
                match chunk["all_content"].as_str() {
                    Some(all) => deltas = all.to_string(),
                    None => {
                        if let Some(part) = chunk["content"].as_str() {
                            deltas.push_str(part);
                        }
                    }
                }
            }
            "run.failed" => {
                call.error = Some(format!(
                    "{}: {}",
                    c.data["data"]["code"].as_str().unwrap_or("run.failed"),
                    c.data["data"]["error"].as_str().unwrap_or("")
                ));
            }
            _ => {}
        }
    }
    if call.reply.is_none() && !deltas.is_empty() {
        call.reply = Some(deltas);
        call.reply_from_deltas = true;
    }
}

/// Up to [`MAX_FIXTURE_TRANSCRIPT_LINES`] JSON lines of a fixture's transcript (a
/// line that is not JSON is kept as a string); empty when there is none.
fn read_fixture_transcript(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .take(MAX_FIXTURE_TRANSCRIPT_LINES)
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| serde_json::Value::String(l.into())))
        .collect()
}

/// The entry of a `list_plugins` answer that is the candidate's own plugin
/// (`manifest.manifest.metadata` author and name). The runtime scopes the
/// list to the request's installation binding only while that binding is
/// installed; otherwise (`oss_dev`) it lists every plugin, so the first entry
/// may be another candidate's.
fn own_plugin<'a>(data: &'a Value, author: &str, name: &str) -> Option<&'a Value> {
    data["plugins"].as_array()?.iter().find(|p| {
        let meta = &p["manifest"]["manifest"]["metadata"];
        meta["author"].as_str() == Some(author) && meta["name"].as_str() == Some(name)
    })
}

/// The content of a runner's message as text: a string as is, structured
/// content as JSON; `None` when the message or its content is absent or
/// empty (no reply was observed).
fn message_text(message: &Value) -> Option<String> {
    match &message["content"] {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(a) if a.is_empty() => None,
        other => Some(other.to_string()),
    }
}

/// The runtime's child process working in `code_dir`: the plugin's worker
/// (the SDK starts it with cwd = the artifact's code folder).
fn observe_worker(runtime_pid: i32, code_dir: &Path) -> Option<WorkerFacts> {
    let want = code_dir.canonicalize().ok()?;
    procfs::all()
        .into_values()
        .filter(|p| p.ppid == runtime_pid && !p.exited())
        .find(|p| procfs::cwd(p.pid).is_some_and(|c| c == want))
        .map(|p| {
            let mut env_names = procfs::environ(p.pid)
                .map(|e| procfs::env_keys(&e))
                .unwrap_or_default();
            env_names.sort();
            WorkerFacts {
                pid: p.pid,
                pgid: p.pgid,
                cwd: want.display().to_string(),
                env_names,
            }
        })
}

fn listed_components(plugin: &Value) -> Vec<ComponentId> {
    let mut out: Vec<ComponentId> = plugin["components"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| ComponentId {
                    kind: c["manifest"]["manifest"]["kind"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    name: c["manifest"]["manifest"]["metadata"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// `restart_coordinator.restart_failures_total` from `/healthz`: worker
/// start attempts that ended before the plugin was ready.
fn restart_failures(port: u16) -> Option<u64> {
    let (status, body) = rpc::healthz(port, Duration::from_secs(2)).ok()?;
    if status != 200 {
        return None;
    }
    let doc: Value = serde_json::from_str(&body).ok()?;
    doc["resources"]["restart_coordinator"]["restart_failures_total"].as_u64()
}

fn log_sizes(rt: &Running) -> (u64, u64) {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    (size(&rt.logs().0), size(&rt.logs().1))
}

/// The runtime's own words about what went wrong since `mark`: its warning
/// and error lines, and the last line of each traceback its workers printed
/// (worker stderr is the runtime's stderr), without repeats, at most 12.
fn runtime_messages(rt: &Running, mark: (u64, u64)) -> Vec<String> {
    let mut text = String::new();
    for (path, from) in [(&rt.logs().1, mark.1), (&rt.logs().0, mark.0)] {
        text.push_str(&read_from(path, from));
    }
    select_messages(&text)
}

/// The installation a runtime log line says it restarts after its worker
/// exited (`PluginManager._supervise_plugin_installation`: "Plugin
/// installation worker exited unexpectedly; restarting <uuid> ...").
fn restarted_installation(line: &str) -> Option<&str> {
    if !line.contains("worker exited unexpectedly") {
        return None;
    }
    line.split_once("restarting ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
}

/// Failed worker starts per installation, counted from the runtime's
/// stderr and stdout as they grow: each poll reads only what was written
/// since the one before ([`RestartTally::read_on`]), not the whole log since
/// the first installation, which grows with the candidate count and was read
/// again on every poll (and only its first 4 MiB).
#[derive(Debug, Default)]
struct RestartTally {
    /// Bytes of (stdout, stderr) counted so far.
    marks: (u64, u64),
    /// Each log's last line, not ended yet: (stdout, stderr).
    partial: (Vec<u8>, Vec<u8>),
    counts: BTreeMap<String, u64>,
}

impl RestartTally {
    /// Counts from `mark` (`log_sizes` when the first installation began).
    fn from_mark(mark: (u64, u64)) -> Self {
        Self {
            marks: mark,
            ..Self::default()
        }
    }

    /// Counts the lines `bytes` ends; a line not ended yet waits in
    /// `partial` for the rest.
    fn feed(partial: &mut Vec<u8>, counts: &mut BTreeMap<String, u64>, bytes: &[u8]) {
        partial.extend_from_slice(bytes);
        let Some(end) = partial.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        let rest = partial.split_off(end + 1);
        for line in String::from_utf8_lossy(partial).lines() {
            if let Some(uuid) = restarted_installation(line) {
                *counts.entry(uuid.to_string()).or_default() += 1;
            }
        }
        *partial = rest;
    }

    /// Reads on in both logs from where the last call stopped.
    fn read_on(&mut self, rt: &Running) {
        let (out, err) = rt.logs();
        for (path, mark, partial) in [
            (out, &mut self.marks.0, &mut self.partial.0),
            (err, &mut self.marks.1, &mut self.partial.1),
        ] {
            let bytes = read_bytes_from(path, *mark);
            *mark += bytes.len() as u64;
            Self::feed(partial, &mut self.counts, &bytes);
        }
    }

    /// Failed starts of installation `uuid` counted so far.
    fn count(&self, uuid: &str) -> u64 {
        self.counts.get(uuid).copied().unwrap_or(0)
    }
}

fn select_messages(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim_end();
        let is_log = t.starts_with('[') && (t.contains("[WARNING]") || t.contains("[ERROR]"));
        let is_exception = !t.starts_with(char::is_whitespace)
            && t.split_once(": ").is_some_and(|(head, _)| {
                !head.contains(' ') && (head.ends_with("Error") || head.ends_with("Exception"))
            });
        let line = t.to_string();
        if (is_log || is_exception) && !out.contains(&line) {
            out.push(line);
        }
    }
    let skip = out.len().saturating_sub(12);
    out.split_off(skip)
}

fn read_from(path: &Path, from: u64) -> String {
    String::from_utf8_lossy(&read_bytes_from(path, from)).into_owned()
}

/// At most 4 MiB of `path` from byte `from` (what a later call reads on
/// from); nothing when it cannot be read.
fn read_bytes_from(path: &Path, from: u64) -> Vec<u8> {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    if f.seek(SeekFrom::Start(from)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    let _ = f.take(4 << 20).read_to_end(&mut buf);
    buf
}

fn teardown(mut rt: Running, spec: &HostSpec, result: &mut HostResult) {
    let pgid = rt.pgid().as_raw_nonzero().get();
    let stopped = rt.stop();
    let survivors = survey::survey_and_stop(&spec.roots, &[pgid], &spec.marker, process::GRACE);
    result.teardown = Some(Teardown {
        exited_on_its_own: stopped.exited_on_its_own,
        needed_kill: stopped.needed_kill,
        group_empty: stopped.group_empty,
        status: stopped.status.to_string(),
        survivors,
    });
}

/// Two ports free on this namespace's loopback, for the control and debug
/// servers (bound together, then released for the runtime).
fn free_ports() -> Result<(u16, u16), String> {
    let a = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    let b = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    let ports = (
        a.local_addr().map_err(|e| e.to_string())?.port(),
        b.local_addr().map_err(|e| e.to_string())?.port(),
    );
    Ok(ports)
}

fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut buf = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(buf)
}

/// 64 hex characters from `/dev/urandom` (the runtime wants at least 32
/// non-space characters: `runtime.security.validate_runtime_secret`).
pub(super) fn random_token() -> Result<String, String> {
    Ok(hash::to_hex(&random_bytes::<32>()?))
}

/// A random (version 4) UUID in its 8-4-4-4-12 form.
fn random_uuid() -> Result<String, String> {
    let mut b = random_bytes::<16>()?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hash::to_hex(&b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(kind: &str, data: Value) -> rpc::Response {
        rpc::Response {
            seq_id: Some(3),
            code: 0,
            message: "success".into(),
            data: json!({"type": kind, "data": data}),
            chunk_status: Some("continue".into()),
        }
    }

    #[test]
    fn a_reply_comes_from_the_completed_message_else_from_the_deltas() {
        let delta = |content: &str, all: Option<&str>| {
            let mut chunk = json!({"role": "assistant", "content": content});
            if let Some(all) = all {
                chunk["all_content"] = json!(all);
            }
            result("message.delta", json!({"chunk": chunk}))
        };
        let done = result("run.completed", json!({"finish_reason": "stop"}));
        // Deltas with all_content: the last accumulated text.
        let mut call = RunnerCall::default();
        absorb(
            &mut call,
            &[delta("a", Some("a")), delta("b", Some("ab")), done.clone()],
        );
        assert_eq!(
            (call.reply.as_deref(), call.reply_from_deltas),
            (Some("ab"), true)
        );
        // Deltas without it: the chunks joined.
        let mut call = RunnerCall::default();
        absorb(
            &mut call,
            &[delta("a", None), delta("b", None), done.clone()],
        );
        assert_eq!(call.reply.as_deref(), Some("ab"));
        // A completed message wins over the deltas.
        let mut call = RunnerCall::default();
        let completed = result(
            "message.completed",
            json!({"message": {"role": "assistant", "content": "final"}}),
        );
        absorb(&mut call, &[delta("a", Some("a")), completed, done.clone()]);
        assert_eq!(
            (call.reply.as_deref(), call.reply_from_deltas),
            (Some("final"), false)
        );
        // Nothing: no reply, and an empty content is no reply.
        let mut call = RunnerCall::default();
        absorb(&mut call, &[delta("", Some("")), done]);
        assert_eq!(call.reply, None);
        assert_eq!(call.result_types, ["message.delta", "run.completed"]);
        // A failure and an RPC error are told apart.
        let mut call = RunnerCall::default();
        absorb(
            &mut call,
            &[result(
                "run.failed",
                json!({"code": "x.config_invalid", "error": "bad"}),
            )],
        );
        assert_eq!(
            (call.error.as_deref(), call.rpc_error),
            (Some("x.config_invalid: bad"), false)
        );
        let mut call = RunnerCall::default();
        let mut refused = result("run.failed", json!({}));
        refused.code = 1;
        refused.message = "ValueError: no such runner".into();
        absorb(&mut call, &[refused]);
        assert_eq!(
            (call.error.as_deref(), call.rpc_error),
            (Some("ValueError: no such runner"), true)
        );
    }

    #[test]
    fn uuids_and_tokens_have_the_expected_shape() {
        let u = random_uuid().unwrap();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        let t = random_token().unwrap();
        assert_eq!(t.len(), 64);
        assert_ne!(t, random_token().unwrap());
    }

    #[test]
    fn only_the_candidates_own_plugin_is_read_from_list_plugins() {
        let plugin = |author: &str, name: &str, status: &str| json!({"status": status, "manifest": {"manifest": {"metadata": {"author": author, "name": name}}}});
        // An unscoped answer listing another candidate first.
        let data = json!({"plugins": [
            plugin("acme", "other", "initialized"),
            plugin("acme", "mine", "mounted"),
        ]});
        let got = own_plugin(&data, "acme", "mine").expect("listed");
        assert_eq!(got["status"], "mounted");
        let only_other = json!({"plugins": [plugin("acme", "other", "initialized")]});
        assert!(own_plugin(&only_other, "acme", "mine").is_none());
        assert!(own_plugin(&json!({"plugins": []}), "acme", "mine").is_none());
    }

    #[test]
    fn a_missing_or_empty_message_is_no_reply() {
        assert_eq!(message_text(&Value::Null), None);
        assert_eq!(message_text(&json!({"role": "assistant"})), None);
        assert_eq!(message_text(&json!({"content": null})), None);
        assert_eq!(message_text(&json!({"content": ""})), None);
        assert_eq!(message_text(&json!({"content": []})), None);
        assert_eq!(
            message_text(&json!({"content": "hi"})).as_deref(),
            Some("hi")
        );
        assert!(
            message_text(&json!({"content": [{"type": "text", "text": "hi"}]}))
                .is_some_and(|t| t.contains("hi"))
        );
    }

    /// The window is the run's width, never the candidate count: 4 at once
    /// for 50 candidates, 1 under `--jobs 1` (and for a spec that gives 0).
    #[test]
    fn installations_start_in_a_window_of_the_runs_width() {
        assert_eq!(window(4, 50), 4);
        assert_eq!(window(4, 3), 3);
        assert_eq!(window(1, 50), 1);
        assert_eq!(window(0, 50), 1);
        assert_eq!(window(4, 0), 1);
        assert_eq!(window(usize::MAX, 7), 7);
    }

    #[test]
    fn restarts_are_counted_per_installation_from_the_runtime_log() {
        let log = "[WARNING] Plugin installation worker exited unexpectedly; restarting u-1 in 1.0s\n\
                   [WARNING] Plugin installation worker exited unexpectedly; restarting u-2 in 0.9s\n\
                   [WARNING] Plugin installation worker exited unexpectedly; restarting u-1 in 2.1s\n\
                   [WARNING] Plugin installation worker exited unexpectedly; restarting u-10 in 1.1s\n\
                   [INFO] restarting u-1 for another reason\n";
        let mut whole = RestartTally::default();
        RestartTally::feed(&mut whole.partial.1, &mut whole.counts, log.as_bytes());
        assert_eq!(whole.count("u-1"), 2);
        assert_eq!(whole.count("u-2"), 1);
        assert_eq!(whole.count("u-10"), 1);
        assert_eq!(whole.count("u-3"), 0);
        assert_eq!(whole.count(""), 0);
        // Read on in pieces cut anywhere, mid-line included: the same counts,
        // each line counted once, a line not ended yet not at all.
        for cut in [1, 7, 40, 97, 150] {
            let mut t = RestartTally::default();
            for piece in log.as_bytes().chunks(cut) {
                RestartTally::feed(&mut t.partial.1, &mut t.counts, piece);
            }
            assert_eq!(t.counts, whole.counts, "pieces of {cut} bytes");
        }
        let mut open = RestartTally::default();
        let unended = "[WARNING] Plugin installation worker exited unexpectedly; restarting u-9";
        RestartTally::feed(&mut open.partial.0, &mut open.counts, unended.as_bytes());
        assert_eq!(open.count("u-9"), 0, "not ended yet");
        RestartTally::feed(&mut open.partial.0, &mut open.counts, b" in 1.0s\n");
        assert_eq!(open.count("u-9"), 1);
    }

    #[test]
    fn runtime_messages_keep_warnings_and_exception_lines() {
        let log = "[11-29 18:10:28.255] handler.py (453) - [WARNING] : Runtime action initialize_plugin failed with AttributeError\n\
Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    raise X\n\
langbot_plugin.entities.io.errors.ActionCallError: ActionCallError: AttributeError: module 'main' has no attribute 'Missing'\n\
[11-29 18:10:28.300] controller.py (1) - [INFO] : Mounting plugin a/b...\n\
[11-29 18:10:28.255] handler.py (453) - [WARNING] : Runtime action initialize_plugin failed with AttributeError\n";
        let got = select_messages(log);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[1].ends_with("has no attribute 'Missing'"));
    }
}
