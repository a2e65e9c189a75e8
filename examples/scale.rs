//! The figures of a large grid, end to end (issue 17): builds a grid of N records of the
//! localization shape (`loadtest::data`: an English source and six translations in four
//! scripts, a number, a datetime, a selection, a boolean and tags; ids like
//! `ui.menu.save.000123` under paths) in a release `gridd` started as a child process on a
//! fresh data directory, and prints:
//!
//! - the bulk-load rate over HTTP (1000 records a request on C connections), its request
//!   latency and the server's CPU per request;
//! - the query cases of `benches/query.rs` over HTTP (first answer, p50, p99);
//! - resident memory (`VmRSS`) and the heap by part and bytes per cell by column type from
//!   `/metrics`, against the raw bytes of the data (text as UTF-8, numbers and datetimes 8
//!   bytes, booleans 1, lists their items' text, plus ids and paths);
//! - recovery after SIGKILL right after the load (no snapshot: the WAL is replayed), a start
//!   from the snapshot a graceful stop writes, and recovery after SIGKILL with a recent
//!   snapshot (1% more records written after it); each start is timed until `/healthz` answers,
//!   and the record count is checked after each.
//!
//! `cargo build --release && cargo run --release --example scale -- [records] [connections]`
//! (defaults 1000000 and 4). The server is `target/release/gridd` beside this example, or the
//! binary `GRIDD_BIN` names; `GRIDD_SCALE_DATA_DIR` names a data directory to use and keep
//! (empty or absent at the start); `GRIDD_SCALE_HOLD_SECS` keeps the loaded server up that long
//! before the first SIGKILL (to read its memory map or profile it); with `GRIDD_SCALE_KILL_ONLY`
//! set the run ends at the SIGKILL after the load and keeps the data directory (to profile a
//! replay). Client and server share the machine: the client builds each
//! request's JSON while others are in flight, as a loading script would; with
//! `GRIDD_SCALE_PREBUILT` set it builds the bodies of each 1000 batches first and times only
//! their sending (the rate the server takes when its client runs elsewhere).

#![allow(clippy::print_stdout)] // the report is the program's output

use std::collections::BTreeMap;
use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use loadtest::data::{self, Cell, QUERY_CASES};
use rand::rngs::StdRng;
use rand::SeedableRng;
use reqwest::blocking::Client;
use serde_json::{json, Value};

const KEY: &str = "scale-example-key";
/// Records per add request.
const BATCH: usize = 1000;
/// Answers timed per query case.
const QUERY_RUNS: usize = 20;

/// A running gridd child and the address it serves.
struct Server {
    child: Child,
    base: String,
}

