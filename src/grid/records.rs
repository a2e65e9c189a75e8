//! Record requests: the JSON of add, update and delete, checked whole against the branch (view
//! columns, editable flags, value types, ids, locks) and turned into one `GridOp`. Every
//! problem of a request is reported at once; a request with any problem changes nothing.

use std::collections::HashSet;

use compact_str::CompactString;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use utoipa::ToSchema;

use super::codec::parse_value_owned;
use super::ops::{CellWrite, GridOp, GridState, RecordWrite};
use super::schema::{ColumnDef, ColumnType, ViewDef};
use super::store::RecordIdentity;
use super::value::{CellValue, DependencyStatus, SourceStatus};
pub use super::write_error::MAX_PROBLEMS;
use super::write_error::{At, Problem, Problems, WriteError};
use crate::error::{ApiError, ErrorCode};
use crate::ids;

/// The most records one add or update may carry.
pub const MAX_RECORDS_PER_REQUEST: usize = 1000;

/// A cell as written: an absent `value` leaves the value alone; `null` empties it. A reference
/// cell's ids may come as `referencedIds` instead of `value` (the OpenAPI's `SetCell`).
/// Deserialized field by field (`CellVisitor`), straight into this form: a bulk add parses
/// twelve thousand of them.
#[derive(Debug, Clone, Default)]
pub struct CellInput {
    pub column_id: Option<CompactString>,
    pub value: Option<Value>,
    pub dependency_status: Option<String>,
    pub source_status: Option<String>,
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
        let (mut column_id, mut dependency, mut source) = (None, None, None);
        while let Some(field) = map.next_key::<CellField>()? {
            match field {
                CellField::ColumnId => once(&mut column_id, map.next_value()?, "columnId")?,
                // `null` is a value (it empties the cell), unlike an absent `value`.
                CellField::Value => once(&mut cell.value, map.next_value::<Value>()?, "value")?,
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
        cell.dependency_status = dependency.flatten();
        cell.source_status = source.flatten();
        match (cell.value.is_some(), referenced_ids.flatten()) {
            (_, None) => {}
            (false, Some(ids)) => {
                cell.value = Some(Value::Array(ids.into_iter().map(Value::String).collect()))
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
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordInput {
    pub id: Option<String>,
    pub path: Option<String>,
    #[serde(default, deserialize_with = "cells_with_room")]
    #[schema(value_type = Vec<CellWire>)]
    pub cells: Vec<CellInput>,
    #[serde(default, rename = "markUpdatedCellsWithMTFlag")]
    pub mark_mt: Option<bool>,
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
            let mut cells = Vec::with_capacity(seq.size_hint().unwrap_or(0).clamp(16, 256));
            while let Some(cell) = seq.next_element()? {
                cells.push(cell);
            }
            Ok(cells)
        }
    }
    d.deserialize_seq(Cells)
}

impl RecordInput {
    fn mark_mt(&self) -> bool {
        self.mark_mt.unwrap_or(false)
    }
}

/// What kind of write is being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteKind {
    /// An add, and the source status its source-language cells written without one take (the
    /// grid settings' `defaultSourceLanguageStatus`).
    Add {
        source_default: SourceStatus,
    },
    Update,
}

/// The most bytes of UTF-8 text one cell may hold (a list: its items together), 4 MiB: any
/// text of 1,048,576 characters fits. Formulas read such cells but build at most 1 MiB.
pub const MAX_CELL_TEXT_BYTES: usize = 4 << 20;

fn check_count(n: usize) -> Result<(), WriteError> {
    let mut problems = Problems::default();
    if n > MAX_RECORDS_PER_REQUEST {
        problems.add(
            ErrorCode::RequestRecordsExceedLimitation,
            None,
            format!("A request may add or update at most {MAX_RECORDS_PER_REQUEST} records; this one has {n}."),
        );
    }
    problems.into_result()
}

fn check_id(id: &str, at: &str, problems: &mut Problems) -> bool {
    if id.is_empty() {
        problems.add(
            ErrorCode::InvalidRecordId,
            At::record(at),
            "the record id is empty.".to_string(),
        );
        return false;
    }
    if id.chars().count() > ids::MAX_RECORD_ID_CHARS {
        problems.add(
            ErrorCode::InvalidLengthRecordId,
            At::record(at),
            format!("the record id is longer than {} characters.", ids::MAX_RECORD_ID_CHARS),
        );
        return false;
    }
    true
}

/// Plans an add of `inputs` through `view`.
/// `source_default` is the source status of source-language cells written without one.
pub fn plan_add(
    state: &GridState,
    view: &ViewDef,
    inputs: Vec<RecordInput>,
    user: &str,
    time_ms: i64,
    source_default: SourceStatus,
) -> Result<GridOp, WriteError> {
    check_count(inputs.len())?;
    let mut problems = Problems::default();
    let inputs = inputs.into_iter().enumerate().map(|(i, input)| (format!("records[{i}]"), input));
    let records =
        check_adds(state, view, inputs, &mut HashSet::new(), source_default, &mut problems);
    problems.into_result()?;
    Ok(GridOp::AddRecords { time_ms, user: user.to_owned(), records })
}

/// Plans an import through `view`: each input (with where it came from, e.g. `row 7`) updates
/// the record its id names, or adds one when the id is new or absent. Any problem refuses the
/// whole import. The ops are the updates, then the adds (whose source-language cells written
/// without a status take `source_default`).
pub fn plan_import(
    state: &GridState,
    view: &ViewDef,
    inputs: Vec<(String, RecordInput)>,
    user: &str,
    time_ms: i64,
    source_default: SourceStatus,
) -> Result<Vec<GridOp>, WriteError> {
    let by_path = state.store.identity() == RecordIdentity::PathAndId;
    let (mut updates, mut adds) = (Vec::new(), Vec::new());
    for (at, input) in inputs {
        let exists = input.id.as_deref().is_some_and(|id| {
            let path = if by_path { input.path.as_deref().unwrap_or_default() } else { "" };
            state.store.find(path, id).is_some()
        });
        if exists {
            updates.push((at, input))
        } else {
            adds.push((at, input))
        }
    }
    let mut problems = Problems::default();
    let mut seen = HashSet::new();
    let mut updated = Vec::with_capacity(updates.len());
    for (at, input) in &mut updates {
        let id = input.id.clone().unwrap_or_default();
        if let Some(write) =
            check_update(state, view, input, &id, None, at, &mut seen, &mut problems)
        {
            updated.push(write);
        }
    }
    let added = check_adds(state, view, adds.into_iter(), &mut seen, source_default, &mut problems);
    problems.into_result()?;
    let mut ops = Vec::with_capacity(2);
    if !updated.is_empty() {
        ops.push(GridOp::UpdateRecords { time_ms, user: user.to_owned(), records: updated });
    }
    if !added.is_empty() {
        ops.push(GridOp::AddRecords { time_ms, user: user.to_owned(), records: added });
    }
    Ok(ops)
}

/// Checks records to add (each with where it came from); `seen` holds the keys already taken
/// by the same request.
fn check_adds(
    state: &GridState,
    view: &ViewDef,
    inputs: impl Iterator<Item = (String, RecordInput)>,
    seen: &mut HashSet<String>,
    source_default: SourceStatus,
    problems: &mut Problems,
) -> Vec<RecordWrite> {
    let by_path = state.store.identity() == RecordIdentity::PathAndId;
    let mut records = Vec::with_capacity(inputs.size_hint().0);
    for (at, mut input) in inputs {
        let input = &mut input;
        // The path moves into the write; the id only after the cells are checked (their
        // messages name it).
        let path = input.path.take().unwrap_or_default();
        let id = match &input.id {
            Some(id) => id.clone(),
            None => loop {
                let id = ids::generate();
                if state.store.find(&path, &id).is_none() {
                    break id;
                }
            },
        };
        if check_id(&id, &at, problems) {
            let key = if by_path { format!("{path}\u{0}{id}") } else { id.clone() };
            if !seen.insert(key) {
                problems.add(
                    ErrorCode::DuplicateRecordId,
                    At::record(&at),
                    format!("record id \"{id}\" appears more than once."),
                );
            } else if state.store.find(&path, &id).is_some() {
                problems.add(
                    ErrorCode::RecordIdAlreadyExists,
                    At::record(&at),
                    format!("record \"{id}\" already exists."),
                );
            }
        }
        let cells =
            check_cells(state, view, input, None, &at, WriteKind::Add { source_default }, problems);
        records.push(RecordWrite {
            id,
            path,
            new_id: None,
            new_path: None,
            cells,
            mark_mt: input.mark_mt(),
        });
    }
    records
}

/// Plans a bulk update of `inputs` through `view` (each input names its record by id).
pub fn plan_update(
    state: &GridState,
    view: &ViewDef,
    mut inputs: Vec<RecordInput>,
    user: &str,
    time_ms: i64,
) -> Result<GridOp, WriteError> {
    check_count(inputs.len())?;
    let mut problems = Problems::default();
    let mut seen = HashSet::new();
    let mut records = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter_mut().enumerate() {
        let at = format!("records[{i}]");
        let Some(id) = input.id.clone() else {
            problems.add(
                ErrorCode::NullRecordId,
                At::record(&at),
                "the record id is missing.".to_string(),
            );
            continue;
        };
        if let Some(write) =
            check_update(state, view, input, &id, None, &at, &mut seen, &mut problems)
        {
            records.push(write);
        }
    }
    problems.into_result()?;
    Ok(GridOp::UpdateRecords { time_ms, user: user.to_owned(), records })
}

/// Plans the update of one record named in the path; `input.id` renames it.
/// The single-record update's input with its record located by `?path=`: in a grid whose
/// records are identified by path and id the path picks the record (a different path in the
/// body is 400, a record's path cannot change there); in other grids the record must be at
/// that path (404 nonexistentRecordId otherwise).
pub fn locate_by_path(
    state: &GridState,
    record_id: &str,
    at_path: Option<String>,
    mut input: RecordInput,
) -> Result<RecordInput, WriteError> {
    let Some(at_path) = at_path else { return Ok(input) };
    if state.store.identity() == RecordIdentity::PathAndId {
        match &input.path {
            Some(body_path) if *body_path != at_path => {
                return Err(ApiError::bad_request(format!(
                    "The body's path \"{body_path}\" differs from the path parameter \"{at_path}\"."
                ))
                .into())
            }
            _ => input.path = Some(at_path),
        }
        return Ok(input);
    }
    let at = state.store.find("", record_id).map(|row| state.store.path(row));
    if at != Some(at_path.as_str()) {
        return Err(ApiError::new(
            ErrorCode::NonexistentRecordId,
            format!("Record \"{record_id}\" does not exist at path \"{at_path}\"."),
        )
        .into());
    }
    Ok(input)
}

pub fn plan_update_one(
    state: &GridState,
    view: &ViewDef,
    record_id: &str,
    mut input: RecordInput,
    user: &str,
    time_ms: i64,
) -> Result<(GridOp, String, String), WriteError> {
    let mut problems = Problems::default();
    let mut seen = HashSet::new();
    let rename_to = input.id.clone();
    let write = check_update(
        state,
        view,
        &mut input,
        record_id,
        rename_to.as_deref(),
        "record",
        &mut seen,
        &mut problems,
    );
    problems.into_result()?;
    let write = write.ok_or_else(|| ApiError::internal("checked update has no record"))?;
    let id = write.new_id.clone().unwrap_or_else(|| write.id.clone());
    let path = write.new_path.clone().unwrap_or_else(|| write.path.clone());
    Ok((GridOp::UpdateRecords { time_ms, user: user.to_owned(), records: vec![write] }, path, id))
}

#[allow(clippy::too_many_arguments)]
fn check_update(
    state: &GridState,
    view: &ViewDef,
    input: &mut RecordInput,
    id: &str,
    rename_to: Option<&str>,
    at: &str,
    seen: &mut HashSet<String>,
    problems: &mut Problems,
) -> Option<RecordWrite> {
    let by_path = state.store.identity() == RecordIdentity::PathAndId;
    if !check_id(id, at, problems) {
        return None;
    }
    let lookup_path = if by_path { input.path.clone().unwrap_or_default() } else { String::new() };
    let Some(row) = state.store.find(&lookup_path, id) else {
        problems.add(
            ErrorCode::NonexistentRecordId,
            At::record(at),
            format!("record \"{id}\" does not exist."),
        );
        return None;
    };
    let key = if by_path { format!("{lookup_path}\u{0}{id}") } else { id.to_owned() };
    if !seen.insert(key) {
        problems.add(
            ErrorCode::DuplicateRecordId,
            At::record(at),
            format!("record id \"{id}\" appears more than once."),
        );
        return None;
    }
    let current_path = state.store.path(row).to_owned();
    let new_id = rename_to.filter(|n| *n != id).map(str::to_owned);
    if let Some(new_id) = &new_id {
        if check_id(new_id, at, problems) && state.store.find(&current_path, new_id).is_some() {
            problems.add(
                ErrorCode::RecordIdAlreadyExists,
                At::record(at),
                format!("record \"{new_id}\" already exists."),
            );
        }
    }
    let new_path = if by_path { None } else { input.path.clone().filter(|p| *p != current_path) };
    let cells = check_cells(state, view, input, Some(row), at, WriteKind::Update, problems);
    Some(RecordWrite {
        id: id.to_owned(),
        path: current_path,
        new_id,
        new_path,
        cells,
        mark_mt: input.mark_mt(),
    })
}

/// The cell writes of one record: each input cell checked (`check_cell`), a problem added for
/// each refused one. The values and column ids move out of `input` into the writes.
fn check_cells(
    state: &GridState,
    view: &ViewDef,
    input: &mut RecordInput,
    row: Option<super::store::RowId>,
    at: &str,
    kind: WriteKind,
    problems: &mut Problems,
) -> Vec<CellWrite> {
    let mut cells = Vec::with_capacity(input.cells.len());
    // The input cell each write comes from: its column id moves into the write at the end.
    let mut sources = Vec::with_capacity(input.cells.len());
    let mut seen =
        foldhash::HashSet::with_capacity_and_hasher(input.cells.len(), Default::default());
    // The values are taken out of the input: text moves into the op rather than being copied.
    let mut values: Vec<Option<Value>> = input.cells.iter_mut().map(|c| c.value.take()).collect();
    let record = RecordCheck { state, view, input: &*input, row, kind };
    for (j, cell) in record.input.cells.iter().enumerate() {
        let at = CellAt { record: at, cell: j };
        match record.check_cell(cell, values[j].take(), &at, &mut seen) {
            Ok(write) => {
                sources.push(j);
                cells.push(write);
            }
            Err(problem) => problems.push(problem),
        }
    }
    drop(seen);
    for (write, j) in cells.iter_mut().zip(sources) {
        write.column_id = input.cells[j].column_id.take().unwrap_or_default();
    }
    cells
}

/// One record of a write as its cells are checked: the branch, the view written through, the
/// record's input, its row (an update) and the kind of write.
struct RecordCheck<'a> {
    state: &'a GridState,
    view: &'a ViewDef,
    input: &'a RecordInput,
    row: Option<super::store::RowId>,
    kind: WriteKind,
}

impl<'a> RecordCheck<'a> {
    /// The write of one input cell (its column id left empty for the caller to move in), or
    /// the problem that refuses it: an unknown or repeated column, a value the column does not
    /// take or may not be written through the view, an invalid status, a locked cell.
    fn check_cell(
        &self,
        cell: &'a CellInput,
        value: Option<Value>,
        at: &CellAt,
        seen: &mut foldhash::HashSet<&'a str>,
    ) -> Result<CellWrite, Problem> {
        let Some(column_id) = cell.column_id.as_deref() else {
            return Err(Problem::new(
                ErrorCode::BadRequest,
                at.at(),
                "columnId is missing.".to_string(),
            ));
        };
        let view = self.view;
        let Some((column, editable)) = self.state.schema.view_column(view, column_id) else {
            return Err(Problem::new(
                ErrorCode::ColumnNotFoundInView,
                at.at(),
                format!("column \"{column_id}\" could not be found in view \"{}\".", view.id),
            ));
        };
        if !seen.insert(column_id) {
            return Err(Problem::new(
                ErrorCode::BadRequest,
                at.at(),
                format!("column \"{column_id}\" is written twice."),
            ));
        }
        let value = match value {
            Some(value) => Some(self.cell_value(column, editable, value, at)?),
            None => None,
        };
        let dependency_status = parse_status(
            cell.dependency_status.as_deref(),
            at,
            "dependencyStatus",
            DependencyStatus::parse,
        )?;
        let source_status =
            parse_status(cell.source_status.as_deref(), at, "sourceStatus", SourceStatus::parse)?;
        if let (Some(row), Some(new_value), WriteKind::Update) = (self.row, &value, self.kind) {
            self.check_unlocked(row, column_id, new_value, source_status, at)?;
        }
        let source_status = match self.kind {
            WriteKind::Add { source_default } if column.is_source() => {
                source_status.or(Some(source_default).filter(|&s| s != SourceStatus::Unset))
            }
            _ => source_status,
        };
        let localized = column.is_language();
        Ok(CellWrite {
            column_id: CompactString::default(),
            value,
            dependency_status: dependency_status.filter(|_| localized),
            source_status: source_status.filter(|_| localized),
        })
    }

