//! `verify-coding-candidates signed --evidence DIR ARCHIVE --trusted-key
//! ID=BASE64`: is a signed archive one this evidence certified, signed by a
//! trusted key, with the claims that were certified?
//!
//! The SDK's own `certification.verify_archive` (0.7, `signed_probe.py`, run
//! by the verified interpreter of the candidate's SDK group) reads the
//! envelope from the ZIP comment and checks its schema, digest and manifest
//! identity; the key resolver is ours: Ed25519 over the payload the SDK
//! hands it, with the public keys given (base64 of 32 bytes, as LangBot
//! configures trusted issuers). Then the envelope must carry what the
//! evidence certified: the archive's normalized digest, plugin identity and
//! version, and the runtime claims of a candidate certified
//! `shared-runtime-v1`. Exit 0 valid and matching, 1 invalid or mismatching
//! (naming the field), 2 cannot run.

use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What `signed` was asked.
#[derive(Debug, Clone)]
pub struct SignedOptions {
    /// The evidence directory of the certification.
    pub evidence: PathBuf,
    /// The signed archive.
    pub archive: PathBuf,
    /// `ID=BASE64` each.
    pub trusted_keys: Vec<String>,
    /// Interpreter replacing the evidence's recorded one.
    pub python: Option<PathBuf>,
}

/// The answer: exit 0, 1 or 2 with its sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Valid and matching the evidence.
    Valid(String),
    /// Invalid, or not what the evidence certified.
    Invalid(String),
    /// Could not run.
    CannotRun(String),
}

