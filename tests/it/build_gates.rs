//! The build gates end to end: `shared-copies`, `lbp-build` and
//! `archive-members`, run by the verifier binary on fixture repositories with
//! the genuine SDK interpreter from `$PYTHON`.

use crate::common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use verify_coding_candidates::hash;

const FOLDERS: [&str; 3] = ["acp-agent-runner", "claude-code-agent", "codex-agent"];

/// Runs the verifier with `--only <only>` on `repo`, returning the exit code
/// and the evidence.
fn run_only(repo: &Path, evidence: &Path, only: &str) -> (i32, Value) {
    let out = verifier_only(repo, evidence, only)
        .output()
        .expect("run the verifier");
    let code = out.status.code().unwrap_or(-1);
    assert!(
        evidence.join("evidence.json").is_file(),
        "no evidence.json (exit {code}); stderr:\n{}",
        stderr_text(&out)
    );
    (code, read_evidence(evidence))
}

#[test]
fn good_repository_builds_records_and_extracts_every_member() {
    let run = shared_run(&[], &["--only", "archive-members"]);
    let (code, ev_dir) = (run.code, &run.evidence);
    let ev = read_evidence(ev_dir);
    for id in ["lbp-build", "archive-members"] {
        let failed: Vec<&Value> = failed_checks(&ev, id);
        assert_eq!(
            gate_result(&ev, id),
            "pass",
            "gate {id} failed: {failed:#?}"
        );
    }
    assert_eq!(code, 0, "every required gate passed, so the exit code is 0");
    assert!(
        run.repo_unchanged,
        "the repository under review was modified"
    );

    for folder in FOLDERS {
        let cand = candidate(&ev, folder);
        let manifest = &cand["manifest"];
        let archive = &cand["archive"];
        let name = format!(
            "{}-{}-{}.lbpkg",
            manifest["author"].as_str().unwrap(),
            manifest["name"].as_str().unwrap(),
            manifest["version"].as_str().unwrap()
        );
        assert_eq!(archive["path"], format!("packages/{folder}/{name}"));
        // The archive's recorded digest is the file's.
        let file = ev_dir.join(archive["path"].as_str().unwrap());
        let d = hash::sha256_file(&file).unwrap();
        assert_eq!(archive["sha256"], d.hex());
        assert_eq!(archive["size"], d.size);

        // Every member is recorded, manifest first, and its extraction holds
        // exactly those files with those digests.
        let members = archive["members"].as_array().unwrap();
        assert_eq!(
            members[0]["name"], "manifest.yaml",
            "the build writes the manifest first"
        );
        assert!(members
            .iter()
            .any(|m| m["name"] == "pkg/runtime_support.py"));
        // `zipfile.writestr` gives the re-serialised manifest mode 0600.
        assert_eq!(members[0]["mode"], "0600");
        assert_eq!(archive["extracted"], format!("extracted/{folder}"));
        let root = ev_dir.join("extracted").join(folder);
        let mut on_disk = BTreeSet::new();
        for entry in walkdir::WalkDir::new(&root).min_depth(1) {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                on_disk.insert(
                    entry
                        .path()
                        .strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
        let recorded: BTreeSet<String> = members
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            on_disk, recorded,
            "DIR/extracted/{folder} holds exactly the members"
        );
        let mut lines: Vec<String> = Vec::new();
        for m in members {
            let n = m["name"].as_str().unwrap();
            let d = hash::sha256_file(&root.join(n)).unwrap();
            assert_eq!(m["sha256"], d.hex(), "{folder}/{n}");
            assert_eq!(m["size"], d.size, "{folder}/{n}");
            lines.push(format!("{n}\0{}\0{}\n", d.size, d.hex()));
        }
        // The content digest is re-derivable from the members.
        lines.sort();
        assert_eq!(
            archive["content_digest"],
            hash::sha256_bytes(lines.concat().as_bytes())
        );
        // Every member except the manifest is the staged source file.
        let staged = ev_dir.join("staging/source/Runner").join(folder);
        for m in members.iter().filter(|m| m["name"] != "manifest.yaml") {
            let n = m["name"].as_str().unwrap();
            assert_eq!(
                m["sha256"],
                hash::sha256_file(&staged.join(n)).unwrap().hex(),
                "{folder}/{n}"
            );
            // The build stores the staged file's mode; the extraction restores it.
            use std::os::unix::fs::PermissionsExt;
            let staged_mode = std::fs::metadata(staged.join(n))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777;
            assert_eq!(m["mode"], format!("{staged_mode:04o}"), "{folder}/{n}");
            let extracted_mode = std::fs::metadata(root.join(n))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(extracted_mode, staged_mode & 0o777, "{folder}/{n}");
        }
    }
    let check = check(&ev, "archive-members", "zip-comment", Some("codex-agent"));
    assert_eq!(check["result"], "pass");
    for folder in FOLDERS {
        let c = check_of(&ev, "archive-members", "committed-files", folder);
        assert_eq!(c["result"], "pass", "{folder}: {c:#}");
        assert_eq!(c["observed"]["missing"], serde_json::json!([]));
    }
    let check = check_of(&ev, "lbp-build", "source-untouched", "codex-agent");
    assert_eq!(check["result"], "pass");
}

fn check_of<'a>(ev: &'a Value, gate: &str, name: &str, folder: &str) -> &'a Value {
    check(ev, gate, name, Some(folder))
}

