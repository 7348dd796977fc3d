//! The build gates end to end: `shared-copies`, `lbp-build` and
//! `archive-members`, run by the verifier binary on fixture repositories with
//! the genuine SDK interpreter from `$PYTHON`.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use verify_coding_candidates::hash;

const FOLDERS: [&str; 3] = ["acp-agent-runner", "claude-code-agent", "codex-agent"];

/// Runs the verifier with `--only <only>` on `repo`, returning the exit code
/// and the evidence.
fn run_only(repo: &Path, evidence: &Path, only: &str) -> (i32, Value) {
    let out = verifier_only(repo, evidence, only)
        .output()
        .expect("run the verifier");
    let code = out.status.code().unwrap_or(-1);
    assert!(
        evidence.join("evidence.json").is_file(),
        "no evidence.json (exit {code}); stderr:\n{}",
        stderr_text(&out)
    );
    (code, read_evidence(evidence))
}

#[test]
fn good_repository_builds_records_and_extracts_every_member() {
    let repo = fixture_repo(&[]);
    let before = tree_snapshot(&repo.root);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    for id in ["lbp-build", "archive-members"] {
        let failed: Vec<&Value> = failed_checks(&ev, id);
        assert_eq!(
            gate_result(&ev, id),
            "pass",
            "gate {id} failed: {failed:#?}"
        );
    }
    assert_eq!(code, 0, "every required gate passed, so the exit code is 0");
    assert_unchanged(
        &before,
        &tree_snapshot(&repo.root),
        "the repository under review",
    );

    for folder in FOLDERS {
        let cand = candidate(&ev, folder);
        let manifest = &cand["manifest"];
        let archive = &cand["archive"];
        let name = format!(
            "{}-{}-{}.lbpkg",
            manifest["author"].as_str().unwrap(),
            manifest["name"].as_str().unwrap(),
            manifest["version"].as_str().unwrap()
        );
        assert_eq!(archive["path"], format!("packages/{folder}/{name}"));
        // The archive's recorded digest is the file's.
        let file = ev_dir.join(archive["path"].as_str().unwrap());
        let d = hash::sha256_file(&file).unwrap();
        assert_eq!(archive["sha256"], d.hex());
        assert_eq!(archive["size"], d.size);

        // Every member is recorded, manifest first, and its extraction holds
        // exactly those files with those digests.
        let members = archive["members"].as_array().unwrap();
        assert_eq!(
            members[0]["name"], "manifest.yaml",
            "the build writes the manifest first"
        );
        assert!(members
            .iter()
            .any(|m| m["name"] == "pkg/runtime_support.py"));
        // `zipfile.writestr` gives the re-serialised manifest mode 0600.
        assert_eq!(members[0]["mode"], "0600");
        assert_eq!(archive["extracted"], format!("extracted/{folder}"));
        let root = ev_dir.join("extracted").join(folder);
        let mut on_disk = BTreeSet::new();
        for entry in walkdir::WalkDir::new(&root).min_depth(1) {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                on_disk.insert(
                    entry
                        .path()
                        .strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
        let recorded: BTreeSet<String> = members
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            on_disk, recorded,
            "DIR/extracted/{folder} holds exactly the members"
        );
        let mut lines: Vec<String> = Vec::new();
        for m in members {
            let n = m["name"].as_str().unwrap();
            let d = hash::sha256_file(&root.join(n)).unwrap();
            assert_eq!(m["sha256"], d.hex(), "{folder}/{n}");
            assert_eq!(m["size"], d.size, "{folder}/{n}");
            lines.push(format!("{n}\0{}\0{}\n", d.size, d.hex()));
        }
        // The content digest is re-derivable from the members.
        lines.sort();
        assert_eq!(
            archive["content_digest"],
            hash::sha256_bytes(lines.concat().as_bytes())
        );
        // Every member except the manifest is the staged source file.
        let staged = ev_dir.join("staging/source/Runner").join(folder);
        for m in members.iter().filter(|m| m["name"] != "manifest.yaml") {
            let n = m["name"].as_str().unwrap();
            assert_eq!(
                m["sha256"],
                hash::sha256_file(&staged.join(n)).unwrap().hex(),
                "{folder}/{n}"
            );
            // The build stores the staged file's mode; the extraction restores it.
            use std::os::unix::fs::PermissionsExt;
            let staged_mode = std::fs::metadata(staged.join(n))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777;
            assert_eq!(m["mode"], format!("{staged_mode:04o}"), "{folder}/{n}");
            let extracted_mode = std::fs::metadata(root.join(n))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(extracted_mode, staged_mode & 0o777, "{folder}/{n}");
        }
    }
    let check = check(&ev, "archive-members", "zip-comment", Some("codex-agent"));
    assert_eq!(check["result"], "pass");
    let check = check_of(&ev, "lbp-build", "source-untouched", "codex-agent");
    assert_eq!(check["result"], "pass");
}

fn check_of<'a>(ev: &'a Value, gate: &str, name: &str, folder: &str) -> &'a Value {
    check(ev, gate, name, Some(folder))
}

