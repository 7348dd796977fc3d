//! SIGINT/SIGTERM handling: a flag the pipeline and the child runner poll.
//!
//! SIGTERM is a CI cancel, which sends SIGKILL a few seconds later: it is
//! handled exactly like Ctrl-C, and fast. The first signal sets the flag;
//! every wait on a child ([`crate::process::Running::wait_timeout`],
//! `recv_line`, [`crate::process::run`]) looks at it at least every 100 ms;
//! the pipeline's watcher sends SIGTERM to every running step's process
//! group at once; every stop's grace between TERM and KILL then ends at most
//! [`crate::process::INTERRUPTED_GRACE`] after the interrupt was noticed
//! (one deadline for all, also for a stop already waiting:
//! [`crate::process::grace`]); no gate starts, and the evidence is written
//! with verdict `incomplete`. A second signal only sets the flag again: the handler
//! replaces the default action (`signal_hook::flag::register`), so no
//! repeated signal kills the verifier before the evidence is sealed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

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

/// When the interrupt was first noticed (by [`requested`]).
static NOTICED: OnceLock<Instant> = OnceLock::new();

/// True once SIGINT or SIGTERM was received.
pub fn requested() -> bool {
    let requested = flag().load(Ordering::SeqCst);
    if requested {
        let _ = NOTICED.get_or_init(Instant::now);
    }
    requested
}

/// How long ago the interrupt was first noticed; none before one.
pub fn since() -> Option<Duration> {
    requested().then(|| NOTICED.get().map_or(Duration::ZERO, Instant::elapsed))
}

/// How often [`Watch`] looks at the flag.
const WATCH_POLL: Duration = Duration::from_millis(20);

/// A thread that runs an action once, when the interrupt is first noticed,
/// while the `Watch` lives; dropping it ends the thread (within
/// [`WATCH_POLL`]) without running the action.
#[derive(Debug)]
pub struct Watch {
    done: Arc<AtomicBool>,
}

impl Watch {
    /// Starts watching: `action` runs on the watch's thread at most
    /// [`WATCH_POLL`] after SIGINT or SIGTERM arrives.
    pub fn start(action: impl FnOnce() + Send + 'static) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let seen_done = Arc::clone(&done);
        let spawned = std::thread::Builder::new()
            .name("interrupt watch".into())
            .spawn(move || {
                while !seen_done.load(Ordering::SeqCst) {
                    if requested() {
                        action();
                        return;
                    }
                    std::thread::sleep(WATCH_POLL);
                }
            });
        // Without the thread the stops still notice the flag themselves,
        // one after the other: slower, never wrong.
        drop(spawned);
        Self { done }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}
