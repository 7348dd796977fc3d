//! The `environment-locked` check of the `sdk-record` gate: every
//! distribution installed in the verified interpreter's site directories is
//! a wheel of the verifier's hash lock, installed as published.
//!
//! `environment-records` proves each RECORD matches its files; that alone
//! accepts a forged distribution whose own RECORD hashes its own files (an
//! executable `.pth`, a `pytest11` entry point that loads into every pytest
//! run). The anchor here is the lock the verifier provisions from
//! (`gates/profiles/sdk/*.lock`, plus `xtask/test-extras.lock`, the
//! verifier's own test extras) and what each locked wheel's RECORD says
//! (`*.records`, `src/provision/wheel_records.rs`): a distribution whose name
//! and version the lock does not hold, or whose installed RECORD's
//! normalised rows are not its locked wheel's, fails; so does any
//! `*.egg-info` (a distribution `importlib.metadata` reads, entry points
//! and all, with no RECORD to verify). The SDK's own dist-info is judged by
//! `record-rows` and `record-provenance`.
//!
//! A user-supplied `--python` gets the same rule. Distributions the profile
//! names in `sdk.extra_distributions` are reported, a warning, never a pass.

use super::normalize_version;
use crate::evidence::Check;
use crate::provision::builtin;
use crate::provision::lock_list::normalize_name;
use crate::provision::wheel_records::{self, digest, normalised_rows, RecordSide, WheelRecord};
use serde::Serialize;
use serde_json::json;
use std::path::{Path, PathBuf};

/// How one installed distribution stands against the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockedStatus {
    /// A locked wheel, installed as published.
    Locked,
    /// Locked name and version, but the RECORD is not the wheel's.
    Differs,
    /// Not in the lock (name, or version).
    NotLocked,
    /// Not in the lock, named by the profile's `sdk.extra_distributions`.
    AllowedExtra,
    /// An `*.egg-info`: metadata without a RECORD.
    EggInfo,
    /// Its RECORD could not be read or parsed.
    Unreadable,
    /// The SDK's own dist-info (judged by `record-rows`).
    Sdk,
}

/// One distribution found in a site directory.
#[derive(Debug, Clone, Serialize)]
pub struct LockedDistribution {
    /// The dist-info (or egg-info) path.
    pub path: String,
    /// The name as the folder gives it.
    pub name: String,
    /// The version as the folder gives it.
    pub version: String,
    /// How it stands.
    pub status: LockedStatus,
    /// The lock (or records file) that holds it, when one does.
    pub lock: Option<String>,
    /// What the lock expects: `rows=N record=SHA256 (wheel FILE)`, or the
    /// locked version.
    pub expected: Option<String>,
    /// What was found: `rows=N record=SHA256`, or why unreadable.
    pub found: Option<String>,
}

/// What the check judges.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LockedObservation {
    /// The records files the distributions were compared with.
    pub anchors: Vec<String>,
    /// Why there is no anchor (no lock carried for the profile's pin).
    pub error: Option<String>,
    /// The profile's `sdk.extra_distributions`, normalised.
    pub extras_allowed: Vec<String>,
    /// Every distribution of every site directory, in order.
    pub distributions: Vec<LockedDistribution>,
}

/// The anchors for SDK pin `requirement`: `(records label, records)` of the
/// SDK's lock and of the test extras.
///
/// # Errors
/// When the verifier carries no lock for the pin, or a records file does
/// not parse (a build defect).
pub fn anchors(requirement: &str) -> Result<Vec<(String, Vec<WheelRecord>)>, String> {
    let sdk = crate::provision::on_demand::files_for(requirement).ok_or_else(|| {
        format!(
            "sdk.requirement {requirement:?}: expected a pin this verifier carries a lock list for ({}) \
             or has locked on demand, found none, so no installed distribution can be compared with a \
             locked wheel",
            builtin::carried()
        )
    })?;
    let extras = builtin::TEST_EXTRAS;
    Ok(vec![
        (
            sdk.records_label.clone(),
            wheel_records::parse(&sdk.wheel_records, &sdk.records_label)?,
        ),
        (
            extras.records_label.to_string(),
            wheel_records::parse(extras.wheel_records, extras.records_label)?,
        ),
    ])
}

