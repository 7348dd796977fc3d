//! The `admission` and `dependencies` gates with the genuine SDK interpreter
//! from `$PYTHON`: through the built binary on the fixture repository and its
//! `b3-pin` and `pip-option` overlays (`--only`, to stay fast), and at the
//! function level for archives our own `archive-members` gate would refuse
//! before admission ever saw them.

use crate::common;

use common::{
    candidate, check, checks, detail, evidence_dir, fixture_repo, gate, gate_result, make_writable,
    python, read_evidence, shared_dependencies_run, stderr_text, verifier,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use verify_coding_candidates::evidence::CheckResult;
use verify_coding_candidates::gates::admission::{admit, AdmissionInput, AdmissionOptions};

/// The built-in profile's admission policy: a `langbot-plugin` pin is required.
const PIN_REQUIRED: AdmissionOptions = AdmissionOptions {
    require_sdk_pin: true,
};
use verify_coding_candidates::{hash, process};

const INSTALLED: &str = "0.6.0b5";
const CANDIDATES: [&str; 3] = ["acp-agent-runner", "claude-code-agent", "codex-agent"];

/// Runs the verifier with `--only <only>` on a fixture repository with
/// `overlays`; returns the exit code and the evidence.
fn run(overlays: &[&str], only: &str) -> (i32, Value) {
    let repo = fixture_repo(overlays);
    let (out, keep, dir) = common::run_only(&repo.root, &python(), only, &[]);
    let evidence = read_evidence(&dir);
    make_writable(keep.path());
    (out.status.code().expect("exited, not signalled"), evidence)
}

#[test]
fn fixture_archives_are_admitted_and_their_environment_prepares_twice_with_one_digest() {
    let run = shared_dependencies_run();
    assert!(
        run.evidence.join("evidence.json").is_file(),
        "no evidence written: {}",
        run.stderr
    );
    let (code, ev) = (run.code, read_evidence(&run.evidence));
    assert_eq!(gate_result(&ev, "admission"), "pass", "{ev:#}");
    assert_eq!(gate_result(&ev, "dependencies"), "pass", "{ev:#}");
    assert_eq!(code, 0);
    for folder in CANDIDATES {
        let c = candidate(&ev, folder);
        let sha = c["archive"]["sha256"].as_str().expect("archive sha256");
        let admission = &c["admission"];
        assert_eq!(admission["accepted"], true);
        assert_eq!(admission["marker"], sha, "marker names the archive");
        assert_eq!(
            admission["code_dir"],
            format!("roots/admission/{folder}/data/artifacts/sha256/{sha}/code")
        );
        assert_eq!(admission["installed_sdk_version"], INSTALLED);
        assert_eq!(
            admission["sdk_requirements"],
            serde_json::json!([{
                "line": 1,
                "requirement": "langbot-plugin==0.6.0b5",
                "decision": "satisfied",
                "sdk_decision": "accepted"
            }])
        );
        let agrees = check(&ev, "admission", "extraction-agrees", Some(folder));
        assert_eq!(agrees["result"], "pass", "{}", detail(agrees));
        assert!(agrees["observed"]["files"].as_u64().unwrap() > 5);

        let deps = &c["dependencies"];
        let digests = deps["digests"].as_array().expect("digests[]");
        assert_eq!(digests.len(), 2, "prepared twice");
        assert_eq!(digests[0], digests[1], "one environment digest");
        assert_eq!(digests[0].as_str().unwrap().len(), 64);
        assert_eq!(deps["nothing_installed"], true);
        assert_eq!(deps["requirements"], serde_json::json!([]));
        assert_eq!(deps["runtime_profile"], "oss_dev");
        let installed = check(&ev, "dependencies", "installed", Some(folder));
        assert_eq!(
            detail(installed),
            "the requirements name nothing beyond the SDK, and nothing was installed"
        );
        for name in ["same-digest", "ready", "no-shadow-sdk"] {
            let c = check(&ev, "dependencies", name, Some(folder));
            assert_eq!(c["result"], "pass", "{name}: {}", detail(c));
        }
        let wheels = check(&ev, "dependencies", "wheelhouse", Some(folder));
        assert_eq!(wheels["result"], "pass", "{}", detail(wheels));
        assert!(
            detail(wheels).contains("nothing to download"),
            "{}",
            detail(wheels)
        );
    }
    // Nothing beyond the SDK pin: an empty wheelhouse, recorded, no download.
    assert_eq!(ev["wheelhouse"]["files"], serde_json::json!([]));
    assert_eq!(ev["wheelhouse"]["downloads"], serde_json::json!([]));
    assert_eq!(ev["wheelhouse"]["index"], "wheelhouse/simple/");
}

/// [`common::run_with_codex_requirements`] with the SDK venv's interpreter.
fn run_with_codex_requirements(requirements: &str, only: &str) -> common::FixtureRun {
    common::run_with_codex_requirements(requirements, &python(), only, &[])
}

#[test]
fn a_real_requirement_is_downloaded_once_and_installed_offline_from_the_wheelhouse() {
    let (code, ev, dir, _keep) =
        run_with_codex_requirements("langbot-plugin==0.6.0b5\nsix==1.16.0\n", "dependencies");
    assert_eq!(gate_result(&ev, "dependencies"), "pass", "{ev:#}");
    assert_eq!(code, 0);

    // The wheelhouse: six's wheel, recorded with the sha256 of the file on disk.
    const WHEEL: &str = "six-1.16.0-py2.py3-none-any.whl";
    let wheel_path = dir.join("wheelhouse").join(WHEEL);
    let on_disk = hash::sha256_file(&wheel_path).expect("the wheel is in DIR/wheelhouse");
    let w = &ev["wheelhouse"];
    assert_eq!(
        w["files"],
        serde_json::json!([{
            "name": WHEEL, "project": "six", "version": "1.16.0",
            "size": on_disk.size, "sha256": on_disk.hex(),
        }])
    );
    assert_eq!(w["upstream_index"], "https://pypi.org/simple");
    let downloads = w["downloads"].as_array().unwrap();
    assert_eq!(downloads.len(), 1, "one download for one requirement set");
    assert_eq!(
        downloads[0]["candidates"],
        serde_json::json!(["codex-agent"])
    );
    assert_eq!(
        downloads[0]["requirements"],
        serde_json::json!(["six==1.16.0"])
    );
    assert_eq!(downloads[0]["ok"], true);
    // A PEP 503 page pip can use as a file:// index, with the digest.
    let page =
        std::fs::read_to_string(dir.join("wheelhouse/simple/six/index.html")).expect("index page");
    assert!(
        page.contains(&format!("../../{WHEEL}#sha256={}", on_disk.hex())),
        "{page}"
    );

    let wheels = check(&ev, "dependencies", "wheelhouse", Some("codex-agent"));
    assert_eq!(wheels["result"], "pass", "{}", detail(wheels));
    assert_eq!(wheels["observed"]["files"][0]["sha256"], on_disk.hex());

    // Both SDK preparations read the wheelhouse only, as the SDK's own helper
    // built its installer's index arguments.
    let index_url = format!("file://{}/wheelhouse/simple/", dir.display());
    let prepare = check(&ev, "dependencies", "prepare", Some("codex-agent"));
    assert_eq!(prepare["result"], "pass", "{}", detail(prepare));
    assert_eq!(
        prepare["observed"]["pip_index_args"],
        serde_json::json!(["-i", index_url])
    );
    let deps = &candidate(&ev, "codex-agent")["dependencies"];
    assert_eq!(deps["requirements"], serde_json::json!(["six==1.16.0"]));
    // Those are admission's reading, handed on: the gate started no probe
    // of its own to read them again.
    assert!(!dir.join("logs/dependencies/requirements.cmd").exists());
    assert_eq!(
        deps["installed"],
        serde_json::json!([{"name": "six", "version": "1.16.0"}])
    );
    assert_eq!(deps["wheelhouse_files"], serde_json::json!([WHEEL]));
    let installed = check(&ev, "dependencies", "installed", Some("codex-agent"));
    assert_eq!(installed["result"], "pass", "{}", detail(installed));
    assert!(detail(installed).contains(WHEEL), "{}", detail(installed));
    for folder in ["acp-agent-runner", "claude-code-agent"] {
        assert_eq!(
            candidate(&ev, folder)["dependencies"]["nothing_installed"],
            true
        );
    }

    // replay re-derives the wheel's digest and the index; a changed wheel is drift.
    let out = common::replay_output(&dir, &["--format", "json"]);
    assert_eq!(common::exit_code(&out), 0, "{}", common::both(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("replay JSON");
    let text = rows.to_string();
    assert!(
        text.contains(&format!("wheelhouse/{WHEEL} sha256")),
        "{text}"
    );
    assert!(text.contains("wheelhouse/simple index"), "{text}");
    // ... and each downloaded file against the sha256 its index published.
    assert!(
        text.contains(&format!(
            "wheelhouse/{WHEEL} published sha256 (https://files.pythonhosted.org/"
        )),
        "{text}"
    );
    std::fs::write(&wheel_path, b"not the wheel").unwrap();
    let out = common::replay_output(&dir, &[]);
    assert_eq!(common::exit_code(&out), 1, "{}", common::both(&out));
    for item in [
        format!("wheelhouse/{WHEEL} sha256"),
        format!("wheelhouse/{WHEEL} published sha256"),
    ] {
        assert!(
            common::stdout_text(&out).contains(&item),
            "{item}: {}",
            common::both(&out)
        );
    }
}

#[test]
fn a_requirement_that_cannot_be_downloaded_fails_dependencies_naming_it() {
    let (code, ev, dir, _keep) = run_with_codex_requirements(
        "langbot-plugin==0.6.0b5\nvcc-no-such-package-xyz==1.0\n",
        "dependencies",
    );
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "dependencies"), "fail");
    let c = check(&ev, "dependencies", "wheelhouse", Some("codex-agent"));
    assert_eq!(c["result"], "fail");
    let text = detail(c);
    assert!(dir
        .join("logs/dependencies/wheelhouse/resolve-1.stderr")
        .is_file());
    for part in [
        "on `vcc-no-such-package-xyz==1.0`",
        "pip's last lines:",
        "No matching distribution found for vcc-no-such-package-xyz==1.0",
        // Details name files relative to DIR.
        "DIR/logs/dependencies/wheelhouse/resolve-1.stderr",
        "remove it from requirements.txt",
    ] {
        assert!(text.contains(part), "missing {part:?} in: {text}");
    }
    let w = &ev["wheelhouse"];
    assert_eq!(w["downloads"][0]["ok"], false);
    assert_eq!(
        w["downloads"][0]["failure"]["requirement"],
        "vcc-no-such-package-xyz==1.0"
    );
    // Nothing is prepared for it; the other candidates still are.
    let prepared: Vec<&Value> = common::checks(&ev, "dependencies")
        .iter()
        .filter(|c| c["name"] == "prepare" && c["candidate"] == "codex-agent")
        .collect();
    assert!(prepared.is_empty(), "{prepared:?}");
    for folder in ["acp-agent-runner", "claude-code-agent"] {
        let c = check(&ev, "dependencies", "prepare", Some(folder));
        assert_eq!(c["result"], "pass", "{}", detail(c));
    }
}

#[test]
fn b3_pin_fails_admission_naming_line_version_and_the_pin_only_trap() {
    let (code, ev) = run(&["b3-pin"], "dependencies");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "admission"), "fail");
    // Only acp-agent-runner's own later gates are blocked: `dependencies`
    // prepares the other two.
    assert_eq!(gate_result(&ev, "dependencies"), "pass");
    assert_eq!(
        gate(&ev, "dependencies")["candidates_left_out"],
        serde_json::json!(["acp-agent-runner"])
    );
    let c = check(
        &ev,
        "admission",
        "sdk-requirement",
        Some("acp-agent-runner"),
    );
    assert_eq!(c["result"], "fail");
    let text = detail(c);
    for part in [
        "acp-agent-runner",
        "line 1 `langbot-plugin==0.6.0b3`",
        "installed langbot-plugin 0.6.0b5",
        "A pin-only change would hide the admission failure",
        "Plugin requires langbot-plugin==0.6.0b3, but the Runtime provides langbot-plugin==0.6.0b5",
    ] {
        assert!(text.contains(part), "missing {part:?} in: {text}");
    }
    let record = &candidate(&ev, "acp-agent-runner")["admission"]["sdk_requirements"][0];
    assert_eq!(record["decision"], "not-satisfied");
    assert!(record["sdk_decision"]
        .as_str()
        .unwrap()
        .starts_with("refused: DependencyEnvironmentPreparationError"));
    // The artifact store itself accepts the bytes: only the pin is refused.
    let store = check(&ev, "admission", "artifact-store", Some("acp-agent-runner"));
    assert_eq!(store["result"], "pass");
    for folder in ["claude-code-agent", "codex-agent"] {
        let c = check(&ev, "admission", "sdk-requirement", Some(folder));
        assert_eq!(c["result"], "pass", "{}", detail(c));
    }
}

