//! Criterion bench of the query engine on a 1M-record, 12-column localization branch (seven
//! languages in Latin, Japanese, Chinese, Arabic and Cyrillic scripts, a number, a datetime, a
//! workflow selection, a flag and tags), timing parse + bind + run of each case of issue 5 in
//! the engine (no JSON rendering or HTTP: `examples/query_http.rs` measures those end to end).
//! First-use index builds are timed once and printed; the cases then run with indexes built.
//! A 256 MiB memcpy gives this machine's single-thread memory bandwidth for comparison.
//!
//! Each case runs twice: on the engine as the grid actor holds it, and as a read view answers
//! it (`view/<case>`: a clone of the engine's snapshot over the store it was taken of).
//!
//! `cargo bench --bench query` (add a case name to run one, e.g. `-- contains`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use gridd::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use gridd::grid::query::{bind_filters, bind_sort, parse_query, parse_sort, QueryEngine};
use gridd::grid::store::CellRef;
use gridd::grid::value::CellValue;

mod common;
use common::build_state;
use loadtest::data::QUERY_CASES;

const RECORDS: usize = 1_000_000;

/// One query: parse, bind against the default view, run; returns the page size and total.
fn run(
    engine: &mut QueryEngine,
    state: &mut GridState,
    query: &str,
    sort: &str,
    offset: usize,
    limit: usize,
) -> (usize, usize) {
    let view = state.schema.view("view").expect("the default view").clone();
    let filters = bind_filters(state, &view, &parse_query(query).expect("query parses"))
        .expect("query binds");
    let keys =
        bind_sort(state, &view, &parse_sort(sort).expect("sort parses")).expect("sort binds");
    let page = engine.run(&mut state.store, &filters, &keys, offset, limit);
    (page.rows.len(), page.total)
}

/// `run` as a read view answers it: a clone of the engine's snapshot over the store as it was
/// when taken (the snapshot holds every index the query wants).
fn run_on_view(
    snapshot: &QueryEngine,
    state: &GridState,
    query: &str,
    sort: &str,
    offset: usize,
    limit: usize,
) -> (usize, usize) {
    let view = state.schema.view("view").expect("the default view");
    let filters =
        bind_filters(state, view, &parse_query(query).expect("query parses")).expect("query binds");
    let keys = bind_sort(state, view, &parse_sort(sort).expect("sort parses")).expect("sort binds");
    let mut engine = snapshot.clone();
    let page = engine.query(&state.store, &filters, &keys, offset, limit);
    assert!(!engine.missed(), "the snapshot holds the indexes");
    (page.rows.len(), page.total)
}

/// Sets the English source of one record (its six targets turn outOfDate, history grows).
fn update_source(state: &mut GridState, text: String) {
    let write = RecordWrite {
        id: "web.menu.settings.000001".to_owned(),
        path: String::new(),
        new_id: None,
        new_path: None,
        cells: vec![CellWrite {
            column_id: "enUS".into(),
            value: Some(CellValue::Text(text)),
            dependency_status: None,
            source_status: None,
        }],
        mark_mt: false,
    };
    state.apply(&GridOp::UpdateRecords {
        time_ms: 1_800_000_000_000,
        user: "alice".to_owned(),
        records: vec![write],
    });
}

fn text_bytes(state: &GridState, column: &str) -> usize {
    let slot = state.slots[column];
    state
        .store
        .live_rows()
        .map(|row| match state.store.value_ref(row, slot) {
            CellRef::Text(s) => s.len(),
            _ => 0,
        })
        .sum()
}

fn main() {
    let (mut state, _) = build_state(RECORDS);
    let mut engine = QueryEngine::default();
    let mut c = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();

    let source = vec![0u8; 256 << 20];
    let mut target = vec![1u8; 256 << 20];
    c.bench_function("memcpy_256mib", |b| {
        b.iter(|| {
            target.copy_from_slice(black_box(&source));
            black_box(&target);
        })
    });
    drop((source, target));

    eprintln!(
        "text scanned by contains: enUS {} MiB, ruRU {} MiB",
        text_bytes(&state, "enUS") >> 20,
        text_bytes(&state, "ruRU") >> 20
    );
    // Criterion skips cases its name filter excludes; skip their first runs (index builds) too.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let filter = regex::Regex::new(&filter).expect("a valid name filter");
    for &(name, query, sort, offset) in QUERY_CASES {
        if !filter.is_match(name) {
            continue;
        }
        let started = Instant::now();
        let (rows, total) = run(&mut engine, &mut state, query, sort, offset, 100);
        eprintln!(
            "{name}: first run (builds its indexes) {:?}, {rows} rows of {total}",
            started.elapsed()
        );
        c.bench_function(name, |b| {
            b.iter(|| black_box(run(&mut engine, &mut state, query, sort, offset, 100)))
        });
        let snapshot = engine.snapshot(&mut state.store);
        c.bench_function(&format!("view/{name}"), |b| {
            b.iter(|| black_box(run_on_view(&snapshot, &state, query, sort, offset, 100)))
        });
    }

    // One record update (its English source changes: the six targets turn outOfDate, history
    // grows) then the same sorted page: the ordered index is patched, not rebuilt.
    let mut flip = 0u64;
    c.bench_function("update_one_then_sort_text_offset0", |b| {
        b.iter(|| {
            flip += 1;
            update_source(&mut state, format!("after restart {flip}"));
            black_box(run(&mut engine, &mut state, "", r#"{"enUS": "asc"}"#, 0, 100))
        })
    });
    // The same update while a reader still holds the view published before it: the next
    // publication copies the parts of the indexes the update touches (the worst an edit pays
    // on the actor while heavy reads run), then takes its snapshot.
    c.bench_function("update_one_while_a_view_is_read_then_publish", |b| {
        b.iter(|| {
            flip += 1;
            let held = engine.snapshot(&mut state.store);
            update_source(&mut state, format!("while read {flip}"));
            let published = engine.snapshot(&mut state.store);
            black_box((held, published))
        })
    });
    eprintln!("query indexes hold about {} MiB", engine.heap_bytes() >> 20);
    c.final_summary();
}
