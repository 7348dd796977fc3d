//! Every child's `<stem>.stdout` and `<stem>.stderr` log is capped once the
//! child has ended: a test printing hundreds of megabytes must not fill the
//! evidence directory. A log over [`LOG_CAP`] keeps its first [`LOG_HEAD`]
//! and last [`LOG_TAIL`] bytes, with one line between them saying where it
//! was cut and how many bytes were left out.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Bytes kept from the start of a capped log (24 MiB).
pub const LOG_HEAD: u64 = 24 * 1024 * 1024;
/// Bytes kept from the end of a capped log (8 MiB).
pub const LOG_TAIL: u64 = 8 * 1024 * 1024;
/// The most bytes a log keeps (32 MiB): larger logs are cut.
pub const LOG_CAP: u64 = LOG_HEAD + LOG_TAIL;

/// Cuts the log at `path` to `head` + `tail` bytes when it is longer,
/// writing the marker line between them; returns the marker when it cut.
///
/// # Errors
/// When the file cannot be read or rewritten.
pub fn cap_log(path: &Path, head: u64, tail: u64) -> std::io::Result<Option<String>> {
    let mut f = OpenOptions::new().read(true).write(true).open(path)?;
    let size = f.metadata()?.len();
    if size <= head + tail {
        return Ok(None);
    }
    let mut end = Vec::with_capacity(tail as usize);
    f.seek(SeekFrom::Start(size - tail))?;
    (&mut f).take(tail).read_to_end(&mut end)?;
    let marker = format!(
        "\n[verify-coding-candidates: log cut here: bytes {head}..{} of {size} ({} bytes) left out; the \
         first {head} and the last {tail} bytes are kept]\n",
        size - tail,
        size - tail - head
    );
    f.set_len(head)?;
    f.seek(SeekFrom::Start(head))?;
    f.write_all(marker.as_bytes())?;
    f.write_all(&end)?;
    Ok(Some(marker.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_log_keeps_its_head_and_tail_and_says_where_it_was_cut() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.stdout");
        let text: Vec<u8> = (0..1000u32)
            .flat_map(|i| format!("{i:04}\n").into_bytes())
            .collect();
        std::fs::write(&p, &text).unwrap();
        let marker = cap_log(&p, 50, 25).unwrap().expect("cut");
        assert_eq!(
            marker,
            "[verify-coding-candidates: log cut here: bytes 50..4975 of 5000 (4925 bytes) left out; the \
             first 50 and the last 25 bytes are kept]"
        );
        let kept = std::fs::read_to_string(&p).unwrap();
        assert!(kept.starts_with("0000\n0001\n"), "{kept}");
        assert!(kept.ends_with("0995\n0996\n0997\n0998\n0999\n"), "{kept}");
        assert!(kept.contains(&format!("\n{marker}\n")), "{kept}");
        // A log within the cap is left as it is.
        std::fs::write(&p, b"short\n").unwrap();
        assert_eq!(cap_log(&p, 50, 25).unwrap(), None);
        assert_eq!(std::fs::read(&p).unwrap(), b"short\n");
    }
}
