//! Which SDK each candidate is certified under, and why
//! ([`crate::evidence::SdkChoice`]): its `langbot-plugin` requirement
//! (`<repo>/<candidate>/requirements.txt`) resolved as the installer
//! resolves it today ([`crate::provision::resolve`], the index asked with
//! the run's own interpreter, one pip call per distinct specifier), against
//! the version the run certifies it under (its group's pin).

use crate::evidence::SdkChoice;
use crate::provision::resolve::{self, Resolved};
use std::path::Path;

/// The record of a candidate whose requirement line is `requirement`,
/// resolved to `resolved`, certified under `sdk`: pure.
pub fn choice(
    sdk: &str,
    requirement: Option<&str>,
    resolved: &Result<Resolved, String>,
) -> SdkChoice {
    let (version, source, reason) = match resolved {
        Ok(r) if r.version.to_string() == sdk => {
            (Some(r.version.to_string()), r.source.word(), r.reason.clone())
        }
        Ok(r) => (
            Some(r.version.to_string()),
            r.source.word(),
            format!(
                "{}; but the profile certifies it under {sdk}: this is not the SDK it will run with \
                 (re-run `profile init`, or set its `sdk`)",
                r.reason
            ),
        ),
        Err(why) => (
            None,
            "unresolved",
            format!("its requirement could not be resolved ({why}); certified under the profile's {sdk}"),
        ),
    };
    SdkChoice {
        sdk: sdk.to_string(),
        requirement: requirement.map(str::to_string),
        resolved: version,
        source: source.to_string(),
        reason,
    }
}

/// The choice of every candidate `(folder, path)` of `repo` certified under
/// `sdk`, asking the index at `index_url` with `python`'s pip.
pub fn observe(
    repo: &Path,
    candidates: &[(String, String)],
    sdk: &str,
    python: &Path,
    index_url: &str,
) -> Vec<(String, SdkChoice)> {
    let carried = resolve::carried_versions();
    let mut index = resolve::memo(|spec: &str| resolve::ask_index(python, index_url, spec));
    candidates
        .iter()
        .map(|(folder, path)| {
            let file = repo.join(path).join("requirements.txt");
            let text = std::fs::read_to_string(&file).ok();
            let line = text
                .as_deref()
                .and_then(crate::provision::resolve::sdk_line);
            let resolved = resolve::declared(line.as_deref(), text.is_some())
                .and_then(|d| resolve::resolve_with(&d, &mut index, &carried));
            (folder.clone(), choice(sdk, line.as_deref(), &resolved))
        })
        .collect()
}

/// Copies the on-demand lock of `requirement` (not one the verifier
/// carries) and pip's report from the user's cache into
/// `DIR/sdk/<version>/` (`langbot-plugin.lock`, `pip-report.json`); returns
/// that folder, relative to DIR, or `None` for a carried pin.
///
/// # Errors
/// A sentence when a file cannot be copied.
pub fn keep_on_demand_lock(dir: &Path, requirement: &str) -> Result<Option<String>, String> {
    use crate::provision::{builtin, on_demand};
    if builtin::for_requirement(requirement).is_some() {
        return Ok(None);
    }
    let Some(version) = requirement
        .split_once("==")
        .map(|(_, v)| v.trim().to_string())
    else {
        return Ok(None);
    };
    let Ok(locks) = on_demand::locks_dir() else {
        return Ok(None);
    };
    let [lock, _, _, report] = on_demand::file_names(&version);
    if !locks.join(&lock).is_file() {
        return Ok(None);
    }
    let rel = format!("sdk/{version}");
    let to = dir.join(&rel);
    std::fs::create_dir_all(&to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    for (from, name) in [(lock, "langbot-plugin.lock"), (report, "pip-report.json")] {
        let src = locks.join(&from);
        if src.is_file() {
            std::fs::copy(&src, to.join(name))
                .map_err(|e| format!("cannot copy {} into {}: {e}", src.display(), to.display()))?;
        }
    }
    Ok(Some(rel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::resolve::Source;
    use std::str::FromStr;

    fn resolved(v: &str, source: Source, reason: &str) -> Result<Resolved, String> {
        Ok(Resolved {
            version: pep440_rs::Version::from_str(v).unwrap(),
            source,
            reason: reason.into(),
        })
    }

    #[test]
    fn the_reason_is_the_resolution_and_says_when_the_profile_certifies_another_version() {
        let c = choice(
            "0.7.18",
            Some("langbot-plugin"),
            &resolved(
                "0.7.18",
                Source::Index,
                "unpinned: pip installs 0.7.18 today",
            ),
        );
        assert_eq!(
            (
                c.sdk.as_str(),
                c.resolved.as_deref(),
                c.source.as_str(),
                c.reason.as_str()
            ),
            (
                "0.7.18",
                Some("0.7.18"),
                "index",
                "unpinned: pip installs 0.7.18 today"
            )
        );
        let c = choice(
            "0.6.0b5",
            None,
            &resolved(
                "0.7.18",
                Source::Index,
                "no requirements.txt (the host provides the SDK): pip installs 0.7.18 today",
            ),
        );
        assert!(
            c.reason.ends_with("but the profile certifies it under 0.6.0b5: this is not the SDK it will run with (re-run `profile init`, or set its `sdk`)"),
            "{}",
            c.reason
        );
        let c = choice(
            "0.6.1",
            Some("langbot-plugin @ https://x"),
            &Err("names a URL".into()),
        );
        assert_eq!((c.source.as_str(), c.resolved), ("unresolved", None));
        assert!(
            c.reason.contains("names a URL") && c.reason.contains("0.6.1"),
            "{}",
            c.reason
        );
    }
}
