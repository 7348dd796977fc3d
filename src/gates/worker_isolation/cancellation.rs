//! Observing `cancel-quiescence` and `independent-cancellation` (A's job
//! cancelled mid-run, with the OS as witness of its process group, while
//! B's job runs on) and `same-ids-separate-routing` (which events reached
//! which worker). The decisions are in [`super::decide`].

use super::decide::{CancelObs, IndependenceObs, JobA, JobB, ProcRow, RoutingObs, RoutingRow};
use super::worker::{wait_for, WorkerProc};
use super::{
    group_answers_signal_0, proc_row, Run, CONVERSATION_ID, JOB_EVENTS, JOB_TIMEOUT,
    QUIESCE_TIMEOUT,
};
use crate::process;
use crate::process::procfs::{self, ProcInfo};
use crate::process::survey;
use serde_json::json;
use std::time::{Duration, Instant};

/// What both jobs had done when A's cancel was sent.
struct AtCancel {
    /// A's outputs so far.
    a_outputs: usize,
    /// A's job had finished already (too late a cancel).
    a_finished: bool,
    /// B's outputs so far.
    b_outputs: usize,
    /// B's job was still running (not finished, not all its outputs).
    b_running: bool,
}

impl Run<'_> {
    /// Cancels A's job mid-run, watches its process group in `/proc`,
    /// escalates if it lingers, and lets B's job finish.
    pub(super) fn cancel_and_finish(&mut self) -> Result<(), String> {
        self.workers[1].pump(Duration::ZERO);
        self.workers[0].pump(Duration::ZERO);
        let b_outputs_at_cancel = self.workers[1].outputs().count();
        let at_cancel = AtCancel {
            a_outputs: self.workers[0].outputs().count(),
            a_finished: self.workers[0].finished.is_some(),
            b_outputs: b_outputs_at_cancel,
            b_running: self.workers[1].finished.is_none()
                && (b_outputs_at_cancel as u64) < JOB_EVENTS,
        };
        self.workers[0].send(&json!({"cmd": "cancel", "job": "job-a"}))?;
        let cancel_sent = Instant::now();
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "worker a's `job.cancelled`",
            |ws| ws[0].cancelled.is_some(),
        )?;
        let acknowledged_ms = cancel_sent.elapsed().as_millis() as u64;
        self.observe_a_stopping(acknowledged_ms);
        self.observe_b_finishing(&at_cancel);
        for w in self.workers.iter_mut() {
            w.send(&json!({"cmd": "status"}))?;
        }
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "both workers' `status`",
            |ws| ws.iter().all(|w| !w.statuses.is_empty()),
        )?;
        Ok(())
    }

    /// A's job after its cancel was acknowledged (`acknowledged_ms` after it
    /// was sent): the OS, not the worker, says whether it stopped. Waits for
    /// its process group to go quiet, escalates (TERM, then KILL) if it
    /// lingers, and records what it saw as `cancel`.
    fn observe_a_stopping(&mut self, acknowledged_ms: u64) {
        let a = self.observed[0].clone();
        let (child, gc) = (a.child.expect("resolved"), a.grandchild.expect("resolved"));
        let q = quiesce(&child, &gc, QUIESCE_TIMEOUT, &mut self.workers);
        let mut escalation = Vec::new();
        if !q.quiet {
            let members = procfs::live_group_members(child.pgid);
            let refs: Vec<&ProcInfo> = members.iter().collect();
            escalation = survey::stop_processes(&refs, process::GRACE);
        }
        let needed_kill: Vec<i32> = escalation
            .iter()
            .filter(|s| s.stopped_by.contains("KILL"))
            .map(|s| s.pid)
            .collect();
        let escaped: Vec<ProcRow> = [&child, &gc]
            .iter()
            .filter(|p| procfs::still_running(p))
            .filter_map(|p| procfs::read(p.pid))
            .filter(|now| now.pgid != child.pgid)
            .map(|p| proc_row(&p))
            .collect();
        self.obs.cancel = Some(CancelObs {
            worker: "a".into(),
            job_pgid: child.pgid,
            child: proc_row(&child),
            grandchild: proc_row(&gc),
            worker_acknowledged_ms: acknowledged_ms,
            worker_state: self.workers[0].cancelled.clone().flatten(),
            quiescent: q.quiet,
            waited_ms: q.waited_ms,
            group_answers_signal_0: group_answers_signal_0(child.pgid),
            live_after_wait: q.live,
            escalation,
            needed_kill,
            escaped_group: escaped,
        });
    }

    /// B runs on to its expected output: waits for its job to end, stops
    /// what its group left (unrecorded: a lingering group is recorded as
    /// not quiescent), and records both jobs' outputs as `independence`.
    fn observe_b_finishing(&mut self, at_cancel: &AtCancel) {
        let b_result = wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "worker b's `job.finished`",
            |ws| ws[1].finished.is_some() || ws[1].failed.is_some(),
        );
        let b = self.observed[1].clone();
        let (bchild, bgc) = (b.child.expect("resolved"), b.grandchild.expect("resolved"));
        let bq = quiesce(&bchild, &bgc, QUIESCE_TIMEOUT, &mut self.workers);
        if !bq.quiet {
            let members = procfs::live_group_members(bchild.pgid);
            let refs: Vec<&ProcInfo> = members.iter().collect();
            survey::stop_processes(&refs, process::GRACE);
        }
        let bw = &self.workers[1];
        let seqs: Vec<u64> = bw.outputs().filter_map(|e| e.data.seq).collect();
        let completion: Vec<Option<String>> = bw
            .events
            .iter()
            .filter(|e| e.kind == "run.completed")
            .map(|e| e.data.output.clone())
            .collect();
        self.obs.independence = Some(IndependenceObs {
            a: JobA {
                outputs_at_cancel: at_cancel.a_outputs,
                outputs_total: self.workers[0].outputs().count(),
                finished_at_cancel: at_cancel.a_finished,
                completed: self.workers[0]
                    .events
                    .iter()
                    .any(|e| e.kind == "run.completed"),
                state: self.workers[0].cancelled.clone().flatten(),
            },
            b: JobB {
                running_at_cancel: at_cancel.b_running,
                outputs_at_cancel: at_cancel.b_outputs,
                outputs_total: seqs.len(),
                seqs,
                expected_outputs: JOB_EVENTS,
                completion,
                expected_completion: format!(
                    "fixture reply {} after {JOB_EVENTS} events",
                    self.specs[1].nonce
                ),
                finish_error: b_result.err(),
                failed: bw.failed.clone(),
                job_pgid: bchild.pgid,
                group_quiescent_after_finish: bq.quiet,
                live_after_wait: bq.live,
                waited_ms: bq.waited_ms,
            },
        });
    }

    /// Same display and conversation id: which events reached which worker.
    pub(super) fn observe_routing(&mut self) {
        let mut rows = Vec::new();
        for (i, w) in self.workers.iter().enumerate() {
            let own = &self.specs[i];
            let other = &self.specs[1 - i];
            let ready = w.ready.as_ref().expect("ready");
            let o = &self.observed[i];
            let started_job = w
                .events
                .iter()
                .find(|e| e.kind == "run.started")
                .and_then(|e| e.data.daemon_job_id.clone());
            let fixture: Vec<_> = w
                .events
                .iter()
                .filter(|e| e.kind == "run.output" || e.kind == "run.completed")
                .collect();
            let foreign = fixture
                .iter()
                .filter(|e| e.data.nonce.as_deref() == Some(other.nonce.as_str()))
                .count();
            let wrong = fixture
                .iter()
                .filter(|e| {
                    e.data.nonce.as_deref() != Some(own.nonce.as_str())
                        || e.data.daemon_job_id != started_job
                        || (e.kind == "run.output"
                            && (e.data.conversation_id.as_deref() != Some(CONVERSATION_ID)
                                || e.data.pid != w.child_pid()))
                })
                .count();
            let labelled = fixture.iter().all(|e| {
                e.data
                    .label
                    .as_deref()
                    .is_some_and(|l| l.contains("local protocol fixture"))
            });
            rows.push(RoutingRow {
                worker: w.name.to_string(),
                status_after_jobs: w.statuses.last().cloned(),
                daemon_id: ready.daemon_id.clone(),
                hub_daemons: ready.daemons.clone(),
                conversation_id: CONVERSATION_ID.into(),
                nonce: own.nonce.clone(),
                daemon_job_id: started_job,
                events: w.events.len(),
                fixture_events: fixture.len(),
                foreign_events: foreign,
                mismatched_events: wrong,
                labelled,
                child_pid_in_namespace: w.child_pid(),
                child_pgid_in_namespace: w.outputs().find_map(|e| e.data.pgid),
                child_host_pid: o.child.as_ref().map(|p| p.pid),
                grandchild_host_pid: o.grandchild.as_ref().map(|p| p.pid),
                job_pgid: o.child.as_ref().map(|p| p.pgid),
            });
        }
        self.obs.routing = Some(RoutingObs {
            workers: rows,
            fixture: "local protocol fixture, not a vendor reply".into(),
        });
    }
}

/// Result of waiting for a job's processes to stop.
struct Quiescence {
    quiet: bool,
    waited_ms: u64,
    live: Vec<i32>,
}

/// Waits up to `timeout` until `child` and `grandchild` no longer run and the
/// child's process group has no live member; keeps the workers' output
/// flowing meanwhile.
fn quiesce(
    child: &ProcInfo,
    grandchild: &ProcInfo,
    timeout: Duration,
    workers: &mut [WorkerProc],
) -> Quiescence {
    let started = Instant::now();
    loop {
        let mut live: Vec<i32> = procfs::live_group_members(child.pgid)
            .iter()
            .map(|p| p.pid)
            .collect();
        for p in [child, grandchild] {
            if procfs::still_running(p) && !live.contains(&p.pid) {
                live.push(p.pid);
            }
        }
        live.sort_unstable();
        let waited_ms = started.elapsed().as_millis() as u64;
        if live.is_empty() {
            return Quiescence {
                quiet: true,
                waited_ms,
                live,
            };
        }
        if started.elapsed() >= timeout || crate::interrupt::requested() {
            return Quiescence {
                quiet: false,
                waited_ms,
                live,
            };
        }
        for w in workers.iter_mut() {
            w.pump(Duration::ZERO);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
