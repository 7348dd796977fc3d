//! Unit tests of the `dependencies` gate: its readers, and counterexamples
//! to [`decide`] over observations, one per clause of the catalogue's
//! `proves` sentence.

use super::*;
use serde_json::json;

use crate::evidence::{CheckResult, WheelhouseDownload, WheelhouseFailure};

fn six() -> WheelhouseFile {
    WheelhouseFile {
        name: "six-1.16.0-py2.py3-none-any.whl".into(),
        project: "six".into(),
        version: "1.16.0".into(),
        size: 11053,
        sha256: "8a".repeat(32),
    }
}

fn record(download: Option<WheelhouseDownload>) -> WheelhouseRecord {
    WheelhouseRecord {
        dir: "wheelhouse".into(),
        index: "wheelhouse/simple/".into(),
        upstream_index: crate::profile::UPSTREAM_INDEX.into(),
        files: if download.as_ref().is_some_and(|d| d.ok) {
            vec![six()]
        } else {
            vec![]
        },
        downloads: download.into_iter().collect(),
        allow_source_builds: vec![],
    }
}

const SIX_URL: &str =
    "https://files.pythonhosted.org/packages/d9/5a/x/six-1.16.0-py2.py3-none-any.whl";

fn download(ok: bool) -> WheelhouseDownload {
    WheelhouseDownload {
        candidates: vec!["codex-agent".into(), "claude-code-agent".into()],
        requirements: vec!["six==1.16.0".into()],
        ok,
        files: if ok { vec![six().name] } else { vec![] },
        duration_ms: 1200,
        log: "logs/dependencies/wheelhouse/download-1".into(),
        failure: (!ok).then(|| WheelhouseFailure {
            status: "exit status 1".into(),
            requirement: Some("vcc-no-such-package-xyz==1.0".into()),
            pip_tail: "ERROR: No matching distribution found for vcc-no-such-package-xyz==1.0"
                .into(),
            sdists: vec![],
        }),
        sources: if ok {
            vec![crate::evidence::WheelSource {
                file: six().name,
                project: "six".into(),
                version: "1.16.0".into(),
                provenance: crate::evidence::Provenance::Downloaded,
                url: SIX_URL.into(),
                published_sha256: six().sha256,
                build_log: None,
            }]
        } else {
            vec![]
        },
        resolve_log: Some("logs/dependencies/wheelhouse/resolve-1".into()),
        sandbox: None,
        left_running: Default::default(),
    }
}

