//! Crash test: the real `gridd` binary is killed with SIGKILL at random moments while clients
//! write, restarted on the same data directory, and every acknowledged write must come back;
//! a write whose response never arrived may or may not be there, but never half of it.
//!
//! `GRIDD_CRASH_CYCLES` sets the number of kill/restart cycles (default 50), e.g.
//! `GRIDD_CRASH_CYCLES=500 cargo test --test api crash -- --nocapture`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::Rng;
use regex::Regex;
use reqwest::blocking::Client;
use serde_json::{json, Value};

const KEY: &str = "crash-test-owner-key-0123456789";
const DEFAULT_CYCLES: usize = 50;
const MAX_THREADS: usize = 4;
const TIMEOUT: Duration = Duration::from_secs(5);

/// A `gridd` process; killed (SIGKILL) and reaped when dropped, so a panicking test leaves no
/// server behind.
struct Server {
    child: Child,
    base: String,
    /// Every stderr line (ANSI codes removed).
    log: Arc<Mutex<Vec<String>>>,
    drains: Vec<JoinHandle<()>>,
}

impl Server {
    /// Starts the binary on `dir` with port 0 and waits for its address and `/healthz`.
    fn start(dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gridd"))
            .args(["--bind", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .args(["--api-key", KEY, "--log-level", "info"])
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gridd starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let stderr = child.stderr.take().expect("piped stderr");
        let stderr_log = log.clone();
        let stderr_drain = std::thread::spawn(move || {
            let ansi = Regex::new(r"\x1b\[[0-9;]*m").expect("regex");
            let addr = Regex::new(r"addr\S*=\S*?(127\.0\.0\.1:\d+)").expect("regex");
            let mut reader = BufReader::new(stderr);
            let mut raw = Vec::new();
            loop {
                raw.clear();
                match reader.read_until(b'\n', &mut raw) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&raw);
                let line = ansi.replace_all(text.trim_end(), "").into_owned();
                if line.contains("gridd listening") {
                    if let Some(found) = addr.captures(&line) {
                        let _ = tx.send(found[1].to_owned());
                    }
                }
                stderr_log.lock().expect("log lock").push(line);
            }
        });
        let mut stdout = child.stdout.take().expect("piped stdout");
        let stdout_log = log.clone();
        let stdout_drain = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            let mut log = stdout_log.lock().expect("log lock");
            log.extend(text.lines().map(|l| format!("[stdout] {l}")));
        });
        let mut server =
            Server { child, base: String::new(), log, drains: vec![stderr_drain, stdout_drain] };
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(addr) => server.base = format!("http://{addr}"),
            Err(err) => {
                let _ = server.child.kill();
                let _ = server.child.wait();
                panic!("gridd did not log its address ({err}); log:\n{}", server.log_text());
            }
        }
        let client = client();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let res = client.get(format!("{}/healthz", server.base)).send();
            if res.as_ref().is_ok_and(|r| r.status().as_u16() == 200) {
                break;
            }
            assert!(Instant::now() < deadline, "/healthz never answered 200: {res:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// SIGKILL, then waits for the process and its output pipes.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for drain in self.drains.drain(..) {
            let _ = drain.join();
        }
    }

    /// The WARN and ERROR lines logged so far, without their timestamps.
    fn warnings(&self) -> Vec<String> {
        let log = self.log.lock().expect("log lock");
        log.iter()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
            .map(|l| l.split_once(' ').map_or(l.as_str(), |(_, rest)| rest).trim().to_owned())
            .collect()
    }

    fn log_text(&self) -> String {
        let log = self.log.lock().expect("log lock");
        let start = log.len().saturating_sub(60);
        log[start..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> Client {
    Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .expect("http client")
}

fn auth(req: reqwest::blocking::RequestBuilder) -> reqwest::blocking::RequestBuilder {
    req.header("Authorization", format!("ApiKey {KEY}"))
}

/// A setup call that must succeed with `status`; returns the body.
fn call(req: reqwest::blocking::RequestBuilder, status: u16) -> Value {
    let res = auth(req).send().expect("setup request");
    let got = res.status().as_u16();
    let text = res.text().expect("setup body");
    assert_eq!(got, status, "setup call failed: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Creates the grid and its columns; returns the default view id.
fn setup_grid(server: &Server) -> String {
    let c = client();
    let base = &server.base;
    let dbs = call(c.get(format!("{base}/v1/databases")), 200);
    let db = dbs[0]["id"].as_str().expect("bootstrap database").to_owned();
    let grid =
        call(c.post(format!("{base}/v1/grids?dbId={db}")).json(&json!({"name": "crash"})), 201);
    let view = grid["defaultAccessViewId"].as_str().expect("view id").to_owned();
    let columns = [
        json!({"id": "enUS", "name": "English", "type": "language", "languageCode": "enUS",
               "localizationType": "sourceLanguage"}),
        json!({"id": "frFR", "name": "French", "type": "language", "languageCode": "frFR",
               "localizationType": "targetLanguage"}),
        json!({"id": "n", "name": "N", "type": "number"}),
    ];
    for column in &columns {
        call(c.post(format!("{base}/v1/views/{view}/columns")).json(column), 201);
    }
    call(
        c.post(format!("{base}/v1/views/{view}/dependencies"))
            .json(&json!({"sourceColumnId": "enUS", "targetColumnId": "frFR"})),
        201,
    );
    view
}

/// The values a write gives a record (`frFR` is set once, by the add).
#[derive(Debug, Clone, PartialEq)]
struct Values {
    n: i64,
    en: String,
}

/// What a client did; `acked` is false when no 2xx arrived.
#[derive(Debug)]
enum Event {
    Add { records: Vec<(String, Values, String)>, acked: bool },
    Update { id: String, values: Values, acked: bool },
}

/// What one client thread reports for a cycle.
#[derive(Debug, Default)]
struct ClientReport {
    events: Vec<Event>,
    /// Non-2xx statuses (the write is then treated as unknown).
    statuses: Vec<(u16, String)>,
    /// Writes whose connection was refused (never sent).
    not_sent: usize,
}

/// A client: writes until `stop` or the first failure (after which nothing it sends is
/// ordered after its unknown write, so at most its last write is unknown).
fn run_client(
    base: String,
    view: String,
    cycle: usize,
    thread: usize,
    mut updatable: Vec<String>,
    counter: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
) -> ClientReport {
    let client = client();
    let mut rng = rand::thread_rng();
    let mut report = ClientReport::default();
    let mut seq = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let next_values = |counter: &AtomicI64| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            Values { n, en: format!("en {n} c{cycle} t{thread} é") }
        };
        // A quarter adds, half of them small: the grid grows by a few hundred records a cycle,
        // which keeps the replay and read-back of every cycle short.
        let (req, mut event) = if updatable.is_empty() || rng.gen_bool(0.25) {
            let count =
                if rng.gen_bool(0.5) { rng.gen_range(1..=5) } else { rng.gen_range(1..=50) };
            let mut records = Vec::with_capacity(count);
            let mut body = Vec::with_capacity(count);
            for _ in 0..count {
                let id = format!("c{cycle}-t{thread}-{seq}");
                seq += 1;
                let values = next_values(&counter);
                let fr = format!("fr {id}");
                body.push(json!({"id": id, "cells": [
                    {"columnId": "enUS", "value": values.en},
                    {"columnId": "frFR", "value": fr},
                    {"columnId": "n", "value": values.n},
                ]}));
                records.push((id, values, fr));
            }
            let req = client.post(format!("{base}/v1/views/{view}/records")).json(&body);
            (req, Event::Add { records, acked: false })
        } else {
            let id = updatable[rng.gen_range(0..updatable.len())].clone();
            let values = next_values(&counter);
            let body = json!({"cells": [
                {"columnId": "enUS", "value": values.en},
                {"columnId": "n", "value": values.n},
            ]});
            let req = client.patch(format!("{base}/v1/views/{view}/records/{id}")).json(&body);
            (req, Event::Update { id, values, acked: false })
        };
        let outcome = auth(req).send();
        let acked = match outcome {
            Ok(res) if res.status().is_success() => {
                let _ = res.bytes();
                true
            }
            Ok(res) => {
                let status = res.status().as_u16();
                report.statuses.push((status, res.text().unwrap_or_default()));
                false
            }
            // Refused connection: nothing was sent (the server is gone), so nothing to track.
            Err(err) if err.is_connect() => {
                report.not_sent += 1;
                break;
            }
            Err(_) => false,
        };
        match &mut event {
            Event::Add { records, acked: a } => {
                *a = acked;
                if acked {
                    updatable.extend(records.iter().map(|(id, _, _)| id.clone()));
                }
            }
            Event::Update { acked: a, .. } => *a = acked,
        }
        report.events.push(event);
        if !acked {
            break;
        }
        // A short pause: fewer writes per cycle keep the WAL replay and the read-back of the
        // restarts short, while writes are still in flight at most kills.
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..=6)));
    }
    report
}

