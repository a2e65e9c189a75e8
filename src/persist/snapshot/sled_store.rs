//! [`SnapshotStore`] over sled: one tree (`snapshot_chunks`) holding, per key and generation, a
//! header entry and the payload split into bounded chunks.
//!
//! Entry keys are `<escaped key>/<generation:020>/header` and `<escaped key>/<generation:020>/<chunk:08>`,
//! where escaping turns `%` into `%25` and `/` into `%2F`, so no key's entries can fall under
//! another key's prefix. This module owns that tree and nothing else in the database.

use std::collections::BTreeMap;

use super::header;
use super::{
    AlignedBytes, Generation, GenerationInfo, ImageDamage, ImageHeader, LoadedSnapshot, Payload,
    SnapshotError, SnapshotImage, SnapshotStore,
};

const TREE_NAME: &str = "snapshot_chunks";
const HEADER_ENTRY: &[u8] = b"header";
const GENERATION_DIGITS: usize = 20;
const CHUNK_DIGITS: usize = 8;
/// Chunk numbers have 8 digits; bigger images get bigger chunks rather than more of them.
const MAX_CHUNKS: usize = 100_000_000;
/// Never reserve more than this up front on the word of a header (its length is checked as the
/// chunks arrive).
const MAX_PREALLOC: u64 = 256 * 1024 * 1024;

/// Snapshot images in a sled tree. Cheap to clone; clones share the database.
#[derive(Debug, Clone)]
pub struct SledSnapshotStore {
    db: sled::Db,
    tree: sled::Tree,
    chunk_size: usize,
}

/// Why one generation could not be loaded: the storage failed, or the image is damaged.
enum LoadError {
    Storage(sled::Error),
    Damaged(ImageDamage),
}

impl From<sled::Error> for LoadError {
    fn from(error: sled::Error) -> Self {
        Self::Storage(error)
    }
}

/// What an entry under a key's prefix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Header,
    Chunk(u64),
}

impl SledSnapshotStore {
    /// Default payload chunk size: 1 MiB, so no single sled value is huge.
    pub const DEFAULT_CHUNK_SIZE: usize = 1024 * 1024;

    /// Opens (creating if needed) the `snapshot_chunks` tree of `db`.
    pub fn open(db: &sled::Db) -> Result<Self, SnapshotError> {
        Ok(Self {
            db: db.clone(),
            tree: db.open_tree(TREE_NAME)?,
            chunk_size: Self::DEFAULT_CHUNK_SIZE,
        })
    }

    /// Uses `chunk_size` bytes per payload chunk for later puts (at least 1). Images already stored
    /// keep their chunking; loading does not depend on it.
    pub fn with_chunk_size(mut self, chunk_size: usize) -> Self {
        self.chunk_size = chunk_size.max(1);
        self
    }

    /// Every generation with any entry under `prefix`, mapped to whether it has a header entry.
    fn stored_generations(&self, prefix: &[u8]) -> Result<BTreeMap<u64, bool>, sled::Error> {
        let mut found = BTreeMap::new();
        for entry_key in self.tree.scan_prefix(prefix).keys() {
            let entry_key = entry_key?;
            let Some((generation, entry)) = entry_key.get(prefix.len()..).and_then(parse_entry)
            else {
                continue;
            };
            let has_header = found.entry(generation).or_insert(false);
            *has_header |= entry == Entry::Header;
        }
        Ok(found)
    }

    /// Writes the chunks, then the header (so a header's presence means the put got that far).
    fn write_image(&self, gen_prefix: &[u8], image: &SnapshotImage) -> Result<(), sled::Error> {
        let chunk_size = self.chunk_size.max(image.bytes.len().div_ceil(MAX_CHUNKS));
        for (index, chunk) in (0u64..).zip(image.bytes.chunks(chunk_size)) {
            self.tree.insert(chunk_key(gen_prefix, index), chunk)?;
        }
        let header = header::encode(&ImageHeader {
            format_version: image.format_version,
            wal_lsn: image.wal_lsn,
            payload_len: image.bytes.len() as u64,
            payload_crc: crc32c::crc32c(&image.bytes),
            base: None,
        });
        self.tree.insert(header_key(gen_prefix), &header[..])?;
        Ok(())
    }

    /// Loads one generation and checks header, chunk sequence, length and payload checksum.
    fn load_generation(
        &self,
        gen_prefix: &[u8],
        generation: Generation,
    ) -> Result<LoadedSnapshot, LoadError> {
        let stored = self.tree.get(header_key(gen_prefix))?;
        let stored = stored.ok_or(LoadError::Damaged(ImageDamage::MissingHeader))?;
        let header = header::decode(&stored).map_err(LoadError::Damaged)?;
        let bytes = self.read_payload(gen_prefix, &header)?;
        Ok(LoadedSnapshot::checked(&header, generation, Payload::Memory(bytes)))
    }

