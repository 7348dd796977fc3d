//! Unit tests of the `admission` gate: the harness's reading of
//! `requirements.txt` and trees, and counterexamples to [`decide`], one per
//! way the gate could be fooled (clauses of the catalogue's `proves`).

use super::observe::{python_strip, ProbeArtifact, ProbeReport, SdkLine, SdkVerdict};
use super::*;
use crate::evidence::CheckResult;
use pep440_rs::Version;
use pep508_rs::MarkerEnvironment;
use serde_json::json;
use std::str::FromStr;

fn markers() -> MarkerEnvironment {
    serde_json::from_value(json!({
        "implementation_name": "cpython",
        "implementation_version": "3.11.7",
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_release": "6.0",
        "platform_system": "Linux",
        "platform_version": "#1",
        "python_full_version": "3.11.7",
        "platform_python_implementation": "CPython",
        "python_version": "3.11",
        "sys_platform": "linux"
    }))
    .unwrap()
}

fn kinds(text: &str, installed: &str) -> Vec<(usize, LineKind)> {
    analyse_requirements(
        text.as_bytes(),
        &Version::from_str(installed).unwrap(),
        &markers(),
    )
    .unwrap()
    .into_iter()
    .map(|l| (l.number, l.kind))
    .collect()
}

#[test]
fn exact_pin_of_the_installed_prerelease_is_satisfied() {
    assert_eq!(
        kinds("langbot-plugin==0.6.0b5\n", "0.6.0b5"),
        [(1, LineKind::Sdk(RequirementDecision::Satisfied))]
    );
}

#[test]
fn b3_pin_under_b5_is_not_satisfied() {
    assert_eq!(
        kinds("# pinned\n\nlangbot-plugin==0.6.0b3\n", "0.6.0b5"),
        [(3, LineKind::Sdk(RequirementDecision::NotSatisfied))]
    );
}

#[test]
fn ranges_admit_prereleases_as_the_sdk_does() {
    // `>=0.6.0b1,<0.7` would exclude 0.6.0b5 under default pre-release
    // rules; the SDK passes prereleases=True, and so must we.
    assert_eq!(
        kinds("LangBot_Plugin >=0.6.0b1, <0.7", "0.6.0b5"),
        [(1, LineKind::Sdk(RequirementDecision::Satisfied))]
    );
    assert_eq!(
        kinds("langbot.plugin>=0.6.0", "0.6.0b5"),
        [(1, LineKind::Sdk(RequirementDecision::NotSatisfied))]
    );
}

#[test]
fn markers_urls_options_and_others_are_classified() {
    let got = kinds(
        "langbot-plugin==0.5.0; python_version < '3.0'\n\
         langbot-plugin @ https://example.invalid/sdk.whl\n\
         --index-url https://example.invalid/simple\n\
         -e .\n\
         requests>=2\n\
         not a requirement !!\n",
        "0.6.0b5",
    );
    assert_eq!(
        got[0],
        (1, LineKind::Sdk(RequirementDecision::MarkerExcludes))
    );
    assert_eq!(got[1], (2, LineKind::Sdk(RequirementDecision::DirectUrl)));
    assert_eq!(got[2], (3, LineKind::PipOption));
    assert_eq!(got[3], (4, LineKind::PipOption));
    assert_eq!(got[4], (5, LineKind::Other));
    assert!(matches!(got[5], (6, LineKind::Invalid(_))));
}

#[test]
fn lines_are_split_and_stripped_as_python_does() {
    assert_eq!(
        python_splitlines("a\r\nb\rc\x0bd\u{2028}e\n"),
        ["a", "b", "c", "d", "e"]
    );
    assert_eq!(python_splitlines("a\n\nb"), ["a", "", "b"]);
    assert_eq!(python_strip("\x1c pkg \t"), "pkg");
    let got = kinds("\u{feff}x\r\n  \r\n\x1frequests\x1f\n", "1.0");
    // U+FEFF is not whitespace to Python either: line 1 is invalid.
    assert!(matches!(got[0], (1, LineKind::Invalid(_))));
    assert_eq!(got[1], (3, LineKind::Other));
}

