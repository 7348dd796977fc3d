//! The `admission` gate: the genuine SDK admits each exact archive as the
//! LangBot host does.
//!
//! For every candidate archive, one embedded probe process
//! (`src/python/admission_probe.py`, the SDK imported once for all of them,
//! log `DIR/logs/admission/probe`) hands the archive's bytes to the SDK's
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
//!   the SDK does), and the SDK's decision agrees; where the profile's
//!   `[admission] require_sdk_pin` asks for one (the built-in profile does),
//!   there is one; without it none is needed, as the SDK admits;
//! - `requirement-lines`: no line is one the SDK refuses (pip options, invalid
//!   requirements), and the SDK's verdict on every line agrees with ours.
//!
//! The gate is observe + decide: [`observe`](observe::observe) runs the probe
//! and reads the store's marker, both extractions and `requirements.txt` into
//! an [`Observation`]; [`decide`] is a pure function from it to the checks.

mod observe;
#[cfg(test)]
mod tests;

pub use observe::{
    admit, admit_batch, analyse_requirements, compare_trees, python_splitlines, AdmissionInput,
    AdmissionOutcome, Candidate, LineKind, Observation, ProbeProcess, RequirementLine,
    RequirementsObservation, StoreObservation, TreeDifferences,
};

use crate::context::{RunContext, Updates};
use crate::evidence::{AdmissionRecord, Check, RequirementDecision, SdkRequirementRecord};
pub use crate::profile::AdmissionOptions;
use observe::{ProbeArtifact, ProbeReport, SdkLine, SdkVerdict};
use serde_json::json;

/// Gate id.
pub const GATE: &str = "admission";

/// The SDK's distribution name (PEP 503 normalised), which the runtime
/// provides and drops from every plugin's install list
/// (`_RUNTIME_PROVIDED_DISTRIBUTIONS` in the SDK's `dependency_environment`).
pub const SDK_DISTRIBUTION: &str = "langbot-plugin";

/// Most differences listed in a failing `extraction-agrees` detail.
const LISTED_DIFFERENCES: usize = 20;

/// The `admission` gate.
pub struct Admission;

/// The facts for `candidates[].admission`, when the probe reported.
pub fn record(obs: &Observation) -> Option<AdmissionRecord> {
    let report = obs.report.as_ref()?;
    Some(AdmissionRecord {
        accepted: report.artifact.is_some(),
        refusal: report.artifact_error.clone(),
        marker: obs.store.as_ref().and_then(|s| s.marker.clone()),
        code_dir: obs.store.as_ref().map(|s| s.code_dir.clone()),
        installed_sdk_version: obs.sdk_version.clone(),
        sdk_requirements: sdk_lines(obs, report)
            .into_iter()
            .map(|(o, s, decision)| SdkRequirementRecord {
                line: o.number as u64,
                requirement: o.text.clone(),
                decision,
                sdk_decision: s.decision(),
            })
            .collect(),
    })
}

/// What the SDK keeps of an accepted archive's `requirements.txt` for its
/// installer (`Ok`: the `kept` list of its `_read_requirements` on the
/// installed artifact), or why it keeps nothing (`Err`: its refusal, or its
/// check crashing), for the `dependencies` gate
/// ([`RunContext::admitted_requirements`]). `None` when the store refused
/// the archive or the probe did not report.
pub fn kept_requirements(obs: &Observation) -> Option<Result<Vec<String>, String>> {
    let report = obs.report.as_ref()?;
    report.artifact.as_ref()?;
    let verdict = report.artifact_requirements.as_ref()?;
    Some(if verdict.accepted {
        Ok(verdict.kept.clone())
    } else {
        Err(verdict
            .error
            .clone()
            .unwrap_or_else(|| "no requirements and no error reported".into()))
    })
}

