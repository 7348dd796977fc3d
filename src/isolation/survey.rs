//! The end-of-run survey: which processes tied to a run still exist, and
//! stopping them (TERM, grace, KILL) while saying which needed what.
//!
//! A process is tied to the run by its process group (one the run created),
//! by an environment marker (`NAME=value`, set only in the run's children), or
//! by its working directory (under the run's private roots). Never by program
//! name: a survey can therefore not reach an unrelated program of the same
//! name.

use super::procfs::{self, ProcInfo};
use rustix::process::{kill_process, Pid, Signal};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What ties a process to the run.
#[derive(Debug, Clone)]
pub struct SurveyRules {
    /// Process groups the run created.
    pub pgids: BTreeSet<i32>,
    /// The environment marker's name.
    pub marker_name: String,
    /// The environment marker's value (unique per run).
    pub marker_value: String,
    /// The run's private roots: a process whose cwd is below one is tied.
    pub roots: Vec<PathBuf>,
    /// Pids never matched (the harness itself).
    pub exclude: BTreeSet<i32>,
}

/// A process found by the survey.
#[derive(Debug, Clone, Serialize)]
pub struct Survivor {
    /// Host pid.
    pub pid: i32,
    /// Parent pid.
    pub ppid: i32,
    /// Process group.
    pub pgid: i32,
    /// Session.
    pub sid: i32,
    /// `/proc/<pid>/stat` state letter.
    pub state: String,
    /// `pgid`, `env-marker` and/or `cwd`: why it is tied to the run.
    pub matched_by: Vec<String>,
    /// Working directory, if readable.
    pub cwd: Option<String>,
    /// Command line (for the reader; never used to match).
    pub cmdline: String,
    #[serde(skip)]
    seen: Option<ProcInfo>,
}

/// How a survivor was stopped.
#[derive(Debug, Clone, Serialize)]
pub struct Stopped {
    /// Host pid.
    pub pid: i32,
    /// `exited before a signal`, `TERM`, `KILL` or `still running after KILL`.
    pub stopped_by: String,
}

/// Every live process tied to the run by `rules`.
pub fn survey(rules: &SurveyRules) -> Vec<Survivor> {
    let marker = format!("{}={}", rules.marker_name, rules.marker_value);
    let roots: Vec<PathBuf> = rules
        .roots
        .iter()
        .flat_map(|r| {
            let mut v = vec![r.clone()];
            if let Ok(c) = r.canonicalize() {
                v.push(c);
            }
            v
        })
        .collect();
    let mut out = Vec::new();
    for p in procfs::all().into_values() {
        if p.exited() || rules.exclude.contains(&p.pid) || p.pid == 1 {
            continue;
        }
        let mut matched_by = Vec::new();
        if rules.pgids.contains(&p.pgid) {
            matched_by.push("pgid".to_string());
        }
        if procfs::environ(p.pid)
            .is_some_and(|env| env.iter().any(|e| e.as_slice() == marker.as_bytes()))
        {
            matched_by.push("env-marker".to_string());
        }
        let cwd = procfs::cwd(p.pid);
        if cwd
            .as_ref()
            .is_some_and(|c| roots.iter().any(|r| procfs::is_under(c, r)))
        {
            matched_by.push("cwd".to_string());
        }
        if matched_by.is_empty() {
            continue;
        }
        out.push(Survivor {
            pid: p.pid,
            ppid: p.ppid,
            pgid: p.pgid,
            sid: p.sid,
            state: p.state.to_string(),
            matched_by,
            cwd: cwd.map(|c| c.display().to_string()),
            cmdline: procfs::cmdline(p.pid),
            seen: Some(p),
        });
    }
    out
}

/// Stops `survivors`: SIGTERM to each, up to `grace` for all to exit, SIGKILL
/// to the rest, then up to `grace` again. Pid reuse is detected by start time.
pub fn stop_all(survivors: &[Survivor], grace: Duration) -> Vec<Stopped> {
    let seen: Vec<&ProcInfo> = survivors.iter().filter_map(|s| s.seen.as_ref()).collect();
    stop_processes(&seen, grace)
}

/// Stops `procs` (as first seen): SIGTERM, `grace`, SIGKILL, `grace`.
pub fn stop_processes(procs: &[&ProcInfo], grace: Duration) -> Vec<Stopped> {
    let mut result: Vec<Stopped> = Vec::new();
    let mut termed = Vec::new();
    for p in procs {
        if !procfs::still_running(p) {
            result.push(Stopped {
                pid: p.pid,
                stopped_by: "exited before a signal".into(),
            });
            continue;
        }
        if let Some(pid) = Pid::from_raw(p.pid) {
            let _ = kill_process(pid, Signal::TERM);
        }
        termed.push(*p);
    }
    wait_until_gone(&termed, grace);
    let mut killed = Vec::new();
    for p in termed {
        if procfs::still_running(p) {
            if let Some(pid) = Pid::from_raw(p.pid) {
                let _ = kill_process(pid, Signal::KILL);
            }
            killed.push(p);
        } else {
            result.push(Stopped {
                pid: p.pid,
                stopped_by: "TERM".into(),
            });
        }
    }
    wait_until_gone(&killed, grace);
    for p in killed {
        result.push(Stopped {
            pid: p.pid,
            stopped_by: if procfs::still_running(p) {
                "still running after KILL".into()
            } else {
                "KILL".into()
            },
        });
    }
    result.sort_by_key(|s| s.pid);
    result
}

fn wait_until_gone(procs: &[&ProcInfo], grace: Duration) {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && procs.iter().any(|p| procfs::still_running(p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_marker_and_cwd_and_stops_with_term() {
        let dir = tempfile::tempdir().unwrap();
        let value = format!("survey-test-{}", std::process::id());
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "exec sleep 30"])
            .current_dir(dir.path())
            .env("VCC_SURVEY_TEST", &value)
            .spawn()
            .unwrap();
        let rules = SurveyRules {
            pgids: BTreeSet::new(),
            marker_name: "VCC_SURVEY_TEST".into(),
            marker_value: value,
            roots: vec![dir.path().to_path_buf()],
            exclude: BTreeSet::from([std::process::id() as i32]),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut found = survey(&rules);
        while found.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            found = survey(&rules);
        }
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pid, child.id() as i32);
        assert!(found[0].matched_by.contains(&"cwd".to_string()));
        // `sleep` may not have exec'd yet when first seen; the marker holds either way.
        assert!(found[0].matched_by.contains(&"env-marker".to_string()));
        let stopped = stop_all(&found, Duration::from_secs(3));
        let _ = child.wait();
        assert_eq!(stopped.len(), 1);
        assert_eq!(stopped[0].stopped_by, "TERM");
    }
}
