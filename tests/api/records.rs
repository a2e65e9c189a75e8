//! Records over HTTP: add, bulk and single update, delete (by ids and by identifiers), listing
//! with paging, `columnIds`, `X-Total-Count` and `Link`, the rules of issue 3, order, unicode,
//! long values and restarts. Value formats per column type live in `records::values`.

mod bodies;
mod rules;
mod values;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{cell, follow, link, links, page_query, spawn_app, Resp, TestApp};

/// The columns of `typed_grid`, in view order.
pub const TYPED_COLUMNS: [&str; 15] = [
    "title", "notes", "rich", "md", "page", "lang", "count", "qty", "done", "due", "kind", "tags",
    "files", "meta", "conf",
];

/// A grid with one column of every writable type: (grid id, default view id).
pub fn typed_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Typed");
    let options = |values: &[&str]| json!({"options": values.iter().map(|v| json!({"value": v})).collect::<Vec<_>>()});
    for column in [
        json!({"id": "title", "name": "Title", "type": "singleLine"}),
        json!({"id": "notes", "name": "Notes", "type": "multipleLines"}),
        json!({"id": "rich", "name": "Rich", "type": "richText"}),
        json!({"id": "md", "name": "Markdown", "type": "markdown"}),
        json!({"id": "page", "name": "Page", "type": "html"}),
        json!({"id": "lang", "name": "English", "type": "language", "languageCode": "enUS"}),
        json!({"id": "count", "name": "Count", "type": "number"}),
        json!({"id": "qty", "name": "Quantity", "type": "number",
               "numberFormat": {"type": "integer"}}),
        json!({"id": "done", "name": "Done", "type": "boolean"}),
        json!({"id": "due", "name": "Due", "type": "datetime"}),
        json!({"id": "kind", "name": "Kind", "type": "singleSelection",
               "selection": options(&["bug", "task"])}),
        json!({"id": "tags", "name": "Tags", "type": "multipleSelections",
               "selection": options(&["x", "y", "z"])}),
        json!({"id": "files", "name": "Files", "type": "files"}),
        json!({"id": "meta", "name": "Meta", "type": "json"}),
        json!({"id": "conf", "name": "Config", "type": "yaml"}),
    ] {
        app.create_column(&view, column);
    }
    (grid, view)
}

/// A grid with one single-line column `title`: (grid id, default view id).
pub fn simple_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Simple");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    (grid, view)
}

/// Records with the given ids and a title naming each.
pub fn titled(ids: impl IntoIterator<Item = String>) -> Value {
    ids.into_iter()
        .map(|id| json!({"id": id, "cells": [{"columnId": "title", "value": format!("T {id}")}]}))
        .collect()
}

/// The ids of a list of records, in order.
pub fn ids_of(records: &[Value]) -> Vec<String> {
    records.iter().map(|r| r["id"].as_str().expect("record id").to_owned()).collect()
}

/// Asserts a write was refused with `status` and `code` and left the view's records as `before`.
#[track_caller]
pub fn assert_refused(
    app: &TestApp,
    view: &str,
    res: &Resp,
    status: u16,
    code: &str,
    before: &[Value],
) {
    res.assert_error(status, code);
    assert_eq!(app.records(view), before, "a refused write changed the records: {}", res.text);
}

fn total(res: &Resp) -> usize {
    res.header("x-total-count").and_then(|v| v.parse().ok()).expect("X-Total-Count")
}

fn list(app: &TestApp, view: &str, query: &str) -> Resp {
    app.get(&format!("/v1/views/{view}/records?{query}"))
}

