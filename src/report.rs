//! Terminal views of a finished run's evidence (the catalogue's: [`crate::gate_list`]).

use crate::evidence::{
    self, statement, verdicts, CandidateResult, CandidateVerdict, Check, CheckResult, Evidence,
    GateRecord, GateResult, Verdict,
};
use std::fmt::Write;
use std::path::Path;

/// The final summary: one line per gate, every failing check with its
/// detail, one line per candidate with its own verdict and which candidates
/// passed, the run's verdict and where the evidence is.
///
/// `color` adds ANSI colour to the result words (callers pass false when
/// stdout is not a terminal or `NO_COLOR` is set).
pub fn summary(evidence: &Evidence, dir: &Path, color: bool) -> String {
    let paint = |word: &str, code: &str| {
        if color {
            format!("\x1b[{code}m{word}\x1b[0m")
        } else {
            word.to_string()
        }
    };
    let mut out = String::new();
    match &evidence.source.worktree {
        Some(w) => {
            let _ = writeln!(
                out,
                "{} ({}): digest {}, base commit {}, {} uncommitted path(s)",
                w.label,
                evidence.source.repo,
                w.digest.as_deref().unwrap_or("not computed"),
                evidence.source.commit,
                w.uncommitted.len()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "commit {} ({})",
                evidence.source.commit, evidence.source.repo
            );
        }
    }
    // Gates an `--only` run left out get one line together, not one row each.
    let not_selected = |g: &&GateRecord| {
        g.result == GateResult::Skipped
            && g.reason.as_deref() == Some(crate::pipeline::NOT_SELECTED_REASON)
    };
    let (left_out, shown): (Vec<&GateRecord>, Vec<&GateRecord>) =
        evidence.gates.iter().partition(not_selected);
    let width = shown.iter().map(|g| g.id.len()).max().unwrap_or(10);
    for g in shown {
        gate_lines(&mut out, g, width, &paint);
    }
    if !left_out.is_empty() {
        let ids: Vec<&str> = left_out.iter().map(|g| g.id.as_str()).collect();
        let _ = writeln!(out, "  not run (--only): {}", ids.join(", "));
    }
    archive_lines(&mut out, evidence);
    candidate_lines(&mut out, evidence, &paint);
    group_lines(&mut out, evidence, &paint);
    let _ = writeln!(
        out,
        "\n{}{}{}{}: evidence in {}",
        evidence.verdict.word(),
        warnings_note(evidence),
        worktree_note(evidence),
        partial_note(evidence),
        dir.display()
    );
    let _ = writeln!(
        out,
        "      sign-off evidence_sha256 {} (archives are not signed)",
        evidence.sign_off.evidence_sha256
    );
    let _ = writeln!(out, "      {}", statement_line(evidence));
    out
}

/// A gate's line (result, time, reason or note, candidates left out),
/// then each of its failing and warning checks that is no consequence, with
/// its detail and its consequences under it.
fn gate_lines(
    out: &mut String,
    g: &GateRecord,
    width: usize,
    paint: &dyn Fn(&str, &str) -> String,
) {
    let secs = g.duration_ms as f64 / 1000.0;
    let word = match g.result {
        GateResult::Pass => "pass",
        GateResult::Fail => "FAIL",
        GateResult::Skipped => "skipped",
        GateResult::Blocked => "blocked",
    };
    let painted = match g.result {
        GateResult::Pass => paint(&format!("{word:7}"), "32"),
        GateResult::Fail => paint(&format!("{word:7}"), "1;31"),
        _ => paint(&format!("{word:7}"), "33"),
    };
    let _ = write!(out, "  {:width$}  {painted}  {secs:6.1}s", g.id);
    if let Some(reason) = g.reason.as_deref().filter(|_| g.result != GateResult::Pass) {
        let _ = write!(out, "  {reason}");
    }
    if let Some(note) = g.note.as_deref().filter(|_| g.result == GateResult::Pass) {
        // The full note stays in evidence.json (`gates[].note`).
        let _ = write!(out, "  {}", shorten(note, NOTE_CHARS));
    }
    if !g.candidates_left_out.is_empty() {
        let _ = write!(
            out,
            "  (for the other candidates only; left out: {})",
            g.candidates_left_out.join(", ")
        );
    }
    out.push('\n');
    let judged = matches!(g.result, GateResult::Pass | GateResult::Fail);
    // A consequence is shown under its root finding, never as a
    // failure of its own (issue 14: one cause, one failure).
    for c in g
        .checks
        .iter()
        .filter(|c| judged && c.result != CheckResult::Pass && evidence::root_of(g, c).is_none())
    {
        let tag = if c.result == CheckResult::Warn {
            "warning"
        } else {
            "failed"
        };
        let _ = writeln!(out, "      {tag} {}{}:", who(c), c.name);
        for line in c.detail.lines() {
            let _ = writeln!(out, "        {line}");
        }
        for k in evidence::consequences_of(g, c) {
            let _ = writeln!(
                out,
                "        consequence (not a separate failure) {}{}:",
                who(k),
                k.name
            );
            for line in k.detail.lines() {
                let _ = writeln!(out, "          {line}");
            }
        }
    }
}

