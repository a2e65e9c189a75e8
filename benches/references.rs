//! Criterion bench of a record page read over HTTP with computed columns (issue 9): the real
//! server in this process on port 0, a 100k-record grid of the 12 realistic localization
//! columns plus 3 reference columns (to three 10k-record glossary grids; one or two ids per
//! cell) and 2 formula columns, read 100 records at a time:
//! - `page100_plain`: the 12 base columns only (`columnIds`);
//! - `page100_formulas2`, `page100_refs3`: the base columns and the 2 formula columns, or the 3
//!   reference columns (the referenced values fetched from the glossary grids' actors, one
//!   message per grid per page, all three at once);
//! - `page100_refs3_formulas2`: the same page with every column.
//!
//! Both read at offset 50,000. The ratio is printed at the end (target: under 2x).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use loadtest::data::{self, sentence, LANGUAGES};
use rand::rngs::StdRng;
use rand::SeedableRng;
use reqwest::blocking::Client;
use serde_json::{json, Value};

/// The server's allocator, so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RECORDS: usize = 100_000;
const GLOSSARY: usize = 10_000;
const KEY: &str = "bench-owner-key-0123456789";

struct Server {
    base: String,
    client: Client,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = gridd::Config::for_data_dir(dir.path(), KEY);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let system = actix_web::rt::System::new();
            system.block_on(async move {
                let app = gridd::Application::build(config).await.expect("server starts");
                tx.send(app.local_addr()).expect("bench is waiting");
                app.run_until_stopped().await.expect("server runs");
            });
        });
        let addr = rx.recv().expect("server address");
        let client = Client::builder().timeout(Duration::from_secs(120)).build().expect("client");
        Server { base: format!("http://{addr}"), client, _dir: dir }
    }

    fn send(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Value {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("Authorization", format!("ApiKey {KEY}"));
        if let Some(body) = body {
            req = req.json(body);
        }
        let res = req.send().expect("request");
        let status = res.status();
        let text = res.text().expect("body");
        assert!(status.is_success(), "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    fn post(&self, path: &str, body: &Value) -> Value {
        self.send(reqwest::Method::POST, path, Some(body))
    }

    /// A new grid in the default database: (grid id, default view id).
    fn grid(&self, name: &str) -> (String, String) {
        let dbs = self.send(reqwest::Method::GET, "/v1/databases", None);
        let db = dbs[0]["id"].as_str().expect("a database").to_owned();
        let grid = self.post(&format!("/v1/grids?dbId={db}"), &json!({"name": name}));
        let id = grid["id"].as_str().expect("grid id").to_owned();
        let view = grid["defaultAccessViewId"].as_str().expect("view id").to_owned();
        (id, view)
    }
}

/// A glossary grid of `GLOSSARY` terms in column `term`: its grid id.
fn glossary(server: &Server, name: &str, rng: &mut StdRng) -> String {
    let (grid, view) = server.grid(name);
    server.post(
        &format!("/v1/views/{view}/columns"),
        &json!({"id": "term", "name": "Term", "type": "singleLine"}),
    );
    for start in (0..GLOSSARY).step_by(1000) {
        let records: Vec<Value> = (start..start + 1000)
            .map(|n| {
                let term = sentence(rng, &LANGUAGES[n % LANGUAGES.len()]);
                json!({"id": format!("term{n:05}"), "cells": [{"columnId": "term", "value": term}]})
            })
            .collect();
        server.post(&format!("/v1/views/{view}/records"), &Value::Array(records));
    }
    grid
}

/// The strings grid: its view id and the base columns' ids.
fn strings(server: &Server, glossaries: &[String], rng: &mut StdRng) -> (String, Vec<String>) {
    let (_, view) = server.grid("strings");
    let columns = data::columns(12);
    let base: Vec<String> =
        columns.iter().filter_map(|c| c["id"].as_str()).map(str::to_owned).collect();
    for column in &columns {
        server.post(&format!("/v1/views/{view}/columns"), column);
    }
    for (i, grid) in glossaries.iter().enumerate() {
        let column = json!({"id": format!("ref{i}"), "name": format!("Glossary {i}"),
            "type": "reference", "reference": {"gridId": grid, "columnId": "term"}});
        server.post(&format!("/v1/views/{view}/columns"), &column);
    }
    let formulas = [
        ("label", r#"CONCAT(UPPER([state]), " / ", LEFT([enUS], 20))"#),
        ("budget", "IF([count] > 250, ROUND([count] / 7, 2), LEN([enUS]))"),
    ];
    for (id, text) in formulas {
        let column = json!({"id": id, "name": id, "type": "formula",
            "formula": {"formulaText": text}});
        server.post(&format!("/v1/views/{view}/columns"), &column);
    }
    for start in (0..RECORDS).step_by(1000) {
        let records: Vec<Value> = (start..start + 1000)
            .map(|n| {
                let rec = data::record(rng, n, "");
                let mut cells: Vec<Value> = base
                    .iter()
                    .zip(&rec.values)
                    .map(|(id, v)| json!({"columnId": id, "value": v.to_json()}))
                    .collect();
                for i in 0..glossaries.len() {
                    let first = format!("term{:05}", (n * 7 + i) % GLOSSARY);
                    let ids = if n % 3 == 0 {
                        json!([first, format!("term{:05}", (n * 13 + i) % GLOSSARY)])
                    } else {
                        json!([first])
                    };
                    cells.push(json!({"columnId": format!("ref{i}"), "value": ids}));
                }
                json!({"id": rec.id, "cells": cells})
            })
            .collect();
        server.post(&format!("/v1/views/{view}/records"), &Value::Array(records));
    }
    (view, base)
}

fn page(server: &Server, view: &str, column_ids: Option<&str>) -> usize {
    let mut url = format!(
        "{}/v1/views/{view}/records?page=%7B%22offset%22%3A50000%2C%22limit%22%3A100%7D",
        server.base
    );
    if let Some(ids) = column_ids {
        url.push_str("&columnIds=");
        url.push_str(ids);
    }
    let res = server
        .client
        .get(url)
        .header("Authorization", format!("ApiKey {KEY}"))
        .send()
        .expect("page read");
    assert!(res.status().is_success());
    res.bytes().expect("page body").len()
}

fn main() {
    let server = Server::start();
    let mut rng = StdRng::seed_from_u64(9);
    let started = Instant::now();
    let glossaries: Vec<String> =
        (0..3).map(|i| glossary(&server, &format!("glossary {i}"), &mut rng)).collect();
    let (view, base) = strings(&server, &glossaries, &mut rng);
    eprintln!("seeded 3 x {GLOSSARY} terms and {RECORDS} strings in {:?}", started.elapsed());

    let plain_ids = base.join(",");
    let all = server.send(
        reqwest::Method::GET,
        &format!("/v1/views/{view}/records?page=%7B%22offset%22%3A50000%2C%22limit%22%3A1%7D"),
        None,
    );
    eprintln!("one record with every column: {all}");
    eprintln!(
        "page bytes: plain {}, with references and formulas {}",
        page(&server, &view, Some(&plain_ids)),
        page(&server, &view, None)
    );

    let mut c = Criterion::default().configure_from_args().sample_size(50);
    let mut group = c.benchmark_group("page_read_100k");
    let formula_ids = format!("{plain_ids},label,budget");
    let reference_ids = format!("{plain_ids},ref0,ref1,ref2");
    group.bench_function("page100_plain", |b| b.iter(|| page(&server, &view, Some(&plain_ids))));
    group.bench_function("page100_formulas2", |b| {
        b.iter(|| page(&server, &view, Some(&formula_ids)))
    });
    group
        .bench_function("page100_refs3", |b| b.iter(|| page(&server, &view, Some(&reference_ids))));
    group.bench_function("page100_refs3_formulas2", |b| b.iter(|| page(&server, &view, None)));
    group.finish();

    let time = |ids: Option<&str>| {
        let start = Instant::now();
        for _ in 0..200 {
            page(&server, &view, ids);
        }
        start.elapsed() / 200
    };
    let (plain, computed) = (time(Some(&plain_ids)), time(None));
    eprintln!(
        "mean of 200 reads: plain {plain:?}, with 3 references + 2 formulas {computed:?}, \
         ratio {:.2}",
        computed.as_secs_f64() / plain.as_secs_f64()
    );
    c.final_summary();
}
