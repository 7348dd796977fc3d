//! What the `dependencies` gate observes: the SDK's preparations (the
//! embedded probe, run twice, each run one process for every candidate),
//! the requirements it keeps, and the published environment on disk (ready
//! marker, modes, SDK copies, installed distributions), for every candidate
//! of the run ([`observe_all`]), with the wheelhouse built between the SDK's
//! reading of the requirements and the preparations. Nothing here decides a
//! check: the one thing read from a decision is whether a candidate's
//! download succeeded, which decides whether it is prepared at all.

use super::{decide, record, wheelhouse_check, GATE, PREPARE_TIMEOUT, READY_MARKER, RUNS};
use crate::context::RunContext;
use crate::evidence::{
    Check, DependencyRecord, InstalledDistribution, WheelhouseFile, WheelhouseRecord,
};
use crate::isolation::sandbox;
use crate::netns::{self, NetKind};
use crate::{process, python, wheelhouse};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The probe's report (`dependencies_probe.py`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProbeReport {
    pub(crate) runtime_profile: String,
    #[serde(default)]
    pub(crate) pip_index_args: Vec<String>,
    pub(crate) environments_before: Vec<String>,
    pub(crate) requirements: Option<Vec<String>>,
    pub(crate) requirement_names: Option<Vec<String>>,
    pub(crate) environment: Option<ProbeEnvironment>,
    pub(crate) error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProbeEnvironment {
    pub(crate) digest: String,
    pub(crate) artifact_digest: String,
    pub(crate) requirements_digest: String,
    pub(crate) runtime_fingerprint: String,
    pub(crate) root_path: String,
    pub(crate) site_packages_path: String,
    pub(crate) ready_readback: bool,
    pub(crate) ready_marker: serde_json::Value,
}

/// What the gate observed of one candidate's preparations: plain data.
#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    /// Candidate folder.
    pub folder: String,
    /// The archive, relative to DIR.
    pub archive: String,
    /// Its sha256.
    pub archive_sha256: String,
    /// Where the probe logs are.
    pub log_dir: String,
    /// How the preparations' network was isolated.
    pub network: String,
    /// The index arguments the SDK's installer must build (`-i <wheelhouse>`),
    /// from the probe's environment; `None` when it names no wheelhouse.
    pub expected_index: Option<Vec<String>>,
    /// The wheelhouse's files.
    pub wheelhouse_files: Vec<WheelhouseFile>,
    /// The reports of the runs that succeeded, in order.
    pub(crate) runs: Vec<ProbeReport>,
    /// The run that did not succeed, which ended the observation.
    pub stopped: Option<StoppedRun>,
    /// The published environment on disk, when every run succeeded.
    pub environment: Option<EnvironmentObservation>,
}

/// A preparation that did not succeed.
#[derive(Debug, Clone, Serialize)]
pub struct StoppedRun {
    /// 1-based run number.
    pub run: usize,
    /// The runtime profile the probe reported, when it reported.
    pub runtime_profile: Option<String>,
    /// The SDK's refusal (the probe reported an error, or no environment).
    pub sdk_error: Option<String>,
    /// The probe did not report at all (why).
    pub probe_error: Option<String>,
}

/// The environment the first run published, as found on disk.
#[derive(Debug, Clone, Serialize)]
pub struct EnvironmentObservation {
    /// Where the SDK's layout puts it (`data/environments/sha256/<digest>`).
    pub expected_root: String,
    /// Its `site-packages`.
    pub site_packages: String,
    /// The environment relative to DIR.
    pub env_rel: String,
    /// Its `.ready.json`, relative to DIR.
    pub marker_rel: String,
    /// The marker's JSON, when readable.
    pub marker: Option<serde_json::Value>,
    /// Why the marker could not be read.
    pub marker_error: Option<String>,
    /// Mode bits of the environment and its `site-packages`.
    pub modes: Vec<DirMode>,
    /// Entries named `langbot_plugin*`, when the tree could be walked.
    pub shadow: Option<Vec<String>>,
    /// Why it could not.
    pub shadow_error: Option<String>,
    /// Installed distributions, when `site-packages` could be read.
    pub installed: Option<Vec<InstalledDistribution>>,
    /// Why it could not.
    pub installed_error: Option<String>,
    /// Every installed distribution compared with its wheelhouse wheel's
    /// RECORD and the files with its rows ([`super::wheel_match::compare`]):
    /// one sentence per problem; empty when all match.
    pub wheel_mismatches: Vec<String>,
}

