//! The genuine interpreter, asked questions by small embedded `.py` probes.
//!
//! Each probe is a real file in this folder, embedded with `include_str!`,
//! run as `python -I -B -c <source> <args>` (isolated: no user site, no
//! `PYTHON*` variables, no script directory on `sys.path`; no bytecode
//! written), printing exactly one JSON document on stdout that Rust parses
//! into a typed struct.

use crate::process::{self, ChildSpec};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The run's own bytecode cache (`DIR/roots/pycache`), once set.
static PYCACHE_PREFIX: OnceLock<PathBuf> = OnceLock::new();

/// Makes `dir` the bytecode cache of every later Python step of this process
/// that asks for [`bytecode_options`]: the interpreter compiles the SDK (and
/// whatever else it imports) from source once per run into `dir` and reads
/// bytecode only from there, never from the `__pycache__` folders of the
/// venv (which a process with `-B` would read). The first call wins.
pub fn use_pycache_prefix(dir: &Path) {
    let _ = PYCACHE_PREFIX.set(dir.to_path_buf());
}

/// The run's bytecode cache, once [`use_pycache_prefix`] set it.
pub fn pycache_prefix() -> Option<&'static Path> {
    PYCACHE_PREFIX.get().map(PathBuf::as_path)
}

/// The interpreter options for bytecode: `-X pycache_prefix=<dir>` once the
/// run set its cache ([`use_pycache_prefix`]; `-X` options hold under `-I`,
/// where `PYTHONPYCACHEPREFIX` would be ignored), else `-B` (write none, read
/// the venv's).
pub fn bytecode_options() -> Vec<String> {
    match PYCACHE_PREFIX.get() {
        Some(dir) => vec!["-X".into(), format!("pycache_prefix={}", dir.display())],
        None => vec!["-B".into()],
    }
}

pub mod batch;
pub mod bytecode_cache;

/// Asks for the interpreter's facts and the SDK's dist-info (see `sdk_probe.py`).
pub const SDK_PROBE: &str = include_str!("sdk_probe.py");

/// Compares every bytecode file of the SDK's package with this interpreter's
/// compilation of its source, code object by code object (see
/// `bytecode_probe.py`).
pub const BYTECODE_PROBE: &str = include_str!("bytecode_probe.py");

/// Observes the environment every `python -I` start builds (site
/// directories, `.pth` files, start-up modules, `sys.path`) without running
/// any of it, and compares every bytecode file there with its source (see
/// `site_probe.py`; run it with [`Probe::run_before_judgement`], which starts
/// it with `-S`).
pub const SITE_PROBE: &str = include_str!("site_probe.py");

/// The site probe's full source: `bytecode_probe.py`'s functions (as a
/// library), then `site_probe.py`.
pub fn site_probe_source() -> String {
    format!("BYTECODE_LIBRARY = True\n{BYTECODE_PROBE}\n{SITE_PROBE}")
}

/// Asks where `langbot_plugin` resolves, as the interpreter is and on a
/// worker's sys.path, and lists every other copy in reach (see `shadow_probe.py`).
pub const SHADOW_PROBE: &str = include_str!("shadow_probe.py");

/// Admits one archive through the SDK's artifact store and reports the SDK's
/// requirement decisions, line by line (see `admission_probe.py`).
pub const ADMISSION_PROBE: &str = include_str!("admission_probe.py");

/// Prepares one archive's dependency environment through the SDK's worker
/// launcher and environment store (see `dependencies_probe.py`).
pub const DEPENDENCIES_PROBE: &str = include_str!("dependencies_probe.py");

/// The `worker-isolation` gate's worker (see `worker.py`): a daemon hub and
/// the SDK's daemon client driven by JSON lines on stdin. Not a probe: the
/// gate appends a launcher line (`main(Hooks())`) and keeps it running.
pub const WORKER: &str = include_str!("worker.py");

/// The worker interpreter's prefixes, SDK package and pid namespace (see
/// `worker_paths.py`): the bwrap backend's read-only binds and preflight.
pub const WORKER_PATHS_PROBE: &str = include_str!("worker_paths.py");

/// Runs one pytest run of the `suites` gate in one process and records the
/// items that run collected: file, source file, JUnit names, applicable
/// xfail (see `suites_run.py`). Not a probe: stdout belongs to pytest, the
/// record goes to a file.
///
/// `pytest_patches.py` comes first: the driver calls its `scan_patches`.
pub const SUITES_RUN_DRIVER: &str = concat!(
    // First, so that a command line cut short (the journal, `ps`) still
    // names the program a pytest run.
    "# suites_run: the pytest driver of the suites gate\n",
    include_str!("pytest_patches.py"),
    include_str!("suites_run.py")
);

