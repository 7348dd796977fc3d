//! The CI recipes (`examples/ci/github-actions.yml`,
//! `examples/ci/gitlab-ci.yml`): validated against the GitHub workflow and
//! GitLab CI JSON schemas (`tests/data/ci-schemas/`), then run as scripts
//! against the fixture repository: each job in a fresh workspace with a fresh
//! clone of the repository under review, every command that calls the
//! verifier executed by bash as the CI would, artifacts passed between jobs
//! by each CI's rules, and the downloaded evidence replayed.
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

use crate::common;

use common::*;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;
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
    sdk.join("bin").join("python")
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

#[test]
fn github_actions_recipe_reaches_passed_and_its_downloaded_artifacts_replay() {
    let fixture = fixture_repo(&[]);
    let yaml = recipe("github-actions.yml");
    // Not hidden itself: upload-artifact would leave out a `.tmp…` folder.
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let store = base.path().join("artifacts");
    let mut ran = Ran {
        verifier_exits: Vec::new(),
        merged: PathBuf::new(),
        runs: Vec::new(),
        setup: Vec::new(),
    };
    let mut caches = Vec::new();
    let mut reports = Vec::new();
    let mut downloaded = PathBuf::new();
    let jobs = yaml["jobs"].as_mapping().expect("jobs");
    let mut n = 0;
    for (name, job) in jobs {
        let name = name.as_str().unwrap();
        let shares: Vec<Option<String>> = match job["strategy"]["matrix"]["share"].as_sequence() {
            Some(list) => list
                .iter()
                .map(|v| Some(v.as_u64().unwrap().to_string()))
                .collect(),
            None => vec![None],
        };
        for share in shares {
            n += 1;
            let root = base.path().join(format!("job-{n}"));
            let (work, temp, cache) = (root.join("work"), root.join("temp"), root.join("cache"));
            std::fs::create_dir_all(&work).unwrap();
            std::fs::create_dir_all(&temp).unwrap();
            let expand = |s: &str| {
                s.replace("${{ runner.temp }}", &temp.display().to_string())
                    .replace("${{ matrix.share }}", share.as_deref().unwrap_or(""))
            };
            let mut env = BTreeMap::from([
                ("RUNNER_TEMP", temp.display().to_string()),
                ("XDG_CACHE_HOME", cache.display().to_string()),
            ]);
            // Only the jobs that provision the SDK get an interpreter.
            let provisions = job["steps"].as_sequence().unwrap().iter().any(|s| {
                s["run"]
                    .as_str()
                    .is_some_and(|r| r.contains("sdk --print-path"))
            });
            let mut failed = false;
            for step in job["steps"].as_sequence().unwrap() {
                let always = step["if"].as_str() == Some("always()");
                if failed && !always {
                    continue;
                }
                let with = |key: &str| step["with"][key].as_str().map(&expand);
                match step["uses"].as_str() {
                    Some("actions/checkout@v4") => {
                        let path = work.join(with("path").expect("checkout path"));
                        if with("repository").is_some() {
                            let python =
                                lay_out_verifier(&path.join("target/release").join(BIN), &cache);
                            if provisions {
                                env.insert("PYTHON", python.display().to_string());
                            }
                        } else {
                            checkout(&fixture, &path);
                        }
                    }
                    Some("actions/setup-python@v5") => {
                        assert_eq!(with("python-version").as_deref(), Some("3.11"));
                    }
                    Some("actions/cache@v4") => {
                        caches.push((with("path").unwrap(), with("key").unwrap()));
                    }
                    Some("actions/upload-artifact@v4") => {
                        let path = PathBuf::from(with("path").unwrap());
                        let include = step["with"]["include-hidden-files"].as_bool() == Some(true);
                        assert!(include, "job {name}: hidden files are evidence too");
                        let files =
                            github_artifact(&path, &store.join(with("name").unwrap()), include);
                        assert!(
                            files > 0,
                            "job {name}: uploaded nothing from {}",
                            path.display()
                        );
                    }
                    Some("actions/download-artifact@v4") => {
                        assert_eq!(with("pattern").as_deref(), Some("evidence-*"));
                        downloaded = PathBuf::from(with("path").unwrap());
                        for entry in std::fs::read_dir(&store).unwrap() {
                            let entry = entry.unwrap();
                            copy_dir(&entry.path(), &downloaded.join(entry.file_name()));
                        }
                    }
                    Some("mikepenz/action-junit-report@v6.0.1") => {
                        let report = PathBuf::from(with("report_paths").unwrap());
                        assert!(report.is_file(), "job {name}: {}", report.display());
                        reports.push(report);
                    }
                    Some(other) => panic!("job {name}: unexpected action {other}"),
                    None => {
                        let command = expand(step["run"].as_str().expect("a run step"));
                        let command = command.trim();
                        let verifier = "verifier/target/release/verify-coding-candidates";
                        if !command.starts_with(&format!("{verifier} --repo "))
                            && !command.starts_with(&format!("{verifier} merge "))
                        {
                            ran.setup.push(command.to_string());
                            continue;
                        }
                        let out = bash(command, &work, &env);
                        let code = out.status.code().unwrap_or(-1);
                        ran.verifier_exits.push((command.to_string(), code));
                        if command.contains(" merge ") {
                            ran.merged = temp.join("evidence");
                        } else {
                            let dir = command
                                .split("--evidence ")
                                .nth(1)
                                .and_then(|r| r.split_whitespace().next())
                                .unwrap()
                                .trim_matches('"')
                                .replace("$RUNNER_TEMP", &temp.display().to_string());
                            ran.runs.push((PathBuf::from(dir), work.join("plugins")));
                        }
                        failed |= code != 0;
                    }
                }
            }
        }
    }
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
    assert_eq!(ran.setup, expected);
    // The verifier build keyed on its commit (every job), the SDK on its pin
    // (the jobs that run it, not the merge).
    let keys: Vec<&str> = caches.iter().map(|(_, k)| k.as_str()).collect();
    let build = "verify-coding-candidates-${{ runner.os }}-${{ steps.verifier.outputs.commit }}";
    let sdk = "verify-coding-candidates-sdk-${{ runner.os }}-${{ \
               hashFiles('verifier/gates/profiles/sdk/*.lock') }}";
    assert_eq!(keys, [build, sdk, build, sdk, build, sdk, build]);
    assert!(caches
        .iter()
        .any(|(p, _)| p == "~/.cache/verify-coding-candidates"));
    assert_eq!(reports.len(), 4, "every job's JUnit in the test view");
    check(&ran);

    // What a reviewer downloads replays: each share, and the merged record.
    let parts: Vec<PathBuf> = std::fs::read_dir(&downloaded)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(parts.len(), 3);
    for part in &parts {
        let (code, text) = replay(part);
        assert_eq!(code, 0, "{}: {text}", part.display());
    }
    let merged = base.path().join("downloaded-evidence");
    github_artifact(&store.join("evidence"), &merged, true);
    let (code, text) = replay(&merged);
    assert_eq!(code, 0, "{text}");

    // Without include-hidden-files the shares lose files SHA256SUMS lists:
    // replay names them, and merge refuses.
    let stripped = base.path().join("stripped");
    for part in &parts {
        github_artifact(part, &stripped.join(part.file_name().unwrap()), false);
    }
    let share = stripped.join("evidence-1");
    let (code, text) = replay(&share);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("/.gitignore: recorded"), "{text}");
    let into = base.path().join("merged-stripped");
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

