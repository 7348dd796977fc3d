//! The official builds of a run, from one interpreter (`src/python/build_host.py`).
//!
//! Each candidate's build is the `ChildSpec` of [`super::official_build_spec`]
//! (its working directory, environment, output folder, timeout and log
//! stem). Run as a process each, every build paid the SDK's import of
//! `langbot_plugin.cli` (about 0.5 s of CPU, most of a build's: measured on
//! the fixture, three builds took 2.1 CPU-s as processes and 0.7 forked).
//! The build host imports it once and forks one child per build; a child
//! runs the package's `__main__` as `-m` does, in the spec's directory and
//! environment, in its own process group, with its output in the spec's
//! log files. A child whose folder holds a path the import looked up
//! (`data/.env`) replaces itself with a fresh interpreter of the build's
//! command line instead. The host's own logs are
//! `logs/lbp-build/host/build-host.*`; each build still gets `<stem>.stdout`,
//! `.stderr` and a `.cmd` that says how it ran; the host's signals and
//! reaps join the run's journal.

use super::BuildRun;
use crate::evidence::SignalRecord;
use crate::process::{self, log_cap, ChildSpec};
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the host reports for one build (`build_host.py`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub(super) struct HostResult {
    /// The forked child's pid (its process group too).
    #[serde(default)]
    pub pid: Option<u32>,
    /// Exit status, when it exited.
    #[serde(default)]
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(default)]
    pub signal: Option<i32>,
    /// Stopped at the spec's timeout.
    #[serde(default)]
    pub timed_out: bool,
    /// Its group still had members once it exited; they were stopped.
    #[serde(default)]
    pub stragglers_killed: bool,
    /// Wall-clock time from the fork to the reap.
    #[serde(default)]
    pub duration_ms: u64,
    /// CPU time of the child and what it waited for (user + system).
    #[serde(default)]
    pub cpu_ms: Option<u64>,
    /// Why the child did not use the host's import and replaced itself with
    /// a fresh interpreter of the build's own command line.
    #[serde(default)]
    pub fresh: Option<String>,
    /// Why the host could not start it.
    #[serde(default)]
    pub error: Option<String>,
    /// The candidate's `spec.pages` as the SDK's build writes them,
    /// computed by the host before the builds; `None` when its child gave
    /// no answer.
    #[serde(default)]
    pub build_pages: Option<PagesAnswer>,
}

/// The host's answer for one candidate's pages: `build_pages` of
/// `manifest_pages.py` (`{"value": NODE}`, `{"error": TEXT}`, or null).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub(super) struct PagesAnswer {
    /// The document, as the manifest probe reports it.
    pub report: serde_json::Value,
}

/// How long the host may spend on every candidate's pages together before
/// the builds start (`build_host.py`'s `all_pages`): a child that has not
/// answered by then is stopped, and the `archive-members` probe computes
/// those pages itself. Each takes milliseconds; a manifest that makes its
/// child hang delays the run's builds by this much at most.
pub(super) const PAGES_BUDGET: Duration = Duration::from_secs(30);