#[test]
fn add_returns_201_with_every_view_column_and_empty_cells() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let res = app.post(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "title", "value": "Hello"}]}]),
    );
    assert_eq!(res.header("content-type"), Some("application/json"));
    let added = res.assert_status(201).as_array().expect("a list").clone();
    assert_eq!(added.len(), 1);
    let record = &added[0];
    assert_eq!(record["id"], "r1");
    assert_eq!(record["path"], "");
    let columns: Vec<&str> = record["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| c["columnId"].as_str().expect("column id"))
        .collect();
    assert_eq!(columns, TYPED_COLUMNS);
    assert_eq!(cell(record, "title")["value"], "Hello");
    for column in ["notes", "rich", "md", "page", "lang", "kind", "meta", "conf"] {
        assert_eq!(cell(record, column)["value"], json!(""), "{column}");
    }
    for column in ["tags", "files"] {
        assert_eq!(cell(record, column)["value"], json!([]), "{column}");
    }
    for column in ["count", "qty", "done", "due"] {
        assert_eq!(cell(record, column)["value"], Value::Null, "{column}");
    }
    assert!(record["lastModifiedBy"].as_str().is_some_and(|u| !u.is_empty()), "{record}");
    assert!(record["lastModifiedTime"].is_string(), "{record}");
    assert_eq!(app.records(&view), added);
}

/// A bulk add's answer is the records it added, as a listing then shows them, also after
/// deletes compacted the branch (rows renumbered under the next add).
#[test]
fn a_bulk_add_answers_with_the_records_it_added_as_listed() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let path = format!("/v1/views/{view}/records");
    for first in [0, 1000] {
        app.add_records(&view, titled((first..first + 1000).map(|i| format!("r{i}"))));
    }
    let gone: Vec<String> = (0..1200).map(|i| format!("r{}", i * 5 / 3)).collect();
    let res = app.delete_with(&path, &json!({ "ids": gone }));
    assert_eq!(res.status, 204, "{}", res.text);
    let res = app.post(&path, &titled(["z", "b", "m"].map(str::to_owned)));
    let added = res.assert_status(201).as_array().expect("a list").clone();
    assert_eq!(ids_of(&added), ["z", "b", "m"]);
    assert_eq!(cell(&added[1], "title")["value"], "T b");
    let listed = app.records(&view);
    assert_eq!(listed.len(), 2000 - 1200 + 3);
    assert_eq!(listed[listed.len() - 3..], added[..]);
}

/// The records of one add may list their columns in any order, each its own: every value lands
/// in the column it names, and a column named twice in one record is refused there, whatever
/// the records before it named at the same places.
#[test]
fn records_of_one_add_name_their_columns_in_orders_of_their_own() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.create_column(&view, json!({"id": "body", "name": "Body", "type": "multipleLines"}));
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    let path = format!("/v1/views/{view}/records");
    let cells = |pairs: &[(&str, Value)]| -> Value {
        pairs.iter().map(|(c, v)| json!({"columnId": c, "value": v})).collect()
    };
    let before = app.records(&view);
    let twice = json!([
        {"id": "a", "cells": cells(&[("title", json!("t")), ("body", json!("b"))])},
        {"id": "b", "cells": cells(&[("body", json!("b")), ("body", json!("again"))])},
    ]);
    let res = app.post(&path, &twice);
    assert_refused(&app, &view, &res, 400, "badRequest", &before);
    assert!(
        res.text.contains("records[1].cells[1]") && res.text.contains("written twice"),
        "{}",
        res.text
    );
    let records = json!([
        {"id": "a", "cells": cells(&[("title", json!("ta")), ("body", json!("ba")), ("n", json!(1))])},
        {"id": "b", "cells": cells(&[("n", json!(2)), ("title", json!("tb")), ("body", json!("bb"))])},
        {"id": "c", "cells": cells(&[("body", json!("bc"))])},
        {"id": "d", "cells": cells(&[("title", json!("td")), ("body", json!("bd")), ("n", json!(4))])},
    ]);
    app.post(&path, &records).assert_status(201);
    let listed = app.records(&view);
    let read = |at: usize, column: &str| cell(&listed[at], column)["value"].clone();
    assert_eq!(ids_of(&listed), ["a", "b", "c", "d"]);
    assert_eq!(
        [read(0, "title"), read(0, "body"), read(0, "n")],
        [json!("ta"), json!("ba"), json!(1)]
    );
    assert_eq!(
        [read(1, "title"), read(1, "body"), read(1, "n")],
        [json!("tb"), json!("bb"), json!(2)]
    );
    assert_eq!(
        [read(2, "title"), read(2, "body"), read(2, "n")],
        [json!(""), json!("bc"), json!(null)]
    );
    assert_eq!(
        [read(3, "title"), read(3, "body"), read(3, "n")],
        [json!("td"), json!("bd"), json!(4)]
    );
}

