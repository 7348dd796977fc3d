//! Streaming digests: sha256 (hex and RECORD's urlsafe base64) and git blob ids.
//!
//! Every file is hashed through a fixed 64 KiB buffer, so memory does not grow
//! with the size of an archive or a member.

use sha1::Sha1;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

const BUFFER: usize = 64 * 1024;

/// A sha256 digest with the number of bytes it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sha256Digest {
    /// The 32 digest bytes.
    pub bytes: [u8; 32],
    /// Bytes read, in bytes.
    pub size: u64,
}

impl Sha256Digest {
    /// Lower-case hex, 64 characters.
    pub fn hex(&self) -> String {
        to_hex(&self.bytes)
    }
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Feeds everything `reader` yields to `update`, through one
/// [`BUFFER`]-sized buffer, retrying reads the OS interrupted; returns the
/// number of bytes read.
///
/// # Errors
/// The first read error of `reader` other than `Interrupted`.
fn stream(mut reader: impl Read, mut update: impl FnMut(&[u8])) -> io::Result<u64> {
    let mut buf = vec![0u8; BUFFER];
    let mut size = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(size),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        size += n as u64;
        update(&buf[..n]);
    }
}

/// sha256 of everything `reader` yields, streamed.
///
/// # Errors
/// Any read error of `reader`.
pub fn sha256_reader(reader: impl Read) -> io::Result<Sha256Digest> {
    let mut hasher = Sha256::new();
    let size = stream(reader, |b| hasher.update(b))?;
    Ok(Sha256Digest {
        bytes: hasher.finalize().into(),
        size,
    })
}

/// sha256 of the file at `path`, streamed (symlinks are followed).
///
/// # Errors
/// When the file cannot be opened or read.
pub fn sha256_file(path: &Path) -> io::Result<Sha256Digest> {
    sha256_reader(File::open(path)?)
}

/// sha256 hex of a byte slice.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// The git blob id (sha1 of `blob <size>\0<content>`, as `git hash-object`)
/// of the file at `path`, streamed. Source: git's object format (`gitformat-loose`).
///
/// # Errors
/// When the file cannot be opened or read, or its length changed while it
/// was read (the header's size would not be the content's).
pub fn git_blob_id(path: &Path) -> io::Result<String> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {size}\0").as_bytes());
    let read = stream(file, |b| hasher.update(b))?;
    if read != size {
        return Err(io::Error::other(format!(
            "{} changed while it was read: {size} bytes when opened, {read} read",
            path.display()
        )));
    }
    Ok(to_hex(&hasher.finalize()))
}

/// The git blob id of a symlink: sha1 over its target bytes.
pub fn git_blob_id_of_bytes(bytes: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
    hasher.update(bytes);
    to_hex(&hasher.finalize())
}

/// Every entry under `root` by `/`-separated relative path: files as
/// `sha256:size`, directories as `dir`, symlinks as `-> target` (never
/// followed). A missing `root` gives an empty map. Used to prove a step left
/// a tree untouched (compare before and after).
///
/// # Errors
/// A sentence naming the entry that could not be read.
pub fn tree_digests(root: &Path) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut map = std::collections::BTreeMap::new();
    if !root.exists() {
        return Ok(map);
    }
    for entry in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
        let entry = entry.map_err(|e| format!("cannot walk {}: {e}", root.display()))?;
        let rel = entry
            .path()
            .strip_prefix(root)
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        let kind = entry.file_type();
        let value = if kind.is_dir() {
            "dir".to_string()
        } else if kind.is_symlink() {
            format!(
                "-> {}",
                std::fs::read_link(entry.path())
                    .map(|t| t.display().to_string())
                    .unwrap_or_default()
            )
        } else {
            let d = sha256_file(entry.path())
                .map_err(|e| format!("cannot hash {}: {e}", entry.path().display()))?;
            format!("{}:{}", d.hex(), d.size)
        };
        map.insert(rel, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_empty_input_is_the_published_constant() {
        let d = sha256_reader(&b""[..]).unwrap();
        assert_eq!(
            d.hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(d.size, 0);
    }

    /// A reader that yields `data` in pieces of at most `piece` bytes,
    /// is interrupted before every piece, then fails once with `end` if
    /// given, then ends; it records the largest buffer it was handed.
    struct Chunky {
        data: Vec<u8>,
        piece: usize,
        interrupt: bool,
        end: Option<io::ErrorKind>,
        largest_buffer: usize,
    }

    impl Read for Chunky {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.largest_buffer = self.largest_buffer.max(buf.len());
            if self.interrupt {
                self.interrupt = false;
                return Err(io::ErrorKind::Interrupted.into());
            }
            self.interrupt = true;
            if self.data.is_empty() {
                // The error once, then the end: a reader that went on after
                // it would return a digest.
                return match self.end.take() {
                    Some(kind) => Err(kind.into()),
                    None => Ok(0),
                };
            }
            let n = self.piece.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn sha256_of_abc_is_the_published_constant() {
        // FIPS 180-2, appendix B.1.
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_bytes(b"abc"), abc);
        assert_eq!(sha256_reader(&b"abc"[..]).unwrap().hex(), abc);
        assert_eq!(to_hex(&[0, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }

    #[test]
    fn a_streamed_digest_covers_every_piece_through_one_64_kib_buffer() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut reader = Chunky {
            data: data.clone(),
            piece: 70_000,
            interrupt: true,
            end: None,
            largest_buffer: 0,
        };
        let d = sha256_reader(&mut reader).unwrap();
        assert_eq!(d.hex(), sha256_bytes(&data));
        assert_eq!(d.size, 200_000);
        assert_eq!(reader.largest_buffer, 64 * 1024);
    }

    #[test]
    fn a_read_error_other_than_an_interruption_is_returned() {
        let mut reader = Chunky {
            data: b"partial".to_vec(),
            piece: 3,
            interrupt: true,
            end: Some(io::ErrorKind::UnexpectedEof),
            largest_buffer: 0,
        };
        let e = sha256_reader(&mut reader).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        // A directory opens but cannot be read: an error, never a digest.
        let dir = tempfile::tempdir().unwrap();
        assert!(git_blob_id(dir.path()).is_err());
        assert!(sha256_file(dir.path()).is_err());
    }

    #[test]
    fn tree_digests_name_every_file_directory_and_symlink_and_nothing_for_no_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), b"abc").unwrap();
        std::os::unix::fs::symlink("b/f", root.join("a/link")).unwrap();
        let map = tree_digests(root).unwrap();
        let expected: Vec<(String, String)> = vec![
            ("a".into(), "dir".into()),
            ("a/b".into(), "dir".into()),
            ("a/b/f".into(), format!("{}:3", sha256_bytes(b"abc"))),
            ("a/link".into(), "-> b/f".into()),
        ];
        assert_eq!(map.into_iter().collect::<Vec<_>>(), expected);
        assert!(tree_digests(&root.join("missing")).unwrap().is_empty());
    }

    #[test]
    fn git_blob_id_matches_git_hash_object() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            git_blob_id_of_bytes(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello\n").unwrap();
        assert_eq!(
            git_blob_id(&p).unwrap(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }
}
