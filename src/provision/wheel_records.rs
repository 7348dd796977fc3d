//! What each locked wheel's own `*.dist-info/RECORD` says, carried beside
//! its lock list (`gates/profiles/sdk/*.records`, generated from the locked
//! wheels by `cargo xtask wheel-records`), so an installed distribution can
//! be compared with the wheel its lock names without the wheel at hand.
//!
//! A RECORD is compared by its *normalised rows*: the rows of the files the
//! wheel ships, as written (`path,hash,size`), sorted, without
//!
//! - `<dist-info>/RECORD` (it cannot hash itself) and its signatures
//!   (`RECORD.jws`, `RECORD.p7s`);
//! - on the installed side, what the installer adds (pip's
//!   `_internal/operations/install/wheel.py`, `installer`'s `_core.py`):
//!   `<dist-info>/INSTALLER`, `<dist-info>/REQUESTED`,
//!   `<dist-info>/direct_url.json`, the bytecode it compiles (unhashed
//!   `.pyc` rows) and the console-script launchers it writes from
//!   `entry_points.txt` (`../../../bin/NAME` rows, [`is_launcher`]: their `#!` line holds the
//!   environment's path, so no wheel can hash them; `entry_points.txt`
//!   itself is compared);
//! - on the wheel side, `*.data/scripts/` and `*.data/headers/` (installed
//!   outside site-packages, rewritten); `*.data/purelib/` and
//!   `*.data/platlib/` rows are compared at the path they install to.
//!
//! pip copies every other row of the wheel's RECORD unchanged into the
//! installed one (checked for every wheel of the SDK's lock against the
//! genuine provisioned environment: `tests/wheel_records.rs`), so the
//! normalised rows of a sound installation equal the wheel's. The digest is
//! sha256 (hex) of the sorted rows, each followed by `\n`.

use super::lock_list::{normalize_name, LockList};
use sha2::{Digest, Sha256};

/// Which side of an installation a RECORD comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordSide {
    /// The wheel's own RECORD, as published.
    Wheel,
    /// The RECORD an installer wrote into site-packages.
    Installed,
}

/// One locked wheel's RECORD, as carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelRecord {
    /// The distribution name as the lock writes it.
    pub name: String,
    /// The exact version.
    pub version: String,
    /// The wheel's sha256 (hex), as the lock names it.
    pub wheel_sha256: String,
    /// The number of normalised rows.
    pub rows: usize,
    /// sha256 (hex) of the normalised rows.
    pub digest: String,
    /// The wheel's file name.
    pub wheel: String,
}

impl WheelRecord {
    /// The PEP 503 normalised name.
    pub fn key(&self) -> String {
        normalize_name(&self.name)
    }
}

/// The normalised rows of RECORD `text` of the distribution whose dist-info
/// folder is `dist_info` (see the module docs), sorted.
///
/// # Errors
/// A sentence when `text` is not CSV or a row has not three fields.
pub fn normalised_rows(
    text: &str,
    dist_info: &str,
    side: RecordSide,
) -> Result<Vec<String>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let own = |file: &str| format!("{dist_info}/{file}");
    let mut out = Vec::new();
    for (i, row) in reader.records().enumerate() {
        let row = row.map_err(|e| format!("row {}: not CSV ({e})", i + 1))?;
        if row.len() == 1 && row[0].is_empty() {
            continue;
        }
        if row.len() != 3 {
            return Err(format!(
                "row {}: expected 3 fields (path,hash,size), found {}",
                i + 1,
                row.len()
            ));
        }
        let (mut path, hash, size) = (row[0].to_string(), &row[1], &row[2]);
        if ["RECORD", "RECORD.jws", "RECORD.p7s"]
            .iter()
            .any(|f| path == own(f))
        {
            continue;
        }
        match side {
            RecordSide::Installed => {
                let added = ["INSTALLER", "REQUESTED", "direct_url.json"]
                    .iter()
                    .any(|f| path == own(f));
                let compiled = hash.is_empty() && path.ends_with(".pyc");
                let launcher = is_launcher(&path);
                if added || compiled || launcher {
                    continue;
                }
            }
            RecordSide::Wheel => {
                if let Some((_, rest)) = path.split_once(".data/") {
                    if path.split('/').next().is_some_and(|d| d.ends_with(".data")) {
                        match rest.split_once('/') {
                            Some(("purelib" | "platlib", inner)) => path = inner.to_string(),
                            Some(("data", inner)) => path = format!("../../../{inner}"),
                            _ => continue,
                        }
                    }
                }
            }
        }
        out.push(format!("{path},{hash},{size}"));
    }
    out.sort();
    Ok(out)
}

/// Whether RECORD path `path` is a console-script launcher an installer
/// wrote: `../`, one or more times, then `bin/NAME` (`../../../bin/lbp` in a
/// venv; `../../bin/NAME` under `pip install --target`, whose RECORD is
/// written relative to its temporary `lib/python`).
pub fn is_launcher(path: &str) -> bool {
    let mut rest = path;
    let mut climbed = false;
    while let Some(r) = rest.strip_prefix("../") {
        rest = r;
        climbed = true;
    }
    climbed
        && rest
            .strip_prefix("bin/")
            .is_some_and(|n| !n.is_empty() && !n.contains('/'))
}

