//! The shared worker's dependencies: installed offline, from the verified
//! wheelhouse, and checked afterwards.
//!
//! In the `shared` profile the SDK 0.7 runtime installs a plugin's
//! requirements with pip inside nsjail (`runtime/plugin/worker_launcher.py`,
//! `build_dependency_prepare_nsjail_args`: `pip install --target
//! /dependency-env *get_pip_index_args() -r /tmp/requirements.txt`, the jail's
//! environment only the SDK's own `--env` values, so no `PIP_*` variable and
//! no `/etc/pip.conf` reaches it). The one lever the SDK reads is
//! `LANGBOT_PLUGIN_PYPI_INDEX_URL` in the runtime's own environment
//! (`runtime/helper/pkgmgr.py`, `get_pip_index_args`: `-i <url>`). Our host
//! sets it to [`jail_index_url`], and our nsjail wrapper mounts DIR/wheelhouse
//! read-only at [`JAIL_WHEELHOUSE`] for that launch only, drops the SDK's
//! `--disable_clone_newnet` (so the jail has no network: nothing but the
//! wheelhouse can be installed) and keeps pip's output (the SDK discards it).
//!
//! Before the host runs, [`observe_wheelhouse`] re-hashes DIR/wheelhouse
//! against the `dependencies` gate's record and [`decide_wheelhouse`] fails
//! the candidate (`dependency-wheelhouse`), without running it, when a file
//! changed or a requirement has no file there. After it ran,
//! [`observe_environment`] reads the environment the runtime published and
//! [`decide_environment`] (`dependency-environment`) checks that pip was
//! confined so and that every installed distribution is, file for file, a
//! wheel of that wheelhouse (`crate::gates::dependencies::wheel_match`).

use super::observe::Launch;
use crate::context::RunContext;
use crate::evidence::{Check, InstalledDistribution, WheelhouseFile};
use crate::gates::dependencies::{installed_distributions, wheel_match};
use crate::wheelhouse::{self, verify};
use pep440_rs::Version;
use pep508_rs::{Requirement, VerbatimUrl, VersionOrUrl};
use serde::Serialize;
use serde_json::json;
use std::path::Path;
use std::str::FromStr;

/// Check: DIR/wheelhouse is the recorded one and holds every requirement.
pub const WHEELHOUSE: &str = "dependency-wheelhouse";
/// Check: the shared runtime's pip installed only wheelhouse wheels, offline.
pub const ENVIRONMENT: &str = "dependency-environment";
/// Where DIR/wheelhouse is mounted (read-only) in the runtime's pip jail.
pub const JAIL_WHEELHOUSE: &str = "/vcc-wheelhouse";

/// `file:///vcc-wheelhouse/simple/`: the index the runtime's pip reads.
pub fn jail_index_url() -> String {
    format!("file://{JAIL_WHEELHOUSE}/{}/", wheelhouse::INDEX_DIR_NAME)
}

/// DIR/wheelhouse as one candidate's shared worker will install from it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WheelhouseObservation {
    /// The requirements the SDK keeps (its own pin dropped), from the
    /// `dependencies` gate's record; `None` when it recorded none.
    pub requirements: Option<Vec<String>>,
    /// Every file the `dependencies` gate recorded; `None`: no wheelhouse.
    pub recorded: Option<Vec<WheelhouseFile>>,
    /// The files of the downloads made for this candidate's requirements.
    pub candidate_files: Vec<String>,
    /// Those downloads that failed: the requirement pip named, else the status.
    pub failed_downloads: Vec<String>,
    /// How DIR/wheelhouse differs from the record ([`verify::drift`]).
    pub drift: Vec<String>,
}

/// Reads the record and re-hashes DIR/wheelhouse for candidate `folder`.
pub fn observe_wheelhouse(ctx: &RunContext, folder: &str) -> WheelhouseObservation {
    let requirements = ctx
        .candidates
        .iter()
        .find(|c| c.folder == folder)
        .and_then(|c| c.dependencies.as_ref())
        .map(|d| d.requirements.clone());
    let Some(record) = &ctx.wheelhouse else {
        return WheelhouseObservation {
            requirements,
            ..WheelhouseObservation::default()
        };
    };
    let mine = record
        .downloads
        .iter()
        .filter(|d| d.candidates.iter().any(|c| c == folder));
    WheelhouseObservation {
        recorded: Some(record.files.clone()),
        candidate_files: mine.clone().flat_map(|d| d.files.clone()).collect(),
        failed_downloads: mine
            .filter(|d| !d.ok)
            .map(|d| match &d.failure {
                Some(f) => f.requirement.clone().unwrap_or_else(|| f.status.clone()),
                None => "no failure recorded".into(),
            })
            .collect(),
        // Nothing is installed without a requirement: nothing to re-hash.
        drift: match &requirements {
            Some(r) if r.is_empty() => Vec::new(),
            _ => verify::drift(&wheelhouse::dir(&ctx.evidence_dir), &record.files),
        },
        requirements,
    }
}

