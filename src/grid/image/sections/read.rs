//! Reading an image: the table, the head, then the records, the columns (each on the thread
//! that builds it) and the history, every section validated before it is read; and the index
//! of what the loaded image's sections hold, for the next snapshot to borrow from.

use crate::grid::damage::{Damaged, LoadResult};
use std::io;

use rkyv::rancor;

use super::super::{load_columns, restore_archived_stamps, ArchivedHistoryChunkImage, CellsRef};
use super::loaded::LoadedParts;
use super::{
    slice, ArchivedBranchHead, ArchivedColumnCellsPart, ArchivedColumnMetaPart, ArchivedColumnPart,
    ArchivedRecordsPart, ImageIndex, Scratch, SectionBytes, SectionSource, IN_CHAIN, LINK_SHIFT,
    MAGIC, OFFSET_MASK,
};
use crate::grid::history::{is_position, ChunkPart, History};
use crate::grid::ops::GridState;
use crate::grid::schema::Schema;
use crate::grid::store::{BuiltColumn, ColumnBuilder, ColumnSlot, ColumnStore, LoadedRecord};
use crate::grid::value::StorageKind;

impl GridState {
    /// `decode_sections` of payloads in memory (on a 16-byte boundary): tests and benches.
    pub fn decode_image(bytes: &[u8], chain: &[&[u8]]) -> LoadResult<GridState> {
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
    ) -> LoadResult<GridState> {
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
    ) -> LoadResult<(GridState, Option<ImageIndex>)> {
        GridState::decode_format(Format::StatusesApart, payload, chain, generations)
    }

    /// `decode_sections` of a format 5 payload (each column part holding its cells, statuses
    /// and versions together).
    pub fn decode_sections_v5(
        payload: &dyn SectionSource,
        chain: &[&dyn SectionSource],
    ) -> LoadResult<GridState> {
        GridState::decode_format(Format::Together, payload, chain, None).map(|(state, _)| state)
    }

    fn decode_format(
        format: Format,
        payload: &dyn SectionSource,
        chain: &[&dyn SectionSource],
        generations: Option<&[u64]>,
    ) -> LoadResult<(GridState, Option<ImageIndex>)> {
        let sources = Sources { payload, chain };
        let table = section_table(payload, chain)?;
        let (head, parts) = table.split_last().ok_or("a sectioned image without a head")?;
        let head_bytes = sources.read(*head)?;
        let head = access::<ArchivedBranchHead>(&head_bytes, "head")?;
        let layout = Layout::of(head, parts)?;
        let n = usize::try_from(head.rows.to_native()).map_err(|_| "too many records")?;
        let schema: Schema =
            serde_json::from_str(head.schema_json.as_str()).map_err(|e| format!("schema: {e}"))?;
        let mut state = GridState::with_schema(schema, head.by_path);
        let images = stored_columns(head, &state, layout.columns);
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
        let mut records = RecordsRead::default();
        let insert = |store: &mut ColumnStore| records.insert(store, &sources, layout.records, n);
        let history = || load_history(&sources, layout.history, head);
        let history = load_together(&mut state, n, images, build, insert, history)?;
        tracing::debug!(ms = began.elapsed().as_millis() as u64, "image columns built");
        // Every record's chain head must lie in the loaded history: checked by the furthest.
        if let Some(bad) = records.furthest.filter(|&at| !history.holds(at)) {
            return Err(format!("a history chain starts outside the log ({bad:#x})").into());
        }
        restore_archived_stamps(&mut state, head.clock.to_native(), &head.gone, &head.merge_bases);
        state.history = history;
        // Only an image of the format this build writes is borrowed from.
        let generations = generations.filter(|_| format == Format::StatusesApart);
        let index = generations.map(|generations| {
            let column_rows = column_rows.into_inner().unwrap_or_else(|e| e.into_inner());
            let parts =
                LoadedParts::of(&state, &layout, &records.groups, &column_lists, column_rows);
            parts.index(&state, generations, table.iter().map(|at| at.len as u64).sum())
        });
        Ok((state, index))
    }
}

/// Loads the records (`insert`) and the columns (`load_columns`) while the history is loaded
/// on a thread of its own (each chunk read, spilled and dropped in turn).
fn load_together<S: Copy + Send + Sync>(
    state: &mut GridState,
    n: usize,
    images: Vec<(ColumnSlot, S)>,
    build: impl Fn(S, StorageKind, bool, &mut Scratch) -> LoadResult<BuiltColumn> + Sync,
    insert: impl FnOnce(&mut ColumnStore) -> LoadResult<()>,
    load_history: impl Fn() -> LoadResult<History> + Send + Sync,
) -> LoadResult<History> {
    let (history, loaded) = std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .name("image-history".into())
            .spawn_scoped(scope, &load_history);
        let loaded = load_columns(state, n, images, build, insert);
        let history = match helper {
            Ok(helper) => {
                helper.join().unwrap_or_else(|_| Err("loading the history panicked".into()))
            }
            Err(_) => load_history(),
        };
        (history, loaded)
    });
    loaded?;
    history
}

