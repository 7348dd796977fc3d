//! The `tree-clean` gate: the repository has no staged, unstaged or
//! untracked-unignored change, so the commit under review is exactly what the
//! work tree shows. Ignored files are listed, not judged.
//!
//! [`observe`] runs hermetic `git status` and records every entry as git
//! printed it; [`decide`] sorts the entries into staged, unstaged, untracked
//! and ignored and judges them, without I/O.

mod core_worktree;

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, CheckResult};
use crate::git;
use serde::Serialize;
use serde_json::json;

/// The `tree-clean` gate.
pub struct TreeClean;

/// One `git status --porcelain=v1` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct StatusLine {
    /// Index status letter (`X`): ` `, `M`, `A`, `D`, `R`, `C`, `T`, `U`,
    /// `?` (untracked) or `!` (ignored).
    pub index: char,
    /// Work-tree status letter (`Y`).
    pub worktree: char,
    /// Repository-relative path.
    pub path: String,
    /// Original path of a rename or copy.
    pub orig: Option<String>,
}

/// What hermetic git reported about the work tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Observation {
    /// Every entry of `git status --porcelain=v1 -z --untracked-files=all
    /// --ignored=matching`, in git's order.
    pub entries: Vec<StatusLine>,
    /// The human-readable `git status --untracked-files=all`.
    pub git_status: String,
    /// The commit under review.
    pub commit: String,
    /// Its tree id.
    pub tree: String,
    /// Replace refs and graft files (ignored by every git call, so the
    /// commit's own tree is compared with the work tree, not the
    /// replacement a plain `git` shows).
    pub rewrites: Vec<git::HistoryRewrite>,
}

impl super::Gate for TreeClean {
    fn id(&self) -> &'static str {
        "tree-clean"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let obs = observe(ctx)?;
        let ignored = ignored(&obs);
        out.set(move |ctx| ctx.source.ignored_files = ignored);
        let mut checks = decide(&obs);
        let settings = git::repository_config(&ctx.repo)?;
        checks.extend(core_worktree::check(&settings, &ctx.repo));
        if ctx.source.worktree.is_none() {
            return Ok(checks);
        }
        let uncommitted = uncommitted(&obs);
        out.set(move |ctx| {
            if let Some(w) = &mut ctx.source.worktree {
                w.uncommitted = uncommitted;
            }
        });
        Ok(as_worktree(checks))
    }
}

/// Runs hermetic `git status` twice (machine and human form).
///
/// # Errors
/// When git cannot be run.
pub(crate) fn observe(ctx: &RunContext) -> Result<Observation, String> {
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
    let entries = git::parse_status_z(&status.stdout)
        .into_iter()
        .map(|e| StatusLine {
            index: e.index,
            worktree: e.worktree,
            path: e.path,
            orig: e.orig,
        })
        .collect();
    let git_status = git::run(
        &ctx.repo,
        &["status", "--untracked-files=all"],
        Some(&ctx.log_stem("tree-clean", "git-status")),
        None,
    )?
    .stdout_text();
    let rewrites = git::history_rewrites(
        &ctx.repo,
        Some(&ctx.log_stem("tree-clean", "git-replace-refs")),
    )?;
    Ok(Observation {
        entries,
        git_status,
        commit: ctx.source.commit.clone(),
        tree: ctx.source.tree.clone(),
        rewrites,
    })
}

/// Every changed path (staged, unstaged or untracked; not ignored), as the
/// change checks list it, in git's order.
pub(crate) fn uncommitted(obs: &Observation) -> Vec<String> {
    obs.entries
        .iter()
        .filter(|e| CHANGE_CHECKS.iter().any(|(_, _, counts)| counts(e)))
        .map(|e| match &e.orig {
            Some(orig) => format!("{orig} -> {}", e.path),
            None => e.path.clone(),
        })
        .collect()
}

/// `--worktree`: the working tree is what is certified, so a change is
/// listed, not failed: each failing change check becomes a warning saying
/// so (and the statement is never PASSED). Pure.
pub(crate) fn as_worktree(checks: Vec<Check>) -> Vec<Check> {
    checks
        .into_iter()
        .map(|mut c| {
            if c.result == crate::evidence::CheckResult::Fail
                && CHANGE_CHECKS.iter().any(|(name, _, _)| *name == c.name)
            {
                c.result = crate::evidence::CheckResult::Warn;
                c.detail = format!(
                    "--worktree: certified as uncommitted ({}); {}",
                    crate::worktree::LABEL,
                    c.detail
                );
            }
            c
        })
        .collect()
}

