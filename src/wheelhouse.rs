//! The run's wheelhouse: the package index is reached once, by the
//! `dependencies` gate, and never again.
//!
//! The gate downloads what each candidate's requirements resolve to (the full
//! dependency closure, with the SDK's own `langbot-plugin` pin already
//! dropped by the SDK) into `DIR/wheelhouse/` with the verified interpreter's
//! pip ([`pip`]: isolated from every configuration, in the sandbox; a
//! resolution with `--report`, then `pip wheel` of exactly the resolved URLs
//! pinned to their published hashes), so the folder holds only wheels, which
//! install without a build backend and without the network; each file is
//! recorded with its URL and published hash, or as built here from an sdist
//! the profile allows ([`provenance`]). [`write_index`] then writes a
//! PEP 503 simple index over those files at `DIR/wheelhouse/simple/` (one
//! `<normalized-name>/index.html` per project, every link with a `#sha256=`
//! fragment pip verifies), and every later install reads that index through
//! a `file://` URL ([`index_url`]) and nothing else.
//!
//! How pip is pointed at it, as the SDK (`langbot-plugin==0.6.0b5`) does it:
//! the SDK's installer (`runtime/plugin/worker_launcher.py`,
//! `build_dependency_prepare_direct_args`, line 408) passes
//! `*pkgmgr_helper.get_pip_index_args()`, which reads
//! `LANGBOT_PLUGIN_PYPI_INDEX_URL` from the calling process's own environment
//! (`runtime/helper/pkgmgr.py` lines 18 and 112-124; default
//! `https://pypi.org/simple`, line 20) and yields `-i <url>`. The pip child
//! itself gets an environment cleared but for an allowlist
//! (`_direct_dependency_installer_environment`, worker_launcher.py lines
//! 697-718, allowlist at line 64), so `PIP_INDEX_URL`, `PIP_NO_INDEX` or
//! `PIP_FIND_LINKS` set by the harness never reach it:
//! `LANGBOT_PLUGIN_PYPI_INDEX_URL` in the environment of the process that
//! prepares (the `dependencies` probe, the runtime of `discovery-rpc`) is the
//! one lever, and [`point_at_wheelhouse`] sets it. The gate's preparations
//! also run in a private network namespace when the machine allows one, so
//! an install that needed anything beyond the wheelhouse fails there too.
//!
//! Files: `DIR/wheelhouse/*.whl`, `DIR/wheelhouse/simple/**/index.html`,
//! `DIR/logs/dependencies/wheelhouse/resolve-N.*` (the resolution's output),
//! `DIR/logs/dependencies/wheelhouse/download-N.*` (the download's, with any
//! sdist's build output),
//! `DIR/roots/dependencies/wheelhouse/` (pip's private HOME/TMP; each run
//! writes into a fresh folder there, moved into the wheelhouse afterwards).

use crate::evidence::sandbox::{LeftRunning, Network, SandboxRecord};
use crate::evidence::{WheelhouseDownload, WheelhouseFailure, WheelhouseFile, WheelhouseRecord};
use crate::hash;
use crate::isolation::left_running;
use crate::isolation::sandbox;
use crate::process::{self, ChildSpec};

pub mod pip;
pub mod provenance;
pub mod verify;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The SDK's index variable (`langbot_plugin.runtime.helper.pkgmgr.PYPI_INDEX_URL_ENV`).
pub const INDEX_URL_ENV: &str = "LANGBOT_PLUGIN_PYPI_INDEX_URL";

/// The SDK's trusted-host variable (`pkgmgr.PYPI_TRUSTED_HOST_ENV`): never
/// set for an offline install.
pub const TRUSTED_HOST_ENV: &str = "LANGBOT_PLUGIN_PYPI_TRUSTED_HOST";

/// Time limit of one pip step (resolution or download): the SDK's own installer limit
/// (`_DEPENDENCY_INSTALL_TIMEOUT_SECONDS = 600`, worker_launcher.py line 53).
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// `DIR/wheelhouse`, relative.
pub const DIR_NAME: &str = "wheelhouse";

/// The index folder inside the wheelhouse.
pub const INDEX_DIR_NAME: &str = "simple";

/// `DIR/wheelhouse`.
pub fn dir(evidence_dir: &Path) -> PathBuf {
    evidence_dir.join(DIR_NAME)
}

/// `DIR/wheelhouse/simple`.
pub fn index_dir(evidence_dir: &Path) -> PathBuf {
    dir(evidence_dir).join(INDEX_DIR_NAME)
}

