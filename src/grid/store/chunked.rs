//! `ChunkedVec`: a growable vector of fixed-width values split into chunks of `CHUNK_ROWS`.
//!
//! Owns only the chunk layout shared by every per-row vector of the store (row metadata, number,
//! boolean and datetime cells, versions, statuses). Chunks keep appends free of whole-column
//! reallocations and leave no capacity slack once full (`CHUNK_ROWS` is a power of two). It knows
//! nothing of records, columns or liveness beyond the row set handed to `retain_rows`.

use roaring::RoaringBitmap;

/// log2 of the rows per chunk. Tests use tiny chunks so that chunk boundaries are crossed often.
#[cfg(not(test))]
pub(super) const CHUNK_BITS: u32 = 16;
#[cfg(test)]
pub(super) const CHUNK_BITS: u32 = 3;

/// Rows per chunk.
pub(super) const CHUNK_ROWS: usize = 1 << CHUNK_BITS;
const CHUNK_MASK: usize = CHUNK_ROWS - 1;

/// Splits a row index into (chunk, index within chunk).
#[inline]
pub(super) fn split(row: usize) -> (usize, usize) {
    (row >> CHUNK_BITS, row & CHUNK_MASK)
}

/// A vector of `Copy` values stored in chunks of `CHUNK_ROWS`.
#[derive(Clone, Default)]
pub(super) struct ChunkedVec<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T: Copy> ChunkedVec<T> {
    /// An empty vector.
    pub(super) fn new() -> Self {
        ChunkedVec { chunks: Vec::new(), len: 0 }
    }

    /// A vector of `len` copies of `value`, each chunk allocated exactly.
    pub(super) fn filled(len: usize, value: T) -> Self {
        let mut chunks = Vec::with_capacity(len.div_ceil(CHUNK_ROWS));
        let mut left = len;
        while left > 0 {
            let n = left.min(CHUNK_ROWS);
            chunks.push(vec![value; n]);
            left -= n;
        }
        ChunkedVec { chunks, len }
    }

    /// Number of values.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Appends a value.
    pub(super) fn push(&mut self, value: T) {
        let (chunk, _) = split(self.len);
        if chunk == self.chunks.len() {
            self.chunks.push(Vec::new());
        }
        self.chunks[chunk].push(value);
        self.len += 1;
    }

    /// The value at `row`. Panics when `row >= len` (a stale `RowId`).
    #[inline]
    pub(super) fn get(&self, row: usize) -> T {
        let (chunk, at) = split(row);
        self.chunks[chunk][at]
    }

    /// Overwrites the value at `row`. Panics when `row >= len`.
    #[inline]
    pub(super) fn set(&mut self, row: usize, value: T) {
        let (chunk, at) = split(row);
        self.chunks[chunk][at] = value;
    }

    /// Keeps only the rows in `live`, in order, moving values down in place.
    pub(super) fn retain_rows(&mut self, live: &RoaringBitmap) {
        let mut kept = 0;
        for row in live.iter() {
            let row = row as usize;
            if row != kept {
                let value = self.get(row);
                self.set(kept, value);
            }
            kept += 1;
        }
        self.truncate(kept);
    }

    /// Shortens the vector to `len` values, freeing whole chunks past the end.
    fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let chunks = len.div_ceil(CHUNK_ROWS);
        self.chunks.truncate(chunks);
        if let Some(last) = self.chunks.last_mut() {
            last.truncate(len - (chunks - 1) * CHUNK_ROWS);
        }
        self.len = len;
    }

    /// Bytes held on the heap (capacity, not length).
    pub(super) fn heap_bytes(&self) -> usize {
        let values: usize = self.chunks.iter().map(Vec::capacity).sum();
        values * std::mem::size_of::<T>() + self.chunks.capacity() * std::mem::size_of::<Vec<T>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_get_set_across_chunks() {
        let mut v = ChunkedVec::new();
        for i in 0..(3 * CHUNK_ROWS as u32 + 2) {
            v.push(i);
        }
        assert_eq!(v.len(), 3 * CHUNK_ROWS + 2);
        assert_eq!(v.get(CHUNK_ROWS), CHUNK_ROWS as u32);
        v.set(CHUNK_ROWS + 1, 7);
        assert_eq!(v.get(CHUNK_ROWS + 1), 7);
    }

    #[test]
    fn retain_keeps_order_and_frees_chunks() {
        let n = 5 * CHUNK_ROWS as u32;
        let mut v = ChunkedVec::new();
        (0..n).for_each(|i| v.push(i));
        let live: RoaringBitmap = (0..n).filter(|i| i % 3 == 0).collect();
        v.retain_rows(&live);
        assert_eq!(v.len(), live.len() as usize);
        for (k, row) in live.iter().enumerate() {
            assert_eq!(v.get(k), row);
        }
        let empty = RoaringBitmap::new();
        v.retain_rows(&empty);
        assert_eq!(v.len(), 0);
        assert_eq!(v.heap_bytes(), v.chunks.capacity() * std::mem::size_of::<Vec<u32>>());
    }

    #[test]
    fn filled_is_exact() {
        let v = ChunkedVec::filled(2 * CHUNK_ROWS + 1, 9u8);
        assert_eq!(v.len(), 2 * CHUNK_ROWS + 1);
        assert_eq!(v.get(2 * CHUNK_ROWS), 9);
        assert_eq!(ChunkedVec::filled(0, 1u8).len(), 0);
    }
}
