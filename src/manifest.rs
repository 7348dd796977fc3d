//! Plugin `manifest.yaml`: the fields the build names its archive after.
//!
//! Source: the SDK's `langbot_plugin.cli.commands.buildplugin` names the
//! archive `<author>-<name>-<version>.lbpkg` from `metadata`, and silently
//! writes nothing when the manifest is invalid (for example a float version).

use serde_yaml_ng::Value;
use std::path::Path;

/// The identity fields of a manifest.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ManifestId {
    /// `metadata.author`.
    pub author: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.version`, a string.
    pub version: String,
}

impl ManifestId {
    /// The archive file name the official build writes.
    pub fn archive_name(&self) -> String {
        format!("{}-{}-{}.lbpkg", self.author, self.name, self.version)
    }
}

/// Reads `manifest.yaml` at `path` and returns its identity.
///
/// # Errors
/// A sentence naming the file, the field, what was expected and what was found.
pub fn read_id(path: &Path) -> Result<ManifestId, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: cannot read: {e}; expected a plugin manifest.yaml",
            path.display()
        )
    })?;
    parse_id(&text, path)
}

/// The identity in manifest `text`; `path` names it in messages.
///
/// # Errors
/// As [`read_id`].
pub fn parse_id(text: &str, path: &Path) -> Result<ManifestId, String> {
    let value: Value = serde_yaml_ng::from_str(strip_bom(text))
        .map_err(|e| format!("{}: not valid YAML: {e}", path.display()))?;
    let field = |name: &str| -> Result<String, String> {
        let v = value.get("metadata").and_then(|m| m.get(name));
        match v {
            Some(Value::String(s)) if is_safe_component(s) => Ok(s.clone()),
            Some(Value::String(s)) => Err(format!(
                "{}: metadata.{name} is {s:?}; expected letters, digits, `.`, `_` or `-` only (the official build puts it in a file name and does not validate it)",
                path.display()
            )),
            Some(other) => Err(format!(
                "{}: metadata.{name} is {} ({}); expected a string (quote it: \"{}\"); the official build exits 0 and writes nothing for such a manifest",
                path.display(),
                type_name(other),
                serde_yaml_ng::to_string(other).unwrap_or_default().trim(),
                serde_yaml_ng::to_string(other).unwrap_or_default().trim(),
            )),
            None => Err(format!("{}: metadata.{name} is missing; expected a string", path.display())),
        }
    };
    Ok(ManifestId {
        author: field("author")?,
        name: field("name")?,
        version: field("version")?,
    })
}

/// `text` without one leading UTF-8 byte order mark (U+FEFF), as the SDK
/// reads YAML: PyYAML's scanner skips a BOM at the start of the stream (the
/// SDK opens manifests with `encoding="utf-8"`, which keeps it in the text,
/// or decodes bytes, where PyYAML detects it), so a manifest starting with a
/// BOM is a valid manifest to the SDK, and so it is here. `serde_yaml_ng`
/// reads the BOM as content instead and reports a YAML "containing more than
/// one document"; every YAML reader of this crate strips it first.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// True when `s` is safe as a part of a file name: non-empty, not `.` or
/// `..`, only ASCII letters, digits, `.`, `_`, `-`, `+`.
pub fn is_safe_component(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("manifest.yaml");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn float_version_is_named() {
        let (_d, p) = write("metadata:\n  author: acme\n  name: x\n  version: 1.0\n");
        let err = read_id(&p).unwrap_err();
        assert!(err.contains("metadata.version is a float"), "{err}");
    }

    #[test]
    fn every_non_string_identity_field_is_named_by_its_yaml_type() {
        for (value, word) in [
            ("1", "an integer"),
            ("1.5", "a float"),
            ("true", "a boolean"),
            ("null", "null"),
            ("[a]", "a list"),
            ("{a: b}", "a mapping"),
            ("!tag x", "a tagged value"),
        ] {
            let text = format!("metadata:\n  author: acme\n  name: x\n  version: {value}\n");
            let err = parse_id(&text, Path::new("m.yaml")).unwrap_err();
            assert!(
                err.starts_with(&format!("m.yaml: metadata.version is {word} (")),
                "{value}: {err}"
            );
        }
        let err = parse_id(
            "metadata:\n  name: x\n  version: '1'\n",
            Path::new("m.yaml"),
        )
        .unwrap_err();
        assert_eq!(err, "m.yaml: metadata.author is missing; expected a string");
    }

    #[test]
    fn traversal_in_name_is_refused() {
        let (_d, p) = write("metadata:\n  author: acme\n  name: ../../evil\n  version: '1'\n");
        assert!(read_id(&p).unwrap_err().contains("../../evil"));
    }

    #[test]
    fn a_leading_byte_order_mark_is_read_as_the_sdk_reads_it_not_as_a_second_document() {
        let text = "\u{feff}metadata:\n  author: acme\n  name: x\n  version: '1'\n";
        let id = parse_id(text, Path::new("m.yaml")).unwrap();
        assert_eq!(id.archive_name(), "acme-x-1.lbpkg");
        // A real manifest: serde_yaml_ng alone misnames its BOM as a second
        // document; read as the SDK reads it, it is the manifest.
        let real = format!(
            "\u{feff}{}",
            include_str!("../fixtures/candidate-repo/Runner/codex-agent/manifest.yaml")
        );
        let raw = serde_yaml_ng::from_str::<Value>(&real)
            .unwrap_err()
            .to_string();
        assert!(raw.contains("more than one document"), "{raw}");
        let id = parse_id(&real, Path::new("m.yaml")).unwrap();
        assert_eq!(id.name, "codex-agent");
        assert_eq!(strip_bom("\u{feff}\u{feff}a"), "\u{feff}a");
    }

    #[test]
    fn archive_name_follows_the_build() {
        let (_d, p) = write("metadata:\n  author: acme\n  name: x\n  version: '0.1.2'\n");
        assert_eq!(read_id(&p).unwrap().archive_name(), "acme-x-0.1.2.lbpkg");
    }
}
