//! Exercising the Tool, Command, EventListener and KnowledgeEngine
//! components through the runtime's host actions, and judging what came
//! back.
//!
//! Host actions (`langbot_plugin.runtime.io.handlers.control`,
//! `ControlConnectionHandler`, 0.6.0b5): `call_tool` (answers
//! `{tool_response}`), `execute_command` (streams one `CommandReturn` per
//! chunk), `emit_event` (answers `{emitted_plugins, event_context, ...}`) and
//! `retrieve_knowledge` (answers the `RetrievalResponse`). The runtime relays
//! each to the plugin's worker (`runtime.io.handlers.plugin`), whose handler
//! (`cli.run.handler`) calls the component.
//!
//! Planning ([`plan`]) and judging ([`judge`], [`check`]) are pure; the host
//! only sends [`request`] and keeps what the runtime answered.

use super::spec::{ComponentCall, ComponentId, ComponentPlan};
use crate::evidence::Check;
use crate::profile::ComponentProbeSpec;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The text of every synthetic input (command text, event message, query).
pub const PROBE_TEXT: &str = "verify-coding-candidates component probe";

/// The event an EventListener gets when the profile names none: a private
/// message judged worth handling (`events.PersonNormalMessageReceived`).
pub const DEFAULT_EVENT: &str = "PersonNormalMessageReceived";

/// The host action that calls a component of `kind`, if the gate uses one.
pub fn action_for(kind: &str) -> Option<&'static str> {
    match kind {
        "Tool" => Some("call_tool"),
        "Command" => Some("execute_command"),
        "EventListener" => Some("emit_event"),
        "KnowledgeEngine" => Some("retrieve_knowledge"),
        _ => None,
    }
}

/// One plan per declared component that is not a Runner (Runners are
/// probed by `run_runner`): the profile's input when it declares one, else
/// an input the component's own declaration allows; a kind the gate has no
/// host action for is planned as not called, saying why.
pub fn plan(
    declared: &[ComponentId],
    specs: &BTreeMap<ComponentId, Value>,
    probes: &[&ComponentProbeSpec],
) -> Vec<ComponentPlan> {
    declared
        .iter()
        .filter(|c| c.kind != "Runner")
        .map(|c| {
            let mut p = ComponentPlan {
                component: c.clone(),
                action: action_for(&c.kind).map(str::to_string),
                source: String::new(),
                input: Value::Null,
                not_called: None,
            };
            if p.action.is_none() {
                p.not_called = Some(format!(
                    "the gate has no host action for a {} component (it calls Tool, Command, EventListener and KnowledgeEngine components)",
                    c.kind
                ));
                return p;
            }
            let given = probes.iter().find(|s| s.component == c.to_string());
            let input = match given {
                Some(s) => {
                    p.source = "profile".into();
                    serde_json::to_value(&s.input)
                        .map_err(|e| e.to_string())
                        .and_then(|v| profile_input(&c.kind, v))
                }
                None => {
                    p.source = "declared".into();
                    Ok(declared_input(
                        &c.kind,
                        specs.get(c).unwrap_or(&Value::Null),
                    ))
                }
            };
            match input {
                Ok(v) => p.input = v,
                Err(e) => {
                    p.not_called = Some(format!(
                        "the profile's [[discovery.component_probe]] input for {c} cannot be used: {e}"
                    ))
                }
            }
            p
        })
        .collect()
}

/// The profile's input, checked for the shape its kind needs.
fn profile_input(kind: &str, v: Value) -> Result<Value, String> {
    match kind {
        "Command" => match v.get("params") {
            None => Ok(json!({"params": []})),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => Ok(v),
            Some(_) => Err("`params` must be a list of strings".into()),
        },
        "EventListener" => match v.get("event_name") {
            Some(Value::String(_)) => Ok(v),
            _ => Err("an event needs `event_name` (an event class of langbot_plugin.api.entities.events)".into()),
        },
        "KnowledgeEngine" => match v.get("query") {
            Some(Value::String(_)) => Ok(v),
            _ => Err("a retrieval context needs `query` (a string)".into()),
        },
        _ => Ok(v),
    }
}

