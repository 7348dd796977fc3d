//! The certification runs of the CI recipe tests, made once per test run.
//!
//! The GitHub and GitLab recipes of a pair (`github-actions.yml` and
//! `gitlab-ci.yml`; the two `-repository` ones) run the same verifier jobs
//! on the same fixture: share 1, share 2 and the suites, each a whole
//! certification, then a merge that costs next to nothing. Every test still
//! walks its own recipe: its setup lines, caches, artifacts, merge and
//! replays are its own; only a certification command whose [`invocation`]
//! another test of this test run already ran is not run again: its exit
//! status and output are that run's, and its evidence is copied (`cp -a`)
//! where the command would have written it ([`SharedJob::certify`]).
//!
//! An invocation is what the verifier is given: its arguments as bash
//! expands the recipe's command, and the job's environment, with the job's
//! own folders (checkout, evidence folder, cache) written as placeholders,
//! plus the fixture's commit. Two commands share a run only when all of that
//! is equal, so a recipe whose command differs in any argument, variable or
//! relation between its folders (evidence inside the checkout, say) gets a
//! run of its own. Left out, because the verifier does not read them: the
//! working directory (the recipes resolve `--repo` against it, which the
//! invocation does; every process the verifier starts gets a directory of
//! its own, `process::spawn`, and the interpreters it starts outside that
//! run with `-I`), and the CI's own location variables ([`SHELL_ONLY`]:
//! they reach the verifier only through the shell, already expanded). What a
//! job has laid out by the time the command runs (the binary the command
//! names, the interpreters in its cache) is compared too: a later test
//! asserts its own equals the first one's ([`laid_out`]).
//!
//! The evidence names the repository it certified by its absolute path, and
//! each test checks that it is its own job's checkout. So a certification
//! job's checkout is the shared folder's `plugins/`, the same for every test
//! of that invocation ([`SharedJob::checkout`]): GitLab's job runs there
//! (its project directory; its cache and evidence beside it, in the shared
//! folder, are that test's alone), GitHub's checkout path links to it. The
//! run is made before any job writes into the checkout (GitLab's
//! `after_script` does), and nothing there is run again.
//!
//! Folders live under `runs_root()` (`$VCC_SHARED_RUNS`), one per invocation
//! (`ci-<SHA-256>`), held under a `flock` while a job uses it
//! ([`crate::common::hold_shared`]): nextest runs each test as a process of
//! its own, and a test runs its independent jobs in threads of their own,
//! each holding one folder at a time.

use crate::common::{self, both, FixtureRepo};
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Component, Path, PathBuf};
use std::process::{ExitStatus, Output};

/// Variables a CI job sets that the verifier never reads (it reads `PYTHON`,
/// `XDG_CACHE_HOME`, `HOME`, `PATH` and its own `VCC_*`, and gives every
/// process it starts an environment of its own making): they reach a
/// command only through the shell, and their values are in the expanded
/// arguments.
pub const SHELL_ONLY: &[&str] = &[
    "RUNNER_TEMP",
    "CI_PROJECT_DIR",
    "CI_NODE_INDEX",
    "CI_NODE_TOTAL",
];

/// The folders of one CI job that a verifier command may name: placeholders
/// in an [`invocation`].
pub struct JobDirs {
    /// The checkout under review (`<repo>`).
    pub repo: PathBuf,
    /// The job's folder outside the checkout for its evidence (`<temp>`):
    /// `$RUNNER_TEMP` on GitHub, `$CI_PROJECT_DIR/..` on GitLab.
    pub temp: PathBuf,
    /// `$XDG_CACHE_HOME` (`<cache>`).
    pub cache: PathBuf,
}

