//! The `bytecode` decision of the `sdk-record` gate: every bytecode file the
//! probe examined is the compilation of its RECORD-verified source, and
//! bytecode of a source that is not verified is a consequence of that
//! source's row, not a finding of its own.

use super::{
    normalize_join, BytecodeFile, BytecodeOutcome, BytecodeProbe, RecordObservation, DISTRIBUTION,
};
use crate::evidence::Check;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// The check a bytecode problem is a consequence of, when its cause is
/// another finding (its source's row), not the bytecode itself.
pub(crate) type Root = Option<&'static str>;

/// A problem's sentence and its root.
type Problem = (String, Root);

/// One sentence per bytecode file that is not the compilation of its
/// verified source by this interpreter (`path: expected ..., found ...`),
/// with the check it is a consequence of: bytecode equal to a source that is
/// not verified is no finding of its own, the source's row is
/// (`record-rows` for a malformed, mismatched or missing row,
/// `unlisted-files` for a source RECORD does not list).
pub(crate) fn bytecode_problems(
    probe: &BytecodeProbe,
    record: &RecordObservation,
) -> Vec<(String, Root)> {
    let site_packages = Path::new(&record.site_packages);
    let tag = &probe.cache_tag;
    let mut problems = Vec::new();
    for file in &probe.files {
        let path = &file.path;
        let source = file.source.as_deref().unwrap_or("?");
        let level = file.optimize.unwrap_or(0);
        let why = file.difference.as_deref().unwrap_or("");
        let problem = match file.outcome {
            BytecodeOutcome::Equal => {
                let Some(problem) = equal_problem(file, site_packages, record) else {
                    continue;
                };
                problem
            }
            BytecodeOutcome::Differs => (
                format!(
                    "{path}: expected this interpreter's compilation of {source} (optimize {level}), \
                     found other code (first difference: {why})"
                ),
                None,
            ),
            BytecodeOutcome::NoSource => (
                format!("{path}: expected the compilation of {source}, found no such source file"),
                None,
            ),
            BytecodeOutcome::ForeignName => (
                format!(
                    "{path}: expected only `<module>.{tag}.pyc` or `<module>.{tag}.opt-N.pyc` in \
                     __pycache__, found a file this interpreter's bytecode cache does not name"
                ),
                None,
            ),
            BytecodeOutcome::BadHeader => (
                format!(
                    "{path}: expected a header for this interpreter (PEP 552, magic {}), found {why}",
                    probe.magic
                ),
                None,
            ),
            BytecodeOutcome::Unreadable => (
                format!("{path}: expected a readable bytecode file, found {why}"),
                None,
            ),
            BytecodeOutcome::Sourceless => (
                format!(
                    "{path}: expected bytecode only in __pycache__, found a sourceless .pyc, which \
                     import loads with no source to verify it against"
                ),
                None,
            ),
        };
        problems.push(problem);
    }
    problems
}

/// The problem of a bytecode file equal to the compilation of its source:
/// none when that source is RECORD-verified, else its source's row (or no
/// source named at all).
fn equal_problem(
    file: &BytecodeFile,
    site_packages: &Path,
    record: &RecordObservation,
) -> Option<Problem> {
    let path = &file.path;
    let source = file.source.as_deref().unwrap_or("?");
    let resolved = file
        .source
        .as_deref()
        .map(|s| normalize_join(site_packages, s));
    let Some(resolved) = resolved else {
        return Some((
            format!(
                "{path}: expected the compilation of a RECORD-verified source, found no \
                 source named"
            ),
            None,
        ));
    };
    if record.rows.verified.contains(&resolved) {
        return None;
    }
    let text = resolved.display().to_string();
    let expected = "expected the compilation of a RECORD-verified source, found it equal to";
    Some(
        if let Some(m) = record.malformed_paths.iter().find(|m| m.resolved == text) {
            (
                format!(
                    "{path}: {expected} {source}, which is not verified because its RECORD \
                 row (row {}) is malformed",
                    m.row
                ),
                Some("record-rows"),
            )
        } else if record.rows.listed.contains(&resolved) {
            (
                format!(
                    "{path}: {expected} {source}, whose RECORD row did not verify (see \
                 record-rows)"
                ),
                Some("record-rows"),
            )
        } else {
            (
                format!(
                    "{path}: {expected} {source}, which RECORD does not list (see \
                 unlisted-files)"
                ),
                Some("unlisted-files"),
            )
        },
    )
}

