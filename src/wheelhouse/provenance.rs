//! Where each wheelhouse file came from: pip's installation report (format
//! version 1, pip's `docs/html/reference/installation-report.md`) read into
//! resolved distributions, the pinned requirements the download step takes,
//! each produced file matched to the URL and published hash it came from,
//! and the verification of a wheelhouse against those records.

use super::{normalize, same_version};
use crate::evidence::{Provenance, WheelSource, WheelhouseFile};
use serde::Deserialize;

/// One distribution of the resolved closure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// PEP 503 normalized name (`metadata.name`).
    pub project: String,
    /// `metadata.version`.
    pub version: String,
    /// `download_info.url`.
    pub url: String,
    /// `download_info.archive_info.hashes.sha256` (or its `hash`
    /// `sha256=HEX`), lower-case; `None` when the index published none or the
    /// source is a folder or a VCS checkout.
    pub sha256: Option<String>,
}

impl Resolved {
    /// True when the URL names a wheel file.
    pub fn is_wheel(&self) -> bool {
        file_name_of(&self.url).ends_with(".whl")
    }
}

#[derive(Deserialize)]
struct Report {
    version: String,
    #[serde(default)]
    install: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    download_info: DownloadInfo,
    metadata: Metadata,
}

#[derive(Deserialize)]
struct DownloadInfo {
    url: String,
    #[serde(default)]
    archive_info: Option<ArchiveInfo>,
}

#[derive(Deserialize)]
struct ArchiveInfo {
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    hash: Option<String>,
}

#[derive(Deserialize)]
struct Metadata {
    name: String,
    version: String,
}

/// Reads pip's `--report` JSON.
///
/// # Errors
/// When it is not JSON of report format version 1.
pub fn parse_report(text: &str) -> Result<Vec<Resolved>, String> {
    let report: Report = serde_json::from_str(text)
        .map_err(|e| format!("expected pip's installation report (JSON), found: {e}"))?;
    if report.version != "1" {
        return Err(format!(
            "expected pip's installation report format version 1, found version {:?}",
            report.version
        ));
    }
    Ok(report
        .install
        .into_iter()
        .map(|i| {
            let sha256 = i.download_info.archive_info.and_then(|a| {
                a.hashes.get("sha256").cloned().or_else(|| {
                    a.hash
                        .and_then(|h| h.strip_prefix("sha256=").map(str::to_string))
                })
            });
            Resolved {
                project: normalize(&i.metadata.name),
                version: i.metadata.version,
                url: i.download_info.url,
                sha256: sha256.map(|h| h.to_ascii_lowercase()),
            }
        })
        .collect())
}

/// True when `project` is one of `allowed` (PEP 503 names compare).
pub fn source_build_allowed(project: &str, allowed: &[String]) -> bool {
    let project = normalize(project);
    allowed.iter().any(|a| normalize(a) == project)
}

/// What of a resolution cannot be downloaded as pinned: a distribution with
/// no published sha256 (a folder, a VCS checkout, an index without hashes),
/// or an sdist of a project the profile does not allow building. One
/// sentence per problem, naming the project, version and URL.
pub fn unpinnable(items: &[Resolved], allowed: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for i in items {
        if i.sha256.is_none() {
            out.push(format!(
                "{} {} from {}: the index published no sha256 for it, so the file cannot be pinned to what \
                 was published",
                i.project, i.version, i.url
            ));
        } else if !i.is_wheel() && !source_build_allowed(&i.project, allowed) {
            out.push(format!(
                "{} {} has no wheel, only the sdist {}, and the profile does not allow building it",
                i.project, i.version, i.url
            ));
        }
    }
    out
}

/// The download step's requirements file: each resolved distribution
/// pinned to its URL and published hash (`name @ URL --hash=sha256:HEX`).
/// Items without a hash are left out ([`unpinnable`] refuses them first).
pub fn pinned_requirements(items: &[Resolved]) -> String {
    items
        .iter()
        .filter_map(|i| {
            i.sha256
                .as_ref()
                .map(|h| format!("{} @ {} --hash=sha256:{h}\n", i.project, i.url))
        })
        .collect()
}

