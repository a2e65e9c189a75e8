//! Records written straight from the columns to the JSON a records answer holds: the bytes
//! `read_rows` then `api::records::record_body` and `serde_json` give, without an owned copy of
//! each cell (a `String` per text cell, a `Vec` per record) or a second pass over them. Column
//! ids are escaped once per answer; a text value is copied as it is unless it holds a byte JSON
//! escapes. Reference cells need the referenced branch (`api::references`), so a view showing a
//! reference column is read with `read_rows` instead (`renders_alone`).

use super::codec::{format_datetime, format_timestamp, write_utc};
use super::formula::typed_value;
use super::ops::GridState;
use super::schema::{ColumnDef, ColumnType};
use super::store::{json_escaped, needs_json_escape, CellRef, RowId};
use super::value::{CellValue, StorageKind};

/// Records rendered to JSON (`GridState::render_rows`): an array of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedRecords {
    json: Vec<u8>,
    count: usize,
}

impl RenderedRecords {
    /// The JSON array of the records.
    pub fn into_array(self) -> Vec<u8> {
        self.json
    }

    /// The single record's JSON object; `None` unless exactly one record was rendered.
    pub fn into_single(self) -> Option<Vec<u8>> {
        if self.count != 1 {
            return None;
        }
        let mut json = self.json;
        json.pop();
        json.remove(0);
        Some(json)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Whether records with these columns render without the caller (no reference column).
pub fn renders_alone(columns: &[&ColumnDef]) -> bool {
    columns.iter().all(|c| c.reference.is_none() && !c.shows_referenced())
}

/// What one column contributes to every record: `{"columnId":"<id>","value":`, its type, slot
/// and formula.
struct Shown<'a> {
    prefix: Vec<u8>,
    column: &'a ColumnDef,
    slot: Option<super::store::ColumnSlot>,
    formula: Option<&'a super::formula::Compiled>,
}

impl GridState {
    /// The given rows with the given columns as `read_rows` then `record_body` would answer them.
    /// The columns must `render_alone`.
    pub fn render_rows(
        &self,
        columns: &[&ColumnDef],
        rows: impl Iterator<Item = RowId>,
    ) -> RenderedRecords {
        debug_assert!(renders_alone(columns));
        let shown: Vec<Shown<'_>> = columns
            .iter()
            .map(|column| {
                // Room for the id as it nearly always is, unescaped: no regrowth.
                let mut prefix = Vec::with_capacity(column.id.len() + 24);
                prefix.extend_from_slice(b"{\"columnId\":");
                write_str(&mut prefix, &column.id);
                prefix.extend_from_slice(b",\"value\":");
                Shown {
                    prefix,
                    column,
                    slot: self.slots.get(&column.id).copied(),
                    formula: self.formulas.get(&column.id),
                }
            })
            .collect();
        let mut json = Vec::with_capacity(render_guess(&shown, rows.size_hint().0));
        json.push(b'[');
        let mut count = 0;
        let mut times = LastTime::default();
        for row in rows {
            if count > 0 {
                json.push(b',');
            }
            count += 1;
            self.render_row(&mut json, &shown, row, &mut times);
        }
        json.push(b']');
        RenderedRecords { json, count }
    }