/// Issue 23: one candidate failing admission stops only its own later gates.
/// With `b3-pin`, `acp-agent-runner` fails `admission`; `dependencies` and
/// `discovery-rpc` still run, for the two other candidates only, which pass
/// and get verdict `pass`; `acp-agent-runner` gets verdict `fail` at
/// `admission/sdk-requirement`, nothing later is observed for it, and the
/// run still fails (exit 1). The verdicts are in evidence.json, junit.xml,
/// the statement and the summary.
#[test]
fn a_candidate_failing_admission_stops_only_its_own_later_gates() {
    let repo = fixture_repo(&["b3-pin"]);
    let (out, keep, dir) = common::run_only(&repo.root, &python(), "discovery-rpc", &[]);
    let ev = read_evidence(&dir);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_text(&out));
    assert_eq!(ev["verdict"], "fail");
    const FAILED: &str = "acp-agent-runner";
    const OTHERS: [&str; 2] = ["claude-code-agent", "codex-agent"];
    assert_eq!(gate_result(&ev, "admission"), "fail");
    assert_eq!(
        check(&ev, "admission", "sdk-requirement", Some(FAILED))["result"],
        "fail"
    );
    for (id, name) in [("dependencies", "ready"), ("discovery-rpc", "initialized")] {
        assert_eq!(gate_result(&ev, id), "pass", "{id}: {:#}", gate(&ev, id));
        assert_eq!(
            gate(&ev, id)["candidates_left_out"],
            serde_json::json!([FAILED]),
            "{id}"
        );
        assert!(
            checks(&ev, id).iter().all(|c| c["candidate"] != FAILED),
            "{id} checked {FAILED}"
        );
        for folder in OTHERS {
            let c = check(&ev, id, name, Some(folder));
            assert_eq!(c["result"], "pass", "{id}/{name} {folder}: {}", detail(c));
        }
    }
    // Nothing after admission was observed for the failed candidate.
    let failed = candidate(&ev, FAILED);
    assert!(failed["dependencies"].is_null() && failed["discovery"].is_null());
    assert_eq!(
        failed["verdict"],
        serde_json::json!({
            "result": "fail",
            "gate": "admission",
            "check": "sdk-requirement",
            "reason": failed["verdict"]["reason"].clone(),
        })
    );
    assert!(failed["verdict"]["reason"]
        .as_str()
        .unwrap()
        .contains("acp-agent-runner"));
    for folder in OTHERS {
        let c = candidate(&ev, folder);
        assert_eq!(
            c["verdict"],
            serde_json::json!({"result": "pass"}),
            "{folder}"
        );
        assert_eq!(c["discovery"]["status"], "initialized", "{folder}");
    }
    // junit.xml: one testcase per candidate verdict, read as CI reads it.
    let junit = common::read_junit(&dir);
    let suite = common::junit_suite(&junit, "candidates");
    let outcomes: Vec<(&str, &str)> = suite["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (FAILED, "failure"),
            ("claude-code-agent", "passed"),
            ("codex-agent", "passed")
        ]
    );
    // The statement: verdicts annotate the tool; every archive is a subject.
    let statement: Value =
        serde_json::from_slice(&std::fs::read(dir.join("statement.intoto.json")).unwrap()).unwrap();
    let tool = statement["predicate"]["configuration"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    assert_eq!(
        tool["annotations"]["candidate_verdicts"],
        serde_json::json!({FAILED: "fail", "claude-code-agent": "pass", "codex-agent": "pass"})
    );
    assert_eq!(statement["subject"].as_array().unwrap().len(), 4);
    // The summary: one line per candidate, and which ones passed.
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("  acp-agent-runner   FAIL           admission/sdk-requirement: "),
        "{summary}"
    );
    assert!(
        summary.contains("\n  codex-agent        pass\n"),
        "{summary}"
    );
    assert!(
        summary.contains("  passed: 2 of 3 candidate(s): claude-code-agent, codex-agent\n"),
        "{summary}"
    );
    // A gate's row says which candidates it left out.
    assert!(
        summary.lines().any(|l| l.starts_with("  discovery-rpc ")
            && l.ends_with("(for the other candidates only; left out: acp-agent-runner)")),
        "{summary}"
    );
    make_writable(keep.path());
}

