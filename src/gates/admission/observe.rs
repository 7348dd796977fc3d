//! What the `admission` gate observes: the SDK's admission probe's report,
//! the artifact store's marker and extraction on disk, and the harness's own
//! reading of the archive's `requirements.txt` (Python's line splitting and
//! stripping, PEP 508/440 in Rust), for every candidate of the run in
//! parallel threads ([`observe_all`]). Nothing here decides a check.

use super::{decide, record, GATE, SDK_DISTRIBUTION};
use crate::context::RunContext;
use crate::evidence::{AdmissionRecord, Check, RequirementDecision};
use crate::hash;
use crate::python;
use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, Requirement, VerbatimUrl, VersionOrUrl};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What the gate observed for one candidate: plain data, no decision.
#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    /// Candidate folder.
    pub folder: String,
    /// The archive, relative to DIR.
    pub archive: String,
    /// The archive as the probe was given it (absolute).
    pub archive_path: String,
    /// Its sha256 as `archive-members` recorded it.
    pub archive_sha256: String,
    /// The harness's extraction, relative to DIR.
    pub extracted: String,
    /// The installed SDK version `sdk-record` recorded.
    pub sdk_version: String,
    /// Why the probe did not report, when it did not.
    pub probe_error: Option<String>,
    /// The probe's report (the SDK's own decisions).
    pub(crate) report: Option<ProbeReport>,
    /// The artifact store on disk, when the SDK accepted the bytes.
    pub store: Option<StoreObservation>,
    /// The harness's reading of `requirements.txt`.
    pub requirements: RequirementsObservation,
}

/// The artifact store's layout on disk after `install_package`.
#[derive(Debug, Clone, Serialize)]
pub struct StoreObservation {
    /// Where the SDK's layout puts the artifact (`data/artifacts/sha256/<sha256>`).
    pub expected_root: String,
    /// Its code directory (`.../code`).
    pub expected_code: String,
    /// The code directory relative to DIR.
    pub code_dir: String,
    /// The `.verified-sha256` marker, relative to DIR.
    pub marker_file: String,
    /// The marker's contents, when readable.
    pub marker: Option<String>,
    /// Why the marker could not be read.
    pub marker_error: Option<String>,
    /// The two extractions compared, when the SDK's code directory is where
    /// expected.
    pub tree: Option<TreeDifferences>,
    /// Why the extractions could not be compared.
    pub tree_error: Option<String>,
}

/// `DIR/extracted/<folder>/requirements.txt` as the harness read it.
#[derive(Debug, Clone, Serialize)]
pub struct RequirementsObservation {
    /// The file, relative to DIR.
    pub file: String,
    /// Whether it exists (absent reads as empty, as the SDK reads it).
    pub present: bool,
    /// Why the harness could not read or judge it at all.
    pub unreadable: Option<String>,
    /// The file is not UTF-8 (the reader's message).
    pub not_utf8: Option<String>,
    /// Every requirement line and the harness's decision on it.
    pub lines: Vec<RequirementLine>,
}

/// One candidate as the gate found it.
#[derive(Debug, Clone, Serialize)]
pub enum Candidate {
    /// `archive-members` recorded no archive for it.
    NoArchive { folder: String },
    /// `archive-members` recorded its archive (`archive`, relative to DIR)
    /// but not the archive's extraction.
    NoExtraction { folder: String, archive: String },
    /// The thread admitting it panicked (a harness defect).
    Panicked { folder: String },
    /// Offered to the SDK's artifact store: what was observed.
    Observed(Box<Observation>),
}

/// The SDK's marker file next to an artifact's code directory.
const VERIFIED_MARKER: &str = ".verified-sha256";

/// `DIR/roots/admission/<this>`: the probe process's working directory and
/// private HOME/TMPDIR (each candidate's artifact store is under its own
/// `DIR/roots/admission/<folder>`).
const PROBE_ROOT: &str = ".probe";

