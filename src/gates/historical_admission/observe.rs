//! What `historical-admission` observes: the release directory's files,
//! the SDK's admission of each listed one (through the `dependencies`
//! probe), and each archive's packaged Python and requirements files
//! compared with the staged source.

use super::{
    compare_files, compared_kind, AdmissionAttempt, HistoricalObservation, Observation,
    ReleaseFile, SourceComparison, GATE,
};
use crate::context::RunContext;
use crate::hash;
use crate::profile::{CandidateSpec, HistoricalAdmissionOptions};
use crate::python;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The SDK's admission of one listed historical archive (`path`, `file`),
/// prepared by the dependencies probe in private roots with an empty local
/// index (`empty_index`): what it refused or kept, or why the probe could
/// not observe it.
///
/// # Errors
/// When the private roots cannot be created.
fn admission_attempt(
    ctx: &RunContext,
    opts: &HistoricalAdmissionOptions,
    path: &Path,
    file: &ReleaseFile,
    empty_index: &Path,
) -> Result<Result<AdmissionAttempt, String>, String> {
    let key = &file.sha256[..16];
    let (home, tmp) = ctx
        .private_roots(GATE, key)
        .map_err(|e| format!("cannot create private roots for {}: {e}", file.name))?;
    let root = home
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| home.clone());
    let mut env = ctx.child_env(&home, &tmp);
    // An empty local index: nothing a historical archive names is
    // ever downloaded.
    env.insert(
        "LANGBOT_PLUGIN_PYPI_INDEX_URL".into(),
        format!("file://{}/", empty_index.display()),
    );
    // The batch probe of the `dependencies` gate, with one job.
    let job = serde_json::json!({
        "archive": path.display().to_string(),
        "sha256": file.sha256,
        "data_root": root.join("data").display().to_string(),
        "mode": "prepare",
    });
    let log_stem = ctx.log_stem(GATE, key);
    let probe = python::batch::BatchProbe {
        wrapper: &[],
        python: &ctx.python,
        name: "dependencies_probe",
        source: python::DEPENDENCIES_PROBE,
        cwd: &root,
        log_stem: &log_stem,
    };
    let report: Result<ProbeReport, String> =
        python::batch::run_batch(&probe, &[job], env, Duration::from_secs(opts.timeout_secs))
            .pop()
            .unwrap_or_else(|| Err("the dependencies probe answered no job".into()));
    Ok(report.map(|r| AdmissionAttempt {
        refusal: r.error,
        kept_requirements: r.requirements,
        environment_digest: r.environment.map(|e| e.digest),
    }))
}

/// Observes every file at the top of `dir`; only files whose sha256 `opts`
/// lists are run through the SDK's admission and compared with the source.
///
/// # Errors
/// When the release directory, the staged source or a private root cannot
/// be used.
pub(super) fn observe(
    ctx: &RunContext,
    dir: &Path,
    opts: &HistoricalAdmissionOptions,
) -> Result<Observation, String> {
    let staged = ctx.staged_root.clone().ok_or(
        "the staged source is missing (the `stage` gate did not record DIR/staging/source)",
    )?;
    let candidates = ctx.profile.profile.candidates.clone();
    let empty_index = ctx
        .evidence_dir
        .join("roots")
        .join(GATE)
        .join("empty-index");
    std::fs::create_dir_all(&empty_index)
        .map_err(|e| format!("cannot create {}: {e}", empty_index.display()))?;
    let mut observations = Vec::new();
    for (path, file) in release_files(dir)? {
        let listed = opts
            .archives
            .iter()
            .find(|a| a.sha256 == file.sha256)
            .cloned();
        if listed.is_none() {
            observations.push(HistoricalObservation {
                file,
                listed,
                attempt: None,
                comparison: SourceComparison::default(),
            });
            continue;
        }
        let attempt = admission_attempt(ctx, opts, &path, &file, &empty_index)?;
        let comparison = compare_with_source(&path, &staged, &candidates);
        observations.push(HistoricalObservation {
            file,
            listed,
            attempt: Some(attempt),
            comparison,
        });
    }
    Ok(Observation {
        release_dir: dir.display().to_string(),
        files: observations,
    })
}

