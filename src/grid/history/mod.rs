//! Record history: every change of a record appends an entry with the cells as they became.
//! Listed newest first. Owned by the grid actor with the rest of the branch.
//!
//! Entries are encoded into an append-only log of byte chunks (`HistoryLog`), not kept as
//! values: a 1M-record seed holds 1M entries, and as `String`s and enums they cost four times
//! the bytes they carry. Each entry starts with the position of the same record's previous
//! entry, so a record's history is a chain walked backwards from its newest entry. The store
//! keeps that position per row (`ColumnStore::history_head`), so renames and moves cost
//! nothing here; a deleted record's chain is kept (for exports) in the retired list, and a
//! later record with the same id starts a new chain.
//!
//! An add's entry usually waits: until something changes the record, its head is a pending
//! creation (`pending_creation`) naming the columns the add wrote, and the entry is the
//! record's cells as they stand (`GridState::settle_creation` writes it before they change).
//! So a bulk load of 1M records writes no history.
//!
//! Chunks sit behind `Arc`s: a clone (taken for each snapshot, each branch) shares them and
//! costs O(chunks); the first write after it copies the open (last) chunk alone (at most
//! `CHUNK_BYTES`). A full chunk is sealed and held compressed (`sealed`): history is written
//! once and read rarely, and compressed it costs a fifth of its bytes.
//!
//! Entry layout (little endian; `str` is a LEB128 length then UTF-8 bytes):
//! `prev: u64 | time_ms: i64 | user: str | id: str | path: str | cells: LEB128 count`, then per
//! cell `column_id: str | statuses: u8 (255: not a language column) | value`, where a value is
//! a tag byte (0 empty, 1 text + str, 2 number + f64, 3 boolean + u8, 4 datetime + i64, 5 list
//! + LEB128 count + str each).

mod sealed;
mod spill;

use crate::grid::damage::LoadResult;
use std::sync::Arc;

pub use self::sealed::ChunkPart;
use self::sealed::{ChunkBytes, Sealed};
pub use self::spill::{configure as spill_to, held_bytes as spilled_bytes};
use super::store::CellRef;
use super::value::{CellValue, DependencyStatus, SourceStatus};

/// One cell as a change left it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryCell {
    pub column_id: String,
    pub value: CellValue,
    /// Present for language columns.
    pub statuses: Option<(DependencyStatus, SourceStatus)>,
}

/// One change of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    pub time_ms: i64,
    pub user: String,
    pub path: String,
    pub cells: Vec<HistoryCell>,
}

/// Where an entry starts in the log: chunk number << 32 | byte offset in the chunk.
pub type EntryRef = u64;

/// The position of no entry: the end of every chain.
pub const NO_ENTRY: EntryRef = u64::MAX;

/// Marks a chain head that is not a position but a record's creation entry still to be
/// written (`pending_creation`): the bits below it say which columns the add wrote.
const PENDING: EntryRef = 1 << 63;

/// Columns a pending creation entry can name: bit `i` of its head is the schema's column `i`
/// (bit 62 stays clear, so that no pending head is `NO_ENTRY`).
pub const PENDING_COLUMNS: usize = 62;

/// The head of a record whose creation entry is not written yet: the entry would hold the
/// columns at the schema positions set in `columns` (each below `PENDING_COLUMNS`), as the
/// record holds them now, with the record's modification time, editor and path. Adding a
/// record costs no history until something else changes it (`GridState::settle_creation`).
pub fn pending_creation(columns: u64) -> EntryRef {
    debug_assert!(columns >> PENDING_COLUMNS == 0, "pending columns past bit 61");
    PENDING | columns
}

/// The columns of a pending creation head (see `pending_creation`); `None` for a position
/// or `NO_ENTRY`.
pub fn pending_columns(head: EntryRef) -> Option<u64> {
    (head != NO_ENTRY && head & PENDING != 0).then_some(head & !PENDING)
}

/// Whether `head` is the position of an entry (not `NO_ENTRY` nor a pending creation).
pub fn is_position(head: EntryRef) -> bool {
    head != NO_ENTRY && head & PENDING == 0
}

