//! The change feed's figures (issue 21): latency from a write's acknowledgement (it is durable
//! then) to the event that carries it, at a steady write rate with many connected consumers,
//! and the server's memory with many idle consumers.
//!
//! Starts a release `gridd` (beside this example, or `GRIDD_BIN`) on a fresh data directory,
//! makes a grid of `records` records with one text column, connects `consumers` feeds of its
//! view, then updates one record at a time (`PATCH`, value `w<n>`) at `rate` writes a second
//! for `seconds`, from 8 writer threads; each consumer notes when each `w<n>` reaches it.
//! Then it opens `idle` more feeds that read nothing and reports the resident memory before
//! and after.
//!
//! `cargo build --release && cargo run --release --example feed_latency -- [records]
//! [consumers] [rate] [seconds] [idle]` (defaults 10000 100 1000 10 1000).

#![allow(clippy::print_stdout)] // the report is the program's output

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::{json, Value};

const KEY: &str = "feed-example-key";

fn gridd_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("GRIDD_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("own path");
    let bin = exe.parent().and_then(Path::parent).map(|dir| dir.join("gridd"));
    bin.filter(|b| b.exists()).expect("no gridd binary: run `cargo build --release` first")
}

/// Starts gridd on `dir`; returns the child and its base URL once `/healthz` answers.
fn start(dir: &Path) -> (Child, String) {
    let port =
        TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a port").port();
    let child = Command::new(gridd_bin())
        .arg("--data-dir")
        .arg(dir)
        .args(["--bind", &format!("127.0.0.1:{port}"), "--api-key", KEY, "--log-level", "error"])
        .spawn()
        .expect("gridd starts");
    let base = format!("http://127.0.0.1:{port}");
    let probe = Client::new();
    while probe.get(format!("{base}/healthz")).send().is_err() {
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, base)
}

fn rss_mib(child: &Child) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

fn call(client: &Client, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
    let mut req = client.request(method, url).header("Authorization", format!("ApiKey {KEY}"));
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().expect("sent");
    let status = res.status();
    let body: Value = res.json().unwrap_or(Value::Null);
    assert!(status.is_success(), "{status}: {body}");
    body
}

/// A grid of `records` records with a `title` column; its view's id.
fn grid(client: &Client, base: &str, records: usize) -> String {
    let dbs = call(client, reqwest::Method::GET, &format!("{base}/v1/databases"), None);
    let db = dbs[0]["id"].as_str().expect("a database").to_owned();
    let grid = call(
        client,
        reqwest::Method::POST,
        &format!("{base}/v1/grids?dbId={db}"),
        Some(json!({"name": "feed"})),
    );
    let view = grid["defaultAccessViewId"].as_str().expect("a view").to_owned();
    let column = json!({"id": "title", "name": "Title", "type": "singleLine"});
    call(client, reqwest::Method::POST, &format!("{base}/v1/views/{view}/columns"), Some(column));
    for first in (0..records).step_by(1000) {
        let batch: Vec<Value> = (first..(first + 1000).min(records))
            .map(|i| json!({"id": format!("r{i}"), "cells": [{"columnId": "title", "value": "seed"}]}))
            .collect();
        call(
            client,
            reqwest::Method::POST,
            &format!("{base}/v1/views/{view}/records"),
            Some(json!(batch)),
        );
    }
    view
}

/// Opens a feed of `view`; the stream after the response's headers.
fn open_feed(base: &str, view: &str) -> TcpStream {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connects");
    let request = format!(
        "GET /v1/views/{view}/changes HTTP/1.1\r\nHost: {addr}\r\nAuthorization: ApiKey {KEY}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).expect("sent");
    stream
}

/// Reads a feed until `stop`, noting for each `w<n>` seen the time since `origin` in `seen`.
fn consume(
    mut stream: TcpStream,
    origin: Instant,
    stop: &AtomicBool,
    seen: &Mutex<Vec<(usize, u64)>>,
) {
    stream.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
    let mut text = String::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut mine = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let Ok(n) = stream.read(&mut chunk) else { continue };
        if n == 0 {
            break;
        }
        let at = origin.elapsed().as_micros() as u64;
        text.push_str(&String::from_utf8_lossy(&chunk[..n]));
        // Values are `w<n>`; chunk framing never splits an event.
        let mut rest = text.as_str();
        while let Some(i) = rest.find("\"w") {
            let digits: String = rest[i + 2..].chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse() {
                mine.push((n, at));
            }
            rest = &rest[i + 2..];
        }
        text.clear();
    }
    seen.lock().expect("not poisoned").extend(mine);
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let arg = |i: usize, default: usize| args.get(i).copied().unwrap_or(default);
    let (records, consumers, rate, seconds, idle) =
        (arg(0, 10_000), arg(1, 100), arg(2, 1000), arg(3, 10), arg(4, 1000));
    let dir = tempfile::tempdir().expect("a data directory");
    let (mut child, base) = start(dir.path());
    let client = Client::new();
    let view = grid(&client, &base, records);
    println!("# gridd change feed: {records} records, {consumers} consumers, {rate} writes/s for {seconds} s");

    let origin = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let readers: Vec<_> = (0..consumers)
        .map(|_| {
            let stream = open_feed(&base, &view);
            let (stop, seen) = (stop.clone(), seen.clone());
            std::thread::spawn(move || consume(stream, origin, &stop, &seen))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));

    let total = rate * seconds;
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let writers = 8;
    let started = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (base, view, acked) = (base.clone(), view.clone(), acked.clone());
            std::thread::spawn(move || {
                let client = Client::new();
                for n in (w..total).step_by(writers) {
                    let due = started + Duration::from_secs_f64(n as f64 / rate as f64);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let url = format!("{base}/v1/views/{view}/records/r{}", n % records);
                    let body = json!({"cells": [{"columnId": "title", "value": format!("w{n}")}]});
                    call(&client, reqwest::Method::PATCH, &url, Some(body));
                    acked[n].store(origin.elapsed().as_micros() as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a writer");
    }
    let wrote = started.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().expect("a reader");
    }
    let seen = seen.lock().expect("not poisoned");
    let mut latencies: Vec<u64> = seen
        .iter()
        .filter_map(|&(n, at)| {
            let acked = acked.get(n)?.load(Ordering::Relaxed);
            (acked > 0).then(|| at.saturating_sub(acked))
        })
        .collect();
    latencies.sort_unstable();
    let expected = total * consumers;
    println!(
        "wrote {total} in {:.1} s ({:.0} writes/s); events carried {} of {} (write x consumer; \
         a record written twice before a consumer read it comes once)",
        wrote.as_secs_f64(),
        total as f64 / wrote.as_secs_f64(),
        latencies.len(),
        expected
    );
    println!(
        "acknowledgement -> event: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        quantile(&latencies, 0.5),
        quantile(&latencies, 0.99),
        quantile(&latencies, 1.0)
    );

    let before = rss_mib(&child);
    let idle_feeds: Vec<TcpStream> = (0..idle).map(|_| open_feed(&base, &view)).collect();
    std::thread::sleep(Duration::from_secs(2));
    let after = rss_mib(&child);
    println!(
        "{idle} idle consumers: resident {before:.1} MiB before, {after:.1} MiB with them ({:.1} KiB each)",
        (after - before) * 1024.0 / idle.max(1) as f64
    );
    drop(idle_feeds);
    let _ = child.kill();
    let _ = child.wait();
}
