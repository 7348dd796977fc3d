//! Adversarial tests of the runtime gates (`admission`, `dependencies`,
//! `discovery-rpc`), with the genuine SDK from `$PYTHON`: each test drives a
//! check into a situation where it used to report something it did not
//! observe, and asserts that the check now says what it observed.

mod common;

use common::{check, evidence_dir, fixture_repo, git, python, read_evidence, verifier};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use verify_coding_candidates::evidence::CheckResult;
use verify_coding_candidates::gates::{admission, dependencies};
use verify_coding_candidates::process;

/// The SDK publishes artifacts read-only; restore write permission so the
/// temporary directory can be removed by a non-root user.
fn make_writable(root: &Path) {
    for entry in walkdir::WalkDir::new(root).into_iter().flatten() {
        if entry.file_type().is_symlink() {
            continue;
        }
        if let Ok(meta) = entry.metadata() {
            let mut perms = meta.permissions();
            perms.set_mode(perms.mode() | 0o700);
            let _ = std::fs::set_permissions(entry.path(), perms);
        }
    }
}

/// No process whose cwd lies under `dir` or whose environment names it.
fn assert_nothing_survives(dir: &Path) {
    let needle = dir.as_os_str().as_encoded_bytes().to_vec();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        {
            continue;
        }
        let by_cwd = std::fs::read_link(entry.path().join("cwd")).is_ok_and(|c| c.starts_with(dir));
        let by_env = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|e| e.windows(needle.len()).any(|w| w == needle.as_slice()));
        if by_cwd || by_env {
            found.push(pid);
        }
    }
    assert!(
        found.is_empty(),
        "processes of the run survived it: {found:?}"
    );
}

fn detail(c: &Value) -> &str {
    c["detail"].as_str().unwrap_or("")
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

    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python())
        .args(["--only", "discovery-rpc"])
        .output()
        .expect("run the verifier");
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
    let outcome = admission::admit(&input);
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
    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python())
        .args(["--only", "admission"])
        .output()
        .expect("run the verifier");
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
