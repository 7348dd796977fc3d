//! What the `sdk-record` gate's probes answer: the SDK probe
//! (`src/python/sdk_probe.py`) and the bytecode probe
//! (`src/python/bytecode_probe.py`). RECORD itself is read by
//! `crate::record`. Everything here observes; nothing decides.

use serde::{Deserialize, Serialize};

/// What `src/python/sdk_probe.py` prints.
#[derive(Debug, Clone, Deserialize, Serialize)]
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
    /// The bytecode cache the probe read, if it was given one.
    #[serde(default)]
    pub cache: Option<BytecodeCacheRead>,
}

/// The bytecode cache file a probe read (`src/python/bytecode_cache.rs`).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
pub struct BytecodeCacheRead {
    /// `<cache dir>/<interpreter key>.pairs` (the key: the interpreter's
    /// identity and the environment's prefix).
    pub path: String,
    /// SHA-256 of the file as read; none when it did not exist yet.
    pub sha256: Option<String>,
    /// Well-formed pairs read from it.
    pub pairs_read: u64,
}

impl BytecodeFile {
    /// The cache line of a file compiled and found equal now (not one taken
    /// from the cache), keyed by its absolute path: `site_dir` joined with
    /// [`BytecodeFile::path`], as the probe joins them.
    pub fn new_cache_pair(&self, site_dir: &std::path::Path) -> Option<String> {
        if self.outcome != BytecodeOutcome::Equal || self.cached {
            return None;
        }
        crate::python::bytecode_cache::pair_line(
            self.optimize?,
            self.source_sha256.as_deref()?,
            self.pyc_sha256.as_deref()?,
            &site_dir.join(&self.path),
        )
    }
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
    /// SHA-256 of the source's bytes, when it was read.
    #[serde(default)]
    pub source_sha256: Option<String>,
    /// SHA-256 of the bytecode file's bytes, when its source was read.
    #[serde(default)]
    pub pyc_sha256: Option<String>,
    /// `equal` because this path and the two digests form a pair an earlier
    /// run compiled and found equal with this interpreter in this
    /// environment (the bytecode cache), not compiled now.
    #[serde(default)]
    pub cached: bool,
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
