//! Per-candidate verdicts (`candidates[].verdict`): what the run's gates say
//! about each candidate on its own, so a CI can certify the candidates that
//! passed and list the ones that did not. The run's `verdict` is not derived
//! from them and does not change: any failure fails the run.
//!
//! A candidate's verdict is read from the required gates in catalogue order
//! (every gate's prerequisites come before it), stopping at the first one
//! that did not pass for it:
//!
//! - a failing check naming the candidate (not a consequence of another
//!   failing check): `fail`, with that gate and check;
//! - a failing gate-wide check (no candidate): `not-certified`, with that
//!   gate and check, since it says nothing good about any candidate;
//! - a gate that did not run (blocked, interrupted) or did not check the
//!   candidate: `not-certified`, with that gate;
//! - a gate that failed for other candidates only says nothing against this
//!   one: the reading goes on.
//!
//! A candidate no required gate stopped is `pass`.

use super::model::{
    CandidateRecord, CandidateResult, CandidateVerdict, Check, CheckResult, GateRecord, GateResult,
};

/// The verdict of candidate `folder` over `gates` (catalogue order; only
/// `required` gates count).
pub fn of(gates: &[GateRecord], folder: &str) -> CandidateVerdict {
    let stop =
        |result, gate: &GateRecord, check: Option<&Check>, reason: String| CandidateVerdict {
            result,
            gate: Some(gate.id.clone()),
            check: check.map(|c| c.name.clone()),
            reason: Some(reason),
        };
    for gate in gates.iter().filter(|g| g.required) {
        let left_out = gate.candidates_left_out.iter().any(|c| c == folder);
        match gate.result {
            GateResult::Pass if !left_out => {}
            GateResult::Fail if !left_out => {
                let failing = |c: &&Check| {
                    c.result == CheckResult::Fail && super::model::root_of(gate, c).is_none()
                };
                if let Some(own) = gate
                    .checks
                    .iter()
                    .filter(failing)
                    .find(|c| c.candidate.as_deref() == Some(folder))
                {
                    return stop(
                        CandidateResult::Fail,
                        gate,
                        Some(own),
                        first_line(&own.detail),
                    );
                }
                if let Some(wide) = gate
                    .checks
                    .iter()
                    .filter(failing)
                    .find(|c| c.candidate.is_none())
                {
                    return stop(
                        CandidateResult::NotCertified,
                        gate,
                        Some(wide),
                        format!("a gate-wide check failed: {}", first_line(&wide.detail)),
                    );
                }
                if gate.checks.is_empty() {
                    return stop(
                        CandidateResult::NotCertified,
                        gate,
                        None,
                        gate.reason
                            .clone()
                            .unwrap_or_else(|| "the gate failed".into()),
                    );
                }
                // Failed for other candidates only.
            }
            GateResult::Pass | GateResult::Fail => {
                return stop(
                    CandidateResult::NotCertified,
                    gate,
                    None,
                    "this gate did not check the candidate".into(),
                );
            }
            GateResult::Blocked | GateResult::Skipped => {
                let why = gate.reason.as_deref().unwrap_or("no reason recorded");
                return stop(
                    CandidateResult::NotCertified,
                    gate,
                    None,
                    format!("{}: {why}", gate.result.word()),
                );
            }
        }
    }
    CandidateVerdict {
        result: CandidateResult::Pass,
        gate: None,
        check: None,
        reason: None,
    }
}

/// Sets `verdict` of every record in `candidates` from `gates`.
pub fn assign(gates: &[GateRecord], candidates: &mut [CandidateRecord]) {
    for c in candidates {
        c.verdict = Some(of(gates, &c.folder));
    }
}

