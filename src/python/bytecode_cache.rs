//! The bytecode cache: pairs of a source and its bytecode that an earlier
//! run of the bytecode probes compiled and found equal with one interpreter.
//!
//! Comparing a `.pyc` with its source means compiling the source, about
//! 2.5 ms of CPU a file: 7 s for the SDK's venv, on every run. The probes
//! (`src/python/bytecode_probe.py`, `site_probe.py`) take the cache's
//! directory and read `<dir>/<interpreter key>.pairs` there, one line per
//! pair, `OPT:SOURCE_SHA256:PYC_SHA256` (optimisation level, then the
//! SHA-256 of the source's and the bytecode file's bytes). The key is the
//! SHA-256 of what `compile()` depends on (the executable, a shared
//! libpython, `sys.version`, the magic number), so a pair only ever stands
//! for the same interpreter. A file whose two digests form a listed pair is
//! reported `equal` with `cached: true`; every other file is compiled and
//! compared, and the gate adds the pairs found equal now ([`add_pairs`]).
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

/// One pair's line: `OPT:SOURCE_SHA256:PYC_SHA256`, or `None` when a digest
/// is not 64 hex digits or the level is not 0, 1 or 2.
pub fn pair_line(optimize: u8, source_sha256: &str, pyc_sha256: &str) -> Option<String> {
    let hex = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    (optimize <= 2 && hex(source_sha256) && hex(pyc_sha256))
        .then(|| format!("{optimize}:{source_sha256}:{pyc_sha256}"))
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
    fn a_pair_line_needs_two_digests_and_a_level_python_uses() {
        let a = "a".repeat(64);
        let b = "0".repeat(64);
        assert_eq!(pair_line(1, &a, &b), Some(format!("1:{a}:{b}")));
        assert_eq!(pair_line(3, &a, &b), None);
        assert_eq!(pair_line(0, "abc", &b), None);
        assert_eq!(pair_line(0, &a, &"g".repeat(64)), None);
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
