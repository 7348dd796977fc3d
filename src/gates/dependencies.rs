//! The `dependencies` gate: the SDK prepares each admitted archive's
//! dependency environment, twice, as the LangBot host does.
//!
//! Per candidate (in parallel), the embedded probe
//! (`src/python/dependencies_probe.py`) runs twice in separate interpreter
//! processes against one private runtime data root
//! (`DIR/roots/dependencies/<folder>/data`). Each run admits the exact archive
//! (`PluginArtifactStore.install_package`) and calls
//! `PluginWorkerLauncher.prepare_dependency_environment` with a
//! `PluginDependencyEnvironmentStore` on that root, in the `oss_dev` runtime
//! profile: the first run prepares and publishes the environment, the second
//! must read back the same one.
//!
//! Before that, the gate builds the run's wheelhouse ([`crate::wheelhouse`]):
//! a first probe run (mode `requirements`, on a scratch data root) reports
//! the requirements the SDK keeps after dropping its own pin; one `pip wheel`
//! of the verified interpreter per distinct requirement set downloads their
//! whole dependency closure into `DIR/wheelhouse/`, and a PEP 503 index is
//! written over it. This download is the only place the run reaches the
//! package index. The two preparations then install from that index only:
//! their environment carries `LANGBOT_PLUGIN_PYPI_INDEX_URL=file://<DIR>/
//! wheelhouse/simple/` (the one variable the SDK's installer reads; it clears
//! pip's own environment), and they run in a private network namespace when
//! the machine allows one. Rust then checks:
//!
//! - `wheelhouse`: every requirement and its dependencies were downloaded
//!   (which files, with size and sha256), or nothing was needed;
//! - `prepare`: both preparations succeeded, with the SDK's index arguments
//!   naming the wheelhouse only;
//! - `same-digest`: both returned the same environment digest;
//! - `ready`: the environment reads back ready, both through the SDK and from
//!   its `.ready.json` on disk, read-only, naming this archive;
//! - `no-shadow-sdk`: nothing named `langbot_plugin*` is in the environment;
//! - `installed`: what the environment holds (dist-info name and version),
//!   each distribution a file of the wheelhouse; nothing when the
//!   requirements name nothing beyond the SDK.

use crate::context::{RunContext, Updates};
use crate::evidence::{
    Check, DependencyRecord, InstalledDistribution, WheelhouseFile, WheelhouseRecord,
};
use crate::netns::{self, NetKind};
use crate::{process, python, wheelhouse};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Gate id.
pub const GATE: &str = "dependencies";

/// How many times the environment is prepared.
pub const RUNS: usize = 2;

/// Time limit of one preparation: the SDK's own installer limit
/// (`_DEPENDENCY_INSTALL_TIMEOUT_SECONDS = 600` in
/// `langbot_plugin.runtime.plugin.worker_launcher`) plus a margin for the
/// interpreter and the artifact store.
pub const PREPARE_TIMEOUT: Duration = Duration::from_secs(660);

/// The SDK's ready marker in an environment directory.
const READY_MARKER: &str = ".ready.json";

/// The `dependencies` gate.
pub struct Dependencies;

/// Everything one candidate's preparation needs, owned, for a thread.
#[derive(Debug, Clone)]
pub struct DependencyInput {
    /// The genuine interpreter.
    pub python: PathBuf,
    /// The evidence directory DIR.
    pub evidence_dir: PathBuf,
    /// Candidate folder.
    pub folder: String,
    /// The exact archive file.
    pub archive: PathBuf,
    /// Its sha256, lower-case hex.
    pub archive_sha256: String,
    /// Private directory; the runtime data root is `<root>/data`.
    pub root: PathBuf,
    /// The probe's whole environment.
    pub env: BTreeMap<String, String>,
    /// Log directory: run N logs to `<log_dir>/run-N`.
    pub log_dir: PathBuf,
    /// Program and arguments put before the interpreter of each preparation
    /// (a private network namespace, `unshare --net --`); empty: none.
    pub wrapper: Vec<String>,
    /// How the preparations' network is isolated, for the `prepare` check.
    pub network: String,
    /// The wheelhouse's files: every installed distribution must be one.
    pub wheelhouse_files: Vec<WheelhouseFile>,
}