/// A chunk is sealed (and a new one started) once it holds this many bytes; a larger entry
/// gets a chunk of its own.
#[cfg(not(test))]
const CHUNK_BYTES: usize = 1 << 20;
#[cfg(test)]
const CHUNK_BYTES: usize = 256;

/// One cell to record, borrowed from the store.
#[derive(Debug, Clone, Copy)]
pub struct CellRecord<'a> {
    pub column_id: &'a str,
    pub value: CellRef<'a>,
    pub statuses: Option<(DependencyStatus, SourceStatus)>,
}

/// The history of one branch. See the module doc.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Full chunks, numbered from 0.
    sealed: Vec<Arc<Sealed>>,
    /// The chunk entries are appended to: number `sealed.len()`.
    open: Arc<Vec<u8>>,
    /// The newest entry of each deleted record, in deletion order.
    retired: imbl::Vector<EntryRef>,
    count: usize,
}

/// An entry read back from the log, with its record id and the position of the record's
/// previous entry.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEntry {
    pub prev: EntryRef,
    pub id: String,
    pub entry: HistoryEntry,
}

/// The parts of a history as an image stores them: the sealed chunks, then the open one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistoryParts {
    pub chunks: Vec<ChunkPart>,
    pub retired: Vec<EntryRef>,
    pub count: u64,
}

fn put_len(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn pack_statuses(statuses: Option<(DependencyStatus, SourceStatus)>) -> u8 {
    statuses.map_or(255, |(d, s)| d as u8 | (s as u8) << 2)
}

fn put_value(out: &mut Vec<u8>, value: CellRef<'_>) {
    match value {
        CellRef::Empty => out.push(0),
        CellRef::Text(s) => {
            out.push(1);
            put_str(out, s);
        }
        CellRef::Number(n) => {
            out.push(2);
            out.extend_from_slice(&n.to_le_bytes());
        }
        CellRef::Boolean(b) => out.extend_from_slice(&[3, u8::from(b)]),
        CellRef::Datetime(ms) => {
            out.push(4);
            out.extend_from_slice(&ms.to_le_bytes());
        }
        CellRef::List(items) => {
            out.push(5);
            put_len(out, items.count());
            for item in items {
                put_str(out, item);
            }
        }
    }
}

fn put_owned_value(out: &mut Vec<u8>, value: &CellValue) {
    match value {
        CellValue::Empty => out.push(0),
        CellValue::Text(s) => put_value(out, CellRef::Text(s)),
        CellValue::Number(n) => put_value(out, CellRef::Number(*n)),
        CellValue::Boolean(b) => put_value(out, CellRef::Boolean(*b)),
        CellValue::Datetime(ms) => put_value(out, CellRef::Datetime(*ms)),
        CellValue::List(items) => {
            out.push(5);
            put_len(out, items.len());
            for item in items {
                put_str(out, item);
            }
        }
    }
}

/// Reads an encoded entry; `None` when the bytes are not one (a damaged image).
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.bytes.get(..n)?, self.bytes.get(n..)?);
        self.bytes = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn len(&mut self) -> Option<usize> {
        let mut n = 0usize;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            n |= usize::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn value(&mut self) -> Option<CellValue> {
        Some(match self.u8()? {
            0 => CellValue::Empty,
            1 => CellValue::Text(self.str()?.to_owned()),
            2 => CellValue::Number(f64::from_bits(self.u64()?)),
            3 => CellValue::Boolean(self.u8()? != 0),
            4 => CellValue::Datetime(self.u64()? as i64),
            5 => {
                let n = self.len()?;
                // Each item takes at least one byte: a lying count stops at the end.
                let mut items = Vec::with_capacity(n.min(self.bytes.len()));
                for _ in 0..n {
                    items.push(self.str()?.to_owned());
                }
                CellValue::List(items)
            }
            _ => return None,
        })
    }

    fn statuses(&mut self) -> Option<Option<(DependencyStatus, SourceStatus)>> {
        let byte = self.u8()?;
        Some((byte != 255).then(|| {
            (DependencyStatus::from_u8(byte & 0b11), SourceStatus::from_u8((byte >> 2) & 0b111))
        }))
    }

    fn entry(&mut self) -> Option<StoredEntry> {
        let prev = self.u64()?;
        let time_ms = self.u64()? as i64;
        let user = self.str()?.to_owned();
        let id = self.str()?.to_owned();
        let path = self.str()?.to_owned();
        let n = self.len()?;
        let mut cells = Vec::with_capacity(n.min(self.bytes.len() / 3));
        for _ in 0..n {
            let column_id = self.str()?.to_owned();
            let statuses = self.statuses()?;
            let value = self.value()?;
            cells.push(HistoryCell { column_id, value, statuses });
        }
        Some(StoredEntry { prev, id, entry: HistoryEntry { time_ms, user, path, cells } })
    }
}

