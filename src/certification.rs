//! What a signer needs, as SDK 0.7.18 defines it
//! (`langbot_plugin/certification.py`): the archive's normalized digest and
//! the unsigned certification envelope with its canonical payload bytes.
//! The verifier never signs.
//!
//! - `normalized_zip_digest(archive)`: sha256 of the archive with only its
//!   ZIP comment removed: the bytes up to the end-of-central-directory
//!   record's comment-length field, then a zero length (`\0\0`). The record
//!   is the last `PK\x05\x06` within the final 65535 + 22 bytes whose
//!   comment runs exactly to the end of the file (`_locate_zip_eocd`). For
//!   an archive with an empty comment this is its sha256.
//! - `CertificationEnvelope.unsigned_dict()` (schema
//!   `certified-plugin-envelope-v2`): `schema`, `key_id`, `plugin_id`
//!   {author, name}, `version`, `digest`, `shared_runtime`,
//!   `component_model`; `sign_envelope` signs `canonical_json` of it:
//!   `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
//!   as UTF-8.

use sha2::{Digest, Sha256};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The envelope schema SDK 0.7.18 writes and requires of a new envelope.
pub const ENVELOPE_SCHEMA: &str = "certified-plugin-envelope-v2";

/// The end-of-central-directory record's signature.
const EOCD: &[u8; 4] = b"PK\x05\x06";
/// Its size without the comment.
const EOCD_LEN: usize = 22;

/// Where the end-of-central-directory record of `tail` starts and its
/// comment length, as the SDK's `_locate_zip_eocd` finds it; `tail` is the
/// last `min(len, 65535 + 22)` bytes of the file, so the offset is into it.
///
/// # Errors
/// The SDK's own message when there is no such record.
pub fn locate_eocd(tail: &[u8]) -> Result<(usize, usize), String> {
    let mut end = tail.len();
    while let Some(pos) = tail[..end].windows(4).rposition(|w| w == EOCD) {
        if pos + EOCD_LEN <= tail.len() {
            let len = usize::from(u16::from_le_bytes([tail[pos + 20], tail[pos + 21]]));
            if pos + EOCD_LEN + len == tail.len() {
                return Ok((pos, len));
            }
        }
        // The SDK's next `rfind(sig, start, position)`: a match lying
        // wholly before the previous one's start.
        end = pos;
    }
    Err("archive has no valid ZIP end-of-central-directory record".into())
}

/// The SDK's `normalized_zip_digest` of `archive` (in memory).
///
/// # Errors
/// As [`locate_eocd`].
pub fn normalized_zip_digest_of(archive: &[u8]) -> Result<String, String> {
    let start = archive.len().saturating_sub(0xFFFF + EOCD_LEN);
    let (pos, _) = locate_eocd(&archive[start..])?;
    let mut h = Sha256::new();
    h.update(&archive[..start + pos + 20]);
    h.update([0u8, 0u8]);
    Ok(crate::hash::to_hex(&h.finalize()))
}

/// The SDK's `normalized_zip_digest` of the file at `path`, hashed as a
/// stream (only the last 64 KiB are held).
///
/// # Errors
/// A sentence naming the file: unreadable, or no end-of-central-directory
/// record.
pub fn normalized_zip_digest(path: &Path) -> Result<String, String> {
    let io = |e: std::io::Error| format!("{}: cannot read: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let start = len.saturating_sub((0xFFFF + EOCD_LEN) as u64);
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).map_err(io)?;
    let (pos, _) = locate_eocd(&tail).map_err(|e| format!("{}: {e}", path.display()))?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut h = Sha256::new();
    let mut prefix = file.take(start + pos as u64 + 20);
    std::io::copy(&mut prefix, &mut h).map_err(io)?;
    h.update([0u8, 0u8]);
    Ok(crate::hash::to_hex(&h.finalize()))
}

/// `plugin_id` of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PluginId {
    /// `metadata.author`.
    pub author: String,
    /// `metadata.name`.
    pub name: String,
}

