//! Query indexes over one branch's store, built on first use and patched from the store's
//! change journal:
//!
//! - `OrderedIndex`: the live rows with a non-empty key, sorted by (key in the sort direction,
//!   row), in blocks of at most `BLOCK_MAX` rows with a row-to-block map (made by the first
//!   change: until then the index holds 4 bytes a row less), so that a changed row is
//!   removed without knowing its old key, inserted by binary search, and any position is reached
//!   in O(log n) through block start positions.
//! - `DictIndex`: a text column's distinct values to their row sets, for `=` and `in`, kept only
//!   while the column has few distinct values.
//! - `ArenaOrder`: for `contains` and `regexp`, where a text column's values lie in the store's
//!   own arenas (a chunk only appended to holds its values in row order and the store's own
//!   ends say where each lies, so nothing is kept for it; for a chunk whose rows were replaced,
//!   its rows sorted by where their value lies, 2 bytes a row, and where each of those values
//!   ends, 4 bytes): one
//!   search (the needle's spellings, `fold::ContainsSearch`; the pattern in multi-line form)
//!   runs over each arena as stored (each value followed by `\n`, garbage and all), and each
//!   row found is confirmed when the match does not prove it. No copy of the text is made.
//!   `startsWith`/`endsWith` test each value (`text_rows`), folding only as many chars as the
//!   needle has.
//!
//! Row numbers are physical store rows; the engine drops every index when the store compacts.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::filter::{cmp_key, SortKey, Target, Val};
use crate::grid::store::{CellRef, ColumnSlot, ColumnStore, RowBits, RowId};

mod arena_order;

pub use arena_order::ArenaOrder;

/// Largest block; a block past it splits in two.
const BLOCK_MAX: usize = 1024;
/// Block size when building from scratch.
const BLOCK_BUILD: usize = 512;
/// Rows a scan thread takes at least: smaller columns are scanned on the calling thread alone.
const SCAN_ROWS_PER_THREAD: usize = 1 << 17;
/// `block_of` entry of a row not in the index.
const NONE: u32 = u32::MAX;

/// Compares two rows by a sort key, then by row (insertion order).
#[inline]
fn cmp_rows(store: &ColumnStore, key: SortKey, a: u32, b: u32) -> Ordering {
    let va = key.target.value(store, RowId::from_raw(a));
    let vb = key.target.value(store, RowId::from_raw(b));
    cmp_key(va, vb, key.descending).then(a.cmp(&b))
}

/// An order-preserving 128-bit image of a value: exact for numbers, times and booleans, the
/// first sixteen bytes for text (equal images then need a full comparison).
fn image(value: Val<'_>) -> Option<(u128, bool)> {
    let exact = |bits: u64| Some((u128::from(bits), true));
    match value {
        Val::Number(n) => {
            let bits = n.to_bits();
            exact(if bits >> 63 == 1 { !bits } else { bits | (1 << 63) })
        }
        Val::Time(t) => exact((t as u64) ^ (1 << 63)),
        Val::Bool(b) => exact(u64::from(b)),
        Val::Text(s) => {
            let mut prefix = [0u8; 16];
            let n = s.len().min(16);
            prefix[..n].copy_from_slice(&s.as_bytes()[..n]);
            Some((u128::from_be_bytes(prefix), false))
        }
        _ => None,
    }
}

/// Sorts rows (all with a non-empty key) by `(key, row)`.
fn sort_rows(store: &ColumnStore, key: SortKey, rows: &mut Vec<u32>) {
    let first = rows.first().map(|&r| key.target.value(store, RowId::from_raw(r)));
    if first.and_then(image).is_none() {
        rows.sort_unstable_by(|&a, &b| cmp_rows(store, key, a, b));
        return;
    }
    let mut keyed: Vec<(u128, u32)> = rows
        .iter()
        .map(|&r| {
            let (bits, _) =
                image(key.target.value(store, RowId::from_raw(r))).expect("one kind per key");
            (if key.descending { !bits } else { bits }, r)
        })
        .collect();
    let exact = first.and_then(image).is_some_and(|(_, exact)| exact);
    if exact {
        keyed.sort_unstable();
    } else {
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| cmp_rows(store, key, a.1, b.1)));
    }
    rows.clear();
    rows.extend(keyed.into_iter().map(|(_, r)| r));
}

