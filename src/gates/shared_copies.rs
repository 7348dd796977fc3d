//! The `shared-copies` gate: files the profile declares canonical
//! (`[shared] owner`, `files`) are byte-identical (sha256) in every candidate
//! of the staged commit to the owner's copy.
//!
//! One check per (file, candidate), named after the file's path relative to
//! the candidate. The owner's own check records the canonical digest and
//! fails when the canonical copy is missing. A profile without `[shared]`
//! yields one `warn` check: nothing was compared, and the reader is told so.

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use crate::hash;
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
        let Some(shared) = ctx
            .profile
            .profile
            .shared
            .as_ref()
            .filter(|s| !s.files.is_empty())
        else {
            return Ok(vec![Check::warn(
                "canonical-files",
                None,
                "profile declares no canonical files: nothing was compared; add a [shared] table (owner, files) \
                 to the profile if candidates carry copies of one file",
            )]);
        };
        let candidates: Vec<(String, String)> = ctx
            .candidate_specs()
            .iter()
            .map(|c| (c.path.clone(), c.folder().to_string()))
            .collect();
        Ok(compare(&root, &shared.owner, &shared.files, &candidates))
    }
}

/// A staged file's state.
enum Copy {
    Digest(hash::Sha256Digest),
    Missing(String),
}

fn read_copy(root: &Path, rel: &str) -> Copy {
    let mut p = root.to_path_buf();
    p.extend(rel.split('/'));
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.file_type().is_file() => match hash::sha256_file(&p) {
            Ok(d) => Copy::Digest(d),
            Err(e) => Copy::Missing(format!("cannot be read: {e}")),
        },
        Ok(m) if m.file_type().is_symlink() => Copy::Missing("is a symlink, not a file".into()),
        Ok(_) => Copy::Missing("is not a regular file".into()),
        Err(_) => Copy::Missing("does not exist".into()),
    }
}

/// True for a `/`-separated relative path without empty, `.` or `..` parts.
fn safe_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Compares every `files` entry of every candidate (`(path, folder)`) under
/// `root` with the owner's copy.
fn compare(
    root: &Path,
    owner: &str,
    files: &[String],
    candidates: &[(String, String)],
) -> Vec<Check> {
    let mut checks = Vec::new();
    for file in files {
        if !safe_relative(file) {
            for (_, folder) in candidates {
                checks.push(Check::fail(
                    file,
                    Some(folder),
                    format!(
                        "profile shared.files names {file:?}; expected a relative path inside the candidate \
                         without `.`, `..` or empty components: fix the profile"
                    ),
                ));
            }
            continue;
        }
        let owner_rel = format!("{owner}/{file}");
        let canonical = read_copy(root, &owner_rel);
        for (path, folder) in candidates {
            let rel = format!("{path}/{file}");
            let check = if path == owner {
                match &canonical {
                    Copy::Digest(d) => Check::pass(
                        file,
                        Some(folder),
                        format!("{rel} is the canonical copy (sha256 {})", d.hex()),
                    )
                    .with_observed(json!({"path": rel, "sha256": d.hex(), "size": d.size, "canonical": true})),
                    Copy::Missing(why) => Check::fail(
                        file,
                        Some(folder),
                        format!(
                            "the canonical copy {rel} {why} in the staged commit; expected a regular file: \
                             commit it, or fix shared.owner/shared.files in the profile"
                        ),
                    ),
                }
            } else {
                match (&canonical, read_copy(root, &rel)) {
                    (_, Copy::Missing(why)) => Check::fail(
                        file,
                        Some(folder),
                        format!(
                            "{rel} {why} in the staged commit; expected a byte-identical copy of {owner_rel}: \
                             copy the canonical file there and commit it"
                        ),
                    ),
                    (Copy::Missing(why), Copy::Digest(d)) => Check::fail(
                        file,
                        Some(folder),
                        format!(
                            "cannot compare {rel} (sha256 {}): the canonical copy {owner_rel} {why}; \
                             commit the canonical file or fix the profile",
                            d.hex()
                        ),
                    ),
                    (Copy::Digest(c), Copy::Digest(d)) if c == &d => Check::pass(
                        file,
                        Some(folder),
                        format!("{rel} is byte-identical to {owner_rel} (sha256 {})", d.hex()),
                    )
                    .with_observed(json!({"path": rel, "sha256": d.hex(), "size": d.size, "canonical_path": owner_rel})),
                    (Copy::Digest(c), Copy::Digest(d)) => Check::fail(
                        file,
                        Some(folder),
                        format!(
                            "{rel} (sha256 {}, {} bytes) differs from the canonical {owner_rel} (sha256 {}, {} bytes); \
                             copy the canonical file over it byte-for-byte and commit",
                            d.hex(),
                            d.size,
                            c.hex(),
                            c.size
                        ),
                    )
                    .with_observed(json!({
                        "path": rel, "sha256": d.hex(), "size": d.size,
                        "canonical_path": owner_rel, "canonical_sha256": c.hex(), "canonical_size": c.size,
                    })),
                }
            };
            checks.push(check);
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        d
    }

    fn cands() -> Vec<(String, String)> {
        ["R/a", "R/b", "R/c"]
            .iter()
            .map(|p| (p.to_string(), p.rsplit('/').next().unwrap().to_string()))
            .collect()
    }

    #[test]
    fn identical_copies_pass_one_check_per_file_and_candidate() {
        let d = tree(&[
            ("R/a/pkg/x.py", "1"),
            ("R/b/pkg/x.py", "1"),
            ("R/c/pkg/x.py", "1"),
        ]);
        let checks = compare(d.path(), "R/a", &["pkg/x.py".into()], &cands());
        assert_eq!(checks.len(), 3);
        assert!(
            checks.iter().all(|c| c.result == CheckResult::Pass),
            "{checks:?}"
        );
    }

    #[test]
    fn drift_names_both_files_and_both_digests() {
        let d = tree(&[
            ("R/a/pkg/x.py", "1"),
            ("R/b/pkg/x.py", "1"),
            ("R/c/pkg/x.py", "2"),
        ]);
        let checks = compare(d.path(), "R/a", &["pkg/x.py".into()], &cands());
        let bad: Vec<_> = checks
            .iter()
            .filter(|c| c.result == CheckResult::Fail)
            .collect();
        assert_eq!(bad.len(), 1);
        let detail = &bad[0].detail;
        assert_eq!(bad[0].candidate.as_deref(), Some("c"));
        for needle in [
            "R/c/pkg/x.py",
            "R/a/pkg/x.py",
            &hash::sha256_bytes(b"1"),
            &hash::sha256_bytes(b"2"),
        ] {
            assert!(detail.contains(needle), "{needle} missing from {detail}");
        }
    }

    #[test]
    fn missing_copies_fail_naming_the_file() {
        let d = tree(&[("R/b/pkg/x.py", "1")]);
        let checks = compare(d.path(), "R/a", &["pkg/x.py".into()], &cands());
        assert!(
            checks[0]
                .detail
                .contains("canonical copy R/a/pkg/x.py does not exist"),
            "{}",
            checks[0].detail
        );
        assert!(
            checks[2].detail.contains("R/c/pkg/x.py does not exist"),
            "{}",
            checks[2].detail
        );
        assert!(checks.iter().all(|c| c.result == CheckResult::Fail));
    }

    #[test]
    fn escaping_file_names_fail() {
        let d = tree(&[]);
        let checks = compare(d.path(), "R/a", &["../x".into()], &cands());
        assert!(checks
            .iter()
            .all(|c| c.result == CheckResult::Fail && c.detail.contains("\"../x\"")));
    }
}
