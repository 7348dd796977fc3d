use super::*;
use crate::context::VerifiedSdk;
use crate::evidence::CandidateRecord;
use crate::evidence::CheckResult;
use crate::python;

fn verified() -> VerifiedPaths {
    VerifiedPaths {
        package_dir: PathBuf::from("/nonexistent/sp/langbot_plugin"),
        dist_info: PathBuf::from("/nonexistent/sp/langbot_plugin-0.6.0b5.dist-info"),
    }
}

fn spec_at(dir: &str) -> SpecInfo {
    SpecInfo {
        found: true,
        origin: Some(format!("{dir}/__init__.py")),
        locations: vec![dir.into()],
        loader: Some("SourceFileLoader".into()),
    }
}

fn copy(kind: &str, path: &str) -> FoundCopy {
    FoundCopy {
        entry: "/nonexistent/sp".into(),
        kind: kind.into(),
        path: path.into(),
        realpath: path.into(),
        target: None,
        target_copy: None,
    }
}

fn clean_probe() -> ShadowProbe {
    ShadowProbe {
        executable: "/v/bin/python".into(),
        cwd: "/ev/extracted/demo".into(),
        code_dir: "/ev/extracted/demo".into(),
        env: WATCHED_ENV.iter().map(|n| (n.to_string(), false)).collect(),
        env_names: vec!["HOME".into(), "PATH".into()],
        sys_path: vec!["/nonexistent/sp".into()],
        worker_path: vec!["/ev/extracted/demo".into(), "/nonexistent/sp".into()],
        interpreter_spec: spec_at("/nonexistent/sp/langbot_plugin"),
        interpreter_spec_error: None,
        worker_spec: spec_at("/nonexistent/sp/langbot_plugin"),
        worker_spec_error: None,
        found: vec![
            copy("package", "/nonexistent/sp/langbot_plugin"),
            copy(
                "dist-info",
                "/nonexistent/sp/langbot_plugin-0.6.0b5.dist-info",
            ),
        ],
        pth: vec![PthFile {
            file: "/nonexistent/sp/distutils-precedence.pth".into(),
            lines: vec![PthLine {
                kind: "import".into(),
                text: "import os; __import__('_distutils_hack')".into(),
                resolved: None,
                langbot_copy: None,
            }],
            mentions_langbot: false,
            flagged: false,
        }],
        meta_path: vec![
            Finder {
                module: "_distutils_hack".into(),
                qualname: "DistutilsMetaFinder".into(),
                standard: false,
                spec: Some(SpecInfo::default()),
                error: None,
            },
            Finder {
                module: "_frozen_importlib_external".into(),
                qualname: "PathFinder".into(),
                standard: true,
                spec: None,
                error: None,
            },
        ],
        errors: vec![],
    }
}

#[test]
fn a_clean_probe_passes_every_check() {
    let p = clean_probe();
    let v = verified();
    for c in [
        find_spec_check(&p, &v, "demo", &Realpaths::default()),
        sys_path_scan_check(&p, &v, "demo", &Realpaths::default()),
        pth_and_finders_check(&p, &v, "demo", &Realpaths::default()),
        env_leak_check(&p, "demo"),
    ] {
        assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
    }
}

