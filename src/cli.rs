//! Command-line interface.

use crate::evidence::{GateRecord, GateResult, Verdict};
use crate::pipeline::{self, Progress, RunOptions};
use crate::{catalogue, exit, report};
use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Exit codes:
  0    every required gate passed
  1    at least one gate failed (evidence still written, verdict `fail`)
  2    could not run: bad arguments, evidence dir not fresh/absolute/outside the repo,
       not a git repo, no interpreter
  130  interrupted: children reaped, evidence written with verdict `incomplete`

Examples:
  # CI: certify HEAD of the current repository
  verify-coding-candidates --evidence \"$PWD/../evidence\" --python .venv/bin/python

  # A plugin developer: one gate and what it needs
  verify-coding-candidates --only lbp-build --evidence /tmp/ev1 --python .venv/bin/python

  # What each gate proves, and what it does not
  verify-coding-candidates gates";

/// Certify LangBot plugin release candidates from one clean commit, with the
/// genuine SDK, and write evidence a reviewer can replay.
///
/// The repository is never modified: the commit is `git archive`d into the
/// evidence directory, every candidate is built there with the official
/// `lbp build`, and every archive and member is hashed. Nothing is signed.
#[derive(Debug, Parser)]
#[command(name = "verify-coding-candidates", version, after_help = AFTER_HELP, subcommand_negates_reqs = true)]
pub struct Cli {
    /// Repository under review (any path inside it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,

    /// Evidence directory: absolute, missing or empty, outside the repository.
    #[arg(long, value_name = "DIR", required = true)]
    pub evidence: Option<PathBuf>,

    /// Interpreter with the pinned `langbot-plugin` installed (`cargo xtask sdk` prints one).
    #[arg(long, value_name = "PATH", env = "PYTHON")]
    pub python: Option<PathBuf>,

    /// Profile TOML replacing the repository's `verify-coding-candidates.toml` and the built-in `coding-runners`.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,

    /// Run only these gates (comma-separated ids) and the prerequisites they need.
    #[arg(long, value_name = "GATE,...", value_delimiter = ',')]
    pub only: Option<Vec<String>>,

    /// Name recorded in the sign-off block (the archives are never signed).
    #[arg(long, value_name = "NAME")]
    pub sign_off_by: Option<String>,

    /// Subcommand; without one, runs the gates.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every gate: what it proves, what it does not prove, what it needs.
    Gates,
}

/// Parses the command line, runs, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
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
    if let Some(Command::Gates) = cli.command {
        print!("{}", report::catalogue_text(catalogue::all()));
        return ExitCode::from(exit::SUCCESS);
    }
    let opts = RunOptions {
        repo: cli.repo,
        evidence: cli.evidence.expect("clap requires --evidence"),
        python: cli.python,
        profile: cli.profile,
        only: cli.only,
        sign_off_by: cli.sign_off_by,
    };
    if let Some(only) = &opts.only {
        let with = catalogue::with_prerequisites(only);
        let added: Vec<&String> = with.iter().filter(|g| !only.contains(g)).collect();
        if !added.is_empty() {
            eprintln!(
                "--only {}: also running prerequisite gate(s) {}",
                only.join(","),
                added
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let mut progress = TerminalProgress {
        interactive: std::io::stderr().is_terminal(),
    };
    match pipeline::run(&opts, &mut progress) {
        Ok(outcome) => {
            print!("{}", report::summary(&outcome.evidence, &outcome.dir));
            ExitCode::from(match outcome.evidence.verdict {
                Verdict::Pass => exit::SUCCESS,
                Verdict::Fail => exit::GATE_FAILED,
                Verdict::Incomplete => exit::INTERRUPTED,
            })
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit::CANNOT_RUN)
        }
    }
}

struct TerminalProgress {
    interactive: bool,
}

impl Progress for TerminalProgress {
    fn gate_started(&mut self, index: usize, total: usize, id: &str) {
        if self.interactive {
            eprintln!("[{index}/{total}] {id} ...");
        } else {
            eprintln!("[{index}/{total}] {id}");
        }
    }

    fn gate_finished(&mut self, record: &GateRecord) {
        let secs = record.duration_ms as f64 / 1000.0;
        match record.result {
            GateResult::Pass => eprintln!("      {} pass ({secs:.1}s)", record.id),
            _ => eprintln!(
                "      {} {} ({secs:.1}s): {}",
                record.id,
                record.result.word(),
                record.reason.as_deref().unwrap_or("")
            ),
        }
    }
}
