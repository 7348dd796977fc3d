//! What `lbp-build` observes: per candidate, the manifest's identity, the
//! official build run from the staged copy (all candidates in parallel),
//! its output directory, and the staged source before and after.

use super::{
    is_exactly, official_build_spec, BuildRun, CandidateBuild, MovedArchive, OutEntry, GATE,
};
use crate::context::RunContext;
use crate::manifest;
use crate::process::{self, ChildSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What one candidate's build needs; built on the gate's thread, used on a
/// worker thread.
struct BuildInput {
    folder: String,
    staged: PathBuf,
    out: PathBuf,
    packages: PathBuf,
    spec: Result<ChildSpec, String>,
}

/// Builds every candidate of the run, in parallel; results in profile order.
pub(super) fn observe(ctx: &RunContext) -> Vec<CandidateBuild> {
    let timeout = Duration::from_secs(ctx.profile.profile.build.timeout_secs);
    let inputs: Vec<BuildInput> = ctx
        .candidate_specs()
        .iter()
        .map(|c| {
            let folder = c.folder().to_string();
            let base = ctx.evidence_dir.join("roots").join(GATE).join(&folder);
            let out = base.join("out");
            let spec = ctx
                .private_roots(GATE, &folder)
                .map_err(|e| {
                    format!(
                        "cannot create private HOME/TMP under {}: {e}",
                        base.display()
                    )
                })
                .map(|(home, tmp)| {
                    official_build_spec(
                        ctx.python_for(&folder),
                        &ctx.staged_candidate(c),
                        &out,
                        ctx.child_env(&home, &tmp),
                        timeout,
                        ctx.log_stem(GATE, &folder),
                    )
                });
            BuildInput {
                staged: ctx.staged_candidate(c),
                packages: ctx.packages_dir(&folder),
                folder,
                out,
                spec,
            }
        })
        .collect();
    let mut builds = crate::parallel::map(&inputs, ctx.width(), build_one, |input| {
        CandidateBuild {
        setup_error: Some(
            "the harness thread running this build panicked; this is a harness defect: report it"
                .into(),
        ),
        ..CandidateBuild::new(
            &input.folder,
            &input.out,
            Err("not read: the harness thread panicked".into()),
        )
    }
    });
    if builds
        .iter()
        .any(|b| b.run.as_ref().is_some_and(|r| !r.file_errors.is_empty()))
    {
        let stamp = if ctx.source.worktree.is_some() {
            Some(super::file_errors::Stamp::WorkingTree)
        } else {
            commit_date(ctx)
        };
        for b in &mut builds {
            b.stamp = stamp.clone();
        }
    }
    builds
}

/// The commit under review and its committer date (git archive stamps the
/// staged files with that date), or `None` when git does not say.
fn commit_date(ctx: &RunContext) -> Option<super::file_errors::Stamp> {
    let commit = &ctx.source.commit;
    let out = crate::git::run(
        &ctx.repo,
        &["log", "-1", "--no-walk", "--format=%cI", commit],
        Some(&ctx.log_stem(GATE, "git-commit-date")),
        None,
    )
    .ok()?;
    let date = out.stdout_text().trim().to_string();
    (!date.is_empty()).then(|| super::file_errors::Stamp::Commit {
        id: commit.clone(),
        date,
    })
}

/// The identity fields of `manifest.yaml` that are strings unsafe in a file
/// name (empty when none is, or when the file cannot be parsed).
pub(super) fn unsafe_identity_fields(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(value) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(manifest::strip_bom(&text))
    else {
        return Vec::new();
    };
    ["author", "name", "version"]
        .iter()
        .filter_map(|f| match value.get("metadata").and_then(|m| m.get(*f)) {
            Some(serde_yaml_ng::Value::String(s)) if !manifest::is_safe_component(s) => {
                Some(format!("metadata.{f} = {s:?}"))
            }
            _ => None,
        })
        .collect()
}

fn build_one(input: &BuildInput) -> CandidateBuild {
    let manifest_path = input.staged.join("manifest.yaml");
    let mut b = CandidateBuild::new(&input.folder, &input.out, manifest::read_id(&manifest_path));
    if b.identity.is_err() {
        b.unsafe_fields = unsafe_identity_fields(&manifest_path);
        if !b.unsafe_fields.is_empty() {
            return b;
        }
    }
    let spec = match &input.spec {
        Ok(spec) => spec,
        Err(m) => {
            b.setup_error = Some(m.clone());
            return b;
        }
    };
    let before = match crate::hash::tree_digests(&input.staged) {
        Ok(t) => t,
        Err(m) => {
            b.unreadable_before = Some(m);
            return b;
        }
    };
    b.source_entries = before.len();
    if let Err(e) = std::fs::create_dir_all(&input.out) {
        b.setup_error = Some(format!(
            "cannot create the output directory {}: {e}",
            input.out.display()
        ));
        return b;
    }
    let output = match process::run(spec) {
        Ok(o) => o,
        Err(e) => {
            b.setup_error = Some(e.to_string());
            return b;
        }
    };
    b.run = Some(BuildRun {
        status: output.status.code(),
        success: output.success(),
        timed_out: output.timed_out,
        stragglers_killed: output.stragglers_killed,
        duration_ms: output.duration.as_millis() as u64,
        outcome: output.describe(),
        tail: output.tail(20),
        logs: format!(
            "{} and {}",
            output.logs.0.display(),
            output.logs.1.display()
        ),
        said_manifest_not_found: output.stdout_text().contains("Plugin manifest not found")
            || output.stderr_text().contains("Plugin manifest not found"),
        file_errors: super::file_errors::parse(&format!(
            "{}\n{}",
            output.stdout_text(),
            output.stderr_text()
        )),
    });
    b.out_entries = Some(list_out(&input.out));
    if let (Some(Ok(entries)), Ok(id)) = (&b.out_entries, &b.identity) {
        let expected = id.archive_name();
        if is_exactly(entries, &expected) {
            b.moved = Some(move_archive(input, &expected));
        }
    }
    b.source_changes = Some(
        crate::hash::tree_digests(&input.staged).map(|after| super::tree_changes(&before, &after)),
    );
    b
}

fn list_out(out: &Path) -> Result<Vec<OutEntry>, String> {
    let rd = std::fs::read_dir(out).map_err(|e| e.to_string())?;
    let mut entries: Vec<OutEntry> = rd
        .flatten()
        .map(|e| OutEntry {
            is_file: e.file_type().map(|t| t.is_file()).unwrap_or(false),
            name: e.file_name().to_string_lossy().into_owned(),
        })
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// Moves the archive to DIR/packages/<folder>/.
fn move_archive(input: &BuildInput, expected: &str) -> Result<MovedArchive, String> {
    let from = input.out.join(expected);
    let to = input.packages.join(expected);
    std::fs::create_dir_all(&input.packages)
        .and_then(|()| std::fs::rename(&from, &to))
        .map_err(|e| format!("cannot move {} to {}: {e}", from.display(), to.display()))?;
    Ok(MovedArchive {
        path: format!("packages/{}/{expected}", input.folder),
        size: std::fs::metadata(&to).map(|m| m.len()).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(dir: &Path) -> BuildInput {
        BuildInput {
            folder: "c".into(),
            staged: dir.join("staged"),
            out: dir.join("out"),
            packages: dir.join("packages/c"),
            spec: Err("unused".into()),
        }
    }

    #[test]
    fn the_output_directory_is_listed_sorted_with_what_is_a_file() {
        let d = tempfile::tempdir().unwrap();
        let inp = input(d.path());
        std::fs::create_dir_all(inp.out.join("b.lbpkg")).unwrap();
        std::fs::write(inp.out.join("a.lbpkg"), b"x").unwrap();
        assert_eq!(
            list_out(&inp.out).unwrap(),
            [
                OutEntry {
                    name: "a.lbpkg".into(),
                    is_file: true
                },
                OutEntry {
                    name: "b.lbpkg".into(),
                    is_file: false
                },
            ]
        );
        assert!(list_out(&d.path().join("missing")).is_err());
    }

    #[test]
    fn the_archive_moves_to_packages_with_its_size() {
        let d = tempfile::tempdir().unwrap();
        let inp = input(d.path());
        std::fs::create_dir_all(&inp.out).unwrap();
        std::fs::write(inp.out.join("a-n-1.lbpkg"), b"12345").unwrap();
        assert_eq!(
            move_archive(&inp, "a-n-1.lbpkg").unwrap(),
            MovedArchive {
                path: "packages/c/a-n-1.lbpkg".into(),
                size: 5
            }
        );
        assert!(inp.packages.join("a-n-1.lbpkg").is_file());
        assert!(!inp.out.join("a-n-1.lbpkg").exists());
        let e = move_archive(&inp, "a-n-1.lbpkg").unwrap_err();
        assert!(e.starts_with("cannot move "), "{e}");
    }

    #[test]
    fn an_unsafe_name_is_never_built() {
        let d = tempfile::tempdir().unwrap();
        let inp = input(d.path());
        std::fs::create_dir_all(&inp.staged).unwrap();
        std::fs::write(
            inp.staged.join("manifest.yaml"),
            "apiVersion: v1\nkind: Plugin\nmetadata:\n  author: a\n  name: ../../evil\n  version: '1'\n",
        )
        .unwrap();
        let b = build_one(&inp);
        assert!(b.identity.is_err());
        assert_eq!(b.unsafe_fields, ["metadata.name = \"../../evil\""]);
        assert_eq!(b.run, None);
        assert!(!inp.out.exists(), "nothing was prepared for a build");
    }

    #[test]
    fn a_build_that_cannot_be_set_up_is_not_run() {
        let d = tempfile::tempdir().unwrap();
        let inp = input(d.path());
        std::fs::create_dir_all(&inp.staged).unwrap();
        let b = build_one(&inp);
        assert_eq!(b.setup_error.as_deref(), Some("unused"));
        assert_eq!(b.run, None);
        assert!(b.unsafe_fields.is_empty());
    }
}
