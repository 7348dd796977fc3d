//! One verifier run of a fixture repository, shared by every test of one
//! test run that asks for the same fixture, arguments and environment and
//! only reads what the run left: its output, its evidence directory, the
//! repository.
//!
//! cargo-nextest runs each test in a process of its own, so the run is
//! shared on disk, not in memory: under a folder of the test run (
//! `$VCC_SHARED_RUNS`, which `cargo xtask test` makes and removes; else
//! `<temp>/vcc-shared-runs-<$NEXTEST_RUN_ID or this process's id>`), one
//! folder per fixture, arguments and environment, made under an exclusive
//! `flock` by the first test that asks and read by the others once it is
//! complete. A run of an earlier test run is never read: the folder is
//! keyed by the run.
//!
//! A test that changes the evidence (tampering, merging into it) copies it
//! first ([`SharedRun::copy_evidence`]); nothing here may be written to.
//!
//! [`hold_shared`] is the lock alone, for runs made another way (the CI
//! recipe tests' certification jobs, `tests/it/ci_recipes/shared.rs`).

use super::{evidence_dir, fixture_repo_at, processes_under, tree_snapshot, verifier};
use rustix::fs::{flock, FlockOperation};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// What a shared run left, as the test that made it saw it.
pub struct SharedRun {
    /// The fixture repository the run certified (`.../langbot-plugins`).
    pub repo: PathBuf,
    /// The evidence directory the run wrote.
    pub evidence: PathBuf,
    /// The verifier's exit code.
    pub code: i32,
    /// The verifier's standard output.
    pub stdout: String,
    /// The verifier's standard error.
    pub stderr: String,
    /// Whether the repository was byte-for-byte the same after the run as
    /// before it (`tree_snapshot`, `.git/` included).
    pub repo_unchanged: bool,
    /// Every process found, right after the run, whose working directory or
    /// environment pointed into the evidence directory (`processes_under`).
    pub leftovers: Vec<String>,
}

impl SharedRun {
    /// The run's output as text: `stdout:` then `stderr:`, as
    /// [`super::expect_evidence`] shows it.
    pub fn text(&self) -> String {
        format!("stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
    }

    /// `evidence.json` of the run, parsed.
    ///
    /// # Panics
    /// With the run's output, when it wrote no evidence.
    pub fn read_evidence(&self) -> serde_json::Value {
        assert!(
            self.evidence.join("evidence.json").is_file(),
            "no evidence written; {}",
            self.text()
        );
        super::read_evidence(&self.evidence)
    }

    /// A private copy of the evidence directory (`cp -a`), for a test that
    /// changes it. Returns the guard and the copy's path.
    ///
    /// # Panics
    /// When the copy fails.
    pub fn copy_evidence(&self) -> (TempDir, PathBuf) {
        let (keep, dir) = evidence_dir();
        let out = std::process::Command::new("cp")
            .arg("-a")
            .arg(&self.evidence)
            .arg(&dir)
            .output()
            .expect("run cp");
        assert!(
            out.status.success(),
            "cp -a {} {}: {}",
            self.evidence.display(),
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        (keep, dir)
    }
}

/// The run of the verifier (`PYTHON` set, [`verifier`]) with `--repo <the
/// fixture repository with overlays> --evidence <a fresh folder>` and
/// `args`, made once per test run and shared: every test asking for the
/// same `overlays` and `args` gets the same run. [`shared_run_with_env`]
/// with no variable of its own.
///
/// # Panics
/// As [`shared_run_with_env`].
pub fn shared_run(overlays: &[&str], args: &[&str]) -> SharedRun {
    shared_run_with_env(overlays, args, &[])
}

/// [`shared_run`] with the variables `env` set for the verifier too (beside
/// `PYTHON`): they are part of the run's key, so a run with other variables
/// is another run.
///
/// # Panics
/// When the shared folder cannot be made, locked or read, or the verifier
/// cannot start (a failing run is shared like a passing one: its exit code
/// is in [`SharedRun::code`]).
pub fn shared_run_with_env(overlays: &[&str], args: &[&str], env: &[(&str, &str)]) -> SharedRun {
    let held = hold_shared(&run_key(overlays, args, env));
    if !held.dir.join("done").is_file() {
        make(&held.dir, overlays, args, env);
    }
    read(&held.dir)
}

/// A folder of this test run's shared runs, held by one test process at a
/// time: the lock is released when this is dropped (or the process ends).
pub struct HeldFolder {
    /// `runs_root()/<name>` (not made here: its maker makes it).
    pub dir: PathBuf,
    _lock: std::fs::File,
}

/// Waits until no other test holds the shared folder `name`, then holds it
/// (an exclusive `flock` of `runs_root()/<name>.lock`).
///
/// # Panics
/// When the lock file cannot be made or locked.
pub fn hold_shared(name: &str) -> HeldFolder {
    let root = runs_root();
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let lock_path = root.join(format!("{name}.lock"));
    let lock = std::fs::File::create(&lock_path)
        .unwrap_or_else(|e| panic!("{}: {e}", lock_path.display()));
    flock(&lock, FlockOperation::LockExclusive)
        .unwrap_or_else(|e| panic!("flock {}: {e}", lock_path.display()));
    HeldFolder {
        dir: root.join(name),
        _lock: lock,
    }
}

/// Who signs off [`shared_certification`] (`--sign-off-by`).
pub const SIGNED_OFF_BY: &str = "Release Reviewer";

/// [`shared_run_with_env`] of the unmodified fixture with every gate (no
/// `--only`), `--sign-off-by` [`SIGNED_OFF_BY`] and the verifier's bytecode
/// cache off (`VCC_BYTECODE_CACHE=off`: its sentences do not depend on what
/// an earlier run left in the cache): the fixture's one full certification,
/// read by the tests of what a full run writes (`end_to_end`,
/// `evidence_snapshot`).
pub fn shared_certification() -> SharedRun {
    shared_run_with_env(
        &[],
        &["--sign-off-by", SIGNED_OFF_BY],
        &[("VCC_BYTECODE_CACHE", "off")],
    )
}

/// [`shared_run`] of the unmodified fixture with `--python $PYTHON --only
/// dependencies` (admission and dependencies over the archives): the run
/// the admission and runtime tests read.
pub fn shared_dependencies_run() -> SharedRun {
    shared_only_run("dependencies")
}

/// [`shared_run`] of the unmodified fixture with `--python $PYTHON --only
/// sdk-record` (tree-clean, stage and sdk-record over the genuine SDK
/// interpreter): the run the tests of the genuine interpreter read.
pub fn shared_sdk_record_run() -> SharedRun {
    shared_only_run("sdk-record")
}

/// [`shared_run`] of the unmodified fixture with `--python $PYTHON --only
/// ONLY`.
fn shared_only_run(only: &str) -> SharedRun {
    let python = super::python();
    let python = python.to_str().expect("a UTF-8 interpreter path");
    shared_run(&[], &["--python", python, "--only", only])
}

/// The folder of this test run's shared runs (and venv copies).
pub(crate) fn runs_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("VCC_SHARED_RUNS").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let run = std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| std::process::id().to_string());
    std::env::temp_dir().join(format!("vcc-shared-runs-{run}"))
}

