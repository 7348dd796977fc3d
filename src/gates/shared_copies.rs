//! The `shared-copies` gate: files the profile declares canonical
//! (`[shared] owner`, `files`) are byte-identical (sha256) in every candidate
//! of the staged commit to the owner's copy.
//!
//! One check per (file, candidate), named after the file's path relative to
//! the candidate. The owner's own check records the canonical digest and
//! fails when the canonical copy is missing. A profile without `[shared]`
//! yields one `warn` check: nothing was compared, and the reader is told so.
//!
//! [`observe`] hashes the staged files into an [`Observation`]; [`decide`]
//! compares digests without I/O.

mod kept;
pub(crate) use kept::redecide as redecide_kept;

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use crate::hash;
use serde::Serialize;
use serde_json::json;
use std::path::Path;

/// The `shared-copies` gate.
pub struct SharedCopies;

impl super::Gate for SharedCopies {
    fn id(&self) -> &'static str {
        "shared-copies"
    }

    fn run(&self, ctx: &RunContext, _out: &mut Updates) -> Result<Vec<Check>, String> {
        let root = ctx
            .staged_root
            .clone()
            .ok_or("the staged source is missing (the `stage` gate did not record DIR/staging/source); run `stage` first")?;
        let (owner, files) = match ctx.profile.profile.shared.as_ref() {
            Some(s) => (s.owner.clone(), s.files.clone()),
            None => (String::new(), Vec::new()),
        };
        let candidates: Vec<(String, String)> = ctx
            .candidate_specs()
            .iter()
            .map(|c| (c.path.clone(), c.folder().to_string()))
            .collect();
        Ok(decide(&observe(&root, &owner, &files, &candidates)))
    }
}

/// A staged file's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub(crate) enum CopyState {
    /// A regular file.
    File {
        /// sha256, lower-case hex.
        sha256: String,
        /// Bytes.
        size: u64,
    },
    /// Missing, a symlink, not a regular file, or unreadable.
    Unavailable {
        /// Why, as a predicate: `does not exist`, `is a symlink, not a file`.
        why: String,
    },
}

/// One candidate's copy of a shared file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CandidateCopy {
    /// Candidate folder.
    pub folder: String,
    /// Whether this candidate is the owner (its copy is the canonical one).
    pub owner: bool,
    /// The copy, relative to the repository (`Runner/x/pkg/a.py`).
    pub path: String,
    /// Its state.
    pub state: CopyState,
}

/// One declared shared file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SharedFile {
    /// As the profile names it, relative to a candidate.
    pub file: String,
    /// Whether it is a relative path without empty, `.` or `..` parts; when
    /// not, nothing was read for it.
    pub safe: bool,
    /// The canonical copy, relative to the repository.
    pub canonical_path: String,
    /// The canonical copy's state (unsafe names: unavailable).
    pub canonical: CopyState,
    /// Every candidate's copy, in profile order (unsafe names: unavailable).
    pub copies: Vec<CandidateCopy>,
}

/// What the gate observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Observation {
    /// The profile's `shared.owner` (empty without `[shared]`).
    pub owner: String,
    /// Every declared file (none without `[shared]`).
    pub files: Vec<SharedFile>,
}

fn read_copy(root: &Path, rel: &str) -> CopyState {
    let mut p = root.to_path_buf();
    p.extend(rel.split('/'));
    let why = match std::fs::symlink_metadata(&p) {
        Ok(m) if m.file_type().is_file() => match hash::sha256_file(&p) {
            Ok(d) => {
                return CopyState::File {
                    sha256: d.hex(),
                    size: d.size,
                }
            }
            Err(e) => format!("cannot be read: {e}"),
        },
        Ok(m) if m.file_type().is_symlink() => "is a symlink, not a file".into(),
        Ok(_) => "is not a regular file".into(),
        Err(_) => "does not exist".into(),
    };
    CopyState::Unavailable { why }
}

