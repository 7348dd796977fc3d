//! The code map of `ARCHITECTURE.md`, kept true.
//!
//! The crate's own source is read with `syn` (no build, no compiler): its
//! module tree from `lib.rs`, every path of non-test code that names the
//! crate's items (`tests/architecture/imports.rs`), and every function's
//! length (`long_fns.rs`). Then:
//! - every file has a layer, and no file names anything of a higher layer
//!   (`layers.rs`, the map read from ARCHITECTURE.md's ```layers block);
//! - no two modules reach each other, folder by folder (`imports::circles`);
//! - a gate never prints, and only the pipeline starts gates
//!   (`invariants.rs`);
//! - no function is longer than [`LONGEST`] lines but those listed in
//!   [`LONG_FUNCTIONS`], each with the reason it is not split.
//!
//! Each rule is also run on small synthetic crates that break it (module
//! `checker`), so a rule that could never fail would be seen.

#[cfg(test)]
#[path = "architecture/checker.rs"]
mod checker;
#[path = "architecture/imports.rs"]
mod imports;
#[path = "architecture/invariants.rs"]
mod invariants;
#[path = "architecture/layers.rs"]
mod layers;
#[path = "architecture/long_fns.rs"]
mod long_fns;

use imports::{Crate, Source};
use std::path::Path;

/// The longest a function may be, in lines (`fn` to its closing brace).
const LONGEST: usize = 80;

/// Functions allowed to be longer than [`LONGEST`], and why.
const LONG_FUNCTIONS: &[(&str, &str)] = &[];

/// The ratchet: functions longer than [`LONGEST`] that were long when the
/// rule came in and are not split yet (issue 38 item 3 continues). Listed
/// so that any NEW long function fails; an entry that is split, or no
/// longer exists, fails [`the_ratchet_lists_only_functions_still_long`]
/// until it is removed, so the list only shrinks.
const NOT_YET_SPLIT: &[&str] = &[];

/// Files of `gates/` allowed to write to the terminal, and why.
const PRINTING_GATE_FILES: &[(&str, &str)] = &[(
    "gates/discovery_rpc/host.rs",
    "the discovery host is a program of its own (`__discovery-host`): its stderr is the \
     runtime log the gate keeps in DIR/logs, not the verifier's terminal",
)];

/// Arrows against the layers kept for now, and why.
const UPWARD_ARROWS: &[(&str, &str, &str)] = &[];

fn source_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read_crate() -> (Vec<Source>, Crate) {
    let sources = imports::sources_under(&source_dir());
    let krate = imports::read(&sources).unwrap_or_else(|e| panic!("{e}"));
    (sources, krate)
}

