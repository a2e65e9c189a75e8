//! Formats 5 and 6: a branch image as a sequence of sections, each its own rkyv archive. No
//! archive nears rkyv's 2 GiB offset limit whatever the branch's size, a snapshot is encoded and
//! written one section at a time (its memory is one section, not a copy of the branch), a load
//! validates and reads the sections of each column on the thread that builds the column, and
//! an image can borrow the sections of unchanged chunks from the images before it (its chain).
//!
//! Payload: the sections, each starting on a 16-byte boundary; then the table, one
//! (offset u64, length u64) per section; then the number of sections (u64) and `GRIDSECT`. An
//! offset's top byte says whose payload the section lies in: 0, this image's; `0x80 | k`, the
//! payload of link `k` of the image's chain (link 0 is the base its snapshot header names, link
//! 1 that image's base, and so on; images written before chains only ever used link 0). The
//! sections are, in order: the record parts (`RecordsPart`: ids, paths, times, users, stamps
//! and history heads of live records), each column's parts, the history log's chunks
//! (`HistoryChunkImage`), and last the head (`BranchHead`), which says how many parts each list
//! has. A column's parts are, in format 6 (written), for each storage chunk with live records:
//! its statuses and versions (`ColumnMetaPart`, which says how many cell parts follow) and its
//! cells (`ColumnCellsPart`s); in format 5 (still read), `ColumnPart`s holding all three.
//! Parts are cut along the store's chunks (the live rows of one chunk), further after
//! `PartLimits::rows` records or once their text passes `PartLimits::bytes`. So the sections of
//! a chunk depend on that chunk alone: every image notes what each chunk's sections were made
//! from and where they lie (`ImageIndex`: handles on the store's copy-on-write chunks, and on
//! a column chunk's cells apart, the chunk's live count, the image holding the sections), and
//! the next image whose chunk still has the same contents and live rows (and no compaction
//! renumbered rows since) points at those sections instead of writing them. So an image writes
//! only what changed since the image before it; a chunk whose statuses changed but not its
//! cells (a source edit marks every dependent column) writes its statuses alone. Sealed history
//! chunks never change; the open one and the head are always written.

use std::collections::HashMap;
use std::io;

use rkyv::rancor::{Fallible, Source};
use rkyv::string::{ArchivedString, StringResolver};
use rkyv::vec::ArchivedVec;
use rkyv::{Archive, Deserialize, Place, Serialize, SerializeUnsized};

use super::{ColumnCells, GoneKeyImage, MergeBaseImage};
use crate::grid::ops::GridState;
use crate::grid::store::{ChunkHandle, ColumnSlot};

/// Ends every sectioned payload.
const MAGIC: [u8; 8] = *b"GRIDSECT";

/// What the last section holds: everything but the records, cells and history chunks, and how
/// many sections each of those took.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct BranchHead {
    /// The schema as JSON (small; keeps the image independent of schema type layout).
    pub schema_json: String,
    pub by_path: bool,
    /// Live records.
    pub rows: u64,
    /// The branch's logical clock.
    pub clock: u32,
    pub merge_bases: Vec<MergeBaseImage>,
    /// Keys that stopped naming a record, with the clock when, oldest first.
    pub gone: Vec<GoneKeyImage>,
    pub record_parts: u32,
    /// The stored columns, in schema order, with how many parts each took.
    pub columns: Vec<ColumnHead>,
    pub history_chunks: u32,
    /// The chains of deleted records.
    pub retired: Vec<u64>,
    pub history_count: u64,
}

#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct ColumnHead {
    pub id: String,
    pub parts: u32,
}

/// Consecutive live records.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct RecordsPart {
    pub ids: Vec<String>,
    pub paths: Vec<String>,
    pub times: Vec<i64>,
    pub users: Vec<String>,
    /// The clock when each was inserted and when it last moved.
    pub created: Vec<u32>,
    pub moved: Vec<u32>,
    /// Where each one's history chain starts (`u64::MAX`: no entry).
    pub heads: Vec<u64>,
}

