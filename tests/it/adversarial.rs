//! A hostile or careless user against the harness: evidence paths that lead
//! back into the repository, file names `sha256sum` must escape, a committed
//! candidate file `git archive` leaves out, tampered partitions given to
//! `merge`, tampering `replay` must name, and partial `--only` runs that must
//! not read as a certification. Every test uses `--only` to stay fast, and
//! every run asserts the repository under review is unchanged.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// Runs the verifier on `repo` with `args` and asserts the repository
/// (`.git/` included) is byte-for-byte unchanged afterwards.
fn run_on(repo: &FixtureRepo, args: &[&std::ffi::OsStr]) -> Output {
    let before = tree_snapshot(&repo.root);
    let out = verifier().args(args).output().expect("run the verifier");
    assert_unchanged(
        &before,
        &tree_snapshot(&repo.root),
        "the repository under review",
    );
    out
}

/// The shared `--only archive-members` run of the fixture ([`shared_run`]),
/// asserted to exit 0 with the repository unchanged, and a private copy of
/// its evidence for a test to tamper with: (the run, guard, copy).
fn archive_members_copy() -> (SharedRun, tempfile::TempDir, std::path::PathBuf) {
    let run = shared_run(&[], &["--only", "archive-members"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.repo_unchanged,
        "the repository under review was modified"
    );
    let (keep, dir) = run.copy_evidence();
    (run, keep, dir)
}

/// The shared run of the fixture with `args` ([`shared_run`]), asserted to
/// leave the repository under review unchanged, as [`run_on`] asserts of a
/// test's own run.
fn shared_unchanged(args: &[&str]) -> SharedRun {
    let run = shared_run(&[], args);
    assert!(
        run.repo_unchanged,
        "the repository under review was modified"
    );
    run
}

/// `--repo REPO --evidence DIR --only ONLY` plus `extra`.
fn run_only(repo: &FixtureRepo, evidence: &Path, only: &str, extra: &[&str]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--repo".as_ref(),
        repo.root.as_os_str(),
        "--evidence".as_ref(),
        evidence.as_os_str(),
        "--only".as_ref(),
        only.as_ref(),
    ];
    args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    run_on(repo, &args)
}

/// `replay --format json` of `evidence`: the exit code and the document.
fn replay(evidence: &Path) -> (i32, Value) {
    let out = replay_output(evidence, &["--format", "json"]);
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("replay --format json: {e}\n{}", both(&out)));
    (out.status.code().unwrap_or(-1), doc)
}

/// The rows of a replay document that do not match, as `item` strings.
/// [`mismatches`] without the sign-off's files-digest row, which every
/// change to a covered file also trips.
fn mismatches_besides_files_digest(doc: &Value) -> Vec<String> {
    mismatches(doc)
        .into_iter()
        .filter(|m| !m.starts_with("files digest"))
        .collect()
}