/// Whether the harness and the SDK split the file into the same lines.
fn split_agrees(obs: &Observation, report: &ProbeReport) -> bool {
    let ours = &obs.requirements.lines;
    ours.len() == report.lines.len()
        && ours
            .iter()
            .zip(&report.lines)
            .all(|(o, s)| o.number == s.number && o.text == s.text)
}

/// The `langbot-plugin` lines, paired with the SDK's reading, when both
/// readings split the file alike.
fn sdk_lines<'a>(
    obs: &'a Observation,
    report: &'a ProbeReport,
) -> Vec<(&'a RequirementLine, &'a SdkLine, RequirementDecision)> {
    if obs.requirements.unreadable.is_some() || !split_agrees(obs, report) {
        return Vec::new();
    }
    obs.requirements
        .lines
        .iter()
        .zip(&report.lines)
        .filter_map(|(o, s)| match o.kind {
            LineKind::Sdk(d) => Some((o, s, d)),
            _ => None,
        })
        .collect()
}

/// The checks of one [`Candidate`]: [`decide`] for an observed one, a
/// failing `artifact-store` naming what is missing otherwise.
pub fn decide_candidate(c: &Candidate, policy: AdmissionOptions) -> Vec<Check> {
    match c {
        Candidate::NoArchive { folder } => vec![Check::fail(
            "artifact-store",
            Some(folder),
            "not observed: expected an archive recorded by archive-members, found none; \
             run lbp-build and archive-members first",
        )],
        Candidate::NoExtraction { folder, archive } => vec![Check::fail(
            "artifact-store",
            Some(folder),
            format!(
                "not observed: expected archive-members to record the exact extraction of \
                 {archive}, found none; run archive-members first"
            ),
        )],
        Candidate::Panicked { folder } => vec![Check::fail(
            "artifact-store",
            Some(folder),
            "not observed: the admission thread panicked; this is a harness defect: report it",
        )],
        Candidate::Observed(obs) => decide(obs, policy),
    }
}

/// The checks of one candidate, from its observation and the profile's
/// `[admission]` policy alone: pure.
pub fn decide(obs: &Observation, policy: AdmissionOptions) -> Vec<Check> {
    let folder = obs.folder.as_str();
    let Some(report) = &obs.report else {
        return vec![Check::fail(
            "artifact-store",
            Some(folder),
            format!(
                "not observed: the admission probe did not report for {}: {}",
                obs.archive_path,
                obs.probe_error.as_deref().unwrap_or("no reason recorded")
            ),
        )];
    };
    let mut checks = Vec::new();
    match (&report.artifact, &obs.store) {
        (Some(artifact), Some(store)) => {
            checks.push(
                Check::pass(
                    "artifact-store",
                    Some(folder),
                    format!(
                        "the SDK's PluginArtifactStore.install_package accepted the exact bytes of \
                         {} (sha256 {}) as {}/{} {} into {}",
                        obs.archive,
                        obs.archive_sha256,
                        artifact.plugin_author,
                        artifact.plugin_name,
                        artifact.plugin_version,
                        store.code_dir
                    ),
                )
                .with_observed(json!({
                    "archive": obs.archive,
                    "digest": artifact.digest,
                    "code_dir": store.code_dir,
                    "plugin": {
                        "author": artifact.plugin_author,
                        "name": artifact.plugin_name,
                        "version": artifact.plugin_version,
                    },
                })),
            );
            checks.push(marker_check(obs, artifact, store));
            checks.push(extraction_check(obs, artifact, store));
        }
        _ => {
            let why = report
                .artifact_error
                .clone()
                .unwrap_or_else(|| "no artifact and no error reported".into());
            checks.push(
                Check::fail(
                    "artifact-store",
                    Some(folder),
                    format!(
                        "{}: expected the SDK's PluginArtifactStore.install_package to accept the \
                         exact archive bytes (sha256 {}), found it refused them: {why}; the \
                         LangBot host refuses this archive the same way: fix what the SDK names \
                         in the plugin source and rebuild",
                        obs.archive, obs.archive_sha256
                    ),
                )
                .with_observed(json!({ "archive": obs.archive, "sdk_error": why })),
            );
        }
    }
    checks.extend(requirement_checks(obs, report, policy));
    checks
}

