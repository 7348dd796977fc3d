use super::*;
use crate::evidence::model::{
    ArchiveRecord, CandidateRecord, CandidateResult, CandidateVerdict, Check, Placement,
    PlacementRecord, SignalAction, SignalRecord, SignalWhy,
};
use crate::evidence::testing::{evidence, gate};

fn candidate(folder: &str, verdict: CandidateResult) -> CandidateRecord {
    CandidateRecord {
        folder: folder.into(),
        path: format!("Runner/{folder}"),
        manifest: None,
        archive: None,
        admission: None,
        dependencies: None,
        discovery: None,
        verdict: Some(CandidateVerdict {
            result: verdict,
            gate: (verdict != CandidateResult::Pass).then(|| "lbp-build".into()),
            check: (verdict != CandidateResult::Pass).then(|| "python-compiles".into()),
            reason: None,
        }),
        sdk_group: None,
        sdk_choice: None,
        placement: None,
    }
}

fn archive(sha: &str, normalized: Option<&str>) -> ArchiveRecord {
    ArchiveRecord {
        path: "packages/a/x-y-1.0.lbpkg".into(),
        sha256: sha.into(),
        size: 1234,
        content_digest: "c".repeat(64),
        members: Vec::new(),
        extracted: None,
        normalized_zip_digest: normalized.map(Into::into),
    }
}

fn observed(v: serde_json::Value) -> Option<crate::evidence::Observed> {
    Some(v.into())
}

/// One passing candidate (`good`) and one failing (`bad`) at `lbp-build`,
/// whose `archive-members` then left `bad` out.
fn pass_and_fail() -> Evidence {
    let mut build_fail = Check::fail("python-compiles", Some("bad"), "main.py:10: SyntaxError");
    build_fail.observed = observed(serde_json::json!({"errors": ["main.py:10"]}));
    let gates = vec![
        gate(
            "tree-clean",
            GateResult::Pass,
            true,
            vec![Check::pass("clean", None, "ok")],
        ),
        gate(
            "lbp-build",
            GateResult::Fail,
            true,
            vec![
                Check::pass("python-compiles", Some("good"), "ok"),
                build_fail,
                Check::fail("single-archive", Some("bad"), "no archive")
                    .consequence_of("python-compiles"),
            ],
        ),
        {
            let mut g = gate(
                "archive-members",
                GateResult::Pass,
                true,
                vec![Check::warn(
                    "hygiene",
                    Some("good"),
                    "a warning: why not a pass",
                )],
            );
            g.candidates_left_out = vec!["bad".into()];
            g
        },
    ];
    let mut ev = evidence(gates, Verdict::Fail);
    let mut good = candidate("good", CandidateResult::Pass);
    good.archive = Some(archive(&"a".repeat(64), Some(&"a".repeat(64))));
    good.placement = Some(PlacementRecord {
        shared_runtime: None,
        component_model: None,
        claimed: Placement::Dedicated,
        certified: Some(Placement::Dedicated),
        sdk_shared_runtime: false,
        shared_runtime_gate: "not run".into(),
        refused: Vec::new(),
    });
    ev.candidates = vec![good, candidate("bad", CandidateResult::Fail)];
    ev
}