/// One line per built archive: its candidate folder, path and sha256.
fn archive_lines(out: &mut String, evidence: &Evidence) {
    let archived: Vec<_> = evidence
        .candidates
        .iter()
        .filter_map(|c| c.archive.as_ref().map(|a| (c.folder.as_str(), a)))
        .collect();
    let folder_width = archived
        .iter()
        .map(|(f, _)| f.chars().count())
        .max()
        .unwrap_or(0);
    for (folder, a) in archived {
        let _ = writeln!(
            out,
            "  {folder:folder_width$}  {}  sha256 {}",
            a.path, a.sha256
        );
    }
}

/// One line per candidate with its own verdict (`candidates[].verdict`):
/// `pass`, or `FAIL`/`not certified` with the gate and check that stopped
/// it; then which candidates passed, so a CI can certify those and list the
/// others. Nothing for evidence without candidate verdicts.
fn candidate_lines(out: &mut String, evidence: &Evidence, paint: &dyn Fn(&str, &str) -> String) {
    let judged: Vec<(&str, &CandidateVerdict)> = evidence
        .candidates
        .iter()
        .filter_map(|c| c.verdict.as_ref().map(|v| (c.folder.as_str(), v)))
        .collect();
    let placement = |folder: &str| {
        evidence
            .candidates
            .iter()
            .find(|c| c.folder == folder)
            .and_then(|c| c.placement.as_ref())
            .and_then(|p| p.certified)
    };
    if judged.is_empty() {
        return;
    }
    let _ = writeln!(out, "candidates:");
    let width = judged
        .iter()
        .map(|(f, _)| f.chars().count())
        .max()
        .unwrap_or(0);
    for (folder, v) in &judged {
        let (word, code) = match v.result {
            CandidateResult::Pass => ("pass", "32"),
            CandidateResult::Fail => ("FAIL", "1;31"),
            CandidateResult::NotCertified => ("not certified", "33"),
        };
        // Padded only when the gate that stopped it follows.
        let word = if v.gate.is_some() {
            format!("{word:13}")
        } else {
            word.to_string()
        };
        let _ = write!(out, "  {folder:width$}  {}", paint(&word, code));
        if let Some(gate) = &v.gate {
            let at = match &v.check {
                Some(check) => format!("{gate}/{check}"),
                None => gate.clone(),
            };
            let _ = write!(out, "  {at}");
            if let Some(reason) = &v.reason {
                let _ = write!(out, ": {}", shorten(reason, NOTE_CHARS));
            }
        } else if let Some(p) = placement(folder) {
            // A pass names the placement it was certified for.
            let _ = write!(out, "  {}", p.word());
        }
        out.push('\n');
    }
    let passed = verdicts::passed(&evidence.candidates);
    let _ = if passed.is_empty() {
        writeln!(out, "  passed: none of {} candidate(s)", judged.len())
    } else {
        writeln!(
            out,
            "  passed: {} of {} candidate(s): {}",
            passed.len(),
            judged.len(),
            passed.join(", ")
        )
    };
}

