//! How ops change a branch's records: column storage, record writes with the localization
//! rules of decisions.md section 5 (dependency statuses, source statuses, machine-translation
//! flags), deletes and history.
//!
//! Called only from `GridState::apply`; deterministic (times and users come in the op).

use super::codec::convert;
use super::history::CellRecord;
use super::ops::{CellWrite, GridState, RecordWrite};
use super::schema::ColumnDef;
use super::store::{CellRef, ColumnSlot, RowId};
use super::value::{CellValue, DependencyStatus};

/// Whether a stored cell is empty, without copying it.
fn empty_cell(cell: CellRef<'_>) -> bool {
    match cell {
        CellRef::Empty => true,
        CellRef::Text(s) => s.is_empty(),
        CellRef::List(items) => items.is_empty(),
        CellRef::Number(_) | CellRef::Boolean(_) | CellRef::Datetime(_) => false,
    }
}

/// The status of a target cell from its value and its source's (new record, new dependency).
fn initial_status(target_empty: bool, source_empty: bool) -> DependencyStatus {
    match (target_empty, source_empty) {
        (false, _) => DependencyStatus::UpToDate,
        (true, false) => DependencyStatus::OutOfDate,
        (true, true) => DependencyStatus::Unset,
    }
}

impl GridState {
    pub(super) fn add_column_storage(&mut self, column: &ColumnDef) {
        let slot = self.store.add_column(column.column_type.storage(), column.is_language());
        self.slots.insert(column.id.clone(), slot);
    }

    pub(super) fn replace_column_storage(&mut self, old_id: &str, column: &ColumnDef) {
        let Some(slot) = self.slots.remove(old_id) else { return };
        let Some(before) = self.schema.column(old_id).cloned() else { return };
        if before.column_type.storage() == column.column_type.storage()
            && before.column_type == column.column_type
        {
            self.store.set_localized(slot, column.is_language());
            self.slots.insert(column.id.clone(), slot);
            return;
        }
        let new_slot = self.store.add_column(column.column_type.storage(), column.is_language());
        let rows: Vec<RowId> = self.store.live_rows().collect();
        for row in rows {
            let converted = convert(&self.store.value(row, slot), column);
            // Conversion yields the new column's kind, so the store accepts it.
            let _ = self.store.set_value(row, new_slot, &converted);
        }
        self.store.drop_column(slot);
        self.slots.insert(column.id.clone(), new_slot);
    }

    pub(super) fn drop_column_storage(&mut self, id: &str) {
        let orphaned: Vec<String> = self
            .schema
            .dependencies
            .iter()
            .filter(|d| d.source_column_id == id)
            .map(|d| d.target_column_id.clone())
            .collect();
        for target in orphaned {
            self.set_all_dependency_statuses(&target, |_, _| DependencyStatus::Unset);
        }
        if let Some(slot) = self.slots.remove(id) {
            self.store.drop_column(slot);
        }
    }

    /// Sets the statuses of a dependency's target cells to `unset` (the dependency goes away).
    pub(super) fn clear_dependency_of(&mut self, dependency_id: &str) {
        let target = self
            .schema
            .dependencies
            .iter()
            .find(|d| d.id == dependency_id)
            .map(|d| d.target_column_id.clone());
        if let Some(target) = target {
            self.set_all_dependency_statuses(&target, |_, _| DependencyStatus::Unset);
        }
    }

    /// Statuses of every cell of a new dependency's target, from the values.
    pub(super) fn recompute_dependency_statuses(&mut self, target: &str) {
        let Some(source) =
            self.schema.dependency_of_target(target).map(|d| d.source_column_id.clone())
        else {
            return;
        };
        let Some(&source_slot) = self.slots.get(&source) else { return };
        let store = &self.store;
        let source_empty: Vec<bool> =
            store.live_rows().map(|r| empty_cell(store.value_ref(r, source_slot))).collect();
        let mut index = 0;
        self.set_all_dependency_statuses(target, |target_empty, _| {
            let status =
                initial_status(target_empty, source_empty.get(index).copied().unwrap_or(true));
            index += 1;
            status
        });
    }

    fn set_all_dependency_statuses(
        &mut self,
        target: &str,
        mut status: impl FnMut(bool, RowId) -> DependencyStatus,
    ) {
        let Some(&slot) = self.slots.get(target) else { return };
        let rows: Vec<RowId> = self.store.live_rows().collect();
        for row in rows {
            let empty = empty_cell(self.store.value_ref(row, slot));
            let s = status(empty, row);
            self.store.set_dependency_status(row, slot, s);
        }
    }

    /// (target, source) of every dependency, taken once per op: the record writes of the op
    /// change cells, never the schema.
    pub(super) fn dependency_pairs(&self) -> Vec<(String, String)> {
        self.schema
            .dependencies
            .iter()
            .map(|d| (d.target_column_id.clone(), d.source_column_id.clone()))
            .collect()
    }

    pub(super) fn add_record(
        &mut self,
        time_ms: i64,
        user: &str,
        record: &RecordWrite,
        dependencies: &[(String, String)],
    ) {
        // The values go in with the row (no empty cell written over); then the flags.
        let values: Vec<(ColumnSlot, &CellValue)> = record
            .cells
            .iter()
            .filter_map(|c| Some((*self.slots.get(c.column_id.as_str())?, c.value.as_ref()?)))
            .collect();
        let row = self.store.insert_with(&record.id, &record.path, time_ms, user, &values);
        // A new row's flags are clear: only cells that set one are looked at.
        for cell in &record.cells {
            let sets_flags =
                record.mark_mt || cell.source_status.is_some() || cell.dependency_status.is_some();
            if let Some(&slot) = self.slots.get(cell.column_id.as_str()).filter(|_| sets_flags) {
                self.write_flags(row, slot, cell, record.mark_mt);
            }
        }
        self.compute_formulas(row, None);
        for (target, source) in dependencies {
            if explicit_dependency_status(&record.cells, target).is_some() {
                continue;
            }
            let status = initial_status(self.is_empty(row, target), self.is_empty(row, source));
            self.set_dependency_status(row, target, status);
        }
        self.record_history(row, time_ms, user, &record.cells);
    }

