//! Re-decides, from the raw observations an evidence directory keeps, every
//! gate whose decision is a pure function of them, independently of what
//! `evidence.json` claims: an `evidence.json` whose checks were edited and
//! whose views, sign-off and `SHA256SUMS` were all regenerated with the
//! harness's own writers agrees with itself, but not with the files the
//! run observed.
//!
//! Re-decided (the gate's own observation and decision functions, run on
//! the kept files; no interpreter runs):
//! - `archive-members`, per candidate: the archive (`DIR/packages/<c>/`),
//!   the staged source (`DIR/staging/source/`), the extraction
//!   (`DIR/extracted/<c>/`) and the SDK's reading of both manifests the run's
//!   probe printed (`DIR/logs/archive-members/<c>-manifest-yaml.stdout`);
//! - `suites`: each run's collection record, JUnit report and process end
//!   (`DIR/logs/suites/<run>-collection.json`, `<run>.xml`, `<run>.cmd`), the
//!   staged tree and DIR/extracted's entries, under the profile the run kept
//!   (`DIR/logs/profile.toml`, whose sha256 `evidence.json` records); the
//!   checks whose inputs are not kept are named as not re-decided;
//! - `shared-copies`: the staged source and the kept profile's `[shared]`;
//! - `sdk-record`'s `sdk-version`: the SDK probe's kept output and the
//!   kept profile's pin (its other checks are named as not re-decided).
//!
//! Every other gate is listed with why it is not re-decided ([`REASONS`]):
//! it decides from the repository, the interpreter or a running process,
//! none of which the directory keeps.
//!
//! Rows: one per compared check whose result differs (the evidence's result
//! as recorded; the re-decided result and its detail's first line as
//! observed), else one per re-decided gate saying how many checks agree;
//! one per passing gate that holds a failing check.

use super::Row;
use crate::evidence::{kept_profile, Check, CheckResult, Evidence, GateRecord, GateResult};
use crate::hash;
use crate::profile::{self, Profile};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A gate `replay` did not re-decide, and why.
#[derive(Debug, Clone, Serialize)]
pub struct NotRedecided {
    /// The gate id, with the check name for a check of a re-decided gate
    /// that is not (`suites tree/sandbox`).
    pub gate: String,
    /// Why: which observation the directory does not keep.
    pub why: String,
}

/// Why each gate that is never re-decided is not: the observation it
/// decides from, which an evidence directory does not keep.
pub const REASONS: [(&str, &str); 11] = [
    ("tree-clean", "decides from `git status` of the repository, which the directory does not keep"),
    ("stage", "decides from the commit's git objects (blob ids, attributes), which the directory does not keep; `replay --repo` re-creates the git archive"),
    ("lbp-build", "decides from the official build's process and output folder, which the directory does not keep; `replay --repo` rebuilds"),
    ("sdk-shadow", "decides from imports in the running interpreter, which the directory does not keep"),
    ("admission", "decides from the SDK's artifact store and installer as they ran, which the directory does not keep"),
    ("dependencies", "decides from the SDK's dependency-environment preparation as it ran, which the directory does not keep (the wheelhouse's files are re-hashed above)"),
    ("vendored-sdk", "decides from the installed SDK's files, which the directory does not keep"),
    ("historical-admission", "decides from the SDK's admission of archives outside the directory, which it does not keep"),
    ("discovery-rpc", "decides from the running runtime's replies, which the directory does not keep"),
    ("worker-isolation", "decides from the running workers, which the directory does not keep"),
    ("placement", "decides from the installed SDK's own files (whether it has a shared runtime), which the directory does not keep; the manifests' claims and the decision are in `candidates[].placement`"),
];

