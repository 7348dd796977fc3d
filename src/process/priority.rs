//! The CPU and I/O priority of the run's work while the repository's own
//! suites run (issue 37): the suites get the CPU first, everything else fills
//! the gaps.
//!
//! A gate the catalogue marks `foreground` (`suites`) holds a [`Foreground`]
//! guard around each pytest run. While at least one guard is held, every
//! other step of the run runs under `SCHED_IDLE` with the idle I/O class: it
//! gets a core only when the suites leave one idle, and a suites process that
//! wakes preempts it at once. When the first guard is taken, every thread of
//! the verifier but the main thread and the foreground ones, and every
//! process below the verifier but the foreground steps' (and what they
//! started), is demoted (the interrupt watch is spared too: it must notice
//! SIGINT and SIGTERM at once); a gate thread that starts while a guard is held
//! demotes itself ([`join_background`]), and whatever a demoted thread or
//! process starts inherits the policy. When the last guard is dropped,
//! everything of the run under `SCHED_IDLE` is restored to `SCHED_OTHER` at
//! the nice value it kept and the default I/O class.
//!
//! Restoring asks more of the kernel than demoting: without `CAP_SYS_NICE`
//! (root has it) or an `RLIMIT_NICE` allowing the nice value, it refuses, and
//! the step stays idle until it ends: slower under other load, never wrong.
//! Refusals are counted ([`Counts`]). Every call here is best effort: a
//! thread or process that ended meanwhile is skipped.
//!
//! Source: sched(7) (`SCHED_IDLE`, and switching back from it), ioprio_set(2).

use super::procfs;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// What the guards did over the run, for the evidence and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Times a first guard was taken (a foreground period began).
    pub periods: u64,
    /// Threads demoted to `SCHED_IDLE` (each time it happened).
    pub demoted: u64,
    /// Threads restored to `SCHED_OTHER`.
    pub restored: u64,
    /// Threads the kernel refused to restore (they stayed idle).
    pub refused: u64,
}

struct State {
    /// Guards held now.
    held: usize,
    /// Threads (tids) of foreground gates, never demoted.
    foreground_threads: BTreeSet<i32>,
    /// Processes (pids) a foreground thread started: never demoted, nor is
    /// anything below them.
    foreground_steps: BTreeSet<i32>,
    counts: Counts,
}