#[test]
fn non_utf8_requirements_are_refused() {
    let err = analyse_requirements(
        b"langbot-plugin==0.6.0b5\n\xff\n",
        &Version::from_str("0.6.0b5").unwrap(),
        &markers(),
    )
    .unwrap_err();
    assert!(err.contains("not UTF-8"), "{err}");
}

#[test]
fn trees_are_compared_by_path_and_sha256() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for d in [a.path(), b.path()] {
        std::fs::create_dir_all(d.join("pkg")).unwrap();
        std::fs::write(d.join("pkg/same.py"), b"same").unwrap();
    }
    std::fs::write(a.path().join("pkg/changed.py"), b"one").unwrap();
    std::fs::write(b.path().join("pkg/changed.py"), b"two").unwrap();
    std::fs::write(a.path().join("only-a.txt"), b"").unwrap();
    std::fs::write(b.path().join("only-b.txt"), b"").unwrap();
    let d = compare_trees(a.path(), b.path()).unwrap();
    assert_eq!(d.files, 4);
    assert_eq!(d.only_in_first, ["only-a.txt"]);
    assert_eq!(d.only_in_second, ["only-b.txt"]);
    assert_eq!(d.differing, ["pkg/changed.py"]);
    std::fs::remove_file(a.path().join("only-a.txt")).unwrap();
    std::fs::remove_file(b.path().join("only-b.txt")).unwrap();
    std::fs::write(b.path().join("pkg/changed.py"), b"one").unwrap();
    assert!(compare_trees(a.path(), b.path()).unwrap().is_empty());
}

// ---- decision counterexamples ----

const SHA: &str = "d770754e2b90977aa2c4f4f576ae8f3acbdc61f9aa7d9ebd25d2bb6fe8f305ab";
const ROOT: &str = "/ev/roots/admission/codex-agent/data/artifacts/sha256/d770754e2b90977aa2c4f4f576ae8f3acbdc61f9aa7d9ebd25d2bb6fe8f305ab";

fn accepted_line(number: usize, text: &str, kept: &[&str]) -> SdkLine {
    SdkLine {
        number,
        text: text.into(),
        accepted: true,
        refusal: false,
        kept: kept.iter().map(|k| k.to_string()).collect(),
        error: None,
    }
}

fn refused_line(number: usize, text: &str, error: &str) -> SdkLine {
    SdkLine {
        number,
        text: text.into(),
        accepted: false,
        refusal: true,
        kept: vec![],
        error: Some(error.into()),
    }
}

fn verdict(accepted: bool, kept: &[&str], error: Option<&str>) -> SdkVerdict {
    SdkVerdict {
        accepted,
        refusal: !accepted,
        kept: kept.iter().map(|k| k.to_string()).collect(),
        digest: accepted.then(|| "ef".repeat(32)),
        error: error.map(str::to_string),
    }
}

/// An admitted candidate whose requirements are the SDK pin and `six`.
fn good() -> Observation {
    let text = "langbot-plugin==0.6.0b5\nsix==1.16.0\n";
    Observation {
        folder: "codex-agent".into(),
        archive: "packages/codex-agent/a.lbpkg".into(),
        archive_path: "/ev/packages/codex-agent/a.lbpkg".into(),
        archive_sha256: SHA.into(),
        extracted: "extracted/codex-agent".into(),
        sdk_version: "0.6.0b5".into(),
        probe_error: None,
        report: Some(ProbeReport {
            installed_sdk_version: "0.6.0b5".into(),
            marker_environment: json!({}),
            artifact: Some(ProbeArtifact {
                digest: SHA.into(),
                root_path: ROOT.into(),
                code_path: format!("{ROOT}/code"),
                marker: SHA.into(),
                plugin_author: "acme".into(),
                plugin_name: "codex-agent".into(),
                plugin_version: "0.1.0".into(),
            }),
            artifact_error: None,
            artifact_requirements: Some(verdict(true, &["six==1.16.0"], None)),
            file_requirements: verdict(true, &["six==1.16.0"], None),
            lines: vec![
                accepted_line(1, "langbot-plugin==0.6.0b5", &[]),
                accepted_line(2, "six==1.16.0", &["six==1.16.0"]),
            ],
        }),
        store: Some(StoreObservation {
            expected_root: ROOT.into(),
            expected_code: format!("{ROOT}/code"),
            code_dir: "roots/admission/codex-agent/data/artifacts/sha256/x/code".into(),
            marker_file: "roots/admission/codex-agent/data/artifacts/sha256/x/.verified-sha256"
                .into(),
            marker: Some(SHA.into()),
            marker_error: None,
            tree: Some(TreeDifferences {
                files: 4,
                ..TreeDifferences::default()
            }),
            tree_error: None,
        }),
        requirements: RequirementsObservation {
            file: "extracted/codex-agent/requirements.txt".into(),
            present: true,
            unreadable: None,
            not_utf8: None,
            lines: analyse_requirements(
                text.as_bytes(),
                &Version::from_str("0.6.0b5").unwrap(),
                &markers(),
            )
            .unwrap(),
        },
    }
}

