//! Command-line behaviour that needs no gate result beyond `tree-clean`: help,
//! the gate list, every reason the run cannot start (exit code 2), a closed
//! stdout, and how the summary shows an `--only` run and a dirty tree. Each
//! test asserts that the repository under review is byte-for-byte unchanged
//! (`.git/` included) and that nothing was written where evidence would go
//! when the run cannot start.

use crate::common;

use common::{
    assert_unchanged, evidence_dir, exit_code, fixture_repo, git, python, read_evidence,
    shared_run, stderr_text, stdout_text, tree_snapshot, verifier, verifier_on, verifier_only,
    verifier_without_python,
};
use verify_coding_candidates::{catalogue, exit};

/// Runs `cmd` against a fresh fixture repository and returns its output,
/// asserting the repository did not change.
fn run_on_fixture(
    repo: &common::FixtureRepo,
    cmd: &mut assert_cmd::Command,
) -> std::process::Output {
    let before = tree_snapshot(&repo.root);
    let output = cmd.output().expect("run the verifier");
    assert_unchanged(
        &before,
        &tree_snapshot(&repo.root),
        "the repository under review",
    );
    output
}

/// Runs the verifier without `PYTHON` in a fresh fixture repository with
/// the single argument `arg`, asserts it exits with success, and returns its
/// stdout.
fn succeeding_stdout_in_a_fixture(arg: &str) -> String {
    let repo = fixture_repo(&[]);
    let out = run_on_fixture(
        &repo,
        verifier_without_python().current_dir(&repo.root).arg(arg),
    );
    assert_exit(&out, exit::SUCCESS);
    stdout_text(&out)
}

/// Asserts the verifier exited with `expected`, showing its stderr if not.
fn assert_exit(out: &std::process::Output, expected: u8) {
    assert_eq!(exit_code(out), i32::from(expected), "{}", stderr_text(out));
}

/// Asserts the verifier's stderr contains `needle`.
fn assert_stderr_contains(out: &std::process::Output, needle: &str) {
    let err = stderr_text(out);
    assert!(err.contains(needle), "{err}");
}

/// Asserts the evidence directory `dir` was not created.
fn assert_nothing_written(dir: &std::path::Path) {
    assert!(
        !dir.exists(),
        "nothing is written when the run cannot start"
    );
}

#[test]
fn help_documents_the_exit_code_table() {
    let text = succeeding_stdout_in_a_fixture("--help");
    assert!(text.contains("Exit codes:"), "{text}");
    for (code, meaning) in [
        (exit::SUCCESS, "every required gate passed"),
        (exit::GATE_FAILED, "at least one gate failed"),
        (exit::CANNOT_RUN, "could not run"),
        (exit::INTERRUPTED, "interrupted"),
    ] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{code} ")))
            .unwrap_or_else(|| panic!("--help has no line for exit code {code}:\n{text}"));
        assert!(
            line.contains(meaning),
            "exit code {code}: expected {meaning:?} in {line:?}"
        );
    }
}

#[test]
fn gates_lists_every_catalogue_gate_with_what_it_proves_and_does_not_prove() {
    let text = succeeding_stdout_in_a_fixture("gates");
    let mut blocks: Vec<&str> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .collect();
    let all = catalogue::all();
    assert_eq!(
        blocks.len(),
        all.len() + 1,
        "one block per catalogue gate, then the built-in fixtures:\n{text}"
    );
    let fixtures = blocks.pop().unwrap();
    assert!(
        fixtures.starts_with("built-in local protocol fixtures"),
        "{fixtures}"
    );
    for name in ["claude-code-stream-json", "codex-app-server", "acp-stdio"] {
        assert!(
            fixtures.contains(&format!("  builtin:{name} ")),
            "{name} is listed:\n{fixtures}"
        );
    }
    for (gate, block) in all.iter().zip(&blocks) {
        let first = block.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("{}  ", gate.id)),
            "expected gate {} first in block:\n{block}",
            gate.id
        );
        // Lines are wrapped (80 columns off a terminal): compare the words.
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let block_words = words(block);
        assert!(
            block_words.contains(&format!("proves: {}", words(&gate.proves))),
            "{}: proves text missing:\n{block}",
            gate.id
        );
        assert!(
            block_words.contains(&format!("does not prove: {}", words(&gate.does_not_prove))),
            "{}: does-not-prove text missing:\n{block}",
            gate.id
        );
        assert!(
            block.lines().all(|l| l.chars().count() <= 80),
            "{}: a line is wider than 80 columns:\n{block}",
            gate.id
        );
    }
}