/// A candidate as the evidence certified it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certified {
    /// Candidate folder.
    pub folder: String,
    /// `metadata.author`, `name`, `version`.
    pub author: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.version`.
    pub version: String,
    /// `archive.normalized_zip_digest`.
    pub digest: String,
    /// `placement.shared_runtime`, `component_model` as written.
    pub shared_runtime: Option<String>,
    /// `placement.component_model`.
    pub component_model: Option<String>,
    /// `placement.certified` (`None`: refused or not judged).
    pub placement: Option<String>,
    /// The verified interpreter of its run (`sdk.python`).
    pub python: String,
}

/// What `signed_probe.py` prints.
#[derive(Debug, Clone, Deserialize)]
pub struct ProbeAnswer {
    /// The SDK's status (`valid`, `absent`, ...).
    #[serde(default)]
    pub status: Option<String>,
    /// The envelope as the SDK read it (`to_dict()`).
    #[serde(default)]
    pub envelope: Option<Value>,
    /// The payload the SDK asked our resolver to verify.
    #[serde(default)]
    pub payload_b64: Option<String>,
    /// The signature it handed over.
    #[serde(default)]
    pub signature_b64: Option<String>,
    /// Why the probe could not check (an SDK without certification).
    #[serde(default)]
    pub error: Option<String>,
}

/// Parses `ID=BASE64` (a 32-byte Ed25519 public key).
///
/// # Errors
/// A sentence naming the argument and what is wrong.
pub fn parse_key(arg: &str) -> Result<(String, VerifyingKey), String> {
    let (id, b64) = arg
        .split_once('=')
        .filter(|(id, _)| !id.trim().is_empty())
        .ok_or_else(|| format!("--trusted-key {arg:?}: expected ID=BASE64"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| format!("--trusted-key {id}: not base64 ({e})"))?;
    let raw: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        format!(
            "--trusted-key {id}: {} bytes; expected the 32-byte Ed25519 public key",
            bytes.len()
        )
    })?;
    let key = VerifyingKey::from_bytes(&raw)
        .map_err(|e| format!("--trusted-key {id}: not an Ed25519 public key ({e})"))?;
    Ok((id.to_string(), key))
}

/// Every candidate certified in `dir` and in each SDK group's evidence
/// beside it, with its archive's normalized digest.
///
/// # Errors
/// When `dir/evidence.json` cannot be read as evidence.
pub fn certified(dir: &Path) -> Result<Vec<Certified>, String> {
    let path = dir.join("evidence.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: cannot read: {e}; expected an evidence directory",
            path.display()
        )
    })?;
    let ev: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let python = ev["sdk"]["python"].as_str().unwrap_or_default().to_string();
    let s = |v: &Value| v.as_str().map(str::to_string);
    let mut out: Vec<Certified> = ev["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some(Certified {
                folder: s(&c["folder"])?,
                author: s(&c["manifest"]["author"])?,
                name: s(&c["manifest"]["name"])?,
                version: s(&c["manifest"]["version"])?,
                digest: s(&c["archive"]["normalized_zip_digest"])?,
                shared_runtime: s(&c["placement"]["shared_runtime"]),
                component_model: s(&c["placement"]["component_model"]),
                placement: s(&c["placement"]["certified"]),
                python: python.clone(),
            })
        })
        .collect();
    for g in ev["sdk_groups"].as_array().into_iter().flatten() {
        if let (Some(rel), false) = (g["evidence"].as_str(), g["default"] == true) {
            out.extend(certified(&dir.join(rel))?);
        }
    }
    Ok(out)
}

/// Judges the SDK's answer against the keys and the certified candidate
/// (`None`: the archive's normalized digest is none the evidence certified).
pub fn judge(
    answer: &ProbeAnswer,
    keys: &[(String, VerifyingKey)],
    digest: &str,
    certified: Option<&Certified>,
) -> Outcome {
    let status = answer.status.as_deref().unwrap_or("(none)");
    let env = answer.envelope.clone().unwrap_or(Value::Null);
    if status != "valid" {
        let field = match status {
            "digest_mismatch" => format!(
                "digest: the envelope's digest {} is not the archive's normalized digest {digest} (a \
                 member or the archive changed after signing)",
                env["digest"]
            ),
            "manifest_mismatch" => match certified.and_then(|c| mismatch(&env, c)) {
                Some(field) => format!("the envelope is not the archive manifest's: {field}"),
                None => format!(
                    "the envelope's identity or claims (plugin_id {}, version {}, shared_runtime \
                     {}, component_model {}) are not the archive manifest's",
                    env["plugin_id"], env["version"], env["shared_runtime"], env["component_model"]
                ),
            },
            "unknown_key" => format!("key_id: {} is not a trusted key", env["key_id"]),
            other => format!("the SDK's verify_archive answered {other}"),
        };
        return Outcome::Invalid(format!("signed: {status}: {field}"));
    }
    let key_id = env["key_id"].as_str().unwrap_or_default();
    if let Err(why) = signature_holds(answer, keys, key_id) {
        return Outcome::Invalid(format!("signed: signature_invalid: {why}"));
    }
    let Some(c) = certified else {
        return Outcome::Invalid(format!(
            "signed: digest: the archive's normalized digest {digest} is no archive this evidence \
             certified; expected the archive of one of its candidates"
        ));
    };
    match mismatch(&env, c) {
        Some(why) => Outcome::Invalid(format!("signed: {why}")),
        None => Outcome::Valid(format!(
            "signed: valid: {} ({}/{} {}) signed by {key_id}, digest {digest}, certified \
             shared-runtime-v1",
            c.folder, c.author, c.name, c.version
        )),
    }
}

/// Ed25519 over the payload the SDK handed our resolver.
fn signature_holds(
    answer: &ProbeAnswer,
    keys: &[(String, VerifyingKey)],
    key_id: &str,
) -> Result<(), String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = keys
        .iter()
        .find(|(id, _)| id == key_id)
        .map(|(_, k)| k)
        .ok_or_else(|| format!("no trusted key {key_id}"))?;
    let payload = b64
        .decode(answer.payload_b64.as_deref().unwrap_or_default())
        .map_err(|e| format!("payload: {e}"))?;
    let sig = b64
        .decode(answer.signature_b64.as_deref().unwrap_or_default())
        .map_err(|e| format!("signature: {e}"))?;
    let sig = Signature::from_slice(&sig).map_err(|e| format!("signature: {e}"))?;
    key.verify_strict(&payload, &sig)
        .map_err(|_| format!("the signature does not verify with trusted key {key_id}"))
}

/// The first envelope field that is not what the evidence certified.
pub fn mismatch(env: &Value, c: &Certified) -> Option<String> {
    let text = |k: &str| env[k].as_str().map(str::to_string);
    let pairs = [
        ("digest", text("digest"), Some(c.digest.clone())),
        (
            "plugin_id.author",
            env["plugin_id"]["author"].as_str().map(str::to_string),
            Some(c.author.clone()),
        ),
        (
            "plugin_id.name",
            env["plugin_id"]["name"].as_str().map(str::to_string),
            Some(c.name.clone()),
        ),
        ("version", text("version"), Some(c.version.clone())),
        (
            "shared_runtime",
            text("shared_runtime"),
            c.shared_runtime.clone(),
        ),
        (
            "component_model",
            text("component_model"),
            c.component_model.clone(),
        ),
    ];
    for (field, found, expected) in pairs {
        if found != expected {
            return Some(format!(
                "{field}: the envelope says {found:?}, the evidence certified {expected:?} for {}",
                c.folder
            ));
        }
    }
    if c.placement.as_deref() != Some(crate::manifest_claims::SHARED_RUNTIME_V1) {
        return Some(format!(
            "placement: the evidence certified {} {}, not shared-runtime-v1: its shared claim is not \
             certified, so no envelope may be trusted for it",
            c.folder,
            c.placement.as_deref().unwrap_or("nothing (its shared claim was refused)")
        ));
    }
    None
}

/// Runs `signed`.
pub fn run(opts: &SignedOptions) -> Outcome {
    let keys: Result<Vec<_>, _> = opts.trusted_keys.iter().map(|k| parse_key(k)).collect();
    let keys = match keys {
        Ok(k) if !k.is_empty() => k,
        Ok(_) => {
            return Outcome::CannotRun(
                "signed: expected at least one --trusted-key ID=BASE64".into(),
            )
        }
        Err(e) => return Outcome::CannotRun(format!("signed: {e}")),
    };
    let all = match certified(&opts.evidence) {
        Ok(c) => c,
        Err(e) => return Outcome::CannotRun(format!("signed: {e}")),
    };
    let digest = match crate::certification::normalized_zip_digest(&opts.archive) {
        Ok(d) => d,
        Err(e) => return Outcome::Invalid(format!("signed: malformed: {e}")),
    };
    let found = all.iter().find(|c| c.digest == digest);
    let python = opts
        .python
        .clone()
        .or_else(|| found.or(all.first()).map(|c| PathBuf::from(&c.python)))
        .filter(|p| !p.as_os_str().is_empty());
    let Some(python) = python else {
        return Outcome::CannotRun(
            "signed: the evidence records no interpreter; pass --python with a verified SDK 0.7 \
             interpreter"
                .into(),
        );
    };
    match probe(&python, &opts.archive, &keys) {
        Ok(answer) => match &answer.error {
            Some(e) => Outcome::CannotRun(format!(
                "signed: {} cannot verify: {e}; pass --python with an SDK 0.7 interpreter",
                python.display()
            )),
            None => judge(&answer, &keys, &digest, found),
        },
        Err(e) => Outcome::CannotRun(format!("signed: {e}")),
    }
}

fn probe(
    python: &Path,
    archive: &Path,
    keys: &[(String, VerifyingKey)],
) -> Result<ProbeAnswer, String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("cannot create a temporary folder: {e}"))?;
    let ids: Vec<&str> = keys.iter().map(|(id, _)| id.as_str()).collect();
    let archive =
        std::path::absolute(archive).map_err(|e| format!("{}: {e}", archive.display()))?;
    let env = [("HOME", tmp.path()), ("TMPDIR", tmp.path())]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.display().to_string()))
        .collect();
    crate::python::Probe {
        python,
        name: "signed_probe",
        source: crate::python::SIGNED_PROBE,
        args: &[
            archive.display().to_string(),
            serde_json::to_string(&ids).unwrap_or_default(),
        ],
        cwd: tmp.path(),
        env,
        log_stem: &tmp.path().join("signed_probe"),
        timeout: crate::python::PROBE_TIMEOUT,
    }
    .run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};
    use serde_json::json;

    fn certified() -> Certified {
        Certified {
            folder: "p".into(),
            author: "acme".into(),
            name: "p".into(),
            version: "1.0.0".into(),
            digest: "d".repeat(64),
            shared_runtime: Some("shared-runtime-v1".into()),
            component_model: Some("stateless-v1".into()),
            placement: Some("shared-runtime-v1".into()),
            python: "/py".into(),
        }
    }

    fn envelope() -> Value {
        json!({"schema": "certified-plugin-envelope-v2", "key_id": "k",
               "plugin_id": {"author": "acme", "name": "p"}, "version": "1.0.0",
               "digest": "d".repeat(64), "shared_runtime": "shared-runtime-v1",
               "component_model": "stateless-v1", "signature": "x"})
    }

    fn answer(status: &str, signer: &SigningKey) -> ProbeAnswer {
        let b64 = base64::engine::general_purpose::STANDARD;
        ProbeAnswer {
            status: Some(status.into()),
            envelope: Some(envelope()),
            payload_b64: Some(b64.encode(b"payload")),
            signature_b64: Some(b64.encode(signer.sign(b"payload").to_bytes())),
            error: None,
        }
    }

    #[test]
    fn valid_only_with_a_holding_signature_and_the_certified_claims() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let other = SigningKey::from_bytes(&[8; 32]);
        let keys = vec![("k".to_string(), key.verifying_key())];
        let c = certified();
        let d = c.digest.clone();
        assert!(matches!(
            judge(&answer("valid", &key), &keys, &d, Some(&c)),
            Outcome::Valid(_)
        ));
        let bad = judge(&answer("valid", &other), &keys, &d, Some(&c));
        assert!(
            matches!(&bad, Outcome::Invalid(w) if w.contains("signature_invalid")),
            "{bad:?}"
        );
        let none = judge(&answer("valid", &key), &keys, &d, None);
        assert!(
            matches!(&none, Outcome::Invalid(w) if w.contains("no archive this evidence certified"))
        );
        let dedicated = Certified {
            placement: Some("dedicated".into()),
            ..certified()
        };
        let w = judge(&answer("valid", &key), &keys, &d, Some(&dedicated));
        assert!(
            matches!(&w, Outcome::Invalid(w) if w.contains("placement: the evidence certified p dedicated")),
            "{w:?}"
        );
        let older = Certified {
            version: "0.9.0".into(),
            ..certified()
        };
        let w = judge(&answer("manifest_mismatch", &key), &keys, &d, Some(&older));
        assert!(
            matches!(&w, Outcome::Invalid(w) if w.contains("version: the envelope says Some(\"1.0.0\")")),
            "{w:?}"
        );
        let w = judge(&answer("digest_mismatch", &key), &keys, &d, Some(&c));
        assert!(
            matches!(&w, Outcome::Invalid(w) if w.starts_with("signed: digest_mismatch: digest:")),
            "{w:?}"
        );
    }

    #[test]
    fn a_trusted_key_is_an_id_and_32_bytes_of_base64() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let public = SigningKey::from_bytes(&[7; 32]).verifying_key();
        let ok = parse_key(&format!("issuer={}", b64.encode(public.to_bytes()))).unwrap();
        assert_eq!(ok.0, "issuer");
        assert!(parse_key("nokey")
            .unwrap_err()
            .contains("expected ID=BASE64"));
        assert!(parse_key("=AAAA").is_err());
        assert!(parse_key(&format!("k={}", b64.encode([1u8; 31])))
            .unwrap_err()
            .contains("31 bytes"));
        assert!(parse_key("k=***").unwrap_err().contains("not base64"));
    }
}
