//! `ArenaOrder`: the sort order of a text column's rows, kept per storage chunk over the
//! chunk's arena (no copy of the text), merged across chunks when a page is read.

use std::sync::Arc;

use regex::Regex;
use roaring::RoaringBitmap;

use super::super::arena_regex::{ArenaRegex, ArenaSearcher, GaveUp};
use super::super::filter::fold_case;
use super::super::fold::ContainsSearch;
use super::{scan_chunks, scan_chunks_with};
use crate::grid::store::{ColumnSlot, ColumnStore, RowBits};

/// One storage chunk of an `ArenaOrder`.
#[derive(Default)]
struct OrderChunk {
    /// The rows whose value lies in the arena, by where it lies.
    order: Vec<u16>,
    /// Where each of those values ends in the arena (ascending).
    ends: Vec<u32>,
    /// The rows whose value is held outside the arena (long values).
    outside: Vec<u16>,
    /// Rows of the chunk when built.
    rows: usize,
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
            fresh &= chunk.is_some_and(|(chunk, &f)| f && chunk.rows == arena.rows());
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
            if *fresh && chunk.rows == arena.rows() {
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
            *chunk = Arc::new(OrderChunk { order, ends, outside, rows: arena.rows() });
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
            let row_text = |k: usize| value(usize::from(chunk.order[k]));
            // `next`: the arena offset the search goes on from, across the arena's parts.
            let (mut next, mut k) = (0usize, 0usize);
            'parts: for (start, text) in arena.parts() {
                let mut from = next.saturating_sub(start);
                while from < text.len() && k < chunk.order.len() {
                    let end = match searcher.shortest_end(text, from) {
                        Ok(Some(end)) => end,
                        Ok(None) => break,
                        Err(GaveUp) => {
                            for k in k..chunk.order.len() {
                                if regex.is_match(row_text(k)) {
                                    bits.insert(base + u32::from(chunk.order[k]));
                                }
                            }
                            break 'parts;
                        }
                    };
                    // The first row (in arena order) ending at or past the match's end; a
                    // match of no bytes at `from` names the row starting there.
                    let target = start + end.max(from + 1);
                    k += chunk.ends[k..].partition_point(|&end| (end as usize) < target);
                    let Some(&at) = chunk.order.get(k) else { break 'parts };
                    if regex.is_match(row_text(k)) {
                        bits.insert(base + u32::from(at));
                    }
                    next = arena.span(usize::from(at)).map_or(target, |found| found.end);
                    from = next.saturating_sub(start);
                    k += 1;
                }
            }
            let mut extra: Vec<u16> = chunk
                .outside
                .iter()
                .copied()
                .filter(|&at| regex.is_match(value(at as usize)))
                .collect();
            if empty_matches {
                extra
                    .extend((0..chunk.rows).filter(|&at| value(at).is_empty()).map(|at| at as u16));
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
            let (order, ends) = (&chunk.order, &chunk.ends);
            // `next`: the arena offset the search goes on from, across the arena's parts.
            let (mut next, mut k) = (0usize, 0usize);
            'parts: for (start, text) in arena.parts() {
                let mut from = next.saturating_sub(start);
                while k < order.len() && from <= text.len() {
                    let Some(found) = search.find(text, from) else { break };
                    // A linear walk: the ends are read in order, which the prefetcher keeps
                    // up with; a binary search would miss the cache at each probe.
                    let target = (start + found.end) as u32;
                    k += ends[k..].iter().take_while(|&&end| end < target).count();
                    let Some(&at) = order.get(k) else { break 'parts };
                    let value = arena.span(at as usize).unwrap_or(0..0);
                    if start + found.start < value.start {
                        from = found.end;
                        continue;
                    }
                    if search.proves() || arena.value(at as usize).is_some_and(holds) {
                        bits.insert(base + u32::from(at));
                    }
                    next = value.end;
                    from = next.saturating_sub(start);
                    k += 1;
                }
            }
            for &at in &chunk.outside {
                if arena.value(at as usize).is_some_and(holds) {
                    bits.insert(base + u32::from(at));
                }
            }
        })
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| (c.order.capacity() + c.outside.capacity()) * 2 + c.ends.capacity() * 4)
            .sum()
    }
}
