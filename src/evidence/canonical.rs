//! The canonical form of an evidence document and its sign-off digest:
//! the document with the top-level `sign_off` removed, object keys sorted
//! at every level (bytewise, as `serde_json::Value::sort_all_objects`
//! sorts them), serialised compactly as UTF-8, hashed with sha256.
//!
//! Three ways to the same digest: from a parsed tree ([`canonical_digest`],
//! what `replay` and `merge` use on the file they read), from the JSON text
//! ([`canonical_digest_of_text`]), and from the typed document itself
//! ([`canonical_digest_of`], what the sealing uses), which never holds the
//! document's text nor a tree of it: each object's keys are listed first,
//! then each member is serialised in key order straight into the hash, one
//! level at a time. The evidence of 50 candidates is 4.6 MB of compact JSON;
//! the sealing held it whole, and the verifier's peak grew with the
//! candidate count.

use crate::hash;
use serde::ser::{self, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// The sign-off digest of an evidence document: sha256 hex of the document
/// with the top-level `sign_off` removed, object keys sorted, serialised
/// compactly (no whitespace) as UTF-8. Replay recomputes it from the file.
pub fn canonical_digest(document: &serde_json::Value) -> String {
    let mut doc = document.clone();
    if let Some(map) = doc.as_object_mut() {
        map.remove("sign_off");
    }
    doc.sort_all_objects();
    let text = serde_json::to_string(&doc).expect("JSON value serialises");
    hash::sha256_bytes(text.as_bytes())
}

/// [`canonical_digest`] of a document given as JSON text, computed as the
/// text is read: each object's members are sorted and written one at a
/// time, so at most one level's index (keys and borrowed slices of the
/// text) is held besides the text, never a tree of the whole document.
///
/// # Errors
/// When `text` is not one JSON document.
pub fn canonical_digest_of_text(text: &[u8]) -> Result<String, serde_json::Error> {
    use sha2::Digest as _;
    let mut hasher = HashingWriter(sha2::Sha256::new());
    let top: BTreeMap<String, &RawValue> = serde_json::from_slice(text)?;
    hasher.0.update(b"{");
    let mut first = true;
    for (key, value) in top.iter().filter(|(k, _)| *k != "sign_off") {
        if !first {
            hasher.0.update(b",");
        }
        first = false;
        write_raw_member(&mut hasher, key, value)?;
    }
    hasher.0.update(b"}");
    Ok(hash::to_hex(&hasher.0.finalize()))
}

/// [`canonical_digest`] of the document `value` serialises to (an object;
/// its top-level `sign_off` left out), computed from `value` itself: no
/// text of the document and no tree of it is ever held, only the keys of
/// the object being written and one scalar at a time. Equal to
/// `canonical_digest(&serde_json::to_value(value)?)`.
///
/// # Errors
/// When `value` does not serialise to JSON (a map key that is not a
/// string, number or bool, a custom error of its own).
pub fn canonical_digest_of<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    use sha2::Digest as _;
    let mut hasher = HashingWriter(sha2::Sha256::new());
    write_object(&mut hasher, value, keys_of(value)?, Some("sign_off"))?;
    Ok(hash::to_hex(&hasher.0.finalize()))
}

/// Writes the canonical form of `value` (keys sorted at every level,
/// compact) to `w`, as [`canonical_digest_of`] hashes it.
///
/// # Errors
/// As [`canonical_digest_of`], and any error of `w`.
pub fn write_canonical_of<T: Serialize + ?Sized>(
    w: &mut dyn Write,
    value: &T,
) -> Result<(), serde_json::Error> {
    match value.serialize(Shape) {
        Ok(Kind::Scalar) => value.serialize(&mut serde_json::Serializer::new(w)),
        Ok(Kind::Seq) => {
            w.write_all(b"[").map_err(serde_json::Error::io)?;
            value.serialize(SeqWriter { w, first: true })?;
            w.write_all(b"]").map_err(serde_json::Error::io)
        }
        Ok(Kind::Object(keys)) => write_object(w, value, keys, None),
        // Shapes this writer does not stream (enum variants holding data, a
        // map of many keys): the tree of this value alone, sorted.
        Ok(Kind::Other) | Err(_) => {
            let mut tree = serde_json::to_value(value)?;
            tree.sort_all_objects();
            serde_json::to_writer(w, &tree)
        }
    }
}

