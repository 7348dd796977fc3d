//! Counterexamples for `lbp-build`, one per clause of its `proves` sentence
//! ("the official build ... produced exactly one archive named
//! `<author>-<name>-<version>.lbpkg` after the manifest") and per way the
//! build can be fooled (an unsafe name, a build exiting 0 without an
//! archive, extra or misnamed files, a build that writes into its source),
//! over observation values.

use super::*;
use crate::evidence::CheckResult;

fn id() -> ManifestId {
    ManifestId {
        author: "a".into(),
        name: "n".into(),
        version: "1".into(),
    }
}

fn run_ok() -> BuildRun {
    BuildRun {
        status: Some(0),
        success: true,
        timed_out: false,
        stragglers_killed: false,
        duration_ms: 1234,
        outcome: "exit status 0".into(),
        tail: String::new(),
        logs: "L.out and L.err".into(),
        said_manifest_not_found: false,
        file_errors: vec![],
    }
}

fn file(name: &str) -> OutEntry {
    OutEntry {
        name: name.into(),
        is_file: true,
    }
}

/// A build that passes every check.
fn good() -> CandidateBuild {
    CandidateBuild {
        run: Some(run_ok()),
        out_entries: Some(Ok(vec![file("a-n-1.lbpkg")])),
        moved: Some(Ok(MovedArchive {
            path: "packages/c/a-n-1.lbpkg".into(),
            size: 2048,
        })),
        source_changes: Some(Ok(vec![])),
        source_entries: 7,
        ..CandidateBuild::new("c", Path::new("/ev/roots/lbp-build/c/out"), Ok(id()))
    }
}

fn get<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} in {checks:?}"))
}

fn summary(checks: &[Check]) -> Vec<(&str, CheckResult, Option<&str>)> {
    checks
        .iter()
        .map(|c| (c.name.as_str(), c.result, c.consequence_of.as_deref()))
        .collect()
}

#[test]
fn a_good_build_passes_every_check_with_what_it_rests_on() {
    let checks = decide(&good());
    assert_eq!(
        summary(&checks),
        [
            ("manifest-identity", CheckResult::Pass, None),
            ("build-exit", CheckResult::Pass, None),
            ("files-added", CheckResult::Pass, None),
            ("single-archive", CheckResult::Pass, None),
            ("source-untouched", CheckResult::Pass, None),
        ]
    );
    for c in &checks {
        assert!(
            c.observed
                .as_ref()
                .and_then(|o| o.as_object())
                .is_some_and(|m| !m.is_empty()),
            "{}",
            c.name
        );
    }
    assert_eq!(
        get(&checks, "single-archive").detail,
        "the build wrote exactly one archive, a-n-1.lbpkg (2048 bytes), now packages/c/a-n-1.lbpkg"
    );
    assert_eq!(
        get(&checks, "build-exit").detail,
        "`lbp build` exited with status 0 in 1234 ms (output in L.out and L.err)"
    );
    assert_eq!(
        get(&checks, "source-untouched")
            .observed
            .as_deref()
            .cloned(),
        Some(json!({"entries": 7, "changes": []}))
    );
}

#[test]
fn refuses_to_build_an_unsafe_name_and_reports_nothing_else() {
    let mut b = good();
    b.identity =
        Err("manifest.yaml: metadata.name \"../../evil\" is not safe in a file name".into());
    b.unsafe_fields = vec!["metadata.name = \"../../evil\"".into()];
    b.run = None;
    let checks = decide(&b);
    assert_eq!(
        summary(&checks),
        [("manifest-identity", CheckResult::Fail, None)]
    );
    assert!(
        checks[0].detail.contains("The build was not run: the SDK puts metadata.name = \"../../evil\" into the archive's file name"),
        "{}",
        checks[0].detail
    );
}

#[test]
fn refuses_a_build_that_exits_0_without_an_archive_as_a_consequence_of_the_manifest() {
    let mut b = good();
    b.identity = Err("manifest.yaml: metadata.version is a float (1.0)".into());
    b.run.as_mut().unwrap().said_manifest_not_found = true;
    b.out_entries = Some(Ok(vec![]));
    b.moved = None;
    let checks = decide(&b);
    assert_eq!(
        summary(&checks),
        [
            ("manifest-identity", CheckResult::Fail, None),
            ("build-exit", CheckResult::Pass, None),
            ("files-added", CheckResult::Pass, None),
            (
                "single-archive",
                CheckResult::Fail,
                Some("manifest-identity")
            ),
            ("source-untouched", CheckResult::Pass, None),
        ]
    );
    let d = &get(&checks, "single-archive").detail;
    assert!(d.contains("wrote no archive into /ev/roots/lbp-build/c/out; expected one <author>-<name>-<version>.lbpkg"), "{d}");
    assert!(
        d.contains("The build printed \"Plugin manifest not found\"."),
        "{d}"
    );
    assert!(
        d.contains("Manifest diagnosis: manifest.yaml: metadata.version is a float (1.0)."),
        "{d}"
    );
    assert!(
        d.ends_with("fix manifest.yaml so the SDK's manifest model accepts it"),
        "{d}"
    );
}

