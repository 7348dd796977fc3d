//! The `sdk-record` gate: the interpreter's `langbot-plugin` is the pinned
//! version, and its installed files are exactly what its RECORD says.
//!
//! RECORD is the installed distribution's manifest (PyPA "Recording installed
//! projects", PEP 376/627): CSV rows `path,sha256=<urlsafe base64 without
//! padding>,<size>`, paths relative to the dist-info's parent (site-packages),
//! allowed to climb out only for installed scripts (`../../../bin/lbp`). pip
//! never re-checks these digests, so this gate re-derives every one of them
//! from the files, streamed.
//!
//! [`observe`] runs the probes and reads the files (readers in
//! `crate::record` and `sdk_record/probes.rs`) into an [`Observation`]; [`decide`] turns it into
//! checks, a pure function tested without an SDK (`sdk_record/tests.rs`).
//! One cause is one finding: a file whose RECORD row is malformed is not
//! verified because of that row, and bytecode whose source is not verified
//! is so because of the source's row; those are reported as consequences of
//! `record-rows` (or `unlisted-files`), never as causes of their own.
//!
//! The interpreter environment as a whole (issue 21) is verified too, in
//! `sdk_record/environment.rs` (observation, with the site probe
//! `src/python/site_probe.py` run with `-I -S` before any other start) and
//! `sdk_record/environment_checks.rs` (`environment-records`,
//! `environment-bytecode`, `environment-startup`, `environment-unowned`):
//! every other distribution's RECORD and bytecode, every `.pth` file and
//! start-up module. The SDK's own files stay with the checks above.

mod bytecode;
mod environment;
mod environment_checks;
mod environment_locked;
mod kept;
mod observe;
mod probes;
mod provenance;
mod pth;
mod seed;

pub use crate::record::*;
use bytecode::{bytecode_check, bytecode_problems};
pub(crate) use kept::{redecide as redecide_kept, REDECIDED as KEPT_REDECIDED};
pub(crate) use observe::observe;
pub use probes::*;

use crate::context::{RunContext, Updates, VerifiedSdk};
use crate::evidence::{Check, CheckResult};
use serde::Serialize;
use serde_json::json;
use std::path::{Path, PathBuf};

/// The distribution name the gate asks `importlib.metadata` for.
pub const DISTRIBUTION: &str = "langbot-plugin";

/// The import package the distribution installs.
pub const PACKAGE: &str = "langbot_plugin";

/// The `sdk-record` gate.
pub struct SdkRecord;

/// What the gate observed: the SDK probe's answer and, when it found a
/// dist-info, RECORD and the files.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Observation {
    /// The interpreter, as `--python` named it.
    pub python: String,
    /// What `sdk_probe.py` printed.
    pub probe: SdkProbe,
    /// `site-packages/langbot_plugin`, next to the dist-info (none without one).
    pub expected_package_dir: Option<String>,
    /// `find_spec`'s location is `expected_package_dir` (the same path, or the
    /// same once symlinks are resolved).
    pub package_dir_matches: bool,
    /// RECORD, when the probe found a dist-info.
    pub record: Option<RecordObservation>,
    /// The interpreter environment as a whole (every site directory's
    /// distributions, `.pth` files, start-up modules), when observed.
    pub environment: Option<environment::EnvironmentObservation>,
    /// Every installed distribution against the verifier's lock
    /// (`environment-locked`), when the environment was observed.
    pub locked: Option<environment_locked::LockedObservation>,
    /// The sandbox the gate's probes ran in (`-I -S`, the whole filesystem
    /// read-only but their private roots), when the site probe started.
    pub probe_sandbox: Option<crate::evidence::sandbox::SandboxRecord>,
}

