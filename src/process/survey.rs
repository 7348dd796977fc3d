//! The end-of-run survey: which processes tied to a run still exist, and
//! stopping them (TERM, grace, KILL) while saying which needed what.
//!
//! A process is tied to the run by its process group (one the run created),
//! by an environment marker (`NAME=value`, set only in the run's children), or
//! by its working directory (under the run's private roots). Never by program
//! name: a survey can therefore not reach an unrelated program of the same
//! name. And only ever a descendant of the harness (through the parent links
//! of `/proc`): the harness is the child subreaper of everything it starts,
//! so every process of its run stays its descendant while alive, and a
//! process of another run (another verifier sharing a root, a marker value
//! or a reused process group id) is never one.
//!
//! Every signal goes through [`crate::process::journal`], so the evidence
//! records it.

use super::procfs::{self, ProcInfo};
use crate::evidence::SignalWhy;
use crate::process::{self as process, journal};
use rustix::process::Signal;
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
    /// `exited before a signal`, `TERM`, `KILL`, `still running after KILL`
    /// or [`NOT_OURS`].
    pub stopped_by: String,
}

/// Every live process tied to the run by `rules`, among the harness's
/// descendants.
pub fn survey(rules: &SurveyRules) -> Vec<Survivor> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    survey_among(&procfs::all(), me, rules, &Reader::proc())
}

/// How [`survey_among`] reads what `/proc` says of a process beyond its stat
/// line (apart so that a test can give a table of its own).
pub struct Reader {
    /// The environment block of a pid.
    pub environ: Box<dyn Fn(i32) -> Option<Vec<Vec<u8>>>>,
    /// The working directory of a pid.
    pub cwd: Box<dyn Fn(i32) -> Option<PathBuf>>,
    /// The command line of a pid.
    pub cmdline: Box<dyn Fn(i32) -> String>,
}

impl Reader {
    /// Reads `/proc`.
    pub fn proc() -> Self {
        Self {
            environ: Box::new(procfs::environ),
            cwd: Box::new(procfs::cwd),
            cmdline: Box::new(procfs::cmdline),
        }
    }
}

