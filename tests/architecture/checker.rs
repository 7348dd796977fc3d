//! The rules of `tests/architecture.rs` on small synthetic crates of our
//! own: each rule is shown to fail on the input that breaks it, and to hold
//! where the shape is allowed.

use super::imports::{self, Source};
use super::{invariants, layers, long_fns};

fn krate(files: &[(&str, &str)]) -> imports::Crate {
    imports::read(&sources(files)).unwrap_or_else(|e| panic!("{e}"))
}

fn sources(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(path, text)| Source {
            path: path.to_string(),
            text: text.to_string(),
        })
        .collect()
}

const TWO_LAYERS: &str = "# Map\n\n```layers\n1 data: low\n2 top: high\n```\n";

fn upward(files: &[(&str, &str)]) -> Vec<String> {
    let layers = layers::parse(TWO_LAYERS).unwrap();
    layers::upward(&krate(files), &layers)
        .into_iter()
        .map(|(_, s)| s)
        .collect()
}

#[test]
fn a_use_of_a_higher_layer_is_found_with_its_file_line_and_path() {
    let found = upward(&[
        ("lib.rs", "mod low;\nmod high;\n"),
        ("low.rs", "\nuse crate::high::Thing;\n"),
        ("high.rs", "pub struct Thing;\n"),
    ]);
    assert_eq!(
        found,
        vec!["src/low.rs:2 (layer 1 data) names `crate::high::Thing` of src/high.rs (layer 2 top)"]
    );
}

#[test]
fn a_path_through_an_alias_a_macro_or_an_expression_is_an_arrow_too() {
    for low in [
        "use crate::high;\nfn f() -> high::Thing { high::Thing }\n",
        "fn f() -> String { format!(\"{:?}\", crate::high::Thing) }\n",
        "fn f() { let _ = crate::high::make(); }\n",
        "use crate::high::*;\n",
    ] {
        let found = upward(&[
            ("lib.rs", "mod low;\nmod high;\n"),
            ("low.rs", low),
            (
                "high.rs",
                "#[derive(Debug)] pub struct Thing; pub fn make() {}\n",
            ),
        ]);
        assert_eq!(found.len(), 1, "{low:?}: {found:?}");
    }
}

#[test]
fn a_downward_use_and_test_code_are_no_violation() {
    let found = upward(&[
        ("lib.rs", "mod low;\nmod high;\n"),
        (
            "low.rs",
            "pub struct Base;\n#[cfg(test)]\nmod tests { use crate::high::Thing; }\n\
             #[test]\nfn t() { let _ = crate::high::Thing; }\n",
        ),
        (
            "high.rs",
            "use crate::low::Base;\npub struct Thing(Base);\n",
        ),
    ]);
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn a_module_declared_under_cfg_test_is_test_code() {
    let found = upward(&[
        ("lib.rs", "mod low;\nmod high;\n"),
        (
            "low.rs",
            "#[cfg(test)]\n#[path = \"low_tests.rs\"]\nmod tests;\n",
        ),
        ("low_tests.rs", "use crate::high::Thing;\n"),
        ("high.rs", "pub struct Thing;\n"),
    ]);
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn a_file_no_layer_covers_is_named() {
    let layers = layers::parse(TWO_LAYERS).unwrap();
    let k = krate(&[
        ("lib.rs", "mod low;\nmod high;\nmod stray;\n"),
        ("low.rs", ""),
        ("high.rs", ""),
        ("stray.rs", ""),
    ]);
    assert_eq!(layers::unmapped(&k, &layers), vec!["src/stray.rs"]);
}

#[test]
fn the_longest_listed_prefix_decides_a_layer() {
    let layers =
        layers::parse("```layers\n1 data: evidence::model\n2 views: evidence\n```\n").unwrap();
    let model = vec!["evidence".to_string(), "model".to_string()];
    let junit = vec!["evidence".to_string(), "junit".to_string()];
    assert_eq!(layers::layer_of(&layers, &model).unwrap().name, "data");
    assert_eq!(layers::layer_of(&layers, &junit).unwrap().name, "views");
}

#[test]
fn a_malformed_layers_block_is_refused_naming_the_line() {
    for (text, expected) in [
        ("no block here", "has no ```layers block"),
        ("```layers\n2 data: a\n```", "expected rank 1"),
        (
            "```layers\n1 data: a\n2 top: a\n```",
            "module a is listed in layers 1 and 2",
        ),
        (
            "```layers\n1 data a b\n```",
            "expected `N name: module ...`",
        ),
    ] {
        let err = layers::parse(text).unwrap_err();
        assert!(err.contains(expected), "{text:?}: {err}");
    }
}

#[test]
fn two_siblings_that_use_each_other_are_a_circle() {
    let k = krate(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "pub struct B;\nfn f() { let _ = crate::a::A; }\n"),
        ("c.rs", "use crate::a::A;\n"),
    ]);
    let circles = imports::circles(&k);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].parent, "crate");
    assert_eq!(circles[0].units, vec!["a", "b"]);
}

