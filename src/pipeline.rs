//! The pipeline: validates the run's inputs, runs the gates as the
//! catalogue's graph, and writes the evidence, also when gates fail or the
//! run is interrupted.
//!
//! A candidate's failure blocks only that candidate's later gates: when a
//! `candidate`-scope gate fails and every failing check names a candidate,
//! the gates that require it still run, for the other candidates only (they
//! see a context without the failed ones, as `--partition` narrows it; the
//! record lists them in `candidates_left_out`). A gate-wide failing check,
//! a blocked or interrupted prerequisite, or no candidate left blocks the
//! gates that require it; a `global` or `whole` gate needs every candidate
//! and is blocked by any candidate's failure. Once every gate ended, each
//! candidate gets its own verdict ([`evidence::verdicts`]); the run's
//! verdict is unchanged: any failure fails the run.

use crate::catalogue;
use crate::context::RunContext;
use crate::evidence::{
    self, CandidateRecord, Check, CheckResult, Evidence, GateRecord, GateResult, ProfileRecord,
    Sdk, Selection, SignOff, Source, Tool, Verdict,
};
use crate::{gates, git, hash, interrupt, process, profile};
use std::path::{Component, Path, PathBuf};
use std::time::{Instant, SystemTime};

mod committed_profile;
pub mod groups;
pub mod sdk_choice;

/// What a run is asked to do (the CLI's arguments, resolved).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Repository (any path inside it).
    pub repo: PathBuf,
    /// Evidence directory.
    pub evidence: PathBuf,
    /// Interpreter, if known.
    pub python: Option<PathBuf>,
    /// `--profile`.
    pub profile: Option<PathBuf>,
    /// `--only`, split on commas.
    pub only: Option<Vec<String>>,
    /// `--sign-off-by`.
    pub sign_off_by: Option<String>,
    /// `--partition K/N`: per-candidate gates check only this share.
    pub partition: Option<profile::Partition>,
    /// `--isolation`: the `worker-isolation` gate's backend.
    pub isolation: crate::isolation::IsolationChoice,
    /// `--release-dir`: historical archives for `historical-admission`.
    pub release_dir: Option<PathBuf>,
    /// `--jobs N`: at most this many gates at once (0 is taken as 1).
    pub jobs: usize,
    /// `--worktree`: certify the working tree as it is, not `HEAD`.
    pub worktree: bool,
    /// `--index-url`: replaces the profile's `[dependencies] index_url`.
    pub index_url: Option<String>,
    /// `--sdk-group PIN` (hidden): this run certifies only the candidates of
    /// that SDK group of the profile, under that pin; set by the run of a
    /// grouped profile for each non-default group (`src/pipeline/groups.rs`).
    pub sdk_group: Option<String>,
}

/// The default of `--jobs`: the cores this process may use (1 when unknown).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// A reason the run could not start (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

/// A finished run.
#[derive(Debug)]
pub struct Outcome {
    /// The evidence as written.
    pub evidence: Evidence,
    /// The evidence directory.
    pub dir: PathBuf,
}

/// Progress events for the terminal; gates never print.
pub trait Progress {
    /// A gate starts (`index` is its 1-based position among the required
    /// gates in catalogue order; `also_running` names the gates still
    /// running beside it, in catalogue order).
    fn gate_started(&mut self, index: usize, total: usize, id: &str, also_running: &[&str]);
    /// A gate ended.
    fn gate_finished(&mut self, record: &GateRecord);
    /// A line about the run's setup (the provisioned interpreter's steps).
    fn note(&mut self, _line: &str) {}
}

/// `gates[].reason` of a gate an `--only` run did not select and no selected
/// gate needs (the terminal summary collapses these into one line).
pub const NOT_SELECTED_REASON: &str =
    "not selected by --only and not a prerequisite of a selected gate";

/// `gates[].reason` of a per-candidate gate in a `--partition` share that
/// holds none of this run's SDK group's candidates (the share's other
/// groups' runs check them).
pub const EMPTY_SHARE_REASON: &str =
    "this share holds no candidate of this run's SDK group: the share's other SDK groups' runs \
     (DIR/groups/) check its candidates";

/// Checks the inputs, runs the gates and writes the evidence, in phases:
/// [`check_inputs`], [`plan_groups`], [`interpreter`], [`required_gates`],
/// [`prepare_evidence_dir`], the other SDK groups' runs, [`run_context`],
/// [`run_gates`], [`settle`], [`assemble`], then [`evidence::finish`].
///
/// # Errors
/// [`SetupError`] when the run cannot start; nothing is written then.
pub fn run(opts: &RunOptions, progress: &mut dyn Progress) -> Result<Outcome, SetupError> {
    let started_at = now_rfc3339();
    let mut inputs = check_inputs(opts)?;
    let plan = plan_groups(opts, &mut inputs.loaded)?;
    let other_groups = if opts.sdk_group.is_none() && plan.grouped {
        groups::provision(
            &groups::in_share(&plan.of_profile, &plan.share),
            &inputs.index_url,
            progress,
        )?
    } else {
        Vec::new()
    };
    let python = interpreter(
        inputs.given_python.take(),
        &inputs.loaded,
        &inputs.index_url,
        progress,
    )?;
    let selected = plan.selected();
    let required = required_gates(opts, &selected)?;
    // Held until the evidence is sealed (the end of this function).
    let _held = prepare_evidence_dir(opts, &inputs.evidence_dir, &inputs.loaded, progress)?;
    let profile_record = profile_record(&inputs.loaded);
    let group_records = run_other_groups(opts, &inputs, &other_groups, progress);
    let evidence_dir = inputs.evidence_dir.clone();
    let ctx = run_context(opts, inputs, &plan, python, selected);
    let (mut records, ctx) = run_gates(
        ctx,
        &Graph {
            catalogue: catalogue::all(),
            implementation: &gates::by_id,
            required: &required,
            only: opts.only.as_deref(),
            partitioned: opts.partition.is_some(),
            jobs: opts.jobs,
            foreground_alone: foreground_alone(&evidence_dir),
            residue: &process::residue::after_gate_of,
        },
        progress,
    );
    let (required, not_applicable) = applicable(required, &records);
    let swept = settle(&evidence_dir, &mut records, &ctx.candidates);
    // The bytecode cache is working state, not evidence: removing its
    // thousands of files takes seconds on a busy disk (a CI cancel's SIGKILL
    // waits for no one), so it leaves DIR at once and goes beside the sealing.
    let pycache_aside = set_aside(&evidence_dir.join("roots").join("pycache"), &evidence_dir)
        .map(|aside| std::thread::spawn(move || std::fs::remove_dir_all(aside)));
    let mut evidence = assemble(
        opts,
        Sealed {
            started_at,
            profile: profile_record,
            required,
            not_applicable,
            records,
            swept,
            group_records,
            grouped: plan.grouped,
        },
        ctx,
    );
    let finished = evidence::finish(&evidence_dir, &mut evidence, opts.sign_off_by.clone());
    // Removed while the evidence was hashed and written (the run ends once
    // it is gone).
    if let Some(removal) = pycache_aside {
        let _ = removal.join();
    }
    finished.map_err(|e| {
        SetupError(format!(
            "evidence dir {}: cannot write evidence: {e}",
            evidence_dir.display()
        ))
    })?;
    Ok(Outcome {
        evidence,
        dir: evidence_dir,
    })
}

/// The other SDK groups' runs, one after the other, each into its own
/// evidence under DIR/groups/ (an interrupted run starts no further one).
fn run_other_groups(
    opts: &RunOptions,
    inputs: &Inputs,
    other_groups: &[(profile::groups::SdkGroup, PathBuf)],
    progress: &mut dyn Progress,
) -> Vec<evidence::SdkGroupRecord> {
    let mut group_records = Vec::new();
    for (group, group_python) in other_groups {
        // An interrupted run starts no further group run.
        if interrupt::requested() {
            group_records.push(groups::not_run(group, group_python));
            continue;
        }
        group_records.push(groups::run_group(
            opts,
            &inputs.evidence_dir,
            group,
            group_python,
            &inputs.index_url,
            progress,
        ));
    }
    group_records
}

/// The run's inputs as checked, before anything is written.
struct Inputs {
    repo: PathBuf,
    commit: String,
    tree: String,
    evidence_dir: PathBuf,
    /// `None`: provisioned once the profile names the SDK pin.
    given_python: Option<PathBuf>,
    release_dir: Option<PathBuf>,
    loaded: profile::LoadedProfile,
    index_url: String,
}

/// Checks the repository, the evidence directory, the interpreter and
/// release directory given, the profile (the committed file, unless
/// `--worktree`) and the package index.
fn check_inputs(opts: &RunOptions) -> Result<Inputs, SetupError> {
    let repo = git::toplevel(&opts.repo).map_err(SetupError)?;
    let (commit, tree) = git::head(&repo).map_err(SetupError)?;
    let evidence_dir = check_evidence_dir(&opts.evidence, &repo)?;
    // `None`: provisioned below, once the profile names the SDK pin.
    let given_python = opts
        .python
        .as_deref()
        .map(|p| check_python(Some(p)))
        .transpose()?;
    let release_dir = opts
        .release_dir
        .as_deref()
        .map(check_release_dir)
        .transpose()?;
    let loaded =
        profile::load(opts.profile.as_deref(), &repo).map_err(|e| SetupError(e.to_string()))?;
    // A profile inside the repository is part of what is certified: it must
    // be the committed file (a --worktree run certifies the tree as it is).
    if !opts.worktree {
        committed_profile::check(&loaded, &repo, &commit).map_err(SetupError)?;
    }
    let index_url = match &opts.index_url {
        Some(url) => {
            crate::profile::check_index_url(url)
                .map_err(|e| SetupError(format!("--index-url: {e}")))?;
            url.clone()
        }
        None => loaded.profile.dependencies.index_url.clone(),
    };
    Ok(Inputs {
        repo,
        commit,
        tree,
        evidence_dir,
        given_python,
        release_dir,
        loaded,
        index_url,
    })
}

/// The profile's SDK groups, the one this run certifies, and the share of
/// `--partition`.
struct GroupPlan {
    of_profile: Vec<profile::groups::SdkGroup>,
    grouped: bool,
    this_group: Option<profile::groups::SdkGroup>,
    share: Vec<profile::CandidateSpec>,
}

impl GroupPlan {
    /// This run's candidates: the share's, narrowed to this run's SDK group.
    fn selected(&self) -> Vec<profile::CandidateSpec> {
        let mut selected = self.share.clone();
        if let Some(g) = &self.this_group {
            selected.retain(|c| g.candidates.iter().any(|m| m.path == c.path));
        }
        selected
    }
}

