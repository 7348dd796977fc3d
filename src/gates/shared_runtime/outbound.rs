//! What left the worker, judged against the invocations: which
//! installation's canary each DNS query or connection the host's sink
//! received shows ([`super::observe::Outbound`]), and whose invocations
//! were in progress when it arrived.
//!
//! A sighting of an installation's canary while one of its own invocations,
//! and only its, was in progress shows that invocation read its own
//! configuration (`own-configuration`). A sighting while none of that
//! installation's invocations was in progress (the other's ran, or none at
//! all) is its configuration used for another tenant or by work that
//! outlived its invocation (`no-cross-installation-canary`).

use super::observe::{HostObservation, Installation, OutboundEvent};
use std::collections::BTreeSet;

/// An installation's canary as it shows on the wire: a URL canary
/// (`http://vcc-canary-a-…-HEX.invalid/path`) by its host name, which a DNS
/// query, a Host header and a TLS server name carry; any other canary
/// whole. Matched without regard to case (HTTP clients lower-case host
/// names).
pub fn wire_mark(canary: &str) -> &str {
    canary
        .strip_prefix("http://")
        .and_then(|rest| rest.split(['/', ':']).next())
        .unwrap_or(canary)
}

/// `event` shows `canary` ([`wire_mark`], case-insensitive).
pub fn shows(event: &OutboundEvent, canary: &str) -> bool {
    let mark = wire_mark(canary).to_ascii_lowercase();
    !mark.is_empty() && event.text.to_ascii_lowercase().contains(&mark)
}

/// One installation's canary seen in one event.
#[derive(Debug, Clone)]
pub struct Sighting<'a> {
    /// What arrived.
    pub event: &'a OutboundEvent,
    /// Whose canary it shows.
    pub owner: &'a Installation,
    /// The canary's wire mark.
    pub mark: &'a str,
    /// The labels of the installations with an invocation in progress when
    /// it arrived (empty: none).
    pub active: BTreeSet<&'a str>,
    /// The phases of those invocations (`sequential`, `concurrent`,
    /// `after-revoke`).
    pub phases: BTreeSet<&'a str>,
}

impl Sighting<'_> {
    /// Only the owner's own invocations were in progress.
    pub fn own_alone(&self) -> bool {
        self.active.len() == 1 && self.active.contains(self.owner.label.as_str())
    }

    /// None of the owner's invocations was in progress.
    pub fn foreign(&self) -> bool {
        !self.active.contains(self.owner.label.as_str())
    }

    /// A sentence naming the event and when it came:
    /// `an outbound DNS query for NAME while only B's invocations ran`.
    pub fn sentence(&self) -> String {
        let when = if self.active.is_empty() {
            "while no invocation ran".to_string()
        } else {
            let who: Vec<_> = self.active.iter().copied().collect();
            format!("while only {}'s invocations ran", who.join(" and "))
        };
        format!("an outbound {} {when}", describe(self.event))
    }
}

/// `DNS query for NAME`, `HTTP request GET http://…` (its first line), `TLS
/// connection (server name: NAME)`; at most 200 characters of the event.
pub fn describe(event: &OutboundEvent) -> String {
    let first: String = event
        .text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    match event.kind.as_str() {
        "dns" => format!("DNS query for {first}"),
        "tls" => format!("TLS connection ({first}) to port {}", event.port),
        _ => format!("HTTP request `{first}` to port {}", event.port),
    }
}

/// Every (event, installation) pair where the event shows one of that
/// installation's canaries, with the invocations in progress at the time
/// (a call's window is `[t0, t1]` on the host's clock; a call without one
/// counts as not in progress).
pub fn sightings(obs: &HostObservation) -> Vec<Sighting<'_>> {
    let mut out = Vec::new();
    for event in &obs.outbound.events {
        let running: Vec<_> = obs
            .calls
            .iter()
            .filter(|c| matches!((c.t0, c.t1), (Some(a), Some(b)) if a <= event.t && event.t <= b))
            .collect();
        let active: BTreeSet<&str> = running.iter().map(|c| c.installation.as_str()).collect();
        let phases: BTreeSet<&str> = running.iter().map(|c| c.phase.as_str()).collect();
        for owner in &obs.installations {
            if let Some(canary) = owner.canaries().into_iter().find(|k| shows(event, k)) {
                out.push(Sighting {
                    event,
                    owner,
                    mark: wire_mark(canary),
                    active: active.clone(),
                    phases: phases.clone(),
                });
            }
        }
    }
    out
}

/// Requests swapped while A and B ran at once, which no single sighting
/// shows (both installations' invocations were in progress): an
/// installation whose sequential invocations sent its own canary out but
/// none of whose canaries was seen in the concurrent phase, while the
/// other's canary was seen there more often than in that installation's
/// own sequential invocations. One sentence per such installation. (A
/// plugin that caches a result sends less in the concurrent phase for
/// both, and is not named.)
pub fn concurrent_swaps(obs: &HostObservation) -> Vec<String> {
    let seen = sightings(obs);
    let count = |owner: &str, phase: &str, alone: bool| {
        seen.iter()
            .filter(|s| s.owner.label == owner && s.phases.contains(phase))
            .filter(|s| !alone || (s.own_alone() && s.phases.len() == 1))
            .count()
    };
    let mut out = Vec::new();
    for me in &obs.installations {
        let Some(other) = obs.installations.iter().find(|i| i.label != me.label) else {
            continue;
        };
        let (mine_alone, mine_at_once) = (
            count(&me.label, "sequential", true),
            count(&me.label, "concurrent", false),
        );
        let (theirs_alone, theirs_at_once) = (
            count(&other.label, "sequential", true),
            count(&other.label, "concurrent", false),
        );
        if mine_alone > 0 && mine_at_once == 0 && theirs_at_once > theirs_alone {
            out.push(format!(
                "run at once with {o}, {m}'s invocations sent out no request with its own configuration \
                 while {o}'s canary was seen {theirs_at_once} time(s) (one after the other, {m}'s own \
                 was seen {mine_alone} time(s) and {o}'s {theirs_alone}): {m}'s concurrent invocations \
                 read {o}'s configuration",
                m = me.label,
                o = other.label
            ));
        }
    }
    out
}

