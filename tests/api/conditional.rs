//! Conditional requests (issue 21): a record's and a view's `ETag`, `GET` of one record and of a
//! view with `If-None-Match` (304 while unchanged), record writes with `If-Match` (412
//! `preconditionFailed` when the record changed since, nothing written), per-record `ifMatch`
//! in bulk writes, and concurrent writers of one version (one wins).

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{find_record, records_path, spawn_app, Resp, TestApp};
use crate::records::{assert_refused, simple_grid, titled};

/// The `ETag` of an answer.
#[track_caller]
fn etag(res: &Resp) -> String {
    let tag = res.header("etag").unwrap_or_else(|| panic!("no ETag: {}", res.text));
    assert!(tag.starts_with('"') && tag.ends_with('"') && tag.len() > 2, "{tag}");
    tag.to_owned()
}

fn record_path(view: &str, id: &str) -> String {
    format!("/v1/views/{view}/records/{id}")
}

/// A request with one more header and an optional JSON body.
fn with_header(
    app: &TestApp,
    method: Method,
    path: &str,
    (name, value): (&str, &str),
    body: Option<&Value>,
) -> Resp {
    let mut req = app.request(method, path, Some(&app.key)).header(name, value);
    if let Some(body) = body {
        req = req.json(body);
    }
    app.send(req)
}

fn title(value: &str) -> Value {
    json!({"cells": [{"columnId": "title", "value": value}]})
}

#[test]
fn one_record_reads_with_its_etag_and_a_current_copy_is_not_sent_again() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned(), "r2".to_owned()]));
    let read = app.get(&record_path(&view, "r1"));
    read.assert_status(200);
    assert_eq!(&read.body, find_record(&app.records(&view), "r1"), "as the listing shows it");
    let first = etag(&read);
    app.add_records(&view, titled(["r3".to_owned()]));
    assert_ne!(first, etag(&app.get(&record_path(&view, "r3"))), "each write its own version");

    let same =
        with_header(&app, Method::GET, &record_path(&view, "r1"), ("If-None-Match", &first), None);
    assert_eq!(same.status, 304, "{}", same.text);
    assert!(same.bytes.is_empty());
    assert_eq!(etag(&same), first);

    let written = app.patch(&record_path(&view, "r1"), &title("changed"));
    written.assert_status(200);
    let second = etag(&written);
    assert_ne!(second, first, "a write gives a new version");
    let fresh =
        with_header(&app, Method::GET, &record_path(&view, "r1"), ("If-None-Match", &first), None);
    fresh.assert_status(200);
    assert_eq!(fresh.body["cells"][0]["value"], json!("changed"));
    assert_eq!(etag(&fresh), second, "the write's ETag is the record's");
    let unchanged = etag(&app.get(&record_path(&view, "r2")));
    let added = app.post(&records_path(&view), &titled(["r4".to_owned()]));
    added.assert_status(201);
    assert_eq!(etag(&added), etag(&app.get(&record_path(&view, "r4"))), "a one-record add");
    let bulk = app.post(&records_path(&view), &titled(["r5".to_owned(), "r6".to_owned()]));
    assert_eq!(bulk.header("etag"), None, "a tag names one record");

    let app = app.restart();
    assert_eq!(etag(&app.get(&record_path(&view, "r1"))), second, "versions survive a restart");
    assert_eq!(etag(&app.get(&record_path(&view, "r2"))), unchanged);
    app.get(&record_path(&view, "ghost")).assert_error(404, "nonexistentRecordId");
}

#[test]
fn a_write_with_a_stale_if_match_is_refused_and_changes_nothing() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned()]));
    let read = etag(&app.get(&record_path(&view, "r1")));
    let path = record_path(&view, "r1");
    let ok = with_header(&app, Method::PATCH, &path, ("If-Match", &read), Some(&title("mine")));
    ok.assert_status(200);
    let current = etag(&ok);

    let before = app.records(&view);
    let stale = with_header(&app, Method::PATCH, &path, ("If-Match", &read), Some(&title("lost")));
    assert_refused(&app, &view, &stale, 412, "preconditionFailed", &before);
    assert!(stale.body["message"].as_str().is_some_and(|m| m.contains("r1")), "{}", stale.text);

    let ids = json!({"ids": ["r1"]});
    let gone =
        with_header(&app, Method::DELETE, &records_path(&view), ("If-Match", &read), Some(&ids));
    assert_refused(&app, &view, &gone, 412, "preconditionFailed", &before);
    let any = with_header(
        &app,
        Method::PATCH,
        &record_path(&view, "ghost"),
        ("If-Match", "*"),
        Some(&title("x")),
    );
    assert_refused(&app, &view, &any, 412, "preconditionFailed", &before);
    for bad in ["17", "W/\"17\"", "\"a\", \"b\"", "\"x\""] {
        let res = with_header(&app, Method::PATCH, &path, ("If-Match", bad), Some(&title("x")));
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
    }
    let two = json!({"ids": ["r1", "r2"]});
    let res =
        with_header(&app, Method::DELETE, &records_path(&view), ("If-Match", &current), Some(&two));
    assert_refused(&app, &view, &res, 400, "badRequest", &before);

    let deleted =
        with_header(&app, Method::DELETE, &records_path(&view), ("If-Match", &current), Some(&ids));
    deleted.assert_status(204);
    assert!(app.records(&view).is_empty());
}

