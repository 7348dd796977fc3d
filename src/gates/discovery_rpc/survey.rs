//! The survivor survey: processes tied to the run's private roots.
//!
//! A process belongs to the run when its working directory lies under the
//! roots or its environment names them (the runtime's `HOME`/`TMPDIR`, a
//! worker's `LANGBOT_PLUGIN_FILE_STORAGE_DIR`). Never by program name: an
//! unrelated interpreter on the machine is not ours to judge or to stop.

use super::spec::Survivor;
use rustix::process::{kill_process, Pid, Signal};
use std::path::Path;
use std::time::{Duration, Instant};

/// Every process other than `exclude` whose cwd is under `roots` or whose
/// environment contains the text of `roots`.
pub fn scan(roots: &Path, exclude: &[u32]) -> Vec<Survivor> {
    let needle = roots.as_os_str().as_encoded_bytes().to_vec();
    let me = std::process::id();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || exclude.contains(&pid) {
            continue;
        }
        let dir = entry.path();
        let reason = if std::fs::read_link(dir.join("cwd"))
            .map(|cwd| cwd.starts_with(roots))
            .unwrap_or(false)
        {
            Some(format!("cwd under {}", roots.display()))
        } else if std::fs::read(dir.join("environ"))
            .map(|env| contains(&env, &needle))
            .unwrap_or(false)
        {
            Some(format!("environment names {}", roots.display()))
        } else {
            None
        };
        if let Some(reason) = reason {
            // A zombie has no cwd or environ to read; anything found is live.
            let cmdline = std::fs::read(dir.join("cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .split('\0')
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            found.push(Survivor {
                pid,
                reason,
                cmdline,
            });
        }
    }
    found.sort_by_key(|s| s.pid);
    found
}

/// Sends SIGKILL to each survivor and waits up to `wait` for them to go.
/// Returns the pids still present afterwards.
pub fn kill_all(survivors: &[Survivor], wait: Duration) -> Vec<u32> {
    for s in survivors {
        if let Some(pid) = Pid::from_raw(s.pid as i32) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
    let deadline = Instant::now() + wait;
    loop {
        let alive: Vec<u32> = survivors
            .iter()
            .map(|s| s.pid)
            .filter(|p| is_live(*p))
            .collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True while `pid` exists and is not a zombie.
fn is_live(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_process_by_cwd_and_by_environment_and_kills_it() {
        let roots = tempfile::tempdir().unwrap();
        let by_cwd = std::process::Command::new("sleep")
            .arg("600")
            .current_dir(roots.path())
            .spawn()
            .unwrap();
        let by_env = std::process::Command::new("sleep")
            .arg("600")
            .env("MARKER_HOME", roots.path())
            .spawn()
            .unwrap();
        let found = scan(roots.path(), &[]);
        let pids: Vec<u32> = found.iter().map(|s| s.pid).collect();
        assert!(pids.contains(&by_cwd.id()), "{found:?}");
        assert!(pids.contains(&by_env.id()), "{found:?}");
        let left = kill_all(&found, Duration::from_secs(5));
        for mut c in [by_cwd, by_env] {
            let _ = c.wait();
        }
        assert!(left.is_empty() || left.iter().all(|p| !is_live(*p)));
        assert!(scan(roots.path(), &[]).is_empty());
    }
}