/// The probe's report (`dependencies_probe.py`), the fields used here.
#[derive(Debug, Deserialize)]
struct ProbeReport {
    requirements: Option<Vec<String>>,
    environment: Option<ProbeEnvironment>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ProbeEnvironment {
    digest: String,
}

fn safe_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
}

/// The archive's compared members (path -> sha256) and its manifest name.
fn read_archive(path: &Path) -> Result<(BTreeMap<String, String>, Option<String>), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| format!("not a readable ZIP: {e}"))?;
    let mut members = BTreeMap::new();
    let mut manifest_name = None;
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| format!("member {i} cannot be read: {e}"))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_string();
        if name == "manifest.yaml" {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .map_err(|e| format!("manifest.yaml cannot be read: {e}"))?;
            manifest_name =
                serde_yaml_ng::from_str::<serde_yaml_ng::Value>(crate::manifest::strip_bom(&text))
                    .ok()
                    .and_then(|v| {
                        v.get("metadata")
                            .and_then(|m| m.get("name"))
                            .and_then(|n| n.as_str())
                            .map(String::from)
                    });
        } else if compared_kind(&name) && safe_relative(&name) {
            let digest = hash::sha256_reader(&mut entry)
                .map_err(|e| format!("member {name} cannot be read: {e}"))?;
            members.insert(name, digest.hex());
        }
    }
    Ok((members, manifest_name))
}

/// The compared files of a staged candidate (path -> sha256).
fn read_source(root: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    // Files are `sha256:size`; a symlink (`-> target`) never equals a member.
    for (path, value) in hash::tree_digests(root)? {
        if compared_kind(&path) && !path.split('/').any(|s| s == "__pycache__") {
            let digest = value.split(':').next().unwrap_or_default().to_string();
            out.insert(path, digest);
        }
    }
    Ok(out)
}

/// The staged candidate whose manifest's `metadata.name` is `name`.
fn candidate_named(
    staged: &Path,
    candidates: &[CandidateSpec],
    name: &str,
) -> Option<(String, PathBuf)> {
    candidates.iter().find_map(|c| {
        let mut dir = staged.to_path_buf();
        dir.extend(c.path.split('/'));
        crate::manifest::read_id(&dir.join("manifest.yaml"))
            .ok()
            .filter(|id| id.name == name)
            .map(|_| (c.path.clone(), dir))
    })
}

/// Compares one archive with the source under review.
fn compare_with_source(
    archive: &Path,
    staged: &Path,
    candidates: &[CandidateSpec],
) -> SourceComparison {
    let (members, manifest_name) = match read_archive(archive) {
        Ok(x) => x,
        Err(e) => {
            return SourceComparison {
                error: Some(format!("the archive {e}")),
                ..SourceComparison::default()
            }
        }
    };
    let Some(name) = manifest_name else {
        return SourceComparison {
            error: Some("the archive has no manifest.yaml with a metadata.name".into()),
            ..SourceComparison::default()
        };
    };
    let Some((path, dir)) = candidate_named(staged, candidates, &name) else {
        return SourceComparison {
            manifest_name: Some(name.clone()),
            error: Some(format!(
                "no candidate of the profile has a manifest named {name:?}"
            )),
            ..SourceComparison::default()
        };
    };
    match read_source(&dir) {
        Ok(source) => SourceComparison {
            manifest_name: Some(name),
            candidate: Some(path),
            ..compare_files(&members, &source)
        },
        Err(e) => SourceComparison {
            manifest_name: Some(name),
            candidate: Some(path),
            error: Some(e),
            ..SourceComparison::default()
        },
    }
}

