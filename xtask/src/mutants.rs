//! `cargo xtask mutants`: cargo-mutants over the gates and the readers of
//! untrusted bytes, against the fast tests (the library's unit tests), with
//! a table per file and the 90 % target for every gate file.
//!
//! cargo-mutants' own settings (the tests it runs, the profile, where its
//! results go) are in `.cargo/mutants.toml`; the scope is here, because
//! cargo-mutants adds command-line `--file` globs to the configured ones,
//! so a configured scope could not be narrowed to one file.
//!
//! Surviving mutants that no test can kill are listed, one line each with
//! the reason, in `mutants-equivalent.txt` (see [`parse_equivalents`]).

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The cargo-mutants release `cargo xtask mutants` runs (and installs when
/// missing): its mutant names and `outcomes.json` are what the table reads.
pub const VERSION: &str = "27.1.0";

/// Where the gates are.
pub const GATES: &str = "src/gates/";

/// Whether `file` is a gate file, held to [`TARGET_PERCENT`]: the one file
/// each gate keeps, where its decisions are (`src/gates/<gate>.rs`, or
/// `src/gates/<gate>/mod.rs` with its decisions in `decide.rs`), and
/// `src/gates/mod.rs`. The rest of a gate's folder (`observe.rs`, the
/// probes' drivers, the readers it owns) is the I/O the fast tests cannot
/// drive without the SDK's processes: reported beside, as the readers are.
pub fn is_gate_file(file: &str) -> bool {
    let Some(rest) = file.strip_prefix(GATES) else {
        return false;
    };
    match rest.split_once('/') {
        None => rest.ends_with(".rs"),
        Some((_, inner)) => inner == "mod.rs" || inner == "decide.rs",
    }
}

/// What is mutated: every gate, and the readers of untrusted bytes (the
/// RECORD parser is `src/gates/sdk_record.rs`).
pub const SCOPE: &[&str] = &[
    "src/gates/**/*.rs",
    "src/lbpkg.rs",
    "src/archive.rs",
    "src/hash.rs",
    "src/manifest.rs",
    "src/manifest_yaml.rs",
    "src/profile.rs",
];

/// The share of viable mutants (caught, missed or timed out, less the ones
/// listed as equivalent) a gate file's unit tests must catch.
pub const TARGET_PERCENT: u32 = 90;

/// The checked-in list of equivalent mutants, at the workspace root.
pub const EQUIVALENTS: &str = "mutants-equivalent.txt";

/// Seconds one mutant takes on the development machine (2 cores, idle; a
/// loaded machine takes two or three times as long),
/// for `--list`'s estimate: the incremental rebuild of the library's test
/// binary with `[profile.mutants]`, then its unit tests.
pub const SECONDS_PER_MUTANT: u32 = 10;

const USAGE: &str = "\
usage: cargo xtask mutants [--list] [--report] [--file PATH]... [CARGO-MUTANTS ARGS] [-- CARGO TEST ARGS]

  --list        list the mutants per file and estimate the time; run nothing
  --report      print the table of the last runs (target/mutants-shards/) again; run nothing
  --file PATH   only this file (repeatable; src/gates/<gate>.rs, src/gates/<gate>/<file>.rs
                or src/<reader>.rs); default: every gate (src/gates/) and the readers
  other args    passed to cargo mutants, e.g. --timeout 300, --re REGEX, --iterate
                (skip the mutants the shard's last run caught), --in-diff FILE
  -- ARGS       replace the shard's test filter: ARGS go to `cargo test --lib`

Runs cargo-mutants (installed at version VERSION when missing) with PYTHON set
to the SDK interpreter, one shard per module: a gate's file and folder
(src/gates/<gate>.rs, src/gates/<gate>/) against the gate's own unit tests
(`cargo test --lib gates::<gate>::`), each reader against its own. A mutant
that only another module's tests would catch counts as missed, so the table
can only understate. Each shard's run goes to
target/mutants-shards/<shard>/mutants.out, and is folded into the shard's
table, merged.json: every mutant its files have now, with the outcome of the
last run that tested it (so --iterate, --re, --in-diff or one file update it).
The report adds up every shard there (a shard not rerun keeps its table). It
prints caught, missed, equivalent, unviable and timeouts per file, and the
missed mutants that mutants-equivalent.txt does not list. Exit 1 when a gate file catches fewer
than TARGET % of its viable mutants (caught + missed + timeouts, less the
equivalent ones).";

/// The command line of `cargo xtask mutants`.
#[derive(Debug, Default, PartialEq)]
struct Args {
    list: bool,
    report: bool,
    files: Vec<String>,
    passthrough: Vec<OsString>,
}

fn parse_args(args: &[OsString]) -> Result<Option<Args>> {
    let mut parsed = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--") => {
                parsed.passthrough.push(arg.clone());
                parsed.passthrough.extend(it.by_ref().cloned());
            }
            Some("-h" | "--help") => return Ok(None),
            Some("--list") => parsed.list = true,
            Some("--report") => parsed.report = true,
            Some("--file" | "-f") => {
                let path = it.next().context("--file needs a path")?;
                parsed.files.push(path.to_string_lossy().into_owned());
            }
            Some(s) if s.starts_with("--file=") => {
                parsed.files.push(s["--file=".len()..].to_string());
            }
            _ => parsed.passthrough.push(arg.clone()),
        }
    }
    Ok(Some(parsed))
}

