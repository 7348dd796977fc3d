//! Cancelling A's job mid-run, with the OS as witness of its process group,
//! while B's job runs on; then which events reached which worker.

use super::worker::{wait_for, WorkerProc};
use super::{
    group_answers_signal_0, proc_json, Run, CONVERSATION_ID, DISPLAY_ID, GATE, JOB_EVENTS,
    JOB_TIMEOUT, QUIESCE_TIMEOUT,
};
use crate::evidence::Check;
use crate::isolation::procfs::{self, ProcInfo};
use crate::isolation::survey;
use crate::process;
use serde_json::json;
use std::time::{Duration, Instant};

impl Run<'_> {
    /// `cancel-quiescence` and `independent-cancellation`: cancels A's job mid-run, watches its
    /// process group in `/proc`, escalates if it lingers, and lets B's job finish.
    pub(super) fn cancel_and_finish(&mut self) -> Result<(), String> {
        self.workers[1].pump(Duration::ZERO);
        self.workers[0].pump(Duration::ZERO);
        let a_outputs_at_cancel = self.workers[0].outputs().count();
        let a_finished_at_cancel = self.workers[0].finished.is_some();
        let b_outputs_at_cancel = self.workers[1].outputs().count();
        let b_running_at_cancel =
            self.workers[1].finished.is_none() && (b_outputs_at_cancel as u64) < JOB_EVENTS;
        self.workers[0].send(&json!({"cmd": "cancel", "job": "job-a"}))?;
        let cancel_sent = Instant::now();
        wait_for(
            &mut self.workers,
            JOB_TIMEOUT,
            "worker a's `job.cancelled`",
            |ws| ws[0].cancelled.is_some(),
        )?;
        let acknowledged_ms = cancel_sent.elapsed().as_millis() as u64;

        // A's job: the OS, not the worker, says whether it stopped.
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
        let escaped: Vec<ProcInfo> = [&child, &gc]
            .iter()
            .filter(|p| procfs::still_running(p))
            .filter_map(|p| procfs::read(p.pid))
            .filter(|now| now.pgid != child.pgid)
            .collect();
        let observed = json!({
            "worker": "a",
            "job_pgid": child.pgid,
            "child": proc_json(&child),
            "grandchild": proc_json(&gc),
            "worker_acknowledged_ms": acknowledged_ms,
            "worker_state": self.workers[0].cancelled.clone().flatten(),
            "quiescent": q.quiet,
            "waited_ms": q.waited_ms,
            "group_answers_signal_0": group_answers_signal_0(child.pgid),
            "live_after_wait": q.live,
            "escalation": escalation,
            "needed_kill": needed_kill,
            "escaped_group": escaped.iter().map(proc_json).collect::<Vec<_>>(),
        });
        self.checks.push(
            if q.quiet {
                Check::pass(
                    "cancel-quiescence",
                    None,
                    format!(
                        "worker a's cancelled job stopped: its process group {} (child {}, grandchild {}) \
                         had no live member {} ms after the cancellation, as /proc shows",
                        child.pgid, child.pid, gc.pid, q.waited_ms
                    ),
                )
            } else {
                let mut what = vec![format!(
                    "worker a's job (process group {}: child {}, grandchild {}) still had live processes {:?} \
                     {} s after its cancellation",
                    child.pgid,
                    child.pid,
                    gc.pid,
                    q.live,
                    QUIESCE_TIMEOUT.as_secs()
                )];
                if !escalation.is_empty() {
                    what.push(format!(
                        "the gate sent TERM to the group's live members; {}",
                        if needed_kill.is_empty() {
                            "TERM stopped them".to_string()
                        } else {
                            format!("pids {needed_kill:?} ignored TERM and needed KILL")
                        }
                    ));
                }
                for p in &escaped {
                    what.push(format!(
                        "pid {} left the job's process group (now group {}, session {}) and still runs; the \
                         end-of-run survey looks for it",
                        p.pid, p.pgid, p.sid
                    ));
                }
                Check::fail(
                    "cancel-quiescence",
                    None,
                    format!(
                        "{}; a cancelled job must stop its whole process group: fix the daemon's handling \
                         of the hub's run.cleanup",
                        what.join("; ")
                    ),
                )
            }
            .with_observed(observed),
        );

        // B runs on to its expected output.
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
        let expected_seqs: Vec<u64> = (0..JOB_EVENTS).collect();
        let expected_output = format!(
            "fixture reply {} after {JOB_EVENTS} events",
            self.specs[1].nonce
        );
        let completed: Vec<Option<String>> = bw
            .events
            .iter()
            .filter(|e| e.kind == "run.completed")
            .map(|e| e.data.output.clone())
            .collect();
        let a_completed = self.workers[0]
            .events
            .iter()
            .any(|e| e.kind == "run.completed");
        let mut problems = Vec::new();
        if let Err(e) = &b_result {
            problems.push(format!("worker b's job did not finish: {e}"));
        }
        if let Some(err) = &bw.failed {
            problems.push(format!("worker b's job failed: {err}"));
        }
        if seqs != expected_seqs {
            problems.push(format!(
                "worker b's outputs had sequence {} numbers, expected 0..{JOB_EVENTS} in order",
                seqs.len()
            ));
        }
        if completed != vec![Some(expected_output.clone())] {
            problems.push(format!(
                "worker b's completion was {completed:?}, expected [{expected_output:?}]"
            ));
        }
        if !bq.quiet {
            problems.push(format!(
                "worker b's finished job left live processes {:?} in group {}",
                bq.live, bchild.pgid
            ));
        }
        if !b_running_at_cancel {
            problems.push(format!(
                "worker b's job had already finished ({b_outputs_at_cancel} outputs) when a's was cancelled, \
                 so independence was not observed"
            ));
        }
        if a_finished_at_cancel || a_completed || a_outputs_at_cancel as u64 >= JOB_EVENTS {
            problems.push("worker a's job was not mid-run when cancelled".into());
        }
        let observed = json!({
            "a": {"outputs_at_cancel": a_outputs_at_cancel, "outputs_total": self.workers[0].outputs().count(), "completed": a_completed, "state": self.workers[0].cancelled.clone().flatten()},
            "b": {
                "running_at_cancel": b_running_at_cancel,
                "outputs_at_cancel": b_outputs_at_cancel,
                "outputs_total": seqs.len(),
                "expected_outputs": JOB_EVENTS,
                "completion": completed,
                "expected_completion": expected_output,
                "job_pgid": bchild.pgid,
                "group_quiescent_after_finish": bq.quiet,
                "waited_ms": bq.waited_ms,
            },
        });
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "independent-cancellation",
                    None,
                    format!(
                        "cancelling worker a's job mid-run ({a_outputs_at_cancel} of {JOB_EVENTS} outputs) left \
                         worker b's job running ({b_outputs_at_cancel} outputs at that moment) to its expected \
                         output, all {JOB_EVENTS} events in order; b's job group then emptied"
                    ),
                )
            } else {
                Check::fail(
                    "independent-cancellation",
                    None,
                    format!(
                        "{}; cancelling one worker's job must not touch the other's: see \
                         DIR/logs/{GATE}/worker-b.stdout",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(observed),
        );
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

    /// `same-ids-separate-routing`: same display and conversation id, each job's events at its
    /// own worker only.
    pub(super) fn check_routing(&mut self) {
        let mut problems = Vec::new();
        let mut rows = Vec::new();
        for (i, w) in self.workers.iter().enumerate() {
            let own = &self.specs[i];
            let other = &self.specs[1 - i];
            let ready = w.ready.as_ref().expect("ready");
            let o = &self.observed[i];
            if ready.daemon_id != DISPLAY_ID || ready.daemons != [DISPLAY_ID] {
                problems.push(format!(
                    "worker {}'s hub had daemons {:?} (client id {}), expected exactly [{DISPLAY_ID}]",
                    w.name, ready.daemons, ready.daemon_id
                ));
            }
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
            if foreign > 0 {
                problems.push(format!(
                    "worker {} received {foreign} event(s) of worker {}'s job",
                    w.name, other.name
                ));
            }
            if wrong > 0 {
                problems.push(format!(
                    "worker {} received {wrong} event(s) not from its own job (nonce, daemon job id, conversation or child pid differ)",
                    w.name
                ));
            }
            if !labelled {
                problems.push(format!(
                    "worker {}'s fixture events are not all labelled as a local protocol fixture",
                    w.name
                ));
            }
            let status = w.statuses.last();
            if let Some(st) = status {
                if st.daemons != [DISPLAY_ID] {
                    problems.push(format!(
                        "worker {}'s hub listed daemons {:?} after the jobs, expected exactly [{DISPLAY_ID}]",
                        w.name, st.daemons
                    ));
                }
            }
            rows.push(json!({
                "worker": w.name,
                "status_after_jobs": status,
                "daemon_id": ready.daemon_id,
                "hub_daemons": ready.daemons,
                "conversation_id": CONVERSATION_ID,
                "nonce": own.nonce,
                "daemon_job_id": started_job,
                "events": w.events.len(),
                "fixture_events": fixture.len(),
                "foreign_events": foreign,
                "mismatched_events": wrong,
                "child_pid_in_namespace": w.child_pid(),
                "child_pgid_in_namespace": w.outputs().find_map(|e| e.data.pgid),
                "child_host_pid": o.child.as_ref().map(|p| p.pid),
                "grandchild_host_pid": o.grandchild.as_ref().map(|p| p.pid),
                "job_pgid": o.child.as_ref().map(|p| p.pgid),
            }));
        }
        let (ca, cb) = (
            self.observed[0].child.as_ref().map(|p| p.pid),
            self.observed[1].child.as_ref().map(|p| p.pid),
        );
        if ca == cb {
            problems.push(format!("both jobs report the same child process {ca:?}"));
        }
        let (ga, gb) = (
            self.observed[0].grandchild.as_ref().map(|p| p.pid),
            self.observed[1].grandchild.as_ref().map(|p| p.pid),
        );
        if ga == gb {
            problems.push(format!(
                "both jobs report the same grandchild process {ga:?}"
            ));
        }
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "same-ids-separate-routing",
                    None,
                    format!(
                        "both workers used display id {DISPLAY_ID} and conversation id {CONVERSATION_ID}; every \
                         event of each job reached only its own worker; the jobs ran in different child \
                         processes ({} and {})",
                        ca.unwrap_or(0),
                        cb.unwrap_or(0)
                    ),
                )
            } else {
                Check::fail(
                    "same-ids-separate-routing",
                    None,
                    format!(
                        "{}; the same display and conversation ids in two workers must never route one's \
                         events to the other",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({"workers": rows, "fixture": "local protocol fixture, not a vendor reply"})),
        );
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
