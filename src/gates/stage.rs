//! The `stage` gate: `git archive` of the exact commit into
//! `DIR/staging/source.tar`, safely extracted to `DIR/staging/source/`, and
//! every extracted file's git blob id recomputed and compared with
//! `git ls-tree -r`. Candidates are built only from this staged copy.
//!
//! [`observe`] (in `stage/observe.rs`) runs git, extracts and hashes into an
//! [`Observation`]; [`decide`] judges it without I/O.

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, CheckResult, ExportAttribute};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;

mod attributes;
mod before_archive;
mod blobs;
mod committed;
mod observe;
mod refusals;

pub(crate) use before_archive::{BeforeArchive, FilterDriver};
pub(crate) use refusals::{decide_before_archive, history_rewrites_check};

pub use attributes::{
    byte_changing_attributes, export_attributes, is_lfs_pointer, parse_check_attr_z, ByteAttribute,
    READ_ATTRIBUTES,
};

/// The `stage` gate.
pub struct Stage;

/// The tar `git archive` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ArchiveFile {
    /// Relative to the evidence directory.
    pub path: String,
    /// sha256, lower-case hex.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
}

/// What the extraction wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Extracted {
    /// Regular files.
    pub files: usize,
    /// Symlinks, `(path, target)`.
    pub symlinks: Vec<(String, String)>,
    /// Directories.
    pub dirs: usize,
}

/// Why the extraction stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(crate) enum ExtractionFailure {
    /// An entry of the commit's tar is unsafe on this host (absolute, `..`,
    /// an escaping link, a name that is not UTF-8, an odd entry type).
    UnsafeEntry {
        /// The extractor's sentence.
        message: String,
    },
    /// Reading the tar or writing staging/source failed.
    Io {
        /// The extractor's sentence.
        message: String,
    },
}

/// One way staging/source differs from the commit's tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(crate) enum BlobProblem {
    /// A tree entry that is not a blob (a submodule).
    NotBlob {
        /// Path.
        path: String,
        /// `commit`, ...
        object: String,
    },
    /// In the commit, not staged.
    Missing {
        /// Path.
        path: String,
        /// The file system's error.
        error: String,
    },
    /// Staged with other bytes.
    Differs {
        /// Path.
        path: String,
        /// `git ls-tree`'s blob id.
        expected: String,
        /// The staged file's blob id.
        found: String,
        /// Its byte-changing attributes (`eol=crlf`, ...), if any.
        attributes: Vec<String>,
    },
    /// Staged, not readable.
    Unreadable {
        /// Path.
        path: String,
        /// The file system's error.
        error: String,
    },
    /// The executable bit differs from the git mode.
    Mode {
        /// Path.
        path: String,
        /// `100644` or `100755`.
        git_mode: String,
        /// Staged permission bits, octal.
        staged_mode: String,
    },
    /// Staged, not in the commit's tree.
    Extra {
        /// Path.
        path: String,
    },
}

/// staging/source compared with `git ls-tree -r`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Blobs {
    /// Tree entries listed.
    pub tree_entries: usize,
    /// Staged files whose blob id equals the tree's.
    pub verified: u64,
    /// Tree paths left out because they carry export-ignore.
    pub export_ignored: Vec<String>,
    /// Every difference.
    pub problems: Vec<BlobProblem>,
}

/// Whether a candidate folder is in the commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub(crate) enum Presence {
    /// A folder.
    Folder,
    /// Something else: `a file`, `something that is not a folder`, `none`.
    Absent {
        /// What was found.
        found: String,
    },
}

/// One candidate in the staged copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CandidateStage {
    /// Candidate folder.
    pub folder: String,
    /// Repository-relative path.
    pub path: String,
    /// Whether it is a folder of the commit; when not, nothing else was read.
    pub presence: Presence,
    /// Committed files inside it carrying export-ignore.
    pub export_ignored: Vec<String>,
    /// Symlinks inside it, `(path, target)`.
    pub symlinks: Vec<(String, String)>,
    /// Git LFS pointer files inside it, `(path, size)`.
    pub lfs_pointers: Vec<(String, u64)>,
}

