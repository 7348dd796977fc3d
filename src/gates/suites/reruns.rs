//! Reruns of the tests a suites run failed (`[suites] retries`), and what
//! they show: cargo-nextest's `retries` for pytest.
//!
//! A run is rerun only when its failure is nothing but failed tests: pytest
//! ran to the end of its session and exited 1, the collection had no error,
//! every recorded item has its testcase, every reported outcome is one the
//! run's own plugin observed (`observed-outcomes`), and every failed or
//! erroring testcase names a collected item (its node id). Rerun `k` is then
//! a pytest run of its own, in the same sandbox and environment with a fresh
//! copy of the tree and fresh HOME/TMP (`DIR/roots/suites/<run>/rerun-<k>/`,
//! the conditions of the first attempt), of exactly the node ids still
//! failing after rerun `k - 1`.
//!
//! [`assess`] is a pure function of the first run and its reruns. A rerun
//! counts only when it is sound in the same way, and more: it collected
//! exactly the node ids it was given (a conftest that collects nothing, or
//! something else, on a rerun proves nothing). A test whose testcase passed
//! in a sound rerun is *flaky*; one that failed in every rerun is still
//! failing. A rerun that is not sound stops the assessment there and is a
//! finding of its own.

use super::record::RunObservation;
use super::{bad_cases, collection, pairing, rewrites, test_id, CollectAnswer, PytestObs};
use crate::evidence::{CheckResult, SuiteOutcome, SuiteTestCase};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A test that failed in the first run and passed in a rerun.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FlakyTest {
    /// Its node id.
    pub nodeid: String,
    /// Its test id in the reports (`classname::name`).
    pub id: String,
    /// The rerun it passed in (1-based).
    pub passed_in: usize,
    /// The first line of its failure in the first run.
    pub first_failure: String,
}

/// What the reruns of one run show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Assessment {
    /// The node ids rerun 1 was to run, in order.
    pub requested: Vec<String>,
    /// Reruns made.
    pub reruns: usize,
    /// Tests that passed in a sound rerun.
    pub flaky: Vec<FlakyTest>,
    /// Node ids that failed in the first run and in every sound rerun
    /// made, or that no sound rerun ran.
    pub still_failing: Vec<String>,
    /// The first rerun that was not sound (1-based) and why; the
    /// assessment stopped there.
    pub unsound: Option<(usize, String)>,
}

impl Assessment {
    /// Every test the first run failed passed in a sound rerun.
    pub fn all_flaky(&self) -> bool {
        self.unsound.is_none() && self.still_failing.is_empty() && !self.flaky.is_empty()
    }
}

/// The node ids of `run`'s failed and erroring testcases, in report order,
/// when the run may be rerun (see the module docs); `None` otherwise.
pub(crate) fn rerun_request(run: &RunObservation) -> Option<Vec<String>> {
    let PytestObs::Ran {
        exit_code: Some(1),
        timed_out: false,
        ..
    } = &run.pytest
    else {
        return None;
    };
    let c = collection(run)?;
    let cases = run.report.as_ref().ok()?;
    if !c.finished || !c.errors.is_empty() || c.exit_code != 0 || c.system_exit.is_some() {
        return None;
    }
    if pairing(run).is_none_or(|p| !p.is_empty()) {
        return None;
    }
    let observed = rewrites::observed_outcomes_check(&run.name, Some(c), Some(cases));
    if observed.result != CheckResult::Pass {
        return None;
    }
    let bad = bad_cases(cases);
    if bad.is_empty()
        || bad
            .iter()
            .any(|t| !matches!(t.outcome, SuiteOutcome::Failed | SuiteOutcome::Error))
    {
        return None;
    }
    let nodeids = nodeid_map(run);
    let mut request: Vec<String> = Vec::new();
    for t in bad {
        let id = nodeids.get(&(t.classname.clone(), t.name.clone()))?;
        if !request.contains(id) {
            request.push(id.clone());
        }
    }
    Some(request)
}

