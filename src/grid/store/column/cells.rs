//! The stored form of a column's cells: per-kind layouts of one chunk's cells (`Cells`),
//! the empty marker of each kind, and how a `CellValue` becomes a `Stored` value.

use super::super::chunked::{reserve_row, Chunk, CHUNK_ROWS};
use super::super::text::{encode_list, ListRef, TextChunk};
use super::{CellRef, KindMismatch};
use crate::grid::value::{CellValue, StorageKind};

/// Stored bits of an empty number cell: a signalling NaN that writes never produce, because
/// every NaN written is stored as the canonical quiet `f64::NAN`.
pub(super) const NUMBER_EMPTY: u64 = 0x7FF4_0000_0000_0001;
/// Stored byte of an empty boolean cell (0 = false, 1 = true).
pub(super) const BOOLEAN_EMPTY: u8 = 2;
/// Stored value of an empty datetime cell; `Datetime(i64::MIN)` therefore reads back as `Empty`.
pub(super) const DATETIME_EMPTY: i64 = i64::MIN;

/// A value in its stored form, ready to compare with or write over a cell.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Stored<'a> {
    Text(Option<&'a str>),
    Number(u64),
    Boolean(u8),
    Datetime(i64),
}

pub(super) fn kind_of(value: &CellValue) -> Option<StorageKind> {
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
pub(super) fn stored<'a>(
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
pub(super) fn stored_number(n: f64) -> Stored<'static> {
    Stored::Number(if n.is_nan() { f64::NAN } else { n }.to_bits())
}

/// The stored form of an empty cell of `kind`.
pub(super) fn empty_of(kind: StorageKind) -> Stored<'static> {
    match kind {
        StorageKind::Text | StorageKind::List => Stored::Text(None),
        StorageKind::Number => Stored::Number(NUMBER_EMPTY),
        StorageKind::Boolean => Stored::Boolean(BOOLEAN_EMPTY),
        StorageKind::Datetime => Stored::Datetime(DATETIME_EMPTY),
    }
}

/// Cell values of one chunk, laid out by storage kind (every chunk of a column has its kind).
#[derive(Clone)]
pub(super) enum Cells {
    Text(TextChunk),
    Number(Vec<u64>),
    Boolean(Vec<u8>),
    Datetime(Vec<i64>),
    List(TextChunk),
}

/// Panics on a stored value of another kind than the chunk's: writes are checked against the
/// column kind first, and every chunk of a column has the column's kind.
pub(super) fn other_kind() -> ! {
    panic!("a chunk's cells always have its column's storage kind")
}

impl Cells {
    /// `rows` empty cells of `kind`, allocated exactly.
    pub(super) fn filled_empty(kind: StorageKind, rows: usize) -> Self {
        match kind {
            StorageKind::Text => Cells::Text(TextChunk::filled_empty(rows)),
            StorageKind::Number => Cells::Number(vec![NUMBER_EMPTY; rows]),
            StorageKind::Boolean => Cells::Boolean(vec![BOOLEAN_EMPTY; rows]),
            StorageKind::Datetime => Cells::Datetime(vec![DATETIME_EMPTY; rows]),
            StorageKind::List => Cells::List(TextChunk::filled_empty(rows)),
        }
    }

    /// No cells, with room for `rows` fixed-width ones.
    pub(super) fn with_capacity(kind: StorageKind, rows: usize) -> Self {
        match kind {
            StorageKind::Text => Cells::Text(TextChunk::default()),
            StorageKind::Number => Cells::Number(Vec::with_capacity(rows)),
            StorageKind::Boolean => Cells::Boolean(Vec::with_capacity(rows)),
            StorageKind::Datetime => Cells::Datetime(Vec::with_capacity(rows)),
            StorageKind::List => Cells::List(TextChunk::default()),
        }
    }

    /// No cells, to fill after `full` (the column's last chunk, full; `None` for its first):
    /// with room for a whole chunk of rows, and text and lists with the room `full`'s values
    /// took (`TextChunk::following`).
    pub(super) fn following(kind: StorageKind, full: Option<&Cells>) -> Self {
        let rows = if full.is_some() { CHUNK_ROWS } else { 0 };
        match (kind, full) {
            (StorageKind::Text, Some(Cells::Text(full))) => {
                Cells::Text(TextChunk::following(Some(full)))
            }
            (StorageKind::List, Some(Cells::List(full))) => {
                Cells::List(TextChunk::following(Some(full)))
            }
            _ => Cells::with_capacity(kind, rows),
        }
    }

    /// Whether a text or list cell of this chunk may need JSON escaping (false for other kinds:
    /// numbers, booleans and times are written without). See `TextChunk::escapes`.
    #[inline]
    pub(super) fn escapes(&self) -> bool {
        match self {
            Cells::Text(cells) | Cells::List(cells) => cells.escapes(),
            Cells::Number(_) | Cells::Boolean(_) | Cells::Datetime(_) => false,
        }
    }

    /// The cell at `at`.
    #[inline]
    pub(super) fn get(&self, at: usize) -> CellRef<'_> {
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
    pub(super) fn stored_at(&self, at: usize) -> Stored<'_> {
        match self {
            Cells::Text(cells) | Cells::List(cells) => Stored::Text(cells.get(at)),
            Cells::Number(cells) => Stored::Number(cells[at]),
            Cells::Boolean(cells) => Stored::Boolean(cells[at]),
            Cells::Datetime(cells) => Stored::Datetime(cells[at]),
        }
    }

    pub(super) fn write(&mut self, at: usize, value: Stored<'_>) {
        match (self, value) {
            (Cells::Text(cells) | Cells::List(cells), Stored::Text(v)) => cells.set(at, v),
            (Cells::Number(cells), Stored::Number(v)) => cells[at] = v,
            (Cells::Boolean(cells), Stored::Boolean(v)) => cells[at] = v,
            (Cells::Datetime(cells), Stored::Datetime(v)) => cells[at] = v,
            _ => other_kind(),
        }
    }

    pub(super) fn push(&mut self, value: Stored<'_>) {
        match (self, value) {
            (Cells::Text(cells) | Cells::List(cells), Stored::Text(v)) => cells.push(v),
            (Cells::Number(cells), Stored::Number(v)) => push_row(cells, v),
            (Cells::Boolean(cells), Stored::Boolean(v)) => push_row(cells, v),
            (Cells::Datetime(cells), Stored::Datetime(v)) => push_row(cells, v),
            _ => other_kind(),
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            Cells::Text(cells) | Cells::List(cells) => cells.heap_bytes(),
            Cells::Number(cells) => cells.heap_bytes(),
            Cells::Boolean(cells) => cells.heap_bytes(),
            Cells::Datetime(cells) => cells.heap_bytes(),
        }
    }
}

#[inline]
pub(super) fn push_row<T>(rows: &mut Vec<T>, value: T) {
    reserve_row(rows);
    rows.push(value);
}
