//! Safe extraction of the `git archive` tar into the staging directory.
//!
//! Refuses absolute paths, `..` components, names that are not UTF-8, hard
//! links, device and fifo entries, symlinks whose target is absolute or
//! climbs out of the root, and any entry whose parent is a symlink. Files are
//! streamed to disk.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// What was extracted.
#[derive(Debug, Default, Clone)]
pub struct TarExtraction {
    /// Regular files, `/`-separated relative paths, with their tar mode.
    pub files: Vec<(String, u32)>,
    /// Symlinks: relative path and target as stored.
    pub symlinks: Vec<(String, String)>,
    /// Directories.
    pub dirs: Vec<String>,
}

/// Why an archive was refused.
#[derive(Debug, thiserror::Error)]
pub enum TarError {
    /// I/O error while reading or writing.
    #[error("{path}: {source}")]
    Io {
        /// Path involved.
        path: String,
        /// Cause.
        source: io::Error,
    },
    /// An unsafe entry.
    #[error("tar entry {path:?}: {reason}; refusing to extract (the archive must be a plain tree of files and safe links)")]
    Unsafe {
        /// Entry path as stored.
        path: String,
        /// What is unsafe.
        reason: String,
    },
}

fn io_err(path: &Path) -> impl Fn(io::Error) -> TarError + '_ {
    move |source| TarError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Normalises a relative entry path: rejects absolute paths and `..`,
/// drops `.` components. Returns the `/`-separated form.
fn safe_relative(path: &Path) -> Result<String, String> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => match p.to_str() {
                Some(name) => parts.push(name.to_string()),
                // A lossy name would be staged, compared and built under a
                // different file name than the commit's.
                None => {
                    return Err(format!(
                    "has a file name that is not UTF-8 ({}); the staged copy could not carry the \
                         committed name: rename it to UTF-8 and commit",
                    p.to_string_lossy()
                ))
                }
            },
            Component::CurDir => {}
            Component::ParentDir => return Err("has a `..` component".into()),
            Component::RootDir | Component::Prefix(_) => return Err("is absolute".into()),
        }
    }
    Ok(parts.join("/"))
}

/// True when a symlink at `link` (relative, `/`-separated) pointing at
/// `target` stays inside the root.
pub fn link_stays_inside(link: &str, target: &str) -> bool {
    if target.starts_with('/') {
        return false;
    }
    let mut depth: Vec<&str> = link.split('/').collect();
    depth.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            p => depth.push(p),
        }
    }
    true
}

/// Extracts the tar at `tar_path` into `dest` (created; must be empty).
///
/// # Errors
/// [`TarError::Unsafe`] for the first unsafe entry, [`TarError::Io`] otherwise.
pub fn extract_tar(tar_path: &Path, dest: &Path) -> Result<TarExtraction, TarError> {
    fs::create_dir_all(dest).map_err(io_err(dest))?;
    let file = fs::File::open(tar_path).map_err(io_err(tar_path))?;
    let mut archive = tar::Archive::new(file);
    let mut out = TarExtraction::default();
    for entry in archive.entries().map_err(io_err(tar_path))? {
        let mut entry = entry.map_err(io_err(tar_path))?;
        let raw = entry.path().map_err(io_err(tar_path))?.into_owned();
        let kind = entry.header().entry_type();
        // `git archive` starts with a global PAX header holding the commit
        // id: metadata, not a member. The tar crate applies local PAX and
        // GNU long-name headers to the entry they describe and does not
        // yield them; one it does yield (an old-format header) is refused
        // below with the other entry types.
        if kind.is_pax_global_extensions() {
            continue;
        }
        let rel = safe_relative(&raw).map_err(|reason| TarError::Unsafe {
            path: raw.display().to_string(),
            reason,
        })?;
        if rel.is_empty() {
            continue;
        }
        let target = dest.join(&rel);
        ensure_real_parents(dest, &rel)?;
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(io_err(&target))?;
            out.dirs.push(rel);
        } else if kind.is_file() {
            let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&target)
                .map_err(io_err(&target))?;
            io::copy(&mut entry, &mut f).map_err(io_err(&target))?;
            // The official build packs each file's mtime into the ZIP header:
            // keep the commit time `git archive` recorded, so a rebuild from a
            // fresh staging differs only by the build's own clock.
            if let Ok(mtime) = entry.header().mtime() {
                let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime);
                f.set_modified(when).map_err(io_err(&target))?;
            }
            fs::set_permissions(&target, fs::Permissions::from_mode(mode))
                .map_err(io_err(&target))?;
            out.files.push((rel, mode));
        } else if kind.is_symlink() {
            let link = entry
                .link_name()
                .map_err(io_err(tar_path))?
                .map(|l| l.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !link_stays_inside(&rel, &link) {
                return Err(TarError::Unsafe {
                    path: rel,
                    reason: format!("is a symlink to {link:?}, which leaves the extraction root"),
                });
            }
            std::os::unix::fs::symlink(&link, &target).map_err(io_err(&target))?;
            out.symlinks.push((rel, link));
        } else {
            return Err(TarError::Unsafe {
                path: rel,
                reason: format!(
                    "has entry type {kind:?}; only files, directories and symlinks are allowed"
                ),
            });
        }
    }
    Ok(out)
}

