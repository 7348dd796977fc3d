//! The `lbp-build` gate: the official build of the verified SDK, run from each
//! staged candidate, produces exactly one archive named after the manifest.
//!
//! Per candidate (all candidates in parallel, results in profile order):
//! `<python> -I -X pycache_prefix=DIR/roots/pycache -m langbot_plugin.cli build -o DIR/roots/lbp-build/<folder>/out`
//! with cwd = the staged candidate, a private HOME/TMP, the allowlisted
//! environment and `LANG=C.UTF-8` (the SDK's `cli_print` picks its language
//! from `LANG`; English keeps "Plugin manifest not found" recognisable). `-I`
//! keeps the plugin folder off `sys.path`, so a `langbot_plugin/` folder in a
//! candidate cannot stand in for the SDK during the build.
//!
//! Checks per candidate: `manifest-identity` (the manifest names a string
//! author, name and version safe in a file name), `build-exit`,
//! `single-archive` (exactly one file, `<author>-<name>-<version>.lbpkg`,
//! moved to `DIR/packages/<folder>/`), `files-added` (the build reported no
//! file it could not add: it prints an error per file, leaves the file out
//! and still exits 0) and `source-untouched` (every staged file's
//! sha256 is the same after the build). The SDK's build exits 0 and writes
//! nothing on an invalid manifest, so the file is what counts, not the status.
//! A name, author or version unsafe in a file name is never built: the SDK
//! does not validate them and would write outside its output directory.
//!
//! `observe` (in `lbp_build/observe.rs`) runs the builds and records, per
//! candidate, a `CandidateBuild`; `decide` judges it without I/O.

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use crate::manifest::ManifestId;
use crate::process::ChildSpec;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod compiles;
mod file_errors;
mod host;
mod observe;

pub(crate) use file_errors::FileError;

/// The `lbp-build` gate.
pub struct LbpBuild;

/// Gate id, also the log and private-root folder name.
const GATE: &str = "lbp-build";

/// How the official build process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct BuildRun {
    /// Exit status; none when killed by a signal or stopped.
    pub status: Option<i32>,
    /// Exited 0 within the timeout.
    pub success: bool,
    /// Stopped at the timeout.
    pub timed_out: bool,
    /// Processes it left behind were stopped.
    pub stragglers_killed: bool,
    /// Wall-clock time.
    pub duration_ms: u64,
    /// How it ended, in words (`exit status 2`, `timed out and was stopped`).
    pub outcome: String,
    /// Its last 20 lines of output.
    pub tail: String,
    /// Where its stdout and stderr are.
    pub logs: String,
    /// It printed the SDK's "Plugin manifest not found".
    pub said_manifest_not_found: bool,
    /// Files it printed it could not add (and left out of the archive).
    pub file_errors: Vec<FileError>,
}

/// One entry of the build's output directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct OutEntry {
    /// File name.
    pub name: String,
    /// A regular file (not a directory or link).
    pub is_file: bool,
}

/// The archive moved to `DIR/packages/<folder>/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MovedArchive {
    /// Relative to the evidence directory (`packages/<folder>/<name>`).
    pub path: String,
    /// Bytes.
    pub size: u64,
}

/// Everything observed for one candidate, in the order it happened; a
/// `None` step did not run because an earlier one stopped the build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CandidateBuild {
    /// Candidate folder.
    pub folder: String,
    /// The output directory, as a path.
    pub out_dir: String,
    /// `manifest.yaml`'s identity, or why it cannot be read.
    pub identity: Result<ManifestId, String>,
    /// Identity fields that are strings unsafe in a file name
    /// (`metadata.name = "../../x"`); when any, nothing was built.
    pub unsafe_fields: Vec<String>,
    /// Why the build could not be started (private roots, output directory,
    /// the process itself, a harness thread); the build did not run.
    pub setup_error: Option<String>,
    /// Why the staged candidate could not be hashed before the build; the
    /// build did not run.
    pub unreadable_before: Option<String>,
    /// The build, when it ran.
    pub run: Option<BuildRun>,
    /// The output directory's entries, sorted, or why it cannot be listed.
    pub out_entries: Option<Result<Vec<OutEntry>, String>>,
    /// The move of the one expected archive, when that is what was written.
    pub moved: Option<Result<MovedArchive, String>>,
    /// The staged candidate before and after: `added x`, `removed y`,
    /// `changed z` (empty: unchanged), or why it could not be read after.
    pub source_changes: Option<Result<Vec<String>, String>>,
    /// Entries of the staged candidate before the build.
    pub source_entries: usize,
    /// What dated the staged files (a commit's date, or the working tree's
    /// own times), read when the build reported files it could not add (a
    /// date before 1980 is one cause).
    pub stamp: Option<file_errors::Stamp>,
    /// The `spec.pages` the SDK's build writes for this source, as the
    /// build host computed them (handed to `archive-members`); `None` when
    /// it did not.
    #[serde(skip)]
    pub build_pages: Option<serde_json::Value>,
}

