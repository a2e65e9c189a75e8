//! `ArenaOrder`: the order in which a text column's values lie in the store's arenas, per
//! storage chunk (no copy of the text). A chunk only appended to holds its values in row order,
//! so its order costs nothing: the search reads the arena's own row ends. Only a chunk written
//! over keeps its rows sorted by where their value lies (6 bytes a row).

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
    /// The arena held its values in row order when the chunk was built (a chunk only appended
    /// to, or just collected: the usual case), so the rows are their own order and where each
    /// value ends is read from the arena's own row ends; nothing is stored.
    InRowOrder { rows: usize },
    /// The rows sorted by where their value lies (an arena written over since).
    Listed(Listed),
}

impl Default for OrderChunk {
    fn default() -> Self {
        OrderChunk::InRowOrder { rows: 0 }
    }
}

impl OrderChunk {
    /// Rows of the chunk when built.
    fn rows(&self) -> usize {
        match self {
            OrderChunk::InRowOrder { rows } => *rows,
            OrderChunk::Listed(listed) => listed.rows,
        }
    }

    /// Bytes held on the heap.
    fn heap_bytes(&self) -> usize {
        match self {
            OrderChunk::InRowOrder { .. } => 0,
            OrderChunk::Listed(c) => {
                (c.order.capacity() + c.outside.capacity()) * 2 + c.ends.capacity() * 4
            }
        }
    }

    /// The entries to search in `arena` (this chunk's arena); `None` when the arena no longer
    /// holds the order the chunk was built for (its rows are then tested one by one).
    fn entries<'a>(&'a self, arena: &'a TextArena<'a>) -> Option<Entries<'a>> {
        match self {
            OrderChunk::Listed(listed) => Some(Entries::Listed(listed, arena)),
            OrderChunk::InRowOrder { rows } => {
                let ends = arena.row_ends().filter(|ends| ends.len() >= *rows)?;
                Some(Entries::InRowOrder { ends, rows: *rows })
            }
        }
    }
}

/// The rows of a written-over arena, in the order their values lie in it.
struct Listed {
    /// The rows whose value lies in the arena, by where it lies.
    order: Vec<u16>,
    /// Where each of those values ends in the arena (ascending).
    ends: Vec<u32>,
    /// The rows whose value is held outside the arena (long values).
    outside: Vec<u16>,
    /// Rows of the chunk when built.
    rows: usize,
}

