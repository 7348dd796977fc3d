//! The `archive-members` gate re-decided from what an evidence directory
//! keeps, for `replay`: the archive (`DIR/packages/<c>/*.lbpkg`), the staged
//! source (`DIR/staging/source/<candidate path>`), the extraction
//! (`DIR/extracted/<c>`) and the SDK's reading of both manifests, which the
//! run's probe printed to `DIR/logs/archive-members/<c>-manifest-yaml.stdout`.
//! The gate's own [`observe`](super::observe::observe) reads the archive
//! (extracting it into `scratch`, never into DIR) and [`super::decide`]
//! judges; `extraction-exact` compares DIR/extracted/<c> itself with the
//! archive's members. No interpreter runs.

use super::manifest_reader::ManifestReader;
use super::observe::{observe, Input};
use crate::evidence::Check;
use std::path::Path;

/// The checks the kept observations of candidate `folder` (committed at
/// `candidate_path`, archived at `archive_rel`, relative to `dir`) decide.
/// `scratch` is an empty directory of the caller's for the extraction.
pub(crate) fn redecide(
    dir: &Path,
    folder: &str,
    candidate_path: &str,
    archive_rel: &str,
    scratch: &Path,
) -> Vec<Check> {
    let mut staged = dir.join("staging").join("source");
    staged.extend(candidate_path.split('/'));
    let input = Input {
        folder: folder.to_string(),
        staged,
        archive: Ok((dir.join(archive_rel), archive_rel.to_string())),
        extract_abs: scratch.join(folder),
        extract_rel: format!("extracted/{folder}"),
        manifest_reader: ManifestReader::Kept {
            stdout: dir
                .join("logs")
                .join("archive-members")
                .join(format!("{folder}-manifest-yaml.stdout")),
        },
    };
    let mut obs = observe(&input);
    if let Some(Ok(data)) = obs.zip.as_mut().and_then(|z| z.data.as_mut()) {
        data.extraction =
            crate::lbpkg::extraction_findings(&dir.join("extracted").join(folder), &data.members);
    }
    super::decide(&obs)
}
