//! Recovery of grid branches at start: each branch known to the catalogue starts empty (or from
//! its snapshot, later) and the WAL's records are replayed onto it in order.
//!
//! Records of branches the catalogue no longer knows (deleted grids) are skipped; a record that
//! does not decode is reported and skipped (the WAL's own checks already dropped torn tails).

use std::collections::HashMap;

use crate::grid::ops::{GridOp, GridState};
use crate::grid::schema::ViewDef;
use crate::grid::store::RecordIdentity;
use crate::persist::entry::WalEntry;

/// What recovery needs to know of a branch from the catalogue.
#[derive(Debug, Clone)]
pub struct BranchSeed {
    pub branch_id: String,
    pub identity: RecordIdentity,
    pub default_view_id: String,
}

/// Rebuilds every branch from the WAL records (in LSN order).
pub fn replay(seeds: &[BranchSeed], records: &[(u64, Vec<u8>)]) -> HashMap<String, GridState> {
    let mut states: HashMap<String, GridState> =
        seeds.iter().map(|s| (s.branch_id.clone(), GridState::empty(s.identity))).collect();
    let mut skipped = 0usize;
    for (lsn, bytes) in records {
        match WalEntry::decode(bytes) {
            Ok(entry) => {
                if let Some(state) = states.get_mut(&entry.branch_id) {
                    for op in &entry.ops {
                        state.apply(op);
                    }
                }
            }
            Err(err) => {
                skipped += 1;
                tracing::error!(lsn, error = %err, "WAL record does not decode; skipped");
            }
        }
    }
    for seed in seeds {
        let Some(state) = states.get_mut(&seed.branch_id) else { continue };
        if state.schema.view(&seed.default_view_id).is_none() {
            // The branch's creation was never acknowledged as durable: start it empty.
            state.apply(&GridOp::CreateView(ViewDef {
                id: seed.default_view_id.clone(),
                name: "Default view".to_owned(),
                is_default: true,
                columns: Vec::new(),
            }));
        }
    }
    tracing::info!(
        branches = states.len(),
        records = records.len(),
        skipped,
        "branches recovered from the WAL"
    );
    states
}