/// SDK groups (`[[candidate]] sdk`): this run certifies one group, the
/// default unless `--sdk-group` names another; the others are provisioned
/// and certified by runs of their own before this one's gates. The share is
/// dealt from the whole profile, then `loaded` is narrowed to the group.
fn plan_groups(
    opts: &RunOptions,
    loaded: &mut profile::LoadedProfile,
) -> Result<GroupPlan, SetupError> {
    let sdk_groups_of_profile = loaded.profile.sdk_groups();
    let grouped = sdk_groups_of_profile.len() > 1;
    let this_group = match &opts.sdk_group {
        Some(req) => Some(
            sdk_groups_of_profile
                .iter()
                .find(|g| {
                    profile::groups::squeeze(&g.pin.requirement) == profile::groups::squeeze(req)
                })
                .cloned()
                .ok_or_else(|| {
                    SetupError(format!(
                        "--sdk-group {req}: expected the pin of one of the profile's SDK groups ({}), found none",
                        sdk_groups_of_profile
                            .iter()
                            .map(|g| g.pin.requirement.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?,
        ),
        None if grouped => Some(sdk_groups_of_profile[0].clone()),
        None => None,
    };
    // The share is dealt from the whole profile, before it is narrowed to
    // one group: every run of a share, its group runs' included, deals alike.
    let share = profile::partition_share(&loaded.profile, opts.partition);
    if let (Some(p), true) = (opts.partition, share.is_empty()) {
        let n = loaded.profile.candidates.len();
        return Err(SetupError(format!(
            "--partition {}/{}: expected a share holding at least one candidate, found none (the profile \
             has {n} candidate(s), cut into {} shares); use at most {n} shares",
            p.index, p.count, p.count
        )));
    }
    if let Some(g) = &this_group {
        if let Some(narrowed) = loaded.profile.for_group(&g.pin.requirement) {
            loaded.profile = narrowed;
        }
    }
    Ok(GroupPlan {
        of_profile: sdk_groups_of_profile,
        grouped,
        this_group,
        share,
    })
}

/// The interpreter: the one given (an uncarried pin's lock made with it if
/// missing), else the profile's pin, provisioned.
fn interpreter(
    given: Option<PathBuf>,
    loaded: &profile::LoadedProfile,
    index_url: &str,
    progress: &mut dyn Progress,
) -> Result<PathBuf, SetupError> {
    Ok(match given {
        Some(p) => {
            // An uncarried pin with --python: its lock is still the anchor of
            // `sdk-record`'s environment-locked; made with that pip if missing.
            let req = &loaded.profile.sdk.requirement;
            if crate::provision::on_demand::files_for(req).is_none() {
                let mut say = |line: &str| progress.note(&format!("sdk: {line}"));
                if let Err(e) = crate::provision::on_demand::lock(
                    loaded.profile.sdk.version(),
                    &p,
                    index_url,
                    &mut say,
                ) {
                    say(&format!(
                        "{req}: not locked ({e}); environment-locked will say so"
                    ));
                }
            }
            p
        }
        None => {
            let mut say = |line: &str| progress.note(&format!("sdk: {line}"));
            crate::provision::provision_sdk(&loaded.profile.sdk, index_url, &mut say)
                .map_err(|e| {
                    SetupError(format!("no interpreter given (--python, PYTHON), and {e}"))
                })?
                .python
        }
    })
}

/// The gates this run requires: `--only`'s with their prerequisites, else
/// all; a share's run leaves out whole-repository gates (a group's run keeps
/// a whole gate's per-candidate part), and a share without candidates here
/// the per-candidate gates.
fn required_gates(
    opts: &RunOptions,
    selected: &[profile::CandidateSpec],
) -> Result<Vec<String>, SetupError> {
    let required = match &opts.only {
        Some(ids) => {
            catalogue::check_ids(ids).map_err(SetupError)?;
            catalogue::with_prerequisites(ids)
        }
        None => catalogue::all().iter().map(|g| g.id.clone()).collect(),
    };
    let mut required = required;
    if opts.partition.is_some() {
        required.retain(|id| catalogue::get(id).map(|g| g.scope) != Some(catalogue::Scope::Whole));
    }
    // A group's run keeps a whole gate's per-candidate part (`suites`: its
    // candidates' own tests, run by no other run); the default group's run
    // makes the repository-level part.
    if opts.sdk_group.is_some() {
        required.retain(|id| {
            catalogue::get(id)
                .is_none_or(|g| g.scope != catalogue::Scope::Whole || g.per_candidate_part)
        });
    }
    // A share that holds none of the default group's candidates (its group
    // runs hold them all): nothing for the per-candidate gates to check here.
    if opts.partition.is_some() && selected.is_empty() {
        required
            .retain(|id| catalogue::get(id).map(|g| g.scope) != Some(catalogue::Scope::Candidate));
    }
    Ok(required)
}

/// What [`prepare_evidence_dir`] holds until the evidence is sealed: the
/// signal watch (dropped first) and the directory's lock.
struct Held {
    _watch: interrupt::Watch,
    _lock: evidence::lock::DirLock,
}

/// Creates and locks the evidence directory (judged fresh again under the
/// lock), starts the signal journal and watch, the bytecode cache and the
/// sandbox preflight, installs the signal handlers, becomes the child
/// subreaper, and keeps the profile's text and an on-demand lock.
fn prepare_evidence_dir(
    opts: &RunOptions,
    evidence_dir: &Path,
    loaded: &profile::LoadedProfile,
    progress: &mut dyn Progress,
) -> Result<Held, SetupError> {
    std::fs::create_dir_all(evidence_dir).map_err(|e| {
        SetupError(format!(
            "evidence dir {}: cannot create: {e}",
            evidence_dir.display()
        ))
    })?;
    // Held until the evidence is sealed (the end of `run`). Taken before
    // anything is written, then the directory is judged fresh again under
    // it: two runs that both found it fresh cannot both get here.
    let lock = evidence::lock::acquire(evidence_dir).map_err(|e| SetupError(e.to_string()))?;
    if !dir_is_empty(evidence_dir) {
        return Err(SetupError(format!(
            "--evidence {}: expected a missing or empty directory, found existing content written              since the run started (another run wrote into it and ended); evidence is never mixed              with an earlier run: choose a fresh directory",
            opts.evidence.display()
        )));
    }
    process::journal::begin();
    // A CI cancel sends SIGKILL seconds after SIGTERM: every running step's
    // group gets SIGTERM the moment it is noticed, not one stop at a time.
    let watch = interrupt::Watch::start(|| {
        process::residue::term_all();
    });
    let held = Held {
        _watch: watch,
        _lock: lock,
    };
    crate::python::use_pycache_prefix(&evidence_dir.join("roots").join("pycache"));
    // Tried once, before any gate runs: gates that watch DIR for writes
    // outside their own folders (worker-isolation's private roots) never see
    // the preflight's logs appear beside them.
    crate::isolation::sandbox::availability(&evidence_dir.join("logs").join("sandbox"));
    interrupt::install().map_err(|e| SetupError(format!("cannot install signal handlers: {e}")))?;
    process::residue::become_subreaper().map_err(|e| {
        SetupError(format!(
            "cannot become the child subreaper (prctl PR_SET_CHILD_SUBREAPER): {e}; processes that \
             leave their group could not be found and stopped"
        ))
    })?;

    // The profile's text, kept so `replay` can re-decide gates from the
    // raw observations the directory keeps.
    crate::evidence::kept_profile::keep(evidence_dir, &loaded.text).map_err(|e| {
        SetupError(format!(
            "cannot write {}: {e}",
            crate::evidence::kept_profile::path(evidence_dir).display()
        ))
    })?;
    // A pin locked on demand: its lock list and pip's report, kept with the
    // evidence (DIR/sdk/<version>/), so a reader sees what the index said.
    if let Some(kept) =
        sdk_choice::keep_on_demand_lock(evidence_dir, &loaded.profile.sdk.requirement)
            .map_err(SetupError)?
    {
        progress.note(&format!(
            "sdk: the on-demand lock and pip's report kept in {kept}"
        ));
    }
    Ok(held)
}

/// The profile as the evidence records it.
fn profile_record(loaded: &profile::LoadedProfile) -> ProfileRecord {
    ProfileRecord {
        name: loaded.profile.name.clone(),
        origin: match &loaded.source {
            profile::ProfileSource::Builtin => "built-in".into(),
            // Absolute, so the statement can name it repository-relative
            // (`statement::profile_origin`) even when --profile was relative.
            profile::ProfileSource::File(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
        },
        sha256: hash::sha256_bytes(loaded.text.as_bytes()),
    }
}

/// The gates' context: each selected candidate's record (with the SDK the
/// installer would choose for it, observed now), the source and the SDK.
fn run_context(
    opts: &RunOptions,
    inputs: Inputs,
    plan: &GroupPlan,
    python: PathBuf,
    selected: Vec<profile::CandidateSpec>,
) -> RunContext {
    let Inputs {
        repo,
        commit,
        tree,
        evidence_dir,
        release_dir,
        loaded,
        index_url,
        ..
    } = inputs;
    let candidates = candidate_records(
        &repo,
        &selected,
        &loaded,
        &python,
        &index_url,
        plan.this_group.as_ref(),
    );
    let sdk = Sdk {
        requirement: loaded.profile.sdk.requirement.clone(),
        python: python.display().to_string(),
        ..Sdk::default()
    };
    RunContext {
        repo: repo.clone(),
        evidence_dir,
        profile: loaded,
        python,
        source: Source {
            repo: repo.display().to_string(),
            commit,
            tree,
            archive_sha256: None,
            ignored_files: Vec::new(),
            export_attributes: Vec::new(),
            origin: crate::origin::read(&repo),
            worktree: opts.worktree.then(|| crate::evidence::WorktreeSource {
                label: crate::worktree::LABEL.into(),
                digest: None,
                files: None,
                uncommitted: Vec::new(),
            }),
        },
        sdk,
        candidates,
        staged_root: None,
        committed_root: None,
        verified_sdk: None,
        selected,
        isolation: opts.isolation,
        suites: None,
        wheelhouse: None,
        build_pages: std::collections::BTreeMap::new(),
        admitted_requirements: std::collections::BTreeMap::new(),
        release_dir,
        activity: crate::context::GateActivity::default(),
        jobs: opts.jobs.max(1),
        index_url,
        group_run: opts.sdk_group.is_some(),
        ended: Vec::new(),
    }
}

/// Each selected candidate's record before the gates, with the SDK the
/// installer would choose for it (observed now) and its SDK group.
fn candidate_records(
    repo: &Path,
    selected: &[profile::CandidateSpec],
    loaded: &profile::LoadedProfile,
    python: &Path,
    index_url: &str,
    this_group: Option<&profile::groups::SdkGroup>,
) -> Vec<CandidateRecord> {
    let mut choices = sdk_choice::observe(
        repo,
        &selected
            .iter()
            .map(|c| (c.folder().to_string(), c.path.clone()))
            .collect::<Vec<_>>(),
        loaded.profile.sdk.version(),
        python,
        index_url,
    );
    selected
        .iter()
        .map(|c| CandidateRecord {
            folder: c.folder().into(),
            path: c.path.clone(),
            manifest: None,
            archive: None,
            admission: None,
            dependencies: None,
            discovery: None,
            verdict: None,
            sdk_group: this_group.map(|g| g.pin.requirement.clone()),
            sdk_choice: choices
                .iter()
                .position(|(f, _)| f == c.folder())
                .map(|at| choices.remove(at).1),
            placement: None,
        })
        .collect()
}

/// Gates this run gave nothing to observe (an input not supplied, a
/// profile section absent) are recorded skipped with the reason and are
/// not required: they neither fail a certification nor read as a pass.
/// Returns the required gates without them, and them.
fn applicable(required: Vec<String>, records: &[GateRecord]) -> (Vec<String>, Vec<String>) {
    let not_applicable: Vec<String> = records
        .iter()
        .filter(|g| !g.required && required.contains(&g.id))
        .map(|g| g.id.clone())
        .collect();
    let required: Vec<String> = required
        .into_iter()
        .filter(|id| !not_applicable.contains(id))
        .collect();
    (required, not_applicable)
}

/// What the gates leave behind, settled before sealing: processes of the run
/// that outlived them (added to the last required gate), DIR swept (the
/// entries returned for `swept`), and details naming DIR's files as
/// `DIR/...`.
fn settle(
    evidence_dir: &Path,
    records: &mut [GateRecord],
    candidates: &[CandidateRecord],
) -> Vec<evidence::SweptEntry> {
    // Sealed only when nothing of the run is alive: each gate swept its own
    // residue; this catches what an interrupted or skipped step left.
    let late = process::residue::after_gate();
    if let Some(last) = records
        .iter_mut()
        .rev()
        .find(|g| g.required && !late.is_empty())
    {
        if last.result == GateResult::Pass {
            last.result = GateResult::Fail;
            last.reason = Some(format!(
                "{} process(es) of the run outlived the gates",
                late.len()
            ));
        }
        last.checks.extend(late);
    }
    // Nothing of the run is alive: what it left in DIR that is not a
    // regular file or folder is removed, and judged, before sealing.
    let swept = sweep_dir(evidence_dir, records, candidates);
    // Details name files under the evidence directory as DIR/..., so they
    // stay true when the directory is moved (a CI artifact, a reviewer's copy).
    let mut prefixes = vec![evidence_dir.display().to_string()];
    if let Ok(real) = evidence_dir.canonicalize() {
        prefixes.push(real.display().to_string());
    }
    for record in records.iter_mut() {
        for text in record
            .reason
            .iter_mut()
            .chain(record.note.iter_mut())
            .chain(record.checks.iter_mut().map(|c| &mut c.detail))
        {
            *text = relative_to_dir(text, &prefixes);
        }
    }
    swept
}

/// The run's own verdict: incomplete when interrupted, pass when every
/// required gate passed, else fail.
fn verdict_of(records: &[GateRecord]) -> Verdict {
    let interrupted = interrupt::requested();
    if interrupted {
        Verdict::Incomplete
    } else if records
        .iter()
        .filter(|g| g.required)
        .all(|g| g.result == GateResult::Pass)
    {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// What [`assemble`] seals besides the gates' context.
struct Sealed {
    started_at: String,
    profile: ProfileRecord,
    required: Vec<String>,
    not_applicable: Vec<String>,
    records: Vec<GateRecord>,
    swept: Vec<evidence::SweptEntry>,
    group_records: Vec<evidence::SdkGroupRecord>,
    grouped: bool,
}

/// The evidence document: the verdict (incomplete when interrupted, pass
/// when every required gate passed, with the other SDK groups' verdicts),
/// every candidate's own verdict, and everything the run recorded.
fn assemble(opts: &RunOptions, sealed: Sealed, ctx: RunContext) -> Evidence {
    let Sealed {
        started_at,
        profile,
        required,
        not_applicable,
        records,
        swept,
        group_records,
        grouped,
    } = sealed;
    let verdict = verdict_of(&records);
    // Every candidate's own verdict, over the gates as sealed (residue included).
    let mut candidates = ctx.candidates;
    evidence::verdicts::assign(&records, &mut candidates);
    // The default group's record is this run's; the others' were read back
    // from their sealed evidence.
    let sdk_groups = (opts.sdk_group.is_none() && grouped).then(|| {
        let mut all = vec![evidence::SdkGroupRecord {
            requirement: ctx.sdk.requirement.clone(),
            default: true,
            evidence: None,
            evidence_sha256: None,
            verdict,
            warnings: 0,
            python: ctx.sdk.python.clone(),
            version: ctx.sdk.version.clone(),
            record_sha256: ctx.sdk.record_sha256.clone(),
            error: None,
            candidates: groups::candidates_of(&candidates),
        }];
        all.extend(group_records);
        all
    });
    let verdict = match &sdk_groups {
        Some(all) => groups::overall(verdict, &all[1..]),
        None => verdict,
    };
    Evidence {
        schema_version: "1".into(),
        tool: Tool {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        verdict,
        started_at,
        finished_at: now_rfc3339(),
        profile,
        selection: Selection::new(opts.only.clone(), required, opts.partition)
            .with_not_applicable(not_applicable),
        source: ctx.source,
        sdk: ctx.sdk,
        gates: records,
        candidates,
        merged_from: None,
        files: None,
        suites: ctx.suites,
        wheelhouse: ctx.wheelhouse,
        signals: process::journal::take(),
        swept,
        sdk_groups,
        attestation: evidence::Attestation {
            statement: evidence::statement::STATEMENT_JSON.into(),
            statement_type: evidence::statement::STATEMENT_TYPE.into(),
            predicate_type: evidence::statement::PREDICATE_TYPE.into(),
            signed: false,
        },
        sign_off: SignOff {
            verdict,
            evidence_sha256: String::new(),
            signed_off_by: None,
            archives_signed: false,
        },
    }
}

/// The sweep before sealing ([`crate::sweep`]): walks `dir`, removes every
/// link and special file (cuts oversized files of the private roots), and
/// adds the checks it decides to the gate whose folder held each entry (the
/// last required gate for any other place); a failing check fails a
/// passing gate. Returns the entries for `evidence.json` `swept`.
fn sweep_dir(
    dir: &Path,
    records: &mut [GateRecord],
    candidates: &[CandidateRecord],
) -> Vec<evidence::SweptEntry> {
    use crate::sweep;
    let mut names = vec![dir.to_path_buf()];
    if let Ok(real) = dir.canonicalize() {
        names.push(real);
    }
    let gates: Vec<String> = records.iter().map(|g| g.id.clone()).collect();
    let folders: Vec<String> = candidates.iter().map(|c| c.folder.clone()).collect();
    let (found, errors) = sweep::walk(dir, sweep::SIZE_CAP);
    let mut entries = sweep::observe(found, &names, &gates, &folders);
    sweep::act(dir, &mut entries, sweep::SIZE_CAP);
    for (gate, check) in sweep::decide(&entries, &errors) {
        let at = gate
            .and_then(|g| records.iter().position(|r| r.id == g))
            .or_else(|| records.iter().rposition(|r| r.required))
            .or_else(|| records.len().checked_sub(1));
        let Some(record) = at.map(|i| &mut records[i]) else {
            continue;
        };
        if check.result == CheckResult::Fail && record.result == GateResult::Pass {
            record.result = GateResult::Fail;
            record.reason = Some(format!(
                "{}: the sweep before sealing found a link out of the evidence directory, or an \
                 entry it could not remove",
                check.name
            ));
        }
        record.checks.push(check);
    }
    entries
}

/// Where a gate stands in [`run_gates`].
enum Slot {
    /// Not started; waits for its prerequisites (or a free job).
    Waiting,
    /// Running since `started` (`span` indexes the residue spans), for
    /// every candidate of the run but `left_out`.
    Running {
        started: Instant,
        span: usize,
        left_out: Vec<String>,
        /// A gate started early ([`catalogue::GateInfo::early_requires`])
        /// and still waiting for the rest of its prerequisites: where its
        /// context goes once they ended.
        rest: Option<std::sync::mpsc::Sender<Option<std::sync::Arc<RunContext>>>>,
        /// Why a gate started early was blocked after all (it returns at
        /// once; its record says this, and nothing it observed).
        blocked: Option<String>,
    },
    /// Ended: its record is final.
    Done(Box<GateRecord>),
}

/// What a gate's thread hands back when the gate ends.
struct Finished {
    /// Catalogue index of the gate.
    index: usize,
    /// The gate's checks, or the error or panic that stopped it.
    outcome: std::thread::Result<Result<Vec<Check>, String>>,
    /// The facts it recorded for later gates.
    updates: crate::context::Updates,
}

/// The gates of a run and how to run them.
#[derive(Clone, Copy)]
struct Graph<'a> {
    /// Gates in catalogue order (each `requires` names earlier gates).
    catalogue: &'a [catalogue::GateInfo],
    /// The implementation of gate `id`.
    implementation: &'a dyn Fn(&str) -> Option<Box<dyn gates::Gate>>,
    /// Ids of the gates the run needs.
    required: &'a [String],
    /// `--only`, when given.
    only: Option<&'a [String]>,
    /// Whether this is a `--partition K/N` run.
    partitioned: bool,
    /// At most this many gates at once.
    jobs: usize,
    /// Whether a foreground gate (`suites`) runs alone, as `exclusive =
    /// ["machine"]` would make it: when the kernel would not restore the
    /// steps it demotes to `SCHED_IDLE` (no `CAP_SYS_NICE`), or without
    /// bubblewrap (an unconfined suites run must not run beside gates whose
    /// inputs it could write). Else it starts early, takes no job, and the
    /// other gates fill the cores it leaves idle.
    foreground_alone: bool,
    /// The residue check after a gate ended, given every gate's span
    /// ([`process::residue::after_gate_of`]).
    residue: &'a dyn Fn(&[process::residue::Span]) -> Vec<Check>,
}

/// [`Graph::foreground_alone`] for a run into `evidence_dir`: the kernel
/// would not restore a step demoted to `SCHED_IDLE`, or bubblewrap cannot be
/// used (its preflight's logs go to `DIR/logs/sandbox`).
fn foreground_alone(evidence_dir: &Path) -> bool {
    !process::priority::can_restore()
        || matches!(
            crate::isolation::sandbox::availability(&evidence_dir.join("logs").join("sandbox")),
            crate::isolation::sandbox::Availability::Unavailable(_)
        )
}

/// The order in which ready gates are considered: the longest remaining
/// path first, that is a gate's `cost` plus the costliest chain of required
/// gates that require it, directly or not (the critical path, by the
/// catalogue's typical costs); catalogue order among equals. Only which
/// ready gate takes a free `--jobs` slot depends on it.
fn start_order(catalogue: &[catalogue::GateInfo], required: &[String]) -> Vec<usize> {
    fn remaining(
        i: usize,
        catalogue: &[catalogue::GateInfo],
        required: &[String],
        memo: &mut Vec<Option<f64>>,
    ) -> f64 {
        if let Some(v) = memo[i] {
            return v;
        }
        memo[i] = Some(0.0); // a cycle (the catalogue has none) ends here
        let id = &catalogue[i].id;
        let mut after = 0.0_f64;
        for (j, g) in catalogue.iter().enumerate() {
            if g.requires.contains(id) && required.contains(&g.id) {
                after = after.max(remaining(j, catalogue, required, memo));
            }
        }
        let v = catalogue[i].cost.max(0.0) + after;
        memo[i] = Some(v);
        v
    }
    let mut memo = vec![None; catalogue.len()];
    let paths: Vec<f64> = (0..catalogue.len())
        .map(|i| remaining(i, catalogue, required, &mut memo))
        .collect();
    let mut order: Vec<usize> = (0..catalogue.len()).collect();
    order.sort_by(|a, b| paths[*b].total_cmp(&paths[*a]).then(a.cmp(b)));
    order
}

/// Runs the required gates as the catalogue's graph: a gate starts as soon as
/// every gate it requires has passed (or, with `early_requires`, once those
/// passed: [`Schedule::hand_over`]), at most `jobs` at a time (a foreground
/// gate takes no job unless it runs alone: [`Graph::foreground_alone`]),
/// never beside a running gate that declares one of its exclusive resources;
/// a gate whose prerequisite ended without passing is `blocked`. Each gate reads the
/// context as the gates ended before it started left it. Records come back in
/// catalogue order whatever the finishing order.
fn run_gates(
    ctx: RunContext,
    graph: &Graph<'_>,
    progress: &mut dyn Progress,
) -> (Vec<GateRecord>, RunContext) {
    let (tx, rx) = std::sync::mpsc::channel::<Finished>();
    let mut schedule = Schedule::new(ctx, graph, tx);
    let order = start_order(graph.catalogue, graph.required);
    loop {
        // Start, block or skip every waiting gate whose turn has come, the
        // longest remaining path first (catalogue order among equals).
        for &i in &order {
            schedule.consider(i, progress);
        }
        if !schedule.any_running() {
            break;
        }
        let Ok(finished) = rx.recv() else { break };
        schedule.finish(finished, progress);
    }
    schedule.into_records()
}

/// The state of [`run_gates`]: the shared context as the ended gates left
/// it, each gate's slot, the residue spans, and where gate threads report.
struct Schedule<'r, 'a> {
    graph: &'r Graph<'a>,
    ctx: std::sync::Arc<RunContext>,
    slots: Vec<Slot>,
    spans: Vec<process::residue::Span>,
    tx: std::sync::mpsc::Sender<Finished>,
    /// One time origin for the gate spans and the signal journal
    /// (`signals[].at_ms`), so a reader can place every signal and reap
    /// within the gates that ran at that moment.
    run_started: Instant,
    /// The run's candidates (folder names): all of the profile's, or this
    /// partition's share.
    run_candidates: Vec<String>,
}

impl<'r, 'a> Schedule<'r, 'a> {
    fn new(ctx: RunContext, graph: &'r Graph<'a>, tx: std::sync::mpsc::Sender<Finished>) -> Self {
        let run_candidates: Vec<String> = ctx
            .selected
            .iter()
            .map(|c| c.folder().to_string())
            .collect();
        Schedule {
            graph,
            ctx: std::sync::Arc::new(ctx),
            slots: graph.catalogue.iter().map(|_| Slot::Waiting).collect(),
            spans: Vec::new(),
            tx,
            run_started: process::journal::started(),
            run_candidates,
        }
    }

    fn any_running(&self) -> bool {
        self.slots.iter().any(|s| matches!(s, Slot::Running { .. }))
    }

    /// Gate `i`, if still waiting: decided (not required, interrupted, not
    /// applicable, blocked) or started, when its prerequisites and the
    /// gates it runs after have ended and a job is free; else left waiting.
    fn consider(&mut self, i: usize, progress: &mut dyn Progress) {
        let catalogue = self.graph.catalogue;
        let info = &catalogue[i];
        if matches!(self.slots[i], Slot::Running { rest: Some(_), .. }) {
            self.hand_over(i);
            return;
        }
        if !matches!(self.slots[i], Slot::Waiting) {
            return;
        }
        let mut record = new_record(info, self.graph.required.contains(&info.id));
        if !record.required {
            record.reason = Some(self.not_required_reason(info));
            self.slots[i] = Slot::Done(Box::new(record));
            return;
        }
        let (next, ended, early) = match self.ready(info) {
            Some((next, ended)) => (next, ended, false),
            None => match self.early_ready(info) {
                Some(next) => (next, Vec::new(), true),
                // A prerequisite, or a gate it runs after, has not ended yet.
                None => return,
            },
        };
        if interrupt::requested() {
            record.reason = Some("the run was interrupted before this gate started".into());
            self.slots[i] = Slot::Done(Box::new(record));
            return;
        }
        let view = self.view(&next, ended);
        let gate = (self.graph.implementation)(&info.id)
            .expect("every catalogue gate is implemented (unit-tested)");
        if let Some(reason) = gate.not_applicable(&view) {
            // Skipped, never passed. Named by `--only`, it stays required, so
            // the run cannot exit 0 on it.
            record.required = self.graph.only.is_some_and(|ids| ids.contains(&info.id));
            record.reason = Some(reason);
            progress.gate_finished(&record);
            self.slots[i] = Slot::Done(Box::new(record));
            return;
        }
        let left_out = match next {
            Next::Run { left_out } => left_out,
            Next::Blocked(reason) => {
                record.result = GateResult::Blocked;
                record.reason = Some(reason);
                progress.gate_finished(&record);
                self.slots[i] = Slot::Done(Box::new(record));
                return;
            }
        };
        if !self.job_free(info) {
            return;
        }
        self.start(i, gate, view, left_out, early, progress);
    }

    /// Whether gate `info` may start beside the running gates: no running
    /// gate conflicts with it, and a job is free. With `--jobs` above 1 a
    /// foreground gate (the suites, whose steps take the CPU first while
    /// every other step idles: `process::priority`) takes no job and needs
    /// none: the other gates fill the cores it leaves idle.
    fn job_free(&self, info: &catalogue::GateInfo) -> bool {
        let catalogue = self.graph.catalogue;
        let jobs = self.graph.jobs.max(1);
        let alone = jobs == 1 || self.graph.foreground_alone;
        let takes_a_job = |g: &catalogue::GateInfo| alone || !g.foreground;
        let running: Vec<usize> = (0..self.slots.len())
            .filter(|k| matches!(self.slots[*k], Slot::Running { .. }))
            .collect();
        if running.iter().any(|k| catalogue[*k].conflicts_with(info)) {
            return false;
        }
        // Run alone, a foreground gate starts once nothing runs, and nothing
        // starts beside it.
        if self.graph.foreground_alone
            && ((info.foreground && !running.is_empty())
                || running.iter().any(|k| catalogue[*k].foreground))
        {
            return false;
        }
        let taken = running
            .iter()
            .filter(|k| takes_a_job(&catalogue[**k]))
            .count();
        !takes_a_job(info) || taken < jobs
    }

    /// What gate `info` does when it may start early: its
    /// `early_requires` have all ended (the rest of `requires` have not)
    /// and the run has more than one job. `None` otherwise.
    fn early_ready(&self, info: &catalogue::GateInfo) -> Option<Next> {
        if info.early_requires.is_empty() || self.graph.jobs <= 1 || self.graph.foreground_alone {
            return None;
        }
        let prerequisites = self.ended(&info.early_requires)?;
        Some(next_step(info, &prerequisites, &self.run_candidates))
    }

    /// Gate `i`, started early: once the rest of its prerequisites ended,
    /// its context is handed over (without the candidates it runs
    /// without), or `None` when it is blocked (the reason kept for its
    /// record) or the run was interrupted.
    fn hand_over(&mut self, i: usize) {
        let info = &self.graph.catalogue[i];
        // Interrupted: the gate ends at once and is judged as any gate the
        // interrupt stopped while it ran (skipped, nothing judged).
        let (context, why) = if interrupt::requested() {
            (None, None)
        } else {
            match self.ready(info) {
                None => return,
                Some((Next::Blocked(reason), _)) => (None, Some(reason)),
                Some((next, ended)) => {
                    if let (Next::Run { left_out: l }, Slot::Running { left_out, .. }) =
                        (&next, &mut self.slots[i])
                    {
                        left_out.clone_from(l);
                    }
                    (Some(self.view(&next, ended)), None)
                }
            }
        };
        if let Slot::Running { rest, blocked, .. } = &mut self.slots[i] {
            if let Some(tx) = rest.take() {
                let _ = tx.send(context);
            }
            *blocked = why;
        }
    }

    /// Why a gate the run does not require is skipped.
    fn not_required_reason(&self, info: &catalogue::GateInfo) -> String {
        if self.graph.partitioned && info.scope == catalogue::Scope::Whole {
            "needs every candidate at once: it runs in an unpartitioned run, not in --partition K/N"
                .into()
        } else if self.graph.partitioned
            && info.scope == catalogue::Scope::Candidate
            && self.run_candidates.is_empty()
        {
            EMPTY_SHARE_REASON.into()
        } else {
            NOT_SELECTED_REASON.into()
        }
    }

    /// What gate `info` does next, and the records of the gates it runs
    /// after, once all of those and its prerequisites have ended.
    fn ready(&self, info: &catalogue::GateInfo) -> Option<(Next, Vec<GateRecord>)> {
        let prerequisites = self.ended(&info.requires)?;
        let ended = ended_after(info, self.graph.catalogue, &self.slots)?;
        Some((next_step(info, &prerequisites, &self.run_candidates), ended))
    }

    /// The gates `ids` with their records, once every one has ended; `None`
    /// while any is waiting or running (or not in the catalogue).
    fn ended(&self, ids: &[String]) -> Option<Vec<(&catalogue::GateInfo, &GateRecord)>> {
        let catalogue = self.graph.catalogue;
        ids.iter()
            .map(|r| {
                let k = catalogue.iter().position(|g| &g.id == r)?;
                match &self.slots[k] {
                    Slot::Done(g) => Some((&catalogue[k], g.as_ref())),
                    _ => None,
                }
            })
            .collect()
    }

    /// The context a starting gate sees: without the candidates it runs
    /// without (it is asked whether it applies to those it has), and with
    /// the records of the gates it runs after.
    fn view(&self, next: &Next, ended: Vec<GateRecord>) -> std::sync::Arc<RunContext> {
        let view = match next {
            Next::Run { left_out } if !left_out.is_empty() => {
                std::sync::Arc::new(self.ctx.without_candidates(left_out))
            }
            _ => std::sync::Arc::clone(&self.ctx),
        };
        if ended.is_empty() {
            view
        } else {
            let mut with = (*view).clone();
            with.ended = ended;
            std::sync::Arc::new(with)
        }
    }

    /// Starts gate `i` on a thread of its own (in the background unless the
    /// catalogue says foreground), its span and activity recorded.
    fn start(
        &mut self,
        i: usize,
        gate: Box<dyn gates::Gate>,
        view: std::sync::Arc<RunContext>,
        left_out: Vec<String>,
        early: bool,
        progress: &mut dyn Progress,
    ) {
        let catalogue = self.graph.catalogue;
        let info = &catalogue[i];
        self.spans.push(process::residue::Span::start(&info.id));
        self.ctx.activity.started(&info.id);
        let (rest_tx, rest) = if early {
            let (tx, rx) = std::sync::mpsc::channel();
            (Some(tx), Some(gates::Rest::new(rx)))
        } else {
            (None, None)
        };
        self.slots[i] = Slot::Running {
            started: Instant::now(),
            span: self.spans.len() - 1,
            left_out,
            rest: rest_tx,
            blocked: None,
        };
        let mut names: Vec<&str> = (0..self.slots.len())
            .filter(|k| matches!(self.slots[*k], Slot::Running { .. }))
            .map(|k| catalogue[k].id.as_str())
            .collect();
        names.retain(|n| *n != info.id);
        let required = self.graph.required;
        let position = required
            .iter()
            .position(|id| id == &info.id)
            .map_or(0, |p| p + 1);
        progress.gate_started(position, required.len(), &info.id, &names);
        let snapshot = view;
        let thread_tx = self.tx.clone();
        let foreground = info.foreground;
        let gate_id = info.id.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("gate {}", info.id))
            .spawn(move || {
                if foreground {
                    process::priority::mark_foreground_thread();
                } else {
                    process::run_in_background();
                }
                let mut updates = crate::context::Updates::default();
                // A panicking gate is a harness defect; it must still leave
                // evidence behind (verdict `fail`), never abort the run.
                // Every signal this thread sends is journalled as this gate's.
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    process::journal::in_gate(Some(&gate_id), || match &rest {
                        Some(rest) => gate.run_early(&snapshot, rest, &mut updates),
                        None => gate.run(&snapshot, &mut updates),
                    })
                }));
                let _ = thread_tx.send(Finished {
                    index: i,
                    outcome,
                    updates,
                });
            });
        if let Err(e) = spawned {
            let _ = self.tx.send(Finished {
                index: i,
                outcome: Ok(Err(format!("cannot start a thread for this gate: {e}"))),
                updates: crate::context::Updates::default(),
            });
        }
    }

    /// A gate's thread reported: its updates applied to the context, its
    /// checks (or the error or panic that stopped it) and the residue it
    /// left judged into its record.
    fn finish(&mut self, finished: Finished, progress: &mut dyn Progress) {
        let i = finished.index;
        let Slot::Running {
            started,
            span,
            ref mut left_out,
            ref mut blocked,
            ..
        } = self.slots[i]
        else {
            return;
        };
        let left_out = std::mem::take(left_out);
        let blocked = blocked.take();
        self.spans[span].end();
        let info = &self.graph.catalogue[i];
        self.ctx.activity.ended(&info.id);
        finished
            .updates
            .apply(std::sync::Arc::make_mut(&mut self.ctx));
        let gate = (self.graph.implementation)(&info.id)
            .expect("every catalogue gate is implemented (unit-tested)");
        let mut checks = outcome_checks(finished.outcome);
        // Nothing a gate starts outlives it: what did is a failing RESIDUE
        // check (judged once every gate running when it started has ended).
        let residue = self.graph.residue;
        checks.extend(process::journal::in_gate(Some(&info.id), || {
            residue(&self.spans)
        }));
        let mut record = new_record(info, true);
        record.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        record.started_ms = Some(
            u64::try_from(started.duration_since(self.run_started).as_millis()).unwrap_or(u64::MAX),
        );
        record.candidates_left_out = left_out;
        match blocked {
            // Started early, then blocked: what it observed is not judged,
            // but a residue it was charged with (a process another gate left,
            // judged once this one ended) still is.
            Some(reason) => {
                let residue: Vec<Check> = checks
                    .into_iter()
                    .filter(|c| c.result == CheckResult::Fail)
                    .filter(|c| c.name == process::residue::CHECK)
                    .collect();
                if residue.is_empty() {
                    record.result = GateResult::Blocked;
                    record.reason = Some(reason);
                } else {
                    judge(&mut record, residue, None);
                }
            }
            None => judge(&mut record, checks, gate.headline_check()),
        }
        progress.gate_finished(&record);
        self.slots[i] = Slot::Done(Box::new(record));
    }

    /// Every record in catalogue order, and the context as the gates left it.
    fn into_records(self) -> (Vec<GateRecord>, RunContext) {
        let records = self
            .slots
            .into_iter()
            .map(|s| match s {
                Slot::Done(record) => *record,
                // Unreachable: the loop ends only when nothing runs and nothing
                // can start, and every waiting gate is then decided.
                Slot::Waiting | Slot::Running { .. } => unreachable!("every gate is decided"),
            })
            .collect();
        let ctx = std::sync::Arc::try_unwrap(self.ctx).unwrap_or_else(|shared| (*shared).clone());
        (records, ctx)
    }
}

/// A gate's record before it is decided: skipped, no checks.
fn new_record(info: &catalogue::GateInfo, required: bool) -> GateRecord {
    GateRecord {
        id: info.id.clone(),
        result: GateResult::Skipped,
        reason: None,
        note: None,
        proves: info.proves.clone(),
        does_not_prove: info.does_not_prove.clone(),
        required,
        duration_ms: 0,
        started_ms: None,
        candidates_left_out: Vec::new(),
        checks: Vec::new(),
    }
}

/// A gate's checks, or a failing `gate-error` for the error or panic that
/// stopped it.
fn outcome_checks(outcome: std::thread::Result<Result<Vec<Check>, String>>) -> Vec<Check> {
    match outcome {
        Ok(Ok(checks)) => checks,
        Ok(Err(message)) => vec![Check::fail("gate-error", None, message)],
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic payload".into());
            vec![Check::fail(
                "gate-error",
                None,
                format!(
                    "the harness itself failed inside this gate (panic: {what}); this is a defect of \
                     verify-coding-candidates, not of the candidates: report it with this evidence directory"
                ),
            )]
        }
    }
}

/// The records of the gates `info` runs after (its catalogue `after`), once
/// every one of them the catalogue has has ended (a gate the run did not
/// select ends at once, skipped); `None` while any is waiting or running.
fn ended_after(
    info: &catalogue::GateInfo,
    catalogue: &[catalogue::GateInfo],
    slots: &[Slot],
) -> Option<Vec<GateRecord>> {
    let mut ended = Vec::new();
    for id in &info.after {
        let Some(k) = catalogue.iter().position(|g| &g.id == id) else {
            continue; // not in this catalogue: nothing to wait for
        };
        match &slots[k] {
            Slot::Done(record) => ended.push(record.as_ref().clone()),
            _ => return None,
        }
    }
    Some(ended)
}

/// What a required gate does once every gate it requires has ended.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// It runs, for every candidate of the run but `left_out` (folder
    /// names, in the run's candidate order; empty: for all of them).
    Run { left_out: Vec<String> },
    /// It is blocked, for the reason given.
    Blocked(String),
}

/// The candidates a failed gate failed, when it failed for candidates only:
/// a `candidate`-scope gate whose every failing check names a candidate of
/// the run (`candidates`). `None` when any failing check is gate-wide (no
/// candidate, or one the run does not know), or none failed (a gate that
/// observed nothing, or an error).
fn failed_for_candidates(
    info: &catalogue::GateInfo,
    record: &GateRecord,
    candidates: &[String],
) -> Option<Vec<String>> {
    if info.scope != catalogue::Scope::Candidate || record.result != GateResult::Fail {
        return None;
    }
    let mut failed: Vec<String> = Vec::new();
    for check in record
        .checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
    {
        let folder = check
            .candidate
            .as_ref()
            .filter(|f| candidates.contains(f))?;
        if !failed.contains(folder) {
            failed.push(folder.clone());
        }
    }
    (!failed.is_empty()).then_some(failed)
}

/// Decides whether gate `info` runs, and for which candidates, from its
/// ended `prerequisites` (catalogue entry and record each, in `requires`
/// order) and the run's `candidates` (folder names, in order).
///
/// A candidate's failure blocks only that candidate's later gates: a
/// prerequisite that failed for candidates only ([`failed_for_candidates`])
/// leaves those candidates out, and so does one that ran without some
/// (`candidates_left_out`), directly or not. The gate then runs for the
/// others, if it is a `candidate`-scope gate and any are left; a `global` or
/// `whole` gate needs every candidate and is blocked. A prerequisite that
/// failed gate-wide, was blocked or skipped blocks the gate, as does one
/// that left every candidate out.
fn next_step(
    info: &catalogue::GateInfo,
    prerequisites: &[(&catalogue::GateInfo, &GateRecord)],
    candidates: &[String],
) -> Next {
    let mut left_out: Vec<&String> = Vec::new();
    let mut not_passed: Vec<&str> = Vec::new();
    let mut gate_wide = false;
    let mut narrowing: Vec<&str> = Vec::new();
    for (p, record) in prerequisites {
        let failed = failed_for_candidates(p, record, candidates);
        if record.result != GateResult::Pass {
            not_passed.push(&p.id);
            gate_wide |= failed.is_none();
        }
        let before = left_out.len();
        for folder in record
            .candidates_left_out
            .iter()
            .chain(failed.iter().flatten())
        {
            if let Some(f) = candidates.iter().find(|c| *c == folder) {
                if !left_out.contains(&f) {
                    left_out.push(f);
                }
            }
        }
        if left_out.len() > before || !record.candidates_left_out.is_empty() {
            narrowing.push(&p.id);
        }
    }
    if gate_wide {
        return Next::Blocked(format!(
            "prerequisite gate(s) did not pass: {}",
            not_passed.join(", ")
        ));
    }
    // The run's order, so the record reads the same whatever ended first.
    let left_out: Vec<String> = candidates
        .iter()
        .filter(|c| left_out.contains(c))
        .cloned()
        .collect();
    if left_out.is_empty() {
        return Next::Run { left_out };
    }
    let why = format!(
        "candidate(s) {} did not pass {}",
        left_out.join(", "),
        narrowing.join(", ")
    );
    if info.scope != catalogue::Scope::Candidate && !info.per_candidate_part {
        return Next::Blocked(format!(
            "{why}, and this gate checks every candidate at once: it runs only when every candidate passed \
             the gates it requires"
        ));
    }
    if left_out.len() == candidates.len() {
        return Next::Blocked(format!(
            "{why}: no candidate is left to check (prerequisite gate(s) did not pass: {})",
            narrowing.join(", ")
        ));
    }
    Next::Run { left_out }
}

/// Sets a ran gate's result, reason, note and checks from its checks: `fail`
/// when a check failed (consequences of a failed check are counted with it,
/// not as failures of their own) or none was made, `skipped` (kept, not
/// judged) when the run was interrupted, else `pass`.
fn judge(record: &mut GateRecord, checks: Vec<Check>, headline: Option<&str>) {
    record.reason = None;
    // A consequence counts with its root when its root failed here; one
    // whose root is not a failure of this gate counts as a failure itself.
    let is_root_failure = |c: &Check| {
        c.result == CheckResult::Fail
            && c.consequence_of.as_deref().is_none_or(|root| {
                !checks.iter().any(|r| {
                    r.name == root
                        && (r.candidate == c.candidate || r.candidate.is_none())
                        && r.result == CheckResult::Fail
                        && r.consequence_of.is_none()
                })
            })
    };
    let failed = checks.iter().filter(|c| is_root_failure(c)).count();
    let consequences = checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail && !is_root_failure(c))
        .count();
    record.result = if interrupt::requested() {
        // Checks cut short by SIGINT/SIGTERM say nothing about the
        // candidates: keep them as a record, judge none of them.
        record.reason = Some(format!(
            "interrupted while running; the {} check(s) recorded before the interrupt are kept but not judged",
            checks.len()
        ));
        GateResult::Skipped
    } else if checks.is_empty() {
        record.reason = Some("the gate observed nothing to check".into());
        GateResult::Fail
    } else if failed + consequences > 0 {
        let mut reason = format!("{failed} of {} checks failed", checks.len());
        if consequences > 0 {
            reason.push_str(&format!(
                " ({consequences} more not established as a consequence)"
            ));
        }
        record.reason = Some(reason);
        GateResult::Fail
    } else {
        GateResult::Pass
    };
    if record.result == GateResult::Pass {
        record.note = headline.and_then(|name| {
            checks
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.detail.lines().next())
                .map(String::from)
        });
    }
    record.checks = checks;
}

