//! `cargo xtask sdk | demo | test | schema`: developer tasks.
//!
//! - `sdk`: provisions the genuine SDK interpreter (`target/sdk-venv`) with the
//!   verifier's own provisioning (`src/provision.rs`: the SDK's lock list plus
//!   `xtask/test-extras.lock`, hash-checked, re-verified on reuse), and prints
//!   its path (last line of stdout).
//! - `demo`: certifies a copy of `fixtures/candidate-repo` end to end.
//! - `test`: provisions the SDK while the test binaries build, then
//!   `cargo nextest run --workspace` (or
//!   `cargo test --workspace` where cargo-nextest is missing) with `PYTHON` set.
//! - `schema`: regenerates `evidence-schema/v1/evidence.schema.json`.
//! - `wheel-records`: regenerates the `.records` file beside each carried
//!   lock list from the locked wheels (`wheel_records.rs`).
//! - `fuzz`: runs every reader of untrusted bytes for N executions
//!   (`examples/fuzz.rs`, built with `--release`) and prints the figures.
//! - `bench`: what certification costs: `--jobs 1` against the default,
//!   optionally against a peer command, and per candidate at 30 candidates
//!   (`bench.rs`).
//!
//! Progress goes to stderr; a subcommand's result (a path, the demo's
//! verdict) goes to stdout.

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use verify_coding_candidates::exit;

mod bench;
mod mutants;
mod ram_temp;
mod wheel_records;

/// The lock list of the extras the test suite needs in `target/sdk-venv`
/// beside the SDK's own: `junitparser` is the JUnit consumer the tests read
/// `junit.xml` back with; `xmlschema` validates it against the JUnit schema
/// CI systems accept.
const TEST_EXTRAS_LOCK: &str = include_str!("../test-extras.lock");

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  sdk      create (or re-verify and reuse) target/sdk-venv: the locked langbot-plugin==0.6.0b5 set plus the
           test extras, every wheel hash-checked; print its python
  demo     build the verifier and certify a copy of fixtures/candidate-repo; keep and print the paths
  test     provision the SDK while the test binaries build, then `cargo nextest run --workspace` with
           PYTHON set (cargo test where cargo-nextest is missing; extra args go to either)
  schema   write evidence-schema/v1/evidence.schema.json from the evidence types
  wheel-records  download every locked wheel (by hash) and write, beside each lock list, its .records file:
           what each wheel's own RECORD says (src/provision/wheel_records.rs)
  fuzz     [--execs N] [--seed S] [--only READER]: run every reader of untrusted bytes (RECORD, ZIP central
           directory, tar extraction, manifest, profile, JUnit) N times (default 1000000) on mutated inputs;
           print executions, time, panics and the largest allocation per reader (exit 1 on a panic)
  bench    [--runs N] [--repo DIR] [--peer CMD] [--skip-scale] ...: certify the fixture with --jobs 1 and the
           default, alternating, N times each (default 3), then a generated 30-candidate repository; print
           median wall, CPU and peak RSS, and the ratios against their targets (`cargo xtask bench --help`)
  mutants  [--list] [--file PATH]...: cargo-mutants over the gates and readers against the unit tests;
           print caught/missed/unviable/timeouts per file (exit 1 when a gate file catches < 90 %)
  man      write the man page to target/man/verify-coding-candidates.1
  completions  write shell completions (bash, zsh, fish, elvish, powershell) to target/completions/

