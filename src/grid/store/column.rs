//! One column of the store: typed cells, per-cell versions (in runs: `versions`) and, for
//! language columns, statuses.
//!
//! Owns the per-kind cell layouts and their empty markers, the packed status byte and the version
//! rule (a version is set to the store's clock exactly when the cell's value or statuses change).
//! A column is a
//! `Chunked` of column chunks, each holding the cells, versions and status bytes of its rows, so
//! that a write makes one copy-on-write check, a clone shares every chunk, and a write that
//! changes nothing copies nothing. Row numbering, liveness and record identity belong to
//! `ColumnStore`; this module never decides which rows live.

use std::fmt;
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::chunked::{arc_bytes, reserve_row, Chunk, Chunked, CHUNK_ROWS};
use super::scan::RowBits;
use super::text::{encode_list, ListRef, TextChunk};
use super::versions::Versions;
use crate::grid::value::{CellValue, DependencyStatus, SourceStatus, StorageKind};

mod builder;
mod scan;

pub use builder::{arena_cost, ColumnBuilder};

/// Stored bits of an empty number cell: a signalling NaN that writes never produce, because
/// every NaN written is stored as the canonical quiet `f64::NAN`.
const NUMBER_EMPTY: u64 = 0x7FF4_0000_0000_0001;
/// Stored byte of an empty boolean cell (0 = false, 1 = true).
const BOOLEAN_EMPTY: u8 = 2;
/// Stored value of an empty datetime cell; `Datetime(i64::MIN)` therefore reads back as `Empty`.
const DATETIME_EMPTY: i64 = i64::MIN;

/// Status byte layout: bits 0-1 dependency status, bits 2-4 source status, bit 5 isMT.
pub(super) const DEPENDENCY_MASK: u8 = 0b11;
pub(super) const SOURCE_SHIFT: u8 = 2;
pub(super) const SOURCE_MASK: u8 = 0b111 << SOURCE_SHIFT;
const MT_BIT: u8 = 1 << 5;

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

/// A value in its stored form, ready to compare with or write over a cell.
#[derive(Clone, Copy, PartialEq)]
enum Stored<'a> {
    Text(Option<&'a str>),
    Number(u64),
    Boolean(u8),
    Datetime(i64),
}

fn kind_of(value: &CellValue) -> Option<StorageKind> {
    match value {
        CellValue::Empty => None,
        CellValue::Text(_) => Some(StorageKind::Text),
        CellValue::Number(_) => Some(StorageKind::Number),
        CellValue::Boolean(_) => Some(StorageKind::Boolean),
        CellValue::Datetime(_) => Some(StorageKind::Datetime),
        CellValue::List(_) => Some(StorageKind::List),
    }
}

/// The stored form of `value` in a column of `kind`; lists are encoded into `scratch`.
fn stored<'a>(
    kind: StorageKind,
    value: &'a CellValue,
    scratch: &'a mut String,
) -> Result<Stored<'a>, KindMismatch> {
    let stored = match (kind, value) {
        (StorageKind::Text | StorageKind::List, CellValue::Empty) => Stored::Text(None),
        (StorageKind::Number, CellValue::Empty) => Stored::Number(NUMBER_EMPTY),
        (StorageKind::Boolean, CellValue::Empty) => Stored::Boolean(BOOLEAN_EMPTY),
        (StorageKind::Datetime, CellValue::Empty) => Stored::Datetime(DATETIME_EMPTY),
        (StorageKind::Text, CellValue::Text(s)) => Stored::Text(Some(s)),
        (StorageKind::Number, CellValue::Number(n)) => stored_number(*n),
        (StorageKind::Boolean, CellValue::Boolean(b)) => Stored::Boolean(u8::from(*b)),
        (StorageKind::Datetime, CellValue::Datetime(t)) => Stored::Datetime(*t),
        (StorageKind::List, CellValue::List(items)) => {
            encode_list(items, scratch);
            Stored::Text(Some(scratch))
        }
        (column, value) => {
            let value = kind_of(value).expect("empty values match every column");
            return Err(KindMismatch { column, value });
        }
    };
    Ok(stored)
}

/// The stored form of a number: every NaN as the canonical quiet `f64::NAN`, so that no value
/// written is `NUMBER_EMPTY`.
fn stored_number(n: f64) -> Stored<'static> {
    Stored::Number(if n.is_nan() { f64::NAN } else { n }.to_bits())
}

