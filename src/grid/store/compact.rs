//! Compaction (dropping tombstoned rows, renumbering the rest) and what a store's memory holds.

use super::column::Column;
use super::index::Interner;
use super::runs::ChunkedRuns;
use super::{ColumnSlot, ColumnStore};

/// Compaction runs (in `maybe_compact`) when more than 1/`COMPACT_FRACTION` of the physical rows
/// are tombstones and there are more than `COMPACT_MIN_DEAD` of them.
const COMPACT_FRACTION: u64 = 4;
const COMPACT_MIN_DEAD: u64 = 1024;

impl ColumnStore {
    /// Number of tombstoned rows awaiting compaction.
    pub fn tombstones(&self) -> usize {
        self.ids.len() - self.len()
    }

    /// Compacts when tombstones exceed a quarter of the rows and 1024; true when it did.
    /// The grid actor calls this at the end of each write message, once it no longer holds
    /// `RowId`s (compaction renumbers rows, so it never runs inside `delete`).
    pub fn maybe_compact(&mut self) -> bool {
        let dead = self.tombstones() as u64;
        let due = dead > COMPACT_MIN_DEAD && dead * COMPACT_FRACTION > self.ids.len() as u64;
        if due {
            self.compact();
        }
        due
    }

    /// Drops tombstoned rows and string garbage, keeping insertion order. Invalidates every
    /// `RowId`; live rows are renumbered 0..len in order.
    pub fn compact(&mut self) {
        self.epoch += 1;
        let live = std::mem::take(&mut self.live);
        let mut new_row = vec![u32::MAX; self.ids.len()];
        for (rank, row) in live.iter().enumerate() {
            new_row[row as usize] = u32::try_from(rank).expect("ranks are below the row count");
        }
        self.ids.retain_rows(&live);
        self.times.retain_rows(&live);
        self.editors.retain_rows(&live);
        self.paths.retain_rows(&live);
        self.created.retain_rows(&live);
        self.moved.retain_rows(&live);
        self.history.retain_rows(&live);
        for column in self.columns.iter_mut().flatten() {
            column.retain_rows(&live);
        }
        self.by_key.remap(|row| new_row[row as usize]);
        let rows = u32::try_from(self.ids.len()).expect("row count fits u32");
        self.live.insert_range(0..rows);
        self.path_names = reintern(&mut self.paths, &self.path_names);
        self.user_names = reintern(&mut self.editors, &self.user_names);
    }

    /// Approximate bytes held on the heap: vector capacities, arenas, maps and bitmaps.
    pub fn heap_bytes(&self) -> usize {
        self.heap_parts().total()
    }

    /// Heap bytes of one column's cells (values, versions, statuses); 0 for a dropped slot.
    pub fn column_heap_bytes(&self, slot: ColumnSlot) -> usize {
        self.columns.get(slot.0 as usize).and_then(Option::as_ref).map_or(0, Column::heap_bytes)
    }

    /// `heap_bytes` by part.
    pub fn heap_parts(&self) -> StoreBytes {
        let cells: usize = self.columns.iter().flatten().map(Column::heap_bytes).sum::<usize>()
            + self.columns.capacity() * std::mem::size_of::<Option<Column>>();
        let records = self.ids.heap_bytes()
            + self.paths.heap_bytes()
            + self.path_names.heap_bytes()
            + self.times.heap_bytes()
            + self.editors.heap_bytes()
            + self.user_names.heap_bytes()
            + self.created.heap_bytes()
            + self.moved.heap_bytes()
            + self.history.heap_bytes()
            + self.live.serialized_size()
            + self.scratch.capacity();
        let journal = (self.changes.cells.capacity() * 8) + self.changes.rows.capacity() * 4;
        StoreBytes { cells, records, keys: self.by_key.heap_bytes(), journal }
    }
}

/// Heap bytes of a store by part (`ColumnStore::heap_parts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreBytes {
    /// Cells of every column: values, versions, statuses.
    pub cells: usize,
    /// Per-record data: ids, paths, times, editors, stamps, history heads, liveness.
    pub records: usize,
    /// The key -> row hash index.
    pub keys: usize,
    /// The change journal the query indexes follow.
    pub journal: usize,
}

impl StoreBytes {
    /// Every part together (`ColumnStore::heap_bytes`).
    pub fn total(&self) -> usize {
        self.cells + self.records + self.keys + self.journal
    }
}

/// Rebuilds an interner with only the names `numbers` still uses, renumbering `numbers`.
fn reintern(numbers: &mut ChunkedRuns<u32>, names: &Interner) -> Interner {
    let mut kept = Interner::default();
    let mut renumbered = vec![u32::MAX; names.len()];
    numbers.update_each(|old| {
        let new = &mut renumbered[old as usize];
        if *new == u32::MAX {
            *new = kept.intern(names.name(old));
        }
        *new
    });
    kept
}
