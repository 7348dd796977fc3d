//! The verifier's own heap: one malloc arena for the whole process.
//!
//! glibc's malloc gives each thread that allocates under contention an arena
//! of its own (up to 8 per core) and keeps what is freed there for reuse by
//! that arena. The gates run on threads of their own, so each run left a
//! thread's worth of freed, unreturned pages behind per gate, and the
//! verifier's peak RSS grew with the candidate count while its live heap did
//! not (measured on the scale bench's 50-candidate repository: peak RSS
//! 22.0 MiB at 5 candidates and 29.6 MiB at 50, against 19.1 and 20.2 MiB
//! with one arena; heaptrack's peak live heap at 50 was 7 MiB). The
//! verifier's own allocation rate is low (the gates mostly wait on their
//! programs), so one arena's lock costs nothing measurable.
//!
//! Only the verifier's own process: the setting is not an environment
//! variable, so no program it starts inherits it.

/// Limits the process to one malloc arena (`mallopt(M_ARENA_MAX, 1)`).
/// Call it first in `main`, before any thread starts. A no-op where the C
/// library is not glibc.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets a malloc tunable; called before any
        // other thread exists, nothing races it. Its status (1 on success)
        // is ignored: on failure the default arenas stay, which is only
        // a larger peak.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}