/// A syntax error in a packaged module: the official build packages it and
/// exits 0, so without `python-compiles` `--only lbp-build` passed and the
/// first gate to name it was `discovery-rpc`, eight gates later.
#[test]
fn a_syntax_error_fails_lbp_build_naming_file_and_line() {
    let repo = fixture_repo(&["syntax-error"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "lbp-build");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "lbp-build"), "fail");
    let c = check_of(&ev, "lbp-build", "python-compiles", "codex-agent");
    assert_eq!(c["result"], "fail", "{c:#}");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains("main.py:10: SyntaxError: expected ':'"),
        "{detail}"
    );
    assert_eq!(
        c["observed"]["errors"].as_array().unwrap().len(),
        1,
        "{c:#}"
    );
    // The build itself succeeded: only the new check sees it.
    for name in ["build-exit", "single-archive"] {
        assert_eq!(
            check_of(&ev, "lbp-build", name, "codex-agent")["result"],
            "pass"
        );
    }
    for folder in ["acp-agent-runner", "claude-code-agent"] {
        let c = check_of(&ev, "lbp-build", "python-compiles", folder);
        assert_eq!(c["result"], "pass", "{folder}: {c:#}");
        assert!(c["observed"]["python_files"].as_u64().unwrap() > 0, "{c:#}");
    }
}

#[test]
fn float_version_fails_the_build_gate_naming_the_cause_and_the_missing_archive() {
    let repo = fixture_repo(&["float-version"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "lbp-build"), "fail");
    // Only claude-code-agent's own later gates are blocked: the other two
    // archives are inspected.
    assert_eq!(gate_result(&ev, "archive-members"), "pass");
    assert_eq!(
        ev["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == "archive-members")
            .unwrap()["candidates_left_out"],
        serde_json::json!(["claude-code-agent"])
    );

    let single = check_of(&ev, "lbp-build", "single-archive", "claude-code-agent");
    assert_eq!(single["result"], "fail");
    let detail = single["detail"].as_str().unwrap();
    assert!(detail.contains("metadata.version is a float"), "{detail}");
    assert!(detail.contains("wrote no archive"), "{detail}");
    assert!(detail.contains("Plugin manifest not found"), "{detail}");
    // The SDK's build exits 0 here: the exit check alone would have passed.
    assert_eq!(
        check_of(&ev, "lbp-build", "build-exit", "claude-code-agent")["result"],
        "pass"
    );
    assert_eq!(
        check_of(&ev, "lbp-build", "manifest-identity", "claude-code-agent")["result"],
        "fail"
    );
    // The other candidates still built.
    for folder in ["acp-agent-runner", "codex-agent"] {
        assert_eq!(
            check_of(&ev, "lbp-build", "single-archive", folder)["result"],
            "pass"
        );
    }
    assert!(!ev_dir.join("packages/claude-code-agent").exists());
    // Each inspected archive is recorded under its own candidate, although
    // archive-members saw two of the three (records are kept by folder).
    for folder in ["acp-agent-runner", "codex-agent"] {
        let archive = &candidate(&ev, folder)["archive"];
        assert_eq!(
            archive["path"].as_str().unwrap().split('/').nth(1),
            Some(folder),
            "{archive}"
        );
    }
    assert!(candidate(&ev, "claude-code-agent")["archive"].is_null());
    assert_eq!(
        candidate(&ev, "claude-code-agent")["verdict"]["gate"],
        "lbp-build"
    );
}

#[test]
fn drifted_shared_copy_fails_naming_both_files_and_digests() {
    let repo = fixture_repo(&["drifted-shared-copy"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "shared-copies");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "shared-copies"), "fail");
    let canonical = hash::sha256_file(
        &repo
            .root
            .join("Runner/acp-agent-runner/pkg/runtime_support.py"),
    )
    .unwrap()
    .hex();
    let drifted = hash::sha256_file(&repo.root.join("Runner/codex-agent/pkg/runtime_support.py"))
        .unwrap()
        .hex();
    assert_ne!(canonical, drifted);

    let failed = failed_checks(&ev, "shared-copies");
    assert_eq!(failed.len(), 1, "only the drifted copy fails: {failed:#?}");
    let c = failed[0];
    assert_eq!(c["name"], "pkg/runtime_support.py");
    assert_eq!(c["candidate"], "codex-agent");
    let detail = c["detail"].as_str().unwrap();
    for needle in [
        "Runner/codex-agent/pkg/runtime_support.py",
        "Runner/acp-agent-runner/pkg/runtime_support.py",
        canonical.as_str(),
        drifted.as_str(),
    ] {
        assert!(detail.contains(needle), "{needle} missing from: {detail}");
    }
    // One check per (file, candidate): two files, three candidates.
    assert_eq!(checks(&ev, "shared-copies").len(), 6);
}