/// The profile's `[admission] require_sdk_pin` reaches the gate: a candidate
/// with no `requirements.txt` at all (which the SDK admits) fails admission
/// under the built-in profile, which requires a pin, and passes, saying why,
/// under the same profile with the policy off.
#[test]
fn a_missing_sdk_pin_fails_only_where_the_profile_requires_one() {
    let repo = fixture_repo(&[]);
    common::git(
        &repo.root,
        &["rm", "-q", "Runner/codex-agent/requirements.txt"],
    );
    common::git(&repo.root, &["commit", "-q", "-m", "no requirements"]);
    let relaxed = repo.dir.path().join("relaxed.toml");
    let text = verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS.replacen(
        "require_sdk_pin = true",
        "require_sdk_pin = false",
        1,
    );
    assert_ne!(
        text,
        verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS
    );
    std::fs::write(&relaxed, text).unwrap();
    for (profile, expected) in [(None, "fail"), (Some(&relaxed), "pass")] {
        let (keep, dir) = evidence_dir();
        let mut cmd = verifier();
        cmd.current_dir(&repo.root)
            .arg("--evidence")
            .arg(&dir)
            .arg("--python")
            .arg(python())
            .args(["--only", "admission"]);
        if let Some(p) = profile {
            cmd.arg("--profile").arg(p);
        }
        let out = cmd.output().expect("run the verifier");
        let ev = read_evidence(&dir);
        make_writable(keep.path());
        let c = check(&ev, "admission", "sdk-requirement", Some("codex-agent"));
        assert_eq!(c["result"], expected, "{profile:?}: {}", detail(c));
        if expected == "fail" {
            assert!(
                detail(c).contains("require_sdk_pin") && detail(c).contains("found none"),
                "{}",
                detail(c)
            );
            assert_eq!(out.status.code(), Some(1), "{}", stderr_text(&out));
        } else {
            assert!(
                detail(c).contains("(no requirements.txt)")
                    && detail(c).contains("the SDK admits that"),
                "{}",
                detail(c)
            );
            assert_eq!(gate_result(&ev, "admission"), "pass", "{ev:#}");
            assert_eq!(out.status.code(), Some(0), "{}", stderr_text(&out));
        }
    }
}

