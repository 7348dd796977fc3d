//! What the `archive-members` gate reads of one candidate: the archive's
//! digest and central directory, the readers' findings, the build's and
//! git's selections from the staged source, and (only when the archive is
//! safe to read) every member's bytes, compared with the staged source and
//! extracted to DIR/extracted/<folder>. Everything here observes; the gate
//! file decides.

use super::manifest_reader::ManifestReader;
use super::CommittedFile;
use crate::build_rules;
use crate::gitignore::GitRules;
use crate::hash;
use crate::lbpkg::{self, MemberDigest};
use crate::manifest_yaml::ManifestObservation;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};

/// What one candidate's inspection needs.
pub(crate) struct Input {
    pub folder: String,
    pub staged: PathBuf,
    /// Archive path and its path relative to DIR, or why there is none.
    pub archive: Result<(PathBuf, String), String>,
    pub extract_abs: PathBuf,
    pub extract_rel: String,
    /// How `manifest-equal-source` reads the two manifests.
    pub manifest_reader: ManifestReader,
}

/// What the gate observed of one candidate's archive. A later field is
/// absent when an earlier one stopped the observation (no archive, an
/// unreadable central directory, findings that make reading members unsafe).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Observation {
    /// Candidate folder.
    pub folder: String,
    /// The archive's path relative to DIR, when its name is known.
    pub archive: Option<String>,
    /// Why there is no archive to inspect (name unknown, unreadable, not a
    /// regular file).
    pub archive_error: Option<String>,
    /// sha256 (hex) and size of the archive file.
    pub digest: Option<(String, u64)>,
    /// The central directory and the readers' findings, when it was read.
    pub zip: Option<ZipObservation>,
    /// Why Python's zipfile would refuse the central directory.
    pub zip_error: Option<String>,
}

/// The central directory, as read, and what the readers found in it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ZipObservation {
    /// Central-directory entries.
    pub entries: usize,
    /// Uncompressed bytes of the file entries.
    pub total_uncompressed: u64,
    /// Structure findings: local headers, the zip crate's disagreements.
    pub structure: Vec<String>,
    /// ZIP comment length and its first 60 characters.
    pub comment_bytes: usize,
    /// The comment's first 60 characters, lossily decoded.
    pub comment_preview: String,
    /// Member-name findings ([`lbpkg::name_findings`]).
    pub names: Vec<String>,
    /// Member names unsafe on the host ([`lbpkg::unsafe_on_host`]) that are
    /// exactly the name of a committed file of the staged candidate: the
    /// build copied them as committed.
    pub committed_unsafe_names: Vec<String>,
    /// Member-type findings.
    pub types: Vec<String>,
    /// Encryption findings.
    pub encryption: Vec<String>,
    /// Host-limit findings.
    pub host_limits: Vec<String>,
    /// What the build's rules select from the staged source, or why they
    /// could not be applied.
    pub expected: Result<Expected, String>,
    /// Every committed file with both readings, or why they could not be read.
    pub committed: Result<Vec<CommittedFile>, String>,
    /// Member data, read only when the findings above that make reading
    /// unsafe (structure, names, types, encryption, limits) are all empty.
    pub data: Option<Result<MemberData, String>>,
}

/// The archive against the build's own selection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Expected {
    /// How many members the build's rules select.
    pub selected: usize,
    /// Selected source files the archive lacks.
    pub missing: Vec<String>,
    /// Members with no selected source file.
    pub unexpected: Vec<String>,
}

/// Every member's bytes, as read and extracted.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MemberData {
    /// Name, sha256, size and mode of every member.
    #[serde(serialize_with = "members_as_json")]
    pub members: Vec<MemberDigest>,
    /// Members other than `manifest.yaml` byte-identical to the staged source.
    pub compared: usize,
    /// `name (member sha256 X, source sha256 Y)` and the like, one per
    /// member that differs from (or has no) staged source file.
    pub differences: Vec<String>,
    /// Both manifests as the SDK reads them.
    pub manifest: ManifestObservation,
    /// DIR/extracted/<folder>, relative to DIR.
    pub extract_rel: String,
    /// How the extraction differs from the archive.
    pub extraction: Vec<String>,
}