/// The probe's report (`dependencies_probe.py`).
#[derive(Debug, Clone, Deserialize)]
struct ProbeReport {
    runtime_profile: String,
    #[serde(default)]
    pip_index_args: Vec<String>,
    environments_before: Vec<String>,
    requirements: Option<Vec<String>>,
    requirement_names: Option<Vec<String>>,
    environment: Option<ProbeEnvironment>,
    error: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct ProbeEnvironment {
    digest: String,
    artifact_digest: String,
    requirements_digest: String,
    runtime_fingerprint: String,
    root_path: String,
    site_packages_path: String,
    ready_readback: bool,
    ready_marker: serde_json::Value,
}

fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.display().to_string())
}

/// PEP 503 normalisation of a distribution or file name (lower case, runs of
/// `-`, `_`, `.` as one `-`).
fn normalise(name: &str) -> String {
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

/// The wheelhouse file names the `installed` distributions came from
/// (matched by PEP 503 name and version, sorted), and the distributions no
/// wheelhouse file accounts for (`name version`).
pub fn wheelhouse_sources(
    installed: &[InstalledDistribution],
    files: &[WheelhouseFile],
) -> (Vec<String>, Vec<String>) {
    let mut from = Vec::new();
    let mut foreign = Vec::new();
    for d in installed {
        let matched = wheelhouse::files_for(files, &d.name, &d.version);
        if matched.is_empty() {
            foreign.push(format!("{} {}", d.name, d.version));
        }
        from.extend(matched.iter().map(|f| f.name.clone()));
    }
    from.sort();
    from.dedup();
    (from, foreign)
}

/// Prepares one archive's environment [`RUNS`] times through the SDK and
/// checks the results. Never fails as a whole: a probe that could not run is a
/// failing `prepare` check.
pub fn prepare_twice(input: &DependencyInput) -> (Vec<Check>, Option<DependencyRecord>) {
    let folder = input.folder.as_str();
    let data_root = input.root.join("data");
    let archive_rel = relative(&input.evidence_dir, &input.archive);
    let mut reports = Vec::new();
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
            Ok(r) if r.error.is_none() && r.environment.is_some() => reports.push(r),
            Ok(r) => {
                let why = r
                    .error
                    .unwrap_or_else(|| "no environment and no error reported".into());
                return (
                    vec![Check::fail(
                        "prepare",
                        Some(folder),
                        format!(
                            "{archive_rel}: expected the SDK's dependency-environment preparation \
                             (run {run} of {RUNS}, runtime profile {}) to succeed, found it \
                             refused: {why}; the host would fail this installation with \
                             `dependency_prepare_failed`: fix the candidate's requirements.txt",
                            r.runtime_profile
                        ),
                    )
                    .with_observed(json!({ "run": run, "sdk_error": why }))],
                    None,
                );
            }
            Err(e) => {
                return (
                    vec![Check::fail(
                        "prepare",
                        Some(folder),
                        format!("not observed: run {run} of {RUNS}: {e}"),
                    )],
                    None,
                )
            }
        }
    }
    let envs: Vec<&ProbeEnvironment> = reports
        .iter()
        .filter_map(|r| r.environment.as_ref())
        .collect();
    let first = envs[0];
    let digests: Vec<String> = envs.iter().map(|e| e.digest.clone()).collect();
    let expected_root = data_root
        .join("environments")
        .join("sha256")
        .join(&first.digest);
    let site_packages = expected_root.join("site-packages");
    let env_rel = relative(&input.evidence_dir, &expected_root);
    let requirements = reports[0].requirements.clone().unwrap_or_default();
    let expected_index = input
        .env
        .get(wheelhouse::INDEX_URL_ENV)
        .map(|url| vec!["-i".to_string(), url.clone()]);
    let index_args: Vec<&Vec<String>> = reports.iter().map(|r| &r.pip_index_args).collect();
    let prepare_observed = json!({
        "pip_index_args": reports[0].pip_index_args, "network": input.network,
    });
    let mut checks = vec![match &expected_index {
        Some(expected) if index_args.iter().all(|a| *a == expected) => Check::pass(
            "prepare",
            Some(folder),
            format!(
                "the SDK prepared the dependency environment of {archive_rel} {RUNS} times (runtime \
                 profile {}), in separate interpreters on one data root, without error; its installer's \
                 index arguments were `{}` (the run's wheelhouse only), network: {}",
                reports[0].runtime_profile,
                expected.join(" "),
                input.network
            ),
        ),
        _ => Check::fail(
            "prepare",
            Some(folder),
            format!(
                "{archive_rel}: expected the SDK's installer to read only the run's wheelhouse (index \
                 arguments {:?}, from {} in the probe's environment), found it built {index_args:?}; \
                 the preparation could have reached another index: this is a harness defect, report it \
                 with the probe logs under {}",
                expected_index.clone().unwrap_or_default(),
                wheelhouse::INDEX_URL_ENV,
                input.log_dir.display()
            ),
        ),
    }
    .with_observed(prepare_observed)];

    // same-digest
    let same = digests.iter().all(|d| d == &first.digest);
    checks.push(
        Check::from_bool(
            "same-digest",
            Some(folder),
            same,
            if same {
                format!(
                    "both preparations returned environment digest {}",
                    first.digest
                )
            } else {
                format!(
                    "expected every preparation of the same archive, requirements and runtime to \
                     return one environment digest, found {digests:?}; the SDK's environment \
                     identity is not stable here: report it with the probe logs under {}",
                    input.log_dir.display()
                )
            },
        )
        .with_observed(json!({ "digests": digests })),
    );

    // ready
    let mut not_ready = Vec::new();
    for (i, e) in envs.iter().enumerate() {
        if !e.ready_readback {
            not_ready.push(format!(
                "run {} did not read the environment back ready through get_ready",
                i + 1
            ));
        }
        if Path::new(&e.root_path) != expected_root
            || Path::new(&e.site_packages_path) != site_packages
        {
            not_ready.push(format!(
                "run {} reported the environment at {}, expected {}",
                i + 1,
                e.root_path,
                expected_root.display()
            ));
        }
        if e.artifact_digest != input.archive_sha256 {
            not_ready.push(format!(
                "run {} prepared it for artifact {}, expected the archive's {}",
                i + 1,
                e.artifact_digest,
                input.archive_sha256
            ));
        }
    }
    if let Some(second) = reports.get(1) {
        if !second.environments_before.contains(&first.digest) {
            not_ready.push(format!(
                "the second run did not find the first run's environment {} published before it \
                 started (found {:?})",
                first.digest, second.environments_before
            ));
        }
    }
    let marker_path = expected_root.join(READY_MARKER);
    match std::fs::read_to_string(&marker_path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()))
    {
        Err(e) => not_ready.push(format!(
            "{}: unreadable ({e})",
            relative(&input.evidence_dir, &marker_path)
        )),
        Ok(marker) => {
            if marker.get("digest").and_then(|v| v.as_str()) != Some(first.digest.as_str())
                || marker.get("artifact_digest").and_then(|v| v.as_str())
                    != Some(input.archive_sha256.as_str())
            {
                not_ready.push(format!(
                    "{} names digest {} and artifact {}, expected {} and {}",
                    relative(&input.evidence_dir, &marker_path),
                    marker["digest"],
                    marker["artifact_digest"],
                    first.digest,
                    input.archive_sha256
                ));
            }
            if envs.iter().any(|e| e.ready_marker != marker) {
                not_ready.push("the SDK-reported ready marker differs from the file".into());
            }
        }
    }
    for dir in [&expected_root, &site_packages] {
        match std::fs::metadata(dir) {
            Ok(m) if m.permissions().mode() & 0o222 == 0 => {}
            Ok(m) => not_ready.push(format!(
                "{} is writable (mode {:o}); the SDK publishes environments read-only",
                relative(&input.evidence_dir, dir),
                m.permissions().mode() & 0o7777
            )),
            Err(e) => not_ready.push(format!("{}: {e}", relative(&input.evidence_dir, dir))),
        }
    }
    checks.push(
        if not_ready.is_empty() {
            Check::pass(
                "ready",
                Some(folder),
                format!(
                    "{env_rel} reads back ready: through the SDK's get_ready in both runs (the \
                     second found the first's environment published), and from its read-only \
                     {READY_MARKER} naming this archive"
                ),
            )
        } else {
            Check::fail(
                "ready",
                Some(folder),
                format!(
                    "{env_rel}: expected a published, read-only environment that reads back ready \
                     for this archive; found: {}; a worker would not start on it: read the probe \
                     logs under {}",
                    not_ready.join("; "),
                    input.log_dir.display()
                ),
            )
        }
        .with_observed(json!({ "environment": env_rel, "ready_marker": first.ready_marker })),
    );

    // no-shadow-sdk
    checks.push(match shadow_copies(&expected_root) {
        Err(e) => Check::fail("no-shadow-sdk", Some(folder), format!("not observed: {e}")),
        Ok(found) if found.is_empty() => Check::pass(
            "no-shadow-sdk",
            Some(folder),
            format!("{env_rel} holds nothing named langbot_plugin*: workers import the runtime's own SDK"),
        ),
        Ok(found) => Check::fail(
            "no-shadow-sdk",
            Some(folder),
            format!(
                "{env_rel}: expected no copy of the SDK in the dependency environment, found {}; \
                 on a worker's sys.path it can shadow the runtime's SDK: remove whatever requirement \
                 pulls it in",
                found.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ),
        )
        .with_observed(json!({ "found": found })),
    });

    // installed
    let installed = installed_distributions(&site_packages);
    let mut record = DependencyRecord {
        digests: digests.clone(),
        environment: Some(env_rel.clone()),
        runtime_profile: reports[0].runtime_profile.clone(),
        runtime_fingerprint: Some(first.runtime_fingerprint.clone()),
        requirements_digest: Some(first.requirements_digest.clone()),
        requirements: requirements.clone(),
        installed: Vec::new(),
        nothing_installed: false,
        wheelhouse_files: Vec::new(),
    };
    checks.push(match installed {
        Err(e) => Check::fail("installed", Some(folder), format!("not observed: {e}")),
        Ok(installed) => {
            record.nothing_installed = installed.is_empty();
            record.installed = installed.clone();
            let names: Vec<String> = installed.iter().map(|d| normalise(&d.name)).collect();
            let wanted = reports[0].requirement_names.clone().unwrap_or_default();
            let missing: Vec<&String> = wanted
                .iter()
                .filter(|w| !names.contains(&normalise(w)))
                .collect();
            let listed = installed
                .iter()
                .map(|d| format!("{} {}", d.name, d.version))
                .collect::<Vec<_>>()
                .join(", ");
            let (from, foreign) = wheelhouse_sources(&installed, &input.wheelhouse_files);
            record.wheelhouse_files = from.clone();
            let observed = json!({
                "requirements": requirements, "installed": installed, "wheelhouse_files": from,
            });
            if !foreign.is_empty() {
                Check::fail(
                    "installed",
                    Some(folder),
                    format!(
                        "{env_rel}: expected every installed distribution to be a file of the run's \
                         wheelhouse (DIR/{}), found {} with no wheelhouse file of that name and version; \
                         the preparation installed from somewhere else: report it with the probe logs \
                         under {}",
                        wheelhouse::DIR_NAME,
                        foreign.join(", "),
                        input.log_dir.display()
                    ),
                )
            } else if requirements.is_empty() && installed.is_empty() {
                Check::pass(
                    "installed",
                    Some(folder),
                    "the requirements name nothing beyond the SDK, and nothing was installed",
                )
            } else if requirements.is_empty() {
                Check::fail(
                    "installed",
                    Some(folder),
                    format!(
                        "{env_rel}: expected nothing installed, as the requirements name nothing \
                         beyond the SDK, found {listed}; the environment holds what the archive \
                         did not ask for: report it with the probe logs"
                    ),
                )
            } else if !missing.is_empty() {
                Check::fail(
                    "installed",
                    Some(folder),
                    format!(
                        "{env_rel}: expected a distribution for every applicable requirement \
                         {wanted:?}, found none for {missing:?} (installed: {listed}); fix the \
                         requirement names"
                    ),
                )
            } else {
                Check::pass(
                    "installed",
                    Some(folder),
                    format!(
                        "for requirements {requirements:?} the SDK installed: {listed}, each from a \
                         wheelhouse file ({})",
                        from.join(", ")
                    ),
                )
            }
            .with_observed(observed)
        }
    });
    (checks, Some(record))
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