/// The processes of `procs` tied to the run by `rules` that descend from
/// `me` (the harness), live, neither excluded nor init.
pub fn survey_among(
    procs: &std::collections::BTreeMap<i32, ProcInfo>,
    me: i32,
    rules: &SurveyRules,
    read: &Reader,
) -> Vec<Survivor> {
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
    for p in procs.values().cloned() {
        if p.exited()
            || rules.exclude.contains(&p.pid)
            || p.pid == 1
            || !journal::descends_in(procs, p.pid, me)
        {
            continue;
        }
        let mut matched_by = Vec::new();
        if rules.pgids.contains(&p.pgid) {
            matched_by.push("pgid".to_string());
        }
        if (read.environ)(p.pid)
            .is_some_and(|env| env.iter().any(|e| e.as_slice() == marker.as_bytes()))
        {
            matched_by.push("env-marker".to_string());
        }
        let cwd = (read.cwd)(p.pid);
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
            cmdline: (read.cmdline)(p.pid),
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

/// Stops `procs` (as first seen): SIGTERM, `grace`, SIGKILL, `grace`,
/// journalled as a survey's.
pub fn stop_processes(procs: &[&ProcInfo], grace: Duration) -> Vec<Stopped> {
    stop_processes_for(procs, grace, SignalWhy::Survey)
}

/// [`stop_processes`], journalled with `why`. `grace` is cut short once the
/// run is interrupted ([`crate::process::grace`]). A process that does not
/// descend from the harness is never signalled: it is reported `not a
/// process of this run`.
pub fn stop_processes_for(procs: &[&ProcInfo], grace: Duration, why: SignalWhy) -> Vec<Stopped> {
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
        if !journal::descends_from_run(p.pid) {
            result.push(Stopped {
                pid: p.pid,
                stopped_by: NOT_OURS.into(),
            });
            continue;
        }
        journal::signal_process(p, Signal::TERM, why);
        termed.push(*p);
    }
    wait_until_gone(&termed, || process::grace(grace));
    let mut killed = Vec::new();
    for p in termed {
        if procfs::still_running(p) {
            journal::signal_process(p, Signal::KILL, why);
            killed.push(p);
        } else {
            result.push(Stopped {
                pid: p.pid,
                stopped_by: "TERM".into(),
            });
        }
    }
    wait_until_gone(&killed, || process::kill_wait(grace));
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

/// `stopped_by` of a process [`stop_processes_for`] refused to signal.
pub const NOT_OURS: &str = "not a process of this run: left alone";

/// Waits up to `grace()` (read on every poll: an interrupt cuts it short)
/// for every process of `procs` to be gone.
fn wait_until_gone(procs: &[&ProcInfo], grace: impl Fn() -> Duration) {
    let started = Instant::now();
    while started.elapsed() < grace() && procs.iter().any(|p| procfs::still_running(p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_descendants_of_the_harness_are_tied_whatever_else_matches() {
        let proc = |pid: i32, ppid: i32, pgid: i32| ProcInfo {
            pid,
            ppid,
            pgid,
            sid: pgid,
            state: 'S',
            start_time: 7,
            ns_pids: vec![pid],
        };
        // 100 is the harness; 101 its child, 102 below it; 200 and 201 are
        // another run's, matching every rule (same group id, marker, root).
        let procs: std::collections::BTreeMap<i32, ProcInfo> = [
            proc(1, 0, 1),
            proc(100, 1, 100),
            proc(101, 100, 101),
            proc(102, 101, 101),
            proc(200, 1, 101),
            proc(201, 200, 101),
        ]
        .into_iter()
        .map(|p| (p.pid, p))
        .collect();
        let rules = SurveyRules {
            pgids: BTreeSet::from([101]),
            marker_name: "M".into(),
            marker_value: "v".into(),
            roots: vec![PathBuf::from("/run-root")],
            exclude: BTreeSet::from([100]),
        };
        let read = Reader {
            environ: Box::new(|_| Some(vec![b"M=v".to_vec()])),
            cwd: Box::new(|_| Some(PathBuf::from("/run-root/w"))),
            cmdline: Box::new(|pid| format!("p{pid}")),
        };
        let found: Vec<i32> = survey_among(&procs, 100, &rules, &read)
            .iter()
            .map(|s| s.pid)
            .collect();
        assert_eq!(found, [101, 102]);
        // Each rule alone ties a descendant; none ties the harness (excluded).
        let only = |rules: SurveyRules, read: &Reader| -> Vec<(i32, Vec<String>)> {
            survey_among(&procs, 100, &rules, read)
                .into_iter()
                .map(|s| (s.pid, s.matched_by))
                .collect()
        };
        let nothing = Reader {
            environ: Box::new(|_| None),
            cwd: Box::new(|_| None),
            cmdline: Box::new(|_| String::new()),
        };
        assert_eq!(
            only(rules.clone(), &nothing),
            [
                (101, vec!["pgid".to_string()]),
                (102, vec!["pgid".to_string()])
            ]
        );
        let no_group = SurveyRules {
            pgids: BTreeSet::new(),
            ..rules.clone()
        };
        assert!(only(no_group.clone(), &nothing).is_empty());
        assert_eq!(
            only(no_group, &read)[0].1,
            ["env-marker".to_string(), "cwd".to_string()]
        );
        // A zombie of the run is not a survivor.
        let mut with_zombie = procs.clone();
        with_zombie.get_mut(&102).unwrap().state = 'Z';
        let found: Vec<i32> = survey_among(&with_zombie, 100, &rules, &read)
            .iter()
            .map(|s| s.pid)
            .collect();
        assert_eq!(found, [101]);
    }

    #[test]
    fn a_process_that_does_not_descend_from_the_harness_is_never_signalled() {
        let init = procfs::read(1).expect("/proc/1");
        let stopped = stop_processes(&[&init], Duration::from_millis(10));
        assert_eq!(stopped.len(), 1);
        assert_eq!(stopped[0].stopped_by, NOT_OURS);
        assert!(!journal::snapshot().iter().any(|r| r.pid == 1));
    }

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
        // Between fork and exec the child already has its cwd but still the
        // test's environment: wait until the exec'd program carries the marker.
        let has_marker = |f: &[Survivor]| {
            f.iter()
                .any(|s| s.matched_by.iter().any(|m| m == "env-marker"))
        };
        while !has_marker(&found) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            found = survey(&rules);
        }
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pid, child.id() as i32);
        assert!(found[0].matched_by.contains(&"cwd".to_string()));
        assert!(found[0].matched_by.contains(&"env-marker".to_string()));
        let stopped = stop_all(&found, Duration::from_secs(3));
        let _ = child.wait();
        assert_eq!(stopped.len(), 1);
        assert_eq!(stopped[0].stopped_by, "TERM");
    }
}
