//! The pip configuration the SDK's own installer reads: its `pip install
//! --target` runs in the verified interpreter with an environment the SDK
//! clears (so no `PIP_*` variable), and adds only `-i <index>`; but pip
//! still reads its configuration files, among them the *site* file inside
//! the interpreter's venv (`<sys.prefix>/pip.conf`) and the global ones
//! (`/etc/pip.conf`, `/etc/xdg/pip/pip.conf`). A `find-links`, `no-index`
//! or `extra-index-url` there is not replaced by `-i`: the preparations (and
//! the runtime of `discovery-rpc`) would install from somewhere other than
//! the wheelhouse. `pip config debug`, run the way the SDK runs pip, lists
//! every file pip would read and what each sets; the `pip-config` check
//! allows only [`HARMLESS_OPTIONS`] and refuses every other option, in any
//! section: a denylist of source options is not enough (`[install]
//! requirement = FILE` adds a requirements file, and a requirements file can
//! name its own `--find-links`, which then brings in a forged wheel of a
//! wheelhouse name and version with a higher build tag).

use crate::evidence::Check;
use crate::process::{self, ChildSpec};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Options that decide where pip takes packages from and that the SDK's
/// `-i` does not replace (`index-url` it does: a command-line option wins
/// over a configuration file's). Named first in the check's sentence.
pub const SOURCE_OPTIONS: &[&str] = &["extra-index-url", "find-links", "no-index"];

/// The only options a pip configuration file the SDK's installer reads may
/// set, in any section: they change how pip talks and reports, not what it
/// installs or from where. `index-url` is replaced by the SDK's own `-i`
/// (a command-line option wins over a configuration file's); `cert` and
/// `client-cert` only matter for HTTPS, which an install from the
/// `file://` wheelhouse does not use.
pub const HARMLESS_OPTIONS: &[&str] = &[
    "timeout",
    "retries",
    "progress-bar",
    "disable-pip-version-check",
    "no-color",
    "quiet",
    "verbose",
    "no-input",
    "root-user-action",
    "index-url",
    "cert",
    "client-cert",
];

/// One configuration file pip would read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConfigFile {
    /// `global`, `site`, `user`, `env` or `env_var` (pip's own kinds).
    pub kind: String,
    /// The file.
    pub path: String,
    /// `section.option` and value, as pip lists them.
    pub values: Vec<(String, String)>,
}

/// Reads `pip config debug` output: `kind:` lines, then indented
/// `PATH, exists: True|False` lines, then deeper-indented `key: value`
/// lines. Only existing files are returned.
///
/// # Errors
/// When no kind line is found (not pip's listing).
pub fn parse_debug(text: &str) -> Result<Vec<ConfigFile>, String> {
    let mut files: Vec<ConfigFile> = Vec::new();
    let mut kind: Option<String> = None;
    let mut current_exists = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if indent == 0 {
            kind = Some(t.trim_end_matches(':').to_string());
            current_exists = false;
            continue;
        }
        let Some(k) = &kind else { continue };
        if let Some((path, exists)) = t.rsplit_once(", exists: ") {
            current_exists = exists == "True";
            if current_exists {
                files.push(ConfigFile {
                    kind: k.clone(),
                    path: path.to_string(),
                    values: Vec::new(),
                });
            }
        } else if current_exists {
            if let (Some(f), Some((key, value))) = (files.last_mut(), t.split_once(": ")) {
                f.values.push((key.to_string(), value.to_string()));
            }
        }
    }
    if kind.is_none() {
        return Err(format!(
            "expected `pip config debug` to list pip's configuration files, found {:?}",
            text.chars().take(200).collect::<String>()
        ));
    }
    Ok(files)
}

/// Runs `python -I -m pip config debug` in `env` (the allowlisted one the
/// SDK's installer also gets), logging to `log_stem`.
///
/// # Errors
/// When pip cannot run or its listing cannot be read.
pub fn observe(
    python: &Path,
    cwd: &Path,
    env: BTreeMap<String, String>,
    log_stem: &Path,
) -> Result<Vec<ConfigFile>, String> {
    let out = process::run(&ChildSpec {
        program: python.to_path_buf(),
        args: ["-I", "-m", "pip", "config", "debug"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        cwd: cwd.to_path_buf(),
        env,
        timeout: Duration::from_secs(60),
        log_stem: log_stem.to_path_buf(),
        stdin: None,
    })
    .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "`{} -I -m pip config debug` {}: {}",
            python.display(),
            out.describe(),
            out.tail(3)
        ));
    }
    parse_debug(&out.stdout_text())
}