/// The checks of `g` judged from what is not kept: the survey of what
/// outlived the gate, and what the sweep before sealing removed.
fn not_kept(g: &GateRecord) -> Vec<NotRedecided> {
    let mut not = Vec::new();
    if g.checks.iter().any(|k| k.name == RESIDUE) {
        not.push(NotRedecided {
            gate: format!("{} {RESIDUE}", g.id),
            why: "the harness's survey of processes that outlived the gate is not kept as a raw \
                  observation"
                .into(),
        });
    }
    for swept in [crate::sweep::LINKS_CHECK, crate::sweep::SIZE_CHECK] {
        if g.checks.iter().any(|k| k.name == swept) {
            not.push(NotRedecided {
                gate: format!("{} {swept}", g.id),
                why: "the sweep before sealing removed what it judged (evidence.json `swept` \
                      records it): nothing is kept to re-decide it from"
                    .into(),
            });
        }
    }
    not
}

/// Re-decides the gates of `ev` (read from `dir`) whose raw observations
/// `dir` keeps, appending rows; returns the gates and checks not re-decided.
pub(super) fn redecide(dir: &Path, ev: &Evidence, rows: &mut Vec<Row>) -> Vec<NotRedecided> {
    let mut not = Vec::new();
    for g in &ev.gates {
        consistent_result(g, rows);
    }
    if ev.merged_from.is_some() {
        for g in &ev.gates {
            not.push(NotRedecided {
                gate: g.id.clone(),
                why: "a merged directory keeps only the archives and the wheelhouse: replay each \
                      partition's directory to re-decide its gates"
                    .into(),
            });
        }
        return not;
    }
    let profile = kept(dir, ev, rows);
    for g in &ev.gates {
        if g.checks.is_empty() {
            not.push(NotRedecided {
                gate: g.id.clone(),
                why: format!(
                    "{}: the evidence holds no check to re-decide",
                    g.result.word()
                ),
            });
            continue;
        }
        if let Some(why) = not_judged(g) {
            not.push(NotRedecided {
                gate: g.id.clone(),
                why: why.into(),
            });
            continue;
        }
        not.extend(not_kept(g));
        let needs_profile = matches!(g.id.as_str(), "suites" | "shared-copies" | "sdk-record");
        let profile = match (&profile, needs_profile) {
            (Err(why), true) => {
                not.push(NotRedecided {
                    gate: g.id.clone(),
                    why: why.clone(),
                });
                continue;
            }
            (p, _) => p.as_ref().ok(),
        };
        match (g.id.as_str(), profile) {
            ("archive-members", _) => archive_members(dir, ev, g, rows, &mut not),
            ("suites", Some(p)) => suites(dir, ev, p, g, rows, &mut not),
            ("shared-copies", Some(p)) => shared_copies(dir, ev, p, g, rows, &mut not),
            ("sdk-record", Some(p)) => sdk_record(dir, ev, p, g, rows, &mut not),
            (id, _) => not.push(NotRedecided {
                gate: id.to_string(),
                why: REASONS
                    .iter()
                    .find(|(g, _)| *g == id)
                    .map_or("no kept observation decides it", |(_, why)| why)
                    .to_string(),
            }),
        }
    }
    not
}

/// The check the pipeline adds for a process that outlived a gate: not the
/// gate's decision, never compared.
const RESIDUE: &str = crate::process::residue::CHECK;

/// Checks the pipeline adds after a gate ended (the residue survey, the
/// sweep before sealing): never a gate's decision, never compared.
const NOT_DECIDED_BY_GATES: [&str; 3] =
    [RESIDUE, crate::sweep::LINKS_CHECK, crate::sweep::SIZE_CHECK];

/// Why a gate's checks are not the output of its decision function: it
/// stopped before it could observe (`gate-error`), or it was interrupted
/// (its checks are kept, `skipped`, not judged).
fn not_judged(g: &GateRecord) -> Option<&'static str> {
    if g.checks.iter().any(|k| k.name == "gate-error") {
        return Some("the gate stopped before it observed (gate-error): it decided nothing");
    }
    if g.result == GateResult::Skipped {
        return Some("skipped with checks (interrupted): its checks are kept, not judged");
    }
    None
}

