//! Counterexamples for `vendored-sdk`, one per clause of its `proves`
//! sentence, over observation values (no Python, no install).

use super::observe::{observe, observe_sdk_file, record_paths};
use super::*;
use crate::context::VerifiedSdk;
use crate::evidence::CheckResult;
use crate::hash;
use crate::profile::VendoredSdkOptions;
use std::path::Path;

const SHA: &str = "140d1448666a1412777cd3e51a03ae2ce2ba48b3593b89484b581a1e202d7ad0";
const LICENSE: &str = "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4";
const DAEMON: &str = "langbot_plugin/api/agent_tools/daemon.py";

fn opts() -> VendoredSdkOptions {
    let p = crate::profile::parse(crate::profile::BUILTIN_CODING_RUNNERS, "built-in").unwrap();
    p.vendored_sdk
        .expect("the built-in profile has [vendored_sdk]")
}

fn notice(version: &str, file: &str, sha: &str) -> String {
    format!(
        "# Relay\n\n`daemon_relay.py` is derived from langbot-plugin {version}\n`{file}`, upstream \
         https://example.invalid (Apache-2.0).\nOriginal SHA-256: `{sha}`.\nFull license: `LICENSE-sdk.txt`.\n"
    )
}

fn file(sha256: &str, size: u64) -> FileState {
    FileState::File {
        sha256: sha256.into(),
        size,
    }
}

/// An observation that passes every check.
fn good() -> VendoredObservation {
    VendoredObservation {
        folder: "a".into(),
        notice: "R/a/pkg/RELAY-NOTICE.md".into(),
        notice_error: None,
        fields: read_notice(&notice("0.6.0b5", DAEMON, SHA), &opts()).unwrap(),
        pinned_version: "0.6.0b5".into(),
        installed_version: "0.6.0b5".into(),
        sdk_file: Some(SdkFile {
            path: DAEMON.into(),
            inside_package: true,
            in_record: true,
            state: file(SHA, 17_000),
        }),
        license_copy: "R/a/pkg/LICENSE-sdk.txt".into(),
        license_copy_state: file(LICENSE, 11_357),
        installed_license: "langbot_plugin-0.6.0b5.dist-info/licenses/LICENSE".into(),
        installed_license_state: file(LICENSE, 11_357),
    }
}

fn results(o: &VendoredObservation) -> Vec<(String, CheckResult, String)> {
    decide_candidate(o)
        .into_iter()
        .map(|c| (c.name, c.result, c.detail))
        .collect()
}

fn failing(o: &VendoredObservation, name: &str) -> String {
    let r = results(o);
    let (_, result, detail) = r.iter().find(|(n, ..)| n == name).unwrap();
    assert_eq!(*result, CheckResult::Fail, "{name}: {detail}");
    assert!(
        r.iter()
            .filter(|(n, ..)| n != name)
            .all(|(_, res, _)| *res == CheckResult::Pass),
        "only {name} fails: {r:?}"
    );
    detail.clone()
}

#[test]
fn the_builtin_patterns_read_the_real_notice_shape() {
    let real = "# Plugin-owned coding relay v1\n\n`daemon_relay.py` is derived from langbot-plugin 0.6.0b5\n\
                `langbot_plugin/api/agent_tools/daemon.py`, upstream\nhttps://github.com/langbot-app/langbot-plugin-sdk (Apache-2.0).\n\
                Original SHA-256: `140d1448666a1412777cd3e51a03ae2ce2ba48b3593b89484b581a1e202d7ad0`.\n\
                Full upstream license: `LICENSE-sdk.txt`.\n\nModified by contributors. Canonical source is ACP's pkg/daemon_relay.py.\n";
    let f = read_notice(real, &opts()).unwrap();
    assert_eq!(f.version, Field::Found("0.6.0b5".into()));
    assert_eq!(f.file, Field::Found(DAEMON.into()));
    assert_eq!(f.sha256, Field::Found(SHA.into()));
}