/// A file name for `overlays`, `args` and `env`: the SHA-256 of the three,
/// 16 hex digits.
fn run_key(overlays: &[&str], args: &[&str], env: &[(&str, &str)]) -> String {
    let env = env.iter().flat_map(|(k, v)| [*k, *v]);
    let parts: Vec<&str> = overlays
        .iter()
        .copied()
        .chain(["\0args"])
        .chain(args.iter().copied())
        .chain(["\0env"])
        .chain(env)
        .collect();
    shared_key(&parts)
}

/// The SHA-256 of `parts` (each ended by a NUL byte), 16 hex digits: a
/// folder name for [`hold_shared`].
pub fn shared_key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Makes the run in `dir` (anything an interrupted maker left is removed
/// first) and marks it complete with `dir/done`.
fn make(dir: &Path, overlays: &[&str], args: &[&str], env: &[(&str, &str)]) {
    if dir.exists() {
        super::make_writable(dir);
        std::fs::remove_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    let repo = dir.join("repo").join("langbot-plugins");
    fixture_repo_at(&repo, overlays);
    let evidence = dir.join("evidence");
    let before = tree_snapshot(&repo);
    let out = verifier()
        .envs(env.iter().copied())
        .arg("--repo")
        .arg(&repo)
        .arg("--evidence")
        .arg(&evidence)
        .args(args)
        .output()
        .expect("run the verifier");
    let leftovers = processes_under(&evidence);
    let unchanged = tree_snapshot(&repo) == before;
    let code = out.status.code().map_or("signal".into(), |c| c.to_string());
    write(dir, "code", &code);
    write(dir, "stdout", &String::from_utf8_lossy(&out.stdout));
    write(dir, "stderr", &String::from_utf8_lossy(&out.stderr));
    write(dir, "repo_unchanged", if unchanged { "yes" } else { "no" });
    write(dir, "leftovers", &leftovers.join("\n"));
    write(dir, "done", "");
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn read(dir: &Path) -> SharedRun {
    let text = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let code = text("code");
    SharedRun {
        repo: dir.join("repo").join("langbot-plugins"),
        evidence: dir.join("evidence"),
        code: code
            .parse()
            .unwrap_or_else(|_| panic!("the shared verifier run ended by a {code}")),
        stdout: text("stdout"),
        stderr: text("stderr"),
        repo_unchanged: text("repo_unchanged") == "yes",
        leftovers: text("leftovers").lines().map(String::from).collect(),
    }
}
