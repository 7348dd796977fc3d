//! The `sdk-record` gate (being written).

use crate::context::RunContext;
use crate::evidence::Check;

/// The `sdk-record` gate.
pub struct SdkRecord;

impl super::Gate for SdkRecord {
    fn id(&self) -> &'static str {
        "sdk-record"
    }

    fn run(&self, _ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        Err("gate sdk-record is not built yet".into())
    }
}
