//! The repository's `origin` URL as the evidence records it, never a path
//! of the machine that ran the verifier (the statement names the source by
//! it: `evidence::statement::subject_name`).
//!
//! The URL is read from the repository's own configuration by hermetic git
//! (`git config --get remote.origin.url`: git reads the value, runs nothing
//! the configuration names; no system or global file is read), and is
//! recorded without credentials. A local-path origin (`/srv/x.git`,
//! `../x`, `file://...`) is a machine path too, and is not recorded.

use std::path::Path;

/// `remote.origin.url` of the repository at `repo` as [`public_url`] keeps
/// it; `None` when there is no origin, git cannot read it, or it is a local
/// path.
pub fn read(repo: &Path) -> Option<String> {
    let out = crate::git::run(repo, &["config", "--get", "remote.origin.url"], None, None).ok()?;
    public_url(out.stdout_text().trim())
}

/// `raw` without credentials: the user-info of a `scheme://user:secret@host`
/// URL (a token is often the user name) and any query or fragment are
/// removed; an scp-like `user@host:path` keeps its user (no secret can stand
/// there). `None` for an empty value and for a local path or `file://` URL.
pub fn public_url(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    if let Some((scheme, rest)) = raw.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") || scheme.is_empty() {
            return None;
        }
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if host.is_empty() {
            return None;
        }
        return Some(format!("{scheme}://{host}{path}"));
    }
    // scp-like `[user@]host:path`: a colon before any slash (git's rule).
    let colon = raw.find(':')?;
    if raw[..colon].contains('/') || colon == 0 {
        return None;
    }
    Some(raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped_and_local_paths_are_not_urls() {
        for (raw, kept) in [
            (
                "https://github.com/langbot-app/langbot-plugins.git",
                Some("https://github.com/langbot-app/langbot-plugins.git"),
            ),
            (
                "https://user:ghp_secret@github.com/o/r.git",
                Some("https://github.com/o/r.git"),
            ),
            (
                "https://ghp_token@github.com/o/r",
                Some("https://github.com/o/r"),
            ),
            (
                "https://github.com/o/r.git?token=abc#x",
                Some("https://github.com/o/r.git"),
            ),
            (
                "ssh://git:pw@host:2222/o/r.git",
                Some("ssh://host:2222/o/r.git"),
            ),
            ("git@github.com:o/r.git", Some("git@github.com:o/r.git")),
            ("/tmp/fixture/origin.git", None),
            ("../sibling", None),
            ("./a:b", None),
            ("file:///srv/r.git", None),
            ("", None),
        ] {
            assert_eq!(public_url(raw).as_deref(), kept, "{raw}");
        }
    }
}
