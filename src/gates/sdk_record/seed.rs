//! Seeding the run's bytecode cache (`DIR/roots/pycache`) with the bytecode
//! files `sdk-record` has just verified.
//!
//! Every later Python step reads bytecode only from `DIR/roots/pycache`
//! (`-X pycache_prefix`, `src/python/mod.rs`), which starts empty: without a
//! seed, each step that imports the SDK compiles it from source again (about
//! 1.5 s of CPU for `lbp build`, three at once), and the sandboxed suites
//! runs, which may not write there, compile pytest in memory on every start.
//!
//! Once the gate has passed, each bytecode file of the environment that the
//! probes found equal to this interpreter's compilation of its verified
//! source (code objects equal, recursively; optimisation level 0, the only
//! level the steps run at) is put where `pycache_prefix` looks for it:
//! `<prefix>/<the source's folder without its leading />/<name>`. So is the
//! standard library's bytecode that the site probe found equal to the
//! compilation of its source, as soon as the site probe has answered
//! ([`seed_stdlib`], listed in `logs/sdk-record/pycache-seed-stdlib.txt`;
//! `stdlib_bytecode`; the standard library is the
//! base interpreter's and not judged, but a file equal to the compilation of
//! its source loads exactly as the source would compile, and without it each
//! Python step compiled the standard library modules it imports that no step
//! before it had written, about 0.7 s for `lbp build`'s, and the read-only
//! sandboxed steps did so on every start). A seeded file is a copy of the
//! compared one, never a hard link (a step that can write to the run's
//! cache must not reach the verified interpreter's files through it); its
//! bytes are read once and hashed, and it is written only when their
//! SHA-256 is the one the probe compared; a file changed since is left out (the step then
//! compiles its source, as without a seed). A destination that exists
//! already is re-verified, never kept for being there: the same bytes are
//! left, other bytes are replaced by the verified ones and listed. Python
//! still checks each seeded file's header against its source (mtime and
//! size) and ignores a stale one.
//!
//! What was seeded is listed in `logs/sdk-record/pycache-seed.txt`, one line
//! per file: `SHA256  <bytecode file>  ->  <seeded path>`.

use super::environment::SiteProbe;
use super::{BytecodeFile, BytecodeOutcome, Observation};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// What the seed did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SeedReport {
    /// Files copied into the run's bytecode cache.
    pub seeded: usize,
    /// Verified files left out because their bytes changed since the probe
    /// hashed them, or could not be read or written (`path: why`).
    pub left_out: Vec<String>,
    /// Destinations that existed with other bytes than the verified file's
    /// and were replaced by them (`path: found sha256 X, expected Y`).
    pub replaced: Vec<String>,
}

/// What seeding one file did.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seeded {
    /// Copied to a destination that did not exist.
    Copied,
    /// The destination existed with the verified bytes already.
    AlreadyVerified,
    /// The destination existed with other bytes (their SHA-256); it now
    /// holds the verified ones.
    Replaced(String),
}

/// The bytecode files of `obs` that may be seeded, as (bytecode file,
/// source), absolute: found equal to the compilation of their source, at
/// optimisation level 0, with both digests known.
pub(crate) fn verified_files(obs: &Observation) -> Vec<(PathBuf, PathBuf, String)> {
    let mut out = Vec::new();
    let mut take = |site_dir: &Path, file: &BytecodeFile| {
        if file.outcome != BytecodeOutcome::Equal || file.optimize != Some(0) {
            return;
        }
        let (Some(source), Some(sha)) = (file.source.as_deref(), file.pyc_sha256.as_deref()) else {
            return;
        };
        out.push((
            site_dir.join(&file.path),
            site_dir.join(source),
            sha.to_string(),
        ));
    };
    if let Some(record) = &obs.record {
        for file in record.bytecode.iter().flat_map(|b| b.files.iter()) {
            take(Path::new(&record.site_packages), file);
        }
    }
    let site = obs
        .environment
        .as_ref()
        .and_then(|e| e.probe.as_ref())
        .map(|p| p.bytecode.as_slice())
        .unwrap_or_default();
    for dir in site {
        for file in &dir.files {
            take(Path::new(&dir.site_dir), file);
        }
    }
    out
}