#[test]
fn a_pip_step_that_left_a_process_running_fails_pip_left_running() {
    use crate::evidence::sandbox::{LeftProcess, LeftRunning};
    let mut rec = record(Some(download(true)));
    assert!(pip_left_running_check(&rec).is_none());
    let nothing = LeftRunning::Surveyed { processes: vec![] };
    rec.downloads[0]
        .left_running
        .insert("resolve".into(), nothing.clone());
    rec.downloads[0]
        .left_running
        .insert("download".into(), nothing);
    assert_eq!(
        pip_left_running_check(&rec).unwrap().result,
        CheckResult::Pass
    );
    rec.downloads[0].left_running.insert(
        "download".into(),
        LeftRunning::Surveyed {
            processes: vec![LeftProcess {
                pid: 5,
                ppid: 1,
                pgid: 5,
                sid: 5,
                state: "S".into(),
                cmdline: "build-daemon --forever".into(),
                ms_alive: 800,
            }],
        },
    );
    let c = pip_left_running_check(&rec).unwrap();
    assert_eq!(
        (c.name.as_str(), c.result),
        ("pip-left-running", CheckResult::Fail)
    );
    assert!(
        c.detail.contains("pip download step of download 1"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("): build-daemon --forever"),
        "{}",
        c.detail
    );
}

#[test]
fn the_wheelhouse_check_lists_each_file_or_names_the_failed_requirement() {
    let ev = Path::new("/ev");
    let reqs = vec!["six==1.16.0".to_string()];
    let pass = wheelhouse_check("codex-agent", &reqs, &record(Some(download(true))), ev);
    assert_eq!(pass.result, CheckResult::Pass, "{}", pass.detail);
    assert!(
        pass.detail.contains(&format!("sha256 {}", "8a".repeat(32))),
        "{}",
        pass.detail
    );
    assert!(
        pass.detail.contains("file:///ev/wheelhouse/simple/"),
        "{}",
        pass.detail
    );
    assert!(
        pass.detail.contains("shared with [\"claude-code-agent\"]"),
        "{}",
        pass.detail
    );
    assert_eq!(pass.observed.as_ref().unwrap()["files"][0]["size"], 11053);

    let fail = wheelhouse_check("codex-agent", &reqs, &record(Some(download(false))), ev);
    assert_eq!(fail.result, CheckResult::Fail);
    for needle in [
        "on `vcc-no-such-package-xyz==1.0`",
        "ERROR: No matching distribution found",
        "/ev/logs/dependencies/wheelhouse/download-1.stderr",
        "remove it from requirements.txt",
    ] {
        assert!(fail.detail.contains(needle), "{needle}: {}", fail.detail);
    }

    let none = wheelhouse_check("acp-agent-runner", &[], &record(None), ev);
    assert_eq!(none.result, CheckResult::Pass);
    assert!(
        none.detail.contains("nothing to download"),
        "{}",
        none.detail
    );
    // Requirements without a recorded download are never a pass.
    let lost = wheelhouse_check("acp-agent-runner", &reqs, &record(Some(download(true))), ev);
    assert_eq!(lost.result, CheckResult::Fail);
    assert!(lost.detail.starts_with("not observed"), "{}", lost.detail);
}

#[test]
fn a_wheelhouse_file_that_is_not_the_published_one_fails_naming_file_url_expected_and_found() {
    let ev = Path::new("/ev");
    let reqs = vec!["six==1.16.0".to_string()];
    let pass = wheelhouse_check("codex-agent", &reqs, &record(Some(download(true))), ev);
    assert!(
        pass.detail.contains(&format!("downloaded from {SIX_URL}")),
        "{}",
        pass.detail
    );
    // The file on disk re-hashed to something else than the index published.
    let mut rec = record(Some(download(true)));
    rec.files[0].sha256 = "ff".repeat(32);
    let c = wheelhouse_check("codex-agent", &reqs, &rec, ev);
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
    for needle in [
        "six-1.16.0-py2.py3-none-any.whl",
        SIX_URL,
        &format!(
            "expected the sha256 the index published, {}",
            "8a".repeat(32)
        ),
        &format!("found {}", "ff".repeat(32)),
    ] {
        assert!(c.detail.contains(needle), "{needle}: {}", c.detail);
    }
    // A file with no recorded source is never a pass.
    let mut rec = record(Some(download(true)));
    rec.downloads[0].sources.clear();
    let c = wheelhouse_check("codex-agent", &reqs, &rec, ev);
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
    // Built from an sdist: passes only when the profile allows it, and says so.
    let mut rec = record(Some(download(true)));
    let s = &mut rec.downloads[0].sources[0];
    s.provenance = crate::evidence::Provenance::BuiltFromSdist;
    s.url = "https://files.pythonhosted.org/six-1.16.0.tar.gz".into();
    s.build_log = Some("logs/dependencies/wheelhouse/download-1".into());
    let c = wheelhouse_check("codex-agent", &reqs, &rec, ev);
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
    assert!(c.detail.contains("allow_source_builds"), "{}", c.detail);
    rec.allow_source_builds = vec!["six".into()];
    let c = wheelhouse_check("codex-agent", &reqs, &rec, ev);
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail
            .contains("built here from the sdist https://files.pythonhosted.org/six-1.16.0.tar.gz")
            && c.detail
                .contains("build log logs/dependencies/wheelhouse/download-1.stdout"),
        "{}",
        c.detail
    );
}

#[test]
fn a_requirement_with_only_an_sdist_is_refused_naming_it_the_sdist_and_the_profile_key() {
    let ev = Path::new("/ev");
    let reqs = vec!["docopt==0.6.2".to_string()];
    let mut d = download(false);
    let f = d.failure.as_mut().unwrap();
    f.requirement = Some("docopt==0.6.2".into());
    f.sdists = vec!["https://files.pythonhosted.org/a2/docopt-0.6.2.tar.gz".into()];
    d.log = "logs/dependencies/wheelhouse/resolve-1".into();
    let c = wheelhouse_check("codex-agent", &reqs, &record(Some(d)), ev);
    assert_eq!(c.result, CheckResult::Fail);
    for needle in [
        "`docopt==0.6.2` has no",
        "only the sdist https://files.pythonhosted.org/a2/docopt-0.6.2.tar.gz",
        "refused (nothing was built)",
        "allow_source_builds = [\"docopt\"]",
        "/ev/logs/dependencies/wheelhouse/resolve-1.stdout",
    ] {
        assert!(c.detail.contains(needle), "{needle}: {}", c.detail);
    }
}

