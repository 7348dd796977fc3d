//! SIGINT/SIGTERM handling: a flag the pipeline and the child runner poll.
//!
//! The first signal sets the flag; running children are then stopped as a
//! process group (TERM, grace, KILL) and the evidence is written with verdict
//! `incomplete`.

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
