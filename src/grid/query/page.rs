//! Paging: the rows at `offset..offset + limit` of a query's matches, in insertion order or in
//! sort order.
//!
//! A sorted page either walks the ordered index of the first key (skipping rows that do not
//! match), or, when walking would visit far more rows than match, selects the top
//! `offset + limit` matching rows directly (`top_rows`). Ties on the first key are ordered by
//! the remaining keys group by group, and rows with an empty first key come last.

use std::cmp::Ordering;

use roaring::RoaringBitmap;

use super::engine::QueryEngine;
use super::filter::{cmp_key, SortKey};
use super::index::OrderedIndex;
use crate::grid::store::{ColumnStore, RowId};

impl QueryEngine {
    /// A page of matching rows (every live row when `matches` is `None`; `total` of them) in
    /// sort order.
    pub(super) fn sorted_page(
        &mut self,
        store: &ColumnStore,
        matches: Option<&RoaringBitmap>,
        total: usize,
        sort: &[SortKey],
        offset: usize,
        limit: usize,
    ) -> Vec<RowId> {
        if offset >= total || limit == 0 {
            return Vec::new();
        }
        let wanted = offset.saturating_add(limit).min(total);
        if let Some(matches) = matches {
            // Walking the index visits about wanted * records / total rows; selecting touches
            // every match. Prefer the walk only when it is clearly cheaper.
            let walk = wanted as u128 * store.len() as u128;
            if walk >= 6 * (total as u128) * (total as u128) {
                return top_rows(store, matches.iter().collect(), sort, offset, limit);
            }
        }
        let (first, rest) = (sort[0], &sort[1..]);
        let Some(index) = self.ordered(store, first) else { return Vec::new() };
        // Where the walk starts, how many matching rows it skips, and how many rows with an
        // empty first key are skipped beyond what the walk leaves over.
        let (start, skip_in_walk, skip_empties) = match matches {
            Some(_) => (0, offset, 0),
            None if offset >= index.len() => (index.len(), 0, offset - index.len()),
            None if rest.is_empty() => (offset, 0, 0),
            None => {
                let start = index.group_start(store, offset);
                (start, offset - start, 0)
            }
        };
        let mut page = PageFill::new(skip_in_walk, limit, limit.min(total));
        if start < index.len() {
            let walk = IndexWalk { store, index, matches, first, rest };
            walk.fill(start, &mut page);
            if page.is_full() {
                return page.rows;
            }
        }
        // Empty first keys last, ordered by the remaining keys.
        let live_or_matches = matches.unwrap_or_else(|| store.live());
        let empties = live_or_matches - index.members();
        let skip = skip_empties + page.skip;
        let left = limit - page.rows.len();
        let mut rows = page.rows;
        if rest.is_empty() {
            rows.extend(unsorted_page_of(&empties, skip, left));
        } else {
            rows.extend(top_rows(store, empties.iter().collect(), rest, skip, left));
        }
        rows
    }
}

/// A page being filled in order: the rows still to skip, and the rows taken up to `limit`.
struct PageFill {
    skip: usize,
    limit: usize,
    rows: Vec<RowId>,
}

impl PageFill {
    fn new(skip: usize, limit: usize, capacity: usize) -> Self {
        PageFill { skip, limit, rows: Vec::with_capacity(capacity) }
    }

    /// Takes `row` unless it is still skipping or full.
    #[inline]
    fn offer(&mut self, row: u32) {
        if self.skip > 0 {
            self.skip -= 1;
        } else if self.rows.len() < self.limit {
            self.rows.push(RowId::from_raw(row));
        }
    }

    fn is_full(&self) -> bool {
        self.rows.len() == self.limit
    }
}

/// A walk of the first sort key's ordered index over the rows with a non-empty first key.
struct IndexWalk<'a> {
    store: &'a ColumnStore,
    index: &'a OrderedIndex,
    matches: Option<&'a RoaringBitmap>,
    first: SortKey,
    rest: &'a [SortKey],
}

