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
use crate::profile::HistoricalArchive;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;

mod observe;

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

/// What the gate observed in the release directory.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Observation {
    /// `--release-dir`, as given.
    pub release_dir: String,
    /// Every regular file at its top, by name (none when the profile lists
    /// no archive: nothing is run then).
    pub files: Vec<HistoricalObservation>,
}

/// `listed-archives`: the release directory holds every archive the
/// profile lists (a warning naming those not supplied; a failure when it
/// holds none of them).
fn listed_archives_check(obs: &Observation, profile: &[HistoricalArchive]) -> Check {
    let observations = &obs.files;
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
        let seen: Vec<&ReleaseFile> = observations.iter().map(|o| &o.file).collect();
        Check::fail(
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
        )
        .with_observed(json!({ "release_dir": obs.release_dir, "files": seen, "supplied": [] }))
    } else if !missing.is_empty() {
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
        }))
    } else {
        Check::pass(
            "listed-archives",
            None,
            format!(
                "every archive the profile lists ({}) was supplied",
                profile.len()
            ),
        )
        .with_observed(json!({ "release_dir": obs.release_dir, "supplied": supplied }))
    }
}

/// Decides the gate's checks from the observation and the profile's list.
/// Pure.
pub(crate) fn decide(obs: &Observation, profile: &[HistoricalArchive]) -> Vec<Check> {
    if profile.is_empty() {
        return vec![Check::fail(
            "listed-archives",
            None,
            format!(
                "--release-dir {} was given, but the profile lists no historical archive: expected \
                 [[historical_admission.archive]] entries (name, sha256, reason, refusal_contains); \
                 add them, or leave --release-dir out",
                obs.release_dir
            ),
        )
        .with_observed(json!({ "release_dir": obs.release_dir, "listed": 0 }))];
    }
    let observations = &obs.files;
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
    checks.push(listed_archives_check(obs, profile));
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
        Some(Ok(AdmissionAttempt {
            refusal: None,
            environment_digest: None,
            ..
        })) => Check::fail(
            &name,
            None,
            format!(
                "not observed: the SDK's admission of {what} reported neither a refusal nor a prepared \
                 environment; see the probe's log under logs/{GATE}/ (a probe that says nothing is not a refusal)"
            ),
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

impl super::Gate for HistoricalAdmission {
    fn id(&self) -> &'static str {
        GATE
    }

    fn not_applicable(&self, ctx: &RunContext) -> Option<String> {
        ctx.release_dir.is_none().then(|| NOT_SUPPLIED.to_string())
    }

    fn run(&self, ctx: &RunContext, _out: &mut Updates) -> Result<Vec<Check>, String> {
        let dir = ctx.release_dir.clone().ok_or(NOT_SUPPLIED)?;
        let profile = ctx.profile.profile.historical_admission.clone();
        let obs = match &profile {
            // Nothing is run without a list to run it against.
            None => Observation {
                release_dir: dir.display().to_string(),
                files: Vec::new(),
            },
            Some(opts) => observe::observe(ctx, &dir, opts)?,
        };
        let archives = profile.map(|p| p.archives).unwrap_or_default();
        Ok(decide(&obs, &archives))
    }
}

#[cfg(test)]
mod tests;