/// `file://<DIR>/wheelhouse/simple/`, percent-encoded, with the trailing
/// slash pip needs to resolve `<project>/` under it.
pub fn index_url(evidence_dir: &Path) -> String {
    format!("{}/", file_url(&index_dir(evidence_dir)))
}

/// Puts the wheelhouse index in a child environment as the SDK's index
/// variable, and removes its trusted-host variable: the SDK's installer in
/// that child then runs `pip install ... -i file://<DIR>/wheelhouse/simple/`.
pub fn point_at_wheelhouse(env: &mut BTreeMap<String, String>, evidence_dir: &Path) {
    env.insert(INDEX_URL_ENV.into(), index_url(evidence_dir));
    env.remove(TRUSTED_HOST_ENV);
}

/// A `file://` URL for an absolute path: every byte but the unreserved ones
/// (RFC 3986) and `/` percent-encoded.
pub fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    format!(
        "file://{}",
        percent_encode(path.as_os_str().as_bytes(), b"/")
    )
}

fn percent_encode(bytes: &[u8], keep: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// PEP 503 normalization: lower case, every run of `-`, `_`, `.` one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_run {
                out.push('-');
            }
            in_run = true;
        } else {
            in_run = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// `(normalized project, version)` of a wheel file name
/// (`{distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl`,
/// PEP 427), or `None` for anything else.
pub fn wheel_identity(file_name: &str) -> Option<(String, String)> {
    let stem = file_name.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    if !(parts.len() == 5 || parts.len() == 6) || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    Some((normalize(parts[0]), parts[1].to_string()))
}

/// True when a wheel version from a file name and a METADATA `Version` name
/// the same release (file names write `-` as `_`; case is not significant).
pub fn same_version(file_version: &str, metadata_version: &str) -> bool {
    let canon = |v: &str| v.to_lowercase().replace('-', "_");
    canon(file_version) == canon(metadata_version)
}

/// The PEP 503 pages for `files`, keyed by path relative to the index folder:
/// `index.html` (every project) and `<project>/index.html` (its files, each
/// linked as `../../<file>#sha256=<hex>`). Deterministic: the same files give
/// the same bytes.
pub fn render_index(files: &[WheelhouseFile]) -> BTreeMap<String, String> {
    let mut by_project: BTreeMap<&str, Vec<&WheelhouseFile>> = BTreeMap::new();
    for f in files {
        by_project.entry(&f.project).or_default().push(f);
    }
    let page = |title: &str, links: &[String]| {
        format!(
            "<!DOCTYPE html>\n<html>\n<head><meta name=\"pypi:repository-version\" content=\"1.0\"><title>{title}</title></head>\n<body>\n{}</body>\n</html>\n",
            links.concat()
        )
    };
    let mut pages = BTreeMap::new();
    let roots: Vec<String> = by_project
        .keys()
        .map(|p| {
            format!(
                "<a href=\"{0}/\">{0}</a><br/>\n",
                percent_encode(p.as_bytes(), b"")
            )
        })
        .collect();
    pages.insert("index.html".to_string(), page("Simple index", &roots));
    for (project, mut list) in by_project {
        list.sort_by(|a, b| a.name.cmp(&b.name));
        let links: Vec<String> = list
            .iter()
            .map(|f| {
                format!(
                    "<a href=\"../../{}#sha256={}\">{}</a><br/>\n",
                    percent_encode(f.name.as_bytes(), b"+!"),
                    f.sha256,
                    html_text(&f.name)
                )
            })
            .collect();
        pages.insert(
            format!("{project}/index.html"),
            page(&format!("Links for {}", html_text(project)), &links),
        );
    }
    pages
}

fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Hashes every file directly in `wheelhouse` (not the index folder) and
/// describes it, sorted by name.
///
/// # Errors
/// When the folder cannot be read, a file cannot be hashed, or a file is not
/// a wheel (only `pip wheel` writes here, and it writes only wheels).
pub fn scan(wheelhouse: &Path) -> Result<Vec<WheelhouseFile>, String> {
    let mut files = Vec::new();
    let entries =
        std::fs::read_dir(wheelhouse).map_err(|e| format!("{}: {e}", wheelhouse.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", wheelhouse.display()))?;
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_dir() && name == INDEX_DIR_NAME {
            continue;
        }
        let Some((project, version)) = wheel_identity(&name).filter(|_| kind.is_file()) else {
            return Err(format!(
                "{}: expected only wheel files (and the `{INDEX_DIR_NAME}/` index) in the wheelhouse, found this; \
                 this is a harness defect: report it with the download logs",
                entry.path().display()
            ));
        };
        let digest = hash::sha256_file(&entry.path())
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        files.push(WheelhouseFile {
            name,
            project,
            version,
            size: digest.size,
            sha256: digest.hex(),
        });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// Scans `wheelhouse` ([`scan`]) and (re)writes its `simple/` index
/// ([`render_index`]); returns the files. An empty wheelhouse gets an empty
/// root page.
///
/// # Errors
/// As [`scan`], or when a page cannot be written.
pub fn write_index(wheelhouse: &Path) -> Result<Vec<WheelhouseFile>, String> {
    let files = scan(wheelhouse)?;
    let index = wheelhouse.join(INDEX_DIR_NAME);
    if index.exists() {
        std::fs::remove_dir_all(&index).map_err(|e| format!("{}: {e}", index.display()))?;
    }
    for (rel, text) in render_index(&files) {
        let path = index.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(files)
}

/// One `pip wheel` run to make: the candidates sharing one requirement set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadGroup {
    /// The requirements, in the SDK's order.
    pub requirements: Vec<String>,
    /// The candidates (folders) that named exactly these.
    pub candidates: Vec<String>,
}

/// Groups candidates by identical requirement lists, in first-seen order;
/// candidates with no requirement need no download and appear in no group.
pub fn plan(requirements: &[(String, Vec<String>)]) -> Vec<DownloadGroup> {
    let mut groups: Vec<DownloadGroup> = Vec::new();
    for (folder, reqs) in requirements.iter().filter(|(_, r)| !r.is_empty()) {
        match groups.iter_mut().find(|g| &g.requirements == reqs) {
            Some(g) => g.candidates.push(folder.clone()),
            None => groups.push(DownloadGroup {
                requirements: reqs.clone(),
                candidates: vec![folder.clone()],
            }),
        }
    }
    groups
}

/// The requirement pip's output names as the one it could not satisfy or
/// build, if any (the last such line wins: pip repeats the first error's
/// requirement last).
pub fn failed_requirement(pip_output: &str) -> Option<String> {
    let mut found = None;
    for line in pip_output.lines().map(str::trim) {
        let line = line.strip_prefix("ERROR: ").unwrap_or(line);
        let hit = [
            "No matching distribution found for ",
            "Could not find a version that satisfies the requirement ",
            "Failed building wheel for ",
            "Failed to build ",
        ]
        .iter()
        .find_map(|prefix| line.strip_prefix(prefix))
        .map(|rest| rest.split(" (from versions").next().unwrap_or(rest).trim());
        if let Some(h) = hit.filter(|h| !h.is_empty()) {
            found = Some(h.to_string());
        }
    }
    found
}

/// What [`build`] needs: the interpreter, the evidence directory, pip's
/// private roots, the index and the sandbox.
#[derive(Debug, Clone)]
pub struct BuildInput {
    /// The verified interpreter.
    pub python: PathBuf,
    /// DIR.
    pub evidence_dir: PathBuf,
    /// pip's private TMP: each run downloads into `<scratch>/download-N/`.
    pub scratch: PathBuf,
    /// pip's whole environment (allowlisted, private HOME/TMPDIR); every
    /// `PIP_*` variable is dropped from it and `PIP_CONFIG_FILE=/dev/null`
    /// set ([`pip::isolated_env`]).
    pub env: BTreeMap<String, String>,
    /// `DIR/logs/dependencies/wheelhouse`.
    pub log_dir: PathBuf,
    /// How many runs at once ([`crate::parallel::map`]).
    pub width: usize,
    /// The package index ([`crate::context::RunContext::package_index_url`]).
    pub index_url: String,
    /// Projects that may be built here from their sdist.
    pub allow_source_builds: Vec<String>,
    /// The run's bubblewrap, or why there is none.
    pub sandbox: &'static sandbox::Availability,
    /// What the pip steps read: the interpreter's folders (bound read-only).
    pub read_only: Vec<PathBuf>,
    /// pip's private root (holding HOME, TMP and `scratch`): the only
    /// writable path inside the sandbox.
    pub root: PathBuf,
}

/// Files of `/etc` pip needs to reach the index from inside the sandbox
/// (name resolution and the system's certificate store), bound read-only
/// when they exist; no pip configuration file is among them.
pub const NETWORK_FILES: &[&str] = &["/etc/resolv.conf", "/etc/ssl", "/etc/ca-certificates"];

/// Downloads every group into `DIR/wheelhouse`, writes the index and
/// returns the record. The runs (one per group, each into its own folder)
/// run concurrently, `input.width` at a time; their files are then moved
/// into the wheelhouse one group after another, in order, so a name clash is
/// decided the same way whatever run finished first. Failed runs are
/// recorded with their reason; nothing here fails as a whole but an I/O
/// error on the wheelhouse itself.
///
/// # Errors
/// When the wheelhouse or its index cannot be written.
pub fn build(input: &BuildInput, groups: &[DownloadGroup]) -> Result<WheelhouseRecord, String> {
    let wheelhouse = dir(&input.evidence_dir);
    std::fs::create_dir_all(&wheelhouse).map_err(|e| format!("{}: {e}", wheelhouse.display()))?;
    let numbered: Vec<(usize, &DownloadGroup)> = groups.iter().enumerate().collect();
    let fetched: Vec<Result<Fetched, String>> = crate::parallel::map(
        &numbered,
        input.width,
        |(i, group)| fetch(input, i + 1, group),
        |_| Err("the download thread panicked".to_string()),
    );
    let mut downloads = Vec::new();
    for f in fetched {
        downloads.push(merge(f?, &wheelhouse)?);
    }
    let files = write_index(&wheelhouse)?;
    Ok(WheelhouseRecord {
        dir: DIR_NAME.into(),
        index: format!("{DIR_NAME}/{INDEX_DIR_NAME}/"),
        upstream_index: input.index_url.clone(),
        downloads,
        files,
        allow_source_builds: input.allow_source_builds.clone(),
    })
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.display().to_string())
}

/// One run (resolution, then download) into its own fresh folder, not yet
/// in the wheelhouse.
struct Fetched {
    record: WheelhouseDownload,
    /// Where pip put the files, when it succeeded.
    target: Option<PathBuf>,
    /// pip's output tail.
    tail: String,
    /// The resolution: where each file comes from.
    resolved: Vec<provenance::Resolved>,
}

/// Runs one pip step (`args` after the interpreter) in the sandbox, with
/// the isolated environment; returns its output, the sandbox record and,
/// sandboxed, what it left running there when pip exited.
fn run_pip(
    input: &BuildInput,
    args: Vec<String>,
    log_stem: &Path,
) -> (
    Result<process::ChildOutput, process::RunError>,
    SandboxRecord,
    Option<LeftRunning>,
) {
    let spec = ChildSpec {
        program: input.python.clone(),
        args,
        cwd: input.scratch.clone(),
        env: pip::isolated_env(&input.env),
        timeout: DOWNLOAD_TIMEOUT,
        log_stem: log_stem.to_path_buf(),
        stdin: None,
    };
    let mut read_only = input.read_only.clone();
    read_only.extend(NETWORK_FILES.iter().map(PathBuf::from));
    let survey = input.root.join(format!(
        "{}-left-running.json",
        log_stem.file_name().unwrap_or_default().to_string_lossy()
    ));
    let _ = left_running::clear(&survey);
    let (spec, record) = sandbox::confine(
        spec,
        &sandbox::SandboxPlan {
            read_only,
            writable: vec![input.root.clone()],
            network: Network::Shared,
            survey: Some(survey.clone()),
        },
        input.sandbox,
    );
    let out = if record.confined() {
        process::run_sandboxed(&spec)
    } else {
        process::run(&spec)
    };
    let left = record.confined().then(|| left_running::read(&survey));
    (out, record, left)
}

/// Writes `lines` to `path`, one per line.
fn write_lines(path: &Path, lines: &[String]) -> Result<(), String> {
    let text: String = lines.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A failed download's outcome: `record` with its `failure`, no files.
fn failed_download(mut record: WheelhouseDownload, failure: WheelhouseFailure) -> Fetched {
    record.failure = Some(failure);
    Fetched {
        record,
        target: None,
        tail: String::new(),
        resolved: Vec::new(),
    }
}

/// A pip step that could not be started, as a download's failure.
fn could_not_run(e: &dyn std::fmt::Display) -> WheelhouseFailure {
    WheelhouseFailure {
        status: format!("could not run: {e}"),
        requirement: None,
        pip_tail: String::new(),
        sdists: Vec::new(),
    }
}

/// Step 1 of a download: pip resolves the requirements in
/// `requirements_file` and writes its installation report to `report_file`
/// (log `resolve_stem`); every resolved file must be downloadable as
/// published. The resolution and how long it took, or the failure, with
/// `record`'s sandbox, what pip left running and, on failure, the log set.
fn resolve(
    input: &BuildInput,
    requirements_file: &Path,
    report_file: &Path,
    resolve_stem: &Path,
    record: &mut WheelhouseDownload,
) -> Result<(Vec<provenance::Resolved>, Duration), WheelhouseFailure> {
    let (out, sandbox_record, left) = run_pip(
        input,
        pip::resolve_args(
            &input.index_url,
            &input.allow_source_builds,
            requirements_file,
            report_file,
        ),
        resolve_stem,
    );
    record.sandbox = Some(sandbox_record);
    if let Some(left) = left {
        record.left_running.insert("resolve".into(), left);
    }
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            record.log = relative(&input.evidence_dir, resolve_stem);
            return Err(could_not_run(&e));
        }
    };
    let duration = out.duration;
    if !out.success() {
        record.log = relative(&input.evidence_dir, resolve_stem);
        record.duration_ms = millis(duration);
        let all = format!("{}\n{}", out.stdout_text(), out.stderr_text());
        let requirement = failed_requirement(&all);
        let sdists = requirement
            .as_deref()
            .map(|r| provenance::skipped_sdists(&all, r))
            .unwrap_or_default();
        return Err(WheelhouseFailure {
            status: out.describe(),
            requirement,
            pip_tail: out.tail(12),
            sdists,
        });
    }
    let resolved = std::fs::read_to_string(report_file)
        .map_err(|e| format!("{}: {e}", report_file.display()))
        .and_then(|t| provenance::parse_report(&t));
    let resolved = match resolved {
        Ok(r) => r,
        Err(e) => {
            record.log = relative(&input.evidence_dir, resolve_stem);
            return Err(WheelhouseFailure {
                status: format!("pip's installation report is unusable: {e}"),
                requirement: None,
                pip_tail: out.tail(12),
                sdists: Vec::new(),
            });
        }
    };
    let problems = provenance::unpinnable(&resolved, &input.allow_source_builds);
    if !problems.is_empty() {
        record.log = relative(&input.evidence_dir, resolve_stem);
        return Err(WheelhouseFailure {
            status: format!(
                "the resolution names files that cannot be downloaded as published: {}",
                problems.join("; ")
            ),
            requirement: None,
            pip_tail: String::new(),
            sdists: Vec::new(),
        });
    }
    Ok((resolved, duration))
}

/// Resolves one group (`pip install --dry-run --report`), then downloads
/// exactly what was resolved, pinned to the published hashes (`pip wheel
/// --no-deps --require-hashes`), into `<scratch>/download-N/`.
fn fetch(input: &BuildInput, n: usize, group: &DownloadGroup) -> Result<Fetched, String> {
    let target = input.scratch.join(format!("download-{n}"));
    let requirements_file = input.scratch.join(format!("download-{n}.txt"));
    let report_file = input.scratch.join(format!("resolve-{n}.json"));
    let pinned_file = input.scratch.join(format!("download-{n}-pinned.txt"));
    let resolve_stem = input.log_dir.join(format!("resolve-{n}"));
    let log_stem = input.log_dir.join(format!("download-{n}"));
    std::fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    std::fs::create_dir_all(&input.log_dir)
        .map_err(|e| format!("{}: {e}", input.log_dir.display()))?;
    write_lines(&requirements_file, &group.requirements)?;
    let mut record = WheelhouseDownload {
        candidates: group.candidates.clone(),
        requirements: group.requirements.clone(),
        ok: false,
        files: Vec::new(),
        duration_ms: 0,
        log: relative(&input.evidence_dir, &log_stem),
        failure: None,
        sources: Vec::new(),
        resolve_log: Some(relative(&input.evidence_dir, &resolve_stem)),
        sandbox: None,
        left_running: Default::default(),
    };
    // 1. Resolution.
    let (resolved, mut duration) = match resolve(
        input,
        &requirements_file,
        &report_file,
        &resolve_stem,
        &mut record,
    ) {
        Ok(r) => r,
        Err(failure) => return Ok(failed_download(record, failure)),
    };

    // 2. Download, pinned.
    std::fs::write(&pinned_file, provenance::pinned_requirements(&resolved))
        .map_err(|e| format!("{}: {e}", pinned_file.display()))?;
    let (out, _, left) = run_pip(
        input,
        pip::download_args(
            &input.index_url,
            &input.allow_source_builds,
            &pinned_file,
            &target,
        ),
        &log_stem,
    );
    if let Some(left) = left {
        record.left_running.insert("download".into(), left);
    }
    let out = match out {
        Ok(out) => out,
        Err(e) => return Ok(failed_download(record, could_not_run(&e))),
    };
    duration += out.duration;
    record.duration_ms = millis(duration);
    if !out.success() {
        let all = format!("{}\n{}", out.stdout_text(), out.stderr_text());
        return Ok(failed_download(
            record,
            WheelhouseFailure {
                status: out.describe(),
                requirement: failed_requirement(&all),
                pip_tail: out.tail(12),
                sdists: Vec::new(),
            },
        ));
    }
    Ok(Fetched {
        record,
        target: Some(target),
        tail: out.tail(12),
        resolved,
    })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Moves a successful run's files into the wheelhouse (a name already there
/// is kept when its bytes are equal; when they differ, the first is kept and
/// the run fails: the wheelhouse would otherwise hold two files under one
/// name), and records where each came from.
fn merge(fetched: Fetched, wheelhouse: &Path) -> Result<WheelhouseDownload, String> {
    let Fetched {
        mut record,
        target,
        tail,
        resolved,
    } = fetched;
    let Some(target) = target else {
        return Ok(record);
    };
    let produced = scan(&target)?;
    let sources = provenance::sources(&resolved, &produced, &record.log);
    let mut conflicts = Vec::new();
    for f in &produced {
        let (from, to) = (target.join(&f.name), wheelhouse.join(&f.name));
        if to.exists() {
            let existing = hash::sha256_file(&to).map_err(|e| format!("{}: {e}", to.display()))?;
            if existing.hex() != f.sha256 {
                conflicts.push(format!(
                    "{} (this run: sha256 {}; already in the wheelhouse: {})",
                    f.name,
                    f.sha256,
                    existing.hex()
                ));
            }
            std::fs::remove_file(&from).map_err(|e| format!("{}: {e}", from.display()))?;
        } else {
            std::fs::rename(&from, &to)
                .map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))?;
        }
        record.files.push(f.name.clone());
    }
    let _ = std::fs::remove_dir(&target);
    let status = match sources {
        Err(e) => Some(e),
        Ok(s) => {
            record.sources = s;
            (!conflicts.is_empty()).then(|| {
                format!(
                    "pip produced a file whose name is already in the wheelhouse with other bytes: {}",
                    conflicts.join(", ")
                )
            })
        }
    };
    match status {
        None => record.ok = true,
        Some(status) => {
            record.failure = Some(WheelhouseFailure {
                status,
                requirement: None,
                pip_tail: tail,
                sdists: Vec::new(),
            })
        }
    }
    Ok(record)
}

/// The wheelhouse files a distribution `name` `version` (from its
/// dist-info METADATA) was installed from: same PEP 503 name and version.
pub fn files_for<'a>(
    files: &'a [WheelhouseFile],
    name: &str,
    version: &str,
) -> Vec<&'a WheelhouseFile> {
    let project = normalize(name);
    files
        .iter()
        .filter(|f| f.project == project && same_version(&f.version, version))
        .collect()
}