/// Rows of one `CowVec` chunk.
const COW_CHUNK: usize = 4096;

/// A vector in chunks shared between clones: a clone costs a pointer per chunk, and a write
/// copies only the chunk it lands in, and only while a clone (a read view's) still holds it.
#[derive(Clone, Default)]
pub struct CowVec<T: Copy> {
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T: Copy> CowVec<T> {
    /// `len` copies of `fill`.
    pub fn filled(fill: T, len: usize) -> Self {
        let mut out = CowVec { chunks: Vec::new(), len: 0 };
        out.resize(len, fill);
        out
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        self.chunks[i / COW_CHUNK].get(i % COW_CHUNK).copied()
    }

    /// Sets entry `i` (which must be below `len`).
    pub fn set(&mut self, i: usize, value: T) {
        if i < self.len {
            Arc::make_mut(&mut self.chunks[i / COW_CHUNK])[i % COW_CHUNK] = value;
        }
    }

    /// Grows to `len` entries with `fill` (never shrinks).
    pub fn resize(&mut self, len: usize, fill: T) {
        while self.len < len {
            if self.len.is_multiple_of(COW_CHUNK) {
                self.chunks.push(Arc::new(Vec::with_capacity(COW_CHUNK)));
            }
            let last = self.chunks.last_mut().expect("a chunk was pushed");
            let last = Arc::make_mut(last);
            let add = (COW_CHUNK - last.len()).min(len - self.len);
            last.extend(std::iter::repeat_n(fill, add));
            self.len += add;
        }
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity() * std::mem::size_of::<T>()).sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<usize>()
    }
}

/// Each row's block id among `blocks` in `order` (`NONE` for a row in none), over `rows` rows.
fn row_map(blocks: &[Arc<Vec<u32>>], order: &[u32], rows: usize) -> CowVec<u32> {
    let mut map = CowVec::filled(NONE, rows);
    for &id in order {
        for &row in blocks[id as usize].iter() {
            map.set(row as usize, id);
        }
    }
    map
}

/// Notes in an index's row -> block map that `row` is in block `id` (`update` makes the map
/// before it inserts; a free function so that it borrows the map alone, beside a block).
fn place(block_of: &mut Option<CowVec<u32>>, row: u32, id: u32) {
    debug_assert!(block_of.is_some(), "rows are placed only by an update");
    if let Some(map) = block_of {
        map.set(row as usize, id);
    }
}

/// Live rows with a non-empty key, sorted; see the module doc.
#[derive(Clone)]
pub struct OrderedIndex {
    key: SortKey,
    /// Shared with clones; a change copies the block it changes (`Arc::make_mut`).
    blocks: Vec<Arc<Vec<u32>>>,
    /// The length of each block, by id: read where every block's would be (`recount`, which
    /// an update runs), without a pointer chase per block.
    sizes: Vec<u32>,
    /// Block ids in key order.
    order: Vec<u32>,
    /// Position of the first row of each block of `order`, plus the total at the end.
    starts: Vec<usize>,
    /// Each row's block id (`NONE` when not in the index), made by the first update: only a
    /// change needs it (to take a row out without knowing its old key), so an index that has
    /// seen none holds 4 bytes a row less.
    block_of: Option<CowVec<u32>>,
    members: RoaringBitmap,
    free: Vec<u32>,
}

impl OrderedIndex {
    /// Sorts every live row with a non-empty key.
    pub fn build(store: &ColumnStore, key: SortKey) -> Self {
        let mut bits = RowBits::default();
        let mut rows = Vec::with_capacity(store.len());
        for row in store.live_rows() {
            if !key.target.value(store, row).is_empty() {
                bits.insert(row.get());
                rows.push(row.get());
            }
        }
        sort_rows(store, key, &mut rows);
        let mut index = OrderedIndex {
            key,
            blocks: Vec::new(),
            sizes: Vec::new(),
            order: Vec::new(),
            starts: Vec::new(),
            block_of: None,
            members: bits.finish(),
            free: Vec::new(),
        };
        for chunk in rows.chunks(BLOCK_BUILD) {
            let id = index.blocks.len() as u32;
            index.blocks.push(Arc::new(chunk.to_vec()));
            index.sizes.push(chunk.len() as u32);
            index.order.push(id);
        }
        index.recount();
        index
    }

