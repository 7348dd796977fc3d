//! Is a provisioned environment still what was installed? Checked before a
//! cached environment is reused and after a new one is built; a `false` is
//! never repaired in place: the environment is rebuilt.
//!
//! The environment must hold exactly the lock list's distributions at their
//! locked versions, every file of every distribution must match its RECORD
//! row (sha256 and size; `src/record.rs` reads and verifies
//! RECORD), site-packages must hold no file that no RECORD lists (outside
//! `__pycache__`), every installed RECORD must hold exactly its locked
//! wheel's RECORD rows (`wheel_records.rs`, for every wheel whose records
//! the verifier carries), the stamp must name this lock list, and its
//! interpreter must start and be the locked CPython.

use super::lock_list::{normalize_name, LockList};
use crate::record::{normalize_version, parse_record, unlisted_files, verify_rows, RecordLayout};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The file, inside the environment, holding [`LockList::canonical`] of the
/// lock list it was built from; written last before the environment is
/// moved into place.
pub const STAMP: &str = "vcc-sdk-lock.txt";

/// What a sound environment holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sound {
    /// Distributions checked.
    pub distributions: usize,
    /// Files whose sha256 and size matched their RECORD row.
    pub files_verified: u64,
}

/// `venv/lib/python3.NN/site-packages` for lock tag `cp3NN`.
pub fn site_packages(venv: &Path, python_tag: &str) -> PathBuf {
    let minor = python_tag.trim_start_matches("cp3");
    venv.join("lib")
        .join(format!("python3.{minor}"))
        .join("site-packages")
}

/// `(normalised name, version)` of every `*.dist-info` folder in `site`.
///
/// # Errors
/// A sentence when `site` cannot be listed or a folder name has no version.
pub fn installed(site: &Path) -> Result<BTreeMap<String, (String, PathBuf)>, String> {
    let mut out = BTreeMap::new();
    let entries =
        std::fs::read_dir(site).map_err(|e| format!("cannot list {}: {e}", site.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", site.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".dist-info") else {
            continue;
        };
        let Some((dist, version)) = stem.rsplit_once('-') else {
            return Err(format!(
                "{}: expected NAME-VERSION.dist-info, found no version",
                entry.path().display()
            ));
        };
        out.insert(
            normalize_name(dist),
            (normalize_version(version), entry.path()),
        );
    }
    Ok(out)
}

/// Checks environment `venv` against `lock` (see the module docs).
///
/// # Errors
/// The first reason the environment is not sound, as one sentence naming
/// the file and what was expected and found.
pub fn check(venv: &Path, lock: &LockList) -> Result<Sound, String> {
    let stamp = venv.join(STAMP);
    match std::fs::read_to_string(&stamp) {
        Ok(text) if text == lock.canonical() => {}
        Ok(_) => {
            return Err(format!(
                "{}: names another lock list than {} (key {})",
                stamp.display(),
                lock.label,
                lock.key()
            ))
        }
        Err(e) => {
            return Err(format!(
                "{}: expected the stamp of a finished installation, found none ({e})",
                stamp.display()
            ))
        }
    }
    let sound = check_files(venv, lock)?;
    check_interpreter(venv, lock)
        .map_err(|e| format!("{}: {e}", venv.join("bin/python").display()))?;
    Ok(sound)
}

