//! The state a run carries from gate to gate.
//!
//! Gates read what earlier gates established (the staged tree, the verified
//! SDK, the built archives) and add their own facts. Paths inside the evidence
//! directory are derived here, in one place, so the layout in DESIGN.md is
//! written down once.

use crate::evidence::{CandidateRecord, Sdk, Source};
use crate::process;
use crate::profile::{CandidateSpec, LoadedProfile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The SDK as verified by `sdk-record`.
#[derive(Debug, Clone)]
pub struct VerifiedSdk {
    /// site-packages directory holding the package and its dist-info.
    pub site_packages: PathBuf,
    /// The `langbot_plugin` package directory.
    pub package_dir: PathBuf,
    /// The dist-info directory.
    pub dist_info: PathBuf,
}

/// Everything a gate may read; a gate records its own facts through
/// [`Updates`], applied when it ends.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// Top level of the repository under review.
    pub repo: PathBuf,
    /// The evidence directory (absolute, fresh, outside the repository).
    pub evidence_dir: PathBuf,
    /// The profile in force.
    pub profile: LoadedProfile,
    /// The interpreter given by `--python` or `$PYTHON`.
    pub python: PathBuf,
    /// Source facts; `commit` and `tree` are known from the start.
    pub source: Source,
    /// SDK facts as observed so far.
    pub sdk: Sdk,
    /// One record per profile candidate, in profile order.
    pub candidates: Vec<CandidateRecord>,
    /// `DIR/staging/source`, once `stage` passed.
    pub staged_root: Option<PathBuf>,
    /// Every file of the commit, export-ignored ones too, once `stage`
    /// passed: `DIR/staging/tree` when some path carries export-ignore, else
    /// `DIR/staging/source`. What the `suites` gate's tree runs copy.
    pub committed_root: Option<PathBuf>,
    /// The SDK, once `sdk-record` passed.
    pub verified_sdk: Option<VerifiedSdk>,
    /// The candidates this run checks: the profile's, or the share of
    /// `--partition K/N` (see [`crate::profile::partition_share`]). A gate
    /// that runs after an earlier gate failed some candidates sees them left
    /// out here and in [`RunContext::candidates`]
    /// ([`RunContext::without_candidates`]).
    pub selected: Vec<CandidateSpec>,
    /// `--isolation`: the backend the `worker-isolation` gate must use
    /// (`auto` picks bwrap when its preflight succeeds).
    pub isolation: crate::isolation::IsolationChoice,
    /// The `suites` gate's runs, once it ran.
    pub suites: Option<crate::evidence::SuitesRecord>,
    /// DIR/wheelhouse as the `dependencies` gate built it, once it ran.
    pub wheelhouse: Option<crate::evidence::WheelhouseRecord>,
    /// Per candidate folder, the `spec.pages` the SDK's build writes for
    /// its staged source, as `lbp-build`'s build host computed them
    /// (`build_pages` of `src/python/manifest_pages.py`: `{"value": NODE}`,
    /// `{"error": TEXT}`, or null for an SDK whose build has no pages
    /// step); the `archive-members` gate's manifest probe takes them instead
    /// of importing the SDK again. Not evidence: that probe's kept answer
    /// holds them.
    pub build_pages: BTreeMap<String, serde_json::Value>,
    /// Per candidate folder whose archive the SDK's artifact store accepted
    /// in `admission`, the requirements the SDK keeps for its installer
    /// (`_read_requirements` of the artifact installed from the exact
    /// archive: the `kept` list of `admission_probe.py`'s
    /// `artifact_requirements`), or why it did not keep them (its refusal,
    /// `ExceptionType: message`); the `dependencies` gate takes them instead
    /// of importing the SDK again to read them. Not evidence: admission's
    /// kept probe answer (`logs/admission/probe.stdout`) holds them.
    pub admitted_requirements: BTreeMap<String, Result<Vec<String>, String>>,
    /// `--release-dir`: historical archives for the `historical-admission`
    /// gate (absolute); none: that gate is skipped.
    pub release_dir: Option<PathBuf>,
    /// Which gates ran when, recorded by the pipeline as it starts and ends
    /// them (shared by every copy of the context).
    pub activity: GateActivity,
    /// `--jobs N`: gates at once; with 1 the run is serial inside gates too
    /// ([`RunContext::width`]).
    pub jobs: usize,
    /// The package index of the run: `--index-url`, else the profile's
    /// `[dependencies] index_url`. Read it through
    /// [`RunContext::package_index_url`].
    pub index_url: String,
    /// `--sdk-group`: this run certifies one non-default SDK group of a
    /// grouped profile (`src/pipeline/groups.rs`); the repository-level
    /// steps (the `suites` gate's repository-level runs) belong to the
    /// default group's run, the candidates' own steps to this one.
    pub group_run: bool,
    /// The records of the gates this gate runs after (its catalogue
    /// `after`), as they ended; empty for a gate without `after`.
    pub ended: Vec<crate::evidence::GateRecord>,
}

