//! What the `placement` gate reads: each staged manifest's claims, and the
//! verified SDK's own files for its shared runtime.

use super::decide::SdkCapability;
use crate::context::{RunContext, VerifiedSdk};
use crate::manifest_claims::{parse_claims, ExecutionClaims};

/// The SDK file that defines the shared worker runtime (SDK 0.7.18).
pub const MGR_PY: &str = "langbot_plugin/runtime/plugin/mgr.py";
/// The SDK file that defines `PluginExecutionMode` (SDK 0.7.18).
pub const CONTEXT_PY: &str = "langbot_plugin/entities/io/context.py";

/// One candidate's manifest claims, or why they could not be read.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ManifestClaims {
    /// Candidate folder.
    pub folder: String,
    /// The manifest, relative to the repository.
    pub manifest: String,
    /// The claims, or the reason they could not be read.
    pub claims: Result<ExecutionClaims, String>,
}

/// Each of the run's candidates' claims, from DIR/staging/source.
pub fn claims(ctx: &RunContext) -> Vec<ManifestClaims> {
    ctx.selected
        .iter()
        .map(|c| {
            let path = ctx.staged_candidate(c).join("manifest.yaml");
            let claims = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read it: {e}"))
                .and_then(|text| parse_claims(&text));
            ManifestClaims {
                folder: c.folder().to_string(),
                manifest: format!("{}/manifest.yaml", c.path),
                claims,
            }
        })
        .collect()
}

/// The shared runtime of the SDK `sdk-record` verified: its RECORD must
/// list each file (so `sdk-record` checked its hash), and the file must
/// define the name.
pub fn sdk_capability(ctx: &RunContext) -> SdkCapability {
    let version = ctx
        .sdk
        .version
        .clone()
        .unwrap_or_else(|| "(unknown)".into());
    let Some(sdk) = &ctx.verified_sdk else {
        return SdkCapability {
            version,
            shared_worker_runtime: false,
            shared_certified_mode: false,
        };
    };
    let record = std::fs::read_to_string(sdk.dist_info.join("RECORD")).unwrap_or_default();
    let read = |rel: &str| listed_file(sdk, &record, rel);
    capability(
        version,
        read(MGR_PY).as_deref(),
        read(CONTEXT_PY).as_deref(),
    )
}

/// The text of `rel` (relative to site-packages) when RECORD lists it.
fn listed_file(sdk: &VerifiedSdk, record: &str, rel: &str) -> Option<String> {
    let listed = record.lines().any(|l| l.split(',').next() == Some(rel));
    if !listed {
        return None;
    }
    std::fs::read_to_string(sdk.site_packages.join(rel)).ok()
}

/// [`SdkCapability`] from the two files' texts (`None`: not in RECORD).
pub fn capability(version: String, mgr: Option<&str>, context: Option<&str>) -> SdkCapability {
    let defines_class = |text: &str, name: &str| {
        text.lines().any(|l| {
            l.strip_prefix("class ")
                .and_then(|r| r.strip_prefix(name))
                .is_some_and(|r| r.starts_with(['(', ':']))
        })
    };
    let member_of = |text: &str, class: &str, member: &str| {
        let mut inside = false;
        for line in text.lines() {
            if !line.starts_with([' ', '\t']) && !line.trim().is_empty() {
                inside = line.starts_with(&format!("class {class}"));
                continue;
            }
            if inside && line.trim_start().starts_with(&format!("{member} =")) {
                return true;
            }
        }
        false
    };
    SdkCapability {
        version,
        shared_worker_runtime: mgr.is_some_and(|t| defines_class(t, "SharedPluginWorkerRuntime")),
        shared_certified_mode: context
            .is_some_and(|t| member_of(t, "PluginExecutionMode", "SHARED_CERTIFIED")),
    }
}
