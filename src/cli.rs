//! Command-line interface.

use crate::evidence::{GateRecord, GateResult, Verdict};
use crate::pipeline::{self, Progress, RunOptions};
use crate::{catalogue, exit, gate_list, merge, output, replay, report};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The exit-code table of `--help` and the man page (`EXIT STATUS`).
pub const EXIT_CODES: &str = "\
0    every required gate passed
1    at least one gate failed (evidence still written, verdict `fail`)
2    could not run: bad arguments, evidence dir not fresh/absolute/outside the repo
     or held by another run, not a git repo, no interpreter given and none could be
     provisioned
130  interrupted: children reaped, evidence written with verdict `incomplete`";

/// The examples of `--help` and the man page (`EXAMPLES`): run from the
/// verifier's checkout (`cargo xtask sdk` made target/sdk-venv), the plugin
/// repository beside it.
pub const EXAMPLES: &str = "\
# Certify HEAD of the plugin repository beside the verifier's checkout
verify-coding-candidates --repo ../langbot-plugins --evidence \"$PWD/../evidence\" \\
    --python target/sdk-venv/bin/python

# The same on a fresh machine: the verifier provisions its own SDK interpreter
# (docs/provisioning.md) and writes the evidence into a fresh temporary directory
verify-coding-candidates --repo ../langbot-plugins

# A plugin developer: one gate and what it needs
verify-coding-candidates --repo ../langbot-plugins --only lbp-build --evidence /tmp/ev1 \\
    --python target/sdk-venv/bin/python

# A reviewer: re-derive every digest and rebuild from the repository
verify-coding-candidates replay --evidence /tmp/ev1 --repo ../langbot-plugins

# What each gate proves, and what it does not
verify-coding-candidates gates";

