//! The `suites` gate: the repository's own pytest suites (profile `[suites]`),
//! run with the genuine interpreter twice:
//!
//! 1. `tree`: in a private copy of the committed tree (every committed
//!    file: DIR/staging/source, or DIR/staging/tree when some path carries
//!    export-ignore, copied to `DIR/roots/suites/tree/source`), the
//!    source-root variable unset, so the suites read the committed candidates;
//! 2. `extracted`: in a second private copy, with the source-root variable
//!    (`CODING_RUNNER_SOURCE_ROOT`) set to DIR/extracted, whose children are
//!    the exact extractions of the archives: the suites test what ships.
//!
//! Each run is one process, `python -I -X pycache_prefix=DIR/roots/pycache -c
//! <suites_run.py> '<pytest args>' DIR/logs/suites/<run>-collection.json`,
//! whose driver calls `pytest.main([<paths>, -p no:cacheprovider, --rootdir
//! ., -c <config>, --junitxml ../out/report.xml, -q],
//! plugins=[recorder])` with a private HOME/TMP, the allowlisted environment
//! plus the source-root variable, its own process group and the profile's
//! time limit (collection included); its exit status is pytest's. The
//! recorder writes the run's collection record (every item: file, source
//! file, JUnit names, the xfail that applies; collection errors; an exit a
//! conftest or plugin called) when pytest finishes collecting and again when
//! the session ends, so the items judged are exactly those the run collected
//! and executed: a conftest that collects differently when only collecting
//! cannot show the gate another set.
//!
//! Outcomes come from the run's JUnit report, in pytest's shapes (checked
//! against pytest 9): an xfail is `<skipped type="pytest.xfail">`, counted as
//! an expected failure and never as a pass; a strict XPASS is a `<failure>`
//! whose message starts with `[XPASS(strict)]`; a non-strict XPASS is a plain
//! testcase, recognised through the collection record's xfail.
//!
//! Checks per run (`<run>/...`): `collected` (pytest collected at least one
//! item and no collection error; exit 5 fails), `historical-not-collected`
//! (no item of a historical file, by the recorded item's file and source
//! file and by the report's classnames), `outcomes` (exit status 0, no
//! failure or error, a session pytest ended itself, one testcase for every
//! recorded item and no pass that is not one: a suite that stops its
//! session early with `pytest.exit(returncode=0)` fails), `passing` (at least one test passed: skips, xfails and
//! XPASSes are not passes, so an all-skipped suite fails), `strict-xfail` (no
//! strict xfail passed or was reported as a pass), and for `extracted` also
//! `source-root` (DIR/extracted holds exactly the candidate folders) and
//! `extraction-unchanged` (the extraction run did not modify DIR/extracted;
//! the tree run never sees it: it is not in that run's sandbox). After both
//! runs, `extracted/same-outcomes`: both reports hold the same test ids
//! (`classname::name`) with the same outcomes, so fewer passes on
//! DIR/extracted than on the tree fail, naming the ids that differ.
//! Per run also `observed-outcomes` (`suites/rewrites.rs`: every reported
//! outcome, in the JUnit report and in the reports logged to the run's own
//! plugin, is what that plugin observed of the test's phases and its test
//! function, so a conftest rewriting a report fails) and `deselected`
//! (`suites/deselection.rs`: every collected test runs unless `[suites]
//! deselected` declares it), and `uncollected` (`suites/uncollected.rs`:
//! every test the suites' files define, as the driver reads them with
//! `ast` before pytest imports the repository, was collected or is
//! declared), and `pytest-patches` (`suites/patches.rs`: a warning
//! naming each statement of the run's tree that assigns to pytest's objects
//! or the run's plugin, the known shape of same-interpreter forging).
//! `observed-outcomes` also fails a test whose call did not run
//! the callable its collection ended with through the plugin's wrapper.
//! Warnings: `xpassed` (a non-strict xfail passed), `stragglers` (the run left
//! processes behind, which were stopped).
//!
//! Reruns (`suites/reruns.rs`, `[suites] retries`): a run whose failure is
//! nothing but failed tests reruns exactly those node ids, each rerun a
//! pytest run of its own in the same sandbox with a fresh copy of the tree
//! and fresh HOME/TMP (`DIR/roots/suites/<run>/rerun-<k>/`, logs
//! `DIR/logs/suites/<run>-rerun-<k>.*`). `<run>/reruns` warns naming each
//! test that passed in a sound rerun (flaky: counted as passed, in
//! `outcomes`, `passing` and `same-outcomes`), and fails when a rerun
//! collected anything but what it was given or reported an outcome its
//! plugin did not observe, or a test failed every rerun.
//!
//! `collected` names its cause, each with its own advice: an interpreter
//! that cannot import pytest (the one cause about `--python`), a run stopped
//! by the time limit before its collection finished or ended by the suites
//! themselves without a collection record, a conftest or plugin calling exit
//! (while collecting, or after the tests started), collection errors, a usage
//! or internal error of pytest, nothing collected. A suite that collected
//! but failed its run fails `outcomes`, whose advice is about the tests and
//! the candidates, never the interpreter.
//!
//! The two runs go one after the other (as the repository's own checks run
//! them; side by side they took CPU from each other's timing-sensitive
//! tests), each in its own private copy, roots,
//! logs and report; the evidence lists the tree run first. DIR/extracted's
//! digests are taken before both and after both.
//!
//! Each candidate's own tests (`suites/candidates.rs`): after the
//! repository-level runs, every selected candidate with tests
//! (`[[candidate]] tests`, else its `tests/` folder) gets two runs of its
//! own, `<folder>/tree` and `<folder>/extracted`, with the same checks
//! (named `<folder>/<run>/...`, each naming the candidate) and
//! `<folder>/extracted/same-outcomes`; a candidate without tests gets an
//! `<folder>/untested` warning. The gate runs for the candidates earlier
//! gates left in (`per_candidate_part` in the catalogue); when some were
//! left out, the repository-level runs, which read every candidate, are not
//! made and `repository-runs` fails naming them.
//!
//! Shape: [`observe`] (`suites/observe.rs`) runs pytest, reads its
//! collection record and report and returns an [`Observation`]; [`decide`]
//! is a pure function from it and the profile's `[suites]` options to the
//! checks; `suites/junit.rs` reads
//! pytest's report. When one finding makes others impossible (pytest
//! missing, a collection that failed, a run whose tests failed, a report
//! not written) the others name it in `consequence_of`.

mod candidates;
mod deselection;
mod junit;
mod kept;
mod observe;
mod patches;
mod record;
mod reruns;
mod rewrites;
#[cfg(test)]
mod tests;
mod uncollected;

pub(crate) use junit::parse_junit;
pub(crate) use kept::{kept_observation, NOT_REDECIDED as KEPT_NOT_REDECIDED};
pub(crate) use record::{
    CollectAnswer, Collection, ExtractionObservation, Observation, PytestObs, RunObservation,
};

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, SuiteCounts, SuiteOutcome, SuiteRun, SuiteTestCase, SuitesRecord};
use crate::profile::SuitesOptions;
use serde::Serialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The `suites` gate.
pub struct Suites;

/// Most bytes of a failure, error or skip text kept per testcase.
const TEXT_LIMIT: usize = 8 * 1024;

impl super::Gate for Suites {
    fn id(&self) -> &'static str {
        "suites"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        run_with(ctx, None, out)
    }

    /// The tree run at once (it needs only the staged source and the
    /// verified interpreter), then the rest once the archives are built and
    /// the dependencies prepared.
    fn run_early(
        &self,
        early: &RunContext,
        rest: &super::Rest,
        out: &mut Updates,
    ) -> Result<Vec<Check>, String> {
        let tree = match (&early.profile.profile.suites, staged_root(early)) {
            (Some(opts), Ok(staged)) if !early.group_run => {
                observe::observe_tree(early, opts, &staged)?
            }
            _ => None,
        };
        match rest.wait() {
            Some(ctx) => run_with(&ctx, tree, out),
            None => Ok(Vec::new()),
        }
    }
}

/// The commit's every file (export-ignored ones too: export attributes
/// decide what a build sees, not what the tests run on).
fn staged_root(ctx: &RunContext) -> Result<std::path::PathBuf, String> {
    ctx.committed_root.clone().or_else(|| ctx.staged_root.clone()).ok_or_else(|| {
        "the staged source is missing (the `stage` gate did not record DIR/staging/source); run `stage` first".into()
    })
}

