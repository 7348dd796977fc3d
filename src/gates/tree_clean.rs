//! The `tree-clean` gate (being written).

use crate::context::RunContext;
use crate::evidence::Check;

/// The `tree-clean` gate.
pub struct TreeClean;

impl super::Gate for TreeClean {
    fn id(&self) -> &'static str {
        "tree-clean"
    }

    fn run(&self, _ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        Err("gate tree-clean is not built yet".into())
    }
}
