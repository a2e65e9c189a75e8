//! A JSON file as an import's record writes (`type=json`, decisions.md section 7), apart from
//! HTTP: an array of records as the records API takes them,
//! `[{"id": "k1", "path": "ui", "cells": [{"columnId": "en", "value": "Start"}]}]` (`id` and
//! `path` optional; an existing id updates that record, a new or absent one adds one), or as
//! the record listing and a JSON export show them: the fields a write does not take
//! (`lastModifiedBy`, `isMT`, ...) are not read, a reference cell's `referencedIds` are read
//! as its value (`as_listed_reference_cells`), and the import leaves out the cells of formula
//! columns (`skip_computed_cells`).
//!
//! The file is read as a stream, one record at a time, under the limits every import format
//! has: at most `MAX_ROWS` records and `MAX_CELLS` cells, a record at most
//! `Limits::max_fields` cells and `Limits::max_record_bytes` bytes of text, a value, id or
//! path at most `Limits::max_field_bytes` (the text of a value: its strings, list items and
//! numbers). Anything else than such an array (other JSON, a record that is not an object, a
//! cell of the wrong shape, trailing data) is refused whole, naming the record. A record is
//! read whole before it is checked, so its JSON text is bounded while it is read
//! (`RecordMeter`: `Limits::max_record_bytes` plus `JSON_SLACK`): an element of junk (a field
//! no record has, holding millions of numbers) is refused at that length instead of growing
//! into a tree many times the file's size.

use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::rc::Rc;

use serde::de::{DeserializeSeed, Error as _, SeqAccess, Visitor};
use serde_json::Value;

use super::csv::Limits;
use super::csv_import::{MAX_CELLS, MAX_ROWS};
use super::error::{FileError, FileResult, Place};
use crate::grid::records::{RecordInput, ValueIn};
use crate::grid::schema::ColumnDef;

/// Every record of a JSON file, labelled `record <n>` (1-based). Blocking. The error is the
/// message of a 400.
pub fn read_records(
    mut input: impl Read,
    limits: Limits,
) -> FileResult<Vec<(String, RecordInput)>> {
    let mut head = [0u8; 3];
    let mut read = 0;
    while read < head.len() {
        match input.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FileError::Content(format!("The file cannot be read: {e}."))),
        }
    }
    let skip = if head[..read] == *b"\xEF\xBB\xBF" { 3 } else { 0 };
    let input = std::io::Cursor::new(head[skip..read].to_vec()).chain(input);
    let meter = Rc::new(RecordMeter {
        read: Cell::new(0),
        started: Cell::new(0),
        record: Cell::new(0),
        cap: limits.max_record_bytes.saturating_add(JSON_SLACK),
    });
    let metered = Metered { inner: std::io::BufReader::new(input), meter: Rc::clone(&meter) };
    let mut de = serde_json::Deserializer::from_reader(metered);
    let records = Records { limits, meter }.deserialize(&mut de).and_then(|records| {
        de.end()?;
        Ok(records)
    });
    records.map_err(|e| {
        FileError::Content(match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                format!("The file is not valid JSON (type=json): {e}.")
            }
            serde_json::error::Category::Data => format!(
                "The file is not a JSON array of records as the records API takes them \
                 (type=json): {e}."
            ),
            serde_json::error::Category::Io => match e.io_error_kind() {
                Some(std::io::ErrorKind::FileTooLarge) => format!("{e}."),
                _ => format!("The file cannot be read: {e}."),
            },
        })
    })
}

/// The JSON text a record may take beyond its `Limits::max_record_bytes` of values: its
/// keys, statuses, quotes and escapes.
const JSON_SLACK: usize = 1 << 20;

/// How much of the file the reader has taken, and where the record being read began.
struct RecordMeter {
    read: Cell<usize>,
    started: Cell<usize>,
    /// The 1-based number of the record being read (0 before the first).
    record: Cell<usize>,
    cap: usize,
}

