//! Every file of a share, re-hashed before it is merged: the share's own
//! `replay` (without `--repo`) must find nothing that differs. That covers
//! each file against the share's `SHA256SUMS` (a differing file, a file it
//! lists that is missing, such as a dot-file an artifact upload dropped, and
//! a file it does not list), the files digest its sign-off seals (a log
//! rewritten together with `SHA256SUMS`), its archives and wheelhouse, and
//! the views rendered from its `evidence.json`.

use crate::replay::{self, Match, ReplayOptions, Row};
use std::path::Path;

/// How many differences a refusal lists before it says how many more there are.
const LISTED: usize = 8;

/// Ok when the share in `dir` replays without a difference.
///
/// # Errors
/// A sentence naming the share and each differing file (`missing`, `not
/// listed in SHA256SUMS`, or recorded and observed digests), and what to do.
pub(super) fn check(dir: &Path) -> Result<(), String> {
    let report = replay::replay(&ReplayOptions {
        evidence: dir.to_path_buf(),
        repo: None,
        python: None,
        recorded_python_only: false,
    })
    .map_err(|e| format!("{}: cannot re-hash the share: {e}", dir.display()))?;
    let differing: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| r.matches == Match::No)
        .collect();
    if differing.is_empty() {
        return Ok(());
    }
    let mut named: Vec<String> = differing.iter().take(LISTED).map(|r| describe(r)).collect();
    if differing.len() > LISTED {
        named.push(format!("and {} more", differing.len() - LISTED));
    }
    Err(format!(
        "{}: expected every file of the share to match its SHA256SUMS and evidence.json, found {} \
         difference(s): {}; refusing to merge it (run `replay --evidence {}` to see every difference; \
         re-run that partition, or copy it again keeping every file: an artifact upload that drops \
         dot-files loses files SHA256SUMS lists)",
        dir.display(),
        differing.len(),
        named.join("; "),
        dir.display()
    ))
}

/// One differing row in words: a file `SHA256SUMS` lists that is gone is
/// `missing`, one it does not list is `not listed`.
fn describe(row: &Row) -> String {
    match (row.recorded.as_str(), row.observed.as_str()) {
        (recorded, "removed") => format!("{}: missing (recorded sha256 {recorded})", row.item),
        ("absent", observed) => format!(
            "{}: not listed in SHA256SUMS or the sealed listing (sha256 {observed})",
            row.item
        ),
        (recorded, observed) => format!("{}: recorded {recorded}, observed {observed}", row.item),
    }
}
