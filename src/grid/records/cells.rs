//! The cells of one record of a write, each checked against the view and the branch: a known,
//! editable, non-formula column written once, a value of its type within the size limit, valid
//! statuses, and no change to a locked cell.

use compact_str::CompactString;

use super::{CellInput, RecordInput, ValueIn, WriteKind, MAX_CELL_TEXT_BYTES};
use crate::error::ErrorCode;
use crate::grid::cell_memo::CellMemo;
use crate::grid::codec::parse_value_owned;
use crate::grid::ops::{CellWrite, GridState};
use crate::grid::schema::{ColumnDef, ViewDef};
use crate::grid::store::RowId;
use crate::grid::value::{CellValue, DependencyStatus, SourceStatus};
use crate::grid::write_error::{At, Problem, Problems};

/// What the checks of one write's records share: the branch and the view written through, the
/// column each cell's id resolved to there (with its editable flag and schema position),
/// remembered by the cell's place in its record, and which columns the record being checked
/// has written.
pub(in crate::grid::records) struct WriteColumns<'a> {
    state: &'a GridState,
    view: &'a ViewDef,
    columns: CellMemo<Option<(&'a ColumnDef, bool, usize)>>,
    /// Bit `p`: the record being checked writes the column at schema position `p`.
    written: Vec<u64>,
    /// The positions set in `written`, cleared after each record.
    marked: Vec<usize>,
}

impl<'a> WriteColumns<'a> {
    pub(in crate::grid::records) fn new(state: &'a GridState, view: &'a ViewDef) -> Self {
        WriteColumns {
            state,
            view,
            columns: CellMemo::default(),
            written: Vec::new(),
            marked: Vec::new(),
        }
    }

    /// Marks `position` written by this record; false when it already was.
    fn mark(&mut self, position: usize) -> bool {
        let (word, bit) = (position / 64, 1u64 << (position % 64));
        if self.written.len() <= word {
            self.written.resize(word + 1, 0);
        }
        let bits = &mut self.written[word];
        if *bits & bit != 0 {
            return false;
        }
        *bits |= bit;
        self.marked.push(position);
        true
    }

    /// Forgets the columns the record just checked wrote.
    fn clear(&mut self) {
        for position in self.marked.drain(..) {
            self.written[position / 64] = 0;
        }
    }
}

/// The cell writes of one record: each input cell checked (`check_cell`), a problem added for
/// each refused one, against the write's branch and view (`columns`). The values and column
/// ids move out of `input` into the writes (the ids only when no cell was refused: a problem
/// refuses the write).
pub(super) fn check_cells(
    columns: &mut WriteColumns<'_>,
    input: &mut RecordInput,
    row: Option<RowId>,
    at: &dyn std::fmt::Display,
    kind: WriteKind,
    problems: &mut Problems,
) -> Vec<CellWrite> {
    let mut cells = Vec::with_capacity(input.cells.len());
    let (state, view) = (columns.state, columns.view);
    for j in 0..input.cells.len() {
        // The value is taken out of the input: text moves into the op rather than being
        // copied. Column ids stay until every cell is checked (a lock looks at the others').
        let value = input.cells[j].value.take();
        let record = RecordCheck { state, view, input: &*input, row, kind };
        let at = CellAt { record: at, cell: j };
        match record.check_cell(&input.cells[j], value, &at, columns) {
            Ok(write) => cells.push(write),
            Err(problem) => problems.push(problem),
        }
    }
    columns.clear();
    // A refused cell refuses the whole write, so the ids move only when every cell passed:
    // then the writes are the input cells, in order.
    if cells.len() == input.cells.len() {
        for (write, cell) in cells.iter_mut().zip(&mut input.cells) {
            write.column_id = cell.column_id.take().unwrap_or_default();
        }
    }
    cells
}

/// One record of a write as its cells are checked: the branch, the view written through, the
/// record's input, its row (an update) and the kind of write.
struct RecordCheck<'a, 'i> {
    state: &'a GridState,
    view: &'a ViewDef,
    input: &'i RecordInput,
    row: Option<RowId>,
    kind: WriteKind,
}

impl<'a> RecordCheck<'a, '_> {
    /// The write of one input cell (its column id left empty for the caller to move in), or
    /// the problem that refuses it: an unknown or repeated column, a value the column does not
    /// take or may not be written through the view, an invalid status, a locked cell.
    fn check_cell(
        &self,
        cell: &CellInput,
        value: Option<ValueIn>,
        at: &CellAt,
        columns: &mut WriteColumns<'a>,
    ) -> Result<CellWrite, Problem> {
        let Some(column_id) = cell.column_id.as_deref() else {
            return Err(Problem::new(
                ErrorCode::BadRequest,
                at.at(),
                "columnId is missing.".to_string(),
            ));
        };
        let (state, view) = (self.state, self.view);
        let resolved = columns.columns.get(at.cell, column_id, |id| {
            let (column, editable) = state.schema.view_column(view, id)?;
            Some((column, editable, state.schema.column_position(id)?))
        });
        let Some((column, editable, position)) = resolved else {
            return Err(Problem::new(
                ErrorCode::ColumnNotFoundInView,
                at.at(),
                format!("column \"{column_id}\" could not be found in view \"{}\".", view.id),
            ));
        };
        if !columns.mark(position) {
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
            cell.dependency_status(),
            at,
            "dependencyStatus",
            DependencyStatus::parse,
        )?;
        let source_status =
            parse_status(cell.source_status(), at, "sourceStatus", SourceStatus::parse)?;
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
        value: ValueIn,
        at: &CellAt,
    ) -> Result<CellValue, Problem> {
        let column_id = &column.id;
        if !column.is_writable() {
            return Err(Problem::new(
                ErrorCode::ColumnIsNotEditableInView,
                at.at(),
                format!(
                    "{} column \"{column_id}\" is computed, not written.",
                    column.column_type.as_str()
                ),
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
        row: RowId,
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
    record: &'a dyn std::fmt::Display,
    cell: usize,
}

impl CellAt<'_> {
    fn at(&self) -> Option<At> {
        At::cell(self.record, self.cell)
    }
}

/// Whether a source cell up `column_id`'s chain of dependencies holds `lockAllLanguages` in
/// this record and keeps it through this write.
fn locked_by_source(state: &GridState, input: &RecordInput, row: RowId, column_id: &str) -> bool {
    let mut current = column_id;
    for _ in 0..state.schema.dependencies.len() {
        let Some(dependency) = state.schema.dependency_of_target(current) else { return false };
        let source = dependency.source_column_id.as_str();
        let written = input.cells.iter().find(|c| c.column_id.as_deref() == Some(source));
        let keeps_lock = match written.and_then(|c| c.source_status()) {
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
