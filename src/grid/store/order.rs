//! Row order, paging and storage chunks: live rows in insertion order, a page at any offset
//! in O(log n + limit), and the chunk handles snapshots cut their parts along.

use roaring::RoaringBitmap;

use super::chunked::{self, ChunkHandle};
use super::{ColumnSlot, ColumnStore, RowId};

impl ColumnStore {
    /// Up to `limit` live rows in insertion order, skipping the first `offset` live rows.
    /// Costs O(log n + limit) at any offset.
    pub fn page(&self, offset: usize, limit: usize) -> impl Iterator<Item = RowId> + '_ {
        let start = u32::try_from(offset).ok().and_then(|offset| self.live.select(offset));
        start.map(|start| self.live.range(start..)).into_iter().flatten().take(limit).map(RowId)
    }

    /// Every live row in insertion order.
    pub fn live_rows(&self) -> impl Iterator<Item = RowId> + '_ {
        self.live.iter().map(RowId)
    }

    /// How many storage chunks the rows (live or not) take; chunk `k` holds rows
    /// `k * CHUNK_ROWS ..`, and a snapshot cuts its parts along them.
    pub fn chunk_count(&self) -> usize {
        self.ids.len().div_ceil(chunked::CHUNK_ROWS)
    }

    fn chunk_range(chunk: usize) -> std::ops::Range<u32> {
        let start = chunk.saturating_mul(chunked::CHUNK_ROWS);
        let end = start.saturating_add(chunked::CHUNK_ROWS);
        u32::try_from(start).unwrap_or(u32::MAX)..u32::try_from(end).unwrap_or(u32::MAX)
    }

    /// The live rows of storage chunk `chunk`, in order.
    pub fn live_rows_of_chunk(&self, chunk: usize) -> impl Iterator<Item = RowId> + '_ {
        self.live.range(Self::chunk_range(chunk)).map(RowId)
    }

    /// `live_rows_of_chunk(chunk)` collected, given that `live` of them are live
    /// (`live_in_chunk`): a chunk with none of its rows deleted is its whole range, made
    /// without walking the bitmap.
    pub fn live_rows_of_chunk_vec(&self, chunk: usize, live: u64) -> Vec<RowId> {
        let range = Self::chunk_range(chunk);
        let held = u32::try_from(self.rows()).unwrap_or(u32::MAX).clamp(range.start, range.end);
        if u64::from(held - range.start) == live {
            (range.start..held).map(RowId).collect()
        } else {
            self.live_rows_of_chunk(chunk).collect()
        }
    }

    /// How many rows of storage chunk `chunk` are live. Rows are only ever appended after the
    /// last chunk and deleted (until a compaction renumbers them, `epoch`), so the same count
    /// means the same rows.
    pub fn live_in_chunk(&self, chunk: usize) -> u64 {
        self.live.range_cardinality(Self::chunk_range(chunk))
    }

    /// Handles on what a record of storage chunk `chunk` is made of (id, path, time, editor,
    /// stamps, history head): while all are `same`, so are its records.
    pub fn record_chunk_handles(&self, chunk: usize) -> Vec<ChunkHandle> {
        [
            self.ids.handle(chunk),
            self.paths.handle(chunk),
            self.times.handle(chunk),
            self.editors.handle(chunk),
            self.created.handle(chunk),
            self.moved.handle(chunk),
            self.history.handle(chunk),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// A handle on storage chunk `chunk` of a column's cells, statuses and versions.
    pub fn column_chunk_handle(&self, slot: ColumnSlot, chunk: usize) -> Option<ChunkHandle> {
        self.columns.get(slot.0 as usize)?.as_ref()?.handle(chunk)
    }

    /// A handle on storage chunk `chunk` of a column's cells alone (not their statuses and
    /// versions).
    pub fn column_cells_handle(&self, slot: ColumnSlot, chunk: usize) -> Option<ChunkHandle> {
        self.columns.get(slot.0 as usize)?.as_ref()?.cells_handle(chunk)
    }

    /// The rank of `row` among live rows (its offset in `page`). For a deleted row: the number
    /// of live rows before it.
    pub fn position(&self, row: RowId) -> usize {
        let at_or_before = self.live.rank(row.0) as usize;
        at_or_before - usize::from(self.live.contains(row.0))
    }

    /// Number of physical rows (live and tombstoned): every `RowId` is below it.
    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// The live rows as a set.
    pub fn live(&self) -> &RoaringBitmap {
        &self.live
    }
}