/// The profile the run kept (`DIR/logs/profile.toml`), when its sha256 is
/// the one `evidence.json` records (else a row names the difference); a
/// directory written before profiles were kept falls back to the built-in
/// profile when the record names it with its sha256.
///
/// # Errors
/// Why no profile can be used: the sentence a not-re-decided entry gives.
fn kept(dir: &Path, ev: &Evidence, rows: &mut Vec<Row>) -> Result<Profile, String> {
    let path = kept_profile::path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(_)
            if ev.profile.origin == "built-in"
                && hash::sha256_bytes(profile::BUILTIN_CODING_RUNNERS.as_bytes())
                    == ev.profile.sha256 =>
        {
            profile::BUILTIN_CODING_RUNNERS.to_string()
        }
        Err(e) => {
            return Err(format!(
                "its options come from the profile, whose text is not kept ({}: {e})",
                kept_profile::KEPT_PROFILE
            ))
        }
    };
    let observed = hash::sha256_bytes(text.as_bytes());
    if observed != ev.profile.sha256 {
        rows.push(Row::new(
            format!(
                "{} sha256 (the profile evidence.json records)",
                kept_profile::KEPT_PROFILE
            ),
            &ev.profile.sha256,
            observed,
        ));
        return Err(format!(
            "the kept profile {} is not the one evidence.json records",
            kept_profile::KEPT_PROFILE
        ));
    }
    let whole = profile::parse(&text, kept_profile::KEPT_PROFILE).map_err(|e| {
        format!(
            "the kept profile {} cannot be read: {e}",
            kept_profile::KEPT_PROFILE
        )
    })?;
    // A non-default SDK group's run read the profile under its own pin.
    Ok(whole.for_group(&ev.sdk.requirement).unwrap_or(whole))
}

/// A passing gate holds no failing check (the pipeline's rule).
fn consistent_result(g: &GateRecord, rows: &mut Vec<Row>) {
    if g.result != GateResult::Pass {
        return;
    }
    let failing: Vec<String> = g
        .checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
        .map(key_text)
        .collect();
    if !failing.is_empty() {
        rows.push(Row::new(
            format!("gate {} result (from its checks)", g.id),
            "pass",
            format!("fail: failing check(s) {}", failing.join(", ")),
        ));
    }
}

fn archive_members(
    dir: &Path,
    ev: &Evidence,
    g: &GateRecord,
    rows: &mut Vec<Row>,
    not: &mut Vec<NotRedecided>,
) {
    let scratch = match tempfile::Builder::new()
        .prefix("vcc-replay-members-")
        .tempdir()
    {
        Ok(t) => t,
        Err(e) => {
            not.push(NotRedecided {
                gate: g.id.clone(),
                why: format!("replay cannot create a temporary directory: {e}"),
            });
            return;
        }
    };
    for c in &ev.candidates {
        let folder = c.folder.as_str();
        let recorded = g
            .checks
            .iter()
            .any(|k| k.candidate.as_deref() == Some(folder) && k.name == "archive-digest");
        if !recorded {
            continue;
        }
        let archive = c.archive.as_ref().map(|a| a.path.clone()).or_else(|| {
            c.manifest
                .as_ref()
                .map(|m| format!("packages/{folder}/{}", m.archive_name()))
        });
        let Some(archive) = archive.filter(|a| super::inside_relative(a)) else {
            not.push(NotRedecided {
                gate: format!("{} ({folder})", g.id),
                why: "the evidence names no archive inside the directory for this candidate".into(),
            });
            continue;
        };
        if !super::inside_relative(&c.path) || !super::inside_relative(folder) {
            not.push(NotRedecided {
                gate: format!("{} ({folder})", g.id),
                why: format!(
                    "candidate path {:?} is not inside the staged source",
                    c.path
                ),
            });
            continue;
        }
        let redecided = crate::gates::archive_members::redecide_kept(
            dir,
            folder,
            &c.path,
            &archive,
            scratch.path(),
        );
        compare(
            g,
            &redecided,
            &|k: &Check| k.candidate.as_deref() == Some(folder),
            &format!(
                "{archive}, staging/source/{}, extracted/{folder} and logs/archive-members/{folder}-manifest-yaml.stdout",
                c.path
            ),
            rows,
        );
    }
}

