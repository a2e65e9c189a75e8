//! Criterion bench of writing a page of records as JSON (`GridState::render_rows`, what `GET
//! /v1/views/<id>/records` answers with): 100 records × 12 columns (localization strings in
//! seven languages, a number, a datetime, statuses) of a 100k-record branch of the query
//! bench's shape, at a few offsets. The HTTP side of a page is not in it: `loadtest --mix page`
//! measures that.
//!
//! `cargo bench --bench render`

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use gridd::grid::schema::ColumnDef;
use gridd::grid::store::RowId;

mod common;
use common::build_state;

fn main() {
    let mut c = Criterion::default()
        .sample_size(50)
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let (state, _) = build_state(100_000);
    let view = state.schema.view("view").expect("the default view").clone();
    let columns: Vec<&ColumnDef> =
        state.schema.view_columns(&view).into_iter().map(|(c, _)| c).collect();
    let live: Vec<RowId> = state.store.live_rows().collect();
    for offset in [0, 50_000, 99_900] {
        let page = &live[offset..offset + 100];
        let json = state.render_rows(&columns, page.iter().copied()).into_array();
        let parsed: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
        assert_eq!(parsed.as_array().map(Vec::len), Some(100));
        c.bench_function(&format!("render_page_100x12_at_{offset}"), |b| {
            b.iter(|| black_box(state.render_rows(&columns, black_box(page).iter().copied())))
        });
    }
    c.final_summary();
}
