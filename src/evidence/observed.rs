//! [`Observed`]: a check's observed values, held as compact JSON text.
//!
//! A run's checks carry every value they rest on (member lists, process
//! facts, RPC answers): about 0.9 MB of JSON at 50 candidates. As
//! `serde_json::Value` trees (an ordered map and a string per key and per
//! value) that was several times its text, held from the gate's end until
//! the evidence was written, and the verifier's peak grew with the
//! candidate count. The text is what is held; a tree is built only when a
//! reader looks inside ([`Observed::value`], `Deref`), and kept for it.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::OnceLock;

/// A JSON value held as its compact text; reads as a [`Value`] through
/// `Deref` (`observed["key"]`, `observed.as_array()`), parsed on first
/// read. Serialises as the value itself (pretty where the document is).
pub struct Observed {
    /// The value as compact JSON text.
    text: Box<RawValue>,
    /// The value as a tree, once read.
    tree: OnceLock<Value>,
}

impl Observed {
    /// The value as a tree (parsed once, then kept).
    pub fn value(&self) -> &Value {
        self.tree.get_or_init(|| {
            serde_json::from_str(self.text.get()).expect("observed text is JSON it was made from")
        })
    }

    /// The value as compact JSON text.
    pub fn text(&self) -> &str {
        self.text.get()
    }

    /// The value, taken out as a tree.
    pub fn into_value(self) -> Value {
        match self.tree.into_inner() {
            Some(tree) => tree,
            None => serde_json::from_str(self.text.get())
                .expect("observed text is JSON it was made from"),
        }
    }
}

impl From<Value> for Observed {
    fn from(value: Value) -> Self {
        let text = serde_json::value::to_raw_value(&value).expect("a JSON value serialises");
        Self {
            text,
            tree: OnceLock::new(),
        }
    }
}

impl From<Observed> for Value {
    fn from(observed: Observed) -> Self {
        observed.into_value()
    }
}

impl std::ops::Deref for Observed {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl Clone for Observed {
    fn clone(&self) -> Self {
        Self {
            text: self.text.clone(),
            tree: OnceLock::new(),
        }
    }
}

impl std::fmt::Debug for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text.get())
    }
}

impl std::fmt::Display for Observed {
    /// The compact JSON text, as `Value`'s own `Display` writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text.get())
    }
}

impl PartialEq for Observed {
    fn eq(&self, other: &Self) -> bool {
        self.text.get() == other.text.get() || self.value() == other.value()
    }
}

impl PartialEq<Value> for Observed {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl Serialize for Observed {
    /// The value itself, member by member (never the raw text: a pretty
    /// document stays pretty inside it). A tree is built for the time of
    /// this call only, unless one is kept already.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.tree.get() {
            Some(tree) => tree.serialize(serializer),
            None => {
                let tree: Value =
                    serde_json::from_str(self.text.get()).map_err(serde::ser::Error::custom)?;
                tree.serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Observed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Observed::from)
    }
}

impl JsonSchema for Observed {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        Value::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }

    fn inline_schema() -> bool {
        Value::inline_schema()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn it_reads_serialises_and_compares_as_its_value() {
        let value = json!({"b": [1, {"c": null}], "a": "x"});
        let observed = Observed::from(value.clone());
        assert_eq!(observed.text(), r#"{"b":[1,{"c":null}],"a":"x"}"#);
        assert_eq!(observed["b"][1]["c"], Value::Null);
        assert_eq!(observed, value);
        assert_eq!(
            serde_json::to_string_pretty(&observed).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
        let back: Observed = serde_json::from_str(&serde_json::to_string(&value).unwrap()).unwrap();
        assert_eq!(back, observed);
        assert_eq!(Value::from(back.clone()), value);
        assert_eq!(format!("{back:?}"), back.text());
    }
}
