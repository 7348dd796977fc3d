//! The SDK groups of a grouped profile's shares (`sdk_groups[]`): which
//! group runs each share must hold, their [`Plan`]s, and the merged
//! `sdk_groups[]`.
//!
//! Which shares hold a group is derived from the profile itself (the one
//! every run kept, [`gather::kept_profile`]): share K holds a run of group
//! G exactly when the deal
//! ([`crate::profile::partition_share`]) gives share K a candidate of G.
//! A share that should hold one and does not, or holds one it should not,
//! is refused, as is a group run of another partition than its share's or
//! whose sign-off is not the one its share recorded.

use super::{check, gather, Plan, Run};
use crate::evidence::{Evidence, SdkGroupRecord};
use crate::pipeline::groups::{overall, record as group_record, relative_dir};
use crate::profile::{self, groups::squeeze, Partition, Profile};

/// Each non-default group of the profile of `plan`'s runs, in profile
/// order, as its directory relative to the merged one (`groups/<pin>`) and
/// the plan of its runs. None for a profile without groups.
///
/// # Errors
/// A share missing a group run the deal gives it (or holding one it does
/// not), a group run that does not fit its share, or the group runs not
/// fitting together ([`check::plan`]).
pub(super) fn plans(plan: &Plan, profile: &Profile) -> Result<Vec<(String, Plan)>, String> {
    if plan.runs().all(|(_, e)| e.sdk_groups.is_none()) {
        return Ok(Vec::new());
    }
    let count = plan.shares[0].1.selection.partition.map_or(0, |p| p.count);
    let mut out = Vec::new();
    for group in profile.sdk_groups().into_iter().filter(|g| !g.default) {
        let requirement = group.pin.requirement.as_str();
        let expected: Vec<u32> = (1..=count)
            .filter(|&index| {
                profile::partition_share(profile, Some(Partition { index, count }))
                    .iter()
                    .any(|c| group.candidates.iter().any(|g| g.path == c.path))
            })
            .collect();
        let mut runs = Vec::new();
        for run in plan.runs() {
            if let Some(group_run) = group_run_of(run, requirement, &expected)? {
                runs.push(group_run);
            }
        }
        let group_plan = check::plan(runs, Some(&expected))?;
        check::dealt(&group_plan, profile, &group)?;
        out.push((relative_dir(requirement), group_plan));
    }
    Ok(out)
}

/// The run of group `requirement` inside `(dir, ev)`, if it must hold one:
/// a share when the deal gives it a candidate of the group (its index is
/// in `expected`), an unpartitioned run when it lists the group.
fn group_run_of(
    (dir, ev): &Run,
    requirement: &str,
    expected: &[u32],
) -> Result<Option<Run>, String> {
    let listed = ev
        .sdk_groups
        .iter()
        .flatten()
        .find(|g| !g.default && squeeze(&g.requirement) == squeeze(requirement));
    let wanted = ev
        .selection
        .partition
        .map_or(listed.is_some(), |p| expected.contains(&p.index));
    let share = || {
        ev.selection.partition.map_or_else(
            || "unpartitioned".to_string(),
            |p| format!("share {}/{}", p.index, p.count),
        )
    };
    match (wanted, listed) {
        (true, Some(group)) => read_group(dir, ev, group).map(Some),
        (false, None) => Ok(None),
        (true, None) => Err(format!(
            "{} ({}): expected a run of sdk group {requirement} (the profile deals candidates of that \
             group to this share), found none in its sdk_groups: the group's evidence is missing; \
             re-run that share",
            dir.display(),
            share()
        )),
        (false, Some(_)) => Err(format!(
            "{} ({}): expected no run of sdk group {requirement} (the profile deals no candidate of \
             that group to this share), found one: the share was not dealt as the profile deals it \
             (another verifier version?); re-run every share with one verifier",
            dir.display(),
            share()
        )),
    }
}

