//! Checks on the two workers as processes and listeners: separate processes
//! and process groups, the SDK's own hub, listener/token separation, and
//! whether one worker can see the other's root.

use super::token_probe::{self, HelloOutcome};
use super::worker::wait_for;
use super::JOB_TIMEOUT;
use super::{canonical, describe_outcome, Run, GATE, NAMES};
use crate::evidence::Check;
use crate::isolation::procfs;
use crate::isolation::Backend;
use serde_json::{json, Value};
use std::path::Path;

impl Run<'_> {
    /// `separate-processes` and `sdk-daemon-hub`: the OS view of both workers, and the hub each
    /// imported.
    pub(super) fn check_processes(&mut self) {
        let harness_pgid = procfs::read(std::process::id() as i32).map(|p| p.pgid);
        let harness_ns = procfs::pid_namespace(std::process::id() as i32);
        let mut rows = Vec::new();
        let mut problems = Vec::new();
        for (i, w) in self.workers.iter().enumerate() {
            let ready = w.ready.as_ref().expect("ready");
            let spawn = self.observed[i].spawn.clone();
            let worker = self.observed[i].worker.clone().expect("resolved");
            let ns = procfs::pid_namespace(worker.pid);
            rows.push(json!({
                "worker": w.name,
                "spawned_pid": w.child.pid(),
                "spawned_pgid": spawn.as_ref().map(|s| s.pgid),
                "worker_host_pid": worker.pid,
                "worker_pid_in_namespace": worker.inner_pid(),
                "worker_pgid": worker.pgid,
                "worker_sid": worker.sid,
                "pid_namespace": ns,
                "hub_endpoint": ready.endpoint,
                "hub_port": ready.port,
            }));
            if spawn.as_ref().map(|s| s.pgid) != Some(w.child.pid() as i32) {
                problems.push(format!(
                    "worker {}'s spawned process {} does not lead its own process group",
                    w.name,
                    w.child.pid()
                ));
            }
            if Some(worker.pgid) == harness_pgid {
                problems.push(format!(
                    "worker {} shares the harness's process group",
                    w.name
                ));
            }
            if self.backend.new_pid_namespace() && ns == harness_ns {
                problems.push(format!(
                    "worker {} runs in the harness's pid namespace",
                    w.name
                ));
            }
        }
        let (a, b) = (
            self.observed[0].worker.as_ref().expect("resolved"),
            self.observed[1].worker.as_ref().expect("resolved"),
        );
        if a.pid == b.pid {
            problems.push("both workers are one process".into());
        }
        if a.pgid == b.pgid {
            problems.push(format!("both workers are in process group {}", a.pgid));
        }
        let ports: Vec<u16> = self
            .workers
            .iter()
            .filter_map(|w| w.ready.as_ref().map(|r| r.port))
            .collect();
        if ports.first() == ports.get(1) {
            problems.push("both hubs report the same port".into());
        }
        if self.backend.new_pid_namespace()
            && procfs::pid_namespace(a.pid) == procfs::pid_namespace(b.pid)
        {
            problems.push("both workers share one pid namespace".into());
        }
        let observed = json!({
            "backend": self.backend.name(),
            "harness_pid": std::process::id(),
            "harness_pgid": harness_pgid,
            "workers": rows,
        });
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "separate-processes",
                    None,
                    format!(
                        "workers a (pid {}) and b (pid {}) are separate processes in separate process groups \
                         ({} and {}), each hub on its own loopback port ({backend})",
                        a.pid,
                        b.pid,
                        a.pgid,
                        b.pgid,
                        backend = self.backend.name()
                    ),
                )
            } else {
                Check::fail(
                    "separate-processes",
                    None,
                    format!(
                        "expected two separate worker processes, each in its own process group: {}; see \
                         DIR/logs/{GATE}/worker-*.cmd",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(observed),
        );

        let mut hub_rows = Vec::new();
        let mut hub_problems = Vec::new();
        let want_pkg = canonical(&self.sdk_package);
        for w in &self.workers {
            let r = w.ready.as_ref().expect("ready");
            hub_rows.push(json!({
                "worker": w.name,
                "sdk_version": r.sdk_version,
                "sdk_package": r.sdk_package,
                "hub_module": r.hub_module,
                "hub_class": r.hub_class,
                "client_class": r.client_class,
                "hub_file": r.hub_file,
            }));
            if canonical(Path::new(&r.sdk_package)) != want_pkg
                || !canonical(Path::new(&r.hub_file)).starts_with(&want_pkg)
            {
                hub_problems.push(format!(
                    "worker {} imported the hub from {} (package {}), expected the verified SDK at {}",
                    w.name,
                    r.hub_file,
                    r.sdk_package,
                    self.sdk_package.display()
                ));
            }
            if r.hub_module != "langbot_plugin.api.agent_tools.daemon"
                || r.hub_class != "AgentRuntimeDaemonHub"
                || r.client_class != "AgentRuntimeDaemonClient"
            {
                hub_problems.push(format!(
                    "worker {} used {}.{} / {}, expected langbot_plugin.api.agent_tools.daemon.AgentRuntimeDaemonHub \
                     and AgentRuntimeDaemonClient",
                    w.name, r.hub_module, r.hub_class, r.client_class
                ));
            }
            if let Some(v) = &self.ctx.sdk.version {
                if &r.sdk_version != v {
                    hub_problems.push(format!(
                        "worker {} saw langbot-plugin {}, sdk-record verified {v}",
                        w.name, r.sdk_version
                    ));
                }
            }
        }
        self.checks.push(
            Check::from_bool(
                "sdk-daemon-hub",
                None,
                hub_problems.is_empty(),
                if hub_problems.is_empty() {
                    format!(
                        "both workers run the verified SDK's own daemon hub and daemon client from {}",
                        self.sdk_package.display()
                    )
                } else {
                    format!(
                        "{}; the workers must import the verified SDK only (check sdk-shadow and the interpreter)",
                        hub_problems.join("; ")
                    )
                },
            )
            .with_observed(json!({"workers": hub_rows})),
        );
    }

    /// `listener-token-separation` and `listener-own-token`: the harness's own `daemon.hello`
    /// with each token at each listener.
    pub(super) fn check_tokens(&mut self) {
        let ports: Vec<u16> = self
            .workers
            .iter()
            .map(|w| w.ready.as_ref().expect("ready").port)
            .collect();
        let mut cross = Vec::new();
        let mut own = Vec::new();
        let mut cross_problems = Vec::new();
        let mut own_problems = Vec::new();
        let mut n = 0;
        for (li, listener) in NAMES.iter().enumerate() {
            let candidates: [(&str, &str); 3] = [
                (NAMES[0], self.specs[0].token.as_str()),
                (NAMES[1], self.specs[1].token.as_str()),
                ("none", ""),
            ];
            for (token_of, token) in candidates {
                n += 1;
                let probe_id = format!("vcc-token-probe-{n}");
                let outcome = token_probe::hello(ports[li], &probe_id, token);
                let row = json!({
                    "listener": listener,
                    "port": ports[li],
                    "token_of": token_of,
                    "daemon_id": probe_id,
                    "result": outcome,
                });
                if token_of == *listener {
                    if !matches!(outcome, HelloOutcome::Accepted { .. }) {
                        own_problems.push(format!(
                            "worker {listener}'s own token at its listener (port {}): {}",
                            ports[li],
                            describe_outcome(&outcome)
                        ));
                    }
                    own.push(row);
                } else {
                    let refused = matches!(
                        outcome,
                        HelloOutcome::Refused {
                            close_code: 1008,
                            ..
                        }
                    );
                    if !refused {
                        cross_problems.push(format!(
                            "{} at worker {listener}'s listener (port {}): expected refusal with close code 1008, found {}",
                            if token_of == "none" {
                                "an empty token".to_string()
                            } else {
                                format!("worker {token_of}'s token")
                            },
                            ports[li],
                            describe_outcome(&outcome)
                        ));
                    }
                    cross.push(row);
                }
            }
        }
        self.checks.push(
            if cross_problems.is_empty() {
                Check::pass(
                    "listener-token-separation",
                    None,
                    "A's token at B's listener, B's token at A's listener and an empty token at either were \
                     refused with close code 1008 (invalid token)",
                )
            } else {
                Check::fail(
                    "listener-token-separation",
                    None,
                    format!(
                        "{}; each worker's hub must accept only its own token: start it with its own \
                         non-empty token (an empty token disables the SDK hub's check)",
                        cross_problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({"probes": cross})),
        );
        self.checks.push(
            if own_problems.is_empty() {
                Check::pass(
                    "listener-own-token",
                    None,
                    "positive control: each worker's own token at its own listener was answered with daemon.ready",
                )
            } else {
                Check::fail(
                    "listener-own-token",
                    None,
                    format!(
                        "{}; without an accepted own token the refusals prove nothing: check the worker's \
                         hub and DIR/logs/{GATE}/worker-*.stderr",
                        own_problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({"probes": own})),
        );
    }

    /// `root-visibility`: each worker tries to read the other's data root.
    pub(super) fn check_root_visibility(&mut self) -> Result<(), String> {
        for i in 0..2 {
            let target = self.specs[1 - i].data.display().to_string();
            self.workers[i].send(&json!({"cmd": "peek", "path": target}))?;
        }
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "both workers' `peek`",
            |ws| ws.iter().all(|w| !w.peeks.is_empty()),
        )?;
        let peeks: Vec<Value> = self
            .workers
            .iter()
            .zip(NAMES.iter().rev())
            .map(|(w, other)| json!({"worker": w.name, "tried_root_of": other, "answer": w.peeks[0]}))
            .collect();
        let readable: Vec<&str> = self
            .workers
            .iter()
            .filter(|w| w.peeks[0].readable)
            .map(|w| w.name)
            .collect();
        let observed = json!({"backend": self.backend.name(), "peeks": peeks});
        let check = match (&self.backend, readable.is_empty()) {
            (_, true) => Check::pass(
                "root-visibility",
                None,
                "neither worker could list or read the other's data root",
            ),
            (Backend::Bwrap(_), false) => Check::fail(
                "root-visibility",
                None,
                format!(
                    "worker(s) {readable:?} could read the other worker's root inside bwrap; only a worker's own \
                     root may be bound into its sandbox"
                ),
            ),
            (Backend::Process, false) => Check::warn(
                "root-visibility",
                None,
                format!(
                    "process backend: worker(s) {readable:?} could read the other worker's root (same user, same \
                     mount namespace); roots are private by environment only. Use --isolation bwrap to hide them"
                ),
            ),
        };
        self.checks.push(check.with_observed(observed));
        Ok(())
    }
}
