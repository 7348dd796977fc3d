//! Observing `teardown` (stopping the workers, then the end-of-run survey)
//! and `private-roots` (the evidence directory before and after). The
//! decisions are in [`super::decide`].

use super::decide::{
    ExcludedArea, RootRow, RootsObs, SurveyObs, SurvivorRow, TaggedFile, TeardownObs, WorkerStop,
};
use super::roots;
use super::{Run, GATE, MARKER_NAME, NAMES, STOP_TIMEOUT};
use crate::process;
use crate::process::survey;
use serde_json::json;
use std::collections::BTreeSet;
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
        // An interrupt ends the wait: the group stops below then take over.
        while Instant::now() < deadline
            && !crate::interrupt::requested()
            && !self.workers.iter().all(|w| w.stopped || w.closed)
        {
            for w in self.workers.iter_mut() {
                w.pump(Duration::ZERO);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let stops = self.stop_workers(deadline);
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
        let survivors = settled_survey(&rules);
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

    /// Each worker's own stop: its exit awaited until `deadline`, then its
    /// process group stopped (TERM, then KILL), as the worker's row.
    fn stop_workers(&mut self, deadline: Instant) -> Vec<WorkerStop> {
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
        stops
    }

    /// The evidence directory before and after, and whose tag each new file
    /// carries. `beside`: the gates that ran between the two snapshots; the
    /// folders they write are left out (and scanned for a worker's tag).
    pub(super) fn observe_private_roots(
        &mut self,
        before: &roots::Snapshot,
        after: &roots::Snapshot,
        beside: &[String],
    ) {
        let excluded = excluded_areas(beside);
        let areas: Vec<String> = excluded.iter().map(|a| a.area.clone()).collect();
        let worker_roots: Vec<String> = NAMES.iter().map(|n| format!("roots/{GATE}/{n}")).collect();
        let mut sorted = roots::sort_changes(before, after, &worker_roots, &areas);
        // The snapshots skip the gate's own logs (written while the workers
        // run); a file there carrying a worker's tag is still a write
        // outside its root.
        let ids: Vec<&str> = self.specs.iter().map(|s| s.id.as_str()).collect();
        for (path, _) in roots::tagged_under(&self.ctx.evidence_dir, &format!("logs/{GATE}"), &ids)
        {
            sorted.outside.push(roots::Change {
                path,
                change: "tagged",
            });
        }
        // A worker's tag in a left-out folder is still a worker's write.
        let tagged = self.tagged_in_excluded(&sorted.excluded);
        let rows = (0..self.specs.len())
            .map(|i| self.root_row(i, &sorted.workers[i]))
            .collect();
        let snapshot = snapshot_sentence(excluded.is_empty(), beside);
        self.obs.roots = Some(RootsObs {
            snapshot,
            outside_roots: sorted.outside,
            workers: rows,
            gates_beside: beside.to_vec(),
            excluded,
            excluded_changes: sorted.excluded.len(),
            tagged_in_excluded: tagged,
            parents_mtime_only: sorted.parents_mtime_only,
        });
    }

    /// The files in the left-out folders (`excluded`: their changes) that
    /// carry a worker's tag, with the worker named.
    fn tagged_in_excluded(&self, excluded: &[roots::Change]) -> Vec<TaggedFile> {
        let mut tagged = Vec::new();
        for c in excluded.iter().filter(|c| c.change != "removed") {
            let path = self.ctx.evidence_dir.join(&c.path);
            if !path.is_file() {
                continue;
            }
            if let Some(tag) = roots::file_tag(&path) {
                if let Some(spec) = self.specs.iter().find(|s| s.id == tag) {
                    tagged.push(TaggedFile {
                        path: c.path.clone(),
                        worker: spec.name.to_string(),
                    });
                }
            }
        }
        tagged
    }

    /// Worker `i`'s root: what was added under it (`added`), how many of
    /// those files carry its own tag and which carry the other worker's,
    /// and which of its required tag files are missing.
    fn root_row(&self, i: usize, added: &[String]) -> RootRow {
        let spec = &self.specs[i];
        let other = &self.specs[1 - i];
        let mut foreign = Vec::new();
        let mut own_tagged = 0;
        for rel in added {
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
        RootRow {
            worker: spec.name.to_string(),
            root: spec.root.display().to_string(),
            changed_entries: added.len(),
            own_tagged_files: own_tagged,
            job_child_files: child_files,
            foreign_files: foreign,
            missing_tags: missing,
            entries: added.iter().take(50).cloned().collect(),
        }
    }
}

/// The survey under `rules`, taken again for up to [`SETTLE`] while it
/// finds anything: a process seen mid-exit (its memory already released:
/// empty cmdline, no cwd) is still listed by /proc for a moment; only what
/// is still there afterwards is residue. An interrupt ends the wait.
fn settled_survey(rules: &survey::SurveyRules) -> Vec<survey::Survivor> {
    let mut survivors = survey::survey(rules);
    let settle_deadline = std::time::Instant::now() + SETTLE;
    while !survivors.is_empty()
        && std::time::Instant::now() < settle_deadline
        && !crate::interrupt::requested()
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
        survivors = survey::survey(rules);
    }
    survivors
}

/// How the private-roots snapshot was compared: the whole of DIR but the
/// gate's logs when no other gate ran meanwhile (`no_exclusion`), else
/// without the folders of the gates `beside`.
fn snapshot_sentence(no_exclusion: bool, beside: &[String]) -> String {
    if no_exclusion {
        "DIR before and after the workers ran (kind, size, mtime, mode), DIR/logs/worker-isolation excluded; \
         no other gate ran meanwhile, so the whole of the rest of DIR was compared"
            .to_string()
    } else {
        format!(
            "DIR before and after the workers ran (kind, size, mtime, mode), DIR/logs/worker-isolation excluded; \
             {} gate(s) ran meanwhile ({}), so the folders they write were left out (see excluded) and every \
             new or changed file in them was read for a worker's tag",
            beside.len(),
            beside.join(", ")
        )
    }
}

/// The folders of DIR the gates `beside` write (their catalogue
/// [`crate::catalogue::GateInfo::write_areas`]), one row per folder with every
/// gate writing it, in first-seen order.
pub(super) fn excluded_areas(beside: &[String]) -> Vec<ExcludedArea> {
    let mut out: Vec<ExcludedArea> = Vec::new();
    for gate in beside {
        let Some(info) = crate::catalogue::get(gate) else {
            continue;
        };
        for area in info.write_areas() {
            match out.iter_mut().find(|a| a.area == area) {
                Some(a) => a.written_by.push(gate.clone()),
                None => out.push(ExcludedArea {
                    area,
                    written_by: vec![gate.clone()],
                    why: String::new(),
                }),
            }
        }
    }
    for a in &mut out {
        a.why = format!(
            "written by {} (gates/catalogue.toml: `writes`, or the gate's own logs/ and roots/ folder), which ran \
             while the workers lived: a change there is not told from that gate's own",
            a.written_by.join(", ")
        );
    }
    out
}