/// `cargo xtask mutants [ARGS]`.
pub fn run(
    root: &Path,
    target: &Path,
    python: impl FnOnce() -> Result<PathBuf>,
    args: &[OsString],
) -> Result<i32> {
    let Some(args) = parse_args(args)? else {
        println!(
            "{}",
            USAGE
                .replace("VERSION", VERSION)
                .replace("TARGET", &TARGET_PERCENT.to_string())
        );
        return Ok(0);
    };
    if args.report {
        return report(root, target);
    }
    let tool = ensure_installed(target)?;
    if args.list {
        let files: Vec<String> = if args.files.is_empty() {
            SCOPE.iter().map(|s| s.to_string()).collect()
        } else {
            args.files.clone()
        };
        let listed = list_json(&tool, root, &files, &args.passthrough)?;
        print!("{}", render_list(&count_listed(&listed)?));
        return Ok(0);
    }
    let shards = if args.files.is_empty() {
        default_shards(root)?
    } else {
        shards_of(&args.files)?
    };
    let python = python()?;
    let user_test_args = args.passthrough.iter().any(|a| a == "--");
    let parallel = args.passthrough.iter().any(|a| {
        let a = a.to_string_lossy();
        a == "-j" || a.starts_with("--jobs") || a.starts_with("-j")
    }) || std::env::var_os("CARGO_MUTANTS_JOBS").is_some();
    for (i, shard) in shards.iter().enumerate() {
        let output = target.join(SHARDS).join(&shard.name);
        eprintln!(
            "mutants: shard {}/{} {} ({}), tests matching `{}`, PYTHON={} (results in {})",
            i + 1,
            shards.len(),
            shard.name,
            shard.files.join(" "),
            shard.filter,
            python.display(),
            output.join("mutants.out").display()
        );
        std::fs::create_dir_all(&output).with_context(|| format!("create {}", output.display()))?;
        let mut cmd = Command::new(&tool);
        cmd.current_dir(root).arg("mutants");
        for file in &shard.files {
            cmd.arg("--file").arg(file);
        }
        cmd.arg("--output").arg(&output);
        // One persistent target directory for the scratch copy when one job
        // runs: the dependencies (and most of the crate) stay built from one
        // mutant, and one shard, to the next. With several jobs each copy
        // needs its own, as cargo-mutants makes.
        if !parallel {
            cmd.env("CARGO_TARGET_DIR", target.join("mutants-build"));
        }
        cmd.args(&args.passthrough);
        if !user_test_args {
            // `cargo test --lib FILTER -- MORE`: the test binary runs every
            // test matching any of them. The gates' shared tests (the
            // catalogue against the implementations) are every gate's.
            cmd.arg("--").arg(&shard.filter);
            if shard.filter.starts_with("gates::") && shard.filter != "gates::" {
                cmd.args(["--", "gates::tests::"]);
            }
        }
        let status = cmd
            .env("PYTHON", &python)
            .stdin(Stdio::null())
            .stdout(std::io::stderr())
            .status()
            .context("cannot start cargo mutants")?;
        // cargo-mutants: 0 all caught, 2 some missed, 3 some timed out; others
        // (1 usage, 4 the unmutated tree fails its tests) leave no table.
        if !matches!(status.code(), Some(0 | 2 | 3)) {
            bail!(
                "cargo mutants failed on shard {} ({status}); see its output above and {}",
                shard.name,
                output.join("mutants.out").display()
            );
        }
        record_shard(&tool, root, &output, &shard.files)?;
    }
    report(root, target)
}

/// The shard's table, kept across runs: `<shard>/merged.json`, in
/// `outcomes.json`'s shape.
pub const MERGED: &str = "merged.json";

/// Folds the shard run that just ended into `<output>/merged.json` (see
/// [`merge`]): the previous table is `merged.json`, or before the first
/// merge the run cargo-mutants moved to `mutants.out.old`. Warns when a
/// mutant of the code as it is has no outcome (run the shard without
/// `--iterate`).
fn record_shard(tool: &Path, root: &Path, output: &Path, files: &[String]) -> Result<()> {
    let read = |path: &Path| -> Result<Option<Vec<Outcome>>> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let json: Value = serde_json::from_str(&text)
                    .with_context(|| format!("{}: not JSON", path.display()))?;
                Ok(Some(
                    parse_outcomes(&json).with_context(|| format!("{}", path.display()))?,
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("read {}", path.display())),
        }
    };
    let merged_path = output.join(MERGED);
    let previous = match read(&merged_path)? {
        Some(p) => p,
        None => read(&output.join("mutants.out.old").join("outcomes.json"))?.unwrap_or_default(),
    };
    let ran = read(&output.join("mutants.out").join("outcomes.json"))?
        .context("cargo mutants left no outcomes.json")?;
    let current = listed_mutants(&list_json(tool, root, files, &[])?)?;
    let (merged, untested) = merge(&previous, &ran, &current);
    std::fs::write(
        &merged_path,
        serde_json::to_vec_pretty(&outcomes_json(&merged))?,
    )
    .with_context(|| format!("write {}", merged_path.display()))?;
    if !untested.is_empty() {
        eprintln!(
            "mutants: {} mutant(s) of the code as it is have no outcome in this run or an earlier \
             one (first: {}); run the shard without --iterate to test them",
            untested.len(),
            untested[0]
        );
    }
    Ok(())
}

/// `cargo mutants --list --json --file FILE... EXTRA...` in `root`: every
/// mutant of the files, as JSON (a list of mutants). Runs no test.
fn list_json(tool: &Path, root: &Path, files: &[String], extra: &[OsString]) -> Result<Value> {
    let mut cmd = Command::new(tool);
    cmd.current_dir(root).arg("mutants");
    for file in files {
        cmd.arg("--file").arg(file);
    }
    let out = cmd
        .args(["--list", "--json"])
        .args(extra)
        .stderr(Stdio::inherit())
        .output()
        .context("cannot start cargo mutants --list")?;
    if !out.status.success() {
        bail!("cargo mutants --list failed ({})", out.status);
    }
    serde_json::from_slice(&out.stdout).context("cargo mutants --list --json: not JSON")
}

/// The mutants `cargo mutants --list --json` lists: (file, name).
pub fn listed_mutants(json: &Value) -> Result<Vec<(String, String)>> {
    let list = json
        .as_array()
        .context("cargo mutants --list --json: not a list")?;
    list.iter()
        .map(|m| {
            let o = mutant_outcome(m, Fate::Caught)?;
            Ok((o.file, o.name))
        })
        .collect()
}

