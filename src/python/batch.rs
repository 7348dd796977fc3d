//! One probe process for many jobs: the jobs go in as one JSON list on the
//! probe's stdin (its only argument is `-`; kept in `<log stem>.stdin`: a
//! command line holds 128 KiB at most per argument, which a few hundred
//! jobs, or one job carrying a manifest's pages, exceed), one answer per
//! job comes back, in order, as a
//! JSON list whose items are `{"report": ...}` (what the SDK did, its
//! refusals included) or `{"error": "<type>: <message>"}` (the probe could
//! not observe that job; never read as the SDK's decision). Used by the
//! `admission` and `dependencies` gates, so the SDK is imported once per
//! kind of probe, not once per candidate.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What a batch probe printed for one job.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer<R> {
    /// What the SDK did.
    Report(Box<R>),
    /// Why the probe could not observe the job.
    Error(String),
}

/// Where and how a batch probe runs.
#[derive(Debug, Clone, Copy)]
pub struct BatchProbe<'a> {
    /// Put before the interpreter (`unshare --net --`); empty: none.
    pub wrapper: &'a [String],
    /// The genuine interpreter.
    pub python: &'a Path,
    /// Probe name, for messages (`admission_probe`).
    pub name: &'a str,
    /// The probe's source.
    pub source: &'a str,
    /// Working directory.
    pub cwd: &'a Path,
    /// Log stem (`.cmd`, `.stdout`, `.stderr`).
    pub log_stem: &'a Path,
}

/// Runs `probe` once for every job of `jobs`, with `env` and a time limit
/// of `per_job` for each job, and returns each job's outcome in order:
/// `Err` naming why when the probe could not observe it: the process
/// failed or answered another number of jobs (which fails every job), or
/// that job alone erred. No process is started for no job.
pub fn run_batch<J: Serialize, R: DeserializeOwned>(
    probe: &BatchProbe<'_>,
    jobs: &[J],
    env: BTreeMap<String, String>,
    per_job: Duration,
) -> Vec<Result<R, String>> {
    if jobs.is_empty() {
        return Vec::new();
    }
    let args = vec!["-".to_string()];
    let stdin = serde_json::to_vec(jobs).expect("jobs serialize");
    let kept = crate::process::with_ext(probe.log_stem, "stdin");
    let keep = crate::process::create_log_dir(probe.log_stem)
        .map_err(|e| e.to_string())
        .and_then(|()| std::fs::write(&kept, &stdin).map_err(|e| e.to_string()));
    if let Err(e) = keep {
        let why = format!(
            "cannot keep the {} jobs at {}: {e}",
            probe.name,
            kept.display()
        );
        return jobs.iter().map(|_| Err(why.clone())).collect();
    }
    let count = u32::try_from(jobs.len()).unwrap_or(u32::MAX);
    let answers: Result<Vec<Answer<R>>, String> = super::Probe {
        python: probe.python,
        name: probe.name,
        source: probe.source,
        args: &args,
        cwd: probe.cwd,
        env,
        log_stem: probe.log_stem,
        timeout: per_job.saturating_mul(count),
    }
    .run_in_with_stdin(probe.wrapper, stdin)
    .and_then(|answers: Vec<Answer<R>>| {
        if answers.len() == jobs.len() {
            Ok(answers)
        } else {
            Err(format!(
                "the {} answered {} job(s) for {} archive(s); see {}.stdout",
                probe.name.replace('_', " "),
                answers.len(),
                jobs.len(),
                probe.log_stem.display()
            ))
        }
    });
    match answers {
        Ok(answers) => answers
            .into_iter()
            .map(|answer| match answer {
                Answer::Report(r) => Ok(*r),
                Answer::Error(e) => Err(format!(
                    "the {} could not observe this archive: {e}",
                    probe.name.replace('_', " ")
                )),
            })
            .collect(),
        Err(e) => jobs.iter().map(|_| Err(e.clone())).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs far past the 128 KiB one argument holds go in on stdin, arrive
    /// whole, and are kept at `<log stem>.stdin`.
    #[test]
    fn jobs_longer_than_an_argument_holds_reach_the_probe_and_are_kept() {
        let python = std::env::var_os("PYTHON")
            .filter(|p| !p.is_empty())
            .expect("PYTHON is set (`cargo xtask test`)");
        let d = tempfile::tempdir().unwrap();
        let log_stem = d.path().join("logs/probe");
        let probe = BatchProbe {
            wrapper: &[],
            python: Path::new(&python),
            name: "echo_probe",
            source: "import json, sys\n\
                     jobs = json.load(sys.stdin) if sys.argv[1] == '-' else None\n\
                     print(json.dumps([{'report': len(j['text'])} for j in jobs]))\n",
            cwd: d.path(),
            log_stem: &log_stem,
        };
        let big = "x".repeat(300 * 1024);
        let jobs = vec![
            serde_json::json!({ "text": big }),
            serde_json::json!({ "text": "y" }),
        ];
        let answers: Vec<Result<usize, String>> =
            run_batch(&probe, &jobs, BTreeMap::new(), Duration::from_secs(60));
        assert_eq!(answers, vec![Ok(300 * 1024), Ok(1)]);
        let kept = std::fs::read(d.path().join("logs/probe.stdin")).unwrap();
        assert_eq!(kept, serde_json::to_vec(&jobs).unwrap());
    }
}
