//! The survivor survey of a discovery run, on the crate's shared survey
//! ([`crate::process::survey`]): a process belongs to the run by the
//! runtime's process group, by the run's environment marker (set in the
//! runtime's environment), or by a working directory under the run's private
//! roots (the SDK starts `oss_dev` workers with a fresh environment and
//! cwd = the artifact's code folder under the runtime's data root). Never by
//! program name.

use super::spec::Survivor;
use crate::process::survey::{self, SurveyRules};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Name of the environment marker put in the runtime's environment; its value
/// is random per run.
pub const MARKER_NAME: &str = "VCC_DISCOVERY_RUN";

/// Finds every process tied to the run and stops it (TERM, `grace`, KILL).
/// Returns what was found, each with how it was stopped.
pub fn survey_and_stop(
    roots: &Path,
    pgids: &[i32],
    marker_value: &str,
    grace: Duration,
) -> Vec<Survivor> {
    let rules = SurveyRules {
        pgids: pgids.iter().copied().collect(),
        marker_name: MARKER_NAME.into(),
        marker_value: marker_value.into(),
        roots: vec![roots.to_path_buf()],
        exclude: BTreeSet::from([std::process::id() as i32]),
    };
    let found = survey::survey(&rules);
    if found.is_empty() {
        return Vec::new();
    }
    let stopped = survey::stop_all(&found, grace);
    found
        .iter()
        .map(|s| Survivor {
            pid: s.pid,
            matched_by: s.matched_by.clone(),
            cwd: s.cwd.clone(),
            cmdline: s.cmdline.clone(),
            stopped_by: stopped
                .iter()
                .find(|x| x.pid == s.pid)
                .map(|x| x.stopped_by.clone())
                .unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn finds_a_process_by_cwd_and_by_marker_and_stops_it() {
        let roots = tempfile::tempdir().unwrap();
        let marker = format!("discovery-survey-test-{}", std::process::id());
        let mut by_cwd = std::process::Command::new("sleep")
            .arg("600")
            .current_dir(roots.path())
            .spawn()
            .unwrap();
        let mut by_marker = std::process::Command::new("sleep")
            .arg("600")
            .env(MARKER_NAME, &marker)
            .spawn()
            .unwrap();
        let want = [by_cwd.id() as i32, by_marker.id() as i32];
        // Wait until both children have exec'd (their cwd/environ are final).
        let deadline = Instant::now() + Duration::from_secs(10);
        let rules = SurveyRules {
            pgids: BTreeSet::new(),
            marker_name: MARKER_NAME.into(),
            marker_value: marker.clone(),
            roots: vec![roots.path().to_path_buf()],
            exclude: BTreeSet::new(),
        };
        while survey::survey(&rules).len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let found = survey_and_stop(roots.path(), &[], &marker, Duration::from_secs(3));
        let pids: Vec<i32> = found.iter().map(|s| s.pid).collect();
        for p in want {
            assert!(pids.contains(&p), "{found:?}");
        }
        assert!(found.iter().all(|s| s.stopped_by == "TERM"), "{found:?}");
        let _ = by_cwd.wait();
        let _ = by_marker.wait();
        assert!(survey_and_stop(roots.path(), &[], &marker, Duration::from_secs(1)).is_empty());
    }
}
