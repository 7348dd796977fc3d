//! The `admission` gate: the genuine SDK admits each exact archive as the
//! LangBot host does.
//!
//! Per candidate archive (in parallel), an embedded probe
//! (`src/python/admission_probe.py`) hands the archive's bytes to the SDK's
//! `langbot_plugin.runtime.plugin.artifact.PluginArtifactStore.install_package`
//! in a private data root (`DIR/roots/admission/<folder>/data`), and asks the
//! SDK's own requirement check
//! (`dependency_environment.PluginDependencyEnvironmentStore._read_requirements`,
//! which `prepare` runs before installing anything) for its verdict on the
//! archive's `requirements.txt`, as a whole and line by line. Rust then checks:
//!
//! - `artifact-store`: the artifact store accepted the bytes;
//! - `marker`: its `.verified-sha256` marker holds the archive's sha256;
//! - `extraction-agrees`: the store's code directory and `DIR/extracted/<folder>`
//!   (two independent extractions of the same bytes) hold the same files with
//!   the same sha256;
//! - `sdk-requirement`: every `langbot-plugin` requirement is satisfied by the
//!   installed SDK, evaluated here with PEP 508/440 (pre-releases allowed, as
//!   the SDK does), and the SDK's decision agrees;
//! - `requirement-lines`: no line is one the SDK refuses (pip options, invalid
//!   requirements), and the SDK's verdict on every line agrees with ours.

use crate::context::{RunContext, Updates};
use crate::evidence::{AdmissionRecord, Check, RequirementDecision, SdkRequirementRecord};
use crate::hash;
use crate::python;
use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, Requirement, VerbatimUrl, VersionOrUrl};
use serde::Deserialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Gate id.
pub const GATE: &str = "admission";

/// The SDK's distribution name (PEP 503 normalised), which the runtime
/// provides and drops from every plugin's install list
/// (`_RUNTIME_PROVIDED_DISTRIBUTIONS` in the SDK's `dependency_environment`).
pub const SDK_DISTRIBUTION: &str = "langbot-plugin";

/// The SDK's marker file next to an artifact's code directory.
const VERIFIED_MARKER: &str = ".verified-sha256";

/// Most differences listed in a failing `extraction-agrees` detail.
const LISTED_DIFFERENCES: usize = 20;

/// The `admission` gate.
pub struct Admission;

/// Everything one admission needs, owned, so candidates can be admitted in
/// parallel threads without the run context.
#[derive(Debug, Clone)]
pub struct AdmissionInput {
    /// The genuine interpreter.
    pub python: PathBuf,
    /// The evidence directory DIR (recorded paths are relative to it).
    pub evidence_dir: PathBuf,
    /// Candidate folder (names checks, roots and logs).
    pub folder: String,
    /// The exact archive file.
    pub archive: PathBuf,
    /// The archive's sha256, lower-case hex, as `archive-members` recorded it.
    pub archive_sha256: String,
    /// The harness's own extraction of the archive (`DIR/extracted/<folder>`).
    pub extracted: PathBuf,
    /// The installed SDK version as `sdk-record` observed it (`0.6.0b5`).
    pub sdk_version: String,
    /// A private directory for this admission; the probe's cwd. The artifact
    /// store's data root is `<root>/data`, one-line requirement files go to
    /// `<root>/requirements`; both must not exist yet.
    pub root: PathBuf,
    /// The probe's whole environment (allowlisted, private HOME/TMPDIR).
    pub env: BTreeMap<String, String>,
    /// Log stem for the probe (`DIR/logs/admission/<folder>`).
    pub log_stem: PathBuf,
}

/// What one admission found.
#[derive(Debug, Clone)]
pub struct AdmissionOutcome {
    /// The checks, all for this candidate.
    pub checks: Vec<Check>,
    /// The facts for the evidence, when the probe ran.
    pub record: Option<AdmissionRecord>,
}

/// The probe's report (`admission_probe.py`).
#[derive(Debug, Deserialize)]
struct ProbeReport {
    installed_sdk_version: String,
    marker_environment: serde_json::Value,
    artifact: Option<ProbeArtifact>,
    artifact_error: Option<String>,
    artifact_requirements: Option<SdkVerdict>,
    file_requirements: SdkVerdict,
    lines: Vec<SdkLine>,
}

#[derive(Debug, Deserialize)]
struct ProbeArtifact {
    digest: String,
    root_path: String,
    code_path: String,
    marker: String,
    plugin_author: String,
    plugin_name: String,
    plugin_version: String,
}

/// The SDK's requirement check on one `requirements.txt`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct SdkVerdict {
    accepted: bool,
    /// The error is the SDK's own refusal (`DependencyEnvironmentPreparationError`),
    /// not its check crashing.
    refusal: bool,
    kept: Vec<String>,
    digest: Option<String>,
    error: Option<String>,
}

/// The SDK's requirement check on one line alone.
#[derive(Debug, Deserialize)]
struct SdkLine {
    number: usize,
    text: String,
    accepted: bool,
    /// As [`SdkVerdict::refusal`].
    refusal: bool,
    kept: Vec<String>,
    error: Option<String>,
}

