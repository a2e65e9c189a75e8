//! Webhooks (issue 21): `POST/GET/DELETE /v1/webhooks`, resume and the delivery log, and the
//! deliveries themselves, received by a small HTTP server on loopback (`Receiver`) that answers
//! what the test scripts: every delivery once in order through failures and a restart, the
//! signature, the column and status filters, pausing after the pause period and resuming.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::helpers::{cell, records_path, spawn_app, spawn_app_with, start_with, TestApp};
use crate::records::{simple_grid, titled};

/// One request the receiver got, and what it answered.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    headers: HashMap<String, String>,
    body: Vec<u8>,
    answered: u16,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub(crate) fn ok(&self) -> bool {
        self.answered == 200
    }
}

/// A webhook receiver on 127.0.0.1: answers the scripted statuses first, then `default`.
pub(crate) struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<Received>>>,
    default: Arc<AtomicU16>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Answers 500 to the first `failures` requests, then 200.
    pub(crate) fn failing_first(failures: usize) -> Receiver {
        Receiver::scripted(vec![500; failures], 200)
    }

    fn scripted(script: Vec<u16>, default: u16) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("receiver binds");
        let addr = listener.local_addr().expect("receiver address");
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let default = Arc::new(AtomicU16::new(default));
        let done = Arc::new(AtomicBool::new(false));
        let (g, s, d, stop) = (got.clone(), script.clone(), default.clone(), done.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    serve(stream, &g, &s, &d);
                }
            }
        });
        Receiver { addr, got, default, done, thread: Some(thread) }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    fn answer_from_now(&self, status: u16) {
        self.default.store(status, Ordering::SeqCst);
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.got.lock().expect("receiver log").clone()
    }

    /// Waits (up to 30 s) until the requests received satisfy `done`.
    #[track_caller]
    fn wait_for(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.received();
            if done(&got) {
                return got;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {got:#?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request from `stream`, records it, answers and closes the connection.
fn serve(
    mut stream: TcpStream,
    got: &Mutex<Vec<Received>>,
    script: &Mutex<VecDeque<u16>>,
    default: &AtomicU16,
) {
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let mut raw = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    while raw.len() < head_end + length {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    }
    let status = script
        .lock()
        .expect("script")
        .pop_front()
        .unwrap_or_else(|| default.load(Ordering::SeqCst));
    let body = raw[head_end..head_end + length].to_vec();
    got.lock().expect("receiver log").push(Received { headers, body, answered: status });
    let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    let _ = stream.write_all(answer.as_bytes());
}

/// A server that lets webhooks target loopback and retries after 20 ms.
fn hook_config(dir: &std::path::Path, pause_after_secs: u64) -> gridd::Config {
    let mut config = gridd::Config::for_data_dir(dir, crate::helpers::OWNER_KEY);
    config.allow_loopback_webhooks = true;
    config.webhook_retry_base_ms = 20;
    config.webhook_pause_after_secs = pause_after_secs;
    config.webhook_timeout_ms = 2000;
    config
}

fn hook_app() -> TestApp {
    spawn_app_with(|c| *c = hook_config(&c.data_dir, 86_400))
}

fn create_hook(app: &TestApp, body: Value) -> Value {
    app.post("/v1/webhooks", &body).assert_status(201).clone()
}

fn hook_path(hook: &Value) -> String {
    format!("/v1/webhooks/{}", hook["id"].as_str().expect("hook id"))
}

/// What a receiver's successful deliveries say, applied in order: record id -> title.
fn replay(got: &[Received]) -> BTreeMap<String, Value> {
    let mut records = BTreeMap::new();
    for delivery in got.iter().filter(|r| r.ok() && r.header("x-gridd-event") == "records") {
        let body = delivery.json();
        for record in body["records"].as_array().expect("records") {
            let id = record["id"].as_str().expect("id").to_owned();
            records.insert(id, cell(record, "title")["value"].clone());
        }
        for gone in body["deleted"].as_array().expect("deleted") {
            records.remove(gone["id"].as_str().expect("id"));
        }
    }
    records
}

/// The view's records as `replay` shows them.
fn listing(app: &TestApp, view: &str) -> BTreeMap<String, Value> {
    let records = app.records(view);
    let title = |r: &Value| cell(r, "title")["value"].clone();
    records.iter().map(|r| (r["id"].as_str().expect("id").to_owned(), title(r))).collect()
}

/// Each delivery answered 200 once only, and the successful ones in increasing position.
#[track_caller]
fn assert_once_in_order(got: &[Received]) {
    let ok: Vec<&Received> = got.iter().filter(|r| r.ok()).collect();
    let mut seen = std::collections::HashSet::new();
    for delivery in &ok {
        let id = delivery.header("x-gridd-delivery");
        assert!(seen.insert(id.to_owned()), "delivery {id} succeeded twice: {got:#?}");
    }
    let positions: Vec<u32> =
        ok.iter().map(|r| r.header("x-gridd-position").parse().expect("a position")).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "positions out of order: {positions:?}");
}

fn hmac_hex(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[test]
fn hooks_are_created_listed_read_and_deleted() {
    let app = hook_app();
    let (grid, view) = simple_grid(&app);
    let url = "https://hooks.example.com/in";
    let hook = create_hook(&app, json!({"url": url, "viewId": view, "secret": "s3cret"}));
    let id = hook["id"].as_str().expect("id").to_owned();
    assert_eq!(hook["url"], url);
    assert_eq!(hook["viewId"], json!(view));
    assert_eq!(hook["gridId"], json!(grid));
    assert_eq!(hook["hasSecret"], true);
    assert_eq!(hook["state"], "active");
    assert!(hook.get("secret").is_none() && !hook.to_string().contains("s3cret"), "{hook}");
    let other = create_hook(
        &app,
        json!({"url": url, "viewId": view, "columnIds": ["title"], "statuses": ["outOfDate"]}),
    );
    assert_eq!(other["hasSecret"], false);
    assert_eq!(other["columnIds"], json!(["title"]));
    assert_eq!(other["statuses"], json!(["outOfDate"]));

    let list = app.get("/v1/webhooks").assert_status(200).clone();
    let ids: Vec<&Value> = list.as_array().expect("a list").iter().map(|h| &h["id"]).collect();
    assert_eq!(ids, [&json!(id), &other["id"]]);
    let (_, other_view) = simple_grid(&app);
    let filtered = app.get(&format!("/v1/webhooks?viewId={other_view}")).assert_status(200).clone();
    assert_eq!(filtered, json!([]));
    assert_eq!(app.get(&hook_path(&hook)).assert_status(200), &hook);
    assert_eq!(app.get(&format!("{}/deliveries", hook_path(&hook))).assert_status(200), &json!([]));

    let deleted = app.delete(&hook_path(&hook));
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    app.get(&hook_path(&hook)).assert_error(404, "webhookIsNotFound");
    app.delete(&hook_path(&hook)).assert_error(404, "webhookIsNotFound");
    let list = app.get("/v1/webhooks").assert_status(200).clone();
    assert_eq!(list.as_array().map(Vec::len), Some(1));
}

#[test]
fn bad_hooks_are_refused() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let url = "https://hooks.example.com/in";
    let refused = |body: Value, status: u16, code: &str| {
        app.post("/v1/webhooks", &body).assert_error(status, code);
    };
    refused(json!({"url": "ftp://example.com/x", "viewId": view}), 400, "badRequest");
    refused(json!({"url": "not a url", "viewId": view}), 400, "badRequest");
    refused(json!({"viewId": view}), 400, "badRequest");
    refused(json!({"url": url}), 400, "badRequest");
    refused(json!({"url": url, "viewId": view, "secret": ""}), 400, "badRequest");
    refused(json!({"url": url, "viewId": view, "secret": "x".repeat(257)}), 400, "badRequest");
    refused(json!({"url": url, "viewId": view, "colmnIds": ["title"]}), 400, "badRequest");
    refused(json!({"url": url, "viewId": view, "statuses": ["done"]}), 400, "badRequest");
    refused(json!({"url": url, "viewId": view, "columnIds": []}), 400, "badRequest");
    let long = format!("https://example.com/{}", "a".repeat(3000));
    refused(json!({"url": long, "viewId": view}), 400, "badRequest");
    for loopback in
        ["http://127.0.0.1:9/x", "http://localhost/x", "http://[::1]/x", "http://0.0.0.0/"]
    {
        let res = app.post("/v1/webhooks", &json!({"url": loopback, "viewId": view}));
        res.assert_error(400, "badRequest");
        assert!(res.text.contains("--allow-loopback-webhooks"), "{}", res.text);
    }
    refused(json!({"url": url, "viewId": "nosuchview0001"}), 404, "viewIsNotFound");
    refused(json!({"url": url, "viewId": view, "columnIds": ["nope"]}), 400, "invalidColumnId");

    let reader = app.create_key(&["read", "write"], json!({"all": true}));
    let res = app.post_as(&reader, "/v1/webhooks", &json!({"url": url, "viewId": view}));
    res.assert_error(403, "accessDenied");
    app.get_as(&reader, "/v1/webhooks").assert_error(403, "accessDenied");
    let view_key = app.create_view_key(&view);
    let res = app.post_as(&view_key, "/v1/webhooks", &json!({"url": url, "viewId": view}));
    res.assert_error(403, "accessDenied");
    app.get_as(&view_key, "/v1/webhooks").assert_error(403, "accessDenied");

    let hook = create_hook(&app, json!({"url": url, "viewId": view}));
    app.get_as(&reader, &hook_path(&hook)).assert_error(403, "accessDenied");
    app.delete_as(&reader, &hook_path(&hook)).assert_error(403, "accessDenied");
    let (other_owner, _, _) = app.create_company("enterprise");
    app.get_as(&other_owner, &hook_path(&hook)).assert_error(404, "webhookIsNotFound");
    let theirs = app.get_as(&other_owner, "/v1/webhooks").assert_status(200).clone();
    assert_eq!(theirs, json!([]));
    app.get("/v1/webhooks").assert_status(200);
}

#[test]
fn a_failing_receiver_gets_every_delivery_once_in_order_and_signed() {
    let app = hook_app();
    let (_, view) = simple_grid(&app);
    let receiver = Receiver::failing_first(3);
    let secret = "hook-secret";
    let hook = create_hook(&app, json!({"url": receiver.url(), "viewId": view, "secret": secret}));
    let records = records_path(&view);
    app.add_records(&view, titled(["r1".to_owned(), "r2".to_owned()]));
    app.add_records(&view, titled(["r3".to_owned()]));
    let renamed = json!([{"id": "r1", "cells": [{"columnId": "title", "value": "renamed"}]}]);
    app.patch(&records, &renamed).assert_status(200);
    let res = app.delete_with(&records, &json!({"ids": ["r2"]}));
    assert_eq!(res.status, 204, "{}", res.text);
    app.add_records(&view, titled(["r4".to_owned()]));

    let expected = listing(&app, &view);
    assert_eq!(expected.keys().collect::<Vec<_>>(), ["r1", "r3", "r4"]);
    let got = receiver.wait_for("every change", |got| replay(got) == expected);
    assert_once_in_order(&got);
    // The first delivery was attempted four times, with one id and the same body.
    assert!(got[..4]
        .iter()
        .all(|r| r.header("x-gridd-delivery") == got[0].header("x-gridd-delivery")));
    assert!(got[..4].iter().all(|r| r.body == got[0].body));
    assert_eq!(got.iter().map(|r| r.answered).take(4).collect::<Vec<_>>(), [500, 500, 500, 200]);
    for delivery in &got {
        assert_eq!(delivery.header("content-type"), "application/json");
        assert_eq!(delivery.header("x-gridd-hook"), hook["id"].as_str().expect("id"));
        let signature = format!("sha256={}", hmac_hex(secret, &delivery.body));
        assert_eq!(delivery.header("x-gridd-signature"), signature);
        let body = delivery.json();
        assert_eq!(delivery.header("x-gridd-position"), body["position"].to_string());
    }
    let last: u32 = got.last().expect("a delivery").header("x-gridd-position").parse().expect("n");
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.get(&hook_path(&hook)).body["position"] != json!(last) {
        assert!(Instant::now() < deadline, "the hook's position did not reach {last}");
        std::thread::sleep(Duration::from_millis(20));
    }

    let log = app.get(&format!("{}/deliveries", hook_path(&hook))).assert_status(200).clone();
    let log = log.as_array().expect("a log");
    assert_eq!(log.len(), got.len(), "{log:#?}");
    let oldest = &log[log.len() - 1];
    assert_eq!((oldest["attempt"].clone(), oldest["status"].clone()), (json!(1), json!(500)));
    assert_eq!(oldest["succeeded"], false);
    assert_eq!(log[log.len() - 4]["attempt"], 4);
    assert_eq!(log[0]["status"], 200);
    assert!(log.iter().all(|a| a["durationMs"].is_u64() && a["time"].is_string()), "{log:#?}");
}

#[test]
fn a_hook_delivers_only_its_columns() {
    let app = hook_app();
    let (_, view) = simple_grid(&app);
    app.create_column(&view, json!({"id": "note", "name": "Note", "type": "singleLine"}));
    app.add_records(&view, titled(["r1".to_owned()]));
    let receiver = Receiver::failing_first(0);
    create_hook(&app, json!({"url": receiver.url(), "viewId": view, "columnIds": ["title"]}));
    let records = records_path(&view);
    let note = json!([{"id": "r1", "cells": [{"columnId": "note", "value": "not delivered"}]}]);
    app.patch(&records, &note).assert_status(200);
    let title = json!([{"id": "r1", "cells": [{"columnId": "title", "value": "delivered"}]}]);
    app.patch(&records, &title).assert_status(200);
    receiver.wait_for("the title's change", |got| !got.is_empty());
    std::thread::sleep(Duration::from_millis(300));
    let got = receiver.received();
    assert_eq!(got.len(), 1, "{got:#?}");
    let body = got[0].json();
    let record = &body["records"][0];
    assert_eq!(record["id"], "r1");
    let cells = record["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 1, "{record}");
    assert_eq!(cells[0]["columnId"], "title");
    assert_eq!(cells[0]["value"], "delivered");
}

#[test]
fn a_hook_delivers_only_records_in_its_statuses() {
    let app = hook_app();
    let (_, view) = app.localized_grid(true);
    let cells = |en: &str| {
        json!([{"columnId": "en", "value": en},
               {"columnId": "fr", "value": "fr", "dependencyStatus": "upToDate"},
               {"columnId": "de", "value": "de", "dependencyStatus": "upToDate"}])
    };
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": cells("one")}, {"id": "r2", "cells": cells("two")}]),
    );
    let receiver = Receiver::failing_first(0);
    create_hook(&app, json!({"url": receiver.url(), "viewId": view, "statuses": ["outOfDate"]}));
    let records = records_path(&view);
    let note = json!([{"id": "r2", "cells": [{"columnId": "note", "value": "still up to date"}]}]);
    app.patch(&records, &note).assert_status(200);
    let source = json!([{"id": "r1", "cells": [{"columnId": "en", "value": "changed"}]}]);
    app.patch(&records, &source).assert_status(200);
    receiver.wait_for("r1's change", |got| !got.is_empty());
    std::thread::sleep(Duration::from_millis(300));
    let got = receiver.received();
    assert_eq!(got.len(), 1, "{got:#?}");
    let body = got[0].json();
    assert_eq!(body["records"].as_array().map(Vec::len), Some(1), "{body}");
    assert_eq!(body["records"][0]["id"], "r1");
    assert_eq!(cell(&body["records"][0], "fr")["dependencyStatus"], "outOfDate");
}

#[test]
fn deliveries_survive_a_restart_from_the_delivered_position() {
    let dir = tempfile::tempdir().expect("temp dir");
    let app = start_with(hook_config(dir.path(), 86_400));
    let (_, view) = simple_grid(&app);
    let receiver = Receiver::scripted(Vec::new(), 200);
    let hook = create_hook(&app, json!({"url": receiver.url(), "viewId": view}));
    app.add_records(&view, titled(["r1".to_owned()]));
    receiver.wait_for("the first change", |got| got.iter().any(Received::ok));
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.get(&hook_path(&hook)).body["position"] == hook["position"] {
        assert!(Instant::now() < deadline, "the first delivery was not recorded");
        std::thread::sleep(Duration::from_millis(20));
    }
    receiver.answer_from_now(503);
    app.add_records(&view, titled(["r2".to_owned()]));
    app.add_records(&view, titled(["r3".to_owned()]));
    receiver.wait_for("a failed attempt", |got| got.iter().any(|r| r.answered == 503));
    let expected = listing(&app, &view);
    let (data_dir, _) = app.shut_down();
    let pending = receiver.received().len();

    receiver.answer_from_now(200);
    let app = start_with(hook_config(&data_dir, 86_400));
    let got = receiver.wait_for("every change after the restart", |got| replay(got) == expected);
    assert_once_in_order(&got);
    assert!(got.len() > pending, "nothing was delivered after the restart: {got:#?}");
    assert_eq!(app.get(&hook_path(&hook)).assert_status(200)["state"], "active");
    drop(dir);
}

#[test]
fn a_hook_failing_for_its_pause_period_is_paused_and_resumes() {
    let app = spawn_app_with(|c| *c = hook_config(&c.data_dir, 1));
    let (_, view) = simple_grid(&app);
    let receiver = Receiver::scripted(Vec::new(), 500);
    let hook = create_hook(&app, json!({"url": receiver.url(), "viewId": view}));
    app.add_records(&view, titled(["r1".to_owned()]));
    let deadline = Instant::now() + Duration::from_secs(20);
    let paused = loop {
        let now = app.get(&hook_path(&hook)).assert_status(200).clone();
        if now["state"] == "paused" {
            break now;
        }
        assert!(Instant::now() < deadline, "the hook was not paused: {now}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let reason = paused["pausedReason"].as_str().expect("a reason");
    assert!(reason.contains("500"), "{reason}");
    assert!(paused["pausedTime"].is_string(), "{paused}");
    let attempts = receiver.received().len();
    assert!(attempts >= 2, "{attempts} attempts");
    let log = app.get(&format!("{}/deliveries", hook_path(&hook))).assert_status(200).clone();
    let log = log.as_array().expect("a log");
    assert_eq!(log.len(), attempts);
    assert!(log.iter().all(|a| a["status"] == 500 && a["succeeded"] == false), "{log:#?}");
    let numbers: Vec<u64> = log.iter().map(|a| a["attempt"].as_u64().expect("n")).collect();
    assert!(numbers.windows(2).all(|w| w[0] == w[1] + 1), "newest first: {numbers:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(receiver.received().len(), attempts, "a paused hook delivers nothing");

    receiver.answer_from_now(200);
    let resumed = app.post(&format!("{}/resume", hook_path(&hook)), &json!({}));
    let resumed = resumed.assert_status(200);
    assert_eq!(resumed["state"], "active");
    assert!(resumed["pausedReason"].is_null(), "{resumed}");
    let got =
        receiver.wait_for("the delivery after the resume", |got| got.iter().any(Received::ok));
    assert_eq!(replay(&got).keys().collect::<Vec<_>>(), ["r1"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = app.get(&format!("{}/deliveries", hook_path(&hook))).assert_status(200).clone();
        if log[0]["status"] == 200 {
            assert_eq!(log[0]["succeeded"], true);
            break;
        }
        assert!(Instant::now() < deadline, "the success is not in the log: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_deleted_view_or_grid_takes_its_hooks() {
    let app = hook_app();
    let (grid, view) = simple_grid(&app);
    let extra = app
        .post("/v1/views", &json!({"name": "Extra", "gridId": grid, "columns": [{"id": "title"}]}));
    let extra = extra.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let url = "https://hooks.example.com/in";
    let on_extra = create_hook(&app, json!({"url": url, "viewId": extra}));
    let on_default = create_hook(&app, json!({"url": url, "viewId": view}));
    let res = app.delete(&format!("/v1/views/{extra}"));
    assert_eq!(res.status, 204, "{}", res.text);
    app.get(&hook_path(&on_extra)).assert_error(404, "webhookIsNotFound");
    app.get(&hook_path(&on_default)).assert_status(200);
    let res = app.delete(&format!("/v1/grids/{grid}"));
    assert_eq!(res.status, 204, "{}", res.text);
    app.get(&hook_path(&on_default)).assert_error(404, "webhookIsNotFound");
    assert_eq!(app.get("/v1/webhooks").assert_status(200), &json!([]));
}

#[test]
fn a_change_of_the_hooks_columns_is_delivered_as_a_schema_event() {
    let app = hook_app();
    let (_, view) = simple_grid(&app);
    let receiver = Receiver::failing_first(0);
    create_hook(&app, json!({"url": receiver.url(), "viewId": view}));
    app.add_records(&view, titled(["r1".to_owned()]));
    receiver.wait_for("the first records", |got| !got.is_empty());
    app.create_column(&view, json!({"id": "note", "name": "Note", "type": "singleLine"}));
    app.add_records(&view, titled(["r2".to_owned()]));
    let got = receiver.wait_for("r2", |got| replay(got).contains_key("r2"));
    let events: Vec<&str> = got.iter().map(|r| r.header("x-gridd-event")).collect();
    assert_eq!(events, ["records", "schema", "records"], "{got:#?}");
    let schema = got[1].json();
    let columns: Vec<&Value> = schema["columns"].as_array().expect("columns").iter().collect();
    assert_eq!(columns.iter().map(|c| c["id"].clone()).collect::<Vec<_>>(), ["title", "note"]);
    assert_eq!(columns[1]["type"], "singleLine");
    assert!(got[1].header("x-gridd-delivery").ends_with("-schema"), "{:?}", got[1]);
}

#[test]
fn a_loopback_target_is_refused_at_delivery_once_the_flag_is_off() {
    let dir = tempfile::tempdir().expect("temp dir");
    let app = start_with(hook_config(dir.path(), 86_400));
    let (_, view) = simple_grid(&app);
    let receiver = Receiver::failing_first(0);
    let hook = create_hook(&app, json!({"url": receiver.url(), "viewId": view}));
    let (data_dir, _) = app.shut_down();
    let mut config = hook_config(&data_dir, 86_400);
    config.allow_loopback_webhooks = false;
    let app = start_with(config);
    app.add_records(&view, titled(["r1".to_owned()]));
    let deliveries = format!("{}/deliveries", hook_path(&hook));
    let deadline = Instant::now() + Duration::from_secs(10);
    let log = loop {
        let log = app.get(&deliveries).assert_status(200).clone();
        if log.as_array().is_some_and(|l| l.len() >= 2) {
            break log;
        }
        assert!(Instant::now() < deadline, "no refused attempts: {log}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let error = log[0]["error"].as_str().expect("an error");
    assert!(error.contains("loopback"), "{log}");
    assert!(log[0]["status"].is_null() && log[0]["succeeded"] == false, "{log}");
    assert!(receiver.received().is_empty(), "a refused target got a request");
    drop(dir);
}

#[test]
fn a_company_has_at_most_a_hundred_hooks() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let body = json!({"url": "https://hooks.example.com/in", "viewId": view});
    for _ in 0..100 {
        create_hook(&app, body.clone());
    }
    let res = app.post("/v1/webhooks", &body);
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("at most 100 webhooks"), "{}", res.text);
    let list = app.get("/v1/webhooks").assert_status(200).clone();
    assert_eq!(list.as_array().map(Vec::len), Some(100));
}
