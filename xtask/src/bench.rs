//! `cargo xtask bench`: what certification costs, measured on the verifier
//! as a child process (a benchmark, not a timed test: nothing here fails on a
//! slow machine, only on a run whose verdict is not PASS). Every run is
//! timed and counted, PASS or not; each run that did not PASS is listed with
//! its failing checks, its folder is kept, and the bench exits 1.
//!
//! 1. The fixture repository (or `--repo DIR`) is certified with `--jobs 1`
//!    and with the default, alternating, `--runs` times each (and the
//!    `--peer` command, when given, in the same rotation). Each run gets a
//!    fresh evidence folder; the repository is shared (the verifier never
//!    writes to it).
//! 2. Generated repositories of several sizes (`--sizes`, else 5, N/2 and
//!    N for `--candidates N`: the fixture's three candidates and copies of
//!    them under other names) are certified with the default jobs, in rounds
//!    of every size, `--scale-runs` times; the largest is judged against the
//!    smallest ([`scale`]), and a missed target makes the exit code 1.
//!
//! Per run: wall time; CPU time (user + system of every process the run
//! started, in a cgroup of the run's own, else `wait4` rusage, which misses
//! bubblewrap sandboxes: [`CpuSource`]); the harness's own peak RSS
//! (`VmHWM` of `/proc/<pid>/status`, polled every 20 ms, the last value
//! read); the largest peak RSS of any one process of the tree (`ru_maxrss`
//! from `wait4`); with a cgroup, the peak of the summed RSS of every process
//! in it (sampled every 100 ms).

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod gate_cpu;
mod reliability;
mod scale;

use gate_cpu::ByGate;
use reliability::Reliability;

/// Target: median wall of the default jobs over `--jobs 1`.
pub(crate) const JOBS_TARGET: f64 = 0.6;
/// Target: our full certification over the repository's own checks (wall):
/// the floor the suites leave (they run one after the other, as the
/// repository's own checks run them, and get the CPU first), issue 37.
pub(crate) const PEER_TARGET: f64 = 0.8;
/// Target: our full certification over the repository's own checks (CPU):
/// at most 1.2 times the peer's CPU, although we check more.
pub(crate) const PEER_CPU_TARGET: f64 = 1.2;
/// How often the harness's `VmHWM` is read while it runs.
const POLL: Duration = Duration::from_millis(20);
/// The whole tree's resident memory is summed every this many polls (100 ms).
const TREE_POLLS: u64 = 5;

pub(crate) const USAGE: &str = "\
usage: cargo xtask bench [--runs N] [--repo DIR] [--peer CMD] [--skip-jobs1] [--skip-scale]
                         [--candidates N] [--sizes N,N,..] [--scale-runs N] [--python PATH] [--debug]
                         [--streaming] [--keep]

  --runs N         measured runs of each variant (default 3), alternating jobs1, default[, peer];
                   every run is timed, and each whose verdict is not PASS (exit code not 0)
                   is listed at the end with its failing checks and kept for reading
  --repo DIR       benchmark this git repository (its own profile, else the built-in one)
                   instead of a fresh copy of fixtures/candidate-repo; skips the scale part
  --peer CMD       also time `sh -c CMD` in the repository, alternating with ours; it sees
                   PYTHON (the interpreter) and BENCH_DIR (a fresh empty folder per run)
  --skip-jobs1     do not time `--jobs 1` (the rounds are then default[, peer])
  --skip-scale     skip the generated many-candidate repositories
  --candidates N   the largest generated repository (default 30); sizes 5, N/2 and N are measured
  --sizes N,N,..   the generated repositories' sizes instead (e.g. 5,25,50); the largest is judged
                   against the smallest: cpu and wall per candidate <= 1.25x, marginal cpu per
                   candidate <= 1.25x, the verifier's VmHWM <= 1.25x; a miss makes the exit code 1
  --scale-runs N   runs of each size, in rounds of every size (default 2)
  --python PATH    interpreter given to the verifier (default: target/sdk-venv, provisioned)
  --debug          build and measure the debug binary the demo uses (default: the release one,
                   which is what users run; `--release` is accepted and changes nothing)
  --streaming      also run `cargo bench --bench streaming` (harness RSS vs archive size)
  --keep           keep the benchmark folder (evidence of every run) instead of removing it";

/// `cargo xtask bench` options.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Options {
    pub runs: usize,
    pub repo: Option<PathBuf>,
    pub peer: Option<String>,
    pub skip_jobs1: bool,
    pub skip_scale: bool,
    pub candidates: usize,
    /// `--sizes`; `None`: [`scale::default_sizes`] of `candidates`.
    pub sizes: Option<Vec<usize>>,
    pub scale_runs: usize,
    pub python: Option<PathBuf>,
    pub release: bool,
    pub streaming: bool,
    pub keep: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            runs: 3,
            repo: None,
            peer: None,
            skip_jobs1: false,
            skip_scale: false,
            candidates: 30,
            sizes: None,
            scale_runs: 2,
            python: None,
            release: true,
            streaming: false,
            keep: false,
        }
    }
}

/// Parses the arguments after `bench`; `Ok(None)` for `--help`.
pub(crate) fn parse_options(args: &[OsString]) -> Result<Option<Options>> {
    let mut o = Options::default();
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String> {
            match inline.clone().or_else(|| it.next()) {
                Some(v) => Ok(v),
                None => bail!("{name} needs a value\n\n{USAGE}"),
            }
        };
        let count = |name: &str, v: String, min: usize| -> Result<usize> {
            match v.parse::<usize>() {
                Ok(n) if n >= min => Ok(n),
                _ => bail!("{name} {v:?}: expected a whole number >= {min}"),
            }
        };
        match flag.as_str() {
            "--runs" => o.runs = count("--runs", value("--runs")?, 1)?,
            "--repo" => o.repo = Some(PathBuf::from(value("--repo")?)),
            "--peer" => o.peer = Some(value("--peer")?),
            "--skip-jobs1" => o.skip_jobs1 = true,
            "--skip-scale" => o.skip_scale = true,
            "--candidates" => o.candidates = count("--candidates", value("--candidates")?, 1)?,
            "--sizes" => o.sizes = Some(scale::parse_sizes(&value("--sizes")?)?),
            "--scale-runs" => o.scale_runs = count("--scale-runs", value("--scale-runs")?, 1)?,
            "--python" => o.python = Some(PathBuf::from(value("--python")?)),
            "--release" => o.release = true,
            "--debug" => o.release = false,
            "--streaming" => o.streaming = true,
            "--keep" => o.keep = true,
            "-h" | "--help" => return Ok(None),
            other => bail!("unknown option {other:?}\n\n{USAGE}"),
        }
    }
    Ok(Some(o))
}

