//! The report's sections: the candidates × gates matrix, failures,
//! warnings, archives and the catalogue (the timeline is in `timeline.rs`).

use super::{secs, worst, OBSERVED_SHOWN};
use crate::evidence::model::{
    CandidateRecord, CandidateResult, CandidateVerdict, Check, CheckResult, Evidence, GateRecord,
    GateResult, SdkGroupCandidate, SdkGroupRecord,
};
use crate::evidence::{consequences_of, root_of};
use maud::{html, Markup};

/// One row per candidate (this run's, then each other SDK group's), one
/// column per gate: the gate's result for that candidate.
pub(super) fn matrix(ev: &Evidence) -> Markup {
    let others: Vec<(&SdkGroupRecord, &SdkGroupCandidate)> = ev
        .sdk_groups
        .iter()
        .flatten()
        .filter(|g| !g.default)
        .flat_map(|g| g.candidates.iter().map(move |c| (g, c)))
        .collect();
    html! {
        section #matrix {
            h2 { "Candidates × gates" }
            p.note {
                "A row per candidate, a column per gate in run order: the gate's result for the \
                 candidate, from the checks naming it and the gate-wide ones (hover for the counts). "
                "A candidate of another SDK group was certified by that group's own run, \
                 whose directory has its own report."
            }
            div.scroll {
                table.matrix {
                    thead { tr {
                        th { "candidate" } th { "SDK" } th { "placement" } th { "verdict" }
                        @for g in &ev.gates { th.gate scope="col" data-gate=(g.id) { span { (g.id) } } }
                    } }
                    tbody {
                        @for c in &ev.candidates { (candidate_row(ev, c)) }
                        @for (g, c) in &others { (group_row(ev, g, c)) }
                    }
                }
            }
        }
    }
}

fn candidate_row(ev: &Evidence, c: &CandidateRecord) -> Markup {
    let sdk = c.sdk_group.as_deref().unwrap_or(&ev.sdk.requirement);
    let why_sdk = c.sdk_choice.as_ref().map_or(sdk, |s| s.reason.as_str());
    let placement = placement_word(c);
    html! {
        tr data-candidate=(c.folder) {
            th scope="row" { (c.folder) }
            td title=(why_sdk) { code { (sdk_version(sdk)) } }
            td data-placement=(placement) { (placement) }
            (verdict_cell(c.verdict.as_ref()))
            @for g in &ev.gates { (gate_cell(g, &c.folder)) }
        }
    }
}

/// The version of an exact `langbot-plugin==V` pin (the column is narrow),
/// else the requirement as written.
fn sdk_version(requirement: &str) -> &str {
    requirement
        .strip_prefix("langbot-plugin==")
        .unwrap_or(requirement)
}

/// A candidate of another SDK group: its verdict as its run recorded it.
fn group_row(ev: &Evidence, g: &SdkGroupRecord, c: &SdkGroupCandidate) -> Markup {
    let word = c.verdict.map_or("none", CandidateResult::word);
    let elsewhere = g.evidence.as_deref().unwrap_or("(no evidence directory)");
    html! {
        tr data-candidate=(c.folder) data-sdk-group=(g.requirement) {
            th scope="row" { (c.folder) }
            td title=(g.requirement) { code { (sdk_version(&g.requirement)) } }
            td data-placement="see-group" { "in its group's run" }
            td.(word) data-verdict=(word) {
                (word) @if let Some(at) = &c.stopped_at { br; small { (at) } }
            }
            td.elsewhere colspan=(ev.gates.len().max(1)) {
                "certified by its group's own run: " code { (elsewhere) "/report.html" }
                @if let Some(e) = &g.error { " (" (e) ")" }
            }
        }
    }
}

/// `dedicated`, `shared-runtime-v1`, `refused` (a shared claim not
/// certified) or `not checked` (the placement gate did not run).
fn placement_word(c: &CandidateRecord) -> &'static str {
    match &c.placement {
        None => "not checked",
        Some(p) => p.certified.map_or("refused", |p| p.word()),
    }
}

fn verdict_cell(v: Option<&CandidateVerdict>) -> Markup {
    let Some(v) = v else {
        return html! { td.none data-verdict="none" { "none" } };
    };
    let word = v.result.word();
    let at = v.gate.as_ref().map(|g| match &v.check {
        Some(c) => format!("{g}/{c}"),
        None => g.clone(),
    });
    html! {
        td.(word) data-verdict=(word) title=[v.reason.as_deref()] {
            (word) @if let Some(at) = at { br; small { (at) } }
        }
    }
}

/// The cell of `gate` for candidate `folder`.
fn gate_cell(gate: &GateRecord, folder: &str) -> Markup {
    let (word, title) = cell(gate, folder);
    // A gate the run did not run is a dash: the columns stay narrow.
    let text = if word == "skipped" { "–" } else { word };
    html! { td.(word) data-gate=(gate.id) data-result=(word) title=(title) { (text) } }
}