    fn read_payload(
        &self,
        gen_prefix: &[u8],
        header: &ImageHeader,
    ) -> Result<AlignedBytes, LoadError> {
        let expected = header.payload_len;
        // At least one byte, so even an empty payload has a real (aligned) allocation.
        let reserve = usize::try_from(expected.clamp(1, MAX_PREALLOC)).unwrap_or(1);
        let mut bytes = AlignedBytes::with_capacity(reserve);
        let mut next_index = 0;
        for entry in self.tree.scan_prefix(gen_prefix) {
            let (entry_key, chunk) = entry?;
            let Some(index) = entry_key.get(gen_prefix.len()..).and_then(parse_chunk_index) else {
                continue;
            };
            if index != next_index {
                return Err(LoadError::Damaged(ImageDamage::MissingChunk { index: next_index }));
            }
            let found = (bytes.len() + chunk.len()) as u64;
            if found > expected {
                return Err(LoadError::Damaged(ImageDamage::LengthMismatch { expected, found }));
            }
            bytes.extend_from_slice(&chunk);
            next_index += 1;
        }
        let found = bytes.len() as u64;
        if found != expected {
            return Err(LoadError::Damaged(ImageDamage::LengthMismatch { expected, found }));
        }
        let computed = crc32c::crc32c(&bytes);
        if computed != header.payload_crc {
            let stored = header.payload_crc;
            return Err(LoadError::Damaged(ImageDamage::PayloadCrc { stored, computed }));
        }
        Ok(bytes)
    }

    /// Reads a freshly written generation back and compares it with what was meant to be written.
    fn verify(
        &self,
        key: &str,
        gen_prefix: &[u8],
        generation: Generation,
        image: &SnapshotImage,
    ) -> Result<(), SnapshotError> {
        match self.load_generation(gen_prefix, generation) {
            Ok(loaded)
                if loaded.format_version == image.format_version
                    && loaded.wal_lsn == image.wal_lsn
                    && matches!(&loaded.bytes, Payload::Memory(b) if b[..] == image.bytes[..]) =>
            {
                Ok(())
            }
            Ok(_) => Err(SnapshotError::ReadBackMismatch { key: key.to_owned(), generation }),
            Err(LoadError::Storage(error)) => Err(SnapshotError::Storage(error)),
            Err(LoadError::Damaged(damage)) => {
                Err(SnapshotError::Damaged { key: key.to_owned(), generation, damage })
            }
        }
    }

    /// Deletes every generation in `older` except the newest intact one (it passes every load
    /// check), so that after a fallback the damaged generation goes and the intact one stays.
    fn retire_older(&self, prefix: &[u8], older: &BTreeMap<u64, bool>) -> Result<(), sled::Error> {
        let mut keep = None;
        for (&number, _) in older.iter().rev().filter(|(_, has_header)| **has_header) {
            let gen_prefix = generation_prefix(prefix, number);
            match self.load_generation(&gen_prefix, Generation(number)) {
                Ok(_) => {
                    keep = Some(number);
                    break;
                }
                Err(LoadError::Damaged(damage)) => {
                    tracing::error!(generation = number, %damage, "retiring a damaged snapshot generation");
                }
                Err(LoadError::Storage(error)) => return Err(error),
            }
        }
        for generation in older.keys().copied().filter(|g| Some(*g) != keep) {
            self.remove_prefix(&generation_prefix(prefix, generation))?;
        }
        Ok(())
    }

    /// Removes every entry under `prefix` in one atomic batch.
    fn remove_prefix(&self, prefix: &[u8]) -> Result<(), sled::Error> {
        let mut batch = sled::Batch::default();
        for entry_key in self.tree.scan_prefix(prefix).keys() {
            batch.remove(entry_key?);
        }
        self.tree.apply_batch(batch)
    }
}

impl SledSnapshotStore {
    /// Loads one generation of `key`, checked (for a store that reads this one's images).
    pub(super) fn load_generation_of(
        &self,
        key: &str,
        generation: Generation,
    ) -> Result<LoadedSnapshot, SnapshotError> {
        let prefix = generation_prefix(&key_prefix(key)?, generation.0);
        match self.load_generation(&prefix, generation) {
            Ok(loaded) => Ok(loaded),
            Err(LoadError::Storage(error)) => Err(SnapshotError::Storage(error)),
            Err(LoadError::Damaged(damage)) => {
                Err(SnapshotError::Damaged { key: key.to_owned(), generation, damage })
            }
        }
    }

    /// Removes one generation of `key` (durable after the next flush).
    pub(super) fn delete_generation(
        &self,
        key: &str,
        generation: Generation,
    ) -> Result<(), SnapshotError> {
        self.remove_prefix(&generation_prefix(&key_prefix(key)?, generation.0))?;
        Ok(())
    }
}

