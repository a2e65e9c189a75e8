//! Hostile input cannot take the server down (issue 16): each test sends the hostile request,
//! asserts the answer, that `/healthz` still answers quickly and that nothing changed.
//! Formula results bounded at 1 MiB (also on replay after a restart), text cells capped on
//! write, duplicated `columnIds` counted once (records, share pages, export) and bounded by the
//! view, paging offsets near the largest integer, share tokens renewed on re-enable and public
//! and unauthenticated requests rate-limited, and the cap on columns per grid.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use super::helpers::{
    cell, follow, link, page_query, records_path, spawn_app, spawn_app_with, TestApp,
};

/// 4 MiB: the longest text a cell may hold.
const CELL: usize = 4 << 20;

/// A grid with text column `t` and one record `r` holding `value` in it.
fn one_record_grid(app: &TestApp, value: &str) -> String {
    let (_, view) = app.create_grid("hostile");
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    app.add_records(&view, json!([{"id": "r", "cells": [{"columnId": "t", "value": value}]}]));
    view
}

/// `levels` nested SUBSTITUTEs, each replacing every "a" with ten of them.
fn growing_formula(levels: usize) -> String {
    let mut text = "[t]".to_owned();
    for _ in 0..levels {
        text = format!("SUBSTITUTE({text}, \"a\", \"aaaaaaaaaa\")");
    }
    text
}

/// The value of `column` in record `r` as listed.
fn value_of(app: &TestApp, view: &str, column: &str) -> Value {
    let records = app.records(view);
    let record = records.iter().find(|r| r["id"] == "r").expect("record r");
    cell(record, column)["value"].clone()
}

#[test]
fn a_growing_formula_is_value_error_and_a_restart_replays_it() {
    let app = spawn_app();
    let view = one_record_grid(&app, "aaaaaaaaaa");
    // 10 * 10^5 = 1,000,000 bytes: under the limit.
    let fits = format!("LEN({})", growing_formula(5));
    app.create_column(
        &view,
        json!({"id": "fits", "name": "Fits", "type": "formula", "formula": {"formulaText": fits}}),
    );
    // 10^9 bytes if it were built; 12 levels would be 10^13.
    let start = Instant::now();
    for (id, levels) in [("grows", 8), ("explodes", 12)] {
        let text = growing_formula(levels);
        app.create_column(
            &view,
            json!({"id": id, "name": id, "type": "formula", "formula": {"formulaText": text}}),
        );
    }
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    app.assert_healthy();
    assert_eq!(value_of(&app, &view, "fits").as_f64(), Some(1e6));
    for id in ["grows", "explodes"] {
        assert_eq!(value_of(&app, &view, id), json!("#VALUE!"), "{id}");
    }
    // A record write recomputes them through the same bounds.
    let body = json!([{"id": "r", "cells": [{"columnId": "t", "value": "aaaaaaaaaab"}]}]);
    app.patch(&records_path(&view), &body).assert_status(200);
    assert_eq!(value_of(&app, &view, "grows"), json!("#VALUE!"));
    assert_eq!(value_of(&app, &view, "fits").as_f64(), Some(1_000_001.0));
    app.assert_healthy();

    let app = app.restart();
    app.assert_healthy();
    assert_eq!(value_of(&app, &view, "explodes"), json!("#VALUE!"));
    assert_eq!(value_of(&app, &view, "grows"), json!("#VALUE!"));
    assert_eq!(value_of(&app, &view, "fits").as_f64(), Some(1_000_001.0));
}

#[test]
fn a_text_cell_over_four_mib_is_refused_naming_the_limit_record_and_column() {
    let app = spawn_app();
    let view = one_record_grid(&app, "small");
    let before = app.snapshot(&records_path(&view));
    let big = "x".repeat(CELL + 1);
    let res = app.post(
        &records_path(&view),
        &json!([{"id": "huge", "cells": [{"columnId": "t", "value": big}]}]),
    );
    res.assert_error(400, "badRequest");
    for part in ["4194304", "\"huge\"", "\"t\""] {
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains(part)), "{}", res.text);
    }
    let res = app.patch(
        &records_path(&view),
        &json!([{"id": "r", "cells": [{"columnId": "t", "value": big}]}]),
    );
    res.assert_error(400, "badRequest");
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("\"r\"")), "{}", res.text);
    // Multi-byte text counts in bytes: 2 bytes each.
    let wide = "é".repeat(CELL / 2 + 1);
    let res = app.patch(
        &format!("/v1/views/{view}/records/r"),
        &json!({"cells": [{"columnId": "t", "value": wide}]}),
    );
    res.assert_error(400, "badRequest");
    app.assert_healthy();
    app.assert_unchanged(&records_path(&view), &before);
    // Exactly 4 MiB is a cell; a formula reads it but builds at most 1 MiB.
    let res = app.patch(
        &records_path(&view),
        &json!([{"id": "r", "cells": [{"columnId": "t", "value": "y".repeat(CELL)}]}]),
    );
    res.assert_status(200);
    assert_eq!(value_of(&app, &view, "t").as_str().map(str::len), Some(CELL));
    for (id, text) in [("len", "LEN([t])"), ("longer", "[t] & \"!\""), ("left", "LEFT([t], 3)")] {
        app.create_column(
            &view,
            json!({"id": id, "name": id, "type": "formula", "formula": {"formulaText": text}}),
        );
    }
    assert_eq!(value_of(&app, &view, "len").as_f64(), Some(CELL as f64));
    assert_eq!(value_of(&app, &view, "longer"), json!("#VALUE!"));
    assert_eq!(value_of(&app, &view, "left"), json!("yyy"));
}

