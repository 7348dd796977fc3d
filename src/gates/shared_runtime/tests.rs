//! The decide functions on observations the host really made with
//! langbot-plugin 0.7.18 (observed/*.json: our fixtures under
//! fixtures/shared-runtime/Shared, run by src/python/shared_runtime_host.py),
//! and on synthetic ones that must fail.

use super::decide::{self, *};
use super::observe::{HostObservation, Process};
use super::{applicability, sdk_check, Applicability};
use crate::evidence::{Check, CheckResult};

fn observed(name: &str) -> HostObservation {
    let text = match name {
        "stateless" => include_str!("observed/stateless-plugin.json"),
        "copies-config" => include_str!("observed/copies-config-plugin.json"),
        "key-on-self" => include_str!("observed/key-on-self-plugin.json"),
        "module-cache" => include_str!("observed/module-cache-plugin.json"),
        "background-task" => include_str!("observed/background-task-plugin.json"),
        "not-reentrant" => include_str!("observed/not-reentrant-plugin.json"),
        "stateless-runner" => include_str!("observed/stateless-runner-plugin.json"),
        "runner-config-on-self" => include_str!("observed/runner-config-on-self-plugin.json"),
        "stateless-parser" => include_str!("observed/stateless-parser-plugin.json"),
        "outbound-stateless" => include_str!("observed/outbound-stateless-plugin.json"),
        "outbound-cached-endpoint" => {
            include_str!("observed/outbound-cached-endpoint-plugin.json")
        }
        "parser-config-on-self" => include_str!("observed/parser-config-on-self-plugin.json"),
        other => panic!("no observation {other}"),
    };
    serde_json::from_str(text).expect("observation parses")
}

fn run(name: &str) -> Vec<Check> {
    let plugin = format!("langbot-fixtures/shared-{name}");
    let plugin = match name {
        "outbound-stateless" => "langbot-fixtures/shared-outbound".into(),
        "outbound-cached-endpoint" => "langbot-fixtures/shared-outbound-cached".into(),
        _ => plugin,
    };
    decide::decide(&observed(name), name, &plugin)
}

fn result<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}"))
}

fn failing(checks: &[Check]) -> Vec<&str> {
    checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
        .map(|c| c.name.as_str())
        .collect()
}

#[test]
fn the_stateless_fixture_passes_every_clause() {
    let checks = run("stateless");
    assert_eq!(checks.len(), 8);
    assert!(failing(&checks).is_empty(), "{:#?}", checks);
    assert!(result(&checks, PLACEMENT)
        .detail
        .contains("shared-runtime-v1"));
}

#[test]
fn copying_config_in_initialize_fails_own_configuration() {
    let checks = run("copies-config");
    assert_eq!(failing(&checks), [OWN_CONFIG]);
    let detail = &result(&checks, OWN_CONFIG).detail;
    assert!(
        detail.contains("without its own configuration (field api_key = \"\""),
        "{detail}"
    );
    assert!(!detail.contains("not a finding"), "{detail}");
}

/// The stateless fixture's observation with every canary and configuration
/// field taken out of the replies and logs: what a plugin that never shows
/// its configuration looks like.
fn showing_no_configuration() -> HostObservation {
    let mut obs = observed("stateless");
    for call in &mut obs.calls {
        call.reply = serde_json::json!({"tool_response": {"text": "vcc"}});
    }
    obs.logs.clear();
    obs
}

/// `own-configuration` failed as "not established" for both installations.
fn assert_not_established(check: &Check) {
    assert_eq!(check.result, CheckResult::Fail);
    assert!(
        check.detail.contains("not established for A, B"),
        "{}",
        check.detail
    );
}

#[test]
fn a_plugin_that_never_shows_its_configuration_is_not_established_and_not_blamed() {
    let mut obs = showing_no_configuration();
    obs.config_declared = Some(1);
    let check = own_configuration(&obs, Some("x"));
    assert_not_established(&check);
    assert!(
        check.detail.contains("not a finding against its code"),
        "{}",
        check.detail
    );
    assert!(
        !check.detail.contains("never from a copy"),
        "{}",
        check.detail
    );
    obs.config_declared = None;
    assert_eq!(own_configuration(&obs, Some("x")).result, CheckResult::Fail);
}