/// The standard library's bytecode files the site probe found equal to the
/// compilation of their sources, at optimisation level 0, as (bytecode
/// file, source, SHA-256 compared), absolute.
pub(crate) fn stdlib_files(site: &SiteProbe) -> Vec<(PathBuf, PathBuf, String)> {
    let Some(stdlib) = &site.stdlib_bytecode else {
        return Vec::new();
    };
    let root = Path::new(&stdlib.site_dir);
    stdlib
        .files
        .iter()
        .filter(|f| f.outcome == BytecodeOutcome::Equal && f.optimize == Some(0))
        .filter_map(|f| {
            let (source, sha) = (f.source.as_deref()?, f.pyc_sha256.as_deref()?);
            Some((root.join(&f.path), root.join(source), sha.to_string()))
        })
        .collect()
}

/// Where `pycache_prefix` looks for the bytecode of `source` named
/// `pyc_name`: `<prefix>/<source's folder, root removed>/<pyc_name>`
/// (CPython's `importlib.util.cache_from_source`). `None` for a relative
/// source or one whose folder climbs (`..`).
pub(crate) fn prefixed_path(prefix: &Path, source: &Path, pyc_name: &str) -> Option<PathBuf> {
    let folder = source.parent()?;
    if !folder.is_absolute() {
        return None;
    }
    let mut out = prefix.to_path_buf();
    for part in folder.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::RootDir => {}
            _ => return None,
        }
    }
    out.push(pyc_name);
    Some(out)
}

/// Puts every file of [`verified_files`] into `prefix` and writes the list
/// to `log`. Never fails the gate: a file it cannot seed is compiled by the
/// step that needs it, as without a seed.
pub(crate) fn seed(obs: &Observation, prefix: &Path, log: &Path, width: usize) -> SeedReport {
    seed_files(verified_files(obs), prefix, log, width)
}

/// Puts every file of [`stdlib_files`] into `prefix` and writes the list to
/// `log`, as soon as the site probe has answered, whatever the gate's
/// verdict (the standard library is not judged; a file equal to the
/// compilation of its source loads exactly as that source compiles): the
/// gate's own later probes then do not compile the standard library either.
pub(crate) fn seed_stdlib(site: &SiteProbe, prefix: &Path, log: &Path, width: usize) -> SeedReport {
    seed_files(stdlib_files(site), prefix, log, width)
}

/// Seeds `files` (bytecode file, source, SHA-256) and lists them in `log`:
/// `SHA256  <bytecode file>  ->  <seeded path>` per file, then `already
/// cached, verified: <path>` for each destination that existed with the
/// verified bytes, `replaced: <path>: found sha256 X, expected Y` for each
/// one that existed with other bytes (re-verified, never kept as it was),
/// then `left out: <file>: why`.
///
/// The files are copied `width` at a time (the run's width: the seed is on
/// the way of every later gate, the suites' first run among them, and the
/// copies are many small files); the list keeps their order.
fn seed_files(
    files: Vec<(PathBuf, PathBuf, String)>,
    prefix: &Path,
    log: &Path,
    width: usize,
) -> SeedReport {
    let mut report = SeedReport::default();
    let mut lines = String::new();
    let mut cached = Vec::new();
    let results = crate::parallel::map(
        &files,
        width,
        |(pyc, source, sha)| seed_one(pyc, source, sha, prefix),
        |(pyc, _, _)| {
            Some(Err(format!(
                "{}: the copy's thread panicked",
                pyc.display()
            )))
        },
    );
    for ((pyc, _, sha), result) in files.iter().zip(results) {
        let Some(result) = result else {
            continue;
        };
        match result {
            Ok((Seeded::Copied, dest)) => {
                report.seeded += 1;
                lines.push_str(&format!(
                    "{sha}  {}  ->  {}\n",
                    pyc.display(),
                    dest.display()
                ));
            }
            Ok((Seeded::AlreadyVerified, dest)) => cached.push(dest),
            Ok((Seeded::Replaced(found), dest)) => report.replaced.push(format!(
                "{}: found sha256 {found}, expected {sha} (the verified {})",
                dest.display(),
                pyc.display()
            )),
            Err(why) => report.left_out.push(why),
        }
    }
    for path in &cached {
        lines.push_str(&format!("already cached, verified: {}\n", path.display()));
    }
    for what in &report.replaced {
        lines.push_str(&format!("replaced: {what}\n"));
    }
    for why in &report.left_out {
        lines.push_str(&format!("left out: {why}\n"));
    }
    if let Ok(mut f) = std::fs::File::create(log) {
        let _ = f.write_all(lines.as_bytes());
    }
    report
}