impl IndexWalk<'_> {
    /// Offers the index's rows from position `start` on, the matching ones only, to `page`
    /// until it is full: in index order, each group of equal first keys ordered by the
    /// remaining keys.
    fn fill(&self, start: usize, page: &mut PageFill) {
        let store = self.store;
        // The walk tests many rows against the matches: a flat bit array answers faster.
        let dense = self.matches.map(|m| DenseRows::new(m, store.rows()));
        let mut group: Vec<u32> = Vec::new();
        let mut group_value: Option<u32> = None;
        for row in self.index.iter_from(start) {
            if dense.as_ref().is_some_and(|d| !d.contains(row)) {
                continue;
            }
            if self.rest.is_empty() {
                page.offer(row);
                if page.is_full() {
                    return;
                }
                continue;
            }
            if !group_value.is_some_and(|g| self.same_first_key(g, row)) {
                self.offer_group(&mut group, page);
                if page.is_full() {
                    return;
                }
                group_value = Some(row);
            }
            group.push(row);
        }
        self.offer_group(&mut group, page);
    }

    fn same_first_key(&self, a: u32, b: u32) -> bool {
        let (store, key) = (self.store, self.first);
        let (a, b) = (
            key.target.value(store, RowId::from_raw(a)),
            key.target.value(store, RowId::from_raw(b)),
        );
        cmp_key(a, b, key.descending) == Ordering::Equal
    }

    /// Offers a group of rows with equal first keys, ordered by the remaining keys, and empties
    /// it.
    fn offer_group(&self, group: &mut Vec<u32>, page: &mut PageFill) {
        if group.len() > 1 {
            group.sort_by(|&a, &b| cmp_rows_by(self.store, self.rest, a, b));
        }
        for &row in group.iter() {
            page.offer(row);
        }
        group.clear();
    }
}

/// A row set as a flat bit array, for many membership tests.
struct DenseRows(Vec<u64>);

impl DenseRows {
    fn new(rows: &RoaringBitmap, len: usize) -> Self {
        let mut words = vec![0u64; len.div_ceil(64)];
        for row in rows {
            words[row as usize / 64] |= 1 << (row % 64);
        }
        DenseRows(words)
    }

    #[inline]
    fn contains(&self, row: u32) -> bool {
        self.0.get(row as usize / 64).is_some_and(|w| w & (1 << (row % 64)) != 0)
    }
}

/// Compares rows by every key, then by row.
pub(super) fn cmp_rows_by(store: &ColumnStore, keys: &[SortKey], a: u32, b: u32) -> Ordering {
    let (ra, rb) = (RowId::from_raw(a), RowId::from_raw(b));
    for key in keys {
        let ord = cmp_key(key.target.value(store, ra), key.target.value(store, rb), key.descending);
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.cmp(&b)
}

/// The rows at `offset..offset + limit` of `rows` in sort order, selecting before sorting.
pub(super) fn top_rows(
    store: &ColumnStore,
    mut rows: Vec<u32>,
    keys: &[SortKey],
    offset: usize,
    limit: usize,
) -> Vec<RowId> {
    let wanted = offset.saturating_add(limit).min(rows.len());
    if wanted == 0 || offset >= rows.len() {
        return Vec::new();
    }
    let cmp = |a: &u32, b: &u32| cmp_rows_by(store, keys, *a, *b);
    if wanted < rows.len() {
        rows.select_nth_unstable_by(wanted - 1, cmp);
        rows.truncate(wanted);
    }
    rows.sort_unstable_by(cmp);
    rows[offset..].iter().map(|&r| RowId::from_raw(r)).collect()
}

/// `limit` rows of a set in row order, skipping `offset`.
fn unsorted_page_of(rows: &RoaringBitmap, offset: usize, limit: usize) -> Vec<RowId> {
    let Some(start) = u32::try_from(offset).ok().and_then(|o| rows.select(o)) else {
        return Vec::new();
    };
    rows.range(start..).take(limit).map(RowId::from_raw).collect()
}

/// A page in insertion order of the matches (or of every record).
pub(super) fn unsorted_page(
    store: &ColumnStore,
    matches: Option<&RoaringBitmap>,
    offset: usize,
    limit: usize,
) -> Vec<RowId> {
    match matches {
        Some(rows) => unsorted_page_of(rows, offset, limit),
        None => store.page(offset, limit).collect(),
    }
}
