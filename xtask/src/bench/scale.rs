//! The scale part of `cargo xtask bench`: does the cost of one candidate
//! stay flat as the candidate count grows (issue 23, item 8)? Generated
//! repositories of several sizes are certified in rounds (every size once
//! per round, so load on a shared machine falls on all sizes alike); each
//! size's medians become a row of one table, and the largest size is judged
//! against the smallest:
//!
//! - CPU and wall per candidate (the run's total over its candidates) at most
//!   [`PER_CANDIDATE_TARGET`] times the smallest size's. A run's fixed cost
//!   (sdk-record, the suites, worker-isolation) is spread over more
//!   candidates as the count grows, so these ratios alone could hide a cost
//!   that grows with the count; hence
//! - the marginal CPU of one more candidate between the two largest sizes at
//!   most [`MARGINAL_TARGET`] times that between the two smallest (three
//!   sizes or more): a per-candidate step that is itself O(n) shows here;
//! - the verifier's own peak RSS (`VmHWM`) at most [`MEMORY_TARGET`] times
//!   the smallest size's.
//!
//! - the whole tree's peak (every process of the run's cgroup: the runtime
//!   and the plugin workers among them) at most [`MEMORY_TARGET`] times the
//!   smallest size's: `discovery-rpc` keeps installations resident in
//!   batches of its start window, not all at once, so it need not grow.

use super::{format_ratio, mib, Summary};
use anyhow::{bail, Result};
use std::fmt::Write as _;

/// Target: per-candidate CPU and wall at the largest size over the smallest's.
pub(crate) const PER_CANDIDATE_TARGET: f64 = 1.25;
/// Target: marginal CPU per candidate between the two largest sizes over
/// that between the two smallest.
pub(crate) const MARGINAL_TARGET: f64 = 1.25;
/// Target: the verifier's own `VmHWM` at the largest size over the smallest's.
pub(crate) const MEMORY_TARGET: f64 = 1.25;

/// The sizes measured for `--candidates N`: 5, N/2 and N (fewer when N is
/// small), ascending, each once.
pub(crate) fn default_sizes(n: usize) -> Vec<usize> {
    let mut v = vec![n.min(5), (n / 2).max(n.min(5)), n];
    v.dedup();
    v
}

