//! The command lines and environment of the wheelhouse's two pip steps, and
//! how pip is kept from every configuration but the run's own.
//!
//! pip reads options from three kinds of place besides its command line
//! (pip 26 `pip/_internal/configuration.py`, `Configuration.iter_config_files`
//! and `_load_config_files`): `PIP_*` environment variables, the files
//! `PIP_CONFIG_FILE` names, and the global, user and *site* configuration
//! files, the site one being `<sys.prefix>/pip.conf`, inside the
//! interpreter's own venv. `--isolated` drops the variables and the user
//! file only: a `pip.conf` in the venv still applies (a `find-links` or
//! `no-index` there replaces the index). `PIP_CONFIG_FILE=/dev/null`
//! (`os.devnull`) makes pip skip loading every configuration file, so the
//! steps run with `--isolated`, that one variable, and no other `PIP_*`
//! variable: the options below are all pip reads. The variable is inherited
//! by the pip subprocess that installs an sdist's build requirements, so it
//! is isolated the same way.
//!
//! 1. Resolution: `pip install --dry-run --ignore-installed --report FILE`
//!    names every distribution of the closure with the URL it comes from
//!    (`download_info.url`) and the hash the index published for it
//!    (`download_info.archive_info.hashes`); `--only-binary :all:` with
//!    `--no-binary <project>` for each project the profile allows building,
//!    so any other project with no wheel fails here, before anything is
//!    built (`-vv` makes pip log the sdists it skipped, which the refusal
//!    names).
//! 2. Download: `pip wheel --no-deps --require-hashes` of exactly those URLs
//!    pinned to those hashes (`name @ URL --hash=sha256:HEX`), so the files
//!    are the ones resolved, and an sdist is built into a wheel here.

use std::collections::BTreeMap;
use std::path::Path;

/// The variable naming pip's configuration file; `/dev/null` turns every
/// configuration file off.
pub const CONFIG_FILE_ENV: &str = "PIP_CONFIG_FILE";

/// `os.devnull` on Linux.
pub const DEV_NULL: &str = "/dev/null";

/// `env` without any `PIP_*` variable and with `PIP_CONFIG_FILE=/dev/null`.
pub fn isolated_env(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = env
        .iter()
        .filter(|(k, _)| !k.to_ascii_uppercase().starts_with("PIP_"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.insert(CONFIG_FILE_ENV.into(), DEV_NULL.into());
    out
}

/// Options both steps share: the interpreter's pip, isolated, quiet about
/// its own version, never prompting, no cache, the one index, and the
/// format rule (wheels only, but the allowed projects from their sdist).
fn common(subcommand: &str, index_url: &str, allow_source_builds: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "-I",
        "-m",
        "pip",
        "--isolated",
        subcommand,
        "--disable-pip-version-check",
        "--no-input",
        "--no-cache-dir",
        "--progress-bar",
        "off",
        "--index-url",
        index_url,
        "--only-binary",
        ":all:",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for project in allow_source_builds {
        v.extend(["--no-binary".into(), project.clone()]);
    }
    v
}

/// Arguments (after the interpreter) of the resolution step: the closure of
/// `requirements` (a requirements file), reported as JSON into `report`.
pub fn resolve_args(
    index_url: &str,
    allow_source_builds: &[String],
    requirements: &Path,
    report: &Path,
) -> Vec<String> {
    let mut v = common("install", index_url, allow_source_builds);
    v.extend(
        ["--dry-run", "--ignore-installed", "-vv", "--report"]
            .iter()
            .map(|s| s.to_string()),
    );
    v.push(report.display().to_string());
    v.push("-r".into());
    v.push(requirements.display().to_string());
    v
}

/// Arguments (after the interpreter) of the download step: exactly the
/// pinned URLs of `pinned` (a requirements file with `--hash`), one wheel
/// each into `wheel_dir`.
pub fn download_args(
    index_url: &str,
    allow_source_builds: &[String],
    pinned: &Path,
    wheel_dir: &Path,
) -> Vec<String> {
    let mut v = common("wheel", index_url, allow_source_builds);
    v.extend(
        ["--no-deps", "--require-hashes", "--wheel-dir"]
            .iter()
            .map(|s| s.to_string()),
    );
    v.push(wheel_dir.display().to_string());
    v.push("-r".into());
    v.push(pinned.display().to_string());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pip_variable_is_dropped_and_every_configuration_file_is_off() {
        let env = BTreeMap::from([
            ("PATH".to_string(), "/usr/bin".to_string()),
            ("PIP_FIND_LINKS".to_string(), "/opt/wheels".to_string()),
            (
                "PIP_INDEX_URL".to_string(),
                "https://evil.example".to_string(),
            ),
            ("pip_no_index".to_string(), "1".to_string()),
            ("PIP_CONFIG_FILE".to_string(), "/etc/pip.conf".to_string()),
        ]);
        assert_eq!(
            isolated_env(&env),
            BTreeMap::from([
                ("PATH".to_string(), "/usr/bin".to_string()),
                ("PIP_CONFIG_FILE".to_string(), "/dev/null".to_string()),
            ])
        );
    }

    #[test]
    fn both_steps_are_isolated_use_the_one_index_and_take_only_wheels_but_the_allowed() {
        let allow = vec!["docopt".to_string()];
        let r = resolve_args(
            "https://mirror.example/simple",
            &allow,
            Path::new("/r/req.txt"),
            Path::new("/r/report.json"),
        );
        let d = download_args(
            "https://mirror.example/simple",
            &allow,
            Path::new("/r/pinned.txt"),
            Path::new("/r/out"),
        );
        for args in [&r, &d] {
            let joined = args.join(" ");
            assert!(joined.starts_with("-I -m pip --isolated "), "{joined}");
            assert!(
                joined.contains("--index-url https://mirror.example/simple"),
                "{joined}"
            );
            assert!(
                joined.contains("--only-binary :all: --no-binary docopt"),
                "{joined}"
            );
            assert!(!joined.contains("--extra-index-url") && !joined.contains("--find-links"));
        }
        assert!(r.join(" ").contains("install --disable-pip-version-check"));
        assert!(r
            .join(" ")
            .ends_with("--report /r/report.json -r /r/req.txt"));
        assert!(r.contains(&"--dry-run".to_string()));
        assert!(d
            .join(" ")
            .ends_with("--no-deps --require-hashes --wheel-dir /r/out -r /r/pinned.txt"));
    }
}
