//! A child that failed because the disk holding its logs (the evidence
//! directory) is full: named as such, with the disk and its free space, not
//! blamed on the program. Python that cannot flush stdout into a log on a
//! full disk exits with status 120 and says nothing else; an `OSError` says
//! `[Errno 28] No space left on device`.

use std::path::Path;

/// Below this many free bytes a disk counts as full for a child whose
/// failure says nothing else (status 120: Python could not flush).
pub const NEARLY_FULL: u64 = 1024 * 1024;

/// What `statvfs` says of the file system holding `path`: (free bytes for
/// an unprivileged user, total bytes); `None` when it cannot be read.
pub fn space(path: &Path) -> Option<(u64, u64)> {
    let mut probe = path;
    // The folder may not exist yet: ask for the nearest existing parent.
    while !probe.exists() {
        probe = probe.parent()?;
    }
    let s = rustix::fs::statvfs(probe).ok()?;
    Some((
        s.f_bavail.saturating_mul(s.f_frsize),
        s.f_blocks.saturating_mul(s.f_frsize),
    ))
}

/// Whether a child's failure is the full disk: its output names ENOSPC
/// (`No space left on device`, `Errno 28`), or it exited with status 120
/// (Python's failed flush at exit) while the disk has under
/// [`NEARLY_FULL`] bytes free. Pure.
pub fn out_of_space(exit_code: Option<i32>, output: &str, free: Option<u64>) -> bool {
    let says = output.contains("No space left on device")
        || output.contains("[Errno 28]")
        || output.contains("ENOSPC");
    says || (exit_code == Some(120) && free.is_some_and(|f| f < NEARLY_FULL))
}

/// The sentence naming the full disk holding `dir`, when
/// [`out_of_space`] says the failure is that.
pub fn full_disk_hint(dir: &Path, exit_code: Option<i32>, output: &str) -> Option<String> {
    let space = space(dir);
    if !out_of_space(exit_code, output, space.map(|s| s.0)) {
        return None;
    }
    let free = space.map_or("an unknown number of".to_string(), |(f, _)| f.to_string());
    let total = space.map_or(String::new(), |(_, t)| format!(" of {t}"));
    Some(format!(
        "the disk holding {} is full ({free}{total} bytes free; the child could not write its output or \
         logs), so the program is not the cause: free space there or pass another --evidence directory, \
         then run again",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_in_the_output_or_a_silent_status_120_on_a_full_disk_is_the_disk() {
        assert!(out_of_space(
            Some(1),
            "OSError: [Errno 28] No space left on device",
            Some(10 << 30)
        ));
        assert!(out_of_space(Some(120), "", Some(4096)));
        // Status 120 with room left is the program's own failure.
        assert!(!out_of_space(Some(120), "", Some(10 << 30)));
        assert!(!out_of_space(Some(120), "", None));
        assert!(!out_of_space(Some(1), "ModuleNotFoundError: yaml", Some(0)));
    }

    #[test]
    fn the_hint_names_the_folder_and_its_free_space() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("logs/not-yet");
        let hint = full_disk_hint(&dir, Some(1), "No space left on device").unwrap();
        assert!(
            space(&dir).is_some(),
            "statvfs answers for a temporary folder"
        );
        // The free space itself moves with other writers: its shape only.
        assert!(
            hint.contains(&format!("the disk holding {} is full (", dir.display()))
                && hint.contains(" bytes free;")
                && !hint.contains("unknown"),
            "{hint}"
        );
        assert!(full_disk_hint(&dir, Some(1), "Traceback: KeyError").is_none());
    }
}