/// How `equal` files were found equal: ` (N compiled and compared now, M
/// identical by SHA-256 to pairs an earlier run compiled and compared with
/// this interpreter: the bytecode cache FILE)`, or empty when none came from
/// the cache.
pub(crate) fn cache_sentence(
    equal: u64,
    cached: u64,
    cache: Option<&super::BytecodeCacheRead>,
) -> String {
    match cache {
        Some(c) if cached > 0 => format!(
            " ({} compiled and compared now, {cached} identical by path and SHA-256 of source and \
             bytecode to pairs an earlier run compiled and compared with this interpreter in this \
             environment: the bytecode cache {}, SHA-256 {}, written only by the verifier; \
             VCC_BYTECODE_CACHE=off compiles every file)",
            equal - cached,
            c.path,
            c.sha256.as_deref().unwrap_or("-"),
        ),
        _ => String::new(),
    }
}

/// How many of the probed bytecode files have each header kind (`none`
/// for a file whose header was not read).
fn header_kinds(probe: &BytecodeProbe) -> BTreeMap<String, u64> {
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for file in &probe.files {
        let kind = file
            .header
            .as_ref()
            .and_then(|h| h.kind.clone())
            .unwrap_or_else(|| "none".into());
        *kinds.entry(kind).or_default() += 1;
    }
    kinds
}

/// `bytecode` when every problem is bytecode of a source that is not
/// verified (`caused`, under `dir`): a consequence of the source's row.
fn caused_only_check(dir: &str, caused: &[&Problem], observed: serde_json::Value) -> Check {
    let texts: Vec<String> = caused.iter().map(|(t, _)| t.clone()).collect();
    // Every problem is bytecode of a source that is not verified: the
    // source's row is the finding, this is its consequence.
    let root = if caused.iter().any(|(_, r)| *r == Some("record-rows")) {
        "record-rows"
    } else {
        "unlisted-files"
    };
    Check::fail(
        "bytecode",
        None,
        format!(
            "{} bytecode file(s) under {dir} are not verified because their source is not:\n  {}",
            caused.len(),
            texts.join("\n  ")
        ),
    )
    .with_observed(observed)
    .consequence_of(root)
}

pub(crate) fn bytecode_check(
    probe: &BytecodeProbe,
    package_dir: &Path,
    problems: &[(String, Root)],
    pinned: &str,
) -> Check {
    let kinds = header_kinds(probe);
    let (own, caused): (Vec<&Problem>, Vec<&Problem>) =
        problems.iter().partition(|(_, root)| root.is_none());
    let texts =
        |list: &[&(String, Root)]| -> Vec<String> { list.iter().map(|(t, _)| t.clone()).collect() };
    let equal = probe
        .files
        .iter()
        .filter(|f| f.outcome == BytecodeOutcome::Equal)
        .count() as u64;
    let cached = probe.files.iter().filter(|f| f.cached).count() as u64;
    let observed = json!({
        "cache_tag": probe.cache_tag,
        "magic": probe.magic,
        "files": probe.files.len(),
        "equal": equal,
        "equal_from_cache": cached,
        "cache": probe.cache,
        "header_kinds": kinds,
        "problems": texts(&own),
        "unverified_sources": texts(&caused),
    });
    let dir = package_dir.display();
    let tag = &probe.cache_tag;
    if problems.is_empty() {
        return Check::pass(
            "bytecode",
            None,
            format!(
                "all {} bytecode files under {dir} are this interpreter's ({tag}) compilation of their \
                 RECORD-verified sources: code objects equal, recursively{}",
                probe.files.len(),
                cache_sentence(equal, cached, probe.cache.as_ref()),
            ),
        )
        .with_observed(observed);
    }
    if own.is_empty() {
        return caused_only_check(&dir.to_string(), &caused, observed);
    }
    let more = if caused.is_empty() {
        String::new()
    } else {
        format!(
            "\n{} more not verified because their source is not (see record-rows, unlisted-files):\n  {}",
            caused.len(),
            texts(&caused).join("\n  ")
        )
    };
    Check::fail(
        "bytecode",
        None,
        format!(
            "{} bytecode file(s) under {dir} are not this interpreter's compilation of their verified \
             source, and Python (even with -I -B) would run them instead of the source:\n  {}\n\
             delete them (Python then compiles the verified source) or reinstall \
             {DISTRIBUTION}=={pinned} into a fresh environment{more}",
            own.len(),
            texts(&own).join("\n  ")
        ),
    )
    .with_observed(observed)
}