/// What the test knows of one record.
#[derive(Debug)]
struct Rec {
    /// The client thread slot allowed to update it (one writer per record).
    owner: usize,
    fr: String,
    /// The values it may hold: the last acknowledged (or read back) first, then later writes
    /// whose response never arrived.
    possible: Vec<Values>,
    /// Where its last acknowledged state came from, for reports.
    origin: String,
}

#[derive(Debug, Default)]
struct Stats {
    acked_adds: usize,
    acked_add_records: usize,
    acked_updates: usize,
    lost: usize,
    half_applied: usize,
    phantom: usize,
    unknown_adds_applied: usize,
    unknown_adds_not_applied: usize,
    unknown_updates_applied: usize,
    unknown_updates_not_applied: usize,
    non_2xx: usize,
    not_sent: usize,
}

/// Every record of the view: id -> (n, enUS, frFR), and X-Total-Count.
fn read_all(base: &str, view: &str) -> (HashMap<String, (Value, Value, Value)>, usize) {
    let c = client();
    let mut out = HashMap::new();
    let mut offset = 0usize;
    let mut total;
    loop {
        let page = format!("{{\"offset\":{offset},\"limit\":1000}}");
        let res = auth(c.get(format!("{base}/v1/views/{view}/records")).query(&[("page", page)]))
            .send()
            .expect("list records");
        assert_eq!(res.status().as_u16(), 200, "list records failed");
        total = res
            .headers()
            .get("x-total-count")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok())
            .expect("X-Total-Count");
        let body: Value = res.json().expect("records JSON");
        let records = body.as_array().expect("records array");
        for record in records {
            let id = record["id"].as_str().expect("record id").to_owned();
            let cell = |column: &str| {
                record["cells"]
                    .as_array()
                    .and_then(|cells| cells.iter().find(|c| c["columnId"] == column))
                    .map(|c| c["value"].clone())
                    .unwrap_or(Value::Null)
            };
            let previous = out.insert(id.clone(), (cell("n"), cell("enUS"), cell("frFR")));
            assert!(previous.is_none(), "record {id} listed twice");
        }
        offset += records.len();
        if records.is_empty() || offset >= total {
            break;
        }
    }
    (out, total)
}

