//! Snapshot images: opaque, checksummed byte images of a grid branch, tagged with the WAL LSN they
//! cover, kept in two generations per key so a damaged newest image still leaves an older one.
//!
//! Owns the [`SnapshotStore`] contract, the image header format and its implementations: files
//! ([`FileSnapshotStore`], one file per generation, the one gridd uses) and sled
//! ([`SledSnapshotStore`], one tree of header and chunk entries: where images were kept before,
//! read through the file store's legacy fallback). It must not interpret the image
//! bytes (the caller validates them with `rkyv::access`) and must not touch the WAL: deciding which
//! WAL segments a snapshot makes obsolete is the caller's job, using [`SnapshotStore::generations`].
//!
//! Every method blocks on I/O: call it from `spawn_blocking` or an actor's own thread, never
//! from an HTTP worker. At most one `put` per key may run at a time (the grid actor owning the key
//! is the only writer).

mod file_store;
mod header;
mod sled_store;

#[cfg(test)]
mod tests;

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::grid::image::{SectionBytes, SectionSource, MAX_LINKS};
pub use file_store::FileSnapshotStore;
pub use sled_store::SledSnapshotStore;

/// A 16-byte aligned byte buffer, ready for `rkyv::access`.
pub type AlignedBytes = rkyv::util::AlignedVec<16>;

/// A loaded image's payload: in memory, or in its snapshot file (checked when loaded, then read
/// a section at a time, so a load need not hold a whole image).
#[derive(Debug)]
pub enum Payload {
    /// Starting on a 16-byte boundary.
    Memory(AlignedBytes),
    File(FilePayload),
}

/// A payload in a file: `len` bytes from `start`.
#[derive(Debug)]
pub struct FilePayload {
    file: File,
    start: u64,
    len: u64,
}

impl FilePayload {
    /// `len` bytes of `file` from `start`.
    fn new(file: File, start: u64, len: u64) -> Self {
        FilePayload { file, start, len }
    }

    /// The same bytes through another handle on the file.
    fn try_clone(&self) -> io::Result<FilePayload> {
        Ok(FilePayload { file: self.file.try_clone()?, start: self.start, len: self.len })
    }
}

impl Payload {
    /// The payload's length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Payload::Memory(bytes) => bytes.len() as u64,
            Payload::File(file) => file.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole payload in memory (read from its file when there), 16-byte aligned.
    pub fn whole(&self) -> io::Result<SectionBytes<'_>> {
        let len = usize::try_from(self.len()).map_err(|_| io::Error::other("too large"))?;
        self.read_at(0, len)
    }
}

impl SectionSource for Payload {
    fn payload_len(&self) -> u64 {
        self.len()
    }

    fn in_memory(&self) -> Option<&[u8]> {
        match self {
            Payload::Memory(bytes) => Some(bytes),
            Payload::File(_) => None,
        }
    }

    fn read_exact_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        match self {
            Payload::Memory(bytes) => (&bytes[..]).read_exact_at(offset, out),
            Payload::File(payload) => {
                let end = offset.checked_add(out.len() as u64);
                if end.is_none_or(|end| end > payload.len) {
                    return Err(io::Error::other("a read past the payload's end"));
                }
                payload.file.read_exact_at(out, payload.start + offset)
            }
        }
    }
}

/// An image to store: opaque bytes plus what the caller needs to interpret and replay from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotImage {
    /// Version of the caller's image format (bumped on every layout change).
    pub format_version: u32,
    /// Highest WAL LSN whose effect the image contains; replay starts after it.
    pub wal_lsn: u64,
    /// The image itself.
    pub bytes: Vec<u8>,
}

/// Number of one stored image of a key; a newer image has a higher generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Generation(pub u64);

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The decoded, checksum-verified header of one generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageHeader {
    /// The image's format version.
    pub format_version: u32,
    /// The WAL LSN the image covers.
    pub wal_lsn: u64,
    /// Payload length in bytes.
    pub payload_len: u64,
    /// crc32c of the payload.
    pub payload_crc: u32,
    /// The generation this one borrows sections from, directly or through that one's own base
    /// (a delta on that base: the image's chain is its base, its base's base, ...).
    pub base: Option<u64>,
}

/// One stored generation as listed by [`SnapshotStore::generations`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationInfo {
    /// Which generation.
    pub generation: Generation,
    /// Its header, or `None` when the header fails its checks. A valid header does not prove the
    /// payload is intact; only a load does.
    pub header: Option<ImageHeader>,
}

/// An image that passed every check on load.
#[derive(Debug)]
pub struct LoadedSnapshot {
    /// The image's format version.
    pub format_version: u32,
    /// The WAL LSN the image covers; replay WAL records after it.
    pub wal_lsn: u64,
    /// Which generation was loaded.
    pub generation: Generation,
    pub bytes: Payload,
    /// The payloads of the generations this one borrows sections from, checked like it: its
    /// base, its base's base, ... down to a whole image (empty for a whole image).
    pub chain: Vec<Payload>,
    /// The generations of `chain`, in its order.
    pub links: Vec<Generation>,
    /// Newer generations that were skipped because they were damaged (newest first); non-empty
    /// means this is a fallback and the caller should write a fresh snapshot soon.
    pub damaged_newer: Vec<Generation>,
}