/// The `wheelhouse` check of one candidate whose SDK-kept requirements are
/// `requirements`, from the wheelhouse as built (`record`, relative paths
/// resolved against `evidence_dir`).
pub fn wheelhouse_check(
    folder: &str,
    requirements: &[String],
    record: &WheelhouseRecord,
    evidence_dir: &Path,
) -> Check {
    let index = wheelhouse::index_url(evidence_dir);
    if requirements.is_empty() {
        return Check::pass(
            "wheelhouse",
            Some(folder),
            format!(
                "the requirements name nothing beyond the SDK: nothing to download (the wheelhouse holds {} \
                 file(s) in all; later installs read only {index})",
                record.files.len()
            ),
        )
        .with_observed(json!({ "requirements": requirements, "files": [] }));
    }
    let Some(download) = record
        .downloads
        .iter()
        .find(|d| d.candidates.iter().any(|c| c == folder))
    else {
        return Check::fail(
            "wheelhouse",
            Some(folder),
            format!(
                "not observed: no download is recorded for {folder}'s requirements {requirements:?}; this is \
                 a harness defect: report it"
            ),
        );
    };
    let log = evidence_dir.join(&download.log);
    let files: Vec<&WheelhouseFile> = record
        .files
        .iter()
        .filter(|f| download.files.contains(&f.name))
        .collect();
    let observed = json!({
        "requirements": requirements,
        "files": files.iter().map(|f| json!({"name": f.name, "size": f.size, "sha256": f.sha256})).collect::<Vec<_>>(),
        "duration_ms": download.duration_ms,
        "log": download.log,
        "failure": download.failure,
    });
    let others: Vec<&String> = download
        .candidates
        .iter()
        .filter(|c| *c != folder)
        .collect();
    let shared = if others.is_empty() {
        String::new()
    } else {
        format!(", one download shared with {others:?}")
    };
    if download.ok {
        let listed: Vec<String> = files
            .iter()
            .map(|f| format!("{} ({} bytes, sha256 {})", f.name, f.size, f.sha256))
            .collect();
        return Check::pass(
            "wheelhouse",
            Some(folder),
            format!(
                "requirements {requirements:?} resolved, with everything they depend on, to {} file(s) that \
                 `pip wheel` downloaded once from {} into DIR/{} in {} ms{shared}: {}; later installs read only \
                 {index}",
                files.len(),
                record.upstream_index,
                wheelhouse::DIR_NAME,
                download.duration_ms,
                listed.join(", ")
            ),
        )
        .with_observed(observed);
    }
    let failure = download
        .failure
        .clone()
        .unwrap_or_else(|| crate::evidence::WheelhouseFailure {
            status: "failed without a recorded reason".into(),
            requirement: None,
            pip_tail: String::new(),
        });
    let which = match &failure.requirement {
        Some(r) => format!("on `{r}`"),
        None => "(pip names no single requirement)".into(),
    };
    let tail: String = failure
        .pip_tail
        .lines()
        .map(|l| format!("\n  {l}"))
        .collect();
    Check::fail(
        "wheelhouse",
        Some(folder),
        format!(
            "expected `pip wheel` (the verified interpreter's pip) to download requirements {requirements:?} of \
             {folder} and everything they depend on from {} into DIR/{}, found it failed ({}) {which}{shared}; \
             pip's last lines:{tail}\nfull log: {}.stdout and {}.stderr; every later install (this gate's \
             SDK preparation, the runtime in discovery-rpc) is offline and reads only the wheelhouse, so a \
             requirement that cannot be downloaded here cannot be installed at all: check its name and version \
             on the index (a private package must be published there), or remove it from requirements.txt",
            record.upstream_index,
            wheelhouse::DIR_NAME,
            failure.status,
            log.display(),
            log.display()
        ),
    )
    .with_observed(observed)
}