/// An input the component's declaration allows: a Tool's parameters with
/// every required property given a value of its type; a Command with no
/// arguments; a private text message for an EventListener; a short query
/// for a KnowledgeEngine.
pub fn declared_input(kind: &str, spec: &Value) -> Value {
    match kind {
        "Tool" => schema_value(&spec["parameters"], 0),
        "Command" => json!({"params": []}),
        "EventListener" => default_event(),
        "KnowledgeEngine" => json!({"query": PROBE_TEXT}),
        _ => Value::Null,
    }
}

/// A value the JSON schema accepts, built from what it declares: `const`,
/// then `default`, then the first of `enum` or `examples`, then a value of
/// its (first non-null) `type`; an object gets every `required` property;
/// an array gets `minItems` items. Depth is bounded.
pub fn schema_value(schema: &Value, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    if let Some(v) = schema.get("const") {
        return v.clone();
    }
    if let Some(v) = schema.get("default") {
        return v.clone();
    }
    for key in ["enum", "examples"] {
        if let Some(v) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return v.clone();
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema.get(key).and_then(Value::as_array).and_then(|a| {
            a.iter()
                .find(|s| s.get("type") != Some(&json!("null")))
                .or_else(|| a.first())
        }) {
            return schema_value(first, depth + 1);
        }
    }
    let ty = match &schema["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "object",
    };
    match ty {
        "string" => Value::String(PROBE_TEXT.into()),
        "integer" => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "number" => json!(schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
        "boolean" => Value::Bool(true),
        "null" => Value::Null,
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema_value(schema.get("items").unwrap_or(&Value::Null), depth + 1);
            Value::Array((0..n.min(4)).map(|_| item.clone()).collect())
        }
        _ => {
            let mut out = serde_json::Map::new();
            let props = schema.get("properties").cloned().unwrap_or_default();
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                out.insert(
                    name.to_string(),
                    schema_value(props.get(name).unwrap_or(&Value::Null), depth + 1),
                );
            }
            Value::Object(out)
        }
    }
}

/// The synthetic private text message of [`DEFAULT_EVENT`], in the shape
/// `EventContext.model_validate` reads (observed from the SDK's own
/// `model_dump` of that event).
fn default_event() -> Value {
    let chain = json!([{"type": "Plain", "text": PROBE_TEXT}]);
    json!({
        "event_name": DEFAULT_EVENT,
        "launcher_type": "person",
        "launcher_id": "verify-coding-candidates",
        "sender_id": "verify-coding-candidates",
        "text_message": PROBE_TEXT,
        "message_event": {
            "type": "FriendMessage",
            "sender": {"id": "verify-coding-candidates", "nickname": "verify-coding-candidates", "remark": ""},
            "message_chain": chain,
            "time": null
        },
        "message_chain": chain
    })
}

/// The session a Tool or Command call carries (`provider.session.Session`:
/// a private chat; the runtime fills in the workspace scope from the
/// installation binding).
fn session() -> Value {
    json!({
        "launcher_type": "person",
        "launcher_id": "verify-coding-candidates",
        "sender_id": "verify-coding-candidates"
    })
}

/// The `data` of the host action that calls `plan`'s component of plugin
/// `author/name`, scoped to that plugin (`include_plugins`); `None` when it
/// is not called.
pub fn request(plan: &ComponentPlan, author: &str, name: &str) -> Option<Value> {
    if plan.not_called.is_some() {
        return None;
    }
    let plugin = format!("{author}/{name}");
    let c = &plan.component;
    Some(match c.kind.as_str() {
        "Tool" => json!({
            "tool_name": c.name, "tool_parameters": plan.input, "session": session(),
            "query_id": 0, "include_plugins": [plugin],
        }),
        "Command" => {
            let params: Vec<String> = plan.input["params"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str().map(str::to_string))
                .collect();
            let text = std::iter::once(c.name.clone())
                .chain(params.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ");
            json!({
                "command_context": {
                    "query_id": 0, "session": session(), "command_text": text,
                    "full_command_text": format!("!{text}"), "command": c.name,
                    "crt_command": c.name, "params": params, "crt_params": params,
                    "privilege": 1,
                },
                "include_plugins": [plugin],
            })
        }
        "EventListener" => json!({
            "event_context": {
                "query_id": 0, "eid": 0, "event_name": plan.input["event_name"],
                "event": plan.input,
            },
            "include_plugins": [plugin],
        }),
        "KnowledgeEngine" => json!({
            "plugin_author": author, "plugin_name": name, "retriever_name": c.name,
            "retrieval_context": plan.input,
        }),
        _ => return None,
    })
}

/// What one call came to, judged from what the runtime answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The component answered with a reply.
    Reply,
    /// The component raised its own error, relayed by the runtime: a
    /// warning naming the component and the error's first line.
    ComponentError,
    /// The call itself failed (no answer, the runtime or the SDK refused
    /// the request, a timeout): a failure.
    ProtocolError,
    /// Answered without an error and without a reply: a failure.
    NoReply,
    /// An EventListener the runtime reported as not having handled the
    /// event (no handler for that kind): listed and not exercised.
    NotHandled,
}