/// Compares every `*.dist-info` and `*.egg-info` in `site_dirs` with
/// `anchors`; `sdk_dist_info` (a folder name) is left to the SDK checks,
/// `extras` (profile names) are allowed as warnings.
pub fn observe_locked(
    site_dirs: &[PathBuf],
    anchors: Result<Vec<(String, Vec<WheelRecord>)>, String>,
    sdk_dist_info: Option<&str>,
    extras: &[String],
) -> LockedObservation {
    let mut obs = LockedObservation {
        extras_allowed: extras.iter().map(|e| normalize_name(e)).collect(),
        ..Default::default()
    };
    let anchors = match anchors {
        Ok(a) => a,
        Err(e) => {
            obs.error = Some(e);
            return obs;
        }
    };
    obs.anchors = anchors.iter().map(|(l, _)| l.clone()).collect();
    for site_dir in site_dirs {
        let mut names: Vec<String> = std::fs::read_dir(site_dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".dist-info") || n.ends_with(".egg-info"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        for folder in names {
            obs.distributions.push(judge(
                site_dir,
                &folder,
                &anchors,
                sdk_dist_info,
                &obs.extras_allowed,
            ));
        }
    }
    obs
}

/// The distribution installed as `folder` in `site_dir`, judged against the
/// locks (`anchors`): the SDK's own, an egg-info, not locked (or an allowed
/// extra), or its RECORD compared with the locked wheel's.
fn judge(
    site_dir: &Path,
    folder: &str,
    anchors: &[(String, Vec<WheelRecord>)],
    sdk_dist_info: Option<&str>,
    extras: &[String],
) -> LockedDistribution {
    let path = site_dir.join(folder);
    let stem = folder
        .strip_suffix(".dist-info")
        .or_else(|| folder.strip_suffix(".egg-info"))
        .unwrap_or(folder);
    // egg-info names may carry `-pyX.Y`; the first two fields are name and version.
    let mut parts = stem.splitn(3, '-');
    let name = parts.next().unwrap_or_default().to_string();
    let version = parts.next().unwrap_or_default().to_string();
    let mut out = LockedDistribution {
        path: path.display().to_string(),
        name: name.clone(),
        version: version.clone(),
        status: LockedStatus::NotLocked,
        lock: None,
        expected: None,
        found: None,
    };
    if folder.ends_with(".egg-info") {
        out.status = LockedStatus::EggInfo;
        out.expected = Some("only *.dist-info installed from locked wheels".into());
        out.found = Some("an egg-info, which importlib.metadata reads as a distribution (its entry points included) and no RECORD verifies".into());
        return out;
    }
    if sdk_dist_info == Some(folder) {
        out.status = LockedStatus::Sdk;
        return out;
    }
    let key = normalize_name(&name);
    let same_name: Vec<(&String, &WheelRecord)> = anchors
        .iter()
        .flat_map(|(label, records)| records.iter().map(move |r| (label, r)))
        .filter(|(_, r)| r.key() == key)
        .collect();
    let Some((label, locked)) = same_name
        .iter()
        .find(|(_, r)| normalize_version(&r.version) == normalize_version(&version))
    else {
        out.expected = Some(match same_name.first() {
            Some((label, r)) => format!("{}=={} ({label})", r.name, r.version),
            None => "a distribution the lock names".to_string(),
        });
        out.found = Some(format!("{name} {version}"));
        if extras.contains(&key) {
            out.status = LockedStatus::AllowedExtra;
        }
        return out;
    };
    out.lock = Some((*label).clone());
    out.expected = Some(format!(
        "rows={} record={} (wheel {})",
        locked.rows, locked.digest, locked.wheel
    ));
    compare_record(&path, folder, locked, &mut out);
    out
}

/// Compares the installed RECORD of the dist-info `folder` (at `path`) with
/// its `locked` wheel's normalised rows, setting `out`'s status (locked,
/// differs, unreadable) and what was found.
fn compare_record(path: &Path, folder: &str, locked: &WheelRecord, out: &mut LockedDistribution) {
    let record = path.join("RECORD");
    let rows = std::fs::read_to_string(&record)
        .map_err(|e| format!("{}: unreadable ({e})", record.display()))
        .and_then(|text| {
            normalised_rows(&text, folder, RecordSide::Installed)
                .map_err(|e| format!("{}: {e}", record.display()))
        });
    match rows {
        Err(e) => {
            out.status = LockedStatus::Unreadable;
            out.found = Some(e);
        }
        Ok(rows) => {
            let found = digest(&rows);
            out.status = if found == locked.digest && rows.len() == locked.rows {
                LockedStatus::Locked
            } else {
                LockedStatus::Differs
            };
            out.found = Some(format!("rows={} record={found}", rows.len()));
        }
    }
}

/// One distribution as the check names it: `PATH (NAME VERSION): WHAT:
/// expected .., found ..`.
fn distribution_line(d: &LockedDistribution, what: &str) -> String {
    format!(
        "{} ({} {}): {what}: expected {}, found {}",
        d.path,
        d.name,
        d.version,
        d.expected.as_deref().unwrap_or("?"),
        d.found.as_deref().unwrap_or("?")
    )
}

/// Each distribution that is not a locked wheel as published, named with
/// why.
fn failing_lines(obs: &LockedObservation) -> Vec<String> {
    let line = distribution_line;
    obs.distributions
        .iter()
        .filter_map(|d| match d.status {
            LockedStatus::NotLocked => Some(line(d, "not in the lock")),
            LockedStatus::Differs => Some(line(
                d,
                "its RECORD is not its locked wheel's (normalised rows)",
            )),
            LockedStatus::EggInfo => Some(line(d, "not a locked wheel")),
            LockedStatus::Unreadable => Some(line(d, "its RECORD cannot be compared")),
            _ => None,
        })
        .collect()
}

/// `environment-locked`'s passing detail: how many distributions are
/// locked wheels (`locked`), per lock.
fn all_locked_detail(obs: &LockedObservation, locked: usize) -> String {
    let per_anchor: Vec<String> = obs
        .anchors
        .iter()
        .map(|a| {
            let n = obs
                .distributions
                .iter()
                .filter(|d| d.lock.as_deref() == Some(a.as_str()))
                .count();
            format!("{n} of {a}")
        })
        .collect();
    format!(
        "every distribution in the site directories is a locked wheel whose installed RECORD holds exactly \
         the wheel's rows (pip's INSTALLER, REQUESTED, direct_url.json, bytecode and launchers aside): {} \
         ({}){}",
        locked,
        per_anchor.join(", "),
        if obs.distributions.iter().any(|d| d.status == LockedStatus::Sdk) {
            "; the SDK's own dist-info is judged by record-rows"
        } else {
            ""
        }
    )
}

/// The `environment-locked` check of `obs`.
pub fn locked_check(obs: &LockedObservation) -> Check {
    const NAME: &str = "environment-locked";
    let observed = json!(obs);
    // What to do comes first: the usual cause is a venv made by hand
    // (`python3 -m venv` + `pip install langbot-plugin==...`), whose pip
    // resolved newer dependencies than the lock and added setuptools.
    let first = "drop --python (and PYTHON): the verifier provisions the pinned interpreter itself; to keep \
                 an interpreter of your own, make it of exactly the lock with `verify-coding-candidates sdk \
                 --venv PATH` and pass PATH/bin/python";
    let remedy = "for each distribution above: remove it (`python -m pip uninstall NAME`), or reinstall the \
                  locked wheel (`verify-coding-candidates sdk --venv PATH` makes a new environment of exactly the \
                  lock); a distribution you need beside the SDK can be named in the profile's \
                  `sdk.extra_distributions`, which makes it a warning";
    if let Some(e) = &obs.error {
        return Check::fail(
            NAME,
            None,
            format!(
                "{first}\n{e}; expected every installed distribution to be a locked wheel: {remedy}"
            ),
        )
        .with_observed(observed);
    }
    let line = distribution_line;
    let failing = failing_lines(obs);
    let anchors = obs.anchors.join(" and ");
    let locked = obs
        .distributions
        .iter()
        .filter(|d| d.status == LockedStatus::Locked)
        .count();
    if !failing.is_empty() {
        return Check::fail(
            NAME,
            None,
            format!(
                "{first}\n{} of {} distributions in the site directories are not wheels of the verifier's lock \
                 ({anchors}) as published; each can run code in every interpreter start or pytest run (a .pth \
                 file, an entry point such as a pytest11 plugin):\n  {}\n{remedy}",
                failing.len(),
                obs.distributions.len(),
                failing.join("\n  ")
            ),
        )
        .with_observed(observed);
    }
    let extras: Vec<String> = obs
        .distributions
        .iter()
        .filter(|d| d.status == LockedStatus::AllowedExtra)
        .map(|d| line(d, "not in the lock, named by sdk.extra_distributions"))
        .collect();
    if !extras.is_empty() {
        return Check::warn(
            NAME,
            None,
            format!(
                "{locked} distributions are locked wheels as published ({anchors}); {} are not in the lock and \
                 the profile's sdk.extra_distributions names them (their RECORDs are verified against their \
                 files by environment-records, not against any published wheel):\n  {}",
                extras.len(),
                extras.join("\n  ")
            ),
        )
        .with_observed(observed);
    }
    Check::pass(NAME, None, all_locked_detail(obs, locked)).with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    const RECORD: &str = "demo/__init__.py,sha256=AAAA,10\n\
demo-1.0.dist-info/METADATA,sha256=BBBB,20\n\
demo-1.0.dist-info/INSTALLER,sha256=IIII,4\n\
demo-1.0.dist-info/RECORD,,\n";

    fn anchor() -> Vec<(String, Vec<WheelRecord>)> {
        let rows = normalised_rows(RECORD, "demo-1.0.dist-info", RecordSide::Installed).unwrap();
        vec![(
            "x.records".to_string(),
            vec![WheelRecord {
                name: "Demo".into(),
                version: "1.0".into(),
                wheel_sha256: "ab".repeat(32),
                rows: rows.len(),
                digest: digest(&rows),
                wheel: "demo-1.0-py3-none-any.whl".into(),
            }],
        )]
    }

    fn site(dists: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (folder, record) in dists {
            std::fs::create_dir(dir.path().join(folder)).unwrap();
            std::fs::write(dir.path().join(folder).join("RECORD"), record).unwrap();
        }
        dir
    }

    fn judge_site(dir: &tempfile::TempDir, extras: &[String]) -> Check {
        let obs = observe_locked(
            &[dir.path().to_path_buf()],
            Ok(anchor()),
            Some("langbot_plugin-0.6.0b5.dist-info"),
            extras,
        );
        locked_check(&obs)
    }

    #[test]
    fn a_locked_wheel_installed_as_published_passes_and_the_sdk_is_left_to_record_rows() {
        let dir = site(&[
            ("demo-1.0.dist-info", RECORD),
            ("langbot_plugin-0.6.0b5.dist-info", "anything,,\n"),
        ]);
        let c = judge_site(&dir, &[]);
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
        assert!(c.detail.contains("1 (1 of x.records)"), "{}", c.detail);
        assert!(c.detail.contains("judged by record-rows"), "{}", c.detail);
    }

    #[test]
    fn an_unlocked_name_an_unlocked_version_a_changed_record_and_an_egg_info_fail_named() {
        let changed = RECORD.replace("AAAA,10", "EVIL,11");
        let dir = site(&[
            ("demo-1.0.dist-info", &changed),
            ("other-2.0.dist-info", "other/x.py,sha256=X,1\n"),
            ("evil-1.0.egg-info", ""),
        ]);
        let other_version = tempfile::tempdir().unwrap();
        std::fs::create_dir(other_version.path().join("demo-1.1.dist-info")).unwrap();
        let obs = observe_locked(
            &[dir.path().to_path_buf(), other_version.path().to_path_buf()],
            Ok(anchor()),
            None,
            &[],
        );
        let c = locked_check(&obs);
        assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
        let d = &c.detail;
        let at = |f: &str| dir.path().join(f).display().to_string();
        assert!(
            d.starts_with(
                "drop --python (and PYTHON): the verifier provisions the pinned interpreter itself;"
            ),
            "{d}"
        );
        assert!(
            d.lines()
                .nth(1)
                .unwrap()
                .starts_with("4 of 4 distributions"),
            "{d}"
        );
        assert!(
            d.contains(&format!(
                "{} (demo 1.0): its RECORD is not its locked wheel's (normalised rows): expected rows=2 record=",
                at("demo-1.0.dist-info")
            )) && d.contains("(wheel demo-1.0-py3-none-any.whl), found rows=2 record="),
            "{d}"
        );
        assert!(
            d.contains(&format!(
                "{} (other 2.0): not in the lock: expected a distribution the lock names, found other 2.0",
                at("other-2.0.dist-info")
            )),
            "{d}"
        );
        assert!(
            d.contains(&format!(
                "{} (evil 1.0): not a locked wheel",
                at("evil-1.0.egg-info")
            )),
            "{d}"
        );
        assert!(
            d.contains(
                "(demo 1.1): not in the lock: expected Demo==1.0 (x.records), found demo 1.1"
            ),
            "{d}"
        );
        assert!(
            d.contains("`verify-coding-candidates sdk --venv PATH`"),
            "{d}"
        );
    }

    #[test]
    fn a_named_extra_is_a_warning_never_a_pass_and_other_failures_still_fail() {
        let dir = site(&[
            ("demo-1.0.dist-info", RECORD),
            ("other_tool-2.0.dist-info", "x,,\n"),
        ]);
        let c = judge_site(&dir, &["Other-Tool".to_string()]);
        assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
        assert!(
            c.detail
                .contains("(other_tool 2.0): not in the lock, named by sdk.extra_distributions"),
            "{}",
            c.detail
        );
        std::fs::create_dir(dir.path().join("third-3.0.dist-info")).unwrap();
        let c = judge_site(&dir, &["other-tool".to_string()]);
        assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
        assert!(
            c.detail.lines().nth(1).unwrap().starts_with("1 of 3"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn a_pin_without_a_carried_lock_fails_naming_it() {
        let err = anchors("langbot-plugin==9.9").unwrap_err();
        let obs = observe_locked(&[], Err(err), None, &[]);
        let c = locked_check(&obs);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains("\"langbot-plugin==9.9\"")
                && c.detail.contains("langbot-plugin==0.6.0b5"),
            "{}",
            c.detail
        );
        let ok = anchors("langbot-plugin==0.6.0b5").unwrap();
        assert_eq!(ok.len(), 2);
        assert!(ok[0].1.len() > 50 && ok[1].1.len() == 3);
    }
}
