//! The CI recipes (`examples/ci/github-actions.yml`,
//! `examples/ci/gitlab-ci.yml`, and the whole-repository ones beside them):
//! validated against the GitHub workflow and GitLab CI JSON schemas
//! (`tests/data/ci-schemas/`), then run as scripts against a fixture
//! repository: each job in a fresh workspace with a clone of the repository
//! under review, every command that calls the verifier executed by bash as
//! the CI would, artifacts passed between jobs by each CI's rules, and the
//! downloaded evidence replayed.
//!
//! A certification command (a share, the suites) that another test of this
//! test run already ran as the same invocation is not run again: that run's
//! exit status, output and evidence are taken, and the job's checkout is the
//! one that run certified (`ci_recipes/shared.rs` says when two commands are
//! the same invocation). The GitHub and GitLab recipes of a pair make the
//! same three, so each pair's certifications run once.
//!
//! Artifact rules imitated: GitHub's `actions/upload-artifact@v4` (v4.4 and
//! later) leaves out every file or directory whose name starts with `.` (and
//! everything under such a directory, the uploaded directory itself
//! included) unless `include-hidden-files: true`, follows symbolic links,
//! and the zip it uploads keeps no file modes (downloaded files are 0644);
//! GitLab's artifacts keep hidden files and modes (`cp -a`).
//!
//! The setup commands (package installs, `cargo build`/`cargo install`,
//! `sdk --print-path`, the cache steps) are not run: the test lays out what
//! they leave behind (the verifier binary under test, and the SDK
//! interpreter at `$XDG_CACHE_HOME/verify-coding-candidates/sdk-venv`, a link
//! to the SDK venv of `$PYTHON`, given to the verifier as `PYTHON` in place
//! of what `sdk --print-path` provisions), and asserts the recipes' setup
//! commands are exactly the known ones, so a changed setup is noticed here.

mod shared;

use crate::common;

use common::*;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;
use shared::SharedJob;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The recipe `examples/ci/<file>`, parsed (anchors resolved).
fn recipe(file: &str) -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/ci")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml_ng::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not valid YAML: {e}", path.display()))
}

/// The errors of `instance` against `tests/data/ci-schemas/<schema>` (one
/// line each, with the instance path).
fn schema_errors(schema: &str, instance: &Yaml) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ci-schemas")
        .join(schema);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let instance = serde_json::to_value(instance).expect("the recipe converts to JSON");
    validator
        .iter_errors(&instance)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect()
}

#[test]
fn recipes_validate_against_the_github_workflow_and_gitlab_ci_schemas() {
    let github = recipe("github-actions.yml");
    let errors = schema_errors("github-workflows.json", &github);
    assert!(errors.is_empty(), "{errors:#?}");
    let gitlab = recipe("gitlab-ci.yml");
    let errors = schema_errors("gitlab-ci.json", &gitlab);
    assert!(errors.is_empty(), "{errors:#?}");

    // The schemas do reject a misspelt key, so the passes above mean something.
    let mut bad = github.clone();
    bad["jobs"]["merge"]["runs_on"] = bad["jobs"]["merge"]["runs-on"].clone();
    assert!(!schema_errors("github-workflows.json", &bad).is_empty());
    let mut bad = gitlab.clone();
    bad["merge"]["artefacts"] = bad["merge"]["artifacts"].clone();
    assert!(!schema_errors("gitlab-ci.json", &bad).is_empty());
}

/// Copies `src` to `dst` as `actions/upload-artifact@v4` then
/// `actions/download-artifact@v4` do: without `include_hidden`, nothing whose
/// name (from `src`'s own name down) starts with `.`; links followed; every
/// file downloaded as a regular 0644 file. Returns the files copied.
fn github_artifact(src: &Path, dst: &Path, include_hidden: bool) -> usize {
    use std::os::unix::fs::PermissionsExt;
    let hidden = |name: &std::ffi::OsStr| name.to_string_lossy().starts_with('.');
    if !include_hidden && src.file_name().is_some_and(hidden) {
        return 0;
    }
    let mut copied = 0;
    let mut walk = walkdir::WalkDir::new(src).follow_links(true).into_iter();
    while let Some(entry) = walk.next() {
        let entry = entry.unwrap();
        if entry.depth() > 0 && !include_hidden && hidden(entry.file_name()) {
            if entry.file_type().is_dir() {
                walk.skip_current_dir();
            }
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        let to = dst.join(entry.path().strip_prefix(src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, std::fs::read(entry.path()).unwrap()).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
        copied += 1;
    }
    copied
}

#[test]
fn the_github_artifact_imitation_drops_hidden_files_as_upload_artifact_does() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let src = base.path().join("evidence");
    for (path, mode) in [
        ("a.txt", 0o644),
        ("run.sh", 0o755),
        (".verified-sha256", 0o644),
        ("staging/source/.gitignore", 0o644),
        ("roots/.cache/x", 0o644),
        ("staging/source/pkg/mod.py", 0o600),
    ] {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, path).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let files = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = walkdir::WalkDir::new(dir)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
            .collect();
        v.sort();
        v
    };
    let without = base.path().join("without");
    assert_eq!(github_artifact(&src, &without, false), 3);
    assert_eq!(
        files(&without),
        ["a.txt", "run.sh", "staging/source/pkg/mod.py"]
    );
    let with = base.path().join("with");
    assert_eq!(github_artifact(&src, &with, true), 6);
    let mode = std::fs::metadata(with.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "the zip keeps no modes");
    // A hidden directory uploaded by name is left out whole.
    assert_eq!(
        github_artifact(&src.join("roots/.cache"), &base.path().join("h"), false),
        0
    );
}

/// Lays out what the recipe's setup commands leave behind: the verifier
/// binary at `binary` (a link to the one under test) and the SDK interpreter
/// the verifier provisions into `cache/verify-coding-candidates/` (a link
/// to the SDK venv of `$PYTHON`). Returns that interpreter.
fn lay_out_verifier(binary: &Path, cache: &Path) -> PathBuf {
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin(BIN), binary).unwrap();
    let sdk = cache.join("verify-coding-candidates").join("sdk-venv");
    std::fs::create_dir_all(sdk.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(sdk_venv(), &sdk).unwrap();
    laid_out_python(cache)
}

/// The interpreter [`lay_out_verifier`] lays out in `cache`.
fn laid_out_python(cache: &Path) -> PathBuf {
    cache.join("verify-coding-candidates/sdk-venv/bin/python")
}

/// A clone of the fixture repository at `dst`, as a CI checkout makes it.
fn checkout(fixture: &FixtureRepo, dst: &Path) {
    let out = std::process::Command::new("git")
        .args(["clone", "-q"])
        .arg(&fixture.root)
        .arg(dst)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
}