#[test]
fn a_circle_through_a_folders_root_is_found_between_the_folders() {
    // profile/groups.rs -> provision/builtin.rs -> (its root) provision.rs -> profile.rs
    let k = krate(&[
        ("lib.rs", "mod profile;\nmod provision;\n"),
        ("profile.rs", "mod groups;\npub struct Spec;\n"),
        (
            "profile/groups.rs",
            "use crate::provision::builtin::Lock;\n",
        ),
        (
            "provision.rs",
            "pub mod builtin;\nuse crate::profile::Spec;\n",
        ),
        (
            "provision/builtin.rs",
            "pub struct Lock;\nuse super::super::provision;\n",
        ),
    ]);
    let circles = imports::circles(&k);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].units, vec!["profile", "provision"]);
}

#[test]
fn a_folders_root_and_its_children_may_use_each_other() {
    let k = krate(&[
        ("lib.rs", "mod suites;\n"),
        (
            "suites.rs",
            "mod observe;\nmod decide;\npub struct Run;\nfn go() { decide::d(observe::o()); }\n",
        ),
        (
            "suites/observe.rs",
            "pub struct Obs;\npub fn o() -> Obs { let _ = super::Run; Obs }\n",
        ),
        (
            "suites/decide.rs",
            "use super::observe::Obs;\npub fn d(_: Obs) {}\n",
        ),
    ]);
    assert_eq!(imports::circles(&k), vec![]);
}

#[test]
fn observe_and_decide_siblings_that_call_each_other_are_a_circle_in_their_folder() {
    let k = krate(&[
        ("lib.rs", "mod gates;\n"),
        ("gates.rs", "mod suites;\n"),
        ("gates/suites.rs", "mod observe;\nmod rewrites;\n"),
        (
            "gates/suites/observe.rs",
            "pub struct Obs;\nfn f() { super::rewrites::hooks(); }\n",
        ),
        (
            "gates/suites/rewrites.rs",
            "use super::observe::Obs;\npub fn hooks() {}\n",
        ),
    ]);
    let circles = imports::circles(&k);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].parent, "gates::suites");
    assert_eq!(circles[0].units, vec!["observe", "rewrites"]);
}

#[test]
fn a_declared_module_without_a_file_is_an_error() {
    let err = imports::read(&sources(&[("lib.rs", "mod gone;\n")]))
        .err()
        .unwrap();
    assert!(err.to_string().contains("declares `mod gone;`"), "{err}");
}

#[test]
fn a_function_over_the_limit_is_listed_and_one_at_it_is_not() {
    let body = |n: usize| "    let _x = 1;\n".repeat(n);
    // `fn` line + body + closing brace.
    let text = format!(
        "fn at_limit() {{\n{}}}\n\nimpl S {{\n    fn over(&self) {{\n{}    }}\n}}\npub struct S;\n\
         #[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{}    }}\n}}\n",
        body(78),
        body(79),
        body(200)
    );
    let files = [("lib.rs", text.as_str())];
    let k = krate(&files);
    let long = long_fns::longer_than(&long_fns::functions(&k, &sources(&files)), 80);
    let names: Vec<(&str, usize)> = long.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    assert_eq!(names, vec![("S::over", 81)]);
}

#[test]
fn a_gate_that_prints_is_found_and_its_tests_may() {
    let files = [
        ("lib.rs", "mod gates;\nmod output;\n"),
        ("output.rs", "pub fn stderr(_: &str) {}\n"),
        ("gates.rs", "mod a;\nmod b;\nmod c;\n"),
        ("gates/a.rs", "fn run() {\n    println!(\"hi\");\n}\n"),
        (
            "gates/b.rs",
            "fn run() { let _ = std::io::stderr(); crate::output::stderr(\"x\"); }\n",
        ),
        (
            "gates/c.rs",
            "#[cfg(test)]\nmod tests { fn t() { eprintln!(\"ok in a test\"); } }\n",
        ),
    ];
    let k = krate(&files);
    let found = invariants::printing(&k, &sources(&files), &["gates"], &[]);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with("src/gates/a.rs:2 calls println!"),
        "{found:#?}"
    );
    assert!(found.iter().any(|l| l.contains("io::stderr")), "{found:#?}");
    assert!(
        found.iter().any(|l| l.contains("crate::output::stderr")),
        "{found:#?}"
    );
    let allowed = invariants::printing(
        &k,
        &sources(&files),
        &["gates"],
        &["gates/a.rs", "gates/b.rs"],
    );
    assert_eq!(allowed, Vec::<String>::new());
}

#[test]
fn naming_the_gates_outside_the_pipeline_is_found() {
    let k = krate(&[
        ("lib.rs", "mod gates;\nmod pipeline;\nmod cli;\n"),
        ("gates.rs", "pub fn all() {}\npub fn by_id() {}\n"),
        (
            "pipeline.rs",
            "use crate::gates;\nfn run() { gates::all(); gates::by_id(); }\n",
        ),
        ("cli.rs", "fn main() { crate::gates::by_id(); }\n"),
    ]);
    let found = invariants::gate_starters(&k, "pipeline");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/cli.rs:1 names crate::gates::by_id"),
        "{found:?}"
    );
}
