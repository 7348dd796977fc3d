//! Adversarial tests of the runtime gates (`admission`, `dependencies`,
//! `discovery-rpc`), with the genuine SDK from `$PYTHON`: each test drives a
//! check into a situation where it used to report something it did not
//! observe, and asserts that the check now says what it observed.

use crate::common;

use common::{
    candidate, check, detail, fixture_repo, git, make_writable, processes_under, python,
    read_evidence, shared_dependencies_run,
};
use std::collections::BTreeMap;
use std::path::Path;
use verify_coding_candidates::evidence::CheckResult;
use verify_coding_candidates::gates::{admission, dependencies};
use verify_coding_candidates::process;

/// No process whose cwd lies under `dir` or whose environment names it.
fn assert_nothing_survives(dir: &Path) {
    let found = processes_under(dir);
    assert!(
        found.is_empty(),
        "processes of the run survived it: {found:#?}"
    );
}

/// A private environment for a probe: the harness's allowlist plus HOME and
/// TMPDIR under `root`.
fn probe_env(root: &Path) -> BTreeMap<String, String> {
    let home = root.join("home");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let mut env = process::base_env();
    env.insert("HOME".into(), home.display().to_string());
    env.insert("TMPDIR".into(), tmp.display().to_string());
    env.insert("PYTHONDONTWRITEBYTECODE".into(), "1".into());
    env
}

/// A Runner that completes without any message used to pass `runner-probe`
/// with the reply `"null"`: the host turned the missing content into the
/// text `null`, so the "no reply" condition could never fail.
#[test]
fn a_runner_completing_without_a_reply_fails_the_runner_probe() {
    let repo = fixture_repo(&[]);
    let runner = repo
        .root
        .join("Runner/codex-agent/components/runner/default.py");
    let text = std::fs::read_to_string(&runner).unwrap();
    let patched = text.replace(
        "            message=Message(role=\"assistant\", content=reply),\n",
        "",
    );
    assert_ne!(text, patched, "the fixture runner changed shape");
    std::fs::write(&runner, patched).unwrap();
    git(&repo.root, &["commit", "-q", "-a", "-m", "no reply"]);

    let (out, _keep, dir) = common::run_only(&repo.root, &python(), "discovery-rpc", &[]);
    let evidence = read_evidence(&dir);
    assert_nothing_survives(&dir);
    make_writable(&dir);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a missing reply must fail the run"
    );
    let c = check(
        &evidence,
        "discovery-rpc",
        "runner-probe",
        Some("codex-agent"),
    );
    assert_eq!(c["result"], "fail", "{}", detail(c));
    assert!(detail(c).contains("without a reply"), "{}", detail(c));
    assert!(
        c["observed"]["probes"][0]["reply"].is_null(),
        "no reply was observed, none may be recorded: {}",
        c["observed"]
    );
    // The genuine candidates still pass: their replies were observed.
    for folder in ["acp-agent-runner", "claude-code-agent"] {
        let c = check(&evidence, "discovery-rpc", "runner-probe", Some(folder));
        assert_eq!(c["result"], "pass", "{folder}: {}", detail(c));
    }
    let c = check(&evidence, "discovery-rpc", "teardown", None);
    assert_eq!(c["result"], "pass", "{}", detail(c));
}

/// An archive the harness cannot read is not an archive the SDK refused: the
/// admission probe used to catch the harness's own `open()` failure together
/// with `install_package` and report it as the SDK's refusal.
#[test]
fn an_unreadable_archive_is_not_observed_rather_than_refused_by_the_sdk() {
    let tmp = tempfile::tempdir().unwrap();
    let evidence = tmp.path().join("evidence");
    let extracted = evidence.join("extracted/codex-agent");
    std::fs::create_dir_all(&extracted).unwrap();
    std::fs::write(
        extracted.join("requirements.txt"),
        "langbot-plugin==0.6.0b5\n",
    )
    .unwrap();
    let root = evidence.join("roots/admission/codex-agent");
    std::fs::create_dir_all(&root).unwrap();
    let logs = evidence.join("logs/admission");
    std::fs::create_dir_all(&logs).unwrap();
    let input = admission::AdmissionInput {
        python: python(),
        evidence_dir: evidence.clone(),
        folder: "codex-agent".into(),
        archive: evidence.join("packages/codex-agent/missing.lbpkg"),
        archive_sha256: "ab".repeat(32),
        extracted,
        sdk_version: "0.6.0b5".into(),
        root: root.clone(),
        env: probe_env(&root),
        log_stem: logs.join("codex-agent"),
    };
    let outcome = admission::admit(
        &input,
        admission::AdmissionOptions {
            require_sdk_pin: true,
        },
    );
    let store = outcome
        .checks
        .iter()
        .find(|c| c.name == "artifact-store")
        .expect("an artifact-store check");
    assert_eq!(store.result, CheckResult::Fail);
    assert!(
        store.detail.starts_with("not observed"),
        "the SDK never saw these bytes; found: {}",
        store.detail
    );
    assert!(
        !store.detail.contains("refused them"),
        "a harness read failure is not the SDK's refusal: {}",
        store.detail
    );
    make_writable(tmp.path());
}

