//! The temporary directory of `cargo xtask test`: a fresh folder on a
//! RAM-backed file system when the machine has one to spare.
//!
//! Every integration test writes its fixture repository and evidence under
//! the temporary directory, and every verifier run writes thousands of small
//! files there (the staged tree, the seeded bytecode cache, the builds, the
//! sandboxes' roots). On ext4 much of that is the kernel's file-system
//! work (measured on a 2-core machine: one full certification of the
//! fixture 16.8 s user and 3.1 s system with the evidence on ext4, 15.2 s
//! and 1.6 s on tmpfs; a whole test run 1 848 CPU-s, 470 of them the
//! kernel's, on ext4, 1 652 and 200 on tmpfs). One thing differs: the
//! SDK's `lbp build` adds a folder's files in the order the file system
//! lists them (tmpfs: newest first; a small ext4 folder: as created), so
//! an archive's members come in another order; the evidence snapshot test
//! compares them by name.
//!
//! Chosen: `$VCC_TEST_TMPDIR` when set (an empty value keeps the system's
//! temporary directory); else, when `TMPDIR` is not set, a fresh folder in
//! `/dev/shm` if it is a tmpfs with at least [`MIN_FREE`] bytes available;
//! else the system's temporary directory, as before.

use std::path::{Path, PathBuf};

/// The space `/dev/shm` must have available to be used: the test run's
/// temporary files peaked at 456 MiB (measured over a whole run: fixture copies, evidence
/// directories, four interpreter copies, the shared runs).
pub const MIN_FREE: u64 = 2 << 30;

/// `statfs` magic number of tmpfs (`TMPFS_MAGIC`, linux/magic.h).
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Where the test run's temporary files go: `Ok(Some(folder))` for a fresh
/// folder this call made (the caller removes it), `Ok(None)` for the
/// system's temporary directory, with the reason in the second value for
/// the progress line.
///
/// # Errors
/// When `$VCC_TEST_TMPDIR` names a folder that cannot be created.
pub fn choose() -> anyhow::Result<(Option<PathBuf>, String)> {
    if let Some(dir) = std::env::var_os("VCC_TEST_TMPDIR") {
        if dir.is_empty() {
            return Ok((None, "VCC_TEST_TMPDIR is empty: the system's".into()));
        }
        let dir = fresh_under(Path::new(&dir))?;
        let why = format!("{} (VCC_TEST_TMPDIR)", dir.display());
        return Ok((Some(dir), why));
    }
    if std::env::var_os("TMPDIR").is_some_and(|v| !v.is_empty()) {
        return Ok((None, "TMPDIR is set: kept".into()));
    }
    let shm = Path::new("/dev/shm");
    match available_tmpfs(shm) {
        Some(free) if free >= MIN_FREE => {
            sweep_stale(shm);
            let dir = fresh_under(shm)?;
            let why = format!(
                "{} (tmpfs, {} GiB available; VCC_TEST_TMPDIR= keeps the system's)",
                dir.display(),
                free >> 30
            );
            Ok((Some(dir), why))
        }
        Some(free) => Ok((
            None,
            format!(
                "the system's: /dev/shm has {} MiB available, under the {} GiB the run needs",
                free >> 20,
                MIN_FREE >> 30
            ),
        )),
        None => Ok((None, "the system's: /dev/shm is not a tmpfs".into())),
    }
}

/// Bytes available to an unprivileged writer on `dir` when it is a tmpfs.
fn available_tmpfs(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a valid C string and `fs` a writable statfs.
    if unsafe { libc::statfs(path.as_ptr(), &mut fs) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)]
    let kind = fs.f_type as i64;
    if kind != TMPFS_MAGIC {
        return None;
    }
    #[allow(clippy::unnecessary_cast)]
    Some((fs.f_bavail as u64).saturating_mul(fs.f_bsize as u64))
}

/// A new folder `vcc-test-tmp-<pid>-<n>` under `parent`, private to its owner.
fn fresh_under(parent: &Path) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::create_dir_all(parent).with_context(|| format!("create {}", parent.display()))?;
    for n in 0..100 {
        let dir = parent.join(format!("vcc-test-tmp-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("create {}", dir.display())),
        }
    }
    anyhow::bail!("cannot create a fresh folder under {}", parent.display())
}

/// Removes the folders of earlier test runs under `parent` whose process is
/// gone (a run stopped by a signal leaves its folder, and tmpfs is memory).
fn sweep_stale(parent: &Path) {
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("vcc-test-tmp-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().filter(|p| p.parse::<u32>().is_ok()) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            eprintln!(
                "test: removing {} (left by an earlier run)",
                entry.path().display()
            );
            crate::remove_tree(&entry.path());
        }
    }
}
