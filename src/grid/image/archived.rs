//! Loads read straight from archived bytes (formats 3 and 4; `sections` for 5 and 6): the
//! columns built on helper threads (`load_columns`) and the merge stamps restored.

use crate::grid::damage::{Damaged, LoadResult};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{
    ArchivedBranchImage, ArchivedBranchImageV2, ArchivedBranchImageV3, ArchivedColumnImage,
    ArchivedGoneKeyImage, ArchivedMergeBaseImage, CellsRef, Scratch,
};
use crate::grid::history::{ChunkPart, History, HistoryParts};
use crate::grid::ops::{GridState, MergeBase};
use crate::grid::schema::Schema;
use crate::grid::store::{BuiltColumn, ColumnSlot, ColumnStore, GoneKey, LoadCell, LoadedRecord};
use crate::grid::value::StorageKind;

impl GridState {
    /// Rebuilds a branch from a validated archived image (format 4; an inconsistent one is an
    /// error, never a panic), without first copying it into owned values: text cells, ids and
    /// names are read from the image's bytes and written into the store's arenas, record by
    /// record (so each arena is sized once its first rows predict it); packed history chunks
    /// stay packed.
    pub fn from_archived(image: &ArchivedBranchImage) -> LoadResult<GridState> {
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
    pub fn from_archived_v3(image: &ArchivedBranchImageV3) -> LoadResult<GridState> {
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
    ) -> LoadResult<GridState> {
        let v1 = &v2.records;
        if !v1.history.is_empty() {
            return Err("a format 3 or 4 image holds history in the old per-key list".into());
        }
        let n = v1.ids.len();
        if v1.paths.len() != n || v1.times.len() != n || v1.users.len() != n {
            return Err("record columns have different lengths".into());
        }
        if v2.created.len() != n || v2.moved.len() != n || heads.len() != n {
            return Err("record stamps have the wrong length".into());
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
            return Err(
                format!("a history chain starts outside the log ({:#x})", bad.to_native()).into()
            );
        }
        state.history = history;
        Ok(state)
    }
}

/// Builds every column of `state`'s store whole, from the image's column (`images`, by slot;
/// a slot without one gets empty cells) by `build`, on this thread and a helper taking columns
/// from a shared counter, while this thread first runs `records` (which inserts the `n`
/// records; an error ends the load); then installs them.
pub(super) fn load_columns<S: Copy + Send + Sync>(
    state: &mut GridState,
    n: usize,
    images: Vec<(ColumnSlot, S)>,
    build: impl Fn(S, StorageKind, bool, &mut Scratch) -> LoadResult<BuiltColumn> + Sync,
    records: impl FnOnce(&mut ColumnStore) -> LoadResult<()>,
) -> LoadResult<()> {
    let jobs = column_jobs(state, images);
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
        Ok::<_, Damaged>(built)
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
            Ok(helper) => helper.join().unwrap_or_else(|_| Err("loading a column panicked".into())),
            Err(_) => Ok(Vec::new()),
        };
        (inserted.and(mine), theirs)
    });
    for (slot, column) in mine?.into_iter().chain(theirs?) {
        state.store.install_column(slot, column)?;
    }
    if !state.store.columns_complete() {
        return Err("a column of the store was left without cells".into());
    }
    Ok(())
}

/// One column to build: its slot, storage kind, whether it is localized, and its image.
type ColumnJob<S> = (ColumnSlot, StorageKind, bool, Option<S>);

/// A job for every column of `state`'s store, by slot, with its image where `images` has one.
fn column_jobs<S>(state: &GridState, images: Vec<(ColumnSlot, S)>) -> Vec<ColumnJob<S>> {
    let mut jobs: Vec<ColumnJob<S>> = state
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
    jobs
}

/// Restores the branch's clock, gone keys and merge bases from an archived image.
pub(super) fn restore_archived_stamps(
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
