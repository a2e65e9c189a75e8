//! The change feed (issue 21): `GET /v1/views/<id>/changes` as server-sent events, read over a
//! raw connection: changes in commit order with the view's columns only, deletes, resuming
//! after `Last-Event-ID` across a restart (nothing missed, nothing twice), `schema` events,
//! heartbeats, `resync` for a position ahead of the branch, and the key's access.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{records_path, spawn_app, TestApp};
use crate::records::{simple_grid, titled};

/// One event of the stream (comments are kept as events named `:`).
#[derive(Debug, Clone)]
struct Event {
    name: String,
    id: Option<u32>,
    data: Value,
}

/// A consumer: the connection, the decoded body so far and where its parsing stands.
struct Feed {
    stream: TcpStream,
    raw: Vec<u8>,
    body: String,
    status: u16,
}

impl Feed {
    fn open(app: &TestApp, path: &str, key: &str, last_event: Option<u32>) -> Feed {
        let addr = app.base.trim_start_matches("http://");
        let mut stream = TcpStream::connect(addr).expect("connects");
        let last = last_event.map_or(String::new(), |id| format!("Last-Event-ID: {id}\r\n"));
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: ApiKey {key}\r\n{last}\r\n"
        );
        stream.write_all(request.as_bytes()).expect("sent");
        let mut feed = Feed { stream, raw: Vec::new(), body: String::new(), status: 0 };
        let deadline = Instant::now() + Duration::from_secs(10);
        while feed.status == 0 && Instant::now() < deadline {
            feed.read_some(deadline);
            feed.decode();
        }
        feed
    }

    fn read_some(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        self.stream.set_read_timeout(Some(left)).expect("timeout");
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.raw.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// Moves the status line, then whole chunks of the chunked body, out of `raw`.
    fn decode(&mut self) {
        if self.status == 0 {
            let text = String::from_utf8_lossy(&self.raw).into_owned();
            let Some(end) = text.find("\r\n\r\n") else { return };
            self.status = text[9..12].parse().expect("a status");
            if self.status != 200 {
                self.body = text[end + 4..].to_owned();
                return;
            }
            self.raw.drain(..end + 4);
        }
        loop {
            let text = String::from_utf8_lossy(&self.raw).into_owned();
            let Some(line) = text.find("\r\n") else { return };
            let Ok(size) = usize::from_str_radix(text[..line].trim(), 16) else { return };
            if self.raw.len() < line + 2 + size + 2 {
                return;
            }
            let data = self.raw[line + 2..line + 2 + size].to_vec();
            self.body.push_str(&String::from_utf8(data).expect("UTF-8 events"));
            self.raw.drain(..line + 2 + size + 2);
        }
    }

    /// Takes the complete events received so far.
    fn take_events(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(end) = self.body.find("\n\n") {
            let block: String = self.body.drain(..end + 2).collect();
            let mut event = Event { name: String::new(), id: None, data: Value::Null };
            for line in block.lines() {
                if let Some(comment) = line.strip_prefix(':') {
                    event.name = ":".into();
                    event.data = json!(comment.trim());
                } else if let Some(name) = line.strip_prefix("event: ") {
                    event.name = name.into();
                } else if let Some(id) = line.strip_prefix("id: ") {
                    event.id = Some(id.parse().expect("a numeric id"));
                } else if let Some(data) = line.strip_prefix("data: ") {
                    event.data = serde_json::from_str(data).expect("JSON data");
                }
            }
            events.push(event);
        }
        events
    }

    /// Events (comments left out unless `comments`) until `done` holds for them or `timeout`.
    fn until(
        &mut self,
        timeout: Duration,
        comments: bool,
        done: impl Fn(&[Event]) -> bool,
    ) -> Vec<Event> {
        let deadline = Instant::now() + timeout;
        let mut events = Vec::new();
        loop {
            // What came with earlier reads first: it may hold every event waited for.
            self.decode();
            events.extend(self.take_events().into_iter().filter(|e| comments || e.name != ":"));
            if done(&events) || Instant::now() >= deadline {
                return events;
            }
            self.read_some(deadline);
        }
    }
}

