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
//! The parsing and verifying logic are pure functions ([`parse_record`],
//! [`verify_rows`], [`unlisted_files`]) tested without an SDK.

use crate::context::{RunContext, Updates, VerifiedSdk};
use crate::evidence::Check;
use crate::{hash, python};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use walkdir::WalkDir;

/// The distribution name the gate asks `importlib.metadata` for.
pub const DISTRIBUTION: &str = "langbot-plugin";

/// The import package the distribution installs.
pub const PACKAGE: &str = "langbot_plugin";

/// The `sdk-record` gate.
pub struct SdkRecord;

/// What `src/python/sdk_probe.py` prints.
#[derive(Debug, Clone, Deserialize)]
pub struct SdkProbe {
    /// `sys.executable`.
    pub executable: String,
    /// `sys.version`'s first word, e.g. `3.11.7`.
    pub python_version: String,
    /// `sysconfig.get_path("scripts")`: where console scripts are installed.
    pub scripts_dir: Option<String>,
    /// The installed distribution's version, as `importlib.metadata` reads it.
    pub version: Option<String>,
    /// Absolute dist-info directory.
    pub dist_info: Option<String>,
    /// The dist-info's parent.
    pub site_packages: Option<String>,
    /// Names of the distribution's `console_scripts` entry points.
    pub console_scripts: Vec<String>,
    /// `importlib.util.find_spec(PACKAGE)`'s first search location.
    pub package_dir: Option<String>,
    /// Why the distribution was not found, if it was not.
    pub error: Option<String>,
}

/// One well-formed RECORD row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    /// 1-based row number.
    pub row: usize,
    /// The path as written in RECORD.
    pub path: String,
    /// The sha256 digest and size in bytes, or `None` for a row without them
    /// (allowed only for RECORD itself and `.pyc` files).
    pub hashed: Option<([u8; 32], u64)>,
}

/// RECORD as parsed: well-formed rows and one sentence per malformed row.
#[derive(Debug, Clone, Default)]
pub struct ParsedRecord {
    /// Every row, malformed or not.
    pub total_rows: usize,
    /// The well-formed rows, in file order.
    pub rows: Vec<RecordRow>,
    /// `row N (path): what is wrong`, one per malformed row.
    pub malformed: Vec<String>,
}

/// Parses RECORD text from `reader`.
///
/// `dist_info_name` is the dist-info folder's name (`langbot_plugin-0.6.0b5.dist-info`):
/// its `RECORD` row is the one non-`.pyc` row allowed to carry no hash. Every row
/// must have exactly three fields. The csv crate's non-flexible mode is not used
/// for that, because it takes the *first* row's length as the norm: a malformed
/// first row would mislabel every other row. The count is checked per row instead.
pub fn parse_record(reader: impl Read, dist_info_name: &str) -> ParsedRecord {
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(reader);
    let own_record = format!("{dist_info_name}/RECORD");
    let mut parsed = ParsedRecord::default();
    let mut seen = BTreeSet::new();
    for (index, result) in csv.records().enumerate() {
        let row = index + 1;
        parsed.total_rows += 1;
        let record = match result {
            Ok(r) => r,
            Err(e) => {
                parsed
                    .malformed
                    .push(format!("row {row}: not a readable CSV row ({e})"));
                continue;
            }
        };
        if record.len() != 3 {
            parsed.malformed.push(format!(
                "row {row} ({}): expected 3 fields (path, hash, size), found {}",
                record.get(0).unwrap_or(""),
                record.len()
            ));
            continue;
        }
        let (path, hash_field, size_field) = (&record[0], &record[1], &record[2]);
        if path.is_empty() {
            parsed.malformed.push(format!("row {row}: empty path"));
            continue;
        }
        if !seen.insert(path.to_string()) {
            parsed
                .malformed
                .push(format!("row {row} ({path}): path listed twice"));
            continue;
        }
        match parse_hash_and_size(hash_field, size_field) {
            Ok(None) if path == own_record || path.ends_with(".pyc") => {
                parsed.rows.push(RecordRow { row, path: path.to_string(), hashed: None });
            }
            Ok(None) => parsed.malformed.push(format!(
                "row {row} ({path}): no hash and size; only RECORD itself and `.pyc` files may omit them"
            )),
            Ok(Some(hashed)) => {
                parsed.rows.push(RecordRow { row, path: path.to_string(), hashed: Some(hashed) })
            }
            Err(why) => parsed.malformed.push(format!("row {row} ({path}): {why}")),
        }
    }
    parsed
}

/// Parses the hash and size fields of one row: `Ok(None)` when both are empty.
fn parse_hash_and_size(
    hash_field: &str,
    size_field: &str,
) -> Result<Option<([u8; 32], u64)>, String> {
    match (hash_field.is_empty(), size_field.is_empty()) {
        (true, true) => return Ok(None),
        (true, false) => return Err(format!("size {size_field:?} without a hash")),
        (false, true) => return Err(format!("hash {hash_field:?} without a size")),
        (false, false) => {}
    }
    let Some((algorithm, value)) = hash_field.split_once('=') else {
        return Err(format!(
            "hash {hash_field:?} is not `<algorithm>=<digest>`; expected sha256=<urlsafe base64>"
        ));
    };
    if algorithm != "sha256" {
        return Err(format!(
            "unknown hash algorithm {algorithm:?}; expected sha256 (the only algorithm this gate verifies)"
        ));
    }
    if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "hex digest {value:?}, expected urlsafe base64 without padding (43 characters)"
        ));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(value)
        .map_err(|e| format!("digest {value:?} is not urlsafe base64 without padding ({e})"))?;
    let digest: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        format!(
            "digest {value:?} decodes to {} bytes; a sha256 digest has 32",
            bytes.len()
        )
    })?;
    let size = match size_field.parse::<u64>() {
        Ok(size) => size,
        Err(_) if size_field.parse::<i64>().is_ok_and(|s| s < 0) => {
            return Err(format!(
                "negative size {size_field}; expected a non-negative integer"
            ))
        }
        Err(_) => return Err(format!("size {size_field:?} is not a non-negative integer")),
    };
    Ok(Some((digest, size)))
}