fn marker_check(obs: &Observation, artifact: &ProbeArtifact, store: &StoreObservation) -> Check {
    let folder = obs.folder.as_str();
    let observed = json!({
        "marker_file": store.marker_file,
        "marker": store.marker,
        "probe_marker": artifact.marker,
        "probe_root": artifact.root_path,
        "expected": obs.archive_sha256,
    });
    let Some(on_disk) = &store.marker else {
        return Check::fail(
            "marker",
            Some(folder),
            format!(
                "{}: expected the SDK's verified-digest marker holding {}, found it unreadable \
                 ({}); the artifact store did not publish where the SDK's layout puts it: read \
                 the probe log",
                store.marker_file,
                obs.archive_sha256,
                store
                    .marker_error
                    .as_deref()
                    .unwrap_or("no reason recorded")
            ),
        )
        .with_observed(observed);
    };
    let ok = *on_disk == obs.archive_sha256
        && artifact.marker == obs.archive_sha256
        && artifact.digest == obs.archive_sha256
        && artifact.root_path == store.expected_root;
    let detail = if ok {
        format!(
            "{} holds the archive's sha256 {}, as the SDK reported",
            store.marker_file, obs.archive_sha256
        )
    } else {
        format!(
            "{}: expected the marker, the SDK's artifact digest and its location to name the \
             archive's sha256 {}, found marker {:?}, SDK-reported marker {:?}, digest {}, root \
             {}; the artifact store did not verify these bytes: treat the archive as unadmitted",
            store.marker_file,
            obs.archive_sha256,
            on_disk,
            artifact.marker,
            artifact.digest,
            artifact.root_path
        )
    };
    Check::from_bool("marker", Some(folder), ok, detail).with_observed(observed)
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

fn extraction_check(
    obs: &Observation,
    artifact: &ProbeArtifact,
    store: &StoreObservation,
) -> Check {
    let folder = obs.folder.as_str();
    let (store_rel, ours_rel) = (&store.code_dir, &obs.extracted);
    if artifact.code_path != store.expected_code {
        return Check::fail(
            "extraction-agrees",
            Some(folder),
            format!(
                "expected the SDK's code directory at {store_rel}, found it reported at {}; \
                 the SDK's artifact layout changed: re-check SDK-FACTS.md",
                artifact.code_path
            ),
        )
        .with_observed(json!({ "expected": store.expected_code, "reported": artifact.code_path }));
    }
    let Some(d) = &store.tree else {
        return Check::fail(
            "extraction-agrees",
            Some(folder),
            format!(
                "not observed: {}",
                store
                    .tree_error
                    .as_deref()
                    .unwrap_or("the trees were not compared")
            ),
        );
    };
    let observed = json!({
        "artifact_code_dir": store_rel,
        "extracted": ours_rel,
        "files": d.files,
        "only_in_artifact_store": d.only_in_first,
        "only_in_extracted": d.only_in_second,
        "differing": d.differing,
    });
    if d.is_empty() {
        return Check::pass(
            "extraction-agrees",
            Some(folder),
            format!(
                "the SDK's extraction {store_rel} and {ours_rel} hold the same {} files with the \
                 same sha256",
                d.files
            ),
        )
        .with_observed(observed);
    }
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
            "expected two independent extractions of the same archive bytes, the SDK's \
             ({store_rel}) and the harness's ({ours_rel}), to hold the same files with the same \
             sha256; found {}; one extractor is wrong: compare the two trees and report the \
             extractor at fault",
            parts.join("; ")
        ),
    )
    .with_observed(observed)
}