#[test]
fn relative_evidence_dir_cannot_run() {
    let repo = fixture_repo(&[]);
    let cwd = tempfile::tempdir().unwrap();
    let out = run_on_fixture(
        &repo,
        verifier()
            .current_dir(cwd.path())
            .arg("--repo")
            .arg(&repo.root)
            .args(["--evidence", "relative/evidence"]),
    );
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "absolute");
    assert!(
        !cwd.path().join("relative").exists(),
        "a relative evidence dir must not be created"
    );
}

#[test]
fn non_empty_evidence_dir_cannot_run() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("earlier-run.txt"), b"an earlier run's evidence\n").unwrap();
    let dir_before = tree_snapshot(&dir);
    let out = run_on_fixture(&repo, &mut verifier_on(&repo.root, &dir));
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "missing or empty");
    assert_unchanged(
        &dir_before,
        &tree_snapshot(&dir),
        "the non-empty evidence dir",
    );
}

#[test]
fn evidence_dir_inside_the_repository_cannot_run() {
    let repo = fixture_repo(&[]);
    let inside = repo.root.join("evidence");
    let out = run_on_fixture(&repo, &mut verifier_on(&repo.root, &inside));
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "outside the repository");
    assert!(!inside.exists());
}

#[test]
fn directory_that_is_not_a_git_repository_cannot_run() {
    let plain = tempfile::tempdir().unwrap();
    common::copy_tree(&common::fixtures_dir().join("candidate-repo"), plain.path());
    let before = tree_snapshot(plain.path());
    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .arg("--repo")
        .arg(plain.path())
        .arg("--evidence")
        .arg(&dir)
        .output()
        .unwrap();
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "expected a git work tree");
    assert_unchanged(&before, &tree_snapshot(plain.path()), "the plain directory");
    assert_nothing_written(&dir);
}

