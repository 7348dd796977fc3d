//! Work inside a gate, one thread per item, as wide as the run allows.
//!
//! With `--jobs N` for N > 1 a gate runs its per-candidate steps (builds,
//! admissions, preparations, downloads, the two suites runs) all at once; with
//! `--jobs 1` the run is serial throughout: one gate at a time and, inside
//! it, one step at a time. [`crate::context::RunContext::width`] gives the
//! width; [`map`] honours it.

/// Runs `f` on every input, at most `width` at a time (0 is taken as 1), each
/// call in its own thread; the results come back in input order. A call that
/// panics yields `on_panic(input)` instead (a harness defect the caller
/// reports as a failing check, never a lost result).
pub fn map<I: Sync, T: Send>(
    inputs: &[I],
    width: usize,
    f: impl Fn(&I) -> T + Sync,
    on_panic: impl Fn(&I) -> T,
) -> Vec<T> {
    let mut out = Vec::with_capacity(inputs.len());
    for chunk in inputs.chunks(width.max(1)) {
        std::thread::scope(|s| {
            let f = &f;
            // The gate this thread works for is its steps' too (the journal
            // of signals names it).
            let gate = crate::process::journal::current_gate();
            let handles: Vec<_> = chunk
                .iter()
                .map(|i| {
                    let gate = gate.clone();
                    s.spawn(move || crate::process::journal::in_gate(gate.as_deref(), || f(i)))
                })
                .collect();
            for (h, i) in handles.into_iter().zip(chunk) {
                out.push(h.join().unwrap_or_else(|_| on_panic(i)));
            }
        });
    }
    out
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

    #[test]
    fn a_panicking_call_yields_its_stand_in_and_the_others_their_results() {
        let out = map(
            &[1, 2, 3],
            usize::MAX,
            |i| if *i == 2 { panic!("boom") } else { i * 2 },
            |i| -i,
        );
        assert_eq!(out, [2, -2, 6]);
    }
}