impl SdkLine {
    fn decision(&self) -> String {
        match &self.error {
            None => "accepted".into(),
            Some(e) if self.refusal => format!("refused: {e}"),
            Some(e) => format!("undecided: its check raised {e}"),
        }
    }

    /// What the SDK did, as a verb phrase (`refused it: ...`).
    fn says(&self) -> String {
        match &self.error {
            None if self.kept.is_empty() => {
                "accepted it and dropped it from the install list".into()
            }
            None => format!("kept it for the installer as {:?}", self.kept),
            Some(e) if self.refusal => format!("refused it: {e}"),
            Some(e) => format!(
                "did not decide: its check raised {e}, which is not the SDK's refusal \
                 (DependencyEnvironmentPreparationError)"
            ),
        }
    }

    /// The SDK decided this line: accepted it, or refused it with its own
    /// refusal (not a crash of its check).
    fn decided(&self) -> bool {
        self.accepted || self.refusal
    }
}

/// One requirement line as the harness reads it: the SDK's splitting
/// (`str.splitlines`, `str.strip`, blank and `#` lines skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementLine {
    /// 1-based line number.
    pub number: usize,
    /// The stripped line.
    pub text: String,
    /// What the line is and the harness's decision on it.
    pub kind: LineKind,
}

/// The harness's reading of one requirement line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// Starts with `-`: a pip option, which the SDK refuses in an archive.
    PipOption,
    /// Not a PEP 508 requirement (the parser's message).
    Invalid(String),
    /// A `langbot-plugin` requirement, with the decision against the SDK.
    Sdk(RequirementDecision),
    /// Any other requirement: left for the installer.
    Other,
}

impl LineKind {
    /// Whether the SDK should accept the line.
    pub fn accepted(&self) -> bool {
        match self {
            LineKind::PipOption | LineKind::Invalid(_) => false,
            LineKind::Sdk(d) => matches!(
                d,
                RequirementDecision::Satisfied | RequirementDecision::MarkerExcludes
            ),
            LineKind::Other => true,
        }
    }

    /// Whether an accepted line stays in the install list.
    pub fn kept(&self) -> bool {
        matches!(self, LineKind::Other)
    }
}

/// Python's `str.splitlines()` boundaries (the SDK splits `requirements.txt`
/// with it): `\n`, `\r`, `\r\n`, `\x0b`, `\x0c`, `\x1c`-`\x1e`, `\x85`,
/// U+2028, U+2029.
pub fn python_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !boundary {
            continue;
        }
        lines.push(&text[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' {
            if let Some(&(j, '\n')) = chars.peek() {
                chars.next();
                end = j + 1;
            }
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Python's `str.strip()` with no argument: Unicode whitespace plus the
/// separators `\x1c`-`\x1f`, which Python counts as whitespace and Rust does not.
fn python_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// Reads `requirements.txt` bytes as the SDK does and decides every line.
///
/// The `langbot-plugin` rule mirrors the SDK (`dependency_environment.py`):
/// a false environment marker makes the line not apply; a direct URL is
/// refused; otherwise the PEP 440 specifier must contain the installed version,
/// pre-releases allowed (`pep440_rs`'s `contains` applies no pre-release
/// exclusion, like `SpecifierSet.contains(v, prereleases=True)`).
///
/// # Errors
/// When the bytes are not UTF-8 (the SDK refuses such a file).
pub fn analyse_requirements(
    bytes: &[u8],
    installed: &Version,
    markers: &MarkerEnvironment,
) -> Result<Vec<RequirementLine>, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| format!("requirements.txt is not UTF-8 ({e})"))?;
    let mut out = Vec::new();
    for (index, raw) in python_splitlines(text).into_iter().enumerate() {
        let line = python_strip(raw);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let kind = if line.starts_with('-') {
            LineKind::PipOption
        } else {
            match Requirement::<VerbatimUrl>::from_str(line) {
                Err(e) => LineKind::Invalid(e.message.to_string()),
                Ok(req) if req.name.as_ref() == SDK_DISTRIBUTION => {
                    LineKind::Sdk(sdk_decision(&req, installed, markers))
                }
                Ok(_) => LineKind::Other,
            }
        };
        out.push(RequirementLine {
            number: index + 1,
            text: line.to_string(),
            kind,
        });
    }
    Ok(out)
}

fn sdk_decision(
    req: &Requirement<VerbatimUrl>,
    installed: &Version,
    markers: &MarkerEnvironment,
) -> RequirementDecision {
    if !req.marker.is_true() && !req.evaluate_markers(markers, &[]) {
        return RequirementDecision::MarkerExcludes;
    }
    match &req.version_or_url {
        Some(VersionOrUrl::Url(_)) => RequirementDecision::DirectUrl,
        Some(VersionOrUrl::VersionSpecifier(spec)) if !spec.contains(installed) => {
            RequirementDecision::NotSatisfied
        }
        _ => RequirementDecision::Satisfied,
    }
}

