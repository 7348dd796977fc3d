//! The whole pipeline, every gate, on the fixture repository: the milestone
//! run of `cargo xtask demo`, checked as a reviewer would check it.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn schema() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence-schema/v1/evidence.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn assert_valid(evidence: &Value) {
    let validator = jsonschema::validator_for(&schema()).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(evidence)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "evidence.json does not satisfy the checked-in schema:\n{}",
        errors.join("\n")
    );
}

/// `<testcase` elements in `junit.xml`: one per check (one for a gate with
/// none), one per candidate verdict, plus one per pytest testcase of each
/// suite run.
fn expected_testcases(ev: &Value) -> usize {
    let gates: usize = ev["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            // A skipped or blocked gate is one skipped testcase, whatever it recorded.
            if g["result"] == "skipped" || g["result"] == "blocked" {
                1
            } else {
                // A consequence is no testcase of its own (it goes into its root's).
                g["checks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|c| c["consequence_of"].is_null())
                    .count()
                    .max(1)
            }
        })
        .sum();
    let suites: usize = ev["suites"]["runs"]
        .as_array()
        .map(|runs| {
            runs.iter()
                .map(|r| r["testcases"].as_array().map_or(0, Vec::len))
                .sum()
        })
        .unwrap_or(0);
    let verdicts = ev["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"].is_object())
        .count();
    gates + verdicts + suites
}

/// Processes whose working directory or environment points into `dir`.
fn processes_tied_to(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cwd = std::fs::read_link(entry.path().join("cwd"))
            .map(|p| p.to_string_lossy().to_string())
            .unwrap_or_default();
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if cwd.starts_with(&needle) || String::from_utf8_lossy(&environ).contains(&needle) {
            found.push(format!("{name} (cwd {cwd})"));
        }
    }
    found
}

/// The fixture's full certification ([`shared_certification`]: every gate,
/// signed off, the bytecode cache off; one run per test run, which the
/// evidence snapshot reads too).
#[test]
fn every_gate_passes_on_the_fixture_repository_with_valid_evidence() {
    let run = shared_certification();
    let text = &run.stdout;
    assert_eq!(run.code, 0, "{text}\n{}", run.stderr);
    assert!(
        run.repo_unchanged,
        "the repository under review was modified"
    );
    let dir = &run.evidence;

    let ev = read_evidence(dir);
    assert_valid(&ev);
    // The console verdict and the statement agree: a full certification is
    // PASSED, a pass with warnings (the process backend warns) WARNED on both.
    let warnings = ev["gates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["checks"].as_array().unwrap())
        .filter(|c| c["result"] == "warn")
        .count();
    let st: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("statement.intoto.json")).unwrap())
            .unwrap();
    let (line, result) = match warnings {
        0 => ("PASS: evidence in".to_string(), "PASSED"),
        1 => ("PASS with 1 warning: evidence in".to_string(), "WARNED"),
        n => (format!("PASS with {n} warnings: evidence in"), "WARNED"),
    };
    assert!(text.contains(&line), "{text}");
    assert_eq!(st["predicate"]["result"], result, "{st}");
    assert!(
        text.contains(&format!("predicate.result {result}")),
        "{text}"
    );
    // junit.xml, pytest testcases included, validates against the JUnit schema.
    let junit_doc = read_junit(dir);
    assert!(junit_doc["suites"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["errors"] == 0 && s["failures"] == 0));
    assert_eq!(ev["verdict"], "pass");
    assert_eq!(
        ev["selection"]["partial"], false,
        "a full run certifies the commit"
    );
    assert!(ev["selection"]["gates_not_run"]
        .as_array()
        .unwrap()
        .is_empty());
    let catalogue = verify_coding_candidates::catalogue::all();
    let gates = ev["gates"].as_array().unwrap();
    assert_eq!(gates.len(), catalogue.len());
    // Without --release-dir, historical admission is not established: the
    // gate is skipped with the reason, not required, and the summary says so.
    // No candidate claims the shared runtime: that gate is skipped too.
    let historical =
        "archives not supplied: package admission of historical releases is not established";
    assert_eq!(
        ev["selection"]["not_applicable"],
        serde_json::json!(["historical-admission", "shared-runtime"])
    );
    assert!(
        text.contains(&format!(
            "historical-admission  skipped     0.0s  {historical}"
        )),
        "{text}"
    );
    for (g, info) in gates.iter().zip(catalogue) {
        assert_eq!(g["id"], info.id.as_str());
        if info.id == "historical-admission" {
            assert_eq!(g["result"], "skipped", "{g}");
            assert_eq!(g["reason"], historical);
            assert_eq!(g["required"], false);
            continue;
        }
        if info.id == "shared-runtime" {
            assert_eq!(g["result"], "skipped", "{g}");
            assert!(
                g["reason"]
                    .as_str()
                    .unwrap()
                    .contains("no candidate's manifest claims"),
                "{g}"
            );
            assert_eq!(g["required"], false);
            continue;
        }
        assert_eq!(g["result"], "pass", "gate {} did not pass: {g}", info.id);
        assert_eq!(g["proves"], info.proves.as_str());
        assert_eq!(g["does_not_prove"], info.does_not_prove.as_str());
    }
    assert_eq!(ev["sign_off"]["signed_off_by"], SIGNED_OFF_BY);
    assert_eq!(ev["sign_off"]["archives_signed"], false);
    assert_eq!(
        ev["sign_off"]["evidence_sha256"].as_str().unwrap().len(),
        64
    );
    assert_eq!(ev["sdk"]["version"], "0.6.0b5");
    assert!(ev["sdk"]["hashed_rows_verified"].as_u64().unwrap() > 200);
    for c in ev["candidates"].as_array().unwrap() {
        let archive = &c["archive"];
        let file = dir.join(archive["path"].as_str().unwrap());
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            archive["size"].as_u64().unwrap()
        );
        assert!(dir
            .join("extracted")
            .join(c["folder"].as_str().unwrap())
            .join("manifest.yaml")
            .is_file());
    }
    // The terminal summary names the isolation backend and the namespace.
    assert!(
        text.contains("worker-isolation") && text.contains("--isolation auto"),
        "{text}"
    );
    // Gate notes are cut to 96 characters (the full note is in evidence.json),
    // so a gate row stays one line on a wide terminal.
    for g in gates {
        let id = g["id"].as_str().unwrap();
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("  {id} ")))
            .unwrap_or_else(|| panic!("no row for gate {id}:\n{text}"));
        assert!(row.chars().count() <= 140, "gate {id}: row too long: {row}");
    }
    // Candidate rows are aligned: every archive path starts in one column.
    let columns: Vec<usize> = text
        .lines()
        .filter(|l| l.contains("  sha256 "))
        .map(|l| {
            l.find("packages/")
                .expect("a candidate row names its archive")
        })
        .collect();
    assert_eq!(columns.len(), 3, "one row per candidate:\n{text}");
    assert!(columns.windows(2).all(|w| w[0] == w[1]), "{text}");
    // Every candidate passed on its own, and the summary says which did.
    for c in ev["candidates"].as_array().unwrap() {
        assert_eq!(c["verdict"], serde_json::json!({"result": "pass"}), "{c}");
    }
    assert!(
        text.contains(
            "  passed: 3 of 3 candidate(s): acp-agent-runner, claude-code-agent, codex-agent\n"
        ),
        "{text}"
    );

    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(
        junit.matches("<testcase ").count(),
        expected_testcases(&ev),
        "junit.xml testcase count"
    );
    assert!(junit.contains("classname=\"tree-clean\""));

    // Processes tied to the evidence directory, right after the run.
    assert!(
        run.leftovers.is_empty(),
        "processes of the run survived: {:?}",
        run.leftovers
    );
}

