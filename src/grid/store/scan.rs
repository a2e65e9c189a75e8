//! Whole-column scans into row sets, and the change journal that query indexes follow.
//!
//! Owns `RowBits` (building a `RoaringBitmap` from ascending rows through a 64K-row bit window,
//! which is several times cheaper than inserting rows one by one) and `Changes` (which rows and
//! cells changed since the query engine last looked). Scans visit physical rows chunk by chunk
//! with one kind dispatch per chunk; callers intersect with the live rows (the store's scan
//! methods do). Nothing here knows about operators or indexes.

use roaring::RoaringBitmap;

use super::chunked::CHUNK_ROWS;
use super::column;
use super::index::Interner;
use super::runs::ChunkedRuns;
use super::{CellRef, ColumnSlot, ColumnStore, TextArena};
use crate::grid::value::{DependencyStatus, SourceStatus};

/// Rows per bit window: one roaring container.
const WINDOW_BITS: u32 = 16;
const WINDOW_ROWS: usize = 1 << WINDOW_BITS;

/// Builds a row set from rows given in ascending order.
pub struct RowBits {
    words: Vec<u64>,
    base: u32,
    any: bool,
    out: RoaringBitmap,
}

impl Default for RowBits {
    fn default() -> Self {
        RowBits { words: vec![0; WINDOW_ROWS / 64], base: 0, any: false, out: RoaringBitmap::new() }
    }
}

impl RowBits {
    /// Adds `row`; rows must come in ascending order.
    #[inline]
    pub fn insert(&mut self, row: u32) {
        let base = row & !((WINDOW_ROWS as u32) - 1);
        if base != self.base {
            self.flush();
            self.base = base;
        }
        let at = (row - base) as usize;
        self.words[at / 64] |= 1 << (at % 64);
        self.any = true;
    }

    fn flush(&mut self) {
        if !self.any {
            return;
        }
        let bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.out |= RoaringBitmap::from_lsb0_bytes(self.base, &bytes);
        self.words.iter_mut().for_each(|w| *w = 0);
        self.any = false;
    }

    /// The row set.
    pub fn finish(mut self) -> RoaringBitmap {
        self.flush();
        self.out
    }
}

/// Rows and cells changed since the journal was last taken (see `ColumnStore::take_changes`).
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// `(row, column slot)` of cells whose value changed.
    pub cells: Vec<(u32, u32)>,
    /// Rows added, deleted, renamed, moved or touched (metadata changed).
    pub rows: Vec<u32>,
    /// True when more changed than the journal keeps: every index must be rebuilt.
    pub overflowed: bool,
}

impl Changes {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty() && self.rows.is_empty() && !self.overflowed
    }

    /// Records a changed cell; overflows past `limit` entries.
    pub(super) fn note_cell(&mut self, row: u32, slot: u32, limit: usize) {
        if !self.overflowed {
            self.cells.push((row, slot));
            self.check(limit);
        }
    }

    /// Records a row whose existence or metadata changed; overflows past `limit` entries.
    pub(super) fn note_row(&mut self, row: u32, limit: usize) {
        if !self.overflowed {
            self.rows.push(row);
            self.check(limit);
        }
    }

    fn check(&mut self, limit: usize) {
        if self.cells.len() + self.rows.len() > limit {
            self.cells = Vec::new();
            self.rows = Vec::new();
            self.overflowed = true;
        }
    }
}

impl ColumnStore {
    /// True while `slot` names a column (it was added and not dropped).
    pub fn has_column(&self, slot: ColumnSlot) -> bool {
        self.columns.get(slot.0 as usize).is_some_and(Option::is_some)
    }

    /// Rows per storage chunk: chunk `i` holds rows `i * chunk_rows() ..`.
    pub const fn chunk_rows() -> usize {
        CHUNK_ROWS
    }

    /// The cells of one storage chunk of a column, in row order.
    pub fn chunk_cells(
        &self,
        slot: ColumnSlot,
        chunk: usize,
    ) -> impl Iterator<Item = CellRef<'_>> + '_ {
        self.column(slot).chunk_cells(chunk)
    }

