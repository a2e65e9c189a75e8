//! Large textual answers compressed when the client asks (`Accept-Encoding`, issue 18): zstd,
//! then brotli, then gzip; small answers, files and answers to clients that ask for none go out
//! as they are, and a request that accepts no codec is still answered (never 406).

use std::io::Read;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, Resp, TestApp};

/// A grid whose first page of 100 is well over the smallest compressed answer.
fn large_page(app: &TestApp) -> String {
    let (_, view) = app.create_grid("Compressed");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    let records: Vec<Value> = (0..100)
        .map(|i| json!({"id": format!("r{i}"), "cells": [{"columnId": "en", "value": format!("The file {i} could not be saved; try again later, please.")}]}))
        .collect();
    app.add_records(&view, Value::Array(records));
    view
}

fn get_accepting(app: &TestApp, path: &str, accept: &str) -> Resp {
    let req = app.request(Method::GET, path, Some(&app.key)).header("Accept-Encoding", accept);
    app.send(req)
}

#[test]
fn a_large_page_is_compressed_with_the_best_codec_the_client_accepts() {
    let app = spawn_app();
    let view = large_page(&app);
    let path = format!("/v1/views/{view}/records");
    let plain = app.get(&path);
    plain.assert_status(200);
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.header("vary"), Some("accept-encoding"));
    assert!(plain.bytes.len() > 8192, "{} bytes", plain.bytes.len());

    let gzip = get_accepting(&app, &path, "gzip, deflate");
    assert_eq!(gzip.status, 200);
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    assert_eq!(gzip.header("content-type"), Some("application/json"));
    assert_eq!(gzip.header("x-total-count"), Some("100"));
    assert!(gzip.bytes.len() * 4 < plain.bytes.len(), "{} bytes", gzip.bytes.len());
    // Compressed whole: sent with its length, not chunked.
    assert_eq!(gzip.header("content-length"), Some(gzip.bytes.len().to_string().as_str()));
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gzip.bytes[..]).read_to_end(&mut unzipped).expect("gzip");
    assert_eq!(unzipped, plain.bytes);

    let zstd = get_accepting(&app, &path, "gzip, deflate, br, zstd");
    assert_eq!(zstd.header("content-encoding"), Some("zstd"));
    assert_eq!(zstd::decode_all(&zstd.bytes[..]).expect("zstd"), plain.bytes);

    let brotli = get_accepting(&app, &path, "gzip;q=0.5, br");
    assert_eq!(brotli.header("content-encoding"), Some("br"));
    assert!(brotli.bytes.len() * 4 < plain.bytes.len());
}

#[test]
fn small_answers_files_and_refused_codecs_go_out_as_they_are() {
    let app = spawn_app();
    let view = large_page(&app);
    // A small answer: a view.
    let small = get_accepting(&app, &format!("/v1/views/{view}"), "gzip");
    small.assert_status(200);
    assert_eq!(small.header("content-encoding"), None);
    assert_eq!(small.header("vary"), None);
    // An error.
    let missing = get_accepting(&app, "/v1/views/nosuchview/records", "gzip");
    missing.assert_error(404, "viewIsNotFound");
    assert_eq!(missing.header("content-encoding"), None);
    // A large page to clients that accept none of the codecs, or refuse them all.
    let path = format!("/v1/views/{view}/records");
    for accept in ["identity", "gzip;q=0, br;q=0, zstd;q=0, *;q=0", "deflate", "nonsense;;q"] {
        let res = get_accepting(&app, &path, accept);
        assert_eq!(res.status, 200, "{accept}");
        assert_eq!(res.header("content-encoding"), None, "{accept}");
        assert_eq!(res.body.as_array().map(Vec::len), Some(100), "{accept}");
    }
    // An export is a file: never compressed.
    let export = get_accepting(&app, &format!("/v1/views/{view}/export"), "gzip");
    assert_eq!(export.status, 200);
    assert_eq!(export.header("content-encoding"), None);
    assert!(String::from_utf8_lossy(&export.bytes).contains("could not be saved"));
}

#[test]
fn a_large_uncompressed_answer_arrives_whole_with_its_length() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Large answers");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    // A bulk add of 800 records answers them all: several hundred KB of JSON.
    let records: Vec<Value> = (0..800)
        .map(|i| json!({"id": format!("r{i}"), "cells": [{"columnId": "en", "value": format!("Line {i}: the quick brown fox jumps over the lazy dog, Ünïcødé ✓ {}", "x".repeat(i % 300))}]}))
        .collect();
    let req = app
        .request(Method::POST, &format!("/v1/views/{view}/records"), Some(&app.key))
        .json(&Value::Array(records.clone()));
    let added = app.send(req);
    added.assert_status(201);
    assert!(added.bytes.len() > 200 * 1024, "{} bytes", added.bytes.len());
    assert_eq!(added.header("content-length"), Some(added.bytes.len().to_string().as_str()));
    assert_eq!(added.header("transfer-encoding"), None);
    let answered = added.body.as_array().expect("the added records");
    assert_eq!(answered.len(), 800);
    for (sent, got) in records.iter().zip(answered) {
        assert_eq!(got["id"], sent["id"]);
        assert_eq!(got["cells"][0]["value"], sent["cells"][0]["value"]);
    }
    // A page of the same 800 records, asked without compression, is whole too.
    let again = get_accepting(
        &app,
        &format!("/v1/views/{view}/records?page={{\"limit\":800}}"),
        "identity",
    );
    again.assert_status(200);
    assert_eq!(again.header("content-length"), Some(again.bytes.len().to_string().as_str()));
    assert_eq!(again.body.as_array().map(Vec::len), Some(800));
}
