//! The `shared-copies` gate re-decided from what an evidence directory
//! keeps, for `replay`: the staged source (`DIR/staging/source`) and the
//! profile's `[shared]` table (from the profile the run kept). The gate's
//! own [`observe`](super::observe) and [`decide`](super::decide) run on them.

use crate::evidence::Check;
use crate::profile::Profile;
use std::path::Path;

/// The checks the staged source kept in `dir` decides under `profile`, for
/// the candidates of `profile` whose folders are in `selected` (the run's
/// share), in profile order.
///
/// # Errors
/// When `dir/staging/source` is not kept.
pub(crate) fn redecide(
    dir: &Path,
    profile: &Profile,
    selected: &[&str],
) -> Result<Vec<Check>, String> {
    let root = dir.join("staging").join("source");
    if !root.is_dir() {
        return Err("DIR/staging/source is not kept".into());
    }
    let (owner, files) = match profile.shared.as_ref() {
        Some(s) => (s.owner.clone(), s.files.clone()),
        None => (String::new(), Vec::new()),
    };
    let candidates: Vec<(String, String)> = profile
        .candidates
        .iter()
        .filter(|c| selected.contains(&c.folder()))
        .map(|c| (c.path.clone(), c.folder().to_string()))
        .collect();
    Ok(super::decide(&super::observe(
        &root,
        &owner,
        &files,
        &candidates,
    )))
}
