//! What `lbp-build` observes: per candidate, the manifest's identity, the
//! official build run from the staged copy (all candidates through one
//! build host, `host.rs`, up to `--jobs` at a time), its output directory,
//! and the staged source before and after.

use super::{host, is_exactly, official_build_spec, CandidateBuild, MovedArchive, OutEntry, GATE};
use crate::context::RunContext;
use crate::manifest;
use crate::process::ChildSpec;
use std::collections::BTreeMap;
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

/// Builds every candidate of the run; results in profile order.
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
    let on_panic = |input: &BuildInput| CandidateBuild {
        setup_error: Some(
            "the harness thread running this build panicked; this is a harness defect: report it"
                .into(),
        ),
        ..CandidateBuild::new(
            &input.folder,
            &input.out,
            Err("not read: the harness thread panicked".into()),
        )
    };
    let mut prepared = crate::parallel::map(&inputs, ctx.width(), prepare, |input| Prepared {
        build: on_panic(input),
        before: None,
    });
    run_builds(ctx, &inputs, &mut prepared);
    let pairs: Vec<(&BuildInput, &Prepared)> = inputs.iter().zip(&prepared).collect();
    let mut builds = crate::parallel::map(
        &pairs,
        ctx.width(),
        |(i, p)| finish(i, p),
        |(i, _)| on_panic(i),
    );
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

/// A candidate before its build: what was observed so far, and the staged
/// tree's digests when the build is to run (`None`: it is not, and `build`
/// says why).
struct Prepared {
    build: CandidateBuild,
    before: Option<BTreeMap<String, String>>,
}

/// Everything before the build: the manifest's identity (an unsafe one is
/// never built), the spec, the staged tree's digests and the output folder.
fn prepare(input: &BuildInput) -> Prepared {
    let manifest_path = input.staged.join("manifest.yaml");
    let mut b = CandidateBuild::new(&input.folder, &input.out, manifest::read_id(&manifest_path));
    let stop = |b: CandidateBuild| Prepared {
        build: b,
        before: None,
    };
    if b.identity.is_err() {
        b.unsafe_fields = unsafe_identity_fields(&manifest_path);
        if !b.unsafe_fields.is_empty() {
            return stop(b);
        }
    }
    if let Err(m) = &input.spec {
        b.setup_error = Some(m.clone());
        return stop(b);
    }
    let before = match crate::hash::tree_digests(&input.staged) {
        Ok(t) => t,
        Err(m) => {
            b.unreadable_before = Some(m);
            return stop(b);
        }
    };
    b.source_entries = before.len();
    if let Err(e) = std::fs::create_dir_all(&input.out) {
        b.setup_error = Some(format!(
            "cannot create the output directory {}: {e}",
            input.out.display()
        ));
        return stop(b);
    }
    Prepared {
        build: b,
        before: Some(before),
    }
}

/// Runs the builds of every prepared candidate through one build host
/// (`host.rs`), setting each one's `run` (or `setup_error` when the host
/// gave no result for it).
fn run_builds(ctx: &RunContext, inputs: &[BuildInput], prepared: &mut [Prepared]) {
    let (ready, specs): (Vec<usize>, Vec<&ChildSpec>) = (0..inputs.len())
        .filter(|&i| prepared[i].before.is_some())
        .filter_map(|i| inputs[i].spec.as_ref().ok().map(|s| (i, s)))
        .unzip();
    if specs.is_empty() {
        return;
    }
    let results = ctx
        .private_roots(GATE, "host/build-host")
        .map_err(|e| format!("cannot create the build host's private HOME/TMP: {e}"))
        .and_then(|(home, tmp)| {
            host::host_spec(
                ctx.python_for(&inputs[ready[0]].folder),
                &specs,
                ctx.width(),
                (&home, &tmp),
                // A folder of its own: a candidate named `build-host` has
                // `build-host.*` logs and `roots/lbp-build/build-host/`.
                ctx.log_stem(GATE, "host/build-host"),
            )
        })
        .and_then(|host| {
            host::create_logs(&specs).map_err(|e| format!("cannot create a build's log: {e}"))?;
            Ok((host::run(&host, specs.len())?, host))
        });
    for (k, &i) in ready.iter().enumerate() {
        let b = &mut prepared[i].build;
        match &results {
            Ok((results, host)) => {
                b.run = Some(host::build_run(specs[k], host, &results[k]));
                b.build_pages = results[k].build_pages.clone().map(|p| p.report);
            }
            Err(e) => b.setup_error = Some(e.clone()),
        }
    }
}

/// Everything after the build: the output folder, the archive moved, the
/// staged tree again.
fn finish(input: &BuildInput, prepared: &Prepared) -> CandidateBuild {
    let mut b = prepared.build.clone();
    let (Some(before), Some(_)) = (&prepared.before, &b.run) else {
        return b;
    };
    b.out_entries = Some(list_out(&input.out));
    if let (Some(Ok(entries)), Ok(id)) = (&b.out_entries, &b.identity) {
        let expected = id.archive_name();
        if is_exactly(entries, &expected) {
            b.moved = Some(move_archive(input, &expected));
        }
    }
    b.source_changes = Some(
        crate::hash::tree_digests(&input.staged).map(|after| super::tree_changes(before, &after)),
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
        let p = prepare(&inp);
        assert!(p.before.is_none(), "not to be built");
        let b = p.build;
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
        let p = prepare(&inp);
        assert!(p.before.is_none(), "not to be built");
        let b = p.build;
        assert_eq!(b.setup_error.as_deref(), Some("unused"));
        assert_eq!(b.run, None);
        assert!(b.unsafe_fields.is_empty());
    }
}