    /// Applies an update. A write that changes nothing (same values, statuses and flags, same id
    /// and path) leaves the record's modification time and history alone.
    pub(super) fn update_record(
        &mut self,
        time_ms: i64,
        user: &str,
        record: &RecordWrite,
        dependencies: &[(String, String)],
    ) {
        let Some(row) = self.store.find(&record.path, &record.id) else { return };
        let id = record.new_id.clone().unwrap_or_else(|| record.id.clone());
        let path = record.new_path.clone().unwrap_or_else(|| record.path.clone());
        let moved = id != record.id || path != record.path;
        if moved {
            self.store.set_identity(row, &id, &path);
        }
        let written = self.write_cells(row, &record.cells, record.mark_mt);
        if !written.values.is_empty() && !self.formulas.is_empty() {
            let values: Vec<&str> = written.values.iter().copied().collect();
            self.compute_formulas(row, Some(&values));
        }
        let mut changed = moved || written.any;
        for (target, source) in dependencies {
            if explicit_dependency_status(&record.cells, target).is_some() {
                continue;
            }
            let target_written =
                record.cells.iter().any(|c| c.column_id == target && c.value.is_some());
            if target_written {
                let status = initial_status(self.is_empty(row, target), self.is_empty(row, source));
                changed |= self.set_dependency_status(row, target, status);
            } else if written.values.contains(source.as_str()) {
                changed |= self.set_dependency_status(row, target, DependencyStatus::OutOfDate);
            }
        }
        if changed {
            self.store.touch(row, time_ms, user);
            self.record_history(row, time_ms, user, &record.cells);
        }
    }

    pub(super) fn delete_records(&mut self, keys: &[(String, String)]) {
        for (path, id) in keys {
            if let Some(row) = self.store.find(path, id) {
                self.history.retire(self.store.history_head(row));
                self.store.delete(row);
            }
        }
        self.store.maybe_compact();
    }

    /// Writes values, explicit statuses and machine-translation flags.
    fn write_cells<'a>(
        &mut self,
        row: RowId,
        cells: &'a [CellWrite],
        mark_mt: bool,
    ) -> WrittenCells<'a> {
        let mut written = WrittenCells { values: foldhash::HashSet::default(), any: false };
        for cell in cells {
            let Some(&slot) = self.slots.get(cell.column_id.as_str()) else { continue };
            if let Some(value) = &cell.value {
                if self.store.set_value(row, slot, value).unwrap_or(false) {
                    written.values.insert(cell.column_id.as_str());
                    written.any = true;
                }
            }
            written.any |= self.write_flags(row, slot, cell, mark_mt);
        }
        written
    }

    /// Writes a cell's machine-translation flag (with its value: set on a dependency target
    /// when `mark_mt`, cleared otherwise) and explicit statuses; true when any changed.
    fn write_flags(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        cell: &CellWrite,
        mark_mt: bool,
    ) -> bool {
        let mut any = false;
        if cell.value.is_some() {
            let is_target = self.schema.dependency_of_target(&cell.column_id).is_some();
            any |= self.store.set_mt(row, slot, mark_mt && is_target);
        }
        if let Some(status) = cell.source_status {
            any |= self.store.set_source_status(row, slot, status);
        }
        if let Some(status) = cell.dependency_status {
            any |= self.store.set_dependency_status(row, slot, status);
        }
        any
    }

    fn is_empty(&self, row: RowId, column: &str) -> bool {
        match self.slots.get(column) {
            Some(&slot) => empty_cell(self.store.value_ref(row, slot)),
            None => true,
        }
    }

    /// Sets a cell's dependency status; true when it changed.
    fn set_dependency_status(
        &mut self,
        row: RowId,
        column: &str,
        status: DependencyStatus,
    ) -> bool {
        match self.slots.get(column) {
            Some(&slot) => self.store.set_dependency_status(row, slot, status),
            None => false,
        }
    }

    fn record_history(&mut self, row: RowId, time_ms: i64, user: &str, cells: &[CellWrite]) {
        let store = &self.store;
        let written: Vec<CellRecord<'_>> = cells
            .iter()
            .filter_map(|cell| {
                let slot = *self.slots.get(cell.column_id.as_str())?;
                let statuses = store
                    .is_localized(slot)
                    .then(|| (store.dependency_status(row, slot), store.source_status(row, slot)));
                Some(CellRecord {
                    column_id: &cell.column_id,
                    value: store.value_ref(row, slot),
                    statuses,
                })
            })
            .collect();
        let head = self.history.push(
            store.history_head(row),
            store.id(row),
            (time_ms, user, store.path(row)),
            &written,
        );
        self.store.set_history_head(row, head);
    }
}

/// What a write did to a record's cells.
struct WrittenCells<'a> {
    /// The columns whose value changed.
    values: foldhash::HashSet<&'a str>,
    /// Whether any value, status or flag changed.
    any: bool,
}

fn explicit_dependency_status(cells: &[CellWrite], column: &str) -> Option<DependencyStatus> {
    cells.iter().find(|c| c.column_id == column).and_then(|c| c.dependency_status)
}
