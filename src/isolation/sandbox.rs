//! The sandbox that code under review runs in: the repository's suites, the
//! SDK runtime with its plugin workers, and any probe that executes a
//! candidate's code.
//!
//! The verifier and what it verifies are two parties that run as one user.
//! Around such a step the harness puts Debian's `bubblewrap` (`bwrap`, 0.8
//! manual) so that:
//!
//! * the step has a pid namespace of its own (`--unshare-pid`) whose init is
//!   bwrap's reaper, not the verifier: `os.getppid()` of the step's first
//!   process is 1, a signal to it does nothing, and orphans are reaped inside
//!   at once rather than re-parented to the verifier;
//! * when the step's first process exits, the kernel ends everything in the
//!   namespace; when the verifier dies, even by SIGKILL, bwrap's
//!   `--die-with-parent` ends the namespace too;
//! * the filesystem is a new root with the system directories, the user,
//!   group and hosts files of `/etc` (nothing else of it), the
//!   interpreter and the step's inputs bound read-only, and only the step's
//!   own private roots bound read-write, at their host paths; `/tmp` is an
//!   empty tmpfs of its own;
//! * the network is a new namespace with only loopback up
//!   (`--unshare-net`), or the caller's own namespace (`--share-net`) when
//!   the step talks to the harness over loopback;
//! * the environment is exactly the step's: bwrap is started with it and
//!   passes it on (no `--setenv`, so no value is on a command line or in
//!   the `.cmd` log).
//!
//! Without bwrap the step still runs, unconfined, and its [`SandboxRecord`]
//! says so: the gate then reports a warning, so the statement is never
//! `PASSED`.

use super::bwrap;
use crate::evidence::sandbox::{Network, SandboxRecord};
use crate::evidence::Check;
use crate::process::{self, ChildSpec};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Time limit of the one preflight per run.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(30);

/// Files of `/etc` bound read-only when they exist: the user and group
/// databases (`Path.home()` falls back to them when `HOME` is unset, as in
/// the SDK's plugin workers, whose environment is empty) and name
/// resolution of `localhost`. Nothing else of `/etc` is visible.
const SYSTEM_FILES: &[&str] = &[
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/localtime",
];

/// What a step needs from its sandbox.
#[derive(Debug, Clone)]
pub struct SandboxPlan {
    /// Paths the step reads: bound read-only at the same path. Those that do
    /// not exist are left out.
    pub read_only: Vec<PathBuf>,
    /// The step's private roots and output folders: bound read-write at the
    /// same path. Each must exist.
    pub writable: Vec<PathBuf>,
    /// The step's network.
    pub network: Network,
    /// Where the sandbox's init writes what the step left running (see
    /// [`super::left_running`]), inside a writable path; `None`: bwrap's own
    /// init, no survey. Only for a step whose program is a Python
    /// interpreter (it runs the init too).
    pub survey: Option<PathBuf>,
}

/// The run's bubblewrap, found and preflighted once.
#[derive(Debug, Clone)]
pub enum Availability {
    /// bwrap ran a process with a new pid and network namespace.
    Bwrap(bwrap::Bwrap),
    /// It cannot be used: why.
    Unavailable(String),
}

static AVAILABLE: OnceLock<Availability> = OnceLock::new();

/// Finds bwrap and runs `/bin/sh` inside a sandbox with a pid and a network
/// namespace of its own (it must see itself as a child of pid 1), once per
/// process; later calls return the first answer. `log_dir` holds the
/// preflight's logs.
pub fn availability(log_dir: &Path) -> &'static Availability {
    AVAILABLE.get_or_init(|| preflight(log_dir))
}