/// Most keys an object may have to be written member by member: each
/// member is found by serialising the object again up to it, so the cost
/// is the square of its keys; a larger map is written from its tree.
const MAX_STREAMED_KEYS: usize = 256;

fn keys_of<T: Serialize + ?Sized>(value: &T) -> Result<Vec<String>, serde_json::Error> {
    match value.serialize(Shape)? {
        Kind::Object(keys) => Ok(keys),
        _ => Err(ser::Error::custom("the document is not a JSON object")),
    }
}

/// `{`, each member but `skip` in key order, `}`.
fn write_object<T: Serialize + ?Sized>(
    w: &mut dyn Write,
    value: &T,
    mut keys: Vec<String>,
    skip: Option<&str>,
) -> Result<(), serde_json::Error> {
    let io = serde_json::Error::io;
    keys.sort_unstable();
    keys.dedup();
    w.write_all(b"{").map_err(io)?;
    let mut first = true;
    for key in keys.iter().filter(|k| Some(k.as_str()) != skip) {
        if !first {
            w.write_all(b",").map_err(io)?;
        }
        first = false;
        serde_json::to_writer(&mut *w, key)?;
        w.write_all(b":").map_err(io)?;
        let mut pick = Pick {
            w: &mut *w,
            key,
            written: false,
        };
        value.serialize(&mut pick)?;
        if !pick.written {
            return Err(ser::Error::custom(format!(
                "member {key:?} was listed but not serialised the second time"
            )));
        }
    }
    w.write_all(b"}").map_err(io)
}

/// `"key":` and the canonical form of `value` (JSON text).
fn write_raw_member(
    w: &mut impl Write,
    key: &str,
    value: &RawValue,
) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *w, key)?;
    w.write_all(b":").map_err(serde_json::Error::io)?;
    write_raw(w, value)
}

/// The canonical form of `raw` (keys sorted at every level, compact), as
/// `Value`'s own serialisation writes it after `sort_all_objects`.
fn write_raw(w: &mut impl Write, raw: &RawValue) -> Result<(), serde_json::Error> {
    let io = serde_json::Error::io;
    match raw.get().trim_start().as_bytes().first() {
        Some(b'{') => {
            let members: BTreeMap<String, &RawValue> = serde_json::from_str(raw.get())?;
            w.write_all(b"{").map_err(io)?;
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",").map_err(io)?;
                }
                write_raw_member(w, key, value)?;
            }
            w.write_all(b"}").map_err(io)
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(raw.get())?;
            w.write_all(b"[").map_err(io)?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",").map_err(io)?;
                }
                write_raw(w, item)?;
            }
            w.write_all(b"]").map_err(io)
        }
        // A scalar, written as a `Value` writes it (escapes, numbers).
        _ => serde_json::to_writer(w, &serde_json::from_str::<serde_json::Value>(raw.get())?),
    }
}

/// An `io::Write` that only hashes what is written.
struct HashingWriter(sha2::Sha256);

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sha2::Digest::update(&mut self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a value serialises to, as JSON: [`Shape`]'s answer.
enum Kind {
    /// A string, number, bool or null.
    Scalar,
    /// An array.
    Seq,
    /// An object with these keys (in serialisation order).
    Object(Vec<String>),
    /// Something else JSON can hold (an enum variant with data, a map of
    /// more than [`MAX_STREAMED_KEYS`] keys): written from its tree.
    Other,
}

/// A serializer that only says what a value is ([`Kind`]), collecting an
/// object's keys without serialising its members.
struct Shape;

/// [`Shape`]'s state inside an object.
struct KeyList(Vec<String>);

/// The JSON object key a map key serialises to: a string as is, a number
/// or bool as its text (serde_json's rule for map keys).
fn map_key<K: Serialize + ?Sized>(key: &K) -> Result<String, serde_json::Error> {
    match serde_json::to_value(key)? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        _ => Err(ser::Error::custom("a map key must be a string")),
    }
}

