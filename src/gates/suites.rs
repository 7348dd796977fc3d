//! The `suites` gate: the repository's own pytest suites (profile `[suites]`),
//! run with the genuine interpreter twice:
//!
//! 1. `tree`: in a private copy of the committed tree
//!    (DIR/staging/source copied to `DIR/roots/suites/tree/source`), the
//!    source-root variable unset, so the suites read the committed candidates;
//! 2. `extracted`: in a second private copy, with the source-root variable
//!    (`CODING_RUNNER_SOURCE_ROOT`) set to DIR/extracted, whose children are
//!    the exact extractions of the archives: the suites test what ships.
//!
//! Each run is `python -I -B -m pytest <paths> -p no:cacheprovider --rootdir
//! <copy> -c <config> --junitxml DIR/logs/suites/<run>.xml -q` with a private
//! HOME/TMP, the allowlisted environment plus the source-root variable, its
//! own process group and the profile's time limit. Before it, the
//! `suites_collect.py` probe collects the same suites with the same flags and
//! reports every item (file, source file, JUnit names, the xfail that applies).
//!
//! Outcomes come from the run's JUnit report, in pytest's shapes (checked
//! against pytest 9): an xfail is `<skipped type="pytest.xfail">`, counted as
//! an expected failure and never as a pass; a strict XPASS is a `<failure>`
//! whose message starts with `[XPASS(strict)]`; a non-strict XPASS is a plain
//! testcase, recognised through the probe's xfail record.
//!
//! Checks per run (`<run>/...`): `collected` (pytest collected at least one
//! item and no collection error; exit 5 fails), `historical-not-collected`
//! (no item of a historical file, by the probe's file and source file and by
//! the report's classnames), `outcomes` (exit status 0, no failure or error),
//! `passing` (at least one test passed: skips, xfails and XPASSes are not
//! passes, so an all-skipped suite fails), `strict-xfail` (no strict xfail
//! passed or was reported as a pass), and for `extracted` also `source-root`
//! (DIR/extracted holds exactly the candidate folders) and
//! `extraction-unchanged` (the run did not modify DIR/extracted). After both
//! runs, `extracted/same-outcomes`: both reports hold the same test ids
//! (`classname::name`) with the same outcomes, so fewer passes on
//! DIR/extracted than on the tree fail, naming the ids that differ.
//! Warnings: `xpassed` (a non-strict xfail passed), `stragglers` (the run left
//! processes behind, which were stopped).

use crate::context::{RunContext, Updates};
use crate::evidence::{Check, SuiteCounts, SuiteOutcome, SuiteRun, SuiteTestCase, SuitesRecord};
use crate::process::{self, ChildSpec, RunError};
use crate::profile::SuitesOptions;
use crate::python;
use quick_xml::events::{BytesStart, Event};
use serde::Deserialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `suites` gate.
pub struct Suites;

/// Most bytes of a failure, error or skip text kept per testcase.
const TEXT_LIMIT: usize = 8 * 1024;

/// What `suites_collect.py` reports.
#[derive(Debug, Deserialize)]
struct Collection {
    exit_code: i32,
    pytest_version: String,
    items: Vec<CollectedItem>,
    errors: Vec<CollectError>,
}

/// One collected test item.
#[derive(Debug, Deserialize)]
struct CollectedItem {
    nodeid: String,
    path: String,
    source_file: Option<String>,
    classname: String,
    name: String,
    xfail: Option<XfailMark>,
}

/// The xfail that applies to an item, as pytest evaluated it; `error` when
/// its condition could not be evaluated.
#[derive(Debug, Deserialize)]
struct XfailMark {
    strict: Option<bool>,
    error: Option<String>,
}

/// A collector that failed (import error, syntax error).
#[derive(Debug, Deserialize)]
struct CollectError {
    nodeid: String,
    longrepr: String,
}

/// One of the two runs.
struct RunPlan {
    name: &'static str,
    /// Absolute value of the source-root variable, if set.
    source_root: Option<PathBuf>,
}

impl super::Gate for Suites {
    fn id(&self) -> &'static str {
        "suites"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        let Some(opts) = ctx.profile.profile.suites.clone() else {
            return Ok(vec![Check::warn(
                "suites",
                None,
                "the profile names no pytest suites ([suites] paths): nothing was run and nothing is claimed; \
                 add a [suites] table naming the repository's suites to run them",
            )]);
        };
        let staged = ctx.staged_root.clone().ok_or(
            "the staged source is missing (the `stage` gate did not record DIR/staging/source); run `stage` first",
        )?;
        let mut checks = Vec::new();
        let mut record = SuitesRecord {
            paths: opts.paths.clone(),
            historical: opts.historical.clone(),
            source_root_env: opts.source_root_env.clone(),
            config: opts.config.clone(),
            pytest_version: None,
            runs: Vec::new(),
        };

