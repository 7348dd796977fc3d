//! The profile's text as the run read it, kept in the evidence directory
//! (`DIR/logs/profile.toml`): `evidence.json` records only its name, origin
//! and sha256, and `replay` needs the profile's options (the suites, their
//! declared deselections, the candidates) to re-decide the gates whose raw
//! observations the directory keeps.

use std::io;
use std::path::{Path, PathBuf};

/// Path of the kept profile, relative to the evidence directory.
pub const KEPT_PROFILE: &str = "logs/profile.toml";

/// `dir/logs/profile.toml`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(KEPT_PROFILE)
}

/// Writes `text` (the profile exactly as read) to `dir/logs/profile.toml`,
/// creating `dir/logs`.
///
/// # Errors
/// Any I/O error.
pub fn keep(dir: &Path, text: &str) -> io::Result<()> {
    let file = path(dir);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(file, text)
}
