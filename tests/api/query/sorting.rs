//! Sorting: each type with empty values last both ways, numbers numerically and text by code
//! point, several keys, ties in insertion order; sort with query, paging, `Link` and
//! `columnIds`.

use super::*;

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