/// One probe process admits every candidate: an archive it cannot read is
/// that candidate's "not observed" alone; the next archive in the same
/// process is still decided by the SDK (here: refused, as garbage bytes).
#[test]
fn one_unreadable_archive_in_a_batch_spoils_only_its_own_admission() {
    let tmp = tempfile::tempdir().unwrap();
    let evidence = tmp.path().join("evidence");
    let logs = evidence.join("logs/admission");
    std::fs::create_dir_all(&logs).unwrap();
    let probe_root = evidence.join("roots/admission/.probe");
    std::fs::create_dir_all(&probe_root).unwrap();
    let garbage = evidence.join("packages/claude-code-agent/garbage.lbpkg");
    std::fs::create_dir_all(garbage.parent().unwrap()).unwrap();
    std::fs::write(&garbage, b"not a zip archive").unwrap();
    let garbage_sha = verify_coding_candidates::hash::sha256_file(&garbage)
        .unwrap()
        .hex();
    let mut inputs = Vec::new();
    for (folder, archive, sha) in [
        (
            "codex-agent",
            evidence.join("packages/codex-agent/missing.lbpkg"),
            "ab".repeat(32),
        ),
        ("claude-code-agent", garbage.clone(), garbage_sha),
    ] {
        let extracted = evidence.join("extracted").join(folder);
        std::fs::create_dir_all(&extracted).unwrap();
        std::fs::write(
            extracted.join("requirements.txt"),
            "langbot-plugin==0.6.0b5\n",
        )
        .unwrap();
        let root = evidence.join("roots/admission").join(folder);
        std::fs::create_dir_all(&root).unwrap();
        inputs.push(admission::AdmissionInput {
            python: python(),
            evidence_dir: evidence.clone(),
            folder: folder.into(),
            archive,
            archive_sha256: sha,
            extracted,
            sdk_version: "0.6.0b5".into(),
            root: root.clone(),
            env: probe_env(&root),
            log_stem: logs.join(folder),
        });
    }
    let process = admission::ProbeProcess {
        python: python(),
        cwd: probe_root.clone(),
        env: probe_env(&probe_root),
        log_stem: logs.join("probe"),
    };
    let outcomes = admission::admit_batch(
        &process,
        &inputs,
        admission::AdmissionOptions {
            require_sdk_pin: true,
        },
    );
    assert_eq!(outcomes.len(), 2);
    let store = |i: usize| {
        outcomes[i]
            .checks
            .iter()
            .find(|c| c.name == "artifact-store")
            .expect("an artifact-store check")
            .clone()
    };
    let missing = store(0);
    assert_eq!(missing.result, CheckResult::Fail);
    assert!(
        missing.detail.starts_with("not observed") && missing.detail.contains("missing.lbpkg"),
        "{}",
        missing.detail
    );
    let refused = store(1);
    assert_eq!(refused.result, CheckResult::Fail);
    assert!(
        !refused.detail.starts_with("not observed"),
        "the SDK saw the second archive and refused it: {}",
        refused.detail
    );
    assert!(
        outcomes[1].record.is_some() && outcomes[0].record.is_none(),
        "only the observed admission has a record"
    );
    // One interpreter start for both.
    assert!(logs.join("probe.cmd").is_file());
    assert!(!logs.join("codex-agent.cmd").exists());
    make_writable(tmp.path());
}

