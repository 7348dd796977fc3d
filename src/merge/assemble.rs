//! Assembling: one evidence document from the runs of a [`Plan`], as one
//! unpartitioned run would have recorded it. Pure: no file is read or
//! written here.
//!
//! A global gate's record is the first share's (every share ran it, and
//! all must agree); a per-candidate gate's combines the checks of every
//! share that required it (a share with no candidate of its group did not)
//! and takes the worst result; a gate no share ran (`suites`) is the
//! unpartitioned run's. Any gate both a share and an unpartitioned run ran
//! must agree. The candidates are every share's, by path; each keeps its
//! share's verdict unless a gate beside the shares stops it.

use super::Plan;
use crate::catalogue::{self, Scope};
use crate::evidence::{self, Evidence, GateRecord, GateResult, MergedPart, Verdict};

/// The merged evidence of `plan`, without `files`, wheelhouse and sign-off
/// (written by [`super::write::seal`]) and, for a grouped profile, with the
/// first share's `sdk_groups` (recorded again by [`super::groups::record`]).
///
/// # Errors
/// A sentence naming a gate whose results disagree across the runs.
pub(super) fn evidence(plan: &Plan) -> Result<Evidence, String> {
    // The first share holding a candidate: its gates are all the run's.
    let template = &plan
        .shares
        .iter()
        .find(|(_, e)| !e.candidates.is_empty())
        .unwrap_or(&plan.shares[0])
        .1;
    let mut merged = template.clone();
    merged.started_at = plan
        .runs()
        .map(|(_, e)| e.started_at.clone())
        .min()
        .unwrap_or_default();
    merged.finished_at = plan
        .runs()
        .map(|(_, e)| e.finished_at.clone())
        .max()
        .unwrap_or_default();
    merged.candidates = plan
        .shares
        .iter()
        .flat_map(|(_, e)| e.candidates.clone())
        .collect();
    merged.candidates.sort_by(|a, b| a.path.cmp(&b.path));
    // Every run's signals, run after run (each run's own evidence, listed in
    // `merged_from`, says which are its).
    merged.signals = plan.runs().flat_map(|(_, e)| e.signals.clone()).collect();
    // What each run's sweep removed names paths of that run's directory
    // (its own evidence, listed in `merged_from`, records them); the checks
    // they made are in the gate records merged below.
    merged.swept = Vec::new();
    merged.wheelhouse = None;
    let (gates, contributed) = gates(plan, template)?;
    merged.gates = gates;
    merged.selection = selection(plan, &merged.gates);
    merged.suites = plan
        .wholes
        .iter()
        .find_map(|(_, e)| e.suites.clone())
        .or_else(|| template.suites.clone());
    merged_candidate_verdicts(&mut merged);
    let passed = merged
        .gates
        .iter()
        .filter(|g| g.required)
        .all(|g| g.result == GateResult::Pass);
    merged.verdict = if passed { Verdict::Pass } else { Verdict::Fail };
    merged.merged_from = Some(
        plan.runs()
            .zip(contributed)
            .map(|((dir, e), gates)| MergedPart {
                dir: dir.display().to_string(),
                partition: e.selection.partition,
                evidence_sha256: e.sign_off.evidence_sha256.clone(),
                gates,
            })
            .collect(),
    );
    Ok(merged)
}

/// The merged record of every gate of `template`, in its order, and for
/// each run (shares, then unpartitioned runs) the ids of the gates whose
/// record comes from it.
fn gates(plan: &Plan, template: &Evidence) -> Result<(Vec<GateRecord>, Vec<Vec<String>>), String> {
    let mut contributed: Vec<Vec<String>> = vec![Vec::new(); plan.runs().count()];
    let mut out = Vec::new();
    for (i, gate) in template.gates.iter().enumerate() {
        let wholes: Vec<(usize, &GateRecord)> = plan
            .wholes
            .iter()
            .enumerate()
            .map(|(k, (_, e))| (plan.shares.len() + k, &e.gates[i]))
            .filter(|(_, g)| g.required)
            .collect();
        let record = if gate.required {
            let record = from_shares(plan, i, gate, &mut contributed)?;
            // A whole-scope run that ran this gate too must agree with the shares.
            if let Some((_, other)) = wholes.iter().find(|(_, r)| r.result != record.result) {
                return Err(disagree(&record, other));
            }
            record
        } else if let Some((k, whole)) = wholes.first() {
            // A gate the shares did not run (`suites`: it needs every candidate).
            if let Some((_, other)) = wholes.iter().find(|(_, r)| r.result != whole.result) {
                return Err(disagree(whole, other));
            }
            contributed[*k].push(gate.id.clone());
            (*whole).clone()
        } else {
            gate.clone()
        };
        out.push(record);
    }
    Ok((out, contributed))
}