/// Implements the scalar methods of a [`ser::Serializer`] with `$ok`.
macro_rules! scalars {
    ($ok:expr) => {
        fn serialize_bool(self, _: bool) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_i8(self, _: i8) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_i16(self, _: i16) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_i32(self, _: i32) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_i64(self, _: i64) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_i128(self, _: i128) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_u8(self, _: u8) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_u16(self, _: u16) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_u32(self, _: u32) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_u64(self, _: u64) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_u128(self, _: u128) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_f32(self, _: f32) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_f64(self, _: f64) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_char(self, _: char) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_str(self, _: &str) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_bytes(self, _: &[u8]) -> Result<Self::Ok, Self::Error> {
            // serde_json writes bytes as an array of numbers.
            $ok
        }
        fn serialize_none(self) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_unit(self) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_unit_struct(self, _: &'static str) -> Result<Self::Ok, Self::Error> {
            $ok
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
        ) -> Result<Self::Ok, Self::Error> {
            $ok
        }
    };
}

impl ser::Serializer for Shape {
    type Ok = Kind;
    type Error = serde_json::Error;
    type SerializeSeq = Elements;
    type SerializeTuple = Elements;
    type SerializeTupleStruct = Elements;
    type SerializeTupleVariant = Elements;
    type SerializeMap = KeyList;
    type SerializeStruct = KeyList;
    type SerializeStructVariant = Elements;

    scalars!(Ok(Kind::Scalar));

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Kind, Self::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Kind, Self::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Kind, Self::Error> {
        Ok(Kind::Other)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Elements, Self::Error> {
        Ok(Elements(true))
    }
    fn serialize_tuple(self, _: usize) -> Result<Elements, Self::Error> {
        Ok(Elements(true))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Elements, Self::Error> {
        Ok(Elements(true))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Elements, Self::Error> {
        Ok(Elements(false))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<KeyList, Self::Error> {
        Ok(KeyList(Vec::new()))
    }
    fn serialize_struct(self, _: &'static str, fields: usize) -> Result<KeyList, Self::Error> {
        Ok(KeyList(Vec::with_capacity(fields)))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Elements, Self::Error> {
        Ok(Elements(false))
    }
}

/// [`Shape`] inside an array (`true`: [`Kind::Seq`]) or an enum variant
/// holding data (`false`: [`Kind::Other`]); the elements are not looked at.
struct Elements(bool);

impl Elements {
    fn kind(&self) -> Kind {
        if self.0 {
            Kind::Seq
        } else {
            Kind::Other
        }
    }
}

/// The element methods of serde's sequence-like traits for [`Elements`]:
/// each element is passed over.
macro_rules! pass_over_elements {
    ($($trait:ident::$method:ident),+) => {$(
        impl ser::$trait for Elements {
            type Ok = Kind;
            type Error = serde_json::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, _: &T) -> Result<(), Self::Error> {
                Ok(())
            }
            fn end(self) -> Result<Kind, Self::Error> {
                Ok(self.kind())
            }
        }
    )+};
}

pass_over_elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeStructVariant for Elements {
    type Ok = Kind;
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Self::Error> {
        Ok(())
    }
    fn end(self) -> Result<Kind, Self::Error> {
        Ok(self.kind())
    }
}

impl ser::SerializeMap for KeyList {
    type Ok = Kind;
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.0.push(map_key(key)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, _: &T) -> Result<(), Self::Error> {
        Ok(())
    }
    fn end(self) -> Result<Kind, Self::Error> {
        Ok(if self.0.len() > MAX_STREAMED_KEYS {
            Kind::Other
        } else {
            Kind::Object(self.0)
        })
    }
}

impl ser::SerializeStruct for KeyList {
    type Ok = Kind;
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        _: &T,
    ) -> Result<(), Self::Error> {
        self.0.push(key.to_string());
        Ok(())
    }
    fn skip_field(&mut self, _: &'static str) -> Result<(), Self::Error> {
        Ok(())
    }
    fn end(self) -> Result<Kind, Self::Error> {
        Ok(Kind::Object(self.0))
    }
}

/// Writes each element of an array in canonical form, comma-separated
/// (the brackets are the caller's).
struct SeqWriter<'w> {
    w: &'w mut dyn Write,
    first: bool,
}

impl SeqWriter<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        if !self.first {
            self.w.write_all(b",").map_err(serde_json::Error::io)?;
        }
        self.first = false;
        write_canonical_of(&mut *self.w, value)
    }
}

