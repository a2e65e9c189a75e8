//! The snapshot image of a branch: an rkyv-archivable copy of its schema, records (with
//! statuses, machine-translation flags and cell versions) and history, and the conversions
//! between it and a live `GridState`.
//!
//! Format version 6 (`sections`), the one this build writes: the branch as a sequence of
//! independently archived sections (record parts, column parts, history chunks, a head), so no
//! archive nears rkyv's 2 GiB limit and a snapshot is streamed to its file a section at a time;
//! each column chunk's statuses and versions are a section apart from its cells, so an image
//! after status changes (a source edit marks every dependent column) borrows the cells.
//! Format 5 is the same with a column part holding its cells, statuses and versions together.
//!
//! Format version 4 (`BranchImage`): format 2's body with its history list left empty, and the
//! history log as it is held in memory (`history::History`: its chunks, the sealed ones packed
//! as zstd blocks, each live record's chain head, the retired chains); `to_image` still builds
//! it, as the owned form tests compare branches by. Format 3 (`BranchImageV3`) is format 4 with
//! every chunk plain. Format 2 (`BranchImageV2`): format 1's `BranchImageV1` plus the merge
//! stamps (the branch's clock, each record's created/moved stamps, the merge bases, the journal
//! of gone keys). Formats 1 and 2 still load (`GridState::from_image_v2`, `from_image_v1`;
//! their history, kept per record key, is turned into the log), and format 1's cell versions
//! were change counters, so the clock starts above the highest of them. Formats 3, 4 and 5 are
//! read from the archived bytes (`GridState::from_archived`, `decode_image`), never
//! deserialized first. A change to these types is a new format version: bump
//! `IMAGE_FORMAT_VERSION`, keep a reader for the old one, and add a fixture under `snapshots/`.
//!
//! Files: this one holds the image types and the cell encodings they share; `owned` the owned
//! image and the loads of formats 1 and 2, `archived` the loads from archived bytes (3, 4, and
//! the column building and stamps 5 and 6 share), `sections` formats 5 and 6.

use crate::grid::damage::LoadResult;
use rkyv::{Archive, Deserialize, Serialize};

mod archived;
mod owned;
mod sections;

use archived::{load_columns, restore_archived_stamps};

pub use sections::{
    slice_at, ImageIndex, PartLimits, Scratch, SectionBytes, SectionSource, WrittenImage, MAX_LINKS,
};

use super::store::{arena_cost, CellRef, ColumnSlot, ColumnStore, LoadCell, RowId};
use super::value::{CellValue, DependencyStatus, SourceStatus, StorageKind};

/// The image format this build writes.
pub const IMAGE_FORMAT_VERSION: u32 = 6;

#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub enum CellImage {
    Empty,
    Text(String),
    Number(f64),
    Boolean(bool),
    Datetime(i64),
    List(Vec<String>),
}

/// A column's values, laid out by type: text and lists as one string with end offsets (an
/// empty cell has no bytes), numbers as f64 (NaN = empty), booleans as bytes (2 = empty),
/// datetimes as milliseconds (i64::MIN = empty).
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub enum ColumnCells {
    Text {
        data: String,
        ends: Vec<u64>,
    },
    Number(Vec<f64>),
    Boolean(Vec<u8>),
    Datetime(Vec<i64>),
    /// Items of every cell, then per cell the end index of its items.
    List {
        data: String,
        item_ends: Vec<u64>,
        cell_ends: Vec<u64>,
    },
}

#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct ColumnImage {
    pub id: String,
    pub cells: ColumnCells,
    /// Per row: dependency status | source status << 2 | machine-translated << 5.
    pub statuses: Vec<u8>,
    pub versions: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct HistoryCellImage {
    pub column_id: String,
    pub value: CellImage,
    /// Packed like `ColumnImage::statuses`; 255 when the column is not a language column.
    pub statuses: u8,
}