    /// Number of rows in the index (live rows with a non-empty key).
    pub fn len(&self) -> usize {
        *self.starts.last().unwrap_or(&0)
    }

    /// The rows in the index.
    pub fn members(&self) -> &RoaringBitmap {
        &self.members
    }

    fn recount(&mut self) {
        debug_assert!(
            self.blocks.iter().zip(&self.sizes).all(|(b, &n)| b.len() == n as usize),
            "a block's size is kept with it"
        );
        self.starts.clear();
        let mut at = 0;
        for &id in &self.order {
            self.starts.push(at);
            at += self.sizes[id as usize] as usize;
        }
        self.starts.push(at);
    }

    /// Re-sorts the given rows (ascending, deduplicated): each is taken out wherever it was and
    /// put back by its current key if it is live and non-empty. Past a large share of the index
    /// it rebuilds instead.
    pub fn update(&mut self, store: &ColumnStore, touched: &[u32]) {
        if touched.len() > self.len() / 8 + 1024 {
            *self = OrderedIndex::build(store, self.key);
            return;
        }
        let mut block_of = match self.block_of.take() {
            Some(map) => map,
            None => row_map(&self.blocks, &self.order, store.rows()),
        };
        if block_of.len() < store.rows() {
            block_of.resize(store.rows(), NONE);
        }
        let mut emptied = Vec::new();
        for &row in touched {
            let id = block_of.get(row as usize).unwrap_or(NONE);
            if id == NONE {
                continue;
            }
            if let Some(at) = self.blocks[id as usize].iter().position(|&r| r == row) {
                let block = Arc::make_mut(&mut self.blocks[id as usize]);
                block.remove(at);
                self.sizes[id as usize] = block.len() as u32;
                if block.is_empty() {
                    emptied.push(id);
                }
            }
            block_of.set(row as usize, NONE);
            self.members.remove(row);
        }
        if !emptied.is_empty() {
            let sizes = &self.sizes;
            self.order.retain(|&id| sizes[id as usize] > 0);
            self.free.extend(emptied);
        }
        self.block_of = Some(block_of);
        for &row in touched {
            let id = RowId::from_raw(row);
            if (row as usize) < store.rows()
                && store.is_live(id)
                && !self.key.target.value(store, id).is_empty()
            {
                self.insert(store, row);
            }
        }
        self.recount();
    }

    fn insert(&mut self, store: &ColumnStore, row: u32) {
        let key = self.key;
        if self.order.is_empty() {
            let id = self.new_block(vec![row]);
            self.order.push(id);
            place(&mut self.block_of, row, id);
            self.members.insert(row);
            return;
        }
        let blocks = &self.blocks;
        let after = self
            .order
            .partition_point(|&id| cmp_rows(store, key, blocks[id as usize][0], row).is_lt());
        let at_order = after.saturating_sub(1);
        let id = self.order[at_order];
        let block = Arc::make_mut(&mut self.blocks[id as usize]);
        let at = block.partition_point(|&r| cmp_rows(store, key, r, row).is_lt());
        block.insert(at, row);
        place(&mut self.block_of, row, id);
        self.members.insert(row);
        if block.len() > BLOCK_MAX {
            let upper = block.split_off(block.len() / 2);
            let new_id = self.new_block(upper);
            let moved = self.blocks[new_id as usize].clone();
            for &row in moved.iter() {
                place(&mut self.block_of, row, new_id);
            }
            self.order.insert(at_order + 1, new_id);
        }
        self.sizes[id as usize] = self.blocks[id as usize].len() as u32;
    }

    fn new_block(&mut self, rows: Vec<u32>) -> u32 {
        let size = rows.len() as u32;
        match self.free.pop() {
            Some(id) => {
                self.blocks[id as usize] = Arc::new(rows);
                self.sizes[id as usize] = size;
                id
            }
            None => {
                self.blocks.push(Arc::new(rows));
                self.sizes.push(size);
                (self.blocks.len() - 1) as u32
            }
        }
    }

