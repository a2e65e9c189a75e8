//! Reference columns (issue 9, `/work/formula-design.md`, decisions.md section 4): cells
//! written with one record id or an array of them, read back as `referencedIds` and the
//! referenced column's current `value`s in the same order; unknown ids refused with 404
//! referenceRecordNotFound and nothing written; edits and deletes in the referenced grid seen at
//! the next read; referenced grids in other databases and projects of the company (and not of
//! another company); empty and cleared cells; filter and sort on the ids; a restart; and a page
//! of more than 100 records referencing two grids (the values are looked up in batches). Lookup
//! columns (decisions 12): a column of the referenced records shown through the grid's one
//! reference column to that grid, read-only.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{cell, find_record, page_query, records_path, spawn_app, TestApp};
use crate::records::assert_refused;

// ----- helpers -----

/// A glossary grid in database `db` with singleLine `term` and number `weight`, and one record
/// per (id, term, weight): (grid id, default view id).
fn glossary_in(
    app: &TestApp,
    db: &str,
    name: &str,
    rows: &[(&str, &str, f64)],
) -> (String, String) {
    let res = app.post(&format!("/v1/grids?dbId={db}"), &json!({ "name": name }));
    let body = res.assert_status(201);
    let grid = body["id"].as_str().expect("grid id").to_owned();
    let view = body["defaultAccessViewId"].as_str().expect("view id").to_owned();
    app.create_column(&view, json!({"id": "term", "name": "Term", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "weight", "name": "Weight", "type": "number"}));
    if !rows.is_empty() {
        let records: Vec<Value> = rows
            .iter()
            .map(|(id, term, weight)| {
                json!({"id": id, "cells": [{"columnId": "term", "value": term},
                                           {"columnId": "weight", "value": weight}]})
            })
            .collect();
        app.add_records(&view, Value::Array(records));
    }
    (grid, view)
}

/// The glossary g1 zebra 1, g2 apple 2, g3 mango 3 (id order and term order differ) in the
/// bootstrap database: (grid id, default view id).
fn glossary(app: &TestApp) -> (String, String) {
    let db = app.default_db();
    glossary_in(
        app,
        &db,
        "Glossary",
        &[("g1", "zebra", 1.0), ("g2", "apple", 2.0), ("g3", "mango", 3.0)],
    )
}

/// Rows of owned strings as the borrowed rows `glossary_in` takes.
fn borrowed(rows: &[(String, String, f64)]) -> Vec<(&str, &str, f64)> {
    rows.iter().map(|(id, term, w)| (id.as_str(), term.as_str(), *w)).collect()
}

/// A reference column create request.
fn reference_column(id: &str, grid: &str, column: &str) -> Value {
    json!({"id": id, "name": id.to_uppercase(), "type": "reference",
           "reference": {"gridId": grid, "columnId": column, "type": "row"}})
}

/// A strings grid with singleLine `title`, `ref` referencing the glossary's `term` and `wref`
/// referencing its `weight`: the default view id.
fn strings_grid(app: &TestApp, glossary: &str) -> String {
    let (_, view) = app.create_grid("Strings");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    app.create_column(&view, reference_column("ref", glossary, "term"));
    app.create_column(&view, reference_column("wref", glossary, "weight"));
    view
}

/// A record writing `value` into the reference column `column`.
fn referencing(id: &str, column: &str, value: Value) -> Value {
    json!({"id": id, "cells": [{"columnId": column, "value": value}]})
}

/// (`referencedIds`, `value`) of the cell `column` of `record`.
#[track_caller]
fn refs(record: &Value, column: &str) -> (Value, Value) {
    let c = cell(record, column);
    (c["referencedIds"].clone(), c["value"].clone())
}

