//! Planning the `discovery-rpc` host: which candidates it installs, and each
//! declared runner probe's fixture, workspace and resolved invocation
//! configs. What cannot be planned is recorded as a [`SetupProblem`] for
//! [`super::decide`].

use super::calls;
use super::components;
use super::host;
use super::spec::{ComponentId, HostCandidate, ProbePlan};
use crate::context::RunContext;
use crate::hash;
use crate::profile::{CandidateSpec, RunnerProbeSpec, NONCE_PLACEHOLDER};
use serde::Serialize;
use std::path::Path;

/// Something the gate could not plan, observed before the host ran.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
pub enum SetupProblem {
    /// No archive is recorded for the candidate.
    NoArchive {
        /// Candidate folder.
        folder: String,
    },
    /// The archive's manifest cannot be read.
    Manifest {
        /// Candidate folder.
        folder: String,
        /// The reader's message.
        error: String,
    },
    /// The profile's probe names a runner the manifest does not declare.
    UndeclaredRunner {
        /// Candidate folder.
        folder: String,
        /// The profile's candidate path.
        candidate: String,
        /// The runner the probe names.
        runner: String,
        /// The manifest's Runner components.
        runners: Vec<String>,
    },
    /// A declared probe could not be prepared.
    Unprepared {
        /// Candidate folder.
        folder: String,
        /// The runner.
        runner: String,
        /// Why.
        error: String,
    },
}

/// One [`HostCandidate`] per selected candidate with a recorded archive;
/// candidates without one, or whose manifest cannot be read, fail here.
pub(crate) fn host_candidates(
    ctx: &RunContext,
    roots: &Path,
    problems: &mut Vec<SetupProblem>,
) -> Vec<HostCandidate> {
    let mut out = Vec::new();
    for c in ctx.candidate_specs() {
        let folder = c.folder();
        let archive = ctx
            .candidates
            .iter()
            .find(|r| r.folder == folder)
            .and_then(|r| r.archive.as_ref());
        let Some(archive) = archive else {
            problems.push(SetupProblem::NoArchive {
                folder: folder.to_string(),
            });
            continue;
        };
        let path = ctx.evidence_dir.join(&archive.path);
        match components::read(&path) {
            Ok(declared) => {
                let (probes, unprepared, found) = plan_probes(ctx, roots, c, &declared.components);
                problems.extend(found);
                let component_probes: Vec<&crate::profile::ComponentProbeSpec> = ctx
                    .profile
                    .profile
                    .discovery
                    .component_probes
                    .iter()
                    .filter(|p| p.candidate == c.path)
                    .collect();
                let component_plans =
                    calls::plan(&declared.components, &declared.specs, &component_probes);
                out.push(HostCandidate {
                    folder: folder.to_string(),
                    archive: path,
                    sha256: archive.sha256.clone(),
                    author: declared.author,
                    name: declared.name,
                    plugin_config: plugin_config(ctx, c, &declared.config_defaults),
                    declared: declared.components,
                    probes,
                    unprepared,
                    component_plans,
                })
            }
            Err(error) => problems.push(SetupProblem::Manifest {
                folder: folder.to_string(),
                error,
            }),
        }
    }
    out
}

/// Plans the profile's runner probes of one candidate: writes each fixture
/// program into `DIR/roots/discovery-rpc/probes/<folder>/<runner>/fixture.py`
/// beside a fresh `workspace/`, and resolves the placeholders of both
/// invocation configs. A probe that cannot be planned is a setup problem.
fn plan_probes(
    ctx: &RunContext,
    roots: &Path,
    candidate: &CandidateSpec,
    declared: &[ComponentId],
) -> (Vec<ProbePlan>, Vec<String>, Vec<SetupProblem>) {
    let folder = candidate.folder();
    let mut plans = Vec::new();
    let mut unprepared = Vec::new();
    let mut checks = Vec::new();
    let python = std::path::absolute(&ctx.python).unwrap_or_else(|_| ctx.python.clone());
    let runners: Vec<&str> = declared
        .iter()
        .filter(|d| d.kind == "Runner")
        .map(|d| d.name.as_str())
        .collect();
    for entry in ctx
        .profile
        .profile
        .discovery
        .runner_probes
        .iter()
        .filter(|p| p.candidate == candidate.path)
    {
        let targets: Vec<&str> = match &entry.runner {
            Some(r) if runners.contains(&r.as_str()) => vec![r.as_str()],
            Some(r) => {
                checks.push(SetupProblem::UndeclaredRunner {
                    folder: folder.to_string(),
                    candidate: candidate.path.clone(),
                    runner: r.clone(),
                    runners: runners.iter().map(|r| r.to_string()).collect(),
                });
                continue;
            }
            None => runners.clone(),
        };
        for runner in targets {
            if plans.iter().any(|p: &ProbePlan| p.runner == runner) {
                continue;
            }
            match plan_one(ctx, roots, &python, folder, runner, entry) {
                Ok(plan) => plans.push(plan),
                Err(e) => {
                    unprepared.push(runner.to_string());
                    checks.push(SetupProblem::Unprepared {
                        folder: folder.to_string(),
                        runner: runner.to_string(),
                        error: e,
                    });
                }
            }
        }
    }
    (plans, unprepared, checks)
}

