//! `junit.xml`: one testsuite per gate (classname = gate id), one testcase per
//! check; failure detail in the element body, since some CI views drop
//! attributes. A gate that ran for some candidates only (an earlier gate
//! failed the others) carries the property `candidates_left_out`. The
//! testsuite `candidates` follows the gates: one testcase per candidate with
//! its own verdict (`candidates[].verdict`), and the property `passed`. A gate with no judged checks gets one testcase that says why,
//! so the report always holds at least one testcase: a required gate that was
//! blocked or interrupted is an `error` (the run did not certify it, so a CI
//! test view must not show it green), a gate the run did not select is
//! `skipped`. The pytest testcases the `suites` gate recorded follow, one
//! testsuite per run (`suites:tree`, `suites:extracted`), under pytest's own
//! classnames.
//!
//! Counts follow the JUnit schema Jenkins' xunit plugin validates against
//! (`junit-10.xsd`) and the attributes junitparser and GitLab read: a
//! testsuite carries `tests`, `failures`, `errors` and `skipped`; quick-junit
//! names the skipped count `disabled`, which that schema does not allow, so
//! the serialised report renames it (see [`skipped_not_disabled`]).

use super::model::{
    CandidateResult, CandidateVerdict, Check, CheckResult, Evidence, GateRecord, GateResult,
    SuiteOutcome, SuiteRun,
};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// One gate as a testsuite: its properties, then one testcase for a gate
/// that did not finish, else one per check that is no consequence.
fn gate_suite(gate: &GateRecord, commit: &str) -> TestSuite {
    let mut suite = TestSuite::new(gate.id.as_str());
    suite.set_time(Duration::from_millis(gate.duration_ms));
    suite.add_property(quick_junit::Property::new("result", gate.result.word()));
    suite.add_property(quick_junit::Property::new(
        "required",
        if gate.required { "true" } else { "false" },
    ));
    suite.add_property(quick_junit::Property::new("commit", commit));
    if !gate.candidates_left_out.is_empty() {
        // The gate ran for the other candidates only.
        suite.add_property(quick_junit::Property::new(
            "candidates_left_out",
            gate.candidates_left_out.join(","),
        ));
    }
    let finished = matches!(gate.result, GateResult::Pass | GateResult::Fail);
    // A gate that did not run to completion (skipped, blocked, or
    // interrupted) is one testcase: partial checks are not judged.
    if gate.checks.is_empty() || !finished {
        suite.add_test_case(unfinished_case(gate));
    }
    // A consequence is no testcase of its own: its text goes into its
    // root's testcase (issue 14: one cause, one failure).
    for check in gate
        .checks
        .iter()
        .filter(|c| finished && super::root_of(gate, c).is_none())
    {
        let name = testcase_name(check);
        let text = with_consequences(&check.detail, &super::consequences_of(gate, check));
        let status = match check.result {
            CheckResult::Pass | CheckResult::Warn => TestCaseStatus::success(),
            CheckResult::Fail => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(first_line(&check.detail));
                s.set_description(text.clone());
                s
            }
        };
        let mut case = TestCase::new(name, status);
        case.set_classname(gate.id.as_str());
        if check.result == CheckResult::Warn {
            case.set_system_out(format!("warning: {text}"));
        }
        suite.add_test_case(case);
    }
    suite
}

/// The one testcase of a gate that did not run to completion (skipped,
/// blocked, or interrupted): a required gate's is an error.
fn unfinished_case(gate: &GateRecord) -> TestCase {
    let reason = gate.reason.clone().unwrap_or_default();
    // A required gate is skipped only when the run was interrupted.
    let word = match gate.result {
        GateResult::Skipped if gate.required => "interrupted",
        other => other.word(),
    };
    let status = match gate.result {
        GateResult::Pass => TestCaseStatus::success(),
        GateResult::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(first_line(&reason));
            s.set_description(reason.clone());
            s
        }
        GateResult::Skipped | GateResult::Blocked if gate.required => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_type(word);
            s.set_message(first_line(&format!("{word}: {reason}")));
            s.set_description(format!(
                "required gate {} was {word}, so the run does not certify what it proves: {reason}",
                gate.id
            ));
            s
        }
        GateResult::Skipped | GateResult::Blocked => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("{word}: {reason}"));
            s
        }
    };
    let mut case = TestCase::new(word, status);
    case.set_classname(gate.id.as_str());
    case
}

