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
//! After each gate the pipeline calls [`after_gate_of`], and once more before
//! the evidence is sealed [`after_gate`]. Gates run concurrently, so a live
//! descendant is not necessarily residue: one that a running gate's
//! [`super::Running`] handle holds, or that descends from one, is that gate's
//! work in progress. Every other live descendant (an orphan re-parented to
//! the harness, a child nobody waits for, and what runs below them) is
//! residue, judged once every gate that was running when it started has
//! ended: it is recorded with its pid, command line and the gates running
//! when it started ([`Span`]s, on the clock of `/proc/<pid>/stat` start
//! times), stopped (SIGTERM, [`GRACE`], SIGKILL) and reaped. With one gate at
//! a time (`--jobs 1`) that is every live descendant after each gate.
//! [`Residue::check`] is the `RESIDUE` check the ending gate reports; it
//! fails the gate.
//!
//! Which processes a sweep stops is a decision, made apart from the doing:
//! the process table is observed once per round as a plain [`Table`] (every
//! process's pid, parent, group, start time and state, which leaders a handle
//! holds, the harness's pid), and pure functions of it choose
//! ([`live_descendants`], [`residue_among`], [`orphans`],
//! [`in_held_groups`]); their unit tests are tables of their own. Nothing
//! that does not descend from the harness is ever chosen, and
//! [`survey::stop_processes_for`] checks descent again before each signal.

use super::{is_held, journal, GRACE};
use crate::evidence::{Check, SignalWhy};
use crate::process::procfs::{self, ProcInfo};
use crate::process::survey;
use rustix::process::{getpid, set_child_subreaper, waitpid, Pid, WaitOptions};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
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
    /// The gates that were running when it (or the outermost process of the
    /// run above it that nobody holds) started, in start order; empty when it
    /// started between gates.
    #[serde(default)]
    pub started_during: Vec<String>,
}

impl Residue {
    /// The failing `RESIDUE` check of the gate after which it was found.
    pub fn check(&self) -> Check {
        let how = if self.ppid == getpid().as_raw_nonzero().get() {
            "its parent had exited and it was re-parented to the harness".to_string()
        } else {
            format!("child of pid {}", self.ppid)
        };
        let during = match self.started_during.as_slice() {
            [] => String::new(),
            [one] => format!("; it started while gate {one} ran"),
            many => format!(
                "; it started while gates {} ran (any of them may have started it)",
                many.join(", ")
            ),
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
                 session {}, cwd {}{during}); {outcome}. Expected nothing this gate started, directly or \
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

/// What a sweep decides on: the process table as `/proc` showed it, which
/// of its pids a [`super::Running`] handle holds, and the harness's pid. A
/// plain value, so that the decisions below ([`live_descendants`],
/// [`residue_among`], [`orphans`]) are pure functions of it, tested with
/// tables of their own.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The harness's pid.
    pub me: i32,
    /// Every process, by pid.
    pub procs: BTreeMap<i32, ProcInfo>,
    /// Leaders a handle holds (it will reap them).
    pub held: BTreeSet<i32>,
}

impl Table {
    /// The table now.
    pub fn observe() -> Self {
        let procs = procfs::all();
        let held = procs
            .keys()
            .copied()
            .filter(|pid| u32::try_from(*pid).is_ok_and(is_held))
            .collect();
        Self {
            me: getpid().as_raw_nonzero().get(),
            procs,
            held,
        }
    }
}

/// Every live (not zombie) descendant of the harness in `table`, by the
/// parent links, in pid order.
pub fn live_descendants(table: &Table) -> Vec<i32> {
    procfs::descendants(&table.procs, table.me)
        .into_iter()
        .filter(|p| p.pid != table.me && !p.exited())
        .map(|p| p.pid)
        .collect()
}

/// Every live (not zombie) descendant of the harness, found by walking the
/// parent links of `/proc` down from the harness's pid.
pub fn descendants() -> Vec<ProcInfo> {
    let table = Table::observe();
    live_descendants(&table)
        .into_iter()
        .filter_map(|pid| table.procs.get(&pid).cloned())
        .collect()
}

/// One gate's run time on the clock of `/proc/<pid>/stat` start times
/// (clock ticks since boot, `CLOCK_BOOTTIME`).
#[derive(Debug, Clone)]
pub struct Span {
    /// Gate id.
    pub gate: String,
    /// Tick the gate started.
    pub start: u64,
    /// Tick the gate ended; none while it runs.
    pub end: Option<u64>,
}

/// Ticks either side of a span a start time is still taken to fall in: start
/// times have a resolution of one tick (10 ms at the usual 100 Hz).
const SLACK_TICKS: u64 = 2;

impl Span {
    /// A span starting now.
    pub fn start(gate: &str) -> Self {
        Self {
            gate: gate.into(),
            start: now_ticks(),
            end: None,
        }
    }

