//! The run's job budget (`--jobs N`): at most N units of work at once, gates
//! and the per-candidate (or per-run) work inside them alike, as `make -j`
//! and cargo's jobserver count jobs.
//!
//! The pipeline takes one job for each gate it runs ([`try_acquire`]); a gate
//! that works on several items at once ([`map`]) works on them in its own
//! thread, under its gate's job, and in as many extra threads as jobs are
//! free when it starts. With `--jobs 1` everything runs one after another.
//! Before [`set_budget`] (unit tests, `replay`) the budget is unlimited.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A number of jobs, and how many are taken.
#[derive(Debug)]
pub struct Budget {
    /// Jobs that may be taken at once (`usize::MAX`: unlimited).
    limit: AtomicUsize,
    /// Jobs taken.
    taken: AtomicUsize,
}

/// The run's budget.
static RUN: Budget = Budget::unlimited();

/// Sets the run's budget to `jobs` (at least 1).
pub fn set_budget(jobs: usize) {
    RUN.limit.store(jobs.max(1), Ordering::SeqCst);
}

/// A job of the run's budget, when one is free.
pub fn try_acquire() -> Option<Job<'static>> {
    RUN.try_acquire()
}

/// [`Budget::map`] on the run's budget.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
    on_panic: impl Fn(&T) -> R,
) -> Vec<R> {
    RUN.map(items, f, on_panic)
}

/// One job taken from a budget; given back when dropped.
#[derive(Debug)]
pub struct Job<'a>(&'a Budget);

impl Drop for Job<'_> {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Budget {
    /// A budget without limit.
    pub const fn unlimited() -> Self {
        Self::new(usize::MAX)
    }

    /// A budget of `limit` jobs.
    pub const fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit),
            taken: AtomicUsize::new(0),
        }
    }

    /// A job, when one is free.
    pub fn try_acquire(&self) -> Option<Job<'_>> {
        let limit = self.limit.load(Ordering::SeqCst);
        self.taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| {
                (taken < limit).then_some(taken + 1)
            })
            .ok()
            .map(|_| Job(self))
    }

    /// `f` of every item, in input order: the calling thread (which holds a
    /// job already) works through the items together with one extra thread
    /// for each job free when it starts (at most one per further item). An
    /// item whose `f` panicked gets `on_panic(item)`.
    pub fn map<T: Sync, R: Send>(
        &self,
        items: &[T],
        f: impl Fn(&T) -> R + Sync,
        on_panic: impl Fn(&T) -> R,
    ) -> Vec<R> {
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
        let work = || loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(item) = items.get(i) else { break };
            if let Ok(r) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item))) {
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            }
        };
        std::thread::scope(|s| {
            let mut extra = Vec::new();
            for _ in 1..items.len() {
                let Some(job) = self.try_acquire() else { break };
                let work = &work;
                extra.push(s.spawn(move || {
                    let _job = job;
                    work();
                }));
            }
            work();
            for h in extra {
                let _ = h.join();
            }
        });
        results
            .into_iter()
            .zip(items)
            .map(|(r, item)| {
                r.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or_else(|| on_panic(item))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::time::Duration;

    #[test]
    fn results_keep_input_order_and_a_panic_becomes_its_items_value() {
        let budget = Budget::unlimited();
        let items: Vec<u64> = (0..7).collect();
        let out = budget.map(
            &items,
            |i| {
                std::thread::sleep(Duration::from_millis(10 * (7 - i)));
                assert!(*i != 3, "boom");
                i * 10
            },
            |i| 1000 + i,
        );
        assert_eq!(out, [0, 10, 20, 1003, 40, 50, 60]);
        assert_eq!(
            budget.taken.load(Ordering::SeqCst),
            0,
            "every job given back"
        );
    }

    #[test]
    fn without_a_free_job_the_calling_thread_does_every_item() {
        let budget = Budget::new(1);
        let gate = budget.try_acquire().expect("the gate's own job");
        assert!(budget.try_acquire().is_none(), "a budget of 1 has one job");
        let threads = Mutex::new(HashSet::new());
        let out = budget.map(
            &[1, 2, 3],
            |i| {
                threads.lock().unwrap().insert(std::thread::current().id());
                i + 1
            },
            |_| 0,
        );
        assert_eq!(out, [2, 3, 4]);
        assert_eq!(
            threads.into_inner().unwrap(),
            HashSet::from([std::thread::current().id()])
        );
        drop(gate);
        assert!(budget.try_acquire().is_some(), "the job was given back");
    }

    #[test]
    fn free_jobs_become_extra_threads_at_most_one_per_further_item() {
        let budget = Budget::new(3);
        let _gate = budget.try_acquire().unwrap();
        let threads = Mutex::new(HashSet::new());
        let peak = AtomicUsize::new(0);
        let items: Vec<u32> = (0..6).collect();
        budget.map(
            &items,
            |_| {
                threads.lock().unwrap().insert(std::thread::current().id());
                peak.fetch_max(budget.taken.load(Ordering::SeqCst), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(30));
            },
            |_| (),
        );
        // The gate's job and the two free ones: three threads at most.
        assert!(threads.into_inner().unwrap().len() <= 3);
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        // Two items: one extra thread at most, although two jobs are free.
        let b = Budget::new(10);
        b.map(
            &[1, 2],
            |_| {
                peak.store(b.taken.load(Ordering::SeqCst), Ordering::SeqCst);
            },
            |_| (),
        );
        assert!(peak.load(Ordering::SeqCst) <= 1);
    }
}