/// What was observed once the tree was extracted and listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Staged {
    /// What the extraction wrote.
    pub extracted: Extracted,
    /// `path -> [(attribute, state)]` for every tree path (see
    /// [`parse_check_attr_z`]), or why `git check-attr` did not answer; when
    /// it did not, nothing below was observed.
    pub attributes: Result<BTreeMap<String, Vec<(String, String)>>, String>,
    /// staging/source against the tree.
    pub blobs: Blobs,
    /// DIR/staging/tree (every committed file, for the suites) against the
    /// tree, when some path carries export-ignore; or why it was not written.
    pub committed: Option<Result<Blobs, String>>,
    /// Every candidate of the run, in profile order.
    pub candidates: Vec<CandidateStage>,
}

/// What the `stage` gate observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Observation {
    /// The commit staged.
    pub commit: String,
    /// The tar.
    pub archive: ArchiveFile,
    /// The extraction and everything after it, or why it stopped.
    pub staged: Result<Staged, ExtractionFailure>,
    /// `--worktree`: the working tree's digest and file count.
    pub worktree: Option<(String, usize)>,
    /// Replace refs and graft files the git calls ignored.
    pub rewrites: Vec<crate::git::HistoryRewrite>,
}

impl super::Gate for Stage {
    fn id(&self) -> &'static str {
        "stage"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let before = before_archive::read(ctx)?;
        if !before.filter_drivers.is_empty() {
            // A command the repository configures would filter the archive:
            // refused from git objects alone, `git archive` is not run.
            return Ok(decide_before_archive(&before, &ctx.source.commit));
        }
        let obs = observe::observe(ctx, before)?;
        let hex = obs.archive.sha256.clone();
        out.set(move |ctx| ctx.source.archive_sha256 = Some(hex));
        if let Some((digest, files)) = obs.worktree.clone() {
            out.set(move |ctx| {
                if let Some(w) = &mut ctx.source.worktree {
                    w.digest = Some(digest);
                    w.files = Some(files);
                }
            });
        }
        if let Ok(Staged {
            attributes: Ok(attributes),
            ..
        }) = &obs.staged
        {
            let list = export_attribute_list(&export_attributes(attributes));
            out.set(move |ctx| ctx.source.export_attributes = list);
        }
        let checks = decide(&obs);
        if !checks.iter().any(|c| c.result == CheckResult::Fail) {
            let source = ctx.staging_source();
            let committed = match &obs.staged {
                Ok(Staged {
                    committed: Some(_), ..
                }) => ctx.staging_tree(),
                _ => source.clone(),
            };
            out.set(move |ctx| {
                ctx.staged_root = Some(source);
                ctx.committed_root = Some(committed);
            });
        }
        Ok(checks)
    }
}

fn export_attribute_list(attributes: &BTreeMap<String, Vec<String>>) -> Vec<ExportAttribute> {
    attributes
        .iter()
        .flat_map(|(path, attrs)| {
            attrs.iter().map(move |a| ExportAttribute {
                path: path.clone(),
                attribute: a.clone(),
            })
        })
        .collect()
}

/// Judges the observation. Pure.
pub(crate) fn decide(obs: &Observation) -> Vec<Check> {
    let a = &obs.archive;
    let mut checks = vec![Check::pass(
        "git-archive",
        None,
        if obs.worktree.is_some() {
            format!(
                "{} staged as git archive would write it: {} bytes, sha256 {}",
                obs.commit, a.size, a.sha256
            )
        } else {
            format!(
                "`git archive --format=tar {}` wrote {} bytes, sha256 {}",
                obs.commit, a.size, a.sha256
            )
        },
    )
    .with_observed(json!({ "path": a.path, "sha256": a.sha256, "size": a.size }))];
    checks.push(history_rewrites_check(&obs.rewrites, &obs.commit));
    let staged = match &obs.staged {
        Ok(s) => s,
        Err(failure) => {
            checks.push(extraction_failure(failure, &obs.commit));
            return checks;
        }
    };
    let x = &staged.extracted;
    checks.push(
        Check::pass(
            "tar-extraction",
            None,
            format!(
                "{} files, {} symlinks, {} directories extracted to staging/source; no absolute, `..` or escaping entry",
                x.files,
                x.symlinks.len(),
                x.dirs
            ),
        )
        .with_observed(json!({ "files": x.files, "symlinks": x.symlinks.len(), "dirs": x.dirs })),
    );
    let all_attributes = match &staged.attributes {
        Ok(a) => a,
        Err(e) => {
            checks.push(
                Check::fail(
                    "byte-attributes",
                    None,
                    format!("not observed: expected `git check-attr` to answer for the commit's files, found {e}"),
                )
                .with_observed(json!({ "check_attr_error": e })),
            );
            return checks;
        }
    };
    let byte_attributes = byte_changing_attributes(all_attributes);
    let attributes_check = byte_attributes_check(&byte_attributes);
    checks.push(blob_check(
        &staged.blobs,
        &obs.commit,
        attributes_check.result == CheckResult::Fail,
    ));
    checks.push(attributes_check);
    checks.push(export_attributes_check(
        &export_attribute_list(&export_attributes(all_attributes)),
        staged.committed.as_ref(),
        &obs.commit,
    ));
    for c in &staged.candidates {
        candidate_checks(c, &obs.commit, &mut checks);
    }
    checks
}

