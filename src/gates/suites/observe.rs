//! What the `suites` gate observes: the profile's paths in the committed
//! tree, then the two pytest runs (`tree` and `extracted`), one after the other,
//! each in its own private copy of the tree with its own HOME/TMP, logs and
//! JUnit report, and DIR/extracted's digests before and after both.
//!
//! Nothing here judges: every fact goes into an [`Observation`]
//! (`record.rs`, plain data) that [`super::decide`] turns into checks. The
//! one judgement observing needs, which failed tests a rerun repeats, it
//! asks of `reruns::next_request` (a pure function of the runs so far); no
//! decision file reads this one.

use super::junit::parse_junit;
use super::record::{
    CollectAnswer, Collection, CollectionObs, ExtractionObservation, Observation, ProcessRun,
    PytestObs, RunObservation,
};
use super::xfail_map;
use crate::context::RunContext;
use crate::evidence::sandbox::{LeftRunning, Network, SandboxRecord};
use crate::evidence::SuiteTestCase;
use crate::isolation::left_running;
use crate::isolation::sandbox::{self, SandboxPlan};
use crate::process::{self, ChildSpec, RunError};
use crate::profile::SuitesOptions;
use crate::python;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One run: what its private copy is made of, and how its interpreter is
/// set up. The repository-level runs copy the staged tree and set nothing
/// else; a candidate's runs (`suites/candidates.rs`) copy its folder or its
/// extraction, run as from that folder and see its dependency environment.
pub(super) struct RunPlan {
    /// `tree`, `extracted`, `<folder>/tree`, `<folder>/extracted`.
    pub name: String,
    /// Absolute value of the source-root variable, if set.
    pub source_root: Option<PathBuf>,
    /// The folder the run's private copy is made from.
    pub source: PathBuf,
    /// Files (relative, `/`-separated) copied into the private copy from
    /// `added_from` after `source` was copied: those `source` lacks.
    pub added: Vec<String>,
    /// Where `added` comes from.
    pub added_from: PathBuf,
    /// The driver puts the run's copy first on `sys.path`, as `python -m
    /// pytest` run from that folder does.
    pub copy_first_on_path: bool,
    /// Folders the driver appends to `sys.path`, after the interpreter's
    /// own site-packages (read-only in the sandbox).
    pub path_last: Vec<PathBuf>,
    /// The interpreter.
    pub python: PathBuf,
}

impl RunPlan {
    /// A repository-level run: a copy of the staged tree `staged`, nothing
    /// added, the run's interpreter `ctx.python`.
    fn repository(name: &str, source_root: Option<PathBuf>, staged: &Path, python: &Path) -> Self {
        Self {
            name: name.to_string(),
            source_root,
            source: staged.to_path_buf(),
            added: Vec::new(),
            added_from: staged.to_path_buf(),
            copy_first_on_path: false,
            path_last: Vec::new(),
            python: python.to_path_buf(),
        }
    }
}

/// The tree run of the repository-level runs, with the sandbox inputs it
/// was run with, handed on to [`observe`].
pub(super) struct TreeRun {
    run: Result<RunObservation, String>,
    inputs: SandboxInputs,
}

/// Whether the repository-level runs cannot run: a path of `opts` missing
/// from `staged`, or a configuration file it names.
fn cannot_run(opts: &SuitesOptions, staged: &Path) -> bool {
    opts.paths.iter().any(|p| !staged.join(p).exists())
        || opts
            .config
            .as_ref()
            .is_some_and(|c| !staged.join(c).is_file())
}

/// Runs the suites against the private copy of the committed tree `staged`
/// (the run named `tree`), which needs only the staged source and the
/// verified interpreter, so the pipeline can start it before the archives
/// are built (catalogue `early_requires`). `None` when the repository-level
/// runs cannot run ([`observe`] then says why).
///
/// # Errors
/// A sentence when the gate's own machinery fails (a private root cannot be
/// written, the interpreter's paths cannot be read).
pub(super) fn observe_tree(
    ctx: &RunContext,
    opts: &SuitesOptions,
    staged: &Path,
) -> Result<Option<TreeRun>, String> {
    if cannot_run(opts, staged) {
        return Ok(None);
    }
    let private_config = private_config_path(ctx);
    if opts.config.is_none() {
        write_private_config(ctx)?;
    }
    // The tree run reads no archive: DIR/extracted is not in its sandbox.
    let inputs = SandboxInputs::observe(ctx, &ctx.python, &private_config)?;
    let plan = RunPlan::repository("tree", None, staged, &ctx.python);
    let run = observe_run(ctx, opts, &private_config, &inputs, &plan);
    Ok(Some(TreeRun { run, inputs }))
}