/// A plugin whose replies show nothing of its configuration is established
/// by what it sends out: each installation's endpoint requested (DNS query,
/// HTTP request with its key) while only its own invocation ran.
#[test]
fn requests_to_its_own_endpoint_establish_own_configuration_and_nothing_else_fails() {
    let checks = run("outbound-stateless");
    assert!(failing(&checks).is_empty(), "{checks:#?}");
    let detail = &result(&checks, OWN_CONFIG).detail;
    for label in ["A", "B"] {
        let shown = format!(
            "{label} in an outbound DNS query for vcc-canary-{}-endpoint-",
            label.to_lowercase()
        );
        assert!(detail.contains(&shown), "{detail}");
    }
    // Without the sink's events nothing else shows it: not established.
    let mut obs = observed("outbound-stateless");
    obs.outbound.events.clear();
    let check = own_configuration(&obs, Some("x"));
    assert_not_established(&check);
    assert!(
        check
            .detail
            .contains("no outbound query or connection reached the sink"),
        "{}",
        check.detail
    );
}

/// A's endpoint requested while only B's invocation ran: a finding of
/// `own-configuration` and a leak, each named once with its count.
#[test]
fn a_request_to_the_other_installations_endpoint_fails_naming_the_request() {
    let checks = run("outbound-cached-endpoint");
    let own = &result(&checks, OWN_CONFIG).detail;
    assert!(
        own.contains(
            "an invocation for B sent out A's configuration (DNS query for vcc-canary-a-endpoint-"
        ),
        "{own}"
    );
    assert!(own.contains("never from a copy"), "{own}");
    let cross = &result(&checks, NO_CROSS).detail;
    assert!(
        cross.contains("in an outbound HTTP request `GET /v1/search HTTP/1.1` to port 80 while only B's invocations ran"),
        "{cross}"
    );
    assert!(cross.contains(" times)"), "{cross}");
    assert_eq!(result(&checks, NO_CROSS).result, CheckResult::Fail);
}

/// A host call made with an installation's binding that carries its own
/// canary establishes it, as a reply would.
#[test]
fn a_host_call_carrying_its_own_canary_establishes_own_configuration() {
    let mut obs = showing_no_configuration();
    obs.config_declared = Some(1);
    use base64::Engine as _;
    for inst in obs.installations.clone() {
        // As the SDK stores it: base64 on the wire, decoded by the host.
        let canary = inst.canaries()[0].to_string();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&canary);
        obs.host_calls.push(super::observe::HostCall {
            installation_uuid: Some(inst.uuid().to_string()),
            action: "set_binary_storage".into(),
            data: serde_json::json!({"key": "k", "value_base64": b64}),
            decoded: Some(canary),
        });
    }
    let mut undecoded = obs.clone();
    for h in &mut undecoded.host_calls {
        h.decoded = None;
    }
    let not = own_configuration(&undecoded, Some("x"));
    assert_eq!(
        not.result,
        CheckResult::Fail,
        "base64 alone shows no canary"
    );
    let check = own_configuration(&obs, Some("x"));
    assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
    assert!(
        check
            .detail
            .contains("A in host call set_binary_storage made with its binding"),
        "{}",
        check.detail
    );
}

#[test]
fn a_manifest_without_configuration_passes_own_configuration_vacuously_and_only_then() {
    let mut obs = showing_no_configuration();
    obs.config_declared = Some(0);
    let check = own_configuration(&obs, Some("x"));
    assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
    assert!(check.detail.starts_with("vacuous"), "{}", check.detail);
    // A reply carrying the other installation's canary still fails the
    // clause that looks for it, whatever the manifest declares.
    let mut crossed = observed("key-on-self");
    crossed.config_declared = Some(0);
    assert!(failing(&decide::decide(&crossed, "x", "p")).contains(&NO_CROSS));
}

#[test]
fn a_configuration_seen_only_in_the_plugin_log_establishes_the_clause() {
    let mut obs = showing_no_configuration();
    obs.config_declared = Some(1);
    for i in obs.installations.clone() {
        let canary = i.config.values().next().unwrap().clone();
        obs.logs.insert(
            i.label.clone(),
            serde_json::json!([format!("using key {canary}")]),
        );
    }
    let check = own_configuration(&obs, Some("x"));
    assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
}