impl Outcome {
    /// The label in the evidence.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Reply => "reply",
            Outcome::ComponentError => "component-error",
            Outcome::ProtocolError => "protocol-error",
            Outcome::NoReply => "no-reply",
            Outcome::NotHandled => "not-handled",
        }
    }
}

/// Exception classes of the SDK's own validation of the host's request
/// (a `ValidationError` naming one of these models refuses the request, not
/// the component).
const REQUEST_MODELS: [&str; 6] = [
    "ExecuteContextProxy",
    "ExecuteContext",
    "EventContextProxy",
    "EventContext",
    "RetrievalContext",
    "Session",
];

/// Whether an error the runtime answered with is the component's own.
///
/// The runtime answers a failed action with `"<ExceptionClass>: <message>"`
/// (`runtime.io.handler.Handler._format_protocol_error`). When the plugin's
/// worker failed the call, the runtime's call raised `ActionCallError` with
/// the worker's own answer (`Handler.call_action`), which the worker formats
/// the same way from the component's exception: so a component's error reads
/// `ActionCallError: <ComponentException>: <message>`. Anything else is the
/// call failing: the runtime refusing the request before the worker
/// (`KeyError: ...`), a timeout (`ActionCallTimeoutError`), a closed
/// connection, the worker's own refusal without an exception (`Tool x not
/// found`, `... is not initialized`), or the SDK refusing the host's input
/// (a `ValidationError` for one of its request models).
pub fn is_component_error(message: &str) -> bool {
    let Some(rest) = message.strip_prefix("ActionCallError: ") else {
        return false;
    };
    let Some((class, detail)) = rest.split_once(": ") else {
        return false;
    };
    let is_class = !class.is_empty()
        && class
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !is_class {
        return false;
    }
    let first = detail.lines().next().unwrap_or("");
    !(class.ends_with("ValidationError")
        && REQUEST_MODELS
            .iter()
            .any(|m| first.contains(&format!(" for {m}")))
        || class == "ActionCallTimeoutError"
        || class == "ConnectionClosedError")
}

/// The reply of a call, as the runtime relayed it: a Tool's `tool_response`
/// (not `null`); a Command's `CommandReturn`s (at least one); an
/// EventListener's event after its handlers ran; a KnowledgeEngine's
/// `RetrievalResponse` (with `results`).
pub fn reply(call: &ComponentCall) -> Option<Value> {
    let first = call.answers.first()?;
    match call.component.kind.as_str() {
        "Tool" => match first.get("tool_response") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        },
        "Command" => {
            let returns: Vec<Value> = call
                .answers
                .iter()
                .filter(|a| a.as_object().is_some_and(|o| !o.is_empty()))
                .cloned()
                .collect();
            (!returns.is_empty()).then_some(Value::Array(returns))
        }
        "EventListener" => first
            .get("event_context")
            .and_then(|c| c.get("event"))
            .cloned(),
        "KnowledgeEngine" => first.get("results").is_some().then(|| first.clone()),
        _ => None,
    }
}

/// Judges one call: its outcome and, when it replied, the reply.
pub fn judge(call: &ComponentCall, author: &str, name: &str) -> (Outcome, Option<Value>) {
    if let Some(e) = &call.error {
        let own = !call.rpc_error && is_component_error(e);
        return (
            if own {
                Outcome::ComponentError
            } else {
                Outcome::ProtocolError
            },
            None,
        );
    }
    if call.rpc_error {
        return (Outcome::ProtocolError, None);
    }
    if call.component.kind == "EventListener" {
        let emitted = call.answers.first().is_some_and(|a| {
            a["emitted_plugins"].as_array().is_some_and(|ps| {
                ps.iter().any(|p| {
                    let meta = &p["manifest"]["manifest"]["metadata"];
                    meta["author"].as_str() == Some(author) && meta["name"].as_str() == Some(name)
                })
            })
        });
        if !call.answers.is_empty() && !emitted {
            return (Outcome::NotHandled, None);
        }
    }
    match reply(call) {
        Some(r) => (Outcome::Reply, Some(r)),
        None => (Outcome::NoReply, None),
    }
}