    /// Chunk `chunk` of a text column as stored (`None` for other kinds): searches run over its
    /// arena instead of a copy of its text.
    pub fn text_arena(&self, slot: ColumnSlot, chunk: usize) -> Option<TextArena<'_>> {
        self.column(slot).chunk_text(chunk).map(|cells| TextArena { cells })
    }

    /// The live rows whose cell satisfies `keep`.
    pub fn scan(&self, slot: ColumnSlot, keep: impl FnMut(CellRef<'_>) -> bool) -> RoaringBitmap {
        self.column(slot).scan(keep) & &self.live
    }

    /// The live rows of a number column whose non-empty value satisfies `keep`. Panics on a
    /// column of another kind.
    pub fn scan_numbers(&self, slot: ColumnSlot, keep: impl FnMut(f64) -> bool) -> RoaringBitmap {
        self.column(slot).scan_numbers(keep) & &self.live
    }

    /// The live rows of a boolean column whose non-empty value satisfies `keep`. Panics on a
    /// column of another kind.
    pub fn scan_booleans(&self, slot: ColumnSlot, keep: impl FnMut(bool) -> bool) -> RoaringBitmap {
        self.column(slot).scan_booleans(keep) & &self.live
    }

    /// The live rows of a datetime column whose non-empty value satisfies `keep`. Panics on a
    /// column of another kind.
    pub fn scan_datetimes(&self, slot: ColumnSlot, keep: impl FnMut(i64) -> bool) -> RoaringBitmap {
        self.column(slot).scan_datetimes(keep) & &self.live
    }

    /// The live rows whose cell is empty (absent, `""` or an empty list).
    pub fn scan_empty(&self, slot: ColumnSlot) -> RoaringBitmap {
        self.column(slot).scan_empty() & &self.live
    }

    /// The live rows whose dependency and source statuses satisfy `keep` (none in a column
    /// that is not localized).
    pub fn scan_statuses(
        &self,
        slot: ColumnSlot,
        mut keep: impl FnMut(DependencyStatus, SourceStatus) -> bool,
    ) -> RoaringBitmap {
        let mut table = [false; 256];
        for (byte, entry) in table.iter_mut().enumerate() {
            let byte = byte as u8;
            *entry = keep(
                DependencyStatus::from_u8(byte & column::DEPENDENCY_MASK),
                SourceStatus::from_u8((byte & column::SOURCE_MASK) >> column::SOURCE_SHIFT),
            );
        }
        self.column(slot).scan_status(|byte| table[byte as usize]) & &self.live
    }

    /// The live rows whose cell of `slot` changed after clock `since`.
    pub fn scan_changed_since(&self, slot: ColumnSlot, since: u32) -> RoaringBitmap {
        self.column(slot).scan_changed_since(since) & &self.live
    }

    /// The live rows inserted or moved (id or path changed) after clock `since`.
    pub fn scan_moved_since(&self, since: u32) -> RoaringBitmap {
        self.moved.rows_where(|stamp| stamp > since) & &self.live
    }

    /// The live rows whose record id satisfies `keep`.
    pub fn scan_ids(&self, mut keep: impl FnMut(&str) -> bool) -> RoaringBitmap {
        let mut bits = RowBits::default();
        for row in 0..self.ids.len() {
            if keep(self.ids.get(row).unwrap_or_default()) {
                bits.insert(row as u32);
            }
        }
        bits.finish() & &self.live
    }

    /// The live rows whose path satisfies `keep` (called once per distinct path).
    pub fn scan_paths(&self, keep: impl FnMut(&str) -> bool) -> RoaringBitmap {
        scan_interned(&self.paths, &self.path_names, keep) & &self.live
    }

    /// The live rows whose last editor satisfies `keep` (called once per distinct name).
    pub fn scan_editors(&self, keep: impl FnMut(&str) -> bool) -> RoaringBitmap {
        scan_interned(&self.editors, &self.user_names, keep) & &self.live
    }

    /// The live rows whose last modified time satisfies `keep`.
    pub fn scan_times(&self, mut keep: impl FnMut(i64) -> bool) -> RoaringBitmap {
        let mut bits = RowBits::default();
        for (row, time) in self.times.values().enumerate() {
            if keep(time) {
                bits.insert(row as u32);
            }
        }
        bits.finish() & &self.live
    }
}

impl ColumnStore {
    /// Starts or stops journaling changes; either way the journal starts empty.
    pub fn set_tracking(&mut self, on: bool) {
        self.tracking = on;
        self.changes = Changes::default();
    }

    /// Whether changes are journaled.
    pub fn is_tracking(&self) -> bool {
        self.tracking
    }

    /// The changes since the last call (or since tracking started), leaving the journal empty.
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// Bumped by every compaction, which renumbers rows: indexes of an older epoch are stale.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Journal entries kept before it overflows (indexes are then rebuilt rather than patched).
    pub(super) fn journal_limit(&self) -> usize {
        (self.ids.len() / 4).max(65_536)
    }

    pub(super) fn note_row(&mut self, row: u32) {
        if self.tracking {
            let limit = self.journal_limit();
            self.changes.note_row(row, limit);
        }
    }
}

/// The physical rows whose interned name satisfies `keep`, deciding once per name.
fn scan_interned(
    numbers: &ChunkedRuns<u32>,
    names: &Interner,
    mut keep: impl FnMut(&str) -> bool,
) -> RoaringBitmap {
    let table: Vec<bool> = (0..names.len()).map(|n| keep(names.name(n as u32))).collect();
    let mut bits = RowBits::default();
    for (row, number) in numbers.values().enumerate() {
        if table[number as usize] {
            bits.insert(row as u32);
        }
    }
    bits.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_bits_match_inserted_rows_across_windows() {
        let rows = [0u32, 1, 63, 64, 65_535, 65_536, 200_000, 200_001, 4_000_000];
        let mut bits = RowBits::default();
        rows.iter().for_each(|&r| bits.insert(r));
        let set = bits.finish();
        assert_eq!(set.iter().collect::<Vec<_>>(), rows);
        assert!(RowBits::default().finish().is_empty());
    }

    #[test]
    fn journal_overflows_past_its_limit() {
        let mut changes = Changes::default();
        for row in 0..10 {
            changes.note_row(row, 8);
        }
        assert!(changes.overflowed);
        assert!(changes.rows.is_empty());
        changes.note_cell(1, 1, 8);
        assert!(changes.cells.is_empty());
    }
}
