//! Hash lookups of the store: record keys to rows, and interned names (paths, user names).
//!
//! Owns `HashIndex` (a 64-bit key hash to one or more `u32` values, verified by the caller against
//! the stored strings, so no key string is kept twice) and `Interner`. Tables are split by hash into
//! `SHARDS` shards behind `Arc`s, so a clone costs one reference count per shard and copies a
//! shard only when one side writes to it. Keys are hashed with foldhash under a seed drawn once
//! per process (hashes are never written to disk, and a tenant cannot aim ids at one bucket); nothing here
//! knows about columns or liveness.

use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, OnceLock};

use super::chunked::arc_bytes;
use super::text::TextColumn;

/// Shards per index. Chosen by hash bits 32.. (a shard's table works from the low 32 bits, so
/// both stay uniform).
const SHARDS: usize = 256;
const SHARD_SHIFT: u32 = 32;

/// Hashes a record key (or a name, with `path = None`). `0xFF` never occurs in UTF-8, so
/// separating path and id with it keeps `(path, id)` pairs unambiguous.
pub(super) fn key_hash(path: Option<&str>, id: &str) -> u64 {
    static STATE: OnceLock<foldhash::quality::FixedState> = OnceLock::new();
    let state =
        STATE.get_or_init(|| foldhash::quality::FixedState::with_seed(rand::random::<u64>()));
    let mut hasher = state.build_hasher();
    if let Some(path) = path {
        hasher.write(path.as_bytes());
        hasher.write_u8(0xFF);
    }
    hasher.write(id.as_bytes());
    hasher.finish()
}

#[inline]
fn shard_of(hash: u64) -> usize {
    (hash >> SHARD_SHIFT) as usize % SHARDS
}

/// One shard of a `HashIndex`: the values alone, 4 bytes each. The table files a value under
/// the low 32 bits of its key's hash (`table_hash`); when it grows it asks the index's owner
/// for a value's key hash again (`rehash`), so it never holds the key or its hash, and
/// several values may share a hash.
type Shard = hashbrown::HashTable<u32>;

/// The table's hash of a value whose key hash is `hash`: its low 32 bits in both halves
/// (hashbrown picks buckets with the low bits and tags with the top seven).
#[inline]
fn table_hash(hash: u64) -> u64 {
    u64::from(hash as u32) * 0x1_0000_0001
}

/// The room each table gets when the fullest must hold `fullest` values: the most values of
/// the smallest power-of-two bucket count that takes them (hashbrown fills 7 buckets in 8), so
/// that a table grows as it would by doubling. Room for twice `fullest` would round past the
/// power of two that `fullest` just outgrew and take four times the buckets.
fn room_after_growth(fullest: usize) -> usize {
    let buckets = (fullest.saturating_mul(8) / 7 + 1).next_power_of_two().max(8);
    buckets / 8 * 7
}

/// Key hash -> values, in `SHARDS` copy-on-write shards picked by hash bits 32.., each entry
/// holding the value alone (4 bytes; the hash's low half beside it made 8): a lookup checks
/// the values whose bucket and 7-bit tag match against the stored key (`find`'s `is_match`),
/// and a table that grows files its values again by their keys' hashes, which the owner
/// computes from the stored keys (`rehash`). No shard exists before the first write; then
/// every shard starts as one shared empty table and gets its own on its first write.
#[derive(Clone, Default)]
pub(super) struct HashIndex {
    shards: Vec<Arc<Shard>>,
}

impl HashIndex {
    /// The value under `hash` that `is_match` accepts.
    #[inline]
    pub(super) fn find(&self, hash: u64, mut is_match: impl FnMut(u32) -> bool) -> Option<u32> {
        let shard = self.shards.get(shard_of(hash))?;
        shard.find(table_hash(hash), |&value| is_match(value)).copied()
    }

    /// The writable shard of `hash`, creating the shards on first use.
    fn shard_mut(&mut self, hash: u64) -> &mut Shard {
        if self.shards.is_empty() {
            self.shards = vec![Arc::default(); SHARDS];
        }
        Arc::make_mut(&mut self.shards[shard_of(hash)])
    }

    /// Room for `more` values spread evenly over the shards (a load that knows how many keys
    /// it inserts grows each shard once instead of by doubling). `rehash` gives the key hash
    /// of a value already held.
    pub(super) fn reserve(&mut self, more: usize, rehash: impl Fn(u32) -> u64) {
        if self.shards.is_empty() {
            self.shards = vec![Arc::default(); SHARDS];
        }
        let per = more.div_ceil(SHARDS) + more.div_ceil(SHARDS) / 16;
        for shard in &mut self.shards {
            // Without the room, the table grows as it fills.
            let _ = Arc::make_mut(shard).try_reserve(per, |&v| table_hash(rehash(v)));
        }
    }

