//! Files `lbp build` reported it could not add, and left out of the archive.
//!
//! The SDK's build (`langbot_plugin.cli.commands.buildplugin`) wraps each
//! `zipfile.ZipFile.write` in `try`/`except Exception`, prints
//! `  - Error adding <path>: <error>` (locale key `file_add_error`, English
//! under the gate's `LANG=C.UTF-8`) and goes on: the build exits 0 with the
//! file missing. One known cause: Python's `zipfile` stores each file's
//! modification time as a ZIP (DOS) timestamp, which cannot hold a date
//! before 1980-01-01 (`ValueError: ZIP does not support timestamps before
//! 1980`), and `git archive` stamps every staged file with the commit's
//! committer time, so a commit dated before 1980 loses every file. A
//! `--worktree` run stamps each file with its own time, clamped to 1980 or
//! later ([`crate::worktree::zip_safe_mtime`]), so there the cause is never
//! a commit's date.

use crate::evidence::Check;
use serde::Serialize;
use serde_json::json;

/// The SDK's English `file_add_error` line, before `<path>: <error>`.
const FILE_ADD_ERROR: &str = "- Error adding ";

/// What Python's `zipfile` says of a timestamp before 1980.
const BEFORE_1980: &str = "timestamps before 1980";

/// One file the build reported it could not add.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FileError {
    /// Candidate-relative path, as the build printed it.
    pub path: String,
    /// The exception text the build printed.
    pub error: String,
}

/// Every `  - Error adding <path>: <error>` line of the build's `output`,
/// in order.
pub(crate) fn parse(output: &str) -> Vec<FileError> {
    output
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix(FILE_ADD_ERROR))
        .map(|rest| match rest.split_once(": ") {
            Some((path, error)) => FileError {
                path: path.to_string(),
                error: error.trim_end().to_string(),
            },
            None => FileError {
                path: rest.trim_end().to_string(),
                error: String::new(),
            },
        })
        .collect()
}

/// Whether any of `errors` is `zipfile`'s refusal of a pre-1980 timestamp.
pub(crate) fn any_before_1980(errors: &[FileError]) -> bool {
    errors.iter().any(|e| e.error.contains(BEFORE_1980))
}

/// What stamped the staged files' modification times, read when the build
/// reported files it could not add.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Stamp {
    /// `git archive` of this commit: its committer date (ISO 8601).
    Commit { id: String, date: String },
    /// `--worktree`: each file's own time, clamped to 1980 or later.
    WorkingTree,
}

/// Whether the ISO 8601 `date` (`1975-06-01T...`) is before 1980; `false`
/// when its year cannot be read.
fn before_1980(date: &str) -> bool {
    date.get(..4)
        .and_then(|y| y.parse::<u32>().ok())
        .is_some_and(|y| y < 1980)
}

/// The sentence after the list of pre-1980 errors: the real cause and what
/// to do, by what stamped the files.
fn before_1980_cause(stamp: Option<&Stamp>) -> String {
    const ZIP: &str = "`lbp build` (Python's zipfile) stores each file's modification time, and a \
                       ZIP (DOS) timestamp cannot hold a date before 1980-01-01, so the SDK left \
                       these files out";
    match stamp {
        Some(Stamp::Commit { id, date }) if before_1980(date) => format!(
            "commit {id} is dated {date} (committer date): git archive stamps every staged file \
             with the commit time, {ZIP}. Recommit with a date on or after 1980-01-01 \
             (`GIT_COMMITTER_DATE=now git commit --amend --no-edit --date=now`) and run again"
        ),
        Some(Stamp::Commit { id, date }) => format!(
            "the staged files were dated before 1980 when the build read them, though commit {id} \
             is dated {date} (committer date), which git archive stamps them with: the commit's \
             date is not the cause; {ZIP}. This is a harness defect (something changed the staged \
             files' times): report it with this evidence"
        ),
        Some(Stamp::WorkingTree) => format!(
            "--worktree: the staged working-tree files were dated before 1980 when the build read \
             them, though the verifier stamps each with its own modification time clamped to \
             1980-01-02 or later; {ZIP}. This is a harness defect: report it with this evidence"
        ),
        None => format!(
            "the staged files were dated before 1980 (the commit's date could not be read): {ZIP}. \
             If the commit is dated before 1980, recommit with a later date \
             (`GIT_COMMITTER_DATE=now git commit --amend --no-edit --date=now`) and run again"
        ),
    }
}

