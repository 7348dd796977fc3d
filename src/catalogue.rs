//! The gate catalogue (`gates/catalogue.toml`): id, title, what each gate
//! proves and does not prove, and its prerequisites. Embedded at build time.

use serde::Deserialize;
use std::sync::OnceLock;

/// The catalogue source, as checked in.
pub const CATALOGUE_TOML: &str = include_str!("../gates/catalogue.toml");

/// One catalogue entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateInfo {
    /// Stable kebab-case id (`tree-clean`, `lbp-build`, ...).
    pub id: String,
    /// One-line title.
    pub title: String,
    /// What a `pass` of this gate proves.
    pub proves: String,
    /// What a `pass` of this gate does not prove.
    pub does_not_prove: String,
    /// Ids of gates whose `pass` this gate needs.
    pub requires: Vec<String>,
    /// Ids of gates that must have ended, whatever their result, before
    /// this gate starts, when the catalogue has them and the run selected
    /// them: unlike `requires`, a failed, blocked or skipped one does not
    /// block this gate, which reads their records
    /// ([`crate::context::RunContext::ended`]) and judges them itself
    /// (`placement` reads the `shared-runtime` gate's result per
    /// candidate). An id the catalogue does not have is ignored. Default:
    /// none.
    #[serde(default)]
    pub after: Vec<String>,
    /// Ids of earlier gates (its prerequisites or theirs) whose `pass` lets
    /// this gate start before the rest of `requires` ended, when `--jobs` is above 1: its first part
    /// runs on what those left, and it waits inside for the rest
    /// ([`crate::gates::Gate::run_early`]), blocked as any gate when one of
    /// them does not pass (`suites`: the tree run needs only the staged
    /// source and the verified interpreter). Empty (default), or with
    /// `--jobs 1`: it starts once all of `requires` passed.
    #[serde(default)]
    pub early_requires: Vec<String>,
    /// `global` (runs once per run, in every partition), `candidate`
    /// (checks each candidate; `--partition` splits these) or `whole`
    /// (needs every candidate; not run in a partition).
    #[serde(default)]
    pub scope: Scope,
    /// Resources this gate needs to itself (free-form names such as
    /// `loopback-port-range`): two gates naming one resource never run at
    /// the same time. Every gate uses [`EVIDENCE_DIRECTORY`] (it writes under
    /// DIR) and [`MACHINE`] (it takes CPU time), so a gate naming either runs
    /// alone. Empty: the gate may run beside any other.
    #[serde(default)]
    pub exclusive: Vec<String>,
    /// Folders of the evidence directory this gate writes besides its own
    /// `DIR/logs/<id>` and `DIR/roots/<id>` (see [`GateInfo::write_areas`]),
    /// relative to DIR with `/` separators (`packages`, `roots/pycache`). A
    /// gate that judges writes under DIR while others run (worker-isolation's
    /// `private-roots`) leaves out exactly the areas of the gates that ran
    /// beside it.
    #[serde(default)]
    pub writes: Vec<String>,
    /// Typical seconds this gate takes (on the fixture, two cores), used
    /// only to choose among gates ready at once when `--jobs` leaves fewer
    /// slots than ready gates: the one with the longest remaining path (its
    /// cost plus the costliest chain of gates that require it) starts
    /// first. It never changes what runs or any result. Default 1.
    #[serde(default = "default_cost")]
    pub cost: f64,
    /// The gate's processes keep the normal CPU priority. Every other gate's
    /// thread, and so every process it starts, runs at
    /// [`crate::process::BACKGROUND_NICE`]: on a machine with fewer cores
    /// than steps, the repository's own timing-sensitive tests must not
    /// lose their CPU to the harness's other gates. Default false.
    #[serde(default)]
    pub foreground: bool,
    /// A `whole` gate with a part per candidate (`suites`: each candidate's
    /// own tests): when earlier gates failed some candidates, it still runs
    /// for the others (it sees them left out, as a `candidate` gate does),
    /// and its whole-repository part says it needs every candidate. Default
    /// false: a `whole` gate is blocked by any candidate's failure.
    #[serde(default)]
    pub per_candidate_part: bool,
}

fn default_cost() -> f64 {
    1.0
}

/// The resource every gate shares, the evidence directory: a gate that
/// observes writes anywhere under DIR names it in `exclusive` and so runs
/// while no other gate does.
pub const EVIDENCE_DIRECTORY: &str = "evidence-directory";

