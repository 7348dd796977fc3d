//! Git configuration and attributes that would change the certified bytes,
//! run through the built binary on fixture repositories with the genuine
//! SDK: the user's and the repository's configuration must not reach git;
//! committed attributes that convert bytes, and Git LFS pointers, are
//! refused naming the attribute or the file. Every run asserts the
//! repository under review is unchanged and the evidence is written.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// Runs `--only ONLY` on `repo` with `HOME=home` (when given) and returns
/// the exit code, the evidence and the output, asserting the repository is
/// byte-for-byte unchanged.
fn run_only(repo: &FixtureRepo, only: &str, home: Option<&Path>) -> (i32, Value, String) {
    let (_keep, dir) = evidence_dir();
    let before = tree_snapshot(&repo.root);
    let mut cmd = verifier_only(&repo.root, &dir, only);
    if let Some(home) = home {
        cmd.env("HOME", home);
    }
    let out = cmd.output().expect("run the verifier");
    assert_unchanged(
        &before,
        &tree_snapshot(&repo.root),
        "the repository under review",
    );
    assert!(dir.join("evidence.json").is_file(), "{}", both(&out));
    (exit_code(&out), read_evidence(&dir), both(&out))
}

fn commit_all(repo: &FixtureRepo, message: &str) {
    git(&repo.root, &["add", "-A"]);
    git(&repo.root, &["commit", "-q", "-m", message]);
}

#[test]
fn line_ending_conversion_in_repository_and_user_config_does_not_reach_the_certified_bytes() {
    let repo = fixture_repo(&[]);
    // The repository's own config, after the commit: checkout would write CRLF.
    git(&repo.root, &["config", "core.autocrlf", "true"]);
    git(&repo.root, &["config", "core.eol", "crlf"]);
    // The user's global config and per-user attributes file say the same.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        "[core]\n\tautocrlf = true\n\teol = crlf\n",
    )
    .unwrap();
    std::fs::create_dir_all(home.path().join(".config/git")).unwrap();
    std::fs::write(
        home.path().join(".config/git/attributes"),
        "* text eol=crlf\n",
    )
    .unwrap();

    let (code, ev, text) = run_only(&repo, "archive-members", Some(home.path()));
    assert_eq!(code, 0, "{text}");
    for gate in [
        "tree-clean",
        "stage",
        "sdk-record",
        "lbp-build",
        "archive-members",
    ] {
        assert_eq!(gate_result(&ev, gate), "pass", "{gate}: {text}");
    }
    for name in ["blob-ids", "byte-attributes"] {
        assert_eq!(
            check(&ev, "stage", name, None)["result"],
            "pass",
            "{name}: {}",
            detail(check(&ev, "stage", name, None))
        );
    }
}

#[test]
fn a_committed_eol_attribute_fails_stage_naming_attribute_and_path() {
    let repo = fixture_repo(&[]);
    std::fs::write(repo.root.join(".gitattributes"), "*.txt text eol=crlf\n").unwrap();
    commit_all(&repo, "eol attributes");

    let (code, ev, text) = run_only(&repo, "stage", None);
    assert_eq!(code, 1, "{text}");
    assert_eq!(gate_result(&ev, "stage"), "fail");
    let c = check(&ev, "stage", "byte-attributes", None);
    assert_eq!(c["result"], "fail", "{c}");
    let d = detail(c);
    for expected in [
        "\n  Runner/codex-agent/requirements.txt: text\n",
        "\n  Runner/codex-agent/requirements.txt: eol=crlf\n",
        "remove these attributes from .gitattributes",
    ] {
        assert!(d.contains(expected), "{expected:?} in {d}");
    }
    let observed = c["observed"].as_array().unwrap();
    assert!(observed
        .iter()
        .any(|a| a["path"] == "Runner/acp-agent-runner/requirements.txt"
            && a["attribute"] == "eol=crlf"));
    // Nothing but .txt files is named.
    assert!(observed
        .iter()
        .all(|a| a["path"].as_str().unwrap().ends_with(".txt")));
}

#[test]
fn a_committed_git_lfs_pointer_in_a_candidate_fails_stage_naming_the_file() {
    let repo = fixture_repo(&[]);
    std::fs::write(
        repo.root.join(".gitattributes"),
        "*.bin filter=lfs diff=lfs merge=lfs -text\n",
    )
    .unwrap();
    let pointer = "version https://git-lfs.github.com/spec/v1\n\
                   oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n\
                   size 104857600\n";
    std::fs::write(
        repo.root.join("Runner/codex-agent/assets/weights.bin"),
        pointer,
    )
    .unwrap();
    commit_all(&repo, "lfs pointer");

    let (code, ev, text) = run_only(&repo, "stage", None);
    assert_eq!(code, 1, "{text}");
    assert_eq!(gate_result(&ev, "stage"), "fail");
    let c = check(&ev, "stage", "no-lfs-pointers", Some("codex-agent"));
    assert_eq!(c["result"], "fail", "{c}");
    let d = detail(c);
    assert!(
        d.contains(&format!(
            "\n  Runner/codex-agent/assets/weights.bin ({} bytes)\n",
            pointer.len()
        )),
        "{d}"
    );
    assert!(
        d.contains("the archive would ship the pointer, not the content"),
        "{d}"
    );
    let a = check(&ev, "stage", "byte-attributes", None);
    assert_eq!(a["result"], "fail");
    assert!(
        detail(a).contains(
            "Runner/codex-agent/assets/weights.bin: filter=lfs (Git LFS: git archive ships the pointer file, not the content)"
        ),
        "{}",
        detail(a)
    );
    for other in ["acp-agent-runner", "claude-code-agent"] {
        assert_eq!(
            check(&ev, "stage", "no-lfs-pointers", Some(other))["result"],
            "pass"
        );
    }
}

#[test]
fn an_lfs_pointer_without_its_attribute_is_still_found_by_content() {
    let repo = fixture_repo(&[]);
    std::fs::write(
        repo.root.join("Runner/acp-agent-runner/assets/model.onnx"),
        "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n",
    )
    .unwrap();
    commit_all(&repo, "pointer without attribute");
    let (code, ev, text) = run_only(&repo, "stage", None);
    assert_eq!(code, 1, "{text}");
    assert_eq!(
        check(&ev, "stage", "byte-attributes", None)["result"],
        "pass"
    );
    let c = check(&ev, "stage", "no-lfs-pointers", Some("acp-agent-runner"));
    assert_eq!(c["result"], "fail");
    assert_eq!(
        c["observed"][0]["path"],
        "Runner/acp-agent-runner/assets/model.onnx"
    );
}
