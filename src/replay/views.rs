//! The views `write_all` renders from `evidence.json` (`statement.intoto.json`,
//! `junit.xml` and `report.html`), rendered again from the replayed `evidence.json` and
//! compared with the files: neither is covered by the sign-off digest nor by
//! the files digest, so an `evidence.json` edited with its sign-off digest and
//! `SHA256SUMS` recomputed still disagrees with them, and a view edited on
//! its own disagrees with `evidence.json`.
//!
//! Rows: one per differing statement field (its JSON path, the statement's
//! value as recorded, the value rendered from `evidence.json` as observed;
//! the statement's evidence digest is compared with the digest
//! `evidence.json` hashes to), one per JUnit testcase whose result differs
//! (`passed`, `failure`, `error`, `skipped`, or `absent`), one for the
//! rest of `junit.xml`'s bytes, and one for `report.html`'s bytes (its
//! sha256 and the rendered page's). A directory without `report.html` that
//! `SHA256SUMS` does not list either was written before the report existed:
//! its row says so and matches.

use super::Row;
use crate::evidence::{self, html, junit, statement, Evidence};
use crate::hash;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Appends the rows comparing `dir/statement.intoto.json` and
/// `dir/junit.xml` with the documents rendered from `ev` (parsed from
/// `dir/evidence.json`, whose canonical digest is `digest`).
pub(super) fn check_views(dir: &Path, ev: &Evidence, digest: &str, rows: &mut Vec<Row>) {
    check_statement(dir, ev, digest, rows);
    check_junit(dir, ev, rows);
    check_report(dir, ev, rows);
}

fn check_report(dir: &Path, ev: &Evidence, rows: &mut Vec<Row>) {
    let name = html::REPORT_HTML;
    let expected = hash::sha256_bytes(html::render(ev).as_bytes());
    let item = format!("{name} sha256 (observed: rendered from evidence.json)");
    match fs::read(dir.join(name)) {
        Ok(found) => rows.push(Row::new(item, hash::sha256_bytes(&found), expected)),
        Err(_) if !listed_in_sums(dir, name) => rows.push(Row::new(
            format!("{name} (absent and not in SHA256SUMS: written before the report existed)"),
            "absent",
            "absent",
        )),
        Err(e) => rows.push(Row::new(item, format!("unreadable: {e}"), expected)),
    }
}

/// Whether `dir/SHA256SUMS` lists `name`.
fn listed_in_sums(dir: &Path, name: &str) -> bool {
    fs::read_to_string(dir.join(evidence::SHA256SUMS)).is_ok_and(|sums| {
        sums.lines()
            .filter_map(evidence::parse_sums_line)
            .any(|(_, path)| path == name)
    })
}

/// Where the statement records the evidence digest: the tool's
/// configuration entry's `annotations.evidence_sha256`.
fn evidence_digest_slot(statement: &mut Value) -> Option<&mut Value> {
    statement
        .pointer_mut("/predicate/configuration")?
        .as_array_mut()?
        .iter_mut()
        .find_map(|c| c.pointer_mut("/annotations/evidence_sha256"))
}

fn check_statement(dir: &Path, ev: &Evidence, digest: &str, rows: &mut Vec<Row>) {
    let name = statement::STATEMENT_JSON;
    let found: Value = match fs::read_to_string(dir.join(name))
        .map_err(|e| format!("unreadable: {e}"))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("invalid JSON: {e}")))
    {
        Ok(v) => v,
        Err(e) => {
            rows.push(Row::new(name, "an in-toto statement", e));
            return;
        }
    };
    let mut expected = statement::render(ev);
    // The digest evidence.json hashes to, not the one it records: an edited
    // file with a recomputed sign-off still hashes to another digest than
    // the statement carries.
    if let Some(slot) = evidence_digest_slot(&mut expected) {
        *slot = Value::String(digest.to_string());
    }
    let mut differences = Vec::new();
    diff("", &found, &expected, &mut differences);
    if differences.is_empty() {
        rows.push(Row::new(
            format!("{name} (rendered from evidence.json)"),
            "agrees",
            "agrees",
        ));
        return;
    }
    for (path, recorded, observed) in differences {
        let item = if path.ends_with("evidence_sha256") {
            format!("{name}: {path} (observed: the digest evidence.json hashes to)")
        } else {
            format!("{name}: {path} (observed: rendered from evidence.json)")
        };
        rows.push(Row::new(item, recorded, observed));
    }
}