#[test]
fn the_pip_steps_sandbox_is_a_check_that_warns_when_unconfined() {
    use crate::evidence::sandbox::SandboxRecord;
    let mut rec = record(Some(download(true)));
    assert!(pip_sandbox_check(&rec).is_none());
    let confined = SandboxRecord {
        kind: "bwrap".into(),
        program: Some("/usr/bin/bwrap".into()),
        version: Some("bubblewrap 0.8.0".into()),
        own_pid_namespace: true,
        dies_with_verifier: true,
        network: Some(crate::evidence::sandbox::Network::Shared),
        read_only: vec![],
        writable: vec!["/ev/roots/dependencies/wheelhouse".into()],
        unconfined_because: None,
    };
    rec.downloads[0].sandbox = Some(confined.clone());
    let c = pip_sandbox_check(&rec).unwrap();
    assert_eq!(
        (c.name.as_str(), c.result),
        ("pip-sandbox", CheckResult::Pass)
    );
    rec.downloads[0].sandbox = Some(SandboxRecord {
        kind: "none".into(),
        own_pid_namespace: false,
        dies_with_verifier: false,
        unconfined_because: Some("VCC_BWRAP=/nonexistent".into()),
        ..confined
    });
    let c = pip_sandbox_check(&rec).unwrap();
    assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
    assert!(c.detail.contains("ran unconfined"), "{}", c.detail);
}

#[test]
fn installed_distributions_outside_the_wheelhouse_are_named() {
    let installed = [
        InstalledDistribution {
            name: "six".into(),
            version: "1.16.0".into(),
        },
        InstalledDistribution {
            name: "requests".into(),
            version: "2.32.0".into(),
        },
    ];
    let (from, foreign) = wheelhouse_sources(&installed, &[six()]);
    assert_eq!(from, [six().name]);
    assert_eq!(foreign, ["requests 2.32.0"]);
    let (from, foreign) = wheelhouse_sources(&installed[..1], &[six()]);
    assert_eq!((from.len(), foreign.len()), (1, 0));
}

#[test]
fn names_are_normalised_as_pep_503() {
    assert_eq!(normalise("LangBot_Plugin"), "langbot-plugin");
    assert_eq!(
        normalise("langbot.plugin-0.6.0b5.dist-info"),
        "langbot-plugin-0-6-0b5-dist-info"
    );
    assert_eq!(normalise("__init__.py"), "init-py");
}

#[test]
fn shadow_copies_are_found_at_any_depth_and_spelling() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("site-packages/langbot_plugin")).unwrap();
    std::fs::create_dir_all(
        d.path()
            .join("site-packages/LangBot_Plugin-0.6.0b3.dist-info"),
    )
    .unwrap();
    std::fs::create_dir_all(d.path().join("site-packages/requests")).unwrap();
    std::fs::write(
        d.path()
            .join("site-packages/requests/langbot_plugin_compat.py"),
        b"",
    )
    .unwrap();
    let mut found = shadow_copies(d.path()).unwrap();
    found.sort();
    assert_eq!(
        found,
        [
            "site-packages/LangBot_Plugin-0.6.0b3.dist-info",
            "site-packages/langbot_plugin",
            "site-packages/requests/langbot_plugin_compat.py",
        ]
    );
    let clean = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(clean.path().join("site-packages/six")).unwrap();
    assert!(shadow_copies(clean.path()).unwrap().is_empty());
}

#[test]
fn installed_distributions_come_from_dist_info_metadata() {
    let d = tempfile::tempdir().unwrap();
    let di = d.path().join("six-1.17.0.dist-info");
    std::fs::create_dir_all(&di).unwrap();
    std::fs::write(
        di.join("METADATA"),
        "Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n\nName: not-a-header\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.path().join("six")).unwrap();
    assert_eq!(
        installed_distributions(d.path()).unwrap(),
        [InstalledDistribution {
            name: "six".into(),
            version: "1.17.0".into()
        }]
    );
    let bad = d.path().join("broken-1.0.dist-info");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("METADATA"), "Name: broken\n").unwrap();
    assert!(installed_distributions(d.path())
        .unwrap_err()
        .contains("no `Version` header"));
}

