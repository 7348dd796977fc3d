//! Pure judgement of one [`HostObservation`]: one named check per clause of
//! the stateless-v1 contract the host exercised. A clause the observation
//! cannot establish fails and says so; none passes unobserved.

use super::observe::{Call, Found, HostObservation, Installation, Launch, Scan};
use super::outbound;
use crate::evidence::Check;
use serde_json::{json, Value};

/// Check names, in report order.
pub const PLACEMENT: &str = "shared-placement";
/// Each invocation read only its own installation's configuration.
pub const OWN_CONFIG: &str = "own-configuration";
/// No canary of one installation in the other's replies, host calls, logs.
pub const NO_CROSS: &str = "no-cross-installation-canary";
/// Every invocation answered, also when A and B ran at once.
pub const CONCURRENT: &str = "concurrent-invocations";
/// No canary reachable from plugin/component objects or module globals.
pub const NOTHING_KEPT: &str = "no-canary-kept";
/// No plugin task or thread left after the invocations.
pub const NO_TASK: &str = "no-tenant-task";
/// `initialize()` ran once for the one worker.
pub const INIT_ONCE: &str = "initialize-once";
/// Revoking A left B answering and nothing of A reachable.
pub const REVOCATION: &str = "revocation";

/// Every check for candidate `folder` (plugin `author/name`).
pub fn decide(obs: &HostObservation, folder: &str, plugin: &str) -> Vec<Check> {
    let c = Some(folder);
    let placement = placement(obs, c);
    if placement.result != crate::evidence::CheckResult::Pass {
        let rest = [
            OWN_CONFIG,
            NO_CROSS,
            CONCURRENT,
            NOTHING_KEPT,
            NO_TASK,
            INIT_ONCE,
            REVOCATION,
        ];
        let mut out = vec![placement];
        out.extend(rest.iter().map(|n| {
            Check::fail(n, c, format!("shared-runtime: not established: the two installations were not placed on one shared worker (see {PLACEMENT})"))
                .consequence_of(PLACEMENT)
        }));
        return out;
    }
    vec![
        placement,
        own_configuration(obs, c),
        no_cross(obs, c),
        concurrent(obs, c),
        nothing_kept(obs, c),
        no_task(obs, c),
        initialize_once(obs, plugin, c),
        revocation(obs, c),
    ]
}

fn workers(list: &[super::observe::Process]) -> usize {
    list.iter().filter(|p| p.kind == "worker").count()
}

