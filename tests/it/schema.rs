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

/// The checked-in schema's definition of one check, as a schema of its own.
fn check_validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(&checked_in()).unwrap();
    let check = serde_json::json!({ "$ref": "#/$defs/Check", "$defs": schema["$defs"] });
    jsonschema::validator_for(&check).expect("the Check definition compiles")
}

#[test]
fn a_passing_check_without_observed_values_is_refused_by_the_schema() {
    let v = check_validator();
    let check = |result: &str, observed: Option<serde_json::Value>| {
        let mut c = serde_json::json!({
            "name": "record-rows", "candidate": null, "result": result, "detail": "held"
        });
        if let Some(o) = observed {
            c["observed"] = o;
        }
        c
    };
    for empty in [
        None,
        Some(serde_json::Value::Null),
        Some(serde_json::json!({})),
        Some(serde_json::json!([])),
        Some(serde_json::json!("")),
    ] {
        let doc = check("pass", empty.clone());
        assert!(
            !v.is_valid(&doc),
            "a pass with observed {empty:?} must be refused: {doc}"
        );
        // Only a pass must rest on observed values; a failure or a warning
        // may say what was not there.
        assert!(v.is_valid(&check("fail", empty.clone())), "{empty:?}");
        assert!(v.is_valid(&check("warn", empty)));
    }
    for observed in [
        serde_json::json!({"rows": 412}),
        serde_json::json!([{"path": "a"}]),
        serde_json::json!(0),
        serde_json::json!("sha256:00"),
        serde_json::json!({"untracked": []}),
    ] {
        assert!(
            v.is_valid(&check("pass", Some(observed.clone()))),
            "{observed}"
        );
    }
}