#[test]
fn add_without_an_id_generates_one() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let added =
        app.add_records(&view, json!([{"cells": [{"columnId": "title", "value": "a"}]}, {}]));
    let ids = ids_of(&added);
    assert_eq!(ids.len(), 2);
    for id in &ids {
        assert_eq!(id.len(), 14, "{id}");
        assert!(id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{id}");
    }
    assert_ne!(ids[0], ids[1]);
    assert_eq!(ids_of(&app.records(&view)), ids);
}

#[test]
fn bulk_patch_updates_the_given_cells_and_leaves_the_others() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    app.add_records(
        &view,
        json!([
            {"id": "r1", "cells": [{"columnId": "title", "value": "one"},
                                   {"columnId": "count", "value": 1},
                                   {"columnId": "tags", "value": ["x"]}]},
            {"id": "r2", "cells": [{"columnId": "title", "value": "two"},
                                   {"columnId": "count", "value": 2}]},
            {"id": "r3", "cells": [{"columnId": "title", "value": "three"}]},
        ]),
    );
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([
            {"id": "r1", "cells": [{"columnId": "count", "value": 10}]},
            {"id": "r2", "cells": [{"columnId": "title", "value": "TWO"},
                                   {"columnId": "done", "value": true}]},
        ]),
    );
    let updated = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(ids_of(&updated), ["r1", "r2"]);
    assert_eq!(updated[0]["cells"].as_array().map(Vec::len), Some(TYPED_COLUMNS.len()));
    let all = app.records(&view);
    assert_eq!(&all[..2], &updated[..]);
    assert_eq!(cell(&all[0], "title")["value"], "one");
    assert_eq!(cell(&all[0], "count")["value"], 10);
    assert_eq!(cell(&all[0], "tags")["value"], json!(["x"]));
    assert_eq!(cell(&all[1], "title")["value"], "TWO");
    assert_eq!(cell(&all[1], "count")["value"], 2);
    assert_eq!(cell(&all[1], "done")["value"], true);
    assert_eq!(cell(&all[2], "title")["value"], "three");
}

#[test]
fn single_patch_renames_and_moves_a_record_in_place() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1", "r2", "r3"].map(String::from)));
    let res = app.patch(
        &format!("/v1/views/{view}/records/r2"),
        &json!({"id": "r2-renamed", "cells": [{"columnId": "title", "value": "renamed"}]}),
    );
    let body = res.assert_status(200);
    assert_eq!(body["id"], "r2-renamed");
    assert_eq!(cell(body, "title")["value"], "renamed");
    let res = app.patch(&format!("/v1/views/{view}/records/r3"), &json!({"path": "folder/sub"}));
    let body = res.assert_status(200);
    assert_eq!(body["id"], "r3");
    assert_eq!(body["path"], "folder/sub");
    assert_eq!(cell(body, "title")["value"], "T r3");
    let all = app.records(&view);
    assert_eq!(ids_of(&all), ["r1", "r2-renamed", "r3"]);
    assert_eq!(all[2]["path"], "folder/sub");
    let before = all;
    let res = app.patch(&format!("/v1/views/{view}/records/r2"), &json!({"cells": []}));
    assert_refused(&app, &view, &res, 404, "nonexistentRecordId", &before);
    let res = app.patch(&format!("/v1/views/{view}/records/r1"), &json!({"id": "r3"}));
    assert_refused(&app, &view, &res, 409, "recordIdAlreadyExists", &before);
}

#[test]
fn delete_by_ids_answers_204_with_an_empty_body() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled((1..=4).map(|i| format!("r{i}"))));
    let res = app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r2", "r4"]}));
    assert_eq!(res.status, 204, "{}", res.text);
    assert_eq!(res.text, "");
    let before = app.records(&view);
    assert_eq!(ids_of(&before), ["r1", "r3"]);
    let res = app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r1", "r2"]}));
    assert_refused(&app, &view, &res, 404, "nonexistentRecordId", &before);
    let res = app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r1", "r1"]}));
    assert_refused(&app, &view, &res, 400, "duplicateRecordId", &before);
    let res = app.delete_with(&format!("/v1/views/{view}/records"), &json!({}));
    assert_refused(&app, &view, &res, 400, "badRequest", &before);
}