#[test]
fn a_worker_path_shadow_fails_find_spec_naming_the_copy() {
    let mut p = clean_probe();
    p.worker_spec = spec_at("/ev/extracted/demo/langbot_plugin");
    let c = find_spec_check(&p, &verified(), "demo", &Realpaths::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("origin /ev/extracted/demo/langbot_plugin/__init__.py"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("worker's sys.path"), "{}", c.detail);
    assert!(
        !c.detail.contains("interpreter's find_spec"),
        "{}",
        c.detail
    );
}

#[test]
fn a_namespace_or_missing_spec_fails_find_spec() {
    let mut p = clean_probe();
    p.interpreter_spec = SpecInfo {
        found: true,
        origin: None,
        locations: vec![
            "/nonexistent/sp/langbot_plugin".into(),
            "/other/langbot_plugin".into(),
        ],
        loader: None,
    };
    p.worker_spec = SpecInfo::default();
    let c = find_spec_check(&p, &verified(), "demo", &Realpaths::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("/other/langbot_plugin"), "{}", c.detail);
    assert!(c.detail.contains("gives no spec"), "{}", c.detail);
}

#[test]
fn a_second_package_or_dist_info_fails_the_scan() {
    let mut p = clean_probe();
    p.found
        .push(copy("package", "/ev/extracted/demo/langbot_plugin"));
    p.found.push(copy(
        "dist-info",
        "/nonexistent/sp/langbot_plugin-0.6.0b4.dist-info",
    ));
    p.found
        .push(copy("module", "/nonexistent/lib/langbot_plugin.py"));
    let c = sys_path_scan_check(&p, &verified(), "demo", &Realpaths::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("2 `langbot_plugin` package(s)"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("/ev/extracted/demo/langbot_plugin"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("langbot_plugin-0.6.0b4.dist-info"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("module /nonexistent/lib/langbot_plugin.py"),
        "{}",
        c.detail
    );
}

#[test]
fn duplicate_sys_path_entries_count_once_and_foreign_egg_links_pass() {
    let mut p = clean_probe();
    p.found
        .push(copy("package", "/nonexistent/sp/langbot_plugin"));
    let mut link = copy("egg-link", "/nonexistent/sp/other.egg-link");
    link.target = Some("/src/other".into());
    p.found.push(link);
    assert_eq!(
        sys_path_scan_check(&p, &verified(), "demo", &Realpaths::default()).result,
        CheckResult::Pass
    );
    let mut langbot_link = copy("egg-link", "/nonexistent/sp/langbot-plugin.egg-link");
    langbot_link.target = Some("/src/langbot".into());
    p.found.push(langbot_link);
    let c = sys_path_scan_check(&p, &verified(), "demo", &Realpaths::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("egg-link /nonexistent/sp/langbot-plugin.egg-link -> /src/langbot"),
        "{}",
        c.detail
    );
}

#[test]
fn unreadable_entries_are_not_a_pass() {
    let mut p = clean_probe();
    p.errors.push("cannot list /x: Permission denied".into());
    let c = sys_path_scan_check(&p, &verified(), "demo", &Realpaths::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("cannot list /x"), "{}", c.detail);
}

#[test]
fn pth_files_and_finders_pointing_elsewhere_fail() {
    let mut p = clean_probe();
    p.pth.push(PthFile {
        file: "/nonexistent/sp/__editable__.langbot_plugin-0.6.0.pth".into(),
        lines: vec![PthLine {
            kind: "import".into(),
            text: "import __editable___langbot_plugin_0_6_0_finder; __editable___langbot_plugin_0_6_0_finder.install()"
                .into(),
            resolved: None,
            langbot_copy: None,
        }],
        mentions_langbot: true,
        flagged: true,
    });
    p.pth.push(PthFile {
        file: "/nonexistent/sp/vendor.pth".into(),
        lines: vec![PthLine {
            kind: "path".into(),
            text: "../vendor".into(),
            resolved: Some("/nonexistent/vendor".into()),
            langbot_copy: Some("/nonexistent/vendor/langbot_plugin".into()),
        }],
        mentions_langbot: false,
        flagged: true,
    });
    p.meta_path.insert(
        0,
        Finder {
            module: "__editable___langbot_plugin_0_6_0_finder".into(),
            qualname: "_EditableFinder".into(),
            standard: false,
            spec: Some(spec_at("/src/langbot/langbot_plugin")),
            error: None,
        },
    );
    p.meta_path.push(Finder {
        module: "hook".into(),
        qualname: "Sneaky".into(),
        standard: false,
        spec: Some(spec_at("/tmp/x/langbot_plugin")),
        error: None,
    });
    let c = pth_and_finders_check(&p, &verified(), "demo", &Realpaths::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("__editable__.langbot_plugin-0.6.0.pth mentions langbot"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("vendor.pth adds /nonexistent/vendor which holds another copy"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains(
            "__editable___langbot_plugin_0_6_0_finder._EditableFinder is a langbot finder"
        ),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains(
            "hook.Sneaky answers `langbot_plugin` with origin /tmp/x/langbot_plugin/__init__.py"
        ),
        "{}",
        c.detail
    );
}

#[test]
fn a_pth_adding_the_verified_site_is_fine() {
    let mut p = clean_probe();
    p.pth.push(PthFile {
        file: "/nonexistent/sp/self.pth".into(),
        lines: vec![PthLine {
            kind: "path".into(),
            text: ".".into(),
            resolved: Some("/nonexistent/sp".into()),
            langbot_copy: Some("/nonexistent/sp/langbot_plugin".into()),
        }],
        mentions_langbot: false,
        flagged: true,
    });
    assert_eq!(
        pth_and_finders_check(&p, &verified(), "demo", &Realpaths::default()).result,
        CheckResult::Pass
    );
}

#[test]
fn a_leaked_variable_fails_and_a_harness_variable_warns() {
    let mut p = clean_probe();
    p.env.insert("PYTHONSTARTUP".into(), true);
    let c = env_leak_check(&p, "demo");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("found PYTHONSTARTUP"), "{}", c.detail);
    assert!(harness_env_warning(&[]).is_none());
    let w = harness_env_warning(&["PYTHONPATH"]).unwrap();
    assert_eq!(w.result, CheckResult::Warn);
    assert!(
        w.detail.starts_with("PYTHONPATH is set in the harness"),
        "{}",
        w.detail
    );
}

#[test]
fn shadow_names_are_recognised_at_any_depth() {
    let paths = [
        "main.py",
        "langbot_plugin/__init__.py",
        "pkg/vendor/langbot_plugin/api.py",
        "langbot_plugin.py",
        "lib/langbot_plugin.cpython-311-x86_64-linux-gnu.so",
        "docs/langbot_plugin.md",
        "langbot_plugins/x.py",
        "my_langbot_plugin.py",
    ];
    assert_eq!(
        shadow_paths(paths),
        [
            "langbot_plugin/__init__.py",
            "pkg/vendor/langbot_plugin/api.py",
            "langbot_plugin.py",
            "lib/langbot_plugin.cpython-311-x86_64-linux-gnu.so"
        ]
    );
}

#[test]
fn no_shadow_check_names_staged_files_and_members() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub/langbot_plugin")).unwrap();
    std::fs::write(dir.path().join("sub/langbot_plugin/__init__.py"), b"").unwrap();
    std::fs::write(dir.path().join("main.py"), b"").unwrap();
    // Built from JSON so fields other gates add to the record stay out of this test.
    let member = |name: &str| json!({ "name": name, "sha256": "", "size": 0, "mode": null });
    let record: CandidateRecord = serde_json::from_value(json!({
        "folder": "demo",
        "path": "P/demo",
        "manifest": null,
        "archive": {
            "path": "packages/demo/a-demo-0.1.0.lbpkg",
            "sha256": "",
            "size": 0,
            "content_digest": "",
            "members": [member("main.py"), member("langbot_plugin.py")],
            "extracted": null,
        },
    }))
    .expect("a candidate record");
    let c = no_shadow_check(&observe_sources("demo", dir.path(), Some(&record)));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("sub/langbot_plugin, "), "{}", c.detail);
    assert!(
        c.detail.contains("sub/langbot_plugin/__init__.py"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("archive member langbot_plugin.py of packages/demo/a-demo-0.1.0.lbpkg"),
        "{}",
        c.detail
    );

    let clean = tempfile::tempdir().unwrap();
    std::fs::write(clean.path().join("main.py"), b"").unwrap();
    let mut r = record.clone();
    r.archive.as_mut().unwrap().members.truncate(1);
    assert_eq!(
        no_shadow_check(&observe_sources("demo", clean.path(), Some(&r))).result,
        CheckResult::Pass
    );
    assert_eq!(
        no_shadow_check(&observe_sources("demo", clean.path(), None)).result,
        CheckResult::Fail
    );
}

/// Runs the real probes in the genuine interpreter from `$PYTHON`.
fn probe_in(code_dir: &Path, logs: &Path) -> (ShadowProbe, VerifiedPaths) {
    let python = std::env::var_os("PYTHON").filter(|p| !p.is_empty()).map(PathBuf::from).unwrap_or_else(
        || panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)"),
    );
    let env = crate::process::base_env();
    let sdk: crate::gates::sdk_record::SdkProbe = python::Probe {
        python: &python,
        name: "sdk_probe",
        source: python::SDK_PROBE,
        args: &["langbot-plugin".into(), PACKAGE.into()],
        cwd: logs,
        env: env.clone(),
        log_stem: &logs.join("sdk"),
        timeout: python::PROBE_TIMEOUT,
    }
    .run()
    .unwrap();
    let site = PathBuf::from(sdk.site_packages.expect("the SDK is installed"));
    let verified = VerifiedPaths::of(&VerifiedSdk {
        package_dir: site.join(PACKAGE),
        dist_info: PathBuf::from(sdk.dist_info.unwrap()),
        site_packages: site,
    });
    let probe = python::Probe {
        python: &python,
        name: "shadow_probe",
        source: python::SHADOW_PROBE,
        args: &[PACKAGE.into(), code_dir.display().to_string()],
        cwd: code_dir,
        env,
        log_stem: &logs.join("shadow"),
        timeout: python::PROBE_TIMEOUT,
    }
    .run()
    .unwrap();
    (probe, verified)
}

#[test]
fn the_real_probe_finds_a_code_dir_copy_and_passes_a_clean_dir() {
    let logs = tempfile::tempdir().unwrap();
    let clean = tempfile::tempdir().unwrap();
    std::fs::write(clean.path().join("main.py"), b"").unwrap();
    let (probe, verified) = probe_in(clean.path(), logs.path());
    assert_eq!(
        find_spec_check(&probe, &verified, "clean", &Realpaths::of(&probe)).result,
        CheckResult::Pass
    );
    assert_eq!(
        sys_path_scan_check(&probe, &verified, "clean", &Realpaths::of(&probe)).result,
        CheckResult::Pass
    );
    assert_eq!(
        pth_and_finders_check(&probe, &verified, "clean", &Realpaths::of(&probe)).result,
        CheckResult::Pass
    );
    assert_eq!(env_leak_check(&probe, "clean").result, CheckResult::Pass);

    let hostile = tempfile::tempdir().unwrap();
    let shadow = hostile.path().join(PACKAGE);
    std::fs::create_dir(&shadow).unwrap();
    std::fs::write(
        shadow.join("__init__.py"),
        b"# HOSTILE SHADOW FIXTURE, not the SDK.\n",
    )
    .unwrap();
    let (probe, verified) = probe_in(hostile.path(), logs.path());
    let real_init = shadow.canonicalize().unwrap().join("__init__.py");
    let c = find_spec_check(&probe, &verified, "hostile", &Realpaths::of(&probe));
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(&format!(
            "the worker's sys.path [{}",
            hostile.path().display()
        )),
        "{}",
        c.detail
    );
    assert!(
        probe
            .worker_spec
            .origin
            .as_deref()
            .is_some_and(|o| real(o) == real_init),
        "{:?}",
        probe.worker_spec
    );
    // The interpreter as it is (`-I`: no cwd on sys.path) still finds the verified SDK.
    assert!(spec_is_verified(
        &probe.interpreter_spec,
        &verified,
        &Realpaths::of(&probe)
    ));
    let scan = sys_path_scan_check(&probe, &verified, "hostile", &Realpaths::of(&probe));
    assert_eq!(scan.result, CheckResult::Fail);
    assert!(
        scan.detail.contains("2 `langbot_plugin` package(s)"),
        "{}",
        scan.detail
    );
}

// Decision counterexamples over whole observations (no files, no Python),
// by the catalogue's `proves` clauses.

fn candidate(probe: Option<Result<ShadowProbe, String>>) -> CandidateObservation {
    CandidateObservation {
        folder: "demo".into(),
        staged: "/ev/staging/source/P/demo".into(),
        staged_entries: Ok(vec!["main.py".into(), "pkg".into(), "pkg/a.py".into()]),
        archive: Some((
            "packages/demo/a-demo-0.1.0.lbpkg".into(),
            vec!["manifest.yaml".into(), "main.py".into(), "pkg/a.py".into()],
        )),
        code_dir: "/ev/extracted/demo".into(),
        code_dir_exists: probe.is_some(),
        probe,
        real: Realpaths::default(),
    }
}

fn observation(c: CandidateObservation) -> Observation {
    Observation {
        verified: verified(),
        harness_env: vec![],
        candidates: vec![c],
    }
}

fn failed(checks: &[Check]) -> Vec<(&str, Option<&str>)> {
    checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
        .map(|c| (c.name.as_str(), c.consequence_of.as_deref()))
        .collect()
}

#[test]
fn a_clean_observation_passes_five_checks_each_with_what_it_observed() {
    let checks = decide(&observation(candidate(Some(Ok(clean_probe())))));
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "no-shadow-in-candidates",
            "find-spec",
            "sys-path-scan",
            "pth-and-finders",
            "env-leak"
        ]
    );
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
        assert_eq!(c.candidate.as_deref(), Some("demo"));
        let o = c.observed.as_ref().unwrap();
        assert!(
            o.as_object().is_some_and(|m| !m.is_empty()),
            "{}: {o}",
            c.name
        );
    }
    assert_eq!(checks[0].observed.as_ref().unwrap()["staged_entries"], 3);
    assert_eq!(checks[0].observed.as_ref().unwrap()["archive_members"], 3);
}