/// Both installations applied, initialized, and served by one worker process.
pub fn placement(obs: &HostObservation, c: Option<&str>) -> Check {
    let mut problems = Vec::new();
    if let Some(f) = &obs.fatal {
        problems.push(format!("the host stopped: {f}"));
    }
    match &obs.runtime_config {
        Some(a) if a.code == Some(0) => {}
        Some(a) => problems.push(format!(
            "set_runtime_config (profile shared) refused: {}",
            a.message.clone().unwrap_or_default()
        )),
        None => problems.push("set_runtime_config was not answered".into()),
    }
    if obs.installations.len() != 2 {
        problems.push(format!(
            "{} installations applied, expected A and B",
            obs.installations.len()
        ));
    }
    for i in &obs.installations {
        let state = i.apply.data["state"].as_str().unwrap_or("");
        if i.apply.code != Some(0) || state == "failed" {
            let error = i.apply.data["error_code"].as_str().unwrap_or("");
            let cause = if error.starts_with("dependency") {
                let said = i.apply.data["message"].as_str().unwrap_or("");
                format!(" ({error}: {said}; the cause is named by dependency-environment)")
            } else {
                String::new()
            };
            problems.push(format!(
                "apply_plugin_installation of {} answered code {:?} state {state:?}: {}{cause}",
                i.label,
                i.apply.code,
                i.apply.message.clone().unwrap_or_default()
            ));
        }
        let status = obs.status.get(&i.label).cloned().unwrap_or_default();
        if status != [Some("initialized".to_string())] {
            problems.push(format!(
                "{} is listed as {status:?}, expected [\"initialized\"]",
                i.label
            ));
        }
    }
    let unregistered = obs.installations.iter().any(|i| {
        obs.status.get(&i.label).cloned().unwrap_or_default() != [Some("initialized".to_string())]
    });
    if unregistered && worker_tmp_read_only(&obs.launches) == Some(true) {
        problems.push("the SDK launched the shared worker with nothing writable at /tmp (its nsjail arguments mount no tmpfs or directory there, and the chroot is read-only), so the worker cannot create its file-transfer root /tmp/lbp-rpc and never registers, whatever the plugin: a defect of this langbot-plugin's shared runtime (as in 0.7.4, whose runtime/plugin/worker_launcher.py build_shared_pool_nsjail_args drops the installation's /tmp mount; 0.7.18 mounts a tmpfs there), not of the plugin. Require a langbot-plugin whose shared worker gets a writable /tmp (e.g. ==0.7.18)".into());
    }
    let (attached, invoked) = (
        workers(&obs.workers_attached),
        workers(&obs.workers_invoked),
    );
    if attached != 1 || invoked != 1 {
        problems.push(format!("{attached} worker process(es) after attaching and {invoked} after the invocations, expected exactly one for both installations"));
    }
    let observed = json!({"placement": obs.placement, "workers_attached": obs.workers_attached, "workers_invoked": obs.workers_invoked});
    if problems.is_empty() {
        Check::pass(
            PLACEMENT,
            c,
            format!(
                "installations A and B of one archive digest ran in one shared worker process ({})",
                obs.placement
            ),
        )
        .with_observed(observed)
    } else {
        Check::fail(PLACEMENT, c, format!("shared-runtime: expected both installations on one shared worker; found: {}. Read DIR/logs/shared-runtime/ (runtime.log)", problems.join("; "))).with_observed(observed)
    }
}

/// Whether the SDK's shared-worker launch (its nsjail arguments before
/// `--`, as the SDK built them) leaves nothing writable at /tmp: no tmpfs or
/// mount there, and no `--rw` (nsjail's chroot is read-only without it).
/// The worker's transfer root is /tmp/lbp-rpc (`runtime/io/handler.py`,
/// `SHARED_WORKER_FILE_STORAGE_DIR`); langbot-plugin 0.7.4 launches its
/// shared worker so and the worker hangs after "Mounting plugin" (its
/// handler raises "Invalid file transfer root" in a task nothing awaits).
/// `None` when no worker launch was seen.
pub fn worker_tmp_read_only(launches: &[Launch]) -> Option<bool> {
    let launch = launches.iter().find(|l| l.kind == "worker")?;
    let head = launch
        .sdk_args
        .split(|a| a == "--")
        .next()
        .unwrap_or_default();
    let writable = head.iter().enumerate().any(|(i, flag)| {
        let value = head.get(i + 1).map_or("", String::as_str);
        match flag.as_str() {
            "--rw" => true,
            "--tmpfsmount" | "-T" => value == "/tmp",
            "--bindmount" | "-B" => value.split(':').nth(1).unwrap_or(value) == "/tmp",
            "--mount" | "-m" => value.split(':').nth(1) == Some("/tmp"),
            _ => false,
        }
    });
    Some(!writable)
}

fn canaries(i: &Installation) -> Vec<&str> {
    i.canaries()
}

/// Runner invocation-config canaries were set (some Runner's `spec.config`
/// has a string field).
fn runner_canaried(obs: &HostObservation) -> bool {
    obs.installations
        .iter()
        .any(|i| i.runner_config.values().any(|f| !f.is_empty()))
}

