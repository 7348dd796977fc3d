//! What outlives a gate: the residue survey.
//!
//! Stopping a child's process group does not reach a process that left it
//! (`setsid`, `start_new_session=True`, a double fork): such a process used to
//! be re-parented to init and live on after the run, writing into a sealed
//! evidence directory. So the harness makes itself the child subreaper
//! ([`become_subreaper`], `prctl(PR_SET_CHILD_SUBREAPER)`): an orphan of
//! anything it started, however deep and whatever its group or session, is
//! re-parented to the harness instead, and every process of the run is, while
//! it lives, a descendant of the harness in `/proc`.
//!
//! After each gate, and once more before the evidence is sealed, the pipeline
//! calls [`sweep`]: every live descendant is a residue (gates run one at a
//! time and each stops what it starts, so nothing legitimate is left), and is
//! recorded with its pid and command line, stopped (SIGTERM, [`GRACE`],
//! SIGKILL) and reaped. [`Residue::check`] is the `RESIDUE` check the gate
//! reports; it fails the gate.

use super::{is_held, GRACE};
use crate::evidence::Check;
use crate::isolation::procfs::{self, ProcInfo};
use crate::isolation::survey;
use rustix::process::{getpid, set_child_subreaper, waitpid, Pid, WaitOptions};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Name of the check a residue is reported as.
pub const CHECK: &str = "RESIDUE";

/// Most stop rounds of one sweep: a residue may start new processes while it
/// is stopped, and each round stops what the previous one left.
const ROUNDS: usize = 5;

/// Makes the harness the child subreaper of everything it starts
/// (`prctl(PR_SET_CHILD_SUBREAPER, 1)`, Linux 3.4+; not inherited by
/// children, so only the harness collects orphans).
///
/// # Errors
/// When the kernel refuses the `prctl`.
pub fn become_subreaper() -> std::io::Result<()> {
    set_child_subreaper(Some(getpid())).map_err(Into::into)
}

/// A process of the run found alive by [`sweep`], and how it was stopped.
#[derive(Debug, Clone, Serialize)]
pub struct Residue {
    /// Process id.
    pub pid: i32,
    /// Parent process id when found (the harness's own pid when its parent
    /// had exited and it was re-parented to the harness).
    pub ppid: i32,
    /// Process group.
    pub pgid: i32,
    /// Session.
    pub sid: i32,
    /// Command line when found, arguments joined by spaces (at most 200
    /// characters; for the reader, never used to match).
    pub cmdline: String,
    /// Working directory when found, if readable.
    pub cwd: Option<String>,
    /// `TERM`, `KILL`, `exited before a signal` or `still running after KILL`.
    pub stopped_by: String,
}

impl Residue {
    /// The failing `RESIDUE` check of the gate after which it was found.
    pub fn check(&self) -> Check {
        let how = if self.ppid == getpid().as_raw_nonzero().get() {
            "its parent had exited and it was re-parented to the harness".to_string()
        } else {
            format!("child of pid {}", self.ppid)
        };
        let outcome = if self.stopped_by == "still running after KILL" {
            "it was still running after SIGKILL".to_string()
        } else {
            format!("stopped ({}) and reaped", self.stopped_by)
        };
        Check::fail(
            CHECK,
            None,
            format!(
                "pid {} `{}` was still running after the gate finished ({how}; process group {}, \
                 session {}, cwd {}); {outcome}. Expected nothing this gate started, directly or \
                 not, to outlive it: a process that leaves its process group (a new session, a \
                 double fork) escapes the group stop and could write after the evidence is sealed; \
                 make the step wait for or stop every process it starts",
                self.pid,
                self.cmdline,
                self.pgid,
                self.sid,
                self.cwd.as_deref().unwrap_or("unreadable"),
            ),
        )
        .with_observed(serde_json::to_value(self).unwrap_or_default())
    }
}