#[test]
fn float_version_fails_the_build_gate_naming_the_cause_and_the_missing_archive() {
    let repo = fixture_repo(&["float-version"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "lbp-build"), "fail");
    assert_eq!(gate_result(&ev, "archive-members"), "blocked");

    let single = check_of(&ev, "lbp-build", "single-archive", "claude-code-agent");
    assert_eq!(single["result"], "fail");
    let detail = single["detail"].as_str().unwrap();
    assert!(detail.contains("metadata.version is a float"), "{detail}");
    assert!(detail.contains("wrote no archive"), "{detail}");
    assert!(detail.contains("Plugin manifest not found"), "{detail}");
    // The SDK's build exits 0 here: the exit check alone would have passed.
    assert_eq!(
        check_of(&ev, "lbp-build", "build-exit", "claude-code-agent")["result"],
        "pass"
    );
    assert_eq!(
        check_of(&ev, "lbp-build", "manifest-identity", "claude-code-agent")["result"],
        "fail"
    );
    // The other candidates still built.
    for folder in ["acp-agent-runner", "codex-agent"] {
        assert_eq!(
            check_of(&ev, "lbp-build", "single-archive", folder)["result"],
            "pass"
        );
    }
    assert!(!ev_dir.join("packages/claude-code-agent").exists());
}

#[test]
fn drifted_shared_copy_fails_naming_both_files_and_digests() {
    let repo = fixture_repo(&["drifted-shared-copy"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "shared-copies");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "shared-copies"), "fail");
    let canonical = hash::sha256_file(
        &repo
            .root
            .join("Runner/acp-agent-runner/pkg/runtime_support.py"),
    )
    .unwrap()
    .hex();
    let drifted = hash::sha256_file(&repo.root.join("Runner/codex-agent/pkg/runtime_support.py"))
        .unwrap()
        .hex();
    assert_ne!(canonical, drifted);

    let failed = failed_checks(&ev, "shared-copies");
    assert_eq!(failed.len(), 1, "only the drifted copy fails: {failed:#?}");
    let c = failed[0];
    assert_eq!(c["name"], "pkg/runtime_support.py");
    assert_eq!(c["candidate"], "codex-agent");
    let detail = c["detail"].as_str().unwrap();
    for needle in [
        "Runner/codex-agent/pkg/runtime_support.py",
        "Runner/acp-agent-runner/pkg/runtime_support.py",
        canonical.as_str(),
        drifted.as_str(),
    ] {
        assert!(detail.contains(needle), "{needle} missing from: {detail}");
    }
    // One check per (file, candidate): two files, three candidates.
    assert_eq!(checks(&ev, "shared-copies").len(), 6);
}

#[test]
fn unsafe_manifest_name_is_never_built() {
    let repo = fixture_repo(&[]);
    let manifest = repo.root.join("Runner/codex-agent/manifest.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(
        text.contains("name: codex-agent"),
        "fixture manifest changed shape:\n{text}"
    );
    std::fs::write(
        &manifest,
        text.replace("name: codex-agent", "name: ../../evil"),
    )
    .unwrap();
    git(&repo.root, &["commit", "-q", "-am", "unsafe name"]);
    let (keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "lbp-build");
    assert_eq!(code, 1);
    let c = check_of(&ev, "lbp-build", "manifest-identity", "codex-agent");
    assert_eq!(c["result"], "fail");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains("../../evil") && detail.contains("The build was not run"),
        "{detail}"
    );
    // No build ran for it (no log), and nothing named after it appeared
    // anywhere around the evidence directory.
    assert!(!ev_dir.join("logs/lbp-build/codex-agent.cmd").exists());
    assert!(ev_dir.join("logs/lbp-build/acp-agent-runner.cmd").exists());
    for entry in walkdir::WalkDir::new(keep.path()) {
        let entry = entry.unwrap();
        assert!(
            !entry.file_name().to_string_lossy().contains("evil"),
            "{}",
            entry.path().display()
        );
    }
}