#[test]
fn a_true_notice_and_an_identical_license_pass() {
    let r = results(&good());
    assert_eq!(r.len(), 3);
    assert!(
        r.iter().all(|(_, res, _)| *res == CheckResult::Pass),
        "{r:?}"
    );
}

#[test]
fn another_version_fails_naming_both() {
    let mut o = good();
    o.fields = read_notice(&notice("0.6.0b3", DAEMON, SHA), &opts()).unwrap();
    let d = failing(&o, "sdk-version");
    assert!(d.contains("names langbot-plugin 0.6.0b3"), "{d}");
    assert!(d.contains("expected the pinned version 0.6.0b5"), "{d}");
}

#[test]
fn a_version_matching_the_pin_but_not_the_install_fails() {
    let mut o = good();
    o.installed_version = "0.6.0b6".into();
    let d = failing(&o, "sdk-version");
    assert!(d.contains("installed and verified: 0.6.0b6"), "{d}");
}

#[test]
fn a_wrong_hash_fails_with_both_digests() {
    let mut o = good();
    let wrong = "0".repeat(64);
    o.fields = read_notice(&notice("0.6.0b5", DAEMON, &wrong), &opts()).unwrap();
    let d = failing(&o, "sdk-file");
    assert!(d.contains(&wrong) && d.contains(SHA), "{d}");
    assert!(d.contains("re-derive"), "{d}");
}

#[test]
fn an_upper_case_hash_is_the_same_digest() {
    let mut o = good();
    o.fields = read_notice(&notice("0.6.0b5", DAEMON, &SHA.to_uppercase()), &opts()).unwrap();
    assert!(results(&o).iter().all(|(_, r, _)| *r == CheckResult::Pass));
}

#[test]
fn another_file_missing_from_the_install_fails() {
    let mut o = good();
    o.sdk_file = Some(SdkFile {
        path: "langbot_plugin/api/agent_tools/relay.py".into(),
        inside_package: true,
        in_record: false,
        state: FileState::Unavailable {
            why: "does not exist".into(),
        },
    });
    let d = failing(&o, "sdk-file");
    assert!(
        d.contains("`langbot_plugin/api/agent_tools/relay.py`, which does not exist"),
        "{d}"
    );
}

#[test]
fn a_file_not_in_record_fails() {
    let mut o = good();
    o.sdk_file.as_mut().unwrap().in_record = false;
    let d = failing(&o, "sdk-file");
    assert!(d.contains("not listed in its RECORD"), "{d}");
}

#[test]
fn a_file_outside_the_package_is_not_looked_up() {
    let sdk = VerifiedSdk {
        site_packages: "/nonexistent/site-packages".into(),
        package_dir: "/nonexistent/site-packages/langbot_plugin".into(),
        dist_info: "/nonexistent/site-packages/langbot_plugin-0.6.0b5.dist-info".into(),
    };
    for named in [
        "../../etc/passwd",
        "/etc/passwd",
        "pip/__init__.py",
        "langbot_plugin",
    ] {
        let f = observe_sdk_file(&sdk, named, &[]);
        assert!(!f.inside_package, "{named}");
        assert!(
            matches!(&f.state, FileState::Unavailable { why } if why.contains("not a path inside")),
            "{named}: {f:?}"
        );
    }
}

#[test]
fn missing_and_ambiguous_fields_fail_naming_the_pattern() {
    let mut o = good();
    o.fields.sha256 = Field::Missing;
    let d = failing(&o, "sdk-file");
    assert!(d.contains("vendored_sdk.sha256_pattern"), "{d}");
    let mut o = good();
    o.fields.version = read_field(
        "derived from langbot-plugin 0.6.0b5 and derived from langbot-plugin 0.6.0b3",
        &opts().version_pattern,
    )
    .unwrap();
    assert_eq!(
        o.fields.version,
        Field::Ambiguous(vec!["0.6.0b5".into(), "0.6.0b3".into()])
    );
    let d = failing(&o, "sdk-version");
    assert!(d.contains("more than one SDK version"), "{d}");
}

