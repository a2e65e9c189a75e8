//! `ArenaOrder`: the order in which a text column's values lie in the store's arenas, per
//! storage chunk (no copy of the text), so that `contains` and `regexp` search each arena
//! once and map a match back to its row.
//!
//! A chunk only appended to (most chunks: a load writes them in row order) holds its values
//! in row order, so its order is the rows' own and the store's ends say where each value ends
//! (`TextArena::row_ends`): nothing is kept for it. Only a chunk whose rows were replaced keeps
//! its rows sorted by where their values lie (6 bytes a row).

use std::ops::Range;
use std::sync::Arc;

use regex::Regex;
use roaring::RoaringBitmap;

use super::super::arena_regex::{ArenaRegex, ArenaSearcher, GaveUp};
use super::super::filter::fold_case;
use super::super::fold::ContainsSearch;
use super::{scan_chunks, scan_chunks_with};
use crate::grid::store::{ColumnSlot, ColumnStore, RowBits, RowEnds, TextArena};

/// One storage chunk of an `ArenaOrder`.
enum OrderChunk {
    /// The chunk's arena held its rows' values in row order when built, `rows` of them.
    RowOrder { rows: usize },
    /// A chunk whose rows were replaced: its rows by where their values lie.
    Sorted(SortedRows),
}

impl OrderChunk {
    /// How to walk `arena`'s rows in arena order: by its own ends when it is in row order,
    /// else by its sorted rows. A `RowOrder` chunk whose arena left row order (a refresh comes
    /// before every search and sees that, so only a caller skipping it meets one) is sorted
    /// now, into `rebuilt`.
    fn rows_in_arena_order<'a>(
        &'a self,
        arena: &TextArena<'a>,
        rebuilt: &'a mut Option<SortedRows>,
    ) -> Result<RowEnds<'a>, &'a SortedRows> {
        match (self, arena.row_ends()) {
            (OrderChunk::Sorted(sorted), _) => Err(sorted),
            (OrderChunk::RowOrder { .. }, Some(ends)) => Ok(ends),
            (OrderChunk::RowOrder { .. }, None) => Err(rebuilt.insert(SortedRows::of(arena))),
        }
    }

    /// Rows of the chunk when built.
    fn rows(&self) -> usize {
        match self {
            OrderChunk::RowOrder { rows } => *rows,
            OrderChunk::Sorted(sorted) => sorted.rows,
        }
    }
}

/// The rows of a chunk whose arena is not in row order, sorted by where their values lie.
struct SortedRows {
    /// The rows whose value lies in the arena, by where it lies.
    order: Vec<u16>,
    /// Where each of those values ends in the arena (ascending).
    ends: Vec<u32>,
    /// The rows whose value is held outside the arena (long values).
    outside: Vec<u16>,
    /// Rows of the chunk when built.
    rows: usize,
}

