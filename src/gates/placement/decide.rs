//! The placement decision: pure functions over what the manifest claims,
//! what the SDK has, and what the `shared-runtime` gate found for the
//! candidate. No I/O.

use crate::evidence::{CheckResult, GateRecord, GateResult, Placement, PlacementRecord};
use crate::manifest_claims::{ExecutionClaims, SHARED_RUNTIME_V1, STATELESS_V1};
use serde::Serialize;

/// The id of the gate that proves the stateless-v1 contract with two
/// installations on one worker.
pub const SHARED_RUNTIME_GATE: &str = "shared-runtime";

/// What the `shared-runtime` gate says about one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "why")]
pub enum SharedGateOutcome {
    /// It ran for the candidate and every check of it passed.
    Passed,
    /// A check of it failed for the candidate (or gate-wide): the checks.
    Failed(String),
    /// It did not run for the candidate: not in the catalogue, not
    /// selected, skipped, blocked, or it recorded no check for it (why).
    NotRun(String),
}

impl SharedGateOutcome {
    /// One line for the evidence.
    pub fn line(&self) -> String {
        match self {
            SharedGateOutcome::Passed => "passed".into(),
            SharedGateOutcome::Failed(why) => format!("failed: {why}"),
            SharedGateOutcome::NotRun(why) => format!("not run: {why}"),
        }
    }
}

/// The `shared-runtime` gate's outcome for candidate `folder`, from the
/// records of the gates that ended before `placement` (`None` for the gate:
/// the catalogue has no such gate).
pub fn shared_gate_outcome(record: Option<&GateRecord>, folder: &str) -> SharedGateOutcome {
    let Some(g) = record else {
        return SharedGateOutcome::NotRun(
            "the shared-runtime gate did not run: nothing proved the stateless-v1 contract (this \
             verifier has no such gate)"
                .into(),
        );
    };
    let reason = g.reason.clone().unwrap_or_default();
    match g.result {
        GateResult::Skipped => {
            return SharedGateOutcome::NotRun(format!(
                "the shared-runtime gate did not run (skipped: {reason}): nothing proved the \
                 stateless-v1 contract"
            ))
        }
        GateResult::Blocked => {
            return SharedGateOutcome::NotRun(format!(
                "the shared-runtime gate did not run (blocked: {reason}): nothing proved the \
                 stateless-v1 contract"
            ))
        }
        GateResult::Pass | GateResult::Fail => {}
    }
    if g.candidates_left_out.iter().any(|c| c == folder) {
        return SharedGateOutcome::NotRun(format!(
            "the shared-runtime gate left {folder} out (it did not pass an earlier gate): nothing \
             proved the stateless-v1 contract"
        ));
    }
    let failed: Vec<String> = g
        .checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
        .filter(|c| c.candidate.as_deref().is_none_or(|f| f == folder))
        .map(|c| format!("{}/{}", g.id, c.name))
        .collect();
    if !failed.is_empty() {
        return SharedGateOutcome::Failed(failed.join(", "));
    }
    let own_pass = g
        .checks
        .iter()
        .any(|c| c.result == CheckResult::Pass && c.candidate.as_deref() == Some(folder));
    if !own_pass {
        return SharedGateOutcome::NotRun(format!(
            "the shared-runtime gate recorded no passing check for {folder}: nothing proved the \
             stateless-v1 contract for it"
        ));
    }
    SharedGateOutcome::Passed
}

/// Whether the verified SDK has a shared runtime, as read from its own
/// files (SDK 0.7: `runtime/plugin/mgr.py` defines
/// `SharedPluginWorkerRuntime`; `entities/io/context.py` defines
/// `PluginExecutionMode.SHARED_CERTIFIED`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SdkCapability {
    /// The SDK version `sdk-record` verified.
    pub version: String,
    /// `class SharedPluginWorkerRuntime` is defined in the RECORD-listed
    /// `langbot_plugin/runtime/plugin/mgr.py`.
    pub shared_worker_runtime: bool,
    /// `SHARED_CERTIFIED` is a member of `class PluginExecutionMode` in the
    /// RECORD-listed `langbot_plugin/entities/io/context.py`.
    pub shared_certified_mode: bool,
}

impl SdkCapability {
    /// Both parts of the shared runtime are there.
    pub fn shared(&self) -> bool {
        self.shared_worker_runtime && self.shared_certified_mode
    }
}

/// The causes that keep a shared claim from being certified, one sentence
/// each; empty when `claims` make none, or the claim is proven.
pub fn refusals(
    claims: &ExecutionClaims,
    sdk: &SdkCapability,
    gate: &SharedGateOutcome,
) -> Vec<String> {
    let Some(shared) = &claims.shared_runtime else {
        return Vec::new();
    };
    let mut why = Vec::new();
    if shared != SHARED_RUNTIME_V1 {
        why.push(format!(
            "execution.sharedRuntime is {shared:?}; the only shared placement an SDK defines is \
             {SHARED_RUNTIME_V1:?}"
        ));
    }
    match claims.component_model.as_deref() {
        Some(STATELESS_V1) => {}
        Some(other) => why.push(format!(
            "execution.componentModel is {other:?}; a shared runtime needs {STATELESS_V1:?} (the \
             SDK's create_envelope refuses anything else)"
        )),
        None => why.push(format!(
            "no execution.componentModel: a shared runtime needs componentModel: {STATELESS_V1} \
             (the SDK's create_envelope refuses a manifest without it)"
        )),
    }
    if !sdk.shared() {
        why.push(format!(
            "the candidate's SDK, langbot-plugin {}, has no shared runtime (SharedPluginWorkerRuntime: \
             {}, PluginExecutionMode.SHARED_CERTIFIED: {}): it would run in a dedicated worker",
            sdk.version,
            found(sdk.shared_worker_runtime),
            found(sdk.shared_certified_mode)
        ));
    }
    match gate {
        SharedGateOutcome::Passed => {}
        SharedGateOutcome::Failed(checks) => why.push(format!(
            "the shared-runtime gate failed for it ({checks}): the stateless-v1 contract does not hold"
        )),
        SharedGateOutcome::NotRun(reason) => why.push(reason.clone()),
    }
    why
}

fn found(yes: bool) -> &'static str {
    if yes {
        "found"
    } else {
        "absent"
    }
}

/// The candidate's placement record: no claim is `dedicated`; a shared
/// claim is `shared-runtime-v1` only with no [`refusals`], else certified
/// nothing.
pub fn decide(
    claims: &ExecutionClaims,
    sdk: &SdkCapability,
    gate: &SharedGateOutcome,
) -> PlacementRecord {
    let refused = refusals(claims, sdk, gate);
    let claimed = if claims.shared_runtime.is_some() {
        Placement::SharedRuntimeV1
    } else {
        Placement::Dedicated
    };
    PlacementRecord {
        shared_runtime: claims.shared_runtime.clone(),
        component_model: claims.component_model.clone(),
        claimed,
        certified: refused.is_empty().then_some(claimed),
        sdk_shared_runtime: sdk.shared(),
        shared_runtime_gate: gate.line(),
        refused,
    }
}