/// sha256 (hex) of `rows`, each followed by `\n`.
pub fn digest(rows: &[String]) -> String {
    let mut h = Sha256::new();
    for row in rows {
        h.update(row.as_bytes());
        h.update(b"\n");
    }
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

/// One line of a records file for `entry`'s wheel, whose normalised rows are
/// `rows`: `name==version wheel=SHA256 rows=N record=DIGEST  # wheel-file`.
pub fn render_line(entry: &super::lock_list::LockEntry, rows: &[String]) -> String {
    format!(
        "{}=={} wheel={} rows={} record={}  # {}",
        entry.name,
        entry.version,
        entry.sha256,
        rows.len(),
        digest(rows),
        entry.wheel
    )
}

/// Parses a records file (`#` comments, blank lines, then one
/// [`render_line`] line per wheel); `label` names it in errors.
///
/// # Errors
/// A sentence naming the line when one is not of that form.
pub fn parse(text: &str, label: &str) -> Result<Vec<WheelRecord>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let (body, comment) = raw.split_once('#').unwrap_or((raw, ""));
        let body = body.trim();
        if body.is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "{label} line {}: expected `NAME==VERSION wheel=SHA256 rows=N record=SHA256  # WHEEL`, found {raw:?}",
                i + 1
            )
        };
        let fields: Vec<&str> = body.split_whitespace().collect();
        let [pin, wheel, rows, record] = fields.as_slice() else {
            return Err(bad());
        };
        let (name, version) = pin.split_once("==").ok_or_else(bad)?;
        let wheel_sha256 = wheel.strip_prefix("wheel=").ok_or_else(bad)?;
        let rows = rows
            .strip_prefix("rows=")
            .and_then(|n| n.parse().ok())
            .ok_or_else(bad)?;
        let digest = record.strip_prefix("record=").ok_or_else(bad)?;
        out.push(WheelRecord {
            name: name.to_string(),
            version: version.to_string(),
            wheel_sha256: wheel_sha256.to_string(),
            rows,
            digest: digest.to_string(),
            wheel: comment.trim().to_string(),
        });
    }
    Ok(out)
}

/// The locked wheels of `lock` that `records` does not carry (by name,
/// version and wheel sha256), as `name==version`.
pub fn uncovered(lock: &LockList, records: &[WheelRecord]) -> Vec<String> {
    lock.entries
        .iter()
        .filter(|e| {
            !records
                .iter()
                .any(|r| r.key() == e.key() && r.version == e.version && r.wheel_sha256 == e.sha256)
        })
        .map(|e| format!("{}=={}", e.name, e.version))
        .collect()
}