/// The `sdk-requirement` and `requirement-lines` checks.
fn requirement_checks(
    obs: &Observation,
    report: &ProbeReport,
    policy: AdmissionOptions,
) -> [Check; 2] {
    if let Some(why) = &obs.requirements.unreadable {
        return unreadable_checks(obs, why);
    }
    let sdk_file = &report.file_requirements;
    let split_agrees = split_agrees(obs, report);
    let pinned = sdk_lines(obs, report);

    // --- sdk-requirement ---
    let mut found = SdkFindings::default();
    if report.installed_sdk_version != obs.sdk_version {
        found.failures.push(format!(
            "the SDK compares against langbot-plugin {} (importlib.metadata in the interpreter), \
             but sdk-record recorded {}: the two decisions are not about the same SDK",
            report.installed_sdk_version, obs.sdk_version
        ));
    }
    for (o, s, decision) in &pinned {
        judge_pin(obs, o, s, *decision, &mut found);
    }
    judge_file(
        obs,
        report,
        split_agrees,
        pinned.is_empty(),
        policy,
        &mut found,
    );
    let sdk_check = sdk_check(obs, report, &pinned, found);

    [sdk_check, lines_check(obs, report, split_agrees, sdk_file)]
}

/// Both checks failing when the requirements file could not be read
/// (`why`): one cause, so `requirement-lines` is its consequence.
fn unreadable_checks(obs: &Observation, why: &str) -> [Check; 2] {
    let folder = obs.folder.as_str();
    let req_rel = obs.requirements.file.as_str();
    // One cause: the second check could not be taken for the same reason.
    [
        Check::fail(
            "sdk-requirement",
            Some(folder),
            format!("not observed: {why}"),
        ),
        Check::fail(
            "requirement-lines",
            Some(folder),
            format!("not observed: {req_rel} could not be judged (see sdk-requirement: {why})"),
        )
        .consequence_of("sdk-requirement"),
    ]
}

/// What the `sdk-requirement` check found, in order.
#[derive(Default)]
struct SdkFindings {
    /// Why it fails.
    failures: Vec<String>,
    /// What passed (the detail when nothing fails).
    passes: Vec<String>,
}

/// Adds to `found` the harness's and the SDK's decisions on one
/// `langbot-plugin` line `o` (the SDK's reading `s`, the harness's
/// `decision`): a disagreement fails, and so does a requirement the
/// installed SDK does not satisfy or a direct URL.
fn judge_pin(
    obs: &Observation,
    o: &RequirementLine,
    s: &SdkLine,
    decision: RequirementDecision,
    found: &mut SdkFindings,
) {
    let folder = obs.folder.as_str();
    let req_rel = obs.requirements.file.as_str();
    let ours_accepts = o.kind.accepted();
    let agree = s.decided() && ours_accepts == s.accepted && (!s.accepted || s.kept.is_empty());
    let sdk_says = s.says();
    if !agree {
        found.failures.push(format!(
            "{req_rel} line {} `{}`: the harness decides {} against langbot-plugin {} \
             (PEP 440, pre-releases allowed), but the SDK {sdk_says}; a disagreement between \
             the two evaluations is itself a failure: report both with the requirement and \
             the SDK version",
            o.number,
            o.text,
            decision_word(decision),
            obs.sdk_version
        ));
        return;
    }
    match decision {
        RequirementDecision::Satisfied => found.passes.push(format!(
            "line {} `{}` is satisfied by the installed langbot-plugin {} (PEP 440, \
             pre-releases allowed) and the SDK agrees: it {sdk_says}",
            o.number, o.text, obs.sdk_version
        )),
        RequirementDecision::MarkerExcludes => found.passes.push(format!(
            "line {} `{}` does not apply here (its environment marker is false) and the SDK \
             agrees: it {sdk_says}",
            o.number, o.text
        )),
        RequirementDecision::NotSatisfied => found.failures.push(format!(
            "{folder}: {req_rel} line {} `{}` is not satisfied by the installed \
             langbot-plugin {} (PEP 440, pre-releases allowed), and the SDK refuses it too, \
             before any install ({sdk_says}); the host will not admit this archive. A \
             pin-only change would hide the admission failure: port and re-test the \
             candidate against langbot-plugin {}, then pin that version",
            o.number, o.text, obs.sdk_version, obs.sdk_version
        )),
        RequirementDecision::DirectUrl => found.failures.push(format!(
            "{folder}: {req_rel} line {} `{}` names the runtime-provided SDK by direct URL, \
             which the SDK refuses ({sdk_says}): pin a version instead",
            o.number, o.text
        )),
    }
}

