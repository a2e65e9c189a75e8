//! How ops change a branch's records: column storage, record writes with the localization
//! rules of decisions.md section 5 (dependency statuses, source statuses, machine-translation
//! flags), deletes and history.
//!
//! Called only from `GridState::apply`; deterministic (times and users come in the op).

use super::cell_memo::CellMemo;
use super::codec::convert;
use super::history::{
    pending_columns, pending_creation, CellRecord, HistoryCell, HistoryEntry, NO_ENTRY,
    PENDING_COLUMNS,
};
use super::ops::{CellWrite, GridOp, GridState, RecordWrite};
use super::schema::{ColumnDef, ColumnType, Schema};
use super::store::{CellRef, ColumnSlot, ColumnStore, NewRecord, RowId};
use super::value::{DependencyStatus, SourceStatus};

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

    /// The dependencies an add sets statuses of: each target's id, and where the target's and
    /// the source's cells are (`None`: a column without cells, always empty).
    pub(super) fn dependency_slots(&self) -> Vec<AddedDependency> {
        self.schema
            .dependencies
            .iter()
            .map(|d| AddedDependency {
                target: d.target_column_id.clone(),
                target_slot: self.slots.get(&d.target_column_id).copied(),
                source_slot: self.slots.get(&d.source_column_id).copied(),
            })
            .collect()
    }

    /// Adds an add's records: their rows and cells go in together (`insert_many_with`: each
    /// column written once for all of them, no empty cell written over), then each record's
    /// flags, formulas, dependency statuses and history (`finish_added`).
    pub(super) fn add_records(&mut self, time_ms: i64, user: &str, records: &[RecordWrite]) {
        let dependencies = self.dependency_slots();
        // What each cell's column id resolves to (slot and schema position), remembered by the
        // cell's place for the next records.
        let mut columns: CellMemo<(Option<ColumnSlot>, Option<usize>)> = CellMemo::default();
        // The places and values of all records' cells in two vectors; record `i`'s lie between
        // `bounds[i]` and `bounds[i + 1]` (place, value): two allocations for the add, not two
        // per record.
        let cells: usize = records.iter().map(|r| r.cells.len()).sum();
        let (mut places, mut values) = (Vec::with_capacity(cells), Vec::with_capacity(cells));
        let mut bounds = Vec::with_capacity(records.len() + 1);
        for record in records {
            let first_place = places.len();
            bounds.push((first_place, values.len()));
            places.extend(record.cells.iter().enumerate().map(|(place, cell)| {
                columns.get(place, &cell.column_id, |id| {
                    (self.slots.get(id).copied(), self.schema.column_position(id))
                })
            }));
            values.extend(
                record
                    .cells
                    .iter()
                    .zip(&places[first_place..])
                    .filter_map(|(cell, &(slot, _))| Some((slot?, cell.value.as_ref()?))),
            );
        }
        bounds.push((places.len(), values.len()));
        let added: Vec<NewRecord<'_>> = records
            .iter()
            .zip(bounds.windows(2))
            .map(|(record, b)| NewRecord {
                id: &record.id,
                path: &record.path,
                values: &values[b[0].1..b[1].1],
            })
            .collect();
        let first = self.store.insert_many_with(&added, time_ms, user).get();
        drop(added);
        drop(values);
        for (i, (record, b)) in records.iter().zip(bounds.windows(2)).enumerate() {
            let row = RowId::from_raw(first + i as u32);
            let places = &places[b[0].0..b[1].0];
            self.finish_added(row, time_ms, user, record, places, &dependencies);
        }
    }

    /// What an added record's row needs once its cells are in: the flags its cells set, its
    /// formulas, its dependency statuses and its creation history (pending when it can be).
    /// `places` are its cells' slots and schema positions.
    fn finish_added(
        &mut self,
        row: RowId,
        time_ms: i64,
        user: &str,
        record: &RecordWrite,
        places: &[(Option<ColumnSlot>, Option<usize>)],
        dependencies: &[AddedDependency],
    ) {
        // A new row's flags are clear: only cells that set one are looked at.
        for (cell, &(slot, _)) in record.cells.iter().zip(places) {
            let sets_flags =
                record.mark_mt || cell.source_status.is_some() || cell.dependency_status.is_some();
            if let Some(slot) = slot.filter(|_| sets_flags) {
                self.write_flags(row, slot, cell, record.mark_mt);
            }
        }
        self.compute_formulas(row, None);
        let explicit = record.cells.iter().any(|c| c.dependency_status.is_some());
        for dependency in dependencies {
            let Some(target_slot) = dependency.target_slot else { continue };
            if explicit && explicit_dependency_status(&record.cells, &dependency.target).is_some() {
                continue;
            }
            let empty = |slot: Option<ColumnSlot>| {
                slot.is_none_or(|slot| empty_cell(self.store.value_ref(row, slot)))
            };
            let status = initial_status(empty(Some(target_slot)), empty(dependency.source_slot));
            self.store.set_dependency_status(row, target_slot, status);
        }
        match creation_columns(places) {
            // The entry would hold the cells as they are now: written once something changes.
            Some(columns) => self.store.set_history_head(row, pending_creation(columns)),
            None => self.record_history(row, time_ms, user, &record.cells),
        }
    }

    /// Writes `row`'s creation entry if it is pending, from the cells as they are: called
    /// before anything changes the record (an update, a delete) or the schema its pending
    /// head's columns refer to.
    pub(super) fn settle_creation(&mut self, row: RowId) {
        let head = self.store.history_head(row);
        let Some(entry) = pending_creation_columns(&self.schema, &self.slots, head) else {
            return;
        };
        let store = &self.store;
        let cells: Vec<CellRecord<'_>> = entry
            .iter()
            .map(|&(column_id, slot)| CellRecord {
                column_id,
                value: store.value_ref(row, slot),
                statuses: cell_statuses(store, row, slot),
            })
            .collect();
        let meta = (store.modified_time(row), store.modified_by(row), store.path(row));
        let head = self.history.push(NO_ENTRY, store.id(row), meta, &cells);
        self.store.set_history_head(row, head);
    }

    /// Keeps what pending creation entries will hold as it was before `op` changes columns
    /// (record ops and view ops change none): their masks name schema positions, and their cells are read when
    /// written. A new column goes last and changes no other column's cells; a column whose
    /// name or settings change keeps its cells; a deleted column is taken out of the masks
    /// (history reads and exports show only a view's columns, so its cells in those entries
    /// could never be read). Other column and dependency changes write every pending entry
    /// first: a type change converts cells, an id change renames them, a dependency sets
    /// statuses, a deleted source unsets its targets', and a deleted files column's ids stay
    /// held while history names them.
    pub(super) fn keep_pending_creations(&mut self, op: &GridOp) {
        let settle = match op {
            GridOp::CreateColumn { .. }
            | GridOp::AddViewColumn { .. }
            | GridOp::RemoveViewColumn { .. }
            | GridOp::CreateView(_)
            | GridOp::DeleteView { .. }
            | GridOp::RenameView { .. }
            | GridOp::SetPaths { .. }
            | GridOp::AddRecords { .. }
            | GridOp::UpdateRecords { .. }
            | GridOp::DeleteRecords { .. }
            | GridOp::MergeMark { .. } => false,
            GridOp::ReplaceColumn { old_id, column } => {
                self.schema.column(old_id).is_none_or(|before| {
                    before.id != column.id
                        || before.column_type != column.column_type
                        || before.is_language() != column.is_language()
                })
            }
            GridOp::DeleteColumn { id } => {
                let is_source = self.schema.dependencies.iter().any(|d| d.source_column_id == *id);
                let files =
                    self.schema.column(id).is_some_and(|c| c.column_type == ColumnType::Files);
                match self.schema.column_position(id) {
                    Some(at) if !is_source && !files => {
                        self.drop_pending_column(at);
                        false
                    }
                    Some(_) => true,
                    None => false,
                }
            }
            GridOp::CreateDependency(_)
            | GridOp::ReplaceDependency { .. }
            | GridOp::DeleteDependency { .. } => true,
        };
        if settle {
            self.settle_creations();
        }
    }

    /// Takes the column at schema position `at` out of every pending creation's columns, the
    /// columns after it moving down one place (it is being deleted).
    fn drop_pending_column(&mut self, at: usize) {
        if at >= PENDING_COLUMNS {
            return;
        }
        let below = (1u64 << at) - 1;
        let pending: Vec<(RowId, u64)> = self
            .store
            .live_rows()
            .filter_map(|row| Some((row, pending_columns(self.store.history_head(row))?)))
            .collect();
        for (row, columns) in pending {
            let kept =
                ((columns & below) | ((columns >> 1) & !below)) & ((1 << PENDING_COLUMNS) - 1);
            self.store.set_history_head(row, pending_creation(kept));
        }
    }

    /// Writes every pending creation entry (before a schema op that needs it, or an export).
    pub fn settle_creations(&mut self) {
        let pending: Vec<RowId> = self
            .store
            .live_rows()
            .filter(|&row| pending_columns(self.store.history_head(row)).is_some())
            .collect();
        for row in pending {
            self.settle_creation(row);
        }
    }

    /// `row`'s creation entry as it will be written, if it is pending (`settle_creation`).
    pub fn pending_creation(&self, row: RowId) -> Option<HistoryEntry> {
        let head = self.store.history_head(row);
        let columns = pending_creation_columns(&self.schema, &self.slots, head)?;
        let store = &self.store;
        let cells = columns
            .into_iter()
            .map(|(column_id, slot)| HistoryCell {
                column_id: column_id.to_owned(),
                value: store.value_ref(row, slot).to_value(),
                statuses: cell_statuses(store, row, slot),
            })
            .collect();
        Some(HistoryEntry {
            time_ms: store.modified_time(row),
            user: store.modified_by(row).to_owned(),
            path: store.path(row).to_owned(),
            cells,
        })
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
        self.settle_creation(row);
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
                self.settle_creation(row);
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
                Some(CellRecord {
                    column_id: &cell.column_id,
                    value: store.value_ref(row, slot),
                    statuses: cell_statuses(store, row, slot),
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

/// A cell's statuses as a history entry holds them: present for language columns.
fn cell_statuses(
    store: &ColumnStore,
    row: RowId,
    slot: ColumnSlot,
) -> Option<(DependencyStatus, SourceStatus)> {
    store
        .is_localized(slot)
        .then(|| (store.dependency_status(row, slot), store.source_status(row, slot)))
}

/// The columns (id, slot) of a pending creation head's entry, in schema order; `None` when
/// `head` is not pending. Bits naming no stored column (a damaged image) are passed over.
fn pending_creation_columns<'a>(
    schema: &'a Schema,
    slots: &foldhash::HashMap<String, ColumnSlot>,
    head: u64,
) -> Option<Vec<(&'a str, ColumnSlot)>> {
    let columns = pending_columns(head)?;
    let entry = (0..PENDING_COLUMNS)
        .filter(|at| columns & (1 << at) != 0)
        .filter_map(|at| {
            let id = schema.columns.get(at)?.id.as_str();
            Some((id, *slots.get(id)?))
        })
        .collect();
    Some(entry)
}

/// What a write did to a record's cells.
struct WrittenCells<'a> {
    /// The columns whose value changed.
    values: foldhash::HashSet<&'a str>,
    /// Whether any value, status or flag changed.
    any: bool,
}

/// The schema positions of the stored columns an added record's cells name (their slots and
/// positions, `None` for a column without cells), as a pending creation's columns
/// (`history::pending_creation`), when its entry can wait: they name each column once, in
/// schema order, all below `PENDING_COLUMNS`. `None` otherwise (the entry is written at once,
/// cells in the order given).
fn creation_columns(places: &[(Option<ColumnSlot>, Option<usize>)]) -> Option<u64> {
    let mut columns = 0u64;
    let mut next = 0;
    for &(_, position) in places.iter().filter(|(slot, _)| slot.is_some()) {
        let at = position?;
        if at < next || at >= PENDING_COLUMNS {
            return None;
        }
        columns |= 1 << at;
        next = at + 1;
    }
    Some(columns)
}

/// A dependency as an add sets its target's status (`GridState::dependency_slots`).
pub(super) struct AddedDependency {
    target: String,
    target_slot: Option<ColumnSlot>,
    source_slot: Option<ColumnSlot>,
}

fn explicit_dependency_status(cells: &[CellWrite], column: &str) -> Option<DependencyStatus> {
    cells.iter().find(|c| c.column_id == column).and_then(|c| c.dependency_status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::columns::{build_column, ColumnRequest};
    use crate::grid::history::ExportFilter;
    use crate::grid::ops::GridOp;
    use crate::grid::schema::Dependency;
    use crate::grid::store::RecordIdentity;
    use crate::grid::value::CellValue;
    use proptest::prelude::*;

    /// One step of a branch's life, as the property below draws it.
    #[derive(Debug, Clone)]
    enum Step {
        /// Records `ids` added, each writing `columns` (indexes into the column list, in this
        /// order, repeats kept) with value `n`.
        Add {
            ids: Vec<u8>,
            columns: Vec<u8>,
            n: u8,
        },
        Update {
            id: u8,
            columns: Vec<u8>,
            n: u8,
        },
        Delete {
            id: u8,
        },
        /// A column added, one deleted (by its place), one renamed (its name, and its id too
        /// when the flag says so).
        AddColumn,
        DeleteColumn(u8),
        RenameColumn(u8, bool),
        /// A dependency of the target language on the source, made or dropped.
        Dependency(bool),
    }

    fn step() -> impl Strategy<Value = Step> {
        let columns = prop::collection::vec(0u8..5, 0..5);
        prop_oneof![
            4 => (prop::collection::vec(0u8..12, 1..4), columns.clone(), any::<u8>())
                .prop_map(|(ids, columns, n)| Step::Add { ids, columns, n }),
            3 => (0u8..12, columns, any::<u8>())
                .prop_map(|(id, columns, n)| Step::Update { id, columns, n }),
            1 => (0u8..12).prop_map(|id| Step::Delete { id }),
            1 => Just(Step::AddColumn),
            1 => any::<u8>().prop_map(Step::DeleteColumn),
            1 => (any::<u8>(), any::<bool>()).prop_map(|(at, id)| Step::RenameColumn(at, id)),
            1 => any::<bool>().prop_map(Step::Dependency),
        ]
    }

    fn column(id: &str, body: serde_json::Value, schema: &Schema) -> ColumnDef {
        let mut body = body;
        body["id"] = id.into();
        body["name"] = id.into();
        let req: ColumnRequest = serde_json::from_value(body).expect("a valid column");
        build_column(schema, &req).expect("a valid column")
    }

    fn branch() -> GridState {
        let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        for (id, body) in [
            ("en", serde_json::json!({"type":"language","languageCode":"enUS"})),
            (
                "ja",
                serde_json::json!({"type":"language","languageCode":"jaJP","localizationType":"targetLanguage"}),
            ),
            ("n", serde_json::json!({"type":"number"})),
            ("note", serde_json::json!({"type":"singleLine"})),
        ] {
            let column = column(id, body, &state.schema);
            state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
        }
        state
    }

    fn value(column: &ColumnDef, n: u8) -> CellValue {
        match column.id.as_str() {
            "n" => CellValue::Number(f64::from(n)),
            _ if n.is_multiple_of(5) => CellValue::Text(String::new()),
            _ => CellValue::Text(format!("{} {n}", column.id)),
        }
    }

    /// The op of `step` on `state`, if it makes one.
    fn op(state: &GridState, step: &Step, added: &mut u32) -> Option<GridOp> {
        let columns: Vec<&ColumnDef> = state.schema.columns.iter().collect();
        let cells = |picked: &[u8], n: u8| -> Vec<CellWrite> {
            picked
                .iter()
                .filter_map(|&at| columns.get(usize::from(at) % columns.len().max(1)))
                .map(|c| CellWrite {
                    column_id: c.id.as_str().into(),
                    value: Some(value(c, n)),
                    dependency_status: None,
                    source_status: None,
                })
                .collect()
        };
        let record = |id: u8, picked: &[u8], n: u8| RecordWrite {
            id: format!("r{id}"),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells: cells(picked, n),
            mark_mt: n.is_multiple_of(3),
        };
        let time_ms = 1_000 + i64::from(*added);
        Some(match step {
            Step::Add { ids, columns: picked, n } => {
                let fresh: Vec<u8> = ids
                    .iter()
                    .copied()
                    .filter(|id| state.store.find("", &format!("r{id}")).is_none())
                    .collect::<std::collections::BTreeSet<u8>>()
                    .into_iter()
                    .collect();
                if fresh.is_empty() {
                    return None;
                }
                let records = fresh.iter().map(|&id| record(id, picked, *n)).collect();
                GridOp::AddRecords { time_ms, user: format!("u{n}"), records }
            }
            Step::Update { id, columns: picked, n } => {
                state.store.find("", &format!("r{id}"))?;
                GridOp::UpdateRecords {
                    time_ms,
                    user: "editor".into(),
                    records: vec![record(*id, picked, *n)],
                }
            }
            Step::Delete { id } => {
                GridOp::DeleteRecords { keys: vec![(String::new(), format!("r{id}"))] }
            }
            Step::AddColumn => {
                *added += 1;
                let id = format!("c{added}");
                let body = serde_json::json!({"type":"singleLine"});
                GridOp::CreateColumn {
                    column: column(&id, body, &state.schema),
                    view_id: None,
                    editable: true,
                }
            }
            Step::DeleteColumn(at) => {
                let column = columns.get(usize::from(*at) % columns.len().max(1))?;
                GridOp::DeleteColumn { id: column.id.clone() }
            }
            Step::RenameColumn(at, new_id) => {
                let before = columns.get(usize::from(*at) % columns.len().max(1))?;
                let mut column = (*before).clone();
                column.name = format!("{} {at}", before.name);
                if *new_id {
                    *added += 1;
                    column.id = format!("c{added}");
                }
                GridOp::ReplaceColumn { old_id: before.id.clone(), column }
            }
            Step::Dependency(true) => {
                let language = |id: &str| state.schema.column(id).is_some_and(|c| c.is_language());
                if !state.schema.dependencies.is_empty() || !language("en") || !language("ja") {
                    return None;
                }
                GridOp::CreateDependency(Dependency {
                    id: "dep".into(),
                    source_column_id: "en".into(),
                    target_column_id: "ja".into(),
                })
            }
            Step::Dependency(false) => {
                state.schema.dependencies.first()?;
                GridOp::DeleteDependency { id: "dep".into() }
            }
        })
    }

    /// Every live record's history as a reader sees it (cells of the schema's columns),
    /// newest first.
    fn histories(state: &GridState) -> Vec<(String, Vec<HistoryEntry>)> {
        let mut all: Vec<(String, Vec<HistoryEntry>)> = state
            .store
            .live_rows()
            .map(|row| {
                let entries = match state.pending_creation(row) {
                    Some(created) => vec![created],
                    None => {
                        let head = state.store.history_head(row);
                        state.history.page_where(head, (0, usize::MAX), false, |_| true).0
                    }
                };
                let entries = entries
                    .into_iter()
                    .map(|mut entry| {
                        entry.cells.retain(|c| state.schema.column(&c.column_id).is_some());
                        entry
                    })
                    .collect();
                (state.store.id(row).to_owned(), entries)
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// A branch whose creation entries wait reads the same history, and exports the same
        /// rows, as one that writes each at once.
        #[test]
        fn waiting_creation_entries_read_as_written_ones(
            steps in prop::collection::vec(step(), 1..30)
        ) {
            let (mut deferred, mut eager) = (branch(), branch());
            let mut added = 0;
            for step in &steps {
                let mut at_once = added;
                let Some(op) = op(&deferred, step, &mut added) else { continue };
                prop_assert!(op_matches(&eager, step, &mut at_once, &op));
                deferred.apply(&op);
                eager.apply(&op);
                eager.settle_creations();
                prop_assert_eq!(histories(&deferred), histories(&eager));
            }
            let columns: Vec<String> =
                deferred.schema.columns.iter().map(|c| c.id.clone()).collect();
            let filter = ExportFilter {
                from_ms: i64::MIN,
                to_ms: i64::MAX,
                columns: &columns,
                users: None,
                max_rows: usize::MAX,
            };
            let heads = |s: &GridState| -> Vec<u64> {
                s.store.live_rows().map(|r| s.store.history_head(r)).collect()
            };
            deferred.settle_creations();
            let mut exported =
                deferred.history.export_rows(&heads(&deferred), &filter).expect("unbounded");
            let mut expected =
                eager.history.export_rows(&heads(&eager), &filter).expect("unbounded");
            let key = |r: &crate::grid::history::ExportRow| {
                (r.time_ms, r.record_id.clone(), r.column_id.clone(), format!("{:?}", r.value))
            };
            exported.sort_by_key(key);
            expected.sort_by_key(key);
            prop_assert_eq!(exported, expected);
        }
    }

    /// Both branches make the same op from a step (they hold the same records and schema).
    fn op_matches(eager: &GridState, step: &Step, added: &mut u32, made: &GridOp) -> bool {
        op(eager, step, added).is_some_and(|op| format!("{op:?}") == format!("{made:?}"))
    }

    #[test]
    fn an_add_in_schema_order_waits_and_one_out_of_order_is_written_at_once() {
        let mut state = branch();
        let cell = |c: &str| CellWrite {
            column_id: c.into(),
            value: Some(CellValue::Text("x".into())),
            dependency_status: None,
            source_status: None,
        };
        let record = |id: &str, cells: Vec<CellWrite>| RecordWrite {
            id: id.into(),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells,
            mark_mt: false,
        };
        state.apply(&GridOp::AddRecords {
            time_ms: 5,
            user: "ann".into(),
            records: vec![
                record("ordered", vec![cell("en"), cell("note")]),
                record("reversed", vec![cell("note"), cell("en")]),
                record("twice", vec![cell("en"), cell("en")]),
            ],
        });
        assert_eq!(state.history.len(), 2, "only the out-of-order adds wrote entries");
        let row = state.store.find("", "ordered").expect("added");
        let created = state.pending_creation(row).expect("waits");
        let columns: Vec<&str> = created.cells.iter().map(|c| c.column_id.as_str()).collect();
        assert_eq!(
            (created.time_ms, created.user.as_str(), columns),
            (5, "ann", vec!["en", "note"])
        );
        state.apply(&GridOp::DeleteRecords { keys: vec![(String::new(), "ordered".into())] });
        assert_eq!(state.history.len(), 3, "a delete writes the waiting entry first");
        assert_eq!(state.history.retired().count(), 1);
    }
}
