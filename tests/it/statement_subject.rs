//! The statement names the source by its `origin` URL (credentials removed)
//! or by the repository folder's name, never by the machine's path.

use crate::common;

use common::{evidence_dir, exit_code, fixture_repo, git, shared_run, stderr_text, verifier_only};
use std::path::Path;

/// The statement's `gitCommit` subject name after an `--only tree-clean` run.
fn source_subject(repo: &common::FixtureRepo) -> (String, serde_json::Value) {
    let (_keep, dir) = evidence_dir();
    let out = verifier_only(&repo.root, &dir, "tree-clean")
        .output()
        .unwrap();
    assert_eq!(exit_code(&out), 0, "{}", stderr_text(&out));
    subject_in(&dir)
}

/// The `gitCommit` subject name of the statement in evidence directory
/// `dir`, and its evidence.
fn subject_in(dir: &Path) -> (String, serde_json::Value) {
    let statement: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("statement.intoto.json")).unwrap()).unwrap();
    let subject = statement["subject"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["digest"]["gitCommit"].is_string())
        .expect("a gitCommit subject")["name"]
        .as_str()
        .unwrap()
        .to_string();
    (subject, common::read_evidence(dir))
}

#[test]
fn the_subject_is_the_origin_url_without_credentials() {
    let repo = fixture_repo(&[]);
    git(
        &repo.root,
        &[
            "remote",
            "add",
            "origin",
            "https://ci-bot:ghp_SECRET@github.com/langbot-app/langbot-plugins.git",
        ],
    );
    let (subject, evidence) = source_subject(&repo);
    assert_eq!(
        subject,
        "git+https://github.com/langbot-app/langbot-plugins.git"
    );
    assert_eq!(
        evidence["source"]["origin"],
        "https://github.com/langbot-app/langbot-plugins.git"
    );
    assert!(
        !evidence.to_string().contains("SECRET"),
        "no credential in the evidence"
    );
}

#[test]
fn without_an_origin_or_with_a_local_one_the_subject_is_the_folder_name() {
    // Without an origin: the shared `--only tree-clean` run of the fixture.
    let run = shared_run(&[], &["--only", "tree-clean"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let folder = run.repo.file_name().unwrap().to_string_lossy().into_owned();
    let (subject, _) = subject_in(&run.evidence);
    assert_eq!(subject, folder);
    assert!(!subject.contains('/'), "{subject}");

    // With a local origin: a repository of the test's own.
    let repo = fixture_repo(&[]);
    assert_eq!(repo.root.file_name(), run.repo.file_name());
    git(
        &repo.root,
        &["remote", "add", "origin", "/srv/git/langbot-plugins.git"],
    );
    let (subject, evidence) = source_subject(&repo);
    assert_eq!(subject, folder, "a local origin is a machine path too");
    assert!(evidence["source"]["origin"].is_null());
}