/// One line per SDK group of a run whose candidates are grouped by pin
/// (`sdk_groups[]`): its pin, verdict, the SDK version its interpreter was
/// verified at, its candidates and where its evidence is. Nothing for a run
/// with one pin.
fn group_lines(out: &mut String, evidence: &Evidence, paint: &dyn Fn(&str, &str) -> String) {
    let Some(groups) = &evidence.sdk_groups else {
        return;
    };
    let _ = writeln!(out, "sdk groups:");
    for g in groups {
        let (word, code) = match g.verdict {
            crate::evidence::Verdict::Pass => ("pass", "32"),
            crate::evidence::Verdict::Fail => ("FAIL", "1;31"),
            crate::evidence::Verdict::Incomplete => ("INCOMPLETE", "33"),
        };
        let folders: Vec<String> = g.candidates.iter().map(|c| c.folder.clone()).collect();
        let _ = writeln!(
            out,
            "  {}  {}  verified {}  candidates {}  evidence {}",
            g.requirement,
            paint(word, code),
            g.version.as_deref().unwrap_or("(not verified)"),
            folders.join(", "),
            g.evidence
                .as_deref()
                .unwrap_or(if g.default { "this directory" } else { "none" })
        );
        if let Some(why) = &g.error {
            let _ = writeln!(out, "    {}", shorten(why, NOTE_CHARS));
        }
        // Another group's candidates, each with its verdict in that
        // group's run (the `candidates:` lines above are this run's own).
        if !g.default {
            for c in &g.candidates {
                let word = c.verdict.map_or("(no verdict)", |v| v.word());
                let at = c
                    .stopped_at
                    .as_deref()
                    .map_or_else(String::new, |at| format!("  {at}"));
                let _ = writeln!(out, "    {}  {word}{at}", c.folder);
            }
        }
    }
    let all: Vec<&crate::evidence::SdkGroupCandidate> =
        groups.iter().flat_map(|g| g.candidates.iter()).collect();
    let passed: Vec<&str> = all
        .iter()
        .filter(|c| c.verdict == Some(CandidateResult::Pass))
        .map(|c| c.folder.as_str())
        .collect();
    let _ = writeln!(
        out,
        "  passed across the groups: {} of {} candidate(s){}",
        passed.len(),
        all.len(),
        if passed.is_empty() {
            String::new()
        } else {
            format!(": {}", passed.join(", "))
        }
    );
}

/// `candidate: ` for a per-candidate check, empty otherwise.
fn who(c: &Check) -> String {
    c.candidate
        .as_deref()
        .map(|s| format!("{s}: "))
        .unwrap_or_default()
}

/// ` with N warning(s)` after the verdict word of a pass whose required
/// gates recorded warnings (the statement says `WARNED` then); empty
/// otherwise.
fn warnings_note(evidence: &Evidence) -> String {
    let n = statement::warnings(evidence);
    match (evidence.verdict, n) {
        (Verdict::Pass, 1) => " with 1 warning".into(),
        (Verdict::Pass, n) if n > 1 => format!(" with {n} warnings"),
        _ => String::new(),
    }
}

/// What `statement.intoto.json` says, and why when it is not `PASSED` for a
/// pass: the same [`statement::result`] the statement is rendered with.
fn statement_line(evidence: &Evidence) -> String {
    let result = statement::result(evidence);
    let why = match (evidence.verdict, result) {
        (Verdict::Pass, "WARNED") if evidence.selection.partial => {
            " (a partial run: only a full certification is PASSED)"
        }
        (Verdict::Pass, "WARNED") => " (a pass with warnings)",
        _ => "",
    };
    format!(
        "statement {} predicate.result {result}{why}",
        statement::STATEMENT_JSON
    )
}