#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct HistoryImage {
    pub key: String,
    pub time_ms: i64,
    pub user: String,
    pub path: String,
    pub cells: Vec<HistoryCellImage>,
}

/// Everything a branch holds (format 4).
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct BranchImage {
    /// Format 2's content; its `records.history` is empty.
    pub body: BranchImageV2,
    pub history: HistoryImage4,
}

/// The history log (`history::History`) of format 4.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct HistoryImage4 {
    /// The sealed chunks, then the open one.
    pub chunks: Vec<HistoryChunkImage>,
    /// Per live record, in order: where its chain starts (`u64::MAX`: no entry).
    pub heads: Vec<u64>,
    /// The chains of deleted records.
    pub retired: Vec<u64>,
    pub count: u64,
}

/// A chunk of the history log (`history::ChunkPart`): zstd blocks ending at `ends` in `data`,
/// or plain bytes when `ends` is empty.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct HistoryChunkImage {
    pub len: u32,
    /// Plain bytes per block (0 when plain).
    pub block: u32,
    pub ends: Vec<u32>,
    pub data: Vec<u8>,
}

/// Everything a branch held in format 3.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct BranchImageV3 {
    pub body: BranchImageV2,
    pub history: HistoryImage3,
}

/// The history log of format 3: every chunk plain.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct HistoryImage3 {
    pub chunks: Vec<Vec<u8>>,
    /// Per live record, in order: where its chain starts (`u64::MAX`: no entry).
    pub heads: Vec<u64>,
    /// The chains of deleted records.
    pub retired: Vec<u64>,
    pub count: u64,
}

/// Everything a branch held in format 2.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct BranchImageV2 {
    pub records: BranchImageV1,
    /// The branch's logical clock.
    pub clock: u32,
    /// Per live record, in order: the clock when it was inserted and when it last moved.
    pub created: Vec<u32>,
    pub moved: Vec<u32>,
    pub merge_bases: Vec<MergeBaseImage>,
    /// Keys that stopped naming a record, with the clock when, oldest first.
    pub gone: Vec<GoneKeyImage>,
}

/// A key that stopped naming a record (`ColumnStore::gone_since`).
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct GoneKeyImage {
    pub clock: u32,
    pub path: String,
    pub id: String,
}

/// The common point with a branch merged into this one.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct MergeBaseImage {
    pub source_branch_id: String,
    pub source: u32,
    pub destination: u32,
}

/// Everything a branch holds in format 1, in insertion order of its live records; the body of
/// format 2.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub struct BranchImageV1 {
    /// The schema as JSON (small; keeps the image independent of schema type layout).
    pub schema_json: String,
    pub by_path: bool,
    pub ids: Vec<String>,
    pub paths: Vec<String>,
    pub times: Vec<i64>,
    pub users: Vec<String>,
    pub columns: Vec<ColumnImage>,
    pub history: Vec<HistoryImage>,
}

fn from_cell(cell: CellImage) -> CellValue {
    match cell {
        CellImage::Empty => CellValue::Empty,
        CellImage::Text(s) => CellValue::Text(s),
        CellImage::Number(n) => CellValue::Number(n),
        CellImage::Boolean(b) => CellValue::Boolean(b),
        CellImage::Datetime(ms) => CellValue::Datetime(ms),
        CellImage::List(items) => CellValue::List(items),
    }
}

fn pack(dependency: DependencyStatus, source: SourceStatus, mt: bool) -> u8 {
    dependency as u8 | (source as u8) << 2 | u8::from(mt) << 5
}

fn unpack(byte: u8) -> (DependencyStatus, SourceStatus, bool) {
    (
        DependencyStatus::from_u8(byte & 0b11),
        SourceStatus::from_u8((byte >> 2) & 0b111),
        byte & 0b10_0000 != 0,
    )
}