/// The `pip-config` check from what was observed: pure.
pub fn check(observed: &Result<Vec<ConfigFile>, String>) -> Check {
    let files = match observed {
        Ok(f) => f,
        Err(e) => {
            return Check::fail(
                "pip-config",
                None,
                format!("not observed: the pip configuration the SDK's installer reads: {e}"),
            )
        }
    };
    let redirecting: Vec<String> = files
        .iter()
        .flat_map(|f| {
            f.values
                .iter()
                .filter(|(k, _)| {
                    let option = k.rsplit('.').next().unwrap_or(k);
                    !HARMLESS_OPTIONS.contains(&option)
                })
                .map(move |(k, v)| {
                    let option = k.rsplit('.').next().unwrap_or(k);
                    let what = if SOURCE_OPTIONS.contains(&option) {
                        "where packages come from"
                    } else {
                        "an option outside the harmless list"
                    };
                    format!("{} ({}) sets {k} = {v} ({what})", f.path, f.kind)
                })
        })
        .collect();
    let listed: Vec<String> = files
        .iter()
        .map(|f| format!("{} ({})", f.path, f.kind))
        .collect();
    let observed = json!({ "files": files });
    if redirecting.is_empty() {
        Check::pass(
            "pip-config",
            None,
            format!(
                "no pip configuration file the SDK's installer reads sets an option beyond the harmless ones \
                 ({}) ({}); its `-i` names the only source",
                HARMLESS_OPTIONS.join(", "),
                if listed.is_empty() {
                    "none exists".to_string()
                } else {
                    format!("read: {}", listed.join(", "))
                }
            ),
        )
    } else {
        Check::fail(
            "pip-config",
            None,
            format!(
                "expected no pip configuration file the SDK's installer reads to set an option beyond the \
                 harmless ones ({}), found: {}; the SDK runs the interpreter's pip with its own `-i` only, \
                 which none of these yields to, so its installs could take files that are not the \
                 wheelhouse's (an `[install] requirement` file can name its own `--find-links`): remove the \
                 setting (a `pip.conf` inside the interpreter's venv is part of the interpreter under review)",
                HARMLESS_OPTIONS.join(", "),
                redirecting.join("; ")
            ),
        )
    }
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    /// pip 26's `pip config debug` on this machine's copy of the SDK venv
    /// with a hostile `pip.conf` in it.
    const HOSTILE: &str = "\
env_var:
env:
global:
  /etc/xdg/pip/pip.conf, exists: False
  /etc/pip.conf, exists: True
    global.cert: /etc/ssl/certs/ca-certificates.crt
site:
  /tmp/v/pip.conf, exists: True
    global.no-index: true
    global.find-links: /tmp/forged
user:
  /h/.pip/pip.conf, exists: False
  /h/.config/pip/pip.conf, exists: False
";

    #[test]
    fn a_site_pip_conf_that_redirects_installs_fails_naming_file_and_options() {
        let files = parse_debug(HOSTILE).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[1].kind, "site");
        assert_eq!(
            files[1].values,
            [
                ("global.no-index".to_string(), "true".to_string()),
                ("global.find-links".to_string(), "/tmp/forged".to_string())
            ]
        );
        let c = check(&Ok(files));
        assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
        for needle in [
            "/tmp/v/pip.conf (site) sets global.no-index = true",
            "/tmp/v/pip.conf (site) sets global.find-links = /tmp/forged",
        ] {
            assert!(c.detail.contains(needle), "{needle}: {}", c.detail);
        }
        assert!(!c.detail.contains("global.cert"), "{}", c.detail);
    }

    #[test]
    fn a_configuration_that_names_no_source_passes_and_an_unreadable_one_fails() {
        let clean = HOSTILE.replace("  /tmp/v/pip.conf, exists: True\n    global.no-index: true\n    global.find-links: /tmp/forged\n", "");
        let c = check(&parse_debug(&clean));
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
        assert!(c.detail.contains("/etc/pip.conf (global)"), "{}", c.detail);
        let c = check(&parse_debug(""));
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.starts_with("not observed"), "{}", c.detail);
        // An install-section option counts as much as a global one.
        let files = vec![ConfigFile {
            kind: "global".into(),
            path: "/etc/pip.conf".into(),
            values: vec![("install.extra-index-url".into(), "https://x".into())],
        }];
        assert_eq!(check(&Ok(files)).result, CheckResult::Fail);
        // `-i` replaces a configured index-url: not a finding.
        let files = vec![ConfigFile {
            kind: "global".into(),
            path: "/etc/pip.conf".into(),
            values: vec![("global.index-url".into(), "https://mirror".into())],
        }];
        assert_eq!(check(&Ok(files)).result, CheckResult::Pass);
    }

    /// Breaker finding F2: `[install] requirement = FILE` names no source
    /// itself (the requirements file names its own `--find-links`), so a
    /// denylist of source options let it through; the allowlist refuses
    /// every option but the harmless ones, in any section.
    #[test]
    fn only_harmless_options_pass_and_an_install_requirement_file_fails_named() {
        let conf = |values: &[(&str, &str)]| {
            vec![ConfigFile {
                kind: "site".into(),
                path: "/tmp/v/pip.conf".into(),
                values: values
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }]
        };
        let c = check(&Ok(conf(&[("install.requirement", "/tmp/req.txt")])));
        assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
        assert!(
            c.detail.contains(
                "/tmp/v/pip.conf (site) sets install.requirement = /tmp/req.txt (an option outside the harmless list)"
            ),
            "{}",
            c.detail
        );
        for (k, v) in [
            ("install.constraint", "/tmp/c.txt"),
            ("install.pre", "true"),
            ("global.trusted-host", "evil"),
            ("install.prefer-binary", "true"),
        ] {
            assert_eq!(check(&Ok(conf(&[(k, v)]))).result, CheckResult::Fail, "{k}");
        }
        let harmless = conf(&[
            ("global.timeout", "60"),
            ("global.retries", "2"),
            ("install.progress-bar", "off"),
            ("global.disable-pip-version-check", "true"),
            ("global.no-color", "true"),
            ("global.cert", "/etc/ssl/certs/ca-certificates.crt"),
        ]);
        let c = check(&Ok(harmless));
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    }
}
