//! The `stage` gate's judgements of what was read before `git archive`:
//! history rewrites (replace refs, grafts) and filter drivers the
//! repository configures. Pure.

use super::{byte_attributes_check, byte_changing_attributes, BeforeArchive, FilterDriver};
use crate::evidence::Check;
use crate::git::HistoryRewrite;
use serde_json::json;

/// The `history-rewrites` check: no replace ref and no graft file.
pub(crate) fn history_rewrites_check(rewrites: &[HistoryRewrite], commit: &str) -> Check {
    let observed = json!({ "count": rewrites.len(), "rewrites": rewrites });
    if rewrites.is_empty() {
        return Check::pass(
            "history-rewrites",
            None,
            format!(
                "no replace ref (refs/replace/*) and no graft file: git reads commit {commit} as a fresh clone does"
            ),
        )
        .with_observed(observed);
    }
    let mut fixes = Vec::new();
    let lines: Vec<String> = rewrites
        .iter()
        .map(|r| match r {
            HistoryRewrite::ReplaceRef { name, replacement } => {
                let id = name.strip_prefix("refs/replace/").unwrap_or(name);
                fixes.push(format!("`git replace -d {id}`"));
                format!("{name} (object {id} reads as {replacement})")
            }
            HistoryRewrite::Grafts { path, lines } => {
                fixes.push(format!("delete {path}"));
                format!("{path} (graft file, {lines} line(s))")
            }
        })
        .collect();
    Check::fail(
        "history-rewrites",
        None,
        format!(
            "expected commit {commit} to read as a fresh clone reads it, found {} history rewrite(s):\n  {}\n\
             the harness ran git with replace objects and grafts off, so staging/source holds the commit's own \
             tree; but git in this repository shows other objects for it, so what was reviewed here is not what \
             would be certified. The harness refuses to certify a repository whose history is rewritten by \
             replace refs or grafts: remove them ({}) and run again",
            rewrites.len(),
            lines.join("\n  "),
            fixes.join(", ")
        ),
    )
    .with_observed(observed)
}

/// The `filter-drivers` check over configured drivers that committed
/// attributes select.
fn filter_drivers_check(drivers: &[FilterDriver]) -> Check {
    let observed = json!(drivers);
    let lines: Vec<String> = drivers
        .iter()
        .map(|d| {
            let commands: Vec<String> = d
                .commands
                .iter()
                .map(|(k, v)| format!("{k} = {v:?}"))
                .collect();
            format!(
                "filter `{}` ({}), selected by `filter={}` for:\n    {}",
                d.driver,
                commands.join(", "),
                d.driver,
                d.paths.join("\n    ")
            )
        })
        .collect();
    Check::fail(
        "filter-drivers",
        None,
        format!(
            "expected no command of the repository's own git configuration to filter the bytes to certify, \
             found {} filter driver(s) configured there and selected by a committed attribute:\n  {}\n\
             git archive would run them on these files; the harness disabled them on the command line and \
             did not run git archive. Remove the `filter` attribute from .gitattributes (or \
             .git/info/attributes), commit the files as they should ship, and run again; \
             `git config --unset` the driver's settings if it is not needed",
            drivers.len(),
            lines.join("\n  ")
        ),
    )
    .with_observed(observed)
}

/// The checks when configured filter drivers refuse the commit before
/// `git archive`: git-archive (not run, a consequence), history-rewrites,
/// filter-drivers and byte-attributes.
pub(crate) fn decide_before_archive(before: &BeforeArchive, commit: &str) -> Vec<Check> {
    let mut checks = vec![
        Check::fail(
            "git-archive",
            None,
            format!(
                "`git archive {commit}` not run: a filter driver of the repository's configuration would \
                 have filtered it (see the filter-drivers check, which names the cause and the fix)"
            ),
        )
        .with_observed(json!({ "run": false }))
        .consequence_of("filter-drivers"),
        history_rewrites_check(&before.rewrites, commit),
        filter_drivers_check(&before.filter_drivers),
    ];
    if let Ok(attributes) = &before.attributes {
        checks.push(byte_attributes_check(&byte_changing_attributes(attributes)));
    }
    checks
}
