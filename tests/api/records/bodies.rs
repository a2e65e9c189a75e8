//! How record writes read their bodies (`SizedJson`: a buffer sized from `Content-Length`):
//! the same answers as every other JSON body for a wrong content type, a missing, malformed,
//! oversized, compressed, chunked or late body, and a refused body changes nothing.

use std::io::Write;

use reqwest::Method;
use serde_json::json;

use super::{assert_refused, simple_grid, titled};
use crate::helpers::{spawn_app, spawn_app_with};

/// The three record writes that read a JSON body.
fn writes(view: &str) -> [(Method, String); 3] {
    [
        (Method::POST, format!("/v1/views/{view}/records")),
        (Method::PATCH, format!("/v1/views/{view}/records")),
        (Method::PATCH, format!("/v1/views/{view}/records/r1")),
    ]
}

/// A body sent chunked: read from a reader, so without a `Content-Length`.
fn chunked(body: Vec<u8>) -> reqwest::blocking::Body {
    reqwest::blocking::Body::new(std::io::Cursor::new(body))
}

#[test]
fn record_writes_answer_bad_bodies_like_every_json_body_and_change_nothing() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned()]));
    let before = app.records(&view);
    for (method, path) in writes(&view) {
        for body in ["[", "[{\"id\": }]", "nul", "[] trailing", "\u{0}"] {
            let res = app.raw(method.clone(), &path, "application/json", body.as_bytes().to_vec());
            assert_refused(&app, &view, &res, 400, "badRequest", &before);
        }
        let res = app.raw(method.clone(), &path, "application/json", vec![0xff, 0xfe, 0x5b]);
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
        // Invalid UTF-8 inside a value of an otherwise well-formed body.
        let mut body = br#"[{"id": "r1", "cells": [{"columnId": "title", "value": "ab"#.to_vec();
        body.extend_from_slice(&[0xc3, 0x28]);
        body.extend_from_slice(br#""}]}]"#);
        let res = app.raw(method.clone(), &path, "application/json", body);
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
        for content_type in ["text/plain", "application/xml", "multipart/form-data; boundary=x"] {
            let res = app.raw(method.clone(), &path, content_type, b"[]".to_vec());
            assert_refused(&app, &view, &res, 415, "unsupportedMediaType", &before);
        }
        let res = app.call(method.clone(), &path, Some(&app.key), None);
        assert_refused(&app, &view, &res, 400, "requestBodyMissing", &before);
        let res = app.raw(method.clone(), &path, "application/json", Vec::new());
        assert_refused(&app, &view, &res, 400, "requestBodyMissing", &before);
    }
}

#[test]
fn a_record_write_over_the_body_limit_is_413_whether_its_length_is_announced_or_not() {
    let app = spawn_app_with(|config| config.max_json_bytes = 4096);
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned()]));
    let before = app.records(&view);
    let big = json!([{"id": "r2", "cells": [{"columnId": "title", "value": "y".repeat(8192)}]}]);
    for (method, path) in writes(&view) {
        let body = serde_json::to_vec(&big).expect("JSON");
        let res = app.raw(method.clone(), &path, "application/json", body.clone());
        assert_refused(&app, &view, &res, 413, "payloadTooLarge", &before);
        // Chunked: no length to refuse it by up front, so it is refused once past the limit.
        let req = app
            .request(method.clone(), &path, Some(&app.key))
            .header("Content-Type", "application/json")
            .body(chunked(body));
        let res = app.send(req);
        assert_refused(&app, &view, &res, 413, "payloadTooLarge", &before);
    }
    // Just under the limit goes through.
    let small = json!([{"id": "r2", "cells": [{"columnId": "title", "value": "y".repeat(3000)}]}]);
    app.post(&format!("/v1/views/{view}/records"), &small).assert_status(201);
}