/// Observes the suites of `opts` against the staged tree `staged`: the tree
/// run (`tree`, the one [`observe_tree`] made earlier, else made now), then
/// the run against DIR/extracted, one after the other as the repository's
/// own checks run them.
///
/// # Errors
/// A sentence when the gate's own machinery fails (a private root cannot be
/// written, DIR/extracted cannot be digested, the run was interrupted).
pub(super) fn observe(
    ctx: &RunContext,
    opts: &SuitesOptions,
    staged: &Path,
    tree: Option<TreeRun>,
) -> Result<Observation, String> {
    let mut obs = Observation {
        commit: ctx.source.commit.clone(),
        missing_paths: opts
            .paths
            .iter()
            .filter(|p| !staged.join(p).exists())
            .cloned()
            .collect(),
        missing_historical: opts
            .historical
            .iter()
            .filter(|p| !staged.join(p).is_file())
            .cloned()
            .collect(),
        config_present: opts.config.as_ref().map(|c| staged.join(c).is_file()),
        runs: Vec::new(),
        extraction: None,
    };
    let tree = match tree {
        Some(tree) => Some(tree),
        None => observe_tree(ctx, opts, staged)?,
    };
    let Some(TreeRun { run: tree, inputs }) = tree else {
        return Ok(obs);
    };
    let private_config = private_config_path(ctx);
    // `suites` has scope `whole`: the pipeline never runs it in a
    // `--partition` run, so DIR/extracted holds every candidate here.
    let root = ctx.extracted_root();
    let extracted_plan = RunPlan::repository("extracted", Some(root.clone()), staged, &ctx.python);
    let (entries, dirs) = list_root(&root);
    // The digests bracket the extraction run: a write to DIR/extracted by it
    // is a change it cannot rule out (the tree run never sees DIR/extracted).
    let before = crate::hash::tree_digests(&root)?;
    // After the tree run, never beside it: side by side on a small machine
    // each took CPU from the other's timing-sensitive tests, and the
    // extracted run failed a pid-file race the repository's own run passes
    // (docs/trust-boundary.md).
    let extracted = observe_run(
        ctx,
        opts,
        &private_config,
        &inputs.with_read_only(root.clone()),
        &extracted_plan,
    );
    let after = crate::hash::tree_digests(&root)?;
    obs.runs = vec![tree?, extracted?];
    obs.extraction = Some(ExtractionObservation {
        root: root.display().to_string(),
        candidates: super::this_groups_candidates(ctx)
            .map(|c| c.folder().to_string())
            .collect(),
        entries,
        dirs,
        before,
        after,
    });
    Ok(obs)
}

/// `DIR/roots/suites/pytest.ini`.
fn private_config_path(ctx: &RunContext) -> PathBuf {
    ctx.evidence_dir
        .join("roots")
        .join("suites")
        .join("pytest.ini")
}

/// Writes the empty private pytest configuration the runs get when the
/// profile names none (a candidate's runs always), and returns its path.
///
/// # Errors
/// When it cannot be written.
pub(super) fn write_private_config(ctx: &RunContext) -> Result<PathBuf, String> {
    let path = private_config_path(ctx);
    std::fs::create_dir_all(path.parent().unwrap_or(&ctx.evidence_dir))
        .and_then(|()| {
            std::fs::write(
                &path,
                "# Written by verify-coding-candidates: the profile names no pytest configuration.\n[pytest]\n",
            )
        })
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// The names of `root`'s entries (or why they cannot be read), and those of
/// them that are directories.
pub(super) fn list_root(root: &Path) -> (Result<Vec<String>, String>, Vec<String>) {
    match std::fs::read_dir(root) {
        Ok(read) => {
            let mut entries = Vec::new();
            let mut dirs = Vec::new();
            for e in read.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if root.join(&name).is_dir() {
                    dirs.push(name.clone());
                }
                entries.push(name);
            }
            entries.sort();
            dirs.sort();
            (Ok(entries), dirs)
        }
        Err(e) => (Err(e.to_string()), Vec::new()),
    }
}

/// What a run's sandbox reads: whether bwrap is usable, and the read-only
/// inputs (the interpreter's folders, the run's bytecode cache, the private
/// pytest configuration, and DIR/extracted for the runs that read it:
/// [`SandboxInputs::with_read_only`]).
pub(super) struct SandboxInputs {
    available: &'static sandbox::Availability,
    read_only: Vec<PathBuf>,
}

impl SandboxInputs {
    /// The inputs of runs with the interpreter `python`.
    pub(super) fn observe(
        ctx: &RunContext,
        python: &Path,
        private_config: &Path,
    ) -> Result<Self, String> {
        let log_dir = ctx.evidence_dir.join("logs").join("sandbox");
        let available = sandbox::availability(&log_dir);
        let mut read_only = match available {
            sandbox::Availability::Bwrap(_) => sandbox::interpreter_paths(
                python,
                &ctx.evidence_dir,
                &ctx.log_stem("suites", "interpreter-paths"),
            )?,
            sandbox::Availability::Unavailable(_) => Vec::new(),
        };
        let pycache = ctx.evidence_dir.join("roots").join("pycache");
        std::fs::create_dir_all(&pycache)
            .map_err(|e| format!("cannot create {}: {e}", pycache.display()))?;
        read_only.push(pycache);
        read_only.push(private_config.to_path_buf());
        Ok(Self {
            available,
            read_only,
        })
    }