// ---- decision counterexamples ----

const SHA: &str = "d770754e2b90977aa2c4f4f576ae8f3acbdc61f9aa7d9ebd25d2bb6fe8f305ab";
const ROOT: &str = "/ev/roots/dependencies/codex-agent/data/environments/sha256/e1";
const INDEX: &str = "file:///ev/wheelhouse/simple/";

fn environment() -> ProbeEnvironment {
    ProbeEnvironment {
        digest: "e1".into(),
        artifact_digest: SHA.into(),
        requirements_digest: "r1".into(),
        runtime_fingerprint: "cp311-0.6.0b5-oss_dev".into(),
        root_path: ROOT.into(),
        site_packages_path: format!("{ROOT}/site-packages"),
        ready_readback: true,
        ready_marker: json!({"digest": "e1", "artifact_digest": SHA}),
    }
}

fn report(environments_before: &[&str]) -> ProbeReport {
    ProbeReport {
        runtime_profile: "oss_dev".into(),
        pip_index_args: vec!["-i".into(), INDEX.into()],
        environments_before: environments_before.iter().map(|e| e.to_string()).collect(),
        requirements: Some(vec!["six==1.16.0".into()]),
        requirement_names: Some(vec!["six".into()]),
        environment: Some(environment()),
        error: None,
    }
}

/// Two preparations of one archive needing `six`, installed from the wheelhouse.
fn good() -> Observation {
    let rel = "roots/dependencies/codex-agent/data/environments/sha256/e1";
    Observation {
        folder: "codex-agent".into(),
        archive: "packages/codex-agent/a.lbpkg".into(),
        archive_sha256: SHA.into(),
        log_dir: "/ev/logs/dependencies".into(),
        network: "private network namespace (unshare --net)".into(),
        expected_index: Some(vec!["-i".into(), INDEX.into()]),
        wheelhouse_files: vec![six()],
        runs: vec![report(&[]), report(&["e1"])],
        stopped: None,
        environment: Some(EnvironmentObservation {
            expected_root: ROOT.into(),
            site_packages: format!("{ROOT}/site-packages"),
            env_rel: rel.into(),
            marker_rel: format!("{rel}/.ready.json"),
            marker: Some(json!({"digest": "e1", "artifact_digest": SHA})),
            marker_error: None,
            modes: vec![
                DirMode {
                    path: rel.into(),
                    mode: Some(0o555),
                    error: None,
                },
                DirMode {
                    path: format!("{rel}/site-packages"),
                    mode: Some(0o555),
                    error: None,
                },
            ],
            shadow: Some(vec![]),
            shadow_error: None,
            installed: Some(vec![InstalledDistribution {
                name: "six".into(),
                version: "1.16.0".into(),
            }]),
            installed_error: None,
            wheel_mismatches: vec![],
        }),
    }
}

fn named(checks: &[Check], name: &str) -> Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks:#?}"))
        .clone()
}

fn failing(obs: &Observation, name: &str, needles: &[&str]) -> Check {
    let c = named(&decide(obs), name);
    assert_eq!(c.result, CheckResult::Fail, "{name}: {}", c.detail);
    for n in needles {
        assert!(c.detail.contains(n), "{name}: {n:?} not in {}", c.detail);
    }
    c
}

#[test]
fn two_preparations_from_the_wheelhouse_pass_and_each_pass_carries_observed_values() {
    let checks = decide(&good());
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "prepare",
            "same-digest",
            "ready",
            "no-shadow-sdk",
            "installed"
        ]
    );
    crate::evidence::testing::assert_all_pass_with_observed_object(&checks);
    assert!(named(&checks, "prepare")
        .detail
        .contains(&format!("`-i {INDEX}`")));
    assert_eq!(
        named(&checks, "same-digest").observed.unwrap()["digests"],
        json!(["e1", "e1"])
    );
    assert!(named(&checks, "installed").detail.contains("six 1.16.0"));
    let r = super::record(&good()).unwrap();
    assert_eq!(r.digests, ["e1", "e1"]);
    assert_eq!(r.wheelhouse_files, [six().name]);
    assert!(!r.nothing_installed);
    assert_eq!(r.requirements_digest.as_deref(), Some("r1"));
}

