//! The `archive-members` gate (being written).

use crate::context::RunContext;
use crate::evidence::Check;

/// The `archive-members` gate.
pub struct ArchiveMembers;

impl super::Gate for ArchiveMembers {
    fn id(&self) -> &'static str {
        "archive-members"
    }

    fn run(&self, _ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        Err("gate archive-members is not built yet".into())
    }
}