/// The requirements no recorded file can satisfy (PEP 503 name, PEP 440
/// specifier), each with what the wheelhouse holds of its project. A
/// requirement with an environment marker is left to the runtime's pip
/// (its failure is named from pip's output by [`decide_environment`]).
pub fn uncovered(requirements: &[String], files: &[WheelhouseFile]) -> Vec<String> {
    requirements
        .iter()
        .filter_map(|line| {
            let Ok(req) = Requirement::<VerbatimUrl>::from_str(line) else {
                return Some(format!("`{line}` (not a PEP 508 requirement)"));
            };
            if !req.marker.is_true() {
                return None;
            }
            let project = wheelhouse::normalize(req.name.as_ref());
            let versions: Vec<&str> = files
                .iter()
                .filter(|f| f.project == project)
                .map(|f| f.version.as_str())
                .collect();
            let fits = versions.iter().any(|v| match &req.version_or_url {
                None => true,
                Some(VersionOrUrl::VersionSpecifier(spec)) => {
                    Version::from_str(v).is_ok_and(|v| spec.contains(&v))
                }
                Some(VersionOrUrl::Url(_)) => false,
            });
            (!fits).then(|| match versions.as_slice() {
                [] => format!("`{line}` (no file of {project})"),
                v => format!("`{line}` (files of {project}: {})", v.join(", ")),
            })
        })
        .collect()
}

/// `dependency-wheelhouse`: the candidate's shared worker may install from
/// DIR/wheelhouse. Fails (and the gate does not run the candidate) when no
/// record says what the wheelhouse holds, when its bytes differ from the
/// record, or when a requirement has no file there.
pub fn decide_wheelhouse(obs: &WheelhouseObservation, folder: &str) -> Check {
    let c = Some(folder);
    let reqs = obs.requirements.clone().unwrap_or_default();
    let digest = obs.recorded.as_deref().map(verify::digest);
    let observed = json!({
        "requirements": reqs, "wheelhouse_digest": digest, "candidate_files": obs.candidate_files,
        "index_url": jail_index_url(), "mount": format!("DIR/wheelhouse -> {JAIL_WHEELHOUSE} (read-only)"),
        "drift": obs.drift,
    });
    let fail = |found: String, todo: &str| {
        Check::fail(WHEELHOUSE, c, format!(
            "shared-runtime: {folder}: the shared runtime installs the candidate's requirements offline from the run's verified wheelhouse only (DIR/wheelhouse, never the network); found {found}. {todo}"
        ))
        .with_observed(observed.clone())
    };
    let Some(requirements) = &obs.requirements else {
        return fail(
            "no requirements recorded for it by the `dependencies` gate".into(),
            "Make the `dependencies` gate pass for it first",
        );
    };
    if requirements.is_empty() {
        let detail = "no requirement beyond the SDK: the shared runtime installs nothing";
        return Check::pass(WHEELHOUSE, c, detail).with_observed(observed);
    }
    let Some(files) = &obs.recorded else {
        return fail(
            "no wheelhouse recorded by the `dependencies` gate".into(),
            "Make the `dependencies` gate pass first",
        );
    };
    if !obs.drift.is_empty() {
        return fail(format!("DIR/wheelhouse changed since the `dependencies` gate recorded it: {}", obs.drift.join("; ")), "Nothing may write DIR/wheelhouse after the `dependencies` gate: certify again into a fresh evidence directory");
    }
    let mut missing = uncovered(requirements, files);
    missing.extend(
        obs.failed_downloads
            .iter()
            .map(|r| format!("`{r}` (its download failed)")),
    );
    if !missing.is_empty() {
        return fail(format!("requirement(s) of {folder}/requirements.txt the wheelhouse cannot satisfy: {}", missing.join("; ")), "Make the `dependencies` gate download them (read its `wheelhouse` check and DIR/logs/dependencies/wheelhouse/), or correct the requirement");
    }
    let detail = format!(
        "the runtime's pip installs {} offline from DIR/wheelhouse (digest {}, {} file(s), this candidate's: {}), re-hashed against the `dependencies` gate's record and mounted read-only at {JAIL_WHEELHOUSE}",
        requirements.join(", "),
        digest.unwrap_or_default(),
        files.len(),
        obs.candidate_files.join(", ")
    );
    Check::pass(WHEELHOUSE, c, detail).with_observed(observed)
}

