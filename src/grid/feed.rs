//! A view's change feed read from the branch's state (`GET /v1/views/<id>/changes`,
//! `api::changes`): what changed after a position, in commit order, grouped by the commit
//! (the branch clock value, its *version*) that made each change.
//!
//! Nothing is kept per consumer but its position, and nothing per change but what the branch
//! keeps anyway: a record's creation, move and cell versions (scanned with
//! `scan_moved_since` / `scan_changed_since` over the view's columns) and the keys of deleted
//! records with the clock of their deletion (`gone_since`). So a consumer resumes from any
//! position the branch has seen, across restarts (the stamps are in snapshots and the WAL), and
//! a stalled consumer costs no memory. A record changed several times since a consumer's
//! position shows once, at its latest version, with its values then (changes coalesce per
//! record); a change is shown only once it is durable (`durable`).

use std::collections::BTreeMap;

use super::ops::GridState;
use super::preconditions::version_over;
use super::schema::ViewDef;
use super::store::{ColumnSlot, RowId};

/// The changes of one commit visible in a view: the records it left (their current values)
/// and the keys it deleted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Commit {
    pub version: u32,
    pub rows: Vec<RowId>,
    /// (path, id) of each record deleted (or moved away from that key).
    pub deleted: Vec<(String, String)>,
}

/// What a consumer at a position reads next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// In commit order.
    pub commits: Vec<Commit>,
    /// The position after the batch: every visible change stamped at or below it was read.
    pub after: u32,
}

/// The position of a consumer starting now: every change durable so far counts as read.
pub fn position_now(durable: u32) -> u32 {
    durable
}

/// The visible changes of `view` stamped after `after` and at or below `durable` (the clock
/// up to which the branch's changes are durable), whole commits in
/// order until more than `budget` records are taken (at least one commit).
pub fn changes_since(
    state: &GridState,
    view: &ViewDef,
    after: u32,
    durable: u32,
    budget: usize,
) -> Batch {
    let store = &state.store;
    let slots: Vec<ColumnSlot> = state
        .schema
        .view_columns(view)
        .into_iter()
        .filter_map(|(column, _)| state.slots.get(&column.id).copied())
        .collect();
    let mut touched = store.scan_moved_since(after);
    for &slot in &slots {
        touched |= store.scan_changed_since(slot, after);
    }
    let mut commits: BTreeMap<u32, Commit> = BTreeMap::new();
    for row in touched.iter().map(RowId::from_raw) {
        let version = version_over(store, row, slots.iter().copied());
        // A record last changed by a write not yet durable comes with that write.
        if version > after && version <= durable {
            commit_at(&mut commits, version).rows.push(row);
        }
    }
    for gone in store.gone_since(after).filter(|gone| gone.clock <= durable) {
        commit_at(&mut commits, gone.clock).deleted.push((gone.path, gone.id));
    }
    let mut batch = Batch { commits: Vec::new(), after: after.max(position_now(durable)) };
    let mut taken = 0;
    for (version, commit) in commits {
        if taken > budget {
            batch.after = batch.commits.last().map_or(after, |c: &Commit| c.version);
            break;
        }
        taken += commit.rows.len() + commit.deleted.len();
        batch.commits.push(Commit { version, ..commit });
    }
    batch
}

fn commit_at(commits: &mut BTreeMap<u32, Commit>, version: u32) -> &mut Commit {
    commits.entry(version).or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::columns::{build_column, ColumnRequest};
    use crate::grid::ops::{CellWrite, GridOp, RecordWrite};
    use crate::grid::store::RecordIdentity;
    use crate::grid::value::CellValue;

    fn grid() -> GridState {
        let mut state = GridState::new("v", Vec::new(), RecordIdentity::RecordId);
        for id in ["a", "b"] {
            let body = serde_json::json!({"id": id, "name": id, "type": "singleLine"});
            let request: ColumnRequest = serde_json::from_value(body).expect("a column");
            let column = build_column(&state.schema, &request).expect("a column");
            state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
        }
        state
    }

    fn write(state: &mut GridState, add: bool, id: &str, column: &str, value: &str) {
        let record = RecordWrite {
            id: id.into(),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells: vec![CellWrite {
                column_id: column.into(),
                value: Some(CellValue::Text(value.into())),
                dependency_status: None,
                source_status: None,
            }],
            mark_mt: false,
        };
        let (time_ms, user) = (0, "u".to_owned());
        state.apply(&if add {
            GridOp::AddRecords { time_ms, user, records: vec![record] }
        } else {
            GridOp::UpdateRecords { time_ms, user, records: vec![record] }
        });
    }

    fn ids(state: &GridState, batch: &Batch) -> Vec<(u32, Vec<String>, Vec<String>)> {
        let id = |row: &RowId| state.store.id(*row).to_owned();
        let gone = |key: &(String, String)| key.1.clone();
        batch
            .commits
            .iter()
            .map(|c| {
                (c.version, c.rows.iter().map(id).collect(), c.deleted.iter().map(gone).collect())
            })
            .collect()
    }

    #[test]
    fn changes_come_by_commit_coalesced_per_record_and_only_once_durable() {
        let mut state = grid();
        let view = state.schema.view("v").expect("view").clone();
        let start = state.store.clock();
        write(&mut state, true, "r1", "a", "1");
        write(&mut state, true, "r2", "a", "2");
        write(&mut state, false, "r1", "b", "3");
        let durable = state.store.clock();
        let batch = changes_since(&state, &view, position_now(start), durable, 100);
        let seen = ids(&state, &batch);
        assert_eq!(seen.iter().map(|c| c.1.clone()).collect::<Vec<_>>(), [vec!["r2"], vec!["r1"]]);
        assert_eq!(batch.after, position_now(durable));
        assert!(changes_since(&state, &view, batch.after, durable, 100).commits.is_empty());

        state.apply(&GridOp::DeleteRecords { keys: vec![(String::new(), "r2".into())] });
        write(&mut state, false, "r1", "a", "4");
        let not_yet = changes_since(&state, &view, batch.after, durable, 100);
        assert!(not_yet.commits.is_empty(), "nothing past the durable clock: {not_yet:?}");
        let later = changes_since(&state, &view, batch.after, state.store.clock(), 100);
        let seen = ids(&state, &later);
        assert_eq!(seen.len(), 2);
        assert_eq!((seen[0].1.len(), seen[0].2.clone()), (0, vec!["r2".to_owned()]));
        assert_eq!(seen[1].1, ["r1"]);
    }

    #[test]
    fn a_small_budget_takes_whole_commits_and_resumes_after_them() {
        let mut state = grid();
        let view = state.schema.view("v").expect("view").clone();
        let start = position_now(state.store.clock());
        for i in 0..5 {
            write(&mut state, true, &format!("r{i}"), "a", "x");
        }
        let durable = state.store.clock();
        let (mut after, mut seen) = (start, Vec::new());
        for _ in 0..10 {
            let batch = changes_since(&state, &view, after, durable, 1);
            seen.extend(ids(&state, &batch).into_iter().flat_map(|c| c.1));
            if batch.commits.is_empty() {
                break;
            }
            after = batch.after;
        }
        assert_eq!(seen, ["r0", "r1", "r2", "r3", "r4"]);
    }
}