fn gridd_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("GRIDD_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("own path");
    let bin = exe.parent().and_then(Path::parent).map(|dir| dir.join("gridd"));
    match bin {
        Some(bin) if bin.exists() => bin,
        _ => panic!("no gridd binary beside this example: run `cargo build --release` first"),
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// Starts gridd on `dir` and waits for `/healthz`; returns the server and the time it took.
fn start(dir: &Path, extra: &[&str]) -> (Server, Duration) {
    let port = free_port();
    let started = Instant::now();
    let child = Command::new(gridd_bin())
        .arg("--data-dir")
        .arg(dir)
        .args(["--bind", &format!("127.0.0.1:{port}"), "--api-key", KEY, "--log-level", "error"])
        .args(extra)
        .spawn()
        .expect("gridd starts");
    let base = format!("http://127.0.0.1:{port}");
    let probe = Client::builder().timeout(Duration::from_secs(2)).build().expect("client");
    while probe.get(format!("{base}/healthz")).send().is_err() {
        std::thread::sleep(Duration::from_millis(10));
    }
    (Server { child, base }, started.elapsed())
}

impl Server {
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// SIGTERM (every branch snapshots) and the time until the process has ended.
    fn stop(mut self) -> Duration {
        let started = Instant::now();
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().expect("kill -TERM");
        self.child.wait().expect("reaped");
        started.elapsed()
    }

    fn stat_field(&self, file: &str, key: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/{file}", self.child.id()))
            .unwrap_or_default();
        let line = text.lines().find(|l| l.starts_with(key)).unwrap_or_default();
        line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    fn rss_mib(&self) -> f64 {
        self.stat_field("status", "VmRSS:") as f64 / 1024.0
    }

    /// User and system CPU seconds the server has used.
    fn cpu_secs(&self) -> f64 {
        cpu_secs(&self.child.id().to_string())
    }
}

/// User and system CPU seconds process `pid` (or `self`) has used.
fn cpu_secs(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at `state`.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11..13].iter().filter_map(|f| f.parse::<u64>().ok()).sum();
    ticks as f64 / 100.0
}

fn client() -> Client {
    Client::builder().timeout(Duration::from_secs(3600)).build().expect("client")
}

fn check(res: reqwest::blocking::Response) -> Value {
    let status = res.status();
    let body: Value = res.json().expect("a JSON body");
    assert!(status.is_success(), "{status}: {body}");
    body
}

/// Raw bytes of one record's data (see the module doc).
fn raw_bytes(rec: &data::Record) -> usize {
    let cells: usize = rec
        .values
        .iter()
        .map(|cell| match cell {
            Cell::Text(text) => text.len(),
            Cell::Number(_) | Cell::Datetime(_) => 8,
            Cell::Boolean(_) => 1,
            Cell::List(items) => items.iter().map(String::len).sum(),
        })
        .sum();
    cells + rec.id.len() + rec.path.len()
}

/// Batch `index` as the JSON body of an add, and its raw bytes. Each batch has its own seed,
/// so any thread can build any batch and a run always writes the same data. Serialized from
/// borrowed forms (no JSON tree per cell): the client shares the machine with the server, and
/// what it spends building bodies is taken from the load it measures.
fn batch_body(index: usize, first: usize, ids: &[String]) -> (Vec<u8>, usize) {
    #[derive(serde::Serialize)]
    struct RecordBody<'a> {
        id: &'a str,
        path: &'a str,
        cells: Vec<CellBody<'a>>,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct CellBody<'a> {
        column_id: &'a str,
        value: ValueBody<'a>,
    }
    struct ValueBody<'a>(&'a Cell);
    impl serde::Serialize for ValueBody<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self.0 {
                Cell::Text(text) => s.serialize_str(text),
                Cell::Number(n) => s.serialize_f64(*n),
                Cell::Datetime(ms) => s.serialize_str(&data::iso_utc(*ms)),
                Cell::Boolean(b) => s.serialize_bool(*b),
                Cell::List(items) => s.collect_seq(items),
            }
        }
    }
    let mut rng = StdRng::seed_from_u64(0x6772_6964 ^ index as u64);
    let records: Vec<data::Record> = (first + index * BATCH..first + (index + 1) * BATCH)
        .map(|n| data::record(&mut rng, n, ""))
        .collect();
    let raw = records.iter().map(raw_bytes).sum();
    let bodies: Vec<RecordBody<'_>> = records
        .iter()
        .map(|rec| RecordBody {
            id: &rec.id,
            path: &rec.path,
            cells: ids
                .iter()
                .zip(&rec.values)
                .map(|(id, value)| CellBody { column_id: id, value: ValueBody(value) })
                .collect(),
        })
        .collect();
    let mut body = Vec::with_capacity(BATCH * 1024);
    serde_json::to_writer(&mut body, &bodies).expect("JSON");
    (body, raw)
}

/// What a bulk load measured.
struct Load {
    records: usize,
    seconds: f64,
    raw_bytes: usize,
    latencies: Vec<Duration>,
    server_cpu: f64,
    /// CPU seconds this process spent (building bodies, sending, reading replies).
    client_cpu: f64,
}

/// Batches whose bodies a prebuilt load builds before each timed round: about 1.2 GB of JSON.
const PREBUILT_ROUND: usize = 1000;