/// Seeds one bytecode file `pyc` of `source`'s folder: what
/// [`copy_if_digest`] did and the destination, `Err` (`<file>: why`) when it
/// was left out; `None` for a file without a UTF-8 name (skipped).
fn seed_one(
    pyc: &Path,
    source: &Path,
    sha: &str,
    prefix: &Path,
) -> Option<Result<(Seeded, PathBuf), String>> {
    let name = pyc.file_name().and_then(|n| n.to_str())?;
    let Some(dest) = prefixed_path(prefix, source, name) else {
        return Some(Err(format!(
            "{}: not an absolute source folder",
            pyc.display()
        )));
    };
    Some(
        copy_if_digest(pyc, &dest, sha)
            .map(|seeded| (seeded, dest))
            .map_err(|why| format!("{}: {why}", pyc.display())),
    )
}

/// Puts a copy of `from` at `to` when its bytes' SHA-256 is `sha256` (hex).
/// An existing `to` is re-verified, never kept for being there: with the
/// same bytes it is left ([`Seeded::AlreadyVerified`]); with other bytes (or
/// when it is not a regular file) it is replaced by the verified ones,
/// through a new file renamed over it ([`Seeded::Replaced`]). Never a hard
/// link: steps that may run code the run does not vouch for (a dependency's
/// build backend) can write to the run's cache, and a write through a link
/// would change the verified interpreter's own file (or the system's
/// standard library) for every later run. The bytes are read once, hashed
/// and written.
fn copy_if_digest(from: &Path, to: &Path, sha256: &str) -> Result<Seeded, String> {
    let folder = to.parent().ok_or("no folder")?;
    std::fs::create_dir_all(folder)
        .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
    let bytes = std::fs::read(from).map_err(|e| format!("cannot read: {e}"))?;
    let found = crate::hash::sha256_bytes(&bytes);
    if !found.eq_ignore_ascii_case(sha256) {
        return Err(changed(sha256, &found));
    }
    let existing = match std::fs::symlink_metadata(to) {
        Ok(m) if m.is_file() => Some(
            std::fs::read(to)
                .map(|b| crate::hash::sha256_bytes(&b))
                .unwrap_or_else(|e| format!("unreadable ({e})")),
        ),
        Ok(m) => Some(format!("none: not a regular file ({:?})", m.file_type())),
        Err(_) => None,
    };
    if existing
        .as_deref()
        .is_some_and(|e| e.eq_ignore_ascii_case(sha256))
    {
        return Ok(Seeded::AlreadyVerified);
    }
    if existing.is_none() {
        // A new file, written in place: nothing reads the cache before
        // the gate ends (every Python step of a later gate needs it), and a
        // file that appeared meanwhile makes `create_new` fail, left out.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(to)
            .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
        if let Err(e) = std::io::Write::write_all(&mut file, &bytes) {
            // A torn file would stop the import that reads it: none is left.
            let _ = std::fs::remove_file(to);
            return Err(format!("cannot write {}: {e}", to.display()));
        }
        return Ok(Seeded::Copied);
    }
    let mut file = tempfile::NamedTempFile::new_in(folder)
        .map_err(|e| format!("cannot write in {}: {e}", folder.display()))?;
    std::io::Write::write_all(&mut file, &bytes)
        .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    file.persist(to)
        .map_err(|e| format!("cannot write {}: {}", to.display(), e.error))?;
    Ok(existing.map_or(Seeded::Copied, Seeded::Replaced))
}