    fn render_row(&self, out: &mut Vec<u8>, shown: &[Shown<'_>], row: RowId, times: &mut LastTime) {
        let store = &self.store;
        out.extend_from_slice(b"{\"id\":");
        write_stored(out, store.id_for_json(row));
        out.extend_from_slice(b",\"path\":");
        write_stored(out, store.path_for_json(row));
        out.extend_from_slice(b",\"cells\":[");
        for (at, column) in shown.iter().enumerate() {
            if at > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&column.prefix);
            let column_type = column.column.column_type;
            let Some(slot) = column.slot else {
                write_value(out, column_type, &CellValue::Empty);
                out.push(b'}');
                continue;
            };
            let statuses = match column.formula {
                Some(formula) => {
                    write_value(out, column_type, &typed_value(&store.value(row, slot), formula));
                    store.statuses(row, slot)
                }
                None => {
                    let (value, escapes, statuses) = store.cell_for_json(row, slot);
                    write_ref(out, column_type, value, escapes);
                    statuses
                }
            };
            if column.column.is_language() {
                out.extend_from_slice(b",\"dependencyStatus\":\"");
                out.extend_from_slice(statuses.dependency().as_str().as_bytes());
                out.extend_from_slice(b"\",\"sourceStatus\":\"");
                out.extend_from_slice(statuses.source().as_str().as_bytes());
                out.push(b'"');
            }
            if statuses.is_mt() {
                out.extend_from_slice(b",\"isMT\":true");
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"lastModifiedBy\":");
        write_stored(out, store.modified_by_for_json(row));
        out.extend_from_slice(b",\"lastModifiedTime\":");
        times.write(out, store.modified_time(row));
        out.push(b'}');
    }
}

/// The last modification time written and its JSON: the records of one write share theirs,
/// and a page of records loaded together often does, so it is formatted once for them.
#[derive(Default)]
struct LastTime {
    ms: Option<i64>,
    json: Vec<u8>,
}

impl LastTime {
    /// `ms` as `write_time` writes a timestamp (zone `+00:00`).
    fn write(&mut self, out: &mut Vec<u8>, ms: i64) {
        if self.ms != Some(ms) {
            self.json.clear();
            write_time(&mut self.json, ms, b"+00:00");
            self.ms = Some(ms);
        }
        out.extend_from_slice(&self.json);
    }
}

/// About the bytes `rows` records take (a little over for short text).
fn render_guess(shown: &[Shown<'_>], rows: usize) -> usize {
    let per_cell: usize = shown.iter().map(|s| s.prefix.len() + 96).sum();
    (per_cell + 160).saturating_mul(rows).min(64 << 20)
}

/// An empty cell of a column of `column_type`, as `codec::Rendered` writes it.
fn write_empty(out: &mut Vec<u8>, column_type: ColumnType) {
    out.extend_from_slice(match column_type.storage() {
        StorageKind::Number | StorageKind::Datetime | StorageKind::Boolean => b"null",
        StorageKind::List => b"[]",
        StorageKind::Text => b"\"\"",
    });
}

/// A number as `codec::Rendered` writes it: whole numbers below 9e15 as integers.
fn write_number(out: &mut Vec<u8>, n: f64) {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        out.extend_from_slice(itoa::Buffer::new().format(n as i64).as_bytes());
    } else if n.is_finite() {
        // Through serde_json, whose float formatting (shortest round trip, `1e+308`) this must
        // match byte for byte; writing to a `Vec` cannot fail.
        if serde_json::to_writer(&mut *out, &n).is_err() {
            out.extend_from_slice(b"null");
        }
    } else {
        out.extend_from_slice(b"null");
    }
}

fn write_list<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a str>, escapes: bool) {
    out.push(b'[');
    for (at, item) in items.enumerate() {
        if at > 0 {
            out.push(b',');
        }
        write_text(out, item, escapes);
    }
    out.push(b']');
}

/// `value` of a column of `column_type`; its text escaped only when `escapes` (the store
/// checked its chunk's values as they were stored).
fn write_ref(out: &mut Vec<u8>, column_type: ColumnType, value: CellRef<'_>, escapes: bool) {
    match value {
        CellRef::Empty => write_empty(out, column_type),
        CellRef::Text(text) => write_text(out, text, escapes),
        CellRef::Number(n) => write_number(out, n),
        CellRef::Boolean(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        CellRef::Datetime(ms) => write_time(out, ms, b"Z"),
        CellRef::List(items) => write_list(out, items, escapes),
    }
}

/// A stored string and whether it may need escaping (`ColumnStore::id_for_json`).
fn write_stored(out: &mut Vec<u8>, (text, escapes): (&str, bool)) {
    write_text(out, text, escapes);
}

/// `text` as a JSON string: copied as it is when the store knows it needs no escaping.
#[inline]
fn write_text(out: &mut Vec<u8>, text: &str, escapes: bool) {
    if escapes {
        write_str(out, text);
    } else {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    }
}

fn write_value(out: &mut Vec<u8>, column_type: ColumnType, value: &CellValue) {
    match value {
        CellValue::Empty => write_empty(out, column_type),
        CellValue::Text(text) => write_str(out, text),
        CellValue::Number(n) => write_number(out, *n),
        CellValue::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        CellValue::Datetime(ms) => write_str(out, &format_datetime(*ms)),
        CellValue::List(items) => write_list(out, items.iter().map(String::as_str), true),
    }
}

/// A time as a JSON string, as `format_datetime` (zone `Z`) or `format_timestamp` (`+00:00`)
/// writes it: straight into `out` for years 0..=9999 (digits need no escaping).
fn write_time(out: &mut Vec<u8>, ms: i64, zone: &[u8]) {
    out.push(b'"');
    if write_utc(out, ms, zone) {
        out.push(b'"');
        return;
    }
    out.pop();
    let text = if zone == b"Z" { format_datetime(ms) } else { format_timestamp(ms) };
    write_str(out, &text);
}

/// `text` as a JSON string, escaped as serde_json escapes it.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if !needs_json_escape(text) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        if !json_escaped(byte) {
            continue;
        }
        out.extend_from_slice(&bytes[start..at]);
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
        }
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn strings_are_escaped_as_serde_json_escapes_them(text in "\\PC*|[\\x00-\\x7f]{0,40}") {
            let mut out = Vec::new();
            write_str(&mut out, &text);
            prop_assert_eq!(out, serde_json::to_vec(&text).expect("JSON"));
        }

        #[test]
        fn numbers_are_written_as_rendered_values_serialize(bits in any::<u64>(), small in -1e16f64..1e16) {
            for n in [f64::from_bits(bits), small, small.trunc()] {
                let mut out = Vec::new();
                write_number(&mut out, n);
                let value = CellValue::Number(n);
                let rendered = super::super::codec::Rendered { column_type: ColumnType::Number, value: &value };
                prop_assert_eq!(out, serde_json::to_vec(&rendered).expect("JSON"));
            }
        }
    }

    #[test]
    fn every_control_character_and_both_quotes_escape_like_serde_json() {
        let text: String = (0u8..0x80).map(char::from).chain("é\"\\ \u{2028}ок".chars()).collect();
        let mut out = Vec::new();
        write_str(&mut out, &text);
        assert_eq!(out, serde_json::to_vec(&text).expect("JSON"));
    }
}
