//! `Chunked`: rows split into chunks of `CHUNK_ROWS`, each chunk shared copy-on-write.
//!
//! Owns only the chunk layout shared by every per-row structure of the store: `Chunked<C>` keeps
//! its chunks behind `Arc`s, so cloning costs one reference count per chunk and a clone shares
//! every chunk until one side writes to it (`Arc::make_mut` then copies that chunk alone). Callers
//! group what one write touches into one chunk type (a column chunk holds cells, versions and
//! statuses), so a write pays one copy-on-write check. `ChunkedVec<T>`, the plain vector of
//! fixed-width values, is what this module's tests exercise the layout with. Chunks keep
//! appends free of whole-column reallocations and leave no capacity slack once full
//! (`CHUNK_ROWS` is a power of two). It knows nothing of records, columns or liveness beyond
//! the row set handed to `retain_with`.

use std::any::Any;
use std::ops::{Index, Range};
use std::sync::{Arc, Weak};

use roaring::RoaringBitmap;

/// log2 of the rows per chunk. Tests use tiny chunks so that chunk boundaries are crossed often.
///
/// 8,192 rows: the first write to a chunk shared with a snapshot's copy copies it, and a text
/// chunk of 65,536 rows was megabytes, so the first edits after a snapshot started waited tens
/// of milliseconds each; at 8,192 a chunk of localized text is about 600 KiB.
#[cfg(not(test))]
pub(super) const CHUNK_BITS: u32 = 13;
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

/// Makes room for one more row in a per-chunk vector: doubling, but never past `CHUNK_ROWS` (a
/// chunk copied on write has an exact capacity, from which plain doubling would overshoot).
#[inline]
pub(super) fn reserve_row<T>(rows: &mut Vec<T>) {
    let len = rows.len();
    if len == rows.capacity() {
        rows.reserve_exact((len * 2).clamp(4, CHUNK_ROWS).max(len + 1) - len);
    }
}

/// Bytes of the `Arc` allocation holding a `C`, beyond what `C` itself points to.
pub(super) const fn arc_bytes<C>() -> usize {
    std::mem::size_of::<C>() + 2 * std::mem::size_of::<usize>()
}

/// Names the contents of one chunk as they were when it was taken (`Chunked::handle`): it stays
/// `same` as a later handle of that chunk until the chunk is written, since a write after a
/// handle was taken moves or copies the contents to a new allocation (`Arc::make_mut`), and
/// it does not keep the contents alive.
#[derive(Clone)]
pub struct ChunkHandle(Weak<dyn Any + Send + Sync>);

impl ChunkHandle {
    /// A handle on what `shared` holds now.
    pub fn of<T: Send + Sync + 'static>(shared: &Arc<T>) -> ChunkHandle {
        let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(shared) as Weak<_>;
        ChunkHandle(weak)
    }

    /// Whether both name the same, unwritten contents.
    pub fn same(&self, other: &ChunkHandle) -> bool {
        Weak::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for ChunkHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChunkHandle({:p})", self.0.as_ptr())
    }
}

/// The contents of one chunk.
pub(super) trait Chunk: Clone {
    /// Bytes held on the heap by the chunk's contents.
    fn heap_bytes(&self) -> usize;

    /// Releases spare capacity (called on the last chunk a `retain_with` builds).
    fn shrink(&mut self) {}
}

/// Rows in shared copy-on-write chunks of `CHUNK_ROWS`; chunk `i` holds rows
/// `i * CHUNK_ROWS ..`.
#[derive(Clone)]
pub(super) struct Chunked<C> {
    chunks: Vec<Arc<C>>,
    len: usize,
}

impl<C> Default for Chunked<C> {
    fn default() -> Self {
        Chunked { chunks: Vec::new(), len: 0 }
    }
}

/// The chunk numbered `index` (not a row).
impl<C> Index<usize> for Chunked<C> {
    type Output = C;

