//! Checking: whether the gathered runs fit together as the shares of one
//! partitioned run, with unpartitioned runs beside them. Pure: over the
//! runs' evidence only, so each refusal is unit-tested with synthetic runs.
//!
//! They must share commit, tree, source, profile digest, SDK version and
//! RECORD digest and gate list; the shares must share required gates and
//! partition count and be exactly the expected shares (each of 1..=N once,
//! or, for an SDK group, the shares that list the group); an unpartitioned
//! run must have built the same content as the shares. A share that holds
//! none of its group's candidates (a grouped profile's share whose
//! candidates are all in other groups) requires every gate of the others
//! but the per-candidate ones.

use super::{Plan, Run};
use crate::catalogue::{self, Scope};
use crate::evidence::Evidence;
use crate::profile::{groups::SdkGroup, partition_share, Profile};

/// The runs as a [`Plan`], once they fit together. `expected` is the share
/// indices a group's runs must hold (`None`: every index 1..=N, N being the
/// shares' count).
///
/// # Errors
/// A sentence naming the two runs and what they disagree on, or the shares
/// missing or given twice.
pub(super) fn plan(runs: Vec<Run>, expected: Option<&[u32]>) -> Result<Plan, String> {
    let (mut shares, wholes): (Vec<Run>, Vec<Run>) = runs
        .into_iter()
        .partition(|(_, e)| e.selection.partition.is_some());
    if shares.is_empty() {
        return Err(format!(
            "expected the evidence of `--partition K/N` runs, found only unpartitioned runs ({}); merge \
             combines the shares of one partitioned run, with unpartitioned runs (such as `--only suites`) \
             beside them",
            wholes
                .iter()
                .map(|(d, _)| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    shares.sort_by_key(|(_, e)| e.selection.partition.map(|p| p.index).unwrap_or(0));
    let plan = Plan { shares, wholes };
    let first = &plan.shares[0];
    for run in plan.runs() {
        agree(first, run)?;
    }
    same_shares(&plan.shares, expected)?;
    same_content(&plan)?;
    Ok(plan)
}

/// Ok when each share of `plan` holds exactly the candidates of `group`
/// that `profile` deals it ([`crate::profile::partition_share`]): every
/// candidate of the group is in exactly one share, and shares dealt by
/// another rule (another verifier version) are never merged.
///
/// # Errors
/// A sentence naming the share, the candidates the deal gives it and those
/// it holds.
pub(super) fn dealt(plan: &Plan, profile: &Profile, group: &SdkGroup) -> Result<(), String> {
    for (dir, ev) in &plan.shares {
        let p = ev.selection.partition.expect("a share");
        let mut expected: Vec<String> = partition_share(profile, Some(p))
            .into_iter()
            .filter(|c| group.candidates.iter().any(|g| g.path == c.path))
            .map(|c| c.path)
            .collect();
        let mut found: Vec<String> = ev.candidates.iter().map(|c| c.path.clone()).collect();
        expected.sort();
        found.sort();
        if expected != found {
            return Err(format!(
                "{}: expected the candidates the profile deals to share {}/{} of sdk group {} ({}), found \
                 {}; every share must be dealt alike: re-run every share with one verifier",
                dir.display(),
                p.index,
                p.count,
                group.pin.requirement,
                list(&expected),
                list(&found)
            ));
        }
    }
    Ok(())
}

/// `a, b` or `none`.
fn list(paths: &[String]) -> String {
    if paths.is_empty() {
        "none".into()
    } else {
        paths.join(", ")
    }
}

/// Ok when `run` shares with `first` what every run merged into one must.
fn agree((first_dir, first): &Run, (dir, ev): &Run) -> Result<(), String> {
    let same = |what: &str, a: &str, b: &str| -> Result<(), String> {
        if a == b {
            return Ok(());
        }
        Err(format!(
            "{} and {} disagree on {what}: {a} vs {b}; runs merged into one must share it",
            first_dir.display(),
            dir.display()
        ))
    };
    same("commit", &first.source.commit, &ev.source.commit)?;
    same("tree", &first.source.tree, &ev.source.tree)?;
    // `--worktree` runs: the same working tree (a commit's run has none).
    let worktree = |e: &Evidence| {
        e.source.worktree.as_ref().map_or_else(
            || "a commit".to_string(),
            |w| format!("working tree {}", w.digest.as_deref().unwrap_or("-")),
        )
    };
    same("source", &worktree(first), &worktree(ev))?;
    same("profile digest", &first.profile.sha256, &ev.profile.sha256)?;
    let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    same(
        "SDK version",
        &or_dash(&first.sdk.version),
        &or_dash(&ev.sdk.version),
    )?;
    same(
        "SDK RECORD digest",
        &or_dash(&first.sdk.record_sha256),
        &or_dash(&ev.sdk.record_sha256),
    )?;
    let ids = |e: &Evidence| e.gates.iter().map(|g| g.id.clone()).collect::<Vec<_>>();
    same("gate list", &ids(first).join(","), &ids(ev).join(","))
}

/// `required` without the per-candidate gates: what a share that holds no
/// candidate of its group requires.
fn without_candidate_gates(required: &[String]) -> Vec<String> {
    required
        .iter()
        .filter(|id| catalogue::get(id).map(|g| g.scope) != Some(Scope::Candidate))
        .cloned()
        .collect()
}

/// Ok when the shares (sorted by index) share required gates and count,
/// and are exactly the `expected` ones (each of 1..=N once for `None`).
fn same_shares(shares: &[Run], expected: Option<&[u32]>) -> Result<(), String> {
    let (first_dir, first) = shares
        .iter()
        .find(|(_, e)| !e.candidates.is_empty())
        .unwrap_or(&shares[0]);
    let count = first.selection.partition.map_or(0, |p| p.count);
    for (dir, ev) in shares {
        let p = ev.selection.partition.expect("a share");
        if p.count != count {
            return Err(format!(
                "{}: expected a `--partition K/{count}` run, like {}, found --partition {}/{}; merge \
                 combines the shares of one partitioned run",
                dir.display(),
                first_dir.display(),
                p.index,
                p.count
            ));
        }
        let wanted = if ev.candidates.is_empty() {
            without_candidate_gates(&first.selection.required)
        } else {
            first.selection.required.clone()
        };
        if ev.selection.required != wanted {
            return Err(format!(
                "{} and {} disagree on required gates: {} vs {}; the shares of one run must share it",
                first_dir.display(),
                dir.display(),
                wanted.join(","),
                ev.selection.required.join(",")
            ));
        }
    }
    let indices: Vec<u32> = shares
        .iter()
        .filter_map(|(_, e)| e.selection.partition.map(|p| p.index))
        .collect();
    let all: Vec<u32> = (1..=count).collect();
    let expected = expected.unwrap_or(&all);
    if indices != expected {
        let show = |list: &[u32]| {
            list.iter()
                .map(|i| format!("{i}/{count}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(format!(
            "expected each of the partitions {} exactly once, found shares {}; give every share of the \
             run once",
            show(expected),
            show(&indices)
        ));
    }
    Ok(())
}

/// Ok when every unpartitioned run built each candidate's archive with the
/// same content as the share that holds it (the archive files differ in
/// the build clock only), so its suites ran against the same code.
fn same_content(plan: &Plan) -> Result<(), String> {
    for (dir, whole) in &plan.wholes {
        for c in &whole.candidates {
            let Some(a) = &c.archive else { continue };
            let share = plan
                .shares
                .iter()
                .flat_map(|(d, e)| e.candidates.iter().map(move |c| (d, c)))
                .find(|(_, s)| s.path == c.path);
            let Some((share_dir, Some(b))) = share.map(|(d, s)| (d, s.archive.as_ref())) else {
                continue;
            };
            if a.content_digest != b.content_digest {
                return Err(format!(
                    "{} and {} disagree on the content digest of {}: {} vs {}; the runs did not build \
                     the same code: re-run them from the same commit and interpreter",
                    dir.display(),
                    share_dir.display(),
                    c.folder,
                    a.content_digest,
                    b.content_digest
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::evidence::testing::full_pass;
    use crate::profile::Partition;
    use std::path::PathBuf;

    /// A passing share `k/n` holding candidate `folder` (none for `""`).
    pub(in crate::merge) fn share(k: u32, n: u32, folder: &str) -> Run {
        let mut ev = full_pass();
        ev.selection.partition = Some(Partition { index: k, count: n });
        if !folder.is_empty() {
            ev.candidates.push(
                serde_json::from_value(serde_json::json!({
                    "folder": folder, "path": format!("R/{folder}"), "manifest": null, "archive": null
                }))
                .unwrap(),
            );
        }
        (PathBuf::from(format!("/s{k}")), ev)
    }

    fn refused(runs: Vec<Run>, expected: Option<&[u32]>) -> String {
        match plan(runs, expected) {
            Ok(_) => panic!("expected a refusal"),
            Err(e) => e,
        }
    }

    #[test]
    fn shares_of_another_commit_or_profile_are_refused_naming_both_runs() {
        let mut other = share(2, 2, "b");
        other.1.source.commit = "99".repeat(20);
        let err = refused(vec![share(1, 2, "a"), other], None);
        assert!(
            err.contains("/s1 and /s2 disagree on commit") && err.contains(&"99".repeat(20)),
            "{err}"
        );
        let mut other = share(2, 2, "b");
        other.1.profile.sha256 = "11".repeat(32);
        let err = refused(vec![share(1, 2, "a"), other], None);
        assert!(err.contains("disagree on profile digest"), "{err}");
        let mut other = share(2, 2, "b");
        other.1.sdk.version = Some("0.6.1".into());
        let err = refused(vec![share(1, 2, "a"), other], None);
        assert!(err.contains("disagree on SDK version: - vs 0.6.1"), "{err}");
    }

    #[test]
    fn a_missing_a_duplicated_or_a_foreign_share_is_refused() {
        let err = refused(vec![share(1, 3, "a"), share(3, 3, "c")], None);
        assert!(
            err.contains(
                "expected each of the partitions 1/3, 2/3, 3/3 exactly once, found shares 1/3, 3/3"
            ),
            "{err}"
        );
        let err = refused(vec![share(1, 2, "a"), share(1, 2, "a")], None);
        assert!(err.contains("found shares 1/2, 1/2"), "{err}");
        let err = refused(vec![share(1, 2, "a"), share(2, 3, "b")], None);
        assert!(
            err.contains("expected a `--partition K/2` run")
                && err.contains("found --partition 2/3"),
            "{err}"
        );
        // A group's runs: exactly the shares that list the group.
        let err = refused(vec![share(2, 3, "b")], Some(&[2, 3]));
        assert!(
            err.contains("partitions 2/3, 3/3 exactly once, found shares 2/3"),
            "{err}"
        );
        assert!(plan(vec![share(3, 3, "c"), share(2, 3, "b")], Some(&[2, 3])).is_ok());
        let err = refused(vec![], None);
        assert!(err.contains("found only unpartitioned runs"), "{err}");
    }

    #[test]
    fn shares_dealt_otherwise_than_the_profile_deals_are_refused() {
        let profile = crate::profile::parse(
            "name = \"t\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n\
             [[candidate]]\npath = \"R/a\"\n[[candidate]]\npath = \"R/b\"\n\
             [[candidate]]\npath = \"R/c\"\n",
            "t.toml",
        )
        .unwrap();
        let group = profile.sdk_groups().remove(0);
        let plan = |shares: Vec<Run>| Plan {
            shares,
            wholes: Vec::new(),
        };
        // The deal: 1/2 holds a and b, 2/2 holds c.
        let mut first = share(1, 2, "a");
        first.1.candidates.extend(share(1, 2, "b").1.candidates);
        assert!(dealt(
            &plan(vec![first.clone(), share(2, 2, "c")]),
            &profile,
            &group
        )
        .is_ok());
        // Dealt round-robin (a and c, then b): c twice, b missing.
        let mut round_robin = share(1, 2, "a");
        round_robin
            .1
            .candidates
            .extend(share(1, 2, "c").1.candidates);
        let err = dealt(&plan(vec![round_robin, share(2, 2, "c")]), &profile, &group).unwrap_err();
        assert!(
            err.contains(
                "/s1: expected the candidates the profile deals to share 1/2 of sdk group \
                          langbot-plugin==0.6.0b5 (R/a, R/b), found R/a, R/c"
            ),
            "{err}"
        );
        let err = dealt(&plan(vec![first, share(2, 2, "")]), &profile, &group).unwrap_err();
        assert!(err.contains("(R/c), found none"), "{err}");
    }

    #[test]
    fn a_share_without_candidates_requires_every_gate_but_the_per_candidate_ones() {
        let mut empty = share(2, 2, "");
        empty.1.selection.required = without_candidate_gates(&empty.1.selection.required);
        assert!(empty
            .1
            .selection
            .required
            .contains(&"sdk-record".to_string()));
        assert!(!empty
            .1
            .selection
            .required
            .contains(&"admission".to_string()));
        assert!(plan(vec![share(1, 2, "a"), empty.clone()], None).is_ok());
        // The same narrowing in a share that holds a candidate is refused.
        let mut narrowed = share(2, 2, "b");
        narrowed.1.selection.required = empty.1.selection.required.clone();
        let err = refused(vec![share(1, 2, "a"), narrowed], None);
        assert!(err.contains("disagree on required gates"), "{err}");
        // And a share without candidates must still require the global gates.
        empty.1.selection.required.retain(|id| id != "sdk-record");
        let err = refused(vec![share(1, 2, "a"), empty], None);
        assert!(err.contains("disagree on required gates"), "{err}");
    }
}