environment:
  VCC_BASE_PYTHON  interpreter used to create the venv (default: python3 on PATH)
  CARGO_TARGET_DIR honoured for target/sdk-venv and the demo binary";

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let command = args.next().and_then(|a| a.into_string().ok());
    let rest: Vec<OsString> = args.collect();
    let result = match command.as_deref() {
        Some("sdk") => sdk().map(|python| {
            println!("{}", python.display());
            0
        }),
        Some("demo") => demo(),
        Some("test") => test(&rest),
        Some("schema") => schema().map(|_| 0),
        Some("wheel-records") => wheel_records::run(&workspace_root()).map(|paths| {
            for p in paths {
                println!("{}", p.display());
            }
            0
        }),
        Some("fuzz") => fuzz(&rest),
        Some("bench") => bench::bench(&rest),
        Some("mutants") => mutants::run(&workspace_root(), &target_dir(), sdk, &rest),
        Some("man") => man(&target_dir().join("man")).map(|p| {
            println!("{}", p.display());
            0
        }),
        Some("completions") => completions(&target_dir().join("completions")).map(|paths| {
            for p in paths {
                println!("{}", p.display());
            }
            0
        }),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(0)
        }
        other => {
            if let Some(other) = other {
                eprintln!("unknown command {other:?}\n");
            }
            eprintln!("{USAGE}");
            Ok(2)
        }
    };
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// The workspace root (the parent of this crate's manifest directory).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// `$CARGO_TARGET_DIR` (made absolute) or `<workspace>/target`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// The cargo that runs us (`$CARGO`), else `cargo` on PATH.
fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Runs `cmd` with its stdout sent to our stderr (stdout is reserved for
/// results), failing on a non-zero exit.
fn run_to_stderr(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .status()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Creates or reuses `target/sdk-venv` and returns its interpreter's
/// absolute path (`<venv>/bin/python`, not resolved through symlinks).
fn sdk() -> Result<PathBuf> {
    use verify_coding_candidates::provision;
    let pin = verify_coding_candidates::profile::parse(
        verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS,
        "built-in coding-runners",
    )?
    .sdk;
    let extras = provision::lock_list::parse(TEST_EXTRAS_LOCK, "xtask/test-extras.lock")
        .map_err(anyhow::Error::msg)?;
    let lock = provision::sdk_lock(&pin)?
        .merged(&extras)
        .map_err(anyhow::Error::msg)?;
    let ready = provision::ensure(
        &target_dir(),
        "sdk-venv",
        &lock,
        provision::DEFAULT_INDEX_URL,
        &mut |line| eprintln!("sdk: {line}"),
    )?;
    Ok(ready.python)
}

/// `cargo xtask test [ARGS]`: the SDK and the test build at once, then
/// `cargo nextest run --workspace ARGS` (or `cargo test`) with `PYTHON`.
fn test(extra: &[OsString]) -> Result<i32> {
    // The SDK venv is mostly downloads and unpacking, the test build mostly
    // compiling: on a fresh machine each took about half a minute of the
    // other's wait, so both run at once and the tests start after both.
    let provision = std::thread::spawn(sdk);
    let built = prebuild();
    let python = provision
        .join()
        .map_err(|_| anyhow::anyhow!("sdk: provisioning panicked"))??;
    built?;
    // cargo-nextest runs every test as its own process, several at a time
    // across binaries (`.config/nextest.toml`); `cargo test` runs one binary
    // after another, so each binary's slowest test leaves cores idle. The
    // suite has no doctests, so nextest runs all of it.
    let nextest = Command::new(cargo())
        .args(["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let args: &[&str] = if nextest {
        &["nextest", "run", "--workspace", "--no-fail-fast"]
    } else {
        eprintln!(
            "test: cargo-nextest not found; running cargo test, one test binary at a time \
             (slower; install it: https://nexte.st)"
        );
        &["test", "--workspace", "--no-fail-fast"]
    };
    // The whole command, filter included: a copied line runs what this did.
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string())
        .chain(extra.iter().map(|a| shell_word(Path::new(a))))
        .collect();
    eprintln!(
        "test: PYTHON={} cargo {}",
        shell_word(&python),
        words.join(" ")
    );
    eprintln!("test: {}", browser_note());
    // Fixture repositories and evidence go to a RAM-backed folder when there
    // is one to spare (`ram_temp.rs`): the same tests, less kernel time.
    let (temp, why) = ram_temp::choose()?;
    eprintln!("test: temporary files: {why}");
    // The verifier runs tests share (`tests/common/shared_run.rs`): made by
    // the first test that asks, read by the others, removed after the run.
    let shared = match &temp {
        Some(dir) => dir.join("vcc-shared-runs"),
        None => unique_temp_dir("vcc-shared-runs")?,
    };
    // --no-fail-fast: one failing test must not hide the others' results.
    let mut cmd = Command::new(cargo());
    cmd.current_dir(workspace_root())
        .args(args)
        .args(extra)
        .env("PYTHON", &python)
        .env("VCC_SHARED_RUNS", &shared);
    if let Some(dir) = &temp {
        cmd.env("TMPDIR", dir);
    }
    let status = cmd.status().context("cannot start cargo");
    remove_tree(temp.as_ref().unwrap_or(&shared));
    Ok(status?.code().unwrap_or(1))
}

/// Builds every test binary of the workspace (`cargo test --workspace
/// --no-run`: what `cargo nextest run` and `cargo test` build before they
/// run anything) while [`sdk`] provisions.
///
/// # Errors
/// When the build fails (its errors are already on stderr).
fn prebuild() -> Result<()> {
    eprintln!("test: building the test binaries while the SDK is provisioned");
    run_to_stderr(
        Command::new(cargo()).current_dir(workspace_root()).args([
            "test",
            "--workspace",
            "--no-run",
        ]),
        "test: building the test binaries",
    )
}

/// Removes `dir` and everything under it, owner write permission restored
/// first (the SDK publishes read-only files into evidence); errors ignored.
fn remove_tree(dir: &Path) {
    fn writable(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                writable(&entry.path());
            }
        }
    }
    writable(dir);
    let _ = std::fs::remove_dir_all(dir);
}

