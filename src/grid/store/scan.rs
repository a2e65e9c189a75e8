//! Whole-column scans into row sets, and the change journal that query indexes follow.
//!
//! Owns `RowBits` (building a `RoaringBitmap` from ascending rows through a 64K-row bit window,
//! which is several times cheaper than inserting rows one by one) and `Changes` (which rows and
//! cells changed since the query engine last looked). Scans visit physical rows chunk by chunk
//! with one kind dispatch per chunk; callers intersect with the live rows (the store's scan
//! methods do). Nothing here knows about operators or indexes.

use roaring::RoaringBitmap;

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