/// The SDK's `CertificationEnvelope` without its signature, fields in
/// sorted order, so its compact serde_json form is the SDK's
/// `canonical_json(unsigned_dict())`: `key_id` empty, for the signer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UnsignedEnvelope {
    /// `stateless-v1`.
    pub component_model: Option<String>,
    /// The normalized digest (sha256 hex).
    pub digest: String,
    /// The signer's key id; empty until the signer sets it.
    pub key_id: String,
    /// `{author, name}`.
    pub plugin_id: PluginId,
    /// [`ENVELOPE_SCHEMA`].
    pub schema: String,
    /// `shared-runtime-v1`.
    pub shared_runtime: Option<String>,
    /// `metadata.version`.
    pub version: String,
}

impl UnsignedEnvelope {
    /// The bytes `sign_envelope` signs: sorted keys, `,` and `:` without
    /// spaces, non-ASCII kept as UTF-8 (Python's `ensure_ascii=False`
    /// escapes only `"`, `\` and control characters, as serde_json does).
    pub fn canonical_payload(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("plain strings serialise")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_with_comment(comment: &[u8]) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut w = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        w.start_file("manifest.yaml", opts).unwrap();
        w.write_all(b"metadata: {author: a, name: b, version: '1'}\n")
            .unwrap();
        w.finish().unwrap();
        let mut data = buf.into_inner();
        // Replace the empty comment as the SDK's `_replace_zip_comment` does.
        let n = data.len();
        data.truncate(n - 2);
        data.extend_from_slice(&u16::try_from(comment.len()).unwrap().to_le_bytes());
        data.extend_from_slice(comment);
        data
    }

    #[test]
    fn the_normalized_digest_drops_only_the_comment() {
        let plain = zip_with_comment(b"");
        let d = normalized_zip_digest_of(&plain).unwrap();
        assert_eq!(
            d,
            crate::hash::sha256_bytes(&plain),
            "no comment: the file's own sha256"
        );
        // A comment, even one holding an EOCD signature, is dropped.
        let signed = zip_with_comment(b"{\"x\":\"PK\x05\x06 inside\"}");
        assert_ne!(crate::hash::sha256_bytes(&signed), d);
        assert_eq!(normalized_zip_digest_of(&signed).unwrap(), d);
        // Streamed from a file: the same.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.lbpkg");
        std::fs::write(&path, &signed).unwrap();
        assert_eq!(normalized_zip_digest(&path).unwrap(), d);
        // Not a ZIP: the SDK's own refusal.
        let err = normalized_zip_digest_of(b"not a zip").unwrap_err();
        assert!(
            err.contains("no valid ZIP end-of-central-directory record"),
            "{err}"
        );
        // A comment length that overruns the file is no record either.
        let mut bad = plain.clone();
        let n = bad.len();
        bad[n - 2] = 5;
        assert!(normalized_zip_digest_of(&bad).is_err());
    }

    #[test]
    fn the_payload_is_sorted_compact_utf8_json() {
        let e = UnsignedEnvelope {
            component_model: Some("stateless-v1".into()),
            digest: "ab".into(),
            key_id: String::new(),
            plugin_id: PluginId {
                author: "zoë".into(),
                name: "q\"\\\n\u{1}".into(),
            },
            schema: ENVELOPE_SCHEMA.into(),
            shared_runtime: None,
            version: "1".into(),
        };
        assert_eq!(
            String::from_utf8(e.canonical_payload()).unwrap(),
            "{\"component_model\":\"stateless-v1\",\"digest\":\"ab\",\"key_id\":\"\",\
             \"plugin_id\":{\"author\":\"zoë\",\"name\":\"q\\\"\\\\\\n\\u0001\"},\
             \"schema\":\"certified-plugin-envelope-v2\",\"shared_runtime\":null,\"version\":\"1\"}"
        );
    }
}