/// The probe's report (`admission_probe.py`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProbeReport {
    pub(crate) installed_sdk_version: String,
    pub(crate) marker_environment: serde_json::Value,
    pub(crate) artifact: Option<ProbeArtifact>,
    pub(crate) artifact_error: Option<String>,
    pub(crate) artifact_requirements: Option<SdkVerdict>,
    pub(crate) file_requirements: SdkVerdict,
    pub(crate) lines: Vec<SdkLine>,
}

/// What `PluginArtifactStore.install_package` returned.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProbeArtifact {
    pub(crate) digest: String,
    pub(crate) root_path: String,
    pub(crate) code_path: String,
    pub(crate) marker: String,
    pub(crate) plugin_author: String,
    pub(crate) plugin_name: String,
    pub(crate) plugin_version: String,
}

/// The SDK's requirement check on one `requirements.txt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SdkVerdict {
    pub(crate) accepted: bool,
    /// The error is the SDK's own refusal (`DependencyEnvironmentPreparationError`),
    /// not its check crashing.
    pub(crate) refusal: bool,
    pub(crate) kept: Vec<String>,
    pub(crate) digest: Option<String>,
    pub(crate) error: Option<String>,
}

/// The SDK's requirement check on one line alone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SdkLine {
    pub(crate) number: usize,
    pub(crate) text: String,
    pub(crate) accepted: bool,
    /// As [`SdkVerdict::refusal`].
    pub(crate) refusal: bool,
    pub(crate) kept: Vec<String>,
    pub(crate) error: Option<String>,
}

impl SdkLine {
    /// The SDK's decision as recorded in the evidence.
    pub(crate) fn decision(&self) -> String {
        match &self.error {
            None => "accepted".into(),
            Some(e) if self.refusal => format!("refused: {e}"),
            Some(e) => format!("undecided: its check raised {e}"),
        }
    }

    /// What the SDK did, as a verb phrase (`refused it: ...`).
    pub(crate) fn says(&self) -> String {
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
    pub(crate) fn decided(&self) -> bool {
        self.accepted || self.refusal
    }
}

/// One requirement line as the harness reads it: the SDK's splitting
/// (`str.splitlines`, `str.strip`, blank and `#` lines skipped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequirementLine {
    /// 1-based line number.
    pub number: usize,
    /// The stripped line.
    pub text: String,
    /// What the line is and the harness's decision on it.
    pub kind: LineKind,
}

/// The harness's reading of one requirement line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "why")]
pub enum LineKind {
    /// Starts with `-`: a pip option, which the SDK refuses in an archive.
    PipOption,
    /// Not a PEP 508 requirement (the parser's message).
    Invalid(String),
    /// A `langbot-plugin` requirement, with the decision against the SDK.
    Sdk(RequirementDecision),
    /// Any other requirement: left for the installer.
    Other,
    /// Another distribution's requirement by direct URL (`name @ url`),
    /// with the URL: the SDK keeps it for the installer; the harness refuses
    /// it (see [`URL_REFUSAL`]).
    DirectUrl(String),
}

/// Why the harness refuses a requirement by URL, and what to do.
pub const URL_REFUSAL: &str = "a requirement by URL bypasses the package index and its hashes      (the host's installer would fetch and, for a VCS or source URL, build whatever the URL      serves at install time), and admission and dependency preparation run without network      from the run's wheelhouse, so it cannot be installed or reviewed there: publish the      package to an index and require it by version (`name==X.Y`), or vendor its code into the      candidate, and commit";

impl LineKind {
    /// Whether the SDK should accept the line.
    pub fn accepted(&self) -> bool {
        match self {
            LineKind::PipOption | LineKind::Invalid(_) => false,
            LineKind::Sdk(d) => matches!(
                d,
                RequirementDecision::Satisfied | RequirementDecision::MarkerExcludes
            ),
            LineKind::Other | LineKind::DirectUrl(_) => true,
        }
    }