/// Adds to `found` what the whole file shows about the SDK pin: not UTF-8,
/// split differently by the harness and the SDK, or (`no_pin`) no
/// `langbot-plugin` line, which fails only when the profile requires one.
fn judge_file(
    obs: &Observation,
    report: &ProbeReport,
    split_agrees: bool,
    no_pin: bool,
    policy: AdmissionOptions,
    found: &mut SdkFindings,
) {
    let req = &obs.requirements;
    let req_rel = req.file.as_str();
    if let Some(e) = &req.not_utf8 {
        found.failures.push(format!(
            "{req_rel}: {e}; the SDK refuses it too ({}): save it as UTF-8",
            report
                .file_requirements
                .error
                .clone()
                .unwrap_or_else(|| "it accepted it".into())
        ));
    } else if !split_agrees {
        found.failures.push(format!(
            "{req_rel}: the harness and the SDK split the file into different requirement lines \
             (ours {:?}, the SDK's {:?}); no decision can be compared: report this",
            req.lines
                .iter()
                .map(|l| (l.number, l.text.as_str()))
                .collect::<Vec<_>>(),
            report
                .lines
                .iter()
                .map(|l| (l.number, l.text.as_str()))
                .collect::<Vec<_>>()
        ));
    } else if no_pin {
        if policy.require_sdk_pin {
            found.failures.push(format!(
                "{req_rel}: expected a `langbot-plugin` requirement pinning the SDK the \
                 candidate was built and tested against (the profile's `[admission] \
                 require_sdk_pin`), found none; the host would run it against whatever SDK it \
                 provides: add `langbot-plugin==<version>` (the profile's requirement)"
            ));
        } else {
            found.passes.push(format!(
                "no `langbot-plugin` requirement{}: the SDK admits that (the runtime provides \
                 the SDK and drops it from every install list), and the profile does not ask \
                 for a pin (`[admission] require_sdk_pin`); the host will run it against the \
                 SDK it provides",
                if req.present {
                    ""
                } else {
                    " (no requirements.txt)"
                }
            ));
        }
    }
}

/// The `sdk-requirement` check from what was found about the `pinned`
/// lines: a pass listing the passes when nothing failed.
fn sdk_check(
    obs: &Observation,
    report: &ProbeReport,
    pinned: &[(&RequirementLine, &SdkLine, RequirementDecision)],
    found: SdkFindings,
) -> Check {
    let folder = obs.folder.as_str();
    let req_rel = obs.requirements.file.as_str();
    let sdk_observed = json!({
        "requirements_file": req_rel,
        "installed_sdk_version": obs.sdk_version,
        "sdk_reported_version": report.installed_sdk_version,
        "lines": pinned.iter().map(|(o, s, d)| json!({
            "line": o.number,
            "requirement": o.text,
            "decision": d,
            "sdk_decision": s.decision(),
        })).collect::<Vec<_>>(),
    });
    if found.failures.is_empty() {
        Check::pass(
            "sdk-requirement",
            Some(folder),
            format!("{req_rel}: {}", found.passes.join("; ")),
        )
    } else {
        Check::fail("sdk-requirement", Some(folder), found.failures.join("; "))
    }
    .with_observed(sdk_observed)
}

