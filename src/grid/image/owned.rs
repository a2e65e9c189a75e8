//! The owned image (`BranchImage`, built by `to_image`, which tests compare branches by) and
//! the loads of formats 1 and 2, deserialized into owned values first.

use super::{
    column_cells, from_cell, pack, unpack, BranchImage, BranchImageV1, BranchImageV2, ColumnCells,
    ColumnImage, GoneKeyImage, HistoryChunkImage, HistoryImage, HistoryImage4, MergeBaseImage,
};
use crate::grid::damage::LoadResult;
use crate::grid::history::{
    legacy_key, EntryRef, HistoryCell, HistoryEntry, HistoryParts, NO_ENTRY,
};
use crate::grid::ops::{GridState, MergeBase};
use crate::grid::schema::Schema;
use crate::grid::store::{GoneKey, RecordIdentity, RowId};
use crate::grid::value::CellValue;

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

    /// The branch's merge bases as an image holds them, by source branch id.
    pub(super) fn merge_base_images(&self) -> Vec<MergeBaseImage> {
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
        merge_bases
    }

    /// The format-2 part of the image (history left out).
    fn body_image(&self, rows: &[RowId]) -> BranchImageV2 {
        let merge_bases = self.merge_base_images();
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
                cells: column_cells(&self.store, slot, rows, 0),
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
    pub fn from_image_v2(image: BranchImageV2) -> LoadResult<GridState> {
        let n = image.records.ids.len();
        if image.created.len() != n || image.moved.len() != n {
            return Err("record stamps have the wrong length".into());
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
    pub fn from_image_v1(image: BranchImageV1) -> LoadResult<GridState> {
        let clock = image.columns.iter().flat_map(|c| c.versions.iter().copied()).max();
        let mut state = GridState::records_from_image(image)?;
        state.store.restore_clock(clock.unwrap_or(0));
        Ok(state)
    }

    /// A branch with no records, `schema`'s columns and compiled formulas.
    pub(super) fn with_schema(schema: Schema, by_path: bool) -> GridState {
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

    fn records_from_image(image: BranchImageV1) -> LoadResult<GridState> {
        let schema: Schema =
            serde_json::from_str(&image.schema_json).map_err(|e| format!("schema: {e}"))?;
        let n = image.ids.len();
        if image.paths.len() != n || image.times.len() != n || image.users.len() != n {
            return Err("record columns have different lengths".into());
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
                return Err(format!("column {} has the wrong number of cells", column.id).into());
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

/// Slices of `data` ending at each of `ends`, checked.
fn slices<'a>(data: &'a str, ends: &[u64]) -> LoadResult<Vec<&'a str>> {
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
fn cell_values(cells: ColumnCells, n: usize) -> LoadResult<Vec<CellValue>> {
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
        return Err(format!("{} cells for {n} records", values.len()).into());
    }
    Ok(values)
}
