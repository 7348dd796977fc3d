//! Work inside a gate, a bounded pool of threads, as wide as the run allows.
//!
//! With `--jobs N` for N > 1 a gate runs its per-candidate steps (builds,
//! admissions, preparations, downloads) [`crate::context::RunContext::width`]
//! at a time: a pool of that many threads takes the next step as soon as one
//! ends. The width does not grow with the candidate count, so neither do the
//! verifier's threads nor the children alive at once (50 candidates once
//! meant 50 `lbp build`s side by side on two cores, and as many threads
//! here, each with its child's reader thread). With
//! `--jobs 1` the run is serial throughout: one gate at a time and, inside
//! it, one step at a time. [`map`] honours the width.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `f` on every input, at most `width` at a time (0 is taken as 1): a
/// pool of `min(width, inputs)` threads, each taking the next input in order
/// as soon as it is free; the results come back in input order. A call that
/// panics yields `on_panic(input)` instead (a harness defect the caller
/// reports as a failing check, never a lost result), and its thread goes on
/// with the next input.
pub fn map<I: Sync, T: Send>(
    inputs: &[I],
    width: usize,
    f: impl Fn(&I) -> T + Sync,
    on_panic: impl Fn(&I) -> T,
) -> Vec<T> {
    let threads = width.max(1).min(inputs.len());
    let next = AtomicUsize::new(0);
    // `None`: the call panicked.
    let results: Vec<Mutex<Option<Option<T>>>> = inputs.iter().map(|_| Mutex::new(None)).collect();
    // The gate this thread works for is its steps' too (the journal of
    // signals names it).
    let gate = crate::process::journal::current_gate();
    // A foreground gate's pool threads are foreground work too.
    let foreground = crate::process::priority::is_foreground_thread();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (f, next, results, gate) = (&f, &next, &results, gate.clone());
            s.spawn(move || {
                if foreground {
                    crate::process::priority::mark_foreground_thread();
                }
                crate::process::journal::in_gate(gate.as_deref(), || loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(input) = inputs.get(i) else { break };
                    let out = std::panic::catch_unwind(AssertUnwindSafe(|| f(input))).ok();
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(out);
                })
            });
        }
    });
    results
        .into_iter()
        .zip(inputs)
        .map(|(r, i)| {
            match r.into_inner().unwrap_or_else(|p| p.into_inner()) {
                Some(Some(t)) => t,
                // Panicked (or, were a pool thread itself lost, never run).
                _ => on_panic(i),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::map;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// The most calls in flight at once, for `width`.
    fn widest(width: usize, items: usize) -> (usize, Vec<usize>) {
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let inputs: Vec<usize> = (0..items).collect();
        let out = map(
            &inputs,
            width,
            |i| {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(30));
                now.fetch_sub(1, Ordering::SeqCst);
                i * 10
            },
            |_| usize::MAX,
        );
        (most.load(Ordering::SeqCst), out)
    }

    #[test]
    fn width_one_is_one_at_a_time_and_a_wide_map_runs_all_at_once() {
        let (most, out) = widest(1, 4);
        assert_eq!(most, 1);
        assert_eq!(out, [0, 10, 20, 30], "input order");
        let (most, out) = widest(0, 3);
        assert_eq!(most, 1, "0 is taken as 1");
        assert_eq!(out, [0, 10, 20]);
        let (most, out) = widest(usize::MAX, 4);
        assert!(most > 1, "all at once: {most} in flight at most");
        assert_eq!(out, [0, 10, 20, 30]);
        let (most, _) = widest(2, 5);
        assert!(most <= 2, "{most}");
    }

    /// The pool never holds more than `width` calls, whatever the count of
    /// inputs, and every input is run exactly once, in its own slot.
    #[test]
    fn the_pool_is_as_wide_as_the_width_for_any_number_of_inputs() {
        for items in [1, 3, 4, 9, 50] {
            let (most, out) = widest(4, items);
            assert!(most <= 4, "{items} inputs: {most} in flight");
            assert_eq!(out, (0..items).map(|i| i * 10).collect::<Vec<_>>());
        }
        let calls = AtomicUsize::new(0);
        let out = map(
            &[(); 20][..],
            3,
            |_| calls.fetch_add(1, Ordering::SeqCst),
            |_| usize::MAX,
        );
        assert_eq!(calls.load(Ordering::SeqCst), 20, "each input once");
        let mut seen = out.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
        assert!(map(&[] as &[u8], 4, |_| 1, |_| 0).is_empty());
    }

    #[test]
    fn a_panicking_call_yields_its_stand_in_and_the_others_their_results() {
        let out = map(
            &[1, 2, 3, 4],
            2,
            |i| if *i == 2 { panic!("boom") } else { i * 2 },
            |i| -i,
        );
        assert_eq!(out, [2, -2, 6, 8], "the panicking call's thread went on");
    }
}