    /// Ends the span now.
    pub fn end(&mut self) {
        self.end = Some(now_ticks());
    }

    /// Whether a process started at tick `t` may have been started during
    /// this span (`SLACK_TICKS` either side).
    fn covers(&self, t: u64) -> bool {
        t + SLACK_TICKS >= self.start && self.end.is_none_or(|e| t <= e + SLACK_TICKS)
    }
}

/// Now, in clock ticks since boot (the clock of `/proc/<pid>/stat` field 22).
pub fn now_ticks() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    let hz = rustix::param::clock_ticks_per_second();
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs * hz + nanos * hz / 1_000_000_000
}

/// Live descendants of the harness in `table` that are residue by `spans`:
/// not held by a [`super::Running`] handle nor below one, and started when no
/// running span covers the start. Each comes (by pid, in pid order) with the
/// gates whose span covers the start of its outermost unheld ancestor (its
/// "root": the process re-parented to the harness, or the child nobody waits
/// for).
pub fn residue_among(table: &Table, spans: &[Span]) -> Vec<(i32, Vec<String>)> {
    let me = table.me;
    let mut out = Vec::new();
    for pid in live_descendants(table) {
        let Some(p) = table.procs.get(&pid) else {
            continue;
        };
        // Walk up to the process whose parent is the harness. It was found
        // walking down from the harness, so the walk up ends there in fewer
        // steps than the table has processes (the bound only guards a table
        // read mid-change).
        let mut root = p;
        for _ in 0..table.procs.len() {
            if root.ppid == me {
                break;
            }
            match table.procs.get(&root.ppid) {
                Some(parent) => root = parent,
                None => break,
            }
        }
        if root.ppid == me && table.held.contains(&root.pid) {
            continue; // a running gate's child, or below one
        }
        if spans
            .iter()
            .any(|s| s.end.is_none() && s.covers(root.start_time))
        {
            continue; // judged when the gates running at its start have ended
        }
        let during = spans
            .iter()
            .filter(|s| s.covers(root.start_time))
            .map(|s| s.gate.clone())
            .collect();
        out.push((pid, during));
    }
    out
}

/// The zombies of `table` the harness reaps: its own children (orphans
/// re-parented to it, which nobody else waits for) that no
/// [`super::Running`] handle holds, in pid order.
pub fn orphans(table: &Table) -> Vec<i32> {
    table
        .procs
        .values()
        .filter(|p| p.ppid == table.me && p.exited() && !table.held.contains(&p.pid))
        .map(|p| p.pid)
        .collect()
}

/// Finds every live descendant of the harness, stops each (SIGTERM, `grace`,
/// SIGKILL), reaps it, and repeats until none is left (at most [`ROUNDS`]
/// rounds). Returns one [`Residue`] per process found, in pid order; empty
/// when nothing of the run was alive.
pub fn sweep(grace: Duration) -> Vec<Residue> {
    sweep_where(grace, |table| {
        live_descendants(table)
            .into_iter()
            .map(|pid| (pid, Vec::new()))
            .collect()
    })
}

/// Stops and reaps what `select` picks from the table, round after round
/// until it picks nothing (at most [`ROUNDS`] rounds).
fn sweep_where(
    grace: Duration,
    select: impl Fn(&Table) -> Vec<(i32, Vec<String>)>,
) -> Vec<Residue> {
    let mut found: BTreeMap<(i32, u64), Residue> = BTreeMap::new();
    for _ in 0..ROUNDS {
        let table = Table::observe();
        reap(&table, &orphans(&table));
        let (live, during): (Vec<ProcInfo>, Vec<Vec<String>>) = select(&table)
            .into_iter()
            .filter_map(|(pid, during)| Some((table.procs.get(&pid)?.clone(), during)))
            .unzip();
        if live.is_empty() {
            break;
        }
        for (p, started_during) in live.iter().zip(during) {
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
                    started_during,
                });
        }
        let refs: Vec<&ProcInfo> = live.iter().collect();
        let stopped = survey::stop_processes_for(&refs, grace, SignalWhy::Residue);
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
/// (none when nothing of the run is alive): for when no gate runs.
pub fn after_gate() -> Vec<Check> {
    sweep(GRACE).iter().map(Residue::check).collect()
}