#[test]
fn gitlab_recipe_reaches_passed_and_its_artifacts_replay() {
    let fixture = fixture_repo(&[]);
    let yaml = recipe("gitlab-ci.yml");
    assert_eq!(yaml["image"].as_str(), Some("rust:1-bookworm"));
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    // Artifacts by job name: (project dir, relative paths) per instance.
    let mut artifacts: BTreeMap<String, Vec<(PathBuf, Vec<String>)>> = BTreeMap::new();
    let mut ran = Ran {
        verifier_exits: Vec::new(),
        merged: PathBuf::new(),
        runs: Vec::new(),
        setup: Vec::new(),
    };
    let mut n = 0;
    let binary = "../cache/bin/verify-coding-candidates";
    for (name, job) in yaml.as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        if name.starts_with('.') || !job.is_mapping() || job["script"].is_null() {
            continue;
        }
        let job = Yaml::Mapping(resolved(&yaml, job));
        let total = job["parallel"].as_u64();
        let nodes: Vec<Option<u64>> = match total {
            Some(t) => (1..=t).map(Some).collect(),
            None => vec![None],
        };
        for node in nodes {
            n += 1;
            let project = base
                .path()
                .join(format!("job-{n}"))
                .join("builds")
                .join("plugins");
            checkout(&fixture, &project);
            let cache = project.join("../cache");
            let mut env = BTreeMap::from([("CI_PROJECT_DIR", project.display().to_string())]);
            if let (Some(i), Some(t)) = (node, total) {
                env.insert("CI_NODE_INDEX", i.to_string());
                env.insert("CI_NODE_TOTAL", t.to_string());
            }
            let expand = |env: &BTreeMap<&str, String>, s: &str| {
                let mut s = s.to_string();
                for (k, v) in env {
                    s = s.replace(&format!("${k}"), v);
                }
                s
            };
            for need in job["needs"].as_sequence().into_iter().flatten() {
                for (dir, paths) in &artifacts[need.as_str().unwrap()] {
                    for p in paths {
                        let p = p.trim_end_matches('/');
                        copy_dir(&dir.join(p), &project.join(p));
                    }
                }
            }
            // before_script: the setup, emulated.
            for line in lines(&job["before_script"]) {
                ran.setup.push(line);
            }
            let python = lay_out_verifier(&project.join(binary), &cache);
            env.insert("XDG_CACHE_HOME", cache.display().to_string());
            if ran
                .setup
                .last()
                .is_some_and(|l| l.contains("sdk --print-path"))
            {
                env.insert("PYTHON", python.display().to_string());
            }
            let mut failed = false;
            for line in lines(&job["script"]) {
                if failed {
                    continue;
                }
                assert!(line.starts_with(&format!("{binary} ")), "{line}");
                let out = bash(&line, &project, &env);
                let code = out.status.code().unwrap_or(-1);
                ran.verifier_exits.push((line.clone(), code));
                if line.contains(" merge ") {
                    ran.merged = project.join("../evidence");
                } else {
                    let dir = expand(
                        &env,
                        line.split("--evidence ")
                            .nth(1)
                            .and_then(|r| r.split_whitespace().next())
                            .unwrap()
                            .trim_matches('"'),
                    );
                    ran.runs.push((PathBuf::from(dir), project.clone()));
                }
                failed |= code != 0;
            }
            for line in lines(&job["after_script"]) {
                let out = bash(&line, &project, &env);
                assert!(out.status.success(), "after_script: {}", both(&out));
            }
            assert!(
                project
                    .join(".vcc-cache/bin/verify-coding-candidates")
                    .exists(),
                "the cache is back in the checkout for GitLab to save"
            );
            let paths: Vec<String> = job["artifacts"]["paths"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|p| expand(&env, p.as_str().unwrap()))
                .collect();
            for p in &paths {
                assert!(project.join(p).is_dir(), "artifact {p} of job {name}");
            }
            let junit = expand(&env, job["artifacts"]["reports"]["junit"].as_str().unwrap());
            assert!(project.join(&junit).is_file(), "junit report {junit}");
            artifacts
                .entry(name.to_string())
                .or_default()
                .push((project.clone(), paths));
        }
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
    assert_eq!(ran.setup, expected);
    assert_eq!(
        yaml["default"]["cache"]["paths"],
        serde_yaml_ng::from_str::<Yaml>("[.vcc-cache/]").unwrap()
    );
    check(&ran);
    // GitLab's artifacts keep hidden files: the merged one as uploaded replays.
    let (dir, _) = &artifacts["merge"][0];
    let (code, text) = replay(&dir.join("evidence"));
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

/// One job of a GitHub recipe, run in a workspace of its own.
struct GithubJob<'a> {
    name: &'a str,
    work: PathBuf,
    temp: PathBuf,
    cache: PathBuf,
    env: BTreeMap<&'static str, String>,
    /// `${{ … }}` expressions of this job, with their values.
    vars: Vec<(&'static str, String)>,
}

impl GithubJob<'_> {
    fn expand(&self, s: &str) -> String {
        let mut s = s.replace("${{ runner.temp }}", &self.temp.display().to_string());
        for (k, v) in &self.vars {
            s = s.replace(k, v);
        }
        s
    }
}