#[test]
fn an_unreadable_notice_fails_every_notice_check() {
    let mut o = good();
    o.notice_error = Some("cannot be read in the staged commit: not found".into());
    let r = results(&o);
    assert_eq!(r[0].1, CheckResult::Fail);
    assert_eq!(r[1].1, CheckResult::Fail);
    assert!(
        r[0].2.contains("R/a/pkg/RELAY-NOTICE.md cannot be read"),
        "{}",
        r[0].2
    );
}

#[test]
fn a_differing_or_missing_license_fails() {
    let mut o = good();
    o.license_copy_state = file(&"1".repeat(64), 11_000);
    let d = failing(&o, "license-copy");
    assert!(d.contains(&"1".repeat(64)) && d.contains(LICENSE), "{d}");
    o.license_copy_state = FileState::Unavailable {
        why: "does not exist".into(),
    };
    let d = failing(&o, "license-copy");
    assert!(d.contains("R/a/pkg/LICENSE-sdk.txt does not exist"), "{d}");
    let mut o = good();
    o.installed_license_state = FileState::Unavailable {
        why: "does not exist".into(),
    };
    let d = failing(&o, "license-copy");
    assert!(d.contains("license_source"), "{d}");
}

// Clause by clause: "each candidate's notice (read in the staged commit ...,
// each field found and unambiguous) names the pinned SDK version and an SDK
// file that exists in the verified install (a regular file inside the
// `langbot_plugin` package, listed in its verified RECORD) whose sha256
// equals the notice's; the license copy is byte-identical to the installed
// distribution's license file. A candidate the profile does not cover gets a
// warning."

#[test]
fn every_pass_carries_what_it_rests_on() {
    for c in decide_candidate(&good()) {
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
        let o = c.observed.unwrap();
        assert!(o.as_object().is_some_and(|m| !m.is_empty()), "{}", c.name);
    }
    let c = &decide_candidate(&good())[1];
    assert_eq!(
        c.observed.as_ref().unwrap()["installed"]["state"]["sha256"],
        SHA
    );
}

#[test]
fn refuses_when_the_notice_cannot_be_read_and_reports_the_file_check_as_its_consequence() {
    let mut o = good();
    o.notice_error = Some("is not UTF-8 (invalid utf-8 sequence)".into());
    let checks = decide_candidate(&o);
    assert_eq!(checks[0].result, CheckResult::Fail);
    assert_eq!(checks[0].consequence_of, None);
    assert_eq!(
        checks[0].detail,
        "the notice R/a/pkg/RELAY-NOTICE.md is not UTF-8 (invalid utf-8 sequence); expected it to name \
         the SDK version, file and original sha256 the vendored code came from: add it to the candidate \
         and commit it"
    );
    assert_eq!(checks[1].result, CheckResult::Fail);
    assert_eq!(checks[1].consequence_of.as_deref(), Some("sdk-version"));
    assert!(
        checks[1]
            .detail
            .starts_with("not verified: the notice R/a/pkg/RELAY-NOTICE.md could not be read"),
        "{}",
        checks[1].detail
    );
    // The license is judged on its own.
    assert_eq!(checks[2].result, CheckResult::Pass);
}

#[test]
fn refuses_a_notice_without_a_version_naming_the_pattern() {
    let mut o = good();
    o.fields.version = Field::Missing;
    let d = failing(&o, "sdk-version");
    assert_eq!(
        d,
        "R/a/pkg/RELAY-NOTICE.md names no SDK version: the profile's `vendored_sdk.version_pattern` does \
         not match it; expected the notice to state the SDK version the vendored code came from (or fix \
         the pattern)"
    );
}