/// Whether the browser checks of `report.html` (`tests/it/report_page.rs`)
/// run: they need Chromium (`$CHROMIUM`, else Debian's `/usr/bin/chromium`),
/// and are skipped without it, except under CI (`.ci/run` installs it).
fn browser_note() -> String {
    let found = std::env::var_os("CHROMIUM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .into_iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        });
    match found {
        Some(p) => format!("report.html browser checks with {}", p.display()),
        None => "Chromium not found: the browser checks of report.html are SKIPPED \
                 (install it: apt-get install chromium)"
            .into(),
    }
}

/// `cargo xtask fuzz [ARGS]`: `cargo run --release --example fuzz -- ARGS`.
/// The figures go to stdout; a finding's input is saved under
/// `target/fuzz/findings/`.
fn fuzz(extra: &[OsString]) -> Result<i32> {
    eprintln!("fuzz: cargo run --release --example fuzz");
    let status = Command::new(cargo())
        .current_dir(workspace_root())
        .args(["run", "--release", "--example", "fuzz", "--"])
        .args(extra)
        .env("CARGO_TARGET_DIR", target_dir())
        .status()
        .context("cannot start cargo run")?;
    Ok(status.code().unwrap_or(1))
}

/// `cargo xtask demo`: certifies a fresh git copy of the fixture repository.
fn demo() -> Result<i32> {
    let root = workspace_root();
    let verifier = build_verifier(false)?;
    let python = sdk()?;

    let base = unique_temp_dir("vcc-demo")?;
    let repo = base.join("langbot-plugins");
    let evidence = base.join("evidence");
    copy_tree(&root.join("fixtures").join("candidate-repo"), &repo)?;
    git_commit_all(&repo, "fixture: candidate repository")?;
    eprintln!("demo: repository {}", repo.display());
    // The whole command, ready to paste (with a fresh --evidence for a re-run).
    eprintln!(
        "demo: {} --repo {} --evidence {} --python {}\n",
        shell_word(&verifier),
        shell_word(&repo),
        shell_word(&evidence),
        shell_word(&python)
    );
    let status = Command::new(&verifier)
        .arg("--repo")
        .arg(&repo)
        .arg("--evidence")
        .arg(&evidence)
        .arg("--python")
        .arg(&python)
        .status()
        .with_context(|| format!("cannot start {}", verifier.display()))?;
    let code = status.code().unwrap_or(1);
    // The exit code is the verdict (the verifier's documented table), so the
    // demo need not parse evidence.json.
    let verdict = match u8::try_from(code) {
        Ok(exit::SUCCESS) => "PASS",
        Ok(exit::GATE_FAILED) => "FAIL",
        Ok(exit::INTERRUPTED) => "INCOMPLETE",
        Ok(exit::CANNOT_RUN) => "none: the verifier could not run",
        _ => "unknown: unexpected exit code",
    };
    println!("\ndemo: verdict {verdict} (exit code {code})");
    println!("demo: evidence   {}", evidence.display());
    println!("demo: repository {}", repo.display());
    println!("demo: both are kept; remove {} when done", base.display());
    if code != i32::from(exit::CANNOT_RUN) {
        println!(
            "demo: next, re-derive every digest and rebuild from the repository:\n  {}",
            replay_command(&verifier, &evidence, &repo, &python)
        );
    }
    Ok(code)
}

/// Builds the verifier binary (`--release` when `release`) and returns its path.
fn build_verifier(release: bool) -> Result<PathBuf> {
    let mut args = vec!["build", "--bin", "verify-coding-candidates"];
    if release {
        args.push("--release");
    }
    eprintln!("xtask: cargo {}", args.join(" "));
    run_to_stderr(
        Command::new(cargo())
            .current_dir(workspace_root())
            .args(&args),
        "cargo build",
    )?;
    Ok(target_dir()
        .join(if release { "release" } else { "debug" })
        .join("verify-coding-candidates"))
}

/// Makes `repo` a git repository whose one commit (on `main`) holds every
/// file in it, with no user or system git configuration involved.
fn git_commit_all(repo: &Path, message: &str) -> Result<()> {
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", "verify-coding-candidates demo"],
        &["config", "user.email", "demo@example.invalid"],
        &["config", "commit.gpgsign", "false"],
        &["add", "-A"],
        &["commit", "-q", "-m", message],
    ] {
        run_to_stderr(
            Command::new("git")
                .args(args)
                .current_dir(repo)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .env_remove("GIT_INDEX_FILE"),
            &format!("git {}", args.join(" ")),
        )?;
    }
    Ok(())
}

