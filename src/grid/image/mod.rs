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

use std::sync::atomic::{AtomicUsize, Ordering};

use rkyv::{Archive, Deserialize, Serialize};

mod sections;

pub use sections::{
    slice_at, ImageIndex, PartLimits, Scratch, SectionBytes, SectionSource, WrittenImage, MAX_LINKS,
};

use super::history::{
    legacy_key, ChunkPart, EntryRef, History, HistoryCell, HistoryEntry, HistoryParts, NO_ENTRY,
};
use super::ops::{GridState, MergeBase};
use super::schema::Schema;
use super::store::{
    arena_cost, BuiltColumn, CellRef, ColumnSlot, ColumnStore, GoneKey, LoadCell, LoadedRecord,
    RecordIdentity, RowId,
};
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

impl GridState {
    /// Copies the branch into an image; an error when history spilled to disk cannot be read
    /// back.
    pub fn to_image(&self) -> std::io::Result<BranchImage> {
        let rows: Vec<RowId> = self.store.live_rows().collect();
        let HistoryParts { chunks, retired, count } = self.history.to_parts()?;
        let chunks = chunks
            .into_iter()
            .map(|c| HistoryChunkImage { len: c.len, block: c.block, ends: c.ends, data: c.data })
            .collect();
        Ok(BranchImage {
            history: HistoryImage4 {
                chunks,
                heads: rows.iter().map(|r| self.store.history_head(*r)).collect(),
                retired,
                count,
            },
            body: self.body_image(&rows),
        })
    }

    /// The format-2 part of the image (history left out).
    fn body_image(&self, rows: &[RowId]) -> BranchImageV2 {
        let mut merge_bases: Vec<MergeBaseImage> = self
            .merge_bases
            .iter()
            .map(|(id, base)| MergeBaseImage {
                source_branch_id: id.clone(),
                source: base.source,
                destination: base.destination,
            })
            .collect();
        merge_bases.sort_by(|a, b| a.source_branch_id.cmp(&b.source_branch_id));
        BranchImageV2 {
            clock: self.store.clock(),
            created: rows.iter().map(|r| self.store.created_at(*r)).collect(),
            moved: rows.iter().map(|r| self.store.moved_at(*r)).collect(),
            merge_bases,
            gone: self
                .store
                .gone()
                .map(|g| GoneKeyImage { clock: g.clock, path: g.path.clone(), id: g.id.clone() })
                .collect(),
            records: self.records_image(rows),
        }
    }

    /// The format-1 part of the image: schema and live records (history is format 3's log).
    fn records_image(&self, rows: &[RowId]) -> BranchImageV1 {
        let columns = self
            .schema
            .columns
            .iter()
            .filter_map(|c| self.slots.get(&c.id).map(|slot| (c, *slot)))
            .map(|(c, slot)| ColumnImage {
                id: c.id.clone(),
                cells: column_cells(&self.store, slot, rows),
                statuses: rows
                    .iter()
                    .map(|r| {
                        let s = &self.store;
                        pack(
                            s.dependency_status(*r, slot),
                            s.source_status(*r, slot),
                            s.is_mt(*r, slot),
                        )
                    })
                    .collect(),
                versions: rows.iter().map(|r| self.store.version(*r, slot)).collect(),
            })
            .collect();
        BranchImageV1 {
            schema_json: serde_json::to_string(&self.schema).expect("schemas always serialize"),
            by_path: self.store.identity() == RecordIdentity::PathAndId,
            ids: rows.iter().map(|r| self.store.id(*r).to_owned()).collect(),
            paths: rows.iter().map(|r| self.store.path(*r).to_owned()).collect(),
            times: rows.iter().map(|r| self.store.modified_time(*r)).collect(),
            users: rows.iter().map(|r| self.store.modified_by(*r).to_owned()).collect(),
            columns,
            history: Vec::new(),
        }
    }

    /// Rebuilds a branch from a format-2 image.
    pub fn from_image_v2(image: BranchImageV2) -> Result<GridState, String> {
        let n = image.records.ids.len();
        if image.created.len() != n || image.moved.len() != n {
            return Err("record stamps have the wrong length".to_owned());
        }
        let mut state = GridState::from_image_v1(image.records)?;
        for (i, row) in state.store.live_rows().collect::<Vec<_>>().into_iter().enumerate() {
            state.store.restore_row_stamps(row, image.created[i], image.moved[i]);
        }
        state.store.restore_clock(image.clock);
        state.store.restore_gone(image.gone.into_iter().map(|g| GoneKey {
            clock: g.clock,
            path: g.path,
            id: g.id,
        }));
        state.merge_bases = image
            .merge_bases
            .into_iter()
            .map(|m| {
                let base = MergeBase { source: m.source, destination: m.destination };
                (m.source_branch_id, base)
            })
            .collect();
        Ok(state)
    }