    /// These inputs and `path`, read-only too (DIR/extracted for the runs
    /// that read the archives' extractions).
    pub(super) fn with_read_only(&self, path: PathBuf) -> Self {
        let mut read_only = self.read_only.clone();
        read_only.push(path);
        Self {
            available: self.available,
            read_only,
        }
    }
}

/// Copies the staged tree and runs pytest once, in one process whose
/// driver (`suites_run.py`) records the collection of that very run, in a
/// sandbox where only the run's private root is writable: its reports are
/// written under `DIR/roots/suites/<run>/out/` and moved to `DIR/logs/suites/`
/// once the sandbox has ended.
pub(super) fn observe_run(
    ctx: &RunContext,
    opts: &SuitesOptions,
    private_config: &Path,
    inputs: &SandboxInputs,
    plan: &RunPlan,
) -> Result<RunObservation, String> {
    let name = plan.name.as_str();
    let base = ctx.evidence_dir.join("roots").join("suites").join(name);
    let attempt = |dir: &Path| -> Result<RunSetup<'_>, String> {
        let tree = dir.join("source");
        copy_tree(&plan.source, &tree)?;
        for rel in &plan.added {
            let (from, to) = (plan.added_from.join(rel), tree.join(rel));
            to.parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::copy(&from, &to).map(|_| ()))
                .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
        }
        let (home, tmp, out_dir) = (dir.join("home"), dir.join("tmp"), dir.join("out"));
        for d in [&home, &tmp, &out_dir] {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let mut env = ctx.child_env(&home, &tmp);
        if let Some(root) = &plan.source_root {
            env.insert(opts.source_root_env.clone(), root.display().to_string());
        }
        Ok(RunSetup {
            ctx,
            opts,
            private_config,
            inputs,
            plan,
            base: base.clone(),
            tree,
            out_dir,
            env,
        })
    };
    let mut first = attempt(&base)?.invoke(name, &opts.paths)?;
    // Reruns of the tests the run failed (`[suites] retries`), each of
    // exactly those still failing, in the same sandbox with a fresh copy of
    // the tree and fresh HOME/TMP (`<run>/rerun-<k>/`): the conditions of
    // the first attempt, so a test that fails only on a first attempt in a
    // fresh state fails again.
    let mut reruns: Vec<RunObservation> = Vec::new();
    for k in 1..=opts.retries {
        let Some(request) = super::reruns::next_request(&first, &reruns) else {
            break;
        };
        let setup = attempt(&base.join(format!("rerun-{k}")))?;
        reruns.push(setup.invoke(&format!("{name}-rerun-{k}"), &request)?);
    }
    first.reruns = reruns;
    Ok(first)
}

/// The JUnit report's name in an attempt's `out/` folder, until it is moved
/// to `DIR/logs/suites/<run>.xml`.
const JUNIT_INSIDE: &str = "report.xml";

/// One pytest invocation's set-up: its copy of the tree, roots and
/// environment, and the run's sandbox (its writable root `base`, the run's
/// `DIR/roots/suites/<run>`).
struct RunSetup<'a> {
    ctx: &'a RunContext,
    opts: &'a SuitesOptions,
    private_config: &'a Path,
    inputs: &'a SandboxInputs,
    plan: &'a RunPlan,
    base: PathBuf,
    tree: PathBuf,
    out_dir: PathBuf,
    env: BTreeMap<String, String>,
}

/// `PYTHONPATH` for the processes a candidate's tests start (`sys.executable`
/// on a script of theirs), when the candidate has a dependency environment:
/// the verified SDK's site-packages, then that environment, as the SDK's own
/// worker launcher sets it (`runtime_import_root`, then the dependency
/// site-packages), so such a process imports the candidate's requirements
/// as one started by the plugin's host would, and nothing of the dependency
/// environment stands in for the SDK. pytest itself runs `-I` and ignores it
/// (the driver appends `path_last` to its `sys.path`). `None` for a run
/// without a dependency environment.
fn child_pythonpath(sdk_site_packages: Option<&Path>, plan: &RunPlan) -> Option<String> {
    if plan.path_last.is_empty() {
        return None;
    }
    let parts: Vec<String> = sdk_site_packages
        .into_iter()
        .chain(plan.path_last.iter().map(PathBuf::as_path))
        .map(|p| p.display().to_string())
        .collect();
    Some(parts.join(":"))
}

/// The environment of one pytest run: the run's private one, no `pytest11`
/// entry point of any installed distribution loading by itself (only the
/// plugins the profile names, by module name), and [`child_pythonpath`].
fn run_env(
    ctx: &RunContext,
    plan: &RunPlan,
    env: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env = env.clone();
    env.insert("PYTEST_DISABLE_PLUGIN_AUTOLOAD".into(), "1".into());
    let sdk = ctx.verified_sdk.as_ref().map(|s| s.site_packages.as_path());
    if let Some(path) = child_pythonpath(sdk, plan) {
        env.insert("PYTHONPATH".into(), path);
    }
    env
}

