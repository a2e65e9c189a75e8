//! Record requests: the JSON of add, update and delete, checked whole against the branch (view
//! columns, editable flags, value types, ids, locks) and turned into one `GridOp`. Every
//! problem of a request is reported at once; a request with any problem changes nothing.
//! The JSON's types are `input`'s, each cell's checks `cells`'; a refusal is a `WriteError`.

use std::fmt;

use super::ops::{GridOp, GridState, RecordWrite};
use super::schema::ViewDef;
use super::store::RecordIdentity;
use super::value::SourceStatus;
pub use super::write_error::MAX_PROBLEMS;
use super::write_error::{At, Problems, RecordIndex, WriteError};
use crate::error::ErrorCode;
use crate::ids;

/// The most records one add or update may carry.
pub const MAX_RECORDS_PER_REQUEST: usize = 1000;

mod bulk_json;
mod cells;
mod input;

use cells::{check_cells, WriteColumns};

/// What the checks of one write's records share: the record keys named so far (a key named
/// twice is refused) and the branch and view the cells are checked against.
struct WriteChecks<'a> {
    keys: foldhash::HashSet<String>,
    columns: WriteColumns<'a>,
    /// The inputs checked so far, their values and ids moved into the writes, when kept for
    /// the caller to free (an add's, at most `check_count`'s limit; an import's are freed as
    /// they go, a file's worth of emptied inputs being too much to hold).
    spent: Option<Vec<RecordInput>>,
}

impl<'a> WriteChecks<'a> {
    fn new(state: &'a GridState, view: &'a ViewDef) -> Self {
        WriteChecks {
            keys: Default::default(),
            columns: WriteColumns::new(state, view),
            spent: None,
        }
    }
}

/// What planning an add leaves behind: its inputs, their values and ids moved into the
/// writes, and the keys it named. Freeing them is thousands of small frees for a bulk add
/// (over 1% of a 1M load's CPU, on the grid actor's thread), so the actor hands them to its
/// caller.
#[derive(Debug, Default)]
pub struct PlanLeftovers {
    _keys: foldhash::HashSet<String>,
    _inputs: Vec<RecordInput>,
}
pub use bulk_json::parse_records;
pub use input::{
    CellInput, CellWire, DeleteRecordsInput, RecordIdentifier, RecordInput, RecordsBody,
    StatusesIn, ValueIn,
};

/// What kind of write is being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteKind {
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

