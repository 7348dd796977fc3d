//! Profiles: which candidates to certify, against which SDK requirement.
//!
//! A profile is TOML with unknown keys refused. The built-in `coding-runners`
//! profile (`gates/profiles/coding-runners.toml`) is used unless the
//! repository under review has `verify-coding-candidates.toml` at its root or
//! `--profile FILE` is given.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The built-in profile's source.
pub const BUILTIN_CODING_RUNNERS: &str = include_str!("../gates/profiles/coding-runners.toml");

/// File name of a profile inside the repository under review.
pub const REPO_PROFILE_NAME: &str = "verify-coding-candidates.toml";

/// A parsed profile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile name, recorded in the evidence.
    pub name: String,
    /// SDK pin.
    pub sdk: SdkPin,
    /// Candidates, by folder path relative to the repository root.
    #[serde(rename = "candidate")]
    pub candidates: Vec<CandidateSpec>,
    /// Canonical shared files.
    #[serde(default)]
    pub shared: Option<SharedFiles>,
    /// Options of the `lbp-build` gate.
    #[serde(default)]
    pub build: BuildOptions,
}

/// The exact SDK requirement.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkPin {
    /// PEP 508 requirement with one `==` specifier, e.g. `langbot-plugin==0.6.0b5`.
    pub requirement: String,
}

impl SdkPin {
    /// The pinned version (the text after `==`).
    pub fn version(&self) -> &str {
        self.requirement
            .split_once("==")
            .map(|(_, v)| v.trim())
            .unwrap_or("")
    }
}

/// One candidate plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateSpec {
    /// Folder relative to the repository root, `/`-separated (`Runner/codex-agent`).
    pub path: String,
}

impl CandidateSpec {
    /// The folder's last component (`codex-agent`): names its directories
    /// under `DIR/packages/` and `DIR/extracted/`.
    pub fn folder(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// Files that must be byte-identical in every candidate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedFiles {
    /// Candidate path holding the canonical copies.
    pub owner: String,
    /// Paths relative to each candidate.
    pub files: Vec<String>,
}

/// Options of the `lbp-build` gate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildOptions {
    /// Seconds before the build is stopped.
    #[serde(default = "default_build_timeout")]
    pub timeout_secs: u64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            timeout_secs: default_build_timeout(),
        }
    }
}

fn default_build_timeout() -> u64 {
    120
}

/// Where the profile came from.
#[derive(Debug, Clone)]
pub enum ProfileSource {
    /// The built-in `coding-runners` profile.
    Builtin,
    /// A file: `--profile` or the repository's own.
    File(PathBuf),
}

/// A loaded profile with its source text.
#[derive(Debug, Clone)]
pub struct LoadedProfile {
    /// The parsed profile.
    pub profile: Profile,
    /// Where it came from.
    pub source: ProfileSource,
    /// Its text (for the evidence digest).
    pub text: String,
}

/// A profile that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Unreadable file.
    #[error("profile {path}: cannot read: {source}")]
    Read {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// TOML error, including unknown keys (the message names the key).
    #[error("profile {path}: {message}\nexpected: the keys of gates/profiles/coding-runners.toml; fix or remove the offending key")]
    Parse {
        /// Path or `built-in`.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// Semantically invalid.
    #[error("profile {path}: {message}")]
    Invalid {
        /// Path or `built-in`.
        path: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// Loads `--profile`, else `<repo>/verify-coding-candidates.toml`, else the built-in.
///
/// # Errors
/// [`ProfileError`] on an unreadable, unparsable or invalid profile.
pub fn load(explicit: Option<&Path>, repo: &Path) -> Result<LoadedProfile, ProfileError> {
    let repo_file = repo.join(REPO_PROFILE_NAME);
    let (text, source) = if let Some(p) = explicit {
        (read(p)?, ProfileSource::File(p.to_path_buf()))
    } else if repo_file.is_file() {
        (read(&repo_file)?, ProfileSource::File(repo_file))
    } else {
        (BUILTIN_CODING_RUNNERS.to_string(), ProfileSource::Builtin)
    };
    let label = match &source {
        ProfileSource::Builtin => "built-in coding-runners".to_string(),
        ProfileSource::File(p) => p.display().to_string(),
    };
    let profile = parse(&text, &label)?;
    Ok(LoadedProfile {
        profile,
        source,
        text,
    })
}

fn read(p: &Path) -> Result<String, ProfileError> {
    std::fs::read_to_string(p).map_err(|source| ProfileError::Read {
        path: p.display().to_string(),
        source,
    })
}

/// Parses and validates profile `text`; `label` names it in errors.
///
/// # Errors
/// [`ProfileError::Parse`] or [`ProfileError::Invalid`].
pub fn parse(text: &str, label: &str) -> Result<Profile, ProfileError> {
    let profile: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse {
        path: label.into(),
        message: e.to_string(),
    })?;
    let invalid = |message: String| ProfileError::Invalid {
        path: label.into(),
        message,
    };
    let req = &profile.sdk.requirement;
    if !req.starts_with("langbot-plugin==") || profile.sdk.version().is_empty() {
        return Err(invalid(format!(
            "sdk.requirement is {req:?}; expected an exact pin like \"langbot-plugin==0.6.0b5\""
        )));
    }
    if profile.candidates.is_empty() {
        return Err(invalid(
            "no [[candidate]] entries; expected at least one candidate path".into(),
        ));
    }
    let mut folders = std::collections::BTreeSet::new();
    for c in &profile.candidates {
        let p = &c.path;
        if p.is_empty()
            || p.starts_with('/')
            || p.split('/').any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(invalid(format!(
                "candidate path {p:?} must be relative, `/`-separated, without `.`, `..` or empty components"
            )));
        }
        if !folders.insert(c.folder().to_string()) {
            return Err(invalid(format!(
                "two candidates share the folder name {:?}; folder names key DIR/packages and DIR/extracted",
                c.folder()
            )));
        }
    }
    if let Some(shared) = &profile.shared {
        if !profile.candidates.iter().any(|c| c.path == shared.owner) {
            return Err(invalid(format!(
                "shared.owner {:?} is not one of the candidates",
                shared.owner
            )));
        }
    }
    Ok(profile)
}

/// `--partition K/N`: the K-th of N shares (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Partition {
    /// This share, 1..=count.
    pub index: u32,
    /// Number of shares.
    pub count: u32,
}