/// Why a check of the `suites` gate is not re-decided from the kept
/// observations, if it is not: a candidate's own run, or a check whose
/// observation the directory does not keep.
fn suites_skipped(k: &Check) -> Option<&'static str> {
    if k.candidate.is_some() {
        return Some("a candidate's own run");
    }
    k.name
        .split_once('/')
        .and_then(|(_, check)| {
            crate::gates::suites::KEPT_NOT_REDECIDED
                .iter()
                .find(|(n, _)| *n == check)
        })
        .map(|(_, why)| *why)
}

/// The repository-level checks of the `suites` gate not re-decided, each
/// name once, with why.
fn skipped_named(g: &GateRecord) -> Vec<NotRedecided> {
    let mut named = BTreeMap::new();
    for k in g.checks.iter().filter(|k| k.candidate.is_none()) {
        if let Some(why) = suites_skipped(k) {
            named.entry(k.name.clone()).or_insert(why);
        }
    }
    named
        .into_iter()
        .map(|(name, why)| NotRedecided {
            gate: format!("{} {name}", g.id),
            why: why.to_string(),
        })
        .collect()
}

fn suites(
    dir: &Path,
    ev: &Evidence,
    profile: &Profile,
    g: &GateRecord,
    rows: &mut Vec<Row>,
    not: &mut Vec<NotRedecided>,
) {
    use crate::gates::suites::{decide, kept_observation};
    let Some(opts) = &profile.suites else {
        not.push(NotRedecided {
            gate: g.id.clone(),
            why: "the kept profile names no suites: the gate ran nothing".into(),
        });
        return;
    };
    // A non-default SDK group's run (`--sdk-group`: its candidates carry
    // their group, and it records no `sdk_groups`, which the default
    // group's run does) made its candidates' own runs only; the default
    // group's run made the repository-level runs over its group's
    // candidates.
    let group_run = ev.sdk_groups.is_none() && ev.candidates.iter().any(|c| c.sdk_group.is_some());
    if group_run {
        not.push(NotRedecided {
            gate: g.id.clone(),
            why: "a non-default SDK group's run: the repository-level runs are the default group's run's".into(),
        });
        return;
    }
    let group: Vec<crate::profile::CandidateSpec> = crate::gates::suites::group_candidates(profile)
        .cloned()
        .collect();
    let obs = match kept_observation(dir, opts, &group, &ev.source.commit) {
        Ok(o) => o,
        Err(e) => {
            not.push(NotRedecided {
                gate: g.id.clone(),
                why: e,
            });
            return;
        }
    };
    // Each candidate's own runs are not rebuilt from the directory: their
    // checks (each naming its candidate) are left out of the comparison.
    let own: Vec<&str> = g
        .checks
        .iter()
        .filter_map(|k| k.candidate.as_deref())
        .collect();
    if !own.is_empty() {
        not.push(NotRedecided {
            gate: format!("{} (candidates' own tests)", g.id),
            why: "each candidate's own runs (its `<folder>/...` checks) are not rebuilt from the kept \
                  observations; only the repository-level runs are re-decided"
                .into(),
        });
    }
    if g.checks.iter().any(|k| k.name == "repository-runs") {
        not.push(NotRedecided {
            gate: g.id.clone(),
            why: "the repository-level runs were not made (candidates were left out)".into(),
        });
        return;
    }
    let skipped = suites_skipped;
    not.extend(skipped_named(g));
    let mut redecided = decide(&obs, opts);
    redecided.extend(crate::gates::suites::other_groups_check(profile));
    compare(
        g,
        &redecided,
        &|k: &Check| skipped(k).is_none(),
        "logs/suites (collection records, JUnit reports, .cmd), staging/source, extracted and logs/profile.toml",
        rows,
    );
}

fn shared_copies(
    dir: &Path,
    ev: &Evidence,
    profile: &Profile,
    g: &GateRecord,
    rows: &mut Vec<Row>,
    not: &mut Vec<NotRedecided>,
) {
    let selected: Vec<&str> = ev.candidates.iter().map(|c| c.folder.as_str()).collect();
    match crate::gates::shared_copies::redecide_kept(dir, profile, &selected) {
        Ok(redecided) => compare(
            g,
            &redecided,
            &|_| true,
            "staging/source and logs/profile.toml",
            rows,
        ),
        Err(why) => not.push(NotRedecided {
            gate: g.id.clone(),
            why,
        }),
    }
}

