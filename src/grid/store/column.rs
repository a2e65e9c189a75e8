//! One column of the store: typed cells, per-cell versions (in runs: `versions`) and, for
//! language columns, statuses.
//!
//! Owns the packed status byte and the version rule (a version is set to the store's clock
//! exactly when the cell's value or statuses change). A column is a `Chunked` of column chunks, each holding the cells, versions and status bytes of its rows, so
//! that a write makes one copy-on-write check, a clone shares every chunk, and a write that
//! changes nothing copies nothing. Row numbering, liveness and record identity belong to
//! `ColumnStore`; this module never decides which rows live. The per-kind cell layouts and
//! their empty markers are in `cells`, the scans in `scan`, bulk building in `builder`.

use crate::grid::damage::LoadResult;
use std::fmt;
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::chunked::{arc_bytes, split, Chunk, Chunked, CHUNK_ROWS};
use super::scan::RowBits;
use super::text::{ListRef, TextChunk};
use super::versions::Versions;
use crate::grid::value::{CellValue, DependencyStatus, SourceStatus, StorageKind};

mod builder;
mod cells;
mod scan;

pub use builder::{arena_cost, ColumnBuilder};
use cells::{
    empty_of, other_kind, push_row, stored, stored_number, Cells, Stored, BOOLEAN_EMPTY,
    DATETIME_EMPTY, NUMBER_EMPTY,
};

/// Status byte layout: bits 0-1 dependency status, bits 2-4 source status, bit 5 isMT.
pub(super) const DEPENDENCY_MASK: u8 = 0b11;
pub(super) const SOURCE_SHIFT: u8 = 2;
pub(super) const SOURCE_MASK: u8 = 0b111 << SOURCE_SHIFT;
const MT_BIT: u8 = 1 << 5;

/// A cell's statuses as its chunk keeps them (all clear in a column that is not localized).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellStatuses(u8);

impl CellStatuses {
    pub fn dependency(self) -> DependencyStatus {
        DependencyStatus::from_u8(self.0 & DEPENDENCY_MASK)
    }

    pub fn source(self) -> SourceStatus {
        SourceStatus::from_u8((self.0 & SOURCE_MASK) >> SOURCE_SHIFT)
    }

    pub fn is_mt(self) -> bool {
        self.0 & MT_BIT != 0
    }
}

/// A borrowed cell value: reading one allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CellRef<'a> {
    /// No value.
    Empty,
    /// A text cell.
    Text(&'a str),
    /// A number cell.
    Number(f64),
    /// A boolean cell.
    Boolean(bool),
    /// A datetime cell, milliseconds since the Unix epoch.
    Datetime(i64),
    /// A list cell; iterate it for the items.
    List(ListRef<'a>),
}

impl CellRef<'_> {
    /// The owned value.
    pub fn to_value(self) -> CellValue {
        match self {
            CellRef::Empty => CellValue::Empty,
            CellRef::Text(s) => CellValue::Text(s.to_owned()),
            CellRef::Number(n) => CellValue::Number(n),
            CellRef::Boolean(b) => CellValue::Boolean(b),
            CellRef::Datetime(t) => CellValue::Datetime(t),
            CellRef::List(items) => CellValue::List(items.to_vec()),
        }
    }
}

/// A write whose value kind differs from the column's storage kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindMismatch {
    /// The column's storage kind.
    pub column: StorageKind,
    /// The kind of the rejected value.
    pub value: StorageKind,
}

impl fmt::Display for KindMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {:?} value cannot be stored in a {:?} column", self.value, self.column)
    }
}

impl std::error::Error for KindMismatch {}