/// The host's process: `python -I <bytecode options> -c BUILD_HOST`, the
/// jobs (each spec's command line, folder, environment, logs and timeout)
/// as JSON on stdin, from its own private HOME, in the first build's environment with that
/// HOME and TMPDIR (so whatever the SDK reads from the environment at
/// import time, such as `LANG`, is what each build has).
///
/// # Errors
/// When `specs` is empty.
pub(super) fn host_spec(
    python: &Path,
    specs: &[&ChildSpec],
    width: usize,
    roots: (&Path, &Path),
    log_stem: PathBuf,
) -> Result<ChildSpec, String> {
    let first = specs.first().ok_or("no build to run")?;
    let mut env = first.env.clone();
    env.insert("HOME".into(), roots.0.display().to_string());
    env.insert("TMPDIR".into(), roots.1.display().to_string());
    let jobs: Vec<serde_json::Value> = specs
        .iter()
        .map(|s| {
            let (stdout, stderr) = logs(s);
            let argv: Vec<String> = std::iter::once(s.program.display().to_string())
                .chain(s.args.iter().cloned())
                .collect();
            json!({
                "argv": argv, "cwd": s.cwd, "out": out_arg(s), "stdout": stdout, "stderr": stderr,
                "env": s.env, "timeout_secs": s.timeout.as_secs_f64(),
            })
        })
        .collect();
    // The pages first, then every build may run after every other, each to
    // its timeout, plus each one's TERM grace: the host's own limit is never
    // the one hit.
    let total: Duration = PAGES_BUDGET
        + specs
            .iter()
            .map(|s| s.timeout + Duration::from_secs(6))
            .sum::<Duration>();
    Ok(ChildSpec {
        program: python.to_path_buf(),
        args: ["-I".to_string()]
            .into_iter()
            .chain(crate::python::bytecode_options())
            .chain(["-c".into(), crate::python::BUILD_HOST.into()])
            .collect(),
        cwd: roots.0.to_path_buf(),
        env,
        timeout: total + Duration::from_secs(30),
        log_stem,
        // On stdin: a command line holds 128 KiB at most per argument,
        // about 140 candidates' jobs.
        stdin: Some(
            json!({ "width": width, "pages_budget_secs": PAGES_BUDGET.as_secs_f64(), "jobs": jobs })
                .to_string()
                .into_bytes(),
        ),
    })
}

/// The `-o` argument of an official build spec.
fn out_arg(spec: &ChildSpec) -> &str {
    spec.args.last().map(String::as_str).unwrap_or_default()
}

/// `<stem>.stdout`, `<stem>.stderr` of a build.
fn logs(spec: &ChildSpec) -> (PathBuf, PathBuf) {
    (
        process::with_ext(&spec.log_stem, "stdout"),
        process::with_ext(&spec.log_stem, "stderr"),
    )
}

