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
    /// `added`, `removed` or `changed`; `tagged`: a file carrying a worker's tag in
    /// a folder the snapshots skip (the gate's own logs).
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

/// Whether `path` (relative, `/`-separated) is `area` or inside it.
pub fn within(path: &str, area: &str) -> bool {
    path.strip_prefix(area)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The changes of one comparison, sorted out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sorted {
    /// Changes inside each worker's root, by the root's index in `worker_roots`.
    pub workers: Vec<Vec<String>>,
    /// Changes inside a left-out area (to be scanned for a worker's tag).
    pub excluded: Vec<Change>,
    /// Folders above a left-out area whose modification time alone changed
    /// (an entry added or removed in the area below them, each entry of its
    /// own being compared).
    pub parents_mtime_only: Vec<String>,
    /// Every other change: nobody but a worker may have made it.
    pub outside: Vec<Change>,
}

/// Sorts the differences from `before` to `after` into the workers' roots
/// (`worker_roots`, relative), the left-out `areas` (relative folders of
/// gates that ran beside the workers), the folders above those areas when
/// only their modification time changed, and the rest.
pub fn sort_changes(
    before: &Snapshot,
    after: &Snapshot,
    worker_roots: &[String],
    areas: &[String],
) -> Sorted {
    let mut out = Sorted {
        workers: vec![Vec::new(); worker_roots.len()],
        ..Sorted::default()
    };
    for c in diff(before, after) {
        if let Some(i) = worker_roots.iter().position(|r| within(&c.path, r)) {
            out.workers[i].push(c.path);
        } else if areas.iter().any(|a| within(&c.path, a)) {
            out.excluded.push(c);
        } else if c.change == "changed"
            && areas.iter().any(|a| within(a, &c.path))
            && before
                .get(&c.path)
                .zip(after.get(&c.path))
                .is_some_and(|(b, a)| b.starts_with("dir:") && without_mtime(b) == without_mtime(a))
        {
            out.parents_mtime_only.push(c.path);
        } else {
            out.outside.push(c);
        }
    }
    out
}

/// A snapshot value (`kind:size:mtime_ns:mode`) without its mtime.
fn without_mtime(v: &str) -> String {
    let parts: Vec<&str> = v.split(':').collect();
    parts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, p)| *p)
        .collect::<Vec<_>>()
        .join(":")
}

/// Every file under `root/area` (`area` relative to `root`, `/`-separated)
/// whose first line carries one of `tags`: `(relative path, index in
/// tags)`, sorted by path. For a folder the snapshots skip (the gate's own
/// logs), so a worker's write there still shows.
pub fn tagged_under(root: &Path, area: &str, tags: &[&str]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root.join(area))
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
    {
        let Some(tag) = file_tag(entry.path()) else {
            continue;
        };
        if let Some(i) = tags.iter().position(|t| *t == tag) {
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            out.push((rel.to_string_lossy().into_owned(), i));
        }
    }
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

    #[test]
    fn tagged_files_are_found_in_a_skipped_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let logs = root.join("logs/worker-isolation");
        std::fs::create_dir_all(logs.join("sub")).unwrap();
        std::fs::write(logs.join("worker-a.stdout"), b"{\"ready\": 1}\n").unwrap();
        std::fs::write(logs.join("sub/escaped"), b"vcc-worker-id b2\n").unwrap();
        std::fs::write(logs.join("other"), b"vcc-worker-id zz\n").unwrap();
        assert_eq!(
            tagged_under(root, "logs/worker-isolation", &["a1", "b2"]),
            [("logs/worker-isolation/sub/escaped".to_string(), 1)]
        );
        assert!(tagged_under(root, "logs/none", &["a1"]).is_empty());
    }

    fn snap(entries: &[(&str, &str)]) -> Snapshot {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn left_out_areas_hold_their_own_changes_and_nothing_beside_them() {
        let before = snap(&[
            ("roots", "dir:0:1:40755"),
            ("roots/lbp-build", "dir:0:1:40755"),
            ("roots/pycache", "dir:0:1:40755"),
            ("roots/pycache-not-the-cache", "file:1:1:100644"),
            ("roots/worker-isolation/a", "dir:0:1:40755"),
            ("packages", "dir:0:1:40755"),
            ("staging", "dir:0:1:40755"),
        ]);
        let after = snap(&[
            // The parent of a left-out area: its mtime alone changed.
            ("roots", "dir:0:2:40755"),
            ("roots/lbp-build", "dir:0:2:40755"),
            ("roots/lbp-build/acp/out.lbpkg", "file:9:2:100644"),
            ("roots/pycache", "dir:0:2:40755"),
            ("roots/pycache/x.pyc", "file:9:2:100644"),
            // A sibling whose name starts like an area is not in it.
            ("roots/pycache-not-the-cache", "file:2:2:100644"),
            ("roots/worker-isolation/a", "dir:0:2:40755"),
            ("roots/worker-isolation/a/data/f", "file:1:2:100644"),
            // A folder above an area whose mode changed is not mtime only.
            ("packages", "dir:0:2:40700"),
            ("packages/x.lbpkg", "file:9:2:100644"),
            // Not a left-out area in this comparison.
            ("staging", "dir:0:2:40755"),
            ("escaped", "file:1:2:100644"),
        ]);
        let areas = vec!["roots/lbp-build".to_string(), "roots/pycache".to_string()];
        let got = sort_changes(
            &before,
            &after,
            &["roots/worker-isolation/a".into()],
            &areas,
        );
        assert_eq!(
            got.workers,
            vec![vec![
                "roots/worker-isolation/a".to_string(),
                "roots/worker-isolation/a/data/f".to_string()
            ]]
        );
        let paths = |cs: &[Change]| cs.iter().map(|c| c.path.clone()).collect::<Vec<_>>();
        assert_eq!(
            paths(&got.excluded),
            [
                "roots/lbp-build",
                "roots/lbp-build/acp/out.lbpkg",
                "roots/pycache",
                "roots/pycache/x.pyc"
            ]
        );
        assert_eq!(got.parents_mtime_only, ["roots"]);
        assert_eq!(
            paths(&got.outside),
            [
                "escaped",
                "packages",
                "packages/x.lbpkg",
                "roots/pycache-not-the-cache",
                "staging"
            ]
        );
        // With nothing left out, every change outside the roots counts.
        let whole = sort_changes(&before, &after, &["roots/worker-isolation/a".into()], &[]);
        assert!(whole.excluded.is_empty() && whole.parents_mtime_only.is_empty());
        assert_eq!(whole.outside.len(), 10);
    }
}
