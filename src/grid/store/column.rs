//! One column of the store: typed cells, per-cell versions and, for language columns, statuses.
//!
//! Owns the per-kind cell layouts and their empty markers, the packed status byte and the version
//! bump rule (a version changes exactly when the cell's value or statuses change). Row numbering,
//! liveness and record identity belong to `ColumnStore`; this module never decides which rows live.

use std::fmt;

use roaring::RoaringBitmap;

use super::chunked::ChunkedVec;
use super::text::{encode_list, ListRef, TextColumn};
use crate::grid::value::{CellValue, DependencyStatus, SourceStatus, StorageKind};

/// Stored bits of an empty number cell: a signalling NaN that writes never produce, because
/// every NaN written is stored as the canonical quiet `f64::NAN`.
const NUMBER_EMPTY: u64 = 0x7FF4_0000_0000_0001;
/// Stored byte of an empty boolean cell (0 = false, 1 = true).
const BOOLEAN_EMPTY: u8 = 2;
/// Stored value of an empty datetime cell; `Datetime(i64::MIN)` therefore reads back as `Empty`.
const DATETIME_EMPTY: i64 = i64::MIN;

/// Status byte layout: bits 0-1 dependency status, bits 2-4 source status, bit 5 isMT.
const DEPENDENCY_MASK: u8 = 0b11;
const SOURCE_SHIFT: u8 = 2;
const SOURCE_MASK: u8 = 0b111 << SOURCE_SHIFT;
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

/// Cell values laid out by storage kind.
#[derive(Clone)]
enum Cells {
    Text(TextColumn),
    Number(ChunkedVec<u64>),
    Boolean(ChunkedVec<u8>),
    Datetime(ChunkedVec<i64>),
    List(TextColumn),
}

/// One column's cells, versions and (when localized) status bytes.
#[derive(Clone)]
pub(super) struct Column {
    cells: Cells,
    versions: ChunkedVec<u32>,
    status: Option<ChunkedVec<u8>>,
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

/// Overwrites a fixed-width cell; true when it changed.
fn replace<T: Copy + PartialEq>(cells: &mut ChunkedVec<T>, row: usize, value: T) -> bool {
    let changed = cells.get(row) != value;
    if changed {
        cells.set(row, value);
    }
    changed
}

/// Overwrites a string cell; true when it changed (an unchanged write leaves no garbage).
fn replace_text(cells: &mut TextColumn, row: usize, value: Option<&str>) -> bool {
    let changed = cells.get(row) != value;
    if changed {
        cells.set(row, value);
    }
    changed
}

impl Column {
    /// A column of `rows` empty cells.
    pub(super) fn new(kind: StorageKind, localized: bool, rows: usize) -> Self {
        let cells = match kind {
            StorageKind::Text => Cells::Text(TextColumn::filled_empty(rows)),
            StorageKind::Number => Cells::Number(ChunkedVec::filled(rows, NUMBER_EMPTY)),
            StorageKind::Boolean => Cells::Boolean(ChunkedVec::filled(rows, BOOLEAN_EMPTY)),
            StorageKind::Datetime => Cells::Datetime(ChunkedVec::filled(rows, DATETIME_EMPTY)),
            StorageKind::List => Cells::List(TextColumn::filled_empty(rows)),
        };
        Column {
            cells,
            versions: ChunkedVec::filled(rows, 0),
            status: localized.then(|| ChunkedVec::filled(rows, 0)),
        }
    }

    /// The storage kind.
    pub(super) fn kind(&self) -> StorageKind {
        match self.cells {
            Cells::Text(_) => StorageKind::Text,
            Cells::Number(_) => StorageKind::Number,
            Cells::Boolean(_) => StorageKind::Boolean,
            Cells::Datetime(_) => StorageKind::Datetime,
            Cells::List(_) => StorageKind::List,
        }
    }

    /// True when the column keeps statuses.
    pub(super) fn is_localized(&self) -> bool {
        self.status.is_some()
    }

    /// Starts (all statuses unset) or stops (statuses dropped) keeping statuses.
    pub(super) fn set_localized(&mut self, localized: bool) {
        match (localized, self.status.is_some()) {
            (true, false) => self.status = Some(ChunkedVec::filled(self.versions.len(), 0)),
            (false, true) => self.status = None,
            (true, true) | (false, false) => {}
        }
    }

    /// Appends an empty cell (version 0, statuses unset).
    pub(super) fn push_empty(&mut self) {
        match &mut self.cells {
            Cells::Text(cells) | Cells::List(cells) => cells.push(None),
            Cells::Number(cells) => cells.push(NUMBER_EMPTY),
            Cells::Boolean(cells) => cells.push(BOOLEAN_EMPTY),
            Cells::Datetime(cells) => cells.push(DATETIME_EMPTY),
        }
        self.versions.push(0);
        if let Some(status) = &mut self.status {
            status.push(0);
        }
    }

    /// The cell of `row`.
    #[inline]
    pub(super) fn get(&self, row: usize) -> CellRef<'_> {
        match &self.cells {
            Cells::Text(cells) => cells.get(row).map_or(CellRef::Empty, CellRef::Text),
            Cells::List(cells) => {
                cells.get(row).map_or(CellRef::Empty, |s| CellRef::List(ListRef::new(s)))
            }
            Cells::Number(cells) => match cells.get(row) {
                NUMBER_EMPTY => CellRef::Empty,
                bits => CellRef::Number(f64::from_bits(bits)),
            },
            Cells::Boolean(cells) => match cells.get(row) {
                BOOLEAN_EMPTY => CellRef::Empty,
                b => CellRef::Boolean(b == 1),
            },
            Cells::Datetime(cells) => match cells.get(row) {
                DATETIME_EMPTY => CellRef::Empty,
                t => CellRef::Datetime(t),
            },
        }
    }