#[test]
fn a_probe_that_did_not_answer_fails_find_spec_and_the_rest_are_its_consequences() {
    let checks = decide(&observation(candidate(Some(Err(
        "exit 1: Traceback".into()
    )))));
    assert_eq!(
        failed(&checks),
        [
            ("find-spec", None),
            ("sys-path-scan", Some("find-spec")),
            ("pth-and-finders", Some("find-spec")),
            ("env-leak", Some("find-spec")),
        ]
    );
    assert_eq!(checks[1].detail, "not observed: exit 1: Traceback");
    assert_eq!(
        checks[2].detail,
        "not observed: the shadow probe did not run in /ev/extracted/demo"
    );
}

#[test]
fn a_missing_extraction_is_not_observed_never_passed() {
    let checks = decide(&observation(candidate(None)));
    assert_eq!(failed(&checks).len(), 4);
    assert_eq!(
        checks[1].detail,
        "not observed: expected the archive's exact extraction at /ev/extracted/demo, found none; archive-members must extract it first"
    );
    assert_eq!(
        checks[1].observed.as_ref().unwrap()["code_dir_exists"],
        false
    );
}

#[test]
fn refuses_a_copy_in_the_staged_candidate_or_in_the_archive() {
    let mut c = candidate(Some(Ok(clean_probe())));
    c.staged_entries = Ok(vec!["vendor/langbot_plugin/__init__.py".into()]);
    c.archive
        .as_mut()
        .unwrap()
        .1
        .push("langbot_plugin.py".into());
    let checks = decide(&observation(c));
    assert_eq!(failed(&checks), [("no-shadow-in-candidates", None)]);
    assert_eq!(
        checks[0].detail,
        "candidate demo carries its own `langbot_plugin`: staged path /ev/staging/source/P/demo/vendor/langbot_plugin/__init__.py, archive member langbot_plugin.py of packages/demo/a-demo-0.1.0.lbpkg; a worker's sys.path starts with the plugin's code dir, so this copy would shadow the verified SDK: delete it from the plugin"
    );
}

