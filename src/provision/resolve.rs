//! The SDK a candidate will really run with: its `langbot-plugin`
//! requirement (from its `requirements.txt`) resolved as the installer
//! resolves it today.
//!
//! - an exact pin (`==V`) resolves to itself;
//! - a range, an unpinned requirement, or none at all (the host then
//!   provides the SDK, and a new host installs the newest) resolves to the
//!   newest release it accepts: asked of the package index with
//!   `pip install --dry-run --report` (one pip call per distinct specifier,
//!   [`ask_index`]), or, when the index cannot be asked, the newest version
//!   the verifier carries a lock list for that it accepts ([`newest_accepted`],
//!   PEP 440's pre-release rule as pip applies it), and the reason says so.
//!
//! [`declared`] and [`resolve_with`] are pure; [`ask_index`] runs pip.

use pep440_rs::{Operator, Version, VersionSpecifiers};
use pep508_rs::{Requirement, VerbatimUrl, VersionOrUrl};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::str::FromStr;

/// The SDK's distribution name.
pub const SDK: &str = "langbot-plugin";

/// What a candidate declares about the SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declared {
    /// `langbot-plugin==V`.
    Pinned(Version),
    /// Any other specifier set (`>=0.7.3,<0.8`), as PEP 440 normalises it.
    Range(VersionSpecifiers),
    /// `langbot-plugin` without a specifier.
    Unpinned,
    /// No `langbot-plugin` line (`has_requirements`: a requirements.txt
    /// without one; false: no requirements.txt at all).
    Absent {
        /// Whether the candidate has a requirements.txt.
        has_requirements: bool,
    },
}

impl Declared {
    /// The specifier pip is asked about (`>=0.7.3,<0.8`; empty for
    /// unpinned or absent; `==V` for a pin).
    pub fn specifier(&self) -> String {
        match self {
            Declared::Pinned(v) => format!("=={v}"),
            Declared::Range(s) => s.to_string().split_whitespace().collect(),
            Declared::Unpinned | Declared::Absent { .. } => String::new(),
        }
    }

    /// The specifier set, `None` for "any version".
    fn specifiers(&self) -> Option<VersionSpecifiers> {
        match self {
            Declared::Pinned(v) => VersionSpecifiers::from_str(&format!("=={v}")).ok(),
            Declared::Range(s) => Some(s.clone()),
            Declared::Unpinned | Declared::Absent { .. } => None,
        }
    }
}

/// What `line` (the candidate's `langbot-plugin` requirement line, `None`
/// when it has none) declares.
///
/// # Errors
/// A sentence when the line is not a PEP 508 requirement on versions (a URL
/// requirement names no release).
pub fn declared(line: Option<&str>, has_requirements: bool) -> Result<Declared, String> {
    let Some(line) = line else {
        return Ok(Declared::Absent { has_requirements });
    };
    let req = Requirement::<VerbatimUrl>::from_str(line)
        .map_err(|e| format!("`{line}` is not a PEP 508 requirement ({e})"))?;
    match req.version_or_url {
        None => Ok(Declared::Unpinned),
        Some(VersionOrUrl::Url(_)) => Err(format!(
            "`{line}` names a URL, not a release of {SDK}; expected a version specifier"
        )),
        Some(VersionOrUrl::VersionSpecifier(specs)) => {
            let list: Vec<_> = specs.iter().collect();
            match list.as_slice() {
                [] => Ok(Declared::Unpinned),
                [one] if *one.operator() == Operator::Equal => {
                    Ok(Declared::Pinned(one.version().clone()))
                }
                _ => Ok(Declared::Range(specs)),
            }
        }
    }
}

/// The newest of `versions` that `specs` accepts (`None`: any), by the rule
/// pip applies (`packaging`'s `SpecifierSet.filter` with `prereleases=None`):
/// pre-releases only when a specifier names one, or when no final release
/// is accepted.
pub fn newest_accepted(specs: Option<&VersionSpecifiers>, versions: &[Version]) -> Option<Version> {
    let accepted: Vec<&Version> = versions
        .iter()
        .filter(|v| specs.is_none_or(|s| s.contains(v)))
        .collect();
    let names_pre = specs.is_some_and(|s| s.iter().any(|x| x.any_prerelease()));
    let finals: Vec<&Version> = accepted
        .iter()
        .copied()
        .filter(|v| !v.any_prerelease())
        .collect();
    let pool = if names_pre || finals.is_empty() {
        accepted
    } else {
        finals
    };
    pool.into_iter().max().cloned()
}