#[test]
fn refuses_a_build_that_exits_0_without_an_archive_when_the_manifest_reads_fine() {
    let mut b = good();
    b.out_entries = Some(Ok(vec![]));
    b.moved = None;
    let checks = decide(&b);
    let c = get(&checks, "single-archive");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of, None);
    assert!(c.detail.contains("expected a-n-1.lbpkg."), "{}", c.detail);
    assert!(
        !c.detail.contains("Plugin manifest not found"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_a_failed_build_and_reports_the_missing_archive_under_it() {
    let mut b = good();
    let run = b.run.as_mut().unwrap();
    run.status = Some(2);
    run.success = false;
    run.outcome = "exited with status 2".into();
    run.tail = "Traceback: boom".into();
    b.out_entries = Some(Ok(vec![]));
    b.moved = None;
    let checks = decide(&b);
    assert_eq!(
        summary(&checks)[1..4],
        [
            ("build-exit", CheckResult::Fail, None),
            ("files-added", CheckResult::Pass, None),
            ("single-archive", CheckResult::Fail, Some("build-exit")),
        ]
    );
    let d = &get(&checks, "build-exit").detail;
    assert!(d.starts_with("`lbp build` exited with status 2 (expected exit status 0); last output:\nTraceback: boom\n"), "{d}");
    let s = &get(&checks, "single-archive").detail;
    assert!(
        s.ends_with("The build failed before writing it: see the build-exit check for its output"),
        "{s}"
    );
    assert!(!s.contains("manifest model"), "{s}");
}

#[test]
fn refuses_a_timed_out_build() {
    let mut b = good();
    let run = b.run.as_mut().unwrap();
    run.status = None;
    run.success = false;
    run.timed_out = true;
    run.outcome = "timed out and was stopped".into();
    let checks = decide(&b);
    let c = get(&checks, "build-exit");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .starts_with("`lbp build` timed out and was stopped"),
        "{}",
        c.detail
    );
    assert_eq!(c.observed.as_ref().unwrap()["timed_out"], true);
}

#[test]
fn refuses_a_build_that_leaves_processes_behind() {
    let mut b = good();
    b.run.as_mut().unwrap().stragglers_killed = true;
    let checks = decide(&b);
    let c = get(&checks, "build-exit");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("left processes running"), "{}", c.detail);
    // The archive it wrote is judged on its own.
    assert_eq!(get(&checks, "single-archive").result, CheckResult::Pass);
}

#[test]
fn refuses_an_archive_named_after_another_version() {
    let mut b = good();
    b.out_entries = Some(Ok(vec![file("a-n-2.lbpkg")]));
    b.moved = None;
    let checks = decide(&b);
    let c = get(&checks, "single-archive");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(
        c.detail,
        "/ev/roots/lbp-build/c/out holds [\"a-n-2.lbpkg\"]; expected exactly one regular file \"a-n-1.lbpkg\" \
         named after manifest.yaml's author, name and version"
    );
}

#[test]
fn refuses_more_than_one_file_even_if_one_is_right() {
    let mut b = good();
    b.out_entries = Some(Ok(vec![file("a-n-1.lbpkg"), file("extra.txt")]));
    assert_eq!(get(&decide(&b), "single-archive").result, CheckResult::Fail);
}

#[test]
fn refuses_a_directory_with_the_archive_name() {
    let mut b = good();
    b.out_entries = Some(Ok(vec![OutEntry {
        name: "a-n-1.lbpkg".into(),
        is_file: false,
    }]));
    assert_eq!(get(&decide(&b), "single-archive").result, CheckResult::Fail);
    assert!(!is_exactly(
        &[OutEntry {
            name: "a-n-1.lbpkg".into(),
            is_file: false
        }],
        "a-n-1.lbpkg"
    ));
    assert!(is_exactly(&[file("a-n-1.lbpkg")], "a-n-1.lbpkg"));
    assert!(!is_exactly(&[], "a-n-1.lbpkg"));
}

