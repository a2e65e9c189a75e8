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
use std::io::{self, Write};

use rkyv::api::high::HighSerializer;
use rkyv::rancor;
use rkyv::ser::allocator::ArenaHandle;
use rkyv::{Archive, Deserialize, Serialize};

use super::{
    column_cells, load_columns, pack, restore_archived_stamps, ArchivedHistoryChunkImage, CellsRef,
    ColumnCells, GoneKeyImage, HistoryChunkImage, MergeBaseImage,
};
use crate::grid::history::{ChunkPart, History, NO_ENTRY};
use crate::grid::ops::GridState;
use crate::grid::schema::Schema;
use crate::grid::store::{
    CellRef, ChunkHandle, ColumnBuilder, ColumnSlot, ColumnStore, LoadedRecord, RecordIdentity,
    RowId,
};
use crate::grid::value::StorageKind;

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

/// Writes sections to `out`, each on a 16-byte boundary, and the table at the end; borrows the
/// sections of unchanged chunks from `base`'s chain, and notes where every chunk's sections lie
/// in `index`.
struct SectionWriter<'w> {
    out: &'w mut dyn Write,
    at: u64,
    table: Vec<(u64, u64)>,
    /// The last section's encoding buffer, reused.
    buffer: Vec<u8>,
    base: Option<&'w ImageIndex>,
    index: ImageIndex,
    borrowed: u64,
}

impl<'w> SectionWriter<'w> {
    fn new(out: &'w mut dyn Write, epoch: u64, base: Option<&'w ImageIndex>) -> Self {
        let base = base.filter(|b| b.epoch == epoch && b.chain.len() < MAX_LINKS);
        let chain = base.map_or_else(Vec::new, |b| b.chain.clone());
        SectionWriter {
            out,
            at: 0,
            table: Vec::new(),
            buffer: Vec::new(),
            base,
            index: ImageIndex { epoch, chunks: HashMap::new(), chain, referenced: 0 },
            borrowed: 0,
        }
    }

    /// The table entry of a section of the chain: its offset marked with its image's link.
    fn link(&self, placed: Placed) -> Option<(u64, u64)> {
        let link = self.base?.chain.iter().position(|&g| g == placed.home)?;
        let mark = IN_CHAIN | (link as u64) << LINK_SHIFT;
        (placed.offset <= OFFSET_MASK).then_some((placed.offset | mark, placed.len))
    }

    fn section(
        &mut self,
        value: &impl for<'a> Serialize<HighSerializer<Vec<u8>, ArenaHandle<'a>, rancor::Error>>,
    ) -> io::Result<()> {
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.clear();
        let bytes = rkyv::api::high::to_bytes_in::<_, rancor::Error>(value, buffer)
            .map_err(|e| io::Error::other(format!("encoding a section: {e}")))?;
        let pad = self.at.next_multiple_of(16) - self.at;
        self.out.write_all(&[0u8; 16][..pad as usize])?;
        self.at += pad;
        self.out.write_all(&bytes)?;
        self.table.push((self.at, bytes.len() as u64));
        self.at += bytes.len() as u64;
        // A large section's buffer is not kept for the small ones after it.
        if bytes.capacity() <= 8 << 20 {
            self.buffer = bytes;
        }
        Ok(())
    }

