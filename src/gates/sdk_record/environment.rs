//! What the `sdk-record` gate observes about the interpreter environment as a
//! whole: the site probe's answer (`src/python/site_probe.py`, run with `-S`
//! so nothing of the environment executes in it), every distribution's RECORD
//! in every site directory verified against the files (sha256 and size,
//! hashed in Rust), every `.pth` file read, the start-up modules located, and
//! every file in the site directories and the scripts directory that no
//! verified RECORD owns. Observes only; `environment_checks.rs` decides.

use super::pth::{parse_pth, PthLine};
use super::{normalize_join, parse_record, BytecodeFile, BytecodeOutcome};
use crate::hash;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// What `site_probe.py` prints.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct SiteProbe {
    /// `sys.executable`.
    pub executable: String,
    /// `sys.prefix` after `site` detected a venv (`pyvenv.cfg`).
    pub prefix: String,
    /// `sys.base_prefix`: the base interpreter's installation.
    pub base_prefix: String,
    /// `sys.exec_prefix` after `site` detected a venv.
    #[serde(default)]
    pub exec_prefix: Option<String>,
    /// `sys.version`'s first word.
    pub python_version: String,
    /// `sys.implementation.cache_tag`.
    pub cache_tag: String,
    /// `importlib.util.MAGIC_NUMBER`, hex.
    pub magic: String,
    /// `sys.flags` that shape the start-up (`isolated`, `no_user_site`, ...).
    pub flags: BTreeMap<String, bool>,
    /// `site.ENABLE_USER_SITE` after `site.main()`: `usercustomize` is
    /// imported at start-up only when true.
    pub enable_user_site: bool,
    /// The user site directory, when enabled.
    pub user_site: Option<String>,
    /// The scripts directory of `sys.prefix` (`<venv>/bin`).
    pub scripts_dir: Option<String>,
    /// `sysconfig`'s `stdlib` path.
    pub stdlib: Option<String>,
    /// Every directory `site` processed (`addsitedir`), in order, once each.
    pub site_dirs: Vec<String>,
    /// The base interpreter's site-packages: whether each is on `sys.path`
    /// and processed.
    pub base_site_packages: Vec<serde_json::Value>,
    /// `sys.path` before `site.main()`: the standard library.
    pub initial_path: Vec<String>,
    /// `sys.path` after `site.main()`: every `python -I` start's path.
    pub sys_path: Vec<String>,
    /// The `.pth` lines `site` would have executed (recorded, not run).
    pub executed_pth_lines: Vec<String>,
    /// `sitecustomize` and/or `usercustomize`: the start-up imports `site`
    /// would have made (`usercustomize` only with the user site enabled).
    pub startup_calls: Vec<String>,
    /// `find_spec("sitecustomize")`'s origin on that path, or none.
    pub sitecustomize: Option<String>,
    /// `find_spec("usercustomize")`'s origin on that path, or none.
    pub usercustomize: Option<String>,
    /// The bytecode files of each site directory (the SDK's package aside).
    pub bytecode: Vec<SiteBytecode>,
    /// The bytecode cache the probe read, if it was given one.
    #[serde(default)]
    pub bytecode_cache: Option<super::BytecodeCacheRead>,
    /// The standard library's level-0 bytecode files (`site_dir` is the
    /// `stdlib` path), compared with their sources like `bytecode` but not
    /// judged: the standard library is the base interpreter's. Those found
    /// equal seed the run's bytecode cache (`seed.rs`).
    #[serde(default)]
    pub stdlib_bytecode: Option<SiteBytecode>,
}

/// The bytecode files under one site directory.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct SiteBytecode {
    /// The site directory; the files' paths are relative to it.
    pub site_dir: String,
    /// As `bytecode_probe.py` examines them.
    pub files: Vec<BytecodeFile>,
}