/// One directory's permission bits.
#[derive(Debug, Clone, Serialize)]
pub struct DirMode {
    /// Relative to DIR.
    pub path: String,
    /// `st_mode & 0o7777`, when readable.
    pub mode: Option<u32>,
    /// Why not.
    pub error: Option<String>,
}

/// What the gate observed of the whole run: every candidate, in the run's
/// order, and the wheelhouse it built for them.
#[derive(Debug, Clone, Serialize)]
pub struct RunObservation {
    /// The evidence directory DIR (the wheelhouse's paths are relative to it).
    pub evidence_dir: PathBuf,
    /// The wheelhouse, once built (empty when nothing needs downloading).
    pub wheelhouse: Option<WheelhouseRecord>,
    /// Every candidate.
    pub candidates: Vec<CandidateObservation>,
    /// The pip configuration files the SDK's installer reads
    /// ([`super::pip_config`]), when any candidate was admitted.
    pub pip_config: Option<Result<Vec<super::pip_config::ConfigFile>, String>>,
}

/// One candidate as the gate found it.
#[derive(Debug, Clone, Serialize)]
pub enum CandidateObservation {
    /// Admission did not admit its archive (`admission`: its record, when it ran).
    NotAdmitted {
        folder: String,
        admission: Option<crate::evidence::AdmissionRecord>,
    },
    /// The SDK's reading of its requirements did not answer (why).
    Unreadable { folder: String, error: String },
    /// Its requirements as the SDK kept them, and its preparations: `None`
    /// when its wheelhouse download did not succeed (nothing was prepared).
    Read {
        folder: String,
        requirements: Vec<String>,
        prepared: Option<Prepared>,
    },
}

/// A candidate's two preparations.
#[derive(Debug, Clone, Serialize)]
pub enum Prepared {
    /// What was observed.
    Observed(Box<Observation>),
    /// The thread preparing it panicked (a harness defect).
    Panicked,
}

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

/// `DIR/roots/dependencies/<this>`: the probe processes' working directory
/// and private HOME/TMPDIR (each candidate's data roots are under its own
/// `DIR/roots/dependencies/<folder>`).
const PROBE_ROOT: &str = ".probe";

/// One job of the dependencies probe, as `dependencies_probe.py` reads it.
#[derive(Debug, Serialize)]
struct ProbeJob {
    archive: String,
    sha256: String,
    data_root: String,
    /// `requirements` or `prepare`.
    mode: &'static str,
}

impl ProbeJob {
    fn new(input: &DependencyInput, data_root: &Path, mode: &'static str) -> Self {
        Self {
            archive: input.archive.display().to_string(),
            sha256: input.archive_sha256.clone(),
            data_root: data_root.display().to_string(),
            mode,
        }
    }
}

/// How the probe processes of a batch run: one process per kind (the
/// requirements, run 1, run 2), each for every candidate of the batch.
#[derive(Debug, Clone)]
pub struct ProbeProcess {
    /// The genuine interpreter.
    pub python: PathBuf,
    /// Its working directory (created by the caller).
    pub cwd: PathBuf,
    /// Its whole environment (allowlisted, private HOME/TMPDIR, the
    /// wheelhouse as the SDK's index: [`wheelhouse::point_at_wheelhouse`]).
    pub env: BTreeMap<String, String>,
    /// Log directory: the requirements process logs to
    /// `<log_dir>/requirements`, preparation run N to `<log_dir>/run-N`
    /// (`DIR/logs/dependencies` for the gate).
    pub log_dir: PathBuf,
    /// Program and arguments put before the interpreter of each preparation
    /// (a private network namespace, `unshare --net --`); empty: none. The
    /// requirements process runs without it.
    pub wrapper: Vec<String>,
}