#[test]
fn refuses_an_archive_whose_name_cannot_be_confirmed() {
    let mut b = good();
    b.identity = Err("manifest.yaml: metadata has no author".into());
    b.moved = None;
    let checks = decide(&b);
    let c = get(&checks, "single-archive");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of.as_deref(), Some("manifest-identity"));
    assert!(
        c.detail
            .contains("the archive name cannot be confirmed: fix manifest.yaml"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_an_archive_that_could_not_be_moved() {
    let mut b = good();
    b.moved = Some(Err("cannot move x to y: denied".into()));
    let c = decide(&b)
        .into_iter()
        .find(|c| c.name == "single-archive")
        .unwrap();
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.detail, "cannot move x to y: denied");
}

#[test]
fn refuses_a_build_that_changes_its_source() {
    let mut a = BTreeMap::new();
    a.insert("x".to_string(), "1:1".to_string());
    a.insert("y".to_string(), "2:1".to_string());
    let mut after = a.clone();
    after.insert("y".into(), "3:1".into());
    after.insert("z".into(), "dir".into());
    after.remove("x");
    let changes = tree_changes(&a, &after);
    assert_eq!(changes, ["removed x", "changed y", "added z"]);
    assert!(tree_changes(&a, &a).is_empty());
    let mut b = good();
    b.source_changes = Some(Ok(changes));
    let c = decide(&b)
        .into_iter()
        .find(|c| c.name == "source-untouched")
        .unwrap();
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("removed x, changed y, added z"),
        "{}",
        c.detail
    );
}

#[test]
fn a_build_that_could_not_start_is_one_failure() {
    let mut b = good();
    b.setup_error = Some("cannot create private HOME/TMP under /ev: denied".into());
    b.run = None;
    let checks = decide(&b);
    assert_eq!(
        summary(&checks),
        [
            ("manifest-identity", CheckResult::Pass, None),
            ("build-exit", CheckResult::Fail, None),
        ]
    );
    assert_eq!(
        checks[1].detail,
        "the build could not be run: cannot create private HOME/TMP under /ev: denied"
    );
}

#[test]
fn an_unreadable_source_stops_the_build() {
    let mut b = good();
    b.unreadable_before = Some("x: permission denied".into());
    b.run = None;
    let checks = decide(&b);
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[1].name, "source-untouched");
    assert_eq!(checks[1].result, CheckResult::Fail);
}

#[test]
fn unsafe_names_are_detected_but_floats_are_not_unsafe() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("manifest.yaml");
    std::fs::write(
        &p,
        "metadata:\n  author: a\n  name: ../../evil\n  version: '1'\n",
    )
    .unwrap();
    assert_eq!(
        observe::unsafe_identity_fields(&p),
        ["metadata.name = \"../../evil\""]
    );
    std::fs::write(&p, "metadata:\n  author: a\n  name: x\n  version: 1.0\n").unwrap();
    assert!(observe::unsafe_identity_fields(&p).is_empty());
}

#[test]
fn an_unreadable_identity_without_unsafe_fields_is_built_anyway_and_says_so() {
    let mut b = good();
    b.identity = Err("manifest.yaml: metadata.version is a float (1.0)".into());
    let checks = decide(&b);
    let c = get(&checks, "manifest-identity");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(
        c.detail,
        "manifest.yaml: metadata.version is a float (1.0); the build runs anyway to record what it does"
    );
    assert_eq!(c.observed.as_ref().unwrap()["built"], true);
}

#[test]
fn a_right_archive_after_a_failed_build_passes_as_a_finding_of_its_own() {
    // The build exited non-zero yet wrote the expected archive: build-exit
    // fails; single-archive holds and is nobody's consequence.
    let mut b = good();
    let run = b.run.as_mut().unwrap();
    run.status = Some(1);
    run.success = false;
    run.outcome = "exited with status 1".into();
    let checks = decide(&b);
    let c = get(&checks, "single-archive");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert_eq!(c.consequence_of, None);
    assert_eq!(get(&checks, "build-exit").result, CheckResult::Fail);
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_the_staged_source_or_the_verified_sdk_is_an_error_not_a_pass() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    let e = testing::run(&LbpBuild, &ctx).0.unwrap_err();
    assert!(e.contains("run `stage` first"), "{e}");
    ctx.staged_root = Some(ctx.staging_source());
    let e = testing::run(&LbpBuild, &ctx).0.unwrap_err();
    assert!(e.contains("run `sdk-record` first"), "{e}");
    assert_eq!(LbpBuild.id(), "lbp-build");
}

#[test]
fn a_build_that_left_files_out_fails_files_added_though_it_exited_0() {
    let mut b = good();
    b.run.as_mut().unwrap().file_errors = vec![FileError {
        path: "main.py".into(),
        error: "ZIP does not support timestamps before 1980".into(),
    }];
    b.stamp = Some(super::file_errors::Stamp::Commit {
        id: "c".repeat(40),
        date: "1975-06-01T00:00:00Z".into(),
    });
    let checks = decide(&b);
    let failing: Vec<&str> = checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(failing, ["files-added"]);
}