/// One file of an extracted tree: its sha256, or the kind of a non-file entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TreeEntry {
    File(String),
    Other(&'static str),
}

/// Every non-directory entry under `root`, by `/`-separated relative path.
fn tree_entries(root: &Path) -> Result<BTreeMap<String, TreeEntry>, String> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.map_err(|e| format!("cannot walk {}: {e}", root.display()))?;
        let ft = entry.file_type();
        if ft.is_dir() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .map_err(|e| format!("{}: {e}", entry.path().display()))?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let value = if ft.is_file() {
            let digest = hash::sha256_file(entry.path())
                .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            TreeEntry::File(digest.hex())
        } else if ft.is_symlink() {
            TreeEntry::Other("symlink")
        } else {
            TreeEntry::Other("special file")
        };
        out.insert(rel, value);
    }
    Ok(out)
}

/// Differences between two extractions of the same archive.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TreeDifferences {
    /// Files compared (union of both sides).
    pub files: usize,
    /// Paths only in the first tree.
    pub only_in_first: Vec<String>,
    /// Paths only in the second tree.
    pub only_in_second: Vec<String>,
    /// Paths in both whose sha256 (or entry kind) differs.
    pub differing: Vec<String>,
}

impl TreeDifferences {
    /// True when the trees hold the same files with the same bytes.
    pub fn is_empty(&self) -> bool {
        self.only_in_first.is_empty() && self.only_in_second.is_empty() && self.differing.is_empty()
    }
}

/// Compares every non-directory entry of `first` and `second` by relative
/// path and sha256 (streamed); a symlink or special file on either side is a
/// difference.
///
/// # Errors
/// When a tree cannot be walked or a file read.
pub fn compare_trees(first: &Path, second: &Path) -> Result<TreeDifferences, String> {
    let a = tree_entries(first)?;
    let b = tree_entries(second)?;
    let paths: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut d = TreeDifferences {
        files: paths.len(),
        ..TreeDifferences::default()
    };
    for p in paths {
        match (a.get(p), b.get(p)) {
            (Some(_), None) => d.only_in_first.push(p.clone()),
            (None, Some(_)) => d.only_in_second.push(p.clone()),
            (Some(x), Some(y)) if x != y || matches!(x, TreeEntry::Other(_)) => {
                d.differing.push(p.clone())
            }
            _ => {}
        }
    }
    Ok(d)
}

fn listed(paths: &[String]) -> String {
    let mut text = paths
        .iter()
        .take(LISTED_DIFFERENCES)
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > LISTED_DIFFERENCES {
        text.push_str(&format!(" and {} more", paths.len() - LISTED_DIFFERENCES));
    }
    text
}

fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_else(|_| path.display().to_string())
}

/// Admits one archive through the genuine SDK and checks the result.
///
/// Never fails as a whole: a probe that could not run becomes a failing
/// `artifact-store` check naming the interpreter, status and output tail.
pub fn admit(input: &AdmissionInput) -> AdmissionOutcome {
    let folder = input.folder.as_str();
    let data_root = input.root.join("data");
    let lines_root = input.root.join("requirements");
    let requirements_file = input.extracted.join("requirements.txt");
    let args = vec![
        input.archive.display().to_string(),
        input.archive_sha256.clone(),
        data_root.display().to_string(),
        requirements_file.display().to_string(),
        lines_root.display().to_string(),
    ];
    let report: ProbeReport = match python::run_probe(
        &input.python,
        "admission_probe",
        python::ADMISSION_PROBE,
        &args,
        &input.root,
        input.env.clone(),
        &input.log_stem,
    ) {
        Ok(r) => r,
        Err(e) => {
            return AdmissionOutcome {
                checks: vec![Check::fail(
                    "artifact-store",
                    Some(folder),
                    format!(
                        "not observed: the admission probe did not report for {}: {e}",
                        input.archive.display()
                    ),
                )],
                record: None,
            }
        }
    };

    let mut checks = Vec::new();
    let mut record = AdmissionRecord {
        accepted: report.artifact.is_some(),
        refusal: report.artifact_error.clone(),
        marker: None,
        code_dir: None,
        installed_sdk_version: input.sdk_version.clone(),
        sdk_requirements: Vec::new(),
    };
    let archive_rel = relative(&input.evidence_dir, &input.archive);

    match &report.artifact {
        None => {
            let why = report
                .artifact_error
                .clone()
                .unwrap_or_else(|| "no artifact and no error reported".into());
            checks.push(
                Check::fail(
                    "artifact-store",
                    Some(folder),
                    format!(
                        "{archive_rel}: expected the SDK's PluginArtifactStore.install_package to \
                         accept the exact archive bytes (sha256 {}), found it refused them: {why}; \
                         the LangBot host refuses this archive the same way: fix what the SDK \
                         names in the plugin source and rebuild",
                        input.archive_sha256
                    ),
                )
                .with_observed(json!({ "archive": archive_rel, "sdk_error": why })),
            );
        }
        Some(artifact) => {
            let expected_root = data_root
                .join("artifacts")
                .join("sha256")
                .join(&input.archive_sha256);
            let expected_code = expected_root.join("code");
            record.code_dir = Some(relative(&input.evidence_dir, &expected_code));
            checks.push(
                Check::pass(
                    "artifact-store",
                    Some(folder),
                    format!(
                        "the SDK's PluginArtifactStore.install_package accepted the exact bytes of \
                         {archive_rel} (sha256 {}) as {}/{} {} into {}",
                        input.archive_sha256,
                        artifact.plugin_author,
                        artifact.plugin_name,
                        artifact.plugin_version,
                        relative(&input.evidence_dir, &expected_code)
                    ),
                )
                .with_observed(json!({
                    "archive": archive_rel,
                    "digest": artifact.digest,
                    "code_dir": relative(&input.evidence_dir, &expected_code),
                    "plugin": {
                        "author": artifact.plugin_author,
                        "name": artifact.plugin_name,
                        "version": artifact.plugin_version,
                    },
                })),
            );
            checks.push(marker_check(
                folder,
                input,
                artifact,
                &expected_root,
                &mut record,
            ));
            checks.push(extraction_check(folder, input, artifact, &expected_code));
        }
    }

    let (sdk_check, lines_check) = requirement_checks(folder, input, &report, &mut record);
    checks.push(sdk_check);
    checks.push(lines_check);
    AdmissionOutcome {
        checks,
        record: Some(record),
    }
}

