//! Stopping the workers, the end-of-run survey, and the private-roots
//! comparison of the evidence directory before and after.

use super::roots;
use super::{Run, GATE, MARKER_NAME, NAMES, STOP_TIMEOUT};
use crate::evidence::Check;
use crate::isolation::survey;
use crate::process;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long processes found right after the workers' stop may take to
/// finish exiting on their own before they count as residue.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

impl Run<'_> {
    /// `teardown`: `stop` to both workers, their process groups stopped, then the survey.
    pub(super) fn teardown(&mut self) {
        for w in self.workers.iter_mut() {
            let _ = w.send(&json!({"cmd": "stop"}));
        }
        // Not `wait_for`: one worker closing its stdout first is normal here.
        // A closed stdout means every line before it was read.
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline && !self.workers.iter().all(|w| w.stopped || w.closed) {
            for w in self.workers.iter_mut() {
                w.pump(Duration::ZERO);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut stops = Vec::new();
        let mut problems = Vec::new();
        for w in self.workers.iter_mut() {
            let left = deadline.saturating_duration_since(Instant::now());
            let exited = w.child.wait_timeout(left);
            let report = w.child.stop();
            if !w.stopped || exited.is_none() || report.needed_kill {
                problems.push(format!(
                    "worker {} {}",
                    w.name,
                    if report.needed_kill {
                        "did not exit after `stop` and ignored TERM: it needed KILL".to_string()
                    } else if exited.is_none() {
                        "did not exit after `stop`; TERM stopped it".to_string()
                    } else {
                        "exited without answering `stopped`".to_string()
                    }
                ));
            }
            stops.push(json!({
                "worker": w.name,
                "answered_stopped": w.stopped,
                "exited_after_stop": exited.is_some(),
                "term_sent": report.term_sent,
                "kill_needed": report.needed_kill,
                "status": report.describe(),
            }));
        }
        let mut pgids: BTreeSet<i32> = self.job_pgids.clone();
        for (i, w) in self.workers.iter().enumerate() {
            pgids.insert(w.child.pid() as i32);
            if let Some(p) = &self.observed[i].worker {
                pgids.insert(p.pgid);
            }
        }
        let rules = survey::SurveyRules {
            pgids,
            marker_name: MARKER_NAME.into(),
            marker_value: self.marker.clone(),
            roots: vec![self.base.clone()],
            exclude: BTreeSet::from([std::process::id() as i32]),
        };
        // A process seen mid-exit (its memory already released: empty
        // cmdline, no cwd) is still listed by /proc for a moment. Give what
        // the survey finds a short settle time to finish exiting on its own;
        // only what is still there afterwards is residue.
        let mut survivors = survey::survey(&rules);
        let settle_deadline = std::time::Instant::now() + SETTLE;
        while !survivors.is_empty() && std::time::Instant::now() < settle_deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
            survivors = survey::survey(&rules);
        }
        let stopped = survey::stop_all(&survivors, process::GRACE);
        let after = survey::survey(&rules);
        if !survivors.is_empty() {
            let list: Vec<String> = survivors
                .iter()
                .map(|s| {
                    let how = stopped
                        .iter()
                        .find(|x| x.pid == s.pid)
                        .map_or("?", |x| x.stopped_by.as_str());
                    format!(
                        "pid {} (pgid {}, sid {}; matched by {}; stopped by {how})",
                        s.pid,
                        s.pgid,
                        s.sid,
                        s.matched_by.join("+")
                    )
                })
                .collect();
            problems.push(format!(
                "RESIDUE: {} process(es) tied to the run survived the workers' stop: {}",
                survivors.len(),
                list.join(", ")
            ));
        }
        if !after.is_empty() {
            problems.push(format!(
                "RESIDUE: pids {:?} still run after TERM, grace and KILL",
                after.iter().map(|s| s.pid).collect::<Vec<_>>()
            ));
        }
        let observed = json!({
            "verdict": if survivors.is_empty() { "CLEAN" } else { "RESIDUE" },
            "workers": stops,
            "survey": {
                "by": ["process group", "environment marker", "working directory under the run's roots"],
                "process_groups": rules.pgids,
                "marker": format!("{MARKER_NAME}={}", self.marker),
                "roots": self.base.display().to_string(),
                "found": survivors,
                "stopped": stopped,
                "remaining_after_kill": after,
            },
        });
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "teardown",
                    None,
                    "after `stop` both workers exited on their own, and a survey of /proc by process group, \
                     environment marker and working directory found no process tied to the run",
                )
            } else {
                Check::fail(
                    "teardown",
                    None,
                    format!(
                        "{}; every process a worker starts must end with it: keep children in the job's process \
                         group and stop the group",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(observed),
        );
    }

    /// `private-roots`: the evidence directory before and after, and whose tag each new file
    /// carries.
    pub(super) fn check_private_roots(
        &mut self,
        before: &roots::Snapshot,
        after: &roots::Snapshot,
    ) {
        let changes = roots::diff(before, after);
        let roots_rel = PathBuf::from("roots").join(GATE);
        let mut outside = Vec::new();
        let mut per: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for c in &changes {
            let p = Path::new(&c.path);
            match NAMES.iter().find(|n| p.starts_with(roots_rel.join(n))) {
                Some(n) => per.entry(n).or_default().push(c.path.clone()),
                None => outside.push(c.clone()),
            }
        }
        let mut problems = Vec::new();
        if !outside.is_empty() {
            problems.push(format!(
                "changes outside the workers' roots: {}",
                outside
                    .iter()
                    .take(10)
                    .map(|c| format!("{} {}", c.change, c.path))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut rows = Vec::new();
        for (i, spec) in self.specs.iter().enumerate() {
            let other = &self.specs[1 - i];
            let mut foreign = Vec::new();
            let mut own_tagged = 0;
            let added = per.get(spec.name).cloned().unwrap_or_default();
            for rel in &added {
                let path = self.ctx.evidence_dir.join(rel);
                if !path.is_file() {
                    continue;
                }
                match roots::file_tag(&path) {
                    Some(t) if t == spec.id => own_tagged += 1,
                    Some(t) if t == other.id => foreign.push(rel.clone()),
                    _ => {}
                }
            }
            let required = [
                spec.home.join(".vcc-worker"),
                spec.tmp.join(".vcc-worker"),
                spec.data.join(".vcc-worker"),
            ];
            let missing: Vec<String> = required
                .iter()
                .filter(|p| roots::file_tag(p).as_deref() != Some(spec.id.as_str()))
                .map(|p| p.display().to_string())
                .collect();
            let child_files = added
                .iter()
                .filter(|r| r.contains("/jobs/") && r.contains("child-"))
                .count();
            if !foreign.is_empty() {
                problems.push(format!(
                    "worker {}'s root holds files written by worker {}: {foreign:?}",
                    spec.name, other.name
                ));
            }
            if !missing.is_empty() {
                problems.push(format!(
                    "worker {} did not write its tag where its HOME, TMPDIR and data root point: missing {missing:?}",
                    spec.name
                ));
            }
            if child_files == 0 {
                problems.push(format!(
                    "worker {}'s job child wrote nothing under its data root",
                    spec.name
                ));
            }
            rows.push(json!({
                "worker": spec.name,
                "root": spec.root.display().to_string(),
                "changed_entries": added.len(),
                "own_tagged_files": own_tagged,
                "job_child_files": child_files,
                "foreign_files": foreign,
                "missing_tags": missing,
                "entries": added.iter().take(50).collect::<Vec<_>>(),
            }));
        }
        self.checks.push(
            if problems.is_empty() {
                Check::pass(
                    "private-roots",
                    None,
                    "each worker (and its job) wrote only under its own root: the evidence directory changed \
                     nowhere else, and neither root holds a file tagged by the other worker",
                )
            } else {
                Check::fail(
                    "private-roots",
                    None,
                    format!(
                        "{}; workers must write only under their own HOME, TMPDIR and data roots",
                        problems.join("; ")
                    ),
                )
            }
            .with_observed(json!({
                "snapshot": "DIR before and after the workers ran (kind, size, mtime, mode), DIR/logs/worker-isolation excluded",
                "outside_roots": outside,
                "workers": rows,
            })),
        );
    }
}
