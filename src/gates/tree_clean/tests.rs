//! Counterexamples for `tree-clean`, one per clause of its `proves`
//! sentence: a staged change, an unstaged change, an untracked-unignored
//! file each fail; ignored files are listed and never fail; the commit and
//! tree id are recorded.

use super::*;
use crate::evidence::CheckResult;

fn line(index: char, worktree: char, path: &str) -> StatusLine {
    StatusLine {
        index,
        worktree,
        path: path.into(),
        orig: None,
    }
}

const HUMAN: &str = "On branch main\nChanges not staged for commit:\n\tmodified:   a.py\n";

fn obs(entries: Vec<StatusLine>) -> Observation {
    Observation {
        entries,
        git_status: HUMAN.into(),
        commit: "c".repeat(40),
        tree: "t".repeat(40),
        rewrites: vec![],
    }
}

fn get<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks.iter().find(|c| c.name == name).unwrap()
}

/// (name, result) of every check, in order.
fn results(checks: &[Check]) -> Vec<(&str, CheckResult)> {
    checks.iter().map(|c| (c.name.as_str(), c.result)).collect()
}

#[test]
fn a_clean_tree_passes_every_check_with_what_it_observed() {
    let checks = decide(&obs(vec![]));
    assert_eq!(
        results(&checks),
        [
            ("staged-changes", CheckResult::Pass),
            ("unstaged-changes", CheckResult::Pass),
            ("untracked-files", CheckResult::Pass),
            ("ignored-files", CheckResult::Pass),
            ("commit", CheckResult::Pass),
        ]
    );
    for c in &checks {
        let o = c.observed.as_ref().unwrap();
        assert!(o.as_object().is_some_and(|m| !m.is_empty()), "{}", c.name);
    }
    assert_eq!(
        get(&checks, "staged-changes").observed.as_deref().cloned(),
        Some(json!({"count": 0, "paths": []}))
    );
    assert_eq!(
        get(&checks, "staged-changes").detail,
        "no path is staged (in the index, not committed)"
    );
}

#[test]
fn refuses_a_staged_change() {
    for index in ['M', 'A', 'D', 'T', 'U'] {
        let checks = decide(&obs(vec![line(index, ' ', "a.py")]));
        let c = get(&checks, "staged-changes");
        assert_eq!(c.result, CheckResult::Fail, "{index}");
        assert_eq!(
            c.observed.as_deref().cloned(),
            Some(json!({"count": 1, "paths": ["a.py"]}))
        );
        assert!(
            c.detail.starts_with(
                "expected a clean committed tree, found 1 path(s) staged (in the index, not committed)"
            ),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains("commit them, or stash/remove them"),
            "{}",
            c.detail
        );
        assert_eq!(get(&checks, "unstaged-changes").result, CheckResult::Pass);
        assert_eq!(get(&checks, "untracked-files").result, CheckResult::Pass);
    }
}

#[test]
fn refuses_a_staged_rename_naming_both_paths() {
    let mut l = line('R', ' ', "new.py");
    l.orig = Some("old.py".into());
    let checks = decide(&obs(vec![l]));
    let c = get(&checks, "staged-changes");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.contains("\n  old.py -> new.py\n"), "{}", c.detail);
}

#[test]
fn refuses_an_unstaged_change() {
    for worktree in ['M', 'D', 'T'] {
        let checks = decide(&obs(vec![line(' ', worktree, "a.py")]));
        let c = get(&checks, "unstaged-changes");
        assert_eq!(c.result, CheckResult::Fail, "{worktree}");
        assert!(
            c.detail
                .contains("1 path(s) modified in the work tree and not staged"),
            "{}",
            c.detail
        );
        assert_eq!(get(&checks, "staged-changes").result, CheckResult::Pass);
        assert_eq!(get(&checks, "untracked-files").result, CheckResult::Pass);
    }
}

#[test]
fn refuses_a_change_both_staged_and_modified_again_in_both_checks() {
    let checks = decide(&obs(vec![line('M', 'M', "a.py")]));
    assert_eq!(get(&checks, "staged-changes").result, CheckResult::Fail);
    assert_eq!(get(&checks, "unstaged-changes").result, CheckResult::Fail);
}

#[test]
fn refuses_an_untracked_unignored_file() {
    let checks = decide(&obs(vec![line('?', '?', "new.txt")]));
    let c = get(&checks, "untracked-files");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(
            "1 path(s) untracked and not ignored (relative to the repository):\n  new.txt\n"
        ),
        "{}",
        c.detail
    );
    assert_eq!(get(&checks, "staged-changes").result, CheckResult::Pass);
    assert_eq!(get(&checks, "unstaged-changes").result, CheckResult::Pass);
}