/// The scanner of `pytest_patches.py` alone (its tests run it).
#[cfg(test)]
pub const PYTEST_PATCHES: &str = include_str!("pytest_patches.py");

/// Reads two `manifest.yaml` files with PyYAML's `yaml.safe_load`, as the
/// SDK does (YAML 1.1), and reports the typed values (see
/// `manifest_yaml_probe.py`), after `manifest_pages.py` (what the SDK's
/// build writes as `spec.pages`, and the typed encoding of a PyYAML value:
/// a library the build host shares).
pub const MANIFEST_YAML_PROBE: &str = concat!(
    "# manifest_yaml_probe: how the SDK reads two manifest.yaml files\n",
    include_str!("manifest_pages.py"),
    include_str!("manifest_yaml_probe.py")
);

/// Runs the SDK's own `certification.verify_archive` over a signed archive
/// with a resolver that records what it is asked to verify (`signed`).
pub const SIGNED_PROBE: &str = include_str!("signed_probe.py");

/// Compiles every `.py` member of the built archives in one interpreter
/// start, writing no bytecode, and reports each file that fails with its
/// line (see `compile_probe.py`).
pub const COMPILE_PROBE: &str = include_str!("compile_probe.py");

/// Imports `langbot_plugin.cli` once and runs the official build of each
/// candidate in a child forked from it, as `-m langbot_plugin.cli build -o
/// OUT` would run, after computing each one's `spec.pages` in a child of
/// its own (see `build_host.py`, after `manifest_pages.py`).
pub const BUILD_HOST: &str = concat!(
    "# build_host: the official builds of a run, from one import of the SDK\n",
    include_str!("manifest_pages.py"),
    include_str!("build_host.py")
);

/// What to do when a probe did not answer: the usual cause is an
/// interpreter that is not the SDK venv's Python.
const NOT_AN_INTERPRETER_HINT: &str = "check that --python (or PYTHON) names a CPython 3.10+ \
    interpreter with the pinned langbot-plugin installed, such as the one `cargo xtask sdk` prints";

/// Time limit of one probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// One run of an embedded probe: `python -I [flags] <bytecode options> -c
/// source args...` in `cwd` with exactly `env`, its command line and
/// output logged under `log_stem` (`.cmd`, `.stdout`, `.stderr`), stopped
/// after `timeout`; its stdout is one JSON document.
#[derive(Debug, Clone)]
pub struct Probe<'a> {
    /// The interpreter that runs it.
    pub python: &'a Path,
    /// Its name, for messages (`sdk_probe`).
    pub name: &'a str,
    /// Its source, passed with `-c`.
    pub source: &'a str,
    /// Its arguments (`sys.argv[1:]`).
    pub args: &'a [String],
    /// Its working directory.
    pub cwd: &'a Path,
    /// Its whole environment.
    pub env: BTreeMap<String, String>,
    /// Where its logs go.
    pub log_stem: &'a Path,
    /// Its time limit ([`PROBE_TIMEOUT`] unless it waits on a bounded child
    /// of its own: the SDK's dependency installer may run for up to 600 s).
    pub timeout: Duration,
}