/// The first line of an error, for a warning's sentence.
pub fn first_line(e: &str) -> &str {
    e.lines().next().unwrap_or("")
}

/// The `component-calls` check of one candidate, when it has a called
/// component: fails on a protocol-level failure or a call answered without
/// a reply; warns, naming each, on a component's own error; passes only
/// when every called component replied. Not-called and not-handled
/// components are the `uncalled` check's.
pub fn check(
    folder: &str,
    plugin: &str,
    plans: &[ComponentPlan],
    calls: &[ComponentCall],
    author: &str,
    name: &str,
) -> Option<Check> {
    let called: Vec<&ComponentPlan> = plans.iter().filter(|p| p.not_called.is_none()).collect();
    if called.is_empty() {
        return None;
    }
    let mut found = CallFindings::default();
    for p in called {
        find_call(p, calls, author, name, &mut found);
    }
    verdict(found, folder, plugin)
}

/// What the `component-calls` check found over a candidate's called
/// components, one text per component, in plan order.
#[derive(Default)]
struct CallFindings {
    /// Protocol-level failures, missing calls and replyless answers.
    fails: Vec<String>,
    /// Components' own errors.
    warns: Vec<String>,
    /// Replies.
    replies: Vec<String>,
    /// One observed value per called component.
    observed: Vec<Value>,
}

/// Adds to `found` how the planned call `p` went, judged from its answer
/// among `calls` (the plugin is `author`/`name`).
fn find_call(
    p: &ComponentPlan,
    calls: &[ComponentCall],
    author: &str,
    name: &str,
    found: &mut CallFindings,
) {
    let c = &p.component;
    let Some(call) = calls.iter().find(|k| &k.component == c) else {
        found.fails.push(format!(
            "{c} was planned and not called (no answer recorded)"
        ));
        found
            .observed
            .push(json!({"component": c.to_string(), "outcome": "missing"}));
        return;
    };
    let (outcome, reply) = judge(call, author, name);
    let action = p.action.as_deref().unwrap_or("");
    match outcome {
        Outcome::Reply => found.replies.push(format!(
            "{c} ({action}, {} input) → {}",
            p.source,
            truncate(&reply.clone().unwrap_or_default().to_string(), 200)
        )),
        Outcome::ComponentError => found.warns.push(format!(
            "{c} ({action}) raised its own error: {}{}",
            first_line(call.error.as_deref().unwrap_or("")),
            // The SDK's Command base class fails a call whose first
            // argument names no subcommand unless a `*` one exists
            // (`Command._execute`): with no arguments that is the input.
            if c.kind == "Command" && p.source == "declared" {
                " (called without arguments, which only a Command with a `*` subcommand accepts; give its `params` in [[discovery.component_probe]])"
            } else {
                ""
            }
        )),
        Outcome::ProtocolError => found.fails.push(format!(
            "{c}: the {action} call failed: {}",
            first_line(call.error.as_deref().unwrap_or("no answer"))
        )),
        Outcome::NoReply => found.fails.push(format!(
            "{c}: {action} was answered without a reply ({})",
            truncate(&Value::Array(call.answers.clone()).to_string(), 200)
        )),
        Outcome::NotHandled => {}
    }
    found.observed.push(json!({
        "component": c.to_string(), "action": action, "input_source": p.source,
        "input": p.input, "outcome": outcome.label(), "reply": reply, "error": call.error,
    }));
}