/// A `RecordsPart` as an image writes it: its ids, paths and editors borrowed from the store
/// rather than each copied into a string of its own first (3 allocations a record), archived
/// as exactly the `RecordsPart` of the same records is (a unit test compares the bytes).
#[derive(Archive, Serialize)]
#[rkyv(
    as = ArchivedRecordsPart,
    archive_bounds(Vec<StrRef<'a>>: Archive<Archived = ArchivedVec<ArchivedString>>)
)]
pub(super) struct RecordsPartRef<'a> {
    pub ids: Vec<StrRef<'a>>,
    pub paths: Vec<StrRef<'a>>,
    pub times: Vec<i64>,
    pub users: Vec<StrRef<'a>>,
    pub created: Vec<u32>,
    pub moved: Vec<u32>,
    pub heads: Vec<u64>,
}

/// A borrowed `str`, archived as a `String` is.
pub(super) struct StrRef<'a>(pub &'a str);

impl Archive for StrRef<'_> {
    type Archived = ArchivedString;
    type Resolver = StringResolver;

    fn resolve(&self, resolver: StringResolver, out: Place<ArchivedString>) {
        ArchivedString::resolve_from_str(self.0, resolver, out);
    }
}

impl<S> Serialize<S> for StrRef<'_>
where
    S: Fallible + ?Sized,
    S::Error: Source,
    str: SerializeUnsized<S>,
{
    fn serialize(&self, serializer: &mut S) -> Result<StringResolver, S::Error> {
        ArchivedString::serialize_from_str(self.0, serializer)
    }
}

/// A column's cells of consecutive live records.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct ColumnPart {
    pub cells: ColumnCells,
    /// Per record: dependency status | source status << 2 | machine-translated << 5.
    pub statuses: Vec<u8>,
    pub versions: Vec<u32>,
}

/// Format 6: the statuses and versions of a column's live records in one storage chunk,
/// followed in the image by the `cell_parts` sections of their cells (`ColumnCellsPart`). Kept
/// apart from the cells because they change more often: a source edit marks every dependent
/// column's status, and an image then rewrites these, not the text.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct ColumnMetaPart {
    pub cell_parts: u32,
    /// Per record: dependency status | source status << 2 | machine-translated << 5.
    pub statuses: Vec<u8>,
    pub versions: Vec<u32>,
}

/// Format 6: a column's cells of consecutive live records (their statuses and versions are in
/// the `ColumnMetaPart` before them).
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct ColumnCellsPart {
    pub cells: ColumnCells,
}

/// Where parts are cut.
#[derive(Debug, Clone, Copy)]
pub struct PartLimits {
    /// Records per part at most.
    pub rows: usize,
    /// A part ends at the first record that takes its text past this many bytes.
    pub bytes: usize,
}

impl PartLimits {
    /// What snapshots use: at most 65,536 rows (a part never spans two of the store's 8,192-row
    /// chunks, so in effect a chunk), and 64 MiB of text.
    pub const DEFAULT: PartLimits = PartLimits { rows: 65_536, bytes: 64 << 20 };
}

/// Marks a table entry whose section lies in a payload of the image's chain; the link's number
/// is in the seven bits under it (`LINK_SHIFT`).
const IN_CHAIN: u64 = 1 << 63;
const LINK_SHIFT: u32 = 56;
/// The offset bits of a table entry.
const OFFSET_MASK: u64 = (1 << LINK_SHIFT) - 1;

/// Links an image's chain may have: the images its table can reach besides its own.
pub const MAX_LINKS: usize = 128;

/// What a run of sections was made from: a storage chunk of the records or of a column, or a
/// sealed history chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ChunkKey {
    Records(usize),
    /// A column's chunk: its statuses and versions (which change with its cells too).
    Column(ColumnSlot, usize),
    /// A column's chunk: its cells alone.
    Cells(ColumnSlot, usize),
    History(usize),
}

/// Where one section an image wrote lies: in the payload of image `home` (a snapshot
/// generation; `PENDING`: the image being written, until it is stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Placed {
    home: u64,
    offset: u64,
    len: u64,
}

/// A section's entry in an image's table: its offset (marked with its link when it lies in the
/// chain) and its length.
type TableEntry = (u64, u64);

/// The home of the sections of an image not yet stored.
const PENDING: u64 = 0;

/// The sections of one chunk, with handles on what they were made from.
struct Borrowable {
    handles: Vec<ChunkHandle>,
    live: u64,
    sections: Vec<Placed>,
}