/// The `replay` command a reviewer runs next on the demo's evidence, ready
/// to paste.
fn replay_command(verifier: &Path, evidence: &Path, repo: &Path, python: &Path) -> String {
    format!(
        "{} replay --evidence {} --repo {} --python {}",
        shell_word(verifier),
        shell_word(evidence),
        shell_word(repo),
        shell_word(python)
    )
}

/// `path` as one POSIX shell word: as it is when it holds only characters the
/// shell leaves alone, else single-quoted (`'` written as `'\''`).
fn shell_word(path: &Path) -> String {
    let text = path.to_string_lossy();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// A new directory under the system temporary directory (outside the
/// workspace), named `<prefix>-<seconds>-<pid>[-n]`.
fn unique_temp_dir(prefix: &str) -> Result<PathBuf> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let tmp =
        std::path::absolute(std::env::temp_dir()).context("resolve the temporary directory")?;
    for n in 0..100 {
        let dir = tmp.join(format!("{prefix}-{secs}-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("create {}", dir.display())),
        }
    }
    bail!(
        "cannot create a fresh {prefix} directory under {}",
        tmp.display()
    )
}

/// Copies files and directories under `src` to `dst`, skipping `__pycache__`
/// and `.pytest_cache` (never part of a fixture);
/// refuses anything else (fixtures hold no links).
fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst).with_context(|| format!("create {}", dst.display()))?;
    let mut entries: Vec<_> = std::fs::read_dir(src)
        .with_context(|| format!("read {}", src.display()))?
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("read {}", src.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let kind = entry.file_type()?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        if kind.is_dir() {
            if entry.file_name() != "__pycache__" && entry.file_name() != ".pytest_cache" {
                copy_tree(&from, &to)?;
            }
        } else if kind.is_file() {
            std::fs::copy(&from, &to)
                .with_context(|| format!("copy {} to {}", from.display(), to.display()))?;
        } else {
            bail!(
                "{}: fixtures hold only files and directories",
                from.display()
            );
        }
    }
    Ok(())
}

/// `cargo xtask schema`: writes the evidence schema generated from the types.
fn schema() -> Result<()> {
    let path = workspace_root()
        .join("evidence-schema")
        .join("v1")
        .join("evidence.schema.json");
    std::fs::create_dir_all(path.parent().expect("has a parent"))?;
    std::fs::write(&path, verify_coding_candidates::evidence::schema_json())
        .with_context(|| format!("write {}", path.display()))?;
    eprintln!("schema: wrote {}", path.display());
    println!("{}", path.display());
    Ok(())
}

