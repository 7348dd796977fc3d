//! Unit tests of the `discovery-rpc` gate: the probe planning's
//! substitution, and counterexamples to [`decide`] over observations.

use super::plan::{shell_quote, substitute};
use super::*;
use crate::evidence::Check;
use crate::evidence::CheckResult;
use spec::{RunnerCall, RunnerProbe, Survivor, Teardown};
use std::path::PathBuf;

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
        component_plans: vec![],
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
        fixture_transcript: "/ev/roots/discovery-rpc/probes/codex-agent/default/transcript.jsonl"
            .into(),
        nonce: "VCC-PROBE-0123456789abcdef".into(),
        control_nonce: "VCC-PROBE-fedcba9876543210".into(),
        config: json!({"location": "local", "command": "/py /fx.py"}),
        invalid_config: json!({"location": "invalid"}),
        expect: crate::builtin_fixtures::reply_text(
            "codex-app-server",
            "VCC-PROBE-0123456789abcdef",
        ),
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
    // Any other failure points at the runtime log and the transcript, not
    // at the command key.
    o.runner_probes[0].call = call(&["run.failed"], None, Some("codex.protocol: late"));
    let k = runner_check(&c, &o, "acme/codex-agent");
    assert_eq!(k.result, CheckResult::Fail);
    assert!(
        k.detail
            .contains("read the runtime log and the fixture's transcript"),
        "{}",
        k.detail
    );
    assert!(!k.detail.contains("(`command`)"), "{}", k.detail);
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
    // Its own run.failed, given no config, is its answer: recorded, warned.
    o.runner_probes[0].call = call(
        &["run.started", "run.failed"],
        None,
        Some("n8n.config_invalid: webhook-url is required"),
    );
    let own = runner_check(&c, &o, "acme/n8n");
    assert_eq!(own.result, CheckResult::Warn, "{}", own.detail);
    assert!(
        own.detail.contains("the runner's own error")
            && own.detail.contains("webhook-url is required")
            && own
                .detail
                .contains("nothing shows the runner completing a run"),
        "{}",
        own.detail
    );
    // ... but not one without an error text, nor one that is not the end.
    o.runner_probes[0].call = call(&["run.failed"], None, None);
    assert_eq!(runner_check(&c, &o, "p").result, CheckResult::Fail);
    o.runner_probes[0].call = call(&["run.failed", "message.delta"], None, Some("x"));
    assert_eq!(runner_check(&c, &o, "p").result, CheckResult::Fail);
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
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates[0].listed_components = vec![ComponentId {
        kind: "Runner".into(),
        name: "other".into(),
    }];
    let comps = find(&decide(&obs), "components", Some("codex-agent"));
    assert_eq!(comps.result, CheckResult::Fail);
    assert!(comps.detail.contains("Runner/default"), "{}", comps.detail);
    assert!(comps.detail.contains("Runner/other"), "{}", comps.detail);
    assert!(
        comps.detail.contains("check spec.components"),
        "{}",
        comps.detail
    );
    // Listing fewer components than declared fails too.
    obs.result.as_mut().unwrap().candidates[0]
        .listed_components
        .clear();
    assert_eq!(
        find(&decide(&obs), "components", Some("codex-agent")).result,
        CheckResult::Fail
    );
}

#[test]
fn refuses_an_installation_of_other_bytes_than_the_archives() {
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates[0].uploaded_sha256 = Some("00".repeat(32));
    let c = find(&decide(&obs), "installation", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains(&format!("the uploaded bytes hash to {}", "00".repeat(32))),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("not given the certified bytes"),
        "{}",
        c.detail
    );
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates[0].binding["artifact_digest"] = json!("ff");
    let c = find(&decide(&obs), "installation", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("artifact_digest is \"ff\""),
        "{}",
        c.detail
    );
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates[0].apply = None;
    let c = find(&decide(&obs), "installation", Some("codex-agent"));
    assert!(c.detail.contains("no apply response"), "{}", c.detail);
}

