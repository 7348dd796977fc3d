//! `DIR/staging/tree/`: every file of the commit, the export-ignored ones
//! too, for the `suites` gate's tree runs. `export-ignore` decides what the
//! archives a build sees hold (staging/source, from `git archive`), never
//! what the repository's tests run on: a conftest marked export-ignore is
//! still the commit's conftest.
//!
//! Written only when some committed path carries export-ignore (otherwise
//! staging/source is the whole commit). The bytes come from git's objects,
//! `git cat-file --batch` over the blob ids of `git ls-tree -r` (replace
//! objects off, no attribute read, no filter run: see `crate::git`), or,
//! for `--worktree`, from the working tree's files; they are written as a
//! tar and extracted with the same refusals as staging/source, then every
//! file's blob id and mode is compared with the tree again.

use super::Blobs;
use crate::context::RunContext;
use crate::git::{self, TreeEntry};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};

/// Writes `DIR/staging/tree/` from the commit's `tree` and compares it with
/// the tree (`converting`: byte-changing attributes per path, named in a
/// difference).
///
/// # Errors
/// A sentence when git, the tar or the extraction fails.
pub(super) fn materialise(
    ctx: &RunContext,
    tree: &[TreeEntry],
    converting: &BTreeMap<String, Vec<String>>,
) -> Result<Blobs, String> {
    let tmp =
        tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let tar_path = tmp.path().join("tree.tar");
    let none = BTreeSet::new();
    if ctx.source.worktree.is_some() {
        crate::worktree::write_tar(&ctx.repo, tree, &none, &tar_path)?;
    } else {
        let ids: String = tree
            .iter()
            .filter(|e| e.kind == "blob")
            .map(|e| format!("{}\n", e.id))
            .collect();
        let out = git::run(
            &ctx.repo,
            &["cat-file", "--batch"],
            Some(&tmp.path().join("cat-file")),
            Some(ids.into_bytes()),
        )?;
        let file = std::fs::File::open(&out.logs.0)
            .map_err(|e| format!("{}: cannot read: {e}", out.logs.0.display()))?;
        let mut batch = BufReader::new(file);
        // The suites' copy of the commit: file times do not matter to it,
        // and none is before 1980 (lbp build never reads this tree).
        crate::worktree::write_tar_from(tree, &none, &tar_path, &mut |e| {
            read_batch_entry(&mut batch, &e.id).map(|b| (b, 0))
        })?;
    }
    let dest = ctx.staging_tree();
    crate::archive::extract_tar(&tar_path, &dest).map_err(|e| format!("staging/tree: {e}"))?;
    Ok(super::blobs::observe_blobs(
        &dest,
        tree,
        &BTreeMap::new(),
        converting,
    ))
}

/// Reads one object of `git cat-file --batch` output (`<id> blob <size>\n`,
/// the bytes, `\n`), which must be the blob `id`.
///
/// # Errors
/// A sentence naming the object when git answered something else.
pub(super) fn read_batch_entry(batch: &mut impl BufRead, id: &str) -> Result<Vec<u8>, String> {
    let mut header = String::new();
    batch
        .read_line(&mut header)
        .map_err(|e| format!("git cat-file --batch: cannot read: {e}"))?;
    let fields: Vec<&str> = header.trim_end().split(' ').collect();
    let size = match fields.as_slice() {
        [got, "blob", size] if *got == id => size.parse::<u64>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        format!(
            "git cat-file --batch: expected blob {id}, found {:?}",
            header.trim_end()
        )
    })?;
    let mut bytes = Vec::with_capacity(size as usize);
    batch
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("git cat-file --batch: blob {id}: {e}"))?;
    let mut newline = [0u8; 1];
    if bytes.len() as u64 != size || batch.read_exact(&mut newline).is_err() || newline != *b"\n" {
        return Err(format!(
            "git cat-file --batch: blob {id}: expected {size} bytes, the output ended early"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_output_is_read_blob_by_blob_and_a_wrong_or_short_answer_fails() {
        let mut ok = &b"aa blob 3\nx\ny\nbb blob 0\n\n"[..];
        assert_eq!(read_batch_entry(&mut ok, "aa").unwrap(), b"x\ny");
        assert_eq!(read_batch_entry(&mut ok, "bb").unwrap(), b"");
        let mut missing = &b"cc missing\n"[..];
        let e = read_batch_entry(&mut missing, "cc").unwrap_err();
        assert!(e.contains("expected blob cc, found \"cc missing\""), "{e}");
        let mut other = &b"dd blob 1\nz\n"[..];
        assert!(read_batch_entry(&mut other, "ee").is_err());
        let mut short = &b"ff blob 9\nab"[..];
        let e = read_batch_entry(&mut short, "ff").unwrap_err();
        assert!(e.contains("ended early"), "{e}");
    }
}
