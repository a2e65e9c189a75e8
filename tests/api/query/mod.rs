//! Filtering and sorting record listings over HTTP: the `query` and `sort` parameters of
//! `GET /v1/views/<viewId>/records` (decisions.md section 6, module doc of `grid::query`).
//! Every operator on each column type that supports it, the predefined columns and the status
//! sub-fields (`operators`); case-insensitive matching of non-ASCII text (`case_folding`);
//! several conditions and sort keys, sort with query, paging, `Link` and `columnIds`
//! (`sorting`); every error code (`errors`); results that stay right after writes and column
//! changes (`after_writes`); larger grids against a model (`model`). This file holds the
//! helpers and fixtures they share.

use std::cmp::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{cell, follow, link, links, spawn_app, Resp, TestApp};

mod after_writes;
mod case_folding;
mod errors;
mod model;
mod operators;
mod sorting;

// ----- helpers -----

/// GETs the records of `view` with these listing parameters, URL-encoded.
fn fetch(app: &TestApp, view: &str, params: &[(&str, &str)]) -> Resp {
    let encoded = serde_urlencoded::to_string(params).expect("parameters encode");
    app.get(&format!("/v1/views/{view}/records?{encoded}"))
}

fn filtered(app: &TestApp, view: &str, query: &str) -> Resp {
    fetch(app, view, &[("query", query)])
}

fn sorted(app: &TestApp, view: &str, sort: &str) -> Resp {
    fetch(app, view, &[("sort", sort)])
}

/// A `page` parameter value.
fn page(offset: usize, limit: usize) -> String {
    format!("{{\"offset\":{offset},\"limit\":{limit}}}")
}

/// `{"<field>": {"<operator>": <value>}}`.
fn cond(field: &str, op: &str, value: &Value) -> String {
    format!("{{{}: {{{}: {value}}}}}", json!(field), json!(op))
}

fn ids(res: &Resp) -> Vec<String> {
    res.body
        .as_array()
        .unwrap_or_else(|| panic!("a list of records: {}", res.text))
        .iter()
        .map(|r| r["id"].as_str().expect("record id").to_owned())
        .collect()
}

fn total(res: &Resp) -> usize {
    res.header("x-total-count").and_then(|v| v.parse().ok()).expect("X-Total-Count")
}

/// Asserts a 200 listing with exactly these record ids, in order, and `X-Total-Count` `total`.
#[track_caller]
fn assert_page<S: AsRef<str>>(res: &Resp, expected: &[S], total_count: usize, context: &str) {
    assert_eq!(res.status, 200, "{context}: {}", res.text);
    let expected: Vec<&str> = expected.iter().map(AsRef::as_ref).collect();
    assert_eq!(ids(res), expected, "{context}");
    assert_eq!(total(res), total_count, "{context}: X-Total-Count");
}

/// Asserts a 200 listing of exactly these records, which are all the matches.
#[track_caller]
fn assert_all<S: AsRef<str>>(res: &Resp, expected: &[S], context: &str) {
    assert_page(res, expected, expected.len(), context);
}

/// Asserts a 400 with `code` whose message names every one of `parts`.
#[track_caller]
fn assert_refused(res: &Resp, code: &str, parts: &[&str], context: &str) {
    assert_eq!(res.status, 400, "{context}: {}", res.text);
    res.assert_error(400, code);
    let message = res.body["message"].as_str().expect("a message");
    for part in parts {
        assert!(message.contains(part), "{context}: message {message:?} does not name {part:?}");
    }
}

/// (field, operator, operand, ids of the matching records in insertion order).
type Case = (&'static str, &'static str, Value, &'static [&'static str]);

/// Runs each case alone (the first filter, which may use an index) and ANDed after a condition
/// every record passes (the case is then tested row by row on the candidates left), asserting
/// the ids and `X-Total-Count` both times.
#[track_caller]
fn check(app: &TestApp, view: &str, cases: &[Case]) {
    for (field, op, value, expected) in cases {
        let single = cond(field, op, value);
        assert_all(&filtered(app, view, &single), expected, &single);
        let companion =
            if *field == "_lastModifiedTime" { "_recordId" } else { "_lastModifiedTime" };
        let both = format!("{{\"{companion}\": {{\"isNotEmpty\": null}}, {}", &single[1..]);
        assert_all(&filtered(app, view, &both), expected, &both);
    }
}