/// Releases a sealed chunk's spare capacity when it is worth a copy (over 1/8 of it).
fn shrink(chunk: &mut Vec<u8>) {
    if chunk.capacity() - chunk.len() > chunk.len() / 8 {
        chunk.shrink_to_fit();
    }
}

fn split(at: EntryRef) -> (usize, usize) {
    ((at >> 32) as usize, (at & 0xffff_ffff) as usize)
}

impl History {
    /// Appends an entry of record `id` whose previous entry is `prev` (`NO_ENTRY` for its
    /// first); returns the new entry's position, the record's new chain head.
    pub fn push(
        &mut self,
        prev: EntryRef,
        id: &str,
        meta: (i64, &str, &str),
        cells: &[CellRecord<'_>],
    ) -> EntryRef {
        self.append(prev, id, meta, cells.len(), |chunk| {
            for cell in cells {
                put_str(chunk, cell.column_id);
                chunk.push(pack_statuses(cell.statuses));
                put_value(chunk, cell.value);
            }
        })
    }

    /// `push` for an entry held as values (converting an old image).
    pub fn push_entry(&mut self, prev: EntryRef, id: &str, entry: &HistoryEntry) -> EntryRef {
        let meta = (entry.time_ms, entry.user.as_str(), entry.path.as_str());
        self.append(prev, id, meta, entry.cells.len(), |chunk| {
            for cell in &entry.cells {
                put_str(chunk, &cell.column_id);
                chunk.push(pack_statuses(cell.statuses));
                put_owned_value(chunk, &cell.value);
            }
        })
    }

    fn append(
        &mut self,
        prev: EntryRef,
        id: &str,
        (time_ms, user, path): (i64, &str, &str),
        cell_count: usize,
        put_cells: impl FnOnce(&mut Vec<u8>),
    ) -> EntryRef {
        if self.open.len() >= CHUNK_BYTES {
            self.seal(Arc::new(Vec::new()));
        }
        let chunk = Arc::make_mut(&mut self.open);
        let start = chunk.len();
        if start >= CHUNK_BYTES / 16 && chunk.capacity() < CHUNK_BYTES {
            // A branch that writes this much fills the chunk: size it once, not by doubling.
            chunk.reserve_exact(CHUNK_BYTES + CHUNK_BYTES / 16 - start);
        }
        chunk.extend_from_slice(&prev.to_le_bytes());
        chunk.extend_from_slice(&time_ms.to_le_bytes());
        put_str(chunk, user);
        put_str(chunk, id);
        put_str(chunk, path);
        put_len(chunk, cell_count);
        put_cells(chunk);
        let (chunk_no, offset) = if start > 0 && chunk.len() > CHUNK_BYTES {
            // The entry overflows a chunk that held others: it moves to a chunk of its own.
            let moved = chunk.split_off(start);
            self.seal(Arc::new(moved));
            (self.sealed.len(), 0)
        } else {
            (self.sealed.len(), start)
        };
        self.count += 1;
        // Below 2^31, so that no position has the `PENDING` bit.
        let chunk_no = i32::try_from(chunk_no).expect("fewer than 2^31 history chunks") as u32;
        let offset = u32::try_from(offset).expect("chunks are sealed before 4 GiB");
        u64::from(chunk_no) << 32 | u64::from(offset)
    }

    /// Seals the open chunk and opens `next`.
    fn seal(&mut self, next: Arc<Vec<u8>>) {
        let mut full = std::mem::replace(&mut self.open, next);
        // A chunk shared with a clone is left as it is rather than copied to shrink it.
        if let Some(full) = Arc::get_mut(&mut full) {
            shrink(full);
        }
        self.sealed.push(Sealed::new(full));
    }

    /// Keeps a deleted record's chain (newest entry `head`) for exports.
    pub fn retire(&mut self, head: EntryRef) {
        debug_assert!(pending_columns(head).is_none(), "a creation is written before retiring");
        if is_position(head) {
            self.retired.push_back(head);
        }
    }

    /// The entry at `at`; `None` for `NO_ENTRY` or a position that holds no entry.
    pub fn get(&self, at: EntryRef) -> Option<StoredEntry> {
        if !is_position(at) {
            return None;
        }
        let (chunk, offset) = split(at);
        if chunk == self.sealed.len() {
            return Reader { bytes: self.open.get(offset..)? }.entry();
        }
        self.sealed.get(chunk)?.read(offset, |bytes| Reader { bytes }.entry())
    }

    /// The entries of the chain ending at `head`, newest first. A chain that leads into bytes
    /// that are not an entry (a damaged image) or forwards (a loop) ends there.
    pub fn chain(&self, head: EntryRef) -> impl Iterator<Item = StoredEntry> + '_ {
        let mut next = head;
        std::iter::from_fn(move || {
            let stored = self.get(next)?;
            next = if stored.prev < next { stored.prev } else { NO_ENTRY };
            Some(stored)
        })
    }