/// Where RECORD's paths point.
#[derive(Debug, Clone)]
pub struct RecordLayout {
    /// The dist-info's parent: RECORD paths are relative to it.
    pub site_packages: PathBuf,
    /// The interpreter's scripts directory (`sysconfig.get_path("scripts")`).
    pub scripts_dir: Option<PathBuf>,
    /// The distribution's console script names (`lbp`).
    pub console_scripts: Vec<String>,
}

/// `base` joined with `rel`, with `.` and `..` resolved lexically (no file
/// system access, symlinks not followed). An absolute `rel` replaces `base`.
pub fn normalize_join(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in base.join(rel).components() {
        match comp {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves a RECORD path against `layout`.
///
/// # Errors
/// A sentence when the path leaves site-packages and is not one of the
/// distribution's console scripts in the scripts directory.
pub fn resolve_row_path(layout: &RecordLayout, path: &str) -> Result<PathBuf, String> {
    let resolved = normalize_join(&layout.site_packages, path);
    if resolved.starts_with(&layout.site_packages) && resolved != layout.site_packages {
        return Ok(resolved);
    }
    if let Some(scripts) = &layout.scripts_dir {
        let scripts = normalize_join(scripts, ".");
        let is_script = layout.console_scripts.iter().any(|name| resolved == scripts.join(name))
            // The scripts directory may be spelled through a symlink (lib64, /usr/local).
            || match (resolved.parent().map(Path::canonicalize), scripts.canonicalize()) {
                (Some(Ok(parent)), Ok(scripts_real)) => {
                    parent == scripts_real
                        && resolved
                            .file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| layout.console_scripts.iter().any(|s| s == n))
                }
                _ => false,
            };
        if is_script {
            return Ok(resolved);
        }
    }
    Err(format!(
        "path {path:?} resolves to {}, outside site-packages {}, and is not a console script ({}) in the scripts directory {}",
        resolved.display(),
        layout.site_packages.display(),
        if layout.console_scripts.is_empty() { "none declared".to_string() } else { layout.console_scripts.join(", ") },
        layout.scripts_dir.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "(unknown)".into())
    ))
}

/// What [`verify_rows`] found.
#[derive(Debug, Clone, Default)]
pub struct RowsReport {
    /// Rows with a hash whose file matched digest and size.
    pub hashed_verified: u64,
    /// Rows without a hash.
    pub unhashed: u64,
    /// `row N (path): ...` for paths escaping site-packages.
    pub escaping: Vec<String>,
    /// `row N (path): expected ..., found ...` for digest or size mismatches.
    pub mismatches: Vec<String>,
    /// `row N (path): ...` for files that are missing or unreadable.
    pub missing: Vec<String>,
    /// Every resolved path RECORD lists (lexically normalised).
    pub listed: BTreeSet<PathBuf>,
    /// The resolved paths of hashed rows whose file matched digest and size.
    pub verified: BTreeSet<PathBuf>,
}

/// Verifies every well-formed row: resolves its path, and for hashed rows
/// stream-hashes the file (following symlinks) and compares digest and size.
pub fn verify_rows(layout: &RecordLayout, rows: &[RecordRow]) -> RowsReport {
    let mut report = RowsReport::default();
    for row in rows {
        let resolved = match resolve_row_path(layout, &row.path) {
            Ok(p) => p,
            Err(why) => {
                report
                    .escaping
                    .push(format!("row {} ({}): {why}", row.row, row.path));
                continue;
            }
        };
        report.listed.insert(resolved.clone());
        let Some((digest, size)) = &row.hashed else {
            report.unhashed += 1;
            continue;
        };
        match hash::sha256_file(&resolved) {
            Err(e) => report.missing.push(format!(
                "row {} ({}): expected a file of {size} bytes at {}, found none ({e})",
                row.row,
                row.path,
                resolved.display()
            )),
            Ok(found) if found.bytes == *digest && found.size == *size => {
                report.hashed_verified += 1;
                report.verified.insert(resolved);
            }
            Ok(found) => {
                let what = match (found.bytes == *digest, found.size == *size) {
                    (false, false) => "digest and size differ",
                    (false, true) => "digest differs",
                    _ => "size differs",
                };
                report.mismatches.push(format!(
                    "row {} ({}): {what}: expected sha256={} size {size}, found sha256={} size {}",
                    row.row,
                    row.path,
                    URL_SAFE_NO_PAD.encode(digest),
                    URL_SAFE_NO_PAD.encode(found.bytes),
                    found.size
                ));
            }
        }
    }
    report
}

/// Files under `roots` (not following symlinks, skipping `__pycache__`
/// directories) that are not in `listed`. Unreadable entries are reported too,
/// as `path (unreadable: ...)`.
pub fn unlisted_files(roots: &[PathBuf], listed: &BTreeSet<PathBuf>) -> Vec<String> {
    let mut out = Vec::new();
    for root in roots {
        let walk = WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| !(e.file_type().is_dir() && e.file_name() == "__pycache__"));
        for entry in walk {
            match entry {
                Ok(e) if e.file_type().is_dir() => {}
                Ok(e) => {
                    let p = normalize_join(e.path(), ".");
                    if !listed.contains(&p) {
                        out.push(p.display().to_string());
                    }
                }
                Err(e) => out.push(format!(
                    "{} (unreadable: {e})",
                    e.path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| root.display().to_string())
                )),
            }
        }
    }
    out
}

