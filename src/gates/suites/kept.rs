//! The `suites` gate's observation rebuilt from what an evidence directory
//! keeps, for `replay`: the collection record each run wrote
//! (`DIR/logs/suites/<run>-collection.json`), its JUnit report
//! (`DIR/logs/suites/<run>.xml`), what it left running in its sandbox
//! (`DIR/logs/suites/<run>-left-running.json`), how its process ended (`status:` and
//! `timed_out:` of `DIR/logs/suites/<run>.cmd`), the staged tree
//! (`DIR/staging/tree` when kept, else `DIR/staging/source`, for the
//! profile's paths) and DIR/extracted's
//! entries. [`super::decide`] run on it gives the checks the kept
//! observations support, independently of what `evidence.json` claims.
//!
//! Not kept, so never compared ([`NOT_REDECIDED`]): the sandbox each run
//! had (`<run>/sandbox`), the historical marks (`<run>/historical-not-collected`
//! compares the items' absolute paths with the run's own copy of the tree,
//! which lies at the directory's original path), DIR/extracted's digests
//! before the runs (`extracted/extraction-unchanged`) and processes the run
//! left behind (`<run>/stragglers`).

use super::observe::{list_root, output_tail, read_record};
use super::record::{
    CollectionObs, ExtractionObservation, Observation, ProcessRun, PytestObs, RunObservation,
};
use super::{parse_junit, xfail_map, CollectAnswer};
use crate::evidence::sandbox::SandboxRecord;
use crate::evidence::SuiteTestCase;
use crate::profile::{CandidateSpec, SuitesOptions};
use std::path::Path;

/// Check names (after `<run>/`) this rebuilt observation cannot decide, each
/// with the observation the directory does not keep.
pub(crate) const NOT_REDECIDED: [(&str, &str); 4] = [
    (
        "sandbox",
        "the sandbox a run had is not kept as a raw observation",
    ),
    (
        "historical-not-collected",
        "the items' file paths name the run's copy of the tree at the directory's original path",
    ),
    (
        "extraction-unchanged",
        "DIR/extracted's digests from before the runs are not kept",
    ),
    (
        "stragglers",
        "whether processes outlived the run is not kept",
    ),
];

/// The observation of the runs kept in `dir` under the profile's `[suites]`
/// options `opts` and candidates `candidates`: like the gate, no run when a
/// suite path or the configuration is not in the staged tree, else the
/// `tree` run then the `extracted` one (whose source-root variable pointed
/// at DIR/extracted).
///
/// # Errors
/// When `dir/staging/source` is missing (a merged directory keeps none):
/// nothing can be re-decided.
pub(crate) fn kept_observation(
    dir: &Path,
    opts: &SuitesOptions,
    candidates: &[CandidateSpec],
    commit: &str,
) -> Result<Observation, String> {
    // The suites ran DIR/staging/tree when the stage gate wrote it (some
    // path carries export-ignore), else DIR/staging/source.
    let tree = dir.join("staging").join("tree");
    let staged = if tree.is_dir() {
        tree
    } else {
        dir.join("staging").join("source")
    };
    if !staged.is_dir() {
        return Err("DIR/staging/source is not kept".into());
    }
    let missing_paths: Vec<String> = opts
        .paths
        .iter()
        .filter(|p| !staged.join(p).exists())
        .cloned()
        .collect();
    let missing_historical: Vec<String> = opts
        .historical
        .iter()
        .filter(|p| !staged.join(p).is_file())
        .cloned()
        .collect();
    let config_present = opts.config.as_ref().map(|c| staged.join(c).is_file());
    let mut obs = Observation {
        commit: commit.to_string(),
        missing_paths,
        missing_historical,
        config_present,
        runs: Vec::new(),
        extraction: None,
    };
    if config_present == Some(false) || !obs.missing_paths.is_empty() {
        return Ok(obs);
    }
    obs.runs = ["tree", "extracted"]
        .iter()
        .map(|name| kept_run_with_reruns(dir, name, opts))
        .collect();
    let root = dir.join("extracted");
    let (entries, dirs) = list_root(&root);
    obs.extraction = Some(ExtractionObservation {
        root: root.display().to_string(),
        candidates: candidates.iter().map(|c| c.folder().to_string()).collect(),
        entries,
        dirs,
        before: Default::default(),
        after: Default::default(),
    });
    Ok(obs)
}

/// The run `name` as the directory keeps it, with its reruns: in order, as
/// many as the profile allows and the directory keeps.
fn kept_run_with_reruns(dir: &Path, name: &str, opts: &SuitesOptions) -> RunObservation {
    let mut run = kept_run(
        dir,
        name,
        name,
        &format!("roots/suites/{name}/source"),
        opts.timeout_secs,
    );
    // The reruns the directory keeps, in order, as many as the
    // profile allows.
    run.reruns = (1..=opts.retries)
        .map(|k| format!("{name}-rerun-{k}"))
        .take_while(|rerun| {
            dir.join("logs")
                .join("suites")
                .join(format!("{rerun}.cmd"))
                .is_file()
        })
        .enumerate()
        .map(|(k, rerun)| {
            let cwd = format!("roots/suites/{name}/rerun-{}/source", k + 1);
            kept_run(dir, &rerun, name, &cwd, opts.timeout_secs)
        })
        .collect();
    run
}