#[test]
fn delete_by_identifiers_in_a_path_tag_grid() {
    let app = spawn_app();
    let db = app.default_db();
    let res = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "Paths", "recordIdentifierType": "pathTagRecordId"}),
    );
    let view = res.assert_status(201)["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    app.add_records(
        &view,
        json!([{"id": "r", "path": "a"}, {"id": "r", "path": "b"}, {"id": "s", "path": "a"}]),
    );
    let before = app.records(&view);
    assert_eq!(before.len(), 3);
    let res = app.post(&format!("/v1/views/{view}/records"), &json!([{"id": "r", "path": "a"}]));
    assert_refused(&app, &view, &res, 409, "recordIdAlreadyExists", &before);
    let res = app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r"]}));
    assert_refused(&app, &view, &res, 400, "badRequest", &before);
    let res = app.delete_with(
        &format!("/v1/views/{view}/records"),
        &json!({"identifiers": [{"id": "r", "path": "c"}]}),
    );
    assert_refused(&app, &view, &res, 404, "nonexistentRecordId", &before);
    let res = app.delete_with(
        &format!("/v1/views/{view}/records"),
        &json!({"identifiers": [{"id": "r", "path": "a"}]}),
    );
    assert_eq!(res.status, 204, "{}", res.text);
    assert_eq!(res.text, "");
    let left: Vec<(Value, Value)> =
        app.records(&view).iter().map(|r| (r["id"].clone(), r["path"].clone())).collect();
    assert_eq!(left, [(json!("r"), json!("b")), (json!("s"), json!("a"))]);
}

/// In a grid identified by id alone, an identifier's path (when given) is where the record
/// must be; one without a path names the record by id.
#[test]
fn delete_by_identifiers_in_an_id_grid_compares_a_given_path() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, json!([{"id": "r1", "path": "a"}, {"id": "r2", "path": "b"}]));
    let before = app.records(&view);
    let url = format!("/v1/views/{view}/records");
    let res = app.delete_with(&url, &json!({"identifiers": [{"id": "r1", "path": "b"}]}));
    assert_refused(&app, &view, &res, 404, "nonexistentRecordId", &before);
    assert!(res.text.contains("path"), "{}", res.text);
    let res = app.delete_with(&url, &json!({"identifiers": [{"id": "r1", "path": "a"}]}));
    assert_eq!(res.status, 204, "{}", res.text);
    let res = app.delete_with(&url, &json!({"identifiers": [{"id": "r2"}]}));
    assert_eq!(res.status, 204, "{}", res.text);
    assert!(app.records(&view).is_empty());
}

#[test]
fn patch_one_record_by_path_and_id() {
    let app = spawn_app();
    let db = app.default_db();
    let res = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "Paths", "recordIdentifierType": "pathTagRecordId"}),
    );
    let view = res.assert_status(201)["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    app.add_records(&view, json!([{"id": "r", "path": "a"}, {"id": "r", "path": "b"}]));
    let before = app.records(&view);
    let set = json!({"cells": [{"columnId": "title", "value": "B"}]});
    let res = app.patch(&format!("/v1/views/{view}/records/r?path=c"), &set);
    assert_refused(&app, &view, &res, 404, "nonexistentRecordId", &before);
    let moved = json!({"path": "a", "cells": [{"columnId": "title", "value": "B"}]});
    let res = app.patch(&format!("/v1/views/{view}/records/r?path=b"), &moved);
    assert_refused(&app, &view, &res, 400, "badRequest", &before);

    let res = app.patch(&format!("/v1/views/{view}/records/r?path=b"), &set);
    let body = res.assert_status(200);
    assert_eq!((&body["id"], &body["path"]), (&json!("r"), &json!("b")));
    let titles: Vec<(Value, Value)> = app
        .records(&view)
        .iter()
        .map(|r| (r["path"].clone(), cell(r, "title")["value"].clone()))
        .collect();
    assert_eq!(titles, [(json!("a"), json!("")), (json!("b"), json!("B"))]);

    // In a grid identified by record id alone, the path must be the record's own.
    let (_, plain) = simple_grid(&app);
    app.add_records(&plain, json!([{"id": "x", "path": "p/q"}]));
    let before = app.records(&plain);
    let res = app.patch(&format!("/v1/views/{plain}/records/x?path=p"), &set);
    assert_refused(&app, &plain, &res, 404, "nonexistentRecordId", &before);
    let res = app.patch(&format!("/v1/views/{plain}/records/x?path=p%2Fq"), &set);
    assert_eq!(res.assert_status(200)["path"], json!("p/q"));
}

