//! Writing to the terminal without panicking on a reader that went away.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe returns `BrokenPipe`,
//! and `println!`/`eprintln!` turn that error into a panic (exit 101): the
//! verifier piped into `... 2>&1 | head` panicked whenever `head` exited
//! before the last line. Every stdout and stderr line of the binary goes
//! through [`stdout`] or [`stderr_line!`](crate::stderr_line) instead: a
//! closed stream ends the output quietly and never changes the exit code
//! (a run's outcome and evidence do not depend on who read its summary).

use std::io::Write;

/// Writes `text` to stdout and flushes it.
///
/// A reader that went away (`BrokenPipe`: `| head -1`, `| true`) ends the
/// output quietly; any other write error is reported on stderr (itself
/// written without panicking). Neither changes the exit code.
pub fn stdout(text: &str) {
    let text = escape_text(text, true);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            stderr(format_args!("error: cannot write to stdout: {e}"));
        }
        _ => {}
    }
}

/// Writes one line (`args` and a newline) to stderr; a write error (a closed
/// or full stream) is ignored: there is nowhere left to report it.
pub fn stderr(args: std::fmt::Arguments<'_>) {
    let text = escape_text(&args.to_string(), true);
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(text.as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

/// The colour sequences the summary paints its result words with
/// (`report::summary`): the only escape sequences passed to a terminal.
const OWN_SGR: &[&str] = &["\x1b[0m", "\x1b[32m", "\x1b[1;31m", "\x1b[33m"];

/// Whether `c` is shown escaped: a control character other than newline
/// and tab (C0, DEL, C1; a carriage return or escape sequence could rewrite
/// what the terminal shows), or a bidirectional formatting character
/// (Unicode TR9: U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069,
/// which reorder what is displayed, CVE-2021-42574 "Trojan Source").
pub fn is_unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [`is_unsafe_char`] written as `\uXXXX` (JSON's own
/// escape, so a JSON document stays valid and reads back the same; a candidate
/// name, a test id or an output tail printed by a run is text of the code
/// under review). With `own_colour`, the summary's own colour sequences
/// ([`OWN_SGR`]) pass unchanged; any other escape sequence is escaped.
pub fn escape_text(text: &str, own_colour: bool) -> String {
    if !text.chars().any(is_unsafe_char) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(sgr) = OWN_SGR.iter().find(|s| own_colour && rest.starts_with(**s)) {
            out.push_str(sgr);
            rest = &rest[sgr.len()..];
            continue;
        }
        if is_unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `eprintln!` that never panics: one line to stderr through
/// [`output::stderr`](crate::output::stderr), errors ignored.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::output::stderr(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_escaped_and_only_our_colours_pass() {
        let name = "codex\u{202e}txt.exe\r\x1b[2Jagent\u{2066}";
        assert_eq!(
            escape_text(name, true),
            "codex\\u202etxt.exe\\u000d\\u001b[2Jagent\\u2066"
        );
        assert_eq!(
            escape_text("\x1b[1;31mFAIL\x1b[0m a\tb\n", true),
            "\x1b[1;31mFAIL\x1b[0m a\tb\n"
        );
        assert_eq!(
            escape_text("\x1b[32mpass\x1b[0m", false),
            "\\u001b[32mpass\\u001b[0m"
        );
        assert_eq!(escape_text("plain\n", true), "plain\n");
        // A JSON document (`--format json`) stays valid and reads back the same.
        let json = escape_text(&serde_json::to_string("a\u{202e}b").unwrap(), true);
        assert_eq!(json, "\"a\\u202eb\"");
        assert_eq!(serde_json::from_str::<String>(&json).unwrap(), "a\u{202e}b");
        assert!(!is_unsafe_char('\u{00e9}'));
        assert!(is_unsafe_char('\u{0085}'));
        assert!(is_unsafe_char('\u{061c}'));
    }
}