    /// Writes a cell; `Ok(true)` when it changed (its version was then bumped).
    /// `scratch` is reused to encode lists.
    pub(super) fn set(
        &mut self,
        row: usize,
        value: &CellValue,
        scratch: &mut String,
    ) -> Result<bool, KindMismatch> {
        let changed = match (&mut self.cells, value) {
            (Cells::Text(cells) | Cells::List(cells), CellValue::Empty) => {
                replace_text(cells, row, None)
            }
            (Cells::Number(cells), CellValue::Empty) => replace(cells, row, NUMBER_EMPTY),
            (Cells::Boolean(cells), CellValue::Empty) => replace(cells, row, BOOLEAN_EMPTY),
            (Cells::Datetime(cells), CellValue::Empty) => replace(cells, row, DATETIME_EMPTY),
            (Cells::Text(cells), CellValue::Text(s)) => replace_text(cells, row, Some(s)),
            (Cells::Number(cells), CellValue::Number(n)) => {
                let bits = if n.is_nan() { f64::NAN } else { *n }.to_bits();
                replace(cells, row, bits)
            }
            (Cells::Boolean(cells), CellValue::Boolean(b)) => replace(cells, row, u8::from(*b)),
            (Cells::Datetime(cells), CellValue::Datetime(t)) => replace(cells, row, *t),
            (Cells::List(cells), CellValue::List(items)) => {
                encode_list(items, scratch);
                replace_text(cells, row, Some(scratch))
            }
            (_, value) => {
                return Err(KindMismatch {
                    column: self.kind(),
                    value: kind_of(value).expect("empty values match every column"),
                })
            }
        };
        if changed {
            self.bump(row);
        }
        Ok(changed)
    }

    fn bump(&mut self, row: usize) {
        let version = self.versions.get(row);
        self.versions.set(row, version.wrapping_add(1));
    }

    /// The cell's version: 0 for a never-written cell, +1 (wrapping) per change.
    pub(super) fn version(&self, row: usize) -> u32 {
        self.versions.get(row)
    }

    pub(super) fn restore_version(&mut self, row: usize, version: u32) {
        self.versions.set(row, version);
    }

    fn status_byte(&self, row: usize) -> u8 {
        self.status.as_ref().map_or(0, |s| s.get(row))
    }

    /// Rewrites the status bits under `mask`; true (and a version bump) when they changed.
    /// A column that is not localized keeps no statuses and ignores the write.
    fn set_status_bits(&mut self, row: usize, mask: u8, bits: u8) -> bool {
        let Some(status) = &mut self.status else {
            return false;
        };
        let old = status.get(row);
        let new = (old & !mask) | (bits & mask);
        if new == old {
            return false;
        }
        status.set(row, new);
        self.bump(row);
        true
    }

    pub(super) fn dependency_status(&self, row: usize) -> DependencyStatus {
        DependencyStatus::from_u8(self.status_byte(row) & DEPENDENCY_MASK)
    }

    pub(super) fn set_dependency_status(&mut self, row: usize, s: DependencyStatus) -> bool {
        self.set_status_bits(row, DEPENDENCY_MASK, s as u8)
    }

    pub(super) fn source_status(&self, row: usize) -> SourceStatus {
        SourceStatus::from_u8((self.status_byte(row) & SOURCE_MASK) >> SOURCE_SHIFT)
    }

    pub(super) fn set_source_status(&mut self, row: usize, s: SourceStatus) -> bool {
        self.set_status_bits(row, SOURCE_MASK, (s as u8) << SOURCE_SHIFT)
    }

    pub(super) fn is_mt(&self, row: usize) -> bool {
        self.status_byte(row) & MT_BIT != 0
    }

    pub(super) fn set_mt(&mut self, row: usize, mt: bool) -> bool {
        self.set_status_bits(row, MT_BIT, if mt { MT_BIT } else { 0 })
    }

    /// Keeps only the rows in `live`, in order.
    pub(super) fn retain_rows(&mut self, live: &RoaringBitmap) {
        match &mut self.cells {
            Cells::Text(cells) | Cells::List(cells) => cells.retain_rows(live),
            Cells::Number(cells) => cells.retain_rows(live),
            Cells::Boolean(cells) => cells.retain_rows(live),
            Cells::Datetime(cells) => cells.retain_rows(live),
        }
        self.versions.retain_rows(live);
        if let Some(status) = &mut self.status {
            status.retain_rows(live);
        }
    }

    /// Bytes held on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        let cells = match &self.cells {
            Cells::Text(cells) | Cells::List(cells) => cells.heap_bytes(),
            Cells::Number(cells) => cells.heap_bytes(),
            Cells::Boolean(cells) => cells.heap_bytes(),
            Cells::Datetime(cells) => cells.heap_bytes(),
        };
        let status = self.status.as_ref().map_or(0, ChunkedVec::heap_bytes);
        cells + self.versions.heap_bytes() + status
    }
}