/// The interpreter binary, hashed by the verifier.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InterpreterBinary {
    /// The path given (`--python`).
    pub path: String,
    /// Every symlink resolved.
    pub target: Option<String>,
    /// sha256 (hex) of the target.
    pub sha256: Option<String>,
    /// Why it could not be resolved or hashed.
    pub error: Option<String>,
}

/// One distribution's RECORD checked against the files.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DistributionRecord {
    /// The dist-info directory's name (`pytest-9.0.1.dist-info`).
    pub dist_info: String,
    /// Its site directory.
    pub site_dir: String,
    /// Why RECORD could not be read.
    pub read_error: Option<String>,
    /// Rows, malformed or not.
    pub rows: usize,
    /// Hashed rows whose file matched digest and size.
    pub verified: u64,
    /// Rows without a hash (RECORD itself and `.pyc`).
    pub unhashed: u64,
    /// `file: what is wrong (expected ..., found ...)`, one per failing row.
    pub problems: Vec<String>,
}

/// A `.pth` file in a processed site directory.
#[derive(Debug, Clone, Serialize)]
pub struct PthFile {
    /// Absolute path.
    pub path: String,
    /// The distribution whose verified RECORD owns it.
    pub owner: Option<String>,
    /// Its executable and path lines.
    pub lines: Vec<PthLine>,
    /// Why it could not be read.
    pub read_error: Option<String>,
}

/// A start-up module (`sitecustomize`, `usercustomize`) found on the path.
#[derive(Debug, Clone, Serialize)]
pub struct StartupModule {
    /// `sitecustomize` or `usercustomize`.
    pub name: String,
    /// Where `find_spec` found it.
    pub origin: String,
    /// Whether `site` imports it at every start (`usercustomize` only with
    /// the user site enabled).
    pub imported_at_start: bool,
    /// The distribution whose verified RECORD owns it.
    pub owner: Option<String>,
}

/// The environment as observed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EnvironmentObservation {
    /// The site probe's answer (its `bytecode` is summarised below).
    #[serde(skip)]
    pub probe: Option<SiteProbe>,
    /// Why the site probe did not answer.
    pub probe_error: Option<String>,
    /// The interpreter binary.
    pub interpreter: InterpreterBinary,
    /// Every distribution found in a site directory.
    pub distributions: Vec<DistributionRecord>,
    /// Files owned by a verified RECORD row (hashed and matching).
    pub verified_files: u64,
    /// Every `.pth` file in a processed site directory.
    pub pth_files: Vec<PthFile>,
    /// The start-up modules on the path.
    pub startup_modules: Vec<StartupModule>,
    /// `path: why` for bytecode that Python would load instead of a source
    /// and that is not the compilation of that source.
    pub bytecode_problems: Vec<String>,
    /// Bytecode files equal to the compilation of their RECORD-verified source.
    pub bytecode_equal: u64,
    /// Of those, the ones found equal through the bytecode cache (a pair an
    /// earlier run compiled and compared), not compiled now.
    pub bytecode_cached: u64,
    /// The bytecode cache the site probe read.
    pub bytecode_cache: Option<super::BytecodeCacheRead>,
    /// Files in the site directories and the scripts directory that no
    /// verified RECORD owns (absolute paths, with why when it is bytecode).
    pub unowned: Vec<String>,
    /// pytest's assertion-rewrite caches
    /// (`__pycache__/<module>.<cache_tag>-pytest-<version>.pyc`, written when
    /// pytest ran with this interpreter and no `pycache_prefix`): not a
    /// compilation of the source, so not comparable with one, and never read
    /// by the verifier's steps, whose pytest runs with `-X pycache_prefix`
    /// (pytest then reads its cache there). Recorded, not judged.
    pub pytest_rewrite_cache: Vec<String>,
    /// The SDK's dist-info name: its RECORD is judged by `record-rows`.
    pub sdk_dist_info: Option<String>,
    /// The venv's own files (`pyvenv.cfg`, `bin/python*` with their link
    /// targets, `bin/activate*`): written by `venv`, not by an installer.
    pub venv_files: Vec<String>,
    /// `sys.path` entries that are neither the standard library nor a site
    /// directory (added by `.pth` path lines).
    pub added_path_entries: Vec<String>,
}

