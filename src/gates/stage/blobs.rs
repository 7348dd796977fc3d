//! The stage's blob check: every file of the commit's tree, staged, has the
//! tree's blob id and mode, and nothing else is staged. Shared by the
//! archive's extraction (`observe.rs`) and the suites' copy of the commit
//! (`committed.rs`).

use super::{BlobProblem, Blobs};
use crate::{git, hash};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use walkdir::WalkDir;

/// Compares staging/source (`source`) with the commit's `tree`: every
/// entry's blob id and mode, then any staged file the tree does not name.
pub(super) fn observe_blobs(
    source: &Path,
    tree: &[git::TreeEntry],
    export: &BTreeMap<String, Vec<String>>,
    converting: &BTreeMap<String, Vec<String>>,
) -> Blobs {
    let mut b = Blobs {
        tree_entries: tree.len(),
        ..Blobs::default()
    };
    let expected = compare_entries(&mut b, source, tree, export, converting);
    b.problems.extend(extra_files(source, &expected));
    b
}

/// Each blob entry of `tree` against its staged file: verified, or a
/// problem; export-ignored entries absent from the stage are listed. The
/// paths staged as expected.
fn compare_entries(
    b: &mut Blobs,
    source: &Path,
    tree: &[git::TreeEntry],
    export: &BTreeMap<String, Vec<String>>,
    converting: &BTreeMap<String, Vec<String>>,
) -> BTreeSet<String> {
    let mut expected: BTreeSet<String> = BTreeSet::new();
    for entry in tree {
        if entry.kind != "blob" {
            b.problems.push(BlobProblem::NotBlob {
                path: entry.path.clone(),
                object: entry.kind.clone(),
            });
            continue;
        }
        let path = source.join(&entry.path);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(_)
                if export
                    .get(&entry.path)
                    .is_some_and(|a| a.iter().any(|a| a == "export-ignore")) =>
            {
                b.export_ignored.push(entry.path.clone());
                continue;
            }
            Err(e) => {
                b.problems.push(BlobProblem::Missing {
                    path: entry.path.clone(),
                    error: e.to_string(),
                });
                continue;
            }
        };
        expected.insert(entry.path.clone());
        let observed = if entry.mode == "120000" {
            std::fs::read_link(&path)
                .map(|target| hash::git_blob_id_of_bytes(target.as_os_str().as_encoded_bytes()))
        } else {
            hash::git_blob_id(&path)
        };
        match observed {
            Ok(id) if id == entry.id => b.verified += 1,
            Ok(id) => b.problems.push(BlobProblem::Differs {
                path: entry.path.clone(),
                expected: entry.id.clone(),
                found: id,
                attributes: converting.get(&entry.path).cloned().unwrap_or_default(),
            }),
            Err(e) => b.problems.push(BlobProblem::Unreadable {
                path: entry.path.clone(),
                error: e.to_string(),
            }),
        }
        let exec = meta.permissions().mode() & 0o111 != 0;
        if entry.mode == "100755" && !exec || entry.mode == "100644" && exec {
            b.problems.push(BlobProblem::Mode {
                path: entry.path.clone(),
                git_mode: entry.mode.clone(),
                staged_mode: format!("{:o}", meta.permissions().mode() & 0o777),
            });
        }
    }
    expected
}

/// Files under `source` that are not among the `expected` paths.
fn extra_files(source: &Path, expected: &BTreeSet<String>) -> Vec<BlobProblem> {
    let mut extra = Vec::new();
    for f in WalkDir::new(source)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
    {
        if f.file_type().is_dir() {
            continue;
        }
        let rel = f
            .path()
            .strip_prefix(source)
            .map(|p| {
                // Joined by component: a backslash is part of a Unix file name.
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        if !expected.contains(&rel) {
            extra.push(BlobProblem::Extra { path: rel });
        }
    }
    extra
}
