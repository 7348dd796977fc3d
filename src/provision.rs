//! The verifier provisions its own SDK interpreter: a virtual environment
//! holding exactly the wheels of a lock list (`gates/profiles/sdk/*.lock`),
//! each checked by sha256 as pip installs it, kept in the user's cache and
//! verified file by file against its RECORDs every time it is reused.
//!
//! Steps ([`ensure`]), all under an exclusive `flock` on `<name>.lock` beside
//! the environment, so two runs never build or judge one environment at once:
//!
//! 1. An existing environment is checked ([`integrity::check`]): sound, it is
//!    reused; damaged, it is removed and rebuilt, never repaired or trusted.
//! 2. The base interpreter (`$VCC_BASE_PYTHON`, else `python3` on `PATH`) must
//!    be the lock's CPython on the lock's platform.
//! 3. `python -m venv` in a temporary folder beside the target; then
//!    `pip install --isolated --require-hashes --only-binary :all: --no-deps -r LOCK`
//!    from `index_url`, with every `PIP_*`/`PYTHON*` variable removed and
//!    `PIP_CONFIG_FILE=/dev/null`; distributions the lock does not name
//!    (`setuptools` of `ensurepip`) are uninstalled.
//! 4. The new environment is checked like a cached one, stamped, and renamed
//!    into place (one `rename(2)`: no run ever sees half an environment).
//!
//! Console scripts in `bin/` (`lbp`, `pip`) keep the temporary folder in
//! their `#!` line (pip writes it, RECORD hashes it): the verifier never runs
//! them (it runs `python -m langbot_plugin.cli`); use `bin/python -m ...`.

pub mod builtin;
pub mod cache;
pub mod integrity;
pub mod lock_list;
pub mod nsjail;
pub mod on_demand;
pub mod resolve;
pub mod wheel_records;

use crate::profile::SdkPin;
use lock_list::LockList;
use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The package index wheels come from unless told otherwise.
pub const DEFAULT_INDEX_URL: &str = "https://pypi.org/simple";

/// Why no interpreter could be provisioned: one sentence naming the step,
/// the file, what was expected, what was found and what to do.
#[derive(Debug, thiserror::Error)]
#[error("provisioning the SDK interpreter: {0}")]
pub struct ProvisionError(pub String);

/// A ready environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provisioned {
    /// `<venv>/bin/python`.
    pub python: PathBuf,
    /// The environment's folder.
    pub venv: PathBuf,
    /// True when an existing environment was verified and reused.
    pub reused: bool,
    /// What the verification found.
    pub sound: integrity::Sound,
}

/// The lock list of `pin`: the built-in one for its requirement, checked
/// against the profile's `sdk.wheel_sha256` when given.
///
/// # Errors
/// When the verifier carries no lock list for the pin, or the lock list's
/// SDK wheel is not the profile's.
pub fn sdk_lock(pin: &SdkPin) -> Result<LockList, ProvisionError> {
    let builtin = on_demand::files_for(&pin.requirement).ok_or_else(|| {
        ProvisionError(format!(
            "sdk.requirement {:?}: expected a pin this verifier carries a lock list for ({}) or has locked \
             on demand, found none; provision it (a run locks it from the index), or pass --python with \
             an interpreter that has it installed",
            pin.requirement,
            builtin::carried()
        ))
    })?;
    let lock = lock_list::parse(&builtin.lock, &builtin.lock_label).map_err(ProvisionError)?;
    let sdk_name = pin
        .requirement
        .split_once("==")
        .map_or("", |(n, _)| n.trim());
    let entry = lock.find(sdk_name).ok_or_else(|| {
        ProvisionError(format!(
            "{}: expected a line for {sdk_name}, found none",
            builtin.lock_label
        ))
    })?;
    if let Some(want) = &pin.wheel_sha256 {
        if *want != entry.sha256 {
            return Err(ProvisionError(format!(
                "sdk.wheel_sha256 is {want}, {} locks {} with sha256 {}; expected one wheel: fix the \
                 profile, or pass --python with an interpreter holding the profile's wheel",
                builtin.lock_label, entry.wheel, entry.sha256
            )));
        }
    }
    Ok(lock)
}

