//! `--worktree`: the working tree certified as it is, through the binary, on
//! a fixture repository with a modified, an untracked, a deleted and an
//! ignored file. The staged source has the working tree's bytes, the
//! evidence and the statement say "working tree, not a commit" (never
//! PASSED), and the repository (`.git/` included) is untouched.

mod common;

use common::{
    assert_unchanged, check, evidence_dir, exit_code, fixture_repo, read_evidence, stderr_text,
    stdout_text, tree_snapshot, verifier_only,
};

#[test]
fn the_working_tree_is_staged_and_labelled_never_passed_and_the_repository_untouched() {
    let repo = fixture_repo(&[]);
    let root = &repo.root;
    let modified = "Runner/acp-agent-runner/main.py";
    let mut bytes = std::fs::read(root.join(modified)).unwrap();
    bytes.extend_from_slice(b"\n# an uncommitted change\n");
    std::fs::write(root.join(modified), &bytes).unwrap();
    std::fs::write(root.join("notes.txt"), b"untracked, not ignored\n").unwrap();
    std::fs::write(root.join("debug.log"), b"ignored by *.log\n").unwrap();
    std::fs::remove_file(root.join("Runner/certification-tests/README.md")).unwrap();
    let before = tree_snapshot(root);

    // Without --worktree the same tree fails tree-clean.
    let (_keep0, plain) = evidence_dir();
    let out = verifier_only(root, &plain, "stage").output().unwrap();
    assert_eq!(exit_code(&out), 1, "{}", stderr_text(&out));

    let (_keep, dir) = evidence_dir();
    let out = verifier_only(root, &dir, "stage")
        .arg("--worktree")
        .output()
        .unwrap();
    assert_unchanged(&before, &tree_snapshot(root), "the repository under review");
    assert_eq!(
        exit_code(&out),
        0,
        "{}\n{}",
        stdout_text(&out),
        stderr_text(&out)
    );

    let source = dir.join("staging/source");
    assert_eq!(
        std::fs::read(source.join(modified)).unwrap(),
        bytes,
        "the new bytes"
    );
    assert_eq!(
        std::fs::read(source.join("notes.txt")).unwrap(),
        b"untracked, not ignored\n"
    );
    assert!(
        !source.join("debug.log").exists(),
        "an ignored file is not staged"
    );
    assert!(
        !source.join("Runner/certification-tests/README.md").exists(),
        "a deleted file is not staged"
    );

    let ev = read_evidence(&dir);
    let w = &ev["source"]["worktree"];
    assert_eq!(w["label"], "working tree, not a commit", "{w}");
    assert_eq!(w["digest"].as_str().map(str::len), Some(64), "{w}");
    let uncommitted: Vec<&str> = w["uncommitted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for p in [
        modified,
        "notes.txt",
        "Runner/certification-tests/README.md",
    ] {
        assert!(uncommitted.contains(&p), "{p} in {uncommitted:?}");
    }
    for name in ["unstaged-changes", "untracked-files"] {
        let c = check(&ev, "tree-clean", name, None);
        assert_eq!(c["result"], "warn", "{c}");
    }
    let blobs = check(&ev, "stage", "blob-ids", None);
    assert_eq!(blobs["result"], "pass", "{blobs}");

    let statement: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("statement.intoto.json")).unwrap()).unwrap();
    assert_ne!(statement["predicate"]["result"], "PASSED");
    let subject = statement["subject"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["annotations"]["source"] == "working tree, not a commit")
        .expect("the working tree's subject");
    assert_eq!(subject["digest"]["sha256"], w["digest"], "{subject}");
    assert!(subject["digest"]["gitCommit"].is_null(), "{subject}");
    assert!(
        stdout_text(&out).starts_with("working tree, not a commit"),
        "{}",
        stdout_text(&out)
    );
}

#[test]
fn merge_refuses_shares_of_two_different_working_trees() {
    let repo = fixture_repo(&[]);
    let share = |k: &str, dir: &std::path::Path| {
        let out = verifier_only(&repo.root, dir, "stage")
            .args(["--worktree", "--partition", k])
            .output()
            .unwrap();
        assert_eq!(exit_code(&out), 0, "{}", stderr_text(&out));
    };
    let (_k1, p1) = evidence_dir();
    let (_k2, p2) = evidence_dir();
    std::fs::write(repo.root.join("notes.txt"), b"first\n").unwrap();
    share("1/2", &p1);
    std::fs::write(repo.root.join("notes.txt"), b"second\n").unwrap();
    share("2/2", &p2);
    let (_k3, merged) = evidence_dir();
    let out = common::merge_output(&merged, &[&p1, &p2]);
    assert_eq!(exit_code(&out), 2, "{}", stderr_text(&out));
    assert!(
        stderr_text(&out).contains("disagree on source: working tree "),
        "{}",
        stderr_text(&out)
    );
    assert!(!merged.exists(), "nothing is written on refusal");
}
