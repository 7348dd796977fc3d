//! `verify-coding-candidates merge`: combine the evidence of `--partition`
//! runs into one evidence directory.
//!
//! The partitions must share commit, tree, profile, SDK version and RECORD
//! digest, required gates and partition count, cover every share exactly
//! once, and agree on every global gate's result. Unpartitioned runs of the
//! same commit, profile and SDK may stand beside them (`--only suites`: the
//! `whole` gates a share cannot run); their records fill the gates the
//! shares did not run, and any gate both ran must agree, as must the
//! archives' content digests. A matrix plus one such run merges into one
//! non-partial certification. Each partition's own
//! sign-off digest is re-checked first, so an edited partition is refused,
//! then every file of it is re-hashed against its `SHA256SUMS` and sealed
//! listing (`src/merge/share_files.rs`), and every archive (and wheelhouse
//! file) is hashed again before it is copied, so a swapped one is refused
//! too. `--into` is locked like a run's evidence directory
//! (`evidence::lock`) while the merge writes it.

use crate::catalogue::{self, Scope};
use crate::evidence::{self, Evidence, GateRecord, GateResult, MergedPart, Verdict};
use std::fs;
use std::path::{Path, PathBuf};

mod share_files;

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
        let holder = evidence::lock::holder(&resolved).map_or_else(String::new, |pid| {
            format!(" (pid {pid} is writing into it now and holds its lock)")
        });
        return Err(format!(
            "--into {}: expected a missing or empty directory, found existing content{holder}",
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
        if ev.sdk_groups.is_some() {
            return Err(format!(
                "{}/evidence.json: expected the evidence of a `--partition K/N` run, found a run whose \
                 candidates are grouped by SDK pin (sdk_groups), which is never partitioned: it is \
                 complete as it is; replay it instead",
                dir.display()
            ));
        }
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
        // Every file of the share, not only evidence.json and the archives.
        share_files::check(dir)?;
        evidences.push((dir.clone(), ev));
    }
    // Shares of the partitioned run, and whole-scope runs beside them (an
    // unpartitioned `--only suites`: the gates that need every candidate).
    type Runs = Vec<(PathBuf, Evidence)>;
    let (mut shares, wholes): (Runs, Runs) = evidences
        .into_iter()
        .partition(|(_, e)| e.selection.partition.is_some());
    if shares.is_empty() {
        return Err(format!(
            "expected the evidence of `--partition K/N` runs, found only unpartitioned runs ({}); merge \
             combines the shares of one partitioned run, with unpartitioned runs (such as `--only suites`) \
             beside them",
            wholes
                .iter()
                .map(|(d, _)| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    shares.sort_by_key(|(_, e)| e.selection.partition.map(|p| p.index).unwrap_or(0));
    let (first_dir, first) = &shares[0];
    let count = first.selection.partition.map(|p| p.count);
    for (dir, ev) in shares.iter().chain(&wholes) {
        let same = |what: &str, a: &str, b: &str| -> Result<(), String> {
            if a == b {
                Ok(())
            } else {
                Err(format!(
                    "{} and {} disagree on {what}: {a} vs {b}; runs merged into one must share it",
                    first_dir.display(),
                    dir.display()
                ))
            }
        };
        same("commit", &first.source.commit, &ev.source.commit)?;
        same("tree", &first.source.tree, &ev.source.tree)?;
        // `--worktree` runs: the same working tree (a commit's run has none).
        let worktree = |e: &crate::evidence::Evidence| {
            e.source.worktree.as_ref().map_or_else(
                || "a commit".to_string(),
                |w| format!("working tree {}", w.digest.as_deref().unwrap_or("-")),
            )
        };
        same("source", &worktree(first), &worktree(ev))?;
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
        let ids = |e: &Evidence| e.gates.iter().map(|g| g.id.clone()).collect::<Vec<_>>();
        same("gate list", &ids(first).join(","), &ids(ev).join(","))?;
    }
    for (dir, ev) in &shares {
        if ev.selection.required != first.selection.required {
            return Err(format!(
                "{} and {} disagree on required gates: {} vs {}; the shares of one run must share it",
                first_dir.display(),
                dir.display(),
                first.selection.required.join(","),
                ev.selection.required.join(",")
            ));
        }
        if ev.selection.partition.map(|p| p.count) != count {
            let p = ev.selection.partition.expect("a share");
            return Err(format!(
                "{}: expected a `--partition K/{}` run, like {}, found --partition {}/{}; merge combines \
                 the shares of one partitioned run",
                dir.display(),
                count.unwrap_or(0),
                first_dir.display(),
                p.index,
                p.count
            ));
        }
    }
    let n = count.unwrap_or(0);
    let indices: Vec<u32> = shares
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
    // A whole-scope run built every candidate itself: its archives must hold
    // the same content as the shares' (the archive files differ in the
    // build clock only), or its suites ran against other code.
    for (dir, whole) in &wholes {
        for c in &whole.candidates {
            let Some(a) = &c.archive else { continue };
            let share = shares
                .iter()
                .flat_map(|(d, e)| e.candidates.iter().map(move |c| (d, c)))
                .find(|(_, s)| s.path == c.path);
            if let Some((share_dir, Some(b))) = share.map(|(d, s)| (d, s.archive.as_ref())) {
                if a.content_digest != b.content_digest {
                    return Err(format!(
                        "{} and {} disagree on the content digest of {}: {} vs {}; the runs did not build \
                         the same code: re-run them from the same commit and interpreter",
                        dir.display(),
                        share_dir.display(),
                        c.folder,
                        a.content_digest,
                        b.content_digest
                    ));
                }
            }
        }
    }

    let mut merged = first.clone();
    merged.started_at = shares
        .iter()
        .chain(&wholes)
        .map(|(_, e)| e.started_at.clone())
        .min()
        .unwrap_or_default();
    merged.finished_at = shares
        .iter()
        .chain(&wholes)
        .map(|(_, e)| e.finished_at.clone())
        .max()
        .unwrap_or_default();
    merged.candidates = shares
        .iter()
        .flat_map(|(_, e)| e.candidates.clone())
        .collect();
    merged.candidates.sort_by(|a, b| a.path.cmp(&b.path));
    // Every run's signals, run after run (each run's own evidence, listed in
    // `merged_from`, says which are its).
    merged.signals = shares
        .iter()
        .chain(&wholes)
        .flat_map(|(_, e)| e.signals.clone())
        .collect();
    merged.gates = Vec::new();
    // Which run each gate's record comes from: index into `shares` then `wholes`.
    let mut contributed: Vec<Vec<String>> = vec![Vec::new(); shares.len() + wholes.len()];
    for (i, gate) in first.gates.iter().enumerate() {
        let share_records: Vec<&GateRecord> = shares.iter().map(|(_, e)| &e.gates[i]).collect();
        let whole_records: Vec<(usize, &GateRecord)> = wholes
            .iter()
            .enumerate()
            .map(|(k, (_, e))| (shares.len() + k, &e.gates[i]))
            .filter(|(_, g)| g.required)
            .collect();
        let scope = catalogue::get(&gate.id)
            .map(|g| g.scope)
            .unwrap_or(Scope::Global);
        let disagree = |a: &GateRecord, b: &GateRecord| {
            format!(
                "gate {} disagrees across the merged runs: {} in one, {} in another; a gate run twice on \
                 one commit must agree (re-run them from the same commit and interpreter)",
                gate.id,
                a.result.word(),
                b.result.word()
            )
        };
        let record = if gate.required {
            let record = if scope == Scope::Global {
                if let Some(other) = share_records.iter().find(|r| r.result != gate.result) {
                    return Err(disagree(gate, other));
                }
                contributed[0].push(gate.id.clone());
                gate.clone()
            } else {
                let mut combined = gate.clone();
                combined.checks = share_records
                    .iter()
                    .flat_map(|r| r.checks.clone())
                    .collect();
                combined.duration_ms = share_records.iter().map(|r| r.duration_ms).sum();
                let results: Vec<GateResult> = share_records.iter().map(|r| r.result).collect();
                combined.result = [GateResult::Fail, GateResult::Blocked, GateResult::Skipped]
                    .into_iter()
                    .find(|r| results.contains(r))
                    .unwrap_or(GateResult::Pass);
                let mut reasons: Vec<String> = share_records
                    .iter()
                    .filter_map(|r| r.reason.clone())
                    .collect();
                reasons.dedup();
                combined.reason = if reasons.is_empty() {
                    None
                } else {
                    Some(reasons.join("; "))
                };
                for list in contributed.iter_mut().take(shares.len()) {
                    list.push(gate.id.clone());
                }
                combined
            };
            // A whole-scope run that ran this gate too must agree with the shares.
            if let Some((_, other)) = whole_records
                .iter()
                .find(|(_, r)| r.result != record.result)
            {
                return Err(disagree(&record, other));
            }
            record
        } else if let Some((k, whole)) = whole_records.first() {
            // A gate the shares did not run (`suites`: it needs every candidate).
            if let Some((_, other)) = whole_records.iter().find(|(_, r)| r.result != whole.result) {
                return Err(disagree(whole, other));
            }
            contributed[*k].push(gate.id.clone());
            (*whole).clone()
        } else {
            gate.clone()
        };
        merged.gates.push(record);
    }
    let required: Vec<String> = merged
        .gates
        .iter()
        .filter(|g| g.required)
        .map(|g| g.id.clone())
        .collect();
    // `--only` of the merged selection: none when any share selected every gate.
    let only = if shares.iter().any(|(_, e)| e.selection.only.is_none()) {
        None
    } else {
        let mut ids: Vec<String> = Vec::new();
        for (_, e) in shares.iter().chain(&wholes) {
            for id in e.selection.only.iter().flatten() {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
        }
        Some(ids)
    };
    // A gate no run required and some run skipped for lack of input (the
    // others left it out with `--only`) stays not applicable.
    let mut not_applicable: Vec<String> = Vec::new();
    for (_, e) in shares.iter().chain(&wholes) {
        for id in &e.selection.not_applicable {
            if !required.contains(id) && !not_applicable.contains(id) {
                not_applicable.push(id.clone());
            }
        }
    }
    merged.selection =
        crate::evidence::Selection::new(only, required, None).with_not_applicable(not_applicable);
    merged.suites = wholes
        .iter()
        .find(|(_, e)| e.suites.is_some())
        .and_then(|(_, e)| e.suites.clone())
        .or_else(|| first.suites.clone());
    merged_candidate_verdicts(&mut merged);
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
        shares
            .iter()
            .chain(&wholes)
            .zip(contributed)
            .map(|((dir, e), gates)| MergedPart {
                dir: dir.display().to_string(),
                partition: e.selection.partition,
                evidence_sha256: e.sign_off.evidence_sha256.clone(),
                gates,
            })
            .collect(),
    );
    let evidences = shares;

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
    // Held until the merged evidence is sealed, like a run's: a run or
    // another merge into this directory is refused, naming its pid. Taken
    // before anything is written, then the directory is judged empty again.
    let _lock = evidence::lock::acquire(into).map_err(|e| format!("--into: {e}"))?;
    if fs::read_dir(into)
        .map(|mut d| d.next().is_some())
        .unwrap_or(true)
    {
        return Err(format!(
            "--into {}: expected a missing or empty directory, found content written since the merge \
             started (a run or merge wrote into it and ended); evidence is never mixed: choose a fresh \
             directory",
            into.display()
        ));
    }
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

/// Sets each candidate's verdict of `merged` (candidates and gates already
/// combined): its share's, which read the per-candidate gates as that share
/// ran them, unless a gate the share did not decide for it alone stops it (a
/// global gate, or `suites` from the run beside the shares). The combined
/// per-candidate records are not read again: one share's blocked gate says
/// nothing about another share's candidates. A candidate without a verdict
/// (a share written before verdicts existed) keeps none.
fn merged_candidate_verdicts(merged: &mut Evidence) {
    let across: Vec<GateRecord> = merged
        .gates
        .iter()
        .filter(|g| catalogue::get(&g.id).map_or(Scope::Global, |c| c.scope) != Scope::Candidate)
        .cloned()
        .collect();
    for c in &mut merged.candidates {
        if let Some(v) = c.verdict.as_mut() {
            if v.result == evidence::CandidateResult::Pass {
                *v = evidence::verdicts::of(&across, &c.folder);
            }
        }
    }
}

#[cfg(test)]
mod verdict_tests {
    use super::*;
    use crate::evidence::testing::{evidence, gate};
    use crate::evidence::{CandidateResult, Check};

    #[test]
    fn a_share_verdict_stands_unless_a_gate_beside_the_shares_stops_the_candidate() {
        // admission (per candidate) combined as blocked: one share had no
        // candidate left, the other's passed; suites (whole) failed gate-wide.
        let mut ev = evidence(
            vec![
                gate("admission", GateResult::Blocked, true, Vec::new()),
                gate(
                    "suites",
                    GateResult::Fail,
                    true,
                    vec![Check::fail("tree/outcomes", None, "1 failed")],
                ),
            ],
            Verdict::Fail,
        );
        for (folder, result) in [
            ("a", CandidateResult::Pass),
            ("b", CandidateResult::Fail),
            ("c", CandidateResult::Pass),
        ] {
            let mut c: crate::evidence::CandidateRecord = serde_json::from_value(serde_json::json!({
                "folder": folder, "path": format!("R/{folder}"), "manifest": null, "archive": null
            }))
            .unwrap();
            c.verdict = (folder != "c").then(|| crate::evidence::CandidateVerdict {
                result,
                gate: (result == CandidateResult::Fail).then(|| "admission".to_string()),
                check: None,
                reason: None,
            });
            ev.candidates.push(c);
        }
        merged_candidate_verdicts(&mut ev);
        let a = ev.candidates[0].verdict.clone().unwrap();
        assert_eq!(a.result, CandidateResult::NotCertified);
        assert_eq!(
            (a.gate.as_deref(), a.check.as_deref()),
            (Some("suites"), Some("tree/outcomes"))
        );
        // A share's failure stands; no verdict stays none.
        assert_eq!(
            ev.candidates[1].verdict.as_ref().unwrap().gate.as_deref(),
            Some("admission")
        );
        assert_eq!(ev.candidates[2].verdict, None);
        // With suites passing, a's share verdict stands, whatever admission's
        // combined record says.
        ev.gates[1] = gate("suites", GateResult::Pass, true, Vec::new());
        ev.candidates[0].verdict.as_mut().unwrap().result = CandidateResult::Pass;
        merged_candidate_verdicts(&mut ev);
        assert_eq!(
            ev.candidates[0].verdict.as_ref().unwrap().result,
            CandidateResult::Pass
        );
    }
}