/// Runs each sort (a hand-written JSON object, so its key order is explicit) and asserts the
/// order of every record.
#[track_caller]
fn check_sorts(app: &TestApp, view: &str, sorts: &[(&str, &[&str])]) {
    for (sort, expected) in sorts {
        assert_all(&sorted(app, view, sort), expected, sort);
    }
}

/// The decoded query-string parameters of a URL.
fn params_of(url: &str) -> Vec<(String, String)> {
    let (_, query) = url.split_once('?').expect("a query string");
    serde_urlencoded::from_str(query).expect("the query string decodes")
}

/// The value of parameter `name` in a URL.
fn param(url: &str, name: &str) -> Option<String> {
    params_of(url).into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn options(values: &[&str]) -> Value {
    json!({"options": values.iter().map(|v| json!({"value": v})).collect::<Vec<_>>()})
}

/// A grid with singleLine `title`, number `num`, datetime `due`, boolean `done`,
/// singleSelection `kind` and multipleSelections `tags`, and five records (r3 is all empty):
///
/// | id | path | title | num | due | done | kind | tags |
/// |---|---|---|---|---|---|---|---|
/// | r1 | docs/a | Apple pie | 9 | 2026-01-31 | true | bug | x, y |
/// | r2 | docs/b | banana | 10 | 2025-12-31T23:30Z | false | task | y |
/// | r3 | | | | | | | |
/// | r4 | src/c | Cherry apple | -2.5 | 2026-03-01T12:00Z | true | idea | z, x |
/// | r5 | src | apple | 100 | 2024-02-29 | false | bug | x |
fn typed_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Typed");
    for column in [
        json!({"id": "title", "name": "Title", "type": "singleLine"}),
        json!({"id": "num", "name": "Number", "type": "number"}),
        json!({"id": "due", "name": "Due", "type": "datetime"}),
        json!({"id": "done", "name": "Done", "type": "boolean"}),
        json!({"id": "kind", "name": "Kind", "type": "singleSelection",
               "selection": options(&["bug", "task", "idea"])}),
        json!({"id": "tags", "name": "Tags", "type": "multipleSelections",
               "selection": options(&["x", "y", "z"])}),
    ] {
        app.create_column(&view, column);
    }
    let record = |id: &str,
                  path: &str,
                  title: &str,
                  num: Value,
                  due: &str,
                  done: bool,
                  kind: &str,
                  tags: Value| {
        json!({"id": id, "path": path, "cells": [
            {"columnId": "title", "value": title}, {"columnId": "num", "value": num},
            {"columnId": "due", "value": due}, {"columnId": "done", "value": done},
            {"columnId": "kind", "value": kind}, {"columnId": "tags", "value": tags}]})
    };
    app.add_records(
        &view,
        json!([
            record("r1", "docs/a", "Apple pie", json!(9), "2026-01-31", true, "bug", json!(["x", "y"])),
            record("r2", "docs/b", "banana", json!(10), "2025-12-31T23:30:00Z", false, "task",
                   json!(["y"])),
            {"id": "r3"},
            record("r4", "src/c", "Cherry apple", json!(-2.5), "2026-03-01T12:00:00Z", true, "idea",
                   json!(["z", "x"])),
            record("r5", "src", "apple", json!(100), "2024-02-29", false, "bug", json!(["x"])),
        ]),
    );
    (grid, view)
}

/// Records with the given ids and a `title` cell each.
fn titled(records: &[(&str, &str)]) -> Value {
    records
        .iter()
        .map(|(id, title)| json!({"id": id, "cells": [{"columnId": "title", "value": title}]}))
        .collect()
}

/// A grid with one singleLine column `title`: (grid id, view id).
fn title_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Titles");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    (grid, view)
}