/// Renders the report for `evidence`.
///
/// # Errors
/// Serialisation errors from `quick-junit` or `quick-xml`.
pub fn render(evidence: &Evidence) -> std::io::Result<String> {
    let mut report = Report::new("verify-coding-candidates");
    for gate in &evidence.gates {
        report.add_test_suite(gate_suite(gate, &evidence.source.commit));
    }
    if let Some(suite) = candidates_suite(evidence) {
        report.add_test_suite(suite);
    }
    if let Some(suite) = sdk_groups_suite(evidence) {
        report.add_test_suite(suite);
    }
    if let Some(suites) = &evidence.suites {
        for run in &suites.runs {
            report.add_test_suite(pytest_suite(run, &evidence.source.commit));
        }
    }
    let xml = report.to_string().map_err(std::io::Error::other)?;
    // Control and bidirectional characters of names and texts (a candidate
    // folder, a test id, an output tail) are written escaped: XML 1.0 allows
    // no C0 control, and a bidi override reorders what a CI view shows.
    let xml = crate::output::escape_text(&xml, false);
    skipped_not_disabled(&xml)
}

/// `xml` with every `<testsuite>`'s `disabled` attribute renamed `skipped`,
/// everything else byte for byte. quick-junit counts skipped testcases into
/// `disabled` (JUnit 5's word for tests switched off in code); CI readers
/// (junitparser, Jenkins, GitLab) read skipped tests from `skipped`, and
/// Jenkins' `junit-10.xsd` allows no `disabled` on a testsuite.
///
/// # Errors
/// When `xml` is not well-formed.
fn skipped_not_disabled(xml: &str) -> std::io::Result<String> {
    use quick_xml::events::attributes::Attribute;
    use quick_xml::events::{BytesStart, Event};
    use quick_xml::name::QName;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut writer = quick_xml::Writer::new(Vec::new());
    loop {
        let event = reader.read_event().map_err(std::io::Error::other)?;
        let event = match event {
            Event::Eof => break,
            Event::Start(e) if e.name().as_ref() == b"testsuite" => {
                let mut out = BytesStart::new("testsuite");
                for a in e.attributes() {
                    let a = a.map_err(std::io::Error::other)?;
                    if a.key.as_ref() == b"disabled" {
                        out.push_attribute(Attribute {
                            key: QName(b"skipped"),
                            value: a.value,
                        });
                    } else {
                        out.push_attribute(a);
                    }
                }
                Event::Start(out)
            }
            other => other,
        };
        writer.write_event(event).map_err(std::io::Error::other)?;
    }
    String::from_utf8(writer.into_inner()).map_err(std::io::Error::other)
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

/// The testsuite `candidates`: one testcase per candidate (classname
/// `candidates`, name the folder) with its own verdict: a success for
/// `pass`, a failure naming the gate and check for `fail`, an error (type
/// `not-certified`) for `not-certified`, as for a required gate that did not
/// run. The property `passed` lists the folders that passed. None for
/// evidence without candidate verdicts.
fn candidates_suite(evidence: &Evidence) -> Option<TestSuite> {
    let judged: Vec<(&str, &CandidateVerdict)> = evidence
        .candidates
        .iter()
        .filter_map(|c| c.verdict.as_ref().map(|v| (c.folder.as_str(), v)))
        .collect();
    if judged.is_empty() {
        return None;
    }
    let mut suite = TestSuite::new("candidates");
    suite.add_property(quick_junit::Property::new(
        "commit",
        evidence.source.commit.as_str(),
    ));
    suite.add_property(quick_junit::Property::new(
        "passed",
        super::verdicts::passed(&evidence.candidates).join(","),
    ));
    for (folder, v) in judged {
        let at = match (&v.gate, &v.check) {
            (Some(gate), Some(check)) => format!("{gate}/{check}"),
            (Some(gate), None) => gate.clone(),
            _ => String::new(),
        };
        let text = format!("{at}: {}", v.reason.as_deref().unwrap_or_default());
        let status = match v.result {
            CandidateResult::Pass => TestCaseStatus::success(),
            CandidateResult::Fail => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(first_line(&text));
                s.set_description(format!("{folder} failed {text}"));
                s
            }
            CandidateResult::NotCertified => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_type(v.result.word());
                s.set_message(first_line(&text));
                s.set_description(format!(
                    "{folder} is not certified: no check of its own failed, but {text}"
                ));
                s
            }
        };
        let mut case = TestCase::new(folder, status);
        case.set_classname("candidates");
        suite.add_test_case(case);
    }
    Some(suite)
}