/// Longest gate note the table shows, in characters (notes run to 250).
/// With the longest gate id (`historical-admission`, 20) a row then stays
/// within 140 columns.
const NOTE_CHARS: usize = 96;

/// `text` cut to at most `max` characters, the last one `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

/// The gates a run did not require, as recorded in `selection.gates_not_run`.
pub fn gates_not_run(evidence: &Evidence) -> Vec<&str> {
    evidence
        .selection
        .gates_not_run
        .iter()
        .map(String::as_str)
        .collect()
}

/// ` (working tree, not a commit; not a certification of a commit)` after
/// the verdict word of a `--worktree` run; empty otherwise.
fn worktree_note(evidence: &Evidence) -> String {
    match &evidence.source.worktree {
        Some(w) => format!(" ({}; not a certification of a commit)", w.label),
        None => String::new(),
    }
}

/// ` (partial: --only X; N of M gates not run, ...)` or ` (partial:
/// --partition K/N: ...)` after the verdict word of a partial run (see
/// `Selection::partial`); empty otherwise. A partial pass is a developer's
/// quick check or one share of a matrix, never a certification of the commit.
fn partial_note(evidence: &Evidence) -> String {
    if !evidence.selection.partial {
        return String::new();
    }
    let mut parts = Vec::new();
    if let Some(only) = &evidence.selection.only {
        parts.push(format!("--only {}", only.join(",")));
    }
    if let Some(p) = evidence.selection.partition {
        // A grouped share's candidates of the other groups are in their runs.
        let others = evidence.sdk_groups.iter().flatten().filter(|g| !g.default);
        let folders: Vec<&str> = evidence
            .candidates
            .iter()
            .map(|c| c.folder.as_str())
            .chain(others.flat_map(|g| g.candidates.iter().map(|c| c.folder.as_str())))
            .collect();
        parts.push(format!(
            "--partition {}/{}: candidates {} only",
            p.index,
            p.count,
            folders.join(", ")
        ));
    }
    let not_run = gates_not_run(evidence);
    if !not_run.is_empty() {
        parts.push(format!(
            "{} of {} gates not run: {}",
            not_run.len(),
            evidence.gates.len(),
            not_run.join(", ")
        ));
    }
    // A working-tree run's own note says it already.
    if evidence.source.worktree.is_none() {
        parts.push("not a certification of the commit".to_string());
    }
    format!(" (partial: {})", parts.join("; "))
}

