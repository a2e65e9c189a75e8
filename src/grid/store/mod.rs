//! `ColumnStore`: the records of one grid branch, held column by column in memory.
//!
//! Owns record identity (id, path, the key -> row map), record metadata (last modified time and
//! user), row order (insertion order), liveness (tombstones + compaction) and every cell with its
//! version and statuses. It stores what it is told: validating values against column types,
//! enforcing id uniqueness and limits, JSON, query indexes, history entries (the store keeps only
//! where each record's history chain starts) and persistence live
//! elsewhere. For the query engine it offers whole-column scans into row bitmaps (`scan_*`) and
//! a change journal (`set_tracking`/`take_changes`, `epoch` bumped by compaction) that its
//! indexes follow.
//!
//! Files: this one holds the struct and its records (insert, identity, delete); `columns`,
//! `cells`, `order` (paging and storage chunks), `scan` (scans and the change journal) and
//! `compact` (compaction and memory) each add one part of `ColumnStore`'s methods; `column`,
//! `text`, `chunked`, `runs`, `index` and `versions` are the storage underneath.
//!
//! Layout: every per-row vector is split in chunks of 8K rows (`chunked`); strings live in
//! per-chunk arenas (`text`); keys are hashed to `u64` and verified against the stored id, so an
//! id is stored once (`index`). A `RowId` is a physical row: deleting only tombstones it, and it
//! stays valid until the next `compact`/`maybe_compact`, which renumbers rows. Callers resolve
//! rows per message and never keep them across messages.
//!
//! Cloning is cheap (the grid actor clones a branch to write its snapshot on another thread, and
//! branches start as clones): chunks, arena chunks and hash-index shards sit behind `Arc`s and
//! are copied on write, so a clone costs O(chunks + shards), plus the liveness bitmap (about
//! 8 KiB per 64K rows), and the two stores share memory until they diverge.

mod cells;
mod chunked;
mod column;
mod columns;
mod compact;
mod index;
mod order;
mod runs;
mod scan;
mod text;
mod versions;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

use std::fmt;

use roaring::RoaringBitmap;

pub use self::chunked::ChunkHandle;
pub use self::column::{arena_cost, CellRef, CellStatuses, ColumnBuilder, KindMismatch, LoadCell};
pub use self::compact::StoreBytes;
pub use self::scan::{Changes, RowBits};
pub use self::text::{json_escaped, needs_json_escape, ListRef, RowEnds};

/// One chunk of a text column as stored: an arena holding the inline values in the order they
/// were written, with garbage between them, and where each row's value lies.
#[derive(Clone, Copy)]
pub struct TextArena<'a> {
    cells: &'a text::TextChunk,
}

impl<'a> TextArena<'a> {
    /// The arena's bytes in one or two parts, in arena order, each with the arena offset it
    /// starts at (the second holds what was written while a copy shared the first); a value
    /// lies whole in one part.
    pub fn parts(&self) -> impl Iterator<Item = (usize, &'a str)> {
        self.cells.arena_parts()
    }

    /// Rows of the chunk.
    pub fn rows(&self) -> usize {
        self.cells.len()
    }

    /// Where row `at`'s value lies in the arena (`parts`); `None` when it is absent, empty, or
    /// held outside the arena (a long value: `value` reads it).
    #[inline]
    pub fn span(&self, at: usize) -> Option<std::ops::Range<usize>> {
        self.cells.arena_span(at)
    }

    /// Row `at`'s value; `None` when absent.
    pub fn value(&self, at: usize) -> Option<&'a str> {
        self.cells.get(at)
    }

    /// Where each row's value ends, when the arena holds the rows' values in row order and
    /// nothing else (a chunk only appended to, or just collected): the order of the values in
    /// the arena is then the rows' own. `None` once a row was replaced or a value held outside.
    #[inline]
    pub fn row_ends(&self) -> Option<RowEnds<'a>> {
        self.cells.row_ends()
    }
}

