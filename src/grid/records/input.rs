//! The JSON of record writes: `RecordInput` and its cells (`CellInput`, deserialized field by
//! field), and the records of a delete.

use crate::json_object::ObjectOnly;
use compact_str::CompactString;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use utoipa::ToSchema;

use super::MAX_RECORDS_PER_REQUEST;

/// A cell as written: an absent `value` leaves the value alone; `null` empties it. A reference
/// cell's ids may come as `referencedIds` instead of `value` (the OpenAPI's `SetCell`).
/// Deserialized field by field (`CellVisitor`), straight into this form: a bulk add parses
/// twelve thousand of them, so it is kept to one cache line (64 bytes; with a
/// `serde_json::Value` and the statuses inline it was 144), the statuses, rarely given in
/// bulk, behind a box of their own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellInput {
    pub column_id: Option<CompactString>,
    pub value: Option<ValueIn>,
    pub statuses: Option<Box<StatusesIn>>,
}

/// The status fields of a cell as written, by name (checked against the branch later).
/// Held inline up to 24 bytes: no allocation for any status name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusesIn {
    pub dependency: Option<CompactString>,
    pub source: Option<CompactString>,
}

impl CellInput {
    /// A cell writing `value` (if any) to `column_id`, with `statuses` (each by name).
    pub fn new(
        column_id: impl Into<CompactString>,
        value: Option<Value>,
        dependency: Option<&str>,
        source: Option<&str>,
    ) -> CellInput {
        let statuses = (dependency.is_some() || source.is_some()).then(|| {
            Box::new(StatusesIn {
                dependency: dependency.map(Into::into),
                source: source.map(Into::into),
            })
        });
        CellInput { column_id: Some(column_id.into()), value: value.map(ValueIn::from), statuses }
    }

    /// The `dependencyStatus` written, by name.
    pub fn dependency_status(&self) -> Option<&str> {
        self.statuses.as_ref().and_then(|s| s.dependency.as_deref())
    }

    /// The `sourceStatus` written, by name.
    pub fn source_status(&self) -> Option<&str> {
        self.statuses.as_ref().and_then(|s| s.source.as_deref())
    }
}

/// A cell's JSON value as written: `serde_json::Value` in 32 bytes rather than 72, a string
/// (what nearly every cell of a bulk write holds) inline, an object boxed.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueIn {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Value>),
    Object(Box<serde_json::Map<String, Value>>),
}

impl ValueIn {
    /// Whether the value is `null` (it empties the cell).
    pub fn is_null(&self) -> bool {
        matches!(self, ValueIn::Null)
    }

    /// The same value as a `serde_json::Value`.
    pub fn into_value(self) -> Value {
        match self {
            ValueIn::Null => Value::Null,
            ValueIn::Bool(b) => Value::Bool(b),
            ValueIn::Number(n) => Value::Number(n),
            ValueIn::String(s) => Value::String(s),
            ValueIn::Array(items) => Value::Array(items),
            ValueIn::Object(map) => Value::Object(*map),
        }
    }
}

impl From<Value> for ValueIn {
    fn from(value: Value) -> ValueIn {
        match value {
            Value::Null => ValueIn::Null,
            Value::Bool(b) => ValueIn::Bool(b),
            Value::Number(n) => ValueIn::Number(n),
            Value::String(s) => ValueIn::String(s),
            Value::Array(items) => ValueIn::Array(items),
            Value::Object(map) => ValueIn::Object(Box::new(map)),
        }
    }
}

impl<'de> Deserialize<'de> for ValueIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ValueIn, D::Error> {
        d.deserialize_any(ValueInVisitor)
    }
}

/// Reads any JSON value as `serde_json::Value`'s own visitor does (the same numbers, the
/// same strings), keeping scalars and strings in `ValueIn`'s own variants.
struct ValueInVisitor;

