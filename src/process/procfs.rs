//! What the operating system says about processes, read from Linux `/proc`.
//!
//! The `worker-isolation` gate never takes a worker's word for a process
//! having exited: it reads `/proc/<pid>/stat` (state, parent, process group,
//! session, start time), `/proc/<pid>/status` (`NSpid`: the pid in each nested
//! pid namespace), `/proc/<pid>/environ` and `/proc/<pid>/cwd`. Programs are
//! never matched by name; `cmdline` is read for the reader of the evidence only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One process as `/proc` shows it (host pid numbering).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    /// Process id (in the reader's pid namespace).
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Process group id.
    pub pgid: i32,
    /// Session id.
    pub sid: i32,
    /// State letter of `/proc/<pid>/stat` (`R`, `S`, `D`, `Z`, `X`, ...).
    pub state: char,
    /// Start time in clock ticks after boot (field 22): with the pid, an
    /// identity that survives pid reuse.
    pub start_time: u64,
    /// `NSpid` of `/proc/<pid>/status`: the pid in each pid namespace, from
    /// the reader's outward to the process's own (innermost last).
    pub ns_pids: Vec<i32>,
}

impl ProcInfo {
    /// The pid in the process's own (innermost) pid namespace.
    pub fn inner_pid(&self) -> i32 {
        self.ns_pids.last().copied().unwrap_or(self.pid)
    }

    /// True for a zombie or dead entry: the process has exited.
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Reads one process; `None` when it does not exist (or vanished meanwhile).
pub fn read(pid: i32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `comm` may hold spaces and parentheses: split after the last `)`.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
    let ns_pids = if in_the_readers_pid_namespace(pid) {
        vec![pid]
    } else {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_else(|| vec![pid])
    };
    Some(ProcInfo {
        pid,
        ppid: num(1)? as i32,
        pgid: num(2)? as i32,
        sid: num(3)? as i32,
        state,
        start_time: num(19)? as u64,
        ns_pids,
    })
}

/// True when `pid` is in the pid namespace `/proc` was mounted for (that of
/// its pid 1): then its `NSpid` is its pid alone, and `/proc/<pid>/status`
/// (which the kernel builds with the process's memory figures, under its
/// memory map's lock: most of the cost of reading every process of a busy
/// machine) need not be read. False when either link is unreadable (another
/// user's process, without the privilege to inspect it): `status` is read.
fn in_the_readers_pid_namespace(pid: i32) -> bool {
    static ROOT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let root = ROOT.get_or_init(|| std::fs::read_link("/proc/1/ns/pid").ok());
    match (root, std::fs::read_link(format!("/proc/{pid}/ns/pid"))) {
        (Some(root), Ok(own)) => *root == own,
        _ => false,
    }
}

/// Every process visible in `/proc`, by pid.
pub fn all() -> BTreeMap<i32, ProcInfo> {
    let mut out = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            if let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) {
                if let Some(info) = read(pid) {
                    out.insert(pid, info);
                }
            }
        }
    }
    out
}

/// `root` and every process below it in the parent chain of `procs`.
pub fn descendants(procs: &BTreeMap<i32, ProcInfo>, root: i32) -> Vec<ProcInfo> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for p in procs.values() {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    let mut seen = BTreeSet::new();
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if let Some(p) = procs.get(&pid) {
            out.push(p.clone());
        }
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids.iter().copied());
        }
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// The environment block of `pid` as `NAME=value` entries (`None` when
/// unreadable or the process is gone).
pub fn environ(pid: i32) -> Option<Vec<Vec<u8>>> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|e| !e.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

/// The variable names of an environment block.
pub fn env_keys(entries: &[Vec<u8>]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            let name = e.split(|b| *b == b'=').next().unwrap_or(e);
            String::from_utf8_lossy(name).into_owned()
        })
        .collect()
}

/// True when an entry of `entries` starts with `name=` or contains `value`.
pub fn env_contains(entries: &[Vec<u8>], name: &str, value: &str) -> bool {
    let prefix = format!("{name}=");
    entries.iter().any(|e| {
        e.starts_with(prefix.as_bytes())
            || (!value.is_empty() && e.windows(value.len()).any(|w| w == value.as_bytes()))
    })
}

/// The working directory of `pid`, as the reader sees the path.
pub fn cwd(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// The command line of `pid`, arguments joined by spaces and cut to 200
/// characters (for the reader of the evidence; never used to match).
pub fn cmdline(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text: String = String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    text.chars().take(200).collect()
}

/// The pid namespace of `pid` (`pid:[4026531836]`).
pub fn pid_namespace(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|p| p.display().to_string())
}

/// Whether the process first seen as `seen` still runs: `false` once it is
/// gone, a zombie, or its pid was reused (another start time).
pub fn still_running(seen: &ProcInfo) -> bool {
    match read(seen.pid) {
        Some(now) => now.start_time == seen.start_time && !now.exited(),
        None => false,
    }
}

/// Live (not exited) members of process group `pgid`.
pub fn live_group_members(pgid: i32) -> Vec<ProcInfo> {
    all()
        .into_values()
        .filter(|p| p.pgid == pgid && !p.exited())
        .collect()
}

/// True when `path` is `root` or below it (both compared as given).
pub fn is_under(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let me = read(std::process::id() as i32).expect("own /proc entry");
        assert_eq!(me.pid, std::process::id() as i32);
        assert!(!me.exited());
        assert!(me.start_time > 0);
        assert_eq!(
            me.inner_pid(),
            me.pid,
            "tests run in the host pid namespace"
        );
        let env = environ(me.pid).expect("own environ");
        assert!(env_keys(&env).iter().any(|k| k == "PATH"));
    }

    #[test]
    fn descendants_follow_the_parent_chain() {
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut found = Vec::new();
        while std::time::Instant::now() < deadline {
            found = descendants(&all(), pid);
            if found.len() >= 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        );
        for p in &found {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(p.pid).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
        let _ = child.wait();
        assert_eq!(found.first().map(|p| p.pid), Some(pid), "{found:?}");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].ppid, pid);
    }

    #[test]
    fn environment_matching_by_name_or_value() {
        let env = vec![b"A=1".to_vec(), b"B=has-secret-inside".to_vec()];
        assert!(env_contains(&env, "A", "zzz"));
        assert!(env_contains(&env, "C", "secret"));
        assert!(!env_contains(&env, "C", "other"));
        assert_eq!(env_keys(&env), vec!["A", "B"]);
    }
}