fn marker_check(
    folder: &str,
    input: &AdmissionInput,
    artifact: &ProbeArtifact,
    expected_root: &Path,
    record: &mut AdmissionRecord,
) -> Check {
    let marker_path = expected_root.join(VERIFIED_MARKER);
    let marker_rel = relative(&input.evidence_dir, &marker_path);
    let on_disk = std::fs::read_to_string(&marker_path);
    let observed = json!({
        "marker_file": marker_rel,
        "marker": on_disk.as_ref().ok(),
        "probe_marker": artifact.marker,
        "probe_root": artifact.root_path,
        "expected": input.archive_sha256,
    });
    let on_disk = match on_disk {
        Ok(text) => text,
        Err(e) => {
            return Check::fail(
                "marker",
                Some(folder),
                format!(
                    "{marker_rel}: expected the SDK's verified-digest marker holding {}, found it \
                     unreadable ({e}); the artifact store did not publish where the SDK's layout \
                     puts it: read the probe log",
                    input.archive_sha256
                ),
            )
            .with_observed(observed);
        }
    };
    record.marker = Some(on_disk.clone());
    let root_agrees = Path::new(&artifact.root_path) == expected_root;
    let ok = on_disk == input.archive_sha256
        && artifact.marker == input.archive_sha256
        && artifact.digest == input.archive_sha256
        && root_agrees;
    let detail = if ok {
        format!(
            "{marker_rel} holds the archive's sha256 {}, as the SDK reported",
            input.archive_sha256
        )
    } else {
        format!(
            "{marker_rel}: expected the marker, the SDK's artifact digest and its location to name \
             the archive's sha256 {}, found marker {:?}, SDK-reported marker {:?}, digest {}, root \
             {}; the artifact store did not verify these bytes: treat the archive as unadmitted",
            input.archive_sha256, on_disk, artifact.marker, artifact.digest, artifact.root_path
        )
    };
    Check::from_bool("marker", Some(folder), ok, detail).with_observed(observed)
}

fn extraction_check(
    folder: &str,
    input: &AdmissionInput,
    artifact: &ProbeArtifact,
    expected_code: &Path,
) -> Check {
    let store_rel = relative(&input.evidence_dir, expected_code);
    let ours_rel = relative(&input.evidence_dir, &input.extracted);
    if Path::new(&artifact.code_path) != expected_code {
        return Check::fail(
            "extraction-agrees",
            Some(folder),
            format!(
                "expected the SDK's code directory at {store_rel}, found it reported at {}; \
                 the SDK's artifact layout changed: re-check SDK-FACTS.md",
                artifact.code_path
            ),
        );
    }
    match compare_trees(expected_code, &input.extracted) {
        Err(e) => Check::fail(
            "extraction-agrees",
            Some(folder),
            format!("not observed: {e}"),
        ),
        Ok(d) => {
            let observed = json!({
                "artifact_code_dir": store_rel,
                "extracted": ours_rel,
                "files": d.files,
                "only_in_artifact_store": d.only_in_first,
                "only_in_extracted": d.only_in_second,
                "differing": d.differing,
            });
            if d.is_empty() {
                Check::pass(
                    "extraction-agrees",
                    Some(folder),
                    format!(
                        "the SDK's extraction {store_rel} and {ours_rel} hold the same {} files \
                         with the same sha256",
                        d.files
                    ),
                )
            } else {
                let mut parts = Vec::new();
                if !d.only_in_first.is_empty() {
                    parts.push(format!(
                        "only in the artifact store: {}",
                        listed(&d.only_in_first)
                    ));
                }
                if !d.only_in_second.is_empty() {
                    parts.push(format!("only in {ours_rel}: {}", listed(&d.only_in_second)));
                }
                if !d.differing.is_empty() {
                    parts.push(format!("different bytes: {}", listed(&d.differing)));
                }
                Check::fail(
                    "extraction-agrees",
                    Some(folder),
                    format!(
                        "expected two independent extractions of the same archive bytes, the \
                         SDK's ({store_rel}) and the harness's ({ours_rel}), to hold the same \
                         files with the same sha256; found {}; one extractor is wrong: compare \
                         the two trees and report the extractor at fault",
                        parts.join("; ")
                    ),
                )
            }
            .with_observed(observed)
        }
    }
}