/// Replaces the requirements with `text`, read by the harness, and the SDK's
/// per-line reading with `sdk` (the whole-file verdict with `file`).
fn with_requirements(obs: &mut Observation, text: &str, sdk: Vec<SdkLine>, file: SdkVerdict) {
    obs.requirements.lines = analyse_requirements(
        text.as_bytes(),
        &Version::from_str("0.6.0b5").unwrap(),
        &markers(),
    )
    .unwrap();
    let report = obs.report.as_mut().unwrap();
    report.lines = sdk;
    report.artifact_requirements = Some(file.clone());
    report.file_requirements = file;
}

/// The built-in coding-runners profile's policy: a pin is required.
const PIN_REQUIRED: AdmissionOptions = AdmissionOptions {
    require_sdk_pin: true,
};

/// A profile without `[admission]`: the SDK's own admission.
const SDK_POLICY: AdmissionOptions = AdmissionOptions {
    require_sdk_pin: false,
};

fn named<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks:#?}"))
}

fn failing(obs: &Observation, name: &str, needles: &[&str]) -> Check {
    let checks = decide(obs, PIN_REQUIRED);
    let c = named(&checks, name).clone();
    assert_eq!(c.result, CheckResult::Fail, "{name}: {}", c.detail);
    for n in needles {
        assert!(c.detail.contains(n), "{name}: {n:?} not in {}", c.detail);
    }
    c
}

#[test]
fn an_admitted_archive_passes_every_check_and_each_pass_carries_observed_values() {
    let checks = decide(&good(), PIN_REQUIRED);
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "artifact-store",
            "marker",
            "extraction-agrees",
            "sdk-requirement",
            "requirement-lines"
        ]
    );
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
        let observed = c.observed.as_ref().expect("a pass carries observed");
        assert!(
            observed.as_object().is_some_and(|o| !o.is_empty()),
            "{}",
            c.name
        );
        assert_eq!(c.consequence_of, None);
    }
    assert_eq!(
        named(&checks, "artifact-store").observed.as_ref().unwrap()["digest"],
        SHA
    );
    assert!(named(&checks, "extraction-agrees")
        .detail
        .contains("same 4 files"));
    assert!(named(&checks, "requirement-lines")
        .detail
        .contains("2 requirement line(s)"));
    let r = record(&good()).unwrap();
    assert!(r.accepted);
    assert_eq!(r.marker.as_deref(), Some(SHA));
    assert_eq!(r.sdk_requirements.len(), 1);
    assert_eq!(r.sdk_requirements[0].line, 1);
    assert_eq!(r.sdk_requirements[0].sdk_decision, "accepted");
}

#[test]
fn refuses_when_the_artifact_store_refuses_the_exact_bytes() {
    let mut obs = good();
    let report = obs.report.as_mut().unwrap();
    report.artifact = None;
    report.artifact_error = Some("ValueError: unsafe archive path '../x'".into());
    obs.store = None;
    let c = failing(
        &obs,
        "artifact-store",
        &[
            "found it refused them: ValueError: unsafe archive path '../x'",
            "fix what the SDK names in the plugin source and rebuild",
        ],
    );
    assert_eq!(
        c.observed.unwrap()["sdk_error"],
        "ValueError: unsafe archive path '../x'"
    );
    let checks = decide(&obs, PIN_REQUIRED);
    // No marker or extraction to check: nothing was admitted.
    assert!(checks
        .iter()
        .all(|c| c.name != "marker" && c.name != "extraction-agrees"));
    assert!(!record(&obs).unwrap().accepted);
}

