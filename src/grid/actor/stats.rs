//! What a branch holds, for `GET /metrics`.

use actix::{Context, Handler, Message, MessageResult};

use super::GridActor;
use crate::grid::store::StoreBytes;

/// How many records a branch holds and the bytes its records and query indexes take (for
/// `GET /metrics`).
#[derive(Debug, Message)]
#[rtype(result = "BranchStats")]
pub struct ReadStats;

/// The answer to `ReadStats`.
#[derive(Debug, Clone)]
pub struct BranchStats {
    pub records: usize,
    pub store: StoreBytes,
    pub history_bytes: usize,
    pub index_bytes: usize,
    /// Per column type in use (`ColumnType::as_str`): the heap bytes of its columns' cells and
    /// how many columns have it.
    pub by_type: Vec<(&'static str, usize, usize)>,
}

impl Handler<ReadStats> for GridActor {
    type Result = MessageResult<ReadStats>;

    fn handle(&mut self, _: ReadStats, _: &mut Context<Self>) -> Self::Result {
        MessageResult(BranchStats {
            records: self.state.store.len(),
            store: self.state.store.heap_parts(),
            history_bytes: self.state.history.heap_bytes(),
            index_bytes: self.query.heap_bytes(),
            by_type: self.cell_bytes_by_type(),
        })
    }
}

impl GridActor {
    /// `BranchStats::by_type`, in the order types first appear in the schema.
    fn cell_bytes_by_type(&self) -> Vec<(&'static str, usize, usize)> {
        let mut by_type: Vec<(&'static str, usize, usize)> = Vec::new();
        for column in &self.state.schema.columns {
            let Some(&slot) = self.state.slots.get(&column.id) else { continue };
            let bytes = self.state.store.column_heap_bytes(slot);
            let name = column.column_type.as_str();
            match by_type.iter_mut().find(|(t, _, _)| *t == name) {
                Some(entry) => {
                    entry.1 += bytes;
                    entry.2 += 1;
                }
                None => by_type.push((name, bytes, 1)),
            }
        }
        by_type
    }
}