fn preflight(log_dir: &Path) -> Availability {
    let program = match bwrap::locate() {
        Ok(p) => p,
        Err(e) => return Availability::Unavailable(e),
    };
    if let Err(e) = std::fs::create_dir_all(log_dir) {
        return Availability::Unavailable(format!("cannot create {}: {e}", log_dir.display()));
    }
    let version = match bwrap::version(&program, log_dir, &log_dir.join("bwrap-version")) {
        Ok(v) => v,
        Err(e) => return Availability::Unavailable(e),
    };
    let b = bwrap::Bwrap { program, version };
    let plan = SandboxPlan {
        read_only: Vec::new(),
        writable: Vec::new(),
        network: Network::PrivateLoopback,
        survey: None,
    };
    let args = step_args(
        &plan,
        Path::new("/"),
        Path::new("/bin/sh"),
        &["-c".into(), "test \"$$\" != 1 && test \"$PPID\" = 1".into()],
    );
    let out = process::run(&ChildSpec {
        program: b.program.clone(),
        args,
        cwd: log_dir.to_path_buf(),
        env: process::base_env(),
        timeout: PREFLIGHT_TIMEOUT,
        log_stem: log_dir.join("bwrap-preflight"),
        stdin: None,
    });
    match out {
        Ok(out) if out.success() => Availability::Bwrap(b),
        Ok(out) => Availability::Unavailable(format!(
            "`{} --unshare-pid --unshare-net ... /bin/sh` did not run as expected: {}: {}",
            b.program.display(),
            out.describe(),
            out.tail(3)
        )),
        Err(e) => Availability::Unavailable(e.to_string()),
    }
}

/// `spec` confined by `plan` when bwrap is available, with the record of
/// the sandbox it runs in; else `spec` unchanged, recorded as unconfined.
pub fn confine(
    spec: ChildSpec,
    plan: &SandboxPlan,
    available: &Availability,
) -> (ChildSpec, SandboxRecord) {
    let listed = |paths: &[PathBuf]| -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    };
    match available {
        Availability::Unavailable(why) => (
            match &plan.survey {
                Some(_) => supervised(spec),
                None => spec,
            },
            SandboxRecord::unconfined(
                if plan.survey.is_some() {
                    SUPERVISED
                } else {
                    "none"
                },
                Some(why.clone()),
            ),
        ),
        Availability::Bwrap(b) => {
            let read_only = existing_cover(&plan.read_only);
            let plan = SandboxPlan {
                read_only: read_only.clone(),
                writable: plan.writable.clone(),
                network: plan.network,
                survey: plan.survey.clone(),
            };
            let args = match &plan.survey {
                Some(report) => surveyed_args(&plan, &spec.cwd, &spec.program, &spec.args, report),
                None => step_args(&plan, &spec.cwd, &spec.program, &spec.args),
            };
            let record = SandboxRecord {
                kind: "bwrap".into(),
                program: Some(b.program.display().to_string()),
                version: Some(b.version.clone()),
                own_pid_namespace: true,
                dies_with_verifier: true,
                network: Some(plan.network),
                read_only: listed(&read_only),
                writable: listed(&plan.writable),
                unconfined_because: None,
            };
            (
                ChildSpec {
                    program: b.program.clone(),
                    args,
                    ..spec
                },
                record,
            )
        }
    }
}

/// The host's RAM-backed file system that bwrap's `--dev /dev` hides.
const HOST_SHM: &str = "/dev/shm";

