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

mod chunked;
mod column;
mod index;
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
pub use self::column::{arena_cost, CellRef, ColumnBuilder, KindMismatch, LoadCell};
pub use self::scan::{Changes, RowBits};
pub use self::text::{json_escaped, needs_json_escape, ListRef};

/// One chunk of a text column as stored: an arena holding the inline values in the order they
/// were written, with garbage between them, and where each row's value lies.
#[derive(Clone, Copy)]
pub struct TextArena<'a> {
    cells: &'a text::TextChunk,
}

impl<'a> TextArena<'a> {
    /// The arena's bytes.
    pub fn bytes(&self) -> &'a str {
        self.cells.arena()
    }

    /// Rows of the chunk.
    pub fn rows(&self) -> usize {
        self.cells.len()
    }

    /// Where row `at`'s value lies in `bytes()`; `None` when it is absent, empty, or held
    /// outside the arena (a long value: `value` reads it).
    #[inline]
    pub fn span(&self, at: usize) -> Option<std::ops::Range<usize>> {
        self.cells.arena_span(at)
    }

    /// Row `at`'s value; `None` when absent.
    pub fn value(&self, at: usize) -> Option<&'a str> {
        self.cells.get(at)
    }
}

use self::chunked::{ChunkedVec, CHUNK_ROWS};
use self::column::Column;
use self::index::{key_hash, HashIndex, Interner};
use self::runs::ChunkedRuns;
use self::text::TextColumn;
use crate::grid::value::{CellValue, DependencyStatus, SourceStatus, StorageKind};