/// A shard's table after a run: `ran` (this run's outcomes) over
/// `previous` (the table before it), for the mutants `current` (every
/// mutant the files of the run have now, unfiltered).
///
/// cargo-mutants' `--iterate` re-tests only what earlier runs did not catch
/// (or found unviable), and `--re`/`--in-diff` test a part: their
/// `outcomes.json` holds only what they tested. Here a mutant of the
/// current code takes its outcome from this run when it was tested, else
/// from the previous table (same name, line and column: an edit that moves
/// it makes it untested). A previous entry for a file of the run that is no
/// longer a mutant there is dropped; entries for the shard's other files
/// are kept. Returns the table and the names of current mutants with no
/// outcome.
pub fn merge(
    previous: &[Outcome],
    ran: &[Outcome],
    current: &[(String, String)],
) -> (Vec<Outcome>, Vec<String>) {
    let files: BTreeSet<&str> = current.iter().map(|(f, _)| f.as_str()).collect();
    let by_name = |list: &[Outcome]| -> BTreeMap<String, Outcome> {
        list.iter().map(|o| (o.name.clone(), o.clone())).collect()
    };
    let (ran, previous_by_name) = (by_name(ran), by_name(previous));
    let mut merged: Vec<Outcome> = previous
        .iter()
        .filter(|o| !files.contains(o.file.as_str()) && !ran.contains_key(&o.name))
        .cloned()
        .collect();
    let mut untested = Vec::new();
    for (_, name) in current {
        match ran.get(name).or_else(|| previous_by_name.get(name)) {
            Some(o) => merged.push(o.clone()),
            None => untested.push(name.clone()),
        }
    }
    // A mutant this run tested that the listing does not have (it should
    // not happen): keep it rather than lose an outcome.
    let listed: BTreeSet<&str> = current.iter().map(|(_, n)| n.as_str()).collect();
    merged.extend(
        ran.values()
            .filter(|o| !listed.contains(o.name.as_str()) && files.contains(o.file.as_str()))
            .cloned(),
    );
    merged.extend(
        ran.values()
            .filter(|o| !files.contains(o.file.as_str()))
            .cloned(),
    );
    (merged, untested)
}

/// `outcomes` in `outcomes.json`'s shape, which [`parse_outcomes`] reads.
pub fn outcomes_json(outcomes: &[Outcome]) -> Value {
    let list: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            serde_json::json!({
                "scenario": {"Mutant": {"file": o.file, "name": o.name}},
                "summary": match o.fate {
                    Fate::Caught => "CaughtMutant",
                    Fate::Missed => "MissedMutant",
                    Fate::Unviable => "Unviable",
                    Fate::Timeout => "Timeout",
                },
            })
        })
        .collect();
    serde_json::json!({ "outcomes": list })
}

/// Where each shard's results go: `<target>/mutants-shards/<shard>/mutants.out`.
pub const SHARDS: &str = "mutants-shards";

/// One cargo-mutants invocation: the files of one module, tested by that
/// module's own unit tests (`filter`, a test-name filter given to
/// `cargo test`; a gate's shard also runs `gates::tests::`, the catalogue
/// against the implementations). A mutant only another module's tests would kill counts
/// as missed: the table can only understate what the tests catch.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// `stage`, `worker_isolation`, `gates`, `lbpkg`, ...
    pub name: String,
    /// cargo-mutants `--file` globs.
    pub files: Vec<String>,
    /// `gates::stage::`, `lbpkg::`, ...
    pub filter: String,
}

/// The module a file in scope belongs to: `src/gates/<gate>.rs` and
/// `src/gates/<gate>/...` are the gate's; `src/gates/mod.rs` is `gates`;
/// `src/<reader>.rs` is the reader's. `None` for anything else.
pub fn module_of(file: &str) -> Option<(String, String)> {
    let rest = file.strip_prefix("src/")?;
    if let Some(gate) = rest.strip_prefix("gates/") {
        if gate == "mod.rs" {
            return Some(("gates".into(), "gates::".into()));
        }
        let name = match gate.split_once('/') {
            Some((dir, _)) => dir,
            None => gate.strip_suffix(".rs")?,
        };
        if name.is_empty() || name.contains('*') {
            return None;
        }
        return Some((name.to_string(), format!("gates::{name}::")));
    }
    let name = rest.strip_suffix(".rs")?;
    if name.is_empty() || name.contains('/') || name.contains('*') {
        return None;
    }
    Some((name.to_string(), format!("{name}::")))
}

/// Shards for explicit `--file` paths, grouped by module.
fn shards_of(files: &[String]) -> Result<Vec<Shard>> {
    let mut by: BTreeMap<String, Shard> = BTreeMap::new();
    for file in files {
        let (name, filter) = module_of(file).with_context(|| {
            format!(
                "--file {file}: not a file of a gate (src/gates/<gate>.rs, src/gates/<gate>/...) \
                 or a reader (src/<reader>.rs); give one file, not a glob"
            )
        })?;
        by.entry(name.clone())
            .or_insert_with(|| Shard {
                name,
                files: Vec::new(),
                filter,
            })
            .files
            .push(file.clone());
    }
    Ok(by.into_values().collect())
}

/// Every gate (its file and its folder) and every reader in [`SCOPE`], one
/// shard each, the smallest gates first.
fn default_shards(root: &Path) -> Result<Vec<Shard>> {
    let dir = root.join(GATES);
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("read {}", dir.display()))? {
        let entry = entry?;
        let file = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() {
            names.insert(file);
        } else if let Some(stem) = file.strip_suffix(".rs") {
            names.insert(stem.to_string());
        }
    }
    let mut shards = Vec::new();
    for name in names {
        if name == "mod" {
            shards.push(Shard {
                name: "gates".into(),
                files: vec![format!("{GATES}mod.rs")],
                filter: "gates::".into(),
            });
            continue;
        }
        let mut files = Vec::new();
        if dir.join(format!("{name}.rs")).is_file() {
            files.push(format!("{GATES}{name}.rs"));
        }
        if dir.join(&name).is_dir() {
            files.push(format!("{GATES}{name}/**/*.rs"));
        }
        shards.push(Shard {
            filter: format!("gates::{name}::"),
            name,
            files,
        });
    }
    for reader in SCOPE.iter().filter(|s| !s.starts_with(GATES)) {
        let (name, filter) = module_of(reader).context("a reader in SCOPE")?;
        shards.push(Shard {
            name,
            files: vec![reader.to_string()],
            filter,
        });
    }
    Ok(shards)
}