/// The word of a matrix cell and its tooltip: the gate's result when it
/// did not run, `left-out` when an earlier gate failed the candidate, else
/// the worst of the checks naming the candidate and the gate-wide checks.
fn cell(gate: &GateRecord, folder: &str) -> (&'static str, String) {
    let reason = gate.reason.clone().unwrap_or_default();
    match gate.result {
        GateResult::Skipped if gate.required => return ("interrupted", reason),
        GateResult::Skipped => return ("skipped", reason),
        GateResult::Blocked => return ("blocked", reason),
        GateResult::Pass | GateResult::Fail => {}
    }
    if gate.candidates_left_out.iter().any(|c| c == folder) {
        let why = "not checked: an earlier gate it requires failed for this candidate";
        return ("left-out", why.into());
    }
    let own: Vec<&Check> = gate
        .checks
        .iter()
        .filter(|c| c.candidate.as_deref() == Some(folder))
        .collect();
    let wide: Vec<&Check> = gate
        .checks
        .iter()
        .filter(|c| c.candidate.is_none())
        .collect();
    let all = || own.iter().chain(&wide);
    let Some(result) = worst(all().map(|c| c.result)) else {
        return ("unchecked", "the gate recorded no check for it".into());
    };
    let mut title = format!(
        "{} check(s) of its own, {} gate-wide",
        own.len(),
        wide.len()
    );
    let failing: Vec<&str> = all()
        .filter(|c| c.result == result && result != CheckResult::Pass)
        .map(|c| c.name.as_str())
        .collect();
    if !failing.is_empty() {
        title.push_str(&format!("; {}: {}", check_word(result), failing.join(", ")));
    }
    (check_word(result), title)
}

fn check_word(r: CheckResult) -> &'static str {
    match r {
        CheckResult::Pass => "pass",
        CheckResult::Warn => "warn",
        CheckResult::Fail => "fail",
    }
}

/// Every failing check that is a finding of its own, with the checks it
/// made impossible folded under it and its observed values; every required
/// gate that did not run; every other SDK group that did not pass.
pub(super) fn failures(ev: &Evidence) -> Markup {
    let roots: Vec<(&GateRecord, &Check)> = ev
        .gates
        .iter()
        .flat_map(|g| g.checks.iter().map(move |c| (g, c)))
        .filter(|(g, c)| c.result == CheckResult::Fail && root_of(g, c).is_none())
        .collect();
    let stopped: Vec<&GateRecord> = ev
        .gates
        .iter()
        .filter(|g| g.required && matches!(g.result, GateResult::Blocked | GateResult::Skipped))
        .collect();
    let groups: Vec<&SdkGroupRecord> = ev
        .sdk_groups
        .iter()
        .flatten()
        .filter(|g| !g.default && g.verdict != crate::evidence::Verdict::Pass)
        .collect();
    let count = roots.len() + stopped.len() + groups.len();
    html! {
        section #failures {
            h2 { "Failures (" (count) ")" }
            @if count == 0 { p { "None." } }
            @for (g, c) in &roots { (failure(g, c)) }
            @for g in &stopped {
                article.failure data-gate=(g.id) {
                    h3 { (g.id) ": " (cell(g, "").0) }
                    pre.cause { (g.reason.as_deref().unwrap_or("no reason recorded")) }
                }
            }
            @for g in &groups {
                article.failure data-sdk-group=(g.requirement) {
                    h3 { "SDK group " (g.requirement) ": " (g.verdict.word()) }
                    p { "Its own run's report: " code { (g.evidence.as_deref().unwrap_or("(none)")) "/report.html" } }
                    @if let Some(e) = &g.error { pre.cause { (e) } }
                }
            }
        }
    }
}

fn failure(g: &GateRecord, c: &Check) -> Markup {
    let consequences = consequences_of(g, c);
    html! {
        article.failure data-gate=(g.id) data-check=(c.name) data-candidate=[c.candidate.as_deref()] {
            h3 { (g.id) " / " @if let Some(who) = &c.candidate { (who) " / " } (c.name) }
            pre.cause { (c.detail) }
            @if !consequences.is_empty() {
                details.consequences {
                    summary { (consequences.len()) " consequence(s): checks this finding left unestablished" }
                    ul { @for k in &consequences {
                        li { b { (k.name) } " (" (check_word(k.result)) "): " (k.detail) }
                    } }
                }
            }
            (observed(c))
        }
    }
}