/// Every live (not zombie) descendant of the harness, found by walking the
/// parent links of `/proc` down from the harness's pid.
pub fn descendants() -> Vec<ProcInfo> {
    let me = getpid().as_raw_nonzero().get();
    procfs::descendants(&procfs::all(), me)
        .into_iter()
        .filter(|p| p.pid != me && !p.exited())
        .collect()
}

/// Finds every live descendant of the harness, stops each (SIGTERM, `grace`,
/// SIGKILL), reaps it, and repeats until none is left (at most [`ROUNDS`]
/// rounds). Returns one [`Residue`] per process found, in pid order; empty
/// when nothing of the run was alive.
pub fn sweep(grace: Duration) -> Vec<Residue> {
    let mut found: BTreeMap<(i32, u64), Residue> = BTreeMap::new();
    for _ in 0..ROUNDS {
        reap_orphans();
        let live = descendants();
        if live.is_empty() {
            break;
        }
        for p in &live {
            found
                .entry((p.pid, p.start_time))
                .or_insert_with(|| Residue {
                    pid: p.pid,
                    ppid: p.ppid,
                    pgid: p.pgid,
                    sid: p.sid,
                    cmdline: procfs::cmdline(p.pid),
                    cwd: procfs::cwd(p.pid).map(|c| c.display().to_string()),
                    stopped_by: String::new(),
                });
        }
        let refs: Vec<&ProcInfo> = live.iter().collect();
        let stopped = survey::stop_processes(&refs, grace);
        for (p, s) in live.iter().zip(by_pid(&live, &stopped)) {
            if let (Some(r), Some(s)) = (found.get_mut(&(p.pid, p.start_time)), s) {
                r.stopped_by = s;
            }
        }
    }
    reap_orphans();
    let mut out: Vec<Residue> = found.into_values().collect();
    out.sort_by_key(|r| r.pid);
    out
}

/// [`sweep`] with [`GRACE`], as the checks of the gate that just finished
/// (none when nothing of the run is alive).
pub fn after_gate() -> Vec<Check> {
    sweep(GRACE).iter().map(Residue::check).collect()
}

/// The `stopped_by` of each process of `live`, in order.
fn by_pid(live: &[ProcInfo], stopped: &[survey::Stopped]) -> Vec<Option<String>> {
    live.iter()
        .map(|p| {
            stopped
                .iter()
                .find(|s| s.pid == p.pid)
                .map(|s| s.stopped_by.clone())
        })
        .collect()
}

/// Reaps every zombie whose parent is the harness and that no [`super::Running`]
/// handle owns: orphans re-parented here, which nobody else waits for.
/// Returns how many were reaped.
pub fn reap_orphans() -> usize {
    let me = getpid().as_raw_nonzero().get();
    let mut reaped = 0;
    for p in procfs::all().into_values() {
        if p.ppid != me || !p.exited() || is_held(p.pid as u32) {
            continue;
        }
        if let Some(pid) = Pid::from_raw(p.pid) {
            if matches!(waitpid(Some(pid), WaitOptions::NOHANG), Ok(Some(_))) {
                reaped += 1;
            }
        }
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_residue_check_names_pid_command_line_and_how_it_was_stopped() {
        let r = Residue {
            pid: 4242,
            ppid: 1,
            pgid: 4242,
            sid: 4242,
            cmdline: "sh -c sleep 15; echo late > late.txt".into(),
            cwd: Some("/tmp/x".into()),
            stopped_by: "TERM".into(),
        };
        let check = r.check();
        assert_eq!(check.name, "RESIDUE");
        assert_eq!(check.result, crate::evidence::CheckResult::Fail);
        assert!(
            check
                .detail
                .starts_with("pid 4242 `sh -c sleep 15; echo late > late.txt` was still running"),
            "{}",
            check.detail
        );
        assert!(
            check.detail.contains("stopped (TERM) and reaped"),
            "{}",
            check.detail
        );
        let observed = check.observed.unwrap();
        assert_eq!(observed["pid"], 4242);
        assert_eq!(observed["cmdline"], "sh -c sleep 15; echo late > late.txt");
    }
}