/// A cell as an image holds it, to build a column from (`ColumnStore::build_column`).
#[derive(Debug, Clone, PartialEq)]
pub enum LoadCell<'a> {
    Empty,
    Text(&'a str),
    Number(f64),
    Boolean(bool),
    Datetime(i64),
    List(Vec<&'a str>),
}

/// Inserts `base + at` for each `at < rows` that satisfies `keep`.
#[inline]
fn insert_where(bits: &mut RowBits, base: u32, rows: usize, keep: impl Fn(usize) -> bool) {
    for at in 0..rows {
        if keep(at) {
            bits.insert(base + at as u32);
        }
    }
}

/// Up to `CHUNK_ROWS` rows of one column: cells, versions and (when localized) status bytes.
/// One write touches one chunk, so it pays one copy-on-write check. The cells are shared on
/// their own: a status change on a chunk shared with a snapshot's copy copies the small
/// versions and statuses, not a megabyte-sized text arena.
#[derive(Clone)]
struct ColumnChunk {
    cells: Arc<Cells>,
    /// In runs while rows come in runs (a bulk add's rows share one version).
    versions: Versions,
    status: Option<Vec<u8>>,
}

impl ColumnChunk {
    fn filled_empty(kind: StorageKind, localized: bool, rows: usize) -> Self {
        ColumnChunk {
            cells: Arc::new(Cells::filled_empty(kind, rows)),
            versions: Versions::zeros(rows),
            status: localized.then(|| vec![0; rows]),
        }
    }

    fn with_capacity(kind: StorageKind, localized: bool, rows: usize) -> Self {
        ColumnChunk {
            cells: Arc::new(Cells::with_capacity(kind, rows)),
            versions: Versions::default(),
            status: localized.then(|| Vec::with_capacity(rows)),
        }
    }

    /// A chunk to fill after `full` (the column's last chunk, full; `None` for its first),
    /// with room for what `full` holds (`Cells::following`).
    fn following(kind: StorageKind, localized: bool, full: Option<&ColumnChunk>) -> Self {
        let rows = if full.is_some() { CHUNK_ROWS } else { 0 };
        ColumnChunk {
            cells: Arc::new(Cells::following(kind, full.map(|f| &*f.cells))),
            versions: Versions::default(),
            status: localized.then(|| Vec::with_capacity(rows)),
        }
    }

    fn push(&mut self, value: Stored<'_>, version: u32, status: u8) {
        self.appender().push(value, version, status);
    }

    /// A writer that appends rows as `push` does, the cells made writable once for all of
    /// them rather than once a row: `Arc::make_mut` is an atomic operation that waits for
    /// every store before it, and once per cell and per record it was a twentieth of a bulk
    /// load's CPU.
    fn appender(&mut self) -> ChunkAppender<'_> {
        ChunkAppender {
            cells: Arc::make_mut(&mut self.cells),
            versions: &mut self.versions,
            status: self.status.as_mut(),
        }
    }

    /// Appends a copy of row `at` of `source`.
    fn push_from(&mut self, source: &ColumnChunk, at: usize) {
        let status = source.status.as_ref().map_or(0, |s| s[at]);
        self.push(source.cells.stored_at(at), source.versions.get(at), status);
    }

    /// The status byte of the chunk's row `at` (0 in a column that is not localized).
    fn status_byte(&self, at: usize) -> u8 {
        self.status.as_ref().map_or(0, |s| s[at])
    }

    fn stamp(&mut self, at: usize, clock: u32) {
        self.versions.set(at, clock);
    }
}

/// Appends rows to one `ColumnChunk` (`ColumnChunk::appender`).
struct ChunkAppender<'c> {
    cells: &'c mut Cells,
    versions: &'c mut Versions,
    status: Option<&'c mut Vec<u8>>,
}

impl ChunkAppender<'_> {
    fn push(&mut self, value: Stored<'_>, version: u32, status: u8) {
        self.cells.push(value);
        self.versions.push(version);
        if let Some(statuses) = &mut self.status {
            push_row(statuses, status);
        }
    }
}

impl Chunk for ColumnChunk {
    fn heap_bytes(&self) -> usize {
        let status = self.status.as_ref().map_or(0, Chunk::heap_bytes);
        arc_bytes::<Cells>() + self.cells.heap_bytes() + self.versions.heap_bytes() + status
    }