/// The gate, with the tree run made already when the pipeline started the
/// gate early (`tree`).
fn run_with(
    ctx: &RunContext,
    tree: Option<observe::TreeRun>,
    out: &mut Updates,
) -> Result<Vec<Check>, String> {
    let mut opts = ctx.profile.profile.suites.clone();
    // A non-default SDK group's run: its candidates' own tests only. The
    // repository-level runs are the default group's run's, and its
    // DIR/extracted never holds this group's candidates, so `covers`
    // cannot apply to them (they are untested unless they have tests).
    if ctx.group_run {
        if let Some(o) = &mut opts {
            o.covers.clear();
        }
    }
    let staged = staged_root(ctx)?;
    // The candidates earlier gates failed (the pipeline runs this gate
    // for the others): the repository-level runs read every candidate.
    let left_out: Vec<String> = this_groups_candidates(ctx)
        .map(|c| c.folder().to_string())
        .filter(|f| !ctx.selected.iter().any(|s| s.folder() == f))
        .collect();
    let RepositoryRuns {
        mut checks,
        mut record,
        touched,
    } = repository_runs(ctx, opts.as_ref(), &staged, &left_out, tree)?;
    // Each candidate's own tests, one candidate after the other (after
    // the repository-level runs, which keep their place and names).
    let mut own = candidates::observe(ctx, opts.as_ref(), &staged)?;
    for c in own
        .iter_mut()
        .filter(|c| c.source == candidates::TestsSource::Repository)
    {
        c.read_by_repository_run = touched.as_ref().map(|t| t.contains(&c.folder));
    }
    for c in &own {
        let mut decided = candidates::decide(c, opts.as_ref());
        let requirement = sdk_requirement_line(&staged.join(&c.path));
        super::sdk_mismatch::annotate(
            &mut decided,
            &output_text(&c.runs),
            ctx.profile.profile.sdk.version(),
            Some(requirement.as_deref()),
        );
        checks.extend(decided);
    }
    add_own_runs(&mut record, &own, opts.as_ref());
    if let Some(record) = record {
        out.set(move |ctx| ctx.suites = Some(record));
    }
    Ok(checks)
}

/// What the repository-level runs decided.
struct RepositoryRuns {
    /// Their checks.
    checks: Vec<Check>,
    /// The suites record they start.
    record: Option<SuitesRecord>,
    /// The candidate folders the extraction's tests read (`None`: unknown
    /// or not run).
    touched: Option<Vec<String>>,
}

/// The repository-level runs, and what they decide: their checks, the
/// record they start, and the candidate folders the extraction's tests
/// read (`None` when unknown or not run). A non-default group's run has
/// none; a run with candidates left out by earlier gates has one check
/// saying so.
fn repository_runs(
    ctx: &RunContext,
    opts: Option<&SuitesOptions>,
    staged: &std::path::Path,
    left_out: &[String],
    tree: Option<observe::TreeRun>,
) -> Result<RepositoryRuns, String> {
    let mut checks = Vec::new();
    let mut record = None;
    let mut touched: Option<Vec<String>> = None;
    match opts {
        _ if ctx.group_run => {}
        None => checks.push(no_suites_check()),
        Some(_) if !left_out.is_empty() => checks.push(repository_runs_left_out(left_out)),
        Some(opts) => {
            let obs = observe::observe(ctx, opts, staged, tree)?;
            touched = extraction_read(&obs);
            let mut decided = decide(&obs, opts);
            super::sdk_mismatch::annotate(
                &mut decided,
                &output_text(&obs.runs),
                ctx.profile.profile.sdk.version(),
                None,
            );
            checks.extend(decided);
            record = Some(record_of(&obs, opts));
            if let Some(check) = other_groups_check(&ctx.profile.profile) {
                checks.push(check);
            }
        }
    }
    Ok(RepositoryRuns {
        checks,
        record,
        touched,
    })
}

/// Adds the candidates' own runs to the record (starting one when the
/// repository-level runs did not), and the pytest version from their
/// collections when the record has none yet.
fn add_own_runs(
    record: &mut Option<SuitesRecord>,
    own: &[candidates::CandidateObservation],
    opts: Option<&SuitesOptions>,
) {
    let own_runs: Vec<SuiteRun> = own
        .iter()
        .flat_map(|c| c.runs.iter().map(suite_run))
        .collect();
    if own_runs.is_empty() {
        return;
    }
    let record = record.get_or_insert_with(|| empty_record(opts));
    if record.pytest_version.is_none() {
        record.pytest_version = own
            .iter()
            .flat_map(|c| &c.runs)
            .find_map(|r| collection(r).map(|c| c.pytest_version.clone()));
    }
    record.runs.extend(own_runs);
}

/// What `runs` printed that may name an SDK mismatch: each collection's
/// output tail and every reported testcase's message and text.
fn output_text(runs: &[RunObservation]) -> String {
    let mut out = String::new();
    for r in runs {
        out.push_str(&r.collection.process.tail);
        out.push('\n');
        for t in r.report.iter().flatten() {
            for s in [&t.message, &t.text].into_iter().flatten() {
                out.push_str(s);
                out.push('\n');
            }
        }
    }
    out
}

/// The `langbot-plugin` line of `folder/requirements.txt`, if any.
fn sdk_requirement_line(folder: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(folder.join("requirements.txt")).ok()?;
    crate::provision::resolve::sdk_line(&text)
}

/// The candidates' extractions the repository-level `extracted` run read
/// (its record's `touched`); `None` when that run made no record.
fn extraction_read(obs: &Observation) -> Option<Vec<String>> {
    let run = obs.runs.iter().find(|r| r.name == "extracted")?;
    match &run.collection.answer {
        CollectAnswer::Collected(c) => Some(c.touched.clone()),
        _ => None,
    }
}

/// The profile's candidates of this run's SDK group (every candidate of a
/// profile without groups): those the repository-level runs find in
/// DIR/extracted. A grouped profile's other groups are extracted by their
/// own runs (`src/pipeline/groups.rs`), into their own directories.
pub(crate) fn this_groups_candidates(
    ctx: &RunContext,
) -> impl Iterator<Item = &crate::profile::CandidateSpec> {
    group_candidates(&ctx.profile.profile)
}

/// [`this_groups_candidates`] of a run of `profile` (as the run read it:
/// `[sdk]` is its group's pin).
pub(crate) fn group_candidates(
    profile: &crate::profile::Profile,
) -> impl Iterator<Item = &crate::profile::CandidateSpec> {
    let group = crate::profile::groups::squeeze(&profile.sdk.requirement);
    profile
        .candidates
        .iter()
        .filter(move |c| profile.group_of(c) == group)
}

/// `other-sdk-groups`, a warning, when the profile has candidates of other
/// SDK groups: the repository-level runs (in this, the default group's run)
/// did not have their extractions, so whatever the suites test of them
/// through the source-root variable was not tested against their archives.
pub(crate) fn other_groups_check(profile: &crate::profile::Profile) -> Option<Check> {
    let group = crate::profile::groups::squeeze(&profile.sdk.requirement);
    let others: Vec<String> = profile
        .candidates
        .iter()
        .filter(|c| profile.group_of(c) != group)
        .map(|c| format!("{} ({})", c.path, profile.group_of(c)))
        .collect();
    if others.is_empty() {
        return None;
    }
    Some(
        Check::warn(
            "other-sdk-groups",
            None,
            format!(
                "the repository-level runs ran in the run of SDK group {group}, whose DIR/extracted holds its own \
                 candidates only; {} of other SDK groups are extracted by their groups' runs, so what these suites \
                 test of them through the source-root variable was not tested against their archives (their own \
                 tests run in their groups' runs): give them tests of their own, or pin them to {group}",
                others.join(", ")
            ),
        )
        .with_observed(json!({ "group": group, "other_groups": others })),
    )
}

/// The gate-wide failure when earlier gates failed some candidates: the
/// repository-level runs need every candidate in DIR/extracted, so they were
/// not made (the other candidates' own runs were).
fn repository_runs_left_out(left_out: &[String]) -> Check {
    Check::fail(
        "repository-runs",
        None,
        format!(
            "the repository-level suites ([suites] paths) were not run: candidate(s) {} did not pass the gates \
             this one requires (see candidates_left_out), and these runs read every candidate (DIR/extracted \
             must hold them all); the other candidates' own tests were run: fix those candidates first",
            left_out.join(", ")
        ),
    )
    .with_observed(json!({ "candidates_left_out": left_out }))
}

