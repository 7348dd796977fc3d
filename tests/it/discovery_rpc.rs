//! The `discovery-rpc` gate with the genuine SDK runtime from `$PYTHON`,
//! through the built binary (`--only discovery-rpc`, to stay fast): the
//! fixture repository passes; the `missing-python-attr` overlay fails naming
//! the plugin and the runtime's message; a runtime whose health probe never
//! answers times out with its log tail. After every run, nothing of it may
//! be alive: checked with the operating system by the runtime's process
//! group and by processes whose cwd or environment points into the
//! evidence directory.

use crate::common;

use common::{
    check, checks, detail, evidence_dir, fixture_repo, gate_result, make_writable, processes_under,
    python, read_evidence, verifier,
};
use serde_json::Value;
use std::path::Path;
use verify_coding_candidates::process;
use verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS;

const GATE: &str = "discovery-rpc";
const CANDIDATES: [&str; 3] = ["acp-agent-runner", "claude-code-agent", "codex-agent"];

/// One verifier run: exit code, evidence, evidence directory (kept alive).
struct Run {
    code: i32,
    evidence: Value,
    dir: std::path::PathBuf,
    _keep: (common::FixtureRepo, tempfile::TempDir),
}

fn run(overlays: &[&str], profile: Option<&str>, env: &[(&str, &str)]) -> Run {
    run_on(fixture_repo(overlays), profile, env, None)
}

/// [`run`] with the evidence directory at `subdir` of a fresh temporary
/// folder when given.
fn run_in(
    overlays: &[&str],
    profile: Option<&str>,
    env: &[(&str, &str)],
    subdir: Option<&str>,
) -> Run {
    run_on(fixture_repo(overlays), profile, env, subdir)
}