    /// The sections of one chunk: borrowed from the base when the chunk's handles and live
    /// rows are what the base's were, else written by `write`. Returns how many there are.
    fn chunk(
        &mut self,
        key: ChunkKey,
        handles: Vec<ChunkHandle>,
        live: u64,
        write: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<u32> {
        let borrowed = self.borrowable(key, &handles, live);
        self.place(key, handles, live, borrowed, write)
    }

    /// The sections the base holds for `key` and their table entries, when the chunk's
    /// handles and live rows are what the base's were.
    fn borrowable(
        &self,
        key: ChunkKey,
        handles: &[ChunkHandle],
        live: u64,
    ) -> Option<(Vec<Placed>, Vec<TableEntry>)> {
        let unchanged = self.base.and_then(|base| base.chunks.get(&key)).filter(|b| {
            b.live == live
                && b.handles.len() == handles.len()
                && b.handles.iter().zip(handles).all(|(a, b)| a.same(b))
        })?;
        // Every section must lie in an image of the chain (an index made before its image
        // was stored has sections nowhere yet): else the chunk is written again.
        let entries =
            unchanged.sections.iter().map(|&placed| self.link(placed)).collect::<Option<_>>()?;
        Some((unchanged.sections.clone(), entries))
    }

    /// `chunk` with what `borrowable` found for it (`None`: written by `write`).
    fn place(
        &mut self,
        key: ChunkKey,
        handles: Vec<ChunkHandle>,
        live: u64,
        borrowed: Option<(Vec<Placed>, Vec<TableEntry>)>,
        write: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<u32> {
        if let Some((sections, entries)) = borrowed {
            for entry in entries {
                self.table.push(entry);
                self.borrowed += entry.1;
            }
            let count = sections.len() as u32;
            self.index.chunks.insert(key, Borrowable { handles, live, sections });
            return Ok(count);
        }
        let first = self.table.len();
        write(self)?;
        let sections: Vec<Placed> = self.table[first..]
            .iter()
            .map(|&(offset, len)| Placed { home: PENDING, offset, len })
            .collect();
        let count = sections.len() as u32;
        self.index.chunks.insert(key, Borrowable { handles, live, sections });
        Ok(count)
    }

    fn finish(self) -> io::Result<WrittenImage> {
        let mut tail = Vec::with_capacity(self.table.len() * 16 + 16);
        for (offset, len) in &self.table {
            tail.extend_from_slice(&offset.to_le_bytes());
            tail.extend_from_slice(&len.to_le_bytes());
        }
        tail.extend_from_slice(&(self.table.len() as u64).to_le_bytes());
        tail.extend_from_slice(&MAGIC);
        self.out.write_all(&tail)?;
        self.out.flush()?;
        let index = ImageIndex { referenced: self.at + self.borrowed, ..self.index };
        Ok(WrittenImage {
            index,
            on_base: self.base.is_some(),
            written: self.at,
            borrowed: self.borrowed,
        })
    }
}

/// How many of `rows` the next part takes: at least one, at most `limits.rows`, ending at the
/// first row that takes the part's bytes to `limits.bytes`.
fn cut(rows: &[RowId], limits: PartLimits, mut bytes: impl FnMut(RowId) -> usize) -> usize {
    let mut total = 0usize;
    for (i, row) in rows.iter().take(limits.rows).enumerate() {
        total += bytes(*row);
        if total >= limits.bytes {
            return i + 1;
        }
    }
    rows.len().min(limits.rows)
}

/// The text bytes of one cell.
fn cell_bytes(store: &ColumnStore, row: RowId, slot: ColumnSlot) -> usize {
    match store.value_ref(row, slot) {
        CellRef::Text(s) => s.len(),
        CellRef::List(items) => items.map(|item| item.len() + 8).sum(),
        _ => 0,
    }
}

/// Writes `rows` as parts cut by `limits`, each made by `part`.
fn parts<T>(
    w: &mut SectionWriter<'_>,
    rows: &[RowId],
    limits: PartLimits,
    mut bytes: impl FnMut(RowId) -> usize,
    mut part: impl FnMut(&[RowId]) -> T,
) -> io::Result<()>
where
    T: for<'a> Serialize<HighSerializer<Vec<u8>, ArenaHandle<'a>, rancor::Error>>,
{
    let mut start = 0;
    while start < rows.len() {
        let n = cut(&rows[start..], limits, &mut bytes);
        w.section(&part(&rows[start..start + n]))?;
        start += n;
    }
    Ok(())
}

/// The lengths of the parts `rows` is cut into by `limits`.
fn cuts(rows: &[RowId], limits: PartLimits, mut bytes: impl FnMut(RowId) -> usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let n = cut(&rows[start..], limits, &mut bytes);
        out.push(n);
        start += n;
    }
    out
}

impl GridState {
    /// Writes the branch as a format 6 payload to `out`, one section at a time, cut along the
    /// store's chunks. With a `base` (the index of the branch's newest stored image, which the
    /// new image's header must name as its base), the sections of chunks not written since are
    /// borrowed from its chain instead of written.
    pub fn write_image(
        &self,
        limits: PartLimits,
        base: Option<&ImageIndex>,
        out: &mut dyn Write,
    ) -> io::Result<WrittenImage> {
        let store = &self.store;
        let mut w = SectionWriter::new(out, store.epoch(), base);
        let chunks = store.chunk_count();
        let live: Vec<u64> = (0..chunks).map(|k| store.live_in_chunk(k)).collect();
        let mut record_parts = 0u32;
        for (k, &live) in live.iter().enumerate() {
            let handles = store.record_chunk_handles(k);
            record_parts += w.chunk(ChunkKey::Records(k), handles, live, |w| {
                let rows: Vec<RowId> = store.live_rows_of_chunk(k).collect();
                let bytes =
                    |r| store.id(r).len() + store.path(r).len() + store.modified_by(r).len();
                parts(w, &rows, limits, bytes, |part| RecordsPart {
                    ids: part.iter().map(|r| store.id(*r).to_owned()).collect(),
                    paths: part.iter().map(|r| store.path(*r).to_owned()).collect(),
                    times: part.iter().map(|r| store.modified_time(*r)).collect(),
                    users: part.iter().map(|r| store.modified_by(*r).to_owned()).collect(),
                    created: part.iter().map(|r| store.created_at(*r)).collect(),
                    moved: part.iter().map(|r| store.moved_at(*r)).collect(),
                    heads: part.iter().map(|r| store.history_head(*r)).collect(),
                })
            })?;
        }
        let mut columns = Vec::new();
        for column in &self.schema.columns {
            let Some(&slot) = self.slots.get(&column.id) else { continue };
            let mut count = 0u32;
            for (k, &live) in live.iter().enumerate() {
                if live == 0 {
                    continue;
                }
                let cells_key = ChunkKey::Cells(slot, k);
                let cells_handles: Vec<ChunkHandle> =
                    store.column_cells_handle(slot, k).into_iter().collect();
                let cells = w.borrowable(cells_key, &cells_handles, live);
                // The statuses' section says how many cell parts follow, so it is borrowed only
                // with them.
                let key = ChunkKey::Column(slot, k);
                let handles: Vec<ChunkHandle> =
                    store.column_chunk_handle(slot, k).into_iter().collect();
                let meta = cells.as_ref().and_then(|_| w.borrowable(key, &handles, live));
                // Rows and cuts only for what is written (an unchanged chunk needs neither).
                let rows: Vec<RowId> = match (&cells, &meta) {
                    (Some(_), Some(_)) => Vec::new(),
                    _ => store.live_rows_of_chunk(k).collect(),
                };
                let cuts = match &cells {
                    Some(_) => Vec::new(),
                    None => cuts(&rows, limits, |r| cell_bytes(store, r, slot)),
                };
                let cell_parts = cells.as_ref().map_or(cuts.len(), |(sections, _)| sections.len());
                let cell_parts = u32::try_from(cell_parts)
                    .map_err(|_| io::Error::other("too many parts in a chunk"))?;
                count += w.place(key, handles, live, meta, |w| {
                    w.section(&ColumnMetaPart {
                        cell_parts,
                        statuses: rows
                            .iter()
                            .map(|r| {
                                pack(
                                    store.dependency_status(*r, slot),
                                    store.source_status(*r, slot),
                                    store.is_mt(*r, slot),
                                )
                            })
                            .collect(),
                        versions: rows.iter().map(|r| store.version(*r, slot)).collect(),
                    })
                })?;
                count += w.place(cells_key, cells_handles, live, cells, |w| {
                    let mut start = 0;
                    for n in cuts {
                        let part = &rows[start..start + n];
                        w.section(&ColumnCellsPart { cells: column_cells(store, slot, part) })?;
                        start += n;
                    }
                    Ok(())
                })?;
            }
            columns.push(ColumnHead { id: column.id.clone(), parts: count });
        }
        let history = &self.history;
        for i in 0..history.chunk_count() {
            let write = |w: &mut SectionWriter<'_>| {
                let c = history.chunk_part(i)?;
                w.section(&HistoryChunkImage {
                    len: c.len,
                    block: c.block,
                    ends: c.ends,
                    data: c.data,
                })
            };
            match history.sealed_handle(i) {
                Some(handle) => {
                    w.chunk(ChunkKey::History(i), vec![handle], 1, write)?;
                }
                None => write(&mut w)?,
            }
        }
        let mut merge_bases: Vec<MergeBaseImage> = self
            .merge_bases
            .iter()
            .map(|(id, base)| MergeBaseImage {
                source_branch_id: id.clone(),
                source: base.source,
                destination: base.destination,
            })
            .collect();
        merge_bases.sort_by(|a, b| a.source_branch_id.cmp(&b.source_branch_id));
        w.section(&BranchHead {
            schema_json: serde_json::to_string(&self.schema)
                .map_err(|e| io::Error::other(format!("encoding the schema: {e}")))?,
            by_path: store.identity() == RecordIdentity::PathAndId,
            rows: live.iter().sum(),
            clock: store.clock(),
            merge_bases,
            gone: store
                .gone()
                .map(|g| GoneKeyImage { clock: g.clock, path: g.path.clone(), id: g.id.clone() })
                .collect(),
            record_parts,
            columns,
            history_chunks: u32::try_from(history.chunk_count())
                .map_err(|_| io::Error::other("too many history chunks"))?,
            retired: history.retired().collect(),
            history_count: history.entry_count(),
        })?;
        w.finish()
    }

