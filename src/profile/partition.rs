//! `--partition K/N`: which candidates the K-th of N shares certifies.
//!
//! The deal is a function of the profile alone, so every CI job of a
//! matrix computes the same one: the candidates are ordered by SDK group
//! (the default group first, then the other pins in text order) and by path
//! within a group, and that order is cut into N contiguous runs whose sizes
//! differ by at most one (the first `n % N` runs one longer). Every
//! candidate is in exactly one share. Keeping a group's candidates together
//! means a share spans as few SDK groups as the cut allows, and each group
//! in a share is a run of its own with an interpreter of its own
//! (`src/pipeline/groups.rs`), so a job provisions and verifies as few
//! interpreters as it can. A profile with one SDK pin is cut by path alone.

use super::groups::squeeze;
use super::{CandidateSpec, Profile};

/// `--partition K/N`: the K-th of N shares (1-based).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Partition {
    /// This share, 1..=count.
    pub index: u32,
    /// Number of shares.
    pub count: u32,
}

impl std::str::FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || format!("expected K/N with 1 <= K <= N (e.g. 1/2), found {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(err)?;
        let (index, count): (u32, u32) = (
            k.trim().parse().map_err(|_| err())?,
            n.trim().parse().map_err(|_| err())?,
        );
        if index == 0 || count == 0 || index > count {
            return Err(err());
        }
        Ok(Self { index, count })
    }
}

/// The candidates of `partition` (all of them for `None`), in profile
/// order: see the module docs for the deal. Stable for a given profile,
/// whatever the order of its entries. Pure.
pub fn partition_share(profile: &Profile, partition: Option<Partition>) -> Vec<CandidateSpec> {
    let Some(p) = partition else {
        return profile.candidates.clone();
    };
    let default = squeeze(&profile.sdk.requirement);
    let key = |c: &CandidateSpec| {
        let group = profile.group_of(c);
        (group != default, group, c.path.clone())
    };
    let mut dealt: Vec<&CandidateSpec> = profile.candidates.iter().collect();
    dealt.sort_by_cached_key(|c| key(c));
    let (n, count, k) = (dealt.len(), p.count as usize, p.index as usize - 1);
    let (base, longer) = (n / count, n % count);
    let start = k * base + k.min(longer);
    let len = base + usize::from(k < longer);
    let chosen: Vec<&str> = dealt
        .iter()
        .skip(start)
        .take(len)
        .map(|c| c.path.as_str())
        .collect();
    profile
        .candidates
        .iter()
        .filter(|c| chosen.contains(&c.path.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{parse, BUILTIN_CODING_RUNNERS};

    fn paths(profile: &Profile, index: u32, count: u32) -> Vec<String> {
        partition_share(profile, Some(Partition { index, count }))
            .into_iter()
            .map(|c| c.path)
            .collect()
    }

    #[test]
    fn partitions_cover_every_candidate_exactly_once_in_contiguous_runs_by_path() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        let mut sorted: Vec<String> = p.candidates.iter().map(|c| c.path.clone()).collect();
        sorted.sort();
        assert_eq!(sorted.len(), 3);
        // 3 candidates in 2 shares: the first run one longer.
        let first = paths(&p, 1, 2);
        let second = paths(&p, 2, 2);
        let mut first_sorted = first.clone();
        first_sorted.sort();
        assert_eq!(first_sorted, [sorted[0].clone(), sorted[1].clone()]);
        assert_eq!(second, [sorted[2].clone()]);
        assert_eq!(partition_share(&p, None).len(), p.candidates.len());
        // As many shares as candidates: one each.
        for k in 1..=3 {
            assert_eq!(paths(&p, k, 3), [sorted[k as usize - 1].clone()]);
        }
        // More shares than candidates: the last share is empty.
        assert!(paths(&p, 4, 4).is_empty());
        assert!("0/2".parse::<Partition>().is_err());
        assert!("2/0".parse::<Partition>().is_err());
        assert!("3/2".parse::<Partition>().is_err());
        assert!("1-2".parse::<Partition>().is_err());
        assert_eq!(
            " 2 / 2 ".parse::<Partition>().unwrap(),
            Partition { index: 2, count: 2 }
        );
        assert_eq!(
            "2/3".parse::<Partition>().unwrap(),
            Partition { index: 2, count: 3 }
        );
    }

    const GROUPED: &str = "name = \"t\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n\
        [[candidate]]\npath = \"z/late-default\"\n\
        [[candidate]]\npath = \"a/seven\"\nsdk = \"langbot-plugin==0.7.1\"\n\
        [[candidate]]\npath = \"b/six\"\nsdk = \"langbot-plugin==0.6.1\"\n\
        [[candidate]]\npath = \"a/early-default\"\n\
        [[candidate]]\npath = \"c/six-too\"\nsdk = \"langbot-plugin==0.6.1\"\n";

    #[test]
    fn a_grouped_profile_is_cut_by_group_then_path_whatever_its_entry_order() {
        let p = parse(GROUPED, "t.toml").unwrap();
        // Default group first, then the pins in text order; by path within.
        assert_eq!(
            [paths(&p, 1, 3), paths(&p, 2, 3), paths(&p, 3, 3)],
            [
                vec!["z/late-default", "a/early-default"],
                vec!["b/six", "c/six-too"],
                vec!["a/seven"],
            ]
            .map(|v| v.into_iter().map(String::from).collect::<Vec<_>>())
        );
        // 2 shares: the cut falls inside the 0.6.1 group.
        assert_eq!(paths(&p, 2, 2), ["a/seven", "c/six-too"]);
        // The same deal from the entries in reverse order.
        let mut reversed = p.clone();
        reversed.candidates.reverse();
        for k in 1..=3 {
            let mut a = paths(&p, k, 3);
            let mut b = paths(&reversed, k, 3);
            a.sort();
            b.sort();
            assert_eq!(a, b, "share {k}/3");
        }
        // Every candidate exactly once, for every N.
        for n in 1..=6 {
            let mut seen: Vec<String> = (1..=n).flat_map(|k| paths(&p, k, n)).collect();
            seen.sort();
            let mut all: Vec<String> = p.candidates.iter().map(|c| c.path.clone()).collect();
            all.sort();
            assert_eq!(seen, all, "{n} shares");
        }
    }
}
