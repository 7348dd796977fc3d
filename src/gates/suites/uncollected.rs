//! `<run>/uncollected`: every test the suites' files define shows up in the
//! run's collection, so a test that collection hides leaves no trace is
//! caught from a channel the repository's code does not reach.
//!
//! A conftest's `collect_ignore`/`collect_ignore_glob`, a
//! `pytest_ignore_collect` or `pytest_collect_file` hook, or a
//! `pytest_pycollect_makeitem` hook returning nothing makes a test vanish
//! before pytest reports any item, so `deselected` (which judges reported
//! items) never sees it. The run's driver (`suites_run.py`) reads the
//! suites' test files itself, with Python's `ast` and before pytest imports
//! anything of the repository, and records every `def` pytest's naming
//! rules name (`defined`); here each must be among the items the collection
//! reported (a parametrized test as any of its `[...]` items), or declared
//! in `[suites] deselected`.
//!
//! The scan names fewer tests than pytest can, never more: test classes
//! with a base it cannot judge from the file, definitions inside `if`
//! blocks and tests made by assignment are not named; files whose
//! collection failed are left to `collected`.

use super::record::{hooks_named, Collection, DefinedTest, ScanError, COLLECTION_HOOKS};
use crate::evidence::Check;
use serde_json::json;
use std::collections::HashSet;

/// A node id without its parameters (`[...]`, which may hold `::`).
fn base(nodeid: &str) -> &str {
    nodeid.find('[').map_or(nodeid, |i| &nodeid[..i])
}

/// The defined tests of `c` that no collected item (run or deselected)
/// and no declared deselection accounts for, leaving out files whose
/// collection failed (the `collected` check's finding).
pub(crate) fn uncollected<'a>(c: &'a Collection, declared: &[String]) -> Vec<&'a DefinedTest> {
    let mut seen: HashSet<&str> = c.items.iter().map(|i| base(&i.nodeid)).collect();
    seen.extend(c.deselected.iter().map(|d| base(&d.nodeid)));
    seen.extend(declared.iter().map(|d| base(d)));
    let failed: HashSet<&str> = c.errors.iter().map(|e| e.nodeid.as_str()).collect();
    c.definitions
        .defined
        .iter()
        .filter(|d| !seen.contains(d.nodeid.as_str()) && !failed.contains(d.file.as_str()))
        .collect()
}

/// `<run>/uncollected`'s failing detail when the driver could not read a
/// test file that pytest did not report as a collection error itself;
/// `None` when every such file was read.
fn unread_files_detail(c: &Collection) -> Option<String> {
    let failed: HashSet<&str> = c.errors.iter().map(|e| e.nodeid.as_str()).collect();
    let unread: Vec<&ScanError> = c
        .definitions
        .scan_errors
        .iter()
        .filter(|e| !failed.contains(e.file.as_str()))
        .collect();
    if unread.is_empty() {
        return None;
    }
    let files: Vec<String> = unread
        .iter()
        .map(|e| format!("{} ({})", e.file, e.error))
        .collect();
    Some(format!(
        "the run's driver could not read the test files {}, so it could not name the tests they define: \
         expected every test file under [suites] paths to parse as Python: fix the file",
        files.join(", ")
    ))
}