/// The regular files at the top of `dir`, hashed, by name.
fn release_files(dir: &Path) -> Result<Vec<(PathBuf, ReleaseFile)>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("--release-dir {}: cannot list: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("--release-dir {}: {e}", dir.display()))?;
        let path = entry.path();
        let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
        if !is_file {
            continue;
        }
        let digest = hash::sha256_file(&path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        out.push((
            path.clone(),
            ReleaseFile {
                name: entry.file_name().to_string_lossy().into_owned(),
                sha256: digest.hex(),
                size: digest.size,
            },
        ));
    }
    out.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_file(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
        let path = dir.join("old.lbpkg");
        let mut w = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, text) in files {
            w.start_file(*name, opts).unwrap();
            w.write_all(text.as_bytes()).unwrap();
        }
        w.finish().unwrap();
        path
    }

    fn staged(root: &Path, files: &[(&str, &str)]) {
        for (p, text) in files {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }

    const MANIFEST: &str =
        "apiVersion: v1\nkind: Plugin\nmetadata:\n  author: a\n  name: Runner\n  version: 0.1.0\n";

    fn cands() -> Vec<CandidateSpec> {
        vec![
            CandidateSpec {
                path: "R/other".into(),
                tests: None,
                sdk: None,
            },
            CandidateSpec {
                path: "R/x".into(),
                tests: None,
                sdk: None,
            },
        ]
    }

    #[test]
    fn an_archive_is_compared_with_the_candidate_of_the_same_manifest_name() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("staged");
        staged(
            &src,
            &[
                (
                    "R/other/manifest.yaml",
                    &MANIFEST.replace("Runner", "Other"),
                ),
                ("R/x/manifest.yaml", MANIFEST),
                ("R/x/main.py", "same\n"),
                ("R/x/pkg/a.py", "new\n"),
                ("R/x/requirements.txt", "b\n"),
                ("R/x/new.py", "n\n"),
                ("R/x/README.md", "not compared\n"),
                ("R/x/pkg/__pycache__/a.py", "cache\n"),
            ],
        );
        let archive = zip_file(
            d.path(),
            &[
                ("manifest.yaml", MANIFEST),
                ("main.py", "same\n"),
                ("pkg/a.py", "old\n"),
                ("requirements.txt", "a\n"),
                ("old.py", "o\n"),
                ("README.md", "different but not compared\n"),
                ("../evil.py", "never compared\n"),
            ],
        );
        let c = compare_with_source(&archive, &src, &cands());
        assert_eq!(c.error, None);
        assert_eq!(c.manifest_name.as_deref(), Some("Runner"));
        assert_eq!(c.candidate.as_deref(), Some("R/x"));
        assert_eq!(c.same, ["main.py"]);
        assert_eq!(c.differing, ["pkg/a.py", "requirements.txt"]);
        assert_eq!(c.only_in_archive, ["old.py"]);
        assert_eq!(c.only_in_source, ["new.py"]);
    }

    #[test]
    fn an_archive_without_a_matching_candidate_or_manifest_or_zip_says_why() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("staged");
        staged(&src, &[("R/x/manifest.yaml", MANIFEST)]);
        let a = zip_file(
            d.path(),
            &[("manifest.yaml", &MANIFEST.replace("Runner", "Gone"))],
        );
        let c = compare_with_source(&a, &src, &cands());
        assert_eq!(
            c.error.as_deref(),
            Some("no candidate of the profile has a manifest named \"Gone\"")
        );
        assert_eq!(c.manifest_name.as_deref(), Some("Gone"));
        let a = zip_file(d.path(), &[("main.py", "x\n")]);
        let c = compare_with_source(&a, &src, &cands());
        assert_eq!(
            c.error.as_deref(),
            Some("the archive has no manifest.yaml with a metadata.name")
        );
        std::fs::write(d.path().join("old.lbpkg"), b"not a zip").unwrap();
        let c = compare_with_source(&d.path().join("old.lbpkg"), &src, &cands());
        assert!(
            c.error
                .as_deref()
                .unwrap()
                .starts_with("the archive not a readable ZIP"),
            "{c:?}"
        );
    }

    #[test]
    fn only_regular_files_at_the_top_of_the_release_dir_are_hashed_by_name() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b.lbpkg"), b"2").unwrap();
        std::fs::write(d.path().join("a.lbpkg"), b"1").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/c.lbpkg"), b"3").unwrap();
        std::os::unix::fs::symlink("a.lbpkg", d.path().join("link.lbpkg")).unwrap();
        let files: Vec<ReleaseFile> = release_files(d.path())
            .unwrap()
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        assert_eq!(
            files,
            [
                ReleaseFile {
                    name: "a.lbpkg".into(),
                    sha256: hash::sha256_bytes(b"1"),
                    size: 1
                },
                ReleaseFile {
                    name: "b.lbpkg".into(),
                    sha256: hash::sha256_bytes(b"2"),
                    size: 1
                },
            ]
        );
        assert!(release_files(&d.path().join("missing"))
            .unwrap_err()
            .contains("cannot list"));
    }
}