    /// A page of one record's entries (chain head `head`) that pass `keep`, newest first
    /// (oldest first when `oldest_first`), and how many pass in all. Only the page is kept.
    pub fn page_where(
        &self,
        head: EntryRef,
        (offset, limit): (usize, usize),
        oldest_first: bool,
        keep: impl Fn(&HistoryEntry) -> bool,
    ) -> (Vec<HistoryEntry>, usize) {
        let passing = self.chain(head).map(|s| s.entry).filter(|e| keep(e));
        if oldest_first {
            let mut all: Vec<HistoryEntry> = passing.collect();
            all.reverse();
            let total = all.len();
            (all.into_iter().skip(offset).take(limit).collect(), total)
        } else {
            let mut total = 0;
            let mut page = Vec::new();
            for entry in passing {
                if total >= offset && page.len() < limit {
                    page.push(entry);
                }
                total += 1;
            }
            (page, total)
        }
    }

    /// The chain heads of the deleted records, in deletion order.
    pub fn retired(&self) -> impl Iterator<Item = EntryRef> + '_ {
        self.retired.iter().copied()
    }

    /// Every entry, in log order (each record's entries oldest first among themselves).
    /// A damaged sealed chunk is skipped.
    pub fn all(&self) -> impl Iterator<Item = StoredEntry> + '_ {
        let open = std::iter::once(Some(ChunkBytes::Shared(Arc::clone(&self.open))));
        self.sealed.iter().map(|chunk| chunk.whole()).chain(open).flatten().flat_map(|bytes| {
            let mut at = 0;
            std::iter::from_fn(move || {
                let mut reader = Reader { bytes: bytes.get(at..).filter(|b| !b.is_empty())? };
                let entry = reader.entry()?;
                at = bytes.len() - reader.bytes.len();
                Some(entry)
            })
        })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes held on the heap (chunks as held, packed or plain, and the retired list).
    pub fn heap_bytes(&self) -> usize {
        self.sealed.iter().map(|c| c.heap_bytes() + 8).sum::<usize>()
            + self.open.capacity()
            + self.retired.len() * 8
    }

    /// The log as an image stores it: the sealed chunks packed, the open one plain; an error
    /// when a chunk spilled to disk cannot be read back.
    pub fn to_parts(&self) -> std::io::Result<HistoryParts> {
        Ok(HistoryParts {
            chunks: (0..self.chunk_count())
                .map(|i| self.chunk_part(i))
                .collect::<Result<_, _>>()?,
            retired: self.retired.iter().copied().collect(),
            count: self.count as u64,
        })
    }

    /// Chunk `index` of `to_parts` (`index < chunk_count()`; past the sealed ones, the open
    /// one).
    pub fn chunk_part(&self, index: usize) -> std::io::Result<ChunkPart> {
        Ok(match self.sealed.get(index) {
            Some(sealed) => sealed.to_part()?,
            None => ChunkPart {
                len: u32::try_from(self.open.len()).expect("chunks are sealed before 4 GiB"),
                block: 0,
                ends: Vec::new(),
                data: self.open.as_ref().clone(),
            },
        })
    }

    /// A handle on sealed chunk `index` (sealed chunks never change; the open one has none).
    pub fn sealed_handle(&self, index: usize) -> Option<crate::grid::store::ChunkHandle> {
        self.sealed.get(index).map(crate::grid::store::ChunkHandle::of)
    }

    /// How many chunks `to_parts` yields.
    pub fn chunk_count(&self) -> usize {
        self.sealed.len() + 1
    }

    /// How many entries the log holds.
    pub fn entry_count(&self) -> u64 {
        self.count as u64
    }

    /// A log from an image's parts: every part but a plain last one is sealed (plain parts of
    /// an older image are packed later). Positions are checked when read (`get`), so damaged
    /// bytes end a chain instead of failing the load; retired heads must name a chunk.
    pub fn from_parts(parts: HistoryParts) -> LoadResult<History> {
        History::from_chunks(parts.chunks.into_iter().map(Ok), parts.retired, parts.count)
    }

    /// `from_parts` with the chunks made one at a time (a load spills each before it reads
    /// the next).
    pub fn from_chunks(
        chunks: impl ExactSizeIterator<Item = LoadResult<ChunkPart>>,
        retired: Vec<EntryRef>,
        count: u64,
    ) -> LoadResult<History> {
        let n = chunks.len();
        if let Some(bad) = retired.iter().find(|&&at| split(at).0 >= n) {
            return Err(
                format!("history: a retired chain starts outside the log ({bad:#x})").into()
            );
        }
        let mut sealed = Vec::with_capacity(n);
        let mut open = Vec::new();
        for (i, part) in chunks.enumerate() {
            let part = part?;
            if i + 1 == n && part.ends.is_empty() && part.data.len() == part.len as usize {
                open = part.data;
            } else {
                sealed.push(Sealed::from_part(part)?);
            }
        }
        Ok(History {
            sealed,
            open: Arc::new(open),
            retired: retired.into_iter().collect(),
            count: usize::try_from(count).map_err(|_| "history: bad count".to_owned())?,
        })
    }

    /// Whether `at` names a chunk of this log (`NO_ENTRY` and pending creations count as
    /// valid).
    pub fn holds(&self, at: EntryRef) -> bool {
        !is_position(at) || split(at).0 <= self.sealed.len()
    }

    /// Packs every sealed chunk now instead of waiting for the packer.
    #[cfg(test)]
    fn pack_all(&self) {
        self.sealed.iter().for_each(|c| c.pack_now());
    }
}