/// Compares the installed RECORD of `dist_info` (folder name
/// `dist_info_name`) with the carried record of lock entry `entry`, when
/// `carried` holds one (same name, version and wheel sha256).
///
/// # Errors
/// A sentence naming the RECORD, the wheel, what was expected and found.
pub fn check_installed(
    dist_info: &std::path::Path,
    dist_info_name: &str,
    entry: &super::lock_list::LockEntry,
    carried: &[WheelRecord],
) -> Result<(), String> {
    let Some(locked) = carried.iter().find(|r| {
        r.key() == entry.key() && r.version == entry.version && r.wheel_sha256 == entry.sha256
    }) else {
        return Ok(());
    };
    let path = dist_info.join("RECORD");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: expected the distribution's RECORD, found none ({e})",
            path.display()
        )
    })?;
    let rows = normalised_rows(&text, dist_info_name, RecordSide::Installed)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let found = digest(&rows);
    if found != locked.digest || rows.len() != locked.rows {
        return Err(format!(
            "{}: expected the rows of {}'s own RECORD (rows={} record={}), found rows={} record={found}",
            path.display(),
            locked.wheel,
            locked.rows,
            locked.digest,
            rows.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHEEL: &str = "demo/__init__.py,sha256=AAAA,10\n\
demo-1.0.dist-info/METADATA,sha256=BBBB,20\n\
demo-1.0.dist-info/entry_points.txt,sha256=CCCC,30\n\
demo-1.0.dist-info/RECORD,,\n";

    const INSTALLED: &str = "../../../bin/demo,sha256=LLLL,250\n\
demo-1.0.dist-info/INSTALLER,sha256=IIII,4\n\
demo-1.0.dist-info/METADATA,sha256=BBBB,20\n\
demo-1.0.dist-info/RECORD,,\n\
demo-1.0.dist-info/REQUESTED,sha256=RRRR,0\n\
demo-1.0.dist-info/direct_url.json,sha256=DDDD,90\n\
demo-1.0.dist-info/entry_points.txt,sha256=CCCC,30\n\
demo/__init__.py,sha256=AAAA,10\n\
demo/__pycache__/__init__.cpython-311.pyc,,\n";

    #[test]
    fn what_pip_adds_is_not_compared_and_the_rest_is() {
        let w = normalised_rows(WHEEL, "demo-1.0.dist-info", RecordSide::Wheel).unwrap();
        let i = normalised_rows(INSTALLED, "demo-1.0.dist-info", RecordSide::Installed).unwrap();
        assert_eq!(w, i);
        assert_eq!(w.len(), 3);
    }

    #[test]
    fn a_file_of_other_bytes_or_one_more_file_changes_the_digest() {
        let w = digest(&normalised_rows(WHEEL, "demo-1.0.dist-info", RecordSide::Wheel).unwrap());
        let other = INSTALLED.replace("CCCC,30", "ZZZZ,31");
        let more = format!("{INSTALLED}demo-1.0.pth,sha256=PPPP,12\n");
        // An unhashed row that is not bytecode is compared too.
        let unhashed = format!("{INSTALLED}demo/evil.py,,\n");
        for text in [other, more, unhashed] {
            let i = normalised_rows(&text, "demo-1.0.dist-info", RecordSide::Installed).unwrap();
            assert_ne!(digest(&i), w, "{text}");
        }
    }

    #[test]
    fn an_installed_record_is_checked_against_its_carried_wheel_record() {
        let dir = tempfile::tempdir().unwrap();
        let info = dir.path().join("demo-1.0.dist-info");
        std::fs::create_dir(&info).unwrap();
        std::fs::write(info.join("RECORD"), INSTALLED).unwrap();
        let entry = super::super::lock_list::LockEntry {
            name: "demo".into(),
            version: "1.0".into(),
            sha256: "ab".repeat(32),
            wheel: "demo-1.0-py3-none-any.whl".into(),
        };
        let rows = normalised_rows(WHEEL, "demo-1.0.dist-info", RecordSide::Wheel).unwrap();
        let carried = vec![WheelRecord {
            name: "demo".into(),
            version: "1.0".into(),
            wheel_sha256: entry.sha256.clone(),
            rows: rows.len(),
            digest: digest(&rows),
            wheel: entry.wheel.clone(),
        }];
        check_installed(&info, "demo-1.0.dist-info", &entry, &carried).unwrap();
        // The module and its row changed together: RECORD still verifies
        // its files, but is not the wheel's.
        std::fs::write(info.join("RECORD"), INSTALLED.replace("AAAA,10", "EVIL,12")).unwrap();
        let err = check_installed(&info, "demo-1.0.dist-info", &entry, &carried).unwrap_err();
        assert!(
            err.contains("demo-1.0.dist-info/RECORD: expected the rows of demo-1.0-py3-none-any.whl's own RECORD (rows=3 record=")
                && err.contains("found rows=3 record="),
            "{err}"
        );
        // A wheel whose records are not carried is not compared here.
        let other = super::super::lock_list::LockEntry {
            sha256: "cd".repeat(32),
            ..entry
        };
        check_installed(&info, "demo-1.0.dist-info", &other, &carried).unwrap();
        assert!(carried_covers_every_builtin_lock());
    }

    fn carried_covers_every_builtin_lock() -> bool {
        super::super::on_demand::all_records().len() > 60
    }

    #[test]
    fn launchers_are_bin_rows_below_one_or_more_parents() {
        assert!(is_launcher("../../../bin/lbp"));
        assert!(is_launcher("../../bin/demo"));
        assert!(!is_launcher("bin/demo"));
        assert!(!is_launcher("../../../bin/sub/demo"));
        assert!(!is_launcher("../../../lib/demo"));
    }

    #[test]
    fn data_rows_of_a_wheel_are_compared_where_they_install() {
        let wheel = "demo-1.0.data/purelib/demo/x.py,sha256=AAAA,1\n\
demo-1.0.data/scripts/demo,sha256=SSSS,2\n\
demo-1.0.data/data/share/demo.txt,sha256=TTTT,3\n";
        let rows = normalised_rows(wheel, "demo-1.0.dist-info", RecordSide::Wheel).unwrap();
        assert_eq!(
            rows,
            vec![
                "../../../share/demo.txt,sha256=TTTT,3".to_string(),
                "demo/x.py,sha256=AAAA,1".to_string()
            ]
        );
    }

    #[test]
    fn a_records_file_round_trips_and_a_bad_line_is_named() {
        let entry = super::super::lock_list::LockEntry {
            name: "Demo".into(),
            version: "1.0".into(),
            sha256: "ab".repeat(32),
            wheel: "demo-1.0-py3-none-any.whl".into(),
        };
        let rows = vec!["a,sha256=A,1".to_string()];
        let text = format!("# header\n{}\n", render_line(&entry, &rows));
        let parsed = parse(&text, "x.records").unwrap();
        assert_eq!(parsed[0].key(), "demo");
        assert_eq!(parsed[0].rows, 1);
        assert_eq!(parsed[0].digest, digest(&rows));
        assert_eq!(parsed[0].wheel, "demo-1.0-py3-none-any.whl");
        let err = parse("demo==1.0 rows=1\n", "x.records").unwrap_err();
        assert!(err.contains("x.records line 1"), "{err}");
        let err = normalised_rows("a,b\n", "d", RecordSide::Installed).unwrap_err();
        assert!(err.contains("expected 3 fields"), "{err}");
    }
}