/// The file's reader, failing once the record being read is longer than its meter's cap.
struct Metered<R> {
    inner: R,
    meter: Rc<RecordMeter>,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let meter = &self.meter;
        meter.read.set(meter.read.get() + n);
        if meter.record.get() > 0 && meter.read.get() - meter.started.get() > meter.cap {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!("record {} is longer than {} bytes of JSON", meter.record.get(), meter.cap),
            ));
        }
        Ok(n)
    }
}

/// The top-level array, read record by record under the limits.
struct Records {
    limits: Limits,
    meter: Rc<RecordMeter>,
}

impl<'de> DeserializeSeed<'de> for Records {
    type Value = Vec<(String, RecordInput)>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Records {
    type Value = Vec<(String, RecordInput)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of records like [{\"id\": \"k1\", \"cells\": [...]}]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut records = Vec::new();
        let mut cells = 0usize;
        loop {
            self.meter.started.set(self.meter.read.get());
            self.meter.record.set(records.len() + 1);
            let Some(value) = seq.next_element::<Value>()? else { break };
            let n = records.len() + 1;
            if n > MAX_ROWS {
                return Err(A::Error::custom(format!(
                    "the file has more than {MAX_ROWS} records; split it"
                )));
            }
            let record = record(value, n, self.limits).map_err(A::Error::custom)?;
            cells += record.cells.len();
            if cells > MAX_CELLS {
                return Err(A::Error::custom(format!(
                    "the file has more than {MAX_CELLS} cells; split it"
                )));
            }
            records.push((format!("record {n}"), record));
        }
        records.shrink_to_fit();
        Ok(records)
    }
}

/// Record `n` of the file, checked against the limits.
fn record(mut value: Value, n: usize, limits: Limits) -> FileResult<RecordInput> {
    if !value.is_object() {
        return Err(FileError::Content(format!("record {n} is not an object")));
    }
    as_listed_reference_cells(&mut value);
    let record: RecordInput = serde_json::from_value(value)
        .map_err(|e| FileError::at(Place::Record(n), e.to_string()))?;
    if record.cells.len() > limits.max_fields {
        return Err(FileError::TooLarge(format!(
            "record {n} has {} cells; a record has at most {} in an import into this view",
            record.cells.len(),
            limits.max_fields
        )));
    }
    let field = |what: &str, bytes: usize| {
        if bytes > limits.max_field_bytes {
            let max = limits.max_field_bytes;
            Err(FileError::at(Place::Record(n), format!("{what} is longer than {max} bytes")))
        } else {
            Ok(bytes)
        }
    };
    let mut total = field("the id", record.id.as_ref().map_or(0, String::len))?;
    total += field("the path", record.path.as_ref().map_or(0, String::len))?;
    for (j, cell) in record.cells.iter().enumerate() {
        let what = format!("cells[{j}].value");
        total += field(&what, cell.value.as_ref().map_or(0, cell_value_bytes))?;
    }
    if total > limits.max_record_bytes {
        let max = limits.max_record_bytes;
        return Err(FileError::TooLarge(format!("record {n} is longer than {max} bytes")));
    }
    Ok(record)
}

/// Leaves out of `records` the cells of `columns` that are computed (formula columns): a JSON
/// export holds their values, which an import of it reads back as nothing, as it reads an
/// exported CSV's formula column.
pub fn skip_computed_cells(records: &mut [(String, RecordInput)], columns: &[&ColumnDef]) {
    let computed: Vec<&str> =
        columns.iter().filter(|c| !c.is_writable()).map(|c| c.id.as_str()).collect();
    if computed.is_empty() {
        return;
    }
    for (_, record) in records {
        record
            .cells
            .retain(|cell| cell.column_id.as_deref().is_none_or(|id| !computed.contains(&id)));
    }
}

/// A reference cell as the record listing (and so a JSON export) shows it has both
/// `referencedIds` (the ids it points at) and `value` (the referenced column's values): its
/// ids are what it holds, so its `value` is not read. (The records API refuses a cell giving
/// both; a file is read as the listing wrote it.)
fn as_listed_reference_cells(record: &mut Value) {
    let Some(Value::Array(cells)) = record.get_mut("cells") else { return };
    for cell in cells.iter_mut().filter_map(Value::as_object_mut) {
        if cell.get("referencedIds").is_some_and(Value::is_array) {
            cell.remove("value");
        }
    }
}

/// `value_bytes` of a cell's value.
fn cell_value_bytes(value: &ValueIn) -> usize {
    match value {
        ValueIn::Null | ValueIn::Bool(_) => 0,
        ValueIn::Number(n) => n.to_string().len(),
        ValueIn::String(s) => s.len(),
        ValueIn::Array(items) => items_bytes(items),
        ValueIn::Object(map) => map_bytes(map),
    }
}

/// The bytes of text a value holds: its strings, keys and numbers as written.
pub fn value_bytes(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 0,
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => s.len(),
        Value::Array(items) => items_bytes(items),
        Value::Object(map) => map_bytes(map),
    }
}

fn items_bytes(items: &[Value]) -> usize {
    items.iter().map(value_bytes).fold(0, usize::saturating_add)
}

fn map_bytes(map: &serde_json::Map<String, Value>) -> usize {
    map.iter().map(|(k, v)| k.len().saturating_add(value_bytes(v))).fold(0, usize::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits { max_field_bytes: 16, max_record_bytes: 40, max_fields: 3 };

    fn read(text: &str) -> FileResult<Vec<(String, RecordInput)>> {
        read_records(text.as_bytes(), SMALL)
    }

    /// A record's JSON text is bounded while it is read: junk in a field no record has is
    /// refused at `max_record_bytes + JSON_SLACK`, naming the record, not read into a tree.
    #[test]
    fn a_record_longer_than_its_cap_is_refused_while_it_is_read() {
        let junk = "0,".repeat(JSON_SLACK / 2 + 64);
        let text = format!("[{{\"id\": \"a\"}}, {{\"id\": \"b\", \"junk\": [{junk}0]}}]");
        let Err(FileError::Content(message)) = read(&text) else { panic!("refused") };
        assert!(message.contains("record 2 is longer than"), "{message}");
        // Just under the cap, the same junk is read (and its field passed over).
        let fits = "0,".repeat(JSON_SLACK / 2 - 64);
        let text = format!("[{{\"id\": \"b\", \"junk\": [{fits}0]}}]");
        assert_eq!(read(&text).expect("read").len(), 1);
    }

    #[test]
    fn an_array_of_records_is_read_with_labels() {
        let rows = read(
            "\u{feff}[{\"id\": \"k1\", \"path\": \"ui\", \"cells\": [{\"columnId\": \"en\", \
             \"value\": \"Start\"}]}, {\"cells\": []}]",
        )
        .expect("records");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, "record 1");
        assert_eq!(rows[0].1.id.as_deref(), Some("k1"));
        assert_eq!(rows[0].1.cells[0].value, Some(ValueIn::String("Start".into())));
        assert_eq!(rows[1].1.id, None);
        assert!(read(" [ ] ").expect("empty").is_empty());
    }

    #[test]
    fn other_json_and_other_shapes_are_refused_naming_the_record() {
        for (text, part) in [
            ("{\"id\": \"k1\"}", "not a JSON array of records"),
            ("Record ID,English\nk1,Start\n", "not valid JSON"),
            ("[{\"id\": \"k1\"}", "not valid JSON"),
            ("[{\"id\": \"k1\"}] trailing", "not valid JSON"),
            ("[[\"k1\", null, []]]", "record 1 is not an object"),
            ("[{}, {\"cells\": \"x\"}]", "record 2:"),
            ("[{\"id\": 5}]", "record 1:"),
            ("[{\"id\": \"a-very-long-record-id\"}]", "record 1: the id is longer than 16"),
            ("[{\"cells\": [{}, {}, {}, {}]}]", "record 1 has 4 cells"),
            ("[{\"cells\": [{\"value\": [\"0123456789\", \"0123456789\"]}]}]", "cells[0].value"),
        ] {
            let err = read(text).expect_err(text).to_string();
            assert!(err.contains(part), "{text}: {err}");
        }
    }

    #[test]
    fn value_bytes_counts_nested_text() {
        let value = serde_json::json!({"ab": ["cd", 12, true, null]});
        assert_eq!(value_bytes(&value), 6);
    }
}