#[test]
fn an_unwalkable_staged_candidate_or_no_archive_is_not_observed_never_passed() {
    let mut c = candidate(Some(Ok(clean_probe())));
    c.staged_entries = Err("cannot walk /x: permission denied".into());
    c.archive = None;
    let checks = decide(&observation(c));
    assert_eq!(
        checks[0].detail,
        "not observed: cannot walk /x: permission denied; no archive is recorded for this candidate; the staged source and the archive must both be searched"
    );
}

#[test]
fn a_worker_path_through_a_symlink_is_judged_by_its_real_path() {
    // The worker's spec names a path that is, once resolved, another copy.
    let mut p = clean_probe();
    p.worker_spec = spec_at("/ev/extracted/demo/link");
    let mut c = candidate(Some(Ok(p.clone())));
    c.real = Realpaths(
        [(
            "/ev/extracted/demo/link".to_string(),
            "/elsewhere/langbot_plugin".to_string(),
        )]
        .into_iter()
        .collect(),
    );
    assert_eq!(failed(&decide(&observation(c))), [("find-spec", None)]);
    // A path that resolves to the verified package is the verified package.
    let mut c = candidate(Some(Ok(p)));
    c.real = Realpaths(
        [
            (
                "/ev/extracted/demo/link".to_string(),
                "/nonexistent/sp/langbot_plugin".to_string(),
            ),
            (
                "/ev/extracted/demo/link/__init__.py".to_string(),
                "/nonexistent/sp/langbot_plugin/__init__.py".to_string(),
            ),
        ]
        .into_iter()
        .collect(),
    );
    assert_eq!(failed(&decide(&observation(c))), []);
}