    /// The branch as a whole format 6 payload in memory (tests, fixtures; snapshots stream
    /// `write_image` to their file).
    pub fn encode_image(&self, limits: PartLimits) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        self.write_image(limits, None, &mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }

    /// `decode_sections` of payloads in memory (on a 16-byte boundary): tests and benches.
    pub fn decode_image(bytes: &[u8], chain: &[&[u8]]) -> Result<GridState, String> {
        let chain: Vec<&dyn SectionSource> =
            chain.iter().map(|b| b as &dyn SectionSource).collect();
        GridState::decode_sections(&bytes, &chain)
    }

    /// Rebuilds a branch from a format 6 payload and, for an image that borrows sections, the
    /// payloads of its chain (link 0 first), read a section at a time (a snapshot file's: the
    /// load holds the sections of the columns being built, not the whole image). Every section
    /// is validated before it is read; an inconsistent image is an error, never a panic.
    pub fn decode_sections(
        payload: &dyn SectionSource,
        chain: &[&dyn SectionSource],
    ) -> Result<GridState, String> {
        GridState::decode_indexed(payload, chain, None).map(|(state, _)| state)
    }

    /// `decode_sections`, and with the generations of the payload and of its chain
    /// (`generations`: the payload's first, then link 0's, ...) the index of the loaded branch
    /// as that image (`ImageIndex`): the next snapshot borrows from the loaded chain every chunk
    /// not written since, as it would from an image this process wrote. A chunk is indexed only
    /// where the image's parts line up with the loaded store's chunks (all of them, unless
    /// deletes left chunks short when the image was written).
    pub fn decode_indexed(
        payload: &dyn SectionSource,
        chain: &[&dyn SectionSource],
        generations: Option<&[u64]>,
    ) -> Result<(GridState, Option<ImageIndex>), String> {
        GridState::decode_format(Format::StatusesApart, payload, chain, generations)
    }