/// The suites record when only candidates' own runs were made.
fn empty_record(opts: Option<&SuitesOptions>) -> SuitesRecord {
    SuitesRecord {
        paths: opts.map(|o| o.paths.clone()).unwrap_or_default(),
        historical: opts.map(|o| o.historical.clone()).unwrap_or_default(),
        source_root_env: candidates::options_for(opts, &[]).source_root_env,
        config: opts.and_then(|o| o.config.clone()),
        pytest_version: None,
        runs: Vec::new(),
    }
}

/// The `suites` warning when the profile names no suites.
fn no_suites_check() -> Check {
    Check::warn(
        "suites",
        None,
        "the profile names no pytest suites ([suites] paths): nothing was run and nothing is claimed; \
         add a [suites] table naming the repository's suites to run them",
    )
    .with_observed(json!({ "suites": null }))
}

/// The evidence's record of the suites.
fn record_of(obs: &Observation, opts: &SuitesOptions) -> SuitesRecord {
    SuitesRecord {
        paths: opts.paths.clone(),
        historical: opts.historical.clone(),
        source_root_env: opts.source_root_env.clone(),
        config: opts.config.clone(),
        pytest_version: obs.runs.iter().find_map(|r| match &r.collection.answer {
            CollectAnswer::Collected(c) => Some(c.pytest_version.clone()),
            _ => None,
        }),
        runs: obs.runs.iter().map(suite_run).collect(),
    }
}

/// One run as the evidence records it.
fn suite_run(r: &RunObservation) -> SuiteRun {
    let testcases = r.report.as_ref().cloned().unwrap_or_default();
    let (exit_code, timed_out) = match &r.pytest {
        PytestObs::Ran {
            exit_code,
            timed_out,
            ..
        } => (*exit_code, *timed_out),
        PytestObs::NotRun { .. } => (None, false),
    };
    SuiteRun {
        name: r.name.clone(),
        cwd: r.cwd.clone(),
        source_root: r.source_root.clone(),
        collected: collection(r).map(|c| c.items.len() as u64).unwrap_or(0),
        exit_code,
        timed_out,
        junit: r.junit_written.then(|| r.junit_rel.clone()),
        counts: count(&testcases),
        testcases,
        flaky: reruns::assess(r, &r.reruns)
            .filter(|a| a.unsound.is_none())
            .map(|a| a.flaky.into_iter().map(|f| f.id).collect())
            .unwrap_or_default(),
        reruns: r.reruns.iter().map(suite_run).collect(),
    }
}

/// The run's collection, when pytest ran it.
fn collection(r: &RunObservation) -> Option<&Collection> {
    match &r.collection.answer {
        CollectAnswer::Collected(c) => Some(c),
        _ => None,
    }
}

/// `(classname, name)` of each collected item carrying an applicable xfail,
/// to its strictness (`None`: unknown, such as an unevaluable condition).
pub(crate) fn xfail_map(c: &Collection) -> HashMap<(String, String), Option<bool>> {
    c.items
        .iter()
        .filter_map(|i| {
            i.xfail.as_ref().map(|x| {
                (
                    (i.classname.clone(), i.name.clone()),
                    x.strict.filter(|_| x.error.is_none()),
                )
            })
        })
        .collect()
}

/// The checks `obs` supports under the profile's `[suites]` options.
pub(crate) fn decide(obs: &Observation, opts: &SuitesOptions) -> Vec<Check> {
    let mut checks = vec![suite_paths_check(obs, opts)];
    if !obs.missing_historical.is_empty() {
        checks.push(
            Check::warn(
                "historical-files",
                None,
                format!(
                    "file(s) {:?} marked historical by [suites] historical are not in commit {}; the \
                     not-collected checks hold trivially for them: remove them from the profile or commit them",
                    obs.missing_historical, obs.commit
                ),
            )
            .with_observed(json!({ "historical": opts.historical, "missing": obs.missing_historical })),
        );
    }
    if let (Some(config), Some(present)) = (&opts.config, obs.config_present) {
        let observed = json!({ "config": config, "present": present });
        checks.push(
            if present {
                Check::pass(
                    "config",
                    None,
                    format!("pytest configuration {config} is in the committed tree"),
                )
            } else {
                Check::fail(
                    "config",
                    None,
                    format!(
                        "[suites] config names {config}, which is not a file in commit {}; expected the pytest \
                         configuration file: commit it or remove `config` from the profile",
                        obs.commit
                    ),
                )
            }
            .with_observed(observed),
        );
    }
    let mut roots: Vec<Option<String>> = Vec::new();
    for run in &obs.runs {
        if let (Some(ext), Some(_)) = (&obs.extraction, &run.source_root) {
            checks.push(source_root_check(ext));
        }
        checks.extend(run_checks(run, opts));
        roots.push(run_root(run));
        if let (Some(ext), Some(_)) = (&obs.extraction, &run.source_root) {
            checks.push(unchanged_check(&run.name, ext));
        }
    }
    if let [tree, extracted] = obs.runs.as_slice() {
        checks.push(pair_check(
            "extracted/same-outcomes",
            [tree, extracted],
            [&roots[0], &roots[1]],
        ));
    }
    checks
}

/// `<name>` (`extracted/same-outcomes`, `<folder>/extracted/same-outcomes`):
/// the tree run `runs[0]` and the extraction run `runs[1]` report the same
/// tests with the same outcomes; a failure is a consequence of a run whose
/// report was not read or whose collection failed (`roots`: each run's
/// [`run_root`]).
fn pair_check(name: &str, runs: [&RunObservation; 2], roots: [&Option<String>; 2]) -> Check {
    let [tree, extracted] = runs;
    // Each test with the outcome it ended with (a flaky test's rerun).
    let ended = |r: &RunObservation| {
        r.report
            .as_ref()
            .ok()
            .map(|cases| reruns::final_cases(cases, reruns::assess(r, &r.reruns).as_ref()))
    };
    let (t, e) = (ended(tree), ended(extracted));
    let reports = match (&t, &e) {
        (Some(t), Some(e)) => Some((&t[..], &e[..])),
        _ => None,
    };
    let mut check = same_outcomes_named(name, reports);
    // A run whose report was not read, or whose collection failed,
    // explains the comparison's failure.
    let cause = [tree, extracted].iter().zip(roots).find_map(|(r, root)| {
        let collected = format!("{}/collected", r.name);
        match root {
            Some(root) if r.report.is_err() || *root == collected => Some(root.clone()),
            _ => None,
        }
    });
    if let (Some(cause), crate::evidence::CheckResult::Fail) = (cause, check.result) {
        check = check.consequence_of(&cause);
    }
    check
}

fn suite_paths_check(obs: &Observation, opts: &SuitesOptions) -> Check {
    let missing = &obs.missing_paths;
    Check::from_bool(
        "suite-paths",
        None,
        missing.is_empty(),
        if missing.is_empty() {
            format!(
                "every suite path of the profile is in the committed tree: {}",
                opts.paths.join(", ")
            )
        } else {
            format!(
                "suite path(s) {missing:?} named by [suites] paths are not in commit {}; expected each to be \
                 a committed file or folder: commit them or fix the profile",
                obs.commit
            )
        },
    )
    .with_observed(json!({ "paths": opts.paths, "missing": missing }))
}

/// Whether the run's `collected` check fails.
fn collection_failed(r: &RunObservation) -> bool {
    match collection(r) {
        Some(c) => {
            !c.errors.is_empty()
                || c.exit_code != 0
                || c.items.is_empty()
                || (c.collect_only && !c.tests_started)
        }
        None => true,
    }
}

/// Whether the run's `outcomes` check fails.
fn outcomes_failed(r: &RunObservation) -> bool {
    let PytestObs::Ran {
        exit_code,
        timed_out,
        status,
        ..
    } = &r.pytest
    else {
        return true;
    };
    if crate::isolation::sandbox::supervisor_killed(&r.sandbox, status) {
        return true;
    }
    let Ok(cases) = &r.report else {
        return true;
    };
    if reruns::assess(r, &r.reruns).is_some_and(|a| a.all_flaky()) {
        return false;
    }
    *timed_out
        || *exit_code != Some(0)
        || cases.is_empty()
        || !bad_cases(cases).is_empty()
        || session_unfinished(r)
        || pairing(r).is_some_and(|p| !p.is_empty())
}

/// How a run's report pairs with the items its own collection record holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
struct Pairing {
    /// Recorded items (node ids) with no testcase in the report: collected
    /// but never reported, because the session stopped before running them
    /// (a test or hook calling `pytest.exit(returncode=0)`, a hook raising
    /// in the middle of the run loop).
    unreported: Vec<String>,
    /// Passing testcases (`classname::name`) that are no item of the record:
    /// a pass the run did not collect and run as a test (an item run around
    /// pytest's protocol, a testcase renamed, the nameless testcase pytest
    /// writes for a test that ended the session).
    unrecorded_passes: Vec<String>,
}

