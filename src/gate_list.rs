//! `verify-coding-candidates gates [GATE...] [--format json]`: the catalogue
//! (what each gate proves, does not prove and requires) as wrapped text or
//! one JSON document.

use crate::catalogue::GateInfo;
use std::fmt::Write;

/// Text width of [`text`] on stdout: the terminal's columns when stdout is a
/// terminal, else 80 (a pipe, a file, a CI log).
pub fn stdout_width() -> usize {
    textwrap::termwidth()
}

/// Every gate of `gates` as one block (id and title, then `proves:`,
/// `does not prove:` and `requires:`), blocks separated by a blank line,
/// every line at most `width` columns (a single word longer than the width
/// stays whole); continuation lines are indented under the value. With
/// `fixtures`, a last block lists the built-in local protocol fixtures.
pub fn text(gates: &[GateInfo], width: usize, fixtures: bool) -> String {
    let mut out = String::new();
    for g in gates {
        push_wrapped(
            &mut out,
            &format!("{}  {}", g.id, g.title),
            "",
            "    ",
            width,
        );
        let requires = if g.requires.is_empty() {
            "nothing".to_string()
        } else {
            g.requires.join(", ")
        };
        for (label, value) in [
            ("proves:         ", g.proves.as_str()),
            ("does not prove: ", g.does_not_prove.as_str()),
            ("requires:       ", requires.as_str()),
        ] {
            let first = format!("  {label}");
            let rest = " ".repeat(first.len());
            push_wrapped(&mut out, value, &first, &rest, width);
        }
        if !g.after.is_empty() {
            // Ordering only: these gates' results never block this one.
            let first = "  runs after:     ";
            let rest = " ".repeat(first.len());
            let value = format!("{} (whatever their result)", g.after.join(", "));
            push_wrapped(&mut out, &value, first, &rest, width);
        }
        out.push('\n');
    }
    if fixtures {
        push_wrapped(
            &mut out,
            &format!(
                "built-in local protocol fixtures (`fixture = \"builtin:NAME\"` in \
                 [[discovery.runner_probe]]; each refuses network sockets and replies \"{}\"):",
                crate::builtin_fixtures::reply_text("NAME", "<nonce>")
            ),
            "",
            "  ",
            width,
        );
        for f in crate::builtin_fixtures::ALL {
            let first = format!("  builtin:{:<26}", f.name);
            let rest = " ".repeat(first.len());
            push_wrapped(&mut out, f.protocol, &first, &rest, width);
        }
    }
    out
}

/// `text` wrapped at `width`, the first line after `first`, the others
/// after `rest`, appended to `out` with a newline after each line.
///
/// Words are never split (not at hyphens either: ids and paths stay whole).
/// When `first` leaves fewer than 20 columns, it stands on a line of its own
/// and the text follows on lines indented by four spaces.
fn push_wrapped(out: &mut String, text: &str, first: &str, rest: &str, width: usize) {
    let width = width.max(24);
    if first.len() + 20 > width {
        let _ = writeln!(out, "{}", first.trim_end());
        return push_wrapped(out, text, "    ", "    ", width);
    }
    let options = textwrap::Options::new(width)
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(false)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    for line in textwrap::wrap(text, options) {
        let _ = writeln!(out, "{line}");
    }
}

/// The same as one JSON document: `{"gates": [{"id", "title", "proves",
/// "does_not_prove", "requires": [ids], "scope": "global"|"candidate"|"whole",
/// "after"?: [ids]}]}`,
/// and with `fixtures` also `"builtin_fixtures": [{"name", "protocol"}]`.
pub fn json(gates: &[GateInfo], fixtures: bool) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "gates": gates.iter().map(|g| serde_json::json!({
            "id": g.id,
            "title": g.title,
            "proves": g.proves,
            "does_not_prove": g.does_not_prove,
            "requires": g.requires,
            "scope": g.scope,
        })).collect::<Vec<_>>(),
    });
    // `after` (gates this one waits for, whatever their result), where set.
    for (entry, g) in doc["gates"].as_array_mut().into_iter().flatten().zip(gates) {
        if !g.after.is_empty() {
            entry["after"] = serde_json::json!(g.after);
        }
    }
    if fixtures {
        doc["builtin_fixtures"] = crate::builtin_fixtures::ALL
            .iter()
            .map(|f| serde_json::json!({"name": f.name, "protocol": f.protocol}))
            .collect();
    }
    doc
}

/// The catalogue entries `ids` name, in the order given; every catalogue
/// gate when `ids` is empty.
///
/// # Errors
/// The first id that names no gate: a sentence beginning `gates:` with the
/// id it most likely means and every known id (see
/// [`crate::catalogue::check_ids`]).
pub fn select(ids: &[String]) -> Result<Vec<GateInfo>, String> {
    if ids.is_empty() {
        return Ok(crate::catalogue::all().to_vec());
    }
    crate::catalogue::check_ids(ids).map_err(|e| e.replacen("--only:", "gates:", 1))?;
    Ok(ids
        .iter()
        .filter_map(|id| crate::catalogue::get(id).cloned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_fits_the_width_and_the_text_survives_wrapping() {
        let gates = crate::catalogue::all();
        for width in [40, 80, 120] {
            let out = text(gates, width, true);
            for line in out.lines() {
                // A word longer than the line stays whole (a path, an id).
                let longest_word = line.split_whitespace().map(str::len).max().unwrap_or(0);
                assert!(
                    line.chars().count() <= width || longest_word + 20 > width,
                    "{width}: {line:?}"
                );
            }
            let joined = out.split_whitespace().collect::<Vec<_>>().join(" ");
            for g in gates {
                let proves = g.proves.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(joined.contains(&proves), "{}: {width}", g.id);
            }
        }
    }

    #[test]
    fn a_gate_that_runs_after_others_says_so_and_the_others_do_not() {
        let placement = select(&["placement".into()]).unwrap();
        let text = text(&placement, 200, false);
        assert!(
            text.contains(
                "runs after:     archive-members, shared-runtime (whatever their result)"
            ),
            "{text}"
        );
        assert_eq!(
            json(&placement, false)["gates"][0]["after"],
            serde_json::json!(["archive-members", "shared-runtime"])
        );
        let stage = select(&["stage".into()]).unwrap();
        assert!(!text_of(&stage).contains("runs after"));
        assert!(json(&stage, false)["gates"][0].get("after").is_none());
    }

    fn text_of(gates: &[GateInfo]) -> String {
        text(gates, 200, false)
    }

    #[test]
    fn selecting_names_an_unknown_id_as_the_gates_commands() {
        let err = select(&["lbp_build".into()]).unwrap_err();
        assert!(
            err.starts_with("gates: unknown gate \"lbp_build\"; did you mean \"lbp-build\"?"),
            "{err}"
        );
        let chosen = select(&["suites".into(), "tree-clean".into()]).unwrap();
        assert_eq!(
            chosen.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
            ["suites", "tree-clean"]
        );
        assert_eq!(select(&[]).unwrap().len(), crate::catalogue::all().len());
    }
}