    /// `decode_sections` of a format 5 payload (each column part holding its cells, statuses
    /// and versions together).
    pub fn decode_sections_v5(
        payload: &dyn SectionSource,
        chain: &[&dyn SectionSource],
    ) -> Result<GridState, String> {
        GridState::decode_format(Format::Together, payload, chain, None).map(|(state, _)| state)
    }

    fn decode_format(
        format: Format,
        payload: &dyn SectionSource,
        chain: &[&dyn SectionSource],
        generations: Option<&[u64]>,
    ) -> Result<(GridState, Option<ImageIndex>), String> {
        let sources = Sources { payload, chain };
        let table = section_table(payload, chain)?;
        let (head, parts) = table.split_last().ok_or("a sectioned image without a head")?;
        let head_bytes = sources.read(*head)?;
        let head = access::<ArchivedBranchHead>(&head_bytes, "head")?;
        let record_parts = head.record_parts.to_native() as usize;
        let column_parts: usize = head.columns.iter().map(|c| c.parts.to_native() as usize).sum();
        let history_chunks = head.history_chunks.to_native() as usize;
        if parts.len() != record_parts + column_parts + history_chunks {
            return Err(format!(
                "{} sections for {record_parts} record parts, {column_parts} column parts and \
                 {history_chunks} history chunks",
                parts.len()
            ));
        }
        let (record_sections, rest) = parts.split_at(record_parts);
        let (column_sections, history_sections) = rest.split_at(column_parts);
        let n = usize::try_from(head.rows.to_native()).map_err(|_| "too many records")?;
        let schema: Schema =
            serde_json::from_str(head.schema_json.as_str()).map_err(|e| format!("schema: {e}"))?;
        let mut state = GridState::with_schema(schema, head.by_path);

        // History is loaded on a thread of its own while the records and columns are (each
        // chunk read, spilled and dropped in turn); the records' chain heads are checked
        // against it after, by the furthest one.
        let load_history = || {
            let began = std::time::Instant::now();
            let mut scratch = Scratch::new();
            let chunks = history_sections.iter().map(|&at| {
                let read = sources.read_all(&[at], &mut scratch)?;
                let c = access::<ArchivedHistoryChunkImage>(read[0], "history chunk")?;
                Ok(ChunkPart {
                    len: c.len.to_native(),
                    block: c.block.to_native(),
                    ends: c.ends.iter().map(|e| e.to_native()).collect(),
                    data: c.data.as_slice().to_vec(),
                })
            });
            let retired = head.retired.iter().map(|r| r.to_native()).collect();
            let history = History::from_chunks(chunks, retired, head.history_count.to_native());
            tracing::debug!(ms = began.elapsed().as_millis() as u64, "image history loaded");
            history
        };

        let mut images: Vec<(ColumnSlot, StoredColumn)> = Vec::new();
        let mut rest = column_sections;
        for column in head.columns.iter() {
            let (mine, after) = rest.split_at(column.parts.to_native() as usize);
            rest = after;
            if let Some(&slot) = state.slots.get(column.id.as_str()) {
                images.push((slot, (column.id.as_str(), mine)));
            }
        }
        // The sections and records of each group of parts a column was read from, by column
        // id (`ImageIndex` lines groups up with chunks by them).
        let column_rows = std::sync::Mutex::new(Vec::<(String, Vec<Group>)>::new());
        let column_lists: Vec<(ColumnSlot, &[SectionAt])> =
            images.iter().map(|&(slot, (_, sections))| (slot, sections)).collect();
        let build = |(id, sections): StoredColumn, kind, localized, scratch: &mut Scratch| {
            let (column, rows) =
                build_column(format, id, sections, &sources, kind, localized, n, scratch)?;
            column_rows.lock().unwrap_or_else(|e| e.into_inner()).push((id.to_owned(), rows));
            Ok(column)
        };
        let began = std::time::Instant::now();
        let mut furthest: Option<u64> = None;
        let mut record_rows: Vec<Group> = Vec::with_capacity(record_sections.len());
        let records = |store: &mut ColumnStore| {
            let mut scratch = Scratch::new();
            // Room for the records the head claims, as far as the parts' bytes can hold them
            // (an archived record takes more than 8 bytes): a damaged head reserves nothing
            // unreasonable.
            let record_bytes: usize = record_sections.iter().map(|at| at.len).sum();
            store.reserve_records(n.min(record_bytes / 8));
            let mut inserted = 0usize;
            // Every key goes into the id index at the end, shard by shard.
            let mut keys = Vec::with_capacity(n.min(record_bytes / 8));
            for &at in record_sections {
                let read = sources.read_all(&[at], &mut scratch)?;
                let part = access::<ArchivedRecordsPart>(read[0], "record part")?;
                let len = part.ids.len();
                let lengths = [
                    part.paths.len(),
                    part.times.len(),
                    part.users.len(),
                    part.created.len(),
                    part.moved.len(),
                    part.heads.len(),
                ];
                if lengths.iter().any(|&l| l != len) {
                    return Err("a record part's lists have different lengths".to_owned());
                }
                inserted += len;
                if inserted > n {
                    return Err("the record parts add up to more than the head's records".into());
                }
                record_rows.push(Group { sections: 1, rows: len });
                let heads = part.heads.iter().map(|at| at.to_native()).filter(|&at| at != NO_ENTRY);
                furthest = furthest.max(heads.max());
                for i in 0..len {
                    let record = LoadedRecord {
                        id: part.ids[i].as_str(),
                        path: part.paths[i].as_str(),
                        time_ms: part.times[i].to_native(),
                        user: part.users[i].as_str(),
                        created: part.created[i].to_native(),
                        moved: part.moved[i].to_native(),
                        history_head: part.heads[i].to_native(),
                    };
                    store.insert_loaded(&record, &mut keys);
                }
            }
            if inserted != n {
                return Err("the record parts do not add up to the head's records".to_owned());
            }
            store.index_loaded_keys(keys);
            tracing::debug!(ms = began.elapsed().as_millis() as u64, "image records inserted");
            Ok(())
        };
        let (history, loaded) = std::thread::scope(|scope| {
            let helper = std::thread::Builder::new()
                .name("image-history".into())
                .spawn_scoped(scope, load_history);
            let loaded = load_columns(&mut state, n, images, build, records);
            let history = match helper {
                Ok(helper) => {
                    helper.join().unwrap_or_else(|_| Err("loading the history panicked".to_owned()))
                }
                Err(_) => load_history(),
            };
            (history, loaded)
        });
        loaded?;
        let history = history?;
        tracing::debug!(ms = began.elapsed().as_millis() as u64, "image columns built");
        if let Some(bad) = furthest.filter(|&at| !history.holds(at)) {
            return Err(format!("a history chain starts outside the log ({bad:#x})"));
        }
        restore_archived_stamps(&mut state, head.clock.to_native(), &head.gone, &head.merge_bases);
        state.history = history;
        // Only an image of the format this build writes is borrowed from.
        let generations = generations.filter(|_| format == Format::StatusesApart);
        let index = generations.map(|generations| {
            let column_rows = column_rows.into_inner().unwrap_or_else(|e| e.into_inner());
            let columns = column_rows.into_iter().filter_map(|(id, rows)| {
                let &slot = state.slots.get(&id)?;
                let &(_, sections) = column_lists.iter().find(|(s, _)| *s == slot)?;
                Some((slot, sections, rows))
            });
            let parts = LoadedParts {
                records: (record_sections, &record_rows),
                columns: columns.collect(),
                history: history_sections,
            };
            let mut index = parts.index(&state, generations);
            index.referenced = table.iter().map(|at| at.len as u64).sum();
            index
        });
        Ok((state, index))
    }
}