/// Names `venv` writes into the scripts directory (CPython `Lib/venv`).
const VENV_SCRIPTS: &[&str] = &[
    "activate",
    "activate.csh",
    "activate.fish",
    "activate.nu",
    "activate.bat",
    "deactivate.bat",
    "Activate.ps1",
    "pydoc.bat",
];

/// Whether a scripts-directory file name is one `venv` writes: `python`,
/// `python3`, `python3.N` (and `w`/`t`/`d` variants) and the activate
/// scripts.
pub fn is_venv_script(name: &str) -> bool {
    VENV_SCRIPTS.contains(&name)
        || name.strip_prefix("python").is_some_and(|rest| {
            rest.chars()
                .all(|c| c.is_ascii_digit() || ".wtd".contains(c))
        })
}

/// Whether `path` is named as pytest's assertion-rewrite cache for this
/// interpreter: `__pycache__/<module>.<cache_tag>-pytest-<version>.pyc`
/// (`_pytest/assertion/rewrite.py`, `PYC_TAIL`).
pub fn is_pytest_rewrite_cache(path: &Path, cache_tag: &str) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let in_cache = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "__pycache__");
    in_cache && name.ends_with(".pyc") && name.contains(&format!(".{cache_tag}-pytest-"))
}

/// Hashes the interpreter at `python` (symlinks resolved).
pub fn interpreter_binary(python: &Path) -> InterpreterBinary {
    let mut out = InterpreterBinary {
        path: python.display().to_string(),
        ..Default::default()
    };
    match python.canonicalize() {
        Ok(target) => {
            out.target = Some(target.display().to_string());
            match hash::sha256_file(&target) {
                Ok(d) => out.sha256 = Some(d.hex()),
                Err(e) => out.error = Some(format!("cannot hash {}: {e}", target.display())),
            }
        }
        Err(e) => out.error = Some(format!("cannot resolve {}: {e}", python.display())),
    }
    out
}

/// Files verified per distribution, for ownership.
#[derive(Debug, Default)]
pub struct Owners {
    /// Verified file → the dist-info name that owns it.
    pub verified: BTreeMap<PathBuf, String>,
    /// Every path some RECORD lists (verified or not).
    pub listed: BTreeSet<PathBuf>,
}

/// Reads and verifies the RECORD of `site_dir/dist_info`: every row's path
/// must resolve inside `prefix` (scripts and data files climb out of
/// site-packages with `..`, never out of the environment), every hashed row
/// must match its file (sha256, size). Verified files go into `owners`.
pub fn verify_distribution(
    site_dir: &Path,
    dist_info: &str,
    prefix: &Path,
    owners: &mut Owners,
) -> DistributionRecord {
    let mut out = DistributionRecord {
        dist_info: dist_info.to_string(),
        site_dir: site_dir.display().to_string(),
        ..Default::default()
    };
    let record_path = site_dir.join(dist_info).join("RECORD");
    let file = match std::fs::File::open(&record_path) {
        Ok(f) => f,
        Err(e) => {
            out.read_error = Some(format!(
                "{}: expected the installer's RECORD, found none ({e})",
                record_path.display()
            ));
            return out;
        }
    };
    let parsed = parse_record(std::io::BufReader::new(file), dist_info);
    out.rows = parsed.total_rows;
    out.problems.extend(parsed.malformed.iter().cloned());
    for row in &parsed.rows {
        let resolved = normalize_join(site_dir, &row.path);
        if !resolved.starts_with(prefix) || resolved == site_dir {
            out.problems.push(format!(
                "row {} ({}): expected a path inside the environment {}, found {}",
                row.row,
                row.path,
                prefix.display(),
                resolved.display()
            ));
            continue;
        }
        owners.listed.insert(resolved.clone());
        let Some((digest, size)) = &row.hashed else {
            out.unhashed += 1;
            if row.path == format!("{dist_info}/RECORD") {
                // RECORD cannot hash itself; it is verified by its rows.
                owners.verified.insert(resolved, dist_info.to_string());
            }
            continue;
        };
        match hash::sha256_file(&resolved) {
            Err(e) => out.problems.push(format!(
                "{}: expected a file of {size} bytes (row {}), found none ({e})",
                resolved.display(),
                row.row
            )),
            Ok(found) if found.bytes == *digest && found.size == *size => {
                out.verified += 1;
                owners.verified.insert(resolved, dist_info.to_string());
            }
            Ok(found) => out.problems.push(format!(
                "{}: expected sha256={} size {size} (row {}), found sha256={} size {}",
                resolved.display(),
                URL_SAFE_NO_PAD.encode(digest),
                row.row,
                URL_SAFE_NO_PAD.encode(found.bytes),
                found.size
            )),
        }
    }
    out
}