/// The installed distributions (`dists`, in `site`) are exactly the
/// locked ones, each at its locked version.
fn check_locked_set(
    site: &Path,
    dists: &BTreeMap<String, (String, PathBuf)>,
    lock: &LockList,
) -> Result<(), String> {
    for entry in &lock.entries {
        match dists.get(&entry.key()) {
            None => {
                return Err(format!(
                    "{}: expected {}=={} installed, found no {} dist-info",
                    site.display(),
                    entry.name,
                    entry.version,
                    entry.key()
                ))
            }
            Some((version, _)) if *version != normalize_version(&entry.version) => {
                return Err(format!(
                    "{}: expected {}=={}, found version {version}",
                    site.display(),
                    entry.name,
                    entry.version
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = dists.keys().find(|k| lock.find(k).is_none()) {
        return Err(format!(
            "{}: holds {extra}, which {} does not lock; expected exactly the locked distributions",
            site.display(),
            lock.label
        ));
    }
    Ok(())
}

/// The distribution set and every RECORD (no interpreter started).
fn check_files(venv: &Path, lock: &LockList) -> Result<Sound, String> {
    let site = site_packages(venv, &lock.python_tag);
    let dists = installed(&site)?;
    check_locked_set(&site, &dists, lock)?;
    let mut listed = BTreeSet::new();
    let mut files_verified = 0;
    let carried = super::on_demand::all_records();
    for (key, (_, dist_info)) in &dists {
        let dist_info_name = dist_info
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(entry) = lock.find(key) {
            super::wheel_records::check_installed(dist_info, &dist_info_name, entry, &carried)?;
        }
        let record_path = dist_info.join("RECORD");
        let file = std::fs::File::open(&record_path).map_err(|e| {
            format!(
                "{}: expected the distribution's RECORD, found none ({e})",
                record_path.display()
            )
        })?;
        let parsed = parse_record(std::io::BufReader::new(file), &dist_info_name);
        if let Some(bad) = parsed.malformed.first() {
            return Err(format!("{}: {bad}", record_path.display()));
        }
        let scripts: Vec<String> = parsed
            .rows
            .iter()
            .filter_map(|r| r.path.strip_prefix("../../../bin/"))
            .filter(|n| !n.contains('/'))
            .map(str::to_string)
            .collect();
        let layout = RecordLayout {
            site_packages: site.clone(),
            scripts_dir: Some(venv.join("bin")),
            console_scripts: scripts,
        };
        let report = verify_rows(&layout, &parsed.rows);
        if let Some(bad) = report
            .mismatches
            .first()
            .or(report.missing.first())
            .or(report.escaping.first())
        {
            return Err(format!("{}: {bad}", record_path.display()));
        }
        files_verified += report.hashed_verified;
        listed.extend(report.listed);
    }
    let walk = unlisted_files(std::slice::from_ref(&site), &listed);
    if let Some(extra) = walk.unlisted.first() {
        return Err(format!(
            "{extra}: a file no RECORD of {} lists; expected only the installed distributions' files",
            site.display()
        ));
    }
    Ok(Sound {
        distributions: dists.len(),
        files_verified,
    })
}

/// Starts `venv/bin/python` and compares its cache tag with the lock's.
/// With `-I -S`: `site` does not run, so no `.pth` file or
/// `sitecustomize` of the environment executes in this start either (the
/// file checks before it would name a planted one; this start must not
/// run it first).
fn check_interpreter(venv: &Path, lock: &LockList) -> Result<(), String> {
    let python = venv.join("bin").join("python");
    let out = super::clean_python_env(&mut Command::new(&python))
        .args([
            "-I",
            "-S",
            "-B",
            "-c",
            "import sys; print(sys.implementation.cache_tag)",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("expected a runnable interpreter, cannot start it ({e})"))?;
    if !out.status.success() {
        return Err(format!(
            "expected a runnable interpreter, it exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let tag = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let expected = format!("cpython-{}", lock.python_tag.trim_start_matches("cp"));
    if tag != expected {
        return Err(format!(
            "expected {expected} (the lock's {}), found {tag}",
            lock.python_tag
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use sha2::Digest as _;

    fn lock() -> LockList {
        super::super::lock_list::parse(
            &format!(
                "# python: cp311\n# platform: linux x86_64\n\
                 demo==1.0 --hash=sha256:{}  # demo-1.0-py3-none-any.whl\n",
                "a".repeat(64)
            ),
            "t.lock",
        )
        .unwrap()
    }

    fn row(path: &str, bytes: &[u8]) -> String {
        let d = sha2::Sha256::digest(bytes);
        format!(
            "{path},sha256={},{}\n",
            URL_SAFE_NO_PAD.encode(d),
            bytes.len()
        )
    }

    /// A fake environment with one distribution `demo` (no interpreter: the
    /// file checks only).
    fn fake_env() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let site = site_packages(dir.path(), "cp311");
        std::fs::create_dir_all(site.join("demo")).unwrap();
        std::fs::create_dir_all(site.join("demo-1.0.dist-info")).unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(site.join("demo/__init__.py"), b"x = 1\n").unwrap();
        std::fs::write(dir.path().join("bin/demo"), b"#!python\n").unwrap();
        let record = format!(
            "{}{}demo-1.0.dist-info/RECORD,,\n",
            row("demo/__init__.py", b"x = 1\n"),
            row("../../../bin/demo", b"#!python\n")
        );
        std::fs::write(site.join("demo-1.0.dist-info/RECORD"), record).unwrap();
        std::fs::write(dir.path().join(STAMP), lock().canonical()).unwrap();
        dir
    }

    #[test]
    fn a_sound_environment_passes_the_file_checks() {
        let env = fake_env();
        let sound = check_files(env.path(), &lock()).unwrap();
        assert_eq!(sound.distributions, 1);
        assert_eq!(sound.files_verified, 2);
    }

    #[test]
    fn a_changed_installed_file_is_damage() {
        let env = fake_env();
        let site = site_packages(env.path(), "cp311");
        std::fs::write(site.join("demo/__init__.py"), b"x = 2\n").unwrap();
        let err = check_files(env.path(), &lock()).unwrap_err();
        assert!(
            err.contains("demo/__init__.py") && err.contains("digest differs"),
            "{err}"
        );
    }

    #[test]
    fn a_changed_script_a_missing_file_and_a_planted_file_are_damage() {
        let env = fake_env();
        std::fs::write(env.path().join("bin/demo"), b"#!evil\n").unwrap();
        assert!(check_files(env.path(), &lock())
            .unwrap_err()
            .contains("bin/demo"));
        let env = fake_env();
        let site = site_packages(env.path(), "cp311");
        std::fs::remove_file(site.join("demo/__init__.py")).unwrap();
        assert!(check_files(env.path(), &lock())
            .unwrap_err()
            .contains("found none"));
        let env = fake_env();
        let site = site_packages(env.path(), "cp311");
        std::fs::write(site.join("evil.pth"), b"import os\n").unwrap();
        let err = check_files(env.path(), &lock()).unwrap_err();
        assert!(
            err.contains("evil.pth") && err.contains("no RECORD"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_extra_or_other_version_distribution_is_damage() {
        let env = fake_env();
        let site = site_packages(env.path(), "cp311");
        std::fs::rename(
            site.join("demo-1.0.dist-info"),
            site.join("demo-1.1.dist-info"),
        )
        .unwrap();
        assert!(check_files(env.path(), &lock())
            .unwrap_err()
            .contains("expected demo==1.0, found version 1.1"));
        let env = fake_env();
        let site = site_packages(env.path(), "cp311");
        std::fs::create_dir_all(site.join("other-2.dist-info")).unwrap();
        assert!(check_files(env.path(), &lock())
            .unwrap_err()
            .contains("holds other"));
    }

    #[test]
    fn a_missing_or_foreign_stamp_is_not_sound() {
        let env = fake_env();
        std::fs::write(env.path().join(STAMP), "python cp312\n").unwrap();
        assert!(check(env.path(), &lock())
            .unwrap_err()
            .contains("another lock list"));
        std::fs::remove_file(env.path().join(STAMP)).unwrap();
        assert!(check(env.path(), &lock())
            .unwrap_err()
            .contains("finished installation"));
    }
}
