//! Observing the two workers as processes and listeners: the OS's view of
//! each, the hub each imported, the harness's own `daemon.hello` with each
//! token at each listener, and whether one worker can see the other's root.
//! The decisions are in [`super::decide`].

use super::decide::{
    HubObs, HubRow, PeekRow, ProcessesObs, TokenProbe, VisibilityObs, WorkerProcess,
};
use super::token_probe;
use super::worker::wait_for;
use super::JOB_TIMEOUT;
use super::{canonical, Run, NAMES};
use crate::process::procfs;
use serde_json::json;
use std::path::Path;

impl Run<'_> {
    /// The OS view of both workers (`separate-processes`) and the hub each
    /// imported (`sdk-daemon-hub`).
    pub(super) fn observe_processes(&mut self) {
        let harness_pgid = procfs::read(std::process::id() as i32).map(|p| p.pgid);
        let harness_ns = procfs::pid_namespace(std::process::id() as i32);
        let mut workers = Vec::new();
        for (i, w) in self.workers.iter().enumerate() {
            let ready = w.ready.as_ref().expect("ready");
            let spawn = self.observed[i].spawn.clone();
            let worker = self.observed[i].worker.clone().expect("resolved");
            workers.push(WorkerProcess {
                worker: w.name.to_string(),
                spawned_pid: w.child.pid() as i32,
                spawned_pgid: spawn.as_ref().map(|s| s.pgid),
                worker_host_pid: worker.pid,
                worker_pid_in_namespace: worker.inner_pid(),
                worker_pgid: worker.pgid,
                worker_sid: worker.sid,
                pid_namespace: procfs::pid_namespace(worker.pid),
                hub_endpoint: ready.endpoint.clone(),
                hub_port: ready.port,
            });
        }
        self.obs.processes = Some(ProcessesObs {
            backend: self.backend.name().to_string(),
            new_pid_namespace: self.backend.new_pid_namespace(),
            harness_pid: std::process::id() as i32,
            harness_pgid,
            harness_pid_namespace: harness_ns,
            workers,
        });

        let want_pkg = canonical(&self.sdk_package);
        let rows = self
            .workers
            .iter()
            .map(|w| {
                let r = w.ready.as_ref().expect("ready");
                HubRow {
                    worker: w.name.to_string(),
                    sdk_version: r.sdk_version.clone(),
                    sdk_package: r.sdk_package.clone(),
                    hub_module: r.hub_module.clone(),
                    hub_class: r.hub_class.clone(),
                    client_class: r.client_class.clone(),
                    hub_file: r.hub_file.clone(),
                    package_is_verified: canonical(Path::new(&r.sdk_package)) == want_pkg,
                    hub_file_in_verified: canonical(Path::new(&r.hub_file)).starts_with(&want_pkg),
                }
            })
            .collect();
        self.obs.hub = Some(HubObs {
            verified_package: self.sdk_package.display().to_string(),
            verified_version: self.ctx.sdk.version.clone(),
            workers: rows,
        });
    }

    /// The harness's own `daemon.hello` with each token (and none) at each
    /// listener (`listener-token-separation`, `listener-own-token`).
    pub(super) fn observe_tokens(&mut self) {
        let ports: Vec<u16> = self
            .workers
            .iter()
            .map(|w| w.ready.as_ref().expect("ready").port)
            .collect();
        let mut probes = Vec::new();
        let mut n = 0;
        for (li, listener) in NAMES.iter().enumerate() {
            let candidates: [(&str, &str); 3] = [
                (NAMES[0], self.specs[0].token.as_str()),
                (NAMES[1], self.specs[1].token.as_str()),
                ("none", ""),
            ];
            for (token_of, token) in candidates {
                n += 1;
                let daemon_id = format!("vcc-token-probe-{n}");
                let result = token_probe::hello(ports[li], &daemon_id, token);
                probes.push(TokenProbe {
                    listener: listener.to_string(),
                    port: ports[li],
                    token_of: token_of.to_string(),
                    daemon_id,
                    result,
                });
            }
        }
        self.obs.tokens = Some(probes);
    }

    /// Each worker tries to read the other's data root (`root-visibility`).
    pub(super) fn observe_root_visibility(&mut self) -> Result<(), String> {
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
        let peeks = self
            .workers
            .iter()
            .zip(NAMES.iter().rev())
            .map(|(w, other)| PeekRow {
                worker: w.name.to_string(),
                tried_root_of: other.to_string(),
                answer: w.peeks[0].clone(),
            })
            .collect();
        self.obs.visibility = Some(VisibilityObs {
            backend: self.backend.name().to_string(),
            bwrap: matches!(self.backend, crate::isolation::Backend::Bwrap(_)),
            peeks,
        });
        Ok(())
    }
}
