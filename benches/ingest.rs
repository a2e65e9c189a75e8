//! What the HTTP side of a bulk add costs before the branch sees it: the JSON of 1000
//! localization records (12 cells each, about 1 MB) read into `RecordInput`s by the server's
//! reader of that shape (`parse_records`; also written in ASCII, as Python clients send it) and by serde, beside the same bytes only checked as
//! JSON by serde (`IgnoredAny`: no value kept); then the branch's side, the records checked, logged, applied and
//! rendered for the answer; then the add's WAL entry encoded, and decoded as a replay does.
//!
//! Wall times on a shared 2-core machine move by a third from run to run; for a before and
//! after, count instructions instead:
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*add_as_the_actor_does*'
//! target/release/deps/ingest-<hash> --bench add_records/plan, --profile-time 2`
//! (the total over the calls, which `callgrind_annotate --inclusive=yes` names).
//!
//! `cargo bench --bench ingest`

mod common;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use gridd::grid::ops::GridState;
use gridd::grid::read_json::RenderedRecords;
use gridd::grid::records::{plan_add, PlanLeftovers, RecordInput, RecordsBody};
use gridd::grid::schema::{ColumnDef, ViewDef};
use gridd::grid::store::RowId;
use gridd::grid::value::{CellValue, SourceStatus};
use gridd::persist::entry::WalEntry;
use rand::rngs::StdRng;
use rand::SeedableRng;

/// The server's allocator, so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A 1000-record add's body as a client sends it, to a branch with columns `ids`.
fn body(ids: &[String], first: usize) -> String {
    let mut rng = StdRng::seed_from_u64(7);
    let records: Vec<serde_json::Value> = common::batch(&mut rng, first, ids, "")
        .into_iter()
        .map(|record| {
            let cells: Vec<serde_json::Value> = record
                .cells
                .into_iter()
                .map(|cell| {
                    let value = match cell.value.unwrap_or(CellValue::Empty) {
                        CellValue::Text(text) => serde_json::json!(text),
                        CellValue::Number(n) => serde_json::json!(n),
                        CellValue::Datetime(ms) => {
                            serde_json::json!(gridd::grid::codec::format_datetime(ms))
                        }
                        CellValue::Boolean(b) => serde_json::json!(b),
                        CellValue::List(items) => serde_json::json!(items),
                        CellValue::Empty => serde_json::Value::Null,
                    };
                    serde_json::json!({ "columnId": cell.column_id.as_str(), "value": value })
                })
                .collect();
            serde_json::json!({ "id": record.id, "path": record.path, "cells": cells })
        })
        .collect();
    serde_json::to_string(&records).expect("JSON")
}

/// `json` with every character past ASCII (all inside its strings) written as `\u` escapes.
fn ascii_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

fn bench_parse(c: &mut Criterion) {
    let ids: Vec<String> = (0..12).map(|i| format!("column{i}")).collect();
    let body = body(&ids, 0);
    let mut group = c.benchmark_group("add_body");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("parse 1000 records x 12 cells", |b| {
        b.iter(|| gridd::grid::records::parse_records(&body).expect("the usual shape"))
    });
    // The same records as a client writing JSON in ASCII sends them (Python's `json.dumps`):
    // each letter past ASCII as a `\u` escape.
    let ascii = ascii_json(&body);
    group.bench_function("parse 1000 records x 12 cells written in ASCII", |b| {
        b.iter(|| gridd::grid::records::parse_records(&ascii).expect("the usual shape"))
    });
    group.bench_function("parse 1000 records x 12 cells through serde", |b| {
        b.iter(|| {
            let records: RecordsBody = serde_json::from_str(&body).expect("parses");
            records
        })
    });
    group.bench_function("check the same bytes as JSON only", |b| {
        b.iter(|| serde_json::from_str::<serde::de::IgnoredAny>(&body).expect("parses"))
    });
    group.finish();
}