impl RunSetup<'_> {
    /// Runs pytest on `selection` (the profile's paths, or a rerun's node
    /// ids) as the invocation `name` (`tree`, `tree-rerun-1`: its logs,
    /// report and collection record are `DIR/logs/suites/<name>.*`).
    fn invoke(&self, name: &str, selection: &[String]) -> Result<RunObservation, String> {
        let RunSetup {
            ctx,
            opts,
            private_config,
            inputs,
            plan,
            ref base,
            ref tree,
            ref out_dir,
            ref env,
        } = *self;
        let env = run_env(ctx, plan, env);
        let tree = tree.clone();
        let timeout = Duration::from_secs(opts.timeout_secs);
        let rel = |p: &Path| relative_to(&ctx.evidence_dir, p);
        let files = RunFiles::prepare(ctx, out_dir, name)?;
        debug_assert_eq!(out_dir.parent(), tree.parent());
        let args = driver_args(
            opts,
            private_config,
            plan,
            &tree,
            selection,
            &files.record_inside,
        );
        let log_stem = ctx.log_stem("suites", name);
        let spec = ChildSpec {
            program: plan.python.clone(),
            args,
            cwd: tree.clone(),
            env,
            timeout,
            log_stem: log_stem.clone(),
            stdin: None,
        };
        let (spec, sandbox) = sandbox::confine(
            spec,
            &sandbox_plan(inputs, plan, base, &files.survey_inside),
            inputs.available,
        );
        // The suites get the CPU first: every other step of the run is idle
        // while pytest runs (`process::priority`).
        let foreground = process::priority::foreground();
        let ran = if sandbox.confined() {
            process::run_sandboxed(&spec)
        } else {
            process::run(&spec)
        };
        drop(foreground);
        let left_running = files.collect(&sandbox)?;
        let (mut collection, pytest) =
            process_outcome(ran, &files.record_abs, &rel(&files.record_abs), &log_stem)?;
        if let CollectAnswer::Collected(c) = &mut collection.answer {
            mark_historical(c, &tree, &opts.historical);
        }
        if collection.process.timed_out
            || sandbox::supervisor_killed(&sandbox, &collection.process.status)
        {
            collection.process.running = running_test(&files.record_inside);
        }
        let (junit_written, report) = files.read_report(&collection.answer);
        Ok(RunObservation {
            name: name.to_string(),
            cwd: rel(&tree),
            source_root: plan.source_root.as_deref().map(rel),
            python: plan.python.display().to_string(),
            timeout_secs: opts.timeout_secs,
            collection,
            pytest,
            junit_rel: files.junit_rel,
            junit_written,
            report,
            sandbox,
            left_running,
            reruns: Vec::new(),
        })
    }
}

/// `p` relative to `dir` (the evidence directory), else as it is.
fn relative_to(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_else(|_| p.display().to_string())
}

/// The sandbox of one run: the inputs and the plan's folders for the end
/// of the path read-only, the run's `base` writable, a private loopback
/// network, and the survey of what it left running written to `survey`.
fn sandbox_plan(inputs: &SandboxInputs, plan: &RunPlan, base: &Path, survey: &Path) -> SandboxPlan {
    SandboxPlan {
        read_only: inputs
            .read_only
            .iter()
            .chain(&plan.path_last)
            .cloned()
            .collect(),
        writable: vec![base.to_path_buf()],
        network: Network::PrivateLoopback,
        survey: Some(survey.to_path_buf()),
    }
}

/// The interpreter's arguments for one run: `-I`, the bytecode options and
/// the suites' driver, given pytest's arguments (its JUnit report written
/// to `../out`, quiet), the collection record's path inside the run
/// (`record_inside`) and the driver's settings.
fn driver_args(
    opts: &SuitesOptions,
    private_config: &Path,
    plan: &RunPlan,
    tree: &Path,
    selection: &[String],
    record_inside: &Path,
) -> Vec<String> {
    let mut pytest_args = pytest_args(opts, private_config, tree, selection);
    pytest_args.push(format!("--junitxml=../out/{JUNIT_INSIDE}"));
    pytest_args.push("-q".into());
    let mut args: Vec<String> = vec!["-I".into()];
    args.extend(python::bytecode_options());
    args.extend([
        "-c".to_string(),
        python::SUITES_RUN_DRIVER.to_string(),
        serde_json::to_string(&pytest_args).expect("strings serialise"),
        record_inside.display().to_string(),
        driver_settings(opts, tree, plan).to_string(),
    ]);
    args
}

/// pytest's arguments: the `selection`, the profile's plugins, no cache
/// provider, rootdir `.`, and the configuration (the profile's file in
/// the run's copy `tree`, else the private empty one, conftests cut at the
/// rootdir).
fn pytest_args(
    opts: &SuitesOptions,
    private_config: &Path,
    tree: &Path,
    selection: &[String],
) -> Vec<String> {
    let mut pytest_args: Vec<String> = selection.to_vec();
    for plugin in &opts.pytest_plugins {
        pytest_args.extend(["-p".to_string(), plugin.clone()]);
    }
    // pytest expands environment variables in `--rootdir` and
    // `--junitxml` (`os.path.expandvars`, pytest#3127): an evidence
    // directory whose path holds `$HOME` would name another folder. The
    // run's cwd is its copy of the tree, so both are given relative to
    // it, and no `$` of DIR's path reaches pytest's expansion (`-c` and
    // `--confcutdir` are made absolute without expanding, pytest 9.2).
    pytest_args.extend(["-p", "no:cacheprovider", "--rootdir", "."].map(String::from));
    pytest_args.push("-c".into());
    match &opts.config {
        Some(config) => pytest_args.push(tree.join(config).display().to_string()),
        None => {
            pytest_args.push(private_config.display().to_string());
            pytest_args.push("--confcutdir".into());
            pytest_args.push(".".into());
        }
    }
    pytest_args
}