/// The last path segment of a URL, percent-decoded, without query or
/// fragment.
pub fn file_name_of(url: &str) -> String {
    let path = url.split(['#', '?']).next().unwrap_or(url);
    let last = path.rsplit('/').next().unwrap_or(path);
    percent_decode(last)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The sources of the files one download produced: each file matched to
/// the resolved distribution of its project and version. A wheel URL gives
/// `downloaded`; an sdist URL gives `built-from-sdist` with `build_log`.
///
/// # Errors
/// Naming a produced file that no resolved distribution accounts for.
pub fn sources(
    items: &[Resolved],
    produced: &[WheelhouseFile],
    build_log: &str,
) -> Result<Vec<WheelSource>, String> {
    let mut out = Vec::new();
    for f in produced {
        let Some(item) = items
            .iter()
            .find(|i| i.project == f.project && same_version(&f.version, &i.version))
        else {
            return Err(format!(
                "{}: pip produced a file that no distribution of its installation report accounts for \
                 (report: {})",
                f.name,
                items
                    .iter()
                    .map(|i| format!("{} {}", i.project, i.version))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let built = !item.is_wheel();
        out.push(WheelSource {
            file: f.name.clone(),
            project: item.project.clone(),
            version: item.version.clone(),
            provenance: if built {
                Provenance::BuiltFromSdist
            } else {
                Provenance::Downloaded
            },
            url: item.url.clone(),
            published_sha256: item.sha256.clone().unwrap_or_default(),
            build_log: built.then(|| build_log.to_string()),
        });
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(out)
}

/// Verifies wheelhouse files (as re-hashed on disk) against their recorded
/// sources: each has one; a `downloaded` file's sha256 is the published one
/// and its name the URL's file name; a `built-from-sdist` file is of a
/// project the profile allows building, with a build log. One sentence per
/// problem, naming the file, the URL, what was expected and what was found.
pub fn verify(
    files: &[&WheelhouseFile],
    sources: &[WheelSource],
    allowed: &[String],
) -> Vec<String> {
    let mut problems = Vec::new();
    for f in files {
        let Some(s) = sources.iter().find(|s| s.file == f.name) else {
            problems.push(format!(
                "{}: expected a source (the URL and published hash pip's report names), found none: the file \
                 came from somewhere the resolution did not name",
                f.name
            ));
            continue;
        };
        match s.provenance {
            Provenance::Downloaded => {
                if f.sha256 != s.published_sha256 {
                    problems.push(format!(
                        "{}: downloaded from {}, expected the sha256 the index published, {}, found {}",
                        f.name, s.url, s.published_sha256, f.sha256
                    ));
                }
                if file_name_of(&s.url) != f.name {
                    problems.push(format!(
                        "{}: downloaded from {}, expected the file to keep that URL's name, found another",
                        f.name, s.url
                    ));
                }
            }
            Provenance::BuiltFromSdist => {
                if !source_build_allowed(&s.project, allowed) {
                    problems.push(format!(
                        "{}: built here from the sdist {}, expected only projects the profile's \
                         `[dependencies] allow_source_builds` lists ({allowed:?}) to be built, found {}",
                        f.name, s.url, s.project
                    ));
                }
                if s.build_log.is_none() {
                    problems.push(format!(
                        "{}: built here from the sdist {}, expected its build log recorded, found none",
                        f.name, s.url
                    ));
                }
            }
        }
    }
    problems
}

/// The sdists pip skipped (`-vv`: `Skipping link: No sources permitted for
/// NAME: URL (from INDEX)`) for the project of `requirement` (a PEP 508
/// string as pip's error names it); when it pins `==VERSION`, those of that
/// version. URLs, in pip's order.
pub fn skipped_sdists(pip_output: &str, requirement: &str) -> Vec<String> {
    let name_end = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(requirement.len());
    let project = normalize(&requirement[..name_end]);
    let pinned = requirement
        .split(';')
        .next()
        .and_then(|r| r.split_once("=="))
        .map(|(_, v)| v.trim().to_string());
    let mut out = Vec::new();
    for line in pip_output.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("Skipping link: No sources permitted for ") else {
            continue;
        };
        let Some((name, tail)) = rest.split_once(": ") else {
            continue;
        };
        if normalize(name) != project {
            continue;
        }
        let url = tail.split(" (from ").next().unwrap_or(tail).trim();
        let version = sdist_version(&file_name_of(url), &project);
        if pinned
            .as_deref()
            .is_none_or(|p| version.as_deref().is_some_and(|v| same_version(v, p)))
        {
            out.push(url.to_string());
        }
    }
    out
}

/// The version of an sdist file name (`{name}-{version}.tar.gz` or `.zip`)
/// of `project`.
fn sdist_version(file: &str, project: &str) -> Option<String> {
    let stem = [".tar.gz", ".zip", ".tar.bz2", ".tgz"]
        .iter()
        .find_map(|ext| file.strip_suffix(ext))?;
    let (name, version) = stem.rsplit_once('-')?;
    (normalize(name) == project).then(|| version.to_string())
}

#[cfg(test)]
mod tests;
