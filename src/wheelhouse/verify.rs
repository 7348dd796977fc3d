//! DIR/wheelhouse re-verified against its record before a later step
//! installs from it: the bytes a worker installs must be the ones the
//! `dependencies` gate downloaded and recorded, not whatever the folder holds
//! by then. Used by the `shared-runtime` gate before its runtime's own pip
//! reads the folder (inside nsjail, read-only).

use super::{render_index, INDEX_DIR_NAME};
use crate::evidence::WheelhouseFile;
use crate::hash;
use std::path::Path;

/// The wheelhouse digest: sha256 hex over the lines `name\0size\0sha256\n`
/// of every recorded file, sorted by name (the formula of an archive's
/// content digest, [`crate::lbpkg::content_digest`]). Names which
/// wheelhouse a step installed from; the empty wheelhouse has the digest of
/// no lines.
pub fn digest(files: &[WheelhouseFile]) -> String {
    crate::lbpkg::content_digest(
        files
            .iter()
            .map(|f| (f.name.as_str(), f.size, f.sha256.as_str())),
    )
}

/// Every way the folder `dir` differs from `files` (the record): a recorded
/// file missing, unreadable, or with other bytes (sha256 and size); a file or
/// folder the record does not list; an index page (`simple/`) that is not the
/// one [`render_index`] derives from the record, or one it would not write.
/// One sentence per difference, naming the path relative to DIR, what was
/// recorded and what was found; empty when the folder is the recorded one.
pub fn drift(dir: &Path, files: &[WheelhouseFile]) -> Vec<String> {
    let mut out = Vec::new();
    let name = |f: &str| format!("{}/{f}", super::DIR_NAME);
    for f in files {
        match hash::sha256_file(&dir.join(&f.name)) {
            Ok(d) if d.hex() == f.sha256 && d.size == f.size => {}
            Ok(d) => out.push(format!(
                "{}: recorded sha256 {} ({} bytes), found sha256 {} ({} bytes)",
                name(&f.name),
                f.sha256,
                f.size,
                d.hex(),
                d.size
            )),
            Err(e) => out.push(format!(
                "{}: recorded sha256 {}, found it unreadable ({e})",
                name(&f.name),
                f.sha256
            )),
        }
    }
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let n = entry.file_name().to_string_lossy().into_owned();
                if n != INDEX_DIR_NAME && !files.iter().any(|f| f.name == n) {
                    out.push(format!("{}: not a file the record lists", name(&n)));
                }
            }
        }
        Err(e) => out.push(format!("{}: cannot be read ({e})", super::DIR_NAME)),
    }
    out.extend(index_drift(&dir.join(INDEX_DIR_NAME), files));
    out
}

/// The index pages under `index` that differ from those the record derives.
fn index_drift(index: &Path, files: &[WheelhouseFile]) -> Vec<String> {
    let pages = render_index(files);
    let page = |rel: &str| format!("{}/{INDEX_DIR_NAME}/{rel}", super::DIR_NAME);
    let mut out: Vec<String> = pages
        .iter()
        .filter(|(rel, text)| {
            std::fs::read_to_string(index.join(rel)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(rel, _)| format!("{}: not the page derived from the record", page(rel)))
        .collect();
    for entry in walkdir::WalkDir::new(index).min_depth(1).into_iter() {
        let Ok(entry) = entry else {
            out.push(format!("{}: cannot be walked", page("")));
            continue;
        };
        let rel = entry
            .path()
            .strip_prefix(index)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let derived = pages.contains_key(&rel)
            || (entry.file_type().is_dir() && pages.contains_key(&format!("{rel}/index.html")));
        if !derived {
            out.push(format!("{}: not derived from the record", page(&rel)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheelhouse(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Vec<WheelhouseFile>) {
        let tmp = tempfile::tempdir().unwrap();
        for (name, bytes) in files {
            std::fs::write(tmp.path().join(name), bytes).unwrap();
        }
        let recorded = super::super::write_index(tmp.path()).unwrap();
        (tmp, recorded)
    }

    const SIX: &str = "six-1.16.0-py2.py3-none-any.whl";

    #[test]
    fn the_recorded_folder_has_no_drift_and_a_stable_digest() {
        let (tmp, files) = wheelhouse(&[(SIX, b"six wheel bytes")]);
        assert_eq!(drift(tmp.path(), &files), Vec::<String>::new());
        let line = format!("{SIX}\0{}\0{}\n", files[0].size, files[0].sha256);
        assert_eq!(digest(&files), hash::sha256_bytes(line.as_bytes()));
        assert_eq!(digest(&[]), hash::sha256_bytes(b""));
    }

    #[test]
    fn a_tampered_wheel_is_named_with_both_digests() {
        let (tmp, files) = wheelhouse(&[(SIX, b"six wheel bytes")]);
        std::fs::write(tmp.path().join(SIX), b"other bytes").unwrap();
        let found = drift(tmp.path(), &files);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with(&format!(
            "wheelhouse/{SIX}: recorded sha256 {}",
            files[0].sha256
        )));
        assert!(found[0].contains(&format!(
            "found sha256 {}",
            hash::sha256_bytes(b"other bytes")
        )));
    }

    #[test]
    fn a_missing_an_added_file_and_a_changed_page_are_named() {
        let (tmp, files) = wheelhouse(&[(SIX, b"six wheel bytes")]);
        std::fs::remove_file(tmp.path().join(SIX)).unwrap();
        std::fs::write(tmp.path().join("evil-1.0-py3-none-any.whl"), b"x").unwrap();
        std::fs::write(
            tmp.path().join("simple/six/index.html"),
            "<a href=\"https://x/six.whl\">",
        )
        .unwrap();
        std::fs::create_dir(tmp.path().join("simple/evil")).unwrap();
        let found = drift(tmp.path(), &files).join("\n");
        assert!(
            found.contains(&format!("wheelhouse/{SIX}: recorded sha256")),
            "{found}"
        );
        assert!(found.contains("unreadable"), "{found}");
        assert!(
            found.contains("wheelhouse/evil-1.0-py3-none-any.whl: not a file the record lists"),
            "{found}"
        );
        assert!(
            found.contains("wheelhouse/simple/six/index.html: not the page derived"),
            "{found}"
        );
        assert!(
            found.contains("wheelhouse/simple/evil: not derived from the record"),
            "{found}"
        );
    }
}