    fn index(&self, index: usize) -> &C {
        &self.chunks[index]
    }
}

impl<C: Chunk> Chunked<C> {
    /// No rows.
    pub(super) fn new() -> Self {
        Chunked::default()
    }

    /// `len` rows, in chunks made by `make(rows of the chunk)`.
    pub(super) fn from_fn(len: usize, make: impl Fn(usize) -> C) -> Self {
        let mut chunks = Vec::with_capacity(len.div_ceil(CHUNK_ROWS));
        let mut left = len;
        while left > 0 {
            let n = left.min(CHUNK_ROWS);
            chunks.push(Arc::new(make(n)));
            left -= n;
        }
        Chunked { chunks, len }
    }

    /// Rows in `chunks`, each full but the last (built in order, e.g. from an image).
    pub(super) fn from_chunks(chunks: Vec<C>, len: usize) -> Self {
        debug_assert_eq!(len.div_ceil(CHUNK_ROWS), chunks.len());
        Chunked { chunks: chunks.into_iter().map(Arc::new).collect(), len }
    }

    /// Number of rows.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The chunk of `row` and the row's index in it. Panics when `row >= len` (a stale `RowId`).
    #[inline]
    pub(super) fn chunk(&self, row: usize) -> (&C, usize) {
        let (chunk, at) = split(row);
        (&self.chunks[chunk], at)
    }

    /// The chunk of `row`, writable (copied first when shared), and the row's index in it.
    #[inline]
    pub(super) fn chunk_mut(&mut self, row: usize) -> (&mut C, usize) {
        let (chunk, at) = split(row);
        (Arc::make_mut(&mut self.chunks[chunk]), at)
    }

    /// Appends a row: `push` adds it to the last chunk, which `new_chunk` starts when full
    /// (given the full chunk before it, if any, to size the new one by).
    #[inline]
    pub(super) fn push_with(
        &mut self,
        new_chunk: impl FnOnce(Option<&C>) -> C,
        push: impl FnOnce(&mut C),
    ) {
        let (chunk, _) = split(self.len);
        if chunk == self.chunks.len() {
            let made = new_chunk(self.chunks.last().map(|c| &**c));
            self.chunks.push(Arc::new(made));
        }
        push(Arc::make_mut(&mut self.chunks[chunk]));
        self.len += 1;
    }

    /// Appends `count` rows: `push(chunk, i)` adds the `i`th of them to the last chunk, which
    /// `new_chunk` starts when full (as in `push_with`). Each chunk is made writable once for
    /// its share of the rows rather than once per row (a bulk add's thousand rows of each
    /// column).
    pub(super) fn push_many_with(
        &mut self,
        count: usize,
        new_chunk: impl Fn(Option<&C>) -> C,
        mut push: impl FnMut(&mut C, usize),
    ) {
        self.push_ranges_with(count, new_chunk, |target, rows| {
            for i in rows {
                push(target, i);
            }
        });
    }

    /// `push_many_with` handing each chunk its whole share of the rows at once: `push(chunk,
    /// range)` adds rows `range` of the `count` (so that a chunk can make what it holds
    /// writable once for them too).
    pub(super) fn push_ranges_with(
        &mut self,
        count: usize,
        new_chunk: impl Fn(Option<&C>) -> C,
        mut push: impl FnMut(&mut C, Range<usize>),
    ) {
        let mut done = 0;
        while done < count {
            let (chunk, at) = split(self.len);
            if chunk == self.chunks.len() {
                let made = new_chunk(self.chunks.last().map(|c| &**c));
                self.chunks.push(Arc::new(made));
            }
            let take = (CHUNK_ROWS - at).min(count - done);
            push(Arc::make_mut(&mut self.chunks[chunk]), done..done + take);
            self.len += take;
            done += take;
        }
    }

    /// A handle on chunk `index`'s current contents, if there is such a chunk.
    pub(super) fn handle(&self, index: usize) -> Option<ChunkHandle>
    where
        C: Send + Sync + 'static,
    {
        self.chunks.get(index).map(ChunkHandle::of)
    }