#[test]
fn unsafe_manifest_name_is_never_built() {
    let repo = fixture_repo(&[]);
    let manifest = repo.root.join("Runner/codex-agent/manifest.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(
        text.contains("name: codex-agent"),
        "fixture manifest changed shape:\n{text}"
    );
    std::fs::write(
        &manifest,
        text.replace("name: codex-agent", "name: ../../evil"),
    )
    .unwrap();
    git(&repo.root, &["commit", "-q", "-am", "unsafe name"]);
    let (keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "lbp-build");
    assert_eq!(code, 1);
    let c = check_of(&ev, "lbp-build", "manifest-identity", "codex-agent");
    assert_eq!(c["result"], "fail");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains("../../evil") && detail.contains("The build was not run"),
        "{detail}"
    );
    // No build ran for it (no log), and nothing named after it appeared
    // anywhere around the evidence directory.
    assert!(!ev_dir.join("logs/lbp-build/codex-agent.cmd").exists());
    assert!(ev_dir.join("logs/lbp-build/acp-agent-runner.cmd").exists());
    for entry in walkdir::WalkDir::new(keep.path()) {
        let entry = entry.unwrap();
        assert!(
            !entry.file_name().to_string_lossy().contains("evil"),
            "{}",
            entry.path().display()
        );
    }
}

