//! Criterion bench of cursor paging (`afterRecordId`): walking every record of a branch of the
//! query bench's shape (1M and 100k records × 12 columns, localization strings in seven
//! languages) 1000 at a time, as `GET /v1/views/<id>/records?afterRecordId=...&page={"limit":
//! 1000}` does inside the engine (each page asks one more row to know whether more follow),
//! unsorted and sorted by a text column (the English source). One iteration is a whole walk.
//!
//! `cargo bench --bench cursor` (add `-- 100k` or `-- 1m` to run one size).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use gridd::grid::ops::GridState;
use gridd::grid::query::{bind_sort, parse_sort, Direction, QueryEngine};

mod common;
use common::build_state;

const LIMIT: usize = 1000;

/// Walks every record by cursor, `LIMIT` at a time; returns how many it saw.
fn walk(engine: &mut QueryEngine, state: &mut GridState, sort: &str) -> usize {
    let view = state.schema.view("view").expect("the default view").clone();
    let keys = bind_sort(state, &view, &parse_sort(sort).expect("sort parses")).expect("binds");
    let mut page = engine.run(&mut state.store, &[], &keys, 0, LIMIT).rows;
    let mut seen = page.len();
    while let Some(&last) = page.last() {
        let next =
            engine.run_from(&mut state.store, &[], &keys, last, Direction::After, LIMIT + 1).rows;
        page = next.into_iter().take(LIMIT).collect();
        seen += page.len();
    }
    seen
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    for (size, records) in [("100k", 100_000), ("1m", 1_000_000)] {
        if !filter.is_empty() && !size.contains(&filter) && !filter.contains(size) {
            continue;
        }
        let (mut state, _) = build_state(records);
        let mut engine = QueryEngine::default();
        for (name, sort) in [("unsorted", ""), ("sorted_enUS", r#"{"enUS": "asc"}"#)] {
            let started = Instant::now();
            let seen = walk(&mut engine, &mut state, sort);
            assert_eq!(seen, records, "the walk sees every record once");
            eprintln!("{size} {name}: first walk (builds its indexes) {:?}", started.elapsed());
            c.bench_function(&format!("cursor_walk_{size}_{name}"), |b| {
                b.iter(|| black_box(walk(&mut engine, &mut state, sort)))
            });
        }
    }
    c.final_summary();
}
