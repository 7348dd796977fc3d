//! The CPU of one verifier run by gate, sandboxed steps included, from BSD
//! process accounting (`acct(2)`, Linux `acct_v3` records): the kernel writes
//! one record per process as it exits, with its pid, its parent's pid, and
//! its own user and system time (not its children's). Each process is given
//! to the step whose leader it descends from (the leader's pid is the `pid:`
//! line of the step's `DIR/logs/<gate>/**.cmd` record; the folder under
//! `logs/` names the gate, `sandbox` being the shared bubblewrap checks), and
//! the verifier's own process (every thread of it: hashing, copying,
//! decisions) is a row of its own. bubblewrap's sandboxes pass no CPU time
//! on to the verifier's rusage; accounting sees every process in them, so the
//! table is whole.
//!
//! Accounting needs `CAP_SYS_PACCT` (root) and a kernel built with it; else
//! [`Accounting::start`] says why and the bench goes on without the table.
//! It replaces any accounting already on (a `psacct` service's file, which
//! the kernel does not name back) and switches accounting off after each
//! run: do not bench on a machine whose accounting you keep.
//! Times are in the kernel's accounting unit (`AHZ`, 1/100 s) per process:
//! a run's hundreds of short processes round to within a few tenths of a
//! second in all.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One record of the accounting file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub pid: u32,
    pub ppid: u32,
    /// User + system seconds of this process alone.
    pub cpu: f64,
    pub comm: String,
}

/// Size of a Linux `struct acct_v3`.
const RECORD: usize = 64;
/// The accounting clock (`AHZ`): ticks per second of the time fields.
const AHZ: f64 = 100.0;

/// A `comp_t`: 13-bit mantissa, 3-bit base-8 exponent.
pub(crate) fn comp_t(v: u16) -> u64 {
    u64::from(v & 0x1fff) << (3 * u32::from(v >> 13))
}

/// The records of an accounting file (`acct_v3`, little-endian as the
/// machine writes it).
///
/// # Errors
/// A record of another version (the kernel writes `acct_v3` only when built
/// with `CONFIG_BSD_PROCESS_ACCT_V3`), or a truncated file.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Record>> {
    if !bytes.len().is_multiple_of(RECORD) {
        bail!(
            "accounting file of {} bytes is not a whole number of {RECORD}-byte acct_v3 records",
            bytes.len()
        );
    }
    let u32_at = |r: &[u8], at: usize| u32::from_le_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]]);
    let u16_at = |r: &[u8], at: usize| u16::from_le_bytes([r[at], r[at + 1]]);
    bytes
        .chunks(RECORD)
        .map(|r| {
            let version = r[1] & 0x0f;
            if version != 3 {
                bail!("accounting record of version {version}; only acct_v3 (version 3) is read");
            }
            let ticks = comp_t(u16_at(r, 32)) + comp_t(u16_at(r, 34));
            let comm = &r[48..64];
            let end = comm.iter().position(|b| *b == 0).unwrap_or(comm.len());
            Ok(Record {
                pid: u32_at(r, 16),
                ppid: u32_at(r, 20),
                cpu: ticks as f64 / AHZ,
                comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
            })
        })
        .collect()
}

/// Process accounting switched on into a file of its own.
pub(crate) struct Accounting {
    path: PathBuf,
}