/// What an image's sections were made from and where they lie, so that the next image of the
/// branch can borrow the sections of every chunk not written since (`GridState::write_image`'s
/// `base`). It holds handles, not the chunks: it keeps no memory of the branch alive.
pub struct ImageIndex {
    epoch: u64,
    chunks: HashMap<ChunkKey, Borrowable>,
    /// The images the sections lie in, newest first: the image itself (once stored), then
    /// link 0 of its chain, link 1, ... An image written on this index has this as its chain.
    chain: Vec<u64>,
    /// Bytes of the sections the image holds or borrows (what a load of it uses).
    referenced: u64,
}

impl ImageIndex {
    /// Whether an image of `state` can borrow from this one: no compaction renumbered its rows
    /// since, and its chain can take one more link.
    pub fn fits(&self, state: &GridState) -> bool {
        self.epoch == state.store.epoch() && self.chain.len() < MAX_LINKS
    }

    /// The index of the image it was made by, now stored as generation `generation`.
    pub fn stored_as(mut self, generation: u64) -> ImageIndex {
        for borrowable in self.chunks.values_mut() {
            for placed in &mut borrowable.sections {
                if placed.home == PENDING {
                    placed.home = generation;
                }
            }
        }
        self.chain.insert(0, generation);
        self
    }

    /// The images of the chain, newest first (the stored image first).
    pub fn chain(&self) -> &[u64] {
        &self.chain
    }

    /// Bytes of the sections the image holds or borrows.
    pub fn referenced(&self) -> u64 {
        self.referenced
    }
}

/// What `write_image` wrote.
pub struct WrittenImage {
    /// Where the image's sections lie, for the next image to borrow from (`stored_as` once the
    /// image is stored).
    pub index: ImageIndex,
    /// Whether the image borrows from its base's chain (else it is whole).
    pub on_base: bool,
    /// Bytes of the sections written.
    pub written: u64,
    /// Bytes of the sections borrowed from the chain.
    pub borrowed: u64,
}

/// Where a sectioned payload is read from: bytes in memory, or a snapshot file read a section
/// at a time.
pub trait SectionSource: Sync {
    /// The payload's length in bytes.
    fn payload_len(&self) -> u64;

    /// The whole payload when it is in memory (sections are then borrowed, not read).
    fn in_memory(&self) -> Option<&[u8]>;

    /// Fills `out` with the bytes at `offset` (inside the payload).
    fn read_exact_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()>;

    /// `len` bytes at `offset`, borrowed or read into an aligned buffer of their own.
    fn read_at(&self, offset: u64, len: usize) -> io::Result<SectionBytes<'_>> {
        if let Some(bytes) = self.in_memory() {
            return slice_at(bytes, offset, len);
        }
        // At least one byte, so even an empty read has a real (aligned) allocation.
        let mut out = Scratch::with_capacity(len.max(1));
        out.resize(len, 0);
        self.read_exact_at(offset, &mut out)?;
        Ok(SectionBytes::Owned(out))
    }
}

/// An aligned buffer sections are read into, reused from one read to the next (a load's
/// allocations are then a few buffers as large as the largest column, not one per section).
pub type Scratch = rkyv::util::AlignedVec<16>;

/// Bytes of a section: borrowed from a payload in memory or read into an aligned buffer.
pub enum SectionBytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Scratch),
}

impl std::ops::Deref for SectionBytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            SectionBytes::Borrowed(bytes) => bytes,
            SectionBytes::Owned(bytes) => bytes,
        }
    }
}

impl SectionSource for &[u8] {
    fn payload_len(&self) -> u64 {
        self.len() as u64
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self)
    }

    fn read_exact_at(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        out.copy_from_slice(&slice_at(self, offset, out.len())?);
        Ok(())
    }
}

/// `len` bytes at `offset` of a payload in memory.
pub fn slice_at(bytes: &[u8], offset: u64, len: usize) -> io::Result<SectionBytes<'_>> {
    slice(bytes, offset, len).map(SectionBytes::Borrowed)
}

fn slice(bytes: &[u8], offset: u64, len: usize) -> io::Result<&[u8]> {
    usize::try_from(offset)
        .ok()
        .and_then(|start| bytes.get(start..start.checked_add(len)?))
        .ok_or_else(|| io::Error::other("a read past the payload's end"))
}

mod loaded;
mod read;
#[cfg(test)]
mod tests;
mod write;