#[test]
fn the_key_on_self_fails_and_names_the_attribute() {
    let checks = run("key-on-self");
    let f = failing(&checks);
    assert!(
        f.contains(&OWN_CONFIG) && f.contains(&NO_CROSS) && f.contains(&NOTHING_KEPT),
        "{f:?}"
    );
    assert!(result(&checks, NOTHING_KEPT)
        .detail
        .contains("component object Whoami.api_key"));
    assert!(result(&checks, NO_CROSS)
        .detail
        .contains("concurrent reply"));
}

#[test]
fn a_module_cache_keyed_by_nothing_fails_and_names_the_global() {
    let checks = run("module-cache");
    let f = failing(&checks);
    assert!(
        f.contains(&NO_CROSS) && f.contains(&NOTHING_KEPT) && f.contains(&REVOCATION),
        "{f:?}"
    );
    assert!(result(&checks, NOTHING_KEPT)
        .detail
        .contains("module components.tool.whoami._CACHE['config']['api_key']"));
    assert!(result(&checks, REVOCATION).detail.contains("_CACHE"));
    assert!(result(&checks, REVOCATION)
        .detail
        .contains("on_installation_revoked()"));
}

#[test]
fn no_call_after_revocation_is_not_established_and_gives_no_advice_on_held_state() {
    // A plugin whose components the gate has no call for (a Parser, a
    // Page): nothing answered after A's revocation, so nothing is
    // established, and nothing was found held either.
    let mut obs = observed("stateless");
    obs.calls.clear();
    let check = revocation(&obs, None);
    assert_eq!(check.result, CheckResult::Fail);
    assert!(check.detail.contains("not established"), "{}", check.detail);
    assert!(
        !check.detail.contains("on_installation_revoked"),
        "{}",
        check.detail
    );
}

#[test]
fn a_background_task_holding_the_binding_fails_and_names_the_task() {
    let checks = run("background-task");
    let f = failing(&checks);
    assert!(f.contains(&NO_TASK) && f.contains(&REVOCATION), "{f:?}");
    assert!(result(&checks, NO_TASK)
        .detail
        .contains("task _keep_alive (/plugin/components/tool/whoami.py)"));
    assert!(result(&checks, NO_TASK)
        .detail
        .contains("local config['api_key']"));
}

#[test]
fn a_component_that_is_not_re_entrant_fails_concurrent_invocations() {
    let checks = run("not-reentrant");
    assert_eq!(failing(&checks), [CONCURRENT]);
    assert!(result(&checks, CONCURRENT)
        .detail
        .contains("whoami is busy"));
}

#[test]
fn the_stateless_runner_passes_every_clause_on_its_invocation_config_canaries() {
    let checks = run("stateless-runner");
    assert!(failing(&checks).is_empty(), "{:#?}", checks);
    let obs = observed("stateless-runner");
    // No plugin config: the Runner's invocation-config canaries establish it.
    assert!(obs.installations.iter().all(|i| i.config.is_empty()));
    assert!(obs
        .installations
        .iter()
        .all(|i| i.runner_config["echo"]["token"]
            .starts_with(&format!("vcc-canary-{}-token-", i.label))));
    let own = result(&checks, OWN_CONFIG);
    assert!(!own.detail.starts_with("vacuous"), "{}", own.detail);
    assert!(
        own.detail
            .contains("1 canaried Runner invocation-config field"),
        "{}",
        own.detail
    );
    let conc = result(&checks, CONCURRENT);
    assert!(
        conc.detail.contains("Runner run(s) streamed to their end"),
        "{}",
        conc.detail
    );
    assert!(conc.detail.contains("(completed)"), "{}", conc.detail);
}

