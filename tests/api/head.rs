//! HEAD (RFC 9110 section 9.3.2): every GET route answers HEAD with the status and headers of
//! its GET answer and no body — a records listing, a file download, a streamed export,
//! `/healthz`, errors (404, 401); a path without GET answers 405 naming HEAD, and `Allow`
//! names HEAD wherever it names GET.

use reqwest::Method;
use serde_json::json;

use crate::files::upload;
use crate::helpers::{page_query, records_path, spawn_app, Resp, TestApp};

/// GET and HEAD of `path` with `key`: (GET's answer, HEAD's answer).
fn both(app: &TestApp, path: &str, key: Option<&str>) -> (Resp, Resp) {
    let get = app.send(app.request(Method::GET, path, key));
    let head = app.send(app.request(Method::HEAD, path, key));
    (get, head)
}

/// HEAD answered GET's status and headers (but `Date`, which may tick between them), and no
/// body.
#[track_caller]
fn assert_head_of(get: &Resp, head: &Resp) {
    assert_eq!(head.status, get.status, "HEAD answered {}, GET {}", head.status, get.status);
    assert!(head.bytes.is_empty(), "a HEAD answer has no body: {}", head.text);
    let names = |res: &Resp| {
        let mut names: Vec<String> =
            res.headers.keys().map(|n| n.as_str().to_owned()).filter(|n| n != "date").collect();
        names.sort();
        names
    };
    assert_eq!(names(head), names(get));
    for (name, value) in get.headers.iter().filter(|(n, _)| n.as_str() != "date") {
        assert_eq!(head.headers.get(name), Some(value), "{name}");
    }
}

#[test]
fn a_records_listing_answers_head_with_its_page_headers() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    let records: Vec<_> = (0..5)
        .map(|n| json!({"id": format!("k{n}"), "cells": [{"columnId": "en", "value": "x"}]}))
        .collect();
    app.add_records(&view, json!(records));
    let path = format!("{}?{}", records_path(&view), page_query(1, 2));
    let (get, head) = both(&app, &path, Some(&app.key));
    get.assert_status(200);
    assert_eq!(get.header("x-total-count"), Some("5"));
    assert!(get.header("link").is_some_and(|l| l.contains("rel=\"next\"")));
    assert!(get.header("content-length").is_some_and(|l| l != "0"), "{:?}", get.headers);
    assert_head_of(&get, &head);
}

#[test]
fn a_file_download_and_an_export_answer_head_without_their_bytes() {
    let app = spawn_app();
    let view = crate::files::grid(&app);
    let content = vec![7u8; 100_000];
    let res = upload(&app, &view, "menu.start", "shot one.png", &content);
    let id = res.assert_status(201)["id"].as_str().expect("file id").to_owned();
    let (get, head) = both(&app, &format!("/v1/views/{view}/files/{id}"), Some(&app.key));
    assert_eq!(get.bytes, content);
    assert_eq!(get.header("content-length"), Some("100000"));
    assert_head_of(&get, &head);

    let (get, head) = both(&app, &format!("/v1/views/{view}/export?type=json"), Some(&app.key));
    get.assert_status(200);
    assert_eq!(get.header("content-type"), Some("application/json"));
    assert_head_of(&get, &head);
}

#[test]
fn healthz_and_errors_answer_head() {
    let app = spawn_app();
    let (get, head) = both(&app, "/healthz", None);
    get.assert_status(200);
    assert_head_of(&get, &head);
    for (path, key, status) in [
        ("/v1/no/such/route", Some(app.key.as_str()), 404),
        ("/v1/views/nosuchview0001/records", Some(app.key.as_str()), 404),
        ("/v1/projects", None, 401),
    ] {
        let (get, head) = both(&app, path, key);
        get.assert_status(status);
        assert_eq!(get.header("content-type"), Some("application/json"));
        assert_head_of(&get, &head);
    }
}

/// A path served without GET refuses HEAD with 405, naming HEAD; `Allow` lists HEAD only
/// beside GET.
#[test]
fn head_of_a_path_without_get_is_405() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let path = format!("/v1/views/{view}/columns");
    let get = app.send(app.request(Method::GET, &path, Some(&app.key)));
    get.assert_error(405, "methodNotAllowed");
    assert_eq!(get.header("allow"), Some("POST"));
    let head = app.send(app.request(Method::HEAD, &path, Some(&app.key)));
    assert_eq!(head.status, 405);
    assert_eq!(head.header("allow"), Some("POST"));
    assert!(head.bytes.is_empty());
    let put = app.send(app.request(Method::PUT, "/v1/projects", Some(&app.key)));
    put.assert_error(405, "methodNotAllowed");
    assert_eq!(put.header("allow"), Some("GET, HEAD, POST"));
}
