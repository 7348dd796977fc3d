//! The `placement` gate on our own fixture: a manifest's shared-runtime
//! claim is judged, never taken on its word (`shared-claim` overlay: the
//! fixture's `codex-agent` claims `sharedRuntime: shared-runtime-v1`
//! without `componentModel`, as the real coding runners do, under
//! `langbot-plugin==0.6.0b5`, which has no shared runtime), and each
//! archive's normalized digest (the SDK's own `normalized_zip_digest`, which
//! 0.6.0b5 already carries, in its schema-v1 `certification.py`).

use crate::common;

use common::{
    candidate, check, detail, evidence_dir, fixture_repo, gate_result, junit_suite, python,
    python_0718, read_evidence, read_junit, stdout_text, verifier,
};
use serde_json::Value;

#[test]
fn a_shared_claim_without_its_proof_fails_by_name_and_the_statement_is_never_passed() {
    let repo = fixture_repo(&["shared-claim"]);
    let (out, _keep, dir) =
        common::run_only(&repo.root, &python(), "placement,archive-members", &[]);
    let text = stdout_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let ev = read_evidence(&dir);
    assert_eq!(gate_result(&ev, "placement"), "fail");
    let claim = check(&ev, "placement", "shared-claim", Some("codex-agent"));
    let why = detail(claim);
    assert_eq!(claim["result"], "fail");
    for cause in [
        "Runner/codex-agent/manifest.yaml claims execution.sharedRuntime: shared-runtime-v1",
        "no execution.componentModel",
        "langbot-plugin 0.6.0b5, has no shared runtime",
        "the shared-runtime gate did not run",
    ] {
        assert!(why.contains(cause), "{cause}: {why}");
    }
    let p = &candidate(&ev, "codex-agent")["placement"];
    assert_eq!(p["shared_runtime"], "shared-runtime-v1");
    assert_eq!(p["component_model"], Value::Null);
    assert_eq!(p["claimed"], "shared-runtime-v1");
    assert_eq!(p["certified"], Value::Null);
    assert_eq!(p["sdk_shared_runtime"], false);
    // The fixture's other plugins claim nothing: dedicated, as before.
    for folder in ["acp-agent-runner", "claude-code-agent"] {
        let c = check(&ev, "placement", "placement", Some(folder));
        assert_eq!(c["result"], "pass", "{c}");
        assert_eq!(
            candidate(&ev, folder)["placement"]["certified"],
            "dedicated"
        );
    }
    let verdict = &candidate(&ev, "codex-agent")["verdict"];
    assert_eq!(
        (verdict["result"].as_str(), verdict["check"].as_str()),
        (Some("fail"), Some("shared-claim"))
    );
    let st: Value =
        serde_json::from_slice(&std::fs::read(dir.join("statement.intoto.json")).unwrap()).unwrap();
    assert_eq!(st["predicate"]["result"], "FAILED");
    let failed = st["predicate"]["failedTests"].to_string();
    assert!(
        failed.contains("placement/codex-agent/shared-claim"),
        "{failed}"
    );
    // The summary and JUnit show the placement.
    assert!(text.contains("placement/shared-claim"), "{text}");
    assert!(
        text.contains("acp-agent-runner   pass  dedicated"),
        "{text}"
    );
    let junit = read_junit(&dir);
    let cases = junit_suite(&junit, "placement")["cases"].to_string();
    assert!(
        cases.contains("shared-claim") && cases.contains("no execution.componentModel"),
        "{cases}"
    );
}

/// Under SDK 0.7.18, whose own files define the shared runtime, a complete
/// claim (`sharedRuntime` and `componentModel: stateless-v1`) fails for one
/// cause only: nothing proved the contract (no `shared-runtime` gate ran).
#[test]
fn under_sdk_0_7_a_complete_claim_still_needs_the_shared_runtime_gate() {
    let repo = fixture_repo(&[]);
    let manifest = repo.root.join("Runner/codex-agent/manifest.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "\nexecution:\n",
        "\nexecution:\n  sharedRuntime: shared-runtime-v1\n  componentModel: stateless-v1\n",
    );
    std::fs::write(&manifest, text).unwrap();
    common::git(&repo.root, &["commit", "-q", "-a", "-m", "complete claim"]);
    let (keep, dir) = evidence_dir();
    let profile = keep.path().join("p.toml");
    std::fs::write(
        &profile,
        "name = \"sdk-0718\"\n[sdk]\nrequirement = \"langbot-plugin==0.7.18\"\n\
         [[candidate]]\npath = \"Runner/acp-agent-runner\"\n[[candidate]]\npath = \"Runner/codex-agent\"\n",
    )
    .unwrap();
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python_0718())
        .arg("--profile")
        .arg(&profile)
        .args(["--only", "placement"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout_text(&out));
    let ev = read_evidence(&dir);
    let p = &candidate(&ev, "codex-agent")["placement"];
    assert_eq!(p["sdk_shared_runtime"], true, "{p}");
    assert_eq!(p["component_model"], "stateless-v1");
    let refused = p["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{p}");
    assert!(
        refused[0]
            .as_str()
            .unwrap()
            .starts_with("the shared-runtime gate did not run"),
        "{p}"
    );
    assert_eq!(
        candidate(&ev, "acp-agent-runner")["placement"]["certified"],
        "dedicated"
    );
}