/// Applies a cycle's client reports to the model.
fn record_events(
    cycle: usize,
    reports: Vec<ClientReport>,
    model: &mut HashMap<String, Rec>,
    unknown_adds: &mut Vec<Vec<String>>,
    unknown_updates: &mut Vec<(String, Values)>,
    stats: &mut Stats,
) {
    for (thread, report) in reports.into_iter().enumerate() {
        stats.non_2xx += report.statuses.len();
        stats.not_sent += report.not_sent;
        for (status, body) in &report.statuses {
            eprintln!("crash: cycle {cycle} thread {thread}: status {status}: {body}");
        }
        for event in report.events {
            match event {
                Event::Add { records, acked } => {
                    if acked {
                        stats.acked_adds += 1;
                        stats.acked_add_records += records.len();
                    } else {
                        unknown_adds.push(records.iter().map(|(id, _, _)| id.clone()).collect());
                    }
                    for (id, values, fr) in records {
                        let rec = Rec {
                            owner: thread,
                            fr,
                            possible: vec![values],
                            origin: format!("added (acked={acked}) in cycle {cycle}"),
                        };
                        assert!(model.insert(id, rec).is_none(), "ids are unique");
                    }
                }
                Event::Update { id, values, acked } => {
                    let rec = model.get_mut(&id).expect("updates go to known records");
                    if acked {
                        stats.acked_updates += 1;
                        rec.possible = vec![values];
                        rec.origin = format!("updated (acked) in cycle {cycle}");
                    } else {
                        rec.possible.push(values.clone());
                        unknown_updates.push((id, values));
                    }
                }
            }
        }
    }
}