/// `cargo xtask man`: renders the CLI's man page (roff) into `dir`: one page,
/// `verify-coding-candidates.1`. clap_mangen's own SUBCOMMANDS section
/// refers to `verify-coding-candidates-<sub>(1)` pages that are not written,
/// its EXTRA section fills the exit-code table into running text, its
/// SYNOPSIS names no option's value (`[--repo]`), and without a date its
/// `.TH` shifts the source into the date's place (a footer of overlapping
/// words), so the page is assembled here: clap_mangen's title (with the
/// date of the verifier's HEAD commit, or `SOURCE_DATE_EPOCH`), name,
/// description and options, a SYNOPSIS of our own with value names (one
/// line per subcommand), then SUBCOMMANDS with each subcommand's text and
/// options in this page, EXIT STATUS and EXAMPLES preformatted, VERSION.
fn man(dir: &Path) -> Result<PathBuf> {
    use clap::CommandFactory;
    std::fs::create_dir_all(dir)?;
    let cmd = verify_coding_candidates::cli::Cli::command();
    let path = dir.join("verify-coding-candidates.1");
    let man = clap_mangen::Man::new(cmd.clone())
        .title("VERIFY-CODING-CANDIDATES")
        .date(man_date())
        .manual("User Commands");
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    out.extend_from_slice(synopsis(&cmd).as_bytes());
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let mut page = String::from_utf8(out)?;
    page.push_str(".SH SUBCOMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        page.push_str(&format!(".SS {}\n", roff_escape(sub.get_name())));
        let about = sub
            .get_long_about()
            .or_else(|| sub.get_about())
            .map(|a| a.to_string())
            .unwrap_or_default();
        for paragraph in about.split("\n\n") {
            page.push_str(&format!(".PP\n{}\n", roff_escape(paragraph.trim())));
        }
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            let id = arg.get_id().as_str();
            if id == "help" {
                continue;
            }
            let flag = match (arg.get_short(), arg.get_long()) {
                (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR, \\fB\\-\\-{}\\fR", roff_escape(l)),
                (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff_escape(l)),
                _ => format!("\\fI{}\\fR", roff_escape(&id.to_uppercase())),
            };
            let help = arg
                .get_long_help()
                .or_else(|| arg.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            page.push_str(&format!(".TP\n{flag}\n{}\n", roff_escape(&help)));
        }
    }
    for (title, text) in [
        ("EXIT STATUS", verify_coding_candidates::cli::EXIT_CODES),
        ("EXAMPLES", verify_coding_candidates::cli::EXAMPLES),
    ] {
        page.push_str(&format!(".SH \"{title}\"\n.nf\n"));
        for line in text.lines() {
            page.push_str(&roff_escape(line));
            page.push('\n');
        }
        page.push_str(".fi\n");
    }
    let mut version = Vec::new();
    man.render_version_section(&mut version)?;
    page.push_str(&String::from_utf8(version)?);
    std::fs::write(&path, page).with_context(|| format!("write {}", path.display()))?;
    eprintln!(
        "man: wrote {} (view with `man -l {}`)",
        path.display(),
        path.display()
    );
    Ok(path)
}

/// The man page's date (`YYYY-MM-DD`): `SOURCE_DATE_EPOCH` when set (a
/// reproducible build), else the committer date of the verifier's HEAD,
/// else `unknown date`; never the time of rendering.
fn man_date() -> String {
    if let Some(secs) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        let out = Command::new("date")
            .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%d"])
            .output();
        if let Some(out) = out.ok().filter(|o| o.status.success()) {
            return String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
    }
    Command::new("git")
        .args(["log", "-1", "--format=%cs"])
        .current_dir(workspace_root())
        .output()
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty())
        .map_or_else(
            || "unknown date".to_string(),
            |o| String::from_utf8_lossy(&o.stdout).trim().to_string(),
        )
}

/// The SYNOPSIS section: the run's line (every visible option with its
/// value name, required ones unbracketed, then `[COMMAND]`), then one line
/// per visible subcommand with its own options and arguments.
fn synopsis(cmd: &clap::Command) -> String {
    fn usage(prefix: &str, cmd: &clap::Command) -> String {
        let mut words = vec![format!("\\fB{}\\fR", roff_escape(prefix))];
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            let value = arg
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| roff_escape(v))
                .unwrap_or_else(|| roff_escape(&id.to_uppercase()));
            let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
            let word = match (arg.get_short(), arg.get_long()) {
                (short, Some(long)) => {
                    let flag = match short {
                        Some(s) => format!("\\fB\\-{s}\\fR|\\fB\\-\\-{}\\fR", roff_escape(long)),
                        None => format!("\\fB\\-\\-{}\\fR", roff_escape(long)),
                    };
                    if takes_value {
                        format!("{flag} \\fI{value}\\fR")
                    } else {
                        flag
                    }
                }
                (Some(s), None) => format!("\\fB\\-{s}\\fR"),
                (None, None) => {
                    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
                    format!("\\fI{value}\\fR{}", if many { "..." } else { "" })
                }
            };
            words.push(if arg.is_required_set() {
                word
            } else {
                format!("[{word}]")
            });
        }
        words.join(" ")
    }
    let mut cmd = cmd.clone();
    // Before `build`, an option's number of values is not known.
    cmd.build();
    let cmd = &cmd;
    let name = cmd.get_name();
    let mut lines = vec![format!("{} [\\fICOMMAND\\fR]", usage(name, cmd))];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        lines.push(usage(&format!("{name} {}", sub.get_name()), sub));
    }
    format!(".SH SYNOPSIS\n{}\n", lines.join("\n.br\n"))
}

