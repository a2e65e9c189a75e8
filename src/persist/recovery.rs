//! Recovery of grid branches at start: each branch known to the catalogue starts from its
//! newest intact snapshot (or empty), and the WAL's records after the snapshot's position are
//! replayed onto it in order.
//!
//! Records of branches the catalogue no longer knows (deleted grids) are skipped; a record that
//! does not decode is reported and skipped (the WAL's own checks already dropped torn tails).

use std::collections::HashMap;

use super::durability::Durability;
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

/// Rebuilds every branch from its snapshot and the WAL records (in LSN order).
pub fn recover(
    seeds: &[BranchSeed],
    durability: &Durability,
    records: &[(u64, Vec<u8>)],
) -> HashMap<String, GridState> {
    let started = std::time::Instant::now();
    let mut states: HashMap<String, (GridState, u64)> = HashMap::new();
    for seed in seeds {
        durability.track(&seed.branch_id);
        let start = match durability.load(&seed.branch_id) {
            Some(loaded) => (loaded.state, loaded.wal_lsn),
            None => (GridState::empty(seed.identity), 0),
        };
        states.insert(seed.branch_id.clone(), start);
    }
    let snapshots_done = started.elapsed();
    let (mut replayed, mut skipped) = (0usize, 0usize);
    for (lsn, bytes) in records {
        match WalEntry::decode(bytes) {
            Ok(entry) => {
                let Some((state, floor)) = states.get_mut(&entry.branch_id) else { continue };
                if *lsn <= *floor {
                    continue;
                }
                for op in &entry.ops {
                    state.apply(op);
                }
                replayed += 1;
            }
            Err(err) => {
                skipped += 1;
                tracing::error!(lsn, error = %err, "WAL record does not decode; skipped");
            }
        }
    }
    let mut out = HashMap::with_capacity(states.len());
    for seed in seeds {
        let Some((mut state, _)) = states.remove(&seed.branch_id) else { continue };
        if state.schema.view(&seed.default_view_id).is_none() {
            // The branch's creation was never acknowledged as durable: start it empty.
            state.apply(&GridOp::CreateView(ViewDef {
                id: seed.default_view_id.clone(),
                name: "Default view".to_owned(),
                is_default: true,
                columns: Vec::new(),
            }));
        }
        out.insert(seed.branch_id.clone(), state);
    }
    tracing::info!(
        branches = out.len(),
        wal_records = records.len(),
        replayed,
        skipped,
        snapshot_load_ms = snapshots_done.as_millis() as u64,
        total_ms = started.elapsed().as_millis() as u64,
        "branches recovered"
    );
    out
}