impl ProbeProcess {
    /// The process of `input` prepared alone: its own interpreter, root (as
    /// the working directory), environment, log directory and wrapper.
    fn alone(input: &DependencyInput) -> Self {
        Self {
            python: input.python.clone(),
            cwd: input.root.clone(),
            env: input.env.clone(),
            log_dir: input.log_dir.clone(),
            wrapper: input.wrapper.clone(),
        }
    }
}

/// Runs one probe process for `jobs` (logged at `<log_dir>/<stem>`, with a
/// time limit of `per_job` for each job) and returns each job's outcome in
/// order: `Err` when the probe could not observe it (the process failed,
/// which fails every job, or that job alone erred).
fn run_batch(
    process: &ProbeProcess,
    stem: &str,
    wrapper: &[String],
    jobs: &[ProbeJob],
    per_job: Duration,
) -> Vec<Result<ProbeReport, String>> {
    let log_stem = process.log_dir.join(stem);
    let probe = python::batch::BatchProbe {
        wrapper,
        python: &process.python,
        name: "dependencies_probe",
        source: python::DEPENDENCIES_PROBE,
        cwd: &process.cwd,
        log_stem: &log_stem,
    };
    python::batch::run_batch(&probe, jobs, process.env.clone(), per_job)
}

/// The observation of `input` before any preparation answered.
fn unobserved(input: &DependencyInput, process: &ProbeProcess) -> Observation {
    Observation {
        folder: input.folder.clone(),
        archive: relative(&input.evidence_dir, &input.archive),
        archive_sha256: input.archive_sha256.clone(),
        log_dir: process.log_dir.display().to_string(),
        network: input.network.clone(),
        expected_index: process
            .env
            .get(wheelhouse::INDEX_URL_ENV)
            .map(|url| vec!["-i".to_string(), url.clone()]),
        wheelhouse_files: input.wheelhouse_files.clone(),
        runs: Vec::new(),
        stopped: None,
        environment: None,
    }
}

/// Adds preparation run `run`'s outcome to `obs`: a report with an
/// environment and no error is a run that succeeded; anything else stops
/// the observation there.
fn add_run(obs: &mut Observation, run: usize, outcome: Result<ProbeReport, String>) {
    match outcome {
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
        }
        Err(e) => {
            obs.stopped = Some(StoppedRun {
                run,
                runtime_profile: None,
                sdk_error: None,
                probe_error: Some(e),
            });
        }
    }
}

/// Prepares every input [`RUNS`] times through the SDK, one probe process
/// per run for all of them (run N+1 starts after run N ended, and only for
/// the inputs whose earlier runs succeeded, so it finds their environments
/// published), then reads what each published, in `inputs` order (`None`
/// where reading one candidate's environment panicked). Never fails: a
/// probe that did not report stops each of its inputs' observation; a job
/// the probe could not observe, that job's alone.
pub fn observe_batch(
    process: &ProbeProcess,
    inputs: &[DependencyInput],
    width: usize,
) -> Vec<Option<Observation>> {
    let mut observations: Vec<Observation> =
        inputs.iter().map(|i| unobserved(i, process)).collect();
    for run in 1..=RUNS {
        let pending: Vec<usize> = (0..inputs.len())
            .filter(|&i| observations[i].stopped.is_none())
            .collect();
        let jobs: Vec<ProbeJob> = pending
            .iter()
            .map(|&i| ProbeJob::new(&inputs[i], &inputs[i].root.join("data"), "prepare"))
            .collect();
        let outcomes = run_batch(
            process,
            &format!("run-{run}"),
            &process.wrapper,
            &jobs,
            PREPARE_TIMEOUT,
        );
        for (&i, outcome) in pending.iter().zip(outcomes) {
            add_run(&mut observations[i], run, outcome);
        }
    }
    let pairs: Vec<(&DependencyInput, Observation)> = inputs.iter().zip(observations).collect();
    // Reading an environment hashes its files against the wheelhouse's
    // wheels: in parallel, one candidate per thread.
    crate::parallel::map(
        &pairs,
        width,
        |(input, obs)| Some(read_environment(input, obs.clone())),
        |_| None,
    )
}