/// PEP 440 normal form of `version` (`0.6.0-Beta5` → `0.6.0b5`, `v1.0` → `1.0`,
/// `1.0-1` → `1.0.post1`), as `pep440_rs` parses and prints it, or the trimmed
/// lower-case text when it is not a PEP 440 version. Source: PEP 440
/// "Normalization".
pub fn normalize_version(version: &str) -> String {
    let text = version.trim().to_ascii_lowercase();
    text.parse::<pep440_rs::Version>()
        .map(|v| v.to_string())
        .unwrap_or(text)
}

/// What `src/python/bytecode_probe.py` prints.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
pub struct BytecodeProbe {
    /// `sys.implementation.cache_tag` (`cpython-311`): the only tag this
    /// interpreter loads.
    pub cache_tag: String,
    /// `importlib.util.MAGIC_NUMBER`, hex.
    pub magic: String,
    /// Every file under a `__pycache__` folder of the package, and every
    /// `.pyc` outside one, in walk order.
    pub files: Vec<BytecodeFile>,
}

/// One bytecode file as the probe examined it.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct BytecodeFile {
    /// Path relative to site-packages, as RECORD writes paths
    /// (`langbot_plugin/__pycache__/__init__.cpython-311.pyc`).
    pub path: String,
    /// The source it is the cache of, relative to site-packages
    /// (`langbot_plugin/__init__.py`), for files inside `__pycache__` named
    /// for this interpreter.
    pub source: Option<String>,
    /// The optimization level its name says (`.opt-N`; 0 without).
    pub optimize: Option<u8>,
    /// The PEP 552 header, when the file has one.
    pub header: Option<PycHeader>,
    /// What the comparison found.
    pub outcome: BytecodeOutcome,
    /// The first difference (`<module>.co_consts[3]<f>.co_code`) or why the
    /// file could not be compared.
    pub difference: Option<String>,
}

/// A `.pyc` header (PEP 552): magic number, flags, and source validation.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct PycHeader {
    /// The first four bytes equal this interpreter's magic number.
    pub magic_ok: bool,
    /// The flags word: 0 timestamp, 1 unchecked hash, 3 checked hash.
    pub flags: u32,
    /// `timestamp`, `checked-hash`, `unchecked-hash`, `invalid-flags`, or
    /// none when the source could not be read.
    pub kind: Option<String>,
    /// Whether the interpreter would load the file for the source as it is
    /// (timestamp and size, or source hash, match; an unchecked hash-based
    /// file is always loaded). Otherwise it compiles the source instead.
    pub current: Option<bool>,
}

/// The probe's finding for one bytecode file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BytecodeOutcome {
    /// Its code object equals `compile()` of the source, recursively.
    Equal,
    /// Its code differs from the compilation of the source, or it holds no
    /// code object.
    Differs,
    /// No `.py` next to the `__pycache__` folder.
    NoSource,
    /// Inside `__pycache__` but not named `<module>.<cache_tag>[.opt-N].pyc`
    /// for this interpreter.
    ForeignName,
    /// Shorter than a header, another magic number, or undefined flags.
    BadHeader,
    /// Could not be read.
    Unreadable,
    /// A `.pyc` outside `__pycache__`: import loads it when no `.py` is next
    /// to it, with no source to compare.
    Sourceless,
}

/// One sentence per bytecode file that is not the compilation of its
/// verified source by this interpreter: `path: expected ..., found ...`.
///
/// `verified` holds the resolved paths of RECORD's hashed rows that matched
/// their files ([`RowsReport::verified`]); a source outside it is not verified,
/// so bytecode equal to it proves nothing.
pub fn bytecode_problems(
    probe: &BytecodeProbe,
    site_packages: &Path,
    verified: &BTreeSet<PathBuf>,
) -> Vec<String> {
    let tag = &probe.cache_tag;
    let mut problems = Vec::new();
    for file in &probe.files {
        let path = &file.path;
        let source = file.source.as_deref().unwrap_or("?");
        let level = file.optimize.unwrap_or(0);
        let why = file.difference.as_deref().unwrap_or("");
        let problem = match file.outcome {
            BytecodeOutcome::Equal => {
                let resolved = file
                    .source
                    .as_deref()
                    .map(|s| normalize_join(site_packages, s));
                if resolved.is_some_and(|r| verified.contains(&r)) {
                    continue;
                }
                format!(
                    "{path}: expected the compilation of a RECORD-verified source, found it equal to \
                     {source}, which no hashed RECORD row verified"
                )
            }
            BytecodeOutcome::Differs => format!(
                "{path}: expected this interpreter's compilation of {source} (optimize {level}), \
                 found other code (first difference: {why})"
            ),
            BytecodeOutcome::NoSource => {
                format!("{path}: expected the compilation of {source}, found no such source file")
            }
            BytecodeOutcome::ForeignName => format!(
                "{path}: expected only `<module>.{tag}.pyc` or `<module>.{tag}.opt-N.pyc` in \
                 __pycache__, found a file this interpreter's bytecode cache does not name"
            ),
            BytecodeOutcome::BadHeader => format!(
                "{path}: expected a header for this interpreter (PEP 552, magic {}), found {why}",
                probe.magic
            ),
            BytecodeOutcome::Unreadable => {
                format!("{path}: expected a readable bytecode file, found {why}")
            }
            BytecodeOutcome::Sourceless => format!(
                "{path}: expected bytecode only in __pycache__, found a sourceless .pyc, which \
                 import loads with no source to verify it against"
            ),
        };
        problems.push(problem);
    }
    problems
}