    /// Chunk number `index` (not a row), if there is one.
    pub(super) fn get_chunk(&self, index: usize) -> Option<&C> {
        self.chunks.get(index).map(|chunk| &**chunk)
    }

    /// Every chunk, in row order.
    pub(super) fn iter_chunks(&self) -> impl Iterator<Item = &C> + '_ {
        self.chunks.iter().map(|chunk| &**chunk)
    }

    /// Every chunk, writable (shared chunks are copied).
    pub(super) fn chunks_mut(&mut self) -> impl Iterator<Item = &mut C> + '_ {
        self.chunks.iter_mut().map(Arc::make_mut)
    }

    /// Keeps only the rows in `live`, in order, into fresh chunks: `new_chunk(rows it will
    /// hold)` starts one, `copy(target, source chunk, index in source)` appends a row. Old
    /// chunks are released as soon as they are passed (one shared with a clone stays with the
    /// clone), so the peak is about one chunk above the structure.
    pub(super) fn retain_with(
        &mut self,
        live: &RoaringBitmap,
        new_chunk: impl Fn(usize) -> C,
        mut copy: impl FnMut(&mut C, &C, usize),
    ) {
        let mut left = live.len() as usize;
        let mut chunks = Vec::with_capacity(left.div_ceil(CHUNK_ROWS));
        let mut old = std::mem::take(&mut self.chunks).into_iter().enumerate();
        let mut current: Option<(usize, Arc<C>)> = None;
        let mut tail: Option<(C, usize)> = None;
        for row in live.iter() {
            let (chunk, at) = split(row as usize);
            while current.as_ref().is_none_or(|(index, _)| *index < chunk) {
                current = Some(old.next().expect("live rows lie inside the structure"));
            }
            let (_, source) = current.as_ref().expect("current chunk was just loaded");
            let (target, rows) = tail.get_or_insert_with(|| (new_chunk(left.min(CHUNK_ROWS)), 0));
            copy(target, source, at);
            *rows += 1;
            left -= 1;
            if *rows == CHUNK_ROWS || left == 0 {
                let (mut full, _) = tail.take().expect("the tail chunk was just filled");
                if left == 0 {
                    full.shrink();
                }
                chunks.push(Arc::new(full));
            }
        }
        self.len = live.len() as usize;
        self.chunks = chunks;
    }

    /// Bytes held on the heap, counting chunks shared with a clone in full.
    pub(super) fn heap_bytes(&self) -> usize {
        let contents: usize = self.chunks.iter().map(|chunk| chunk.heap_bytes()).sum();
        contents
            + self.chunks.len() * arc_bytes::<C>()
            + self.chunks.capacity() * std::mem::size_of::<Arc<C>>()
    }

    /// For each chunk of both, whether `self` and `other` share it.
    #[cfg(test)]
    pub(super) fn shared_with(&self, other: &Self) -> Vec<bool> {
        self.chunks.iter().zip(&other.chunks).map(|(a, b)| Arc::ptr_eq(a, b)).collect()
    }
}

impl<T: Copy> Chunk for Vec<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }
}

/// A vector of `Copy` values in shared copy-on-write chunks.
#[cfg(test)]
pub(super) type ChunkedVec<T> = Chunked<Vec<T>>;

#[cfg(test)]
impl<T: Copy> Chunked<Vec<T>> {
    /// A vector of `len` copies of `value`, each chunk allocated exactly.
    pub(super) fn filled(len: usize, value: T) -> Self {
        Chunked::from_fn(len, |n| vec![value; n])
    }

    /// Appends a value.
    #[inline]
    pub(super) fn push(&mut self, value: T) {
        self.push_with(
            |_| Vec::new(),
            |chunk| {
                reserve_row(chunk);
                chunk.push(value);
            },
        );
    }

