//! The `shared-copies` gate (being written).

use crate::context::RunContext;
use crate::evidence::Check;

/// The `shared-copies` gate.
pub struct SharedCopies;

impl super::Gate for SharedCopies {
    fn id(&self) -> &'static str {
        "shared-copies"
    }

    fn run(&self, _ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        Err("gate shared-copies is not built yet".into())
    }
}