#[test]
fn pip_option_fails_admission_with_its_line_number() {
    let (code, ev) = run(&["pip-option"], "admission");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "admission"), "fail");
    let c = check(
        &ev,
        "admission",
        "requirement-lines",
        Some("claude-code-agent"),
    );
    assert_eq!(c["result"], "fail");
    let text = detail(c);
    for part in [
        "line 2 `--index-url https://packages.example.invalid/simple` is a pip option",
        "Artifact requirements.txt cannot contain pip options (line 2)",
    ] {
        assert!(text.contains(part), "missing {part:?} in: {text}");
    }
    // The SDK pin on line 1 is still judged on its own, and holds.
    let pin = check(
        &ev,
        "admission",
        "sdk-requirement",
        Some("claude-code-agent"),
    );
    assert_eq!(pin["result"], "pass", "{}", detail(pin));
    let ok = check(&ev, "admission", "requirement-lines", Some("codex-agent"));
    assert_eq!(ok["result"], "pass", "{}", detail(ok));
}

#[test]
fn a_requirement_by_url_fails_admission_naming_file_line_and_why() {
    let (code, ev) = run(&["url-requirement"], "admission");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "admission"), "fail");
    let c = check(&ev, "admission", "requirement-lines", Some("codex-agent"));
    assert_eq!(c["result"], "fail", "{c}");
    let text = detail(c);
    for part in [
        "requirements.txt: line 2 \
         `six @ https://files.example.invalid/six-1.16.0-py2.py3-none-any.whl` requires a \
         distribution by direct URL",
        "bypasses the package index and its hashes",
        "without network",
        "require it by version (`name==X.Y`)",
    ] {
        assert!(text.contains(part), "missing {part:?} in: {text}");
    }
    let ok = check(
        &ev,
        "admission",
        "requirement-lines",
        Some("acp-agent-runner"),
    );
    assert_eq!(ok["result"], "pass", "{}", detail(ok));
}

