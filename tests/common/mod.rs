//! Support shared by the integration tests: the genuine SDK interpreter from
//! `$PYTHON`, fixture repositories built from `fixtures/`, fresh evidence
//! directories, the verifier binary, byte-for-byte tree snapshots and
//! evidence readers.
//!
//! `tests/it/main.rs` declares it once for the test modules, and each test
//! binary of its own (`tests/<name>.rs`) declares `mod common;`; not every
//! file uses every helper.
#![allow(dead_code)]

mod shared_run;
// Not every test binary shares runs (`prerequisites.rs` does not).
#[allow(unused_imports)]
pub use shared_run::{
    hold_shared, shared_certification, shared_dependencies_run, shared_key, shared_run,
    shared_run_with_env, shared_sdk_record_run, HeldFolder, SharedRun, SIGNED_OFF_BY,
};

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// The binary under test.
pub const BIN: &str = "verify-coding-candidates";

/// Fixed author and committer date of fixture commits, so that a fixture's
/// commit id depends only on its content.
const FIXTURE_DATE: &str = "2026-01-01T00:00:00Z";

/// Variables that would point git at another repository (they are set, for
/// example, when tests run inside a git hook).
const GIT_REPO_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
];

/// Folders [`copy_tree`] never copies.
const SKIPPED_DIRS: &[&str] = &["__pycache__", ".pytest_cache"];

/// `fixtures/` of this crate.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The interpreter with the genuine, pinned `langbot-plugin` installed, from
/// `$PYTHON`.
///
/// # Panics
/// When `PYTHON` is unset or empty: tests never silently skip the SDK.
pub fn python() -> PathBuf {
    match std::env::var_os("PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)"),
    }
}

/// The SDK 0.7.18 interpreter (the newest carried lock), provisioned or
/// reused, hash-locked, by the verifier's own `sdk --print-path` in the
/// user's cache: for the tests of what only SDK 0.7 has (the shared runtime,
/// `certified-plugin-envelope-v2`).
///
/// # Panics
/// When it cannot be provisioned (the output is in the message).
pub fn python_0718() -> PathBuf {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let profile = dir.path().join("sdk-0718.toml");
    std::fs::write(
        &profile,
        "name = \"sdk-0718\"\n[sdk]\nrequirement = \"langbot-plugin==0.7.18\"\n[[candidate]]\npath = \"x\"\n",
    )
    .expect("write the profile");
    sdk_python(&profile)
}

/// The SDK interpreter of the profile at `profile` (its `[sdk]`), provisioned
/// or reused, hash-locked, in the user's cache by the verifier's own `sdk
/// --print-path --profile PROFILE`.
///
/// # Panics
/// When it cannot be provisioned (the verifier's stderr is in the message).
pub fn sdk_python(profile: &Path) -> PathBuf {
    let out = verifier_without_python()
        .args(["sdk", "--print-path", "--profile"])
        .arg(profile)
        .output()
        .expect("run the verifier");
    assert!(
        out.status.success(),
        "sdk --print-path: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// `<venv>/lib/pythonX.Y/site-packages` of a POSIX virtual environment (the
/// one `pythonX.Y` folder under `lib`).
///
/// # Panics
/// When `lib` cannot be read or holds no `python*` folder.
pub fn site_packages(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e}", lib.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python"))
        })
        .unwrap_or_else(|| panic!("{}: expected a pythonX.Y folder", lib.display()))
        .join("site-packages")
}

/// The virtual environment holding [`python`] (`$PYTHON/../..`), without
/// resolving symlinks (a venv's `bin/python` links to the base interpreter).
pub fn sdk_venv() -> PathBuf {
    let py = python();
    py.parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("PYTHON={}: expected <venv>/bin/python", py.display()))
        .to_path_buf()
}

/// A fixture repository: a git repository with one commit on `main`.
pub struct FixtureRepo {
    /// Owns the temporary directory; the repository is removed on drop.
    pub dir: TempDir,
    /// The repository's top level (absolute).
    pub root: PathBuf,
}