/// The `export-attributes` check: lists the paths carrying export-ignore
/// or export-subst; the export-ignored ones are left out of staging/source
/// and the archives, and still run by the suites from DIR/staging/tree
/// (`committed`), which must hold every committed file.
fn export_attributes_check(
    list: &[ExportAttribute],
    committed: Option<&Result<Blobs, String>>,
    commit: &str,
) -> Check {
    let ignored: Vec<&str> = list
        .iter()
        .filter(|a| a.attribute == "export-ignore")
        .map(|a| a.path.as_str())
        .collect();
    let observed = json!({
        "count": list.len(),
        "paths": list.iter().map(|a| json!({"path": a.path, "attribute": a.attribute})).collect::<Vec<_>>(),
        "suites_tree": committed.map(|c| match c {
            Ok(b) => json!({"path": "staging/tree", "blobs_verified": b.verified, "problems": b.problems}),
            Err(e) => json!({"error": e}),
        }),
    });
    let named: Vec<&str> = ignored.iter().take(NAMED_AT_MOST).copied().collect();
    let more = ignored.len().saturating_sub(NAMED_AT_MOST);
    let named = format!(
        "{}{}",
        named.join("\n  "),
        if more > 0 {
            format!("\n  ... and {more} more (all in this check's observed value)")
        } else {
            String::new()
        }
    );
    let problems = match committed {
        Some(Err(e)) => vec![e.clone()],
        Some(Ok(b)) => b.problems.iter().map(problem_line).collect(),
        None => Vec::new(),
    };
    if !problems.is_empty() {
        return Check::fail(
            "export-attributes",
            None,
            format!(
                "expected staging/tree to be every file of commit {commit} (the export-ignored ones \
                 included), as the suites must run the commit; found:\n  {}\nthe harness could not \
                 copy the commit's own files: check the evidence directory's space and git's log \
                 under logs/stage/, then run again",
                problems.join("\n  ")
            ),
        )
        .with_observed(observed);
    }
    let detail = if ignored.is_empty() {
        format!(
            "{} path(s) carry export-subst, none export-ignore (listed, see source.export_attributes)",
            list.len()
        )
    } else {
        format!(
            "{} path(s) carry export-ignore or export-subst (listed, see source.export_attributes); \
             the {} export-ignored path(s) are left out of staging/source and the archives a build \
             sees, but still run by the suites, from staging/tree (every committed file, blob ids \
             verified):\n  {named}",
            list.len(),
            ignored.len()
        )
    };
    Check::pass("export-attributes", None, detail).with_observed(observed)
}

fn extraction_failure(failure: &ExtractionFailure, commit: &str) -> Check {
    match failure {
        ExtractionFailure::UnsafeEntry { message } => Check::fail(
            "tar-extraction",
            None,
            format!(
                "staging/source.tar: {message}. The entry is a path committed in {commit}, so running \
                 again or rebuilding cannot change it: rename the committed file (or replace the link with \
                 the file it points to) in the repository and commit"
            ),
        )
        .with_observed(json!({ "unsafe_entry": message })),
        ExtractionFailure::Io { message } => Check::fail(
            "tar-extraction",
            None,
            format!(
                "staging/source.tar: {message}; the harness could not write or read its own staging copy: \
                 check free space and permissions of the evidence directory, then run again"
            ),
        )
        .with_observed(json!({ "io_error": message })),
    }
}