#[test]
fn listing_pages_with_total_count_and_absolute_links() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled((0..5).map(|i| format!("r{i}"))));
    let res = list(&app, &view, &page_query(1, 2));
    let page = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(ids_of(&page), ["r1", "r2"]);
    assert_eq!(total(&res), 5);
    let next = link(&res, "next").expect("a next link");
    let prev = link(&res, "prev").expect("a prev link");
    assert!(next.starts_with(&format!("{}/v1/views/{view}/records?", app.base)), "{next}");
    let res = follow(&app, &next);
    assert_eq!(ids_of(res.assert_status(200).as_array().expect("a list")), ["r3", "r4"]);
    assert_eq!(link(&res, "next"), None);
    assert!(link(&res, "prev").is_some());
    let res = follow(&app, &prev);
    assert_eq!(ids_of(res.assert_status(200).as_array().expect("a list")), ["r0", "r1"]);
    assert_eq!(link(&res, "prev"), None);
    let res = list(&app, &view, "");
    assert_eq!(res.assert_status(200).as_array().map(Vec::len), Some(5));
    assert!(links(&res).is_empty(), "{:?}", res.header("link"));
}

#[test]
fn page_is_accepted_url_encoded_with_spaces_and_raw() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled((0..5).map(|i| format!("r{i}"))));
    for query in [
        "page=%7B%22offset%22%3A3%2C%22limit%22%3A1%7D".to_owned(),
        "page=%7B%20%22offset%22%20%3A%203%20%2C%20%22limit%22%20%3A%201%20%7D".to_owned(),
        "page={\"offset\":3,\"limit\":1}".to_owned(),
        "page={ \"limit\": 1, \"offset\": 3 }".to_owned(),
        "page=%7B+%22offset%22%3A+3%2C+%22limit%22%3A+1+%7D".to_owned(),
    ] {
        let res = list(&app, &view, &query);
        assert_eq!(ids_of(res.assert_status(200).as_array().expect("a list")), ["r3"], "{query}");
        assert_eq!(total(&res), 5, "{query}");
    }
    let res = list(&app, &view, "page=%7B%22offset%22%3A4%7D");
    assert_eq!(ids_of(res.assert_status(200).as_array().expect("a list")), ["r4"]);
    let res = list(&app, &view, "page=%7B%22limit%22%3A2%7D");
    assert_eq!(ids_of(res.assert_status(200).as_array().expect("a list")), ["r0", "r1"]);
}

#[test]
fn no_page_means_the_first_100_and_a_limit_over_1000_is_served_as_1000() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled((0..1000).map(|i| format!("r{i:04}"))));
    app.add_records(&view, titled((1000..1010).map(|i| format!("r{i:04}"))));
    let res = list(&app, &view, "");
    let page = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(page.len(), 100);
    assert_eq!(page[99]["id"], "r0099");
    assert_eq!(total(&res), 1010);
    let res = list(&app, &view, &page_query(0, 1500));
    let page = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(page.len(), 1000);
    assert_eq!(page[999]["id"], "r0999");
    let res = follow(&app, &link(&res, "next").expect("a next link"));
    assert_eq!(
        ids_of(res.assert_status(200).as_array().expect("a list")),
        (1000..1010).map(|i| format!("r{i:04}")).collect::<Vec<_>>()
    );
}

