//! What the `sdk-shadow` gate observes: the shadow probe's answer
//! (`src/python/shadow_probe.py`), the verified install's real paths, the
//! real paths of what the probe named, and the staged candidate's entries.

use crate::context::VerifiedSdk;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use walkdir::WalkDir;

/// A module spec as the probe describes it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct SpecInfo {
    /// A spec was found.
    pub found: bool,
    /// `spec.origin` (the `__init__.py` of a regular package).
    pub origin: Option<String>,
    /// `spec.submodule_search_locations`, absolute.
    pub locations: Vec<String>,
    /// The loader's class name.
    pub loader: Option<String>,
}

/// A possible copy found by scanning a path entry.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct FoundCopy {
    /// The sys.path entry (or the code dir) scanned.
    pub entry: String,
    /// `package`, `module`, `dist-info`, `egg-info`, `egg-link` or `editable`.
    pub kind: String,
    /// Its path (`<zip>/<name>` inside a zip file).
    pub path: String,
    /// Its real path.
    pub realpath: String,
    /// For an egg-link: the directory it points to.
    pub target: Option<String>,
    /// For an egg-link: a `langbot_plugin` copy in that directory.
    pub target_copy: Option<String>,
}

/// One meaningful line of a `.pth` file.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct PthLine {
    /// `import` (executed by `site`) or `path` (appended to sys.path).
    pub kind: String,
    /// The line.
    pub text: String,
    /// For a path line: the absolute directory.
    pub resolved: Option<String>,
    /// For a path line: the real path of a `langbot_plugin` copy in it.
    pub langbot_copy: Option<String>,
}

/// A `.pth` file in a site directory on sys.path.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct PthFile {
    /// Its path.
    pub file: String,
    /// Import and path lines (comments and blank lines dropped).
    pub lines: Vec<PthLine>,
    /// Some line mentions `langbot` (case-insensitive).
    pub mentions_langbot: bool,
    /// The probe's own flag: mentions langbot or adds a path holding a copy.
    pub flagged: bool,
}

/// One `sys.meta_path` finder.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Finder {
    /// Its class's module.
    pub module: String,
    /// Its class's qualified name.
    pub qualname: String,
    /// One of importlib's own finders.
    pub standard: bool,
    /// For a non-standard finder: what it answers for `langbot_plugin`.
    pub spec: Option<SpecInfo>,
    /// For a non-standard finder that raised: the exception.
    pub error: Option<String>,
}

/// What `src/python/shadow_probe.py` prints.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ShadowProbe {
    /// `sys.executable`.
    pub executable: String,
    /// `os.getcwd()`.
    pub cwd: String,
    /// The code dir emulated at the head of the worker's sys.path.
    pub code_dir: String,
    /// Whether each of [`WATCHED_ENV`] is in the child's `os.environ`.
    pub env: std::collections::BTreeMap<String, bool>,
    /// Names (never values) of the child's environment variables.
    pub env_names: Vec<String>,
    /// The interpreter's `sys.path`.
    pub sys_path: Vec<String>,
    /// `[code_dir] + sys.path`.
    pub worker_path: Vec<String>,
    /// `importlib.util.find_spec(PACKAGE)`, the interpreter as it is.
    pub interpreter_spec: SpecInfo,
    /// Why that raised, if it did.
    pub interpreter_spec_error: Option<String>,
    /// `PathFinder.find_spec(PACKAGE, worker_path)`, the worker's view.
    pub worker_spec: SpecInfo,
    /// Why that raised, if it did.
    pub worker_spec_error: Option<String>,
    /// Possible copies in every worker_path entry.
    pub found: Vec<FoundCopy>,
    /// `.pth` files of the site directories on sys.path.
    pub pth: Vec<PthFile>,
    /// `sys.meta_path`, in order.
    pub meta_path: Vec<Finder>,
    /// Entries the probe could not read (unobserved: a failure).
    pub errors: Vec<String>,
}

/// The verified install, as real paths.
#[derive(Debug, Clone, Serialize)]
pub struct VerifiedPaths {
    /// Real path of the verified `langbot_plugin` directory.
    pub package_dir: PathBuf,
    /// Real path of the verified dist-info directory.
    pub dist_info: PathBuf,
}

impl VerifiedPaths {
    /// Real paths of `sdk`'s package and dist-info.
    pub fn of(sdk: &VerifiedSdk) -> Self {
        Self {
            package_dir: real(&sdk.package_dir.display().to_string()),
            dist_info: real(&sdk.dist_info.display().to_string()),
        }
    }
}

/// The real path of `p`, or its lexically normalised form when it does not exist.
pub(crate) fn real(p: &str) -> PathBuf {
    Path::new(p)
        .canonicalize()
        .unwrap_or_else(|_| crate::gates::sdk_record::normalize_join(Path::new(p), "."))
}

/// The real paths of the paths a probe named, resolved (symlinks followed)
/// when the probe answered: the decisions compare these, so they need no
/// file system.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Realpaths(pub(crate) BTreeMap<String, String>);

impl Realpaths {
    /// Resolves every path of `probe` that a decision compares: spec
    /// origins and locations (the interpreter's, the worker's, each
    /// finder's), found copies, egg-link targets, `.pth` copies.
    pub fn of(probe: &ShadowProbe) -> Self {
        let mut paths: Vec<&str> = Vec::new();
        let specs = [&probe.interpreter_spec, &probe.worker_spec]
            .into_iter()
            .chain(probe.meta_path.iter().filter_map(|f| f.spec.as_ref()));
        for s in specs {
            paths.extend(s.origin.as_deref());
            paths.extend(s.locations.iter().map(String::as_str));
        }
        for f in &probe.found {
            paths.push(&f.realpath);
            paths.extend(f.target_copy.as_deref());
        }
        for line in probe.pth.iter().flat_map(|p| &p.lines) {
            paths.extend(line.langbot_copy.as_deref());
        }
        Self(
            paths
                .into_iter()
                .map(|p| (p.to_string(), real(p).display().to_string()))
                .collect(),
        )
    }

    /// The real path of `p` as resolved, or its lexically normalised form.
    pub fn get(&self, p: &str) -> PathBuf {
        match self.0.get(p) {
            Some(r) => PathBuf::from(r),
            None => crate::gates::sdk_record::normalize_join(Path::new(p), "."),
        }
    }
}

/// Relative paths of every entry under `root` (not following links).
///
/// # Errors
/// A sentence naming the entry that could not be read.
pub fn relative_entries(root: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for entry in WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
    {
        let entry = entry.map_err(|e| format!("cannot walk {}: {e}", root.display()))?;
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        let parts: Vec<String> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        out.push(parts.join("/"));
    }
    Ok(out)
}
