//! Writing: the merged directory opened under its lock, each share's
//! archives and wheelhouse files re-hashed and copied, and the merged
//! evidence sealed (`evidence.json`, `junit.xml`, the statement,
//! `SHA256SUMS`). A grouped profile's group directories are sealed first,
//! so the merged directory's `SHA256SUMS` and files digest cover them.

use super::Plan;
use crate::evidence::{self, Evidence, WheelhouseRecord};
use std::fs;
use std::path::Path;

/// Ok when every archive the shares of `plan` record is inside its share's
/// directory and still has the sha256 and size recorded (the sign-off
/// covers `evidence.json` only).
///
/// # Errors
/// A sentence naming the archive, the recorded and observed digests, and
/// what to do.
pub(super) fn verify_archives(plan: &Plan) -> Result<(), String> {
    for (dir, e) in &plan.shares {
        for c in &e.candidates {
            let Some(a) = &c.archive else { continue };
            let inside = !a.path.starts_with('/')
                && a.path
                    .split('/')
                    .all(|p| !p.is_empty() && p != "." && p != "..");
            if !inside {
                return Err(format!(
                    "{}/evidence.json: archive path {:?} of {}: expected a relative path inside the \
                     evidence directory (packages/<folder>/<file>.lbpkg); refusing to merge it",
                    dir.display(),
                    a.path,
                    c.folder
                ));
            }
            let src = dir.join(&a.path);
            let observed = crate::hash::sha256_file(&src)
                .map_err(|err| format!("{}: cannot read the archive: {err}", src.display()))?;
            if observed.hex() != a.sha256 || observed.size != a.size {
                return Err(format!(
                    "{}: expected the archive its evidence.json records (sha256 {}, {} bytes), found sha256 {} \
                     ({} bytes): the archive was changed after the run; refusing to merge it \
                     (run `replay --evidence {}` to see every difference, and re-run that partition)",
                    src.display(),
                    a.sha256,
                    a.size,
                    observed.hex(),
                    observed.size,
                    dir.display()
                ));
            }
        }
    }
    Ok(())
}

/// Creates `into` and takes its lock, held until the merged evidence is
/// sealed, like a run's: a run or another merge into it is refused, naming
/// its pid. Taken before anything is written, then the directory is judged
/// empty again.
///
/// # Errors
/// When `into` cannot be created or locked, or is no longer empty.
pub(super) fn open(into: &Path) -> Result<evidence::lock::DirLock, String> {
    fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    let lock = evidence::lock::acquire(into).map_err(|e| format!("--into: {e}"))?;
    if fs::read_dir(into)
        .map(|mut d| d.next().is_some())
        .unwrap_or(true)
    {
        return Err(format!(
            "--into {}: expected a missing or empty directory, found content written since the merge \
             started (a run or merge wrote into it and ended); evidence is never mixed: choose a fresh \
             directory",
            into.display()
        ));
    }
    Ok(lock)
}

/// Copies the archives and wheelhouses of `plan`'s shares into `dir` (the
/// merged directory, or one of its group directories) and seals `merged`
/// there.
///
/// # Errors
/// A copy that fails, a wheelhouse file that changed, or evidence that
/// cannot be written.
pub(super) fn seal(
    dir: &Path,
    plan: &Plan,
    merged: &mut Evidence,
    signed_off_by: Option<String>,
) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (share, e) in &plan.shares {
        for c in &e.candidates {
            let Some(a) = &c.archive else { continue };
            let (src, dst) = (share.join(&a.path), dir.join(&a.path));
            if let Some(parent) = dst.parent() {
                fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            fs::copy(&src, &dst)
                .map_err(|e| format!("copy {} -> {}: {e}", src.display(), dst.display()))?;
        }
    }
    merged.wheelhouse = copy_wheelhouses(dir, plan)?;
    evidence::finish(dir, merged, signed_off_by)
        .map_err(|e| format!("{}: cannot write evidence: {e}", dir.display()))
}

/// Combines the shares' wheelhouse records
/// ([`crate::wheelhouse::merge_records`]), copies every file into
/// `into/wheelhouse` after re-deriving its sha256 and size (a swapped file is
/// never merged), and writes the index over the copies.
fn copy_wheelhouses(into: &Path, plan: &Plan) -> Result<Option<WheelhouseRecord>, String> {
    use crate::wheelhouse;
    let Some(merged) = wheelhouse::merge_records(
        plan.shares
            .iter()
            .filter_map(|(_, e)| e.wheelhouse.as_ref()),
    )?
    else {
        return Ok(None);
    };
    let target = wheelhouse::dir(into);
    fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    for (dir, e) in &plan.shares {
        for f in e.wheelhouse.iter().flat_map(|w| &w.files) {
            if f.name.contains('/') || f.name.starts_with('.') {
                return Err(format!(
                    "{}/evidence.json: wheelhouse file name {:?}: expected a plain file name; refusing to merge it",
                    dir.display(),
                    f.name
                ));
            }
            let (src, dst) = (wheelhouse::dir(dir).join(&f.name), target.join(&f.name));
            if dst.exists() {
                continue;
            }
            let observed = crate::hash::sha256_file(&src).map_err(|err| {
                format!("{}: cannot read the wheelhouse file: {err}", src.display())
            })?;
            if observed.hex() != f.sha256 || observed.size != f.size {
                return Err(format!(
                    "{}: expected the wheelhouse file its evidence.json records (sha256 {}, {} bytes), found \
                     sha256 {} ({} bytes): the file was changed after the run; refusing to merge it (run \
                     `replay --evidence {}` to see every difference, and re-run that partition)",
                    src.display(),
                    f.sha256,
                    f.size,
                    observed.hex(),
                    observed.size,
                    dir.display()
                ));
            }
            fs::copy(&src, &dst)
                .map_err(|e| format!("copy {} -> {}: {e}", src.display(), dst.display()))?;
        }
    }
    wheelhouse::write_index(&target)?;
    Ok(Some(merged))
}