/// Collects `(path, found, expected)` for every leaf where `found` and
/// `expected` differ. Paths read `predicate.passedTests[3]`; arrays of
/// strings of different lengths are compared as sets (`only in
/// statement: …` / `only in evidence.json: …`), other arrays and values of
/// different types are reported whole.
fn diff(path: &str, found: &Value, expected: &Value, out: &mut Vec<(String, String, String)>) {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (found, expected) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) => diff(&at(k), va, vb, out),
                    None => out.push((at(k), compact(va), "absent".into())),
                }
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    out.push((at(k), "absent".into(), compact(vb)));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.iter().chain(b).all(Value::is_string) => {
            let only = |x: &[Value], y: &[Value]| -> Vec<String> {
                x.iter().filter(|v| !y.contains(v)).map(compact).collect()
            };
            let (extra, missing) = (only(a, b), only(b, a));
            out.push((
                path.to_string(),
                format!(
                    "{} entries, only in the statement: [{}]",
                    a.len(),
                    extra.join(", ")
                ),
                format!(
                    "{} entries, only in evidence.json: [{}]",
                    b.len(),
                    missing.join(", ")
                ),
            ));
        }
        (a, b) if a != b => out.push((path.to_string(), compact(a), compact(b))),
        _ => {}
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn check_junit(dir: &Path, ev: &Evidence, rows: &mut Vec<Row>) {
    let name = evidence::JUNIT_XML;
    let expected = match junit::render(ev) {
        Ok(x) => x,
        Err(e) => {
            rows.push(Row::new(
                format!("{name} (rendered from evidence.json)"),
                "renders",
                format!("cannot render: {e}"),
            ));
            return;
        }
    };
    let found = match fs::read_to_string(dir.join(name)) {
        Ok(x) => x,
        Err(e) => {
            rows.push(Row::new(name, "a JUnit report", format!("unreadable: {e}")));
            return;
        }
    };
    if found == expected {
        rows.push(Row::new(
            format!("{name} (rendered from evidence.json)"),
            "agrees",
            "agrees",
        ));
        return;
    }
    let cases_expected = testcases(&expected).unwrap_or_default();
    let cases_found = match testcases(&found) {
        Ok(c) => c,
        Err(e) => {
            rows.push(Row::new(name, "well-formed XML", format!("invalid: {e}")));
            return;
        }
    };
    let mut named = 0;
    for (key, results) in &cases_found {
        let want = cases_expected.get(key);
        if want != Some(results) {
            named += 1;
            rows.push(Row::new(
                format!("{name}: testcase {key} (observed: rendered from evidence.json)"),
                results.join(", "),
                want.map_or_else(|| "absent".into(), |w| w.join(", ")),
            ));
        }
    }
    for (key, results) in &cases_expected {
        if !cases_found.contains_key(key) {
            named += 1;
            rows.push(Row::new(
                format!("{name}: testcase {key} (observed: rendered from evidence.json)"),
                "absent",
                results.join(", "),
            ));
        }
    }
    if named == 0 {
        // Same results, other bytes: a message, a count or a time was changed.
        rows.push(Row::new(
            format!("{name} sha256 (observed: rendered from evidence.json; every testcase's result agrees)"),
            hash::sha256_bytes(found.as_bytes()),
            hash::sha256_bytes(expected.as_bytes()),
        ));
    }
}

/// Every testcase of a JUnit document, keyed `<testsuite> <classname>/<name>`,
/// with its results in document order: `failure`, `error` or `skipped` when
/// the testcase holds that element, else `passed`.
///
/// # Errors
/// When the text is not well-formed XML.
fn testcases(xml: &str) -> Result<BTreeMap<String, Vec<String>>, String> {
    use quick_xml::events::{BytesStart, Event};
    let attr = |e: &BytesStart, key: &[u8]| -> String {
        e.attributes()
            .flatten()
            .find(|a| a.key.as_ref() == key)
            .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
            .unwrap_or_default()
    };
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut suite = String::new();
    let mut open: Option<(String, String)> = None;
    loop {
        let event = reader.read_event().map_err(|e| e.to_string())?;
        let (start, empty) = match &event {
            Event::Eof => break,
            Event::Start(e) => (Some(e), false),
            Event::Empty(e) => (Some(e), true),
            Event::End(e) if e.name().as_ref() == b"testcase" => {
                if let Some((key, result)) = open.take() {
                    out.entry(key).or_default().push(result);
                }
                (None, false)
            }
            _ => (None, false),
        };
        let Some(e) = start else { continue };
        match e.name().as_ref() {
            b"testsuite" => suite = attr(e, b"name"),
            b"testcase" => {
                let key = format!("{suite} {}/{}", attr(e, b"classname"), attr(e, b"name"));
                if empty {
                    out.entry(key).or_default().push("passed".into());
                } else {
                    open = Some((key, "passed".into()));
                }
            }
            kind @ (b"failure" | b"error" | b"skipped") => {
                if let Some((_, result)) = open.as_mut() {
                    *result = String::from_utf8_lossy(kind).into_owned();
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testcases_are_read_with_their_result() {
        let xml = r#"<testsuites><testsuite name="g"><testcase name="a" classname="g"/>
<testcase name="b" classname="g"><failure message="x">why</failure></testcase>
<testcase name="c" classname="g"><skipped/></testcase></testsuite></testsuites>"#;
        let cases = testcases(xml).unwrap();
        assert_eq!(cases["g g/a"], ["passed"]);
        assert_eq!(cases["g g/b"], ["failure"]);
        assert_eq!(cases["g g/c"], ["skipped"]);
    }

    #[test]
    fn differing_statement_fields_are_named_by_path() {
        let found = serde_json::json!({"predicate": {"result": "FAILED", "failedTests": ["g/x"], "n": [1]}});
        let expected =
            serde_json::json!({"predicate": {"result": "PASSED", "failedTests": [], "n": [1]}});
        let mut out = Vec::new();
        diff("", &found, &expected, &mut out);
        assert_eq!(
            out,
            [
                (
                    "predicate.result".to_string(),
                    "FAILED".to_string(),
                    "PASSED".to_string()
                ),
                (
                    "predicate.failedTests".to_string(),
                    "1 entries, only in the statement: [g/x]".to_string(),
                    "0 entries, only in evidence.json: []".to_string()
                ),
            ]
        );
    }
}