/// The bwrap arguments running `program args` in `cwd`, confined by `plan`
/// (see the module docs). bwrap passes its own environment on: start it
/// with the step's.
pub fn step_args(plan: &SandboxPlan, cwd: &Path, program: &Path, args: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        match plan.network {
            Network::PrivateLoopback => "--unshare-net",
            Network::Shared => "--share-net",
        },
        "--die-with-parent",
        "--new-session",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // The whole filesystem read-only (a probe of an environment not yet
    // judged, which must see every folder a `.pth` names): bound first, so
    // `/proc`, `/dev` and the writable roots are mounted on top of it; the
    // system directories and files are in it already.
    let whole_root = plan.read_only.iter().any(|p| p == Path::new("/"));
    if whole_root {
        v.extend(["--ro-bind", "/", "/"].map(String::from));
    } else {
        v.extend(bwrap::system_dir_args());
        for file in SYSTEM_FILES {
            if Path::new(file).exists() {
                v.extend(["--ro-bind".into(), file.to_string(), file.to_string()]);
            }
        }
    }
    v.extend(["--proc", "/proc", "--dev", "/dev"].map(String::from));
    if whole_root && Path::new(HOST_SHM).is_dir() {
        // `--dev` puts an empty `/dev/shm` over the host's, a file system
        // like the others the whole root shows: an interpreter, or a folder
        // a `.pth` names, may live there, and the probe must see it.
        v.extend(["--ro-bind", HOST_SHM, HOST_SHM].map(String::from));
    }
    if !whole_root {
        // With the whole root bound, the host's `/tmp` stays visible (and
        // read-only): the interpreter under review may live there.
        v.extend(["--tmpfs", "/tmp"].map(String::from));
    }
    // Outer paths first, so a path bound inside another one is mounted on
    // top of it: a writable root under a read-only input stays writable,
    // and a read-only input under a writable root stays read-only.
    let mut mounts: Vec<(&Path, &str)> = plan
        .read_only
        .iter()
        .filter(|p| p.as_path() != Path::new("/"))
        .map(|p| (p.as_path(), "--ro-bind"))
        .chain(plan.writable.iter().map(|p| (p.as_path(), "--bind")))
        .collect();
    mounts.sort_by_key(|(p, _)| p.components().count());
    for (p, flag) in mounts {
        let s = p.display().to_string();
        v.extend([flag.to_string(), s.clone(), s]);
    }
    v.extend(["--chdir".into(), cwd.display().to_string()]);
    v.push("--".into());
    v.push(program.display().to_string());
    v.extend(args.iter().cloned());
    v
}

/// [`step_args`] with the surveying init as pid 1 (`--as-pid-1`): the
/// interpreter `program` runs [`super::left_running::INIT`], which starts
/// `program args` as its child and writes what it left running to `report`.
pub fn surveyed_args(
    plan: &SandboxPlan,
    cwd: &Path,
    program: &Path,
    args: &[String],
    report: &Path,
) -> Vec<String> {
    let mut inner: Vec<String> = ["-I", "-S", "-B", "-c", super::left_running::INIT]
        .map(String::from)
        .to_vec();
    inner.push(report.display().to_string());
    inner.push(program.display().to_string());
    inner.extend(args.iter().cloned());
    let mut v = vec!["--as-pid-1".to_string()];
    v.extend(step_args(plan, cwd, program, &inner));
    v
}

/// The `kind` of an unconfined step run under [`supervised`].
pub const SUPERVISED: &str = "supervised";

/// `spec` (an interpreter and its arguments) run under
/// [`super::left_running::INIT`] as a plain supervisor process, without a
/// namespace: `program -I -S -B -c INIT - program args...`. The step's
/// parent is then the supervisor, never the verifier: a test that signals
/// `os.getppid()` kills the supervisor, which the verifier sees (the
/// leader ended by a signal: the supervisor itself passes the step's
/// signal on as 128 + its number) and reports.
pub fn supervised(spec: ChildSpec) -> ChildSpec {
    let mut args: Vec<String> = ["-I", "-S", "-B", "-c", super::left_running::INIT, "-"]
        .map(String::from)
        .to_vec();
    args.push(spec.program.display().to_string());
    args.extend(spec.args.iter().cloned());
    ChildSpec { args, ..spec }
}

/// True when a step run under [`supervised`] ended with its supervisor
/// killed by a signal (`status` as [`crate::process::ChildOutput::describe`]
/// gives it, not timed out): the supervisor passes a step's own signal on
/// as an exit status, so something signalled the supervisor itself, the
/// step's parent (a test's `os.kill(os.getppid(), ...)`).
pub fn supervisor_killed(record: &SandboxRecord, status: &str) -> bool {
    record.kind == SUPERVISED && status.starts_with("killed by signal ")
}