/// RECORD and what its rows say about the files.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RecordObservation {
    /// `<dist-info>/RECORD`.
    pub path: String,
    /// site-packages, lexically normalised: RECORD paths are relative to it.
    pub site_packages: String,
    /// The dist-info directory.
    pub dist_info: String,
    /// Why RECORD could not be read; the fields below are then empty.
    pub read_error: Option<String>,
    /// sha256 (hex) of RECORD.
    pub sha256: String,
    /// Rows, malformed or not.
    pub total_rows: usize,
    /// Well-formed rows with a hash.
    pub hashed_rows: usize,
    /// `row N (path): what is wrong`, one per malformed row.
    pub malformed: Vec<String>,
    /// The malformed rows that name a path, and where it resolves.
    pub malformed_paths: Vec<MalformedPath>,
    /// The well-formed rows checked against the files.
    pub rows: RowsReport,
    /// The files under the package and the dist-info, and those no
    /// well-formed row lists.
    pub walk: Walk,
    /// What `bytecode_probe.py` printed.
    pub bytecode: Option<BytecodeProbe>,
    /// Why the bytecode probe did not answer.
    pub bytecode_error: Option<String>,
}

/// A malformed RECORD row that names a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MalformedPath {
    /// 1-based row number.
    pub row: usize,
    /// The path as written.
    pub path: String,
    /// Joined to site-packages, lexically normalised.
    pub resolved: String,
}

/// The checks `obs` supports, against the profile's pinned SDK version
/// `pinned`: `sdk-version`, `package-location`, `record-rows`,
/// `unlisted-files`, `bytecode`, then, when the environment was observed,
/// `environment-records`, `environment-bytecode`, `environment-startup` and
/// `environment-unowned`, and `environment-locked`.
pub(crate) fn decide(obs: &Observation, pinned: &str) -> Vec<Check> {
    let mut checks = decide_sdk(obs, pinned);
    if let Some(env) = &obs.environment {
        checks.extend(environment_checks::environment_checks(env));
    }
    if let Some(locked) = &obs.locked {
        checks.push(environment_locked::locked_check(locked));
    }
    if let Some(record) = &obs.probe_sandbox {
        checks.push(crate::isolation::sandbox::check(
            "probe-sandbox",
            None,
            "the gate's probes of the interpreter under review (site, SDK and bytecode probes, \
             `-I -S`)",
            record,
        ));
    }
    checks
}

fn decide_sdk(obs: &Observation, pinned: &str) -> Vec<Check> {
    let python = obs.python.as_str();
    let version = version_check(&obs.probe, pinned, python);
    let version_failed = version.result == CheckResult::Fail;
    let mut checks = vec![version];
    let (Some(record), Some(expected)) = (&obs.record, &obs.expected_package_dir) else {
        let why = obs.probe.error.clone().unwrap_or_else(|| {
            format!("{DISTRIBUTION} has no dist-info directory this gate can read")
        });
        for name in ["record-rows", "unlisted-files", "bytecode"] {
            let c = Check::fail(
                name,
                None,
                format!(
                    "not observed: {why} (interpreter {python}); install {DISTRIBUTION}=={pinned} into it with pip, then re-run"
                ),
            )
            .with_observed(json!({ "dist_info": obs.probe.dist_info, "error": obs.probe.error }));
            checks.push(if version_failed {
                c.consequence_of("sdk-version")
            } else {
                c
            });
        }
        return checks;
    };
    checks.push(package_location_check(
        obs.probe.package_dir.as_deref(),
        expected,
        obs.package_dir_matches,
    ));
    if let Some(e) = &record.read_error {
        checks.push(
            Check::fail(
                "record-rows",
                None,
                format!(
                    "{}: expected the installed distribution's RECORD, found none ({e}); reinstall {DISTRIBUTION}=={pinned} with pip",
                    record.path
                ),
            )
            .with_observed(json!({ "record": record.path, "error": e })),
        );
        for name in ["unlisted-files", "bytecode"] {
            checks.push(
                Check::fail(
                    name,
                    None,
                    format!("not observed: {} cannot be read", record.path),
                )
                .with_observed(json!({ "record": record.path, "error": e }))
                .consequence_of("record-rows"),
            );
        }
        return checks;
    }
    checks.push(rows_check(record));
    checks.push(unlisted_check(record, expected, pinned));
    let package_dir = Path::new(expected);
    checks.push(match (&record.bytecode, &record.bytecode_error) {
        (Some(probe), _) => {
            let problems = bytecode_problems(probe, record);
            bytecode_check(probe, package_dir, &problems, pinned)
        }
        (None, e) => Check::fail(
            "bytecode",
            None,
            format!(
                "not observed: the bytecode probe did not answer ({}); expected every bytecode file \
                 under {} compared with its source: see logs/sdk-record/bytecode-probe.*",
                e.as_deref().unwrap_or("no answer"),
                package_dir.display()
            ),
        )
        .with_observed(json!({ "error": e })),
    });
    checks
}