/// A one-line account of the sink for a check's `observed`: what it
/// listened on, its set-up errors, how many events of each kind arrived.
pub fn summary(obs: &HostObservation) -> serde_json::Value {
    let count = |kind: &str| {
        obs.outbound
            .events
            .iter()
            .filter(|e| e.kind == kind)
            .count()
    };
    serde_json::json!({
        "listening": obs.outbound.listening,
        "errors": obs.outbound.errors,
        "dns_queries": count("dns"),
        "http_requests": count("http"),
        "tls_connections": count("tls"),
        "dropped_without_canary": obs.outbound.dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::shared_runtime::observe::Call;
    use serde_json::json;

    fn inst(label: &str, canary: &str) -> Installation {
        Installation {
            label: label.into(),
            binding: json!({"installation_uuid": format!("uuid-{label}")}),
            config: [("endpoint".to_string(), canary.to_string())].into(),
            ..Installation::default()
        }
    }

    fn call(label: &str, t0: f64, t1: f64) -> Call {
        Call {
            phase: "sequential".into(),
            installation: label.into(),
            component: "Tool/search".into(),
            t0: Some(t0),
            t1: Some(t1),
            ..Call::default()
        }
    }

    fn dns(t: f64, name: &str) -> OutboundEvent {
        OutboundEvent {
            t,
            kind: "dns".into(),
            port: 53,
            text: name.into(),
        }
    }

    /// Installations A and B with their endpoint canaries, `calls` and the
    /// sink's `events`.
    fn observed(calls: Vec<Call>, events: Vec<OutboundEvent>) -> HostObservation {
        HostObservation {
            installations: vec![
                inst("A", "http://vcc-canary-a-endpoint-00aa.invalid/"),
                inst("B", "http://vcc-canary-b-endpoint-00bb.invalid/"),
            ],
            calls,
            outbound: super::super::observe::Outbound {
                events,
                ..Default::default()
            },
            ..HostObservation::default()
        }
    }

    /// A's concurrent request went to B's endpoint: no single sighting is
    /// foreign (both ran), but the counts show the swap; a plugin that
    /// simply sends less at once (a cache) is not named.
    #[test]
    fn a_request_swapped_while_both_ran_is_named_by_the_counts() {
        let mut calls = vec![call("A", 1.0, 2.0), call("B", 3.0, 4.0)];
        for label in ["A", "B"] {
            let mut c = call(label, 5.0, 6.0);
            c.phase = "concurrent".into();
            calls.push(c);
        }
        let mut obs = observed(
            calls,
            vec![
                dns(1.5, "vcc-canary-a-endpoint-00aa.invalid"),
                dns(3.5, "vcc-canary-b-endpoint-00bb.invalid"),
                dns(5.2, "vcc-canary-b-endpoint-00bb.invalid"),
                dns(5.3, "vcc-canary-b-endpoint-00bb.invalid"),
            ],
        );
        let swaps = concurrent_swaps(&obs);
        assert_eq!(swaps.len(), 1, "{swaps:?}");
        assert!(
            swaps[0].starts_with("run at once with B, A's invocations sent out no request"),
            "{swaps:?}"
        );
        obs.outbound.events.truncate(2);
        assert!(
            concurrent_swaps(&obs).is_empty(),
            "a cache sends less: no finding"
        );
        obs.outbound
            .events
            .push(dns(5.2, "vcc-canary-a-endpoint-00aa.invalid"));
        obs.outbound
            .events
            .push(dns(5.3, "vcc-canary-b-endpoint-00bb.invalid"));
        assert!(
            concurrent_swaps(&obs).is_empty(),
            "each its own at once: no finding"
        );
    }

    #[test]
    fn a_url_canary_shows_by_its_host_name_in_any_case() {
        let canary = "http://vcc-canary-a-endpoint-00ff.invalid/v1";
        assert_eq!(wire_mark(canary), "vcc-canary-a-endpoint-00ff.invalid");
        assert!(shows(
            &dns(1.0, "VCC-CANARY-A-ENDPOINT-00FF.invalid"),
            canary
        ));
        assert!(!shows(&dns(1.0, "api.example.com"), canary));
        assert_eq!(wire_mark("vcc-canary-A-key-00"), "vcc-canary-A-key-00");
    }

    #[test]
    fn a_sighting_is_own_in_its_installations_window_and_foreign_in_the_others() {
        let obs = observed(
            vec![call("A", 1.0, 2.0), call("B", 3.0, 4.0)],
            vec![
                dns(1.5, "vcc-canary-a-endpoint-00aa.invalid"),
                dns(3.5, "vcc-canary-a-endpoint-00aa.invalid"),
                dns(5.0, "vcc-canary-b-endpoint-00bb.invalid"),
                dns(3.6, "api.example.com"),
            ],
        );
        let seen = sightings(&obs);
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[0].own_alone() && !seen[0].foreign());
        assert!(seen[1].foreign() && !seen[1].own_alone());
        assert_eq!(
            seen[1].sentence(),
            "an outbound DNS query for vcc-canary-a-endpoint-00aa.invalid while only B's invocations ran"
        );
        assert!(seen[2].foreign());
        assert!(seen[2].sentence().ends_with("while no invocation ran"));
    }
}