/// Copies `fixtures/candidate-repo` into a fresh temporary directory, copies
/// each overlay `fixtures/hostile/<name>` over it (same relative paths), then
/// makes it a git repository with one commit (`git init -q -b main`, local
/// identity, `git add -A`, `git commit -q -m fixture`, fixed dates).
///
/// # Panics
/// On a missing overlay or any failing copy or git command.
pub fn fixture_repo(overlays: &[&str]) -> FixtureRepo {
    let dir = tempfile::Builder::new()
        .prefix("vcc-repo-")
        .tempdir()
        .expect("create temp dir");
    let root = dir.path().join("langbot-plugins");
    fixture_repo_at(&root, overlays);
    FixtureRepo { dir, root }
}

/// [`fixture_repo`]'s repository made at `root` (which must not exist yet),
/// kept by the caller.
pub fn fixture_repo_at(root: &Path, overlays: &[&str]) {
    copy_tree(&fixtures_dir().join("candidate-repo"), root);
    for name in overlays {
        let overlay = fixtures_dir().join("hostile").join(name);
        assert!(
            overlay.is_dir(),
            "overlay {name:?}: expected directory {}",
            overlay.display()
        );
        copy_tree(&overlay, root);
    }
    commit_fixture(root);
}

/// A git repository of copies of fixture folders: each `(from, to)` copies
/// `fixtures/<from>` to `<root>/<to>` (`to` empty: the repository root), in a
/// fresh temporary directory, then one commit ([`commit_fixture`]). `root`
/// is the repository folder's name (`plugins`, `component-plugins`).
///
/// # Panics
/// On any failing copy or git command.
pub fn repo_of(root: &str, copies: &[(&str, &str)]) -> FixtureRepo {
    let repo = uncommitted_repo_of(root, copies);
    commit_fixture(&repo.root);
    repo
}

/// [`repo_of`] without the commit (nor `git init`): for a test that adds
/// files of its own before committing.
pub fn uncommitted_repo_of(root: &str, copies: &[(&str, &str)]) -> FixtureRepo {
    let dir = tempfile::Builder::new()
        .prefix("vcc-repo-")
        .tempdir()
        .expect("create temp dir");
    let root = dir.path().join(root);
    for (from, to) in copies {
        copy_tree(&fixtures_dir().join(from), &root.join(to));
    }
    FixtureRepo { dir, root }
}

/// `git add -A` and `git commit -q -m MESSAGE` in the fixture repository
/// (a second commit on top of the fixture's, with the fixture's identity).
pub fn commit_all(repo: &FixtureRepo, message: &str) {
    git(&repo.root, &["add", "-A"]);
    git(&repo.root, &["commit", "-q", "-m", message]);
}

/// Makes `root` a git repository (branch `main`, the fixture author, no
/// signing) without committing anything.
pub fn init_fixture(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.name", "Fixture Author"]);
    git(root, &["config", "user.email", "fixture@example.invalid"]);
    git(root, &["config", "commit.gpgsign", "false"]);
}

/// Makes `root` a git repository ([`init_fixture`]) holding everything in
/// it as one commit, "fixture".
pub fn commit_fixture(root: &Path) {
    init_fixture(root);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "fixture"]);
}

/// Runs `git <args>` in `dir` with no global or system configuration and
/// fixed dates; panics with git's stderr on failure. Returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let mut cmd = std::process::Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", FIXTURE_DATE)
        .env("GIT_COMMITTER_DATE", FIXTURE_DATE)
        .env("LC_ALL", "C");
    for var in GIT_REPO_VARS {
        cmd.env_remove(var);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: cannot run git: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}\n{}",
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("git output is UTF-8")
}

/// Copies every file and directory under `src` into `dst` (created as
/// needed), overwriting files. `__pycache__` and `.pytest_cache` folders are
/// skipped: they are never part of a fixture (the fixture's `.gitignore`
/// files ignore them), but appear when someone runs Python in `fixtures/`.
///
/// # Panics
/// On I/O errors, and on symlinks (fixtures hold none; a test that needs one
/// creates it explicitly).
pub fn copy_tree(src: &Path, dst: &Path) {
    let walker = walkdir::WalkDir::new(src)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !SKIPPED_DIRS.iter().any(|d| e.file_name() == *d));
    for entry in walker {
        let entry = entry.unwrap_or_else(|e| panic!("walk {}: {e}", src.display()));
        let rel = entry
            .path()
            .strip_prefix(src)
            .expect("walked path is under src");
        let target = dst.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target)
                .unwrap_or_else(|e| panic!("mkdir {}: {e}", target.display()));
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).unwrap_or_else(|e| {
                panic!(
                    "copy {} -> {}: {e}",
                    entry.path().display(),
                    target.display()
                )
            });
        } else {
            panic!(
                "{}: fixtures hold only files and directories",
                entry.path().display()
            );
        }
    }
}

