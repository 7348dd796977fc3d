//! A manifest's runtime claims: `execution.sharedRuntime` and
//! `execution.componentModel`.
//!
//! Source: SDK 0.7.18 `langbot_plugin/certification.py`
//! (`_read_manifest_identity`): a plugin claims the shared runtime with
//! `execution.sharedRuntime: shared-runtime-v1`, and the stateless component
//! contract with `execution.componentModel: stateless-v1`. SDK 0.6.x reads
//! neither. The claims are recorded as written and judged by the
//! `placement` gate; they prove nothing by themselves.

use serde_yaml_ng::Value;

/// The shared-runtime placement the SDK defines (`sharedRuntime`).
pub const SHARED_RUNTIME_V1: &str = "shared-runtime-v1";

/// The stateless component contract the SDK defines (`componentModel`).
pub const STATELESS_V1: &str = "stateless-v1";

/// The two claims of one manifest, as written: a string value as is,
/// anything else as its YAML text (`true`, `1`); absent: `None`.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ExecutionClaims {
    /// `execution.sharedRuntime`.
    pub shared_runtime: Option<String>,
    /// `execution.componentModel`.
    pub component_model: Option<String>,
}

/// The claims of manifest `text` (a leading BOM is skipped, as the SDK
/// reads YAML).
///
/// # Errors
/// A sentence when the text is not YAML, or `execution` is present but not
/// a mapping (the SDK refuses that manifest as well).
pub fn parse_claims(text: &str) -> Result<ExecutionClaims, String> {
    let value: Value = serde_yaml_ng::from_str(crate::manifest::strip_bom(text))
        .map_err(|e| format!("not valid YAML: {e}"))?;
    let execution = match value.get("execution") {
        None | Some(Value::Null) => return Ok(ExecutionClaims::default()),
        Some(e @ Value::Mapping(_)) => e,
        Some(other) => {
            return Err(format!(
                "execution is {}; expected a mapping",
                serde_yaml_ng::to_string(other).unwrap_or_default().trim()
            ))
        }
    };
    let field = |name: &str| -> Option<String> {
        match execution.get(name)? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(
                serde_yaml_ng::to_string(other)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            ),
        }
    };
    Ok(ExecutionClaims {
        shared_runtime: field("sharedRuntime"),
        component_model: field("componentModel"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_claims_are_read_as_written_and_absent_ones_are_none() {
        let text = "metadata: {name: x}\nexecution:\n  python: {path: main.py}\n  \
                    sharedRuntime: shared-runtime-v1\n  componentModel: stateless-v1\n";
        assert_eq!(
            parse_claims(text).unwrap(),
            ExecutionClaims {
                shared_runtime: Some(SHARED_RUNTIME_V1.into()),
                component_model: Some(STATELESS_V1.into()),
            }
        );
        let only = "execution:\n  sharedRuntime: shared-runtime-v1\n";
        assert_eq!(parse_claims(only).unwrap().component_model, None);
        assert_eq!(
            parse_claims("metadata: {}\n").unwrap(),
            ExecutionClaims::default()
        );
        let odd = "execution:\n  sharedRuntime: true\n  componentModel: null\n";
        let odd = parse_claims(odd).unwrap();
        assert_eq!(odd.shared_runtime.as_deref(), Some("true"));
        assert_eq!(odd.component_model, None);
        assert!(parse_claims("execution: [a]\n")
            .unwrap_err()
            .contains("expected a mapping"));
    }
}
