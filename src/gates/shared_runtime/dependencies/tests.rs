//! The shared worker's dependency checks on synthetic observations: each
//! clause passes on what the runtime really does and fails, naming the
//! candidate, the requirement or file, and what to do, on its counterexample.

use super::*;
use crate::evidence::CheckResult;

const SIX: &str = "six-1.16.0-py2.py3-none-any.whl";

fn file(name: &str) -> WheelhouseFile {
    let (project, version) = wheelhouse::wheel_identity(name).unwrap();
    WheelhouseFile {
        name: name.into(),
        project,
        version,
        size: 11,
        sha256: "a".repeat(64),
    }
}

fn wheelhouse_obs(requirements: &[&str]) -> WheelhouseObservation {
    WheelhouseObservation {
        requirements: Some(requirements.iter().map(|r| r.to_string()).collect()),
        recorded: Some(vec![file(SIX)]),
        candidate_files: vec![SIX.into()],
        failed_downloads: Vec::new(),
        drift: Vec::new(),
    }
}

#[test]
fn a_requirement_the_wheelhouse_holds_passes_naming_its_digest() {
    let c = decide_wheelhouse(&wheelhouse_obs(&["six==1.16.0"]), "six-plugin");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail.contains(&verify::digest(&[file(SIX)])),
        "{}",
        c.detail
    );
    assert!(c.detail.contains(SIX), "{}", c.detail);
    let observed = c.observed.unwrap();
    assert_eq!(observed["index_url"], "file:///vcc-wheelhouse/simple/");
}

#[test]
fn no_requirement_needs_nothing() {
    let mut obs = wheelhouse_obs(&[]);
    let c = decide_wheelhouse(&obs, "plain");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(c.detail.contains("installs nothing"), "{}", c.detail);
    // Nothing is installed, so no wheelhouse is needed.
    obs.recorded = None;
    assert_eq!(decide_wheelhouse(&obs, "plain").result, CheckResult::Pass);
}

#[test]
fn a_requirement_missing_from_the_wheelhouse_fails_naming_candidate_and_requirement() {
    let c = decide_wheelhouse(&wheelhouse_obs(&["httpx"]), "qweather");
    assert_eq!(c.result, CheckResult::Fail);
    for part in [
        "qweather/requirements.txt",
        "`httpx` (no file of httpx)",
        "never the network",
        "Make the `dependencies` gate download them",
    ] {
        assert!(c.detail.contains(part), "{part}: {}", c.detail);
    }
}

#[test]
fn a_version_the_wheelhouse_lacks_fails_naming_what_it_holds() {
    let c = decide_wheelhouse(&wheelhouse_obs(&["six>=2"]), "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("`six>=2` (files of six: 1.16.0)"),
        "{}",
        c.detail
    );
    // A marker requirement is left to the runtime's pip (named from its output).
    let c = decide_wheelhouse(
        &wheelhouse_obs(&["six==1.16.0", "pywin32; sys_platform == 'win32'"]),
        "p",
    );
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
}