/// The `sdk-requirement` and `requirement-lines` checks.
fn requirement_checks(
    folder: &str,
    input: &AdmissionInput,
    report: &ProbeReport,
    record: &mut AdmissionRecord,
) -> (Check, Check) {
    let req_path = input.extracted.join("requirements.txt");
    let req_rel = relative(&input.evidence_dir, &req_path);
    let not_observed = |why: String| {
        (
            Check::fail(
                "sdk-requirement",
                Some(folder),
                format!("not observed: {why}"),
            ),
            Check::fail(
                "requirement-lines",
                Some(folder),
                format!("not observed: {why}"),
            ),
        )
    };
    let installed = match Version::from_str(&input.sdk_version) {
        Ok(v) => v,
        Err(e) => {
            return not_observed(format!(
                "the installed SDK version {:?} recorded by sdk-record is not a PEP 440 version \
                 ({e})",
                input.sdk_version
            ))
        }
    };
    let markers: MarkerEnvironment = match serde_json::from_value(report.marker_environment.clone())
    {
        Ok(m) => m,
        Err(e) => {
            return not_observed(format!(
                "the interpreter's marker environment could not be read ({e}); see the \
                     admission probe log"
            ))
        }
    };
    let bytes = if req_path.is_file() {
        match std::fs::read(&req_path) {
            Ok(b) => b,
            Err(e) => return not_observed(format!("cannot read {req_rel}: {e}")),
        }
    } else {
        Vec::new()
    };
    let ours = analyse_requirements(&bytes, &installed, &markers);
    let sdk_file = &report.file_requirements;

    // Pair our lines with the SDK's, by number and text.
    let ours_lines = ours.as_ref().map(|l| l.as_slice()).unwrap_or(&[]);
    let split_agrees = ours_lines.len() == report.lines.len()
        && ours_lines
            .iter()
            .zip(&report.lines)
            .all(|(o, s)| o.number == s.number && o.text == s.text);

    // --- sdk-requirement ---
    let mut sdk_failures = Vec::new();
    let mut sdk_passes = Vec::new();
    if report.installed_sdk_version != input.sdk_version {
        sdk_failures.push(format!(
            "the SDK compares against langbot-plugin {} (importlib.metadata in the interpreter), \
             but sdk-record recorded {}: the two decisions are not about the same SDK",
            report.installed_sdk_version, input.sdk_version
        ));
    }
    if split_agrees {
        for (o, s) in ours_lines.iter().zip(&report.lines) {
            let LineKind::Sdk(decision) = o.kind else {
                continue;
            };
            record.sdk_requirements.push(SdkRequirementRecord {
                line: o.number as u64,
                requirement: o.text.clone(),
                decision,
                sdk_decision: s.decision(),
            });
            let ours_accepts = o.kind.accepted();
            let agree =
                s.decided() && ours_accepts == s.accepted && (!s.accepted || s.kept.is_empty());
            let sdk_says = s.says();
            if !agree {
                sdk_failures.push(format!(
                    "{req_rel} line {} `{}`: the harness decides {} against langbot-plugin {} \
                     (PEP 440, pre-releases allowed), but the SDK {sdk_says}; a disagreement \
                     between the two evaluations is itself a failure: report both with the \
                     requirement and the SDK version",
                    o.number,
                    o.text,
                    decision_word(decision),
                    input.sdk_version
                ));
                continue;
            }
            match decision {
                RequirementDecision::Satisfied => sdk_passes.push(format!(
                    "line {} `{}` is satisfied by the installed langbot-plugin {} (PEP 440, \
                     pre-releases allowed) and the SDK agrees: it {sdk_says}",
                    o.number, o.text, input.sdk_version
                )),
                RequirementDecision::MarkerExcludes => sdk_passes.push(format!(
                    "line {} `{}` does not apply here (its environment marker is false) and the \
                     SDK agrees: it {sdk_says}",
                    o.number, o.text
                )),
                RequirementDecision::NotSatisfied => sdk_failures.push(format!(
                    "{folder}: {req_rel} line {} `{}` is not satisfied by the installed \
                     langbot-plugin {} (PEP 440, pre-releases allowed), and the SDK refuses it \
                     too, before any install ({sdk_says}); the host will not admit this archive. \
                     A pin-only change would hide the admission failure: port and re-test the \
                     candidate against langbot-plugin {}, then pin that version",
                    o.number, o.text, input.sdk_version, input.sdk_version
                )),
                RequirementDecision::DirectUrl => sdk_failures.push(format!(
                    "{folder}: {req_rel} line {} `{}` names the runtime-provided SDK by direct \
                     URL, which the SDK refuses ({sdk_says}): pin a version instead",
                    o.number, o.text
                )),
            }
        }
        if record.sdk_requirements.is_empty() && ours.is_ok() {
            sdk_failures.push(format!(
                "{req_rel}: expected a `langbot-plugin` requirement pinning the SDK the candidate \
                 was built and tested against, found none; the host would run it against whatever \
                 SDK it provides: add `langbot-plugin==<version>` (the profile's requirement)"
            ));
        }
    }
    if let Err(e) = &ours {
        sdk_failures.push(format!(
            "{req_rel}: {e}; the SDK refuses it too ({}): save it as UTF-8",
            sdk_file
                .error
                .clone()
                .unwrap_or_else(|| "it accepted it".into())
        ));
    } else if !split_agrees {
        sdk_failures.push(format!(
            "{req_rel}: the harness and the SDK split the file into different requirement lines \
             (ours {:?}, the SDK's {:?}); no decision can be compared: report this",
            ours_lines
                .iter()
                .map(|l| (l.number, l.text.as_str()))
                .collect::<Vec<_>>(),
            report
                .lines
                .iter()
                .map(|l| (l.number, l.text.as_str()))
                .collect::<Vec<_>>()
        ));
    }
    let sdk_observed = json!({
        "requirements_file": req_rel,
        "installed_sdk_version": input.sdk_version,
        "sdk_reported_version": report.installed_sdk_version,
        "lines": record.sdk_requirements.iter().map(|r| json!({
            "line": r.line,
            "requirement": r.requirement,
            "decision": r.decision,
            "sdk_decision": r.sdk_decision,
        })).collect::<Vec<_>>(),
    });
    let sdk_check = if sdk_failures.is_empty() {
        Check::pass(
            "sdk-requirement",
            Some(folder),
            format!("{req_rel}: {}", sdk_passes.join("; ")),
        )
    } else {
        Check::fail("sdk-requirement", Some(folder), sdk_failures.join("; "))
    }
    .with_observed(sdk_observed);

    // --- requirement-lines ---
    let mut line_failures = Vec::new();
    let mut refused_by_line = false;
    if split_agrees {
        for (o, s) in ours_lines.iter().zip(&report.lines) {
            refused_by_line |= !s.accepted;
            if matches!(o.kind, LineKind::Sdk(_)) {
                continue; // judged by sdk-requirement
            }
            let sdk_says = s.says();
            let agree = s.decided()
                && o.kind.accepted() == s.accepted
                && (!s.accepted || o.kind.kept() != s.kept.is_empty());
            match (&o.kind, agree) {
                (_, false) => line_failures.push(format!(
                    "line {} `{}`: the harness reads it as {}, but the SDK {sdk_says} (kept {:?}); \
                     a disagreement between the two readings is itself a failure: report it",
                    o.number,
                    o.text,
                    kind_word(&o.kind),
                    s.kept
                )),
                (LineKind::PipOption, true) => line_failures.push(format!(
                    "line {} `{}` is a pip option, which the SDK refuses in an archive's \
                     requirements.txt ({sdk_says}): remove it (package indexes and install \
                     options are host configuration, not plugin content)",
                    o.number, o.text
                )),
                (LineKind::Invalid(why), true) => line_failures.push(format!(
                    "line {} `{}` is not a PEP 508 requirement ({why}), and the SDK refuses it \
                     ({sdk_says}): correct it",
                    o.number, o.text
                )),
                _ => {}
            }
        }
    } else {
        line_failures.push(
            "the harness and the SDK read different requirement lines (see sdk-requirement)"
                .to_string(),
        );
    }
    if ours.is_err() {
        line_failures.push("the file is not UTF-8 (see sdk-requirement)".to_string());
    }
    if !sdk_file.accepted && !sdk_file.refusal {
        line_failures.push(format!(
            "the SDK's check of the whole file did not decide: it raised {}, which is not the \
             SDK's refusal (DependencyEnvironmentPreparationError); the host would fail the \
             installation on it: report it with the line that triggers it",
            sdk_file.error.clone().unwrap_or_default()
        ));
    }
    // File-level limits (size, count, encoding) only show on the whole file.
    if !sdk_file.accepted && sdk_file.refusal && !refused_by_line && ours.is_ok() {
        line_failures.push(format!(
            "the SDK refuses the file as a whole although it accepts every line: {}",
            sdk_file.error.clone().unwrap_or_default()
        ));
    }
    if sdk_file.accepted && refused_by_line {
        line_failures.push(format!(
            "the SDK refuses a line alone but accepts the whole file (kept {:?}): report this",
            sdk_file.kept
        ));
    }
    if let Some(from_artifact) = &report.artifact_requirements {
        if from_artifact != sdk_file {
            line_failures.push(format!(
                "the SDK's verdict on the artifact store's requirements.txt ({:?}) differs from \
                 its verdict on {req_rel} ({:?}): the two extractions disagree",
                from_artifact, sdk_file
            ));
        }
    }
    let lines_observed = json!({
        "requirements_file": req_rel,
        "present": req_path.is_file(),
        "lines": report.lines.iter().map(|s| json!({
            "line": s.number,
            "text": s.text,
            "sdk_decision": s.decision(),
        })).collect::<Vec<_>>(),
        "sdk_file_decision": sdk_file.error.clone().map(|e| format!("refused: {e}")).unwrap_or_else(|| "accepted".into()),
        "left_for_installer": sdk_file.kept,
        "requirements_sha256": sdk_file.digest,
    });
    let lines_check = if line_failures.is_empty() {
        let count = ours_lines.len();
        Check::pass(
            "requirement-lines",
            Some(folder),
            if req_path.is_file() {
                format!(
                    "{req_rel}: {count} requirement line(s), each read the same way by the harness \
                     and the SDK, none a pip option or an invalid requirement (the \
                     langbot-plugin pin is judged by sdk-requirement); left for the installer: \
                     {:?}",
                    sdk_file.kept
                )
            } else {
                format!("{req_rel} is absent: no requirement to refuse (the SDK reads it as empty)")
            },
        )
    } else {
        Check::fail(
            "requirement-lines",
            Some(folder),
            format!("{req_rel}: {}", line_failures.join("; ")),
        )
    }
    .with_observed(lines_observed);
    (sdk_check, lines_check)
}

