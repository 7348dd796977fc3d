//! The `placement` gate: a manifest's shared-runtime claim is checked, never
//! taken on its word.
//!
//! Each candidate's `execution.sharedRuntime` and `execution.componentModel`
//! go into its evidence (`candidates[].placement`) with the placement
//! certified for it:
//!
//! - no `sharedRuntime`: `dedicated`, as every SDK runs a plugin;
//! - `sharedRuntime: shared-runtime-v1`: `shared-runtime-v1` only when the
//!   manifest also says `componentModel: stateless-v1`, the verified SDK
//!   has a shared runtime, and the `shared-runtime` gate passed for the
//!   candidate. Otherwise the `shared-claim` check fails naming every cause,
//!   so the candidate's verdict fails and the statement is never `PASSED`.
//!
//! The gate runs after `shared-runtime` (catalogue `after`), whatever that
//! gate's result: a failed or blocked `shared-runtime` still lets this gate
//! name the claim it leaves unproven. Observation ([`observe`]) reads the
//! staged manifests and the verified SDK's own files; [`decide`] is pure.

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, Placement, PlacementRecord};
use serde_json::json;

pub mod decide;
pub mod observe;
pub mod signer;
#[cfg(test)]
mod tests;

pub use decide::{SdkCapability, SharedGateOutcome};

/// Gate id.
pub const GATE: &str = "placement";

/// The `placement` gate.
pub struct PlacementGate;

impl super::Gate for PlacementGate {
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let sdk = observe::sdk_capability(ctx);
        let shared_gate = ctx
            .ended
            .iter()
            .find(|g| g.id == decide::SHARED_RUNTIME_GATE);
        let mut checks = Vec::new();
        for m in observe::claims(ctx) {
            let claims = match &m.claims {
                Ok(c) => c,
                Err(why) => {
                    checks.push(Check::fail(
                        "manifest",
                        Some(&m.folder),
                        format!(
                            "placement: {}: {why}; expected a manifest whose `execution` is a mapping; \
                             fix the manifest",
                            m.manifest
                        ),
                    ));
                    continue;
                }
            };
            let gate = decide::shared_gate_outcome(shared_gate, &m.folder);
            let record = decide::decide(claims, &sdk, &gate);
            checks.push(check(&m.manifest, &m.folder, &record, &sdk));
            let digest = for_signer(ctx, &m.folder, &record, &mut checks);
            let folder = m.folder.clone();
            out.set(move |ctx| {
                if let Some(c) = ctx.record_mut(&folder) {
                    c.placement = Some(record);
                    if let (Some(a), Some(d)) = (c.archive.as_mut(), digest) {
                        a.normalized_zip_digest = Some(d);
                    }
                }
            });
        }
        Ok(checks)
    }
}

/// What a signer needs of candidate `folder`, once `archive-members`
/// recorded its archive: the SDK's normalized digest (returned, for
/// `archives[].normalized_zip_digest`) and, when certified
/// `shared-runtime-v1`, the unsigned envelope and its payload in DIR
/// (`signer-files`). A digest that cannot be taken fails `normalized-digest`.
fn for_signer(
    ctx: &RunContext,
    folder: &str,
    record: &PlacementRecord,
    checks: &mut Vec<Check>,
) -> Option<String> {
    let c = ctx.candidates.iter().find(|c| c.folder == folder)?;
    let archive = c.archive.as_ref()?;
    let digest =
        match crate::certification::normalized_zip_digest(&ctx.evidence_dir.join(&archive.path)) {
            Ok(d) => d,
            Err(why) => {
                checks.push(Check::fail(
                    "normalized-digest",
                    Some(folder),
                    format!(
                    "placement: {why}; expected the archive archive-members recorded, a ZIP file"
                ),
                ));
                return None;
            }
        };
    if record.certified != Some(Placement::SharedRuntimeV1) {
        return Some(digest);
    }
    let written = signer::envelope(c, &digest, record)
        .ok_or_else(|| "no manifest identity was recorded".to_string())
        .and_then(|e| signer::write(&ctx.evidence_dir, folder, &e));
    checks.push(match written {
        Ok(files) => Check::pass(
            "signer-files",
            Some(folder),
            format!(
                "the unsigned envelope and its payload for the signer: {}",
                files.join(", ")
            ),
        )
        .with_observed(json!({ "files": files, "normalized_zip_digest": digest })),
        Err(why) => Check::fail(
            "signer-files",
            Some(folder),
            format!("placement: cannot write the unsigned envelope: {why}"),
        ),
    });
    Some(digest)
}

/// The candidate's check: `placement` (pass) when a placement was
/// certified, `shared-claim` (fail) naming every cause when not.
pub fn check(manifest: &str, folder: &str, record: &PlacementRecord, sdk: &SdkCapability) -> Check {
    let observed = json!({ "placement": record, "sdk": sdk });
    match record.certified {
        Some(Placement::Dedicated) => Check::pass(
            "placement",
            Some(folder),
            format!("dedicated: {manifest} claims no shared runtime"),
        ),
        Some(Placement::SharedRuntimeV1) => Check::pass(
            "placement",
            Some(folder),
            format!(
                "shared-runtime-v1: {manifest} claims sharedRuntime shared-runtime-v1 with \
                 componentModel stateless-v1, the SDK (langbot-plugin {}) has a shared runtime, and \
                 the shared-runtime gate passed for it",
                sdk.version
            ),
        ),
        None => {
            let causes: Vec<String> = record.refused.iter().map(|r| format!("- {r}")).collect();
            Check::fail(
                "shared-claim",
                Some(folder),
                format!(
                    "placement: {manifest} claims execution.sharedRuntime: {}, which is not \
                     certified:\n{}\nExpected: componentModel stateless-v1, an SDK with a shared runtime \
                     (0.7) and a passing shared-runtime gate. Either remove the claim (the candidate \
                     is then certified dedicated) or meet each point above.",
                    record.shared_runtime.as_deref().unwrap_or_default(),
                    causes.join("\n")
                ),
            )
        }
    }
    .with_observed(observed)
}
