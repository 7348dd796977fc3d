//! `report.html`: one self-contained page for a reviewer, rendered from the
//! evidence like `junit.xml` and the statement. It shows the verdict and what
//! it covers, a matrix of candidates × gates (with each candidate's SDK and
//! placement), every failure with the consequences folded under it and its
//! observed values, every warning, each archive's digests (the normalized
//! digest a signer signs), a timeline of gates and steps, and what each gate
//! proves and does not prove.
//!
//! Self-contained and inert: inline CSS only, no script, no font, image or
//! link it loads; its Content-Security-Policy (`default-src 'none'`) forbids
//! any load, so a string that escaped its element could still fetch nothing.
//! Every string is HTML-escaped by the template (maud), and the whole page is
//! then passed through [`crate::output::escape_text`], as `junit.xml` is: a
//! control or bidirectional formatting character of the code under review
//! (a candidate folder, a test id, a command line) is shown as `\uXXXX`.
//! Long lines wrap (`overflow-wrap: anywhere`); the matrix scrolls inside
//! its own box. Deterministic: the same evidence renders the same bytes
//! (`replay` compares them).

mod sections;
mod timeline;

use super::model::{CheckResult, Evidence, GateResult, Verdict};
use super::statement;
use maud::{html, Markup, PreEscaped, DOCTYPE};

/// File name of the report in the evidence directory.
pub const REPORT_HTML: &str = "report.html";

/// The page's Content-Security-Policy: nothing may be loaded, fetched,
/// framed or submitted; only the inline style block and style attributes
/// (the timeline's bars) apply, and no script runs.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; \
                       script-src 'none'; base-uri 'none'; form-action 'none'";

/// Largest `observed` document shown for one check, in bytes of its pretty
/// JSON; the rest is in `evidence.json`.
pub const OBSERVED_SHOWN: usize = 8 * 1024;

const CSS: &str = include_str!("html/report.css");

/// Renders the page for `evidence`: a complete HTML5 document (UTF-8,
/// ending in a newline) holding no control or bidirectional formatting
/// character but newline and tab. Deterministic: the same evidence, the same
/// bytes.
pub fn render(evidence: &Evidence) -> String {
    let result = statement::result(evidence);
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (result) " · " (short(&evidence.source.commit)) " · verify-coding-candidates" }
                style { (PreEscaped(CSS)) }
            }
            body {
                (header(evidence, result))
                (sections::matrix(evidence))
                (sections::failures(evidence))
                (sections::warnings(evidence))
                (sections::archives(evidence))
                (timeline::timeline(evidence))
                (sections::catalogue(evidence))
            }
        }
    };
    let mut text = crate::output::escape_text(&page.into_string(), false);
    text.push('\n');
    text
}

/// The first 12 characters of a commit id or digest.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Milliseconds as seconds with one decimal (`12.3 s`).
fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The verdict, what it covers, the source, the SDK and the sign-off.
fn header(ev: &Evidence, result: &str) -> Markup {
    let class = match result {
        "PASSED" => "pass",
        "WARNED" => "warn",
        _ => "fail",
    };
    let passed = super::verdicts::passed(&ev.candidates).len();
    // As evidence.json writes it.
    let run = ev.verdict.word().to_lowercase();
    html! {
        header {
            h1 { "Certification report " span.verdict.(class) data-verdict=(result) { (result) } }
            dl.facts {
                dt { "Verdict" }
                dd { "run " b data-run-verdict=(run) { (run) }
                     "; " (statement::STATEMENT_JSON) " predicate.result " b { (result) } }
                @if let Some(why) = not_passed_because(ev, result) { dt { "Not PASSED because" } dd { (why) } }
                dt { "Covers" } dd data-covers { (coverage(ev)) }
                dt { "Source" } dd { (source(ev)) }
                dt { "Candidates" }
                dd { (passed) " of " (ev.candidates.len()) " passed in this run"
                     @if let Some(groups) = &ev.sdk_groups { " (" (groups.len()) " SDK groups: see the matrix)" } }
                dt { "SDK" }
                dd { code { (ev.sdk.requirement) } ", found " (ev.sdk.version.as_deref().unwrap_or("not observed"))
                     ", interpreter " code { (ev.sdk.python) } }
                dt { "Profile" } dd { (ev.profile.name) " (" (ev.profile.origin) "), sha256 " code { (ev.profile.sha256) } }
                dt { "Run" } dd { (ev.started_at) " to " (ev.finished_at) ", " (ev.tool.name) " " (ev.tool.version) }
                dt { "Sign-off" }
                dd { "evidence sha256 " code { (ev.sign_off.evidence_sha256) }
                     @if let Some(by) = &ev.sign_off.signed_off_by { ", signed off by " (by) }
                     "; archives signed: " (ev.sign_off.archives_signed)
                     " (the verifier never signs; the statement is unsigned)" }
            }
        }
    }
}

