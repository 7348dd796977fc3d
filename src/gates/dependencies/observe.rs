//! What the `dependencies` gate observes: the SDK's preparations (the
//! embedded probe, run twice), the requirements it keeps, and the published
//! environment on disk (ready marker, modes, SDK copies, installed
//! distributions). Nothing here decides a check.

use super::{
    DependencyInput, DirMode, EnvironmentObservation, Observation, ProbeReport, StoppedRun,
    PREPARE_TIMEOUT, READY_MARKER, RUNS,
};
use crate::evidence::InstalledDistribution;
use crate::{python, wheelhouse};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub(super) fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.display().to_string())
}

/// PEP 503 normalisation of a distribution or file name (lower case, runs of
/// `-`, `_`, `.` as one `-`).
pub(super) fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Every entry under `root` whose name is the SDK's (`langbot_plugin`,
/// `langbot-plugin`, any case or separator, with any suffix such as
/// `-0.6.0b5.dist-info` or `.pth`), `/`-separated relative paths.
///
/// # Errors
/// When the tree cannot be walked.
pub fn shadow_copies(root: &Path) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false).min_depth(1) {
        let entry = entry.map_err(|e| format!("cannot walk {}: {e}", root.display()))?;
        let name = entry.file_name().to_string_lossy();
        if normalise(&name).starts_with("langbot-plugin") {
            found.push(relative(root, entry.path()));
        }
    }
    Ok(found)
}

/// The distributions in a `site-packages` directory, from each
/// `*.dist-info/METADATA` (`Name` and `Version` headers), sorted by name.
///
/// # Errors
/// When the directory or a METADATA file cannot be read, or lacks a header.
pub fn installed_distributions(site_packages: &Path) -> Result<Vec<InstalledDistribution>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(site_packages)
        .map_err(|e| format!("cannot read {}: {e}", site_packages.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", site_packages.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".dist-info") {
            continue;
        }
        let metadata = entry.path().join("METADATA");
        let text = std::fs::read_to_string(&metadata)
            .map_err(|e| format!("cannot read {}: {e}", metadata.display()))?;
        let header = |key: &str| {
            text.lines()
                .take_while(|l| !l.is_empty())
                .find_map(|l| {
                    l.split_once(':')
                        .filter(|(k, _)| k.eq_ignore_ascii_case(key))
                        .map(|(_, v)| v.trim().to_string())
                })
                .ok_or_else(|| format!("{}: no `{key}` header", metadata.display()))
        };
        out.push(InstalledDistribution {
            name: header("Name")?,
            version: header("Version")?,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Runs the preparations and reads the environment they published.
pub fn observe(input: &DependencyInput) -> Observation {
    let data_root = input.root.join("data");
    let mut obs = Observation {
        folder: input.folder.clone(),
        archive: relative(&input.evidence_dir, &input.archive),
        archive_sha256: input.archive_sha256.clone(),
        log_dir: input.log_dir.display().to_string(),
        network: input.network.clone(),
        expected_index: input
            .env
            .get(wheelhouse::INDEX_URL_ENV)
            .map(|url| vec!["-i".to_string(), url.clone()]),
        wheelhouse_files: input.wheelhouse_files.clone(),
        runs: Vec::new(),
        stopped: None,
        environment: None,
    };
    for run in 1..=RUNS {
        let report: Result<ProbeReport, String> = python::run_probe_in(
            &input.wrapper,
            &input.python,
            "dependencies_probe",
            python::DEPENDENCIES_PROBE,
            &[
                input.archive.display().to_string(),
                input.archive_sha256.clone(),
                data_root.display().to_string(),
            ],
            &input.root,
            input.env.clone(),
            &input.log_dir.join(format!("run-{run}")),
            PREPARE_TIMEOUT,
        );
        match report {
            Ok(r) if r.error.is_none() && r.environment.is_some() => obs.runs.push(r),
            Ok(r) => {
                obs.stopped = Some(StoppedRun {
                    run,
                    runtime_profile: Some(r.runtime_profile),
                    sdk_error: Some(
                        r.error
                            .unwrap_or_else(|| "no environment and no error reported".into()),
                    ),
                    probe_error: None,
                });
                return obs;
            }
            Err(e) => {
                obs.stopped = Some(StoppedRun {
                    run,
                    runtime_profile: None,
                    sdk_error: None,
                    probe_error: Some(e),
                });
                return obs;
            }
        }
    }
    let Some(first) = obs.runs.first().and_then(|r| r.environment.as_ref()) else {
        return obs;
    };
    let expected_root = data_root
        .join("environments")
        .join("sha256")
        .join(&first.digest);
    let site_packages = expected_root.join("site-packages");
    let marker_path = expected_root.join(READY_MARKER);
    let (marker, marker_error) = match std::fs::read_to_string(&marker_path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()))
    {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e)),
    };
    let modes = [&expected_root, &site_packages]
        .into_iter()
        .map(|dir| {
            let path = relative(&input.evidence_dir, dir);
            match std::fs::metadata(dir) {
                Ok(m) => DirMode {
                    path,
                    mode: Some(m.permissions().mode() & 0o7777),
                    error: None,
                },
                Err(e) => DirMode {
                    path,
                    mode: None,
                    error: Some(e.to_string()),
                },
            }
        })
        .collect();
    let (shadow, shadow_error) = match shadow_copies(&expected_root) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e)),
    };
    let (installed, installed_error) = match installed_distributions(&site_packages) {
        Ok(d) => (Some(d), None),
        Err(e) => (None, Some(e)),
    };
    obs.environment = Some(EnvironmentObservation {
        expected_root: expected_root.display().to_string(),
        site_packages: site_packages.display().to_string(),
        env_rel: relative(&input.evidence_dir, &expected_root),
        marker_rel: relative(&input.evidence_dir, &marker_path),
        marker,
        marker_error,
        modes,
        shadow,
        shadow_error,
        installed,
        installed_error,
    });
    obs
}

/// The requirements the SDK keeps for one archive (its own pin dropped), as
/// the probe in mode `requirements` reports them, on a scratch data root
/// (`<root>/requirements-data`) so the preparations' root stays untouched.
///
/// # Errors
/// A sentence for a failing `wheelhouse` check: the probe did not answer, or
/// the SDK refused the requirements.
pub fn read_requirements(input: &DependencyInput) -> Result<Vec<String>, String> {
    let archive_rel = relative(&input.evidence_dir, &input.archive);
    let report: ProbeReport = python::run_probe_with_timeout(
        &input.python,
        "dependencies_probe",
        python::DEPENDENCIES_PROBE,
        &[
            input.archive.display().to_string(),
            input.archive_sha256.clone(),
            input.root.join("requirements-data").display().to_string(),
            "requirements".into(),
        ],
        &input.root,
        input.env.clone(),
        &input.log_dir.join("requirements"),
        python::PROBE_TIMEOUT,
    )
    .map_err(|e| format!("not observed: reading the requirements: {e}"))?;
    match (report.error, report.requirements) {
        (None, Some(requirements)) => Ok(requirements),
        (error, _) => Err(format!(
            "{archive_rel}: expected the SDK to read the archive's requirements.txt, found it refused: {}; \
             the host would fail this installation with `dependency_prepare_failed`: fix the candidate's \
             requirements.txt",
            error.unwrap_or_else(|| "no requirements and no error reported".into())
        )),
    }
}