/// Marks the key of a deleted record's entries in images of formats 1 and 2, which kept
/// history per key: `\u{1}<n>\u{1}<key>`; a key of a grid identified by path and id is
/// `<path>\u{0}<id>`.
const RETIRED: char = '\u{1}';

/// What an old image's history key names: whether it is retired, and the record's path (empty
/// when the key has none) and id.
pub fn legacy_key(key: &str) -> (bool, &str, &str) {
    let (retired, live) = match key.strip_prefix(RETIRED) {
        Some(rest) => (true, rest.split_once(RETIRED).map_or(rest, |(_, k)| k)),
        None => (false, key),
    };
    let (path, id) = live.split_once('\u{0}').unwrap_or(("", live));
    (retired, path, id)
}

/// One changed cell of a history export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportRow {
    pub record_id: String,
    pub path: String,
    pub column_id: String,
    pub value: CellValue,
    pub statuses: Option<(DependencyStatus, SourceStatus)>,
    pub user: String,
    pub time_ms: i64,
    /// The cell's value in the record's previous entry that had the column (enhanced mode).
    pub previous: Option<CellValue>,
}

/// Which entries and cells an export takes.
#[derive(Debug, Clone)]
pub struct ExportFilter<'a> {
    pub from_ms: i64,
    pub to_ms: i64,
    /// Columns to export, in this order of preference; cells of others are left out.
    pub columns: &'a [String],
    /// Editors to export; all when `None`.
    pub users: Option<&'a [String]>,
    /// The most rows the export may hold: the rows are sorted in memory, so past this the
    /// export stops (`TooManyRows`).
    pub max_rows: usize,
}