/// Every existing parent of `rel` under `root` must be a real directory.
fn ensure_real_parents(root: &Path, rel: &str) -> Result<(), TarError> {
    let mut p = PathBuf::from(root);
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        p.push(part);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(TarError::Unsafe {
                    path: rel.into(),
                    reason: format!("would be written through the symlink {}", p.display()),
                })
            }
            Ok(m) if !m.is_dir() => {
                return Err(TarError::Unsafe {
                    path: rel.into(),
                    reason: "has a parent that is a file".into(),
                })
            }
            Ok(_) => {}
            Err(_) => fs::create_dir_all(&p).map_err(io_err(&p))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_with(
        entries: &[(&str, tar::EntryType, &[u8], Option<&str>)],
    ) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tar");
        let mut b = tar::Builder::new(fs::File::create(&path).unwrap());
        for (name, kind, data, link) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            // Write the raw name so hostile names survive the builder's checks.
            let bytes = name.as_bytes();
            h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            if let Some(l) = link {
                h.set_link_name(l).unwrap();
            }
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.finish().unwrap();
        (dir, path)
    }

    #[test]
    fn plain_files_and_inner_links_extract() {
        let (dir, tar) = tar_with(&[
            ("a/b.txt", tar::EntryType::Regular, b"hi", None),
            ("a/link", tar::EntryType::Symlink, b"", Some("b.txt")),
        ]);
        let dest = dir.path().join("out");
        let got = extract_tar(&tar, &dest).unwrap();
        assert_eq!(got.files[0].0, "a/b.txt");
        assert_eq!(fs::read(dest.join("a/b.txt")).unwrap(), b"hi");
        assert_eq!(
            got.symlinks,
            vec![("a/link".to_string(), "b.txt".to_string())]
        );
    }

    #[test]
    fn traversal_absolute_and_escaping_links_are_refused() {
        for (name, kind, link, word) in [
            ("../evil", tar::EntryType::Regular, None, ".."),
            ("/etc/evil", tar::EntryType::Regular, None, "absolute"),
            (
                "a/l",
                tar::EntryType::Symlink,
                Some("../../etc/passwd"),
                "leaves",
            ),
            (
                "a/l",
                tar::EntryType::Symlink,
                Some("/etc/passwd"),
                "leaves",
            ),
            ("a/h", tar::EntryType::Link, Some("x"), "entry type"),
        ] {
            let (dir, tar) = tar_with(&[(name, kind, b"", link)]);
            let err = extract_tar(&tar, &dir.path().join("out"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(word), "{name}: {err}");
        }
    }

    #[test]
    fn names_that_are_not_utf8_are_refused_not_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tar");
        let mut b = tar::Builder::new(fs::File::create(&path).unwrap());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(1);
        h.set_mode(0o644);
        let name = b"pkg/bad\xff.py";
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_cksum();
        b.append(&h, &b"x"[..]).unwrap();
        b.finish().unwrap();
        let dest = dir.path().join("out");
        let err = extract_tar(&path, &dest).unwrap_err().to_string();
        assert!(err.contains("not UTF-8"), "{err}");
        assert!(
            !dest.join("pkg").exists() || fs::read_dir(dest.join("pkg")).unwrap().next().is_none()
        );
    }

    #[test]
    fn an_entry_under_a_symlink_or_a_file_is_refused_and_nothing_is_written_through_it() {
        // `a/l` -> `.` stays inside, but `a/l/x` would be written through it.
        let (dir, tar) = tar_with(&[
            ("a/l", tar::EntryType::Symlink, b"", Some(".")),
            ("a/l/x", tar::EntryType::Regular, b"x", None),
        ]);
        let dest = dir.path().join("out");
        let err = extract_tar(&tar, &dest).unwrap_err();
        assert!(
            matches!(&err, TarError::Unsafe { path, reason }
                if path == "a/l/x" && reason.starts_with("would be written through the symlink")),
            "{err}"
        );
        assert!(!dest.join("a/x").exists());
        let (dir, tar) = tar_with(&[
            ("f", tar::EntryType::Regular, b"x", None),
            ("f/x", tar::EntryType::Regular, b"x", None),
        ]);
        let err = extract_tar(&tar, &dir.path().join("out")).unwrap_err();
        assert!(
            matches!(&err, TarError::Unsafe { path, reason }
                if path == "f/x" && reason == "has a parent that is a file"),
            "{err}"
        );
    }

    #[test]
    fn modes_keep_their_permission_bits_and_files_keep_the_recorded_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tar");
        let mut b = tar::Builder::new(fs::File::create(&path).unwrap());
        for (name, mode) in [("run.sh", 0o4755), ("data.txt", 0o644)] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(1);
            h.set_mode(mode);
            h.set_mtime(1_700_000_000);
            h.set_path(name).unwrap();
            h.set_cksum();
            b.append(&h, &b"x"[..]).unwrap();
        }
        b.finish().unwrap();
        let dest = dir.path().join("out");
        let got = extract_tar(&path, &dest).unwrap();
        assert_eq!(
            got.files,
            [
                ("run.sh".to_string(), 0o755),
                ("data.txt".to_string(), 0o644)
            ]
        );
        let meta = fs::metadata(dest.join("run.sh")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
        assert_eq!(
            meta.modified().unwrap(),
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)
        );
    }

    #[test]
    fn git_archives_global_header_and_long_names_are_read_not_extracted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tar");
        let mut b = tar::Builder::new(fs::File::create(&path).unwrap());
        // What `git archive` writes first: a global PAX header with the commit.
        let record = "52 comment=0123456789abcdef0123456789abcdef01234567\n";
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::XGlobalHeader);
        h.set_path("pax_global_header").unwrap();
        h.set_size(record.len() as u64);
        h.set_mode(0o666);
        h.set_cksum();
        b.append(&h, record.as_bytes()).unwrap();
        // A name over 100 bytes: a GNU long-name header, then one in a
        // local PAX header.
        let long = format!("{}/f.txt", "d".repeat(120));
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(1);
        h.set_mode(0o644);
        b.append_data(&mut h, &long, &b"g"[..]).unwrap();
        let pax_long = format!("{}/p.txt", "e".repeat(120));
        b.append_pax_extensions([("path", pax_long.as_bytes())])
            .unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_path("short").unwrap();
        h.set_size(1);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, &b"p"[..]).unwrap();
        b.finish().unwrap();
        let dest = dir.path().join("out");
        let got = extract_tar(&path, &dest).unwrap();
        let names: Vec<&str> = got.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, [long.as_str(), pax_long.as_str()]);
        assert_eq!(fs::read(dest.join(&long)).unwrap(), b"g");
        assert_eq!(fs::read(dest.join(&pax_long)).unwrap(), b"p");
        assert!(!dest.join("pax_global_header").exists());
        assert!(!dest.join("short").exists());
    }

    #[test]
    fn link_containment() {
        assert!(link_stays_inside("a/b/l", "../c"));
        assert!(!link_stays_inside("a/l", "../../c"));
        assert!(!link_stays_inside("l", "/abs"));
    }
}