/// Steps of one gate at once per `--jobs` ([`RunContext::width`]): two per
/// job, since a step is a child process that also waits (on its sandbox,
/// the disk, the index), so two keep a core busy; the fixture's three
/// candidates still run side by side on a two-core machine.
pub const STEPS_PER_JOB: usize = 2;

impl RunContext {
    /// How many steps of one gate run at once ([`crate::parallel::map`]):
    /// 1 under `--jobs 1` (a serial run), else [`STEPS_PER_JOB`] per job.
    /// Never the candidate count: what runs at once, and the memory it
    /// holds, must not grow with it (docs/development.md, the bench's scale
    /// part).
    pub fn width(&self) -> usize {
        if self.jobs <= 1 {
            1
        } else {
            self.jobs.saturating_mul(STEPS_PER_JOB)
        }
    }

    /// The package index (PEP 503 simple API base URL) the run may reach:
    /// `--index-url`, else the profile's `[dependencies] index_url` (default
    /// `https://pypi.org/simple`). The `dependencies` gate downloads every
    /// wheelhouse file from it, and records it; anything else that must reach
    /// an index (SDK self-provisioning) reads it here.
    pub fn package_index_url(&self) -> &str {
        &self.index_url
    }

    /// The candidates this run checks (all, or this partition's share).
    /// Global gates that compare candidates with each other use
    /// `profile.profile.candidates` instead.
    pub fn candidate_specs(&self) -> &[CandidateSpec] {
        &self.selected
    }

    /// This context without the candidates `left_out` (folder names), in
    /// [`RunContext::selected`] and [`RunContext::candidates`] alike: what a
    /// gate sees when an earlier gate failed those candidates and it runs
    /// for the others only (the same narrowing `--partition` makes).
    pub fn without_candidates(&self, left_out: &[String]) -> RunContext {
        let mut narrowed = self.clone();
        narrowed
            .selected
            .retain(|c| !left_out.iter().any(|f| f == c.folder()));
        narrowed
            .candidates
            .retain(|c| !left_out.contains(&c.folder));
        narrowed
    }

    /// The verified interpreter of candidate `folder`: its SDK group's
    /// (`[[candidate]] sdk`, `src/profile/groups.rs`). Every gate that runs
    /// the SDK for a candidate asks here. A run certifies one SDK group (a
    /// grouped profile's other groups are runs of their own,
    /// `src/pipeline/groups.rs`), so every candidate of
    /// [`RunContext::selected`] has the run's interpreter, [`RunContext::python`],
    /// which `sdk-record` verified ([`RunContext::verified_sdk`]) at
    /// `profile.sdk`, the group's pin; a step that serves every candidate at
    /// once (one probe process, the runtime) uses that interpreter directly.
    pub fn python_for(&self, folder: &str) -> &Path {
        let _ = folder;
        &self.python
    }

    /// `DIR/staging/source`.
    pub fn staging_source(&self) -> PathBuf {
        self.evidence_dir.join("staging").join("source")
    }

    /// `DIR/staging/tree`: every committed file, export-ignored ones too
    /// (written by `stage` only when some path carries export-ignore).
    pub fn staging_tree(&self) -> PathBuf {
        self.evidence_dir.join("staging").join("tree")
    }