/// Provisions (or reuses) the interpreter of `pin` in the user's cache
/// (`cache::sdk_root()/cache::env_name(..)`), from `index_url`. `progress`
/// receives one line per step (creating, installing N packages, verified,
/// reused).
///
/// # Errors
/// [`ProvisionError`] from [`sdk_lock`], [`cache::sdk_root`] or [`ensure`].
pub fn provision_sdk(
    pin: &SdkPin,
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Provisioned, ProvisionError> {
    if on_demand::files_for(&pin.requirement).is_none() {
        lock_on_demand(pin, index_url, progress)?;
    }
    let lock = sdk_lock(pin)?;
    let root = cache::sdk_root().map_err(ProvisionError)?;
    ensure(
        &root,
        &cache::env_name(&pin.requirement, &lock),
        &lock,
        index_url,
        progress,
    )
}

/// Locks `pin` (an exact pin the verifier carries no lock list for) from
/// `index_url` into the user's cache ([`on_demand`]), with the pip of the
/// newest carried SDK's interpreter (provisioned, or reused, first).
///
/// # Errors
/// When `pin` is not an exact `langbot-plugin==V`, that interpreter cannot
/// be provisioned, or the lock cannot be made.
pub fn lock_on_demand(
    pin: &SdkPin,
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<on_demand::SdkFiles, ProvisionError> {
    let version = pin.version().to_string();
    if version.is_empty() || version.parse::<pep440_rs::Version>().is_err() {
        return Err(ProvisionError(format!(
            "sdk.requirement {:?}: expected an exact langbot-plugin==VERSION pin to lock",
            pin.requirement
        )));
    }
    let host = pip_host(index_url, progress)?;
    on_demand::lock(&version, &host, index_url, progress).map_err(|e| {
        ProvisionError(format!(
            "locking {} on demand: {e}; check the index URL and the network, or pass --python with \
             an interpreter that has it installed",
            pin.requirement
        ))
    })
}

/// The interpreter whose pip asks the index: the newest carried SDK's
/// (provisioned hash-locked, or reused).
///
/// # Errors
/// When it cannot be provisioned.
pub fn pip_host(
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, ProvisionError> {
    let newest = builtin::SDKS.last().expect("a carried SDK");
    let host = SdkPin {
        requirement: newest.requirement.to_string(),
        wheel_sha256: None,
        record_sha256: None,
        extra_distributions: Vec::new(),
        groups: Vec::new(),
    };
    Ok(provision_sdk(&host, index_url, progress)?.python)
}

/// Makes `parent/name` an environment holding exactly `lock` (see the module
/// docs), or reuses it when it already is one.
///
/// # Errors
/// [`ProvisionError`] naming the step that failed: the lock file, the base
/// interpreter, `venv`, pip (with the locked wheels its output names), or the
/// new environment's verification.
pub fn ensure(
    parent: &Path,
    name: &str,
    lock: &LockList,
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Provisioned, ProvisionError> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        ProvisionError(format!("cannot {what} {}: {e}", path.display()))
    };
    std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
    let _held = hold_lock(&parent.join(format!("{name}.lock")), progress)?;
    let venv = parent.join(name);
    let partial_prefix = format!(".{name}.partial-");
    // Under the lock, every partial build of this name was left by a run
    // that died before its rename.
    if let Ok(entries) = std::fs::read_dir(parent) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(&partial_prefix)
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    if venv.exists() {
        match integrity::check(&venv, lock) {
            Ok(sound) => {
                progress(&format!(
                    "reused {} ({} distributions, {} files match their RECORD)",
                    venv.display(),
                    sound.distributions,
                    sound.files_verified
                ));
                return Ok(Provisioned {
                    python: venv.join("bin").join("python"),
                    venv,
                    reused: true,
                    sound,
                });
            }
            Err(why) => {
                progress(&format!(
                    "{} is damaged: {why}; rebuilding it",
                    venv.display()
                ));
                std::fs::remove_dir_all(&venv).map_err(|e| io("remove the damaged", &venv, e))?;
            }
        }
    }
    let base = base_python(lock)?;
    let tmp = tempfile::Builder::new()
        .prefix(&partial_prefix)
        .tempdir_in(parent)
        .map_err(|e| io("create a temporary folder in", parent, e))?;
    let build = tmp.path().join("env");
    progress(&format!(
        "creating {} with {} (built beside it, moved into place once verified)",
        venv.display(),
        base.to_string_lossy()
    ));
    let sound = build_env(&base, &build, tmp.path(), lock, index_url, progress)?;
    std::fs::rename(&build, &venv).map_err(|e| io("move the new environment to", &venv, e))?;
    progress(&format!(
        "verified {} ({} distributions, {} files match their RECORD)",
        venv.display(),
        sound.distributions,
        sound.files_verified
    ));
    Ok(Provisioned {
        python: venv.join("bin").join("python"),
        venv,
        reused: false,
        sound,
    })
}

/// Creates at `build` (missing) an environment of exactly `lock` with the
/// base interpreter `base`: `venv`, pip `--require-hashes --only-binary
/// :all: --no-deps` of the locked wheels from `index_url` (its requirements
/// file written in `scratch`), every distribution outside the lock (pip's
/// own) uninstalled, the lock stamped, and the result verified.
///
/// # Errors
/// [`ProvisionError`] naming the step that failed.
fn build_env(
    base: &std::ffi::OsStr,
    build: &Path,
    scratch: &Path,
    lock: &LockList,
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<integrity::Sound, ProvisionError> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        ProvisionError(format!("cannot {what} {}: {e}", path.display()))
    };
    run(
        clean_python_env(&mut Command::new(base))
            .arg("-m")
            .arg("venv")
            .arg(build),
        "python3 -m venv",
    )
    .map_err(|e| {
        ProvisionError(format!(
            "{e}; on Debian/Ubuntu install the venv module (`apt-get install python3-venv`), or set \
             VCC_BASE_PYTHON to a CPython {} that has it",
            lock.python_tag
        ))
    })?;
    let python = build.join("bin").join("python");
    let requirements = scratch.join("requirements.txt");
    std::fs::write(&requirements, lock.requirements())
        .map_err(|e| io("write", &requirements, e))?;
    progress(&format!(
        "installing {} locked wheels from {index_url} (pip --require-hashes --only-binary :all: --no-deps)",
        lock.entries.len()
    ));
    let installed = run(
        pip(&python)
            .args([
                "install",
                "--require-hashes",
                "--only-binary",
                ":all:",
                "--no-deps",
                "--index-url",
                index_url,
                "-r",
            ])
            .arg(&requirements),
        "pip install",
    );
    if let Err(output) = installed {
        return Err(ProvisionError(explain_pip_failure(&output, lock)));
    }
    let site = integrity::site_packages(build, &lock.python_tag);
    let extra: Vec<String> = integrity::installed(&site)
        .map_err(ProvisionError)?
        .into_keys()
        .filter(|k| lock.find(k).is_none())
        .collect();
    if !extra.is_empty() {
        run(
            pip(&python).args(["uninstall", "--yes"]).args(&extra),
            "pip uninstall",
        )
        .map_err(ProvisionError)?;
    }
    let stamp = build.join(integrity::STAMP);
    std::fs::write(&stamp, lock.canonical()).map_err(|e| io("write", &stamp, e))?;
    let sound = integrity::check(build, lock).map_err(|why| {
        ProvisionError(format!(
            "the new environment is not what the lock list {} says: {why}",
            lock.label
        ))
    })?;
    Ok(sound)
}

/// `sdk --venv PATH`: creates at `path` an environment of exactly the lock
/// of `pin`, as [`ensure`] does in the cache, for a user who wants an
/// interpreter of their own (`--python PATH/bin/python` then passes
/// `sdk-record`'s `environment-locked`). Built in place, so its activation
/// scripts name `path`; removed again when any step fails. An existing
/// environment of exactly the lock is reused; anything else at `path` is
/// left alone and refused.
///
/// # Errors
/// [`ProvisionError`]: `path` exists and is not such an environment, or a
/// step of [`build_env`] failed.
pub fn create_venv(
    pin: &SdkPin,
    path: &Path,
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Provisioned, ProvisionError> {
    let lock = sdk_lock(pin)?;
    let venv = std::path::absolute(path)
        .map_err(|e| ProvisionError(format!("--venv {}: {e}", path.display())))?;
    let occupied = std::fs::read_dir(&venv).map_or(venv.exists(), |mut d| d.next().is_some());
    if occupied {
        return match integrity::check(&venv, &lock) {
            Ok(sound) => {
                progress(&format!("reused {} (already exactly the lock)", venv.display()));
                Ok(Provisioned {
                    python: venv.join("bin").join("python"),
                    venv,
                    reused: true,
                    sound,
                })
            }
            Err(why) => Err(ProvisionError(format!(
                "--venv {}: expected a missing or empty folder, found one that is not an environment of \
                 exactly the lock {} ({why}); it is left as it is: give a new path, or remove it and run again",
                venv.display(),
                lock.label
            ))),
        };
    }
    let base = base_python(&lock)?;
    let scratch = tempfile::tempdir()
        .map_err(|e| ProvisionError(format!("cannot create a temporary folder: {e}")))?;
    progress(&format!(
        "creating {} with {}",
        venv.display(),
        base.to_string_lossy()
    ));
    let _ = std::fs::remove_dir(&venv);
    match build_env(&base, &venv, scratch.path(), &lock, index_url, progress) {
        Ok(sound) => Ok(Provisioned {
            python: venv.join("bin").join("python"),
            venv,
            reused: false,
            sound,
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&venv);
            Err(e)
        }
    }
}

/// Takes the exclusive `flock` of `path` (created if missing), waiting for
/// another holder and saying so.
pub(crate) fn hold_lock(
    path: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<OwnedFd, ProvisionError> {
    let err = |what: &str, e: rustix::io::Errno| {
        ProvisionError(format!(
            "cannot {what} the lock file {}: {}",
            path.display(),
            std::io::Error::from(e)
        ))
    };
    let fd = open(
        path,
        OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| err("open", e))?;
    match flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => return Ok(fd),
        Err(rustix::io::Errno::WOULDBLOCK) => progress(&format!(
            "waiting for another verifier provisioning this interpreter (it holds {})",
            path.display()
        )),
        Err(e) => return Err(err("lock", e)),
    }
    flock(&fd, FlockOperation::LockExclusive).map_err(|e| err("lock", e))?;
    Ok(fd)
}

/// `$VCC_BASE_PYTHON`, else `python3`, checked to be the lock's CPython on
/// the lock's platform.
fn base_python(lock: &LockList) -> Result<OsString, ProvisionError> {
    let base = std::env::var_os("VCC_BASE_PYTHON")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "python3".into());
    let shown = base.to_string_lossy().into_owned();
    let out = clean_python_env(&mut Command::new(&base))
        .args([
            "-I",
            "-c",
            "import sys, platform; print(sys.implementation.name, sys.version_info[0], \
             sys.version_info[1], sys.platform, platform.machine())",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| {
            ProvisionError(format!(
                "base interpreter {shown} ($VCC_BASE_PYTHON, else python3 on PATH): cannot run it ({e}); \
                 expected a CPython {} with the venv module: install one or set VCC_BASE_PYTHON to it, \
                 or pass --python with an interpreter that has the pinned SDK",
                lock.python_tag
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let found: Vec<&str> = text.split_whitespace().collect();
    let found_tag = match found.as_slice() {
        [implementation, major, minor, _, _] if out.status.success() => {
            format!("{}{major}{minor}", if *implementation == "cpython" { "cp" } else { implementation })
        }
        _ => {
            return Err(ProvisionError(format!(
                "base interpreter {shown}: expected it to report its version, it exited with {} and printed {text:?}",
                out.status
            )))
        }
    };
    let (sys, machine) = (found[3], found[4]);
    if found_tag != lock.python_tag || sys != lock.platform.0 || machine != lock.platform.1 {
        let wheels: Vec<&str> = lock
            .entries
            .iter()
            .filter(|e| e.platform_specific())
            .map(|e| e.wheel.as_str())
            .collect();
        return Err(ProvisionError(format!(
            "base interpreter {shown} is {found_tag} on {sys} {machine}; the lock list {} holds wheels for \
             {} on {} {} only, and has no wheel for this interpreter in place of {}; set VCC_BASE_PYTHON \
             to a CPython {} on {} {}, or pass --python with an interpreter that has the pinned SDK \
             (docs/provisioning.md)",
            lock.label,
            lock.python_tag,
            lock.platform.0,
            lock.platform.1,
            wheels.join(", "),
            lock.python_tag,
            lock.platform.0,
            lock.platform.1
        )));
    }
    Ok(base)
}

/// `python -m pip --isolated --no-input --disable-pip-version-check`.
pub(crate) fn pip(python: &Path) -> Command {
    let mut cmd = Command::new(python);
    clean_python_env(&mut cmd).args([
        "-I",
        "-m",
        "pip",
        "--isolated",
        "--no-input",
        "--disable-pip-version-check",
    ]);
    cmd
}

/// Keeps the caller's Python and pip settings out: every `PIP_*` and
/// `PYTHON*` variable and `VIRTUAL_ENV` removed, `PIP_CONFIG_FILE=/dev/null`
/// (pip then reads no configuration file).
pub fn clean_python_env(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("PIP_") || k.starts_with("PYTHON") || k == "VIRTUAL_ENV" {
            cmd.env_remove(&key);
        }
    }
    cmd.env("PIP_CONFIG_FILE", "/dev/null")
}

/// Runs `cmd` to the end, its output captured.
///
/// # Errors
/// `WHAT exited with STATUS: <last lines of its output>`, or that it could
/// not start.
pub(crate) fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot start it: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(15)..].join("\n  ");
    Err(format!("{what} exited with {}:\n  {tail}", out.status))
}

/// pip's failure, with the locked wheels its error lines name.
fn explain_pip_failure(output: &str, lock: &LockList) -> String {
    let named: Vec<String> = lock
        .entries
        .iter()
        .filter(|e| {
            output.lines().any(|l| {
                let lower = l.to_ascii_lowercase();
                (lower.contains("error")
                    || lower.contains("expected sha256")
                    || lower.contains("got"))
                    && lower.contains(&format!("{}==", e.name.to_ascii_lowercase()))
            })
        })
        .map(|e| format!("{} (sha256 {})", e.wheel, e.sha256))
        .collect();
    let which = if named.is_empty() {
        String::new()
    } else {
        format!(
            "; the locked wheel(s) it could not install: {}",
            named.join(", ")
        )
    };
    format!(
        "{output}\nexpected every wheel of {} from the index with its locked sha256{which}; check the index \
         URL and the network, or pass --python with an interpreter that has the pinned SDK",
        lock.label
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(wheel: Option<&str>) -> SdkPin {
        SdkPin {
            requirement: "langbot-plugin==0.6.0b5".into(),
            wheel_sha256: wheel.map(str::to_string),
            record_sha256: None,
            extra_distributions: Vec::new(),
            groups: Vec::new(),
        }
    }

    #[test]
    fn the_builtin_pin_has_a_lock_and_the_profile_wheel_must_match_it() {
        let lock = sdk_lock(&pin(Some(
            "15c5a60765db34e5a0216eab205178fb06c6447d286f648008aa89207e75d667",
        )))
        .unwrap();
        assert!(lock.entries.len() > 50);
        let err = sdk_lock(&pin(Some(&"0".repeat(64)))).unwrap_err().0;
        assert!(
            err.contains("sdk.wheel_sha256")
                && err.contains("langbot_plugin-0.6.0b5-py3-none-any.whl"),
            "{err}"
        );
        let other = SdkPin {
            requirement: "langbot-plugin==9.9".into(),
            wheel_sha256: None,
            record_sha256: None,
            extra_distributions: Vec::new(),
            groups: Vec::new(),
        };
        let err = sdk_lock(&other).unwrap_err().0;
        assert!(
            err.contains("langbot-plugin==0.6.0b5") && err.contains("--python"),
            "{err}"
        );
    }

    #[test]
    fn a_pip_failure_names_the_locked_wheel() {
        let lock = sdk_lock(&pin(None)).unwrap();
        let text = explain_pip_failure(
            "pip install exited with 1:\n  ERROR: No matching distribution found for pydantic_core==2.50.5",
            &lock,
        );
        assert!(
            text.contains("pydantic_core-2.50.5-cp311-cp311-manylinux"),
            "{text}"
        );
    }

    #[test]
    fn a_base_interpreter_for_another_python_is_refused_naming_the_platform_wheels() {
        let lock = lock_list::parse(
            &format!(
                "# python: cp300\n# platform: linux x86_64\nn==1 --hash=sha256:{}  # n-1-cp300-cp300-manylinux_2_17_x86_64.whl\n",
                "a".repeat(64)
            ),
            "t.lock",
        )
        .unwrap();
        let err = base_python(&lock).unwrap_err().0;
        assert!(
            err.contains("for cp300 on linux x86_64 only")
                && err.contains("n-1-cp300-cp300-manylinux_2_17_x86_64.whl")
                && err.contains("VCC_BASE_PYTHON"),
            "{err}"
        );
    }
}