/// The group run `group` recorded by `(dir, ev)`, read from its directory:
/// of the same partition as its share, sealed with the digest the share
/// recorded.
fn read_group(dir: &std::path::Path, ev: &Evidence, group: &SdkGroupRecord) -> Result<Run, String> {
    gather::group_present(dir, group)?;
    let sub = dir.join(relative_dir(&group.requirement));
    let sub_ev = gather::read_verified(&sub)?;
    let show = |p: Option<Partition>| {
        p.map_or_else(|| "none".into(), |p| format!("{}/{}", p.index, p.count))
    };
    if sub_ev.selection.partition != ev.selection.partition {
        return Err(format!(
            "{}: expected the group run of its share's --partition {}, found --partition {}; refusing to \
             merge it (a group directory copied from another share?)",
            sub.display(),
            show(ev.selection.partition),
            show(sub_ev.selection.partition)
        ));
    }
    if group.evidence_sha256.as_deref() != Some(sub_ev.sign_off.evidence_sha256.as_str()) {
        return Err(format!(
            "{}: expected the evidence its share recorded (sign-off {}), found sign-off {}; refusing to \
             merge it",
            sub.display(),
            group.evidence_sha256.as_deref().unwrap_or("-"),
            sub_ev.sign_off.evidence_sha256
        ));
    }
    Ok((sub, sub_ev))
}

/// Records `sdk_groups[]` of the merged default group's evidence `merged`
/// again from the merged groups (`groups`: directory relative to the merged
/// one, and its sealed evidence), and its verdict as the groups' together,
/// as a grouped run records them. Nothing for a profile without groups.
pub(super) fn record(merged: &mut Evidence, groups: &[(String, Evidence)]) {
    if merged.sdk_groups.is_none() {
        return;
    }
    let mut all = vec![group_record(merged, true, None)];
    all.extend(
        groups
            .iter()
            .map(|(relative, ev)| group_record(ev, false, Some(relative.clone()))),
    );
    merged.verdict = overall(merged.verdict, &all[1..]);
    merged.sdk_groups = Some(all);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::check::tests::share;

    fn listing(requirement: &str) -> SdkGroupRecord {
        SdkGroupRecord {
            requirement: requirement.into(),
            default: false,
            evidence: Some(relative_dir(requirement)),
            evidence_sha256: Some("ab".repeat(32)),
            verdict: crate::evidence::Verdict::Pass,
            warnings: 0,
            python: "/p".into(),
            version: None,
            record_sha256: None,
            candidates: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn a_share_the_deal_gives_a_group_must_hold_its_run_and_no_other_share_may() {
        let (dir, mut ev) = share(2, 2, "b");
        ev.sdk_groups = Some(Vec::new());
        let err =
            group_run_of(&(dir.clone(), ev.clone()), "langbot-plugin==0.6.1", &[2]).unwrap_err();
        assert!(
            err.contains("/s2 (share 2/2): expected a run of sdk group langbot-plugin==0.6.1")
                && err.contains("the group's evidence is missing"),
            "{err}"
        );
        assert!(
            group_run_of(&(dir.clone(), ev.clone()), "langbot-plugin==0.6.1", &[1])
                .unwrap()
                .is_none()
        );
        ev.sdk_groups = Some(vec![listing("langbot-plugin==0.6.1")]);
        let err =
            group_run_of(&(dir.clone(), ev.clone()), "langbot-plugin==0.6.1", &[1]).unwrap_err();
        assert!(err.contains("expected no run of sdk group"), "{err}");
        // Listed and dealt, but its directory holds no evidence.
        let err = group_run_of(&(dir, ev), "langbot-plugin == 0.6.1", &[2]).unwrap_err();
        assert!(
            err.contains("groups/langbot-plugin-0.6.1/evidence.json"),
            "{err}"
        );
    }

    #[test]
    fn the_merged_groups_are_recorded_again_and_a_failed_group_fails_the_merge() {
        let (_, mut merged) = share(1, 2, "a");
        merged.sdk_groups = Some(Vec::new());
        let (_, mut group) = share(2, 2, "b");
        group.sdk.requirement = "langbot-plugin==0.6.1".into();
        group.verdict = crate::evidence::Verdict::Fail;
        record(
            &mut merged,
            &[("groups/langbot-plugin-0.6.1".into(), group)],
        );
        let all = merged.sdk_groups.as_ref().unwrap();
        assert_eq!(all.len(), 2);
        assert!(all[0].default && all[0].candidates[0].folder == "a");
        assert_eq!(
            all[1].evidence.as_deref(),
            Some("groups/langbot-plugin-0.6.1")
        );
        assert_eq!(
            all[1].evidence_sha256.as_deref(),
            Some("ef".repeat(32).as_str())
        );
        assert_eq!(merged.verdict, crate::evidence::Verdict::Fail);
        // A profile without groups records none.
        let (_, mut plain) = share(1, 1, "a");
        record(&mut plain, &[]);
        assert!(plain.sdk_groups.is_none());
    }
}