/// A Runner call's problem, if any: its stream did not end, the request
/// failed (an RPC error), or it ended otherwise (completed vs `run.failed`
/// and its code) than the same installation's sequential call of that
/// Runner. `None` for a sequential call that ended, and for a call that is
/// not a Runner's.
fn runner_problem(obs: &HostObservation, call: &Call) -> Option<String> {
    let run = call.runner.as_ref()?;
    let who = format!(
        "{} {} for {}",
        call.phase, call.component, call.installation
    );
    if !run.ended {
        return Some(format!(
            "{who}: the stream did not end ({} answers)",
            run.chunks
        ));
    }
    if call.code != Some(0) {
        let said = call.message.clone().unwrap_or_default();
        return Some(format!(
            "{who}: the request failed: code {:?} {said}",
            call.code
        ));
    }
    if call.phase == "sequential" {
        return None;
    }
    let alone = obs.calls.iter().find(|x| {
        x.phase == "sequential"
            && x.installation == call.installation
            && x.component == call.component
    });
    let alone = alone.and_then(|x| x.runner.as_ref().filter(|r| r.ended && x.code == Some(0)));
    let Some(alone) = alone else {
        return Some(format!(
            "{who}: no sequential run of it ended to compare with (not established)"
        ));
    };
    (alone.outcome() != run.outcome()).then(|| {
        let why = run
            .failed
            .as_ref()
            .and_then(|f| f.error.clone())
            .unwrap_or_default();
        format!(
            "{who} ended {} ({why}) while it ended {} alone",
            run.outcome(),
            alone.outcome()
        )
    })
}

/// The Runner calls' outcomes, for `observed`.
fn runner_outcomes(obs: &HostObservation) -> Vec<Value> {
    obs.calls
        .iter()
        .filter_map(|x| {
            let r = x.runner.as_ref()?;
            Some(json!({"phase": x.phase, "installation": x.installation, "component": x.component, "ended": r.ended, "outcome": r.outcome()}))
        })
        .collect()
}

/// Why declared components got no call, as a clause to append (empty when
/// the gate named none).
fn not_called(obs: &HostObservation) -> String {
    if obs.not_called.is_empty() {
        String::new()
    } else {
        format!("; {}", obs.not_called.join("; "))
    }
}

fn text_has(v: &Value, canary: &str) -> bool {
    str_has(&v.to_string(), canary)
}

/// `text` shows `canary`: the canary itself, or for a URL canary its host
/// name in any case ([`outbound::wire_mark`]: a plugin that normalises its
/// endpoint, `rstrip("/")` or a lower-cased URL, still shows it).
fn str_has(text: &str, canary: &str) -> bool {
    if canary.is_empty() {
        return false;
    }
    let mark = outbound::wire_mark(canary);
    text.contains(canary)
        || (mark != canary
            && text
                .to_ascii_lowercase()
                .contains(&mark.to_ascii_lowercase()))
}

fn pair<'a>(obs: &'a HostObservation, label: &str) -> Option<(&'a Installation, &'a Installation)> {
    let me = obs.installations.iter().find(|i| i.label == label)?;
    let other = obs.installations.iter().find(|i| i.label != label)?;
    Some((me, other))
}

fn answered(call: &Call) -> bool {
    call.code == Some(0) && !call.reply.is_null()
}

