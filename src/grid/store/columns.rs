//! A store's columns: adding, building, installing and dropping them, and what kind each is.

use super::column::Column;
use super::{BuiltColumn, ColumnSlot, ColumnStore, LoadCell};
use crate::grid::damage::LoadResult;
use crate::grid::value::StorageKind;

impl ColumnStore {
    /// Adds a column; every existing row gets an empty cell with version 0.
    pub fn add_column(&mut self, kind: StorageKind, localized: bool) -> ColumnSlot {
        let slot = u32::try_from(self.columns.len()).expect("fewer than 2^32 columns ever added");
        self.columns.push(Some(Column::new(kind, localized, self.ids.len())));
        ColumnSlot(slot)
    }

    /// A column's cells built apart from any store (image loading, on several threads at once):
    /// see `install_column`.
    pub fn build_column<'a>(
        kind: StorageKind,
        localized: bool,
        rows: usize,
        cell: impl FnMut(usize) -> LoadResult<(LoadCell<'a>, u32, u8)>,
    ) -> LoadResult<BuiltColumn> {
        Column::build(kind, localized, rows, cell).map(BuiltColumn)
    }

    /// Puts a built column in `slot` in place of its cells; it must have the kind, the
    /// statuses and one cell per row of the slot's column.
    pub fn install_column(&mut self, slot: ColumnSlot, built: BuiltColumn) -> LoadResult<()> {
        let rows = self.ids.len();
        let column = self.column_mut(slot);
        let fits = built.0.kind() == column.kind()
            && built.0.is_localized() == column.is_localized()
            && built.0.len() == rows;
        if !fits {
            return Err(format!("a built column does not fit slot {}", slot.0).into());
        }
        *column = built.0;
        Ok(())
    }

    /// Whether every column has a cell per row (after `insert_without_cells` and
    /// `install_column`, every column must have been installed).
    pub fn columns_complete(&self) -> bool {
        self.columns.iter().flatten().all(|c| c.len() == self.ids.len())
    }

    /// Drops a column and frees its cells. The slot is never handed out again.
    pub fn drop_column(&mut self, slot: ColumnSlot) {
        if let Some(column) = self.columns.get_mut(slot.0 as usize) {
            *column = None;
        }
    }

    /// Makes a column keep statuses (all unset) or stop keeping them (statuses dropped).
    pub fn set_localized(&mut self, slot: ColumnSlot, localized: bool) {
        self.column_mut(slot).set_localized(localized);
    }

    /// The storage kind of a column.
    pub fn kind(&self, slot: ColumnSlot) -> StorageKind {
        self.column(slot).kind()
    }

    /// True when the column keeps dependency/source statuses and the isMT flag.
    pub fn is_localized(&self, slot: ColumnSlot) -> bool {
        self.column(slot).is_localized()
    }

    pub(super) fn column(&self, slot: ColumnSlot) -> &Column {
        let column = self.columns.get(slot.0 as usize).and_then(Option::as_ref);
        column.expect("column slots come from add_column and are not used after drop_column")
    }

    pub(super) fn column_mut(&mut self, slot: ColumnSlot) -> &mut Column {
        let column = self.columns.get_mut(slot.0 as usize).and_then(Option::as_mut);
        column.expect("column slots come from add_column and are not used after drop_column")
    }
}