fn sdk_record(
    dir: &Path,
    ev: &Evidence,
    profile: &Profile,
    g: &GateRecord,
    rows: &mut Vec<Row>,
    not: &mut Vec<NotRedecided>,
) {
    use crate::gates::sdk_record::{redecide_kept, KEPT_REDECIDED};
    let kept = |k: &Check| KEPT_REDECIDED.contains(&k.name.as_str());
    for k in g.checks.iter().filter(|k| !kept(k)) {
        not.push(NotRedecided {
            gate: format!("{} {}", g.id, k.name),
            why:
                "decides from the interpreter's installed files (RECORD rows re-hashed, bytecode, \
                  .pth and start-up files), which the directory does not keep"
                    .into(),
        });
    }
    match redecide_kept(dir, profile.sdk.version(), &ev.sdk.python) {
        Ok(redecided) => compare(
            g,
            &redecided,
            &kept,
            "logs/sdk-record/probe.stdout and logs/profile.toml",
            rows,
        ),
        Err(why) => not.push(NotRedecided {
            gate: format!("{} sdk-version", g.id),
            why,
        }),
    }
}

/// `name` or `name (candidate)`.
fn key_text(k: &Check) -> String {
    match &k.candidate {
        Some(c) => format!("{} ({c})", k.name),
        None => k.name.clone(),
    }
}

fn word(r: CheckResult) -> &'static str {
    match r {
        CheckResult::Pass => "pass",
        CheckResult::Fail => "fail",
        CheckResult::Warn => "warn",
    }
}