/// How a run's CPU time was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CpuSource {
    /// A cgroup of its own (`cpuacct.usage` of cgroup v1, `usage_usec` of
    /// cgroup v2's `cpu.stat`): every process the run started, whether or
    /// not anything waited for it, sandboxed ones included.
    Cgroup,
    /// `wait4` rusage: the child and the descendants reaped under it. A
    /// bubblewrap sandbox's processes are not in it (bwrap's own rusage
    /// shows none of its children's CPU), so this counts too little.
    Rusage,
}

/// One measured run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    /// Wall seconds from spawn to reaping.
    pub wall: f64,
    /// User + system seconds, counted as `cpu_source` says.
    pub cpu: f64,
    /// How `cpu` was counted.
    pub cpu_source: CpuSource,
    /// The child's own peak RSS (KiB), last `VmHWM` read; `None` if never read.
    pub own_rss_kib: Option<u64>,
    /// Largest peak RSS (KiB) of any one process of the tree (`ru_maxrss`).
    pub tree_rss_kib: u64,
    /// Peak of the summed RSS (KiB) of every process in the run's cgroup,
    /// sampled every [`TREE_POLLS`] polls; `None` without a cgroup.
    pub tree_peak_kib: Option<u64>,
}

/// Medians of one variant's samples.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    pub label: String,
    pub runs: usize,
    pub wall: f64,
    pub cpu: f64,
    pub own_rss_kib: Option<u64>,
    pub tree_rss_kib: u64,
    /// Median of the runs' [`Sample::tree_peak_kib`] that have one.
    pub tree_peak_kib: Option<u64>,
}

/// The median (mean of the middle two for an even count); `None` when empty.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// Medians of `samples` under `label`; `None` when there are none.
pub(crate) fn summarize(label: &str, samples: &[Sample]) -> Option<Summary> {
    let field = |f: fn(&Sample) -> f64| median(&samples.iter().map(f).collect::<Vec<_>>());
    let own: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.own_rss_kib.map(|k| k as f64))
        .collect();
    Some(Summary {
        label: label.to_string(),
        runs: samples.len(),
        wall: field(|s| s.wall)?,
        cpu: field(|s| s.cpu)?,
        own_rss_kib: median(&own).map(|k| k.round() as u64),
        tree_rss_kib: field(|s| s.tree_rss_kib as f64)?.round() as u64,
        tree_peak_kib: median(
            &samples
                .iter()
                .filter_map(|s| s.tree_peak_kib.map(|k| k as f64))
                .collect::<Vec<_>>(),
        )
        .map(|k| k.round() as u64),
    })
}

/// KiB as MiB with one decimal.
fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// The medians as an aligned table.
pub(crate) fn format_table(rows: &[Summary]) -> String {
    let mut out = format!(
        "{:<24} {:>4} {:>10} {:>10} {:>14} {:>14}\n",
        "variant", "runs", "wall s", "cpu s", "harness MiB", "tree max MiB"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<24} {:>4} {:>10.2} {:>10.2} {:>14} {:>14}",
            r.label,
            r.runs,
            r.wall,
            r.cpu,
            r.own_rss_kib.map_or_else(|| "-".to_string(), mib),
            mib(r.tree_rss_kib)
        );
    }
    out
}

/// `what = num/den` with PASS or MISS against `<= target`.
pub(crate) fn format_ratio(what: &str, num: f64, den: f64, target: f64) -> String {
    if den <= 0.0 || !num.is_finite() || !den.is_finite() {
        return format!("{what}: n/a (a zero or unmeasured denominator)");
    }
    let ratio = num / den;
    let verdict = if ratio <= target { "PASS" } else { "MISS" };
    format!("{what}: {ratio:.2} (target <= {target:.2}): {verdict}")
}

