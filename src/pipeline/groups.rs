//! A run of a profile that groups candidates by SDK pin
//! (`src/profile/groups.rs`): the default group is certified by the run
//! itself; each other group by a run of its own, with its own interpreter
//! (provisioned hash-locked from the verifier's lock list for its pin),
//! into `DIR/groups/<pin>/`, a complete evidence directory of its own.
//!
//! The group's run is this same program, started as a child
//! (`--sdk-group PIN`, hidden): every run keeps its process-wide state (the
//! bytecode cache, the signal journal, the sandbox preflight) to itself, as
//! two runs side by side do. It is waited for before the default group's
//! gates start; an interrupt stops it (TERM, recorded in the journal). Its
//! evidence is sealed before this run's, so this run's `SHA256SUMS` and
//! files digest cover it, and `sdk_groups[]` records its sign-off digest and
//! its interpreter's verified facts, which `replay` compares with it.

use super::{RunOptions, SetupError};
use crate::evidence::{self, Evidence, SdkGroupCandidate, SdkGroupRecord, SignalWhy, Verdict};
use crate::profile::groups::{slug, SdkGroup};
use crate::profile::CandidateSpec;
use crate::{interrupt, process};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `DIR/groups/<pin>` of the group of `requirement`, relative to DIR.
pub fn relative_dir(requirement: &str) -> String {
    format!("groups/{}", slug(requirement))
}

/// The groups of `groups` a `--partition` share certifies: the default
/// group (this run's own, whose global gates every share runs) and each
/// other group with a candidate in `share`, each holding its candidates of
/// `share` only. All of `groups` when `share` holds every candidate. Pure.
pub fn in_share(groups: &[SdkGroup], share: &[CandidateSpec]) -> Vec<SdkGroup> {
    groups
        .iter()
        .map(|g| SdkGroup {
            candidates: g
                .candidates
                .iter()
                .filter(|c| share.iter().any(|s| s.path == c.path))
                .cloned()
                .collect(),
            ..g.clone()
        })
        .filter(|g| g.default || !g.candidates.is_empty())
        .collect()
}