/// Copies the directory `src` to `dst` (`cp -a`: GitLab's artifacts).
fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    let out = std::process::Command::new("cp")
        .arg("-a")
        .arg(src)
        .arg(dst)
        .output()
        .unwrap();
    assert!(out.status.success(), "cp {}: {}", src.display(), both(&out));
}

/// One command of a recipe, run by bash in `cwd` with `env` (`PYTHON` only
/// as `env` gives it: the interpreter the setup would have provisioned).
fn bash(command: &str, cwd: &Path, env: &BTreeMap<&str, String>) -> std::process::Output {
    let out = std::process::Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", command])
        .current_dir(cwd)
        .env_remove("PYTHON")
        .envs(env)
        .output()
        .unwrap();
    eprintln!("$ {command}\nexit {:?}\n{}", out.status.code(), both(&out));
    out
}

/// Runs `verifier replay --evidence dir`; returns the exit code and output.
fn replay(dir: &Path) -> (i32, String) {
    let out = replay_output(dir, &[]);
    (out.status.code().unwrap_or(-1), both(&out))
}

/// What the test checks after the jobs ran.
#[derive(Default)]
struct Ran {
    /// Exit code of every command that invoked the verifier.
    verifier_exits: Vec<(String, i32)>,
    /// The merged evidence directory.
    merged: PathBuf,
    /// Every evidence directory a run wrote, with the repository it ran on.
    runs: Vec<(PathBuf, PathBuf)>,
    /// Setup commands met (and emulated), in order.
    setup: Vec<String>,
}

impl Ran {
    /// Appends what a later job recorded.
    fn extend(&mut self, later: Ran) {
        self.verifier_exits.extend(later.verifier_exits);
        if later.merged != PathBuf::new() {
            self.merged = later.merged;
        }
        self.runs.extend(later.runs);
        self.setup.extend(later.setup);
    }
}

