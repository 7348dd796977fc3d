use super::decide::{decide, shared_gate_outcome, SdkCapability, SharedGateOutcome};
use super::observe::capability;
use crate::evidence::{Check, CheckResult, GateRecord, GateResult, Placement};
use crate::manifest_claims::ExecutionClaims;

fn claims(shared: Option<&str>, model: Option<&str>) -> ExecutionClaims {
    ExecutionClaims {
        shared_runtime: shared.map(Into::into),
        component_model: model.map(Into::into),
    }
}

fn sdk(shared: bool) -> SdkCapability {
    SdkCapability {
        version: if shared { "0.7.18" } else { "0.6.0b5" }.into(),
        shared_worker_runtime: shared,
        shared_certified_mode: shared,
    }
}

const SHARED: Option<&str> = Some("shared-runtime-v1");
const STATELESS: Option<&str> = Some("stateless-v1");

fn refused_only_by(record: &crate::evidence::PlacementRecord, words: &str) {
    assert_eq!(record.claimed, Placement::SharedRuntimeV1);
    assert_eq!(record.certified, None, "{record:?}");
    assert_eq!(record.refused.len(), 1, "{:?}", record.refused);
    assert!(record.refused[0].contains(words), "{:?}", record.refused);
}

#[test]
fn a_shared_claim_without_component_model_fails_naming_it() {
    let r = decide(
        &claims(SHARED, None),
        &sdk(true),
        &SharedGateOutcome::Passed,
    );
    refused_only_by(&r, "no execution.componentModel");
    let r = decide(
        &claims(SHARED, Some("stateful")),
        &sdk(true),
        &SharedGateOutcome::Passed,
    );
    refused_only_by(&r, "componentModel is \"stateful\"");
}

#[test]
fn a_shared_claim_under_an_sdk_without_a_shared_runtime_fails() {
    let r = decide(
        &claims(SHARED, STATELESS),
        &sdk(false),
        &SharedGateOutcome::Passed,
    );
    refused_only_by(&r, "langbot-plugin 0.6.0b5, has no shared runtime");
    // Half a runtime is none.
    let half = SdkCapability {
        shared_certified_mode: false,
        ..sdk(true)
    };
    let r = decide(
        &claims(SHARED, STATELESS),
        &half,
        &SharedGateOutcome::Passed,
    );
    refused_only_by(&r, "SHARED_CERTIFIED: absent");
}

#[test]
fn a_shared_claim_whose_gate_did_not_run_fails() {
    let not_run = shared_gate_outcome(None, "p");
    let r = decide(&claims(SHARED, STATELESS), &sdk(true), &not_run);
    refused_only_by(
        &r,
        "the shared-runtime gate did not run: nothing proved the stateless-v1 contract",
    );
}

#[test]
fn a_shared_claim_whose_gate_failed_fails() {
    let failed = SharedGateOutcome::Failed("shared-runtime/canary-isolation".into());
    let r = decide(&claims(SHARED, STATELESS), &sdk(true), &failed);
    refused_only_by(
        &r,
        "shared-runtime gate failed for it (shared-runtime/canary-isolation)",
    );
}

#[test]
fn a_proven_shared_claim_is_shared_runtime_v1_and_no_claim_is_dedicated() {
    let r = decide(
        &claims(SHARED, STATELESS),
        &sdk(true),
        &SharedGateOutcome::Passed,
    );
    assert_eq!(r.certified, Some(Placement::SharedRuntimeV1));
    assert!(r.refused.is_empty());
    assert_eq!(r.shared_runtime_gate, "passed");
    // No claim: dedicated, whatever the SDK and the gate.
    let not_run = shared_gate_outcome(None, "p");
    for model in [None, STATELESS] {
        let r = decide(&claims(None, model), &sdk(false), &not_run);
        assert_eq!(r.claimed, Placement::Dedicated);
        assert_eq!(r.certified, Some(Placement::Dedicated));
        assert!(r.refused.is_empty());
    }
}

#[test]
fn every_cause_is_named_at_once_and_an_unknown_shared_runtime_is_refused() {
    let r = decide(
        &claims(Some("true"), None),
        &sdk(false),
        &shared_gate_outcome(None, "p"),
    );
    assert_eq!(r.certified, None);
    assert_eq!(r.refused.len(), 4, "{:?}", r.refused);
    assert!(
        r.refused[0].contains("sharedRuntime is \"true\""),
        "{:?}",
        r.refused
    );
}

fn gate(result: GateResult, checks: Vec<Check>) -> GateRecord {
    GateRecord {
        id: "shared-runtime".into(),
        result,
        reason: Some("why".into()),
        note: None,
        proves: String::new(),
        does_not_prove: String::new(),
        required: true,
        duration_ms: 0,
        started_ms: None,
        candidates_left_out: Vec::new(),
        checks,
    }
}

