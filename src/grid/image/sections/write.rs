//! Writing an image: its sections cut along the store's chunks, each encoded and written in
//! turn, the sections of unchanged chunks borrowed from the base's chain (`SectionWriter`).

use std::collections::HashMap;
use std::io::{self, Write};

use rkyv::api::high::HighSerializer;
use rkyv::rancor;
use rkyv::ser::allocator::ArenaHandle;
use rkyv::Serialize;

use super::super::{column_cells, pack, unpack, GoneKeyImage, HistoryChunkImage};
use super::{
    Borrowable, BranchHead, ChunkKey, ColumnCellsPart, ColumnHead, ColumnMetaPart, ImageIndex,
    PartLimits, Placed, RecordsPartRef, StrRef, TableEntry, WrittenImage, IN_CHAIN, LINK_SHIFT,
    MAGIC, MAX_LINKS, OFFSET_MASK, PENDING,
};
use crate::grid::ops::GridState;
use crate::grid::store::{CellRef, ChunkHandle, ColumnSlot, ColumnStore, RecordIdentity, RowId};
use crate::grid::value::StorageKind;

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
pub(super) fn cut(
    rows: &[RowId],
    limits: PartLimits,
    mut bytes: impl FnMut(RowId) -> usize,
) -> usize {
    let mut total = 0usize;
    for (i, row) in rows.iter().take(limits.rows).enumerate() {
        total += bytes(*row);
        if total >= limits.bytes {
            return i + 1;
        }
    }
    rows.len().min(limits.rows)
}