    fn shrink(&mut self) {
        self.versions.shrink();
        // Cells shared with a copy stay as they are (shrinking them would copy them).
        if let Some(Cells::Text(cells) | Cells::List(cells)) = Arc::get_mut(&mut self.cells) {
            cells.shrink();
        }
    }
}

/// One column's cells, versions and (when localized) status bytes, in shared chunks.
#[derive(Clone)]
pub(super) struct Column {
    kind: StorageKind,
    localized: bool,
    chunks: Chunked<ColumnChunk>,
}

impl Column {
    /// A column of `rows` empty cells.
    pub(super) fn new(kind: StorageKind, localized: bool, rows: usize) -> Self {
        let chunks = Chunked::from_fn(rows, |n| ColumnChunk::filled_empty(kind, localized, n));
        Column { kind, localized, chunks }
    }

    /// A column of `rows` cells built in order, chunk by chunk (no copy-on-write check per
    /// cell): `cell(row)` gives each cell, its version and its status byte (kept only when
    /// `localized`). A cell of another kind than `kind` is an error.
    pub(super) fn build<'a>(
        kind: StorageKind,
        localized: bool,
        rows: usize,
        mut cell: impl FnMut(usize) -> LoadResult<(LoadCell<'a>, u32, u8)>,
    ) -> LoadResult<Column> {
        let mut builder = ColumnBuilder::new(kind, localized, rows);
        // A chunk's cells are gathered first, so that a text arena is sized once, exactly.
        let mut gathered = Vec::with_capacity(rows.min(CHUNK_ROWS));
        let mut row = 0;
        while row < rows {
            let n = builder.room();
            gathered.clear();
            for r in row..row + n {
                gathered.push(cell(r)?);
            }
            let text = |(value, ..): &(LoadCell<'_>, u32, u8)| match value {
                LoadCell::Text(s) => arena_cost(s.len()),
                _ => 0,
            };
            let bytes: usize = gathered.iter().map(text).sum();
            for (value, version, status) in gathered.drain(..) {
                builder.push(&value, version, status, |_| bytes)?;
            }
            row += n;
        }
        builder.into_column()
    }

    /// Number of rows.
    pub(super) fn len(&self) -> usize {
        self.chunks.len()
    }

    /// A handle on the contents of chunk `index`.
    pub(super) fn handle(&self, index: usize) -> Option<super::ChunkHandle> {
        self.chunks.handle(index)
    }

    /// A handle on the cells of chunk `index` alone: it stays the same while only the chunk's
    /// statuses and versions change.
    pub(super) fn cells_handle(&self, index: usize) -> Option<super::ChunkHandle> {
        self.chunks.iter_chunks().nth(index).map(|chunk| super::ChunkHandle::of(&chunk.cells))
    }

    /// The storage kind.
    pub(super) fn kind(&self) -> StorageKind {
        self.kind
    }

    /// True when the column keeps statuses.
    pub(super) fn is_localized(&self) -> bool {
        self.localized
    }

    /// Starts (all statuses unset) or stops (statuses dropped) keeping statuses.
    pub(super) fn set_localized(&mut self, localized: bool) {
        if localized == self.localized {
            return;
        }
        self.localized = localized;
        for chunk in self.chunks.chunks_mut() {
            chunk.status = localized.then(|| vec![0; chunk.versions.len()]);
        }
    }

    /// Appends an empty cell (version 0, statuses unset).
    pub(super) fn push_empty(&mut self) {
        let (kind, localized) = (self.kind, self.localized);
        let new_chunk = |full: Option<&_>| ColumnChunk::following(kind, localized, full);
        self.chunks.push_with(new_chunk, |chunk| chunk.push(empty_of(kind), 0, 0));
    }