/// The `requirement-lines` check: every line but the SDK pin read the same
/// way by the harness and the SDK and none refused; the SDK's verdict on
/// the whole file agrees with its verdicts on the lines and on the
/// artifact store's copy. Fails as a consequence of `sdk-requirement` when
/// all it found is what that check names.
fn lines_check(
    obs: &Observation,
    report: &ProbeReport,
    split_agrees: bool,
    sdk_file: &SdkVerdict,
) -> Check {
    let mut found = line_findings(obs, report, split_agrees);
    file_findings(obs, report, sdk_file, &mut found);
    lines_verdict(obs, report, sdk_file, found)
}

/// What the `requirement-lines` check found: findings of its own, ones
/// another check already names, and whether the SDK refused any line.
struct LineFindings {
    own: Vec<String>,
    consequences: Vec<String>,
    refused_by_line: bool,
}

/// The findings of each line but the SDK pin (when the harness and the SDK
/// split the file alike), or why no line could be compared.
fn line_findings(obs: &Observation, report: &ProbeReport, split_agrees: bool) -> LineFindings {
    let req = &obs.requirements;
    // Findings of this check's own, and ones another check already names.
    let mut found = LineFindings {
        own: Vec::new(),
        consequences: Vec::new(),
        refused_by_line: false,
    };
    if split_agrees {
        for (o, s) in req.lines.iter().zip(&report.lines) {
            found.refused_by_line |= !s.accepted;
            if matches!(o.kind, LineKind::Sdk(_)) {
                continue; // judged by sdk-requirement
            }
            if let Some(problem) = line_problem(o, s) {
                found.own.push(problem);
            }
        }
    } else if req.not_utf8.is_none() {
        found.consequences.push(
            "the harness and the SDK read different requirement lines, so no line's decision \
             can be compared (see sdk-requirement)"
                .to_string(),
        );
    }
    if req.not_utf8.is_some() {
        found.consequences.push(
            "the file is not UTF-8, so no line could be read (see sdk-requirement)".to_string(),
        );
    }
    found
}

/// What is wrong with one line `o` the SDK read as `s`, if anything: the
/// two readings disagree, or both refuse it (a pip option, an invalid
/// requirement, a URL), or the harness refuses its direct URL.
fn line_problem(o: &RequirementLine, s: &SdkLine) -> Option<String> {
    let sdk_says = s.says();
    let agree = s.decided()
        && o.kind.accepted() == s.accepted
        && (!s.accepted || o.kind.kept() != s.kept.is_empty());
    match (&o.kind, agree) {
        (_, false) => Some(format!(
            "line {} `{}`: the harness reads it as {}, but the SDK {sdk_says} (kept {:?}); \
             a disagreement between the two readings is itself a failure: report it",
            o.number,
            o.text,
            kind_word(&o.kind),
            s.kept
        )),
        (LineKind::PipOption, true) => Some(format!(
            "line {} `{}` is a pip option, which the SDK refuses in an archive's \
             requirements.txt ({sdk_says}): remove it (package indexes and install \
             options are host configuration, not plugin content)",
            o.number, o.text
        )),
        (LineKind::Invalid(why), true) if o.text.contains("://") => Some(format!(
            "line {} `{}` is a URL, not a PEP 508 requirement ({why}), and the SDK \
             refuses it ({sdk_says}); {}",
            o.number,
            o.text,
            observe::URL_REFUSAL
        )),
        (LineKind::Invalid(why), true) => Some(format!(
            "line {} `{}` is not a PEP 508 requirement ({why}), and the SDK refuses it \
             ({sdk_says}): correct it",
            o.number, o.text
        )),
        (LineKind::DirectUrl(url), true) => Some(format!(
            "line {} `{}` requires a distribution by direct URL ({url}); the SDK would \
             leave it to the installer ({sdk_says}), the harness refuses it: {}",
            o.number,
            o.text,
            observe::URL_REFUSAL
        )),
        _ => None,
    }
}