#[test]
fn refuses_when_a_preparation_is_refused_by_the_sdk() {
    let mut obs = good();
    obs.runs.truncate(1);
    obs.environment = None;
    obs.stopped = Some(StoppedRun {
        run: 2,
        runtime_profile: Some("oss_dev".into()),
        sdk_error: Some("DependencyEnvironmentPreparationError: pip options".into()),
        probe_error: None,
    });
    let checks = decide(&obs);
    assert_eq!(checks.len(), 1);
    let c = failing(
        &obs,
        "prepare",
        &[
            "(run 2 of 2, runtime profile oss_dev) to succeed, found it refused: DependencyEnvironmentPreparationError: pip options",
            "`dependency_prepare_failed`: fix the candidate's requirements.txt",
        ],
    );
    assert_eq!(c.observed.unwrap()["run"], 2);
    assert!(super::record(&obs).is_none());
}

#[test]
fn a_probe_that_did_not_report_is_not_observed_and_does_not_blame_the_requirements() {
    let mut obs = good();
    obs.runs.clear();
    obs.environment = None;
    obs.stopped = Some(StoppedRun {
        run: 1,
        runtime_profile: None,
        sdk_error: None,
        probe_error: Some("exit status 1: FileNotFoundError".into()),
    });
    let c = failing(
        &obs,
        "prepare",
        &["not observed: run 1 of 2: exit status 1"],
    );
    assert!(!c.detail.contains("requirements.txt"), "{}", c.detail);
}

#[test]
fn refuses_when_the_installer_could_reach_another_index() {
    let mut obs = good();
    obs.runs[1].pip_index_args = vec!["-i".into(), "https://pypi.org/simple".into()];
    failing(
        &obs,
        "prepare",
        &["could have reached another index", "harness defect"],
    );
    let mut obs = good();
    obs.expected_index = None;
    failing(
        &obs,
        "prepare",
        &["expected the SDK's installer to read only the run's wheelhouse"],
    );
}

#[test]
fn refuses_two_preparations_with_different_digests_as_one_finding() {
    let mut obs = good();
    let e = obs.runs[1].environment.as_mut().unwrap();
    e.digest = "e2".into();
    e.root_path = "/ev/roots/dependencies/codex-agent/data/environments/sha256/e2".into();
    e.site_packages_path = format!("{}/site-packages", e.root_path);
    failing(
        &obs,
        "same-digest",
        &["found [\"e1\", \"e2\"]", "not stable here"],
    );
    // The second environment's other path is that same finding, not a second one.
    let ready = named(&decide(&obs), "ready");
    assert_eq!(ready.result, CheckResult::Pass, "{}", ready.detail);
}

#[test]
fn refuses_an_environment_that_does_not_read_back_ready() {
    type Mutation = Box<dyn Fn(&mut Observation)>;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "run 1 did not read the environment back ready through get_ready",
            Box::new(|o| o.runs[0].environment.as_mut().unwrap().ready_readback = false),
        ),
        (
            "run 2 reported the environment at /elsewhere",
            Box::new(|o| o.runs[1].environment.as_mut().unwrap().root_path = "/elsewhere".into()),
        ),
        (
            "run 1 reported the environment at",
            Box::new(|o| o.runs[0].environment.as_mut().unwrap().site_packages_path = "/x".into()),
        ),
        (
            "run 1 prepared it for artifact ff",
            Box::new(|o| o.runs[0].environment.as_mut().unwrap().artifact_digest = "ff".into()),
        ),
        (
            "the second run did not find the first run's environment e1 published",
            Box::new(|o| o.runs[1].environment_before_clear()),
        ),
        (
            ".ready.json: unreadable (missing)",
            Box::new(|o| {
                let e = o.environment.as_mut().unwrap();
                e.marker = None;
                e.marker_error = Some("missing".into());
            }),
        ),
        (
            "names digest \"e9\"",
            Box::new(|o| {
                o.environment.as_mut().unwrap().marker =
                    Some(json!({"digest": "e9", "artifact_digest": SHA}))
            }),
        ),
        (
            "names digest \"e1\" and artifact \"ff\"",
            Box::new(|o| {
                o.environment.as_mut().unwrap().marker =
                    Some(json!({"digest": "e1", "artifact_digest": "ff"}))
            }),
        ),
        (
            "the SDK-reported ready marker differs from the file",
            Box::new(|o| o.runs[1].environment.as_mut().unwrap().ready_marker = json!({})),
        ),
        (
            "site-packages is writable (mode 755)",
            Box::new(|o| o.environment.as_mut().unwrap().modes[1].mode = Some(0o755)),
        ),
        (
            "is writable (mode 575)",
            Box::new(|o| o.environment.as_mut().unwrap().modes[0].mode = Some(0o575)),
        ),
    ];
    for (needle, mutate) in cases {
        let mut obs = good();
        mutate(&mut obs);
        failing(&obs, "ready", &[needle, "a worker would not start on it"]);
    }
}

