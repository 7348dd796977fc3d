//! The `dependencies` gate: the SDK prepares each admitted archive's
//! dependency environment, twice, as the LangBot host does.
//!
//! Per candidate, the embedded probe (`src/python/dependencies_probe.py`)
//! prepares twice, in separate interpreter processes, against one private
//! runtime data root (`DIR/roots/dependencies/<folder>/data`). Each run
//! admits the exact archive (`PluginArtifactStore.install_package`) and calls
//! `PluginWorkerLauncher.prepare_dependency_environment` with a
//! `PluginDependencyEnvironmentStore` on that root, in the `oss_dev` runtime
//! profile: the first run prepares and publishes the environment, the second
//! must read back the same one. One probe process serves every candidate of
//! a run (the SDK imported once; logs `DIR/logs/dependencies/run-1` and
//! `run-2`, working directory and HOME/TMPDIR under
//! `DIR/roots/dependencies/.probe`); the second starts after the first ended,
//! for the candidates whose first run succeeded. A candidate the probe
//! could not observe fails its own `prepare` only.
//!
//! Before that, the gate builds the run's wheelhouse ([`crate::wheelhouse`])
//! from the requirements the SDK keeps after dropping its own pin. Those
//! are `admission`'s reading, handed on (its probe ran the SDK's
//! `_read_requirements` on the artifact the SDK's store installed from the
//! same archive: [`crate::context::RunContext::admitted_requirements`]), so
//! the SDK is not imported again to read them; a candidate admission did
//! not hand on is read by a probe process of this gate (mode
//! `requirements`, on its own scratch data root, log
//! `DIR/logs/dependencies/requirements`). One `pip wheel`
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
use crate::wheelhouse;
use serde_json::json;
use std::path::Path;
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

/// The facts for `candidates[].dependencies`, when every run succeeded.
pub fn record(obs: &Observation) -> Option<DependencyRecord> {
    let env = obs.environment.as_ref()?;
    let first = obs.runs.first()?;
    let first_env = first.environment.as_ref()?;
    let installed = env.installed.clone().unwrap_or_default();
    Some(DependencyRecord {
        digests: digests(obs),
        environment: Some(env.env_rel.clone()),
        runtime_profile: first.runtime_profile.clone(),
        runtime_fingerprint: Some(first_env.runtime_fingerprint.clone()),
        requirements_digest: Some(first_env.requirements_digest.clone()),
        requirements: first.requirements.clone().unwrap_or_default(),
        nothing_installed: env.installed.as_ref().is_some_and(|i| i.is_empty()),
        wheelhouse_files: wheelhouse_sources(&installed, &obs.wheelhouse_files).0,
        installed,
    })
}

fn digests(obs: &Observation) -> Vec<String> {
    obs.runs
        .iter()
        .filter_map(|r| r.environment.as_ref())
        .map(|e| e.digest.clone())
        .collect()
}

/// The checks of the whole run, from its observation: pure. In the order
/// the gate learns them: candidates not admitted, requirements not read,
/// each wheelhouse download, then each candidate's preparations.
pub fn decide_all(obs: &RunObservation) -> Vec<Check> {
    let mut checks = Vec::new();
    for c in &obs.candidates {
        if let CandidateObservation::NotAdmitted { folder, admission } = c {
            checks.push(not_admitted(folder, admission.as_ref()));
        }
    }
    for c in &obs.candidates {
        if let CandidateObservation::Unreadable { folder, error } = c {
            checks.push(Check::fail("wheelhouse", Some(folder), error.clone()));
        }
    }
    if let Some(observed) = &obs.pip_config {
        checks.push(pip_config::check(observed));
    }
    if let Some(c) = obs.wheelhouse.as_ref().and_then(pip_sandbox_check) {
        checks.push(c);
    }
    if let Some(c) = obs.wheelhouse.as_ref().and_then(pip_left_running_check) {
        checks.push(c);
    }
    for c in &obs.candidates {
        if let (
            CandidateObservation::Read {
                folder,
                requirements,
                ..
            },
            Some(built),
        ) = (c, &obs.wheelhouse)
        {
            checks.push(wheelhouse_check(
                folder,
                requirements,
                built,
                &obs.evidence_dir,
            ));
        }
    }
    for c in &obs.candidates {
        match c {
            CandidateObservation::Read {
                prepared: Some(Prepared::Observed(o)),
                ..
            } => checks.extend(decide(o)),
            CandidateObservation::Read {
                folder,
                prepared: Some(Prepared::Panicked),
                ..
            } => checks.push(Check::fail(
                "prepare",
                Some(folder),
                "not observed: the preparation thread panicked; this is a harness defect: report it",
            )),
            _ => {}
        }
    }
    checks
}