#[test]
fn a_probe_that_did_not_report_is_not_observed_never_refused() {
    let mut obs = good();
    obs.report = None;
    obs.probe_error = Some("exit status 2: No such file".into());
    let checks = decide(&obs, PIN_REQUIRED);
    assert_eq!(checks.len(), 1);
    let c = &checks[0];
    assert_eq!(
        (c.name.as_str(), c.result),
        ("artifact-store", CheckResult::Fail)
    );
    assert!(c.detail.starts_with("not observed: the admission probe did not report for /ev/packages/codex-agent/a.lbpkg: exit status 2"), "{}", c.detail);
    assert!(!c.detail.contains("refused"), "{}", c.detail);
    assert!(record(&obs).is_none());
}

#[test]
fn refuses_when_the_marker_does_not_hold_the_archives_sha256() {
    let mut obs = good();
    obs.store.as_mut().unwrap().marker = Some("00".repeat(32));
    failing(
        &obs,
        "marker",
        &["found marker \"0000", "treat the archive as unadmitted"],
    );

    let mut obs = good();
    obs.report
        .as_mut()
        .unwrap()
        .artifact
        .as_mut()
        .unwrap()
        .marker = "11".repeat(32);
    failing(&obs, "marker", &["SDK-reported marker \"1111"]);

    let mut obs = good();
    obs.report
        .as_mut()
        .unwrap()
        .artifact
        .as_mut()
        .unwrap()
        .digest = "22".repeat(32);
    failing(&obs, "marker", &[&format!("digest {}", "22".repeat(32))]);

    let mut obs = good();
    obs.report
        .as_mut()
        .unwrap()
        .artifact
        .as_mut()
        .unwrap()
        .root_path = "/elsewhere".into();
    failing(&obs, "marker", &["root /elsewhere"]);

    let mut obs = good();
    let store = obs.store.as_mut().unwrap();
    store.marker = None;
    store.marker_error = Some("No such file or directory (os error 2)".into());
    failing(
        &obs,
        "marker",
        &[
            "found it unreadable (No such file or directory",
            "read the probe log",
        ],
    );
}

#[test]
fn refuses_when_the_sdks_extraction_differs_from_the_harnesss() {
    for (set, needle) in [
        (0, "only in the artifact store: `pkg/extra.py`"),
        (1, "only in extracted/codex-agent: `pkg/extra.py`"),
        (2, "different bytes: `pkg/extra.py`"),
    ] {
        let mut obs = good();
        let tree = obs.store.as_mut().unwrap().tree.as_mut().unwrap();
        let list = match set {
            0 => &mut tree.only_in_first,
            1 => &mut tree.only_in_second,
            _ => &mut tree.differing,
        };
        list.push("pkg/extra.py".into());
        failing(
            &obs,
            "extraction-agrees",
            &[needle, "report the extractor at fault"],
        );
    }
    let mut obs = good();
    obs.store.as_mut().unwrap().tree.as_mut().unwrap().differing =
        (0..22).map(|i| format!("f{i}")).collect();
    let c = failing(&obs, "extraction-agrees", &["`f19` and 2 more"]);
    assert!(!c.detail.contains("`f20`"), "{}", c.detail);
    let mut obs = good();
    obs.store.as_mut().unwrap().tree.as_mut().unwrap().differing =
        (0..20).map(|i| format!("f{i}")).collect();
    let c = failing(&obs, "extraction-agrees", &["`f19`"]);
    assert!(!c.detail.contains("more"), "{}", c.detail);
}