/// The interpreter of every non-default group of `groups`, provisioned (or
/// reused and re-verified) in the user's cache, before anything is written.
///
/// # Errors
/// [`SetupError`] naming the group whose interpreter could not be provisioned.
pub(super) fn provision(
    groups: &[SdkGroup],
    index_url: &str,
    progress: &mut dyn super::Progress,
) -> Result<Vec<(SdkGroup, PathBuf)>, SetupError> {
    let mut out = Vec::new();
    for g in groups.iter().filter(|g| !g.default) {
        let requirement = g.pin.requirement.clone();
        let mut say = |line: &str| progress.note(&format!("sdk group {requirement}: {line}"));
        let ready = crate::provision::provision_sdk(&g.pin, index_url, &mut say).map_err(|e| {
            SetupError(format!(
                "sdk group {requirement} (candidates {}): {e}; a group's interpreter is always \
                 provisioned by the verifier (--python names the [sdk] requirement's only)",
                g.candidates
                    .iter()
                    .map(|c| c.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        out.push((g.clone(), ready.python));
    }
    Ok(out)
}

/// The arguments of the group run of `group` with `python`, into `dir`.
fn arguments(
    opts: &RunOptions,
    dir: &Path,
    group: &SdkGroup,
    python: &Path,
    index_url: &str,
) -> Vec<String> {
    let mut args = vec![
        "--quiet".to_string(),
        "--format".into(),
        "json".into(),
        "--repo".into(),
        opts.repo.display().to_string(),
        "--evidence".into(),
        dir.display().to_string(),
        "--python".into(),
        python.display().to_string(),
        "--sdk-group".into(),
        group.pin.requirement.clone(),
        "--isolation".into(),
        opts.isolation.word().into(),
        "--jobs".into(),
        opts.jobs.clamp(1, usize::from(u16::MAX)).to_string(),
        "--index-url".into(),
        index_url.into(),
    ];
    if let Some(p) = &opts.profile {
        args.extend(["--profile".into(), p.display().to_string()]);
    }
    if let Some(only) = &opts.only {
        args.extend(["--only".into(), only.join(",")]);
    }
    if opts.worktree {
        args.push("--worktree".into());
    }
    // A share's group run certifies the group's candidates of that share.
    if let Some(p) = opts.partition {
        args.extend(["--partition".into(), format!("{}/{}", p.index, p.count)]);
    }
    args
}

/// Runs the group `group` with `python` into `DIR/groups/<pin>` and returns
/// its record, read back from its sealed evidence. A run that could not
/// start, or ended without sealing evidence (killed, crashed, exit 2)
/// though nothing interrupted it, is that group's failure
/// ([`SdkGroupRecord::error`]): the other groups and this run go on, and
/// this run's evidence says so.
pub(super) fn run_group(
    opts: &RunOptions,
    evidence_dir: &Path,
    group: &SdkGroup,
    python: &Path,
    index_url: &str,
    progress: &mut dyn super::Progress,
) -> SdkGroupRecord {
    match try_run_group(opts, evidence_dir, group, python, index_url, progress) {
        Ok(record) => record,
        Err(SetupError(why)) => {
            progress.note(&why);
            let mut failed = not_run(group, python);
            failed.verdict = Verdict::Fail;
            failed.error = Some(why);
            failed
        }
    }
}

/// Waits for a group's run (`child`) to end, passing an interrupt on to it
/// (TERM, once): its exit status, and whether it was stopped so.
fn wait_for_run(
    child: &mut std::process::Child,
    requirement: &str,
) -> Result<(std::process::ExitStatus, bool), SetupError> {
    let seen = crate::process::procfs::read(child.id() as i32);
    let mut stopped = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                return Err(SetupError(format!(
                    "sdk group {requirement}: cannot wait for its run: {e}"
                )))
            }
        }
        if !stopped && interrupt::requested() {
            stopped = true;
            if let Some(seen) = &seen {
                process::journal::signal_process(
                    seen,
                    rustix::process::Signal::TERM,
                    SignalWhy::Interrupt,
                );
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Ok((status, stopped))
}

fn try_run_group(
    opts: &RunOptions,
    evidence_dir: &Path,
    group: &SdkGroup,
    python: &Path,
    index_url: &str,
    progress: &mut dyn super::Progress,
) -> Result<SdkGroupRecord, SetupError> {
    let relative = relative_dir(&group.pin.requirement);
    let dir = evidence_dir.join(&relative);
    let exe = std::env::current_exe().map_err(|e| {
        SetupError(format!(
            "cannot find this program to run sdk group {}: {e}",
            group.pin.requirement
        ))
    })?;
    progress.note(&format!(
        "sdk group {}: certifying {} with {} into DIR/{relative}",
        group.pin.requirement,
        group
            .candidates
            .iter()
            .map(|c| c.path.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        python.display()
    ));
    let mut child = Command::new(&exe)
        .args(arguments(opts, &dir, group, python, index_url))
        .env_remove("PYTHON")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| {
            SetupError(format!(
                "cannot start {} for sdk group {}: {e}",
                exe.display(),
                group.pin.requirement
            ))
        })?;
    let (status, stopped) = wait_for_run(&mut child, &group.pin.requirement)?;
    let ev = match read(&dir) {
        Ok(ev) => ev,
        // Stopped before it could seal anything: interrupted, not broken.
        Err(_) if stopped => {
            progress.note(&format!(
                "sdk group {}: interrupted before its run wrote evidence",
                group.pin.requirement
            ));
            return Ok(not_run(group, python));
        }
        Err(e) => return Err(SetupError(format!(
            "sdk group {}: its run left no readable evidence (it ended with {status}; {e}): its \
             candidates are not certified; see the error it printed on stderr, fix it, and run again",
            group.pin.requirement
        ))),
    };
    progress.note(&format!(
        "sdk group {}: verdict {}",
        group.pin.requirement,
        ev.verdict.word()
    ));
    Ok(record(&ev, false, Some(relative)))
}

/// The record of a group whose run never sealed evidence because the run
/// was interrupted (before it started, or before it wrote any): `incomplete`,
/// no evidence directory, no verified facts, its candidates without verdicts.
pub(super) fn not_run(group: &SdkGroup, python: &Path) -> SdkGroupRecord {
    SdkGroupRecord {
        requirement: group.pin.requirement.clone(),
        default: false,
        evidence: None,
        evidence_sha256: None,
        verdict: Verdict::Incomplete,
        warnings: 0,
        python: python.display().to_string(),
        version: None,
        record_sha256: None,
        error: None,
        candidates: group
            .candidates
            .iter()
            .map(|c| SdkGroupCandidate {
                folder: c.folder().to_string(),
                verdict: None,
                stopped_at: None,
                archive: None,
            })
            .collect(),
    }
}

/// The evidence of the group run in `dir`.
///
/// # Errors
/// When `dir/evidence.json` is missing or not evidence.
pub fn read(dir: &Path) -> Result<Evidence, String> {
    let text = std::fs::read_to_string(dir.join(evidence::EVIDENCE_JSON))
        .map_err(|e| format!("{}/evidence.json: {e}", dir.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}/evidence.json: {e}", dir.display()))
}

/// The record of a group from its run's evidence (`ev`): its pin, verdict,
/// interpreter facts and candidates.
pub fn record(ev: &Evidence, default: bool, evidence: Option<String>) -> SdkGroupRecord {
    SdkGroupRecord {
        requirement: ev.sdk.requirement.clone(),
        default,
        evidence_sha256: evidence
            .as_ref()
            .map(|_| ev.sign_off.evidence_sha256.clone()),
        evidence,
        verdict: ev.verdict,
        warnings: if default {
            0
        } else {
            evidence::statement::warnings(ev) as u64
        },
        python: ev.sdk.python.clone(),
        version: ev.sdk.version.clone(),
        record_sha256: ev.sdk.record_sha256.clone(),
        candidates: candidates_of(&ev.candidates),
        error: None,
    }
}

/// Each candidate's folder and verdict.
pub fn candidates_of(candidates: &[evidence::CandidateRecord]) -> Vec<SdkGroupCandidate> {
    candidates
        .iter()
        .map(|c| SdkGroupCandidate {
            folder: c.folder.clone(),
            verdict: c.verdict.as_ref().map(|v| v.result),
            stopped_at: c.verdict.as_ref().and_then(|v| match (&v.gate, &v.check) {
                (Some(gate), Some(check)) => Some(format!("{gate}/{check}")),
                (Some(gate), None) => Some(gate.clone()),
                _ => None,
            }),
            archive: c.archive.as_ref().map(|a| evidence::SdkGroupArchive {
                path: a.path.clone(),
                sha256: a.sha256.clone(),
            }),
        })
        .collect()
}

/// The run's verdict over its own gates (`own`) and its groups: any group
/// not passed fails the run (an interrupted one leaves it incomplete).
pub fn overall(own: Verdict, groups: &[SdkGroupRecord]) -> Verdict {
    let all = std::iter::once(own).chain(groups.iter().map(|g| g.verdict));
    let mut out = Verdict::Pass;
    for v in all {
        match v {
            Verdict::Incomplete => return Verdict::Incomplete,
            Verdict::Fail => out = Verdict::Fail,
            Verdict::Pass => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(verdict: Verdict) -> SdkGroupRecord {
        SdkGroupRecord {
            requirement: "langbot-plugin==0.6.1".into(),
            default: false,
            evidence: Some("groups/langbot-plugin-0.6.1".into()),
            evidence_sha256: Some("ab".repeat(32)),
            verdict,
            warnings: 0,
            python: "/p".into(),
            version: Some("0.6.1".into()),
            error: None,
            record_sha256: None,
            candidates: Vec::new(),
        }
    }

    #[test]
    fn a_group_that_did_not_pass_fails_the_run_and_an_interrupted_one_leaves_it_incomplete() {
        assert_eq!(
            overall(Verdict::Pass, &[group(Verdict::Pass)]),
            Verdict::Pass
        );
        assert_eq!(
            overall(Verdict::Pass, &[group(Verdict::Fail)]),
            Verdict::Fail
        );
        assert_eq!(
            overall(Verdict::Fail, &[group(Verdict::Pass)]),
            Verdict::Fail
        );
        assert_eq!(
            overall(
                Verdict::Pass,
                &[group(Verdict::Fail), group(Verdict::Incomplete)]
            ),
            Verdict::Incomplete
        );
        assert_eq!(
            relative_dir("langbot-plugin==0.6.1"),
            "groups/langbot-plugin-0.6.1"
        );
    }

    #[test]
    fn a_share_runs_the_default_group_and_only_the_other_groups_it_holds_candidates_of() {
        let profile = crate::profile::parse(
            "name = \"t\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n\
             [[candidate]]\npath = \"a\"\n\
             [[candidate]]\npath = \"b\"\nsdk = \"langbot-plugin==0.6.1\"\n\
             [[candidate]]\npath = \"c\"\nsdk = \"langbot-plugin==0.7.1\"\n\
             [[candidate]]\npath = \"d\"\nsdk = \"langbot-plugin==0.7.1\"\n",
            "t.toml",
        )
        .unwrap();
        let groups = profile.sdk_groups();
        let names = |gs: Vec<SdkGroup>| -> Vec<(String, Vec<String>)> {
            gs.into_iter()
                .map(|g| {
                    (
                        g.pin.requirement,
                        g.candidates.into_iter().map(|c| c.path).collect(),
                    )
                })
                .collect()
        };
        let share = |k| {
            crate::profile::partition_share(
                &profile,
                Some(crate::profile::Partition { index: k, count: 2 }),
            )
        };
        // Share 2/2 holds c and d only: the default group, empty, and 0.7.1.
        assert_eq!(
            names(in_share(&groups, &share(2))),
            [
                ("langbot-plugin==0.6.0b5".to_string(), vec![]),
                (
                    "langbot-plugin==0.7.1".to_string(),
                    vec!["c".into(), "d".into()]
                ),
            ]
        );
        assert_eq!(
            names(in_share(&groups, &share(1))),
            [
                ("langbot-plugin==0.6.0b5".to_string(), vec!["a".to_string()]),
                ("langbot-plugin==0.6.1".to_string(), vec!["b".to_string()]),
            ]
        );
        assert_eq!(names(in_share(&groups, &profile.candidates)), names(groups));
    }
}