/// `prepare` when the preparations stopped: the SDK refused the
/// candidate's requirements (the host's `dependency_prepare_failed`), or the
/// probe could not observe them.
fn stopped_check(folder: &str, archive_rel: &str, stop: &StoppedRun) -> Check {
    let run = stop.run;
    match (&stop.sdk_error, &stop.probe_error) {
        (Some(why), _) => Check::fail(
            "prepare",
            Some(folder),
            format!(
                "{archive_rel}: expected the SDK's dependency-environment preparation (run {run} \
                 of {RUNS}, runtime profile {}) to succeed, found it refused: {why}; the host \
                 would fail this installation with `dependency_prepare_failed`: fix the \
                 candidate's requirements.txt",
                stop.runtime_profile.as_deref().unwrap_or("unknown")
            ),
        )
        .with_observed(json!({ "run": run, "sdk_error": why })),
        (None, e) => Check::fail(
            "prepare",
            Some(folder),
            format!(
                "not observed: run {run} of {RUNS}: {}",
                e.as_deref().unwrap_or("no reason recorded")
            ),
        ),
    }
}

/// `prepare`: the SDK prepared the environment every run without error,
/// its installer reading only the run's wheelhouse.
fn prepare_check(obs: &Observation, first_report: &ProbeReport) -> Check {
    let folder = obs.folder.as_str();
    let archive_rel = obs.archive.as_str();
    let log_dir = obs.log_dir.as_str();
    let index_args: Vec<&Vec<String>> = obs.runs.iter().map(|r| &r.pip_index_args).collect();
    let prepare_observed = json!({
        "pip_index_args": first_report.pip_index_args, "network": obs.network,
        "runs": obs.runs.len(),
    });
    match &obs.expected_index {
        Some(expected) if index_args.iter().all(|a| *a == expected) => Check::pass(
            "prepare",
            Some(folder),
            format!(
                "the SDK prepared the dependency environment of {archive_rel} {RUNS} times \
                 (runtime profile {}), in separate interpreters on one data root, without error; \
                 its installer's index arguments were `{}` (the run's wheelhouse only), network: {}",
                first_report.runtime_profile,
                expected.join(" "),
                obs.network
            ),
        ),
        _ => Check::fail(
            "prepare",
            Some(folder),
            format!(
                "{archive_rel}: expected the SDK's installer to read only the run's wheelhouse \
                 (index arguments {:?}, from {} in the probe's environment), found it built \
                 {index_args:?}; the preparation could have reached another index: this is a \
                 harness defect, report it with the probe logs under {log_dir}",
                obs.expected_index.clone().unwrap_or_default(),
                wheelhouse::INDEX_URL_ENV,
            ),
        ),
    }
    .with_observed(prepare_observed)
}