/// Runs the preparations of one archive (a batch of one, in the input's
/// own root, environment, log directory and wrapper) and reads the
/// environment they published.
pub fn observe(input: &DependencyInput) -> Observation {
    let process = ProbeProcess::alone(input);
    observe_batch(&process, std::slice::from_ref(input), 1)
        .pop()
        .flatten()
        .unwrap_or_else(|| {
            let mut obs = unobserved(input, &process);
            obs.stopped = Some(StoppedRun {
                run: RUNS,
                runtime_profile: None,
                sdk_error: None,
                probe_error: Some("reading this preparation's results panicked".into()),
            });
            obs
        })
}

/// Reads the environment the first run published, when every run succeeded.
fn read_environment(input: &DependencyInput, mut obs: Observation) -> Observation {
    if obs.stopped.is_some() {
        return obs;
    }
    let Some(first) = obs.runs.first().and_then(|r| r.environment.as_ref()) else {
        return obs;
    };
    let data_root = input.root.join("data");
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
        wheel_mismatches: super::wheel_match::compare(
            &site_packages,
            &input.evidence_dir.join(wheelhouse::DIR_NAME),
            &input.wheelhouse_files,
        ),
    });
    obs
}

/// The requirements the SDK keeps for each input (its own pin dropped), as
/// one probe process in mode `requirements` reports them (logged at
/// `<log_dir>/requirements`), each input on its own scratch data root
/// (`<root>/requirements-data`) so the preparations' root stays untouched;
/// in `inputs` order.
///
/// Each `Err` is a sentence for a failing `wheelhouse` check: the probe did
/// not answer (for every input when the process failed; for that input
/// alone when it could not observe its job), or the SDK refused the
/// requirements.
pub fn read_requirements_batch(
    process: &ProbeProcess,
    inputs: &[DependencyInput],
) -> Vec<Result<Vec<String>, String>> {
    let jobs: Vec<ProbeJob> = inputs
        .iter()
        .map(|i| ProbeJob::new(i, &i.root.join("requirements-data"), "requirements"))
        .collect();
    run_batch(process, "requirements", &[], &jobs, python::PROBE_TIMEOUT)
        .into_iter()
        .zip(inputs)
        .map(|(outcome, input)| {
            let report =
                outcome.map_err(|e| format!("not observed: reading the requirements: {e}"))?;
            match (report.error, report.requirements) {
                (None, Some(requirements)) => Ok(requirements),
                (error, _) => Err(refused(
                    input,
                    &error.unwrap_or_else(|| "no requirements and no error reported".into()),
                )),
            }
        })
        .collect()
}

/// The `wheelhouse` sentence for an archive whose requirements the SDK
/// refused (`why`: its message).
fn refused(input: &DependencyInput, why: &str) -> String {
    format!(
        "{}: expected the SDK to read the archive's requirements.txt, found it refused: {why}; \
         the host would fail this installation with `dependency_prepare_failed`: fix the \
         candidate's requirements.txt",
        relative(&input.evidence_dir, &input.archive),
    )
}