#[test]
fn refuses_an_initialization_without_the_hosts_settings() {
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().inbound[0].installation_uuid = Some("other".into());
    let c = find(&decide(&obs), "initialized", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("never asked the host for its settings"),
        "{}",
        c.detail
    );
}

#[test]
fn a_failed_dependency_installer_is_sent_to_the_wheelhouse() {
    let mut obs = observed_run();
    let o = &mut obs.result.as_mut().unwrap().candidates[0];
    o.status = None;
    o.final_status = None;
    o.failure = Some("apply_plugin_installation answered state \"failed\": dependency_prepare_failed Plugin dependency installer exited with code 1".into());
    let c = find(&decide(&obs), "initialized", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("missing from the wheelhouse"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("execution.python"), "{}", c.detail);
}

// ---- decision counterexamples over whole observations ----

fn host_spec(c: HostCandidate) -> HostSpec {
    HostSpec {
        python: "/v/bin/python".into(),
        data_root: "/ev/roots/discovery-rpc/runtime/data".into(),
        roots: "/ev/roots/discovery-rpc".into(),
        env: Default::default(),
        marker: "m".into(),
        log_dir: "/ev/logs/discovery-rpc".into(),
        result_path: "/ev/logs/discovery-rpc/host-result.json".into(),
        net: NetKind::UnshareNet,
        ip: None,
        health_timeout_ms: 20_000,
        plugin_timeout_ms: 60_000,
        call_timeout_ms: 30_000,
        runner_timeout_ms: 60_000,
        failure_restarts: 2,
        health_port_override: None,
        start_width: 4,
        candidates: vec![c],
        read_only: vec!["/v".into(), "/ev/wheelhouse".into()],
    }
}

/// The whole gate passing for one candidate with a declared, passing probe.
fn observed_run() -> Observation {
    let (c, mut o) = probed();
    o.folder = c.folder.clone();
    o.binding = json!({"installation_uuid": "u1", "artifact_digest": c.sha256});
    o.uploaded_bytes = 40_000;
    o.chunks = 3;
    o.uploaded_sha256 = Some(c.sha256.clone());
    o.apply = Some(spec::Step {
        ok: true,
        message: "success".into(),
        data: json!({"state": "starting"}),
    });
    o.status = Some("initialized".into());
    o.final_status = Some("initialized".into());
    o.init_ms = Some(2000);
    o.listed_components = c.declared.clone();
    let ok = |data: serde_json::Value| {
        Some(spec::Step {
            ok: true,
            message: "success".into(),
            data,
        })
    };
    let result = HostResult {
        interfaces: vec!["lo".into()],
        runtime: spec::RuntimeFacts {
            command: vec![
                "python".into(),
                "-m".into(),
                "langbot_plugin.cli".into(),
                "rt".into(),
            ],
            pid: Some(99),
            control_port: 5400,
            debug_port: 5401,
            health_port: 5400,
            healthy: true,
            health_ms: Some(2100),
            log: "/ev/logs/discovery-rpc/runtime".into(),
            sandbox: Some(crate::evidence::sandbox::SandboxRecord {
                kind: "bwrap".into(),
                program: Some("/usr/bin/bwrap".into()),
                version: Some("bubblewrap 0.8.0".into()),
                own_pid_namespace: true,
                dies_with_verifier: true,
                network: Some(crate::evidence::sandbox::Network::Shared),
                read_only: vec!["/v".into(), "/ev/wheelhouse".into()],
                writable: vec!["/ev/roots/discovery-rpc".into()],
                unconfined_because: None,
            }),
            ..spec::RuntimeFacts::default()
        },
        token_control: Some(spec::TokenControl {
            refused: true,
            status: Some(401),
            detail: "upgrade with a different random token refused with HTTP 401".into(),
        }),
        ping: ok(json!({"message": "pong"})),
        runtime_config: ok(json!({})),
        candidates: vec![o],
        inbound: vec![crate::rpc::InboundCall {
            action: "get_plugin_settings".into(),
            installation_uuid: Some("u1".into()),
            answered_ok: true,
        }],
        teardown: Some(Teardown {
            group_empty: true,
            status: "exit status 0".into(),
            ..Teardown::default()
        }),
        transcript: "/ev/logs/discovery-rpc/transcript.jsonl".into(),
        ..HostResult::default()
    };
    Observation {
        setup: vec![],
        network: Some(NetPlan {
            kind: NetKind::UnshareNet,
            wrapper: vec!["/usr/bin/unshare".into(), "--net".into(), "--".into()],
            ip: Some("/usr/sbin/ip".into()),
            attempts: vec![],
        }),
        spec: Some(host_spec(c)),
        result: Some(result),
        host_failure: None,
        survivors: vec![],
    }
}

#[test]
fn the_runtime_in_its_sandbox_passes_and_an_unconfined_or_unstarted_runtime_does_not() {
    let obs = observed_run();
    let c = find(&decide(&obs), "runtime-sandbox", None);
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert_eq!(
        c.observed.as_ref().unwrap()["writable"],
        json!(["/ev/roots/discovery-rpc"])
    );

    let mut unconfined = observed_run();
    let runtime = &mut unconfined.result.as_mut().unwrap().runtime;
    runtime.sandbox = Some(crate::evidence::sandbox::SandboxRecord {
        kind: "none".into(),
        program: None,
        version: None,
        own_pid_namespace: false,
        dies_with_verifier: false,
        network: None,
        read_only: vec![],
        writable: vec![],
        unconfined_because: Some("bwrap refused: no user namespaces".into()),
    });
    let c = find(&decide(&unconfined), "runtime-sandbox", None);
    assert_eq!(c.result, CheckResult::Warn);
    assert!(c.detail.contains("ran unconfined"), "{}", c.detail);
    assert!(c.detail.contains("no user namespaces"), "{}", c.detail);

    // A runtime that was never started ran nowhere: no sandbox check.
    let mut unstarted = observed_run();
    unstarted.result.as_mut().unwrap().runtime.sandbox = None;
    assert!(!decide(&unstarted)
        .iter()
        .any(|c| c.name == "runtime-sandbox"));
}

fn find(checks: &[Check], name: &str, folder: Option<&str>) -> Check {
    checks
        .iter()
        .find(|c| c.name == name && c.candidate.as_deref() == folder)
        .unwrap_or_else(|| panic!("no {name} check for {folder:?} in {checks:#?}"))
        .clone()
}

/// A component the gate lists and does not call is named in a warning,
/// never a pass: a plugin without a Runner gets no passing `runner-probe`,
/// and one with a Tool beside its Runner gets `uncalled` too.
#[test]
fn components_listed_and_not_called_are_warned_never_passed() {
    let tool = ComponentId {
        kind: "Tool".into(),
        name: "search".into(),
    };
    // A Runner beside a Tool: the Runner is probed, the Tool is not.
    let mut obs = observed_run();
    obs.spec.as_mut().unwrap().candidates[0]
        .declared
        .push(tool.clone());
    obs.result.as_mut().unwrap().candidates[0]
        .listed_components
        .push(tool.clone());
    let checks = decide(&obs);
    assert_eq!(
        find(&checks, "runner-probe", Some("codex-agent")).result,
        CheckResult::Pass
    );
    let uncalled = find(&checks, "uncalled", Some("codex-agent"));
    assert_eq!(uncalled.result, CheckResult::Warn);
    assert!(
        uncalled
            .detail
            .contains("Tool/search listed by the runtime and not called"),
        "{}",
        uncalled.detail
    );
    // No Runner at all: nothing was called, so runner-probe is no pass.
    let mut obs = observed_run();
    obs.spec.as_mut().unwrap().candidates[0].declared = vec![tool.clone()];
    obs.result.as_mut().unwrap().candidates[0].listed_components = vec![tool];
    let checks = decide(&obs);
    let probe = find(&checks, "runner-probe", Some("codex-agent"));
    assert_eq!(probe.result, CheckResult::Warn, "{}", probe.detail);
    assert!(
        probe.detail.contains("no runner was called"),
        "{}",
        probe.detail
    );
    assert_eq!(
        find(&checks, "uncalled", Some("codex-agent")).result,
        CheckResult::Warn
    );
    // Only Runners: no `uncalled` check.
    assert!(decide(&observed_run()).iter().all(|c| c.name != "uncalled"));
}

#[test]
fn a_whole_passing_run_carries_observed_values_on_every_pass() {
    let checks = decide(&observed_run());
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "runtime-sandbox",
            "network-isolation",
            "runtime-healthy",
            "control-token",
            "control-handshake",
            "installation",
            "initialized",
            "components",
            "runner-probe",
            "teardown"
        ]
    );
    crate::evidence::testing::assert_all_pass_with_observed_object(&checks);
    assert!(checks.iter().all(|c| c.consequence_of.is_none()));
    assert_eq!(
        find(&checks, "installation", Some("codex-agent"))
            .observed
            .unwrap()["chunks"],
        3
    );
}