fn after_help() -> String {
    let indent = |text: &str| {
        text.lines()
            .map(|l| {
                if l.is_empty() {
                    String::new()
                } else {
                    format!("  {l}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "Exit codes:\n{}\n\nExamples:\n{}",
        indent(EXIT_CODES),
        indent(EXAMPLES)
    )
}

/// Certify LangBot plugin release candidates from one clean commit, with the
/// genuine SDK, and write evidence a reviewer can replay.
///
/// The repository is never modified: the commit is `git archive`d into the
/// evidence directory, every candidate is built there with the official
/// `lbp build`, and every archive and member is hashed. Nothing is signed.
#[derive(Debug, Parser)]
#[command(name = "verify-coding-candidates", version, after_help = after_help(), subcommand_negates_reqs = true)]
pub struct Cli {
    /// Repository under review (any path inside it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,

    /// Evidence directory: absolute, missing or empty, outside the repository. Without it, a
    /// fresh directory is made under the system temporary directory, kept, and its path printed
    /// last on stdout.
    #[arg(long, value_name = "DIR")]
    pub evidence: Option<PathBuf>,

    /// Interpreter with the pinned `langbot-plugin` installed. Without it (and without
    /// `PYTHON`), the verifier provisions its own from the profile's lock list into the user's
    /// cache, or reuses and re-verifies the one it made (`verify-coding-candidates sdk`).
    #[arg(long, value_name = "PATH", env = "PYTHON")]
    pub python: Option<PathBuf>,

    /// Profile TOML replacing the repository's `verify-coding-candidates.toml` and the built-in `coding-runners`.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,

    /// Run only these gates (comma-separated ids) and the prerequisites they need.
    #[arg(long, value_name = "GATE,...", value_delimiter = ',', value_parser = GateIdParser, hide_possible_values = true)]
    pub only: Option<Vec<String>>,

    /// Check only the K-th of N stable shares of the candidates (global gates run in every share;
    /// a grouped profile's share runs each SDK group it holds candidates of); combine the shares
    /// with `merge`.
    #[arg(long, value_name = "K/N")]
    pub partition: Option<crate::profile::Partition>,

    /// Name recorded in the sign-off block (the archives are never signed).
    #[arg(long, value_name = "NAME")]
    pub sign_off_by: Option<String>,

    /// Worker sandbox of the `worker-isolation` gate: `bwrap` (bubblewrap: new pid/mount/IPC
    /// namespaces, only the worker's own root writable), `process` (separate process groups,
    /// private roots by environment), or `auto` (bwrap when its preflight succeeds, else process;
    /// both recorded). A requested backend that is unavailable fails the gate, never falls back.
    /// bwrap is looked up on PATH, or named by VCC_BWRAP.
    #[arg(long, value_enum, value_name = "BACKEND", default_value = "auto")]
    pub isolation: crate::isolation::IsolationChoice,

    /// Folder of historical `.lbpkg` archives for the `historical-admission` gate: each one whose
    /// sha256 the profile lists must be refused by the SDK's own admission for the listed reason;
    /// one not listed is reported, never trusted. Without it that gate is skipped (package
    /// admission of historical releases is then not established).
    #[arg(long, value_name = "DIR")]
    pub release_dir: Option<PathBuf>,

    /// Gates run at once: a gate starts as soon as every gate it requires has passed, at most N
    /// at a time (default: the available cores), and `suites` beside them, taking no slot: it
    /// starts once `stage` and `sdk-record` passed, and while its pytest runs are active every
    /// other step is idle (SCHED_IDLE); evidence, JUnit and the summary keep catalogue order
    /// whatever the finishing order. Inside a gate, per-candidate steps (builds, admissions,
    /// preparations, downloads, the runtime's worker starts) run at once; the suites' runs go
    /// one after the other. `--jobs 1` is a serial run: one gate at a time, and one step at a
    /// time inside it (the two isolation workers, which must live together, excepted).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,

    /// Package index (PEP 503 simple API base URL, `https://`, `http://` or `file://`) the
    /// `dependencies` gate downloads every wheelhouse file from; replaces the profile's
    /// `[dependencies] index_url` (default `https://pypi.org/simple`). Recorded in the evidence.
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,

    /// No progress lines or notes on stderr (progress lines are also off when stderr is not a
    /// terminal); errors are still printed.
    #[arg(long, short)]
    pub quiet: bool,

    /// Summary format on stdout: a table (`text`) or one JSON document (`json`).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Certify the working tree as it is, not HEAD: tracked files plus untracked files no ignore
    /// rule matches, deleted files left out, uncommitted changes included (`tree-clean` lists them
    /// as warnings). Nothing is written to the repository. The evidence is labelled "working
    /// tree, not a commit" and identified by a digest of the staged files; its statement is never
    /// PASSED. A developer's check, not a certification.
    #[arg(long)]
    pub worktree: bool,

    /// Certify only the candidates of this SDK group of the profile (`[[candidate]] sdk`), under
    /// its pin: what a run of a grouped profile starts for each group but the default.
    #[arg(long, value_name = "PIN", hide = true)]
    pub sdk_group: Option<String>,

    /// Subcommand; without one, runs the gates.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every gate: what it proves, what it does not prove, what it needs.
    ///
    /// Text is wrapped to the terminal's width (80 columns when stdout is not
    /// a terminal). Exit 2 when a GATE names no gate.
    Gates {
        /// Only these gates, in this order (default: every gate, then the
        /// built-in protocol fixtures).
        #[arg(value_name = "GATE", value_parser = GateIdParser)]
        ids: Vec<String>,
        /// Output format: wrapped text, or one JSON document
        /// (`{"gates": [{"id", "title", "proves", "does_not_prove", "requires", "scope"}]}`).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Re-derive every recorded digest of an evidence directory and compare.
    ///
    /// Checks SHA256SUMS, the sign-off's evidence digest, every archive's
    /// sha256 and every member's digest. With --repo, also confirms the commit
    /// exists, re-creates the `git archive`, and rebuilds every candidate with
    /// the official build, comparing content digests and whole-archive digests
    /// (a difference confined to manifest.yaml's ZIP timestamp is verified byte
    /// by byte and reported as the known build-clock difference), and says
    /// which interpreter rebuilt. Exit 0 when everything matches, 1 on any
    /// mismatch, 2 when it cannot run (no evidence.json, a --repo that is not
    /// a git repository, an interpreter that does not exist or has no SDK).
    Replay {
        /// The evidence directory to replay.
        #[arg(long, value_name = "DIR")]
        evidence: PathBuf,
        /// Repository holding the recorded commit (enables the rebuild checks).
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
        /// Interpreter for the rebuild (default: $PYTHON, then the recorded one).
        #[arg(long, value_name = "PATH")]
        python: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// No progress line on stderr; the report and errors are still printed.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Render `report.html` of an existing evidence directory: one self-contained page (no script,
    /// nothing loaded) with the verdict and what it covers, candidates × gates, failures and
    /// warnings, archive digests, the timeline and what each gate proves. A run writes
    /// DIR/report.html itself; this renders it for a directory read as it is (written by an
    /// earlier version, say). Printed on stdout, or written to --output FILE (outside DIR, which
    /// is sealed). Exit 0 when rendered, 2 when DIR has no readable evidence.json or FILE cannot
    /// be written.
    Report {
        /// The evidence directory.
        #[arg(long, value_name = "DIR")]
        evidence: PathBuf,
        /// Write the page to FILE (replaced if it exists) instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Combine the evidence directories of `--partition K/N` runs (and
    /// unpartitioned runs beside them, such as `--only suites`) into one.
    ///
    /// Checks that they share commit, profile, SDK and RECORD digest, that the
    /// shares cover every share once and agree on every global gate, and that
    /// a gate run by an unpartitioned run and by the shares has one result;
    /// the unpartitioned runs fill the gates the shares cannot run (`suites`),
    /// so a matrix plus one `--only suites` run merges into one non-partial
    /// certification. Copies the shares' archives; writes one evidence.json,
    /// junit.xml, statement and SHA256SUMS. A grouped profile's group runs
    /// (`groups/<pin>/` of each run) are merged alike into `OUT/groups/<pin>/`.
    Merge {
        /// The merged evidence directory: absolute, missing or empty, outside every partition.
        #[arg(long, value_name = "OUT")]
        into: PathBuf,
        /// Name recorded in the merged sign-off block.
        #[arg(long, value_name = "NAME")]
        sign_off_by: Option<String>,
        /// The runs' evidence directories: every share of one `--partition K/N` run, and any
        /// unpartitioned run of the same commit, profile and SDK (such as `--only suites`).
        #[arg(value_name = "DIR", required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Check a signed archive against the certification: the SDK's own `verify_archive` (SDK 0.7,
    /// run by the verified interpreter of the evidence's run) with our Ed25519 key resolver, then
    /// the envelope's digest, plugin identity, version and runtime claims against the candidate
    /// the evidence certified as `shared-runtime-v1`. Exit 0 valid and matching, 1 invalid or not
    /// what was certified (the field is named), 2 cannot run.
    Signed {
        /// The evidence directory of the certification.
        #[arg(long, value_name = "DIR")]
        evidence: PathBuf,
        /// The signed archive (`.lbpkg` with the envelope in its ZIP comment).
        #[arg(value_name = "ARCHIVE")]
        archive: PathBuf,
        /// A trusted issuer: key id `=` base64 of its 32-byte Ed25519 public key (repeatable).
        #[arg(long = "trusted-key", value_name = "ID=BASE64", required = true)]
        trusted_keys: Vec<String>,
        /// Interpreter with SDK 0.7 (default: the one the evidence recorded).
        #[arg(long, value_name = "PATH")]
        python: Option<PathBuf>,
    },
    /// Work with profiles (`profile init`: write one from a repository's plugin manifests).
    Profile {
        /// What to do.
        #[command(subcommand)]
        command: ProfileCommand,
    },
    /// Provision (or reuse and re-verify) the SDK interpreter a run uses when no --python is
    /// given: a virtual environment in `$XDG_CACHE_HOME/verify-coding-candidates/sdk/` (else
    /// `~/.cache/...`) holding exactly the wheels of the SDK pin's lock list, each checked by
    /// sha256 (pip `--require-hashes`), every file checked against its RECORD on each reuse;
    /// a damaged one is rebuilt. Steps go to stderr; the interpreter's path is printed last on
    /// stdout. Exit 0 when ready, 2 when it cannot be made.
    Sdk {
        /// Print only the interpreter's path on stdout (for scripts: `PYTHON=$(... sdk --print-path)`).
        #[arg(long)]
        print_path: bool,
        /// Profile TOML whose `sdk` pin to provision (default: the built-in `coding-runners`); with
        /// SDK groups (`[[candidate]] sdk`), every group's, the `[sdk] requirement`'s path last.
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
        /// Package index the wheels are downloaded from.
        #[arg(long, value_name = "URL", default_value = crate::provision::DEFAULT_INDEX_URL)]
        index_url: String,
        /// Create the environment at PATH instead of the cache (a missing or empty folder; one
        /// already of exactly the lock is reused), for an interpreter of your own: `--python
        /// PATH/bin/python` then passes `sdk-record`. Only the profile's `[sdk]` pin.
        #[arg(long, value_name = "PATH")]
        venv: Option<PathBuf>,
    },
}

/// `profile` subcommands.
#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Write a commented profile from the repository's plugin manifests.
    ///
    /// Every tracked manifest.yaml with `kind: Plugin` is a candidate: its folder, identity,
    /// components, `langbot-plugin` requirement and test files are written, with the runner probes
    /// it could declare as commented templates. Each candidate's `langbot-plugin` requirement is
    /// resolved as pip resolves it today (a pin to itself; a range, unpinned or absent to the newest
    /// release the index offers, or with --offline the newest carried one it accepts): the version
    /// most resolve to is the run's [sdk] requirement, every other candidate gets the SDK group of
    /// its own version, each with the reason; a version without a carried lock is locked on demand. Nothing is written into the repository unless --output names a file there.
    /// Exit 0 when written, 2 when it cannot be (not a git repository, no plugin manifest, an
    /// --output file that exists).
    Init {
        /// A folder inside the repository to read.
        #[arg(long, value_name = "DIR", default_value = ".")]
        repo: PathBuf,
        /// Write the profile to this new file instead of stdout (an existing file is never
        /// overwritten).
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The interpreter whose pip asks the index which SDK release each requirement resolves
        /// to (default: the newest carried SDK's, provisioned in the user's cache).
        #[arg(long, value_name = "PATH")]
        python: Option<PathBuf>,
        /// Do not ask the index: each range, unpinned or absent requirement resolves to the
        /// newest carried SDK version it accepts, and the profile says so.
        #[arg(long)]
        offline: bool,
        /// The package index to ask and to lock uncarried versions from.
        #[arg(long, value_name = "URL", default_value = crate::provision::DEFAULT_INDEX_URL)]
        index_url: String,
    },
}

/// How `profile init` asks the index.
struct InitIndex {
    python: Option<PathBuf>,
    offline: bool,
    index_url: String,
}

/// Each candidate's SDK ([`crate::profile_init::resolve`]), asking the
/// index with `how.python`'s pip (else the newest carried SDK's), then every
/// resolved version without a carried lock locked on demand.
fn resolve_for_init(
    scan: &crate::profile_init::Scan,
    how: &InitIndex,
) -> Vec<Result<crate::provision::resolve::Resolved, String>> {
    use crate::provision::resolve;
    let mut say = |line: &str| crate::stderr_line!("profile init: {line}");
    // The interpreter whose pip asks the index, found only when needed (a
    // profile of exact pins carried by the verifier never needs one).
    let mut host: Option<Result<PathBuf, String>> = None;
    let mut python = |say: &mut dyn FnMut(&str)| -> Result<PathBuf, String> {
        host.get_or_insert_with(|| match (&how.python, how.offline) {
            (_, true) => Err("--offline".into()),
            (Some(p), false) => Ok(p.clone()),
            (None, false) => crate::provision::pip_host(&how.index_url, say)
                .map_err(|e| format!("no interpreter to ask the index with: {e}")),
        })
        .clone()
    };
    let resolved = {
        let mut index = resolve::memo(|spec: &str| {
            let p = python(&mut say)?;
            resolve::ask_index(&p, &how.index_url, spec)
        });
        crate::profile_init::resolve(scan, &mut index, &resolve::carried_versions())
    };
    let mut locked = Vec::new();
    for r in resolved.iter().flatten() {
        let v = r.version.to_string();
        let req = format!("{}=={v}", resolve::SDK);
        if locked.contains(&v) || crate::provision::on_demand::files_for(&req).is_some() {
            continue;
        }
        locked.push(v.clone());
        let made = python(&mut say)
            .and_then(|p| crate::provision::on_demand::lock(&v, &p, &how.index_url, &mut say));
        if let Err(e) = made {
            say(&format!(
                "{req}: not locked now ({e}); a run locks it when it provisions it"
            ));
        }
    }
    resolved
}

/// `profile init`: [`crate::profile_init::scan`], then
/// [`crate::profile_init::render`], to stdout or a new `output` file.
fn run_profile_init(repo: &Path, output: Option<&Path>, how: &InitIndex) -> ExitCode {
    let fail = |message: String| {
        crate::stderr_line!("error: profile init: {message}");
        ExitCode::from(exit::CANNOT_RUN)
    };
    let builtin = match crate::profile::parse(crate::profile::BUILTIN_CODING_RUNNERS, "built-in") {
        Ok(p) => p.sdk,
        Err(e) => return fail(format!("the built-in profile does not load: {e}")),
    };
    let Ok(pin) = builtin.version().parse::<pep440_rs::Version>() else {
        return fail("the built-in profile's SDK pin has no PEP 440 version".into());
    };
    let scan = match crate::profile_init::scan(repo) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let resolved = resolve_for_init(&scan, how);
    let text = crate::profile_init::render(&scan, &resolved, &pin);
    match output {
        None => emit(&text),
        Some(path) => {
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
            if let Err(e) = written {
                return fail(format!(
                    "--output {}: {e}; expected a new file (an existing one is never overwritten)",
                    path.display()
                ));
            }
            let kept = crate::profile::parse(&text, "profile init")
                .map(|p| p.candidates.len())
                .unwrap_or_default();
            crate::stderr_line!(
                "profile init: wrote {} ({} plugin folder(s) found, {kept} written as candidates); review it, then commit it as {} at the repository's root or pass --profile",
                path.display(),
                scan.candidates.len(),
                crate::profile::REPO_PROFILE_NAME
            );
        }
    }
    ExitCode::from(exit::SUCCESS)
}

/// A gate id argument (`--only`, `gates GATE`): accepts every string, so an
/// unknown id gets [`catalogue::check_ids`]'s sentence (the id it most likely
/// means, every known id) rather than clap's; offers the catalogue's ids as
/// its possible values, so the completion scripts complete gate ids.
#[derive(Debug, Clone, Copy)]
struct GateIdParser;

impl clap::builder::TypedValueParser for GateIdParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(catalogue::all().iter().map(|g| {
            clap::builder::PossibleValue::new(g.id.as_str()).help(g.title.clone())
        })))
    }
}

/// Output format of a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table for people.
    Text,
    /// One JSON document on stdout.
    Json,
}

/// Parses the command line, runs, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    if let Some(code) = discovery_host_main() {
        return code;
    }
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (m, cli)));
    let (matches, mut cli) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::CANNOT_RUN
            } else {
                exit::SUCCESS
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Some((name, _)) = matches.subcommand() {
        if let Err(message) = refuse_run_options(&matches, name) {
            crate::stderr_line!("error: {message}");
            return ExitCode::from(exit::CANNOT_RUN);
        }
    }
    match cli.command.take() {
        Some(command) => run_command(command),
        None => run_certification(cli),
    }
}

