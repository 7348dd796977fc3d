//! Tree snapshots of the evidence directory before and after the workers ran,
//! and the attribution of new files to the worker that wrote them.
//!
//! A snapshot records each entry's kind, size, modification time (ns) and
//! mode: a changed file shows up without hashing the whole directory. Every
//! file a worker and its children write starts with the worker's tag line
//! (`vcc-worker-id <id>`), so a file under one worker's root carrying the
//! other's tag is a cross-root write.

use serde::Serialize;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Prefix of the first line of every file a worker writes.
pub const TAG_PREFIX: &str = "vcc-worker-id ";

/// `/`-separated relative path to `kind:size:mtime_ns:mode`.
pub type Snapshot = BTreeMap<String, String>;

/// Snapshot of `root`, skipping the subtrees in `skip` (relative paths).
pub fn snapshot(root: &Path, skip: &[PathBuf]) -> Snapshot {
    let mut out = Snapshot::new();
    let walker = walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| {
            let rel = e.path().strip_prefix(root).unwrap_or(e.path());
            !skip.iter().any(|s| rel == s.as_path())
        });
    for entry in walker.flatten() {
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let kind = if meta.is_dir() {
            "dir"
        } else if meta.file_type().is_symlink() {
            "link"
        } else {
            "file"
        };
        let size = if meta.is_dir() { 0 } else { meta.len() };
        out.insert(
            rel,
            format!(
                "{kind}:{size}:{}:{:o}",
                meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
                meta.mode()
            ),
        );
    }
    out
}

/// One difference between two snapshots.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Change {
    /// Relative path.
    pub path: String,
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
}

/// Differences from `before` to `after`, sorted by path.
pub fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let mut out = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => out.push(Change {
                path: k.clone(),
                change: "removed",
            }),
            Some(w) if w != v => out.push(Change {
                path: k.clone(),
                change: "changed",
            }),
            _ => {}
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        out.push(Change {
            path: k.clone(),
            change: "added",
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The tag in the first line of the file at `path` (`None` when the file
/// does not start with [`TAG_PREFIX`] or cannot be read). Reads at most 256 bytes.
pub fn file_tag(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(256)
        .read_to_end(&mut buf)
        .ok()?;
    let text = String::from_utf8_lossy(&buf);
    text.lines()
        .next()?
        .strip_prefix(TAG_PREFIX)
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_diff_sees_added_changed_removed_and_skips() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("logs/gate")).unwrap();
        std::fs::write(root.join("keep"), b"1").unwrap();
        std::fs::write(root.join("gone"), b"1").unwrap();
        let skip = vec![PathBuf::from("logs/gate")];
        let before = snapshot(root, &skip);
        std::fs::write(root.join("keep"), b"22").unwrap();
        std::fs::remove_file(root.join("gone")).unwrap();
        std::fs::write(root.join("new"), b"vcc-worker-id abc\nrest").unwrap();
        std::fs::write(root.join("logs/gate/ignored"), b"x").unwrap();
        let changes = diff(&before, &snapshot(root, &skip));
        let got: Vec<(&str, &str)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.change))
            .collect();
        assert_eq!(
            got,
            vec![("gone", "removed"), ("keep", "changed"), ("new", "added")]
        );
        assert_eq!(file_tag(&root.join("new")).as_deref(), Some("abc"));
        assert_eq!(file_tag(&root.join("keep")), None);
    }
}