    /// Makes room for values about to be inserted under `hashes`, so that no table grows on
    /// its own while they go in: when one of their shards would, every shard is filed again at
    /// once (`refile`), each table as large as the fullest one needs (`room_after_growth`). A table growing on its
    /// own asks `rehash` for each value it holds in the table's order, one random row at a
    /// time: a tenth of a bulk load's time at 1M records, where filing all of them again in
    /// row order, in one pass, reads the keys as they lie in memory.
    pub(super) fn make_room(&mut self, hashes: &[u64], rehash: impl Fn(u32) -> u64) {
        if self.shards.is_empty() {
            self.shards = vec![Arc::default(); SHARDS];
        }
        let fits = |shard: usize, more: usize| {
            let table = &self.shards[shard];
            table.len() + more <= table.capacity()
        };
        if let [hash] = hashes {
            if fits(shard_of(*hash), 1) {
                return;
            }
        }
        let mut incoming = [0usize; SHARDS];
        for &hash in hashes {
            incoming[shard_of(hash)] += 1;
        }
        if (0..SHARDS).all(|shard| fits(shard, incoming[shard])) {
            return;
        }
        let fullest = (0..SHARDS).map(|s| self.shards[s].len() + incoming[s]).max();
        self.refile(room_after_growth(fullest.unwrap_or_default()), rehash);
    }

    /// Files every value held again, into tables with room for `room` values each: the values
    /// in ascending order (marked in a bitset first), their key hashes from `rehash`, a block
    /// at a time shard by shard (`insert_many`). The old tables stay with the copies sharing
    /// them.
    fn refile(&mut self, room: usize, rehash: impl Fn(u32) -> u64) {
        /// Values filed per `insert_many`: its sorting buffers stay small.
        const BLOCK: usize = 1 << 16;
        let bound = self.shards.iter().flat_map(|shard| shard.iter()).max();
        let mut held = vec![0u64; bound.map_or(0, |&max| max as usize / 64 + 1)];
        for &value in self.shards.iter().flat_map(|shard| shard.iter()) {
            held[value as usize / 64] |= 1 << (value % 64);
        }
        self.shards = (0..SHARDS).map(|_| Arc::new(Shard::with_capacity(room))).collect();
        let mut block = Vec::with_capacity(BLOCK);
        for (word, &bits) in held.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let value = (word * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                block.push((rehash(value), value));
                if block.len() == BLOCK {
                    self.insert_many(
                        std::mem::replace(&mut block, Vec::with_capacity(BLOCK)),
                        &rehash,
                    );
                }
            }
        }
        self.insert_many(block, &rehash);
    }

    /// Adds `value` under `hash`; `rehash` gives the key hash of a value already held (a
    /// table that grows files its values again).
    pub(super) fn insert(&mut self, hash: u64, value: u32, rehash: impl Fn(u32) -> u64) {
        self.shard_mut(hash).insert_unique(table_hash(hash), value, |&v| table_hash(rehash(v)));
    }

    /// Inserts every `(hash, value)` pair, as `insert` one after another would, but shard by
    /// shard (a stable counting sort by shard first), so that each shard's table is in cache
    /// while its values go in.
    pub(super) fn insert_many(&mut self, pairs: Vec<(u64, u32)>, rehash: impl Fn(u32) -> u64) {
        let mut starts = vec![0usize; SHARDS + 1];
        for &(hash, _) in &pairs {
            starts[shard_of(hash) + 1] += 1;
        }
        for shard in 0..SHARDS {
            starts[shard + 1] += starts[shard];
        }
        let mut sorted = vec![(0u64, 0u32); pairs.len()];
        for &(hash, value) in &pairs {
            let at = &mut starts[shard_of(hash)];
            sorted[*at] = (hash, value);
            *at += 1;
        }
        drop(pairs);
        for (hash, value) in sorted {
            self.insert(hash, value, &rehash);
        }
    }

    /// Removes `value` from under `hash` (no-op when absent; a shared shard is copied only
    /// when it holds the value).
    pub(super) fn remove(&mut self, hash: u64, value: u32) {
        let matches = |&v: &u32| v == value;
        let Some(shard) = self.shards.get(shard_of(hash)) else { return };
        if shard.find(table_hash(hash), matches).is_none() {
            return;
        }
        if let Ok(entry) = self.shard_mut(hash).find_entry(table_hash(hash), matches) {
            entry.remove();
        }
    }

    /// Rewrites every value through `map` (row renumbering after compaction; the keys, so
    /// their hashes, stay); copies every shared non-empty shard.
    pub(super) fn remap(&mut self, map: impl Fn(u32) -> u32) {
        for shard in self.shards.iter_mut().filter(|shard| !shard.is_empty()) {
            Arc::make_mut(shard).iter_mut().for_each(|v| *v = map(*v));
        }
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.shards.iter().all(|shard| shard.is_empty())
    }

    /// Approximate bytes held on the heap (buckets at 7/8 load, one control byte each),
    /// counting shared shards in full but the shared empty shard once.
    pub(super) fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<u32>() + 1;
        let buckets: usize = self.shards.iter().map(|shard| shard.capacity() * 8 / 7).sum();
        let own = self.shards.iter().filter(|shard| shard.capacity() > 0).count() + 1;
        let arcs = own.min(self.shards.len()) * arc_bytes::<Shard>();
        buckets * entry + arcs + self.shards.capacity() * std::mem::size_of::<Arc<Shard>>()
    }
}

