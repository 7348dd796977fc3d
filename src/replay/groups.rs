//! Replay of a run whose profile groups candidates by SDK pin
//! (`sdk_groups[]`, `src/pipeline/groups.rs`): each non-default group's
//! evidence directory (`groups/<pin>/`) is replayed as a directory of its
//! own (with `--repo`, rebuilt by the interpreter it recorded, never the
//! default group's `--python`/`$PYTHON`), and what this run recorded of it
//! (sign-off digest, verdict, interpreter facts, candidates) is compared
//! with that directory's evidence as re-derived.

use super::{inside_relative, replay, NotRedecided, ReplayOptions, Row};
use crate::evidence::{Evidence, SdkGroupCandidate, SdkGroupRecord};
use crate::pipeline::groups::{read, record};

/// `folder verdict, ...` for a row.
fn listed(candidates: &[SdkGroupCandidate]) -> String {
    candidates
        .iter()
        .map(|c| {
            format!(
                "{} {}{}{}",
                c.folder,
                c.verdict.map_or("(no verdict)", |v| v.word()),
                c.stopped_at
                    .as_deref()
                    .map_or_else(String::new, |at| format!(" at {at}")),
                c.archive.as_ref().map_or_else(String::new, |a| format!(
                    " archive {} sha256 {}",
                    a.path, a.sha256
                ))
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Appends the rows of every group of `ev` (in `dir`), and what each
/// group's own replay did not re-decide to `not`.
pub(super) fn replay_groups(
    opts: &ReplayOptions,
    dir: &std::path::Path,
    ev: &Evidence,
    rows: &mut Vec<Row>,
    not: &mut Vec<NotRedecided>,
) {
    let Some(groups) = &ev.sdk_groups else { return };
    for g in groups {
        replay_group(opts, dir, ev, g, rows, not);
    }
}

/// Appends the rows of the group `g` of `ev` (in `dir`), and what its own
/// replay did not re-decide to `not`.
fn replay_group(
    opts: &ReplayOptions,
    dir: &std::path::Path,
    ev: &Evidence,
    g: &SdkGroupRecord,
    rows: &mut Vec<Row>,
    not: &mut Vec<NotRedecided>,
) {
    let label = format!("sdk group {}", g.requirement);
    if g.default {
        // This directory's own run: its `sdk` is the group's facts.
        rows.extend(default_group_rows(ev, g, &label));
        return;
    }
    let relative = match sealed_relative(dir, g, &label) {
        Ok(relative) => relative,
        Err(row) => {
            rows.push(row);
            return;
        }
    };
    let sub_dir = dir.join(relative);
    let sub = match replay(&ReplayOptions {
        evidence: sub_dir.clone(),
        repo: opts.repo.clone(),
        python: None,
        recorded_python_only: true,
    }) {
        Ok(report) => report,
        Err(e) => {
            rows.push(Row::new(format!("{label} replay"), "replayable", e));
            return;
        }
    };
    rows.extend(sub.rows.into_iter().map(|r| Row {
        item: format!("{label}: {}", r.item),
        ..r
    }));
    not.extend(sub.not_redecided.into_iter().map(|n| NotRedecided {
        gate: format!("{label}: {}", n.gate),
        ..n
    }));
    let observed = match read(&sub_dir) {
        Ok(sub_ev) => record(&sub_ev, false, Some(relative.to_string())),
        Err(e) => {
            rows.push(Row::new(format!("{label} evidence.json"), "readable", e));
            return;
        }
    };
    rows.extend(compared_rows(g, &observed, &label));
}

/// The rows of the default group: this directory's own run, whose `sdk`
/// is the group's facts.
fn default_group_rows(ev: &Evidence, g: &SdkGroupRecord, label: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let own = record(ev, true, None);
    for (item, recorded, observed) in [
        ("python", &g.python, &own.python),
        ("requirement", &g.requirement, &own.requirement),
    ] {
        rows.push(Row::new(format!("{label} {item}"), recorded, observed));
    }
    rows.push(Row::new(
        format!("{label} sdk version"),
        g.version.clone().unwrap_or_else(|| "-".into()),
        own.version.unwrap_or_else(|| "-".into()),
    ));
    rows.push(Row::new(
        format!("{label} candidates"),
        listed(&g.candidates),
        listed(&own.candidates),
    ));
    rows
}

/// Where the group's sealed evidence is, relative to the directory; else
/// the row saying why there is none to replay: interrupted before its run
/// sealed any, its run left none (recorded as its failure), or a path not
/// inside the directory.
fn sealed_relative<'a>(
    dir: &std::path::Path,
    g: &'a SdkGroupRecord,
    label: &str,
) -> Result<&'a str, Row> {
    if g.evidence.is_none() && g.verdict == crate::evidence::Verdict::Incomplete {
        // Interrupted before its run sealed evidence: there is none.
        let sealed = dir
            .join(crate::pipeline::groups::relative_dir(&g.requirement))
            .join(crate::evidence::EVIDENCE_JSON);
        return Err(Row::new(
            format!("{label} evidence"),
            "none (the run was interrupted before this group's run sealed any)",
            if sealed.exists() {
                format!("{} exists", sealed.display())
            } else {
                "none (the run was interrupted before this group's run sealed any)".into()
            },
        ));
    }
    if let (None, Some(why)) = (&g.evidence, &g.error) {
        // Its run left no evidence (could not start, or was killed):
        // recorded as the group's failure; nothing of it to replay.
        return Err(Row::new(
            format!("{label} verdict"),
            "fail (its run left no evidence)",
            if g.verdict == crate::evidence::Verdict::Fail {
                "fail (its run left no evidence)".to_string()
            } else {
                format!("{} with the error {why:?}", g.verdict.word())
            },
        ));
    }
    let Some(relative) = g.evidence.as_deref().filter(|p| inside_relative(p)) else {
        return Err(Row::new(
            format!("{label} evidence"),
            "a relative path inside the evidence directory",
            g.evidence.clone().unwrap_or_else(|| "(none)".into()),
        ));
    };
    Ok(relative)
}

/// The rows comparing what this run recorded of the group `g` with its
/// directory's evidence as re-derived (`observed`).
fn compared_rows(g: &SdkGroupRecord, observed: &SdkGroupRecord, label: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    rows.push(Row::new(
        format!("{label} evidence_sha256"),
        show(&g.evidence_sha256),
        show(&observed.evidence_sha256),
    ));
    rows.push(Row::new(
        format!("{label} requirement"),
        &g.requirement,
        &observed.requirement,
    ));
    rows.push(Row::new(
        format!("{label} verdict"),
        g.verdict.word().to_string(),
        observed.verdict.word().to_string(),
    ));
    rows.push(Row::new(
        format!("{label} warnings"),
        g.warnings.to_string(),
        observed.warnings.to_string(),
    ));
    rows.push(Row::new(
        format!("{label} python"),
        &g.python,
        &observed.python,
    ));
    rows.push(Row::new(
        format!("{label} sdk version"),
        show(&g.version),
        show(&observed.version),
    ));
    rows.push(Row::new(
        format!("{label} RECORD sha256"),
        show(&g.record_sha256),
        show(&observed.record_sha256),
    ));
    rows.push(Row::new(
        format!("{label} candidates"),
        listed(&g.candidates),
        listed(&observed.candidates),
    ));
    rows
}
