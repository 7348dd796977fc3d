//! The checked-in evidence schema is the one generated from the Rust types,
//! and a real evidence document satisfies it.

use std::path::Path;

const SCHEMA_PATH: &str = "evidence-schema/v1/evidence.schema.json";

fn checked_in() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_PATH);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `cargo xtask schema` to create it",
            path.display()
        )
    })
}

#[test]
fn checked_in_schema_matches_the_evidence_types() {
    let generated = verify_coding_candidates::evidence::schema_json();
    assert!(
        checked_in() == generated,
        "{SCHEMA_PATH} differs from the schema generated from src/evidence/model.rs; \
         run `cargo xtask schema` and commit the result"
    );
}

#[test]
fn checked_in_schema_is_a_valid_json_schema_naming_the_stable_fields() {
    let schema: serde_json::Value =
        serde_json::from_str(&checked_in()).expect("the schema is JSON");
    jsonschema::meta::validate(&schema).expect("the schema is a valid JSON Schema");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .expect("top-level required")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for field in [
        "schema_version",
        "tool",
        "verdict",
        "source",
        "sdk",
        "gates",
        "candidates",
        "sign_off",
    ] {
        assert!(
            required.contains(&field),
            "stable field {field} must be required; required: {required:?}"
        );
    }
}