/// How the columns of a sectioned image are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Format 5: each column part holds its cells, statuses and versions.
    Together,
    /// Format 6: per chunk, a `ColumnMetaPart` and then its `ColumnCellsPart`s.
    StatusesApart,
}

/// Consecutive sections a load read as one unit (a record part; a format 6 column's statuses
/// with its cells' parts), and how many records they hold.
#[derive(Debug, Clone, Copy)]
struct Group {
    sections: usize,
    rows: usize,
}

/// The sections a load read, in groups (`GridState::decode_indexed`).
struct LoadedParts<'a> {
    records: (&'a [SectionAt], &'a [Group]),
    columns: Vec<(ColumnSlot, &'a [SectionAt], Vec<Group>)>,
    history: &'a [SectionAt],
}

impl LoadedParts<'_> {
    /// The index of `state`, just loaded from these sections of the images `generations`
    /// (format 6).
    fn index(&self, state: &GridState, generations: &[u64]) -> ImageIndex {
        let store = &state.store;
        let place = |at: &SectionAt| {
            let home = generations.get(at.link.map_or(0, |link| link + 1)).copied()?;
            Some(Placed { home, offset: at.offset, len: at.len as u64 })
        };
        let placed = |sections: &[SectionAt]| sections.iter().map(place).collect::<Option<_>>();
        let mut chunks = HashMap::new();
        let (sections, groups) = self.records;
        for (k, mine, _) in by_chunk(store, sections, groups) {
            let Some(sections) = placed(mine) else { continue };
            let handles = store.record_chunk_handles(k);
            let live = store.live_in_chunk(k);
            chunks.insert(ChunkKey::Records(k), Borrowable { handles, live, sections });
        }
        for (slot, sections, groups) in &self.columns {
            for (k, mine, group_count) in by_chunk(store, sections, groups) {
                // One chunk's statuses and then its cells; a chunk loaded from two (left short
                // by deletes) is written again.
                let ([meta, cells @ ..], 1) = (mine, group_count) else { continue };
                let (Some(meta), Some(cells)) = (placed(std::slice::from_ref(meta)), placed(cells))
                else {
                    continue;
                };
                let live = store.live_in_chunk(k);
                let handles = store.column_chunk_handle(*slot, k).into_iter().collect();
                let key = ChunkKey::Column(*slot, k);
                chunks.insert(key, Borrowable { handles, live, sections: meta });
                let handles = store.column_cells_handle(*slot, k).into_iter().collect();
                let key = ChunkKey::Cells(*slot, k);
                chunks.insert(key, Borrowable { handles, live, sections: cells });
            }
        }
        for (i, at) in self.history.iter().enumerate() {
            let (Some(handle), Some(placed)) = (state.history.sealed_handle(i), place(at)) else {
                continue;
            };
            let sections = vec![placed];
            chunks.insert(
                ChunkKey::History(i),
                Borrowable { handles: vec![handle], live: 1, sections },
            );
        }
        ImageIndex { epoch: store.epoch(), chunks, chain: generations.to_vec(), referenced: 0 }
    }
}

