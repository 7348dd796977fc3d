//! `verify-coding-candidates merge`: combine the evidence of `--partition`
//! runs into one evidence directory.
//!
//! The partitions must share commit, tree, profile, SDK version and RECORD
//! digest, required gates and partition count, cover every share exactly
//! once, and agree on every global gate's result. Unpartitioned runs of the
//! same commit, profile and SDK may stand beside them (`--only suites`: the
//! `whole` gates a share cannot run); their records fill the gates the
//! shares did not run, and any gate both ran must agree, as must the
//! archives' content digests. A matrix plus one such run merges into one
//! non-partial certification. Each partition's own
//! sign-off digest is re-checked first, so an edited partition is refused,
//! then every file of it is re-hashed against its `SHA256SUMS` and sealed
//! listing (`src/merge/share_files.rs`), and every archive (and wheelhouse
//! file) is hashed again before it is copied, so a swapped one is refused
//! too. `--into` is locked like a run's evidence directory
//! (`evidence::lock`) while the merge writes it.
//!
//! A profile with SDK groups (`sdk_groups`, `src/pipeline/groups.rs`): each
//! share holds the default group's run and, under `groups/<pin>/`, a run of
//! each other group it has candidates of. The default group's runs are
//! merged as above; each other group's runs (from every share and
//! unpartitioned run that lists it) are merged the same way into
//! `OUT/groups/<pin>/`; `sdk_groups[]` is recorded again from the merged
//! groups, and the verdict is the groups' together, as one unpartitioned
//! run would record them (`src/merge/groups.rs`).
//!
//! Phases, each in its own file: [`gather`] reads and verifies every run,
//! [`check`] judges whether they fit together, [`assemble`] combines their
//! records, [`write`] copies the archives and wheelhouses and seals.

use crate::evidence::Evidence;
use std::fs;
use std::path::{Path, PathBuf};

mod assemble;
mod check;
mod gather;
mod groups;
mod share_files;
mod write;

/// One run given to `merge`: its evidence directory and its evidence.
type Run = (PathBuf, Evidence);

/// The runs of one SDK group (or of a profile without groups), judged to
/// fit together ([`check::plan`]).
struct Plan {
    /// The `--partition K/N` shares, by K.
    shares: Vec<Run>,
    /// Unpartitioned runs beside them (`--only suites`).
    wholes: Vec<Run>,
}

impl Plan {
    /// Every run: the shares, then the unpartitioned ones.
    fn runs(&self) -> impl Iterator<Item = &Run> {
        self.shares.iter().chain(&self.wholes)
    }
}

/// Merges the evidence directories `parts` into `into` (absolute, missing or
/// empty, outside every partition; judged where writes land, `..` and
/// symlinks resolved), copying each partition's `packages/` and
/// `wheelhouse/` (and, for a grouped profile, each group's into
/// `into/groups/<pin>/`), and returns the merged evidence.
///
/// # Errors
/// A sentence naming the partition and the disagreement; nothing is written then.
pub fn merge(
    into: &Path,
    parts: &[PathBuf],
    signed_off_by: Option<String>,
) -> Result<Evidence, String> {
    let into = check_into(into, parts)?;
    let runs = parts
        .iter()
        .map(|dir| gather::share(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let plan = check::plan(runs, None)?;
    let profile = gather::kept_profile(&plan.shares[0])?;
    let default = profile.sdk_groups().remove(0);
    check::dealt(&plan, &profile, &default)?;
    let group_plans = groups::plans(&plan, &profile)?;
    let mut merged = assemble::evidence(&plan)?;
    let mut merged_groups = Vec::new();
    for (relative, group_plan) in &group_plans {
        merged_groups.push((relative.clone(), assemble::evidence(group_plan)?));
    }
    // The sign-off covers evidence.json only: every archive is re-hashed
    // before anything is written, so a swapped one is never merged.
    write::verify_archives(&plan)?;
    for (_, group_plan) in &group_plans {
        write::verify_archives(group_plan)?;
    }
    let _lock = write::open(&into)?;
    for ((relative, group_plan), (_, group)) in group_plans.iter().zip(merged_groups.iter_mut()) {
        write::seal(&into.join(relative), group_plan, group, None)?;
    }
    groups::record(&mut merged, &merged_groups);
    write::seal(&into, &plan, &mut merged, signed_off_by)?;
    Ok(merged)
}

/// `into` resolved where writes land, once judged absolute, missing or
/// empty, and outside every run of `parts`.
///
/// # Errors
/// A sentence naming `--into` and what it found.
fn check_into(into: &Path, parts: &[PathBuf]) -> Result<PathBuf, String> {
    if !into.is_absolute() {
        return Err(format!(
            "--into {}: expected an absolute path",
            into.display()
        ));
    }
    let resolved = crate::pipeline::resolve_for_writing("--into", into).map_err(|e| e.0)?;
    if resolved.exists()
        && fs::read_dir(&resolved)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        let holder = crate::evidence::lock::holder(&resolved).map_or_else(String::new, |pid| {
            format!(" (pid {pid} is writing into it now and holds its lock)")
        });
        return Err(format!(
            "--into {}: expected a missing or empty directory, found existing content{holder}",
            into.display()
        ));
    }
    if parts.is_empty() {
        return Err("merge: expected at least one partition evidence directory".into());
    }
    for dir in parts {
        let part = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if resolved.starts_with(&part) {
            return Err(format!(
                "--into {}: expected a directory outside every partition, found one inside {}; writing \
                 there would change that partition's evidence: choose a directory outside it",
                into.display(),
                dir.display()
            ));
        }
    }
    Ok(resolved)
}