/// One dependency environment the runtime published for the archive.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedEnvironment {
    /// Its digest (the folder name under `environments/sha256/`).
    pub digest: String,
    /// Its distributions (dist-info METADATA), or why they could not be read.
    pub installed: Result<Vec<InstalledDistribution>, String>,
    /// The wheelhouse files they came from (PEP 503 name and version).
    pub wheels: Vec<WheelhouseFile>,
    /// Each difference from those wheels ([`wheel_match::compare`]).
    pub problems: Vec<String>,
}

/// What the shared runtime's own dependency preparation did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EnvironmentObservation {
    /// The requirements it had to install.
    pub requirements: Vec<String>,
    /// The digest of the wheelhouse it was given.
    pub wheelhouse_digest: String,
    /// Its pip launches, as the SDK built them and as our wrapper ran them.
    pub launches: Vec<Launch>,
    /// The environments published for this archive.
    pub environments: Vec<PublishedEnvironment>,
}

/// Reads the environments under the runtime's data root in `work`
/// (`data/plugin-runtime/environments/sha256/<digest>/`, the SDK's default
/// store) whose `.ready.json` names `archive_sha256`, and compares each with
/// the wheelhouse at `wheelhouse_dir` (`files`: its record).
pub fn observe_environment(
    work: &Path,
    archive_sha256: &str,
    wheelhouse_dir: &Path,
    files: &[WheelhouseFile],
    requirements: &[String],
    launches: &[Launch],
) -> EnvironmentObservation {
    let root = work.join("data/plugin-runtime/environments/sha256");
    let mut environments = Vec::new();
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let ready = std::fs::read(entry.path().join(".ready.json")).ok();
        let marker: Option<serde_json::Value> = ready.and_then(|b| serde_json::from_slice(&b).ok());
        if marker.as_ref().and_then(|m| m["artifact_digest"].as_str()) != Some(archive_sha256) {
            continue;
        }
        let site = entry.path().join("site-packages");
        let installed = installed_distributions(&site);
        let wheels = installed
            .iter()
            .flatten()
            .flat_map(|d| wheelhouse::files_for(files, &d.name, &d.version))
            .cloned()
            .collect();
        environments.push(PublishedEnvironment {
            digest: entry.file_name().to_string_lossy().into_owned(),
            installed,
            wheels,
            problems: wheel_match::compare(&site, wheelhouse_dir, files),
        });
    }
    EnvironmentObservation {
        requirements: requirements.to_vec(),
        wheelhouse_digest: verify::digest(files),
        launches: launches.to_vec(),
        environments,
    }
}

/// How a pip launch strays from the confinement the gate promises: the
/// wheelhouse index as the only index, the wheelhouse mount, no network.
pub fn launch_problems(l: &Launch) -> Vec<String> {
    let mut out = Vec::new();
    let url = jail_index_url();
    // pip's own arguments: after nsjail's `--` (nsjail has an `-i` of its own).
    let sep = l.args.iter().position(|a| a == "--").map_or(0, |i| i + 1);
    let index_args: Vec<&str> = l.args[sep..]
        .windows(2)
        .filter(|w| {
            matches!(
                w[0].as_str(),
                "-i" | "--index-url" | "--extra-index-url" | "--find-links" | "-f"
            )
        })
        .map(|w| w[1].as_str())
        .collect();
    if index_args != [url.as_str()] {
        out.push(format!(
            "its index arguments were {index_args:?}, expected only -i {url}"
        ));
    }
    let mount = format!(":{JAIL_WHEELHOUSE}");
    if !l
        .args
        .windows(2)
        .any(|w| w[0] == "--bindmount_ro" && w[1].ends_with(&mount))
    {
        out.push(format!(
            "the wheelhouse was not mounted read-only at {JAIL_WHEELHOUSE}"
        ));
    }
    if l.args.iter().any(|a| a == "--disable_clone_newnet") {
        out.push("it kept the host's network (--disable_clone_newnet)".into());
    }
    out
}

/// Why pip failed, named from its output (the SDK discards it; our wrapper
/// keeps it): the requirement it could not find, a hash mismatch, else its
/// last line.
pub fn install_failure(pips: &[&Launch]) -> String {
    let text: String = pips
        .iter()
        .filter_map(|l| l.output.as_deref())
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(req) = wheelhouse::failed_requirement(&text) {
        return format!("pip found no file for requirement `{req}` in the wheelhouse (its only index; the jail has no network)");
    }
    let hashes: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Expected sha256") || l.starts_with("Got"))
        .collect();
    if text.contains("DO NOT MATCH THE HASHES") {
        return format!("pip refused a wheelhouse file whose bytes do not match the sha256 its index publishes ({})", hashes.join(", "));
    }
    match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(last) => format!("the runtime's pip failed: {last}"),
        None if pips.is_empty() => "no pip launch was seen".into(),
        None => "the runtime's pip failed without output".into(),
    }
}