#[test]
fn refuses_a_runtime_that_never_answers_health_and_its_candidates_follow_from_it() {
    let mut obs = observed_run();
    let r = obs.result.as_mut().unwrap();
    r.runtime.healthy = false;
    r.runtime.health_error = Some("connection refused".into());
    r.runtime.log_tail = "Traceback\nImportError: x".into();
    r.candidates.clear();
    let checks = decide(&obs);
    let h = find(&checks, "runtime-healthy", None);
    assert_eq!(h.result, CheckResult::Fail);
    for n in [
        "no healthy answer within 20 s (last probe: connection refused)",
        "  ImportError: x",
        "raise [discovery] health_timeout_secs",
    ] {
        assert!(h.detail.contains(n), "{n}: {}", h.detail);
    }
    let i = find(&checks, "initialized", Some("codex-agent"));
    assert_eq!(i.result, CheckResult::Fail);
    assert_eq!(i.consequence_of.as_deref(), Some("runtime-healthy"));
    // An early exit is named as such.
    obs.result.as_mut().unwrap().runtime.exited_early = Some("exit status 1".into());
    let h = find(&decide(&obs), "runtime-healthy", None);
    assert!(
        h.detail
            .contains("the runtime exited (exit status 1) before answering"),
        "{}",
        h.detail
    );
}