/// The SDK's import reads `data/.env` from the working directory
/// (`RuntimeSettings()`). The builds share one import (the build host), made
/// elsewhere: a candidate with that file must get a build of its own, which
/// here fails as `lbp build` run in its folder does (the bytes are not
/// UTF-8), while the other candidates still build from the shared import.
#[test]
fn a_file_the_sdks_import_reads_gets_its_candidate_a_build_of_its_own() {
    let repo = fixture_repo(&[]);
    let env = repo.root.join("Runner/acp-agent-runner/data/.env");
    std::fs::create_dir_all(env.parent().unwrap()).unwrap();
    std::fs::write(&env, b"CLOUD_SERVICE_URL=\xff\xfe\n").unwrap();
    git(
        &repo.root,
        &["add", "-f", "Runner/acp-agent-runner/data/.env"],
    );
    git(&repo.root, &["commit", "-q", "-m", "a data/.env"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "lbp-build");
    assert_eq!(code, 1);
    let c = check_of(&ev, "lbp-build", "build-exit", "acp-agent-runner");
    assert_eq!(c["result"], "fail", "{c:#}");
    assert!(detail(c).contains("UnicodeDecodeError"), "{c:#}");
    for other in ["claude-code-agent", "codex-agent"] {
        assert_eq!(
            check_of(&ev, "lbp-build", "build-exit", other)["result"],
            "pass"
        );
        let cmd =
            std::fs::read_to_string(ev_dir.join(format!("logs/lbp-build/{other}.cmd"))).unwrap();
        assert!(cmd.contains("then forked; this build ran"), "{cmd}");
    }
    let cmd = std::fs::read_to_string(ev_dir.join("logs/lbp-build/acp-agent-runner.cmd")).unwrap();
    assert!(
        cmd.contains("fresh interpreter") && cmd.contains("data/.env"),
        "{cmd}"
    );
}

/// The fixture repository with `files` (`(path, text)` relative to the
/// repository; `.gitignore` lines are appended to the existing file) written
/// and committed in a second commit; `forced` are added with `git add -f`
/// (git's own rules ignore them).
fn repo_with(files: &[(&str, &str)], forced: &[&str]) -> FixtureRepo {
    let repo = fixture_repo(&[]);
    for (rel, text) in files {
        let path = repo.root.join(rel);
        let mut content = std::fs::read_to_string(&path).unwrap_or_default();
        content.push_str(text);
        std::fs::write(&path, content).unwrap();
    }
    git(&repo.root, &["add", "-A"]);
    for rel in forced {
        git(&repo.root, &["add", "-f", rel]);
    }
    git(&repo.root, &["commit", "-q", "-m", "gitignore case"]);
    // Every written file is committed: the case is about committed files.
    let tracked = git(&repo.root, &["ls-files"]);
    for (rel, _) in files {
        assert!(
            tracked.lines().any(|l| l == *rel),
            "{rel} is not committed:\n{tracked}"
        );
    }
    repo
}

/// The member names of `folder`'s archive.
fn member_names(ev: &Value, folder: &str) -> BTreeSet<String> {
    candidate(ev, folder)["archive"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect()
}

/// Asserts `committed-files` of every candidate but `folder` passed.
fn others_pass(ev: &Value, folder: &str) {
    for other in FOLDERS.iter().filter(|f| **f != folder) {
        let c = check_of(ev, "archive-members", "committed-files", other);
        assert_eq!(c["result"], "pass", "{other}: {c:#}");
    }
}

/// The fixture candidates' `.gitignore` has three lines; a test's lines
/// start at line 4.
const CODEX_GITIGNORE: &str = "Runner/codex-agent/.gitignore";

#[test]
fn root_prefix_pattern_dropping_a_committed_file_fails_archive_members() {
    let repo = repo_with(
        &[
            (CODEX_GITIGNORE, "/config\n"),
            ("Runner/codex-agent/config_loader.py", "LOADED = True\n"),
        ],
        &[],
    );
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "archive-members"), "fail");
    // The SDK really left it out, and the archive is what its rules select.
    assert!(!member_names(&ev, "codex-agent").contains("config_loader.py"));
    assert_eq!(
        check_of(&ev, "archive-members", "expected-members", "codex-agent")["result"],
        "pass"
    );
    let c = check_of(&ev, "archive-members", "committed-files", "codex-agent");
    assert_eq!(c["result"], "fail");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "`config_loader.py` (the build dropped it by `.gitignore` line 4 `/config`; git keeps it: \
             no line of the candidate's .gitignore files ignores it)"
        ),
        "{detail}"
    );
    assert_eq!(c["observed"]["missing"][0]["path"], "config_loader.py");
    assert_eq!(c["observed"]["missing"][0]["build"]["line"], 4);
    assert_eq!(failed_checks(&ev, "archive-members").len(), 1);
    others_pass(&ev, "codex-agent");
}

#[test]
fn negated_pattern_dropping_a_committed_file_fails_archive_members() {
    let repo = repo_with(
        &[
            (CODEX_GITIGNORE, "*.log\n!keep.log\n"),
            ("Runner/codex-agent/keep.log", "kept on purpose\n"),
        ],
        &[],
    );
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "archive-members"), "fail");
    assert!(!member_names(&ev, "codex-agent").contains("keep.log"));
    let c = check_of(&ev, "archive-members", "committed-files", "codex-agent");
    assert_eq!(c["result"], "fail");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "`keep.log` (the build dropped it by `.gitignore` line 4 `*.log`; git keeps it by \
             `.gitignore` line 5 `!keep.log`)"
        ),
        "{detail}"
    );
    others_pass(&ev, "codex-agent");
}

#[test]
fn force_added_file_git_ignores_too_is_a_warning_not_a_failure() {
    let repo = repo_with(
        &[
            (CODEX_GITIGNORE, "*.log\n"),
            ("Runner/codex-agent/debug.log", "a debugging trace\n"),
        ],
        &["Runner/codex-agent/debug.log"],
    );
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    let failed = failed_checks(&ev, "archive-members");
    assert_eq!(gate_result(&ev, "archive-members"), "pass", "{failed:#?}");
    assert_eq!(code, 0, "a warning does not fail the run");
    assert!(!member_names(&ev, "codex-agent").contains("debug.log"));
    let c = check_of(&ev, "archive-members", "committed-files", "codex-agent");
    assert_eq!(c["result"], "warn");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "`debug.log` (the build dropped it by `.gitignore` line 4 `*.log`; git ignores it too, by \
             `.gitignore` line 4 `*.log`, so it was force-added)"
        ),
        "{detail}"
    );
    others_pass(&ev, "codex-agent");
}

