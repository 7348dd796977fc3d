//! Exit codes of `verify-coding-candidates`, a documented table users script against.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every required gate passed |
//! | 1 | at least one gate failed (evidence still written, verdict `fail`) |
//! | 2 | could not run: bad arguments, evidence dir not fresh/absolute/outside the repo or held by another run, not a git repo, no interpreter given and none could be provisioned |
//! | 130 | interrupted: children reaped, evidence written with verdict `incomplete` |
//!
//! A skipped or blocked required gate never yields [`SUCCESS`].

/// Every required gate passed (verdict `pass`).
pub const SUCCESS: u8 = 0;

/// At least one required gate failed, was blocked or was skipped; the evidence
/// was still written, with verdict `fail`. Any unexpected failure is also 1.
pub const GATE_FAILED: u8 = 1;

/// The run could not start: bad arguments, an evidence directory that is not
/// absolute, not fresh (missing or empty), lies inside the repository or is
/// held by another run (its lock), a path that is not a git repository, or no
/// interpreter.
pub const CANNOT_RUN: u8 = 2;

/// Interrupted by SIGINT or SIGTERM: children were reaped and the evidence was
/// written with verdict `incomplete`. 128 + SIGINT, as shells report it.
pub const INTERRUPTED: u8 = 130;
