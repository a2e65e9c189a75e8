//! Request forwarding between two in-process gridd nodes on one real NATS cluster: a grid
//! created through node A (which runs its actors) is read and written through node B, which
//! forwards to A (`api::forward`). What is asserted holds with or without the catalogue's
//! replication: B's decision comes from its route table and the locate answers, never from
//! its catalogue (except for the 503 of a grid it knows but nobody serves).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::nats::NatsCluster;
use crate::helpers::{page_query, records_path, start_with, TestApp, OWNER_KEY};

/// A node of the cluster at `urls` with its own data dir, bound to a free port it advertises.
fn cluster_node(urls: Vec<String>, id: &str, prefix: &str) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = gridd::Config::for_data_dir(dir.path(), OWNER_KEY);
    let port = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = port.local_addr().expect("its address");
    drop(port);
    config.bind = addr;
    config.cluster = urls;
    config.node_id = Some(id.to_owned());
    config.advertise = Some(format!("http://{addr}"));
    config.cluster_prefix = prefix.to_owned();
    config.lease_ttl_ms = 2000;
    // Webhooks created in the test target a closed loopback port.
    config.allow_loopback_webhooks = true;
    // A body that stalls is cut after 2 s (the default is 30 s).
    config.body_timeout_ms = 2000;
    (start_with(config), dir)
}

/// A grid created through A with an id that placement puts on A among both nodes, so that A
/// keeps it whenever its owner loop lists the nodes (a random id is placed among the nodes A
/// last listed, which may not include B yet: the grid would then move to B at a later round).
fn grid_placed_on_a(a: &TestApp, name: &str) -> (String, String) {
    let nodes = ["node-a", "node-b"];
    let id = (0..1000)
        .map(|i| format!("{name}{i}"))
        .find(|id| gridd::cluster::placement::owner(id, &nodes) == Some(&"node-a"))
        .expect("an id placed on node-a");
    let res =
        a.post(&format!("/v1/grids?dbId={}", a.default_db()), &json!({"name": name, "id": id}));
    let body = res.assert_status(201);
    assert_eq!(body["id"], json!(id));
    (id, body["defaultAccessViewId"].as_str().expect("a view id").to_owned())
}

/// A text of `n` bytes that differs per record.
fn filler(seed: usize, n: usize) -> String {
    let mut text = format!("{seed}:");
    while text.len() < n {
        text.push_str("lorem ipsum dolor sit amet ");
    }
    text.truncate(n);
    text
}

#[test]
fn a_grid_is_read_and_written_through_any_node() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let nats = runtime.block_on(NatsCluster::start());
    let prefix = format!("FWD{}", std::process::id());
    let (a, _dir_a) = cluster_node(nats.urls(), "node-a", &prefix);
    let (b, _dir_b) = cluster_node(nats.urls(), "node-b", &prefix);
    let (grid, view) = grid_placed_on_a(&a, "forwarded");

    writes_through_b_land_on_a(&a, &b, &grid, &view);
    forwarding_cost(&a, &b, &view);
    catalogue_routes_that_need_the_grid(&a, &b, &view);
    large_bodies_stream_both_ways(&a, &b, &view);
    a_change_feed_streams_through_b(&a, &b, &view);
    unknown_and_refused_ids(&b, &view);
    a_grid_deleted_through_b_is_gone(&a, &b);
    a_stalled_body_is_a_408(&a, &b, &view);
    a_stopped_owner_is_a_503(a, &b, &view);
}

