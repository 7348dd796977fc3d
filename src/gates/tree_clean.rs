//! The `tree-clean` gate: the repository has no staged, unstaged or
//! untracked-unignored change, so the commit under review is exactly what the
//! work tree shows. Ignored files are listed, not judged.

use crate::context::RunContext;
use crate::evidence::Check;
use crate::git::{self, StatusEntry};
use serde_json::json;

/// The `tree-clean` gate.
pub struct TreeClean;

impl super::Gate for TreeClean {
    fn id(&self) -> &'static str {
        "tree-clean"
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Check>, String> {
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

        let mut checks = vec![
            change_check(
                "staged-changes",
                "staged (in the index, not committed)",
                &staged,
                &human,
            ),
            change_check(
                "unstaged-changes",
                "modified in the work tree and not staged",
                &unstaged,
                &human,
            ),
            change_check(
                "untracked-files",
                "untracked and not ignored",
                &untracked,
                &human,
            ),
        ];
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
        ctx.source.ignored_files = ignored;
        Ok(checks)
    }
}

fn change_check(name: &str, what: &str, entries: &[&StatusEntry], human: &str) -> Check {
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
    Check::fail(
        name,
        None,
        format!(
            "expected a clean committed tree, found {} path(s) {what} (relative to the repository):\n  {}\n\
             commit them, or stash/remove them, then run again; the commit is what gets certified.\n\
             git status:\n{}",
            paths.len(),
            paths.join("\n  "),
            human.trim_end()
        ),
    )
    .with_observed(json!({ "paths": paths }))
}
