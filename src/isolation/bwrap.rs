//! The `bwrap` backend: Debian's `bubblewrap` (`bwrap`) around each worker.
//!
//! Flags used (bubblewrap 0.8 manual): `--unshare-pid --unshare-ipc
//! --unshare-uts` (a mount namespace is always new) with `--share-net` (the
//! workers and the harness share loopback), `--die-with-parent` (the sandbox
//! gets SIGKILL when the harness thread that started it dies),
//! `--new-session` (no controlling terminal to inject into), `--clearenv` then
//! one `--setenv` per allowed variable, a fresh `/proc` and `/dev`, read-only
//! binds of the system directories, interpreter prefixes and SDK, and only the
//! worker's own private root bound read-write, at its host path. Another
//! worker's root does not exist inside the sandbox.

use super::{Command, Confinement};
use crate::process::{self, ChildSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable naming the bwrap program (default: `bwrap` on the
/// harness's PATH). Tests point it at a missing file to see an unavailable
/// backend refused.
pub const PROGRAM_VAR: &str = "VCC_BWRAP";

/// System directories bound read-only (or re-created as the same symlink)
/// when they exist.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"];

/// A located bubblewrap.
#[derive(Debug, Clone)]
pub struct Bwrap {
    /// The `bwrap` executable.
    pub program: PathBuf,
    /// First line of `bwrap --version`.
    pub version: String,
}

/// Finds the bwrap program: [`PROGRAM_VAR`] if set, else `bwrap` on the
/// allowlisted PATH.
///
/// # Errors
/// A sentence saying where it looked.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(PROGRAM_VAR).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(format!(
                "{PROGRAM_VAR}={}: expected an executable bwrap, found none there",
                p.display()
            ))
        };
    }
    let path = process::base_env().get("PATH").cloned().unwrap_or_default();
    find_on(&path)
}

/// The first executable `bwrap` in the folders of `path` (`:`-separated).
/// The error counts the folders without listing them: a whole `PATH` in a
/// check's detail buries the sentence that matters.
fn find_on(path: &str) -> Result<PathBuf, String> {
    let folders: Vec<&str> = path.split(':').filter(|d| !d.is_empty()).collect();
    folders
        .iter()
        .map(|d| Path::new(d).join("bwrap"))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            format!(
                "no `bwrap` executable in the {} folder(s) of PATH; install bubblewrap or name one with \
                 {PROGRAM_VAR}",
                folders.len()
            )
        })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `bwrap --version` and returns its first line.
///
/// # Errors
/// When it cannot run or fails.
pub fn version(program: &Path, cwd: &Path, log_stem: &Path) -> Result<String, String> {
    let out = process::run(&ChildSpec {
        program: program.to_path_buf(),
        args: vec!["--version".into()],
        cwd: cwd.to_path_buf(),
        env: process::base_env(),
        timeout: Duration::from_secs(30),
        log_stem: log_stem.to_path_buf(),
        stdin: None,
    })
    .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "`{} --version`: {}: {}",
            program.display(),
            out.describe(),
            out.tail(5)
        ));
    }
    Ok(out
        .stdout_text()
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string())
}

impl Bwrap {
    /// The bwrap arguments confining `program args` by `c` (see module docs).
    pub fn args(c: &Confinement, program: &Path, args: &[String]) -> Vec<String> {
        let mut v: Vec<String> = [
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--share-net",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for (k, val) in &c.env {
            v.extend(["--setenv".into(), k.clone(), val.clone()]);
        }
        v.extend(system_dir_args());
        // `/proc` and `/dev` before the inputs: an input under `/dev/shm`
        // (the host's RAM-backed file system) is then mounted on top of the
        // new `/dev`, not hidden by it.
        v.extend([
            "--proc".into(),
            "/proc".into(),
            "--dev".into(),
            "/dev".into(),
        ]);
        for p in minimal_cover(&c.read_only) {
            let s = p.display().to_string();
            v.extend(["--ro-bind".into(), s.clone(), s]);
        }
        let root = c.root.display().to_string();
        v.extend(["--bind".into(), root.clone(), root]);
        v.extend(["--chdir".into(), c.cwd.display().to_string()]);
        v.push("--".into());
        v.push(program.display().to_string());
        v.extend(args.iter().cloned());
        v
    }