#[test]
fn refuses_when_the_sdks_code_directory_is_not_where_its_layout_puts_it() {
    let mut obs = good();
    obs.report
        .as_mut()
        .unwrap()
        .artifact
        .as_mut()
        .unwrap()
        .code_path = "/tmp/code".into();
    failing(
        &obs,
        "extraction-agrees",
        &["found it reported at /tmp/code", "re-check SDK-FACTS.md"],
    );
    let mut obs = good();
    let store = obs.store.as_mut().unwrap();
    store.tree = None;
    store.tree_error = Some("cannot walk /x: denied".into());
    let c = failing(
        &obs,
        "extraction-agrees",
        &["not observed: cannot walk /x: denied"],
    );
    assert_eq!(c.consequence_of, None);
}

#[test]
fn refuses_a_pin_the_installed_sdk_does_not_satisfy_with_porting_advice() {
    let mut obs = good();
    with_requirements(
        &mut obs,
        "langbot-plugin==0.6.0b3\n",
        vec![refused_line(
            1,
            "langbot-plugin==0.6.0b3",
            "DependencyEnvironmentPreparationError: requires 0.6.0b3",
        )],
        SdkVerdict {
            refusal: true,
            ..verdict(
                false,
                &[],
                Some("DependencyEnvironmentPreparationError: requires 0.6.0b3"),
            )
        },
    );
    let c = failing(
        &obs,
        "sdk-requirement",
        &[
            "line 1 `langbot-plugin==0.6.0b3` is not satisfied by the installed langbot-plugin 0.6.0b5",
            "the SDK refuses it too",
            "A pin-only change would hide the admission failure: port and re-test",
        ],
    );
    assert_eq!(c.observed.unwrap()["lines"][0]["decision"], "not-satisfied");
    // The line is the pin's finding alone: requirement-lines does not repeat it.
    let lines = named(&decide(&obs, PIN_REQUIRED), "requirement-lines").clone();
    assert_eq!(lines.result, CheckResult::Pass, "{}", lines.detail);
}

#[test]
fn refuses_the_sdk_named_by_direct_url() {
    let mut obs = good();
    let url = "langbot-plugin @ https://example.invalid/sdk.whl";
    with_requirements(
        &mut obs,
        &format!("{url}\n"),
        vec![refused_line(
            1,
            url,
            "DependencyEnvironmentPreparationError: direct URL",
        )],
        verdict(
            false,
            &[],
            Some("DependencyEnvironmentPreparationError: direct URL"),
        ),
    );
    failing(
        &obs,
        "sdk-requirement",
        &[
            "names the runtime-provided SDK by direct URL",
            "pin a version instead",
        ],
    );
}

#[test]
fn refuses_requirements_without_an_sdk_pin() {
    let mut obs = good();
    with_requirements(
        &mut obs,
        "six==1.16.0\n",
        vec![accepted_line(1, "six==1.16.0", &["six==1.16.0"])],
        verdict(true, &["six==1.16.0"], None),
    );
    failing(
        &obs,
        "sdk-requirement",
        &[
            "found none",
            "add `langbot-plugin==<version>`",
            "[admission] require_sdk_pin",
        ],
    );
    // An absent file is read as empty: no pin either.
    let mut obs = good();
    with_requirements(&mut obs, "", vec![], verdict(true, &[], None));
    obs.requirements.present = false;
    failing(&obs, "sdk-requirement", &["found none"]);
    let lines = named(&decide(&obs, PIN_REQUIRED), "requirement-lines").clone();
    assert_eq!(lines.result, CheckResult::Pass);
    assert!(lines.detail.contains("is absent"), "{}", lines.detail);
}