    /// A written value as `column` stores it: refused when the column is a formula's or not
    /// editable in the view, when it is not a value of the column's type, or when it is over
    /// `MAX_CELL_TEXT_BYTES`.
    fn cell_value(
        &self,
        column: &ColumnDef,
        editable: bool,
        value: Value,
        at: &CellAt,
    ) -> Result<CellValue, Problem> {
        let column_id = &column.id;
        if column.column_type == ColumnType::Formula {
            return Err(Problem::new(
                ErrorCode::ColumnIsNotEditableInView,
                at.at(),
                format!("formula column \"{column_id}\" is computed, not written."),
            ));
        }
        if !editable {
            return Err(Problem::new(
                ErrorCode::ColumnIsNotEditableInView,
                at.at(),
                format!("column \"{column_id}\" is not editable in view \"{}\".", self.view.id),
            ));
        }
        let parsed = parse_value_owned(column, value).map_err(|why| {
            Problem::new(
                ErrorCode::BadRequest,
                at.at(),
                format!("{why} ({} column \"{column_id}\").", column.column_type.as_str()),
            )
        })?;
        if parsed.payload_bytes() > MAX_CELL_TEXT_BYTES {
            let record = self.row.map(|r| self.state.store.id(r)).or(self.input.id.as_deref());
            let record = record.map_or(String::new(), |id| format!(" of record \"{id}\""));
            return Err(Problem::new(
                ErrorCode::BadRequest,
                at.at(),
                format!(
                    "the value of column \"{column_id}\"{record} is {} bytes; a cell holds \
                     at most {MAX_CELL_TEXT_BYTES} bytes (4 MiB) of UTF-8 text.",
                    parsed.payload_bytes()
                ),
            ));
        }
        Ok(parsed)
    }