/// The machine's CPU time, which every gate takes: a gate naming it in
/// `exclusive` runs while no other gate does. No gate does today: the
/// timing-sensitive suites are `foreground` instead (every other step idles
/// while their pytest runs are active, `process::priority`), and run alone
/// only where that cannot be undone ([`crate::pipeline`]'s
/// `foreground_alone`).
pub const MACHINE: &str = "machine";

impl GateInfo {
    /// Every folder of DIR this gate may write, relative to DIR: its own
    /// `logs/<id>` and `roots/<id>`, then its declared [`GateInfo::writes`].
    pub fn write_areas(&self) -> Vec<String> {
        let mut areas = vec![format!("logs/{}", self.id), format!("roots/{}", self.id)];
        areas.extend(self.writes.iter().cloned());
        areas
    }

    /// Whether this gate and `other` must not run at the same time: they
    /// name one resource in `exclusive`, or either needs the evidence
    /// directory ([`EVIDENCE_DIRECTORY`]) or the machine ([`MACHINE`]),
    /// which every gate uses, to itself.
    pub fn conflicts_with(&self, other: &GateInfo) -> bool {
        let alone = |g: &GateInfo| {
            g.exclusive
                .iter()
                .any(|r| r == EVIDENCE_DIRECTORY || r == MACHINE)
        };
        alone(self) || alone(other) || self.exclusive.iter().any(|r| other.exclusive.contains(r))
    }
}

/// Whether a gate checks the run as a whole or each candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Runs in every partition; partitions must agree on its result.
    #[default]
    Global,
    /// Checks each candidate of the run's partition.
    Candidate,
    /// Needs every candidate at once (the repository's suites run against
    /// all extractions): runs only in an unpartitioned run, and is not
    /// required in a `--partition` run, where it is recorded as skipped.
    Whole,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Catalogue {
    gate: Vec<GateInfo>,
}

/// Every gate, in run order.
///
/// # Panics
/// If the embedded catalogue does not parse or names an unknown or later
/// prerequisite (a build defect caught by the unit tests).
pub fn all() -> &'static [GateInfo] {
    static GATES: OnceLock<Vec<GateInfo>> = OnceLock::new();
    GATES.get_or_init(|| {
        let cat: Catalogue = toml::from_str(CATALOGUE_TOML).expect("gates/catalogue.toml parses");
        for (i, g) in cat.gate.iter().enumerate() {
            for r in &g.requires {
                assert!(
                    cat.gate[..i].iter().any(|p| &p.id == r),
                    "gate {} requires {r}, which is not an earlier gate",
                    g.id
                );
            }
            for r in &g.early_requires {
                assert!(
                    cat.gate[..i].iter().any(|p| &p.id == r),
                    "gate {}: early_requires names {r}, which is not an earlier gate",
                    g.id
                );
            }
        }
        cat.gate
    })
}

/// The entry for `id`, if any.
pub fn get(id: &str) -> Option<&'static GateInfo> {
    all().iter().find(|g| g.id == id)
}

