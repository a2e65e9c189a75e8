//! Criterion bench of durability on a 1M-record, 12-column grid branch (`GridState`):
//! - `snapshot_copy`: the copy a grid actor takes before writing a snapshot: the only time a
//!   snapshot holds up the branch's writers (the longest write stall during a snapshot);
//! - `snapshot_image`: building the rkyv image and encoding it (off the actor thread);
//! - `recovery_decode`: validated rkyv access + rebuilding the branch from the image (the
//!   snapshot part of a restart; the WAL tail after it is at most one snapshot period).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use gridd::grid::columns::{build_column, ColumnRequest};
use gridd::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use gridd::grid::schema::Dependency;
use gridd::grid::store::RecordIdentity;
use gridd::persist::durability::decode_image;
use rand::rngs::StdRng;
use rand::SeedableRng;

mod common;
use common::{column_requests, record, USERS};

const RECORDS: usize = 1_000_000;
const BATCH: usize = 1000;

fn batch(rng: &mut StdRng, start: usize, ids: &[String], prefix: &str) -> Vec<RecordWrite> {
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
                        column_id: id.clone(),
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

fn build_state() -> (GridState, Vec<String>) {
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
    for start in (0..RECORDS).step_by(BATCH) {
        let records = batch(&mut rng, start, &ids, "");
        state.apply(&GridOp::AddRecords {
            time_ms: start as i64,
            user: USERS[0].to_owned(),
            records,
        });
    }
    eprintln!("built a {RECORDS}-record branch through AddRecords ops in {:?}", started.elapsed());
    (state, ids)
}

fn main() {
    let (state, _) = build_state();
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();

    c.bench_function("snapshot_copy_1m", |b| b.iter(|| black_box(state.clone())));
    let encoded = rkyv::to_bytes::<rkyv::rancor::Error>(&state.to_image()).expect("encodes");
    eprintln!("snapshot image of {RECORDS} records: {} MiB", encoded.len() / (1 << 20));
    c.bench_function("snapshot_image_1m", |b| {
        b.iter(|| {
            black_box(rkyv::to_bytes::<rkyv::rancor::Error>(&state.to_image()).expect("encodes"))
        })
    });
    c.bench_function("recovery_decode_1m", |b| {
        b.iter(|| black_box(decode_image(&encoded).expect("decodes")))
    });

    c.final_summary();
}
