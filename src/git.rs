//! Read-only git queries on the repository under review.
//!
//! Every call runs with `GIT_OPTIONAL_LOCKS=0` so that `git status` does not
//! refresh the index: the repository is never written to.

use crate::process::{self, ChildOutput, ChildSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Time limit of one git call.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

fn env() -> std::collections::BTreeMap<String, String> {
    let mut env = process::base_env();
    if let Ok(home) = std::env::var("HOME") {
        env.insert("HOME".into(), home);
    }
    env.insert("GIT_OPTIONAL_LOCKS".into(), "0".into());
    env.insert("LC_ALL".into(), "C".into());
    env.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
    env
}

/// Runs `git <args>` in `repo`, logging under `log_stem` (or a temporary
/// directory when `None`).
///
/// # Errors
/// A sentence with the command, its status and its stderr tail.
pub fn run(
    repo: &Path,
    args: &[&str],
    log_stem: Option<&Path>,
    stdin: Option<Vec<u8>>,
) -> Result<ChildOutput, String> {
    let tmp;
    let stem = match log_stem {
        Some(s) => s.to_path_buf(),
        None => {
            tmp = tempfile::tempdir()
                .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
            tmp.path().join("git")
        }
    };
    let spec = ChildSpec {
        program: "git".into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        cwd: repo.to_path_buf(),
        env: env(),
        timeout: GIT_TIMEOUT,
        log_stem: stem,
        stdin,
    };
    let out = process::run(&spec).map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "`git {}` in {}: {}: {}",
            args.join(" "),
            repo.display(),
            out.describe(),
            out.tail(5)
        ));
    }
    Ok(out)
}

/// The repository's top level, for any path inside it.
///
/// # Errors
/// When `path` is not inside a git work tree.
pub fn toplevel(path: &Path) -> Result<PathBuf, String> {
    if !path.is_dir() {
        return Err(format!(
            "--repo {}: expected a directory inside a git repository, found no directory",
            path.display()
        ));
    }
    let out = run(path, &["rev-parse", "--show-toplevel"], None, None).map_err(|e| {
        format!("--repo {}: expected a git work tree, found none ({e}); pass --repo DIR inside the repository", path.display())
    })?;
    Ok(PathBuf::from(out.stdout_text().trim()))
}

/// `(commit, tree)` of `HEAD`.
///
/// # Errors
/// When `HEAD` does not name a commit (an empty repository).
pub fn head(repo: &Path) -> Result<(String, String), String> {
    let resolve = |rev: &str| -> Result<String, String> {
        let out =
            run(repo, &["rev-parse", "--verify", "--quiet", rev], None, None).map_err(|e| {
                format!(
                    "{}: expected a commit at HEAD, found none ({e}); commit the candidates first",
                    repo.display()
                )
            })?;
        Ok(out.stdout_text().trim().to_string())
    };
    Ok((resolve("HEAD^{commit}")?, resolve("HEAD^{tree}")?))
}

/// One entry of `git status --porcelain=v1 -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// Index status letter (`X`).
    pub index: char,
    /// Work-tree status letter (`Y`).
    pub worktree: char,
    /// Repository-relative path.
    pub path: String,
    /// Original path of a rename or copy.
    pub orig: Option<String>,
}

/// Parses `git status --porcelain=v1 -z` output.
pub fn parse_status_z(bytes: &[u8]) -> Vec<StatusEntry> {
    let mut fields = bytes.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut entries = Vec::new();
    while let Some(field) = fields.next() {
        if field.len() < 4 {
            continue;
        }
        let index = field[0] as char;
        let worktree = field[1] as char;
        let path = String::from_utf8_lossy(&field[3..]).into_owned();
        let orig = if matches!(index, 'R' | 'C') {
            fields
                .next()
                .map(|f| String::from_utf8_lossy(f).into_owned())
        } else {
            None
        };
        entries.push(StatusEntry {
            index,
            worktree,
            path,
            orig,
        });
    }
    entries
}

/// One blob of `git ls-tree -r -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Octal mode text: `100644`, `100755`, `120000`, `160000`.
    pub mode: String,
    /// `blob` or `commit`.
    pub kind: String,
    /// Object id.
    pub id: String,
    /// Repository-relative path.
    pub path: String,
}

/// Parses `git ls-tree -r -z --full-tree` output.
pub fn parse_ls_tree_z(bytes: &[u8]) -> Vec<TreeEntry> {
    bytes
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .filter_map(|f| {
            let text = String::from_utf8_lossy(f);
            let (meta, path) = text.split_once('\t')?;
            let mut parts = meta.split(' ');
            Some(TreeEntry {
                mode: parts.next()?.into(),
                kind: parts.next()?.into(),
                id: parts.next()?.into(),
                path: path.into(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_z_parses_renames_and_untracked() {
        let raw = b"R  new.txt\0old.txt\0 M mod.txt\0?? un tracked.txt\0!! build/\0";
        let e = parse_status_z(raw);
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].orig.as_deref(), Some("old.txt"));
        assert_eq!((e[1].index, e[1].worktree), (' ', 'M'));
        assert_eq!(e[2].path, "un tracked.txt");
        assert_eq!(e[3].index, '!');
    }

    #[test]
    fn ls_tree_z_parses_paths_with_spaces() {
        let raw = b"100644 blob ce013625030ba8dba906f756967f9e9ca394464a\ta b.txt\0";
        let e = parse_ls_tree_z(raw);
        assert_eq!(e[0].path, "a b.txt");
        assert_eq!(e[0].mode, "100644");
    }
}