fn plan_one(
    ctx: &RunContext,
    roots: &Path,
    python: &Path,
    folder: &str,
    runner: &str,
    entry: &RunnerProbeSpec,
) -> Result<ProbePlan, String> {
    let dir = roots.join("probes").join(folder).join(runner);
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace)
        .map_err(|e| format!("{}: cannot create: {e}", workspace.display()))?;
    let fixture_path = dir.join("fixture.py");
    let (bytes, expect_template) = match entry.builtin() {
        Some(name) => {
            let f = crate::builtin_fixtures::get(name)
                .ok_or_else(|| format!("no built-in fixture {name:?}"))?;
            (
                f.source.as_bytes().to_vec(),
                crate::builtin_fixtures::reply_text(name, NONCE_PLACEHOLDER),
            )
        }
        None => {
            let mut source = ctx.staging_source();
            source.extend(entry.fixture.split('/'));
            let bytes = std::fs::read(&source).map_err(|e| {
                format!(
                    "{}: cannot read the profile's fixture {:?} from the staged commit: {e}; expected a committed file",
                    source.display(),
                    entry.fixture
                )
            })?;
            (bytes, entry.expect.clone().unwrap_or_default())
        }
    };
    std::fs::write(&fixture_path, &bytes)
        .map_err(|e| format!("{}: cannot write: {e}", fixture_path.display()))?;
    let nonce = format!("VCC-PROBE-{}", &host::random_token()?[..16]);
    let control_nonce = format!("VCC-PROBE-{}", &host::random_token()?[..16]);
    let vars = [
        ("{python}", python.display().to_string()),
        ("{fixture}", fixture_path.display().to_string()),
        ("{workspace}", workspace.display().to_string()),
    ];
    let resolve = |t: &toml::Table| -> Result<serde_json::Value, String> {
        let v = serde_json::to_value(t).map_err(|e| format!("invocation config: {e}"))?;
        Ok(substitute(v, &vars))
    };
    Ok(ProbePlan {
        runner: runner.to_string(),
        fixture: entry.fixture.clone(),
        fixture_sha256: hash::sha256_bytes(&bytes),
        workspace,
        fixture_transcript: dir.join("transcript.jsonl"),
        config: resolve(&entry.config)?,
        invalid_config: resolve(&entry.invalid_config)?,
        expect: expect_template.replace(NONCE_PLACEHOLDER, &nonce),
        nonce,
        control_nonce,
        fixture_path,
    })
}

/// `value` with every placeholder of `vars` replaced in every string, in
/// one pass: a value is never scanned again, so a path that happens to hold
/// `{workspace}` is not rewritten. A string that is exactly one placeholder
/// gets the value as it is; within a longer string the value is
/// shell-quoted as Python's `shlex.quote` does (unchanged when it holds only
/// `[A-Za-z0-9@%+=:,./_-]`), because runners split such a string as a
/// command line (Codex reads `command = "{python} {fixture}"` with
/// `shlex.split`): a path with a space stays one word.
pub(super) fn substitute(value: serde_json::Value, vars: &[(&str, String)]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(substitute_str(&s, vars)),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, substitute(v, vars)))
                .collect(),
        ),
        other => other,
    }
}

fn substitute_str(s: &str, vars: &[(&str, String)]) -> String {
    if let Some((_, v)) = vars.iter().find(|(k, _)| *k == s) {
        return v.clone();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        match vars.iter().find(|(k, _)| rest.starts_with(k)) {
            Some((k, v)) => {
                out.push_str(&shell_quote(v));
                rest = &rest[k.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// `word` quoted for a POSIX shell word split (`shlex.quote`).
pub(super) fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\"'\"'"))
    }
}

/// The plugin settings of a candidate's installation: its manifest's
/// `spec.config` defaults, then each of its probes' `plugin_config`.
fn plugin_config(
    ctx: &RunContext,
    candidate: &CandidateSpec,
    defaults: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    let mut config = defaults.clone();
    for entry in ctx
        .profile
        .profile
        .discovery
        .runner_probes
        .iter()
        .filter(|p| p.candidate == candidate.path)
    {
        if let Ok(serde_json::Value::Object(o)) = serde_json::to_value(&entry.plugin_config) {
            config.extend(o);
        }
    }
    serde_json::Value::Object(config)
}