use self::column::Column;
use self::index::{key_hash, HashIndex, Interner};
use self::runs::ChunkedRuns;
use self::text::TextColumn;
use crate::grid::value::CellValue;

/// A physical row of the store. Valid until the next compaction; never kept across messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowId(u32);

impl RowId {
    /// The physical row number.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The row numbered `row`, for indexes that keep row numbers; only valid while the store's
    /// `epoch` is the one the number was taken in.
    pub fn from_raw(row: u32) -> RowId {
        RowId(row)
    }

    fn at(self) -> usize {
        self.0 as usize
    }
}

/// A record an add appends (`ColumnStore::insert_many_with`): its key and the values of its
/// cells by column (a column not named has an empty cell).
pub struct NewRecord<'a> {
    pub id: &'a str,
    pub path: &'a str,
    pub values: &'a [(ColumnSlot, &'a CellValue)],
}

/// A column of the store. Handed out by `add_column`; never reused after `drop_column`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColumnSlot(u32);

impl ColumnSlot {
    /// The slot number.
    pub fn get(self) -> u32 {
        self.0
    }
}

/// What identifies a record within the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordIdentity {
    /// The record id alone; paths are ignored by lookups.
    RecordId,
    /// The pair (path, record id).
    PathAndId,
}

/// A key that stopped naming a record at `clock` (see `ColumnStore::gone_since`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoneKey {
    pub clock: u32,
    pub path: String,
    pub id: String,
}

/// A record as an image holds it, appended by `ColumnStore::insert_loaded`.
#[derive(Debug, Clone, Copy)]
pub struct LoadedRecord<'a> {
    pub id: &'a str,
    pub path: &'a str,
    pub time_ms: i64,
    pub user: &'a str,
    /// The clocks of its insertion and of its last id or path change.
    pub created: u32,
    pub moved: u32,
    /// Where its history chain starts (`u64::MAX`: none).
    pub history_head: u64,
}

/// The records of one grid branch in typed columns. See the module doc.
#[derive(Clone)]
pub struct ColumnStore {
    identity: RecordIdentity,
    ids: TextColumn,
    paths: ChunkedRuns<u32>,
    path_names: Interner,
    /// Per row: the last modification's time and editor (runs: a bulk add's records share them).
    times: ChunkedRuns<i64>,
    editors: ChunkedRuns<u32>,
    user_names: Interner,
    /// Per row: the clock when the record was inserted, and when its id or path last changed.
    created: ChunkedRuns<u32>,
    moved: ChunkedRuns<u32>,
    /// Per row: where its record's history chain starts (`grid::history::EntryRef`,
    /// `u64::MAX` for none). The entries live in `grid::history`. Runs: a bulk add's records
    /// all start with no entry or the same pending creation, so a chunk of them holds one run.
    history: ChunkedRuns<u64>,
    /// Keys that stopped naming a record (deleted, or renamed/moved away), with the clock when,
    /// in clock order; persistent, so clones share it. A merge reads what its source deleted
    /// since the common point from it instead of looking up every record.
    gone: imbl::Vector<GoneKey>,
    /// The branch's logical clock: every change stamps the cell (or row) with it. The owner
    /// advances it once per operation (`tick`); branches forked from one store share its values
    /// up to the fork, which is what three-way merges compare against.
    clock: u32,
    live: RoaringBitmap,
    by_key: HashIndex,
    columns: Vec<Option<Column>>,
    scratch: String,
    /// Whether changes are journaled (the query engine holds indexes that follow them).
    tracking: bool,
    changes: Changes,
    /// Bumped by every compaction (which renumbers rows).
    epoch: u64,
}

/// The id index's hash of the record `(path, id)` (`path` left out under
/// `RecordIdentity::RecordId`).
fn record_hash(identity: RecordIdentity, path: &str, id: &str) -> u64 {
    match identity {
        RecordIdentity::RecordId => key_hash(None, id),
        RecordIdentity::PathAndId => key_hash(Some(path), id),
    }
}

