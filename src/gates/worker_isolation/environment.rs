//! The `environment-allowlist` check: no harness variable below a worker.

use super::{first_names, role_of, Run, CANARY_NAME, MARKER_NAME};
use crate::evidence::Check;
use crate::isolation::procfs;
use serde_json::json;
use std::collections::BTreeSet;

impl Run<'_> {
    /// `environment-allowlist`: reads `/proc/<pid>/environ` of every process below each worker
    /// (and any other process carrying the run's marker).
    pub(super) fn check_environment(&mut self) {
        let procs = procfs::all();
        // The harness's own variables, as exec'd (`/proc/self/environ`), other
        // than those a worker is given on purpose (PATH, LANG, TZ, HOME, ...):
        // an identical `NAME=value` entry below a worker is a leak, like the
        // canary set at gate start.
        let shared: BTreeSet<String> = self.worker_env_keys(0);
        let harness: BTreeSet<Vec<u8>> = procfs::environ(std::process::id() as i32)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| {
                let name = procfs::env_keys(std::slice::from_ref(e));
                !name.first().is_some_and(|n| shared.contains(n))
            })
            .collect();
        let leaks_in = |env: &[Vec<u8>]| -> Vec<String> {
            let mut names: Vec<String> = env
                .iter()
                .filter(|e| harness.contains(*e))
                .flat_map(|e| procfs::env_keys(std::slice::from_ref(e)))
                .filter(|n| n != CANARY_NAME)
                .collect();
            names.sort();
            names.dedup();
            if procfs::env_contains(env, CANARY_NAME, &self.canary) {
                names.insert(0, CANARY_NAME.to_string());
            }
            names
        };
        let mut rows = Vec::new();
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, w) in self.workers.iter().enumerate() {
            let o = &self.observed[i];
            let allowed: BTreeSet<String> = self.worker_env_keys(i);
            for p in procfs::descendants(&procs, w.child.pid() as i32) {
                seen.insert(p.pid);
                let role = role_of(o, &p, self.backend.new_pid_namespace());
                let Some(env) = procfs::environ(p.pid) else {
                    if procfs::still_running(&p) {
                        problems.push(format!(
                            "worker {}: cannot read /proc/{}/environ of its {role}",
                            w.name, p.pid
                        ));
                    }
                    continue;
                };
                let keys = procfs::env_keys(&env);
                let leaked = leaks_in(&env);
                if !leaked.is_empty() {
                    problems.push(format!(
                        "worker {}: {} of the harness's variables ({}) reached its {role} (pid {})",
                        w.name,
                        leaked.len(),
                        first_names(&leaked),
                        p.pid
                    ));
                }
                let unexpected: Vec<&String> = if role == "worker" {
                    keys.iter().filter(|k| !allowed.contains(*k)).collect()
                } else {
                    Vec::new()
                };
                if !unexpected.is_empty() {
                    problems.push(format!(
                        "worker {}: unexpected variables {unexpected:?} in the worker's environment",
                        w.name
                    ));
                }
                rows.push(json!({
                    "worker": w.name,
                    "pid": p.pid,
                    "role": role,
                    "names": keys,
                    "leaked_from_harness": leaked,
                }));
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
                let leaked = leaks_in(&env);
                if !leaked.is_empty() {
                    problems.push(format!(
                        "process {} carrying the run's marker holds {} of the harness's variables ({})",
                        p.pid,
                        leaked.len(),
                        first_names(&leaked)
                    ));
                }
                rows.push(json!({
                    "worker": null,
                    "pid": p.pid,
                    "role": "marked, outside the worker trees",
                    "names": procfs::env_keys(&env),
                    "leaked_from_harness": leaked,
                }));
            }
        }
        let allow: Vec<String> = self.worker_env_keys(0).into_iter().collect();
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "environment-allowlist",
                    None,
                    format!(
                        "neither the harness canary {CANARY_NAME} nor any other variable of the harness's own \
                         environment (other than the allowlisted names) is in any of the {} processes of the two workers' \
                         trees (workers, job children, grandchildren); each worker's environment holds only \
                         allowlisted variables",
                        rows.len()
                    ),
                )
            } else {
                Check::fail(
                    "environment-allowlist",
                    None,
                    format!(
                        "{}; a worker and everything it starts must get only the allowlisted environment, \
                         never the harness's: fix what copied it",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({
                "canary_variable": CANARY_NAME,
                "harness_variables_watched": harness.len(),
                "allowlist": allow,
                "processes": rows,
            })),
        );
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