#[test]
fn refuses_a_notice_without_a_file_or_with_two() {
    let mut o = good();
    o.fields.file = Field::Missing;
    o.sdk_file = None;
    let d = failing(&o, "sdk-file");
    assert!(
        d.contains("names no SDK file: the profile's `vendored_sdk.file_pattern`"),
        "{d}"
    );
    assert!(!d.contains("sha256_pattern"), "{d}");
    o.fields.file = Field::Ambiguous(vec![DAEMON.into(), "langbot_plugin/x.py".into()]);
    let d = failing(&o, "sdk-file");
    assert!(d.contains("names more than one SDK file"), "{d}");
}

#[test]
fn refuses_a_notice_with_two_hashes() {
    let mut o = good();
    o.fields.sha256 = Field::Ambiguous(vec![SHA.into(), "0".repeat(64)]);
    let d = failing(&o, "sdk-file");
    assert!(d.contains("names more than one original sha256"), "{d}");
}

#[test]
fn refuses_a_notice_missing_both_file_and_hash_naming_both() {
    let mut o = good();
    o.fields.file = Field::Missing;
    o.fields.sha256 = Field::Missing;
    o.sdk_file = None;
    let d = failing(&o, "sdk-file");
    assert!(
        d.contains("file_pattern") && d.contains("; ") && d.contains("sha256_pattern"),
        "{d}"
    );
}

#[test]
fn refuses_an_sdk_file_outside_the_package_even_if_it_was_read() {
    let mut o = good();
    let f = o.sdk_file.as_mut().unwrap();
    f.path = "../../etc/passwd".into();
    f.inside_package = false;
    let d = failing(&o, "sdk-file");
    assert!(
        d.contains(
            "`../../etc/passwd`, which is not a path inside the installed langbot_plugin package"
        ),
        "{d}"
    );
}

#[test]
fn refuses_an_sdk_file_that_is_a_symlink_in_the_install() {
    let mut o = good();
    o.sdk_file.as_mut().unwrap().state = FileState::Unavailable {
        why: "is a symlink, not a regular file".into(),
    };
    let d = failing(&o, "sdk-file");
    assert!(
        d.contains(
            "which is a symlink, not a regular file in the verified langbot-plugin 0.6.0b5 install"
        ),
        "{d}"
    );
}

#[test]
fn refuses_a_license_copy_of_the_same_size_but_other_bytes() {
    let mut o = good();
    o.license_copy_state = file(&"2".repeat(64), 11_357);
    let d = failing(&o, "license-copy");
    assert!(d.contains("differs from the installed"), "{d}");
}

#[test]
fn refuses_a_license_copy_with_the_same_digest_text_but_another_size() {
    let mut o = good();
    o.license_copy_state = file(LICENSE, 1);
    failing(&o, "license-copy");
}

#[test]
fn a_candidate_the_profile_does_not_cover_gets_a_warning_and_nothing_else() {
    let checks = decide(&Observation {
        candidates: vec![
            CandidateObservation::NotCovered {
                folder: "b".into(),
                path: "R/b".into(),
            },
            CandidateObservation::Covered(Box::new(good())),
        ],
    });
    assert_eq!(checks.len(), 4);
    assert_eq!(checks[0].name, "sdk-version");
    assert_eq!(checks[0].candidate.as_deref(), Some("b"));
    assert_eq!(checks[0].result, CheckResult::Warn);
    assert!(checks[0]
        .detail
        .starts_with("R/b is not listed in [vendored_sdk] candidates"));
    assert!(checks[1..]
        .iter()
        .all(|c| c.result == CheckResult::Pass && c.candidate.as_deref() == Some("a")));
}

