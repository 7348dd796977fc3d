//! `statement.intoto.json`: an in-toto Statement v1 with the test-result
//! predicate, rendered from the evidence. Unsigned: no DSSE envelope is
//! written, and the evidence says so.
//!
//! Sources: in-toto Attestation Framework, Statement v1
//! (`https://in-toto.io/Statement/v1`) and the test-result predicate v0.1
//! (`https://in-toto.io/attestation/test-result/v0.1`: `result` one of
//! `PASSED`/`WARNED`/`FAILED`, `configuration` resource descriptors,
//! `passedTests`/`warnedTests`/`failedTests` names).

use super::model::{CheckResult, Evidence, GateResult, Verdict};
use serde_json::{json, Value};

/// File name of the statement.
pub const STATEMENT_JSON: &str = "statement.intoto.json";

/// The Statement `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";

/// The predicate type.
pub const PREDICATE_TYPE: &str = "https://in-toto.io/attestation/test-result/v0.1";

/// `predicate.result` for `evidence`: `PASSED` only for a full certification
/// (verdict pass, not partial, no warning); `WARNED` for a pass with
/// warnings and for a partial pass (an `--only` run or one `--partition`
/// share: it certifies nothing about the gates or candidates it left out);
/// a `--worktree` pass is `WARNED` too (the working tree is not a commit);
/// `FAILED` for a fail or an interrupted run. The terminal summary shows the
/// same word, so the console and the statement always agree.
pub fn result(evidence: &Evidence) -> &'static str {
    match evidence.verdict {
        Verdict::Fail | Verdict::Incomplete => "FAILED",
        Verdict::Pass
            if evidence.selection.partial
                || warnings(evidence) > 0
                || evidence.source.worktree.is_some() =>
        {
            "WARNED"
        }
        Verdict::Pass => "PASSED",
    }
}

/// Warning checks of the required gates that finished (pass or fail), and
/// those of every other SDK group's run (`sdk_groups[].warnings`).
pub fn warnings(evidence: &Evidence) -> usize {
    let own = evidence
        .gates
        .iter()
        .filter(|g| g.required && matches!(g.result, GateResult::Pass | GateResult::Fail))
        .flat_map(|g| &g.checks)
        .filter(|c| c.result == CheckResult::Warn)
        .count();
    let groups: u64 = evidence
        .sdk_groups
        .iter()
        .flatten()
        .filter(|g| !g.default)
        .map(|g| g.warnings)
        .sum();
    own + groups as usize
}

/// A candidate's archive as a subject: its file name and sha256, annotated
/// with what a signer needs when known: the SDK's `normalized_zip_digest`
/// (the digest a certification envelope signs) and the placement certified
/// (`dedicated`, `shared-runtime-v1`, or `refused` for a shared claim that
/// was not certified).
fn archive_subject(c: &super::model::CandidateRecord) -> Option<Value> {
    let a = c.archive.as_ref()?;
    let name = a.path.rsplit('/').next().unwrap_or(&a.path);
    let mut s = json!({ "name": name, "digest": { "sha256": a.sha256 } });
    if let Some(d) = &a.normalized_zip_digest {
        s["annotations"]["normalized_zip_digest"] = json!(d);
    }
    if let Some(p) = &c.placement {
        s["annotations"]["placement"] = json!(p.certified.map_or("refused", |p| p.word()));
    }
    Some(s)
}

/// The statement's subjects: each built archive (a grouped run's other
/// groups' archives annotated `sdk_group`), then the source commit (or the
/// working tree's digest and its base commit).
fn subjects(evidence: &Evidence) -> Vec<Value> {
    let mut subject: Vec<Value> = evidence
        .candidates
        .iter()
        .filter_map(archive_subject)
        .collect();
    // A grouped run: every other group's archives too, as its run recorded
    // them (the default group's are this run's own candidates above).
    for g in evidence.sdk_groups.iter().flatten().filter(|g| !g.default) {
        // (Their normalized digests and placements are in that group's own
        // evidence and statement.)
        for a in g.candidates.iter().filter_map(|c| c.archive.as_ref()) {
            let name = a.path.rsplit('/').next().unwrap_or(&a.path);
            subject.push(json!({
                "name": name,
                "digest": { "sha256": a.sha256 },
                "annotations": { "sdk_group": g.requirement }
            }));
        }
    }
    let name = subject_name(evidence.source.origin.as_deref(), &evidence.source.repo);
    subject.push(match &evidence.source.worktree {
        // The working tree has no commit id: its digest, and the base.
        Some(w) => json!({
            "name": name,
            "digest": { "sha256": w.digest.clone().unwrap_or_default() },
            "annotations": { "source": w.label, "baseCommit": evidence.source.commit }
        }),
        None => json!({
            "name": name,
            "digest": { "gitCommit": evidence.source.commit }
        }),
    });
    subject
}