/// Creates (empty) every build's log files, which the forked children
/// append to.
///
/// # Errors
/// The first file that cannot be created.
pub(super) fn create_logs(specs: &[&ChildSpec]) -> Result<(), String> {
    for s in specs {
        process::create_log_dir(&s.log_stem).map_err(|e| e.to_string())?;
        let (out, err) = logs(s);
        for p in [&out, &err] {
            process::create_log(p).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Runs the host and returns one result per spec, in order, or why the host
/// gave none (it could not start, was interrupted, or ended without a
/// result for every build).
pub(super) fn run(host: &ChildSpec, n: usize) -> Result<Vec<HostResult>, String> {
    let started_ms = process::journal::clock_ms();
    let out = process::run(host).map_err(|e| e.to_string())?;
    // One line per build, then the import's lookups (kept in the log) and
    // the host's signals and reaps, which join the run's journal.
    let lines: Vec<serde_json::Value> = out
        .stdout_text()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if let Some(signals) = lines.iter().find_map(|v| v.get("signals")) {
        let records: Vec<SignalRecord> =
            serde_json::from_value(signals.clone()).unwrap_or_default();
        process::journal::adopt(records, started_ms, super::GATE);
    }
    let results: Vec<HostResult> = lines
        .into_iter()
        .filter(|v| v.get("import_lookups").is_none())
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect();
    if results.len() != n {
        return Err(format!(
            "the build host {} with {} of {n} build results; last output:\n{}\nfull output in {} and {}",
            out.describe(),
            results.len(),
            out.tail(20),
            out.logs.0.display(),
            out.logs.1.display()
        ));
    }
    Ok(results)
}

/// One build's [`BuildRun`] from the host's result and its log files
/// (capped first, as every step's are), and its `.cmd` record written.
pub(super) fn build_run(spec: &ChildSpec, host: &ChildSpec, result: &HostResult) -> BuildRun {
    let (out_path, err_path) = logs(spec);
    for log in [&out_path, &err_path] {
        let _ = log_cap::cap_log(log, log_cap::LOG_HEAD, log_cap::LOG_TAIL);
    }
    let stdout = String::from_utf8_lossy(&process::read_capped(&out_path)).into_owned();
    let stderr = String::from_utf8_lossy(&process::read_capped(&err_path)).into_owned();
    let outcome = outcome(result);
    write_cmd(spec, host, result, &outcome);
    let tail = process::output_tail(&stdout, &stderr, 20);
    BuildRun {
        status: result.code,
        success: result.code == Some(0) && !result.timed_out,
        timed_out: result.timed_out,
        stragglers_killed: result.stragglers_killed,
        duration_ms: result.duration_ms,
        outcome,
        tail,
        logs: format!("{} and {}", out_path.display(), err_path.display()),
        said_manifest_not_found: stdout.contains("Plugin manifest not found")
            || stderr.contains("Plugin manifest not found"),
        file_errors: super::file_errors::parse(&format!("{stdout}\n{stderr}")),
    }
}

/// How a build ended, in the words of [`process::ChildOutput::describe`].
fn outcome(result: &HostResult) -> String {
    match (result.timed_out, result.code, result.signal, &result.error) {
        (_, _, _, Some(e)) => format!("could not be started by the build host: {e}"),
        (true, ..) => "timed out and was stopped".into(),
        (_, Some(code), ..) => format!("exit status {code}"),
        (_, None, Some(sig), _) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}

/// `<stem>.cmd`: what ran, in the shape of every step's record, saying it
/// was forked from the host rather than started by the verifier.
fn write_cmd(spec: &ChildSpec, host: &ChildSpec, result: &HostResult, outcome: &str) {
    let how = match &result.fresh {
        None => "imported langbot_plugin.cli, then forked; this build ran the package's __main__ \
                 as -m does, with these arguments"
            .to_string(),
        Some(why) => format!(
            "forked, then replaced itself with a fresh interpreter of these arguments (execve): {why}"
        ),
    };
    let mut text = format!(
        "cwd: {}\nprogram: {}\nforked-from: {} (the build host: {how})\n",
        spec.cwd.display(),
        spec.program.display(),
        process::with_ext(&host.log_stem, "cmd").display(),
    );
    for a in &spec.args {
        text.push_str(&format!("arg: {a}\n"));
    }
    for k in spec.env.keys() {
        text.push_str(&format!("env: {k}\n"));
    }
    if let Some(pid) = result.pid {
        text.push_str(&format!("pid: {pid}\n"));
    }
    text.push_str(&format!(
        "status: {outcome}\ntimed_out: {}\nstragglers_killed: {}\nduration_ms: {}\n",
        result.timed_out, result.stragglers_killed, result.duration_ms
    ));
    if let Some(cpu) = result.cpu_ms {
        text.push_str(&format!("cpu_ms: {cpu}\n"));
    }
    let _ = std::fs::write(process::with_ext(&spec.log_stem, "cmd"), text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn python() -> PathBuf {
        match std::env::var_os("PYTHON") {
            Some(p) if !p.is_empty() => p.into(),
            _ => panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)"),
        }
    }

    /// A plugin folder the SDK builds (`acme-p-0.1.0.lbpkg`).
    fn plugin(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join("manifest.yaml"),
            "apiVersion: v1\nkind: Plugin\nmetadata:\n  author: acme\n  name: p\n  version: '0.1.0'\n  \
             label:\n    en_US: P\nspec:\n  components: {}\nexecution:\n  python:\n    path: main.py\n    attr: P\n",
        )
        .unwrap();
        std::fs::write(dir.join("main.py"), "class P: pass\n").unwrap();
    }

    /// The four builds' sources under `root/src` and their specs: `good`
    /// builds, `empty` has no manifest, `late`'s timeout is already over,
    /// and `dotenv` holds the `data/.env` the SDK's import reads
    /// (`RuntimeSettings()`), not UTF-8: it fails that import, so a build
    /// that used the host's import would pass.
    fn four_builds(root: &Path) -> Vec<ChildSpec> {
        let names = [
            ("good", 120.0),
            ("empty", 120.0),
            ("late", 0.0),
            ("dotenv", 120.0),
        ];
        names
            .iter()
            .map(|&(name, timeout)| {
                let src = root.join("src").join(name);
                if name == "empty" {
                    std::fs::create_dir_all(&src).unwrap();
                } else {
                    plugin(&src);
                }
                if name == "dotenv" {
                    std::fs::create_dir_all(src.join("data")).unwrap();
                    std::fs::write(src.join("data/.env"), b"CLOUD_SERVICE_URL=\xff\xfe\n").unwrap();
                }
                let home = root.join("home").join(name);
                std::fs::create_dir_all(&home).unwrap();
                let mut env = process::base_env();
                env.insert("HOME".into(), home.display().to_string());
                env.insert("TMPDIR".into(), home.display().to_string());
                super::super::official_build_spec(
                    &python(),
                    &src,
                    &root.join("out").join(name),
                    env,
                    Duration::from_secs_f64(timeout),
                    root.join("logs").join(name),
                )
            })
            .collect()
    }

    /// Runs `specs` through the host, as `run_builds` does.
    fn through_the_host(root: &Path, specs: &[ChildSpec]) -> (Vec<HostResult>, Vec<BuildRun>) {
        let refs: Vec<&ChildSpec> = specs.iter().collect();
        let host_home = root.join("host");
        std::fs::create_dir_all(&host_home).unwrap();
        let host = host_spec(
            &python(),
            &refs,
            3,
            (&host_home, &host_home),
            root.join("logs/host"),
        )
        .unwrap();
        create_logs(&refs).unwrap();
        let results = run(&host, refs.len()).unwrap();
        let runs = refs
            .iter()
            .zip(&results)
            .map(|(spec, r)| build_run(spec, &host, r))
            .collect();
        (results, runs)
    }

    /// Each build's reap is in the run's journal, and `late`'s TERM.
    fn assert_journaled(results: &[HostResult], late: &HostResult) {
        let journal = process::journal::snapshot();
        for r in results {
            let pid = r.pid.unwrap() as i32;
            assert!(
                journal.iter().any(|j| j.pid == pid
                    && matches!(j.action, crate::evidence::SignalAction::Reap)
                    && j.gate.as_deref() == Some(super::super::GATE)),
                "{journal:?}"
            );
        }
        let late = late.pid.unwrap() as i32;
        assert!(journal
            .iter()
            .any(|j| j.group == Some(late)
                && matches!(j.action, crate::evidence::SignalAction::Term)));
    }

    /// Four builds through the genuine SDK's host ([`four_builds`]). Each
    /// gets its own result, logs and `.cmd`.
    #[test]
    fn each_build_is_its_own_child_with_its_own_outcome_and_logs() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let (results, runs) = through_the_host(root, &four_builds(root));

        assert!(runs[0].success, "{:?}", runs[0]);
        assert!(root.join("out/good/acme-p-0.1.0.lbpkg").is_file());
        // Each candidate's pages, from a child of their own: a value for a
        // plugin, the SDK's refusal without a manifest.
        let pages = |i: usize| results[i].build_pages.as_ref().map(|p| &p.report);
        assert!(
            pages(0).is_some_and(|p| p.get("value").is_some()),
            "{:?}",
            results[0]
        );
        assert!(
            pages(1).is_some_and(|p| p.get("error").is_some()),
            "{:?}",
            results[1]
        );
        // The pages do not share the build's timeout: `late`'s are there.
        assert!(
            pages(2).is_some_and(|p| p.get("value").is_some()),
            "{:?}",
            results[2]
        );
        let cmd = std::fs::read_to_string(root.join("logs/good.cmd")).unwrap();
        assert!(
            cmd.contains("forked-from: ") && cmd.contains("arg: build\n"),
            "{cmd}"
        );
        assert!(
            cmd.contains(&format!("pid: {}\n", results[0].pid.unwrap())),
            "{cmd}"
        );
        let stdout = std::fs::read_to_string(root.join("logs/good.stdout")).unwrap();
        assert!(stdout.contains("Building plugin"));

        assert!(runs[1].said_manifest_not_found, "{:?}", runs[1]);
        assert!(!root.join("out/empty").join("acme-p-0.1.0.lbpkg").exists());

        assert!(runs[2].timed_out && !runs[2].success, "{:?}", runs[2]);
        assert_eq!(runs[2].outcome, "timed out and was stopped");
        assert!(!root.join("out/late/acme-p-0.1.0.lbpkg").exists());

        // The one with `data/.env` ran as a fresh interpreter, and failed as
        // a build started as a process of its own does; the others forked.
        assert!(!runs[3].success, "{:?}", runs[3]);
        assert!(
            runs[3].tail.contains("UnicodeDecodeError"),
            "{}",
            runs[3].tail
        );
        let why = results[3].fresh.as_deref().unwrap_or_default();
        assert!(why.contains("data/.env"), "{:?}", results[3]);
        let cmd = std::fs::read_to_string(root.join("logs/dotenv.cmd")).unwrap();
        assert!(
            cmd.contains("fresh interpreter") && cmd.contains("data/.env"),
            "{cmd}"
        );
        assert!(
            results[..2].iter().all(|r| r.fresh.is_none()),
            "{results:?}"
        );

        assert_journaled(&results, &results[2]);
        // Four children of their own, none the host itself.
        let pids: std::collections::BTreeSet<u32> = results.iter().filter_map(|r| r.pid).collect();
        assert_eq!(pids.len(), 4);
    }

    /// A pages child that never answers (here `build_pages` replaced by an
    /// endless sleep, as a manifest that makes the SDK's reader block would
    /// do) is killed once the pages' budget is spent: the candidate has no
    /// pages (the `archive-members` probe computes them), and its build
    /// still runs, forked, and passes.
    #[test]
    fn a_pages_child_that_never_answers_is_stopped_at_the_budget_and_the_build_still_runs() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let specs = four_builds(root);
        let refs: Vec<&ChildSpec> = vec![&specs[0]];
        let home = root.join("host");
        std::fs::create_dir_all(&home).unwrap();
        let mut host =
            host_spec(&python(), &refs, 2, (&home, &home), root.join("logs/host")).unwrap();
        let hanging = crate::python::BUILD_HOST.replacen(
            "\ndef all_pages(",
            "\ndef build_pages(source):\n    time.sleep(3600)\n\n\ndef all_pages(",
            1,
        );
        assert_ne!(hanging, crate::python::BUILD_HOST);
        for a in &mut host.args {
            if a == crate::python::BUILD_HOST {
                a.clone_from(&hanging);
            }
        }
        let mut jobs: serde_json::Value =
            serde_json::from_slice(host.stdin.as_ref().unwrap()).unwrap();
        assert_eq!(jobs["pages_budget_secs"], PAGES_BUDGET.as_secs_f64());
        jobs["pages_budget_secs"] = json!(1.0);
        host.stdin = Some(jobs.to_string().into_bytes());
        create_logs(&refs).unwrap();
        let results = run(&host, 1).unwrap();

        assert_eq!(results[0].build_pages, None, "{results:?}");
        let run = build_run(&specs[0], &host, &results[0]);
        assert!(run.success, "{run:?}");
        let stderr = std::fs::read_to_string(root.join("logs/host.stderr")).unwrap();
        assert!(
            stderr.contains("no pages of") && stderr.contains("time was spent"),
            "{stderr}"
        );
        let journal = process::journal::snapshot();
        assert!(
            journal
                .iter()
                .any(|j| matches!(j.action, crate::evidence::SignalAction::Kill)
                    && j.cmdline.starts_with("build pages of ")),
            "{journal:?}"
        );
    }

    #[test]
    fn an_outcome_reads_as_a_process_outcome_does() {
        let r = |code, signal, timed_out| HostResult {
            pid: Some(7),
            code,
            signal,
            timed_out,
            stragglers_killed: false,
            duration_ms: 1,
            cpu_ms: None,
            fresh: None,
            error: None,
            build_pages: None,
        };
        assert_eq!(outcome(&r(Some(0), None, false)), "exit status 0");
        assert_eq!(outcome(&r(Some(2), None, false)), "exit status 2");
        assert_eq!(outcome(&r(None, Some(9), false)), "killed by signal 9");
        assert_eq!(
            outcome(&r(None, Some(9), true)),
            "timed out and was stopped"
        );
        let e = HostResult {
            error: Some("cannot fork".into()),
            ..r(None, None, false)
        };
        assert!(outcome(&e).contains("cannot fork"));
    }
}