/// The key hash of the record stored at a row, from its stored id and path: what the id index
/// (which keeps rows alone) files a row under again when a table grows. Every row the index
/// holds is live and stores its current key.
fn stored_key_hash<'a>(
    identity: RecordIdentity,
    ids: &'a TextColumn,
    paths: &'a ChunkedRuns<u32>,
    path_names: &'a Interner,
) -> impl Fn(u32) -> u64 + 'a {
    move |row| {
        let row = row as usize;
        let id = ids.get(row).unwrap_or_default();
        record_hash(identity, path_names.name(paths.get(row)), id)
    }
}

impl fmt::Debug for ColumnStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ColumnStore")
            .field("identity", &self.identity)
            .field("live", &self.len())
            .field("rows", &self.ids.len())
            .field("columns", &self.columns.iter().flatten().count())
            .finish()
    }
}

impl ColumnStore {
    /// An empty store whose records are identified by `identity`.
    pub fn new(identity: RecordIdentity) -> Self {
        ColumnStore {
            identity,
            ids: TextColumn::new(),
            paths: ChunkedRuns::new(),
            path_names: Interner::default(),
            times: ChunkedRuns::new(),
            editors: ChunkedRuns::new(),
            user_names: Interner::default(),
            created: ChunkedRuns::new(),
            moved: ChunkedRuns::new(),
            history: ChunkedRuns::new(),
            gone: imbl::Vector::new(),
            clock: 0,
            live: RoaringBitmap::new(),
            by_key: HashIndex::default(),
            columns: Vec::new(),
            scratch: String::new(),
            tracking: false,
            changes: Changes::default(),
            epoch: 0,
        }
    }

    /// How records are identified.
    pub fn identity(&self) -> RecordIdentity {
        self.identity
    }

    /// The logical clock: the stamp the next change gets.
    pub fn clock(&self) -> u32 {
        self.clock
    }

    /// Advances the clock (once per operation applied); returns the new value.
    pub fn tick(&mut self) -> u32 {
        self.clock = self.clock.checked_add(1).expect("fewer than 2^32 operations per branch");
        self.clock
    }

    /// Sets the clock (loading a snapshot).
    pub fn restore_clock(&mut self, clock: u32) {
        self.clock = clock;
    }

    // ----- records -----

    /// Number of live records.
    pub fn len(&self) -> usize {
        self.live.len() as usize
    }