fn read_layers() -> Vec<layers::Layer> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).expect("read ARCHITECTURE.md");
    layers::parse(&text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_file_of_the_crate_has_a_layer() {
    let (_, krate) = read_crate();
    let missing = layers::unmapped(&krate, &read_layers());
    assert!(
        missing.is_empty(),
        "files no layer of ARCHITECTURE.md's ```layers block covers; add each module to the layer \
         whose rules it keeps:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_file_names_anything_of_a_higher_layer() {
    let (_, krate) = read_crate();
    let found: Vec<String> = layers::upward(&krate, &read_layers())
        .into_iter()
        .filter(|(a, _)| {
            !UPWARD_ARROWS
                .iter()
                .any(|(f, t, _)| *f == a.from && *t == a.to)
        })
        .map(|(_, sentence)| sentence)
        .collect();
    assert!(
        found.is_empty(),
        "{} arrow(s) go up the layers of ARCHITECTURE.md; move the type or function to the lower \
         layer (or the caller up), not behind an indirection:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_kept_upward_arrows_still_exist() {
    let (_, krate) = read_crate();
    let upward = layers::upward(&krate, &read_layers());
    for (from, to, _) in UPWARD_ARROWS {
        assert!(
            upward.iter().any(|(a, _)| a.from == *from && a.to == *to),
            "UPWARD_ARROWS lists src/{from} -> src/{to}, which no longer goes up: remove the entry"
        );
    }
}

#[test]
fn no_two_modules_reach_each_other() {
    let (_, krate) = read_crate();
    let circles = imports::circles(&krate);
    assert!(
        circles.is_empty(),
        "import circles (in each folder, units that reach each other; a unit is a child module \
         with everything below it):\n{}",
        circles
            .iter()
            .map(|c| format!("in {}: {}", c.parent, c.units.join(" <-> ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_gate_never_prints() {
    let (sources, krate) = read_crate();
    let allowed: Vec<&str> = PRINTING_GATE_FILES.iter().map(|(f, _)| *f).collect();
    let found = invariants::printing(&krate, &sources, &["gates"], &allowed);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn only_the_pipeline_starts_gates() {
    let (_, krate) = read_crate();
    let found = invariants::gate_starters(&krate, "pipeline");
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn no_function_is_longer_than_a_screen_unless_listed_with_a_reason() {
    let (sources, krate) = read_crate();
    let long = long_fns::longer_than(&long_fns::functions(&krate, &sources), LONGEST);
    let unlisted: Vec<String> = long
        .iter()
        .filter(|f| !LONG_FUNCTIONS.iter().any(|(n, _)| *n == f.name))
        .filter(|f| !NOT_YET_SPLIT.contains(&f.name.as_str()))
        .map(|f| format!("{} ({} lines, src/{}:{})", f.name, f.lines, f.file, f.line))
        .collect();
    assert!(
        unlisted.is_empty(),
        "{} function(s) longer than {LONGEST} lines: split each into named phases, or list it in \
         LONG_FUNCTIONS with the reason it must stay whole:\n{}",
        unlisted.len(),
        unlisted.join("\n")
    );
    let stale: Vec<&str> = LONG_FUNCTIONS
        .iter()
        .filter(|(n, _)| !long.iter().any(|f| f.name == *n))
        .map(|(n, _)| *n)
        .collect();
    assert!(
        stale.is_empty(),
        "LONG_FUNCTIONS lists functions no longer over {LONGEST} lines (or gone): remove them: {stale:?}"
    );
}

/// The figures of the code map (`cargo test --test architecture -- --ignored
/// --nocapture figures`): files, arrows, arrows between top-level modules,
/// circles and functions over [`LONGEST`] lines.
#[test]
#[ignore]
fn figures() {
    let (sources, krate) = read_crate();
    let mut top = std::collections::BTreeSet::new();
    for a in &krate.arrows {
        let (f, t) = (&krate.file_modules[&a.from], &krate.file_modules[&a.to]);
        if f.first() != t.first() {
            top.insert((f.first().cloned(), t.first().cloned()));
        }
    }
    println!(
        "files {}, arrows between files {}, arrows between top-level modules {}",
        krate.file_modules.len(),
        krate.arrows.len(),
        top.len()
    );
    for c in imports::circles(&krate) {
        println!(
            "circle in {} ({}): {}",
            c.parent,
            c.units.len(),
            c.units.join(" ")
        );
    }
    for (_, s) in layers::upward(&krate, &read_layers()) {
        println!("upward: {s}");
    }
    let long = long_fns::longer_than(&long_fns::functions(&krate, &sources), LONGEST);
    println!("functions over {LONGEST} lines: {}", long.len());
    for f in long {
        println!("  {:4} {} (src/{}:{})", f.lines, f.name, f.file, f.line);
    }
}

#[test]
#[ignore]
fn dump_arrows() {
    let (_, krate) = read_crate();
    let mut s = String::new();
    for a in &krate.arrows {
        s += &format!("{} -> {} :{} {}\n", a.from, a.to, a.line, a.path);
    }
    std::fs::write("/tmp/arch-arrows.txt", s).unwrap();
}

#[test]
fn the_ratchet_lists_only_functions_still_long() {
    let (sources, krate) = read_crate();
    let long = long_fns::longer_than(&long_fns::functions(&krate, &sources), LONGEST);
    let stale: Vec<&str> = NOT_YET_SPLIT
        .iter()
        .copied()
        .filter(|n| !long.iter().any(|f| f.name == *n))
        .collect();
    assert!(
        stale.is_empty(),
        "NOT_YET_SPLIT lists function(s) that are no longer longer than {LONGEST} lines (split, \
         renamed or gone): remove them from the list:\n{}",
        stale.join("\n")
    );
}