/// Lays out a column's cells for the image; `room`: the bytes to make room for at once in the
/// text of text or list cells (about those of `rows`, or 0 to grow as they come).
fn column_cells(store: &ColumnStore, slot: ColumnSlot, rows: &[RowId], room: usize) -> ColumnCells {
    // A fixed-width column: one value per row, a marker for an empty cell.
    fn each<T>(
        store: &ColumnStore,
        slot: ColumnSlot,
        rows: &[RowId],
        f: impl Fn(CellRef<'_>) -> T,
    ) -> Vec<T> {
        let mut out = Vec::with_capacity(rows.len());
        store.for_each_cell_ascending(rows, slot, |cell| out.push(f(cell)));
        out
    }
    match store.kind(slot) {
        StorageKind::Text => {
            let (mut data, mut ends) =
                (String::with_capacity(room), Vec::with_capacity(rows.len()));
            store.for_each_cell_ascending(rows, slot, |cell| {
                if let CellRef::Text(s) = cell {
                    data.push_str(s);
                }
                ends.push(data.len() as u64);
            });
            ColumnCells::Text { data, ends }
        }
        StorageKind::Number => ColumnCells::Number(each(store, slot, rows, |cell| match cell {
            CellRef::Number(n) => n,
            _ => f64::NAN,
        })),
        StorageKind::Boolean => ColumnCells::Boolean(each(store, slot, rows, |cell| match cell {
            CellRef::Boolean(b) => u8::from(b),
            _ => 2,
        })),
        StorageKind::Datetime => {
            ColumnCells::Datetime(each(store, slot, rows, |cell| match cell {
                CellRef::Datetime(ms) => ms,
                _ => i64::MIN,
            }))
        }
        StorageKind::List => {
            let (mut data, mut item_ends, mut cell_ends) =
                (String::with_capacity(room / 4), Vec::new(), Vec::with_capacity(rows.len()));
            store.for_each_cell_ascending(rows, slot, |cell| {
                if let CellRef::List(items) = cell {
                    for item in items {
                        data.push_str(item);
                        item_ends.push(data.len() as u64);
                    }
                }
                cell_ends.push(item_ends.len() as u64);
            });
            ColumnCells::List { data, item_ends, cell_ends }
        }
    }
}

/// An archived column's cells with their statuses and versions (a format 4 column, or one
/// part of a format 5 column), checked by `check` before any cell is read.
pub(crate) struct CellsRef<'a> {
    pub id: &'a str,
    pub cells: &'a ArchivedColumnCells,
    pub statuses: &'a [u8],
    pub versions: &'a [rkyv::rend::u32_le],
}