/// A subcommand (every command but the certification itself).
fn run_command(command: Command) -> ExitCode {
    match command {
        Command::Sdk {
            print_path,
            profile,
            index_url,
            venv,
        } => run_sdk(print_path, profile.as_deref(), &index_url, venv.as_deref()),
        Command::Profile {
            command:
                ProfileCommand::Init {
                    repo,
                    output,
                    python,
                    offline,
                    index_url,
                },
        } => {
            let how = InitIndex {
                python,
                offline,
                index_url,
            };
            run_profile_init(&repo, output.as_deref(), &how)
        }
        Command::Signed {
            evidence,
            archive,
            trusted_keys,
            python,
        } => run_signed(crate::signed::SignedOptions {
            evidence,
            archive,
            trusted_keys,
            python,
        }),
        Command::Gates { ids, format } => run_gate_list(&ids, format),
        Command::Replay {
            evidence,
            repo,
            python,
            format,
            quiet,
        } => run_replay(
            replay::ReplayOptions {
                evidence,
                repo,
                python,
                recorded_python_only: false,
            },
            format,
            quiet,
        ),
        Command::Report { evidence, output } => run_report(&evidence, output.as_deref()),
        Command::Merge {
            into,
            sign_off_by,
            dirs,
        } => run_merge(&into, &dirs, sign_off_by),
    }
}