/// Moves folder `path` (inside evidence directory `dir`) out of `dir`, beside
/// it (`.<dir name>.<folder name>-<pid>`, a rename on the same file system),
/// and returns where it went; the caller removes it. When the rename is
/// refused (a parent this user cannot write), removes it in place and
/// returns none; none also when it does not exist.
fn set_aside(path: &Path, dir: &Path) -> Option<PathBuf> {
    if !path.exists() {
        return None;
    }
    let aside = dir.parent().zip(dir.file_name()).zip(path.file_name()).map(
        |((parent, dir_name), name)| {
            parent.join(format!(
                ".{}.{}-{}",
                dir_name.to_string_lossy(),
                name.to_string_lossy(),
                std::process::id()
            ))
        },
    );
    match aside {
        Some(aside) if std::fs::rename(path, &aside).is_ok() => Some(aside),
        _ => {
            let _ = std::fs::remove_dir_all(path);
            None
        }
    }
}

/// Whether directory `dir` holds no entry (false when it cannot be read).
fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// `--release-dir`: an existing directory, returned absolute (symlinks resolved).
fn check_release_dir(dir: &Path) -> Result<PathBuf, SetupError> {
    match dir.canonicalize() {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(p) => Err(SetupError(format!(
            "--release-dir {}: expected a directory of historical .lbpkg archives, found {} (not a directory); \
             pass the folder that holds the archives",
            dir.display(),
            p.display()
        ))),
        Err(e) => Err(SetupError(format!(
            "--release-dir {}: expected an existing directory of historical .lbpkg archives, found none ({e}); \
             pass the folder that holds the archives, or leave the option out (the gate is then skipped)",
            dir.display()
        ))),
    }
}