impl Pairing {
    fn is_empty(&self) -> bool {
        self.unreported.is_empty() && self.unrecorded_passes.is_empty()
    }
}

/// The pairing of the run's report with its collection record; `None` when
/// either was not read.
fn pairing(r: &RunObservation) -> Option<Pairing> {
    let (Some(c), Ok(cases)) = (collection(r), &r.report) else {
        return None;
    };
    let ids: BTreeSet<(&str, &str)> = cases
        .iter()
        .map(|t| (t.classname.as_str(), t.name.as_str()))
        .collect();
    let items: BTreeSet<(&str, &str)> = c
        .items
        .iter()
        .map(|i| (i.classname.as_str(), i.name.as_str()))
        .collect();
    Some(Pairing {
        unreported: c
            .items
            .iter()
            .filter(|i| !ids.contains(&(i.classname.as_str(), i.name.as_str())))
            .map(|i| i.nodeid.clone())
            .collect(),
        unrecorded_passes: cases
            .iter()
            .filter(|t| {
                matches!(t.outcome, SuiteOutcome::Passed | SuiteOutcome::Xpassed)
                    && !items.contains(&(t.classname.as_str(), t.name.as_str()))
            })
            .map(test_id)
            .collect(),
    })
}

/// The run recorded its collection but not the end of its session: the
/// process ended without pytest returning (a test or hook ending the
/// process, a crash).
fn session_unfinished(r: &RunObservation) -> bool {
    collection(r).is_some_and(|c| !c.finished)
}

/// Testcases that fail a run: failed, error, strict XPASS.
fn bad_cases(cases: &[SuiteTestCase]) -> Vec<&SuiteTestCase> {
    cases
        .iter()
        .filter(|t| {
            matches!(
                t.outcome,
                SuiteOutcome::Failed | SuiteOutcome::Error | SuiteOutcome::XpassedStrict
            )
        })
        .collect()
}

/// The run's first finding that explains its other failures: `collected`
/// when the collection failed and no test failed on its own, else
/// `outcomes` when it failed; `None` when neither failed.
fn run_root(r: &RunObservation) -> Option<String> {
    let counts = count(r.report.as_deref().unwrap_or_default());
    if collection_failed(r) && counts.failed == 0 && counts.xpassed_strict == 0 {
        return Some(format!("{}/collected", r.name));
    }
    if outcomes_failed(r) {
        if only_strict_xpasses(r) {
            return Some(format!("{}/strict-xfail", r.name));
        }
        return Some(format!("{}/outcomes", r.name));
    }
    None
}

/// The run exited 1 only because strict xfails passed: its report holds
/// strict XPASSes and no other failure or error.
fn only_strict_xpasses(r: &RunObservation) -> bool {
    let (
        Ok(cases),
        PytestObs::Ran {
            exit_code: Some(1), ..
        },
    ) = (&r.report, &r.pytest)
    else {
        return false;
    };
    let bad = bad_cases(cases);
    !bad.is_empty() && bad.iter().all(|t| t.outcome == SuiteOutcome::XpassedStrict)
}

/// The checks of one run, in order.
fn run_checks(r: &RunObservation, opts: &SuitesOptions) -> Vec<Check> {
    let name = r.name.as_str();
    let root = run_root(r);
    let under = |check: Check| under_root(root.as_deref(), check);
    let mut checks = setup_checks(r, opts, root.as_deref());
    let counts = count(r.report.as_deref().unwrap_or_default());
    let assessment = reruns::assess(r, &r.reruns);
    checks.push(under(outcomes_check(r, &counts)));
    if let Some(a) = &assessment {
        let check = reruns_check(r, a);
        checks.push(if a.unsound.is_none() {
            under(check)
        } else {
            check
        });
    }
    checks.extend(collection_findings(r, opts, root.as_deref()));
    if let PytestObs::Ran {
        stragglers_killed: true,
        log,
        ..
    } = &r.pytest
    {
        checks.push(stragglers_check(name, log));
    }
    if let Ok(cases) = &r.report {
        // A flaky test counts with the outcome it ended with.
        let cases = reruns::final_cases(cases, assessment.as_ref());
        checks.push(under(passing_check(name, &cases, &count(&cases))));
    }
    let xfails = collection(r).map(xfail_map).unwrap_or_default();
    let strict = strict_xfail_check(name, r.report.as_deref().ok(), &counts, &xfails);
    // A strict XPASS is a finding of its own; an unread report is not.
    checks.push(if r.report.is_err() {
        under(strict)
    } else {
        strict
    });
    if counts.xpassed > 0 {
        checks.push(xpassed_check(r));
    }
    checks
}

/// `check` as the run's root failure's consequence when it fails and is
/// not that root itself (`root`: the run's first failing check, if any).
fn under_root(root: Option<&str>, check: Check) -> Check {
    match (root, check.result) {
        (Some(root), crate::evidence::CheckResult::Fail) if root != check.name => {
            check.consequence_of(root)
        }
        _ => check,
    }
}

/// The checks of how a run was set up and collected: its sandbox, what it
/// left running, its collection and, when the profile names historical
/// tests, whether they ran.
fn setup_checks(r: &RunObservation, opts: &SuitesOptions, root: Option<&str>) -> Vec<Check> {
    let name = r.name.as_str();
    let collected_name = format!("{name}/collected");
    let mut checks = vec![
        crate::isolation::sandbox::check(
            &format!("{name}/sandbox"),
            None,
            &format!("the {name} pytest run"),
            &r.sandbox,
        ),
        collected_check(r, &opts.paths),
    ];
    if let Some(found) = &r.left_running {
        checks.insert(
            1,
            crate::isolation::left_running::check(
                &format!("{name}/left-running"),
                None,
                &format!("the {name} pytest run"),
                found,
                opts.left_running,
            ),
        );
    }
    if !opts.historical.is_empty() {
        let c = historical_check(
            name,
            &opts.historical,
            collection(r),
            r.report.as_ref().ok(),
        );
        // Observed neither way: a consequence of the collection's failure.
        checks.push(if collection(r).is_none() && r.report.is_err() {
            c.consequence_of(root.unwrap_or(&collected_name))
        } else {
            c
        });
    }
    checks
}

/// The findings read from a run's collection record: rewritten outcomes,
/// deselections, uncollected files and patches. Each is a finding of its
/// own only when the collection was recorded.
fn collection_findings(r: &RunObservation, opts: &SuitesOptions, root: Option<&str>) -> Vec<Check> {
    let name = r.name.as_str();
    let under = |check: Check| under_root(root, check);
    let unless_collected = |check: Check| {
        if collection(r).is_none() {
            under(check)
        } else {
            check
        }
    };
    // A rewrite or a deselection is a finding of its own; a record or report
    // not read, or a session that did not end, is not.
    let observed = rewrites::observed_outcomes_check(name, collection(r), r.report.as_deref().ok());
    let observed = if collection(r).is_none() || r.report.is_err() || session_unfinished(r) {
        under(observed)
    } else {
        observed
    };
    let deselected = deselection::deselected_check(
        name,
        collection(r),
        &opts.deselected,
        opts.config.as_deref(),
    );
    let uncollected = uncollected::uncollected_check(name, collection(r), &opts.deselected);
    let patches = patches::patches_check(name, collection(r));
    vec![
        observed,
        unless_collected(deselected),
        unless_collected(uncollected),
        unless_collected(patches),
    ]
}

/// `<run>/stragglers`: the run left processes behind that were stopped.
fn stragglers_check(name: &str, log: &str) -> Check {
    Check::warn(
        &format!("{name}/stragglers"),
        None,
        format!(
            "the pytest run left processes behind after it exited; they were stopped (TERM, then KILL): \
             make the suites wait for their children (see {log})"
        ),
    )
    .with_observed(json!({ "stragglers_killed": true, "log": log }))
}

/// `<run>/xpassed`: non-strict xfail tests that passed, named.
fn xpassed_check(r: &RunObservation) -> Check {
    let name = r.name.as_str();
    let ids: Vec<String> = r
        .report
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|t| t.outcome == SuiteOutcome::Xpassed)
        .map(test_id)
        .collect();
    Check::warn(
        &format!("{name}/xpassed"),
        None,
        format!(
            "{} non-strict xfail test(s) passed (XPASS): {}; they are not counted as passes: mark them \
             strict or remove the xfail once the limitation is gone",
            ids.len(),
            ids.join(", ")
        ),
    )
    .with_observed(json!({ "xpassed": ids }))
}