#[test]
fn refuses_a_control_server_that_accepts_another_token() {
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().token_control = Some(spec::TokenControl {
        refused: false,
        status: Some(101),
        detail: "a WebSocket with a different random token was accepted (HTTP 101)".into(),
    });
    let c = find(&decide(&obs), "control-token", None);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("not protected by its token"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_a_failed_handshake_and_unreached_candidates_follow_from_it() {
    let mut obs = observed_run();
    let r = obs.result.as_mut().unwrap();
    r.runtime_config = Some(spec::Step {
        ok: false,
        message: "runtime already bound".into(),
        data: json!(null),
    });
    r.candidates.clear();
    let checks = decide(&obs);
    let h = find(&checks, "control-handshake", None);
    assert_eq!(h.result, CheckResult::Fail);
    assert!(
        h.detail.contains("\"runtime already bound\""),
        "{}",
        h.detail
    );
    let i = find(&checks, "initialized", Some("codex-agent"));
    assert!(
        i.detail.contains("the host did not reach this candidate"),
        "{}",
        i.detail
    );
    assert_eq!(i.consequence_of.as_deref(), Some("control-handshake"));
    // With a good handshake an unreached candidate is a finding of its own.
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates.clear();
    let i = find(&decide(&obs), "initialized", Some("codex-agent"));
    assert_eq!(i.consequence_of, None);
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().ping = Some(spec::Step {
        ok: true,
        message: "success".into(),
        data: json!({"message": "pang"}),
    });
    assert_eq!(
        find(&decide(&obs), "control-handshake", None).result,
        CheckResult::Fail
    );
}

#[test]
fn refuses_an_upload_or_apply_the_runtime_did_not_accept_and_stops_there() {
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates[0].upload_error = Some(
        "the archive's bytes hash to 00 while archive-members recorded ab; the file changed after it was certified".into(),
    );
    let checks = decide(&obs);
    let c = find(&checks, "installation", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("the file changed after it was certified"),
        "{}",
        c.detail
    );
    assert!(checks
        .iter()
        .all(|c| c.name != "initialized" && c.name != "runner-probe"));
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates[0].apply = Some(spec::Step {
        ok: false,
        message: "artifact digest mismatch".into(),
        data: json!(null),
    });
    let c = find(&decide(&obs), "installation", Some("codex-agent"));
    assert!(
        c.detail
            .contains("apply_plugin_installation: artifact digest mismatch"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_a_plugin_the_runtime_did_not_initialize_naming_its_message() {
    let mut obs = observed_run();
    let o = &mut obs.result.as_mut().unwrap().candidates[0];
    o.status = None;
    o.final_status = None;
    o.failure = Some("the runtime reported 2 failed start(s) of the plugin's worker and never listed it as initialized".into());
    o.runtime_messages = vec![
        "[ERROR] worker exited".into(),
        "AttributeError: module 'main' has no attribute 'X'".into(),
    ];
    let checks = decide(&obs);
    let c = find(&checks, "initialized", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail);
    for n in [
        "plugin acme/codex-agent (codex-agent) was not initialized",
        "the runtime's message: AttributeError: module 'main' has no attribute 'X'",
        "fix the plugin (for example its manifest's execution.python path/attr)",
    ] {
        assert!(c.detail.contains(n), "{n}: {}", c.detail);
    }
    assert!(checks.iter().all(|c| c.name != "components"));
    // The evidence's record carries the same message: the runtime's last
    // line that is not a log-level line.
    let record = discovery_record(None, &obs.result.as_ref().unwrap().candidates[0]);
    assert_eq!(
        record.failure.as_deref(),
        Some(
            "the runtime reported 2 failed start(s) of the plugin's worker and never listed it as \
             initialized; the runtime's message: AttributeError: module 'main' has no attribute 'X'"
        )
    );
    // Initialized once, but gone after later installations.
    let mut obs = observed_run();
    obs.result.as_mut().unwrap().candidates[0].final_status = None;
    let c = find(&decide(&obs), "initialized", Some("codex-agent"));
    assert!(
        c.detail.contains(
            "after every candidate of its batch (0 resident at once) was installed list_plugins showed it no longer listed"
        ),
        "{}",
        c.detail
    );
}

#[test]
fn an_unprepared_probe_is_one_finding_under_runner_probe_setup() {
    let mut obs = observed_run();
    obs.setup.push(plan::SetupProblem::Unprepared {
        folder: "codex-agent".into(),
        runner: "default".into(),
        error: "/ev/staging/source/x.py: cannot read".into(),
    });
    let spec = obs.spec.as_mut().unwrap();
    spec.candidates[0].unprepared = vec!["default".into()];
    obs.result.as_mut().unwrap().candidates[0]
        .runner_probes
        .clear();
    let checks = decide(&obs);
    let setup = find(&checks, "runner-probe-setup", Some("codex-agent"));
    assert_eq!(setup.result, CheckResult::Fail);
    assert!(setup
        .detail
        .contains("cannot prepare the runner probe of `default`"));
    assert_eq!(setup.observed.unwrap()["problem"], "unprepared");
    let probe = find(&checks, "runner-probe", Some("codex-agent"));
    assert_eq!(probe.result, CheckResult::Fail);
    assert_eq!(probe.consequence_of.as_deref(), Some("runner-probe-setup"));
    // Another problem besides it makes the probe a finding of its own.
    obs.result.as_mut().unwrap().candidates[0]
        .runners_listed
        .clear();
    let probe = find(&decide(&obs), "runner-probe", Some("codex-agent"));
    assert_eq!(probe.consequence_of, None);
}

#[test]
fn setup_problems_name_their_cause() {
    let obs = Observation {
        setup: vec![
            plan::SetupProblem::NoArchive {
                folder: "acp-agent-runner".into(),
            },
            plan::SetupProblem::Manifest {
                folder: "codex-agent".into(),
                error: "manifest.yaml: spec.components missing".into(),
            },
            plan::SetupProblem::UndeclaredRunner {
                folder: "claude-code-agent".into(),
                candidate: "Runner/claude-code-agent".into(),
                runner: "other".into(),
                runners: vec!["default".into()],
            },
        ],
        ..Observation::default()
    };
    let checks = decide(&obs);
    assert_eq!(checks.len(), 3);
    assert!(checks.iter().all(|c| c.result == CheckResult::Fail));
    assert!(checks[0]
        .detail
        .contains("run the lbp-build and archive-members gates first"));
    assert_eq!(checks[1].name, "components");
    assert!(checks[1].detail.contains("fix the manifest"));
    assert_eq!(checks[2].name, "runner-probe-setup");
    assert!(
        checks[2].detail.contains("names runner \"other\""),
        "{}",
        checks[2].detail
    );
    assert!(checks[2]
        .detail
        .contains("fix `runner` in the profile or the manifest"));
}

#[test]
fn a_host_without_a_result_fails_and_its_teardown_follows_from_it() {
    let mut obs = observed_run();
    obs.result = None;
    obs.host_failure = Some(HostFailure {
        program: "/bin/vcc __discovery-host".into(),
        status: "killed by signal 9".into(),
        tail: "thread 'main' panicked".into(),
        result_path: "/ev/logs/discovery-rpc/host-result.json".into(),
        stderr_log: "/ev/logs/discovery-rpc/host.stderr".into(),
    });
    let checks = decide(&obs);
    let h = find(&checks, "host", None);
    assert_eq!(h.result, CheckResult::Fail);
    assert!(
        h.detail.contains("killed by signal 9 without writing"),
        "{}",
        h.detail
    );
    let t = find(&checks, "teardown", None);
    assert_eq!(t.result, CheckResult::Fail);
    assert_eq!(t.consequence_of.as_deref(), Some("host"));
    obs.survivors.push(survivor("TERM"));
    let t = find(&decide(&obs), "teardown", None);
    assert_eq!(t.consequence_of, None);
    assert!(t.detail.contains("pid 4242"), "{}", t.detail);
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_archives_fails_each_candidates_installation_and_starts_no_host() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let ctx = testing::ctx(evidence.path());
    let (checks, after) = testing::run(&DiscoveryRpc, &ctx);
    let checks = checks.unwrap();
    assert_eq!(checks.len(), ctx.selected.len(), "{checks:#?}");
    for (c, spec) in checks.iter().zip(&ctx.selected) {
        assert_eq!(c.name, "installation");
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert_eq!(c.candidate.as_deref(), Some(spec.folder()));
    }
    assert!(!evidence
        .path()
        .join("logs/discovery-rpc/host-spec.json")
        .exists());
    assert!(after.candidates.iter().all(|c| c.discovery.is_none()));
    assert_eq!(DiscoveryRpc.id(), "discovery-rpc");
    assert_eq!(DiscoveryRpc.headline_check(), Some("network-isolation"));
}

/// `observed_run` with one more component of the plugin, planned as
/// `plan` and answered as `call` (`None`: the host recorded no call).
fn with_component(plan: spec::ComponentPlan, call: Option<spec::ComponentCall>) -> Observation {
    let mut obs = observed_run();
    let c = &mut obs.spec.as_mut().unwrap().candidates[0];
    c.declared.push(plan.component.clone());
    c.declared.sort();
    c.component_plans.push(plan.clone());
    let o = &mut obs.result.as_mut().unwrap().candidates[0];
    o.listed_components = c.declared.clone();
    o.component_calls.extend(call);
    obs
}

fn tool_plan(name: &str) -> spec::ComponentPlan {
    spec::ComponentPlan {
        component: ComponentId {
            kind: "Tool".into(),
            name: name.into(),
        },
        action: Some("call_tool".into()),
        source: "declared".into(),
        input: json!({"city": "verify-coding-candidates component probe"}),
        not_called: None,
    }
}

fn tool_call(
    name: &str,
    answers: Vec<serde_json::Value>,
    error: Option<&str>,
) -> spec::ComponentCall {
    spec::ComponentCall {
        component: ComponentId {
            kind: "Tool".into(),
            name: name.into(),
        },
        action: "call_tool".into(),
        request: json!({}),
        answers,
        error: error.map(str::to_string),
        rpc_error: false,
    }
}

/// A Tool that replies passes `component-calls`, and its reply is in the
/// evidence record labelled `reply`; no `uncalled` warning.
#[test]
fn a_component_that_replies_passes_and_its_reply_is_recorded() {
    let obs = with_component(
        tool_plan("weather"),
        Some(tool_call(
            "weather",
            vec![json!({"tool_response": {"sky": "clear"}})],
            None,
        )),
    );
    let checks = decide(&obs);
    let c = find(&checks, "component-calls", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail
            .contains("Tool/weather (call_tool, declared input)"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains(r#"{"sky":"clear"}"#), "{}", c.detail);
    assert!(checks.iter().all(|c| c.name != "uncalled"));
    let record = discovery_record(
        obs.spec.as_ref().map(|s| &s.candidates[0]),
        &obs.result.as_ref().unwrap().candidates[0],
    );
    let r = &record.component_calls[0];
    assert_eq!(
        (r.component.as_str(), r.outcome.as_str(), r.reply.clone()),
        ("Tool/weather", "reply", Some(json!({"sky": "clear"})))
    );
}

/// Counterexamples: a call answered without a reply (`tool_response`
/// missing or null), a call that got no answer, a request the runtime or
/// the SDK refused, and a planned call the host never made all fail; a
/// component's own error is a warning naming it and the error's first line,
/// never a pass and never a failure.
#[test]
fn a_call_without_a_reply_or_refused_fails_and_a_components_own_error_warns() {
    for (answers, error, rpc, needle) in [
        (vec![json!({})], None, false, "answered without a reply"),
        (
            vec![json!({"tool_response": null})],
            None,
            false,
            "answered without a reply",
        ),
        (
            vec![],
            Some("call_tool: no answer within 30 s"),
            true,
            "the call_tool call failed: call_tool: no answer",
        ),
        (
            vec![],
            Some("KeyError: 'tool_name'"),
            false,
            "the call_tool call failed: KeyError",
        ),
        (
            vec![],
            Some("ActionCallError: Tool weather not found"),
            false,
            "Tool weather not found",
        ),
        (
            vec![],
            Some("ActionCallTimeoutError: Action call_tool call timed out"),
            false,
            "timed out",
        ),
        (
            vec![],
            Some("ActionCallError: ValidationError: 1 validation error for Session\nlauncher_type"),
            false,
            "validation error for Session",
        ),
    ] {
        let mut call = tool_call("weather", answers, error);
        call.rpc_error = rpc;
        let checks = decide(&with_component(tool_plan("weather"), Some(call)));
        let c = find(&checks, "component-calls", Some("codex-agent"));
        assert_eq!(c.result, CheckResult::Fail, "{needle}: {}", c.detail);
        assert!(c.detail.contains(needle), "{needle}: {}", c.detail);
    }
    let checks = decide(&with_component(tool_plan("weather"), None));
    let c = find(&checks, "component-calls", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
    assert!(c.detail.contains("planned and not called"), "{}", c.detail);

    let own = "ActionCallError: RuntimeError: WEATHER_API_KEY is not set\nsecond line";
    let checks = decide(&with_component(
        tool_plan("weather"),
        Some(tool_call("weather", vec![], Some(own))),
    ));
    let c = find(&checks, "component-calls", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
    assert!(
        c.detail.contains("Tool/weather (call_tool) raised its own error: ActionCallError: RuntimeError: WEATHER_API_KEY is not set"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("second line"), "{}", c.detail);
    // A failure beside the warning still fails.
    let mut obs = with_component(
        tool_plan("weather"),
        Some(tool_call("weather", vec![], Some(own))),
    );
    let c2 = tool_plan("forecast");
    obs.spec.as_mut().unwrap().candidates[0]
        .declared
        .push(c2.component.clone());
    obs.spec.as_mut().unwrap().candidates[0]
        .component_plans
        .push(c2);
    obs.result.as_mut().unwrap().candidates[0]
        .component_calls
        .push(tool_call("forecast", vec![json!({})], None));
    let c = find(&decide(&obs), "component-calls", Some("codex-agent"));
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
    assert!(c.detail.contains("also: Tool/weather"), "{}", c.detail);
}

/// An EventListener the runtime reports as not having handled the event,
/// and a kind the gate has no host action for, are listed and not called:
/// `uncalled` warns with the reason; nothing passes.
#[test]
fn an_unhandled_event_and_an_uncallable_kind_are_uncalled_warnings() {
    let listener = spec::ComponentPlan {
        component: ComponentId {
            kind: "EventListener".into(),
            name: "default".into(),
        },
        action: Some("emit_event".into()),
        source: "declared".into(),
        input: json!({"event_name": "PersonNormalMessageReceived"}),
        not_called: None,
    };
    let call = |emitted: serde_json::Value| spec::ComponentCall {
        component: listener.component.clone(),
        action: "emit_event".into(),
        request: json!({}),
        answers: vec![
            json!({"emitted_plugins": emitted, "event_context": {"event": {"text_message": "x"}}}),
        ],
        error: None,
        rpc_error: false,
    };
    let checks = decide(&with_component(listener.clone(), Some(call(json!([])))));
    assert!(
        checks.iter().all(|c| c.name != "component-calls"),
        "{checks:#?}"
    );
    let u = find(&checks, "uncalled", Some("codex-agent"));
    assert_eq!(u.result, CheckResult::Warn);
    assert!(u.detail.contains("EventListener/default"), "{}", u.detail);
    assert!(u.detail.contains("not in emitted_plugins"), "{}", u.detail);
    // Handled by this plugin: a reply (the event after its handlers ran).
    let own = json!([{"manifest": {"manifest": {"metadata": {"author": "acme", "name": "codex-agent"}}}}]);
    let checks = decide(&with_component(listener.clone(), Some(call(own))));
    assert_eq!(
        find(&checks, "component-calls", Some("codex-agent")).result,
        CheckResult::Pass
    );
    // Handled by another plugin only: not this one's reply.
    let other =
        json!([{"manifest": {"manifest": {"metadata": {"author": "acme", "name": "other"}}}}]);
    let checks = decide(&with_component(listener.clone(), Some(call(other))));
    assert_eq!(
        find(&checks, "uncalled", Some("codex-agent")).result,
        CheckResult::Warn
    );

    let parser = spec::ComponentPlan {
        component: ComponentId {
            kind: "Parser".into(),
            name: "pdf".into(),
        },
        action: None,
        source: String::new(),
        input: serde_json::Value::Null,
        not_called: Some("the gate has no host action for a Parser component".into()),
    };
    let checks = decide(&with_component(parser, None));
    let u = find(&checks, "uncalled", Some("codex-agent"));
    assert_eq!(u.result, CheckResult::Warn);
    assert!(
        u.detail.contains("Parser/pdf: the gate has no host action"),
        "{}",
        u.detail
    );
    assert!(checks.iter().all(|c| c.name != "component-calls"));
}