/// Every invocation read its own installation's configuration, judged per
/// answered reply:
/// - it shows the other installation's canary: a finding;
/// - it shows a configuration field (a JSON key named like a canaried field)
///   whose value is not its own canary: a finding;
/// - it shows neither canary nor field: neutral, but then some reply or log
///   per installation must show its own canary, or the clause is "not
///   established" (a limit of what the plugin shows, said as such).
///
/// The canaries are the plugin configuration's and each Runner's
/// invocation configuration's (`run_runner`'s run context `config`).
/// A manifest that declares no configuration field at all
/// (`HostObservation::config_declared == Some(0)`) and no Runner with a
/// canaried invocation-config field passes vacuously: A and B carry the same
/// empty configuration, so there is none to confuse.
pub fn own_configuration(obs: &HostObservation, c: Option<&str>) -> Check {
    if obs.config_declared == Some(0) && !runner_canaried(obs) {
        return Check::pass(
            OWN_CONFIG,
            c,
            "vacuous: the manifest declares no configuration field (spec.config is empty), so \
             installations A and B carry the same empty configuration and no invocation can read the \
             other's",
        )
        .with_observed(json!({"calls": obs.calls.len(), "config_declared": 0}));
    }
    let mut wrong = Vec::new();
    let mut seen_own = shown_outside_replies(obs);
    for call in obs.calls.iter().filter(|x| answered(x)) {
        let Some((me, other)) = pair(obs, &call.installation) else {
            continue;
        };
        if canaries(me).iter().any(|k| text_has(&call.reply, k)) {
            seen_own
                .entry(me.label.clone())
                .or_insert_with(|| format!("a {} reply", call.component));
        } else if canaries(other).iter().any(|k| text_has(&call.reply, k)) {
            wrong.push(format!(
                "{} {} for {} answered with the other installation's configuration",
                call.phase, call.component, call.installation
            ));
        } else if let Some((field, value)) = shown_field(&call.reply, &fields_of(me, call)) {
            wrong.push(format!(
                "{} {} for {} answered without its own configuration (field {field} = {value}, \
                 not its canary)",
                call.phase, call.component, call.installation
            ));
        }
    }
    wrong.extend(sent_out_the_others(obs));
    let missing: Vec<_> = obs
        .installations
        .iter()
        .filter(|i| !seen_own.contains_key(&i.label))
        .map(|i| i.label.clone())
        .collect();
    let observed = json!({"calls": obs.calls.len(), "showed_own": seen_own, "config_declared": obs.config_declared, "outbound": outbound::summary(obs)});
    if wrong.is_empty() && missing.is_empty() {
        let shown: Vec<String> = seen_own
            .iter()
            .map(|(label, how)| format!("{label} in {how}"))
            .collect();
        return Check::pass(
            OWN_CONFIG,
            c,
            format!(
                "each installation's invocations showed its own canary configuration ({}) and no \
                 reply the other's ({} canaried plugin field(s), {} canaried Runner \
                 invocation-config field(s) per installation)",
                shown.join("; "),
                obs.installations.first().map_or(0, |i| i.config.len()),
                obs.installations.first().map_or(0, |i| i
                    .runner_config
                    .values()
                    .map(|f| f.len())
                    .sum::<usize>())
            ),
        )
        .with_observed(observed);
    }
    Check::fail(OWN_CONFIG, c, own_config_detail(&wrong, &missing, obs)).with_observed(observed)
}

/// The findings of the outbound sink against `own-configuration`: a
/// request carrying one installation's canary sent while only the other's
/// invocations ran (counted), and endpoints swapped while both ran
/// ([`outbound::concurrent_swaps`]).
fn sent_out_the_others(obs: &HostObservation) -> Vec<String> {
    let sent: Vec<String> = outbound::sightings(obs)
        .iter()
        .filter(|s| s.foreign() && !s.active.is_empty())
        .map(|s| {
            let reader: Vec<_> = s.active.iter().copied().collect();
            format!(
                "an invocation for {} sent out {}'s configuration ({})",
                reader.join(" and "),
                s.owner.label,
                outbound::describe(s.event)
            )
        })
        .collect();
    let mut out = counted(sent);
    out.extend(outbound::concurrent_swaps(obs));
    out
}

/// Where each installation showed its own canary other than in a reply
/// (label -> where, the first seen): its plugin logs, a host call made with
/// its binding, or an outbound query or connection that arrived while only
/// its own invocations were in progress ([`outbound::Sighting::own_alone`]).
fn shown_outside_replies(obs: &HostObservation) -> std::collections::BTreeMap<String, String> {
    let mut seen = std::collections::BTreeMap::new();
    for (label, logs) in &obs.logs {
        if let Some((me, _)) = pair(obs, label) {
            if canaries(me).iter().any(|k| text_has(logs, k)) {
                seen.entry(me.label.clone())
                    .or_insert_with(|| "its plugin logs".to_string());
            }
        }
    }
    for me in &obs.installations {
        let own_call = obs.host_calls.iter().find(|h| {
            h.installation_uuid.as_deref() == Some(me.uuid())
                && canaries(me).iter().any(|k| h.carries(k))
        });
        if let Some(h) = own_call {
            seen.entry(me.label.clone())
                .or_insert_with(|| format!("host call {} made with its binding", h.action));
        }
    }
    for s in outbound::sightings(obs).iter().filter(|s| s.own_alone()) {
        seen.entry(s.owner.label.clone()).or_insert_with(|| {
            format!(
                "an outbound {} during its own invocation",
                outbound::describe(s.event)
            )
        });
    }
    seen
}