/// The checks of one candidate's preparations, from its observation: pure.
pub fn decide(obs: &Observation) -> Vec<Check> {
    let folder = obs.folder.as_str();
    let archive_rel = obs.archive.as_str();
    if let Some(stop) = &obs.stopped {
        return vec![stopped_check(folder, archive_rel, stop)];
    }
    let (Some(env), Some(first_report)) = (&obs.environment, obs.runs.first()) else {
        return vec![Check::fail(
            "prepare",
            Some(folder),
            "not observed: no preparation reported an environment; this is a harness defect: \
             report it",
        )];
    };
    let Some(first) = first_report.environment.as_ref() else {
        return Vec::new();
    };
    let envs: Vec<&ProbeEnvironment> = obs
        .runs
        .iter()
        .filter_map(|r| r.environment.as_ref())
        .collect();
    let digests = digests(obs);
    let log_dir = obs.log_dir.as_str();
    let mut checks = vec![prepare_check(obs, first_report)];

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
                     identity is not stable here: report it with the probe logs under {log_dir}"
                )
            },
        )
        .with_observed(json!({ "digests": digests })),
    );

    checks.push(ready_check(obs, env, &envs, first));
    checks.push(shadow_check(folder, env));
    checks.push(installed_check(obs, env, first_report));
    checks
}

/// Whether the environment directory itself could not be found: every later
/// reading of it is then a consequence of the `ready` finding.
fn environment_missing(env: &EnvironmentObservation) -> bool {
    env.modes.first().is_some_and(|m| m.error.is_some())
}

/// What the runs reported that is not ready: an environment not read back
/// ready, at another path or for another artifact, and a second run that
/// did not find the first's environment published.
fn run_problems(
    obs: &Observation,
    env: &EnvironmentObservation,
    envs: &[&ProbeEnvironment],
    first: &ProbeEnvironment,
) -> Vec<String> {
    let mut not_ready = Vec::new();
    for (i, e) in envs.iter().enumerate() {
        if !e.ready_readback {
            not_ready.push(format!(
                "run {} did not read the environment back ready through get_ready",
                i + 1
            ));
        }
        // A run with another digest is at another path: same-digest names it.
        if e.digest == first.digest
            && (e.root_path != env.expected_root || e.site_packages_path != env.site_packages)
        {
            not_ready.push(format!(
                "run {} reported the environment at {}, expected {}",
                i + 1,
                e.root_path,
                env.expected_root
            ));
        }
        if e.artifact_digest != obs.archive_sha256 {
            not_ready.push(format!(
                "run {} prepared it for artifact {}, expected the archive's {}",
                i + 1,
                e.artifact_digest,
                obs.archive_sha256
            ));
        }
    }
    if let Some(second) = obs.runs.get(1) {
        if !second.environments_before.contains(&first.digest) {
            not_ready.push(format!(
                "the second run did not find the first run's environment {} published before it \
                 started (found {:?})",
                first.digest, second.environments_before
            ));
        }
    }
    not_ready
}

/// What the published environment shows that is not ready: its ready
/// marker unreadable, naming another digest or artifact, or unlike what the
/// SDK reported; a folder that is writable or whose mode was not read.
fn published_problems(
    obs: &Observation,
    env: &EnvironmentObservation,
    envs: &[&ProbeEnvironment],
    first: &ProbeEnvironment,
) -> Vec<String> {
    let mut not_ready = Vec::new();
    match &env.marker {
        None => not_ready.push(format!(
            "{}: unreadable ({})",
            env.marker_rel,
            env.marker_error.as_deref().unwrap_or("no reason recorded")
        )),
        Some(marker) => {
            if marker.get("digest").and_then(|v| v.as_str()) != Some(first.digest.as_str())
                || marker.get("artifact_digest").and_then(|v| v.as_str())
                    != Some(obs.archive_sha256.as_str())
            {
                not_ready.push(format!(
                    "{} names digest {} and artifact {}, expected {} and {}",
                    env.marker_rel,
                    marker["digest"],
                    marker["artifact_digest"],
                    first.digest,
                    obs.archive_sha256
                ));
            }
            if envs.iter().any(|e| e.ready_marker != *marker) {
                not_ready.push("the SDK-reported ready marker differs from the file".into());
            }
        }
    }
    for m in &env.modes {
        match (m.mode, &m.error) {
            (Some(mode), _) if mode & 0o222 == 0 => {}
            (Some(mode), _) => not_ready.push(format!(
                "{} is writable (mode {mode:o}); the SDK publishes environments read-only",
                m.path
            )),
            (None, e) => not_ready.push(format!(
                "{}: {}",
                m.path,
                e.as_deref().unwrap_or("no mode recorded")
            )),
        }
    }
    not_ready
}