    /// Appends a cell for each of `values` (`None`, or a value of another kind than the
    /// column's: an empty cell; a value: version `clock`, statuses unset), each chunk made
    /// writable once rather than per cell; `written(i)` is called for each value that left
    /// its cell not empty.
    pub(super) fn push_values(
        &mut self,
        values: &[Option<&CellValue>],
        scratch: &mut String,
        clock: u32,
        mut written: impl FnMut(usize),
    ) {
        let (kind, localized) = (self.kind, self.localized);
        let new_chunk = |full: Option<&_>| ColumnChunk::following(kind, localized, full);
        self.chunks.push_ranges_with(values.len(), new_chunk, |chunk, rows| {
            let mut appender = chunk.appender();
            for i in rows {
                let value = values[i].and_then(|value| stored(kind, value, scratch).ok());
                let value = value.unwrap_or(empty_of(kind));
                let is_written = value != empty_of(kind);
                if is_written {
                    written(i);
                }
                appender.push(value, if is_written { clock } else { 0 }, 0);
            }
        });
    }

    /// The cell of `row`.
    #[inline]
    pub(super) fn get(&self, row: usize) -> CellRef<'_> {
        let (chunk, at) = self.chunks.chunk(row);
        chunk.cells.get(at)
    }

    /// The cell at `row`, whether its text may need JSON escaping (`Cells::escapes`) and its
    /// statuses, from one look at its chunk.
    #[inline]
    pub(super) fn get_for_json(&self, row: usize) -> (CellRef<'_>, bool, CellStatuses) {
        let (chunk, at) = self.chunks.chunk(row);
        (chunk.cells.get(at), chunk.cells.escapes(), CellStatuses(chunk.status_byte(at)))
    }

    /// The cells of chunk number `index` (rows `index * CHUNK_ROWS ..`), in row order.
    /// The text cells of chunk `index` as stored (`None` for other kinds).
    pub(super) fn chunk_text(&self, index: usize) -> Option<&TextChunk> {
        match self.chunks[index].cells.as_ref() {
            Cells::Text(cells) => Some(cells),
            _ => None,
        }
    }

    pub(super) fn chunk_cells(&self, index: usize) -> impl Iterator<Item = CellRef<'_>> + '_ {
        let chunk = &self.chunks[index];
        (0..chunk.versions.len()).map(move |at| chunk.cells.get(at))
    }

    /// Writes a cell; `Ok(true)` when it changed (its version was then set to `clock`). A write of the
    /// value already there changes (and copies) nothing. `scratch` is reused to encode lists.
    pub(super) fn set(
        &mut self,
        row: usize,
        value: &CellValue,
        scratch: &mut String,
        clock: u32,
    ) -> Result<bool, KindMismatch> {
        let value = stored(self.kind, value, scratch)?;
        Ok(self.set_stored(row, value, clock))
    }

    /// `set` of a text value borrowed as `&str` (loading an image: no owned value is made).
    pub(super) fn set_text(
        &mut self,
        row: usize,
        value: &str,
        clock: u32,
    ) -> Result<bool, KindMismatch> {
        if self.kind != StorageKind::Text {
            return Err(KindMismatch { column: self.kind, value: StorageKind::Text });
        }
        Ok(self.set_stored(row, Stored::Text(Some(value)), clock))
    }

    fn set_stored(&mut self, row: usize, value: Stored<'_>, clock: u32) -> bool {
        let (chunk, at) = self.chunks.chunk(row);
        if chunk.cells.stored_at(at) == value {
            return false;
        }
        let (chunk, at) = self.chunks.chunk_mut(row);
        Arc::make_mut(&mut chunk.cells).write(at, value);
        chunk.stamp(at, clock);
        true
    }

    /// The cell's version: 0 for a never-written cell, else the store's clock at its last change.
    pub(super) fn version(&self, row: usize) -> u32 {
        let (chunk, at) = self.chunks.chunk(row);
        chunk.versions.get(at)
    }

    /// Calls `cell` with the cell of each of `rows` (ascending, as `status_bytes_ascending`),
    /// each chunk looked up once for all its rows.
    pub(super) fn for_each_cell_ascending<R>(
        &self,
        rows: &[R],
        at: impl Fn(&R) -> usize,
        mut cell: impl FnMut(CellRef<'_>),
    ) {
        for (chunk, group) in self.by_chunk(rows, &at) {
            for row in group {
                cell(chunk.cells.get(split(at(row)).1));
            }
        }
    }

    /// The status bytes of `rows` (ascending: a snapshot's rows of a chunk; `at`: a row's
    /// index), each chunk looked up once for all its rows; 0 in a column that is not
    /// localized.
    pub(super) fn status_bytes_ascending<R>(
        &self,
        rows: &[R],
        at: impl Fn(&R) -> usize,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(rows.len());
        for (chunk, group) in self.by_chunk(rows, &at) {
            match &chunk.status {
                Some(status) => out.extend(group.iter().map(|row| status[split(at(row)).1])),
                None => out.resize(out.len() + group.len(), 0),
            }
        }
        out
    }

    /// At least as many bytes as the text of storage chunk `chunk` counts for a snapshot's
    /// parts (`cell_bytes`: a text's bytes, a list's items' bytes plus 8 each); 0 for a
    /// column of fixed-width values. A list item of n bytes takes at least n + 2 in its
    /// arena (`<len>:<item>`), and n + 8 <= 4 (n + 2).
    pub(super) fn text_bytes_bound(&self, chunk: usize) -> usize {
        match self.chunks.get_chunk(chunk).map(|c| &*c.cells) {
            Some(Cells::Text(text)) => text.bytes_at_least_held(),
            Some(Cells::List(list)) => list.bytes_at_least_held().saturating_mul(4),
            _ => 0,
        }
    }

    /// The versions of `rows` (ascending: a snapshot's rows of a chunk), read along each
    /// chunk's runs rather than searched for row by row (`at`: a row's index).
    pub(super) fn versions_ascending<R>(&self, rows: &[R], at: impl Fn(&R) -> usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(rows.len());
        for (chunk, group) in self.by_chunk(rows, &at) {
            out.extend(chunk.versions.get_ascending(group.iter().map(|row| split(at(row)).1)));
        }
        out
    }

    /// `rows` (`at`: a row's index) in runs that lie in one chunk, each with its chunk: how the
    /// reads of a snapshot's rows look each chunk up once for all its rows.
    fn by_chunk<'a, R, F: Fn(&R) -> usize>(
        &'a self,
        rows: &'a [R],
        at: &'a F,
    ) -> impl Iterator<Item = (&'a ColumnChunk, &'a [R])> + 'a {
        rows.chunk_by(move |a, b| split(at(a)).0 == split(at(b)).0)
            .map(move |group| (self.chunks.chunk(at(&group[0])).0, group))
    }

    pub(super) fn restore_version(&mut self, row: usize, version: u32) {
        if self.version(row) != version {
            let (chunk, at) = self.chunks.chunk_mut(row);
            chunk.versions.set(at, version);
        }
    }

    fn status_byte(&self, row: usize) -> u8 {
        let (chunk, at) = self.chunks.chunk(row);
        chunk.status_byte(at)
    }

    /// Rewrites the status bits under `mask`; true (and the version set to `clock`) when they
    /// changed.
    /// A column that is not localized keeps no statuses and ignores the write.
    fn set_status_bits(&mut self, row: usize, mask: u8, bits: u8, clock: u32) -> bool {
        if !self.localized {
            return false;
        }
        let old = self.status_byte(row);
        let new = (old & !mask) | (bits & mask);
        if new == old {
            return false;
        }
        let (chunk, at) = self.chunks.chunk_mut(row);
        if let Some(status) = &mut chunk.status {
            status[at] = new;
        }
        chunk.stamp(at, clock);
        true
    }

    pub(super) fn statuses(&self, row: usize) -> CellStatuses {
        CellStatuses(self.status_byte(row))
    }

    pub(super) fn dependency_status(&self, row: usize) -> DependencyStatus {
        self.statuses(row).dependency()
    }

    pub(super) fn set_dependency_status(
        &mut self,
        row: usize,
        s: DependencyStatus,
        clock: u32,
    ) -> bool {
        self.set_status_bits(row, DEPENDENCY_MASK, s as u8, clock)
    }

    pub(super) fn source_status(&self, row: usize) -> SourceStatus {
        self.statuses(row).source()
    }

    pub(super) fn set_source_status(&mut self, row: usize, s: SourceStatus, clock: u32) -> bool {
        self.set_status_bits(row, SOURCE_MASK, (s as u8) << SOURCE_SHIFT, clock)
    }

    pub(super) fn is_mt(&self, row: usize) -> bool {
        self.statuses(row).is_mt()
    }

    pub(super) fn set_mt(&mut self, row: usize, mt: bool, clock: u32) -> bool {
        self.set_status_bits(row, MT_BIT, if mt { MT_BIT } else { 0 }, clock)
    }

    /// Keeps only the rows in `live`, in order (text arenas are rebuilt without garbage).
    pub(super) fn retain_rows(&mut self, live: &RoaringBitmap) {
        let (kind, localized) = (self.kind, self.localized);
        let new_chunk = |rows| ColumnChunk::with_capacity(kind, localized, rows);
        self.chunks.retain_with(live, new_chunk, |target, source, at| target.push_from(source, at));
    }

    /// Bytes held on the heap, counting chunks shared with a clone in full.
    pub(super) fn heap_bytes(&self) -> usize {
        self.chunks.heap_bytes()
    }

    /// For each chunk of both, whether the two columns share it.
    #[cfg(test)]
    pub(super) fn shared_with(&self, other: &Column) -> Vec<bool> {
        self.chunks.shared_with(&other.chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the two columns share the cells (not only the chunk) of chunk `index`.
    fn cells_shared(a: &Column, b: &Column, index: usize) -> bool {
        Arc::ptr_eq(&a.chunks[index].cells, &b.chunks[index].cells)
    }

    /// A status change on a chunk shared with a copy (a snapshot's) copies its versions and
    /// statuses but leaves its text shared; a value change copies the text.
    #[test]
    fn a_status_change_on_a_shared_chunk_leaves_its_cells_shared() {
        let mut column = Column::new(StorageKind::Text, true, 3 * CHUNK_ROWS);
        let mut scratch = String::new();
        for row in 0..3 * CHUNK_ROWS {
            let value = CellValue::Text(format!("text {row}"));
            column.set(row, &value, &mut scratch, 1).expect("a text column");
        }
        let copy = column.clone();
        assert!(column.set_dependency_status(CHUNK_ROWS + 1, DependencyStatus::OutOfDate, 2));
        assert_eq!(column.shared_with(&copy), [true, false, true]);
        assert!(cells_shared(&column, &copy, 1), "the text stays shared");
        assert_eq!(copy.dependency_status(CHUNK_ROWS + 1), DependencyStatus::Unset);
        assert_eq!(column.dependency_status(CHUNK_ROWS + 1), DependencyStatus::OutOfDate);
        assert_eq!(column.version(CHUNK_ROWS + 1), 2);
        assert_eq!(copy.version(CHUNK_ROWS + 1), 1);

        let value = CellValue::Text("changed".to_owned());
        assert!(column.set(CHUNK_ROWS + 1, &value, &mut scratch, 3).expect("a text column"));
        assert!(!cells_shared(&column, &copy, 1), "a value change copies the text");
        assert_eq!(copy.get(CHUNK_ROWS + 1), CellRef::Text(&format!("text {}", CHUNK_ROWS + 1)));
        assert_eq!(column.get(CHUNK_ROWS + 1), CellRef::Text("changed"));
        assert!(cells_shared(&column, &copy, 0) && cells_shared(&column, &copy, 2));
    }
}
