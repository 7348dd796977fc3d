//! RECORD, the installed-files list of a wheel-installed distribution
//! (PyPA "Recording installed projects"): rows parsed, paths resolved against
//! site-packages and the scripts directory, rows verified against the files
//! (sha256 and size), the files RECORD does not list, and PEP 440 version
//! normal form. Used by the `sdk-record` gate and by SDK provisioning;
//! everything here observes, nothing decides.

use crate::hash;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use walkdir::WalkDir;

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
    /// `(row, path as written)` of each malformed row that names a path: its
    /// file, if present, is not verified because of that row.
    pub malformed_paths: Vec<(usize, String)>,
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
            if let Some(path) = record.get(0).filter(|p| !p.is_empty()) {
                parsed.malformed_paths.push((row, path.to_string()));
            }
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
                parsed.rows.push(RecordRow {
                    row,
                    path: path.to_string(),
                    hashed: None,
                });
            }
            Ok(None) => {
                parsed.malformed_paths.push((row, path.to_string()));
                parsed.malformed.push(format!(
                    "row {row} ({path}): no hash and size; only RECORD itself and `.pyc` files may omit them"
                ));
            }
            Ok(Some(hashed)) => parsed.rows.push(RecordRow {
                row,
                path: path.to_string(),
                hashed: Some(hashed),
            }),
            Err(why) => {
                parsed.malformed_paths.push((row, path.to_string()));
                parsed.malformed.push(format!("row {row} ({path}): {why}"));
            }
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
    // Compared as resolved: an interpreter whose path is spelled with `..`
    // (`XDG_CACHE_HOME="$CI_PROJECT_DIR/../cache"`) holds its own files.
    let site_packages = normalize_join(&layout.site_packages, ".");
    if resolved.starts_with(&site_packages) && resolved != site_packages {
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
#[derive(Debug, Clone, Default, Serialize)]
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

/// What [`unlisted_files`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Walk {
    /// Files walked (outside `__pycache__`).
    pub files: usize,
    /// The walked files no well-formed RECORD row lists (absolute, lexically
    /// normalised), and unreadable entries as `path (unreadable: ...)`.
    pub unlisted: Vec<String>,
}

/// Files under `roots` (not following symlinks, skipping `__pycache__`
/// directories) that are not in `listed`. Unreadable entries are reported too,
/// as `path (unreadable: ...)`.
pub fn unlisted_files(roots: &[PathBuf], listed: &BTreeSet<PathBuf>) -> Walk {
    let mut out = Vec::new();
    let mut files = 0;
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
                    files += 1;
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
    Walk {
        files,
        unlisted: out,
    }
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
