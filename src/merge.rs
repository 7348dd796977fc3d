//! `verify-coding-candidates merge`: combine the evidence of `--partition`
//! runs into one evidence directory.
//!
//! The partitions must share commit, tree, profile, SDK version and RECORD
//! digest, required gates and partition count, cover every share exactly
//! once, and agree on every global gate's result. Each partition's own
//! sign-off digest is re-checked first, so an edited partition is refused,
//! and every archive (and wheelhouse file) is hashed again before it is
//! copied, so a swapped one is refused too.

use crate::catalogue::{self, Scope};
use crate::evidence::{self, Evidence, GateRecord, GateResult, MergedPart, Verdict};
use std::fs;
use std::path::{Path, PathBuf};

/// Merges the evidence directories `parts` into `into` (absolute, missing or
/// empty, outside every partition; judged where writes land, `..` and
/// symlinks resolved), copying each partition's `packages/` and
/// `wheelhouse/`, and returns the merged evidence.
///
/// # Errors
/// A sentence naming the partition and the disagreement; nothing is written then.
pub fn merge(
    into: &Path,
    parts: &[PathBuf],
    signed_off_by: Option<String>,
) -> Result<Evidence, String> {
    if !into.is_absolute() {
        return Err(format!(
            "--into {}: expected an absolute path",
            into.display()
        ));
    }
    let resolved = crate::pipeline::resolve_for_writing("--into", into).map_err(|e| e.0)?;
    if resolved.exists()
        && fs::read_dir(&resolved)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(format!(
            "--into {}: expected a missing or empty directory, found existing content",
            into.display()
        ));
    }
    if parts.is_empty() {
        return Err("merge: expected at least one partition evidence directory".into());
    }
    for dir in parts {
        let part = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if resolved.starts_with(&part) {
            return Err(format!(
                "--into {}: expected a directory outside every partition, found one inside {}; writing \
                 there would change that partition's evidence: choose a directory outside it",
                into.display(),
                dir.display()
            ));
        }
    }
    let into = resolved.as_path();
    let mut evidences = Vec::new();
    for dir in parts {
        let text = fs::read_to_string(dir.join(evidence::EVIDENCE_JSON))
            .map_err(|e| format!("{}: cannot read evidence.json: {e}", dir.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}/evidence.json: {e}", dir.display()))?;
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
        evidences.push((dir.clone(), ev));
    }
    evidences.sort_by_key(|(_, e)| e.selection.partition.map(|p| p.index).unwrap_or(0));
    let (first_dir, first) = &evidences[0];
    let count = first.selection.partition.map(|p| p.count);
    for (dir, ev) in &evidences {
        let same = |what: &str, a: &str, b: &str| -> Result<(), String> {
            if a == b {
                Ok(())
            } else {
                Err(format!(
                    "{} and {} disagree on {what}: {a} vs {b}; partitions of one run must share it",
                    first_dir.display(),
                    dir.display()
                ))
            }
        };
        same("commit", &first.source.commit, &ev.source.commit)?;
        same("tree", &first.source.tree, &ev.source.tree)?;
        same("profile digest", &first.profile.sha256, &ev.profile.sha256)?;
        same(
            "SDK version",
            first.sdk.version.as_deref().unwrap_or("-"),
            ev.sdk.version.as_deref().unwrap_or("-"),
        )?;
        same(
            "SDK RECORD digest",
            first.sdk.record_sha256.as_deref().unwrap_or("-"),
            ev.sdk.record_sha256.as_deref().unwrap_or("-"),
        )?;
        same(
            "required gates",
            &first.selection.required.join(","),
            &ev.selection.required.join(","),
        )?;
        if ev.selection.partition.map(|p| p.count) != count || count.is_none() {
            let found = match ev.selection.partition {
                Some(p) => format!("--partition {}/{}", p.index, p.count),
                None => "an unpartitioned run".to_string(),
            };
            let expected = match count {
                Some(n) => format!("a `--partition K/{n}` run, like {}", first_dir.display()),
                None => "evidence from `--partition K/N` runs".to_string(),
            };
            return Err(format!(
                "{}: expected {expected}, found {found}; merge combines the shares of one partitioned run",
                dir.display()
            ));
        }
    }
    let n = count.unwrap_or(0);
    let indices: Vec<u32> = evidences
        .iter()
        .filter_map(|(_, e)| e.selection.partition.map(|p| p.index))
        .collect();
    if indices != (1..=n).collect::<Vec<_>>() {
        return Err(format!(
            "expected each of the partitions 1..={n} exactly once, found shares {}",
            indices
                .iter()
                .map(|i| format!("{i}/{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    let mut merged = first.clone();
    merged.selection = crate::evidence::Selection::new(
        first.selection.only.clone(),
        first.selection.required.clone(),
        None,
    );
    merged.started_at = evidences
        .iter()
        .map(|(_, e)| e.started_at.clone())
        .min()
        .unwrap_or_default();
    merged.finished_at = evidences
        .iter()
        .map(|(_, e)| e.finished_at.clone())
        .max()
        .unwrap_or_default();
    merged.candidates = evidences
        .iter()
        .flat_map(|(_, e)| e.candidates.clone())
        .collect();
    merged.candidates.sort_by(|a, b| a.path.cmp(&b.path));
    merged.gates = Vec::new();
    for (i, gate) in first.gates.iter().enumerate() {
        let records: Vec<&GateRecord> = evidences
            .iter()
            .filter_map(|(_, e)| e.gates.get(i))
            .collect();
        if records.iter().any(|r| r.id != gate.id) {
            return Err(format!(
                "partitions list different gates at position {i} (expected {})",
                gate.id
            ));
        }
        let scope = catalogue::get(&gate.id)
            .map(|g| g.scope)
            .unwrap_or(Scope::Global);
        if scope == Scope::Global {
            if let Some(other) = records.iter().find(|r| r.result != gate.result) {
                return Err(format!(
                    "global gate {} disagrees across partitions: {} in one, {} in another; \
                     global gates must agree (re-run the partitions from the same commit and interpreter)",
                    gate.id,
                    gate.result.word(),
                    other.result.word()
                ));
            }
            merged.gates.push(gate.clone());
            continue;
        }
        let mut combined = gate.clone();
        combined.checks = records.iter().flat_map(|r| r.checks.clone()).collect();
        combined.duration_ms = records.iter().map(|r| r.duration_ms).sum();
        let results: Vec<GateResult> = records.iter().map(|r| r.result).collect();
        combined.result = [GateResult::Fail, GateResult::Blocked, GateResult::Skipped]
            .into_iter()
            .find(|r| results.contains(r))
            .unwrap_or(GateResult::Pass);
        let mut reasons: Vec<String> = records.iter().filter_map(|r| r.reason.clone()).collect();
        reasons.dedup();
        combined.reason = if reasons.is_empty() {
            None
        } else {
            Some(reasons.join("; "))
        };
        merged.gates.push(combined);
    }
    merged.verdict = if merged
        .gates
        .iter()
        .filter(|g| g.required)
        .all(|g| g.result == GateResult::Pass)
    {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    merged.merged_from = Some(
        evidences
            .iter()
            .map(|(dir, e)| MergedPart {
                dir: dir.display().to_string(),
                partition: e.selection.partition.expect("checked above"),
                evidence_sha256: e.sign_off.evidence_sha256.clone(),
            })
            .collect(),
    );

    // The sign-off covers evidence.json only: re-derive every archive's
    // digest before copying, so a swapped archive is never merged.
    for (dir, e) in &evidences {
        for c in &e.candidates {
            let Some(a) = &c.archive else { continue };
            let inside = !a.path.starts_with('/')
                && a.path
                    .split('/')
                    .all(|p| !p.is_empty() && p != "." && p != "..");
            if !inside {
                return Err(format!(
                    "{}/evidence.json: archive path {:?} of {}: expected a relative path inside the \
                     evidence directory (packages/<folder>/<file>.lbpkg); refusing to merge it",
                    dir.display(),
                    a.path,
                    c.folder
                ));
            }
            let src = dir.join(&a.path);
            let observed = crate::hash::sha256_file(&src)
                .map_err(|err| format!("{}: cannot read the archive: {err}", src.display()))?;
            if observed.hex() != a.sha256 || observed.size != a.size {
                return Err(format!(
                    "{}: expected the archive its evidence.json records (sha256 {}, {} bytes), found sha256 {} \
                     ({} bytes): the archive was changed after the run; refusing to merge it \
                     (run `replay --evidence {}` to see every difference, and re-run that partition)",
                    src.display(),
                    a.sha256,
                    a.size,
                    observed.hex(),
                    observed.size,
                    dir.display()
                ));
            }
        }
    }
    fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    for (dir, e) in &evidences {
        for c in &e.candidates {
            let Some(a) = &c.archive else { continue };
            let (src, dst) = (dir.join(&a.path), into.join(&a.path));
            if let Some(parent) = dst.parent() {
                fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            fs::copy(&src, &dst)
                .map_err(|e| format!("copy {} -> {}: {e}", src.display(), dst.display()))?;
        }
    }
    merged.wheelhouse = copy_wheelhouses(into, &evidences)?;
    evidence::finish(into, &mut merged, signed_off_by)
        .map_err(|e| format!("{}: cannot write evidence: {e}", into.display()))?;
    Ok(merged)
}

/// Combines the partitions' wheelhouse records
/// ([`crate::wheelhouse::merge_records`]), copies every file into
/// `into/wheelhouse` after re-deriving its sha256 and size (a swapped file is
/// never merged), and writes the index over the copies.
fn copy_wheelhouses(
    into: &Path,
    evidences: &[(PathBuf, Evidence)],
) -> Result<Option<crate::evidence::WheelhouseRecord>, String> {
    use crate::wheelhouse;
    let Some(merged) =
        wheelhouse::merge_records(evidences.iter().filter_map(|(_, e)| e.wheelhouse.as_ref()))?
    else {
        return Ok(None);
    };
    let target = wheelhouse::dir(into);
    fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    for (dir, e) in evidences {
        for f in e.wheelhouse.iter().flat_map(|w| &w.files) {
            if f.name.contains('/') || f.name.starts_with('.') {
                return Err(format!(
                    "{}/evidence.json: wheelhouse file name {:?}: expected a plain file name; refusing to merge it",
                    dir.display(),
                    f.name
                ));
            }
            let (src, dst) = (wheelhouse::dir(dir).join(&f.name), target.join(&f.name));
            if dst.exists() {
                continue;
            }
            let observed = crate::hash::sha256_file(&src).map_err(|err| {
                format!("{}: cannot read the wheelhouse file: {err}", src.display())
            })?;
            if observed.hex() != f.sha256 || observed.size != f.size {
                return Err(format!(
                    "{}: expected the wheelhouse file its evidence.json records (sha256 {}, {} bytes), found \
                     sha256 {} ({} bytes): the file was changed after the run; refusing to merge it (run \
                     `replay --evidence {}` to see every difference, and re-run that partition)",
                    src.display(),
                    f.sha256,
                    f.size,
                    observed.hex(),
                    observed.size,
                    dir.display()
                ));
            }
            fs::copy(&src, &dst)
                .map_err(|e| format!("copy {} -> {}: {e}", src.display(), dst.display()))?;
        }
    }
    wheelhouse::write_index(&target)?;
    Ok(Some(merged))
}
