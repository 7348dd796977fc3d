//! Counterexamples for `historical-admission`, over observation values.

use super::*;
use crate::evidence::CheckResult;

fn decide_files(files: &[HistoricalObservation], profile: &[HistoricalArchive]) -> Vec<Check> {
    decide(
        &Observation {
            release_dir: "/releases".into(),
            files: files.to_vec(),
        },
        profile,
    )
}

fn entry(sha: &str) -> HistoricalArchive {
    HistoricalArchive {
        name: "ACPAgentRunner 0.1.12".into(),
        sha256: sha.into(),
        reason: "pins b3".into(),
        refusal_contains: "Plugin requires langbot-plugin==0.6.0b3".into(),
    }
}

fn obs(sha: &str, listed: bool, refusal: Option<&str>) -> HistoricalObservation {
    HistoricalObservation {
        file: ReleaseFile {
            name: format!("{}.lbpkg", &sha[..4]),
            sha256: sha.into(),
            size: 10,
        },
        listed: listed.then(|| entry(sha)),
        attempt: listed.then(|| {
            Ok(AdmissionAttempt {
                refusal: refusal.map(String::from),
                kept_requirements: None,
                environment_digest: refusal.is_none().then(|| "e".repeat(64)),
            })
        }),
        comparison: SourceComparison {
            manifest_name: Some("ACPAgentRunner".into()),
            candidate: Some("Runner/acp-agent-runner".into()),
            same: vec!["main.py".into()],
            differing: vec!["pkg/daemon_relay.py".into()],
            ..SourceComparison::default()
        },
    }
}

const B3: &str = "DependencyEnvironmentPreparationError: Plugin requires langbot-plugin==0.6.0b3, but the Runtime provides langbot-plugin==0.6.0b5";

fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} in {checks:?}"))
}

#[test]
fn a_listed_archive_refused_for_the_listed_reason_passes() {
    let a = "a".repeat(64);
    let checks = decide_files(&[obs(&a, true, Some(B3))], &[entry(&a)]);
    let refused = find(&checks, "aaaa.lbpkg/refused");
    assert_eq!(refused.result, CheckResult::Pass, "{}", refused.detail);
    assert!(
        refused.detail.contains("before any install"),
        "{}",
        refused.detail
    );
    let compared = find(&checks, "aaaa.lbpkg/compared-with-source");
    assert_eq!(compared.result, CheckResult::Pass);
    assert!(
        compared.detail.contains("differing: `pkg/daemon_relay.py`"),
        "{}",
        compared.detail
    );
    assert_eq!(find(&checks, "listed-archives").result, CheckResult::Pass);
}

