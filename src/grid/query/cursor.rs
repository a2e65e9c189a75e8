//! Cursor paging (`afterRecordId` / `beforeRecordId`): the matching rows right after or right
//! before a record in the listing's order, without walking the listing from its start.
//!
//! The listing's order is total: the sort keys (empty values last), then the row (insertion
//! order); with no keys, the row alone. A cursor is a position in that order, found from the
//! cursor record's current values: on an unsorted listing the rows after it are the matches with
//! a larger row number (a bitmap range; the rows before it by rank and select); on a sorted one
//! the walk starts at the cursor's group in the ordered index of the first key (two binary
//! searches) and skips only the rows of that group that do not come after it. The cursor record
//! need not match the query. A record added, changed or deleted elsewhere between two pages does
//! not move the others: a walk sees every record that exists throughout it exactly once, as long
//! as the writes leave the sort keys of the records walked unchanged.

use std::cmp::Ordering;

use roaring::RoaringBitmap;

use super::engine::{QueryEngine, QueryPage};
use super::filter::{cmp_key, Filter, SortKey};
use super::page::{cmp_rows_by, top_rows};
use crate::grid::store::{ColumnStore, RowId};

/// Which side of the cursor a page is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    After,
    Before,
}

impl QueryEngine {
    /// Up to `limit` matching rows right after (or right before) row `cursor` in the listing's
    /// order, in that order, and the number of matches.
    pub fn run_from(
        &mut self,
        store: &mut ColumnStore,
        filters: &[Filter],
        sort: &[SortKey],
        cursor: RowId,
        direction: Direction,
        limit: usize,
    ) -> QueryPage {
        self.sync(store);
        let page = self.query_from(store, filters, sort, cursor, direction, limit);
        self.resume_tracking(store);
        page
    }

    /// `run_from` over a store the engine is already in step with (see `query`).
    pub fn query_from(
        &mut self,
        store: &ColumnStore,
        filters: &[Filter],
        sort: &[SortKey],
        cursor: RowId,
        direction: Direction,
        limit: usize,
    ) -> QueryPage {
        let matches = if filters.is_empty() { None } else { Some(self.filter(store, filters)) };
        let total = matches.as_ref().map_or(store.len(), |m| m.len() as usize);
        let set = matches.as_ref().unwrap_or_else(|| store.live());
        let rows = match (sort.is_empty(), direction) {
            (true, Direction::After) => set
                .range(cursor.get().saturating_add(1)..)
                .take(limit)
                .map(RowId::from_raw)
                .collect(),
            (true, Direction::Before) => last_before(set, cursor.get(), limit),
            (false, Direction::After) => self.sorted_after(store, set, sort, cursor, limit),
            (false, Direction::Before) => self.sorted_before(store, set, sort, cursor, limit),
        };
        QueryPage { rows, total }
    }

    /// Rows after the cursor on a sorted listing: from the cursor's group of the first key on
    /// (index order, each group ordered by the other keys), then the rows with an empty first
    /// key.
    fn sorted_after(
        &mut self,
        store: &ColumnStore,
        set: &RoaringBitmap,
        sort: &[SortKey],
        cursor: RowId,
        limit: usize,
    ) -> Vec<RowId> {
        let (first, rest) = (sort[0], &sort[1..]);
        let after = |row: u32| cmp_rows_by(store, sort, row, cursor.get()) == Ordering::Greater;
        let cursor_empty = first.target.value(store, cursor).is_empty();
        let Some(index) = self.ordered(store, first) else { return Vec::new() };
        let mut out = Vec::with_capacity(limit.min(set.len() as usize));
        if !cursor_empty {
            let (start, _) = group_span(index, store, first, cursor);
            let walk = GroupWalk { store, set, sort, reverse: false, limit };
            walk.collect(index.iter_from(start), false, after, &mut out);
        }
        let left = limit - out.len();
        if left == 0 {
            return out;
        }
        let mut empties = set - index.members();
        if cursor_empty {
            if rest.is_empty() {
                empties.remove_range(..=cursor.get());
            } else {
                empties = empties.iter().filter(|&row| after(row)).collect();
            }
        }
        if rest.is_empty() {
            out.extend(empties.iter().take(left).map(RowId::from_raw));
        } else {
            out.extend(top_rows(store, empties.iter().collect(), rest, 0, left));
        }
        out
    }