/// Checks the restarted server against the model; returns the problems found and makes the
/// read-back state the model's new baseline.
fn verify(
    server: &Server,
    view: &str,
    model: &mut HashMap<String, Rec>,
    unknown_adds: Vec<Vec<String>>,
    unknown_updates: Vec<(String, Values)>,
    stats: &mut Stats,
) -> Vec<String> {
    let (read, total) = read_all(&server.base, view);
    let mut problems = Vec::new();
    let as_values = |(n, en, _): &(Value, Value, Value)| {
        Some(Values { n: n.as_i64()?, en: en.as_str()?.to_owned() })
    };
    for ids in unknown_adds {
        let present = ids.iter().filter(|id| read.contains_key(*id)).count();
        if present == ids.len() {
            stats.unknown_adds_applied += 1;
        } else if present == 0 {
            stats.unknown_adds_not_applied += 1;
            for id in &ids {
                model.remove(id);
            }
        } else {
            stats.half_applied += 1;
            let missing: Vec<&String> = ids.iter().filter(|id| !read.contains_key(*id)).collect();
            problems.push(format!(
                "unacknowledged bulk add of {} records half-applied: {present} present, \
                 missing {missing:?}",
                ids.len()
            ));
            // The present ones stay in the model as read back; the missing ones leave it.
            for id in ids.iter().filter(|id| !read.contains_key(*id)) {
                model.remove(id);
            }
        }
    }
    for (id, values) in unknown_updates {
        let observed = read.get(&id).and_then(as_values);
        if observed.as_ref() == Some(&values) {
            stats.unknown_updates_applied += 1;
        } else {
            stats.unknown_updates_not_applied += 1;
        }
    }
    for (id, rec) in model.iter_mut() {
        let Some(cells) = read.get(id) else {
            stats.lost += 1;
            problems.push(format!(
                "record {id} ({}) is missing; expected one of {:?}",
                rec.origin, rec.possible
            ));
            continue;
        };
        let observed = as_values(cells);
        let fr_ok = cells.2.as_str() == Some(rec.fr.as_str());
        match observed {
            Some(values) if fr_ok && rec.possible.contains(&values) => {
                rec.possible = vec![values];
                rec.origin = format!("{} (read back)", rec.origin.trim_end_matches(" (read back)"));
            }
            _ => {
                stats.lost += 1;
                problems.push(format!(
                    "record {id} ({}) reads n={} enUS={} frFR={}; expected one of {:?} with \
                     frFR={:?}",
                    rec.origin, cells.0, cells.1, cells.2, rec.possible, rec.fr
                ));
            }
        }
    }
    for id in read.keys() {
        if !model.contains_key(id) {
            stats.phantom += 1;
            problems.push(format!("record {id} exists but was never written (or not applied)"));
        }
    }
    if total != model.len() || read.len() != total {
        problems.push(format!(
            "X-Total-Count {total}, {} records listed, {} expected",
            read.len(),
            model.len()
        ));
    }
    problems
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let started = Instant::now();
    let cycles = std::env::var("GRIDD_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(DEFAULT_CYCLES);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut server = Server::start(dir.path());
    let view = setup_grid(&server);
    let counter = Arc::new(AtomicI64::new(1));
    let mut rng = rand::thread_rng();
    let mut model: HashMap<String, Rec> = HashMap::new();
    let mut stats = Stats::default();
    let mut problems = Vec::new();
    let mut cycles_run = 0;
    let (mut restart_time, mut verify_time) = (Duration::ZERO, Duration::ZERO);
    // Distinct WARN / ERROR lines of the restarts (e.g. a dropped torn WAL tail).
    let mut recovery_lines: Vec<String> = Vec::new();
    for cycle in 0..cycles {
        let threads = rng.gen_range(2..=MAX_THREADS);
        let stop = Arc::new(AtomicBool::new(false));
        let mut updatable = vec![Vec::new(); MAX_THREADS];
        for (id, rec) in &model {
            updatable[rec.owner].push(id.clone());
        }
        let handles: Vec<_> = updatable
            .into_iter()
            .take(threads)
            .enumerate()
            .map(|(thread, ids)| {
                let (base, view) = (server.base.clone(), view.clone());
                let (counter, stop) = (counter.clone(), stop.clone());
                std::thread::spawn(move || {
                    run_client(base, view, cycle, thread, ids, counter, stop)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.gen_range(50..=400)));
        // No new request after this point; the ones in flight meet the SIGKILL.
        stop.store(true, Ordering::SeqCst);
        server.kill();
        let reports: Vec<ClientReport> =
            handles.into_iter().map(|h| h.join().expect("client thread")).collect();
        let mut unknown_adds = Vec::new();
        let mut unknown_updates = Vec::new();
        record_events(
            cycle,
            reports,
            &mut model,
            &mut unknown_adds,
            &mut unknown_updates,
            &mut stats,
        );
        let killed_log = server.log_text();
        let restart = Instant::now();
        server = Server::start(dir.path());
        let check = Instant::now();
        restart_time += check - restart;
        for line in server.warnings() {
            if recovery_lines.len() < 10 && !recovery_lines.contains(&line) {
                recovery_lines.push(line);
            }
        }
        let found = verify(&server, &view, &mut model, unknown_adds, unknown_updates, &mut stats);
        verify_time += check.elapsed();
        cycles_run += 1;
        if !found.is_empty() {
            eprintln!("crash: cycle {cycle}: {} problem(s):", found.len());
            for problem in found.iter().take(20) {
                eprintln!("  {problem}");
            }
            eprintln!("crash: log of the killed server:\n{killed_log}");
            eprintln!("crash: log of the restarted server:\n{}", server.log_text());
            problems = found;
            break;
        }
    }
    server.kill();
    for line in &recovery_lines {
        eprintln!("crash: logged at a restart: {line}");
    }
    let acked = stats.acked_adds + stats.acked_updates;
    eprintln!(
        "crash: {cycles_run} cycles, {acked} acknowledged writes ({} bulk adds of {} records, {} \
         updates), {} records at the end; writes lost: {}; half-applied bulk adds: {}; phantom \
         records: {}; unknown bulk adds applied {} / not applied {}; unknown updates applied {} \
         / not applied {}; non-2xx answers: {}; refused (never sent): {}; {:.1} s ({:.1} s \
         restarting, {:.1} s reading back)",
        stats.acked_adds,
        stats.acked_add_records,
        stats.acked_updates,
        model.len(),
        stats.lost,
        stats.half_applied,
        stats.phantom,
        stats.unknown_adds_applied,
        stats.unknown_adds_not_applied,
        stats.unknown_updates_applied,
        stats.unknown_updates_not_applied,
        stats.non_2xx,
        stats.not_sent,
        started.elapsed().as_secs_f64(),
        restart_time.as_secs_f64(),
        verify_time.as_secs_f64(),
    );
    assert!(acked > 0, "no write was acknowledged");
    assert_eq!(stats.lost, 0, "acknowledged writes were lost");
    assert_eq!(stats.half_applied, 0, "an unacknowledged bulk add was half-applied");
    assert!(problems.is_empty(), "{} problem(s), first: {}", problems.len(), problems[0]);
}