#[test]
fn without_a_pin_policy_a_missing_pin_or_file_passes_as_the_sdk_admits_it_and_says_so() {
    let mut obs = good();
    with_requirements(
        &mut obs,
        "six==1.16.0\n",
        vec![accepted_line(1, "six==1.16.0", &["six==1.16.0"])],
        verdict(true, &["six==1.16.0"], None),
    );
    let checks = decide(&obs, SDK_POLICY);
    let c = named(&checks, "sdk-requirement");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail.contains("no `langbot-plugin` requirement")
            && c.detail.contains("the SDK admits that")
            && c.detail.contains("require_sdk_pin"),
        "{}",
        c.detail
    );
    assert!(
        checks.iter().all(|c| c.result == CheckResult::Pass),
        "{checks:#?}"
    );
    // No requirements.txt at all (EBAEventProbe's case): admitted, said so.
    let mut obs = good();
    with_requirements(&mut obs, "", vec![], verdict(true, &[], None));
    obs.requirements.present = false;
    let c = named(&decide(&obs, SDK_POLICY), "sdk-requirement").clone();
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(c.detail.contains("(no requirements.txt)"), "{}", c.detail);
    // The policy never relaxes a pin that is there and wrong.
    let mut obs = good();
    let text = "langbot-plugin==0.5.0";
    with_requirements(
        &mut obs,
        text,
        vec![refused_line(
            1,
            text,
            "DependencyEnvironmentPreparationError: langbot-plugin==0.5.0 is not satisfied",
        )],
        verdict(
            false,
            &[],
            Some("DependencyEnvironmentPreparationError: langbot-plugin==0.5.0 is not satisfied"),
        ),
    );
    let c = named(&decide(&obs, SDK_POLICY), "sdk-requirement").clone();
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
}

#[test]
fn a_marker_excluded_pin_passes_only_when_the_sdk_agrees() {
    let mut obs = good();
    let text = "langbot-plugin==0.5.0; python_version < '3.0'";
    with_requirements(
        &mut obs,
        text,
        vec![accepted_line(1, text, &[])],
        verdict(true, &[], None),
    );
    // No applicable pin is still a pin line: accepted as not applicable.
    let c = named(&decide(&obs, PIN_REQUIRED), "sdk-requirement").clone();
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(c.detail.contains("does not apply here"), "{}", c.detail);
}

#[test]
fn refuses_when_the_harness_and_the_sdk_disagree_on_the_pin() {
    // The SDK accepts a pin the harness finds unsatisfied.
    let mut obs = good();
    with_requirements(
        &mut obs,
        "langbot-plugin==0.6.0b3\n",
        vec![accepted_line(1, "langbot-plugin==0.6.0b3", &[])],
        verdict(true, &[], None),
    );
    failing(
        &obs,
        "sdk-requirement",
        &[
            "the harness decides not satisfied",
            "but the SDK accepted it",
            "report both",
        ],
    );
    // The SDK keeps the pin for the installer.
    let mut obs = good();
    obs.report.as_mut().unwrap().lines[0].kept = vec!["langbot-plugin==0.6.0b5".into()];
    failing(
        &obs,
        "sdk-requirement",
        &["but the SDK kept it for the installer"],
    );
    // The SDK's check crashed: that is no decision, not agreement.
    let mut obs = good();
    let line = &mut obs.report.as_mut().unwrap().lines[0];
    line.accepted = false;
    line.error = Some("UndefinedComparison: x".into());
    failing(
        &obs,
        "sdk-requirement",
        &["did not decide: its check raised UndefinedComparison"],
    );
}

#[test]
fn refuses_when_the_sdk_judged_another_sdk_version() {
    let mut obs = good();
    obs.report.as_mut().unwrap().installed_sdk_version = "0.7.0".into();
    failing(
        &obs,
        "sdk-requirement",
        &[
            "compares against langbot-plugin 0.7.0",
            "sdk-record recorded 0.6.0b5",
        ],
    );
}

#[test]
fn refuses_pip_options_and_invalid_requirement_lines() {
    let mut obs = good();
    let text = "langbot-plugin==0.6.0b5\n--index-url https://example.invalid/simple\nnot a requirement !!\n";
    with_requirements(
        &mut obs,
        text,
        vec![
            accepted_line(1, "langbot-plugin==0.6.0b5", &[]),
            refused_line(
                2,
                "--index-url https://example.invalid/simple",
                "DependencyEnvironmentPreparationError: options",
            ),
            refused_line(
                3,
                "not a requirement !!",
                "DependencyEnvironmentPreparationError: invalid",
            ),
        ],
        SdkVerdict {
            refusal: true,
            ..verdict(
                false,
                &[],
                Some("DependencyEnvironmentPreparationError: options"),
            )
        },
    );
    let c = failing(
        &obs,
        "requirement-lines",
        &[
            "line 2 `--index-url https://example.invalid/simple` is a pip option",
            "remove it (package indexes and install options are host configuration",
            "line 3 `not a requirement !!` is not a PEP 508 requirement",
            "correct it",
        ],
    );
    assert_eq!(c.consequence_of, None);
    assert!(!c.detail.contains("as a whole"), "{}", c.detail);
    assert_eq!(
        named(&decide(&obs, PIN_REQUIRED), "sdk-requirement").result,
        CheckResult::Pass
    );
}

