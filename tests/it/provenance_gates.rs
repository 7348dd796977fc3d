//! The `vendored-sdk` and `historical-admission` gates with the genuine SDK
//! interpreter from `$PYTHON`, through the built binary on the fixture
//! repository (`--only`, to stay fast). Historical archives are built here
//! from b3-pinned copies of our fixture plugins with the real `lbp build`.

use crate::common;

use common::{
    check, detail, evidence_dir, fixture_repo, gate, gate_result, git, make_writable, python,
    read_evidence, sdk_venv, site_packages, stderr_text, verifier,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use verify_coding_candidates::hash;
use verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS;

const CANDIDATES: [&str; 3] = ["acp-agent-runner", "claude-code-agent", "codex-agent"];
const DAEMON: &str = "langbot_plugin/api/agent_tools/daemon.py";

/// Runs the verifier on `repo` with `args`; returns the exit code and the evidence.
fn run(repo: &Path, args: &[&str]) -> (i32, Value) {
    let (keep, dir) = evidence_dir();
    let out = verifier()
        .arg("--repo")
        .arg(repo)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python())
        .args(args)
        .output()
        .expect("run the verifier");
    assert!(
        dir.join("evidence.json").is_file(),
        "no evidence written: {}",
        stderr_text(&out)
    );
    let evidence = read_evidence(&dir);
    make_writable(keep.path());
    (out.status.code().expect("exited"), evidence)
}

#[test]
fn the_fixture_notices_name_the_installed_daemon_module_and_carry_its_license() {
    let repo = fixture_repo(&[]);
    let (code, ev) = run(&repo.root, &["--only", "vendored-sdk"]);
    assert_eq!(
        gate_result(&ev, "vendored-sdk"),
        "pass",
        "{:#}",
        gate(&ev, "vendored-sdk")
    );
    assert_eq!(code, 0);
    let installed = hash::sha256_file(&site_packages(&sdk_venv()).join(DAEMON))
        .unwrap()
        .hex();
    for folder in CANDIDATES {
        let file = check(&ev, "vendored-sdk", "sdk-file", Some(folder));
        assert_eq!(file["observed"]["installed"]["path"], DAEMON);
        assert_eq!(file["observed"]["installed"]["state"]["sha256"], installed);
        assert_eq!(file["observed"]["installed"]["in_record"], true);
        assert_eq!(file["observed"]["sha256"]["value"], installed);
        let version = check(&ev, "vendored-sdk", "sdk-version", Some(folder));
        assert_eq!(version["observed"]["version"]["value"], "0.6.0b5");
        let license = check(&ev, "vendored-sdk", "license-copy", Some(folder));
        assert_eq!(license["result"], "pass", "{}", detail(license));
        assert_eq!(
            license["observed"]["installed_license"],
            "langbot_plugin-0.6.0b5.dist-info/licenses/LICENSE"
        );
    }
}

