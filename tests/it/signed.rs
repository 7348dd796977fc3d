//! What a signer needs, checked against SDK 0.7.18's own
//! `langbot_plugin/certification.py` (provisioned by the verifier's `sdk`
//! command, hash-locked, in the user's cache), and `signed` over an archive
//! of ours signed in the test with a test key: our normalized digest and
//! canonical payload are byte-equal to the SDK's; a valid signature of the
//! certified claims exits 0, and a wrong key, a tampered member or an
//! envelope for another version exit 1 naming why.

use crate::common;

use base64::Engine as _;
use common::{python_0718, verifier_without_python};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use verify_coding_candidates::certification::{self, PluginId, UnsignedEnvelope};

/// Runs `code` in the SDK interpreter with `args`; its stdout.
fn sdk_py(python: &Path, code: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(python)
        .arg("-I")
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

const MANIFEST: &str =
    "apiVersion: v1\nkind: Plugin\nmetadata:\n  author: acme\n  name: stateless\n  \
                        version: \"1.0.0\"\nexecution:\n  python: {path: main.py, attr: P}\n  \
                        sharedRuntime: shared-runtime-v1\n  componentModel: stateless-v1\n";

/// An archive of ours: the manifest and a stored (uncompressed) main.py.
fn archive() -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut buf);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("manifest.yaml", opts).unwrap();
    w.write_all(MANIFEST.as_bytes()).unwrap();
    w.start_file("main.py", opts).unwrap();
    w.write_all(b"class P:\n    MARK = 'original'\n").unwrap();
    w.finish().unwrap();
    buf.into_inner()
}

fn envelope(digest: &str, version: &str, key_id: &str) -> UnsignedEnvelope {
    UnsignedEnvelope {
        component_model: Some("stateless-v1".into()),
        digest: digest.into(),
        key_id: key_id.into(),
        plugin_id: PluginId {
            author: "acme".into(),
            name: "stateless".into(),
        },
        schema: certification::ENVELOPE_SCHEMA.into(),
        shared_runtime: Some("shared-runtime-v1".into()),
        version: version.into(),
    }
}

const WRITE: &str = "import sys, json\nfrom langbot_plugin.certification import CertificationEnvelope, \
                     write_envelope\nd = json.loads(sys.argv[3])\ndata = open(sys.argv[1], 'rb').read()\n\
                     open(sys.argv[2], 'wb').write(write_envelope(data, CertificationEnvelope(**d)))\n";

/// Signs `e` with `key` (Ed25519 over our canonical payload) and writes it
/// into `archive`'s ZIP comment with the SDK's own `write_envelope`.
fn sign(
    python: &Path,
    dir: &Path,
    archive: &Path,
    e: &UnsignedEnvelope,
    key: &SigningKey,
    name: &str,
) -> PathBuf {
    let sig = key.sign(&e.canonical_payload());
    let mut full = serde_json::to_value(e).unwrap();
    full["signature"] = json!(base64::engine::general_purpose::STANDARD.encode(sig.to_bytes()));
    let out = dir.join(name);
    sdk_py(
        python,
        WRITE,
        &[
            archive.to_str().unwrap(),
            out.to_str().unwrap(),
            &full.to_string(),
        ],
    );
    out
}