    /// The command: bwrap with [`Bwrap::args`]; bwrap itself gets only the
    /// harness's base environment (PATH, LANG, TZ).
    pub fn command(&self, c: &Confinement, program: &Path, args: &[String]) -> Command {
        Command {
            program: self.program.clone(),
            args: Self::args(c, program, args),
            env: process::base_env(),
        }
    }
}

/// The arguments that give a new root the system directories: each of
/// [`SYSTEM_DIRS`] bound read-only, or re-created as the same symlink (a
/// merged-/usr system's `/bin -> usr/bin`); those that do not exist are
/// left out.
pub fn system_dir_args() -> Vec<String> {
    let mut v = Vec::new();
    for dir in SYSTEM_DIRS {
        let p = Path::new(dir);
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(p) {
                    v.extend([
                        "--symlink".into(),
                        target.display().to_string(),
                        dir.to_string(),
                    ]);
                }
            }
            Ok(m) if m.is_dir() => {
                v.extend(["--ro-bind".into(), dir.to_string(), dir.to_string()]);
            }
            _ => {}
        }
    }
    v
}

/// `paths` without those already covered: by a system directory bound
/// anyway, or by another path of the list that contains them.
pub fn minimal_cover(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut sorted: Vec<PathBuf> = paths.iter().filter(|p| p.is_absolute()).cloned().collect();
    sorted.sort();
    sorted.dedup();
    let mut out: Vec<PathBuf> = Vec::new();
    for p in sorted {
        if SYSTEM_DIRS.iter().any(|d| p.starts_with(d)) {
            continue;
        }
        if out.iter().any(|q| p.starts_with(q)) {
            continue;
        }
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_bwrap_is_named_without_printing_the_whole_path() {
        let empty = tempfile::tempdir().unwrap();
        let path = format!("{}:/vcc-no-such-dir", empty.path().display());
        let err = find_on(&path).unwrap_err();
        assert_eq!(
            err,
            format!("no `bwrap` executable in the 2 folder(s) of PATH; install bubblewrap or name one with {PROGRAM_VAR}")
        );
    }
    use std::collections::BTreeMap;

    #[test]
    fn cover_drops_nested_and_system_paths() {
        let got = minimal_cover(&[
            PathBuf::from("/opt/venv/lib/python3.11/site-packages"),
            PathBuf::from("/opt/venv"),
            PathBuf::from("/usr/lib/python3.11"),
            PathBuf::from("/root/.pyenv/versions/3.11.7"),
            PathBuf::from("relative"),
        ]);
        assert_eq!(
            got,
            vec![
                PathBuf::from("/opt/venv"),
                PathBuf::from("/root/.pyenv/versions/3.11.7")
            ]
        );
    }

    #[test]
    fn arguments_clear_the_environment_and_bind_only_the_own_root_writable() {
        let c = Confinement {
            root: "/ev/roots/worker-isolation/a".into(),
            cwd: "/ev/roots/worker-isolation/a/data".into(),
            env: BTreeMap::from([("HOME".to_string(), "/ev/roots/a/home".to_string())]),
            read_only: vec!["/opt/venv".into()],
        };
        let args = Bwrap::args(&c, Path::new("/opt/venv/bin/python"), &["-I".into()]);
        let joined = args.join(" ");
        for flag in [
            "--unshare-pid",
            "--unshare-ipc",
            "--share-net",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ] {
            assert!(args.iter().any(|a| a == flag), "{flag} missing: {joined}");
        }
        assert!(
            joined.contains("--setenv HOME /ev/roots/a/home"),
            "{joined}"
        );
        assert!(joined.contains("--ro-bind /opt/venv /opt/venv"), "{joined}");
        let writable: Vec<&String> = args
            .iter()
            .enumerate()
            .filter(|(i, a)| *a == "--bind" && *i + 1 < args.len())
            .map(|(i, _)| &args[i + 1])
            .collect();
        assert_eq!(writable, vec!["/ev/roots/worker-isolation/a"]);
        assert!(joined.ends_with("-- /opt/venv/bin/python -I"), "{joined}");
        // --clearenv comes before every --setenv.
        let clear = args.iter().position(|a| a == "--clearenv").unwrap();
        let first_set = args.iter().position(|a| a == "--setenv").unwrap();
        assert!(clear < first_set);
    }
}
