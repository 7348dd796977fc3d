//! The `sdk-record` checks an evidence directory's kept files decide, for
//! `replay`: `sdk-version`, from what the SDK probe printed
//! (`DIR/logs/sdk-record/probe.stdout`) and the kept profile's pin. Every
//! other check of the gate decides from the interpreter's installed files
//! (each RECORD row re-hashed, bytecode recompiled, the environment's `.pth`
//! and start-up files), which the directory does not keep.

use super::{version_check, SdkProbe};
use crate::evidence::Check;
use std::path::Path;

/// The checks re-decided here.
pub(crate) const REDECIDED: [&str; 1] = ["sdk-version"];

/// `sdk-version` from `dir/logs/sdk-record/probe.stdout` against the pin
/// `pinned`; `python` names the interpreter in the detail.
///
/// # Errors
/// When the probe's output is not kept or is not its JSON document.
pub(crate) fn redecide(dir: &Path, pinned: &str, python: &str) -> Result<Vec<Check>, String> {
    let rel = "logs/sdk-record/probe.stdout";
    let bytes = std::fs::read(dir.join(rel)).map_err(|e| format!("{rel} is not kept: {e}"))?;
    let probe: SdkProbe = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{rel} is not the SDK probe's JSON document: {e}"))?;
    Ok(vec![version_check(&probe, pinned, python)])
}
