//! `<run>/observed-outcomes`: every test's reported outcome is the outcome
//! the run's own plugin observed of its phases, so a conftest or plugin
//! that rewrites a report (a `pytest_runtest_makereport` wrapper turning a
//! failure into a pass, a `pytest_runtest_logreport` implementation changing
//! the outcome before the JUnit report writes it) fails the gate.
//!
//! The plugin (`suites_run.py`, `Observer`) records per test what setup,
//! call and teardown raised (its innermost wrappers of the phase hooks, and
//! the test function itself, wrapped for the call phase) and the outcome
//! pytest's own rules give for that (`observed`), beside the outcome of the
//! reports `pytest_runtest_logreport` handed it (`logged`). Here both report
//! channels, `logged` and the JUnit report the gate reads, are compared
//! with `observed`.
//!
//! A report worse than the observation (a failure where nothing raised, as
//! when a warning filter turns a warning into an error after the test) is
//! no rewrite: it fails `outcomes` on its own, and a failing report hides
//! nothing. Every other difference is: a failure reported as a pass, a
//! skip or an xfail; an xfail reported as a pass; a test reported passing
//! that the plugin did not observe.

use super::outcome_word;
use super::record::{hooks_named, Collection, ObservedTest, REPORTING_HOOKS};
use crate::evidence::{Check, SuiteTestCase};
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;

/// One test whose reported outcome is not what the run observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Rewrite {
    /// pytest's node id.
    pub nodeid: String,
    /// The outcome observed; `None`: not observed.
    pub observed: Option<String>,
    /// Why it was not observed.
    pub unobserved: Option<String>,
    /// What its phases raised, and the test function.
    pub raised: Vec<String>,
    /// The outcome(s) its JUnit testcase(s) report.
    pub junit: Vec<String>,
    /// The outcome of the reports logged to the plugin.
    pub logged: Option<String>,
}

/// A report outcome that fails the run by itself.
fn failing(outcome: &str) -> bool {
    matches!(outcome, "failed" | "error" | "xpassed-strict")
}

/// Whether JUnit outcome `reported` agrees with `observed`: the same, or a
/// pass and a non-strict XPASS (the report cannot tell them apart; the gate
/// tells an XPASS by the xfail the collection recorded, which an xfail
/// added while the test ran does not carry).
fn junit_agrees(observed: &str, reported: &str) -> bool {
    observed == reported
        || matches!(
            (observed, reported),
            ("xpassed", "passed") | ("passed", "xpassed")
        )
}

/// Every collected test with a testcase in `cases` whose reported outcome
/// (JUnit or logged) is not a failure and is not what `c` observed, in
/// collection order.
pub(crate) fn rewrites(c: &Collection, cases: &[SuiteTestCase]) -> Vec<Rewrite> {
    let mut junit: HashMap<(&str, &str), Vec<String>> = HashMap::new();
    for t in cases {
        junit
            .entry((t.classname.as_str(), t.name.as_str()))
            .or_default()
            .push(outcome_word(t.outcome).to_string());
    }
    let mut observed: HashMap<&str, &ObservedTest> = HashMap::new();
    for o in &c.observed {
        observed.entry(o.nodeid.as_str()).or_insert(o);
    }
    let mut found = Vec::new();
    for item in &c.items {
        let Some(reported) = junit.get(&(item.classname.as_str(), item.name.as_str())) else {
            continue; // never reported: the `outcomes` pairing names it
        };
        let obs = observed.get(item.nodeid.as_str());
        let logged = obs.and_then(|o| o.logged.clone());
        let passing_junit: Vec<&String> = reported.iter().filter(|r| !failing(r)).collect();
        let passing_logged = logged.as_deref().filter(|l| !failing(l));
        if passing_junit.is_empty() && passing_logged.is_none() {
            continue; // every channel reports a failure: nothing is hidden
        }
        let differs = match obs.and_then(|o| o.observed.as_deref()) {
            None => true,
            Some(o) => {
                passing_junit.iter().any(|r| !junit_agrees(o, r))
                    || passing_logged.is_some_and(|l| l != o)
                    || (logged.is_none() && !passing_junit.is_empty())
            }
        };
        if !differs {
            continue;
        }
        let raised = obs
            .map(|o| {
                let mut raised: Vec<String> = o
                    .phases
                    .iter()
                    .filter(|(_, v)| v.as_str() != "ok")
                    .map(|(k, v)| format!("{k} raised {v}"))
                    .collect();
                if let Some(e) = &o.callable_raised {
                    raised.push(format!("the test function raised {e}"));
                }
                raised
            })
            .unwrap_or_default();
        found.push(Rewrite {
            nodeid: item.nodeid.clone(),
            observed: obs.and_then(|o| o.observed.clone()),
            unobserved: match obs {
                None => Some("the run's plugin recorded nothing of it".into()),
                Some(o) => o.unobserved.clone(),
            },
            raised,
            junit: reported.clone(),
            logged,
        });
    }
    found
}

