//! The verifier provisions its own SDK interpreter (docs/provisioning.md):
//! from the package index into a fresh `XDG_CACHE_HOME`, reused when sound,
//! rebuilt when one file of it was changed, and used by a run given neither
//! `--python` nor `PYTHON` (nor `--evidence`). Needs the network to the
//! package index; one test, since each build takes about a minute.

use crate::common;

use common::{
    exit_code, fixture_repo, read_evidence, stderr_text, stdout_text, verifier_without_python,
};
use std::path::{Path, PathBuf};
use verify_coding_candidates::exit;

/// `sdk --print-path` with `cache` as `XDG_CACHE_HOME`: (interpreter, stderr).
fn sdk_print_path(cache: &Path) -> (PathBuf, String) {
    let out = verifier_without_python()
        .env("XDG_CACHE_HOME", cache)
        .args(["sdk", "--print-path"])
        .output()
        .unwrap();
    let err = stderr_text(&out);
    assert_eq!(exit_code(&out), i32::from(exit::SUCCESS), "{err}");
    let stdout = stdout_text(&out);
    let python = PathBuf::from(stdout.lines().last().unwrap_or_default());
    assert!(python.is_file(), "{stdout}\n{err}");
    (python, err)
}

#[test]
fn provisions_into_the_cache_reuses_rebuilds_when_damaged_and_serves_a_run() {
    let cache = tempfile::tempdir().unwrap();
    let sdk_root = cache.path().join("verify-coding-candidates").join("sdk");

    // 1. A fresh cache: created, installed from the lock list, verified.
    let (python, err) = sdk_print_path(cache.path());
    assert!(python.starts_with(&sdk_root), "{}", python.display());
    let venv = python.parent().unwrap().parent().unwrap().to_path_buf();
    assert!(
        venv.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("langbot-plugin-0.6.0b5-"),
        "{}",
        venv.display()
    );
    assert!(err.contains("sdk: creating"), "{err}");
    assert!(err.contains("sdk: installing 59 locked wheels"), "{err}");
    assert!(err.contains("sdk: verified"), "{err}");
    assert!(!err.contains("reused"), "{err}");

    // 2. Again: the same environment, verified and reused, nothing installed.
    let (again, err) = sdk_print_path(cache.path());
    assert_eq!(again, python);
    assert!(err.contains("sdk: reused"), "{err}");
    assert!(!err.contains("installing"), "{err}");

    // 3. One byte of one SDK file changed: detected, never trusted, rebuilt.
    let version_py = venv.join("lib/python3.11/site-packages/langbot_plugin/version.py");
    let genuine = std::fs::read(&version_py).unwrap();
    let mut damaged = genuine.clone();
    damaged.extend_from_slice(b"#");
    std::fs::write(&version_py, &damaged).unwrap();
    let (rebuilt, err) = sdk_print_path(cache.path());
    assert_eq!(rebuilt, python);
    assert!(
        err.contains("is damaged") && err.contains("langbot_plugin/version.py"),
        "{err}"
    );
    assert!(
        err.contains("sdk: installing") && err.contains("sdk: verified"),
        "{err}"
    );
    assert_eq!(std::fs::read(&version_py).unwrap(), genuine);
    let left: Vec<String> = std::fs::read_dir(&sdk_root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial-"))
        .collect();
    assert!(left.is_empty(), "partial builds left: {left:?}");

    // 4. The headline command with neither --python/PYTHON nor --evidence:
    //    the cached interpreter is reused, a fresh evidence directory is made
    //    under the temporary directory and printed last.
    let repo = fixture_repo(&[]);
    let out = verifier_without_python()
        .env("XDG_CACHE_HOME", cache.path())
        .arg("--repo")
        .arg(&repo.root)
        .args(["--only", "sdk-record"])
        .output()
        .unwrap();
    let err = stderr_text(&out);
    assert_eq!(
        exit_code(&out),
        i32::from(exit::SUCCESS),
        "{err}\n{}",
        stdout_text(&out)
    );
    assert!(err.contains("sdk: reused"), "{err}");
    let stdout = stdout_text(&out);
    let dir = PathBuf::from(stdout.lines().last().unwrap());
    assert!(dir.starts_with(std::env::temp_dir()), "{stdout}");
    let ev = read_evidence(&dir);
    assert_eq!(ev["sdk"]["python"], python.display().to_string());
    assert_eq!(common::gate_result(&ev, "sdk-record"), "pass");
    common::make_writable(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `sdk --venv PATH` (issue 36): an environment of exactly the lock at the
/// user's own path, built in place; `--python PATH/bin/python` then passes
/// `sdk-record/environment-locked`. Run again on it: reused. A folder that
/// is something else is refused (exit 2) and left as it is.
#[test]
fn sdk_venv_makes_an_environment_of_exactly_the_lock_that_passes_environment_locked() {
    let home = tempfile::tempdir().unwrap();
    let venv = home.path().join("my-venv");
    let make = |path: &Path| {
        verifier_without_python()
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .arg("sdk")
            .arg("--venv")
            .arg(path)
            .output()
            .unwrap()
    };
    let out = make(&venv);
    let err = stderr_text(&out);
    assert_eq!(exit_code(&out), i32::from(exit::SUCCESS), "{err}");
    assert!(err.contains("sdk: installing 59 locked wheels"), "{err}");
    let python = venv.join("bin/python");
    assert!(
        stdout_text(&out).ends_with(&format!("{}\n", python.display())),
        "{}",
        stdout_text(&out)
    );
    let activate = std::fs::read_to_string(venv.join("bin/activate")).unwrap();
    assert!(
        activate.contains(&venv.display().to_string()),
        "built in place: {activate}"
    );
    assert!(
        !home.path().join("cache").exists(),
        "the cache is not used for --venv"
    );

    let again = make(&venv);
    assert_eq!(exit_code(&again), i32::from(exit::SUCCESS));
    assert!(
        stderr_text(&again).contains("sdk: reused"),
        "{}",
        stderr_text(&again)
    );

    let repo = fixture_repo(&[]);
    let (_keep, dir) = common::evidence_dir();
    let out = verifier_without_python()
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(&python)
        .args(["--only", "sdk-record"])
        .output()
        .unwrap();
    let ev = read_evidence(&dir);
    let locked = common::check(&ev, "sdk-record", "environment-locked", None);
    assert_eq!(locked["result"], "pass", "{locked}");
    assert_eq!(
        exit_code(&out),
        i32::from(exit::SUCCESS),
        "{}",
        stdout_text(&out)
    );

    // Something else at PATH: refused, untouched.
    let other = home.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("keep.txt"), b"mine\n").unwrap();
    let out = make(&other);
    assert_eq!(exit_code(&out), i32::from(exit::CANNOT_RUN));
    assert!(
        stderr_text(&out).contains("expected a missing or empty folder"),
        "{}",
        stderr_text(&out)
    );
    assert_eq!(std::fs::read(other.join("keep.txt")).unwrap(), b"mine\n");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);
}