/// The stored form of an empty cell of `kind`.
fn empty_of(kind: StorageKind) -> Stored<'static> {
    match kind {
        StorageKind::Text | StorageKind::List => Stored::Text(None),
        StorageKind::Number => Stored::Number(NUMBER_EMPTY),
        StorageKind::Boolean => Stored::Boolean(BOOLEAN_EMPTY),
        StorageKind::Datetime => Stored::Datetime(DATETIME_EMPTY),
    }
}

/// Cell values of one chunk, laid out by storage kind (every chunk of a column has its kind).
#[derive(Clone)]
enum Cells {
    Text(TextChunk),
    Number(Vec<u64>),
    Boolean(Vec<u8>),
    Datetime(Vec<i64>),
    List(TextChunk),
}

/// Panics on a stored value of another kind than the chunk's: writes are checked against the
/// column kind first, and every chunk of a column has the column's kind.
fn other_kind() -> ! {
    panic!("a chunk's cells always have its column's storage kind")
}

impl Cells {
    /// `rows` empty cells of `kind`, allocated exactly.
    fn filled_empty(kind: StorageKind, rows: usize) -> Self {
        match kind {
            StorageKind::Text => Cells::Text(TextChunk::filled_empty(rows)),
            StorageKind::Number => Cells::Number(vec![NUMBER_EMPTY; rows]),
            StorageKind::Boolean => Cells::Boolean(vec![BOOLEAN_EMPTY; rows]),
            StorageKind::Datetime => Cells::Datetime(vec![DATETIME_EMPTY; rows]),
            StorageKind::List => Cells::List(TextChunk::filled_empty(rows)),
        }
    }

    /// No cells, with room for `rows` fixed-width ones.
    fn with_capacity(kind: StorageKind, rows: usize) -> Self {
        match kind {
            StorageKind::Text => Cells::Text(TextChunk::default()),
            StorageKind::Number => Cells::Number(Vec::with_capacity(rows)),
            StorageKind::Boolean => Cells::Boolean(Vec::with_capacity(rows)),
            StorageKind::Datetime => Cells::Datetime(Vec::with_capacity(rows)),
            StorageKind::List => Cells::List(TextChunk::default()),
        }
    }

    /// Whether a text or list cell of this chunk may need JSON escaping (false for other kinds:
    /// numbers, booleans and times are written without). See `TextChunk::escapes`.
    #[inline]
    fn escapes(&self) -> bool {
        match self {
            Cells::Text(cells) | Cells::List(cells) => cells.escapes(),
            Cells::Number(_) | Cells::Boolean(_) | Cells::Datetime(_) => false,
        }
    }