fn bytecode_check(
    probe: &BytecodeProbe,
    package_dir: &Path,
    problems: &[String],
    pinned: &str,
) -> Check {
    let mut kinds: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for file in &probe.files {
        let kind = file
            .header
            .as_ref()
            .and_then(|h| h.kind.clone())
            .unwrap_or_else(|| "none".into());
        *kinds.entry(kind).or_default() += 1;
    }
    let observed = json!({
        "cache_tag": probe.cache_tag,
        "magic": probe.magic,
        "files": probe.files.len(),
        "equal": probe.files.iter().filter(|f| f.outcome == BytecodeOutcome::Equal).count(),
        "header_kinds": kinds,
        "problems": problems,
    });
    if problems.is_empty() {
        Check::pass(
            "bytecode",
            None,
            format!(
                "all {} bytecode files under {} are this interpreter's ({}) compilation of their \
                 RECORD-verified sources: code objects equal, recursively",
                probe.files.len(),
                package_dir.display(),
                probe.cache_tag
            ),
        )
    } else {
        Check::fail(
            "bytecode",
            None,
            format!(
                "{} bytecode file(s) under {} are not this interpreter's compilation of their verified \
                 source, and Python (even with -I -B) would run them instead of the source:\n  {}\n\
                 delete them (Python then compiles the verified source) or reinstall \
                 {DISTRIBUTION}=={pinned} into a fresh environment",
                problems.len(),
                package_dir.display(),
                problems.join("\n  ")
            ),
        )
    }
    .with_observed(observed)
}

impl super::Gate for SdkRecord {
    fn id(&self) -> &'static str {
        "sdk-record"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let (home, tmp) = ctx.private_roots("sdk-record", "probe").map_err(|e| {
            format!(
                "sdk-record: cannot create private roots under {}: {e}",
                ctx.evidence_dir.display()
            )
        })?;
        let probe: SdkProbe = python::run_probe(
            &ctx.python,
            "sdk_probe",
            python::SDK_PROBE,
            &[DISTRIBUTION.to_string(), PACKAGE.to_string()],
            &home,
            ctx.child_env(&home, &tmp),
            &ctx.log_stem("sdk-record", "probe"),
        )?;
        {
            let probe = probe.clone();
            out.set(move |ctx| {
                ctx.sdk.executable = Some(probe.executable);
                ctx.sdk.python_version = Some(probe.python_version);
                ctx.sdk.version = probe.version;
                ctx.sdk.site_packages = probe.site_packages;
                ctx.sdk.dist_info = probe.dist_info;
            });
        }

        let python = ctx.python.display().to_string();
        let pinned = ctx.profile.profile.sdk.version().to_string();
        let mut checks = vec![version_check(&probe, &pinned, &python)];

        let (Some(site_packages), Some(dist_info)) = (&probe.site_packages, &probe.dist_info)
        else {
            let why = probe.error.clone().unwrap_or_else(|| {
                format!("{DISTRIBUTION} has no dist-info directory this gate can read")
            });
            for name in ["record-rows", "unlisted-files", "bytecode"] {
                checks.push(Check::fail(
                    name,
                    None,
                    format!(
                        "not observed: {why} (interpreter {python}); install {DISTRIBUTION}=={pinned} into it with pip, then re-run"
                    ),
                ));
            }
            return Ok(checks);
        };
        let site_packages = PathBuf::from(site_packages);
        let dist_info = PathBuf::from(dist_info);
        let package_dir = site_packages.join(PACKAGE);
        checks.push(package_location_check(&probe, &package_dir));

        let record_path = dist_info.join("RECORD");
        let dist_info_name = dist_info
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let record_digest = hash::sha256_file(&record_path);
        let file = std::fs::File::open(&record_path);
        let (record_digest, file) = match (record_digest, file) {
            (Ok(d), Ok(f)) => (d, f),
            (Err(e), _) | (_, Err(e)) => {
                checks.push(Check::fail(
                    "record-rows",
                    None,
                    format!(
                        "{}: expected the installed distribution's RECORD, found none ({e}); reinstall {DISTRIBUTION}=={pinned} with pip",
                        record_path.display()
                    ),
                ));
                for name in ["unlisted-files", "bytecode"] {
                    checks.push(Check::fail(
                        name,
                        None,
                        format!("not observed: {} cannot be read", record_path.display()),
                    ));
                }
                return Ok(checks);
            }
        };
        {
            let hex = record_digest.hex();
            out.set(move |ctx| ctx.sdk.record_sha256 = Some(hex));
        }
        let parsed = parse_record(std::io::BufReader::new(file), &dist_info_name);
        let layout = RecordLayout {
            site_packages: normalize_join(&site_packages, "."),
            scripts_dir: probe.scripts_dir.as_ref().map(PathBuf::from),
            console_scripts: probe.console_scripts.clone(),
        };
        let report = verify_rows(&layout, &parsed.rows);
        {
            let (rows, hashed, unhashed) = (
                parsed.total_rows as u64,
                report.hashed_verified,
                report.unhashed,
            );
            out.set(move |ctx| {
                ctx.sdk.record_rows = Some(rows);
                ctx.sdk.hashed_rows_verified = Some(hashed);
                ctx.sdk.unhashed_rows = Some(unhashed);
            });
        }
        checks.push(rows_check(
            &record_path,
            &record_digest.hex(),
            &parsed,
            &report,
        ));

        let unlisted = unlisted_files(
            &[
                layout.site_packages.join(PACKAGE),
                normalize_join(&dist_info, "."),
            ],
            &report.listed,
        );
        let unlisted_check = if unlisted.is_empty() {
            Check::pass(
                "unlisted-files",
                None,
                format!(
                    "every file under {} and {} (outside __pycache__) is listed in RECORD",
                    package_dir.display(),
                    dist_info.display()
                ),
            )
        } else {
            Check::fail(
                "unlisted-files",
                None,
                format!(
                    "{} file(s) not listed in {}: {}; expected only RECORD's files in an installed distribution: remove them or reinstall {DISTRIBUTION}=={pinned} into a fresh environment",
                    unlisted.len(),
                    record_path.display(),
                    unlisted.join(", ")
                ),
            )
        }
        .with_observed(json!({ "unlisted": unlisted }));
        checks.push(unlisted_check);