#[test]
fn a_notice_naming_another_version_file_or_hash_and_a_differing_license_fail() {
    let repo = fixture_repo(&[]);
    let notice = |who: &str| {
        repo.root
            .join("Runner")
            .join(who)
            .join("pkg/RELAY-NOTICE.md")
    };
    let text = std::fs::read_to_string(notice("acp-agent-runner")).unwrap();
    let installed = hash::sha256_file(&site_packages(&sdk_venv()).join(DAEMON))
        .unwrap()
        .hex();
    let wrong = "ab".repeat(32);
    std::fs::write(
        notice("acp-agent-runner"),
        text.replace("langbot-plugin 0.6.0b5", "langbot-plugin 0.6.0b3"),
    )
    .unwrap();
    std::fs::write(
        notice("claude-code-agent"),
        text.replace(&installed, &wrong)
            .replace("agent_tools/daemon.py", "agent_tools/relay.py"),
    )
    .unwrap();
    std::fs::write(notice("codex-agent"), text.replace(&installed, &wrong)).unwrap();
    let license = repo.root.join("Runner/codex-agent/pkg/LICENSE-sdk.txt");
    let mut bytes = std::fs::read(&license).unwrap();
    bytes.extend_from_slice(b"\nlocal addition\n");
    std::fs::write(&license, bytes).unwrap();
    git(&repo.root, &["commit", "-qam", "false notices"]);

    let (code, ev) = run(&repo.root, &["--only", "vendored-sdk"]);
    assert_eq!(gate_result(&ev, "vendored-sdk"), "fail");
    assert_eq!(code, 1);
    let version = check(&ev, "vendored-sdk", "sdk-version", Some("acp-agent-runner"));
    assert_eq!(version["result"], "fail");
    assert!(
        detail(version).contains("names langbot-plugin 0.6.0b3")
            && detail(version).contains("expected the pinned version 0.6.0b5"),
        "{}",
        detail(version)
    );
    let other = check(&ev, "vendored-sdk", "sdk-file", Some("claude-code-agent"));
    assert_eq!(other["result"], "fail");
    assert!(
        detail(other).contains("`langbot_plugin/api/agent_tools/relay.py`, which does not exist"),
        "{}",
        detail(other)
    );
    let hash = check(&ev, "vendored-sdk", "sdk-file", Some("codex-agent"));
    assert_eq!(hash["result"], "fail");
    assert!(
        detail(hash).contains(&wrong) && detail(hash).contains(&installed),
        "{}",
        detail(hash)
    );
    let lic = check(&ev, "vendored-sdk", "license-copy", Some("codex-agent"));
    assert_eq!(lic["result"], "fail");
    assert!(
        detail(lic).contains("differs from the installed"),
        "{}",
        detail(lic)
    );
    for ok in ["acp-agent-runner", "claude-code-agent"] {
        let c = check(&ev, "vendored-sdk", "license-copy", Some(ok));
        assert_eq!(c["result"], "pass", "{}", detail(c));
    }
}

#[test]
fn gates_without_input_are_skipped_never_passed() {
    let repo = fixture_repo(&[]);
    // Named by --only, a skipped gate is required: the run cannot exit 0.
    let (code, ev) = run(&repo.root, &["--only", "historical-admission"]);
    let g = gate(&ev, "historical-admission");
    assert_eq!(g["result"], "skipped");
    assert_eq!(
        g["reason"],
        "archives not supplied: package admission of historical releases is not established"
    );
    assert_eq!(g["required"], true);
    assert_eq!(code, 1);

    let profile = tempfile::NamedTempFile::new().unwrap();
    let start = BUILTIN_CODING_RUNNERS.find("[vendored_sdk]").unwrap();
    let end = BUILTIN_CODING_RUNNERS
        .find("# The exact historical")
        .unwrap();
    let without = format!(
        "{}{}",
        &BUILTIN_CODING_RUNNERS[..start],
        &BUILTIN_CODING_RUNNERS[end..]
    );
    std::fs::write(profile.path(), without).unwrap();
    let path = profile.path().to_str().unwrap();
    let (code, ev) = run(&repo.root, &["--profile", path, "--only", "vendored-sdk"]);
    let g = gate(&ev, "vendored-sdk");
    assert_eq!(g["result"], "skipped");
    assert!(
        g["reason"]
            .as_str()
            .unwrap()
            .contains("no [vendored_sdk] section"),
        "{g}"
    );
    assert_eq!(code, 1);
}