impl CandidateBuild {
    /// A candidate nothing was observed for yet.
    pub(crate) fn new(folder: &str, out_dir: &Path, identity: Result<ManifestId, String>) -> Self {
        Self {
            folder: folder.to_string(),
            out_dir: out_dir.display().to_string(),
            identity,
            unsafe_fields: Vec::new(),
            setup_error: None,
            unreadable_before: None,
            run: None,
            out_entries: None,
            moved: None,
            source_changes: None,
            source_entries: 0,
            stamp: None,
            build_pages: None,
        }
    }
}

/// Whether `entries` is exactly one regular file named `expected`: the only
/// output that is moved and can pass.
pub(crate) fn is_exactly(entries: &[OutEntry], expected: &str) -> bool {
    matches!(entries, [one] if one.name == expected && one.is_file)
}

impl super::Gate for LbpBuild {
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        if ctx.staged_root.is_none() {
            return Err("the staged source is missing (the `stage` gate did not record DIR/staging/source); run `stage` first".into());
        }
        if ctx.verified_sdk.is_none() {
            return Err("the SDK was not verified (the `sdk-record` gate did not pass); run `sdk-record` first".into());
        }
        let builds = observe::observe(ctx);
        for b in &builds {
            let (folder, manifest) = (b.folder.clone(), b.identity.clone().ok());
            let pages = b.build_pages.clone();
            out.set(move |ctx| {
                if let Some(pages) = pages {
                    ctx.build_pages.insert(folder.clone(), pages);
                }
                if let Some(record) = ctx.record_mut(&folder) {
                    record.manifest = manifest;
                }
            });
        }
        let compiled = compiles::observe(ctx, &builds);
        Ok(builds
            .iter()
            .flat_map(|b| {
                let mut checks = decide(b);
                checks.extend(compiles::decide(b, &compiled));
                checks
            })
            .collect())
    }
}

/// The official build of the candidate at `source` into `out`:
/// `<python> -I <bytecode options> -m langbot_plugin.cli build -o <out>`
/// ([`crate::python::bytecode_options`]: the run's cache, or `-B` outside a
/// run) run from `source`
/// (the SDK's `langbot_plugin.cli.commands.buildplugin` needs `./manifest.yaml`),
/// with `env` plus `LANG=C.UTF-8` (so the SDK's messages, such as "Plugin
/// manifest not found", are in English). `-I` keeps the plugin folder off
/// `sys.path`. Used by this gate and by `replay`'s rebuild.
pub fn official_build_spec(
    python: &Path,
    source: &Path,
    out: &Path,
    mut env: BTreeMap<String, String>,
    timeout: Duration,
    log_stem: PathBuf,
) -> ChildSpec {
    env.insert("LANG".into(), "C.UTF-8".into());
    ChildSpec {
        program: python.to_path_buf(),
        args: ["-I".to_string()]
            .into_iter()
            .chain(crate::python::bytecode_options())
            .chain([
                "-m".into(),
                "langbot_plugin.cli".into(),
                "build".into(),
                "-o".into(),
                out.display().to_string(),
            ])
            .collect(),
        cwd: source.to_path_buf(),
        env,
        timeout,
        log_stem,
        stdin: None,
    }
}

/// Judges one candidate's build. Pure.
pub(crate) fn decide(b: &CandidateBuild) -> Vec<Check> {
    let folder = Some(b.folder.as_str());
    let mut checks = vec![manifest_identity(b)];
    if !b.unsafe_fields.is_empty() {
        return checks;
    }
    if let Some(e) = &b.setup_error {
        checks.push(
            Check::fail(
                "build-exit",
                folder,
                format!("the build could not be run: {e}"),
            )
            .with_observed(json!({ "setup_error": e })),
        );
        return checks;
    }
    if let Some(e) = &b.unreadable_before {
        checks.push(
            Check::fail(
                "source-untouched",
                folder,
                format!("cannot read the staged candidate before the build, so the build was not run: {e}"),
            )
            .with_observed(json!({ "unreadable_before": e })),
        );
        return checks;
    }
    let Some(run) = &b.run else {
        checks.push(Check::fail(
            "build-exit",
            folder,
            "the build was not run and no reason was recorded; this is a harness defect: report it",
        ));
        return checks;
    };
    let build_ok = run.success && !run.stragglers_killed;
    checks.push(
        Check::from_bool(
            "build-exit",
            folder,
            build_ok,
            if build_ok {
                format!("`lbp build` exited with status 0 in {} ms (output in {})", run.duration_ms, run.logs)
            } else if run.success {
                format!("`lbp build` exited 0 but left processes running, which were stopped; expected a build that exits alone (output in {})", run.logs)
            } else {
                format!(
                    "`lbp build` {} (expected exit status 0); last output:\n{}\nfull output in {}; \
                     fix what the output names in the candidate's source and commit",
                    run.outcome, run.tail, run.logs
                )
            },
        )
        .with_observed(json!({
            "status": run.status, "timed_out": run.timed_out, "stragglers_killed": run.stragglers_killed,
            "duration_ms": run.duration_ms,
        })),
    );
    checks.push(file_errors::files_added_check(
        &b.folder,
        &run.file_errors,
        b.stamp.as_ref(),
    ));
    checks.push(single_archive(b, run));
    checks.push(source_untouched(b));
    checks
}