/// `<run>/uncollected` over the run's collection record `c` (`None`: not
/// read) and the profile's declared deselections.
pub(crate) fn uncollected_check(run: &str, c: Option<&Collection>, declared: &[String]) -> Check {
    let name = format!("{run}/uncollected");
    let Some(c) = c else {
        return Check::fail(
            &name,
            None,
            "the run's collection record was not read, so the tests its files define could not be compared \
             with what it collected; see the `collected` check",
        )
        .with_observed(json!({ "record_read": false }));
    };
    let missing = uncollected(c, declared);
    let hooks = hooks_named(&c.hooks, COLLECTION_HOOKS);
    let observed = json!({
        "defined": c.definitions.defined.len(),
        "uncollected": missing,
        "scan_errors": c.definitions.scan_errors,
        "collect_skipped": c.definitions.collect_skipped,
        "collection_hooks": hooks,
    });
    if let Some(detail) = unread_files_detail(c) {
        return Check::fail(&name, None, detail).with_observed(observed);
    }
    if missing.is_empty() {
        return Check::pass(
            &name,
            None,
            format!(
                "each of the {} test function(s) and method(s) the suites' files define (read with Python's \
                 ast, by pytest's naming rules) was collected or is declared deselected",
                c.definitions.defined.len()
            ),
        )
        .with_observed(observed);
    }
    let skipped = |file: &str| {
        c.definitions
            .collect_skipped
            .iter()
            .find(|s| s.nodeid == file)
            .map(|s| format!(" (its module was skipped while collecting: {})", s.reason))
            .unwrap_or_default()
    };
    let listed: Vec<String> = missing
        .iter()
        .take(20)
        .map(|d| format!("{} ({}:{}){}", d.nodeid, d.file, d.line, skipped(&d.file)))
        .collect();
    Check::fail(
        &name,
        None,
        format!(
            "{} test(s) the suites' files define were never collected, so they have no outcome and no \
             deselection lists them: {}{}; collection hooks and conftest variables outside pytest: {}; expected \
             every test the files define to be collected: remove what hides it (a conftest's collect_ignore or \
             collect_ignore_glob, a pytest_ignore_collect, pytest_collect_file or pytest_pycollect_makeitem \
             hook), or declare its node id in [suites] deselected",
            missing.len(),
            listed.join(", "),
            if missing.len() > listed.len() {
                ", ..."
            } else {
                ""
            },
            if hooks.is_empty() {
                "none".to_string()
            } else {
                hooks.join(", ")
            }
        ),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;
    use crate::gates::suites::record::{
        CollectError, CollectSkipped, CollectedItem, Definitions, DeselectedItem, HookImpl,
    };

    fn item(nodeid: &str) -> CollectedItem {
        CollectedItem {
            nodeid: nodeid.into(),
            path: "/d/R/t/test_a.py".into(),
            source_file: None,
            classname: "R.t.test_a".into(),
            name: nodeid.rsplit("::").next().unwrap_or_default().into(),
            xfail: None,
            historical: None,
        }
    }

    fn defined(nodeid: &str, line: u64) -> DefinedTest {
        DefinedTest {
            nodeid: nodeid.into(),
            file: nodeid.split("::").next().unwrap().into(),
            line,
        }
    }

    fn collection(items: &[&str], defs: Vec<DefinedTest>) -> Collection {
        Collection {
            exit_code: 0,
            pytest_version: "9.2.0".into(),
            items: items.iter().map(|i| item(i)).collect(),
            errors: vec![],
            system_exit: None,
            tests_started: true,
            finished: true,
            observed: vec![],
            deselected: vec![],
            hooks: vec![
                HookImpl {
                    hook: "pytest_pycollect_makeitem".into(),
                    plugin: "/d/R/t/conftest.py".into(),
                    file: Some("R/t/conftest.py".into()),
                    line: Some(9),
                    wrapper: false,
                },
                HookImpl {
                    hook: "collect_ignore".into(),
                    plugin: "/d/R/t/conftest.py".into(),
                    file: Some("R/t/conftest.py".into()),
                    line: Some(3),
                    wrapper: false,
                },
                HookImpl {
                    hook: "pytest_runtest_makereport".into(),
                    plugin: "/d/R/t/conftest.py".into(),
                    file: Some("R/t/conftest.py".into()),
                    line: Some(20),
                    wrapper: true,
                },
            ],
            definitions: Box::new(Definitions {
                defined: defs,
                ..Definitions::default()
            }),
            touched: vec![],
            collect_only: false,
        }
    }

    #[test]
    fn parametrized_deselected_and_declared_tests_count_as_collected() {
        let mut c = collection(
            &["R/t/test_a.py::test_p[1]", "R/t/test_a.py::TestK::test_m"],
            vec![
                defined("R/t/test_a.py::test_p", 3),
                defined("R/t/test_a.py::TestK::test_m", 8),
                defined("R/t/test_a.py::test_gone", 12),
                defined("R/t/test_a.py::test_declared", 15),
                defined("R/t/test_b.py::test_broken", 1),
            ],
        );
        c.deselected.push(DeselectedItem {
            nodeid: "R/t/test_a.py::test_gone".into(),
            via: "dropped".into(),
        });
        c.errors.push(CollectError {
            nodeid: "R/t/test_b.py".into(),
            longrepr: "SyntaxError".into(),
        });
        let declared = ["R/t/test_a.py::test_declared[x]".to_string()];
        assert_eq!(uncollected(&c, &declared), Vec::<&DefinedTest>::new());
        let check = uncollected_check("tree", Some(&c), &declared);
        assert_eq!(check.result, CheckResult::Pass, "{}", check.detail);
    }

    #[test]
    fn a_defined_test_never_collected_fails_naming_its_def_and_the_collection_hooks() {
        let mut c = collection(
            &["R/t/test_a.py::test_ok"],
            vec![
                defined("R/t/test_a.py::test_ok", 3),
                defined("R/t/test_a.py::test_hidden", 7),
                defined("R/t/test_c.py::test_skipped_module", 4),
            ],
        );
        c.definitions.collect_skipped.push(CollectSkipped {
            nodeid: "R/t/test_c.py".into(),
            reason: "no relay".into(),
        });
        let check = uncollected_check("extracted", Some(&c), &[]);
        assert_eq!(check.result, CheckResult::Fail);
        assert_eq!(check.name, "extracted/uncollected");
        assert!(
            check.detail.starts_with(
                "2 test(s) the suites' files define were never collected, so they have no outcome and no \
                 deselection lists them: R/t/test_a.py::test_hidden (R/t/test_a.py:7), \
                 R/t/test_c.py::test_skipped_module (R/t/test_c.py:4) (its module was skipped while collecting: \
                 no relay); collection hooks and conftest variables outside pytest: R/t/conftest.py:9 \
                 pytest_pycollect_makeitem, R/t/conftest.py:3 collect_ignore; expected"
            ),
            "{}",
            check.detail
        );
        assert_eq!(
            check.observed.unwrap()["uncollected"][0]["nodeid"],
            "R/t/test_a.py::test_hidden"
        );
    }

    #[test]
    fn an_unparsable_file_or_no_record_fails() {
        let mut c = collection(&[], vec![]);
        c.definitions.scan_errors.push(ScanError {
            file: "R/t/test_a.py".into(),
            error: "SyntaxError: invalid syntax".into(),
        });
        let check = uncollected_check("tree", Some(&c), &[]);
        assert_eq!(check.result, CheckResult::Fail);
        assert!(check.detail.contains("R/t/test_a.py (SyntaxError"));
        let check = uncollected_check("tree", None, &[]);
        assert_eq!(check.result, CheckResult::Fail);
    }

    #[test]
    fn base_strips_only_the_last_parts_parameters() {
        assert_eq!(base("a.py::T::t[1-x::y]"), "a.py::T::t");
        assert_eq!(base("a.py::t"), "a.py::t");
    }
}