impl<'de> serde::de::Visitor<'de> for ValueInVisitor {
    type Value = ValueIn;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<ValueIn, E> {
        Ok(ValueIn::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<ValueIn, E> {
        Ok(ValueIn::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<ValueIn, E> {
        Ok(ValueIn::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<ValueIn, E> {
        Ok(serde_json::Number::from_f64(n).map_or(ValueIn::Null, ValueIn::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<ValueIn, E> {
        Ok(ValueIn::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<ValueIn, E> {
        Ok(ValueIn::String(s))
    }

    fn visit_none<E>(self) -> Result<ValueIn, E> {
        Ok(ValueIn::Null)
    }

    fn visit_unit<E>(self) -> Result<ValueIn, E> {
        Ok(ValueIn::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<ValueIn, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<ValueIn, A::Error> {
        let value = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        Ok(ValueIn::from(value))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ValueIn, A::Error> {
        let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(ValueIn::from(value))
    }
}

/// A cell as it arrives (the OpenAPI schema of `CellInput`).
#[derive(Debug, Clone, Default, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // describes the wire form; `CellVisitor` reads it
pub struct CellWire {
    column_id: Option<String>,
    /// Any JSON value: text, a number, a boolean, a list of texts (selections, files,
    /// references) or null.
    #[schema(value_type = Option<Value>)]
    value: Option<Value>,
    /// The ids a reference cell points at (instead of `value`).
    referenced_ids: Option<Vec<String>>,
    dependency_status: Option<String>,
    source_status: Option<String>,
}

/// The fields of a cell object; others are ignored.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum CellField {
    ColumnId,
    Value,
    ReferencedIds,
    DependencyStatus,
    SourceStatus,
    #[serde(other)]
    Other,
}

struct CellVisitor;

impl<'de> serde::de::Visitor<'de> for CellVisitor {
    type Value = CellInput;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a cell object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CellInput, A::Error> {
        use serde::de::Error;
        /// Sets a field given once at most, as a derived `Deserialize` would.
        fn once<T, E: Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
            if slot.is_some() {
                return Err(E::duplicate_field(name));
            }
            *slot = Some(value);
            Ok(())
        }
        let mut cell = CellInput::default();
        let mut referenced_ids: Option<Option<Vec<String>>> = None;
        let (mut column_id, mut dependency, mut source): (_, Option<Option<CompactString>>, _) =
            (None, None, None);
        while let Some(field) = map.next_key::<CellField>()? {
            match field {
                CellField::ColumnId => once(&mut column_id, map.next_value()?, "columnId")?,
                // `null` is a value (it empties the cell), unlike an absent `value`.
                CellField::Value => once(&mut cell.value, map.next_value::<ValueIn>()?, "value")?,
                CellField::ReferencedIds => {
                    once(&mut referenced_ids, map.next_value()?, "referencedIds")?
                }
                CellField::DependencyStatus => {
                    once(&mut dependency, map.next_value()?, "dependencyStatus")?
                }
                CellField::SourceStatus => once(&mut source, map.next_value()?, "sourceStatus")?,
                CellField::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        cell.column_id = column_id.flatten();
        let (dependency, source) = (dependency.flatten(), source.flatten());
        if dependency.is_some() || source.is_some() {
            cell.statuses = Some(Box::new(StatusesIn { dependency, source }));
        }
        match (cell.value.is_some(), referenced_ids.flatten()) {
            (_, None) => {}
            (false, Some(ids)) => {
                cell.value = Some(ValueIn::Array(ids.into_iter().map(Value::String).collect()))
            }
            (true, Some(_)) => {
                return Err(A::Error::custom(
                    "a cell gives either value or referencedIds, not both",
                ))
            }
        }
        Ok(cell)
    }
}

impl<'de> Deserialize<'de> for CellInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CellInput, D::Error> {
        d.deserialize_map(CellVisitor)
    }
}

/// A record as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordInput {
    pub id: Option<String>,
    pub path: Option<String>,
    #[serde(default, deserialize_with = "cells_with_room")]
    #[schema(value_type = Vec<CellWire>)]
    pub cells: Vec<CellInput>,
    #[serde(default, rename = "markUpdatedCellsWithMTFlag")]
    pub mark_mt: Option<bool>,
    /// The version the writer read (its `ETag`, quoted or not): the update is refused with 412
    /// when the record changed since.
    pub if_match: Option<String>,
}

/// The records of a bulk write's body: the first `MAX_RECORDS_PER_REQUEST` of them, and how
/// many it held. Records past the limit are read (a malformed one is refused as before) and
/// dropped one by one, so a body of millions of tiny records costs no more memory than one of
/// a thousand; the write is then refused by its count (`check_count`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordsBody {
    pub records: Vec<RecordInput>,
    pub count: usize,
}

impl RecordsBody {
    /// Keeps `record` if there is room, counting it either way.
    pub(in crate::grid::records) fn take(&mut self, record: RecordInput) {
        self.count += 1;
        if self.records.len() < MAX_RECORDS_PER_REQUEST {
            self.records.push(record);
        }
    }
}

impl<'de> Deserialize<'de> for RecordsBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RecordsBody, D::Error> {
        struct Records;
        impl<'de> serde::de::Visitor<'de> for Records {
            type Value = RecordsBody;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                // As a `Vec`'s own visitor says it, so errors read as before.
                f.write_str("a sequence")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RecordsBody, A::Error> {
                let mut body = RecordsBody::default();
                // Each record an object (`json_object`), not a list of its fields.
                while let Some(ObjectOnly(record)) = seq.next_element()? {
                    body.take(record);
                }
                Ok(body)
            }
        }
        d.deserialize_seq(Records)
    }
}

/// A record's cells, into a vector with room for a typical record's from the start (serde's
/// own starts empty when the format gives no length, as JSON does, and copies at each doubling).
fn cells_with_room<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<CellInput>, D::Error> {
    struct Cells;
    impl<'de> serde::de::Visitor<'de> for Cells {
        type Value = Vec<CellInput>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of cells")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            // The length when the format knows it (a record read from a `Value`, as an import
            // reads each): an import of a million records of one cell each kept room for 16.
            let mut cells = Vec::with_capacity(seq.size_hint().map_or(16, |n| n.min(256)));
            while let Some(cell) = seq.next_element()? {
                cells.push(cell);
            }
            Ok(cells)
        }
    }
    d.deserialize_seq(Cells)
}

impl RecordInput {
    pub(in crate::grid::records) fn mark_mt(&self) -> bool {
        self.mark_mt.unwrap_or(false)
    }
}

/// Records to delete: by id, or by (id, path) in grids identified by both.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct DeleteRecordsInput {
    pub ids: Option<Vec<String>>,
    #[serde(default, deserialize_with = "crate::json_object::optional_objects")]
    pub identifiers: Option<Vec<RecordIdentifier>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordIdentifier {
    pub id: String,
    #[serde(default)]
    pub path: String,
    /// The version the writer read: the delete is refused with 412 when the record changed.
    #[serde(default)]
    pub if_match: Option<String>,
}

// See `CellInput`'s doc.
const _: () = assert!(std::mem::size_of::<CellInput>() <= 64);