#[test]
fn ignored_files_are_listed_and_never_fail() {
    let o = obs(vec![line('!', '!', "build/x.o"), line('!', '!', ".venv/")]);
    let checks = decide(&o);
    assert!(checks.iter().all(|c| c.result == CheckResult::Pass));
    let c = get(&checks, "ignored-files");
    assert_eq!(
        c.detail,
        "2 ignored path(s) present; listed in source.ignored_files, not judged"
    );
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"count": 2, "ignored": ["build/x.o", ".venv/"]}))
    );
    assert_eq!(ignored(&o), ["build/x.o", ".venv/"]);
}

#[test]
fn the_commit_and_tree_are_recorded() {
    let checks = decide(&obs(vec![]));
    let c = get(&checks, "commit");
    assert_eq!(
        c.detail,
        format!(
            "reviewing commit {} (tree {})",
            "c".repeat(40),
            "t".repeat(40)
        )
    );
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"commit": "c".repeat(40), "tree": "t".repeat(40)}))
    );
}

#[test]
fn git_status_is_shown_once_and_every_failing_check_keeps_its_paths() {
    let checks = decide(&obs(vec![
        line(' ', 'M', "a.py"),
        line('?', '?', "new.txt"),
    ]));
    let unstaged = get(&checks, "unstaged-changes");
    let untracked = get(&checks, "untracked-files");
    assert_eq!(unstaged.result, CheckResult::Fail);
    assert_eq!(untracked.result, CheckResult::Fail);
    assert!(
        unstaged.detail.contains("\n  a.py\n"),
        "{}",
        unstaged.detail
    );
    assert!(
        unstaged
            .detail
            .ends_with(&format!("git status:\n{}", HUMAN.trim_end())),
        "{}",
        unstaged.detail
    );
    assert!(
        untracked.detail.contains("\n  new.txt\n"),
        "{}",
        untracked.detail
    );
    assert!(
        !untracked.detail.contains("On branch"),
        "{}",
        untracked.detail
    );
    assert!(
        untracked
            .detail
            .ends_with("git status: see the unstaged-changes check above"),
        "{}",
        untracked.detail
    );
}

#[test]
fn the_first_failing_check_carries_git_status_even_when_it_is_the_first() {
    let checks = decide(&obs(vec![line('A', ' ', "a.py"), line(' ', 'M', "b.py")]));
    assert!(get(&checks, "staged-changes")
        .detail
        .contains("On branch main"));
    assert!(get(&checks, "unstaged-changes")
        .detail
        .ends_with("git status: see the staged-changes check above"));
}

// ----- run: the gate on a real repository ---------------------------------

#[test]
fn run_refuses_an_untracked_file_and_hands_on_the_ignored_ones() {
    use crate::gates::{testing, Gate};
    let repo = tempfile::tempdir().unwrap();
    let evidence = tempfile::tempdir().unwrap();
    testing::repo(repo.path(), &[("a.py", "a\n"), (".gitignore", "*.log\n")]);
    std::fs::write(repo.path().join("new.py"), "n\n").unwrap();
    std::fs::write(repo.path().join("x.log"), "l\n").unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.repo = repo.path().to_path_buf();
    let (checks, after) = testing::run(&TreeClean, &ctx);
    let checks = checks.unwrap();
    let untracked = get(&checks, "untracked-files");
    assert_eq!(untracked.result, CheckResult::Fail, "{untracked:?}");
    assert!(untracked.detail.contains("new.py"), "{untracked:?}");
    assert_eq!(after.source.ignored_files, ["x.log"]);
    assert_eq!(TreeClean.id(), "tree-clean");
}

// ----- --worktree: uncommitted and as_worktree ----------------------------

#[test]
fn uncommitted_lists_staged_unstaged_and_untracked_paths_in_order_and_never_ignored_ones() {
    let mut renamed = line('R', ' ', "new.py");
    renamed.orig = Some("old.py".into());
    let o = obs(vec![
        line('M', ' ', "staged.py"),
        line('!', '!', "x.log"),
        line(' ', 'M', "unstaged.py"),
        renamed,
        line('?', '?', "notes.txt"),
        line('A', 'D', "both.py"),
    ]);
    assert_eq!(
        uncommitted(&o),
        [
            "staged.py",
            "unstaged.py",
            "old.py -> new.py",
            "notes.txt",
            "both.py"
        ]
    );
    assert!(uncommitted(&obs(vec![line('!', '!', "x.log")])).is_empty());
    assert!(uncommitted(&obs(vec![])).is_empty());
}

/// A check named `name` with `result` and detail `"d"`.
fn named(name: &str, result: CheckResult) -> Check {
    let mut c = Check::pass(name, None, "d");
    c.result = result;
    c
}