    /// Refuses (cellIsLocked) an update that changes the value of a locked cell: one whose
    /// source status locks it (unless this write unlocks it), or a target whose source locks it.
    fn check_unlocked(
        &self,
        row: super::store::RowId,
        column_id: &str,
        new_value: &CellValue,
        source_status: Option<SourceStatus>,
        at: &CellAt,
    ) -> Result<(), Problem> {
        let state = self.state;
        let slot = state.slots.get(column_id).copied();
        let locked = slot.is_some_and(|s| state.store.source_status(row, s).locks_value());
        let unlocking = source_status.is_some_and(|s| !s.locks_value());
        let changes = slot.is_some_and(|s| state.store.value(row, s) != *new_value);
        if ((locked && !unlocking) || locked_by_source(state, self.input, row, column_id))
            && changes
        {
            return Err(Problem::new(
                ErrorCode::CellIsLocked,
                at.at(),
                format!("the cell of column \"{column_id}\" is locked."),
            ));
        }
        Ok(())
    }
}

/// A status field of a cell (`dependencyStatus`, `sourceStatus`) parsed by `parse`; 400 for a
/// name it does not know.
fn parse_status<T>(
    text: Option<&str>,
    at: &CellAt,
    field: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, Problem> {
    match text {
        None => Ok(None),
        Some(s) => parse(s).map(Some).ok_or_else(|| {
            Problem::new(ErrorCode::BadRequest, at.at(), format!("{field} \"{s}\" is invalid."))
        }),
    }
}

/// Where a cell of a request is (`records[3].cells[1]`), formatted only when a problem names it.
struct CellAt<'a> {
    record: &'a str,
    cell: usize,
}

impl CellAt<'_> {
    fn at(&self) -> Option<At> {
        At::cell(self.record, self.cell)
    }
}

