//! The `lbp-build` gate (being written).

use crate::context::RunContext;
use crate::evidence::Check;

/// The `lbp-build` gate.
pub struct LbpBuild;

impl super::Gate for LbpBuild {
    fn id(&self) -> &'static str {
        "lbp-build"
    }

    fn run(&self, _ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        Err("gate lbp-build is not built yet".into())
    }
}