fn decision_word(d: RequirementDecision) -> &'static str {
    match d {
        RequirementDecision::Satisfied => "satisfied",
        RequirementDecision::NotSatisfied => "not satisfied",
        RequirementDecision::MarkerExcludes => "not applicable (marker false)",
        RequirementDecision::DirectUrl => "a refused direct URL",
    }
}

fn kind_word(k: &LineKind) -> String {
    match k {
        LineKind::PipOption => "a pip option (refused)".into(),
        LineKind::Invalid(why) => format!("an invalid requirement ({why})"),
        LineKind::Sdk(d) => format!("the SDK requirement, {}", decision_word(*d)),
        LineKind::Other => "a requirement for the installer".into(),
    }
}

impl super::Gate for Admission {
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let sdk_version = ctx.sdk.version.clone().ok_or_else(|| {
            "admission needs the installed SDK version recorded by sdk-record, and none is \
             recorded; run sdk-record first"
                .to_string()
        })?;
        let mut checks = Vec::new();
        let mut inputs = Vec::new();
        for record in &ctx.candidates {
            let folder = record.folder.as_str();
            let Some(archive) = &record.archive else {
                checks.push(Check::fail(
                    "artifact-store",
                    Some(folder),
                    "not observed: expected an archive recorded by archive-members, found none; \
                     run lbp-build and archive-members first",
                ));
                continue;
            };
            let Some(extracted) = &archive.extracted else {
                checks.push(Check::fail(
                    "artifact-store",
                    Some(folder),
                    format!(
                        "not observed: expected archive-members to record the exact extraction of \
                         {}, found none; run archive-members first",
                        archive.path
                    ),
                ));
                continue;
            };
            let (home, tmp) = ctx
                .private_roots(GATE, folder)
                .map_err(|e| format!("admission: cannot create private roots for {folder}: {e}"))?;
            let root = home
                .parent()
                .map(Path::to_path_buf)
                .ok_or_else(|| format!("admission: private root of {folder} has no parent"))?;
            inputs.push(AdmissionInput {
                python: ctx.python.clone(),
                evidence_dir: ctx.evidence_dir.clone(),
                folder: folder.to_string(),
                archive: ctx.evidence_dir.join(&archive.path),
                archive_sha256: archive.sha256.clone(),
                extracted: ctx.evidence_dir.join(extracted),
                sdk_version: sdk_version.clone(),
                root,
                env: ctx.child_env(&home, &tmp),
                log_stem: ctx.log_stem(GATE, folder),
            });
        }
        let outcomes: Vec<AdmissionOutcome> = std::thread::scope(|s| {
            let handles: Vec<_> = inputs.iter().map(|i| s.spawn(move || admit(i))).collect();
            handles
                .into_iter()
                .zip(&inputs)
                .map(|(h, i)| {
                    h.join().unwrap_or_else(|_| AdmissionOutcome {
                        checks: vec![Check::fail(
                            "artifact-store",
                            Some(&i.folder),
                            "not observed: the admission thread panicked; this is a harness \
                             defect: report it",
                        )],
                        record: None,
                    })
                })
                .collect()
        });
        for (input, outcome) in inputs.iter().zip(outcomes) {
            checks.extend(outcome.checks);
            if let Some(r) = outcome.record {
                let folder = input.folder.clone();
                out.set(move |ctx| {
                    if let Some(c) = ctx.record_mut(&folder) {
                        c.admission = Some(r);
                    }
                });
            }
        }
        Ok(checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn markers() -> MarkerEnvironment {
        serde_json::from_value(json!({
            "implementation_name": "cpython",
            "implementation_version": "3.11.7",
            "os_name": "posix",
            "platform_machine": "x86_64",
            "platform_release": "6.0",
            "platform_system": "Linux",
            "platform_version": "#1",
            "python_full_version": "3.11.7",
            "platform_python_implementation": "CPython",
            "python_version": "3.11",
            "sys_platform": "linux"
        }))
        .unwrap()
    }

    fn kinds(text: &str, installed: &str) -> Vec<(usize, LineKind)> {
        analyse_requirements(
            text.as_bytes(),
            &Version::from_str(installed).unwrap(),
            &markers(),
        )
        .unwrap()
        .into_iter()
        .map(|l| (l.number, l.kind))
        .collect()
    }

    #[test]
    fn exact_pin_of_the_installed_prerelease_is_satisfied() {
        assert_eq!(
            kinds("langbot-plugin==0.6.0b5\n", "0.6.0b5"),
            [(1, LineKind::Sdk(RequirementDecision::Satisfied))]
        );
    }

    #[test]
    fn b3_pin_under_b5_is_not_satisfied() {
        assert_eq!(
            kinds("# pinned\n\nlangbot-plugin==0.6.0b3\n", "0.6.0b5"),
            [(3, LineKind::Sdk(RequirementDecision::NotSatisfied))]
        );
    }

    #[test]
    fn ranges_admit_prereleases_as_the_sdk_does() {
        // `>=0.6.0b1,<0.7` would exclude 0.6.0b5 under default pre-release
        // rules; the SDK passes prereleases=True, and so must we.
        assert_eq!(
            kinds("LangBot_Plugin >=0.6.0b1, <0.7", "0.6.0b5"),
            [(1, LineKind::Sdk(RequirementDecision::Satisfied))]
        );
        assert_eq!(
            kinds("langbot.plugin>=0.6.0", "0.6.0b5"),
            [(1, LineKind::Sdk(RequirementDecision::NotSatisfied))]
        );
    }

    #[test]
    fn markers_urls_options_and_others_are_classified() {
        let got = kinds(
            "langbot-plugin==0.5.0; python_version < '3.0'\n\
             langbot-plugin @ https://example.invalid/sdk.whl\n\
             --index-url https://example.invalid/simple\n\
             -e .\n\
             requests>=2\n\
             not a requirement !!\n",
            "0.6.0b5",
        );
        assert_eq!(
            got[0],
            (1, LineKind::Sdk(RequirementDecision::MarkerExcludes))
        );
        assert_eq!(got[1], (2, LineKind::Sdk(RequirementDecision::DirectUrl)));
        assert_eq!(got[2], (3, LineKind::PipOption));
        assert_eq!(got[3], (4, LineKind::PipOption));
        assert_eq!(got[4], (5, LineKind::Other));
        assert!(matches!(got[5], (6, LineKind::Invalid(_))));
    }

    #[test]
    fn lines_are_split_and_stripped_as_python_does() {
        assert_eq!(
            python_splitlines("a\r\nb\rc\x0bd\u{2028}e\n"),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(python_splitlines("a\n\nb"), ["a", "", "b"]);
        assert_eq!(python_strip("\x1c pkg \t"), "pkg");
        let got = kinds("\u{feff}x\r\n  \r\n\x1frequests\x1f\n", "1.0");
        // U+FEFF is not whitespace to Python either: line 1 is invalid.
        assert!(matches!(got[0], (1, LineKind::Invalid(_))));
        assert_eq!(got[1], (3, LineKind::Other));
    }

    #[test]
    fn non_utf8_requirements_are_refused() {
        let err = analyse_requirements(
            b"langbot-plugin==0.6.0b5\n\xff\n",
            &Version::from_str("0.6.0b5").unwrap(),
            &markers(),
        )
        .unwrap_err();
        assert!(err.contains("not UTF-8"), "{err}");
    }

    #[test]
    fn trees_are_compared_by_path_and_sha256() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for d in [a.path(), b.path()] {
            std::fs::create_dir_all(d.join("pkg")).unwrap();
            std::fs::write(d.join("pkg/same.py"), b"same").unwrap();
        }
        std::fs::write(a.path().join("pkg/changed.py"), b"one").unwrap();
        std::fs::write(b.path().join("pkg/changed.py"), b"two").unwrap();
        std::fs::write(a.path().join("only-a.txt"), b"").unwrap();
        std::fs::write(b.path().join("only-b.txt"), b"").unwrap();
        let d = compare_trees(a.path(), b.path()).unwrap();
        assert_eq!(d.files, 4);
        assert_eq!(d.only_in_first, ["only-a.txt"]);
        assert_eq!(d.only_in_second, ["only-b.txt"]);
        assert_eq!(d.differing, ["pkg/changed.py"]);
        std::fs::remove_file(a.path().join("only-a.txt")).unwrap();
        std::fs::remove_file(b.path().join("only-b.txt")).unwrap();
        std::fs::write(b.path().join("pkg/changed.py"), b"one").unwrap();
        assert!(compare_trees(a.path(), b.path()).unwrap().is_empty());
    }
}