#[test]
fn as_worktree_turns_only_failing_change_checks_into_warnings_naming_the_working_tree() {
    let checks = vec![
        named("staged-changes", CheckResult::Fail),
        named("unstaged-changes", CheckResult::Pass),
        named("untracked-files", CheckResult::Warn),
        named("commit", CheckResult::Fail),
        named("core-worktree", CheckResult::Fail),
        named("untracked-files", CheckResult::Fail),
    ];
    let got = as_worktree(checks);
    let summary: Vec<(&str, CheckResult, &str)> = got
        .iter()
        .map(|c| (c.name.as_str(), c.result, c.detail.as_str()))
        .collect();
    let warned = "--worktree: certified as uncommitted (working tree, not a commit); d";
    assert_eq!(
        summary,
        [
            ("staged-changes", CheckResult::Warn, warned),
            ("unstaged-changes", CheckResult::Pass, "d"),
            ("untracked-files", CheckResult::Warn, "d"),
            ("commit", CheckResult::Fail, "d"),
            ("core-worktree", CheckResult::Fail, "d"),
            ("untracked-files", CheckResult::Warn, warned),
        ]
    );
    assert!(as_worktree(vec![]).is_empty());
}

#[test]
fn every_change_check_decide_fails_is_a_warning_under_worktree() {
    let checks = as_worktree(decide(&obs(vec![
        line('M', ' ', "staged.py"),
        line(' ', 'M', "unstaged.py"),
        line('?', '?', "notes.txt"),
    ])));
    for name in ["staged-changes", "unstaged-changes", "untracked-files"] {
        let c = get(&checks, name);
        assert_eq!(c.result, CheckResult::Warn, "{c:?}");
        assert!(c.detail.starts_with("--worktree: certified"), "{c:?}");
    }
    assert!(checks.iter().all(|c| c.result != CheckResult::Fail));
}

#[test]
fn run_under_worktree_warns_and_hands_on_the_uncommitted_paths() {
    use crate::gates::testing;
    let repo = tempfile::tempdir().unwrap();
    let evidence = tempfile::tempdir().unwrap();
    testing::repo(repo.path(), &[("a.py", "a\n"), (".gitignore", "*.log\n")]);
    std::fs::write(repo.path().join("new.py"), "n\n").unwrap();
    std::fs::write(repo.path().join("a.py"), "changed\n").unwrap();
    std::fs::write(repo.path().join("x.log"), "l\n").unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.repo = repo.path().to_path_buf();
    ctx.source.worktree = Some(crate::evidence::WorktreeSource {
        label: crate::worktree::LABEL.into(),
        digest: None,
        files: None,
        uncommitted: Vec::new(),
    });
    let (checks, after) = testing::run(&TreeClean, &ctx);
    let checks = checks.unwrap();
    for name in ["unstaged-changes", "untracked-files"] {
        let c = get(&checks, name);
        assert_eq!(c.result, CheckResult::Warn, "{c:?}");
    }
    let w = after.source.worktree.expect("still a working-tree run");
    assert_eq!(w.uncommitted, ["a.py", "new.py"]);
    assert_eq!(after.source.ignored_files, ["x.log"]);
}

#[test]
fn a_change_in_a_repository_with_a_replace_ref_names_the_ref_as_the_cause() {
    let mut o = obs(vec![line('M', ' ', "Runner/a/main.py")]);
    o.rewrites = vec![crate::git::HistoryRewrite::ReplaceRef {
        name: format!("refs/replace/{}", "c".repeat(40)),
        replacement: "d".repeat(40),
    }];
    let checks = decide(&o);
    let staged = checks
        .iter()
        .find(|c| c.result == CheckResult::Fail)
        .unwrap();
    assert_eq!(staged.consequence_of.as_deref(), Some("history-rewrites"));
    assert!(
        staged.detail.contains("Runner/a/main.py"),
        "{}",
        staged.detail
    );
    assert!(
        staged.detail.contains("replace refs or grafts"),
        "{}",
        staged.detail
    );
    let rewrite = get(&checks, "history-rewrites");
    assert_eq!(rewrite.result, CheckResult::Fail);
    assert!(
        rewrite.detail.contains(&format!(
            "refs/replace/{} (object {} reads as {})",
            "c".repeat(40),
            "c".repeat(40),
            "d".repeat(40)
        )) && rewrite.detail.contains("git replace -d"),
        "{}",
        rewrite.detail
    );
    // Without a rewrite, no such check and no note.
    let checks = decide(&obs(vec![line('M', ' ', "Runner/a/main.py")]));
    assert!(checks.iter().all(|c| c.name != "history-rewrites"));
    // A clean tree with a rewrite: left to the `stage` gate's refusal.
    o.entries.clear();
    let checks = decide(&o);
    assert!(checks.iter().all(|c| c.result == CheckResult::Pass));
    assert!(checks.iter().all(|c| c.name != "history-rewrites"));
}