/// The files of one pytest invocation: what it writes in its attempt's
/// `out/` folder, and where each is kept in `DIR/logs/suites/`.
struct RunFiles {
    junit_abs: PathBuf,
    junit_rel: String,
    record_abs: PathBuf,
    junit_inside: PathBuf,
    survey_inside: PathBuf,
    survey_abs: PathBuf,
    record_inside: PathBuf,
}

impl RunFiles {
    /// Names the files of invocation `name`, removes what an earlier
    /// invocation left under those names, and creates their folders.
    fn prepare(ctx: &RunContext, out_dir: &Path, name: &str) -> Result<RunFiles, String> {
        let junit_abs = ctx
            .evidence_dir
            .join("logs")
            .join("suites")
            .join(format!("{name}.xml"));
        let junit_rel = format!("logs/suites/{name}.xml");
        let record_abs = ctx
            .evidence_dir
            .join("logs")
            .join("suites")
            .join(format!("{name}-collection.json"));
        // A record this run did not write must not stand for it.
        match std::fs::remove_file(&record_abs) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot remove {}: {e}", record_abs.display()))
            }
            _ => {}
        }
        // One report per attempt folder (`<attempt>/out/`, beside the tree
        // copy `<attempt>/source/`, the run's cwd): a fixed name, relative,
        // so that neither DIR's path nor a candidate folder's name is
        // expanded by pytest.
        let junit_inside = out_dir.join(JUNIT_INSIDE);
        let survey_inside = out_dir.join(format!("{name}-left-running.json"));
        let survey_abs = junit_abs.with_file_name(format!(
            "{}-left-running.json",
            Path::new(name)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
        ));
        left_running::clear(&survey_inside)?;
        left_running::clear(&survey_abs)?;
        let record_inside = out_dir.join(format!("{name}-collection.json"));
        // A candidate's run names are `<folder>/tree`: their files sit in a
        // folder per candidate.
        for file in [&junit_abs, &junit_inside, &record_inside] {
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
        }
        Ok(RunFiles {
            junit_abs,
            junit_rel,
            record_abs,
            junit_inside,
            survey_inside,
            survey_abs,
            record_inside,
        })
    }

    /// Once the sandbox has ended: its init's survey read and kept (when the
    /// run was confined), and what the run wrote moved to the logs.
    fn collect(&self, sandbox: &SandboxRecord) -> Result<Option<LeftRunning>, String> {
        let left_running = sandbox
            .confined()
            .then(|| left_running::read(&self.survey_inside));
        if let Some(found) = &left_running {
            left_running::keep(found, &self.survey_abs)?;
        }
        for (inside, logged) in [
            (&self.junit_inside, &self.junit_abs),
            (&self.record_inside, &self.record_abs),
        ] {
            if inside.is_file() {
                std::fs::rename(inside, logged).map_err(|e| {
                    format!(
                        "cannot move {} to {}: {e}",
                        inside.display(),
                        logged.display()
                    )
                })?;
            }
        }
        Ok(left_running)
    }

    /// Whether pytest wrote its JUnit report, and its testcases (xfails as
    /// the collection `answer` evaluated them) or why they cannot be read.
    fn read_report(&self, answer: &CollectAnswer) -> (bool, Result<Vec<SuiteTestCase>, String>) {
        let xfails = match answer {
            CollectAnswer::Collected(c) => xfail_map(c),
            _ => Default::default(),
        };
        let junit_rel = &self.junit_rel;
        let junit_written = self.junit_abs.is_file();
        let report = if junit_written {
            std::fs::read_to_string(&self.junit_abs)
                .map_err(|e| format!("{junit_rel}: cannot read: {e}"))
                .and_then(|text| parse_junit(&text, &xfails))
        } else {
            Err(format!("pytest wrote no JUnit report ({junit_rel})"))
        };
        (junit_written, report)
    }
}