/// `--sizes 5,25,50`: whole numbers >= 1, returned ascending without repeats.
///
/// # Errors
/// On an empty list or a value that is not a whole number >= 1.
pub(crate) fn parse_sizes(text: &str) -> Result<Vec<usize>> {
    let mut v = Vec::new();
    for part in text.split(',') {
        match part.trim().parse::<usize>() {
            Ok(n) if n >= 1 => v.push(n),
            _ => bail!(
                "--sizes {text:?}: {part:?} is not a whole number >= 1; expected e.g. 5,25,50"
            ),
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// One size's medians.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SizeRow {
    /// Candidates in the generated repository.
    pub candidates: usize,
    /// The medians of its runs that passed.
    pub summary: Summary,
}

impl SizeRow {
    fn per(&self, total: f64) -> f64 {
        total / self.candidates as f64
    }
}

/// The marginal CPU seconds of one more candidate from `a` to `b`.
fn marginal_cpu(a: &SizeRow, b: &SizeRow) -> Option<f64> {
    (b.candidates > a.candidates)
        .then(|| (b.summary.cpu - a.summary.cpu) / (b.candidates - a.candidates) as f64)
}

/// The sizes as an aligned table, ascending: totals, per candidate, the
/// marginal CPU from the previous size, the verifier's `VmHWM`, the tree's
/// peak (and per candidate).
pub(crate) fn format_scale_table(rows: &[SizeRow]) -> String {
    let mut out = format!(
        "{:>5} {:>4} {:>8} {:>8} {:>10} {:>10} {:>11} {:>12} {:>10} {:>12}\n",
        "cand.",
        "runs",
        "wall s",
        "cpu s",
        "wall/cand",
        "cpu/cand",
        "+cpu/cand",
        "verifier MiB",
        "tree MiB",
        "tree/cand"
    );
    let dash = || "-".to_string();
    for (i, r) in rows.iter().enumerate() {
        let marginal = i
            .checked_sub(1)
            .and_then(|p| marginal_cpu(&rows[p], r))
            .map_or_else(dash, |m| format!("{m:.2}"));
        let s = &r.summary;
        let _ = writeln!(
            out,
            "{:>5} {:>4} {:>8.1} {:>8.1} {:>10.2} {:>10.2} {:>11} {:>12} {:>10} {:>12}",
            r.candidates,
            s.runs,
            s.wall,
            s.cpu,
            r.per(s.wall),
            r.per(s.cpu),
            marginal,
            s.own_rss_kib.map_or_else(dash, mib),
            s.tree_peak_kib.map_or_else(dash, mib),
            s.tree_peak_kib
                .map_or_else(dash, |k| format!("{:.1}", r.per(k as f64) / 1024.0)),
        );
    }
    out
}

/// One judged target: its line, and whether it was met (`None`: it could
/// not be judged, for a figure not measured or fewer sizes than it needs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Judgement {
    pub line: String,
    pub met: Option<bool>,
}

/// `num/den` judged against `<= target`, with the line [`format_ratio`] writes.
fn ratio(what: &str, num: f64, den: f64, target: f64) -> Judgement {
    let measurable = den > 0.0 && num.is_finite() && den.is_finite();
    Judgement {
        line: format_ratio(what, num, den, target),
        met: measurable.then(|| num / den <= target),
    }
}

/// The scale targets, judged on `rows` (ascending sizes): the largest size
/// against the smallest. Nothing is judged with fewer than two sizes.
pub(crate) fn judge(rows: &[SizeRow]) -> Vec<Judgement> {
    let (Some(small), Some(large)) = (rows.first(), rows.last()) else {
        return Vec::new();
    };
    if rows.len() < 2 {
        return vec![Judgement {
            line: format!(
                "scale: one size ({} candidates) only; nothing to compare it with",
                small.candidates
            ),
            met: None,
        }];
    }
    let (n, m) = (large.candidates, small.candidates);
    let mut v = vec![
        ratio(
            &format!("cpu per candidate {n}/{m}"),
            large.per(large.summary.cpu),
            small.per(small.summary.cpu),
            PER_CANDIDATE_TARGET,
        ),
        ratio(
            &format!("wall per candidate {n}/{m}"),
            large.per(large.summary.wall),
            small.per(small.summary.wall),
            PER_CANDIDATE_TARGET,
        ),
    ];
    if rows.len() >= 3 {
        let k = rows.len();
        let first = marginal_cpu(&rows[0], &rows[1]).unwrap_or(f64::NAN);
        let last = marginal_cpu(&rows[k - 2], &rows[k - 1]).unwrap_or(f64::NAN);
        v.push(ratio(
            &format!(
                "marginal cpu per candidate {}->{} over {}->{}",
                rows[k - 2].candidates,
                n,
                m,
                rows[1].candidates
            ),
            last,
            first,
            MARGINAL_TARGET,
        ));
    } else {
        v.push(Judgement {
            line: "marginal cpu per candidate: n/a (needs three sizes)".into(),
            met: None,
        });
    }
    v.push(
        match (large.summary.own_rss_kib, small.summary.own_rss_kib) {
            (Some(l), Some(s)) => ratio(
                &format!("verifier VmHWM {n}/{m}"),
                l as f64,
                s as f64,
                MEMORY_TARGET,
            ),
            _ => Judgement {
                line: format!("verifier VmHWM {n}/{m}: n/a (not read at both sizes)"),
                met: None,
            },
        },
    );
    if let (Some(l), Some(s)) = (large.summary.tree_peak_kib, small.summary.tree_peak_kib) {
        v.push(ratio(
            &format!("tree peak {n}/{m}"),
            l as f64,
            s as f64,
            MEMORY_TARGET,
        ));
    }
    v
}

/// Whether every judged target was met (those not judged do not count).
pub(crate) fn all_met(judgements: &[Judgement]) -> bool {
    judgements.iter().all(|j| j.met != Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(candidates: usize, wall: f64, cpu: f64, own: Option<u64>, peak: Option<u64>) -> SizeRow {
        SizeRow {
            candidates,
            summary: Summary {
                label: format!("{candidates}"),
                runs: 2,
                wall,
                cpu,
                own_rss_kib: own,
                tree_rss_kib: 0,
                tree_peak_kib: peak,
            },
        }
    }

    #[test]
    fn sizes_default_to_five_half_and_all_and_parse_ascending() {
        assert_eq!(default_sizes(50), vec![5, 25, 50]);
        assert_eq!(default_sizes(30), vec![5, 15, 30]);
        assert_eq!(default_sizes(8), vec![5, 8]);
        assert_eq!(default_sizes(3), vec![3]);
        assert_eq!(default_sizes(1), vec![1]);
        assert_eq!(parse_sizes("50, 5,25,5").unwrap(), vec![5, 25, 50]);
        for bad in ["", "5,,50", "0,5", "x", "-3"] {
            assert!(parse_sizes(bad).is_err(), "{bad:?}");
        }
    }

    /// Linear cost plus a fixed part: every target met.
    #[test]
    fn a_cost_linear_in_the_count_meets_every_target() {
        // 40 s fixed + 4 s per candidate; the verifier's RSS flat.
        let rows = [
            row(5, 50.0, 60.0, Some(20_000), Some(400_000)),
            row(25, 130.0, 140.0, Some(21_000), Some(410_000)),
            row(50, 230.0, 240.0, Some(22_000), Some(420_000)),
        ];
        let j = judge(&rows);
        assert!(all_met(&j), "{j:#?}");
        assert_eq!(
            j[0].line,
            "cpu per candidate 50/5: 0.40 (target <= 1.25): PASS"
        );
        assert_eq!(
            j[2].line,
            "marginal cpu per candidate 25->50 over 5->25: 1.00 (target <= 1.25): PASS"
        );
        assert_eq!(
            j[3].line,
            "verifier VmHWM 50/5: 1.10 (target <= 1.25): PASS"
        );
        assert_eq!(j[4].line, "tree peak 50/5: 1.05 (target <= 1.25): PASS");
    }

    /// A quadratic step hidden by the fixed part in the per-candidate
    /// average is caught by the marginal cost.
    #[test]
    fn a_quadratic_cost_misses_the_marginal_target() {
        // cpu = 100 + 2 n + 0.05 n^2: 5 -> 111.25, 25 -> 181.25, 50 -> 325.
        let rows = [
            row(5, 1.0, 111.25, Some(1), None),
            row(25, 1.0, 181.25, Some(1), None),
            row(50, 1.0, 325.0, Some(1), None),
        ];
        let j = judge(&rows);
        assert_eq!(j[0].met, Some(true), "{}", j[0].line);
        assert_eq!(
            j[2].line,
            "marginal cpu per candidate 25->50 over 5->25: 1.64 (target <= 1.25): MISS"
        );
        assert!(!all_met(&j));
    }

    #[test]
    fn per_candidate_cost_or_memory_that_grows_misses() {
        let rows = [
            row(5, 10.0, 10.0, Some(10_000), None),
            row(50, 130.0, 126.0, Some(12_600), None),
        ];
        let j = judge(&rows);
        assert_eq!(
            j.iter().map(|j| j.met).collect::<Vec<_>>(),
            vec![Some(false), Some(false), None, Some(false)]
        );
        assert_eq!(
            j[1].line,
            "wall per candidate 50/5: 1.30 (target <= 1.25): MISS"
        );
        assert_eq!(
            j[2].line,
            "marginal cpu per candidate: n/a (needs three sizes)"
        );
        assert_eq!(
            j[3].line,
            "verifier VmHWM 50/5: 1.26 (target <= 1.25): MISS"
        );
        assert!(!all_met(&j));
    }

    /// A tree that keeps every candidate's worker (55 MiB each) misses.
    #[test]
    fn a_tree_peak_that_grows_with_the_count_misses() {
        let rows = [
            row(5, 10.0, 10.0, Some(10_000), Some(412_000)),
            row(50, 100.0, 100.0, Some(10_000), Some(2_783_000)),
        ];
        let j = judge(&rows);
        assert_eq!(j[4].line, "tree peak 50/5: 6.75 (target <= 1.25): MISS");
        assert!(!all_met(&j));
    }

    #[test]
    fn unmeasured_figures_and_a_single_size_are_not_judged() {
        let rows = [
            row(5, 10.0, 0.0, None, None),
            row(50, 100.0, 10.0, Some(5), None),
        ];
        let j = judge(&rows);
        assert_eq!(j[0].met, None, "a zero CPU denominator: {}", j[0].line);
        assert_eq!(
            j[3].line,
            "verifier VmHWM 50/5: n/a (not read at both sizes)"
        );
        assert!(all_met(&j));
        let one = judge(&rows[..1]);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].met, None);
        assert!(judge(&[]).is_empty());
    }

    #[test]
    fn the_scale_table_is_aligned_with_per_candidate_and_marginal_columns() {
        let rows = [
            row(5, 50.0, 60.0, Some(20_480), Some(409_600)),
            row(25, 130.0, 140.0, None, None),
        ];
        let t = format_scale_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "cand. runs   wall s    cpu s  wall/cand   cpu/cand   +cpu/cand verifier MiB   tree MiB    tree/cand"
        );
        assert_eq!(
            lines[1],
            "    5    2     50.0     60.0      10.00      12.00           -         20.0      400.0         80.0"
        );
        assert_eq!(
            lines[2],
            "   25    2    130.0    140.0       5.20       5.60        4.00            -          -            -"
        );
        assert!(lines.iter().all(|l| l.len() == lines[0].len()));
    }
}