/// Compaction runs (in `maybe_compact`) when more than 1/`COMPACT_FRACTION` of the physical rows
/// are tombstones and there are more than `COMPACT_MIN_DEAD` of them.
const COMPACT_FRACTION: u64 = 4;
const COMPACT_MIN_DEAD: u64 = 1024;

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
    /// `u64::MAX` for none). The entries live in `grid::history`.
    history: ChunkedVec<u64>,
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
            history: ChunkedVec::new(),
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

    // ----- columns -----

    /// Adds a column; every existing row gets an empty cell with version 0.
    pub fn add_column(&mut self, kind: StorageKind, localized: bool) -> ColumnSlot {
        let slot = u32::try_from(self.columns.len()).expect("fewer than 2^32 columns ever added");
        self.columns.push(Some(Column::new(kind, localized, self.ids.len())));
        ColumnSlot(slot)
    }

    /// A column's cells built apart from any store (image loading, on several threads at once):
    /// see `install_column`.
    pub fn build_column<'a>(
        kind: StorageKind,
        localized: bool,
        rows: usize,
        cell: impl FnMut(usize) -> Result<(LoadCell<'a>, u32, u8), String>,
    ) -> Result<BuiltColumn, String> {
        Column::build(kind, localized, rows, cell).map(BuiltColumn)
    }

    /// Puts a built column in `slot` in place of its cells; it must have the kind, the
    /// statuses and one cell per row of the slot's column.
    pub fn install_column(&mut self, slot: ColumnSlot, built: BuiltColumn) -> Result<(), String> {
        let rows = self.ids.len();
        let column = self.column_mut(slot);
        let fits = built.0.kind() == column.kind()
            && built.0.is_localized() == column.is_localized()
            && built.0.len() == rows;
        if !fits {
            return Err(format!("a built column does not fit slot {}", slot.0));
        }
        *column = built.0;
        Ok(())
    }

    /// Whether every column has a cell per row (after `insert_without_cells` and
    /// `install_column`, every column must have been installed).
    pub fn columns_complete(&self) -> bool {
        self.columns.iter().flatten().all(|c| c.len() == self.ids.len())
    }

    /// Drops a column and frees its cells. The slot is never handed out again.
    pub fn drop_column(&mut self, slot: ColumnSlot) {
        if let Some(column) = self.columns.get_mut(slot.0 as usize) {
            *column = None;
        }
    }

    /// Makes a column keep statuses (all unset) or stop keeping them (statuses dropped).
    pub fn set_localized(&mut self, slot: ColumnSlot, localized: bool) {
        self.column_mut(slot).set_localized(localized);
    }

    /// The storage kind of a column.
    pub fn kind(&self, slot: ColumnSlot) -> StorageKind {
        self.column(slot).kind()
    }

    /// True when the column keeps dependency/source statuses and the isMT flag.
    pub fn is_localized(&self, slot: ColumnSlot) -> bool {
        self.column(slot).is_localized()
    }

    fn column(&self, slot: ColumnSlot) -> &Column {
        let column = self.columns.get(slot.0 as usize).and_then(Option::as_ref);
        column.expect("column slots come from add_column and are not used after drop_column")
    }

    fn column_mut(&mut self, slot: ColumnSlot) -> &mut Column {
        let column = self.columns.get_mut(slot.0 as usize).and_then(Option::as_mut);
        column.expect("column slots come from add_column and are not used after drop_column")
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
        match self.identity {
            RecordIdentity::RecordId => key_hash(None, id),
            RecordIdentity::PathAndId => key_hash(Some(path), id),
        }
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

    /// `insert` with cells given (a record added whole): each column gets its value, or an
    /// empty cell, pushed at once rather than an empty cell written over. A value of another
    /// kind than its column's is left out, as `set_value` refuses it.
    pub fn insert_with(
        &mut self,
        id: &str,
        path: &str,
        time_ms: i64,
        user: &str,
        values: &[(ColumnSlot, &CellValue)],
    ) -> RowId {
        let row = self.insert_without_cells(id, path, time_ms, user);
        let mut by_slot: Vec<Option<&CellValue>> = vec![None; self.columns.len()];
        for &(slot, value) in values {
            if let Some(at) = by_slot.get_mut(slot.0 as usize) {
                *at = Some(value);
            }
        }
        let mut written = Vec::with_capacity(values.len());
        for (at, column) in self.columns.iter_mut().enumerate() {
            let Some(column) = column else { continue };
            match by_slot[at] {
                Some(value) if column.push_value(value, &mut self.scratch, self.clock) => {
                    written.push(ColumnSlot(at as u32))
                }
                Some(_) => {}
                None => column.push_empty(),
            }
        }
        for slot in written {
            self.note_written(true, row, slot);
        }
        row
    }

    /// Room in the id index for `more` records (a load inserting that many).
    pub fn reserve_records(&mut self, more: usize) {
        self.by_key.reserve(more);
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
        let record = LoadedRecord {
            id,
            path,
            time_ms,
            user,
            created: self.clock,
            moved: self.clock,
            history_head: u64::MAX,
        };
        let (row, hash) = self.append_row(&record);
        self.by_key.insert(hash, row.0);
        row
    }

    /// A record of an image, appended as `insert_without_cells` would with its stamps and
    /// history head, but with its key left out of the id index: `(hash, row)` is pushed to
    /// `keys`, for `index_loaded_keys` to file every key of the load at once. The store must
    /// not be searched by key in between.
    pub fn insert_loaded(&mut self, record: &LoadedRecord<'_>, keys: &mut Vec<(u64, u32)>) {
        let (row, hash) = self.append_row(record);
        keys.push((hash, row.0));
    }

    /// Files the keys `insert_loaded` set aside into the id index, shard by shard: at millions
    /// of records, each shard's table then stays in cache while its keys go in, where key
    /// after key in row order missed the cache every time.
    pub fn index_loaded_keys(&mut self, keys: Vec<(u64, u32)>) {
        self.by_key.insert_many(keys);
    }

    /// Appends a row with empty cells everywhere but the columns; returns it and its key's hash.
    fn append_row(&mut self, record: &LoadedRecord<'_>) -> (RowId, u64) {
        let row = u32::try_from(self.ids.len())
            .ok()
            .filter(|&row| row < u32::MAX)
            .expect("a grid branch holds fewer than 2^32 - 1 rows");
        let hash = self.hash_of(record.path, record.id);
        self.ids.push(Some(record.id));
        let path = self.path_names.intern(record.path);
        self.paths.push(path);
        self.times.push(record.time_ms);
        let user = self.user_names.intern(record.user);
        self.editors.push(user);
        self.created.push(record.created);
        self.moved.push(record.moved);
        self.history.push(record.history_head);
        // `insert`, not `push`: roaring's `push` finds a dense container's maximum by scanning
        // its 1,024 words from the top each time (most of a 1M-record start's record stage).
        self.live.insert(row);
        self.note_row(row);
        (RowId(row), hash)
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
            self.by_key.insert(new, row.0);
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

    /// See `id_for_json`.
    pub fn value_ref_for_json(&self, row: RowId, slot: ColumnSlot) -> (CellRef<'_>, bool) {
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

    // ----- cells -----

    /// Writes a cell. The value must be `Empty` or of the column's storage kind. Returns
    /// `Ok(true)` when the cell changed (its version was then set to the clock), `Ok(false)` for a write of
    /// the value already there. `Datetime(i64::MIN)` is the empty datetime and reads back `Empty`.
    pub fn set_value(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        value: &CellValue,
    ) -> Result<bool, KindMismatch> {
        let column = self.columns.get_mut(slot.0 as usize).and_then(Option::as_mut);
        let column = column.expect("column slots are not used after drop_column");
        let changed = column.set(row.at(), value, &mut self.scratch, self.clock)?;
        self.note_written(changed, row, slot);
        Ok(changed)
    }

    /// `set_value` of a text cell given as `&str`.
    pub fn set_text(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        value: &str,
    ) -> Result<bool, KindMismatch> {
        let column = self.columns.get_mut(slot.0 as usize).and_then(Option::as_mut);
        let column = column.expect("column slots are not used after drop_column");
        let changed = column.set_text(row.at(), value, self.clock)?;
        self.note_written(changed, row, slot);
        Ok(changed)
    }

    /// Journals a cell write that changed the cell.
    fn note_written(&mut self, changed: bool, row: RowId, slot: ColumnSlot) {
        if changed && self.tracking {
            let limit = self.journal_limit();
            self.changes.note_cell(row.0, slot.0, limit);
        }
    }

    /// The cell's value, owned.
    pub fn value(&self, row: RowId, slot: ColumnSlot) -> CellValue {
        self.value_ref(row, slot).to_value()
    }

    /// The cell's value, borrowed (no allocation).
    #[inline]
    pub fn value_ref(&self, row: RowId, slot: ColumnSlot) -> CellRef<'_> {
        self.column(slot).get(row.at())
    }

    /// The cell's version: 0 until first changed, then the clock of the last change of its value
    /// or statuses.
    pub fn version(&self, row: RowId, slot: ColumnSlot) -> u32 {
        self.column(slot).version(row.at())
    }

    /// Restores a cell's version (loading a snapshot); nothing else sets versions directly.
    pub fn restore_version(&mut self, row: RowId, slot: ColumnSlot, version: u32) {
        self.column_mut(slot).restore_version(row.at(), version);
    }

    /// The cell's dependency status (`Unset` in a column that is not localized).
    pub fn dependency_status(&self, row: RowId, slot: ColumnSlot) -> DependencyStatus {
        self.column(slot).dependency_status(row.at())
    }

    /// Sets the cell's dependency status; true when it changed. Ignored (false) in a column that
    /// is not localized.
    pub fn set_dependency_status(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        status: DependencyStatus,
    ) -> bool {
        let clock = self.clock;
        self.column_mut(slot).set_dependency_status(row.at(), status, clock)
    }

    /// The cell's source status (`Unset` in a column that is not localized).
    pub fn source_status(&self, row: RowId, slot: ColumnSlot) -> SourceStatus {
        self.column(slot).source_status(row.at())
    }

    /// Sets the cell's source status; true when it changed. Ignored (false) in a column that is
    /// not localized.
    pub fn set_source_status(
        &mut self,
        row: RowId,
        slot: ColumnSlot,
        status: SourceStatus,
    ) -> bool {
        let clock = self.clock;
        self.column_mut(slot).set_source_status(row.at(), status, clock)
    }

    /// True when the cell was machine translated (false in a column that is not localized).
    pub fn is_mt(&self, row: RowId, slot: ColumnSlot) -> bool {
        self.column(slot).is_mt(row.at())
    }

    /// Sets the cell's isMT flag; true when it changed. Ignored (false) in a column that is not
    /// localized.
    pub fn set_mt(&mut self, row: RowId, slot: ColumnSlot, mt: bool) -> bool {
        let clock = self.clock;
        self.column_mut(slot).set_mt(row.at(), mt, clock)
    }

    // ----- order and paging -----

    /// Up to `limit` live rows in insertion order, skipping the first `offset` live rows.
    /// Costs O(log n + limit) at any offset.
    pub fn page(&self, offset: usize, limit: usize) -> impl Iterator<Item = RowId> + '_ {
        let start = u32::try_from(offset).ok().and_then(|offset| self.live.select(offset));
        start.map(|start| self.live.range(start..)).into_iter().flatten().take(limit).map(RowId)
    }

    /// Every live row in insertion order.
    pub fn live_rows(&self) -> impl Iterator<Item = RowId> + '_ {
        self.live.iter().map(RowId)
    }

    /// How many storage chunks the rows (live or not) take; chunk `k` holds rows
    /// `k * CHUNK_ROWS ..`, and a snapshot cuts its parts along them.
    pub fn chunk_count(&self) -> usize {
        self.ids.len().div_ceil(chunked::CHUNK_ROWS)
    }

    fn chunk_range(chunk: usize) -> std::ops::Range<u32> {
        let start = chunk.saturating_mul(chunked::CHUNK_ROWS);
        let end = start.saturating_add(chunked::CHUNK_ROWS);
        u32::try_from(start).unwrap_or(u32::MAX)..u32::try_from(end).unwrap_or(u32::MAX)
    }

    /// The live rows of storage chunk `chunk`, in order.
    pub fn live_rows_of_chunk(&self, chunk: usize) -> impl Iterator<Item = RowId> + '_ {
        self.live.range(Self::chunk_range(chunk)).map(RowId)
    }

    /// How many rows of storage chunk `chunk` are live. Rows are only ever appended after the
    /// last chunk and deleted (until a compaction renumbers them, `epoch`), so the same count
    /// means the same rows.
    pub fn live_in_chunk(&self, chunk: usize) -> u64 {
        self.live.range_cardinality(Self::chunk_range(chunk))
    }

    /// Handles on what a record of storage chunk `chunk` is made of (id, path, time, editor,
    /// stamps, history head): while all are `same`, so are its records.
    pub fn record_chunk_handles(&self, chunk: usize) -> Vec<ChunkHandle> {
        [
            self.ids.handle(chunk),
            self.paths.handle(chunk),
            self.times.handle(chunk),
            self.editors.handle(chunk),
            self.created.handle(chunk),
            self.moved.handle(chunk),
            self.history.handle(chunk),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// A handle on storage chunk `chunk` of a column's cells, statuses and versions.
    pub fn column_chunk_handle(&self, slot: ColumnSlot, chunk: usize) -> Option<ChunkHandle> {
        self.columns.get(slot.0 as usize)?.as_ref()?.handle(chunk)
    }

    /// A handle on storage chunk `chunk` of a column's cells alone (not their statuses and
    /// versions).
    pub fn column_cells_handle(&self, slot: ColumnSlot, chunk: usize) -> Option<ChunkHandle> {
        self.columns.get(slot.0 as usize)?.as_ref()?.cells_handle(chunk)
    }

    /// The rank of `row` among live rows (its offset in `page`). For a deleted row: the number
    /// of live rows before it.
    pub fn position(&self, row: RowId) -> usize {
        let at_or_before = self.live.rank(row.0) as usize;
        at_or_before - usize::from(self.live.contains(row.0))
    }

    /// Number of physical rows (live and tombstoned): every `RowId` is below it.
    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// The live rows as a set.
    pub fn live(&self) -> &RoaringBitmap {
        &self.live
    }

    // ----- scans (for the query engine) -----

    /// True while `slot` names a column (it was added and not dropped).
    pub fn has_column(&self, slot: ColumnSlot) -> bool {
        self.columns.get(slot.0 as usize).is_some_and(Option::is_some)
    }

    /// Rows per storage chunk: chunk `i` holds rows `i * chunk_rows() ..`.
    pub const fn chunk_rows() -> usize {
        CHUNK_ROWS
    }

    /// The cells of one storage chunk of a column, in row order.
    pub fn chunk_cells(
        &self,
        slot: ColumnSlot,
        chunk: usize,
    ) -> impl Iterator<Item = CellRef<'_>> + '_ {
        self.column(slot).chunk_cells(chunk)
    }

    /// Chunk `chunk` of a text column as stored (`None` for other kinds): searches run over its
    /// arena instead of a copy of its text.
    pub fn text_arena(&self, slot: ColumnSlot, chunk: usize) -> Option<TextArena<'_>> {
        self.column(slot).chunk_text(chunk).map(|cells| TextArena { cells })
    }

    /// The live rows whose cell satisfies `keep`.
    pub fn scan(&self, slot: ColumnSlot, keep: impl FnMut(CellRef<'_>) -> bool) -> RoaringBitmap {
        self.column(slot).scan(keep) & &self.live
    }

    /// The live rows of a number column whose non-empty value satisfies `keep`. Panics on a
    /// column of another kind.
    pub fn scan_numbers(&self, slot: ColumnSlot, keep: impl FnMut(f64) -> bool) -> RoaringBitmap {
        self.column(slot).scan_numbers(keep) & &self.live
    }

    /// The live rows of a boolean column whose non-empty value satisfies `keep`. Panics on a
    /// column of another kind.
    pub fn scan_booleans(&self, slot: ColumnSlot, keep: impl FnMut(bool) -> bool) -> RoaringBitmap {
        self.column(slot).scan_booleans(keep) & &self.live
    }

    /// The live rows of a datetime column whose non-empty value satisfies `keep`. Panics on a
    /// column of another kind.
    pub fn scan_datetimes(&self, slot: ColumnSlot, keep: impl FnMut(i64) -> bool) -> RoaringBitmap {
        self.column(slot).scan_datetimes(keep) & &self.live
    }

    /// The live rows whose cell is empty (absent, `""` or an empty list).
    pub fn scan_empty(&self, slot: ColumnSlot) -> RoaringBitmap {
        self.column(slot).scan_empty() & &self.live
    }

    /// The live rows whose dependency and source statuses satisfy `keep` (none in a column
    /// that is not localized).
    pub fn scan_statuses(
        &self,
        slot: ColumnSlot,
        mut keep: impl FnMut(DependencyStatus, SourceStatus) -> bool,
    ) -> RoaringBitmap {
        let mut table = [false; 256];
        for (byte, entry) in table.iter_mut().enumerate() {
            let byte = byte as u8;
            *entry = keep(
                DependencyStatus::from_u8(byte & column::DEPENDENCY_MASK),
                SourceStatus::from_u8((byte & column::SOURCE_MASK) >> column::SOURCE_SHIFT),
            );
        }
        self.column(slot).scan_status(|byte| table[byte as usize]) & &self.live
    }

    /// The live rows whose cell of `slot` changed after clock `since`.
    pub fn scan_changed_since(&self, slot: ColumnSlot, since: u32) -> RoaringBitmap {
        self.column(slot).scan_changed_since(since) & &self.live
    }

    /// The live rows inserted or moved (id or path changed) after clock `since`.
    pub fn scan_moved_since(&self, since: u32) -> RoaringBitmap {
        let mut bits = RowBits::default();
        for (row, stamp) in self.moved.values().enumerate() {
            if stamp > since {
                bits.insert(row as u32);
            }
        }
        bits.finish() & &self.live
    }

    /// The live rows whose record id satisfies `keep`.
    pub fn scan_ids(&self, mut keep: impl FnMut(&str) -> bool) -> RoaringBitmap {
        let mut bits = RowBits::default();
        for row in 0..self.ids.len() {
            if keep(self.ids.get(row).unwrap_or_default()) {
                bits.insert(row as u32);
            }
        }
        bits.finish() & &self.live
    }

    /// The live rows whose path satisfies `keep` (called once per distinct path).
    pub fn scan_paths(&self, keep: impl FnMut(&str) -> bool) -> RoaringBitmap {
        scan_interned(&self.paths, &self.path_names, keep) & &self.live
    }

    /// The live rows whose last editor satisfies `keep` (called once per distinct name).
    pub fn scan_editors(&self, keep: impl FnMut(&str) -> bool) -> RoaringBitmap {
        scan_interned(&self.editors, &self.user_names, keep) & &self.live
    }

    /// The live rows whose last modified time satisfies `keep`.
    pub fn scan_times(&self, mut keep: impl FnMut(i64) -> bool) -> RoaringBitmap {
        let mut bits = RowBits::default();
        for (row, time) in self.times.values().enumerate() {
            if keep(time) {
                bits.insert(row as u32);
            }
        }
        bits.finish() & &self.live
    }

    // ----- change journal (for the query engine's indexes) -----

    /// Starts or stops journaling changes; either way the journal starts empty.
    pub fn set_tracking(&mut self, on: bool) {
        self.tracking = on;
        self.changes = Changes::default();
    }

    /// Whether changes are journaled.
    pub fn is_tracking(&self) -> bool {
        self.tracking
    }

    /// The changes since the last call (or since tracking started), leaving the journal empty.
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// Bumped by every compaction, which renumbers rows: indexes of an older epoch are stale.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Journal entries kept before it overflows (indexes are then rebuilt rather than patched).
    fn journal_limit(&self) -> usize {
        (self.ids.len() / 4).max(65_536)
    }

    fn note_row(&mut self, row: u32) {
        if self.tracking {
            let limit = self.journal_limit();
            self.changes.note_row(row, limit);
        }
    }

    // ----- compaction and memory -----

    /// Number of tombstoned rows awaiting compaction.
    pub fn tombstones(&self) -> usize {
        self.ids.len() - self.len()
    }

    /// Compacts when tombstones exceed a quarter of the rows and 1024; true when it did.
    /// The grid actor calls this at the end of each write message, once it no longer holds
    /// `RowId`s (compaction renumbers rows, so it never runs inside `delete`).
    pub fn maybe_compact(&mut self) -> bool {
        let dead = self.tombstones() as u64;
        let due = dead > COMPACT_MIN_DEAD && dead * COMPACT_FRACTION > self.ids.len() as u64;
        if due {
            self.compact();
        }
        due
    }

    /// Drops tombstoned rows and string garbage, keeping insertion order. Invalidates every
    /// `RowId`; live rows are renumbered 0..len in order.
    pub fn compact(&mut self) {
        self.epoch += 1;
        let live = std::mem::take(&mut self.live);
        let mut new_row = vec![u32::MAX; self.ids.len()];
        for (rank, row) in live.iter().enumerate() {
            new_row[row as usize] = u32::try_from(rank).expect("ranks are below the row count");
        }
        self.ids.retain_rows(&live);
        self.times.retain_rows(&live);
        self.editors.retain_rows(&live);
        self.paths.retain_rows(&live);
        self.created.retain_rows(&live);
        self.moved.retain_rows(&live);
        self.history.retain_rows(&live);
        for column in self.columns.iter_mut().flatten() {
            column.retain_rows(&live);
        }
        self.by_key.remap(|row| new_row[row as usize]);
        let rows = u32::try_from(self.ids.len()).expect("row count fits u32");
        self.live.insert_range(0..rows);
        self.path_names = reintern(&mut self.paths, &self.path_names);
        self.user_names = reintern(&mut self.editors, &self.user_names);
    }

    /// Approximate bytes held on the heap: vector capacities, arenas, maps and bitmaps.
    pub fn heap_bytes(&self) -> usize {
        self.heap_parts().total()
    }

    /// Heap bytes of one column's cells (values, versions, statuses); 0 for a dropped slot.
    pub fn column_heap_bytes(&self, slot: ColumnSlot) -> usize {
        self.columns.get(slot.0 as usize).and_then(Option::as_ref).map_or(0, Column::heap_bytes)
    }

    /// `heap_bytes` by part.
    pub fn heap_parts(&self) -> StoreBytes {
        let cells: usize = self.columns.iter().flatten().map(Column::heap_bytes).sum::<usize>()
            + self.columns.capacity() * std::mem::size_of::<Option<Column>>();
        let records = self.ids.heap_bytes()
            + self.paths.heap_bytes()
            + self.path_names.heap_bytes()
            + self.times.heap_bytes()
            + self.editors.heap_bytes()
            + self.user_names.heap_bytes()
            + self.created.heap_bytes()
            + self.moved.heap_bytes()
            + self.history.heap_bytes()
            + self.live.serialized_size()
            + self.scratch.capacity();
        let journal = (self.changes.cells.capacity() * 8) + self.changes.rows.capacity() * 4;
        StoreBytes { cells, records, keys: self.by_key.heap_bytes(), journal }
    }
}

/// A column built by `ColumnStore::build_column`, to install in a store.
pub struct BuiltColumn(Column);

/// Heap bytes of a store by part (`ColumnStore::heap_parts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreBytes {
    /// Cells of every column: values, versions, statuses.
    pub cells: usize,
    /// Per-record data: ids, paths, times, editors, stamps, history heads, liveness.
    pub records: usize,
    /// The key -> row hash index.
    pub keys: usize,
    /// The change journal the query indexes follow.
    pub journal: usize,
}

impl StoreBytes {
    /// Every part together (`ColumnStore::heap_bytes`).
    pub fn total(&self) -> usize {
        self.cells + self.records + self.keys + self.journal
    }
}

/// The physical rows whose interned name satisfies `keep`, deciding once per name.
fn scan_interned(
    numbers: &ChunkedRuns<u32>,
    names: &Interner,
    mut keep: impl FnMut(&str) -> bool,
) -> RoaringBitmap {
    let table: Vec<bool> = (0..names.len()).map(|n| keep(names.name(n as u32))).collect();
    let mut bits = RowBits::default();
    for (row, number) in numbers.values().enumerate() {
        if table[number as usize] {
            bits.insert(row as u32);
        }
    }
    bits.finish()
}

/// Rebuilds an interner with only the names `numbers` still uses, renumbering `numbers`.
fn reintern(numbers: &mut ChunkedRuns<u32>, names: &Interner) -> Interner {
    let mut kept = Interner::default();
    let mut renumbered = vec![u32::MAX; names.len()];
    numbers.update_each(|old| {
        let new = &mut renumbered[old as usize];
        if *new == u32::MAX {
            *new = kept.intern(names.name(old));
        }
        *new
    });
    kept
}
