//! The `stage` gate (being written).

use crate::context::RunContext;
use crate::evidence::Check;

/// The `stage` gate.
pub struct Stage;

impl super::Gate for Stage {
    fn id(&self) -> &'static str {
        "stage"
    }

    fn run(&self, _ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        Err("gate stage is not built yet".into())
    }
}
