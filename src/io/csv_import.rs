//! How a CSV file becomes record writes for an import (decisions.md section 7), apart from
//! HTTP: the layout (which file column goes where: a header row matched by column name, then
//! id, then `_recordId`/`Record ID` and `_path`/`Path`; `columnMappings` by file column index)
//! and the rows, read with `io::csv` under limits.
//!
//! Every bound is checked while reading, before memory grows past it: a field is at most
//! `MAX_FIELD_BYTES`, a row `MAX_RECORD_BYTES` and `max_fields(view columns)` fields (the
//! view's columns plus `EXTRA_FIELDS`), the file at most `MAX_ROWS` data rows and
//! `MAX_CELLS` mapped cells. So what an import holds is bounded by those numbers, whatever
//! the file. A layout that maps two file columns to one target is refused.

use std::io::Read;

use serde::Deserialize;
use serde_json::Value;

use super::csv::{Limits, Reader, Record};
use super::error::{FileError, FileResult, Place};
use crate::grid::records::{CellInput, RecordInput};
use crate::grid::schema::ColumnDef;
use crate::grid::value::StorageKind;

/// The bytes of one field.
pub const MAX_FIELD_BYTES: usize = 1024 * 1024;
/// The bytes of one row.
pub const MAX_RECORD_BYTES: usize = 8 * 1024 * 1024;
/// The fields a row may have beyond the view's columns (record id, path, exported metadata,
/// columns the view does not show).
pub const EXTRA_FIELDS: usize = 64;
/// The data rows of one file.
pub const MAX_ROWS: usize = 1_000_000;
/// The mapped cells of one file (data rows times mapped columns).
pub const MAX_CELLS: usize = 2_000_000;
/// The highest `fileColumnIndex` of a mapping.
pub const MAX_FILE_COLUMN_INDEX: usize = 10_000;

/// The limits a row of an import into a view of `view_columns` columns is read under.
pub fn limits(view_columns: usize) -> Limits {
    Limits {
        max_field_bytes: MAX_FIELD_BYTES,
        max_record_bytes: MAX_RECORD_BYTES,
        max_fields: view_columns.saturating_add(EXTRA_FIELDS),
    }
}

/// The layout part of an `importRequest`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportRequest {
    pub with_header: Option<bool>,
    pub backup: Option<bool>,
    #[serde(default, deserialize_with = "crate::json_object::optional_objects")]
    pub column_mappings: Option<Vec<ColumnMapping>>,
    pub first_data_row: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColumnMapping {
    pub column_id: String,
    pub file_column_index: usize,
}

/// Where a file column goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    RecordId,
    Path,
    /// A view column: its id and whether its cells are lists (written as JSON arrays).
    Column {
        id: String,
        list: bool,
    },
    Ignored,
}

impl Target {
    /// How a refusal names the target.
    fn describe(&self) -> String {
        match self {
            Target::RecordId => "the record id".to_owned(),
            Target::Path => "the path".to_owned(),
            Target::Column { id, .. } => format!("column \"{id}\""),
            Target::Ignored => "nothing".to_owned(),
        }
    }
}

/// How the file's rows become records.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Per file column.
    pub targets: Vec<Target>,
    /// The 1-based row of the first data row.
    pub first_data_row: usize,
    /// The limits each row is read under.
    pub limits: Limits,
}

