//! What the `stage` gate reads from git objects before `git archive` runs:
//! the commit's tree, every tree path's attributes at the commit, the
//! history rewrites hermetic git ignores, and the filter drivers the
//! repository configures for a committed `filter` attribute. A configured
//! driver is a command `git archive` would run (it is disabled on the
//! command line, see `git::repo_config`, and the archive is not written at
//! all): the gate refuses it from these facts alone.

use super::READ_ATTRIBUTES;
use crate::context::RunContext;
use crate::git::{self, HistoryRewrite};
use serde::Serialize;
use std::collections::BTreeMap;

/// A filter driver of the repository's configuration that a committed
/// `filter=<driver>` attribute selects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FilterDriver {
    /// The driver name, as the attribute gives it.
    pub driver: String,
    /// Its command settings, `(key, value)`: `filter.<driver>.clean`,
    /// `.smudge`, `.process`.
    pub commands: Vec<(String, String)>,
    /// Committed paths whose attribute selects it.
    pub paths: Vec<String>,
}

/// What was read before `git archive`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BeforeArchive {
    /// `git ls-tree -r` of the commit.
    pub tree: Vec<git::TreeEntry>,
    /// `path -> [(attribute, state)]`, or why `git check-attr` did not answer.
    pub attributes: Result<BTreeMap<String, Vec<(String, String)>>, String>,
    /// Replace refs and graft files, ignored by every git call.
    pub rewrites: Vec<HistoryRewrite>,
    /// Configured filter drivers the commit's attributes select.
    pub filter_drivers: Vec<FilterDriver>,
}

/// Reads the tree, its attributes, history rewrites and configured filter
/// drivers.
///
/// # Errors
/// When git cannot be run.
pub(super) fn read(ctx: &RunContext) -> Result<BeforeArchive, String> {
    let commit = ctx.source.commit.clone();
    let (tree, attributes) = if ctx.source.worktree.is_some() {
        // `--worktree`: the working tree's files, their attributes read from
        // the work tree.
        let entries = crate::worktree::entries(&ctx.repo, &ctx.log_stem("stage", "git-ls-files"))?;
        let attributes = commit_attributes(ctx, &entries, true);
        (entries, attributes)
    } else {
        let listing = git::run(
            &ctx.repo,
            &["ls-tree", "-r", "-z", "--full-tree", &commit],
            Some(&ctx.log_stem("stage", "git-ls-tree")),
            None,
        )?;
        let tree = git::parse_ls_tree_z(&listing.stdout);
        let attributes = commit_attributes(ctx, &tree, false);
        (tree, attributes)
    };
    let rewrites =
        git::history_rewrites(&ctx.repo, Some(&ctx.log_stem("stage", "git-replace-refs")))?;
    let filter_drivers = match &attributes {
        Ok(attributes) => selected_drivers(attributes, &git::repository_config(&ctx.repo)?),
        Err(_) => Vec::new(),
    };
    Ok(BeforeArchive {
        tree,
        attributes,
        rewrites,
        filter_drivers,
    })
}

/// The drivers of `config` (`(key, value)` as git reads them) with a
/// non-empty `clean`, `smudge` or `process` command that a `filter`
/// attribute of `attributes` selects. Pure.
pub(crate) fn selected_drivers(
    attributes: &BTreeMap<String, Vec<(String, String)>>,
    config: &[(String, String)],
) -> Vec<FilterDriver> {
    let mut by_driver: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, attrs) in attributes {
        for (attr, state) in attrs {
            if attr == "filter" && !matches!(state.as_str(), "set" | "unset") {
                by_driver
                    .entry(state.clone())
                    .or_default()
                    .push(path.clone());
            }
        }
    }
    by_driver
        .into_iter()
        .filter_map(|(driver, paths)| {
            let commands: Vec<(String, String)> = config
                .iter()
                .filter(|(key, value)| {
                    // Section and name are case-insensitive, the subsection
                    // (the driver) is not.
                    let Some((section, rest)) = key.split_once('.') else {
                        return false;
                    };
                    let Some((subsection, name)) = rest.rsplit_once('.') else {
                        return false;
                    };
                    !value.is_empty()
                        && section.eq_ignore_ascii_case("filter")
                        && subsection == driver
                        && ["clean", "smudge", "process"]
                            .iter()
                            .any(|n| name.eq_ignore_ascii_case(n))
                })
                .cloned()
                .collect();
            (!commands.is_empty()).then_some(FilterDriver {
                driver,
                commands,
                paths,
            })
        })
        .collect()
}

/// `path -> [(attribute, state)]` as `git check-attr -z` prints it, for every
/// attribute that is not `unspecified`: the state is `set`, `unset` or the
/// value. Read at the commit (`git check-attr --source`, git 2.40+) or,
/// failing that or with `work_tree` (`--worktree`), from the work tree;
/// `.git/info/attributes` counts in both (the per-user and system
/// attributes files do not: see `git::HERMETIC_CONFIG`). `git check-attr`
/// runs no filter.
///
/// # Errors
/// When neither `git check-attr` answers.
fn commit_attributes(
    ctx: &RunContext,
    tree: &[git::TreeEntry],
    work_tree: bool,
) -> Result<BTreeMap<String, Vec<(String, String)>>, String> {
    let stdin: Vec<u8> = tree
        .iter()
        .flat_map(|e| e.path.bytes().chain(std::iter::once(0)))
        .collect();
    let commit = ctx.source.commit.clone();
    let mut with_source = vec!["check-attr", "-z", "--stdin", "--source", commit.as_str()];
    with_source.extend_from_slice(READ_ATTRIBUTES);
    let mut plain = vec!["check-attr", "-z", "--stdin"];
    plain.extend_from_slice(READ_ATTRIBUTES);
    let stem = ctx.log_stem("stage", "git-check-attr");
    let out = if work_tree {
        git::run(&ctx.repo, &plain, Some(&stem), Some(stdin))?
    } else {
        git::run(&ctx.repo, &with_source, Some(&stem), Some(stdin.clone()))
            .or_else(|_| git::run(&ctx.repo, &plain, Some(&stem), Some(stdin)))?
    };
    Ok(super::parse_check_attr_z(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_configured_driver_a_committed_attribute_selects_is_named() {
        let attributes: BTreeMap<String, Vec<(String, String)>> = [
            (
                "a.txt".to_string(),
                vec![("filter".to_string(), "X".to_string())],
            ),
            (
                "b.txt".to_string(),
                vec![("filter".to_string(), "X".to_string())],
            ),
            (
                "m.bin".to_string(),
                vec![("filter".to_string(), "lfs".to_string())],
            ),
            (
                "c.txt".to_string(),
                vec![("filter".to_string(), "x".to_string())],
            ),
        ]
        .into();
        let config: Vec<(String, String)> = [
            ("filter.X.smudge", "touch /tmp/m"),
            ("filter.X.clean", "cat"),
            ("filter.X.required", "true"),
            ("filter.x.clean", ""),
            ("filter.Xy.clean", "cat"),
            ("filter.unused.process", "p"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            selected_drivers(&attributes, &config),
            [FilterDriver {
                driver: "X".into(),
                commands: vec![
                    ("filter.X.smudge".into(), "touch /tmp/m".into()),
                    ("filter.X.clean".into(), "cat".into()),
                ],
                paths: vec!["a.txt".into(), "b.txt".into()],
            }]
        );
    }
}