    /// The rows from position `pos` on, in order.
    pub fn iter_from(&self, pos: usize) -> impl Iterator<Item = u32> + '_ {
        let block = self.starts.partition_point(|&s| s <= pos).saturating_sub(1);
        let skip = pos.saturating_sub(self.starts.get(block).copied().unwrap_or(0));
        self.order
            .get(block..)
            .unwrap_or_default()
            .iter()
            .flat_map(|&id| self.blocks[id as usize].iter().copied())
            .skip(skip)
    }

    /// The rows before position `pos`, last first.
    pub fn iter_before(&self, pos: usize) -> impl Iterator<Item = u32> + '_ {
        let pos = pos.min(self.len());
        let blocks = self.starts.partition_point(|&s| s < pos).min(self.order.len());
        self.order[..blocks].iter().enumerate().rev().flat_map(move |(at, &id)| {
            let block = &self.blocks[id as usize];
            let take = (pos - self.starts[at]).min(block.len());
            block[..take].iter().rev().copied()
        })
    }

    /// The row at position `pos` (< `len`).
    fn at(&self, pos: usize) -> u32 {
        let block = self.starts.partition_point(|&s| s <= pos) - 1;
        self.blocks[self.order[block] as usize][pos - self.starts[block]]
    }

    /// The first position whose row does not satisfy `before` (which holds for a prefix).
    fn partition_point(&self, mut before: impl FnMut(u32) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(self.at(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The positions `[start, end)` of the rows whose key values `v` have `below(v)` false and
    /// `not_above(v)` true; both must hold for a prefix of the order (a range of keys).
    pub fn span(
        &self,
        store: &ColumnStore,
        mut below: impl FnMut(Val<'_>) -> bool,
        mut not_above: impl FnMut(Val<'_>) -> bool,
    ) -> (usize, usize) {
        let target = self.key.target;
        let start = self.partition_point(|row| below(target.value(store, RowId::from_raw(row))));
        let end = self.partition_point(|row| not_above(target.value(store, RowId::from_raw(row))));
        (start, end.max(start))
    }

    /// The rows at positions `[start, end)` as a set.
    pub fn rows_between(&self, start: usize, end: usize, rows: usize) -> RoaringBitmap {
        let mut words = vec![0u64; rows.div_ceil(64)];
        for row in self.iter_from(start).take(end - start) {
            words[row as usize / 64] |= 1 << (row % 64);
        }
        let mut bits = RowBits::default();
        for (i, &word) in words.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                bits.insert(i as u32 * 64 + word.trailing_zeros());
                word &= word - 1;
            }
        }
        bits.finish()
    }

    /// The first position of the group of rows whose key equals that of the row at `pos`.
    pub fn group_start(&self, store: &ColumnStore, pos: usize) -> usize {
        let key = self.key;
        let value = key.target.value(store, RowId::from_raw(self.at(pos)));
        self.partition_point(|row| {
            cmp_key(key.target.value(store, RowId::from_raw(row)), value, key.descending).is_lt()
        })
    }

    /// Bytes held on the heap (approximate).
    pub fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.capacity() * 4).sum::<usize>()
            + self.sizes.capacity() * 4
            + self.block_of.as_ref().map_or(0, CowVec::heap_bytes)
            + self.members.serialized_size()
    }
}

/// Distinct values of a text target to their rows; see the module doc.
#[derive(Clone)]
pub struct DictIndex {
    target: Target,
    /// Shared with clones; copied when a value is first seen while shared.
    ids: Arc<HashMap<Box<str>, u32>>,
    /// Shared with clones; a change copies the set it changes.
    sets: Vec<Arc<RoaringBitmap>>,
    row_value: CowVec<u32>,
}