/// Without --evidence a run writes into a fresh directory under the system
/// temporary directory, keeps it, and prints its path as the last stdout line.
#[test]
fn without_evidence_a_fresh_temporary_directory_is_made_and_printed_last() {
    let repo = fixture_repo(&[]);
    let out = run_on_fixture(
        &repo,
        verifier()
            .arg("--repo")
            .arg(&repo.root)
            .args(["--only", "tree-clean"]),
    );
    assert_exit(&out, exit::SUCCESS);
    let stdout = stdout_text(&out);
    let dir = std::path::PathBuf::from(stdout.lines().last().unwrap());
    assert!(dir.starts_with(std::env::temp_dir()), "{stdout}");
    assert!(dir.join("evidence.json").is_file(), "{stdout}");
    assert!(
        stderr_text(&out).contains(&format!(
            "no --evidence given: writing the evidence into {}",
            dir.display()
        )),
        "{}",
        stderr_text(&out)
    );
    common::make_writable(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without --python and PYTHON the verifier provisions its own interpreter;
/// when it cannot (here: the base interpreter does not exist) the run cannot
/// start, says why and what to pass instead, and writes nothing (neither
/// evidence nor a cache environment).
#[test]
fn no_interpreter_and_no_base_interpreter_cannot_run() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let cache = tempfile::tempdir().unwrap();
    let out = run_on_fixture(
        &repo,
        verifier_without_python()
            .env("XDG_CACHE_HOME", cache.path())
            .env("VCC_BASE_PYTHON", "/nonexistent/vcc-no-python3")
            .arg("--repo")
            .arg(&repo.root)
            .arg("--evidence")
            .arg(&dir),
    );
    assert_exit(&out, exit::CANNOT_RUN);
    let err = stderr_text(&out);
    assert!(
        err.contains("no interpreter given")
            && err.contains("/nonexistent/vcc-no-python3")
            && err.contains("--python"),
        "{err}"
    );
    assert_nothing_written(&dir);
    let sdk = cache.path().join("verify-coding-candidates/sdk");
    let left: Vec<_> = std::fs::read_dir(&sdk)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn unknown_gate_in_only_cannot_run_and_names_the_known_gates() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let out = run_on_fixture(
        &repo,
        verifier_on(&repo.root, &dir)
            .arg("--python")
            .arg(python())
            .args(["--only", "bogus"]),
    );
    assert_exit(&out, exit::CANNOT_RUN);
    let err = stderr_text(&out);
    assert!(err.contains("\"bogus\""), "{err}");
    for gate in catalogue::all() {
        assert!(
            err.contains(&gate.id),
            "expected known gate {} named in: {err}",
            gate.id
        );
    }
    assert_nothing_written(&dir);
}

#[test]
fn unknown_profile_key_cannot_run_and_names_the_key() {
    let repo = fixture_repo(&[]);
    let (keep, dir) = evidence_dir();
    let profile = keep.path().join("profile.toml");
    let text = format!(
        "{}\nsurprise_key = true\n",
        verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS
    );
    std::fs::write(&profile, text).unwrap();
    let out = run_on_fixture(
        &repo,
        verifier_on(&repo.root, &dir).arg("--profile").arg(&profile),
    );
    assert_exit(&out, exit::CANNOT_RUN);
    let err = stderr_text(&out);
    assert!(err.contains("surprise_key"), "{err}");
    assert!(
        err.contains(&profile.display().to_string()),
        "the error names the profile file: {err}"
    );
    assert_nothing_written(&dir);
}

#[test]
fn readme_gives_the_two_setup_commands_and_names_every_gate() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let setup = readme
        .split("## Set up")
        .nth(1)
        .expect("README has a `## Set up` section");
    let block = setup
        .split("```")
        .nth(1)
        .expect("the Set up section opens with a code block");
    let commands: Vec<&str> = block
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(commands, ["cargo xtask demo", "cargo xtask test"]);
    let ci = std::fs::read_to_string(path.with_file_name(".ci").join("run")).expect(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == "cargo xtask test"),
        ".ci/run must call the README's test command"
    );
    let gates = std::fs::read_to_string(path.with_file_name("docs").join("gates.md"))
        .expect("docs/gates.md");
    for gate in catalogue::all() {
        assert!(
            gates.contains(&format!("| `{}` |", gate.id)),
            "docs/gates.md's gate table has no row for `{}`: add one (see `verify-coding-candidates gates`)",
            gate.id
        );
    }
}

