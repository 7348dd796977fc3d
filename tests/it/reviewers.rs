//! Release reviewers and CI: `replay`, the in-toto statement, `--partition`
//! and `merge`, and JUnit read back by a real JUnit consumer.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// Gates fast enough to run several times per test: everything up to the
/// archives (tree-clean, stage, sdk-record, lbp-build, archive-members).
const ONLY: &str = "archive-members";

/// The shared `--only ONLY` run of the fixture plus `extra`
/// ([`shared_run`]: one per test run, read by every test here that only
/// reads it), asserted to exit 0, and its evidence.
fn shared_ok(extra: &[&str]) -> (SharedRun, Value) {
    let args: Vec<&str> = ["--only", ONLY].iter().chain(extra).copied().collect();
    let run = shared_run(&[], &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let ev = read_evidence(&run.evidence);
    (run, ev)
}

/// `replay` of `evidence` plus `extra`: the exit code and stdout+stderr.
fn replay(evidence: &Path, extra: &[&str]) -> (i32, String) {
    let out = replay_output(evidence, extra);
    (out.status.code().unwrap_or(-1), both(&out))
}

fn archive_paths(ev: &Value) -> Vec<String> {
    ev["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["archive"]["path"].as_str().map(String::from))
        .collect()
}

#[test]
fn replay_matches_a_fresh_run_and_names_each_kind_of_tampering() {
    let (run, ev) = shared_ok(&[]);
    // Tampered with below: a copy of the shared evidence.
    let (_keep, dir) = run.copy_evidence();
    let archives = archive_paths(&ev);
    assert_eq!(archives.len(), 3);

    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("REPLAY OK"), "{text}");

    // One flipped byte in one archive: named, by its digest row.
    let target = dir.join(&archives[1]);
    let original = std::fs::read(&target).unwrap();
    let mut flipped = original.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x01;
    std::fs::write(&target, &flipped).unwrap();
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("{} sha256", archives[1])), "{text}");
    assert!(
        !text.contains(&format!("{} sha256: recorded", archives[0])),
        "only the flipped archive differs: {text}"
    );
    std::fs::write(&target, &original).unwrap();
    assert_eq!(replay(&dir, &[]).0, 0);

    // An edited evidence.json: the sign-off digest no longer matches.
    let json_path = dir.join("evidence.json");
    let json = std::fs::read_to_string(&json_path).unwrap();
    let edited = json.replacen("\"duration_ms\": ", "\"duration_ms\": 1", 1);
    assert_ne!(edited, json);
    std::fs::write(&json_path, &edited).unwrap();
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("sign-off evidence_sha256: recorded"),
        "{text}"
    );
    std::fs::write(&json_path, &json).unwrap();

    // A removed file is named as removed.
    let log = dir.join("staging/source.tar");
    let tar = std::fs::read(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("file staging/source.tar: recorded"), "{text}");
    assert!(text.contains("removed"), "{text}");
    std::fs::write(&log, tar).unwrap();
}

#[test]
fn replay_with_the_repository_rebuilds_and_accepts_only_the_build_clock_difference() {
    let (run, _) = shared_ok(&[]);
    let (repo, dir) = (&run.repo, &run.evidence);
    let before = tree_snapshot(repo);
    // Cross a second boundary so the rebuild's clock differs from the build's.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let out = verifier()
        .arg("replay")
        .arg("--evidence")
        .arg(dir)
        .arg("--repo")
        .arg(repo)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    let row = |item: &str| {
        rows.iter()
            .find(|r| r["item"] == item)
            .unwrap_or_else(|| panic!("no row {item}: {doc}"))
    };
    assert_eq!(row("commit exists")["matches"], true);
    assert_eq!(row("git archive sha256")["matches"], true);
    for folder in ["acp-agent-runner", "claude-code-agent", "codex-agent"] {
        assert_eq!(
            row(&format!("rebuild {folder} content digest"))["matches"],
            true
        );
        // 2.1 s apart, the manifest's ZIP timestamp differs: verified as the build clock.
        let archive = row(&format!("rebuild {folder} archive sha256"));
        assert_eq!(
            (&archive["matches"], &archive["build_clock"]),
            (&Value::Bool(true), &Value::Bool(true)),
            "{doc}"
        );
    }
    // Which interpreter rebuilt: here $PYTHON, the SDK venv.
    assert_eq!(
        doc["rebuild"],
        serde_json::json!({
            "python": python().display().to_string(),
            "from": "$PYTHON",
            "sdk_version": "0.6.0b5",
        })
    );
    assert_eq!(row("rebuild interpreter langbot-plugin")["matches"], true);
    assert_eq!(
        tree_snapshot(repo),
        before,
        "replay must not touch the repository"
    );
}