/// The text bytes of one cell (none in a column of fixed-width values, which is not read).
fn cell_bytes(store: &ColumnStore, row: RowId, slot: ColumnSlot) -> usize {
    if !matches!(store.kind(slot), StorageKind::Text | StorageKind::List) {
        return 0;
    }
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
        let live: Vec<u64> = (0..store.chunk_count()).map(|k| store.live_in_chunk(k)).collect();
        let mut record_parts = 0u32;
        for (k, &live) in live.iter().enumerate() {
            record_parts += self.write_records(&mut w, k, live, limits)?;
        }
        let mut columns = Vec::new();
        for column in &self.schema.columns {
            let Some(&slot) = self.slots.get(&column.id) else { continue };
            let mut count = 0u32;
            for (k, &live) in live.iter().enumerate() {
                if live > 0 {
                    count += self.write_column_chunk(&mut w, slot, k, live, limits)?;
                }
            }
            columns.push(ColumnHead { id: column.id.clone(), parts: count });
        }
        self.write_history(&mut w)?;
        w.section(&self.head(live.iter().sum(), record_parts, columns)?)?;
        w.finish()
    }

    /// The record parts of storage chunk `k` (`live` records), written or borrowed; returns
    /// how many sections they take.
    fn write_records(
        &self,
        w: &mut SectionWriter<'_>,
        k: usize,
        live: u64,
        limits: PartLimits,
    ) -> io::Result<u32> {
        let store = &self.store;
        let handles = store.record_chunk_handles(k);
        w.chunk(ChunkKey::Records(k), handles, live, |w| {
            let rows = store.live_rows_of_chunk_vec(k, live);
            let bytes = |r| store.id(r).len() + store.path(r).len() + store.modified_by(r).len();
            parts(w, &rows, limits, bytes, |part| RecordsPartRef {
                ids: part.iter().map(|r| StrRef(store.id(*r))).collect(),
                paths: part.iter().map(|r| StrRef(store.path(*r))).collect(),
                times: part.iter().map(|r| store.modified_time(*r)).collect(),
                users: part.iter().map(|r| StrRef(store.modified_by(*r))).collect(),
                created: part.iter().map(|r| store.created_at(*r)).collect(),
                moved: part.iter().map(|r| store.moved_at(*r)).collect(),
                heads: part.iter().map(|r| store.history_head(*r)).collect(),
            })
        })
    }

    /// A column's parts of storage chunk `k` (`live` records): its statuses and versions, then
    /// its cells, each written or borrowed; returns how many sections they take.
    fn write_column_chunk(
        &self,
        w: &mut SectionWriter<'_>,
        slot: ColumnSlot,
        k: usize,
        live: u64,
        limits: PartLimits,
    ) -> io::Result<u32> {
        let store = &self.store;
        let cells_key = ChunkKey::Cells(slot, k);
        let cells_handles: Vec<ChunkHandle> =
            store.column_cells_handle(slot, k).into_iter().collect();
        let cells = w.borrowable(cells_key, &cells_handles, live);
        // The statuses' section says how many cell parts follow, so it is borrowed only with
        // them.
        let key = ChunkKey::Column(slot, k);
        let handles: Vec<ChunkHandle> = store.column_chunk_handle(slot, k).into_iter().collect();
        let meta = cells.as_ref().and_then(|_| w.borrowable(key, &handles, live));
        // Rows and cuts only for what is written (an unchanged chunk needs neither).
        let rows: Vec<RowId> = match (&cells, &meta) {
            (Some(_), Some(_)) => Vec::new(),
            _ => store.live_rows_of_chunk_vec(k, live),
        };
        // Text that cannot reach the byte limit is cut by rows alone, without reading a cell.
        let text_bound = store.text_bytes_bound(slot, k);
        let cuts = match &cells {
            Some(_) => Vec::new(),
            None if text_bound < limits.bytes => {
                rows.chunks(limits.rows.max(1)).map(<[RowId]>::len).collect()
            }
            None => cuts(&rows, limits, |r| cell_bytes(store, r, slot)),
        };
        let cell_parts = cells.as_ref().map_or(cuts.len(), |(sections, _)| sections.len());
        let cell_parts =
            u32::try_from(cell_parts).map_err(|_| io::Error::other("too many parts in a chunk"))?;
        let mut count = w.place(key, handles, live, meta, |w| {
            w.section(&ColumnMetaPart {
                cell_parts,
                // Each byte as `pack` writes it: a byte loaded from an image is kept as it was
                // stored, odd bits and all, and the image written after it leaves them out.
                statuses: store
                    .status_bytes_ascending(&rows, slot)
                    .into_iter()
                    .map(|byte| {
                        let (dependency, source, mt) = unpack(byte);
                        pack(dependency, source, mt)
                    })
                    .collect(),
                versions: store.versions_ascending(&rows, slot),
            })
        })?;
        // A chunk's text in one part is sized before it is copied.
        let room = if cuts.len() == 1 { text_bound } else { 0 };
        count += w.place(cells_key, cells_handles, live, cells, |w| {
            let mut start = 0;
            for n in cuts {
                let part = &rows[start..start + n];
                w.section(&ColumnCellsPart { cells: column_cells(store, slot, part, room) })?;
                start += n;
            }
            Ok(())
        })?;
        Ok(count)
    }

    /// The history log's chunks: sealed ones written or borrowed, the open one written.
    fn write_history(&self, w: &mut SectionWriter<'_>) -> io::Result<()> {
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
                None => write(w)?,
            }
        }
        Ok(())
    }

    /// The head: everything but the records, cells and history chunks, and how many sections
    /// each of those took.
    fn head(
        &self,
        rows: u64,
        record_parts: u32,
        columns: Vec<ColumnHead>,
    ) -> io::Result<BranchHead> {
        let store = &self.store;
        let history = &self.history;
        let merge_bases = self.merge_base_images();
        Ok(BranchHead {
            schema_json: serde_json::to_string(&self.schema)
                .map_err(|e| io::Error::other(format!("encoding the schema: {e}")))?,
            by_path: store.identity() == RecordIdentity::PathAndId,
            rows,
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
        })
    }

    /// The branch as a whole format 6 payload in memory (tests, fixtures; snapshots stream
    /// `write_image` to their file).
    pub fn encode_image(&self, limits: PartLimits) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        self.write_image(limits, None, &mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }
}