/// What the run observed of each reported test, as `observed.tests`.
fn tests_observed(c: &Collection) -> Vec<serde_json::Value> {
    c.observed
        .iter()
        .map(|o| {
            json!({
                "nodeid": o.nodeid,
                "id": format!("{}::{}", o.classname, o.name),
                "observed": o.observed,
                "logged": o.logged,
                "unobserved": o.unobserved,
            })
        })
        .collect()
}

/// The sentence naming the tests that ran a callable other than the one
/// their collection ended with (the first 10); `None` when none did.
fn swapped_sentence(swapped: &[(&str, &str)], hooks: &[String]) -> Option<String> {
    (!swapped.is_empty()).then(|| {
        let listed: Vec<String> = swapped
            .iter()
            .take(10)
            .map(|(n, p)| format!("{n}: {p}"))
            .collect();
        format!(
            "{} test(s) ran a callable other than the one their collection ended with, so the run did not \
             observe the test it reports: {}{}; reporting hooks outside pytest: {}; expected every test's call \
             to run the collected test function through the run's plugin: remove the fixture or hook that \
             replaces `item.obj` (`request.node.obj`) or calls something else in pytest_pyfunc_call or \
             pytest_runtest_call",
            swapped.len(),
            listed.join("; "),
            if swapped.len() > listed.len() { "; ..." } else { "" },
            if hooks.is_empty() {
                "none".to_string()
            } else {
                hooks.join(", ")
            }
        )
    })
}

/// The first 10 rewritten tests, each with what the run observed of it and
/// what the JUnit report and pytest_runtest_logreport reported.
fn rewrites_named(found: &[Rewrite]) -> Vec<String> {
    found
        .iter()
        .take(10)
        .map(|r| {
            let seen = match (&r.observed, &r.unobserved) {
                (Some(o), _) => format!(
                    "observed {o}{}",
                    if r.raised.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", r.raised.join("; "))
                    }
                ),
                (None, Some(why)) => format!("not observed ({why})"),
                (None, None) => "not observed".to_string(),
            };
            format!(
                "{}: {seen}, reported {} in the JUnit report and {} to pytest_runtest_logreport",
                r.nodeid,
                r.junit.join("+"),
                r.logged.as_deref().unwrap_or("nothing")
            )
        })
        .collect()
}

