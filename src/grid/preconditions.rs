//! Conditional writes inside the grid: a record's version (what its `ETag` shows,
//! `api::conditional`) and the check that the records a write names are still at the versions
//! its writer read. The grid actor checks right before it plans the write, on its own context,
//! so nothing of the branch changes between the check and the commit.

use super::ops::GridState;
use super::store::{ColumnSlot, ColumnStore, RowId};
use crate::error::{Coded, ErrorCode};

/// The version of `row`: the branch clock of its last change, its insertion, a move or
/// rename, or a change to a cell's value or statuses in any column. Every change takes a new
/// clock value, so two reads see one version exactly when nothing of the record changed
/// between them.
pub fn record_version(state: &GridState, row: RowId) -> u32 {
    version_over(&state.store, row, state.slots.values().copied())
}

/// `record_version` of each of `rows`, the branch's columns listed once for them all.
pub fn record_versions(state: &GridState, rows: &[RowId]) -> Vec<u32> {
    let slots: Vec<ColumnSlot> = state.slots.values().copied().collect();
    rows.iter().map(|&row| version_over(&state.store, row, slots.iter().copied())).collect()
}

/// The version of `row` as the columns `slots` see it: its creation, its last move or rename,
/// and its cells' versions in those columns (a view's change feed reads its columns only).
pub fn version_over(
    store: &ColumnStore,
    row: RowId,
    slots: impl IntoIterator<Item = ColumnSlot>,
) -> u32 {
    let stamps = store.created_at(row).max(store.moved_at(row));
    slots.into_iter().map(|slot| store.version(row, slot)).fold(stamps, u32::max)
}

/// A record a write names, and the version its writer read (`None`: any, `If-Match: *`; the
/// record must still exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub id: String,
    /// Its path, which picks the record in a grid identified by path and id.
    pub path: String,
    pub version: Option<u32>,
}

/// A write refused because a record changed (or went) since its writer read it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stale {
    #[error(
        "Record \"{id}\" changed since version {expected} (it is at {current}); nothing was \
         written."
    )]
    Changed { id: String, expected: u32, current: u32 },
    #[error("Record \"{id}\" does not exist any more; nothing was written.")]
    Gone { id: String },
}

impl Coded for Stale {
    fn code(&self) -> ErrorCode {
        match self {
            Stale::Changed { .. } | Stale::Gone { .. } => ErrorCode::PreconditionFailed,
        }
    }
}

/// Refuses the write unless every record of `expected` exists at the version given.
pub fn check(state: &GridState, expected: &[Expected]) -> Result<(), Stale> {
    for record in expected {
        let Some(row) = state.store.find(&record.path, &record.id) else {
            return Err(Stale::Gone { id: record.id.clone() });
        };
        let current = record_version(state, row);
        if let Some(version) = record.version.filter(|&v| v != current) {
            return Err(Stale::Changed { id: record.id.clone(), expected: version, current });
        }
    }
    Ok(())
}