/// Serialises only the member `key` of an object, in canonical form; the
/// other members are passed over unserialised.
struct Pick<'w, 'k> {
    w: &'w mut dyn Write,
    key: &'k str,
    written: bool,
}

/// [`Pick`] inside a map: whether the key just given is the one picked.
struct PickMap<'p, 'w, 'k> {
    pick: &'p mut Pick<'w, 'k>,
    this_one: bool,
}

/// Implements, for a serializer that meets one shape (`$what`, "an object"
/// or "an array"), the methods every such serializer shares: `Some` and a
/// newtype struct are their inner value; an enum variant with data is
/// refused as a changed shape.
macro_rules! wrappers_and_variants {
    ($what:literal) => {
        fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
            value.serialize(self)
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            value: &T,
        ) -> Result<(), Self::Error> {
            value.serialize(self)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<(), Self::Error> {
            unexpected($what)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, Self::Error> {
            unexpected($what)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, Self::Error> {
            unexpected($what)
        }
    };
}

fn unexpected<T>(what: &str) -> Result<T, serde_json::Error> {
    Err(ser::Error::custom(format!(
        "{what} changed shape between two serialisations"
    )))
}

impl<'a, 'w, 'k> ser::Serializer for &'a mut Pick<'w, 'k> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = ser::Impossible<(), serde_json::Error>;
    type SerializeTuple = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleVariant = ser::Impossible<(), serde_json::Error>;
    type SerializeMap = PickMap<'a, 'w, 'k>;
    type SerializeStruct = Self;
    type SerializeStructVariant = ser::Impossible<(), serde_json::Error>;

    scalars!(unexpected("an object"));
    wrappers_and_variants!("an object");

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        unexpected("an object")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> {
        unexpected("an object")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        unexpected("an object")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Ok(PickMap {
            pick: self,
            this_one: false,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Self::Error> {
        Ok(self)
    }
}

impl ser::SerializeStruct for &mut Pick<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        if !self.written && key == self.key {
            self.written = true;
            write_canonical_of(&mut *self.w, value)?;
        }
        Ok(())
    }
    fn skip_field(&mut self, _: &'static str) -> Result<(), Self::Error> {
        Ok(())
    }
    fn end(self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl ser::SerializeMap for PickMap<'_, '_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.this_one = !self.pick.written && map_key(key)? == self.pick.key;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        if self.this_one {
            self.this_one = false;
            self.pick.written = true;
            write_canonical_of(&mut *self.pick.w, value)?;
        }
        Ok(())
    }
    fn end(self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Drives [`SeqWriter`] over an array's elements.
impl ser::Serializer for SeqWriter<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = ser::Impossible<(), serde_json::Error>;
    type SerializeMap = ser::Impossible<(), serde_json::Error>;
    type SerializeStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeStructVariant = ser::Impossible<(), serde_json::Error>;

    scalars!(unexpected("an array"));
    wrappers_and_variants!("an array");

    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Self::Error> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Self::Error> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Self::Error> {
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        unexpected("an array")
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        unexpected("an array")
    }
}

/// The element methods of serde's sequence traits for [`SeqWriter`]: each
/// element is written in canonical form.
macro_rules! write_elements {
    ($($trait:ident::$method:ident),+) => {$(
        impl ser::$trait for SeqWriter<'_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
                self.element(value)
            }
            fn end(self) -> Result<(), Self::Error> {
                Ok(())
            }
        }
    )+};
}

write_elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

#[cfg(test)]
#[path = "tests/canonical.rs"]
mod tests;
