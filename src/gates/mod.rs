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
pub mod placement;
pub(crate) mod sdk_mismatch;
pub(crate) mod sdk_record;
mod sdk_shadow;
pub(crate) mod shared_copies;
pub mod shared_runtime;
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
pub use placement::PlacementGate;
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
    /// A `candidate`-scope gate may see some of the run's candidates only
    /// (`ctx.selected` and `ctx.candidates` alike, when an earlier gate
    /// failed the others): it checks those, and records facts by candidate
    /// folder, never by position. A failing check that names a candidate
    /// stops only that candidate's later gates; one without a candidate
    /// stops every gate that requires this one.
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

    /// Runs a gate the pipeline started before all of its prerequisites
    /// ended (its catalogue `early_requires` passed, the rest of `requires`
    /// had not ended yet): `early` is the context those gates left, and
    /// [`Rest::wait`] blocks until the rest ended, giving the context the
    /// gate would have started with (without the candidates it runs without),
    /// or `None` when it is blocked or the run was interrupted: the gate then
    /// returns at once and the pipeline records why. Default: waits, then
    /// [`Gate::run`].
    ///
    /// # Errors
    /// As [`Gate::run`].
    fn run_early(
        &self,
        early: &RunContext,
        rest: &Rest,
        out: &mut Updates,
    ) -> Result<Vec<Check>, String> {
        let _ = early;
        match rest.wait() {
            Some(ctx) => self.run(&ctx, out),
            None => Ok(Vec::new()),
        }
    }
}

/// What a gate started early waits for ([`Gate::run_early`]): the pipeline
/// sends the full context once the rest of the gate's prerequisites ended,
/// or `None` when they did not all pass for it (blocked) or the run was
/// interrupted.
pub struct Rest(std::sync::Mutex<std::sync::mpsc::Receiver<Option<std::sync::Arc<RunContext>>>>);

impl Rest {
    /// The receiving end of the pipeline's channel.
    pub fn new(rx: std::sync::mpsc::Receiver<Option<std::sync::Arc<RunContext>>>) -> Self {
        Self(std::sync::Mutex::new(rx))
    }

    /// Blocks until the pipeline hands the context over; `None`: blocked or
    /// interrupted (also when the pipeline is gone).
    pub fn wait(&self) -> Option<std::sync::Arc<RunContext>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .recv()
            .ok()
            .flatten()
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
        Box::new(shared_runtime::SharedRuntime),
        Box::new(WorkerIsolation),
        Box::new(Suites),
        Box::new(PlacementGate),
    ]
}

/// Finds the implementation of gate `id`.
pub fn by_id(id: &str) -> Option<Box<dyn Gate>> {
    all().into_iter().find(|g| g.id() == id)
}

/// What the gates' `run` tests share: a context over a temporary evidence
/// directory and, where a gate reads the repository, a real git repository.
#[cfg(test)]
pub(crate) mod testing {
    use crate::context::{RunContext, Updates};
    use std::path::Path;
    use std::process::Command;

    /// Runs `git ARGS` in `dir`, panicking with its stderr when it fails.
    pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A git repository in `dir` with `files` committed; returns the commit.
    pub(crate) fn repo(dir: &Path, files: &[(&str, &str)]) -> String {
        git(dir, &["init", "-q", "-b", "main"]);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "c"]);
        git(dir, &["rev-parse", "HEAD"])
    }

    /// A candidate record with nothing observed yet: no manifest, archive,
    /// admission, preparation or discovery.
    pub(crate) fn bare_candidate(folder: &str) -> crate::evidence::CandidateRecord {
        crate::evidence::CandidateRecord {
            folder: folder.into(),
            path: format!("Runner/{folder}"),
            manifest: None,
            archive: None,
            admission: None,
            dependencies: None,
            discovery: None,
            verdict: None,
            sdk_group: None,
            sdk_choice: None,
            placement: None,
        }
    }

    /// Asserts `checks` is not empty and holds no pass.
    pub(crate) fn assert_none_pass(checks: &[crate::evidence::Check]) {
        assert!(!checks.is_empty());
        assert!(
            checks
                .iter()
                .all(|c| c.result != crate::evidence::CheckResult::Pass),
            "{checks:#?}"
        );
    }

    /// [`RunContext::for_tests`] writing into `evidence` (which it creates).
    pub(crate) fn ctx(evidence: &Path) -> RunContext {
        let mut ctx = RunContext::for_tests();
        std::fs::create_dir_all(evidence).unwrap();
        ctx.evidence_dir = evidence.to_path_buf();
        ctx
    }

    /// `gate.run`, with the facts it recorded applied to a copy of `ctx`.
    pub(crate) fn run(
        gate: &dyn super::Gate,
        ctx: &RunContext,
    ) -> (Result<Vec<crate::evidence::Check>, String>, RunContext) {
        let mut out = Updates::default();
        let result = gate.run(ctx, &mut out);
        let mut after = ctx.clone();
        out.apply(&mut after);
        (result, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_are_found_by_id_and_default_to_no_headline_and_always_applicable() {
        for id in ["tree-clean", "stage", "worker-isolation", "suites"] {
            assert_eq!(by_id(id).expect(id).id(), id);
        }
        assert!(by_id("no-such-gate").is_none());
        assert!(by_id("").is_none());
        // The defaults, on a gate that keeps them.
        let ctx = crate::context::RunContext::for_tests();
        assert_eq!(TreeClean.headline_check(), None);
        assert_eq!(TreeClean.not_applicable(&ctx), None);
        assert_eq!(DiscoveryRpc.headline_check(), Some("network-isolation"));
    }

    #[test]
    fn worker_isolation_applies_only_where_the_profile_declares_it() {
        let mut ctx = crate::context::RunContext::for_tests();
        // The built-in profile declares it.
        assert_eq!(WorkerIsolation.not_applicable(&ctx), None);
        ctx.profile.profile.worker_isolation = None;
        let why = WorkerIsolation
            .not_applicable(&ctx)
            .expect("skipped without [worker_isolation]");
        assert!(why.contains("no [worker_isolation] table"), "{why}");
    }

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
