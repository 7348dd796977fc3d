//! `manifest.yaml` as the SDK reads it, and where that reading differs from
//! YAML 1.2.
//!
//! The SDK reads a plugin's manifest with PyYAML's `yaml.safe_load`
//! (`langbot_plugin.utils.discover.engine`, `runtime.plugin.artifact`), that
//! is with YAML 1.1 resolution rules; `lbp build` writes it back with
//! `yaml.safe_dump`. This crate reads YAML with `serde_yaml_ng`, YAML 1.2
//! rules. The two disagree on plain scalars: `NO`, `on`, `y` are booleans in
//! 1.1 and strings in 1.2; `1_000` and `017` are the integers 1000 and 15 in
//! 1.1, a string and 17 in 1.2; `1e3` and `0o17` are strings in 1.1 and
//! numbers in 1.2; `1:30` is the integer 90 in 1.1 (sexagesimal). A source
//! `x-country: NO` is therefore archived as `x-country: false`.
//!
//! So `archive-members` compares the source manifest and the archived one
//! both as the SDK reads them (the gate's `ManifestReader::Sdk` runs
//! `manifest_yaml_probe.py` in the verified interpreter; this module reads
//! its answer, [`SdkReadings`]), and names every
//! value of the source whose YAML 1.2 reading differs ([`meaning_changes`]),
//! with advice to quote it.

use crate::evidence::Check;
use serde::Deserialize;
use serde_json::json;
use serde_yaml_ng::value::{Tag, TaggedValue};
use serde_yaml_ng::{Mapping, Value};
use std::path::Path;

/// One node as PyYAML constructed it (`manifest_yaml_probe.py`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "t", content = "v", rename_all = "lowercase")]
pub enum SdkNode {
    /// `None`.
    Null,
    /// `bool`.
    Bool(bool),
    /// `int`, as decimal text (Python integers are unbounded).
    Int(String),
    /// `float`, as Python's `repr` (`1000.0`, `inf`, `nan`).
    Float(String),
    /// `str`.
    Str(String),
    /// `bytes` (`!!binary`), base64.
    Bytes(String),
    /// `datetime.date` or `datetime.datetime`, ISO 8601.
    Timestamp(String),
    /// `list` or `tuple` (`!!omap`, `!!pairs`).
    Seq(Vec<SdkNode>),
    /// `dict` (or `!!set`), in insertion order.
    Map(Vec<(SdkNode, SdkNode)>),
    /// Anything else, as `repr`.
    Other(String),
}

fn tagged(tag: &str, text: &str) -> Value {
    Value::Tagged(Box::new(TaggedValue {
        tag: Tag::new(tag),
        value: Value::String(text.to_string()),
    }))
}

impl SdkNode {
    /// The same data as a [`Value`], so one comparison serves both readings:
    /// integers beyond 64 bits, bytes, timestamps and other objects become
    /// tagged strings (`!!int`, `!!binary`, `!!timestamp`, `!python`).
    pub fn to_value(&self) -> Value {
        match self {
            SdkNode::Null => Value::Null,
            SdkNode::Bool(b) => Value::Bool(*b),
            SdkNode::Int(t) => {
                if let Ok(i) = t.parse::<i64>() {
                    Value::Number(i.into())
                } else if let Ok(u) = t.parse::<u64>() {
                    Value::Number(u.into())
                } else {
                    tagged("!!int", t)
                }
            }
            SdkNode::Float(t) => match t.parse::<f64>() {
                Ok(f) => Value::Number(f.into()),
                Err(_) => tagged("!!float", t),
            },
            SdkNode::Str(s) => Value::String(s.clone()),
            SdkNode::Bytes(b) => tagged("!!binary", b),
            SdkNode::Timestamp(t) => tagged("!!timestamp", t),
            SdkNode::Seq(items) => Value::Sequence(items.iter().map(SdkNode::to_value).collect()),
            SdkNode::Map(pairs) => {
                let mut m = Mapping::new();
                for (k, v) in pairs {
                    m.insert(k.to_value(), v.to_value());
                }
                Value::Mapping(m)
            }
            SdkNode::Other(r) => tagged("!python", r),
        }
    }
}

/// One file's reading by the SDK: the value, or PyYAML's error.
#[derive(Debug, Clone, Deserialize)]
pub struct SdkDocument {
    /// The constructed document.
    pub value: Option<SdkNode>,
    /// `Type: message` when `yaml.safe_load` raised.
    pub error: Option<String>,
}