/// Where a resolved version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The candidate pins it.
    Pin,
    /// The package index's answer.
    Index,
    /// The index could not be asked: the newest carried version accepted.
    Offline,
}

impl Source {
    /// One word, as the evidence writes it.
    pub fn word(self) -> &'static str {
        match self {
            Source::Pin => "pin",
            Source::Index => "index",
            Source::Offline => "offline",
        }
    }
}

/// One candidate's resolved SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The version it will run with.
    pub version: Version,
    /// Where that came from.
    pub source: Source,
    /// One line: why (see [`reason`]).
    pub reason: String,
}

/// The reason text for `declared` resolved to `version` from `source`;
/// `offline_why` says why the index was not asked (offline only).
pub fn reason(declared: &Declared, version: &Version, source: Source, offline_why: &str) -> String {
    let what = match declared {
        Declared::Pinned(v) => return format!("pinned =={v}"),
        Declared::Range(s) => format!("range {}", declared_text(s)),
        Declared::Unpinned => "unpinned".to_string(),
        Declared::Absent {
            has_requirements: true,
        } => "no langbot-plugin requirement (the host provides the SDK)".to_string(),
        Declared::Absent {
            has_requirements: false,
        } => "no requirements.txt (the host provides the SDK)".to_string(),
    };
    match (source, declared) {
        (Source::Offline, Declared::Range(_)) => format!(
            "{what}: offline ({offline_why}): {version}, the newest carried version the range accepts"
        ),
        (Source::Offline, _) => format!(
            "{what}: offline ({offline_why}): {version}, the newest carried version"
        ),
        (_, Declared::Range(_)) => format!("{what}: newest accepted {version} (index)"),
        _ => format!("{what}: pip installs {version} today"),
    }
}

fn declared_text(s: &VersionSpecifiers) -> String {
    s.to_string().split_whitespace().collect()
}

/// Resolves `declared`: a pin to itself; anything else by `index` (the
/// newest release it accepts, asked with [`Declared::specifier`]), else,
/// when `index` answers `Err(why)`, the newest of `carried` it accepts.
///
/// # Errors
/// When the index cannot be asked and no carried version is accepted.
pub fn resolve_with(
    declared: &Declared,
    index: &mut dyn FnMut(&str) -> Result<Version, String>,
    carried: &[Version],
) -> Result<Resolved, String> {
    if let Declared::Pinned(v) = declared {
        return Ok(Resolved {
            version: v.clone(),
            source: Source::Pin,
            reason: reason(declared, v, Source::Pin, ""),
        });
    }
    match index(&declared.specifier()) {
        Ok(v) => Ok(Resolved {
            reason: reason(declared, &v, Source::Index, ""),
            version: v,
            source: Source::Index,
        }),
        Err(why) => {
            let v = newest_accepted(declared.specifiers().as_ref(), carried).ok_or_else(|| {
                format!(
                    "{SDK}{}: the index could not be asked ({why}) and no version this verifier \
                     carries a lock list for is accepted; run with the index reachable",
                    declared.specifier()
                )
            })?;
            Ok(Resolved {
                reason: reason(declared, &v, Source::Offline, &why),
                version: v,
                source: Source::Offline,
            })
        }
    }
}

/// A memo over `ask`: one call per distinct specifier.
pub fn memo<'a>(
    mut ask: impl FnMut(&str) -> Result<Version, String> + 'a,
) -> impl FnMut(&str) -> Result<Version, String> + 'a {
    let mut seen: BTreeMap<String, Result<Version, String>> = BTreeMap::new();
    move |spec: &str| {
        seen.entry(spec.to_string())
            .or_insert_with(|| ask(spec))
            .clone()
    }
}

/// The versions the verifier carries a lock list for.
pub fn carried_versions() -> Vec<Version> {
    super::builtin::SDKS
        .iter()
        .filter_map(|s| s.requirement.split_once("=="))
        .filter_map(|(_, v)| Version::from_str(v.trim()).ok())
        .collect()
}