#[test]
fn a_record_write_reads_charset_chunked_and_gzip_bodies() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let path = format!("/v1/views/{view}/records");
    let body = serde_json::to_vec(&titled(["a".to_owned()])).expect("JSON");
    let res = app.raw(Method::POST, &path, "application/json; charset=utf-8", body);
    assert_eq!(res.assert_status(201)[0]["id"], "a");

    let body = serde_json::to_vec(&titled(["b".to_owned()])).expect("JSON");
    let req = app
        .request(Method::POST, &path, Some(&app.key))
        .header("Content-Type", "application/json")
        .body(chunked(body));
    assert_eq!(app.send(req).assert_status(201)[0]["id"], "b");

    let body = serde_json::to_vec(&titled(["c".to_owned()])).expect("JSON");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&body).expect("compresses");
    let req = app
        .request(Method::POST, &path, Some(&app.key))
        .header("Content-Type", "application/json")
        .header("Content-Encoding", "gzip")
        .body(gz.finish().expect("compressed"));
    assert_eq!(app.send(req).assert_status(201)[0]["id"], "c");
    let ids: Vec<_> = app.records(&view).iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, [json!("a"), json!("b"), json!("c")]);
}

#[test]
fn a_record_write_whose_body_announces_more_than_it_sends_is_408_and_changes_nothing() {
    let app = spawn_app_with(|config| config.body_timeout_ms = 300);
    let (_, view) = simple_grid(&app);
    let before = app.records(&view);
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    // A length near the limit, and a few bytes of it.
    let head = format!(
        "POST /v1/views/{view}/records HTTP/1.1\r\nHost: x\r\nAuthorization: ApiKey {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n[{{\"id\"",
        app.key,
        30 << 20
    );
    stream.write_all(head.as_bytes()).expect("writes the head");
    let text = crate::helpers::read_answer(&mut stream, std::time::Duration::from_secs(5));
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"requestTimeout\""), "{text}");
    assert_eq!(app.records(&view), before);
}

/// A bulk write's usual body is read by the server's own reader, any other spelling by serde:
/// the same records either way, and the same answer to a body neither accepts.
#[test]
fn a_record_write_reads_its_records_alike_however_the_json_spells_them() {
    let app = spawn_app();
    let (_, view) = title_and_english_grid(&app);
    let path = format!("/v1/views/{view}/records");
    let usual = r#"[{"id": "a", "path": "ui", "cells": [{"columnId": "title", "value": "Say \"hi\"\n"},
        {"columnId": "lang", "value": "Grüße", "dependencyStatus": null, "sourceStatus": "unset"}]}]"#;
    // An escaped key, an unknown field and an object of a cell's own: only serde reads these.
    let other = r#"[{"id": "b", "path": "ui", "extra": {"k": [1]}, "cells": [{"col\u0075mnId": "title",
        "value": "Say \"hi\"\n", "note": {}}, {"columnId": "lang", "value": "Grüße",
        "dependencyStatus": null, "sourceStatus": "unset"}]}]"#;
    for body in [usual, other] {
        app.raw(Method::POST, &path, "application/json", body.as_bytes().to_vec())
            .assert_status(201);
    }
    let records = app.records(&view);
    let cells = |i: usize| records[i]["cells"].clone();
    assert_eq!(records.len(), 2);
    assert_eq!(cells(0), cells(1), "{records:?}");
    assert_eq!(cells(0)[0]["value"], "Say \"hi\"\n");
    let before = app.records(&view);
    let repeated = r#"[{"id": "c", "id": "d", "cells": []}]"#;
    let res = app.raw(Method::POST, &path, "application/json", repeated.as_bytes().to_vec());
    assert_refused(&app, &view, &res, 400, "badRequest", &before);
    assert!(res.text.contains("duplicate field `id`"), "{}", res.text);
}

/// A grid of a single-line `title` and an English `lang` column: (grid id, default view id).
fn title_and_english_grid(app: &crate::helpers::TestApp) -> (String, String) {
    let (grid, view) = simple_grid(app);
    app.create_column(
        &view,
        json!({"id": "lang", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    (grid, view)
}