#[test]
fn an_invalid_page_is_400_invalid_paging() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned()]));
    for page in [
        "not json",
        "[0, 10]",
        "{\"offset\":-1,\"limit\":10}",
        "{\"offset\":0,\"limit\":0}",
        "{\"offset\":0,\"limit\":-5}",
        "{\"offset\":1.5,\"limit\":10}",
        "{\"offset\":0,\"limit\":\"ten\"}",
    ] {
        let query = serde_urlencoded::to_string([("page", page)]).expect("encodes");
        list(&app, &view, &query).assert_error(400, "invalidPaging");
    }
}

#[test]
fn column_ids_limit_the_cells_returned() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "title", "value": "t"},
                                      {"columnId": "count", "value": 4}]}]),
    );
    let res = list(&app, &view, "columnIds=count,title");
    let records = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(
        records[0]["cells"],
        json!([{"columnId": "count", "value": 4}, {"columnId": "title", "value": "t"}])
    );
    app.add_records(&view, json!([{"id": "r2", "cells": [{"columnId": "count", "value": 5}]}]));
    let res = list(&app, &view, &format!("columnIds=count&{}", page_query(0, 1)));
    let next = link(&res, "next").expect("a next link");
    let res = follow(&app, &next);
    let records = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(
        records,
        [json!({"id": "r2", "path": "", "cells": [{"columnId": "count", "value": 5}],
        "lastModifiedBy": records[0]["lastModifiedBy"], "lastModifiedTime": records[0]["lastModifiedTime"]})]
    );
    list(&app, &view, "columnIds=title,nope").assert_error(404, "columnNotFoundInView");
}

#[test]
fn default_order_is_insertion_order() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["c", "a", "b"].map(String::from)));
    app.add_records(&view, titled(["0", "z"].map(String::from)));
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["a"]}))
        .assert_status(204);
    app.patch(&format!("/v1/views/{view}/records"), &json!([{"id": "c", "cells": []}]))
        .assert_status(200);
    app.add_records(&view, titled(["a".to_owned()]));
    assert_eq!(ids_of(&app.records(&view)), ["c", "b", "0", "z", "a"]);
}

#[test]
fn paging_is_stable_while_records_are_appended() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let initial: Vec<String> = (0..300).map(|i| format!("r{i:03}")).collect();
    app.add_records(&view, titled(initial.clone()));
    let appended: Vec<String> = (0..40).map(|i| format!("n{i:03}")).collect();
    let (seen, totals) = std::thread::scope(|s| {
        let appender = s.spawn(|| {
            for batch in appended.chunks(4) {
                app.add_records(&view, titled(batch.to_vec()));
            }
        });
        let mut seen = Vec::new();
        let mut totals = Vec::new();
        for offset in (0..300).step_by(20) {
            let res = list(&app, &view, &page_query(offset, 20));
            seen.extend(ids_of(res.assert_status(200).as_array().expect("a list")));
            totals.push(total(&res));
        }
        appender.join().expect("the appender finishes");
        (seen, totals)
    });
    assert_eq!(seen, initial);
    assert!(totals.windows(2).all(|w| w[0] <= w[1]), "{totals:?}");
    let all = ids_of(&app.records(&view));
    assert_eq!(all[..300], initial[..]);
    assert_eq!(all[300..], appended[..]);
}