impl SnapshotStore for SledSnapshotStore {
    fn put(&self, key: &str, image: &SnapshotImage) -> Result<Generation, SnapshotError> {
        let prefix = key_prefix(key)?;
        let older = self.stored_generations(&prefix)?;
        let generation = Generation(older.keys().next_back().map_or(1, |g| g + 1));
        let gen_prefix = generation_prefix(&prefix, generation.0);
        self.write_image(&gen_prefix, image)?;
        self.db.flush()?;
        if let Err(error) = self.verify(key, &gen_prefix, generation, image) {
            tracing::error!(key, %generation, %error, "snapshot failed its read-back check");
            if let Err(cleanup) = self.remove_prefix(&gen_prefix) {
                tracing::warn!(key, %generation, error = %cleanup, "could not remove failed snapshot");
            }
            return Err(error);
        }
        self.retire_older(&prefix, &older)?;
        Ok(generation)
    }

    fn load_latest(&self, key: &str) -> Result<Option<LoadedSnapshot>, SnapshotError> {
        let prefix = key_prefix(key)?;
        let mut damaged = Vec::new();
        for (&number, &has_header) in self.stored_generations(&prefix)?.iter().rev() {
            let generation = Generation(number);
            if !has_header {
                tracing::debug!(key, %generation, "skipping a generation whose put never finished");
                continue;
            }
            match self.load_generation(&generation_prefix(&prefix, number), generation) {
                Ok(mut loaded) => {
                    if !damaged.is_empty() {
                        tracing::error!(key, %generation, "fell back to an older snapshot generation");
                    }
                    loaded.damaged_newer = damaged.into_iter().map(|(g, _)| g).collect();
                    return Ok(Some(loaded));
                }
                Err(LoadError::Damaged(damage)) => {
                    tracing::error!(key, %generation, %damage, "snapshot generation is damaged");
                    damaged.push((generation, damage));
                }
                Err(LoadError::Storage(error)) => return Err(SnapshotError::Storage(error)),
            }
        }
        if damaged.is_empty() {
            return Ok(None);
        }
        Err(SnapshotError::NoIntactGeneration { key: key.to_owned(), damaged })
    }

    fn generations(&self, key: &str) -> Result<Vec<GenerationInfo>, SnapshotError> {
        let prefix = key_prefix(key)?;
        let mut listed = Vec::new();
        for (&number, &has_header) in &self.stored_generations(&prefix)? {
            if !has_header {
                continue;
            }
            let stored = self.tree.get(header_key(&generation_prefix(&prefix, number)))?;
            listed.push(GenerationInfo {
                generation: Generation(number),
                header: stored.and_then(|bytes| header::decode(&bytes).ok()),
            });
        }
        Ok(listed)
    }

    fn delete(&self, key: &str) -> Result<(), SnapshotError> {
        self.remove_prefix(&key_prefix(key)?)?;
        Ok(())
    }

    fn flush(&self) -> Result<(), SnapshotError> {
        self.db.flush()?;
        Ok(())
    }
}

/// `<escaped key>/`.
pub(super) fn key_prefix(key: &str) -> Result<Vec<u8>, SnapshotError> {
    if key.is_empty() {
        return Err(SnapshotError::EmptyKey);
    }
    let mut prefix = Vec::with_capacity(key.len() + 1);
    for byte in key.bytes() {
        match byte {
            b'%' => prefix.extend_from_slice(b"%25"),
            b'/' => prefix.extend_from_slice(b"%2F"),
            other => prefix.push(other),
        }
    }
    prefix.push(b'/');
    Ok(prefix)
}

/// `<escaped key>/<generation:020>/`.
pub(super) fn generation_prefix(key_prefix: &[u8], generation: u64) -> Vec<u8> {
    let mut prefix = key_prefix.to_vec();
    prefix.extend_from_slice(format!("{generation:0GENERATION_DIGITS$}/").as_bytes());
    prefix
}

pub(super) fn chunk_key(gen_prefix: &[u8], index: u64) -> Vec<u8> {
    let mut key = gen_prefix.to_vec();
    key.extend_from_slice(format!("{index:0CHUNK_DIGITS$}").as_bytes());
    key
}

pub(super) fn header_key(gen_prefix: &[u8]) -> Vec<u8> {
    [gen_prefix, HEADER_ENTRY].concat()
}

/// Parses `<generation:020>/header` or `<generation:020>/<chunk:08>`.
fn parse_entry(rest: &[u8]) -> Option<(u64, Entry)> {
    let (digits, rest) = rest.split_at_checked(GENERATION_DIGITS)?;
    let generation = parse_digits(digits)?;
    let rest = rest.strip_prefix(b"/")?;
    if rest == HEADER_ENTRY {
        return Some((generation, Entry::Header));
    }
    Some((generation, Entry::Chunk(parse_chunk_index(rest)?)))
}

fn parse_chunk_index(rest: &[u8]) -> Option<u64> {
    (rest.len() == CHUNK_DIGITS).then_some(())?;
    parse_digits(rest)
}

fn parse_digits(digits: &[u8]) -> Option<u64> {
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}