/// The absolute paths of `paths` that exist, without those a system
/// directory or another path of the list already covers.
fn existing_cover(paths: &[PathBuf]) -> Vec<PathBuf> {
    let existing: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
    bwrap::minimal_cover(&existing)
}

/// The `sandbox` check of a step (`name`, e.g. `tree/sandbox`): a pass
/// naming the sandbox when the step's init was not the verifier, else a
/// warning saying the code under review ran unconfined and why (a warning
/// keeps the statement from `PASSED`). `step` says what ran, for the reader.
pub fn check(name: &str, candidate: Option<&str>, step: &str, record: &SandboxRecord) -> Check {
    let observed = serde_json::to_value(record).unwrap_or_default();
    if record.confined() {
        Check::pass(
            name,
            candidate,
            format!(
                "{step} ran in a bubblewrap sandbox ({}): a pid namespace of its own whose init is not the \
                 verifier, ended with the verifier, {} read-only input(s) and {} writable root(s), network {}",
                record.version.as_deref().unwrap_or("bwrap"),
                record.read_only.len(),
                record.writable.len(),
                match record.network {
                    Some(Network::PrivateLoopback) => "private (loopback only)",
                    _ => "shared with the harness",
                }
            ),
        )
    } else {
        Check::warn(
            name,
            candidate,
            format!(
                "{step} ran unconfined, {}: code under review could signal the \
                 verifier, outlive it or write outside its roots ({}); install bubblewrap (Debian: \
                 `apt-get install bubblewrap`) so it runs in a sandbox",
                if record.kind == SUPERVISED {
                    "under the verifier's supervisor process (its parent is not the verifier)"
                } else {
                    "as the verifier's own child"
                },
                record.unconfined_because.as_deref().unwrap_or("no sandbox")
            ),
        )
    }
    .with_observed(observed)
}