/// A fresh evidence directory: an absolute path that does not exist yet,
/// inside a temporary directory the caller keeps alive.
pub fn evidence_dir() -> (TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("vcc-evidence-")
        .tempdir()
        .expect("create temp dir");
    let path = std::path::absolute(dir.path().join("evidence")).expect("absolute evidence path");
    (dir, path)
}

/// The verifier binary with `PYTHON` set to [`python`].
pub fn verifier() -> Command {
    let mut cmd = Command::cargo_bin(BIN).expect("the verifier binary is built");
    cmd.env("PYTHON", python());
    cmd
}

/// The verifier binary without `PYTHON` in its environment, for commands
/// that need no interpreter or that test its absence.
pub fn verifier_without_python() -> Command {
    let mut cmd = Command::cargo_bin(BIN).expect("the verifier binary is built");
    cmd.env_remove("PYTHON");
    cmd
}

/// Every entry under `root`, `.git/` included, keyed by `/`-separated
/// relative path: files map to their sha256 hex, directories to `"dir"`,
/// symlinks to `"symlink -> <target>"`. Two equal snapshots mean the tree is
/// byte-for-byte unchanged (modes and timestamps aside).
pub fn tree_snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut snapshot = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name().min_depth(1) {
        let entry = entry.unwrap_or_else(|e| panic!("walk {}: {e}", root.display()));
        let rel = entry
            .path()
            .strip_prefix(root)
            .expect("under root")
            .to_string_lossy()
            .replace('\\', "/");
        let kind = entry.file_type();
        let value = if kind.is_dir() {
            "dir".to_string()
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).expect("read symlink");
            format!("symlink -> {}", target.display())
        } else {
            verify_coding_candidates::hash::sha256_file(entry.path())
                .unwrap_or_else(|e| panic!("hash {}: {e}", entry.path().display()))
                .hex()
        };
        snapshot.insert(rel, value);
    }
    snapshot
}

/// Asserts two snapshots are equal, listing what was added, removed or
/// changed.
pub fn assert_unchanged(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
    what: &str,
) {
    if before == after {
        return;
    }
    let mut diff = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => diff.push(format!("removed {k}")),
            Some(w) if w != v => diff.push(format!("changed {k}")),
            _ => {}
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        diff.push(format!("added {k}"));
    }
    panic!("{what} was modified:\n  {}", diff.join("\n  "));
}

/// `dir/evidence.json`, parsed.
///
/// # Panics
/// When the file is missing or not JSON.
pub fn read_evidence(dir: &Path) -> Value {
    let path = dir.join("evidence.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

/// The gate record `id` of an evidence document.
///
/// # Panics
/// When there is no such gate (the message lists the gates present).
pub fn gate<'a>(evidence: &'a Value, id: &str) -> &'a Value {
    let gates = evidence["gates"]
        .as_array()
        .expect("evidence.gates is an array");
    gates.iter().find(|g| g["id"] == id).unwrap_or_else(|| {
        let ids: Vec<&str> = gates.iter().filter_map(|g| g["id"].as_str()).collect();
        panic!("no gate {id:?} in evidence; gates: {ids:?}")
    })
}

/// The result word of gate `id` (`pass`, `fail`, `skipped`, `blocked`).
pub fn gate_result<'a>(evidence: &'a Value, id: &str) -> &'a str {
    gate(evidence, id)["result"]
        .as_str()
        .expect("gate.result is a string")
}

/// The checks of gate `id`.
pub fn checks<'a>(evidence: &'a Value, id: &str) -> &'a [Value] {
    gate(evidence, id)["checks"]
        .as_array()
        .expect("gate.checks is an array")
}