impl DictIndex {
    /// Bytes held on the heap (approximate: a hash map entry as its key, id and pointer).
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(Box<str>, u32)>() + 1;
        let keys: usize = self.ids.keys().map(|key| key.len()).sum();
        self.ids.capacity() * entry
            + keys
            + self.sets.iter().map(|set| set.serialized_size()).sum::<usize>()
            + self.sets.capacity() * std::mem::size_of::<usize>()
            + self.row_value.heap_bytes()
    }

    /// Most distinct values kept for `live` records.
    fn limit(live: usize) -> usize {
        (live / 16).max(1024)
    }

    /// Indexes a text target, or `None` when it has too many distinct values to be worth it.
    pub fn build(store: &ColumnStore, target: Target) -> Option<Self> {
        let mut index = DictIndex {
            target,
            ids: Arc::default(),
            sets: Vec::new(),
            row_value: CowVec::filled(NONE, store.rows()),
        };
        let limit = DictIndex::limit(store.len());
        for row in store.live_rows() {
            if let Val::Text(s) = target.value(store, row) {
                if !s.is_empty() {
                    index.add(row.get(), s);
                    if index.sets.len() > limit {
                        return None;
                    }
                }
            }
        }
        Some(index)
    }

    fn add(&mut self, row: u32, value: &str) {
        let id = match self.ids.get(value) {
            Some(&id) => id,
            None => {
                let id = self.sets.len() as u32;
                Arc::make_mut(&mut self.ids).insert(value.into(), id);
                self.sets.push(Arc::new(RoaringBitmap::new()));
                id
            }
        };
        Arc::make_mut(&mut self.sets[id as usize]).insert(row);
        self.row_value.set(row as usize, id);
    }

    /// Re-files the given rows under their current values. False when the target now has too
    /// many distinct values (the index should be dropped).
    pub fn update(&mut self, store: &ColumnStore, touched: &[u32]) -> bool {
        if self.row_value.len() < store.rows() {
            self.row_value.resize(store.rows(), NONE);
        }
        for &row in touched {
            let Some(old) = self.row_value.get(row as usize) else { continue };
            if old != NONE {
                Arc::make_mut(&mut self.sets[old as usize]).remove(row);
                self.row_value.set(row as usize, NONE);
            }
            let id = RowId::from_raw(row);
            if (row as usize) < store.rows() && store.is_live(id) {
                if let Val::Text(s) = self.target.value(store, id) {
                    if !s.is_empty() {
                        self.add(row, s);
                    }
                }
            }
        }
        self.sets.len() <= DictIndex::limit(store.len()) * 2
    }

    /// The rows holding exactly `value` (none for an unknown value).
    pub fn rows_of(&self, value: &str) -> Option<&RoaringBitmap> {
        self.ids.get(value).map(|&id| &*self.sets[id as usize])
    }
}

/// Physical rows of a text column whose text (`""` when absent or not text) satisfies `test`,
/// tested one by one (`starts_with`, `ends_with`, and needles `ContainsSearch` cannot search).
pub fn text_rows(
    store: &ColumnStore,
    slot: ColumnSlot,
    test: impl Fn(&str) -> bool + Sync,
) -> RoaringBitmap {
    let chunks = store.rows().div_ceil(ColumnStore::chunk_rows());
    scan_chunks(chunks, |i, base, bits| {
        for (at, cell) in store.chunk_cells(slot, i).enumerate() {
            let text = if let CellRef::Text(s) = cell { s } else { "" };
            if test(text) {
                bits.insert(base + at as u32);
            }
        }
    })
}

/// Runs `scan(chunk index, first row of the chunk, out)` over `chunks` storage chunks and gathers
/// the rows it inserts. Columns of several chunks are split between up to one thread per core
/// (scoped threads; the calling thread takes the first share), so a scan of a large column uses
/// the machine's memory bandwidth rather than one core's.
fn scan_chunks(chunks: usize, scan: impl Fn(usize, u32, &mut RowBits) + Sync) -> RoaringBitmap {
    scan_chunks_with(chunks, || (), |(), i, base, bits| scan(i, base, bits))
}