/// Prints the table of the run in `<target>/mutants.out`; 1 when a gate
/// file is below the target.
fn report(root: &Path, target: &Path) -> Result<i32> {
    let shards = target.join(SHARDS);
    let mut outcomes = Vec::new();
    let mut read = 0;
    if shards.is_dir() {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&shards)
            .with_context(|| format!("read {}", shards.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        dirs.sort();
        for dir in dirs {
            // The shard's kept table, or a run from before there was one.
            let merged = dir.join(MERGED);
            let path = if merged.is_file() {
                merged
            } else {
                dir.join("mutants.out").join("outcomes.json")
            };
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
            };
            let json: Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not JSON", path.display()))?;
            outcomes.extend(parse_outcomes(&json).with_context(|| format!("{}", path.display()))?);
            read += 1;
        }
    }
    if read == 0 {
        bail!(
            "no results under {}: run `cargo xtask mutants` first",
            shards.display()
        );
    }
    eprintln!(
        "mutants: results of {read} shard(s) under {}",
        shards.display()
    );
    let equivalents_path = root.join(EQUIVALENTS);
    let equivalents = match std::fs::read_to_string(&equivalents_path) {
        Ok(text) => {
            parse_equivalents(&text).with_context(|| format!("{}", equivalents_path.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("read {}", equivalents_path.display())),
    };
    let report = Report::new(&outcomes, &equivalents);
    print!("{}", report.render());
    Ok(if report.target_met() { 0 } else { 1 })
}

/// The cargo-mutants to run: the one on PATH when it is [`VERSION`], else
/// `<target>/tools/bin/cargo-mutants`, installed there (`cargo install
/// --locked`) when missing or of another version.
fn ensure_installed(target: &Path) -> Result<PathBuf> {
    let version_of = |bin: &Path| {
        Command::new(bin)
            .args(["mutants", "--version"])
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let wanted = format!("cargo-mutants {VERSION}");
    let on_path = PathBuf::from("cargo-mutants");
    if version_of(&on_path).as_deref() == Some(wanted.as_str()) {
        return Ok(on_path);
    }
    let root = target.join("tools");
    let local = root.join("bin").join("cargo-mutants");
    if version_of(&local).as_deref() == Some(wanted.as_str()) {
        return Ok(local);
    }
    eprintln!(
        "mutants: cargo install --locked cargo-mutants@{VERSION} --root {} (once; takes minutes)",
        root.display()
    );
    let status = Command::new(crate::cargo())
        .args(["install", "--locked", "--root"])
        .arg(&root)
        .arg(format!("cargo-mutants@{VERSION}"))
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .status()
        .context("cannot start cargo install")?;
    if !status.success() {
        bail!("cargo install cargo-mutants@{VERSION} failed ({status})");
    }
    Ok(local)
}

/// What became of one mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Caught,
    Missed,
    Unviable,
    Timeout,
}

/// One mutant's outcome, from `outcomes.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `src/gates/stage.rs`
    pub file: String,
    /// cargo-mutants' name: `src/gates/stage.rs:12:5: replace < with <= in decide`
    pub name: String,
    /// The name without file, line and column: `replace < with <= in decide`
    pub mutation: String,
    pub fate: Fate,
}

/// The mutants' outcomes in `outcomes.json` (the baseline left out).
pub fn parse_outcomes(json: &Value) -> Result<Vec<Outcome>> {
    let list = json
        .get("outcomes")
        .and_then(Value::as_array)
        .context("outcomes.json: no `outcomes` list")?;
    let mut out = Vec::new();
    for entry in list {
        let Some(mutant) = entry.get("scenario").and_then(|s| s.get("Mutant")) else {
            continue; // "Baseline"
        };
        let summary = entry.get("summary").and_then(Value::as_str).unwrap_or("");
        let fate = match summary {
            "CaughtMutant" => Fate::Caught,
            "MissedMutant" => Fate::Missed,
            "Unviable" => Fate::Unviable,
            "Timeout" => Fate::Timeout,
            other => bail!("outcomes.json: unknown summary {other:?} for {mutant}"),
        };
        out.push(mutant_outcome(mutant, fate)?);
    }
    Ok(out)
}

/// An [`Outcome`] from one mutant as cargo-mutants writes it (in
/// `outcomes.json` and in `--list --json`).
fn mutant_outcome(mutant: &Value, fate: Fate) -> Result<Outcome> {
    let file = mutant
        .get("file")
        .and_then(Value::as_str)
        .with_context(|| format!("mutant without a file: {mutant}"))?;
    let name = mutant
        .get("name")
        .and_then(Value::as_str)
        .with_context(|| format!("mutant without a name: {mutant}"))?;
    Ok(Outcome {
        file: file.to_string(),
        name: name.to_string(),
        mutation: mutation_of(file, name),
        fate,
    })
}

/// `replace < with <= in decide` from `src/x.rs:12:5: replace < with <= in decide`.
pub fn mutation_of(file: &str, name: &str) -> String {
    let rest = name.strip_prefix(file).unwrap_or(name);
    let mut rest = rest;
    // `:LINE:COL: ` (or none, with `--line-col false`).
    for _ in 0..2 {
        if let Some(r) = rest.strip_prefix(':') {
            let digits = r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits > 0 {
                rest = &r[digits..];
            }
        }
    }
    rest.strip_prefix(": ").unwrap_or(rest).trim().to_string()
}

/// One line of `mutants-equivalent.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Equivalent {
    pub file: String,
    pub mutation: String,
    pub why: String,
}

