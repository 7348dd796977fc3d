//! `--worktree`: the working tree certified as it is, through the binary, on
//! a fixture repository with a modified, an untracked, a deleted and an
//! ignored file. The staged source has the working tree's bytes, the
//! evidence and the statement say "working tree, not a commit" (never
//! PASSED), and the repository (`.git/` included) is untouched. A full
//! `--worktree` run goes through every gate (issue 36: the tar's time 0 made
//! `lbp build` leave every file out), and the README's inner-loop command
//! runs as written.

use crate::common;

use common::{
    assert_unchanged, check, evidence_dir, exit_code, fixture_repo, read_evidence, stderr_text,
    stdout_text, tree_snapshot, verifier, verifier_only,
};

/// Appends an uncommitted comment to one candidate's `main.py`; returns its
/// repository-relative path.
fn edit_one_file(root: &std::path::Path) -> &'static str {
    let modified = "Runner/acp-agent-runner/main.py";
    let mut bytes = std::fs::read(root.join(modified)).unwrap();
    bytes.extend_from_slice(b"\n# an uncommitted change\n");
    std::fs::write(root.join(modified), &bytes).unwrap();
    modified
}

/// The statement's `predicate.result` in `dir`; asserts that its profile
/// entry names no machine path (issue 36 item 4).
fn statement_result(dir: &std::path::Path) -> serde_json::Value {
    let statement: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("statement.intoto.json")).unwrap()).unwrap();
    let profile = &statement["predicate"]["configuration"][0];
    assert_eq!(
        profile["annotations"]["origin"], "builtin:coding-runners",
        "{profile}"
    );
    statement["predicate"]["result"].clone()
}

/// Issue 36 item 1: with one uncommitted edit, a full `--worktree` run goes
/// through every gate (no `lbp-build/files-added` failure: the staged files
/// carry their own times, never 1970), certified as the working tree and
/// never PASSED.
#[test]
fn a_full_worktree_run_goes_through_every_gate_and_is_never_passed() {
    let repo = fixture_repo(&[]);
    let modified = edit_one_file(&repo.root);
    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--worktree")
        .output()
        .unwrap();
    let text = format!("{}\n{}", stdout_text(&out), stderr_text(&out));
    let ev = read_evidence(&dir);
    let files_added: Vec<&serde_json::Value> = common::checks(&ev, "lbp-build")
        .iter()
        .filter(|c| c["name"] == "files-added")
        .collect();
    assert_eq!(files_added.len(), 3, "{text}");
    for c in files_added {
        assert_eq!(c["result"], "pass", "{c}");
    }
    for g in ev["gates"].as_array().unwrap() {
        // historical-admission is skipped without archives, as in every
        // full run of the fixture (tests/it/end_to_end.rs);
        // shared-runtime is skipped too: no fixture candidate claims it.
        let expected = if g["id"] == "historical-admission" || g["id"] == "shared-runtime" {
            "skipped"
        } else {
            "pass"
        };
        assert_eq!(g["result"], expected, "gate {}: {g}\n{text}", g["id"]);
    }
    assert!(
        ev["selection"]["gates_not_run"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{}",
        ev["selection"]
    );
    assert_eq!(exit_code(&out), 0, "{text}");
    assert_eq!(ev["verdict"], "pass", "{text}");
    assert_eq!(ev["source"]["worktree"]["uncommitted"][0], modified);
    assert_eq!(statement_result(&dir), "WARNED");
    assert!(
        stdout_text(&out).starts_with("working tree, not a commit"),
        "{text}"
    );
    assert!(
        stdout_text(&out).contains(
            "\nPASS with 1 warning (working tree, not a commit; not a certification of a commit): \
             evidence in"
        ),
        "{text}"
    );
}

/// The README's inner-loop command, read from README.md and run as
/// written (only its evidence folder made fresh), on a tree with an
/// uncommitted edit.
#[test]
fn the_readme_inner_loop_command_runs_as_written() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.contains("--worktree --only suites"))
        .expect("README.md shows the inner-loop command");
    let words: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
    assert_eq!(
        words,
        [
            "verify-coding-candidates",
            "--repo",
            ".",
            "--worktree",
            "--only",
            "suites",
            "--evidence",
            "/tmp/ev2"
        ]
    );
    let repo = fixture_repo(&[]);
    edit_one_file(&repo.root);
    let (_keep, dir) = evidence_dir();
    let args: Vec<std::ffi::OsString> = words[1..]
        .iter()
        .map(|w| match *w {
            "/tmp/ev2" => dir.clone().into_os_string(),
            w => w.into(),
        })
        .collect();
    let out = verifier()
        .current_dir(&repo.root)
        .args(&args)
        .output()
        .unwrap();
    let text = format!("{}\n{}", stdout_text(&out), stderr_text(&out));
    assert_eq!(exit_code(&out), 0, "{text}");
    let ev = read_evidence(&dir);
    assert_eq!(common::gate_result(&ev, "suites"), "pass", "{text}");
    assert_eq!(common::gate_result(&ev, "lbp-build"), "pass", "{text}");
    assert_eq!(statement_result(&dir), "WARNED");
}

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