/// A STORED zip with `members` (name, bytes), in order.
fn write_zip(path: &Path, members: &[(&str, &[u8])]) {
    let file = std::fs::File::create(path).expect("create zip");
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o644);
    for (name, bytes) in members {
        zip.start_file(*name, options).expect("start member");
        zip.write_all(bytes).expect("write member");
    }
    zip.finish().expect("finish zip");
}

const MANIFEST: &[u8] = b"apiVersion: v1\nkind: Plugin\nmetadata:\n  author: tests\n  name: hand-built\n  version: 0.0.1\n  label:\n    en_US: Hand built\n";

/// A hand-built admission in a fresh evidence directory: the archive at
/// `packages/hand/hand.lbpkg` and `extracted/hand` holding `extracted`.
struct Hand {
    _dir: tempfile::TempDir,
    input: AdmissionInput,
}

fn hand_built(members: &[(&str, &[u8])], extracted: &[(&str, &[u8])]) -> Hand {
    let dir = tempfile::Builder::new()
        .prefix("vcc-admission-")
        .tempdir()
        .expect("temp dir");
    let ev = dir.path().join("evidence");
    let archive = ev.join("packages/hand/hand.lbpkg");
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    write_zip(&archive, members);
    let out = ev.join("extracted/hand");
    for (name, bytes) in extracted {
        let p = out.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let root = ev.join("roots/admission/hand");
    let (home, tmp) = (root.join("home"), root.join("tmp"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let mut env: BTreeMap<String, String> = process::base_env();
    env.insert("HOME".into(), home.display().to_string());
    env.insert("TMPDIR".into(), tmp.display().to_string());
    env.insert("PYTHONDONTWRITEBYTECODE".into(), "1".into());
    let sha = hash::sha256_file(&archive).unwrap().hex();
    Hand {
        input: AdmissionInput {
            python: python(),
            evidence_dir: ev.clone(),
            folder: "hand".into(),
            archive,
            archive_sha256: sha,
            extracted: out,
            sdk_version: INSTALLED.into(),
            root,
            env,
            log_stem: ev.join("logs/admission/hand"),
        },
        _dir: dir,
    }
}

impl Drop for Hand {
    fn drop(&mut self) {
        make_writable(&self.input.evidence_dir);
    }
}

fn outcome_check<'a>(
    checks: &'a [verify_coding_candidates::evidence::Check],
    name: &str,
) -> &'a verify_coding_candidates::evidence::Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:#?}"))
}

#[test]
fn artifact_store_refusal_of_a_traversal_member_names_the_sdk_message() {
    let requirements: &[u8] = b"langbot-plugin==0.6.0b5\n";
    let hand = hand_built(
        &[
            ("manifest.yaml", MANIFEST),
            ("requirements.txt", requirements),
            ("../evil.py", b"print('outside')\n"),
        ],
        &[
            ("manifest.yaml", MANIFEST),
            ("requirements.txt", requirements),
        ],
    );
    let outcome = admit(&hand.input, PIN_REQUIRED);
    let store = outcome_check(&outcome.checks, "artifact-store");
    assert_eq!(store.result, CheckResult::Fail, "{}", store.detail);
    assert!(
        store
            .detail
            .contains("Plugin artifact contains an unsafe path: ../evil.py"),
        "{}",
        store.detail
    );
    assert!(
        store.detail.contains("packages/hand/hand.lbpkg"),
        "{}",
        store.detail
    );
    let record = outcome.record.expect("the probe reported");
    assert!(!record.accepted);
    assert!(record.marker.is_none());
    assert!(!hand
        .input
        .root
        .join("data/artifacts/sha256")
        .join(&hand.input.archive_sha256)
        .exists());
    // Nothing was published, so there is no marker or extraction to judge.
    assert!(outcome.checks.iter().all(|c| c.name != "marker"));
    // The requirement verdicts still come from the harness's own extraction.
    let pin = outcome_check(&outcome.checks, "sdk-requirement");
    assert_eq!(pin.result, CheckResult::Pass, "{}", pin.detail);
}

#[test]
fn extraction_disagreement_lists_the_differing_paths() {
    let requirements: &[u8] = b"langbot-plugin==0.6.0b5\n";
    let hand = hand_built(
        &[
            ("manifest.yaml", MANIFEST),
            ("requirements.txt", requirements),
            ("main.py", b"VALUE = 1\n"),
        ],
        &[
            ("manifest.yaml", MANIFEST),
            ("requirements.txt", requirements),
            ("main.py", b"VALUE = 2\n"),
            ("extra.py", b""),
        ],
    );
    let outcome = admit(&hand.input, PIN_REQUIRED);
    let store = outcome_check(&outcome.checks, "artifact-store");
    assert_eq!(store.result, CheckResult::Pass, "{}", store.detail);
    let marker = outcome_check(&outcome.checks, "marker");
    assert_eq!(marker.result, CheckResult::Pass, "{}", marker.detail);
    let agrees = outcome_check(&outcome.checks, "extraction-agrees");
    assert_eq!(agrees.result, CheckResult::Fail);
    assert!(
        agrees.detail.contains("only in extracted/hand: `extra.py`"),
        "{}",
        agrees.detail
    );
    assert!(
        agrees.detail.contains("different bytes: `main.py`"),
        "{}",
        agrees.detail
    );
    let record = outcome.record.expect("recorded");
    assert_eq!(
        record.marker.as_deref(),
        Some(hand.input.archive_sha256.as_str())
    );
    let code_dir: PathBuf = hand.input.evidence_dir.join(record.code_dir.unwrap());
    assert!(code_dir.join("main.py").is_file());
}

/// `--partition` runs each build their own wheelhouse; `merge` copies every
/// file once (re-hashed first), unions the records and writes one index,
/// which `replay` then verifies.
#[test]
fn partition_wheelhouses_merge_into_one_that_replays() {
    let repo = fixture_repo(&[]);
    for folder in ["codex-agent", "claude-code-agent"] {
        std::fs::write(
            repo.root
                .join("Runner")
                .join(folder)
                .join("requirements.txt"),
            "langbot-plugin==0.6.0b5\nsix==1.16.0\n",
        )
        .unwrap();
    }
    common::git(&repo.root, &["commit", "-q", "-a", "-m", "six twice"]);
    let mut parts = Vec::new();
    let mut keep = Vec::new();
    for share in ["1/2", "2/2"] {
        let (k, dir) = evidence_dir();
        let out = common::verifier_only(&repo.root, &dir, "dependencies")
            .args(["--partition", share])
            .output()
            .expect("run the verifier");
        assert_eq!(
            common::exit_code(&out),
            0,
            "{share}: {}",
            common::both(&out)
        );
        make_writable(k.path());
        parts.push(dir);
        keep.push(k);
    }
    let (k, merged) = evidence_dir();
    keep.push(k);
    let out = common::merge_output(&merged, &[&parts[0], &parts[1]]);
    assert_eq!(common::exit_code(&out), 0, "{}", common::both(&out));
    let m = read_evidence(&merged);
    let files = m["wheelhouse"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "one six wheel, not one per partition");
    assert_eq!(files[0]["name"], "six-1.16.0-py2.py3-none-any.whl");
    assert_eq!(m["wheelhouse"]["downloads"].as_array().unwrap().len(), 2);
    let copy = merged.join("wheelhouse/six-1.16.0-py2.py3-none-any.whl");
    assert_eq!(
        hash::sha256_file(&copy)
            .expect("the merge copied the wheel")
            .hex(),
        files[0]["sha256"]
    );
    assert!(merged.join("wheelhouse/simple/six/index.html").is_file());
    let out = common::replay_output(&merged, &[]);
    assert_eq!(common::exit_code(&out), 0, "{}", common::both(&out));
}