impl SdkDocument {
    /// The document, or PyYAML's error.
    pub fn result(&self) -> Result<Value, String> {
        match (&self.value, &self.error) {
            (_, Some(e)) => Err(e.clone()),
            (Some(v), None) => Ok(v.to_value()),
            (None, None) => Ok(Value::Null),
        }
    }
}

/// What `manifest_yaml_probe.py` reports.
#[derive(Debug, Clone, Deserialize)]
pub struct SdkReadings {
    /// `yaml.__version__`.
    pub pyyaml: String,
    /// The staged source's manifest.
    pub source: SdkDocument,
    /// The archive's manifest, as extracted.
    pub archived: SdkDocument,
    /// The `spec.pages` the SDK's own build writes for the source; absent
    /// for an SDK whose build has no `populate_plugin_pages` (and in a probe
    /// answer kept before this field existed).
    #[serde(default)]
    pub build_pages: Option<SdkDocument>,
}

/// Everything the `manifest-equal-source` decision needs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ManifestObservation {
    /// PyYAML's version, when the probe answered.
    pub pyyaml: Option<String>,
    /// The source manifest as the SDK reads it.
    pub source_sdk: Result<Value, String>,
    /// The archived manifest as the SDK reads it.
    pub archived_sdk: Result<Value, String>,
    /// The source manifest as YAML 1.2 reads it.
    pub source_yaml12: Result<Value, String>,
    /// The `spec.pages` the SDK's own build writes for the source
    /// ([`SdkReadings::build_pages`]); `None` when this SDK's build writes
    /// `pages: []`.
    pub build_pages: Option<Result<Value, String>>,
}

/// Reads `path` with YAML 1.2 rules (merge keys applied, as PyYAML does).
///
/// # Errors
/// A sentence naming the file when it is not readable or not YAML.
pub fn read_yaml12(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_yaml12(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses `text` with YAML 1.2 rules, merge keys applied.
///
/// # Errors
/// The parser's message when `text` is not YAML.
pub fn parse_yaml12(text: &str) -> Result<Value, String> {
    let mut v: Value = serde_yaml_ng::from_str(crate::manifest::strip_bom(text))
        .map_err(|e| format!("not valid YAML 1.2: {e}"))?;
    v.apply_merge()
        .map_err(|e| format!("a merge key (`<<`) cannot be applied: {e}"))?;
    Ok(v)
}

/// A value of the source that YAML 1.2 and the SDK (YAML 1.1) read apart.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MeaningChange {
    /// Dotted key path (`metadata.x-country`, `spec.items[2]`); a key that
    /// itself changes meaning ends in ` (key)`.
    pub path: String,
    /// The YAML 1.2 reading, described (`the string "NO"`).
    pub yaml12: String,
    /// The SDK's reading, described (`the boolean false`).
    pub sdk: String,
    /// The scalar as written, when one reading keeps it as text.
    pub written: Option<String>,
}

/// Describes a value in words: `the string "NO"`, `the boolean false`,
/// `the integer 1000`, `the float 1000.0`, `null`, `a mapping`.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) if n.is_f64() => format!("the float {n}"),
        Value::Number(n) => format!("the integer {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
        Value::Tagged(t) => match &t.value {
            Value::String(s) if t.tag == "!!int" => format!("the integer {s}"),
            Value::String(s) => format!("{} {s}", t.tag),
            other => format!("{} {}", t.tag, describe(other)),
        },
    }
}