        let missing: Vec<&String> = opts
            .paths
            .iter()
            .filter(|p| !staged.join(p).exists())
            .collect();
        checks.push(
            Check::from_bool(
                "suite-paths",
                None,
                missing.is_empty(),
                if missing.is_empty() {
                    format!("every suite path of the profile is in the committed tree: {}", opts.paths.join(", "))
                } else {
                    format!(
                        "suite path(s) {missing:?} named by [suites] paths are not in commit {}; expected each to be \
                         a committed file or folder: commit them or fix the profile",
                        ctx.source.commit
                    )
                },
            )
            .with_observed(json!({ "paths": opts.paths, "missing": missing })),
        );
        let missing_historical: Vec<&String> = opts
            .historical
            .iter()
            .filter(|p| !staged.join(p).is_file())
            .collect();
        if !missing_historical.is_empty() {
            checks.push(Check::warn(
                "historical-files",
                None,
                format!(
                    "file(s) {missing_historical:?} marked historical by [suites] historical are not in commit {}; \
                     the not-collected checks hold trivially for them: remove them from the profile or commit them",
                    ctx.source.commit
                ),
            ));
        }
        if let Some(config) = &opts.config {
            let ok = staged.join(config).is_file();
            checks.push(Check::from_bool(
                "config",
                None,
                ok,
                if ok {
                    format!("pytest configuration {config} is in the committed tree")
                } else {
                    format!(
                        "[suites] config names {config}, which is not a file in commit {}; expected the pytest \
                         configuration file: commit it or remove `config` from the profile",
                        ctx.source.commit
                    )
                },
            ));
            if !ok {
                out.set(move |ctx| ctx.suites = Some(record));
                return Ok(checks);
            }
        }
        if !missing.is_empty() {
            out.set(move |ctx| ctx.suites = Some(record));
            return Ok(checks);
        }

        let private_config = ctx
            .evidence_dir
            .join("roots")
            .join("suites")
            .join("pytest.ini");
        if opts.config.is_none() {
            std::fs::create_dir_all(private_config.parent().unwrap_or(&ctx.evidence_dir))
                .and_then(|()| {
                    std::fs::write(
                        &private_config,
                        "# Written by verify-coding-candidates: the profile names no pytest configuration.\n[pytest]\n",
                    )
                })
                .map_err(|e| format!("cannot write {}: {e}", private_config.display()))?;
        }

        // `suites` has scope `whole`: the pipeline never runs it in a
        // `--partition` run, so DIR/extracted holds every candidate here.
        let plans = [
            RunPlan {
                name: "tree",
                source_root: None,
            },
            RunPlan {
                name: "extracted",
                source_root: Some(ctx.extracted_root()),
            },
        ];

        let mut reports_read = Vec::new();
        for plan in &plans {
            let mut before = None;
            if let Some(root) = &plan.source_root {
                let folders: Vec<String> = ctx
                    .profile
                    .profile
                    .candidates
                    .iter()
                    .map(|c| c.folder().to_string())
                    .collect();
                checks.push(source_root_check(root, &folders));
                before = Some(crate::hash::tree_digests(root)?);
            }
            let outcome = run_once(ctx, &opts, &staged, &private_config, plan)?;
            reports_read.push(outcome.report_read);
            if record.pytest_version.is_none() {
                record.pytest_version = outcome.pytest_version;
            }
            checks.extend(outcome.checks);
            record.runs.push(outcome.run);
            if let (Some(root), Some(before)) = (&plan.source_root, before) {
                let after = crate::hash::tree_digests(root)?;
                checks.push(unchanged_check(plan.name, root, &before, &after));
            }
        }
        if let [tree, extracted] = record.runs.as_slice() {
            let observed = reports_read.iter().all(|r| *r);
            checks.push(same_outcomes_check(
                observed.then_some((&tree.testcases[..], &extracted.testcases[..])),
            ));
        }
        out.set(move |ctx| ctx.suites = Some(record));
        Ok(checks)
    }
}

/// What one run produced.
struct RunOutcome {
    /// The run as recorded in the evidence.
    run: SuiteRun,
    /// `pytest.__version__`, when the collection probe answered.
    pytest_version: Option<String>,
    /// The run's checks, in order.
    checks: Vec<Check>,
    /// Whether the run's JUnit report was read (its testcases are observed).
    report_read: bool,
}