/// Runs `f` on every input in its own thread; a panicking thread yields
/// `on_panic(input)`.
fn each_in_parallel<T: Send>(
    inputs: &[DependencyInput],
    f: impl Fn(&DependencyInput) -> T + Sync,
    on_panic: impl Fn(&DependencyInput) -> T,
) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = inputs.iter().map(|i| s.spawn(|| f(i))).collect();
        handles
            .into_iter()
            .zip(inputs)
            .map(|(h, i)| h.join().unwrap_or_else(|_| on_panic(i)))
            .collect()
    })
}

impl super::Gate for Dependencies {
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let mut checks = Vec::new();
        let mut inputs = Vec::new();
        for record in &ctx.candidates {
            let folder = record.folder.as_str();
            let admitted = record.admission.as_ref().is_some_and(|a| a.accepted);
            let Some(archive) = record.archive.as_ref().filter(|_| admitted) else {
                checks.push(Check::fail(
                    "prepare",
                    Some(folder),
                    "not observed: expected an archive the admission gate admitted, found none; \
                     run admission first",
                ));
                continue;
            };
            let (home, tmp) = ctx.private_roots(GATE, folder).map_err(|e| {
                format!("dependencies: cannot create private roots for {folder}: {e}")
            })?;
            let root = home
                .parent()
                .map(Path::to_path_buf)
                .ok_or_else(|| format!("dependencies: private root of {folder} has no parent"))?;
            let mut env = ctx.child_env(&home, &tmp);
            wheelhouse::point_at_wheelhouse(&mut env, &ctx.evidence_dir);
            inputs.push(DependencyInput {
                python: ctx.python.clone(),
                evidence_dir: ctx.evidence_dir.clone(),
                folder: folder.to_string(),
                archive: ctx.evidence_dir.join(&archive.path),
                archive_sha256: archive.sha256.clone(),
                root,
                env,
                log_dir: ctx.log_stem(GATE, folder),
                wrapper: Vec::new(),
                network: String::new(),
                wheelhouse_files: Vec::new(),
            });
        }