/// What the jobs of a GitHub recipe share and leave: the repository under
/// review, the group interpreter to lay out, the artifact store, and what
/// the test checks afterwards.
struct Github<'a> {
    fixture: &'a FixtureRepo,
    venv: PathBuf,
    store: PathBuf,
    ran: Ran,
    cache_keys: Vec<String>,
    reports: usize,
}

impl Github<'_> {
    /// Emulates or runs one step of `job`.
    fn step(&mut self, job: &mut GithubJob<'_>, step: &Yaml) {
        let with = |key: &str| step["with"][key].as_str().map(|v| job.expand(v));
        match step["uses"].as_str() {
            Some("actions/checkout@v4") => {
                let path = job.work.join(with("path").unwrap());
                if with("repository").is_none() {
                    return checkout(self.fixture, &path);
                }
                let python = lay_out_verifier(&path.join("target/release").join(BIN), &job.cache);
                lay_out_group(&job.cache, &self.venv);
                job.env
                    .insert("PYTHON_LAID_OUT", python.display().to_string());
            }
            Some("actions/setup-python@v5") => {
                assert_eq!(with("python-version").as_deref(), Some("3.11"));
            }
            Some("actions/cache@v4") => self.cache_keys.push(with("key").unwrap()),
            Some("actions/upload-artifact@v4") => {
                assert_eq!(step["with"]["include-hidden-files"].as_bool(), Some(true));
                let path = PathBuf::from(with("path").unwrap());
                let files = github_artifact(&path, &self.store.join(with("name").unwrap()), true);
                assert!(files > 0, "job {}: uploaded nothing", job.name);
            }
            Some("actions/download-artifact@v4") => {
                assert_eq!(with("pattern").as_deref(), Some("evidence-*"));
                let to = PathBuf::from(with("path").unwrap());
                for entry in std::fs::read_dir(&self.store).unwrap() {
                    let entry = entry.unwrap();
                    copy_dir(&entry.path(), &to.join(entry.file_name()));
                }
            }
            Some("mikepenz/action-junit-report@v6.0.1") => {
                let glob = with("report_paths").unwrap();
                let dir = glob
                    .strip_suffix("/**/junit.xml")
                    .expect("a glob over the run's JUnit files and its groups'");
                assert!(!junit_files(Path::new(dir)).is_empty(), "{glob}");
                self.reports += 1;
            }
            Some(other) => panic!("job {}: unexpected action {other}", job.name),
            None => github_run(&mut self.ran, job, step["run"].as_str().unwrap()),
        }
    }
}