/// Adds to `found.own` what the SDK's verdict on the whole file shows: an
/// undecided check, a file-level refusal no line explains, a line refused
/// alone but accepted in the file, or a different verdict on the artifact
/// store's copy.
fn file_findings(
    obs: &Observation,
    report: &ProbeReport,
    sdk_file: &SdkVerdict,
    found: &mut LineFindings,
) {
    let req = &obs.requirements;
    let req_rel = req.file.as_str();
    let own = &mut found.own;
    if !sdk_file.accepted && !sdk_file.refusal {
        own.push(format!(
            "the SDK's check of the whole file did not decide: it raised {}, which is not the \
             SDK's refusal (DependencyEnvironmentPreparationError); the host would fail the \
             installation on it: report it with the line that triggers it",
            sdk_file.error.clone().unwrap_or_default()
        ));
    }
    // File-level limits (size, count) only show on the whole file.
    if !sdk_file.accepted && sdk_file.refusal && !found.refused_by_line && req.not_utf8.is_none() {
        own.push(format!(
            "the SDK refuses the file as a whole although it accepts every line: {}",
            sdk_file.error.clone().unwrap_or_default()
        ));
    }
    if sdk_file.accepted && found.refused_by_line {
        own.push(format!(
            "the SDK refuses a line alone but accepts the whole file (kept {:?}): report this",
            sdk_file.kept
        ));
    }
    if let Some(from_artifact) = &report.artifact_requirements {
        if from_artifact != sdk_file {
            own.push(format!(
                "the SDK's verdict on the artifact store's requirements.txt ({:?}) differs from \
                 its verdict on {req_rel} ({:?}): the two extractions disagree",
                from_artifact, sdk_file
            ));
        }
    }
}

/// The `requirement-lines` check from what was found.
fn lines_verdict(
    obs: &Observation,
    report: &ProbeReport,
    sdk_file: &SdkVerdict,
    found: LineFindings,
) -> Check {
    let folder = obs.folder.as_str();
    let req = &obs.requirements;
    let req_rel = req.file.as_str();
    let LineFindings {
        mut own,
        consequences,
        ..
    } = found;
    let observed = json!({
        "requirements_file": req_rel,
        "present": req.present,
        "lines": report.lines.iter().map(|s| json!({
            "line": s.number,
            "text": s.text,
            "sdk_decision": s.decision(),
        })).collect::<Vec<_>>(),
        "sdk_file_decision": sdk_file.error.clone().map(|e| format!("refused: {e}")).unwrap_or_else(|| "accepted".into()),
        "left_for_installer": sdk_file.kept,
        "requirements_sha256": sdk_file.digest,
    });
    if own.is_empty() && consequences.is_empty() {
        let count = req.lines.len();
        return Check::pass(
            "requirement-lines",
            Some(folder),
            if req.present {
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
        .with_observed(observed);
    }
    let only_consequences = own.is_empty();
    own.extend(consequences);
    let check = Check::fail(
        "requirement-lines",
        Some(folder),
        format!("{req_rel}: {}", own.join("; ")),
    )
    .with_observed(observed);
    if only_consequences {
        check.consequence_of("sdk-requirement")
    } else {
        check
    }
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
        LineKind::DirectUrl(url) => format!("a requirement by direct URL ({url})"),
    }
}

impl super::Gate for Admission {
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let candidates = observe::observe_all(ctx)?;
        for c in &candidates {
            if let Candidate::Observed(obs) = c {
                if let Some(r) = record(obs) {
                    let folder = obs.folder.clone();
                    out.set(move |ctx| {
                        if let Some(c) = ctx.record_mut(&folder) {
                            c.admission = Some(r);
                        }
                    });
                }
                if let Some(kept) = kept_requirements(obs) {
                    let folder = obs.folder.clone();
                    out.set(move |ctx| {
                        ctx.admitted_requirements.insert(folder, kept);
                    });
                }
            }
        }
        let policy = ctx.profile.profile.admission;
        Ok(candidates
            .iter()
            .flat_map(|c| decide_candidate(c, policy))
            .collect())
    }
}
