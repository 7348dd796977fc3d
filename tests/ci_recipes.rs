//! The CI recipes of `docs/ci-notes.md` (GitHub Actions, GitLab CI), run as scripts
//! against the fixture repository: each job in a fresh workspace with a fresh
//! clone of the repository under review, every `run:`/`script:` command
//! executed by bash as the CI would, artifacts passed between jobs as the CI
//! passes them, and the merged evidence checked.
//!
//! The setup commands that fetch and build the verifier (`git clone`,
//! `cargo xtask sdk`, `cargo build --release`) are not run: the test lays out
//! what they leave behind (`verifier/target/release/verify-coding-candidates`,
//! the binary under test; `verifier/target/sdk-venv`, the SDK venv of
//! `$PYTHON`), and asserts the recipe's setup commands are exactly the known
//! ones, so a changed setup is noticed here.

mod common;

use common::*;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The page holding the CI recipes.
const RECIPES: &str = "docs/ci-notes.md";

/// The YAML block of [`RECIPES`] that follows the line starting with `heading`.
fn readme_yaml(heading: &str) -> Yaml {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(RECIPES)).unwrap();
    let at = readme
        .lines()
        .position(|l| l.starts_with(heading))
        .unwrap_or_else(|| panic!("{RECIPES} has no line starting with {heading:?}"));
    let rest: Vec<&str> = readme.lines().skip(at).collect();
    let open = rest
        .iter()
        .position(|l| l.trim() == "```yaml")
        .expect("a yaml block follows");
    let close = open
        + 1
        + rest[open + 1..]
            .iter()
            .position(|l| l.trim() == "```")
            .expect("the yaml block ends");
    serde_yaml_ng::from_str(&rest[open + 1..close].join("\n")).expect("the recipe is valid YAML")
}

/// Lays out what the recipe's setup commands leave in `verifier`: the
/// release binary and the SDK venv, as links to the ones under test.
fn lay_out_verifier(verifier: &Path) {
    let target = verifier.join("target");
    std::fs::create_dir_all(target.join("release")).unwrap();
    std::os::unix::fs::symlink(
        assert_cmd::cargo::cargo_bin(BIN),
        target.join("release").join(BIN),
    )
    .unwrap();
    std::os::unix::fs::symlink(sdk_venv(), target.join("sdk-venv")).unwrap();
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

/// Copies the directory `src` to `dst` (`cp -a`).
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

/// One command of a recipe, run by bash in `cwd` with `env` (and without
/// `PYTHON`, so the recipe's own `--python` is what counts).
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
/// job with the interpreter laid out there, and the merge of the matrix and
/// the suites job is one non-partial record whose verdict follows its runs'.
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
                .ends_with("verifier/target/sdk-venv/bin/python"),
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
    let tool = st["predicate"]["configuration"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["annotations"]["evidence_sha256"].is_string())
        .unwrap();
    assert!(tool["annotations"].get("partial").is_none(), "{tool}");
    assert_ne!(st["predicate"]["result"], "FAILED");
}