/// The columns of the head the schema has, each with its slot, id and sections (`sections`
/// holds every column's, in the head's order).
fn stored_columns<'h>(
    head: &'h ArchivedBranchHead,
    state: &GridState,
    sections: &'h [SectionAt],
) -> Vec<(ColumnSlot, StoredColumn<'h>)> {
    let mut images = Vec::new();
    let mut rest = sections;
    for column in head.columns.iter() {
        let (mine, after) = rest.split_at(column.parts.to_native() as usize);
        rest = after;
        if let Some(&slot) = state.slots.get(column.id.as_str()) {
            images.push((slot, (column.id.as_str(), mine)));
        }
    }
    images
}

/// The sections of an image but its head, by list, as the head counts them.
pub(super) struct Layout<'t> {
    pub(super) records: &'t [SectionAt],
    pub(super) columns: &'t [SectionAt],
    pub(super) history: &'t [SectionAt],
}

impl<'t> Layout<'t> {
    /// `parts` cut as `head` says (an error when the counts do not add up to them).
    fn of(head: &ArchivedBranchHead, parts: &'t [SectionAt]) -> LoadResult<Self> {
        let record_parts = head.record_parts.to_native() as usize;
        let column_parts: usize = head.columns.iter().map(|c| c.parts.to_native() as usize).sum();
        let history_chunks = head.history_chunks.to_native() as usize;
        if parts.len() != record_parts + column_parts + history_chunks {
            return Err(format!(
                "{} sections for {record_parts} record parts, {column_parts} column parts and \
                 {history_chunks} history chunks",
                parts.len()
            )
            .into());
        }
        let (records, rest) = parts.split_at(record_parts);
        let (columns, history) = rest.split_at(column_parts);
        Ok(Layout { records, columns, history })
    }
}

/// The history log from its chunks' sections.
fn load_history(
    sources: &Sources<'_>,
    sections: &[SectionAt],
    head: &ArchivedBranchHead,
) -> LoadResult<History> {
    let began = std::time::Instant::now();
    let mut scratch = Scratch::new();
    let chunks = sections.iter().map(|&at| {
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
}

/// What reading the record parts found besides the records: each part's rows, and the
/// furthest history chain head they name.
#[derive(Default)]
struct RecordsRead {
    groups: Vec<Group>,
    furthest: Option<u64>,
}

impl RecordsRead {
    /// Inserts the `n` records of the record parts' `sections` into `store`, each part
    /// validated (its lists of one length, no more records than the head's).
    fn insert(
        &mut self,
        store: &mut ColumnStore,
        sources: &Sources<'_>,
        sections: &[SectionAt],
        n: usize,
    ) -> LoadResult<()> {
        let began = std::time::Instant::now();
        let mut scratch = Scratch::new();
        // Room for the records the head claims, as far as the parts' bytes can hold them (an
        // archived record takes more than 8 bytes): a damaged head reserves nothing
        // unreasonable.
        let record_bytes: usize = sections.iter().map(|at| at.len).sum();
        store.reserve_records(n.min(record_bytes / 8));
        let mut inserted = 0usize;
        // Every key goes into the id index at the end, shard by shard.
        let mut keys = Vec::with_capacity(n.min(record_bytes / 8));
        for &at in sections {
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
                return Err("a record part's lists have different lengths".into());
            }
            inserted += len;
            if inserted > n {
                return Err("the record parts add up to more than the head's records".into());
            }
            self.groups.push(Group { sections: 1, rows: len });
            let heads = part.heads.iter().map(|at| at.to_native()).filter(|&at| is_position(at));
            self.furthest = self.furthest.max(heads.max());
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
            return Err("the record parts do not add up to the head's records".into());
        }
        store.index_loaded_keys(keys);
        tracing::debug!(ms = began.elapsed().as_millis() as u64, "image records inserted");
        Ok(())
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
pub(super) struct Group {
    pub(super) sections: usize,
    pub(super) rows: usize,
}

/// Where one section lies: in the image's payload (`link` `None`) or in that of a link of its
/// chain, at an offset, of a length.
#[derive(Debug, Clone, Copy)]
pub(super) struct SectionAt {
    pub(super) link: Option<usize>,
    pub(super) offset: u64,
    pub(super) len: usize,
}

/// An image's payload and its chain's.
struct Sources<'a> {
    payload: &'a dyn SectionSource,
    chain: &'a [&'a dyn SectionSource],
}

impl<'a> Sources<'a> {
    fn source(&self, at: SectionAt) -> LoadResult<&'a dyn SectionSource> {
        match at.link {
            None => Ok(self.payload),
            Some(link) => self.chain.get(link).copied().ok_or_else(|| {
                format!("a section lies in link {link} of a chain the image was not given").into()
            }),
        }
    }

    fn read(&self, at: SectionAt) -> LoadResult<SectionBytes<'a>> {
        self.source(at)?
            .read_at(at.offset, at.len)
            .map_err(|source| Damaged::Read { what: "a section", source })
    }

    /// The sections `ats`: borrowed from payloads in memory, the others read into `scratch`
    /// (cleared first; each on a 16-byte boundary).
    fn read_all<'s>(&self, ats: &[SectionAt], scratch: &'s mut Scratch) -> LoadResult<Vec<&'s [u8]>>
    where
        'a: 's,
    {
        /// Where a section's bytes are.
        enum Place<'m> {
            Memory(&'m [u8]),
            Scratch(std::ops::Range<usize>),
        }
        let fail = |source: io::Error| Damaged::Read { what: "a section", source };
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
) -> LoadResult<(crate::grid::store::BuiltColumn, Vec<Group>)> {
    let mut builder = ColumnBuilder::new(kind, localized, n);
    let mut groups = Vec::with_capacity(sections.len());
    let mut push = |cells: CellsRef<'_>| -> LoadResult<usize> {
        cells.check(cells.len())?;
        if kind == StorageKind::Text && cells.is_text() {
            // A text column's part a chunk's run at a time (most of a start's cells).
            builder
                .push_texts(
                    cells.len(),
                    |i| cells.text_cell(i),
                    |i, rows| cells.arena_bytes(i, rows),
                )
                .map_err(|e| format!("column {id}: {e}"))?;
            return Ok(cells.len());
        }
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
                let group = read_meta_group(id, &sections[at..], sources, scratch, &mut push)?;
                at += group.sections;
                groups.push(group);
            }
        }
    }
    let column = builder.finish().map_err(|e| format!("column {id}: {e}"))?;
    Ok((column, groups))
}