/// Asks the index at `index_url`, with `python`'s pip, which release of
/// `langbot-plugin<specifier>` it would install today:
/// `pip install --dry-run --ignore-installed --no-deps --only-binary :all:
/// --report -`, no configuration file read (`PIP_CONFIG_FILE=/dev/null`).
///
/// # Errors
/// A sentence when pip cannot run, fails (index unreachable, nothing
/// accepted), or its report names no `langbot-plugin`.
pub fn ask_index(python: &Path, index_url: &str, specifier: &str) -> Result<Version, String> {
    let mut cmd = Command::new(python);
    super::clean_python_env(&mut cmd)
        .args([
            "-I",
            "-m",
            "pip",
            "--isolated",
            "--no-input",
            "--disable-pip-version-check",
            "--timeout",
            "5",
            "--retries",
            "0",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--quiet",
            "--report",
            "-",
            "--index-url",
            index_url,
        ])
        .arg(format!("{SDK}{specifier}"))
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {} -m pip: {e}", python.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        return Err(format!("pip exited with {}: {last}", out.status));
    }
    version_from_report(&String::from_utf8_lossy(&out.stdout))
}

/// The `langbot-plugin` version of a pip installation report.
///
/// # Errors
/// When the text is not a report or holds no `langbot-plugin`.
pub fn version_from_report(text: &str) -> Result<Version, String> {
    let report: serde_json::Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("pip's report is not JSON ({e})"))?;
    report["install"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| {
            i["metadata"]["name"]
                .as_str()
                .is_some_and(|n| super::lock_list::normalize_name(n) == SDK)
        })
        .and_then(|i| i["metadata"]["version"].as_str())
        .and_then(|v| Version::from_str(v).ok())
        .ok_or_else(|| format!("pip's report names no {SDK} release to install"))
}

