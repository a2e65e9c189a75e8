//! The query cases of `benches/query.rs` end to end over HTTP: starts gridd in this process on
//! 127.0.0.1:0 with a temporary data directory, creates the 12-column localization grid, loads
//! it through `POST /records` (1000 records per request), then sends each case 200 times one
//! after another and prints p50/p99 latency (request sent to last byte of the body received; the
//! client's own JSON parsing is left out), beside the page size and `X-Total-Count`.
//!
//! `cargo run --release --example query_http -- [records]` (default 1000000).

#![allow(clippy::print_stdout)] // the report is the program's output

use std::sync::mpsc;
use std::time::{Duration, Instant};

use gridd::grid::codec::render_value;
use gridd::grid::schema::ColumnType;
use rand::rngs::StdRng;
use rand::SeedableRng;
use reqwest::blocking::Client;
use serde_json::{json, Value};

#[path = "../benches/common/mod.rs"]
mod common;
use common::{column_requests, record};
use loadtest::data::QUERY_CASES;

const KEY: &str = "query-http-bench-key";
const REQUESTS: usize = 200;

/// Plain pages for scale, before the query cases: name, query, sort, offset.
const PLAIN_CASES: &[(&str, &str, &str, usize)] =
    &[("all_page1", "", "", 0), ("all_page100", "", "", 0)];

/// Column types in `column_requests` order.
const TYPES: [ColumnType; 12] = [
    ColumnType::Language,
    ColumnType::Language,
    ColumnType::Language,
    ColumnType::Language,
    ColumnType::Language,
    ColumnType::Language,
    ColumnType::Language,
    ColumnType::Number,
    ColumnType::Datetime,
    ColumnType::SingleSelection,
    ColumnType::Boolean,
    ColumnType::MultipleSelections,
];

/// Starts gridd on a thread; returns its base URL (the server lives until the process ends).
fn start_server(dir: &std::path::Path) -> String {
    let mut config = gridd::Config::for_data_dir(dir, KEY);
    // Snapshots of the growing 1M-record branch (seconds of encoding each, on the same two
    // cores) would land in the middle of the measurements; this run measures queries alone.
    config.snapshot_every_records = u64::MAX;
    config.snapshot_every_bytes = u64::MAX;
    config.snapshot_interval_secs = 24 * 3600;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let system = actix_web::rt::System::new();
        system.block_on(async move {
            let app = gridd::Application::build(config).await.expect("server starts");
            tx.send(app.local_addr()).expect("main thread waits");
            app.run_until_stopped().await.expect("server runs");
        });
    });
    format!("http://{}", rx.recv().expect("server address"))
}

fn check(res: reqwest::blocking::Response) -> Value {
    let status = res.status();
    let body: Value = res.json().expect("a JSON body");
    assert!(status.is_success(), "{status}: {body}");
    body
}

fn main() {
    let records: usize = std::env::args().nth(1).map_or(1_000_000, |n| n.parse().expect("count"));
    let dir = tempfile::tempdir().expect("temp dir");
    let base = start_server(dir.path());
    let client = Client::builder().timeout(Duration::from_secs(600)).build().expect("client");
    let auth = format!("ApiKey {KEY}");
    let get = |path: &str| client.get(format!("{base}{path}")).header("Authorization", &auth);
    let post = |path: &str| client.post(format!("{base}{path}")).header("Authorization", &auth);

    let dbs = check(get("/v1/databases").send().expect("databases"));
    let db = dbs[0]["id"].as_str().expect("database id");
    let grid = check(
        post(&format!("/v1/grids?dbId={db}"))
            .json(&json!({"name": "query bench", "columns": column_requests()}))
            .send()
            .expect("grid"),
    );
    let view = grid["defaultAccessViewId"].as_str().expect("view id").to_owned();
    let ids: Vec<String> =
        column_requests().iter().map(|c| c["id"].as_str().unwrap_or_default().to_owned()).collect();
    for target in &ids[1..7] {
        let body = json!({"sourceColumnId": ids[0], "targetColumnId": target});
        check(post(&format!("/v1/views/{view}/dependencies")).json(&body).send().expect("dep"));
    }

    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(0x6772_6964);
    for start in (0..records).step_by(1000) {
        let batch: Vec<Value> = (start..(start + 1000).min(records))
            .map(|n| {
                let rec = record(&mut rng, n, "");
                let cells: Vec<Value> = ids
                    .iter()
                    .zip(TYPES)
                    .zip(&rec.values)
                    .map(|((id, t), v)| json!({"columnId": id, "value": render_value(t, v)}))
                    .collect();
                json!({"id": rec.id, "path": rec.path, "cells": cells})
            })
            .collect();
        check(post(&format!("/v1/views/{view}/records")).json(&batch).send().expect("add"));
    }
    eprintln!("loaded {records} records over HTTP in {:?}", started.elapsed());

    println!("| case | page | total | first (builds indexes) | p50 | p99 |");
    println!("|---|---|---|---|---|---|");
    for &(name, query, sort, offset) in PLAIN_CASES.iter().chain(QUERY_CASES) {
        let limit = if name == "all_page1" { 1 } else { 100 };
        let page = format!("{{\"offset\":{offset},\"limit\":{limit}}}");
        let params = [("query", query), ("sort", sort), ("page", page.as_str())];
        let params: Vec<_> = params.into_iter().filter(|(_, v)| !v.is_empty()).collect();
        let url = format!("/v1/views/{view}/records");
        let send = || {
            let at = Instant::now();
            let res = get(&url).query(&params).send().expect("query");
            let total = res
                .headers()
                .get("x-total-count")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?")
                .to_owned();
            let status = res.status();
            let bytes = res.bytes().expect("a body");
            // Latency is to the last byte received: parsing the JSON is the client's cost.
            let elapsed = at.elapsed();
            let body: Value = serde_json::from_slice(&bytes).expect("a JSON body");
            assert!(status.is_success(), "{status}: {body}");
            (elapsed, body.as_array().map_or(0, Vec::len), total)
        };
        let (first, rows, total) = send();
        let mut times: Vec<Duration> = (0..REQUESTS).map(|_| send().0).collect();
        times.sort();
        let p = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        println!("| {name} | {rows} | {total} | {first:.1?} | {:.2?} | {:.2?} |", p(0.50), p(0.99));
    }
}