impl ProbeReport {
    fn environment_before_clear(&mut self) {
        self.environments_before.clear();
    }
}

#[test]
fn a_missing_environment_is_one_finding_under_ready() {
    let mut obs = good();
    let e = obs.environment.as_mut().unwrap();
    e.modes[0].mode = None;
    e.modes[0].error = Some("No such file or directory (os error 2)".into());
    e.shadow = None;
    e.shadow_error = Some("cannot walk /ev/x: No such file".into());
    e.installed = None;
    e.installed_error = Some("cannot read /ev/x/site-packages: No such file".into());
    let ready = failing(&obs, "ready", &["No such file or directory"]);
    assert_eq!(ready.consequence_of, None);
    for name in ["no-shadow-sdk", "installed"] {
        let c = failing(&obs, name, &["not observed"]);
        assert_eq!(c.consequence_of.as_deref(), Some("ready"), "{name}");
    }
    // A walk failing inside an existing environment is a finding of its own.
    let mut obs = good();
    let e = obs.environment.as_mut().unwrap();
    e.shadow = None;
    e.shadow_error = Some("cannot walk: permission denied".into());
    assert_eq!(
        failing(&obs, "no-shadow-sdk", &["permission denied"]).consequence_of,
        None
    );
}

#[test]
fn refuses_an_sdk_copy_in_the_environment() {
    let mut obs = good();
    obs.environment.as_mut().unwrap().shadow = Some(vec![
        "site-packages/langbot_plugin".into(),
        "site-packages/langbot_plugin-0.6.0b3.dist-info".into(),
    ]);
    let c = failing(
        &obs,
        "no-shadow-sdk",
        &[
            "found `site-packages/langbot_plugin`, `site-packages/langbot_plugin-0.6.0b3.dist-info`",
            "remove whatever requirement pulls it in",
        ],
    );
    assert_eq!(
        c.observed.unwrap()["found"][0],
        "site-packages/langbot_plugin"
    );
}

#[test]
fn refuses_a_distribution_that_is_no_wheelhouse_file() {
    let mut obs = good();
    obs.environment
        .as_mut()
        .unwrap()
        .installed
        .as_mut()
        .unwrap()
        .push(InstalledDistribution {
            name: "requests".into(),
            version: "2.32.0".into(),
        });
    failing(
        &obs,
        "installed",
        &[
            "found requests 2.32.0 with no wheelhouse file",
            "installed from somewhere else",
        ],
    );
    // Same name, another version: not the wheelhouse's file either.
    let mut obs = good();
    obs.environment
        .as_mut()
        .unwrap()
        .installed
        .as_mut()
        .unwrap()[0]
        .version = "1.17.0".into();
    failing(
        &obs,
        "installed",
        &["found six 1.17.0 with no wheelhouse file"],
    );
}

#[test]
fn refuses_an_install_the_requirements_did_not_ask_for() {
    let mut obs = good();
    for r in &mut obs.runs {
        r.requirements = Some(vec![]);
        r.requirement_names = Some(vec![]);
    }
    failing(
        &obs,
        "installed",
        &["expected nothing installed", "found six 1.16.0"],
    );
    obs.environment.as_mut().unwrap().installed = Some(vec![]);
    let c = named(&decide(&obs), "installed");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(c.detail.contains("nothing was installed"));
    assert!(super::record(&obs).unwrap().nothing_installed);
}

