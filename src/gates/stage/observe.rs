//! What the `stage` gate observes once the facts read before the archive
//! allow it (`before_archive.rs`): `git archive` of the commit, its
//! extraction, every
//! staged file's blob id and mode, and per candidate its export-ignored
//! files, symlinks and Git LFS pointer files.

use super::before_archive::BeforeArchive;
use super::blobs::observe_blobs;
use super::{
    byte_changing_attributes, export_attributes, is_lfs_pointer, ArchiveFile, Blobs,
    CandidateStage, Extracted, ExtractionFailure, Observation, Presence, Staged,
};
use crate::archive::{self, TarError};
use crate::context::RunContext;
use crate::{git, hash};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One candidate as staged: whether its folder is there, and the
/// committed files inside it that carry export-ignore (`export`: the
/// commit's export attributes), are symlinks or are Git LFS pointers.
fn candidate_stage(
    ctx: &RunContext,
    spec: &crate::profile::CandidateSpec,
    export: &BTreeMap<String, Vec<String>>,
    extraction: &archive::TarExtraction,
    source: &Path,
    tree: &[git::TreeEntry],
) -> CandidateStage {
    let dir = ctx.staged_candidate(spec);
    let presence = if dir.is_dir() {
        Presence::Folder
    } else {
        Presence::Absent {
            found: match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_file() => "a file",
                Ok(_) => "something that is not a folder",
                Err(_) => "none",
            }
            .into(),
        }
    };
    let prefix = format!("{}/", spec.path);
    CandidateStage {
        folder: spec.folder().to_string(),
        path: spec.path.clone(),
        export_ignored: export
            .iter()
            .filter(|(p, a)| p.starts_with(&prefix) && a.iter().any(|a| a == "export-ignore"))
            .map(|(p, _)| p.clone())
            .collect(),
        symlinks: extraction
            .symlinks
            .iter()
            .filter(|(p, _)| p == &spec.path || p.starts_with(&prefix))
            .cloned()
            .collect(),
        lfs_pointers: if presence == Presence::Folder {
            lfs_pointers(source, tree, &prefix)
        } else {
            Vec::new()
        },
        presence,
    }
}

/// Writes the staged source to `tar_path`: with `--worktree`, the working
/// tree's files, their attributes read from the work tree, written as git
/// archive would (the staged work tree returned); else git archive itself.
fn write_source_tar(
    ctx: &RunContext,
    tar_path: &Path,
    tree: &[git::TreeEntry],
    attributes: &CheckedAttributes,
) -> Result<Option<StagedWorktree>, String> {
    let tar_arg = tar_path.display().to_string();
    let commit = &ctx.source.commit;
    Ok(match &ctx.source.worktree {
        Some(w) => Some(stage_worktree(ctx, tar_path, &w.label, tree, attributes)?),
        None => {
            git::run(
                &ctx.repo,
                &["archive", "--format=tar", "-o", &tar_arg, commit],
                Some(&ctx.log_stem("stage", "git-archive")),
                None,
            )?;
            None
        }
    })
}

/// Why the staged archive could not be extracted: an unsafe entry, or an
/// I/O error.
fn extraction_failure(e: TarError) -> ExtractionFailure {
    let message = e.to_string();
    match e {
        TarError::Unsafe { .. } => ExtractionFailure::UnsafeEntry { message },
        _ => ExtractionFailure::Io { message },
    }
}

