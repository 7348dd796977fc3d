//! The repository's own work tree: the directory that holds its `.git`
//! (a directory, or a file for a linked worktree or a submodule), found as
//! git's discovery finds it, by walking up from where git runs.
//!
//! A repository's `.git/config` can set `core.worktree` to another
//! directory; git then reads the work tree there (`git status` compares the
//! index with that directory), so a dirty tree could read as clean. A
//! command-line `-c core.worktree=` does not win over it (git reads the
//! setting from the repository's file while it sets the repository up), but
//! `--work-tree` does: every git call of [`super::run`] passes
//! `--work-tree=<own work tree>`.

use std::path::{Path, PathBuf};

/// The nearest ancestor of `path` (itself included, made absolute) that
/// holds a `.git` entry; `None` when there is none (not in a repository, or
/// a bare repository).
pub fn own_worktree(path: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(path).ok()?;
    start
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_folder_holding_git_is_the_work_tree() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("r");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        assert_eq!(own_worktree(&root.join("a/b")), Some(root.clone()));
        assert_eq!(own_worktree(&root), Some(root.clone()));
        // A `.git` file (linked worktree, submodule) counts too.
        std::fs::write(root.join("a/.git"), "gitdir: elsewhere\n").unwrap();
        assert_eq!(own_worktree(&root.join("a/b")), Some(root.join("a")));
        let outside = tempfile::tempdir().unwrap();
        // A temporary directory is in no repository on a test machine.
        if outside.path().ancestors().all(|a| !a.join(".git").exists()) {
            assert_eq!(own_worktree(outside.path()), None);
        }
    }
}