/// `VmHWM` in KiB from the text of `/proc/<pid>/status`.
pub(crate) fn parse_vm_hwm(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Resident pages, the second field of `/proc/<pid>/statm`.
pub(crate) fn parse_statm_resident(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

/// A cgroup made for one measured run, which the child joins before it
/// executes (so everything it starts is counted, whoever reaps it), read
/// after the run and removed.
struct RunCgroup {
    dir: PathBuf,
    /// The file holding the cgroup's CPU time, and its unit in nanoseconds.
    usage: (PathBuf, f64),
}

impl RunCgroup {
    /// A fresh cgroup under the cgroup v1 `cpuacct` hierarchy, else under
    /// this process's cgroup v2 cgroup; `None` when neither can be made (no
    /// permission, no such hierarchy): the run is then counted by rusage.
    fn new() -> Option<Self> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "vcc-bench-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let v1 = Path::new("/sys/fs/cgroup/cpuacct");
        if v1.join("cpuacct.usage").is_file() {
            let dir = v1.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                return Some(Self {
                    usage: (dir.join("cpuacct.usage"), 1.0),
                    dir,
                });
            }
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let base = Path::new(root).join(path.trim_start_matches('/'));
            if !base.join("cpu.stat").is_file() {
                continue;
            }
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                return Some(Self {
                    usage: (dir.join("cpu.stat"), 1000.0),
                    dir,
                });
            }
        }
        None
    }

    /// Makes `cmd`'s child join this cgroup before it executes.
    fn join_before_exec(&self, cmd: &mut Command) -> Result<()> {
        use std::os::unix::process::CommandExt as _;
        let procs =
            std::ffi::CString::new(self.dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
                .context("cgroup path")?;
        // SAFETY: between fork and exec only async-signal-safe calls are
        // made (open, write, close on a path prepared before the fork). A
        // child that cannot join still runs: its cgroup then counts less
        // than its rusage, and `measure` falls back to rusage.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// The summed resident memory (KiB) of the cgroup's processes now
    /// (`cgroup.procs`, then the second field of each `/proc/<pid>/statm`,
    /// in pages); `None` when the list cannot be read. Pages shared between
    /// processes (the interpreter's libraries) count once per process, so
    /// this bounds the tree's memory from above.
    fn resident_kib(&self) -> Option<u64> {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).ok()?;
        // SAFETY: sysconf has no preconditions.
        let page_kib = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) / 1024) as u64;
        Some(
            procs
                .lines()
                .filter_map(|pid| {
                    std::fs::read_to_string(format!("/proc/{}/statm", pid.trim())).ok()
                })
                .filter_map(|statm| parse_statm_resident(&statm))
                .sum::<u64>()
                * page_kib,
        )
    }

    /// CPU seconds of everything that ran in the cgroup.
    fn cpu_seconds(&self) -> Option<f64> {
        let text = std::fs::read_to_string(&self.usage.0).ok()?;
        let value: f64 = if self.usage.1 == 1.0 {
            text.trim().parse().ok()?
        } else {
            text.lines()
                .find_map(|l| l.strip_prefix("usage_usec "))?
                .trim()
                .parse()
                .ok()?
        };
        Some(value * self.usage.1 / 1e9)
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        // Empty once the run's processes are gone; a leftover is harmless.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Runs `cmd` to its end and measures it; returns the sample and its exit
/// code (128 + signal when killed by one). CPU is counted in a cgroup of the
/// run's own where one can be made, else by `wait4` rusage ([`CpuSource`]).
pub(crate) fn measure(cmd: &mut Command) -> Result<(Sample, i32)> {
    let cgroup = RunCgroup::new();
    if let Some(cg) = &cgroup {
        cg.join_before_exec(cmd)?;
    }
    let start = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    let pid = i32::try_from(child.id()).context("pid out of range")?;
    let status_path = format!("/proc/{pid}/status");
    let mut own_rss = None;
    let mut tree_peak: Option<u64> = None;
    let mut polls: u64 = 0;
    // The child is reaped here with wait4 (for its rusage), never through
    // `child`, which is dropped without waiting.
    let (status, usage) = loop {
        if let Some(kib) = std::fs::read_to_string(&status_path)
            .ok()
            .as_deref()
            .and_then(parse_vm_hwm)
        {
            own_rss = Some(kib);
        }
        // The whole tree's resident memory, every TREE_POLLS polls: reading
        // every process's statm is dearer than one status file.
        if polls.is_multiple_of(TREE_POLLS) {
            if let Some(kib) = cgroup.as_ref().and_then(RunCgroup::resident_kib) {
                tree_peak = Some(tree_peak.map_or(kib, |p| p.max(kib)));
            }
        }
        polls += 1;
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value; wait4 writes into both
        // out-parameters, which live for the whole call.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        if r == -1 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e).context("wait4");
            }
        }
        std::thread::sleep(POLL);
    };
    let wall = start.elapsed().as_secs_f64();
    drop(child);
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    };
    let rusage = secs(usage.ru_utime) + secs(usage.ru_stime);
    // A cgroup the child joined holds at least what rusage holds (to the
    // rounding of the two clocks: 10 ms); one that holds less was not joined.
    let (cpu, cpu_source) = match cgroup.as_ref().and_then(RunCgroup::cpu_seconds) {
        Some(cpu) if cpu + 0.01 >= rusage => (cpu, CpuSource::Cgroup),
        _ => (rusage, CpuSource::Rusage),
    };
    Ok((
        Sample {
            wall,
            cpu,
            cpu_source,
            own_rss_kib: own_rss,
            // Linux reports ru_maxrss in KiB.
            tree_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
            // Only a cgroup the child joined lists its tree.
            tree_peak_kib: tree_peak.filter(|_| cpu_source == CpuSource::Cgroup),
        },
        code,
    ))
}

/// What one measured verifier run needs.
struct Verifier<'a> {
    binary: &'a Path,
    python: &'a Path,
}

impl Verifier<'_> {
    /// Certifies `repo` into the fresh `evidence` folder, with `--jobs N` or
    /// the default; the output goes to `log`. Returns the sample and, when
    /// the verdict is not PASS, why ([`why_not_pass`]).
    ///
    /// # Errors
    /// When the verifier cannot be started or waited for.
    fn certify(
        &self,
        repo: &Path,
        evidence: &Path,
        jobs: Option<u16>,
        log: &Path,
    ) -> Result<(Sample, Option<String>)> {
        let out =
            std::fs::File::create(log).with_context(|| format!("create {}", log.display()))?;
        let mut cmd = Command::new(self.binary);
        cmd.arg("--repo")
            .arg(repo)
            .arg("--evidence")
            .arg(evidence)
            .arg("--python")
            .arg(self.python);
        if let Some(n) = jobs {
            cmd.arg("--jobs").arg(n.to_string());
        }
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let (sample, code) = measure(&mut cmd)?;
        let not_pass = (code != i32::from(verify_coding_candidates::exit::SUCCESS)).then(|| {
            format!(
                "exit code {code}: {}; output {}, evidence {}",
                why_not_pass(evidence),
                log.display(),
                evidence.display()
            )
        });
        Ok((sample, not_pass))
    }
}

/// Why the run into `evidence` did not pass, from its `evidence.json`: each
/// failing check as `gate/name` with the first line of its detail (at most
/// five, then how many more), or why the evidence could not be read.
fn why_not_pass(evidence: &Path) -> String {
    let path = evidence.join("evidence.json");
    let doc: serde_json::Value = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(doc) => doc,
        Err(e) => return format!("no readable evidence ({}: {e})", path.display()),
    };
    failing_checks(&doc)
}

/// The failing checks of an evidence document, as [`why_not_pass`] says them.
fn failing_checks(doc: &serde_json::Value) -> String {
    let mut failing = Vec::new();
    for gate in doc["gates"].as_array().into_iter().flatten() {
        for check in gate["checks"].as_array().into_iter().flatten() {
            if check["result"] == "fail" && check["consequence_of"].is_null() {
                let detail = check["detail"]
                    .as_str()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("");
                let detail: String = detail.chars().take(240).collect();
                failing.push(format!(
                    "{}/{}: {detail}",
                    gate["id"].as_str().unwrap_or("?"),
                    check["name"].as_str().unwrap_or("?")
                ));
            }
        }
    }
    match failing.len() {
        0 => format!("verdict {}, no failing check", doc["verdict"]),
        n if n <= 5 => failing.join("; "),
        n => format!("{}; and {} more", failing[..5].join("; "), n - 5),
    }
}

/// `sh -c CMD` in `repo` with `PYTHON` and `BENCH_DIR` (created, empty).
/// Returns the sample and, when the command did not exit 0, why.
///
/// # Errors
/// When `sh` cannot be started or waited for, or a folder cannot be made.
fn peer_run(
    cmd_text: &str,
    repo: &Path,
    python: &Path,
    dir: &Path,
    log: &Path,
) -> Result<(Sample, Option<String>)> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let out = std::fs::File::create(log).with_context(|| format!("create {}", log.display()))?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(cmd_text)
        .current_dir(repo)
        .env("PYTHON", python)
        .env("BENCH_DIR", dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let (sample, code) = measure(&mut cmd)?;
    let not_pass = (code != 0).then(|| {
        format!(
            "the peer command exited with {code}; output {}",
            log.display()
        )
    });
    Ok((sample, not_pass))
}