impl<'a> CellsRef<'a> {
    fn of_column(column: &'a ArchivedColumnImage) -> CellsRef<'a> {
        CellsRef {
            id: column.id.as_str(),
            cells: &column.cells,
            statuses: column.statuses.as_slice(),
            versions: column.versions.as_slice(),
        }
    }

    /// How many cells the statuses say there are.
    pub fn len(&self) -> usize {
        self.statuses.len()
    }

    /// Checks that the offsets describe `n` cells inside the data, with a status and a
    /// version each.
    pub fn check(&self, n: usize) -> LoadResult<()> {
        let id = self.id;
        if self.statuses.len() != n || self.versions.len() != n {
            return Err(format!("column {id} has the wrong number of cells").into());
        }
        let ends_fit = |data_len: usize, ends: &[rkyv::rend::u64_le]| {
            let mut last = 0u64;
            ends.iter().all(|e| {
                let e = e.to_native();
                let ok = e >= last && e <= data_len as u64;
                last = e;
                ok
            })
        };
        let cells = match self.cells {
            ArchivedColumnCells::Text { data, ends } => {
                if !ends_fit(data.len(), ends) {
                    return Err(format!("column {id}: bad text offsets").into());
                }
                ends.len()
            }
            ArchivedColumnCells::Number(v) => v.len(),
            ArchivedColumnCells::Boolean(v) => v.len(),
            ArchivedColumnCells::Datetime(v) => v.len(),
            ArchivedColumnCells::List { data, item_ends, cell_ends } => {
                if !ends_fit(data.len(), item_ends) || !ends_fit(item_ends.len(), cell_ends) {
                    return Err(format!("column {id}: bad list offsets").into());
                }
                cell_ends.len()
            }
        };
        if cells != n {
            return Err(format!("column {id}: {cells} cells for {n} records").into());
        }
        Ok(())
    }

    /// The arena bytes (`arena_cost`) of the text of cells `from..from + rows` (as many of
    /// them as there are), after `check`; none for cells that are not text.
    pub fn arena_bytes(&self, from: usize, rows: usize) -> usize {
        let ArchivedColumnCells::Text { ends, .. } = self.cells else { return 0 };
        let to = from.saturating_add(rows).min(ends.len());
        let mut start = if from == 0 { 0 } else { ends[from - 1].to_native() as usize };
        let mut bytes = 0;
        for end in &ends[from.min(to)..to] {
            let end = end.to_native() as usize;
            bytes += arena_cost(end.saturating_sub(start));
            start = end;
        }
        bytes
    }

    /// Whether the cells are text (`text_cell` reads them).
    pub fn is_text(&self) -> bool {
        matches!(self.cells, ArchivedColumnCells::Text { .. })
    }

    /// Text cell `i` (after `check`; `None` when empty), with its version and status byte: what
    /// `cell` gives for a text cell, without the `LoadCell` around it.
    #[inline]
    pub fn text_cell(&self, i: usize) -> LoadResult<(Option<&'a str>, u32, u8)> {
        let ArchivedColumnCells::Text { data, ends } = self.cells else {
            return Err(format!("column {}: not text cells", self.id).into());
        };
        let start = if i == 0 { 0 } else { ends[i - 1].to_native() as usize };
        let text = data
            .as_str()
            .get(start..ends[i].to_native() as usize)
            .ok_or_else(|| format!("column {}: text offsets off a character", self.id))?;
        let text = Some(text).filter(|t| !t.is_empty());
        Ok((text, self.versions[i].to_native(), self.statuses[i]))
    }

    /// Cell `i` (after `check`), with its version and status byte.
    pub fn cell(&self, i: usize) -> LoadResult<(LoadCell<'a>, u32, u8)> {
        let start =
            |ends: &[rkyv::rend::u64_le]| if i == 0 { 0 } else { ends[i - 1].to_native() as usize };
        let id = self.id;
        let value = match self.cells {
            ArchivedColumnCells::Text { .. } => match self.text_cell(i)?.0 {
                Some(text) => LoadCell::Text(text),
                None => LoadCell::Empty,
            },
            ArchivedColumnCells::Number(v) => {
                let x = v[i].to_native();
                if x.is_nan() {
                    LoadCell::Empty
                } else {
                    LoadCell::Number(x)
                }
            }
            ArchivedColumnCells::Boolean(v) => match v[i] {
                0 | 1 => LoadCell::Boolean(v[i] == 1),
                _ => LoadCell::Empty,
            },
            ArchivedColumnCells::Datetime(v) => match v[i].to_native() {
                i64::MIN => LoadCell::Empty,
                ms => LoadCell::Datetime(ms),
            },
            ArchivedColumnCells::List { data, item_ends, cell_ends } => {
                let items = start(cell_ends)..cell_ends[i].to_native() as usize;
                let mut list = Vec::with_capacity(items.len());
                for k in items {
                    let from = if k == 0 { 0 } else { item_ends[k - 1].to_native() as usize };
                    let item = data
                        .as_str()
                        .get(from..item_ends[k].to_native() as usize)
                        .ok_or_else(|| format!("column {id}: list offsets off a character"))?;
                    list.push(item);
                }
                if list.is_empty() {
                    LoadCell::Empty
                } else {
                    LoadCell::List(list)
                }
            }
        };
        Ok((value, self.versions[i].to_native(), self.statuses[i]))
    }
}