    /// The cell at `at`.
    #[inline]
    fn get(&self, at: usize) -> CellRef<'_> {
        match self {
            Cells::Text(cells) => cells.get(at).map_or(CellRef::Empty, CellRef::Text),
            Cells::List(cells) => {
                cells.get(at).map_or(CellRef::Empty, |s| CellRef::List(ListRef::new(s)))
            }
            Cells::Number(cells) => match cells[at] {
                NUMBER_EMPTY => CellRef::Empty,
                bits => CellRef::Number(f64::from_bits(bits)),
            },
            Cells::Boolean(cells) => match cells[at] {
                BOOLEAN_EMPTY => CellRef::Empty,
                b => CellRef::Boolean(b == 1),
            },
            Cells::Datetime(cells) => match cells[at] {
                DATETIME_EMPTY => CellRef::Empty,
                t => CellRef::Datetime(t),
            },
        }
    }

    #[inline]
    fn stored_at(&self, at: usize) -> Stored<'_> {
        match self {
            Cells::Text(cells) | Cells::List(cells) => Stored::Text(cells.get(at)),
            Cells::Number(cells) => Stored::Number(cells[at]),
            Cells::Boolean(cells) => Stored::Boolean(cells[at]),
            Cells::Datetime(cells) => Stored::Datetime(cells[at]),
        }
    }

    fn write(&mut self, at: usize, value: Stored<'_>) {
        match (self, value) {
            (Cells::Text(cells) | Cells::List(cells), Stored::Text(v)) => cells.set(at, v),
            (Cells::Number(cells), Stored::Number(v)) => cells[at] = v,
            (Cells::Boolean(cells), Stored::Boolean(v)) => cells[at] = v,
            (Cells::Datetime(cells), Stored::Datetime(v)) => cells[at] = v,
            _ => other_kind(),
        }
    }

    fn push(&mut self, value: Stored<'_>) {
        match (self, value) {
            (Cells::Text(cells) | Cells::List(cells), Stored::Text(v)) => cells.push(v),
            (Cells::Number(cells), Stored::Number(v)) => push_row(cells, v),
            (Cells::Boolean(cells), Stored::Boolean(v)) => push_row(cells, v),
            (Cells::Datetime(cells), Stored::Datetime(v)) => push_row(cells, v),
            _ => other_kind(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Cells::Text(cells) | Cells::List(cells) => cells.heap_bytes(),
            Cells::Number(cells) => cells.heap_bytes(),
            Cells::Boolean(cells) => cells.heap_bytes(),
            Cells::Datetime(cells) => cells.heap_bytes(),
        }
    }
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

#[inline]
fn push_row<T>(rows: &mut Vec<T>, value: T) {
    reserve_row(rows);
    rows.push(value);
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

    fn push(&mut self, value: Stored<'_>, version: u32, status: u8) {
        Arc::make_mut(&mut self.cells).push(value);
        self.versions.push(version);
        if let Some(statuses) = &mut self.status {
            push_row(statuses, status);
        }
    }

    /// Appends a copy of row `at` of `source`.
    fn push_from(&mut self, source: &ColumnChunk, at: usize) {
        let status = source.status.as_ref().map_or(0, |s| s[at]);
        self.push(source.cells.stored_at(at), source.versions.get(at), status);
    }

    fn stamp(&mut self, at: usize, clock: u32) {
        self.versions.set(at, clock);
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
        mut cell: impl FnMut(usize) -> Result<(LoadCell<'a>, u32, u8), String>,
    ) -> Result<Column, String> {
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
        let new_chunk = || ColumnChunk::with_capacity(kind, localized, 0);
        self.chunks.push_with(new_chunk, |chunk| chunk.push(empty_of(kind), 0, 0));
    }

    /// Appends a cell holding `value` (version `clock`, statuses unset); a value of another kind
    /// than the column's appends an empty cell. True when the cell is not empty.
    pub(super) fn push_value(
        &mut self,
        value: &CellValue,
        scratch: &mut String,
        clock: u32,
    ) -> bool {
        let (kind, localized) = (self.kind, self.localized);
        let value = stored(kind, value, scratch).unwrap_or(empty_of(kind));
        let written = value != empty_of(kind);
        let version = if written { clock } else { 0 };
        let new_chunk = || ColumnChunk::with_capacity(kind, localized, 0);
        self.chunks.push_with(new_chunk, |chunk| chunk.push(value, version, 0));
        written
    }

    /// The cell of `row`.
    #[inline]
    pub(super) fn get(&self, row: usize) -> CellRef<'_> {
        let (chunk, at) = self.chunks.chunk(row);
        chunk.cells.get(at)
    }

    /// The cell at `row` and whether its text may need JSON escaping (`Cells::escapes`).
    #[inline]
    pub(super) fn get_for_json(&self, row: usize) -> (CellRef<'_>, bool) {
        let (chunk, at) = self.chunks.chunk(row);
        (chunk.cells.get(at), chunk.cells.escapes())
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

    pub(super) fn restore_version(&mut self, row: usize, version: u32) {
        if self.version(row) != version {
            let (chunk, at) = self.chunks.chunk_mut(row);
            chunk.versions.set(at, version);
        }
    }

    fn status_byte(&self, row: usize) -> u8 {
        let (chunk, at) = self.chunks.chunk(row);
        chunk.status.as_ref().map_or(0, |s| s[at])
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

    pub(super) fn dependency_status(&self, row: usize) -> DependencyStatus {
        DependencyStatus::from_u8(self.status_byte(row) & DEPENDENCY_MASK)
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
        SourceStatus::from_u8((self.status_byte(row) & SOURCE_MASK) >> SOURCE_SHIFT)
    }

    pub(super) fn set_source_status(&mut self, row: usize, s: SourceStatus, clock: u32) -> bool {
        self.set_status_bits(row, SOURCE_MASK, (s as u8) << SOURCE_SHIFT, clock)
    }

    pub(super) fn is_mt(&self, row: usize) -> bool {
        self.status_byte(row) & MT_BIT != 0
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
