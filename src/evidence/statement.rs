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

/// Renders the statement: one subject per built archive (name = archive file
/// name, digest sha256) plus the source commit (`gitCommit`), the verdict as
/// `result`, the profile, SDK RECORD and tool as `configuration` (the tool's
/// annotations list `gates_not_run` for an `--only` run), and every check's
/// name (`gate/candidate/check`) by outcome.
pub fn render(evidence: &Evidence) -> Value {
    let mut subject: Vec<Value> = evidence
        .candidates
        .iter()
        .filter_map(|c| c.archive.as_ref())
        .map(|a| {
            let name = a.path.rsplit('/').next().unwrap_or(&a.path);
            json!({ "name": name, "digest": { "sha256": a.sha256 } })
        })
        .collect();
    subject.push(json!({
        "name": format!("git+{}", evidence.source.repo),
        "digest": { "gitCommit": evidence.source.commit }
    }));

    let (mut passed, mut warned, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for gate in &evidence.gates {
        if !gate.required {
            continue;
        }
        let judged = matches!(gate.result, GateResult::Pass | GateResult::Fail);
        if gate.checks.is_empty() || !judged {
            failed.push(format!("{}/{}", gate.id, gate.result.word()));
            continue;
        }
        for check in &gate.checks {
            let name = match &check.candidate {
                Some(c) => format!("{}/{}/{}", gate.id, c, check.name),
                None => format!("{}/{}", gate.id, check.name),
            };
            match check.result {
                CheckResult::Pass => passed.push(name),
                CheckResult::Warn => warned.push(name),
                CheckResult::Fail => failed.push(name),
            }
        }
    }
    let result = match evidence.verdict {
        Verdict::Pass if warned.is_empty() => "PASSED",
        Verdict::Pass => "WARNED",
        Verdict::Fail | Verdict::Incomplete => "FAILED",
    };
    let mut configuration = vec![json!({
        "name": format!("profile:{}", evidence.profile.name),
        "digest": { "sha256": evidence.profile.sha256 },
        "annotations": { "origin": evidence.profile.origin }
    })];
    if let Some(record) = &evidence.sdk.record_sha256 {
        configuration.push(json!({
            "name": format!("{} RECORD", evidence.sdk.requirement),
            "digest": { "sha256": record },
        }));
    }
    let mut annotations =
        json!({ "evidence_sha256": evidence.sign_off.evidence_sha256, "signed": false });
    if evidence.selection.partial {
        // An `--only` run or one partition: its result covers the listed tests only.
        annotations["partial"] = json!(true);
        annotations["gates_not_run"] = json!(evidence.selection.gates_not_run);
        if let Some(p) = evidence.selection.partition {
            annotations["partition"] = json!(format!("{}/{}", p.index, p.count));
        }
    }
    configuration.push(json!({
        "name": format!("{} {}", evidence.tool.name, evidence.tool.version),
        "annotations": annotations
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