/// Copies the staged tree, collects, runs pytest and judges one run.
fn run_once(
    ctx: &RunContext,
    opts: &SuitesOptions,
    staged: &Path,
    private_config: &Path,
    plan: &RunPlan,
) -> Result<RunOutcome, String> {
    let name = plan.name;
    let base = ctx.evidence_dir.join("roots").join("suites").join(name);
    let tree = base.join("source");
    copy_tree(staged, &tree)?;
    let (home, tmp) = ctx
        .private_roots("suites", name)
        .map_err(|e| format!("cannot create private roots under {}: {e}", base.display()))?;
    let mut env = ctx.child_env(&home, &tmp);
    if let Some(root) = &plan.source_root {
        env.insert(opts.source_root_env.clone(), root.display().to_string());
    }
    let mut common: Vec<String> = opts.paths.clone();
    common.extend(["-p", "no:cacheprovider", "--rootdir"].map(String::from));
    common.push(tree.display().to_string());
    common.push("-c".into());
    match &opts.config {
        Some(config) => common.push(tree.join(config).display().to_string()),
        None => {
            common.push(private_config.display().to_string());
            common.push("--confcutdir".into());
            common.push(tree.display().to_string());
        }
    }
    let timeout = Duration::from_secs(opts.timeout_secs);
    let mut checks = Vec::new();

    let collection: Result<Collection, String> = python::run_probe_with_timeout(
        &ctx.python,
        "suites_collect",
        python::SUITES_COLLECT_PROBE,
        &[serde_json::to_string(&common).expect("strings serialise")],
        &tree,
        env.clone(),
        &ctx.log_stem("suites", &format!("{name}-collect")),
        timeout,
    );
    checks.push(collected_check(name, &opts.paths, &collection));

    let junit_abs = ctx
        .evidence_dir
        .join("logs")
        .join("suites")
        .join(format!("{name}.xml"));
    let junit_rel = format!("logs/suites/{name}.xml");
    let mut args: Vec<String> = ["-I", "-B", "-m", "pytest"].map(String::from).to_vec();
    args.extend(common.iter().cloned());
    args.push(format!("--junitxml={}", junit_abs.display()));
    args.push("-q".into());
    let spec = ChildSpec {
        program: ctx.python.clone(),
        args,
        cwd: tree.clone(),
        env,
        timeout,
        log_stem: ctx.log_stem("suites", name),
        stdin: None,
    };
    let output = match process::run(&spec) {
        Ok(out) => Some(out),
        Err(e @ RunError::Interrupted { .. }) => return Err(e.to_string()),
        Err(e) => {
            checks.push(Check::fail(
                &format!("{name}/outcomes"),
                None,
                format!("pytest could not be run: {e}"),
            ));
            None
        }
    };
    let xfails: HashMap<(String, String), Option<bool>> = collection
        .as_ref()
        .map(|c| {
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
        })
        .unwrap_or_default();
    let parsed: Result<Vec<SuiteTestCase>, String> = if junit_abs.is_file() {
        std::fs::read_to_string(&junit_abs)
            .map_err(|e| format!("{junit_rel}: cannot read: {e}"))
            .and_then(|text| parse_junit(&text, &xfails))
    } else {
        Err(format!("pytest wrote no JUnit report ({junit_rel})"))
    };
    let testcases = parsed.as_ref().cloned().unwrap_or_default();
    let counts = count(&testcases);

    let historical = HistoricalFiles::new(&tree, &opts.historical);
    if !opts.historical.is_empty() {
        checks.push(historical.check(name, collection.as_ref().ok(), parsed.as_ref().ok()));
    }
    let exit_code = output
        .as_ref()
        .and_then(|o| if o.timed_out { None } else { o.status.code() });
    let timed_out = output.as_ref().is_some_and(|o| o.timed_out);
    if let Some(out) = &output {
        checks.push(outcomes_check(
            name, out, &parsed, &counts, &junit_rel, timeout,
        ));
        if out.stragglers_killed {
            checks.push(Check::warn(
                &format!("{name}/stragglers"),
                None,
                format!(
                    "the pytest run left processes behind after it exited; they were stopped (TERM, then KILL): \
                     make the suites wait for their children (see {})",
                    out.logs.0.display()
                ),
            ));
        }
    }
    if let Ok(cases) = &parsed {
        checks.push(passing_check(name, cases, &counts));
    }
    checks.push(strict_xfail_check(name, &parsed, &counts, &xfails));
    if counts.xpassed > 0 {
        let ids: Vec<String> = testcases
            .iter()
            .filter(|t| t.outcome == SuiteOutcome::Xpassed)
            .map(|t| format!("{}::{}", t.classname, t.name))
            .collect();
        checks.push(
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
            .with_observed(json!({ "xpassed": ids })),
        );
    }

    let rel = |p: &Path| {
        p.strip_prefix(&ctx.evidence_dir)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let run = SuiteRun {
        name: name.to_string(),
        cwd: rel(&tree),
        source_root: plan.source_root.as_deref().map(rel),
        collected: collection
            .as_ref()
            .map(|c| c.items.len() as u64)
            .unwrap_or(0),
        exit_code,
        timed_out,
        junit: junit_abs.is_file().then_some(junit_rel),
        counts,
        testcases,
    };
    Ok(RunOutcome {
        run,
        pytest_version: collection.ok().map(|c| c.pytest_version),
        checks,
        report_read: parsed.is_ok(),
    })
}

fn collected_check(run: &str, paths: &[String], collection: &Result<Collection, String>) -> Check {
    let name = format!("{run}/collected");
    let c = match collection {
        Ok(c) => c,
        Err(e) => {
            return Check::fail(
                &name,
                None,
                format!("could not collect the suites {paths:?}: {e}; expected pytest to be importable by the interpreter"),
            )
        }
    };
    let observed = json!({
        "exit_code": c.exit_code,
        "items": c.items.len(),
        "errors": c.errors.iter().map(|e| &e.nodeid).collect::<Vec<_>>(),
    });
    if !c.errors.is_empty() {
        let first = &c.errors[0];
        return Check::fail(
            &name,
            None,
            format!(
                "pytest could not collect {} of the suites (exit status {}): {} failed with: {}; fix the import or \
                 syntax error",
                c.errors.len(),
                c.exit_code,
                first.nodeid,
                last_lines(&first.longrepr, 6)
            ),
        )
        .with_observed(observed);
    }
    if c.exit_code == 5 || c.items.is_empty() {
        return Check::fail(
            &name,
            None,
            format!(
                "pytest collected nothing from {paths:?} (exit status {}, 5 means no tests); expected at least one \
                 test: name files that hold `test_*` functions in [suites] paths",
                c.exit_code
            ),
        )
        .with_observed(observed);
    }
    if c.exit_code != 0 {
        return Check::fail(
            &name,
            None,
            format!(
                "pytest exited with status {} while collecting {paths:?}; expected 0: see the `-collect` logs under \
                 DIR/logs/suites/",
                c.exit_code
            ),
        )
        .with_observed(observed);
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

fn outcomes_check(
    run: &str,
    out: &process::ChildOutput,
    parsed: &Result<Vec<SuiteTestCase>, String>,
    counts: &SuiteCounts,
    junit_rel: &str,
    timeout: Duration,
) -> Check {
    let name = format!("{run}/outcomes");
    let observed =
        json!({ "exit_code": out.status.code(), "timed_out": out.timed_out, "counts": counts });
    let log = out.logs.0.display();
    if out.timed_out {
        return Check::fail(
            &name,
            None,
            format!(
                "pytest did not finish within {} s and was stopped; expected the suites to finish: raise \
                 [suites] timeout_secs or fix the hanging test (see {log})",
                timeout.as_secs()
            ),
        )
        .with_observed(observed);
    }
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            return Check::fail(
                &name,
                None,
                format!(
                    "pytest {}, and its JUnit report could not be read: {e}; see {log}",
                    out.describe()
                ),
            )
            .with_observed(observed)
        }
    };
    let bad: Vec<String> = parsed
        .iter()
        .filter(|t| {
            matches!(
                t.outcome,
                SuiteOutcome::Failed | SuiteOutcome::Error | SuiteOutcome::XpassedStrict
            )
        })
        .take(10)
        .map(|t| {
            format!(
                "{}::{} ({:?}: {})",
                t.classname,
                t.name,
                t.outcome,
                t.message
                    .as_deref()
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect::<String>()
            )
        })
        .collect();
    let code = out.status.code();
    if code == Some(5) || counts.tests == 0 {
        return Check::fail(
            &name,
            None,
            format!(
                "pytest {} and ran no test (5 means nothing was collected); expected at least one test in \
                 [suites] paths (see {log})",
                out.describe()
            ),
        )
        .with_observed(observed);
    }
    if code != Some(0) || !bad.is_empty() {
        return Check::fail(
            &name,
            None,
            format!(
                "pytest {}; expected status 0 with no failure or error; found {} failed, {} error(s), {} strict \
                 XPASS: {}; fix the tests or the candidates (report {junit_rel}, output {log})",
                out.describe(),
                counts.failed,
                counts.errors,
                counts.xpassed_strict,
                bad.join("; ")
            ),
        )
        .with_observed(observed);
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
/// fails here although pytest exits 0.
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
    Check::fail(
        &name,
        None,
        format!(
            "no test passed in the {run} run: {} test(s), 0 passed, {} skipped, {} xfailed, {} xpassed \
             (non-strict), {} failed, {} error(s){}{}; expected at least one passing test, since a suite whose \
             tests are all skipped or expected to fail proves nothing: remove the skip marks (for example a \
             module-level `pytestmark = pytest.mark.skip`) or name suites in [suites] paths that run",
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

/// One test whose outcomes differ between the two runs; `None`: the run did
/// not report it. Outcomes are sorted (a test id reported twice has two).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
struct OutcomeDifference {
    id: String,
    tree: Vec<SuiteOutcome>,
    extracted: Vec<SuiteOutcome>,
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
fn same_outcomes_check(reports: Option<(&[SuiteTestCase], &[SuiteTestCase])>) -> Check {
    let name = "extracted/same-outcomes";
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
    let listed: Vec<String> = diffs
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
        .collect();
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

fn strict_xfail_check(
    run: &str,
    parsed: &Result<Vec<SuiteTestCase>, String>,
    counts: &SuiteCounts,
    xfails: &HashMap<(String, String), Option<bool>>,
) -> Check {
    let name = format!("{run}/strict-xfail");
    let Ok(parsed) = parsed else {
        return Check::fail(
            &name,
            None,
            "no JUnit report was read, so no xfail outcome could be observed; see the `outcomes` check",
        );
    };
    let strict_xpass: Vec<String> = parsed
        .iter()
        .filter(|t| t.outcome == SuiteOutcome::XpassedStrict)
        .map(|t| format!("{}::{}", t.classname, t.name))
        .collect();
    let xfailed: Vec<String> = parsed
        .iter()
        .filter(|t| t.outcome == SuiteOutcome::Xfailed)
        .map(|t| format!("{}::{}", t.classname, t.name))
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

/// The files a profile marks historical, in one run's tree copy.
struct HistoricalFiles {
    /// `(relative path, absolute path, canonical path, JUnit classname)`.
    files: Vec<(String, PathBuf, Option<PathBuf>, String)>,
}

impl HistoricalFiles {
    fn new(tree: &Path, historical: &[String]) -> Self {
        let files = historical
            .iter()
            .map(|rel| {
                let abs = tree.join(rel);
                let canonical = abs.canonicalize().ok();
                (rel.clone(), abs, canonical, module_classname(rel))
            })
            .collect();
        Self { files }
    }

    /// The historical file `path` is (by path or canonical path), if any.
    fn matches(&self, path: &str) -> Option<&str> {
        let p = Path::new(path);
        let canonical = p.canonicalize().ok();
        self.files
            .iter()
            .find(|(_, abs, canon, _)| {
                p == abs || (canonical.is_some() && canonical.as_ref() == canon.as_ref())
            })
            .map(|(rel, ..)| rel.as_str())
    }

    fn check(
        &self,
        run: &str,
        collection: Option<&Collection>,
        parsed: Option<&Vec<SuiteTestCase>>,
    ) -> Check {
        let name = format!("{run}/historical-not-collected");
        let mut found: BTreeSet<String> = BTreeSet::new();
        if let Some(c) = collection {
            for item in &c.items {
                let hit = self
                    .matches(&item.path)
                    .or_else(|| item.source_file.as_deref().and_then(|s| self.matches(s)));
                if let Some(rel) = hit {
                    found.insert(format!("{} (collected item from {rel})", item.nodeid));
                }
            }
        }
        if let Some(cases) = parsed {
            for t in cases {
                for (rel, _, _, classname) in &self.files {
                    if t.classname == *classname
                        || t.classname.starts_with(&format!("{classname}."))
                    {
                        found.insert(format!(
                            "{}::{} (JUnit testcase of {rel})",
                            t.classname, t.name
                        ));
                    }
                }
            }
        }
        let names: Vec<&str> = self.files.iter().map(|(rel, ..)| rel.as_str()).collect();
        let observed = json!({
            "historical": names,
            "collection_observed": collection.is_some(),
            "report_observed": parsed.is_some(),
            "found": found,
        });
        if !found.is_empty() {
            return Check::fail(
                &name,
                None,
                format!(
                    "tests of historical file(s) {names:?} were collected: {}; historical files are excluded from \
                     discovery and never counted: remove them from [suites] paths and do not import their tests \
                     into a suite",
                    found.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
            .with_observed(observed);
        }
        if collection.is_none() && parsed.is_none() {
            return Check::fail(
                &name,
                None,
                format!(
                    "neither the collection nor the JUnit report could be read, so it was not observed whether \
                     {names:?} were collected; see the `collected` and `outcomes` checks"
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
                names.join(", "),
                if collection.is_some() { "" } else { ": not observed" },
                if parsed.is_some() { "" } else { ": not observed" }
            ),
        )
        .with_observed(observed)
    }
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

fn source_root_check(root: &Path, folders: &[String]) -> Check {
    let name = "extracted/source-root";
    let present: BTreeSet<String> = match std::fs::read_dir(root) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => {
            return Check::fail(
                name,
                None,
                format!(
                    "{} cannot be read ({e}); expected one exact extraction per candidate, made by \
                     `archive-members`",
                    root.display()
                ),
            )
        }
    };
    let missing: Vec<&String> = folders.iter().filter(|f| !root.join(f).is_dir()).collect();
    let extra: Vec<&String> = present.iter().filter(|p| !folders.contains(p)).collect();
    let observed = json!({ "root": root.display().to_string(), "folders": present, "missing": missing, "unexpected": extra });
    if !missing.is_empty() || !extra.is_empty() {
        return Check::fail(
            name,
            None,
            format!(
                "{} holds {:?}; expected exactly the candidate folders {folders:?} (missing {missing:?}, unexpected \
                 {extra:?}): re-run the build gates",
                root.display(),
                present
            ),
        )
        .with_observed(observed);
    }
    Check::pass(
        name,
        None,
        format!(
            "{} holds exactly the candidate folders {}",
            root.display(),
            folders.join(", ")
        ),
    )
    .with_observed(observed)
}

fn unchanged_check(
    run: &str,
    root: &Path,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Check {
    let name = format!("{run}/extraction-unchanged");
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
    if changes.is_empty() {
        return Check::pass(
            &name,
            None,
            format!(
                "all {} entries of {} are unchanged after the run (sha256 and size)",
                before.len(),
                root.display()
            ),
        );
    }
    Check::fail(
        &name,
        None,
        format!(
            "the suites modified {}, the exact extractions they were to test: {}; expected them read-only: make \
             the tests write under their tmp_path instead",
            root.display(),
            changes.iter().take(20).cloned().collect::<Vec<_>>().join(", ")
        ),
    )
    .with_observed(json!({ "changes": changes }))
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

/// A testcase being read.
#[derive(Default)]
struct Pending {
    classname: String,
    name: String,
    duration_ms: Option<u64>,
    /// The most severe result element so far: `(rank, kind, type, message)`,
    /// rank error 3 > failure 2 > skipped 1.
    result: Option<(u8, String, Option<String>, Option<String>)>,
    text: String,
    /// Inside a result element: its text is collected.
    in_result: bool,
}

/// Reads pytest's JUnit report into testcases. `xfails` maps `(classname,
/// name)` of collected items carrying an applicable xfail to its strictness
/// (`None`: unknown), so a plain pass of such an item is an XPASS.
///
/// # Errors
/// A sentence when the XML is malformed.
pub(crate) fn parse_junit(
    text: &str,
    xfails: &HashMap<(String, String), Option<bool>>,
) -> Result<Vec<SuiteTestCase>, String> {
    let mut reader = quick_xml::Reader::from_str(text);
    let mut out = Vec::new();
    let mut current: Option<Pending> = None;
    let attr = |e: &BytesStart, key: &[u8]| -> Result<Option<String>, String> {
        for a in e.attributes() {
            let a = a.map_err(|err| format!("malformed JUnit attribute: {err}"))?;
            if a.key.as_ref() == key {
                return a
                    .unescape_value()
                    .map(|v| Some(v.into_owned()))
                    .map_err(|err| format!("malformed JUnit attribute value: {err}"));
            }
        }
        Ok(None)
    };
    loop {
        let event = reader.read_event().map_err(|e| {
            format!(
                "malformed JUnit XML at byte {}: {e}",
                reader.buffer_position()
            )
        })?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                match e.name().as_ref() {
                    b"testcase" => {
                        let pending = Pending {
                            classname: attr(e, b"classname")?.unwrap_or_default(),
                            name: attr(e, b"name")?.unwrap_or_default(),
                            duration_ms: attr(e, b"time")?
                                .and_then(|t| t.parse::<f64>().ok())
                                .map(|s| (s * 1000.0).round() as u64),
                            ..Pending::default()
                        };
                        if empty {
                            out.push(finish(pending, xfails));
                        } else {
                            current = Some(pending);
                        }
                    }
                    kind @ (b"failure" | b"error" | b"skipped") => {
                        if let Some(p) = current.as_mut() {
                            let rank = match kind {
                                b"error" => 3,
                                b"failure" => 2,
                                _ => 1,
                            };
                            if !matches!(&p.result, Some(r) if r.0 >= rank) {
                                p.result = Some((
                                    rank,
                                    String::from_utf8_lossy(kind).into_owned(),
                                    attr(e, b"type")?,
                                    attr(e, b"message")?,
                                ));
                                p.text.clear();
                                p.in_result = !empty;
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(t) => {
                if let Some(p) = current.as_mut().filter(|p| p.in_result) {
                    p.text.push_str(
                        &t.decode()
                            .map_err(|e| format!("malformed JUnit text: {e}"))?,
                    );
                }
            }
            Event::CData(t) => {
                if let Some(p) = current.as_mut().filter(|p| p.in_result) {
                    let raw = t
                        .decode()
                        .map_err(|e| format!("malformed JUnit CDATA: {e}"))?;
                    p.text.push_str(&quick_xml::escape::escape(raw.as_ref()));
                }
            }
            Event::GeneralRef(r) => {
                if let Some(p) = current.as_mut().filter(|p| p.in_result) {
                    let raw = r
                        .decode()
                        .map_err(|e| format!("malformed JUnit reference: {e}"))?;
                    p.text.push('&');
                    p.text.push_str(&raw);
                    p.text.push(';');
                }
            }
            Event::End(ref e) => match e.name().as_ref() {
                b"testcase" => {
                    if let Some(p) = current.take() {
                        out.push(finish(p, xfails));
                    }
                }
                b"failure" | b"error" | b"skipped" => {
                    if let Some(p) = current.as_mut() {
                        p.in_result = false;
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if current.is_some() {
        return Err("malformed JUnit XML: a testcase element is not closed".into());
    }
    Ok(out)
}

fn finish(p: Pending, xfails: &HashMap<(String, String), Option<bool>>) -> SuiteTestCase {
    let text = if p.text.trim().is_empty() {
        None
    } else {
        let unescaped = quick_xml::escape::unescape(&p.text)
            .map(|c| c.into_owned())
            .unwrap_or_else(|_| p.text.clone());
        Some(truncate(&unescaped, TEXT_LIMIT))
    };
    let (outcome, message) = match p.result {
        None => {
            let outcome = match xfails.get(&(p.classname.clone(), p.name.clone())) {
                Some(Some(true)) => SuiteOutcome::XpassedStrict,
                Some(_) => SuiteOutcome::Xpassed,
                None => SuiteOutcome::Passed,
            };
            (outcome, None)
        }
        Some((_, kind, ty, message)) => {
            let outcome = match kind.as_str() {
                "error" => SuiteOutcome::Error,
                "failure"
                    if message
                        .as_deref()
                        .is_some_and(|m| m.starts_with("[XPASS(strict)]")) =>
                {
                    SuiteOutcome::XpassedStrict
                }
                "failure" => SuiteOutcome::Failed,
                _ if ty.as_deref() == Some("pytest.xfail") => SuiteOutcome::Xfailed,
                _ => SuiteOutcome::Skipped,
            };
            (outcome, message)
        }
    };
    SuiteTestCase {
        classname: p.classname,
        name: p.name,
        outcome,
        message,
        text,
        duration_ms: p.duration_ms,
    }
}

fn truncate(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Copies `src` into `dst` (created): directories, regular files (with their
/// permissions) and symlinks as symlinks with the same target.
///
/// # Errors
/// A sentence naming the entry that could not be copied.
fn copy_tree(src: &Path, dst: &Path) -> Result<(), String> {
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

    /// The report pytest 9.2 wrote for one test of each shape (captured from
    /// a real run; tracebacks shortened).
    const SHAPES: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="6" time="0.046" timestamp="2026-11-29T18:17:21.411663+00:00" hostname="vm"><testcase classname="test_shapes" name="test_xpass_strict" time="0.001"><failure message="[XPASS(strict)] strictreason">[XPASS(strict)] strictreason</failure></testcase><testcase classname="test_shapes" name="test_xpass_loose" time="0.000" /><testcase classname="test_shapes" name="test_skip" time="0.000"><skipped type="pytest.skip" message="skipreason">/tmp/x/test_shapes.py:12: skipreason</skipped></testcase><testcase classname="test_shapes" name="test_error" time="0.000"><error message="failed on setup with &quot;RuntimeError: fixture boom&quot;">E       RuntimeError: fixture boom&#10;&gt; x</error></testcase><testcase classname="test_shapes" name="test_fail" time="0.001"><failure message="assert 1 == 2">&gt;       assert 1 == 2</failure></testcase><testcase classname="test_shapes" name="test_xfail_imperative" time="0.000"><skipped type="pytest.xfail" message="imperative" /></testcase><testcase classname="Runner.certification-tests.test_a" name="test_ok[p-1]" time="1.019" /></testsuite></testsuites>"#;

    fn xfails() -> HashMap<(String, String), Option<bool>> {
        HashMap::from([
            (
                ("test_shapes".into(), "test_xpass_strict".into()),
                Some(true),
            ),
            (
                ("test_shapes".into(), "test_xpass_loose".into()),
                Some(false),
            ),
        ])
    }

    #[test]
    fn every_pytest_shape_is_classified() {
        let cases = parse_junit(SHAPES, &xfails()).unwrap();
        let outcomes: Vec<(&str, SuiteOutcome)> =
            cases.iter().map(|c| (c.name.as_str(), c.outcome)).collect();
        assert_eq!(
            outcomes,
            [
                ("test_xpass_strict", SuiteOutcome::XpassedStrict),
                ("test_xpass_loose", SuiteOutcome::Xpassed),
                ("test_skip", SuiteOutcome::Skipped),
                ("test_error", SuiteOutcome::Error),
                ("test_fail", SuiteOutcome::Failed),
                ("test_xfail_imperative", SuiteOutcome::Xfailed),
                ("test_ok[p-1]", SuiteOutcome::Passed),
            ]
        );
        assert_eq!(
            cases[3].message.as_deref(),
            Some("failed on setup with \"RuntimeError: fixture boom\"")
        );
        assert_eq!(
            cases[3].text.as_deref(),
            Some("E       RuntimeError: fixture boom\n> x")
        );
        assert_eq!(cases[4].text.as_deref(), Some(">       assert 1 == 2"));
        assert_eq!(cases[6].duration_ms, Some(1019));
        assert_eq!(cases[6].classname, "Runner.certification-tests.test_a");
    }

    #[test]
    fn xfail_is_never_counted_as_a_pass() {
        let counts = count(&parse_junit(SHAPES, &xfails()).unwrap());
        assert_eq!(
            counts,
            SuiteCounts {
                tests: 7,
                passed: 1,
                failed: 1,
                errors: 1,
                skipped: 1,
                xfailed: 1,
                xpassed: 1,
                xpassed_strict: 1,
            }
        );
    }

    #[test]
    fn a_plain_pass_of_a_strict_xfail_item_is_a_strict_xpass() {
        let map = HashMap::from([(
            ("test_shapes".to_string(), "test_xpass_loose".to_string()),
            Some(true),
        )]);
        let cases = parse_junit(SHAPES, &map).unwrap();
        assert_eq!(cases[1].outcome, SuiteOutcome::XpassedStrict);
    }

    #[test]
    fn malformed_reports_are_errors() {
        assert!(
            parse_junit("<testsuites><testcase name=\"a\">", &HashMap::new())
                .unwrap_err()
                .contains("not closed")
        );
        assert!(parse_junit(
            "<testsuites><testcase name=\"a\"></testsuite>",
            &HashMap::new()
        )
        .is_err());
    }

    #[test]
    fn module_classname_is_pytests_dotted_path() {
        assert_eq!(
            module_classname(
                "Runner/certification-tests/historical_coding_runner_shared_blockers.py"
            ),
            "Runner.certification-tests.historical_coding_runner_shared_blockers"
        );
    }

    #[test]
    fn historical_check_sees_items_by_file_source_file_and_classname() {
        let d = tempfile::tempdir().unwrap();
        let rel = "R/t/historical_x.py";
        std::fs::create_dir_all(d.path().join("R/t")).unwrap();
        std::fs::write(d.path().join(rel), "").unwrap();
        let h = HistoricalFiles::new(d.path(), &[rel.to_string()]);
        let item = |path: String, source: Option<String>| CollectedItem {
            nodeid: "R/t/test_a.py::test_x".into(),
            path,
            source_file: source,
            classname: "R.t.test_a".into(),
            name: "test_x".into(),
            xfail: None,
        };
        let clean = Collection {
            exit_code: 0,
            pytest_version: "9".into(),
            items: vec![item(
                d.path().join("R/t/test_a.py").display().to_string(),
                None,
            )],
            errors: vec![],
        };
        let check = h.check("tree", Some(&clean), Some(&vec![]));
        assert_eq!(
            check.result,
            crate::evidence::CheckResult::Pass,
            "{}",
            check.detail
        );

        let imported = Collection {
            items: vec![item(
                d.path().join("R/t/test_a.py").display().to_string(),
                Some(d.path().join(rel).display().to_string()),
            )],
            ..clean
        };
        let check = h.check("tree", Some(&imported), None);
        assert_eq!(check.result, crate::evidence::CheckResult::Fail);
        assert!(
            check
                .detail
                .contains("R/t/test_a.py::test_x (collected item from R/t/historical_x.py)"),
            "{}",
            check.detail
        );

        let junit = vec![SuiteTestCase {
            classname: "R.t.historical_x".into(),
            name: "test_y".into(),
            outcome: SuiteOutcome::Xfailed,
            message: None,
            text: None,
            duration_ms: None,
        }];
        let check = h.check("extracted", None, Some(&junit));
        assert_eq!(check.result, crate::evidence::CheckResult::Fail);
        assert!(
            check.detail.contains("R.t.historical_x::test_y"),
            "{}",
            check.detail
        );

        let check = h.check("extracted", None, None);
        assert_eq!(check.result, crate::evidence::CheckResult::Fail);
        assert!(check.detail.contains("not observed"), "{}", check.detail);
    }

    #[test]
    fn source_root_must_hold_exactly_the_candidate_folders() {
        let d = tempfile::tempdir().unwrap();
        for f in ["a", "b"] {
            std::fs::create_dir(d.path().join(f)).unwrap();
        }
        let folders = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            source_root_check(d.path(), &folders).result,
            crate::evidence::CheckResult::Pass
        );
        std::fs::create_dir(d.path().join("c")).unwrap();
        let check = source_root_check(d.path(), &folders[..1]);
        assert_eq!(check.result, crate::evidence::CheckResult::Fail);
        assert!(
            check.detail.contains("unexpected [\"b\", \"c\"]"),
            "{}",
            check.detail
        );
    }

    #[test]
    fn copy_tree_copies_files_and_links_and_digests_see_changes() {
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
        std::fs::write(target.join("a/b/f.py"), "x = 2\n").unwrap();
        let check = unchanged_check(
            "extracted",
            &target,
            &before,
            &crate::hash::tree_digests(&target).unwrap(),
        );
        assert_eq!(check.result, crate::evidence::CheckResult::Fail);
        assert!(
            check.detail.contains("changed a/b/f.py"),
            "{}",
            check.detail
        );
    }

    fn case(name: &str, outcome: SuiteOutcome, message: Option<&str>) -> SuiteTestCase {
        SuiteTestCase {
            classname: "R.t.test_a".into(),
            name: name.into(),
            outcome,
            message: message.map(str::to_string),
            text: None,
            duration_ms: None,
        }
    }

    #[test]
    fn a_run_where_everything_is_skipped_fails_the_passing_check() {
        let cases = vec![
            case("test_x", SuiteOutcome::Skipped, Some("unconditional skip")),
            case("test_y", SuiteOutcome::Skipped, Some("unconditional skip")),
        ];
        let c = passing_check("tree", &cases, &count(&cases));
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert!(
            c.detail
                .contains("no test passed in the tree run: 2 test(s), 0 passed, 2 skipped"),
            "{}",
            c.detail
        );
        assert!(
            c.detail
                .contains("R.t.test_a::test_x (skipped: unconditional skip)"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains("pytestmark = pytest.mark.skip"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn xfails_and_xpasses_alone_are_not_a_passing_run() {
        let cases = vec![
            case("test_x", SuiteOutcome::Xfailed, None),
            case("test_y", SuiteOutcome::Xpassed, None),
        ];
        assert_eq!(
            passing_check("extracted", &cases, &count(&cases)).result,
            crate::evidence::CheckResult::Fail
        );
        assert_eq!(
            passing_check("extracted", &[], &count(&[])).result,
            crate::evidence::CheckResult::Fail
        );
        let one = vec![case("test_x", SuiteOutcome::Passed, None), cases[0].clone()];
        assert_eq!(
            passing_check("extracted", &one, &count(&one)).result,
            crate::evidence::CheckResult::Pass
        );
    }

    #[test]
    fn fewer_passes_on_the_extraction_fail_naming_the_ids() {
        let tree = vec![
            case("test_x", SuiteOutcome::Passed, None),
            case("test_y", SuiteOutcome::Passed, None),
        ];
        let extracted = vec![
            case("test_x", SuiteOutcome::Passed, None),
            case(
                "test_y",
                SuiteOutcome::Skipped,
                Some("no pkg/ in the extraction"),
            ),
        ];
        let c = same_outcomes_check(Some((&tree, &extracted)));
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert!(
            c.detail
                .contains("fewer tests pass on DIR/extracted (1) than on the committed tree (2)"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains(
                "R.t.test_a::test_y: tree passed, extracted skipped (no pkg/ in the extraction)"
            ),
            "{}",
            c.detail
        );
        assert!(!c.detail.contains("test_x:"), "{}", c.detail);
    }

    #[test]
    fn a_test_missing_from_one_run_or_changing_outcome_is_a_difference() {
        let tree = vec![
            case("test_x", SuiteOutcome::Xfailed, None),
            case("test_y", SuiteOutcome::Passed, None),
        ];
        let extracted = vec![
            case("test_x", SuiteOutcome::Failed, None),
            case("test_z", SuiteOutcome::Passed, None),
            case("test_y", SuiteOutcome::Passed, None),
        ];
        let d = outcome_differences(&tree, &extracted);
        let ids: Vec<&str> = d.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["R.t.test_a::test_x", "R.t.test_a::test_z"]);
        assert_eq!(d[1].tree, []);
        let c = same_outcomes_check(Some((&tree, &extracted)));
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert!(
            c.detail
                .contains("R.t.test_a::test_z: tree not reported, extracted passed"),
            "{}",
            c.detail
        );
        assert!(
            c.detail
                .contains("R.t.test_a::test_x: tree xfailed, extracted failed"),
            "{}",
            c.detail
        );
        // Same ids, same outcomes, any order: agreement.
        let mut shuffled = tree.clone();
        shuffled.reverse();
        assert_eq!(
            same_outcomes_check(Some((&tree, &shuffled))).result,
            crate::evidence::CheckResult::Pass
        );
        assert_eq!(
            same_outcomes_check(None).result,
            crate::evidence::CheckResult::Fail
        );
    }
}