/// The same for dependency preparation: a missing archive is not the SDK
/// refusing the candidate's requirements.
#[test]
fn an_unreadable_archive_is_not_a_dependency_refusal() {
    let tmp = tempfile::tempdir().unwrap();
    let evidence = tmp.path().join("evidence");
    let root = evidence.join("roots/dependencies/codex-agent");
    std::fs::create_dir_all(&root).unwrap();
    let log_dir = evidence.join("logs/dependencies/codex-agent");
    std::fs::create_dir_all(&log_dir).unwrap();
    let input = dependencies::DependencyInput {
        python: python(),
        evidence_dir: evidence.clone(),
        folder: "codex-agent".into(),
        archive: evidence.join("packages/codex-agent/missing.lbpkg"),
        archive_sha256: "ab".repeat(32),
        root: root.clone(),
        env: probe_env(&root),
        log_dir,
        wrapper: Vec::new(),
        network: "none (test)".into(),
        wheelhouse_files: Vec::new(),
    };
    let (checks, record) = dependencies::prepare_twice(&input);
    assert!(record.is_none());
    let prepare = checks
        .iter()
        .find(|c| c.name == "prepare")
        .expect("a prepare check");
    assert_eq!(prepare.result, CheckResult::Fail);
    assert!(
        prepare.detail.starts_with("not observed"),
        "the SDK never saw these bytes; found: {}",
        prepare.detail
    );
    assert!(
        !prepare.detail.contains("requirements.txt"),
        "a harness read failure must not send the reader to requirements.txt: {}",
        prepare.detail
    );
    make_writable(tmp.path());
}

/// The gate prepares every candidate through one probe process per
/// preparation run (the requirements are admission's, handed on), whatever
/// the number of candidates; in
/// such a batch, an archive the probe cannot read is that candidate's "not
/// observed" alone: the next candidate's requirements are still read and its
/// environment still prepared twice, with one digest, by the SDK.
#[test]
fn one_unreadable_archive_in_a_batch_spoils_only_its_own_preparation() {
    // Real archives, admitted and prepared by the gate itself (the run the
    // admission tests read too).
    let run = shared_dependencies_run();
    let dir = &run.evidence;
    let ev = read_evidence(dir);
    assert_eq!(run.code, 0, "{ev:#}");
    let gate_logs = dir.join("logs/dependencies");
    // Every start of the dependencies probe logs its source's first line.
    let probe_line = verify_coding_candidates::python::DEPENDENCIES_PROBE
        .lines()
        .next()
        .unwrap();
    let mut probes: Vec<String> = walk_files(&gate_logs)
        .into_iter()
        .filter(|p| p.ends_with(".cmd"))
        .filter(|p| {
            std::fs::read_to_string(gate_logs.join(p))
                .unwrap()
                .contains(probe_line)
        })
        .collect();
    probes.sort();
    assert_eq!(
        probes,
        ["run-1.cmd", "run-2.cmd"],
        "one probe process per preparation run for the three candidates, and \
         none to read the requirements admission handed on"
    );
    for folder in ["acp-agent-runner", "claude-code-agent", "codex-agent"] {
        assert!(
            !gate_logs.join(folder).exists(),
            "no per-candidate probe log: {folder}"
        );
        let digests = &candidate(&ev, folder)["dependencies"]["digests"];
        assert_eq!(
            digests.as_array().map(Vec::len),
            Some(2),
            "{folder}: {digests}"
        );
    }

    let tmp = tempfile::tempdir().unwrap();
    let evidence = tmp.path().join("evidence");
    let logs = evidence.join("logs/dependencies");
    std::fs::create_dir_all(&logs).unwrap();
    let probe_root = evidence.join("roots/dependencies/.probe");
    let mut env = probe_env(&probe_root);
    verify_coding_candidates::wheelhouse::point_at_wheelhouse(&mut env, &evidence);
    let archive = &candidate(&ev, "claude-code-agent")["archive"];
    let mut inputs = Vec::new();
    for (folder, path, sha) in [
        (
            "codex-agent",
            evidence.join("packages/codex-agent/missing.lbpkg"),
            "ab".repeat(32),
        ),
        (
            "claude-code-agent",
            dir.join(archive["path"].as_str().unwrap()),
            archive["sha256"].as_str().unwrap().to_string(),
        ),
    ] {
        let root = evidence.join("roots/dependencies").join(folder);
        inputs.push(dependencies::DependencyInput {
            python: python(),
            evidence_dir: evidence.clone(),
            folder: folder.into(),
            archive: path,
            archive_sha256: sha,
            root: root.clone(),
            env: probe_env(&root),
            log_dir: logs.join(folder),
            wrapper: Vec::new(),
            network: "none (test)".into(),
            wheelhouse_files: Vec::new(),
        });
    }
    let process = dependencies::ProbeProcess {
        python: python(),
        cwd: probe_root.clone(),
        env,
        log_dir: logs.clone(),
        wrapper: Vec::new(),
    };

    let reads = dependencies::read_requirements_batch(&process, &inputs);
    assert_eq!(reads.len(), 2);
    let unread = reads[0]
        .as_ref()
        .expect_err("the missing archive is not read");
    assert!(
        unread.starts_with("not observed") && unread.contains("missing.lbpkg"),
        "{unread}"
    );
    assert_eq!(
        reads[1].as_deref(),
        Ok(&[][..]),
        "the SDK read the other one"
    );

    let outcomes = dependencies::prepare_batch(&process, &inputs);
    assert_eq!(outcomes.len(), 2);
    let (checks, record) = &outcomes[0];
    assert!(record.is_none());
    let prepare = checks.iter().find(|c| c.name == "prepare").unwrap();
    assert_eq!(prepare.result, CheckResult::Fail);
    assert!(
        prepare.detail.starts_with("not observed: run 1 of 2")
            && prepare.detail.contains("missing.lbpkg"),
        "{}",
        prepare.detail
    );
    let (checks, record) = &outcomes[1];
    for name in [
        "prepare",
        "same-digest",
        "ready",
        "no-shadow-sdk",
        "installed",
    ] {
        let c = checks.iter().find(|c| c.name == name).unwrap();
        assert_eq!(c.result, CheckResult::Pass, "{name}: {}", c.detail);
        assert_eq!(c.candidate.as_deref(), Some("claude-code-agent"));
    }
    let record = record.as_ref().expect("a record for the prepared one");
    assert_eq!(record.digests.len(), 2);
    assert_eq!(record.digests[0], record.digests[1]);

    // One process per kind here too; run 2 had only the job run 1 prepared.
    for stem in ["requirements", "run-1", "run-2"] {
        assert!(logs.join(format!("{stem}.cmd")).is_file(), "{stem}");
    }
    assert!(!logs.join("codex-agent").exists() && !logs.join("claude-code-agent").exists());
    let run_2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(logs.join("run-2.stdout")).unwrap()).unwrap();
    assert_eq!(run_2.as_array().map(Vec::len), Some(1), "{run_2}");
    make_writable(tmp.path());
}

