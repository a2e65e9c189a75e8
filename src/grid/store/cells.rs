//! Cells: each cell's value, version, statuses and machine-translation mark, read and written
//! by row and column slot.

use super::{CellRef, CellStatuses, ColumnSlot, ColumnStore, KindMismatch, RowId};
use crate::grid::value::{CellValue, DependencyStatus, SourceStatus};

impl ColumnStore {
    /// Writes a cell. The value must be `Empty` or of the column's storage kind. Returns
    /// `Ok(true)` when the cell changed (its version was then set to the clock), `Ok(false)` for a write of
    /// the value already there. `Datetime(i64::MIN)` is the empty datetime and reads back `Empty`.
    pub fn set_value(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        value: &CellValue,
    ) -> Result<bool, KindMismatch> {
        let column = self.columns.get_mut(slot.0 as usize).and_then(Option::as_mut);
        let column = column.expect("column slots are not used after drop_column");
        let changed = column.set(row.at(), value, &mut self.scratch, self.clock)?;
        self.note_written(changed, row, slot);
        Ok(changed)
    }

    /// `set_value` of a text cell given as `&str`.
    pub fn set_text(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        value: &str,
    ) -> Result<bool, KindMismatch> {
        let column = self.columns.get_mut(slot.0 as usize).and_then(Option::as_mut);
        let column = column.expect("column slots are not used after drop_column");
        let changed = column.set_text(row.at(), value, self.clock)?;
        self.note_written(changed, row, slot);
        Ok(changed)
    }

    /// Journals a cell write that changed the cell.
    pub(super) fn note_written(&mut self, changed: bool, row: RowId, slot: ColumnSlot) {
        if changed && self.tracking {
            let limit = self.journal_limit();
            self.changes.note_cell(row.0, slot.0, limit);
        }
    }

    /// The cell's value, owned.
    pub fn value(&self, row: RowId, slot: ColumnSlot) -> CellValue {
        self.value_ref(row, slot).to_value()
    }

    /// The cell's value, borrowed (no allocation).
    #[inline]
    pub fn value_ref(&self, row: RowId, slot: ColumnSlot) -> CellRef<'_> {
        self.column(slot).get(row.at())
    }

    /// The cell's version: 0 until first changed, then the clock of the last change of its value
    /// or statuses.
    pub fn version(&self, row: RowId, slot: ColumnSlot) -> u32 {
        self.column(slot).version(row.at())
    }

    /// Calls `cell` with the cell of each of `rows` (ascending, as a snapshot reads a chunk's
    /// rows) in `slot`'s column: what `value_ref` gives each, each chunk looked up once.
    pub fn for_each_cell_ascending(
        &self,
        rows: &[RowId],
        slot: ColumnSlot,
        cell: impl FnMut(CellRef<'_>),
    ) {
        self.column(slot).for_each_cell_ascending(rows, |row| row.at(), cell)
    }

    /// The status bytes of `rows` (ascending, as a snapshot reads a chunk's rows) in `slot`'s
    /// column: each row's dependency status, source status << 2 and machine-translated flag
    /// << 5 (`CellStatuses`), 0 in a column that is not localized.
    pub fn status_bytes_ascending(&self, rows: &[RowId], slot: ColumnSlot) -> Vec<u8> {
        self.column(slot).status_bytes_ascending(rows, |row| row.at())
    }

    /// At least the bytes a snapshot counts for the cells of `slot` in storage chunk `chunk`
    /// (a text's bytes, a list's items' bytes plus 8 each); 0 for fixed-width values.
    pub fn text_bytes_bound(&self, slot: ColumnSlot, chunk: usize) -> usize {
        self.column(slot).text_bytes_bound(chunk)
    }

    /// The versions of `rows` (ascending, as a snapshot reads a chunk's rows) in `slot`'s
    /// column: what `version` gives each, read along the chunks' runs.
    pub fn versions_ascending(&self, rows: &[RowId], slot: ColumnSlot) -> Vec<u32> {
        self.column(slot).versions_ascending(rows, |row| row.at())
    }

    /// Restores a cell's version (loading a snapshot); nothing else sets versions directly.
    pub fn restore_version(&mut self, row: RowId, slot: ColumnSlot, version: u32) {
        self.column_mut(slot).restore_version(row.at(), version);
    }

    /// The cell's dependency status (`Unset` in a column that is not localized).
    pub fn dependency_status(&self, row: RowId, slot: ColumnSlot) -> DependencyStatus {
        self.column(slot).dependency_status(row.at())
    }

    /// Sets the cell's dependency status; true when it changed. Ignored (false) in a column that
    /// is not localized.
    pub fn set_dependency_status(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        status: DependencyStatus,
    ) -> bool {
        let clock = self.clock;
        self.column_mut(slot).set_dependency_status(row.at(), status, clock)
    }

    /// The cell's source status (`Unset` in a column that is not localized).
    pub fn source_status(&self, row: RowId, slot: ColumnSlot) -> SourceStatus {
        self.column(slot).source_status(row.at())
    }

    /// Sets the cell's source status; true when it changed. Ignored (false) in a column that is
    /// not localized.
    pub fn set_source_status(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        status: SourceStatus,
    ) -> bool {
        let clock = self.clock;
        self.column_mut(slot).set_source_status(row.at(), status, clock)
    }

    /// The cell's statuses and isMT flag together (all clear in a column that is not localized).
    pub fn statuses(&self, row: RowId, slot: ColumnSlot) -> CellStatuses {
        self.column(slot).statuses(row.at())
    }

    /// True when the cell was machine translated (false in a column that is not localized).
    pub fn is_mt(&self, row: RowId, slot: ColumnSlot) -> bool {
        self.column(slot).is_mt(row.at())
    }

    /// Sets the cell's isMT flag; true when it changed. Ignored (false) in a column that is not
    /// localized.
    pub fn set_mt(&mut self, row: RowId, slot: ColumnSlot, mt: bool) -> bool {
        let clock = self.clock;
        self.column_mut(slot).set_mt(row.at(), mt, clock)
    }
}