/// How the run's process ended, with the collection record it wrote
/// (`record_abs`, `record_rel` relative to DIR), or why it did not start.
///
/// # Errors
/// The run was interrupted.
fn process_outcome(
    ran: Result<process::ChildOutput, RunError>,
    record_abs: &Path,
    record_rel: &str,
    log_stem: &Path,
) -> Result<(CollectionObs, PytestObs), String> {
    Ok(match ran {
        Ok(out) => {
            let exit_code = if out.timed_out {
                None
            } else {
                out.status.code()
            };
            let process = ProcessRun {
                status: out.describe(),
                exit_code,
                timed_out: out.timed_out,
                tail: output_tail(&out.stdout_text(), &out.stderr_text()),
                log: format!("{} and {}", out.logs.0.display(), out.logs.1.display()),
                running: None,
            };
            let pytest = PytestObs::Ran {
                exit_code,
                status: out.describe(),
                timed_out: out.timed_out,
                stragglers_killed: out.stragglers_killed,
                log: out.logs.0.display().to_string(),
            };
            let answer = read_record(record_abs, record_rel);
            (CollectionObs { process, answer }, pytest)
        }
        Err(e @ RunError::Interrupted { .. }) => return Err(e.to_string()),
        Err(e) => (
            CollectionObs {
                process: ProcessRun {
                    status: "not started".into(),
                    exit_code: None,
                    timed_out: false,
                    tail: String::new(),
                    log: log_stem.display().to_string(),
                    running: None,
                },
                answer: CollectAnswer::NoReport {
                    error: e.to_string(),
                },
            },
            PytestObs::NotRun {
                error: e.to_string(),
            },
        ),
    })
}

/// The driver's argv[3] (`suites_run.py`): the hooks whose implementations
/// its record lists (the gate's lists, the one source of those names), and
/// what its scan of the test files reads: `paths` in the run's copy `tree`
/// (its rootdir), by the profile's naming rules or pytest's defaults.
fn driver_settings(opts: &SuitesOptions, tree: &Path, plan: &RunPlan) -> serde_json::Value {
    // In the lists' order, which is the order the checks name them in.
    let mut hooks: Vec<&str> = Vec::new();
    for hook in super::record::REPORTING_HOOKS
        .iter()
        .chain(super::record::SELECTION_HOOKS)
        .chain(super::record::COLLECTION_HOOKS)
    {
        if hook.starts_with("pytest_") && !hooks.contains(hook) {
            hooks.push(hook);
        }
    }
    let or = |v: &Option<Vec<String>>, d: &[&str]| {
        v.clone()
            .unwrap_or_else(|| d.iter().map(|s| (*s).to_string()).collect())
    };
    let mut settings = serde_json::json!({
        "hooks": hooks,
        "scan": {
            "rootdir": tree.display().to_string(),
            "paths": opts.paths,
            "python_files": or(&opts.python_files, &["test_*.py", "*_test.py"]),
            "python_functions": or(&opts.python_functions, &["test"]),
            "python_classes": or(&opts.python_classes, &["Test"]),
        },
    });
    // The repository-level `extracted` run: which candidates' extractions
    // the run read (`touched` in the record), for `[suites] covers`.
    if let Some(root) = &plan.source_root {
        settings["watch"] = serde_json::json!(root.display().to_string());
    }
    // Only a candidate's runs carry these (the repository-level runs' settings
    // are unchanged).
    if plan.copy_first_on_path {
        settings["path_first"] = serde_json::json!([tree.display().to_string()]);
    }
    if !plan.path_last.is_empty() {
        settings["path_last"] = plan
            .path_last
            .iter()
            .map(|p| p.display().to_string())
            .collect();
    }
    settings
}

/// What the run's collection record at `path` (`rel`: relative to DIR)
/// says: see `suites_run.py`.
pub(super) fn read_record(path: &Path, rel: &str) -> CollectAnswer {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return CollectAnswer::NoReport {
                error: format!(
                    "it wrote no collection record ({rel}), so pytest never finished collecting"
                ),
            }
        }
        Err(e) => {
            return CollectAnswer::NoReport {
                error: format!("its collection record {rel} cannot be read: {e}"),
            }
        }
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(v) if v.get("pytest_missing").is_some() => CollectAnswer::PytestMissing {
            error: v["pytest_missing"].as_str().unwrap_or_default().to_string(),
        },
        Ok(v) => match serde_json::from_value::<Collection>(v) {
            Ok(c) => CollectAnswer::Collected(c),
            Err(e) => CollectAnswer::NoReport {
                error: format!("its collection record {rel} has an unexpected shape: {e}"),
            },
        },
        Err(e) => CollectAnswer::NoReport {
            error: format!("its collection record {rel} is not one JSON document: {e}"),
        },
    }
}

/// The last lines of the run's stdout (pytest's report) then of its stderr,
/// each up to 8, joined by ` | ` within and ` || ` between; empty streams
/// are left out.
pub(super) fn output_tail(stdout: &str, stderr: &str) -> String {
    let last = |s: &str| {
        let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(8)..].join(" | ")
    };
    [last(stdout), last(stderr)]
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" || ")
}

/// Marks each collected item whose file or source file is one of the
/// `historical` files (by path or canonical path, in the run's copy `tree`).
fn mark_historical(c: &mut Collection, tree: &Path, historical: &[String]) {
    let files: Vec<(&String, PathBuf, Option<PathBuf>)> = historical
        .iter()
        .map(|rel| {
            let abs = tree.join(rel);
            let canonical = abs.canonicalize().ok();
            (rel, abs, canonical)
        })
        .collect();
    let matches = |path: &str| -> Option<String> {
        let p = Path::new(path);
        let canonical = p.canonicalize().ok();
        files
            .iter()
            .find(|(_, abs, canon)| {
                p == abs || (canonical.is_some() && canonical.as_ref() == canon.as_ref())
            })
            .map(|(rel, ..)| (*rel).clone())
    };
    for item in &mut c.items {
        item.historical =
            matches(&item.path).or_else(|| item.source_file.as_deref().and_then(&matches));
    }
}