fn manifest_identity(b: &CandidateBuild) -> Check {
    let folder = Some(b.folder.as_str());
    match &b.identity {
        Ok(id) => Check::pass(
            "manifest-identity",
            folder,
            format!(
                "manifest.yaml names author {:?}, name {:?}, version {:?}: the build must write {}",
                id.author,
                id.name,
                id.version,
                id.archive_name()
            ),
        )
        .with_observed(json!({"author": id.author, "name": id.name, "version": id.version})),
        Err(message) if !b.unsafe_fields.is_empty() => Check::fail(
            "manifest-identity",
            folder,
            format!(
                "{message}. The build was not run: the SDK puts {} into the archive's file name without \
                 validating it and would write outside its output directory; use a plain name",
                b.unsafe_fields.join(", ")
            ),
        )
        .with_observed(json!({ "error": message, "unsafe_fields": b.unsafe_fields, "built": false })),
        Err(message) => Check::fail(
            "manifest-identity",
            folder,
            format!("{message}; the build runs anyway to record what it does"),
        )
        .with_observed(json!({ "error": message, "unsafe_fields": [], "built": true })),
    }
}

/// The check the missing or unconfirmed archive is a consequence of: the
/// manifest when its identity could not be read, else a failed build.
fn archive_root_cause(b: &CandidateBuild, run: &BuildRun) -> Option<&'static str> {
    if b.identity.is_err() {
        Some("manifest-identity")
    } else if !run.success {
        Some("build-exit")
    } else {
        None
    }
}

/// The `single-archive` check: the build wrote exactly one regular file,
/// named after the manifest's identity, and it was moved to packages/. A
/// failure before the move is a consequence of [`archive_root_cause`].
fn single_archive(b: &CandidateBuild, run: &BuildRun) -> Check {
    let check = |c: Check| match archive_root_cause(b, run) {
        Some(root) if c.result != crate::evidence::CheckResult::Pass => c.consequence_of(root),
        _ => c,
    };
    let Some(Ok(entries)) = &b.out_entries else {
        return check(unlisted(b));
    };
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let observed =
        json!({"files": names, "manifest_not_found_printed": run.said_manifest_not_found});
    if entries.is_empty() {
        return check(no_archive(b, run).with_observed(observed));
    }
    let expected = match b.identity.as_ref().map(ManifestId::archive_name) {
        Ok(e) => e,
        Err(m) => return check(unconfirmed(b, &names, m).with_observed(observed)),
    };
    if !is_exactly(entries, &expected) {
        return check(misnamed(b, &names, &expected).with_observed(observed));
    }
    moved_check(b, &expected, &names, observed)
}

/// The failing `single-archive` check when the build's out folder could
/// not be listed (or, a harness defect, was not).
fn unlisted(b: &CandidateBuild) -> Check {
    let folder = Some(b.folder.as_str());
    match &b.out_entries {
        Some(Err(e)) => Check::fail(
            "single-archive",
            folder,
            format!("cannot list {}: {e}", b.out_dir),
        )
        .with_observed(json!({ "out_dir": b.out_dir, "error": e })),
        _ => Check::fail(
            "single-archive",
            folder,
            format!(
                "{} was not listed; this is a harness defect: report it",
                b.out_dir
            ),
        ),
    }
}

/// The failing `single-archive` check (without its observed value) when
/// the build wrote `names` but the manifest's identity could not be read
/// (`m`), so no archive name can be confirmed.
fn unconfirmed(b: &CandidateBuild, names: &[&str], m: &str) -> Check {
    Check::fail(
        "single-archive",
        Some(b.folder.as_str()),
        format!(
            "the build wrote {names:?} but the manifest's identity could not be read ({m}); \
             the archive name cannot be confirmed: fix manifest.yaml"
        ),
    )
}