/// Every required gate's check names (`gate/candidate/check`) by outcome:
/// passed, warned (with `gate/not-run` for a gate a partial run did not
/// run), failed (a consequence listed once, under its root; an unjudged
/// gate as `gate/<result>`).
fn tests_by_outcome(evidence: &Evidence) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut passed, mut warned, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for gate in &evidence.gates {
        if !gate.required {
            if evidence.selection.gates_not_run.contains(&gate.id) {
                warned.push(format!("{}/not-run", gate.id));
            }
            continue;
        }
        let judged = matches!(gate.result, GateResult::Pass | GateResult::Fail);
        if gate.checks.is_empty() || !judged {
            failed.push(format!("{}/{}", gate.id, gate.result.word()));
            continue;
        }
        for check in &gate.checks {
            // A check whose name already starts with its candidate's folder
            // (`suites`' `<folder>/untested`) is not named with it twice.
            let name = match &check.candidate {
                Some(c) if !check.name.starts_with(&format!("{c}/")) => {
                    format!("{}/{}/{}", gate.id, c, check.name)
                }
                _ => format!("{}/{}", gate.id, check.name),
            };
            match check.result {
                CheckResult::Pass => passed.push(name),
                CheckResult::Warn => warned.push(name),
                // A consequence is part of its root's failure, listed once
                // (under the root's name), not a failed test of its own.
                CheckResult::Fail if super::root_of(gate, check).is_some() => {}
                CheckResult::Fail => failed.push(name),
            }
        }
    }
    (passed, warned, failed)
}

/// The statement's configuration but the tool: the profile, the SDK's
/// RECORD and, for a grouped run, each other group's interpreter RECORD.
fn configuration(evidence: &Evidence) -> Vec<Value> {
    let mut configuration = vec![json!({
        "name": format!("profile:{}", evidence.profile.name),
        "digest": { "sha256": evidence.profile.sha256 },
        "annotations": { "origin": profile_origin(evidence) }
    })];
    if let Some(record) = &evidence.sdk.record_sha256 {
        configuration.push(json!({
            "name": format!("{} RECORD", evidence.sdk.requirement),
            "digest": { "sha256": record },
        }));
    }
    // A grouped run: each other group's interpreter RECORD, as its own run
    // verified it (its archives are subjects above, and of its own
    // statement in its evidence directory).
    for g in evidence.sdk_groups.iter().flatten().filter(|g| !g.default) {
        if let Some(record) = &g.record_sha256 {
            configuration.push(json!({
                "name": format!("{} RECORD", g.requirement),
                "digest": { "sha256": record },
            }));
        }
    }
    configuration
}

/// The tool's annotations: the evidence digest, the SDK groups, the
/// working tree, what a partial run covers and each candidate's verdict.
fn tool_annotations(evidence: &Evidence) -> Value {
    let mut annotations =
        json!({ "evidence_sha256": evidence.sign_off.evidence_sha256, "signed": false });
    if let Some(groups) = &evidence.sdk_groups {
        annotations["sdk_groups"] = json!(groups
            .iter()
            .map(|g| json!({
                "requirement": g.requirement,
                "verdict": g.verdict,
                "evidence": g.evidence,
                "evidence_sha256": g.evidence_sha256,
                "candidates": g.candidates.iter().map(|c| c.folder.as_str()).collect::<Vec<_>>(),
            }))
            .collect::<Vec<_>>());
    }
    if let Some(w) = &evidence.source.worktree {
        annotations["worktree"] = json!(w.label);
    }
    if evidence.selection.partial {
        // An `--only` run or one partition: its result covers the listed tests only.
        annotations["partial"] = json!(true);
        annotations["gates_not_run"] = json!(evidence.selection.gates_not_run);
        if let Some(p) = evidence.selection.partition {
            annotations["partition"] = json!(format!("{}/{}", p.index, p.count));
        }
    }
    // Each candidate's own verdict (`candidates[].verdict`), by folder: the
    // subjects stay the archives and the commit, whatever the verdicts.
    let verdicts: serde_json::Map<String, Value> = evidence
        .candidates
        .iter()
        .filter_map(|c| {
            c.verdict
                .as_ref()
                .map(|v| (c.folder.clone(), json!(v.result.word())))
        })
        .collect();
    if !verdicts.is_empty() {
        annotations["candidate_verdicts"] = Value::Object(verdicts);
    }
    annotations
}