/// `(classname, name)` of each item `run` recorded, to its node id.
fn nodeid_map(run: &RunObservation) -> BTreeMap<(String, String), String> {
    collection(run)
        .map(|c| {
            c.items
                .iter()
                .map(|i| ((i.classname.clone(), i.name.clone()), i.nodeid.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Why `rerun`, given `requested`, is not sound; `None` when it is.
fn unsound(rerun: &RunObservation, requested: &BTreeSet<String>) -> Option<String> {
    let PytestObs::Ran {
        exit_code,
        timed_out,
        status,
        ..
    } = &rerun.pytest
    else {
        return Some("it did not run".into());
    };
    if *timed_out || !matches!(exit_code, Some(0 | 1)) {
        return Some(format!("it ended with {status}, not pytest's 0 or 1"));
    }
    let c = match &rerun.collection.answer {
        CollectAnswer::Collected(c) => c,
        CollectAnswer::PytestMissing { error } | CollectAnswer::NoReport { error } => {
            return Some(format!("it recorded no collection: {error}"))
        }
    };
    if !c.finished || !c.errors.is_empty() || c.exit_code != 0 || c.system_exit.is_some() {
        return Some(
            "its session did not end cleanly (a collection error, an exit a conftest called, or a process \
             that ended before pytest returned)"
                .into(),
        );
    }
    let collected: BTreeSet<String> = c.items.iter().map(|i| i.nodeid.clone()).collect();
    if &collected != requested {
        return Some(format!(
            "it collected {:?}, expected exactly the node ids it was given {:?}",
            collected, requested
        ));
    }
    let cases = match &rerun.report {
        Ok(cases) => cases,
        Err(e) => return Some(format!("its report was not read: {e}")),
    };
    if pairing(rerun).is_none_or(|p| !p.is_empty()) {
        return Some(
            "its report does not hold exactly one testcase for each item it collected".into(),
        );
    }
    let observed = rewrites::observed_outcomes_check(&rerun.name, Some(c), Some(cases));
    if observed.result != CheckResult::Pass {
        return Some(format!(
            "a reported outcome is not what its own plugin observed: {}",
            observed.detail
        ));
    }
    let failed = !bad_cases(cases).is_empty();
    if failed != (*exit_code == Some(1)) {
        return Some(format!(
            "its exit status ({status}) disagrees with its report's outcomes"
        ));
    }
    None
}

/// What `first`'s reruns (in order) show; `None` when `first` could not be
/// rerun or was not (no rerun made).
pub(crate) fn assess(first: &RunObservation, reruns: &[RunObservation]) -> Option<Assessment> {
    let requested = rerun_request(first)?;
    if reruns.is_empty() {
        return None;
    }
    let first_cases = first.report.as_deref().unwrap_or_default();
    let first_ids = nodeid_map(first);
    let first_failure = |nodeid: &str| -> (String, String) {
        let key = first_ids
            .iter()
            .find(|(_, n)| n.as_str() == nodeid)
            .map(|(k, _)| k.clone());
        let case: Option<&SuiteTestCase> = key.and_then(|(classname, name)| {
            first_cases
                .iter()
                .find(|t| t.classname == classname && t.name == name)
        });
        (
            case.map(test_id).unwrap_or_else(|| nodeid.to_string()),
            case.map(|t| first_line(t.message.as_deref().or(t.text.as_deref())))
                .unwrap_or_default(),
        )
    };
    let mut out = Assessment {
        requested: requested.clone(),
        reruns: reruns.len(),
        ..Assessment::default()
    };
    let mut remaining: Vec<String> = requested;
    for (k, rerun) in reruns.iter().enumerate() {
        let asked: BTreeSet<String> = remaining.iter().cloned().collect();
        if let Some(why) = unsound(rerun, &asked) {
            out.unsound = Some((k + 1, why));
            break;
        }
        let ids = nodeid_map(rerun);
        let cases = rerun.report.as_deref().unwrap_or_default();
        remaining.retain(|nodeid| {
            let passed = ids
                .iter()
                .filter(|(_, n)| *n == nodeid)
                .any(|((classname, name), _)| {
                    cases.iter().any(|t| {
                        &t.classname == classname
                            && &t.name == name
                            && t.outcome == SuiteOutcome::Passed
                    })
                });
            if passed {
                let (id, first_failure) = first_failure(nodeid);
                out.flaky.push(FlakyTest {
                    nodeid: nodeid.clone(),
                    id,
                    passed_in: k + 1,
                    first_failure,
                });
            }
            !passed
        });
        if remaining.is_empty() {
            break;
        }
    }
    out.still_failing = remaining;
    Some(out)
}

/// The node ids the rerun after `reruns` (of `first`) is to run; `None` when
/// no further rerun is due (nothing to rerun, everything passed, or a rerun
/// was not sound).
pub(crate) fn next_request(
    first: &RunObservation,
    reruns: &[RunObservation],
) -> Option<Vec<String>> {
    match assess(first, reruns) {
        None if reruns.is_empty() => rerun_request(first),
        None => None,
        Some(a) if a.unsound.is_some() || a.still_failing.is_empty() => None,
        Some(a) => Some(a.still_failing),
    }
}

/// `first`'s testcases with the outcome each test ended with: a flaky test's
/// failure replaced by the pass of its rerun.
pub(crate) fn final_cases(first: &[SuiteTestCase], a: Option<&Assessment>) -> Vec<SuiteTestCase> {
    let flaky: BTreeSet<&str> = a
        .filter(|a| a.unsound.is_none())
        .map(|a| a.flaky.iter().map(|f| f.id.as_str()).collect())
        .unwrap_or_default();
    first
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if flaky.contains(test_id(&t).as_str()) {
                t.outcome = SuiteOutcome::Passed;
            }
            t
        })
        .collect()
}

/// The first non-blank line of `text`, at most 200 characters.
fn first_line(text: Option<&str>) -> String {
    let line = text
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    line.chars().take(200).collect()
}