/// Advice for a runtime whose dependency installer failed, when one of
/// `texts` (the runtime's failure and log lines) says so: the SDK never
/// shows pip's output (worker_launcher.py line 375: "Plugin dependency
/// installer exited with code N"), so the likely cause must be named here.
/// `None` when no text is about dependency preparation.
pub fn installer_failure_advice<'a>(
    texts: impl IntoIterator<Item = &'a str>,
    log: &Path,
) -> Option<String> {
    let about_dependencies = texts.into_iter().any(|t| {
        t.contains("dependency installer exited with code")
            || t.contains("dependency_prepare_failed")
            || t.contains("dependency installation timed out")
            || t.contains("dependency preparation failed")
    });
    about_dependencies.then(|| {
        format!(
            "the runtime's own pip could not install the plugin's requirements; it installs from the run's \
             wheelhouse only (DIR/{DIR_NAME}, through {INDEX_URL_ENV}) and has no network, by design, so the likely \
             cause is a requirement, or one of its dependencies, missing from the wheelhouse (the `dependencies` \
             gate must pass first: read its `wheelhouse` check and DIR/logs/dependencies/wheelhouse/); the SDK \
             never shows pip's output: read {} for the runtime's log",
            log.display()
        )
    })
}

/// Combines the wheelhouse records of `--partition` runs: the files of all,
/// by name (one name with two digests is refused), and every download.
///
/// # Errors
/// When two records list one file name with different digests.
pub fn merge_records<'a>(
    records: impl IntoIterator<Item = &'a WheelhouseRecord>,
) -> Result<Option<WheelhouseRecord>, String> {
    let mut merged: Option<WheelhouseRecord> = None;
    for r in records {
        let Some(m) = merged.as_mut() else {
            merged = Some(r.clone());
            continue;
        };
        m.downloads.extend(r.downloads.iter().cloned());
        for f in &r.files {
            match m.files.iter().find(|g| g.name == f.name) {
                Some(g) if g.sha256 != f.sha256 || g.size != f.size => {
                    return Err(format!(
                        "wheelhouse file {} differs across partitions (sha256 {} vs {}); partitions of one run \
                         must resolve to the same files: re-run them",
                        f.name, g.sha256, f.sha256
                    ))
                }
                Some(_) => {}
                None => m.files.push(f.clone()),
            }
        }
        m.files.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, sha: char) -> WheelhouseFile {
        let (project, version) = wheel_identity(name).unwrap();
        WheelhouseFile {
            name: name.into(),
            project,
            version,
            size: 10,
            sha256: sha.to_string().repeat(64),
        }
    }

    #[test]
    fn names_normalize_as_pep_503() {
        assert_eq!(normalize("Typing_Extensions"), "typing-extensions");
        assert_eq!(normalize("zope.interface"), "zope-interface");
        assert_eq!(normalize("a-_.b"), "a-b");
        assert_eq!(normalize("Six"), "six");
    }

    #[test]
    fn wheel_file_names_give_project_and_version() {
        assert_eq!(
            wheel_identity("six-1.16.0-py2.py3-none-any.whl"),
            Some(("six".into(), "1.16.0".into()))
        );
        assert_eq!(
            wheel_identity(
                "pydantic_core-2.50.5-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
            ),
            Some(("pydantic-core".into(), "2.50.5".into()))
        );
        assert_eq!(
            wheel_identity("pkg-1.0-1build-py3-none-any.whl"),
            Some(("pkg".into(), "1.0".into()))
        );
        assert_eq!(wheel_identity("six-1.16.0.tar.gz"), None);
        assert_eq!(wheel_identity("six-1.16.0-any.whl"), None);
        assert_eq!(wheel_identity("index.html"), None);
        assert!(same_version("1.0_post1", "1.0-post1"));
        assert!(!same_version("1.16.0", "1.17.0"));
    }

    #[test]
    fn the_index_url_is_a_percent_encoded_file_url_ending_in_a_slash() {
        assert_eq!(
            index_url(Path::new("/tmp/ev dir/ä")),
            "file:///tmp/ev%20dir/%C3%A4/wheelhouse/simple/"
        );
        let mut env = BTreeMap::from([(TRUSTED_HOST_ENV.to_string(), "pypi.org".to_string())]);
        point_at_wheelhouse(&mut env, Path::new("/ev"));
        assert_eq!(
            env,
            BTreeMap::from([(
                INDEX_URL_ENV.to_string(),
                "file:///ev/wheelhouse/simple/".to_string()
            )])
        );
    }

    #[test]
    fn the_index_has_one_page_per_project_with_sha256_fragments() {
        let files = [
            file("six-1.16.0-py2.py3-none-any.whl", 'a'),
            file("Typing_Extensions-4.16.0-py3-none-any.whl", 'b'),
            file("six-1.17.0-py2.py3-none-any.whl", 'c'),
            file("pkg-1.0+local-py3-none-any.whl", 'd'),
        ];
        let pages = render_index(&files);
        assert_eq!(
            pages.keys().collect::<Vec<_>>(),
            [
                "index.html",
                "pkg/index.html",
                "six/index.html",
                "typing-extensions/index.html"
            ]
        );
        let six = &pages["six/index.html"];
        assert!(six.contains(&format!(
            "<a href=\"../../six-1.16.0-py2.py3-none-any.whl#sha256={}\">six-1.16.0-py2.py3-none-any.whl</a>",
            "a".repeat(64)
        )));
        assert!(six.contains(&format!(
            "six-1.17.0-py2.py3-none-any.whl#sha256={}",
            "c".repeat(64)
        )));
        assert!(!six.contains("Typing"));
        assert!(
            pages["index.html"].contains("<a href=\"typing-extensions/\">typing-extensions</a>")
        );
        assert!(pages["pkg/index.html"].contains("../../pkg-1.0+local-py3-none-any.whl#sha256="));
        assert_eq!(render_index(&files), pages, "deterministic");
        let empty = render_index(&[]);
        assert_eq!(empty.len(), 1);
        assert!(!empty["index.html"].contains("<a "));
    }

    #[test]
    fn write_index_hashes_the_files_and_refuses_anything_but_wheels() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("six-1.16.0-py2.py3-none-any.whl"), b"wheel").unwrap();
        let files = write_index(d.path()).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].sha256, hash::sha256_bytes(b"wheel"));
        assert_eq!(files[0].size, 5);
        let page = std::fs::read_to_string(d.path().join("simple/six/index.html")).unwrap();
        assert!(page.contains(&format!("#sha256={}", files[0].sha256)));
        // Rewriting is idempotent: the index folder is not taken for a file.
        assert_eq!(write_index(d.path()).unwrap(), files);
        std::fs::write(d.path().join("six-1.16.0.tar.gz"), b"sdist").unwrap();
        let err = write_index(d.path()).unwrap_err();
        assert!(err.contains("six-1.16.0.tar.gz"), "{err}");
    }

    #[test]
    fn downloads_are_planned_once_per_distinct_requirement_set() {
        let reqs = vec![
            ("a".to_string(), vec![]),
            ("b".to_string(), vec!["six==1.16.0".to_string()]),
            ("c".to_string(), vec!["six==1.16.0".to_string()]),
            ("d".to_string(), vec!["six==1.17.0".to_string()]),
        ];
        assert_eq!(
            plan(&reqs),
            [
                DownloadGroup {
                    requirements: vec!["six==1.16.0".into()],
                    candidates: vec!["b".into(), "c".into()],
                },
                DownloadGroup {
                    requirements: vec!["six==1.17.0".into()],
                    candidates: vec!["d".into()],
                },
            ]
        );
        assert!(
            plan(&reqs[..1]).is_empty(),
            "nothing beyond the SDK: no download"
        );
    }

    #[test]
    fn the_failed_requirement_is_read_from_pip_output() {
        let out = "Collecting six==1.16.0\nERROR: Could not find a version that satisfies the requirement \
                   vcc-no-such-package-xyz==1.0 (from versions: none)\nERROR: No matching distribution found \
                   for vcc-no-such-package-xyz==1.0\n";
        assert_eq!(
            failed_requirement(out).as_deref(),
            Some("vcc-no-such-package-xyz==1.0")
        );
        assert_eq!(
            failed_requirement("  ERROR: Failed building wheel for broken-pkg\n").as_deref(),
            Some("broken-pkg")
        );
        assert_eq!(failed_requirement("ERROR: network unreachable"), None);
    }

    #[test]
    fn installed_distributions_map_to_wheelhouse_files_by_name_and_version() {
        let files = [
            file("six-1.16.0-py2.py3-none-any.whl", 'a'),
            file("typing_extensions-4.16.0-py3-none-any.whl", 'b'),
        ];
        assert_eq!(files_for(&files, "Six", "1.16.0").len(), 1);
        assert_eq!(files_for(&files, "typing-extensions", "4.16.0").len(), 1);
        assert!(files_for(&files, "six", "1.17.0").is_empty());
        assert!(files_for(&files, "requests", "2.0").is_empty());
    }

    #[test]
    fn installer_failures_get_advice_and_other_failures_none() {
        let log = Path::new("/ev/logs/discovery-rpc/runtime.stderr");
        let advice = installer_failure_advice(
            [
                "apply_plugin_installation answered state \"failed\": dependency_prepare_failed Plugin \
                 dependency installer exited with code 1",
            ],
            log,
        )
        .unwrap();
        assert!(advice.contains("missing from the wheelhouse"), "{advice}");
        assert!(advice.contains("no network, by design"), "{advice}");
        assert!(
            advice.contains("/ev/logs/discovery-rpc/runtime.stderr"),
            "{advice}"
        );
        assert!(installer_failure_advice(
            ["AttributeError: module 'main' has no attribute 'X'"],
            log
        )
        .is_none());
    }

    #[test]
    fn merged_records_union_files_and_refuse_one_name_with_two_digests() {
        let rec = |files: Vec<WheelhouseFile>| WheelhouseRecord {
            dir: DIR_NAME.into(),
            index: "wheelhouse/simple/".into(),
            upstream_index: crate::profile::UPSTREAM_INDEX.into(),
            downloads: vec![],
            files,
            allow_source_builds: vec![],
        };
        let a = rec(vec![file("six-1.16.0-py2.py3-none-any.whl", 'a')]);
        let b = rec(vec![
            file("six-1.16.0-py2.py3-none-any.whl", 'a'),
            file("attrs-1.0-py3-none-any.whl", 'b'),
        ]);
        let m = merge_records([&a, &b]).unwrap().unwrap();
        assert_eq!(
            m.files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            [
                "attrs-1.0-py3-none-any.whl",
                "six-1.16.0-py2.py3-none-any.whl"
            ]
        );
        let c = rec(vec![file("six-1.16.0-py2.py3-none-any.whl", 'f')]);
        assert!(merge_records([&a, &c]).unwrap_err().contains("differs"));
        assert_eq!(merge_records([]).unwrap(), None);
    }
}