fn members_as_json<S: serde::Serializer>(m: &[MemberDigest], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(m.len()))?;
    for d in m {
        seq.serialize_element(&serde_json::json!({
            "name": d.name, "sha256": d.sha256, "size": d.size, "mode": d.mode, "is_dir": d.is_dir
        }))?;
    }
    seq.end()
}

impl ZipObservation {
    /// Whether a finding makes reading member data unsafe.
    pub fn blocks_reading(&self) -> bool {
        !(self.structure.is_empty()
            && self.names.is_empty()
            && self.types.is_empty()
            && self.encryption.is_empty()
            && self.host_limits.is_empty())
    }
}

/// What the archive at `path` is as a ZIP, from its central directory
/// `cd`: structure findings (both ZIP readers), comment, names, types,
/// encryption, host limits, the members against the build rules' selection
/// and the committed files. Its members' data is not read here.
fn zip_observation(input: &Input, path: &Path, cd: &lbpkg::CentralDirectory) -> ZipObservation {
    let mut structure = match File::open(path) {
        Ok(mut file) => lbpkg::structure_findings(&mut file, cd),
        Err(e) => vec![format!("cannot open: {e}")],
    };
    structure.extend(lbpkg::zip_crate_disagreements(path, cd));
    let present: BTreeSet<String> = cd.entries.iter().map(|e| e.name.clone()).collect();
    ZipObservation {
        entries: cd.entries.len(),
        total_uncompressed: cd
            .entries
            .iter()
            .filter(|e| !e.is_dir())
            .map(|e| e.size)
            .sum(),
        structure,
        comment_bytes: cd.comment.len(),
        comment_preview: String::from_utf8_lossy(&cd.comment)
            .chars()
            .take(60)
            .collect(),
        names: lbpkg::name_findings(cd),
        committed_unsafe_names: cd
            .entries
            .iter()
            .map(|e| e.orig_name.as_str())
            .filter(|n| lbpkg::unsafe_on_host(n) && is_committed_file(&input.staged, n))
            .map(str::to_string)
            .collect(),
        types: lbpkg::type_findings(cd),
        encryption: lbpkg::encryption_findings(cd),
        host_limits: lbpkg::host_limit_findings(cd),
        expected: build_rules::expected_members(&input.staged).map(|selected| Expected {
            selected: selected.len(),
            missing: selected
                .iter()
                .filter(|n| !present.contains(*n))
                .cloned()
                .collect(),
            unexpected: present
                .iter()
                .filter(|n| !selected.contains(*n))
                .cloned()
                .collect(),
        }),
        committed: observe_committed(&input.staged, &present),
        data: None,
    }
}

/// Observes one candidate's archive.
pub(crate) fn observe(input: &Input) -> Observation {
    let mut obs = Observation {
        folder: input.folder.clone(),
        archive: None,
        archive_error: None,
        digest: None,
        zip: None,
        zip_error: None,
    };
    let (path, rel) = match &input.archive {
        Ok(a) => a,
        Err(m) => {
            obs.archive_error = Some(m.clone());
            return obs;
        }
    };
    obs.archive = Some(rel.clone());
    let digest = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => hash::sha256_file(path).map_err(|e| e.to_string()),
        Ok(_) => Err("not a regular file".into()),
        Err(e) => Err(e.to_string()),
    };
    match digest {
        Ok(d) => obs.digest = Some((d.hex(), d.size)),
        Err(e) => {
            obs.archive_error = Some(e);
            return obs;
        }
    }
    let cd = match File::open(path)
        .map_err(|e| e.to_string())
        .and_then(|mut file| lbpkg::read_central_directory(&mut file))
    {
        Ok(cd) => cd,
        Err(m) => {
            obs.zip_error = Some(m);
            return obs;
        }
    };
    let mut zip = zip_observation(input, path, &cd);
    if !zip.blocks_reading() {
        zip.data = Some(read_members(input, path, &cd));
    }
    obs.zip = Some(zip);
    obs
}