/// One format 6 group of a column: its statuses' section (`sections[0]`, which says how many
/// cell parts follow) and its cells' sections, each part's cells given to `push` with their
/// statuses and versions.
fn read_meta_group(
    id: &str,
    sections: &[SectionAt],
    sources: &Sources<'_>,
    scratch: &mut Scratch,
    push: &mut impl FnMut(CellsRef<'_>) -> LoadResult<usize>,
) -> LoadResult<Group> {
    // The statuses (a few bytes a record) in a buffer of their own, the cells they describe
    // into `scratch`.
    let meta_bytes = sources.read(sections[0])?;
    let meta = access::<ArchivedColumnMetaPart>(&meta_bytes, "column statuses")?;
    let cell_parts = meta.cell_parts.to_native() as usize;
    if cell_parts > sections.len() - 1 {
        return Err(format!("column {id}: statuses before parts it does not have").into());
    }
    let group = &sections[..=cell_parts];
    let read = sources.read_all(&group[1..], scratch)?;
    let (statuses, versions) = (meta.statuses.as_slice(), meta.versions.as_slice());
    if versions.len() != statuses.len() {
        return Err(format!("column {id} has the wrong number of versions").into());
    }
    let mut rows = 0;
    for bytes in &read {
        let part = access::<ArchivedColumnCellsPart>(bytes, "column cells")?;
        let end = rows + cells_len(&part.cells);
        if end > statuses.len() {
            return Err(format!("column {id} has more cells than statuses").into());
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
        return Err(format!("column {id} has more statuses than cells").into());
    }
    Ok(Group { sections: group.len(), rows })
}

/// How many cells archived `cells` holds (by its offsets' or values' count; `CellsRef::check`
/// checks the rest).
fn cells_len(cells: &super::super::ArchivedColumnCells) -> usize {
    use super::super::ArchivedColumnCells as Cells;
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
) -> LoadResult<Vec<SectionAt>> {
    let fail = || Damaged::from("the section table is damaged");
    fn read(source: &dyn SectionSource, offset: u64, len: usize) -> LoadResult<Vec<u8>> {
        let bytes = source.read_at(offset, len);
        bytes
            .map(|b| b.to_vec())
            .map_err(|source| Damaged::Read { what: "the section table", source })
    }
    // The table's start and its entries' bytes.
    let table = |source: &dyn SectionSource, entries: bool| -> LoadResult<(u64, Vec<u8>)> {
        let n = source.payload_len();
        if n < 16 {
            return Err("not a sectioned image".into());
        }
        let tail = read(source, n - 16, 16)?;
        if tail[8..] != MAGIC {
            return Err("not a sectioned image".into());
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
fn access<'a, T>(section: &'a [u8], what: &str) -> LoadResult<&'a T>
where
    T: rkyv::Portable
        + for<'b> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'b, rancor::Error>>,
{
    rkyv::access::<T, rancor::Error>(section).map_err(|e| format!("{what}: validation: {e}").into())
}