/// `text` safe as roff input: backslashes and hyphens escaped, a leading
/// `.` or `'` (a request) guarded with `\&`.
fn roff_escape(text: &str) -> String {
    text.lines()
        .map(|line| {
            let escaped = line.replace('\\', "\\e").replace('-', "\\-");
            if escaped.starts_with('.') || escaped.starts_with('\'') {
                format!("\\&{escaped}")
            } else {
                escaped
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `cargo xtask completions`: writes one completion script per shell into `dir`.
fn completions(dir: &Path) -> Result<Vec<PathBuf>> {
    use clap::CommandFactory;
    use clap_complete::Shell;
    std::fs::create_dir_all(dir)?;
    let mut paths = Vec::new();
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        let mut cmd = verify_coding_candidates::cli::Cli::command();
        let path = clap_complete::generate_to(shell, &mut cmd, "verify-coding-candidates", dir)
            .with_context(|| format!("write {shell} completions into {}", dir.display()))?;
        if shell == Shell::Bash {
            fix_bash_case_names(&path)?;
        }
        eprintln!("completions: wrote {}", path.display());
        paths.push(path);
    }
    Ok(paths)
}

/// clap_complete's bash script (4.6) names each subcommand's `case` arm
/// from its bin name with every `-` replaced by `__subcmd__`
/// (`verify__subcmd__coding__subcmd__candidates__subcmd__replay`), while the
/// loop before it builds `verify__coding__candidates__subcmd__replay`: with a
/// hyphenated program name no subcommand's options complete. Renames the
/// arms to the names the loop builds.
fn fix_bash_case_names(path: &Path) -> Result<()> {
    let script = std::fs::read_to_string(path)?;
    let wrong = "verify__subcmd__coding__subcmd__candidates__subcmd__";
    let right = "verify__coding__candidates__subcmd__";
    std::fs::write(path, script.replace(wrong, right))
        .with_context(|| format!("write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_word_quotes_only_paths_the_shell_would_split_or_expand() {
        assert_eq!(
            shell_word(Path::new("/tmp/vcc-demo-1-2-0/target/sdk-venv/bin/python")),
            "/tmp/vcc-demo-1-2-0/target/sdk-venv/bin/python"
        );
        assert_eq!(shell_word(Path::new("/tmp/a b")), "'/tmp/a b'");
        assert_eq!(shell_word(Path::new("/tmp/it's")), r"'/tmp/it'\''s'");
        assert_eq!(shell_word(Path::new("/tmp/$HOME")), "'/tmp/$HOME'");
    }

    #[test]
    fn the_demo_suggests_a_pasteable_replay_command() {
        assert_eq!(
            replay_command(
                Path::new("/w/target/debug/verify-coding-candidates"),
                Path::new("/tmp/vcc-demo-1/evidence"),
                Path::new("/tmp/vcc-demo-1/langbot plugins"),
                Path::new("/w/target/sdk-venv/bin/python"),
            ),
            "/w/target/debug/verify-coding-candidates replay --evidence /tmp/vcc-demo-1/evidence \
             --repo '/tmp/vcc-demo-1/langbot plugins' --python /w/target/sdk-venv/bin/python"
        );
    }

    #[test]
    fn man_page_and_completions_cover_the_subcommands() {
        let dir = std::env::temp_dir().join(format!("vcc-xtask-test-{}", std::process::id()));
        let page = std::fs::read_to_string(man(&dir.join("man")).unwrap()).unwrap();
        assert!(page.contains(".TH VERIFY-CODING-CANDIDATES 1 "), "{page}");
        assert!(
            page.contains("replay") && page.contains("merge") && page.contains("\\-\\-evidence"),
            "{page}"
        );
        // No reference to a page that is not written.
        assert!(!page.contains("(1)"), "{page}");
        assert!(!page.contains("SEE ALSO"), "{page}");
        assert!(page.contains(".SS replay\n"), "{page}");
        assert!(
            page.contains("\\fB\\-\\-into\\fR"),
            "merge's options: {page}"
        );
        // The exit-code table is preformatted, one code per line.
        let status = page.split(".SH \"EXIT STATUS\"\n").nth(1).unwrap();
        assert!(
            status.starts_with(".nf\n0    every required gate passed\n1    "),
            "{page}"
        );
        assert!(status.contains("\n130  interrupted"), "{page}");
        assert!(page.contains(".SH \"EXAMPLES\"\n.nf\n"), "{page}");
        // Value names in the synopsis, one line per subcommand.
        let synopsis = page.split(".SH SYNOPSIS\n").nth(1).unwrap();
        let synopsis = synopsis.split("\n.SH").next().unwrap();
        for expected in [
            "[\\fB\\-\\-repo\\fR \\fIDIR\\fR]",
            " \\fB\\-\\-evidence\\fR \\fIDIR\\fR ",
            "[\\fB\\-\\-only\\fR \\fIGATE,...\\fR]",
            "[\\fB\\-q\\fR|\\fB\\-\\-quiet\\fR]",
            "\\fBverify\\-coding\\-candidates merge\\fR \\fB\\-\\-into\\fR \\fIOUT\\fR",
            "\\fIDIR\\fR...",
        ] {
            assert!(synopsis.contains(expected), "{expected} in:\n{synopsis}");
        }
        // `.TH title section date source manual`: without the date, the
        // source took its place and the footer's words overlapped.
        let th = page.lines().find(|l| l.starts_with(".TH ")).unwrap();
        let date = th.split_whitespace().nth(3).unwrap_or_default();
        assert!(
            date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
            "{th}"
        );
        assert!(
            th.contains("\"verify\\-coding\\-candidates 0.")
                || th.contains("\"verify-coding-candidates 0."),
            "{th}"
        );
        assert!(th.ends_with("\"User Commands\""), "{th}");
        let paths = completions(&dir.join("completions")).unwrap();
        assert_eq!(paths.len(), 5);
        for path in &paths {
            let script = std::fs::read_to_string(path).unwrap();
            assert!(
                !script.contains("__discovery-host"),
                "{}: offers the internal host",
                path.display()
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What bash offers for `words` (the last one being completed), with
    /// the generated script loaded.
    fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
        let cword = words.len() - 1;
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let program = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; \
             _verify__coding__candidates verify-coding-candidates '{}' '{}'; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            quoted.join(" "),
            words[cword],
            words[cword - 1],
        );
        let out = Command::new("bash")
            .args(["--norc", "-c", &program])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn bash_completes_subcommand_options_gate_ids_and_backends() {
        let dir = std::env::temp_dir().join(format!("vcc-xtask-bash-{}", std::process::id()));
        completions(&dir).unwrap();
        let script = dir.join("verify-coding-candidates.bash");
        let b = |words: &[&str]| bash_completes(&script, words);
        let replay = b(&["verify-coding-candidates", "replay", "--"]);
        for flag in ["--evidence", "--repo", "--python", "--format"] {
            assert!(
                replay.iter().any(|w| w == flag),
                "replay --<TAB>: {replay:?}"
            );
        }
        let merge = b(&["verify-coding-candidates", "merge", "--"]);
        assert!(
            merge.iter().any(|w| w == "--into"),
            "merge --<TAB>: {merge:?}"
        );
        let subcommands = b(&["verify-coding-candidates", ""]);
        assert!(subcommands.iter().any(|w| w == "replay"), "{subcommands:?}");
        assert!(
            !subcommands.iter().any(|w| w.contains("__discovery")),
            "{subcommands:?}"
        );
        let only = b(&["verify-coding-candidates", "--only", ""]);
        let ids: Vec<String> = verify_coding_candidates::catalogue::all()
            .iter()
            .map(|g| g.id.clone())
            .collect();
        assert_eq!(only, ids, "--only <TAB> offers the gate ids");
        let gates = b(&["verify-coding-candidates", "gates", "lbp"]);
        assert_eq!(gates, ["lbp-build"], "gates lbp<TAB>");
        let isolation = b(&["verify-coding-candidates", "--isolation", ""]);
        assert_eq!(isolation, ["auto", "process", "bwrap"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