#[test]
fn refuses_when_the_sdk_reads_a_line_otherwise_than_the_harness() {
    // The SDK refuses a requirement the harness leaves for the installer.
    let mut obs = good();
    obs.report.as_mut().unwrap().lines[1] = refused_line(
        2,
        "six==1.16.0",
        "DependencyEnvironmentPreparationError: no",
    );
    failing(
        &obs,
        "requirement-lines",
        &[
            "the harness reads it as a requirement for the installer, but the SDK refused it",
            "report it",
        ],
    );
    // The SDK drops a requirement the harness would keep.
    let mut obs = good();
    obs.report.as_mut().unwrap().lines[1].kept.clear();
    failing(
        &obs,
        "requirement-lines",
        &["but the SDK accepted it and dropped it"],
    );
}

#[test]
fn refuses_a_whole_file_verdict_that_contradicts_the_lines() {
    let mut obs = good();
    let report = obs.report.as_mut().unwrap();
    report.file_requirements = SdkVerdict {
        refusal: true,
        ..verdict(
            false,
            &[],
            Some("DependencyEnvironmentPreparationError: too many"),
        )
    };
    report.artifact_requirements = Some(report.file_requirements.clone());
    failing(&obs, "requirement-lines", &["refuses the file as a whole although it accepts every line: DependencyEnvironmentPreparationError: too many"]);

    let mut obs = good();
    obs.report.as_mut().unwrap().lines[1] = refused_line(2, "six==1.16.0", "E: x");
    obs.requirements.lines[1].kind = LineKind::PipOption;
    failing(
        &obs,
        "requirement-lines",
        &["refuses a line alone but accepts the whole file"],
    );

    let mut obs = good();
    let report = obs.report.as_mut().unwrap();
    report.file_requirements = SdkVerdict {
        refusal: false,
        ..verdict(false, &[], Some("TypeError: boom"))
    };
    report.artifact_requirements = Some(report.file_requirements.clone());
    failing(
        &obs,
        "requirement-lines",
        &["did not decide: it raised TypeError: boom"],
    );

    let mut obs = good();
    obs.report.as_mut().unwrap().artifact_requirements = Some(verdict(true, &[], None));
    failing(&obs, "requirement-lines", &["the two extractions disagree"]);
}

#[test]
fn a_file_that_is_not_utf8_is_one_finding_under_sdk_requirement() {
    let mut obs = good();
    obs.requirements.lines.clear();
    obs.requirements.not_utf8 =
        Some("requirements.txt is not UTF-8 (invalid utf-8 sequence)".into());
    let report = obs.report.as_mut().unwrap();
    report.lines.clear();
    report.file_requirements = SdkVerdict {
        refusal: true,
        ..verdict(false, &[], Some("UnicodeDecodeError: x"))
    };
    report.artifact_requirements = Some(report.file_requirements.clone());
    let root = failing(
        &obs,
        "sdk-requirement",
        &[
            "is not UTF-8",
            "the SDK refuses it too (UnicodeDecodeError: x): save it as UTF-8",
        ],
    );
    assert_eq!(root.consequence_of, None);
    let lines = failing(
        &obs,
        "requirement-lines",
        &["the file is not UTF-8, so no line could be read (see sdk-requirement)"],
    );
    assert_eq!(lines.consequence_of.as_deref(), Some("sdk-requirement"));
    assert!(!lines.detail.contains("as a whole"), "{}", lines.detail);
}