        // What each candidate needs, as the SDK reads it; then one download
        // per distinct requirement set, the run's only package-index access.
        let reads = each_in_parallel(&inputs, read_requirements, |_| {
            Err("not observed: the requirements thread panicked; this is a harness defect: report it".into())
        });
        let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
        let mut readable = Vec::new();
        for (input, read) in inputs.into_iter().zip(reads) {
            match read {
                Ok(requirements) => {
                    wanted.push((input.folder.clone(), requirements));
                    readable.push(input);
                }
                Err(e) => checks.push(Check::fail("wheelhouse", Some(&input.folder), e)),
            }
        }
        let (home, tmp) = ctx.private_roots(GATE, wheelhouse::DIR_NAME).map_err(|e| {
            format!("dependencies: cannot create the wheelhouse's private roots: {e}")
        })?;
        let built = wheelhouse::build(
            &wheelhouse::BuildInput {
                python: ctx.python.clone(),
                evidence_dir: ctx.evidence_dir.clone(),
                scratch: tmp.clone(),
                env: ctx.child_env(&home, &tmp),
                log_dir: ctx.log_stem(GATE, wheelhouse::DIR_NAME),
            },
            &wheelhouse::plan(&wanted),
        )
        .map_err(|e| format!("dependencies: cannot build the wheelhouse: {e}"))?;
        {
            let built = built.clone();
            out.set(move |ctx| ctx.wheelhouse = Some(built));
        }
        let mut inputs = Vec::new();
        for (input, (_, requirements)) in readable.into_iter().zip(&wanted) {
            let check = wheelhouse_check(&input.folder, requirements, &built, &ctx.evidence_dir);
            let downloaded = check.result != crate::evidence::CheckResult::Fail;
            checks.push(check);
            if downloaded {
                inputs.push(input);
            }
        }
        if inputs.is_empty() {
            return Ok(checks);
        }