fn scalar_key(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

/// Every place where the YAML 1.2 reading of a document differs from the
/// SDK's reading of the same document. Both readings come from one text, so
/// mappings are walked pair by pair in document order and sequences item
/// by item; a shape that differs is reported at its path.
pub fn meaning_changes(yaml12: &Value, sdk: &Value) -> Vec<MeaningChange> {
    let mut out = Vec::new();
    walk(yaml12, sdk, "", &mut out);
    out
}

fn written(a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::String(s), _) | (_, Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

fn walk(a: &Value, b: &Value, path: &str, out: &mut Vec<MeaningChange>) {
    let at = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    let shown = if path.is_empty() { "(document)" } else { path };
    match (a, b) {
        (Value::Mapping(ma), Value::Mapping(mb)) if ma.len() == mb.len() => {
            for ((ka, va), (kb, vb)) in ma.iter().zip(mb.iter()) {
                let here = at(&scalar_key(ka));
                if ka != kb {
                    out.push(MeaningChange {
                        path: format!("{here} (key)"),
                        yaml12: describe(ka),
                        sdk: describe(kb),
                        written: written(ka, kb),
                    });
                }
                walk(va, vb, &here, out);
            }
        }
        (Value::Sequence(sa), Value::Sequence(sb)) if sa.len() == sb.len() => {
            for (i, (va, vb)) in sa.iter().zip(sb).enumerate() {
                walk(va, vb, &format!("{shown}[{i}]"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(MeaningChange {
            path: shown.to_string(),
            yaml12: describe(a),
            sdk: describe(b),
            written: written(a, b),
        }),
    }
}

/// One meaning change as a sentence with its advice.
fn change_text(c: &MeaningChange) -> String {
    let key = c
        .path
        .trim_end_matches(" (key)")
        .rsplit('.')
        .next()
        .unwrap_or(&c.path)
        .to_string();
    let advice = match &c.written {
        Some(w) if c.path.ends_with(" (key)") => format!("quote the key (`\"{w}\": ...`)"),
        Some(w) if !key.contains('[') => {
            format!("quote it (`{key}: \"{w}\"`) if you mean the string")
        }
        Some(w) => format!("quote it (`\"{w}\"`) if you mean the string"),
        None => "quote it if you mean the text as written, or write it so that both readings agree"
            .into(),
    };
    format!(
        "`{}`: the SDK (YAML 1.1) reads {}, YAML 1.2 reads {}: {advice}",
        c.path, c.sdk, c.yaml12
    )
}

/// `; N value(s) ... mean something else under YAML 1.2 ...` naming the
/// first 20 `changes`, or empty when there are none.
fn meaning_note(changes: &[MeaningChange]) -> String {
    let change_texts: Vec<String> = changes.iter().take(20).map(change_text).collect();
    if changes.is_empty() {
        String::new()
    } else {
        format!(
            "; {} value(s) of the source manifest mean something else under YAML 1.2 than to the SDK, and the \
             archive carries the SDK's reading: {}",
            changes.len(),
            change_texts.join("; ")
        )
    }
}

/// Decides `manifest-equal-source` for one candidate: the archived manifest
/// equals the source's as the SDK reads YAML (the build's `spec.pages: []`
/// aside, [`crate::manifest_diff::manifest_differences`]); any value
/// of the source that YAML 1.2 reads otherwise is named with advice to quote
/// it (a warning when the manifests are equal).
pub fn decide(folder: &str, rel: &str, obs: &ManifestObservation) -> Check {
    const NAME: &str = "manifest-equal-source";
    let reader = match &obs.pyyaml {
        Some(v) => format!("PyYAML {v} `yaml.safe_load`, YAML 1.1, as the SDK reads it"),
        None => "as the SDK reads it".to_string(),
    };
    let (source, archived) = match (&obs.source_sdk, &obs.archived_sdk) {
        (Ok(s), Ok(a)) => (s, a),
        (Err(e), _) => {
            return Check::fail(
                NAME,
                Some(folder),
                format!(
                    "{rel}: the source manifest.yaml could not be read {reader}: {e}; expected a manifest the \
                     SDK reads: fix the YAML (the build and the runtime read it the same way)"
                ),
            )
        }
        (_, Err(e)) => {
            return Check::fail(
                NAME,
                Some(folder),
                format!(
                    "{rel}: the archive's manifest.yaml could not be read {reader}: {e}; expected the build's \
                     re-serialisation of the source: rebuild from the staged commit"
                ),
            )
        }
    };
    let build_pages = obs.build_pages.as_ref().and_then(|p| p.as_ref().ok());
    let diffs = crate::manifest_diff::manifest_differences(source, archived, build_pages);
    let changes = match &obs.source_yaml12 {
        Ok(v12) => meaning_changes(v12, source),
        Err(_) => Vec::new(),
    };
    let observed = json!({
        "reader": obs.pyyaml.as_ref().map(|v| format!("PyYAML {v}")),
        "differences": diffs,
        "yaml_1_1_vs_1_2": changes,
    });
    let meaning_note = meaning_note(&changes);
    if !diffs.is_empty() {
        return Check::fail(
            NAME,
            Some(folder),
            format!(
                "{rel}: manifest.yaml differs from the staged source as parsed YAML ({reader}): {}; expected only \
                 the build's `spec.pages: []` addition: rebuild from the staged commit{meaning_note}",
                diffs.join("; ")
            ),
        )
        .with_observed(observed);
    }
    if !changes.is_empty() {
        return Check::warn(
            NAME,
            Some(folder),
            format!(
                "{rel}: manifest.yaml parses to the source's manifest ({reader}; the build's only addition, \
                 `spec.pages: []`, aside){meaning_note}; quote such values so that every reader agrees"
            ),
        )
        .with_observed(observed);
    }
    Check::pass(
        NAME,
        Some(folder),
        format!(
            "{rel}: manifest.yaml parses to the source's manifest ({reader}; the build's only addition, \
             `spec.pages: []`, aside); no value reads differently under YAML 1.2"
        ),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    fn y(s: &str) -> Value {
        parse_yaml12(s).unwrap()
    }

    /// `manifest_yaml_probe.py`'s output for the source `x-country: NO`
    /// (PyYAML 6.0.4, captured), and for its `safe_dump` in the archive.
    const PROBE_NO: &str = r#"{"pyyaml": "6.0.4", "source": {"value": {"t": "map", "v": [[{"t": "str", "v": "metadata"}, {"t": "map", "v": [[{"t": "str", "v": "name"}, {"t": "str", "v": "x"}], [{"t": "str", "v": "x-country"}, {"t": "bool", "v": false}]]}], [{"t": "str", "v": "spec"}, {"t": "map", "v": []}]]}}, "archived": {"value": {"t": "map", "v": [[{"t": "str", "v": "metadata"}, {"t": "map", "v": [[{"t": "str", "v": "name"}, {"t": "str", "v": "x"}], [{"t": "str", "v": "x-country"}, {"t": "bool", "v": false}]]}], [{"t": "str", "v": "spec"}, {"t": "map", "v": [[{"t": "str", "v": "pages"}, {"t": "seq", "v": []}]]}]]}}}"#;

    fn observation(probe: &str, source_text: &str) -> ManifestObservation {
        let r: SdkReadings = serde_json::from_str(probe).unwrap();
        ManifestObservation {
            pyyaml: Some(r.pyyaml.clone()),
            source_sdk: r.source.result(),
            archived_sdk: r.archived.result(),
            source_yaml12: parse_yaml12(source_text),
            build_pages: None,
        }
    }

    #[test]
    fn no_is_a_warning_naming_both_readings_and_the_quote() {
        let obs = observation(
            PROBE_NO,
            "metadata:\n  name: x\n  x-country: NO\nspec: {}\n",
        );
        let c = decide("c", "packages/c/a.lbpkg", &obs);
        assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
        assert!(
            c.detail.contains(
                "`metadata.x-country`: the SDK (YAML 1.1) reads the boolean false, YAML 1.2 reads the string \"NO\": quote it (`x-country: \"NO\"`) if you mean the string"
            ),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("PyYAML 6.0.4"), "{}", c.detail);
        assert!(
            !c.detail.contains("source NO, archive false"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn a_real_difference_still_fails_and_keeps_the_advice() {
        let obs = ManifestObservation {
            pyyaml: Some("6.0.4".into()),
            source_sdk: Ok(y("metadata:\n  name: x\n  x-country: false\n")),
            archived_sdk: Ok(y(
                "metadata:\n  name: y\n  x-country: false\nspec:\n  pages: []\n",
            )),
            source_yaml12: parse_yaml12("metadata:\n  name: x\n  x-country: NO\n"),
            build_pages: None,
        };
        let c = decide("c", "r", &obs);
        assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
        assert!(
            c.detail.contains("metadata.name: source x, archive y"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("`metadata.x-country`"), "{}", c.detail);
    }

    #[test]
    fn equal_readings_pass() {
        let v = y("metadata:\n  name: x\n  version: '1.0'\nspec:\n  config: []\n");
        let archived =
            y("metadata:\n  name: x\n  version: '1.0'\nspec:\n  config: []\n  pages: []\n");
        let obs = ManifestObservation {
            pyyaml: Some("6".into()),
            source_sdk: Ok(v.clone()),
            archived_sdk: Ok(archived),
            source_yaml12: Ok(v),
            build_pages: None,
        };
        let c = decide("c", "r", &obs);
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    }

    #[test]
    fn unreadable_manifests_fail_naming_the_side() {
        let obs = ManifestObservation {
            pyyaml: Some("6".into()),
            source_sdk: Err("ScannerError: mapping values are not allowed here".into()),
            archived_sdk: Ok(Value::Null),
            source_yaml12: Err("x".into()),
            build_pages: None,
        };
        let c = decide("c", "r", &obs);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("the source manifest.yaml could not be read"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("ScannerError"), "{}", c.detail);
    }

    /// The YAML 1.1 readings PyYAML gives (observed with PyYAML 6.0.4) of
    /// the scalars the issue names, against serde_yaml_ng's YAML 1.2.
    #[test]
    fn each_named_scalar_is_a_meaning_change() {
        let cases: &[(&str, SdkNode, &str)] = &[
            ("NO", SdkNode::Bool(false), "the string \"NO\""),
            ("on", SdkNode::Bool(true), "the string \"on\""),
            ("1e3", SdkNode::Str("1e3".into()), "the float 1000.0"),
            ("0o17", SdkNode::Str("0o17".into()), "the integer 15"),
            ("1_000", SdkNode::Int("1000".into()), "the string \"1_000\""),
            ("1:30", SdkNode::Int("90".into()), "the string \"1:30\""),
        ];
        for (text, sdk, yaml12) in cases {
            let v12 = y(&format!("k: {text}\n"));
            let mut m = Mapping::new();
            m.insert("k".into(), sdk.to_value());
            let changes = meaning_changes(&v12, &Value::Mapping(m));
            assert_eq!(changes.len(), 1, "{text}: {changes:?}");
            assert_eq!(changes[0].path, "k");
            assert_eq!(changes[0].yaml12, *yaml12, "{text}");
            assert_eq!(changes[0].written.as_deref(), Some(*text), "{text}");
        }
        // Quoted, every reading agrees.
        let v12 = y("k: 'NO'\n");
        assert!(meaning_changes(&v12, &v12).is_empty());
    }

    #[test]
    fn a_key_that_changes_meaning_is_named_as_a_key() {
        let v12 = y("on: push\n");
        let mut m = Mapping::new();
        m.insert(Value::Bool(true), "push".into());
        let changes = meaning_changes(&v12, &Value::Mapping(m));
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].path, "on (key)");
        assert!(change_text(&changes[0]).contains("quote the key (`\"on\": ...`)"));
    }

    #[test]
    fn big_ints_bytes_and_timestamps_convert_to_tagged_values() {
        assert_eq!(
            describe(&SdkNode::Int("123456789012345678901234567890".into()).to_value()),
            "the integer 123456789012345678901234567890"
        );
        assert_eq!(
            SdkNode::Timestamp("2001-12-14".into()).to_value(),
            tagged("!!timestamp", "2001-12-14")
        );
        assert_eq!(
            SdkNode::Float("inf".into()).to_value().as_f64(),
            Some(f64::INFINITY)
        );
        // Another tag keeps its name.
        assert_eq!(
            describe(&tagged("!!timestamp", "2001-12-14")),
            "!!timestamp 2001-12-14"
        );
    }

    #[test]
    fn shapes_that_differ_in_length_are_one_change_and_equal_lengths_are_walked() {
        let v = |t: &str| parse_yaml12(t).unwrap();
        // A mapping the SDK reads with fewer pairs (two keys it reads as one).
        let changes = meaning_changes(&v("m: {a: 1, b: 2}"), &v("m: {a: 1}"));
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].path, "m");
        assert_eq!(
            (changes[0].yaml12.as_str(), changes[0].sdk.as_str()),
            ("a mapping", "a mapping")
        );
        // A list of another length is one change at the list.
        let changes = meaning_changes(&v("items: [1, 2]"), &v("items: [1]"));
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].path, "items");
        // A list of the same length is compared item by item.
        let changes = meaning_changes(&v("items: [1, NO]"), &v("items: [1, false]"));
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].path, "items[1]");
        assert_eq!(changes[0].yaml12, "the string \"NO\"");
        assert_eq!(changes[0].sdk, "the boolean false");
        // A list item has no key of its own to show in the advice.
        let text = change_text(&changes[0]);
        assert!(
            text.contains("quote it (`\"NO\"`) if you mean the string"),
            "{text}"
        );
    }

    #[test]
    fn read_yaml12_reads_the_file_and_names_it_when_it_cannot() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("manifest.yaml");
        std::fs::write(&p, "base: &b {x: 1}\nm:\n  <<: *b\n  y: NO\n").unwrap();
        let v = read_yaml12(&p).unwrap();
        assert_eq!(v["m"]["x"].as_i64(), Some(1), "merge key applied: {v:?}");
        assert_eq!(v["m"]["y"].as_str(), Some("NO"), "YAML 1.2: NO is a string");
        let missing = d.path().join("missing.yaml");
        let e = read_yaml12(&missing).unwrap_err();
        assert!(e.starts_with(&missing.display().to_string()), "{e}");
        std::fs::write(&p, "a: [").unwrap();
        let e = read_yaml12(&p).unwrap_err();
        assert!(e.contains("not valid YAML 1.2"), "{e}");
    }
}
