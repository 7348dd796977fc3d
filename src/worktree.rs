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

/// 1980-01-02T00:00:00Z in seconds since the epoch: the earliest time a
/// working-tree file is stamped with. Python's `zipfile` (which `lbp build`
/// uses) converts a file's time with `time.localtime` and refuses a year
/// before 1980; one day past 1980-01-01 keeps every time zone's local date
/// in 1980.
pub const ZIP_EARLIEST: u64 = 315_619_200;

/// 2107-12-30T00:00:00Z: the latest, for the same reason (a DOS date's year
/// is 1980 + 7 bits, at most 2107).
pub const ZIP_LATEST: u64 = 4_354_646_400;

/// A file's modification time `mtime` (seconds since the epoch, negative
/// before 1970) clamped to [`ZIP_EARLIEST`]..=[`ZIP_LATEST`].
pub fn zip_safe_mtime(mtime: i64) -> u64 {
    u64::try_from(mtime)
        .unwrap_or(0)
        .clamp(ZIP_EARLIEST, ZIP_LATEST)
}

/// Writes the tar `git archive` would write for `entries` (minus the paths
/// in `skip`, the export-ignored ones) at `tar_path`: a directory entry for
/// every parent folder, then each file with git archive's modes under
/// `tar.umask=0002` (`0664`, `0775`), symlinks as links; the bytes read from
/// the work tree under `repo`. Each file keeps its own modification time,
/// clamped into what a ZIP (DOS) timestamp can hold ([`zip_safe_mtime`]);
/// folders get [`ZIP_EARLIEST`]. (`git archive` of a commit stamps the
/// commit time; a working tree has none, and time 0, 1970, made `lbp build`
/// leave every file out: "ZIP does not support timestamps before 1980".)
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
    write_tar_from(entries, skip, tar_path, &mut |e: &TreeEntry| {
        let full = repo.join(&e.path);
        let read = if e.mode == "120000" {
            std::fs::read_link(&full).map(|t| t.into_os_string().into_encoded_bytes())
        } else {
            std::fs::read(&full)
        };
        let bytes = read.map_err(|err| format!("--worktree: {}: cannot read: {err}", e.path))?;
        let meta = std::fs::symlink_metadata(&full)
            .map_err(|err| format!("--worktree: {}: cannot read: {err}", e.path))?;
        Ok((bytes, std::os::unix::fs::MetadataExt::mtime(&meta)))
    })
}

/// Gives an entry's bytes (a symlink's: its target) and its modification
/// time in seconds since the epoch, or a sentence saying why it cannot.
pub type EntryReader<'a> = dyn FnMut(&TreeEntry) -> Result<(Vec<u8>, i64), String> + 'a;

/// [`write_tar`] with each entry's bytes (a symlink's: its target) and
/// modification time (seconds since the epoch, clamped by
/// [`zip_safe_mtime`]) given by `read`, called once per written entry in
/// `entries` order.
///
/// # Errors
/// `read`'s sentence, or when the tar cannot be written.
pub fn write_tar_from(
    entries: &[TreeEntry],
    skip: &BTreeSet<String>,
    tar_path: &Path,
    read: &mut EntryReader<'_>,
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
        h.set_mtime(ZIP_EARLIEST);
        tar.append_data(&mut h, dir, std::io::empty())
            .map_err(write_err)?;
    }
    for e in kept {
        let (bytes, mtime) = read(e)?;
        let mut h = tar::Header::new_gnu();
        h.set_mtime(zip_safe_mtime(mtime));
        if e.mode == "120000" {
            use std::os::unix::ffi::OsStrExt as _;
            let target = Path::new(std::ffi::OsStr::from_bytes(&bytes));
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            tar.append_link(&mut h, &e.path, target)
                .map_err(write_err)?;
        } else {
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
    fn a_file_time_is_clamped_into_what_a_zip_timestamp_holds() {
        assert_eq!(zip_safe_mtime(0), ZIP_EARLIEST);
        assert_eq!(zip_safe_mtime(-5), ZIP_EARLIEST);
        assert_eq!(zip_safe_mtime(315_532_800), ZIP_EARLIEST, "1980-01-01 UTC");
        assert_eq!(zip_safe_mtime(1_700_000_000), 1_700_000_000);
        assert_eq!(zip_safe_mtime(ZIP_EARLIEST as i64), ZIP_EARLIEST);
        assert_eq!(zip_safe_mtime(ZIP_LATEST as i64 + 1), ZIP_LATEST);
        assert_eq!(zip_safe_mtime(i64::MAX), ZIP_LATEST);
    }

    #[test]
    fn the_tar_keeps_each_files_own_time_and_never_one_before_1980() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("r");
        std::fs::create_dir_all(repo.join("x")).unwrap();
        for (name, secs) in [("x/new.py", 1_700_000_000u64), ("old.py", 0)] {
            let f = std::fs::File::create(repo.join(name)).unwrap();
            f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
                .unwrap();
        }
        let e = |path: &str| TreeEntry {
            mode: "100644".into(),
            kind: "blob".into(),
            id: String::new(),
            path: path.into(),
        };
        let tar_path = dir.path().join("t.tar");
        write_tar(
            &repo,
            &[e("old.py"), e("x/new.py")],
            &BTreeSet::new(),
            &tar_path,
        )
        .unwrap();
        let mut archive = tar::Archive::new(std::fs::File::open(&tar_path).unwrap());
        let times: Vec<(String, u64)> = archive
            .entries()
            .unwrap()
            .map(|en| {
                let en = en.unwrap();
                let path = en.path().unwrap().display().to_string();
                (path, en.header().mtime().unwrap())
            })
            .collect();
        assert_eq!(
            times,
            [
                ("x/".to_string(), ZIP_EARLIEST),
                ("old.py".to_string(), ZIP_EARLIEST),
                ("x/new.py".to_string(), 1_700_000_000),
            ]
        );
    }

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