/// Adds `batches` batches of records numbered from `first` on `connections` connections.
/// With `prebuilt`, the bodies of each round of `PREBUILT_ROUND` batches are built on all
/// connections' threads before the round is sent, and only the sending is timed and counted
/// (the server's CPU and the client's); otherwise each connection builds its next body between
/// its requests, as a loading script would.
fn load(
    server: &Server,
    view: &str,
    ids: &[String],
    first: usize,
    batches: usize,
    connections: usize,
    prebuilt: bool,
) -> Load {
    let raw = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(batches));
    let (mut seconds, mut server_cpu, mut client_cpu) = (0.0, 0.0, 0.0);
    let round = if prebuilt { PREBUILT_ROUND } else { batches.max(1) };
    for start in (0..batches).step_by(round) {
        let end = (start + round).min(batches);
        let built: Vec<Mutex<Option<Vec<u8>>>> = if prebuilt {
            let next = AtomicUsize::new(start);
            let built: Vec<Mutex<Option<Vec<u8>>>> =
                (start..end).map(|_| Mutex::new(None)).collect();
            std::thread::scope(|scope| {
                for _ in 0..connections {
                    scope.spawn(|| loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= end {
                            return;
                        }
                        let (body, bytes) = batch_body(index, first, ids);
                        raw.fetch_add(bytes, Ordering::Relaxed);
                        *built[index - start].lock().expect("not poisoned") = Some(body);
                    });
                }
            });
            built
        } else {
            Vec::new()
        };
        let next = AtomicUsize::new(start);
        let cpu = server.cpu_secs();
        let own_cpu = cpu_secs("self");
        let started = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..connections {
                scope.spawn(|| {
                    let client = client();
                    let url = format!("{}/v1/views/{view}/records", server.base);
                    // Each answer is read into the same buffer, as a loading script that only
                    // checks its answers would: a fresh one grew through most of a megabyte of
                    // new pages each time (its page faults and unmaps were 5% of the machine).
                    let mut reply = Vec::with_capacity(2 << 20);
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= end {
                            return;
                        }
                        let body = match built.get(index - start) {
                            Some(body) => body.lock().expect("not poisoned").take().expect("built"),
                            None => {
                                let (body, bytes) = batch_body(index, first, ids);
                                raw.fetch_add(bytes, Ordering::Relaxed);
                                body
                            }
                        };
                        let sent = Instant::now();
                        let mut res = client
                            .post(&url)
                            .header("Authorization", format!("ApiKey {KEY}"))
                            .header("Content-Type", "application/json")
                            .body(body)
                            .send()
                            .expect("add");
                        reply.clear();
                        res.read_to_end(&mut reply).expect("reply");
                        let took = sent.elapsed();
                        assert_eq!(res.status(), 201, "{}", String::from_utf8_lossy(&reply));
                        latencies.lock().expect("not poisoned").push(took);
                    }
                });
            }
        });
        seconds += started.elapsed().as_secs_f64();
        server_cpu += server.cpu_secs() - cpu;
        client_cpu += cpu_secs("self") - own_cpu;
    }
    let mut latencies = latencies.into_inner().expect("not poisoned");
    latencies.sort();
    Load {
        records: batches * BATCH,
        seconds,
        raw_bytes: raw.into_inner(),
        latencies,
        server_cpu,
        client_cpu,
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

/// The server's `/metrics` text.
fn metrics_text(server: &Server) -> String {
    client()
        .get(format!("{}/metrics", server.base))
        .header("Authorization", format!("ApiKey {KEY}"))
        .send()
        .and_then(|r| r.text())
        .expect("metrics")
}

/// The sum of the `/metrics` series whose name and labels start with `series`.
fn metric(server: &Server, series: &str) -> f64 {
    metrics_text(server)
        .lines()
        .filter(|line| line.starts_with(series))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// `/metrics` series of the branch: heap bytes by part, and (bytes, cells) by column type.
fn heap(server: &Server) -> (BTreeMap<String, f64>, BTreeMap<String, (f64, f64)>) {
    let text = metrics_text(server);
    let mut parts = BTreeMap::new();
    let mut types: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else { continue };
        let value: f64 = value.parse().unwrap_or(0.0);
        let label = |name: &str| {
            let start = series.find(&format!("{name}=\""))? + name.len() + 2;
            Some(series[start..].split('"').next()?.to_owned())
        };
        if series.starts_with("gridd_branch_heap_bytes{") {
            *parts.entry(label("part").unwrap_or_default()).or_insert(0.0) += value;
        } else if series.starts_with("gridd_branch_cell_bytes{") {
            types.entry(label("type").unwrap_or_default()).or_default().0 += value;
        } else if series.starts_with("gridd_branch_cells{") {
            types.entry(label("type").unwrap_or_default()).or_default().1 += value;
        }
    }
    (parts, types)
}

const MIB: f64 = (1 << 20) as f64;

/// Prints resident memory and the heap against the raw bytes, settled for a few seconds.
fn report_memory(when: &str, server: &Server, raw: usize, cells: usize) {
    let rss = server.rss_mib();
    let (parts, types) = heap(server);
    std::thread::sleep(Duration::from_secs(3));
    let settled = server.rss_mib();
    let peak = server.stat_field("status", "VmHWM:") as f64 / 1024.0;
    let total: f64 = parts.values().sum();
    let raw_mib = raw as f64 / MIB;
    println!(
        "{when}: RSS {rss:.0} MiB ({:.2}x raw), {settled:.0} MiB 3 s later, peak {peak:.0} MiB \
         since the start; heap {:.0} MiB ({:.2}x raw, {:.1} B/cell)",
        rss / raw_mib,
        total / MIB,
        total / MIB / raw_mib,
        total / cells as f64
    );
    let by_part: Vec<String> = parts
        .iter()
        .map(|(part, bytes)| {
            format!("{part} {:.0} MiB ({:.1} B/cell)", bytes / MIB, bytes / cells as f64)
        })
        .collect();
    println!(
        "  heap by part: {}; history on disk {:.0} MiB",
        by_part.join(", "),
        metric(server, "gridd_history_disk_bytes") / MIB
    );
    let by_type: Vec<String> = types
        .iter()
        .filter(|(_, (_, cells))| *cells > 0.0)
        .map(|(t, (bytes, cells))| format!("{t} {:.1} B/cell", bytes / cells))
        .collect();
    println!("  cells by column type: {}", by_type.join(", "));
}

/// `X-Total-Count` of the view's records.
fn count(server: &Server, view: &str) -> usize {
    let res = client()
        .get(format!("{}/v1/views/{view}/records", server.base))
        .query(&[("page", r#"{"limit":1}"#)])
        .header("Authorization", format!("ApiKey {KEY}"))
        .send()
        .expect("count");
    let total = res.headers().get("x-total-count").and_then(|v| v.to_str().ok());
    total.and_then(|v| v.parse().ok()).expect("X-Total-Count")
}

fn queries(server: &Server, view: &str) {
    let client = client();
    println!("| case | page | total | first | p50 | p99 |");
    println!("|---|---|---|---|---|---|");
    let plain: &[(&str, &str, &str, usize)] = &[("all_page100", "", "", 0)];
    for &(name, query, sort, offset) in plain.iter().chain(QUERY_CASES) {
        let page = format!("{{\"offset\":{offset},\"limit\":100}}");
        let params = [("query", query), ("sort", sort), ("page", page.as_str())];
        let params: Vec<_> = params.into_iter().filter(|(_, v)| !v.is_empty()).collect();
        let url = format!("{}/v1/views/{view}/records", server.base);
        let send = || {
            let sent = Instant::now();
            let res = client
                .get(&url)
                .query(&params)
                .header("Authorization", format!("ApiKey {KEY}"))
                .send()
                .expect("query");
            let total = res.headers().get("x-total-count").and_then(|v| v.to_str().ok());
            let total = total.unwrap_or("?").to_owned();
            let status = res.status();
            let bytes = res.bytes().expect("a body");
            let took = sent.elapsed();
            let body: Value = serde_json::from_slice(&bytes).expect("a JSON body");
            assert!(status.is_success(), "{status}: {body}");
            (took, body.as_array().map_or(0, Vec::len), total)
        };
        let (first, rows, total) = send();
        let mut times: Vec<Duration> = (0..QUERY_RUNS).map(|_| send().0).collect();
        times.sort();
        let (p50, p99) = (quantile(&times, 0.5), quantile(&times, 0.99));
        println!("| {name} | {rows} | {total} | {first:.1?} | {p50:.2?} | {p99:.2?} |");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let records: usize = args.next().map_or(1_000_000, |n| n.parse().expect("a record count"));
    let connections: usize = args.next().map_or(4, |n| n.parse().expect("a connection count"));
    let prebuilt = std::env::var_os("GRIDD_SCALE_PREBUILT").is_some();
    let batches = records.div_ceil(BATCH);
    let records = batches * BATCH;
    let temp = tempfile::tempdir().expect("temp dir");
    // GRIDD_SCALE_DATA_DIR keeps the data directory (to profile a start on it afterwards).
    let kept = std::env::var_os("GRIDD_SCALE_DATA_DIR").map(PathBuf::from);
    let dir: &Path = kept.as_deref().unwrap_or(temp.path());
    let (server, _) = start(dir, &[]);
    let client = client();
    let auth = format!("ApiKey {KEY}");

    let dbs = check(
        client
            .get(format!("{}/v1/databases", server.base))
            .header("Authorization", &auth)
            .send()
            .expect("databases"),
    );
    let db = dbs[0]["id"].as_str().expect("database id").to_owned();
    let grid = check(
        client
            .post(format!("{}/v1/grids?dbId={db}", server.base))
            .header("Authorization", &auth)
            .json(&json!({"name": "scale", "columns": data::columns(12)}))
            .send()
            .expect("grid"),
    );
    let view = grid["defaultAccessViewId"].as_str().expect("view id").to_owned();
    let ids: Vec<String> =
        data::columns(12).iter().map(|c| c["id"].as_str().unwrap_or_default().to_owned()).collect();
    for target in &ids[1..7] {
        let body = json!({"sourceColumnId": ids[0], "targetColumnId": target});
        let url = format!("{}/v1/views/{view}/dependencies", server.base);
        check(
            client.post(url).header("Authorization", &auth).json(&body).send().expect("dependency"),
        );
    }
    let cells = records * ids.len();

    let bodies =
        if prebuilt { "bodies built before each timed round" } else { "bodies built in the loop" };
    println!(
        "# gridd at {records} records x {} columns, {connections} connections, {bodies}",
        ids.len()
    );
    let seeded = load(&server, &view, &ids, 0, batches, connections, prebuilt);
    let raw = seeded.raw_bytes;
    println!(
        "bulk load: {records} records in {:.1} s = {:.0} records/s; request p50 {:.1?}, p99 \
         {:.1?}; server CPU {:.1} ms per request of {BATCH} (client {:.1} ms); raw data {:.0} MiB",
        seeded.seconds,
        seeded.records as f64 / seeded.seconds,
        quantile(&seeded.latencies, 0.5),
        quantile(&seeded.latencies, 0.99),
        seeded.server_cpu * 1000.0 / batches as f64,
        seeded.client_cpu * 1000.0 / batches as f64,
        raw as f64 / MIB
    );
    println!(
        "snapshots during the load: {:.0}, {:.0} MiB written, {:.0} MiB borrowed from earlier images",
        metric(&server, "gridd_snapshot_seconds_count"),
        metric(&server, "gridd_snapshot_bytes_total{kind=\"written\"}") / MIB,
        metric(&server, "gridd_snapshot_bytes_total{kind=\"borrowed\"}") / MIB,
    );
    report_memory("after the load, before any query", &server, raw, cells);
    println!("\nqueries after the load (each answered {QUERY_RUNS} times after the first):\n");
    queries(&server, &view);
    println!();
    report_memory("after the load and the queries", &server, raw, cells);
    // GRIDD_SCALE_HOLD_SECS keeps the loaded server up that long (to read its smaps or profile it).
    if let Some(secs) = std::env::var("GRIDD_SCALE_HOLD_SECS").ok().and_then(|s| s.parse().ok()) {
        println!("holding gridd (pid {}) for {secs} s", server.child.id());
        std::thread::sleep(Duration::from_secs(secs));
    }

    server.kill();
    if std::env::var_os("GRIDD_SCALE_KILL_ONLY").is_some() {
        println!("\nkilled right after the load; data directory: {}", dir.display());
        std::mem::forget(temp);
        return;
    }
    let (server, took) = start(dir, &[]);
    assert_eq!(count(&server, &view), records, "every record back after the replay");
    println!(
        "\nrestart after SIGKILL right after the load (WAL replay): {:.2} s",
        took.as_secs_f64()
    );
    report_memory("after the replay", &server, raw, cells);

    let stopped = server.stop();
    let (server, took) = start(dir, &[]);
    assert_eq!(count(&server, &view), records, "every record back from the snapshot");
    println!("\ngraceful stop (every branch snapshots): {:.2} s", stopped.as_secs_f64());
    println!("start from that snapshot: {:.2} s", took.as_secs_f64());
    report_memory("after the snapshot load", &server, raw, cells);

    let more = (batches / 100).max(1);
    load(&server, &view, &ids, records, more, connections, false);
    server.kill();
    let (server, took) = start(dir, &[]);
    assert_eq!(count(&server, &view), records + more * BATCH, "the later writes replayed");
    println!(
        "\nrestart after SIGKILL with a recent snapshot ({} records written after it): {:.2} s",
        more * BATCH,
        took.as_secs_f64()
    );
    server.stop();
}