/// `<run>/collected`: pytest collected at least one item and no collector
/// failed. Each cause gets its own advice: an interpreter without pytest
/// (the only one that is about `--python`), a run that was stopped or
/// ended before its collection was recorded, collection errors, an exit a
/// conftest or plugin called, nothing collected, a usage or internal error.
fn collected_check(r: &RunObservation, paths: &[String]) -> Check {
    let name = format!("{}/collected", r.name);
    let c = match &r.collection.answer {
        CollectAnswer::Collected(c) => c,
        CollectAnswer::PytestMissing { error } => {
            return pytest_missing_check(&name, r, paths, error)
        }
        CollectAnswer::NoReport { error } => return no_report_check(&name, r, paths, error),
    };
    let observed = json!({
        "exit_code": c.exit_code,
        "items": c.items.len(),
        "errors": c.errors.iter().map(|e| &e.nodeid).collect::<Vec<_>>(),
        "pytest_version": c.pytest_version,
    });
    if let Some(detail) = collection_problem(c, &r.collection.process, paths) {
        return Check::fail(&name, None, detail).with_observed(observed);
    }
    Check::pass(
        &name,
        None,
        format!(
            "pytest collected {} test(s) from {}",
            c.items.len(),
            paths.join(", ")
        ),
    )
    .with_observed(observed)
}

/// `<run>/collected` when the interpreter cannot import pytest: the only
/// cause whose advice is about `--python`.
fn pytest_missing_check(name: &str, r: &RunObservation, paths: &[String], error: &str) -> Check {
    Check::fail(
        name,
        None,
        format!(
            "the interpreter {} cannot import pytest ({error}), so the suites {paths:?} could not be \
             collected or run; expected pytest importable by the interpreter that has the pinned SDK: \
             install pytest and pytest-asyncio into it (`{} -m pip install pytest pytest-asyncio`), or \
             pass --python with the interpreter `cargo xtask sdk` prints, which has both",
            r.python, r.python
        ),
    )
    .with_observed(json!({ "pytest_importable": false, "error": error, "python": r.python }))
}

/// `<run>/collected` when the run recorded no collection: stopped at its
/// time limit, or ended (or garbled its record) before pytest finished
/// collecting.
fn no_report_check(name: &str, r: &RunObservation, paths: &[String], error: &str) -> Check {
    let process = &r.collection.process;
    let observed = json!({ "process": process, "error": error });
    let detail = if process.timed_out {
        format!(
            "collecting the suites {paths:?} did not finish within {} s and was stopped; expected \
             the collection to finish: fix what hangs while the suites are imported (a module-level \
             call, a conftest hook) or raise [suites] timeout_secs; see {}",
            r.timeout_secs, process.log
        )
    } else {
        format!(
            "the pytest run {} without recording what pytest collected from {paths:?} ({error}); \
             output tail: {}; pytest itself was importable (the run records it when it is not), so the \
             interpreter is not the cause: something the suites run while they are collected (a conftest \
             or test module ending the process, a crashing extension, a test overwriting the record) \
             ended the run before its collection was recorded or garbled the record: fix that code; \
             see {}",
            process.status, process.tail, process.log
        )
    };
    Check::fail(name, None, detail).with_observed(observed)
}

/// What is wrong with a recorded collection, as `<run>/collected`'s
/// failing detail: collection errors, an exit a conftest or plugin called,
/// `--collect-only`, a usage or internal error, nothing collected, another
/// exit status; `None` when pytest collected tests cleanly.
fn collection_problem(
    c: &Collection,
    process: &record::ProcessRun,
    paths: &[String],
) -> Option<String> {
    let detail = if let Some(first) = c.errors.first() {
        format!(
            "pytest could not collect {} of the suites (exit status {}): {} failed with: {}; expected every \
             suite module to import: fix the import or syntax error (the pytest run stops at collection \
             errors, so its outcomes are reported under this check)",
            c.errors.len(),
            c.exit_code,
            first.nodeid,
            last_lines(&first.longrepr, 6)
        )
    } else if let (Some(code), true) = (&c.system_exit, c.tests_started) {
        format!(
            "a conftest or plugin called exit({code}) inside pytest's session after the run's {} collected \
             item(s) had started running (the run: {}): {}; pytest and the interpreter are not the cause: expected \
             no hook to end the session, which pytest must end and report itself: remove the exit call from the \
             hook; see {}",
            c.items.len(),
            process.status,
            process.tail,
            process.log
        )
    } else if let Some(code) = &c.system_exit {
        format!(
            "a conftest or plugin called exit({code}) inside pytest's session while collecting {paths:?}, after \
             {} item(s) were collected (exit status {}): {}; pytest and the interpreter are not the cause: expected \
             no hook to end the session: remove the exit call from the hook; see {}",
            c.items.len(),
            c.exit_code,
            process.tail,
            process.log
        )
    } else if c.collect_only && !c.items.is_empty() && !c.tests_started {
        format!(
            "pytest ran with `--collect-only` (`--co`): it collected {} item(s) from {paths:?} and ran none of \
             them, so no outcome exists; the option comes from the pytest configuration's `addopts` ([suites] \
             config, else the run's own) or a conftest changing the options, not from the verifier: expected \
             the suites to run: remove `--collect-only` from addopts; see {}",
            c.items.len(),
            process.log
        )
    } else if c.exit_code == 4 {
        format!(
            "pytest rejected its command line or configuration while collecting {paths:?} (exit status 4, \
             usage error): {}; expected the configuration to be valid for this pytest: fix the pytest \
             configuration ([suites] config and its addopts) or install the plugin it names into the \
             interpreter; see {}",
            process.tail, process.log
        )
    } else if c.exit_code == 3 {
        format!(
            "pytest hit an internal error while collecting {paths:?} (exit status 3): {}; expected no plugin \
             or conftest hook to raise: fix the hook that raised; see {}",
            process.tail, process.log
        )
    } else if c.exit_code == 5 || (c.exit_code == 0 && c.items.is_empty()) {
        format!(
            "pytest collected nothing from {paths:?} (exit status {}, 5 means no tests); expected at least one \
             test: name files that hold `test_*` functions in [suites] paths",
            c.exit_code
        )
    } else if c.exit_code != 0 {
        format!(
            "pytest exited with status {} while collecting {paths:?} ({} item(s), no collector error): {}; \
             expected 0: see {}",
            c.exit_code,
            c.items.len(),
            process.tail,
            process.log
        )
    } else {
        return None;
    };
    Some(detail)
}

/// `<run>/outcomes`: pytest exited 0 with no failure, error or strict XPASS.
/// The advice is about the tests or the candidates, never the interpreter:
/// pytest ran.
fn outcomes_check(r: &RunObservation, counts: &SuiteCounts) -> Check {
    let name = format!("{}/outcomes", r.name);
    let (exit_code, status, timed_out, log) = match &r.pytest {
        PytestObs::Ran {
            exit_code,
            status,
            timed_out,
            log,
            ..
        } => (*exit_code, status, *timed_out, log),
        PytestObs::NotRun { error } => {
            return Check::fail(
                &name,
                None,
                format!(
                    "pytest could not be started: {error}; expected the interpreter {} to start",
                    r.python
                ),
            )
            .with_observed(json!({ "started": false, "error": error }));
        }
    };
    let observed = json!({
        "exit_code": exit_code,
        "timed_out": timed_out,
        "counts": counts,
        "session_finished": collection(r).map(|c| c.finished),
        "pairing": pairing(r),
    });
    let ran = RanAs {
        exit_code,
        status,
        log,
    };
    if let Some(stopped) = stopped_check(r, &name, &ran, timed_out, &observed) {
        return stopped;
    }
    let parsed = match &r.report {
        Ok(p) => p,
        Err(e) => {
            return Check::fail(
                &name,
                None,
                format!("pytest {status}, and its JUnit report could not be read: {e}; see {log}"),
            )
            .with_observed(observed)
        }
    };
    if session_unfinished(r) {
        return unfinished_check(r, &name, &ran, parsed.len(), observed);
    }
    if let Some(failed) = failures_check(r, counts, &name, &ran, parsed, &observed) {
        return failed;
    }
    if let Some(unpaired) = pairing_check(r, &name, &ran, &observed) {
        return unpaired;
    }
    Check::pass(
        &name,
        None,
        format!(
            "pytest exit status 0: {} test(s): {} passed, {} xfailed (expected failures, not passes), {} skipped, \
             {} xpassed (non-strict)",
            counts.tests, counts.passed, counts.xfailed, counts.skipped, counts.xpassed
        ),
    )
    .with_observed(observed)
}

