//! The `historical-admission` gate: exact historical archives are refused by
//! the SDK's own admission, for the reason the profile lists.
//!
//! With `--release-dir DIR`, every regular file at the top of DIR is hashed
//! (sha256, streamed). A file whose sha256 the profile lists in
//! `[[historical_admission.archive]]` is handed to the SDK through the
//! `dependencies` gate's probe (`src/python/dependencies_probe.py`): the
//! host's own path, `PluginArtifactStore.install_package` then
//! `PluginWorkerLauncher.prepare_dependency_environment`, in a private data
//! root, with `LANGBOT_PLUGIN_PYPI_INDEX_URL` naming an empty local folder so
//! no package index is ever reached. The archive must be refused, and the
//! SDK's refusal must contain the listed `refusal_contains`; an admitted
//! archive fails. A file whose sha256 is not listed is reported (a warning)
//! and never run: only the listed digest identifies a historical release.
//!
//! Each archive's packaged Python and requirements files are compared with
//! the source under review: the staged candidate whose `manifest.yaml` has
//! the same `metadata.name`. Which files are the same, differ, or exist on
//! one side only is recorded (a record, not a failure).
//!
//! Without `--release-dir` the gate is skipped (never passed) with
//! [`NOT_SUPPLIED`].

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use crate::hash;
use crate::profile::{CandidateSpec, HistoricalArchive};
use crate::python;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Gate id.
pub const GATE: &str = "historical-admission";

/// The reason the gate is skipped without `--release-dir`.
pub const NOT_SUPPLIED: &str =
    "archives not supplied: package admission of historical releases is not established";

/// Most paths listed in one detail.
const LISTED: usize = 20;

/// The `historical-admission` gate.
pub struct HistoricalAdmission;

/// A file found at the top of the release directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseFile {
    /// File name.
    pub name: String,
    /// sha256, lower-case hex.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
}

/// What the SDK's admission did with one archive (from the probe).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdmissionAttempt {
    /// The SDK's refusal (`ExceptionType: message`); none: admitted.
    pub refusal: Option<String>,
    /// The requirements the SDK kept, once its requirement check ran; none
    /// when it refused before (in `install_package` or that check), so the
    /// installer never started.
    pub kept_requirements: Option<Vec<String>>,
    /// The prepared environment's digest, when it was admitted.
    pub environment_digest: Option<String>,
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

/// A historical archive compared with the source under review.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SourceComparison {
    /// The archive's `manifest.yaml` `metadata.name`.
    pub manifest_name: Option<String>,
    /// The candidate path with that manifest name.
    pub candidate: Option<String>,
    /// Packaged Python and requirements files byte-identical to the source.
    pub same: Vec<String>,
    /// Packaged files whose bytes differ from the source's.
    pub differing: Vec<String>,
    /// Packaged files the source under review does not have.
    pub only_in_archive: Vec<String>,
    /// Python and requirements files of the source the archive does not hold.
    pub only_in_source: Vec<String>,
    /// Why no comparison was made.
    pub error: Option<String>,
}

/// Everything observed about one file of the release directory.
#[derive(Debug, Clone, Serialize)]
pub struct HistoricalObservation {
    /// The file.
    pub file: ReleaseFile,
    /// The profile entry with its sha256, if any.
    #[serde(skip)]
    pub listed: Option<HistoricalArchive>,
    /// The SDK's admission (listed archives only), or why it was not observed.
    pub attempt: Option<Result<AdmissionAttempt, String>>,
    /// The comparison with the source under review.
    pub comparison: SourceComparison,
}

/// Whether a packaged file is compared with the source: Python files and
/// requirements files (`requirements*.txt`).
pub fn compared_kind(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    path.ends_with(".py") || (base.starts_with("requirements") && base.ends_with(".txt"))
}

fn safe_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Compares `members` (archive path -> sha256, compared kinds only) with the
/// candidate `source` (source path -> sha256, compared kinds only). Pure.
pub fn compare_files(
    members: &BTreeMap<String, String>,
    source: &BTreeMap<String, String>,
) -> SourceComparison {
    let mut c = SourceComparison::default();
    for (path, digest) in members {
        match source.get(path) {
            Some(d) if d == digest => c.same.push(path.clone()),
            Some(_) => c.differing.push(path.clone()),
            None => c.only_in_archive.push(path.clone()),
        }
    }
    c.only_in_source = source
        .keys()
        .filter(|p| !members.contains_key(*p))
        .cloned()
        .collect();
    c
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
            manifest_name = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text)
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