impl super::Gate for SdkRecord {
    fn id(&self) -> &'static str {
        "sdk-record"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let obs = observe(ctx)?;
        record_facts(&obs, out);
        let pinned = ctx.profile.profile.sdk.version().to_string();
        let mut checks = decide(&obs, &pinned);
        checks.extend(record_provenance(&obs, ctx));
        if let (Some(record), true) = (
            &obs.record,
            checks.iter().all(|c| c.result != CheckResult::Fail),
        ) {
            let site_packages = PathBuf::from(&record.site_packages);
            let verified = VerifiedSdk {
                package_dir: site_packages.join(PACKAGE),
                site_packages,
                dist_info: PathBuf::from(&record.dist_info),
            };
            out.set(move |ctx| ctx.verified_sdk = Some(verified));
            // Every later step reads bytecode from the run's cache only:
            // the files just verified are put there, so no step compiles
            // the environment again (`sdk_record/seed.rs`).
            if let Some(prefix) = crate::python::pycache_prefix() {
                seed::seed(
                    &obs,
                    prefix,
                    &ctx.log_stem("sdk-record", "pycache-seed.txt"),
                    ctx.width(),
                );
            }
        }
        Ok(checks)
    }
}

/// The `record-provenance` check ([`provenance::provenance_check`]) when
/// RECORD was read and the wheel's own RECORD digest is known: the
/// profile's `sdk.record_sha256`, else the one of the verifier's lock for the
/// exact pin ([`provenance::expected_record_sha256`]: carried, or made on demand
/// from the published wheel), so a pin `profile init` wrote (an on-demand
/// group) is held to its wheel as a carried profile's pin is.
fn record_provenance(obs: &Observation, ctx: &RunContext) -> Option<Check> {
    let sdk = &ctx.profile.profile.sdk;
    let lock = sdk
        .record_sha256
        .is_none()
        .then(|| crate::provision::on_demand::files_for(&sdk.requirement))
        .flatten();
    let want = provenance::expected_record_sha256(sdk.record_sha256.as_deref(), lock.as_ref())?;
    let want = want.as_str();
    let record = obs.record.as_ref().filter(|r| r.read_error.is_none())?;
    let dist_info_name = Path::new(&record.dist_info)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let check = match std::fs::read_to_string(&record.path) {
        Ok(text) => provenance::provenance_check(
            Some(want),
            &text,
            &record.path,
            &dist_info_name,
            &obs.probe.console_scripts,
        )?,
        Err(e) => Check::fail(
            "record-provenance",
            None,
            format!("{}: cannot read it again ({e})", record.path),
        )
        .consequence_of("record-rows"),
    };
    Some(check)
}

/// The facts later gates and the evidence's `sdk` section read.
fn record_facts(obs: &Observation, out: &mut Updates) {
    let probe = obs.probe.clone();
    out.set(move |ctx| {
        ctx.sdk.executable = Some(probe.executable);
        ctx.sdk.python_version = Some(probe.python_version);
        ctx.sdk.version = probe.version;
        ctx.sdk.site_packages = probe.site_packages;
        ctx.sdk.dist_info = probe.dist_info;
    });
    if let Some(env) = &obs.environment {
        environment_facts(env, out);
    }
    let Some(record) = obs.record.as_ref().filter(|r| r.read_error.is_none()) else {
        return;
    };
    let (hex, rows, hashed, unhashed) = (
        record.sha256.clone(),
        record.total_rows as u64,
        record.rows.hashed_verified,
        record.rows.unhashed,
    );
    out.set(move |ctx| {
        ctx.sdk.record_sha256 = Some(hex);
        ctx.sdk.record_rows = Some(rows);
        ctx.sdk.hashed_rows_verified = Some(hashed);
        ctx.sdk.unhashed_rows = Some(unhashed);
    });
}

