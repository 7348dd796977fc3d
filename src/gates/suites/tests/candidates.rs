//! The per-candidate runs' pure parts: which tests a candidate has, which
//! test files the extraction run gets from the tree, the SDK-copy refusal,
//! and the checks, each naming the candidate.

use super::super::candidates::{
    decide, files_not_in, folder_sdk_entries, options_for, resolve_tests, sdk_entries, with_covers,
    CandidateObservation, TestsSource,
};
use super::*;

fn write(root: &std::path::Path, files: &[&str]) {
    for f in files {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "").unwrap();
    }
}

#[test]
fn tests_default_to_a_tests_folder_holding_test_files_and_the_profile_overrides() {
    let d = tempfile::tempdir().unwrap();
    let (source, tests, missing) = resolve_tests(&None, d.path());
    assert_eq!(
        (source, tests.len(), missing.len()),
        (TestsSource::NoTestsFolder, 0, 0)
    );
    // A tests/ folder without test files is no tests.
    write(d.path(), &["tests/helpers.py", "tests/data.txt"]);
    assert_eq!(resolve_tests(&None, d.path()).0, TestsSource::NoTestsFolder);
    write(d.path(), &["tests/unit/test_a.py"]);
    assert_eq!(
        resolve_tests(&None, d.path()),
        (TestsSource::TestsFolder, vec!["tests".to_string()], vec![])
    );
    // `tests = []`: none, whatever the folder holds.
    assert_eq!(
        resolve_tests(&Some(vec![]), d.path()).0,
        TestsSource::ProfileNone
    );
    // Named paths: those not in the commit are missing.
    let named = Some(vec!["tests/unit".to_string(), "check_x.py".to_string()]);
    assert_eq!(
        resolve_tests(&named, d.path()),
        (
            TestsSource::Profile,
            vec!["tests/unit".to_string(), "check_x.py".to_string()],
            vec!["check_x.py".to_string()]
        )
    );
}

#[test]
fn the_extraction_run_gets_only_the_test_files_the_archive_lacks() {
    let tree = tempfile::tempdir().unwrap();
    let extracted = tempfile::tempdir().unwrap();
    write(
        tree.path(),
        &[
            "tests/test_a.py",
            "tests/conftest.py",
            "tests/data/x.json",
            "main.py",
        ],
    );
    // The archive lacks tests/ entirely: all of it is added, data included.
    write(extracted.path(), &["main.py"]);
    assert_eq!(
        files_not_in(tree.path(), &["tests".into()], extracted.path()),
        ["tests/conftest.py", "tests/data/x.json", "tests/test_a.py"]
    );
    // It holds tests/: only the test files and conftest.py it lacks are
    // added, never another file of a folder the archive carries.
    write(extracted.path(), &["tests/test_a.py"]);
    assert_eq!(
        files_not_in(tree.path(), &["tests".into()], extracted.path()),
        ["tests/conftest.py"]
    );
    write(
        extracted.path(),
        &["tests/conftest.py", "tests/data/x.json"],
    );
    assert!(files_not_in(tree.path(), &["tests".into()], extracted.path()).is_empty());
}

#[test]
fn sdk_entries_finds_every_langbot_plugin_name_in_the_environment() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        &[
            "six.py",
            "langbot_plugin/__init__.py",
            "langbot_plugin-0.6.0b5.dist-info/RECORD",
            "Langbot-Plugin.pth",
        ],
    );
    assert_eq!(
        sdk_entries(d.path()),
        [
            "Langbot-Plugin.pth",
            "langbot_plugin",
            "langbot_plugin-0.6.0b5.dist-info"
        ]
    );
    assert!(sdk_entries(&d.path().join("none")).is_empty());
}

#[test]
fn candidate_options_keep_the_run_settings_and_drop_repository_paths() {
    let mut base = opts();
    base.retries = 2;
    base.deselected = vec!["R/t/test_a.py::test_b".into()];
    let o = options_for(Some(&base), &["tests".into()]);
    assert_eq!(o.paths, ["tests"]);
    assert!(o.historical.is_empty() && o.deselected.is_empty() && o.config.is_none());
    assert_eq!((o.retries, o.timeout_secs), (2, base.timeout_secs));
    let d = options_for(None, &["t".into()]);
    assert_eq!((d.retries, d.timeout_secs, d.paths.len()), (0, 600, 1));
    assert_eq!(d.pytest_plugins, ["pytest_asyncio.plugin"]);
}