    /// Whether an accepted line stays in the install list.
    pub fn kept(&self) -> bool {
        matches!(self, LineKind::Other | LineKind::DirectUrl(_))
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
pub(crate) fn python_strip(s: &str) -> &str {
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
                Ok(Requirement {
                    version_or_url: Some(VersionOrUrl::Url(url)),
                    ..
                }) => LineKind::DirectUrl(url.to_string()),
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
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
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

/// `path` relative to `dir`, `/`-separated; the whole path when outside it.
pub(crate) fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_else(|_| path.display().to_string())
}

/// One job of the admission probe, as `admission_probe.py` reads it.
#[derive(Debug, Serialize)]
struct ProbeJob {
    archive: String,
    sha256: String,
    data_root: String,
    requirements: String,
    lines_root: String,
}

/// The observation of `input` before the probe's answer is read in.
fn unobserved(input: &AdmissionInput) -> Observation {
    let requirements_file = input.extracted.join("requirements.txt");
    Observation {
        folder: input.folder.clone(),
        archive: relative(&input.evidence_dir, &input.archive),
        archive_path: input.archive.display().to_string(),
        archive_sha256: input.archive_sha256.clone(),
        extracted: relative(&input.evidence_dir, &input.extracted),
        sdk_version: input.sdk_version.clone(),
        probe_error: None,
        report: None,
        store: None,
        requirements: RequirementsObservation {
            file: relative(&input.evidence_dir, &requirements_file),
            present: requirements_file.is_file(),
            unreadable: None,
            not_utf8: None,
            lines: Vec::new(),
        },
    }
}

/// Reads what the SDK left on disk for `input`, given the probe's answer.
fn observed(input: &AdmissionInput, outcome: Result<ProbeReport, String>) -> Observation {
    let mut obs = unobserved(input);
    let report = match outcome {
        Ok(r) => r,
        Err(e) => {
            obs.probe_error = Some(e);
            return obs;
        }
    };
    if let Some(artifact) = &report.artifact {
        obs.store = Some(observe_store(input, &input.root.join("data"), artifact));
    }
    let requirements_file = input.extracted.join("requirements.txt");
    observe_requirements(input, &report, &requirements_file, &mut obs.requirements);
    obs.report = Some(report);
    obs
}

/// How the one probe process of a batch runs: interpreter, working
/// directory, environment and log stem.
#[derive(Debug, Clone)]
pub struct ProbeProcess {
    /// The genuine interpreter.
    pub python: PathBuf,
    /// Its working directory (created by the caller).
    pub cwd: PathBuf,
    /// Its whole environment (allowlisted, private HOME/TMPDIR).
    pub env: BTreeMap<String, String>,
    /// Log stem (`DIR/logs/admission/probe`).
    pub log_stem: PathBuf,
}

/// Runs the admission probe once for every input (the SDK imported once)
/// and reads what each admission left on disk, in `inputs` order (`None`
/// where reading one candidate's results panicked). Never fails: a probe
/// that did not report is recorded in each `probe_error`; a job the probe
/// could not observe, in that job's.
pub(crate) fn observe_batch(
    process: &ProbeProcess,
    inputs: &[AdmissionInput],
    width: usize,
) -> Vec<Option<Observation>> {
    if inputs.is_empty() {
        return Vec::new();
    }
    let jobs: Vec<ProbeJob> = inputs
        .iter()
        .map(|input| ProbeJob {
            archive: input.archive.display().to_string(),
            sha256: input.archive_sha256.clone(),
            data_root: input.root.join("data").display().to_string(),
            requirements: input
                .extracted
                .join("requirements.txt")
                .display()
                .to_string(),
            lines_root: input.root.join("requirements").display().to_string(),
        })
        .collect();
    let probe = python::batch::BatchProbe {
        wrapper: &[],
        python: &process.python,
        name: "admission_probe",
        source: python::ADMISSION_PROBE,
        cwd: &process.cwd,
        log_stem: &process.log_stem,
    };
    let outcomes: Vec<Result<ProbeReport, String>> =
        python::batch::run_batch(&probe, &jobs, process.env.clone(), python::PROBE_TIMEOUT);
    let pairs: Vec<(&AdmissionInput, Result<ProbeReport, String>)> =
        inputs.iter().zip(outcomes).collect();
    // Reading the stores and comparing the extractions hashes files: in
    // parallel, one candidate per thread.
    crate::parallel::map(
        &pairs,
        width,
        |(input, outcome)| Some(observed(input, outcome.clone())),
        |_| None,
    )
}

/// Runs the admission probe on one archive (a batch of one, in the input's
/// own root, environment and log stem) and reads what it left on disk.
/// Never fails: a probe that did not report is recorded in `probe_error`.
pub(crate) fn observe(input: &AdmissionInput) -> Observation {
    let process = ProbeProcess {
        python: input.python.clone(),
        cwd: input.root.clone(),
        env: input.env.clone(),
        log_stem: input.log_stem.clone(),
    };
    observe_batch(&process, std::slice::from_ref(input), 1)
        .pop()
        .flatten()
        .unwrap_or_else(|| {
            let mut obs = unobserved(input);
            obs.probe_error = Some("reading this admission's results panicked".into());
            obs
        })
}

fn observe_store(
    input: &AdmissionInput,
    data_root: &Path,
    artifact: &ProbeArtifact,
) -> StoreObservation {
    let expected_root = data_root
        .join("artifacts")
        .join("sha256")
        .join(&input.archive_sha256);
    let expected_code = expected_root.join("code");
    let marker_path = expected_root.join(VERIFIED_MARKER);
    let (marker, marker_error) = match std::fs::read_to_string(&marker_path) {
        Ok(t) => (Some(t), None),
        Err(e) => (None, Some(e.to_string())),
    };
    // Two extractions are compared only where the SDK says its code is.
    let (tree, tree_error) = if Path::new(&artifact.code_path) == expected_code {
        match compare_trees(&expected_code, &input.extracted) {
            Ok(d) => (Some(d), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    StoreObservation {
        expected_root: expected_root.display().to_string(),
        expected_code: expected_code.display().to_string(),
        code_dir: relative(&input.evidence_dir, &expected_code),
        marker_file: relative(&input.evidence_dir, &marker_path),
        marker,
        marker_error,
        tree,
        tree_error,
    }
}

fn observe_requirements(
    input: &AdmissionInput,
    report: &ProbeReport,
    path: &Path,
    out: &mut RequirementsObservation,
) {
    let installed = match Version::from_str(&input.sdk_version) {
        Ok(v) => v,
        Err(e) => {
            out.unreadable = Some(format!(
                "the installed SDK version {:?} recorded by sdk-record is not a PEP 440 version \
                 ({e})",
                input.sdk_version
            ));
            return;
        }
    };
    let markers: MarkerEnvironment = match serde_json::from_value(report.marker_environment.clone())
    {
        Ok(m) => m,
        Err(e) => {
            out.unreadable = Some(format!(
                "the interpreter's marker environment could not be read ({e}); see the \
                 admission probe log"
            ));
            return;
        }
    };
    let bytes = if out.present {
        match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                out.unreadable = Some(format!("cannot read {}: {e}", out.file));
                return;
            }
        }
    } else {
        Vec::new()
    };
    match analyse_requirements(&bytes, &installed, &markers) {
        Ok(lines) => out.lines = lines,
        Err(e) => out.not_utf8 = Some(e),
    }
}

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
    /// Log stem for the probe when admitted alone ([`admit`]; `DIR/logs/admission/<folder>`); the
    /// gate admits every candidate in one process logged as `DIR/logs/admission/probe`.
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

/// Admits one archive through the genuine SDK and checks the result:
/// [`observe`], then [`decide`].
///
/// Never fails as a whole: a probe that could not run becomes a failing
/// `artifact-store` check naming the interpreter, status and output tail.
pub fn admit(input: &AdmissionInput, policy: super::AdmissionOptions) -> AdmissionOutcome {
    let obs = observe(input);
    AdmissionOutcome {
        checks: decide(&obs, policy),
        record: record(&obs),
    }
}

/// Admits every input through one probe process (`process`) and checks
/// each result: [`observe_batch`], then [`decide`], in `inputs` order. One
/// archive the probe cannot observe fails that candidate's `artifact-store`
/// only; the others are admitted as they would be alone.
pub fn admit_batch(
    process: &ProbeProcess,
    inputs: &[AdmissionInput],
    policy: super::AdmissionOptions,
) -> Vec<AdmissionOutcome> {
    observe_batch(process, inputs, 1)
        .into_iter()
        .zip(inputs)
        .map(|(obs, input)| {
            let obs = obs.unwrap_or_else(|| {
                let mut obs = unobserved(input);
                obs.probe_error = Some("reading this admission's results panicked".into());
                obs
            });
            AdmissionOutcome {
                checks: decide(&obs, policy),
                record: record(&obs),
            }
        })
        .collect()
}

/// Every candidate of the run, admitted by one probe process: what
/// `archive-members` recorded for it, and what the SDK's artifact store and
/// dependency reading did with its archive.
///
/// # Errors
/// When `sdk-record` recorded no installed SDK version, or a candidate's
/// private roots cannot be created.
pub fn observe_all(ctx: &RunContext) -> Result<Vec<Candidate>, String> {
    let sdk_version = ctx.sdk.version.clone().ok_or_else(|| {
        "admission needs the installed SDK version recorded by sdk-record, and none is \
         recorded; run sdk-record first"
            .to_string()
    })?;
    let mut found: Vec<Option<Candidate>> = Vec::new();
    let mut inputs = Vec::new();
    for record in &ctx.candidates {
        let folder = record.folder.as_str();
        let Some(archive) = &record.archive else {
            found.push(Some(Candidate::NoArchive {
                folder: folder.to_string(),
            }));
            continue;
        };
        let Some(extracted) = &archive.extracted else {
            found.push(Some(Candidate::NoExtraction {
                folder: folder.to_string(),
                archive: archive.path.clone(),
            }));
            continue;
        };
        let (home, tmp) = ctx
            .private_roots(GATE, folder)
            .map_err(|e| format!("admission: cannot create private roots for {folder}: {e}"))?;
        let root = home
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("admission: private root of {folder} has no parent"))?;
        found.push(None);
        inputs.push(AdmissionInput {
            python: ctx.python_for(folder).to_path_buf(),
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
    // One probe process for every candidate: the SDK is imported once
    // (about 0.4 s of CPU per interpreter start). Each candidate keeps its
    // own artifact store and requirement files under its own root.
    let (home, tmp) = ctx
        .private_roots(GATE, PROBE_ROOT)
        .map_err(|e| format!("admission: cannot create the probe's private roots: {e}"))?;
    let process = ProbeProcess {
        python: ctx.python.clone(),
        cwd: home
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| "admission: the probe's private root has no parent".to_string())?,
        env: ctx.child_env(&home, &tmp),
        log_stem: ctx.log_stem(GATE, "probe"),
    };
    let observed: Vec<Candidate> = observe_batch(&process, &inputs, ctx.width())
        .into_iter()
        .zip(&inputs)
        .map(|(obs, input)| match obs {
            Some(obs) => Candidate::Observed(Box::new(obs)),
            None => Candidate::Panicked {
                folder: input.folder.clone(),
            },
        })
        .collect();
    let mut observed = observed.into_iter();
    Ok(found
        .into_iter()
        .map(|c| c.unwrap_or_else(|| observed.next().expect("one observation per input")))
        .collect())
}