fn ready_check(
    obs: &Observation,
    env: &EnvironmentObservation,
    envs: &[&ProbeEnvironment],
    first: &ProbeEnvironment,
) -> Check {
    let folder = obs.folder.as_str();
    let mut not_ready = run_problems(obs, env, envs, first);
    not_ready.extend(published_problems(obs, env, envs, first));
    let observed = json!({
        "environment": env.env_rel, "ready_marker": first.ready_marker,
        "modes": env.modes,
    });
    if not_ready.is_empty() {
        Check::pass(
            "ready",
            Some(folder),
            format!(
                "{} reads back ready: through the SDK's get_ready in both runs (the second found \
                 the first's environment published), and from its read-only {READY_MARKER} \
                 naming this archive",
                env.env_rel
            ),
        )
    } else {
        Check::fail(
            "ready",
            Some(folder),
            format!(
                "{}: expected a published, read-only environment that reads back ready for this \
                 archive; found: {}; a worker would not start on it: read the probe logs under {}",
                env.env_rel,
                not_ready.join("; "),
                obs.log_dir
            ),
        )
    }
    .with_observed(observed)
}

fn shadow_check(folder: &str, env: &EnvironmentObservation) -> Check {
    let env_rel = env.env_rel.as_str();
    match &env.shadow {
        None => {
            let c = Check::fail(
                "no-shadow-sdk",
                Some(folder),
                format!(
                    "not observed: {}",
                    env.shadow_error.as_deref().unwrap_or("the environment was not walked")
                ),
            );
            if environment_missing(env) {
                c.consequence_of("ready")
            } else {
                c
            }
        }
        Some(found) if found.is_empty() => Check::pass(
            "no-shadow-sdk",
            Some(folder),
            format!(
                "{env_rel} holds nothing named langbot_plugin*: workers import the runtime's own SDK"
            ),
        )
        .with_observed(json!({ "environment": env_rel, "found": found })),
        Some(found) => Check::fail(
            "no-shadow-sdk",
            Some(folder),
            format!(
                "{env_rel}: expected no copy of the SDK in the dependency environment, found {}; \
                 on a worker's sys.path it can shadow the runtime's SDK: remove whatever \
                 requirement pulls it in",
                found
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_observed(json!({ "environment": env_rel, "found": found })),
    }
}

/// `installed` when site-packages was not read: a consequence of `ready`
/// when the environment itself is missing.
fn installed_unread_check(folder: &str, env: &EnvironmentObservation) -> Check {
    let c = Check::fail(
        "installed",
        Some(folder),
        format!(
            "not observed: {}",
            env.installed_error
                .as_deref()
                .unwrap_or("site-packages was not read")
        ),
    );
    if environment_missing(env) {
        c.consequence_of("ready")
    } else {
        c
    }
}

/// `installed` when distributions (`foreign`) were installed from no file of
/// the run's wheelhouse.
fn foreign_check(obs: &Observation, env_rel: &str, foreign: &[String]) -> Check {
    Check::fail(
        "installed",
        Some(obs.folder.as_str()),
        format!(
            "{env_rel}: expected every installed distribution to be a file of the run's \
             wheelhouse (DIR/{}), found {} with no wheelhouse file of that name and version; \
             the preparation installed from somewhere else: report it with the probe logs \
             under {}",
            wheelhouse::DIR_NAME,
            foreign.join(", "),
            obs.log_dir
        ),
    )
}

fn installed_check(
    obs: &Observation,
    env: &EnvironmentObservation,
    first_report: &ProbeReport,
) -> Check {
    let folder = obs.folder.as_str();
    let env_rel = env.env_rel.as_str();
    let Some(installed) = &env.installed else {
        return installed_unread_check(folder, env);
    };
    let requirements = first_report.requirements.clone().unwrap_or_default();
    let names: Vec<String> = installed.iter().map(|d| normalise(&d.name)).collect();
    let wanted = first_report.requirement_names.clone().unwrap_or_default();
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|w| !names.contains(&normalise(w)))
        .collect();
    let listed = installed
        .iter()
        .map(|d| format!("{} {}", d.name, d.version))
        .collect::<Vec<_>>()
        .join(", ");
    let (from, foreign) = wheelhouse_sources(installed, &obs.wheelhouse_files);
    let observed = json!({
        "requirements": requirements, "installed": installed, "wheelhouse_files": from,
        "wheel_mismatches": env.wheel_mismatches,
    });
    if foreign.is_empty() && !env.wheel_mismatches.is_empty() {
        wheel_mismatch_check(obs, env)
    } else if !foreign.is_empty() {
        foreign_check(obs, env_rel, &foreign)
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
                "{env_rel}: expected nothing installed, as the requirements name nothing beyond \
                 the SDK, found {listed}; the environment holds what the archive did not ask \
                 for: report it with the probe logs under {}",
                obs.log_dir
            ),
        )
    } else if !missing.is_empty() {
        Check::fail(
            "installed",
            Some(folder),
            format!(
                "{env_rel}: expected a distribution for every applicable requirement {wanted:?}, \
                 found none for {missing:?} (installed: {listed}); fix the requirement names"
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

/// The failing `installed` check of an environment whose distributions all
/// have a wheelhouse file of their name and version, but whose files are not
/// that wheel's ([`wheel_match::compare`]).
fn wheel_mismatch_check(obs: &Observation, env: &EnvironmentObservation) -> Check {
    let found = &env.wheel_mismatches;
    Check::fail(
        "installed",
        Some(obs.folder.as_str()),
        format!(
            "{}: expected every installed distribution to be a file of the run's wheelhouse (DIR/{}), installed as that wheel ships it (its RECORD's rows and files), found:\n  {}\nthe preparation \
             installed from somewhere else (a pip configuration file or a requirements file naming another \
             source, see pip-config): remove that configuration and certify again; the probe logs are under {}",
            env.env_rel,
            wheelhouse::DIR_NAME,
            found.join("\n  "),
            obs.log_dir
        ),
    )
}

/// The wheelhouse files of one download, each with its size, digest and
/// where it came from (downloaded with the published sha256, or built here
/// from an allowed sdist).
fn files_named(
    files: &[&WheelhouseFile],
    download: &crate::evidence::WheelhouseDownload,
) -> Vec<String> {
    files
        .iter()
        .map(|f| {
            let from = match download.sources.iter().find(|s| s.file == f.name) {
                Some(s) if s.provenance == crate::evidence::Provenance::BuiltFromSdist => {
                    format!(
                        "built here from the sdist {} (published sha256 {}; build log {}.stdout)",
                        s.url,
                        s.published_sha256,
                        s.build_log.as_deref().unwrap_or("?")
                    )
                }
                Some(s) => format!("downloaded from {}, the published sha256", s.url),
                None => "no source recorded".into(),
            };
            format!("{} ({} bytes, sha256 {}, {from})", f.name, f.size, f.sha256)
        })
        .collect()
}

/// `wheelhouse` when the download failed: a requirement published only as
/// an sdist the profile does not allow to build, or pip's own failure with
/// its last lines (`shared`: the download's other candidates, as a clause).
fn download_failed_check(
    folder: &str,
    requirements: &[String],
    record: &WheelhouseRecord,
    download: &crate::evidence::WheelhouseDownload,
    evidence_dir: &Path,
    shared: &str,
) -> Check {
    let log = evidence_dir.join(&download.log);
    let failure = download
        .failure
        .clone()
        .unwrap_or_else(|| crate::evidence::WheelhouseFailure {
            status: "failed without a recorded reason".into(),
            requirement: None,
            pip_tail: String::new(),
            sdists: Vec::new(),
        });
    if let (Some(r), false) = (&failure.requirement, failure.sdists.is_empty()) {
        return Check::fail(
            "wheelhouse",
            Some(folder),
            format!(
                "expected every requirement of {folder} and everything it depends on to be published on {} as a \
                 wheel, found `{r}` has none, only the sdist {}{shared}: building it would run its build code \
                 here, so it is refused (nothing was built); publish a wheel, pick a version that has one, or, \
                 to build it here (in the sandbox, recorded as built-from-sdist), list the project in the \
                 profile: `[dependencies] allow_source_builds = [\"{}\"]`; full log: {}.stdout",
                record.upstream_index,
                failure.sdists.join(", "),
                requirement_name(r),
                evidence_dir.join(&download.log).display(),
            ),
        );
    }
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
}

/// `wheelhouse` when downloaded files (`problems`) are neither what the
/// index published nor wheels built here from an allowed sdist.
fn unverified_check(
    folder: &str,
    requirements: &[String],
    record: &WheelhouseRecord,
    problems: &[String],
) -> Check {
    Check::fail(
        "wheelhouse",
        Some(folder),
        format!(
            "expected every file downloaded for {folder}'s requirements {requirements:?} to be the one the \
             index {} published (re-hashed here), or a wheel built here from an sdist the profile allows, \
             found: {}; do not trust DIR/{}: run again, and if it repeats, compare the files with the index",
            record.upstream_index,
            problems.join("; "),
            wheelhouse::DIR_NAME,
        ),
    )
}

/// `, one download shared with [..]` naming the download's other
/// candidates than `folder`, or empty when it is the candidate's own.
fn shared_with(download: &crate::evidence::WheelhouseDownload, folder: &str) -> String {
    let others: Vec<&String> = download
        .candidates
        .iter()
        .filter(|c| *c != folder)
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!(", one download shared with {others:?}")
    }
}

/// `wheelhouse` when the download succeeded and every file verified:
/// each file named with its size, digest and source (`shared`: the
/// download's other candidates, as a clause; `index`: the local index later
/// installs read).
fn downloaded_check(
    folder: &str,
    requirements: &[String],
    record: &WheelhouseRecord,
    download: &crate::evidence::WheelhouseDownload,
    files: &[&WheelhouseFile],
    shared: &str,
    index: &str,
) -> Check {
    let listed = files_named(files, download);
    Check::pass(
        "wheelhouse",
        Some(folder),
        format!(
            "requirements {requirements:?} resolved, with everything they depend on, to {} file(s) that \
             pip downloaded once from {} into DIR/{} in {} ms{shared}, each verified against the index's \
             published sha256 or built from an allowed sdist: {}; later installs read only {index}",
            files.len(),
            record.upstream_index,
            wheelhouse::DIR_NAME,
            download.duration_ms,
            listed.join(", ")
        ),
    )
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
    let shared = shared_with(download, folder);
    let problems = if download.ok {
        wheelhouse::provenance::verify(&files, &download.sources, &record.allow_source_builds)
    } else {
        Vec::new()
    };
    if download.ok && !problems.is_empty() {
        return unverified_check(folder, requirements, record, &problems).with_observed(observed);
    }
    if download.ok {
        return downloaded_check(
            folder,
            requirements,
            record,
            download,
            &files,
            &shared,
            &index,
        )
        .with_observed(observed);
    }
    download_failed_check(
        folder,
        requirements,
        record,
        download,
        evidence_dir,
        &shared,
    )
    .with_observed(observed)
}

/// The project name a PEP 508 requirement string starts with.
fn requirement_name(requirement: &str) -> &str {
    let end = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(requirement.len());
    &requirement[..end]
}

/// The `pip-sandbox` check: the sandbox the wheelhouse's pip steps ran in
/// (the first download's; every download runs in the same kind), none when
/// nothing was downloaded.
pub fn pip_sandbox_check(record: &WheelhouseRecord) -> Option<Check> {
    let sandbox = record.downloads.iter().find_map(|d| d.sandbox.as_ref())?;
    Some(crate::isolation::sandbox::check(
        "pip-sandbox",
        None,
        "the wheelhouse's pip (its resolution and download, and any sdist build code)",
        sandbox,
    ))
}

/// The `pip-left-running` check: what the wheelhouse's sandboxed pip steps
/// left running when pip exited (build code that starts a daemon), the
/// worst step's (a failure naming the processes, else a warning when one
/// was not surveyed, else a pass); none when no step was surveyed.
pub fn pip_left_running_check(record: &WheelhouseRecord) -> Option<Check> {
    use crate::evidence::CheckResult;
    use crate::isolation::left_running;
    use crate::profile::LeftRunningPolicy as Policy;
    let severity = |c: &Check| match c.result {
        CheckResult::Fail => 2,
        CheckResult::Warn => 1,
        _ => 0,
    };
    record
        .downloads
        .iter()
        .enumerate()
        .flat_map(|(n, d)| {
            d.left_running.iter().map(move |(step, found)| {
                left_running::check(
                    "pip-left-running",
                    None,
                    &format!("the wheelhouse's pip {step} step of download {}", n + 1),
                    found,
                    Policy::Fail,
                )
            })
        })
        .reduce(|worst, c| {
            if severity(&c) > severity(&worst) {
                c
            } else {
                worst
            }
        })
}

/// The `prepare` check of a candidate without an admitted archive: what to
/// do depends on whether admission ran and refused it, or never ran.
pub fn not_admitted(folder: &str, admission: Option<&crate::evidence::AdmissionRecord>) -> Check {
    match admission {
        Some(a) => Check::fail(
            "prepare",
            Some(folder),
            format!(
                "not observed: the admission gate did not admit this archive ({}), so there is \
                 nothing to prepare; fix what admission names, rebuild, and run again",
                a.refusal
                    .as_deref()
                    .unwrap_or("see its artifact-store check")
            ),
        )
        .with_observed(json!({ "admitted": false, "refusal": a.refusal })),
        None => Check::fail(
            "prepare",
            Some(folder),
            "not observed: expected an archive the admission gate admitted, found no admission \
             recorded; run the admission gate first",
        ),
    }
}

impl super::Gate for Dependencies {
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let obs = observe::observe_all(ctx)?;
        if let Some(built) = obs.wheelhouse.clone() {
            out.set(move |ctx| ctx.wheelhouse = Some(built));
        }
        for c in &obs.candidates {
            if let CandidateObservation::Read {
                prepared: Some(Prepared::Observed(o)),
                ..
            } = c
            {
                if let Some(r) = record(o) {
                    let folder = o.folder.clone();
                    out.set(move |ctx| {
                        if let Some(rec) = ctx.record_mut(&folder) {
                            rec.dependencies = Some(r);
                        }
                    });
                }
            }
        }
        Ok(decide_all(&obs))
    }
}

mod observe;
pub mod pip_config;
#[cfg(test)]
mod tests;
pub mod wheel_match;

use observe::normalise;
pub use observe::{
    installed_distributions, observe, observe_batch, prepare_batch, prepare_twice,
    read_requirements, read_requirements_batch, shadow_copies, CandidateObservation,
    DependencyInput, DirMode, EnvironmentObservation, Observation, Prepared, ProbeProcess,
    RunObservation, StoppedRun,
};
pub(crate) use observe::{ProbeEnvironment, ProbeReport};