impl std::str::FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || format!("expected K/N with 1 <= K <= N (e.g. 1/2), found {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(err)?;
        let (index, count): (u32, u32) = (k.trim().parse().map_err(|_| err())?, n.trim().parse().map_err(|_| err())?);
        if index == 0 || count == 0 || index > count {
            return Err(err());
        }
        Ok(Self { index, count })
    }
}

/// The candidates of `partition`: candidates sorted by path, the i-th
/// (0-based) belonging to share `i % count + 1`. Stable for a given profile,
/// whatever the order of its entries; every candidate is in exactly one share.
pub fn partition_share(candidates: &[CandidateSpec], partition: Option<Partition>) -> Vec<CandidateSpec> {
    let Some(p) = partition else { return candidates.to_vec() };
    let mut sorted: Vec<&CandidateSpec> = candidates.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let chosen: Vec<&str> = sorted
        .iter()
        .enumerate()
        .filter(|(i, _)| (*i as u32) % p.count + 1 == p.index)
        .map(|(_, c)| c.path.as_str())
        .collect();
    candidates.iter().filter(|c| chosen.contains(&c.path.as_str())).cloned().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn partitions_cover_every_candidate_exactly_once() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        let mut seen = Vec::new();
        for k in 1..=2 {
            let share = partition_share(&p.candidates, Some(Partition { index: k, count: 2 }));
            assert!(!share.is_empty());
            seen.extend(share.into_iter().map(|c| c.path));
        }
        seen.sort();
        let mut all: Vec<String> = p.candidates.iter().map(|c| c.path.clone()).collect();
        all.sort();
        assert_eq!(seen, all);
        assert!("0/2".parse::<Partition>().is_err());
        assert!("3/2".parse::<Partition>().is_err());
        assert_eq!("2/3".parse::<Partition>().unwrap(), Partition { index: 2, count: 3 });
    }

    use super::*;

    #[test]
    fn builtin_profile_matches_the_real_repository() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        let paths: Vec<_> = p.candidates.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "Runner/acp-agent-runner",
                "Runner/claude-code-agent",
                "Runner/codex-agent"
            ]
        );
        assert_eq!(p.sdk.version(), "0.6.0b5");
        let shared = p.shared.unwrap();
        assert_eq!(shared.owner, "Runner/acp-agent-runner");
        assert_eq!(
            shared.files,
            ["pkg/daemon_relay.py", "pkg/runtime_support.py"]
        );
    }

    #[test]
    fn unknown_key_is_an_error_naming_the_key() {
        let text = format!("{BUILTIN_CODING_RUNNERS}\nsurprise = 1\n");
        let err = parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("surprise"), "{err}");
    }

    #[test]
    fn escaping_candidate_path_is_refused() {
        let text = BUILTIN_CODING_RUNNERS.replace("Runner/codex-agent", "../codex-agent");
        let err = parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("../codex-agent"), "{err}");
    }
}
