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