        // Offline from here: a private network namespace when the machine
        // allows one, the wheelhouse as the only index in any case.
        let plan = netns::plan(
            &ctx.evidence_dir.join("logs").join(GATE),
            &process::base_env(),
        );
        let network = match plan.kind {
            NetKind::None => format!(
                "{} ({}); the SDK's pip was still given the wheelhouse as its only index",
                plan.label(),
                plan.attempts.join("; ")
            ),
            _ => plan.label(),
        };
        for input in &mut inputs {
            input.wrapper = plan.wrapper.clone();
            input.network = network.clone();
            input.wheelhouse_files = built.files.clone();
        }
        let outcomes = each_in_parallel(&inputs, prepare_twice, |i| {
            (
                vec![Check::fail(
                    "prepare",
                    Some(&i.folder),
                    "not observed: the preparation thread panicked; this is a \
                     harness defect: report it",
                )],
                None,
            )
        });
        for (input, (c, record)) in inputs.iter().zip(outcomes) {
            checks.extend(c);
            if let Some(r) = record {
                let folder = input.folder.clone();
                out.set(move |ctx| {
                    if let Some(rec) = ctx.record_mut(&folder) {
                        rec.dependencies = Some(r);
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

    use crate::evidence::{CheckResult, WheelhouseDownload, WheelhouseFailure};

    fn six() -> WheelhouseFile {
        WheelhouseFile {
            name: "six-1.16.0-py2.py3-none-any.whl".into(),
            project: "six".into(),
            version: "1.16.0".into(),
            size: 11053,
            sha256: "8a".repeat(32),
        }
    }

    fn record(download: Option<WheelhouseDownload>) -> WheelhouseRecord {
        WheelhouseRecord {
            dir: "wheelhouse".into(),
            index: "wheelhouse/simple/".into(),
            upstream_index: wheelhouse::UPSTREAM_INDEX.into(),
            files: if download.as_ref().is_some_and(|d| d.ok) {
                vec![six()]
            } else {
                vec![]
            },
            downloads: download.into_iter().collect(),
        }
    }

    fn download(ok: bool) -> WheelhouseDownload {
        WheelhouseDownload {
            candidates: vec!["codex-agent".into(), "claude-code-agent".into()],
            requirements: vec!["six==1.16.0".into()],
            ok,
            files: if ok { vec![six().name] } else { vec![] },
            duration_ms: 1200,
            log: "logs/dependencies/wheelhouse/download-1".into(),
            failure: (!ok).then(|| WheelhouseFailure {
                status: "exit status 1".into(),
                requirement: Some("vcc-no-such-package-xyz==1.0".into()),
                pip_tail: "ERROR: No matching distribution found for vcc-no-such-package-xyz==1.0"
                    .into(),
            }),
        }
    }

    #[test]
    fn the_wheelhouse_check_lists_each_file_or_names_the_failed_requirement() {
        let ev = Path::new("/ev");
        let reqs = vec!["six==1.16.0".to_string()];
        let pass = wheelhouse_check("codex-agent", &reqs, &record(Some(download(true))), ev);
        assert_eq!(pass.result, CheckResult::Pass, "{}", pass.detail);
        assert!(
            pass.detail.contains(&format!("sha256 {}", "8a".repeat(32))),
            "{}",
            pass.detail
        );
        assert!(
            pass.detail.contains("file:///ev/wheelhouse/simple/"),
            "{}",
            pass.detail
        );
        assert!(
            pass.detail.contains("shared with [\"claude-code-agent\"]"),
            "{}",
            pass.detail
        );
        assert_eq!(pass.observed.as_ref().unwrap()["files"][0]["size"], 11053);

        let fail = wheelhouse_check("codex-agent", &reqs, &record(Some(download(false))), ev);
        assert_eq!(fail.result, CheckResult::Fail);
        for needle in [
            "on `vcc-no-such-package-xyz==1.0`",
            "ERROR: No matching distribution found",
            "/ev/logs/dependencies/wheelhouse/download-1.stderr",
            "remove it from requirements.txt",
        ] {
            assert!(fail.detail.contains(needle), "{needle}: {}", fail.detail);
        }

        let none = wheelhouse_check("acp-agent-runner", &[], &record(None), ev);
        assert_eq!(none.result, CheckResult::Pass);
        assert!(
            none.detail.contains("nothing to download"),
            "{}",
            none.detail
        );
        // Requirements without a recorded download are never a pass.
        let lost = wheelhouse_check("acp-agent-runner", &reqs, &record(Some(download(true))), ev);
        assert_eq!(lost.result, CheckResult::Fail);
        assert!(lost.detail.starts_with("not observed"), "{}", lost.detail);
    }

    #[test]
    fn installed_distributions_outside_the_wheelhouse_are_named() {
        let installed = [
            InstalledDistribution {
                name: "six".into(),
                version: "1.16.0".into(),
            },
            InstalledDistribution {
                name: "requests".into(),
                version: "2.32.0".into(),
            },
        ];
        let (from, foreign) = wheelhouse_sources(&installed, &[six()]);
        assert_eq!(from, [six().name]);
        assert_eq!(foreign, ["requests 2.32.0"]);
        let (from, foreign) = wheelhouse_sources(&installed[..1], &[six()]);
        assert_eq!((from.len(), foreign.len()), (1, 0));
    }

    #[test]
    fn names_are_normalised_as_pep_503() {
        assert_eq!(normalise("LangBot_Plugin"), "langbot-plugin");
        assert_eq!(
            normalise("langbot.plugin-0.6.0b5.dist-info"),
            "langbot-plugin-0-6-0b5-dist-info"
        );
        assert_eq!(normalise("__init__.py"), "init-py");
    }

    #[test]
    fn shadow_copies_are_found_at_any_depth_and_spelling() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("site-packages/langbot_plugin")).unwrap();
        std::fs::create_dir_all(
            d.path()
                .join("site-packages/LangBot_Plugin-0.6.0b3.dist-info"),
        )
        .unwrap();
        std::fs::create_dir_all(d.path().join("site-packages/requests")).unwrap();
        std::fs::write(
            d.path()
                .join("site-packages/requests/langbot_plugin_compat.py"),
            b"",
        )
        .unwrap();
        let mut found = shadow_copies(d.path()).unwrap();
        found.sort();
        assert_eq!(
            found,
            [
                "site-packages/LangBot_Plugin-0.6.0b3.dist-info",
                "site-packages/langbot_plugin",
                "site-packages/requests/langbot_plugin_compat.py",
            ]
        );
        let clean = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(clean.path().join("site-packages/six")).unwrap();
        assert!(shadow_copies(clean.path()).unwrap().is_empty());
    }

    #[test]
    fn installed_distributions_come_from_dist_info_metadata() {
        let d = tempfile::tempdir().unwrap();
        let di = d.path().join("six-1.17.0.dist-info");
        std::fs::create_dir_all(&di).unwrap();
        std::fs::write(
            di.join("METADATA"),
            "Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n\nName: not-a-header\n",
        )
        .unwrap();
        std::fs::create_dir_all(d.path().join("six")).unwrap();
        assert_eq!(
            installed_distributions(d.path()).unwrap(),
            [InstalledDistribution {
                name: "six".into(),
                version: "1.17.0".into()
            }]
        );
        let bad = d.path().join("broken-1.0.dist-info");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("METADATA"), "Name: broken\n").unwrap();
        assert!(installed_distributions(d.path())
            .unwrap_err()
            .contains("no `Version` header"));
    }
}