    /// Rebuilds a branch from a format-1 image. Its cell versions counted changes; the clock
    /// starts at the highest of them, so every later change is stamped above every cell.
    pub fn from_image_v1(image: BranchImageV1) -> Result<GridState, String> {
        let clock = image.columns.iter().flat_map(|c| c.versions.iter().copied()).max();
        let mut state = GridState::records_from_image(image)?;
        state.store.restore_clock(clock.unwrap_or(0));
        Ok(state)
    }

    /// A branch with no records, `schema`'s columns and compiled formulas.
    fn with_schema(schema: Schema, by_path: bool) -> GridState {
        let identity = if by_path { RecordIdentity::PathAndId } else { RecordIdentity::RecordId };
        let mut state = GridState::empty(identity);
        for column in &schema.columns {
            state.add_column_storage(column);
        }
        state.schema = schema;
        state.schema.reindex();
        state.compile_formulas();
        state
    }

    fn records_from_image(image: BranchImageV1) -> Result<GridState, String> {
        let schema: Schema =
            serde_json::from_str(&image.schema_json).map_err(|e| format!("schema: {e}"))?;
        let n = image.ids.len();
        if image.paths.len() != n || image.times.len() != n || image.users.len() != n {
            return Err("record columns have different lengths".to_owned());
        }
        let mut state = GridState::with_schema(schema, image.by_path);
        let rows: Vec<RowId> = (0..n)
            .map(|i| {
                state.store.insert(&image.ids[i], &image.paths[i], image.times[i], &image.users[i])
            })
            .collect();
        for column in image.columns {
            let Some(&slot) = state.slots.get(&column.id) else { continue };
            let values =
                cell_values(column.cells, n).map_err(|e| format!("column {}: {e}", column.id))?;
            if column.statuses.len() != n || column.versions.len() != n {
                return Err(format!("column {} has the wrong number of cells", column.id));
            }
            for (i, value) in values.into_iter().enumerate() {
                state
                    .store
                    .set_value(rows[i], slot, &value)
                    .map_err(|e| format!("column {}: {e}", column.id))?;
                let (d, s, mt) = unpack(column.statuses[i]);
                state.store.set_dependency_status(rows[i], slot, d);
                state.store.set_source_status(rows[i], slot, s);
                state.store.set_mt(rows[i], slot, mt);
                state.store.restore_version(rows[i], slot, column.versions[i]);
            }
        }
        state.history_from_keyed(image.history);
        Ok(state)
    }

    /// Turns the per-key history of a format 1 or 2 image (keys in order, each key's entries
    /// oldest first) into chains: a live key's chain goes to its record, a retired key's (or
    /// one no record has) to the retired list.
    fn history_from_keyed(&mut self, entries: Vec<HistoryImage>) {
        let mut heads: std::collections::BTreeMap<String, EntryRef> = Default::default();
        for h in entries {
            let cells = h
                .cells
                .into_iter()
                .map(|c| HistoryCell {
                    column_id: c.column_id,
                    value: from_cell(c.value),
                    statuses: (c.statuses != 255).then(|| {
                        let (d, s, _) = unpack(c.statuses);
                        (d, s)
                    }),
                })
                .collect();
            let entry = HistoryEntry { time_ms: h.time_ms, user: h.user, path: h.path, cells };
            let prev = heads.get(&h.key).copied().unwrap_or(NO_ENTRY);
            let (_, _, id) = legacy_key(&h.key);
            let head = self.history.push_entry(prev, id, &entry);
            heads.insert(h.key, head);
        }
        for (key, head) in heads {
            let (retired, path, id) = legacy_key(&key);
            match self.store.find(path, id).filter(|_| !retired) {
                Some(row) => self.store.set_history_head(row, head),
                None => self.history.retire(head),
            }
        }
    }
}