/// Whether a source cell up `column_id`'s chain of dependencies holds `lockAllLanguages` in
/// this record and keeps it through this write.
fn locked_by_source(
    state: &GridState,
    input: &RecordInput,
    row: super::store::RowId,
    column_id: &str,
) -> bool {
    let mut current = column_id;
    for _ in 0..state.schema.dependencies.len() {
        let Some(dependency) = state.schema.dependency_of_target(current) else { return false };
        let source = dependency.source_column_id.as_str();
        let written = input.cells.iter().find(|c| c.column_id.as_deref() == Some(source));
        let keeps_lock = match written.and_then(|c| c.source_status.as_deref()) {
            Some(status) => SourceStatus::parse(status) == Some(SourceStatus::LockAllLanguages),
            None => true,
        };
        let holds_lock = state.slots.get(source).is_some_and(|&slot| {
            state.store.source_status(row, slot) == SourceStatus::LockAllLanguages
        });
        if keeps_lock && holds_lock {
            return true;
        }
        current = source;
    }
    false
}

/// Records to delete: by id, or by (id, path) in grids identified by both.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct DeleteRecordsInput {
    pub ids: Option<Vec<String>>,
    pub identifiers: Option<Vec<RecordIdentifier>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct RecordIdentifier {
    pub id: String,
    #[serde(default)]
    pub path: String,
}