/// Runs each of `jobs` in a thread of its own, as a CI runs the jobs that
/// need no other at once, and returns what each returned, in order (a panic
/// of one is raised again here).
fn at_once<T: Send>(jobs: Vec<impl FnOnce() -> T + Send>) -> Vec<T> {
    std::thread::scope(|scope| {
        let running: Vec<_> = jobs.into_iter().map(|job| scope.spawn(job)).collect();
        running
            .into_iter()
            .map(|job| job.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Checks shared by both recipes: every verifier call could run (exit 0 or
/// 1, never 2), every run certified the plugin repository clone of its own
/// job with the interpreter provisioned into the cache, and the merge of the
/// matrix and the suites job is one non-partial record that reached PASSED
/// (bubblewrap installed: no warning).
fn check(ran: &Ran) {
    assert!(!ran.verifier_exits.is_empty());
    for (cmd, code) in &ran.verifier_exits {
        assert!(
            *code == 0 || *code == 1,
            "could not run (exit {code}): {cmd}"
        );
    }
    assert_eq!(ran.runs.len(), 3, "two shares and the suites job");
    let mut verdicts = Vec::new();
    for (dir, repo) in &ran.runs {
        let ev = read_evidence(dir);
        assert_eq!(
            ev["source"]["repo"],
            repo.canonicalize().unwrap().display().to_string(),
            "{}: certifies the plugin repository",
            dir.display()
        );
        assert_eq!(gate_result(&ev, "stage"), "pass", "{}", dir.display());
        assert_eq!(gate_result(&ev, "sdk-record"), "pass", "{}", dir.display());
        assert!(
            ev["sdk"]["python"]
                .as_str()
                .unwrap()
                .ends_with("verify-coding-candidates/sdk-venv/bin/python"),
            "{}",
            ev["sdk"]["python"]
        );
        verdicts.push(ev["verdict"].as_str().unwrap().to_string());
    }
    let m = read_evidence(&ran.merged);
    assert_eq!(m["selection"]["partial"], false, "{}", m["selection"]);
    assert_eq!(m["selection"]["gates_not_run"], serde_json::json!([]));
    let from = m["merged_from"].as_array().unwrap();
    assert_eq!(from.len(), 3);
    assert!(
        from.iter()
            .any(|p| p["partition"].is_null() && p["gates"] == serde_json::json!(["suites"])),
        "{from:?}"
    );
    assert_eq!(gate(&m, "suites")["required"], true);
    // The fixture repository certifies: every run passes, and so does the
    // merged record.
    assert!(verdicts.iter().all(|v| v == "pass"), "runs: {verdicts:?}");
    assert_eq!(m["verdict"], "pass", "runs: {verdicts:?}");
    let st: Value = serde_json::from_str(
        &std::fs::read_to_string(ran.merged.join("statement.intoto.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        st["predicate"]["result"], "PASSED",
        "warned: {}",
        st["predicate"]["warnedTests"]
    );
}

/// The verifier as a GitHub job's steps call it: the release build in the
/// job's checkout of the verifier.
const GITHUB_VERIFIER: &str = "verifier/target/release/verify-coding-candidates";

/// The evidence folder a certification command names (`--evidence X`), its
/// variables not yet replaced.
fn evidence_arg(command: &str) -> &str {
    command
        .split("--evidence ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{command}: expected --evidence"))
        .trim_matches('"')
}

/// Every job of the GitHub recipe `yaml` in order, each matrix entry a job
/// of its own: its name, the job, its `matrix.share` and the matrix's size.
fn github_jobs(yaml: &Yaml) -> Vec<(&str, &Yaml, Option<u64>, usize)> {
    let mut jobs = Vec::new();
    for (name, job) in yaml["jobs"].as_mapping().expect("jobs") {
        let shares: Vec<Option<u64>> = match job["strategy"]["matrix"]["share"].as_sequence() {
            Some(list) => list.iter().map(|v| Some(v.as_u64().unwrap())).collect(),
            None => vec![None],
        };
        let total = shares.len();
        let name = name.as_str().unwrap();
        jobs.extend(shares.into_iter().map(|share| (name, job, share, total)));
    }
    jobs
}

/// One job of a GitHub recipe (one matrix entry), run in a workspace of its
/// own.
struct GithubJob<'a> {
    name: &'a str,
    work: PathBuf,
    temp: PathBuf,
    cache: PathBuf,
    env: BTreeMap<&'static str, String>,
    /// `${{ … }}` expressions of this job, with their values.
    vars: Vec<(&'static str, String)>,
    /// Where the job checks the plugin repository out, until its
    /// certification command runs: that path then links to the checkout
    /// shared by every test making the same run (`shared.rs`). A job that
    /// certifies nothing gets a clone of its own there when it ends.
    checkout: Option<PathBuf>,
    /// A command failed: the later steps run only with `if: always()`.
    failed: bool,
}

impl<'a> GithubJob<'a> {
    /// The job `name`, matrix entry `share` of `total`, in the fresh folder
    /// `root`.
    fn new(name: &'a str, root: &Path, share: Option<u64>, total: usize) -> Self {
        let (work, temp, cache) = (root.join("work"), root.join("temp"), root.join("cache"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&temp).unwrap();
        let env = BTreeMap::from([
            ("RUNNER_TEMP", temp.display().to_string()),
            ("XDG_CACHE_HOME", cache.display().to_string()),
        ]);
        let share = share.map(|s| s.to_string()).unwrap_or_default();
        GithubJob {
            name,
            work,
            temp,
            cache,
            env,
            vars: vec![
                ("${{ matrix.share }}", share),
                ("${{ strategy.job-total }}", total.to_string()),
            ],
            checkout: None,
            failed: false,
        }
    }

    fn expand(&self, s: &str) -> String {
        let mut s = s.replace("${{ runner.temp }}", &self.temp.display().to_string());
        for (k, v) in &self.vars {
            s = s.replace(k, v);
        }
        s
    }
}

/// What the jobs of a GitHub recipe share and leave: the repository under
/// review, the artifact store, and what the test checks afterwards.
struct Github<'a> {
    fixture: &'a FixtureRepo,
    /// The SDK group interpreter each job's cache holds too (the
    /// repository recipe), linked there as a restored cache would hold it.
    group: Option<PathBuf>,
    store: PathBuf,
    ran: Ran,
    /// Every `actions/cache` step's path and key, in order.
    caches: Vec<(String, String)>,
    /// Every JUnit report step's `report_paths`, in order.
    reports: Vec<String>,
    /// Where `actions/download-artifact` put the artifacts.
    downloaded: Option<PathBuf>,
}

impl<'a> Github<'a> {
    fn new(fixture: &'a FixtureRepo, group: Option<PathBuf>, store: PathBuf) -> Self {
        Github {
            fixture,
            group,
            store,
            ran: Ran::default(),
            caches: Vec::new(),
            reports: Vec::new(),
            downloaded: None,
        }
    }

    /// A record of its own for one job run apart: the same repository,
    /// group interpreter and artifact store, nothing recorded yet.
    fn part(&self) -> Self {
        Github::new(self.fixture, self.group.clone(), self.store.clone())
    }

    /// Appends what `part` recorded.
    fn absorb(&mut self, part: Self) {
        self.ran.extend(part.ran);
        self.caches.extend(part.caches);
        self.reports.extend(part.reports);
        self.downloaded = part.downloaded.or(self.downloaded.take());
    }

    /// Runs every job of `yaml`, each matrix entry a job of its own in a
    /// fresh folder under `base`: those that need no other at once
    /// ([`at_once`]), then the others in order; recorded in the recipe's
    /// order.
    fn walk(&mut self, yaml: &Yaml, base: &Path) {
        let root = |n: usize| base.join(format!("job-{}", n + 1));
        let (first, then): (Vec<_>, Vec<_>) = github_jobs(yaml)
            .into_iter()
            .enumerate()
            .partition(|(_, (_, job, _, _))| job["needs"].is_null());
        let (this, root) = (&*self, &root);
        let parts = at_once(
            first
                .into_iter()
                .map(|(n, (name, job, share, total))| {
                    move || {
                        let mut part = this.part();
                        part.job(name, job, share, total, &root(n));
                        part
                    }
                })
                .collect(),
        );
        for part in parts {
            self.absorb(part);
        }
        for (n, (name, job, share, total)) in then {
            self.job(name, job, share, total, &root(n));
        }
    }

    /// Runs `job`, matrix entry `share` of `total`, in the fresh folder
    /// `root`.
    fn job(&mut self, name: &str, job: &Yaml, share: Option<u64>, total: usize, root: &Path) {
        let mut run = GithubJob::new(name, root, share, total);
        for step in job["steps"].as_sequence().unwrap() {
            if !run.failed || step["if"].as_str() == Some("always()") {
                self.step(&mut run, step);
            }
        }
        if let Some(path) = run.checkout.take() {
            checkout(self.fixture, &path);
        }
    }

    /// Emulates or runs one step of `job`.
    fn step(&mut self, job: &mut GithubJob<'_>, step: &Yaml) {
        let with = |key: &str| step["with"][key].as_str().map(|v| job.expand(v));
        match step["uses"].as_str() {
            Some("actions/checkout@v4") => {
                let path = job.work.join(with("path").expect("checkout path"));
                if with("repository").is_none() {
                    job.checkout = Some(path);
                    return;
                }
                let python = lay_out_verifier(&path.join("target/release").join(BIN), &job.cache);
                if let Some(venv) = &self.group {
                    lay_out_group(&job.cache, venv);
                }
                job.env
                    .insert("PYTHON_LAID_OUT", python.display().to_string());
            }
            Some("actions/setup-python@v5") => {
                assert_eq!(with("python-version").as_deref(), Some("3.11"));
            }
            Some("actions/cache@v4") => {
                self.caches
                    .push((with("path").unwrap(), with("key").unwrap()));
            }
            Some("actions/upload-artifact@v4") => {
                let include = step["with"]["include-hidden-files"].as_bool() == Some(true);
                assert!(include, "job {}: hidden files are evidence too", job.name);
                let path = PathBuf::from(with("path").unwrap());
                let files = github_artifact(&path, &self.store.join(with("name").unwrap()), true);
                let shown = path.display();
                assert!(files > 0, "job {}: uploaded nothing from {shown}", job.name);
            }
            Some("actions/download-artifact@v4") => {
                assert_eq!(with("pattern").as_deref(), Some("evidence-*"));
                let to = PathBuf::from(with("path").unwrap());
                for entry in std::fs::read_dir(&self.store).unwrap() {
                    let entry = entry.unwrap();
                    copy_dir(&entry.path(), &to.join(entry.file_name()));
                }
                self.downloaded = Some(to);
            }
            Some("mikepenz/action-junit-report@v6.0.1") => {
                self.reports.push(with("report_paths").unwrap());
            }
            Some(other) => panic!("job {}: unexpected action {other}", job.name),
            None => self.run(job, step["run"].as_str().expect("a run step")),
        }
    }

    /// One `run` step of `job`: a command that calls the verifier runs by
    /// bash in the job's workspace (with the interpreter the setup laid out
    /// as `PYTHON` once the job provisioned it), a certification through
    /// [`Github::certify`]; any other is setup, recorded.
    fn run(&mut self, job: &mut GithubJob<'_>, run: &str) {
        let command = job.expand(run);
        let command = command.trim();
        if !command.starts_with(&format!("{GITHUB_VERIFIER} --repo "))
            && !command.starts_with(&format!("{GITHUB_VERIFIER} merge "))
        {
            self.ran.setup.push(command.to_string());
            return;
        }
        let mut env = job.env.clone();
        let provisioned = self
            .ran
            .setup
            .last()
            .is_some_and(|l| l.contains("sdk --print-path"));
        if let (true, Some(python)) = (provisioned, env.remove("PYTHON_LAID_OUT")) {
            env.insert("PYTHON", python);
        }
        env.remove("PYTHON_LAID_OUT");
        let out = if command.contains(" merge ") {
            self.ran.merged = job.temp.join("evidence");
            bash(command, &job.work, &env)
        } else {
            let temp = job.temp.display().to_string();
            let dir = PathBuf::from(evidence_arg(command).replace("$RUNNER_TEMP", &temp));
            let out = self.certify(job, command, &env, &dir);
            self.ran.runs.push((dir, job.work.join("plugins")));
            out
        };
        let code = out.status.code().unwrap_or(-1);
        self.ran.verifier_exits.push((command.to_string(), code));
        job.failed |= code != 0;
    }

    /// The certification `command` of `job`, writing `evidence`: run, or
    /// taken from the test that already made the same invocation
    /// (`shared.rs`). Either way the job's checkout path now links to that
    /// run's checkout.
    fn certify(
        &self,
        job: &mut GithubJob<'_>,
        command: &str,
        env: &BTreeMap<&str, String>,
        evidence: &Path,
    ) -> std::process::Output {
        let checkout = job.checkout.take().expect("the job checks the plugins out");
        let dirs = shared::JobDirs {
            repo: checkout.clone(),
            temp: job.temp.clone(),
            cache: job.cache.clone(),
        };
        let invocation = shared::invocation(
            command,
            GITHUB_VERIFIER,
            &job.work,
            env,
            &dirs,
            self.fixture,
        );
        let held = SharedJob::hold(&invocation);
        std::os::unix::fs::symlink(held.checkout(self.fixture), &checkout).unwrap();
        let laid = shared::laid_out(GITHUB_VERIFIER, &job.work, &job.cache);
        held.certify(&invocation, &laid, evidence, || {
            bash(command, &job.work, env)
        })
    }
}

#[test]
fn github_actions_recipe_reaches_passed_and_its_downloaded_artifacts_replay() {
    let fixture = fixture_repo(&[]);
    let yaml = recipe("github-actions.yml");
    // Not hidden itself: upload-artifact would leave out a `.tmp…` folder.
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let mut github = Github::new(&fixture, None, base.path().join("artifacts"));
    github.walk(&yaml, base.path());
    let setup_run = [
        "sudo apt-get update\nsudo apt-get install -y bubblewrap\nsudo sysctl -w \
         kernel.apparmor_restrict_unprivileged_userns=0",
        "echo \"commit=$(git -C verifier rev-parse HEAD)\" >> \"$GITHUB_OUTPUT\"",
        "test -x verifier/target/release/verify-coding-candidates || (cd verifier && cargo build \
         --release --locked)",
        "verifier/target/release/verify-coding-candidates sdk --print-path",
    ];
    let setup_merge = [setup_run[1], setup_run[2]];
    let expected: Vec<&str> = [
        &setup_run[..],
        &setup_run[..],
        &setup_run[..],
        &setup_merge[..],
    ]
    .concat();
    assert_eq!(github.ran.setup, expected);
    // The verifier build keyed on its commit (every job), the SDK on its pin
    // (the jobs that run it, not the merge).
    let keys: Vec<&str> = github.caches.iter().map(|(_, k)| k.as_str()).collect();
    let build = "verify-coding-candidates-${{ runner.os }}-${{ steps.verifier.outputs.commit }}";
    let sdk = "verify-coding-candidates-sdk-${{ runner.os }}-${{ \
               hashFiles('verifier/gates/profiles/sdk/*.lock') }}";
    assert_eq!(keys, [build, sdk, build, sdk, build, sdk, build]);
    assert!(github
        .caches
        .iter()
        .any(|(p, _)| p == "~/.cache/verify-coding-candidates"));
    assert_eq!(
        github.reports.len(),
        4,
        "every job's JUnit in the test view"
    );
    for report in &github.reports {
        assert!(Path::new(report).is_file(), "{report}");
    }
    check(&github.ran);
    let downloaded = github.downloaded.expect("the merge job downloads");
    downloaded_artifacts_replay(base.path(), &github.store, &downloaded);
}

/// What a reviewer downloads from the GitHub recipe's run (the shares in
/// `downloaded`, the merged record in `store`) replays; without
/// include-hidden-files the shares lose files SHA256SUMS lists: replay names
/// them, and merge refuses. Scratch folders go under `base`.
fn downloaded_artifacts_replay(base: &Path, store: &Path, downloaded: &Path) {
    let parts: Vec<PathBuf> = std::fs::read_dir(downloaded)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(parts.len(), 3);
    for part in &parts {
        let (code, text) = replay(part);
        assert_eq!(code, 0, "{}: {text}", part.display());
    }
    let merged = base.join("downloaded-evidence");
    github_artifact(&store.join("evidence"), &merged, true);
    let (code, text) = replay(&merged);
    assert_eq!(code, 0, "{text}");

    let stripped = base.join("stripped");
    for part in &parts {
        github_artifact(part, &stripped.join(part.file_name().unwrap()), false);
    }
    let share = stripped.join("evidence-1");
    let (code, text) = replay(&share);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("/.gitignore: recorded"), "{text}");
    let into = base.join("merged-stripped");
    let out = merge_output(
        &into,
        &[
            &stripped.join("evidence-1"),
            &stripped.join("evidence-2"),
            &stripped.join("evidence-suites"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        stderr_text(&out).contains("/.gitignore: missing"),
        "{}",
        stderr_text(&out)
    );
    assert!(!into.exists());
}

/// Script lines of a GitLab job key (`before_script`, `script`,
/// `after_script`), nested sequences (YAML anchors) flattened as GitLab does.
fn lines(value: &Yaml) -> Vec<String> {
    let mut out = Vec::new();
    for item in value.as_sequence().into_iter().flatten() {
        match item {
            Yaml::Sequence(_) => out.extend(lines(item)),
            other => out.push(other.as_str().unwrap().to_string()),
        }
    }
    out
}

/// `job` with its `extends` chain applied (the template's keys, then the
/// job's own over them), as GitLab merges top-level keys.
fn resolved(yaml: &Yaml, job: &Yaml) -> serde_yaml_ng::Mapping {
    let mut merged = match job["extends"].as_str() {
        Some(parent) => resolved(yaml, &yaml[parent]),
        None => serde_yaml_ng::Mapping::new(),
    };
    for (k, v) in job.as_mapping().unwrap() {
        if k.as_str() != Some("extends") {
            merged.insert(k.clone(), v.clone());
        }
    }
    merged
}

/// The verifier as a GitLab job's scripts call it: installed into the
/// job's cache, beside the checkout.
const GITLAB_VERIFIER: &str = "../cache/bin/verify-coding-candidates";

/// The variables a GitLab job's lines run with when its checkout is
/// `project`: its node's (`node`), `CI_PROJECT_DIR`, the cache its setup
/// exports and, once it provisioned, the interpreter laid out there.
fn gitlab_env(
    project: &Path,
    node: &BTreeMap<&'static str, String>,
    provisions: bool,
) -> BTreeMap<&'static str, String> {
    let cache = project.join("../cache");
    let mut env = node.clone();
    env.insert("CI_PROJECT_DIR", project.display().to_string());
    env.insert("XDG_CACHE_HOME", cache.display().to_string());
    if provisions {
        env.insert("PYTHON", laid_out_python(&cache).display().to_string());
    }
    env
}

/// The [`shared::invocation`] of the GitLab script `line` run in `project`
/// with `env`: the evidence and the cache are beside the checkout.
fn gitlab_invocation(
    line: &str,
    project: &Path,
    env: &BTreeMap<&str, String>,
    fixture: &FixtureRepo,
) -> String {
    let dirs = shared::JobDirs {
        repo: project.to_path_buf(),
        temp: project.join(".."),
        cache: project.join("../cache"),
    };
    shared::invocation(line, GITLAB_VERIFIER, project, env, &dirs, fixture)
}

/// `s` with every `$NAME` of `env` replaced by its value.
fn expand_vars(env: &BTreeMap<&str, String>, s: &str) -> String {
    let mut s = s.to_string();
    for (k, v) in env {
        s = s.replace(&format!("${k}"), v);
    }
    s
}

/// Every job of the GitLab recipe `yaml` in order, `parallel: N` as N
/// instances, templates left out: its name, the job with its `extends`
/// applied, and its node's variables.
fn gitlab_jobs(yaml: &Yaml) -> Vec<(String, Yaml, BTreeMap<&'static str, String>)> {
    let mut jobs = Vec::new();
    for (name, job) in yaml.as_mapping().unwrap() {
        let name = name.as_str().unwrap().to_string();
        if name.starts_with('.') || !job.is_mapping() || job["script"].is_null() {
            continue;
        }
        let job = Yaml::Mapping(resolved(yaml, job));
        let Some(total) = job["parallel"].as_u64() else {
            jobs.push((name, job, BTreeMap::new()));
            continue;
        };
        for i in 1..=total {
            let node = BTreeMap::from([
                ("CI_NODE_INDEX", i.to_string()),
                ("CI_NODE_TOTAL", total.to_string()),
            ]);
            jobs.push((name.clone(), job.clone(), node));
        }
    }
    jobs
}

/// One instance of a GitLab job, as it ran.
struct GitlabRun {
    name: String,
    /// `$CI_PROJECT_DIR`: the checkout the job ran in.
    project: PathBuf,
    /// The variables its lines ran with.
    env: BTreeMap<&'static str, String>,
    /// The job, its `extends` applied.
    job: Yaml,
    /// Its artifact paths, relative to `project`.
    paths: Vec<String>,
}

impl GitlabRun {
    fn expand(&self, s: &str) -> String {
        expand_vars(&self.env, s)
    }
}

/// What the jobs of a GitLab recipe share and leave.
struct Gitlab<'a> {
    fixture: &'a FixtureRepo,
    /// The SDK group interpreter each job's cache holds too (the
    /// repository recipe).
    group: Option<PathBuf>,
    ran: Ran,
    /// Every job instance, in the order run.
    runs: Vec<GitlabRun>,
}

impl<'a> Gitlab<'a> {
    fn new(fixture: &'a FixtureRepo, group: Option<PathBuf>) -> Self {
        Gitlab {
            fixture,
            group,
            ran: Ran::default(),
            runs: Vec::new(),
        }
    }

    /// A record of its own for one job run apart.
    fn part(&self) -> Self {
        Gitlab::new(self.fixture, self.group.clone())
    }

    /// Runs every job of `yaml` ([`gitlab_jobs`]): those that need no other
    /// at once ([`at_once`]), then the others in order; recorded in the
    /// recipe's order. A job that certifies nothing runs in a fresh folder
    /// under `base`.
    fn walk(&mut self, yaml: &Yaml, base: &Path) {
        let own = |n: usize| base.join(format!("job-{}/builds/plugins", n + 1));
        let (first, then): (Vec<_>, Vec<_>) = gitlab_jobs(yaml)
            .into_iter()
            .enumerate()
            .partition(|(_, (_, job, _))| job["needs"].is_null());
        let (this, own) = (&*self, &own);
        let parts = at_once(
            first
                .into_iter()
                .map(|(n, (name, job, node))| {
                    move || {
                        let mut part = this.part();
                        part.job(&name, &job, &node, &own(n));
                        part
                    }
                })
                .collect(),
        );
        for part in parts {
            self.ran.extend(part.ran);
            self.runs.extend(part.runs);
        }
        for (n, (name, job, node)) in then {
            self.job(&name, &job, &node, &own(n));
        }
    }

    /// One instance of `job` with the node variables `node`. A job that
    /// certifies runs in the checkout shared by every test making the same
    /// run (`shared.rs`; its invocation found with the job's checkout at
    /// `own`, which is not made), any other in a clone of its own at `own`.
    fn job(&mut self, name: &str, job: &Yaml, node: &BTreeMap<&'static str, String>, own: &Path) {
        let setup = lines(&job["before_script"]);
        let provisions = setup.last().is_some_and(|l| l.contains("sdk --print-path"));
        let certifies = lines(&job["script"])
            .into_iter()
            .find(|line| !line.contains(" merge "));
        let held = certifies.map(|line| {
            let env = gitlab_env(own, node, provisions);
            SharedJob::hold(&gitlab_invocation(&line, own, &env, self.fixture))
        });
        let project = match &held {
            Some(held) => held.checkout(self.fixture),
            None => {
                checkout(self.fixture, own);
                own.to_path_buf()
            }
        };
        for need in job["needs"].as_sequence().into_iter().flatten() {
            for run in self.runs.iter().filter(|r| need.as_str() == Some(&r.name)) {
                for p in &run.paths {
                    let p = p.trim_end_matches('/');
                    copy_dir(&run.project.join(p), &project.join(p));
                }
            }
        }
        // before_script: the setup, emulated.
        self.ran.setup.extend(setup);
        let cache = project.join("../cache");
        lay_out_verifier(&project.join(GITLAB_VERIFIER), &cache);
        if let Some(venv) = &self.group {
            lay_out_group(&cache, venv);
        }
        let env = gitlab_env(&project, node, provisions);
        let mut run = GitlabRun {
            name: name.to_string(),
            project,
            env,
            job: job.clone(),
            paths: Vec::new(),
        };
        run.paths = self.script(&run, held.as_ref());
        self.runs.push(run);
    }

    /// Runs the `script` of `run` (every line calls the verifier; a
    /// certification through `held`, [`SharedJob::certify`]) and its
    /// `after_script`; returns its artifact paths, once each exists.
    fn script(&mut self, run: &GitlabRun, held: Option<&SharedJob>) -> Vec<String> {
        let mut failed = false;
        for line in lines(&run.job["script"]) {
            if failed {
                continue;
            }
            assert!(line.starts_with(&format!("{GITLAB_VERIFIER} ")), "{line}");
            let out = if line.contains(" merge ") {
                self.ran.merged = run.project.join("../evidence");
                bash(&line, &run.project, &run.env)
            } else {
                let dir = PathBuf::from(run.expand(evidence_arg(&line)));
                let invocation = gitlab_invocation(&line, &run.project, &run.env, self.fixture);
                let laid =
                    shared::laid_out(GITLAB_VERIFIER, &run.project, &run.project.join("../cache"));
                let held = held.expect("a certifying job holds its shared folder");
                let out = held.certify(&invocation, &laid, &dir, || {
                    bash(&line, &run.project, &run.env)
                });
                self.ran.runs.push((dir, run.project.clone()));
                out
            };
            let code = out.status.code().unwrap_or(-1);
            self.ran.verifier_exits.push((line.clone(), code));
            failed |= code != 0;
        }
        for line in lines(&run.job["after_script"]) {
            let out = bash(&line, &run.project, &run.env);
            assert!(out.status.success(), "after_script: {}", both(&out));
        }
        let paths: Vec<String> = run.job["artifacts"]["paths"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|p| run.expand(p.as_str().unwrap()))
            .collect();
        for p in &paths {
            let name = &run.name;
            assert!(run.project.join(p).is_dir(), "artifact {p} of job {name}");
        }
        paths
    }
}

#[test]
fn gitlab_recipe_reaches_passed_and_its_artifacts_replay() {
    let fixture = fixture_repo(&[]);
    let yaml = recipe("gitlab-ci.yml");
    assert_eq!(yaml["image"].as_str(), Some("rust:1-bookworm"));
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let mut gitlab = Gitlab::new(&fixture, None);
    gitlab.walk(&yaml, base.path());
    for run in &gitlab.runs {
        assert!(
            run.project
                .join(".vcc-cache/bin/verify-coding-candidates")
                .exists(),
            "the cache is back in the checkout for GitLab to save"
        );
        let junit = run.expand(run.job["artifacts"]["reports"]["junit"].as_str().unwrap());
        assert!(run.project.join(&junit).is_file(), "junit report {junit}");
    }
    let verifier = [
        "mv .vcc-cache ../cache || mkdir -p ../cache",
        "export XDG_CACHE_HOME=\"$CI_PROJECT_DIR/../cache\"",
        "git clone --depth 1 --branch \"$VERIFIER_REF\" \"$VERIFIER_URL\" ../verifier",
        "test -x ../cache/bin/verify-coding-candidates || cargo install --locked --root ../cache \
         --path ../verifier",
    ];
    let install: &[&str] =
        &["apt-get update && apt-get install -y --no-install-recommends bubblewrap python3-venv"];
    let provision: &[&str] = &["../cache/bin/verify-coding-candidates sdk --print-path"];
    let certify: Vec<&str> = [install, &verifier[..], provision].concat();
    let expected: Vec<&str> = [&certify[..], &certify[..], &certify[..], &verifier[..]].concat();
    assert_eq!(gitlab.ran.setup, expected);
    assert_eq!(
        yaml["default"]["cache"]["paths"],
        serde_yaml_ng::from_str::<Yaml>("[.vcc-cache/]").unwrap()
    );
    check(&gitlab.ran);
    // GitLab's artifacts keep hidden files: the merged one as uploaded replays.
    let merge = gitlab.runs.iter().find(|r| r.name == "merge").unwrap();
    let (code, text) = replay(&merge.project.join("evidence"));
    assert_eq!(code, 0, "{text}");
}

/// The profile a whole repository commits (`verify-coding-candidates.toml`
/// at its root): one plugin in the default group (`0.6.0b5`) and one
/// pinning `0.6.1` in a group of its own.
const REPOSITORY_PROFILE: &str = r#"name = "whole-repository"

[sdk]
requirement = "langbot-plugin==0.6.0b5"

[[sdk.group]]
requirement = "langbot-plugin==0.6.1"
wheel_sha256 = "5607b4c787a92259b4a1f7beb4bdca9f371e37b316eaf8f316d2448e888da77e"

[[candidate]]
path = "Components/command-plugin"

[[candidate]]
path = "Pinned/pinned-plugin"
sdk = "langbot-plugin==0.6.1"
"#;

/// The SDK group evidence directory of the `0.6.1` group.
const GROUP_DIR: &str = "groups/langbot-plugin-0.6.1";

/// A plugin repository whose plugins pin two SDKs, its profile committed:
/// our command plugin (`fixtures/component-plugins`) and our 0.6.1 plugin
/// (`fixtures/sdk-groups`), as `tests/sdk_groups.rs` lays them out.
fn grouped_repository() -> FixtureRepo {
    let dir = tempfile::Builder::new()
        .prefix("vcc-ci-repo-")
        .tempdir()
        .unwrap();
    let root = dir.path().join("plugins");
    copy_tree(
        &fixtures_dir().join("component-plugins/Components/command-plugin"),
        &root.join("Components/command-plugin"),
    );
    copy_tree(
        &fixtures_dir().join("sdk-groups/Pinned/pinned-plugin"),
        &root.join("Pinned/pinned-plugin"),
    );
    std::fs::write(
        root.join("verify-coding-candidates.toml"),
        REPOSITORY_PROFILE,
    )
    .unwrap();
    commit_fixture(&root);
    FixtureRepo { dir, root }
}

/// The 0.6.1 group's interpreter, provisioned (or reused and verified) in
/// the user's cache by the verifier's own provisioning, as the group runs
/// of `tests/sdk_groups.rs` do. Each job's cache then holds a link to it
/// under the name the verifier provisions it as ([`lay_out_group`]), as a
/// restored CI cache would.
fn group_venv() -> PathBuf {
    use verify_coding_candidates::{profile, provision};
    let parsed = profile::parse(REPOSITORY_PROFILE, "repository profile").unwrap();
    let group = parsed
        .sdk_groups()
        .into_iter()
        .find(|g| !g.default)
        .unwrap();
    provision::provision_sdk(&group.pin, provision::DEFAULT_INDEX_URL, &mut |_| {})
        .unwrap_or_else(|e| panic!("provision {}: {e}", group.pin.requirement))
        .venv
}

/// Links `venv` into the job cache `cache` where the verifier reuses it.
fn lay_out_group(cache: &Path, venv: &Path) {
    let sdk = cache.join("verify-coding-candidates").join("sdk");
    std::fs::create_dir_all(&sdk).unwrap();
    std::os::unix::fs::symlink(venv, sdk.join(venv.file_name().unwrap())).unwrap();
}

/// The JUnit files a report glob of a recipe names under `dir`: its own
/// and each SDK group's.
fn junit_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![dir.join("junit.xml")];
    if let Ok(groups) = std::fs::read_dir(dir.join("groups")) {
        files.extend(groups.map(|g| g.unwrap().path().join("junit.xml")));
    }
    files.into_iter().filter(|f| f.is_file()).collect()
}

/// Checks of the whole-repository recipes' runs: every verifier call could
/// run, every share and the suites job certified its own checkout, the
/// second share holds only the 0.6.1 group's plugin (in its group's run),
/// and the merge is one non-partial record of both groups whose verdicts
/// are the runs' own, each group merged from its runs.
fn check_repository(ran: &Ran) {
    for (cmd, code) in &ran.verifier_exits {
        assert_eq!(*code, 0, "{cmd}");
    }
    assert_eq!(ran.runs.len(), 3, "two shares and the suites job");
    for (dir, repo) in &ran.runs {
        let ev = read_evidence(dir);
        assert_eq!(
            ev["source"]["repo"],
            repo.canonicalize().unwrap().display().to_string()
        );
        assert_eq!(ev["profile"]["name"], "whole-repository");
        assert_eq!(ev["verdict"], "pass", "{}", dir.display());
    }
    let share = |k: u64| {
        ran.runs
            .iter()
            .map(|(d, _)| read_evidence(d))
            .find(|e| e["selection"]["partition"]["index"] == k)
            .unwrap()
    };
    let (s1, s2) = (share(1), share(2));
    assert_eq!(s1["candidates"][0]["folder"], "command-plugin");
    assert_eq!(s1["sdk_groups"].as_array().unwrap().len(), 1);
    assert_eq!(s2["candidates"], serde_json::json!([]));
    assert_eq!(
        s2["sdk_groups"][1]["candidates"][0]["folder"],
        "pinned-plugin"
    );

    let m = read_evidence(&ran.merged);
    assert_eq!(m["verdict"], "pass");
    assert_eq!(m["selection"]["partial"], false, "{}", m["selection"]);
    assert_eq!(m["merged_from"].as_array().unwrap().len(), 3);
    assert_eq!(gate(&m, "suites")["required"], true);
    let groups = m["sdk_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["candidates"][0]["folder"], "command-plugin");
    assert_eq!(groups[1]["evidence"], GROUP_DIR);
    assert_eq!(groups[1]["verdict"], "pass");
    assert_eq!(groups[1]["candidates"][0]["verdict"], "pass");
    let g = read_evidence(&ran.merged.join(GROUP_DIR));
    assert_eq!(g["selection"]["partial"], false, "{}", g["selection"]);
    assert_eq!(g["sdk"]["version"], "0.6.1");
    assert_eq!(
        g["merged_from"].as_array().unwrap().len(),
        2,
        "share 2's group run and the suites job's"
    );
    assert_eq!(gate(&g, "discovery-rpc")["result"], "pass");
}

#[test]
fn repository_recipes_validate_against_the_github_workflow_and_gitlab_ci_schemas() {
    let github = recipe("github-actions-repository.yml");
    let errors = schema_errors("github-workflows.json", &github);
    assert!(errors.is_empty(), "{errors:#?}");
    let gitlab = recipe("gitlab-ci-repository.yml");
    let errors = schema_errors("gitlab-ci.json", &gitlab);
    assert!(errors.is_empty(), "{errors:#?}");
    let mut bad = github.clone();
    bad["jobs"]["share"]["strategy"]["matrix_"] =
        bad["jobs"]["share"]["strategy"]["matrix"].clone();
    assert!(!schema_errors("github-workflows.json", &bad).is_empty());
    let mut bad = gitlab.clone();
    bad["share"]["paralel"] = bad["share"]["parallel"].clone();
    assert!(!schema_errors("gitlab-ci.json", &bad).is_empty());
}

#[test]
fn github_actions_repository_recipe_merges_every_sdk_group_and_its_artifacts_replay() {
    let fixture = grouped_repository();
    let yaml = recipe("github-actions-repository.yml");
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let store = base.path().join("artifacts");
    let mut github = Github::new(&fixture, Some(group_venv()), store);
    github.walk(&yaml, base.path());
    let sdk = "verifier/target/release/verify-coding-candidates sdk --print-path --profile \
               plugins/verify-coding-candidates.toml";
    let setup = [
        "sudo apt-get update\nsudo apt-get install -y bubblewrap\nsudo sysctl -w \
         kernel.apparmor_restrict_unprivileged_userns=0",
        "echo \"commit=$(git -C verifier rev-parse HEAD)\" >> \"$GITHUB_OUTPUT\"",
        "test -x verifier/target/release/verify-coding-candidates || (cd verifier && cargo build \
         --release --locked)",
        sdk,
    ];
    let merge_setup = [setup[1], setup[2]];
    assert_eq!(
        github.ran.setup,
        [&setup[..], &setup[..], &setup[..], &merge_setup[..]].concat()
    );
    let build = "verify-coding-candidates-${{ runner.os }}-${{ steps.verifier.outputs.commit }}";
    let sdk_key = "verify-coding-candidates-sdk-${{ runner.os }}-${{ \
                   hashFiles('verifier/gates/profiles/sdk/*.lock', 'plugins/verify-coding-candidates.toml') }}";
    let keys: Vec<&str> = github.caches.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(
        keys,
        [build, sdk_key, build, sdk_key, build, sdk_key, build]
    );
    assert_eq!(
        github.reports.len(),
        4,
        "every job's JUnit in the test view"
    );
    for glob in &github.reports {
        let dir = glob
            .strip_suffix("/**/junit.xml")
            .expect("a glob over the run's JUnit files and its groups'");
        assert!(!junit_files(Path::new(dir)).is_empty(), "{glob}");
    }
    check_repository(&github.ran);
    // What a reviewer downloads replays: every share, and the merged record.
    for part in std::fs::read_dir(&github.store).unwrap() {
        let (code, text) = replay(&part.unwrap().path());
        assert_eq!(code, 0, "{text}");
    }
}

#[test]
fn gitlab_repository_recipe_merges_every_sdk_group_and_its_artifacts_replay() {
    let fixture = grouped_repository();
    let venv = group_venv();
    let yaml = recipe("gitlab-ci-repository.yml");
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let mut gitlab = Gitlab::new(&fixture, Some(venv));
    gitlab.walk(&yaml, base.path());
    for run in &gitlab.runs {
        // Each job's report names its own JUnit file and its groups'.
        let reports: Vec<String> = lines(&run.job["artifacts"]["reports"]["junit"]);
        let [own, groups] = &reports[..] else {
            panic!("{reports:?}")
        };
        assert!(run.project.join(run.expand(own)).is_file(), "{own}");
        let dir = run
            .expand(own)
            .strip_suffix("/junit.xml")
            .unwrap()
            .to_string();
        assert_eq!(run.expand(groups), format!("{dir}/groups/*/junit.xml"));
    }
    let verifier = [
        "mv .vcc-cache ../cache || mkdir -p ../cache",
        "export XDG_CACHE_HOME=\"$CI_PROJECT_DIR/../cache\"",
        "git clone --depth 1 --branch \"$VERIFIER_REF\" \"$VERIFIER_URL\" ../verifier",
        "test -x ../cache/bin/verify-coding-candidates || cargo install --locked --root ../cache \
         --path ../verifier",
    ];
    let install: &[&str] =
        &["apt-get update && apt-get install -y --no-install-recommends bubblewrap python3-venv"];
    let provision: &[&str] = &[
        "../cache/bin/verify-coding-candidates sdk --print-path --profile \
                                verify-coding-candidates.toml",
    ];
    let certify: Vec<&str> = [install, &verifier[..], provision].concat();
    assert_eq!(
        gitlab.ran.setup,
        [&certify[..], &certify[..], &certify[..], &verifier[..]].concat()
    );
    assert_eq!(
        yaml["default"]["cache"]["key"]["files"],
        serde_yaml_ng::from_str::<Yaml>("[verify-coding-candidates.toml]").unwrap()
    );
    check_repository(&gitlab.ran);
    // GitLab's artifacts keep hidden files: the merged one as uploaded replays.
    let merge = gitlab.runs.iter().find(|r| r.name == "merge").unwrap();
    let (code, text) = replay(&merge.project.join("evidence"));
    assert_eq!(code, 0, "{text}");
}

/// The certification invocations of every job of the GitHub recipe `yaml`
/// (the PYTHON its setup lays out given), each job laid out under `base`.
fn github_invocations(yaml: &Yaml, base: &Path, fixture: &FixtureRepo) -> Vec<String> {
    let mut found = Vec::new();
    for (n, (name, job, share, total)) in github_jobs(yaml).into_iter().enumerate() {
        let run = GithubJob::new(name, &base.join(format!("job-{n}")), share, total);
        let mut env = run.env.clone();
        env.insert("PYTHON", laid_out_python(&run.cache).display().to_string());
        let dirs = shared::JobDirs {
            repo: run.work.join("plugins"),
            temp: run.temp.clone(),
            cache: run.cache.clone(),
        };
        for step in job["steps"].as_sequence().unwrap() {
            let command = run.expand(step["run"].as_str().unwrap_or_default());
            let command = command.trim();
            if command.starts_with(&format!("{GITHUB_VERIFIER} --repo ")) {
                let cwd = &run.work;
                found.push(shared::invocation(
                    command,
                    GITHUB_VERIFIER,
                    cwd,
                    &env,
                    &dirs,
                    fixture,
                ));
            }
        }
    }
    found
}

/// The certification invocations of every job of the GitLab recipe `yaml`,
/// each job's checkout at a path under `base`.
fn gitlab_invocations(yaml: &Yaml, base: &Path, fixture: &FixtureRepo) -> Vec<String> {
    let mut found = Vec::new();
    for (n, (_, job, node)) in gitlab_jobs(yaml).into_iter().enumerate() {
        let project = base.join(format!("job-{n}/builds/plugins"));
        let provisions = lines(&job["before_script"])
            .last()
            .is_some_and(|l| l.contains("sdk --print-path"));
        let env = gitlab_env(&project, &node, provisions);
        for line in lines(&job["script"]) {
            if !line.contains(" merge ") {
                found.push(gitlab_invocation(&line, &project, &env, fixture));
            }
        }
    }
    found
}

/// Why a pair of recipes runs each certification once (`shared.rs`): the
/// GitHub and GitLab recipes of a pair make the same three invocations. And
/// why that shares no wrong result: another argument, an evidence folder
/// inside the checkout, no interpreter given or another fixture make
/// another invocation, which runs on its own.
#[test]
fn a_recipe_pair_certifies_by_the_same_invocations_and_nothing_else_does() {
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let (fixture, grouped) = (fixture_repo(&[]), grouped_repository());
    let pairs = [
        ("github-actions.yml", "gitlab-ci.yml", &fixture),
        (
            "github-actions-repository.yml",
            "gitlab-ci-repository.yml",
            &grouped,
        ),
    ];
    for (github, gitlab, fixture) in pairs {
        let ours = github_invocations(&recipe(github), &base.path().join(github), fixture);
        let theirs = gitlab_invocations(&recipe(gitlab), &base.path().join(gitlab), fixture);
        assert_eq!(ours.len(), 3, "{ours:#?}");
        assert_eq!(ours, theirs);
        assert!(ours[0] != ours[1] && ours[1] != ours[2], "{ours:#?}");
    }
    let project = base.path().join("job/builds/plugins");
    let node = BTreeMap::from([("CI_NODE_INDEX", "1".into()), ("CI_NODE_TOTAL", "2".into())]);
    let env = gitlab_env(&project, &node, true);
    let line = format!(
        "{GITLAB_VERIFIER} --repo . --evidence \"$CI_PROJECT_DIR/../evidence-$CI_NODE_INDEX\" \
         --partition \"$CI_NODE_INDEX/$CI_NODE_TOTAL\""
    );
    let first = gitlab_invocation(&line, &project, &env, &fixture);
    assert_eq!(
        first,
        gitlab_invocations(&recipe("gitlab-ci.yml"), base.path(), &fixture)[0]
    );
    let inside = line.replace("/../evidence", "/evidence");
    for other in [
        gitlab_invocation(&format!("{line} --jobs 1"), &project, &env, &fixture),
        gitlab_invocation(&inside, &project, &env, &fixture),
        gitlab_invocation(
            &line,
            &project,
            &gitlab_env(&project, &node, false),
            &fixture,
        ),
        gitlab_invocation(&line, &project, &env, &grouped),
    ] {
        assert_ne!(first, other);
    }
}
