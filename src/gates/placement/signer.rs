//! What the signer gets for a candidate certified `shared-runtime-v1`:
//! `DIR/envelopes/<folder>/envelope.json`, the SDK's `CertificationEnvelope`
//! fields with `key_id` and `signature` empty, and
//! `DIR/envelopes/<folder>/payload.json`, the exact bytes the SDK's
//! `sign_envelope` signs for it (`canonical_json(unsigned_dict())`, with
//! `key_id` empty: the signer sets its key id and signs the canonical JSON
//! of the result, as `sign_envelope` does). The verifier never signs.

use crate::certification::{PluginId, UnsignedEnvelope, ENVELOPE_SCHEMA};
use crate::evidence::{CandidateRecord, PlacementRecord};
use std::path::Path;

/// The folder of DIR the envelopes go to (catalogue `writes`).
pub const ENVELOPES: &str = "envelopes";

/// The unsigned envelope of a candidate: its manifest identity, its
/// archive's normalized digest and its runtime claims; `None` without a
/// manifest identity.
pub fn envelope(
    c: &CandidateRecord,
    digest: &str,
    p: &PlacementRecord,
) -> Option<UnsignedEnvelope> {
    let id = c.manifest.as_ref()?;
    Some(UnsignedEnvelope {
        component_model: p.component_model.clone(),
        digest: digest.to_string(),
        key_id: String::new(),
        plugin_id: PluginId {
            author: id.author.clone(),
            name: id.name.clone(),
        },
        schema: ENVELOPE_SCHEMA.into(),
        shared_runtime: p.shared_runtime.clone(),
        version: id.version.clone(),
    })
}

/// Writes the two files of `folder` under `dir`/envelopes; returns their
/// paths relative to `dir`.
///
/// # Errors
/// A sentence naming the file that could not be written.
pub fn write(dir: &Path, folder: &str, e: &UnsignedEnvelope) -> Result<Vec<String>, String> {
    let rel = format!("{ENVELOPES}/{folder}");
    let at = dir.join(&rel);
    std::fs::create_dir_all(&at)
        .map_err(|err| format!("{}: cannot create: {err}", at.display()))?;
    let mut shown = serde_json::to_value(e).expect("plain strings serialise");
    shown["signature"] = serde_json::json!("");
    let files = [
        (
            "envelope.json",
            serde_json::to_vec_pretty(&shown).expect("json"),
        ),
        ("payload.json", e.canonical_payload()),
    ];
    let mut written = Vec::new();
    for (name, bytes) in files {
        let path = at.join(name);
        std::fs::write(&path, bytes)
            .map_err(|err| format!("{}: cannot write: {err}", path.display()))?;
        written.push(format!("{rel}/{name}"));
    }
    Ok(written)
}