/// The ids of the records of `records` events, in order.
fn record_ids(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.name == "records")
        .flat_map(|e| e.data["records"].as_array().cloned().unwrap_or_default())
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect()
}

fn changes_path(view: &str) -> String {
    format!("/v1/views/{view}/changes")
}

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn changes_come_in_commit_order_with_the_views_columns_only() {
    let app = spawn_app();
    let (grid, _) = simple_grid(&app);
    let view = app.post(
        "/v1/views",
        &json!({"name": "Titles", "gridId": grid, "columns": [{"id": "title"}]}),
    );
    let view = view.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let all = app.get(&format!("/v1/grids/{grid}")).body["defaultAccessViewId"].clone();
    let all = all.as_str().expect("the default view").to_owned();
    app.create_column(&all, json!({"id": "notes", "name": "Notes", "type": "multipleLines"}));
    let mut feed = Feed::open(&app, &changes_path(&view), &app.key, None);
    assert_eq!(feed.status, 200, "{}", feed.body);

    // A feed read after several commits shows their net effect (an update then a delete is a
    // delete): each step is waited for before the next.
    app.add_records(&view, titled(["r1".to_owned()]));
    let mut events = feed.until(WAIT, false, |e| !record_ids(e).is_empty());
    app.patch(
        &records_path(&all),
        &json!([{"id": "r1", "cells": [{"columnId": "notes", "value": "hidden"}]}]),
    )
    .assert_status(200);
    app.patch(
        &records_path(&view),
        &json!([{"id": "r1", "cells": [{"columnId": "title", "value": "T2"}]}]),
    )
    .assert_status(200);
    events.extend(feed.until(WAIT, false, |e| !record_ids(e).is_empty()));
    app.delete_with(&records_path(&view), &json!({"ids": ["r1"]})).assert_status(204);
    events.extend(feed.until(WAIT, false, |e| {
        e.iter().any(|e| e.data["deleted"].as_array().is_some_and(|d| !d.is_empty()))
    }));
    assert_eq!(record_ids(&events), ["r1", "r1"], "{events:?}");
    let ids: Vec<u32> = events.iter().filter_map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in commit order: {ids:?}");
    let second = &events[1].data["records"][0];
    assert_eq!(
        second["cells"].as_array().map(Vec::len),
        Some(1),
        "the view's columns only: {second}"
    );
    assert_eq!(second["cells"][0]["value"], json!("T2"));
    let last = events.last().expect("the delete");
    assert_eq!(last.data["deleted"], json!([{"id": "r1", "path": ""}]));

    app.create_column(&view, json!({"id": "shown", "name": "Shown", "type": "singleLine"}));
    app.add_records(&view, titled(["r2".to_owned()]));
    let events = feed.until(WAIT, false, |e| !record_ids(e).is_empty());
    let schema = events.iter().find(|e| e.name == "schema").expect("a schema event");
    assert_eq!(schema.data["columns"].as_array().map(Vec::len), Some(2), "{:?}", schema.data);
}

#[test]
fn a_consumer_resumes_after_its_last_event_across_a_restart() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["before".to_owned()]));
    let mut feed = Feed::open(&app, &changes_path(&view), &app.key, None);
    app.add_records(&view, titled(["r1".to_owned()]));
    let seen = feed.until(WAIT, false, |e| e.iter().any(|e| e.id.is_some()));
    assert_eq!(record_ids(&seen), ["r1"], "a feed starts now: {seen:?}");
    let last = seen.iter().filter_map(|e| e.id).next_back().expect("an id");
    drop(feed);

    app.add_records(&view, titled(["r2".to_owned()]));
    app.add_records(&view, titled(["r3".to_owned()]));
    let app = app.restart();
    app.add_records(&view, titled(["r4".to_owned()]));
    let mut feed = Feed::open(&app, &changes_path(&view), &app.key, Some(last));
    let events = feed.until(WAIT, false, |e| record_ids(e).len() >= 3);
    assert_eq!(record_ids(&events), ["r2", "r3", "r4"], "nothing missed, nothing twice");
    let again = Feed::open(&app, &format!("{}?after={last}", changes_path(&view)), &app.key, None)
        .until(WAIT, false, |e| record_ids(e).len() >= 3);
    assert_eq!(record_ids(&again), ["r2", "r3", "r4"], "?after= as Last-Event-ID");
}

