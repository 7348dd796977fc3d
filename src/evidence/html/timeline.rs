//! The report's timeline: each gate's span (`started_ms`, `duration_ms`)
//! and, folded under it, each step it started (a reap in `signals[]` with
//! `started_ms`), on one scale, so a reviewer sees what ran beside what.

use super::secs;
use crate::evidence::model::{Evidence, GateRecord, SignalAction, SignalRecord, SignalWhy};
use maud::{html, Markup};

/// The timeline section.
pub(super) fn timeline(ev: &Evidence) -> Markup {
    let end = ev
        .gates
        .iter()
        .filter_map(|g| g.started_ms.map(|s| s + g.duration_ms))
        .chain(ev.signals.iter().map(|s| s.at_ms))
        .max()
        .unwrap_or(0)
        .max(1);
    let ran: Vec<&GateRecord> = ev.gates.iter().filter(|g| g.started_ms.is_some()).collect();
    let outside = steps(ev, None);
    html! {
        section #timeline {
            h2 { "Timeline" }
            p.note {
                "Milliseconds since the run started, 0 to " (secs(end)) ": each gate from its start to its end, \
                 and under it each step (child process) it started, from its start to its reap. Spans that \
                 overlap ran side by side. A step stopped by the harness says why."
            }
            @if ran.is_empty() { p { "No gate ran." } }
            @for g in &ran { (gate_span(ev, g, end)) }
            @if !outside.is_empty() {
                details.span.outside {
                    summary { span.label { "outside any gate" } span.track {} span.time {} span.count { (outside.len()) " step(s)" } }
                    (step_list(&outside, end))
                }
            }
        }
    }
}

/// The reaps of steps started by `gate` (none: outside any gate), by start.
fn steps<'a>(ev: &'a Evidence, gate: Option<&str>) -> Vec<&'a SignalRecord> {
    let mut steps: Vec<&SignalRecord> = ev
        .signals
        .iter()
        .filter(|s| s.action == SignalAction::Reap && s.started_ms.is_some())
        .filter(|s| s.gate.as_deref() == gate)
        .collect();
    steps.sort_by_key(|s| (s.started_ms, s.at_ms));
    steps
}

fn gate_span(ev: &Evidence, g: &GateRecord, end: u64) -> Markup {
    let start = g.started_ms.unwrap_or(0);
    let stop = start + g.duration_ms;
    let steps = steps(ev, Some(&g.id));
    let signalled = ev
        .signals
        .iter()
        .filter(|s| s.action != SignalAction::Reap && s.gate.as_deref() == Some(g.id.as_str()))
        .count();
    html! {
        details.span data-gate=(g.id) data-start-ms=(start) data-end-ms=(stop) {
            summary {
                span.label { (g.id) }
                (bar(start, stop, end, g.result.word()))
                span.time { (secs(start)) " – " (secs(stop)) }
                span.count { (steps.len()) " step(s)" @if signalled > 0 { ", " (signalled) " signal(s)" } }
            }
            (step_list(&steps, end))
        }
    }
}

fn step_list(steps: &[&SignalRecord], end: u64) -> Markup {
    html! {
        ol.steps { @for s in steps {
            @let start = s.started_ms.unwrap_or(s.at_ms);
            li data-start-ms=(start) data-end-ms=(s.at_ms) {
                (bar(start, s.at_ms, end, "step"))
                span.time { (secs(start)) " – " (secs(s.at_ms)) }
                @if s.why != SignalWhy::Exited { " " b { (why(s.why)) } }
                " " code.cmd { (s.cmdline) }
            }
        } }
    }
}

/// A bar from `start` to `stop` on a track `0..end` (percentages of the
/// track; at least 0.2 % wide so an instant still shows).
fn bar(start: u64, stop: u64, end: u64, class: &str) -> Markup {
    let left = start as f64 * 100.0 / end as f64;
    let width = (stop.saturating_sub(start) as f64 * 100.0 / end as f64).max(0.2);
    let style = format!("left:{left:.2}%;width:{width:.2}%");
    html! { span.track { span.bar.(class) style=(style) {} } }
}

fn why(w: SignalWhy) -> &'static str {
    match w {
        SignalWhy::Timeout => "stopped: time limit",
        SignalWhy::AfterExit => "its group outlived it",
        SignalWhy::Stop => "stopped when no longer needed",
        SignalWhy::Interrupt => "stopped: run interrupted",
        SignalWhy::Exited => "exited",
        SignalWhy::Residue => "residue",
        SignalWhy::Survey => "survey",
    }
}