/// A chunk's entries in arena order, as a search walks them: entry `k` is a row, and where its
/// value ends never decreases with `k`. Of an `InRowOrder` chunk every row is an entry, those
/// without a value in the arena (absent or `""`) included, and a seek steps over them.
enum Entries<'a> {
    Listed(&'a Listed, &'a TextArena<'a>),
    InRowOrder { ends: RowEnds<'a>, rows: usize },
}

impl Entries<'_> {
    fn len(&self) -> usize {
        match self {
            Entries::Listed(listed, _) => listed.order.len(),
            Entries::InRowOrder { rows, .. } => *rows,
        }
    }

    /// The row of entry `k` (below `len`).
    fn row(&self, k: usize) -> u16 {
        match self {
            Entries::Listed(listed, _) => listed.order[k],
            Entries::InRowOrder { .. } => k as u16,
        }
    }

    /// Where entry `k`'s value lies in the arena; `None` for a row without one.
    fn span(&self, k: usize) -> Option<std::ops::Range<usize>> {
        match self {
            Entries::Listed(listed, arena) => arena.span(listed.order[k] as usize),
            Entries::InRowOrder { ends, .. } => ends.span(k),
        }
    }

    /// The first entry from `k` on whose value lies in the arena and ends at or past
    /// `target`, or `len()`. `linear` walks the ends in order (which the prefetcher keeps up
    /// with when the entry is near); otherwise a binary search.
    fn seek(&self, k: usize, target: usize, linear: bool) -> usize {
        match self {
            Entries::Listed(listed, _) => {
                let ends = &listed.ends[k..];
                k + if linear {
                    ends.iter().take_while(|&&end| (end as usize) < target).count()
                } else {
                    ends.partition_point(|&end| (end as usize) < target)
                }
            }
            Entries::InRowOrder { ends, rows } => {
                let mut at = ends.seek(k, *rows, target, linear);
                // A row without a value ends no later than the next row with one, which also
                // ends at or past `target`.
                while at < *rows && ends.span(at).is_none() {
                    at += 1;
                }
                at
            }
        }
    }

    /// The rows whose value is held outside the arena.
    fn outside(&self) -> &[u16] {
        match self {
            Entries::Listed(listed, _) => &listed.outside,
            Entries::InRowOrder { .. } => &[],
        }
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
        self.chunks.resize_with(count, Default::default);
        self.fresh.resize(count, false);
        for (i, (chunk, fresh)) in self.chunks.iter_mut().zip(&mut self.fresh).enumerate() {
            let arena = store.text_arena(self.slot, i)?;
            if *fresh && chunk.rows() == arena.rows() {
                continue;
            }
            if arena.row_ends().is_some() {
                *chunk = Arc::new(OrderChunk::InRowOrder { rows: arena.rows() });
                *fresh = true;
                continue;
            }
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
            let rows = arena.rows();
            *chunk = Arc::new(OrderChunk::Listed(Listed { order, ends, outside, rows }));
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
            let Some(entries) = chunk.entries(&arena) else {
                let rows = chunk.rows().min(arena.rows());
                for at in (0..rows).filter(|&at| regex.is_match(value(at))) {
                    bits.insert(base + at as u32);
                }
                return;
            };
            let text = arena.bytes();
            let (mut from, mut k) = (0usize, 0usize);
            while from < text.len() && k < entries.len() {
                let end = match searcher.shortest_end(text, from) {
                    Ok(Some(end)) => end,
                    Ok(None) => break,
                    Err(GaveUp) => {
                        for k in k..entries.len() {
                            let Some(span) = entries.span(k) else { continue };
                            if regex.is_match(&text[span]) {
                                bits.insert(base + u32::from(entries.row(k)));
                            }
                        }
                        break;
                    }
                };
                // The first row (in arena order) ending at or past the match's end; a match of
                // no bytes at `from` names the row starting there.
                k = entries.seek(k, end.max(from + 1), false);
                let Some(found) = (k < entries.len()).then(|| entries.span(k)).flatten() else {
                    break;
                };
                if regex.is_match(&text[found.clone()]) {
                    bits.insert(base + u32::from(entries.row(k)));
                }
                from = found.end;
                k += 1;
            }
            let mut extra: Vec<u16> = entries
                .outside()
                .iter()
                .copied()
                .filter(|&at| regex.is_match(value(at as usize)))
                .collect();
            if empty_matches {
                extra.extend(
                    (0..chunk.rows()).filter(|&at| value(at).is_empty()).map(|at| at as u16),
                );
            }
            for at in extra {
                bits.insert(base + u32::from(at));
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
            let Some(entries) = chunk.entries(&arena) else {
                let rows = chunk.rows().min(arena.rows());
                for at in (0..rows).filter(|&at| arena.value(at).is_some_and(holds)) {
                    bits.insert(base + at as u32);
                }
                return;
            };
            let text = arena.bytes();
            let (mut from, mut k) = (0usize, 0usize);
            while k < entries.len() {
                let Some(found) = search.find(text, from) else { break };
                k = entries.seek(k, found.end, true);
                let Some(value) = (k < entries.len()).then(|| entries.span(k)).flatten() else {
                    break;
                };
                if found.start < value.start {
                    from = found.end;
                    continue;
                }
                if search.proves() || holds(&text[value.clone()]) {
                    bits.insert(base + u32::from(entries.row(k)));
                }
                from = value.end;
                k += 1;
            }
            for &at in entries.outside() {
                if arena.value(at as usize).is_some_and(holds) {
                    bits.insert(base + u32::from(at));
                }
            }
        })
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| std::mem::size_of::<OrderChunk>() + c.heap_bytes()).sum()
    }
}