/// The node id the driver wrote to `<record>.running` (the test running
/// when the run was stopped), if any.
fn running_test(record: &Path) -> Option<String> {
    let path = PathBuf::from(format!("{}.running", record.display()));
    let text = std::fs::read_to_string(path).ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.chars().take(500).collect())
}

/// Copies `src` into `dst` (created): directories, regular files (with their
/// permissions) and symlinks as symlinks with the same target.
///
/// # Errors
/// A sentence naming the entry that could not be copied.
pub(super) fn copy_tree(src: &Path, dst: &Path) -> Result<(), String> {
    for entry in walkdir::WalkDir::new(src).sort_by_file_name() {
        let entry = entry.map_err(|e| format!("cannot walk {}: {e}", src.display()))?;
        let rel = entry.path().strip_prefix(src).map_err(|e| e.to_string())?;
        let target = dst.join(rel);
        let kind = entry.file_type();
        let result = if kind.is_dir() {
            std::fs::create_dir_all(&target)
        } else if kind.is_symlink() {
            std::fs::read_link(entry.path())
                .and_then(|link| std::os::unix::fs::symlink(link, &target))
        } else {
            std::fs::copy(entry.path(), &target).map(|_| ())
        };
        result.map_err(|e| {
            format!(
                "cannot copy the committed tree entry {} to {}: {e}",
                entry.path().display(),
                target.display()
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn historical_items_are_marked_by_file_and_by_source_file() {
        let d = tempfile::tempdir().unwrap();
        let rel = "R/t/historical_x.py";
        std::fs::create_dir_all(d.path().join("R/t")).unwrap();
        std::fs::write(d.path().join(rel), "").unwrap();
        let item = |path: String, source: Option<String>| super::super::record::CollectedItem {
            nodeid: "R/t/test_a.py::test_x".into(),
            path,
            source_file: source,
            classname: "R.t.test_a".into(),
            name: "test_x".into(),
            xfail: None,
            historical: None,
        };
        let mut c = Collection {
            exit_code: 0,
            pytest_version: "9".into(),
            items: vec![
                item(d.path().join("R/t/test_a.py").display().to_string(), None),
                item(
                    d.path().join("R/t/test_a.py").display().to_string(),
                    Some(d.path().join(rel).display().to_string()),
                ),
                item(
                    d.path()
                        .join("R/t/../t/historical_x.py")
                        .display()
                        .to_string(),
                    None,
                ),
            ],
            errors: vec![],
            system_exit: None,
            tests_started: true,
            finished: true,
            observed: vec![],
            deselected: vec![],
            hooks: vec![],
            definitions: Default::default(),
            touched: vec![],
            collect_only: false,
        };
        mark_historical(&mut c, d.path(), &[rel.to_string()]);
        let marks: Vec<Option<&str>> = c.items.iter().map(|i| i.historical.as_deref()).collect();
        assert_eq!(marks, [None, Some(rel), Some(rel)]);
    }

    #[test]
    fn the_collection_record_is_read_and_its_absence_or_garbling_is_no_report() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("tree-collection.json");
        let rel = "logs/suites/tree-collection.json";
        let no_report = |answer: CollectAnswer| match answer {
            CollectAnswer::NoReport { error } => error,
            other => panic!("expected no report, got {other:?}"),
        };
        assert_eq!(
            no_report(read_record(&path, rel)),
            "it wrote no collection record (logs/suites/tree-collection.json), so pytest never finished collecting"
        );
        std::fs::write(&path, "{\"exit_code\": 0, \"items\": [").unwrap();
        assert!(no_report(read_record(&path, rel)).starts_with(
            "its collection record logs/suites/tree-collection.json is not one JSON document"
        ));
        std::fs::write(&path, r#"{"exit_code": "0"}"#).unwrap();
        assert!(no_report(read_record(&path, rel)).starts_with(
            "its collection record logs/suites/tree-collection.json has an unexpected shape"
        ));
        std::fs::write(
            &path,
            r#"{"pytest_missing": "ModuleNotFoundError: No module named 'pytest'"}"#,
        )
        .unwrap();
        assert!(matches!(
            read_record(&path, rel),
            CollectAnswer::PytestMissing { error } if error == "ModuleNotFoundError: No module named 'pytest'"
        ));
        // A record written at the end of the collection, before the session
        // ended: no `tests_started`/`finished` written means false.
        std::fs::write(
            &path,
            r#"{"exit_code": 0, "pytest_version": "9.2.0", "items": [], "errors": [], "system_exit": null}"#,
        )
        .unwrap();
        let CollectAnswer::Collected(c) = read_record(&path, rel) else {
            panic!("expected a collection");
        };
        assert!(!c.finished && !c.tests_started);
    }

    #[test]
    fn the_driver_is_passed_every_hook_the_gate_names_and_holds_no_list_of_its_own() {
        let opts: SuitesOptions =
            toml::from_str("paths = [\"R/t\"]\npython_functions = [\"check_\"]\n").unwrap();
        let plan = RunPlan::repository("tree", None, Path::new("/s"), Path::new("/p"));
        let settings = driver_settings(&opts, Path::new("/d/tree"), &plan);
        assert!(settings.get("path_first").is_none() && settings.get("path_last").is_none());
        let hooks: Vec<&str> = settings["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        let named = super::super::record::REPORTING_HOOKS
            .iter()
            .chain(super::super::record::SELECTION_HOOKS)
            .chain(super::super::record::COLLECTION_HOOKS);
        for hook in named {
            if hook.starts_with("pytest_") {
                assert!(hooks.contains(hook), "{hook} not passed: {hooks:?}");
                // `pytest_deselected` is also a word of the record's `via`.
                if *hook != "pytest_deselected" {
                    assert!(
                        !python::SUITES_RUN_DRIVER.contains(&format!("\"{hook}\"")),
                        "the driver names {hook} itself"
                    );
                }
            } else {
                // Conftest variables, which the driver reads by name.
                assert!(!hooks.contains(hook), "{hook}");
            }
        }
        assert_eq!(settings["scan"]["rootdir"], "/d/tree");
        assert_eq!(settings["scan"]["paths"][0], "R/t");
        assert_eq!(settings["scan"]["python_functions"][0], "check_");
        assert_eq!(
            settings["scan"]["python_files"],
            serde_json::json!(["test_*.py", "*_test.py"])
        );
        assert_eq!(settings["scan"]["python_classes"][0], "Test");
    }

    #[test]
    fn a_candidates_run_puts_its_copy_first_and_its_environment_last_on_sys_path() {
        let opts: SuitesOptions = toml::from_str("paths = [\"tests\"]\n").unwrap();
        let mut plan = RunPlan::repository("w/tree", None, Path::new("/s/w"), Path::new("/p"));
        plan.copy_first_on_path = true;
        plan.path_last = vec![PathBuf::from("/d/roots/dependencies/w/env/site-packages")];
        let settings = driver_settings(&opts, Path::new("/d/roots/suites/w/tree/source"), &plan);
        assert_eq!(
            settings["path_first"],
            serde_json::json!(["/d/roots/suites/w/tree/source"])
        );
        assert_eq!(
            settings["path_last"],
            serde_json::json!(["/d/roots/dependencies/w/env/site-packages"])
        );
        // The driver appends (never prepends) the environment, after its own
        // imports: the interpreter's site-packages, with the verified SDK,
        // come first.
        assert!(
            python::SUITES_RUN_DRIVER.contains("sys.path.extend(SETTINGS.get(\"path_last\", []))")
        );
    }

    #[test]
    fn processes_the_tests_start_see_the_sdk_then_the_dependency_environment() {
        let mut plan = RunPlan::repository("w/tree", None, Path::new("/s/w"), Path::new("/p"));
        let sdk = Path::new("/sdk/lib/python3.11/site-packages");
        assert_eq!(
            child_pythonpath(Some(sdk), &plan),
            None,
            "no environment, no PYTHONPATH"
        );
        plan.path_last = vec![PathBuf::from("/d/roots/dependencies/w/env/site-packages")];
        assert_eq!(
            child_pythonpath(Some(sdk), &plan).as_deref(),
            Some("/sdk/lib/python3.11/site-packages:/d/roots/dependencies/w/env/site-packages")
        );
        assert_eq!(
            child_pythonpath(None, &plan).as_deref(),
            Some("/d/roots/dependencies/w/env/site-packages")
        );
    }

    #[test]
    fn the_output_tail_holds_stdout_then_stderr() {
        let stdout: String = (1..=10).map(|i| format!("out {i}\n")).collect();
        assert_eq!(
            output_tail(&stdout, "Traceback\n\nSystemExit: 3\n"),
            "out 3 | out 4 | out 5 | out 6 | out 7 | out 8 | out 9 | out 10 || Traceback | SystemExit: 3"
        );
        assert_eq!(output_tail("", "ERROR: usage\n"), "ERROR: usage");
        assert_eq!(output_tail("1 passed\n", ""), "1 passed");
    }

    #[test]
    fn copy_tree_copies_files_and_links() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("a/b")).unwrap();
        std::fs::write(src.path().join("a/b/f.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink("b/f.py", src.path().join("a/link")).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let target = dst.path().join("copy");
        copy_tree(src.path(), &target).unwrap();
        let before = crate::hash::tree_digests(src.path()).unwrap();
        assert_eq!(crate::hash::tree_digests(&target).unwrap(), before);
        assert_eq!(before["a/link"], "-> b/f.py");
    }

    #[test]
    fn list_root_names_entries_and_directories() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("b")).unwrap();
        std::fs::write(d.path().join("a"), "").unwrap();
        let (entries, dirs) = list_root(d.path());
        assert_eq!(entries.unwrap(), ["a", "b"]);
        assert_eq!(dirs, ["b"]);
        let (entries, dirs) = list_root(&d.path().join("none"));
        assert!(entries.is_err());
        assert!(dirs.is_empty());
    }
}