/// The record of gate `i` (`gate` in the template) from the shares: a
/// global gate's is the first share's, once every share agrees; any other
/// combines the shares that required it.
fn from_shares(
    plan: &Plan,
    i: usize,
    gate: &GateRecord,
    contributed: &mut [Vec<String>],
) -> Result<GateRecord, String> {
    let scope = catalogue::get(&gate.id).map_or(Scope::Global, |g| g.scope);
    if scope == Scope::Global {
        let first = &plan.shares[0].1.gates[i];
        if let Some((_, other)) = plan
            .shares
            .iter()
            .find(|(_, e)| e.gates[i].result != first.result)
        {
            return Err(disagree(first, &other.gates[i]));
        }
        contributed[0].push(gate.id.clone());
        return Ok(first.clone());
    }
    let mut records = Vec::new();
    for (k, (_, e)) in plan.shares.iter().enumerate() {
        if e.gates[i].required {
            records.push(&e.gates[i]);
            contributed[k].push(gate.id.clone());
        }
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
    combined.reason = (!reasons.is_empty()).then(|| reasons.join("; "));
    Ok(combined)
}

/// The refusal of a gate whose result in one run (`a`) is not another's (`b`).
fn disagree(a: &GateRecord, b: &GateRecord) -> String {
    format!(
        "gate {} disagrees across the merged runs: {} in one, {} in another; a gate run twice on \
         one commit must agree (re-run them from the same commit and interpreter)",
        a.id,
        a.result.word(),
        b.result.word()
    )
}

/// The merged selection: the gates some run required, `--only` unless a
/// share selected every gate, and the gates no run required that some run
/// found not applicable.
fn selection(plan: &Plan, gates: &[GateRecord]) -> evidence::Selection {
    let required: Vec<String> = gates
        .iter()
        .filter(|g| g.required)
        .map(|g| g.id.clone())
        .collect();
    let only = if plan.shares.iter().any(|(_, e)| e.selection.only.is_none()) {
        None
    } else {
        let mut ids: Vec<String> = Vec::new();
        for id in plan
            .runs()
            .flat_map(|(_, e)| e.selection.only.iter().flatten())
        {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        Some(ids)
    };
    // A gate no run required and some run skipped for lack of input (the
    // others left it out with `--only`) stays not applicable.
    let mut not_applicable: Vec<String> = Vec::new();
    for id in plan.runs().flat_map(|(_, e)| &e.selection.not_applicable) {
        if !required.contains(id) && !not_applicable.contains(id) {
            not_applicable.push(id.clone());
        }
    }
    evidence::Selection::new(only, required, None).with_not_applicable(not_applicable)
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
mod tests {
    use super::*;
    use crate::evidence::testing::{evidence, gate};
    use crate::evidence::{CandidateResult, Check};
    use crate::merge::check::tests::share;

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

    /// `share` with every per-candidate gate skipped and not required, as
    /// a share without candidates of its group records them.
    fn empty_share(k: u32, n: u32) -> crate::merge::Run {
        let (dir, mut ev) = share(k, n, "");
        for g in &mut ev.gates {
            if catalogue::get(&g.id).map(|c| c.scope) == Some(Scope::Candidate) {
                *g = gate(&g.id, GateResult::Skipped, false, Vec::new());
            }
        }
        ev.selection
            .required
            .retain(|id| ev.gates.iter().any(|g| &g.id == id && g.required));
        (dir, ev)
    }

    #[test]
    fn a_share_without_candidates_adds_its_global_gates_and_nothing_per_candidate() {
        let plan = Plan {
            shares: vec![empty_share(1, 2), share(2, 2, "b")],
            wholes: Vec::new(),
        };
        let merged = super::evidence(&plan).unwrap();
        let admission = merged.gates.iter().find(|g| g.id == "admission").unwrap();
        assert_eq!(
            (admission.required, admission.result),
            (true, GateResult::Pass)
        );
        assert_eq!(
            admission.checks.len(),
            1,
            "the candidate share's checks only"
        );
        assert_eq!(merged.verdict, Verdict::Pass);
        assert_eq!(merged.candidates.len(), 1);
        let from = merged.merged_from.unwrap();
        assert!(
            !from[0].gates.contains(&"admission".to_string()),
            "{:?}",
            from[0].gates
        );
        assert!(from[0].gates.contains(&"sdk-record".to_string()));
        assert!(from[1].gates.contains(&"admission".to_string()));
        // A global gate the empty share failed fails the merge's agreement.
        let mut failed = empty_share(1, 2);
        let record = failed
            .1
            .gates
            .iter_mut()
            .find(|g| g.id == "sdk-record")
            .unwrap();
        record.result = GateResult::Fail;
        let plan = Plan {
            shares: vec![failed, share(2, 2, "b")],
            wholes: Vec::new(),
        };
        let err = super::evidence(&plan).unwrap_err();
        assert!(
            err.contains(
                "gate sdk-record disagrees across the merged runs: fail in one, pass in another"
            ),
            "{err}"
        );
    }
}