#[test]
fn profiles_page_example_is_a_valid_profile() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/profiles.md");
    let page = std::fs::read_to_string(&path).expect("docs/profiles.md");
    let example = page
        .split("```toml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("docs/profiles.md has a ```toml example");
    let profile = verify_coding_candidates::profile::parse(example, "docs/profiles.md example")
        .unwrap_or_else(|e| {
            panic!("docs/profiles.md's profile example is not a valid profile: {e}")
        });
    assert_eq!(profile.sdk.version(), "0.6.0b5");
}

/// Stdout for a child whose reader is already gone: every write fails with
/// `EPIPE` (as under `| true`, or `| head -1` once head has its line).
fn closed_stdout() -> std::process::Stdio {
    let (reader, writer) = std::io::pipe().expect("create a pipe");
    drop(reader);
    writer.into()
}

/// Runs the verifier binary with `args`, stdout a pipe nobody reads.
fn run_with_closed_stdout(args: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_verify-coding-candidates"))
        .args(args)
        .env("PYTHON", python())
        .stdin(std::process::Stdio::null())
        .stdout(closed_stdout())
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run the verifier")
}

fn assert_quiet_end(what: &str, out: &std::process::Output, expected: u8) {
    let err = stderr_text(out);
    assert_ne!(
        exit_code(out),
        101,
        "{what}: a closed stdout made it panic:\n{err}"
    );
    assert!(!err.contains("panicked"), "{what}:\n{err}");
    assert!(
        !err.contains("cannot write to stdout"),
        "{what}: a reader that went away is not an error:\n{err}"
    );
    assert_eq!(exit_code(out), i32::from(expected), "{what}:\n{err}");
}

#[test]
fn a_closed_stdout_ends_the_output_quietly_with_the_commands_own_exit_code() {
    let out = run_with_closed_stdout(&["gates".as_ref()]);
    assert_quiet_end("gates", &out, exit::SUCCESS);

    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    for format in ["text", "json"] {
        let dir = dir.join(format);
        let out = run_with_closed_stdout(&[
            "--repo".as_ref(),
            repo.root.as_os_str(),
            "--evidence".as_ref(),
            dir.as_os_str(),
            "--only".as_ref(),
            "tree-clean".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
        ]);
        assert_quiet_end(&format!("a run, --format {format}"), &out, exit::SUCCESS);
        assert!(
            dir.join("evidence.json").is_file(),
            "the evidence is written whoever reads the summary"
        );
    }
    for format in ["text", "json"] {
        let out = run_with_closed_stdout(&[
            "replay".as_ref(),
            "--evidence".as_ref(),
            dir.join("text").as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ]);
        assert_quiet_end(&format!("replay --format {format}"), &out, exit::SUCCESS);
    }
}

#[test]
fn an_unknown_gate_in_only_is_rejected_before_any_prerequisite_is_announced() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let out = run_on_fixture(
        &repo,
        verifier_on(&repo.root, &dir).args(["--only", "lbp-build,bogus"]),
    );
    let err = stderr_text(&out);
    assert_exit(&out, exit::CANNOT_RUN);
    assert!(err.contains("unknown gate \"bogus\""), "{err}");
    assert!(!err.contains("also running"), "{err}");
    assert_nothing_written(&dir);

    // Nor before any other reason the run cannot start.
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("earlier-run.txt"), b"an earlier run\n").unwrap();
    let out = run_on_fixture(
        &repo,
        verifier_on(&repo.root, &dir).args(["--only", "lbp-build"]),
    );
    let err = stderr_text(&out);
    assert_exit(&out, exit::CANNOT_RUN);
    assert!(err.contains("missing or empty"), "{err}");
    assert!(!err.contains("also running"), "{err}");
}

#[test]
fn evidence_path_that_is_a_regular_file_cannot_run_and_says_what_was_expected() {
    let repo = fixture_repo(&[]);
    let keep = tempfile::tempdir().unwrap();
    let file = std::path::absolute(keep.path().join("evidence.json")).unwrap();
    std::fs::write(&file, b"an unrelated file\n").unwrap();
    let out = run_on_fixture(&repo, &mut verifier_on(&repo.root, &file));
    let err = stderr_text(&out);
    assert_exit(&out, exit::CANNOT_RUN);
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(
        err.contains("expected a directory") && err.contains("found an existing regular file"),
        "{err}"
    );
    assert!(err.contains("choose a fresh directory"), "{err}");
    assert!(!err.contains("os error"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"an unrelated file\n");
}

#[test]
fn a_dirty_tree_shows_git_status_once_and_every_failing_check_its_paths() {
    let repo = fixture_repo(&[]);
    let root = &repo.root;
    std::fs::write(root.join("staged.txt"), b"staged\n").unwrap();
    common::git(root, &["add", "staged.txt"]);
    let main = root.join("Runner/codex-agent/main.py");
    let mut text = std::fs::read_to_string(&main).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&main, text).unwrap();
    std::fs::write(root.join("untracked.txt"), b"untracked\n").unwrap();

    let (_keep, dir) = evidence_dir();
    let out = run_on_fixture(
        &repo,
        verifier_on(root, &dir).args(["--only", "tree-clean"]),
    );
    let text = stdout_text(&out);
    assert_eq!(
        exit_code(&out),
        i32::from(exit::GATE_FAILED),
        "{text}{}",
        stderr_text(&out)
    );
    assert_eq!(text.matches("git status:\n").count(), 1, "{text}");
    assert_eq!(text.matches("On branch main").count(), 1, "{text}");
    for (check, path) in [
        ("staged-changes", "staged.txt"),
        ("unstaged-changes", "Runner/codex-agent/main.py"),
        ("untracked-files", "untracked.txt"),
    ] {
        let block = text
            .split(&format!("failed {check}:"))
            .nth(1)
            .unwrap_or_else(|| panic!("no failed {check} in:\n{text}"));
        let block = block.split("      failed ").next().unwrap();
        assert!(
            block.contains(&format!("\n          {path}\n")),
            "{check}:\n{block}"
        );
        if check != "staged-changes" {
            assert!(
                block.contains("git status: see the staged-changes check above"),
                "{check}:\n{block}"
            );
        }
    }

    // The gates --only left out: one line, not one row each.
    assert!(!text.contains("not selected by --only"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("  not run (--only): "))
        .unwrap_or_else(|| panic!("no `not run (--only)` line:\n{text}"));
    let listed: Vec<&str> = line["  not run (--only): ".len()..].split(", ").collect();
    let expected: Vec<&str> = catalogue::all()[1..]
        .iter()
        .map(|g| g.id.as_str())
        .collect();
    assert_eq!(listed, expected, "{text}");
}

#[test]
fn run_options_before_a_subcommand_are_refused_not_ignored() {
    let out = verifier_without_python()
        .args([
            "--python",
            "/x/bin/python",
            "replay",
            "--evidence",
            "/tmp/none",
        ])
        .output()
        .unwrap();
    assert_exit(&out, exit::CANNOT_RUN);
    assert_eq!(
        stderr_text(&out),
        "error: --python given before the `replay` subcommand: options before a subcommand are a run's, \
         and `replay` would ignore them; put --python after the subcommand \
         (`verify-coding-candidates replay --python ...`)\n"
    );
    let out = verifier_without_python()
        .args(["--evidence", "/tmp/ev", "-q", "gates"])
        .output()
        .unwrap();
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "`gates` takes no --evidence, --quiet: leave them out");
    assert!(stdout_text(&out).is_empty());
    // PYTHON in the environment is not an option given before the subcommand.
    let out = verifier_without_python()
        .env("PYTHON", "/x/bin/python")
        .arg("gates")
        .output()
        .unwrap();
    assert_exit(&out, exit::SUCCESS);
}

#[test]
fn quiet_silences_the_prerequisite_note_too() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let out = run_on_fixture(
        &repo,
        verifier_on(&repo.root, &dir).args(["--only", "stage", "-q"]),
    );
    assert_exit(&out, exit::SUCCESS);
    assert_eq!(stderr_text(&out), "");
    // Without -q: the shared `--only stage` run of the fixture.
    let run = shared_run(&[], &["--only", "stage"]);
    assert!(run.repo_unchanged, "the repository under review changed");
    assert_eq!(run.code, i32::from(exit::SUCCESS), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "--only stage: also running prerequisite gate(s) tree-clean\n"
    );
}

#[test]
fn a_profile_inside_the_repository_must_be_the_committed_file() {
    use verify_coding_candidates::profile::{BUILTIN_CODING_RUNNERS, REPO_PROFILE_NAME};
    // The repository's own profile, git-ignored and never committed: the
    // run would certify the commit with bytes that are not in it.
    let repo = fixture_repo(&[]);
    std::fs::write(
        repo.root.join(".gitignore"),
        format!("{REPO_PROFILE_NAME}\n"),
    )
    .unwrap();
    git(&repo.root, &["add", ".gitignore"]);
    git(&repo.root, &["commit", "-q", "-m", "ignore the profile"]);
    let own = repo.root.join(REPO_PROFILE_NAME);
    std::fs::write(&own, BUILTIN_CODING_RUNNERS).unwrap();
    let (_keep, dir) = evidence_dir();
    let out = run_on_fixture(&repo, &mut verifier_only(&repo.root, &dir, "tree-clean"));
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(
        &out,
        &format!(
            "profile {}: the file is inside the repository {} but is not committed at ",
            own.display(),
            repo.root.display()
        ),
    );
    assert_stderr_contains(&out, "git-ignored, untracked or only staged");
    assert_nothing_written(&dir);

    // The same file named by --profile, from a folder of the repository.
    std::fs::create_dir_all(repo.root.join("profiles")).unwrap();
    let named = repo.root.join("profiles/p.toml");
    std::fs::write(&named, BUILTIN_CODING_RUNNERS).unwrap();
    std::fs::remove_file(&own).unwrap();
    let out = run_on_fixture(
        &repo,
        verifier_only(&repo.root, &dir, "tree-clean")
            .arg("--profile")
            .arg(&named),
    );
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(
        &out,
        &format!("profile {}: the file is inside", named.display()),
    );
    assert_nothing_written(&dir);

    // Committed, then changed in the work tree: the changed bytes are refused.
    git(&repo.root, &["add", "-f", "profiles/p.toml"]);
    git(&repo.root, &["commit", "-q", "-m", "profile"]);
    std::fs::write(&named, format!("{BUILTIN_CODING_RUNNERS}\n# changed\n")).unwrap();
    let out = run_on_fixture(
        &repo,
        verifier_only(&repo.root, &dir, "tree-clean")
            .arg("--profile")
            .arg(&named),
    );
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "differ from profiles/p.toml as committed at ");
    assert_nothing_written(&dir);

    // The committed bytes are used; the evidence records path and sha256.
    std::fs::write(&named, BUILTIN_CODING_RUNNERS).unwrap();
    let out = run_on_fixture(
        &repo,
        verifier_only(&repo.root, &dir, "tree-clean")
            .arg("--profile")
            .arg(&named),
    );
    assert_exit(&out, exit::SUCCESS);
    let ev = read_evidence(&dir);
    assert_eq!(ev["profile"]["origin"], named.display().to_string());
    assert_eq!(
        ev["profile"]["sha256"],
        verify_coding_candidates::hash::sha256_bytes(BUILTIN_CODING_RUNNERS.as_bytes())
    );
}

/// `profile init` writes a profile that loads, from the fixture repository's
/// manifests, without touching the repository; it refuses to overwrite a
/// file and to read a folder that is not a git repository.
#[test]
fn profile_init_writes_a_loadable_profile_from_the_manifests_and_refuses_to_overwrite() {
    let repo = fixture_repo(&[]);
    let out = run_on_fixture(
        &repo,
        verifier_without_python()
            .current_dir(&repo.root)
            .args(["profile", "init"]),
    );
    assert_exit(&out, exit::SUCCESS);
    let text = stdout_text(&out);
    let profile = verify_coding_candidates::profile::parse(&text, "init")
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let paths: Vec<&str> = profile.candidates.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "Runner/acp-agent-runner",
            "Runner/claude-code-agent",
            "Runner/codex-agent"
        ]
    );
    assert_eq!(profile.sdk.requirement, "langbot-plugin==0.6.0b5");
    for needle in [
        "These are the built-in `coding-runners` profile's candidates",
        "# candidate = \"Runner/codex-agent\"\n# runner = \"default\"",
        "Runner/codex-agent: components: Runner default",
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }
    // --output: a new file outside the repository; an existing one is refused.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profile.toml");
    let out = run_on_fixture(
        &repo,
        verifier_without_python()
            .current_dir(&repo.root)
            .args(["profile", "init", "--output"])
            .arg(&file),
    );
    assert_exit(&out, exit::SUCCESS);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let out = run_on_fixture(
        &repo,
        verifier_without_python()
            .current_dir(&repo.root)
            .args(["profile", "init", "--output"])
            .arg(&file),
    );
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "never overwritten");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // Not a git repository.
    let plain = tempfile::tempdir().unwrap();
    let out = verifier_without_python()
        .args(["profile", "init", "--repo"])
        .arg(plain.path())
        .output()
        .unwrap();
    assert_exit(&out, exit::CANNOT_RUN);
    assert_stderr_contains(&out, "expected a git work tree");
}

/// What the index offers today for `langbot-plugin<spec>`, asked with pip
/// directly (not through the verifier's own resolver).
fn index_newest(spec: &str) -> String {
    let out = std::process::Command::new(common::python())
        .env("PIP_CONFIG_FILE", "/dev/null")
        .args([
            "-I",
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--quiet",
            "--report",
            "-",
        ])
        .arg(format!("langbot-plugin{spec}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["install"][0]["metadata"]["version"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn profile_init_groups_unpinned_and_ranged_plugins_under_what_pip_installs_today() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("plugins");
    for (folder, requirement) in [
        ("misc/unpinned", "langbot-plugin\n"),
        ("misc/ranged", "langbot-plugin>=0.7.3,<0.8\n"),
    ] {
        let name = folder.rsplit('/').next().unwrap();
        let at = root.join(folder);
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(
            at.join("manifest.yaml"),
            format!(
                "apiVersion: v1\nkind: Plugin\nmetadata:\n  author: fixture\n  name: {name}\n  version: 1.0.0\n  \
                 label:\n    en_US: {name}\nspec: {{}}\nexecution:\n  python:\n    path: main.py\n    attr: P\n"
            ),
        )
        .unwrap();
        std::fs::write(at.join("requirements.txt"), requirement).unwrap();
    }
    common::commit_fixture(&root);
    let cache = tempfile::tempdir().unwrap();
    let init = |extra: &[&str]| {
        let out = verifier_without_python()
            .env("XDG_CACHE_HOME", cache.path())
            .args(["profile", "init", "--repo"])
            .arg(&root)
            .arg("--python")
            .arg(common::python())
            .args(extra)
            .output()
            .unwrap();
        assert_exit(&out, exit::SUCCESS);
        stdout_text(&out)
    };
    let unpinned = index_newest("");
    let ranged = index_newest(">=0.7.3,<0.8");
    let text = init(&[]);
    let profile = verify_coding_candidates::profile::parse(&text, "init")
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let placed: Vec<(String, String)> = profile
        .candidates
        .iter()
        .map(|c| (c.path.clone(), profile.group_of(c)))
        .collect();
    let mut want = vec![
        (
            "misc/ranged".to_string(),
            format!("langbot-plugin=={ranged}"),
        ),
        (
            "misc/unpinned".to_string(),
            format!("langbot-plugin=={unpinned}"),
        ),
    ];
    want.sort();
    let mut placed_sorted = placed.clone();
    placed_sorted.sort();
    assert_eq!(placed_sorted, want, "{text}");
    for needle in [
        format!("# SDK {unpinned}: unpinned: pip installs {unpinned} today"),
        format!("# SDK {ranged}: range >=0.7.3,<0.8: newest accepted {ranged} (index)"),
    ] {
        assert!(text.contains(&needle), "{needle:?} not in:\n{text}");
    }
    // Every resolved version has a lock: carried, or made on demand in the cache.
    for v in [&unpinned, &ranged] {
        let carried = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("gates/profiles/sdk/langbot-plugin-{v}.lock"));
        let made = cache.path().join(format!(
            "verify-coding-candidates/sdk/locks/langbot-plugin-{v}.lock"
        ));
        assert!(carried.is_file() || made.is_file(), "no lock for {v}");
    }
    // Offline: the newest carried version each accepts, and said so.
    let text = init(&["--offline"]);
    for needle in [
        "# SDK 0.7.18: unpinned: offline (--offline): 0.7.18, the newest carried version",
        "# SDK 0.7.18: range >=0.7.3,<0.8: offline (--offline): 0.7.18, the newest carried version the range accepts",
        "requirement = \"langbot-plugin==0.7.18\"",
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }
}

#[test]
fn the_evidence_says_which_sdk_each_candidate_was_certified_under_and_why() {
    let repo = fixture_repo(&[]);
    // One candidate unpinned: pip would install the index's newest, not the
    // profile's 0.6.0b5, and the evidence says so.
    std::fs::write(
        repo.root.join("Runner/codex-agent/requirements.txt"),
        "langbot-plugin\n",
    )
    .unwrap();
    git(&repo.root, &["commit", "-q", "-am", "unpin codex-agent"]);
    let (_keep, dir) = evidence_dir();
    let out = run_on_fixture(&repo, &mut verifier_only(&repo.root, &dir, "tree-clean"));
    assert_exit(&out, exit::SUCCESS);
    let ev = read_evidence(&dir);
    let choice = |folder: &str| common::candidate(&ev, folder)["sdk_choice"].clone();
    assert_eq!(
        choice("acp-agent-runner"),
        serde_json::json!({
            "sdk": "0.6.0b5", "requirement": "langbot-plugin==0.6.0b5", "resolved": "0.6.0b5",
            "source": "pin", "reason": "pinned ==0.6.0b5"
        })
    );
    let newest = index_newest("");
    let unpinned = choice("codex-agent");
    assert_eq!(unpinned["resolved"], newest.as_str(), "{unpinned}");
    assert_eq!(unpinned["source"], "index", "{unpinned}");
    assert_eq!(
        unpinned["reason"],
        format!(
            "unpinned: pip installs {newest} today; but the profile certifies it under 0.6.0b5: this is \
             not the SDK it will run with (re-run `profile init`, or set its `sdk`)"
        )
    );
}