fn writes_through_b_land_on_a(a: &TestApp, b: &TestApp, grid: &str, view: &str) {
    let column = json!({"id": "title", "name": "Title", "type": "singleLine"});
    let res = b.post(&format!("/v1/views/{view}/columns"), &column);
    res.assert_status(201);
    assert_eq!(res.header("gridd-served-by"), Some("node-a"), "answered by A");
    let records = json!([{"id": "r1", "cells": [{"columnId": "title", "value": "through B"}]}]);
    b.post(&records_path(view), &records).assert_status(201);
    let on_a = a.records(view);
    assert_eq!(on_a.len(), 1);
    assert_eq!(on_a[0]["cells"][0]["value"], "through B", "{on_a:?}");
    let patch = json!([{"id": "r1", "cells": [{"columnId": "title", "value": "patched via B"}]}]);
    b.patch(&records_path(view), &patch).assert_status(200);
    assert_eq!(a.records(view)[0]["cells"][0]["value"], "patched via B");
    assert_eq!(b.records(view), a.records(view), "B reads A's records");
    assert_eq!(b.get(&format!("/v1/grids/{grid}")).assert_status(200)["id"], json!(grid));
    let views = b.get(&format!("/v1/views?gridId={grid}"));
    assert!(views.assert_status(200).as_array().is_some_and(|v| !v.is_empty()));
    let branches = b.get(&format!("/v1/branches?gridId={grid}"));
    assert_eq!(branches.header("gridd-served-by"), Some("node-a"));
    let made = b.post("/v1/views", &json!({"name": "second", "gridId": grid}));
    let second = made.assert_status(200)["id"].as_str().expect("a view id").to_owned();
    assert_eq!(made.header("gridd-served-by"), Some("node-a"));
    a.get(&format!("/v1/views/{second}")).assert_status(200);
    b.get(&format!("/v1/views/{second}/records")).assert_status(200);
    let res = a.post(
        &format!("/v1/views/{view}/columns"),
        &json!({"id": "n", "name": "N", "type": "number"}),
    );
    assert_eq!(res.header("gridd-served-by"), None, "A serves its own grid itself");
}