/// The failing `single-archive` check (without its observed value) when
/// the out folder holds `names` rather than exactly the `expected` file.
fn misnamed(b: &CandidateBuild, names: &[&str], expected: &str) -> Check {
    Check::fail(
        "single-archive",
        Some(b.folder.as_str()),
        format!(
            "{} holds {names:?}; expected exactly one regular file {expected:?} named after manifest.yaml's \
             author, name and version",
            b.out_dir
        ),
    )
}

/// The failing `single-archive` check (without its observed value) when
/// the build wrote no archive: what was expected, and the manifest's
/// diagnosis or the failed build as the likely cause.
fn no_archive(b: &CandidateBuild, run: &BuildRun) -> Check {
    let not_found = if run.said_manifest_not_found {
        " The build printed \"Plugin manifest not found\"."
    } else {
        ""
    };
    let expected = b.identity.as_ref().map(ManifestId::archive_name);
    let (diagnosis, advice) = match (&b.identity, run.success) {
        (Err(m), _) => (
            format!(" Manifest diagnosis: {m}."),
            " The SDK's build exits 0 without an archive when the manifest is invalid: fix manifest.yaml \
             so the SDK's manifest model accepts it",
        ),
        (Ok(_), true) => (
            String::new(),
            " The SDK's build exits 0 without an archive when the manifest is invalid: fix manifest.yaml \
             so the SDK's manifest model accepts it",
        ),
        (Ok(_), false) => (
            String::new(),
            " The build failed before writing it: see the build-exit check for its output",
        ),
    };
    Check::fail(
        "single-archive",
        Some(b.folder.as_str()),
        format!(
            "the official build ({}) wrote no archive into {}; expected {}.{not_found}{diagnosis}{advice}",
            run.outcome,
            b.out_dir,
            expected.as_deref().unwrap_or("one <author>-<name>-<version>.lbpkg"),
        ),
    )
}

/// The `single-archive` check once the one `expected` archive was written
/// (the out folder held `names`): passes when it was moved to packages/.
fn moved_check(
    b: &CandidateBuild,
    expected: &str,
    names: &[&str],
    observed: serde_json::Value,
) -> Check {
    let folder = Some(b.folder.as_str());
    match &b.moved {
        Some(Ok(m)) => Check::pass(
            "single-archive",
            folder,
            format!(
                "the build wrote exactly one archive, {expected} ({} bytes), now {}",
                m.size, m.path
            ),
        )
        .with_observed(json!({"archive": m.path, "size": m.size})),
        Some(Err(e)) => Check::fail("single-archive", folder, e.clone())
            .with_observed(json!({"files": names, "move_error": e})),
        None => Check::fail(
            "single-archive",
            folder,
            format!("{expected} was written but not moved to packages/; this is a harness defect: report it"),
        )
        .with_observed(observed),
    }
}

fn source_untouched(b: &CandidateBuild) -> Check {
    let folder = Some(b.folder.as_str());
    match &b.source_changes {
        Some(Ok(changes)) if changes.is_empty() => Check::pass(
            "source-untouched",
            folder,
            format!(
                "all {} staged entries of the candidate are unchanged after the build (sha256 and size)",
                b.source_entries
            ),
        )
        .with_observed(json!({ "entries": b.source_entries, "changes": [] })),
        Some(Ok(changes)) => Check::fail(
            "source-untouched",
            folder,
            format!(
                "the build modified the staged source it was run from: {}; expected a build that only writes \
                 its output directory",
                changes.join(", ")
            ),
        )
        .with_observed(json!({ "entries": b.source_entries, "changes": changes })),
        Some(Err(e)) => Check::fail(
            "source-untouched",
            folder,
            format!("cannot read the staged candidate after the build: {e}"),
        )
        .with_observed(json!({ "unreadable_after": e })),
        None => Check::fail(
            "source-untouched",
            folder,
            "the staged candidate was not compared after the build; this is a harness defect: report it",
        ),
    }
}

/// The differences between two `tree_digests` maps: `removed x`, `added y`,
/// `changed z`, in path order.
pub(crate) fn tree_changes(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut changes = Vec::new();
    for k in keys {
        match (before.get(k), after.get(k)) {
            (Some(_), None) => changes.push(format!("removed {k}")),
            (None, Some(_)) => changes.push(format!("added {k}")),
            (Some(a), Some(b)) if a != b => changes.push(format!("changed {k}")),
            _ => {}
        }
    }
    changes
}

#[cfg(test)]
mod tests;