/// The branch's side: the parsed records checked against the view (`plan_add`), then applied,
/// on a branch of 100,000 records.
fn bench_plan_and_apply(c: &mut Criterion) {
    let (state, ids) = common::build_state(100_000);
    let warm: Vec<RecordInput> = serde_json::from_str(&body(&ids, 100_000)).expect("parses");
    let inputs: Vec<RecordInput> = serde_json::from_str(&body(&ids, 101_000)).expect("parses");
    let view = state.schema.views.first().cloned().expect("the default view");
    // A clone of the branch shares its chunks and index shards with it, so the first write to
    // one copies it, as the first write after a snapshot does on the server; the add measured
    // is the one after that, as most of a load's adds are.
    let owned = || {
        let mut state = state.clone();
        add(&mut state, &view, warm.clone());
        state
    };
    let mut group = c.benchmark_group("add_records");
    group.sample_size(20);
    group.bench_function("plan 1000 records x 12 cells", |b| {
        b.iter_batched(
            || inputs.clone(),
            |inputs| plan_add(&state, &view, inputs, "bench", 0, SourceStatus::Unset),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("plan, log, apply and answer 1000 records x 12 cells to 100k", |b| {
        b.iter_batched(
            || (owned(), inputs.clone()),
            |(mut state, inputs)| {
                let answer = add_as_the_actor_does(&mut state, &view, inputs);
                (state, answer)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// What the branch's actor does for an add: plan it, size its WAL entry (the WAL's writer
/// thread writes its bytes), apply it and render the records it added for the answer; the
/// entry and what planning left go back to be freed elsewhere, as the server frees them on
/// the HTTP worker. A function of its own, so that `valgrind --tool=callgrind
/// --toggle-collect=*add_as_the_actor_does*` counts it alone (the warming add of the setup
/// calls `add` instead).
#[inline(never)]
fn add_as_the_actor_does(
    state: &mut GridState,
    view: &ViewDef,
    inputs: Vec<RecordInput>,
) -> (WalEntry, usize, RenderedRecords, PlanLeftovers) {
    add(state, view, inputs)
}

fn add(
    state: &mut GridState,
    view: &ViewDef,
    inputs: Vec<RecordInput>,
) -> (WalEntry, usize, RenderedRecords, PlanLeftovers) {
    let (op, leftovers) =
        plan_add(state, view, inputs, "bench", 0, SourceStatus::Unset).expect("valid records");
    let entry = WalEntry { branch_id: "b".into(), ops: vec![op], time_ms: 0 };
    let logged = entry.encoded_len();
    let first = state.store.rows();
    for op in &entry.ops {
        state.apply(op);
    }
    let columns: Vec<&ColumnDef> =
        state.schema.view_columns(view).into_iter().map(|(c, _)| c).collect();
    let rows = (first..state.store.rows()).map(|row| RowId::from_raw(row as u32));
    let answer = state.render_rows(&columns, rows);
    (entry, logged, answer, leftovers)
}

/// A 1000-record add's WAL entry: encoded as the actor does, and decoded as a replay does,
/// from the compact layout and from the original (fixed-length integers) older WALs hold.
fn bench_wal_entry(c: &mut Criterion) {
    let (state, ids) = common::build_state(1000);
    let inputs: Vec<RecordInput> = serde_json::from_str(&body(&ids, 1000)).expect("parses");
    let view = state.schema.views.first().cloned().expect("the default view");
    let (op, _) = plan_add(&state, &view, inputs, "bench", 0, SourceStatus::Unset).expect("valid");
    let entry = WalEntry { branch_id: "b".into(), ops: vec![op], time_ms: 0 };
    let compact = entry.encode();
    let original = bincode::serialize(&entry).expect("serializes");
    eprintln!("a 1000-record add: {} bytes compact, {} original", compact.len(), original.len());
    let mut group = c.benchmark_group("wal_entry");
    group.sample_size(20);
    group.bench_function("encode 1000 records x 12 cells", |b| b.iter(|| entry.encode()));
    for (layout, bytes) in [("compact", &compact), ("original", &original)] {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("decode 1000 records x 12 cells ({layout})"), |b| {
            b.iter(|| WalEntry::decode(bytes).expect("decodes"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_parse, bench_plan_and_apply, bench_wal_entry);
criterion_main!(benches);
