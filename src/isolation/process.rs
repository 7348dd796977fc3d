//! The `process` backend: the program itself, nothing around it.
//!
//! Isolation is what [`crate::process::spawn_long`] gives every child (its
//! own process group, an environment cleared but for the given variables)
//! plus private HOME/TMPDIR/data roots named by that environment. The program
//! runs as the same user in the same namespaces as the harness: it could read
//! another worker's root, and the gate records that it did.

use super::{Command, Confinement};
use std::path::Path;

/// `program args` with the confinement's environment.
pub fn command(c: &Confinement, program: &Path, args: &[String]) -> Command {
    Command {
        program: program.to_path_buf(),
        args: args.to_vec(),
        env: c.env.clone(),
    }
}