/// Compares the checks of `g` that `within` selects with the re-decided
/// ones it selects, by name, candidate and result.
fn compare(
    g: &GateRecord,
    redecided: &[Check],
    within: &dyn Fn(&Check) -> bool,
    from: &str,
    rows: &mut Vec<Row>,
) {
    type Key = (String, Option<String>);
    let index = |checks: &[Check]| -> BTreeMap<Key, Check> {
        checks
            .iter()
            .filter(|k| !NOT_DECIDED_BY_GATES.contains(&k.name.as_str()) && within(k))
            .map(|k| ((k.name.clone(), k.candidate.clone()), k.clone()))
            .collect()
    };
    let (recorded, observed) = (index(&g.checks), index(redecided));
    let mut differ = 0;
    for (key, r) in &recorded {
        let (item, observed_text) = match observed.get(key) {
            Some(o) if o.result == r.result => continue,
            Some(o) => (
                key_text(o),
                format!(
                    "{}: {}",
                    word(o.result),
                    o.detail.lines().next().unwrap_or_default()
                ),
            ),
            None => (key_text(r), "absent".to_string()),
        };
        differ += 1;
        rows.push(Row::new(
            format!("{} check {item} (re-decided from {from})", g.id),
            word(r.result),
            observed_text,
        ));
    }
    for (key, o) in &observed {
        if !recorded.contains_key(key) {
            differ += 1;
            rows.push(Row::new(
                format!("{} check {} (re-decided from {from})", g.id, key_text(o)),
                "absent",
                format!(
                    "{}: {}",
                    word(o.result),
                    o.detail.lines().next().unwrap_or_default()
                ),
            ));
        }
    }
    if differ == 0 {
        // The candidate, when every compared check is one candidate's.
        let mut candidates = recorded.keys().map(|(_, c)| c.as_deref());
        let first = candidates.next().flatten();
        let scope = match first {
            Some(c) if candidates.all(|o| o == Some(c)) => format!(" ({c})"),
            _ => String::new(),
        };
        rows.push(Row::new(
            format!("{}{scope} re-decided from {from}", g.id),
            format!("{} checks", recorded.len()),
            format!("{} checks", observed.len()),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::testing::gate;

    fn ok(name: &str, candidate: Option<&str>) -> Check {
        Check::pass(name, candidate, "held").with_observed(serde_json::json!({"x": 1}))
    }

    #[test]
    fn the_sweeps_checks_are_never_compared_and_a_differing_gate_check_still_is() {
        let recorded = gate(
            "suites",
            GateResult::Fail,
            true,
            vec![
                ok("tree/outcomes", None),
                Check::fail(crate::sweep::LINKS_CHECK, None, "a link to /etc/shadow"),
                Check::warn(crate::sweep::SIZE_CHECK, None, "cut"),
            ],
        );
        let mut rows = Vec::new();
        compare(
            &recorded,
            &[ok("tree/outcomes", None)],
            &|_| true,
            "F",
            &mut rows,
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].item, "suites re-decided from F");
        assert_eq!(rows[0].recorded, rows[0].observed);
        // Counterexample: a gate's own check that differs is still a row.
        let mut rows = Vec::new();
        compare(&recorded, &[], &|_| true, "F", &mut rows);
        assert_eq!(
            rows[0].item,
            "suites check tree/outcomes (re-decided from F)"
        );
    }

    #[test]
    fn a_differing_absent_or_extra_check_is_a_mismatch_row_naming_gate_check_and_both_results() {
        let recorded = gate(
            "g",
            GateResult::Pass,
            true,
            vec![
                ok("a", Some("c1")),
                ok("b", None),
                ok("gone", None),
                Check::fail(RESIDUE, None, "pid 1"),
            ],
        );
        let redecided = vec![
            ok("a", Some("c1")),
            Check::fail("b", None, "the kept file says otherwise\nmore"),
            ok("new", None),
        ];
        let mut rows = Vec::new();
        compare(&recorded, &redecided, &|_| true, "F", &mut rows);
        let text: Vec<(String, String, String)> = rows
            .iter()
            .map(|r| (r.item.clone(), r.recorded.clone(), r.observed.clone()))
            .collect();
        assert_eq!(
            text,
            [
                (
                    "g check b (re-decided from F)".to_string(),
                    "pass".to_string(),
                    "fail: the kept file says otherwise".to_string()
                ),
                (
                    "g check gone (re-decided from F)".to_string(),
                    "pass".to_string(),
                    "absent".to_string()
                ),
                (
                    "g check new (re-decided from F)".to_string(),
                    "absent".to_string(),
                    "pass: held".to_string()
                ),
            ]
        );
        assert!(rows.iter().all(|r| r.matches == super::super::Match::No));

        // Agreement is one row; the candidate is named when it is the only one.
        let mut rows = Vec::new();
        compare(
            &recorded,
            &[ok("a", Some("c1"))],
            &|k| k.candidate.as_deref() == Some("c1"),
            "F",
            &mut rows,
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].item, "g (c1) re-decided from F");
        assert_eq!(rows[0].matches, super::super::Match::Yes);
    }

    #[test]
    fn a_passing_gate_with_a_failing_check_is_a_mismatch_and_a_stopped_gate_is_not_judged() {
        let mut rows = Vec::new();
        consistent_result(
            &gate(
                "g",
                GateResult::Pass,
                true,
                vec![Check::fail("x", Some("c"), "no")],
            ),
            &mut rows,
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].item, "gate g result (from its checks)");
        assert_eq!(rows[0].observed, "fail: failing check(s) x (c)");
        let mut rows = Vec::new();
        consistent_result(
            &gate(
                "g",
                GateResult::Fail,
                true,
                vec![Check::fail("x", None, "no")],
            ),
            &mut rows,
        );
        assert!(rows.is_empty());
        let stopped = gate(
            "g",
            GateResult::Fail,
            true,
            vec![Check::fail("gate-error", None, "x")],
        );
        assert!(not_judged(&stopped).is_some());
        let interrupted = gate("g", GateResult::Skipped, true, vec![ok("a", None)]);
        assert!(not_judged(&interrupted).is_some());
        assert!(not_judged(&gate("g", GateResult::Pass, true, vec![ok("a", None)])).is_none());
    }
}