#[test]
fn a_failing_run_still_writes_valid_evidence_naming_the_gate_and_the_file() {
    let repo = fixture_repo(&["shadow-sdk"]);
    let before = tree_snapshot(&repo.root);
    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .output()
        .unwrap();
    let text = stdout_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL: evidence in"), "{text}");
    assert!(
        text.contains("sdk-shadow") && text.contains("langbot_plugin/__init__.py"),
        "{text}"
    );
    assert_eq!(tree_snapshot(&repo.root), before);
    let ev = read_evidence(&dir);
    assert_valid(&ev);
    assert_eq!(ev["verdict"], "fail");
    assert_eq!(ev["sign_off"]["verdict"], "fail");
    assert_eq!(gate_result(&ev, "sdk-shadow"), "fail");
    // Gates that need sdk-shadow's subject are blocked, never passed on unverified input.
    for g in ev["gates"].as_array().unwrap() {
        if g["result"] == "blocked" {
            assert!(
                g["reason"].as_str().unwrap().contains("did not pass"),
                "{g}"
            );
        }
    }
    // The shadowed candidate fails on its own; the summary names the gate.
    let codex = ev["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["folder"] == "codex-agent")
        .unwrap();
    assert_eq!(codex["verdict"]["result"], "fail", "{codex}");
    let stopped_at = codex["verdict"]["gate"].as_str().unwrap();
    assert_eq!(gate_result(&ev, stopped_at), "fail");
    assert!(
        text.lines().any(|l| l.starts_with("  codex-agent ")
            && l.contains(" FAIL ")
            && l.contains(&format!("{stopped_at}/"))),
        "{text}"
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), expected_testcases(&ev));
    assert!(junit.contains("<failure"), "{junit}");
    assert!(std::fs::read_to_string(dir.join("SHA256SUMS"))
        .unwrap()
        .contains("  evidence.json\n"));
    assert!(processes_tied_to(&dir).is_empty());
}