    /// The value at `row`. Panics when `row >= len` (a stale `RowId`).
    #[inline]
    pub(super) fn get(&self, row: usize) -> T {
        let (chunk, at) = self.chunk(row);
        chunk[at]
    }

    /// Overwrites the value at `row`, copying its chunk first when shared. Panics when
    /// `row >= len`.
    #[inline]
    pub(super) fn set(&mut self, row: usize, value: T) {
        let (chunk, at) = self.chunk_mut(row);
        chunk[at] = value;
    }

    /// Keeps only the rows in `live`, in order.
    pub(super) fn retain_rows(&mut self, live: &RoaringBitmap) {
        self.retain_with(live, Vec::with_capacity, |target, source, at| target.push(source[at]));
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
    fn a_handle_stays_the_same_until_its_chunk_is_written() {
        let mut v = ChunkedVec::filled(2 * CHUNK_ROWS, 1u8);
        let (first, second) = (v.handle(0).expect("chunk"), v.handle(1).expect("chunk"));
        assert!(first.same(&v.handle(0).expect("chunk")));
        v.set(CHUNK_ROWS, 2);
        assert!(first.same(&v.handle(0).expect("chunk")), "an untouched chunk keeps its handle");
        assert!(!second.same(&v.handle(1).expect("chunk")), "a written chunk gets a new one");
        let copy = v.clone();
        let before = v.handle(0).expect("chunk");
        v.set(0, 3);
        assert!(!before.same(&v.handle(0).expect("chunk")), "a shared chunk copied on write");
        assert!(before.same(&copy.handle(0).expect("chunk")));
        assert!(v.handle(2).is_none());
    }

    #[test]
    fn filled_is_exact() {
        let v = ChunkedVec::filled(2 * CHUNK_ROWS + 1, 9u8);
        assert_eq!(v.len(), 2 * CHUNK_ROWS + 1);
        assert_eq!(v.get(2 * CHUNK_ROWS), 9);
        assert_eq!(ChunkedVec::filled(0, 1u8).len(), 0);
    }

    #[test]
    fn clones_share_chunks_until_written() {
        let mut a = ChunkedVec::new();
        (0..3 * CHUNK_ROWS as u32 + 2).for_each(|i| a.push(i));
        let mut b = a.clone();
        assert_eq!(a.shared_with(&b), [true; 4]);
        b.set(CHUNK_ROWS + 1, 99);
        assert_eq!(a.shared_with(&b), [true, false, true, true]);
        assert_eq!((a.get(CHUNK_ROWS + 1), b.get(CHUNK_ROWS + 1)), (CHUNK_ROWS as u32 + 1, 99));
        a.chunks_mut().for_each(|chunk| chunk.iter_mut().for_each(|v| *v += 1000));
        assert_eq!(a.shared_with(&b), [false; 4]);
        assert_eq!((a.get(0), b.get(0)), (1000, 0));
        let before: Vec<u32> = (0..b.len()).map(|row| b.get(row)).collect();
        a.retain_rows(&(0..a.len() as u32).filter(|i| i % 2 == 0).collect());
        assert_eq!((0..b.len()).map(|row| b.get(row)).collect::<Vec<_>>(), before);
    }

    #[test]
    fn a_tail_chunk_copied_on_write_fills_without_slack() {
        let mut a = ChunkedVec::new();
        (0..CHUNK_ROWS as u32 + 3).for_each(|i| a.push(i));
        let mut b = a.clone();
        (0..CHUNK_ROWS as u32).for_each(|i| b.push(i));
        assert_eq!(a.len(), CHUNK_ROWS + 3);
        assert_eq!(b.len(), 2 * CHUNK_ROWS + 3);
        assert!(b.chunks.iter().all(|chunk| chunk.capacity() <= CHUNK_ROWS));
        assert_eq!(a.shared_with(&b), [true, false]);
        assert_eq!(b.get(CHUNK_ROWS + 3), 0);
    }
}