/// The evidence directory must be absolute, missing or empty, and outside the
/// repository, judged where writes would land (see [`resolve_for_writing`]).
/// Returns it as given (absolute), or resolved when it has `..` components.
fn check_evidence_dir(dir: &Path, repo: &Path) -> Result<PathBuf, SetupError> {
    if !dir.is_absolute() {
        return Err(SetupError(format!(
            "--evidence {}: expected an absolute path, found a relative one; pass e.g. {}",
            dir.display(),
            normalized_absolute(dir).display()
        )));
    }
    let resolved = resolve_for_writing("--evidence", dir)?;
    if let Some(meta) = std::fs::metadata(&resolved).ok().filter(|m| !m.is_dir()) {
        let found = if meta.is_file() {
            "an existing regular file"
        } else {
            "an existing non-directory (device, socket or FIFO)"
        };
        return Err(SetupError(format!(
            "--evidence {}: expected a directory (missing or empty), found {found}; \
             the evidence is a directory tree and nothing is overwritten: choose a fresh directory path",
            dir.display()
        )));
    }
    if resolved.exists() {
        let empty = std::fs::read_dir(&resolved)
            .map_err(|e| {
                SetupError(format!(
                    "--evidence {}: not a readable directory: {e}",
                    dir.display()
                ))
            })?
            .next()
            .is_none();
        if !empty {
            let holder = evidence::lock::holder(&resolved).map_or_else(String::new, |pid| {
                format!(" (a run, pid {pid}, is writing into it now and holds its lock)")
            });
            return Err(SetupError(format!(
                "--evidence {}: expected a missing or empty directory, found existing content{holder}; \
                 evidence is never mixed with an earlier run: choose a fresh directory",
                dir.display()
            )));
        }
    }
    let repo_real = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    if resolved.starts_with(&repo_real) {
        return Err(SetupError(format!(
            "--evidence {}: expected a directory outside the repository {}, found one inside it{}; \
             the repository under review is never written to: choose a directory outside it",
            dir.display(),
            repo_real.display(),
            if resolved.as_path() == dir {
                String::new()
            } else {
                format!(" ({})", resolved.display())
            }
        )));
    }
    // With `..`, the path as given means something only once its missing
    // folders exist; use the resolved one, which is where writes land.
    if dir.components().any(|c| c == Component::ParentDir) {
        return Ok(resolved);
    }
    Ok(dir.to_path_buf())
}