/// Asserts the reference cell `column` of record `id` in `records` holds these ids and values.
#[track_caller]
fn assert_refs(records: &[Value], id: &str, column: &str, ids: Value, values: Value) {
    let (got_ids, got_values) = refs(find_record(records, id), column);
    assert_eq!(got_ids, ids, "referencedIds of {id}.{column}: {}", find_record(records, id));
    assert_eq!(got_values, values, "value of {id}.{column}: {}", find_record(records, id));
}

// ----- writes and reads -----

#[test]
fn a_reference_written_as_one_id_or_an_array_reads_its_ids_and_values_in_order() {
    let app = spawn_app();
    let (glossary, _) = glossary(&app);
    let view = strings_grid(&app, &glossary);
    let added = app.add_records(
        &view,
        json!([
            {"id": "s1", "cells": [{"columnId": "ref", "value": "g2"},
                                   {"columnId": "wref", "value": "g2"}]},
            {"id": "s2", "cells": [{"columnId": "ref", "value": ["g3", "g1"]},
                                   {"columnId": "wref", "value": ["g3", "g1", "g2"]}]},
        ]),
    );
    let listed = app.records(&view);
    for records in [&added, &listed] {
        assert_refs(records, "s1", "ref", json!(["g2"]), json!(["apple"]));
        assert_refs(records, "s2", "ref", json!(["g3", "g1"]), json!(["mango", "zebra"]));
        let (ids, weights) = refs(find_record(records, "s2"), "wref");
        assert_eq!(ids, json!(["g3", "g1", "g2"]));
        let weights: Vec<f64> = weights
            .as_array()
            .unwrap_or_else(|| panic!("a list of numbers: {weights}"))
            .iter()
            .map(|w| w.as_f64().unwrap_or_else(|| panic!("a number: {w}")))
            .collect();
        assert_eq!(weights, [3.0, 1.0, 2.0]);
    }
    assert_eq!(listed, added);

    let res = app
        .patch(&records_path(&view), &json!([referencing("s1", "ref", json!(["g1", "g3", "g2"]))]));
    let updated = res.assert_status(200).as_array().expect("a list").clone();
    assert_refs(
        &updated,
        "s1",
        "ref",
        json!(["g1", "g3", "g2"]),
        json!(["zebra", "mango", "apple"]),
    );
    let res = app.patch(
        &format!("{}/s2", records_path(&view)),
        &json!({"cells": [{"columnId": "ref", "value": "g2"}]}),
    );
    let single = res.assert_status(200).clone();
    assert_refs(std::slice::from_ref(&single), "s2", "ref", json!(["g2"]), json!(["apple"]));
    let listed = app.records(&view);
    assert_refs(
        &listed,
        "s1",
        "ref",
        json!(["g1", "g3", "g2"]),
        json!(["zebra", "mango", "apple"]),
    );
    assert_refs(&listed, "s2", "ref", json!(["g2"]), json!(["apple"]));
}

#[test]
fn referenced_ids_write_a_reference_cell_like_value_does() {
    let app = spawn_app();
    let (glossary, _) = glossary(&app);
    let view = strings_grid(&app, &glossary);
    let with_ids = |id: &str, ids: Value| json!({"id": id, "cells": [{"columnId": "ref", "referencedIds": ids}]});
    let added = app.add_records(&view, json!([with_ids("s1", json!(["g3", "g1"]))]));
    assert_refs(&added, "s1", "ref", json!(["g3", "g1"]), json!(["mango", "zebra"]));
    let res = app.patch(&records_path(&view), &json!([with_ids("s1", json!(["g2"]))]));
    assert_refs(
        res.assert_status(200).as_array().expect("records"),
        "s1",
        "ref",
        json!(["g2"]),
        json!(["apple"]),
    );
    let before = app.records(&view);
    let res = app.patch(&records_path(&view), &json!([with_ids("s1", json!(["nope"]))]));
    res.assert_error(404, "referenceRecordNotFound");
    let both = json!([{"id": "s1", "cells": [{"columnId": "ref", "value": "g1", "referencedIds": ["g2"]}]}]);
    app.patch(&records_path(&view), &both).assert_error(400, "badRequest");
    app.patch(&records_path(&view), &json!([with_ids("s1", json!("g1"))]))
        .assert_error(400, "badRequest");
    assert_eq!(app.records(&view), before);
}