/// `<run>/observed-outcomes`' failing detail for rewritten reports `found`
/// (the first 10 named), with the swapped-callable sentence when there is
/// one.
fn rewritten_detail(
    found: &[Rewrite],
    hooks: &[String],
    swapped_sentence: Option<String>,
) -> String {
    let listed = rewrites_named(found);
    format!(
        "{} test(s) are reported with an outcome the run did not observe: {}{}; reporting hooks outside \
         pytest: {}; a hook that rewrites a report makes a failing test read as passing: expected every \
         report to say what the test did: remove the hook that changes reports (a conftest's \
         pytest_runtest_makereport or pytest_runtest_logreport), or, for a test the run could not observe, \
         make it a plain pytest test function{}",
        found.len(),
        listed.join("; "),
        if found.len() > listed.len() { "; ..." } else { "" },
        if hooks.is_empty() {
            "none".to_string()
        } else {
            hooks.join(", ")
        },
        swapped_sentence
            .map(|s| format!(". Also, {s}"))
            .unwrap_or_default()
    )
}

/// `<run>/observed-outcomes` over the run's collection record `c` and its
/// JUnit testcases `cases` (each `None` when not read).
pub(crate) fn observed_outcomes_check(
    run: &str,
    c: Option<&Collection>,
    cases: Option<&[SuiteTestCase]>,
) -> Check {
    let name = format!("{run}/observed-outcomes");
    let (Some(c), Some(cases)) = (c, cases) else {
        return Check::fail(
            &name,
            None,
            "the run's collection record or its JUnit report was not read, so no reported outcome could be \
             compared with what the run observed; see the `collected` and `outcomes` checks",
        )
        .with_observed(json!({ "record_read": c.is_some(), "report_read": cases.is_some() }));
    };
    let hooks = hooks_named(&c.hooks, REPORTING_HOOKS);
    let tests = tests_observed(c);
    if !c.finished {
        return Check::fail(
            &name,
            None,
            "the run's session did not end as pytest ends it, so its plugin never recorded what it observed of \
             the tests; see the `outcomes` check",
        )
        .with_observed(json!({ "session_finished": false }));
    }
    let found = rewrites(c, cases);
    let swapped: Vec<(&str, &str)> = c
        .observed
        .iter()
        .filter_map(|o| Some((o.nodeid.as_str(), o.callable_problem.as_deref()?)))
        .collect();
    let observed = json!({
        "tests": tests,
        "rewritten": found,
        "reporting_hooks": hooks,
        "callable_problems": swapped
            .iter()
            .map(|(n, p)| json!({ "nodeid": n, "problem": p }))
            .collect::<Vec<_>>(),
    });
    let swapped_sentence = swapped_sentence(&swapped, &hooks);
    // A swapped test reported passing is also an unobserved one: named once.
    let found: Vec<Rewrite> = found
        .into_iter()
        .filter(|r| !swapped.iter().any(|(n, _)| *n == r.nodeid))
        .collect();
    if let (Some(sentence), true) = (&swapped_sentence, found.is_empty()) {
        return Check::fail(&name, None, sentence.clone()).with_observed(observed);
    }
    if found.is_empty() {
        return Check::pass(
            &name,
            None,
            format!(
                "each of the {} reported test(s) has the outcome the run observed of its setup, call (the test \
                 function itself) and teardown, in the JUnit report and in the reports logged to the run's own \
                 plugin",
                c.observed.len()
            ),
        )
        .with_observed(observed);
    }
    Check::fail(
        &name,
        None,
        rewritten_detail(&found, &hooks, swapped_sentence),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{CheckResult, SuiteOutcome};
    use crate::gates::suites::record::{CollectedItem, HookImpl};
    use std::collections::BTreeMap;

    const CONFTEST: &str = "R/t/conftest.py";

    fn item(name: &str) -> CollectedItem {
        CollectedItem {
            nodeid: format!("R/t/test_a.py::{name}"),
            path: "/d/R/t/test_a.py".into(),
            source_file: None,
            classname: "R.t.test_a".into(),
            name: name.into(),
            xfail: None,
            historical: None,
        }
    }

    fn case(name: &str, outcome: SuiteOutcome) -> SuiteTestCase {
        SuiteTestCase {
            classname: "R.t.test_a".into(),
            name: name.into(),
            outcome,
            message: None,
            text: None,
            duration_ms: None,
        }
    }

    /// `name` observed as `observed` (`call` raising `raised` when given),
    /// its logged reports saying `logged`.
    fn seen(name: &str, observed: &str, logged: &str, raised: Option<&str>) -> ObservedTest {
        let mut phases = BTreeMap::from([
            ("setup".to_string(), "ok".to_string()),
            ("teardown".to_string(), "ok".to_string()),
        ]);
        phases.insert("call".into(), raised.unwrap_or("ok").into());
        ObservedTest {
            nodeid: format!("R/t/test_a.py::{name}"),
            classname: "R.t.test_a".into(),
            name: name.into(),
            observed: Some(observed.into()),
            unobserved: None,
            phases,
            callable_raised: raised.map(str::to_string),
            logged: Some(logged.into()),
            callable_problem: None,
        }
    }

    fn makereport_wrapper() -> HookImpl {
        HookImpl {
            hook: "pytest_runtest_makereport".into(),
            plugin: format!("/d/{CONFTEST}"),
            file: Some(CONFTEST.into()),
            line: Some(12),
            wrapper: true,
        }
    }

    fn asyncio_pyfunc_call() -> HookImpl {
        HookImpl {
            hook: "pytest_pyfunc_call".into(),
            plugin: "asyncio".into(),
            file: Some("/venv/lib/python3.11/site-packages/pytest_asyncio/plugin.py".into()),
            line: Some(858),
            wrapper: true,
        }
    }

    fn collection(names: &[&str], observed: Vec<ObservedTest>) -> Collection {
        Collection {
            exit_code: 0,
            pytest_version: "9.2.0".into(),
            items: names.iter().map(|n| item(n)).collect(),
            errors: vec![],
            system_exit: None,
            tests_started: true,
            finished: true,
            observed,
            deselected: vec![],
            hooks: vec![asyncio_pyfunc_call(), makereport_wrapper()],
            definitions: Default::default(),
            touched: vec![],
            collect_only: false,
        }
    }

    fn nodeids(found: &[Rewrite]) -> Vec<&str> {
        found.iter().map(|r| r.nodeid.as_str()).collect()
    }

    #[test]
    fn a_failure_reported_as_a_pass_is_a_rewrite_in_either_channel() {
        let raised = Some("builtins.AssertionError: assert 1 == 2");
        // A makereport wrapper: both channels say passed.
        let c = collection(
            &["test_f"],
            vec![seen("test_f", "failed", "passed", raised)],
        );
        let found = rewrites(&c, &[case("test_f", SuiteOutcome::Passed)]);
        assert_eq!(nodeids(&found), ["R/t/test_a.py::test_f"]);
        assert_eq!(found[0].observed.as_deref(), Some("failed"));
        assert_eq!(found[0].junit, ["passed"]);
        assert_eq!(
            found[0].raised,
            [
                "call raised builtins.AssertionError: assert 1 == 2",
                "the test function raised builtins.AssertionError: assert 1 == 2"
            ]
        );
        // A logreport implementation that ran after the plugin's: only the
        // JUnit report says passed.
        let c = collection(
            &["test_f"],
            vec![seen("test_f", "failed", "failed", raised)],
        );
        assert_eq!(
            nodeids(&rewrites(&c, &[case("test_f", SuiteOutcome::Passed)])),
            ["R/t/test_a.py::test_f"]
        );
        // Rewritten to a skip or an xfail: also hidden, also a rewrite.
        for hidden in [SuiteOutcome::Skipped, SuiteOutcome::Xfailed] {
            let c = collection(
                &["test_f"],
                vec![seen("test_f", "failed", "failed", raised)],
            );
            assert_eq!(
                rewrites(&c, &[case("test_f", hidden)]).len(),
                1,
                "{hidden:?}"
            );
        }
    }

    #[test]
    fn xfail_skip_and_xpass_semantics_are_no_rewrite() {
        let c = collection(
            &["test_xf", "test_skip", "test_xp", "test_dyn", "test_strict"],
            vec![
                // An xfail test that raised: an expected failure.
                seen("test_xf", "xfailed", "xfailed", Some("AssertionError")),
                seen("test_skip", "skipped", "skipped", None),
                seen("test_xp", "xpassed", "xpassed", None),
                // An xfail added while the test ran: the report cannot say
                // XPASS, the collection did not record the mark.
                seen("test_dyn", "xpassed", "xpassed", None),
                seen("test_strict", "xpassed-strict", "xpassed-strict", None),
            ],
        );
        let cases = [
            case("test_xf", SuiteOutcome::Xfailed),
            case("test_skip", SuiteOutcome::Skipped),
            case("test_xp", SuiteOutcome::Xpassed),
            case("test_dyn", SuiteOutcome::Passed),
            case("test_strict", SuiteOutcome::XpassedStrict),
        ];
        assert_eq!(rewrites(&c, &cases), []);
    }

    #[test]
    fn an_xfail_or_a_skip_reported_as_a_pass_is_a_rewrite() {
        let c = collection(
            &["test_xf", "test_skip"],
            vec![
                seen("test_xf", "xfailed", "passed", Some("AssertionError")),
                seen("test_skip", "skipped", "passed", None),
            ],
        );
        let cases = [
            case("test_xf", SuiteOutcome::Passed),
            case("test_skip", SuiteOutcome::Passed),
        ];
        assert_eq!(
            nodeids(&rewrites(&c, &cases)),
            ["R/t/test_a.py::test_xf", "R/t/test_a.py::test_skip"]
        );
    }

    #[test]
    fn a_report_worse_than_the_observation_hides_nothing() {
        // A warning turned into an error after the test: it fails `outcomes`.
        let c = collection(&["test_w"], vec![seen("test_w", "passed", "failed", None)]);
        assert_eq!(rewrites(&c, &[case("test_w", SuiteOutcome::Failed)]), []);
        let c = collection(&["test_w"], vec![seen("test_w", "passed", "error", None)]);
        assert_eq!(rewrites(&c, &[case("test_w", SuiteOutcome::Error)]), []);
    }

    #[test]
    fn a_passing_test_the_plugin_did_not_observe_or_saw_no_report_of_is_refused() {
        let mut unobservable = seen("test_u", "passed", "passed", None);
        unobservable.observed = None;
        unobservable.unobserved = Some("a unittest TestCase item".into());
        let mut unlogged = seen("test_l", "passed", "passed", None);
        unlogged.logged = None;
        let c = collection(
            &["test_u", "test_l", "test_missing", "test_unreported"],
            vec![unobservable, unlogged],
        );
        let cases = [
            case("test_u", SuiteOutcome::Passed),
            case("test_l", SuiteOutcome::Passed),
            case("test_missing", SuiteOutcome::Passed),
        ];
        let found = rewrites(&c, &cases);
        assert_eq!(
            nodeids(&found),
            [
                "R/t/test_a.py::test_u",
                "R/t/test_a.py::test_l",
                "R/t/test_a.py::test_missing"
            ]
        );
        assert_eq!(
            found[0].unobserved.as_deref(),
            Some("a unittest TestCase item")
        );
        assert_eq!(
            found[2].unobserved.as_deref(),
            Some("the run's plugin recorded nothing of it")
        );
        // An unobserved test reported failing hides nothing; one never
        // reported is the `outcomes` pairing's finding.
        let c = collection(&["test_missing"], vec![]);
        assert_eq!(
            rewrites(&c, &[case("test_missing", SuiteOutcome::Failed)]),
            []
        );
    }

    #[test]
    fn the_check_names_the_test_and_the_conftest_hook_first() {
        let c = collection(
            &["test_ok", "test_f"],
            vec![
                seen("test_ok", "passed", "passed", None),
                seen("test_f", "failed", "passed", Some("AssertionError: no")),
            ],
        );
        let cases = [
            case("test_ok", SuiteOutcome::Passed),
            case("test_f", SuiteOutcome::Passed),
        ];
        let check = observed_outcomes_check("tree", Some(&c), Some(&cases));
        assert_eq!(check.result, CheckResult::Fail);
        assert_eq!(check.name, "tree/observed-outcomes");
        assert!(
            check.detail.starts_with(
                "1 test(s) are reported with an outcome the run did not observe: R/t/test_a.py::test_f: observed \
                 failed (call raised AssertionError: no; the test function raised AssertionError: no), reported \
                 passed in the JUnit report and passed to pytest_runtest_logreport; reporting hooks outside \
                 pytest: R/t/conftest.py:12 pytest_runtest_makereport (wrapper), \
                 /venv/lib/python3.11/site-packages/pytest_asyncio/plugin.py:858 pytest_pyfunc_call (wrapper); "
            ),
            "{}",
            check.detail
        );
        let observed = check.observed.unwrap();
        assert_eq!(observed["tests"][1]["observed"], "failed");
        assert_eq!(observed["tests"][1]["logged"], "passed");
        assert_eq!(observed["rewritten"][0]["nodeid"], "R/t/test_a.py::test_f");

        let c = collection(
            &["test_ok"],
            vec![seen("test_ok", "passed", "passed", None)],
        );
        let check = observed_outcomes_check(
            "extracted",
            Some(&c),
            Some(&[case("test_ok", SuiteOutcome::Passed)]),
        );
        assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
        assert_eq!(check.observed.unwrap()["tests"][0]["observed"], "passed");
    }

    #[test]
    fn a_test_whose_callable_was_swapped_fails_whatever_its_report_says() {
        let mut swapped = seen("test_s", "passed", "passed", None);
        swapped.observed = None;
        swapped.callable_problem = Some(
            "its callable changed between collection and call: collected test_s (R/t/test_a.py:3), called \
             other (R/t/conftest.py:9)"
                .into(),
        );
        swapped.unobserved = swapped.callable_problem.clone();
        let c = collection(&["test_s"], vec![swapped]);
        for reported in [SuiteOutcome::Passed, SuiteOutcome::Failed] {
            let check =
                observed_outcomes_check("tree", Some(&c), Some(&[case("test_s", reported)]));
            assert_eq!(check.result, CheckResult::Fail);
            assert!(
                check.detail.starts_with(
                    "1 test(s) ran a callable other than the one their collection ended with, so the run did not \
                     observe the test it reports: R/t/test_a.py::test_s: its callable changed between collection \
                     and call: collected test_s (R/t/test_a.py:3), called other (R/t/conftest.py:9); reporting \
                     hooks outside pytest: R/t/conftest.py:12"
                ),
                "{}",
                check.detail
            );
            assert_eq!(
                check.observed.unwrap()["callable_problems"][0]["nodeid"],
                "R/t/test_a.py::test_s"
            );
        }
    }

    #[test]
    fn the_check_fails_without_a_record_a_report_or_a_finished_session() {
        let c = collection(&["test_ok"], vec![]);
        let cases = [case("test_ok", SuiteOutcome::Passed)];
        for check in [
            observed_outcomes_check("tree", None, Some(&cases)),
            observed_outcomes_check("tree", Some(&c), None),
        ] {
            assert_eq!(check.result, CheckResult::Fail);
            assert!(check.detail.contains("was not read"), "{}", check.detail);
        }
        let unfinished = Collection {
            finished: false,
            ..collection(&["test_ok"], vec![])
        };
        let check = observed_outcomes_check("tree", Some(&unfinished), Some(&cases));
        assert_eq!(check.result, CheckResult::Fail);
        assert!(
            check.detail.contains("did not end as pytest ends it"),
            "{}",
            check.detail
        );
    }
}
