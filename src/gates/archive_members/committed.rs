//! The `committed-files` decision of the `archive-members` gate: the build
//! held to git's own ignore rules, over the observed committed files.

use crate::build_rules::BuildDrop;
use crate::evidence::Check;
use crate::gitignore::{GitPattern, GitVerdict};
use serde::Serialize;
use serde_json::json;

/// The check holding the build to git's ignore rules.
pub(crate) const COMMITTED_FILES: &str = "committed-files";

/// One committed file of a candidate as both readings of `.gitignore` see
/// it: the observation `committed-files` decides from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommittedFile {
    /// Path relative to the candidate folder, `/`-separated.
    pub path: String,
    /// Whether the archive holds a member of that name.
    pub in_archive: bool,
    /// Git's verdict from the candidate's own `.gitignore` files.
    pub git: GitVerdict,
    /// Why `lbp build`'s rules leave it out; `None`: they select it.
    pub build: Option<BuildDrop>,
}

/// `` `file` line N `pattern` ``.
fn git_line(p: &GitPattern) -> String {
    format!("`{}` line {} `{}`", p.file, p.line, p.pattern)
}

/// How the build's rules left `file` out, for a message.
fn build_reason(file: &CommittedFile) -> String {
    match &file.build {
        Some(BuildDrop::Gitignore { at, line, pattern }) => {
            let via = if *at == file.path {
                String::new()
            } else {
                format!(", which matched its directory `{at}`")
            };
            format!("the build dropped it by `.gitignore` line {line} `{pattern}`{via}")
        }
        Some(BuildDrop::AlwaysExcluded { at, pattern }) => {
            format!("the build always excludes `{at}` (`{pattern}`)")
        }
        None => {
            "the build's rules select it, yet the archive lacks it (see expected-members)".into()
        }
    }
}

/// Why git keeps or ignores `file`, for a message.
fn git_reason(file: &CommittedFile) -> String {
    match &file.git {
        GitVerdict::Kept { by: None } => {
            "git keeps it: no line of the candidate's .gitignore files ignores it".into()
        }
        GitVerdict::Kept { by: Some(by) } => format!("git keeps it by {}", git_line(by)),
        GitVerdict::Ignored { by } => {
            let via = if by.at == file.path {
                String::new()
            } else {
                format!(", which matches its directory `{}`", by.at)
            };
            format!(
                "git ignores it too, by {}{via}, so it was force-added",
                git_line(by)
            )
        }
    }
}

/// The `committed-files` decision over the observed committed files of one
/// candidate (`archive`: the archive's path relative to DIR, for messages).
///
/// - A committed file that is a member: satisfied, whatever either reading
///   says.
/// - Not a member, and a path component matches the SDK's fixed exclusions
///   ([`crate::build_rules::ALWAYS_EXCLUDE`]): expected to be absent.
/// - Not a member, and git keeps it: a failure naming the file, the
///   `.gitignore` line the build dropped it by (or that the build's rules
///   select it) and why git keeps it.
/// - Not a member, and git ignores it too (it was force-added): a warning
///   naming the file and both lines.
///
/// Fails when any failure was found (the warnings are listed too), warns
/// when only warnings were, passes otherwise.
pub fn decide_committed(folder: &str, archive: &str, files: &[CommittedFile]) -> Check {
    let mut missing = Vec::new();
    let mut forced = Vec::new();
    let mut always_excluded = Vec::new();
    for file in files.iter().filter(|f| !f.in_archive) {
        if matches!(file.build, Some(BuildDrop::AlwaysExcluded { .. })) {
            always_excluded.push(file);
        } else if file.git.is_kept() {
            missing.push(file);
        } else {
            forced.push(file);
        }
    }
    let describe = |list: &[&CommittedFile]| -> String {
        list.iter()
            .map(|f| format!("`{}` ({}; {})", f.path, build_reason(f), git_reason(f)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let observed = json!({
        "committed": files.len(),
        "missing": missing,
        "force_added_missing": forced,
        "always_excluded": always_excluded.iter().map(|f| &f.path).collect::<Vec<_>>(),
    });
    let forced_text = format!(
        "{} committed file(s) that git's own rules ignore too (force-added) are not members: {}; \
         if the plugin needs them, stop ignoring them in .gitignore, otherwise remove them from the commit",
        forced.len(),
        describe(&forced)
    );
    if !missing.is_empty() {
        let mut detail = format!(
            "{archive}: {} committed file(s) that git's own ignore rules keep are missing from the archive: {}; \
             expected every committed file that the candidate's own .gitignore files (root and nested, read as \
             git reads them with the candidate folder as top level; ancestor .gitignore files do not count) keep, \
             and that the SDK does not always exclude, to be a member. `lbp build` reads only the root .gitignore, \
             a leading `/` as a name prefix, `!` as a literal name and `*` across `/`: reword those lines so \
             both readings agree (or rename the files), then rebuild",
            missing.len(),
            describe(&missing)
        );
        if !forced.is_empty() {
            detail.push_str(&format!("; also {forced_text}"));
        }
        return Check::fail(COMMITTED_FILES, Some(folder), detail).with_observed(observed);
    }
    if !forced.is_empty() {
        return Check::warn(
            COMMITTED_FILES,
            Some(folder),
            format!("{archive}: {forced_text}"),
        )
        .with_observed(observed);
    }
    Check::pass(
        COMMITTED_FILES,
        Some(folder),
        format!(
            "{archive}: every committed file that git's own ignore rules keep is a member ({} committed, {} \
             left out by the SDK's fixed exclusions); git's rules: the candidate's own .gitignore files, root \
             and nested, with the candidate folder as top level (ancestor .gitignore files do not count)",
            files.len(),
            always_excluded.len()
        ),
    )
    .with_observed(observed)
}
