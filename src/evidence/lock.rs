//! One run per evidence directory: an exclusive `flock` on the directory.
//!
//! Two runs started together into one fresh directory both find it missing
//! or empty; without a lock both proceed, one's residue sweep stops the
//! other's workers, and the `evidence.json` left is whichever wrote last. So
//! a run creates the directory, opens it (`O_DIRECTORY`), takes
//! `flock(LOCK_EX | LOCK_NB)` on that descriptor and only then checks again
//! that it is empty. The lock lives on the directory's own inode, not in a
//! file: the directory must start empty, `SHA256SUMS` lists every file in it
//! and `replay`/`merge` re-hash it, so a lock file inside (or a sibling
//! beside it, left behind by a killed run) would be in the way. The kernel
//! drops the lock when the run's last descriptor of it closes, however the
//! run ends; the descriptor is close-on-exec, so no child holds it.
//!
//! A run refused names the holder's pid, read from `/proc/locks` (which
//! lists every lock with its owner, device and inode).

use rustix::fs::{flock, fstat, open, FlockOperation, Mode, OFlags};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// The lock a run holds on its evidence directory until it is dropped.
#[derive(Debug)]
pub struct DirLock {
    _fd: OwnedFd,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "evidence dir {}: another run is writing into it ({}); one run writes one evidence \
         directory: wait for that run to end, or choose a fresh directory",
        dir.display(),
        holder.map_or_else(|| "its pid is not visible here".to_string(), |p| format!("pid {p} holds its lock"))
    )]
    Held {
        /// The directory.
        dir: PathBuf,
        /// The holder's pid, when `/proc/locks` shows it.
        holder: Option<i32>,
    },
    /// The directory could not be opened or locked.
    #[error(
        "evidence dir {}: cannot take its lock (open O_DIRECTORY, flock LOCK_EX): {source}; \
         expected a directory this user can read",
        dir.display()
    )]
    Io {
        /// The directory.
        dir: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// Takes the exclusive lock of directory `dir` (which must exist), without
/// waiting.
///
/// # Errors
/// [`LockError::Held`] when another process holds it, naming that process;
/// [`LockError::Io`] when `dir` cannot be opened as a directory.
pub fn acquire(dir: &Path) -> Result<DirLock, LockError> {
    let io = |e: rustix::io::Errno| LockError::Io {
        dir: dir.to_path_buf(),
        source: e.into(),
    };
    let fd = open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)?;
    match flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(DirLock { _fd: fd }),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(LockError::Held {
            dir: dir.to_path_buf(),
            holder: holder_of_fd(&fd),
        }),
        Err(e) => Err(io(e)),
    }
}

/// The pid holding a `flock` on directory `dir`, if any (read from
/// `/proc/locks`; nothing is locked or unlocked by asking).
pub fn holder(dir: &Path) -> Option<i32> {
    let fd = open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    holder_of_fd(&fd)
}

fn holder_of_fd(fd: &OwnedFd) -> Option<i32> {
    let st = fstat(fd).ok()?;
    let dev = st.st_dev;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    holder_in(
        &locks,
        rustix::fs::major(dev),
        rustix::fs::minor(dev),
        st.st_ino,
    )
}

/// The pid of the `FLOCK` holder of device `major:minor`, inode `ino` in
/// the text of `/proc/locks`. Its lines read
/// `1: FLOCK  ADVISORY  WRITE 4242 00:2f:1234 0 EOF` (the device in hex, the
/// inode in decimal); a waiter's line has `->` after the number and is not a
/// holder.
pub fn holder_in(locks: &str, major: u32, minor: u32, ino: u64) -> Option<i32> {
    let want = format!("{major:02x}:{minor:02x}:{ino}");
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) != Some(&"FLOCK") {
            return None;
        }
        (fields.get(5) == Some(&want.as_str()))
            .then(|| fields.get(4)?.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_read_from_the_flock_line_of_that_device_and_inode() {
        let locks = "\
1: POSIX  ADVISORY  WRITE 11 00:2f:77 0 EOF
2: FLOCK  ADVISORY  WRITE 22 00:2f:78 0 EOF
2: -> FLOCK  ADVISORY  WRITE 33 00:2f:77 0 EOF
3: FLOCK  ADVISORY  WRITE 44 fd:01:77 0 EOF
4: FLOCK  ADVISORY  WRITE 55 00:2f:77 0 EOF
";
        assert_eq!(holder_in(locks, 0, 0x2f, 77), Some(55));
        assert_eq!(holder_in(locks, 0xfd, 1, 77), Some(44));
        assert_eq!(holder_in(locks, 0, 0x2f, 78), Some(22));
        assert_eq!(holder_in(locks, 0, 0x2f, 79), None);
        assert_eq!(holder_in(locks, 0, 0x2f, 7), None, "not a prefix match");
    }

    #[test]
    fn a_second_lock_of_one_directory_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire(dir.path()).expect("the first lock");
        // A second open file description conflicts even in one process.
        match acquire(dir.path()) {
            Err(LockError::Held { dir: d, holder }) => {
                assert_eq!(d, dir.path());
                assert_eq!(holder, Some(std::process::id() as i32));
            }
            other => panic!("expected Held, found {other:?}"),
        }
        assert_eq!(holder(dir.path()), Some(std::process::id() as i32));
        let message = acquire(dir.path()).unwrap_err().to_string();
        assert!(
            message.contains(&format!("pid {} holds its lock", std::process::id())),
            "{message}"
        );
        drop(first);
        assert_eq!(holder(dir.path()), None);
        let _again = acquire(dir.path()).expect("free once dropped");
    }
}