fn changed(expected: &str, found: &str) -> String {
    format!("changed since the probe compared it (expected sha256 {expected}, found {found})")
}

#[cfg(test)]
mod tests {
    use super::super::environment::{EnvironmentObservation, SiteBytecode};
    use super::*;

    #[test]
    fn the_prefixed_path_is_the_source_folder_under_the_prefix() {
        assert_eq!(
            prefixed_path(
                Path::new("/ev/roots/pycache"),
                Path::new("/venv/lib/python3.11/site-packages/pkg/mod.py"),
                "mod.cpython-311.pyc"
            ),
            Some(PathBuf::from(
                "/ev/roots/pycache/venv/lib/python3.11/site-packages/pkg/mod.cpython-311.pyc"
            ))
        );
        assert_eq!(
            prefixed_path(Path::new("/p"), Path::new("rel/mod.py"), "m.pyc"),
            None
        );
        assert_eq!(
            prefixed_path(Path::new("/p"), Path::new("/a/../b/mod.py"), "m.pyc"),
            None
        );
    }

    fn file(path: &str, source: &str, optimize: u8, outcome: BytecodeOutcome) -> BytecodeFile {
        BytecodeFile {
            path: path.into(),
            source: Some(source.into()),
            optimize: Some(optimize),
            header: None,
            outcome,
            difference: None,
            source_sha256: Some("a".repeat(64)),
            pyc_sha256: Some("b".repeat(64)),
            cached: false,
        }
    }

    #[test]
    fn standard_library_bytecode_found_equal_at_level_0_is_seeded_and_no_other() {
        let site_probe: SiteProbe = serde_json::from_value(serde_json::json!({
            "executable": "/venv/bin/python", "prefix": "/venv", "base_prefix": "/usr",
            "python_version": "3.11.7", "cache_tag": "cpython-311", "magic": "a70d0d0a",
            "flags": {}, "enable_user_site": false, "scripts_dir": "/venv/bin",
            "site_dirs": [], "base_site_packages": [], "initial_path": [], "sys_path": [],
            "executed_pth_lines": [], "startup_calls": [], "bytecode": [],
        }))
        .expect("a site probe answer");
        let stdlib = SiteBytecode {
            site_dir: "/usr/lib/python3.11".into(),
            files: vec![
                file(
                    "json/__pycache__/__init__.cpython-311.pyc",
                    "json/__init__.py",
                    0,
                    BytecodeOutcome::Equal,
                ),
                file(
                    "json/__pycache__/decoder.cpython-311.pyc",
                    "json/decoder.py",
                    0,
                    BytecodeOutcome::Differs,
                ),
                file(
                    "json/__pycache__/encoder.cpython-311.opt-1.pyc",
                    "json/encoder.py",
                    1,
                    BytecodeOutcome::Equal,
                ),
            ],
        };
        let obs = Observation {
            python: "/venv/bin/python".into(),
            probe: serde_json::from_value(serde_json::json!({
                "executable": "/venv/bin/python", "python_version": "3.11.7",
                "console_scripts": [],
            }))
            .expect("an SDK probe answer"),
            expected_package_dir: None,
            package_dir_matches: false,
            record: None,
            environment: Some(EnvironmentObservation {
                probe: Some(SiteProbe {
                    stdlib_bytecode: Some(stdlib),
                    ..site_probe
                }),
                ..Default::default()
            }),
            locked: None,
            probe_sandbox: None,
        };
        assert!(verified_files(&obs).is_empty(), "the gate's own seed");
        let site = obs.environment.as_ref().unwrap().probe.as_ref().unwrap();
        assert_eq!(
            stdlib_files(site),
            vec![(
                PathBuf::from("/usr/lib/python3.11/json/__pycache__/__init__.cpython-311.pyc"),
                PathBuf::from("/usr/lib/python3.11/json/__init__.py"),
                "b".repeat(64)
            )]
        );
    }