fn acct(path: Option<&Path>) -> std::io::Result<()> {
    let c = path
        .map(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()))
        .transpose()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: acct(2) takes a NUL-terminated path that lives for the call,
    // or NULL to switch accounting off.
    let r = unsafe { libc::acct(c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl Accounting {
    /// Switches accounting on into `path` (created empty).
    ///
    /// # Errors
    /// Why the kernel refused (not root: `EPERM`; no accounting in this
    /// kernel: `ENOSYS`; accounting already on elsewhere is replaced).
    pub(crate) fn start(path: &Path) -> Result<Self> {
        std::fs::write(path, b"").with_context(|| format!("create {}", path.display()))?;
        acct(Some(path)).with_context(|| {
            "process accounting (acct(2)) refused: it needs root (CAP_SYS_PACCT) and a kernel with \
             BSD process accounting"
        })?;
        Ok(Self {
            path: path.to_path_buf(),
        })
    }

    /// Switches accounting off and reads what it recorded.
    ///
    /// # Errors
    /// The file cannot be read or parsed.
    pub(crate) fn stop(self) -> Result<Vec<Record>> {
        let _ = acct(None);
        let bytes = std::fs::read(&self.path).with_context(|| self.path.display().to_string())?;
        parse(&bytes)
    }
}

impl Drop for Accounting {
    fn drop(&mut self) {
        let _ = acct(None);
    }
}

/// Every step leader of the evidence directory `evidence`: its pid (the
/// `pid:` line of each `.cmd` record under `logs/`) and its gate (the
/// folder under `logs/`).
pub(crate) fn leaders(evidence: &Path) -> BTreeMap<u32, String> {
    let logs = evidence.join("logs");
    let mut out = BTreeMap::new();
    let mut stack = vec![logs.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "cmd") {
                continue;
            }
            let gate = path
                .strip_prefix(&logs)
                .ok()
                .and_then(|rel| rel.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let pid = text
                .lines()
                .find_map(|l| l.strip_prefix("pid: "))
                .and_then(|p| p.trim().parse().ok());
            if let (Some(pid), Some(gate)) = (pid, gate) {
                out.insert(pid, gate);
            }
        }
    }
    out
}

/// The row of the verifier's own process.
pub(crate) const VERIFIER_ROW: &str = "(verifier's own threads)";
/// The row of the run's processes no step record names.
pub(crate) const UNNAMED_ROW: &str = "(no step record)";

/// CPU seconds by gate of the run whose verifier process is `verifier`:
/// every record descending from it, given to the nearest step leader above
/// it (or that is it), else [`UNNAMED_ROW`]; the verifier itself is
/// [`VERIFIER_ROW`]. Records of other processes of the machine are left out.
pub(crate) fn by_gate(
    records: &[Record],
    verifier: u32,
    leaders: &BTreeMap<u32, String>,
) -> BTreeMap<String, f64> {
    let parent: BTreeMap<u32, u32> = records.iter().map(|r| (r.pid, r.ppid)).collect();
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for r in records {
        let row = if r.pid == verifier {
            Some(VERIFIER_ROW.to_string())
        } else {
            owner(r.pid, verifier, &parent, leaders)
        };
        if let Some(row) = row {
            *out.entry(row).or_default() += r.cpu;
        }
    }
    out
}

/// The gate of process `pid`, walking up its parents: the first step leader
/// met, else [`UNNAMED_ROW`] when the walk reaches the verifier; `None` when
/// it leaves the run (another process of the machine).
fn owner(
    pid: u32,
    verifier: u32,
    parent: &BTreeMap<u32, u32>,
    leaders: &BTreeMap<u32, String>,
) -> Option<String> {
    let mut at = pid;
    // Bounded: a parent chain longer than the records is a cycle of reused pids.
    for _ in 0..=parent.len() {
        if let Some(gate) = leaders.get(&at) {
            return Some(gate.clone());
        }
        if at == verifier {
            return Some(UNNAMED_ROW.to_string());
        }
        at = *parent.get(&at)?;
    }
    None
}

/// The verifier's pid among `records`: the one child `bench` (pid `me`)
/// started while accounting was on. Not found by name: the kernel records
/// the name of the last thread to exit (the verifier's `interrupt watch`),
/// and it adds a record of `me` itself when accounting is switched off.
pub(crate) fn verifier_pid(records: &[Record], me: u32) -> Option<u32> {
    let mut children = records.iter().filter(|r| r.ppid == me && r.pid != me);
    match (children.next(), children.next()) {
        (Some(r), None) => Some(r.pid),
        _ => None,
    }
}

/// The per-gate table: the median CPU seconds of each row over `runs`
/// (a run without the row counts 0), costliest first, and the median total.
pub(crate) fn format_table(runs: &[BTreeMap<String, f64>]) -> String {
    let mut rows: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for k in run.keys() {
            rows.entry(k.as_str()).or_default();
        }
    }
    for (k, v) in &mut rows {
        *v = runs
            .iter()
            .map(|r| r.get(*k).copied().unwrap_or(0.0))
            .collect();
    }
    let mut medians: Vec<(&str, f64)> = rows
        .iter()
        .map(|(k, v)| (*k, super::median(v).unwrap_or(0.0)))
        .collect();
    medians.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let totals: Vec<f64> = runs.iter().map(|r| r.values().sum()).collect();
    let mut out = format!(
        "cpu by gate (process accounting, median of {} run(s); sandboxed steps included):\n",
        runs.len()
    );
    for (k, v) in medians {
        out.push_str(&format!("  {k:<28} {v:>7.2} s\n"));
    }
    out.push_str(&format!(
        "  {:<28} {:>7.2} s\n",
        "total",
        super::median(&totals).unwrap_or(0.0)
    ));
    out
}