/// The sections that make up each of the store's chunks (whole `groups` of them, and how many
/// groups), for the chunks whose rows begin and end where groups do, up to the first that does
/// not.
fn by_chunk<'s>(
    store: &ColumnStore,
    sections: &'s [SectionAt],
    groups: &[Group],
) -> Vec<(usize, &'s [SectionAt], usize)> {
    let mut out = Vec::new();
    let (mut next, mut covered, mut end, mut at) = (0usize, 0usize, 0usize, 0usize);
    for k in 0..store.chunk_count() {
        let (first_group, first) = (next, at);
        end += store.live_in_chunk(k) as usize;
        while covered < end && next < groups.len() {
            covered += groups[next].rows;
            at += groups[next].sections;
            next += 1;
        }
        if covered != end || at > sections.len() {
            break;
        }
        out.push((k, &sections[first..at], next - first_group));
    }
    out
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

/// Where one section lies: in the image's payload (`link` `None`) or in that of a link of its
/// chain, at an offset, of a length.
#[derive(Debug, Clone, Copy)]
struct SectionAt {
    link: Option<usize>,
    offset: u64,
    len: usize,
}

/// An image's payload and its chain's.
struct Sources<'a> {
    payload: &'a dyn SectionSource,
    chain: &'a [&'a dyn SectionSource],
}