fn tested(folder: &str) -> CandidateObservation {
    CandidateObservation {
        folder: folder.into(),
        path: format!("P/{folder}"),
        source: TestsSource::TestsFolder,
        tests: vec!["tests".into()],
        missing: vec![],
        added: vec![],
        environment: Some("roots/dependencies/x/env/site-packages".into()),
        environment_error: None,
        private_sdk: vec![],
        folder_sdk: vec![],
        extraction_missing: false,
        runs: vec![
            good_run(&format!("{folder}/tree")),
            good_run(&format!("{folder}/extracted")),
        ],
        read_by_repository_run: None,
    }
}

#[test]
fn a_tested_candidate_passes_every_check_and_each_names_it() {
    let checks = decide(&tested("wrap"), Some(&opts()));
    assert!(failing(&checks).is_empty(), "{:?}", failing(&checks));
    for c in &checks {
        assert_eq!(c.candidate.as_deref(), Some("wrap"), "{c:?}");
        assert!(c.name.starts_with("wrap/"), "{}", c.name);
    }
    let names = names(&checks);
    for n in [
        "wrap/test-paths",
        "wrap/no-private-sdk",
        "wrap/tree/outcomes",
        "wrap/extracted/outcomes",
    ] {
        assert!(names.contains(&n), "{n}: {names:?}");
    }
    assert_eq!(names.last(), Some(&"wrap/extracted/same-outcomes"));
    // The repository-level runs' source-root checks are not theirs.
    assert!(!names
        .iter()
        .any(|n| n.ends_with("source-root") || n.ends_with("extraction-unchanged")));
}

#[test]
fn a_candidate_without_tests_is_an_untested_warning_and_never_a_pass() {
    for (source, why) in [
        (
            TestsSource::NoTestsFolder,
            "not its folder's tests/, and the profile names none",
        ),
        (TestsSource::ProfileNone, "`tests = []`"),
    ] {
        let mut c = tested("bare");
        c.source = source;
        c.tests.clear();
        c.runs.clear();
        let checks = decide(&c, None);
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert_eq!(checks[0].name, "bare/untested");
        assert_eq!(checks[0].result, CheckResult::Warn);
        assert_eq!(checks[0].candidate.as_deref(), Some("bare"));
        assert!(checks[0].detail.contains(why), "{}", checks[0].detail);
    }
}

#[test]
fn a_candidate_the_repository_suites_cover_is_covered_only_without_tests_of_its_own() {
    let mut o = opts();
    o.covers = vec!["P/bare".into()];
    // Named by `covers`, no tests of its own: covered by the repository runs.
    for none in [TestsSource::NoTestsFolder, TestsSource::ProfileNone] {
        assert_eq!(
            with_covers(none.clone(), Some(&o), "P/bare"),
            TestsSource::Repository
        );
        // Not named, or no [suites] at all: still untested.
        assert_eq!(with_covers(none.clone(), Some(&o), "P/other"), none);
        assert_eq!(with_covers(none.clone(), None, "P/bare"), none);
    }
    // Tests of its own run whatever `covers` says.
    assert_eq!(
        with_covers(TestsSource::TestsFolder, Some(&o), "P/bare"),
        TestsSource::TestsFolder
    );
    let mut c = tested("bare");
    c.source = TestsSource::Repository;
    c.tests.clear();
    c.runs.clear();
    // Covered only when the repository-level `extracted` run read its
    // extraction; never read, or no record of it: a warning, never a pass.
    for (read, result, needle) in [
        (Some(true), CheckResult::Pass, "read its exact extraction"),
        (Some(false), CheckResult::Warn, "never opened, imported"),
        (None, CheckResult::Warn, "made no record"),
    ] {
        c.read_by_repository_run = read;
        let checks = decide(&c, Some(&o));
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert_eq!(checks[0].name, "bare/covered");
        assert_eq!(checks[0].result, result, "{read:?}");
        assert!(checks[0].detail.contains(needle), "{}", checks[0].detail);
    }
}

