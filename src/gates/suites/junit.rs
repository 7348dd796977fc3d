//! pytest's JUnit report, read into testcases (pytest 9's shapes: an xfail
//! is `<skipped type="pytest.xfail">`, a strict XPASS a `<failure>` whose
//! message starts with `[XPASS(strict)]`, a non-strict XPASS a plain
//! testcase recognised through the collection's xfail record).

use super::TEXT_LIMIT;
use crate::evidence::{SuiteOutcome, SuiteTestCase};
use quick_xml::events::{BytesStart, Event};
use std::collections::HashMap;

/// A testcase being read.
#[derive(Default)]
struct Pending {
    classname: String,
    name: String,
    duration_ms: Option<u64>,
    /// The most severe result element so far: `(rank, kind, type, message)`,
    /// rank error 3 > failure 2 > skipped 1.
    result: Option<(u8, String, Option<String>, Option<String>)>,
    text: String,
    /// Inside a result element: its text is collected.
    in_result: bool,
}

/// The value of `e`'s attribute `key`, unescaped; `None` when it has none.
fn attr(e: &BytesStart, key: &[u8]) -> Result<Option<String>, String> {
    for a in e.attributes() {
        let a = a.map_err(|err| format!("malformed JUnit attribute: {err}"))?;
        if a.key.as_ref() == key {
            return a
                .unescape_value()
                .map(|v| Some(v.into_owned()))
                .map_err(|err| format!("malformed JUnit attribute value: {err}"));
        }
    }
    Ok(None)
}

/// A testcase element's start: its classname, name and duration.
fn testcase_start(e: &BytesStart) -> Result<Pending, String> {
    Ok(Pending {
        classname: attr(e, b"classname")?.unwrap_or_default(),
        name: attr(e, b"name")?.unwrap_or_default(),
        duration_ms: attr(e, b"time")?
            .and_then(|t| t.parse::<f64>().ok())
            .map(|s| (s * 1000.0).round() as u64),
        ..Pending::default()
    })
}

/// A result element (`failure`, `error`, `skipped`) inside testcase `p`:
/// it replaces the testcase's result unless a result at least as severe
/// was read already, and its text is collected unless it is empty.
fn result_start(p: &mut Pending, kind: &[u8], e: &BytesStart, empty: bool) -> Result<(), String> {
    let rank = match kind {
        b"error" => 3,
        b"failure" => 2,
        _ => 1,
    };
    if !matches!(&p.result, Some(r) if r.0 >= rank) {
        p.result = Some((
            rank,
            String::from_utf8_lossy(kind).into_owned(),
            attr(e, b"type")?,
            attr(e, b"message")?,
        ));
        p.text.clear();
        p.in_result = !empty;
    }
    Ok(())
}

/// The text a text, CDATA or reference event adds to a result element's
/// text: CDATA escaped as XML text is, a reference as written (`&name;`).
fn result_text(event: &Event) -> Result<String, String> {
    Ok(match event {
        Event::Text(t) => t
            .decode()
            .map_err(|e| format!("malformed JUnit text: {e}"))?
            .into_owned(),
        Event::CData(t) => {
            let raw = t
                .decode()
                .map_err(|e| format!("malformed JUnit CDATA: {e}"))?;
            quick_xml::escape::escape(raw.as_ref()).into_owned()
        }
        Event::GeneralRef(r) => {
            let raw = r
                .decode()
                .map_err(|e| format!("malformed JUnit reference: {e}"))?;
            format!("&{raw};")
        }
        _ => String::new(),
    })
}

/// Reads pytest's JUnit report into testcases. `xfails` maps `(classname,
/// name)` of collected items carrying an applicable xfail to its strictness
/// (`None`: unknown), so a plain pass of such an item is an XPASS.
///
/// # Errors
/// A sentence when the XML is malformed.
pub(crate) fn parse_junit(
    text: &str,
    xfails: &HashMap<(String, String), Option<bool>>,
) -> Result<Vec<SuiteTestCase>, String> {
    let mut reader = quick_xml::Reader::from_str(text);
    let mut out = Vec::new();
    let mut current: Option<Pending> = None;
    loop {
        let event = reader.read_event().map_err(|e| {
            format!(
                "malformed JUnit XML at byte {}: {e}",
                reader.buffer_position()
            )
        })?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                match e.name().as_ref() {
                    b"testcase" => {
                        let pending = testcase_start(e)?;
                        if empty {
                            out.push(finish(pending, xfails));
                        } else {
                            current = Some(pending);
                        }
                    }
                    kind @ (b"failure" | b"error" | b"skipped") => {
                        if let Some(p) = current.as_mut() {
                            result_start(p, kind, e, empty)?;
                        }
                    }
                    _ => {}
                }
            }
            text @ (Event::Text(_) | Event::CData(_) | Event::GeneralRef(_)) => {
                if let Some(p) = current.as_mut().filter(|p| p.in_result) {
                    p.text.push_str(&result_text(&text)?);
                }
            }
            Event::End(ref e) => match e.name().as_ref() {
                b"testcase" => {
                    if let Some(p) = current.take() {
                        out.push(finish(p, xfails));
                    }
                }
                b"failure" | b"error" | b"skipped" => {
                    if let Some(p) = current.as_mut() {
                        p.in_result = false;
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if current.is_some() {
        return Err("malformed JUnit XML: a testcase element is not closed".into());
    }
    Ok(out)
}

fn finish(p: Pending, xfails: &HashMap<(String, String), Option<bool>>) -> SuiteTestCase {
    let text = if p.text.trim().is_empty() {
        None
    } else {
        let unescaped = quick_xml::escape::unescape(&p.text)
            .map(|c| c.into_owned())
            .unwrap_or_else(|_| p.text.clone());
        Some(truncate(&unescaped, TEXT_LIMIT))
    };
    let (outcome, message) = match p.result {
        None => {
            let outcome = match xfails.get(&(p.classname.clone(), p.name.clone())) {
                Some(Some(true)) => SuiteOutcome::XpassedStrict,
                Some(_) => SuiteOutcome::Xpassed,
                None => SuiteOutcome::Passed,
            };
            (outcome, None)
        }
        Some((_, kind, ty, message)) => {
            let outcome = match kind.as_str() {
                "error" => SuiteOutcome::Error,
                "failure"
                    if message
                        .as_deref()
                        .is_some_and(|m| m.starts_with("[XPASS(strict)]")) =>
                {
                    SuiteOutcome::XpassedStrict
                }
                "failure" => SuiteOutcome::Failed,
                _ if ty.as_deref() == Some("pytest.xfail") => SuiteOutcome::Xfailed,
                _ => SuiteOutcome::Skipped,
            };
            (outcome, message)
        }
    };
    SuiteTestCase {
        classname: p.classname,
        name: p.name,
        outcome,
        message,
        text,
        duration_ms: p.duration_ms,
    }
}

fn truncate(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