/// The check `name` of gate `id` for `candidate` (`None`: a check without
/// candidate).
///
/// # Panics
/// When there is no such check (the message lists the gate's checks).
pub fn check<'a>(evidence: &'a Value, id: &str, name: &str, candidate: Option<&str>) -> &'a Value {
    let all = checks(evidence, id);
    all.iter()
        .find(|c| c["name"] == name && c["candidate"].as_str() == candidate)
        .unwrap_or_else(|| {
            let have: Vec<String> = all
                .iter()
                .map(|c| {
                    format!(
                        "{}/{}",
                        c["name"].as_str().unwrap_or("?"),
                        c["candidate"].as_str().unwrap_or("-")
                    )
                })
                .collect();
            panic!("gate {id}: no check {name:?} for {candidate:?}; checks: {have:?}")
        })
}

/// The checks of gate `id` whose result is `fail`.
pub fn failed_checks<'a>(evidence: &'a Value, id: &str) -> Vec<&'a Value> {
    checks(evidence, id)
        .iter()
        .filter(|c| c["result"] == "fail")
        .collect()
}

/// A copy of a virtual environment made by [`copy_venv`], held for one
/// test: its folder is locked (`flock`) until this is dropped.
pub struct VenvCopy {
    path: PathBuf,
    _lock: std::fs::File,
}

