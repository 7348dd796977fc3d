//! What the `sdk-shadow` gate observes, and how: each candidate's staged
//! entries and archive members, and the shadow probe
//! (`src/python/shadow_probe.py`) run in its code dir (DIR/extracted/<folder>)
//! with the verified interpreter, private roots and the allowlisted
//! environment. [`super::decide`] judges the [`Observation`].

use super::{relative_entries, Realpaths, ShadowProbe, VerifiedPaths, PACKAGE, WATCHED_ENV};
use crate::context::RunContext;
use crate::evidence::CandidateRecord;
use crate::python;
use serde::Serialize;
use std::path::Path;

/// What the gate observed: the verified install, the harness's own
/// environment, and each candidate.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Observation {
    /// The install `sdk-record` verified, as real paths.
    pub verified: VerifiedPaths,
    /// Those of [`WATCHED_ENV`] set in the harness's own environment.
    pub harness_env: Vec<String>,
    /// Each candidate, in profile order.
    pub candidates: Vec<CandidateObservation>,
}

/// One candidate's sources and the probe run in its extraction.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CandidateObservation {
    /// Candidate folder.
    pub folder: String,
    /// The staged candidate directory.
    pub staged: String,
    /// `/`-separated relative paths of every entry of the staged candidate,
    /// or why it could not be walked.
    pub staged_entries: Result<Vec<String>, String>,
    /// The archive `archive-members` recorded: its path (relative to DIR)
    /// and member names.
    pub archive: Option<(String, Vec<String>)>,
    /// DIR/extracted/<folder>: the worker's code dir and cwd.
    pub code_dir: String,
    /// Whether the code dir is a directory.
    pub code_dir_exists: bool,
    /// What the shadow probe printed, or why it did not answer; none when
    /// there was no code dir to run it in.
    pub probe: Option<Result<ShadowProbe, String>>,
    /// Real paths of the paths the probe named.
    pub real: Realpaths,
}

/// Walks the staged candidate and takes the recorded archive's members.
pub(crate) fn observe_sources(
    folder: &str,
    staged: &Path,
    record: Option<&CandidateRecord>,
) -> CandidateObservation {
    CandidateObservation {
        folder: folder.to_string(),
        staged: staged.display().to_string(),
        staged_entries: relative_entries(staged),
        archive: record.and_then(|r| r.archive.as_ref()).map(|a| {
            (
                a.path.clone(),
                a.members.iter().map(|m| m.name.clone()).collect(),
            )
        }),
        code_dir: String::new(),
        code_dir_exists: false,
        probe: None,
        real: Realpaths::default(),
    }
}

/// Observes every candidate: its sources, and the probe in its code dir.
///
/// # Errors
/// When the SDK was not verified or private roots cannot be created.
pub(crate) fn observe(ctx: &RunContext) -> Result<Observation, String> {
    let sdk = ctx.verified_sdk.clone().ok_or_else(|| {
        "sdk-shadow needs the SDK verified by sdk-record, and none is recorded; run sdk-record first".to_string()
    })?;
    let mut obs = Observation {
        verified: VerifiedPaths::of(&sdk),
        harness_env: WATCHED_ENV
            .iter()
            .filter(|n| std::env::var_os(n).is_some())
            .map(|n| n.to_string())
            .collect(),
        candidates: Vec::new(),
    };
    for spec in ctx.candidate_specs().to_vec() {
        let folder = spec.folder().to_string();
        let record = ctx.candidates.iter().find(|c| c.folder == folder);
        let code_dir = record
            .and_then(|r| r.archive.as_ref())
            .and_then(|a| a.extracted.as_ref())
            .map(|rel| ctx.evidence_dir.join(rel))
            .unwrap_or_else(|| ctx.extracted_root().join(&folder));
        let mut c = observe_sources(&folder, &ctx.staged_candidate(&spec), record);
        c.code_dir = code_dir.display().to_string();
        c.code_dir_exists = code_dir.is_dir();
        if c.code_dir_exists {
            let (home, tmp) = ctx.private_roots("sdk-shadow", &folder).map_err(|e| {
                format!("sdk-shadow: cannot create private roots for {folder}: {e}")
            })?;
            let probe: Result<ShadowProbe, String> = python::Probe {
                python: &ctx.python,
                name: "shadow_probe",
                source: python::SHADOW_PROBE,
                args: &[PACKAGE.to_string(), code_dir.display().to_string()],
                cwd: &code_dir,
                env: ctx.child_env(&home, &tmp),
                log_stem: &ctx.log_stem("sdk-shadow", &folder),
                timeout: python::PROBE_TIMEOUT,
            }
            .run();
            if let Ok(p) = &probe {
                c.real = Realpaths::of(p);
            }
            c.probe = Some(probe);
        }
        obs.candidates.push(c);
    }
    Ok(obs)
}
