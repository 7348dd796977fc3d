use super::*;
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

fn streamed(value: &impl Serialize) -> String {
    canonical_digest_of(value).expect("serialises")
}

fn from_tree(value: &impl Serialize) -> String {
    canonical_digest(&serde_json::to_value(value).expect("serialises"))
}

fn text_of(value: &impl Serialize) -> String {
    let mut out = Vec::new();
    write_canonical_of(&mut out, value).expect("serialises");
    String::from_utf8(out).expect("UTF-8")
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Pass,
    NotRun,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Tagged {
    Archive { sha256: String, size: u64 },
    Folder { path: String },
}

#[derive(Serialize)]
enum Holding {
    Newtype(Vec<u8>),
    Tuple(u8, String),
    Struct { z: u8, a: u8 },
}

#[derive(Serialize)]
struct Inner {
    zeta: Option<String>,
    alpha: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    gone: Option<u32>,
    #[serde(skip)]
    _never: u8,
    map: HashMap<String, Value>,
    numbered: BTreeMap<u32, bool>,
}

#[derive(Serialize)]
struct Document {
    verdict: Unit,
    sign_off: Value,
    inner: Vec<Inner>,
    tagged: Vec<Tagged>,
    holding: Vec<Holding>,
    observed: Value,
    nested: Vec<Vec<Option<Unit>>>,
    pair: (u8, &'static str),
    bytes: serde_bytes_like::Bytes,
    empty_map: BTreeMap<String, String>,
    empty_list: Vec<u8>,
    many: BTreeMap<String, u32>,
    text: String,
    big: u64,
    negative: i64,
    float: f64,
}

mod serde_bytes_like {
    /// Serialises with `serialize_bytes` (an array of numbers in JSON).
    pub struct Bytes(pub Vec<u8>);
    impl serde::Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }
}

fn document() -> Document {
    let mut map = HashMap::new();
    for k in ["b", "a", "é", "A", "a\u{0}", "z\"q"] {
        map.insert(
            k.to_string(),
            json!({"y": [1, {"d": 2, "c": null}], "x": k}),
        );
    }
    Document {
        verdict: Unit::Pass,
        sign_off: json!({"evidence_sha256": "left out"}),
        inner: vec![
            Inner {
                zeta: None,
                alpha: 0.1,
                gone: None,
                _never: 7,
                map,
                numbered: BTreeMap::from([(10, true), (9, false), (100, true)]),
            },
            Inner {
                zeta: Some("z".into()),
                alpha: 1e300,
                gone: Some(3),
                _never: 0,
                map: HashMap::new(),
                numbered: BTreeMap::new(),
            },
        ],
        tagged: vec![
            Tagged::Folder { path: "p".into() },
            Tagged::Archive {
                sha256: "ab".into(),
                size: 3,
            },
        ],
        holding: vec![
            Holding::Newtype(vec![1, 2]),
            Holding::Tuple(1, "t".into()),
            Holding::Struct { z: 1, a: 2 },
        ],
        observed: json!({"z": [[], {}], "m": {"q": 1.5, "b": "\u{1F600}\n\t"}, "a": -0.0}),
        nested: vec![vec![Some(Unit::NotRun), None], vec![]],
        pair: (4, "four"),
        bytes: serde_bytes_like::Bytes(vec![0, 255]),
        empty_map: BTreeMap::new(),
        empty_list: Vec::new(),
        many: (0..300).map(|i| (format!("k{i}"), i)).collect(),
        text: "line\u{2028}\u{7f}\\".into(),
        big: u64::MAX,
        negative: i64::MIN,
        float: 0.1,
    }
}

/// Every shape the evidence uses, and some it does not: the digest streamed
/// from the typed document is the one of its tree, sorted.
#[test]
fn the_streamed_digest_is_the_trees() {
    let doc = document();
    assert_eq!(streamed(&doc), from_tree(&doc));
    let text = serde_json::to_vec(&doc).unwrap();
    assert_eq!(streamed(&doc), canonical_digest_of_text(&text).unwrap());
}

/// An `f32` is written as its own shortest text (what the file holds and
/// replay reads), not as the `f64` a tree would widen it to: the streamed
/// digest is the file's.
#[test]
fn an_f32_digests_as_its_text() {
    let doc = json!({"a": 1});
    #[derive(Serialize)]
    struct Narrow {
        float: f32,
    }
    let narrow = Narrow { float: 0.1 };
    let text = serde_json::to_vec(&narrow).unwrap();
    assert_eq!(streamed(&narrow), canonical_digest_of_text(&text).unwrap());
    assert_ne!(streamed(&narrow), from_tree(&narrow));
    assert_eq!(streamed(&doc), from_tree(&doc));
}

/// The canonical text itself: keys sorted at every level, compact, the
/// top-level `sign_off` only left out of the digest.
#[test]
fn the_canonical_text_sorts_every_level() {
    let value = json!({"b": {"z": 1, "a": [{"d": 1, "c": 2}]}, "a": null, "sign_off": 1});
    assert_eq!(
        text_of(&value),
        r#"{"a":null,"b":{"a":[{"c":2,"d":1}],"z":1},"sign_off":1}"#
    );
    let without = json!({"b": {"z": 1, "a": [{"d": 1, "c": 2}]}, "a": null});
    assert_eq!(
        canonical_digest_of(&value).unwrap(),
        hash::sha256_bytes(text_of(&without).as_bytes())
    );
}

/// A document that is not an object has no sign-off digest.
#[test]
fn a_document_that_is_not_an_object_is_refused() {
    assert!(canonical_digest_of(&json!([1, 2])).is_err());
    assert!(canonical_digest_of(&3).is_err());
}

/// A map whose keys are not strings, numbers or bools is not JSON.
#[test]
fn a_map_key_that_is_not_a_string_is_refused() {
    let map: BTreeMap<(u8, u8), u8> = BTreeMap::from([((1, 2), 3)]);
    assert!(canonical_digest_of(&json!({"m": 1})).is_ok());
    #[derive(Serialize)]
    struct Holder {
        m: BTreeMap<(u8, u8), u8>,
    }
    assert!(canonical_digest_of(&Holder { m: map }).is_err());
}

fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any JSON object: the streamed digest, the text's and the tree's agree.
    #[test]
    fn any_object_digests_alike(
        members in prop::collection::btree_map(".{0,6}", any_value(), 0..8)
    ) {
        let doc = Value::Object(members.into_iter().collect());
        let text = serde_json::to_vec(&doc).unwrap();
        prop_assert_eq!(streamed(&doc), canonical_digest(&doc));
        prop_assert_eq!(streamed(&doc), canonical_digest_of_text(&text).unwrap());
    }
}