#[test]
fn our_normalized_digest_and_payload_are_the_sdks_own() {
    let python = python_0718();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.lbpkg");
    std::fs::write(&plain, archive()).unwrap();
    let digest = certification::normalized_zip_digest(&plain).unwrap();
    let sdk_digest = |p: &Path| {
        let code = "import sys\nfrom langbot_plugin.certification import normalized_zip_digest\n\
                    print(normalized_zip_digest(open(sys.argv[1], 'rb').read()))";
        String::from_utf8(sdk_py(&python, code, &[p.to_str().unwrap()]))
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(digest, sdk_digest(&plain));
    // With the SDK's own envelope in the comment: still the SDK's digest.
    let key = SigningKey::from_bytes(&[7; 32]);
    let signed = sign(
        &python,
        dir.path(),
        &plain,
        &envelope(&digest, "1.0.0", "k"),
        &key,
        "s.lbpkg",
    );
    assert_eq!(
        certification::normalized_zip_digest(&signed).unwrap(),
        sdk_digest(&signed)
    );
    assert_eq!(
        certification::normalized_zip_digest(&signed).unwrap(),
        digest
    );
    // The payload the placement gate writes is canonical_json(unsigned_dict()).
    let mut e = envelope(&digest, "1.0.0", "");
    e.plugin_id.author = "zoë \"q\" \\ \u{1}".into();
    let code = "import sys, json\nfrom langbot_plugin.certification import CertificationEnvelope, \
                canonical_json\nd = json.loads(sys.argv[1])\nd['signature'] = ''\n\
                sys.stdout.buffer.write(canonical_json(CertificationEnvelope(**d).unsigned_dict()))";
    let sdk_payload = sdk_py(&python, code, &[&serde_json::to_string(&e).unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&e.canonical_payload()),
        String::from_utf8_lossy(&sdk_payload)
    );
    assert_eq!(e.canonical_payload(), sdk_payload);
}

/// An evidence.json certifying the archive `digest` as `placement`.
fn evidence(dir: &Path, python: &Path, digest: &str, placement: Value) -> PathBuf {
    let ev = dir.join("evidence");
    std::fs::create_dir_all(&ev).unwrap();
    let doc = json!({
        "sdk": {"python": python},
        "candidates": [{
            "folder": "stateless-plugin",
            "manifest": {"author": "acme", "name": "stateless", "version": "1.0.0"},
            "archive": {"normalized_zip_digest": digest},
            "placement": {"shared_runtime": "shared-runtime-v1", "component_model": "stateless-v1",
                          "certified": placement},
        }]
    });
    std::fs::write(ev.join("evidence.json"), doc.to_string()).unwrap();
    ev
}

fn signed(ev: &Path, archive: &Path, key: &SigningKey) -> (i32, String) {
    let public = base64::engine::general_purpose::STANDARD.encode(key.verifying_key().to_bytes());
    let out = verifier_without_python()
        .args(["signed", "--evidence"])
        .arg(ev)
        .arg(archive)
        .args(["--trusted-key", &format!("test-issuer={public}")])
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), common::both(&out))
}

#[test]
fn signed_accepts_only_the_certified_archive_signed_by_a_trusted_key() {
    let python = python_0718();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.lbpkg");
    let bytes = archive();
    std::fs::write(&plain, &bytes).unwrap();
    let digest = certification::normalized_zip_digest(&plain).unwrap();
    let ev = evidence(dir.path(), &python, &digest, json!("shared-runtime-v1"));
    let key = SigningKey::from_bytes(&[7; 32]);
    let good = sign(
        &python,
        dir.path(),
        &plain,
        &envelope(&digest, "1.0.0", "test-issuer"),
        &key,
        "good.lbpkg",
    );

    let (code, text) = signed(&ev, &good, &key);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("signed: valid: stateless-plugin"), "{text}");

    // Another key under the trusted id: the signature does not hold.
    let (code, text) = signed(&ev, &good, &SigningKey::from_bytes(&[9; 32]));
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("signature_invalid"), "{text}");

    // A member changed after signing (same length, stored): digest mismatch.
    let mut tampered = std::fs::read(&good).unwrap();
    let at = tampered.windows(8).position(|w| w == b"original").unwrap();
    tampered[at..at + 8].copy_from_slice(b"tampered");
    let tampered_path = dir.path().join("tampered.lbpkg");
    std::fs::write(&tampered_path, &tampered).unwrap();
    let (code, text) = signed(&ev, &tampered_path, &key);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("digest_mismatch: digest:"), "{text}");

    // An envelope for another version: the SDK refuses it, and the field is named.
    let other = sign(
        &python,
        dir.path(),
        &plain,
        &envelope(&digest, "9.9.9", "test-issuer"),
        &key,
        "other.lbpkg",
    );
    let (code, text) = signed(&ev, &other, &key);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("manifest_mismatch")
            && text.contains("version: the envelope says Some(\"9.9.9\")"),
        "{text}"
    );

    // Valid, but the evidence did not certify the shared claim.
    let refused = evidence(&dir.path().join("refused"), &python, &digest, Value::Null);
    let (code, text) = signed(&refused, &good, &key);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("placement: the evidence certified stateless-plugin nothing"),
        "{text}"
    );

    // An SDK whose certification is schema v1 only (0.6.0b5): cannot run.
    let old = evidence(
        &dir.path().join("old"),
        &common::python(),
        &digest,
        json!("shared-runtime-v1"),
    );
    let (code, text) = signed(&old, &good, &key);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("certified-plugin-envelope-v1, not certified-plugin-envelope-v2"),
        "{text}"
    );
}
