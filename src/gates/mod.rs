//! The gates: one file each, behind the [`Gate`] trait.
//!
//! A gate checks one property and returns [`Check`]s; it never prints. Order
//! and prerequisites come from the catalogue (`gates/catalogue.toml`); adding
//! a gate means one file here, one entry in [`all`] and one catalogue entry.

pub mod admission;
pub(crate) mod archive_members;
pub mod dependencies;
pub mod discovery_rpc;
pub mod historical_admission;
pub mod lbp_build;
pub(crate) mod sdk_record;
mod sdk_shadow;
mod shared_copies;
mod stage;
pub(crate) mod suites;
mod tree_clean;
pub mod vendored_sdk;
pub mod worker_isolation;

pub use admission::Admission;
pub use archive_members::ArchiveMembers;
pub use dependencies::Dependencies;
pub use discovery_rpc::DiscoveryRpc;
pub use historical_admission::HistoricalAdmission;
pub use lbp_build::LbpBuild;
pub use sdk_record::SdkRecord;
pub use sdk_shadow::SdkShadow;
pub use shared_copies::SharedCopies;
pub use stage::Stage;
pub use suites::Suites;
pub use tree_clean::TreeClean;
pub use vendored_sdk::VendoredSdk;
pub use worker_isolation::WorkerIsolation;

use crate::context::{RunContext, Updates};
use crate::evidence::Check;

/// One gate.
pub trait Gate: Send + Sync {
    /// Stable kebab-case id, as in the catalogue.
    fn id(&self) -> &'static str;

    /// The check whose detail (first line) summarises a passing run of this
    /// gate in the terminal and in `gates[].note` (for example which
    /// isolation backend was used). None: no note.
    fn headline_check(&self) -> Option<&'static str> {
        None
    }

    /// Runs the gate. `Err` is an error that stopped the gate before it could
    /// observe (the pipeline records it as a failing check named `gate-error`).
    ///
    /// # Errors
    /// A sentence naming what could not be done and what to do.
    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String>;

    /// The reason this run gives the gate nothing to observe (an input such
    /// as `--release-dir` not supplied, a profile section absent), asked
    /// before the gate runs. `Some`: the pipeline records the gate `skipped`
    /// with this reason, never `pass`, and (unless `--only` named it) not
    /// required. Default: always applicable.
    fn not_applicable(&self, _ctx: &RunContext) -> Option<String> {
        None
    }
}

/// Every implemented gate.
pub fn all() -> Vec<Box<dyn Gate>> {
    vec![
        Box::new(TreeClean),
        Box::new(Stage),
        Box::new(SdkRecord),
        Box::new(SharedCopies),
        Box::new(LbpBuild),
        Box::new(ArchiveMembers),
        Box::new(SdkShadow),
        Box::new(Admission),
        Box::new(Dependencies),
        Box::new(VendoredSdk),
        Box::new(HistoricalAdmission),
        Box::new(DiscoveryRpc),
        Box::new(WorkerIsolation),
        Box::new(Suites),
    ]
}

/// Finds the implementation of gate `id`.
pub fn by_id(id: &str) -> Option<Box<dyn Gate>> {
    all().into_iter().find(|g| g.id() == id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_catalogue_entry_has_exactly_one_implementation() {
        let ids: Vec<&str> = super::all().iter().map(|g| g.id()).collect();
        let catalogue: Vec<&str> = crate::catalogue::all()
            .iter()
            .map(|g| g.id.as_str())
            .collect();
        let mut a = ids.clone();
        let mut b = catalogue.clone();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }
}
