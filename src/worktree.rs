//! `--worktree`: the working tree as it is, certified without a commit.
//!
//! The files are git's own choice, read-only: `git ls-files -z --cached
//! --others --exclude-standard` (tracked files plus untracked files no ignore
//! rule matches; the user's global excludes file is not read, see
//! [`crate::git::HERMETIC_CONFIG`]), less tracked files deleted from the
//! work tree. Nothing is written to the repository: no index, no object.
//!
//! Each file's entry is what `git add` would record without filters: mode
//! `100644`/`100755` by the owner's executable bit, `120000` for a symlink
//! (its blob is the link's target), and the git blob id of the bytes on disk
//! (no clean filter and no line-ending conversion is run). A folder in the
//! listing (a submodule) is an entry of kind `commit`, which `stage` refuses
//! as it does in a commit's tree.
//!
//! The working tree is identified by [`digest`]: the sha256 of the sorted
//! lines `<mode> <blob id>\t<path>\n`, one per entry, not by a git tree id.

use crate::git::{self, TreeEntry};
use crate::hash;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// How evidence, summary and statement name a working-tree run.
pub const LABEL: &str = "working tree, not a commit";

/// The working tree's entries, sorted by path.
///
/// # Errors
/// When `git ls-files` cannot run, or a listed file exists but cannot be
/// read: a sentence naming the path.
pub fn entries(repo: &Path, log_stem: &Path) -> Result<Vec<TreeEntry>, String> {
    let out = git::run(
        repo,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
        Some(log_stem),
        None,
    )?;
    let paths: BTreeSet<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let mut entries = Vec::with_capacity(paths.len());
    for path in paths {
        let full = repo.join(&path);
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(m) => m,
            // A tracked file deleted from the work tree is not part of it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("--worktree: {path}: cannot read: {e}")),
        };
        let unreadable = |e: std::io::Error| format!("--worktree: {path}: cannot read: {e}");
        let (mode, kind, id) = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full).map_err(unreadable)?;
            (
                "120000",
                "blob",
                hash::git_blob_id_of_bytes(target.as_os_str().as_encoded_bytes()),
            )
        } else if meta.is_dir() {
            ("160000", "commit", String::new())
        } else {
            let exec = meta.permissions().mode() & 0o100 != 0;
            let id = hash::git_blob_id(&full).map_err(unreadable)?;
            (if exec { "100755" } else { "100644" }, "blob", id)
        };
        entries.push(TreeEntry {
            mode: mode.into(),
            kind: kind.into(),
            id,
            path,
        });
    }
    Ok(entries)
}

/// sha256 hex of the lines `<mode> <blob id>\t<path>\n` of `entries`,
/// sorted by path bytes.
pub fn digest(entries: &[TreeEntry]) -> String {
    let mut lines: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {}\t{}\n", e.mode, e.id, e.path))
        .collect();
    lines.sort_by(|a, b| {
        let path = |l: &str| l.split_once('\t').map(|(_, p)| p.to_string());
        path(a).cmp(&path(b))
    });
    hash::sha256_bytes(lines.concat().as_bytes())
}

/// Writes the tar `git archive` would write for `entries` (minus the paths
/// in `skip`, the export-ignored ones) at `tar_path`: a directory entry for
/// every parent folder, then each file with git archive's modes under
/// `tar.umask=0002` (`0664`, `0775`), symlinks as links, modification time
/// 0; the bytes read from the work tree under `repo`.
///
/// # Errors
/// When a file cannot be read or the tar cannot be written: a sentence with
/// the path.
pub fn write_tar(
    repo: &Path,
    entries: &[TreeEntry],
    skip: &BTreeSet<String>,
    tar_path: &Path,
) -> Result<(), String> {
    let file = std::fs::File::create(tar_path)
        .map_err(|e| format!("{}: cannot create: {e}", tar_path.display()))?;
    let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
    let write_err = |e: std::io::Error| format!("{}: cannot write: {e}", tar_path.display());
    let kept: Vec<&TreeEntry> = entries
        .iter()
        .filter(|e| e.kind == "blob" && !skip.contains(&e.path))
        .collect();
    let mut dirs = BTreeSet::new();
    for e in &kept {
        let mut parts: Vec<&str> = e.path.split('/').collect();
        parts.pop();
        for i in 1..=parts.len() {
            dirs.insert(format!("{}/", parts[..i].join("/")));
        }
    }
    for dir in &dirs {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o775);
        h.set_size(0);
        h.set_mtime(0);
        tar.append_data(&mut h, dir, std::io::empty())
            .map_err(write_err)?;
    }
    for e in kept {
        let full = repo.join(&e.path);
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        if e.mode == "120000" {
            let target = std::fs::read_link(&full)
                .map_err(|err| format!("--worktree: {}: cannot read: {err}", e.path))?;
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            tar.append_link(&mut h, &e.path, &target)
                .map_err(write_err)?;
        } else {
            let bytes = std::fs::read(&full)
                .map_err(|err| format!("--worktree: {}: cannot read: {err}", e.path))?;
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(if e.mode == "100755" { 0o775 } else { 0o664 });
            h.set_size(bytes.len() as u64);
            tar.append_data(&mut h, &e.path, bytes.as_slice())
                .map_err(write_err)?;
        }
    }
    tar.into_inner()
        .and_then(|mut w| std::io::Write::flush(&mut w))
        .map_err(write_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_independent_of_listing_order_and_changes_with_any_field() {
        let e = |mode: &str, id: &str, path: &str| TreeEntry {
            mode: mode.into(),
            kind: "blob".into(),
            id: id.into(),
            path: path.into(),
        };
        let a = vec![e("100644", "aa", "x/a.py"), e("100755", "bb", "run.sh")];
        let b = vec![a[1].clone(), a[0].clone()];
        assert_eq!(digest(&a), digest(&b));
        assert_eq!(
            digest(&a),
            hash::sha256_bytes(b"100755 bb\trun.sh\n100644 aa\tx/a.py\n")
        );
        for changed in [
            vec![e("100755", "aa", "x/a.py"), a[1].clone()],
            vec![e("100644", "ab", "x/a.py"), a[1].clone()],
            vec![e("100644", "aa", "x/b.py"), a[1].clone()],
        ] {
            assert_ne!(digest(&a), digest(&changed));
        }
    }
}