/// `<run>/outcomes` when pytest's session did not end as pytest ends it:
/// the process ended after the collection was recorded but before pytest
/// returned (`cases`: the testcases its report holds).
fn unfinished_check(
    r: &RunObservation,
    name: &str,
    ran: &RanAs,
    cases: usize,
    observed: serde_json::Value,
) -> Check {
    let RanAs { status, log, .. } = ran;
    Check::fail(
        name,
        None,
        format!(
            "pytest's session did not end as pytest ends it: the run's process ended ({status}) after the \
             collection of {} item(s) was recorded but before pytest returned, so its status and report \
             ({} testcase(s)) are not pytest's verdict on the suites; something the suites run ended the \
             process (a test or a conftest hook calling os._exit, a crashing extension): expected pytest to \
             end its own session: fix that code (see {log})",
            collection(r).map_or(0, |c| c.items.len()),
            cases
        ),
    )
    .with_observed(observed)
}

/// How pytest ended, as `<run>/outcomes` names it: its exit status (`None`
/// when stopped), the status's words and its log.
struct RanAs<'a> {
    exit_code: Option<i32>,
    status: &'a str,
    log: &'a str,
}

/// `<run>/outcomes` when pytest did not end by itself: stopped at its time
/// limit, or when the step's supervisor was killed; `None` otherwise.
fn stopped_check(
    r: &RunObservation,
    name: &str,
    ran: &RanAs<'_>,
    timed_out: bool,
    observed: &serde_json::Value,
) -> Option<Check> {
    let (status, log) = (ran.status, ran.log);
    if timed_out {
        let running = r.collection.process.running.as_deref();
        let hung = running.map_or(String::new(), |id| {
            format!(" while the test {id} was running (the run's plugin noted it as it started)")
        });
        return Some(Check::fail(
            name,
            None,
            format!(
                "pytest did not finish within {} s and was stopped{hung}; expected the suites to finish: raise \
                 [suites] timeout_secs or fix the hanging test (see {log})",
                r.timeout_secs
            ),
        )
        .with_observed({
            let mut o = observed.clone();
            o["running"] = json!(running);
            o
        }));
    }
    if crate::isolation::sandbox::supervisor_killed(&r.sandbox, status) {
        let running = r.collection.process.running.as_deref();
        let test = running.map_or(String::new(), |id| {
            format!(" while the test {id} was running")
        });
        return Some(Check::fail(
            name,
            None,
            format!(
                "the step's supervisor was killed ({status}){test}: a test signalled its parent \
                 (`os.getppid()`), which without bubblewrap is the verifier's supervisor process; the \
                 verifier then stopped pytest, so the run has no verdict of pytest's; expected no test to \
                 signal its parent: fix that test (see {log})"
            ),
        )
        .with_observed({
            let mut o = observed.clone();
            o["running"] = json!(running);
            o["supervisor_killed"] = json!(true);
            o
        }));
    }
    None
}

/// The first 10 failing, erroring or strictly passing testcases, each as
/// `<id> (<outcome>: <first 200 characters of its message>)`.
fn bad_named(parsed: &[SuiteTestCase]) -> Vec<String> {
    bad_cases(parsed)
        .iter()
        .take(10)
        .map(|t| {
            format!(
                "{} ({}: {})",
                test_id(t),
                outcome_word(t.outcome),
                t.message
                    .as_deref()
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect::<String>()
            )
        })
        .collect()
}

/// `<run>/outcomes` over the report's testcases: a pass when every failure
/// passed in a sound rerun, a failure when no test ran or one failed;
/// `None` when none failed.
fn failures_check(
    r: &RunObservation,
    counts: &SuiteCounts,
    name: &str,
    ran: &RanAs<'_>,
    parsed: &[SuiteTestCase],
    observed: &serde_json::Value,
) -> Option<Check> {
    let (exit_code, status, log) = (ran.exit_code, ran.status, ran.log);
    let junit_rel = &r.junit_rel;
    let bad = bad_named(parsed);
    let assessment = reruns::assess(r, &r.reruns);
    if let Some(a) = assessment.as_ref().filter(|a| a.all_flaky()) {
        return Some(Check::pass(
            name,
            None,
            format!(
                "pytest {status} on the first attempt: {} test(s): {} passed, {} failed and then passed when rerun \
                 ([suites] retries; see `{}/reruns`): {}; {} xfailed, {} skipped, {} xpassed (non-strict)",
                counts.tests,
                counts.passed,
                a.flaky.len(),
                r.name,
                a.flaky.iter().map(|f| f.id.as_str()).collect::<Vec<_>>().join(", "),
                counts.xfailed,
                counts.skipped,
                counts.xpassed
            ),
        )
        .with_observed(observed.clone()));
    }
    let reran = assessment.as_ref().map_or(String::new(), |a| {
        format!(
            "; rerun {} time(s) ([suites] retries), {} still failing (see `{}/reruns`)",
            a.reruns,
            a.still_failing.len(),
            r.name
        )
    });
    if exit_code == Some(5) || counts.tests == 0 {
        return Some(Check::fail(
            name,
            None,
            format!(
                "pytest {status} and ran no test (5 means nothing was collected); expected at least one test in \
                 [suites] paths (see {log})"
            ),
        )
        .with_observed(observed.clone()));
    }
    if exit_code != Some(0) || !bad.is_empty() {
        return Some(Check::fail(
            name,
            None,
            format!(
                "pytest {status}; expected status 0 with no failure or error; found {} failed, {} error(s), {} \
                 strict XPASS: {}{reran}; the suites were collected and ran, so these are the tests' own results: \
                 fix the tests or the candidates (report {junit_rel}, output {log})",
                counts.failed,
                counts.errors,
                counts.xpassed_strict,
                bad.join("; ")
            ),
        )
        .with_observed(observed.clone()));
    }
    None
}

/// `<run>/outcomes` when the report is not the outcome of every collected
/// test (an item without a testcase, a passing testcase of no item);
/// `None` when it is.
fn pairing_check(
    r: &RunObservation,
    name: &str,
    ran: &RanAs<'_>,
    observed: &serde_json::Value,
) -> Option<Check> {
    let (status, log) = (ran.status, ran.log);
    let junit_rel = &r.junit_rel;
    if let Some(p) = pairing(r).filter(|p| !p.is_empty()) {
        let list = |v: &[String]| {
            let mut s = v.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
            if v.len() > 10 {
                s.push_str(", ...");
            }
            s
        };
        let mut found = Vec::new();
        if !p.unreported.is_empty() {
            found.push(format!(
                "{} of the {} item(s) the run collected have no testcase in its report, so they never ran to an \
                 outcome: {}",
                p.unreported.len(),
                collection(r).map_or(0, |c| c.items.len()),
                list(&p.unreported)
            ));
        }
        if !p.unrecorded_passes.is_empty() {
            found.push(format!(
                "{} passing testcase(s) of the report are no item the run collected and ran as a test: {}",
                p.unrecorded_passes.len(),
                list(&p.unrecorded_passes)
            ));
        }
        return Some(Check::fail(
            name,
            None,
            format!(
                "pytest {status}, but its report is not the outcome of every test it collected: {}; something \
                 the suites run stopped the session early or ran tests around pytest's own protocol (a test or \
                 hook calling `pytest.exit`, a hook replacing the run loop or renaming a testcase), so the status \
                 is not pytest's verdict on the suites: expected one testcase per collected item and no other \
                 pass: remove that code (report {junit_rel}, output {log})",
                found.join("; ")
            ),
        )
        .with_observed(observed.clone()));
    }
    None
}