/// Reads `mutants-equivalent.txt`: blank lines and `#` comments aside, one
/// surviving mutant per line, `FILE: MUTATION # WHY`, MUTATION being
/// cargo-mutants' name without line and column (so that an edit elsewhere
/// in the file does not stale the entry), WHY one sentence on why no test
/// can tell the mutant from the code. An entry covers every mutant of that
/// file with that mutation (the same operator twice in one function).
pub fn parse_equivalents(text: &str) -> Result<Vec<Equivalent>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (file, rest) = line
            .split_once(": ")
            .with_context(|| format!("line {}: expected `FILE: MUTATION # WHY`", n + 1))?;
        let (mutation, why) = rest.split_once(" # ").with_context(|| {
            format!(
                "line {}: no ` # WHY` saying why the mutant is equivalent",
                n + 1
            )
        })?;
        if why.trim().is_empty() || mutation.trim().is_empty() {
            bail!(
                "line {}: expected `FILE: MUTATION # WHY`, each part non-empty",
                n + 1
            );
        }
        out.push(Equivalent {
            file: file.trim().to_string(),
            mutation: mutation.trim().to_string(),
            why: why.trim().to_string(),
        });
    }
    Ok(out)
}

/// Counts of one file's mutants.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Row {
    pub caught: u32,
    pub missed: u32,
    /// Missed, and listed in `mutants-equivalent.txt`.
    pub equivalent: u32,
    pub unviable: u32,
    pub timeouts: u32,
}

impl Row {
    /// Caught, missed (not equivalent) and timed out.
    pub fn viable(&self) -> u32 {
        self.caught + self.missed + self.timeouts
    }

    /// Caught as a share of viable, in percent (100 with nothing viable).
    pub fn percent(&self) -> f64 {
        match self.viable() {
            0 => 100.0,
            v => f64::from(self.caught) * 100.0 / f64::from(v),
        }
    }

    /// At least [`TARGET_PERCENT`] of the viable mutants caught.
    pub fn target_met(&self) -> bool {
        self.caught * 100 >= self.viable() * TARGET_PERCENT
    }
}

/// The table of a run.
#[derive(Debug, Default)]
pub struct Report {
    pub rows: BTreeMap<String, Row>,
    /// Missed mutants no equivalent covers: each needs a test or a line.
    pub missed: Vec<String>,
    /// Equivalent-list lines that covered a mutant a test caught or that
    /// timed out: the line is wrong (or stale) and should go.
    pub not_equivalent: Vec<String>,
}

impl Report {
    pub fn new(outcomes: &[Outcome], equivalents: &[Equivalent]) -> Self {
        let mut report = Report::default();
        let covers = |o: &Outcome| {
            equivalents
                .iter()
                .any(|e| e.file == o.file && e.mutation == o.mutation)
        };
        for o in outcomes {
            let row = report.rows.entry(o.file.clone()).or_default();
            match o.fate {
                Fate::Caught | Fate::Timeout if covers(o) => {
                    report
                        .not_equivalent
                        .push(format!("{}: {}", o.file, o.mutation));
                    if o.fate == Fate::Caught {
                        row.caught += 1;
                    } else {
                        row.timeouts += 1;
                    }
                }
                Fate::Caught => row.caught += 1,
                Fate::Timeout => row.timeouts += 1,
                Fate::Unviable => row.unviable += 1,
                Fate::Missed if covers(o) => row.equivalent += 1,
                Fate::Missed => {
                    row.missed += 1;
                    report.missed.push(o.name.clone());
                }
            }
        }
        report.not_equivalent.sort();
        report.not_equivalent.dedup();
        report
    }

    /// Every gate file meets the target (readers are reported, not held to it).
    pub fn target_met(&self) -> bool {
        self.rows
            .iter()
            .all(|(file, row)| !is_gate_file(file) || row.target_met())
    }

    pub fn render(&self) -> String {
        let width = self.rows.keys().map(String::len).max().unwrap_or(4).max(4);
        let mut out = format!(
            "\n{:<width$}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>7}  target {TARGET_PERCENT} %\n",
            "file", "caught", "missed", "equiv", "unviable", "timeouts", "caught%"
        );
        let mut total = Row::default();
        for (file, row) in &self.rows {
            let verdict = match (is_gate_file(file), row.target_met()) {
                (true, true) => "met",
                (true, false) => "MISSED",
                (false, true) => "met (not a gate file)",
                (false, false) => "below (not a gate file)",
            };
            out.push_str(&format!(
                "{file:<width$}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>6.1}%  {verdict}\n",
                row.caught,
                row.missed,
                row.equivalent,
                row.unviable,
                row.timeouts,
                row.percent()
            ));
            total.caught += row.caught;
            total.missed += row.missed;
            total.equivalent += row.equivalent;
            total.unviable += row.unviable;
            total.timeouts += row.timeouts;
        }
        out.push_str(&format!(
            "{:<width$}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>6.1}%\n",
            "total",
            total.caught,
            total.missed,
            total.equivalent,
            total.unviable,
            total.timeouts,
            total.percent()
        ));
        out.push_str(&format!(
            "\ncaught% = caught / (caught + missed + timeouts); mutants listed in {EQUIVALENTS} are \
             left out; the {TARGET_PERCENT} % target holds for every gate file (src/gates/<gate>.rs, \
             src/gates/<gate>/mod.rs and decide.rs); a gate's I/O modules and the readers are reported\n"
        ));
        if !self.missed.is_empty() {
            out.push_str(&format!(
                "\nmissed, not listed in {EQUIVALENTS} (kill each with a unit test, or add \
                 `FILE: MUTATION # WHY` there):\n"
            ));
            for name in &self.missed {
                out.push_str(&format!("  {name}\n"));
            }
        }
        if !self.not_equivalent.is_empty() {
            out.push_str(&format!(
                "\nlisted in {EQUIVALENTS} but caught or timed out (remove the line):\n"
            ));
            for name in &self.not_equivalent {
                out.push_str(&format!("  {name}\n"));
            }
        }
        out
    }
}