/// The per-gate CPU of every default run of a bench, or why it could not
/// be counted.
#[derive(Default)]
pub(crate) struct ByGate {
    runs: Vec<BTreeMap<String, f64>>,
    /// Why accounting was refused or unreadable: the table is then not
    /// printed, and no later run tries again.
    missing: Option<String>,
}

impl ByGate {
    /// Switches accounting on for one run (its file in the run's folder
    /// `run`); `None` once it was refused.
    pub(crate) fn start(&mut self, run: &Path) -> Option<Accounting> {
        if self.missing.is_some() {
            return None;
        }
        match Accounting::start(&run.join("process-accounting")) {
            Ok(a) => Some(a),
            Err(e) => {
                self.missing = Some(format!("{e:#}"));
                None
            }
        }
    }

    /// Switches it off and adds the run whose evidence is `evidence`.
    pub(crate) fn stop(&mut self, accounting: Option<Accounting>, evidence: &Path) {
        let Some(accounting) = accounting else {
            return;
        };
        let records = match accounting.stop() {
            Ok(r) => r,
            Err(e) => {
                self.missing = Some(format!("{e:#}"));
                return;
            }
        };
        match verifier_pid(&records, std::process::id()) {
            Some(v) => self.runs.push(by_gate(&records, v, &leaders(evidence))),
            None => {
                self.missing = Some(
                    "no accounting record of the verifier's process (the one child the bench \
                     started while accounting was on)"
                        .into(),
                )
            }
        }
    }