/// Refuses (requestRecordsExceedLimitation) a write of `n` records, more than
/// `MAX_RECORDS_PER_REQUEST`.
pub fn check_count(n: usize) -> Result<(), WriteError> {
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

fn check_id(id: &str, at: &dyn fmt::Display, problems: &mut Problems) -> bool {
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
) -> Result<(GridOp, PlanLeftovers), WriteError> {
    check_count(inputs.len())?;
    let mut problems = Problems::default();
    let mut checks = WriteChecks::new(state, view);
    checks.spent = Some(Vec::with_capacity(inputs.len()));
    let inputs = inputs.into_iter().enumerate().map(|(i, input)| (RecordIndex(i), input));
    let records = check_adds(state, inputs, &mut checks, source_default, &mut problems);
    problems.into_result()?;
    let leftovers = PlanLeftovers { _keys: checks.keys, _inputs: checks.spent.unwrap_or_default() };
    Ok((GridOp::AddRecords { time_ms, user: user.to_owned(), records }, leftovers))
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
    let mut checks = WriteChecks::new(state, view);
    let mut updated = Vec::with_capacity(updates.len());
    for (at, input) in &mut updates {
        let id = input.id.clone().unwrap_or_default();
        if let Some(write) = check_update(state, input, &id, None, at, &mut checks, &mut problems) {
            updated.push(write);
        }
    }
    let added = check_adds(state, adds.into_iter(), &mut checks, source_default, &mut problems);
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

/// Checks records to add (each with where it came from) through the write's view; `checks`
/// holds the keys already taken by the same request.
fn check_adds<'a, L: fmt::Display>(
    state: &'a GridState,
    inputs: impl Iterator<Item = (L, RecordInput)>,
    checks: &mut WriteChecks<'a>,
    source_default: SourceStatus,
    problems: &mut Problems,
) -> Vec<RecordWrite> {
    let by_path = state.store.identity() == RecordIdentity::PathAndId;
    let mut records = Vec::with_capacity(inputs.size_hint().0);
    // The keys' set takes them all without growing (a growth hashes every key again).
    checks.keys.reserve(inputs.size_hint().0);
    for (at, mut owned) in inputs {
        let input = &mut owned;
        // The path moves into the write; the id only after the cells are checked (their
        // messages name it).
        let path = input.path.take().unwrap_or_default();
        // A generated id was just looked up in the branch: only a given one is looked up below.
        let generated = match &input.id {
            Some(_) => None,
            None => Some(loop {
                let id = ids::generate();
                if state.store.find(&path, &id).is_none() {
                    break id;
                }
            }),
        };
        let id = input.id.as_deref().or(generated.as_deref()).unwrap_or_default();
        if check_id(id, &at, problems) {
            let key = if by_path { format!("{path}\u{0}{id}") } else { id.to_owned() };
            if !checks.keys.insert(key) {
                problems.add(
                    ErrorCode::DuplicateRecordId,
                    At::record(&at),
                    format!("record id \"{id}\" appears more than once."),
                );
            } else if generated.is_none() && state.store.find(&path, id).is_some() {
                problems.add(
                    ErrorCode::RecordIdAlreadyExists,
                    At::record(&at),
                    format!("record \"{id}\" already exists."),
                );
            }
        }
        let cells = check_cells(
            &mut checks.columns,
            input,
            None,
            &at,
            WriteKind::Add { source_default },
            problems,
        );
        // The id moves into the write once nothing names it any more.
        let mark_mt = input.mark_mt();
        let id = input.id.take().or(generated).unwrap_or_default();
        records.push(RecordWrite { id, path, new_id: None, new_path: None, cells, mark_mt });
        if let Some(spent) = &mut checks.spent {
            spent.push(owned);
        }
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
    let mut checks = WriteChecks::new(state, view);
    checks.keys.reserve(inputs.len());
    let mut records = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter_mut().enumerate() {
        let at = RecordIndex(i);
        let Some(id) = input.id.clone() else {
            problems.add(
                ErrorCode::NullRecordId,
                At::record(&at),
                "the record id is missing.".to_string(),
            );
            continue;
        };
        if let Some(write) = check_update(state, input, &id, None, &at, &mut checks, &mut problems)
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
                return Err(WriteError::refused(
                    ErrorCode::BadRequest,
                    format!(
                        "The body's path \"{body_path}\" differs from the path parameter \"{at_path}\"."
                    ),
                ))
            }
            _ => input.path = Some(at_path),
        }
        return Ok(input);
    }
    let at = state.store.find("", record_id).map(|row| state.store.path(row));
    if at != Some(at_path.as_str()) {
        return Err(WriteError::refused(
            ErrorCode::NonexistentRecordId,
            format!("Record \"{record_id}\" does not exist at path \"{at_path}\"."),
        ));
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
    let mut checks = WriteChecks::new(state, view);
    let rename_to = input.id.clone();
    let write = check_update(
        state,
        &mut input,
        record_id,
        rename_to.as_deref(),
        &"record",
        &mut checks,
        &mut problems,
    );
    problems.into_result()?;
    // `check_update` adds a problem whenever it gives no record.
    let write = write.ok_or_else(|| {
        WriteError::refused(ErrorCode::InternalServerError, "checked update has no record")
    })?;
    let id = write.new_id.clone().unwrap_or_else(|| write.id.clone());
    let path = write.new_path.clone().unwrap_or_else(|| write.path.clone());
    Ok((GridOp::UpdateRecords { time_ms, user: user.to_owned(), records: vec![write] }, path, id))
}

fn check_update<'a>(
    state: &'a GridState,
    input: &mut RecordInput,
    id: &str,
    rename_to: Option<&str>,
    at: &dyn fmt::Display,
    checks: &mut WriteChecks<'a>,
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
    if !checks.keys.insert(key) {
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
    let cells = check_cells(&mut checks.columns, input, Some(row), at, WriteKind::Update, problems);
    Some(RecordWrite {
        id: id.to_owned(),
        path: current_path,
        new_id,
        new_path,
        cells,
        mark_mt: input.mark_mt(),
    })
}

/// Plans a delete; every named record must exist.
pub fn plan_delete(state: &GridState, input: DeleteRecordsInput) -> Result<GridOp, WriteError> {
    let by_path = state.store.identity() == RecordIdentity::PathAndId;
    let keys: Vec<(String, String)> = match (input.ids, input.identifiers) {
        (_, Some(identifiers)) => identifiers.into_iter().map(|r| (r.path, r.id)).collect(),
        (Some(_), None) if by_path => {
            return Err(WriteError::refused(
                ErrorCode::BadRequest,
                "This grid identifies records by path and id: send identifiers [{id, path}] instead of ids.",
            ))
        }
        (Some(ids), None) => ids.into_iter().map(|id| (String::new(), id)).collect(),
        (None, None) => {
            return Err(WriteError::refused(
                ErrorCode::BadRequest,
                "Send the records to delete as ids (or identifiers).",
            ))
        }
    };
    let mut problems = Problems::default();
    let mut seen = foldhash::HashSet::default();
    for (i, (path, id)) in keys.iter().enumerate() {
        let found = state.store.find(path, id);
        // In a grid identified by id alone an identifier's path, when given, is where the
        // record must be (as a single record's `?path=`).
        let elsewhere = |row| !by_path && !path.is_empty() && state.store.path(row) != path;
        if found.is_none_or(elsewhere) {
            let at = At::record(&format!("ids[{i}]"));
            let message = match found {
                Some(_) => format!("record \"{id}\" does not exist at path \"{path}\"."),
                None => format!("record \"{id}\" does not exist."),
            };
            problems.add(ErrorCode::NonexistentRecordId, at, message);
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
    use super::{CellInput, ValueIn};
    use serde_json::{json, Value};

    fn cell(body: Value) -> Result<CellInput, String> {
        serde_json::from_value(body).map_err(|e| e.to_string())
    }

    /// A record read from a `Value` (as an import reads each) keeps room for its own cells
    /// only; one read from JSON text, whose lists have no known length, for a typical record's.
    #[test]
    fn a_record_keeps_room_for_its_cells_as_far_as_the_format_tells_them() {
        let record = json!({"id": "a", "cells": [{"columnId": "x", "value": "v"}]});
        let from_value: super::RecordInput = serde_json::from_value(record.clone()).expect("reads");
        assert_eq!(from_value.cells.capacity(), 1);
        let from_text: super::RecordInput =
            serde_json::from_str(&record.to_string()).expect("reads");
        assert_eq!(from_text.cells.capacity(), 16);
        assert_eq!(from_value, from_text);
    }

    #[test]
    fn a_cell_value_reads_as_serde_json_reads_it() {
        let values = [
            "null",
            "true",
            "0",
            "-7",
            "18446744073709551615",
            "-9223372036854775808",
            "1e300",
            "0.1",
            "2.5e-3",
            r#""""#,
            r#""caf\u00e9 \ud83d\ude00 \n""#,
            r#"["a", 1, null, ["b"], {"c": 2}]"#,
            r#"{"b": 1, "a": [true, {"x": null}]}"#,
            "[]",
            "{}",
        ];
        for text in values {
            let expected: Value = serde_json::from_str(text).expect("JSON");
            let from_text: ValueIn = serde_json::from_str(text).expect("a value");
            assert_eq!(from_text.clone().into_value(), expected, "{text}");
            let from_value: ValueIn = serde_json::from_value(expected.clone()).expect("a value");
            assert_eq!(from_value, from_text, "{text}");
            assert_eq!(ValueIn::from(expected), from_text, "{text}");
        }
    }

    #[test]
    fn a_cell_reads_as_the_wire_form_says() {
        let absent = cell(json!({"columnId": "c", "extra": [1, {"x": 2}]})).expect("parses");
        assert_eq!((absent.column_id.as_deref(), absent.value), (Some("c"), None));
        let null = cell(json!({"columnId": "c", "value": null})).expect("parses");
        assert_eq!(null.value, Some(ValueIn::Null), "null empties the cell");
        let text = cell(json!({"columnId": "c", "value": "x", "sourceStatus": "final",
            "dependencyStatus": null}))
        .expect("parses");
        assert_eq!(text.value, Some(ValueIn::String("x".into())));
        assert_eq!(text.source_status(), Some("final"));
        assert_eq!(text.dependency_status(), None);
        let ids = cell(json!({"columnId": "r", "referencedIds": ["a", "b"]})).expect("parses");
        assert_eq!(ids.value, Some(ValueIn::from(json!(["a", "b"]))));
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