/// How the table's CPU column was counted, from every run's [`CpuSource`].
pub(crate) fn cpu_note(sources: &[CpuSource]) -> String {
    let rusage = sources.iter().filter(|s| **s == CpuSource::Rusage).count();
    if rusage == 0 {
        "cpu s: user + system of every process each run started, counted in a cgroup of the run's \
         own (sandboxed processes included)"
            .into()
    } else {
        format!(
            "cpu s: {rusage} of {} run(s) counted by wait4 rusage (no cgroup could be made here: \
             cgroup v1 cpuacct or a writable cgroup v2 is needed), which misses every process in a \
             bubblewrap sandbox (the suites, the discovery runtime): those figures, and ratios \
             over them, count our CPU too low",
            sources.len()
        )
    }
}

/// A timed run whose verdict was not PASS: which, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NotPassed {
    /// `run 3 (ours default jobs)`.
    pub run: String,
    /// Its failing checks, exit code, output and evidence.
    pub why: String,
}

/// The closing lines about verdicts: the target line ("every timed run
/// PASS") and one line per run that did not pass.
pub(crate) fn format_not_passed(timed: usize, not_passed: &[NotPassed]) -> Vec<String> {
    let mut lines = vec![if not_passed.is_empty() {
        format!("every timed run PASS: {timed} of {timed}: PASS")
    } else {
        format!(
            "every timed run PASS: {} of {timed} did not: MISS",
            not_passed.len()
        )
    }];
    for n in not_passed {
        lines.push(format!("  {}: {}", n.run, n.why));
    }
    lines
}

/// The variants of one round, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    Jobs1,
    Default,
    Peer,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Jobs1 => "ours --jobs 1",
            Variant::Default => "ours default jobs",
            Variant::Peer => "peer",
        }
    }
}

/// The measured runs in order: rounds of jobs1 (unless `skip_jobs1`),
/// default (, peer).
pub(crate) fn schedule(runs: usize, peer: bool, skip_jobs1: bool) -> Vec<Variant> {
    let mut round = if skip_jobs1 {
        vec![Variant::Default]
    } else {
        vec![Variant::Jobs1, Variant::Default]
    };
    if peer {
        round.push(Variant::Peer);
    }
    (0..runs).flat_map(|_| round.clone()).collect()
}

/// One candidate of the generated repository: the fixture candidate it
/// copies (`Runner/codex-agent`), its own path (`Runner/codex-agent-c06`),
/// and the suffix added to its manifest name and labels (`c06`); `None`
/// for an original kept as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScaleCandidate {
    pub source: String,
    pub path: String,
    pub suffix: Option<String>,
}

/// `n` candidates: the originals first, then copies cycling through them,
/// numbered by position (`-c04` .. `-c30`).
pub(crate) fn scale_plan(originals: &[String], n: usize) -> Vec<ScaleCandidate> {
    (0..n)
        .map(|i| {
            let source = originals[i % originals.len()].clone();
            if i < originals.len() {
                ScaleCandidate {
                    path: source.clone(),
                    source,
                    suffix: None,
                }
            } else {
                let suffix = format!("c{:02}", i + 1);
                ScaleCandidate {
                    path: format!("{source}-{suffix}"),
                    source,
                    suffix: Some(suffix),
                }
            }
        })
        .collect()
}

/// The manifest of a copy: `metadata.name` gets `-<suffix>`, each
/// `metadata.label` translation ` <suffix>`. Fails unless exactly one
/// `metadata.name` line and at least one label line were rewritten.
pub(crate) fn rename_manifest(text: &str, suffix: &str) -> Result<String> {
    let mut out = String::with_capacity(text.len() + 64);
    let mut section = "";
    let mut names = 0;
    let mut labels = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let indent = body.len() - body.trim_start().len();
        if indent == 0 && !body.is_empty() {
            section = if body == "metadata:" { "metadata" } else { "" };
        } else if section.starts_with("metadata") && indent == 2 {
            section = if body.trim() == "label:" {
                "metadata.label"
            } else {
                "metadata"
            };
            if let Some(name) = body.strip_prefix("  name: ") {
                let name = name.trim();
                let (quote, bare) = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
                    Some(bare) => ("\"", bare),
                    None => ("", name),
                };
                let _ = write!(out, "  name: {quote}{bare}-{suffix}{quote}{ending}");
                names += 1;
                continue;
            }
        } else if section == "metadata.label" && indent == 4 {
            if let Some((key, value)) = body.split_once(": ") {
                let _ = write!(out, "{key}: {} {suffix}{ending}", value.trim());
                labels += 1;
                continue;
            }
        }
        out.push_str(line);
    }
    if names != 1 || labels == 0 {
        bail!(
            "manifest: rewrote {names} metadata.name line(s) and {labels} label line(s); expected one name and \
             at least one label (plain `key: value` lines under `metadata:`)"
        );
    }
    Ok(out)
}

