//! How often the suites' timing-sensitive tests failed under us and under
//! the peer (issue 37): our flaky tests (failed, then passed when rerun:
//! `suites.runs[].flaky` of the evidence) and failed suites, against the
//! peer command's failed runs. The target: our reruns plus failures no more
//! than the peer's failures.

use std::path::Path;

/// The counts of one bench.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Reliability {
    ours: usize,
    ours_flaky: usize,
    ours_failed: usize,
    ours_not_run: usize,
    peer: usize,
    peer_failed: usize,
}

/// What the suites of one of our runs did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SuitesOutcome {
    Passed,
    /// Passed, with a test that failed and passed when rerun.
    Flaky,
    Failed,
    /// Blocked, skipped, or no readable evidence.
    NotRun,
}

/// The suites' outcome in an evidence document.
pub(crate) fn suites_outcome(doc: &serde_json::Value) -> SuitesOutcome {
    let gate = doc["gates"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["id"] == "suites");
    let flaky = doc["suites"]["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["flaky"].as_array().is_some_and(|f| !f.is_empty()));
    match gate.and_then(|g| g["result"].as_str()) {
        Some("fail") => SuitesOutcome::Failed,
        Some("pass") if flaky => SuitesOutcome::Flaky,
        Some("pass") => SuitesOutcome::Passed,
        _ => SuitesOutcome::NotRun,
    }
}

impl Reliability {
    /// Counts one of our runs, from its evidence directory.
    pub(crate) fn ours(&mut self, evidence: &Path) {
        let doc = std::fs::read(evidence.join("evidence.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(serde_json::Value::Null);
        self.count(suites_outcome(&doc));
    }

    fn count(&mut self, outcome: SuitesOutcome) {
        self.ours += 1;
        match outcome {
            SuitesOutcome::Passed => {}
            SuitesOutcome::Flaky => self.ours_flaky += 1,
            SuitesOutcome::Failed => self.ours_failed += 1,
            SuitesOutcome::NotRun => self.ours_not_run += 1,
        }
    }

    /// Counts one peer run.
    pub(crate) fn peer(&mut self, passed: bool) {
        self.peer += 1;
        self.peer_failed += usize::from(!passed);
    }

    /// The report lines; with a peer, the judgement against its failures.
    pub(crate) fn lines(&self, with_peer: bool) -> Vec<String> {
        let mut lines = vec![format!(
            "suites (ours, default jobs): {} run(s): {} with a flaky test (passed when rerun), {} failed, \
             {} not run",
            self.ours, self.ours_flaky, self.ours_failed, self.ours_not_run
        )];
        if with_peer {
            let ours = self.ours_flaky + self.ours_failed;
            lines.push(format!(
                "peer: {} run(s), {} failed; our reruns + failures {ours} <= the peer's failures {}: {}",
                self.peer,
                self.peer_failed,
                self.peer_failed,
                if ours <= self.peer_failed { "MET" } else { "MISSED" }
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(result: &str, flaky: &[&str]) -> serde_json::Value {
        json!({
            "gates": [{"id": "stage", "result": "pass"}, {"id": "suites", "result": result}],
            "suites": {"runs": [{"name": "tree", "flaky": flaky}, {"name": "extracted", "flaky": []}]}
        })
    }

    #[test]
    fn the_suites_outcome_reads_the_gate_and_the_runs_flaky_tests() {
        assert_eq!(suites_outcome(&doc("pass", &[])), SuitesOutcome::Passed);
        assert_eq!(
            suites_outcome(&doc("pass", &["t::a"])),
            SuitesOutcome::Flaky
        );
        assert_eq!(
            suites_outcome(&doc("fail", &["t::a"])),
            SuitesOutcome::Failed
        );
        assert_eq!(suites_outcome(&doc("blocked", &[])), SuitesOutcome::NotRun);
        assert_eq!(
            suites_outcome(&serde_json::Value::Null),
            SuitesOutcome::NotRun
        );
    }

    #[test]
    fn our_reruns_and_failures_are_judged_against_the_peers_failures() {
        let mut r = Reliability::default();
        r.count(SuitesOutcome::Passed);
        r.count(SuitesOutcome::Flaky);
        r.peer(true);
        r.peer(false);
        let lines = r.lines(true);
        assert!(
            lines[0].contains("2 run(s): 1 with a flaky test"),
            "{lines:?}"
        );
        assert!(
            lines[1].ends_with("1 <= the peer's failures 1: MET"),
            "{lines:?}"
        );
        r.count(SuitesOutcome::Failed);
        assert!(r.lines(true)[1].ends_with("MISSED"), "{:?}", r.lines(true));
        assert_eq!(r.lines(false).len(), 1);
    }
}