/// True for a `/`-separated relative path without empty, `.` or `..` parts.
fn safe_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Reads every `files` entry of every candidate (`(path, folder)`) under the
/// staged `root`, and the owner's copy.
pub(crate) fn observe(
    root: &Path,
    owner: &str,
    files: &[String],
    candidates: &[(String, String)],
) -> Observation {
    let files = files
        .iter()
        .map(|file| {
            let safe = safe_relative(file);
            let state = |rel: &str| {
                if safe {
                    read_copy(root, rel)
                } else {
                    CopyState::Unavailable {
                        why: "was not read: the profile's name is unsafe".into(),
                    }
                }
            };
            let canonical_path = format!("{owner}/{file}");
            SharedFile {
                file: file.clone(),
                safe,
                canonical: state(&canonical_path),
                canonical_path,
                copies: candidates
                    .iter()
                    .map(|(path, folder)| {
                        let rel = format!("{path}/{file}");
                        CandidateCopy {
                            folder: folder.clone(),
                            owner: path == owner,
                            state: state(&rel),
                            path: rel,
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    Observation {
        owner: owner.to_string(),
        files,
    }
}

/// Judges the observation: one check per (file, candidate). Pure.
pub(crate) fn decide(obs: &Observation) -> Vec<Check> {
    if obs.files.is_empty() {
        return vec![Check::warn(
            "canonical-files",
            None,
            "profile declares no canonical files: nothing was compared; add a [shared] table (owner, files) \
             to the profile if candidates carry copies of one file",
        )
        .with_observed(json!({ "owner": obs.owner, "files": [] }))];
    }
    let mut checks = Vec::new();
    for f in &obs.files {
        for copy in &f.copies {
            checks.push(copy_check(f, copy));
        }
    }
    checks
}

/// The check of the canonical copy itself (in the owner candidate): a
/// regular file in the staged commit.
fn canonical_check(f: &SharedFile, copy: &CandidateCopy) -> Check {
    let (file, folder, rel) = (
        f.file.as_str(),
        Some(copy.folder.as_str()),
        copy.path.as_str(),
    );
    match &f.canonical {
        CopyState::File { sha256, size } => Check::pass(
            file,
            folder,
            format!("{rel} is the canonical copy (sha256 {sha256})"),
        )
        .with_observed(json!({"path": rel, "sha256": sha256, "size": size, "canonical": true})),
        CopyState::Unavailable { why } => Check::fail(
            file,
            folder,
            format!(
                "the canonical copy {rel} {why} in the staged commit; expected a regular file: \
                 commit it, or fix shared.owner/shared.files in the profile"
            ),
        )
        .with_observed(json!({"path": rel, "canonical": true, "state": f.canonical})),
    }
}

fn copy_check(f: &SharedFile, copy: &CandidateCopy) -> Check {
    let (file, folder, rel, owner_rel) = (
        f.file.as_str(),
        Some(copy.folder.as_str()),
        copy.path.as_str(),
        f.canonical_path.as_str(),
    );
    if !f.safe {
        return Check::fail(
            file,
            folder,
            format!(
                "profile shared.files names {file:?}; expected a relative path inside the candidate \
                 without `.`, `..` or empty components: fix the profile"
            ),
        )
        .with_observed(json!({ "file": file, "safe": false }));
    }
    if copy.owner {
        return canonical_check(f, copy);
    }
    match (&f.canonical, &copy.state) {
        (_, CopyState::Unavailable { why }) => Check::fail(
            file,
            folder,
            format!(
                "{rel} {why} in the staged commit; expected a byte-identical copy of {owner_rel}: \
                 copy the canonical file there and commit it"
            ),
        )
        .with_observed(json!({"path": rel, "state": copy.state, "canonical_path": owner_rel})),
        (CopyState::Unavailable { why }, CopyState::File { sha256, size }) => Check::fail(
            file,
            folder,
            format!(
                "{rel} (sha256 {sha256}) was not compared: the canonical copy {owner_rel} {why}; \
                 commit the canonical file or fix shared.owner/shared.files in the profile"
            ),
        )
        .with_observed(json!({
            "path": rel, "sha256": sha256, "size": size,
            "canonical_path": owner_rel, "canonical_state": f.canonical,
        })),
        (
            CopyState::File {
                sha256: c,
                size: cs,
            },
            CopyState::File { sha256, size },
        ) if c == sha256 && cs == size => Check::pass(
            file,
            folder,
            format!("{rel} is byte-identical to {owner_rel} (sha256 {sha256})"),
        )
        .with_observed(json!({"path": rel, "sha256": sha256, "size": size, "canonical_path": owner_rel})),
        (
            CopyState::File {
                sha256: c,
                size: cs,
            },
            CopyState::File { sha256, size },
        ) => Check::fail(
            file,
            folder,
            format!(
                "{rel} (sha256 {sha256}, {size} bytes) differs from the canonical {owner_rel} (sha256 {c}, {cs} bytes); \
                 copy the canonical file over it byte-for-byte and commit"
            ),
        )
        .with_observed(json!({
            "path": rel, "sha256": sha256, "size": size,
            "canonical_path": owner_rel, "canonical_sha256": c, "canonical_size": cs,
        })),
    }
}

#[cfg(test)]
mod tests;