#[test]
fn an_unknown_id_is_404_reference_record_not_found_and_nothing_is_written() {
    let app = spawn_app();
    let (glossary, _) = glossary(&app);
    let view = strings_grid(&app, &glossary);
    app.add_records(&view, json!([referencing("s1", "ref", json!("g1")), {"id": "s2"}]));
    let before = app.records(&view);
    let (all, one) = (records_path(&view), format!("{}/s2", records_path(&view)));
    // (what, method, path, body, the unknown id the message names)
    let bad_writes = [
        ("add", Method::POST, &all, json!([referencing("s3", "ref", json!("nope"))]), "nope"),
        (
            "add of an array",
            Method::POST,
            &all,
            json!([referencing("s3", "ref", json!(["g1", "nope"]))]),
            "nope",
        ),
        (
            "add of a batch with one bad record",
            Method::POST,
            &all,
            json!([referencing("s3", "ref", json!("g2")), referencing("s4", "ref", json!("nope")),
                   {"id": "s5", "cells": [{"columnId": "title", "value": "t"}]}]),
            "nope",
        ),
        ("update", Method::PATCH, &all, json!([referencing("s1", "ref", json!("nope"))]), "nope"),
        (
            "update of a batch with one bad record",
            Method::PATCH,
            &all,
            json!([
                referencing("s1", "ref", json!(["g3"])),
                referencing("s2", "wref", json!(["g2", "nope"]))
            ]),
            "nope",
        ),
        (
            "single update",
            Method::PATCH,
            &one,
            json!({"cells": [{"columnId": "title", "value": "x"},
                             {"columnId": "ref", "value": "nope"}]}),
            "nope",
        ),
        (
            "an id of the referencing grid itself",
            Method::PATCH,
            &all,
            json!([referencing("s1", "ref", json!("s2"))]),
            "s2",
        ),
    ];
    for (what, method, path, body, id) in bad_writes {
        let res = app.call(method, path, Some(&app.key), Some(&body));
        assert_eq!(res.status, 404, "{what}: {}", res.text);
        assert_refused(&app, &view, &res, 404, "referenceRecordNotFound", &before);
        let message = res.body["message"].as_str().unwrap_or_default();
        assert!(message.contains(id), "{what}: the message does not name {id}: {message}");
    }
}

/// The referencing grid's actor checks the ids itself while it holds its writes back: a grid
/// referencing its own records, and two grids referencing each other written at once, are
/// answered (the check asks the other actors, and they answer while they check).
#[test]
fn writes_to_grids_referencing_themselves_and_each_other_are_checked() {
    let app = spawn_app();
    let (a_grid, a_view) = glossary(&app);
    app.create_column(&a_view, reference_column("self", &a_grid, "term"));
    let (b_grid, b_view) = app.create_grid("Other");
    app.create_column(&b_view, json!({"id": "term", "name": "Term", "type": "singleLine"}));
    app.create_column(&b_view, reference_column("back", &a_grid, "term"));
    app.create_column(&a_view, reference_column("other", &b_grid, "term"));
    app.add_records(
        &b_view,
        json!([{"id": "b1", "cells": [{"columnId": "term", "value": "pear"}]}]),
    );

    app.add_records(&a_view, json!([referencing("g4", "self", json!(["g1", "g2"]))]));
    let res = app.post(&records_path(&a_view), &json!([referencing("g5", "self", json!("g9"))]));
    res.assert_error(404, "referenceRecordNotFound");
    let records = app.records(&a_view);
    assert_refs(&records, "g4", "self", json!(["g1", "g2"]), json!(["zebra", "apple"]));
    assert!(records.iter().all(|r| r["id"] != "g5"), "a refused write writes nothing");

    std::thread::scope(|scope| {
        for round in 0..20 {
            let (app, a_view, b_view) = (&app, &a_view, &b_view);
            scope.spawn(move || {
                let a = json!([referencing(&format!("a{round}"), "other", json!("b1"))]);
                app.post(&records_path(a_view), &a).assert_status(201);
            });
            scope.spawn(move || {
                let b = json!([referencing(&format!("b{}", round + 2), "back", json!("g3"))]);
                app.post(&records_path(b_view), &b).assert_status(201);
            });
        }
    });
    assert_eq!(app.records(&a_view).len(), 4 + 20);
    let records = app.records(&b_view);
    assert_eq!(records.len(), 1 + 20);
    assert_refs(&records, "b7", "back", json!(["g3"]), json!(["mango"]));
}