/// The repository root's `*.log` ignores `trace.log`, but only the
/// candidate's own `.gitignore` files count: they keep it, so the build's
/// `/trace` drop is a failure, not a force-added warning.
#[test]
fn gitignore_files_above_the_candidate_do_not_count() {
    let repo = repo_with(
        &[
            (CODEX_GITIGNORE, "/trace\n"),
            ("Runner/codex-agent/trace.log", "a trace\n"),
        ],
        &["Runner/codex-agent/trace.log"],
    );
    let ignored_above = git(
        &repo.root,
        &[
            "check-ignore",
            "--no-index",
            "-v",
            "Runner/codex-agent/trace.log",
        ],
    );
    assert!(
        ignored_above.starts_with(".gitignore:1:*.log"),
        "{ignored_above}"
    );
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    assert_eq!(code, 1);
    let c = check_of(&ev, "archive-members", "committed-files", "codex-agent");
    assert_eq!(c["result"], "fail");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "`trace.log` (the build dropped it by `.gitignore` line 4 `/trace`; git keeps it"
        ),
        "{detail}"
    );
    assert!(
        detail.contains("ancestor .gitignore files do not count"),
        "{detail}"
    );
}

/// YAML 1.1 (the SDK's PyYAML) and YAML 1.2 (this harness's parser) read
/// these plain scalars apart; the build re-serialises the SDK's reading.
const YAML_1_1_VALUES: &str =
    "x-country: NO\nx-limits:\n  threshold: 1e3\n  mode: 0o17\n  count: 1_000\n  enabled: on\n";

#[test]
fn yaml_1_1_values_are_compared_as_the_sdk_reads_them_and_named_with_advice() {
    let repo = repo_with(
        &[("Runner/codex-agent/manifest.yaml", YAML_1_1_VALUES)],
        &[],
    );
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    assert_eq!(gate_result(&ev, "lbp-build"), "pass");
    // The archive carries exactly what the SDK read: no failure ...
    assert_eq!(
        gate_result(&ev, "archive-members"),
        "pass",
        "{:#?}",
        failed_checks(&ev, "archive-members")
    );
    assert_eq!(code, 0);
    let c = check_of(
        &ev,
        "archive-members",
        "manifest-equal-source",
        "codex-agent",
    );
    // ... but a warning that names every value read apart, both readings
    // and the quoting that makes them agree.
    assert_eq!(c["result"], "warn", "{c:#}");
    let detail = c["detail"].as_str().unwrap();
    assert!(!detail.contains("source NO, archive false"), "{detail}");
    assert!(detail.contains("PyYAML 6."), "{detail}");
    for expected in [
        "`x-country`: the SDK (YAML 1.1) reads the boolean false, YAML 1.2 reads the string \"NO\": quote it (`x-country: \"NO\"`)",
        "`x-limits.threshold`: the SDK (YAML 1.1) reads the string \"1e3\", YAML 1.2 reads the float 1000.0: quote it (`threshold: \"1e3\"`)",
        "`x-limits.mode`: the SDK (YAML 1.1) reads the string \"0o17\", YAML 1.2 reads the integer 15: quote it (`mode: \"0o17\"`)",
        "`x-limits.count`: the SDK (YAML 1.1) reads the integer 1000, YAML 1.2 reads the string \"1_000\": quote it (`count: \"1_000\"`)",
        "`x-limits.enabled`: the SDK (YAML 1.1) reads the boolean true, YAML 1.2 reads the string \"on\": quote it (`enabled: \"on\"`)",
    ] {
        assert!(detail.contains(expected), "missing {expected:?} in {detail}");
    }
    assert_eq!(
        c["observed"]["yaml_1_1_vs_1_2"].as_array().unwrap().len(),
        5
    );
    for other in ["acp-agent-runner", "claude-code-agent"] {
        let c = check_of(&ev, "archive-members", "manifest-equal-source", other);
        assert_eq!(c["result"], "pass", "{other}: {c:#}");
    }
    let logs: Vec<String> = std::fs::read_dir(ev_dir.join("logs/archive-members"))
        .expect("the manifest probe's logs")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        logs.iter()
            .any(|l| l.starts_with("codex-agent-manifest-yaml")),
        "{logs:?}"
    );
}