/// Problems with the environments the runtime published: none, several,
/// unreadable, a distribution no wheelhouse wheel accounts for, a file
/// differing from its wheel, or (with no requirement) anything installed.
fn environment_problems(obs: &EnvironmentObservation, pips: &[&Launch]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(env) = obs.environments.first() else {
        if obs.requirements.is_empty() {
            out.push(
                "the runtime published no dependency environment for the archive (not established)"
                    .into(),
            );
        } else {
            out.push(format!(
                "no dependency environment was published: {}",
                install_failure(pips)
            ));
        }
        return out;
    };
    if obs.environments.len() > 1 {
        out.push(format!(
            "{} environments published for one archive, expected one",
            obs.environments.len()
        ));
    }
    match &env.installed {
        Err(e) => out.push(format!("its distributions cannot be read: {e}")),
        Ok(list) if obs.requirements.is_empty() && !list.is_empty() => {
            out.push(format!(
                "{} distribution(s) installed although no requirement is left to install",
                list.len()
            ));
        }
        Ok(list) => out.extend(
            list.iter()
                .filter(|d| wheelhouse::files_for(&env.wheels, &d.name, &d.version).is_empty())
                .map(|d| {
                    format!(
                        "{} {} is installed, and no wheelhouse file has that name and version",
                        d.name, d.version
                    )
                }),
        ),
    }
    out.extend(env.problems.iter().cloned());
    out
}

/// `dependency-environment`: the runtime's own pip, inside nsjail without
/// network, read only DIR/wheelhouse, and the environment it published
/// holds exactly wheelhouse wheels (every file against its wheel's RECORD);
/// with no requirement, no pip ran and the environment is empty.
pub fn decide_environment(obs: &EnvironmentObservation, folder: &str) -> Check {
    let c = Some(folder);
    let pips: Vec<&Launch> = obs.launches.iter().filter(|l| l.kind == "pip").collect();
    let env = obs.environments.first();
    let observed = json!({
        "wheelhouse_digest": obs.wheelhouse_digest, "index_url": jail_index_url(),
        "pip_launches": pips.iter().map(|l| &l.args).collect::<Vec<_>>(),
        "environment": env.map(|e| e.digest.clone()),
        "installed": env.map(|e| json!({"distributions": e.installed.as_ref().ok(), "wheels": e.wheels})),
    });
    let mut problems: Vec<String> = pips
        .iter()
        .enumerate()
        .flat_map(|(i, l)| {
            launch_problems(l)
                .into_iter()
                .map(move |p| format!("pip launch {}: {p}", i + 1))
        })
        .collect();
    match (obs.requirements.is_empty(), pips.is_empty()) {
        (true, false) => {
            problems.push("the runtime ran pip although no requirement is left to install".into())
        }
        (false, true) => problems
            .push("our nsjail wrapper saw no pip launch of the runtime (not established)".into()),
        _ => {}
    }
    problems.extend(environment_problems(obs, &pips));
    if !problems.is_empty() {
        return Check::fail(ENVIRONMENT, c, format!(
            "shared-runtime: {folder}: expected the shared runtime's own pip (in nsjail, no network) to install [{}] from DIR/wheelhouse only (digest {}), every installed file a wheelhouse wheel's; found: {}. Read the `launches` (pip's output) in DIR/logs/shared-runtime/{folder}.host-result.json; a requirement the wheelhouse lacks must be downloaded by the `dependencies` gate (or corrected in {folder}/requirements.txt)",
            obs.requirements.join(", "), obs.wheelhouse_digest, problems.join("; ")
        )).with_observed(observed);
    }
    let wheels: Vec<String> = env
        .map(|e| {
            e.wheels
                .iter()
                .map(|w| format!("{} (sha256 {})", w.name, w.sha256))
                .collect()
        })
        .unwrap_or_default();
    let detail = if obs.requirements.is_empty() {
        "no requirement beyond the SDK: the runtime ran no pip and its dependency environment is empty".to_string()
    } else {
        format!(
            "the runtime's own pip, in nsjail without network, installed [{}] from DIR/wheelhouse (digest {}, read-only at {JAIL_WHEELHOUSE}, index {}): {}; every installed file matches its wheel's RECORD",
            obs.requirements.join(", "), obs.wheelhouse_digest, jail_index_url(), wheels.join(", ")
        )
    };
    Check::pass(ENVIRONMENT, c, detail).with_observed(observed)
}

#[cfg(test)]
mod tests;