/// The ignored paths (`!!` entries), recorded in `source.ignored_files`.
pub(crate) fn ignored(obs: &Observation) -> Vec<String> {
    obs.entries
        .iter()
        .filter(|e| e.index == '!')
        .map(|e| e.path.clone())
        .collect()
}

/// Whether a status entry counts for a change check.
type Counts = fn(&StatusLine) -> bool;

/// The three change checks, in order: name, what the paths are, and which
/// entries count.
const CHANGE_CHECKS: [(&str, &str, Counts); 3] = [
    (
        "staged-changes",
        "staged (in the index, not committed)",
        |e| !matches!(e.index, ' ' | '?' | '!'),
    ),
    (
        "unstaged-changes",
        "modified in the work tree and not staged",
        |e| !matches!(e.worktree, ' ' | '?' | '!'),
    ),
    ("untracked-files", "untracked and not ignored", |e| {
        e.index == '?'
    }),
];

/// Judges the observation. Pure.
pub(crate) fn decide(obs: &Observation) -> Vec<Check> {
    // The full `git status` goes into the first failing check only; the
    // others keep their own path lists and point back to it.
    let mut status_shown_in: Option<&str> = None;
    let mut checks = Vec::new();
    for (name, what, counts) in CHANGE_CHECKS {
        let paths: Vec<String> = obs
            .entries
            .iter()
            .filter(|e| counts(e))
            .map(|e| match &e.orig {
                Some(orig) => format!("{orig} -> {}", e.path),
                None => e.path.clone(),
            })
            .collect();
        let status = match status_shown_in {
            None => GitStatus::Full(&obs.git_status),
            Some(first) => GitStatus::SeeCheck(first),
        };
        if !paths.is_empty() && status_shown_in.is_none() {
            status_shown_in = Some(name);
        }
        let check = change_check(name, what, paths, status);
        checks.push(
            if check.result == CheckResult::Fail && !obs.rewrites.is_empty() {
                replaced(check)
            } else {
                check
            },
        );
    }
    // Named here only as the cause of a change found (a clean tree with a
    // rewrite is the `stage` gate's refusal).
    if !obs.rewrites.is_empty() && status_shown_in.is_some() {
        checks.push(crate::gates::stage::history_rewrites_check(
            &obs.rewrites,
            &obs.commit,
        ));
    }
    let ignored = ignored(obs);
    checks.push(
        Check::pass(
            "ignored-files",
            None,
            format!(
                "{} ignored path(s) present; listed in source.ignored_files, not judged",
                ignored.len()
            ),
        )
        .with_observed(json!({ "count": ignored.len(), "ignored": ignored })),
    );
    checks.push(
        Check::pass(
            "commit",
            None,
            format!("reviewing commit {} (tree {})", obs.commit, obs.tree),
        )
        .with_observed(json!({ "commit": obs.commit, "tree": obs.tree })),
    );
    checks
}

/// A failing change check in a repository with replace refs or grafts:
/// git runs with them off, so the commit's own tree is compared with a work
/// tree that may match the replacement instead; the rewrite is named as the
/// likely cause (the `history-rewrites` check).
fn replaced(check: Check) -> Check {
    let mut check = check;
    check.detail = format!(
        "{}
note: this repository rewrites history with replace refs or grafts (see the \
         history-rewrites check, which names them): git here reads the commit's own objects, so a work \
         tree matching a replacement shows as changed; remove the rewrite, then run again",
        check.detail
    );
    check.consequence_of("history-rewrites")
}

/// Where a failing change check finds the human-readable `git status`.
enum GitStatus<'a> {
    /// The full text, included in this check's detail.
    Full(&'a str),
    /// Included in the detail of this earlier check.
    SeeCheck(&'a str),
}

fn change_check(name: &str, what: &str, paths: Vec<String>, status: GitStatus) -> Check {
    let observed = json!({ "count": paths.len(), "paths": paths });
    if paths.is_empty() {
        return Check::pass(name, None, format!("no path is {what}")).with_observed(observed);
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
    .with_observed(observed)
}

#[cfg(test)]
mod tests;