        let bytecode: Result<BytecodeProbe, String> = python::run_probe(
            &ctx.python,
            "bytecode_probe",
            python::BYTECODE_PROBE,
            &[
                layout.site_packages.display().to_string(),
                PACKAGE.to_string(),
            ],
            &home,
            ctx.child_env(&home, &tmp),
            &ctx.log_stem("sdk-record", "bytecode-probe"),
        );
        checks.push(match bytecode {
            Ok(probe) => {
                let problems = bytecode_problems(&probe, &layout.site_packages, &report.verified);
                bytecode_check(&probe, &package_dir, &problems, &pinned)
            }
            Err(e) => Check::fail(
                "bytecode",
                None,
                format!(
                    "not observed: the bytecode probe did not answer ({e}); expected every bytecode file \
                     under {} compared with its source: see logs/sdk-record/bytecode-probe.*",
                    package_dir.display()
                ),
            ),
        });

        if checks
            .iter()
            .all(|c| c.result != crate::evidence::CheckResult::Fail)
        {
            let verified = VerifiedSdk {
                site_packages,
                package_dir,
                dist_info,
            };
            out.set(move |ctx| ctx.verified_sdk = Some(verified));
        }
        Ok(checks)
    }
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

fn package_location_check(probe: &SdkProbe, expected: &Path) -> Check {
    let found = probe.package_dir.as_deref().map(PathBuf::from);
    let same = |p: &Path| {
        p == expected
            || matches!((p.canonicalize(), expected.canonicalize()), (Ok(a), Ok(b)) if a == b)
    };
    let observed =
        json!({ "expected": expected.display().to_string(), "found": probe.package_dir });
    match found {
        Some(p) if same(&p) => Check::pass(
            "package-location",
            None,
            format!("`find_spec('{PACKAGE}')` resolves to {}, the package next to the dist-info whose RECORD is verified", p.display()),
        ),
        Some(p) => Check::fail(
            "package-location",
            None,
            format!(
                "`find_spec('{PACKAGE}')` resolves to {}, expected {} (the directory RECORD describes); another copy shadows the installed SDK: remove it",
                p.display(),
                expected.display()
            ),
        ),
        None => Check::fail(
            "package-location",
            None,
            format!(
                "`find_spec('{PACKAGE}')` does not resolve to a package, expected {}; reinstall {DISTRIBUTION}",
                expected.display()
            ),
        ),
    }
    .with_observed(observed)
}