/// The verifier invocation of `command` (`<binary> ARGS`) run by bash in
/// `cwd` with `env` on a checkout of `fixture`: one line per argument, per
/// variable (but [`SHELL_ONLY`]) and for the fixture's commit. An argument
/// after `--repo` is resolved against `cwd`; an absolute path, and that one,
/// has `.` and `..` removed and the longest of `dirs` it lies in replaced by
/// its placeholder; every other argument stays as it is.
///
/// # Panics
/// When `command` does not start with `binary` or bash cannot expand it.
pub fn invocation(
    command: &str,
    binary: &str,
    cwd: &Path,
    env: &BTreeMap<&str, String>,
    dirs: &JobDirs,
    fixture: &FixtureRepo,
) -> String {
    let args = command
        .strip_prefix(binary)
        .and_then(|rest| rest.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{command}: expected `{binary} ...`"));
    let mut lines = vec![format!("fixture {}", head(&fixture.root))];
    let mut after_repo = false;
    for word in expanded(args, cwd, env) {
        let arg = if after_repo || Path::new(&word).is_absolute() {
            named(&cwd.join(&word), dirs)
        } else {
            word.clone()
        };
        after_repo = word == "--repo";
        lines.push(format!("arg {arg}"));
    }
    for (name, value) in env.iter().filter(|(k, _)| !SHELL_ONLY.contains(k)) {
        let value = if Path::new(value).is_absolute() {
            named(Path::new(value), dirs)
        } else {
            value.clone()
        };
        lines.push(format!("env {name}={value}"));
    }
    lines.join("\n")
}

/// The words bash makes of `args` in `cwd` (`/` while that is not made yet)
/// with `env`: `printf '%s\0' ARGS`.
fn expanded(args: &str, cwd: &Path, env: &BTreeMap<&str, String>) -> Vec<String> {
    let out = std::process::Command::new("bash")
        .args([
            "-e",
            "-o",
            "pipefail",
            "-c",
            &format!("printf '%s\\0' {args}"),
        ])
        .current_dir(if cwd.is_dir() { cwd } else { Path::new("/") })
        .env_remove("PYTHON")
        .envs(env)
        .output()
        .unwrap();
    assert!(out.status.success(), "expand {args}: {}", both(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut words: Vec<String> = text.split('\0').map(String::from).collect();
    assert_eq!(words.pop().as_deref(), Some(""), "{text:?}");
    words
}

/// `path` with `.` and `..` removed lexically, the longest of `dirs` it lies
/// in written as its placeholder (`<repo>/x`).
fn named(path: &Path, dirs: &JobDirs) -> String {
    let mut roles = [
        ("<repo>", lexical(&dirs.repo)),
        ("<temp>", lexical(&dirs.temp)),
        ("<cache>", lexical(&dirs.cache)),
    ];
    roles.sort_by_key(|(_, dir)| std::cmp::Reverse(dir.components().count()));
    let path = lexical(path);
    for (role, dir) in &roles {
        if let Ok(rest) = path.strip_prefix(dir) {
            return match rest.as_os_str().is_empty() {
                true => role.to_string(),
                false => format!("{role}/{}", rest.display()),
            };
        }
    }
    path.display().to_string()
}

/// `path` with `.` and `..` removed lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What a job has laid out for its command when it runs: the file `binary`
/// names from `cwd` (resolved: the verifier under test), and every entry of
/// `cache/verify-coding-candidates/` (links with their targets).
pub fn laid_out(binary: &str, cwd: &Path, cache: &Path) -> String {
    let resolved = cwd.join(binary).canonicalize();
    let mut lines = vec![format!("binary {resolved:?}")];
    let dir = cache.join("verify-coding-candidates");
    for entry in walkdir::WalkDir::new(&dir).sort_by_file_name() {
        let Ok(entry) = entry else { continue };
        let name = entry.path().strip_prefix(&dir).unwrap().display();
        match std::fs::read_link(entry.path()) {
            Ok(target) => lines.push(format!("cache {name} -> {}", target.display())),
            Err(_) => lines.push(format!("cache {name}")),
        }
    }
    lines.join("\n")
}

/// The commit `HEAD` of the repository at `root`.
fn head(root: &Path) -> String {
    common::git(root, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The shared folder of one [`invocation`], held by this test while a job
/// uses it (until dropped).
pub struct SharedJob {
    held: common::HeldFolder,
    /// The invocation the folder is for.
    invocation: String,
    /// Whether another test already made the run (`run/done`).
    made: bool,
}

impl SharedJob {
    /// Waits until no other test uses the folder of `invocation`, then holds
    /// it. A folder without a complete run (its maker failed) is emptied.
    pub fn hold(invocation: &str) -> Self {
        let name = format!("ci-{}", common::shared_key(&[invocation]));
        let held = common::hold_shared(&name);
        let made = held.dir.join("run/done").is_file();
        if !made && held.dir.exists() {
            common::make_writable(&held.dir);
            std::fs::remove_dir_all(&held.dir).unwrap();
        }
        std::fs::create_dir_all(held.dir.join("run")).unwrap();
        let invocation = invocation.to_string();
        Self {
            held,
            invocation,
            made,
        }
    }

    /// The job's checkout, `plugins/` of the shared folder: the first test
    /// clones `fixture` there; a later one finds that clone, at `fixture`'s
    /// commit (asserted).
    pub fn checkout(&self, fixture: &FixtureRepo) -> PathBuf {
        let repo = self.held.dir.join("plugins");
        if self.made {
            assert_eq!(head(&repo), head(&fixture.root), "{}", repo.display());
        } else {
            super::checkout(fixture, &repo);
        }
        repo
    }

    /// The certification `run` (the job's command as bash runs it, writing
    /// its evidence to `evidence`) of `invocation` (asserted to be the one
    /// held) with what the job `laid` out: the first test runs it and keeps
    /// what it left; a later one asserts that its `laid` is the first one's,
    /// copies the kept evidence to `evidence` and returns the kept exit
    /// status and output.
    pub fn certify(
        &self,
        invocation: &str,
        laid: &str,
        evidence: &Path,
        run: impl FnOnce() -> Output,
    ) -> Output {
        assert_eq!(invocation, self.invocation, "the command as it runs");
        let kept = self.held.dir.join("run");
        if self.made {
            let first = String::from_utf8(read(&kept, "laid_out")).unwrap();
            assert_eq!(laid, first, "what the job laid out, and the first one");
            if kept.join("evidence").exists() {
                super::copy_dir(&kept.join("evidence"), evidence);
            }
            let status = String::from_utf8(read(&kept, "status")).unwrap();
            eprintln!("(shared run {}: wait status {status})", kept.display());
            return Output {
                status: ExitStatus::from_raw(status.parse().unwrap()),
                stdout: read(&kept, "stdout"),
                stderr: read(&kept, "stderr"),
            };
        }
        let out = run();
        if evidence.exists() {
            super::copy_dir(evidence, &kept.join("evidence"));
        }
        let status = out.status.into_raw().to_string();
        let files: [(&str, &[u8]); 6] = [
            ("invocation", invocation.as_bytes()),
            ("laid_out", laid.as_bytes()),
            ("status", status.as_bytes()),
            ("stdout", &out.stdout),
            ("stderr", &out.stderr),
            ("done", b""),
        ];
        for (name, bytes) in files {
            std::fs::write(kept.join(name), bytes).unwrap();
        }
        out
    }
}

/// The file `name` of the kept run `kept`.
fn read(kept: &Path, name: &str) -> Vec<u8> {
    let path = kept.join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