#[test]
fn an_edit_of_the_referenced_record_shows_at_the_next_read() {
    let app = spawn_app();
    let (glossary, glossary_view) = glossary(&app);
    let view = strings_grid(&app, &glossary);
    app.add_records(
        &view,
        json!([
            referencing("s1", "ref", json!(["g2", "g1"])),
            referencing("s2", "ref", json!("g2"))
        ]),
    );
    assert_refs(&app.records(&view), "s2", "ref", json!(["g2"]), json!(["apple"]));
    app.patch(
        &records_path(&glossary_view),
        &json!([{"id": "g2", "cells": [{"columnId": "term", "value": "Apfel"}]}]),
    )
    .assert_status(200);
    let listed = app.records(&view);
    assert_refs(&listed, "s1", "ref", json!(["g2", "g1"]), json!(["Apfel", "zebra"]));
    assert_refs(&listed, "s2", "ref", json!(["g2"]), json!(["Apfel"]));
}

#[test]
fn a_deleted_referenced_record_keeps_its_id_and_reads_an_empty_value() {
    let app = spawn_app();
    let (glossary, glossary_view) = glossary(&app);
    let view = strings_grid(&app, &glossary);
    app.add_records(
        &view,
        json!([
            referencing("s1", "ref", json!(["g3", "g1", "g2"])),
            referencing("s2", "ref", json!("g1"))
        ]),
    );
    let res = app.delete_with(&records_path(&glossary_view), &json!({"ids": ["g1"]}));
    assert_eq!(res.status, 204, "{}", res.text);
    let listed = app.records(&view);
    assert_refs(&listed, "s1", "ref", json!(["g3", "g1", "g2"]), json!(["mango", "", "apple"]));
    assert_refs(&listed, "s2", "ref", json!(["g1"]), json!([""]));
    let before = listed;
    let res = app.post(&records_path(&view), &json!([referencing("s3", "ref", json!("g1"))]));
    assert_refused(&app, &view, &res, 404, "referenceRecordNotFound", &before);
}

#[test]
fn an_empty_reference_reads_empty_lists_and_null_empty_text_or_array_clear_one() {
    let app = spawn_app();
    let (glossary, _) = glossary(&app);
    let view = strings_grid(&app, &glossary);
    let added = app.add_records(
        &view,
        json!([{"id": "s1", "cells": [{"columnId": "title", "value": "no reference"}]},
               referencing("s2", "ref", Value::Null),
               referencing("s3", "ref", json!([]))]),
    );
    let listed = app.records(&view);
    for records in [&added, &listed] {
        for id in ["s1", "s2", "s3"] {
            assert_refs(records, id, "ref", json!([]), json!([]));
            assert_refs(records, id, "wref", json!([]), json!([]));
        }
    }
    for empty in [Value::Null, json!(""), json!([])] {
        let res = app
            .patch(&records_path(&view), &json!([referencing("s1", "ref", json!(["g1", "g2"]))]));
        let written = res.assert_status(200).as_array().expect("a list").clone();
        assert_refs(&written, "s1", "ref", json!(["g1", "g2"]), json!(["zebra", "apple"]));
        let res =
            app.patch(&records_path(&view), &json!([referencing("s1", "ref", empty.clone())]));
        let cleared = res.assert_status(200).as_array().expect("a list").clone();
        assert_refs(&cleared, "s1", "ref", json!([]), json!([]));
        assert_refs(&app.records(&view), "s1", "ref", json!([]), json!([]));
    }
}