/// Stages the commit and observes the staged copy, given what was read
/// `before` the archive.
///
/// # Errors
/// When git cannot be run or the tar cannot be written or hashed.
pub(super) fn observe(ctx: &RunContext, before: BeforeArchive) -> Result<Observation, String> {
    let BeforeArchive {
        tree,
        attributes,
        rewrites,
        ..
    } = before;
    let staging = ctx.evidence_dir.join("staging");
    std::fs::create_dir_all(&staging)
        .map_err(|e| format!("{}: cannot create: {e}", staging.display()))?;
    let tar_path = staging.join("source.tar");
    let commit = ctx.source.commit.clone();
    let worktree = write_source_tar(ctx, &tar_path, &tree, &attributes)?;
    let commit = match &worktree {
        Some(w) => format!("{} (base {commit}, digest {})", w.label, w.digest),
        None => commit,
    };
    let worktree_id = worktree.as_ref().map(|w| (w.digest.clone(), w.files));
    let digest =
        hash::sha256_file(&tar_path).map_err(|e| format!("{}: {e}", tar_path.display()))?;
    let archive = ArchiveFile {
        path: "staging/source.tar".into(),
        sha256: digest.hex(),
        size: digest.size,
    };
    let source = ctx.staging_source();
    let extraction = match archive::extract_tar(&tar_path, &source) {
        Ok(x) => x,
        Err(e) => {
            let failure = extraction_failure(e);
            return Ok(Observation {
                commit,
                archive,
                staged: Err(failure),
                worktree: worktree_id,
                rewrites,
            });
        }
    };
    let extracted = Extracted {
        files: extraction.files.len(),
        symlinks: extraction.symlinks.clone(),
        dirs: extraction.dirs.len(),
    };
    let mut committed = None;
    let (blobs, candidates) = match &attributes {
        Err(_) => (Blobs::default(), Vec::new()),
        Ok(all) => {
            let export = export_attributes(all);
            let mut converting: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for a in byte_changing_attributes(all) {
                converting.entry(a.path).or_default().push(a.attribute);
            }
            let blobs = observe_blobs(&source, &tree, &export, &converting);
            if !blobs.export_ignored.is_empty() {
                committed = Some(super::committed::materialise(ctx, &tree, &converting));
            }
            let candidates = ctx
                .candidate_specs()
                .iter()
                .map(|spec| candidate_stage(ctx, spec, &export, &extraction, &source, &tree))
                .collect();
            (blobs, candidates)
        }
    };
    Ok(Observation {
        commit,
        archive,
        staged: Ok(Staged {
            extracted,
            attributes,
            blobs,
            committed,
            candidates,
        }),
        worktree: worktree_id,
        rewrites,
    })
}

/// `path -> [(attribute, state)]`, or why `git check-attr` did not answer.
type CheckedAttributes = Result<BTreeMap<String, Vec<(String, String)>>, String>;

/// The working tree a `--worktree` run staged.
struct StagedWorktree {
    /// [`crate::worktree::LABEL`].
    label: String,
    /// [`crate::worktree::digest`] of its files.
    digest: String,
    /// How many files (blobs) it holds.
    files: usize,
}

/// `--worktree`: writes the working tree's files (`entries`, listed with
/// their `attributes` from the work tree before the archive, see
/// `before_archive.rs`) to `tar_path` as `git archive` would (export-ignored
/// paths left out); the digest and file count go to `source.worktree`.
///
/// # Errors
/// When a file or the tar cannot be read or written.
fn stage_worktree(
    ctx: &RunContext,
    tar_path: &Path,
    label: &str,
    entries: &[git::TreeEntry],
    attributes: &CheckedAttributes,
) -> Result<StagedWorktree, String> {
    let skip: BTreeSet<String> = match attributes {
        Ok(all) => export_attributes(all)
            .into_iter()
            .filter(|(_, a)| a.iter().any(|a| a == "export-ignore"))
            .map(|(p, _)| p)
            .collect(),
        Err(_) => BTreeSet::new(),
    };
    crate::worktree::write_tar(&ctx.repo, entries, &skip, tar_path)?;
    Ok(StagedWorktree {
        label: label.to_string(),
        digest: crate::worktree::digest(entries),
        files: entries.iter().filter(|e| e.kind == "blob").count(),
    })
}

