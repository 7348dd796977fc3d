//! The `record-provenance` check of `sdk-record`: the installed RECORD is the
//! pinned wheel's own RECORD, plus only the rows pip adds when it installs.
//!
//! The profile records the sha256 of the published wheel's
//! `*.dist-info/RECORD` (`sdk.record_sha256`); the verifier carries that
//! RECORD's text (`gates/profiles/sdk/*.RECORD`, via
//! `src/provision/builtin.rs`) and finds it by that digest. pip installs the
//! wheel's rows unchanged (same path, digest and size) and adds rows for what
//! it writes itself (pip `_internal/operations/install/wheel.py`):
//! `<dist-info>/INSTALLER`, `<dist-info>/REQUESTED`, `<dist-info>/direct_url.json`,
//! the console scripts it generates (`../../../bin/<name>`, one per
//! `console_scripts` entry point) and the bytecode it compiles
//! (`<dir>/__pycache__/<stem>.<tag>[.opt-N].pyc,,`, without hash, for a
//! wheel's `<dir>/<stem>.py`). Every wheel row must be present byte for byte,
//! and every other row must be one of those additions: a RECORD rewritten to
//! match a changed file, or with a file added, fails here even when its
//! rows match the files.

use crate::evidence::Check;
use crate::hash;
use serde_json::json;
use std::collections::BTreeSet;

/// The wheel RECORD digest `record-provenance` holds the interpreter to:
/// the profile's `sdk.record_sha256` (`pinned`) when it records one, else
/// the sha256 hex of the SDK wheel's own RECORD in the lock the verifier
/// holds for the exact pin (`lock`: carried in `gates/profiles/sdk/`, or
/// made on demand from the published wheel, its `langbot_plugin-V.RECORD`:
/// `src/provision/on_demand.rs`); `None` when neither is known.
pub(crate) fn expected_record_sha256(
    pinned: Option<&str>,
    lock: Option<&crate::provision::on_demand::SdkFiles>,
) -> Option<String> {
    pinned
        .map(str::to_string)
        .or_else(|| lock.map(|f| hash::sha256_bytes(f.wheel_record.as_bytes())))
}

/// Each RECORD the verifier carries, as `<sha256> for <requirement>`.
fn carried_records(known: &[crate::provision::on_demand::SdkFiles]) -> Vec<String> {
    known
        .iter()
        .map(|s| {
            format!(
                "{} for {}",
                hash::sha256_bytes(s.wheel_record.as_bytes()),
                s.requirement
            )
        })
        .collect()
}

/// The differences from the wheel's RECORD, as sentences: its rows missing
/// or changed, and rows neither the wheel's nor pip's (the first 5 of each).
fn differences(missing: &[String], unexpected: &[String]) -> Vec<String> {
    let show = |rows: &[String]| {
        let mut text = rows.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
        if rows.len() > 5 {
            text.push_str(&format!("; and {} more", rows.len() - 5));
        }
        text
    };
    let mut found = Vec::new();
    if !missing.is_empty() {
        found.push(format!(
            "{} wheel row(s) missing or changed: {}",
            missing.len(),
            show(missing)
        ));
    }
    if !unexpected.is_empty() {
        found.push(format!(
            "{} row(s) neither the wheel's nor pip's: {}",
            unexpected.len(),
            show(unexpected)
        ));
    }
    found
}

