"""signed_probe: the SDK's own verify_archive over a signed archive.

Run as `python -I -c <this> ARCHIVE KEY_IDS_JSON`. Prints one JSON object:
`{"status", "envelope", "payload_b64", "signature_b64"}` or `{"error"}`.

The SDK leaves the signature algorithm to its caller (`KeyResolver`): the
resolver here knows the trusted key ids only, and its verifier records the
payload and signature the SDK hands it and answers True. The verifier (Rust,
Ed25519) then checks that signature; a `valid` status stands only if it
holds. Every other status (absent, malformed, unknown_key, digest_mismatch,
manifest_mismatch, unsupported_schema) is the SDK's own answer.
"""
import base64
import json
import sys

archive_path, key_ids = sys.argv[1], set(json.loads(sys.argv[2]))
try:
    from langbot_plugin import certification
except ImportError as exc:
    print(json.dumps({"error": f"this SDK has no langbot_plugin.certification ({exc})"}))
    sys.exit(0)

schema = getattr(certification, "CERTIFICATION_SCHEMA", None)
if schema != "certified-plugin-envelope-v2":
    # SDK 0.6.x carries certification.py with schema v1 only: it reads a v2
    # envelope as malformed, which would be its version's answer, not the
    # archive's.
    print(json.dumps({"error": f"this SDK's certification writes {schema}, not certified-plugin-envelope-v2"}))
    sys.exit(0)

seen = {}


def resolver(key_id):
    if key_id not in key_ids:
        return None

    def verify(payload, signature):
        seen["payload"] = payload
        seen["signature"] = signature
        return True

    return verify


with open(archive_path, "rb") as f:
    data = f.read()
result = certification.verify_archive(data, resolver)
envelope = result.envelope.to_dict() if result.envelope is not None else None
print(
    json.dumps(
        {
            "status": result.status,
            "envelope": envelope,
            "payload_b64": base64.b64encode(seen["payload"]).decode() if "payload" in seen else None,
            "signature_b64": base64.b64encode(seen["signature"]).decode() if "signature" in seen else None,
            "sdk_normalized_digest": certification.normalized_zip_digest(data),
        }
    )
)