#[test]
fn bulk_writes_check_each_records_version() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned(), "r2".to_owned()]));
    let v1 = etag(&app.get(&record_path(&view, "r1")));
    let v2 = etag(&app.get(&record_path(&view, "r2")));
    let before = app.records(&view);
    let update = |second: &str| {
        json!([
            {"id": "r1", "ifMatch": v1, "cells": [{"columnId": "title", "value": "one"}]},
            {"id": "r2", "ifMatch": second, "cells": [{"columnId": "title", "value": "two"}]},
        ])
    };
    let no_id = json!([{"ifMatch": v1, "cells": [{"columnId": "title", "value": "x"}]}]);
    let res = app.patch(&records_path(&view), &no_id);
    assert_refused(&app, &view, &res, 400, "nullRecordId", &before);
    let stale = app.patch(&records_path(&view), &update("\"999999\""));
    assert_refused(&app, &view, &stale, 412, "preconditionFailed", &before);
    let bare = v2.trim_matches('"').to_owned();
    let res = app.patch(&records_path(&view), &update(&bare));
    res.assert_status(200);
    let after = app.records(&view);
    assert_eq!(find_record(&after, "r2")["cells"][0]["value"], json!("two"));

    let delete = json!({"identifiers": [{"id": "r1", "ifMatch": v1}, {"id": "r2"}]});
    let stale = app.delete_with(&records_path(&view), &delete);
    assert_refused(&app, &view, &stale, 412, "preconditionFailed", &after);
    let now = etag(&app.get(&record_path(&view, "r1")));
    let delete = json!({"identifiers": [{"id": "r1", "ifMatch": now}, {"id": "r2"}]});
    app.delete_with(&records_path(&view), &delete).assert_status(204);
    assert!(app.records(&view).is_empty());
}

#[test]
fn of_concurrent_writers_of_one_version_one_wins() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned()]));
    let read = etag(&app.get(&record_path(&view, "r1")));
    let url = format!("{}{}", app.base, record_path(&view, "r1"));
    let statuses: Vec<(u16, String)> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let (url, key, read) = (&url, &app.key, &read);
                scope.spawn(move || {
                    let client = reqwest::blocking::Client::new();
                    let res = client
                        .patch(url)
                        .header("Authorization", format!("ApiKey {key}"))
                        .header("If-Match", read)
                        .json(&title(&format!("writer {i}")))
                        .send()
                        .expect("sent");
                    (res.status().as_u16(), format!("writer {i}"))
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().expect("a writer")).collect()
    });
    let winners: Vec<_> = statuses.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!(winners.len(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|(s, _)| *s == 200 || *s == 412), "{statuses:?}");
    let record = app.get(&record_path(&view, "r1"));
    assert_eq!(record.body["cells"][0]["value"], json!(winners[0].1));
}

#[test]
fn a_view_answers_with_an_etag_and_304_while_unchanged() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let path = format!("/v1/views/{view}");
    let first = etag(&app.get(&path));
    let same = with_header(&app, Method::GET, &path, ("If-None-Match", &first), None);
    assert_eq!(same.status, 304, "{}", same.text);
    assert_eq!(etag(&same), first);
    let listed = format!("W/\"other\", {first}");
    assert_eq!(with_header(&app, Method::GET, &path, ("If-None-Match", &listed), None).status, 304);
    app.create_column(&view, json!({"id": "notes", "name": "Notes", "type": "multipleLines"}));
    let changed = with_header(&app, Method::GET, &path, ("If-None-Match", &first), None);
    changed.assert_status(200);
    assert_ne!(etag(&changed), first);
    assert!(changed.body["columns"].as_array().is_some_and(|c| c.len() == 2), "{}", changed.text);
}