/// Each input's requirements as the SDK reads them, in `inputs` order (as
/// [`read_requirements_batch`]): those `admission` handed on
/// ([`RunContext::admitted_requirements`]: its probe read them from the
/// artifact the SDK's store installed from the same archive, so the SDK is
/// not imported again for them); the others, if any, read by one
/// `requirements` probe process (log `DIR/logs/dependencies/requirements`).
pub(crate) fn requirements_of(
    ctx: &RunContext,
    process: &ProbeProcess,
    inputs: &[DependencyInput],
) -> Vec<Result<Vec<String>, String>> {
    let handed: Vec<Option<Result<Vec<String>, String>>> = inputs
        .iter()
        .map(|i| {
            let kept = ctx.admitted_requirements.get(&i.folder)?;
            Some(kept.clone().map_err(|why| refused(i, &why)))
        })
        .collect();
    let left: Vec<DependencyInput> = inputs
        .iter()
        .zip(&handed)
        .filter(|(_, h)| h.is_none())
        .map(|(i, _)| i.clone())
        .collect();
    let mut read = read_requirements_batch(process, &left).into_iter();
    handed
        .into_iter()
        .map(|h| {
            h.unwrap_or_else(|| {
                read.next().unwrap_or_else(|| {
                    Err("not observed: reading the requirements: no answer".into())
                })
            })
        })
        .collect()
}

/// [`read_requirements_batch`] for one archive alone (in its own root,
/// environment and log directory).
///
/// # Errors
/// As each result of [`read_requirements_batch`].
pub fn read_requirements(input: &DependencyInput) -> Result<Vec<String>, String> {
    read_requirements_batch(&ProbeProcess::alone(input), std::slice::from_ref(input))
        .pop()
        .unwrap_or_else(|| Err("not observed: reading the requirements: no answer".into()))
}

/// Everything one candidate's preparation needs, owned, for a thread.
/// `python`, `env`, `log_dir` and `wrapper` are those of the probe when the
/// candidate is prepared alone ([`observe`], [`prepare_twice`],
/// [`read_requirements`]); a batch runs as its [`ProbeProcess`] says.
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
    /// Log directory: run N logs to `<log_dir>/run-N`, the requirements to
    /// `<log_dir>/requirements`.
    pub log_dir: PathBuf,
    /// Program and arguments put before the interpreter of each preparation
    /// (a private network namespace, `unshare --net --`); empty: none.
    pub wrapper: Vec<String>,
    /// How the preparations' network is isolated, for the `prepare` check.
    pub network: String,
    /// The wheelhouse's files: every installed distribution must be one.
    pub wheelhouse_files: Vec<WheelhouseFile>,
}

/// Prepares one archive's environment [`RUNS`] times through the SDK and
/// checks the results: [`observe`], then [`decide`]. Never fails as a whole:
/// a probe that could not run is a failing `prepare` check.
pub fn prepare_twice(input: &DependencyInput) -> (Vec<Check>, Option<DependencyRecord>) {
    let obs = observe(input);
    (decide(&obs), record(&obs))
}

/// Prepares every input's environment [`RUNS`] times through one probe
/// process per run ([`observe_batch`]) and checks each: [`decide`], in
/// `inputs` order. An archive the probe cannot observe fails that
/// candidate's `prepare` only; the others are prepared as they would be
/// alone.
pub fn prepare_batch(
    process: &ProbeProcess,
    inputs: &[DependencyInput],
) -> Vec<(Vec<Check>, Option<DependencyRecord>)> {
    observe_batch(process, inputs, 1)
        .into_iter()
        .zip(inputs)
        .map(|(obs, input)| match obs {
            Some(obs) => (decide(&obs), record(&obs)),
            None => (
                vec![Check::fail(
                    "prepare",
                    Some(&input.folder),
                    "not observed: reading this preparation's results panicked; this is a \
                     harness defect: report it",
                )],
                None,
            ),
        })
        .collect()
}