/// The testsuite `sdk-groups` of a run whose candidates are grouped by SDK
/// pin: one testcase per group (classname `sdk-groups`, name its pin), a
/// success when the group's run passed, else a failure; the text names its
/// candidates with their verdicts, its interpreter and its evidence
/// directory. None for a run with one pin.
fn sdk_groups_suite(evidence: &Evidence) -> Option<TestSuite> {
    let groups = evidence.sdk_groups.as_ref()?;
    let mut suite = TestSuite::new("sdk-groups");
    for g in groups {
        let candidates = g
            .candidates
            .iter()
            .map(|c| {
                let at = c
                    .stopped_at
                    .as_deref()
                    .map_or_else(String::new, |at| format!(" at {at}"));
                format!(
                    "{} {}{at}",
                    c.folder,
                    c.verdict.map_or("(no verdict)", CandidateResult::word)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let mut text = format!(
            "{}: candidates {candidates}; interpreter {} (langbot-plugin {}); evidence {}",
            g.requirement,
            g.python,
            g.version.as_deref().unwrap_or("not verified"),
            g.evidence
                .as_deref()
                .unwrap_or(if g.default { "this directory" } else { "none" })
        );
        if let Some(why) = &g.error {
            text.push_str(&format!("; {why}"));
        }
        let status = if g.verdict == crate::evidence::Verdict::Pass {
            TestCaseStatus::success()
        } else {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("sdk group {} did not pass", g.requirement));
            s.set_description(text.clone());
            s
        };
        let mut case = TestCase::new(g.requirement.as_str(), status);
        case.set_classname("sdk-groups");
        case.set_system_out(text);
        suite.add_test_case(case);
    }
    Some(suite)
}

/// `candidate: check` for a per-candidate check, `check` otherwise.
fn testcase_name(check: &Check) -> String {
    match &check.candidate {
        Some(c) => format!("{c}: {}", check.name),
        None => check.name.clone(),
    }
}

/// `detail`, followed by one paragraph per consequence:
/// `consequence (not a separate failure) <name>: <detail>`.
fn with_consequences(detail: &str, consequences: &[&Check]) -> String {
    let mut text = detail.to_string();
    for k in consequences {
        text.push_str(&format!(
            "\n\nconsequence (not a separate failure) {}: {}",
            testcase_name(k),
            k.detail
        ));
    }
    text
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::testing::{evidence, gate};
    use crate::evidence::{Check, Verdict};

    /// The `<testsuite name="id" ...>` start tag of `xml`.
    fn suite_tag<'a>(xml: &'a str, id: &str) -> &'a str {
        let start = xml
            .find(&format!("<testsuite name=\"{id}\""))
            .unwrap_or_else(|| panic!("no testsuite {id}: {xml}"));
        let end = start + xml[start..].find('>').unwrap();
        &xml[start..=end]
    }

    #[test]
    fn control_and_bidi_characters_of_names_and_details_are_written_escaped() {
        let ev = evidence(
            vec![gate(
                "stage",
                GateResult::Fail,
                true,
                vec![Check::fail(
                    "candidate-present",
                    Some("codex\u{202e}gnp.exe"),
                    "Runner/codex\u{202e}gnp.exe: \x1b[2J missing\u{0007}",
                )],
            )],
            Verdict::Fail,
        );
        let xml = render(&ev).unwrap();
        for raw in ['\u{202e}', '\u{1b}', '\u{7}'] {
            assert!(!xml.contains(raw), "{raw:?} in {xml}");
        }
        assert!(xml.contains("codex\\u202egnp.exe"), "{xml}");
        // quick-junit itself drops the C0 controls XML 1.0 cannot hold.
        assert!(xml.contains("gnp.exe:  missing</failure>"), "{xml}");
    }

    #[test]
    fn skipped_counts_in_skipped_and_required_gates_that_did_not_finish_are_errors() {
        let ev = evidence(
            vec![
                gate(
                    "tree-clean",
                    GateResult::Pass,
                    true,
                    vec![Check::pass("commit", None, "ok")],
                ),
                gate("stage", GateResult::Skipped, true, Vec::new()),
                gate("sdk-record", GateResult::Blocked, true, Vec::new()),
                gate("suites", GateResult::Skipped, false, Vec::new()),
            ],
            Verdict::Incomplete,
        );
        let xml = render(&ev).unwrap();
        assert!(!xml.contains("disabled="), "{xml}");
        assert_eq!(
            suite_tag(&xml, "suites"),
            "<testsuite name=\"suites\" tests=\"1\" skipped=\"1\" errors=\"0\" failures=\"0\" time=\"0.010\">"
        );
        assert_eq!(
            suite_tag(&xml, "stage"),
            "<testsuite name=\"stage\" tests=\"1\" skipped=\"0\" errors=\"1\" failures=\"0\" time=\"0.010\">"
        );
        assert!(
            xml.contains("<testcase name=\"interrupted\" classname=\"stage\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<error message=\"blocked: prerequisite gate(s) did not pass: stage\" type=\"blocked\">"),
            "{xml}"
        );
        assert!(
            xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"verify-coding-candidates\" tests=\"4\" failures=\"0\" errors=\"2\">"),
            "{xml}"
        );
    }

    #[test]
    fn a_consequence_is_in_its_roots_failure_text_not_a_failing_testcase_of_its_own() {
        let ev = evidence(
            vec![gate(
                "sdk-record",
                GateResult::Fail,
                true,
                vec![
                    Check::fail("record-rows", None, "row 7 is malformed"),
                    Check::fail("unlisted-files", None, "a.py not verified")
                        .consequence_of("record-rows"),
                    Check::fail("record-rows", Some("c"), "other candidate"),
                    Check::fail("bytecode", Some("d"), "no root in d")
                        .consequence_of("archive-digest"),
                ],
            )],
            Verdict::Fail,
        );
        let xml = render(&ev).unwrap();
        assert_eq!(
            suite_tag(&xml, "sdk-record"),
            "<testsuite name=\"sdk-record\" tests=\"3\" skipped=\"0\" errors=\"0\" failures=\"3\" time=\"0.010\">"
        );
        assert!(!xml.contains("<testcase name=\"unlisted-files\""), "{xml}");
        assert!(
            xml.contains("<failure message=\"row 7 is malformed\">row 7 is malformed\n\nconsequence (not a separate failure) unlisted-files: a.py not verified</failure>"),
            "{xml}"
        );
        // A consequence whose root (same candidate) is absent stays a failure.
        assert!(
            xml.contains("<testcase name=\"d: bytecode\" classname=\"sdk-record\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<failure message=\"other candidate\">other candidate</failure>"),
            "{xml}"
        );
    }

    #[test]
    fn each_candidate_verdict_is_a_testcase_of_the_candidates_suite() {
        let mut dependencies = gate(
            "dependencies",
            GateResult::Pass,
            true,
            vec![Check::pass("prepare", Some("b"), "ok")],
        );
        dependencies.candidates_left_out = vec!["a".into()];
        let mut ev = evidence(
            vec![
                gate(
                    "admission",
                    GateResult::Fail,
                    true,
                    vec![
                        Check::fail("sdk-requirement", Some("a"), "pin refused\nmore"),
                        Check::pass("sdk-requirement", Some("b"), "ok"),
                    ],
                ),
                dependencies,
                gate("suites", GateResult::Blocked, true, Vec::new()),
            ],
            Verdict::Fail,
        );
        // Before verdicts exist (older evidence) there is no such suite.
        assert!(!render(&ev).unwrap().contains("name=\"candidates\""));
        for folder in ["a", "b"] {
            let mut c: crate::evidence::CandidateRecord = serde_json::from_value(
                serde_json::json!({"folder": folder, "path": format!("R/{folder}"),
                                   "manifest": null, "archive": null}),
            )
            .unwrap();
            c.verdict = Some(crate::evidence::verdicts::of(&ev.gates, folder));
            ev.candidates.push(c);
        }
        let xml = render(&ev).unwrap();
        assert!(
            xml.contains("<property name=\"candidates_left_out\" value=\"a\"/>"),
            "{xml}"
        );
        assert_eq!(
            suite_tag(&xml, "candidates"),
            "<testsuite name=\"candidates\" tests=\"2\" skipped=\"0\" errors=\"1\" failures=\"1\">"
        );
        assert!(
            xml.contains("<testcase name=\"a\" classname=\"candidates\">\n            <failure message=\"admission/sdk-requirement: pin refused\">a failed admission/sdk-requirement: pin refused</failure>"),
            "{xml}"
        );
        assert!(
            xml.contains("<error message=\"suites: blocked: prerequisite gate(s) did not pass: stage\" type=\"not-certified\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<property name=\"passed\" value=\"\"/>"),
            "{xml}"
        );
    }

    #[test]
    fn renaming_keeps_escaped_text_byte_for_byte() {
        let xml = "<?xml version=\"1.0\"?>\n<testsuites><testsuite name=\"a&amp;b\" tests=\"1\" disabled=\"1\"><testcase name=\"x\"><failure>&lt;1&gt; &quot;q&quot;</failure></testcase></testsuite></testsuites>\n";
        assert_eq!(
            skipped_not_disabled(xml).unwrap(),
            xml.replace("disabled=", "skipped=")
        );
    }
}