#[test]
fn heartbeats_positions_and_keys() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let mut feed =
        Feed::open(&app, &format!("{}?heartbeat=1", changes_path(&view)), &app.key, None);
    let beats = feed.until(WAIT, true, |e| e.iter().filter(|e| e.name == ":").count() >= 2);
    let keep_alive = |e: &Event| e.name == ":" && e.data == json!("keep-alive");
    assert!(beats.iter().any(keep_alive), "a keep-alive comment after the opening one: {beats:?}");
    drop(feed);

    let mut ahead = Feed::open(&app, &changes_path(&view), &app.key, Some(4_000_000_000));
    let events = ahead.until(WAIT, false, |e| !e.is_empty());
    assert_eq!(events.first().map(|e| e.name.as_str()), Some("resync"), "{events:?}");
    app.add_records(&view, titled(["r1".to_owned()]));
    assert_eq!(record_ids(&ahead.until(WAIT, false, |e| !record_ids(e).is_empty())), ["r1"]);

    for bad in ["?after=soon", "?heartbeat=0", "?heartbeat=61"] {
        let res = app.get(&format!("{}{bad}", changes_path(&view)));
        res.assert_error(400, "badRequest");
    }
    app.get(&changes_path("nosuchview")).assert_error(404, "viewIsNotFound");
    let (_, other) = simple_grid(&app);
    let key = app.create_view_key(&other);
    let res = app.get_as(&key, &changes_path(&view));
    assert!(res.status == 403 || res.status == 404, "{} {}", res.status, res.text);
    let own = Feed::open(&app, &changes_path(&other), &key, None);
    assert_eq!(own.status, 200, "a view key follows its own view");
}

/// A feed of a deleted grid ends with a `closed` event (at its next heartbeat).
#[test]
fn a_feed_of_a_deleted_grid_is_closed() {
    let app = spawn_app();
    let (grid, view) = simple_grid(&app);
    let mut feed =
        Feed::open(&app, &format!("{}?heartbeat=1", changes_path(&view)), &app.key, None);
    assert_eq!(feed.status, 200);
    app.delete(&format!("/v1/grids/{grid}")).assert_status(204);
    let events = feed.until(WAIT, false, |e| e.iter().any(|e| e.name == "closed"));
    let closed = events.iter().find(|e| e.name == "closed").expect("a closed event");
    assert!(closed.data["reason"].as_str().is_some_and(|r| r.contains("deleted")), "{closed:?}");
}

/// A consumer that never reads (its keep-alives pile up) holds no other consumer back.
#[test]
fn a_consumer_that_does_not_read_holds_no_other_back() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let _stalled =
        Feed::open(&app, &format!("{}?heartbeat=1", changes_path(&view)), &app.key, None);
    std::thread::sleep(Duration::from_millis(1500));
    let mut reader = Feed::open(&app, &changes_path(&view), &app.key, Some(4_000_000_000));
    let resync = reader.until(WAIT, false, |e| !e.is_empty());
    assert_eq!(resync.first().map(|e| e.name.as_str()), Some("resync"));
    app.add_records(&view, titled(["r1".to_owned()]));
    let events = reader.until(WAIT, false, |e| !record_ids(e).is_empty());
    assert_eq!(record_ids(&events), ["r1"], "the reader is not held back by the stalled one");
}
