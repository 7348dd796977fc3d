//! The bytecode cache: pairs of a source and its bytecode that an earlier
//! run of the bytecode probes compiled and found equal with one interpreter
//! in one environment.
//!
//! Comparing a `.pyc` with its source means compiling the source, about
//! 2.5 ms of CPU a file: 7 s for the SDK's venv, on every run. The probes
//! (`src/python/bytecode_probe.py`, `site_probe.py`) take the cache's
//! directory and read `<dir>/<interpreter key>.pairs` there, one line per
//! pair, `OPT:SOURCE_SHA256:PYC_SHA256:PATH` (optimisation level, the
//! SHA-256 of the source's and the bytecode file's bytes, the bytecode
//! file's absolute path). The key is the SHA-256 of the interpreter's
//! identity (what `compile()` depends on: the executable, a shared
//! libpython, `sys.version`, the magic number) and the environment's prefix,
//! so a pair only ever stands for the same file compiled by the same
//! interpreter in the same environment. A file whose path and two digests
//! form a listed pair is reported `equal` with `cached: true`; every other
//! file is compiled and compared, and the gate adds the pairs found equal
//! now ([`add_pairs`]).
//!
//! Only the verifier writes the cache. The probes that compile run with
//! `-I -S` (nothing of the environment under review executes in them) in a
//! sandbox where the whole filesystem, this directory included, is
//! read-only (`crate::python::Probe::run_before_judgement`); they report
//! what they compiled on stdout, and the verifier writes the pairs found
//! equal now, to a file it names itself ([`pairs_file`]).
//!
//! The directory is `$XDG_CACHE_HOME/verify-coding-candidates/bytecode`
//! (else `$HOME/.cache/...`), beside the provisioned SDK interpreters, in
//! the same trust domain: code under review never writes there (its steps
//! run sandboxed with private homes). `VCC_BYTECODE_CACHE=off` compiles
//! every file on every run; `VCC_BYTECODE_CACHE=<absolute dir>` uses another
//! directory.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable that turns the cache off (`off`) or moves it.
pub const VARIABLE: &str = "VCC_BYTECODE_CACHE";

/// The cache directory for this process, created if missing; `None` when
/// turned off ([`VARIABLE`]`=off`), when no absolute `XDG_CACHE_HOME` or
/// `HOME` is set, or when it cannot be created (the probes then compile
/// every file, as without a cache).
pub fn dir() -> Option<PathBuf> {
    let dir = match std::env::var_os(VARIABLE) {
        Some(v) if v == "off" => return None,
        Some(v) if Path::new(&v).is_absolute() => PathBuf::from(v),
        _ => crate::provision::cache::sdk_root()
            .ok()?
            .parent()?
            .join("bytecode"),
    };
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// One pair's line: `OPT:SOURCE_SHA256:PYC_SHA256:PATH`, or `None` when a
/// digest is not 64 hex digits, the level is not 0, 1 or 2, or the path is
/// not absolute UTF-8 on one line.
pub fn pair_line(
    optimize: u8,
    source_sha256: &str,
    pyc_sha256: &str,
    path: &Path,
) -> Option<String> {
    let hex = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let path = path
        .to_str()
        .filter(|p| path.is_absolute() && !p.contains(['\n', '\r']))?;
    (optimize <= 2 && hex(source_sha256) && hex(pyc_sha256))
        .then(|| format!("{optimize}:{source_sha256}:{pyc_sha256}:{path}"))
}

/// The pairs file a probe reported reading, when it is one the verifier
/// may write: `<dir>/<64 hex digits>.pairs`, directly in the cache
/// directory `dir`. Anything else (another folder, another name) is `None`:
/// the verifier never writes where a probe's answer alone points.
pub fn pairs_file(dir: &Path, reported: &str) -> Option<PathBuf> {
    let reported = Path::new(reported);
    let name = reported.file_name()?.to_str()?;
    let stem = name.strip_suffix(".pairs")?;
    let ok = stem.len() == 64
        && stem.bytes().all(|b| b.is_ascii_hexdigit())
        && reported.parent() == Some(dir);
    ok.then(|| dir.join(name))
}

/// Adds `pairs` to the pairs file `path` (inside [`dir`]): reads what is
/// there, writes the union to a new file in the same directory and renames
/// it over, so a reader sees the old file or the new one, never a part.
/// Two runs adding at once may lose one's pairs (they are compiled again
/// next time), never corrupt the file. Returns how many pairs were new.
///
/// # Errors
/// When the file cannot be written or renamed.
pub fn add_pairs(path: &Path, pairs: &BTreeSet<String>) -> std::io::Result<usize> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut all: BTreeSet<String> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let before = all.len();
    all.extend(pairs.iter().cloned());
    let added = all.len() - before;
    if added == 0 {
        return Ok(0);
    }
    let mut file = tempfile::NamedTempFile::new_in(folder)?;
    for line in &all {
        writeln!(file, "{line}")?;
    }
    file.persist(path).map_err(|e| e.error)?;
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_line_needs_two_digests_a_level_python_uses_and_an_absolute_path() {
        let a = "a".repeat(64);
        let b = "0".repeat(64);
        let p = Path::new("/venv/lib/python3.11/site-packages/yaml/__pycache__/x.pyc");
        assert_eq!(
            pair_line(1, &a, &b, p),
            Some(format!("1:{a}:{b}:{}", p.display()))
        );
        assert_eq!(pair_line(3, &a, &b, p), None);
        assert_eq!(pair_line(0, "abc", &b, p), None);
        assert_eq!(pair_line(0, &a, &"g".repeat(64), p), None);
        assert_eq!(pair_line(0, &a, &b, Path::new("rel/x.pyc")), None);
        assert_eq!(pair_line(0, &a, &b, Path::new("/a\n0:x:y:/b")), None);
    }

    #[test]
    fn the_same_digests_at_another_path_are_another_pair() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let one = pair_line(0, &a, &b, Path::new("/venv1/sp/yaml/__pycache__/m.pyc"));
        let two = pair_line(0, &a, &b, Path::new("/venv2/sp/yaml/__pycache__/m.pyc"));
        assert_ne!(one, two);
    }

    #[test]
    fn the_verifier_writes_only_a_pairs_file_of_its_own_directory() {
        let dir = Path::new("/cache/bytecode");
        let key = "c".repeat(64);
        assert_eq!(
            pairs_file(dir, &format!("/cache/bytecode/{key}.pairs")),
            Some(dir.join(format!("{key}.pairs")))
        );
        for bad in [
            format!("/elsewhere/{key}.pairs"),
            format!("/cache/bytecode/sub/{key}.pairs"),
            "/cache/bytecode/short.pairs".to_string(),
            format!("/cache/bytecode/{key}.txt"),
            format!("/cache/bytecode/../bytecode/{key}.pairs"),
        ] {
            assert_eq!(pairs_file(dir, &bad), None, "{bad}");
        }
    }

    #[test]
    fn adding_pairs_keeps_what_was_there_and_counts_only_new_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pairs");
        let one: BTreeSet<String> = ["0:a:b".to_string()].into();
        assert_eq!(add_pairs(&path, &one).unwrap(), 1);
        assert_eq!(add_pairs(&path, &one).unwrap(), 0);
        let two: BTreeSet<String> = ["0:a:b".to_string(), "1:c:d".to_string()].into();
        assert_eq!(add_pairs(&path, &two).unwrap(), 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0:a:b\n1:c:d\n");
    }
}