fn problem_line(p: &BlobProblem) -> String {
    match p {
        BlobProblem::NotBlob { path, object } => {
            format!("{path}: a {object} entry (submodule?); it is not in the archive")
        }
        BlobProblem::Missing { path, error } => {
            format!("{path}: in the commit, missing from staging/source ({error})")
        }
        BlobProblem::Differs {
            path,
            expected,
            found,
            attributes,
        } => format!(
            "{path}: expected blob {expected}, found {found}{}",
            if attributes.is_empty() {
                String::new()
            } else {
                format!(" (attributes: {})", attributes.join(", "))
            }
        ),
        BlobProblem::Unreadable { path, error } => format!("{path}: cannot read ({error})"),
        BlobProblem::Mode {
            path,
            git_mode,
            staged_mode,
        } => format!("{path}: git mode {git_mode} but staged mode {staged_mode}"),
        BlobProblem::Extra { path } => {
            format!("{path}: in staging/source but not in the commit's tree")
        }
    }
}

/// The blob-ids check. When every difference is a file whose committed
/// attributes change its bytes, the byte-attributes finding is the cause
/// and this check is reported as its consequence.
fn blob_check(blobs: &Blobs, commit: &str, attributes_failed: bool) -> Check {
    let observed = json!({
        "blobs_verified": blobs.verified,
        "tree_entries": blobs.tree_entries,
        "export_ignored": blobs.export_ignored,
        "problems": blobs.problems,
    });
    if blobs.problems.is_empty() {
        let source = if commit.starts_with(crate::worktree::LABEL) {
            format!("the working tree's file has ({commit})")
        } else {
            format!("`git ls-tree -r {commit}` lists")
        };
        return Check::pass(
            "blob-ids",
            None,
            format!(
                "all {} staged files have the git blob id {source}",
                blobs.verified
            ),
        )
        .with_observed(observed);
    }
    let lines: Vec<String> = blobs.problems.iter().map(problem_line).collect();
    let all_converted = attributes_failed
        && blobs.problems.iter().all(
            |p| matches!(p, BlobProblem::Differs { attributes, .. } if !attributes.is_empty()),
        );
    if all_converted {
        return Check::fail(
            "blob-ids",
            None,
            format!(
                "staging/source differs from commit {commit} in {} file(s), each converted by a committed \
                 attribute (see the byte-attributes check, which names the cause and the fix):\n  {}",
                lines.len(),
                lines.join("\n  ")
            ),
        )
        .with_observed(observed)
        .consequence_of("byte-attributes");
    }
    Check::fail(
        "blob-ids",
        None,
        format!(
            "expected staging/source to be exactly commit {commit}, found {} difference(s):\n  {}\n\
             the staged copy is not the commit; see the byte-attributes check for attributes \
             that change bytes, and git's log under logs/stage/",
            lines.len(),
            lines.join("\n  ")
        ),
    )
    .with_observed(observed)
}

/// `no-export-ignore`: no committed file of the candidate carries the
/// export-ignore attribute, which `git archive` leaves out.
fn export_ignore_check(c: &CandidateStage) -> Check {
    let folder = Some(c.folder.as_str());
    if c.export_ignored.is_empty() {
        Check::pass(
            "no-export-ignore",
            folder,
            format!("no committed file inside {} carries export-ignore", c.path),
        )
        .with_observed(json!({ "export_ignore": [] }))
    } else {
        Check::fail(
            "no-export-ignore",
            folder,
            format!(
                "expected every committed file of {} to be staged, found {} with the export-ignore \
                 attribute, which `git archive` leaves out:\n  {}\nthe archive would not ship files \
                 the commit has; remove export-ignore for them from .gitattributes (or \
                 .git/info/attributes), or delete the files, and commit",
                c.path,
                c.export_ignored.len(),
                c.export_ignored.join("\n  ")
            ),
        )
        .with_observed(json!({ "export_ignore": c.export_ignored }))
    }
}

/// `no-symlinks`: no symlink inside the candidate (the official build
/// packs a link's target).
fn symlinks_check(c: &CandidateStage) -> Check {
    let folder = Some(c.folder.as_str());
    let links = json!(c
        .symlinks
        .iter()
        .map(|(p, t)| json!({"path": p, "target": t}))
        .collect::<Vec<_>>());
    if c.symlinks.is_empty() {
        Check::pass(
            "no-symlinks",
            folder,
            format!("no symlink inside {}", c.path),
        )
        .with_observed(json!({ "symlinks": links }))
    } else {
        let listed: Vec<String> = c
            .symlinks
            .iter()
            .map(|(p, t)| format!("{p} -> {t}"))
            .collect();
        Check::fail(
            "no-symlinks",
            folder,
            format!(
                "expected no symlink inside {}, found:\n  {}\nthe official build follows links and packs \
                 the target's bytes (for an absolute or escaping link, files of the build machine); \
                 replace each link with the file it points to",
                c.path,
                listed.join("\n  ")
            ),
        )
        .with_observed(links)
    }
}