/// Whether `name`, split at `/` only (a backslash is part of a Unix file
/// name), is a regular file of the staged candidate `staged`. Names with an
/// empty, `.` or `..` component, or absolute ones, are never looked up: no
/// commit holds them, and joining them could leave `staged`.
fn is_committed_file(staged: &Path, name: &str) -> bool {
    if name.starts_with('/')
        || name
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return false;
    }
    let mut p = staged.to_path_buf();
    p.extend(name.split('/'));
    std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_file())
}

/// Reads, compares and extracts every member.
fn read_members(
    input: &Input,
    path: &Path,
    cd: &lbpkg::CentralDirectory,
) -> Result<MemberData, String> {
    let members = lbpkg::hash_members(path, cd, Some(&input.extract_abs))
        .map_err(|e| format!("reading the members failed: {e}"))?;
    let (compared, differences) = compare_with_source(&input.staged, &members);
    let manifest = input.manifest_reader.observe(
        &input.staged.join(build_rules::MANIFEST),
        &input.extract_abs.join(build_rules::MANIFEST),
    );
    let extraction = lbpkg::extraction_findings(&input.extract_abs, &members);
    Ok(MemberData {
        members,
        compared,
        differences,
        manifest,
        extract_rel: input.extract_rel.clone(),
        extraction,
    })
}

/// Every file member but `manifest.yaml` against its staged source file:
/// how many are byte-identical, and one sentence per one that is not.
fn compare_with_source(staged: &Path, members: &[MemberDigest]) -> (usize, Vec<String>) {
    let mut diffs = Vec::new();
    let mut compared = 0usize;
    for m in members
        .iter()
        .filter(|m| !m.is_dir && m.name != build_rules::MANIFEST)
    {
        let mut p = staged.to_path_buf();
        p.extend(m.name.split('/'));
        match std::fs::symlink_metadata(&p) {
            Ok(meta) if meta.file_type().is_file() => match hash::sha256_file(&p) {
                Ok(d) if d.hex() == m.sha256 => compared += 1,
                Ok(d) => diffs.push(format!(
                    "{} (member sha256 {}, source sha256 {})",
                    m.name,
                    m.sha256,
                    d.hex()
                )),
                Err(e) => diffs.push(format!("{} (source unreadable: {e})", m.name)),
            },
            Ok(_) => diffs.push(format!("{} (the source is not a regular file)", m.name)),
            Err(_) => diffs.push(format!("{} (no such file in the staged source)", m.name)),
        }
    }
    (compared, diffs)
}

/// Every committed file of the staged candidate (the staged source is the
/// commit, blob for blob, and the `stage` gate refuses export-ignored
/// candidate files), sorted by path, with both readings and whether
/// `present` (the archive's member names) holds it.
///
/// # Errors
/// When the staged tree cannot be walked, a name is not UTF-8, or a
/// `.gitignore` cannot be read by either reading.
pub(crate) fn observe_committed(
    staged: &Path,
    present: &BTreeSet<String>,
) -> Result<Vec<CommittedFile>, String> {
    let mut paths = Vec::new();
    for entry in walkdir::WalkDir::new(staged)
        .sort_by_file_name()
        .min_depth(1)
    {
        let entry = entry.map_err(|e| format!("{}: cannot walk: {e}", staged.display()))?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(staged)
            .map_err(|e| e.to_string())?
            .to_str()
            .ok_or_else(|| format!("{}: the name is not UTF-8", entry.path().display()))?
            .to_string();
        paths.push(rel);
    }
    let patterns = build_rules::read_gitignore(staged)?;
    let git = GitRules::read(staged, paths.iter().map(String::as_str))?;
    Ok(paths
        .into_iter()
        .map(|path| CommittedFile {
            in_archive: present.contains(&path),
            git: git.verdict(&path),
            build: build_rules::build_drop(&path, &patterns),
            path,
        })
        .collect())
}