#[test]
fn statement_is_an_unsigned_in_toto_v1_test_result_naming_every_archive() {
    let (run, ev) = shared_ok(&[]);
    let dir = &run.evidence;
    let text = std::fs::read_to_string(dir.join("statement.intoto.json")).unwrap();
    let st: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        st["predicateType"],
        "https://in-toto.io/attestation/test-result/v0.1"
    );
    assert!(
        st.get("payloadType").is_none() && st.get("signatures").is_none(),
        "no DSSE envelope: {st}"
    );
    let subjects = st["subject"].as_array().unwrap();
    for c in ev["candidates"].as_array().unwrap() {
        let path = c["archive"]["path"].as_str().unwrap();
        let name = path.rsplit('/').next().unwrap();
        let s = subjects
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} not a subject: {st}"));
        assert_eq!(s["digest"]["sha256"], c["archive"]["sha256"]);
    }
    assert!(
        subjects
            .iter()
            .any(|s| s["digest"]["gitCommit"] == ev["source"]["commit"]),
        "{st}"
    );
    // An --only run: its own checks passed, but it is partial, so it is not
    // PASSED (only a full certification is); the gates it left out are
    // warned tests.
    assert_eq!(st["predicate"]["result"], "WARNED");
    assert!(
        st["predicate"]["warnedTests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "suites/not-run"),
        "{st}"
    );
    assert!(st["predicate"]["failedTests"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(
        st["predicate"]["passedTests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "stage/blob-ids"),
        "{st}"
    );
    assert_eq!(ev["attestation"]["signed"], false);
    assert_eq!(ev["sign_off"]["archives_signed"], false);
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    assert!(sums.contains("  statement.intoto.json\n"), "{sums}");
}

#[test]
fn partitions_merged_equal_an_unpartitioned_run() {
    let (_k3, merged) = evidence_dir();
    let (_, full) = shared_ok(&[]);
    let (r1, e1) = shared_ok(&["--partition", "1/2"]);
    let (r2, e2) = shared_ok(&["--partition", "2/2"]);
    let (p1, p2) = (&r1.evidence, &r2.evidence);
    // One share is partial, and says so in the evidence itself.
    assert_eq!(e1["selection"]["partial"], true);
    assert_eq!(e1["selection"]["partition"]["index"], 1);
    let n1 = e1["candidates"].as_array().unwrap().len();
    let n2 = e2["candidates"].as_array().unwrap().len();
    assert_eq!(
        (n1 + n2, n1 > 0, n2 > 0),
        (3, true, true),
        "every candidate in exactly one share"
    );

    let out = merge_output(&merged, &[p1, p2]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let m = read_evidence(&merged);
    assert_eq!(m["verdict"], full["verdict"]);
    let digests = |ev: &Value| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = ev["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["folder"].as_str().unwrap().to_string(),
                    c["archive"]["content_digest"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(digests(&m), digests(&full));
    assert_eq!(m["merged_from"].as_array().unwrap().len(), 2);
    for g in m["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["required"] == true)
    {
        let f = gate(&full, g["id"].as_str().unwrap());
        assert_eq!(g["result"], f["result"], "gate {}", g["id"]);
    }
    // The merged directory replays on its own.
    let (code, text) = replay(&merged, &[]);
    assert_eq!(code, 0, "{text}");

    // The same share twice is refused, and nothing is written.
    let (_k4, bad) = evidence_dir();
    let out = merge_output(&bad, &[p1, p1]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_text(&out).contains("exactly once"),
        "{}",
        stderr_text(&out)
    );
    assert!(!bad.exists());
}

#[test]
fn junit_is_read_back_by_a_real_junit_consumer() {
    let repo = fixture_repo(&["drifted-shared-copy"]);
    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "shared-copies"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let ev = read_evidence(&dir);
    let verdicts: Vec<&Value> = ev["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["verdict"])
        .collect();
    // One testcase per check, and one per candidate verdict (testsuite
    // `candidates`): the drifted candidate fails there too.
    let expected_cases: usize = ev["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["checks"].as_array().unwrap().len().max(1))
        .sum::<usize>()
        + verdicts.len();
    let failed_candidates = verdicts.iter().filter(|v| v["result"] == "fail").count();
    assert_eq!((verdicts.len(), failed_candidates), (3, 1));
    let expected_failures: usize = ev["gates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["checks"].as_array().unwrap())
        .filter(|c| c["result"] == "fail")
        .count()
        + failed_candidates;
    assert!(expected_failures >= 2);
    // Validated against the JUnit schema, then read by junitparser (PyPI).
    let doc = read_junit(&dir);
    let cases: Vec<&Value> = doc["suites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["cases"].as_array().unwrap())
        .collect();
    assert_eq!(cases.len(), expected_cases);
    let failures: Vec<&&Value> = cases.iter().filter(|c| c["outcome"] == "failure").collect();
    assert_eq!(failures.len(), expected_failures);
    for f in failures {
        assert!(
            f["text"].as_str().is_some_and(|t| !t.is_empty()),
            "failure detail must be in the element body: {f}"
        );
    }
    let suite = junit_suite(&doc, "shared-copies");
    assert_eq!(suite["failures"], expected_failures - failed_candidates);
    assert_eq!(junit_suite(&doc, "candidates")["failures"], 1);
    assert!(suite["cases"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["classname"] == "shared-copies"));
    // The gates --only left out: skipped, counted in `skipped`.
    let lbp = junit_suite(&doc, "lbp-build");
    assert_eq!(
        (&lbp["tests"], &lbp["skipped"], &lbp["errors"]),
        (&Value::from(1), &Value::from(1), &Value::from(0)),
        "{lbp}"
    );
    assert_eq!(lbp["cases"][0]["outcome"], "skipped");
}

#[test]
fn junit_shows_a_blocked_required_gate_as_an_error_not_a_skip() {
    let repo = fixture_repo(&[]);
    std::fs::write(repo.root.join("stray.txt"), "not committed\n").unwrap();
    let (_keep, dir) = evidence_dir();
    let out = verifier_only(&repo.root, &dir, "lbp-build")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let ev = read_evidence(&dir);
    assert_eq!(gate_result(&ev, "stage"), "blocked");
    assert_eq!(gate_result(&ev, "lbp-build"), "blocked");
    let doc = read_junit(&dir);
    for id in ["stage", "lbp-build"] {
        let suite = junit_suite(&doc, id);
        assert_eq!(
            (&suite["errors"], &suite["skipped"]),
            (&Value::from(1), &Value::from(0)),
            "{suite}"
        );
        let case = &suite["cases"][0];
        assert_eq!(case["outcome"], "error", "{case}");
        assert_eq!(case["name"], "blocked", "{case}");
        assert!(
            case["text"]
                .as_str()
                .unwrap()
                .starts_with(&format!("required gate {id} was blocked")),
            "{case}"
        );
    }
    assert_eq!(junit_suite(&doc, "tree-clean")["failures"], 1);
    assert_eq!(junit_suite(&doc, "suites")["skipped"], 1);
}

#[test]
fn suites_need_every_candidate_and_are_skipped_not_passed_in_a_partition() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "suites", "--partition", "1/2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let ev = read_evidence(&dir);
    let suites = gate(&ev, "suites");
    assert_eq!(suites["result"], "skipped");
    assert_eq!(suites["required"], false);
    assert!(
        suites["reason"].as_str().unwrap().contains("unpartitioned"),
        "{suites}"
    );
    assert!(!ev["selection"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g == "suites"));
    assert!(
        stdout_text(&out).contains("partial"),
        "{}",
        stdout_text(&out)
    );
}

#[test]
fn a_changed_log_with_a_rewritten_sha256sums_is_still_caught_by_the_sign_off() {
    let (run, ev) = shared_ok(&[]);
    // Tampered with below: a copy of the shared evidence.
    let (_keep, dir) = run.copy_evidence();
    assert!(
        ev["files"]["count"].as_u64().unwrap() > 10,
        "{}",
        ev["files"]
    );
    // Tamper with a log, then rewrite SHA256SUMS so that it matches.
    let log = dir.join("logs/stage/git-archive.cmd");
    std::fs::write(&log, "tampered\n").unwrap();
    reseal_sums(&dir);
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("files digest ("), "{text}");
    assert!(
        !text.contains("file logs/stage/git-archive.cmd: recorded"),
        "SHA256SUMS itself agrees: {text}"
    );
    // The sealed listing names the file.
    let tampered = verify_coding_candidates::hash::sha256_bytes(b"tampered\n");
    assert!(
        text.contains(&format!(
            "  files digest: logs/stage/git-archive.cmd: recorded {}, observed {tampered}\n",
            ev["files"]["entries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["path"] == "logs/stage/git-archive.cmd")
                .unwrap()["sha256"]
                .as_str()
                .unwrap()
        )),
        "{text}"
    );
}

#[test]
fn replay_that_cannot_run_exits_2_naming_the_reason() {
    let (run, _) = shared_ok(&[]);
    let dir = &run.evidence;
    let keep = tempfile::tempdir().unwrap();
    let not_a_repo = keep.path().join("plain");
    std::fs::create_dir_all(&not_a_repo).unwrap();
    // The venv's base interpreter (its bin/python resolved): CPython, no SDK.
    let no_sdk = std::fs::canonicalize(python()).unwrap();
    let repo_arg = run.repo.display().to_string();
    let missing = keep.path().join("missing");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--repo".into(), missing.display().to_string()],
            "expected a directory inside a git repository",
        ),
        (
            vec!["--repo".into(), not_a_repo.display().to_string()],
            "expected a git work tree, found none",
        ),
        (
            vec![
                "--repo".into(),
                repo_arg.clone(),
                "--python".into(),
                missing.join("bin/python").display().to_string(),
            ],
            "found no such file; run `cargo xtask sdk`",
        ),
        (
            vec![
                "--repo".into(),
                repo_arg,
                "--python".into(),
                no_sdk.display().to_string(),
            ],
            "expected an interpreter with langbot-plugin installed",
        ),
    ];
    for (args, reason) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = replay_output(dir, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", both(&out));
        assert!(
            stderr_text(&out).contains(reason),
            "{args:?}: {}",
            both(&out)
        );
        assert!(stdout_text(&out).is_empty(), "no report: {}", both(&out));
    }
    // --quiet: no progress line, the report still printed.
    let out = replay_output(dir, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(stderr_text(&out), "");
    assert!(stdout_text(&out).contains("REPLAY OK"));
}

#[test]
fn merge_takes_a_whole_scope_run_beside_the_shares_for_the_gates_they_cannot_run() {
    let (_k4, merged) = evidence_dir();
    let (r1, _) = shared_ok(&["--partition", "1/2"]);
    let (r2, _) = shared_ok(&["--partition", "2/2"]);
    let (p1, p2) = (&r1.evidence, &r2.evidence);
    let whole = shared_run(&[], &["--only", "suites"]);
    assert_eq!(whole.code, 0, "{}\n{}", whole.stdout, whole.stderr);
    let suites = &whole.evidence;

    // The shares alone: `suites` not run.
    let (_k5, shares_only) = evidence_dir();
    let out = merge_output(&shares_only, &[p1, p2]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let alone = read_evidence(&shares_only);
    assert!(alone["selection"]["gates_not_run"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g == "suites"));

    // With the `--only suites` run beside them: `suites` comes from it.
    let out = merge_output(&merged, &[p1, suites, p2]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let m = read_evidence(&merged);
    let s = gate(&m, "suites");
    assert_eq!(
        (&s["result"], &s["required"]),
        (&Value::from("pass"), &Value::Bool(true))
    );
    assert!(!m["selection"]["gates_not_run"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g == "suites"));
    assert!(
        m["suites"]["runs"].as_array().unwrap().len() == 2,
        "{}",
        m["suites"]
    );
    let from = m["merged_from"].as_array().unwrap();
    assert_eq!(from.len(), 3);
    assert_eq!(from[2]["partition"], Value::Null);
    // `suites` requires `dependencies` (each candidate's own tests get its
    // dependency environment), which the shares' `--only` did not select:
    // the `--only suites` run brings it and `admission` too.
    assert_eq!(
        from[2]["gates"],
        serde_json::json!(["admission", "dependencies", "suites"])
    );
    assert_eq!(from[0]["partition"]["index"], 1);
    // The merged JUnit holds the suites' pytest testcases, and validates.
    let junit = read_junit(&merged);
    assert!(
        junit_suite(&junit, "suites:tree")["tests"]
            .as_u64()
            .unwrap()
            >= 1
    );
    let (code, text) = replay(&merged, &[]);
    assert_eq!(code, 0, "{text}");

    // A whole-scope run of another commit is refused, and nothing written.
    // The shared repository is only read: a copy of it takes the commit.
    let repo = fixture_repo(&[]);
    std::fs::write(repo.root.join("later.txt"), "x\n").unwrap();
    git(&repo.root, &["add", "-A"]);
    git(&repo.root, &["commit", "-q", "-m", "later"]);
    let (_k6, other) = evidence_dir();
    let out = verifier_only(&repo.root, &other, "stage").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let (_k7, refused) = evidence_dir();
    let out = merge_output(&refused, &[p1, p2, &other]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        stderr_text(&out).contains("disagree on commit"),
        "{}",
        both(&out)
    );
    assert!(!refused.exists());
}

/// Rewrites `dir/evidence.json` with `edit` applied, its sign-off digest
/// recomputed and `SHA256SUMS` resealed, as a tamperer covering their tracks
/// would; returns the new sign-off digest.
fn edit_and_reseal(dir: &Path, edit: &dyn Fn(&mut Value)) -> String {
    let mut ev = read_evidence(dir);
    edit(&mut ev);
    let digest = verify_coding_candidates::evidence::canonical_digest(&ev);
    ev["sign_off"]["evidence_sha256"] = Value::String(digest.clone());
    std::fs::write(
        dir.join("evidence.json"),
        serde_json::to_string_pretty(&ev).unwrap() + "\n",
    )
    .unwrap();
    reseal_sums(dir);
    digest
}

#[test]
fn replay_fails_an_evidence_json_turned_green_with_its_digests_recomputed() {
    let repo = fixture_repo(&["drifted-shared-copy"]);
    let (_keep, dir) = evidence_dir();
    let out = verifier_only(&repo.root, &dir, "shared-copies")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "a fresh failing run replays: {text}");
    let original = read_evidence(&dir);
    // The failing checks' JUnit testcase names (`<candidate>: <check>`).
    let failing: Vec<String> = failed_checks(&original, "shared-copies")
        .iter()
        .map(|c| match c["candidate"].as_str() {
            Some(cand) => format!("{cand}: {}", c["name"].as_str().unwrap()),
            None => c["name"].as_str().unwrap().to_string(),
        })
        .collect();
    assert!(!failing.is_empty());
    let old_digest = original["sign_off"]["evidence_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let json = std::fs::read(dir.join("evidence.json")).unwrap();
    let sums = std::fs::read(dir.join("SHA256SUMS")).unwrap();

    // The failing gate turned green in evidence.json; sign-off digest and
    // SHA256SUMS recomputed. Only the statement, junit.xml and report.html
    // still say FAIL.
    let new_digest = edit_and_reseal(&dir, &|ev| {
        ev["verdict"] = "pass".into();
        ev["sign_off"]["verdict"] = "pass".into();
        for g in ev["gates"].as_array_mut().unwrap() {
            if g["id"] == "shared-copies" {
                g["result"] = "pass".into();
                g["reason"] = Value::Null;
                for c in g["checks"].as_array_mut().unwrap() {
                    c["result"] = "pass".into();
                }
            }
        }
    });
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        !text.contains("sign-off evidence_sha256: recorded"),
        "the sign-off digest itself was recomputed: {text}"
    );
    assert!(
        text.contains(&format!(
            "annotations.evidence_sha256 (observed: the digest evidence.json hashes to): recorded \
             {old_digest}, observed {new_digest}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "statement.intoto.json: predicate.result (observed: rendered from evidence.json): recorded \
             FAILED, observed WARNED\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("statement.intoto.json: predicate.failedTests"),
        "{text}"
    );
    let case = &failing[0];
    assert!(
        text.contains(&format!(
            "junit.xml: testcase shared-copies shared-copies/{case} (observed: rendered from evidence.json): \
             recorded failure, observed passed\n"
        )),
        "{text}"
    );
    // The candidate's own verdict still says fail; the gates now say pass.
    let (folder, check) = case.split_once(": ").unwrap();
    assert!(
        text.contains(&format!(
            "candidate {folder} verdict (observed: read from the recorded gates): recorded fail at \
             shared-copies/{check}, observed pass\n"
        )),
        "{text}"
    );

    // junit.xml alone: one failure removed, SHA256SUMS resealed.
    std::fs::write(dir.join("evidence.json"), &json).unwrap();
    std::fs::write(dir.join("SHA256SUMS"), &sums).unwrap();
    let statement = std::fs::read_to_string(dir.join("statement.intoto.json")).unwrap();
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let start = junit.find("<failure").unwrap();
    let end = junit[start..].find("</failure>").unwrap() + start + "</failure>".len();
    let edited = format!("{}{}", &junit[..start], &junit[end..]);
    std::fs::write(dir.join("junit.xml"), &edited).unwrap();
    reseal_sums(&dir);
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("recorded passed, observed failure\n"),
        "{text}"
    );
    assert!(text.contains("junit.xml: testcase shared-copies shared-copies/"));
    assert!(!text.contains("statement.intoto.json: "), "{text}");

    // A statement whose failed test was moved to the passed ones.
    std::fs::write(dir.join("junit.xml"), &junit).unwrap();
    let mut st: Value = serde_json::from_str(&statement).unwrap();
    let moved = st["predicate"]["failedTests"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    st["predicate"]["passedTests"]
        .as_array_mut()
        .unwrap()
        .push(moved.clone());
    std::fs::write(
        dir.join("statement.intoto.json"),
        serde_json::to_string_pretty(&st).unwrap(),
    )
    .unwrap();
    reseal_sums(&dir);
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "statement.intoto.json: predicate.passedTests (observed: rendered from evidence.json): recorded \
             {} entries, only in the statement: [{}]",
            st["predicate"]["passedTests"].as_array().unwrap().len(),
            moved.as_str().unwrap()
        )),
        "{text}"
    );
    std::fs::write(dir.join("statement.intoto.json"), &statement).unwrap();
    std::fs::write(dir.join("SHA256SUMS"), &sums).unwrap();
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "restored: {text}");
    assert!(
        text.contains("shared-copies re-decided from staging/source and logs/profile.toml"),
        "{text}"
    );

    // The same forgery with every view regenerated by the harness's own
    // writers: the shared copies kept in DIR/staging/source still differ.
    let saved = views(&dir);
    forge_and_reseal(&dir, &|ev| {
        use verify_coding_candidates::evidence::{CheckResult, GateResult, Verdict};
        ev.verdict = Verdict::Pass;
        let g = ev
            .gates
            .iter_mut()
            .find(|g| g.id == "shared-copies")
            .unwrap();
        g.result = GateResult::Pass;
        g.reason = None;
        for c in &mut g.checks {
            c.result = CheckResult::Pass;
        }
    });
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    let failed = failed_checks(&original, "shared-copies");
    assert!(
        text.contains(&format!("REPLAY MISMATCH: {} of ", failed.len())),
        "only the re-decided checks differ: {text}"
    );
    for c in failed {
        let row = format!(
            "shared-copies check {} ({}) (re-decided from staging/source and logs/profile.toml): recorded \
             pass, observed fail: ",
            c["name"].as_str().unwrap(),
            c["candidate"].as_str().unwrap()
        );
        assert!(text.contains(&row), "{row}\n{text}");
    }
    restore(&dir, &saved);
    assert_eq!(replay(&dir, &[]).0, 0, "restored");
}

/// The shared `--only stage --partition 1/1` share of the fixture (a share
/// merge accepts on its own; [`shared_run`]), asserted to exit 0.
fn stage_share() -> SharedRun {
    let run = shared_run(&[], &["--only", "stage", "--partition", "1/1"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

#[test]
fn merge_rehashes_every_file_of_a_share_and_names_the_one_that_differs() {
    // Tampered with below: a copy of the shared share.
    let (_k1, share) = stage_share().copy_evidence();
    let refused = |what: &str, names: &str| {
        let (_k, into) = evidence_dir();
        let out = merge_output(&into, &[&share]);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", both(&out));
        let err = stderr_text(&out);
        assert!(err.contains(names), "{what}: expected {names:?} in {err}");
        assert!(err.contains("refusing to merge it"), "{err}");
        assert!(!into.exists(), "{what}: nothing written");
    };

    // A rewritten log, SHA256SUMS untouched.
    let log = share.join("logs/stage/git-archive.cmd");
    let original = std::fs::read(&log).unwrap();
    std::fs::write(&log, "tampered\n").unwrap();
    let tampered = verify_coding_candidates::hash::sha256_bytes(b"tampered\n");
    let recorded = verify_coding_candidates::hash::sha256_bytes(&original);
    refused(
        "rewritten log",
        &format!("file logs/stage/git-archive.cmd: recorded {recorded}, observed {tampered}"),
    );
    // ...and with SHA256SUMS resealed: the sealed listing names it.
    let sums = std::fs::read(share.join("SHA256SUMS")).unwrap();
    reseal_sums(&share);
    refused(
        "rewritten log, resealed",
        &format!(
            "files digest: logs/stage/git-archive.cmd: recorded {recorded}, observed {tampered}"
        ),
    );
    std::fs::write(&log, &original).unwrap();
    std::fs::write(share.join("SHA256SUMS"), &sums).unwrap();

    // A hidden file dropped (as an artifact upload without hidden files does).
    let hidden = share.join("staging/source/.gitignore");
    let kept = std::fs::read(&hidden).unwrap();
    std::fs::remove_file(&hidden).unwrap();
    refused(
        "missing hidden file",
        "file staging/source/.gitignore: missing (recorded sha256 ",
    );
    std::fs::write(&hidden, &kept).unwrap();

    // An extra file nobody recorded.
    std::fs::write(share.join("logs/extra.txt"), "x\n").unwrap();
    refused(
        "extra file",
        "file logs/extra.txt: not listed in SHA256SUMS",
    );
    std::fs::remove_file(share.join("logs/extra.txt")).unwrap();

    // Restored: the same share merges.
    let (_k2, into) = evidence_dir();
    let out = merge_output(&into, &[&share]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
}

#[test]
fn merge_into_a_directory_whose_lock_is_held_exits_2_naming_the_holder() {
    let run = stage_share();
    let share = &run.evidence;
    let (_k2, into) = evidence_dir();
    std::fs::create_dir_all(&into).unwrap();
    // This process stands for a run (or merge) writing into `into`: it holds
    // the lock a run takes, on the empty directory.
    let held = verify_coding_candidates::evidence::lock::acquire(&into).unwrap();
    let out = merge_output(&into, &[share]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let err = stderr_text(&out);
    assert!(
        err.contains(&format!("pid {} holds its lock", std::process::id())),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&into).unwrap().count(),
        0,
        "nothing written into a locked directory"
    );
    // A merge holds it too while it writes: once it is free, the merge runs.
    drop(held);
    let out = merge_output(&into, &[share]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
}

/// Rewrites `dir/evidence.json` with `edit` applied to the parsed evidence
/// and regenerates everything derived from it with the harness's own
/// writers (the candidates' verdicts, files digest, sign-off, `junit.xml`,
/// the statement, `SHA256SUMS`): a forgery consistent in every view.
fn forge_and_reseal(dir: &Path, edit: &dyn Fn(&mut verify_coding_candidates::evidence::Evidence)) {
    use verify_coding_candidates::evidence;
    let mut ev = evidence::read(dir).unwrap();
    edit(&mut ev);
    evidence::verdicts::assign(&ev.gates, &mut ev.candidates);
    evidence::finish(dir, &mut ev, None).unwrap();
}

/// The views of `dir`, to restore after a forgery.
fn views(dir: &Path) -> Vec<(String, Vec<u8>)> {
    verify_coding_candidates::evidence::VIEWS
        .iter()
        .map(|v| (v.to_string(), std::fs::read(dir.join(v)).unwrap()))
        .collect()
}

fn restore(dir: &Path, saved: &[(String, Vec<u8>)]) {
    for (name, bytes) in saved {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

#[test]
fn replay_re_decides_suites_and_archive_members_from_the_kept_observations() {
    use verify_coding_candidates::evidence::{CheckResult, GateResult, Verdict};
    // A suite whose conftest rewrites a failure as a pass: `observed-outcomes`
    // fails in both runs, the run's own records say why.
    let repo = fixture_repo(&["suite-rewrites-outcome"]);
    let (keep, dir) = evidence_dir();
    let profile = keep.path().join("profile.toml");
    std::fs::write(
        &profile,
        profile_with_suite_paths(&["Runner/certification-tests/rewrites-outcome"]),
    )
    .unwrap();
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "suites", "--profile"])
        .arg(&profile)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("logs/profile.toml")).unwrap(),
        std::fs::read_to_string(&profile).unwrap(),
        "the run keeps the profile it read"
    );

    // The genuine directory replays, each re-decided gate agreeing, every
    // other gate named with why it is not re-decided.
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("suites re-decided from logs/suites"),
        "{text}"
    );
    for c in ["acp-agent-runner", "claude-code-agent", "codex-agent"] {
        assert!(
            text.contains(&format!(
                "archive-members ({c}) re-decided from packages/{c}/"
            )),
            "{text}"
        );
    }
    assert!(
        text.contains("not re-decided: tree-clean: decides from `git status`"),
        "{text}"
    );
    assert!(
        text.contains("not re-decided: suites tree/sandbox: "),
        "{text}"
    );
    let saved = views(&dir);

    // The failing suites turned green, every view regenerated: only the
    // kept observations still say otherwise.
    forge_and_reseal(&dir, &|ev| {
        ev.verdict = Verdict::Pass;
        let g = ev.gates.iter_mut().find(|g| g.id == "suites").unwrap();
        g.result = GateResult::Pass;
        g.reason = None;
        for c in &mut g.checks {
            c.result = CheckResult::Pass;
        }
    });
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("REPLAY MISMATCH: 2 of "),
        "every view agrees; only the two re-decided checks differ: {text}"
    );
    for run in ["tree", "extracted"] {
        let prefix = format!(
            "suites check {run}/observed-outcomes (re-decided from logs/suites (collection records, JUnit \
             reports, .cmd), staging/source, extracted and logs/profile.toml): recorded pass, observed fail: "
        );
        assert!(text.contains(&prefix), "{prefix}\n{text}");
    }
    restore(&dir, &saved);
    assert_eq!(replay(&dir, &[]).0, 0, "restored");

    // Only the gate and the verdict turned green, the failing checks left:
    // the gate's result is not the one its checks give.
    forge_and_reseal(&dir, &|ev| {
        ev.verdict = Verdict::Pass;
        let g = ev.gates.iter_mut().find(|g| g.id == "suites").unwrap();
        g.result = GateResult::Pass;
        g.reason = None;
    });
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "gate suites result (from its checks): recorded pass, observed fail: failing check(s) \
             tree/observed-outcomes, extracted/observed-outcomes"
        ),
        "{text}"
    );
    restore(&dir, &saved);

    // The extraction the suites tested, changed after the run, with the
    // files digest, sign-off and every view regenerated: `extraction-exact`
    // re-decided from DIR/extracted and the archive fails.
    let main = dir.join("extracted/codex-agent/main.py");
    let original = std::fs::read(&main).unwrap();
    let mut changed = original.clone();
    changed.extend_from_slice(b"\n# changed after the archive was checked\n");
    std::fs::write(&main, &changed).unwrap();
    forge_and_reseal(&dir, &|_| {});
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("REPLAY MISMATCH: 1 of "),
        "only the re-decision differs: {text}"
    );
    assert!(
        text.contains(
            "archive-members check extraction-exact (codex-agent) (re-decided from \
             packages/codex-agent/"
        ),
        "{text}"
    );
    assert!(text.contains(": recorded pass, observed fail: "), "{text}");
    std::fs::write(&main, &original).unwrap();
    restore(&dir, &saved);
    assert_eq!(replay(&dir, &[]).0, 0, "restored");

    // A kept profile that is not the recorded one is named.
    let kept = dir.join("logs/profile.toml");
    let text_before = std::fs::read_to_string(&kept).unwrap();
    std::fs::write(&kept, format!("{text_before}\n# edited\n")).unwrap();
    forge_and_reseal(&dir, &|_| {});
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("logs/profile.toml sha256 (the profile evidence.json records): recorded"),
        "{text}"
    );
    assert!(
        text.contains("not re-decided: suites: the kept profile logs/profile.toml is not the one"),
        "{text}"
    );
    std::fs::write(&kept, text_before).unwrap();
    restore(&dir, &saved);
    assert_eq!(replay(&dir, &[]).0, 0, "restored");
}

#[test]
fn replay_re_decides_sdk_version_from_the_kept_probe_output() {
    use verify_coding_candidates::evidence::{CheckResult, GateResult, Verdict};
    // A profile pinning another version than the interpreter has:
    // `sdk-version` fails from what the SDK probe printed.
    let repo = fixture_repo(&[]);
    let (keep, dir) = evidence_dir();
    let profile = keep.path().join("profile.toml");
    let builtin = verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS;
    let pinned = builtin.replacen(
        "requirement = \"langbot-plugin==0.6.0b5\"",
        "requirement = \"langbot-plugin==0.6.0b4\"",
        1,
    );
    assert_ne!(pinned, builtin);
    std::fs::write(&profile, pinned).unwrap();
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "sdk-record", "--profile"])
        .arg(&profile)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let ev = read_evidence(&dir);
    assert_eq!(
        check(&ev, "sdk-record", "sdk-version", None)["result"],
        "fail"
    );
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "sdk-record re-decided from logs/sdk-record/probe.stdout and logs/profile.toml"
        ),
        "{text}"
    );
    assert!(
        text.contains("not re-decided: sdk-record record-rows: decides from the interpreter's installed files"),
        "{text}"
    );

    forge_and_reseal(&dir, &|ev| {
        ev.verdict = Verdict::Pass;
        let g = ev.gates.iter_mut().find(|g| g.id == "sdk-record").unwrap();
        g.result = GateResult::Pass;
        g.reason = None;
        for c in &mut g.checks {
            c.result = CheckResult::Pass;
        }
    });
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("REPLAY MISMATCH: 1 of "), "{text}");
    assert!(
        text.contains(
            "sdk-record check sdk-version (re-decided from logs/sdk-record/probe.stdout and \
             logs/profile.toml): recorded pass, observed fail: langbot-plugin installed in "
        ),
        "{text}"
    );
    assert!(text.contains("is 0.6.0b5, required 0.6.0b4"), "{text}");
}