/// Builds `Runner/<who>` of a copy of the fixture with `requirements` into `out`
/// with the real `lbp build`; returns the archive.
fn build(who: &str, requirements: &str, out: &Path) -> PathBuf {
    let src = tempfile::tempdir().unwrap();
    common::copy_tree(&common::fixtures_dir().join("candidate-repo"), src.path());
    let plugin = src.path().join("Runner").join(who);
    std::fs::write(plugin.join("requirements.txt"), requirements).unwrap();
    let staging = tempfile::tempdir().unwrap();
    let status = Command::new(python())
        .args(["-I", "-B", "-m", "langbot_plugin.cli", "build", "-o"])
        .arg(staging.path())
        .current_dir(&plugin)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run lbp build");
    assert!(status.status.success(), "{status:?}");
    let built: Vec<PathBuf> = std::fs::read_dir(staging.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(built.len(), 1, "{built:?}");
    let dest = out.join(built[0].file_name().unwrap());
    std::fs::copy(&built[0], &dest).unwrap();
    dest
}

#[test]
fn historical_b3_archives_are_refused_an_admitted_one_fails_and_an_unlisted_one_is_reported() {
    let release = tempfile::tempdir().unwrap();
    let acp = build(
        "acp-agent-runner",
        "langbot-plugin==0.6.0b3\n",
        release.path(),
    );
    let codex = build("codex-agent", "langbot-plugin==0.6.0b3\n", release.path());
    let claude = build(
        "claude-code-agent",
        "langbot-plugin==0.6.0b5\n",
        release.path(),
    );
    std::fs::write(release.path().join("notes.lbpkg"), b"not listed").unwrap();
    let digest = |p: &Path| hash::sha256_file(p).unwrap().hex();
    let entry = |name: &str, p: &Path| {
        format!(
            "[[historical_admission.archive]]\nname = \"{name}\"\nsha256 = \"{}\"\nreason = \"pins b3\"\n\
             refusal_contains = \"Plugin requires langbot-plugin==0.6.0b3\"\n\n",
            digest(p)
        )
    };
    let start = BUILTIN_CODING_RUNNERS
        .find("[historical_admission]")
        .unwrap();
    let end = BUILTIN_CODING_RUNNERS.find("\n[suites]\n").unwrap() + 1;
    let text = format!(
        "{}[historical_admission]\n{}{}{}{}",
        &BUILTIN_CODING_RUNNERS[..start],
        entry("fixture ACP b3", &acp),
        entry("fixture Codex b3", &codex),
        entry("fixture Claude b5", &claude),
        &BUILTIN_CODING_RUNNERS[end..]
    );
    let profile = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(profile.path(), text).unwrap();

    let repo = fixture_repo(&[]);
    let (code, ev) = run(
        &repo.root,
        &[
            "--profile",
            profile.path().to_str().unwrap(),
            "--only",
            "historical-admission",
            "--release-dir",
            release.path().to_str().unwrap(),
        ],
    );
    assert_eq!(gate_result(&ev, "historical-admission"), "fail");
    assert_eq!(code, 1);
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    for b3 in [&acp, &codex] {
        let c = check(
            &ev,
            "historical-admission",
            &format!("{}/refused", name(b3)),
            None,
        );
        assert_eq!(c["result"], "pass", "{}", detail(c));
        assert!(
            detail(c).contains("before any install")
                && detail(c).contains(
                    "Plugin requires langbot-plugin==0.6.0b3, but the Runtime provides langbot-plugin==0.6.0b5"
                ),
            "{}",
            detail(c)
        );
        let cmp = check(
            &ev,
            "historical-admission",
            &format!("{}/compared-with-source", name(b3)),
            None,
        );
        let comparison = &cmp["observed"]["comparison"];
        assert_eq!(
            comparison["differing"],
            serde_json::json!(["requirements.txt"])
        );
        assert!(comparison["same"].as_array().unwrap().len() > 3, "{cmp}");
        assert!(comparison["same"]
            .as_array()
            .unwrap()
            .contains(&Value::from("pkg/daemon_relay.py")));
    }
    let admitted = check(
        &ev,
        "historical-admission",
        &format!("{}/refused", name(&claude)),
        None,
    );
    assert_eq!(admitted["result"], "fail");
    assert!(
        detail(admitted).contains("found it admitted"),
        "{}",
        detail(admitted)
    );
    let unlisted = check(&ev, "historical-admission", "notes.lbpkg/unlisted", None);
    assert_eq!(unlisted["result"], "warn");
    assert!(detail(unlisted).contains(&hash::sha256_bytes(b"not listed")));
    assert_eq!(
        check(&ev, "historical-admission", "listed-archives", None)["result"],
        "pass"
    );
}