impl Layout {
    /// The view columns the rows write, in the order of their cells.
    pub fn columns(&self) -> Vec<&str> {
        self.targets
            .iter()
            .filter_map(|t| match t {
                Target::Column { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// What a header cell names: a view column (by name, then id), the record id or the path.
fn header_target(header: &str, columns: &[&ColumnDef]) -> Target {
    let header = header.trim();
    let column = columns
        .iter()
        .find(|c| c.name == header)
        .or_else(|| columns.iter().find(|c| c.id == header));
    match (column, header) {
        // Formula and lookup cells are computed: an exported one is read back as nothing.
        (Some(c), _) if !c.is_writable() => Target::Ignored,
        (Some(c), _) => column_target(c),
        (None, "_recordId" | "Record ID") => Target::RecordId,
        (None, "_path" | "Path") => Target::Path,
        _ => Target::Ignored,
    }
}

fn column_target(column: &ColumnDef) -> Target {
    Target::Column {
        id: column.id.clone(),
        list: column.column_type.storage() == StorageKind::List,
    }
}

/// A mapping's target: 400 message for a computed (formula, lookup) or unknown column.
fn mapping_target(mapping: &ColumnMapping, columns: &[&ColumnDef]) -> FileResult<Target> {
    match mapping.column_id.as_str() {
        "_recordId" => Ok(Target::RecordId),
        "_path" => Ok(Target::Path),
        id => match columns.iter().find(|c| c.id == id) {
            Some(c) if !c.is_writable() => Err(FileError::Request(format!(
                "columnMappings: column \"{id}\" is a {} column; its values are computed.",
                c.column_type.as_str()
            ))),
            Some(c) => Ok(column_target(c)),
            None => Err(FileError::Request(format!(
                "columnMappings: column \"{id}\" is not in the view."
            ))),
        },
    }
}

/// The layout of an import into a view with `columns`, from the header row (`None` for an
/// empty file) and the mappings. The error is the message of a 400: nothing maps, a mapping
/// names an unknown or formula column, or two file columns map to one target.
pub fn plan_layout(
    request: &ImportRequest,
    columns: &[&ColumnDef],
    header: Option<&[String]>,
) -> FileResult<Layout> {
    let with_header = request.with_header.unwrap_or(true);
    let mut targets: Vec<Target> = match (header, with_header) {
        (Some(names), true) => names.iter().map(|h| header_target(h, columns)).collect(),
        _ => Vec::new(),
    };
    if let Some(mappings) = &request.column_mappings {
        // Mapped columns replace the header's matches; its record id and path columns stay.
        for target in &mut targets {
            if matches!(target, Target::Column { .. }) {
                *target = Target::Ignored;
            }
        }
        for mapping in mappings {
            let target = mapping_target(mapping, columns)?;
            let at = mapping.file_column_index;
            if at >= MAX_FILE_COLUMN_INDEX {
                return Err(FileError::Request(format!(
                    "columnMappings: fileColumnIndex {at} is out of range."
                )));
            }
            if targets.len() <= at {
                targets.resize(at + 1, Target::Ignored);
            }
            targets[at] = target;
        }
    } else if !with_header {
        return Err(FileError::Request(
            "An import without a header row needs columnMappings.".to_owned(),
        ));
    }
    check_distinct(&targets, header.filter(|_| with_header))?;
    if !targets.iter().any(|t| matches!(t, Target::Column { .. })) {
        return Err(FileError::Request(
            "No column of the file maps to a column of the view (match the header to column \
             names or ids, or give columnMappings)."
                .to_owned(),
        ));
    }
    let first_data_row = match request.first_data_row {
        Some(0) => return Err(FileError::Request("firstDataRow is 1-based.".to_owned())),
        Some(row) => row,
        None if with_header => 2,
        None => 1,
    };
    Ok(Layout { targets, first_data_row, limits: limits(columns.len()) })
}

/// Refuses two file columns with one target, naming both (by header when there is one).
fn check_distinct(targets: &[Target], header: Option<&[String]>) -> FileResult<()> {
    let name = |i: usize| match header.and_then(|h| h.get(i)) {
        Some(text) => format!("file column {} (\"{}\")", i + 1, clip(text.trim(), 100)),
        None => format!("file column {}", i + 1),
    };
    let mut seen: std::collections::HashMap<&Target, usize> = std::collections::HashMap::new();
    for (i, target) in targets.iter().enumerate() {
        if matches!(target, Target::Ignored) {
            continue;
        }
        if let Some(first) = seen.insert(target, i) {
            return Err(FileError::Request(format!(
                "{} and {} both map to {}; map each target once.",
                name(first),
                name(i),
                target.describe()
            )));
        }
    }
    Ok(())
}

impl Eq for Target {}

impl std::hash::Hash for Target {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        if let Target::Column { id, .. } = self {
            id.hash(state);
        }
    }
}

/// At most `max` bytes of `text`, cut at a character boundary.
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A field as text; `row`/`column` (0-based) name it in the error.
fn field_text(bytes: &[u8], row: usize, column: usize) -> FileResult<String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| FileError::at(Place::Field { row, column }, "the text is not valid UTF-8."))?;
    let text = if column == 0 && row == 1 { text.trim_start_matches('\u{feff}') } else { text };
    Ok(text.to_owned())
}

/// The header row (the first row), or `None` for an empty file; the error is a 400 message.
/// `delimiter` is `b','` for CSV, `b'\t'` for TSV.
pub fn read_header(
    input: impl Read,
    limits: Limits,
    delimiter: u8,
) -> FileResult<Option<Vec<String>>> {
    let mut reader = Reader::with_delimiter(input, limits, delimiter);
    let mut record = Record::default();
    match reader.read(&mut record) {
        Ok(false) => Ok(None),
        Ok(true) => record
            .iter()
            .enumerate()
            .map(|(i, field)| field_text(field, 1, i))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Err(err) => Err(FileError::Content(format!("The header row cannot be read: {err}"))),
    }
}

/// A row of text fields, from any tabular format.
pub trait Fields {
    /// The number of fields.
    fn width(&self) -> usize;
    /// Field `i` (0-based) of row `row` as text; the error names the row and column.
    fn text(&self, i: usize, row: usize) -> FileResult<String>;
}

impl Fields for Record {
    fn width(&self) -> usize {
        self.len()
    }

    fn text(&self, i: usize, row: usize) -> FileResult<String> {
        field_text(self.get(i).unwrap_or_default(), row, i)
    }
}

/// The rows of a file, one at a time.
pub trait RowSource {
    type Row: Fields;
    /// Whether every row must have as many fields as the first (CSV and TSV; a sheet's rows
    /// end at their last cell).
    const RECTANGULAR: bool;
    /// The next row and its 1-based row number, `None` at the end. The error is the task's
    /// message.
    fn next_row(&mut self) -> FileResult<Option<(usize, &Self::Row)>>;
}

/// The records of a CSV or TSV file.
pub struct CsvRows<R> {
    reader: Reader<R>,
    record: Record,
}

impl<R: Read> CsvRows<R> {
    pub fn new(input: R, limits: Limits, delimiter: u8) -> CsvRows<R> {
        CsvRows {
            reader: Reader::with_delimiter(input, limits, delimiter),
            record: Record::default(),
        }
    }
}

impl<R: Read> RowSource for CsvRows<R> {
    type Row = Record;
    const RECTANGULAR: bool = true;

    fn next_row(&mut self) -> FileResult<Option<(usize, &Record)>> {
        match self.reader.read(&mut self.record) {
            Ok(true) => Ok(Some((self.reader.rows(), &self.record))),
            Ok(false) => Ok(None),
            Err(err) => Err(FileError::Content(format!("The file cannot be read: {err}"))),
        }
    }
}

/// A field as the JSON value the records API takes for its column.
pub fn cell_value(text: String, list: bool, row: usize, column: &str) -> FileResult<Value> {
    if text.is_empty() {
        return Ok(Value::Null);
    }
    if !list {
        return Ok(Value::String(text));
    }
    if text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Array(_)) => Ok(value),
            _ => Err(FileError::at(
                Place::Column { row, column_id: column.to_owned() },
                "a list is a JSON array of strings, like [\"a\",\"b\"].",
            )),
        };
    }
    Ok(Value::Array(vec![Value::String(text)]))
}