/// Where writes to the absolute path `dir` (the value of option `flag`, for
/// messages) would land, component by
/// component as the kernel resolves it once `create_dir_all` has created the
/// missing folders: existing components with symlinks resolved, missing ones
/// (real folders once created) taken as they are, `..` the parent of either.
///
/// # Errors
/// When an existing component is a symlink that does not resolve (dangling or
/// a loop): creating the directory would fail, or write wherever it points.
pub(crate) fn resolve_for_writing(flag: &str, dir: &Path) -> Result<PathBuf, SetupError> {
    let mut current = PathBuf::from("/");
    // How many trailing components of `current` do not exist yet.
    let mut missing = 0usize;
    for c in dir.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                current.pop();
                missing = missing.saturating_sub(1);
            }
            Component::Normal(name) => {
                let next = current.join(name);
                if missing > 0 {
                    current = next;
                    missing += 1;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Err(_) => {
                        current = next;
                        missing = 1;
                    }
                    Ok(m) if m.file_type().is_symlink() => {
                        current = next.canonicalize().map_err(|e| {
                            SetupError(format!(
                                "{flag} {}: {} is a symlink that does not resolve ({e}; target {}); \
                                 expected a directory or a missing path: pass a path without dangling links",
                                dir.display(),
                                next.display(),
                                std::fs::read_link(&next)
                                    .map(|t| t.display().to_string())
                                    .unwrap_or_default()
                            ))
                        })?;
                    }
                    Ok(_) => current = next,
                }
            }
        }
    }
    Ok(current)
}

/// The interpreter a run (or a replay's rebuild) uses: `python` as given,
/// a bare name (no `/`) looked up on `PATH` as a shell would, made absolute
/// (symlinks kept: a venv's `bin/python` is a link to its base interpreter).
///
/// # Errors
/// A sentence naming the option, the path as given and as resolved, what was
/// found, and what to pass instead (`cargo xtask sdk` creates one).
pub(crate) fn check_python(python: Option<&Path>) -> Result<PathBuf, SetupError> {
    let Some(p) = python else {
        return Err(SetupError(
            "no interpreter: pass --python PATH or set PYTHON to the interpreter that has the pinned \
             langbot-plugin installed (`cargo xtask sdk` in the verifier's checkout creates one at \
             target/sdk-venv/bin/python and prints its path)"
                .into(),
        ));
    };
    let bare = !p.as_os_str().is_empty() && !p.as_os_str().as_encoded_bytes().contains(&b'/');
    let p = if bare {
        match on_path(p) {
            Some(found) => found,
            None => {
                return Err(SetupError(format!(
                    "--python {}: expected an interpreter; a bare name is looked up on PATH, and no \
                     executable {} is on PATH; pass the interpreter's path (`cargo xtask sdk` creates \
                     target/sdk-venv/bin/python and prints its path)",
                    p.display(),
                    p.display()
                )))
            }
        }
    } else {
        p.to_path_buf()
    };
    let resolved = normalized_absolute(&p);
    let shown = if resolved == p {
        p.display().to_string()
    } else {
        format!("{} (resolved: {})", p.display(), resolved.display())
    };
    let meta = std::fs::metadata(&p).map_err(|e| {
        let found = if e.kind() == std::io::ErrorKind::NotFound {
            "no such file".to_string()
        } else {
            e.to_string()
        };
        SetupError(format!(
            "--python {shown}: expected an executable interpreter with the pinned langbot-plugin, found \
             {found}; run `cargo xtask sdk` in the verifier's checkout (it creates target/sdk-venv and \
             prints its interpreter's path), or pass the path of an interpreter that has the SDK"
        ))
    })?;
    use std::os::unix::fs::PermissionsExt;
    let found = if meta.is_dir() {
        // A venv (`DIR/bin/python`) or its `bin/` folder (`DIR/python`).
        let inside = [p.join("bin").join("python"), p.join("python")]
            .into_iter()
            .find(|c| c.is_file())
            .unwrap_or_else(|| p.join("bin").join("python"));
        Some(format!(
            "a directory; pass the interpreter inside it, e.g. {}",
            inside.display()
        ))
    } else if !meta.is_file() {
        Some("neither a file nor a directory".to_string())
    } else if meta.permissions().mode() & 0o111 == 0 {
        Some(format!(
            "a file without execute permission (mode {:o})",
            meta.permissions().mode() & 0o777
        ))
    } else {
        None
    };
    if let Some(found) = found {
        return Err(SetupError(format!(
            "--python {shown}: expected an executable interpreter with the pinned langbot-plugin \
             (such as <venv>/bin/python; `cargo xtask sdk` creates one), found {found}"
        )));
    }
    if p.is_relative() {
        return std::path::absolute(&p)
            .map_err(|e| SetupError(format!("--python {}: {e}", p.display())));
    }
    Ok(p)
}