#[test]
fn github_actions_recipe_certifies_the_plugin_repository_and_merges_into_one_record() {
    let fixture = fixture_repo(&[]);
    let yaml = readme_yaml("GitHub Actions");
    let base = tempfile::tempdir().unwrap();
    let store = base.path().join("artifacts");
    let mut ran = Ran {
        verifier_exits: Vec::new(),
        merged: PathBuf::new(),
        runs: Vec::new(),
        setup: Vec::new(),
    };
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
            let work = base.path().join(format!("job-{n}")).join("work");
            let temp = base.path().join(format!("job-{n}")).join("temp");
            std::fs::create_dir_all(&work).unwrap();
            std::fs::create_dir_all(&temp).unwrap();
            let expand = |s: &str| {
                s.replace("${{ runner.temp }}", &temp.display().to_string())
                    .replace("${{ matrix.share }}", share.as_deref().unwrap_or(""))
            };
            let env = BTreeMap::from([("RUNNER_TEMP", temp.display().to_string())]);
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
                            lay_out_verifier(&path);
                        } else {
                            checkout(&fixture, &path);
                        }
                        continue;
                    }
                    Some("actions/upload-artifact@v4") => {
                        let path = PathBuf::from(with("path").unwrap());
                        if path.exists() {
                            copy_dir(&path, &store.join(with("name").unwrap()));
                        }
                        continue;
                    }
                    Some("actions/download-artifact@v4") => {
                        let into = PathBuf::from(with("path").unwrap());
                        for entry in std::fs::read_dir(&store).unwrap() {
                            let entry = entry.unwrap();
                            copy_dir(&entry.path(), &into.join(entry.file_name()));
                        }
                        continue;
                    }
                    Some(other) => panic!("job {name}: unexpected action {other}"),
                    None => {}
                }
                let command = expand(step["run"].as_str().expect("a run step"));
                let command = command.trim();
                if command.contains("cargo ") {
                    ran.setup.push(command.to_string());
                    continue;
                }
                let out = bash(command, &work, &env);
                let code = out.status.code().unwrap_or(-1);
                assert!(command.starts_with("verifier/target/release/verify-coding-candidates "));
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
    assert_eq!(
        ran.setup,
        [
            "cd verifier && cargo xtask sdk && cargo build --release",
            "cd verifier && cargo xtask sdk && cargo build --release",
            "cd verifier && cargo xtask sdk && cargo build --release",
            "cd verifier && cargo build --release",
        ]
    );
    check(&ran);
}

#[test]
fn gitlab_recipe_certifies_the_plugin_repository_and_merges_into_one_record() {
    let fixture = fixture_repo(&[]);
    let yaml = readme_yaml("GitLab CI");
    let base = tempfile::tempdir().unwrap();
    // Artifacts by job name: (project dir, relative paths) per instance.
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
        if name.starts_with('.') {
            continue;
        }
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
            let mut env = BTreeMap::from([("CI_PROJECT_DIR", project.display().to_string())]);
            if let (Some(i), Some(t)) = (node, total) {
                env.insert("CI_NODE_INDEX", i.to_string());
                env.insert("CI_NODE_TOTAL", t.to_string());
            }
            let expand = |s: &str| {
                let mut s = s.to_string();
                for (k, v) in &env {
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
            let mut lines = Vec::new();
            for item in job["script"].as_sequence().unwrap() {
                match item {
                    Yaml::Sequence(inner) => {
                        lines.extend(inner.iter().map(|l| l.as_str().unwrap().to_string()))
                    }
                    other => lines.push(other.as_str().unwrap().to_string()),
                }
            }
            let mut failed = false;
            for line in &lines {
                if line.contains("git clone") || line.contains("cargo ") {
                    ran.setup.push(line.clone());
                    if line.contains("git clone") {
                        lay_out_verifier(&project.join("../verifier"));
                    }
                    continue;
                }
                if failed {
                    continue;
                }
                let out = bash(line, &project, &env);
                let code = out.status.code().unwrap_or(-1);
                assert!(line.starts_with("../verifier/target/release/verify-coding-candidates "));
                ran.verifier_exits.push((line.clone(), code));
                if line.contains(" merge ") {
                    ran.merged = project.join("../evidence");
                } else {
                    let dir = expand(
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
            for line in job["after_script"].as_sequence().into_iter().flatten() {
                let out = bash(line.as_str().unwrap(), &project, &env);
                assert!(out.status.success(), "after_script: {}", both(&out));
            }
            let paths: Vec<String> = job["artifacts"]["paths"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|p| expand(p.as_str().unwrap()))
                .collect();
            for p in &paths {
                assert!(project.join(p).is_dir(), "artifact {p} of job {name}");
            }
            let junit = expand(job["artifacts"]["reports"]["junit"].as_str().unwrap());
            assert!(project.join(&junit).is_file(), "junit report {junit}");
            artifacts
                .entry(name.to_string())
                .or_default()
                .push((project.clone(), paths));
        }
    }
    assert_eq!(
        ran.setup,
        [
            "git clone --depth 1 https://example.invalid/verify-coding-candidates.git ../verifier",
            "(cd ../verifier && cargo xtask sdk && cargo build --release)"
        ]
        .repeat(4)
    );
    check(&ran);
}