/// Every candidate of the run: admitted or not, its requirements as the SDK
/// reads them ([`requirements_of`]: admission's reading, handed on), the
/// run's wheelhouse (one `pip wheel` per distinct
/// requirement set, the run's only package-index access), then, offline,
/// each downloaded candidate's two preparations (one probe process per run
/// for all of them, logs `DIR/logs/dependencies/run-1` and `run-2`;
/// [`observe_batch`]).
///
/// # Errors
/// When private roots cannot be created or the wheelhouse cannot be built
/// at all (a download that fails is observed, not an error).
pub fn observe_all(ctx: &RunContext) -> Result<RunObservation, String> {
    let (candidates, inputs) = admitted_inputs(ctx)?;
    let mut obs = RunObservation {
        evidence_dir: ctx.evidence_dir.clone(),
        wheelhouse: None,
        candidates,
        pip_config: None,
    };
    let process = probe_process(ctx, !inputs.is_empty())?;
    if let Some(process) = &process {
        obs.pip_config = Some(super::pip_config::observe(
            &process.python,
            &process.cwd,
            process.env.clone(),
            &ctx.log_stem(GATE, "pip-config"),
        ));
    }
    // What each candidate needs, as the SDK reads it; then one download per
    // distinct requirement set.
    let reads = match &process {
        Some(process) => requirements_of(ctx, process, &inputs),
        None => Vec::new(),
    };
    let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
    let mut readable = Vec::new();
    for (input, read) in inputs.into_iter().zip(reads) {
        match read {
            Ok(requirements) => {
                wanted.push((input.folder.clone(), requirements));
                readable.push(input);
            }
            Err(error) => obs.candidates.push(CandidateObservation::Unreadable {
                folder: input.folder.clone(),
                error,
            }),
        }
    }
    let built = build_wheelhouse(ctx, &wanted)?;
    let mut prepare = Vec::new();
    let mut read = Vec::new();
    for (input, (_, requirements)) in readable.into_iter().zip(wanted) {
        let downloaded = wheelhouse_check(&input.folder, &requirements, &built, &ctx.evidence_dir)
            .result
            != crate::evidence::CheckResult::Fail;
        read.push((input.folder.clone(), requirements, downloaded));
        if downloaded {
            prepare.push(input);
        }
    }
    let prepared = prepare_offline(ctx, &mut prepare, &built, process)?;
    let mut prepared = prepared.into_iter();
    for (folder, requirements, downloaded) in read {
        obs.candidates.push(CandidateObservation::Read {
            folder,
            requirements,
            prepared: if downloaded { prepared.next() } else { None },
        });
    }
    obs.wheelhouse = Some(built);
    Ok(obs)
}