#[test]
fn a_runner_keeping_its_run_config_on_self_fails_naming_the_attribute_and_the_leak() {
    let checks = run("runner-config-on-self");
    let f = failing(&checks);
    assert!(
        f.contains(&OWN_CONFIG) && f.contains(&NO_CROSS) && f.contains(&NOTHING_KEPT),
        "{f:?}"
    );
    let kept = &result(&checks, NOTHING_KEPT).detail;
    assert!(
        kept.contains("component object Echo.last_config['token']"),
        "{kept}"
    );
    let cross = &result(&checks, NO_CROSS).detail;
    assert!(
        cross.contains("in the concurrent reply of Runner/echo to A"),
        "{cross}"
    );
}

#[test]
fn the_stateless_parser_passes_every_clause_each_document_uploaded_under_its_own_key() {
    let checks = run("stateless-parser");
    assert!(failing(&checks).is_empty(), "{:#?}", checks);
    let obs = observed("stateless-parser");
    let parses: Vec<_> = obs
        .calls
        .iter()
        .filter(|c| c.component == "Parser/text")
        .collect();
    assert_eq!(parses.len(), 5, "A, B, both at once, B after revoking A");
    let keys: std::collections::BTreeSet<_> = parses
        .iter()
        .map(|c| c.document.as_ref().unwrap()["file_key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 5, "a file key per call: {keys:?}");
    for call in parses {
        let me = obs
            .installations
            .iter()
            .find(|i| i.label == call.installation)
            .unwrap();
        let text = call.reply["text"].as_str().unwrap_or("");
        assert!(text.contains(&me.config["tag"]), "{text}");
        assert!(
            text.contains("verify-coding-candidates parser probe"),
            "{text}"
        );
        assert_eq!(call.document.as_ref().unwrap()["mime_type"], "text/plain");
    }
    let own = result(&checks, OWN_CONFIG);
    assert!(
        own.detail.contains("1 canaried plugin field"),
        "{}",
        own.detail
    );
    assert!(result(&checks, CONCURRENT)
        .detail
        .contains("2 of them with A and B at once"));
}

#[test]
fn a_parser_keeping_its_config_on_self_fails_naming_the_attribute_and_the_leak() {
    let checks = run("parser-config-on-self");
    let f = failing(&checks);
    assert!(
        f.contains(&OWN_CONFIG) && f.contains(&NO_CROSS) && f.contains(&NOTHING_KEPT),
        "{f:?}"
    );
    let kept = &result(&checks, NOTHING_KEPT).detail;
    assert!(kept.contains("component object TextParser.tag"), "{kept}");
    let cross = &result(&checks, NO_CROSS).detail;
    assert!(cross.contains("reply of Parser/text to"), "{cross}");
}

#[test]
fn a_parser_is_served_the_first_declared_type_the_gate_serves_else_it_is_not_called() {
    use super::run::parser_call;
    use crate::gates::discovery_rpc::spec::ComponentId;
    let comp = ComponentId {
        kind: "Parser".into(),
        name: "general_parsers".into(),
    };
    let spec = serde_json::json!({"supported_mime_types": [
        "application/pdf", "text/markdown", "text/plain"]});
    let call = parser_call(&comp, Some(&spec), "a", "n").unwrap();
    assert_eq!(call["action"], "parse_document");
    assert_eq!(call["data"]["context"]["mime_type"], "text/markdown");
    assert_eq!(call["document"]["extension"], "md");
    assert_eq!(call["data"]["plugin_author"], "a");
    assert!(call["data"]["context"].get("file_key").is_none());
    let pdf = serde_json::json!({"supported_mime_types": ["application/pdf"]});
    let why = parser_call(&comp, Some(&pdf), "a", "n").unwrap_err();
    assert!(why.contains("Parser/general_parsers: not called"), "{why}");
    assert!(why.contains("(application/pdf)"), "{why}");
    let none = parser_call(&comp, None, "a", "n").unwrap_err();
    assert!(none.contains("(none)"), "{none}");
    // The reason reaches the clauses that have no call to judge.
    let mut obs = observed("stateless-parser");
    obs.calls.clear();
    obs.not_called = vec![why.clone()];
    assert!(concurrent(&obs, None).detail.contains(&why));
    assert!(revocation(&obs, None).detail.contains(&why));
}

/// The stateless Runner's observation with every run of `phase` (for
/// installation `label`, or both) ended by `run.failed` with `code`.
fn runner_failing(phase: &str, label: Option<&str>, code: &str) -> HostObservation {
    let mut obs = observed("stateless-runner");
    for call in obs
        .calls
        .iter_mut()
        .filter(|c| c.phase == phase && label.is_none_or(|l| c.installation == l))
    {
        let run = call.runner.as_mut().unwrap();
        run.result_types = vec!["run.failed".into()];
        run.failed = Some(super::observe::RunFailure {
            code: Some(code.into()),
            error: Some("echo is busy".into()),
        });
    }
    obs
}

#[test]
fn a_runner_completing_alone_and_failing_at_once_fails_concurrent_invocations() {
    let obs = runner_failing("concurrent", Some("B"), "echo.busy");
    let check = concurrent(&obs, None);
    assert_eq!(check.result, CheckResult::Fail);
    assert!(
        check.detail.contains("concurrent Runner/echo for B ended run.failed echo.busy (echo is busy) while it ended completed alone"),
        "{}",
        check.detail
    );
}

#[test]
fn a_runner_failing_alike_in_every_phase_is_not_called_non_re_entrant() {
    let mut obs = runner_failing("sequential", None, "echo.invalid_config");
    for phase in ["concurrent", "after-revoke"] {
        for call in obs.calls.iter_mut().filter(|c| c.phase == phase) {
            let run = call.runner.as_mut().unwrap();
            run.result_types = vec!["run.failed".into()];
            run.failed = Some(super::observe::RunFailure {
                code: Some("echo.invalid_config".into()),
                error: None,
            });
        }
    }
    let check = concurrent(&obs, None);
    assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
    assert!(
        check.detail.contains("run.failed echo.invalid_config"),
        "{}",
        check.detail
    );
    assert_eq!(revocation(&obs, None).result, CheckResult::Pass);
}

#[test]
fn a_runner_stream_that_never_ended_or_a_failed_request_is_never_a_pass() {
    let mut obs = observed("stateless-runner");
    obs.calls
        .iter_mut()
        .find(|c| c.phase == "concurrent")
        .unwrap()
        .runner
        .as_mut()
        .unwrap()
        .ended = false;
    let check = concurrent(&obs, None);
    assert_eq!(check.result, CheckResult::Fail);
    assert!(
        check.detail.contains("the stream did not end"),
        "{}",
        check.detail
    );
    let mut obs = observed("stateless-runner");
    let after = obs
        .calls
        .iter_mut()
        .find(|c| c.phase == "after-revoke")
        .unwrap();
    after.code = Some(1);
    assert_eq!(revocation(&obs, None).result, CheckResult::Fail);
    // Without the sequential run there is nothing to compare with.
    let mut obs = observed("stateless-runner");
    obs.calls.retain(|c| c.phase != "sequential");
    let check = concurrent(&obs, None);
    assert_eq!(check.result, CheckResult::Fail);
    assert!(check.detail.contains("not established"), "{}", check.detail);
}

#[test]
fn runner_canaries_count_like_configuration_canaries() {
    // A reply carrying the other installation's Runner canary is a finding.
    let mut obs = observed("stateless-runner");
    let b_token = obs.installations[1].runner_config["echo"]["token"].clone();
    let a_call = obs
        .calls
        .iter_mut()
        .find(|c| c.phase == "sequential" && c.installation == "A")
        .unwrap();
    a_call.reply = serde_json::json!([{"type": "run.completed", "data": {"message": {"content": format!("token={b_token}")}}}]);
    assert_eq!(own_configuration(&obs, None).result, CheckResult::Fail);
    assert!(no_cross(&obs, None).detail.contains(&b_token));
    // A Runner's reply showing its invocation-config field by name with a
    // value that is not its canary (a copy kept from elsewhere) is a finding.
    let mut obs = observed("stateless-runner");
    let b_call = obs
        .calls
        .iter_mut()
        .find(|c| c.phase == "concurrent" && c.installation == "B")
        .unwrap();
    b_call.reply = serde_json::json!([{"type": "run.completed", "data": {"token": ""}}]);
    let check = own_configuration(&obs, None);
    assert!(
        check.detail.contains("field token = \"\""),
        "{}",
        check.detail
    );
    // Without any canary (no plugin or Runner string field) it is vacuous.
    let mut obs = observed("stateless-runner");
    obs.config_declared = Some(0);
    assert!(!own_configuration(&obs, None).detail.starts_with("vacuous"));
    for i in &mut obs.installations {
        i.runner_config.clear();
    }
    assert!(own_configuration(&obs, None).detail.starts_with("vacuous"));
}

#[test]
fn two_workers_fail_placement_and_every_other_clause_follows_from_it() {
    let mut obs = observed("stateless");
    obs.workers_invoked.push(Process {
        pid: 9,
        ppid: 8,
        kind: "worker".into(),
    });
    let checks = decide::decide(&obs, "x", "langbot-fixtures/shared-stateless");
    assert_eq!(failing(&checks).len(), 8);
    assert!(result(&checks, PLACEMENT)
        .detail
        .contains("2 after the invocations"));
    assert_eq!(
        result(&checks, REVOCATION).consequence_of.as_deref(),
        Some(PLACEMENT)
    );
}

#[test]
fn a_worker_launched_with_a_read_only_tmp_names_the_sdk_as_the_cause() {
    // langbot-plugin 0.7.18 mounts a tmpfs at the shared worker's /tmp;
    // 0.7.4 mounts nothing there, and its worker never registers.
    let mut obs = observed("stateless-parser");
    let launch = obs.launches.iter().find(|l| l.kind == "worker").unwrap();
    assert!(launch.sdk_args.contains(&"--tmpfsmount".to_string()));
    assert_eq!(worker_tmp_read_only(&obs.launches), Some(false));
    for s in obs.status.values_mut() {
        s.clear();
    }
    let unwritable = "nothing writable at /tmp";
    let check = placement(&obs, None);
    assert_eq!(check.result, CheckResult::Fail);
    assert!(!check.detail.contains(unwritable), "{}", check.detail);
    for l in obs.launches.iter_mut().filter(|l| l.kind == "worker") {
        let at = l.sdk_args.iter().position(|a| a == "--tmpfsmount").unwrap();
        l.sdk_args.drain(at..at + 2);
    }
    assert_eq!(worker_tmp_read_only(&obs.launches), Some(true));
    let check = placement(&obs, None);
    assert!(
        check.detail.contains(unwritable)
            && check.detail.contains("/tmp/lbp-rpc")
            && check.detail.contains("not of the plugin"),
        "{}",
        check.detail
    );
    // Registered anyway (a /tmp the worker never needed): no such cause.
    let mut registered = observed("stateless-parser");
    registered.launches = obs.launches.clone();
    assert!(!placement(&registered, None).detail.contains(unwritable));
    assert_eq!(worker_tmp_read_only(&[]), None);
}

#[test]
fn a_missing_or_failed_scan_is_never_a_pass() {
    let mut obs = observed("stateless");
    obs.scan_invoked = None;
    assert_eq!(nothing_kept(&obs, None).result, CheckResult::Fail);
    assert_eq!(no_task(&obs, None).result, CheckResult::Fail);
    let mut obs = observed("stateless");
    obs.scan_revoked.as_mut().unwrap().error = Some("no report within 30 s".into());
    assert!(revocation(&obs, None)
        .detail
        .contains("no report within 30 s"));
    let mut obs = observed("stateless");
    obs.scan_invoked.as_mut().unwrap().truncated = true;
    assert_eq!(nothing_kept(&obs, None).result, CheckResult::Fail);
}

#[test]
fn a_canary_in_a_host_call_or_the_other_installations_logs_fails() {
    let mut obs = observed("stateless");
    let a_key = obs.installations[0].config["api_key"].clone();
    obs.logs.insert(
        "B".into(),
        serde_json::json!({"data": {"logs": [{"text": format!("key {a_key}")}]}}),
    );
    assert!(no_cross(&obs, None).detail.contains("in B's plugin logs"));
    let mut obs = observed("stateless");
    let b_uuid = obs.installations[1].uuid().to_string();
    obs.host_calls.push(super::observe::HostCall {
        installation_uuid: Some(b_uuid),
        action: "get_plugin_storage".into(),
        data: serde_json::json!({"k": a_key}),
        decoded: None,
    });
    assert!(no_cross(&obs, None)
        .detail
        .contains("host call get_plugin_storage made for B"));
    let mut obs = observed("stateless");
    obs.logs.clear();
    assert_eq!(no_cross(&obs, None).result, CheckResult::Fail);
}

#[test]
fn two_initializations_fail_initialize_once() {
    let mut obs = observed("stateless");
    obs.runtime_log.push_str("\n[x] controller.py (456) - [INFO] : Plugin langbot-fixtures/shared-stateless initialized\n");
    assert!(
        initialize_once(&obs, "langbot-fixtures/shared-stateless", None)
            .detail
            .contains("found 2")
    );
}

#[test]
fn no_concurrent_call_or_a_refused_revocation_is_not_established() {
    let mut obs = observed("stateless");
    obs.calls.retain(|c| c.phase != "concurrent");
    assert!(concurrent(&obs, None).detail.contains("not established"));
    let mut obs = observed("stateless");
    obs.revoke.as_mut().unwrap().code = Some(1);
    assert_eq!(revocation(&obs, None).result, CheckResult::Fail);
}

#[test]
fn only_claiming_candidates_are_part_of_the_gate() {
    let claims = vec![
        ("a".to_string(), Some("shared-runtime-v1".to_string())),
        ("b".to_string(), None),
    ];
    assert_eq!(
        applicability(&claims),
        Applicability::Candidates(vec!["a".into()])
    );
    let none = vec![("b".to_string(), None)];
    assert!(
        matches!(applicability(&none), Applicability::NotApplicable(r) if r.contains("no candidate's manifest claims"))
    );
}

#[test]
fn an_sdk_without_a_shared_runtime_fails_the_claim() {
    let check = sdk_check("Runner/codex-agent", "0.6.0b5", false);
    assert_eq!(check.result, CheckResult::Fail);
    assert!(
        check.detail.contains("0.6.0b5")
            && check.detail.contains("Runner/codex-agent/manifest.yaml")
    );
    assert_eq!(sdk_check("x", "0.7.18", true).result, CheckResult::Pass);
}

#[test]
fn a_page_is_not_called_for_the_reason_that_it_names_no_installation() {
    use crate::gates::discovery_rpc::spec::{ComponentId, ComponentPlan};
    let plan = |kind: &str, not_called: Option<&str>| ComponentPlan {
        component: ComponentId {
            kind: kind.into(),
            name: "x".into(),
        },
        action: None,
        source: String::new(),
        input: serde_json::Value::Null,
        not_called: not_called.map(str::to_string),
    };
    let why = super::run::plans_not_called(&[
        plan(
            "Page",
            Some("the gate has no host action for a Page component"),
        ),
        plan("Tool", None),
        plan("Command", Some("bad input")),
        plan("Parser", Some("a Parser's reason is parser_calls'")),
    ]);
    assert_eq!(
        why,
        vec![
            format!("Page/x: {}", super::run::PAGE_NOT_CALLED),
            "Command/x: bad input".to_string(),
        ]
    );
    assert!(why[0].contains("names no installation"), "{why:?}");
}

#[test]
fn network_exposure_passes_in_a_private_namespace_and_warns_naming_the_attempts_without_one() {
    use crate::netns::{NetKind, NetPlan};
    let private = NetPlan {
        kind: NetKind::UnshareNet,
        wrapper: vec!["/usr/bin/unshare".into(), "--net".into(), "--".into()],
        ip: Some("/usr/sbin/ip".into()),
        attempts: vec!["unshare --net: ok".into()],
    };
    let c = super::run::exposure("R/a", &private);
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail.contains("private network namespace"),
        "{}",
        c.detail
    );
    let none = NetPlan {
        kind: NetKind::None,
        wrapper: Vec::new(),
        ip: None,
        attempts: vec!["unshare --net: Operation not permitted".into()],
    };
    let c = super::run::exposure("R/a", &none);
    assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
    assert!(
        c.detail.contains("0.0.0.0") && c.detail.contains("Operation not permitted"),
        "{}",
        c.detail
    );
}