impl VenvCopy {
    /// The copy's root: its interpreter is `<path>/bin/python`.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// How many venv copies may be in use at once (the test threads, and one).
const VENV_SLOTS: usize = 4;

/// Copies the virtual environment at `src_venv` (`cp -a SRC/. DST`), for
/// tests that tamper with an SDK install, into one of [`VENV_SLOTS`] fixed
/// folders of this test run (`<shared runs>/venv-slot-N`, emptied first),
/// locked for the caller until the returned [`VenvCopy`] is dropped. A
/// fixed folder keeps the verifier's bytecode cache warm across the tests
/// that take it (its pairs are keyed by path: a fresh folder made every
/// test compile the whole SDK again, about 7 s of CPU each); a file a test
/// changed has other digests and is compiled and compared as before.
///
/// # Panics
/// When the copy fails.
pub fn copy_venv(src_venv: &Path) -> VenvCopy {
    use rustix::fs::{flock, FlockOperation};
    let root = shared_run::runs_root();
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let open = |n: usize| {
        let path = root.join(format!("venv-slot-{n}.lock"));
        std::fs::File::create(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let free = (0..VENV_SLOTS).find_map(|n| {
        let lock = open(n);
        flock(&lock, FlockOperation::NonBlockingLockExclusive)
            .ok()
            .map(|()| (n, lock))
    });
    let (n, lock) = free.unwrap_or_else(|| {
        let n = std::process::id() as usize % VENV_SLOTS;
        let lock = open(n);
        flock(&lock, FlockOperation::LockExclusive).expect("flock a venv slot");
        (n, lock)
    });
    let dir = root.join(format!("venv-slot-{n}"));
    if dir.exists() {
        make_writable(&dir);
        std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let out = std::process::Command::new("cp")
        .arg("-a")
        .arg(src_venv.join("."))
        .arg(&dir)
        .output()
        .expect("run cp");
    assert!(
        out.status.success(),
        "cp -a {} {}: {}",
        src_venv.display(),
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    VenvCopy {
        path: dir,
        _lock: lock,
    }
}

/// The interpreter of a venv copied by [`copy_venv`].
pub fn venv_python(venv: &VenvCopy) -> PathBuf {
    venv.path().join("bin").join("python")
}

/// Stdout of a finished command as text.
pub fn stdout_text(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Stderr of a finished command as text.
pub fn stderr_text(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The exit code of a finished verifier.
///
/// # Panics
/// When the process was killed by a signal.
pub fn exit_code(output: &std::process::Output) -> i32 {
    output
        .status
        .code()
        .expect("the verifier exited (not killed by a signal)")
}

/// Stdout followed by stderr of a finished command, as text (for assertion
/// messages and for searching either stream).
pub fn both(output: &std::process::Output) -> String {
    format!("{}{}", stdout_text(output), stderr_text(output))
}

/// The verifier (see [`verifier`]) with `--repo REPO --evidence EVIDENCE`.
pub fn verifier_on(repo: &Path, evidence: &Path) -> Command {
    let mut cmd = verifier();
    cmd.arg("--repo").arg(repo).arg("--evidence").arg(evidence);
    cmd
}

/// The verifier with `--repo REPO --evidence EVIDENCE --only ONLY`.
pub fn verifier_only(repo: &Path, evidence: &Path, only: &str) -> Command {
    let mut cmd = verifier_on(repo, evidence);
    cmd.args(["--only", only]);
    cmd
}

/// Runs the verifier in `repo` (its working directory) with `--evidence
/// <fresh dir> --python PYTHON --only ONLY` and `extra`. Returns the output,
/// the guard that keeps the evidence directory, and its path; panics, with
/// the output, when no evidence was written.
pub fn run_only(
    repo: &Path,
    python: &Path,
    only: &str,
    extra: &[&str],
) -> (std::process::Output, TempDir, PathBuf) {
    let (keep, dir) = evidence_dir();
    let out = verifier()
        .current_dir(repo)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python)
        .args(["--only", only])
        .args(extra)
        .output()
        .expect("run the verifier");
    expect_evidence(&out, &dir);
    (out, keep, dir)
}

/// Writes `text` as `FOLDER/requirements.txt` of `repo` and commits it.
pub fn commit_requirements(repo: &FixtureRepo, folder: &str, text: &str) {
    std::fs::write(repo.root.join(folder).join("requirements.txt"), text)
        .expect("write requirements.txt");
    git(&repo.root, &["commit", "-q", "-a", "-m", "requirements"]);
}

/// What a verifier run on a fixture repository left: its exit code, its
/// evidence, the evidence directory, and the guards that keep the
/// repository and the directory alive.
pub type FixtureRun = (i32, Value, PathBuf, (FixtureRepo, TempDir));

/// The fixture repository with `Runner/codex-agent/requirements.txt`
/// replaced by `requirements` and committed, certified by [`run_only`] with
/// `python`, `--only ONLY` and `extra`; the evidence directory is made
/// writable again so that the guard can remove it.
pub fn run_with_codex_requirements(
    requirements: &str,
    python: &Path,
    only: &str,
    extra: &[&str],
) -> FixtureRun {
    let repo = fixture_repo(&[]);
    commit_requirements(&repo, "Runner/codex-agent", requirements);
    let (out, keep, dir) = run_only(&repo.root, python, only, extra);
    let evidence = read_evidence(&dir);
    make_writable(keep.path());
    (exit_code(&out), evidence, dir, (repo, keep))
}

/// The output of a verifier run as text (`stdout:` then `stderr:`), once
/// `dir` holds its evidence; panics with that text when it does not.
pub fn expect_evidence(out: &std::process::Output, dir: &Path) -> String {
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        stdout_text(out),
        stderr_text(out)
    );
    assert!(
        dir.join("evidence.json").is_file(),
        "no evidence written; {text}"
    );
    text
}

/// Writes `text` as `profile.toml` in `keep` (the temporary folder that holds
/// a test's evidence directory: outside the repository, so never part of the
/// commit) and returns its path.
///
/// # Panics
/// When the file cannot be written.
pub fn profile_beside(keep: &TempDir, text: &str) -> PathBuf {
    let path = keep.path().join("profile.toml");
    std::fs::write(&path, text).expect("write the profile");
    path
}

/// Runs the verifier in `repo` (its working directory) with `--evidence
/// <fresh dir> --only ONLY --profile <profile_text, written beside the
/// evidence directory, outside the repository>` and `extra`. Returns the
/// output, the evidence directory and the guard that keeps it; panics, with
/// the output, when no evidence was written.
pub fn run_only_with_profile(
    repo: &Path,
    only: &str,
    profile_text: &str,
    extra: &[&str],
) -> (std::process::Output, TempDir, PathBuf) {
    let (keep, dir) = evidence_dir();
    let profile = profile_beside(&keep, profile_text);
    let out = verifier()
        .current_dir(repo)
        .arg("--evidence")
        .arg(&dir)
        .args(extra)
        .args(["--only", only, "--profile"])
        .arg(&profile)
        .output()
        .expect("run the verifier");
    expect_evidence(&out, &dir);
    (out, keep, dir)
}

/// Runs `verifier merge --into INTO PARTS...` and returns its output.
pub fn merge_output(into: &Path, parts: &[&Path]) -> std::process::Output {
    verifier()
        .arg("merge")
        .arg("--into")
        .arg(into)
        .args(parts)
        .output()
        .expect("run the verifier")
}

/// Runs `verifier replay --evidence EVIDENCE` plus `extra` and returns its
/// output.
pub fn replay_output(evidence: &Path, extra: &[&str]) -> std::process::Output {
    verifier()
        .arg("replay")
        .arg("--evidence")
        .arg(evidence)
        .args(extra)
        .output()
        .expect("run verifier replay")
}

/// Rewrites `dir/SHA256SUMS` so it matches the directory again, as a
/// tamperer covering their tracks would.
pub fn reseal_sums(dir: &Path) {
    let text = verify_coding_candidates::evidence::sha256sums(dir).unwrap();
    std::fs::write(dir.join("SHA256SUMS"), text).unwrap();
}

/// Restores owner read/write/execute permission on everything under `root`
/// (symlinks left alone): the SDK publishes artifacts and environments
/// read-only, which would stop a non-root user's temporary directory
/// cleanup. Errors are ignored.
pub fn make_writable(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for entry in walkdir::WalkDir::new(root).into_iter().flatten() {
        if entry.file_type().is_symlink() {
            continue;
        }
        if let Ok(meta) = entry.metadata() {
            let mut perms = meta.permissions();
            perms.set_mode(perms.mode() | 0o700);
            let _ = std::fs::set_permissions(entry.path(), perms);
        }
    }
}

/// Every live (non-zombie) process whose working directory lies under `dir`
/// or whose environment contains `dir`'s path, as `"<pid>: <command line>"`.
pub fn processes_under(dir: &Path) -> Vec<String> {
    let needle = dir.as_os_str().as_encoded_bytes().to_vec();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        {
            continue;
        }
        let by_cwd = std::fs::read_link(entry.path().join("cwd")).is_ok_and(|c| c.starts_with(dir));
        let by_env = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|e| e.windows(needle.len()).any(|w| w == needle.as_slice()));
        if by_cwd || by_env {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(format!(
                "{pid}: {}",
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    found
}

/// The `detail` sentence of a check record.
pub fn detail(check: &Value) -> &str {
    check["detail"].as_str().expect("check.detail is a string")
}

/// The candidate record of `folder` in an evidence document.
///
/// # Panics
/// When there is no such candidate.
pub fn candidate<'a>(evidence: &'a Value, folder: &str) -> &'a Value {
    evidence["candidates"]
        .as_array()
        .expect("evidence.candidates is an array")
        .iter()
        .find(|c| c["folder"] == folder)
        .unwrap_or_else(|| panic!("no candidate {folder} in evidence"))
}

/// `junit.xml` of `dir` validated against `tests/data/junit.xsd` (the JUnit
/// shape Jenkins and GitLab accept) and read back by junitparser, as
/// `tests/data/read_junit.py` prints it: `{"valid": true, "suites": [{name,
/// tests, failures, errors, skipped, cases: [{name, classname, outcome,
/// text}]}]}`. Both Python packages are in the test venv (`cargo xtask sdk`).
///
/// # Panics
/// When the file does not validate or cannot be read.
pub fn read_junit(dir: &Path) -> Value {
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data");
    let out = std::process::Command::new(python())
        .arg("-I")
        .arg(data.join("read_junit.py"))
        .arg(dir.join("junit.xml"))
        .arg(data.join("junit.xsd"))
        .output()
        .expect("run read_junit.py");
    assert!(
        out.status.success(),
        "junit.xml does not validate or read back: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("read_junit.py prints JSON")
}

/// The testsuite `name` of a [`read_junit`] document.
pub fn junit_suite<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["suites"]
        .as_array()
        .expect("suites")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no testsuite {name}: {doc}"))
}

/// The built-in profile with `[suites] paths` replaced by `paths` (each
/// relative to the repository root).
pub fn profile_with_suite_paths(paths: &[&str]) -> String {
    let (head, suites) = verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS
        .split_once("\n[suites]\n")
        .expect("the built-in profile has a [suites] table");
    let start = suites.find("paths = [").expect("[suites] has paths");
    let end = start + suites[start..].find(']').expect("paths is closed") + 1;
    let list: Vec<String> = paths.iter().map(|p| format!("{p:?}")).collect();
    format!(
        "{head}\n[suites]\n{}paths = [{}]{}",
        &suites[..start],
        list.join(", "),
        &suites[end..]
    )
}

/// Every live (non-zombie) process of a run: its working directory lies
/// under one of `dirs`, its command line or environment contains one of their
/// paths, or its command line contains one of `markers`. Each as
/// `(pid, "<command line>")`, this test process excluded.
pub fn run_processes(dirs: &[&Path], markers: &[&str]) -> Vec<(i32, String)> {
    let me = std::process::id();
    let needles: Vec<Vec<u8>> = dirs
        .iter()
        .map(|d| d.as_os_str().as_encoded_bytes().to_vec())
        .chain(markers.iter().map(|m| m.as_bytes().to_vec()))
        .collect();
    let dir_needles = &needles[..dirs.len()];
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
        {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let by_cwd = std::fs::read_link(entry.path().join("cwd"))
            .is_ok_and(|c| dirs.iter().any(|d| c.starts_with(d)));
        let by_cmdline = needles.iter().any(|n| contains(&cmdline, n));
        let by_env = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|e| dir_needles.iter().any(|n| contains(&e, n)));
        if by_cwd || by_cmdline || by_env {
            found.push((
                pid as i32,
                String::from_utf8_lossy(&cmdline).replace('\0', " "),
            ));
        }
    }
    found
}

/// Polls [`run_processes`] every 100 ms until none is left or `within` has
/// passed; returns those still alive then.
pub fn wait_no_run_processes(
    dirs: &[&Path],
    markers: &[&str],
    within: std::time::Duration,
) -> Vec<(i32, String)> {
    let end = std::time::Instant::now() + within;
    loop {
        let left = run_processes(dirs, markers);
        if left.is_empty() || std::time::Instant::now() >= end {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// On drop, SIGKILLs every process [`run_processes`] finds for its dirs and
/// markers (a few rounds, for processes started meanwhile), so a failing
/// test leaves nothing of its run behind on the machine.
pub struct KillRunOnDrop {
    pub dirs: Vec<PathBuf>,
    pub markers: Vec<&'static str>,
}

impl Drop for KillRunOnDrop {
    fn drop(&mut self) {
        let dirs: Vec<&Path> = self.dirs.iter().map(PathBuf::as_path).collect();
        for _ in 0..5 {
            let found = run_processes(&dirs, &self.markers);
            if found.is_empty() {
                return;
            }
            for (pid, _) in found {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// The install hint of every test that needs bubblewrap.
pub const BWRAP_INSTALL: &str =
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; \
     Fedora: `sudo dnf install bubblewrap`; Arch: `sudo pacman -S bubblewrap`) or name one with \
     VCC_BWRAP=/path/to/bwrap";

/// The `bwrap` the verifier would use ([`isolation::bwrap::locate`]:
/// `VCC_BWRAP`, else PATH), checked to start a sandbox (`bwrap --ro-bind / /
/// true`: unprivileged user namespaces allowed).
///
/// # Errors
/// A sentence naming bubblewrap as the missing prerequisite of `test`, what
/// was found, and the install command ([`BWRAP_INSTALL`]).
///
/// [`isolation::bwrap::locate`]: verify_coding_candidates::isolation::bwrap::locate
pub fn bwrap_prerequisite(test: &str) -> Result<PathBuf, String> {
    let missing = |found: String| {
        format!(
            "{test} needs bubblewrap (`bwrap`), the sandbox the verifier runs workers and suites in; \
             found: {found}. To run it, {BWRAP_INSTALL}"
        )
    };
    let bwrap = verify_coding_candidates::isolation::bwrap::locate().map_err(missing)?;
    let out = std::process::Command::new(&bwrap)
        .args(["--ro-bind", "/", "/", "true"])
        .output()
        .map_err(|e| missing(format!("{} cannot start: {e}", bwrap.display())))?;
    if !out.status.success() {
        return Err(missing(format!(
            "{} cannot create a sandbox ({}: {}; unprivileged user namespaces may be disabled, \
             e.g. sysctl kernel.apparmor_restrict_unprivileged_userns=1)",
            bwrap.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(bwrap)
}

/// Panics with [`bwrap_prerequisite`]'s sentence when bubblewrap is missing
/// or cannot sandbox: a test asserting bwrap's confinement then fails naming
/// its prerequisite, never with a bare assertion on the evidence.
pub fn require_bwrap(test: &str) {
    if let Err(e) = bwrap_prerequisite(test) {
        panic!("{e}");
    }
}
