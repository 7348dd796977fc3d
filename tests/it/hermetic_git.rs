//! Git configuration and attributes that would change the certified bytes,
//! run through the built binary on fixture repositories with the genuine
//! SDK: the user's and the repository's configuration must not reach git;
//! committed attributes that convert bytes, and Git LFS pointers, are
//! refused naming the attribute or the file. Every run asserts the
//! repository under review is unchanged and the evidence is written.

use crate::common;

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

/// An executable script in `dir` named `name` that creates
/// `markers/<name>-<first argument>` and passes its input through.
fn marker_script(dir: &Path, markers: &Path, name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ntouch '{}/{name}-'\"$1\"\nexec cat\n",
            markers.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The names of the files in `markers`.
fn markers_in(markers: &Path) -> Vec<String> {
    std::fs::read_dir(markers)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn no_command_of_the_repository_config_runs_and_a_selected_filter_driver_is_refused_before_git_archive(
) {
    let repo = fixture_repo(&[]);
    std::fs::write(repo.root.join(".gitattributes"), "*.txt filter=x diff=x\n").unwrap();
    commit_all(&repo, "attributes naming a filter and a diff driver");
    // After the commit, the repository's own config names a command for
    // every hook git has: each touches a marker file when run.
    let tools = tempfile::tempdir().unwrap();
    let markers = tools.path().join("markers");
    let hooks = tools.path().join("hooks");
    std::fs::create_dir_all(&markers).unwrap();
    std::fs::create_dir_all(&hooks).unwrap();
    let filter = marker_script(tools.path(), &markers, "filter");
    let fsmonitor = marker_script(tools.path(), &markers, "fsmonitor");
    let textconv = marker_script(tools.path(), &markers, "textconv");
    for hook in [
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "reference-transaction",
        "pre-auto-gc",
        "fsmonitor-watchman",
    ] {
        marker_script(&hooks, &markers, hook);
    }
    for (key, value) in [
        ("filter.x.clean", format!("{filter} clean")),
        ("filter.x.smudge", format!("{filter} smudge")),
        ("filter.x.process", format!("{filter} process")),
        ("filter.x.required", "true".to_string()),
        ("core.fsmonitor", fsmonitor),
        ("core.hooksPath", hooks.display().to_string()),
        ("diff.x.textconv", format!("{textconv} textconv")),
    ] {
        git(&repo.root, &["config", key, &value]);
    }
    // A committed file that looks modified (same bytes, newer mtime): git
    // status compares its content through the clean filter.
    let touched = repo.root.join("Runner/codex-agent/requirements.txt");
    let file = std::fs::File::options()
        .append(true)
        .open(&touched)
        .unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    drop(file);

    let (_keep, dir) = evidence_dir();
    let out = verifier_only(&repo.root, &dir, "tree-clean,stage")
        .output()
        .expect("run the verifier");
    let text = both(&out);
    assert_eq!(exit_code(&out), 1, "{text}");
    assert_eq!(markers_in(&markers), Vec::<String>::new(), "{text}");
    let ev = read_evidence(&dir);
    assert_eq!(gate_result(&ev, "tree-clean"), "pass", "{text}");
    let c = check(&ev, "stage", "filter-drivers", None);
    assert_eq!(c["result"], "fail", "{c}");
    let d = detail(c);
    for needed in [
        format!("filter `x` (filter.x.clean = \"{filter} clean\""),
        "selected by `filter=x` for:\n    Runner/".to_string(),
        "\n    Runner/codex-agent/requirements.txt".to_string(),
        "did not run git archive".to_string(),
    ] {
        assert!(d.contains(&needed), "{needed:?} in {d}");
    }
    assert_eq!(
        check(&ev, "stage", "git-archive", None)["consequence_of"],
        "filter-drivers"
    );
    assert!(!dir.join("staging/source.tar").exists());

    // Replay in the same repository runs git archive (its checks fail on
    // the unfinished run) with the same configuration: nothing runs either.
    let replay = replay_output(&dir, &["--repo", repo.root.to_str().unwrap()]);
    assert_eq!(
        markers_in(&markers),
        Vec::<String>::new(),
        "{}",
        both(&replay)
    );
}

#[test]
fn a_replace_ref_is_refused_by_name_and_the_staged_bytes_are_the_commits_own() {
    let repo = fixture_repo(&[]);
    let real = git(&repo.root, &["rev-parse", "HEAD"]).trim().to_string();
    let real_tree = git(&repo.root, &["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_string();
    let file = "Runner/codex-agent/requirements.txt";
    let committed = std::fs::read(repo.root.join(file)).unwrap();
    std::fs::write(repo.root.join(file), b"evil==6.6.6\n").unwrap();
    commit_all(&repo, "other bytes");
    let other = git(&repo.root, &["rev-parse", "HEAD"]).trim().to_string();
    git(&repo.root, &["reset", "-q", "--hard", &real]);
    git(&repo.root, &["replace", &real, &other]);
    // Plain git now shows the other bytes for the commit under review.
    let shown = git(&repo.root, &["show", &format!("{real}:{file}")]);
    assert_eq!(shown, "evil==6.6.6\n");

    let (_keep, dir) = evidence_dir();
    let out = verifier_only(&repo.root, &dir, "tree-clean,stage")
        .output()
        .expect("run the verifier");
    let text = both(&out);
    assert_eq!(exit_code(&out), 1, "{text}");
    let ev = read_evidence(&dir);
    assert_eq!(ev["source"]["commit"], real.as_str(), "{text}");
    assert_eq!(ev["source"]["tree"], real_tree.as_str(), "{text}");
    assert_eq!(gate_result(&ev, "tree-clean"), "pass", "{text}");
    let failing: Vec<&str> = failed_checks(&ev, "stage")
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failing, ["history-rewrites"], "{text}");
    let d = detail(check(&ev, "stage", "history-rewrites", None));
    for needed in [
        format!("refs/replace/{real} (object {real} reads as {other})"),
        "refuses to certify a repository whose history is rewritten by replace refs".to_string(),
        format!("`git replace -d {real}`"),
    ] {
        assert!(d.contains(&needed), "{needed:?} in {d}");
    }
    assert_eq!(
        std::fs::read(dir.join("staging/source").join(file)).unwrap(),
        committed
    );
}

#[test]
fn a_repository_core_worktree_does_not_move_the_tree_tree_clean_judges() {
    let repo = fixture_repo(&[]);
    // A clean copy of the commit inside the repository, named by the
    // repository's own core.worktree; then the real tree made dirty.
    let shadow = repo.root.join(".shadow");
    copy_tree(&fixtures_dir().join("candidate-repo"), &shadow);
    git(
        &repo.root,
        &["config", "core.worktree", &shadow.display().to_string()],
    );
    let readme = repo.root.join("README.md");
    let mut text = std::fs::read_to_string(&readme).unwrap();
    text.push_str("\nuncommitted line\n");
    std::fs::write(&readme, text).unwrap();
    assert_eq!(
        git(&repo.root, &["status", "--porcelain"]),
        "",
        "git itself reads the shadow tree as clean"
    );

    let (code, ev, text) = run_only(&repo, "tree-clean", None);
    assert_eq!(code, 1, "{text}");
    let unstaged = check(&ev, "tree-clean", "unstaged-changes", None);
    assert_eq!(unstaged["result"], "fail", "{unstaged}");
    assert_eq!(unstaged["observed"]["paths"][0], "README.md", "{unstaged}");
    let c = check(&ev, "tree-clean", "core-worktree", None);
    assert_eq!(c["result"], "warn", "{c}");
    assert_eq!(c["observed"]["configured"], shadow.display().to_string());
    assert_eq!(c["observed"]["used"], repo.root.display().to_string());
    assert_eq!(ev["source"]["repo"], repo.root.display().to_string());

    // Without the setting no such check is recorded.
    let clean = fixture_repo(&[]);
    let (code, ev, text) = run_only(&clean, "tree-clean", None);
    assert_eq!(code, 0, "{text}");
    assert!(
        checks(&ev, "tree-clean")
            .iter()
            .all(|c| c["name"] != "core-worktree"),
        "{text}"
    );
}

/// The work tree (and index) checked out as the replacement of a replace
/// ref: hermetic git compares them with the commit's own tree, so the file
/// shows as staged; tree-clean names the replace ref as the cause.
#[test]
fn a_work_tree_matching_a_replacement_names_the_replace_ref_in_tree_clean() {
    let repo = fixture_repo(&[]);
    let real = git(&repo.root, &["rev-parse", "HEAD"]).trim().to_string();
    let file = "Runner/codex-agent/requirements.txt";
    std::fs::write(repo.root.join(file), b"evil==6.6.6\n").unwrap();
    commit_all(&repo, "other bytes");
    let other = git(&repo.root, &["rev-parse", "HEAD"]).trim().to_string();
    git(&repo.root, &["reset", "-q", "--hard", &real]);
    git(&repo.root, &["replace", &real, &other]);
    // Plain git, replace refs on, checks the replacement out.
    git(&repo.root, &["reset", "-q", "--hard"]);
    assert_eq!(
        std::fs::read_to_string(repo.root.join(file)).unwrap(),
        "evil==6.6.6\n"
    );
    let (_keep, dir) = evidence_dir();
    let out = verifier_only(&repo.root, &dir, "tree-clean")
        .output()
        .expect("run the verifier");
    let text = both(&out);
    assert_eq!(exit_code(&out), 1, "{text}");
    let ev = read_evidence(&dir);
    let rewrite = check(&ev, "tree-clean", "history-rewrites", None);
    assert_eq!(rewrite["result"], "fail", "{text}");
    assert!(
        detail(rewrite).contains(&format!(
            "refs/replace/{real} (object {real} reads as {other})"
        )),
        "{text}"
    );
    let changed: Vec<&Value> = failed_checks(&ev, "tree-clean")
        .into_iter()
        .filter(|c| c["name"] != "history-rewrites")
        .collect();
    assert!(!changed.is_empty(), "{text}");
    for c in changed {
        assert_eq!(c["consequence_of"], "history-rewrites", "{c}");
        assert!(detail(c).contains(file), "{c}");
    }
}