#[test]
fn github_actions_repository_recipe_merges_every_sdk_group_and_its_artifacts_replay() {
    let fixture = grouped_repository();
    let yaml = recipe("github-actions-repository.yml");
    let base = tempfile::Builder::new()
        .prefix("vcc-ci-")
        .tempdir()
        .unwrap();
    let mut github = Github {
        fixture: &fixture,
        venv: group_venv(),
        store: base.path().join("artifacts"),
        ran: Ran {
            verifier_exits: Vec::new(),
            merged: PathBuf::new(),
            runs: Vec::new(),
            setup: Vec::new(),
        },
        cache_keys: Vec::new(),
        reports: 0,
    };
    let mut n = 0;
    for (name, job) in yaml["jobs"].as_mapping().unwrap() {
        let shares: Vec<Option<u64>> = match job["strategy"]["matrix"]["share"].as_sequence() {
            Some(list) => list.iter().map(|v| v.as_u64()).collect(),
            None => vec![None],
        };
        let total = shares.len();
        for share in shares {
            n += 1;
            let root = base.path().join(format!("job-{n}"));
            let mut job_env = GithubJob {
                name: name.as_str().unwrap(),
                work: root.join("work"),
                temp: root.join("temp"),
                cache: root.join("cache"),
                env: BTreeMap::new(),
                vars: vec![
                    (
                        "${{ matrix.share }}",
                        share.map(|s| s.to_string()).unwrap_or_default(),
                    ),
                    ("${{ strategy.job-total }}", total.to_string()),
                ],
            };
            std::fs::create_dir_all(&job_env.work).unwrap();
            std::fs::create_dir_all(&job_env.temp).unwrap();
            job_env
                .env
                .insert("RUNNER_TEMP", job_env.temp.display().to_string());
            job_env
                .env
                .insert("XDG_CACHE_HOME", job_env.cache.display().to_string());
            for step in job["steps"].as_sequence().unwrap() {
                github.step(&mut job_env, step);
            }
        }
    }
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
    assert_eq!(
        github.cache_keys,
        [build, sdk_key, build, sdk_key, build, sdk_key, build]
    );
    assert_eq!(github.reports, 4, "every job's JUnit in the test view");
    check_repository(&github.ran);
    // What a reviewer downloads replays: every share, and the merged record.
    for part in std::fs::read_dir(&github.store).unwrap() {
        let (code, text) = replay(&part.unwrap().path());
        assert_eq!(code, 0, "{text}");
    }
}