/// The interpreter and environment facts of the evidence's `sdk` section.
fn environment_facts(env: &environment::EnvironmentObservation, out: &mut Updates) {
    let target = env.interpreter.target.clone();
    let sha = env.interpreter.sha256.clone();
    let probe = env.probe.as_ref();
    let prefix = probe.map(|p| p.prefix.clone());
    let base_prefix = probe.map(|p| p.base_prefix.clone());
    let site_dirs = probe.map(|p| p.site_dirs.clone());
    let dists = probe.map(|_| env.distributions.len() as u64);
    let verified = probe.map(|_| env.verified_files);
    let startup = probe.map(|_| {
        let owned = |o: &Option<String>| match o {
            Some(d) => format!("owned by {d}"),
            None => "owned by no verified RECORD".to_string(),
        };
        env.pth_files
            .iter()
            .map(|p| format!("{} ({})", p.path, owned(&p.owner)))
            .chain(
                env.startup_modules
                    .iter()
                    .map(|m| format!("{} ({})", m.origin, owned(&m.owner))),
            )
            .collect::<Vec<_>>()
    });
    out.set(move |ctx| {
        ctx.sdk.interpreter_target = target;
        ctx.sdk.interpreter_sha256 = sha;
        ctx.sdk.prefix = prefix;
        ctx.sdk.base_prefix = base_prefix;
        ctx.sdk.site_dirs = site_dirs;
        ctx.sdk.environment_distributions = dists;
        ctx.sdk.environment_files_verified = verified;
        ctx.sdk.startup_files = startup;
    });
}

/// What to do when `python` lacks the pinned SDK. `cargo xtask sdk` (in the
/// verifier's source tree) provisions the built-in profile's pin in a venv of
/// its own, so it is offered first when the profile pins that version; `pip
/// install` into `python` is the alternative (or the only advice for another
/// pin), since `python` may be a system interpreter.
fn install_advice(python: &str, pinned: &str) -> String {
    let pip = format!("`{python} -m pip install {DISTRIBUTION}=={pinned}`");
    let builtin_pin = crate::profile::parse(crate::profile::BUILTIN_CODING_RUNNERS, "built-in")
        .map(|p| p.sdk.version() == pinned)
        .unwrap_or(false);
    if builtin_pin {
        format!(
            "run `cargo xtask sdk` in the verifier's source tree (it creates target/sdk-venv with \
             {DISTRIBUTION}=={pinned} and prints its python) and pass that path as --python, or run {pip} \
             to install into this interpreter"
        )
    } else {
        format!(
            "run {pip} (preferably in a virtual environment, not a system interpreter) or pass --python \
             for an interpreter that has it"
        )
    }
}
fn version_check(probe: &SdkProbe, pinned: &str, python: &str) -> Check {
    let required = normalize_version(pinned);
    let observed = json!({ "installed": probe.version, "required": pinned, "installed_normalized": probe.version.as_deref().map(normalize_version), "required_normalized": required });
    match &probe.version {
        None => Check::fail(
            "sdk-version",
            None,
            format!(
                "{DISTRIBUTION} is not installed in {python} ({}); required {pinned}: {}",
                probe.error.as_deref().unwrap_or("importlib.metadata found no distribution"),
                install_advice(python, pinned)
            ),
        ),
        Some(installed) if normalize_version(installed) == required => Check::pass(
            "sdk-version",
            None,
            format!("{DISTRIBUTION} {installed} in {python} equals the pinned {pinned}"),
        ),
        Some(installed) => Check::fail(
            "sdk-version",
            None,
            format!(
                "{DISTRIBUTION} installed in {python} is {installed}, required {pinned} (the profile's pin); {}",
                install_advice(python, pinned)
            ),
        ),
    }
    .with_observed(observed)
}