/// Mutants per file from `cargo mutants --list --json`.
pub fn count_listed(json: &Value) -> Result<BTreeMap<String, u32>> {
    let list = json
        .as_array()
        .context("cargo mutants --list --json: not a list")?;
    let mut counts = BTreeMap::new();
    for mutant in list {
        let file = mutant
            .get("file")
            .and_then(Value::as_str)
            .with_context(|| format!("mutant without a file: {mutant}"))?;
        *counts.entry(file.to_string()).or_insert(0) += 1;
    }
    Ok(counts)
}

/// The `--list` table: mutants per file, the total and the time it would take.
pub fn render_list(counts: &BTreeMap<String, u32>) -> String {
    let width = counts.keys().map(String::len).max().unwrap_or(4).max(5);
    let mut out = String::new();
    let mut gates = 0;
    for (file, n) in counts {
        out.push_str(&format!("{file:<width$}  {n:>5}\n"));
        if is_gate_file(file) {
            gates += n;
        }
    }
    let total: u32 = counts.values().sum();
    let files: BTreeSet<&String> = counts.keys().collect();
    out.push_str(&format!("{:<width$}  {total:>5}\n", "total"));
    out.push_str(&format!(
        "\n{total} mutants in {} files ({gates} in gate files); at about {SECONDS_PER_MUTANT} s a \
         mutant with one job, about {}\n",
        files.len(),
        hours_minutes(u64::from(total) * u64::from(SECONDS_PER_MUTANT))
    ));
    out
}

