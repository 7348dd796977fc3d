//! Observing `environment-allowlist`: the environment of every process
//! below each worker, by variable name, and which of the harness's own
//! `NAME=value` entries reached it (values never leave the OS).

use super::decide::{EnvRow, EnvironmentObs};
use super::{role_of, Run, CANARY_NAME, MARKER_NAME};
use crate::process::procfs;
use std::collections::BTreeSet;

impl Run<'_> {
    /// Reads `/proc/<pid>/environ` of every process below each worker (and
    /// any other process carrying the run's marker).
    pub(super) fn observe_environment(&mut self) {
        let procs = procfs::all();
        // The harness's own variables, as exec'd (`/proc/self/environ`), other
        // than those a worker is given on purpose (PATH, LANG, TZ, HOME, ...):
        // an identical `NAME=value` entry below a worker is a leak, like the
        // canary set at gate start.
        let harness = harness_environ(&self.worker_env_keys(0));
        let leaks_in = |env: &[Vec<u8>]| leaked_names(env, &harness, &self.canary);
        let mut rows = Vec::new();
        let mut unreadable = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, w) in self.workers.iter().enumerate() {
            let o = &self.observed[i];
            let allowed: BTreeSet<String> = self.worker_env_keys(i);
            for p in procfs::descendants(&procs, w.child.pid() as i32) {
                seen.insert(p.pid);
                let role = role_of(o, &p, self.backend.new_pid_namespace());
                let Some(env) = procfs::environ(p.pid) else {
                    if procfs::still_running(&p) {
                        unreadable.push(EnvRow {
                            worker: Some(w.name.to_string()),
                            pid: p.pid,
                            role: role.to_string(),
                            names: Vec::new(),
                            leaked_from_harness: Vec::new(),
                            unexpected: Vec::new(),
                        });
                    }
                    continue;
                };
                let keys = procfs::env_keys(&env);
                let unexpected: Vec<String> = if role == "worker" {
                    keys.iter()
                        .filter(|k| !allowed.contains(*k))
                        .cloned()
                        .collect()
                } else {
                    Vec::new()
                };
                rows.push(EnvRow {
                    worker: Some(w.name.to_string()),
                    pid: p.pid,
                    role: role.to_string(),
                    leaked_from_harness: leaks_in(&env),
                    names: keys,
                    unexpected,
                });
            }
        }
        // Anything else carrying the run's marker (an escaped process) is read too.
        let marker = format!("{MARKER_NAME}={}", self.marker);
        for p in procs.values() {
            if seen.contains(&p.pid) || p.exited() {
                continue;
            }
            let Some(env) = procfs::environ(p.pid) else {
                continue;
            };
            if env.iter().any(|e| e.as_slice() == marker.as_bytes()) {
                rows.push(EnvRow {
                    worker: None,
                    pid: p.pid,
                    role: "marked, outside the worker trees".into(),
                    leaked_from_harness: leaks_in(&env),
                    names: procfs::env_keys(&env),
                    unexpected: Vec::new(),
                });
            }
        }
        self.obs.environment = Some(EnvironmentObs {
            canary_variable: CANARY_NAME.into(),
            harness_variables_watched: harness.len(),
            allowlist: self.worker_env_keys(0).into_iter().collect(),
            processes: rows,
            unreadable,
        });
    }

    /// Variable names a worker may have: those the harness gave it, plus PWD
    /// under bwrap (bwrap sets it for `--chdir`).
    pub(super) fn worker_env_keys(&self, i: usize) -> BTreeSet<String> {
        let spec = &self.specs[i];
        let mut keys: BTreeSet<String> = self
            .ctx
            .child_env(&spec.home, &spec.tmp)
            .into_keys()
            .collect();
        for k in [
            "VCC_WORKER_NAME",
            "VCC_WORKER_ID",
            "VCC_WORKER_TOKEN_FILE",
            "VCC_WORKER_DAEMON_ID",
            "VCC_WORKER_DATA",
            MARKER_NAME,
        ] {
            keys.insert(k.to_string());
        }
        if self.backend.new_pid_namespace() {
            keys.insert("PWD".into());
        }
        keys
    }
}

/// The harness's own environment entries (`NAME=value`, as exec'd), but
/// those named in `shared`, which a worker is given on purpose.
fn harness_environ(shared: &BTreeSet<String>) -> BTreeSet<Vec<u8>> {
    procfs::environ(std::process::id() as i32)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            let name = procfs::env_keys(std::slice::from_ref(e));
            !name.first().is_some_and(|n| shared.contains(n))
        })
        .collect()
}

/// The names of `env`'s entries identical to one of the `harness`'s,
/// sorted, the canary first when `env` holds it with the run's `canary`
/// value.
fn leaked_names(env: &[Vec<u8>], harness: &BTreeSet<Vec<u8>>, canary: &str) -> Vec<String> {
    let mut names: Vec<String> = env
        .iter()
        .filter(|e| harness.contains(*e))
        .flat_map(|e| procfs::env_keys(std::slice::from_ref(e)))
        .filter(|n| n != CANARY_NAME)
        .collect();
    names.sort();
    names.dedup();
    if procfs::env_contains(env, CANARY_NAME, canary) {
        names.insert(0, CANARY_NAME.to_string());
    }
    names
}