#[test]
fn refuses_a_requirement_with_no_installed_distribution() {
    let mut obs = good();
    for r in &mut obs.runs {
        r.requirements = Some(vec!["six==1.16.0".into(), "attrs".into()]);
        r.requirement_names = Some(vec!["six".into(), "attrs".into()]);
    }
    failing(
        &obs,
        "installed",
        &["found none for [\"attrs\"]", "fix the requirement names"],
    );
    // Names compare as PEP 503 names.
    let mut obs = good();
    obs.runs[0].requirement_names = Some(vec!["SIX".into()]);
    assert_eq!(named(&decide(&obs), "installed").result, CheckResult::Pass);
}

#[test]
fn an_archive_admission_refused_is_sent_back_to_admission_not_to_run_it() {
    let refused = crate::evidence::AdmissionRecord {
        accepted: false,
        refusal: Some("ValueError: unsafe archive path '../x'".into()),
        marker: None,
        code_dir: None,
        installed_sdk_version: "0.6.0b5".into(),
        sdk_requirements: vec![],
    };
    let c = not_admitted("codex-agent", Some(&refused));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("did not admit this archive (ValueError: unsafe archive path"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("fix what admission names"),
        "{}",
        c.detail
    );
    assert!(
        !c.detail.contains("run the admission gate first"),
        "{}",
        c.detail
    );
    let c = not_admitted("codex-agent", None);
    assert!(
        c.detail.contains("run the admission gate first"),
        "{}",
        c.detail
    );
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_refuses_a_candidate_admission_did_not_admit() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.candidates = vec![testing::bare_candidate("demo")];
    let (checks, after) = testing::run(&Dependencies, &ctx);
    let checks = checks.unwrap();
    testing::assert_none_pass(&checks);
    assert!(checks
        .iter()
        .any(|c| c.name == "prepare" && c.candidate.as_deref() == Some("demo")));
    assert!(after.candidates[0].dependencies.is_none());
    assert_eq!(Dependencies.id(), "dependencies");
}

#[test]
fn the_run_reports_each_candidate_once_in_the_order_the_gate_learns_it() {
    let folder = good().folder;
    let mut download = download(true);
    download.candidates = vec![folder.clone(), "panics".into()];
    let obs = RunObservation {
        pip_config: None,
        evidence_dir: "/evidence".into(),
        wheelhouse: Some(record(Some(download))),
        candidates: vec![
            CandidateObservation::Read {
                folder: folder.clone(),
                requirements: vec!["six==1.16.0".into()],
                prepared: Some(Prepared::Observed(Box::new(good()))),
            },
            CandidateObservation::NotAdmitted {
                folder: "refused".into(),
                admission: None,
            },
            CandidateObservation::Unreadable {
                folder: "unread".into(),
                error: "not observed: the probe crashed".into(),
            },
            CandidateObservation::Read {
                folder: "panics".into(),
                requirements: vec!["six==1.16.0".into()],
                prepared: Some(Prepared::Panicked),
            },
        ],
    };
    let checks = decide_all(&obs);
    let names: Vec<String> = checks
        .iter()
        .map(|c| format!("{} {}", c.candidate.as_deref().unwrap_or("-"), c.name))
        .collect();
    let at = |s: &str| {
        names
            .iter()
            .position(|n| n == s)
            .unwrap_or_else(|| panic!("{s} in {names:?}"))
    };
    assert!(at("refused prepare") < at("unread wheelhouse"));
    assert!(at("unread wheelhouse") < at(&format!("{folder} wheelhouse")));
    assert!(at("panics wheelhouse") < at(&format!("{folder} prepare")));
    let panicked = &checks[at("panics prepare")];
    assert_eq!(panicked.result, crate::evidence::CheckResult::Fail);
    assert!(
        panicked.detail.contains("harness defect"),
        "{}",
        panicked.detail
    );
    assert_eq!(
        checks[at("unread wheelhouse")].detail,
        "not observed: the probe crashed"
    );
    assert_eq!(
        checks[at("unread wheelhouse")].result,
        crate::evidence::CheckResult::Fail
    );
    assert_eq!(
        checks
            .iter()
            .filter(|c| c.candidate.as_deref() == Some("refused"))
            .count(),
        1
    );
    // A candidate whose download failed is not prepared: its wheelhouse check alone.
    let mut obs = obs;
    obs.candidates.truncate(1);
    if let CandidateObservation::Read { prepared, .. } = &mut obs.candidates[0] {
        *prepared = None;
    }
    let checks = decide_all(&obs);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0].name, "wheelhouse");
    // Without a wheelhouse nothing is judged about downloads.
    obs.wheelhouse = None;
    assert!(decide_all(&obs).is_empty());
}

