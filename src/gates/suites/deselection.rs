//! `<run>/deselected`: every test the run's collection reported runs,
//! unless the profile declares its deselection (`[suites] deselected`).
//!
//! A deselection makes a collected test vanish without an outcome:
//! `--deselect`, `-k` or `-m` in the configuration's `addopts`, or a
//! conftest's `pytest_collection_modifyitems` that removes items (and
//! announces them through `pytest_deselected`, or not). The run's plugin
//! (`suites_run.py`) records every item `pytest_itemcollected` reported
//! that is not among the items the session runs, and whether it was
//! announced; here each must be declared.

use super::record::{hooks_named, Collection, DeselectedItem, SELECTION_HOOKS};
use crate::evidence::Check;
use serde_json::json;

/// `<run>/deselected`'s passing detail: no test was deselected, or each
/// one deselected is declared (named).
fn all_run_detail(c: &Collection) -> String {
    if c.deselected.is_empty() {
        format!(
            "every one of the {} test(s) the collection reported runs; none was deselected",
            c.items.len()
        )
    } else {
        format!(
            "{} test(s) were deselected, each declared by [suites] deselected: {}",
            c.deselected.len(),
            c.deselected
                .iter()
                .map(|d| d.nodeid.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// `<run>/deselected` over the run's collection record `c` (`None`: not
/// read), the profile's declared deselections and its configuration file
/// (`None`: the private empty one).
pub(crate) fn deselected_check(
    run: &str,
    c: Option<&Collection>,
    declared: &[String],
    config: Option<&str>,
) -> Check {
    let name = format!("{run}/deselected");
    let Some(c) = c else {
        return Check::fail(
            &name,
            None,
            "the run's collection record was not read, so it was not observed whether a collected test was \
             deselected; see the `collected` check",
        )
        .with_observed(json!({ "record_read": false }));
    };
    let undeclared: Vec<&DeselectedItem> = c
        .deselected
        .iter()
        .filter(|d| !declared.contains(&d.nodeid))
        .collect();
    let hooks = hooks_named(&c.hooks, SELECTION_HOOKS);
    let observed = json!({
        "deselected": c.deselected,
        "declared": declared,
        "undeclared": undeclared,
        "selection_hooks": hooks,
    });
    if undeclared.is_empty() {
        return Check::pass(&name, None, all_run_detail(c)).with_observed(observed);
    }
    let listed: Vec<String> = undeclared
        .iter()
        .take(20)
        .map(|d| {
            format!(
                "{} ({})",
                d.nodeid,
                if d.via == "dropped" {
                    "dropped from the session's items without pytest_deselected"
                } else {
                    "announced through pytest_deselected: `--deselect`, `-k`, `-m` or a hook"
                }
            )
        })
        .collect();
    Check::fail(
        &name,
        None,
        format!(
            "{} collected test(s) do not run and the profile does not declare their deselection: {}{}; \
             selection hooks outside pytest: {}; pytest configuration: {}; a deselected test has no outcome, \
             so a failing one would vanish: expected every collected test to run: remove the deselection \
             (`--deselect`, `-k` or `-m` in the configuration's addopts, a conftest's \
             pytest_collection_modifyitems), or declare the node ids in [suites] deselected",
            undeclared.len(),
            listed.join(", "),
            if undeclared.len() > listed.len() {
                ", ..."
            } else {
                ""
            },
            if hooks.is_empty() {
                "none".to_string()
            } else {
                hooks.join(", ")
            },
            config.unwrap_or("none named (an empty private one)")
        ),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;
    use crate::gates::suites::record::HookImpl;

    fn collection(deselected: &[(&str, &str)]) -> Collection {
        Collection {
            exit_code: 0,
            pytest_version: "9.2.0".into(),
            items: vec![],
            errors: vec![],
            system_exit: None,
            tests_started: true,
            finished: true,
            observed: vec![],
            deselected: deselected
                .iter()
                .map(|(nodeid, via)| DeselectedItem {
                    nodeid: (*nodeid).into(),
                    via: (*via).into(),
                })
                .collect(),
            hooks: vec![HookImpl {
                hook: "pytest_collection_modifyitems".into(),
                plugin: "/d/R/t/conftest.py".into(),
                file: Some("R/t/conftest.py".into()),
                line: Some(7),
                wrapper: false,
            }],
            definitions: Default::default(),
            touched: vec![],
            collect_only: false,
        }
    }

    #[test]
    fn an_undeclared_deselection_fails_naming_the_test_how_and_the_hooks() {
        let c = collection(&[
            ("R/t/test_a.py::test_fails", "pytest_deselected"),
            ("R/t/test_a.py::test_dropped", "dropped"),
        ]);
        let check = deselected_check("tree", Some(&c), &[], Some("R/t/pytest.ini"));
        assert_eq!(check.result, CheckResult::Fail);
        assert_eq!(check.name, "tree/deselected");
        assert!(
            check.detail.starts_with(
                "2 collected test(s) do not run and the profile does not declare their deselection: \
                 R/t/test_a.py::test_fails (announced through pytest_deselected: `--deselect`, `-k`, `-m` or a \
                 hook), R/t/test_a.py::test_dropped (dropped from the session's items without \
                 pytest_deselected); selection hooks outside pytest: R/t/conftest.py:7 \
                 pytest_collection_modifyitems; pytest configuration: R/t/pytest.ini;"
            ),
            "{}",
            check.detail
        );
        assert_eq!(check.observed.unwrap()["undeclared"][1]["via"], "dropped");
        // One of the two declared: the other still fails.
        let check = deselected_check(
            "tree",
            Some(&c),
            &["R/t/test_a.py::test_fails".into()],
            None,
        );
        assert_eq!(check.result, CheckResult::Fail);
        assert!(
            check.detail.starts_with("1 collected test(s)"),
            "{}",
            check.detail
        );
        assert!(check.detail.contains("none named (an empty private one)"));
    }

    #[test]
    fn declared_or_no_deselections_pass_and_are_listed() {
        let c = collection(&[("R/t/test_a.py::test_slow", "pytest_deselected")]);
        let check = deselected_check(
            "extracted",
            Some(&c),
            &["R/t/test_a.py::test_slow".into()],
            None,
        );
        assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
        assert_eq!(
            check.detail,
            "1 test(s) were deselected, each declared by [suites] deselected: R/t/test_a.py::test_slow"
        );
        assert_eq!(
            check.observed.unwrap()["deselected"][0]["nodeid"],
            "R/t/test_a.py::test_slow"
        );
        let check = deselected_check("tree", Some(&collection(&[])), &[], None);
        assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
        let check = deselected_check("tree", None, &[], None);
        assert_eq!(check.result, CheckResult::Fail);
    }
}