#[test]
fn the_shared_runtime_gate_passes_a_candidate_only_with_its_own_passing_checks_and_no_failure() {
    let pass = |c: &str| Check::pass("two-workspaces", Some(c), "ok");
    let g = gate(GateResult::Pass, vec![pass("a")]);
    assert_eq!(
        shared_gate_outcome(Some(&g), "a"),
        SharedGateOutcome::Passed
    );
    // Nothing recorded for b: not run for it.
    assert!(matches!(
        shared_gate_outcome(Some(&g), "b"),
        SharedGateOutcome::NotRun(_)
    ));
    // Failed for a; b passed.
    let g = gate(
        GateResult::Fail,
        vec![
            Check::fail("canary", Some("a"), "leak"),
            pass("a"),
            pass("b"),
        ],
    );
    assert_eq!(
        shared_gate_outcome(Some(&g), "a"),
        SharedGateOutcome::Failed("shared-runtime/canary".into())
    );
    assert_eq!(
        shared_gate_outcome(Some(&g), "b"),
        SharedGateOutcome::Passed
    );
    // A gate-wide failure fails everyone.
    let g = gate(
        GateResult::Fail,
        vec![Check::fail("nsjail", None, "absent"), pass("b")],
    );
    assert!(matches!(
        shared_gate_outcome(Some(&g), "b"),
        SharedGateOutcome::Failed(_)
    ));
    for result in [GateResult::Skipped, GateResult::Blocked] {
        let why = shared_gate_outcome(Some(&gate(result, vec![pass("a")])), "a");
        assert!(
            matches!(&why, SharedGateOutcome::NotRun(w) if w.contains(result.word()) && w.contains("why")),
            "{why:?}"
        );
    }
    let mut left = gate(GateResult::Pass, vec![pass("a")]);
    left.candidates_left_out = vec!["a".into()];
    assert!(matches!(
        shared_gate_outcome(Some(&left), "a"),
        SharedGateOutcome::NotRun(_)
    ));
}

#[test]
fn the_candidate_check_fails_as_shared_claim_and_passes_as_placement() {
    let r = decide(
        &claims(SHARED, None),
        &sdk(false),
        &shared_gate_outcome(None, "p"),
    );
    let c = super::check("Runner/p/manifest.yaml", "p", &r, &sdk(false));
    assert_eq!(
        (c.name.as_str(), c.result),
        ("shared-claim", CheckResult::Fail)
    );
    assert!(c
        .detail
        .contains("Runner/p/manifest.yaml claims execution.sharedRuntime: shared-runtime-v1"));
    assert!(c.detail.contains("remove the claim"), "{}", c.detail);
    let r = decide(
        &claims(None, None),
        &sdk(false),
        &shared_gate_outcome(None, "p"),
    );
    let c = super::check("Runner/p/manifest.yaml", "p", &r, &sdk(false));
    assert_eq!(
        (c.name.as_str(), c.result),
        ("placement", CheckResult::Pass)
    );
    assert!(c.detail.starts_with("dedicated:"), "{}", c.detail);
}

#[test]
fn the_sdk_capability_is_read_from_the_sdks_own_definitions() {
    let mgr = "import x\n\nclass SharedPluginWorkerRuntime:\n    pass\n";
    let ctx = "class PluginExecutionMode(str, Enum):\n    DEDICATED = \"dedicated\"\n    \
               SHARED_CERTIFIED = \"shared-runtime-v1\"\n\nclass Other:\n    X = 1\n";
    let c = capability("0.7.18".into(), Some(mgr), Some(ctx));
    assert!(c.shared());
    // Not in RECORD, named elsewhere, or a member of another class: absent.
    assert!(!capability("v".into(), None, Some(ctx)).shared());
    let mention = "# SharedPluginWorkerRuntime comes in 0.7\nclass SharedPluginWorkerRuntimeX:\n";
    assert!(!capability("v".into(), Some(mention), Some(ctx)).shared_worker_runtime);
    let other = "class Other(str, Enum):\n    SHARED_CERTIFIED = 1\nclass PluginExecutionMode:\n    A = 1\n";
    assert!(!capability("v".into(), Some(mgr), Some(other)).shared_certified_mode);
}

#[test]
fn the_signer_files_are_the_unsigned_envelope_and_its_exact_payload() {
    let mut c = crate::gates::testing::bare_candidate("p");
    c.manifest = Some(crate::manifest::ManifestId {
        author: "acme".into(),
        name: "p".into(),
        version: "1.0.0".into(),
    });
    let r = decide(
        &claims(SHARED, STATELESS),
        &sdk(true),
        &SharedGateOutcome::Passed,
    );
    let e = super::signer::envelope(&c, &"a".repeat(64), &r).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = super::signer::write(dir.path(), "p", &e).unwrap();
    assert_eq!(
        files,
        ["envelopes/p/envelope.json", "envelopes/p/payload.json"]
    );
    let payload = std::fs::read(dir.path().join(&files[1])).unwrap();
    assert_eq!(payload, e.canonical_payload());
    let shown: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(&files[0])).unwrap()).unwrap();
    assert_eq!(shown["key_id"], "");
    assert_eq!(shown["signature"], "");
    assert_eq!(shown["schema"], "certified-plugin-envelope-v2");
    assert_eq!(
        shown["plugin_id"],
        serde_json::json!({"author": "acme", "name": "p"})
    );
    // Without a manifest identity there is nothing to sign.
    let bare = crate::gates::testing::bare_candidate("q");
    assert!(super::signer::envelope(&bare, "d", &r).is_none());
}