#[test]
fn refuses_a_named_test_path_missing_from_the_commit_naming_the_key_and_the_file() {
    let mut c = tested("wrap");
    c.source = TestsSource::Profile;
    c.tests = vec!["check".into()];
    c.missing = vec!["check".into()];
    c.runs.clear();
    let checks = decide(&c, None);
    assert_eq!(failing(&checks), [("wrap/test-paths", None)]);
    assert_eq!(checks[0].candidate.as_deref(), Some("wrap"));
    let d = &checks[0].detail;
    assert!(
        d.contains("[[candidate]] tests") && d.contains("P/wrap/check"),
        "{d}"
    );
}

#[test]
fn refuses_an_sdk_copy_in_the_dependency_environment_before_any_run() {
    let mut c = tested("wrap");
    c.private_sdk = vec!["langbot_plugin".into()];
    c.runs.clear();
    let checks = decide(&c, None);
    assert_eq!(failing(&checks), [("wrap/no-private-sdk", None)]);
    assert!(checks
        .iter()
        .all(|c| c.candidate.as_deref() == Some("wrap")));
    assert!(checks.last().unwrap().detail.contains("langbot_plugin"));
    // No environment record, no extraction: each fails naming the candidate.
    let mut c = tested("wrap");
    c.environment_error = Some("no record".into());
    c.runs.clear();
    assert_eq!(failing(&decide(&c, None)), [("wrap/dependencies", None)]);
    let mut c = tested("wrap");
    c.extraction_missing = true;
    c.runs.clear();
    assert_eq!(failing(&decide(&c, None)), [("wrap/extraction", None)]);
}

#[test]
fn a_test_failing_only_in_the_extraction_fails_that_candidates_outcomes_and_same_outcomes() {
    let mut c = tested("tally");
    let extracted = &mut c.runs[1];
    if let Ok(cases) = &mut extracted.report {
        cases[0].outcome = SuiteOutcome::Failed;
        cases[0].message = Some("FileNotFoundError: data/words.txt".into());
    }
    extracted.pytest = ran(1);
    observe_as_reported(extracted);
    let checks = decide(&c, None);
    let failed = failing(&checks);
    assert!(
        failed.contains(&("tally/extracted/outcomes", None)),
        "{failed:?}"
    );
    assert!(
        failed.contains(&("tally/extracted/same-outcomes", None)),
        "{failed:?}"
    );
    assert!(checks
        .iter()
        .all(|c| c.candidate.as_deref() == Some("tally")));
    assert!(
        !failed.iter().any(|(n, _)| n.starts_with("tally/tree/")),
        "{failed:?}"
    );
}

#[test]
fn refuses_an_sdk_copy_in_the_candidates_own_folder_which_comes_first_on_sys_path() {
    let tree = tempfile::tempdir().unwrap();
    let extracted = tempfile::tempdir().unwrap();
    write(tree.path(), &["main.py", "langbot_plugin/__init__.py"]);
    write(extracted.path(), &["main.py", "langbot_plugin.py"]);
    assert_eq!(
        folder_sdk_entries(tree.path(), extracted.path()),
        ["extracted/langbot_plugin.py", "tree/langbot_plugin"]
    );
    write(tree.path(), &[]);
    let clean = tempfile::tempdir().unwrap();
    write(clean.path(), &["main.py", "pkg/langbot_plugin_helpers.py"]);
    assert!(folder_sdk_entries(clean.path(), clean.path()).is_empty());
    let mut c = tested("shadow");
    c.folder_sdk = vec!["tree/langbot_plugin".into()];
    c.runs.clear();
    let checks = decide(&c, Some(&opts()));
    assert_eq!(failing(&checks), [("shadow/no-private-sdk", None)]);
    let f = checks
        .iter()
        .find(|k| k.name == "shadow/no-private-sdk")
        .unwrap();
    assert!(f.detail.contains("tree/langbot_plugin"), "{}", f.detail);
    assert!(f.detail.contains("nothing was run"), "{}", f.detail);
}