/// The residue to judge now that a gate of `spans` has ended (its span
/// closed), as that gate's failing `RESIDUE` checks: what no running gate
/// holds and no running gate may have started, stopped with [`GRACE`] and
/// reaped. Work of gates still running is left alone.
pub fn after_gate_of(spans: &[Span]) -> Vec<Check> {
    sweep_where(GRACE, |table| residue_among(table, spans))
        .iter()
        .map(Residue::check)
        .collect()
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

/// The live descendants of the harness in `table` that are members of a
/// held step's process group (its leader is held, and the group is the
/// leader's: every step runs in a group of its own), in pid order: what the
/// steps' own stops will signal.
pub fn in_held_groups(table: &Table) -> Vec<i32> {
    live_descendants(table)
        .into_iter()
        .filter(|pid| {
            table
                .procs
                .get(pid)
                .is_some_and(|p| table.held.contains(&p.pgid))
        })
        .collect()
}

/// SIGTERM to every member of every running step's process group at once,
/// journalled as the interrupt's: what the pipeline does when it notices
/// SIGINT/SIGTERM, so that every step's grace runs together and ends
/// [`super::INTERRUPTED_GRACE`] after the interrupt ([`super::grace`]),
/// not one stop after the other. A process that left its step's group is
/// left to the residue sweeps, which report it (a `RESIDUE` check) before
/// they stop it. Returns how many were signalled.
pub fn term_all() -> usize {
    let table = Table::observe();
    let members = in_held_groups(&table);
    for pid in &members {
        if let Some(p) = table.procs.get(pid) {
            journal::signal_process(p, rustix::process::Signal::TERM, SignalWhy::Interrupt);
        }
    }
    members.len()
}

/// Reaps every zombie whose parent is the harness and that no
/// [`super::Running`] handle owns ([`orphans`]). Returns how many were
/// reaped.
pub fn reap_orphans() -> usize {
    let table = Table::observe();
    reap(&table, &orphans(&table))
}

/// Reaps each of `pids` (children of the harness that have exited, as
/// `table` shows them), journalling each reap. Returns how many were reaped:
/// a pid that is not an exited child of the harness is not.
fn reap(table: &Table, pids: &[i32]) -> usize {
    let mut reaped = 0;
    for &raw in pids {
        let Some(pid) = Pid::from_raw(raw) else {
            continue;
        };
        if matches!(waitpid(Some(pid), WaitOptions::NOHANG), Ok(Some(_))) {
            reaped += 1;
            journal::reaped(
                table.procs.get(&raw),
                raw,
                "",
                journal::current_gate(),
                SignalWhy::Residue,
                None,
            );
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
            started_during: vec!["suites".into(), "worker-isolation".into()],
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
        assert!(
            check
                .detail
                .contains("it started while gates suites, worker-isolation ran (any of them may have started it)"),
            "{}",
            check.detail
        );
        let observed = check.observed.unwrap();
        assert_eq!(observed["pid"], 4242);
        assert_eq!(observed["cmdline"], "sh -c sleep 15; echo late > late.txt");
    }

    #[test]
    fn a_span_covers_the_ticks_it_ran_with_slack_and_a_running_span_everything_after_it() {
        let ended = Span {
            gate: "stage".into(),
            start: 100,
            end: Some(200),
        };
        assert!(!ended.covers(97));
        assert!(ended.covers(98));
        assert!(ended.covers(150));
        assert!(ended.covers(202));
        assert!(!ended.covers(203));
        let running = Span {
            gate: "suites".into(),
            start: 100,
            end: None,
        };
        assert!(!running.covers(97));
        assert!(running.covers(98));
        assert!(running.covers(1_000_000));
    }

    #[test]
    fn now_ticks_is_on_the_clock_of_proc_start_times() {
        let me = procfs::read(getpid().as_raw_nonzero().get()).expect("own /proc entry");
        let now = now_ticks();
        assert!(
            now >= me.start_time,
            "now {now} before own start {}",
            me.start_time
        );
        // The test process started at most an hour ago.
        assert!(now - me.start_time < 3600 * rustix::param::clock_ticks_per_second());
    }

    #[test]
    fn an_orphan_that_started_while_a_gate_still_runs_is_left_for_later() {
        // A process of ours that nobody holds, started now: while a span
        // started before it is running it is not judged; once that span has
        // ended it is residue of it.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = child.id() as i32;
        let mut spans = vec![Span {
            gate: "suites".into(),
            start: now_ticks().saturating_sub(100),
            end: None,
        }];
        // Let /proc show the child with its start time.
        std::thread::sleep(Duration::from_millis(50));
        let table = Table::observe();
        assert!(!residue_among(&table, &spans).iter().any(|(p, _)| *p == pid));
        spans[0].end = Some(now_ticks());
        let found = residue_among(&Table::observe(), &spans);
        let (_, during) = found
            .iter()
            .find(|(p, _)| *p == pid)
            .expect("judged once the span ended");
        assert_eq!(during, &vec!["suites".to_string()]);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A process of a synthetic table.
    fn proc(pid: i32, ppid: i32, start_time: u64, state: char) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state,
            start_time,
            ns_pids: vec![pid],
        }
    }

    /// The harness is 100. 101 is a held child (a running step) with a
    /// grandchild 102 started late; 103 an orphan nobody holds, started
    /// during gate `a`, with 104 below it started during gate `b`; 105 a
    /// zombie child; 106 another program's (not below the harness); 107 an
    /// unheld child started late (tick 200).
    fn table() -> Table {
        Table {
            me: 100,
            procs: [
                proc(1, 0, 0, 'S'),
                proc(100, 1, 1, 'S'),
                proc(101, 100, 10, 'S'),
                proc(102, 101, 60, 'S'),
                proc(103, 100, 10, 'S'),
                proc(104, 103, 60, 'R'),
                proc(105, 100, 10, 'Z'),
                proc(106, 1, 10, 'S'),
                proc(107, 100, 200, 'S'),
            ]
            .into_iter()
            .map(|p| (p.pid, p))
            .collect(),
            held: BTreeSet::from([101]),
        }
    }

    fn span(gate: &str, start: u64, end: Option<u64>) -> Span {
        Span {
            gate: gate.into(),
            start,
            end,
        }
    }

    #[test]
    fn live_descendants_are_below_the_harness_alive_and_not_the_harness() {
        assert_eq!(live_descendants(&table()), [101, 102, 103, 104, 107]);
        let mut t = table();
        t.me = 103;
        assert_eq!(live_descendants(&t), [104]);
    }

    #[test]
    fn residue_is_what_no_handle_holds_judged_by_its_roots_start_once_its_gates_ended() {
        let spans = [
            span("a", 5, Some(20)),
            span("b", 55, Some(70)),
            span("c", 150, Some(250)),
        ];
        // 101 is held and 102 is below it: a running step's work, never
        // residue. 103 is an orphan (residue of `a`); 104 is judged by its
        // root 103's start, so it is `a`'s too, not `b`'s. 105 exited, 106 is
        // not the run's. 107 started during `c`.
        assert_eq!(
            residue_among(&table(), &spans),
            [
                (103, vec!["a".to_string()]),
                (104, vec!["a".to_string()]),
                (107, vec!["c".to_string()]),
            ]
        );
    }

    #[test]
    fn a_running_gate_keeps_what_started_during_it_for_later_and_only_that() {
        // `c` still runs: 107 (started during it) waits; 103 and 104,
        // started before `c` began, are judged now.
        let spans = [span("a", 5, Some(20)), span("c", 150, None)];
        assert_eq!(
            residue_among(&table(), &spans),
            [(103, vec!["a".to_string()]), (104, vec!["a".to_string()])]
        );
        // A running span that began before the orphan's root holds it too.
        let spans = [span("early", 2, None)];
        assert!(residue_among(&table(), &spans).is_empty());
        // No gate at all: every unheld live descendant, started between gates.
        assert_eq!(
            residue_among(&table(), &[]),
            [(103, vec![]), (104, vec![]), (107, vec![])]
        );
    }

    #[test]
    fn a_child_of_the_harness_is_residue_unless_held_and_a_held_one_covers_its_descendants() {
        // Held: 103 and what runs below it are its step's work.
        let mut t = table();
        t.held.insert(103);
        assert_eq!(residue_among(&t, &[]), [(107, vec![])]);
        // Not held any more: 101 and its grandchild 102 are residue; 102 is
        // judged by 101's start (tick 10, gate `a`), not its own (60, `b`).
        let mut t = table();
        t.held.clear();
        let spans = [span("a", 5, Some(20)), span("b", 55, Some(70))];
        assert_eq!(
            residue_among(&t, &spans),
            [
                (101, vec!["a".to_string()]),
                (102, vec!["a".to_string()]),
                (103, vec!["a".to_string()]),
                (104, vec!["a".to_string()]),
                (107, vec![]),
            ]
        );
        // A held pid that is not a child of the harness holds nothing: 104
        // is below the unheld orphan 103.
        let mut t = table();
        t.held.insert(104);
        assert!(residue_among(&t, &[]).iter().any(|(p, _)| *p == 104));
    }

    #[test]
    fn the_interrupt_reaches_the_members_of_held_groups_only() {
        let mut t = table();
        // 102 is in 101's group (a step's grandchild); 104 in its own.
        t.procs.get_mut(&102).unwrap().pgid = 101;
        t.procs.insert(112, proc(112, 101, 70, 'S')); // left 101's group
        t.procs.insert(113, proc(113, 1, 70, 'S')); // another's, in group 101
        t.procs.get_mut(&113).unwrap().pgid = 101;
        t.procs.insert(114, proc(114, 101, 70, 'Z')); // exited, in group 101
        t.procs.get_mut(&114).unwrap().pgid = 101;
        assert_eq!(in_held_groups(&t), [101, 102]);
        t.held.clear();
        assert!(in_held_groups(&t).is_empty());
    }

    #[test]
    fn orphans_are_the_exited_unheld_children_of_the_harness() {
        let mut t = table();
        t.procs.insert(108, proc(108, 100, 10, 'Z')); // held zombie
        t.procs.insert(109, proc(109, 1, 10, 'Z')); // another's zombie
        t.procs.insert(110, proc(110, 103, 10, 'Z')); // a grandchild zombie
        t.procs.insert(111, proc(111, 100, 10, 'X'));
        t.held.insert(108);
        assert_eq!(orphans(&t), [105, 111]);
    }

    /// Held by the tests here that reap: each reaps every unheld zombie child
    /// of this process, the other's too.
    static REAPING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn reaping() -> std::sync::MutexGuard<'static, ()> {
        REAPING.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `pid` has exited (a zombie, or gone).
    fn await_exit(pid: i32) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while procfs::read(pid).is_some_and(|p| !p.exited()) {
            assert!(std::time::Instant::now() < deadline, "{pid} did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn exited_children_nobody_holds_are_reaped_and_counted() {
        let _serial = reaping();
        let children: Vec<std::process::Child> = (0..2)
            .map(|_| std::process::Command::new("true").spawn().expect("true"))
            .collect();
        let pids: Vec<i32> = children.iter().map(|c| c.id() as i32).collect();
        for pid in &pids {
            await_exit(*pid);
        }
        // Not a child of ours: nothing to reap.
        assert_eq!(reap(&Table::observe(), &[1]), 0);
        assert!(reap_orphans() >= 2);
        for pid in &pids {
            assert!(procfs::read(*pid).is_none(), "{pid} was not reaped");
            assert!(journal::snapshot()
                .iter()
                .any(|r| r.pid == *pid && r.action == crate::evidence::SignalAction::Reap));
        }
        // Reaped above: their handles must not wait.
        children.into_iter().for_each(std::mem::forget);
    }

    #[test]
    fn the_observed_table_holds_this_process_its_children_and_which_a_handle_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut held = super::super::spawn(&super::super::ChildSpec {
            program: "sleep".into(),
            args: vec!["30".into()],
            cwd: dir.path().to_path_buf(),
            env: super::super::base_env(),
            timeout: Duration::from_secs(60),
            log_stem: dir.path().join("held"),
            stdin: None,
        })
        .unwrap();
        let mut free = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let table = Table::observe();
        let me = getpid().as_raw_nonzero().get();
        assert_eq!(table.me, me);
        assert!(table.held.contains(&(held.pid() as i32)));
        assert!(!table.held.contains(&(free.id() as i32)));
        let found: Vec<i32> = descendants().iter().map(|p| p.pid).collect();
        assert!(found.contains(&(held.pid() as i32)), "{found:?}");
        assert!(found.contains(&(free.id() as i32)), "{found:?}");
        assert!(!found.contains(&me));
        held.stop();
        let _ = free.kill();
        let _ = free.wait();
    }

    #[test]
    fn a_span_starts_now_and_ends_when_told() {
        let before = now_ticks();
        let mut span = Span::start("g");
        assert_eq!(span.gate, "g");
        assert!(span.start >= before && span.start <= now_ticks());
        assert_eq!(span.end, None);
        span.end();
        assert!(span
            .end
            .is_some_and(|e| e >= span.start && e <= now_ticks()));
    }

    #[test]
    fn a_sweep_records_stops_and_reaps_what_it_selects_round_after_round() {
        let _serial = reaping();
        // One that obeys SIGTERM, one deaf to it; nothing else is selected
        // (other tests' children run in this process too).
        // No inherited output: the deaf shell's `sleep 31` outlives the
        // test (SIGKILL reaches the shell alone), and would hold the test's
        // stdout (nextest reported the test leaky). Its own process group
        // lets the test end that grandchild too.
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        let obeys = std::process::Command::new("sleep")
            .arg("30")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deaf = std::process::Command::new("/bin/sh")
            .args(["-c", "trap '' TERM; echo > /dev/null; sleep 31 & wait"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let mine = [obeys.id() as i32, deaf.id() as i32];
        std::thread::sleep(Duration::from_millis(100));
        let found = sweep_where(Duration::from_millis(300), |t| {
            live_descendants(t)
                .into_iter()
                .filter(|p| mine.contains(p))
                .map(|p| (p, vec!["g".to_string()]))
                .collect()
        });
        let by_pid: BTreeMap<i32, &Residue> = found.iter().map(|r| (r.pid, r)).collect();
        assert_eq!(by_pid.len(), 2, "{found:#?}");
        assert_eq!(by_pid[&mine[0]].stopped_by, "TERM");
        assert_eq!(by_pid[&mine[0]].cmdline, "sleep 30");
        assert_eq!(by_pid[&mine[0]].started_during, ["g"]);
        assert_eq!(by_pid[&mine[1]].stopped_by, "KILL");
        assert_eq!(by_pid[&mine[1]].ppid, getpid().as_raw_nonzero().get());
        for pid in mine {
            assert!(procfs::read(pid).is_none(), "{pid} was not reaped");
        }
        if let Some(group) = Pid::from_raw(mine[1]) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        std::mem::forget(obeys);
        std::mem::forget(deaf);
    }

    #[test]
    fn a_residue_check_says_re_parented_for_an_orphan_and_names_its_one_gate() {
        let me = getpid().as_raw_nonzero().get();
        let r = Residue {
            pid: 7,
            ppid: me,
            pgid: 7,
            sid: 7,
            cmdline: "sleep 600".into(),
            cwd: None,
            stopped_by: "still running after KILL".into(),
            started_during: vec!["suites".into()],
        };
        let detail = r.check().detail;
        assert!(
            detail.contains("(its parent had exited and it was re-parented to the harness;"),
            "{detail}"
        );
        assert!(
            detail.contains("; it started while gate suites ran)"),
            "{detail}"
        );
        assert!(detail.contains("cwd unreadable"), "{detail}");
        assert!(
            detail.contains("; it was still running after SIGKILL."),
            "{detail}"
        );
        let r = Residue {
            ppid: me + 1,
            started_during: vec![],
            ..r
        };
        let detail = r.check().detail;
        assert!(
            detail.contains(&format!("(child of pid {};", me + 1)),
            "{detail}"
        );
        assert!(!detail.contains("it started while"), "{detail}");
    }
}