    /// `DIR/staging/source/<candidate path>`.
    pub fn staged_candidate(&self, c: &CandidateSpec) -> PathBuf {
        let mut p = self.staging_source();
        for part in c.path.split('/') {
            p.push(part);
        }
        p
    }

    /// `DIR/packages/<folder>`.
    pub fn packages_dir(&self, folder: &str) -> PathBuf {
        self.evidence_dir.join("packages").join(folder)
    }

    /// `DIR/extracted`.
    pub fn extracted_root(&self) -> PathBuf {
        self.evidence_dir.join("extracted")
    }

    /// `DIR/logs/<gate>/<name>` (a stem: the runner appends `.stdout` etc.).
    pub fn log_stem(&self, gate: &str, name: &str) -> PathBuf {
        self.evidence_dir.join("logs").join(gate).join(name)
    }

    /// Creates and returns private `(home, tmp)` roots at
    /// `DIR/roots/<gate>/<name>/{home,tmp}`.
    ///
    /// # Errors
    /// When the directories cannot be created.
    pub fn private_roots(&self, gate: &str, name: &str) -> std::io::Result<(PathBuf, PathBuf)> {
        let base = self.evidence_dir.join("roots").join(gate).join(name);
        let (home, tmp) = (base.join("home"), base.join("tmp"));
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&tmp)?;
        Ok((home, tmp))
    }

    /// The allowlisted child environment with private HOME and TMPDIR.
    pub fn child_env(&self, home: &Path, tmp: &Path) -> BTreeMap<String, String> {
        let mut env = process::base_env();
        env.insert("HOME".into(), home.display().to_string());
        env.insert("TMPDIR".into(), tmp.display().to_string());
        env.insert("PYTHONDONTWRITEBYTECODE".into(), "1".into());
        env
    }

    /// A context for unit tests: the built-in profile, every candidate of it
    /// selected, no gate's facts yet, paths under the system temporary
    /// directory that nothing writes to.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Self {
        let dir = std::env::temp_dir();
        let profile = crate::profile::load(None, &dir).expect("built-in profile");
        let selected = profile.profile.candidates.clone();
        Self {
            repo: dir.clone(),
            evidence_dir: dir.join("vcc-unit-test-never-written"),
            profile,
            python: PathBuf::from("python3"),
            source: Source {
                repo: String::new(),
                commit: String::new(),
                tree: String::new(),
                archive_sha256: None,
                ignored_files: Vec::new(),
                export_attributes: Vec::new(),
                origin: None,
                worktree: None,
            },
            sdk: Sdk::default(),
            candidates: Vec::new(),
            staged_root: None,
            committed_root: None,
            verified_sdk: None,
            selected,
            isolation: crate::isolation::IsolationChoice::default(),
            suites: None,
            wheelhouse: None,
            build_pages: BTreeMap::new(),
            admitted_requirements: BTreeMap::new(),
            release_dir: None,
            activity: GateActivity::default(),
            jobs: 2,
            index_url: crate::profile::UPSTREAM_INDEX.into(),
            group_run: false,
            ended: Vec::new(),
        }
    }

    /// The candidate record for `folder`.
    pub fn record_mut(&mut self, folder: &str) -> Option<&mut CandidateRecord> {
        self.candidates.iter_mut().find(|c| c.folder == folder)
    }
}

/// When the gates of a run started and ended, on one counter of those events
/// (an order, not a clock), so a gate can learn which gates ran beside it
/// while it observed something (worker-isolation's `private-roots`). Clones
/// share one record.
#[derive(Debug, Clone, Default)]
pub struct GateActivity(std::sync::Arc<std::sync::Mutex<ActivityLog>>);

#[derive(Debug, Default)]
struct ActivityLog {
    /// Events so far (starts, ends and marks).
    events: u64,
    /// `(gate, start event, end event)`, in start order.
    spans: Vec<(String, u64, Option<u64>)>,
}

