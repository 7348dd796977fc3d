//! SIGINT/SIGTERM handling: a flag the pipeline and the child runner poll.
//!
//! SIGTERM is a CI cancel, which sends SIGKILL a few seconds later: it is
//! handled exactly like Ctrl-C, and fast. The first signal sets the flag;
//! every wait on a child ([`crate::process::Running::wait_timeout`],
//! `recv_line`, [`crate::process::run`]) looks at it at least every 100 ms,
//! every stop then allows [`crate::process::INTERRUPTED_GRACE`] instead of
//! [`crate::process::GRACE`] between TERM and KILL (also a stop already
//! waiting), no gate starts, and the evidence is written with verdict
//! `incomplete`. A second signal only sets the flag again: the handler
//! replaces the default action (`signal_hook::flag::register`), so no
//! repeated signal kills the verifier before the evidence is sealed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn flag() -> &'static Arc<AtomicBool> {
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Registers the SIGINT and SIGTERM handlers. Idempotent.
///
/// # Errors
/// When the operating system refuses to install a handler.
pub fn install() -> std::io::Result<()> {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(flag()))?;
    }
    Ok(())
}

/// True once SIGINT or SIGTERM was received.
pub fn requested() -> bool {
    flag().load(Ordering::SeqCst)
}