#[test]
fn requirements_that_cannot_be_read_are_one_finding_under_sdk_requirement() {
    let mut obs = good();
    obs.requirements.unreadable =
        Some("cannot read extracted/codex-agent/requirements.txt: denied".into());
    let root = failing(&obs, "sdk-requirement", &["not observed: cannot read"]);
    assert_eq!(root.consequence_of, None);
    let lines = failing(
        &obs,
        "requirement-lines",
        &["not observed", "see sdk-requirement"],
    );
    assert_eq!(lines.consequence_of.as_deref(), Some("sdk-requirement"));
    assert!(record(&obs).unwrap().sdk_requirements.is_empty());
}

#[test]
fn a_different_split_is_one_finding_under_sdk_requirement() {
    let mut obs = good();
    obs.report.as_mut().unwrap().lines[1].text = "six==1.16.0 ".into();
    failing(
        &obs,
        "sdk-requirement",
        &[
            "split the file into different requirement lines",
            "report this",
        ],
    );
    let lines = failing(
        &obs,
        "requirement-lines",
        &["read different requirement lines"],
    );
    assert_eq!(lines.consequence_of.as_deref(), Some("sdk-requirement"));
    let mut obs = good();
    obs.report.as_mut().unwrap().lines.pop();
    failing(&obs, "sdk-requirement", &["different requirement lines"]);
    let mut obs = good();
    obs.report.as_mut().unwrap().lines[1].number = 3;
    failing(&obs, "sdk-requirement", &["different requirement lines"]);
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_the_sdk_version_is_an_error_and_without_an_archive_a_failure() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    let e = testing::run(&Admission, &ctx).0.unwrap_err();
    assert!(e.contains("run sdk-record first"), "{e}");
    ctx.sdk.version = Some("0.6.0b5".into());
    ctx.candidates = vec![testing::bare_candidate("demo")];
    let (checks, after) = testing::run(&Admission, &ctx);
    let checks = checks.unwrap();
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0].result, crate::evidence::CheckResult::Fail);
    assert!(
        checks[0]
            .detail
            .contains("run lbp-build and archive-members first"),
        "{checks:#?}"
    );
    assert!(after.candidates[0].admission.is_none());
    assert_eq!(Admission.id(), "admission");
}

#[test]
fn a_candidate_without_its_extraction_or_whose_admission_panicked_fails_naming_why() {
    let c = decide_candidate(
        &Candidate::NoExtraction {
            folder: "demo".into(),
            archive: "packages/demo/demo-1.0.0.lbpkg".into(),
        },
        PIN_REQUIRED,
    );
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].name, "artifact-store");
    assert_eq!(c[0].result, crate::evidence::CheckResult::Fail);
    assert!(
        c[0].detail
            .contains("exact extraction of packages/demo/demo-1.0.0.lbpkg")
            && c[0].detail.ends_with("run archive-members first"),
        "{}",
        c[0].detail
    );
    let c = decide_candidate(
        &Candidate::Panicked {
            folder: "demo".into(),
        },
        PIN_REQUIRED,
    );
    assert_eq!(c[0].result, crate::evidence::CheckResult::Fail);
    assert!(c[0].detail.contains("harness defect"), "{}", c[0].detail);
    assert_eq!(c[0].candidate.as_deref(), Some("demo"));
}

#[test]
fn a_requirement_by_direct_url_is_its_own_kind_with_its_url() {
    let got = kinds(
        "six @ https://files.example.invalid/six-1.16.0-py2.py3-none-any.whl\n\
         git+https://github.com/a/b\n-e git+https://github.com/a/b#egg=b\nsix==1.16.0\n",
        "0.6.0b5",
    );
    assert_eq!(
        got[0],
        (
            1,
            LineKind::DirectUrl(
                "https://files.example.invalid/six-1.16.0-py2.py3-none-any.whl".into()
            )
        )
    );
    assert!(matches!(got[1], (2, LineKind::Invalid(_))));
    assert_eq!(got[2], (3, LineKind::PipOption));
    assert_eq!(got[3], (4, LineKind::Other));
    // The SDK keeps it for the installer; the harness's reading agrees on that.
    assert!(got[0].1.accepted() && got[0].1.kept());
}
