//! The `discovery-rpc` gate calls every Tool, Command, EventListener and
//! KnowledgeEngine component through the genuine SDK runtime's host actions
//! (`call_tool`, `execute_command`, `emit_event`, `retrieve_knowledge`),
//! over its real loopback WebSocket, with `$PYTHON`'s SDK: our own fixture
//! plugins (`fixtures/component-plugins/`), one per kind, built with the real
//! `lbp build` by the gates `--only discovery-rpc` runs first. A component
//! that replies is recorded with its reply; one that raises its own error is
//! a warning naming it and the error's first line, never a pass.

use crate::common;

use common::{
    candidate, check, checks, detail, gate_result, make_writable, python, read_evidence,
    FixtureRepo,
};
use serde_json::{json, Value};

const GATE: &str = "discovery-rpc";

const PROFILE: &str = r#"name = "component-kinds"

[sdk]
requirement = "langbot-plugin==0.6.0b5"

[[candidate]]
path = "Components/tool-plugin"

[[candidate]]
path = "Components/command-plugin"

[[candidate]]
path = "Components/event-plugin"

[[candidate]]
path = "Components/knowledge-plugin"

[[discovery.component_probe]]
candidate = "Components/command-plugin"
component = "Command/greet"
input = { params = ["fixture"] }
"#;

/// `fixtures/component-plugins` as a git repository with one commit.
fn component_repo() -> FixtureRepo {
    common::repo_of("component-plugins", &[("component-plugins", "")])
}

/// The record of `component` in `candidates[].discovery.component_calls`.
/// Runs `--only discovery-rpc` on `repo` with the profile `text` and the
/// genuine interpreter.
fn certify(
    repo: &FixtureRepo,
    text: &str,
) -> (std::process::Output, tempfile::TempDir, std::path::PathBuf) {
    let python = python();
    let python = python.to_str().expect("a UTF-8 interpreter path");
    common::run_only_with_profile(&repo.root, GATE, text, &["--python", python])
}

fn call_record<'a>(evidence: &'a Value, folder: &str, component: &str) -> &'a Value {
    candidate(evidence, folder)["discovery"]["component_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("{folder}: no component_calls"))
        .iter()
        .find(|r| r["component"] == component)
        .unwrap_or_else(|| panic!("{folder}: no record of {component}"))
}