impl GateActivity {
    fn log(&self) -> std::sync::MutexGuard<'_, ActivityLog> {
        // A record of plain numbers stays consistent even if a holder panicked.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The pipeline: `gate` starts now, before any of its work.
    pub fn started(&self, gate: &str) {
        let mut log = self.log();
        log.events += 1;
        let at = log.events;
        log.spans.push((gate.to_string(), at, None));
    }

    /// The pipeline: `gate` ended now, after all of its work.
    pub fn ended(&self, gate: &str) {
        let mut log = self.log();
        log.events += 1;
        let at = log.events;
        if let Some(span) = log
            .spans
            .iter_mut()
            .rev()
            .find(|(g, _, end)| g == gate && end.is_none())
        {
            span.2 = Some(at);
        }
    }

    /// A point in the order of events, for [`GateActivity::ran_between`].
    pub fn mark(&self) -> u64 {
        let mut log = self.log();
        log.events += 1;
        log.events
    }

    /// Every gate other than `except` that was running at some point
    /// between the marks `from` and `to` (running at `from`, or started
    /// before `to`), in start order: the gates that may have done work
    /// between the two marks. A gate started after `to` did none.
    pub fn ran_between(&self, from: u64, to: u64, except: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (gate, start, end) in &self.log().spans {
            if gate != except && *start < to && end.is_none_or(|e| e > from) && !out.contains(gate)
            {
                out.push(gate.clone());
            }
        }
        out
    }
}

/// A change to the run's facts, applied to the [`RunContext`] when the gate
/// that made it ends.
type Update = Box<dyn FnOnce(&mut RunContext) + Send>;

/// The facts a gate hands to the gates after it (the staged tree, the verified
/// SDK, a candidate's records, ...).
///
/// Gates read a [`RunContext`] that does not change while they run (gates run
/// concurrently, each on the facts of the gates finished before it started);
/// what a gate establishes it records here, and the pipeline applies it, in
/// the order recorded, when the gate ends, also when the gate fails or stops
/// with an error.
#[derive(Default)]
pub struct Updates(Vec<Update>);

impl Updates {
    /// Records one change, applied when the gate ends.
    pub fn set(&mut self, change: impl FnOnce(&mut RunContext) + Send + 'static) {
        self.0.push(Box::new(change));
    }

    /// Applies every recorded change to `ctx`, in order.
    pub fn apply(self, ctx: &mut RunContext) {
        for change in self.0 {
            change(ctx);
        }
    }

    /// How many changes are recorded.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no change is recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Updates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Updates({} change(s))", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::GateActivity;

    #[test]
    fn one_job_is_a_serial_run_inside_gates_too() {
        let mut ctx = super::RunContext::for_tests();
        ctx.jobs = 1;
        assert_eq!(ctx.width(), 1);
        ctx.jobs = 0;
        assert_eq!(ctx.width(), 1);
        ctx.jobs = 2;
        assert_eq!(ctx.width(), 4, "bounded, whatever the candidate count");
        ctx.jobs = usize::MAX;
        assert_eq!(ctx.width(), usize::MAX);
    }

    #[test]
    fn ran_between_names_the_gates_running_between_the_two_marks() {
        let a = GateActivity::default();
        a.started("stage");
        a.ended("stage"); // over before the mark: its work is done
        a.started("lbp-build");
        a.started("worker-isolation");
        let mark = a.mark();
        a.started("archive-members");
        a.ended("lbp-build");
        a.ended("archive-members");
        a.started("suites"); // still running now
        let now = a.mark();
        // Started after the second mark: it did no work between the marks.
        a.started("admission");
        assert_eq!(
            a.ran_between(mark, now, "worker-isolation"),
            ["lbp-build", "archive-members", "suites"]
        );
        let later = a.mark();
        assert_eq!(
            a.ran_between(later, a.mark(), "worker-isolation"),
            ["suites", "admission"]
        );
        // Clones share one record.
        let b = a.clone();
        b.ended("suites");
        b.ended("admission");
        let last = a.mark();
        assert!(a.ran_between(last, a.mark(), "worker-isolation").is_empty());
    }
}