/// `no-lfs-pointers`: no file inside the candidate is a Git LFS pointer
/// instead of its content.
fn lfs_pointers_check(c: &CandidateStage) -> Check {
    let folder = Some(c.folder.as_str());
    let pointers = json!(c
        .lfs_pointers
        .iter()
        .map(|(p, size)| json!({"path": p, "size": size}))
        .collect::<Vec<_>>());
    if c.lfs_pointers.is_empty() {
        Check::pass(
            "no-lfs-pointers",
            folder,
            format!("no file inside {} is a Git LFS pointer", c.path),
        )
        .with_observed(json!({ "lfs_pointers": pointers }))
    } else {
        let listed: Vec<String> = c
            .lfs_pointers
            .iter()
            .map(|(p, size)| format!("{p} ({size} bytes)"))
            .collect();
        Check::fail(
            "no-lfs-pointers",
            folder,
            format!(
                "expected every file inside {} to hold its content, found {} Git LFS pointer \
                 file(s) (first line `version https://git-lfs.github.com/spec/v1`):\n  {}\n\
                 the archive would ship the pointer, not the content; commit the files \
                 themselves (`git lfs untrack` and `git lfs migrate export --include=PATH`, \
                 or drop them from the candidate) and commit",
                c.path,
                c.lfs_pointers.len(),
                listed.join("\n  ")
            ),
        )
        .with_observed(pointers)
    }
}

fn candidate_checks(c: &CandidateStage, commit: &str, checks: &mut Vec<Check>) {
    let folder = Some(c.folder.as_str());
    if let Presence::Absent { found } = &c.presence {
        checks.push(
            Check::fail(
                "candidate-present",
                folder,
                format!(
                    "{}: expected a candidate folder in commit {commit}, found {found}; \
                     commit it or fix the profile's candidate path",
                    c.path
                ),
            )
            .with_observed(json!({ "path": c.path, "found": found })),
        );
        return;
    }
    checks.push(
        Check::pass(
            "candidate-present",
            folder,
            format!("{} is in the commit", c.path),
        )
        .with_observed(json!({ "path": c.path, "found": "a folder" })),
    );
    checks.push(export_ignore_check(c));
    checks.push(symlinks_check(c));
    checks.push(lfs_pointers_check(c));
}

/// At most this many paths are named in a check's detail; the observed
/// value lists them all.
const NAMED_AT_MOST: usize = 50;

/// The `byte-attributes` check over [`byte_changing_attributes`]'s findings.
pub fn byte_attributes_check(found: &[ByteAttribute]) -> Check {
    // A finding's observed value is the list itself (as evidence readers
    // know it); a pass says what it counted.
    let observed = json!(found);
    if found.is_empty() {
        return Check::pass(
            "byte-attributes",
            None,
            format!(
                "no committed file carries an attribute that changes the bytes git archive writes ({})",
                READ_ATTRIBUTES[1..].join(", ")
            ),
        )
        .with_observed(json!({ "count": 0, "attributes": [] }));
    }
    let mut lines: Vec<String> = found
        .iter()
        .take(NAMED_AT_MOST)
        .map(|a| {
            if a.attribute == "filter=lfs" {
                format!(
                    "{}: filter=lfs (Git LFS: git archive ships the pointer file, not the content)",
                    a.path
                )
            } else {
                format!("{}: {}", a.path, a.attribute)
            }
        })
        .collect();
    if found.len() > NAMED_AT_MOST {
        lines.push(format!(
            "... and {} more (all in this check's observed value)",
            found.len() - NAMED_AT_MOST
        ));
    }
    Check::fail(
        "byte-attributes",
        None,
        format!(
            "expected git archive to write every committed file's blob bytes unchanged, found {} \
             attribute(s) that change them (line endings, keyword or placeholder expansion, filter \
             drivers, re-encoding):\n  {}\nthe certified bytes would depend on conversion, not on \
             the commit; remove these attributes from .gitattributes (or .git/info/attributes), \
             commit the files as they should ship (`-text` keeps bytes as committed), and commit",
            found.len(),
            lines.join("\n  ")
        ),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests;