/// The first requirement line of `text` naming `langbot-plugin` (PEP 508),
/// as written (stripped).
pub fn sdk_line(text: &str) -> Option<String> {
    crate::manifest::strip_bom(text)
        .lines()
        .map(str::trim)
        .find_map(|line| {
            if line.is_empty() || line.starts_with('#') || line.starts_with('-') {
                return None;
            }
            let req = Requirement::<VerbatimUrl>::from_str(line).ok()?;
            (super::lock_list::normalize_name(req.name.as_ref()) == SDK).then(|| line.to_string())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_line_is_found_by_its_normalised_name() {
        assert_eq!(
            sdk_line("# c\n-r other.txt\nrequests\nLangBot_Plugin == 0.6.1\n").as_deref(),
            Some("LangBot_Plugin == 0.6.1")
        );
        assert_eq!(sdk_line("requests\n"), None);
    }

    fn v(s: &str) -> Version {
        Version::from_str(s).unwrap()
    }

    fn carried() -> Vec<Version> {
        vec![v("0.6.0b5"), v("0.6.1"), v("0.7.18")]
    }

    fn offline(_: &str) -> Result<Version, String> {
        Err("--offline".into())
    }

    #[test]
    fn lines_are_read_as_pins_ranges_unpinned_or_absent() {
        assert_eq!(
            declared(Some("langbot-plugin==0.6.1"), true).unwrap(),
            Declared::Pinned(v("0.6.1"))
        );
        assert_eq!(
            declared(Some("LangBot_Plugin"), true).unwrap(),
            Declared::Unpinned
        );
        let range = declared(Some("langbot-plugin >= 0.7.3, < 0.8"), true).unwrap();
        assert_eq!(range.specifier(), ">=0.7.3,<0.8");
        assert_eq!(
            declared(None, false).unwrap(),
            Declared::Absent {
                has_requirements: false
            }
        );
        assert!(declared(Some("langbot-plugin @ https://x/y.whl"), true)
            .unwrap_err()
            .contains("URL"));
    }

    #[test]
    fn a_pin_resolves_to_itself_without_asking_the_index() {
        let mut asked = 0;
        let r = resolve_with(
            &Declared::Pinned(v("0.6.1")),
            &mut |_| {
                asked += 1;
                Ok(v("9.9"))
            },
            &carried(),
        )
        .unwrap();
        assert_eq!((r.version, r.source, asked), (v("0.6.1"), Source::Pin, 0));
        assert_eq!(r.reason, "pinned ==0.6.1");
    }

    #[test]
    fn ranges_unpinned_and_absent_take_the_index_answer_and_say_why() {
        let mut asked = Vec::new();
        let mut index = |spec: &str| {
            asked.push(spec.to_string());
            Ok(v("0.7.19"))
        };
        let range = declared(Some("langbot-plugin>=0.7.3,<0.8"), true).unwrap();
        let r = resolve_with(&range, &mut index, &carried()).unwrap();
        assert_eq!(r.version, v("0.7.19"));
        assert_eq!(
            r.reason,
            "range >=0.7.3,<0.8: newest accepted 0.7.19 (index)"
        );
        let r = resolve_with(&Declared::Unpinned, &mut index, &carried()).unwrap();
        assert_eq!(r.reason, "unpinned: pip installs 0.7.19 today");
        assert_eq!(r.source, Source::Index);
        let r = resolve_with(
            &Declared::Absent {
                has_requirements: false,
            },
            &mut index,
            &carried(),
        )
        .unwrap();
        assert_eq!(
            r.reason,
            "no requirements.txt (the host provides the SDK): pip installs 0.7.19 today"
        );
        assert_eq!(asked, [">=0.7.3,<0.8", "", ""]);
    }

    #[test]
    fn offline_the_newest_carried_version_accepted_is_taken_and_said() {
        let range = declared(Some("langbot-plugin>=0.6.1,<0.7"), true).unwrap();
        let r = resolve_with(&range, &mut offline, &carried()).unwrap();
        assert_eq!((r.version.clone(), r.source), (v("0.6.1"), Source::Offline));
        assert_eq!(
            r.reason,
            "range >=0.6.1,<0.7: offline (--offline): 0.6.1, the newest carried version the range accepts"
        );
        let r = resolve_with(&Declared::Unpinned, &mut offline, &carried()).unwrap();
        assert_eq!(r.version, v("0.7.18"));
        assert!(
            r.reason.starts_with("unpinned: offline (--offline)"),
            "{}",
            r.reason
        );
        // Nothing carried is accepted: an error that names the specifier.
        let newer = declared(Some("langbot-plugin>=0.8"), true).unwrap();
        let err = resolve_with(&newer, &mut offline, &carried()).unwrap_err();
        assert!(
            err.contains("langbot-plugin>=0.8") && err.contains("--offline"),
            "{err}"
        );
    }

    #[test]
    fn pre_releases_count_only_when_the_specifier_names_one_or_nothing_final_is_accepted() {
        let versions = [v("0.6.0b5"), v("0.6.1"), v("0.7.0rc1")];
        let spec = |s: &str| VersionSpecifiers::from_str(s).unwrap();
        // Unpinned: the newest final, not the newer release candidate.
        assert_eq!(newest_accepted(None, &versions), Some(v("0.6.1")));
        assert_eq!(
            newest_accepted(Some(&spec(">=0.6")), &versions),
            Some(v("0.6.1"))
        );
        // A specifier naming a pre-release admits pre-releases.
        assert_eq!(
            newest_accepted(Some(&spec(">=0.6.0b1")), &versions),
            Some(v("0.7.0rc1"))
        );
        // Only a pre-release is accepted: it is taken.
        assert_eq!(
            newest_accepted(Some(&spec("<0.6.1")), &versions),
            Some(v("0.6.0b5"))
        );
        assert_eq!(newest_accepted(Some(&spec(">=1")), &versions), None);
    }

    #[test]
    fn one_index_call_per_distinct_specifier() {
        let mut calls = 0;
        {
            let mut ask = memo(|_s: &str| {
                calls += 1;
                Ok(v("0.7.18"))
            });
            for spec in ["", ">=0.7.3,<0.8", "", ">=0.7.3,<0.8"] {
                ask(spec).unwrap();
            }
        }
        assert_eq!(calls, 2);
    }

    #[test]
    fn the_report_names_the_version_pip_would_install() {
        let report = r#"{"version":"1","install":[{"metadata":{"name":"langbot_plugin","version":"0.7.18"},
            "download_info":{"url":"https://files/langbot_plugin-0.7.18-py3-none-any.whl"}}]}"#;
        assert_eq!(version_from_report(report).unwrap(), v("0.7.18"));
        assert!(version_from_report(r#"{"install":[]}"#)
            .unwrap_err()
            .contains("names no langbot-plugin"));
    }
}