/// `--format json`: the summary as one JSON document (verdict, evidence
/// directory, sign-off digest, `warnings`, the statement's
/// `statement_result`, per candidate its `verdict` and `placement` and the folders that
/// passed (`candidates_passed`), and per gate its result, reason, time and failing
/// checks, each with the checks that are its `consequences`, which are not
/// listed as failing checks of their own; `partial` and `gates_not_run` for a partial run), from the same
/// evidence as the table.
pub fn summary_json(evidence: &Evidence, dir: &Path) -> String {
    let gates: Vec<serde_json::Value> = evidence
        .gates
        .iter()
        .map(|g| {
            serde_json::json!({
                "id": g.id,
                "result": g.result,
                "required": g.required,
                "reason": g.reason,
                "duration_ms": g.duration_ms,
                "failed_checks": g
                    .checks
                    .iter()
                    .filter(|c| c.result == CheckResult::Fail && evidence::root_of(g, c).is_none())
                    .map(|c| {
                        let consequences: Vec<serde_json::Value> = evidence::consequences_of(g, c)
                            .into_iter()
                            .map(|k| serde_json::json!({
                                "name": k.name, "candidate": k.candidate, "detail": k.detail
                            }))
                            .collect();
                        serde_json::json!({
                            "name": c.name, "candidate": c.candidate, "detail": c.detail,
                            "consequences": consequences,
                        })
                    })
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "verdict": evidence.verdict,
        "evidence_dir": dir.display().to_string(),
        "commit": evidence.source.commit,
        "evidence_sha256": evidence.sign_off.evidence_sha256,
        "partial": evidence.selection.partial,
        "gates_not_run": gates_not_run(evidence),
        "warnings": statement::warnings(evidence),
        "statement_result": statement::result(evidence),
        "worktree": evidence.source.worktree,
        "gates": gates,
        "candidates": evidence
            .candidates
            .iter()
            .map(|c| {
                serde_json::json!({
                    "folder": c.folder,
                    "verdict": c.verdict,
                    // `dedicated`, `shared-runtime-v1`, or null: refused or not judged.
                    "placement": c.placement.as_ref().and_then(|p| p.certified),
                })
            })
            .collect::<Vec<_>>(),
        "candidates_passed": verdicts::passed(&evidence.candidates),
        "sdk_groups": evidence.sdk_groups,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::evidence::testing::{evidence, full_pass, gate};
    use crate::evidence::Check;

    #[test]
    fn the_verdict_line_and_the_statement_agree() {
        let dir = Path::new("/ev");
        let full = full_pass();
        let text = summary(&full, dir, false);
        assert!(
            text.starts_with("commit "),
            "no leading blank line: {text:?}"
        );
        assert!(text.contains("\nPASS: evidence in /ev\n"), "{text}");
        assert!(
            text.contains("      statement statement.intoto.json predicate.result PASSED\n"),
            "{text}"
        );

        let mut warned = full_pass();
        warned.gates[0]
            .checks
            .push(Check::warn("backend", None, "process backend"));
        warned.gates[1].checks.push(Check::warn("x", None, "y"));
        let text = summary(&warned, dir, false);
        assert!(
            text.contains("\nPASS with 2 warnings: evidence in /ev\n"),
            "{text}"
        );
        assert!(
            text.contains("predicate.result WARNED (a pass with warnings)\n"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&summary_json(&warned, dir)).unwrap();
        assert_eq!(json["warnings"], 2);
        assert_eq!(json["statement_result"], "WARNED");

        let partial = evidence(
            vec![
                gate(
                    "tree-clean",
                    GateResult::Pass,
                    true,
                    vec![Check::pass("commit", None, "ok")],
                ),
                gate("stage", GateResult::Skipped, false, Vec::new()),
            ],
            Verdict::Pass,
        );
        let text = summary(&partial, dir, false);
        assert!(text.contains("\nPASS (partial: "), "{text}");
        assert_eq!(text.matches("not a certification").count(), 1, "{text}");
        // A working-tree run with --only says it once, in the worktree note.
        let mut worktree = partial.clone();
        worktree.source.worktree = Some(crate::evidence::WorktreeSource {
            label: "working tree, not a commit".into(),
            digest: None,
            files: None,
            uncommitted: Vec::new(),
        });
        let text = summary(&worktree, dir, false);
        assert!(
            text.contains(
                "(working tree, not a commit; not a certification of a commit) (partial: "
            ),
            "{text}"
        );
        assert_eq!(text.matches("not a certification").count(), 1, "{text}");
        // A grouped share names its candidates in every group it ran.
        let mut share = partial.clone();
        share.selection.partition = Some(crate::profile::Partition { index: 2, count: 2 });
        share.sdk_groups = Some(vec![serde_json::from_value(serde_json::json!({
            "requirement": "langbot-plugin==0.6.1", "default": false, "verdict": "pass",
            "python": "/p", "version": "0.6.1", "record_sha256": null,
            "candidates": [{"folder": "pinned-plugin", "verdict": "pass"}]
        }))
        .unwrap()]);
        let text = summary(&share, dir, false);
        assert!(
            text.contains("--partition 2/2: candidates pinned-plugin only"),
            "{text}"
        );
        assert!(
            text.contains(
                "predicate.result WARNED (a partial run: only a full certification is PASSED)\n"
            ),
            "{text}"
        );
    }

    /// A gate whose `record-rows` failed and whose `unlisted-files` failed
    /// only because of it, and a `bytecode` failure of its own.
    fn gate_with_a_consequence() -> Evidence {
        evidence(
            vec![gate(
                "sdk-record",
                GateResult::Fail,
                true,
                vec![
                    Check::pass("sdk-version", None, "0.6.0b5"),
                    Check::fail("record-rows", None, "row 7 is malformed"),
                    Check::fail(
                        "unlisted-files",
                        None,
                        "a.py not verified: its row is malformed",
                    )
                    .consequence_of("record-rows"),
                    Check::fail("bytecode", None, "x.pyc differs"),
                ],
            )],
            Verdict::Fail,
        )
    }

    #[test]
    fn a_consequence_is_shown_under_its_root_not_as_a_failure_of_its_own() {
        let text = summary(&gate_with_a_consequence(), Path::new("/ev"), false);
        assert!(
            text.contains(
                "      failed record-rows:\n        row 7 is malformed\n        consequence (not a separate failure) unlisted-files:\n          a.py not verified: its row is malformed\n      failed bytecode:\n"
            ),
            "{text}"
        );
        assert!(!text.contains("failed unlisted-files"), "{text}");
        assert_eq!(text.matches("      failed ").count(), 2, "{text}");
    }

    #[test]
    fn json_summary_nests_consequences_under_their_root() {
        let json: serde_json::Value =
            serde_json::from_str(&summary_json(&gate_with_a_consequence(), Path::new("/ev")))
                .unwrap();
        let failed = json["gates"][0]["failed_checks"].as_array().unwrap();
        let names: Vec<&str> = failed.iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["record-rows", "bytecode"]);
        assert_eq!(failed[0]["consequences"][0]["name"], "unlisted-files");
        assert_eq!(failed[1]["consequences"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn a_consequence_of_a_root_that_passed_or_is_absent_is_shown_as_its_own_failure() {
        let ev = evidence(
            vec![gate(
                "sdk-record",
                GateResult::Fail,
                true,
                vec![
                    Check::pass("record-rows", None, "ok"),
                    Check::fail("unlisted-files", None, "u").consequence_of("record-rows"),
                    Check::fail("bytecode", Some("a"), "b").consequence_of("missing-root"),
                ],
            )],
            Verdict::Fail,
        );
        let text = summary(&ev, Path::new("/ev"), false);
        assert!(
            text.contains("      failed unlisted-files:\n        u\n"),
            "{text}"
        );
        assert!(
            text.contains("      failed a: bytecode:\n        b\n"),
            "{text}"
        );
        assert!(!text.contains("consequence"), "{text}");
    }

    #[test]
    fn each_candidate_gets_a_line_with_its_verdict_and_the_ones_that_passed_are_named() {
        let mut dependencies = gate(
            "dependencies",
            GateResult::Pass,
            true,
            vec![Check::pass("prepare", Some("codex-agent"), "ok")],
        );
        dependencies.candidates_left_out = vec!["acp-agent-runner".into()];
        let mut ev = evidence(
            vec![
                gate(
                    "admission",
                    GateResult::Fail,
                    true,
                    vec![
                        Check::fail(
                            "sdk-requirement",
                            Some("acp-agent-runner"),
                            "pin refused\nmore",
                        ),
                        Check::pass("sdk-requirement", Some("codex-agent"), "ok"),
                    ],
                ),
                dependencies,
            ],
            Verdict::Fail,
        );
        // Evidence without candidate verdicts (older files): no such lines.
        assert!(!summary(&ev, Path::new("/ev"), false).contains("candidates:"));
        for folder in ["acp-agent-runner", "codex-agent"] {
            let mut c: crate::evidence::CandidateRecord = serde_json::from_value(
                serde_json::json!({"folder": folder, "path": format!("R/{folder}"),
                                   "manifest": null, "archive": null}),
            )
            .unwrap();
            c.verdict = Some(evidence::verdicts::of(&ev.gates, folder));
            ev.candidates.push(c);
        }
        let text = summary(&ev, Path::new("/ev"), false);
        assert!(
            text.contains("(for the other candidates only; left out: acp-agent-runner)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "candidates:\n  acp-agent-runner  FAIL           admission/sdk-requirement: pin refused\n  \
                 codex-agent       pass\n  passed: 1 of 2 candidate(s): codex-agent\n\nFAIL"
            ),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&summary_json(&ev, Path::new("/ev"))).unwrap();
        assert_eq!(
            json["candidates_passed"],
            serde_json::json!(["codex-agent"])
        );
        assert_eq!(json["candidates"][0]["verdict"]["result"], "fail");
        assert_eq!(json["candidates"][0]["verdict"]["check"], "sdk-requirement");
        assert_eq!(json["candidates"][1]["placement"], serde_json::Value::Null);
        // A passing candidate's certified placement follows its `pass`.
        ev.candidates[1].placement = Some(crate::evidence::PlacementRecord {
            shared_runtime: None,
            component_model: None,
            claimed: crate::evidence::Placement::Dedicated,
            certified: Some(crate::evidence::Placement::Dedicated),
            sdk_shared_runtime: false,
            shared_runtime_gate: "not run".into(),
            refused: Vec::new(),
        });
        let text = summary(&ev, Path::new("/ev"), false);
        assert!(
            text.contains("\n  codex-agent       pass  dedicated\n"),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&summary_json(&ev, Path::new("/ev"))).unwrap();
        assert_eq!(json["candidates"][1]["placement"], "dedicated");
        // Nobody passed: said so.
        ev.candidates.pop();
        assert!(
            summary(&ev, Path::new("/ev"), false).contains("  passed: none of 1 candidate(s)\n")
        );
    }

    #[test]
    fn a_grouped_run_lists_each_other_groups_candidates_with_their_verdicts_and_all_that_passed() {
        let mut ev = evidence(vec![], Verdict::Fail);
        ev.sdk_groups = Some(
            serde_json::from_value(serde_json::json!([
                {"requirement": "langbot-plugin==0.6.1", "default": true, "verdict": "fail",
                 "python": "/p", "version": "0.6.1", "record_sha256": null,
                 "candidates": [{"folder": "demo", "verdict": "fail",
                                 "stopped_at": "discovery-rpc/runner-probe"}]},
                {"requirement": "langbot-plugin==0.7.18", "default": false,
                 "evidence": "groups/langbot-plugin-0.7.18", "evidence_sha256": "ab",
                 "verdict": "pass", "python": "/q", "version": "0.7.18", "record_sha256": null,
                 "candidates": [{"folder": "weather", "verdict": "pass"},
                                {"folder": "search", "verdict": "fail",
                                 "stopped_at": "suites/search/tree/outcomes"}]}
            ]))
            .unwrap(),
        );
        let text = summary(&ev, Path::new("/ev"), false);
        assert!(
            text.contains(
                "  langbot-plugin==0.7.18  pass  verified 0.7.18  candidates weather, search  evidence \
                 groups/langbot-plugin-0.7.18\n    weather  pass\n    search  fail  suites/search/tree/outcomes\n"
            ),
            "{text}"
        );
        // The default group's candidates are this run's own `candidates:`
        // lines: not repeated under their group.
        assert!(!text.contains("    demo  fail"), "{text}");
        assert!(
            text.contains("  passed across the groups: 1 of 3 candidate(s): weather\n"),
            "{text}"
        );
    }

    #[test]
    fn shorten_keeps_short_text_and_cuts_long_text_to_max_chars_with_an_ellipsis() {
        assert_eq!(
            shorten("bwrap preflight succeeded", 100),
            "bwrap preflight succeeded"
        );
        let exact = "x".repeat(100);
        assert_eq!(shorten(&exact, 100), exact);
        let long = format!("{} tail", "é".repeat(120));
        let cut = shorten(&long, 100);
        assert_eq!(cut.chars().count(), 100, "{cut}");
        assert!(cut.ends_with("é…"), "{cut}");
        // No space is left before the ellipsis.
        assert_eq!(shorten("abc def", 5), "abc…");
    }
}