/// One `run` step of a GitHub job: a command that calls the verifier runs
/// by bash in the job's workspace (with the interpreter the setup laid out
/// as `PYTHON` once the job provisioned it); any other is setup, recorded.
fn github_run(ran: &mut Ran, job: &GithubJob<'_>, run: &str) {
    let command = job.expand(run);
    let command = command.trim();
    let verifier = "verifier/target/release/verify-coding-candidates";
    if !command.starts_with(&format!("{verifier} --repo "))
        && !command.starts_with(&format!("{verifier} merge "))
    {
        ran.setup.push(command.to_string());
        return;
    }
    let mut env = job.env.clone();
    let provisioned = ran
        .setup
        .last()
        .is_some_and(|l| l.contains("sdk --print-path"));
    if let (true, Some(python)) = (provisioned, env.remove("PYTHON_LAID_OUT")) {
        env.insert("PYTHON", python);
    }
    env.remove("PYTHON_LAID_OUT");
    let out = bash(command, &job.work, &env);
    ran.verifier_exits
        .push((command.to_string(), out.status.code().unwrap_or(-1)));
    if command.contains(" merge ") {
        ran.merged = job.temp.join("evidence");
    } else {
        let dir = command
            .split("--evidence ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap()
            .trim_matches('"')
            .replace("$RUNNER_TEMP", &job.temp.display().to_string());
        ran.runs
            .push((PathBuf::from(dir), job.work.join("plugins")));
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
    let mut artifacts: BTreeMap<String, Vec<(PathBuf, Vec<String>)>> = BTreeMap::new();
    let mut ran = Ran {
        verifier_exits: Vec::new(),
        merged: PathBuf::new(),
        runs: Vec::new(),
        setup: Vec::new(),
    };
    let mut n = 0;
    for (name, job) in yaml.as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        if name.starts_with('.') || !job.is_mapping() || job["script"].is_null() {
            continue;
        }
        let job = Yaml::Mapping(resolved(&yaml, job));
        let total = job["parallel"].as_u64();
        let nodes: Vec<Option<u64>> = total.map_or(vec![None], |t| (1..=t).map(Some).collect());
        for node in nodes {
            n += 1;
            let project = base.path().join(format!("job-{n}/builds/plugins"));
            checkout(&fixture, &project);
            let cache = project.join("../cache");
            let mut env = BTreeMap::from([("CI_PROJECT_DIR", project.display().to_string())]);
            if let (Some(i), Some(t)) = (node, total) {
                env.insert("CI_NODE_INDEX", i.to_string());
                env.insert("CI_NODE_TOTAL", t.to_string());
            }
            for need in job["needs"].as_sequence().into_iter().flatten() {
                for (dir, paths) in &artifacts[need.as_str().unwrap()] {
                    for p in paths {
                        let p = p.trim_end_matches('/');
                        copy_dir(&dir.join(p), &project.join(p));
                    }
                }
            }
            let setup = lines(&job["before_script"]);
            let provisions = setup.last().is_some_and(|l| l.contains("sdk --print-path"));
            ran.setup.extend(setup);
            let python = lay_out_verifier(
                &project.join("../cache/bin/verify-coding-candidates"),
                &cache,
            );
            lay_out_group(&cache, &venv);
            env.insert("XDG_CACHE_HOME", cache.display().to_string());
            if provisions {
                env.insert("PYTHON", python.display().to_string());
            }
            let paths = gitlab_job(&mut ran, &job, &project, &env);
            artifacts
                .entry(name.to_string())
                .or_default()
                .push((project, paths));
        }
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
        ran.setup,
        [&certify[..], &certify[..], &certify[..], &verifier[..]].concat()
    );
    assert_eq!(
        yaml["default"]["cache"]["key"]["files"],
        serde_yaml_ng::from_str::<Yaml>("[verify-coding-candidates.toml]").unwrap()
    );
    check_repository(&ran);
    // GitLab's artifacts keep hidden files: the merged one as uploaded replays.
    let (dir, _) = &artifacts["merge"][0];
    let (code, text) = replay(&dir.join("evidence"));
    assert_eq!(code, 0, "{text}");
}

/// Runs the `script` of a GitLab job (every line calls the verifier) and
/// its `after_script` in `project` with `env`; returns its artifact paths,
/// once each exists with the JUnit files its report names.
fn gitlab_job(
    ran: &mut Ran,
    job: &Yaml,
    project: &Path,
    env: &BTreeMap<&str, String>,
) -> Vec<String> {
    let expand = |s: &str| {
        let mut s = s.to_string();
        for (k, v) in env {
            s = s.replace(&format!("${k}"), v);
        }
        s
    };
    let binary = "../cache/bin/verify-coding-candidates";
    let mut failed = false;
    for line in lines(&job["script"]) {
        if failed {
            continue;
        }
        assert!(line.starts_with(&format!("{binary} ")), "{line}");
        let out = bash(&line, project, env);
        let code = out.status.code().unwrap_or(-1);
        ran.verifier_exits.push((line.clone(), code));
        if line.contains(" merge ") {
            ran.merged = project.join("../evidence");
        } else {
            let dir = line
                .split("--evidence ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next());
            ran.runs.push((
                PathBuf::from(expand(dir.unwrap().trim_matches('"'))),
                project.to_path_buf(),
            ));
        }
        failed |= code != 0;
    }
    for line in lines(&job["after_script"]) {
        let out = bash(&line, project, env);
        assert!(out.status.success(), "after_script: {}", both(&out));
    }
    let paths: Vec<String> = job["artifacts"]["paths"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| expand(p.as_str().unwrap()))
        .collect();
    for p in &paths {
        assert!(project.join(p).is_dir(), "artifact {p}");
    }
    let reports: Vec<String> = lines(&job["artifacts"]["reports"]["junit"]);
    let [own, groups] = &reports[..] else {
        panic!("{reports:?}")
    };
    assert!(project.join(expand(own)).is_file(), "{own}");
    let dir = expand(own).strip_suffix("/junit.xml").unwrap().to_string();
    assert_eq!(expand(groups), format!("{dir}/groups/*/junit.xml"));
    paths
}
