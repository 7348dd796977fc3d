//! The `sdk-shadow` gate (being written).

use crate::context::RunContext;
use crate::evidence::Check;

/// The `sdk-shadow` gate.
pub struct SdkShadow;

impl super::Gate for SdkShadow {
    fn id(&self) -> &'static str {
        "sdk-shadow"
    }

    fn run(&self, _ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        Err("gate sdk-shadow is not built yet".into())
    }
}
