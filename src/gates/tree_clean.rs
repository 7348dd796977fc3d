//! The `tree-clean` gate: the repository has no staged, unstaged or
//! untracked-unignored change, so the commit under review is exactly what the
//! work tree shows. Ignored files are listed, not judged.

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, CheckResult};
use crate::git::{self, StatusEntry};
use serde_json::json;

/// The `tree-clean` gate.
pub struct TreeClean;

impl super::Gate for TreeClean {
    fn id(&self) -> &'static str {
        "tree-clean"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let status = git::run(
            &ctx.repo,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--ignored=matching",
            ],
            Some(&ctx.log_stem("tree-clean", "git-status-porcelain")),
            None,
        )?;
        let entries = git::parse_status_z(&status.stdout);
        let human = git::run(
            &ctx.repo,
            &["status", "--untracked-files=all"],
            Some(&ctx.log_stem("tree-clean", "git-status")),
            None,
        )?
        .stdout_text();

        let staged: Vec<&StatusEntry> = entries
            .iter()
            .filter(|e| !matches!(e.index, ' ' | '?' | '!'))
            .collect();
        let unstaged: Vec<&StatusEntry> = entries
            .iter()
            .filter(|e| !matches!(e.worktree, ' ' | '?' | '!'))
            .collect();
        let untracked: Vec<&StatusEntry> = entries.iter().filter(|e| e.index == '?').collect();
        let ignored: Vec<String> = entries
            .iter()
            .filter(|e| e.index == '!')
            .map(|e| e.path.clone())
            .collect();

        // The full `git status` goes into the first failing check only; the
        // others keep their own path lists and point back to it.
        let mut status_shown_in: Option<&str> = None;
        let mut checks = Vec::new();
        for (name, what, entries) in [
            (
                "staged-changes",
                "staged (in the index, not committed)",
                &staged,
            ),
            (
                "unstaged-changes",
                "modified in the work tree and not staged",
                &unstaged,
            ),
            ("untracked-files", "untracked and not ignored", &untracked),
        ] {
            let status = match status_shown_in {
                None => GitStatus::Full(&human),
                Some(first) => GitStatus::SeeCheck(first),
            };
            let check = change_check(name, what, entries, status);
            if check.result == CheckResult::Fail && status_shown_in.is_none() {
                status_shown_in = Some(name);
            }
            checks.push(check);
        }
        checks.push(
            Check::pass(
                "ignored-files",
                None,
                format!(
                    "{} ignored path(s) present; listed in source.ignored_files, not judged",
                    ignored.len()
                ),
            )
            .with_observed(json!({ "ignored": ignored })),
        );
        checks.push(
            Check::pass(
                "commit",
                None,
                format!(
                    "reviewing commit {} (tree {})",
                    ctx.source.commit, ctx.source.tree
                ),
            )
            .with_observed(json!({ "commit": ctx.source.commit, "tree": ctx.source.tree })),
        );
        out.set(move |ctx| ctx.source.ignored_files = ignored);
        Ok(checks)
    }
}

/// Where a failing change check finds the human-readable `git status`.
enum GitStatus<'a> {
    /// The full text, included in this check's detail.
    Full(&'a str),
    /// Included in the detail of this earlier check.
    SeeCheck(&'a str),
}

fn change_check(name: &str, what: &str, entries: &[&StatusEntry], status: GitStatus) -> Check {
    let paths: Vec<String> = entries
        .iter()
        .map(|e| match &e.orig {
            Some(orig) => format!("{orig} -> {}", e.path),
            None => e.path.clone(),
        })
        .collect();
    if paths.is_empty() {
        return Check::pass(name, None, format!("no path is {what}"));
    }
    let status = match status {
        GitStatus::Full(text) => format!("git status:\n{}", text.trim_end()),
        GitStatus::SeeCheck(first) => format!("git status: see the {first} check above"),
    };
    Check::fail(
        name,
        None,
        format!(
            "expected a clean committed tree, found {} path(s) {what} (relative to the repository):\n  {}\n\
             commit them, or stash/remove them, then run again; the commit is what gets certified.\n\
             {status}",
            paths.len(),
            paths.join("\n  "),
        ),
    )
    .with_observed(json!({ "paths": paths }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: char, worktree: char, path: &str) -> StatusEntry {
        StatusEntry {
            index,
            worktree,
            path: path.into(),
            orig: None,
        }
    }

    #[test]
    fn git_status_is_shown_once_and_every_failing_check_keeps_its_paths() {
        let human = "On branch main\nChanges not staged for commit:\n\tmodified:   a.py";
        let a = entry(' ', 'M', "a.py");
        let b = entry('?', '?', "new.txt");
        let unstaged = change_check(
            "unstaged-changes",
            "modified in the work tree and not staged",
            &[&a],
            GitStatus::Full(human),
        );
        let untracked = change_check(
            "untracked-files",
            "untracked and not ignored",
            &[&b],
            GitStatus::SeeCheck("unstaged-changes"),
        );
        assert_eq!(unstaged.result, CheckResult::Fail);
        assert_eq!(untracked.result, CheckResult::Fail);
        assert!(
            unstaged.detail.contains("\n  a.py\n"),
            "{}",
            unstaged.detail
        );
        assert!(
            unstaged.detail.ends_with(&format!("git status:\n{human}")),
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
}
