//! `core-worktree`: a repository-local `core.worktree` is recorded. git
//! would read the work tree it names instead of the repository's own, so a
//! dirty tree could read as clean; every git call of the harness passes
//! `--work-tree=<the folder holding .git>` instead ([`crate::git::own_worktree`]),
//! and this check says so. Present only when the repository configures it.

use crate::evidence::Check;
use serde_json::json;
use std::path::Path;

/// The `core-worktree` warning when `settings` (the repository's own
/// configuration, [`crate::git::repository_config`]) set `core.worktree`
/// (the last value wins, as in git); `used` is the work tree every git call
/// used. Pure.
pub(crate) fn check(settings: &[(String, String)], used: &Path) -> Option<Check> {
    let configured = settings
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case("core.worktree"))
        .map(|(_, v)| v.clone())?;
    Some(
        Check::warn(
            "core-worktree",
            None,
            format!(
                "the repository's configuration sets core.worktree = {configured}, which would make git read \
                 the work tree there instead of {}; every git call of this run used the repository's own \
                 work tree {} (--work-tree), so the tree checks above judge it: remove the setting \
                 (`git config --unset core.worktree`) unless you rely on it",
                used.display(),
                used.display()
            ),
        )
        .with_observed(json!({ "configured": configured, "used": used.display().to_string() })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_configured_worktree_is_recorded_with_the_last_value() {
        let used = Path::new("/r");
        assert!(check(&[("core.bare".into(), "false".into())], used).is_none());
        let c = check(
            &[
                ("core.worktree".into(), "/a".into()),
                ("core.worktree".into(), "/b".into()),
            ],
            used,
        )
        .unwrap();
        assert_eq!(c.name, "core-worktree");
        assert_eq!(c.result, crate::evidence::CheckResult::Warn);
        assert_eq!(c.observed.as_ref().unwrap()["configured"], "/b");
        assert_eq!(c.observed.as_ref().unwrap()["used"], "/r");
    }
}