/// `scan_chunks` with a state each thread makes with `state` and passes to each of its scans
/// (a search's cache).
fn scan_chunks_with<S>(
    chunks: usize,
    state: impl Fn() -> S + Sync,
    scan: impl Fn(&mut S, usize, u32, &mut RowBits) + Sync,
) -> RoaringBitmap {
    let chunk_rows = ColumnStore::chunk_rows();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.min(chunks * chunk_rows / SCAN_ROWS_PER_THREAD).max(1);
    let per = chunks.div_ceil(workers).max(1);
    let run = |group: usize| {
        let (mut own, mut bits) = (state(), RowBits::default());
        for i in (group * per..chunks).take(per) {
            scan(&mut own, i, (i * chunk_rows) as u32, &mut bits);
        }
        bits.finish()
    };
    if workers == 1 {
        return run(0);
    }
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..workers).map(|g| scope.spawn(move || run(g))).collect();
        let mut rows = run(0);
        for other in others {
            rows |= other.join().expect("a scan thread does not panic");
        }
        rows
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{cmp_rows, CowVec, OrderedIndex, SortKey, Target};
    use crate::grid::store::{ColumnStore, RecordIdentity, RowId};

    /// The index lists exactly the live rows, in key order, from any position.
    fn assert_lists_live_rows_in_order(store: &ColumnStore, index: &OrderedIndex) {
        let mut expected: Vec<u32> = store.live_rows().map(RowId::get).collect();
        expected.sort_by(|&a, &b| cmp_rows(store, index.key, a, b));
        assert_eq!(index.len(), expected.len());
        for from in [0, 1, 511, 512, 1000, expected.len() / 2, expected.len() - 1] {
            let listed: Vec<u32> = index.iter_from(from).collect();
            assert_eq!(listed, expected[from..], "listed from position {from}");
        }
    }

    /// Deletes that empty a whole block drop it from the order and free its id; inserts that
    /// overfill a block split it into the freed id. The sizes kept per block follow every step
    /// (`recount` asserts them in debug builds; the listings depend on them).
    #[test]
    fn an_ordered_index_follows_emptied_and_split_blocks() {
        let mut store = ColumnStore::new(RecordIdentity::RecordId);
        for i in 0..3000 {
            store.insert(&format!("k{i:05}"), "", 0, "alice");
        }
        let key = SortKey { target: Target::RecordId, descending: false };
        let mut index = OrderedIndex::build(&store, key);
        assert_lists_live_rows_in_order(&store, &index);

        // The second built block (rows 512..1024) whole, and part of another.
        let gone: Vec<u32> = (512..1024).chain(2000..2100).collect();
        for &row in &gone {
            store.delete(RowId::from_raw(row));
        }
        index.update(&store, &gone);
        assert_eq!(index.free.len(), 1, "the emptied block's id is free");
        assert_lists_live_rows_in_order(&store, &index);

        // Ids sorting between k00100 and k00101 all land in the first block (512 rows): 100
        // of them grow it, then 413 more overfill it with the last one, so the split is the
        // update's last change.
        let add = |store: &mut ColumnStore, ids: std::ops::Range<usize>| -> Vec<u32> {
            ids.map(|i| store.insert(&format!("k00100x{i:04}"), "", 0, "bob").get()).collect()
        };
        let grown = add(&mut store, 0..100);
        index.update(&store, &grown);
        assert_lists_live_rows_in_order(&store, &index);
        let overfilled = add(&mut store, 100..513);
        index.update(&store, &overfilled);
        assert!(index.free.is_empty(), "a split took the freed id");
        assert_lists_live_rows_in_order(&store, &index);
    }

    proptest! {
        /// A `CowVec` reads as a `Vec` given the same writes, and a clone taken midway keeps
        /// what it saw whatever is written after.
        #[test]
        fn a_cow_vec_is_a_vec_and_a_clone_keeps_its_values(
            len in 0usize..20_000,
            writes in prop::collection::vec((0usize..25_000, any::<u32>()), 0..200),
            grow in 0usize..10_000,
        ) {
            let mut cow = CowVec::filled(7u32, len);
            let mut plain = vec![7u32; len];
            let (first, second) = writes.split_at(writes.len() / 2);
            for &(i, v) in first {
                cow.set(i, v);
                if i < plain.len() {
                    plain[i] = v;
                }
            }
            let kept = cow.clone();
            let seen = plain.clone();
            cow.resize(len + grow, 9);
            plain.resize(len + grow, 9);
            for &(i, v) in second {
                cow.set(i, v);
                if i < plain.len() {
                    plain[i] = v;
                }
            }
            prop_assert_eq!(cow.len(), plain.len());
            prop_assert_eq!((0..plain.len()).map(|i| cow.get(i)).collect::<Vec<_>>(),
                plain.iter().copied().map(Some).collect::<Vec<_>>());
            prop_assert_eq!(cow.get(plain.len()), None);
            prop_assert_eq!(kept.len(), seen.len());
            prop_assert_eq!((0..seen.len()).map(|i| kept.get(i)).collect::<Vec<_>>(),
                seen.iter().copied().map(Some).collect::<Vec<_>>());
        }
    }
}