#[test]
fn the_matrix_has_a_cell_per_candidate_and_gate_with_its_result() {
    let page = render(&pass_and_fail());
    for (gate, good, bad) in [
        ("tree-clean", "pass", "pass"),
        ("lbp-build", "pass", "fail"),
        ("archive-members", "warn", "left-out"),
    ] {
        for (who, word) in [("good", good), ("bad", bad)] {
            let row = row_of(&page, who);
            let cell = format!(r#"<td class="{word}" data-gate="{gate}" data-result="{word}""#);
            assert!(row.contains(&cell), "{who}/{gate}: {cell} not in {row}");
        }
    }
    assert!(row_of(&page, "good").contains(r#"data-placement="dedicated""#));
    assert!(row_of(&page, "bad").contains(r#"data-verdict="fail""#));
    assert!(row_of(&page, "bad").contains("lbp-build/python-compiles"));
    assert!(page.contains(r#"data-verdict="FAILED""#));
}

/// The matrix row of `folder`.
fn row_of<'a>(page: &'a str, folder: &str) -> &'a str {
    let start = page
        .find(&format!(r#"<tr data-candidate="{folder}">"#))
        .unwrap_or_else(|| panic!("no row for {folder}"));
    let end = page[start..].find("</tr>").unwrap() + start;
    &page[start..end]
}

#[test]
fn a_failure_shows_its_cause_observed_values_and_its_consequences_folded_under_it() {
    let page = render(&pass_and_fail());
    assert_eq!(
        page.matches(r#"<article class="failure""#).count(),
        1,
        "{page}"
    );
    let start = page.find(r#"<article class="failure""#).unwrap();
    let article = &page[start..start + page[start..].find("</article>").unwrap()];
    assert!(article.contains("main.py:10: SyntaxError"), "{article}");
    assert!(
        article.contains(r#"<details class="consequences">"#),
        "{article}"
    );
    assert!(
        article.contains("<b>single-archive</b> (fail): no archive"),
        "{article}"
    );
    assert!(
        article.contains("&quot;errors&quot;"),
        "observed values: {article}"
    );
    assert_eq!(page.matches(r#"<article class="warning""#).count(), 1);
    assert!(page.contains("a warning: why not a pass"));
}

#[test]
fn the_archive_table_shows_the_normalized_digest_a_signer_signs() {
    let page = render(&pass_and_fail());
    assert!(page.contains(&format!(
        r#"<code class="digest" data-normalized>{}</code>"#,
        "a".repeat(64)
    )));
    assert!(page.contains("no archive: not built or not inspected"));
}

#[test]
fn hostile_names_are_escaped_and_control_and_bidi_characters_shown_as_escapes() {
    let long = "A".repeat(60_000);
    let hostile = format!("<script>alert(1)</script>evil\u{202e}txt.exe\x1b[2J{long}");
    let mut ev = pass_and_fail();
    ev.candidates[1].folder = hostile.clone();
    let mut fail = Check::fail(
        "name\"><img src=x onerror=alert(1)>",
        Some(&hostile),
        "</pre><script src=https://example.invalid/x.js></script>\u{2066}",
    );
    fail.observed = observed(serde_json::json!({"out": "<iframe src=//example.invalid>"}));
    ev.gates[1].checks.push(fail);
    ev.signals.push(SignalRecord {
        at_ms: 20,
        action: SignalAction::Reap,
        pid: 7,
        start_time: None,
        ppid: None,
        group: None,
        cmdline: "sh -c '<script>x</script>\u{202e}'".into(),
        gate: Some("lbp-build".into()),
        why: SignalWhy::Exited,
        descends_from_run: true,
        started_ms: Some(10),
    });
    let page = render(&ev);
    let lower = page.to_lowercase();
    for tag in ["<script", "<img", "<iframe", "<link", "<object", "<embed"] {
        assert!(!lower.contains(tag), "{tag} in the page");
    }
    assert!(!page.chars().any(crate::output::is_unsafe_char));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;evil\\u202etxt.exe\\u001b[2J"));
    assert!(page.contains("\\u2066"));
    assert!(page.contains(&long), "a long line is kept whole (it wraps)");
    assert!(page.contains("name&quot;&gt;&lt;img"));
    assert!(page.contains(&format!(
        r#"<meta http-equiv="Content-Security-Policy" content="{CSP}">"#
    )));
}

#[test]
fn observed_values_are_cut_at_the_shown_limit() {
    let mut ev = pass_and_fail();
    let big = "x".repeat(3 * OBSERVED_SHOWN);
    ev.gates[1].checks[1].observed = observed(serde_json::json!({ "big": big }));
    let page = render(&ev);
    assert!(page.contains("more bytes: the whole value is in evidence.json"));
    assert!(!page.contains(&big));
}

#[test]
fn the_timeline_places_gates_and_their_steps() {
    let mut ev = pass_and_fail();
    ev.gates[1].started_ms = Some(1000);
    ev.gates[1].duration_ms = 3000;
    ev.signals.push(SignalRecord {
        at_ms: 4000,
        action: SignalAction::Reap,
        pid: 9,
        start_time: None,
        ppid: None,
        group: None,
        cmdline: "python -m langbot_plugin.cli build".into(),
        gate: Some("lbp-build".into()),
        why: SignalWhy::Timeout,
        descends_from_run: true,
        started_ms: Some(2000),
    });
    let page = render(&ev);
    assert!(page.contains(
        r#"<details class="span" data-gate="lbp-build" data-start-ms="1000" data-end-ms="4000">"#
    ));
    assert!(
        page.contains(r#"style="left:25.00%;width:75.00%""#),
        "gate bar"
    );
    assert!(page.contains(r#"<li data-start-ms="2000" data-end-ms="4000">"#));
    assert!(
        page.contains(r#"style="left:50.00%;width:50.00%""#),
        "step bar"
    );
    assert!(page.contains("stopped: time limit"));
}

#[test]
fn the_header_says_what_the_verdict_covers_and_why_it_is_not_passed() {
    let mut ev = crate::evidence::testing::full_pass();
    let page = render(&ev);
    assert!(page.contains(r#"data-verdict="PASSED""#));
    assert!(page.contains("full certification"));
    assert!(!page.contains("Not PASSED because"));
    ev.source.worktree = Some(crate::evidence::WorktreeSource {
        label: "working tree, not a commit".into(),
        digest: None,
        files: None,
        uncommitted: vec!["a.py".into()],
    });
    let page = render(&ev);
    assert!(page.contains(r#"data-verdict="WARNED""#));
    assert!(page.contains("the working tree is not a commit"));
    let page = render(&pass_and_fail());
    assert!(page.contains("partial: not a certification of the commit"));
    assert!(page.contains("required gate(s) did not pass: lbp-build"));
}

#[test]
fn another_sdk_groups_candidates_are_rows_pointing_to_their_groups_report() {
    use crate::evidence::model::{SdkGroupArchive, SdkGroupCandidate, SdkGroupRecord};
    let mut ev = pass_and_fail();
    let group = |default: bool, requirement: &str, candidates| SdkGroupRecord {
        requirement: requirement.into(),
        default,
        evidence: (!default).then(|| "groups/langbot-plugin-0.6.1".into()),
        evidence_sha256: None,
        verdict: if default {
            Verdict::Fail
        } else {
            Verdict::Pass
        },
        warnings: if default { 0 } else { 2 },
        python: "/py".into(),
        version: None,
        record_sha256: None,
        candidates,
        error: None,
    };
    let pinned = SdkGroupCandidate {
        folder: "pinned".into(),
        verdict: Some(CandidateResult::Pass),
        stopped_at: None,
        archive: Some(SdkGroupArchive {
            path: "packages/pinned/p-1.lbpkg".into(),
            sha256: "b".repeat(64),
        }),
    };
    ev.sdk_groups = Some(vec![
        group(true, "langbot-plugin==0.6.0b5", Vec::new()),
        group(false, "langbot-plugin==0.6.1", vec![pinned]),
    ]);
    let page = render(&ev);
    let start = page
        .find(r#"<tr data-candidate="pinned" data-sdk-group="langbot-plugin==0.6.1">"#)
        .expect("a row of the other group");
    let row = &page[start..start + page[start..].find("</tr>").unwrap()];
    assert!(row.contains(r#"data-verdict="pass""#), "{row}");
    assert!(
        row.contains("groups/langbot-plugin-0.6.1/report.html"),
        "{row}"
    );
    assert!(row.contains("<code>0.6.1</code>"), "{row}");
    assert!(page.contains(&"b".repeat(64)), "its archive's sha256");
    assert!(page.contains("2 warning(s) in its own run"));
}
