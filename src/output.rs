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
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `eprintln!` that never panics: one line to stderr through
/// [`output::stderr`](crate::output::stderr), errors ignored.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::output::stderr(format_args!($($arg)*))
    };
}