impl Probe<'_> {
    /// Runs the probe and parses its stdout as `T`.
    ///
    /// # Errors
    /// A sentence naming the probe, the interpreter, the status and the
    /// output tail.
    pub fn run<T: DeserializeOwned>(self) -> Result<T, String> {
        let (python, name) = (self.python, self.name);
        parse_probe(process::run(&self.spec(&[], &[])), python, name)
    }

    /// [`Probe::run`] under `wrapper` (a program and its arguments put before
    /// the interpreter, such as a network namespace's `unshare --net --`;
    /// empty: none), with `stdin` written to the probe's standard input
    /// (then closed).
    ///
    /// # Errors
    /// As [`Probe::run`].
    pub fn run_in_with_stdin<T: DeserializeOwned>(
        self,
        wrapper: &[String],
        stdin: Vec<u8>,
    ) -> Result<T, String> {
        let (python, name) = (self.python, self.name);
        let mut spec = self.spec(wrapper, &[]);
        spec.stdin = Some(stdin);
        parse_probe(process::run(&spec), python, name)
    }

    /// A probe of an interpreter environment that has not been judged yet
    /// (the `sdk-record` gate's probes, before `environment-startup`
    /// decides): run with `-I -S`, so `site` does not run and no `.pth`
    /// line, `sitecustomize` or `usercustomize` of the environment executes
    /// (a probe that needs the site directories on `sys.path` is given them
    /// as an argument, read as data by the verifier), and, when bubblewrap is
    /// available, in a sandbox where the whole filesystem is read-only but
    /// the probe's own private roots: the interpreter's prefixes, the
    /// verifier's bytecode cache and the run's `pycache_prefix` cannot be
    /// written through it. Without bubblewrap it runs unconfined, still with
    /// `-I -S`, and the returned record says so.
    ///
    /// # Errors
    /// As [`Probe::run`], in the first element.
    pub fn run_before_judgement<T: DeserializeOwned>(
        self,
        unjudged: &Unjudged<'_>,
    ) -> (Result<T, String>, crate::evidence::sandbox::SandboxRecord) {
        use crate::evidence::sandbox::Network;
        use crate::isolation::sandbox::{self, SandboxPlan};
        let (python, name, log_stem) = (self.python, self.name, self.log_stem);
        let spec = self.spec(&[], &["-S"]);
        let plan = SandboxPlan {
            read_only: vec![PathBuf::from("/")],
            writable: unjudged.writable.clone(),
            network: Network::PrivateLoopback,
            survey: None,
        };
        let (spec, record) = sandbox::confine(spec, &plan, unjudged.sandbox);
        if let Some(folder) = log_stem.parent() {
            let _ = std::fs::create_dir_all(folder);
        }
        let _ = std::fs::write(
            log_stem.with_extension("sandbox.json"),
            serde_json::to_vec_pretty(&record).unwrap_or_default(),
        );
        let out = if record.kind == "bwrap" {
            process::run_sandboxed(&spec)
        } else {
            process::run(&spec)
        };
        (parse_probe(out, python, name), record)
    }

    /// The child to start: `wrapper...` (if any), then the interpreter with
    /// `-I`, `flags`, the bytecode options, `-c source` and the arguments.
    fn spec(self, wrapper: &[String], flags: &[&str]) -> ChildSpec {
        let mut full_args: Vec<String> = wrapper.iter().skip(1).cloned().collect();
        if !wrapper.is_empty() {
            full_args.push(self.python.display().to_string());
        }
        full_args.push("-I".to_string());
        full_args.extend(flags.iter().map(|f| f.to_string()));
        full_args.extend(bytecode_options());
        full_args.extend(["-c".to_string(), self.source.to_string()]);
        full_args.extend(self.args.iter().cloned());
        let program = wrapper
            .first()
            .map(PathBuf::from)
            .unwrap_or_else(|| self.python.to_path_buf());
        ChildSpec {
            program,
            args: full_args,
            cwd: self.cwd.to_path_buf(),
            env: self.env,
            timeout: self.timeout,
            log_stem: self.log_stem.to_path_buf(),
            stdin: None,
        }
    }
}

/// Where and how a probe that observes an environment not yet judged runs
/// ([`Probe::run_before_judgement`]).
#[derive(Debug, Clone)]
pub struct Unjudged<'a> {
    /// The run's sandbox (bwrap, or why there is none).
    pub sandbox: &'a crate::isolation::sandbox::Availability,
    /// The probe's private roots (its HOME and TMPDIR): the only paths it
    /// may write.
    pub writable: Vec<PathBuf>,
}

/// The probe's answer parsed as `T`, or a sentence naming the probe, the
/// interpreter, what went wrong and where the logs are.
fn parse_probe<T: DeserializeOwned>(
    out: Result<process::ChildOutput, process::RunError>,
    python: &Path,
    probe_name: &str,
) -> Result<T, String> {
    let out = out.map_err(|e| e.to_string())?;
    if !out.success() {
        // A full evidence disk is not the interpreter's fault: name it.
        let logs = out.logs.0.parent().unwrap_or(&out.logs.0);
        let output = format!("{}\n{}", out.stderr_text(), out.stdout_text());
        let hint = process::disk::full_disk_hint(logs, out.status.code(), &output)
            .unwrap_or_else(|| NOT_AN_INTERPRETER_HINT.to_string());
        return Err(format!(
            "probe {probe_name} with {}: {}; expected one JSON document on stdout; output tail:\n{}\n\
             full output in {} and {}; {hint}",
            python.display(),
            out.describe(),
            out.tail(15),
            out.logs.0.display(),
            out.logs.1.display()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "probe {probe_name} with {}: expected one JSON document on stdout, found output that is not \
             it ({e}); see {} and {}; {NOT_AN_INTERPRETER_HINT}",
            python.display(),
            out.logs.0.display(),
            out.logs.1.display()
        )
    })
}