#[test]
fn a_changed_wheelhouse_fails_before_anything_runs() {
    let mut obs = wheelhouse_obs(&["six==1.16.0"]);
    obs.drift = vec![format!(
        "wheelhouse/{SIX}: recorded sha256 aaa, found sha256 bbb"
    )];
    let c = decide_wheelhouse(&obs, "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("changed since the `dependencies` gate recorded it"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("found sha256 bbb"), "{}", c.detail);
}

#[test]
fn no_record_or_a_failed_download_fails() {
    let mut obs = wheelhouse_obs(&["six==1.16.0"]);
    obs.recorded = None;
    let c = decide_wheelhouse(&obs, "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("no wheelhouse recorded"), "{}", c.detail);
    let mut obs = wheelhouse_obs(&["six==1.16.0"]);
    obs.requirements = None;
    assert_eq!(decide_wheelhouse(&obs, "p").result, CheckResult::Fail);
    let mut obs = wheelhouse_obs(&["six==1.16.0"]);
    obs.failed_downloads = vec!["six==1.16.0".into()];
    let c = decide_wheelhouse(&obs, "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("`six==1.16.0` (its download failed)"),
        "{}",
        c.detail
    );
}

fn pip(args_before: &[&str], output: &str) -> Launch {
    let mut args: Vec<String> = args_before.iter().map(|a| a.to_string()).collect();
    args.extend(
        [
            "--",
            "/v/bin/python",
            "-m",
            "pip",
            "install",
            "--target",
            "/dependency-env",
            "-i",
            "file:///vcc-wheelhouse/simple/",
            "-r",
            "/tmp/requirements.txt",
        ]
        .map(String::from),
    );
    Launch {
        kind: "pip".into(),
        sdk_args: Vec::new(),
        args,
        output: Some(output.into()),
    }
}

const CONFINED: &[&str] = &[
    "--mode",
    "o",
    "--bindmount_ro",
    "/ev/wheelhouse:/vcc-wheelhouse",
];

fn env_obs(launches: Vec<Launch>, installed: &[(&str, &str)]) -> EnvironmentObservation {
    let dists: Vec<InstalledDistribution> = installed
        .iter()
        .map(|(n, v)| InstalledDistribution {
            name: n.to_string(),
            version: v.to_string(),
        })
        .collect();
    let recorded = [file(SIX)];
    let wheels = dists
        .iter()
        .flat_map(|d| wheelhouse::files_for(&recorded, &d.name, &d.version))
        .cloned()
        .collect();
    EnvironmentObservation {
        requirements: vec!["six==1.16.0".into()],
        wheelhouse_digest: "d".repeat(64),
        launches,
        environments: vec![PublishedEnvironment {
            digest: "e".repeat(64),
            installed: Ok(dists),
            wheels,
            problems: Vec::new(),
        }],
    }
}

#[test]
fn an_offline_install_of_wheelhouse_wheels_passes_naming_them() {
    let obs = env_obs(
        vec![pip(CONFINED, "Successfully installed six-1.16.0")],
        &[("six", "1.16.0")],
    );
    let c = decide_environment(&obs, "six-plugin");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail
            .contains(&format!("{SIX} (sha256 {})", "a".repeat(64))),
        "{}",
        c.detail
    );
    assert!(c.detail.contains(&"d".repeat(64)), "{}", c.detail);
}

#[test]
fn a_jail_with_network_or_without_the_mount_fails() {
    let net = [
        "--disable_clone_newnet",
        "--bindmount_ro",
        "/ev/wheelhouse:/vcc-wheelhouse",
    ];
    let c = decide_environment(&env_obs(vec![pip(&net, "")], &[("six", "1.16.0")]), "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("kept the host's network"), "{}", c.detail);
    let c = decide_environment(
        &env_obs(vec![pip(&["--mode", "o"], "")], &[("six", "1.16.0")]),
        "p",
    );
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("not mounted read-only at /vcc-wheelhouse"),
        "{}",
        c.detail
    );
    let mut other_index = pip(CONFINED, "");
    other_index
        .args
        .extend(["--extra-index-url".into(), "https://pypi.org/simple".into()]);
    let c = decide_environment(&env_obs(vec![other_index], &[("six", "1.16.0")]), "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("https://pypi.org/simple"), "{}", c.detail);
}

#[test]
fn a_failed_install_is_named_from_pip_output() {
    let mut obs = env_obs(
        vec![pip(CONFINED, "Looking in indexes: file:///vcc-wheelhouse/simple/\nERROR: Could not find a version that satisfies the requirement six==1.16.0 (from versions: none)\nERROR: No matching distribution found for six==1.16.0\n")],
        &[],
    );
    obs.environments.clear();
    let c = decide_environment(&obs, "six-plugin");
    assert_eq!(c.result, CheckResult::Fail);
    for part in [
        "six-plugin",
        "`six==1.16.0`",
        "no network",
        "`dependencies` gate",
    ] {
        assert!(c.detail.contains(part), "{part}: {}", c.detail);
    }
    obs.launches = vec![pip(CONFINED, "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n    six from file:///vcc-wheelhouse/six.whl:\n        Expected sha256 aaaa\n             Got        bbbb\n")];
    let c = decide_environment(&obs, "six-plugin");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(
            "do not match the sha256 its index publishes (Expected sha256 aaaa, Got        bbbb)"
        ),
        "{}",
        c.detail
    );
}

#[test]
fn a_distribution_no_wheel_accounts_for_or_a_changed_file_fails() {
    let c = decide_environment(
        &env_obs(
            vec![pip(CONFINED, "")],
            &[("six", "1.16.0"), ("evil", "1.0")],
        ),
        "p",
    );
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("evil 1.0 is installed, and no wheelhouse file"),
        "{}",
        c.detail
    );
    let mut obs = env_obs(vec![pip(CONFINED, "")], &[("six", "1.16.0")]);
    obs.environments[0].problems =
        vec!["six.py: expected sha256=x size 1 (the wheel's RECORD), found sha256=y size 2".into()];
    let c = decide_environment(&obs, "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("found sha256=y"), "{}", c.detail);
}

#[test]
fn without_requirements_no_pip_runs_and_the_environment_is_empty() {
    let mut obs = env_obs(Vec::new(), &[]);
    obs.requirements.clear();
    let c = decide_environment(&obs, "plain");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    obs.launches = vec![pip(CONFINED, "")];
    assert_eq!(decide_environment(&obs, "plain").result, CheckResult::Fail);
    obs.launches.clear();
    obs.environments.clear();
    let c = decide_environment(&obs, "plain");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("not established"), "{}", c.detail);
}

#[test]
fn requirements_without_a_seen_pip_launch_are_not_established() {
    let c = decide_environment(&env_obs(Vec::new(), &[("six", "1.16.0")]), "p");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("saw no pip launch"), "{}", c.detail);
}

#[test]
fn the_environment_of_this_archive_is_found_by_its_ready_marker() {
    let work = tempfile::tempdir().unwrap();
    let envs = work.path().join("data/plugin-runtime/environments/sha256");
    for (digest, artifact) in [("e1", "mine"), ("e2", "other")] {
        std::fs::create_dir_all(envs.join(digest).join("site-packages")).unwrap();
        std::fs::write(
            envs.join(digest).join(".ready.json"),
            format!("{{\"artifact_digest\": \"{artifact}\"}}"),
        )
        .unwrap();
    }
    let obs = observe_environment(work.path(), "mine", work.path(), &[], &[], &[]);
    assert_eq!(obs.environments.len(), 1);
    assert_eq!(obs.environments[0].digest, "e1");
    assert_eq!(obs.environments[0].installed, Ok(Vec::new()));
    assert_eq!(obs.wheelhouse_digest, verify::digest(&[]));
}