/// A fake verified install under `root`: one module, a RECORD listing it
/// (and a file the RECORD does not list next to it), and the license.
fn install(root: &Path) -> VerifiedSdk {
    let sp = root.join("site-packages");
    let pkg = sp.join("langbot_plugin");
    let di = sp.join("langbot_plugin-0.6.0b5.dist-info");
    std::fs::create_dir_all(pkg.join("api")).unwrap();
    std::fs::create_dir_all(di.join("licenses")).unwrap();
    std::fs::write(pkg.join("api/daemon.py"), b"daemon\n").unwrap();
    std::fs::write(pkg.join("api/stray.py"), b"stray\n").unwrap();
    std::fs::write(di.join("licenses/LICENSE"), b"Apache\n").unwrap();
    std::fs::write(
        di.join("RECORD"),
        "langbot_plugin/api/daemon.py,sha256=x,7\nlangbot_plugin-0.6.0b5.dist-info/RECORD,,\n",
    )
    .unwrap();
    VerifiedSdk {
        site_packages: sp,
        package_dir: pkg,
        dist_info: di,
    }
}

fn observe_in(staged: &Path, sdk: &VerifiedSdk) -> VendoredObservation {
    let record = record_paths(sdk).unwrap();
    observe(
        staged,
        "R/a",
        "a",
        &opts(),
        sdk,
        &record,
        "0.6.0b5",
        "0.6.0b5",
    )
    .unwrap()
}

#[test]
fn observation_reads_the_notice_the_install_and_both_licenses() {
    let d = tempfile::tempdir().unwrap();
    let sdk = install(d.path());
    let staged = d.path().join("staged");
    let o = opts();
    let notice_path = staged.join("R/a").join(&o.notice);
    std::fs::create_dir_all(notice_path.parent().unwrap()).unwrap();
    let daemon_sha = hash::sha256_bytes(b"daemon\n");
    std::fs::write(
        &notice_path,
        notice("0.6.0b5", "langbot_plugin/api/daemon.py", &daemon_sha),
    )
    .unwrap();
    let license = staged.join("R/a").join(&o.license_copy);
    std::fs::create_dir_all(license.parent().unwrap()).unwrap();
    std::fs::write(&license, b"Apache\n").unwrap();
    assert_eq!(
        record_paths(&sdk).unwrap(),
        [
            "langbot_plugin/api/daemon.py",
            "langbot_plugin-0.6.0b5.dist-info/RECORD"
        ]
    );
    let v = observe_in(&staged, &sdk);
    assert_eq!(v.notice_error, None);
    assert_eq!(
        v.sdk_file,
        Some(SdkFile {
            path: "langbot_plugin/api/daemon.py".into(),
            inside_package: true,
            in_record: true,
            state: file(&daemon_sha, 7),
        })
    );
    assert_eq!(v.license_copy_state, v.installed_license_state);
    assert_eq!(
        v.installed_license,
        "langbot_plugin-0.6.0b5.dist-info/licenses/LICENSE"
    );
    assert!(decide_candidate(&v)
        .iter()
        .all(|c| c.result == CheckResult::Pass));

    // A file the install has but its RECORD does not list.
    std::fs::write(
        &notice_path,
        notice("0.6.0b5", "langbot_plugin/api/stray.py", &daemon_sha),
    )
    .unwrap();
    let v = observe_in(&staged, &sdk);
    let f = v.sdk_file.as_ref().unwrap();
    assert!(f.inside_package && !f.in_record, "{f:?}");

    // A notice that is not UTF-8, then none at all.
    std::fs::write(&notice_path, b"\xff\xfe").unwrap();
    let v = observe_in(&staged, &sdk);
    assert!(
        v.notice_error
            .as_deref()
            .unwrap()
            .starts_with("is not UTF-8"),
        "{v:?}"
    );
    assert_eq!(v.fields.version, Field::Missing);
    assert_eq!(v.sdk_file, None);
    std::fs::remove_file(&notice_path).unwrap();
    std::fs::remove_file(&license).unwrap();
    let v = observe_in(&staged, &sdk);
    assert!(
        v.notice_error
            .as_deref()
            .unwrap()
            .starts_with("cannot be read in the staged commit"),
        "{v:?}"
    );
    assert_eq!(
        v.license_copy_state,
        FileState::Unavailable {
            why: "does not exist".into()
        }
    );
}