#[test]
fn refuses_a_watched_variable_that_reaches_the_child_and_warns_for_the_harness() {
    let mut p = clean_probe();
    p.env.insert("PYTHONPATH".into(), true);
    let mut obs = observation(candidate(Some(Ok(p))));
    obs.harness_env = vec!["PYTHONPATH".into()];
    let checks = decide(&obs);
    assert_eq!(checks[0].result, CheckResult::Warn);
    assert_eq!(checks[0].candidate, None);
    assert_eq!(failed(&checks), [("env-leak", None)]);
    let leak = checks
        .iter()
        .find(|c| c.name == "env-leak" && c.candidate.is_some())
        .unwrap();
    assert!(leak.detail.contains("found PYTHONPATH;"), "{}", leak.detail);
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_the_verified_sdk_is_an_error_not_a_pass() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let e = testing::run(&SdkShadow, &testing::ctx(evidence.path()))
        .0
        .unwrap_err();
    assert!(e.contains("run sdk-record first"), "{e}");
    assert_eq!(SdkShadow.id(), "sdk-shadow");
}

#[test]
fn a_spec_is_the_verified_package_only_when_found_every_location_is_it_and_the_origin_inside() {
    let verified = VerifiedPaths {
        package_dir: "/site/langbot_plugin".into(),
        dist_info: "/site/langbot_plugin-0.6.0b5.dist-info".into(),
    };
    let real = Realpaths::default();
    let spec = |found: bool, locations: &[&str], origin: Option<&str>| SpecInfo {
        found,
        origin: origin.map(String::from),
        locations: locations.iter().map(|l| l.to_string()).collect(),
        loader: None,
    };
    let good = spec(
        true,
        &["/site/langbot_plugin"],
        Some("/site/langbot_plugin/__init__.py"),
    );
    assert!(spec_is_verified(&good, &verified, &real));
    // Each clause alone makes it another package.
    let not_found = spec(
        false,
        &["/site/langbot_plugin"],
        Some("/site/langbot_plugin/__init__.py"),
    );
    assert!(!spec_is_verified(&not_found, &verified, &real));
    let no_locations = spec(true, &[], Some("/site/langbot_plugin/__init__.py"));
    assert!(!spec_is_verified(&no_locations, &verified, &real));
    let namespace_with_a_copy = spec(
        true,
        &["/site/langbot_plugin", "/tmp/copy/langbot_plugin"],
        Some("/site/langbot_plugin/__init__.py"),
    );
    assert!(!spec_is_verified(&namespace_with_a_copy, &verified, &real));
    let origin_elsewhere = spec(
        true,
        &["/site/langbot_plugin"],
        Some("/tmp/copy/langbot_plugin/__init__.py"),
    );
    assert!(!spec_is_verified(&origin_elsewhere, &verified, &real));
    let no_origin = spec(true, &["/site/langbot_plugin"], None);
    assert!(!spec_is_verified(&no_origin, &verified, &real));
}

#[test]
fn an_egg_link_of_any_name_whose_target_holds_another_sdk_copy_fails_the_scan() {
    let mut p = clean_probe();
    let mut link = copy("egg-link", "/nonexistent/sp/innocent.egg-link");
    link.target = Some("/src/innocent".into());
    link.target_copy = Some("/src/innocent/langbot_plugin".into());
    p.found.push(link.clone());
    let c = sys_path_scan_check(&p, &verified(), "demo", &Realpaths::default());
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("egg-link /nonexistent/sp/innocent.egg-link -> /src/innocent"),
        "{}",
        c.detail
    );
    // One that leads to the verified package itself is no copy.
    let mut p = clean_probe();
    link.target_copy = Some(verified().package_dir.display().to_string());
    p.found.push(link);
    assert_eq!(
        sys_path_scan_check(&p, &verified(), "demo", &Realpaths::default()).result,
        CheckResult::Pass
    );
}
