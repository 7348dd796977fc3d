//! Certification harness for LangBot plugin release candidates.
//!
//! The pipeline ([`pipeline`]) runs the gates of [`gates`] in catalogue order
//! against one exact commit, with the genuine SDK interpreter, and produces one
//! evidence model ([`evidence`]) that the JSON, JUnit and terminal views render.

pub mod archive;
pub mod build_rules;
pub mod builtin_fixtures;
pub mod catalogue;
pub mod certification;
pub mod cli;
pub mod context;
pub mod evidence;
pub mod exit;
pub mod fuzz;
pub mod gate_list;
pub mod gates;
pub mod git;
pub mod gitignore;
pub mod hash;
pub mod heap;
pub mod interrupt;
pub mod isolation;
pub mod lbpkg;
pub mod manifest;
pub mod manifest_claims;
pub mod manifest_diff;
pub mod manifest_yaml;
pub mod merge;
pub mod netns;
pub mod origin;
pub mod output;
pub mod parallel;
pub mod pipeline;
pub mod process;
pub mod profile;
pub mod profile_init;
pub mod provision;
pub mod python;
pub mod record;
pub mod replay;
pub mod report;
pub mod rpc;
pub mod signed;
pub mod sweep;
pub mod wheelhouse;
pub mod worktree;