/// Renders the statement: one subject per built archive (name = archive file
/// name, digest sha256; a grouped run's other groups' archives annotated
/// `sdk_group`) plus the source commit (`gitCommit`, named
/// `git+<origin URL>` or the repository folder's name: [`subject_name`]), [`result`] as
/// `result`, the profile, SDK RECORD and tool as `configuration` (the tool's
/// annotations list `gates_not_run` for a partial run, and
/// `candidate_verdicts`: each candidate folder's own verdict word), and every check's
/// name (`gate/candidate/check`) by outcome; a gate a partial run did not
/// run is a warned test `gate/not-run`.
pub fn render(evidence: &Evidence) -> Value {
    let subject = subjects(evidence);
    let (passed, warned, failed) = tests_by_outcome(evidence);
    let result = result(evidence);
    let mut configuration = configuration(evidence);
    configuration.push(json!({
        "name": format!("{} {}", evidence.tool.name, evidence.tool.version),
        "annotations": tool_annotations(evidence)
    }));
    json!({
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "result": result,
            "configuration": configuration,
            "passedTests": passed,
            "warnedTests": warned,
            "failedTests": failed,
        }
    })
}

/// How the statement names where the profile came from, without a path of
/// the machine that ran: `builtin:<name>` for the built-in profile, the
/// repository-relative path (`verify-coding-candidates.toml`) for a file in
/// the repository under review, `external:<file name>` for a `--profile`
/// file outside it (its sha256 beside identifies it). `evidence.json`'s
/// `profile.origin` keeps the full path for the reader on that machine.
pub fn profile_origin(evidence: &Evidence) -> String {
    let origin = &evidence.profile.origin;
    if origin == "built-in" {
        return format!("builtin:{}", evidence.profile.name);
    }
    let path = std::path::Path::new(origin);
    let inside = path
        .strip_prefix(&evidence.source.repo)
        .ok()
        .filter(|rel| {
            rel.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
        .map(|rel| rel.to_string_lossy().into_owned())
        .filter(|rel| !rel.is_empty());
    inside.unwrap_or_else(|| {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("external:{name}")
    })
}

/// The statement's name for the source: `git+<origin>` when an origin URL
/// was recorded, else the repository folder's name (the last component of
/// `repo`), never the path.
pub fn subject_name(origin: Option<&str>, repo: &str) -> String {
    match origin {
        Some(url) => format!("git+{url}"),
        None => std::path::Path::new(repo).file_name().map_or_else(
            || "repository".to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_origin_names_no_machine_path() {
        let mut ev = crate::evidence::testing::full_pass();
        ev.source.repo = "/home/u/langbot-plugins".into();
        ev.profile.name = "coding-runners".into();
        for (origin, named) in [
            ("built-in", "builtin:coding-runners"),
            (
                "/home/u/langbot-plugins/verify-coding-candidates.toml",
                "verify-coding-candidates.toml",
            ),
            ("/home/u/langbot-plugins/ci/p.toml", "ci/p.toml"),
            ("/home/u/langbot-plugins/../p.toml", "external:p.toml"),
            ("/home/u/langbot-plugins-2/p.toml", "external:p.toml"),
            ("/tmp/x/profile.toml", "external:profile.toml"),
        ] {
            ev.profile.origin = origin.into();
            assert_eq!(profile_origin(&ev), named, "{origin}");
            let statement = render(&ev);
            assert_eq!(
                statement["predicate"]["configuration"][0]["annotations"]["origin"], named,
                "{origin}"
            );
        }
    }
    use crate::evidence::testing::{evidence, full_pass, gate};
    use crate::evidence::Check;

    #[test]
    fn a_warning_of_another_sdk_group_makes_a_pass_warned() {
        let mut ev = full_pass();
        assert_eq!(result(&ev), "PASSED");
        let group = |default: bool, warnings: u64| crate::evidence::SdkGroupRecord {
            requirement: "langbot-plugin==0.6.1".into(),
            default,
            evidence: None,
            evidence_sha256: None,
            verdict: Verdict::Pass,
            warnings,
            python: "/p".into(),
            version: Some("0.6.1".into()),
            record_sha256: Some("ab".repeat(32)),
            error: None,
            candidates: Vec::new(),
        };
        ev.sdk_groups = Some(vec![group(true, 7), group(false, 0)]);
        // The default group's count is the run's own gates', never added twice.
        assert_eq!(result(&ev), "PASSED");
        ev.sdk_groups = Some(vec![group(true, 0), group(false, 2)]);
        assert_eq!(warnings(&ev), 2);
        assert_eq!(result(&ev), "WARNED");
        let st = render(&ev);
        let configuration = st["predicate"]["configuration"].as_array().unwrap();
        assert!(
            configuration
                .iter()
                .any(|c| c["name"] == "langbot-plugin==0.6.1 RECORD"),
            "{st}"
        );
        let tool = configuration.last().unwrap();
        assert_eq!(
            tool["annotations"]["sdk_groups"][1]["requirement"],
            "langbot-plugin==0.6.1"
        );
    }

    #[test]
    fn only_a_full_certification_without_warnings_is_passed() {
        let full = full_pass();
        assert_eq!(render(&full)["predicate"]["result"], "PASSED");

        let mut warned = full_pass();
        warned.gates[0]
            .checks
            .push(Check::warn("backend", None, "process backend"));
        assert_eq!(result(&warned), "WARNED");
        assert_eq!(
            render(&warned)["predicate"]["warnedTests"],
            json!(["tree-clean/backend"])
        );

        // An --only run that passed: its gates not run are warned tests.
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
        assert!(partial.selection.partial);
        let st = render(&partial);
        assert_eq!(st["predicate"]["result"], "WARNED");
        assert_eq!(st["predicate"]["warnedTests"][0], "stage/not-run");
        assert_eq!(st["predicate"]["passedTests"], json!(["tree-clean/commit"]));

        let mut failed = full_pass();
        failed.verdict = Verdict::Fail;
        assert_eq!(result(&failed), "FAILED");
        // Each candidate's verdict is a tool annotation; subjects are unchanged.
        assert_eq!(
            render(&failed)["predicate"]["configuration"][1]["annotations"]
                .get("candidate_verdicts"),
            None
        );
        let subjects = render(&failed)["subject"].clone();
        for (folder, result) in [
            ("a", crate::evidence::CandidateResult::Fail),
            ("b", crate::evidence::CandidateResult::Pass),
        ] {
            let mut c: crate::evidence::CandidateRecord = serde_json::from_value(json!({
                "folder": folder, "path": format!("R/{folder}"), "manifest": null, "archive": null
            }))
            .unwrap();
            c.verdict = Some(crate::evidence::CandidateVerdict {
                result,
                gate: None,
                check: None,
                reason: None,
            });
            failed.candidates.push(c);
        }
        let st = render(&failed);
        assert_eq!(
            st["predicate"]["configuration"][1]["annotations"]["candidate_verdicts"],
            json!({"a": "fail", "b": "pass"})
        );
        assert_eq!(st["subject"], subjects);
        failed.verdict = Verdict::Incomplete;
        assert_eq!(result(&failed), "FAILED");
    }

    #[test]
    fn a_check_named_by_its_folder_is_not_named_with_it_twice() {
        let own = Check::warn("tool/untested", Some("tool"), "no tests");
        let other = Check::warn("untested", Some("tool"), "x");
        let ev = evidence(
            vec![gate("suites", GateResult::Pass, true, vec![own, other])],
            Verdict::Pass,
        );
        assert_eq!(
            render(&ev)["predicate"]["warnedTests"],
            json!(["suites/tool/untested", "suites/tool/untested"])
        );
    }

    #[test]
    fn a_consequence_is_not_a_failed_test_of_its_own() {
        let root = Check::fail("record-rows", None, "row 306 is malformed");
        let consequence = Check::fail(
            "unlisted-files",
            None,
            "not verified because its row is malformed",
        )
        .consequence_of("record-rows");
        let orphan = Check::fail("bytecode", None, "x").consequence_of("record-files");
        let ev = evidence(
            vec![gate(
                "sdk-record",
                GateResult::Fail,
                true,
                vec![root, consequence, orphan],
            )],
            Verdict::Fail,
        );
        // The root is listed; its consequence is not; a consequence whose
        // root is not there is a failure of its own, so nothing is hidden.
        assert_eq!(
            render(&ev)["predicate"]["failedTests"],
            json!(["sdk-record/record-rows", "sdk-record/bytecode"])
        );
    }

    #[test]
    fn the_subject_is_the_origin_or_the_folder_name_never_a_path() {
        assert_eq!(
            subject_name(Some("https://github.com/o/r.git"), "/tmp/x/r"),
            "git+https://github.com/o/r.git"
        );
        assert_eq!(
            subject_name(None, "/tmp/.tmpAbC/langbot-plugins"),
            "langbot-plugins"
        );
    }
}