/// The rows of one chunk whose values lie in its arena, in the order they lie there.
trait ArenaRows {
    /// How many.
    fn count(&self) -> usize;
    /// The `k`th row.
    fn row(&self, k: usize) -> u16;
    /// Where the `k`th row's value ends in the arena; never less than the `k - 1`th's.
    fn end(&self, k: usize) -> u32;
    /// Where the `k`th row's value lies in the arena (empty for an empty value).
    fn span(&self, arena: &TextArena<'_>, k: usize) -> Range<usize>;

    /// The first `k'` at or after `k` whose value ends at or past `target`, reading the ends
    /// in order (the prefetcher keeps up; a binary search would miss the cache at each probe).
    fn walk_to(&self, k: usize, target: u32) -> usize;

    /// `walk_to` by halving, for a target that may lie far ahead.
    #[inline]
    fn search_to(&self, k: usize, target: u32) -> usize {
        let (mut low, mut high) = (k, self.count());
        while low < high {
            let middle = low + (high - low) / 2;
            if self.end(middle) < target {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }
}

impl ArenaRows for SortedRows {
    #[inline]
    fn count(&self) -> usize {
        self.order.len()
    }

    #[inline]
    fn row(&self, k: usize) -> u16 {
        self.order[k]
    }

    #[inline]
    fn end(&self, k: usize) -> u32 {
        self.ends[k]
    }

    #[inline]
    fn walk_to(&self, k: usize, target: u32) -> usize {
        k + self.ends[k..].iter().take_while(|&&end| end < target).count()
    }

    #[inline]
    fn span(&self, arena: &TextArena<'_>, k: usize) -> Range<usize> {
        arena.span(usize::from(self.order[k])).unwrap_or(0..0)
    }
}

impl ArenaRows for RowEnds<'_> {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }

    #[inline]
    fn row(&self, k: usize) -> u16 {
        k as u16
    }

    #[inline]
    fn end(&self, k: usize) -> u32 {
        RowEnds::end(self, k)
    }

    #[inline]
    fn walk_to(&self, k: usize, target: u32) -> usize {
        RowEnds::walk_to(self, k, target)
    }

    #[inline]
    fn span(&self, _arena: &TextArena<'_>, k: usize) -> Range<usize> {
        RowEnds::span(self, k)
    }
}

/// Where a text column's values lie in the store's arenas; see the module doc. A clone shares
/// its chunks (a read view's copy costs a pointer per chunk); a refresh replaces the chunks it
/// rebuilds.
#[derive(Clone)]
pub struct ArenaOrder {
    slot: ColumnSlot,
    chunks: Vec<Arc<OrderChunk>>,
    /// Per chunk: false once a write marked it.
    fresh: Vec<bool>,
}

// Rows of a chunk are numbered in `u16`.
const _: () = assert!(ColumnStore::chunk_rows() <= 1 << 16);

impl ArenaOrder {
    /// The order of a text column, filled on the first `refresh`.
    pub fn new(slot: ColumnSlot) -> Self {
        ArenaOrder { slot, chunks: Vec::new(), fresh: Vec::new() }
    }

    /// Marks the chunk of a changed row for rebuilding (a write may move any value of it: the
    /// arena collects its garbage).
    pub fn mark(&mut self, row: u32) {
        if let Some(fresh) = self.fresh.get_mut(row as usize / ColumnStore::chunk_rows()) {
            *fresh = false;
        }
    }

    /// Whether every chunk is up to date with `store` (`refresh` would change nothing); `None`
    /// when the column is not stored as text.
    pub fn is_fresh(&self, store: &ColumnStore) -> Option<bool> {
        let count = store.rows().div_ceil(ColumnStore::chunk_rows());
        let mut fresh = self.chunks.len() == count;
        for i in 0..count {
            let arena = store.text_arena(self.slot, i)?;
            let chunk = self.chunks.get(i).zip(self.fresh.get(i));
            fresh &= chunk.is_some_and(|(chunk, &f)| f && chunk.rows() == arena.rows());
        }
        Some(fresh)
    }

    /// Rebuilds marked or grown chunks; `None` when the column is not stored as text.
    pub fn refresh(&mut self, store: &ColumnStore) -> Option<()> {
        let count = store.rows().div_ceil(ColumnStore::chunk_rows());
        self.chunks.resize_with(count, || Arc::new(OrderChunk::RowOrder { rows: 0 }));
        self.fresh.resize(count, false);
        for (i, (chunk, fresh)) in self.chunks.iter_mut().zip(&mut self.fresh).enumerate() {
            let arena = store.text_arena(self.slot, i)?;
            if *fresh && chunk.rows() == arena.rows() {
                continue;
            }
            *chunk = Arc::new(match arena.row_ends() {
                Some(_) => OrderChunk::RowOrder { rows: arena.rows() },
                None => OrderChunk::Sorted(SortedRows::of(&arena)),
            });
            *fresh = true;
        }
        Some(())
    }

    /// Physical rows whose text matches `regex`: `search` (`Pattern::search`) searches each
    /// arena once, and the row holding the earliest end of a match at or after
    /// the search point is confirmed with `regex`; the search goes on after that row. A row
    /// with a match of its own ends no earlier than that earliest end, so none is skipped.
    /// When the search gives up, the chunk's rows from there on are tested one by one.
    /// Values outside the arenas are tested one by one, and absent or empty ones when `regex`
    /// matches the empty text.
    pub fn regex_rows(
        &self,
        store: &ColumnStore,
        regex: &Regex,
        search: &ArenaRegex,
    ) -> RoaringBitmap {
        let empty_matches = regex.is_match("");
        let scan = |searcher: &mut ArenaSearcher<'_>, i: usize, base: u32, bits: &mut RowBits| {
            let (Some(chunk), Some(arena)) = (self.chunks.get(i), store.text_arena(self.slot, i))
            else {
                return;
            };
            let value = |at: usize| arena.value(at).unwrap_or_default();
            let mut found = |at: u16| bits.insert(base + u32::from(at));
            let mut rebuilt = None;
            let outside: &[u16] = match chunk.rows_in_arena_order(&arena, &mut rebuilt) {
                Ok(ends) => {
                    regex_in_arena(&ends, &arena, searcher, regex, &mut found);
                    &[]
                }
                Err(sorted) => {
                    regex_in_arena(sorted, &arena, searcher, regex, &mut found);
                    &sorted.outside
                }
            };
            for &at in outside {
                if regex.is_match(value(usize::from(at))) {
                    found(at);
                }
            }
            if empty_matches {
                for at in (0..chunk.rows()).filter(|&at| value(at).is_empty()) {
                    found(at as u16);
                }
            }
        };
        scan_chunks_with(self.chunks.len(), || search.searcher(), scan)
    }

    /// Physical rows whose text contains `needle` (folded, not empty), found by `search` in
    /// each arena as stored. A match holds no `\n`, so it lies inside one value or in garbage;
    /// matches come in order, and a cursor over the rows in arena order moves forward to the
    /// first row ending at or past the match's end, which holds the match when it starts no
    /// earlier than that row's value. Such a row is confirmed with `fold_case` unless the match
    /// proves it, and the search goes on after it. Values outside the arenas are tested one by
    /// one.
    pub fn contains_rows(
        &self,
        store: &ColumnStore,
        needle: &str,
        search: &ContainsSearch,
    ) -> RoaringBitmap {
        let holds = |text: &str| fold_case(text).contains(needle);
        scan_chunks(self.chunks.len(), |i, base, bits| {
            let (Some(chunk), Some(arena)) = (self.chunks.get(i), store.text_arena(self.slot, i))
            else {
                return;
            };
            let mut found = |at: u16| bits.insert(base + u32::from(at));
            let mut rebuilt = None;
            let outside: &[u16] = match chunk.rows_in_arena_order(&arena, &mut rebuilt) {
                Ok(ends) => {
                    contains_in_arena(&ends, &arena, search, &holds, &mut found);
                    &[]
                }
                Err(sorted) => {
                    contains_in_arena(sorted, &arena, search, &holds, &mut found);
                    &sorted.outside
                }
            };
            for &at in outside {
                if arena.value(usize::from(at)).is_some_and(holds) {
                    found(at);
                }
            }
        })
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        let bytes = |chunk: &OrderChunk| match chunk {
            OrderChunk::RowOrder { .. } => 0,
            OrderChunk::Sorted(c) => {
                (c.order.capacity() + c.outside.capacity()) * 2 + c.ends.capacity() * 4
            }
        };
        self.chunks.iter().map(|chunk| bytes(chunk)).sum()
    }
}

impl SortedRows {
    /// The rows of `arena` by where their values lie.
    fn of(arena: &TextArena<'_>) -> Self {
        let mut placed: Vec<(u32, u16)> = Vec::with_capacity(arena.rows());
        let mut outside = Vec::new();
        for at in 0..arena.rows() {
            match arena.span(at) {
                Some(span) => placed.push((span.start as u32, at as u16)),
                None if arena.value(at).is_some_and(|v| !v.is_empty()) => {
                    outside.push(at as u16);
                }
                None => {}
            }
        }
        placed.sort_unstable();
        let order: Vec<u16> = placed.iter().map(|&(_, at)| at).collect();
        let ends: Vec<u32> = placed
            .iter()
            .map(|&(_, at)| arena.span(at as usize).map_or(0, |span| span.end as u32))
            .collect();
        outside.shrink_to_fit();
        SortedRows { order, ends, outside, rows: arena.rows() }
    }
}

/// `ArenaOrder::regex_rows` over the rows of one arena, in arena order (`found` gets each row
/// matching).
fn regex_in_arena(
    rows: &impl ArenaRows,
    arena: &TextArena<'_>,
    searcher: &mut ArenaSearcher<'_>,
    regex: &Regex,
    found: &mut impl FnMut(u16),
) {
    let row_text = |k: usize| arena.value(usize::from(rows.row(k))).unwrap_or_default();
    // `next`: the arena offset the search goes on from, across the arena's parts.
    let (mut next, mut k) = (0usize, 0usize);
    for (start, text) in arena.parts() {
        let mut from = next.saturating_sub(start);
        while from < text.len() && k < rows.count() {
            let end = match searcher.shortest_end(text, from) {
                Ok(Some(end)) => end,
                Ok(None) => break,
                Err(GaveUp) => {
                    (k..rows.count()).filter(|&k| regex.is_match(row_text(k))).for_each(|k| {
                        found(rows.row(k));
                    });
                    return;
                }
            };
            // The first row (in arena order) ending at or past the match's end; a match of no
            // bytes at `from` names the row starting there.
            let target = start + end.max(from + 1);
            k = rows.search_to(k, target as u32);
            if k == rows.count() {
                return;
            }
            if regex.is_match(row_text(k)) {
                found(rows.row(k));
            }
            next = rows.span(arena, k).end.max(target);
            from = next.saturating_sub(start);
            k += 1;
        }
    }
}

/// `ArenaOrder::contains_rows` over the rows of one arena, in arena order (`found` gets each
/// row whose value `holds` the needle).
fn contains_in_arena(
    rows: &impl ArenaRows,
    arena: &TextArena<'_>,
    search: &ContainsSearch,
    holds: &impl Fn(&str) -> bool,
    found: &mut impl FnMut(u16),
) {
    // `next`: the arena offset the search goes on from, across the arena's parts.
    let (mut next, mut k) = (0usize, 0usize);
    for (start, text) in arena.parts() {
        let mut from = next.saturating_sub(start);
        while k < rows.count() && from <= text.len() {
            let Some(match_) = search.find(text, from) else { break };
            k = rows.walk_to(k, (start + match_.end) as u32);
            if k == rows.count() {
                return;
            }
            let at = rows.row(k);
            let value = rows.span(arena, k);
            if start + match_.start < value.start {
                from = match_.end;
                continue;
            }
            if search.proves() || arena.value(usize::from(at)).is_some_and(holds) {
                found(at);
            }
            next = value.end;
            from = next.saturating_sub(start);
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::super::super::arena_regex::ArenaRegex;
    use super::super::super::fold::ContainsSearch;
    use super::{ArenaOrder, OrderChunk};
    use crate::grid::store::{ColumnSlot, ColumnStore, RecordIdentity, RowId};
    use crate::grid::value::{CellValue, StorageKind};

    /// `contains` and `regexp` find the rows a plain test of each value finds, over a chunk
    /// whose rows were replaced (sorted rows), one collected back into row order (the store's
    /// ends), and one that left row order after its order was built (sorted on the spot).
    #[test]
    fn searches_find_the_rows_in_sorted_in_row_order_and_in_stale_chunks() {
        let mut store = ColumnStore::new(RecordIdentity::RecordId);
        let slot = store.add_column(StorageKind::Text, false);
        let texts = ["apple pie", "", "Pear", "apple", "plum tart", "grape"];
        let rows = ColumnStore::chunk_rows() * 2 + 3;
        for i in 0..rows {
            let row = store.insert(&format!("r{i}"), "", 0, "alice");
            if i % 7 != 3 {
                store.set_text(row, slot, texts[i % texts.len()]).expect("a text column");
            }
        }
        let mut order = ArenaOrder::new(slot);
        order.refresh(&store).expect("a text column");
        let is_sorted = |order: &ArenaOrder| matches!(&*order.chunks[0], OrderChunk::Sorted(_));
        assert!(is_sorted(&order), "values written over empty cells are replacements");
        check(&store, slot, &order, rows);

        // Garbage past half the arena: the chunk is collected, in row order.
        let set = |store: &mut ColumnStore, row: u32, text: &str| {
            store.set_text(RowId::from_raw(row), slot, text).expect("a text column");
        };
        let in_row_order = |store: &ColumnStore| {
            store.text_arena(slot, 0).and_then(|arena| arena.row_ends()).is_some()
        };
        for turn in 0..40 {
            set(&mut store, 4, ["pineapple", "apple tart"][turn % 2]);
            if in_row_order(&store) {
                break;
            }
        }
        assert!(in_row_order(&store), "collected");
        order.mark(4); // as the engine does for each row its journal names
        order.refresh(&store).expect("a text column");
        assert!(!is_sorted(&order), "a chunk in row order keeps nothing");
        check(&store, slot, &order, rows);

        set(&mut store, 5, "apple crumble");
        assert!(!in_row_order(&store));
        check(&store, slot, &order, rows);
        order.mark(5);
        order.refresh(&store).expect("a text column");
        assert!(is_sorted(&order));
        check(&store, slot, &order, rows);
    }

    /// The rows `contains "apple"` and `regexp "^p\w+"` find are those a plain test finds.
    fn check(store: &ColumnStore, slot: ColumnSlot, order: &ArenaOrder, rows: usize) {
        let expect = |keep: &dyn Fn(&str) -> bool| -> Vec<u32> {
            let text = |row| match store.value(RowId::from_raw(row), slot) {
                CellValue::Text(text) => Some(text),
                _ => None,
            };
            (0..rows as u32).filter(|&row| text(row).is_some_and(|t| keep(&t))).collect()
        };
        let contains = ContainsSearch::new("apple").expect("a needle");
        let found: Vec<u32> = order.contains_rows(store, "apple", &contains).iter().collect();
        assert_eq!(found, expect(&|t| t.to_lowercase().contains("apple")));
        let pattern = r"^p\w+";
        let regex = Regex::new(pattern).expect("a pattern");
        let hir = regex_syntax::ParserBuilder::new().multi_line(true).build().parse(pattern);
        let search = ArenaRegex::new(&hir.expect("parses"), 1 << 20).expect("builds");
        let found: Vec<u32> = order.regex_rows(store, &regex, &search).iter().collect();
        assert_eq!(found, expect(&|t| regex.is_match(t)));
    }
}