/// Every failed check of every gate, with its gate and candidate.
fn all_failures(ev: &Value) -> Vec<String> {
    ev["gates"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| {
            g["checks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["result"] == "fail")
                .map(move |c| {
                    format!(
                        "{}/{}/{}: {}",
                        g["id"],
                        c["name"],
                        c["candidate"],
                        detail(c)
                    )
                })
        })
        .collect()
}

#[test]
fn every_component_kind_is_called_through_the_real_runtime() {
    let repo = component_repo();
    let (_out, _keep, dir) = certify(&repo, PROFILE);
    let ev = read_evidence(&dir);
    make_writable(&dir);
    let failures = all_failures(&ev);
    assert!(failures.is_empty(), "{failures:#?}");
    // A component's own error is a warning: the gate passes, the run is no
    // clean pass.
    assert_eq!(gate_result(&ev, GATE), "pass", "{failures:#?}");

    // Tool: `echo` replied from its declared parameters (every required
    // one given a value of its type: `times` at its minimum 2).
    let echo = call_record(&ev, "tool-plugin", "Tool/echo");
    assert_eq!(echo["action"], "call_tool");
    assert_eq!(echo["input_source"], "declared");
    assert_eq!(
        echo["input"],
        json!({"text": "verify-coding-candidates component probe", "times": 2})
    );
    assert_eq!(echo["outcome"], "reply");
    assert_eq!(
        echo["reply"],
        json!({
            "echo": "verify-coding-candidates component probe verify-coding-candidates component probe",
            "launcher_id": "verify-coding-candidates"
        })
    );
    // Tool: `needs_key` raised its own error, labelled as such.
    let key = call_record(&ev, "tool-plugin", "Tool/needs_key");
    assert_eq!(key["outcome"], "component-error", "{key:#}");
    assert!(key.get("reply").is_none(), "{key:#}");
    let error = key["error"].as_str().unwrap();
    assert!(
        error.contains("RuntimeError: FIXTURE_FORECAST_API_KEY is not set"),
        "{error}"
    );
    let tools = check(&ev, GATE, "component-calls", Some("tool-plugin"));
    assert_eq!(tools["result"], "warn", "{}", detail(tools));
    assert!(
        detail(tools).contains("Tool/needs_key (call_tool) raised its own error: ActionCallError: RuntimeError: FIXTURE_FORECAST_API_KEY is not set"),
        "{}",
        detail(tools)
    );
    assert!(
        detail(tools).contains("replied: Tool/echo"),
        "{}",
        detail(tools)
    );

    // Command: the profile's arguments.
    let greet = call_record(&ev, "command-plugin", "Command/greet");
    assert_eq!(
        (&greet["action"], &greet["input_source"], &greet["outcome"]),
        (
            &json!("execute_command"),
            &json!("profile"),
            &json!("reply")
        )
    );
    assert_eq!(
        greet["reply"][0]["text"], "greet: hello fixture",
        "{greet:#}"
    );
    let c = check(&ev, GATE, "component-calls", Some("command-plugin"));
    assert_eq!(c["result"], "pass", "{}", detail(c));

    // EventListener: the synthetic private text message, handled.
    let listener = call_record(&ev, "event-plugin", "EventListener/default");
    assert_eq!(listener["action"], "emit_event");
    assert_eq!(listener["outcome"], "reply", "{listener:#}");
    assert_eq!(
        listener["reply"]["user_message_alter"],
        "seen by the fixture listener: verify-coding-candidates component probe"
    );
    let c = check(&ev, GATE, "component-calls", Some("event-plugin"));
    assert_eq!(c["result"], "pass", "{}", detail(c));

    // KnowledgeEngine: a short query.
    let notes = call_record(&ev, "knowledge-plugin", "KnowledgeEngine/notes");
    assert_eq!(notes["action"], "retrieve_knowledge");
    assert_eq!(notes["outcome"], "reply", "{notes:#}");
    assert_eq!(
        notes["reply"]["results"][0]["content"][0]["text"],
        "fixture note for: verify-coding-candidates component probe"
    );
    let c = check(&ev, GATE, "component-calls", Some("knowledge-plugin"));
    assert_eq!(c["result"], "pass", "{}", detail(c));

    // Everything listed was called: no `uncalled` warning anywhere.
    let uncalled: Vec<&Value> = checks(&ev, GATE)
        .iter()
        .filter(|c| c["name"] == "uncalled")
        .collect();
    assert!(uncalled.is_empty(), "{uncalled:#?}");
    drop(repo);
}

/// An EventListener given an event of a kind it has no handler for is
/// listed and not called: `uncalled` warns, naming it and the event;
/// `component-calls` does not pass for it. A request the SDK refuses (a
/// retrieval context whose `filters` is not a table) is a protocol-level
/// failure of the call, never the component's own error: the gate fails.
#[test]
fn an_unhandled_event_is_uncalled_and_a_refused_request_fails() {
    let repo = component_repo();
    let text = "name = \"events\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n\
        [[candidate]]\npath = \"Components/event-plugin\"\n\
        [[discovery.component_probe]]\ncandidate = \"Components/event-plugin\"\n\
        component = \"EventListener/default\"\n\
        input = { event_name = \"PersonCommandSent\", launcher_type = \"person\", launcher_id = \"u\", sender_id = \"u\", command = \"x\", params = [], text_message = \"!x\", is_admin = false }\n\
        [[candidate]]\npath = \"Components/knowledge-plugin\"\n\
        [[discovery.component_probe]]\ncandidate = \"Components/knowledge-plugin\"\n\
        component = \"KnowledgeEngine/notes\"\ninput = { query = \"q\", filters = \"not a table\" }\n";
    let (out, _keep, dir) = certify(&repo, text);
    let ev = read_evidence(&dir);
    make_writable(&dir);
    let u = check(&ev, GATE, "uncalled", Some("event-plugin"));
    assert_eq!(u["result"], "warn", "{}", detail(u));
    assert!(
        detail(u).contains(
            "EventListener/default: emit_event with a PersonCommandSent event (profile input)"
        ),
        "{}",
        detail(u)
    );
    assert!(
        checks(&ev, GATE)
            .iter()
            .all(|c| !(c["name"] == "component-calls" && c["result"] == "pass")),
        "nothing passes for an unhandled event"
    );
    let r = call_record(&ev, "event-plugin", "EventListener/default");
    assert_eq!(r["outcome"], "not-handled", "{r:#}");

    let notes = call_record(&ev, "knowledge-plugin", "KnowledgeEngine/notes");
    assert_eq!(notes["outcome"], "protocol-error", "{notes:#}");
    let error = notes["error"].as_str().unwrap();
    assert!(
        error.contains("validation error for RetrievalContext"),
        "{error}"
    );
    let c = check(&ev, GATE, "component-calls", Some("knowledge-plugin"));
    assert_eq!(c["result"], "fail", "{}", detail(c));
    assert!(
        detail(c).contains("KnowledgeEngine/notes: the retrieve_knowledge call failed: ActionCallError: ValidationError: 1 validation error for RetrievalContext"),
        "{}",
        detail(c)
    );
    assert_eq!(gate_result(&ev, GATE), "fail");
    assert_eq!(out.status.code(), Some(1));
    drop(repo);
}
