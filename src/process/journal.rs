//! The journal of every signal the harness sends and every process it reaps.
//!
//! A stop, a residue sweep and a survey all signal processes; which ones is a
//! decision the reader of the evidence must be able to check. So each of them
//! goes through here: the target is read from `/proc` before the signal (pid,
//! start time, parent, command line), tied to the gate whose thread sent it
//! (set by the pipeline with [`in_gate`], carried into a step's own threads by
//! [`crate::parallel::map`] and into a [`super::Running`] at spawn), and
//! recorded with why, and whether it descended from the run at that moment.
//! The pipeline writes the journal into the evidence ([`take`]).

use crate::evidence::{SignalAction, SignalRecord, SignalWhy};
use crate::process::procfs::{self, ProcInfo};
use rustix::process::{kill_process, kill_process_group, Pid, Signal};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static JOURNAL: Mutex<Vec<SignalRecord>> = Mutex::new(Vec::new());

static STARTED: OnceLock<Instant> = OnceLock::new();

thread_local! {
    /// The gate this thread works for (none: the pipeline between gates).
    static GATE: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn journal() -> std::sync::MutexGuard<'static, Vec<SignalRecord>> {
    JOURNAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the journal's clock ([`SignalRecord::at_ms`] counts from here);
/// the first record starts it otherwise.
pub fn begin() {
    let _ = STARTED.get_or_init(Instant::now);
}

/// The instant the journal's clock started ([`begin`]): the run's time
/// origin, which gate spans (`started_ms`) count from too.
pub fn started() -> Instant {
    *STARTED.get_or_init(Instant::now)
}

fn at_ms() -> u64 {
    u64::try_from(STARTED.get_or_init(Instant::now).elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The gate the calling thread works for.
pub fn current_gate() -> Option<String> {
    GATE.with(|g| g.borrow().clone())
}

/// Runs `f` with the calling thread working for `gate` (none: for no gate),
/// then restores what it worked for before.
pub fn in_gate<T>(gate: Option<&str>, f: impl FnOnce() -> T) -> T {
    let before = GATE.with(|g| g.replace(gate.map(String::from)));
    struct Restore(Option<String>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            GATE.with(|g| *g.borrow_mut() = before);
        }
    }
    let _restore = Restore(before);
    f()
}

/// Milliseconds since the journal's clock started ([`begin`]).
pub fn clock_ms() -> u64 {
    at_ms()
}

/// Adds the records of a helper process of the run (the discovery host),
/// whose clock started `started_ms` into this journal's, for `gate` where a
/// record names none. `descends_from_run` stays as the helper saw it: from
/// the helper, itself a descendant of the run.
pub fn adopt(records: Vec<SignalRecord>, started_ms: u64, gate: &str) {
    let mut j = journal();
    for mut r in records {
        r.at_ms = r.at_ms.saturating_add(started_ms);
        r.started_ms = r.started_ms.map(|s| s.saturating_add(started_ms));
        r.gate.get_or_insert_with(|| gate.to_string());
        j.push(r);
    }
}

/// Every record so far, emptying the journal.
pub fn take() -> Vec<SignalRecord> {
    std::mem::take(&mut *journal())
}

/// A copy of every record so far.
pub fn snapshot() -> Vec<SignalRecord> {
    journal().clone()
}

/// Whether `pid` descends from `root` in `procs` (follows parent links up,
/// at most 4096 hops; `root` itself does not descend from itself).
pub fn descends_in(procs: &BTreeMap<i32, ProcInfo>, pid: i32, root: i32) -> bool {
    let mut at = pid;
    for _ in 0..4096 {
        match procs.get(&at) {
            Some(p) if p.ppid == root => return true,
            Some(p) if p.ppid > 0 && p.ppid != p.pid => at = p.ppid,
            _ => return false,
        }
    }
    false
}

/// Whether `pid` descends from the harness now, reading `/proc` one parent
/// at a time.
pub fn descends_from_run(pid: i32) -> bool {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut at = pid;
    for _ in 0..4096 {
        match procfs::read(at) {
            Some(p) if p.ppid == me => return true,
            Some(p) if p.ppid > 0 && p.ppid != p.pid => at = p.ppid,
            _ => return false,
        }
    }
    false
}

fn push(record: SignalRecord) {
    journal().push(record);
}

fn record_of(
    p: &ProcInfo,
    action: SignalAction,
    group: Option<i32>,
    gate: Option<String>,
    why: SignalWhy,
) -> SignalRecord {
    SignalRecord {
        at_ms: at_ms(),
        action,
        pid: p.pid,
        start_time: Some(p.start_time),
        ppid: Some(p.ppid),
        group,
        cmdline: procfs::cmdline(p.pid),
        gate,
        why,
        descends_from_run: descends_from_run(p.pid),
        started_ms: None,
    }
}

fn action_of(signal: Signal) -> SignalAction {
    if signal == Signal::KILL {
        SignalAction::Kill
    } else {
        SignalAction::Term
    }
}

/// Sends `signal` (TERM or KILL) to the process first seen as `seen`, for
/// the calling thread's gate, recording it first. Nothing is sent (nor
/// recorded) when that process no longer runs (gone, a zombie, or its pid
/// reused by another).
pub fn signal_process(seen: &ProcInfo, signal: Signal, why: SignalWhy) {
    let Some(now) = procfs::read(seen.pid).filter(|n| n.start_time == seen.start_time) else {
        return;
    };
    if now.exited() {
        return;
    }
    let Some(pid) = Pid::from_raw(seen.pid) else {
        return;
    };
    push(record_of(
        &now,
        action_of(signal),
        None,
        current_gate(),
        why,
    ));
    let _ = kill_process(pid, signal);
}

/// Sends `signal` (TERM or KILL) to process group `pgid`, recording every
/// live member first, except those of `already` (pid and start time: members
/// an earlier signal of the same stop recorded); adds the recorded ones to
/// `already`. Returns whether the group held a live member.
pub fn signal_group(
    pgid: Pid,
    signal: Signal,
    gate: Option<&str>,
    why: SignalWhy,
    already: &mut BTreeSet<(i32, u64, SignalAction)>,
) -> bool {
    let members = procfs::live_group_members(pgid.as_raw_nonzero().get());
    let action = action_of(signal);
    for m in &members {
        if already.insert((m.pid, m.start_time, action)) {
            push(record_of(
                m,
                action,
                Some(pgid.as_raw_nonzero().get()),
                gate.map(String::from),
                why,
            ));
        }
    }
    let _ = kill_process_group(pgid, signal);
    !members.is_empty()
}

/// Records that the harness reaped `pid` (its exit status collected): a
/// zombie's `/proc` entry no longer holds its command line, so `cmdline`
/// comes from the caller, or else from an earlier record of the same
/// process. `spawned` is when the harness started it, for a step it started
/// (recorded as [`SignalRecord::started_ms`] on the journal's clock).
pub fn reaped(
    seen: Option<&ProcInfo>,
    pid: i32,
    cmdline: &str,
    gate: Option<String>,
    why: SignalWhy,
    spawned: Option<Instant>,
) {
    let start_time = seen.map(|p| p.start_time);
    let cmdline = if cmdline.is_empty() {
        journal()
            .iter()
            .rev()
            .find(|r| r.pid == pid && r.start_time == start_time && !r.cmdline.is_empty())
            .map(|r| r.cmdline.clone())
            .unwrap_or_default()
    } else {
        cmdline.chars().take(200).collect()
    };
    push(SignalRecord {
        at_ms: at_ms(),
        action: SignalAction::Reap,
        pid,
        start_time,
        ppid: seen.map(|p| p.ppid),
        group: None,
        cmdline,
        gate,
        why,
        // A zombie keeps its parent until reaped: the harness reaps only its
        // own children, so a reap by the harness is of a child of the run.
        descends_from_run: seen
            .is_some_and(|p| p.ppid == rustix::process::getpid().as_raw_nonzero().get())
            || descends_from_run(pid),
        started_ms: spawned.map(|at| {
            u64::try_from(at.saturating_duration_since(started()).as_millis()).unwrap_or(u64::MAX)
        }),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: i32, ppid: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: 'S',
            start_time: 1,
            ns_pids: vec![pid],
        }
    }

    #[test]
    fn descent_follows_parent_links_to_the_root_and_nowhere_else() {
        let procs: BTreeMap<i32, ProcInfo> = [proc(10, 1), proc(11, 10), proc(12, 11), proc(20, 1)]
            .into_iter()
            .map(|p| (p.pid, p))
            .collect();
        assert!(descends_in(&procs, 11, 10));
        assert!(descends_in(&procs, 12, 10), "a grandchild descends");
        assert!(
            !descends_in(&procs, 10, 10),
            "the root is not its own descendant"
        );
        assert!(!descends_in(&procs, 20, 10), "a sibling of the root");
        assert!(!descends_in(&procs, 99, 10), "a process that is gone");
        // A loop in the parent links (pid reuse between reads) ends.
        let looped: BTreeMap<i32, ProcInfo> = [proc(30, 31), proc(31, 30)]
            .into_iter()
            .map(|p| (p.pid, p))
            .collect();
        assert!(!descends_in(&looped, 30, 10));
    }

    #[test]
    fn the_gate_of_a_thread_is_restored_after_in_gate() {
        assert_eq!(current_gate(), None);
        in_gate(Some("suites"), || {
            assert_eq!(current_gate().as_deref(), Some("suites"));
            in_gate(None, || assert_eq!(current_gate(), None));
            assert_eq!(current_gate().as_deref(), Some("suites"));
        });
        assert_eq!(current_gate(), None);
    }

    #[test]
    fn a_signal_to_a_child_is_recorded_with_its_command_line_gate_and_descent() {
        let mut child = std::process::Command::new("sleep")
            .arg("31.5")
            .spawn()
            .expect("sleep");
        let pid = child.id() as i32;
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        let seen = loop {
            let p = procfs::read(pid).expect("the child is in /proc");
            if procfs::cmdline(pid) == "sleep 31.5" || Instant::now() > deadline {
                break p;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        in_gate(Some("journal-test"), || {
            signal_process(&seen, Signal::KILL, SignalWhy::Residue);
        });
        let _ = child.wait();
        let record = snapshot()
            .into_iter()
            .rev()
            .find(|r| r.pid == pid)
            .expect("the signal was recorded");
        assert_eq!(record.action, SignalAction::Kill);
        assert_eq!(record.cmdline, "sleep 31.5");
        assert_eq!(record.gate.as_deref(), Some("journal-test"));
        assert_eq!(record.why, SignalWhy::Residue);
        assert_eq!(record.start_time, Some(seen.start_time));
        assert!(record.descends_from_run, "{record:?}");
        // Gone now: a second signal is neither sent nor recorded.
        let before = snapshot().len();
        signal_process(&seen, Signal::KILL, SignalWhy::Residue);
        assert_eq!(
            snapshot().iter().filter(|r| r.pid == pid).count(),
            1,
            "{before}"
        );
    }

    #[test]
    fn a_helper_process_records_join_the_journal_on_its_clock_and_for_its_gate() {
        let record = |pid: i32, gate: Option<&str>| SignalRecord {
            at_ms: 40,
            action: SignalAction::Term,
            pid,
            start_time: Some(7),
            ppid: Some(1),
            group: Some(pid),
            cmdline: "python -m langbot_plugin.cli rt".into(),
            gate: gate.map(String::from),
            why: SignalWhy::Stop,
            descends_from_run: true,
            started_ms: Some(5),
        };
        adopt(
            vec![record(-4242, None), record(-4243, Some("other"))],
            1000,
            "discovery-rpc",
        );
        let all = snapshot();
        let a = all.iter().find(|r| r.pid == -4242).expect("adopted");
        assert_eq!(a.at_ms, 1040);
        assert_eq!(a.started_ms, Some(1005), "a step's start moves with it");
        assert_eq!(a.gate.as_deref(), Some("discovery-rpc"));
        let b = all.iter().find(|r| r.pid == -4243).expect("adopted");
        assert_eq!(b.gate.as_deref(), Some("other"));
    }
}