/// The SDK's own files, which the gate's SDK checks judge (`record-rows`,
/// `unlisted-files`, `bytecode`): one cause is one finding, so the
/// environment checks do not judge them again.
#[derive(Debug, Clone, Default)]
pub struct SdkScope {
    /// The SDK's package and dist-info directories.
    pub dirs: Vec<PathBuf>,
    /// The SDK's bytecode files the `bytecode` check's probe found equal to
    /// the compilation of their verified source: owned.
    pub bytecode_equal: BTreeSet<PathBuf>,
}

/// Observes the environment `probe` describes, with the interpreter at
/// `python` (hashed here); `sdk` is what the SDK checks judge.
pub fn observe_environment(
    python: &Path,
    probe: Result<SiteProbe, String>,
    sdk: &SdkScope,
) -> EnvironmentObservation {
    let mut obs = EnvironmentObservation {
        interpreter: interpreter_binary(python),
        sdk_dist_info: sdk
            .dirs
            .iter()
            .filter_map(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .find(|n| n.ends_with(".dist-info")),
        ..Default::default()
    };
    let probe = match probe {
        Ok(p) => p,
        Err(e) => {
            obs.probe_error = Some(e);
            return obs;
        }
    };
    let prefix = normalize_join(Path::new(&probe.prefix), ".");
    let site_dirs: Vec<PathBuf> = probe
        .site_dirs
        .iter()
        .map(|d| normalize_join(Path::new(d), "."))
        .filter(|d| d.is_dir())
        .collect();
    let owners = verify_site_dirs(&site_dirs, &prefix, &mut obs);
    let bytecode = judge_bytecode(&probe, &owners, &sdk.bytecode_equal, &mut obs);
    walk_site_dirs(&site_dirs, &owners, &bytecode, sdk, &mut obs);
    scripts_and_venv_config(&probe, &prefix, &owners, &mut obs);
    startup_modules(&probe, &owners, &mut obs);
    // sys.path entries a .pth path line added.
    let known: BTreeSet<PathBuf> = site_dirs
        .iter()
        .cloned()
        .chain(
            probe
                .initial_path
                .iter()
                .map(|p| normalize_join(Path::new(p), ".")),
        )
        .collect();
    for entry in &probe.sys_path {
        if known.contains(&normalize_join(Path::new(entry), ".")) {
            continue;
        }
        obs.added_path_entries.push(entry.clone());
    }
    obs.bytecode_cache = probe.bytecode_cache.clone();
    obs.probe = Some(probe);
    obs
}

/// Every distribution of the site directories, its RECORD verified
/// (recorded in `obs.distributions`); the files they own.
fn verify_site_dirs(
    site_dirs: &[PathBuf],
    prefix: &Path,
    obs: &mut EnvironmentObservation,
) -> Owners {
    let mut owners = Owners::default();
    for site_dir in site_dirs {
        let mut names: Vec<String> = std::fs::read_dir(site_dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".dist-info"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        for name in names {
            let record = verify_distribution(site_dir, &name, prefix, &mut owners);
            obs.distributions.push(record);
        }
    }
    obs.verified_files = owners.verified.len() as u64;
    owners
}

/// The bytecode files the probe compared: owned (the SDK's equal ones
/// included), and why each other one is not.
struct BytecodeJudged {
    owned: BTreeSet<PathBuf>,
    why: BTreeMap<PathBuf, String>,
}

/// Bytecode is owned when equal to the compilation of a verified source (or
/// pytest's assertion-rewrite cache); a loaded difference, a sourceless or
/// an unreadable file is a problem (`obs.bytecode_problems`).
fn judge_bytecode(
    probe: &SiteProbe,
    owners: &Owners,
    sdk_bytecode_equal: &BTreeSet<PathBuf>,
    obs: &mut EnvironmentObservation,
) -> BytecodeJudged {
    let mut judged = BytecodeJudged {
        owned: sdk_bytecode_equal.clone(),
        why: BTreeMap::new(),
    };
    for site in &probe.bytecode {
        let base = normalize_join(Path::new(&site.site_dir), ".");
        for file in &site.files {
            let path = normalize_join(&base, &file.path);
            match bytecode_why(file, &path, &base, owners, &probe.cache_tag, obs) {
                None => {
                    judged.owned.insert(path);
                }
                Some(why) => {
                    judged.why.insert(path, why);
                }
            }
        }
    }
    judged
}

/// Why bytecode file `file` (at `path`, under site directory `base`) is not
/// owned; `None` when it is.
fn bytecode_why(
    file: &BytecodeFile,
    path: &Path,
    base: &Path,
    owners: &Owners,
    cache_tag: &str,
    obs: &mut EnvironmentObservation,
) -> Option<String> {
    let source = file.source.as_deref().map(|s| normalize_join(base, s));
    let source_verified = source
        .as_ref()
        .is_some_and(|s| owners.verified.contains_key(s));
    let loaded = file.header.as_ref().and_then(|h| h.current) != Some(false);
    Some(match file.outcome {
        BytecodeOutcome::Equal if source_verified => {
            obs.bytecode_equal += 1;
            obs.bytecode_cached += u64::from(file.cached);
            return None;
        }
        BytecodeOutcome::Equal => "equal to a source no verified RECORD owns".to_string(),
        BytecodeOutcome::Differs if loaded => {
            obs.bytecode_problems.push(format!(
                "{}: expected this interpreter's compilation of {}, found other code \
                 (first difference: {}); Python loads it instead of the source",
                path.display(),
                source
                    .as_ref()
                    .map(|s| s.display().to_string())
                    .unwrap_or_default(),
                file.difference.as_deref().unwrap_or("?")
            ));
            "not the compilation of its source".to_string()
        }
        BytecodeOutcome::Differs => {
            "not the compilation of its source, stale (never loaded)".to_string()
        }
        BytecodeOutcome::Sourceless => {
            obs.bytecode_problems.push(format!(
                "{}: expected bytecode only in __pycache__, found a sourceless .pyc, which \
                 import loads with no source to verify it against",
                path.display()
            ));
            "sourceless".to_string()
        }
        BytecodeOutcome::Unreadable => {
            obs.bytecode_problems.push(format!(
                "{}: expected a readable bytecode file, found {}",
                path.display(),
                file.difference.as_deref().unwrap_or("?")
            ));
            "unreadable".to_string()
        }
        BytecodeOutcome::NoSource => "no source (never loaded)".to_string(),
        BytecodeOutcome::ForeignName if is_pytest_rewrite_cache(path, cache_tag) => {
            obs.pytest_rewrite_cache.push(path.display().to_string());
            return None;
        }
        BytecodeOutcome::ForeignName => "named for another interpreter (never loaded)".to_string(),
        BytecodeOutcome::BadHeader => "foreign header (never loaded)".to_string(),
    })
}

/// Every file of the site directories: its top-level `.pth` files read
/// (`obs.pth_files`), and every file no verified RECORD, owned bytecode or
/// the SDK's own package holds listed as unowned (bytecode with the reason).
fn walk_site_dirs(
    site_dirs: &[PathBuf],
    owners: &Owners,
    bytecode: &BytecodeJudged,
    sdk: &SdkScope,
    obs: &mut EnvironmentObservation,
) {
    for site_dir in site_dirs {
        for entry in WalkDir::new(site_dir)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
        {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    obs.unowned.push(format!(
                        "{} (unreadable: {e})",
                        e.path().unwrap_or(site_dir).display()
                    ));
                    continue;
                }
            };
            if entry.file_type().is_dir() {
                continue;
            }
            let path = normalize_join(entry.path(), ".");
            let owner = owners.verified.get(&path).cloned();
            if entry.depth() == 1 && path.extension().is_some_and(|x| x == "pth") {
                let (lines, read_error) = match std::fs::read(&path) {
                    Ok(bytes) => (parse_pth(&bytes), None),
                    Err(e) => (Vec::new(), Some(e.to_string())),
                };
                obs.pth_files.push(PthFile {
                    path: path.display().to_string(),
                    owner: owner.clone(),
                    lines,
                    read_error,
                });
            }
            if owner.is_some()
                || bytecode.owned.contains(&path)
                || sdk.dirs.iter().any(|d| path.starts_with(d))
            {
                continue;
            }
            match bytecode.why.get(&path) {
                Some(why) => obs
                    .unowned
                    .push(format!("{} (bytecode: {why})", path.display())),
                None => obs.unowned.push(path.display().to_string()),
            }
        }
    }
}