/// The folders of `candidates` whose verdict is `pass`, in their order.
pub fn passed(candidates: &[CandidateRecord]) -> Vec<&str> {
    candidates
        .iter()
        .filter(|c| {
            c.verdict
                .as_ref()
                .is_some_and(|v| v.result == CandidateResult::Pass)
        })
        .map(|c| c.folder.as_str())
        .collect()
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::testing::gate;

    fn pass(name: &str, candidate: &str) -> Check {
        Check::pass(name, Some(candidate), "held").with_observed(serde_json::json!(1))
    }

    #[test]
    fn a_candidate_is_stopped_by_its_own_first_failing_check_in_catalogue_order() {
        let mut dependencies = gate(
            "dependencies",
            GateResult::Pass,
            true,
            vec![pass("prepare", "b")],
        );
        dependencies.candidates_left_out = vec!["a".into()];
        let gates = [
            gate(
                "admission",
                GateResult::Fail,
                true,
                vec![
                    Check::fail("sdk-requirement", Some("a"), "line 1 refused\nmore"),
                    Check::fail("artifact-store", Some("a"), "also refused")
                        .consequence_of("sdk-requirement"),
                    pass("sdk-requirement", "b"),
                ],
            ),
            dependencies,
        ];
        let a = of(&gates, "a");
        assert_eq!(a.result, CandidateResult::Fail);
        assert_eq!(a.gate.as_deref(), Some("admission"));
        assert_eq!(a.check.as_deref(), Some("sdk-requirement"));
        assert_eq!(a.reason.as_deref(), Some("line 1 refused"));
        // b: admission failed for a only; every gate passed for b.
        let b = of(&gates, "b");
        assert_eq!(b.result, CandidateResult::Pass);
        assert_eq!((b.gate, b.check, b.reason), (None, None, None));
    }

    #[test]
    fn a_gate_wide_failure_or_a_gate_that_did_not_run_certifies_no_candidate() {
        let gates = [
            gate(
                "sdk-record",
                GateResult::Fail,
                true,
                vec![
                    Check::fail("record-rows", None, "row 3 malformed"),
                    Check::fail("record-files", Some("b"), "x").consequence_of("record-rows"),
                ],
            ),
            gate("lbp-build", GateResult::Blocked, true, Vec::new()),
        ];
        // b's failing check is a consequence of the gate-wide one: not its own.
        for folder in ["a", "b"] {
            let v = of(&gates, folder);
            assert_eq!(v.result, CandidateResult::NotCertified, "{folder}");
            assert_eq!(v.gate.as_deref(), Some("sdk-record"));
            assert_eq!(v.check.as_deref(), Some("record-rows"));
            assert_eq!(
                v.reason.as_deref(),
                Some("a gate-wide check failed: row 3 malformed")
            );
        }
        let blocked = of(&gates[1..], "a");
        assert_eq!(blocked.result, CandidateResult::NotCertified);
        assert_eq!(blocked.gate.as_deref(), Some("lbp-build"));
        assert_eq!(blocked.check, None);
        assert_eq!(
            blocked.reason.as_deref(),
            Some("blocked: prerequisite gate(s) did not pass: stage")
        );
        // An interrupted gate certifies nothing either; a gate the run did
        // not require does not count.
        let gates = [
            gate("stage", GateResult::Skipped, false, Vec::new()),
            gate("suites", GateResult::Skipped, true, Vec::new()),
        ];
        let v = of(&gates, "a");
        assert_eq!(v.gate.as_deref(), Some("suites"));
        assert!(v
            .reason
            .unwrap()
            .starts_with("skipped: the run was interrupted"));
        assert_eq!(of(&gates[..1], "a").result, CandidateResult::Pass);
    }

    #[test]
    fn a_gate_that_left_a_candidate_out_or_observed_nothing_does_not_certify_it() {
        let mut g = gate(
            "discovery-rpc",
            GateResult::Pass,
            true,
            vec![pass("x", "b")],
        );
        g.candidates_left_out = vec!["a".into()];
        let v = of(std::slice::from_ref(&g), "a");
        assert_eq!(v.result, CandidateResult::NotCertified);
        assert_eq!(
            v.reason.as_deref(),
            Some("this gate did not check the candidate")
        );
        let empty = gate("x", GateResult::Fail, true, Vec::new());
        let v = of(std::slice::from_ref(&empty), "a");
        assert_eq!(v.result, CandidateResult::NotCertified);
        assert_eq!(v.reason.as_deref(), Some("1 of 1 checks failed"));
    }

    #[test]
    fn assign_sets_every_record_and_passed_lists_the_passing_folders() {
        let gates = [gate(
            "admission",
            GateResult::Fail,
            true,
            vec![Check::fail("sdk-requirement", Some("b"), "refused")],
        )];
        let record = |folder: &str| CandidateRecord {
            folder: folder.into(),
            path: format!("Runner/{folder}"),
            manifest: None,
            archive: None,
            admission: None,
            dependencies: None,
            discovery: None,
            verdict: None,
            sdk_group: None,
            sdk_choice: None,
            placement: None,
        };
        let mut records = vec![record("a"), record("b"), record("c")];
        assign(&gates, &mut records);
        assert_eq!(passed(&records), ["a", "c"]);
        assert_eq!(
            records[1].verdict.as_ref().map(|v| v.result),
            Some(CandidateResult::Fail)
        );
    }
}