/// One pytest invocation `name` (a run, or one of its reruns) of the run
/// `run`, in the copy `cwd` (relative to DIR), as `dir/logs/suites` keeps it.
fn kept_run(dir: &Path, name: &str, run: &str, cwd: &str, timeout_secs: u64) -> RunObservation {
    let logs = dir.join("logs").join("suites");
    let record_rel = format!("logs/suites/{name}-collection.json");
    let answer = read_record(&dir.join(&record_rel), &record_rel);
    let xfails = match &answer {
        CollectAnswer::Collected(c) => xfail_map(c),
        _ => Default::default(),
    };
    let junit_rel = format!("logs/suites/{name}.xml");
    let junit_written = dir.join(&junit_rel).is_file();
    let report: Result<Vec<SuiteTestCase>, String> = if junit_written {
        std::fs::read_to_string(dir.join(&junit_rel))
            .map_err(|e| format!("{junit_rel}: cannot read: {e}"))
            .and_then(|text| parse_junit(&text, &xfails))
    } else {
        Err(format!("pytest wrote no JUnit report ({junit_rel})"))
    };
    let (collection, pytest) = kept_process(&logs, name, answer);
    RunObservation {
        name: name.to_string(),
        cwd: cwd.to_string(),
        source_root: (run == "extracted").then(|| "extracted".to_string()),
        python: String::new(),
        timeout_secs,
        collection,
        pytest,
        junit_rel,
        junit_written,
        report,
        sandbox: SandboxRecord::unconfined("not kept", None),
        left_running: crate::isolation::left_running::kept(
            &logs.join(format!("{name}-left-running.json")),
        ),
        reruns: Vec::new(),
    }
}

/// How the invocation `name`'s process ended, from its `.cmd`, `.stdout`
/// and `.stderr` logs under `logs` (DIR/logs/suites), as the collection's
/// process and pytest's run; not started when its `.cmd` is not kept.
fn kept_process(logs: &Path, name: &str, answer: CollectAnswer) -> (CollectionObs, PytestObs) {
    let cmd_rel = format!("logs/suites/{name}.cmd");
    let read = |ext: &str| std::fs::read_to_string(logs.join(format!("{name}.{ext}")));
    match read("cmd") {
        Ok(cmd) => {
            let (status, exit_code, timed_out) = ended(&cmd);
            let tail = output_tail(
                &read("stdout").unwrap_or_default(),
                &read("stderr").unwrap_or_default(),
            );
            let log = format!("logs/suites/{name}.stdout and logs/suites/{name}.stderr");
            (
                CollectionObs {
                    process: ProcessRun {
                        status: status.clone(),
                        exit_code,
                        timed_out,
                        tail,
                        log: log.clone(),
                        running: None,
                    },
                    answer,
                },
                PytestObs::Ran {
                    exit_code,
                    status,
                    timed_out,
                    stragglers_killed: false,
                    log,
                },
            )
        }
        Err(e) => (
            CollectionObs {
                process: ProcessRun {
                    status: "not started".into(),
                    exit_code: None,
                    timed_out: false,
                    tail: String::new(),
                    log: cmd_rel.clone(),
                    running: None,
                },
                answer,
            },
            PytestObs::NotRun {
                error: format!("{cmd_rel}: {e}"),
            },
        ),
    }
}

/// `(status, exit code, timed out)` from a `.cmd` record's `status:` and
/// `timed_out:` lines (`src/process.rs` writes them): the exit code is that
/// of `exit status N`, none for a process stopped by a signal or the time
/// limit.
fn ended(cmd: &str) -> (String, Option<i32>, bool) {
    let field = |key: &str| {
        cmd.lines()
            .rev()
            .find_map(|l| l.strip_prefix(key).map(str::trim))
            .map(str::to_string)
    };
    let status = field("status:").unwrap_or_else(|| "not recorded".into());
    let timed_out = field("timed_out:").as_deref() == Some("true");
    let code = status
        .strip_prefix("exit status ")
        .and_then(|n| n.parse().ok())
        .filter(|_| !timed_out);
    (status, code, timed_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cmd_record_gives_status_exit_code_and_time_limit() {
        let cmd = "cwd: /x\narg: status: exit status 0\nstatus: exit status 1\ntimed_out: false\n";
        assert_eq!(ended(cmd), ("exit status 1".into(), Some(1), false));
        let cmd = "status: killed by signal 9\ntimed_out: true\n";
        assert_eq!(ended(cmd), ("killed by signal 9".into(), None, true));
        assert_eq!(ended(""), ("not recorded".into(), None, false));
    }
}