/// The `record-provenance` check, or `None` when the profile records no
/// `sdk.record_sha256` (then the provenance is not established; the
/// catalogue says so).
///
/// `installed` is the installed RECORD's text, `record_path` its path (for
/// messages), `dist_info_name` its folder's name, `console_scripts` the
/// distribution's `console_scripts` entry point names.
pub(crate) fn provenance_check(
    want_sha256: Option<&str>,
    installed: &str,
    record_path: &str,
    dist_info_name: &str,
    console_scripts: &[String],
) -> Option<Check> {
    let want = want_sha256?;
    let known = crate::provision::on_demand::all_files();
    let Some(wheel) = known
        .iter()
        .find(|s| hash::sha256_bytes(s.wheel_record.as_bytes()) == want)
    else {
        let carried = carried_records(&known);
        return Some(
            Check::fail(
                "record-provenance",
                None,
                format!(
                    "the profile's sdk.record_sha256 {want} names a wheel RECORD this verifier does not carry \
                     (it carries {}); expected the digest of the pinned wheel's own RECORD: fix the profile, \
                     or remove sdk.record_sha256 to leave the provenance unproven",
                    carried.join(", ")
                ),
            )
            .with_observed(json!({ "record_sha256": want })),
        );
    };
    let (missing, unexpected) = compare(
        &wheel.wheel_record,
        installed,
        dist_info_name,
        console_scripts,
    );
    let observed = json!({
        "wheel_record_sha256": want,
        "installed_record": record_path,
        "missing_wheel_rows": missing,
        "unexpected_rows": unexpected,
    });
    if missing.is_empty() && unexpected.is_empty() {
        return Some(
            Check::pass(
                "record-provenance",
                None,
                format!(
                    "{record_path} holds every row of the published {} wheel's RECORD (sha256 {want}) \
                     byte for byte, and only pip's own additions besides",
                    wheel.requirement
                ),
            )
            .with_observed(observed),
        );
    }
    let found = differences(&missing, &unexpected);
    Some(
        Check::fail(
            "record-provenance",
            None,
            format!(
                "{record_path}: expected the published {} wheel's RECORD rows (sha256 {want}) and only pip's \
                 additions, found {}; the installed SDK is not that wheel as pip installed it: reinstall it \
                 (`verify-coding-candidates sdk` provisions a verified one)",
                wheel.requirement,
                found.join("; ")
            ),
        )
        .with_observed(observed),
    )
}

/// `(wheel rows absent from installed, installed rows that are neither the
/// wheel's nor pip's additions)`, each as the row's text.
pub(crate) fn compare(
    wheel: &str,
    installed: &str,
    dist_info_name: &str,
    console_scripts: &[String],
) -> (Vec<String>, Vec<String>) {
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let wheel_rows = rows(wheel);
    let wheel_set: BTreeSet<&str> = wheel_rows.iter().map(String::as_str).collect();
    let installed_rows = rows(installed);
    let installed_set: BTreeSet<&str> = installed_rows.iter().map(String::as_str).collect();
    let sources: BTreeSet<&str> = wheel_rows
        .iter()
        .filter_map(|r| r.split(',').next())
        .filter(|p| p.ends_with(".py"))
        .collect();
    let missing = wheel_rows
        .iter()
        .filter(|r| !installed_set.contains(r.as_str()))
        .cloned()
        .collect();
    let unexpected = installed_rows
        .iter()
        .filter(|r| {
            !wheel_set.contains(r.as_str())
                && !pip_addition(r, dist_info_name, console_scripts, &sources)
        })
        .cloned()
        .collect();
    (missing, unexpected)
}