static STATE: Mutex<State> = Mutex::new(State {
    held: 0,
    foreground_threads: BTreeSet::new(),
    foreground_steps: BTreeSet::new(),
    counts: Counts {
        periods: 0,
        demoted: 0,
        restored: 0,
        refused: 0,
    },
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A thread's mark as foreground; unregisters its tid when the thread ends.
struct Mark(i32);

impl Drop for Mark {
    fn drop(&mut self) {
        state().foreground_threads.remove(&self.0);
    }
}

thread_local! {
    static MARK: RefCell<Option<Mark>> = const { RefCell::new(None) };
}

fn gettid() -> i32 {
    // SAFETY: gettid(2) takes no argument and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    i32::try_from(tid).unwrap_or(0)
}

/// Marks the calling thread as foreground work (a foreground gate's thread
/// or a pool thread working for it): never demoted, and the steps it starts
/// are not either.
pub fn mark_foreground_thread() {
    if is_foreground_thread() {
        return;
    }
    let tid = gettid();
    state().foreground_threads.insert(tid);
    MARK.with(|m| *m.borrow_mut() = Some(Mark(tid)));
}

/// Whether the calling thread is foreground work ([`mark_foreground_thread`]).
pub fn is_foreground_thread() -> bool {
    MARK.with(|m| m.borrow().is_some())
}

/// Called by a background gate's thread as it starts: demoted at once when
/// a guard is held (threads start at the priority of the one that made them,
/// the scheduler's main thread, which is never demoted).
pub fn join_background() {
    if is_foreground_thread() {
        return;
    }
    // Under the lock: a guard's restore walk cannot run in between.
    let mut s = state();
    if s.held > 0 {
        s.counts.demoted += u64::from(set_idle(gettid()));
    }
}

/// Records a step the calling thread started (its leader's pid): a
/// foreground thread's steps are exempt from demotion.
pub(crate) fn started(pid: u32) {
    if is_foreground_thread() {
        if let Ok(pid) = i32::try_from(pid) {
            state().foreground_steps.insert(pid);
        }
    }
}

/// Forgets a step once reaped.
pub(crate) fn reaped(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        state().foreground_steps.remove(&pid);
    }
}

/// What the guards did so far in this process.
pub fn counts() -> Counts {
    state().counts
}

/// Held while a foreground step runs (see the module documentation).
#[must_use = "the other steps are idle only while the guard is held"]
pub struct Foreground(());

/// Takes a guard: the first one demotes the run's other work.
pub fn foreground() -> Foreground {
    if !can_restore() {
        // Nothing is demoted that could not be restored: the pipeline then
        // runs the suites alone instead.
        return Foreground(());
    }
    let mut s = state();
    s.held += 1;
    if s.held == 1 {
        s.counts.periods += 1;
        let demoted = walk(&s, set_idle, false);
        s.counts.demoted += demoted.0;
    }
    Foreground(())
}

impl Drop for Foreground {
    fn drop(&mut self) {
        if !can_restore() {
            return;
        }
        let mut s = state();
        s.held = s.held.saturating_sub(1);
        if s.held == 0 {
            // Again until a walk finds nothing idle: a demoted thread may
            // start a process or thread while a walk reads /proc.
            for _ in 0..RESTORE_WALKS {
                let (restored, refused) = walk(&s, restore, true);
                s.counts.restored += restored;
                s.counts.refused += refused;
                if restored == 0 && refused == 0 {
                    break;
                }
            }
        }
    }
}

/// Most restore walks after a foreground period.
const RESTORE_WALKS: usize = 4;

/// Whether the kernel lets this process restore a thread it demoted to
/// `SCHED_IDLE` (`CAP_SYS_NICE`, or an `RLIMIT_NICE` that permits the nice
/// value): probed once, on a thread of its own demoted and restored. When it
/// does not, [`foreground`] demotes nothing, and the pipeline runs the
/// foreground gate alone (as `--jobs 1` does), so no step is left idle.
pub fn can_restore() -> bool {
    static PROBED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROBED.get_or_init(|| {
        // A verifier started idle (`chrt --idle 0`) keeps the user's choice:
        // nothing of it is demoted or restored.
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        if policy(me) == Some(libc::SCHED_IDLE) {
            return false;
        }
        std::thread::spawn(|| {
            let tid = gettid();
            set_idle(tid) && restore(tid) && policy(tid) == Some(libc::SCHED_OTHER)
        })
        .join()
        .unwrap_or(false)
    })
}

/// Applies `f` to every thread of the run but the exempt ones: the
/// verifier's own threads but its main thread and the foreground threads,
/// and every thread of every process below the verifier but the foreground
/// steps and what is below them (only the threads now `SCHED_IDLE` when
/// `idle_only`). Returns how many calls said true and how many said false.
fn walk(s: &State, f: fn(i32) -> bool, idle_only: bool) -> (u64, u64) {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let mut tally = (0, 0);
    let mut count = |tid: i32| {
        if idle_only && policy(tid) != Some(libc::SCHED_IDLE) {
            return;
        }
        if f(tid) {
            tally.0 += 1;
        } else {
            tally.1 += 1;
        }
    };
    for tid in threads(me) {
        if tid != me && !s.foreground_threads.contains(&tid) && !is_watch(me, tid) {
            count(tid);
        }
    }
    let procs = procfs::all();
    let exempt: BTreeSet<i32> = s
        .foreground_steps
        .iter()
        .flat_map(|pid| procfs::descendants(&procs, *pid))
        .map(|p| p.pid)
        .collect();
    for p in procfs::descendants(&procs, me) {
        if p.pid == me || exempt.contains(&p.pid) || p.exited() {
            continue;
        }
        for tid in threads(p.pid) {
            count(tid);
        }
    }
    tally
}

/// Whether thread `tid` of the verifier (`me`) is the interrupt watch
/// (`crate::interrupt::Watch`, found by its thread name): it must notice
/// SIGINT and SIGTERM at once while the suites take every core.
fn is_watch(me: i32, tid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{me}/task/{tid}/comm"))
        .is_ok_and(|name| name.trim_end() == "interrupt watch")
}

/// The thread ids of process `pid` (none when it is gone).
fn threads(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// ioprio_set(2)'s "which" for one thread, and the classes used here.
const IOPRIO_WHO_PROCESS: libc::c_int = 1;
const IOPRIO_CLASS_SHIFT: libc::c_int = 13;
const IOPRIO_CLASS_NONE: libc::c_int = 0;
const IOPRIO_CLASS_IDLE: libc::c_int = 3;

fn set_ioprio(tid: i32, class: libc::c_int) {
    // SAFETY: a plain system call on integers; a thread that is gone makes
    // it fail with ESRCH, which is ignored (best effort).
    unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            tid,
            class << IOPRIO_CLASS_SHIFT,
        );
    }
}