/// Staged files under `prefix` (`Runner/x/`) whose content is a Git LFS
/// pointer, with their size.
fn lfs_pointers(
    source: &std::path::Path,
    tree: &[git::TreeEntry],
    prefix: &str,
) -> Vec<(String, u64)> {
    use std::io::Read as _;
    let mut out = Vec::new();
    for entry in tree {
        if entry.kind != "blob" || entry.mode == "120000" || !entry.path.starts_with(prefix) {
            continue;
        }
        let Ok(file) = std::fs::File::open(source.join(&entry.path)) else {
            continue;
        };
        let mut head = Vec::with_capacity(1024);
        if file.take(1024).read_to_end(&mut head).is_ok()
            && is_lfs_pointer(&head, head.len() as u64)
        {
            out.push((entry.path.clone(), head.len() as u64));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::stage::BlobProblem;
    use std::os::unix::fs::PermissionsExt;

    fn blob(path: &str, mode: &str, bytes: &[u8]) -> git::TreeEntry {
        git::TreeEntry {
            mode: mode.into(),
            kind: "blob".into(),
            id: hash::git_blob_id_of_bytes(bytes),
            path: path.into(),
        }
    }

    fn write(root: &Path, rel: &str, bytes: &[u8], mode: u32) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn every_staged_file_is_compared_with_the_tree_by_blob_id_and_mode() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "R/a/ok.py", b"x = 1\n", 0o644);
        write(root, "R/a/run.sh", b"#!/bin/sh\n", 0o755);
        write(root, "R/a/crlf.txt", b"a\r\n", 0o644);
        write(root, "R/a/lost-x.sh", b"#!/bin/sh\n", 0o644);
        write(root, "R/a/gained-x.py", b"y\n", 0o755);
        write(root, "R/a/extra.txt", b"not committed\n", 0o644);
        std::os::unix::fs::symlink("ok.py", root.join("R/a/link")).unwrap();
        let tree = vec![
            blob("R/a/ok.py", "100644", b"x = 1\n"),
            blob("R/a/run.sh", "100755", b"#!/bin/sh\n"),
            blob("R/a/crlf.txt", "100644", b"a\n"),
            blob("R/a/lost-x.sh", "100755", b"#!/bin/sh\n"),
            blob("R/a/gained-x.py", "100644", b"y\n"),
            blob("R/a/link", "120000", b"ok.py"),
            blob("R/a/gone.py", "100644", b"z\n"),
            blob("R/a/docs.md", "100644", b"d\n"),
            git::TreeEntry {
                mode: "160000".into(),
                kind: "commit".into(),
                id: "f".repeat(40),
                path: "R/a/sub".into(),
            },
        ];
        let export: BTreeMap<String, Vec<String>> =
            [("R/a/docs.md".to_string(), vec!["export-ignore".to_string()])].into();
        let converting: BTreeMap<String, Vec<String>> =
            [("R/a/crlf.txt".to_string(), vec!["eol=crlf".to_string()])].into();
        let b = observe_blobs(root, &tree, &export, &converting);
        assert_eq!(b.tree_entries, 9);
        // ok.py, run.sh, lost-x.sh, gained-x.py (bytes right) and the link.
        assert_eq!(b.verified, 5);
        assert_eq!(b.export_ignored, ["R/a/docs.md"]);
        assert_eq!(
            b.problems,
            [
                BlobProblem::Differs {
                    path: "R/a/crlf.txt".into(),
                    expected: hash::git_blob_id_of_bytes(b"a\n"),
                    found: hash::git_blob_id_of_bytes(b"a\r\n"),
                    attributes: vec!["eol=crlf".into()],
                },
                BlobProblem::Mode {
                    path: "R/a/lost-x.sh".into(),
                    git_mode: "100755".into(),
                    staged_mode: "644".into(),
                },
                BlobProblem::Mode {
                    path: "R/a/gained-x.py".into(),
                    git_mode: "100644".into(),
                    staged_mode: "755".into(),
                },
                BlobProblem::Missing {
                    path: "R/a/gone.py".into(),
                    error: "No such file or directory (os error 2)".into(),
                },
                BlobProblem::NotBlob {
                    path: "R/a/sub".into(),
                    object: "commit".into(),
                },
                BlobProblem::Extra {
                    path: "R/a/extra.txt".into(),
                },
            ]
        );
    }

    #[test]
    fn lfs_pointers_are_found_by_content_inside_the_prefix_only() {
        let d = tempfile::tempdir().unwrap();
        let pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n";
        write(d.path(), "R/a/m.onnx", pointer, 0o644);
        write(d.path(), "R/b/m.onnx", pointer, 0o644);
        write(d.path(), "R/a/real.bin", &[7u8; 2000], 0o644);
        let tree = vec![
            blob("R/a/m.onnx", "100644", pointer),
            blob("R/b/m.onnx", "100644", pointer),
            blob("R/a/real.bin", "100644", &[7u8; 2000]),
        ];
        assert_eq!(
            lfs_pointers(d.path(), &tree, "R/a/"),
            [("R/a/m.onnx".to_string(), pointer.len() as u64)]
        );
    }
}