fn mismatches(doc: &Value) -> Vec<String> {
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["matches"] == false)
        .map(|r| r["item"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn evidence_path_through_a_missing_folder_and_dotdot_cannot_land_in_the_repository() {
    let repo = fixture_repo(&[]);
    // `<tmp>/missing/../langbot-plugins/evidence`: `missing` does not exist, so
    // the path only resolves once `missing` is created, and then it names a
    // folder inside the repository.
    let sneaky = repo
        .dir
        .path()
        .join("missing")
        .join("..")
        .join("langbot-plugins")
        .join("evidence");
    let out = run_only(&repo, &sneaky, "tree-clean", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        stderr_text(&out).contains("outside the repository"),
        "{}",
        both(&out)
    );
    assert!(
        !repo.dir.path().join("missing").exists(),
        "nothing may be created for a refused evidence path"
    );

    // `..` through folders that exist is still accepted (the documented CI
    // form `"$PWD/../evidence"`), and the evidence lands where the path leads.
    let (_keep, fresh) = evidence_dir();
    let parent = fresh.parent().unwrap();
    std::fs::create_dir_all(parent.join("sub")).unwrap();
    let roundabout = parent.join("sub").join("..").join("evidence");
    let out = run_only(&repo, &roundabout, "tree-clean", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(fresh.join("evidence.json").is_file());
}

#[test]
fn evidence_path_through_a_dangling_symlink_is_refused_with_a_reason() {
    let repo = fixture_repo(&[]);
    let (_keep, fresh) = evidence_dir();
    let parent = fresh.parent().unwrap();
    let link = parent.join("link");
    std::os::unix::fs::symlink(repo.root.join("not-yet"), &link).unwrap();
    let out = run_only(&repo, &link.join("evidence"), "tree-clean", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let err = stderr_text(&out);
    assert!(err.contains("symlink"), "{err}");
    assert!(!repo.root.join("not-yet").exists());
}

#[test]
fn python_that_is_a_directory_is_named_as_a_directory() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let venv_bin = python().parent().unwrap().to_path_buf();
    let out = run_on(
        &repo,
        &[
            "--repo".as_ref(),
            repo.root.as_os_str(),
            "--evidence".as_ref(),
            dir.as_os_str(),
            "--python".as_ref(),
            venv_bin.as_os_str(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let err = stderr_text(&out);
    assert!(err.contains("found a directory"), "{err}");
    assert!(err.contains("bin/python"), "what to pass instead: {err}");
    assert!(!dir.exists());
}

#[test]
fn sha256sums_escape_file_names_like_sha256sum_and_replay_reads_them_back() {
    let repo = fixture_repo(&[]);
    let pkg = repo.root.join("Runner/codex-agent/pkg");
    std::fs::write(pkg.join("new\nline.py"), "x = 1\n").unwrap();
    std::fs::write(pkg.join("back\\slash.py"), "y = 2\n").unwrap();
    std::fs::write(pkg.join("with space ü.py"), "z = 3\n").unwrap();
    commit_all(&repo, "hostile names");
    let (_keep, dir) = evidence_dir();
    let out = run_only(&repo, &dir, "stage", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    assert!(
        sums.contains("  staging/source/Runner/codex-agent/pkg/new\\nline.py\n"),
        "{sums}"
    );
    assert!(
        sums.contains("  staging/source/Runner/codex-agent/pkg/back\\\\slash.py\n"),
        "{sums}"
    );

    // GNU sha256sum reads the file back (the README promises its format).
    let check = std::process::Command::new("sha256sum")
        .args(["-c", "--quiet", "SHA256SUMS"])
        .current_dir(&dir)
        .output()
        .expect("run sha256sum (coreutils)");
    assert!(
        check.status.success(),
        "sha256sum -c: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let (code, doc) = replay(&dir);
    assert_eq!(code, 0, "{}", serde_json::to_string_pretty(&doc).unwrap());
}

#[test]
fn export_ignore_on_a_committed_candidate_file_fails_stage() {
    let repo = fixture_repo(&[]);
    std::fs::write(
        repo.root.join(".gitattributes"),
        "Runner/codex-agent/pkg/codex_client.py export-ignore\nREADME.md export-ignore\n",
    )
    .unwrap();
    commit_all(&repo, "export-ignore");
    let (_keep, dir) = evidence_dir();
    let out = run_only(&repo, &dir, "stage", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let ev = read_evidence(&dir);
    assert_eq!(gate_result(&ev, "stage"), "fail");
    let c = check(&ev, "stage", "no-export-ignore", Some("codex-agent"));
    assert_eq!(c["result"], "fail", "{c}");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains("Runner/codex-agent/pkg/codex_client.py"),
        "{detail}"
    );
    assert!(detail.contains(".gitattributes"), "what to do: {detail}");
    // Outside the candidates, export-ignore is listed, not judged.
    for other in ["acp-agent-runner", "claude-code-agent"] {
        assert_eq!(
            check(&ev, "stage", "no-export-ignore", Some(other))["result"],
            "pass"
        );
    }
    assert_eq!(check(&ev, "stage", "blob-ids", None)["result"], "pass");
}

#[test]
fn a_candidate_that_is_a_file_is_named_as_a_file() {
    let repo = fixture_repo(&[]);
    let profile = repo.dir.path().join("file-candidate.toml");
    std::fs::write(
        &profile,
        "name = \"file\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n\
         [[candidate]]\npath = \"README.md\"\n",
    )
    .unwrap();
    let (_keep, dir) = evidence_dir();
    let out = run_only(
        &repo,
        &dir,
        "stage",
        &["--profile", profile.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let ev = read_evidence(&dir);
    let detail = check(&ev, "stage", "candidate-present", Some("README.md"))["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(detail.contains("found a file"), "{detail}");
}

#[test]
fn merge_refuses_a_partition_whose_archive_no_longer_matches_its_evidence() {
    let shares = ["1/2", "2/2"].map(|share| {
        let run = shared_run(&[], &["--only", "archive-members", "--partition", share]);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert!(
            run.repo_unchanged,
            "the repository under review was modified"
        );
        run
    });
    let p1 = &shares[0].evidence;
    // Tampered with below: a copy of the shared share.
    let (_k2, p2) = shares[1].copy_evidence();
    // Swap one archive's bytes and cover the tracks in SHA256SUMS; the
    // partition's evidence.json (and its sign-off) is untouched.
    let ev2 = read_evidence(&p2);
    let path = ev2["candidates"][0]["archive"]["path"].as_str().unwrap();
    let recorded = ev2["candidates"][0]["archive"]["sha256"].as_str().unwrap();
    let mut bytes = std::fs::read(p2.join(path)).unwrap();
    bytes.extend_from_slice(b"tampered");
    std::fs::write(p2.join(path), &bytes).unwrap();
    reseal_sums(&p2);

    let (_k3, merged) = evidence_dir();
    let out = merge_output(&merged, &[p1, &p2]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let err = stderr_text(&out);
    assert!(err.contains(path), "names the archive: {err}");
    assert!(err.contains(recorded), "names the recorded digest: {err}");
    assert!(err.contains("replay"), "says what to do: {err}");
    assert!(!merged.exists(), "nothing is written on refusal");
}

#[test]
fn merge_refuses_partitions_of_different_commits() {
    let repo = fixture_repo(&[]);
    let (_k1, p1) = evidence_dir();
    let (_k2, p2) = evidence_dir();
    let out = run_only(&repo, &p1, "stage", &["--partition", "1/2"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    std::fs::write(repo.root.join("README.md"), "changed\n").unwrap();
    commit_all(&repo, "second");
    let out = run_only(&repo, &p2, "stage", &["--partition", "2/2"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let (_k3, merged) = evidence_dir();
    let out = merge_output(&merged, &[&p1, &p2]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        stderr_text(&out).contains("disagree on commit"),
        "{}",
        both(&out)
    );
    assert!(!merged.exists());
}

#[test]
fn replay_rederives_the_staged_tar_and_refuses_sums_outside_the_directory() {
    let run = shared_unchanged(&["--only", "stage"]);
    assert_eq!(run.code, 0, "{}", run.text());
    // Tampered with below: a copy of the shared evidence.
    let (_keep, dir) = run.copy_evidence();
    let (code, doc) = replay(&dir);
    assert_eq!(code, 0, "{doc}");
    assert!(
        doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["item"] == "staging/source.tar sha256" && r["matches"] == true),
        "{doc}"
    );

    // The git archive replaced and SHA256SUMS resealed: evidence.json still
    // records the tar's digest, and replay compares it.
    let tar = dir.join("staging/source.tar");
    let original = std::fs::read(&tar).unwrap();
    let mut edited = original.clone();
    edited.extend_from_slice(&[0u8; 512]);
    std::fs::write(&tar, &edited).unwrap();
    reseal_sums(&dir);
    let (code, doc) = replay(&dir);
    assert_eq!(code, 1, "{doc}");
    // The sign-off's files digest (which covers the tar) differs too.
    assert_eq!(
        mismatches_besides_files_digest(&doc),
        vec!["staging/source.tar sha256".to_string()]
    );
    // ...and the sealed listing names the file.
    let all = mismatches(&doc);
    assert!(all[0].starts_with("files digest ("), "{doc}");
    assert_eq!(
        all[1..],
        [
            "files digest: staging/source.tar".to_string(),
            "staging/source.tar sha256".to_string()
        ],
        "{doc}"
    );
    std::fs::write(&tar, &original).unwrap();
    reseal_sums(&dir);

    // A SHA256SUMS line naming a file outside the directory, with its true
    // digest, is not evidence of anything in the directory.
    let outside = run.repo.join("README.md");
    let digest = verify_coding_candidates::hash::sha256_file(&outside)
        .unwrap()
        .hex();
    let mut sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    sums.push_str(&format!("{digest}  {}\n", outside.display()));
    sums.push_str(&format!("{digest}  ../../x/README.md\n"));
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
    let (code, doc) = replay(&dir);
    assert_eq!(code, 1, "{doc}");
    let bad = mismatches(&doc);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad.iter().all(|i| i.starts_with("SHA256SUMS line")),
        "{bad:?}"
    );
}

#[test]
fn replay_never_runs_a_relative_interpreter_named_by_the_evidence() {
    let (run, _keep, dir) = archive_members_copy();
    // A hostile evidence.json names a program inside the candidate as the
    // interpreter (relative, so it resolves inside the rebuild's source copy),
    // and reseals its sign-off digest and SHA256SUMS.
    let path = dir.join("evidence.json");
    let mut ev: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    ev["sdk"]["python"] = Value::String("./main.py".into());
    ev["sign_off"]["evidence_sha256"] =
        Value::String(verify_coding_candidates::evidence::canonical_digest(&ev));
    std::fs::write(&path, serde_json::to_string_pretty(&ev).unwrap()).unwrap();
    reseal_sums(&dir);
    let before = tree_snapshot(&run.repo);
    let out = verifier_without_python()
        .arg("replay")
        .arg("--evidence")
        .arg(&dir)
        .arg("--repo")
        .arg(&run.repo)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_unchanged(&before, &tree_snapshot(&run.repo), "the repository");
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["item"] == "rebuild interpreter")
        .unwrap_or_else(|| panic!("no interpreter row: {doc}"));
    assert_eq!(row["matches"], false, "{row}");
    assert!(
        row["observed"].as_str().unwrap().contains("--python"),
        "{row}"
    );
}

#[test]
fn an_only_run_says_it_is_partial_in_every_view() {
    // Every gate of the catalogue but the one run.
    const GATES: usize = 16;
    assert_eq!(verify_coding_candidates::catalogue::all().len(), GATES);
    let run = shared_unchanged(&["--only", "tree-clean"]);
    assert_eq!(run.code, 0, "{}", run.text());
    let text = &run.stdout;
    assert!(
        text.contains(&format!(
            "PASS (partial: --only tree-clean; {} of {GATES} gates not run",
            GATES - 1
        )),
        "{text}"
    );
    let st: Value = serde_json::from_str(
        &std::fs::read_to_string(run.evidence.join("statement.intoto.json")).unwrap(),
    )
    .unwrap();
    let tool = st["predicate"]["configuration"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["annotations"]["evidence_sha256"].is_string())
        .unwrap();
    assert_eq!(
        st["predicate"]["result"], "WARNED",
        "a partial run is never PASSED"
    );
    assert!(
        text.contains(
            "predicate.result WARNED (a partial run: only a full certification is PASSED)"
        ),
        "{text}"
    );
    let not_run = tool["annotations"]["gates_not_run"].as_array().unwrap();
    assert_eq!(not_run.len(), GATES - 1, "{tool}");
    assert!(not_run.iter().any(|g| g == "lbp-build"), "{tool}");

    let json = shared_unchanged(&["--only", "tree-clean", "--format", "json"]);
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["partial"], true, "{doc}");
    assert_eq!(doc["gates_not_run"].as_array().unwrap().len(), GATES - 1);
}

#[test]
fn merge_refuses_an_archive_path_outside_the_partition_and_an_incomplete_partition() {
    let repo = fixture_repo(&[]);
    let (_k1, p1) = evidence_dir();
    let out = run_only(&repo, &p1, "archive-members", &["--partition", "1/1"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let original = std::fs::read_to_string(p1.join("evidence.json")).unwrap();
    let reseal = |edit: &dyn Fn(&mut Value)| {
        let mut ev: Value = serde_json::from_str(&original).unwrap();
        edit(&mut ev);
        ev["sign_off"]["evidence_sha256"] =
            Value::String(verify_coding_candidates::evidence::canonical_digest(&ev));
        std::fs::write(
            p1.join("evidence.json"),
            serde_json::to_string_pretty(&ev).unwrap(),
        )
        .unwrap();
        reseal_sums(&p1);
    };
    let merge = |into: &Path| merge_output(into, &[&p1]);

    // An archive path climbing out of the partition, with the archive's true
    // bytes there (the sign-off digest is unkeyed, so a hostile partition can
    // reseal it): merging would write next to the merged directory.
    let first: Value = serde_json::from_str(&original).unwrap();
    let real = first["candidates"][0]["archive"]["path"].as_str().unwrap();
    std::fs::copy(p1.join(real), p1.parent().unwrap().join("escape.lbpkg")).unwrap();
    reseal(&|ev| ev["candidates"][0]["archive"]["path"] = Value::String("../escape.lbpkg".into()));
    let (_k2, into) = evidence_dir();
    let out = merge(&into);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        stderr_text(&out).contains("../escape.lbpkg"),
        "{}",
        both(&out)
    );
    assert!(!into.exists());
    assert!(
        !into.parent().unwrap().join("escape.lbpkg").exists(),
        "nothing is written outside the merged directory"
    );

    // An interrupted partition is not merged into a verdict.
    reseal(&|ev| {
        ev["verdict"] = Value::String("incomplete".into());
    });
    let out = merge(&into);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr_text(&out).contains("incomplete"), "{}", both(&out));
    assert!(!into.exists());
}

/// Every process whose command line or environment mentions `needle`, as
/// `(pid, command line)`; the caller's own process is left out.
fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let read = |f: &str| {
            std::fs::read(entry.path().join(f))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default()
        };
        let (cmdline, environ) = (read("cmdline"), read("environ"));
        if cmdline.contains(needle) || environ.contains(needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Starts a run of `only`, waits until a child whose command line or
/// environment mentions `DIR/<marker>` is running, lets it run `settle`,
/// sends SIGINT to the harness alone (its children have their own process
/// groups, as with a terminal's Ctrl-C they would not be signalled by the
/// harness's group), and checks exit 130, verdict `incomplete`, the full
/// evidence set, and that nothing mentioning DIR is left running.
fn interrupt_during(only: &str, marker: &str, settle: std::time::Duration) {
    use std::time::{Duration, Instant};
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin(BIN))
        .env("PYTHON", python())
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", only])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let needle = dir.join(marker).display().to_string();
    let deadline = Instant::now() + Duration::from_secs(120);
    while processes_mentioning(&needle).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before any {marker} child started"
        );
        assert!(Instant::now() < deadline, "no {marker} child within 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(settle);
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    let survivors = processes_mentioning(&dir.display().to_string());
    assert!(
        survivors.is_empty(),
        "processes left running: {survivors:?}"
    );
    let ev = read_evidence(&dir);
    assert_eq!(ev["verdict"], "incomplete", "{}", both(&out));
    assert_eq!(ev["sign_off"]["verdict"], "incomplete");
    for f in ["junit.xml", "statement.intoto.json", "SHA256SUMS"] {
        assert!(dir.join(f).is_file(), "{f} written");
    }
    assert!(
        stdout_text(&out).contains("INCOMPLETE"),
        "{}",
        stdout_text(&out)
    );
    // The gate cut short is an error in the CI test view, never a skip.
    let junit = read_junit(&dir);
    let interrupted = junit_suite(&junit, only);
    assert_eq!(interrupted["errors"], 1, "{interrupted}");
    assert_eq!(interrupted["cases"][0]["name"], "interrupted");
    assert_eq!(interrupted["cases"][0]["outcome"], "error");
    let (code, doc) = replay(&dir);
    assert_eq!(code, 0, "an interrupted run's evidence replays: {doc}");
}

#[test]
fn sigint_during_lbp_build_exits_130_incomplete_and_leaves_nothing_running() {
    interrupt_during(
        "lbp-build",
        "roots/lbp-build",
        std::time::Duration::from_millis(100),
    );
}

#[test]
fn sigint_during_worker_isolation_exits_130_incomplete_and_leaves_nothing_running() {
    interrupt_during(
        "worker-isolation",
        "roots/worker-isolation",
        std::time::Duration::from_millis(1500),
    );
}

#[test]
fn replay_names_an_archive_path_outside_the_evidence_directory() {
    let (_run, _keep, dir) = archive_members_copy();
    let path = dir.join("evidence.json");
    let mut ev: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let real = ev["candidates"][0]["archive"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    // The true archive, moved out of the directory, named by a resealed
    // evidence.json: its digests still match, but it is not in the evidence.
    std::fs::rename(dir.join(&real), dir.parent().unwrap().join("outside.lbpkg")).unwrap();
    ev["candidates"][0]["archive"]["path"] = Value::String("../outside.lbpkg".into());
    ev["sign_off"]["evidence_sha256"] =
        Value::String(verify_coding_candidates::evidence::canonical_digest(&ev));
    std::fs::write(&path, serde_json::to_string_pretty(&ev).unwrap()).unwrap();
    reseal_sums(&dir);
    let (code, doc) = replay(&dir);
    assert_eq!(code, 1, "{doc}");
    let folder = ev["candidates"][0]["folder"].as_str().unwrap();
    // The resealed evidence.json no longer agrees with the statement written
    // by the run (the evidence digest it carries differs), nor with its
    // report.html (which shows the archive path).
    let (views, rest): (Vec<String>, Vec<String>) = mismatches(&doc)
        .into_iter()
        .partition(|m| m.starts_with("statement.intoto.json: ") || m.starts_with("report.html "));
    assert!(views.iter().any(|m| m.contains("evidence_sha256")), "{doc}");
    assert!(
        views.iter().any(|m| m.starts_with("report.html sha256")),
        "{doc}"
    );
    // The archive left the directory, so the sign-off's files digest differs too.
    assert_eq!(
        rest.iter()
            .filter(|m| !m.starts_with("files digest"))
            .cloned()
            .collect::<Vec<_>>(),
        vec![format!("{folder} archive path")]
    );
    // ...and the sealed listing names the archive that left.
    let all = rest;
    assert!(all[0].starts_with("files digest ("), "{doc}");
    assert_eq!(
        all[1..],
        [
            format!("files digest: {real}"),
            format!("{folder} archive path")
        ],
        "{doc}"
    );
}

#[test]
fn python_that_is_not_an_interpreter_fails_sdk_record_saying_what_to_pass() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let out = run_only(&repo, &dir, "sdk-record", &["--python", "/bin/true"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let ev = read_evidence(&dir);
    let failed = failed_checks(&ev, "sdk-record");
    assert!(!failed.is_empty());
    for c in failed {
        let detail = c["detail"].as_str().unwrap();
        assert!(detail.contains("/bin/true"), "{detail}");
        assert!(detail.contains("--python"), "what to do: {detail}");
        assert!(detail.contains("expected"), "{detail}");
        // Files of the evidence directory are named relative to it.
        assert!(detail.contains("DIR/logs/sdk-record/"), "{detail}");
        assert!(!detail.contains(&dir.display().to_string()), "{detail}");
    }
}

#[test]
fn a_committed_name_that_is_not_utf8_fails_stage_instead_of_being_renamed() {
    use std::os::unix::ffi::OsStrExt;
    let repo = fixture_repo(&[]);
    let name = std::ffi::OsStr::from_bytes(b"bad\xff.py");
    std::fs::write(
        repo.root.join("Runner/codex-agent/pkg").join(name),
        "x = 1\n",
    )
    .unwrap();
    commit_all(&repo, "a name that is not UTF-8");
    let (_keep, dir) = evidence_dir();
    let out = run_only(&repo, &dir, "stage", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let ev = read_evidence(&dir);
    let c = check(&ev, "stage", "tar-extraction", None);
    assert_eq!(c["result"], "fail", "{c}");
    let detail = c["detail"].as_str().unwrap();
    assert!(detail.contains("Runner/codex-agent/pkg/bad"), "{detail}");
    assert!(detail.contains("not UTF-8"), "{detail}");
}

#[test]
fn a_partition_share_without_candidates_cannot_run() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let out = run_only(&repo, &dir, "lbp-build", &["--partition", "4/4"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let err = stderr_text(&out);
    assert!(err.contains("--partition 4/4"), "{err}");
    assert!(err.contains("3 candidate(s)"), "{err}");
    assert!(
        !dir.exists(),
        "nothing is written when the run cannot start"
    );
}

#[test]
fn merge_refuses_to_write_inside_a_partition() {
    let repo = fixture_repo(&[]);
    let (_k1, p1) = evidence_dir();
    let (_k2, p2) = evidence_dir();
    for (dir, share) in [(&p1, "1/2"), (&p2, "2/2")] {
        let out = run_only(&repo, dir, "stage", &["--partition", share]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    }
    let before = tree_snapshot(&p2);
    for into in [
        p2.join("merged"),
        p1.join("x/../../evidence/y").join("..").join("merged"),
    ] {
        let out = merge_output(&into, &[&p1, &p2]);
        assert_eq!(out.status.code(), Some(2), "{}", both(&out));
        assert!(
            stderr_text(&out).contains("outside every partition"),
            "{}",
            both(&out)
        );
    }
    assert_unchanged(&before, &tree_snapshot(&p2), "partition 2");
    assert!(!p1.join("merged").exists() && !p1.join("x").exists());
}