/// The generated repository's profile: `base` (the built-in profile's
/// text) renamed, with every copy added as a `[[candidate]]` and given the
/// runner probe of the candidate it copies. `[shared]`, `[vendored_sdk]`,
/// `[suites]` and `[historical_admission]` stay as they are: the copies are
/// byte-identical apart from the manifest, so the shared files and notices
/// still agree, and the originals the suites name are kept.
pub(crate) fn scale_profile(base: &str, plan: &[ScaleCandidate]) -> Result<String> {
    let mut profile: toml::Table = toml::from_str(base).context("parse the built-in profile")?;
    profile.insert(
        "name".into(),
        toml::Value::String(format!("bench-scale-{}", plan.len())),
    );
    profile.insert(
        "candidate".into(),
        toml::Value::Array(
            plan.iter()
                .map(|c| {
                    let mut t = toml::Table::new();
                    t.insert("path".into(), toml::Value::String(c.path.clone()));
                    toml::Value::Table(t)
                })
                .collect(),
        ),
    );
    let discovery = profile
        .get_mut("discovery")
        .and_then(toml::Value::as_table_mut)
        .context("the built-in profile has no [discovery]")?;
    let probes: Vec<toml::Value> = discovery
        .get("runner_probe")
        .and_then(toml::Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut all = Vec::new();
    for c in plan {
        for p in &probes {
            if p.get("candidate").and_then(toml::Value::as_str) == Some(c.source.as_str()) {
                let mut p = p.clone();
                if let Some(t) = p.as_table_mut() {
                    t.insert("candidate".into(), toml::Value::String(c.path.clone()));
                }
                all.push(p);
            }
        }
    }
    discovery.insert("runner_probe".into(), toml::Value::Array(all));
    let text = toml::to_string(&profile).context("write the generated profile")?;
    Ok(format!(
        "# Generated by `cargo xtask bench`: the fixture's candidates and copies of them\n\
         # under other names ({} candidates).\n{text}",
        plan.len()
    ))
}

/// Builds the generated repository at `repo` from the fixture `fixture`.
fn generate_scale_repo(fixture: &Path, repo: &Path, plan: &[ScaleCandidate]) -> Result<()> {
    crate::copy_tree(fixture, repo)?;
    for c in plan {
        let Some(suffix) = &c.suffix else { continue };
        let to = repo.join(&c.path);
        crate::copy_tree(&repo.join(&c.source), &to)?;
        let manifest = to.join("manifest.yaml");
        let text = std::fs::read_to_string(&manifest)
            .with_context(|| format!("read {}", manifest.display()))?;
        let renamed =
            rename_manifest(&text, suffix).with_context(|| manifest.display().to_string())?;
        std::fs::write(&manifest, renamed)
            .with_context(|| format!("write {}", manifest.display()))?;
    }
    let profile = scale_profile(
        verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS,
        plan,
    )?;
    verify_coding_candidates::profile::parse(&profile, "generated")
        .map_err(|e| anyhow::anyhow!("the generated profile is invalid: {e}"))?;
    std::fs::write(
        repo.join(verify_coding_candidates::profile::REPO_PROFILE_NAME),
        profile,
    )?;
    crate::git_commit_all(repo, "bench: generated candidate repository")
}

/// Prints a table and the lines under it (as soon as they are known, so a
/// failure in a later part does not lose them).
fn print_block(rows: &[Summary], lines: &[String]) {
    println!();
    print!("{}", format_table(rows));
    for l in lines {
        println!("{l}");
    }
}

/// The built-in profile's candidate paths.
fn builtin_candidates() -> Result<Vec<String>> {
    let p = verify_coding_candidates::profile::parse(
        verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS,
        "built-in",
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(p.candidates.into_iter().map(|c| c.path).collect())
}

/// `cargo xtask bench [OPTIONS]`.
pub(crate) fn bench(args: &[OsString]) -> Result<i32> {
    let Some(opts) = parse_options(args)? else {
        println!("{USAGE}");
        return Ok(0);
    };
    let root = crate::workspace_root();
    let binary = crate::build_verifier(opts.release)?;
    let python = match &opts.python {
        Some(p) => std::path::absolute(p).with_context(|| p.display().to_string())?,
        None => crate::sdk()?,
    };
    let base = crate::unique_temp_dir("vcc-bench")?;
    let fixture = root.join("fixtures").join("candidate-repo");
    let repo = match &opts.repo {
        Some(r) => std::path::absolute(r).with_context(|| r.display().to_string())?,
        None => {
            let repo = base.join("fixture-repo");
            crate::copy_tree(&fixture, &repo)?;
            crate::git_commit_all(&repo, "fixture: candidate repository")?;
            repo
        }
    };
    let verifier = Verifier {
        binary: &binary,
        python: &python,
    };
    eprintln!(
        "bench: {} on {} ({} run(s) each, alternating; folder {})",
        binary.display(),
        repo.display(),
        opts.runs,
        base.display()
    );
    let (mut jobs1, mut default, mut peer) = (Vec::new(), Vec::new(), Vec::new());
    // Every run is timed and counted: a run whose verdict is not PASS (a
    // repository's flaky test, say) is in the medians as it happened, listed
    // with its failing checks at the end, and its folder kept.
    let mut not_passed = Vec::new();
    let mut sources = Vec::new();
    let rounds = schedule(opts.runs, opts.peer.is_some(), opts.skip_jobs1);
    let mut by_gate = ByGate::default();
    let mut reliability = Reliability::default();
    let timed = rounds.len();
    for (i, variant) in rounds.into_iter().enumerate() {
        let run = base.join(format!("run-{i:02}"));
        std::fs::create_dir_all(&run)?;
        let log = run.join("output.log");
        let (sample, why) = match variant {
            Variant::Jobs1 => verifier.certify(&repo, &run.join("evidence"), Some(1), &log)?,
            Variant::Default => {
                let accounting = by_gate.start(&run);
                let measured = verifier.certify(&repo, &run.join("evidence"), None, &log)?;
                by_gate.stop(accounting, &run.join("evidence"));
                reliability.ours(&run.join("evidence"));
                measured
            }
            Variant::Peer => peer_run(
                opts.peer.as_deref().unwrap_or_default(),
                &repo,
                &python,
                &run.join("peer"),
                &log,
            )?,
        };
        eprintln!(
            "bench: run {i}: {:<18} wall {:>7.2} s  cpu {:>7.2} s  {}",
            variant.label(),
            sample.wall,
            sample.cpu,
            if why.is_some() { "NOT PASS" } else { "PASS" }
        );
        sources.push(sample.cpu_source);
        if variant == Variant::Peer {
            reliability.peer(why.is_none());
        }
        match variant {
            Variant::Jobs1 => jobs1.push(sample),
            Variant::Default => default.push(sample),
            Variant::Peer => peer.push(sample),
        }
        match why {
            Some(why) => not_passed.push(NotPassed {
                run: format!("run {i} ({})", variant.label()),
                why,
            }),
            None if !opts.keep => {
                let _ = std::fs::remove_dir_all(&run);
            }
            None => {}
        }
    }
    let j1 = summarize(Variant::Jobs1.label(), &jobs1);
    let df = summarize(Variant::Default.label(), &default).context("no default run")?;
    let mut rows: Vec<Summary> = j1.iter().cloned().collect();
    rows.push(df.clone());
    let pr = summarize(Variant::Peer.label(), &peer);
    rows.extend(pr.clone());
    let mut lines = Vec::new();
    if let Some(j1) = &j1 {
        lines.push(format_ratio(
            "default/jobs1 wall",
            df.wall,
            j1.wall,
            JOBS_TARGET,
        ));
        lines.push(format!(
            "default/jobs1 cpu: {:.2}",
            if j1.cpu > 0.0 {
                df.cpu / j1.cpu
            } else {
                f64::NAN
            }
        ));
    }
    if let Some(pr) = &pr {
        lines.push(format_ratio(
            "ours/peer wall",
            df.wall,
            pr.wall,
            PEER_TARGET,
        ));
        lines.push(format_ratio(
            "ours/peer cpu",
            df.cpu,
            pr.cpu,
            PEER_CPU_TARGET,
        ));
    }
    lines.extend(reliability.lines(pr.is_some()));
    lines.extend(format_not_passed(timed, &not_passed));

    print_block(&rows, &lines);
    print!("{}", by_gate.table());
    let mut lines = Vec::new();
    let mut scale_passed = true;
    let mut scale_met = true;
    if opts.skip_scale {
        lines.push("scale: skipped (--skip-scale)".into());
    } else if opts.repo.is_some() {
        lines.push(
            "scale: skipped: it generates repositories from the fixture; run without --repo".into(),
        );
    } else {
        let sizes = opts
            .sizes
            .clone()
            .unwrap_or_else(|| scale::default_sizes(opts.candidates));
        let originals = builtin_candidates()?;
        let mut repos = Vec::new();
        for &n in &sizes {
            let plan = scale_plan(&originals, n);
            let scale_repo = base.join(format!("scale-repo-{n}"));
            eprintln!(
                "bench: generating {} ({n} candidates)",
                scale_repo.display()
            );
            generate_scale_repo(&fixture, &scale_repo, &plan)?;
            repos.push(scale_repo);
        }
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); sizes.len()];
        let mut not_passed_scale = Vec::new();
        // In rounds of every size, so load on a shared machine falls on all alike.
        for round in 0..opts.scale_runs {
            for (k, (&n, scale_repo)) in sizes.iter().zip(&repos).enumerate() {
                let run = base.join(format!("scale-{n}-run-{round:02}"));
                std::fs::create_dir_all(&run)?;
                let (sample, why) = verifier.certify(
                    scale_repo,
                    &run.join("evidence"),
                    None,
                    &run.join("output.log"),
                )?;
                sources.push(sample.cpu_source);
                eprintln!(
                    "bench: scale run {round}: {n:>3} candidates, wall {:>7.2} s  cpu {:>7.2} s  \
                     verifier {} MiB  tree {} MiB  {}",
                    sample.wall,
                    sample.cpu,
                    sample.own_rss_kib.map_or_else(|| "-".into(), mib),
                    sample.tree_peak_kib.map_or_else(|| "-".into(), mib),
                    if why.is_some() { "NOT PASS" } else { "PASS" }
                );
                if let Some(why) = why {
                    not_passed_scale.push(NotPassed {
                        run: format!("scale run {round} ({n} candidates)"),
                        why,
                    });
                    continue;
                }
                samples[k].push(sample);
                if !opts.keep {
                    let _ = std::fs::remove_dir_all(&run);
                }
            }
        }
        scale_passed = not_passed_scale.is_empty();
        let rows: Vec<scale::SizeRow> = sizes
            .iter()
            .zip(&samples)
            .filter_map(|(&n, s)| {
                summarize(&format!("{n} cand."), s).map(|summary| scale::SizeRow {
                    candidates: n,
                    summary,
                })
            })
            .collect();
        let judged = scale::judge(&rows);
        scale_met = scale::all_met(&judged);
        println!(
            "
scale (medians of the runs that passed; a run that did not is listed below):"
        );
        print!("{}", scale::format_scale_table(&rows));
        lines.extend(judged.into_iter().map(|j| j.line));
        lines.extend(format_not_passed(
            opts.scale_runs * sizes.len(),
            &not_passed_scale,
        ));
        lines.push(
            "cpu/cand, wall/cand: the run's total over its candidates; +cpu/cand: the CPU of one \
             more candidate since the previous size; verifier MiB: the verifier's own VmHWM; tree \
             MiB: the peak of the summed RSS of every process in the run's cgroup (sampled every \
             100 ms; shared pages count once per process)"
                .into(),
        );
    }
    for l in &lines {
        println!("{l}");
    }
    println!(
        "\nharness MiB: the verifier's own peak RSS (VmHWM, polled every 20 ms); \
         tree max MiB: the largest peak RSS of any one process it ran (wait4 ru_maxrss)"
    );
    println!("{}", cpu_note(&sources));
    if opts.streaming {
        println!("\nstreaming (harness RSS as the archive grows):");
        crate::run_to_stderr(
            Command::new(crate::cargo())
                .current_dir(&root)
                .args(["bench", "--bench", "streaming"])
                .stdout(Stdio::inherit()),
            "cargo bench --bench streaming",
        )?;
    } else {
        println!(
            "archive size vs harness RSS: `cargo bench --bench streaming` (or `cargo xtask bench --streaming`)"
        );
    }
    let all_passed = not_passed.is_empty() && scale_passed;
    if opts.keep || !all_passed {
        println!(
            "bench: kept {}{}",
            base.display(),
            if opts.keep {
                ""
            } else {
                " (the runs that did not PASS; the others were removed)"
            }
        );
    } else {
        let _ = std::fs::remove_dir_all(&base);
    }
    if !scale_met {
        println!("bench: a scale target was missed (MISS above)");
    }
    Ok(i32::from(!all_passed || !scale_met))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_run_that_did_not_pass_is_explained_by_its_own_failing_checks() {
        let doc = serde_json::json!({
            "verdict": "fail",
            "gates": [
                {"id": "suites", "checks": [
                    {"name": "tree/outcomes", "result": "fail", "detail": "pytest exit status 1\nmore"},
                    {"name": "tree/passing", "result": "fail", "detail": "x", "consequence_of": "tree/outcomes"},
                    {"name": "tree/sandbox", "result": "pass", "detail": "ok"}
                ]},
                {"id": "stage", "checks": [{"name": "blob-ids", "result": "pass", "detail": "ok"}]}
            ]
        });
        assert_eq!(
            failing_checks(&doc),
            "suites/tree/outcomes: pytest exit status 1"
        );
        let many = serde_json::json!({"verdict": "fail", "gates": [{"id": "g", "checks":
            (0..7).map(|i| serde_json::json!({"name": format!("c{i}"), "result": "fail", "detail": "d"})).collect::<Vec<_>>()
        }]});
        assert!(
            failing_checks(&many).ends_with("g/c4: d; and 2 more"),
            "{}",
            failing_checks(&many)
        );
        let none = serde_json::json!({"verdict": "incomplete", "gates": []});
        assert_eq!(
            failing_checks(&none),
            "verdict \"incomplete\", no failing check"
        );
        let missing = why_not_pass(Path::new("/nonexistent/vcc-bench"));
        assert!(
            missing.starts_with("no readable evidence (/nonexistent/vcc-bench/evidence.json"),
            "{missing}"
        );
    }

    #[test]
    fn median_of_odd_even_and_empty_lists() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
    }

    #[test]
    fn summaries_take_the_median_of_each_column() {
        let s = |wall, cpu, own, tree, peak| Sample {
            cpu_source: CpuSource::Cgroup,
            wall,
            cpu,
            own_rss_kib: own,
            tree_rss_kib: tree,
            tree_peak_kib: peak,
        };
        let sum = summarize(
            "x",
            &[
                s(10.0, 4.0, Some(2048), 100, Some(900)),
                s(30.0, 1.0, None, 300, None),
                s(20.0, 9.0, Some(4096), 200, Some(700)),
            ],
        )
        .unwrap();
        assert_eq!(
            sum.tree_peak_kib,
            Some(800),
            "runs without one are left out"
        );
        assert_eq!(sum.runs, 3);
        assert_eq!(sum.wall, 20.0);
        assert_eq!(sum.cpu, 4.0);
        assert_eq!(sum.own_rss_kib, Some(3072));
        assert_eq!(sum.tree_rss_kib, 200);
        assert_eq!(summarize("x", &[]), None);
    }

    #[test]
    fn the_table_is_aligned_and_names_every_column() {
        let rows = [
            Summary {
                label: "ours --jobs 1".into(),
                runs: 3,
                wall: 61.234,
                cpu: 80.5,
                own_rss_kib: Some(10240),
                tree_rss_kib: 153600,
                tree_peak_kib: None,
            },
            Summary {
                label: "peer".into(),
                runs: 3,
                wall: 5.0,
                cpu: 4.0,
                own_rss_kib: None,
                tree_rss_kib: 1024,
                tree_peak_kib: None,
            },
        ];
        let t = format_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "variant                  runs     wall s      cpu s    harness MiB   tree max MiB"
        );
        assert_eq!(
            lines[1],
            "ours --jobs 1               3      61.23      80.50           10.0          150.0"
        );
        assert_eq!(
            lines[2],
            "peer                        3       5.00       4.00              -            1.0"
        );
        assert!(lines.iter().all(|l| l.len() == lines[0].len()));
    }

    #[test]
    fn ratios_pass_at_and_below_the_target_and_miss_above() {
        assert_eq!(
            format_ratio("default/jobs1 wall", 6.0, 10.0, 0.6),
            "default/jobs1 wall: 0.60 (target <= 0.60): PASS"
        );
        assert_eq!(
            format_ratio("r", 7.0, 10.0, 0.6),
            "r: 0.70 (target <= 0.60): MISS"
        );
        assert_eq!(
            format_ratio("r", 1.0, 0.0, 0.6),
            "r: n/a (a zero or unmeasured denominator)"
        );
    }

    #[test]
    fn vm_hwm_is_read_in_kib() {
        let status = "Name:\tvcc\nVmPeak:\t  9000 kB\nVmHWM:\t    4321 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(4321));
        assert_eq!(parse_vm_hwm("Name:\tzombie\nState:\tZ\n"), None);
    }

    /// wait4 rusage misses a bubblewrap sandbox's processes; a cgroup of
    /// the run's own does not. Not a timing assertion: only that CPU spent
    /// inside bwrap is counted at all when a cgroup can be made.
    #[test]
    fn cpu_spent_inside_a_sandbox_is_counted_when_a_cgroup_can_be_made() {
        if RunCgroup::new().is_none() || !Path::new("/usr/bin/bwrap").is_file() {
            eprintln!("skipped: no cgroup can be made here, or no bubblewrap");
            return;
        }
        let (s, code) = measure(Command::new("/usr/bin/bwrap").args([
            "--unshare-pid",
            "--die-with-parent",
            "--dev-bind",
            "/",
            "/",
            "sh",
            "-c",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
        ]))
        .unwrap();
        assert_eq!(code, 0);
        assert_eq!(s.cpu_source, CpuSource::Cgroup);
        assert!(s.cpu > 0.05, "the loop's CPU is counted: {s:?}");
        assert!(cpu_note(&[CpuSource::Cgroup]).contains("cgroup of the run's own"));
        assert!(cpu_note(&[CpuSource::Rusage, CpuSource::Cgroup]).contains("1 of 2 run(s)"));
    }

    #[test]
    fn resident_pages_are_the_second_field_of_statm() {
        assert_eq!(parse_statm_resident("2000 377 300 1 0 120 0\n"), Some(377));
        assert_eq!(parse_statm_resident("2000"), None);
        assert_eq!(parse_statm_resident(""), None);
    }

    /// Not a memory assertion: only that the tree's peak is read at all
    /// when a cgroup can be made, and is absent when none can.
    #[test]
    fn the_trees_peak_is_sampled_from_the_runs_cgroup() {
        let (s, code) =
            measure(Command::new("sh").args(["-c", "sleep 0.3 & sleep 0.3; wait"])).unwrap();
        assert_eq!(code, 0);
        match s.cpu_source {
            CpuSource::Cgroup => assert!(s.tree_peak_kib.is_some_and(|k| k > 0), "{s:?}"),
            CpuSource::Rusage => assert_eq!(s.tree_peak_kib, None, "{s:?}"),
        }
    }

    #[test]
    fn measure_reports_the_exit_code_and_the_childs_cpu() {
        // Not a timing assertion: only that the figures are filled in.
        let (s, code) = measure(Command::new("sh").args(["-c", "exit 3"])).unwrap();
        assert_eq!(code, 3);
        assert!(s.wall >= 0.0 && s.cpu >= 0.0);
        assert!(s.tree_rss_kib > 0);
        let (_, code) = measure(Command::new("sh").args(["-c", "kill -9 $$"])).unwrap();
        assert_eq!(code, 128 + 9);
    }

    #[test]
    fn runs_alternate_jobs1_default_and_the_peer() {
        use Variant::*;
        assert_eq!(
            schedule(2, false, false),
            vec![Jobs1, Default, Jobs1, Default]
        );
        assert_eq!(schedule(1, true, false), vec![Jobs1, Default, Peer]);
        assert_eq!(schedule(3, true, false).len(), 9);
        assert_eq!(schedule(2, true, true), vec![Default, Peer, Default, Peer]);
    }

    #[test]
    fn options_parse_with_defaults_and_refuse_bad_values() {
        assert_eq!(parse_options(&[]).unwrap(), Some(Options::default()));
        let o = parse_options(&os(&[
            "--runs",
            "5",
            "--repo=/tmp/real-repo",
            "--peer",
            "make check",
            "--skip-scale",
            "--python",
            "/p/python",
            "--candidates",
            "12",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.runs, 5);
        assert_eq!(o.repo.as_deref(), Some(Path::new("/tmp/real-repo")));
        assert_eq!(o.peer.as_deref(), Some("make check"));
        assert!(o.skip_scale);
        assert_eq!(o.python.as_deref(), Some(Path::new("/p/python")));
        assert_eq!(o.candidates, 12);
        assert_eq!(o.sizes, None);
        assert_eq!(Options::default().scale_runs, 2, "each size at least twice");
        let o = parse_options(&os(&["--sizes", "50,5,25"]))
            .unwrap()
            .unwrap();
        assert_eq!(o.sizes, Some(vec![5, 25, 50]));
        assert_eq!(parse_options(&os(&["--help"])).unwrap(), None);
        // The release binary is what users run, so it is what is measured.
        assert!(Options::default().release);
        assert!(!parse_options(&os(&["--debug"])).unwrap().unwrap().release);
        assert!(parse_options(&os(&["--release"])).unwrap().unwrap().release);
        for bad in [
            &["--runs", "0"][..],
            &["--runs", "x"],
            &["--runs"],
            &["--frobnicate"],
            &["--sizes", "5,0"],
        ] {
            assert!(parse_options(&os(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn runs_that_did_not_pass_are_counted_and_each_is_named_with_why() {
        assert_eq!(
            format_not_passed(6, &[]),
            vec!["every timed run PASS: 6 of 6: PASS".to_string()]
        );
        let lines = format_not_passed(
            6,
            &[NotPassed {
                run: "run 4 (ours default jobs)".into(),
                why: "exit code 1: suites/outcomes: test_x failed".into(),
            }],
        );
        assert_eq!(
            lines,
            vec![
                "every timed run PASS: 1 of 6 did not: MISS".to_string(),
                "  run 4 (ours default jobs): exit code 1: suites/outcomes: test_x failed".into(),
            ]
        );
    }

    fn originals() -> Vec<String> {
        builtin_candidates().unwrap()
    }

    #[test]
    fn the_scale_plan_keeps_the_originals_and_numbers_the_copies() {
        let plan = scale_plan(&originals(), 30);
        assert_eq!(plan.len(), 30);
        assert_eq!(plan[0].path, "Runner/acp-agent-runner");
        assert_eq!(plan[0].suffix, None);
        assert_eq!(plan[3].path, "Runner/acp-agent-runner-c04");
        assert_eq!(plan[3].source, "Runner/acp-agent-runner");
        assert_eq!(plan[29].path, "Runner/codex-agent-c30");
        assert_eq!(plan[29].suffix.as_deref(), Some("c30"));
        let folders: std::collections::BTreeSet<_> =
            plan.iter().map(|c| c.path.rsplit('/').next()).collect();
        assert_eq!(folders.len(), 30, "folder names key DIR/packages");
        assert_eq!(scale_plan(&originals(), 2).len(), 2);
    }

    #[test]
    fn a_copy_gets_its_own_manifest_name_and_labels() {
        let text = std::fs::read_to_string(
            crate::workspace_root()
                .join("fixtures/candidate-repo/Runner/codex-agent/manifest.yaml"),
        )
        .unwrap();
        let renamed = rename_manifest(&text, "c06").unwrap();
        assert!(renamed.contains("\n  name: codex-agent-c06\n"), "{renamed}");
        assert!(
            renamed.contains("\n    en_US: Codex Agent c06\n"),
            "{renamed}"
        );
        assert!(
            renamed.contains("\n    zh_Hans: Codex Agent c06\n"),
            "{renamed}"
        );
        // Nothing else changes: the config option's name and label stay.
        assert!(
            renamed.contains("\n    - name: daemon-enabled\n"),
            "{renamed}"
        );
        assert!(renamed.contains("en_US: Enable Daemon Hub\n"), "{renamed}");
        assert_eq!(
            renamed.lines().count(),
            text.lines().count(),
            "line for line"
        );
        let id = verify_coding_candidates::manifest::parse_id(&renamed, Path::new("manifest.yaml"))
            .unwrap();
        assert_eq!(id.name, "codex-agent-c06");
    }

    #[test]
    fn quoted_names_stay_quoted_and_a_manifest_without_a_name_is_refused() {
        let text = "metadata:\n  name: \"x\"\n  label:\n    en_US: X\nspec: {}\n";
        assert_eq!(
            rename_manifest(text, "c04").unwrap(),
            "metadata:\n  name: \"x-c04\"\n  label:\n    en_US: X c04\nspec: {}\n"
        );
        assert!(rename_manifest("metadata:\n  label:\n    en_US: X\n", "c04").is_err());
        assert!(rename_manifest("spec:\n  name: x\n", "c04").is_err());
    }

    #[test]
    fn the_generated_profile_is_valid_and_probes_every_copy_like_its_source() {
        let plan = scale_plan(&originals(), 30);
        let text = scale_profile(
            verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS,
            &plan,
        )
        .unwrap();
        let p = verify_coding_candidates::profile::parse(&text, "generated").unwrap();
        assert_eq!(p.name, "bench-scale-30");
        assert_eq!(p.candidates.len(), 30);
        assert_eq!(p.discovery.runner_probes.len(), 30);
        let probe = |path: &str| {
            p.discovery
                .runner_probes
                .iter()
                .find(|r| r.candidate == path)
                .unwrap()
                .fixture
                .clone()
        };
        assert_eq!(probe("Runner/codex-agent-c30"), "builtin:codex-app-server");
        assert_eq!(probe("Runner/acp-agent-runner-c04"), "builtin:acp-stdio");
        assert_eq!(
            probe("Runner/claude-code-agent-c05"),
            "builtin:claude-code-stream-json"
        );
        // The sections that name candidates or files keep applying.
        assert_eq!(p.shared.unwrap().owner, "Runner/acp-agent-runner");
        assert!(p.suites.is_some() && p.vendored_sdk.is_some());
    }
}