/// Every file under `root`, `/`-separated relative paths.
fn walk_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out
}

/// A `langbot-plugin` line whose environment marker makes the SDK's check
/// crash (`packaging` raises `UndefinedComparison` for `~=` on a non-version)
/// used to count as the SDK "refusing it too": the crash was read as a
/// decision agreeing with the harness's. It is no decision at all.
#[test]
fn an_sdk_check_that_crashes_is_not_an_sdk_decision() {
    let repo = fixture_repo(&[]);
    std::fs::write(
        repo.root.join("Runner/codex-agent/requirements.txt"),
        "langbot-plugin==0.6.0b3 ; platform_release ~= \"x\" or python_version >= \"3\"\n",
    )
    .unwrap();
    git(&repo.root, &["commit", "-q", "-a", "-m", "crashing marker"]);
    let (out, _keep, dir) = common::run_only(&repo.root, &python(), "admission", &[]);
    let evidence = read_evidence(&dir);
    assert_nothing_survives(&dir);
    make_writable(&dir);
    assert_eq!(out.status.code(), Some(1));
    let c = check(
        &evidence,
        "admission",
        "sdk-requirement",
        Some("codex-agent"),
    );
    assert_eq!(c["result"], "fail", "{}", detail(c));
    assert!(
        detail(c).contains("did not decide") && detail(c).contains("UndefinedComparison"),
        "{}",
        detail(c)
    );
    assert!(
        !detail(c).contains("refuses it too"),
        "a crash is not the SDK agreeing: {}",
        detail(c)
    );
    let lines = check(
        &evidence,
        "admission",
        "requirement-lines",
        Some("codex-agent"),
    );
    assert_eq!(lines["result"], "fail", "{}", detail(lines));
    assert!(
        detail(lines).contains("did not decide"),
        "{}",
        detail(lines)
    );
    let record = evidence["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["folder"] == "codex-agent")
        .expect("codex-agent record");
    let decision = record["admission"]["sdk_requirements"][0]["sdk_decision"]
        .as_str()
        .unwrap_or_default();
    assert!(decision.starts_with("undecided"), "{decision}");
}