/// A view with a 100 KB cell and the query string naming its column `n` times.
fn repeated_ids(app: &TestApp, n: usize) -> (String, String) {
    let view = one_record_grid(app, &"z".repeat(100_000));
    let ids = vec!["t"; n].join(",");
    (view, ids)
}

#[test]
fn repeated_column_ids_count_once_in_listings_shares_and_exports() {
    let app = spawn_app();
    let (view, ids) = repeated_ids(&app, 300);
    let res = app.get(&format!("{}?columnIds={ids},_recordId,t", records_path(&view)));
    let records = res.assert_status(200).as_array().expect("records").clone();
    assert_eq!(records[0]["cells"].as_array().map(Vec::len), Some(1), "one cell");
    assert!(res.bytes.len() < 150_000, "{} bytes", res.bytes.len());

    let share = app.put(&format!("/v1/views/{view}/shares"), &json!({})).assert_status(200).clone();
    let link = share["link"].as_str().expect("link").to_owned();
    let res = follow(&app, &format!("{link}/records?columnIds={ids}"));
    let records = res.assert_status(200).as_array().expect("records").clone();
    assert_eq!(records[0]["cells"].as_array().map(Vec::len), Some(1));

    let res = app.get(&format!("/v1/views/{view}/export?columnIds={ids}"));
    assert_eq!(res.status, 200, "{}", &res.text[..res.text.len().min(300)]);
    assert!(res.bytes.len() < 150_000, "{} bytes", res.bytes.len());
    app.assert_healthy();
}

#[test]
fn more_distinct_column_ids_than_the_view_has_is_bad_request() {
    let app = spawn_app();
    let view = one_record_grid(&app, "v");
    let before = app.snapshot(&records_path(&view));
    // One column and the four predefined ones may be named.
    let fine = "t,_recordId,_path,_lastModifiedTime,_lastModifiedBy,t";
    app.get(&format!("{}?columnIds={fine}", records_path(&view))).assert_status(200);
    let res = app.get(&format!("{}?columnIds={fine},a", records_path(&view)));
    res.assert_error(400, "badRequest");
    let many: Vec<String> = (0..5000).map(|i| format!("c{i}")).collect();
    let res = app.get(&format!("{}?columnIds={}", records_path(&view), many.join(",")));
    res.assert_error(400, "badRequest");
    let share = app.put(&format!("/v1/views/{view}/shares"), &json!({})).assert_status(200).clone();
    let link = share["link"].as_str().expect("link").to_owned();
    follow(&app, &format!("{link}/records?columnIds={fine},a,b")).assert_error(400, "badRequest");
    app.get(&format!("/v1/views/{view}/export?columnIds={fine},a")).assert_error(400, "badRequest");
    // An unknown id within the bound is still 404.
    app.get(&format!("{}?columnIds=nope", records_path(&view)))
        .assert_error(404, "columnNotFoundInView");
    app.assert_healthy();
    app.assert_unchanged(&records_path(&view), &before);
}