    /// The table, or why there is none.
    pub(crate) fn table(&self) -> String {
        match (&self.missing, self.runs.is_empty()) {
            (Some(why), _) => format!("cpu by gate: not counted: {why}\n"),
            (None, true) => "cpu by gate: no default run\n".into(),
            (None, false) => format_table(&self.runs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pid: u32, ppid: u32, utime: u16, comm: &str) -> [u8; RECORD] {
        let mut r = [0u8; RECORD];
        r[1] = 3;
        r[16..20].copy_from_slice(&pid.to_le_bytes());
        r[20..24].copy_from_slice(&ppid.to_le_bytes());
        r[32..34].copy_from_slice(&utime.to_le_bytes());
        r[34..36].copy_from_slice(&5u16.to_le_bytes());
        r[48..48 + comm.len()].copy_from_slice(comm.as_bytes());
        r
    }

    #[test]
    fn comp_t_scales_the_mantissa_by_powers_of_eight() {
        assert_eq!(comp_t(100), 100);
        assert_eq!(comp_t((1 << 13) | 3), 24);
        assert_eq!(comp_t((2 << 13) | 1), 64);
    }

    #[test]
    fn records_parse_and_other_versions_or_torn_files_are_refused() {
        let mut bytes = Vec::new();
        bytes.extend(record(10, 1, 95, "verify-coding-c"));
        bytes.extend(record(11, 10, 0, "bwrap"));
        let r = parse(&bytes).unwrap();
        assert_eq!(r[0].pid, 10);
        assert_eq!(r[1].ppid, 10);
        assert!((r[0].cpu - 1.0).abs() < 1e-9, "{}", r[0].cpu);
        assert_eq!(r[0].comm, "verify-coding-c");
        assert!(parse(&bytes[..70]).is_err());
        let mut v2 = record(1, 0, 0, "x");
        v2[1] = 2;
        assert!(parse(&v2).unwrap_err().to_string().contains("version 2"));
    }

    #[test]
    fn each_process_goes_to_the_step_above_it_and_strangers_are_left_out() {
        // verifier 10; step 11 (lbp-build) with child 12; step 13 (suites:
        // bwrap) with the sandbox's 14 and its orphan 15 (re-parented to
        // 14); 16 started by the verifier without a record; 99 a stranger.
        let records = vec![
            Record {
                pid: 10,
                ppid: 1,
                cpu: 2.0,
                comm: "verify-coding-c".into(),
            },
            Record {
                pid: 11,
                ppid: 10,
                cpu: 0.5,
                comm: "python".into(),
            },
            Record {
                pid: 12,
                ppid: 11,
                cpu: 0.25,
                comm: "python".into(),
            },
            Record {
                pid: 13,
                ppid: 10,
                cpu: 0.0,
                comm: "bwrap".into(),
            },
            Record {
                pid: 14,
                ppid: 13,
                cpu: 3.0,
                comm: "python".into(),
            },
            Record {
                pid: 15,
                ppid: 14,
                cpu: 1.0,
                comm: "sh".into(),
            },
            Record {
                pid: 16,
                ppid: 10,
                cpu: 0.1,
                comm: "git".into(),
            },
            Record {
                pid: 99,
                ppid: 2,
                cpu: 9.0,
                comm: "cc1".into(),
            },
            Record {
                pid: 1,
                ppid: 0,
                cpu: 0.0,
                comm: "xtask".into(),
            },
        ];
        let leaders: BTreeMap<u32, String> =
            [(11, "lbp-build".to_string()), (13, "suites".to_string())].into();
        assert_eq!(verifier_pid(&records, 1), Some(10));
        let t = by_gate(&records, 10, &leaders);
        assert_eq!(t.get("lbp-build"), Some(&0.75));
        assert_eq!(t.get("suites"), Some(&4.0));
        assert_eq!(t.get(VERIFIER_ROW), Some(&2.0));
        assert_eq!(t.get(UNNAMED_ROW), Some(&0.1));
        assert_eq!(t.len(), 4, "{t:?}");
        let table = format_table(&[t.clone(), t]);
        assert!(table.contains("suites"), "{table}");
        assert!(
            table.lines().nth(1).unwrap().contains("suites"),
            "costliest first: {table}"
        );
        assert!(table.contains("total") && table.contains("6.85"), "{table}");
    }

    #[test]
    fn leaders_are_read_from_the_cmd_records_under_logs() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(logs.join("suites")).unwrap();
        std::fs::create_dir_all(logs.join("discovery-rpc/probes")).unwrap();
        std::fs::write(
            logs.join("suites/tree.cmd"),
            "cwd: /x\nprogram: bwrap\npid: 42\n",
        )
        .unwrap();
        std::fs::write(logs.join("discovery-rpc/probes/a.cmd"), "pid: 43\n").unwrap();
        std::fs::write(logs.join("suites/tree.stdout"), "pid: 44\n").unwrap();
        let l = leaders(dir.path());
        assert_eq!(l.get(&42).map(String::as_str), Some("suites"));
        assert_eq!(l.get(&43).map(String::as_str), Some("discovery-rpc"));
        assert_eq!(l.len(), 2);
    }
}