/// [`run_in`] on a fixture repository the caller prepared.
fn run_on(
    repo: common::FixtureRepo,
    profile: Option<&str>,
    env: &[(&str, &str)],
    subdir: Option<&str>,
) -> Run {
    let (keep, dir) = evidence_dir();
    let dir = match subdir {
        Some(s) => keep.path().join(s),
        None => dir,
    };
    let mut cmd = verifier();
    cmd.current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python())
        .args(["--only", GATE]);
    if let Some(text) = profile {
        cmd.arg("--profile")
            .arg(common::profile_beside(&keep, text));
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the verifier");
    assert!(
        dir.join("evidence.json").is_file(),
        "no evidence written: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evidence = read_evidence(&dir);
    assert_nothing_survives(&dir);
    make_writable(&dir);
    Run {
        code: out.status.code().unwrap_or(-1),
        evidence,
        dir,
        _keep: (repo, keep),
    }
}

/// Nothing of the run is alive: no live member of the runtime's process
/// group (its pid, from the host's result), and no process whose cwd lies
/// under the evidence directory or whose environment names it.
fn assert_nothing_survives(dir: &Path) {
    let result_path = dir.join("logs").join(GATE).join("host-result.json");
    if let Ok(text) = std::fs::read_to_string(&result_path) {
        let result: Value = serde_json::from_str(&text).expect("host-result.json is JSON");
        if let Some(pid) = result["runtime"]["pid"].as_i64() {
            let pgid = rustix::process::Pid::from_raw(pid as i32).expect("non-zero pid");
            let members = process::live_group_members(pgid);
            assert!(
                members.is_empty(),
                "runtime group {pid} still has live members {members:?}"
            );
        }
    }
    let found = processes_under(dir);
    assert!(
        found.is_empty(),
        "processes of the run survived it: {found:#?}"
    );
}

#[test]
fn fixture_repository_passes_over_the_real_runtime() {
    let r = run(&[], None, &[]);
    let failures: Vec<String> = checks(&r.evidence, GATE)
        .iter()
        .filter(|c| c["result"] == "fail")
        .map(|c| format!("{}/{}: {}", c["name"], c["candidate"], detail(c)))
        .collect();
    assert_eq!(gate_result(&r.evidence, GATE), "pass", "{failures:#?}");
    assert_eq!(r.code, 0);

    let net = check(&r.evidence, GATE, "network-isolation", None);
    assert_ne!(net["result"], "fail", "{}", detail(net));
    if net["result"] == "pass" {
        assert_eq!(net["observed"]["interfaces"], serde_json::json!(["lo"]));
    }
    let token = check(&r.evidence, GATE, "control-token", None);
    assert_eq!(token["result"], "pass");
    assert_eq!(token["observed"]["status"], 401, "{}", detail(token));

    for folder in CANDIDATES {
        let installed = check(&r.evidence, GATE, "installation", Some(folder));
        let archive = r.evidence["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["folder"] == folder)
            .unwrap();
        assert_eq!(
            installed["observed"]["uploaded_sha256"],
            archive["archive"]["sha256"]
        );
        assert_eq!(
            installed["observed"]["binding"]["artifact_digest"],
            archive["archive"]["sha256"]
        );

        let init = check(&r.evidence, GATE, "initialized", Some(folder));
        assert_eq!(init["observed"]["status"], "initialized");
        assert_eq!(init["observed"]["final_status"], "initialized");
        let record = &archive["discovery"];
        assert_eq!(record["status"], "initialized");
        assert_eq!(record["artifact_digest"], archive["archive"]["sha256"]);
        assert_eq!(
            record["runners"][0]["label"],
            "local protocol fixture, not a vendor call"
        );
        assert!(
            init["observed"]["get_plugin_settings_answered"]
                .as_u64()
                .unwrap()
                >= 1
        );

        let comps = check(&r.evidence, GATE, "components", Some(folder));
        assert_eq!(
            comps["observed"]["declared"],
            serde_json::json!(["Runner/default"])
        );
        assert_eq!(comps["observed"]["listed"], comps["observed"]["declared"]);

        let probe = check(&r.evidence, GATE, "runner-probe", Some(folder));
        assert_eq!(probe["result"], "pass", "{}", detail(probe));
        assert_eq!(
            probe["observed"]["label"],
            "local protocol fixture, not a vendor call"
        );
        let p = &probe["observed"]["probes"][0];
        let plan = &p["plan"];
        let fixture = plan["fixture"].as_str().unwrap();
        assert!(fixture.starts_with("builtin:"), "{fixture}");
        // The negative control ended in run.failed ...
        let control = &p["negative_control"];
        assert_eq!(
            control["config"],
            serde_json::json!({"location": "invalid"})
        );
        assert!(
            control["result_types"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "run.failed"),
            "{control}"
        );
        // ... and the fixture call completed with the fixture's text and the
        // prompt's nonce, after the runner started the fixture from its config.
        let nonce = plan["nonce"].as_str().unwrap();
        let reply = p["call"]["reply"].as_str().unwrap();
        assert!(
            reply.contains(&format!(
                "[verify-coding-candidates local protocol fixture {fixture}] received {nonce}"
            )),
            "{folder}: reply {reply:?}"
        );
        assert!(p["call"]["config"].to_string().contains("fixture.py"));
        assert!(
            p["fixture_transcript"].as_array().unwrap().len() >= 2,
            "{folder}: the fixture's transcript is in the evidence"
        );
        assert_eq!(record["runners"][0]["fixture"], fixture);
        assert!(detail(probe).contains("local protocol fixture, not a vendor call"));
    }
    assert_eq!(check(&r.evidence, GATE, "teardown", None)["result"], "pass");

    // The transcript holds every message but no archive bytes.
    let transcript =
        std::fs::read_to_string(r.dir.join("logs").join(GATE).join("transcript.jsonl")).unwrap();
    for action in [
        "__ping",
        "set_runtime_config",
        "__file_chunk",
        "apply_plugin_installation",
        "get_plugin_settings",
        "list_plugins",
        "run_runner",
    ] {
        assert!(
            transcript.contains(&format!("\"action\":\"{action}\"")),
            "transcript lacks {action}"
        );
    }
    assert!(transcript.contains("<elided: "));
    let zip_magic_b64 = "UEsDB"; // base64 of "PK\x03\x04"
    assert!(
        !transcript.contains(zip_magic_b64),
        "archive bytes leaked into the transcript"
    );
}

#[test]
fn a_missing_execution_python_attr_fails_naming_the_plugin_and_the_runtime_message() {
    let r = run(&["missing-python-attr"], None, &[]);
    assert_eq!(gate_result(&r.evidence, GATE), "fail");
    assert_eq!(r.code, 1);
    let init = check(&r.evidence, GATE, "initialized", Some("codex-agent"));
    assert_eq!(init["result"], "fail");
    let text = detail(init);
    assert!(text.contains("langbot-fixtures/codex-agent"), "{text}");
    assert!(
        text.contains("AttributeError: module 'main' has no attribute 'MissingCodexAgentPlugin'"),
        "{text}"
    );
    // The runtime was told to remove the failed installation (ends its restarts).
    assert_eq!(init["observed"]["removed"]["data"]["state"], "removed");
    // The other candidates are unaffected.
    for folder in ["acp-agent-runner", "claude-code-agent"] {
        assert_eq!(
            check(&r.evidence, GATE, "initialized", Some(folder))["result"],
            "pass"
        );
    }
    assert_eq!(check(&r.evidence, GATE, "teardown", None)["result"], "pass");
}

#[test]
fn a_runtime_that_never_becomes_healthy_times_out_with_its_log_tail() {
    // Port 1 never answers, so any limit shows the timeout; 20 s (not 3) lets
    // the runtime print its first log line on a loaded machine.
    let profile =
        BUILTIN_CODING_RUNNERS.replace("health_timeout_secs = 60", "health_timeout_secs = 20");
    assert_ne!(
        profile, BUILTIN_CODING_RUNNERS,
        "the built-in profile sets health_timeout_secs"
    );
    // Port 1 on the namespace's loopback: nothing ever answers there.
    let started = std::time::Instant::now();
    let r = run(
        &[],
        Some(&profile),
        &[("VCC_DISCOVERY_TEST_HEALTH_PORT", "1")],
    );
    assert_eq!(gate_result(&r.evidence, GATE), "fail");
    let health = check(&r.evidence, GATE, "runtime-healthy", None);
    assert_eq!(health["result"], "fail");
    let text = detail(health);
    assert!(text.contains("did not become healthy"), "{text}");
    assert!(text.contains("within 20 s"), "{text}");
    assert!(text.contains("VCC_DISCOVERY_TEST_HEALTH_PORT"), "{text}");
    // The log tail is the runtime's own output.
    assert!(text.contains("WebSocket server started"), "{text}");
    for folder in CANDIDATES {
        assert_eq!(
            check(&r.evidence, GATE, "initialized", Some(folder))["result"],
            "fail"
        );
    }
    assert_eq!(check(&r.evidence, GATE, "teardown", None)["result"], "pass");
    assert!(started.elapsed() < std::time::Duration::from_secs(120));
}

/// The built-in profile with `from` replaced by `to` (which must occur).
fn builtin_with(from: &str, to: &str) -> String {
    assert!(BUILTIN_CODING_RUNNERS.contains(from), "{from}");
    BUILTIN_CODING_RUNNERS.replace(from, to)
}

#[test]
fn a_runner_that_cannot_find_its_command_fails_naming_the_config_key() {
    // A bare name, as a vendor CLI on PATH would be: the worker has no PATH.
    let profile = builtin_with("command = \"{python} {fixture}\"", "command = \"codex\"");
    let r = run(&[], Some(&profile), &[]);
    assert_eq!(r.code, 1);
    let c = check(&r.evidence, GATE, "runner-probe", Some("codex-agent"));
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let text = detail(c);
    assert!(text.contains("codex.command_not_found"), "{text}");
    assert!(text.contains("(`command`)"), "{text}");
    assert!(text.contains("[[discovery.runner_probe]]"), "{text}");
    for folder in ["acp-agent-runner", "claude-code-agent"] {
        let c = check(&r.evidence, GATE, "runner-probe", Some(folder));
        assert_eq!(c["result"], "pass", "{folder}: {}", detail(c));
    }
}

#[test]
fn a_negative_control_that_completes_fails_the_probe() {
    // An "invalid" config the runner accepts: the probe could not fail.
    let claude = BUILTIN_CODING_RUNNERS
        .lines()
        .find(|l| l.starts_with("config = ") && l.contains("args-json = [\"{fixture}\"]"))
        .expect("the built-in profile probes Claude Code with args-json");
    let accepted = claude.replacen(
        "config = {",
        "invalid_config = { note = \"not invalid\",",
        1,
    );
    let profile = builtin_with(
        &format!("{claude}\ninvalid_config = {{ location = \"invalid\" }}"),
        &format!("{claude}\n{accepted}"),
    );
    let r = run(&[], Some(&profile), &[]);
    let c = check(&r.evidence, GATE, "runner-probe", Some("claude-code-agent"));
    assert_eq!(c["result"], "fail", "{}", detail(c));
    assert!(
        detail(c).contains("a runner that ignores its config would pass this probe"),
        "{}",
        detail(c)
    );
}

#[test]
fn without_a_declared_probe_the_generic_call_says_so() {
    let before = BUILTIN_CODING_RUNNERS
        .split("[[discovery.runner_probe]]")
        .next()
        .unwrap();
    let suites = &BUILTIN_CODING_RUNNERS[BUILTIN_CODING_RUNNERS.find("\n[suites]\n").unwrap()..];
    let profile = format!("{before}\n{suites}");
    assert!(!profile.contains("runner_probe]]"), "{profile}");
    let r = run(&[], Some(&profile), &[]);
    for folder in CANDIDATES {
        let c = check(&r.evidence, GATE, "runner-probe", Some(folder));
        // Our fixture plugins, like the real ones, cannot find a vendor
        // command without an invocation config: the generic call ends in
        // their own run.failed, recorded and warned (never a pass), and
        // the check says that no probe was declared.
        assert_eq!(c["result"], "warn", "{folder}: {}", detail(c));
        assert!(
            detail(c).contains("the runner's own error"),
            "{}",
            detail(c)
        );
        assert!(
            detail(c).contains("no runner probe declared"),
            "{}",
            detail(c)
        );
        assert!(detail(c).contains("command_not_found"), "{}", detail(c));
        assert!(c["observed"]["probes"][0]["plan"].is_null());
    }
}

#[test]
fn a_committed_fixture_is_used_as_declared_and_a_missing_one_fails_its_setup() {
    let codex = "fixture = \"builtin:codex-app-server\"";
    let claude = "fixture = \"builtin:claude-code-stream-json\"";
    let profile = builtin_with(
        codex,
        "fixture = \"Runner/certification-tests/vendor_fixture.py\"\nexpect = \"[certification-tests vendor fixture codex] verify-coding-candidates runner probe {nonce}\"",
    )
    .replace(claude, "fixture = \"Runner/certification-tests/no-such-fixture.py\"\nexpect = \"x {nonce}\"");
    let r = run(&[], Some(&profile), &[]);
    let c = check(&r.evidence, GATE, "runner-probe", Some("codex-agent"));
    assert_eq!(c["result"], "pass", "{}", detail(c));
    assert!(
        detail(c).contains("a committed file: the repository's own fixture"),
        "{}",
        detail(c)
    );
    let p = &c["observed"]["probes"][0];
    assert_eq!(
        p["plan"]["fixture"],
        "Runner/certification-tests/vendor_fixture.py"
    );
    let committed = std::fs::read(
        r.dir
            .join("staging/source/Runner/certification-tests/vendor_fixture.py"),
    )
    .unwrap();
    assert_eq!(
        p["plan"]["fixture_sha256"],
        verify_coding_candidates::hash::sha256_bytes(&committed)
    );
    let setup = check(
        &r.evidence,
        GATE,
        "runner-probe-setup",
        Some("claude-code-agent"),
    );
    assert_eq!(setup["result"], "fail");
    assert!(
        detail(setup).contains("no-such-fixture.py")
            && detail(setup).contains("expected a committed file"),
        "{}",
        detail(setup)
    );
    let probe = check(&r.evidence, GATE, "runner-probe", Some("claude-code-agent"));
    assert!(
        detail(probe).contains("could not be prepared (see runner-probe-setup)"),
        "one cause, named once: {}",
        detail(probe)
    );
    assert_eq!(probe["observed"]["probes"], serde_json::json!([]));
    assert_eq!(r.code, 1);
}

/// A real third-party requirement (`six==1.16.0`) beside the SDK pin: the
/// `dependencies` gate downloads it into DIR/wheelhouse, and the runtime,
/// inside its private network namespace, installs it from there (its only
/// index) and initializes the plugin. Asserted on the checks that concern
/// dependencies (network-isolation, installation, initialized) rather than
/// the whole gate verdict, which also covers the Runner probes.
#[test]
fn a_third_party_requirement_installs_offline_from_the_wheelhouse_in_the_namespace() {
    let repo = fixture_repo(&[]);
    std::fs::write(
        repo.root.join("Runner/codex-agent/requirements.txt"),
        "langbot-plugin==0.6.0b5\nsix==1.16.0\n",
    )
    .unwrap();
    common::git(&repo.root, &["commit", "-q", "-a", "-m", "six"]);
    let r = run_on(repo, None, &[], None);
    assert_eq!(gate_result(&r.evidence, "dependencies"), "pass");

    let net = check(&r.evidence, GATE, "network-isolation", None);
    assert_eq!(net["result"], "pass", "{}", detail(net));
    assert_eq!(net["observed"]["interfaces"], serde_json::json!(["lo"]));
    for name in ["installation", "initialized"] {
        let c = check(&r.evidence, GATE, name, Some("codex-agent"));
        assert_eq!(c["result"], "pass", "{name}: {}", detail(c));
    }
    assert_eq!(
        check(&r.evidence, GATE, "initialized", Some("codex-agent"))["observed"]["status"],
        "initialized"
    );

    // The runtime was given the wheelhouse as its index...
    let index_url = format!("file://{}/wheelhouse/simple/", r.dir.display());
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(r.dir.join("logs").join(GATE).join("host-spec.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(spec["env"]["LANGBOT_PLUGIN_PYPI_INDEX_URL"], index_url);
    // ...and its own installer put six, from the recorded wheel, in the
    // environment it prepared for the plugin.
    let wheel = &r.evidence["wheelhouse"]["files"][0];
    assert_eq!(wheel["name"], "six-1.16.0-py2.py3-none-any.whl");
    let on_disk = verify_coding_candidates::hash::sha256_file(
        &r.dir
            .join("wheelhouse")
            .join("six-1.16.0-py2.py3-none-any.whl"),
    )
    .unwrap();
    assert_eq!(wheel["sha256"], on_disk.hex());
    // The runtime prepared the same environment (same digest) the
    // `dependencies` gate prepared, and six is in it.
    let digest = common::candidate(&r.evidence, "codex-agent")["dependencies"]["digests"][0]
        .as_str()
        .expect("the dependencies gate's environment digest")
        .to_string();
    let runtime_root = r.dir.join("roots/discovery-rpc/runtime");
    let six: Vec<std::path::PathBuf> = walkdir::WalkDir::new(&runtime_root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "six-1.16.0.dist-info")
        .map(|e| e.into_path())
        .collect();
    assert_eq!(six.len(), 1, "{six:?}");
    assert!(
        six[0].ends_with(format!(
            "environments/sha256/{digest}/site-packages/six-1.16.0.dist-info"
        )),
        "{}",
        six[0].display()
    );
    assert_eq!(check(&r.evidence, GATE, "teardown", None)["result"], "pass");
}

/// An evidence directory whose path holds a space and a placeholder's
/// name: Codex splits `command = "{python} {fixture}"` with `shlex.split`,
/// so the fixture's path must reach it as one word, and `{workspace}` in a
/// path is not substituted again.
#[test]
fn an_evidence_path_with_a_space_and_braces_still_reaches_every_fixture() {
    let r = run_in(&[], None, &[], Some("evidence dir {workspace}"));
    for folder in CANDIDATES {
        let c = check(&r.evidence, GATE, "runner-probe", Some(folder));
        assert_eq!(c["result"], "pass", "{folder}: {}", detail(c));
    }
    let codex = check(&r.evidence, GATE, "runner-probe", Some("codex-agent"));
    let command = codex["observed"]["probes"][0]["call"]["config"]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        command.contains("'") && command.contains("evidence dir {workspace}/roots"),
        "{command}"
    );
    assert_eq!(r.code, 0);
}