#[test]
fn offsets_near_the_largest_integer_do_not_wrap() {
    let app = spawn_app();
    let (_, view) = app.create_grid("paging");
    let records: Vec<Value> = (0..5).map(|i| json!({"id": format!("p{i}")})).collect();
    app.add_records(&view, Value::Array(records));
    let max = u64::MAX as usize;
    for (offset, limit) in [(max, 1000), (max - 3, 1000), (max - 1000, 1000), (max, 1), (4, 1000)] {
        let res = app.get(&format!("{}?{}", records_path(&view), page_query(offset, limit)));
        let body = res.assert_status(200);
        let expected = usize::from(offset == 4);
        assert_eq!(body.as_array().map(Vec::len), Some(expected), "offset {offset}");
        assert_eq!(res.header("x-total-count"), Some("5"));
        assert_eq!(link(&res, "next"), None, "offset {offset}: {:?}", res.header("link"));
        let prev = link(&res, "prev").expect("a prev link");
        let expected = format!("\"offset\":{}", offset.saturating_sub(limit));
        let decoded = prev.replace("%22", "\"").replace("%3A", ":").replace("%2C", ",");
        assert!(decoded.contains(&expected), "{decoded} lacks {expected}");
    }
    let res = app.get(&format!("{}?{}", records_path(&view), page_query(0, 2)));
    assert!(link(&res, "next").is_some_and(|n| n.contains("%22offset%22%3A2")));
    let res = app.get(&format!("/v1/views/{view}/records/p1/histories?{}", page_query(max, 1)));
    assert_eq!(res.assert_status(200).as_array().map(Vec::len), Some(0));
    app.assert_healthy();
}

#[test]
fn a_re_enabled_share_link_has_a_new_token_and_the_old_one_stays_dead() {
    let app = spawn_app();
    let view = one_record_grid(&app, "shared");
    let path = format!("/v1/views/{view}/shares");
    let first = app.put(&path, &json!({})).assert_status(200)["link"].clone();
    let first = first.as_str().expect("link").to_owned();
    follow(&app, &first).assert_status(200);
    app.delete(&path).assert_status(204);
    let second = app.put(&path, &json!({})).assert_status(200)["link"].clone();
    let second = second.as_str().expect("link").to_owned();
    assert_ne!(first, second);
    follow(&app, &first).assert_error(404, "shareIsNotFound");
    follow(&app, &format!("{first}/records")).assert_error(404, "shareIsNotFound");
    follow(&app, &second).assert_status(200);
    let path_of = |link: &str| link.strip_prefix(&app.base).expect("under the base").to_owned();
    let (first, second) = (path_of(&first), path_of(&second));
    let app = app.restart();
    let public = |path: &str| app.call(Method::GET, path, None, None);
    public(&first).assert_error(404, "shareIsNotFound");
    public(&second).assert_status(200);
    app.assert_healthy();
}

#[test]
fn share_pages_and_requests_without_a_valid_key_are_rate_limited() {
    let app = spawn_app_with(|c| {
        c.rate_limit = 0.01;
        c.rate_burst = 3;
    });
    let public = |path: &str| app.call(Method::GET, path, None, None);
    for _ in 0..3 {
        public("/share/notarealtoken").assert_error(404, "shareIsNotFound");
    }
    let res = public("/share/notarealtoken/records");
    res.assert_error(429, "tooManyRequests");
    assert!(res.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok_and(|n| n >= 1)));
    // Unknown and missing keys share the client's bucket, which is spent.
    let res = app.call(Method::GET, "/v1/projects", Some("not-a-key"), None);
    res.assert_error(429, "tooManyRequests");
    assert!(res.header("retry-after").is_some());
    public("/v1/projects").assert_error(429, "tooManyRequests");
    // A valid key has its own bucket.
    app.get("/v1/projects").assert_status(200);
    app.assert_healthy();
}

#[test]
fn unknown_keys_are_limited_from_a_fresh_client_bucket() {
    let app = spawn_app_with(|c| {
        c.rate_limit = 0.01;
        c.rate_burst = 2;
    });
    for _ in 0..2 {
        app.call(Method::GET, "/v1/projects", Some("guess"), None)
            .assert_error(401, "unauthorized");
    }
    let res = app.call(Method::GET, "/v1/projects", Some("guess"), None);
    res.assert_error(429, "tooManyRequests");
    app.get("/v1/projects").assert_status(200);
}

/// `n` single-line column requests `c0000`...
fn column_requests(n: usize, prefix: &str) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"id": format!("{prefix}{i:04}"), "name": format!("{prefix}{i}"),
                          "type": "singleLine"})
        })
        .collect()
}