fn listed(paths: &[String]) -> String {
    let mut text = paths
        .iter()
        .take(LISTED)
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > LISTED {
        text.push_str(&format!(" and {} more", paths.len() - LISTED));
    }
    if text.is_empty() {
        text.push_str("none");
    }
    text
}

/// Decides the gate's checks from every observation and the profile's list.
/// Pure.
pub fn decide(observations: &[HistoricalObservation], profile: &[HistoricalArchive]) -> Vec<Check> {
    let mut checks = Vec::new();
    for o in observations {
        let f = &o.file;
        let Some(entry) = &o.listed else {
            checks.push(
                Check::warn(
                    &format!("{}/unlisted", f.name),
                    None,
                    format!(
                        "{} (sha256 {}, {} bytes) is not listed in the profile's \
                         [[historical_admission.archive]]: it was not run through admission and is \
                         not trusted as a historical release; list its sha256 with a name and the \
                         expected refusal if it is one",
                        f.name, f.sha256, f.size
                    ),
                )
                .with_observed(json!({ "file": f })),
            );
            continue;
        };
        checks.push(refused_check(o, entry));
        checks.push(comparison_check(o, entry));
    }
    let supplied: Vec<&str> = observations
        .iter()
        .filter(|o| o.listed.is_some())
        .map(|o| o.file.sha256.as_str())
        .collect();
    let missing: Vec<&HistoricalArchive> = profile
        .iter()
        .filter(|a| !supplied.contains(&a.sha256.as_str()))
        .collect();
    if supplied.is_empty() {
        checks.push(Check::fail(
            "listed-archives",
            None,
            format!(
                "expected the release directory to hold at least one archive the profile lists ({}), \
                 found none of them (files seen: {}); supply the exact historical archives, or leave \
                 --release-dir out (the gate is then skipped)",
                profile
                    .iter()
                    .map(|a| format!("{} sha256 {}", a.name, a.sha256))
                    .collect::<Vec<_>>()
                    .join("; "),
                listed(&observations.iter().map(|o| o.file.name.clone()).collect::<Vec<_>>())
            ),
        ));
    } else if !missing.is_empty() {
        checks.push(
            Check::warn(
                "listed-archives",
                None,
                format!(
                    "not supplied, so their admission is not established: {}",
                    missing
                        .iter()
                        .map(|a| format!("{} (sha256 {})", a.name, a.sha256))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )
            .with_observed(json!({
                "not_supplied": missing.iter().map(|a| json!({"name": a.name, "sha256": a.sha256})).collect::<Vec<_>>()
            })),
        );
    } else {
        checks.push(Check::pass(
            "listed-archives",
            None,
            format!(
                "every archive the profile lists ({}) was supplied",
                profile.len()
            ),
        ));
    }
    checks
}

fn refused_check(o: &HistoricalObservation, entry: &HistoricalArchive) -> Check {
    let f = &o.file;
    let name = format!("{}/refused", f.name);
    let what = format!("{} ({}, sha256 {})", entry.name, f.name, f.sha256);
    let observed = json!({
        "file": f,
        "listed_as": entry.name,
        "reason": entry.reason,
        "refusal_contains": entry.refusal_contains,
        "attempt": match &o.attempt {
            Some(Ok(a)) => json!(a),
            Some(Err(e)) => json!({ "not_observed": e }),
            None => serde_json::Value::Null,
        },
    });
    let check = match &o.attempt {
        None => Check::fail(&name, None, format!("not observed: {what} was not run through admission")),
        Some(Err(e)) => Check::fail(
            &name,
            None,
            format!("not observed: the SDK's admission of {what} did not report: {e}"),
        ),
        Some(Ok(a)) => match &a.refusal {
            None => Check::fail(
                &name,
                None,
                format!(
                    "expected the SDK to refuse {what} ({}), found it admitted: install_package \
                     accepted it and the dependency environment {} was prepared; the host would \
                     install this historical release: check that the listed sha256 and reason are \
                     right and which SDK ran (the profile's pin), and do not rely on this archive \
                     being refused",
                    entry.reason,
                    a.environment_digest.as_deref().unwrap_or("(no digest)")
                ),
            ),
            Some(refusal) if refusal.contains(&entry.refusal_contains) => Check::pass(
                &name,
                None,
                format!(
                    "the SDK refused {what} {}, for the listed reason ({}): {refusal}",
                    if a.kept_requirements.is_none() {
                        "before any install"
                    } else {
                        "in its dependency installer"
                    },
                    entry.reason
                ),
            ),
            Some(refusal) => Check::fail(
                &name,
                None,
                format!(
                    "the SDK refused {what}, but not for the listed reason ({}): expected its refusal \
                     to contain {:?}, found: {refusal}; find out why the archive is refused and \
                     correct the profile's reason, or the archive",
                    entry.reason, entry.refusal_contains
                ),
            ),
        },
    };
    check.with_observed(observed)
}

fn comparison_check(o: &HistoricalObservation, entry: &HistoricalArchive) -> Check {
    let f = &o.file;
    let name = format!("{}/compared-with-source", f.name);
    let c = &o.comparison;
    let observed = json!({ "file": f, "comparison": c });
    match (&c.error, &c.candidate) {
        (Some(e), _) => Check::warn(
            &name,
            None,
            format!(
                "{} ({}) was not compared with the source under review: {e}",
                entry.name, f.name
            ),
        ),
        (None, candidate) => Check::pass(
            &name,
            None,
            format!(
                "{} ({}) against {} (manifest name {:?}): {} packaged Python/requirements file(s) \
                 identical, differing: {}; only in the archive: {}; only in the source: {}",
                entry.name,
                f.name,
                candidate.as_deref().unwrap_or("?"),
                c.manifest_name.as_deref().unwrap_or("?"),
                c.same.len(),
                listed(&c.differing),
                listed(&c.only_in_archive),
                listed(&c.only_in_source)
            ),
        ),
    }
    .with_observed(observed)
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

impl super::Gate for HistoricalAdmission {
    fn id(&self) -> &'static str {
        GATE
    }

    fn not_applicable(&self, ctx: &RunContext) -> Option<String> {
        ctx.release_dir.is_none().then(|| NOT_SUPPLIED.to_string())
    }

    fn run(&self, ctx: &RunContext, _out: &mut Updates) -> Result<Vec<Check>, String> {
        let dir = ctx.release_dir.clone().ok_or(NOT_SUPPLIED)?;
        let Some(opts) = ctx.profile.profile.historical_admission.clone() else {
            return Ok(vec![Check::fail(
                "listed-archives",
                None,
                format!(
                    "--release-dir {} was given, but the profile lists no historical archive: expected \
                     [[historical_admission.archive]] entries (name, sha256, reason, refusal_contains); \
                     add them, or leave --release-dir out",
                    dir.display()
                ),
            )]);
        };
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
        for (path, file) in release_files(&dir)? {
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
            let report: Result<ProbeReport, String> = python::run_probe_with_timeout(
                &ctx.python,
                "dependencies_probe",
                python::DEPENDENCIES_PROBE,
                &[
                    path.display().to_string(),
                    file.sha256.clone(),
                    root.join("data").display().to_string(),
                ],
                &root,
                env,
                &ctx.log_stem(GATE, key),
                Duration::from_secs(opts.timeout_secs),
            );
            let attempt = report.map(|r| AdmissionAttempt {
                refusal: r.error.or_else(|| {
                    r.environment
                        .is_none()
                        .then(|| "no environment and no error reported".to_string())
                }),
                kept_requirements: r.requirements,
                environment_digest: r.environment.map(|e| e.digest),
            });
            let comparison = compare_with_source(&path, &staged, &candidates);
            observations.push(HistoricalObservation {
                file,
                listed,
                attempt: Some(attempt),
                comparison,
            });
        }
        Ok(decide(&observations, &opts.archives))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    fn entry(sha: &str) -> HistoricalArchive {
        HistoricalArchive {
            name: "ACPAgentRunner 0.1.12".into(),
            sha256: sha.into(),
            reason: "pins b3".into(),
            refusal_contains: "Plugin requires langbot-plugin==0.6.0b3".into(),
        }
    }

    fn obs(sha: &str, listed: bool, refusal: Option<&str>) -> HistoricalObservation {
        HistoricalObservation {
            file: ReleaseFile {
                name: format!("{}.lbpkg", &sha[..4]),
                sha256: sha.into(),
                size: 10,
            },
            listed: listed.then(|| entry(sha)),
            attempt: listed.then(|| {
                Ok(AdmissionAttempt {
                    refusal: refusal.map(String::from),
                    kept_requirements: None,
                    environment_digest: refusal.is_none().then(|| "e".repeat(64)),
                })
            }),
            comparison: SourceComparison {
                manifest_name: Some("ACPAgentRunner".into()),
                candidate: Some("Runner/acp-agent-runner".into()),
                same: vec!["main.py".into()],
                differing: vec!["pkg/daemon_relay.py".into()],
                ..SourceComparison::default()
            },
        }
    }

    const B3: &str = "DependencyEnvironmentPreparationError: Plugin requires langbot-plugin==0.6.0b3, but the Runtime provides langbot-plugin==0.6.0b5";

    fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
        checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} in {checks:?}"))
    }

    #[test]
    fn a_listed_archive_refused_for_the_listed_reason_passes() {
        let a = "a".repeat(64);
        let checks = decide(&[obs(&a, true, Some(B3))], &[entry(&a)]);
        let refused = find(&checks, "aaaa.lbpkg/refused");
        assert_eq!(refused.result, CheckResult::Pass, "{}", refused.detail);
        assert!(
            refused.detail.contains("before any install"),
            "{}",
            refused.detail
        );
        let compared = find(&checks, "aaaa.lbpkg/compared-with-source");
        assert_eq!(compared.result, CheckResult::Pass);
        assert!(
            compared.detail.contains("differing: `pkg/daemon_relay.py`"),
            "{}",
            compared.detail
        );
        assert_eq!(find(&checks, "listed-archives").result, CheckResult::Pass);
    }

    #[test]
    fn an_admitted_archive_fails() {
        let a = "a".repeat(64);
        let checks = decide(&[obs(&a, true, None)], &[entry(&a)]);
        let c = find(&checks, "aaaa.lbpkg/refused");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("found it admitted"), "{}", c.detail);
    }

    #[test]
    fn a_refusal_for_another_reason_fails_naming_both() {
        let a = "a".repeat(64);
        let other = "PluginArtifactError: archive has too many entries";
        let checks = decide(&[obs(&a, true, Some(other))], &[entry(&a)]);
        let c = find(&checks, "aaaa.lbpkg/refused");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains(other)
                && c.detail.contains("Plugin requires langbot-plugin==0.6.0b3"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn a_probe_that_did_not_report_is_not_a_refusal() {
        let a = "a".repeat(64);
        let mut o = obs(&a, true, None);
        o.attempt = Some(Err("exit status 1".into()));
        let checks = decide(&[o], &[entry(&a)]);
        let c = find(&checks, "aaaa.lbpkg/refused");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.starts_with("not observed"), "{}", c.detail);
    }

    #[test]
    fn an_unlisted_archive_is_reported_not_trusted_and_does_not_count() {
        let a = "a".repeat(64);
        let b = "b".repeat(64);
        let checks = decide(&[obs(&b, false, None)], &[entry(&a)]);
        let c = find(&checks, "bbbb.lbpkg/unlisted");
        assert_eq!(c.result, CheckResult::Warn);
        assert!(
            c.detail.contains(&b) && c.detail.contains("not trusted"),
            "{}",
            c.detail
        );
        // Only unlisted files: nothing the profile lists was supplied.
        let l = find(&checks, "listed-archives");
        assert_eq!(l.result, CheckResult::Fail, "{}", l.detail);
        assert!(l.detail.contains(&a), "{}", l.detail);
    }

    #[test]
    fn a_listed_archive_not_supplied_is_a_warning() {
        let a = "a".repeat(64);
        let c2 = "c".repeat(64);
        let checks = decide(&[obs(&a, true, Some(B3))], &[entry(&a), entry(&c2)]);
        let l = find(&checks, "listed-archives");
        assert_eq!(l.result, CheckResult::Warn);
        assert!(l.detail.contains(&c2), "{}", l.detail);
    }

    #[test]
    fn comparison_sorts_files_into_same_differing_and_one_sided() {
        let m: BTreeMap<String, String> = [
            ("main.py", "1"),
            ("pkg/x.py", "2"),
            ("old.py", "3"),
            ("requirements.txt", "4"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let s: BTreeMap<String, String> = [
            ("main.py", "1"),
            ("pkg/x.py", "9"),
            ("new.py", "5"),
            ("requirements.txt", "7"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let c = compare_files(&m, &s);
        assert_eq!(c.same, ["main.py"]);
        assert_eq!(c.differing, ["pkg/x.py", "requirements.txt"]);
        assert_eq!(c.only_in_archive, ["old.py"]);
        assert_eq!(c.only_in_source, ["new.py"]);
    }

    #[test]
    fn compared_kinds_are_python_and_requirements_files() {
        for p in [
            "main.py",
            "pkg/a.py",
            "requirements.txt",
            "requirements-dev.txt",
        ] {
            assert!(compared_kind(p), "{p}");
        }
        for p in [
            "manifest.yaml",
            "README.md",
            "pkg/LICENSE-sdk.txt",
            "notes.txt",
            "a.pyc",
        ] {
            assert!(!compared_kind(p), "{p}");
        }
    }
}