fn package_location_check(found: Option<&str>, expected: &str, matches: bool) -> Check {
    let observed = json!({ "expected": expected, "found": found });
    match found {
        Some(p) if matches => Check::pass(
            "package-location",
            None,
            format!("`find_spec('{PACKAGE}')` resolves to {p}, the package next to the dist-info whose RECORD is verified"),
        ),
        Some(p) => Check::fail(
            "package-location",
            None,
            format!(
                "`find_spec('{PACKAGE}')` resolves to {p}, expected {expected} (the directory RECORD describes); another copy shadows the installed SDK: remove it"
            ),
        ),
        None => Check::fail(
            "package-location",
            None,
            format!(
                "`find_spec('{PACKAGE}')` does not resolve to a package, expected {expected}; reinstall {DISTRIBUTION}"
            ),
        ),
    }
    .with_observed(observed)
}

fn rows_check(record: &RecordObservation) -> Check {
    let report = &record.rows;
    let observed = json!({
        "record": record.path,
        "record_sha256": record.sha256,
        "rows": record.total_rows,
        "hashed_rows": record.hashed_rows,
        "hashed_rows_verified": report.hashed_verified,
        "unhashed_rows": report.unhashed,
        "malformed": record.malformed,
        "escaping": report.escaping,
        "mismatches": report.mismatches,
        "missing": report.missing,
    });
    let mut problems = Vec::new();
    for (label, list) in [
        ("malformed", &record.malformed),
        ("escaping site-packages", &report.escaping),
        ("mismatched", &report.mismatches),
        ("missing", &report.missing),
    ] {
        if !list.is_empty() {
            problems.push(format!("{} {label}: {}", list.len(), list.join("; ")));
        }
    }
    if problems.is_empty() {
        Check::pass(
            "record-rows",
            None,
            format!(
                "{}: {} rows; all {} hashed rows match their files (sha256 and size); {} rows without hash (RECORD and .pyc)",
                record.path, record.total_rows, report.hashed_verified, report.unhashed
            ),
        )
    } else {
        Check::fail(
            "record-rows",
            None,
            format!(
                "{}: expected every row well-formed and every hashed file to match; found {}. The installed SDK is not the one RECORD describes: reinstall it into a fresh environment",
                record.path,
                problems.join(". ")
            ),
        )
    }
    .with_observed(observed)
}

/// `unlisted-files`: a walked file no well-formed row lists is unlisted,
/// unless a malformed row names it: that file is listed, but not verified
/// because its row is malformed, a consequence of `record-rows`.
fn unlisted_check(record: &RecordObservation, package_dir: &str, pinned: &str) -> Check {
    let under_malformed = |file: &str| record.malformed_paths.iter().find(|m| m.resolved == file);
    let (caused, own): (Vec<&String>, Vec<&String>) = record
        .walk
        .unlisted
        .iter()
        .partition(|f| under_malformed(f).is_some());
    let not_verified: Vec<String> = caused
        .iter()
        .filter_map(|f| under_malformed(f))
        .map(|m| format!("{} (row {})", m.path, m.row))
        .collect();
    let observed = json!({
        "files": record.walk.files,
        "unlisted": own,
        "not_verified_malformed_row": not_verified,
    });
    let scope = format!("{package_dir} and {}", record.dist_info);
    if own.is_empty() && caused.is_empty() {
        return Check::pass(
            "unlisted-files",
            None,
            format!(
                "every file under {scope} ({} outside __pycache__) is listed in RECORD",
                record.walk.files
            ),
        )
        .with_observed(observed);
    }
    if own.is_empty() {
        return Check::fail(
            "unlisted-files",
            None,
            format!(
                "{} file(s) not verified because their RECORD row is malformed: {}; every other file \
                 under {scope} is listed in RECORD",
                not_verified.len(),
                not_verified.join(", ")
            ),
        )
        .with_observed(observed)
        .consequence_of("record-rows");
    }
    let more = if not_verified.is_empty() {
        String::new()
    } else {
        format!(
            " ({} more not verified because their RECORD row is malformed: {}; see record-rows)",
            not_verified.len(),
            not_verified.join(", ")
        )
    };
    let own: Vec<&str> = own.iter().map(|s| s.as_str()).collect();
    Check::fail(
        "unlisted-files",
        None,
        format!(
            "{} file(s) not listed in {}: {}; expected only RECORD's files in an installed distribution: remove them or reinstall {DISTRIBUTION}=={pinned} into a fresh environment{more}",
            own.len(),
            record.path,
            own.join(", ")
        ),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod environment_tests;