/// The median time of a small read served by A directly and through B (printed, not asserted:
/// the machine is shared).
fn forwarding_cost(a: &TestApp, b: &TestApp, view: &str) {
    let path = format!("{}/r1", records_path(view));
    let median = |app: &TestApp| {
        let mut times: Vec<Duration> = (0..50)
            .map(|_| {
                let started = Instant::now();
                app.get(&path).assert_status(200);
                started.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let (direct, forwarded) = (median(a), median(b));
    eprintln!("forward: one record read, median of 50: {direct:?} from A, {forwarded:?} through B");
}

/// Routes named by a body's field or a catalogue entry: a webhook (its columns are checked on
/// the view's owner) created through B lands on A; a share page through B is A's when B's
/// catalogue knows the link (replicated), else B's own 404.
fn catalogue_routes_that_need_the_grid(a: &TestApp, b: &TestApp, view: &str) {
    let hook = json!({"url": "http://127.0.0.1:9/hook", "viewId": view, "columnIds": ["title"]});
    let made = b.post("/v1/webhooks", &hook);
    let id = made.assert_status(201)["id"].as_str().expect("a hook id").to_owned();
    assert_eq!(made.header("gridd-served-by"), Some("node-a"));
    a.get(&format!("/v1/webhooks/{id}")).assert_status(200);
    a.delete(&format!("/v1/webhooks/{id}")).assert_status(204);
    let bad = json!({"url": "http://127.0.0.1:9/hook", "viewId": view, "columnIds": ["nope"]});
    let refused = b.post("/v1/webhooks", &bad);
    assert_eq!(refused.status / 100, 4, "{}", refused.text);
    assert_eq!(refused.header("gridd-served-by"), Some("node-a"));
    let share = b.put(&format!("/v1/views/{view}/shares"), &json!({}));
    let link = share.assert_status(200)["link"].as_str().expect("a link").to_owned();
    let token = link.rsplit('/').next().expect("a token");
    let page = b.call(reqwest::Method::GET, &format!("/share/{token}/records"), None, None);
    match page.status {
        200 => assert_eq!(page.header("gridd-served-by"), Some("node-a")),
        _ => page.assert_error(404, "shareIsNotFound"),
    }
}

fn large_bodies_stream_both_ways(a: &TestApp, b: &TestApp, view: &str) {
    let records: Vec<Value> = (0..1000)
        .map(|i| json!({"id": format!("big{i}"), "cells": [{"columnId": "title", "value": filler(i, 3000)}]}))
        .collect();
    let body = Value::Array(records);
    let sent = serde_json::to_vec(&body).expect("json").len();
    assert!(sent > 3_000_000, "{sent} bytes");
    let started = Instant::now();
    b.post(&records_path(view), &body).assert_status(201);
    let path = format!("{}?{}", records_path(view), page_query(0, 1000));
    let through_b = b.get(&path);
    let listed = through_b.assert_status(200).as_array().expect("records").len();
    assert_eq!(listed, 1000);
    assert!(through_b.bytes.len() > 3_000_000, "{} bytes back", through_b.bytes.len());
    assert_eq!(through_b.body, a.get(&path).body, "the same page as A's");
    eprintln!(
        "forward: {sent} bytes up and {} back through B in {:?}",
        through_b.bytes.len(),
        started.elapsed()
    );
}

fn a_change_feed_streams_through_b(a: &TestApp, b: &TestApp, view: &str) {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .expect("client");
    let mut feed = client
        .get(format!("{}/v1/views/{view}/changes?heartbeat=1", b.base))
        .header("Authorization", format!("ApiKey {OWNER_KEY}"))
        .send()
        .expect("the feed opens");
    assert_eq!(feed.status().as_u16(), 200);
    assert_eq!(feed.headers()["content-type"], "text/event-stream");
    let records = json!([{"id": "fed", "cells": [{"columnId": "title", "value": "live"}]}]);
    a.post(&records_path(view), &records).assert_status(201);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = String::new();
    let mut chunk = [0u8; 4096];
    while !seen.contains("\"fed\"") && Instant::now() < deadline {
        let n = feed.read(&mut chunk).expect("the feed goes on");
        assert!(n > 0, "the feed ended early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    assert!(seen.contains("event: records"), "{seen}");
}

fn unknown_and_refused_ids(b: &TestApp, view: &str) {
    b.get("/v1/views/nosuchview0000/records").assert_error(404, "viewIsNotFound");
    b.get("/v1/views/not.a.token").assert_error(404, "viewIsNotFound");
    let forwarded = b.send(
        b.request(reqwest::Method::GET, &records_path(view), Some(OWNER_KEY))
            .header("Gridd-Forwarded-By", "node-x"),
    );
    forwarded.assert_error(503, "serviceUnavailable");
    assert_eq!(forwarded.header("retry-after"), Some("1"));
    let too_big = vec![b' '; 33 * 1024 * 1024];
    let res = b.raw(reqwest::Method::POST, "/v1/views", "application/json", too_big);
    res.assert_error(413, "payloadTooLarge");
}

/// A grid deleted through B is a 404 through either node at once (B forgets where it was).
fn a_grid_deleted_through_b_is_gone(a: &TestApp, b: &TestApp) {
    let (grid, _) = grid_placed_on_a(a, "shortlived");
    b.get(&format!("/v1/grids/{grid}")).assert_status(200);
    let deleted = b.delete(&format!("/v1/grids/{grid}"));
    assert_eq!(deleted.status / 100, 2, "{}", deleted.text);
    assert_eq!(deleted.header("gridd-served-by"), Some("node-a"));
    b.get(&format!("/v1/grids/{grid}")).assert_error(404, "gridIsNotFound");
    a.get(&format!("/v1/grids/{grid}")).assert_error(404, "gridIsNotFound");
}

/// A client that sends part of its body and stalls: a 408 `requestTimeout` (B's deadline cuts
/// the forward; A gives a forwarded body twice as long, so that it never answers first and
/// breaks B's send), never a hang, and A wrote nothing.
fn a_stalled_body_is_a_408(a: &TestApp, b: &TestApp, view: &str) {
    let before = a.records(view).len();
    let addr = b.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connects");
    let body = r#"[{"id":"stalled","cells":[]}]"#;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: ApiKey {OWNER_KEY}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        records_path(view),
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("head sent");
    stream.write_all(&body.as_bytes()[..10]).expect("part of the body sent");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut answer = vec![0u8; 4096];
    let n = stream.read(&mut answer).expect("an answer before the read timeout");
    let text = String::from_utf8_lossy(&answer[..n]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("requestTimeout"), "{text}");
    assert_eq!(a.records(view).len(), before);
}

fn a_stopped_owner_is_a_503(a: TestApp, b: &TestApp, view: &str) {
    let _ = a.kill();
    let started = Instant::now();
    let res = b.get(&records_path(view));
    res.assert_error(503, "serviceUnavailable");
    assert_eq!(res.header("retry-after"), Some("1"));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // Asked again, nobody answers for the view: 503 while B's catalogue knows the grid (its
    // replication), else B's own 404.
    let again = b.get(&records_path(view));
    assert!(matches!(again.status, 503 | 404), "{} {}", again.status, again.text);
}
