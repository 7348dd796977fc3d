//! Evidence: the model and its views (`evidence.json`, `junit.xml`,
//! `SHA256SUMS`), each written atomically into the evidence directory.

pub mod junit;
pub mod model;
pub mod statement;

pub use model::*;

use crate::hash;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// File name of the JSON evidence.
pub const EVIDENCE_JSON: &str = "evidence.json";
/// File name of the JUnit report.
pub const JUNIT_XML: &str = "junit.xml";
/// File name of the digest list.
pub const SHA256SUMS: &str = "SHA256SUMS";

/// The JSON schema of [`Evidence`], as checked in at
/// `evidence-schema/v1/evidence.schema.json`.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(Evidence);
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serialises");
    text.push('\n');
    text
}

/// Recursively sorts object keys, so serialisation is canonical.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The sign-off digest of an evidence document: sha256 hex of the document
/// with the top-level `sign_off` removed, object keys sorted, serialised
/// compactly (no whitespace) as UTF-8. Replay recomputes it from the file.
pub fn canonical_digest(document: &serde_json::Value) -> String {
    let mut doc = document.clone();
    if let Some(map) = doc.as_object_mut() {
        map.remove("sign_off");
    }
    let text = serde_json::to_string(&sorted(doc)).expect("JSON value serialises");
    hash::sha256_bytes(text.as_bytes())
}

/// Fills `evidence.sign_off` (verdict and digest) from the rest of `evidence`.
pub fn seal(evidence: &mut Evidence, signed_off_by: Option<String>) {
    evidence.sign_off = SignOff {
        verdict: evidence.verdict,
        evidence_sha256: String::new(),
        signed_off_by,
        archives_signed: false,
    };
    let value = serde_json::to_value(&*evidence).expect("evidence serialises");
    evidence.sign_off.evidence_sha256 = canonical_digest(&value);
}

/// Writes `bytes` to `dir/name` atomically: a temporary file in `dir`,
/// flushed and synced, then renamed over the target.
///
/// # Errors
/// Any I/O error; the target is then untouched.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(dir.join(name)).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `evidence.json`, `junit.xml`, `statement.intoto.json` and last `SHA256SUMS` (every regular
/// file under `dir` but itself, `sha256sum -c` format, sorted by path).
///
/// # Errors
/// Any I/O error.
pub fn write_all(dir: &Path, evidence: &Evidence) -> io::Result<()> {
    let mut json = serde_json::to_string_pretty(evidence).map_err(io::Error::other)?;
    json.push('\n');
    write_atomic(dir, EVIDENCE_JSON, json.as_bytes())?;
    write_atomic(dir, JUNIT_XML, junit::render(evidence)?.as_bytes())?;
    let mut statement =
        serde_json::to_string_pretty(&statement::render(evidence)).map_err(io::Error::other)?;
    statement.push('\n');
    write_atomic(dir, statement::STATEMENT_JSON, statement.as_bytes())?;
    write_atomic(dir, SHA256SUMS, sha256sums(dir)?.as_bytes())
}

/// The `SHA256SUMS` text for `dir`.
///
/// # Errors
/// Any I/O error while walking or hashing.
pub fn sha256sums(dir: &Path) -> io::Result<String> {
    let mut lines = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(io::Error::other)?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(dir).map_err(io::Error::other)?;
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel == SHA256SUMS || rel.starts_with(&format!(".{SHA256SUMS}.")) {
            continue;
        }
        let digest = hash::sha256_file(entry.path())?;
        lines.push(format!("{}  {}\n", digest.hex(), rel));
    }
    Ok(lines.concat())
}

/// Reads and parses `dir/evidence.json`.
///
/// # Errors
/// I/O or JSON errors, as text naming the file.
pub fn read(dir: &Path) -> Result<Evidence, String> {
    let path = dir.join(EVIDENCE_JSON);
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_digest_ignores_key_order_and_sign_off() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":3},"sign_off":{"v":1}}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":{"x":3,"y":2},"b":1}"#).unwrap();
        assert_eq!(canonical_digest(&a), canonical_digest(&b));
        let c: serde_json::Value = serde_json::from_str(r#"{"a":{"x":3,"y":2},"b":2}"#).unwrap();
        assert_ne!(canonical_digest(&a), canonical_digest(&c));
    }
}