    /// Rows before the cursor on a sorted listing: walked backwards from the end of the
    /// cursor's group (or from the empty first keys before it), then put in order.
    fn sorted_before(
        &mut self,
        store: &ColumnStore,
        set: &RoaringBitmap,
        sort: &[SortKey],
        cursor: RowId,
        limit: usize,
    ) -> Vec<RowId> {
        let (first, rest) = (sort[0], &sort[1..]);
        let before = |row: u32| cmp_rows_by(store, sort, row, cursor.get()) == Ordering::Less;
        let cursor_empty = first.target.value(store, cursor).is_empty();
        let Some(index) = self.ordered(store, first) else { return Vec::new() };
        // Collected last first.
        let mut out: Vec<RowId> = Vec::with_capacity(limit.min(set.len() as usize));
        let end = if cursor_empty {
            let empties = set - index.members();
            let earlier: Vec<RowId> = if rest.is_empty() {
                last_before(&empties, cursor.get(), limit)
            } else {
                let rows: Vec<u32> = empties.iter().filter(|&row| before(row)).collect();
                let skip = rows.len().saturating_sub(limit);
                top_rows(store, rows, rest, skip, limit)
            };
            out.extend(earlier.into_iter().rev());
            index.len()
        } else {
            group_span(index, store, first, cursor).1
        };
        let walk = GroupWalk { store, set, sort, reverse: true, limit };
        walk.collect(index.iter_before(end), cursor_empty, before, &mut out);
        out.reverse();
        out
    }
}

/// A walk of an ordered index of the first sort key, one group of equal first keys at a time,
/// each group ordered by the other keys (backwards when `reverse`).
struct GroupWalk<'a> {
    store: &'a ColumnStore,
    set: &'a RoaringBitmap,
    sort: &'a [SortKey],
    reverse: bool,
    limit: usize,
}

impl GroupWalk<'_> {
    /// Pushes onto `out` the rows of `set` from the first one `reached` accepts on (from the
    /// start when `passed`), until `out` holds `limit` rows.
    fn collect(
        &self,
        rows: impl Iterator<Item = u32>,
        mut passed: bool,
        reached: impl Fn(u32) -> bool,
        out: &mut Vec<RowId>,
    ) {
        let (first, rest) = (self.sort[0], &self.sort[1..]);
        let mut group: Vec<u32> = Vec::new();
        let mut rows = rows.peekable();
        while out.len() < self.limit {
            let Some(row) = rows.next() else { break };
            group.push(row);
            let same_next = rows.peek().is_some_and(|&next| same_key(self.store, first, row, next));
            if same_next && !rest.is_empty() {
                continue;
            }
            if group.len() > 1 {
                group.sort_by(|&a, &b| match self.reverse {
                    false => cmp_rows_by(self.store, rest, a, b),
                    true => cmp_rows_by(self.store, rest, b, a),
                });
            }
            for &row in &group {
                passed = passed || reached(row);
                if passed && self.set.contains(row) && out.len() < self.limit {
                    out.push(RowId::from_raw(row));
                }
            }
            group.clear();
        }
    }
}

/// Whether two rows have the same value of `key`.
fn same_key(store: &ColumnStore, key: SortKey, a: u32, b: u32) -> bool {
    let value = |row: u32| key.target.value(store, RowId::from_raw(row));
    cmp_key(value(a), value(b), key.descending) == Ordering::Equal
}

/// The index positions `[start, end)` of the rows whose first key equals the cursor's.
fn group_span(
    index: &super::index::OrderedIndex,
    store: &ColumnStore,
    key: SortKey,
    cursor: RowId,
) -> (usize, usize) {
    let value = key.target.value(store, cursor);
    index.span(
        store,
        |v| cmp_key(v, value, key.descending) == Ordering::Less,
        |v| cmp_key(v, value, key.descending) != Ordering::Greater,
    )
}

/// The last `limit` rows of a set below `row`, in order (rank and select: no walk).
fn last_before(set: &RoaringBitmap, row: u32, limit: usize) -> Vec<RowId> {
    let below = match row.checked_sub(1) {
        Some(last) => set.rank(last) as usize,
        None => 0,
    };
    let start = below.saturating_sub(limit);
    let Some(first) = u32::try_from(start).ok().and_then(|s| set.select(s)) else {
        return Vec::new();
    };
    set.range(first..row).take(below - start).map(RowId::from_raw).collect()
}