/// `verify-coding-candidates signed`: one line, on stdout for a valid or an
/// invalid archive (exit 0 or 1), on stderr when it could not be checked.
fn run_signed(options: crate::signed::SignedOptions) -> ExitCode {
    match crate::signed::run(&options) {
        crate::signed::Outcome::Valid(line) => {
            emit(&format!("{line}\n"));
            ExitCode::from(exit::SUCCESS)
        }
        crate::signed::Outcome::Invalid(line) => {
            emit(&format!("{line}\n"));
            ExitCode::from(exit::GATE_FAILED)
        }
        crate::signed::Outcome::CannotRun(line) => {
            crate::stderr_line!("error: {line}");
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

/// `verify-coding-candidates gates [GATE...]`: the catalogue as text or JSON.
fn run_gate_list(ids: &[String], format: Format) -> ExitCode {
    let gates = match gate_list::select(ids) {
        Ok(gates) => gates,
        Err(e) => {
            crate::stderr_line!("error: {e}");
            return ExitCode::from(exit::CANNOT_RUN);
        }
    };
    let all = ids.is_empty();
    emit(&match format {
        Format::Text => gate_list::text(&gates, gate_list::stdout_width(), all),
        Format::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&gate_list::json(&gates, all)).unwrap_or_default()
        ),
    });
    ExitCode::from(exit::SUCCESS)
}

/// `verify-coding-candidates merge`: the merged evidence's summary, the exit
/// code its verdict gives.
fn run_merge(into: &Path, dirs: &[PathBuf], sign_off_by: Option<String>) -> ExitCode {
    match merge::merge(into, dirs, sign_off_by) {
        Ok(ev) => {
            emit(&report::summary(&ev, into, false));
            ExitCode::from(if ev.verdict == Verdict::Pass {
                exit::SUCCESS
            } else {
                exit::GATE_FAILED
            })
        }
        Err(e) => {
            crate::stderr_line!("error: merge: {e}");
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

/// The certification: the pipeline over the options given, its summary on
/// stdout, the exit code its verdict gives.
fn run_certification(cli: Cli) -> ExitCode {
    let made_evidence = match fresh_evidence_dir(&cli) {
        Ok(made) => made,
        Err(code) => return code,
    };
    let (format, quiet) = (cli.format, cli.quiet);
    let opts = run_options(cli, made_evidence.as_deref());
    // An unknown id is a bad argument: reject it before saying anything about
    // the selection. The prerequisites note waits for the first gate, so it
    // never precedes a setup error either.
    let prerequisites_note = match prerequisites_note(&opts) {
        Ok(note) => note,
        Err(e) => {
            crate::stderr_line!("error: {e}");
            return ExitCode::from(exit::CANNOT_RUN);
        }
    };
    let mut progress = TerminalProgress {
        enabled: std::io::stderr().is_terminal() && !quiet,
        quiet,
        pending_note: prerequisites_note.filter(|_| !quiet),
    };
    match pipeline::run(&opts, &mut progress) {
        Ok(outcome) => {
            emit_summary(&outcome, format, made_evidence.is_some());
            ExitCode::from(match outcome.evidence.verdict {
                Verdict::Pass => exit::SUCCESS,
                Verdict::Fail => exit::GATE_FAILED,
                Verdict::Incomplete => exit::INTERRUPTED,
            })
        }
        Err(e) => {
            crate::stderr_line!("error: {e}");
            if let Some(dir) = &made_evidence {
                // Nothing was written: do not leave the empty folder behind.
                let _ = std::fs::remove_dir(dir);
            }
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

/// Without --evidence: a fresh folder under the system temporary
/// directory, kept after the run, its path printed last. `Err`: the exit
/// code when none can be made (the error is on stderr).
fn fresh_evidence_dir(cli: &Cli) -> Result<Option<PathBuf>, ExitCode> {
    let made_evidence = match &cli.evidence {
        Some(_) => None,
        None => match tempfile::Builder::new()
            .prefix("verify-coding-candidates-evidence-")
            .tempdir()
            .map(tempfile::TempDir::keep)
        {
            Ok(dir) => Some(dir),
            Err(e) => {
                crate::stderr_line!(
                    "error: no --evidence given, and cannot make a fresh directory under {}: {e}; \
                     pass --evidence DIR",
                    std::env::temp_dir().display()
                );
                return Err(ExitCode::from(exit::CANNOT_RUN));
            }
        },
    };
    if let (Some(dir), false) = (&made_evidence, cli.quiet) {
        crate::stderr_line!(
            "no --evidence given: writing the evidence into {} (kept; its path is printed last)",
            dir.display()
        );
    }
    Ok(made_evidence)
}

/// The pipeline's options from the command line (`made_evidence`: the
/// fresh folder used without --evidence).
fn run_options(cli: Cli, made_evidence: Option<&Path>) -> RunOptions {
    RunOptions {
        repo: cli.repo,
        evidence: cli
            .evidence
            .or_else(|| made_evidence.map(Path::to_path_buf))
            .expect("--evidence or a fresh directory"),
        python: cli.python,
        profile: cli.profile,
        only: cli.only,
        sign_off_by: cli.sign_off_by,
        partition: cli.partition,
        isolation: cli.isolation,
        release_dir: cli.release_dir,
        jobs: cli
            .jobs
            .map_or_else(crate::pipeline::default_jobs, usize::from),
        worktree: cli.worktree,
        index_url: cli.index_url,
        sdk_group: cli.sdk_group,
    }
}

/// The note naming the prerequisite gates `--only` adds, if any.
///
/// # Errors
/// An `--only` id the catalogue does not have.
fn prerequisites_note(opts: &RunOptions) -> Result<Option<String>, String> {
    let Some(only) = &opts.only else {
        return Ok(None);
    };
    catalogue::check_ids(only)?;
    let with = catalogue::with_prerequisites(only);
    let added: Vec<&str> = with
        .iter()
        .filter(|g| !only.contains(g))
        .map(String::as_str)
        .collect();
    Ok((!added.is_empty()).then(|| {
        format!(
            "--only {}: also running prerequisite gate(s) {}",
            only.join(","),
            added.join(", ")
        )
    }))
}

/// The run's summary on stdout: text (colored on a terminal unless
/// `NO_COLOR`; the evidence directory's path last when `made_evidence`) or
/// JSON.
fn emit_summary(outcome: &pipeline::Outcome, format: Format, made_evidence: bool) {
    match format {
        Format::Text => {
            let color = std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let mut text = report::summary(&outcome.evidence, &outcome.dir, color);
            if made_evidence {
                text.push_str(&format!("{}\n", outcome.dir.display()));
            }
            emit(&text);
        }
        Format::Json => emit(&format!(
            "{}\n",
            report::summary_json(&outcome.evidence, &outcome.dir)
        )),
    }
}

/// `verify-coding-candidates sdk`: provisions the interpreter of the
/// profile's pin (built-in unless `profile`), steps on stderr, the path last
/// on stdout. A profile with SDK groups (`[[candidate]] sdk`) has every
/// other group's interpreter provisioned first (one line each on stdout
/// without `--print-path`); the path printed last is always the default
/// group's, the one `--python` stands for.
fn run_sdk(
    print_path: bool,
    profile: Option<&std::path::Path>,
    index_url: &str,
    venv: Option<&std::path::Path>,
) -> ExitCode {
    let parsed = match profile {
        None => crate::profile::parse(
            crate::profile::BUILTIN_CODING_RUNNERS,
            "built-in coding-runners",
        )
        .map_err(|e| e.to_string()),
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("--profile {}: cannot read it: {e}", path.display()))
            .and_then(|text| {
                crate::profile::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())
            }),
    };
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            crate::stderr_line!("error: sdk: {e}");
            return ExitCode::from(exit::CANNOT_RUN);
        }
    };
    if let Some(path) = venv {
        return run_sdk_venv(print_path, &parsed.sdk, path, index_url);
    }
    for group in parsed.sdk_groups().iter().filter(|g| !g.default) {
        let requirement = group.pin.requirement.clone();
        let mut say = |line: &str| crate::stderr_line!("sdk group {requirement}: {line}");
        match crate::provision::provision_sdk(&group.pin, index_url, &mut say) {
            Ok(ready) if !print_path => emit(&format!(
                "{requirement} ready ({} distributions verified against their RECORD{}):\n{}\n",
                ready.sound.distributions,
                if ready.reused { "; reused" } else { "" },
                ready.python.display()
            )),
            Ok(_) => {}
            Err(e) => {
                crate::stderr_line!("error: sdk group {requirement}: {e}");
                return ExitCode::from(exit::CANNOT_RUN);
            }
        }
    }
    let pin = parsed.sdk;
    let mut say = |line: &str| crate::stderr_line!("sdk: {line}");
    match crate::provision::provision_sdk(&pin, index_url, &mut say) {
        Ok(ready) => {
            if print_path {
                emit(&format!("{}\n", ready.python.display()));
            } else {
                emit(&format!(
                    "{} ready ({} distributions verified against their RECORD{}):\n{}\n",
                    pin.requirement,
                    ready.sound.distributions,
                    if ready.reused { "; reused" } else { "" },
                    ready.python.display()
                ));
            }
            ExitCode::from(exit::SUCCESS)
        }
        Err(e) => {
            crate::stderr_line!("error: sdk: {e}");
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

/// The `discovery-rpc` gate's host process, `verify-coding-candidates
/// __discovery-host --spec FILE`: internal, started by the gate only.
///
/// It is no subcommand of [`Cli`], so `--help`, the man page and every
/// completion script leave it out (clap_complete offers hidden subcommands).
#[derive(Debug, Parser)]
#[command(name = "verify-coding-candidates __discovery-host")]
struct DiscoveryHost {
    /// The host spec the gate wrote.
    #[arg(long, value_name = "FILE")]
    spec: PathBuf,
}

/// Runs the host when the first argument is
/// [`HOST_SUBCOMMAND`](crate::gates::discovery_rpc::HOST_SUBCOMMAND); `None`
/// for every other command line.
fn discovery_host_main() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let program = args.next()?;
    if args.next()? != crate::gates::discovery_rpc::HOST_SUBCOMMAND {
        return None;
    }
    Some(
        match DiscoveryHost::try_parse_from(std::iter::once(program).chain(args)) {
            Ok(host) => crate::gates::discovery_rpc::host_main(&host.spec),
            Err(e) => {
                let _ = e.print();
                ExitCode::from(if e.use_stderr() {
                    exit::CANNOT_RUN
                } else {
                    exit::SUCCESS
                })
            }
        },
    )
}

/// The run's options (argument id, flag), which belong before no subcommand.
const RUN_OPTIONS: &[(&str, &str)] = &[
    ("repo", "--repo"),
    ("evidence", "--evidence"),
    ("python", "--python"),
    ("profile", "--profile"),
    ("only", "--only"),
    ("partition", "--partition"),
    ("sign_off_by", "--sign-off-by"),
    ("isolation", "--isolation"),
    ("release_dir", "--release-dir"),
    ("jobs", "--jobs"),
    ("index_url", "--index-url"),
    ("quiet", "--quiet"),
    ("format", "--format"),
    ("worktree", "--worktree"),
    ("sdk_group", "--sdk-group"),
];

/// Refuses run options given on the command line before subcommand `name`
/// (`--python X replay ...`): clap parses them as the run's, and the
/// subcommand would silently ignore them. Values from the environment
/// (`PYTHON`) and defaults are not "given".
///
/// # Errors
/// A sentence naming each misplaced option and where it belongs.
fn refuse_run_options(matches: &ArgMatches, name: &str) -> Result<(), String> {
    let given: Vec<&str> = RUN_OPTIONS
        .iter()
        .filter(|(id, _)| matches.value_source(id) == Some(ValueSource::CommandLine))
        .map(|(_, flag)| *flag)
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    let command = Cli::command();
    let sub = command.find_subcommand(name);
    // A flag the subcommand, or one of its own subcommands, takes.
    let takes = |flag: &str| {
        sub.is_some_and(|s| {
            std::iter::once(s)
                .chain(s.get_subcommands())
                .flat_map(|c| c.get_arguments())
                .any(|a| a.get_long() == flag.strip_prefix("--"))
        })
    };
    let (after, none): (Vec<&str>, Vec<&str>) = given.iter().partition(|f| takes(f));
    let mut parts = Vec::new();
    if !after.is_empty() {
        // The whole command path (`profile init`), where the flag goes.
        let path = match matches.subcommand().and_then(|(_, m)| m.subcommand_name()) {
            Some(nested) => format!("{name} {nested}"),
            None => name.to_string(),
        };
        parts.push(format!(
            "put {} after the subcommand (`verify-coding-candidates {path} {} ...`)",
            after.join(", "),
            after[0]
        ));
    }
    if !none.is_empty() {
        parts.push(format!(
            "`{name}` takes no {}: leave {} out",
            none.join(", "),
            if none.len() == 1 { "it" } else { "them" }
        ));
    }
    Err(format!(
        "{} given before the `{name}` subcommand: options before a subcommand are a run's, and `{name}` \
         would ignore them; {}",
        given.join(", "),
        parts.join("; ")
    ))
}

/// One progress line per gate on stderr, only on a terminal and without `--quiet`.
struct TerminalProgress {
    enabled: bool,
    /// `--quiet`: no notes either.
    quiet: bool,
    /// Printed when the first gate starts, that is once the run's inputs
    /// were accepted, also when stderr is not a terminal (`None` with `--quiet`).
    pending_note: Option<String>,
}

impl Progress for TerminalProgress {
    fn note(&mut self, line: &str) {
        if !self.quiet {
            crate::stderr_line!("{line}");
        }
    }

    fn gate_started(&mut self, index: usize, total: usize, id: &str, also_running: &[&str]) {
        if let Some(note) = self.pending_note.take() {
            crate::stderr_line!("{note}");
        }
        if self.enabled {
            if also_running.is_empty() {
                crate::stderr_line!("[{index}/{total}] {id} ...");
            } else {
                crate::stderr_line!(
                    "[{index}/{total}] {id} ... (also running: {})",
                    also_running.join(", ")
                );
            }
        }
    }

    fn gate_finished(&mut self, record: &GateRecord) {
        if !self.enabled {
            return;
        }
        let secs = record.duration_ms as f64 / 1000.0;
        match record.result {
            GateResult::Pass => crate::stderr_line!("      {} pass ({secs:.1}s)", record.id),
            _ => crate::stderr_line!(
                "      {} {} ({secs:.1}s): {}",
                record.id,
                record.result.word(),
                record.reason.as_deref().unwrap_or("")
            ),
        }
    }
}

/// `report --evidence DIR [--output FILE]`.
fn run_report(dir: &Path, output: Option<&Path>) -> ExitCode {
    let cannot = |message: String| {
        crate::stderr_line!("error: report: {message}");
        ExitCode::from(exit::CANNOT_RUN)
    };
    let ev = match crate::evidence::read(dir) {
        Ok(ev) => ev,
        Err(e) => {
            return cannot(format!(
                "expected an evidence directory with a readable evidence.json: {e}; \
                 pass --evidence with the directory a run wrote"
            ))
        }
    };
    let page = crate::evidence::html::render(&ev);
    let Some(file) = output else {
        emit(&page);
        return ExitCode::from(exit::SUCCESS);
    };
    let (parent, name) = match (file.parent(), file.file_name().and_then(|n| n.to_str())) {
        (Some(p), Some(n)) => (
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            },
            n,
        ),
        _ => return cannot(format!("--output {}: expected a file name", file.display())),
    };
    let inside = match (parent.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => p.starts_with(d),
        _ => false,
    };
    if inside {
        return cannot(format!(
            "--output {}: inside the evidence directory, whose files SHA256SUMS and the sign-off \
             cover; the run wrote its own report.html there: choose a file outside it",
            file.display()
        ));
    }
    match crate::evidence::write_atomic(parent, name, page.as_bytes()) {
        Ok(()) => {
            crate::stderr_line!("wrote {} ({} bytes)", file.display(), page.len());
            ExitCode::from(exit::SUCCESS)
        }
        Err(e) => cannot(format!("--output {}: cannot write: {e}", file.display())),
    }
}

fn run_replay(opts: replay::ReplayOptions, format: Format, quiet: bool) -> ExitCode {
    if format == Format::Text && !quiet {
        crate::stderr_line!(
            "replaying {}{}",
            opts.evidence.display(),
            if opts.repo.is_some() {
                " (with rebuild)"
            } else {
                ""
            }
        );
    }
    match replay::replay(&opts) {
        Ok(report) => {
            let rows = &report.rows;
            let mismatches = rows
                .iter()
                .filter(|r| r.matches == replay::Match::No)
                .count();
            let text = match format {
                Format::Text => {
                    let mut text = replay::render_table(rows);
                    if let Some(r) = &report.rebuild {
                        text.push_str(&format!(
                            "\nrebuilt with {} (from {}; langbot-plugin {})\n",
                            r.python, r.from, r.sdk_version
                        ));
                    }
                    for n in &report.not_redecided {
                        text.push_str(&format!("not re-decided: {}: {}\n", n.gate, n.why));
                    }
                    if mismatches == 0 {
                        text.push_str(&format!("\nREPLAY OK: {} items match\n", rows.len()));
                    } else {
                        text.push_str(&format!(
                            "\nREPLAY MISMATCH: {mismatches} of {} items differ:\n",
                            rows.len()
                        ));
                        for r in rows.iter().filter(|r| r.matches == replay::Match::No) {
                            text.push_str(&format!(
                                "  {}: recorded {}, observed {}\n",
                                r.item, r.recorded, r.observed
                            ));
                        }
                    }
                    text
                }
                Format::Json => {
                    let doc = serde_json::json!({
                        "ok": mismatches == 0,
                        "mismatches": mismatches,
                        "rebuild": report.rebuild,
                        "not_redecided": report.not_redecided,
                        "rows": rows.iter().map(replay::Row::to_json).collect::<Vec<_>>(),
                    });
                    format!(
                        "{}\n",
                        serde_json::to_string_pretty(&doc).unwrap_or_default()
                    )
                }
            };
            emit(&text);
            ExitCode::from(if mismatches == 0 {
                exit::SUCCESS
            } else {
                exit::GATE_FAILED
            })
        }
        Err(e) => {
            crate::stderr_line!("error: replay: {e}");
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

/// Writes `text` to stdout: every stdout write of the CLI goes through
/// here, once per command ([`output::stdout`]: a closed pipe ends the output
/// quietly, the exit code is unchanged).
/// `sdk --venv PATH`: an environment of exactly the lock of `pin` at `path`.
fn run_sdk_venv(
    print_path: bool,
    pin: &crate::profile::SdkPin,
    path: &std::path::Path,
    index_url: &str,
) -> ExitCode {
    let mut say = |line: &str| crate::stderr_line!("sdk: {line}");
    match crate::provision::create_venv(pin, path, index_url, &mut say) {
        Ok(ready) if print_path => {
            emit(&format!("{}\n", ready.python.display()));
            ExitCode::from(exit::SUCCESS)
        }
        Ok(ready) => {
            emit(&format!(
                "{} ready at {} ({} distributions verified against their RECORD{}); use it with \
                 --python {}:\n{}\n",
                pin.requirement,
                ready.venv.display(),
                ready.sound.distributions,
                if ready.reused { "; reused" } else { "" },
                ready.python.display(),
                ready.python.display()
            ));
            ExitCode::from(exit::SUCCESS)
        }
        Err(e) => {
            crate::stderr_line!("error: sdk: {e}");
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

fn emit(text: &str) {
    output::stdout(text);
}
