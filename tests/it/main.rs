//! The integration tests, one test binary: each file beside this one is a
//! module (`cargo test --test it <module>::` or `cargo xtask test
//! <module>::` runs one file's tests; nextest names a test
//! `it <module>::<test>`).
//!
//! Why one binary: each file under `tests/` is a crate of its own that cargo
//! compiles and links against the whole library and its dependencies (debug
//! info included); with 38 files that was 38 links of about the same binary,
//! most of the time of building the tests after a change to `src/`
//! (measured: docs/development.md, "Tests"). The modules share
//! `tests/common/` as they did.
//!
//! Adding a test file: create `tests/it/<name>.rs` (start it with
//! `use crate::common;` where it needs the helpers, not `mod common;`) and
//! add `mod <name>;` below, in order. A new test file is a binary of its
//! own (`tests/<name>.rs`) only when its test needs the process to itself,
//! as `residue.rs` (the test process becomes the child subreaper) and
//! `prerequisites.rs` (it sets an environment variable the helpers read).

#[path = "../common/mod.rs"]
mod common;

mod admission_gates;
mod adversarial;
mod adversarial_runtime;
mod archive_pages;
mod build_gates;
mod ci_recipes;
mod cli;
mod cli_output;
mod dependency_provenance;
mod discovery_components;
mod discovery_rpc;
mod end_to_end;
mod evidence_snapshot;
mod evidence_sweep;
mod fixtures;
mod fuzz_readers;
mod hermetic_git;
mod interpreter_environment;
mod lifecycle;
mod locked_environment;
mod placement;
mod provenance_gates;
mod provision;
mod report_page;
mod reviewers;
mod sandbox;
mod schema;
mod sdk_gates;
mod sdk_groups;
mod shared_runtime;
mod signed;
mod statement_subject;
mod suites_candidates;
mod suites_gate;
mod suites_outcomes;
mod suites_priority;
mod suites_reruns;
mod worker_isolation;
mod worktree;
