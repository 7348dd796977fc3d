//! A profile file inside the repository under review must be the committed
//! file: the certification of commit C must not depend on bytes that are not
//! in C (a git-ignored or untracked profile, or one changed since the
//! commit). A profile outside the repository is the reviewer's own; the
//! evidence records its path and sha256 (`profile.origin`, `profile.sha256`)
//! and keeps its text (`DIR/logs/profile.toml`).
//!
//! The committed bytes are read from git's objects (`git cat-file blob
//! C:<path>`, hermetic, replace objects off), never from the work tree.

use crate::profile::{LoadedProfile, ProfileSource};
use crate::{git, hash};
use std::path::{Path, PathBuf};

/// The path of `file` relative to `repo` when it lies inside `repo`,
/// lexically (as given, made absolute) or once symlinks are resolved;
/// `None` for a file outside the repository.
pub fn inside(file: &Path, repo: &Path) -> Option<String> {
    let lexical = std::path::absolute(file).ok()?;
    let canonical_repo = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    let candidates: [(PathBuf, &Path); 2] = [
        (lexical.clone(), repo),
        (
            lexical.canonicalize().unwrap_or(lexical),
            canonical_repo.as_path(),
        ),
    ];
    candidates.iter().find_map(|(path, root)| {
        let rel = path.strip_prefix(root).ok()?;
        // `repo/../x.toml` is not inside.
        let parts: Vec<String> = rel
            .components()
            .map(|c| match c {
                std::path::Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect::<Option<_>>()?;
        (!parts.is_empty()).then(|| parts.join("/"))
    })
}

/// Ok when `loaded` is the built-in profile, a file outside `repo`, or a
/// file inside `repo` whose bytes are exactly those committed at `commit`.
///
/// # Errors
/// A sentence naming the profile file, the commit, what was found and what
/// to do: the file is not committed at `commit` (git-ignored, untracked,
/// only staged), or its bytes differ from the committed ones.
pub fn check(loaded: &LoadedProfile, repo: &Path, commit: &str) -> Result<(), String> {
    let ProfileSource::File(file) = &loaded.source else {
        return Ok(());
    };
    let Some(rel) = inside(file, repo) else {
        return Ok(());
    };
    let spec = format!("{commit}:{rel}");
    let committed = git::run(repo, &["cat-file", "blob", &spec], None, None).map_err(|_| {
        format!(
            "profile {}: the file is inside the repository {} but is not committed at {commit} (it is \
             git-ignored, untracked or only staged), so the certification would depend on bytes that are \
             not in the commit; expected a committed profile: commit {rel}, or pass --profile with a file \
             outside the repository",
            file.display(),
            repo.display()
        )
    })?;
    let read = hash::sha256_bytes(loaded.text.as_bytes());
    let expected = hash::sha256_bytes(&committed.stdout);
    if read != expected {
        return Err(format!(
            "profile {}: its bytes (sha256 {read}) differ from {rel} as committed at {commit} (sha256 \
             {expected}), so the certification would depend on bytes that are not in the commit; expected \
             the committed file: commit the change, or restore it (`git checkout -- {rel}`)",
            file.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_inside_the_repository_by_its_path_or_its_resolved_path() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(repo.join("a")).unwrap();
        std::fs::write(repo.join("a/p.toml"), "").unwrap();
        assert_eq!(
            inside(&repo.join("a/p.toml"), &repo).as_deref(),
            Some("a/p.toml")
        );
        let outside = d.path().join("p.toml");
        std::fs::write(&outside, "").unwrap();
        assert_eq!(inside(&outside, &repo), None);
        assert_eq!(inside(&repo.join("../p.toml"), &repo), None);
        // A link outside pointing in, and a link inside pointing out.
        std::os::unix::fs::symlink(repo.join("a/p.toml"), d.path().join("link.toml")).unwrap();
        assert_eq!(
            inside(&d.path().join("link.toml"), &repo).as_deref(),
            Some("a/p.toml")
        );
        std::os::unix::fs::symlink(&outside, repo.join("out.toml")).unwrap();
        assert_eq!(
            inside(&repo.join("out.toml"), &repo).as_deref(),
            Some("out.toml")
        );
    }
}