/// Checks that every id of `--only` names a catalogue gate.
///
/// # Errors
/// The first unknown id, in a sentence suggesting the id it most likely
/// means (`lbp_build`: `lbp-build`) and listing every known gate.
pub fn check_ids(ids: &[String]) -> Result<(), String> {
    match ids.iter().find(|id| get(id).is_none()) {
        None => Ok(()),
        Some(id) => {
            let hint = suggestion(id)
                .map(|s| format!("did you mean {s:?}? "))
                .unwrap_or_default();
            Err(format!(
                "--only: unknown gate {id:?}; {hint}expected one of: {}",
                all()
                    .iter()
                    .map(|g| g.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }
}

/// The catalogue id `id` most likely means: the same words in another case
/// or with `_`/space for `-`, else the one id within two single-character
/// edits.
fn suggestion(id: &str) -> Option<&'static str> {
    let folded: String = id
        .trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    if let Some(g) = get(&folded) {
        return Some(g.id.as_str());
    }
    let mut near = all()
        .iter()
        .map(|g| (edit_distance(&folded, &g.id), g.id.as_str()))
        .filter(|(d, _)| *d <= 2);
    match (near.next(), near.next()) {
        (Some((_, only)), None) => Some(only),
        _ => None,
    }
}

/// Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// `ids` plus every gate they need, transitively, in run order.
pub fn with_prerequisites(ids: &[String]) -> Vec<String> {
    let mut wanted: Vec<String> = ids.to_vec();
    let mut i = 0;
    while i < wanted.len() {
        if let Some(g) = get(&wanted[i]) {
            for r in g.requires.iter().chain(&g.early_requires) {
                if !wanted.contains(r) {
                    wanted.push(r.clone());
                }
            }
        }
        i += 1;
    }
    all()
        .iter()
        .filter(|g| wanted.contains(&g.id))
        .map(|g| g.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_parses_and_orders_prerequisites() {
        assert!(all().len() >= 7);
        assert_eq!(all()[0].id, "tree-clean");
    }

    #[test]
    fn an_unknown_id_suggests_the_gate_it_most_likely_means() {
        let err = check_ids(&["lbp_build".into()]).unwrap_err();
        assert!(
            err.starts_with("--only: unknown gate \"lbp_build\"; did you mean \"lbp-build\"? expected one of: tree-clean,"),
            "{err}"
        );
        assert_eq!(suggestion("Archive_Members"), Some("archive-members"));
        assert_eq!(suggestion("sdk-recrd"), Some("sdk-record"));
        assert_eq!(suggestion("bogus"), None);
        assert!(!check_ids(&["bogus".into()])
            .unwrap_err()
            .contains("did you mean"));
    }

    #[test]
    fn no_gate_runs_alone_the_suites_take_the_cpu_first_and_exclusive_resources_keep_gates_apart() {
        for g in all() {
            assert!(
                !g.exclusive
                    .iter()
                    .any(|r| r == EVIDENCE_DIRECTORY || r == MACHINE),
                "{} runs alone",
                g.id
            );
            // Only the suites are foreground work (`process::priority`), and
            // they start once the staged source and the interpreter passed.
            assert_eq!(g.foreground, g.id == "suites", "{}", g.id);
            assert_eq!(g.early_requires.is_empty(), g.id != "suites", "{}", g.id);
        }
        assert_eq!(
            get("suites").unwrap().early_requires,
            ["stage", "sdk-record"]
        );
        assert!(with_prerequisites(&["suites".into()]).contains(&"stage".to_string()));
        let (stage, lbp_build) = (get("stage").unwrap(), get("lbp-build").unwrap());
        assert!(!stage.conflicts_with(lbp_build) && !lbp_build.conflicts_with(stage));
        let mut a = stage.clone();
        let mut b = lbp_build.clone();
        a.exclusive = vec!["port-range".into()];
        assert!(!a.conflicts_with(&b));
        b.exclusive = vec!["netns".into(), "port-range".into()];
        assert!(a.conflicts_with(&b) && b.conflicts_with(&a));
        let mut alone = get("worker-isolation").unwrap().clone();
        alone.exclusive = vec![EVIDENCE_DIRECTORY.into()];
        for g in all() {
            assert!(
                alone.conflicts_with(g) && g.conflicts_with(&alone),
                "{}",
                g.id
            );
        }
    }

    #[test]
    fn write_areas_are_plain_relative_folders_of_dir() {
        for g in all() {
            let areas = g.write_areas();
            assert_eq!(
                areas[..2],
                [format!("logs/{}", g.id), format!("roots/{}", g.id)]
            );
            for a in &areas {
                assert!(
                    !a.is_empty()
                        && !a.starts_with('/')
                        && !a.ends_with('/')
                        && a.split('/').all(|p| !p.is_empty() && p != "." && p != ".."),
                    "{}: {a:?}",
                    g.id
                );
            }
        }
        // No declared folder holds another gate's own folders (nor the
        // workers' roots): leaving it out of worker-isolation's comparison
        // would leave those out too (`writes = ["roots"]` would hide every
        // write under DIR/roots from private-roots).
        for g in all() {
            for area in &g.writes {
                for h in all() {
                    for own in &h.write_areas()[..2] {
                        assert!(
                            !(own.starts_with(&format!("{area}/"))
                                || (own == area && h.id != g.id)),
                            "{}: writes {area:?} holds {}'s {own:?}",
                            g.id,
                            h.id
                        );
                    }
                }
            }
        }
        // The folders a gate hands on are declared by the gate that makes them.
        assert!(get("stage")
            .unwrap()
            .writes
            .contains(&"staging".to_string()));
        assert!(get("lbp-build")
            .unwrap()
            .writes
            .contains(&"packages".to_string()));
        assert!(get("archive-members")
            .unwrap()
            .writes
            .contains(&"extracted".to_string()));
        assert!(get("dependencies")
            .unwrap()
            .writes
            .contains(&"wheelhouse".to_string()));
    }

    #[test]
    fn prerequisites_are_added_transitively_in_run_order() {
        let got = with_prerequisites(&["archive-members".into()]);
        assert_eq!(
            got,
            [
                "tree-clean",
                "stage",
                "sdk-record",
                "lbp-build",
                "archive-members"
            ]
        );
    }
}