fn rows_check(
    record_path: &Path,
    record_sha256: &str,
    parsed: &ParsedRecord,
    report: &RowsReport,
) -> Check {
    let hashed_rows = parsed.rows.iter().filter(|r| r.hashed.is_some()).count();
    let observed = json!({
        "record": record_path.display().to_string(),
        "record_sha256": record_sha256,
        "rows": parsed.total_rows,
        "hashed_rows": hashed_rows,
        "hashed_rows_verified": report.hashed_verified,
        "unhashed_rows": report.unhashed,
        "malformed": parsed.malformed,
        "escaping": report.escaping,
        "mismatches": report.mismatches,
        "missing": report.missing,
    });
    let mut problems = Vec::new();
    for (label, list) in [
        ("malformed", &parsed.malformed),
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
                record_path.display(),
                parsed.total_rows,
                report.hashed_verified,
                report.unhashed
            ),
        )
    } else {
        Check::fail(
            "record-rows",
            None,
            format!(
                "{}: expected every row well-formed and every hashed file to match; found {}. The installed SDK is not the one RECORD describes: reinstall it into a fresh environment",
                record_path.display(),
                problems.join(". ")
            ),
        )
    }
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIST: &str = "demo-1.0.dist-info";

    #[test]
    fn a_missing_sdk_is_answered_with_cargo_xtask_sdk_for_the_builtin_pin() {
        let probe = SdkProbe {
            executable: "/usr/bin/python3".into(),
            python_version: "3.11.2".into(),
            scripts_dir: None,
            version: None,
            dist_info: None,
            site_packages: None,
            console_scripts: Vec::new(),
            package_dir: None,
            error: Some("No package metadata was found for langbot-plugin".into()),
        };
        let c = version_check(&probe, "0.6.0b5", "/usr/bin/python3");
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert!(
            c.detail.contains("`cargo xtask sdk`")
                && c.detail.contains("target/sdk-venv")
                && c.detail.contains("--python")
                && c.detail
                    .contains("`/usr/bin/python3 -m pip install langbot-plugin==0.6.0b5`"),
            "{}",
            c.detail
        );
        // `cargo xtask sdk` provisions the built-in pin only: another pin gets pip.
        let other = install_advice("/usr/bin/python3", "0.6.0b4");
        assert!(!other.contains("cargo xtask sdk"), "{other}");
        assert!(
            other.contains("`/usr/bin/python3 -m pip install langbot-plugin==0.6.0b4`"),
            "{other}"
        );
    }

    fn b64(bytes: &[u8]) -> String {
        use sha2::Digest;
        URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes))
    }

    fn parse(text: &str) -> ParsedRecord {
        parse_record(text.as_bytes(), DIST)
    }

    /// A fake site-packages with `pkg/a.py`, `pkg/b.py`, the dist-info and a script.
    struct Site {
        _root: tempfile::TempDir,
        layout: RecordLayout,
    }

    fn site() -> Site {
        let root = tempfile::tempdir().unwrap();
        let sp = root.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(sp.join("pkg/__pycache__")).unwrap();
        std::fs::create_dir_all(sp.join(DIST)).unwrap();
        std::fs::create_dir_all(root.path().join("bin")).unwrap();
        std::fs::write(sp.join("pkg/a.py"), b"print('a')\n").unwrap();
        std::fs::write(sp.join("pkg/b.py"), b"b = 2\n").unwrap();
        std::fs::write(sp.join("pkg/__pycache__/a.cpython-311.pyc"), b"\0").unwrap();
        std::fs::write(sp.join(DIST).join("RECORD"), b"").unwrap();
        std::fs::write(root.path().join("bin/demo"), b"#!python\n").unwrap();
        let layout = RecordLayout {
            site_packages: sp,
            scripts_dir: Some(root.path().join("bin")),
            console_scripts: vec!["demo".into()],
        };
        Site {
            _root: root,
            layout,
        }
    }

    fn good_record() -> String {
        format!(
            "pkg/a.py,sha256={},11\npkg/b.py,sha256={},6\npkg/__pycache__/a.cpython-311.pyc,,\n../../../bin/demo,sha256={},9\n{DIST}/RECORD,,\n",
            b64(b"print('a')\n"),
            b64(b"b = 2\n"),
            b64(b"#!python\n")
        )
    }

    #[test]
    fn a_genuine_record_verifies_every_hashed_row() {
        let s = site();
        let parsed = parse(&good_record());
        assert!(parsed.malformed.is_empty(), "{:?}", parsed.malformed);
        assert_eq!(parsed.total_rows, 5);
        let report = verify_rows(&s.layout, &parsed.rows);
        assert_eq!(report.hashed_verified, 3);
        assert_eq!(report.unhashed, 2);
        assert!(
            report.escaping.is_empty() && report.mismatches.is_empty() && report.missing.is_empty()
        );
        let roots = [
            s.layout.site_packages.join("pkg"),
            s.layout.site_packages.join(DIST),
        ];
        assert!(unlisted_files(&roots, &report.listed).is_empty());
    }

    #[test]
    fn wrong_field_counts_are_malformed_with_their_row() {
        let p = parse(&format!(
            "pkg/a.py,sha256={}\npkg/b.py,sha256={},6,extra\n",
            b64(b"x"),
            b64(b"y")
        ));
        assert_eq!(p.malformed.len(), 2, "{:?}", p.malformed);
        assert!(
            p.malformed[0].starts_with("row 1 (pkg/a.py): expected 3 fields"),
            "{}",
            p.malformed[0]
        );
        assert!(
            p.malformed[1].starts_with("row 2 (pkg/b.py): expected 3 fields"),
            "{}",
            p.malformed[1]
        );
    }

    #[test]
    fn unknown_algorithms_are_malformed() {
        let p =
            parse("pkg/a.py,sha=abc,3\npkg/b.py,md5=XUFAKrxLKna5cZ2REBfFkg,3\npkg/c.py,abc,3\n");
        assert_eq!(p.malformed.len(), 3);
        assert!(
            p.malformed[0].contains("row 1 (pkg/a.py): unknown hash algorithm \"sha\""),
            "{}",
            p.malformed[0]
        );
        assert!(
            p.malformed[1].contains("row 2 (pkg/b.py): unknown hash algorithm \"md5\""),
            "{}",
            p.malformed[1]
        );
        assert!(
            p.malformed[2].contains("row 3 (pkg/c.py): hash \"abc\" is not"),
            "{}",
            p.malformed[2]
        );
        assert!(p.rows.is_empty());
    }

    #[test]
    fn a_hex_digest_is_malformed() {
        let hex = crate::hash::sha256_bytes(b"x");
        let p = parse(&format!("pkg/a.py,sha256={hex},1\n"));
        assert_eq!(p.malformed.len(), 1);
        assert!(
            p.malformed[0].contains("row 1 (pkg/a.py): hex digest"),
            "{}",
            p.malformed[0]
        );
        assert!(
            p.malformed[0].contains("expected urlsafe base64"),
            "{}",
            p.malformed[0]
        );
    }

    #[test]
    fn padded_short_and_non_base64_digests_are_malformed() {
        let padded = format!("{}=", b64(b"x"));
        let p = parse(&format!(
            "pkg/a.py,sha256={padded},1\npkg/b.py,sha256=AAAA,1\npkg/c.py,sha256=+/+/{},1\n",
            &b64(b"x")[4..]
        ));
        assert_eq!(p.malformed.len(), 3, "{:?}", p.malformed);
        assert!(
            p.malformed[0].starts_with("row 1 (pkg/a.py): digest"),
            "{}",
            p.malformed[0]
        );
        assert!(
            p.malformed[1].contains("decodes to 3 bytes"),
            "{}",
            p.malformed[1]
        );
        assert!(
            p.malformed[2].starts_with("row 3 (pkg/c.py): digest"),
            "{}",
            p.malformed[2]
        );
    }

    #[test]
    fn negative_and_non_numeric_sizes_are_malformed() {
        let d = b64(b"x");
        let p = parse(&format!(
            "pkg/a.py,sha256={d},-1\npkg/b.py,sha256={d},1.5\npkg/c.py,sha256={d},\n"
        ));
        assert_eq!(p.malformed.len(), 3);
        assert!(
            p.malformed[0].contains("row 1 (pkg/a.py): negative size -1"),
            "{}",
            p.malformed[0]
        );
        assert!(
            p.malformed[1].contains("row 2 (pkg/b.py): size \"1.5\""),
            "{}",
            p.malformed[1]
        );
        assert!(
            p.malformed[2].contains("row 3 (pkg/c.py): hash"),
            "{}",
            p.malformed[2]
        );
    }

    #[test]
    fn only_record_and_pyc_rows_may_omit_the_hash() {
        let p = parse(&format!(
            "{DIST}/RECORD,,\npkg/x.pyc,,\npkg/a.py,,\nother/RECORD,,\n"
        ));
        assert_eq!(p.rows.len(), 2);
        assert_eq!(p.malformed.len(), 2);
        assert!(
            p.malformed[0].starts_with("row 3 (pkg/a.py): no hash"),
            "{}",
            p.malformed[0]
        );
        assert!(
            p.malformed[1].starts_with("row 4 (other/RECORD): no hash"),
            "{}",
            p.malformed[1]
        );
    }

    #[test]
    fn a_path_listed_twice_is_malformed() {
        let p = parse(&format!("{DIST}/RECORD,,\n{DIST}/RECORD,,\n"));
        assert!(p.malformed[0].starts_with("row 2"), "{:?}", p.malformed);
    }

    #[test]
    fn blank_lines_are_not_rows() {
        let p = parse(&format!("\n{DIST}/RECORD,,\n\n"));
        assert_eq!(p.total_rows, 1);
        assert!(p.malformed.is_empty());
    }

    #[test]
    fn escaping_paths_fail_unless_they_are_console_scripts() {
        let s = site();
        let record = format!(
            "../../../bin/demo,sha256={},9\n../../../bin/other,sha256={},1\npkg/../../escape.py,sha256={},1\n/etc/passwd,sha256={},1\n",
            b64(b"#!python\n"),
            b64(b"x"),
            b64(b"x"),
            b64(b"x")
        );
        let parsed = parse(&record);
        assert!(parsed.malformed.is_empty());
        let report = verify_rows(&s.layout, &parsed.rows);
        assert_eq!(report.hashed_verified, 1);
        assert_eq!(report.escaping.len(), 3, "{:?}", report.escaping);
        assert!(
            report.escaping[0].starts_with("row 2 (../../../bin/other): path"),
            "{}",
            report.escaping[0]
        );
        assert!(
            report.escaping[1].starts_with("row 3 (pkg/../../escape.py)"),
            "{}",
            report.escaping[1]
        );
        assert!(
            report.escaping[2].starts_with("row 4 (/etc/passwd)"),
            "{}",
            report.escaping[2]
        );
        // A `..` that stays inside site-packages is fine.
        assert!(resolve_row_path(&s.layout, "pkg/../pkg/a.py").is_ok());
    }

    #[test]
    fn changed_bytes_of_equal_size_are_a_digest_mismatch() {
        let s = site();
        std::fs::write(s.layout.site_packages.join("pkg/a.py"), b"print('b')\n").unwrap();
        let report = verify_rows(&s.layout, &parse(&good_record()).rows);
        assert_eq!(report.mismatches.len(), 1, "{:?}", report.mismatches);
        let m = &report.mismatches[0];
        assert!(m.starts_with("row 1 (pkg/a.py): digest differs"), "{m}");
        assert!(
            m.contains(&format!("expected sha256={} size 11", b64(b"print('a')\n"))),
            "{m}"
        );
        assert!(
            m.contains(&format!("found sha256={} size 11", b64(b"print('b')\n"))),
            "{m}"
        );
        assert_eq!(report.hashed_verified, 2);
    }

    #[test]
    fn a_size_mismatch_and_a_missing_file_are_named() {
        let s = site();
        std::fs::write(s.layout.site_packages.join("pkg/b.py"), b"b = 2\n\n").unwrap();
        std::fs::remove_file(s.layout.site_packages.join("pkg/a.py")).unwrap();
        let report = verify_rows(&s.layout, &parse(&good_record()).rows);
        assert_eq!(report.mismatches.len(), 1);
        assert!(
            report.mismatches[0].starts_with("row 2 (pkg/b.py): digest and size differ"),
            "{:?}",
            report.mismatches
        );
        assert!(
            report.mismatches[0].contains("size 6, found"),
            "{:?}",
            report.mismatches
        );
        assert_eq!(report.missing.len(), 1);
        assert!(
            report.missing[0].starts_with("row 1 (pkg/a.py): expected a file of 11 bytes"),
            "{:?}",
            report.missing
        );
    }

    #[test]
    fn size_alone_differing_is_reported_as_such() {
        let s = site();
        // Same digest, wrong declared size.
        let record = format!("pkg/b.py,sha256={},7\n", b64(b"b = 2\n"));
        let report = verify_rows(&s.layout, &parse(&record).rows);
        assert!(
            report.mismatches[0].starts_with("row 1 (pkg/b.py): size differs"),
            "{:?}",
            report.mismatches
        );
    }

    #[test]
    fn unlisted_files_are_found_outside_pycache() {
        let s = site();
        let sp = &s.layout.site_packages;
        std::fs::write(sp.join("pkg/extra.py"), b"").unwrap();
        std::fs::write(sp.join("pkg/__pycache__/extra.cpython-311.pyc"), b"").unwrap();
        std::fs::write(sp.join(DIST).join("direct_url.json"), b"{}").unwrap();
        let report = verify_rows(&s.layout, &parse(&good_record()).rows);
        let unlisted = unlisted_files(&[sp.join("pkg"), sp.join(DIST)], &report.listed);
        assert_eq!(
            unlisted,
            [
                sp.join("pkg/extra.py").display().to_string(),
                sp.join(DIST).join("direct_url.json").display().to_string()
            ]
        );
    }

    fn pyc(
        path: &str,
        source: Option<&str>,
        outcome: BytecodeOutcome,
        why: Option<&str>,
    ) -> BytecodeFile {
        BytecodeFile {
            path: path.into(),
            source: source.map(Into::into),
            optimize: source.map(|_| 0),
            header: None,
            outcome,
            difference: why.map(Into::into),
        }
    }

    fn bytecode(files: Vec<BytecodeFile>) -> BytecodeProbe {
        BytecodeProbe {
            cache_tag: "cpython-311".into(),
            magic: "a70d0d0a".into(),
            files,
        }
    }

    const PYC: &str = "pkg/__pycache__/a.cpython-311.pyc";

    #[test]
    fn bytecode_equal_to_a_verified_source_passes_and_absent_bytecode_too() {
        let s = site();
        let report = verify_rows(&s.layout, &parse(&good_record()).rows);
        let sp = &s.layout.site_packages;
        let equal = bytecode(vec![pyc(
            PYC,
            Some("pkg/a.py"),
            BytecodeOutcome::Equal,
            None,
        )]);
        assert!(bytecode_problems(&equal, sp, &report.verified).is_empty());
        assert!(bytecode_problems(&bytecode(vec![]), sp, &report.verified).is_empty());
        let c = bytecode_check(&equal, &sp.join("pkg"), &[], "1.0");
        assert_eq!(c.result, crate::evidence::CheckResult::Pass, "{}", c.detail);
    }

    #[test]
    fn bytecode_equal_to_an_unverified_source_fails() {
        let s = site();
        // pkg/a.py is tampered: its row no longer verifies.
        std::fs::write(s.layout.site_packages.join("pkg/a.py"), b"print('b')\n").unwrap();
        let report = verify_rows(&s.layout, &parse(&good_record()).rows);
        let probe = bytecode(vec![pyc(
            PYC,
            Some("pkg/a.py"),
            BytecodeOutcome::Equal,
            None,
        )]);
        let p = bytecode_problems(&probe, &s.layout.site_packages, &report.verified);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with(&format!(
                "{PYC}: expected the compilation of a RECORD-verified source"
            )),
            "{}",
            p[0]
        );
        assert!(
            p[0].contains("pkg/a.py, which no hashed RECORD row verified"),
            "{}",
            p[0]
        );
    }

    #[test]
    fn every_other_bytecode_outcome_fails_naming_the_file() {
        let s = site();
        let report = verify_rows(&s.layout, &parse(&good_record()).rows);
        let probe = bytecode(vec![
            pyc(
                PYC,
                Some("pkg/a.py"),
                BytecodeOutcome::Differs,
                Some("<module>.co_code"),
            ),
            pyc(
                "pkg/__pycache__/gone.cpython-311.pyc",
                Some("pkg/gone.py"),
                BytecodeOutcome::NoSource,
                None,
            ),
            pyc(
                "pkg/__pycache__/a.cpython-312.pyc",
                None,
                BytecodeOutcome::ForeignName,
                None,
            ),
            pyc(
                "pkg/__pycache__/b.cpython-311.pyc",
                Some("pkg/b.py"),
                BytecodeOutcome::BadHeader,
                Some("magic number 550d0d0a"),
            ),
            pyc(
                "pkg/__pycache__/c.cpython-311.pyc",
                Some("pkg/c.py"),
                BytecodeOutcome::Unreadable,
                Some("permission denied"),
            ),
            pyc("pkg/evil.pyc", None, BytecodeOutcome::Sourceless, None),
        ]);
        let p = bytecode_problems(&probe, &s.layout.site_packages, &report.verified);
        assert_eq!(p.len(), 6, "{p:?}");
        assert!(p[0].starts_with(&format!("{PYC}: expected this interpreter's compilation of pkg/a.py (optimize 0), found other code (first difference: <module>.co_code)")), "{}", p[0]);
        assert!(p[1].starts_with("pkg/__pycache__/gone.cpython-311.pyc: expected the compilation of pkg/gone.py, found no such source"), "{}", p[1]);
        assert!(
            p[2].starts_with(
                "pkg/__pycache__/a.cpython-312.pyc: expected only `<module>.cpython-311.pyc`"
            ),
            "{}",
            p[2]
        );
        assert!(
            p[3].contains("magic a70d0d0a), found magic number 550d0d0a"),
            "{}",
            p[3]
        );
        assert!(p[4].ends_with("found permission denied"), "{}", p[4]);
        assert!(
            p[5].starts_with(
                "pkg/evil.pyc: expected bytecode only in __pycache__, found a sourceless .pyc"
            ),
            "{}",
            p[5]
        );
        let c = bytecode_check(&probe, &s.layout.site_packages.join("pkg"), &p, "1.0");
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert!(
            c.detail.contains("6 bytecode file(s)")
                && c.detail.contains("delete them")
                && c.detail.contains("langbot-plugin==1.0"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn versions_compare_in_pep440_normal_form() {
        assert_eq!(normalize_version("0.6.0b5"), "0.6.0b5");
        assert_eq!(normalize_version("0.6.0-Beta5"), "0.6.0b5");
        assert_eq!(normalize_version("v0.6.0.b.5"), "0.6.0b5");
        assert_eq!(normalize_version("1.0c1"), "1.0rc1");
        assert_eq!(normalize_version("1.0-1"), "1.0.post1");
        assert_eq!(normalize_version("1.0.rev2.DEV3"), "1.0.post2.dev3");
        assert_eq!(normalize_version("01.00+Ubuntu-1"), "1.0+ubuntu.1");
        assert_eq!(normalize_version("1!2.0a"), "1!2.0a0");
        assert_ne!(normalize_version("0.6.0b4"), normalize_version("0.6.0b5"));
        assert_eq!(normalize_version(" not a version "), "not a version");
        // Not PEP 440: kept as text, so they never equal a pin.
        assert_eq!(normalize_version("1.0+"), "1.0+");
        assert_eq!(normalize_version("1.0+a..b"), "1.0+a..b");
        assert_eq!(normalize_version("1..0"), "1..0");
    }
}
