//! The index of a loaded image (format 6): what each chunk's sections were made from, so the
//! branch's next snapshot borrows every chunk not written since the load.

use std::collections::HashMap;

use super::read::{Group, Layout, SectionAt};
use super::{Borrowable, ChunkKey, ImageIndex, Placed};
use crate::grid::ops::GridState;
use crate::grid::store::{ColumnSlot, ColumnStore};

/// The sections a load read, in groups (`GridState::decode_indexed`).
pub(super) struct LoadedParts<'a> {
    records: (&'a [SectionAt], &'a [Group]),
    columns: Vec<(ColumnSlot, &'a [SectionAt], Vec<Group>)>,
    history: &'a [SectionAt],
}

impl<'a> LoadedParts<'a> {
    /// The parts a load read: the records' and history's sections, and each column's
    /// sections with the groups it was read in (`column_rows`, by column id).
    pub(super) fn of(
        state: &GridState,
        layout: &Layout<'a>,
        record_groups: &'a [Group],
        column_lists: &[(ColumnSlot, &'a [SectionAt])],
        column_rows: Vec<(String, Vec<Group>)>,
    ) -> Self {
        let columns = column_rows.into_iter().filter_map(|(id, rows)| {
            let &slot = state.slots.get(&id)?;
            let &(_, sections) = column_lists.iter().find(|(s, _)| *s == slot)?;
            Some((slot, sections, rows))
        });
        LoadedParts {
            records: (layout.records, record_groups),
            columns: columns.collect(),
            history: layout.history,
        }
    }

    /// The index of `state`, just loaded from these sections of the images `generations`
    /// (format 6), which reference `referenced` bytes of the chain.
    pub(super) fn index(
        &self,
        state: &GridState,
        generations: &[u64],
        referenced: u64,
    ) -> ImageIndex {
        let store = &state.store;
        let place = |at: &SectionAt| {
            let home = generations.get(at.link.map_or(0, |link| link + 1)).copied()?;
            Some(Placed { home, offset: at.offset, len: at.len as u64 })
        };
        let placed = |sections: &[SectionAt]| sections.iter().map(place).collect::<Option<_>>();
        let mut chunks = HashMap::new();
        let (sections, groups) = self.records;
        for (k, mine, _) in by_chunk(store, sections, groups) {
            let Some(sections) = placed(mine) else { continue };
            let handles = store.record_chunk_handles(k);
            let live = store.live_in_chunk(k);
            chunks.insert(ChunkKey::Records(k), Borrowable { handles, live, sections });
        }
        for (slot, sections, groups) in &self.columns {
            for (k, mine, group_count) in by_chunk(store, sections, groups) {
                // One chunk's statuses and then its cells; a chunk loaded from two (left short
                // by deletes) is written again.
                let ([meta, cells @ ..], 1) = (mine, group_count) else { continue };
                let (Some(meta), Some(cells)) = (placed(std::slice::from_ref(meta)), placed(cells))
                else {
                    continue;
                };
                let live = store.live_in_chunk(k);
                let handles = store.column_chunk_handle(*slot, k).into_iter().collect();
                let key = ChunkKey::Column(*slot, k);
                chunks.insert(key, Borrowable { handles, live, sections: meta });
                let handles = store.column_cells_handle(*slot, k).into_iter().collect();
                let key = ChunkKey::Cells(*slot, k);
                chunks.insert(key, Borrowable { handles, live, sections: cells });
            }
        }
        for (i, at) in self.history.iter().enumerate() {
            let (Some(handle), Some(placed)) = (state.history.sealed_handle(i), place(at)) else {
                continue;
            };
            let sections = vec![placed];
            chunks.insert(
                ChunkKey::History(i),
                Borrowable { handles: vec![handle], live: 1, sections },
            );
        }
        ImageIndex { epoch: store.epoch(), chunks, chain: generations.to_vec(), referenced }
    }
}

/// The sections that make up each of the store's chunks (whole `groups` of them, and how many
/// groups), for the chunks whose rows begin and end where groups do, up to the first that does
/// not.
fn by_chunk<'s>(
    store: &ColumnStore,
    sections: &'s [SectionAt],
    groups: &[Group],
) -> Vec<(usize, &'s [SectionAt], usize)> {
    let mut out = Vec::new();
    let (mut next, mut covered, mut end, mut at) = (0usize, 0usize, 0usize, 0usize);
    for k in 0..store.chunk_count() {
        let (first_group, first) = (next, at);
        end += store.live_in_chunk(k) as usize;
        while covered < end && next < groups.len() {
            covered += groups[next].rows;
            at += groups[next].sections;
            next += 1;
        }
        if covered != end || at > sections.len() {
            break;
        }
        out.push((k, &sections[first..at], next - first_group));
    }
    out
}