#[test]
fn a_grid_has_at_most_a_thousand_columns_and_finds_them_by_hash() {
    let app = spawn_app();
    let db = app.default_db();
    let grids = format!("/v1/grids?dbId={db}");
    let before = app.snapshot(&format!("/v1/grids?dbId={db}"));
    let res = app.post(&grids, &json!({"name": "wide", "columns": column_requests(1001, "c")}));
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("1000"), "{}", res.text);
    app.assert_unchanged(&grids, &before);

    let res = app.post(&grids, &json!({"name": "wide", "columns": column_requests(1000, "c")}));
    let grid = res.assert_status(201).clone();
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    let grid_id = grid["id"].as_str().expect("grid").to_owned();
    let columns = format!("/v1/views/{view}/columns");
    let schema = app.snapshot(&format!("/v1/views/{view}"));
    let res = app.post(&columns, &json!({"id": "extra", "name": "Extra", "type": "number"}));
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("1000"), "{}", res.text);
    app.assert_unchanged(&format!("/v1/views/{view}"), &schema);
    // A template's columns count too.
    let res = app.post(
        &grids,
        &json!({"name": "copy", "templateGridId": grid_id, "columns": column_requests(1, "x")}),
    );
    res.assert_error(400, "badRequest");
    app.post(&grids, &json!({"name": "copy", "templateGridId": grid_id})).assert_status(201);

    // A record writing every column, and reads naming every column, stay quick.
    let cells: Vec<Value> =
        (0..1000).map(|i| json!({"columnId": format!("c{i:04}"), "value": "v"})).collect();
    let records: Vec<Value> =
        (0..100).map(|r| json!({"id": format!("r{r}"), "cells": cells})).collect();
    let start = Instant::now();
    app.add_records(&view, Value::Array(records));
    let ids: Vec<String> = (0..1000).rev().map(|i| format!("c{i:04}")).collect();
    let res = app.get(&format!("{}?columnIds={}", records_path(&view), ids.join(",")));
    assert_eq!(res.assert_status(200).as_array().map(Vec::len), Some(100));
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
    app.assert_healthy();
    let app = app.restart();
    let res =
        app.post(&format!("/v1/views/{view}/columns"), &json!({"name": "E", "type": "number"}));
    res.assert_error(400, "badRequest");
    let records = app.records(&view);
    assert_eq!(cell(&records[0], "c0999")["value"], json!("v"));
}

/// A body of 200,000 tiny records (3 MB) is refused by its count, which the refusal names:
/// the records past the 1000 a write may carry are read and counted, never kept (at 64 bytes
/// a cell and room for 16 cells a record, keeping them took 200 MB).
#[test]
fn a_body_of_a_great_many_tiny_records_is_refused_by_its_count() {
    let app = spawn_app();
    let view = one_record_grid(&app, "kept");
    let path = format!("/v1/views/{view}/records");
    let n = 200_000;
    for record in [r#"{"cells": [{}]}"#, r#"{"x": 0, "cells": [{}]}"#] {
        let body = format!("[{}]", vec![record; n].join(","));
        for method in [Method::POST, Method::PATCH] {
            let res = app.raw(method, &path, "application/json", body.clone().into_bytes());
            res.assert_error(400, "requestRecordsExceedLimitation");
            assert!(res.text.contains(&format!("this one has {n}")), "{}", res.text);
        }
    }
    assert_eq!(value_of(&app, &view, "t"), json!("kept"));
    app.get("/healthz").assert_status(200);
}

/// A body of a great many tiny JSON values (a 4 MB array of empty objects in a JSON cell's
/// value, which parsed took some 35 times its size) is refused before it is parsed, with 413;
/// a body as large whose commas are inside strings is read as before.
#[test]
fn a_body_of_a_great_many_tiny_values_is_refused_before_it_is_parsed() {
    let app = spawn_app();
    let view = one_record_grid(&app, "kept");
    app.create_column(&view, json!({"id": "j", "name": "J", "type": "json"}));
    let path = format!("/v1/views/{view}/records");
    let objects = vec!["{}"; 1_400_000].join(",");
    let body = format!(r#"[{{"id": "r", "cells": [{{"columnId": "j", "value": [{objects}]}}]}}]"#);
    for method in [Method::POST, Method::PATCH] {
        let res = app.raw(method, &path, "application/json", body.clone().into_bytes());
        res.assert_error(413, "payloadTooLarge");
        assert!(res.text.contains("2000000 JSON values"), "{}", res.text);
    }
    let one = format!(r#"{{"cells": [{{"columnId": "j", "value": [{objects}]}}]}}"#);
    let res = app.raw(Method::PATCH, &format!("{path}/r"), "application/json", one.into_bytes());
    res.assert_error(413, "payloadTooLarge");
    assert_eq!(value_of(&app, &view, "t"), json!("kept"));
    let commas = ", ".repeat(1_400_000);
    let body = json!([{"id": "r", "cells": [{"columnId": "t", "value": commas}]}]);
    let res = app.raw(Method::PATCH, &path, "application/json", body.to_string().into_bytes());
    res.assert_status(200);
    assert_eq!(value_of(&app, &view, "t").as_str().map(str::len), Some(commas.len()));
    app.get("/healthz").assert_status(200);
}