/// The `component-calls` check from what was found: fails on any failure,
/// warns on a component's own error, passes when there were replies and
/// nothing else; `None` when nothing replied, failed or erred.
fn verdict(found: CallFindings, folder: &str, plugin: &str) -> Option<Check> {
    let CallFindings {
        fails,
        warns,
        replies,
        observed,
    } = found;
    let observed = json!({"calls": observed});
    if !fails.is_empty() {
        return Some(
            Check::fail(
                "component-calls",
                Some(folder),
                format!(
                    "{plugin}: expected each called component to reply through the runtime, or to raise its own error; found: {}{}; see the RPC transcript",
                    fails.join("; "),
                    if warns.is_empty() { String::new() } else { format!("; also: {}", warns.join("; ")) }
                ),
            )
            .with_observed(observed),
        );
    }
    if !warns.is_empty() {
        return Some(
            Check::warn(
                "component-calls",
                Some(folder),
                format!(
                    "{plugin}: {}: the component's own error is recorded, not a pass (a local input, no network: a component that needs an API key or a service fails here){}",
                    warns.join("; "),
                    if replies.is_empty() { String::new() } else { format!("; replied: {}", replies.join("; ")) }
                ),
            )
            .with_observed(observed),
        );
    }
    if replies.is_empty() {
        return None;
    }
    Some(
        Check::pass(
            "component-calls",
            Some(folder),
            format!(
                "{plugin}: each called component replied through the runtime: {}",
                replies.join("; ")
            ),
        )
        .with_observed(observed),
    )
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(kind: &str, name: &str) -> ComponentId {
        ComponentId {
            kind: kind.into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_tool_gets_every_required_parameter_with_a_value_of_its_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 3},
                "ratio": {"type": "number"},
                "metric": {"type": "boolean"},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "where": {"type": "object", "properties": {"lat": {"type": ["number", "null"]}}, "required": ["lat"]},
                "optional": {"type": "string"},
                "kind": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
                "fixed": {"const": 7, "type": "integer"},
                "level": {"type": "string", "default": "high"}
            },
            "required": ["city", "days", "ratio", "metric", "unit", "tags", "where", "kind", "fixed", "level"]
        });
        assert_eq!(
            schema_value(&schema, 0),
            json!({
                "city": PROBE_TEXT, "days": 3, "ratio": 1.0, "metric": true, "unit": "c",
                "tags": [PROBE_TEXT], "where": {"lat": 1.0}, "kind": 1, "fixed": 7, "level": "high"
            })
        );
        // No parameters declared (`parameters: {}`): no parameters given.
        assert_eq!(
            declared_input("Tool", &json!({"parameters": {}})),
            json!({})
        );
        assert_eq!(declared_input("Tool", &Value::Null), json!({}));
    }

    #[test]
    fn plans_take_the_profiles_input_else_the_declared_one_and_skip_runners() {
        let declared = vec![
            id("Command", "hello"),
            id("EventListener", "default"),
            id("KnowledgeEngine", "notes"),
            id("Page", "home"),
            id("Runner", "default"),
            id("Tool", "echo"),
        ];
        let mut specs = BTreeMap::new();
        specs.insert(
            id("Tool", "echo"),
            json!({"parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}),
        );
        let probe: ComponentProbeSpec = toml::from_str(
            "candidate = \"R/a\"\ncomponent = \"Command/hello\"\ninput = { params = [\"world\"] }\n",
        )
        .unwrap();
        let bad: ComponentProbeSpec = toml::from_str(
            "candidate = \"R/a\"\ncomponent = \"KnowledgeEngine/notes\"\ninput = { q = 1 }\n",
        )
        .unwrap();
        let plans = plan(&declared, &specs, &[&probe, &bad]);
        let by = |n: &str| plans.iter().find(|p| p.component.to_string() == n).unwrap();
        assert_eq!(plans.len(), 5, "Runners are run_runner's");
        assert_eq!(
            (
                by("Command/hello").source.as_str(),
                &by("Command/hello").input
            ),
            ("profile", &json!({"params": ["world"]}))
        );
        assert_eq!(by("Tool/echo").input, json!({"text": PROBE_TEXT}));
        assert_eq!(by("Tool/echo").action.as_deref(), Some("call_tool"));
        assert_eq!(
            by("EventListener/default").input["event_name"],
            DEFAULT_EVENT
        );
        assert!(by("KnowledgeEngine/notes")
            .not_called
            .as_deref()
            .unwrap()
            .contains("needs `query`"));
        assert!(by("Page/home")
            .not_called
            .as_deref()
            .unwrap()
            .contains("no host action for a Page"));
        // A Command with params builds the SDK's ExecuteContext fields.
        let data = request(by("Command/hello"), "acme", "p").unwrap();
        let ctx = &data["command_context"];
        assert_eq!(
            (
                ctx["command_text"].clone(),
                ctx["params"].clone(),
                ctx["crt_command"].clone()
            ),
            (json!("hello world"), json!(["world"]), json!("hello"))
        );
        assert_eq!(data["include_plugins"], json!(["acme/p"]));
        assert!(request(by("Page/home"), "acme", "p").is_none());
        let k = request(
            &ComponentPlan {
                component: id("KnowledgeEngine", "notes"),
                action: Some("retrieve_knowledge".into()),
                source: "declared".into(),
                input: json!({"query": "q"}),
                not_called: None,
            },
            "acme",
            "p",
        )
        .unwrap();
        assert_eq!(
            k,
            json!({"plugin_author": "acme", "plugin_name": "p", "retriever_name": "notes", "retrieval_context": {"query": "q"}})
        );
    }

    #[test]
    fn only_an_exception_relayed_from_the_worker_is_the_components_own_error() {
        for own in [
            "ActionCallError: RuntimeError: WEATHER_API_KEY is not set",
            "ActionCallError: CommandNotFoundError: ",
            "ActionCallError: ValidationError: 1 validation error for Forecast",
            "ActionCallError: ActionCallError: the certification host does not serve invoke_llm",
        ] {
            assert!(is_component_error(own), "{own}");
        }
        for protocol in [
            "KeyError: 'tool_name'",
            "ActionCallError: Tool echo not found",
            "ActionCallError: KnowledgeEngine notes is not initialized",
            "ActionCallTimeoutError: Action call_tool call timed out",
            "ActionCallError: ActionCallTimeoutError: Action call_tool call timed out",
            "ActionCallError: ValidationError: 2 validation errors for ExecuteContextProxy",
            "ActionCallError: ConnectionClosedError: Connection closed",
            "ValueError: Plugin a/b not found",
            "",
        ] {
            assert!(!is_component_error(protocol), "{protocol}");
        }
    }

    #[test]
    fn a_command_failing_without_arguments_is_told_how_to_give_them() {
        let plan = ComponentPlan {
            component: id("Command", "admin"),
            action: Some("execute_command".into()),
            source: "declared".into(),
            input: json!({"params": []}),
            not_called: None,
        };
        let call = ComponentCall {
            component: id("Command", "admin"),
            action: "execute_command".into(),
            error: Some(
                "ActionCallError: TypeError: exceptions must derive from BaseException".into(),
            ),
            ..ComponentCall::default()
        };
        let c = check(
            "f",
            "a/p",
            std::slice::from_ref(&plan),
            std::slice::from_ref(&call),
            "a",
            "p",
        )
        .unwrap();
        assert_eq!(c.result, crate::evidence::CheckResult::Warn, "{}", c.detail);
        assert!(
            c.detail
                .contains("give its `params` in [[discovery.component_probe]]"),
            "{}",
            c.detail
        );
        let given = ComponentPlan {
            source: "profile".into(),
            ..plan
        };
        let c = check("f", "a/p", &[given], &[call], "a", "p").unwrap();
        assert!(!c.detail.contains("give its `params`"), "{}", c.detail);
    }

    #[test]
    fn replies_are_read_per_kind_and_an_empty_answer_is_none() {
        let call = |kind: &str, answers: Vec<Value>| ComponentCall {
            component: id(kind, "x"),
            answers,
            ..ComponentCall::default()
        };
        assert_eq!(
            reply(&call("Tool", vec![json!({"tool_response": "ok"})])),
            Some(json!("ok"))
        );
        assert_eq!(
            reply(&call("Tool", vec![json!({"tool_response": null})])),
            None
        );
        assert_eq!(reply(&call("Tool", vec![])), None);
        assert_eq!(
            reply(&call("Command", vec![json!({"text": "hi"}), json!({})])),
            Some(json!([{"text": "hi"}]))
        );
        assert_eq!(reply(&call("Command", vec![json!({})])), None);
        assert_eq!(
            reply(&call("KnowledgeEngine", vec![json!({"total_found": 0})])),
            None
        );
        assert!(reply(&call(
            "KnowledgeEngine",
            vec![json!({"results": [], "total_found": 0})]
        ))
        .is_some());
        assert_eq!(
            reply(&call("EventListener", vec![json!({"emitted_plugins": []})])),
            None
        );
    }
}