/// Every data row of a CSV (`delimiter` `b','`) or TSV (`b'\t'`) file as a record write,
/// labelled `row <n>`. Blocking. The error names the row (and column) and is the task's
/// message.
pub fn read_rows(
    input: impl Read,
    layout: &Layout,
    delimiter: u8,
) -> FileResult<Vec<(String, RecordInput)>> {
    collect_rows(&mut CsvRows::new(input, layout.limits, delimiter), layout)
}

/// Every data row of `source` as a record write, labelled `row <n>`, under `MAX_ROWS` and
/// `MAX_CELLS`.
pub fn collect_rows<S: RowSource>(
    source: &mut S,
    layout: &Layout,
) -> FileResult<Vec<(String, RecordInput)>> {
    let mapped = layout.targets.iter().filter(|t| matches!(t, Target::Column { .. })).count();
    let mut rows = Vec::new();
    let (mut width, mut cells) = (None, 0usize);
    while let Some((row, record)) = source.next_row()? {
        let expected = *width.get_or_insert(record.width());
        if S::RECTANGULAR && record.width() != expected {
            return Err(FileError::Content(format!(
                "row {row} has {} fields where the rows before it have {expected}.",
                record.width()
            )));
        }
        if row < layout.first_data_row {
            continue;
        }
        if rows.len() == MAX_ROWS {
            return Err(FileError::TooLarge(format!(
                "The file has more than {MAX_ROWS} data rows; split it."
            )));
        }
        cells += mapped;
        if cells > MAX_CELLS {
            return Err(FileError::TooLarge(format!(
                "The file has more than {MAX_CELLS} cells (data rows times mapped columns); split it."
            )));
        }
        rows.push((format!("row {row}"), row_input(record, row, layout)?));
    }
    rows.shrink_to_fit();
    Ok(rows)
}

/// One row as a record write.
fn row_input(record: &impl Fields, row: usize, layout: &Layout) -> FileResult<RecordInput> {
    let mut input = RecordInput::default();
    for i in 0..record.width() {
        let target = layout.targets.get(i).unwrap_or(&Target::Ignored);
        if matches!(target, Target::Ignored) {
            continue;
        }
        let text = record.text(i, row)?;
        match target {
            Target::RecordId => input.id = Some(text).filter(|t| !t.is_empty()),
            Target::Path => input.path = Some(text),
            Target::Column { id, list } => input.cells.push(CellInput::new(
                id.as_str(),
                Some(cell_value(text, *list, row, id)?),
                None,
                None,
            )),
            Target::Ignored => {}
        }
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_cells_are_json_arrays_or_one_item() {
        assert_eq!(cell_value(String::new(), true, 2, "tags"), Ok(Value::Null));
        assert_eq!(
            cell_value("[\"ui\",\"legal\"]".into(), true, 2, "tags"),
            Ok(serde_json::json!(["ui", "legal"]))
        );
        assert_eq!(cell_value("ui".into(), true, 2, "tags"), Ok(serde_json::json!(["ui"])));
        let err = cell_value("[oops".into(), true, 3, "tags").expect_err("not JSON");
        assert!(err.to_string().starts_with("row 3, column \"tags\""), "{err}");
        let place = Place::Column { row: 3, column_id: "tags".into() };
        assert!(matches!(err, FileError::At { place: ref p, .. } if *p == place), "{err}");
        assert_eq!(cell_value("12".into(), false, 2, "n"), Ok(Value::String("12".into())));
    }

    #[test]
    fn clip_cuts_at_a_character_boundary() {
        assert_eq!(clip("héllo", 2), "h");
        assert_eq!(clip("héllo", 3), "hé");
        assert_eq!(clip("abc", 10), "abc");
    }
}
