//! Hash lookups of the store: record keys to rows, and interned names (paths, user names).
//!
//! Owns `HashIndex` (a 64-bit key hash to one or more `u32` values, verified by the caller against
//! the stored strings, so no key string is kept twice) and `Interner`. Hashing is deterministic
//! (SipHash with fixed keys); nothing here knows about columns or liveness.

use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::text::TextColumn;

/// Hashes a record key (or a name, with `path = None`). `0xFF` never occurs in UTF-8, so
/// separating path and id with it keeps `(path, id)` pairs unambiguous.
pub(super) fn key_hash(path: Option<&str>, id: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    if let Some(path) = path {
        hasher.write(path.as_bytes());
        hasher.write_u8(0xFF);
    }
    hasher.write(id.as_bytes());
    hasher.finish()
}

/// A `Hasher` for keys that already are hashes.
#[derive(Default)]
pub(super) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

type PrehashedMap<V> = HashMap<u64, V, BuildHasherDefault<Prehashed>>;

/// Key hash -> values. Almost every hash has one value (16 bytes per entry); the rare hashes
/// shared by several keys keep the extra values in `more`.
#[derive(Clone, Default)]
pub(super) struct HashIndex {
    first: PrehashedMap<u32>,
    more: PrehashedMap<Vec<u32>>,
}

impl HashIndex {
    /// The value under `hash` that `is_match` accepts.
    #[inline]
    pub(super) fn find(&self, hash: u64, mut is_match: impl FnMut(u32) -> bool) -> Option<u32> {
        let first = *self.first.get(&hash)?;
        if is_match(first) {
            return Some(first);
        }
        self.more.get(&hash)?.iter().copied().find(|&v| is_match(v))
    }

    /// Adds `value` under `hash`.
    pub(super) fn insert(&mut self, hash: u64, value: u32) {
        match self.first.entry(hash) {
            Entry::Vacant(slot) => {
                slot.insert(value);
            }
            Entry::Occupied(_) => self.more.entry(hash).or_default().push(value),
        }
    }

    /// Removes `value` from under `hash` (no-op when absent).
    pub(super) fn remove(&mut self, hash: u64, value: u32) {
        let Some(first) = self.first.get_mut(&hash) else {
            return;
        };
        let Entry::Occupied(mut more) = self.more.entry(hash) else {
            if *first == value {
                self.first.remove(&hash);
            }
            return;
        };
        if *first == value {
            *first = more.get_mut().pop().expect("`more` lists are never empty");
        } else {
            more.get_mut().retain(|&v| v != value);
        }
        if more.get().is_empty() {
            more.remove();
        }
    }

    /// Rewrites every value through `map` (row renumbering after compaction).
    pub(super) fn remap(&mut self, map: impl Fn(u32) -> u32) {
        self.first.values_mut().for_each(|v| *v = map(*v));
        self.more.values_mut().flatten().for_each(|v| *v = map(*v));
    }

    /// Approximate bytes held on the heap (buckets at 7/8 load, one control byte each).
    pub(super) fn heap_bytes(&self) -> usize {
        let first = self.first.capacity() * 8 / 7 * (std::mem::size_of::<(u64, u32)>() + 1);
        let lists: usize = self.more.values().map(|v| v.capacity() * 4).sum();
        let more = self.more.capacity() * 8 / 7 * (std::mem::size_of::<(u64, Vec<u32>)>() + 1);
        first + more + lists
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
        self.index.insert(hash, number);
        number
    }

    /// The name numbered `number`. Panics on a number this interner never handed out.
    #[inline]
    pub(super) fn name(&self, number: u32) -> &str {
        self.names.get(number as usize).expect("interned names are never absent")
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
    fn colliding_hashes_keep_every_value() {
        let mut index = HashIndex::default();
        for v in 0..5 {
            index.insert(42, v);
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
        assert!(index.first.is_empty() && index.more.is_empty());
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
}