/// Lays out a column's cells for the image.
fn column_cells(store: &ColumnStore, slot: ColumnSlot, rows: &[RowId]) -> ColumnCells {
    match store.kind(slot) {
        StorageKind::Text => {
            let (mut data, mut ends) = (String::new(), Vec::with_capacity(rows.len()));
            for row in rows {
                if let CellRef::Text(s) = store.value_ref(*row, slot) {
                    data.push_str(s);
                }
                ends.push(data.len() as u64);
            }
            ColumnCells::Text { data, ends }
        }
        StorageKind::Number => {
            ColumnCells::Number(
                rows.iter()
                    .map(|r| {
                        if let CellRef::Number(n) = store.value_ref(*r, slot) {
                            n
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            )
        }
        StorageKind::Boolean => ColumnCells::Boolean(
            rows.iter()
                .map(|r| {
                    if let CellRef::Boolean(b) = store.value_ref(*r, slot) {
                        u8::from(b)
                    } else {
                        2
                    }
                })
                .collect(),
        ),
        StorageKind::Datetime => ColumnCells::Datetime(
            rows.iter()
                .map(|r| {
                    if let CellRef::Datetime(ms) = store.value_ref(*r, slot) {
                        ms
                    } else {
                        i64::MIN
                    }
                })
                .collect(),
        ),
        StorageKind::List => {
            let (mut data, mut item_ends, mut cell_ends) =
                (String::new(), Vec::new(), Vec::with_capacity(rows.len()));
            for row in rows {
                if let CellRef::List(items) = store.value_ref(*row, slot) {
                    for item in items {
                        data.push_str(item);
                        item_ends.push(data.len() as u64);
                    }
                }
                cell_ends.push(item_ends.len() as u64);
            }
            ColumnCells::List { data, item_ends, cell_ends }
        }
    }
}

/// Slices of `data` ending at each of `ends`, checked.
fn slices<'a>(data: &'a str, ends: &[u64]) -> Result<Vec<&'a str>, String> {
    let mut start = 0usize;
    ends.iter()
        .map(|&end| {
            let end = usize::try_from(end).map_err(|_| "offset out of range".to_owned())?;
            let s =
                data.get(start..end).ok_or_else(|| format!("bad text offsets {start}..{end}"))?;
            start = end;
            Ok(s)
        })
        .collect()
}

/// The `n` cell values of a column image.
fn cell_values(cells: ColumnCells, n: usize) -> Result<Vec<CellValue>, String> {
    let values: Vec<CellValue> = match cells {
        ColumnCells::Text { data, ends } => slices(&data, &ends)?
            .into_iter()
            .map(|s| if s.is_empty() { CellValue::Empty } else { CellValue::Text(s.to_owned()) })
            .collect(),
        ColumnCells::Number(v) => v
            .into_iter()
            .map(|x| if x.is_nan() { CellValue::Empty } else { CellValue::Number(x) })
            .collect(),
        ColumnCells::Boolean(v) => v
            .into_iter()
            .map(|b| match b {
                0 => CellValue::Boolean(false),
                1 => CellValue::Boolean(true),
                _ => CellValue::Empty,
            })
            .collect(),
        ColumnCells::Datetime(v) => v
            .into_iter()
            .map(|ms| if ms == i64::MIN { CellValue::Empty } else { CellValue::Datetime(ms) })
            .collect(),
        ColumnCells::List { data, item_ends, cell_ends } => {
            let items = slices(&data, &item_ends)?;
            let mut start = 0usize;
            let mut out = Vec::with_capacity(cell_ends.len());
            for &end in &cell_ends {
                let end = usize::try_from(end).map_err(|_| "offset out of range".to_owned())?;
                let cell = items
                    .get(start..end)
                    .ok_or_else(|| format!("bad list offsets {start}..{end}"))?;
                start = end;
                out.push(if cell.is_empty() {
                    CellValue::Empty
                } else {
                    CellValue::List(cell.iter().map(|s| (*s).to_owned()).collect())
                });
            }
            out
        }
    };
    if values.len() != n {
        return Err(format!("{} cells for {n} records", values.len()));
    }
    Ok(values)
}

impl GridState {
    /// Rebuilds a branch from a validated archived image (format 4; an inconsistent one is an
    /// error, never a panic), without first copying it into owned values: text cells, ids and
    /// names are read from the image's bytes and written into the store's arenas, record by
    /// record (so each arena is sized once its first rows predict it); packed history chunks
    /// stay packed.
    pub fn from_archived(image: &ArchivedBranchImage) -> Result<GridState, String> {
        let h = &image.history;
        let chunks = h
            .chunks
            .iter()
            .map(|c| ChunkPart {
                len: c.len.to_native(),
                block: c.block.to_native(),
                ends: c.ends.iter().map(|e| e.to_native()).collect(),
                data: c.data.as_slice().to_vec(),
            })
            .collect();
        let retired = h.retired.iter().map(|r| r.to_native()).collect();
        let history = HistoryParts { chunks, retired, count: h.count.to_native() };
        GridState::from_archived_parts(&image.body, &h.heads, history)
    }

    /// `from_archived` for a format 3 image, whose history chunks are all plain.
    pub fn from_archived_v3(image: &ArchivedBranchImageV3) -> Result<GridState, String> {
        let h = &image.history;
        let chunks = h
            .chunks
            .iter()
            .map(|c| {
                let len = u32::try_from(c.len()).map_err(|_| "history: a chunk over 4 GiB")?;
                Ok(ChunkPart { len, block: 0, ends: Vec::new(), data: c.as_slice().to_vec() })
            })
            .collect::<Result<_, &str>>()?;
        let retired = h.retired.iter().map(|r| r.to_native()).collect();
        let history = HistoryParts { chunks, retired, count: h.count.to_native() };
        GridState::from_archived_parts(&image.body, &h.heads, history)
    }

    fn from_archived_parts(
        v2: &ArchivedBranchImageV2,
        heads: &[rkyv::rend::u64_le],
        history: HistoryParts,
    ) -> Result<GridState, String> {
        let v1 = &v2.records;
        if !v1.history.is_empty() {
            return Err("a format 3 or 4 image holds history in the old per-key list".to_owned());
        }
        let n = v1.ids.len();
        if v1.paths.len() != n || v1.times.len() != n || v1.users.len() != n {
            return Err("record columns have different lengths".to_owned());
        }
        if v2.created.len() != n || v2.moved.len() != n || heads.len() != n {
            return Err("record stamps have the wrong length".to_owned());
        }
        let schema: Schema =
            serde_json::from_str(v1.schema_json.as_str()).map_err(|e| format!("schema: {e}"))?;
        let mut state = GridState::with_schema(schema, v1.by_path);
        let columns: Vec<(ColumnSlot, &ArchivedColumnImage)> = v1
            .columns
            .iter()
            .filter_map(|c| state.slots.get(c.id.as_str()).map(|slot| (*slot, c)))
            .collect();
        for (_, column) in &columns {
            CellsRef::of_column(column).check(n)?;
        }
        let images = columns.iter().map(|&(slot, column)| (slot, column)).collect();
        let build = |column: &ArchivedColumnImage, kind, localized, _: &mut Scratch| {
            let cells = CellsRef::of_column(column);
            ColumnStore::build_column(kind, localized, n, |i| cells.cell(i))
        };
        load_columns(&mut state, n, images, build, |store| {
            let mut keys = Vec::with_capacity(n);
            for (i, head) in heads.iter().enumerate() {
                let record = LoadedRecord {
                    id: v1.ids[i].as_str(),
                    path: v1.paths[i].as_str(),
                    time_ms: v1.times[i].to_native(),
                    user: v1.users[i].as_str(),
                    created: v2.created[i].to_native(),
                    moved: v2.moved[i].to_native(),
                    history_head: head.to_native(),
                };
                store.insert_loaded(&record, &mut keys);
            }
            store.index_loaded_keys(keys);
            Ok(())
        })?;
        restore_archived_stamps(&mut state, v2.clock.to_native(), &v2.gone, &v2.merge_bases);
        let history = History::from_parts(history)?;
        if let Some(bad) = heads.iter().find(|at| !history.holds(at.to_native())) {
            return Err(format!("a history chain starts outside the log ({:#x})", bad.to_native()));
        }
        state.history = history;
        Ok(state)
    }
}

/// Builds every column of `state`'s store whole, from the image's column (`images`, by slot;
/// a slot without one gets empty cells) by `build`, on this thread and a helper taking columns
/// from a shared counter, while this thread first runs `records` (which inserts the `n`
/// records; an error ends the load); then installs them.
fn load_columns<S: Copy + Send + Sync>(
    state: &mut GridState,
    n: usize,
    images: Vec<(ColumnSlot, S)>,
    build: impl Fn(S, StorageKind, bool, &mut Scratch) -> Result<BuiltColumn, String> + Sync,
    records: impl FnOnce(&mut ColumnStore) -> Result<(), String>,
) -> Result<(), String> {
    let mut jobs: Vec<(ColumnSlot, StorageKind, bool, Option<S>)> = state
        .slots
        .values()
        .map(|&slot| (slot, state.store.kind(slot), state.store.is_localized(slot), None))
        .collect();
    jobs.sort_by_key(|job| job.0.get());
    for (slot, image) in images {
        if let Some(job) = jobs.iter_mut().find(|job| job.0 == slot) {
            job.3 = Some(image);
        }
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut built = Vec::new();
        // Sections are read into one buffer, reused column after column.
        let mut scratch = Scratch::new();
        while let Some(&(slot, kind, localized, image)) =
            jobs.get(next.fetch_add(1, Ordering::Relaxed))
        {
            let column = match image {
                Some(image) => build(image, kind, localized, &mut scratch)?,
                None => {
                    ColumnStore::build_column(kind, localized, n, |_| Ok((LoadCell::Empty, 0, 0)))?
                }
            };
            built.push((slot, column));
        }
        Ok::<_, String>(built)
    };
    let store = &mut state.store;
    let (mine, theirs) = std::thread::scope(|scope| {
        let helper =
            std::thread::Builder::new().name("image-load".into()).spawn_scoped(scope, work);
        let inserted = records(store);
        if inserted.is_err() {
            // The load fails: the helper takes no further column.
            next.store(jobs.len(), Ordering::Relaxed);
        }
        let mine = work();
        let theirs = match helper {
            Ok(helper) => {
                helper.join().unwrap_or_else(|_| Err("loading a column panicked".to_owned()))
            }
            Err(_) => Ok(Vec::new()),
        };
        (inserted.and(mine), theirs)
    });
    for (slot, column) in mine?.into_iter().chain(theirs?) {
        state.store.install_column(slot, column)?;
    }
    if !state.store.columns_complete() {
        return Err("a column of the store was left without cells".to_owned());
    }
    Ok(())
}

/// Restores the branch's clock, gone keys and merge bases from an archived image.
fn restore_archived_stamps(
    state: &mut GridState,
    clock: u32,
    gone: &[ArchivedGoneKeyImage],
    merge_bases: &[ArchivedMergeBaseImage],
) {
    state.store.restore_clock(clock);
    state.store.restore_gone(gone.iter().map(|g| GoneKey {
        clock: g.clock.to_native(),
        path: g.path.as_str().to_owned(),
        id: g.id.as_str().to_owned(),
    }));
    state.merge_bases = merge_bases
        .iter()
        .map(|m| {
            let base =
                MergeBase { source: m.source.to_native(), destination: m.destination.to_native() };
            (m.source_branch_id.as_str().to_owned(), base)
        })
        .collect();
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
    pub fn check(&self, n: usize) -> Result<(), String> {
        let id = self.id;
        if self.statuses.len() != n || self.versions.len() != n {
            return Err(format!("column {id} has the wrong number of cells"));
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
                    return Err(format!("column {id}: bad text offsets"));
                }
                ends.len()
            }
            ArchivedColumnCells::Number(v) => v.len(),
            ArchivedColumnCells::Boolean(v) => v.len(),
            ArchivedColumnCells::Datetime(v) => v.len(),
            ArchivedColumnCells::List { data, item_ends, cell_ends } => {
                if !ends_fit(data.len(), item_ends) || !ends_fit(item_ends.len(), cell_ends) {
                    return Err(format!("column {id}: bad list offsets"));
                }
                cell_ends.len()
            }
        };
        if cells != n {
            return Err(format!("column {id}: {cells} cells for {n} records"));
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

    /// Cell `i` (after `check`), with its version and status byte.
    pub fn cell(&self, i: usize) -> Result<(LoadCell<'a>, u32, u8), String> {
        let start =
            |ends: &[rkyv::rend::u64_le]| if i == 0 { 0 } else { ends[i - 1].to_native() as usize };
        let id = self.id;
        let value = match self.cells {
            ArchivedColumnCells::Text { data, ends } => {
                let text = data
                    .as_str()
                    .get(start(ends)..ends[i].to_native() as usize)
                    .ok_or_else(|| format!("column {id}: text offsets off a character"))?;
                if text.is_empty() {
                    LoadCell::Empty
                } else {
                    LoadCell::Text(text)
                }
            }
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
