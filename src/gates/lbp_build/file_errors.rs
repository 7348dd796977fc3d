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
//! committer time, so a commit dated before 1980 loses every file.

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

/// At most this many files are named in the detail; observed lists them all.
const NAMED_AT_MOST: usize = 20;

/// The `files-added` check of candidate `folder`. `commit` is `(id,
/// committer date)` when it was read.
pub(crate) fn files_added_check(
    folder: &str,
    errors: &[FileError],
    commit: Option<&(String, String)>,
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
        let dated = match commit {
            Some((id, date)) => format!("commit {id} is dated {date} (committer date)"),
            None => "the commit is dated before 1980".to_string(),
        };
        format!(
            "{dated}: git archive stamps every staged file with the commit time, `lbp build` \
             (Python's zipfile) stores each file's modification time, and a ZIP (DOS) timestamp \
             cannot hold a date before 1980-01-01, so the SDK left these files out. Recommit with a \
             date on or after 1980-01-01 (`GIT_COMMITTER_DATE=now git commit --amend --no-edit \
             --date=now`) and run again"
        )
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
            Some(&("c".repeat(40), "1975-06-01T00:00:00+00:00".into())),
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
}