/// Plans a delete; every named record must exist.
pub fn plan_delete(state: &GridState, input: DeleteRecordsInput) -> Result<GridOp, WriteError> {
    let by_path = state.store.identity() == RecordIdentity::PathAndId;
    let keys: Vec<(String, String)> = match (input.ids, input.identifiers) {
        (_, Some(identifiers)) => identifiers.into_iter().map(|r| (r.path, r.id)).collect(),
        (Some(_), None) if by_path => {
            return Err(ApiError::bad_request(
                "This grid identifies records by path and id: send identifiers [{id, path}] instead of ids.",
            )
            .into())
        }
        (Some(ids), None) => ids.into_iter().map(|id| (String::new(), id)).collect(),
        (None, None) => {
            return Err(ApiError::bad_request("Send the records to delete as ids (or identifiers).")
                .into())
        }
    };
    let mut problems = Problems::default();
    let mut seen = HashSet::new();
    for (i, (path, id)) in keys.iter().enumerate() {
        if state.store.find(path, id).is_none() {
            let at = At::record(&format!("ids[{i}]"));
            problems.add(
                ErrorCode::NonexistentRecordId,
                at,
                format!("record \"{id}\" does not exist."),
            );
        } else if !seen.insert((path.clone(), id.clone())) {
            let at = At::record(&format!("ids[{i}]"));
            problems.add(
                ErrorCode::DuplicateRecordId,
                at,
                format!("record \"{id}\" appears more than once."),
            );
        }
    }
    problems.into_result()?;
    Ok(GridOp::DeleteRecords { keys })
}

