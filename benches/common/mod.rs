//! Realistic localization data for the benches, from `loadtest::data` (record keys like
//! `ui.menu.save.000123`, an English source sentence, six translations in four scripts, a number,
//! a datetime, a workflow state, a flag and tags), as gridd's own types: a branch state built
//! through `AddRecords` ops.

#![allow(dead_code)]

use std::time::Instant;

use gridd::grid::columns::{build_column, ColumnRequest};
use gridd::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use gridd::grid::schema::Dependency;
use gridd::grid::store::RecordIdentity;
use gridd::grid::value::CellValue;
use loadtest::data::{self, Cell, USERS};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// A record's key and its 12 cell values.
pub struct Record {
    pub id: String,
    pub path: String,
    pub values: Vec<CellValue>,
}

/// Record number `n` of `loadtest::data` with gridd's cell values.
pub fn record(rng: &mut StdRng, n: usize, prefix: &str) -> Record {
    let rec = data::record(rng, n, prefix);
    let values = rec
        .values
        .into_iter()
        .map(|cell| match cell {
            Cell::Text(text) => CellValue::Text(text),
            Cell::Number(n) => CellValue::Number(n),
            Cell::Datetime(ms) => CellValue::Datetime(ms),
            Cell::Boolean(b) => CellValue::Boolean(b),
            Cell::List(items) => CellValue::List(items),
        })
        .collect();
    Record { id: rec.id, path: rec.path, values }
}

/// Column requests for a 12-column localization grid: English source, six targets (each
/// depending on English), number, datetime, workflow state, flag, tags.
pub fn column_requests() -> Vec<serde_json::Value> {
    data::columns(12)
}

/// Records per `AddRecords` op while building.
pub const BATCH: usize = 1000;

/// `BATCH` records from number `start` on, as writes of the columns `ids`.
pub fn batch(rng: &mut StdRng, start: usize, ids: &[String], prefix: &str) -> Vec<RecordWrite> {
    (start..start + BATCH)
        .map(|n| {
            let rec = record(rng, n, prefix);
            RecordWrite {
                id: rec.id,
                path: rec.path,
                new_id: None,
                new_path: None,
                cells: ids
                    .iter()
                    .zip(rec.values)
                    .map(|(id, value)| CellWrite {
                        column_id: id.as_str().into(),
                        value: Some(value),
                        dependency_status: None,
                        source_status: None,
                    })
                    .collect(),
                mark_mt: false,
            }
        })
        .collect()
}

/// A branch with the 12 columns of `column_requests` (English the source of the six other
/// languages) and `records` records, built through `AddRecords` ops; returns the column ids.
pub fn build_state(records: usize) -> (GridState, Vec<String>) {
    let started = Instant::now();
    let mut state = GridState::new("view", Vec::new(), RecordIdentity::RecordId);
    let mut ids = Vec::new();
    for body in column_requests() {
        let req: ColumnRequest = serde_json::from_value(body).expect("valid column");
        let column = build_column(&state.schema, &req).expect("valid column");
        ids.push(column.id.clone());
        state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
    }
    for (i, target) in ids[1..7].iter().enumerate() {
        state.apply(&GridOp::CreateDependency(Dependency {
            id: format!("dep{i}"),
            source_column_id: ids[0].clone(),
            target_column_id: target.clone(),
        }));
    }
    let mut rng = StdRng::seed_from_u64(0x6772_6964);
    for start in (0..records).step_by(BATCH) {
        let records = batch(&mut rng, start, &ids, "");
        state.apply(&GridOp::AddRecords {
            time_ms: start as i64,
            user: USERS[0].to_owned(),
            records,
        });
    }
    eprintln!("built a {records}-record branch through AddRecords ops in {:?}", started.elapsed());
    (state, ids)
}