/// The first executable file named `name` in a folder of `$PATH`, made absolute.
fn on_path(name: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|c| {
            std::fs::metadata(c).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .and_then(|c| std::path::absolute(c).ok())
}

/// `text` with every mention of the evidence directory (each of `prefixes`,
/// as given and resolved) written as `DIR`: `<dir>/logs/x` becomes
/// `DIR/logs/x`, `<dir>` alone `DIR`; a longer name that merely starts with
/// it (`<dir>2`) is left alone.
pub(crate) fn relative_to_dir(text: &str, prefixes: &[String]) -> String {
    let mut prefixes: Vec<&String> = prefixes.iter().filter(|p| p.len() > 1).collect();
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for p in &prefixes {
            if let Some(after) = rest.strip_prefix(p.as_str()) {
                let boundary = after
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || "-_.~".contains(c)));
                if boundary {
                    out.push_str("DIR");
                    rest = after;
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `path` made absolute against the current directory, with `.` and `..`
/// removed lexically: for messages that suggest a path, never for opening
/// one (through a symlink, `..` means the link target's parent).
pub(crate) fn normalized_absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Current UTC time as RFC 3339 with seconds (`2026-11-29T18:00:00Z`).
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

fn rfc3339(secs: u64) -> String {
    // Civil-from-days (Howard Hinnant's algorithm), proleptic Gregorian, UTC.
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_sweep_fails_the_gate_whose_root_held_a_link_out_and_gives_a_stray_to_the_last_required_gate(
    ) {
        use super::*;
        use crate::evidence::testing::gate;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("roots/suites/tree/home");
        std::fs::create_dir_all(&home).unwrap();
        std::os::unix::fs::symlink("/etc/shadow", home.join("shadow")).unwrap();
        std::os::unix::fs::symlink("roots", dir.path().join("stray")).unwrap();
        let mut records = vec![
            gate("suites", GateResult::Pass, true, Vec::new()),
            gate("stage", GateResult::Pass, true, Vec::new()),
            gate("worker-isolation", GateResult::Skipped, false, Vec::new()),
        ];
        let swept = sweep_dir(dir.path(), &mut records, &[]);
        assert_eq!(swept.len(), 2, "{swept:?}");
        assert_eq!(records[0].result, GateResult::Fail);
        assert!(records[0]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("evidence-links:"));
        assert_eq!(records[0].checks[0].result, CheckResult::Fail);
        // Outside any gate's folders: the last required gate, a warning.
        assert_eq!(records[1].result, GateResult::Pass);
        assert_eq!(records[1].checks[0].result, CheckResult::Warn);
        assert!(records[2].checks.is_empty());
        let left: Vec<_> = walkdir::WalkDir::new(dir.path())
            .into_iter()
            .flatten()
            .filter(|e| !e.file_type().is_dir() && !e.file_type().is_file())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    mod graph {
        //! The scheduler over stand-in gates (ours: they sleep and record;
        //! no SDK is involved), so ordering, concurrency, exclusivity,
        //! blocking and fact hand-over are observable without Python.
        use super::super::*;
        use crate::catalogue::{GateInfo, Scope};
        use crate::context::Updates;
        use crate::gates::Gate;
        use std::sync::{Arc, Mutex};
        use std::time::Duration;

        type Log = Arc<Mutex<Vec<String>>>;

        struct Standin {
            id: &'static str,
            ms: u64,
            fail: bool,
            panic: bool,
            /// A per-candidate stand-in: one check per candidate it sees,
            /// failing for the folders listed.
            fail_for: Option<Vec<String>>,
            log: Log,
        }

        impl Gate for Standin {
            fn id(&self) -> &'static str {
                self.id
            }
            fn run_early(
                &self,
                early: &RunContext,
                rest: &crate::gates::Rest,
                out: &mut Updates,
            ) -> Result<Vec<Check>, String> {
                let seen = early.source.commit.clone();
                self.log
                    .lock()
                    .unwrap()
                    .push(format!("early {} saw {seen}", self.id));
                match rest.wait() {
                    Some(ctx) => self.run(&ctx, out),
                    None => {
                        self.log.lock().unwrap().push(format!("held {}", self.id));
                        Ok(vec![Check::pass(
                            "x",
                            None,
                            "observed before it was blocked",
                        )])
                    }
                }
            }
            fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
                let seen = ctx.source.commit.clone();
                self.log
                    .lock()
                    .unwrap()
                    .push(format!("start {} saw {seen}", self.id));
                if !ctx.ended.is_empty() {
                    let read: Vec<String> = ctx
                        .ended
                        .iter()
                        .map(|g| format!("{}:{}", g.id, g.result.word()))
                        .collect();
                    self.log
                        .lock()
                        .unwrap()
                        .push(format!("{} read {}", self.id, read.join(",")));
                }
                std::thread::sleep(Duration::from_millis(self.ms));
                assert!(!self.panic, "stand-in panic");
                let id = self.id;
                out.set(move |ctx| ctx.source.commit = format!("{}+{id}", ctx.source.commit));
                self.log.lock().unwrap().push(format!("end {}", self.id));
                if let Some(fail_for) = &self.fail_for {
                    let folders: Vec<&str> =
                        ctx.candidate_specs().iter().map(|c| c.folder()).collect();
                    let records: Vec<&str> =
                        ctx.candidates.iter().map(|c| c.folder.as_str()).collect();
                    assert_eq!(folders, records, "selected and records narrowed alike");
                    self.log.lock().unwrap().push(format!(
                        "{} checked {}",
                        self.id,
                        folders.join(",")
                    ));
                    let mut checks: Vec<Check> = folders
                        .iter()
                        .map(|f| {
                            if fail_for.iter().any(|x| x == f) {
                                Check::fail("x", Some(f), "stand-in failure")
                            } else {
                                Check::pass("x", Some(f), "held")
                                    .with_observed(serde_json::json!(1))
                            }
                        })
                        .collect();
                    if self.fail {
                        checks.push(Check::fail("wide", None, "stand-in gate-wide failure"));
                    }
                    return Ok(checks);
                }
                Ok(vec![if self.fail {
                    Check::fail("x", None, "stand-in failure")
                } else {
                    Check::pass("x", None, "held").with_observed(serde_json::json!(1))
                }])
            }
        }

        fn info(id: &str, requires: &[&str], exclusive: &[&str]) -> GateInfo {
            GateInfo {
                id: id.into(),
                title: id.into(),
                proves: String::new(),
                does_not_prove: String::new(),
                requires: requires.iter().map(|r| r.to_string()).collect(),
                after: Vec::new(),
                early_requires: Vec::new(),
                scope: Scope::Global,
                exclusive: exclusive.iter().map(|r| r.to_string()).collect(),
                cost: 1.0,
                writes: Vec::new(),
                foreground: false,
                per_candidate_part: false,
            }
        }

        #[test]
        fn a_gate_runs_after_its_after_gates_whatever_their_result_and_reads_their_records() {
            let cat = [
                info("a", &[], &[]),
                info("c", &["a"], &[]),
                GateInfo {
                    after: vec!["a".into(), "not-in-the-catalogue".into()],
                    ..info("b", &[], &[])
                },
            ];
            let (records, _, log, _) = run(&cat, &[("a", 40), ("b", 1), ("c", 1)], &["a"], &[], 3);
            let result = |id: &str| records.iter().find(|r| r.id == id).unwrap().result;
            assert_eq!(result("a"), GateResult::Fail);
            // `requires` blocks on a failure; `after` only waits for it.
            assert_eq!(result("c"), GateResult::Blocked);
            assert_eq!(result("b"), GateResult::Pass, "{log:?}");
            let at = |line: &str| log.iter().position(|l| l.starts_with(line)).unwrap();
            assert!(at("end a") < at("start b"), "{log:?}");
            assert!(log.contains(&"b read a:fail".to_string()), "{log:?}");
            assert!(!log.iter().any(|l| l.starts_with("a read")), "{log:?}");
        }

        fn context() -> RunContext {
            let mut ctx = RunContext::for_tests();
            ctx.source.commit = "c".into();
            ctx
        }

        #[derive(Default)]
        struct Events(Vec<String>);

        impl Progress for Events {
            fn gate_started(&mut self, index: usize, total: usize, id: &str, also: &[&str]) {
                self.0
                    .push(format!("[{index}/{total}] {id} beside {}", also.join(",")));
            }
            fn gate_finished(&mut self, record: &GateRecord) {
                self.0
                    .push(format!("{} {}", record.id, record.result.word()));
            }
        }

        /// Runs `catalogue` with stand-ins (`ms` each, failing the ids in
        /// `failing`, panicking in `panicking`); returns records, the final
        /// context, the gates' log and the progress events.
        fn run(
            catalogue: &[GateInfo],
            ms: &[(&'static str, u64)],
            failing: &[&str],
            panicking: &[&str],
            jobs: usize,
        ) -> (Vec<GateRecord>, RunContext, Vec<String>, Vec<String>) {
            run_with(catalogue, ms, failing, panicking, &[], jobs)
        }

        /// [`run`], with the gates in `per_candidate` checking each candidate
        /// they see, failing for the folders listed (a gate also in
        /// `failing` adds a failing gate-wide check).
        fn run_with(
            catalogue: &[GateInfo],
            ms: &[(&'static str, u64)],
            failing: &[&str],
            panicking: &[&str],
            per_candidate: &[(&str, &[&str])],
            jobs: usize,
        ) -> (Vec<GateRecord>, RunContext, Vec<String>, Vec<String>) {
            let per_candidate: Vec<(String, Vec<String>)> = per_candidate
                .iter()
                .map(|(id, f)| (id.to_string(), f.iter().map(|s| s.to_string()).collect()))
                .collect();
            let log: Log = Arc::default();
            let ms: Vec<(&'static str, u64)> = ms.to_vec();
            let failing: Vec<String> = failing.iter().map(|s| s.to_string()).collect();
            let panicking: Vec<String> = panicking.iter().map(|s| s.to_string()).collect();
            let l = Arc::clone(&log);
            let implementation = move |id: &str| -> Option<Box<dyn Gate>> {
                let (id, ms) = *ms.iter().find(|(g, _)| *g == id)?;
                Some(Box::new(Standin {
                    id,
                    ms,
                    fail: failing.iter().any(|f| f == id),
                    panic: panicking.iter().any(|f| f == id),
                    fail_for: per_candidate
                        .iter()
                        .find(|(g, _)| g == id)
                        .map(|(_, f)| f.clone()),
                    log: Arc::clone(&l),
                }))
            };
            let required: Vec<String> = catalogue.iter().map(|g| g.id.clone()).collect();
            let residue_calls: Arc<Mutex<usize>> = Arc::default();
            let r = Arc::clone(&residue_calls);
            let residue = move |spans: &[process::residue::Span]| -> Vec<Check> {
                *r.lock().unwrap() += 1;
                assert!(
                    spans.iter().any(|s| s.end.is_some()),
                    "called after a gate ended"
                );
                Vec::new()
            };
            let mut events = Events::default();
            let mut start = context();
            start.candidates = start
                .selected
                .iter()
                .map(|c| crate::gates::testing::bare_candidate(c.folder()))
                .collect();
            let (records, ctx) = run_gates(
                start,
                &Graph {
                    catalogue,
                    implementation: &implementation,
                    required: &required,
                    only: None,
                    partitioned: false,
                    jobs,
                    foreground_alone: FOREGROUND_ALONE.with(std::cell::Cell::get),
                    residue: &residue,
                },
                &mut events,
            );
            let ran = records.iter().filter(|g| g.started_ms.is_some()).count();
            assert_eq!(
                *residue_calls.lock().unwrap(),
                ran,
                "one residue sweep per gate that ran"
            );
            let log = log.lock().unwrap().clone();
            (records, ctx, log, events.0)
        }

        fn position(log: &[String], entry: &str) -> usize {
            log.iter()
                .position(|l| l.starts_with(entry))
                .unwrap_or_else(|| panic!("{entry:?} not in {log:?}"))
        }

        #[test]
        fn independent_gates_run_at_once_up_to_jobs_and_one_after_another_with_one_job() {
            let cat = [info("a", &[], &[]), info("b", &[], &[])];
            let (records, _, log, events) = run(&cat, &[("a", 150), ("b", 150)], &[], &[], 2);
            assert!(
                position(&log, "start b") < position(&log, "end a"),
                "{log:?}"
            );
            assert_eq!(events[0], "[1/2] a beside ");
            assert_eq!(events[1], "[2/2] b beside a");
            let (a, b) = (&records[0], &records[1]);
            assert!(b.started_ms.unwrap() < a.started_ms.unwrap() + a.duration_ms);

            let (records, _, log, events) = run(&cat, &[("a", 20), ("b", 20)], &[], &[], 1);
            assert_eq!(log, ["start a saw c", "end a", "start b saw c+a", "end b"]);
            assert_eq!(
                events,
                ["[1/2] a beside ", "a pass", "[2/2] b beside ", "b pass"]
            );
            let (a, b) = (&records[0], &records[1]);
            assert!(b.started_ms.unwrap() >= a.started_ms.unwrap() + a.duration_ms);
        }

        thread_local! {
            /// [`Graph::foreground_alone`] of the next [`run_with`] on this thread.
            static FOREGROUND_ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }

        #[test]
        fn a_foreground_gate_runs_alone_when_idle_steps_could_not_be_restored() {
            let cat = early_catalogue();
            let ms = [("a", 20), ("b", 50), ("c", 250), ("s", 20)];
            FOREGROUND_ALONE.with(|a| a.set(true));
            let (records, _, log, _) = run(&cat, &ms, &[], &[], 2);
            FOREGROUND_ALONE.with(|a| a.set(false));
            assert!(!log.iter().any(|l| l.starts_with("early")), "{log:?}");
            // s waits for c, which it does not need: nothing runs beside it.
            assert!(
                position(&log, "end c") < position(&log, "start s"),
                "{log:?}"
            );
            assert_eq!(records[3].result, GateResult::Pass);
        }

        /// a, then b and c (each needing a), then s, which needs b and may
        /// start once a passed; s is foreground (it takes no job).
        fn early_catalogue() -> [GateInfo; 4] {
            let mut s = info("s", &["b"], &[]);
            s.early_requires = vec!["a".into()];
            s.foreground = true;
            [
                info("a", &[], &[]),
                info("b", &["a"], &[]),
                info("c", &["a"], &[]),
                s,
            ]
        }

        #[test]
        fn a_gate_starts_once_its_early_requires_passed_beside_two_jobs_and_gets_the_rest_later() {
            let cat = early_catalogue();
            let ms = [("a", 20), ("b", 200), ("c", 200), ("s", 20)];
            let (records, _, log, _) = run(&cat, &ms, &[], &[], 2);
            // s starts on what a left, beside b and c (it takes no job) ...
            assert!(log.contains(&"early s saw c+a".to_string()), "{log:?}");
            assert!(
                position(&log, "early s") < position(&log, "end b"),
                "{log:?}"
            );
            assert!(
                position(&log, "start c") < position(&log, "end b"),
                "{log:?}"
            );
            // ... and goes on once b, which it requires, ended.
            assert!(
                position(&log, "end b") < position(&log, "start s saw"),
                "{log:?}"
            );
            assert!(
                log.iter()
                    .any(|l| l.starts_with("start s saw") && l.contains("+b")),
                "{log:?}"
            );
            assert_eq!(records[3].result, GateResult::Pass);
            // Its record spans both parts.
            assert!(records[3].started_ms.unwrap() < records[1].started_ms.unwrap() + 150);

            // With one job the run is serial: s starts once b ended, no earlier.
            let (_, _, log, _) = run(&cat, &ms, &[], &[], 1);
            assert!(!log.iter().any(|l| l.starts_with("early")), "{log:?}");
            assert!(
                position(&log, "end b") < position(&log, "start s"),
                "{log:?}"
            );
        }

        #[test]
        fn a_gate_started_early_whose_other_prerequisite_fails_is_blocked_and_its_checks_dropped() {
            let cat = early_catalogue();
            let ms = [("a", 20), ("b", 100), ("c", 20), ("s", 20)];
            let (records, _, log, events) = run(&cat, &ms, &["b"], &[], 2);
            assert!(log.contains(&"held s".to_string()), "{log:?}");
            assert!(!log.iter().any(|l| l.starts_with("start s")), "{log:?}");
            let s = &records[3];
            assert_eq!(s.result, GateResult::Blocked);
            assert_eq!(
                s.reason.as_deref(),
                Some("prerequisite gate(s) did not pass: b")
            );
            assert!(s.checks.is_empty(), "{:?}", s.checks);
            assert!(events.contains(&"s blocked".to_string()), "{events:?}");
        }

        #[test]
        fn gates_sharing_an_exclusive_resource_never_overlap() {
            let cat = [
                info("a", &[], &["port-range"]),
                info("b", &[], &["port-range", "netns"]),
                info("c", &[], &["other"]),
            ];
            let (_, _, log, _) = run(&cat, &[("a", 100), ("b", 100), ("c", 100)], &[], &[], 3);
            assert!(
                position(&log, "end a") < position(&log, "start b"),
                "{log:?}"
            );
            assert!(
                position(&log, "start c") < position(&log, "end a"),
                "{log:?}"
            );
        }

        #[test]
        fn a_free_slot_goes_to_the_gate_on_the_longest_remaining_path() {
            // One slot, a and b ready at once: b heads the costlier chain
            // (b then c), so it starts first although a comes first in the
            // catalogue; records stay in catalogue order.
            let mut cat = [
                info("a", &[], &[]),
                info("b", &[], &[]),
                info("c", &["b"], &[]),
            ];
            cat[0].cost = 2.0;
            cat[2].cost = 5.0;
            let (records, _, log, _) = run(&cat, &[("a", 10), ("b", 10), ("c", 10)], &[], &[], 1);
            assert!(
                position(&log, "end b") < position(&log, "start a"),
                "{log:?}"
            );
            let ids: Vec<&str> = records.iter().map(|g| g.id.as_str()).collect();
            assert_eq!(ids, ["a", "b", "c"]);
            // A chain of gates the run does not need weighs nothing.
            let order = super::super::start_order(&cat, &["a".into(), "b".into()]);
            let at = |i: usize| order.iter().position(|k| *k == i).unwrap();
            assert!(
                at(0) < at(1),
                "a (2) before b (1) once c is not required: {order:?}"
            );
            // Equal paths keep catalogue order.
            cat[0].cost = 1.0;
            cat[2].cost = 0.0;
            let order = super::super::start_order(&cat, &["a".into(), "b".into(), "c".into()]);
            assert_eq!(order, [0, 1, 2]);
            cat[2].cost = 0.5;
            let order = super::super::start_order(&cat, &["a".into(), "b".into(), "c".into()]);
            assert_eq!(order, [1, 0, 2]);
        }

        #[test]
        fn a_gate_that_needs_the_evidence_directory_to_itself_runs_alone() {
            let cat = [
                info("a", &[], &[]),
                info("w", &[], &[crate::catalogue::EVIDENCE_DIRECTORY]),
                info("b", &[], &[]),
            ];
            let (records, _, log, _) = run(&cat, &[("a", 80), ("w", 80), ("b", 80)], &[], &[], 3);
            // a starts; w waits for a to end; b, later in the catalogue and
            // free, starts beside a; w runs once both ended, and alone.
            assert!(
                position(&log, "start b") < position(&log, "end a"),
                "{log:?}"
            );
            assert!(
                position(&log, "end a") < position(&log, "start w"),
                "{log:?}"
            );
            assert!(
                position(&log, "end b") < position(&log, "start w"),
                "{log:?}"
            );
            assert!(records.iter().all(|g| g.result == GateResult::Pass));
        }

        #[test]
        fn a_gate_that_needs_the_machine_to_itself_never_runs_beside_another() {
            let cat = [
                info("a", &[], &[]),
                info("s", &[], &[crate::catalogue::MACHINE]),
                info("c", &["a"], &[]),
                info("d", &[], &[]),
            ];
            let (records, _, log, _) = run(
                &cat,
                &[("a", 60), ("s", 60), ("c", 60), ("d", 60)],
                &[],
                &[],
                4,
            );
            // s is ready at once but waits while anything runs; once it
            // started, nothing else starts until it ended.
            let (start, end) = (position(&log, "start s"), position(&log, "end s"));
            for other in ["a", "c", "d"] {
                let (o_start, o_end) = (
                    position(&log, &format!("start {other}")),
                    position(&log, &format!("end {other}")),
                );
                assert!(o_end < start || end < o_start, "{other} beside s: {log:?}");
            }
            assert!(records.iter().all(|g| g.result == GateResult::Pass));
        }

        #[test]
        fn a_gate_waits_for_its_prerequisites_and_sees_their_facts_only() {
            // b is independent of a and starts with it: it sees the context
            // as it was; c requires a and sees a's facts.
            let cat = [
                info("a", &[], &[]),
                info("b", &[], &[]),
                info("c", &["a"], &[]),
            ];
            let (records, ctx, log, _) =
                run(&cat, &[("a", 120), ("b", 10), ("c", 10)], &[], &[], 4);
            assert!(log.contains(&"start b saw c".to_string()), "{log:?}");
            assert!(
                log.contains(&"start c saw c+a".to_string())
                    || log.contains(&"start c saw c+b+a".to_string()),
                "{log:?}"
            );
            assert!(
                position(&log, "end a") < position(&log, "start c"),
                "{log:?}"
            );
            // Records in catalogue order although b ended first.
            let ids: Vec<&str> = records.iter().map(|g| g.id.as_str()).collect();
            assert_eq!(ids, ["a", "b", "c"]);
            assert!(records.iter().all(|g| g.result == GateResult::Pass));
            // Every gate's facts reached the final context, each once.
            let mut parts: Vec<&str> = ctx.source.commit.split('+').collect();
            parts.sort_unstable();
            assert_eq!(parts, ["a", "b", "c", "c"]);
        }

        #[test]
        fn a_failed_or_panicking_prerequisite_blocks_its_dependents_and_nothing_else() {
            let cat = [
                info("a", &[], &[]),
                info("b", &["a"], &[]),
                info("c", &[], &[]),
                info("d", &["c"], &[]),
                info("e", &["b"], &[]),
            ];
            let all = [("a", 10), ("b", 10), ("c", 10), ("d", 10), ("e", 10)];
            let (records, _, log, _) = run(&cat, &all, &["a"], &["c"], 2);
            let by_id = |id: &str| records.iter().find(|g| g.id == id).unwrap();
            assert_eq!(by_id("a").result, GateResult::Fail);
            assert_eq!(by_id("a").reason.as_deref(), Some("1 of 1 checks failed"));
            assert_eq!(by_id("b").result, GateResult::Blocked);
            assert_eq!(
                by_id("b").reason.as_deref(),
                Some("prerequisite gate(s) did not pass: a")
            );
            assert_eq!(by_id("c").result, GateResult::Fail);
            assert_eq!(by_id("c").checks[0].name, "gate-error");
            assert!(by_id("c").checks[0].detail.contains("stand-in panic"));
            assert_eq!(by_id("d").result, GateResult::Blocked);
            assert_eq!(by_id("e").result, GateResult::Blocked);
            assert_eq!(
                by_id("e").reason.as_deref(),
                Some("prerequisite gate(s) did not pass: b")
            );
            assert!(!log
                .iter()
                .any(|l| l.starts_with("start b") || l.starts_with("start d")));
            assert!(by_id("b").started_ms.is_none());
        }

        /// The catalogue of the per-candidate tests: two global gates, a
        /// chain of candidate gates, and a whole gate after the first.
        fn candidate_chain() -> Vec<GateInfo> {
            let scoped = |id: &str, requires: &[&str], scope: Scope| GateInfo {
                scope,
                ..info(id, requires, &[])
            };
            vec![
                info("stage", &[], &[]),
                scoped("admission", &["stage"], Scope::Candidate),
                scoped("dependencies", &["admission"], Scope::Candidate),
                scoped(
                    "discovery",
                    &["admission", "dependencies"],
                    Scope::Candidate,
                ),
                scoped("suites", &["admission"], Scope::Whole),
                scoped("isolation", &["stage"], Scope::Global),
            ]
        }

        const ALL: [(&str, u64); 6] = [
            ("stage", 5),
            ("admission", 5),
            ("dependencies", 5),
            ("discovery", 5),
            ("suites", 5),
            ("isolation", 5),
        ];

        #[test]
        fn a_candidate_failure_lets_dependents_run_for_the_other_candidates_only() {
            let cat = candidate_chain();
            let per: [(&str, &[&str]); 3] = [
                ("admission", &["codex-agent"]),
                ("dependencies", &["claude-code-agent"]),
                ("discovery", &[]),
            ];
            let (records, _, log, events) = run_with(&cat, &ALL, &[], &[], &per, 2);
            let by_id = |id: &str| records.iter().find(|g| g.id == id).unwrap();
            assert_eq!(by_id("admission").result, GateResult::Fail);
            assert!(by_id("admission").candidates_left_out.is_empty());
            assert!(
                log.contains(
                    &"admission checked acp-agent-runner,claude-code-agent,codex-agent".to_string()
                ),
                "{log:?}"
            );
            // dependencies runs without codex-agent, and fails claude-code-agent.
            assert!(
                log.contains(
                    &"dependencies checked acp-agent-runner,claude-code-agent".to_string()
                ),
                "{log:?}"
            );
            assert_eq!(by_id("dependencies").result, GateResult::Fail);
            assert_eq!(by_id("dependencies").candidates_left_out, ["codex-agent"]);
            // discovery: both left out, by admission and (through) dependencies.
            assert!(
                log.contains(&"discovery checked acp-agent-runner".to_string()),
                "{log:?}"
            );
            assert_eq!(by_id("discovery").result, GateResult::Pass);
            assert_eq!(
                by_id("discovery").candidates_left_out,
                ["claude-code-agent", "codex-agent"]
            );
            assert!(events.contains(&"discovery pass".to_string()), "{events:?}");
            // A whole gate needs every candidate: blocked, naming who and why.
            assert_eq!(by_id("suites").result, GateResult::Blocked);
            assert_eq!(
                by_id("suites").reason.as_deref(),
                Some(
                    "candidate(s) codex-agent did not pass admission, and this gate checks every candidate \
                     at once: it runs only when every candidate passed the gates it requires"
                )
            );
            assert!(!log.iter().any(|l| l.starts_with("start suites")));
            // A global gate that requires none of them is untouched.
            assert_eq!(by_id("isolation").result, GateResult::Pass);
            // Each candidate's verdict: stopped at its own first failure.
            let verdict = |f: &str| crate::evidence::verdicts::of(&records, f);
            assert_eq!(verdict("codex-agent").gate.as_deref(), Some("admission"));
            assert_eq!(
                verdict("claude-code-agent").gate.as_deref(),
                Some("dependencies")
            );
            assert_eq!(
                verdict("acp-agent-runner").result,
                crate::evidence::CandidateResult::NotCertified,
                "suites was blocked: nothing certifies even the candidate that passed"
            );
            assert_eq!(verdict("acp-agent-runner").gate.as_deref(), Some("suites"));
        }

        #[test]
        fn a_whole_gate_with_a_per_candidate_part_runs_for_the_candidates_left() {
            let mut cat = candidate_chain();
            let suites = cat.iter_mut().find(|g| g.id == "suites").unwrap();
            suites.per_candidate_part = true;
            let per: [(&str, &[&str]); 4] = [
                ("admission", &["codex-agent"]),
                ("dependencies", &[]),
                ("discovery", &[]),
                ("suites", &[]),
            ];
            let (records, _, log, _) = run_with(&cat, &ALL, &[], &[], &per, 2);
            let by_id = |id: &str| records.iter().find(|g| g.id == id).unwrap();
            assert_eq!(by_id("admission").result, GateResult::Fail);
            assert!(
                log.contains(&"suites checked acp-agent-runner,claude-code-agent".to_string()),
                "{log:?}"
            );
            assert_eq!(by_id("suites").result, GateResult::Pass);
            assert_eq!(by_id("suites").candidates_left_out, ["codex-agent"]);
            // Every candidate left out: blocked all the same.
            let per: [(&str, &[&str]); 4] = [
                (
                    "admission",
                    &["acp-agent-runner", "claude-code-agent", "codex-agent"],
                ),
                ("dependencies", &[]),
                ("discovery", &[]),
                ("suites", &[]),
            ];
            let (records, _, log, _) = run_with(&cat, &ALL, &[], &[], &per, 2);
            let suites = records.iter().find(|g| g.id == "suites").unwrap();
            assert_eq!(suites.result, GateResult::Blocked);
            assert!(
                !log.iter().any(|l| l.starts_with("start suites")),
                "{log:?}"
            );
        }

        #[test]
        fn a_gate_wide_failure_of_a_candidate_gate_still_blocks_its_dependents() {
            let cat = candidate_chain();
            let per: [(&str, &[&str]); 3] = [
                ("admission", &["codex-agent"]),
                ("dependencies", &[]),
                ("discovery", &[]),
            ];
            // admission fails codex-agent and a gate-wide check: nothing after it runs.
            let (records, _, log, _) = run_with(&cat, &ALL, &["admission"], &[], &per, 2);
            let by_id = |id: &str| records.iter().find(|g| g.id == id).unwrap();
            assert_eq!(by_id("admission").result, GateResult::Fail);
            for id in ["dependencies", "discovery", "suites"] {
                assert_eq!(by_id(id).result, GateResult::Blocked, "{id}");
                assert!(by_id(id).candidates_left_out.is_empty());
                assert!(
                    !log.iter().any(|l| l.starts_with(&format!("start {id}"))),
                    "{log:?}"
                );
            }
            assert_eq!(
                by_id("dependencies").reason.as_deref(),
                Some("prerequisite gate(s) did not pass: admission")
            );
            assert_eq!(
                by_id("discovery").reason.as_deref(),
                Some("prerequisite gate(s) did not pass: admission, dependencies")
            );
            // A failed global gate naming candidates is gate-wide all the same:
            // only candidate-scope gates fail for candidates alone.
            let failing_global = [
                info("stage", &[], &[]),
                GateInfo {
                    scope: Scope::Candidate,
                    ..info("admission", &["stage"], &[])
                },
            ];
            let (records, _, _, _) = run_with(
                &failing_global,
                &[("stage", 5), ("admission", 5)],
                &[],
                &[],
                &[("stage", &["codex-agent"]), ("admission", &[])],
                2,
            );
            assert_eq!(records[0].result, GateResult::Fail);
            assert_eq!(records[1].result, GateResult::Blocked);
            // A gate-error (no candidate) is gate-wide too.
            let (records, _, _, _) = run_with(
                &cat,
                &ALL,
                &[],
                &["admission"],
                &[
                    ("admission", &[]),
                    ("dependencies", &[]),
                    ("discovery", &[]),
                ],
                2,
            );
            assert_eq!(records[1].checks[0].name, "gate-error");
            assert_eq!(records[2].result, GateResult::Blocked);
        }

        #[test]
        fn a_gate_with_no_candidate_left_is_blocked() {
            let cat = candidate_chain();
            let per: [(&str, &[&str]); 3] = [
                ("admission", &["codex-agent", "acp-agent-runner"]),
                ("dependencies", &["claude-code-agent"]),
                ("discovery", &[]),
            ];
            let (records, _, log, _) = run_with(&cat, &ALL, &[], &[], &per, 1);
            let by_id = |id: &str| records.iter().find(|g| g.id == id).unwrap();
            assert!(
                log.contains(&"dependencies checked claude-code-agent".to_string()),
                "{log:?}"
            );
            assert_eq!(by_id("dependencies").result, GateResult::Fail);
            assert_eq!(by_id("discovery").result, GateResult::Blocked);
            assert!(by_id("discovery").started_ms.is_none());
            assert_eq!(
                by_id("discovery").reason.as_deref(),
                Some(
                    "candidate(s) acp-agent-runner, claude-code-agent, codex-agent did not pass admission, \
                     dependencies: no candidate is left to check (prerequisite gate(s) did not pass: \
                     admission, dependencies)"
                )
            );
            assert!(!log.iter().any(|l| l.starts_with("start discovery")));
            // Every candidate failed of its own: each verdict names its gate.
            for (folder, gate) in [
                ("acp-agent-runner", "admission"),
                ("claude-code-agent", "dependencies"),
                ("codex-agent", "admission"),
            ] {
                let v = crate::evidence::verdicts::of(&records, folder);
                assert_eq!(v.result, crate::evidence::CandidateResult::Fail, "{folder}");
                assert_eq!(v.gate.as_deref(), Some(gate), "{folder}");
                assert_eq!(v.check.as_deref(), Some("x"));
            }
        }

        #[test]
        fn next_step_leaves_out_only_candidates_the_run_knows() {
            let cat = candidate_chain();
            let candidates: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
            let failed = |checks: Vec<Check>| {
                crate::evidence::testing::gate("admission", GateResult::Fail, true, checks)
            };
            // A check naming a folder the run does not have is gate-wide.
            let stranger = failed(vec![Check::fail("x", Some("zz"), "?")]);
            assert_eq!(
                next_step(&cat[2], &[(&cat[1], &stranger)], &candidates),
                Next::Blocked("prerequisite gate(s) did not pass: admission".into())
            );
            // A failed gate with no failing check (observed nothing) is gate-wide.
            let nothing = failed(Vec::new());
            assert!(matches!(
                next_step(&cat[2], &[(&cat[1], &nothing)], &candidates),
                Next::Blocked(_)
            ));
            // A warning or a pass naming a candidate leaves nobody out.
            let one = failed(vec![
                Check::fail("x", Some("a"), "refused"),
                Check::warn("y", Some("b"), "note"),
            ]);
            assert_eq!(
                next_step(&cat[2], &[(&cat[1], &one)], &candidates),
                Next::Run {
                    left_out: vec!["a".into()]
                }
            );
        }

        /// A required gate's record before [`judge`] sets its result.
        fn unjudged() -> GateRecord {
            crate::evidence::testing::gate("g", GateResult::Skipped, true, Vec::new())
        }

        #[test]
        fn a_consequence_counts_with_its_root_failure() {
            let root = Check::fail("record-rows", None, "row malformed");
            let consequence = Check::fail(
                "record-files",
                None,
                "not verified because its row is malformed",
            )
            .consequence_of("record-rows");
            let mut record = unjudged();
            judge(&mut record, vec![root.clone(), consequence.clone()], None);
            assert_eq!(record.result, GateResult::Fail);
            assert_eq!(
                record.reason.as_deref(),
                Some("1 of 2 checks failed (1 more not established as a consequence)")
            );
            // A consequence whose root did not fail is a failure of its own.
            let mut record = unjudged();
            judge(
                &mut record,
                vec![Check::pass("record-rows", None, "ok"), consequence],
                None,
            );
            assert_eq!(record.reason.as_deref(), Some("1 of 2 checks failed"));
            // A root in another candidate is not this consequence's root.
            let elsewhere = Check::fail("record-rows", Some("other"), "row malformed");
            let mine = Check::fail("record-files", Some("mine"), "x").consequence_of("record-rows");
            let mut record = unjudged();
            judge(&mut record, vec![elsewhere, mine.clone()], None);
            assert_eq!(record.reason.as_deref(), Some("2 of 2 checks failed"));
            // A gate-wide root (no candidate) is the root of every candidate's consequence.
            let gate_wide = Check::fail("record-rows", None, "runtime never healthy");
            let mut record = unjudged();
            judge(&mut record, vec![gate_wide, mine], None);
            assert_eq!(
                record.reason.as_deref(),
                Some("1 of 2 checks failed (1 more not established as a consequence)")
            );
            // No check at all is a failure, never a pass.
            let mut record = unjudged();
            judge(&mut record, Vec::new(), None);
            assert_eq!(record.result, GateResult::Fail);
            assert_eq!(
                record.reason.as_deref(),
                Some("the gate observed nothing to check")
            );
            // A pass takes its note from the headline check.
            let mut record = unjudged();
            judge(
                &mut record,
                vec![
                    Check::pass("x", None, "first line\nsecond"),
                    Check::pass("y", None, "other"),
                ],
                Some("x"),
            );
            assert_eq!(record.result, GateResult::Pass);
            assert_eq!(record.note.as_deref(), Some("first line"));
            assert_eq!(record.reason, None);
        }
    }
    use super::*;

    #[test]
    fn details_name_files_under_the_evidence_directory_as_dir() {
        let prefixes = vec!["/tmp/e".to_string(), "/private/tmp/e".to_string()];
        assert_eq!(
            relative_to_dir(
                "see /tmp/e/logs/a.log, /private/tmp/e/roots/x and /tmp/e; not /tmp/e2/x or /tmp/e.old",
                &prefixes
            ),
            "see DIR/logs/a.log, DIR/roots/x and DIR; not /tmp/e2/x or /tmp/e.old"
        );
    }

    #[test]
    fn normalized_absolute_removes_dot_and_dotdot_lexically() {
        assert_eq!(
            normalized_absolute(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            normalized_absolute(Path::new("../x")),
            cwd.parent().unwrap().join("x")
        );
    }

    #[test]
    fn python_hints_name_the_venv_interpreter_the_resolved_path_and_the_sdk_command() {
        let venv = tempfile::tempdir().unwrap();
        let bin = venv.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("python"), b"").unwrap();
        // A venv passed as a directory: its bin/python, not DIR/python.
        let err = check_python(Some(venv.path())).unwrap_err().0;
        assert!(
            err.contains(&format!("e.g. {}", bin.join("python").display())),
            "{err}"
        );
        // A missing relative path: the resolved path and `cargo xtask sdk`.
        let err = check_python(Some(Path::new("no-such-venv/bin/python")))
            .unwrap_err()
            .0;
        let resolved = std::env::current_dir()
            .unwrap()
            .join("no-such-venv/bin/python");
        assert!(
            err.contains(&format!("(resolved: {})", resolved.display())),
            "{err}"
        );
        assert!(err.contains("no such file"), "{err}");
        assert!(err.contains("`cargo xtask sdk`"), "{err}");
        // A bare name is looked up on PATH, as a shell would.
        let sh = check_python(Some(Path::new("sh"))).unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        let err = check_python(Some(Path::new("vcc-no-such-python")))
            .unwrap_err()
            .0;
        assert!(err.contains("looked up on PATH"), "{err}");
        assert!(
            !err.contains("/usr/bin:"),
            "the PATH itself is not printed: {err}"
        );
    }

    #[test]
    fn a_folder_set_aside_leaves_the_evidence_directory_for_a_sibling() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("ev");
        std::fs::create_dir_all(dir.join("roots/pycache/x")).unwrap();
        std::fs::write(dir.join("roots/pycache/x/a.pyc"), b"").unwrap();
        let aside = set_aside(&dir.join("roots/pycache"), &dir).expect("moved");
        assert_eq!(
            aside,
            base.path()
                .join(format!(".ev.pycache-{}", std::process::id()))
        );
        assert!(aside.join("x/a.pyc").is_file());
        assert!(!dir.join("roots/pycache").exists());
        assert!(dir.join("roots").is_dir());
        assert_eq!(set_aside(&dir.join("roots/pycache"), &dir), None);
    }

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_000_000), "2026-11-30T00:53:20Z");
    }

    #[test]
    fn evidence_dir_rules() {
        let repo = tempfile::tempdir().unwrap();
        assert!(check_evidence_dir(Path::new("rel/dir"), repo.path())
            .unwrap_err()
            .0
            .contains("absolute"));
        let inside = repo.path().join("ev");
        assert!(check_evidence_dir(&inside, repo.path())
            .unwrap_err()
            .0
            .contains("outside the repository"));
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("x"), b"").unwrap();
        assert!(check_evidence_dir(other.path(), repo.path())
            .unwrap_err()
            .0
            .contains("missing or empty"));
        let fresh = other.path().join("fresh");
        assert_eq!(check_evidence_dir(&fresh, repo.path()).unwrap(), fresh);
    }

    #[test]
    fn a_directory_another_run_writes_into_is_refused_naming_that_run() {
        let repo = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let dir = other.path().join("ev");
        std::fs::create_dir_all(&dir).unwrap();
        // Empty and held: the run gets as far as the lock, which refuses it.
        let held = evidence::lock::acquire(&dir).unwrap();
        assert_eq!(check_evidence_dir(&dir, repo.path()).unwrap(), dir);
        let me = std::process::id();
        let refused = evidence::lock::acquire(&dir).unwrap_err().to_string();
        assert!(
            refused.contains(&format!("pid {me} holds its lock")),
            "{refused}"
        );
        assert!(refused.contains(&dir.display().to_string()), "{refused}");
        // Written into and held: not fresh, and the holder is named.
        std::fs::write(dir.join("evidence.json"), b"{}").unwrap();
        let err = check_evidence_dir(&dir, repo.path()).unwrap_err().0;
        assert!(
            err.contains(&format!(
                "(a run, pid {me}, is writing into it now and holds its lock)"
            )),
            "{err}"
        );
        // Written into by a run that ended: not fresh, no holder to name.
        drop(held);
        let err = check_evidence_dir(&dir, repo.path()).unwrap_err().0;
        assert!(err.contains("found existing content;"), "{err}");
    }

    #[test]
    fn evidence_dir_is_judged_where_writes_land() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        // `..` after a missing folder: lands in the repository once created.
        let sneaky = base.join("missing/../repo/ev");
        assert!(check_evidence_dir(&sneaky, &repo)
            .unwrap_err()
            .0
            .contains("outside the repository"));
        // ...and after a missing folder reached through a symlink to the repo.
        std::os::unix::fs::symlink(&repo, base.join("link")).unwrap();
        let via_link = base.join("missing/../link/ev");
        assert!(check_evidence_dir(&via_link, &repo)
            .unwrap_err()
            .0
            .contains("outside the repository"));
        // `..` through existing folders resolves to where writes land.
        let ok = base.join("other/../ev");
        std::fs::create_dir_all(base.join("other")).unwrap();
        assert_eq!(check_evidence_dir(&ok, &repo).unwrap(), base.join("ev"));
        // A non-empty directory reached through `..` is not fresh.
        std::fs::create_dir_all(base.join("old")).unwrap();
        std::fs::write(base.join("old/x"), b"").unwrap();
        assert!(check_evidence_dir(&base.join("missing/../old"), &repo)
            .unwrap_err()
            .0
            .contains("missing or empty"));
        // A dangling symlink on the way is named.
        std::os::unix::fs::symlink(repo.join("not-yet"), base.join("dangling")).unwrap();
        assert!(check_evidence_dir(&base.join("dangling/ev"), &repo)
            .unwrap_err()
            .0
            .contains("symlink"));
    }
}