/// At most this many files are named in the detail; observed lists them all.
const NAMED_AT_MOST: usize = 20;

/// The `files-added` check of candidate `folder`. `stamp` is what dated
/// the staged files, when it was read.
pub(crate) fn files_added_check(
    folder: &str,
    errors: &[FileError],
    stamp: Option<&Stamp>,
) -> Check {
    let observed = json!({ "count": errors.len(), "errors": errors });
    if errors.is_empty() {
        return Check::pass(
            "files-added",
            Some(folder),
            "`lbp build` reported no file it could not add",
        )
        .with_observed(observed);
    }
    let mut lines: Vec<String> = errors
        .iter()
        .take(NAMED_AT_MOST)
        .map(|e| format!("{}: {}", e.path, e.error))
        .collect();
    if errors.len() > NAMED_AT_MOST {
        lines.push(format!(
            "... and {} more (all in this check's observed value)",
            errors.len() - NAMED_AT_MOST
        ));
    }
    let cause = if any_before_1980(errors) {
        before_1980_cause(stamp)
    } else {
        "fix what each error names in the candidate's source, commit, and run again".to_string()
    };
    Check::fail(
        "files-added",
        Some(folder),
        format!(
            "expected `lbp build` to add every file of the candidate, found it reported {} file(s) \
             it could not add and left out of the archive (it still exits 0):\n  {}\n{cause}",
            errors.len(),
            lines.join("\n  ")
        ),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_line_is_parsed_with_path_and_error() {
        let out = "Building plugin in .\n  - Adding file: main.py\n  - Error adding main.py: \
                   ZIP does not support timestamps before 1980\n  - Error adding a: b.py: x: y\n";
        assert_eq!(
            parse(out),
            [
                FileError {
                    path: "main.py".into(),
                    error: "ZIP does not support timestamps before 1980".into()
                },
                FileError {
                    path: "a".into(),
                    error: "b.py: x: y".into()
                },
            ]
        );
        assert!(parse("  - Adding file: main.py\n").is_empty());
    }

    #[test]
    fn a_pre_1980_error_names_the_commit_date_and_the_zip_limit() {
        let errors =
            parse("  - Error adding main.py: ZIP does not support timestamps before 1980\n");
        let c = files_added_check(
            "a",
            &errors,
            Some(&Stamp::Commit {
                id: "c".repeat(40),
                date: "1975-06-01T00:00:00+00:00".into(),
            }),
        );
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        for needed in [
            "\n  main.py: ZIP does not support timestamps before 1980\n",
            &format!(
                "commit {} is dated 1975-06-01T00:00:00+00:00 (committer date)",
                "c".repeat(40)
            ),
            "a ZIP (DOS) timestamp cannot hold a date before 1980-01-01",
            "git archive stamps every staged file with the commit time",
        ] {
            assert!(c.detail.contains(needed), "{needed:?} in {}", c.detail);
        }
        let other = files_added_check("a", &parse("  - Error adding x: PermissionError\n"), None);
        assert!(!other.detail.contains("1980"), "{}", other.detail);
        assert_eq!(
            files_added_check("a", &[], None).result,
            crate::evidence::CheckResult::Pass
        );
    }

    #[test]
    fn a_pre_1980_error_of_a_later_commit_or_a_working_tree_never_blames_a_commit_date() {
        let errors =
            parse("  - Error adding main.py: ZIP does not support timestamps before 1980\n");
        let later = Stamp::Commit {
            id: "c".repeat(40),
            date: "2026-12-04T10:00:00+00:00".into(),
        };
        for (stamp, needed) in [
            (Some(&later), "the commit's date is not the cause"),
            (
                Some(&Stamp::WorkingTree),
                "--worktree: the staged working-tree files were dated before 1980",
            ),
            (None, "the commit's date could not be read"),
        ] {
            let c = files_added_check("a", &errors, stamp);
            assert_eq!(c.result, crate::evidence::CheckResult::Fail);
            assert!(c.detail.contains(needed), "{needed:?} in {}", c.detail);
            assert!(!c.detail.contains("Recommit with"), "{}", c.detail);
            assert!(c.detail.contains("before 1980-01-01"), "{}", c.detail);
        }
        assert!(before_1980("1979-12-31T23:59:59Z"));
        assert!(!before_1980("1980-01-01T00:00:00Z"));
        assert!(!before_1980("garbage"));
    }
}
