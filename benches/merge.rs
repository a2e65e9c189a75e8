//! Criterion bench of branches and merges on a 1M-record, 12-column grid branch (`GridState`),
//! the work the grid actors do (the HTTP and WAL parts are measured end to end in the issue
//! notes):
//! - `branch_copy_1m`: a new branch's state: the copy-on-write copy of its source and the new
//!   view ids (the source actor's and supervisor's part of `POST /v1/branches`);
//! - `merge_1m_1pct`: planning the three-way merge of a branch into its source, each side
//!   having changed 1% of the cells (120k cells each, some of them the same cells), and
//!   applying the merge ops (the destination actor's part of a merge, WAL write aside).
//!
//! `merge_1m_1pct` merges into a fresh clone of the destination each time, so it also pays for
//! copying every chunk the merge writes (copy-on-write); a last one-shot run merges into the
//! destination itself, as its actor does, and prints plan, encoding and apply times.
//!
//! It also prints the resident memory a fresh branch adds (ten copies held at once, from
//! `/proc/self/statm`) and the size of the merge's WAL entry.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use gridd::grid::merge::{plan_merge, MergeOptions, MergeScope};
use gridd::grid::ops::{CellWrite, GridOp, GridState, MergeBase, RecordWrite};
use gridd::grid::value::CellValue;
use gridd::persist::entry::WalEntry;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

mod common;
use common::build_state;

/// The server's allocator, so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The process's resident memory, in bytes (Linux).
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

const RECORDS: usize = 1_000_000;
/// The text columns (English and six targets) the edits write.
const TEXT_COLUMNS: usize = 7;

/// A branch's state as `POST /v1/branches` makes it.
fn branch_of(state: &GridState) -> GridState {
    let mut copy = state.clone();
    let views: Vec<(String, String)> =
        copy.schema.views.iter().map(|v| (v.id.clone(), format!("{}-branch", v.id))).collect();
    copy.rename_views(&views);
    copy
}

/// Changes `cells` random text cells of `state` (1000 records per op), as a side of a merge.
fn edit(state: &mut GridState, ids: &[String], cells: usize, seed: u64, side: &str) {
    let mut rng = StdRng::seed_from_u64(seed);
    let rows: Vec<_> = state.store.live_rows().collect();
    let mut records = Vec::new();
    for n in 0..cells {
        let row = rows[rng.gen_range(0..rows.len())];
        let column = &ids[rng.gen_range(0..TEXT_COLUMNS)];
        records.push(RecordWrite {
            id: state.store.id(row).to_owned(),
            path: state.store.path(row).to_owned(),
            new_id: None,
            new_path: None,
            cells: vec![CellWrite {
                column_id: column.as_str().into(),
                value: Some(CellValue::Text(format!("{side} edit {n}: Übersetzung überarbeitet"))),
                dependency_status: None,
                source_status: None,
            }],
            mark_mt: false,
        });
        if records.len() == 1000 {
            let records = std::mem::take(&mut records);
            state.apply(&GridOp::UpdateRecords { time_ms: 1, user: side.into(), records });
        }
    }
    if !records.is_empty() {
        state.apply(&GridOp::UpdateRecords { time_ms: 1, user: side.into(), records });
    }
}

fn main() {
    let (state, ids) = build_state(RECORDS);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();

    let before = resident_bytes();
    let fresh: Vec<GridState> = (0..10).map(|_| branch_of(&state)).collect();
    let cost = resident_bytes().saturating_sub(before) / fresh.len();
    eprintln!(
        "a fresh branch of {RECORDS} records adds {} KiB of resident memory (the process holds {} MiB)",
        cost / 1024,
        before / (1 << 20)
    );
    drop(fresh);
    c.bench_function("branch_copy_1m", |b| b.iter(|| black_box(branch_of(&state))));

    let fork = state.store.clock();
    let cells = RECORDS * ids.len() / 100;
    let mut source = branch_of(&state);
    let mut destination = state;
    let started = Instant::now();
    edit(&mut source, &ids, cells, 1, "branch");
    edit(&mut destination, &ids, cells, 2, "master");
    eprintln!("{cells} cells changed on each side in {:?}", started.elapsed());
    let base = MergeBase { source: fork, destination: fork };
    let scope = MergeScope {
        options: MergeOptions { add: true, update: true, delete: true, override_: false },
        ..MergeScope::default()
    };
    let (ops, counts) = plan_merge("branch", &source, &destination, base, &scope, ("u", 1));
    let entry = WalEntry::now("master".into(), ops).encode();
    eprintln!(
        "the merge updates {} records; its WAL entry is {} KiB",
        counts.updated,
        entry.len() / 1024
    );
    c.bench_function("merge_plan_1m_1pct", |b| {
        b.iter(|| black_box(plan_merge("branch", &source, &destination, base, &scope, ("u", 1))))
    });
    c.bench_function("merge_1m_1pct", |b| {
        b.iter_batched(
            || destination.clone(),
            |mut target| {
                let (ops, _) = plan_merge("branch", &source, &target, base, &scope, ("u", 1));
                ops.iter().for_each(|op| target.apply(op));
                target
            },
            BatchSize::PerIteration,
        )
    });

    c.final_summary();

    // Once, into the destination itself, as its actor does: its chunks are its own after its
    // edits (the bench above merges into fresh clones, whose every written chunk is copied
    // first).
    let started = Instant::now();
    let (ops, _) = plan_merge("branch", &source, &destination, base, &scope, ("u", 1));
    let planned = started.elapsed();
    let encoded = WalEntry::now("master".into(), ops.clone()).encode().len();
    let encoding = started.elapsed() - planned;
    ops.iter().for_each(|op| destination.apply(op));
    eprintln!(
        "merge into the destination itself: plan {planned:?}, WAL entry encoding {encoding:?} \
         ({} KiB), apply {:?}",
        encoded / 1024,
        started.elapsed() - planned - encoding
    );
}