// ----- where the referenced grid may be -----

#[test]
fn a_grid_in_another_database_or_project_of_the_company_can_be_referenced() {
    let app = spawn_app();
    let project = app.get("/v1/projects").body[0]["id"].clone();
    let res = app.post(&format!("/v1/databases?projectId={project}"), &json!({"name": "Terms"}));
    let same_project_db = res.assert_status(200)["id"].as_str().expect("db id").to_owned();
    let res = app.post("/v1/projects", &json!({"name": "Other"}));
    let other_project = res.assert_status(200)["id"].clone();
    let res =
        app.post(&format!("/v1/databases?projectId={other_project}"), &json!({"name": "Far"}));
    let far_db = res.assert_status(200)["id"].as_str().expect("db id").to_owned();
    let (near, _) = glossary_in(&app, &same_project_db, "Near", &[("n1", "near one", 1.0)]);
    let (far, _) =
        glossary_in(&app, &far_db, "Far", &[("f1", "far one", 10.0), ("f2", "far two", 20.0)]);

    let (_, view) = app.create_grid("Strings");
    let near_column = app.create_column(&view, reference_column("near", &near, "term"));
    assert_eq!(near_column["reference"]["gridId"], json!(near));
    let far_column = app.create_column(&view, reference_column("far", &far, "term"));
    assert_eq!(far_column["reference"]["gridId"], json!(far));
    assert_eq!(far_column["reference"]["grid"]["name"], json!("Far"));
    let added = app.add_records(
        &view,
        json!([{"id": "s1", "cells": [{"columnId": "near", "value": "n1"},
                                      {"columnId": "far", "value": ["f2", "f1"]}]}]),
    );
    let listed = app.records(&view);
    for records in [&added, &listed] {
        assert_refs(records, "s1", "near", json!(["n1"]), json!(["near one"]));
        assert_refs(records, "s1", "far", json!(["f2", "f1"]), json!(["far two", "far one"]));
    }
    let before = listed;
    let res = app.post(&records_path(&view), &json!([referencing("s2", "far", json!("n1"))]));
    assert_refused(&app, &view, &res, 404, "referenceRecordNotFound", &before);
}

#[test]
fn a_grid_of_another_company_cannot_be_referenced() {
    let app = spawn_app();
    let (other, _, their_db) = app.create_company("enterprise");
    let res =
        app.post_as(&other, &format!("/v1/grids?dbId={their_db}"), &json!({"name": "Theirs"}));
    let theirs = res.assert_status(201).clone();
    let their_view = theirs["defaultAccessViewId"].as_str().expect("view");
    app.post_as(
        &other,
        &format!("/v1/views/{their_view}/columns"),
        &json!({"id": "term", "name": "Term", "type": "singleLine"}),
    )
    .assert_status(201);
    let (grid, view) = app.create_grid("Strings");
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    let their_grid = theirs["id"].as_str().expect("grid id");
    app.post(&format!("/v1/views/{view}/columns"), &reference_column("ref", their_grid, "term"))
        .assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
}

// ----- filter, sort, restart -----

/// Strings s1 -> g2, s2 -> g3, s3 -> g1, s4 empty (term order: g2 apple, g3 mango, g1 zebra).
fn sortable(app: &TestApp) -> (String, String) {
    let (glossary, glossary_view) = glossary(app);
    let view = strings_grid(app, &glossary);
    app.add_records(
        &view,
        json!([referencing("s1", "ref", json!("g2")), referencing("s2", "ref", json!("g3")),
               referencing("s3", "ref", json!("g1")), {"id": "s4"}]),
    );
    (glossary_view, view)
}

