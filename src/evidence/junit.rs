//! `junit.xml`: one testsuite per gate (classname = gate id), one testcase per
//! check; failure detail in the element body, since some CI views drop
//! attributes. A gate with no checks (skipped, blocked) gets one testcase that
//! says why, so the report always holds at least one testcase.

use super::model::{CheckResult, Evidence, GateResult};
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
        if gate.checks.is_empty() {
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
        for check in &gate.checks {
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
    report.to_string().map_err(std::io::Error::other)
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(200).collect()
}