/// The canaried fields a call of `me` may show by name: the plugin
/// configuration's, and for a Runner's call that Runner's invocation
/// configuration's (field -> canary).
fn fields_of(me: &Installation, call: &Call) -> std::collections::BTreeMap<String, String> {
    let mut fields = me.config.clone();
    if call.runner.is_some() {
        let runner = call.component.strip_prefix("Runner/").unwrap_or("");
        if let Some(own) = me.runner_config.get(runner) {
            fields.extend(own.clone());
        }
    }
    fields
}

/// A canaried configuration field (`me`: field -> own canary) a reply shows
/// by name (an object key), with a value that is not its own canary:
/// `(field, value)`.
fn shown_field(
    reply: &Value,
    me: &std::collections::BTreeMap<String, String>,
) -> Option<(String, String)> {
    match reply {
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let own = me.get(k).and_then(|canary| match v {
                Value::String(s) if !str_has(s, canary) => Some((k.clone(), format!("{s:?}"))),
                Value::Null => Some((k.clone(), "null".into())),
                _ => None,
            });
            own.or_else(|| shown_field(v, me))
        }),
        Value::Array(items) => items.iter().find_map(|v| shown_field(v, me)),
        _ => None,
    }
}

/// The failure text: the findings and what to do; only when there are none,
/// what was not established and why that is no finding.
fn own_config_detail(wrong: &[String], missing: &[String], obs: &HostObservation) -> String {
    let mut parts = Vec::new();
    if !wrong.is_empty() {
        parts.push(format!(
            "{}. Read the configuration per call (get_plugin_config(); a Runner its run \
             context's config), never from a copy",
            wrong.join("; ")
        ));
    }
    if wrong.is_empty() && !missing.is_empty() {
        let fields = obs
            .installations
            .first()
            .map(|i| {
                let runners = i.runner_config.iter().flat_map(|(runner, fields)| {
                    fields
                        .keys()
                        .map(move |f| format!("Runner {runner}'s invocation config {f}"))
                });
                i.config
                    .keys()
                    .cloned()
                    .chain(runners)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let fields = if fields.is_empty() {
            "neither the manifest nor a Runner's spec.config has a string field to carry a canary"
                .to_string()
        } else {
            format!("canaries were set in {fields}")
        };
        parts.push(format!(
            "not established for {}: no reply, plugin log, host call or outbound request of that \
             installation showed its own configuration ({fields}; {}), so nothing observed tells \
             which installation's configuration its invocations read. This is a limit of what the \
             plugin shows, not a finding against its code; the shared claim stays uncertified until \
             it is established (a component whose reply or log shows a configured value, or that \
             calls a configured http(s) endpoint, establishes it)",
            missing.join(", "),
            sink_sentence(obs)
        ));
    }
    format!(
        "shared-runtime: expected each invocation to read its own installation's configuration (its \
         canary); found: {}",
        parts.join(". ")
    )
}

/// `items` in first-seen order, each once, a repeated one followed by
/// `(N times)`.
fn counted(items: Vec<String>) -> Vec<String> {
    let mut order: Vec<(String, usize)> = Vec::new();
    for item in items {
        match order.iter_mut().find(|(seen, _)| *seen == item) {
            Some((_, n)) => *n += 1,
            None => order.push((item, 1)),
        }
    }
    order
        .into_iter()
        .map(|(item, n)| {
            if n > 1 {
                format!("{item} ({n} times)")
            } else {
                item
            }
        })
        .collect()
}

/// What the outbound sink received, for a "not established" sentence.
fn sink_sentence(obs: &HostObservation) -> String {
    let o = &obs.outbound;
    if o.listening.is_empty() {
        let why = if o.errors.is_empty() {
            "the host ran without a private network namespace".to_string()
        } else {
            o.errors.join("; ")
        };
        return format!("outbound requests were not observed: {why}");
    }
    match o.events.len() {
        0 => "no outbound query or connection reached the sink".to_string(),
        n => format!("{n} outbound query/queries or connection(s) reached the sink, none with a canary of its own installation alone"),
    }
}

/// No canary of one installation in the other's replies, host calls or logs.
pub fn no_cross(obs: &HostObservation, c: Option<&str>) -> Check {
    let mut leaks = Vec::new();
    for call in &obs.calls {
        if let Some((_, other)) = pair(obs, &call.installation) {
            for k in canaries(other).into_iter().filter(|k| {
                text_has(&call.reply, k) || call.message.as_deref().is_some_and(|m| m.contains(k))
            }) {
                leaks.push(format!(
                    "{}'s canary {k} in the {} reply of {} to {}",
                    other.label, call.phase, call.component, call.installation
                ));
            }
        }
    }
    for (me, other) in obs.installations.iter().filter_map(|i| pair(obs, &i.label)) {
        for h in obs
            .host_calls
            .iter()
            .filter(|h| h.installation_uuid.as_deref() == Some(me.uuid()))
        {
            for k in canaries(other).into_iter().filter(|k| h.carries(k)) {
                leaks.push(format!(
                    "{}'s canary {k} in host call {} made for {}",
                    other.label, h.action, me.label
                ));
            }
        }
        match obs.logs.get(&me.label) {
            Some(l) => leaks.extend(
                canaries(other)
                    .into_iter()
                    .filter(|k| text_has(l, k))
                    .map(|k| format!("{}'s canary {k} in {}'s plugin logs", other.label, me.label)),
            ),
            None => leaks.push(format!(
                "{}'s plugin logs were not read (not established)",
                me.label
            )),
        }
    }
    leaks.extend(
        outbound::sightings(obs)
            .iter()
            .filter(|s| s.foreign())
            .map(|s| format!("{}'s canary {} in {}", s.owner.label, s.mark, s.sentence())),
    );
    let leaks = counted(leaks);
    let observed = json!({"calls": obs.calls.len(), "host_calls": obs.host_calls.len(), "logs_read": obs.logs.keys().collect::<Vec<_>>(), "outbound": outbound::summary(obs)});
    if leaks.is_empty() {
        Check::pass(
            NO_CROSS,
            c,
            "no canary of A reached B's replies, host calls, plugin logs or outbound requests, nor the reverse, and none left the worker outside its own installation's invocations",
        )
        .with_observed(observed)
    } else {
        Check::fail(NO_CROSS, c, format!("shared-runtime: expected no installation's canary in the other's replies, host calls, logs or outbound requests; found: {}. Keep nothing of one invocation for the next", leaks.join("; "))).with_observed(observed)
    }
}

/// Every invocation answered, alone and with the other installation at once.
/// A Runner call (streamed) passes when its stream ended without a request
/// error and, run at once with the other installation's, it ended as that
/// installation's sequential run did (completed, or `run.failed` with the
/// same code): a Runner that fails alike in every phase is not called
/// non-re-entrant; one that completes alone and fails at once is.
pub fn concurrent(obs: &HostObservation, c: Option<&str>) -> Check {
    let calls = obs.calls.iter().filter(|x| x.phase != "after-revoke");
    let mut failed: Vec<String> = calls
        .clone()
        .filter_map(|x| runner_problem(obs, x))
        .collect();
    failed.extend(
        calls
            .filter(|x| x.runner.is_none() && !answered(x))
            .map(|x| {
                format!(
                    "{} {} for {}: code {:?} {}",
                    x.phase,
                    x.component,
                    x.installation,
                    x.code,
                    x.message.clone().unwrap_or_default()
                )
            }),
    );
    let concurrent = obs.calls.iter().filter(|x| x.phase == "concurrent").count();
    let runs = runner_outcomes(obs);
    let observed =
        json!({"concurrent_calls": concurrent, "calls": obs.calls.len(), "runner_calls": runs});
    if concurrent == 0 {
        return Check::fail(
            CONCURRENT,
            c,
            format!(
                "shared-runtime: no concurrent invocation was made (not established): no component \
                 was planned for a call{}",
                not_called(obs)
            ),
        )
        .with_observed(observed);
    }
    if failed.is_empty() {
        let runners = if runs.is_empty() {
            String::new()
        } else {
            let ends: std::collections::BTreeSet<&str> =
                runs.iter().filter_map(|r| r["outcome"].as_str()).collect();
            format!(
                "; {} Runner run(s) streamed to their end, each concurrent one ending as its \
                 installation's sequential one ({})",
                runs.len(),
                ends.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
        Check::pass(
            CONCURRENT,
            c,
            format!(
                "every invocation answered, {concurrent} of them with A and B at once{runners}"
            ),
        )
        .with_observed(observed)
    } else {
        Check::fail(CONCURRENT, c, format!("shared-runtime: expected every component to answer A and B, also at once (re-entrant); found: {}. Keep no per-call state on the component", failed.join("; "))).with_observed(observed)
    }
}

fn scan_problem(scan: Option<&Scan>, what: &str) -> Option<String> {
    match scan {
        None => Some(format!("no live-object scan {what} (not established)")),
        Some(s) if s.error.is_some() => Some(format!(
            "the scan {what} failed: {}",
            s.error.clone().unwrap_or_default()
        )),
        Some(s) if s.truncated => Some(format!(
            "the scan {what} stopped at its node limit ({} objects): not established",
            s.nodes
        )),
        _ => None,
    }
}

fn paths(found: &[Found]) -> String {
    found
        .iter()
        .map(|f| format!("{} holds {}", f.path, f.canary))
        .collect::<Vec<_>>()
        .join("; ")
}

/// No canary reachable from plugin/component objects or module globals.
pub fn nothing_kept(obs: &HostObservation, c: Option<&str>) -> Check {
    let scan = obs.scan_invoked.as_ref();
    let observed = json!({"scan": scan.map(|s| json!({"nodes": s.nodes, "found": s.found}))});
    if let Some(p) = scan_problem(scan, "after the invocations") {
        return Check::fail(NOTHING_KEPT, c, format!("shared-runtime: {p}"))
            .with_observed(observed);
    }
    let found = &scan.map(|s| s.found.clone()).unwrap_or_default();
    if found.is_empty() {
        Check::pass(NOTHING_KEPT, c, "after the invocations no canary was reachable from the plugin or component objects or the plugin's module globals").with_observed(observed)
    } else {
        Check::fail(NOTHING_KEPT, c, format!("shared-runtime: expected no configuration kept after the invocations; found: {}. Keep configuration, credentials and the binding out of attributes and module globals", paths(found))).with_observed(observed)
    }
}

/// No task or thread running the plugin's own code after the invocations.
pub fn no_task(obs: &HostObservation, c: Option<&str>) -> Check {
    let scan = obs.scan_invoked.as_ref();
    if let Some(p) = scan_problem(scan, "after the invocations") {
        return Check::fail(NO_TASK, c, format!("shared-runtime: {p}"));
    }
    let s = scan.cloned().unwrap_or_default();
    let mut left: Vec<String> = s
        .tasks
        .iter()
        .filter(|t| t.own)
        .map(|t| format!("task {}{}", t.task, held(&t.canaries)))
        .collect();
    left.extend(
        s.threads
            .iter()
            .filter(|t| t.own)
            .map(|t| format!("thread {}{}", t.thread, held(&t.canaries))),
    );
    let observed = json!({"tasks": s.tasks.len(), "threads": s.threads.len(), "own": left});
    if left.is_empty() {
        Check::pass(NO_TASK, c, format!("no task or thread of the plugin's own code remained ({} tasks, {} threads, all the SDK's or the interpreter's)", s.tasks.len(), s.threads.len())).with_observed(observed)
    } else {
        Check::fail(NO_TASK, c, format!("shared-runtime: expected no background work of the plugin after its invocations; found: {}. Run no tenant-bearing background work", left.join("; "))).with_observed(observed)
    }
}

fn held(found: &[Found]) -> String {
    if found.is_empty() {
        String::new()
    } else {
        format!(" (holding {})", paths(found))
    }
}

/// The runtime log names the plugin's initialization exactly once.
pub fn initialize_once(obs: &HostObservation, plugin: &str, c: Option<&str>) -> Check {
    let marker = format!("Plugin {plugin} initialized");
    let n = obs
        .runtime_log
        .lines()
        .filter(|l| l.trim_end().ends_with(&marker))
        .count();
    let observed = json!({"marker": marker, "count": n});
    if n == 1 {
        Check::pass(INIT_ONCE, c, "initialize() ran once for the worker serving both installations (the SDK's \"Plugin <id> initialized\" log line)").with_observed(observed)
    } else {
        Check::fail(INIT_ONCE, c, format!("shared-runtime: expected one \"{marker}\" in the runtime log for one worker and two installations; found {n}. Read DIR/logs/shared-runtime/ (runtime.log): a restarted worker or one initialization per installation")).with_observed(observed)
    }
}

/// Revoking A: removed, B still answers with its own configuration, and no
/// canary of A is reachable or held by a task.
pub fn revocation(obs: &HostObservation, c: Option<&str>) -> Check {
    let mut problems = Vec::new();
    match &obs.revoke {
        Some(a) if a.code == Some(0) && a.data["state"] == "removed" => {}
        Some(a) => problems.push(format!(
            "remove_plugin_installation of A answered code {:?} {}",
            a.code, a.data
        )),
        None => problems.push("A was not revoked".into()),
    }
    let after: Vec<&Call> = obs
        .calls
        .iter()
        .filter(|x| x.phase == "after-revoke")
        .collect();
    let unanswered = after.iter().any(|x| match x.runner {
        Some(_) => runner_problem(obs, x).is_some(),
        None => !answered(x),
    });
    if after.is_empty() {
        problems.push(format!(
            "no call was made to B after A was revoked (not established: no component was \
             planned for a call{})",
            not_called(obs)
        ));
    } else if unanswered {
        problems.push(format!(
            "B did not answer every call after A was revoked ({} calls)",
            after.len()
        ));
    }
    let scan = obs.scan_revoked.as_ref();
    if let Some(p) = scan_problem(scan, "after revoking A") {
        problems.push(p);
    }
    let mut held = false;
    if let Some(s) = scan {
        held = !s.found.is_empty() || s.tasks.iter().any(|t| !t.canaries.is_empty());
        if !s.found.is_empty() {
            problems.push(format!("still reachable: {}", paths(&s.found)));
        }
        for t in s.tasks.iter().filter(|t| !t.canaries.is_empty()) {
            problems.push(format!(
                "task {} still holds {}",
                t.task,
                paths(&t.canaries)
            ));
        }
    }
    let observed =
        json!({"revoke": obs.revoke.as_ref().map(|a| a.data.clone()), "calls_after": after.len()});
    if problems.is_empty() {
        Check::pass(REVOCATION, c, "revoking A left B answering and no canary of A reachable from the plugin, its modules or its tasks").with_observed(observed)
    } else {
        let advice = if held {
            ". Drop what an installation left in on_installation_revoked()"
        } else {
            ""
        };
        Check::fail(REVOCATION, c, format!("shared-runtime: expected revoking A to leave B answering and nothing of A; found: {}{advice}", problems.join("; "))).with_observed(observed)
    }
}