#[test]
fn a_reference_column_is_filtered_on_its_ids() {
    let app = spawn_app();
    let (_, view) = sortable(&app);
    for (query, expected) in [
        (r#"{"ref": {"contains": "g3"}}"#, vec!["s2"]),
        (r#"{"ref": {"=": "g1"}}"#, vec!["s3"]),
        (r#"{"ref": {"startsWith": "G"}}"#, vec!["s1", "s2", "s3"]),
        (r#"{"ref": {"isEmpty": null}}"#, vec!["s4"]),
        (r#"{"ref": {"contains": "mango"}}"#, vec![]),
    ] {
        assert_eq!(app.listing_ids(&view, &[("query", query)]), expected, "{query}");
    }
}

#[test]
fn a_reference_column_is_sorted_on_its_ids() {
    let app = spawn_app();
    let (_, view) = sortable(&app);
    assert_eq!(app.listing_ids(&view, &[("sort", r#"{"ref": "asc"}"#)]), ["s3", "s1", "s2", "s4"]);
    assert_eq!(app.listing_ids(&view, &[("sort", r#"{"ref": "desc"}"#)]), ["s2", "s1", "s3", "s4"]);
    let res = app.get(&format!(
        "{}?{}",
        records_path(&view),
        serde_urlencoded::to_string([("sort", r#"{"ref": "asc"}"#)]).expect("encodes")
    ));
    let sorted = res.assert_status(200).as_array().expect("a list").clone();
    let terms: Vec<Value> = sorted.iter().map(|r| refs(r, "ref").1).collect();
    assert_eq!(terms, [json!(["zebra"]), json!(["apple"]), json!(["mango"]), json!([])]);
}

#[test]
fn references_survive_a_restart() {
    let app = spawn_app();
    let (glossary_view, view) = sortable(&app);
    app.patch(&records_path(&view), &json!([referencing("s4", "ref", json!(["g3", "g2"]))]))
        .assert_status(200);
    let before = app.records(&view);
    assert_refs(&before, "s4", "ref", json!(["g3", "g2"]), json!(["mango", "apple"]));
    let app = app.restart();
    assert_eq!(app.records(&view), before);
    app.patch(
        &records_path(&glossary_view),
        &json!([{"id": "g3", "cells": [{"columnId": "term", "value": "Mango!"}]}]),
    )
    .assert_status(200);
    let listed = app.records(&view);
    assert_refs(&listed, "s4", "ref", json!(["g3", "g2"]), json!(["Mango!", "apple"]));
    assert_refs(&listed, "s2", "ref", json!(["g3"]), json!(["Mango!"]));
    let res = app.post(&records_path(&view), &json!([referencing("s5", "ref", json!("nope"))]));
    assert_refused(&app, &view, &res, 404, "referenceRecordNotFound", &listed);
}

// ----- many records, two referenced grids -----

#[test]
fn a_page_of_more_than_100_records_referencing_two_grids_reads_every_value() {
    let app = spawn_app();
    let db = app.default_db();
    let a_rows: Vec<(String, String, f64)> =
        (0..60).map(|i| (format!("a{i:02}"), format!("alpha {i}"), f64::from(i))).collect();
    let b_rows: Vec<(String, String, f64)> =
        (0..60).map(|i| (format!("b{i:02}"), format!("beta {i}"), f64::from(i * 10))).collect();
    let (grid_a, _) = glossary_in(&app, &db, "Alpha", &borrowed(&a_rows));
    let (grid_b, _) = glossary_in(&app, &db, "Beta", &borrowed(&b_rows));
    let (_, view) = app.create_grid("Strings");
    app.create_column(&view, reference_column("ra", &grid_a, "term"));
    app.create_column(&view, reference_column("rb", &grid_b, "weight"));
    let expect_a = |i: usize| [i % 60, (i * 7 + 3) % 60];
    let expect_b = |i: usize| (i * 11) % 60;
    let records: Vec<Value> = (0..150)
        .map(|i| {
            let a: Vec<String> = expect_a(i).iter().map(|k| format!("a{k:02}")).collect();
            json!({"id": format!("s{i:03}"), "cells": [
                {"columnId": "ra", "value": a},
                {"columnId": "rb", "value": format!("b{:02}", expect_b(i))}]})
        })
        .collect();
    app.add_records(&view, Value::Array(records));

    let check = |records: &[Value], first: usize| {
        for (offset, record) in records.iter().enumerate() {
            let i = first + offset;
            assert_eq!(record["id"], json!(format!("s{i:03}")));
            let a = expect_a(i);
            let (ids, values) = refs(record, "ra");
            assert_eq!(ids, json!([format!("a{:02}", a[0]), format!("a{:02}", a[1])]), "{record}");
            assert_eq!(
                values,
                json!([format!("alpha {}", a[0]), format!("alpha {}", a[1])]),
                "{record}"
            );
            let b = expect_b(i);
            let (ids, values) = refs(record, "rb");
            assert_eq!(ids, json!([format!("b{b:02}")]), "{record}");
            let weights: Vec<Option<f64>> = values
                .as_array()
                .map(|v| v.iter().map(Value::as_f64).collect())
                .unwrap_or_default();
            assert_eq!(weights, [Some(b as f64 * 10.0)], "{record}");
        }
    };
    let all = app.records(&view);
    assert_eq!(all.len(), 150);
    check(&all, 0);
    let res = app.get(&records_path(&view));
    let first = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(first.len(), 100, "the default page");
    check(&first, 0);
    let res = app.get(&format!("{}?{}", records_path(&view), page_query(100, 100)));
    let second = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(second.len(), 50);
    check(&second, 100);
}

// ----- lookup columns (decisions 12) -----

/// A lookup column showing the glossary's `column` through the grid's reference to it.
fn lookup_column(id: &str, grid: &str, column: &str) -> Value {
    json!({"id": id, "name": id.to_uppercase(), "type": "lookup",
           "reference": {"gridId": grid, "columnId": column}})
}

/// A lookup column shows a column of the records its grid's reference column points at: the
/// referenced ids and their current values, read-only, through a restart.
#[test]
fn a_lookup_column_shows_a_column_of_the_referenced_records() {
    let app = spawn_app();
    let (glossary_grid, glossary_view) = glossary(&app);
    let (_, view) = app.create_grid("Strings");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    app.create_column(&view, reference_column("ref", &glossary_grid, "term"));
    let res = app.post(
        &format!("/v1/views/{view}/columns"),
        &lookup_column("weight", &glossary_grid, "weight"),
    );
    let created = res.assert_status(201);
    assert_eq!(created["type"], json!("lookup"));
    assert_eq!(created["reference"]["gridId"], json!(glossary_grid));
    assert_eq!(created["reference"]["columnId"], json!("weight"));
    app.add_records(
        &view,
        json!([referencing("a", "ref", json!(["g2", "g1"])), {"id": "b", "cells": []}]),
    );
    let listed = app.records(&view);
    assert_refs(&listed, "a", "weight", json!(["g2", "g1"]), json!([2, 1]));
    assert_refs(&listed, "b", "weight", json!([]), json!([]));
    let one = app.snapshot(&format!("{}/a", records_path(&view)));
    assert_eq!(refs(&one, "weight"), (json!(["g2", "g1"]), json!([2, 1])));
    app.patch(
        &records_path(&glossary_view),
        &json!([{"id": "g2", "cells": [{"columnId": "weight", "value": 5}]}]),
    )
    .assert_status(200);
    assert_refs(&app.records(&view), "a", "weight", json!(["g2", "g1"]), json!([5, 1]));
    // Read-only: a write naming it is refused, and changes nothing.
    let before = app.records(&view);
    for value in [json!(["g3"]), json!(7), Value::Null] {
        let cells = json!([{"columnId": "weight", "value": value}]);
        let res = app.post(&records_path(&view), &json!([{"id": "c", "cells": cells}]));
        assert_refused(&app, &view, &res, 400, "columnIsNotEditableInView", &before);
        let message = res.body["message"].as_str().unwrap_or_default();
        assert!(message.contains("lookup column \"weight\" is computed"), "{message}");
        let res = app.patch(&records_path(&view), &json!([{"id": "a", "cells": cells}]));
        assert_refused(&app, &view, &res, 400, "columnIsNotEditableInView", &before);
    }
    // Filters see it empty; an export writes it empty.
    let empty = r#"{"weight": {"isEmpty": null}}"#;
    assert_eq!(app.listing_ids(&view, &[("query", empty)]), ["a", "b"]);
    let export = app.get(&format!("/v1/views/{view}/export"));
    assert_eq!(export.status, 200, "{}", export.text);
    assert!(export.text.lines().next().is_some_and(|header| header.contains("WEIGHT")));
    // The export reads back: its lookup column is computed, so the import passes it over.
    let imported = crate::import::import(&app, &view, &export.bytes, None, "");
    crate::import::succeeds(&app, &imported);
    assert_eq!(app.records(&view), before);
    let app = app.restart();
    assert_eq!(app.records(&view), before);
}

/// A lookup needs exactly one reference column of its grid pointing at the grid it names, and
/// no column becomes a lookup or stops being one; each refusal changes nothing.
#[test]
fn a_lookup_follows_exactly_one_reference_column() {
    let app = spawn_app();
    let (glossary_grid, _) = glossary(&app);
    let (_, view) = app.create_grid("Strings");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    let columns = format!("/v1/views/{view}/columns");
    let before = app.snapshot(&format!("/v1/views/{view}"));
    let res = app.post(&columns, &lookup_column("w", &glossary_grid, "weight"));
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("no reference column"), "{}", res.text);
    app.post(&columns, &json!({"id": "w", "name": "W", "type": "lookup"}))
        .assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/views/{view}"), &before);
    app.create_column(&view, reference_column("ref", &glossary_grid, "term"));
    app.post(&columns, &lookup_column("w", &glossary_grid, "nosuchcolumn"))
        .assert_error(400, "badRequest");
    app.create_column(&view, lookup_column("w", &glossary_grid, "weight"));
    app.patch(&format!("{columns}/w"), &json!({"type": "singleLine"}))
        .assert_error(400, "badRequest");
    app.patch(&format!("{columns}/title"), &json!({"type": "lookup"}))
        .assert_error(400, "badRequest");
    // While the lookup follows `ref`, no second reference to the glossary is made, and `ref`
    // is neither deleted nor turned away from the glossary; it may be renamed.
    let before = app.snapshot(&format!("/v1/views/{view}"));
    let res = app.post(&columns, &reference_column("ref2", &glossary_grid, "weight"));
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("ambiguous"), "{}", res.text);
    let res = app.delete(&format!("{columns}/ref"));
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("follows it"), "{}", res.text);
    app.patch(&format!("{columns}/ref"), &json!({"type": "singleLine"}))
        .assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/views/{view}"), &before);
    app.patch(&format!("{columns}/ref"), &json!({"name": "Terms"})).assert_status(200);
    // Without the lookup, a second reference is made; a lookup cannot choose between the two.
    app.delete(&format!("{columns}/w")).assert_status(204);
    app.create_column(&view, reference_column("ref2", &glossary_grid, "weight"));
    let res = app.post(&columns, &lookup_column("w2", &glossary_grid, "term"));
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("More than one"), "{}", res.text);
    app.delete(&format!("{columns}/ref")).assert_status(204);
    let grid = app.snapshot(&format!("/v1/views/{view}"));
    let types: Vec<&Value> =
        grid["columns"].as_array().expect("columns").iter().map(|c| &c["type"]).collect();
    assert_eq!(types, [&json!("singleLine"), &json!("reference")]);
}