    #[test]
    fn a_seeded_file_is_a_copy_so_a_write_through_it_never_reaches_the_verified_one() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("a.pyc");
        std::fs::write(&from, b"verified bytes").unwrap();
        let sha = crate::hash::sha256_bytes(b"verified bytes");
        let to = dir.path().join("seed/x/a.pyc");
        copy_if_digest(&from, &to, &sha).expect("seeded");
        let (a, b) = (from.metadata().unwrap(), to.metadata().unwrap());
        assert_ne!((a.dev(), a.ino()), (b.dev(), b.ino()), "not a link");
        // A step writing into the seeded file in place changes only the copy.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&to)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"poisoned"))
            .unwrap();
        assert_eq!(std::fs::read(&from).unwrap(), b"verified bytes");
    }

    /// A destination that exists with other bytes (planted by an earlier
    /// step, or by anything that could write the run's cache) is not kept
    /// as "already cached": the verified bytes replace it, and the log
    /// names it with both digests.
    #[test]
    fn an_existing_destination_with_other_bytes_is_replaced_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let pyc = dir.path().join("venv/sp/pkg/__pycache__/m.cpython-311.pyc");
        let source = dir.path().join("venv/sp/pkg/m.py");
        std::fs::create_dir_all(pyc.parent().unwrap()).unwrap();
        std::fs::write(&pyc, b"verified bytes").unwrap();
        let sha = crate::hash::sha256_bytes(b"verified bytes");
        let prefix = dir.path().join("roots/pycache");
        let dest = prefixed_path(&prefix, &source, "m.cpython-311.pyc").unwrap();
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, b"tampered bytes").unwrap();
        let planted = crate::hash::sha256_bytes(b"tampered bytes");
        let log = dir.path().join("seed.txt");

        let report = seed_files(
            vec![(pyc.clone(), source.clone(), sha.clone())],
            &prefix,
            &log,
            2,
        );
        assert_eq!(std::fs::read(&dest).unwrap(), b"verified bytes");
        assert_eq!(report.seeded, 0);
        assert_eq!(report.replaced.len(), 1, "{report:?}");
        assert!(
            report.replaced[0].contains(&planted) && report.replaced[0].contains(&sha),
            "{report:?}"
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.contains(&format!("replaced: {}", dest.display())),
            "{text}"
        );

        // Run again: the destination now holds the verified bytes.
        let report = seed_files(vec![(pyc, source, sha)], &prefix, &log, 2);
        assert!(report.replaced.is_empty() && report.left_out.is_empty());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("already cached, verified: "), "{text}");
    }

    #[test]
    fn only_bytes_with_the_compared_digest_are_copied() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("a.pyc");
        std::fs::write(&from, b"verified bytes").unwrap();
        let sha = crate::hash::sha256_bytes(b"verified bytes");
        let to = dir.path().join("seed/x/a.pyc");
        assert_eq!(copy_if_digest(&from, &to, &sha), Ok(Seeded::Copied));
        assert_eq!(std::fs::read(&to).unwrap(), b"verified bytes");
        assert_eq!(
            copy_if_digest(&from, &to, &sha),
            Ok(Seeded::AlreadyVerified)
        );

        std::fs::write(&from, b"changed bytes").unwrap();
        let other = dir.path().join("seed/x/b.pyc");
        let err = copy_if_digest(&from, &other, &sha).unwrap_err();
        assert!(err.contains("changed since") && err.contains(&sha), "{err}");
        assert!(!other.exists());
    }
}