#[cfg(test)]
mod tests {
    use super::CellInput;
    use serde_json::{json, Value};

    fn cell(body: Value) -> Result<CellInput, String> {
        serde_json::from_value(body).map_err(|e| e.to_string())
    }

    #[test]
    fn a_cell_reads_as_the_wire_form_says() {
        let absent = cell(json!({"columnId": "c", "extra": [1, {"x": 2}]})).expect("parses");
        assert_eq!((absent.column_id.as_deref(), absent.value), (Some("c"), None));
        let null = cell(json!({"columnId": "c", "value": null})).expect("parses");
        assert_eq!(null.value, Some(Value::Null), "null empties the cell");
        let text = cell(json!({"columnId": "c", "value": "x", "sourceStatus": "final",
            "dependencyStatus": null}))
        .expect("parses");
        assert_eq!(text.value, Some(json!("x")));
        assert_eq!(text.source_status.as_deref(), Some("final"));
        assert_eq!(text.dependency_status, None);
        let ids = cell(json!({"columnId": "r", "referencedIds": ["a", "b"]})).expect("parses");
        assert_eq!(ids.value, Some(json!(["a", "b"])));
        let no_ids = cell(json!({"columnId": "r", "referencedIds": null})).expect("parses");
        assert_eq!(no_ids.value, None);
        let both = cell(json!({"columnId": "r", "value": ["a"], "referencedIds": ["a"]}));
        assert!(both.expect_err("refused").contains("either value or referencedIds"));
        let twice = serde_json::from_str::<CellInput>(r#"{"columnId": "a", "columnId": "b"}"#);
        assert!(twice.expect_err("refused").to_string().contains("duplicate field `columnId`"));
        assert!(cell(json!({"columnId": 5})).is_err(), "a column id is a string");
        assert!(cell(json!("c")).is_err(), "a cell is an object");
    }
}