/// The scripts directory (top level: the venv's own scripts apart, every
/// file no RECORD owns is unowned) and `pyvenv.cfg` with its digest.
fn scripts_and_venv_config(
    probe: &SiteProbe,
    prefix: &Path,
    owners: &Owners,
    obs: &mut EnvironmentObservation,
) {
    if let Some(scripts) = &probe.scripts_dir {
        let scripts = normalize_join(Path::new(scripts), ".");
        let mut names: Vec<_> = std::fs::read_dir(&scripts)
            .map(|rd| rd.filter_map(|e| e.ok()).collect())
            .unwrap_or_default();
        names.sort_by_key(|e| e.file_name());
        for entry in names {
            let path = normalize_join(&entry.path(), ".");
            if path.is_dir() || owners.verified.contains_key(&path) {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_venv_script(&name) {
                let link = std::fs::read_link(&path)
                    .map(|t| format!(" -> {}", t.display()))
                    .unwrap_or_default();
                obs.venv_files.push(format!("{}{link}", path.display()));
            } else {
                obs.unowned.push(path.display().to_string());
            }
        }
    }
    let cfg = prefix.join("pyvenv.cfg");
    if cfg.is_file() {
        let digest = hash::sha256_file(&cfg)
            .map(|d| d.hex())
            .unwrap_or_else(|e| format!("unreadable: {e}"));
        obs.venv_files
            .push(format!("{} (sha256 {digest})", cfg.display()));
    }
}

/// `sitecustomize` and `usercustomize`, where the probe found them, with
/// their owner and whether start-up imported them.
fn startup_modules(probe: &SiteProbe, owners: &Owners, obs: &mut EnvironmentObservation) {
    for (name, origin) in [
        ("sitecustomize", &probe.sitecustomize),
        ("usercustomize", &probe.usercustomize),
    ] {
        if let Some(origin) = origin {
            let owner = owners
                .verified
                .get(&normalize_join(Path::new(origin), "."))
                .cloned();
            obs.startup_modules.push(StartupModule {
                name: name.to_string(),
                origin: origin.clone(),
                imported_at_start: probe.startup_calls.iter().any(|c| c == name),
                owner,
            });
        }
    }
}