impl LoadedSnapshot {
    /// A generation whose header and payload passed their checks.
    fn checked(header: &ImageHeader, generation: Generation, bytes: Payload) -> Self {
        LoadedSnapshot {
            format_version: header.format_version,
            wal_lsn: header.wal_lsn,
            generation,
            bytes,
            chain: Vec::new(),
            links: Vec::new(),
            damaged_newer: Vec::new(),
        }
    }
}

/// What is wrong with one stored generation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageDamage {
    /// Payload chunks exist but the header entry does not.
    #[error("header is missing")]
    MissingHeader,
    /// The header entry has the wrong size.
    #[error("header is {found} bytes long")]
    HeaderLength {
        /// Its actual size.
        found: usize,
    },
    /// The header does not start with `GRIDDSNP`.
    #[error("header magic is wrong")]
    BadMagic,
    /// The header's own checksum does not match.
    #[error("header checksum mismatch")]
    HeaderCrc,
    /// A payload chunk is missing (chunks must be numbered 0, 1, 2, ...).
    #[error("payload chunk {index} is missing")]
    MissingChunk {
        /// The first missing chunk number.
        index: u64,
    },
    /// The chunks add up to a different length than the header says.
    #[error("payload is {found} bytes, header says {expected}")]
    LengthMismatch {
        /// Length recorded in the header.
        expected: u64,
        /// Length found (at least this much, when the chunks run over).
        found: u64,
    },
    /// A generation of its chain is missing or damaged, or the chain is too long.
    #[error("its base generation {base} is missing or damaged")]
    BaseDamaged {
        /// The base generation.
        base: u64,
    },
    /// The payload checksum does not match the header.
    #[error("payload checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    PayloadCrc {
        /// Checksum recorded in the header.
        stored: u32,
        /// Checksum of the bytes read.
        computed: u32,
    },
}

/// Errors of a snapshot store.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// sled failed (I/O or its own corruption check); nothing can be said about the images.
    #[error("snapshot storage error: {0}")]
    Storage(#[from] sled::Error),
    /// A snapshot file could not be read or written.
    #[error("snapshot file error: {0}")]
    Io(String),
    /// Keys must be non-empty.
    #[error("snapshot key must not be empty")]
    EmptyKey,
    /// One generation failed its checks.
    #[error("snapshot {key} generation {generation} is damaged: {damage}")]
    Damaged {
        /// The snapshot key.
        key: String,
        /// The damaged generation.
        generation: Generation,
        /// What is wrong with it.
        damage: ImageDamage,
    },
    /// A `put` read its image back and got different (yet self-consistent) content.
    #[error("snapshot {key} generation {generation} read back differently than written")]
    ReadBackMismatch {
        /// The snapshot key.
        key: String,
        /// The generation just written (it has been removed again).
        generation: Generation,
    },
    /// `load_latest` found generations for the key but every one is damaged.
    #[error("no intact snapshot of {key}: {}", describe(.damaged))]
    NoIntactGeneration {
        /// The snapshot key.
        key: String,
        /// Each generation tried, newest first, with its damage.
        damaged: Vec<(Generation, ImageDamage)>,
    },
}

fn describe(damaged: &[(Generation, ImageDamage)]) -> String {
    let parts: Vec<String> = damaged
        .iter()
        .map(|(generation, damage)| format!("generation {generation}: {damage}"))
        .collect();
    parts.join("; ")
}

/// Storage of snapshot images, two generations per key.
pub trait SnapshotStore: Send + Sync {
    /// Stores `image` as a new generation of `key`: writes it, flushes, reads it back and verifies
    /// it, and only then deletes every generation older than the previous one.
    fn put(&self, key: &str, image: &SnapshotImage) -> Result<Generation, SnapshotError>;

    /// Whether generations may borrow from a base (`put_streamed`'s `base`).
    fn keeps_bases(&self) -> bool {
        false
    }

    /// `put` of an image that `write` produces into the store's writer, so that a large image
    /// is never held whole in memory (the default collects it first). An error of `write`
    /// stores nothing. With a `base` (a stored generation whose chain is intact and shorter
    /// than `MAX_LINKS`), the image borrows sections of that generation and of its chain: a
    /// load hands every payload of the chain over, and each is kept as long as a kept
    /// generation's chain holds it.
    fn put_streamed(
        &self,
        key: &str,
        format_version: u32,
        wal_lsn: u64,
        base: Option<Generation>,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<Generation, SnapshotError> {
        if base.is_some() {
            return Err(SnapshotError::Io("this store keeps whole images only".to_owned()));
        }
        let mut bytes = Vec::new();
        write(&mut bytes).map_err(|e| SnapshotError::Io(e.to_string()))?;
        self.put(key, &SnapshotImage { format_version, wal_lsn, bytes })
    }

    /// The newest generation of `key` that passes every check, falling back to older ones (with a
    /// warning). `Ok(None)` when the key has no generation at all;
    /// [`SnapshotError::NoIntactGeneration`] when it has some but all are damaged.
    fn load_latest(&self, key: &str) -> Result<Option<LoadedSnapshot>, SnapshotError>;

    /// Generations of `key` that have a header entry, oldest first.
    fn generations(&self, key: &str) -> Result<Vec<GenerationInfo>, SnapshotError>;

    /// Removes every generation of `key` (durable after the next [`SnapshotStore::flush`]).
    fn delete(&self, key: &str) -> Result<(), SnapshotError>;

    /// Makes every completed change durable.
    fn flush(&self) -> Result<(), SnapshotError>;
}
