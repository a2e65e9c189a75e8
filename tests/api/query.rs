//! Filtering and sorting record listings over HTTP: the `query` and `sort` parameters of
//! `GET /v1/views/<viewId>/records` (decisions.md section 6, module doc of `grid::query`).
//! Every operator on each column type that supports it, the predefined columns and the status
//! sub-fields; case-insensitive matching of non-ASCII text; several conditions and sort keys;
//! sort with query, paging, `Link` and `columnIds`; every error code; and results that stay
//! right after writes and column changes (the engine's indexes are maintained).

use std::cmp::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{cell, follow, link, links, spawn_app, Resp, TestApp};

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

// ----- operators per column type -----

#[test]
fn text_operators_on_a_single_line_column() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("title", "=", json!("apple"), &["r5"]),
            ("title", "=", json!("Apple"), &[]),
            ("title", "=", json!(""), &["r3"]),
            ("title", "!=", json!("apple"), &["r1", "r2", "r3", "r4"]),
            ("title", "!=", json!(""), &["r1", "r2", "r4", "r5"]),
            ("title", "contains", json!("APPLE"), &["r1", "r4", "r5"]),
            ("title", "contains", json!("an"), &["r2"]),
            ("title", "notContains", json!("aPPle"), &["r2", "r3"]),
            ("title", "startsWith", json!("apple"), &["r1", "r5"]),
            ("title", "notStartsWith", json!("APP"), &["r2", "r3", "r4"]),
            ("title", "endsWith", json!("APPLE"), &["r4", "r5"]),
            ("title", "notEndsWith", json!("E"), &["r2", "r3"]),
            ("title", "regexp", json!("^[A-Z]"), &["r1", "r4"]),
            ("title", "regexp", json!("apple"), &["r4", "r5"]),
            ("title", "regexp", json!("(?i)^apple"), &["r1", "r5"]),
            ("title", "regexp", json!("^$"), &["r3"]),
            ("title", "notRegexp", json!("^[A-Z]"), &["r2", "r3", "r5"]),
            ("title", "in", json!(["apple", "banana", "nope"]), &["r2", "r5"]),
            ("title", "in", json!(["", "apple"]), &["r3", "r5"]),
            ("title", "notIn", json!(["apple", "banana"]), &["r1", "r3", "r4"]),
            ("title", "isEmpty", Value::Null, &["r3"]),
            ("title", "isNull", json!(true), &["r3"]),
            ("title", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("title", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn number_operators_compare_numerically() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("num", "=", json!(10), &["r2"]),
            ("num", "=", json!("10"), &["r2"]),
            ("num", "=", json!(9.0), &["r1"]),
            ("num", "=", json!(-2.5), &["r4"]),
            ("num", "!=", json!(10), &["r1", "r3", "r4", "r5"]),
            ("num", "<", json!(10), &["r1", "r4"]),
            ("num", "<=", json!(10), &["r1", "r2", "r4"]),
            ("num", ">", json!(9), &["r2", "r5"]),
            ("num", ">=", json!("9"), &["r1", "r2", "r5"]),
            ("num", ">", json!(-100), &["r1", "r2", "r4", "r5"]),
            ("num", "between", json!([9, 10]), &["r1", "r2"]),
            ("num", "between", json!(["-3", 9]), &["r1", "r4"]),
            ("num", "between", json!([10, 9]), &[]),
            ("num", "notBetween", json!([9, 10]), &["r3", "r4", "r5"]),
            ("num", "in", json!([100, 9, 7]), &["r1", "r5"]),
            ("num", "notIn", json!([100, "9"]), &["r2", "r3", "r4"]),
            ("num", "isEmpty", Value::Null, &["r3"]),
            ("num", "isNull", Value::Null, &["r3"]),
            ("num", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("num", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn datetime_operators_compare_chronologically() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("due", "=", json!("2026-01-31"), &["r1"]),
            ("due", "=", json!("2026-01-31T01:00:00+01:00"), &["r1"]),
            ("due", "=", json!(1_769_817_600_000_i64), &["r1"]),
            ("due", "!=", json!("2026-01-31T00:00:00.000Z"), &["r2", "r3", "r4", "r5"]),
            ("due", "<", json!("2026-01-01"), &["r2", "r5"]),
            ("due", "<=", json!("2025-12-31T23:30:00Z"), &["r2", "r5"]),
            ("due", "<", json!("2025-12-31T23:30:00Z"), &["r5"]),
            ("due", ">", json!("2026-01-31"), &["r4"]),
            ("due", ">=", json!("2026-01-31"), &["r1", "r4"]),
            ("due", ">", json!("2026-01-01T00:29:59-05:00"), &["r1", "r4"]),
            ("due", "between", json!(["2025-01-01", "2026-01-31"]), &["r1", "r2"]),
            ("due", "notBetween", json!(["2025-01-01", "2026-01-31"]), &["r3", "r4", "r5"]),
            ("due", "in", json!(["2024-02-29", "2026-03-01T12:00:00.000Z"]), &["r4", "r5"]),
            (
                "due",
                "notIn",
                json!(["2024-02-29", "2026-03-01T12:00:00.000Z"]),
                &["r1", "r2", "r3"],
            ),
            ("due", "isEmpty", Value::Null, &["r3"]),
            ("due", "isNull", Value::Null, &["r3"]),
            ("due", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("due", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn boolean_operators() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("done", "=", json!(true), &["r1", "r4"]),
            ("done", "=", json!("false"), &["r2", "r5"]),
            ("done", "!=", json!(true), &["r2", "r3", "r5"]),
            ("done", "!=", json!("false"), &["r1", "r3", "r4"]),
            ("done", "in", json!([true, false]), &["r1", "r2", "r4", "r5"]),
            ("done", "in", json!(["true"]), &["r1", "r4"]),
            ("done", "notIn", json!([false]), &["r1", "r3", "r4"]),
            ("done", "isEmpty", Value::Null, &["r3"]),
            ("done", "isNull", Value::Null, &["r3"]),
            ("done", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("done", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn selection_operators_on_single_and_multiple_selections() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("kind", "=", json!("bug"), &["r1", "r5"]),
            ("kind", "=", json!("Bug"), &[]),
            ("kind", "=", json!(""), &["r3"]),
            ("kind", "!=", json!("bug"), &["r2", "r3", "r4"]),
            ("kind", "in", json!(["task", "idea"]), &["r2", "r4"]),
            ("kind", "notIn", json!(["task", "idea"]), &["r1", "r3", "r5"]),
            ("kind", "isEmpty", Value::Null, &["r3"]),
            ("kind", "isNull", Value::Null, &["r3"]),
            ("kind", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("kind", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
            // A list matches an item when any of its items does, an array when it is exactly
            // those items in that order.
            ("tags", "=", json!("x"), &["r1", "r4", "r5"]),
            ("tags", "=", json!("z"), &["r4"]),
            ("tags", "=", json!(["x", "y"]), &["r1"]),
            ("tags", "=", json!(["y", "x"]), &[]),
            ("tags", "=", json!(["x"]), &["r5"]),
            ("tags", "!=", json!("x"), &["r2", "r3"]),
            ("tags", "!=", json!(["x"]), &["r1", "r2", "r3", "r4"]),
            ("tags", "in", json!(["z", "y"]), &["r1", "r2", "r4"]),
            ("tags", "notIn", json!(["z", "y"]), &["r3", "r5"]),
            ("tags", "isEmpty", Value::Null, &["r3"]),
            ("tags", "isNull", Value::Null, &["r3"]),
            ("tags", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("tags", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn record_id_and_path_operators() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("_recordId", "=", json!("r2"), &["r2"]),
            ("_recordId", "=", json!("R2"), &[]),
            ("_recordId", "!=", json!("r2"), &["r1", "r3", "r4", "r5"]),
            ("_recordId", "contains", json!("R"), &["r1", "r2", "r3", "r4", "r5"]),
            ("_recordId", "notContains", json!("3"), &["r1", "r2", "r4", "r5"]),
            ("_recordId", "startsWith", json!("R1"), &["r1"]),
            ("_recordId", "notStartsWith", json!("r"), &[]),
            ("_recordId", "endsWith", json!("5"), &["r5"]),
            ("_recordId", "notEndsWith", json!("5"), &["r1", "r2", "r3", "r4"]),
            ("_recordId", "regexp", json!("^r[12]$"), &["r1", "r2"]),
            ("_recordId", "regexp", json!("^R"), &[]),
            ("_recordId", "regexp", json!("(?i)^R[45]"), &["r4", "r5"]),
            ("_recordId", "notRegexp", json!("[12]"), &["r3", "r4", "r5"]),
            ("_recordId", "in", json!(["r4", "r1", "zz"]), &["r1", "r4"]),
            ("_recordId", "notIn", json!(["r4", "r1"]), &["r2", "r3", "r5"]),
            ("_recordId", "isEmpty", Value::Null, &[]),
            ("_recordId", "isNull", Value::Null, &[]),
            ("_recordId", "isNotEmpty", Value::Null, &["r1", "r2", "r3", "r4", "r5"]),
            ("_recordId", "isNotNull", Value::Null, &["r1", "r2", "r3", "r4", "r5"]),
            ("_path", "=", json!("src"), &["r5"]),
            ("_path", "=", json!(""), &["r3"]),
            ("_path", "!=", json!("src"), &["r1", "r2", "r3", "r4"]),
            ("_path", "contains", json!("DOCS/"), &["r1", "r2"]),
            ("_path", "notContains", json!("docs"), &["r3", "r4", "r5"]),
            ("_path", "startsWith", json!("SRC"), &["r4", "r5"]),
            ("_path", "notStartsWith", json!("src"), &["r1", "r2", "r3"]),
            ("_path", "endsWith", json!("/A"), &["r1"]),
            ("_path", "notEndsWith", json!("c"), &["r1", "r2", "r3"]),
            ("_path", "in", json!(["src", "docs/b"]), &["r2", "r5"]),
            ("_path", "notIn", json!(["src", "docs/b"]), &["r1", "r3", "r4"]),
            ("_path", "isEmpty", Value::Null, &["r3"]),
            ("_path", "isNull", Value::Null, &["r3"]),
            ("_path", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("_path", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn last_modified_time_and_by_filter_sort_and_follow_updates() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    let alice = app.create_user_key("alice");
    let bob = app.create_user_key("bob");
    let records = format!("/v1/views/{view}/records");
    let add_as = |key: &str, rows: &[(&str, &str)]| -> Vec<Value> {
        let res = app.post_as(key, &records, &titled(rows));
        res.assert_status(201).as_array().expect("a list").clone()
    };
    let time = |record: &Value| record["lastModifiedTime"].as_str().expect("a time").to_owned();
    let pause = || std::thread::sleep(Duration::from_millis(15));
    let first = add_as(&alice, &[("a1", "one"), ("a2", "two")]);
    pause();
    let second = add_as(&bob, &[("b1", "three")]);
    pause();
    let third = add_as(&app.key, &[("o1", "four")]);
    let (t1, t2, t3) = (time(&first[0]), time(&second[0]), time(&third[0]));
    assert_eq!(time(&first[1]), t1, "one write, one time");
    assert!(t1 < t2 && t2 < t3, "{t1} {t2} {t3}");
    let owner = third[0]["lastModifiedBy"].as_str().expect("a user").to_owned();
    let owner_lower = owner.to_lowercase();
    assert!(
        !owner.is_empty()
            && !owner_lower.contains("lic")
            && !owner_lower.starts_with('b')
            && !owner_lower.ends_with("ob"),
        "the owner's user {owner:?} would match the alice/bob cases"
    );
    let t2_ms = chrono::DateTime::parse_from_rfc3339(&t2).expect("RFC 3339").timestamp_millis();
    let all: &[&str] = &["a1", "a2", "b1", "o1"];
    check(
        &app,
        &view,
        &[
            ("_lastModifiedTime", "=", json!(t2), &["b1"]),
            ("_lastModifiedTime", "=", json!(t2_ms), &["b1"]),
            ("_lastModifiedTime", "!=", json!(t1), &["b1", "o1"]),
            ("_lastModifiedTime", "<", json!(t2), &["a1", "a2"]),
            ("_lastModifiedTime", "<=", json!(t2), &["a1", "a2", "b1"]),
            ("_lastModifiedTime", ">", json!(t2), &["o1"]),
            ("_lastModifiedTime", ">=", json!(t2), &["b1", "o1"]),
            ("_lastModifiedTime", ">", json!("2000-01-01"), all),
            ("_lastModifiedTime", "between", json!([t1, t2]), &["a1", "a2", "b1"]),
            ("_lastModifiedTime", "notBetween", json!([t1, t2]), &["o1"]),
            ("_lastModifiedTime", "in", json!([t1, t3]), &["a1", "a2", "o1"]),
            ("_lastModifiedTime", "notIn", json!([t1, t3]), &["b1"]),
            ("_lastModifiedTime", "isEmpty", Value::Null, &[]),
            ("_lastModifiedTime", "isNull", Value::Null, &[]),
            ("_lastModifiedTime", "isNotEmpty", Value::Null, all),
            ("_lastModifiedTime", "isNotNull", Value::Null, all),
            ("_lastModifiedBy", "=", json!("alice"), &["a1", "a2"]),
            ("_lastModifiedBy", "=", json!(owner), &["o1"]),
            ("_lastModifiedBy", "!=", json!("alice"), &["b1", "o1"]),
            ("_lastModifiedBy", "contains", json!("LIC"), &["a1", "a2"]),
            ("_lastModifiedBy", "notContains", json!("LIC"), &["b1", "o1"]),
            ("_lastModifiedBy", "startsWith", json!("B"), &["b1"]),
            ("_lastModifiedBy", "notStartsWith", json!("b"), &["a1", "a2", "o1"]),
            ("_lastModifiedBy", "endsWith", json!("OB"), &["b1"]),
            ("_lastModifiedBy", "notEndsWith", json!("ob"), &["a1", "a2", "o1"]),
            ("_lastModifiedBy", "regexp", json!("^(alice|bob)$"), &["a1", "a2", "b1"]),
            ("_lastModifiedBy", "regexp", json!("^ALICE$"), &[]),
            ("_lastModifiedBy", "regexp", json!("(?i)^ALICE$"), &["a1", "a2"]),
            ("_lastModifiedBy", "notRegexp", json!("^(alice|bob)$"), &["o1"]),
            ("_lastModifiedBy", "in", json!(["bob", owner]), &["b1", "o1"]),
            ("_lastModifiedBy", "notIn", json!(["bob"]), &["a1", "a2", "o1"]),
            ("_lastModifiedBy", "isEmpty", Value::Null, &[]),
            ("_lastModifiedBy", "isNotEmpty", Value::Null, all),
            ("_lastModifiedBy", "isNull", Value::Null, &[]),
            ("_lastModifiedBy", "isNotNull", Value::Null, all),
        ],
    );
    let mut by_user: Vec<(&str, &str)> =
        vec![("a1", "alice"), ("a2", "alice"), ("b1", "bob"), ("o1", &owner)];
    by_user.sort_by(|a, b| b.1.cmp(a.1).then(b.0.cmp(a.0)));
    let by_user: Vec<&str> = by_user.iter().map(|(id, _)| *id).collect();
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"_lastModifiedTime": "desc"}"#, &["o1", "b1", "a1", "a2"]),
            (r#"{"_lastModifiedTime": "asc"}"#, &["a1", "a2", "b1", "o1"]),
            (r#"{"_lastModifiedTime": "asc", "_recordId": "desc"}"#, &["a2", "a1", "b1", "o1"]),
            (r#"{"_lastModifiedBy": "desc", "_recordId": "desc"}"#, &by_user),
        ],
    );

    // Bob edits a1 later: it moves to the front by time and is now bob's.
    pause();
    let res = app.patch_as(
        &bob,
        &records,
        &json!([{"id": "a1", "cells": [{"columnId": "title", "value": "edited"}]}]),
    );
    let t4 = time(&res.assert_status(200)[0]);
    assert!(t4 > t3, "{t4} {t3}");
    check_sorts(&app, &view, &[(r#"{"_lastModifiedTime": "desc"}"#, &["a1", "o1", "b1", "a2"])]);
    check(
        &app,
        &view,
        &[
            ("_lastModifiedTime", ">", json!(t3), &["a1"]),
            ("_lastModifiedTime", "=", json!(t1), &["a2"]),
            ("_lastModifiedBy", "=", json!("bob"), &["a1", "b1"]),
            ("_lastModifiedBy", "startsWith", json!("ALI"), &["a2"]),
        ],
    );
}

/// A grid with source language `en`, target `fr` depending on it and a singleLine `note`, and
/// records s1..s5; after the writes below:
///
/// | id | en | fr | fr dependency status | en source status |
/// |---|---|---|---|---|
/// | s1 | Hello there | Bonjour le monde | outOfDate (its source changed) | unset |
/// | s2 | Goodbye | Au revoir | upToDate (translated after) | unset |
/// | s3 | | Salut | upToDate | unset |
/// | s4 | Straße | Rue | upToDate | readyForTranslation |
/// | s5 | | | unset | unset |
#[test]
fn language_columns_and_status_sub_fields() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Strings");
    for column in [
        json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS",
               "localizationType": "sourceLanguage"}),
        json!({"id": "fr", "name": "French", "type": "language", "languageCode": "frFR",
               "localizationType": "targetLanguage"}),
        json!({"id": "note", "name": "Note", "type": "singleLine"}),
    ] {
        app.create_column(&view, column);
    }
    let res = app.post(
        &format!("/v1/views/{view}/dependencies"),
        &json!({"sourceColumnId": "en", "targetColumnId": "fr"}),
    );
    let dependency = res.assert_status(201)["id"].as_str().expect("dependency id").to_owned();
    let text = |column: &str, value: &str| json!({"columnId": column, "value": value});
    app.add_records(
        &view,
        json!([
            {"id": "s1", "cells": [text("en", "Hello world"), text("fr", "Bonjour le monde")]},
            {"id": "s2", "cells": [text("en", "Goodbye")]},
            {"id": "s3", "cells": [text("fr", "Salut")]},
            {"id": "s4", "cells": [{"columnId": "en", "value": "Straße",
                                    "sourceStatus": "readyForTranslation"}, text("fr", "Rue")]},
            {"id": "s5", "cells": [text("note", "n")]},
        ]),
    );
    let dep_out = cond("fr._dependencyStatus", "=", &json!("outOfDate"));
    assert_all(&filtered(&app, &view, &dep_out), &["s2"], "only s2 lacks its translation");
    let update = |id: &str, cells: Value| {
        app.patch(&format!("/v1/views/{view}/records"), &json!([{"id": id, "cells": cells}]))
            .assert_status(200);
    };
    update("s1", json!([text("en", "Hello there")]));
    assert_all(&filtered(&app, &view, &dep_out), &["s1", "s2"], "s1's source changed");
    update("s2", json!([text("fr", "Au revoir")]));
    assert_all(&filtered(&app, &view, &dep_out), &["s1"], "s2 was translated");

    // The status filters agree with the statuses the listing shows.
    let res = filtered(&app, &view, &cond("fr._dependencyStatus", "=", &json!("upToDate")));
    for record in res.body.as_array().expect("a list") {
        assert_eq!(cell(record, "fr")["dependencyStatus"], "upToDate", "{record}");
    }
    check(
        &app,
        &view,
        &[
            ("fr._dependencyStatus", "=", json!("outOfDate"), &["s1"]),
            ("fr._dependencyStatus", "=", json!("upToDate"), &["s2", "s3", "s4"]),
            ("fr._dependencyStatus", "=", json!("unset"), &["s5"]),
            ("fr._dependencyStatus", "!=", json!("upToDate"), &["s1", "s5"]),
            ("fr._dependencyStatus", "in", json!(["outOfDate", "unset"]), &["s1", "s5"]),
            ("fr._dependencyStatus", "notIn", json!(["outOfDate", "unset"]), &["s2", "s3", "s4"]),
            ("en._dependencyStatus", "=", json!("unset"), &["s1", "s2", "s3", "s4", "s5"]),
            ("en._sourceStatus", "=", json!("readyForTranslation"), &["s4"]),
            ("en._sourceStatus", "!=", json!("readyForTranslation"), &["s1", "s2", "s3", "s5"]),
            ("en._sourceStatus", "in", json!(["locked", "readyForTranslation"]), &["s4"]),
            ("en._sourceStatus", "notIn", json!(["unset"]), &["s4"]),
            ("fr._sourceStatus", "=", json!("unset"), &["s1", "s2", "s3", "s4", "s5"]),
            // Text operators on the source language column.
            ("en", "=", json!("Goodbye"), &["s2"]),
            ("en", "=", json!("goodbye"), &[]),
            ("en", "!=", json!("Goodbye"), &["s1", "s3", "s4", "s5"]),
            ("en", "contains", json!("E"), &["s1", "s2", "s4"]),
            ("en", "notContains", json!("e"), &["s3", "s5"]),
            ("en", "startsWith", json!("STRA"), &["s4"]),
            ("en", "notStartsWith", json!("h"), &["s2", "s3", "s4", "s5"]),
            ("en", "endsWith", json!("BYE"), &["s2"]),
            ("en", "endsWith", json!("\u{1e9e}E"), &["s4"]),
            ("en", "notEndsWith", json!("BYE"), &["s1", "s3", "s4", "s5"]),
            ("en", "regexp", json!("^H"), &["s1"]),
            ("en", "regexp", json!("^h"), &[]),
            ("en", "regexp", json!("(?i)^h"), &["s1"]),
            ("en", "notRegexp", json!("o"), &["s3", "s4", "s5"]),
            ("en", "in", json!(["Goodbye", "Straße"]), &["s2", "s4"]),
            ("en", "notIn", json!(["Goodbye", "Straße"]), &["s1", "s3", "s5"]),
            ("en", "isEmpty", Value::Null, &["s3", "s5"]),
            ("en", "isNull", Value::Null, &["s3", "s5"]),
            ("en", "isNotEmpty", Value::Null, &["s1", "s2", "s4"]),
            ("en", "isNotNull", Value::Null, &["s1", "s2", "s4"]),
            // Text operators on the target language column.
            ("fr", "=", json!("Rue"), &["s4"]),
            ("fr", "!=", json!("Rue"), &["s1", "s2", "s3", "s5"]),
            ("fr", "contains", json!("OU"), &["s1"]),
            ("fr", "contains", json!("R"), &["s1", "s2", "s4"]),
            ("fr", "notContains", json!("r"), &["s3", "s5"]),
            ("fr", "startsWith", json!("sa"), &["s3"]),
            ("fr", "notStartsWith", json!("SA"), &["s1", "s2", "s4", "s5"]),
            ("fr", "endsWith", json!("E"), &["s1", "s4"]),
            ("fr", "notEndsWith", json!("e"), &["s2", "s3", "s5"]),
            ("fr", "regexp", json!("^[A-Z][a-z]+$"), &["s3", "s4"]),
            ("fr", "notRegexp", json!("^[A-Z][a-z]+$"), &["s1", "s2", "s5"]),
            ("fr", "in", json!(["Salut", "Rue", "nope"]), &["s3", "s4"]),
            ("fr", "notIn", json!(["Salut", "Rue"]), &["s1", "s2", "s5"]),
            ("fr", "isEmpty", Value::Null, &["s5"]),
            ("fr", "isNull", Value::Null, &["s5"]),
            ("fr", "isNotEmpty", Value::Null, &["s1", "s2", "s3", "s4"]),
            ("fr", "isNotNull", Value::Null, &["s1", "s2", "s3", "s4"]),
        ],
    );
    // Status and text conditions together, with a sort.
    let query = r#"{"fr._dependencyStatus": {"=": "upToDate"}, "en": {"isNotEmpty": null}}"#;
    let res = fetch(&app, &view, &[("query", query), ("sort", r#"{"fr": "asc"}"#)]);
    assert_all(&res, &["s2", "s4"], query);
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"en": "asc"}"#, &["s2", "s1", "s4", "s3", "s5"]),
            (r#"{"fr": "desc"}"#, &["s3", "s4", "s1", "s2", "s5"]),
        ],
    );

    let refusals: [(&str, &str, &[&str]); 8] = [
        (r#"{"fr._dependencyStatus": {"=": "stale"}}"#, "invalidFilterValue", &["stale"]),
        (r#"{"en._sourceStatus": {"=": "outOfDate"}}"#, "invalidFilterValue", &["outOfDate"]),
        (
            r#"{"fr._dependencyStatus": {"contains": "out"}}"#,
            "invalidFilterOperator",
            &["contains", "fr._dependencyStatus"],
        ),
        (
            r#"{"fr._sourceStatus": {"<": "locked"}}"#,
            "invalidFilterOperator",
            &["<", "fr._sourceStatus"],
        ),
        (
            r#"{"note._dependencyStatus": {"=": "unset"}}"#,
            "invalidFilterField",
            &["note._dependencyStatus"],
        ),
        (r#"{"nope._sourceStatus": {"=": "unset"}}"#, "filterColumnNotFound", &["nope"]),
        (r#"{"en": {"<": "b"}}"#, "invalidFilterOperator", &["<", "en"]),
        (r#"{"fr": {"between": ["a", "b"]}}"#, "invalidFilterOperator", &["between", "fr"]),
    ];
    for (query, code, parts) in refusals {
        assert_refused(&filtered(&app, &view, query), code, parts, query);
    }
    let sort = r#"{"fr._dependencyStatus": "asc"}"#;
    assert_refused(&sorted(&app, &view, sort), "invalidSortField", &["fr._dependencyStatus"], sort);

    // Without the dependency every status is unset again.
    app.delete(&format!("/v1/views/{view}/dependencies/{dependency}")).assert_status(204);
    check(
        &app,
        &view,
        &[
            ("fr._dependencyStatus", "=", json!("unset"), &["s1", "s2", "s3", "s4", "s5"]),
            ("fr._dependencyStatus", "in", json!(["outOfDate", "upToDate"]), &[]),
        ],
    );
}

// ----- case-insensitive matching of non-ASCII text -----

#[test]
fn contains_starts_and_ends_with_ignore_case_beyond_ascii_while_equality_is_exact() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(
        &view,
        titled(&[
            ("u1", "Straße"),
            ("u2", "ÄRGER im Büro"),
            ("u3", "Αθήνα ΟΔΟΣ"),
            ("u4", "東京タワー"),
            ("u5", "ÉCOLE"),
            ("u6", "strasse"),
        ]),
    );
    check(
        &app,
        &view,
        &[
            ("title", "contains", json!("straße"), &["u1"]),
            ("title", "contains", json!("STRA\u{1e9e}E"), &["u1"]),
            ("title", "startsWith", json!("STRA"), &["u1", "u6"]),
            ("title", "contains", json!("ärger"), &["u2"]),
            ("title", "contains", json!("BÜRO"), &["u2"]),
            ("title", "startsWith", json!("äRGER"), &["u2"]),
            ("title", "endsWith", json!("büRO"), &["u2"]),
            ("title", "notContains", json!("ÄRGER"), &["u1", "u3", "u4", "u5", "u6"]),
            ("title", "contains", json!("αθήνα"), &["u3"]),
            ("title", "startsWith", json!("ΑΘΉΝΑ"), &["u3"]),
            ("title", "endsWith", json!("ΟΔΟΣ"), &["u3"]),
            ("title", "endsWith", json!("οδος"), &["u3"]),
            ("title", "contains", json!("ΔΟΣ"), &["u3"]),
            ("title", "notEndsWith", json!("ΟΔΟΣ"), &["u1", "u2", "u4", "u5", "u6"]),
            ("title", "contains", json!("タワー"), &["u4"]),
            ("title", "startsWith", json!("東京"), &["u4"]),
            ("title", "endsWith", json!("タワー"), &["u4"]),
            ("title", "notStartsWith", json!("東"), &["u1", "u2", "u3", "u5", "u6"]),
            ("title", "contains", json!("école"), &["u5"]),
            ("title", "startsWith", json!("é"), &["u5"]),
            ("title", "=", json!("Straße"), &["u1"]),
            ("title", "=", json!("straße"), &[]),
            ("title", "=", json!("STRASSE"), &[]),
            ("title", "=", json!("strasse"), &["u6"]),
            ("title", "=", json!("école"), &[]),
            ("title", "=", json!("ÉCOLE"), &["u5"]),
            ("title", "!=", json!("ÉCOLE"), &["u1", "u2", "u3", "u4", "u6"]),
            ("title", "in", json!(["straße", "Straße", "東京"]), &["u1"]),
            ("title", "regexp", json!("ärger"), &[]),
            ("title", "regexp", json!("(?i)ärger"), &["u2"]),
            ("title", "regexp", json!("(?i)^straße$"), &["u1"]),
            ("title", "regexp", json!("ΟΔΟΣ$"), &["u3"]),
            ("title", "regexp", json!("οδος$"), &[]),
            ("title", "regexp", json!("^東京"), &["u4"]),
            ("title", "notRegexp", json!("(?i)ß|ss"), &["u2", "u3", "u4", "u5"]),
        ],
    );
}

#[test]
fn regexp_and_contains_test_each_value_whole_even_with_newlines() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(
        &view,
        titled(&[
            ("l1", "alpha\nbeta"),
            ("l2", "gamma"),
            ("l3", ""),
            ("l4", "beta"),
            ("l5", "delta\n"),
            ("l6", "x"),
        ]),
    );
    let all: &[&str] = &["l1", "l2", "l3", "l4", "l5", "l6"];
    check(
        &app,
        &view,
        &[
            ("title", "regexp", json!("^beta"), &["l4"]),
            ("title", "regexp", json!("(?m)^beta"), &["l1", "l4"]),
            ("title", "regexp", json!("(?-m)^beta"), &["l4"]),
            ("title", "regexp", json!("\\Abeta\\z"), &["l4"]),
            ("title", "regexp", json!("alpha$"), &[]),
            ("title", "regexp", json!("(?m)alpha$"), &["l1"]),
            ("title", "regexp", json!("a$"), &["l1", "l2", "l4"]),
            ("title", "regexp", json!("^$"), &["l3"]),
            ("title", "regexp", json!("(?m)^$"), &["l3", "l5"]),
            ("title", "regexp", json!("a\nb"), &["l1"]),
            // Matches only across two values (joined by a newline) do not count.
            ("title", "regexp", json!("a\nd"), &[]),
            ("title", "regexp", json!("(?s)a.+b"), &["l1"]),
            ("title", "regexp", json!("(?s)a.+x"), &[]),
            ("title", "regexp", json!("mma\\b"), &["l2"]),
            ("title", "regexp", json!("\\Bet"), &["l1", "l4"]),
            ("title", "regexp", json!(""), all),
            ("title", "regexp", json!("z*"), all),
            ("title", "notRegexp", json!("(?m)^beta"), &["l2", "l3", "l5", "l6"]),
            ("title", "notRegexp", json!("^$"), &["l1", "l2", "l4", "l5", "l6"]),
            ("title", "contains", json!("A\nB"), &["l1"]),
            ("title", "contains", json!("A\nD"), &[]),
            ("title", "contains", json!("\n"), &["l1", "l5"]),
            ("title", "contains", json!(""), all),
            ("title", "startsWith", json!("BETA"), &["l4"]),
            ("title", "endsWith", json!("\n"), &["l5"]),
            ("title", "endsWith", json!("A"), &["l1", "l2", "l4"]),
            ("title", "notEndsWith", json!("a"), &["l3", "l5", "l6"]),
        ],
    );
}

/// Case folding reads the word-final sigma as sigma on both sides: a capital sigma ending a
/// needle is found inside a word as well as at its end.
#[test]
fn a_capital_sigma_ending_a_needle_is_found_inside_a_word() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(&view, titled(&[("g1", "ΟΣΑ"), ("g2", "ΟΔΟΣ"), ("g3", "ΑΒΓ")]));
    check(
        &app,
        &view,
        &[
            ("title", "contains", json!("ΟΣ"), &["g1", "g2"]),
            ("title", "startsWith", json!("ΟΣ"), &["g1"]),
            ("title", "endsWith", json!("ΟΣ"), &["g2"]),
            ("title", "contains", json!("οσ"), &["g1", "g2"]),
        ],
    );
}

/// `contains` searches text as stored for every spelling of the needle: the Kelvin sign is a
/// `k`, Cyrillic capitals their small letters, `İ` lowercases to `i` and a combining dot; a
/// value replaced (its old text still in the column's storage) no longer matches.
#[test]
fn contains_finds_every_spelling_and_not_replaced_text() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(
        &view,
        titled(&[
            ("k1", "Kelvin \u{212A}"),
            ("k2", "НАСТРОЙКИ сети"),
            ("k3", "открыть настройки"),
            ("k4", "İstanbul"),
            ("k5", "istanbul"),
        ]),
    );
    let cases: &[Case] = &[
        ("title", "contains", json!("kelvin k"), &["k1"]),
        ("title", "contains", json!("НаСтРоЙкИ"), &["k2", "k3"]),
        ("title", "contains", json!("ISTANBUL"), &["k5"]),
        ("title", "contains", json!("i\u{307}stanbul"), &["k4"]),
        ("title", "notContains", json!("настройки"), &["k1", "k4", "k5"]),
    ];
    check(&app, &view, cases);
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "k3", "cells": [{"columnId": "title", "value": "сеть"}]}]),
    )
    .assert_status(200);
    check(&app, &view, &[("title", "contains", json!("настройки"), &["k2"])]);
}

// ----- sorting -----

#[test]
fn sort_orders_each_type_with_empty_values_last_both_ways() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"title": "asc"}"#, &["r1", "r4", "r5", "r2", "r3"]),
            (r#"{"title": "desc"}"#, &["r2", "r5", "r4", "r1", "r3"]),
            (r#"{"num": "asc"}"#, &["r4", "r1", "r2", "r5", "r3"]),
            (r#"{"num": "desc"}"#, &["r5", "r2", "r1", "r4", "r3"]),
            (r#"{"due": "asc"}"#, &["r5", "r2", "r1", "r4", "r3"]),
            (r#"{"due": "desc"}"#, &["r4", "r1", "r2", "r5", "r3"]),
            (r#"{"done": "asc"}"#, &["r2", "r5", "r1", "r4", "r3"]),
            (r#"{"done": "desc"}"#, &["r1", "r4", "r2", "r5", "r3"]),
            (r#"{"kind": "asc"}"#, &["r1", "r5", "r4", "r2", "r3"]),
            (r#"{"kind": "desc"}"#, &["r2", "r4", "r1", "r5", "r3"]),
            (r#"{"tags": "asc"}"#, &["r5", "r1", "r2", "r4", "r3"]),
            (r#"{"tags": "desc"}"#, &["r4", "r2", "r1", "r5", "r3"]),
            (r#"{"_recordId": "desc"}"#, &["r5", "r4", "r3", "r2", "r1"]),
            (r#"{"_recordId": "asc"}"#, &["r1", "r2", "r3", "r4", "r5"]),
            (r#"{"_path": "asc"}"#, &["r1", "r2", "r5", "r4", "r3"]),
            (r#"{"_path": "desc"}"#, &["r4", "r5", "r2", "r1", "r3"]),
            // Directions are case-insensitive; an empty sort is the insertion order.
            (r#"{"num": "DESC"}"#, &["r5", "r2", "r1", "r4", "r3"]),
            (r#"{"num": "Asc"}"#, &["r4", "r1", "r2", "r5", "r3"]),
            ("{}", &["r1", "r2", "r3", "r4", "r5"]),
        ],
    );
}

#[test]
fn numbers_sort_numerically_and_text_by_code_point() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Numbers");
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    let values = [9.0, 10.0, 100.0, -1.0, 0.5, 2.0, -10.0];
    let records: Vec<Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            json!({"id": format!("n{i}"), "cells": [{"columnId": "n", "value": v},
                                                   {"columnId": "t", "value": v.to_string()}]})
        })
        .collect();
    app.add_records(&view, json!(records));
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"n": "asc"}"#, &["n6", "n3", "n4", "n5", "n0", "n1", "n2"]),
            (r#"{"n": "desc"}"#, &["n2", "n1", "n0", "n5", "n4", "n3", "n6"]),
            // "-1" < "-10" < "0.5" < "10" < "100" < "2" < "9"
            (r#"{"t": "asc"}"#, &["n3", "n6", "n4", "n1", "n2", "n5", "n0"]),
        ],
    );
    check(
        &app,
        &view,
        &[("n", ">", json!(9), &["n1", "n2"]), ("n", "<", json!("0.5"), &["n3", "n6"])],
    );
}

#[test]
fn minus_zero_is_zero_to_filters_and_sorts() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Zeros");
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    let values = [json!(0), json!(-0.0), json!("-0"), json!(1), json!(-1)];
    let records: Vec<Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"id": format!("z{i}"), "cells": [{"columnId": "n", "value": v}]}))
        .collect();
    app.add_records(&view, json!(records));
    check(
        &app,
        &view,
        &[
            ("n", "=", json!(0), &["z0", "z1", "z2"]),
            ("n", "=", json!(-0.0), &["z0", "z1", "z2"]),
            ("n", "<", json!(0), &["z4"]),
            ("n", ">=", json!(0), &["z0", "z1", "z2", "z3"]),
        ],
    );
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"n": "asc"}"#, &["z4", "z0", "z1", "z2", "z3"]),
            (r#"{"n": "desc"}"#, &["z3", "z0", "z1", "z2", "z4"]),
            (r#"{"n": "asc", "_recordId": "desc"}"#, &["z4", "z2", "z1", "z0", "z3"]),
        ],
    );
}

#[test]
fn several_sort_keys_apply_in_the_object_key_order() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"kind": "asc", "num": "desc"}"#, &["r5", "r1", "r4", "r2", "r3"]),
            (r#"{"num": "desc", "kind": "asc"}"#, &["r5", "r2", "r1", "r4", "r3"]),
            (r#"{"done": "asc", "title": "desc"}"#, &["r2", "r5", "r4", "r1", "r3"]),
            (r#"{"done": "asc", "title": "asc"}"#, &["r5", "r2", "r1", "r4", "r3"]),
            (
                r#"{"done": "desc", "kind": "asc", "_recordId": "desc"}"#,
                &["r1", "r4", "r5", "r2", "r3"],
            ),
            (r#"{"kind": "desc", "_recordId": "desc"}"#, &["r2", "r4", "r5", "r1", "r3"]),
            (r#"{"tags": "asc", "num": "asc"}"#, &["r5", "r1", "r2", "r4", "r3"]),
        ],
    );
}

#[test]
fn ties_keep_insertion_order_in_both_directions() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Ties");
    app.create_column(&view, json!({"id": "g", "name": "G", "type": "number"}));
    app.create_column(&view, json!({"id": "s", "name": "S", "type": "singleLine"}));
    let groups =
        [json!(2), json!(1), json!(2), Value::Null, json!(1), json!(2), Value::Null, json!(1)];
    let names = ["b", "a", "a", "b", "b", "b", "a", "a"];
    let records: Vec<Value> = groups
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (g, s))| {
            json!({"id": format!("t{i}"), "cells": [{"columnId": "g", "value": g},
                                                   {"columnId": "s", "value": s}]})
        })
        .collect();
    app.add_records(&view, json!(records));
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"g": "asc"}"#, &["t1", "t4", "t7", "t0", "t2", "t5", "t3", "t6"]),
            (r#"{"g": "desc"}"#, &["t0", "t2", "t5", "t1", "t4", "t7", "t3", "t6"]),
            (r#"{"s": "desc"}"#, &["t0", "t3", "t4", "t5", "t1", "t2", "t6", "t7"]),
            (r#"{"g": "desc", "s": "asc"}"#, &["t2", "t0", "t5", "t1", "t7", "t4", "t6", "t3"]),
            (r#"{"s": "asc", "g": "asc"}"#, &["t1", "t7", "t2", "t6", "t4", "t0", "t5", "t3"]),
        ],
    );
}

// ----- sort with query, paging, Link and columnIds -----

#[test]
fn sort_with_query_and_paging_keeps_parameters_in_links() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let query = r#"{"num": {"isNotEmpty": null}, "_recordId": {"!=": "r3"}}"#;
    let sort = r#"{"num": "desc"}"#;
    let p = page(1, 2);
    let res = fetch(&app, &view, &[("query", query), ("sort", sort), ("page", &p)]);
    assert_page(&res, &["r2", "r1"], 4, "the second and third matches");
    let next = link(&res, "next").expect("a next link");
    let prev = link(&res, "prev").expect("a prev link");
    for url in [&next, &prev] {
        assert!(url.starts_with(&format!("{}/v1/views/{view}/records?", app.base)), "{url}");
        assert_eq!(param(url, "query").as_deref(), Some(query), "{url}");
        assert_eq!(param(url, "sort").as_deref(), Some(sort), "{url}");
    }
    assert_eq!(param(&next, "page"), Some(page(3, 2)));
    assert_eq!(param(&prev, "page"), Some(page(0, 2)));
    let res = follow(&app, &next);
    assert_page(&res, &["r4"], 4, "the last page");
    assert_eq!(link(&res, "next"), None);
    let res = follow(&app, &prev);
    assert_page(&res, &["r5", "r2"], 4, "the first page");
    assert_eq!(link(&res, "prev"), None);
    // A page past the matches is empty, with the count of all matches.
    let p = page(4, 2);
    let res = fetch(&app, &view, &[("query", query), ("sort", sort), ("page", &p)]);
    assert_page(&res, &[] as &[&str], 4, "past the end");
    // A query matching nothing: no records, count 0, no links.
    let none = r#"{"title": {"=": "nothing"}}"#;
    let res = fetch(&app, &view, &[("query", none), ("sort", sort), ("page", &page(0, 1))]);
    assert_page(&res, &[] as &[&str], 0, none);
    assert!(links(&res).is_empty(), "{:?}", res.header("link"));
    // Blank parameters mean no query and no sort.
    for blank in ["", "{}", "null"] {
        let res = fetch(&app, &view, &[("query", blank), ("sort", blank)]);
        assert_all(&res, &["r1", "r2", "r3", "r4", "r5"], blank);
    }
}

#[test]
fn column_ids_with_query_and_sort() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let query = r#"{"num": {">": 0}}"#;
    let sort = r#"{"num": "desc"}"#;
    let res = fetch(&app, &view, &[("columnIds", "title,kind"), ("query", query), ("sort", sort)]);
    assert_all(&res, &["r5", "r2", "r1"], "filtered and sorted by a column not returned");
    let records = res.body.as_array().expect("a list");
    assert_eq!(
        records[0]["cells"],
        json!([{"columnId": "title", "value": "apple"}, {"columnId": "kind", "value": "bug"}])
    );
    assert!(records.iter().all(|r| r["cells"].as_array().map(Vec::len) == Some(2)));
    let p = page(0, 1);
    let res = fetch(
        &app,
        &view,
        &[("columnIds", "title"), ("query", query), ("sort", sort), ("page", &p)],
    );
    assert_page(&res, &["r5"], 3, "first page");
    let next = link(&res, "next").expect("a next link");
    assert_eq!(param(&next, "columnIds").as_deref(), Some("title"));
    let res = follow(&app, &next);
    assert_page(&res, &["r2"], 3, "second page");
    assert_eq!(res.body[0]["cells"], json!([{"columnId": "title", "value": "banana"}]));
}

#[test]
fn a_view_filters_and_sorts_only_by_its_own_columns() {
    let app = spawn_app();
    let (grid, default) = typed_grid(&app);
    let res = app.post(
        "/v1/views",
        &json!({"name": "Narrow", "gridId": grid, "columns": [{"id": "title"}, {"id": "num"}]}),
    );
    let view = res.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let res =
        fetch(&app, &view, &[("query", r#"{"num": {">": 9}}"#), ("sort", r#"{"title": "asc"}"#)]);
    assert_all(&res, &["r5", "r2"], "shown columns");
    let res = filtered(&app, &view, r#"{"_path": {"startsWith": "docs"}}"#);
    assert_all(&res, &["r1", "r2"], "predefined columns");
    let query = r#"{"kind": {"=": "bug"}}"#;
    assert_refused(&filtered(&app, &view, query), "filterColumnNotFound", &["kind", &view], query);
    assert_all(&filtered(&app, &default, query), &["r1", "r5"], "the default view shows kind");
    let sort = r#"{"num": "asc", "kind": "asc"}"#;
    assert_refused(&sorted(&app, &view, sort), "sortColumnNotFound", &["kind", &view], sort);
}

// ----- errors -----

#[test]
fn each_error_code_is_400_and_names_the_offending_part() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let query_errors: &[(&str, &str, &[&str])] = &[
        ("[1]", "invalidFilterField", &["[1]"]),
        (r#""title""#, "invalidFilterField", &["title"]),
        ("{not json", "invalidFilterField", &["{not json"]),
        (r#"{"_xyz": {"=": 1}}"#, "invalidFilterField", &["_xyz"]),
        (r#"{"title": {"like": "a"}}"#, "invalidFilterOperator", &["like", "title"]),
        (r#"{"title": {"CONTAINS": "a"}}"#, "invalidFilterOperator", &["CONTAINS", "title"]),
        (r#"{"title": {"=": "a", "!=": "b"}}"#, "invalidFilterOperator", &["title"]),
        (r#"{"title": {}}"#, "invalidFilterOperator", &["title"]),
        (r#"{"title": "apple"}"#, "invalidFilterOperator", &["title", "apple"]),
        (r#"{"title": ["apple"]}"#, "invalidFilterOperator", &["title"]),
        (r#"{"title": {"<": "b"}}"#, "invalidFilterOperator", &["<", "title"]),
        (r#"{"title": {"between": ["a", "b"]}}"#, "invalidFilterOperator", &["between", "title"]),
        (r#"{"kind": {"contains": "b"}}"#, "invalidFilterOperator", &["contains", "kind"]),
        (r#"{"kind": {"regexp": "b"}}"#, "invalidFilterOperator", &["regexp", "kind"]),
        (r#"{"tags": {"startsWith": "x"}}"#, "invalidFilterOperator", &["startsWith", "tags"]),
        (r#"{"done": {">": true}}"#, "invalidFilterOperator", &[">", "done"]),
        (r#"{"num": {"contains": "1"}}"#, "invalidFilterOperator", &["contains", "num"]),
        (r#"{"due": {"endsWith": "Z"}}"#, "invalidFilterOperator", &["endsWith", "due"]),
        (r#"{"_path": {"regexp": "a"}}"#, "invalidFilterOperator", &["regexp", "_path"]),
        (r#"{"_path": {"notRegexp": "a"}}"#, "invalidFilterOperator", &["notRegexp", "_path"]),
        (r#"{"_recordId": {"<=": "r2"}}"#, "invalidFilterOperator", &["<=", "_recordId"]),
        (
            r#"{"_lastModifiedTime": {"contains": "2026"}}"#,
            "invalidFilterOperator",
            &["contains", "_lastModifiedTime"],
        ),
        (r#"{"num": {"=": "abc"}}"#, "invalidFilterValue", &["abc", "num"]),
        (r#"{"num": {"<": true}}"#, "invalidFilterValue", &["num"]),
        (r#"{"num": {"in": [1, "abc"]}}"#, "invalidFilterValue", &["abc", "num"]),
        (r#"{"num": {"in": 5}}"#, "invalidFilterValue", &["in", "num"]),
        (r#"{"num": {"between": [1]}}"#, "invalidFilterValue", &["between", "num"]),
        (r#"{"num": {"between": [1, 2, 3]}}"#, "invalidFilterValue", &["between", "num"]),
        (r#"{"num": {"notBetween": 5}}"#, "invalidFilterValue", &["notBetween", "num"]),
        (r#"{"due": {"<": "2026-13-45"}}"#, "invalidFilterValue", &["2026-13-45", "due"]),
        (r#"{"due": {"=": "31/01/2026"}}"#, "invalidFilterValue", &["31/01/2026", "due"]),
        (r#"{"_lastModifiedTime": {">": "yesterday"}}"#, "invalidFilterValue", &["yesterday"]),
        (r#"{"done": {"=": "yes"}}"#, "invalidFilterValue", &["yes", "done"]),
        (r#"{"title": {"regexp": "("}}"#, "invalidFilterValue", &["title"]),
        (r#"{"title": {"regexp": "[z-a]"}}"#, "invalidFilterValue", &["title"]),
        (r#"{"title": {"regexp": 5}}"#, "invalidFilterValue", &["regexp", "title"]),
        (r#"{"title": {"contains": {"a": 1}}}"#, "invalidFilterValue", &["contains", "title"]),
        (r#"{"title": {"=": null}}"#, "missingFilterValue", &["=", "title"]),
        (r#"{"title": {"in": []}}"#, "missingFilterValue", &["in", "title"]),
        (r#"{"num": {"between": []}}"#, "missingFilterValue", &["between", "num"]),
        (r#"{"_recordId": {"contains": null}}"#, "missingFilterValue", &["contains", "_recordId"]),
        (r#"{"nope": {"=": 1}}"#, "filterColumnNotFound", &["nope"]),
        (r#"{"title": {"isEmpty": null}, "nope": {"=": 1}}"#, "filterColumnNotFound", &["nope"]),
        (r#"{"nope._dependencyStatus": {"=": "unset"}}"#, "filterColumnNotFound", &["nope"]),
    ];
    for (query, code, parts) in query_errors {
        assert_refused(&filtered(&app, &view, query), code, parts, query);
        // With a valid sort, the query's error still answers.
        let res = fetch(&app, &view, &[("query", query), ("sort", r#"{"num": "asc"}"#)]);
        assert_refused(&res, code, parts, query);
    }
    let sort_errors: &[(&str, &str, &[&str])] = &[
        (r#"["num"]"#, "invalidSortField", &[r#"["num"]"#]),
        ("{bad", "invalidSortField", &["{bad"]),
        (r#"{"_xyz": "asc"}"#, "invalidSortField", &["_xyz"]),
        (r#"{"num": "up"}"#, "invalidSortDirection", &["up", "num"]),
        (r#"{"num": 1}"#, "invalidSortDirection", &["num"]),
        (r#"{"num": null}"#, "invalidSortDirection", &["num"]),
        (r#"{"title": "asc", "num": "ascending"}"#, "invalidSortDirection", &["ascending", "num"]),
        (r#"{"nope": "asc"}"#, "sortColumnNotFound", &["nope"]),
        (r#"{"num": "asc", "nope": "desc"}"#, "sortColumnNotFound", &["nope"]),
    ];
    for (sort, code, parts) in sort_errors {
        assert_refused(&sorted(&app, &view, sort), code, parts, sort);
        let res = fetch(&app, &view, &[("query", r#"{"num": {">": 1}}"#), ("sort", sort)]);
        assert_refused(&res, code, parts, sort);
    }
    let (query, sort) = (r#"{"num": {">": 1}}"#, r#"{"num": "asc"}"#);
    for bad_page in ["{\"offset\":-1,\"limit\":10}", "{\"offset\":0,\"limit\":0}", "[0, 1]"] {
        let res = fetch(&app, &view, &[("query", query), ("sort", sort), ("page", bad_page)]);
        assert_refused(&res, "invalidPaging", &["page"], bad_page);
    }
}

#[test]
fn a_regexp_too_large_or_too_long_is_refused_quickly() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let long = "a".repeat(1001);
    for pattern in ["(((a{100}){100}){100})", "\\w{1000}{1000}", long.as_str()] {
        for op in ["regexp", "notRegexp"] {
            let query = cond("title", op, &json!(pattern));
            let started = Instant::now();
            let res = filtered(&app, &view, &query);
            let elapsed = started.elapsed();
            assert_refused(&res, "invalidFilterValue", &["title"], &query);
            assert!(elapsed < Duration::from_secs(2), "{query} took {elapsed:?}");
        }
    }
    // The server is still answering, and a reasonable pattern works.
    let res = filtered(&app, &view, &cond("title", "regexp", &json!("a{1,3}n")));
    assert_all(&res, &["r2"], "banana");
}

// ----- results after writes -----

#[test]
fn filters_and_sorts_follow_updates_additions_and_deletions() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let records = format!("/v1/views/{view}/records");
    let by_num = r#"{"num": "asc"}"#;
    let apple = r#"{"title": {"contains": "APPLE"}}"#;
    let bug = r#"{"kind": {"=": "bug"}}"#;
    let big = r#"{"num": {">": 5}}"#;
    let title_desc = r#"{"title": "desc"}"#;
    let by_id = r#"{"_recordId": "asc"}"#;
    let both = [("query", apple), ("sort", r#"{"num": "desc"}"#)];
    // First queries build the indexes.
    assert_all(&sorted(&app, &view, by_num), &["r4", "r1", "r2", "r5", "r3"], by_num);
    assert_all(&filtered(&app, &view, apple), &["r1", "r4", "r5"], apple);
    assert_all(&filtered(&app, &view, bug), &["r1", "r5"], bug);
    assert_all(&filtered(&app, &view, big), &["r1", "r2", "r5"], big);
    assert_all(&sorted(&app, &view, title_desc), &["r2", "r5", "r4", "r1", "r3"], title_desc);
    assert_all(&fetch(&app, &view, &both), &["r5", "r1", "r4"], "apple by num desc");

    // r5 moves in the order; r1 stops matching `apple`; r2 becomes a bug.
    let res = app.patch(
        &records,
        &json!([
            {"id": "r5", "cells": [{"columnId": "num", "value": 0}]},
            {"id": "r1", "cells": [{"columnId": "title", "value": "Pear"}]},
            {"id": "r2", "cells": [{"columnId": "kind", "value": "bug"}]},
        ]),
    );
    res.assert_status(200);
    assert_all(&sorted(&app, &view, by_num), &["r4", "r5", "r1", "r2", "r3"], "after patch");
    assert_all(&filtered(&app, &view, apple), &["r4", "r5"], "after patch");
    assert_all(&filtered(&app, &view, bug), &["r1", "r2", "r5"], "after patch");
    assert_all(&filtered(&app, &view, big), &["r1", "r2"], "after patch");
    assert_all(&sorted(&app, &view, title_desc), &["r2", "r5", "r1", "r4", "r3"], "after patch");
    assert_all(&fetch(&app, &view, &both), &["r5", "r4"], "after patch");

    // Additions.
    app.add_records(
        &view,
        json!([
            {"id": "r6", "cells": [{"columnId": "num", "value": 5}, {"columnId": "kind", "value": "bug"},
                                   {"columnId": "title", "value": "APPLE tart"}]},
            {"id": "r0", "cells": [{"columnId": "num", "value": -3}, {"columnId": "title", "value": "zucchini"}]},
        ]),
    );
    assert_all(&sorted(&app, &view, by_num), &["r0", "r4", "r5", "r6", "r1", "r2", "r3"], "added");
    assert_all(&filtered(&app, &view, apple), &["r4", "r5", "r6"], "added");
    assert_all(&filtered(&app, &view, bug), &["r1", "r2", "r5", "r6"], "added");
    assert_all(&filtered(&app, &view, big), &["r1", "r2"], "added");
    assert_all(
        &sorted(&app, &view, title_desc),
        &["r0", "r2", "r5", "r1", "r4", "r6", "r3"],
        "added",
    );
    assert_all(&sorted(&app, &view, by_id), &["r0", "r1", "r2", "r3", "r4", "r5", "r6"], "added");
    assert_all(&fetch(&app, &view, &both), &["r6", "r5", "r4"], "added");

    // Deletions.
    app.delete_with(&records, &json!({"ids": ["r5", "r0"]})).assert_status(204);
    assert_all(&sorted(&app, &view, by_num), &["r4", "r6", "r1", "r2", "r3"], "deleted");
    assert_all(&filtered(&app, &view, apple), &["r4", "r6"], "deleted");
    assert_all(&filtered(&app, &view, bug), &["r1", "r2", "r6"], "deleted");
    assert_all(&sorted(&app, &view, by_id), &["r1", "r2", "r3", "r4", "r6"], "deleted");
    assert_all(&fetch(&app, &view, &both), &["r6", "r4"], "deleted");

    // Emptying a value sends it last; renaming a record moves it by id; a path change counts.
    app.patch(
        &records,
        &json!([{"id": "r4", "cells": [{"columnId": "num", "value": null},
                                       {"columnId": "title", "value": ""}]}]),
    )
    .assert_status(200);
    app.patch(&format!("{records}/r2"), &json!({"id": "a2", "path": "zzz"})).assert_status(200);
    assert_all(&sorted(&app, &view, by_num), &["r6", "r1", "a2", "r3", "r4"], "emptied");
    assert_all(&sorted(&app, &view, by_id), &["a2", "r1", "r3", "r4", "r6"], "renamed");
    assert_all(
        &sorted(&app, &view, r#"{"_path": "desc"}"#),
        &["a2", "r4", "r1", "r3", "r6"],
        "moved",
    );
    assert_all(&filtered(&app, &view, apple), &["r6"], "emptied");
    assert_all(&filtered(&app, &view, bug), &["r1", "a2", "r6"], "renamed");
    assert_all(&filtered(&app, &view, r#"{"_recordId": {"startsWith": "A"}}"#), &["a2"], "renamed");
    assert_all(&sorted(&app, &view, title_desc), &["a2", "r1", "r6", "r3", "r4"], "emptied");
    let query = r#"{"title": {"isEmpty": null}}"#;
    assert_all(&filtered(&app, &view, query), &["r3", "r4"], query);
    // Re-adding a deleted id puts a new record last in insertion order.
    app.add_records(&view, json!([{"id": "r5", "cells": [{"columnId": "num", "value": 5}]}]));
    assert_all(&sorted(&app, &view, by_num), &["r6", "r5", "r1", "a2", "r3", "r4"], "re-added");
    assert_all(&filtered(&app, &view, r#"{"num": {"=": 5}}"#), &["r6", "r5"], "re-added");
}

#[test]
fn filters_and_sorts_follow_column_type_changes_renames_and_deletion() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Columns");
    app.create_column(&view, json!({"id": "v", "name": "V", "type": "singleLine"}));
    let column = |id: &str| format!("/v1/views/{view}/columns/{id}");
    app.add_records(
        &view,
        json!([
            {"id": "c1", "cells": [{"columnId": "v", "value": "10"}]},
            {"id": "c2", "cells": [{"columnId": "v", "value": "9"}]},
            {"id": "c3", "cells": [{"columnId": "v", "value": "100"}]},
            {"id": "c4"},
            {"id": "c5", "cells": [{"columnId": "v", "value": "9.5"}]},
        ]),
    );
    assert_all(&sorted(&app, &view, r#"{"v": "asc"}"#), &["c1", "c3", "c2", "c5", "c4"], "text");
    check(
        &app,
        &view,
        &[
            ("v", "=", json!("9"), &["c2"]),
            ("v", "contains", json!("0"), &["c1", "c3"]),
            ("v", "startsWith", json!("9"), &["c2", "c5"]),
        ],
    );

    app.patch(&column("v"), &json!({"type": "number"})).assert_status(200);
    assert_all(&sorted(&app, &view, r#"{"v": "asc"}"#), &["c2", "c5", "c1", "c3", "c4"], "number");
    check(&app, &view, &[("v", "=", json!(9), &["c2"]), ("v", ">", json!(9), &["c1", "c3", "c5"])]);
    let query = cond("v", "contains", &json!("0"));
    assert_refused(&filtered(&app, &view, &query), "invalidFilterOperator", &["contains"], &query);

    app.patch(&column("v"), &json!({"id": "w"})).assert_status(200);
    assert_all(
        &sorted(&app, &view, r#"{"w": "desc"}"#),
        &["c3", "c1", "c5", "c2", "c4"],
        "renamed",
    );
    check(&app, &view, &[("w", "<", json!(10), &["c2", "c5"])]);
    let query = cond("v", "=", &json!(9));
    assert_refused(&filtered(&app, &view, &query), "filterColumnNotFound", &["v"], &query);
    let sort = r#"{"v": "asc"}"#;
    assert_refused(&sorted(&app, &view, sort), "sortColumnNotFound", &["v"], sort);

    app.delete(&column("w")).assert_status(204);
    let sort = r#"{"w": "asc"}"#;
    assert_refused(&sorted(&app, &view, sort), "sortColumnNotFound", &["w"], sort);
    app.create_column(&view, json!({"id": "w", "name": "W", "type": "singleLine"}));
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "c2", "cells": [{"columnId": "w", "value": "b"}]},
                {"id": "c5", "cells": [{"columnId": "w", "value": "a"}]}]),
    )
    .assert_status(200);
    assert_all(&sorted(&app, &view, sort), &["c5", "c2", "c1", "c3", "c4"], "a new column w");
    check(
        &app,
        &view,
        &[
            ("w", "isEmpty", Value::Null, &["c1", "c3", "c4"]),
            ("w", "=", json!("b"), &["c2"]),
            ("w", "contains", json!("A"), &["c5"]),
        ],
    );
}

// ----- larger grids against a model -----

/// A record of the model: id, number `grp` (None = empty), text `name` ("" = empty), `parity`
/// and a distinct text `uniq`.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    grp: Option<f64>,
    name: String,
    parity: &'static str,
    uniq: String,
}

fn model_row(i: usize) -> Row {
    const GROUPS: [f64; 5] = [9.0, 10.0, 100.0, -1.0, 0.5];
    const NAMES: [&str; 4] = ["b", "A", "a", "é"];
    Row {
        id: format!("m{i:04}"),
        grp: (!i.is_multiple_of(11)).then(|| GROUPS[(i * 7) % 5]),
        name: if i % 13 == 5 { String::new() } else { format!("{}{}", NAMES[i % 4], i % 3) },
        parity: if i.is_multiple_of(2) { "even" } else { "odd" },
        uniq: format!("u{i:04}"),
    }
}

fn row_json(row: &Row) -> Value {
    json!({"id": row.id, "cells": [
        {"columnId": "grp", "value": row.grp},
        {"columnId": "name", "value": row.name},
        {"columnId": "parity", "value": row.parity},
        {"columnId": "uniq", "value": row.uniq}]})
}

/// A grid with the model's columns: view id.
fn model_grid(app: &TestApp) -> String {
    let (_, view) = app.create_grid("Model");
    app.create_column(&view, json!({"id": "grp", "name": "Group", "type": "number"}));
    app.create_column(&view, json!({"id": "name", "name": "Name", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "parity", "name": "Parity", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "uniq", "name": "Unique", "type": "singleLine"}));
    view
}

/// Adds model rows, at most 1000 per request.
fn add_rows(app: &TestApp, view: &str, rows: &[Row]) {
    for batch in rows.chunks(1000) {
        app.add_records(view, batch.iter().map(row_json).collect());
    }
}

/// One sort key of the model: empty values last in both directions.
fn cmp_key_model<T: PartialOrd>(a: Option<T>, b: Option<T>, descending: bool) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => {
            let ord = a.partial_cmp(&b).expect("comparable");
            if descending {
                ord.reverse()
            } else {
                ord
            }
        }
    }
}

/// The model's ids matching `keep`, stably sorted by (field, descending) keys.
fn model_ids(rows: &[Row], keep: impl Fn(&Row) -> bool, keys: &[(&str, bool)]) -> Vec<String> {
    let mut matching: Vec<&Row> = rows.iter().filter(|r| keep(r)).collect();
    let name = |r: &Row| (!r.name.is_empty()).then(|| r.name.clone());
    matching.sort_by(|a, b| {
        keys.iter()
            .map(|&(field, desc)| match field {
                "grp" => cmp_key_model(a.grp, b.grp, desc),
                "name" => cmp_key_model(name(a), name(b), desc),
                other => panic!("no model of {other}"),
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    matching.iter().map(|r| r.id.clone()).collect()
}

/// Reads every page of a listing with `limit` and asserts the whole equals `expected`, every
/// page's `X-Total-Count` is the number of matches and the `Link`s chain the pages; then reads
/// a few pages starting inside the order.
#[track_caller]
fn assert_paged(
    app: &TestApp,
    view: &str,
    query: &str,
    sort: &str,
    limit: usize,
    expected: &[String],
) {
    let context = format!("query {query} sort {sort} limit {limit}");
    let mut seen = Vec::new();
    let first = page(0, limit);
    let mut res = fetch(app, view, &[("query", query), ("sort", sort), ("page", &first)]);
    loop {
        assert_eq!(res.status, 200, "{context}: {}", res.text);
        assert_eq!(total(&res), expected.len(), "{context}: X-Total-Count");
        seen.extend(ids(&res));
        match link(&res, "next") {
            Some(next) => {
                assert_eq!(param(&next, "query").as_deref(), Some(query), "{context}");
                assert_eq!(param(&next, "sort").as_deref(), Some(sort), "{context}");
                res = follow(app, &next);
            }
            None => break,
        }
    }
    assert_eq!(seen, expected, "{context}");
    let n = expected.len();
    for offset in [n / 3 + 1, n / 2, n.saturating_sub(3), n + 2] {
        let p = page(offset, 7);
        let res = fetch(app, view, &[("query", query), ("sort", sort), ("page", &p)]);
        let slice = expected.get(offset..(offset + 7).min(n)).unwrap_or_default();
        assert_page(&res, slice, n, &format!("{context} page {p}"));
    }
}

/// Compares many listings of the model grid with the model, reading pages of `limit`.
#[track_caller]
fn check_model(app: &TestApp, view: &str, rows: &[Row], limit: usize) {
    let few: Vec<String> =
        [3, 17, 44, 45, 99, 120, 121, 200, 277, 298, 640, 1250].map(|i| format!("m{i:04}")).into();
    let uniqs: Vec<String> = [5, 17, 300, 301, 999, 1299].map(|i| format!("u{i:04}")).into();
    let all = |_: &Row| true;
    let even = |r: &Row| r.parity == "even";
    let grp_desc_name_asc: &[(&str, bool)] = &[("grp", true), ("name", false)];
    let name_desc_grp_asc: &[(&str, bool)] = &[("name", true), ("grp", false)];
    let sort1 = r#"{"grp": "desc", "name": "asc"}"#;
    let sort2 = r#"{"name": "desc", "grp": "asc"}"#;
    let even_query = r#"{"parity": {"=": "even"}}"#;
    let few_query = json!({"_recordId": {"in": few}}).to_string();
    let uniq_query = json!({"uniq": {"in": uniqs}}).to_string();
    let range = r#"{"grp": {"between": [0, 10]}, "name": {"startsWith": "A"}}"#;
    let in_range = |r: &Row| {
        r.grp.is_some_and(|g| (0.0..=10.0).contains(&g)) && r.name.to_lowercase().starts_with('a')
    };
    let listings: Vec<(&str, &str, Vec<String>)> = vec![
        ("", sort1, model_ids(rows, all, grp_desc_name_asc)),
        ("", r#"{"name": "asc"}"#, model_ids(rows, all, &[("name", false)])),
        ("{}", r#"{"grp": "asc"}"#, model_ids(rows, all, &[("grp", false)])),
        (even_query, sort2, model_ids(rows, even, name_desc_grp_asc)),
        (even_query, sort1, model_ids(rows, even, grp_desc_name_asc)),
        (&few_query, sort2, model_ids(rows, |r| few.contains(&r.id), name_desc_grp_asc)),
        (range, sort1, model_ids(rows, in_range, grp_desc_name_asc)),
        (
            r#"{"name": {"=": "b0"}}"#,
            r#"{"grp": "desc"}"#,
            model_ids(rows, |r| r.name == "b0", &[("grp", true)]),
        ),
        (
            &uniq_query,
            r#"{"name": "desc"}"#,
            model_ids(rows, |r| uniqs.contains(&r.uniq), &[("name", true)]),
        ),
        (
            r#"{"name": {"startsWith": "a"}}"#,
            "",
            model_ids(rows, |r| r.name.to_lowercase().starts_with('a'), &[]),
        ),
    ];
    for (query, sort, expected) in &listings {
        assert_paged(app, view, query, sort, limit, expected);
    }
}

#[test]
fn sorted_and_filtered_pages_match_a_model_before_and_after_writes() {
    let app = spawn_app();
    let view = model_grid(&app);
    let mut rows: Vec<Row> = (0..300).map(model_row).collect();
    add_rows(&app, &view, &rows);
    check_model(&app, &view, &rows, 37);

    // Writes: change and empty some groups and names, delete some records, add new ones.
    let mut updates = Vec::new();
    for i in (0..300).step_by(13) {
        let row = &mut rows[i];
        row.grp = if i.is_multiple_of(2) { None } else { Some(-(i as f64)) };
        row.name = format!("A{i}");
        updates.push(row_json(row));
    }
    app.patch(&format!("/v1/views/{view}/records"), &json!(updates)).assert_status(200);
    let gone: Vec<String> = (0..300).step_by(17).map(|i| format!("m{i:04}")).collect();
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": gone})).assert_status(204);
    rows.retain(|r| !gone.contains(&r.id));
    let added: Vec<Row> = (300..330).map(model_row).collect();
    add_rows(&app, &view, &added);
    rows.extend(added);
    check_model(&app, &view, &rows, 37);
}

/// Enough records that the sort index splits its blocks, the hash index of `uniq` outgrows its
/// limit and deleting most records compacts the store (renumbering every row).
#[test]
fn indexes_stay_right_across_block_splits_and_compaction() {
    let app = spawn_app();
    let view = model_grid(&app);
    let records = format!("/v1/views/{view}/records");
    let mut rows: Vec<Row> = (0..600).map(model_row).collect();
    add_rows(&app, &view, &rows);
    check_model(&app, &view, &rows, 250);

    let added: Vec<Row> = (600..1300).map(model_row).collect();
    add_rows(&app, &view, &added);
    rows.extend(added);
    check_model(&app, &view, &rows, 400);

    let mut updates = Vec::new();
    for i in (0..1300).step_by(4) {
        let row = &mut rows[i];
        row.grp = match i % 3 {
            0 => None,
            1 => Some(1000.0 - i as f64),
            _ => Some(0.5),
        };
        row.name = if i.is_multiple_of(5) { String::new() } else { format!("b{}", i % 7) };
        updates.push(row_json(row));
    }
    app.patch(&records, &json!(updates)).assert_status(200);
    check_model(&app, &view, &rows, 400);

    let gone: Vec<String> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| !i.is_multiple_of(6))
        .map(|(_, r)| r.id.clone())
        .collect();
    assert!(gone.len() > 1024, "enough tombstones to compact");
    for batch in gone.chunks(1000) {
        app.delete_with(&records, &json!({"ids": batch})).assert_status(204);
    }
    rows.retain(|r| !gone.contains(&r.id));
    check_model(&app, &view, &rows, 100);

    let added: Vec<Row> = (1300..1340).map(model_row).collect();
    add_rows(&app, &view, &added);
    rows.extend(added);
    check_model(&app, &view, &rows, 100);
}
