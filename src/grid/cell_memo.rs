//! `CellMemo`: what a column id resolved to, remembered by the cell's place in its record.
//!
//! The records of one write nearly always list the same columns in the same order, so the
//! cell at place `j` of the next record names the column the cell at place `j` of this one
//! named. A bulk add of 1000 records of 12 cells looked every column id up in two or three
//! hash maps for each of its 12,000 cells; with the memo it compares the id with the one
//! remembered (a few bytes) and looks it up only when it differs.

use compact_str::CompactString;

/// Places remembered; a cell past them is looked up each time. Bounds what a record with
/// thousands of cells makes the memo hold.
const PLACES: usize = 256;

/// What `resolve` gave for the column id last seen at each place of a record.
pub struct CellMemo<T> {
    places: Vec<Option<(CompactString, T)>>,
}

impl<T> Default for CellMemo<T> {
    fn default() -> Self {
        CellMemo { places: Vec::new() }
    }
}

impl<T: Copy> CellMemo<T> {
    /// What `resolve(id)` gives for the cell at `place` naming column `id`: remembered when
    /// the cell at that place of an earlier record named the same id. `resolve` must give the
    /// same answer for the same id for as long as the memo is used.
    #[inline]
    pub fn get(&mut self, place: usize, id: &str, resolve: impl FnOnce(&str) -> T) -> T {
        if let Some(Some((known, value))) = self.places.get(place) {
            if known.as_str() == id {
                return *value;
            }
        }
        let value = resolve(id);
        if place < PLACES {
            if self.places.len() <= place {
                self.places.resize_with(place + 1, || None);
            }
            self.places[place] = Some((CompactString::from(id), value));
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn an_id_is_resolved_again_only_when_its_place_names_another() {
        let calls = Cell::new(0);
        let resolve = |id: &str| {
            calls.set(calls.get() + 1);
            id.len()
        };
        let mut memo = CellMemo::default();
        assert_eq!(memo.get(0, "a", resolve), 1);
        assert_eq!(memo.get(1, "bbb", resolve), 3);
        assert_eq!(memo.get(0, "a", resolve), 1);
        assert_eq!(memo.get(1, "bbb", resolve), 3);
        assert_eq!(calls.get(), 2);
        assert_eq!(memo.get(1, "cc", resolve), 2);
        assert_eq!(memo.get(0, "cc", resolve), 2);
        assert_eq!(calls.get(), 4);
        // Places past the bound are resolved each time and never held.
        assert_eq!(memo.get(PLACES, "dddd", resolve), 4);
        assert_eq!(memo.get(PLACES, "dddd", resolve), 4);
        assert_eq!(calls.get(), 6);
        assert_eq!(memo.places.len(), 2);
    }
}