impl<'a> Sources<'a> {
    fn source(&self, at: SectionAt) -> Result<&'a dyn SectionSource, String> {
        match at.link {
            None => Ok(self.payload),
            Some(link) => self.chain.get(link).copied().ok_or_else(|| {
                format!("a section lies in link {link} of a chain the image was not given")
            }),
        }
    }

    fn read(&self, at: SectionAt) -> Result<SectionBytes<'a>, String> {
        self.source(at)?.read_at(at.offset, at.len).map_err(|e| format!("reading a section: {e}"))
    }

    /// The sections `ats`: borrowed from payloads in memory, the others read into `scratch`
    /// (cleared first; each on a 16-byte boundary).
    fn read_all<'s>(
        &self,
        ats: &[SectionAt],
        scratch: &'s mut Scratch,
    ) -> Result<Vec<&'s [u8]>, String>
    where
        'a: 's,
    {
        /// Where a section's bytes are.
        enum Place<'m> {
            Memory(&'m [u8]),
            Scratch(std::ops::Range<usize>),
        }
        let fail = |e: io::Error| format!("reading a section: {e}");
        let mut places = Vec::with_capacity(ats.len());
        let total = ats.iter().map(|at| at.len.next_multiple_of(16)).sum::<usize>();
        // The buffer only grows: bytes left from earlier reads are overwritten, never zeroed
        // again (zeroing each section first cost a memset of the whole image per start).
        if scratch.len() < total {
            scratch.resize(total, 0);
        }
        let mut used = 0;
        for &at in ats {
            let source = self.source(at)?;
            if let Some(bytes) = source.in_memory() {
                places.push(Place::Memory(slice(bytes, at.offset, at.len).map_err(fail)?));
            } else {
                let range = used..used + at.len;
                source.read_exact_at(at.offset, &mut scratch[range.clone()]).map_err(fail)?;
                used = range.end.next_multiple_of(16);
                places.push(Place::Scratch(range));
            }
        }
        let scratch: &'s Scratch = scratch;
        Ok(places
            .into_iter()
            .map(|place| match place {
                Place::Memory(bytes) => bytes,
                Place::Scratch(range) => &scratch[range],
            })
            .collect())
    }
}

/// A column's id and its sections in an image.
type StoredColumn<'a> = (&'a str, &'a [SectionAt]);

/// One column of `n` cells from its parts' sections, read a group at a time into `scratch` (so
/// a load holds one chunk's parts of a column, not the column), each validated. Returns the
/// groups it read.
#[allow(clippy::too_many_arguments)]
fn build_column(
    format: Format,
    id: &str,
    sections: &[SectionAt],
    sources: &Sources<'_>,
    kind: StorageKind,
    localized: bool,
    n: usize,
    scratch: &mut Scratch,
) -> Result<(crate::grid::store::BuiltColumn, Vec<Group>), String> {
    let mut builder = ColumnBuilder::new(kind, localized, n);
    let mut groups = Vec::with_capacity(sections.len());
    let mut push = |cells: CellsRef<'_>| -> Result<usize, String> {
        cells.check(cells.len())?;
        for i in 0..cells.len() {
            let (value, version, status) = cells.cell(i)?;
            builder
                .push(&value, version, status, |rows| cells.arena_bytes(i, rows))
                .map_err(|e| format!("column {id}: {e}"))?;
        }
        Ok(cells.len())
    };
    let mut at = 0;
    while at < sections.len() {
        match format {
            Format::Together => {
                let read = sources.read_all(&sections[at..=at], scratch)?;
                let part = access::<ArchivedColumnPart>(read[0], "column part")?;
                let rows = push(CellsRef {
                    id,
                    cells: &part.cells,
                    statuses: part.statuses.as_slice(),
                    versions: part.versions.as_slice(),
                })?;
                groups.push(Group { sections: 1, rows });
                at += 1;
            }
            Format::StatusesApart => {
                // The statuses (a few bytes a record) in a buffer of their own, the cells they
                // describe into `scratch`.
                let meta_bytes = sources.read(sections[at])?;
                let meta = access::<ArchivedColumnMetaPart>(&meta_bytes, "column statuses")?;
                let cell_parts = meta.cell_parts.to_native() as usize;
                if cell_parts > sections.len() - at - 1 {
                    return Err(format!("column {id}: statuses before parts it does not have"));
                }
                let group = &sections[at..=at + cell_parts];
                let read = sources.read_all(&group[1..], scratch)?;
                let (statuses, versions) = (meta.statuses.as_slice(), meta.versions.as_slice());
                if versions.len() != statuses.len() {
                    return Err(format!("column {id} has the wrong number of versions"));
                }
                let mut rows = 0;
                for bytes in &read {
                    let part = access::<ArchivedColumnCellsPart>(bytes, "column cells")?;
                    let len = cells_len(&part.cells);
                    let end = rows + len;
                    if end > statuses.len() {
                        return Err(format!("column {id} has more cells than statuses"));
                    }
                    push(CellsRef {
                        id,
                        cells: &part.cells,
                        statuses: &statuses[rows..end],
                        versions: &versions[rows..end],
                    })?;
                    rows = end;
                }
                if rows != statuses.len() {
                    return Err(format!("column {id} has more statuses than cells"));
                }
                groups.push(Group { sections: group.len(), rows });
                at += group.len();
            }
        }
    }
    let column = builder.finish().map_err(|e| format!("column {id}: {e}"))?;
    Ok((column, groups))
}

