//! A column's whole-column scans into row sets (physical rows; the store intersects them with
//! the live rows): one kind dispatch per chunk, rows added in order through `RowBits`.

use roaring::RoaringBitmap;

use super::super::scan::RowBits;
use super::{
    insert_where, other_kind, CellRef, Cells, Column, BOOLEAN_EMPTY, DATETIME_EMPTY, NUMBER_EMPTY,
};

impl Column {
    /// The physical rows (live or not) whose cell satisfies `keep`, chunk by chunk.
    pub(in crate::grid::store) fn scan(
        &self,
        mut keep: impl FnMut(CellRef<'_>) -> bool,
    ) -> RoaringBitmap {
        let mut bits = RowBits::default();
        let mut row = 0u32;
        for chunk in self.chunks.iter_chunks() {
            for at in 0..chunk.versions.len() {
                if keep(chunk.cells.get(at)) {
                    bits.insert(row);
                }
                row += 1;
            }
        }
        bits.finish()
    }

    /// The physical rows (live or not) of a number column whose non-empty value satisfies `keep`.
    pub(in crate::grid::store) fn scan_numbers(
        &self,
        mut keep: impl FnMut(f64) -> bool,
    ) -> RoaringBitmap {
        let mut bits = RowBits::default();
        let mut row = 0u32;
        for chunk in self.chunks.iter_chunks() {
            let Cells::Number(cells) = &*chunk.cells else { other_kind() };
            for (at, &stored) in cells.iter().enumerate() {
                if stored != NUMBER_EMPTY && keep(f64::from_bits(stored)) {
                    bits.insert(row + at as u32);
                }
            }
            row += cells.len() as u32;
        }
        bits.finish()
    }

    /// The physical rows (live or not) of a boolean column whose non-empty value satisfies
    /// `keep`.
    pub(in crate::grid::store) fn scan_booleans(
        &self,
        mut keep: impl FnMut(bool) -> bool,
    ) -> RoaringBitmap {
        let table = [keep(false), keep(true)];
        let mut bits = RowBits::default();
        let mut row = 0u32;
        for chunk in self.chunks.iter_chunks() {
            let Cells::Boolean(cells) = &*chunk.cells else { other_kind() };
            for (at, &stored) in cells.iter().enumerate() {
                if stored != BOOLEAN_EMPTY && table[usize::from(stored & 1)] {
                    bits.insert(row + at as u32);
                }
            }
            row += cells.len() as u32;
        }
        bits.finish()
    }

    /// The physical rows (live or not) of a datetime column whose non-empty value satisfies
    /// `keep`.
    pub(in crate::grid::store) fn scan_datetimes(
        &self,
        mut keep: impl FnMut(i64) -> bool,
    ) -> RoaringBitmap {
        let mut bits = RowBits::default();
        let mut row = 0u32;
        for chunk in self.chunks.iter_chunks() {
            let Cells::Datetime(cells) = &*chunk.cells else { other_kind() };
            for (at, &stored) in cells.iter().enumerate() {
                if stored != DATETIME_EMPTY && keep(stored) {
                    bits.insert(row + at as u32);
                }
            }
            row += cells.len() as u32;
        }
        bits.finish()
    }

    /// The physical rows (live or not) whose cell is empty (absent, `""` or an empty list),
    /// reading only lengths and markers.
    pub(in crate::grid::store) fn scan_empty(&self) -> RoaringBitmap {
        let mut bits = RowBits::default();
        let mut row = 0u32;
        for chunk in self.chunks.iter_chunks() {
            let rows = chunk.versions.len();
            let base = row;
            match &*chunk.cells {
                Cells::Text(cells) | Cells::List(cells) => {
                    insert_where(&mut bits, base, rows, |at| cells.is_blank(at))
                }
                Cells::Number(cells) => {
                    insert_where(&mut bits, base, rows, |at| cells[at] == NUMBER_EMPTY)
                }
                Cells::Boolean(cells) => {
                    insert_where(&mut bits, base, rows, |at| cells[at] == BOOLEAN_EMPTY)
                }
                Cells::Datetime(cells) => {
                    insert_where(&mut bits, base, rows, |at| cells[at] == DATETIME_EMPTY)
                }
            }
            row += rows as u32;
        }
        bits.finish()
    }

    /// The physical rows whose status byte satisfies `keep` (none when not localized).
    pub(in crate::grid::store) fn scan_status(
        &self,
        mut keep: impl FnMut(u8) -> bool,
    ) -> RoaringBitmap {
        let mut bits = RowBits::default();
        let mut row = 0u32;
        for chunk in self.chunks.iter_chunks() {
            if let Some(statuses) = &chunk.status {
                for (at, &status) in statuses.iter().enumerate() {
                    if keep(status) {
                        bits.insert(row + at as u32);
                    }
                }
            }
            row += chunk.versions.len() as u32;
        }
        bits.finish()
    }

    /// The physical rows whose cell changed after clock `since` (version above it).
    pub(in crate::grid::store) fn scan_changed_since(&self, since: u32) -> RoaringBitmap {
        let mut rows = RoaringBitmap::new();
        let mut base = 0u32;
        for chunk in self.chunks.iter_chunks() {
            chunk.versions.insert_after(since, base, &mut rows);
            base += chunk.versions.len() as u32;
        }
        rows
    }
}
