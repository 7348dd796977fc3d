//! Observing `teardown` (stopping the workers, then the end-of-run survey)
//! and `private-roots` (the evidence directory before and after). The
//! decisions are in [`super::decide`].

use super::decide::{RootRow, RootsObs, SurveyObs, SurvivorRow, TeardownObs, WorkerStop};
use super::roots;
use super::{Run, GATE, MARKER_NAME, NAMES, STOP_TIMEOUT};
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
    /// `stop` to both workers, their process groups stopped, then the survey.
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
        for w in self.workers.iter_mut() {
            let left = deadline.saturating_duration_since(Instant::now());
            let exited = w.child.wait_timeout(left);
            let report = w.child.stop();
            stops.push(WorkerStop {
                worker: w.name.to_string(),
                answered_stopped: w.stopped,
                exited_after_stop: exited.is_some(),
                term_sent: report.term_sent,
                kill_needed: report.needed_kill,
                status: report.describe(),
            });
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
        self.obs.teardown = Some(TeardownObs {
            verdict: if survivors.is_empty() {
                "CLEAN"
            } else {
                "RESIDUE"
            }
            .into(),
            workers: stops,
            survey: SurveyObs {
                by: [
                    "process group",
                    "environment marker",
                    "working directory under the run's roots",
                ]
                .map(String::from)
                .to_vec(),
                process_groups: rules.pgids.iter().copied().collect(),
                marker: format!("{MARKER_NAME}={}", self.marker),
                roots: self.base.display().to_string(),
                found: survivors.iter().map(SurvivorRow::from).collect(),
                stopped,
                remaining_after_kill: after.iter().map(SurvivorRow::from).collect(),
            },
        });
    }

    /// The evidence directory before and after, and whose tag each new file
    /// carries.
    pub(super) fn observe_private_roots(
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
            rows.push(RootRow {
                worker: spec.name.to_string(),
                root: spec.root.display().to_string(),
                changed_entries: added.len(),
                own_tagged_files: own_tagged,
                job_child_files: child_files,
                foreign_files: foreign,
                missing_tags: missing,
                entries: added.iter().take(50).cloned().collect(),
            });
        }
        self.obs.roots = Some(RootsObs {
            snapshot: "DIR before and after the workers ran (kind, size, mtime, mode), DIR/logs/worker-isolation excluded".into(),
            outside_roots: outside,
            workers: rows,
        });
    }
}