/// How many cells archived `cells` holds (by its offsets' or values' count; `CellsRef::check`
/// checks the rest).
fn cells_len(cells: &super::ArchivedColumnCells) -> usize {
    use super::ArchivedColumnCells as Cells;
    match cells {
        Cells::Text { ends, .. } => ends.len(),
        Cells::Number(v) => v.len(),
        Cells::Boolean(v) => v.len(),
        Cells::Datetime(v) => v.len(),
        Cells::List { cell_ends, .. } => cell_ends.len(),
    }
}

/// The sections of a sectioned payload (borrowed ones in its chain's payloads), checked to lie
/// on 16-byte boundaries before their payload's table.
fn section_table(
    payload: &dyn SectionSource,
    chain: &[&dyn SectionSource],
) -> Result<Vec<SectionAt>, String> {
    let fail = || "the section table is damaged".to_owned();
    fn read(source: &dyn SectionSource, offset: u64, len: usize) -> Result<Vec<u8>, String> {
        let bytes = source.read_at(offset, len);
        bytes.map(|b| b.to_vec()).map_err(|e| format!("reading the section table: {e}"))
    }
    // The table's start and its entries' bytes.
    let table = |source: &dyn SectionSource, entries: bool| -> Result<(u64, Vec<u8>), String> {
        let n = source.payload_len();
        if n < 16 {
            return Err("not a sectioned image".to_owned());
        }
        let tail = read(source, n - 16, 16)?;
        if tail[8..] != MAGIC {
            return Err("not a sectioned image".to_owned());
        }
        let count = word(&tail, 0);
        let len = count.checked_mul(16).ok_or_else(fail)?;
        let start = (n - 16).checked_sub(len).ok_or_else(fail)?;
        if !entries {
            return Ok((start, Vec::new()));
        }
        let len = usize::try_from(len).map_err(|_| fail())?;
        Ok((start, read(source, start, len)?))
    };
    let (start, entries) = table(payload, true)?;
    // Where the sections of each link end, read when a section first lies there.
    let mut link_starts: Vec<Option<u64>> = vec![None; chain.len()];
    entries
        .chunks_exact(16)
        .map(|entry| {
            let (raw, len) = (word(entry, 0), word(entry, 8));
            let offset = raw & OFFSET_MASK;
            let link = (raw & IN_CHAIN != 0).then_some(((raw & !IN_CHAIN) >> LINK_SHIFT) as usize);
            let end_of_sections = match link {
                None if raw != offset => return Err(fail()),
                None => start,
                Some(link) => {
                    let known = link_starts.get_mut(link).ok_or_else(|| {
                        format!("a section lies in link {link} of a chain the image was not given")
                    })?;
                    match known {
                        Some(start) => *start,
                        None => *known.insert(table(chain[link], false)?.0),
                    }
                }
            };
            let end = offset.checked_add(len).ok_or_else(fail)?;
            if !offset.is_multiple_of(16) || end > end_of_sections {
                return Err(fail());
            }
            Ok(SectionAt { link, offset, len: usize::try_from(len).map_err(|_| fail())? })
        })
        .collect()
}

/// The little-endian u64 at `at` (inside `bytes`).
fn word(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// A validated archive of `T` in one section.
fn access<'a, T>(section: &'a [u8], what: &str) -> Result<&'a T, String>
where
    T: rkyv::Portable
        + for<'b> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'b, rancor::Error>>,
{
    rkyv::access::<T, rancor::Error>(section).map_err(|e| format!("{what}: validation: {e}"))
}

#[cfg(test)]
mod tests;