/// Issue 14: a committed file whose own name the host reads as climbing out
/// (on Linux `pkg\..\..\evil.py` is one file name; the host reads `\` as
/// `/`) is copied by every `lbp build`: the advice is to rename the
/// committed file, never to rebuild; the member data checks are
/// consequences of `member-names`, not failures of their own.
#[test]
fn a_committed_file_named_unsafely_for_the_host_is_answered_with_renaming_it() {
    let name = "pkg\\..\\..\\evil.py";
    let repo = fixture_repo(&[]);
    std::fs::write(
        repo.root.join("Runner/codex-agent").join(name),
        "print('outside')\n",
    )
    .unwrap();
    git(&repo.root, &["add", "-A"]);
    git(&repo.root, &["commit", "-q", "-m", "unsafe name"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    assert_eq!(code, 1);
    let c = check_of(&ev, "archive-members", "member-names", "codex-agent");
    assert_eq!(c["result"], "fail", "{c:#}");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "these names are committed files' own names ({name:?})"
        )) && detail.contains("rename the committed file(s)")
            && !detail.contains("clean tree")
            && !detail.contains("rebuild it from"),
        "{detail}"
    );
    assert_eq!(c["observed"]["committed_unsafe_names"][0], name);
    for data in [
        "members-equal-source",
        "manifest-equal-source",
        "extraction-exact",
    ] {
        let d = check_of(&ev, "archive-members", data, "codex-agent");
        assert_eq!(d["consequence_of"], "member-names", "{d:#}");
    }
    let text = std::fs::read_to_string(ev_dir.join("junit.xml")).unwrap();
    assert!(
        !text.contains("<testcase name=\"codex-agent: extraction-exact\""),
        "a consequence is no testcase of its own"
    );
}

#[test]
fn a_commit_dated_before_1980_fails_lbp_build_naming_the_date_and_the_zip_limit() {
    let repo = fixture_repo(&[]);
    // The same tree, recommitted in 1975: git archive stamps every staged
    // file with that date, which a ZIP timestamp cannot hold.
    let out = std::process::Command::new("git")
        .args(["commit", "-q", "--amend", "--no-edit"])
        .current_dir(&repo.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "1975-06-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "1975-06-01T00:00:00Z")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let commit = git(&repo.root, &["rev-parse", "HEAD"]).trim().to_string();
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "lbp-build");
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "lbp-build"), "fail");
    for folder in FOLDERS {
        let c = check(&ev, "lbp-build", "files-added", Some(folder));
        assert_eq!(c["result"], "fail", "{c}");
        let d = detail(c);
        for needed in [
            format!("commit {commit} is dated 1975-06-01T00:00:00Z (committer date)"),
            "ZIP does not support timestamps before 1980".to_string(),
            "a ZIP (DOS) timestamp cannot hold a date before 1980-01-01".to_string(),
            "\n  main.py: ".to_string(),
        ] {
            assert!(d.contains(&needed), "{needed:?} in {d}");
        }
        // The build itself exited 0: that is what hid the loss.
        assert_eq!(
            check(&ev, "lbp-build", "build-exit", Some(folder))["result"],
            "pass"
        );
    }
}

#[test]
fn a_manifest_starting_with_a_byte_order_mark_is_read_as_the_sdk_reads_it() {
    // PyYAML (the SDK) skips a leading BOM; the harness must read the same
    // manifest, not report "more than one document".
    let repo = fixture_repo(&[]);
    let path = repo.root.join("Runner/codex-agent/manifest.yaml");
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(std::fs::read(&path).unwrap());
    std::fs::write(&path, bytes).unwrap();
    git(&repo.root, &["commit", "-q", "-am", "BOM"]);
    let (_keep, ev_dir) = evidence_dir();
    let (code, ev) = run_only(&repo.root, &ev_dir, "archive-members");
    let text = serde_json::to_string_pretty(&failed_checks(&ev, "lbp-build")).unwrap();
    assert!(!text.contains("more than one document"), "{text}");
    assert_eq!(
        check(&ev, "lbp-build", "manifest-identity", Some("codex-agent"))["result"],
        "pass",
        "{text}"
    );
    assert_eq!(gate_result(&ev, "lbp-build"), "pass", "{text}");
    let members = serde_json::to_string_pretty(&failed_checks(&ev, "archive-members")).unwrap();
    assert_eq!(gate_result(&ev, "archive-members"), "pass", "{members}");
    assert_eq!(code, 0);
}