#[test]
fn an_admitted_archive_fails() {
    let a = "a".repeat(64);
    let checks = decide_files(&[obs(&a, true, None)], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/refused");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("found it admitted"), "{}", c.detail);
}

#[test]
fn a_refusal_for_another_reason_fails_naming_both() {
    let a = "a".repeat(64);
    let other = "PluginArtifactError: archive has too many entries";
    let checks = decide_files(&[obs(&a, true, Some(other))], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/refused");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(other) && c.detail.contains("Plugin requires langbot-plugin==0.6.0b3"),
        "{}",
        c.detail
    );
}

#[test]
fn a_probe_that_did_not_report_is_not_a_refusal() {
    let a = "a".repeat(64);
    let mut o = obs(&a, true, None);
    o.attempt = Some(Err("exit status 1".into()));
    let checks = decide_files(&[o], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/refused");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.starts_with("not observed"), "{}", c.detail);
}

#[test]
fn an_unlisted_archive_is_reported_not_trusted_and_does_not_count() {
    let a = "a".repeat(64);
    let b = "b".repeat(64);
    let checks = decide_files(&[obs(&b, false, None)], &[entry(&a)]);
    let c = find(&checks, "bbbb.lbpkg/unlisted");
    assert_eq!(c.result, CheckResult::Warn);
    assert!(
        c.detail.contains(&b) && c.detail.contains("not trusted"),
        "{}",
        c.detail
    );
    // Only unlisted files: nothing the profile lists was supplied.
    let l = find(&checks, "listed-archives");
    assert_eq!(l.result, CheckResult::Fail, "{}", l.detail);
    assert!(l.detail.contains(&a), "{}", l.detail);
}

#[test]
fn a_listed_archive_not_supplied_is_a_warning() {
    let a = "a".repeat(64);
    let c2 = "c".repeat(64);
    let checks = decide_files(&[obs(&a, true, Some(B3))], &[entry(&a), entry(&c2)]);
    let l = find(&checks, "listed-archives");
    assert_eq!(l.result, CheckResult::Warn);
    assert!(l.detail.contains(&c2), "{}", l.detail);
}

#[test]
fn comparison_sorts_files_into_same_differing_and_one_sided() {
    let m: BTreeMap<String, String> = [
        ("main.py", "1"),
        ("pkg/x.py", "2"),
        ("old.py", "3"),
        ("requirements.txt", "4"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let s: BTreeMap<String, String> = [
        ("main.py", "1"),
        ("pkg/x.py", "9"),
        ("new.py", "5"),
        ("requirements.txt", "7"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let c = compare_files(&m, &s);
    assert_eq!(c.same, ["main.py"]);
    assert_eq!(c.differing, ["pkg/x.py", "requirements.txt"]);
    assert_eq!(c.only_in_archive, ["old.py"]);
    assert_eq!(c.only_in_source, ["new.py"]);
}

#[test]
fn compared_kinds_are_python_and_requirements_files() {
    for p in [
        "main.py",
        "pkg/a.py",
        "requirements.txt",
        "requirements-dev.txt",
    ] {
        assert!(compared_kind(p), "{p}");
    }
    for p in [
        "manifest.yaml",
        "README.md",
        "pkg/LICENSE-sdk.txt",
        "notes.txt",
        "a.pyc",
    ] {
        assert!(!compared_kind(p), "{p}");
    }
}

// Clause by clause: "each supplied historical archive (its sha256 listed) is
// refused by the SDK's own admission for the listed reason (the refusal
// names the listed text); an admitted archive fails; an archive whose sha256
// is not listed is reported, not run and not trusted; every packaged Python
// and requirements file is compared with the source under review and the
// differing ones are recorded."

#[test]
fn every_pass_carries_what_it_rests_on() {
    let a = "a".repeat(64);
    let checks = decide_files(&[obs(&a, true, Some(B3))], &[entry(&a)]);
    assert_eq!(checks.len(), 3);
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
        let o = c.observed.as_ref().unwrap();
        assert!(o.as_object().is_some_and(|m| !m.is_empty()), "{}", c.name);
    }
    assert_eq!(
        find(&checks, "listed-archives")
            .observed
            .as_deref()
            .cloned(),
        Some(json!({"release_dir": "/releases", "supplied": [a]}))
    );
    assert_eq!(
        find(&checks, "aaaa.lbpkg/refused")
            .observed
            .as_ref()
            .unwrap()["attempt"]["refusal"],
        B3
    );
}

#[test]
fn a_refusal_in_the_dependency_installer_is_named_as_such() {
    let a = "a".repeat(64);
    let mut o = obs(&a, true, Some(B3));
    o.attempt = Some(Ok(AdmissionAttempt {
        refusal: Some(B3.into()),
        kept_requirements: Some(vec!["langbot-plugin==0.6.0b3".into()]),
        environment_digest: None,
    }));
    let checks = decide_files(&[o], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/refused");
    assert_eq!(c.result, CheckResult::Pass);
    assert!(
        c.detail.contains("in its dependency installer"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("before any install"), "{}", c.detail);
}

#[test]
fn refuses_a_probe_that_reported_neither_a_refusal_nor_an_environment() {
    let a = "a".repeat(64);
    let mut o = obs(&a, true, None);
    o.attempt = Some(Ok(AdmissionAttempt {
        refusal: None,
        kept_requirements: None,
        environment_digest: None,
    }));
    // Even a profile expecting an empty refusal text cannot read silence as one.
    let mut e = entry(&a);
    e.refusal_contains = String::new();
    let checks = decide_files(&[o], &[e]);
    let c = find(&checks, "aaaa.lbpkg/refused");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.starts_with(
            "not observed: the SDK's admission of ACPAgentRunner 0.1.12 (aaaa.lbpkg, sha256 "
        ),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("reported neither a refusal nor a prepared environment"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_a_refusal_whose_text_differs_only_in_case() {
    let a = "a".repeat(64);
    let checks = decide_files(&[obs(&a, true, Some(&B3.to_lowercase()))], &[entry(&a)]);
    assert_eq!(
        find(&checks, "aaaa.lbpkg/refused").result,
        CheckResult::Fail
    );
}

#[test]
fn an_admitted_archive_names_the_prepared_environment_and_the_advice() {
    let a = "a".repeat(64);
    let checks = decide_files(&[obs(&a, true, None)], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/refused");
    assert!(
        c.detail.contains(&format!(
            "the dependency environment {} was prepared",
            "e".repeat(64)
        )),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("check that the listed sha256 and reason are right"),
        "{}",
        c.detail
    );
}

#[test]
fn a_listed_archive_never_run_is_not_observed() {
    let a = "a".repeat(64);
    let mut o = obs(&a, true, None);
    o.attempt = None;
    let checks = decide_files(&[o], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/refused");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(
        c.detail,
        format!("not observed: ACPAgentRunner 0.1.12 (aaaa.lbpkg, sha256 {a}) was not run through admission")
    );
}

#[test]
fn an_unlisted_archive_gets_no_admission_or_comparison_check() {
    let a = "a".repeat(64);
    let b = "b".repeat(64);
    let checks = decide_files(
        &[obs(&a, true, Some(B3)), obs(&b, false, None)],
        &[entry(&a)],
    );
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "aaaa.lbpkg/refused",
            "aaaa.lbpkg/compared-with-source",
            "bbbb.lbpkg/unlisted",
            "listed-archives"
        ]
    );
    assert_eq!(find(&checks, "listed-archives").result, CheckResult::Pass);
}

#[test]
fn a_comparison_that_could_not_be_made_is_a_warning_naming_why() {
    let a = "a".repeat(64);
    let mut o = obs(&a, true, Some(B3));
    o.comparison = SourceComparison {
        manifest_name: Some("Other".into()),
        error: Some("no candidate of the profile has a manifest named \"Other\"".into()),
        ..SourceComparison::default()
    };
    let checks = decide_files(&[o], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/compared-with-source");
    assert_eq!(c.result, CheckResult::Warn);
    assert_eq!(
        c.detail,
        "ACPAgentRunner 0.1.12 (aaaa.lbpkg) was not compared with the source under review: no candidate \
         of the profile has a manifest named \"Other\""
    );
}

#[test]
fn the_comparison_records_every_side() {
    let a = "a".repeat(64);
    let mut o = obs(&a, true, Some(B3));
    o.comparison.only_in_archive = vec!["old.py".into()];
    o.comparison.only_in_source = (0..22).map(|i| format!("n{i}.py")).collect();
    let checks = decide_files(&[o], &[entry(&a)]);
    let c = find(&checks, "aaaa.lbpkg/compared-with-source");
    assert!(
        c.detail.contains("against Runner/acp-agent-runner (manifest name \"ACPAgentRunner\"): 1 packaged Python/requirements file(s) identical, differing: `pkg/daemon_relay.py`; only in the archive: `old.py`; only in the source: `n0.py`"),
        "{}",
        c.detail
    );
    assert!(c.detail.ends_with(" and 2 more"), "{}", c.detail);
    assert!(!c.detail.contains("`n20.py`"), "{}", c.detail);
    assert_eq!(listed(&[]), "none");
}

#[test]
fn a_release_dir_without_a_profile_list_fails_and_runs_nothing() {
    let checks = decide(
        &Observation {
            release_dir: "/releases".into(),
            files: vec![],
        },
        &[],
    );
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].name, "listed-archives");
    assert_eq!(checks[0].result, CheckResult::Fail);
    assert!(
        checks[0].detail.starts_with(
            "--release-dir /releases was given, but the profile lists no historical archive"
        ),
        "{}",
        checks[0].detail
    );
}

#[test]
fn an_empty_release_dir_fails_naming_the_listed_archives() {
    let a = "a".repeat(64);
    let checks = decide_files(&[], &[entry(&a)]);
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].result, CheckResult::Fail);
    assert!(
        checks[0]
            .detail
            .contains(&format!("ACPAgentRunner 0.1.12 sha256 {a}")),
        "{}",
        checks[0].detail
    );
    assert!(
        checks[0].detail.contains("(files seen: none)"),
        "{}",
        checks[0].detail
    );
}

#[test]
fn exactly_as_many_paths_as_are_listed_need_no_more() {
    let paths: Vec<String> = (0..LISTED).map(|i| format!("p{i}.py")).collect();
    let text = listed(&paths);
    assert!(!text.contains("more"), "{text}");
    assert!(text.ends_with("`p19.py`"), "{text}");
    let mut one_more = paths.clone();
    one_more.push("last.py".into());
    assert!(listed(&one_more).ends_with("`p19.py` and 1 more"));
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_a_release_directory_is_not_supplied_not_a_pass() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let ctx = testing::ctx(evidence.path());
    assert_eq!(
        testing::run(&HistoricalAdmission, &ctx).0.unwrap_err(),
        NOT_SUPPLIED
    );
    assert_eq!(HistoricalAdmission.id(), "historical-admission");
    assert_eq!(
        HistoricalAdmission.not_applicable(&ctx).as_deref(),
        Some(NOT_SUPPLIED),
        "skipped, saying why, when no release directory is given"
    );
    let mut given = ctx.clone();
    given.release_dir = Some(evidence.path().to_path_buf());
    assert_eq!(HistoricalAdmission.not_applicable(&given), None);
}