#[test]
fn the_gate_applies_only_when_the_profile_covers_a_candidate_of_the_run() {
    use crate::gates::Gate;
    // The built-in profile covers the three runners: the gate applies.
    let mut ctx = crate::context::RunContext::for_tests();
    assert!(ctx.profile.profile.vendored_sdk.is_some());
    assert_eq!(VendoredSdk.not_applicable(&ctx), None);
    // A section listing candidates, and a run of another one.
    ctx.profile
        .profile
        .vendored_sdk
        .as_mut()
        .unwrap()
        .candidates = Some(vec![ctx.selected[0].path.clone()]);
    assert_eq!(VendoredSdk.not_applicable(&ctx), None);
    let mut other = ctx.selected[0].clone();
    other.path = "Elsewhere/not-listed".into();
    ctx.selected = vec![other];
    let reason = VendoredSdk.not_applicable(&ctx).expect("skipped");
    assert!(
        reason.starts_with("no candidate of this run is listed in [vendored_sdk] candidates"),
        "{reason}"
    );
    // No section at all.
    ctx.profile.profile.vendored_sdk = None;
    let reason = VendoredSdk.not_applicable(&ctx).expect("skipped");
    assert!(
        reason.starts_with("the profile has no [vendored_sdk] section"),
        "{reason}"
    );
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_its_inputs_is_an_error_not_a_pass() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    let e = testing::run(&VendoredSdk, &ctx).0.unwrap_err();
    assert!(e.contains("the staged source is missing"), "{e}");
    ctx.staged_root = Some(ctx.staging_source());
    let e = testing::run(&VendoredSdk, &ctx).0.unwrap_err();
    assert!(e.contains("the verified SDK is missing"), "{e}");
    ctx.profile.profile.vendored_sdk = None;
    let e = testing::run(&VendoredSdk, &ctx).0.unwrap_err();
    assert!(e.contains("no [vendored_sdk] section"), "{e}");
    assert_eq!(VendoredSdk.id(), "vendored-sdk");
}

#[test]
fn run_reads_the_covered_candidate_and_only_warns_about_the_others() {
    use crate::gates::testing;
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    let sdk_root = tempfile::tempdir().unwrap();
    ctx.verified_sdk = Some(install(sdk_root.path()));
    ctx.sdk.version = Some(ctx.profile.profile.sdk.version().to_string());
    ctx.staged_root = Some(ctx.staging_source());
    let covered = ctx.selected[0].clone();
    assert!(
        ctx.selected.len() > 1,
        "the built-in profile has several runners"
    );
    ctx.profile
        .profile
        .vendored_sdk
        .as_mut()
        .unwrap()
        .candidates = Some(vec![covered.path.clone()]);
    // The covered candidate's true notice and license copy, in the staging.
    let o = opts();
    let dir = ctx.staged_candidate(&covered);
    std::fs::create_dir_all(dir.join(&o.notice).parent().unwrap()).unwrap();
    std::fs::write(
        dir.join(&o.notice),
        notice(
            ctx.sdk.version.as_deref().unwrap(),
            "langbot_plugin/api/daemon.py",
            &hash::sha256_bytes(b"daemon\n"),
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join(&o.license_copy).parent().unwrap()).unwrap();
    std::fs::write(dir.join(&o.license_copy), b"Apache\n").unwrap();

    let checks = testing::run(&VendoredSdk, &ctx).0.unwrap();
    let (mine, others): (Vec<_>, Vec<_>) = checks
        .iter()
        .partition(|c| c.candidate.as_deref() == Some(covered.folder()));
    assert!(!mine.is_empty());
    assert!(
        mine.iter().all(|c| c.result == CheckResult::Pass),
        "{mine:#?}"
    );
    assert_eq!(others.len(), ctx.selected.len() - 1, "{others:#?}");
    assert!(
        others.iter().all(|c| c.result == CheckResult::Warn
            && c.detail
                .contains("is not listed in [vendored_sdk] candidates")),
        "{others:#?}"
    );
}