    /// True when there are no live records.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    fn hash_of(&self, path: &str, id: &str) -> u64 {
        record_hash(self.identity, path, id)
    }

    fn is_key_of(&self, row: u32, path: &str, id: &str) -> bool {
        let row = row as usize;
        self.ids.get(row) == Some(id)
            && match self.identity {
                RecordIdentity::RecordId => true,
                RecordIdentity::PathAndId => self.path_names.name(self.paths.get(row)) == path,
            }
    }

    /// The live row of the record `(path, id)`; `path` is ignored for `RecordIdentity::RecordId`.
    pub fn find(&self, path: &str, id: &str) -> Option<RowId> {
        let hash = self.hash_of(path, id);
        let row = self.by_key.find(hash, |row| self.is_key_of(row, path, id))?;
        Some(RowId(row))
    }

    /// Appends a record with empty cells. The caller guarantees its key is not in use.
    pub fn insert(&mut self, id: &str, path: &str, time_ms: i64, user: &str) -> RowId {
        let row = self.insert_without_cells(id, path, time_ms, user);
        for column in self.columns.iter_mut().flatten() {
            column.push_empty();
        }
        row
    }

    /// `insert` of many records with their cells (an add's): the rows are appended in order,
    /// then each column gets the cells of all of them in one pass (a value, or an empty cell,
    /// pushed at once rather than an empty cell written over). A value of another kind than its
    /// column's is left out, as `set_value` refuses it. The caller guarantees that no key is in
    /// use or given twice. Returns the first record's row; the others follow it.
    pub fn insert_many_with(
        &mut self,
        records: &[NewRecord<'_>],
        time_ms: i64,
        user: &str,
    ) -> RowId {
        let hashes: Vec<u64> = records.iter().map(|r| self.hash_of(r.path, r.id)).collect();
        let rehash = stored_key_hash(self.identity, &self.ids, &self.paths, &self.path_names);
        self.by_key.make_room(&hashes, rehash);
        let now: Vec<LoadedRecord<'_>> =
            records.iter().map(|r| self.record_now(r.id, r.path, time_ms, user)).collect();
        // `append_rows` checked that every row of them is numbered below 2^32.
        let first = self.append_rows(&now);
        let row = |i: usize| RowId(first.0 + i as u32);
        for (i, hash) in hashes.into_iter().enumerate() {
            self.index_row(hash, row(i));
        }
        let count = records.len();
        let slots = self.columns.len();
        // The values column by column: `by_slot[slot * count + i]` is record `i`'s.
        let mut by_slot: Vec<Option<&CellValue>> = vec![None; slots * count];
        for (i, record) in records.iter().enumerate() {
            for &(slot, value) in record.values {
                if (slot.0 as usize) < slots {
                    by_slot[slot.0 as usize * count + i] = Some(value);
                }
            }
        }
        let mut written = Vec::new();
        for (at, column) in self.columns.iter_mut().enumerate() {
            let Some(column) = column else { continue };
            let values = &by_slot[at * count..(at + 1) * count];
            column.push_values(values, &mut self.scratch, self.clock, |i| written.push((i, at)));
        }
        for (i, at) in written {
            self.note_written(true, row(i), ColumnSlot(at as u32));
        }
        first
    }

    /// Room in the id index for `more` records (a load inserting that many).
    pub fn reserve_records(&mut self, more: usize) {
        let rehash = stored_key_hash(self.identity, &self.ids, &self.paths, &self.path_names);
        self.by_key.reserve(more, rehash);
    }

    /// `insert` leaving every column a row short: loading an image, whose columns are then
    /// built and installed whole (`install_column`) before the store is used.
    pub fn insert_without_cells(
        &mut self,
        id: &str,
        path: &str,
        time_ms: i64,
        user: &str,
    ) -> RowId {
        let hash = self.hash_of(path, id);
        let rehash = stored_key_hash(self.identity, &self.ids, &self.paths, &self.path_names);
        self.by_key.make_room(&[hash], rehash);
        let row = self.append_row(&self.record_now(id, path, time_ms, user));
        self.index_row(hash, row);
        row
    }

    /// A new record as written now: created and moved at the branch clock, no history yet.
    fn record_now<'a>(
        &self,
        id: &'a str,
        path: &'a str,
        time_ms: i64,
        user: &'a str,
    ) -> LoadedRecord<'a> {
        LoadedRecord {
            id,
            path,
            time_ms,
            user,
            created: self.clock,
            moved: self.clock,
            history_head: u64::MAX,
        }
    }

    /// Files `row` in the id index under `hash` (room made for it first: `make_room`).
    fn index_row(&mut self, hash: u64, row: RowId) {
        let rehash = stored_key_hash(self.identity, &self.ids, &self.paths, &self.path_names);
        self.by_key.insert(hash, row.0, rehash);
    }

    /// A record of an image, appended as `insert_without_cells` would with its stamps and
    /// history head, but with its key left out of the id index: `(hash, row)` is pushed to
    /// `keys`, for `index_loaded_keys` to file every key of the load at once. The store must
    /// not be searched by key in between.
    pub fn insert_loaded(&mut self, record: &LoadedRecord<'_>, keys: &mut Vec<(u64, u32)>) {
        let row = self.append_row(record);
        keys.push((self.hash_of(record.path, record.id), row.0));
    }

    /// Files the keys `insert_loaded` set aside into the id index, shard by shard: at millions
    /// of records, each shard's table then stays in cache while its keys go in, where key
    /// after key in row order missed the cache every time.
    pub fn index_loaded_keys(&mut self, keys: Vec<(u64, u32)>) {
        let rehash = stored_key_hash(self.identity, &self.ids, &self.paths, &self.path_names);
        self.by_key.insert_many(keys, rehash);
    }

    /// Appends a row with empty cells everywhere but the columns, its key not yet in the id
    /// index; returns it.
    fn append_row(&mut self, record: &LoadedRecord<'_>) -> RowId {
        self.append_rows(std::slice::from_ref(record))
    }

    /// `append_row` of each of `records`, column by column: each chunk is made writable once
    /// for them all rather than once a record (a bulk add's thousand). Returns the first row.
    fn append_rows(&mut self, records: &[LoadedRecord<'_>]) -> RowId {
        let (first, count) = (self.ids.len(), records.len());
        let end = u32::try_from(first + count)
            .ok()
            .filter(|&end| end < u32::MAX)
            .expect("a grid branch holds fewer than 2^32 - 1 rows");
        self.ids.push_many(count, |i| Some(records[i].id));
        self.paths.push_many(count, |i| self.path_names.intern(records[i].path));
        self.times.push_many(count, |i| records[i].time_ms);
        self.editors.push_many(count, |i| self.user_names.intern(records[i].user));
        self.created.push_many(count, |i| records[i].created);
        self.moved.push_many(count, |i| records[i].moved);
        self.history.push_many(count, |i| records[i].history_head);
        let rows = end - count as u32..end;
        // `insert_range`, not `push`: roaring's `push` finds a dense container's maximum by
        // scanning its 1,024 words from the top each time (most of a 1M-record start's record
        // stage).
        self.live.insert_range(rows.clone());
        for row in rows {
            self.note_row(row);
        }
        RowId(end - count as u32)
    }

    /// Renames a record and/or moves it to another path. The caller guarantees the new key is
    /// not in use by another record.
    pub fn set_identity(&mut self, row: RowId, id: &str, path: &str) {
        let is_live = self.is_live(row);
        if is_live && (id != self.id(row) || path != self.path(row)) {
            self.note_gone(row);
        }
        if is_live {
            let old = self.hash_of(self.path(row), self.id(row));
            self.by_key.remove(old, row.0);
        }
        self.ids.set(row.at(), Some(id));
        let path_number = self.path_names.intern(path);
        self.paths.set(row.at(), path_number);
        self.moved.set(row.at(), self.clock);
        if is_live {
            let new = self.hash_of(path, id);
            let rehash = stored_key_hash(self.identity, &self.ids, &self.paths, &self.path_names);
            self.by_key.make_room(&[new], rehash);
            self.index_row(new, row);
        }
        self.note_row(row.0);
    }

    /// Records a modification of `row` at `time_ms` by `user`.
    pub fn touch(&mut self, row: RowId, time_ms: i64, user: &str) {
        self.times.set(row.at(), time_ms);
        let user = self.user_names.intern(user);
        self.editors.set(row.at(), user);
        self.note_row(row.0);
    }

    /// Tombstones a record: it leaves lookups and pages at once; its row (and every other
    /// `RowId`) stays valid until the next compaction. Deleting a deleted row does nothing.
    pub fn delete(&mut self, row: RowId) {
        if self.is_live(row) {
            self.note_gone(row);
        }
        if self.live.remove(row.0) {
            let hash = self.hash_of(self.path(row), self.id(row));
            self.by_key.remove(hash, row.0);
            self.note_row(row.0);
        }
    }

    /// True while the row holds a live (not deleted) record.
    pub fn is_live(&self, row: RowId) -> bool {
        self.live.contains(row.0)
    }

    /// The record id of `row`.
    pub fn id(&self, row: RowId) -> &str {
        self.ids.get(row.at()).expect("every row has an id")
    }

    /// The path of `row` (may be empty).
    pub fn path(&self, row: RowId) -> &str {
        self.path_names.name(self.paths.get(row.at()))
    }

    /// The distinct paths of the live records, each once, in the order of the first record
    /// (by row) holding it.
    pub fn distinct_paths(&self) -> Vec<&str> {
        let mut seen = vec![false; self.path_names.len()];
        let mut out = Vec::new();
        for row in self.live_rows() {
            let number = self.paths.get(row.at());
            if let Some(first) = seen.get_mut(number as usize).filter(|s| !**s) {
                *first = true;
                out.push(self.path_names.name(number));
            }
        }
        out
    }

    /// `id`, `path`, `modified_by` and `value_ref` for a JSON writer: each with whether its
    /// text may need escaping (false when no value stored beside it in its chunk has a byte
    /// JSON escapes; checked once, as values are stored).
    pub fn id_for_json(&self, row: RowId) -> (&str, bool) {
        let (id, escapes) = self.ids.get_for_json(row.at());
        (id.expect("every row has an id"), escapes)
    }

    /// See `id_for_json`.
    pub fn path_for_json(&self, row: RowId) -> (&str, bool) {
        self.path_names.name_for_json(self.paths.get(row.at()))
    }

    /// See `id_for_json`.
    pub fn modified_by_for_json(&self, row: RowId) -> (&str, bool) {
        self.user_names.name_for_json(self.editors.get(row.at()))
    }

    /// The cell, whether its text may need escaping (see `id_for_json`) and its statuses, from
    /// one look at its chunk (a page renders all three).
    #[inline]
    pub fn cell_for_json(&self, row: RowId, slot: ColumnSlot) -> (CellRef<'_>, bool, CellStatuses) {
        self.column(slot).get_for_json(row.at())
    }

    /// When `row` was last modified, in milliseconds since the Unix epoch.
    pub fn modified_time(&self, row: RowId) -> i64 {
        self.times.get(row.at())
    }

    /// Who last modified `row`.
    pub fn modified_by(&self, row: RowId) -> &str {
        self.user_names.name(self.editors.get(row.at()))
    }

    /// The clock when `row`'s record was inserted.
    pub fn created_at(&self, row: RowId) -> u32 {
        self.created.get(row.at())
    }

    /// The clock when `row`'s id or path last changed (its insertion, if never).
    pub fn moved_at(&self, row: RowId) -> u32 {
        self.moved.get(row.at())
    }

    fn note_gone(&mut self, row: RowId) {
        let key = GoneKey {
            clock: self.clock,
            path: self.path(row).to_owned(),
            id: self.id(row).to_owned(),
        };
        self.gone.push_back(key);
    }

    /// The keys that stopped naming a record after clock `since` (oldest first; a key may
    /// come more than once, and may name a record again since).
    pub fn gone_since(&self, since: u32) -> impl Iterator<Item = GoneKey> {
        let (mut low, mut high) = (0, self.gone.len());
        while low < high {
            let mid = (low + high) / 2;
            if self.gone[mid].clock <= since {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        self.gone.skip(low).into_iter()
    }

    /// Every gone key, oldest first (for snapshots).
    pub fn gone(&self) -> impl Iterator<Item = &GoneKey> + '_ {
        self.gone.iter()
    }

    /// Restores the gone keys (loading a snapshot).
    pub fn restore_gone(&mut self, keys: impl IntoIterator<Item = GoneKey>) {
        self.gone = keys.into_iter().collect();
    }

    /// Where the record's history chain starts (`u64::MAX`: no entry yet).
    pub fn history_head(&self, row: RowId) -> u64 {
        self.history.get(row.at())
    }

    /// Sets where the record's history chain starts.
    pub fn set_history_head(&mut self, row: RowId, head: u64) {
        self.history.set(row.at(), head);
    }

    /// Restores a row's stamps (loading a snapshot).
    pub fn restore_row_stamps(&mut self, row: RowId, created: u32, moved: u32) {
        self.created.set(row.at(), created);
        self.moved.set(row.at(), moved);
    }
}

/// A column built by `ColumnStore::build_column`, to install in a store.
pub struct BuiltColumn(Column);
