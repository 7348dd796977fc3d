//! Property tests of every reader of untrusted bytes (RECORD, the ZIP
//! central directory, tar extraction, manifest, profile, pytest's JUnit):
//! arbitrary bytes and inputs mutated from valid seeds never panic. A few
//! hundred cases each here; `cargo xtask fuzz` runs a million per reader.
//! The readers and seeds are `verify_coding_candidates::fuzz`.

use proptest::prelude::*;
use verify_coding_candidates::fuzz::{self, Rng, Scratch, Target};

const CASES: u32 = 300;

fn target(name: &str) -> Target {
    fuzz::targets()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no fuzz target {name}"))
}

/// Runs `name` on `data` in a fresh scratch directory.
fn feed(name: &str, data: &[u8]) {
    let t = target(name);
    let dir = tempfile::tempdir().expect("scratch directory");
    let mut scratch = Scratch::new(dir.path()).expect("scratch directory");
    let _accepted = (t.run)(&mut scratch, data);
}

/// `(mutation seed, arbitrary bytes)`: each case runs one mutated seed
/// input and the arbitrary bytes.
fn inputs() -> impl Strategy<Value = (u64, Vec<u8>)> {
    (
        any::<u64>(),
        proptest::collection::vec(any::<u8>(), 0..2048),
    )
}

fn both(name: &str, seed: u64, raw: &[u8]) {
    let t = target(name);
    let mutated = fuzz::mutate(&mut Rng::new(seed), &t.seeds);
    feed(name, &mutated);
    feed(name, raw);
}

macro_rules! reader_properties {
    ($($test:ident => $name:literal),* $(,)?) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]
            $(
                #[test]
                fn $test((seed, raw) in inputs()) {
                    both($name, seed, &raw);
                }
            )*
        }
    };
}

reader_properties! {
    record_reader_never_panics => "record",
    zip_central_directory_reader_never_panics => "zip-central-directory",
    tar_extraction_never_panics => "tar-extraction",
    manifest_readers_never_panic => "manifest",
    profile_parser_never_panics => "profile",
    junit_reader_never_panics => "junit",
}

#[test]
fn every_reader_has_a_property_test() {
    let names: Vec<&str> = fuzz::targets().iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "record",
            "zip-central-directory",
            "tar-extraction",
            "manifest",
            "profile",
            "junit"
        ]
    );
}