/// Distinct strings numbered densely from 0, each stored once.
#[derive(Clone, Default)]
pub(super) struct Interner {
    names: TextColumn,
    index: HashIndex,
}

impl Interner {
    /// The number of `name`, adding it when new.
    pub(super) fn intern(&mut self, name: &str) -> u32 {
        let hash = key_hash(None, name);
        let names = &self.names;
        if let Some(found) = self.index.find(hash, |n| names.get(n as usize) == Some(name)) {
            return found;
        }
        let number = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names");
        self.names.push(Some(name));
        let names = &self.names;
        self.index.insert(hash, number, |n| key_hash(None, names.get(n as usize).unwrap_or("")));
        number
    }

    /// The name numbered `number`. Panics on a number this interner never handed out.
    #[inline]
    pub(super) fn name(&self, number: u32) -> &str {
        self.names.get(number as usize).expect("interned names are never absent")
    }

    /// The name numbered `number` and whether it may need JSON escaping.
    #[inline]
    pub(super) fn name_for_json(&self, number: u32) -> (&str, bool) {
        let (name, escapes) = self.names.get_for_json(number as usize);
        (name.expect("interned names are never absent"), escapes)
    }

    /// How many names are interned.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// Bytes held on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        self.names.heap_bytes() + self.index.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserting_many_at_once_finds_what_inserting_one_by_one_finds() {
        // Hashes spread over the shards, some shared by several values. The tables grow many
        // times on the way, filing what they hold again by `rehash`.
        let rehash = |v: u32| u64::from(v % 3000).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let pairs: Vec<(u64, u32)> = (0..5000u32).map(|v| (rehash(v), v)).collect();
        let mut one_by_one = HashIndex::default();
        for &(hash, value) in &pairs {
            one_by_one.insert(hash, value, rehash);
        }
        let mut at_once = HashIndex::default();
        at_once.insert_many(pairs.clone(), rehash);
        for &(hash, value) in &pairs {
            assert_eq!(at_once.find(hash, |v| v == value), Some(value));
            assert_eq!(one_by_one.find(hash, |v| v == value), Some(value));
        }
        assert_eq!(at_once.find(7, |_| true), None);
    }

    #[test]
    fn room_made_first_files_every_value_again_at_once_and_no_table_grows_on_its_own() {
        let hash = |v: u32| key_hash(None, &(v % 7000).to_string());
        let mut index = HashIndex::default();
        let mut refiled = 0;
        let mut next = 0u32;
        // Single values, then batches of many, past several doublings.
        for batch in [1, 1, 1, 500, 1, 3000, 7, 20_000, 1, 1] {
            let values: Vec<u32> = (next..next + batch).collect();
            next += batch;
            let hashes: Vec<u64> = values.iter().map(|&v| hash(v)).collect();
            let calls = std::cell::Cell::new(0);
            index.make_room(&hashes, |v| {
                calls.set(calls.get() + 1);
                assert!(v < next - batch, "only values already held are filed again");
                hash(v)
            });
            refiled += usize::from(calls.get() > 0);
            for (&v, &h) in values.iter().zip(&hashes) {
                index.insert(h, v, |_| panic!("the table grew on its own"));
            }
        }
        assert!(refiled >= 2, "filed again {refiled} times");
        for v in 0..next {
            assert_eq!(index.find(hash(v), |x| x == v), Some(v));
        }
        // A removed value stays out of the tables filed again.
        index.remove(hash(5), 5);
        let room: Vec<u64> = (0..100_000).map(|v| hash(next + v)).collect();
        index.make_room(&room, hash);
        assert_eq!(index.find(hash(5), |x| x == 5), None);
        assert_eq!(index.find(hash(6), |x| x == 6), Some(6));
        assert!(index.shards.iter().all(|shard| shard.capacity() >= 100_000 / SHARDS));
    }

    #[test]
    fn tables_filed_again_double_their_buckets_as_growing_alone_would() {
        for fullest in [0, 1, 7, 8, 100, 3584, 3585, 3600, 7168, 7169, 1 << 20] {
            let room = room_after_growth(fullest);
            assert!(room >= fullest, "{fullest}: room {room}");
            let table = Shard::with_capacity(room);
            assert_eq!(table.capacity(), room, "{fullest}: the whole of its buckets' room");
            // Just past a doubling's room, a table doubles: 3584 is 4096 buckets' room.
            if fullest == 3585 || fullest == 3600 {
                assert_eq!(room, 7168);
            }
        }
    }

    #[test]
    fn colliding_hashes_keep_every_value() {
        let mut index = HashIndex::default();
        for v in 0..5 {
            index.insert(42, v, |_| 42);
        }
        assert_eq!(index.find(42, |v| v == 3), Some(3));
        index.remove(42, 0);
        index.remove(42, 3);
        assert_eq!(index.find(42, |v| v == 0), None);
        assert_eq!(index.find(42, |v| v == 3), None);
        for v in [1, 2, 4] {
            assert_eq!(index.find(42, |x| x == v), Some(v));
        }
        index.remap(|v| v * 10);
        assert_eq!(index.find(42, |x| x == 40), Some(40));
        for v in [10, 20, 40] {
            index.remove(42, v);
        }
        assert!(index.is_empty());
    }

    #[test]
    fn path_and_id_hash_unambiguously() {
        assert_ne!(key_hash(Some("a"), "bc"), key_hash(Some("ab"), "c"));
        assert_ne!(key_hash(Some(""), "x"), key_hash(None, "x"));
        assert_eq!(key_hash(Some("p"), "x"), key_hash(Some("p"), "x"));
    }

    #[test]
    fn interner_numbers_densely() {
        let mut names = Interner::default();
        assert_eq!(names.intern("alice"), 0);
        assert_eq!(names.intern("bob"), 1);
        assert_eq!(names.intern("alice"), 0);
        assert_eq!(names.intern(""), 2);
        assert_eq!(names.name(1), "bob");
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn clones_share_shards_until_written() {
        let mut a = HashIndex::default();
        let hashes: Vec<u64> = (0..2000u32).map(|v| key_hash(None, &v.to_string())).collect();
        let rehash = |v: u32| match v {
            7000 => hashes[5],
            9000 => hashes[1],
            v => hashes[v as usize],
        };
        for (v, &hash) in hashes.iter().enumerate() {
            a.insert(hash, v as u32, rehash);
        }
        a.insert(hashes[5], 7000, rehash);
        let mut b = a.clone();
        let distinct = |x: &HashIndex, y: &HashIndex| {
            x.shards.iter().zip(&y.shards).filter(|(p, q)| !Arc::ptr_eq(p, q)).count()
        };
        assert_eq!(distinct(&a, &b), 0);
        b.insert(hashes[1], 9000, rehash);
        b.remove(hashes[2], 2);
        assert_eq!(distinct(&a, &b), 1 + usize::from(shard_of(hashes[1]) != shard_of(hashes[2])));
        b.remove(hashes[5], 5);
        assert_eq!(a.find(hashes[1], |v| v == 9000), None);
        assert_eq!(a.find(hashes[2], |v| v == 2), Some(2));
        assert_eq!(a.find(hashes[5], |v| v == 5), Some(5));
        assert_eq!(b.find(hashes[5], |v| v == 7000), Some(7000));
        assert_eq!(b.find(hashes[1], |v| v == 9000), Some(9000));
        a.remap(|v| v + 1);
        assert_eq!(b.find(hashes[3], |v| v == 3), Some(3));
        assert_eq!(a.find(hashes[3], |v| v == 4), Some(4));
        assert!(a.heap_bytes() > 2000 * 4);
    }

    #[test]
    fn an_empty_index_allocates_no_shards() {
        let mut index = HashIndex::default();
        assert!(index.shards.is_empty() && index.heap_bytes() == 0);
        index.remove(1, 1);
        assert!(index.shards.is_empty());
        index.insert(1, 1, |_| 1);
        assert_eq!(index.find(1, |v| v == 1), Some(1));
    }
}