/// Each admitted candidate's input to the preparations (its private roots,
/// environment, archive); the others observed as not admitted.
fn admitted_inputs(
    ctx: &RunContext,
) -> Result<(Vec<CandidateObservation>, Vec<DependencyInput>), String> {
    let mut candidates: Vec<CandidateObservation> = Vec::new();
    let mut inputs = Vec::new();
    for record in &ctx.candidates {
        let folder = record.folder.as_str();
        let admitted = record.admission.as_ref().is_some_and(|a| a.accepted);
        let Some(archive) = record.archive.as_ref().filter(|_| admitted) else {
            candidates.push(CandidateObservation::NotAdmitted {
                folder: folder.to_string(),
                admission: record.admission.clone(),
            });
            continue;
        };
        let (home, tmp) = ctx
            .private_roots(GATE, folder)
            .map_err(|e| format!("dependencies: cannot create private roots for {folder}: {e}"))?;
        let root = home
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("dependencies: private root of {folder} has no parent"))?;
        let mut env = ctx.child_env(&home, &tmp);
        wheelhouse::point_at_wheelhouse(&mut env, &ctx.evidence_dir);
        inputs.push(DependencyInput {
            python: ctx.python_for(folder).to_path_buf(),
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
    Ok((candidates, inputs))
}

/// One probe process per kind for every candidate (the requirements,
/// preparation run 1, run 2): the SDK is imported once per kind, not per
/// candidate (about 0.3 s of CPU per interpreter start). Each candidate
/// keeps its own data roots under its own root; the probes' environment
/// is the candidates' but for HOME and TMPDIR (the wheelhouse's index
/// depends on DIR alone), and the SDK's installer gives pip its own
/// HOME and TMPDIR in each candidate's staging folder.
/// `None` when no candidate is to be read.
fn probe_process(ctx: &RunContext, needed: bool) -> Result<Option<ProbeProcess>, String> {
    Ok(if !needed {
        None
    } else {
        let (home, tmp) = ctx
            .private_roots(GATE, PROBE_ROOT)
            .map_err(|e| format!("dependencies: cannot create the probe's private roots: {e}"))?;
        let mut env = ctx.child_env(&home, &tmp);
        wheelhouse::point_at_wheelhouse(&mut env, &ctx.evidence_dir);
        Some(ProbeProcess {
            python: ctx.python.clone(),
            cwd: home.parent().map(Path::to_path_buf).ok_or_else(|| {
                "dependencies: the probe's private root has no parent".to_string()
            })?,
            env,
            log_dir: ctx.evidence_dir.join("logs").join(GATE),
            wrapper: Vec::new(),
        })
    })
}

/// The run's wheelhouse: one download per distinct requirement set in
/// `wanted`, pip sandboxed (the interpreter read-only, only its private
/// root writable).
fn build_wheelhouse(
    ctx: &RunContext,
    wanted: &[(String, Vec<String>)],
) -> Result<crate::evidence::WheelhouseRecord, String> {
    let (home, tmp) = ctx
        .private_roots(GATE, wheelhouse::DIR_NAME)
        .map_err(|e| format!("dependencies: cannot create the wheelhouse's private roots: {e}"))?;
    // pip and any build code it runs are the code under review's
    // dependencies: they run in the sandbox, the interpreter read-only and
    // only pip's private root writable.
    let available = sandbox::availability(&ctx.evidence_dir.join("logs").join("sandbox"));
    let read_only = match available {
        sandbox::Availability::Bwrap(_) => sandbox::interpreter_paths(
            &ctx.python,
            &ctx.evidence_dir,
            &ctx.log_stem(GATE, "interpreter-paths"),
        )
        .map_err(|e| format!("dependencies: cannot read the interpreter's folders: {e}"))?,
        sandbox::Availability::Unavailable(_) => Vec::new(),
    };
    let pip_root = home
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "dependencies: the wheelhouse's private root has no parent".to_string())?;
    wheelhouse::build(
        &wheelhouse::BuildInput {
            python: ctx.python.clone(),
            evidence_dir: ctx.evidence_dir.clone(),
            scratch: tmp.clone(),
            env: ctx.child_env(&home, &tmp),
            log_dir: ctx.log_stem(GATE, wheelhouse::DIR_NAME),
            width: ctx.width(),
            index_url: ctx.package_index_url().to_string(),
            allow_source_builds: ctx.profile.profile.dependencies.allow_source_builds.clone(),
            sandbox: available,
            read_only,
            root: pip_root,
        },
        &wheelhouse::plan(wanted),
    )
    .map_err(|e| format!("dependencies: cannot build the wheelhouse: {e}"))
}

/// The SDK's preparations of every candidate in `prepare`, offline from
/// here: a private network namespace when the machine allows one, the
/// wheelhouse as the only index in any case.
fn prepare_offline(
    ctx: &RunContext,
    prepare: &mut [DependencyInput],
    built: &crate::evidence::WheelhouseRecord,
    process: Option<ProbeProcess>,
) -> Result<Vec<Prepared>, String> {
    let mut prepared: Vec<Prepared> = Vec::new();
    if !prepare.is_empty() {
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
        for input in prepare.iter_mut() {
            input.wrapper = plan.wrapper.clone();
            input.network = network.clone();
            input.wheelhouse_files = built.files.clone();
        }
        let mut process = process.ok_or_else(|| {
            "dependencies: candidates to prepare but no probe process".to_string()
        })?;
        process.wrapper = plan.wrapper.clone();
        prepared = observe_batch(&process, prepare, ctx.width())
            .into_iter()
            .map(|o| match o {
                Some(o) => Prepared::Observed(Box::new(o)),
                None => Prepared::Panicked,
            })
            .collect();
    }
    Ok(prepared)
}