#[test]
fn refuses_a_distribution_whose_files_are_not_its_wheelhouse_wheels() {
    let mut obs = good();
    let mismatch = "/env/site-packages/six-1.16.0.dist-info (six 1.16.0): not installed from a \
                    wheelhouse wheel of that name and version: expected the 5 rows of \
                    six-1.16.0-py2.py3-none-any.whl's RECORD";
    obs.environment.as_mut().unwrap().wheel_mismatches = vec![mismatch.into()];
    failing(
        &obs,
        "installed",
        &[
            mismatch,
            "installed as that wheel ships it (its RECORD's rows and files)",
            "see pip-config",
        ],
    );
    let c = named(&decide(&obs), "installed");
    assert_eq!(
        c.observed.as_ref().unwrap()["wheel_mismatches"][0],
        mismatch
    );
}

/// The requirements `admission` handed on (`RunContext::admitted_requirements`)
/// are taken as the SDK read them, a refusal named as the SDK's, and start
/// no probe; only a candidate admission did not hand on goes to the
/// `requirements` probe (here one whose interpreter cannot start).
#[test]
fn requirements_admission_handed_on_start_no_probe_and_a_refusal_names_the_archive() {
    use std::collections::BTreeMap;
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = crate::context::RunContext::for_tests();
    ctx.admitted_requirements
        .insert("a".into(), Ok(vec!["six==1.16.0".into()]));
    ctx.admitted_requirements.insert(
        "b".into(),
        Err("DependencyEnvironmentPreparationError: pip options are not allowed".into()),
    );
    let missing = dir.path().join("no-python");
    let input = |folder: &str| DependencyInput {
        python: missing.clone(),
        evidence_dir: dir.path().to_path_buf(),
        folder: folder.into(),
        archive: dir.path().join("packages").join(folder).join("x.lbpkg"),
        archive_sha256: "0".repeat(64),
        root: dir.path().join(folder),
        env: BTreeMap::new(),
        log_dir: dir.path().join("logs"),
        wrapper: Vec::new(),
        network: String::new(),
        wheelhouse_files: Vec::new(),
    };
    let process = ProbeProcess {
        python: missing.clone(),
        cwd: dir.path().to_path_buf(),
        env: BTreeMap::new(),
        log_dir: dir.path().join("logs"),
        wrapper: Vec::new(),
    };
    let inputs = [input("a"), input("b"), input("c")];
    let reads = observe::requirements_of(&ctx, &process, &inputs);
    assert_eq!(reads.len(), 3);
    assert_eq!(reads[0], Ok(vec!["six==1.16.0".to_string()]));
    let b = reads[1].as_ref().unwrap_err();
    assert!(
        b.starts_with("packages/b/x.lbpkg: expected the SDK to read the archive's requirements.txt, found it refused: DependencyEnvironmentPreparationError: pip options"),
        "{b}"
    );
    let c = reads[2].as_ref().unwrap_err();
    assert!(
        c.starts_with("not observed: reading the requirements"),
        "{c}"
    );
    // The probe was given c's job alone.
    let jobs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("logs/requirements.stdin")).unwrap())
            .unwrap();
    assert_eq!(jobs.as_array().map(Vec::len), Some(1), "{jobs}");
    assert!(jobs[0]["archive"]
        .as_str()
        .unwrap()
        .ends_with("packages/c/x.lbpkg"));

    // Everything handed on: no probe process, no log.
    let logs = dir.path().join("logs2");
    let process = ProbeProcess {
        log_dir: logs.clone(),
        ..process
    };
    let reads = observe::requirements_of(&ctx, &process, &inputs[..2]);
    assert!(reads[0].is_ok() && reads[1].is_err());
    assert!(!logs.exists(), "no requirements probe ran");
}