/// `<run>/reruns`, when the run's failed tests were rerun (`[suites]
/// retries`): a warning naming each flaky test (failed, then passed in a
/// sound rerun: counted as passed, but the statement is never `PASSED`); a
/// failure when a rerun was not sound (a finding of its own: it proved
/// nothing) or a test failed in every rerun.
fn reruns_check(r: &RunObservation, a: &reruns::Assessment) -> Check {
    let name = format!("{}/reruns", r.name);
    let observed = json!(a);
    let flaky = a
        .flaky
        .iter()
        .map(|f| {
            format!(
                "{} (failed: {}; passed in rerun {}, report logs/suites/{}-rerun-{}.xml)",
                f.id, f.first_failure, f.passed_in, r.name, f.passed_in
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    if let Some((k, why)) = &a.unsound {
        return Check::fail(
            &name,
            None,
            format!(
                "rerun {k} of the {} test(s) the {} run failed proves nothing: {why}; expected a rerun to collect \
                 and run exactly the node ids it was given and report what its own plugin observed: something \
                 in the suites behaves differently when rerun; fix it or set [suites] retries = 0 (logs \
                 logs/suites/{}-rerun-{k}.*)",
                a.requested.len(),
                r.name,
                r.name
            ),
        )
        .with_observed(observed);
    }
    if !a.still_failing.is_empty() {
        return Check::fail(
            &name,
            None,
            format!(
                "{} test(s) failed in the {} run and again in each of {} rerun(s): {}{}; these are failures, not \
                 flakiness: fix the tests or the candidates",
                a.still_failing.len(),
                r.name,
                a.reruns,
                a.still_failing.join(", "),
                if flaky.is_empty() {
                    String::new()
                } else {
                    format!("; passed when rerun: {flaky}")
                }
            ),
        )
        .with_observed(observed);
    }
    Check::warn(
        &name,
        None,
        format!(
            "{} test(s) failed in the {} run and passed when rerun alone, so they are flaky here: {flaky}; they \
             count as passed ([suites] retries), and the statement is not PASSED: make them deterministic (a \
             test that reads a file before its writer has written it, a time limit the machine's load can \
             exceed)",
            a.flaky.len(),
            r.name,
        ),
    )
    .with_observed(observed)
}

/// The word the evidence uses for `o` (`passed`, `xpassed-strict`, ...).
fn outcome_word(o: SuiteOutcome) -> &'static str {
    match o {
        SuiteOutcome::Passed => "passed",
        SuiteOutcome::Failed => "failed",
        SuiteOutcome::Error => "error",
        SuiteOutcome::Skipped => "skipped",
        SuiteOutcome::Xfailed => "xfailed",
        SuiteOutcome::Xpassed => "xpassed",
        SuiteOutcome::XpassedStrict => "xpassed-strict",
    }
}

/// `classname::name`, the id a testcase is compared and reported by.
fn test_id(t: &SuiteTestCase) -> String {
    format!("{}::{}", t.classname, t.name)
}

/// `<run>/passing`: a run proves something only when at least one test
/// passed. Skips, xfails and non-strict XPASSes are not passes, so a suite
/// whose every test is skipped (`pytestmark = pytest.mark.skip`) or xfailed
/// fails here although pytest exits 0. When tests failed, the advice points
/// at the failures, not at skip marks.
fn passing_check(run: &str, cases: &[SuiteTestCase], counts: &SuiteCounts) -> Check {
    let name = format!("{run}/passing");
    let observed = json!({ "tests": counts.tests, "passed": counts.passed });
    if counts.passed > 0 {
        return Check::pass(
            &name,
            None,
            format!("{} of {} test(s) passed", counts.passed, counts.tests),
        )
        .with_observed(observed);
    }
    let examples: Vec<String> = cases
        .iter()
        .take(10)
        .map(|t| match &t.message {
            Some(m) => format!(
                "{} ({}: {})",
                test_id(t),
                outcome_word(t.outcome),
                m.chars().take(120).collect::<String>()
            ),
            None => format!("{} ({})", test_id(t), outcome_word(t.outcome)),
        })
        .collect();
    let failing = counts.failed + counts.errors + counts.xpassed_strict;
    let advice = if failing > 0 {
        format!(
            "expected at least one passing test; {failing} test(s) failed, errored or passed a strict xfail: \
             see the `{run}/outcomes` check and fix those tests"
        )
    } else if counts.tests == 0 {
        format!(
            "expected at least one passing test; the report holds no test at all, so nothing ran: see the \
             `{run}/collected` and `{run}/outcomes` checks for why"
        )
    } else {
        "expected at least one passing test, since a suite whose tests are all skipped or expected to fail \
         proves nothing: remove the skip marks (for example a module-level `pytestmark = pytest.mark.skip`) \
         or name suites in [suites] paths that run"
            .to_string()
    };
    Check::fail(
        &name,
        None,
        format!(
            "no test passed in the {run} run: {} test(s), 0 passed, {} skipped, {} xfailed, {} xpassed \
             (non-strict), {} failed, {} error(s){}{}; {advice}",
            counts.tests,
            counts.skipped,
            counts.xfailed,
            counts.xpassed,
            counts.failed,
            counts.errors,
            if examples.is_empty() { "" } else { ": " },
            examples.join("; ")
        ),
    )
    .with_observed(observed)
}

/// One test whose outcomes differ between the two runs; empty: the run did
/// not report it. Outcomes are sorted (a test id reported twice has two).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
struct OutcomeDifference {
    id: String,
    tree: Vec<SuiteOutcome>,
    extracted: Vec<SuiteOutcome>,
}

/// The first 20 differences, each as `<id>: tree <outcomes>, extracted
/// <outcomes>` and the extraction run's message for a test that did not
/// pass there (its first 120 characters).
fn differences_named(diffs: &[OutcomeDifference], extracted: &[SuiteTestCase]) -> Vec<String> {
    let words = |v: &[SuiteOutcome]| {
        if v.is_empty() {
            "not reported".to_string()
        } else {
            v.iter()
                .map(|o| outcome_word(*o))
                .collect::<Vec<_>>()
                .join("+")
        }
    };
    let reason = |id: &str| {
        extracted
            .iter()
            .find(|t| test_id(t) == id && t.outcome != SuiteOutcome::Passed)
            .and_then(|t| t.message.as_deref())
            .map(|m| format!(" ({})", m.chars().take(120).collect::<String>()))
            .unwrap_or_default()
    };
    diffs
        .iter()
        .take(20)
        .map(|d| {
            format!(
                "{}: tree {}, extracted {}{}",
                d.id,
                words(&d.tree),
                words(&d.extracted),
                reason(&d.id)
            )
        })
        .collect()
}

/// Every test id whose outcomes differ between the tree run and the
/// extraction run, in id order.
fn outcome_differences(
    tree: &[SuiteTestCase],
    extracted: &[SuiteTestCase],
) -> Vec<OutcomeDifference> {
    let index = |cases: &[SuiteTestCase]| {
        let mut m: BTreeMap<String, Vec<SuiteOutcome>> = BTreeMap::new();
        for t in cases {
            m.entry(test_id(t)).or_default().push(t.outcome);
        }
        for v in m.values_mut() {
            v.sort_by_key(|o| outcome_word(*o));
        }
        m
    };
    let (a, b) = (index(tree), index(extracted));
    let ids: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    ids.into_iter()
        .filter_map(|id| {
            let ta = a.get(id).cloned().unwrap_or_default();
            let tb = b.get(id).cloned().unwrap_or_default();
            (ta != tb).then(|| OutcomeDifference {
                id: id.clone(),
                tree: ta,
                extracted: tb,
            })
        })
        .collect()
}
/// `extracted/same-outcomes`: the run against DIR/extracted reports the same
/// test ids with the same outcomes as the run against the committed tree, so
/// what ships is tested as much as the tree. `reports` is `None` when a run's
/// JUnit report could not be read.
#[cfg(test)]
fn same_outcomes_check(reports: Option<(&[SuiteTestCase], &[SuiteTestCase])>) -> Check {
    same_outcomes_named("extracted/same-outcomes", reports)
}

/// [`same_outcomes_check`] under the check name `name`.
fn same_outcomes_named(name: &str, reports: Option<(&[SuiteTestCase], &[SuiteTestCase])>) -> Check {
    let Some((tree, extracted)) = reports else {
        return Check::fail(
            name,
            None,
            "the JUnit report of the tree run or of the DIR/extracted run was not read, so it was not observed \
             whether both report the same tests with the same outcomes; see the `outcomes` checks",
        );
    };
    let passed = |cases: &[SuiteTestCase]| {
        cases
            .iter()
            .filter(|t| t.outcome == SuiteOutcome::Passed)
            .count()
    };
    let (p_tree, p_extracted) = (passed(tree), passed(extracted));
    let diffs = outcome_differences(tree, extracted);
    let observed = json!({
        "tree": { "tests": tree.len(), "passed": p_tree },
        "extracted": { "tests": extracted.len(), "passed": p_extracted },
        "differences": diffs,
    });
    if diffs.is_empty() {
        return Check::pass(
            name,
            None,
            format!(
                "the tree run and the DIR/extracted run report the same {} test id(s) with the same outcomes \
                 ({p_tree} passed in each)",
                tree.len()
            ),
        )
        .with_observed(observed);
    }
    let listed = differences_named(&diffs, extracted);
    let fewer = if p_extracted < p_tree {
        format!(
            "fewer tests pass on DIR/extracted ({p_extracted}) than on the committed tree ({p_tree}), so the \
             archives are tested less than the tree; "
        )
    } else {
        format!("{p_tree} passed on the tree, {p_extracted} on DIR/extracted; ")
    };
    Check::fail(
        name,
        None,
        format!(
            "{fewer}{} test id(s) differ between the two runs: {}{}; expected the same test ids with the same \
             outcomes: find why the tests behave differently against the archives' extraction (a file the \
             archive leaves out, a skip or condition on the source-root variable) and make them agree",
            diffs.len(),
            listed.join("; "),
            if diffs.len() > listed.len() { "; ..." } else { "" }
        ),
    )
    .with_observed(observed)
}

/// `<run>/strict-xfail`: no strict xfail passed; `cases` is `None` when the
/// report was not read.
fn strict_xfail_check(
    run: &str,
    cases: Option<&[SuiteTestCase]>,
    counts: &SuiteCounts,
    xfails: &HashMap<(String, String), Option<bool>>,
) -> Check {
    let name = format!("{run}/strict-xfail");
    let Some(parsed) = cases else {
        return Check::fail(
            &name,
            None,
            "no JUnit report was read, so no xfail outcome could be observed; see the `outcomes` check",
        )
        .with_observed(json!({ "report_read": false }));
    };
    let strict_xpass: Vec<String> = parsed
        .iter()
        .filter(|t| t.outcome == SuiteOutcome::XpassedStrict)
        .map(test_id)
        .collect();
    let xfailed: Vec<String> = parsed
        .iter()
        .filter(|t| t.outcome == SuiteOutcome::Xfailed)
        .map(test_id)
        .collect();
    let strict_marked = xfails.values().filter(|s| **s == Some(true)).count();
    let observed = json!({ "xfailed": xfailed, "xpassed_strict": strict_xpass, "strict_xfail_items": strict_marked });
    if !strict_xpass.is_empty() {
        return Check::fail(
            &name,
            None,
            format!(
                "{} strict xfail test(s) passed (XPASS(strict)): {}; a strict xfail documents a known failure, so \
                 a pass is a failure: remove the xfail mark if the limitation is gone, or fix the test",
                strict_xpass.len(),
                strict_xpass.join(", ")
            ),
        )
        .with_observed(observed);
    }
    Check::pass(
        &name,
        None,
        format!(
            "{} xfail outcome(s) counted as expected failures, none as a pass ({} passed is without them); no \
             strict xfail passed",
            counts.xfailed, counts.passed
        ),
    )
    .with_observed(observed)
}

/// `<run>/historical-not-collected`: no item of a historical file was
/// collected (by the observation's file and source-file marks) and no
/// report testcase has a historical file's classname. `collection` and
/// `cases` are `None` when not observed.
fn historical_check(
    run: &str,
    historical: &[String],
    collection: Option<&Collection>,
    cases: Option<&Vec<SuiteTestCase>>,
) -> Check {
    let name = format!("{run}/historical-not-collected");
    let mut found: BTreeSet<String> = BTreeSet::new();
    if let Some(c) = collection {
        for item in &c.items {
            if let Some(rel) = &item.historical {
                found.insert(format!("{} (collected item from {rel})", item.nodeid));
            }
        }
    }
    if let Some(cases) = cases {
        for t in cases {
            for rel in historical {
                let classname = module_classname(rel);
                if t.classname == classname || t.classname.starts_with(&format!("{classname}.")) {
                    found.insert(format!("{} (JUnit testcase of {rel})", test_id(t)));
                }
            }
        }
    }
    let observed = json!({
        "historical": historical,
        "collection_observed": collection.is_some(),
        "report_observed": cases.is_some(),
        "found": found,
    });
    if !found.is_empty() {
        return Check::fail(
            &name,
            None,
            format!(
                "tests of historical file(s) {historical:?} were collected: {}; historical files are excluded \
                 from discovery and never counted: remove them from [suites] paths and do not import their tests \
                 into a suite",
                found.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
        .with_observed(observed);
    }
    if collection.is_none() && cases.is_none() {
        return Check::fail(
            &name,
            None,
            format!(
                "neither the collection nor the JUnit report could be read, so it was not observed whether \
                 {historical:?} were collected; see the `collected` and `outcomes` checks"
            ),
        )
        .with_observed(observed);
    }
    Check::pass(
        &name,
        None,
        format!(
            "no test of the historical file(s) {} was collected (by collected file and source file{}, and by \
             JUnit classname{})",
            historical.join(", "),
            if collection.is_some() { "" } else { ": not observed" },
            if cases.is_some() { "" } else { ": not observed" }
        ),
    )
    .with_observed(observed)
}

/// The JUnit classname pytest gives the tests of `rel` (a `/`-separated path
/// from the rootdir): `Runner/x/test_a.py` is `Runner.x.test_a`.
fn module_classname(rel: &str) -> String {
    let dotted = rel.replace('/', ".");
    dotted
        .strip_suffix(".py")
        .map(str::to_string)
        .unwrap_or(dotted)
}

/// `extracted/source-root`: DIR/extracted holds exactly the candidate
/// folders.
fn source_root_check(ext: &ExtractionObservation) -> Check {
    let name = "extracted/source-root";
    let root = &ext.root;
    let folders = &ext.candidates;
    let present = match &ext.entries {
        Ok(entries) => entries,
        Err(e) => {
            return Check::fail(
                name,
                None,
                format!(
                    "{root} cannot be read ({e}); expected one exact extraction per candidate, made by \
                     `archive-members`"
                ),
            )
            .with_observed(json!({ "root": root, "error": e }))
        }
    };
    let missing: Vec<&String> = folders.iter().filter(|f| !ext.dirs.contains(f)).collect();
    let extra: Vec<&String> = present.iter().filter(|p| !folders.contains(p)).collect();
    let observed =
        json!({ "root": root, "folders": present, "missing": missing, "unexpected": extra });
    if !missing.is_empty() || !extra.is_empty() {
        return Check::fail(
            name,
            None,
            format!(
                "{root} holds {present:?}; expected exactly the candidate folders {folders:?} (missing \
                 {missing:?}, unexpected {extra:?}): re-run the build gates"
            ),
        )
        .with_observed(observed);
    }
    Check::pass(
        name,
        None,
        format!(
            "{root} holds exactly the candidate folders {}",
            folders.join(", ")
        ),
    )
    .with_observed(observed)
}

/// `<run>/extraction-unchanged`: DIR/extracted's digests after the runs
/// equal those before.
fn unchanged_check(run: &str, ext: &ExtractionObservation) -> Check {
    let name = format!("{run}/extraction-unchanged");
    let (before, after) = (&ext.before, &ext.after);
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let changes: Vec<String> = keys
        .into_iter()
        .filter_map(|k| match (before.get(k), after.get(k)) {
            (Some(_), None) => Some(format!("removed {k}")),
            (None, Some(_)) => Some(format!("added {k}")),
            (Some(a), Some(b)) if a != b => Some(format!("changed {k}")),
            _ => None,
        })
        .collect();
    let observed = json!({ "root": ext.root, "entries": before.len(), "changes": changes });
    if changes.is_empty() {
        return Check::pass(
            &name,
            None,
            format!(
                "all {} entries of {} are unchanged after the runs (sha256 and size)",
                before.len(),
                ext.root
            ),
        )
        .with_observed(observed);
    }
    Check::fail(
        &name,
        None,
        format!(
            "the suites modified {}, the exact extractions they were to test: {}; expected them read-only: make \
             the tests write under their tmp_path instead",
            ext.root,
            changes.iter().take(20).cloned().collect::<Vec<_>>().join(", ")
        ),
    )
    .with_observed(observed)
}

/// Counts outcomes; `tests` is the number of testcases.
fn count(cases: &[SuiteTestCase]) -> SuiteCounts {
    let mut c = SuiteCounts {
        tests: cases.len() as u64,
        ..SuiteCounts::default()
    };
    for t in cases {
        *match t.outcome {
            SuiteOutcome::Passed => &mut c.passed,
            SuiteOutcome::Failed => &mut c.failed,
            SuiteOutcome::Error => &mut c.errors,
            SuiteOutcome::Skipped => &mut c.skipped,
            SuiteOutcome::Xfailed => &mut c.xfailed,
            SuiteOutcome::Xpassed => &mut c.xpassed,
            SuiteOutcome::XpassedStrict => &mut c.xpassed_strict,
        } += 1;
    }
    c
}

/// The last `n` lines of `s`, joined by ` | `.
fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