/// A check's observed values, pretty JSON, at most [`OBSERVED_SHOWN`] bytes.
fn observed(c: &Check) -> Markup {
    let Some(o) = &c.observed else {
        return html! { p.note { "No observed values recorded." } };
    };
    let text = serde_json::to_string_pretty(o.value()).unwrap_or_else(|_| o.text().to_string());
    let cut = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|i| *i >= OBSERVED_SHOWN)
        .unwrap_or(text.len());
    html! {
        details.observed {
            summary { "observed values" }
            pre { (text[..cut]) @if cut < text.len() {
                "\n… " (text.len() - cut) " more bytes: the whole value is in evidence.json"
            } }
        }
    }
}

/// Every warning check: held, with a finding that keeps the run from a
/// plain `PASSED`; and each other SDK group's count of warnings.
pub(super) fn warnings(ev: &Evidence) -> Markup {
    let warns: Vec<(&GateRecord, &Check)> = ev
        .gates
        .iter()
        .flat_map(|g| g.checks.iter().map(move |c| (g, c)))
        .filter(|(_, c)| c.result == CheckResult::Warn)
        .collect();
    let groups: Vec<&SdkGroupRecord> = ev
        .sdk_groups
        .iter()
        .flatten()
        .filter(|g| !g.default && g.warnings > 0)
        .collect();
    html! {
        section #warnings {
            h2 { "Warnings (" (warns.len()) ")" }
            p.note { "A warning held but carries a finding a reviewer must read: it does not fail its gate, \
                      and a run of required gates with one is WARNED, never PASSED. Its text says why it is \
                      not a plain pass." }
            @for (g, c) in &warns {
                article.warning data-gate=(g.id) data-check=(c.name) data-candidate=[c.candidate.as_deref()] {
                    h3 { (g.id) " / " @if let Some(who) = &c.candidate { (who) " / " } (c.name)
                         @if !g.required { small { " (gate not required: not counted)" } } }
                    pre.cause { (c.detail) }
                    (observed(c))
                }
            }
            @for g in &groups {
                p { "SDK group " code { (g.requirement) } ": " (g.warnings) " warning(s) in its own run ("
                    code { (g.evidence.as_deref().unwrap_or("(none)")) "/report.html" } ")" }
            }
        }
    }
}

/// Every candidate's archive: sha256, size, content digest and the SDK's
/// normalized digest, which a signer signs.
pub(super) fn archives(ev: &Evidence) -> Markup {
    let others = ev.sdk_groups.iter().flatten().filter(|g| !g.default);
    html! {
        section #archives {
            h2 { "Archives" }
            p.note { "The normalized digest is the SDK's " code { "normalized_zip_digest" } " (sha256 of the \
                      archive without its ZIP comment): the digest a signer signs, recorded by the placement \
                      gate; for an unsigned archive it equals the sha256. The content digest (over the members' \
                      names, sizes and digests) is stable across rebuilds." }
            div.scroll { table.archives {
                thead { tr { th { "candidate" } th { "archive" } th { "bytes" } th { "sha256" }
                    th { "normalized digest (signed)" } th { "content digest" } th { "members" } } }
                tbody {
                    @for c in &ev.candidates { tr data-candidate=(c.folder) {
                        th scope="row" { (c.folder) }
                        @match &c.archive {
                            Some(a) => {
                                td { code { (a.path) } } td.num { (a.size) } td { code.digest { (a.sha256) } }
                                td { @match &a.normalized_zip_digest {
                                    Some(d) => { code.digest data-normalized { (d) } }
                                    None => { span.none { "not recorded (placement did not run)" } }
                                } }
                                td { code.digest { (a.content_digest) } } td.num { (a.members.len()) }
                            }
                            None => { td.none colspan="6" { "no archive: not built or not inspected" } }
                        }
                    } }
                    @for g in others { @for c in &g.candidates { tr data-candidate=(c.folder) data-sdk-group=(g.requirement) {
                        th scope="row" { (c.folder) }
                        @match &c.archive {
                            Some(a) => { td { code { (g.evidence.as_deref().unwrap_or("")) "/" (a.path) } } td.num { "" }
                                td { code.digest { (a.sha256) } } td.none colspan="3" { "in its group's evidence" } }
                            None => { td.none colspan="6" { "no archive in its group's run" } }
                        }
                    } } }
                }
            } }
        }
    }
}

/// What each gate proves and does not prove (the catalogue's text, as the
/// evidence recorded it), folded per gate under its result.
pub(super) fn catalogue(ev: &Evidence) -> Markup {
    html! {
        section #catalogue {
            h2 { "What each gate proves" }
            @for g in &ev.gates {
                details.gate data-gate=(g.id) {
                    summary {
                        code { (g.id) } " " span.(g.result.word()) { (g.result.word()) }
                        small { " " (secs(g.duration_ms)) @if !g.required { ", not required" } }
                        @if let Some(r) = &g.reason { small { ": " (r) } }
                    }
                    @if let Some(n) = &g.note { p { small { (n) } } }
                    p { b { "A pass proves: " } (g.proves) }
                    p { b { "A pass does not prove: " } (g.does_not_prove) }
                }
            }
        }
    }
}