/// Why the statement is not `PASSED`, when it is not.
fn not_passed_because(ev: &Evidence, result: &str) -> Option<String> {
    if result == "PASSED" {
        return None;
    }
    let mut why = Vec::new();
    match ev.verdict {
        Verdict::Incomplete => why.push("the run was interrupted".to_string()),
        Verdict::Fail => {
            let failed: Vec<&str> = ev
                .gates
                .iter()
                .filter(|g| g.required && g.result != GateResult::Pass)
                .map(|g| g.id.as_str())
                .collect();
            why.push(format!(
                "required gate(s) did not pass: {}",
                failed.join(", ")
            ));
        }
        Verdict::Pass => {}
    }
    if ev.selection.partial {
        why.push("a partial run: only a full certification is PASSED".into());
    }
    let warnings = statement::warnings(ev);
    if warnings > 0 {
        why.push(format!("{warnings} warning(s) (listed below)"));
    }
    if ev.source.worktree.is_some() {
        why.push("the working tree is not a commit".into());
    }
    Some(why.join("; "))
}

/// Full or partial certification, and of which candidates and gates.
fn coverage(ev: &Evidence) -> String {
    let s = &ev.selection;
    let mut parts = Vec::new();
    if s.partial {
        parts.push("partial: not a certification of the commit".to_string());
        if let Some(only) = &s.only {
            parts.push(format!("--only {}", only.join(",")));
        }
        if let Some(p) = s.partition {
            parts.push(format!("--partition {}/{}", p.index, p.count));
        }
        if !s.gates_not_run.is_empty() {
            parts.push(format!(
                "{} of {} gates not run: {}",
                s.gates_not_run.len(),
                ev.gates.len(),
                s.gates_not_run.join(", ")
            ));
        }
    } else {
        parts.push("full certification: every gate of the catalogue was required".into());
    }
    if !s.not_applicable.is_empty() {
        parts.push(format!(
            "nothing to observe for: {}",
            s.not_applicable.join(", ")
        ));
    }
    if let Some(m) = &ev.merged_from {
        parts.push(format!("merged from {} runs", m.len()));
    }
    parts.join("; ")
}

/// The commit (or working tree) and repository.
fn source(ev: &Evidence) -> Markup {
    let s = &ev.source;
    html! {
        @match &s.worktree {
            Some(w) => {
                b { (w.label) } ", digest " code { (w.digest.as_deref().unwrap_or("not computed")) }
                ", base commit " code { (s.commit) } ", " (w.uncommitted.len()) " uncommitted path(s)"
            }
            None => { "commit " code data-commit { (s.commit) } ", tree " code { (s.tree) } }
        }
        " in " code { (s.repo) }
        @if let Some(origin) = &s.origin { " (" (origin) ")" }
    }
}

/// The worst of `results`: fail over warn over pass; `None` when empty.
fn worst(results: impl Iterator<Item = CheckResult>) -> Option<CheckResult> {
    results.max_by_key(|r| match r {
        CheckResult::Pass => 0,
        CheckResult::Warn => 1,
        CheckResult::Fail => 2,
    })
}

#[cfg(test)]
mod tests;
