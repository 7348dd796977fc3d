//! Gathering: each run given to `merge` read and verified on its own before
//! any is compared with another. A run is refused when it was interrupted,
//! when its `evidence.json` no longer hashes to its own sign-off digest,
//! when a group run it records has no evidence in its directory, or when a
//! file of it differs from its `SHA256SUMS` and sealed listing
//! ([`super::share_files`], which replays its group directories too).

use super::{share_files, Run};
use crate::evidence::{self, Evidence, SdkGroupRecord, Verdict};
use crate::pipeline::groups::relative_dir;
use crate::profile::{self, Profile};
use std::path::Path;

/// The run in `dir`, as given on the command line, verified whole.
///
/// # Errors
/// A sentence naming the directory, what was expected, what was found and
/// what to do.
pub(super) fn share(dir: &Path) -> Result<Run, String> {
    let ev = read_verified(dir)?;
    for group in ev.sdk_groups.iter().flatten().filter(|g| !g.default) {
        group_present(dir, group)?;
    }
    // Every file of the share, not only evidence.json and the archives.
    share_files::check(dir)?;
    Ok((dir.to_path_buf(), ev))
}

/// The profile the run `(dir, ev)` kept (`DIR/logs/profile.toml`), once
/// its text hashes to the digest its evidence records: the shares are
/// checked against the deal it makes.
///
/// # Errors
/// When the file is unreadable, differs from the recorded digest, or is no
/// profile.
pub(super) fn kept_profile((dir, ev): &Run) -> Result<Profile, String> {
    let path = evidence::kept_profile::path(dir);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: cannot read the profile the run kept ({e}); the shares are dealt from it: copy the \
             whole evidence directory",
            path.display()
        )
    })?;
    let digest = crate::hash::sha256_bytes(text.as_bytes());
    if digest != ev.profile.sha256 {
        return Err(format!(
            "{}: expected the profile whose sha256 evidence.json records ({}), found sha256 {digest}; \
             refusing to merge it",
            path.display(),
            ev.profile.sha256
        ));
    }
    profile::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())
}

/// The evidence in `dir`: a finished run whose `evidence.json` hashes to
/// its own sign-off digest (a group directory inside a share is read this
/// way too; the share's replay re-hashed its files).
///
/// # Errors
/// When `evidence.json` is unreadable, the run was interrupted, or the file
/// was edited after sealing.
pub(super) fn read_verified(dir: &Path) -> Result<Evidence, String> {
    let text = std::fs::read_to_string(dir.join(evidence::EVIDENCE_JSON))
        .map_err(|e| format!("{}: cannot read evidence.json: {e}", dir.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}/evidence.json: {e}", dir.display()))?;
    let ev: Evidence = serde_json::from_value(value.clone())
        .map_err(|e| format!("{}/evidence.json: {e}", dir.display()))?;
    if ev.verdict == Verdict::Incomplete {
        return Err(format!(
            "{}/evidence.json: expected a finished partition, found verdict incomplete (the run was \
             interrupted); re-run that partition, then merge",
            dir.display()
        ));
    }
    let digest = evidence::canonical_digest(&value);
    if digest != ev.sign_off.evidence_sha256 {
        return Err(format!(
            "{}/evidence.json: its sign-off digest is {}, the content hashes to {digest}: the file was edited; \
             refusing to merge it (run `replay` on it to see more)",
            dir.display(),
            ev.sign_off.evidence_sha256
        ));
    }
    Ok(ev)
}

/// Ok when the run of `group`, which the run in `dir` records, left its
/// evidence where `sdk_groups[]` says (`groups/<pin>/`).
///
/// # Errors
/// A group whose run left no evidence, a recorded directory other than
/// `groups/<pin>`, or a missing `evidence.json` there.
pub(super) fn group_present(dir: &Path, group: &SdkGroupRecord) -> Result<(), String> {
    let expected = relative_dir(&group.requirement);
    let Some(relative) = &group.evidence else {
        return Err(format!(
            "{}: expected the evidence of its sdk group {} in {}/{expected}/, found none: its run left \
             no evidence ({}); a group that was not certified cannot be merged: re-run that share",
            dir.display(),
            group.requirement,
            dir.display(),
            group.error.as_deref().unwrap_or("it was interrupted")
        ));
    };
    if *relative != expected {
        return Err(format!(
            "{}/evidence.json: sdk group {}: expected its evidence in {expected}, found {relative:?}; \
             refusing to merge it",
            dir.display(),
            group.requirement
        ));
    }
    if !dir.join(relative).join(evidence::EVIDENCE_JSON).is_file() {
        return Err(format!(
            "{}: expected the evidence of its sdk group {} in {}/{relative}/evidence.json (sdk_groups[] \
             lists it), found no such file: the group's evidence is missing; copy the whole evidence \
             directory, {relative}/ included, or re-run that share",
            dir.display(),
            group.requirement,
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(evidence: Option<&str>, error: Option<&str>) -> SdkGroupRecord {
        SdkGroupRecord {
            requirement: "langbot-plugin==0.6.1".into(),
            default: false,
            evidence: evidence.map(str::to_string),
            evidence_sha256: None,
            verdict: Verdict::Pass,
            warnings: 0,
            python: "/p".into(),
            version: None,
            record_sha256: None,
            candidates: Vec::new(),
            error: error.map(str::to_string),
        }
    }

    #[test]
    fn a_group_without_its_evidence_is_refused_naming_the_group_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let at = "groups/langbot-plugin-0.6.1";
        let err = group_present(dir.path(), &group(Some(at), None)).unwrap_err();
        assert!(
            err.contains("sdk group langbot-plugin==0.6.1")
                && err.contains(&format!("{at}/evidence.json"))
                && err.contains("the group's evidence is missing"),
            "{err}"
        );
        let err = group_present(dir.path(), &group(None, Some("it was killed"))).unwrap_err();
        assert!(
            err.contains("its run left no evidence (it was killed)") && err.contains("re-run"),
            "{err}"
        );
        let err = group_present(dir.path(), &group(Some("../elsewhere"), None)).unwrap_err();
        assert!(err.contains("found \"../elsewhere\""), "{err}");
        std::fs::create_dir_all(dir.path().join(at)).unwrap();
        std::fs::write(dir.path().join(at).join("evidence.json"), "{}").unwrap();
        assert_eq!(group_present(dir.path(), &group(Some(at), None)), Ok(()));
    }
}
