//! `junit.xml`: one testsuite per gate (classname = gate id), one testcase per
//! check; failure detail in the element body, since some CI views drop
//! attributes. A gate with no checks (skipped, blocked) gets one testcase that
//! says why, so the report always holds at least one testcase. The pytest
//! testcases the `suites` gate recorded follow, one testsuite per run
//! (`suites:tree`, `suites:extracted`), under pytest's own classnames.

use super::model::{CheckResult, Evidence, GateResult, SuiteOutcome, SuiteRun};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// Renders the report for `evidence`.
///
/// # Errors
/// Serialisation errors from `quick-junit`.
pub fn render(evidence: &Evidence) -> std::io::Result<String> {
    let mut report = Report::new("verify-coding-candidates");
    for gate in &evidence.gates {
        let mut suite = TestSuite::new(gate.id.as_str());
        suite.set_time(Duration::from_millis(gate.duration_ms));
        suite.add_property(quick_junit::Property::new("result", gate.result.word()));
        suite.add_property(quick_junit::Property::new(
            "commit",
            evidence.source.commit.as_str(),
        ));
        // A gate that did not run to completion (skipped, blocked, or
        // interrupted) is one skipped testcase: partial checks are not judged.
        if gate.checks.is_empty()
            || matches!(gate.result, GateResult::Skipped | GateResult::Blocked)
        {
            let reason = gate.reason.clone().unwrap_or_default();
            let status = match gate.result {
                GateResult::Pass => TestCaseStatus::success(),
                GateResult::Fail => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_description(reason.clone());
                    s
                }
                GateResult::Skipped | GateResult::Blocked => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(format!("{}: {reason}", gate.result.word()));
                    s
                }
            };
            let mut case = TestCase::new(gate.result.word(), status);
            case.set_classname(gate.id.as_str());
            suite.add_test_case(case);
        }
        for check in gate
            .checks
            .iter()
            .filter(|_| !matches!(gate.result, GateResult::Skipped | GateResult::Blocked))
        {
            let name = match &check.candidate {
                Some(c) => format!("{c}: {}", check.name),
                None => check.name.clone(),
            };
            let status = match check.result {
                CheckResult::Pass | CheckResult::Warn => TestCaseStatus::success(),
                CheckResult::Fail => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(first_line(&check.detail));
                    s.set_description(check.detail.clone());
                    s
                }
            };
            let mut case = TestCase::new(name, status);
            case.set_classname(gate.id.as_str());
            if check.result == CheckResult::Warn {
                case.set_system_out(format!("warning: {}", check.detail));
            }
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    if let Some(suites) = &evidence.suites {
        for run in &suites.runs {
            report.add_test_suite(pytest_suite(run, &evidence.source.commit));
        }
    }
    report.to_string().map_err(std::io::Error::other)
}

/// One testsuite `suites:<run>` holding every pytest testcase of that run
/// under pytest's own classname and name. An xfail is rendered as skipped
/// (type `pytest.xfail`, as pytest writes it), never as a success; a strict
/// XPASS as a failure.
fn pytest_suite(run: &SuiteRun, commit: &str) -> TestSuite {
    let mut suite = TestSuite::new(format!("suites:{}", run.name));
    suite.add_property(quick_junit::Property::new("commit", commit));
    suite.add_property(quick_junit::Property::new("cwd", run.cwd.as_str()));
    if let Some(root) = &run.source_root {
        suite.add_property(quick_junit::Property::new("source_root", root.as_str()));
    }
    let exit = run
        .exit_code
        .map_or_else(|| "none".to_string(), |c| c.to_string());
    suite.add_property(quick_junit::Property::new("pytest_exit_code", exit));
    for case in &run.testcases {
        let detail = |s: &mut TestCaseStatus| {
            if let Some(m) = &case.message {
                s.set_message(m.as_str());
            }
            if let Some(t) = &case.text {
                s.set_description(t.as_str());
            }
        };
        let status = match case.outcome {
            SuiteOutcome::Passed => TestCaseStatus::success(),
            SuiteOutcome::Xpassed => TestCaseStatus::success(),
            SuiteOutcome::Failed | SuiteOutcome::XpassedStrict => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                detail(&mut s);
                s
            }
            SuiteOutcome::Error => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                detail(&mut s);
                s
            }
            SuiteOutcome::Skipped | SuiteOutcome::Xfailed => {
                let mut s = TestCaseStatus::skipped();
                if case.outcome == SuiteOutcome::Xfailed {
                    s.set_type("pytest.xfail");
                }
                detail(&mut s);
                s
            }
        };
        let mut tc = TestCase::new(case.name.as_str(), status);
        tc.set_classname(case.classname.as_str());
        if let Some(ms) = case.duration_ms {
            tc.set_time(Duration::from_millis(ms));
        }
        if case.outcome == SuiteOutcome::Xpassed {
            tc.set_system_out("XPASS: a non-strict xfail test passed");
        }
        suite.add_test_case(tc);
    }
    suite
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(200).collect()
}