/// An export of the history with more rows than `ExportFilter::max_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyRows {
    pub max_rows: usize,
}

impl History {
    /// The cells changed between `from_ms` and `to_ms` (inclusive) by the chosen editors, one
    /// row per cell, oldest first (then by record id), for the records whose chains end at
    /// `heads` (the live records' heads; the retired chains are added). Each row carries the
    /// value the record's previous entry gave the column, when it had one. A record's entries
    /// carry its current id (the newest entry's). More rows than `filter.max_rows` stop it.
    pub fn export_rows(
        &self,
        heads: &[EntryRef],
        filter: &ExportFilter<'_>,
    ) -> Result<Vec<ExportRow>, TooManyRows> {
        let mut rows = Vec::new();
        for head in heads.iter().copied().chain(self.retired()) {
            let mut chain: Vec<StoredEntry> = self.chain(head).collect();
            let Some(record_id) = chain.first().map(|s| s.id.clone()) else { continue };
            chain.reverse();
            let mut last: std::collections::HashMap<String, CellValue> =
                std::collections::HashMap::new();
            for StoredEntry { entry, .. } in chain {
                let chosen = (filter.from_ms..=filter.to_ms).contains(&entry.time_ms)
                    && filter.users.is_none_or(|users| users.contains(&entry.user));
                for cell in entry.cells {
                    let previous = last.insert(cell.column_id.clone(), cell.value.clone());
                    if chosen && filter.columns.contains(&cell.column_id) {
                        if rows.len() == filter.max_rows {
                            return Err(TooManyRows { max_rows: filter.max_rows });
                        }
                        rows.push(ExportRow {
                            record_id: record_id.clone(),
                            path: entry.path.clone(),
                            column_id: cell.column_id,
                            value: cell.value,
                            statuses: cell.statuses,
                            user: entry.user.clone(),
                            time_ms: entry.time_ms,
                            previous,
                        });
                    }
                }
            }
        }
        rows.sort_by(|a, b| a.time_ms.cmp(&b.time_ms).then_with(|| a.record_id.cmp(&b.record_id)));
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::store::ColumnStore;
    use proptest::prelude::*;

    fn text_cells<'a>(cells: &'a [(&'a str, &'a str)]) -> Vec<CellRecord<'a>> {
        cells
            .iter()
            .map(|(c, v)| CellRecord { column_id: c, value: CellRef::Text(v), statuses: None })
            .collect()
    }

    fn push(
        h: &mut History,
        prev: EntryRef,
        id: &str,
        time_ms: i64,
        user: &str,
        cells: &[(&str, &str)],
    ) -> EntryRef {
        h.push(prev, id, (time_ms, user, "p"), &text_cells(cells))
    }

    #[test]
    fn export_rows_filter_by_time_user_and_column_and_carry_previous_values() {
        let mut history = History::default();
        let r1 = push(&mut history, NO_ENTRY, "r1", 10, "ann", &[("a", "one"), ("b", "x")]);
        let r1 = push(&mut history, r1, "r1", 20, "bob", &[("a", "two")]);
        let r2 = push(&mut history, NO_ENTRY, "r2", 30, "ann", &[("a", "three")]);
        history.retire(r1);
        let columns = vec!["a".to_owned()];
        let filter =
            ExportFilter { from_ms: 0, to_ms: 100, columns: &columns, users: None, max_rows: 3 };
        let all = history.export_rows(&[r2], &filter).expect("within the limit");
        let summary: Vec<(&str, i64, Option<CellValue>)> =
            all.iter().map(|r| (r.record_id.as_str(), r.time_ms, r.previous.clone())).collect();
        assert_eq!(
            summary,
            vec![
                ("r1", 10, None),
                ("r1", 20, Some(CellValue::Text("one".into()))),
                ("r2", 30, None)
            ]
        );
        let users = vec!["bob".to_owned()];
        let only_bob =
            ExportFilter { from_ms: 15, to_ms: 25, users: Some(&users), ..filter.clone() };
        let bob = history.export_rows(&[r2], &only_bob).expect("within the limit");
        assert_eq!(bob.len(), 1);
        assert_eq!(bob[0].value, CellValue::Text("two".into()));
        // One row more than the limit stops the export.
        let two = ExportFilter { max_rows: 2, ..filter };
        assert_eq!(
            history.export_rows(&[r2], &two).map(|r| r.len()),
            Err(TooManyRows { max_rows: 2 })
        );
    }

    #[test]
    fn every_value_kind_and_status_reads_back() {
        let mut store = ColumnStore::new(crate::grid::store::RecordIdentity::RecordId);
        let list = store.add_column(crate::grid::value::StorageKind::List, false);
        let row = store.insert("r", "", 0, "u");
        store
            .set_value(row, list, &CellValue::List(vec!["a:b".into(), String::new(), "ü".into()]))
            .expect("a list column takes lists");
        let statuses = Some((DependencyStatus::OutOfDate, SourceStatus::LockAllLanguages));
        let cells = [
            CellRecord { column_id: "e", value: CellRef::Empty, statuses: None },
            CellRecord { column_id: "t", value: CellRef::Text("日本語 🌍"), statuses },
            CellRecord { column_id: "n", value: CellRef::Number(-1.5e300), statuses: None },
            CellRecord { column_id: "b", value: CellRef::Boolean(true), statuses: None },
            CellRecord { column_id: "d", value: CellRef::Datetime(i64::MIN + 1), statuses: None },
            CellRecord { column_id: "l", value: store.value_ref(row, list), statuses: None },
        ];
        let mut history = History::default();
        let at = history.push(NO_ENTRY, "r", (42, "ann", "dir/sub"), &cells);
        let stored = history.get(at).expect("the entry reads back");
        assert_eq!((stored.prev, stored.id.as_str()), (NO_ENTRY, "r"));
        let e = stored.entry;
        assert_eq!((e.time_ms, e.user.as_str(), e.path.as_str()), (42, "ann", "dir/sub"));
        let values: Vec<CellValue> = e.cells.iter().map(|c| c.value.clone()).collect();
        assert_eq!(
            values,
            vec![
                CellValue::Empty,
                CellValue::Text("日本語 🌍".into()),
                CellValue::Number(-1.5e300),
                CellValue::Boolean(true),
                CellValue::Datetime(i64::MIN + 1),
                CellValue::List(vec!["a:b".into(), String::new(), "ü".into()]),
            ]
        );
        assert_eq!(e.cells[1].statuses, statuses);
        assert_eq!(e.cells[0].statuses, None);
    }

    #[test]
    fn a_clone_shares_the_log_and_diverges_on_write() {
        let mut a = History::default();
        let mut head = NO_ENTRY;
        for i in 0..50 {
            head = push(&mut a, head, "r", i, "u", &[("c", "a value of some length")]);
        }
        let b = a.clone();
        let mut a2 = a.clone();
        let head2 = push(&mut a2, head, "r", 99, "u", &[("c", "only in a2")]);
        assert_eq!(b.chain(head).count(), 50);
        assert_eq!(a2.chain(head2).count(), 51);
        assert!(b.get(head2).is_none_or(|e| e.entry.time_ms != 99), "b never sees a2's entry");
    }

    #[test]
    fn damaged_bytes_end_a_chain_without_panicking() {
        let mut h = History::default();
        let mut head = NO_ENTRY;
        for i in 0..20 {
            head = push(&mut h, head, "r", i, "u", &[("c", "v")]);
        }
        let mut parts = h.to_parts().expect("reads");
        for chunk in &mut parts.chunks {
            for (i, byte) in chunk.data.iter_mut().enumerate() {
                if i % 5 == 0 {
                    *byte ^= 0xa5;
                }
            }
        }
        let damaged = History::from_parts(parts).expect("the parts are shaped right");
        let _ = damaged.chain(head).count();
        let _ = damaged.all().count();
    }

    #[test]
    fn packed_chunks_read_back_entries_across_blocks_and_chunks() {
        let mut h = History::default();
        let mut heads = [NO_ENTRY; 3];
        let mut texts = [Vec::new(), Vec::new(), Vec::new()];
        for i in 0..60usize {
            let record = i % 3;
            // Short entries, entries over a 64-byte block and some over a whole chunk.
            let text = "Speichern fehlgeschlagen ".repeat(1 + (i * 7) % 13);
            let id = format!("r{record}");
            heads[record] = push(&mut h, heads[record], &id, i as i64, "u", &[("c", &text)]);
            texts[record].push(text);
        }
        h.pack_all();
        assert!(h.sealed.iter().filter(|c| c.is_packed()).count() > 5, "repetitive text packs");
        let parts = h.to_parts().expect("reads");
        let packed: usize = parts.chunks.iter().map(|c| c.data.len()).sum();
        let plain: usize = parts.chunks.iter().map(|c| c.len as usize).sum();
        assert!(packed < plain, "packed chunks hold less than the log: {packed} of {plain}");
        for history in
            [h.clone(), History::from_parts(h.to_parts().expect("reads")).expect("round trip")]
        {
            for record in 0..3 {
                let read: Vec<String> = history
                    .chain(heads[record])
                    .map(|s| match &s.entry.cells[0].value {
                        CellValue::Text(t) => t.clone(),
                        other => panic!("not text: {other:?}"),
                    })
                    .collect();
                let want: Vec<String> = texts[record].iter().rev().cloned().collect();
                assert_eq!(read, want, "record {record}");
            }
            assert_eq!(history.all().count(), 60);
        }
    }

    proptest! {
        /// Chains interleaved over many records and chunks read back exactly, newest first,
        /// paged either way; a clone and a round trip through parts hold the same.
        #[test]
        fn chains_read_back_what_was_pushed(
            writes in proptest::collection::vec((0usize..6, "[a-zé🌍]{0,40}"), 1..120),
            offset in 0usize..10,
            limit in 1usize..10,
        ) {
            let mut h = History::default();
            let mut heads = [NO_ENTRY; 6];
            let mut expected: Vec<Vec<String>> = vec![Vec::new(); 6];
            for (i, (record, text)) in writes.iter().enumerate() {
                let id = format!("r{record}");
                heads[*record] = push(&mut h, heads[*record], &id, i as i64, "u", &[("c", text)]);
                expected[*record].push(text.clone());
            }
            let h2 = History::from_parts(h.to_parts().expect("reads")).expect("round trip");
            let h3 = h.clone();
            h3.pack_all();
            for history in [&h, &h2, &h3] {
                for record in 0..6 {
                    let newest_first: Vec<String> = expected[record].iter().rev().cloned().collect();
                    let text = |e: &HistoryEntry| match &e.cells[0].value {
                        CellValue::Text(s) => s.clone(),
                        _ => String::new(),
                    };
                    let (page, total) = history.page_where(heads[record], (offset, limit), false, |_| true);
                    prop_assert_eq!(total, newest_first.len());
                    let want: Vec<String> = newest_first.iter().skip(offset).take(limit).cloned().collect();
                    prop_assert_eq!(page.iter().map(text).collect::<Vec<_>>(), want);
                    let (page, _) = history.page_where(heads[record], (offset, limit), true, |_| true);
                    let want: Vec<String> = expected[record].iter().skip(offset).take(limit).cloned().collect();
                    prop_assert_eq!(page.iter().map(text).collect::<Vec<_>>(), want);
                }
                prop_assert_eq!(history.all().count(), writes.len());
                prop_assert_eq!(history.len(), writes.len());
            }
        }
    }
}