/// The scheduling policy of thread `tid` (`None` when it is gone).
pub fn policy(tid: i32) -> Option<libc::c_int> {
    // SAFETY: a plain system call on an integer.
    let p = unsafe { libc::sched_getscheduler(tid) };
    (p >= 0).then_some(p)
}

/// Demotes thread `tid` to `SCHED_IDLE` and the idle I/O class; true when
/// the kernel took the policy (false: gone, or not ours).
fn set_idle(tid: i32) -> bool {
    if policy(tid) == Some(libc::SCHED_IDLE) {
        return true;
    }
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a plain system call with a valid pointer to a local.
    let ok = unsafe { libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) } == 0;
    if ok {
        set_ioprio(tid, IOPRIO_CLASS_IDLE);
    }
    ok
}

/// Restores thread `tid` from `SCHED_IDLE` to `SCHED_OTHER` at the nice
/// value it kept, and the default I/O class; true when restored (or gone
/// meanwhile), false when the kernel refused. A thread that is not idle is
/// left alone ([`walk`] does not count it).
fn restore(tid: i32) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a plain system call with a valid pointer to a local.
    let ok = unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) } == 0;
    set_ioprio(tid, IOPRIO_CLASS_NONE);
    // A thread that ended meanwhile is no refusal.
    ok || policy(tid).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    fn sleeper() -> Child {
        Command::new("sleep").arg("30").spawn().expect("sleep")
    }

    fn pid(c: &Child) -> i32 {
        i32::try_from(c.id()).expect("pid")
    }

    /// One test, not several: the guard's state is the process's own, and
    /// the unit tests share a process. Where the kernel would not restore a
    /// demoted thread, the guard demotes nothing (the pipeline then runs the
    /// suites alone), and the test checks that instead.
    #[test]
    fn a_guard_idles_the_other_steps_and_spares_the_foreground_until_it_is_dropped() {
        let mut background = sleeper();
        let (fg_tx, fg_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let foreground_thread = std::thread::spawn(move || {
            mark_foreground_thread();
            mark_foreground_thread(); // twice: still marked
            let child = sleeper();
            started(child.id());
            fg_tx.send((gettid(), child)).expect("send");
            done_rx.recv().ok();
        });
        let (fg_tid, mut foreground_child) = fg_rx.recv().expect("foreground");
        let restorable = can_restore();
        let guard = foreground();
        let idle_while_held = if restorable {
            Some(libc::SCHED_IDLE)
        } else {
            Some(libc::SCHED_OTHER)
        };
        assert_eq!(policy(pid(&background)), idle_while_held);
        assert_eq!(policy(pid(&foreground_child)), Some(libc::SCHED_OTHER));
        assert_eq!(policy(fg_tid), Some(libc::SCHED_OTHER));
        // A process a demoted thread starts inherits the policy.
        let (tx, rx) = std::sync::mpsc::channel();
        let demoted_thread = std::thread::spawn(move || {
            join_background();
            let c = sleeper();
            tx.send(c).expect("send");
        });
        demoted_thread.join().expect("thread");
        let mut inherited = rx.recv().expect("child");
        assert_eq!(policy(pid(&inherited)), idle_while_held);
        // The verifier's main thread is never demoted.
        let me = i32::try_from(std::process::id()).expect("pid");
        assert_ne!(policy(me), Some(libc::SCHED_IDLE));
        drop(guard);
        // Restored: nothing of the run is left idle.
        assert_eq!(policy(pid(&background)), Some(libc::SCHED_OTHER));
        assert_eq!(policy(pid(&inherited)), Some(libc::SCHED_OTHER));
        if restorable {
            let c = counts();
            assert!(c.demoted >= 2 && c.restored >= 2 && c.refused == 0, "{c:?}");
        }
        for c in [&mut background, &mut foreground_child, &mut inherited] {
            let _ = c.kill();
            let _ = c.wait();
        }
        done_tx.send(()).ok();
        foreground_thread.join().expect("thread");
    }
}