/// The folders the interpreter `python` reads (its venv, the base
/// installation, the real executable's folder), from one `-I` start that
/// imports nothing but `site` (which sets `sys.prefix` to the venv): `sys.prefix`, `sys.base_prefix`, `sys.exec_prefix`,
/// `sys.base_exec_prefix` and the folder of `realpath(sys.executable)`.
///
/// # Errors
/// A sentence when the interpreter cannot run or answers something else.
pub fn interpreter_paths(
    python: &Path,
    cwd: &Path,
    log_stem: &Path,
) -> Result<Vec<PathBuf>, String> {
    const PROBE: &str = "import json, os, sys\n\
        print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, \
        os.path.dirname(os.path.realpath(sys.executable))]))";
    let out = process::run(&ChildSpec {
        program: python.to_path_buf(),
        args: vec!["-I".into(), "-B".into(), "-c".into(), PROBE.into()],
        cwd: cwd.to_path_buf(),
        env: process::base_env(),
        timeout: PREFLIGHT_TIMEOUT,
        log_stem: log_stem.to_path_buf(),
        stdin: None,
    })
    .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "`{} -I` did not report its prefixes: {}: {}",
            python.display(),
            out.describe(),
            out.tail(3)
        ));
    }
    let paths: Vec<String> = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "`{} -I` answered {:?}, expected a JSON list of paths: {e}",
            python.display(),
            out.stdout_text().trim()
        )
    })?;
    let mut v: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    if let Some(dir) = python.parent() {
        v.push(dir.to_path_buf());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn plan() -> SandboxPlan {
        SandboxPlan {
            read_only: vec!["/ev/extracted".into(), "/opt/venv".into()],
            writable: vec!["/ev/roots/suites/tree".into()],
            network: Network::PrivateLoopback,
            survey: None,
        }
    }

    #[test]
    fn a_step_gets_its_own_pid_and_network_namespace_and_dies_with_the_verifier() {
        let args = step_args(
            &plan(),
            Path::new("/ev/roots/suites/tree/source"),
            Path::new("/opt/venv/bin/python"),
            &["-I".into()],
        );
        for flag in [
            "--unshare-pid",
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
        ] {
            assert!(args.iter().any(|a| a == flag), "{flag} missing: {args:?}");
        }
        assert!(!args.iter().any(|a| a == "--share-net"));
        let shared = SandboxPlan {
            network: Network::Shared,
            ..plan()
        };
        let args = step_args(&shared, Path::new("/"), Path::new("/bin/true"), &[]);
        assert!(args.iter().any(|a| a == "--share-net"));
        assert!(!args.iter().any(|a| a == "--unshare-net"));
    }

    #[test]
    fn only_the_private_roots_are_writable_and_inputs_are_read_only() {
        let args = step_args(
            &plan(),
            Path::new("/ev/roots/suites/tree/source"),
            Path::new("/opt/venv/bin/python"),
            &["-I".into()],
        );
        let after = |flag: &str| -> Vec<String> {
            args.iter()
                .enumerate()
                .filter(|(_, a)| *a == flag)
                .map(|(i, _)| args[i + 1].clone())
                .collect()
        };
        assert_eq!(after("--bind"), vec!["/ev/roots/suites/tree"]);
        let ro = after("--ro-bind");
        assert!(ro.contains(&"/ev/extracted".to_string()), "{ro:?}");
        assert!(ro.contains(&"/opt/venv".to_string()), "{ro:?}");
        assert_eq!(after("--tmpfs"), vec!["/tmp"]);
        assert_eq!(after("--chdir"), vec!["/ev/roots/suites/tree/source"]);
        let joined = args.join(" ");
        assert!(joined.ends_with("-- /opt/venv/bin/python -I"), "{joined}");
    }

    #[test]
    fn a_nested_mount_comes_after_the_one_it_is_inside() {
        let p = SandboxPlan {
            read_only: vec!["/ev/roots/suites/tree/source/inputs".into(), "/ev".into()],
            writable: vec!["/ev/roots/suites/tree".into()],
            network: Network::Shared,
            survey: None,
        };
        let args = step_args(&p, Path::new("/"), Path::new("/bin/true"), &[]);
        let pos = |path: &str| args.iter().position(|a| a == path).unwrap();
        assert!(pos("/ev") < pos("/ev/roots/suites/tree"));
        assert!(pos("/ev/roots/suites/tree") < pos("/ev/roots/suites/tree/source/inputs"));
    }

    /// A real step in a real sandbox (bubblewrap is a requirement of the
    /// test machine, as of CI: `.ci/run` installs it).
    #[test]
    fn inside_the_parent_is_the_sandbox_init_inputs_are_read_only_and_only_the_root_is_writable() {
        let top = tempfile::tempdir().unwrap();
        let input = top.path().join("extracted");
        let root = top.path().join("roots/suites/tree");
        std::fs::create_dir_all(&input).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(input.join("member.txt"), "as archived").unwrap();
        let logs = top.path().join("logs");
        let available = preflight(&logs);
        assert!(
            matches!(available, Availability::Bwrap(_)),
            "bubblewrap must be usable on the test machine: {available:?}"
        );
        let script = format!(
            "echo ppid=$PPID; \
             if echo changed > {input}/member.txt 2>/dev/null; then echo input-writable; else echo input-read-only; fi; \
             echo ok > {root}/written && echo root-writable; \
             echo x > {top}/outside 2>/dev/null; \
             echo home=$HOME",
            input = input.display(),
            root = root.display(),
            top = top.path().display()
        );
        let spec = ChildSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script],
            cwd: root.clone(),
            env: BTreeMap::from([
                ("HOME".to_string(), root.display().to_string()),
                ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ]),
            timeout: Duration::from_secs(60),
            log_stem: logs.join("step"),
            stdin: None,
        };
        let plan = SandboxPlan {
            read_only: vec![input.clone()],
            writable: vec![root.clone()],
            network: Network::PrivateLoopback,
            survey: None,
        };
        let (spec, record) = confine(spec, &plan, &available);
        assert!(record.confined());
        let out = process::run_sandboxed(&spec).unwrap();
        assert!(out.success(), "{}", out.tail(10));
        let text = out.stdout_text();
        assert!(text.contains("ppid=1\n"), "{text}");
        assert!(text.contains("input-read-only"), "{text}");
        assert!(text.contains("root-writable"), "{text}");
        assert!(text.contains(&format!("home={}", root.display())), "{text}");
        assert_eq!(
            std::fs::read_to_string(input.join("member.txt")).unwrap(),
            "as archived"
        );
        // Outside the bound roots a write lands in the sandbox's own
        // tmpfs at best, never on the host.
        assert!(!top.path().join("outside").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("written")).unwrap(),
            "ok\n"
        );
    }

    /// The plan of a probe of an environment not yet judged: the whole
    /// filesystem read-only, the host's files (here under `/tmp`, where
    /// test venvs live) visible at their paths, only the private root
    /// writable.
    #[test]
    fn with_the_whole_root_read_only_everything_is_seen_and_only_the_root_is_written() {
        let top = tempfile::tempdir().unwrap();
        let cache = top.path().join("cache");
        let root = top.path().join("roots/probe");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(cache.join("k.pairs"), "genuine\n").unwrap();
        let script = format!(
            "cat {cache}/k.pairs; \
             if echo poisoned >> {cache}/k.pairs 2>/dev/null; then echo cache-writable; else echo cache-read-only; fi; \
             echo x > {cache}/new.pairs 2>/dev/null; \
             echo ok > {root}/written && echo root-writable",
            cache = cache.display(),
            root = root.display(),
        );
        let out = run_with_the_whole_root(top.path(), &root, script);
        let text = out.stdout_text();
        assert!(text.starts_with("genuine\n"), "{text}");
        assert!(text.contains("cache-read-only"), "{text}");
        assert!(text.contains("root-writable"), "{text}");
        assert_eq!(
            std::fs::read_to_string(cache.join("k.pairs")).unwrap(),
            "genuine\n"
        );
        assert!(!cache.join("new.pairs").exists());
        assert!(root.join("written").is_file());
    }

    /// `--dev /dev` hides the host's `/dev/shm`: with the whole root read
    /// only, it is bound again, read-only, so an interpreter or a `.pth`
    /// folder there is seen as on the host, and nothing is written to it.
    #[test]
    fn with_the_whole_root_read_only_the_hosts_dev_shm_is_seen_read_only() {
        let Ok(shm) = tempfile::tempdir_in(HOST_SHM) else {
            eprintln!("skipped: no writable {HOST_SHM}");
            return;
        };
        std::fs::write(shm.path().join("marker"), "on the host\n").unwrap();
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("roots/probe");
        std::fs::create_dir_all(&root).unwrap();
        let script = format!(
            "cat {shm}/marker; \
             if echo x > {shm}/new 2>/dev/null; then echo shm-writable; else echo shm-read-only; fi",
            shm = shm.path().display(),
        );
        let out = run_with_the_whole_root(top.path(), &root, script);
        assert_eq!(out.stdout_text(), "on the host\nshm-read-only\n");
        assert!(!shm.path().join("new").exists());
    }

    /// Runs `sh -c script` in `root` under the plan of a probe of an
    /// environment not yet judged (the whole root read-only, only `root`
    /// writable); asserts it was confined and succeeded.
    fn run_with_the_whole_root(top: &Path, root: &Path, script: String) -> process::ChildOutput {
        let available = preflight(&top.join("logs"));
        let spec = ChildSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script],
            cwd: root.to_path_buf(),
            env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
            timeout: Duration::from_secs(60),
            log_stem: top.join("logs/step"),
            stdin: None,
        };
        let plan = SandboxPlan {
            read_only: vec![PathBuf::from("/")],
            writable: vec![root.to_path_buf()],
            network: Network::PrivateLoopback,
            survey: None,
        };
        let (spec, record) = confine(spec, &plan, &available);
        assert!(record.confined());
        assert_eq!(record.read_only, vec!["/"]);
        let out = process::run_sandboxed(&spec).unwrap();
        assert!(out.success(), "{}", out.tail(10));
        out
    }

    #[test]
    fn stopping_a_sandboxed_step_ends_every_process_in_it_even_one_that_ignores_term() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let available = preflight(&top.path().join("logs"));
        // A program that ignores TERM and leaves a TERM-ignoring process in a
        // session of its own behind, then waits forever.
        let spec = ChildSpec {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "trap '' TERM; setsid sh -c \"trap '' TERM; echo $$ > inner.pid; exec sleep 600\" & \
                 echo $$ > outer.pid; while true; do sleep 1; done"
                    .into(),
            ],
            cwd: root.clone(),
            env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
            timeout: Duration::from_secs(600),
            log_stem: top.path().join("logs/step"),
            stdin: None,
        };
        let plan = SandboxPlan {
            read_only: Vec::new(),
            writable: vec![root.clone()],
            network: Network::PrivateLoopback,
            survey: None,
        };
        let (spec, _) = confine(spec, &plan, &available);
        let mut running = process::spawn(&spec).unwrap();
        running.sandboxed();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !(root.join("inner.pid").is_file() && root.join("outer.pid").is_file()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the step did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let leader = running.pid() as i32;
        let below: Vec<i32> =
            crate::process::procfs::descendants(&crate::process::procfs::all(), leader)
                .into_iter()
                .map(|p| p.pid)
                .filter(|p| *p != leader)
                .collect();
        // bwrap's init, the shell, the inner shell's sleep and the loop's sleep.
        assert!(below.len() >= 3, "{below:?}");
        let stopped = running.stop();
        assert!(stopped.group_empty, "{stopped:?}");
        for pid in below {
            let alive = crate::process::procfs::read(pid).is_some_and(|p| !p.exited());
            assert!(!alive, "pid {pid} of the sandbox outlived its stop");
        }
    }

    #[test]
    fn without_bwrap_the_step_runs_as_given_and_is_recorded_unconfined() {
        let spec = ChildSpec {
            program: "/opt/venv/bin/python".into(),
            args: vec!["-I".into()],
            cwd: "/ev".into(),
            env: BTreeMap::from([("HOME".to_string(), "/h".to_string())]),
            timeout: Duration::from_secs(1),
            log_stem: "/ev/logs/x".into(),
            stdin: None,
        };
        let (out, record) = confine(
            spec.clone(),
            &plan(),
            &Availability::Unavailable("no bwrap".into()),
        );
        assert_eq!(out.program, spec.program);
        assert_eq!(out.args, spec.args);
        assert_eq!(out.env, spec.env);
        assert_eq!(record.kind, "none");
        assert!(!record.confined());
        assert_eq!(record.unconfined_because.as_deref(), Some("no bwrap"));
    }

    #[test]
    fn without_bwrap_a_surveyed_step_runs_under_the_supervisor() {
        let spec = ChildSpec {
            program: "/opt/venv/bin/python".into(),
            args: vec!["-I".into(), "-c".into(), "pass".into()],
            cwd: "/ev".into(),
            env: BTreeMap::new(),
            timeout: Duration::from_secs(1),
            log_stem: "/ev/logs/x".into(),
            stdin: None,
        };
        let surveyed = SandboxPlan {
            survey: Some("/ev/out/tree-left-running.json".into()),
            ..plan()
        };
        let unavailable = Availability::Unavailable("no bwrap".into());
        let (out, record) = confine(spec.clone(), &surveyed, &unavailable);
        assert_eq!(out.program, spec.program);
        let mut expected: Vec<String> = [
            "-I",
            "-S",
            "-B",
            "-c",
            super::super::left_running::INIT,
            "-",
        ]
        .map(String::from)
        .to_vec();
        expected.push("/opt/venv/bin/python".into());
        expected.extend(spec.args.iter().cloned());
        assert_eq!(out.args, expected);
        assert_eq!(record.kind, SUPERVISED);
        assert!(!record.confined(), "a supervisor is no sandbox");
        // Counterexample: a step without a survey runs as given.
        let (out, record) = confine(spec.clone(), &plan(), &unavailable);
        assert_eq!(out.args, spec.args);
        assert_eq!(record.kind, "none");
    }

    /// The supervisor is the step's parent, not the verifier, passes the
    /// step's exit status on (a signal as 128 + its number), and dies by a
    /// signal only when it is signalled itself.
    #[test]
    fn the_supervisor_is_the_steps_parent_and_passes_its_status_on() {
        use std::os::unix::process::ExitStatusExt;
        let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        else {
            eprintln!("skipped: no system python3");
            return;
        };
        let top = tempfile::tempdir().unwrap();
        let run = |script: &str| {
            let spec = supervised(ChildSpec {
                program: python.clone(),
                args: vec!["-c".into(), script.into()],
                cwd: top.path().to_path_buf(),
                env: process::base_env(),
                timeout: Duration::from_secs(60),
                log_stem: top.path().join("logs/step"),
                stdin: None,
            });
            process::run(&spec).unwrap()
        };
        let me = std::process::id();
        let out = run(&format!(
            "import os, sys; sys.exit(3 if os.getppid() != {me} else 4)"
        ));
        assert_eq!(out.status.code(), Some(3), "{}", out.stderr_text());
        let out = run("import os, signal; os.kill(os.getpid(), signal.SIGTERM)");
        assert_eq!(out.status.code(), Some(128 + 15), "{}", out.stderr_text());
        let out =
            run("import os, signal, time; os.kill(os.getppid(), signal.SIGKILL); time.sleep(30)");
        assert_eq!(out.status.signal(), Some(9), "{}", out.describe());
        assert!(!out.timed_out);
    }

    #[test]
    fn with_bwrap_the_step_is_bwrap_with_its_own_environment_inside() {
        let spec = ChildSpec {
            program: "/opt/venv/bin/python".into(),
            args: vec!["-I".into()],
            cwd: "/".into(),
            env: BTreeMap::from([("SECRET_FREE".to_string(), "1".to_string())]),
            timeout: Duration::from_secs(1),
            log_stem: "/ev/logs/x".into(),
            stdin: None,
        };
        let b = bwrap::Bwrap {
            program: "/usr/bin/bwrap".into(),
            version: "bubblewrap 0.8.0".into(),
        };
        let (out, record) = confine(spec, &plan(), &Availability::Bwrap(b));
        assert_eq!(out.program, PathBuf::from("/usr/bin/bwrap"));
        // bwrap gets the step's environment and passes it on; no value is
        // on its command line.
        assert_eq!(
            out.env,
            BTreeMap::from([("SECRET_FREE".to_string(), "1".to_string())])
        );
        assert!(!out
            .args
            .iter()
            .any(|a| a == "--setenv" || a == "--clearenv" || a == "1"));
        assert!(record.confined());
        assert_eq!(record.network, Some(Network::PrivateLoopback));
        // Inputs that do not exist here are left out, not bound.
        assert!(record.read_only.is_empty(), "{:?}", record.read_only);
        assert_eq!(record.writable, vec!["/ev/roots/suites/tree"]);
    }
}