#[test]
fn unicode_round_trips_byte_for_byte() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let texts = [
        "漢字かな交じり文、中文简体，한국어",
        "مرحبا بالعالم — שלום עולם",
        "👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 👍🏽",
        "e\u{301}a\u{308}n\u{303} Z\u{335}\u{31b}\u{34c}a\u{337}",
        "\u{200f}\u{202e}RTL override\u{202c} zero\u{200b}width \u{feff}",
        "quotes \" and \\ backslash\ttab\r\nCRLF \u{1} control",
    ];
    let records: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"id": format!("{t}-{i}"), "path": t, "cells": [
                {"columnId": "title", "value": t}, {"columnId": "notes", "value": t},
                {"columnId": "lang", "value": t}, {"columnId": "meta", "value": {"k": t}}]})
        })
        .collect();
    let added = app.add_records(&view, json!(records));
    let listed = app.records(&view);
    assert_eq!(listed, added);
    for (i, (record, text)) in listed.iter().zip(texts).enumerate() {
        assert_eq!(record["id"].as_str(), Some(format!("{text}-{i}").as_str()));
        assert_eq!(record["path"].as_str(), Some(text));
        for column in ["title", "notes", "lang"] {
            let value = cell(record, column)["value"].as_str().expect("a string");
            assert_eq!(value.as_bytes(), text.as_bytes(), "{column}");
        }
        let meta: Value =
            serde_json::from_str(cell(record, "meta")["value"].as_str().expect("json text"))
                .expect("valid JSON");
        assert_eq!(meta, json!({"k": text}));
    }
    let id = format!("{}-1", texts[1]);
    let encoded: String = serde_urlencoded::to_string([("x", &id)]).expect("encodes");
    let res = app.patch(
        &format!(
            "/v1/views/{view}/records/{}",
            encoded.trim_start_matches("x=").replace('+', "%20")
        ),
        &json!({"cells": [{"columnId": "title", "value": texts[2]}]}),
    );
    assert_eq!(cell(res.assert_status(200), "title")["value"], texts[2]);
}

#[test]
fn long_values_round_trip_and_survive_a_restart() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let kb100: String = "0123456789abcdéf漢👍".chars().cycle().take(100 * 1024).collect();
    let mb1: String = "ABCDEFGHIJ\nklmnöpqrst\u{301}".chars().cycle().take(1024 * 1024).collect();
    let added = app.add_records(
        &view,
        json!([{"id": "k100", "cells": [{"columnId": "notes", "value": kb100}]},
               {"id": "m1", "cells": [{"columnId": "md", "value": mb1}]}]),
    );
    assert_eq!(cell(&added[0], "notes")["value"].as_str(), Some(kb100.as_str()));
    assert_eq!(cell(&added[1], "md")["value"].as_str(), Some(mb1.as_str()));
    let before = app.records(&view);
    assert_eq!(before, added);
    let app = app.restart();
    let after = app.records(&view);
    assert_eq!(after, before);
    assert_eq!(cell(&after[1], "md")["value"].as_str().map(str::len), Some(mb1.len()));
}

#[test]
fn records_survive_a_restart() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    app.add_records(
        &view,
        json!([
            {"id": "a", "path": "p/q", "cells": [{"columnId": "title", "value": "A"},
                {"columnId": "count", "value": 1.5}, {"columnId": "done", "value": true},
                {"columnId": "due", "value": "2026-01-31T10:15:30.250Z"},
                {"columnId": "tags", "value": ["x", "y"]}, {"columnId": "meta", "value": {"a": 1}}]},
            {"id": "b", "cells": [{"columnId": "title", "value": "B"}]},
            {"id": "c", "cells": [{"columnId": "title", "value": "C"}]},
        ]),
    );
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "a", "cells": [{"columnId": "count", "value": 2}]}]),
    )
    .assert_status(200);
    app.patch(&format!("/v1/views/{view}/records/b"), &json!({"id": "b2", "path": "moved"}))
        .assert_status(200);
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["c"]}))
        .assert_status(204);
    let before = app.records(&view);
    assert_eq!(ids_of(&before), ["a", "b2"]);
    let app = app.restart();
    assert_eq!(app.records(&view), before);
    let added = app.add_records(&view, titled(["c".to_owned()]));
    assert_eq!(ids_of(&added), ["c"]);
    assert_eq!(ids_of(&app.records(&view)), ["a", "b2", "c"]);
}

#[test]
fn a_write_needs_a_key_with_write_privilege() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned()]));
    let before = app.records(&view);
    let reader = app.create_key(&["read"], json!({"all": true}));
    let res = app.call(
        Method::POST,
        &format!("/v1/views/{view}/records"),
        Some(&reader),
        Some(&json!([{"id": "r2"}])),
    );
    assert_refused(&app, &view, &res, 403, "accessDenied", &before);
    let res = app.call(Method::GET, &format!("/v1/views/{view}/records"), Some(&reader), None);
    assert_eq!(res.assert_status(200), &json!(before));
}