fn hours_minutes(seconds: u64) -> String {
    let minutes = seconds.div_ceil(60);
    if minutes < 60 {
        format!("{minutes} min")
    } else {
        format!("{} h {:02} min", minutes / 60, minutes % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mutant(file: &str, line: u32, mutation: &str) -> Value {
        json!({
            "package": "verify-coding-candidates",
            "file": file,
            "name": format!("{file}:{line}:9: {mutation}"),
            "replacement": "true",
            "genre": "BinaryOperator",
        })
    }

    /// The shape cargo-mutants 27 writes: a baseline, then one entry per mutant.
    fn sample() -> Value {
        let entry =
            |m: Value, summary: &str| json!({"scenario": {"Mutant": m}, "summary": summary});
        json!({
            "outcomes": [
                {"scenario": "Baseline", "summary": "Success"},
                entry(mutant("src/gates/a.rs", 10, "replace == with != in decide"), "CaughtMutant"),
                entry(mutant("src/gates/a.rs", 11, "replace && with || in decide"), "CaughtMutant"),
                entry(mutant("src/gates/a.rs", 12, "replace < with <= in decide"), "MissedMutant"),
                entry(mutant("src/gates/a.rs", 40, "replace < with <= in decide"), "MissedMutant"),
                entry(mutant("src/gates/a.rs", 13, "replace decide -> Vec<Check> with vec![]"), "Unviable"),
                entry(mutant("src/gates/b.rs", 5, "replace f -> bool with true"), "CaughtMutant"),
                entry(mutant("src/gates/b.rs", 6, "replace f -> bool with false"), "MissedMutant"),
                entry(mutant("src/gates/b.rs", 7, "replace + with * in g"), "Timeout"),
                entry(mutant("src/hash.rs", 3, "replace to_hex -> String with String::new()"), "MissedMutant"),
            ],
            "total_mutants": 9,
        })
    }

    #[test]
    fn outcomes_json_gives_each_mutant_its_file_mutation_and_fate() {
        let outcomes = parse_outcomes(&sample()).unwrap();
        assert_eq!(outcomes.len(), 9, "the baseline is not a mutant");
        assert_eq!(
            outcomes[2],
            Outcome {
                file: "src/gates/a.rs".into(),
                name: "src/gates/a.rs:12:9: replace < with <= in decide".into(),
                mutation: "replace < with <= in decide".into(),
                fate: Fate::Missed,
            }
        );
        assert_eq!(outcomes[4].fate, Fate::Unviable);
        assert_eq!(outcomes[7].fate, Fate::Timeout);
    }

    fn outcome(file: &str, line: u32, mutation: &str, fate: Fate) -> Outcome {
        Outcome {
            file: file.into(),
            name: format!("{file}:{line}:9: {mutation}"),
            mutation: mutation.into(),
            fate,
        }
    }

    #[test]
    fn merged_outcomes_round_trip_through_the_outcomes_json_shape() {
        let outcomes = parse_outcomes(&sample()).unwrap();
        assert_eq!(parse_outcomes(&outcomes_json(&outcomes)).unwrap(), outcomes);
        let listed = json!([
            mutant("src/gates/a.rs", 10, "x"),
            mutant("src/hash.rs", 3, "y")
        ]);
        assert_eq!(
            listed_mutants(&listed).unwrap(),
            [
                (
                    "src/gates/a.rs".to_string(),
                    "src/gates/a.rs:10:9: x".to_string()
                ),
                ("src/hash.rs".to_string(), "src/hash.rs:3:9: y".to_string())
            ]
        );
        assert!(listed_mutants(&json!({})).is_err());
    }

    #[test]
    fn an_iterated_run_keeps_the_earlier_outcomes_of_what_it_skipped() {
        let a = "src/gates/a.rs";
        let b = "src/gates/a/observe.rs";
        let previous = vec![
            outcome(a, 1, "caught before", Fate::Caught),
            outcome(a, 2, "unviable before", Fate::Unviable),
            outcome(a, 3, "missed before, caught now", Fate::Missed),
            outcome(a, 4, "missed before and now", Fate::Missed),
            outcome(a, 9, "no longer in the code", Fate::Missed),
            outcome(b, 1, "another file of the shard", Fate::Missed),
        ];
        // `--iterate --file a.rs`: only the two missed ones were re-tested.
        let ran = vec![
            outcome(a, 3, "missed before, caught now", Fate::Caught),
            outcome(a, 4, "missed before and now", Fate::Missed),
        ];
        let current: Vec<(String, String)> = [
            (1, "caught before"),
            (2, "unviable before"),
            (3, "missed before, caught now"),
            (4, "missed before and now"),
            (5, "new and not tested"),
        ]
        .iter()
        .map(|(l, m)| (a.to_string(), format!("{a}:{l}:9: {m}")))
        .collect();
        let (merged, untested) = merge(&previous, &ran, &current);
        let fates: Vec<(&str, Fate)> = merged
            .iter()
            .map(|o| (o.mutation.as_str(), o.fate))
            .collect();
        assert_eq!(
            fates,
            [
                ("another file of the shard", Fate::Missed),
                ("caught before", Fate::Caught),
                ("unviable before", Fate::Unviable),
                ("missed before, caught now", Fate::Caught),
                ("missed before and now", Fate::Missed),
            ]
        );
        assert_eq!(untested, [format!("{a}:5:9: new and not tested")]);
    }

    #[test]
    fn a_full_run_replaces_its_files_and_a_first_run_stands_alone() {
        let a = "src/gates/a.rs";
        let previous = vec![outcome(a, 1, "m", Fate::Missed)];
        let ran = vec![
            outcome(a, 1, "m", Fate::Caught),
            outcome(a, 2, "n", Fate::Unviable),
        ];
        let current: Vec<(String, String)> = ran
            .iter()
            .map(|o| (o.file.clone(), o.name.clone()))
            .collect();
        let (merged, untested) = merge(&previous, &ran, &current);
        assert_eq!(merged, ran);
        assert!(untested.is_empty());
        let (merged, untested) = merge(&[], &ran, &current);
        assert_eq!(merged, ran);
        assert!(untested.is_empty());
    }

    #[test]
    fn an_unknown_summary_is_an_error_not_a_silent_catch() {
        let json = json!({"outcomes": [{"scenario": {"Mutant": mutant("src/a.rs", 1, "x")}, "summary": "Lost"}]});
        assert!(parse_outcomes(&json).is_err());
        assert!(parse_outcomes(&json!({"total_mutants": 0})).is_err());
    }

    #[test]
    fn the_mutation_is_the_name_without_file_line_and_column() {
        assert_eq!(
            mutation_of("src/x.rs", "src/x.rs:12:5: replace < with <= in f"),
            "replace < with <= in f"
        );
        assert_eq!(
            mutation_of("src/x.rs", "src/x.rs: replace f -> bool with true"),
            "replace f -> bool with true"
        );
        // A mutation that itself holds `: ` keeps it.
        assert_eq!(
            mutation_of(
                "src/x.rs",
                "src/x.rs:3:1: replace f -> Result<(), String> with Ok(())"
            ),
            "replace f -> Result<(), String> with Ok(())"
        );
    }

    #[test]
    fn counts_per_file_leave_equivalents_out_of_the_viable_mutants() {
        let equivalents = parse_equivalents(
            "# comment\n\nsrc/gates/a.rs: replace < with <= in decide # the sides are never equal\n",
        )
        .unwrap();
        let report = Report::new(&parse_outcomes(&sample()).unwrap(), &equivalents);
        let a = &report.rows["src/gates/a.rs"];
        assert_eq!(
            a,
            &Row {
                caught: 2,
                missed: 0,
                equivalent: 2,
                unviable: 1,
                timeouts: 0
            },
            "one line covers both `<` of decide"
        );
        assert_eq!(a.viable(), 2);
        assert!(a.target_met());
        let b = &report.rows["src/gates/b.rs"];
        assert_eq!(
            b,
            &Row {
                caught: 1,
                missed: 1,
                equivalent: 0,
                unviable: 0,
                timeouts: 1
            }
        );
        assert_eq!(b.viable(), 3, "a timeout counts as viable, not caught");
        assert!((b.percent() - 100.0 / 3.0).abs() < 1e-9);
        assert!(!b.target_met());
        assert!(!report.target_met(), "b.rs is a gate file below 90 %");
        assert_eq!(
            report.missed,
            [
                "src/gates/b.rs:6:9: replace f -> bool with false",
                "src/hash.rs:3:9: replace to_hex -> String with String::new()"
            ]
        );
        assert!(report.not_equivalent.is_empty());
    }

    #[test]
    fn a_reader_below_the_target_is_reported_but_does_not_fail_the_run() {
        let outcomes = parse_outcomes(&sample()).unwrap();
        let only_a_and_hash: Vec<_> = outcomes
            .into_iter()
            .filter(|o| o.file != "src/gates/b.rs")
            .collect();
        let equivalents =
            parse_equivalents("src/gates/a.rs: replace < with <= in decide # never equal\n")
                .unwrap();
        let report = Report::new(&only_a_and_hash, &equivalents);
        assert_eq!(report.rows["src/hash.rs"].percent(), 0.0);
        assert!(report.target_met());
        let table = report.render();
        assert!(table.contains("below (not a gate file)"), "{table}");
        assert!(
            table.contains("src/hash.rs:3:9: replace to_hex -> String with String::new()"),
            "{table}"
        );
    }

    #[test]
    fn the_target_is_ninety_percent_inclusive() {
        let row = |caught, missed| Row {
            caught,
            missed,
            ..Row::default()
        };
        assert!(row(9, 1).target_met());
        assert!(!row(8, 1).target_met(), "88.9 %");
        assert!(row(0, 0).target_met(), "nothing viable");
        assert!(!row(0, 1).target_met());
    }

    #[test]
    fn an_equivalent_that_a_test_catches_is_reported_as_wrong() {
        let equivalents =
            parse_equivalents("src/gates/a.rs: replace == with != in decide # wrong\n").unwrap();
        let report = Report::new(&parse_outcomes(&sample()).unwrap(), &equivalents);
        assert_eq!(
            report.not_equivalent,
            ["src/gates/a.rs: replace == with != in decide"]
        );
        assert_eq!(
            report.rows["src/gates/a.rs"].caught, 2,
            "still counted as caught"
        );
        assert!(report
            .render()
            .contains("but caught or timed out (remove the line)"));
    }

    #[test]
    fn an_equivalent_needs_file_mutation_and_a_reason() {
        assert!(
            parse_equivalents("src/a.rs: replace f -> bool with true\n").is_err(),
            "no reason"
        );
        assert!(
            parse_equivalents("replace f -> bool with true # why\n").is_err(),
            "no file"
        );
        assert!(
            parse_equivalents("src/a.rs:  # why\n").is_err(),
            "no mutation"
        );
        let parsed = parse_equivalents(
            "src/a.rs: replace f -> Result<(), String> with Ok(()) # only logs; nothing reads it\n",
        )
        .unwrap();
        assert_eq!(
            parsed,
            [Equivalent {
                file: "src/a.rs".into(),
                mutation: "replace f -> Result<(), String> with Ok(())".into(),
                why: "only logs; nothing reads it".into(),
            }]
        );
    }

    #[test]
    fn the_table_has_a_row_per_file_and_a_total() {
        let report = Report::new(&parse_outcomes(&sample()).unwrap(), &[]);
        let table = report.render();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].starts_with("file "), "{table}");
        assert!(lines[2].starts_with("src/gates/a.rs"), "{table}");
        assert!(lines[2].ends_with("50.0%  MISSED"), "{table}");
        assert!(lines[3].contains("33.3%  MISSED"), "{table}");
        assert!(lines[5].starts_with("total"), "{table}");
        assert!(
            lines[5].contains("3       4      0         1         1"),
            "{table}"
        );
    }

    #[test]
    fn list_counts_mutants_per_file_and_estimates_the_time() {
        let listed = json!([
            mutant("src/gates/a.rs", 1, "x"),
            mutant("src/gates/a.rs", 2, "y"),
            mutant("src/hash.rs", 3, "z"),
        ]);
        let counts = count_listed(&listed).unwrap();
        assert_eq!(counts["src/gates/a.rs"], 2);
        let text = render_list(&counts);
        assert!(
            text.contains("3 mutants in 2 files (2 in gate files)"),
            "{text}"
        );
        assert!(text.contains("about 1 min"), "{text}");
        assert_eq!(hours_minutes(2 * 3600 + 61), "2 h 02 min");
    }

    #[test]
    fn each_file_belongs_to_its_gate_or_reader_and_is_tested_by_its_tests() {
        let of = |f: &str| module_of(f).map(|(n, t)| format!("{n} {t}"));
        assert_eq!(of("src/gates/stage.rs").unwrap(), "stage gates::stage::");
        assert_eq!(
            of("src/gates/stage/observe.rs").unwrap(),
            "stage gates::stage::"
        );
        assert_eq!(
            of("src/gates/worker_isolation/decide.rs").unwrap(),
            "worker_isolation gates::worker_isolation::"
        );
        assert_eq!(of("src/gates/mod.rs").unwrap(), "gates gates::");
        assert_eq!(of("src/lbpkg.rs").unwrap(), "lbpkg lbpkg::");
        assert_eq!(of("src/gates/**/*.rs"), None, "a glob is no module");
        assert_eq!(of("src/process/residue.rs"), None);
        assert_eq!(of("tests/x.rs"), None);
        let shards = shards_of(&[
            "src/gates/stage.rs".into(),
            "src/hash.rs".into(),
            "src/gates/stage/attributes.rs".into(),
        ])
        .unwrap();
        assert_eq!(shards.len(), 2);
        assert_eq!(shards[0].name, "hash");
        assert_eq!(
            shards[1].files,
            ["src/gates/stage.rs", "src/gates/stage/attributes.rs"]
        );
        assert!(shards_of(&["src/gates/*.rs".into()]).is_err());
    }

    #[test]
    fn a_gate_file_is_the_file_each_gate_keeps_and_its_decisions() {
        for f in [
            "src/gates/stage.rs",
            "src/gates/mod.rs",
            "src/gates/worker_isolation/mod.rs",
            "src/gates/worker_isolation/decide.rs",
        ] {
            assert!(is_gate_file(f), "{f}");
        }
        for f in [
            "src/gates/stage/observe.rs",
            "src/gates/sdk_record/record.rs",
            "src/gates/discovery_rpc/host.rs",
            "src/lbpkg.rs",
            "src/gates.rs",
        ] {
            assert!(!is_gate_file(f), "{f}");
        }
    }

    #[test]
    fn the_default_shards_cover_every_gate_and_reader() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let shards = default_shards(root).unwrap();
        let names: Vec<&str> = shards.iter().map(|s| s.name.as_str()).collect();
        for name in [
            "stage",
            "worker_isolation",
            "suites",
            "gates",
            "lbpkg",
            "profile",
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let stage = shards.iter().find(|s| s.name == "stage").unwrap();
        assert_eq!(
            stage.files,
            ["src/gates/stage.rs", "src/gates/stage/**/*.rs"]
        );
        let isolation = shards
            .iter()
            .find(|s| s.name == "worker_isolation")
            .unwrap();
        assert_eq!(isolation.files, ["src/gates/worker_isolation/**/*.rs"]);
        assert_eq!(shards.len(), names.iter().collect::<BTreeSet<_>>().len());
    }

    #[test]
    fn arguments_split_into_ours_and_cargo_mutants() {
        let args: Vec<OsString> = [
            "--file",
            "src/a.rs",
            "--jobs",
            "2",
            "--list",
            "--file=src/b.rs",
            "--",
            "--lib",
            "--file",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let parsed = parse_args(&args).unwrap().unwrap();
        assert!(parsed.list);
        assert_eq!(parsed.files, ["src/a.rs", "src/b.rs"]);
        assert_eq!(
            parsed.passthrough,
            ["--jobs", "2", "--", "--lib", "--file"].map(OsString::from)
        );
        assert!(parse_args(&["--help".into()]).unwrap().is_none());
        assert!(parse_args(&["--report".into()]).unwrap().unwrap().report);
        assert!(parse_args(&["--file".into()]).is_err());
    }
}