/// True for a row pip writes for what it generates (see the module docs).
fn pip_addition(
    row: &str,
    dist_info_name: &str,
    console_scripts: &[String],
    sources: &BTreeSet<&str>,
) -> bool {
    let Some((path, rest)) = row.split_once(',') else {
        return false;
    };
    let hashed = rest.starts_with("sha256=") && rest.split(',').count() == 2;
    if let Some(file) = path.strip_prefix(&format!("{dist_info_name}/")) {
        return hashed && matches!(file, "INSTALLER" | "REQUESTED" | "direct_url.json");
    }
    if let Some(script) = path.strip_prefix("../../../bin/") {
        return hashed && console_scripts.iter().any(|s| s == script);
    }
    if rest != "," {
        return false;
    }
    // <dir>/__pycache__/<stem>.<tag>[.opt-N].pyc for a wheel's <dir>/<stem>.py.
    let Some((dir, file)) = path.rsplit_once("/__pycache__/") else {
        return false;
    };
    let Some(name) = file.strip_suffix(".pyc") else {
        return false;
    };
    let mut parts = name.split('.');
    let stem = parts.next().unwrap_or("");
    let source = format!("{dir}/{stem}.py");
    sources.contains(source.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHEEL: &str = "pkg/__init__.py,sha256=AAA,0\npkg/mod.py,sha256=BBB,10\npkg-1.dist-info/METADATA,sha256=CCC,5\npkg-1.dist-info/RECORD,,\n";

    fn installed_by_pip() -> String {
        format!(
            "{WHEEL}../../../bin/pk,sha256=DDD,200\npkg-1.dist-info/INSTALLER,sha256=EEE,4\n\
             pkg-1.dist-info/REQUESTED,sha256=FFF,0\npkg/__pycache__/__init__.cpython-311.pyc,,\n\
             pkg/__pycache__/mod.cpython-311.opt-1.pyc,,\n"
        )
    }

    #[test]
    fn pip_s_own_additions_are_accepted() {
        let (missing, unexpected) = compare(
            WHEEL,
            &installed_by_pip(),
            "pkg-1.dist-info",
            &["pk".into()],
        );
        assert!(
            missing.is_empty() && unexpected.is_empty(),
            "{missing:?} {unexpected:?}"
        );
    }

    #[test]
    fn a_row_rewritten_to_match_a_changed_file_is_named() {
        let tampered =
            installed_by_pip().replace("pkg/mod.py,sha256=BBB,10", "pkg/mod.py,sha256=XXX,11");
        let (missing, unexpected) = compare(WHEEL, &tampered, "pkg-1.dist-info", &["pk".into()]);
        assert_eq!(missing, vec!["pkg/mod.py,sha256=BBB,10".to_string()]);
        assert_eq!(unexpected, vec!["pkg/mod.py,sha256=XXX,11".to_string()]);
    }

    #[test]
    fn added_files_scripts_and_bytecode_without_a_wheel_source_are_named() {
        let extra = format!(
            "{}pkg/evil.py,sha256=GGG,3\n../../../bin/other,sha256=HHH,9\npkg/__pycache__/evil.cpython-311.pyc,,\n\
             pkg-1.dist-info/INSTALLER,,\n",
            installed_by_pip()
        );
        let (_, unexpected) = compare(WHEEL, &extra, "pkg-1.dist-info", &["pk".into()]);
        assert_eq!(
            unexpected,
            vec![
                "pkg/evil.py,sha256=GGG,3",
                "../../../bin/other,sha256=HHH,9",
                "pkg/__pycache__/evil.cpython-311.pyc,,",
                "pkg-1.dist-info/INSTALLER,,",
            ]
        );
    }

    #[test]
    fn the_check_is_absent_without_a_profile_digest_and_fails_for_an_unknown_one() {
        assert!(provenance_check(None, WHEEL, "R", "pkg-1.dist-info", &[]).is_none());
        let c =
            provenance_check(Some(&"0".repeat(64)), WHEEL, "R", "pkg-1.dist-info", &[]).unwrap();
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert!(c.detail.contains("does not carry"), "{}", c.detail);
    }

    #[test]
    fn without_a_profile_digest_the_lock_s_wheel_record_is_expected() {
        use crate::provision::on_demand::{file_names, files_for, files_in};
        assert_eq!(
            expected_record_sha256(Some("abc"), files_for("langbot-plugin==0.6.0b5").as_ref()),
            Some("abc".to_string())
        );
        assert_eq!(
            expected_record_sha256(None, files_for("langbot-plugin==0.6.0b5").as_ref()).as_deref(),
            Some("064f66f2305ca34b1e06c575ffa8179ba1c903bc3ccb09545e53df6d56f916dc")
        );
        // A lock made on demand: its wheel's own RECORD, as the lock keeps it.
        let dir = tempfile::tempdir().unwrap();
        let [lock, records, record, _] = file_names("0.7.4");
        std::fs::write(dir.path().join(&lock), "lock").unwrap();
        std::fs::write(dir.path().join(&records), "records").unwrap();
        std::fs::write(dir.path().join(&record), WHEEL).unwrap();
        let files = files_in(dir.path(), "langbot-plugin==0.7.4");
        assert_eq!(
            expected_record_sha256(None, files.as_ref()),
            Some(hash::sha256_bytes(WHEEL.as_bytes()))
        );
        assert_eq!(expected_record_sha256(None, None), None);
    }

    #[test]
    fn the_carried_record_is_the_published_wheel_s() {
        // The digest the built-in profile records (computed from the wheel
        // langbot_plugin-0.6.0b5-py3-none-any.whl, sha256 15c5a607...).
        let sdk = &crate::provision::builtin::SDKS[0];
        assert_eq!(
            hash::sha256_bytes(sdk.wheel_record.as_bytes()),
            "064f66f2305ca34b1e06c575ffa8179ba1c903bc3ccb09545e53df6d56f916dc"
        );
        let profile = crate::profile::parse(crate::profile::BUILTIN_CODING_RUNNERS, "b").unwrap();
        assert_eq!(
            profile.sdk.record_sha256.as_deref(),
            Some("064f66f2305ca34b1e06c575ffa8179ba1c903bc3ccb09545e53df6d56f916dc")
        );
    }
}
