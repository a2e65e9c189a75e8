//! Cell values per column type (decisions.md section 4) on write and read: what each type
//! accepts and how it reads back, what it refuses, and how a cell is emptied.

use serde_json::{json, Value};

use super::{assert_refused, ids_of, typed_grid};
use crate::helpers::{cell, spawn_app};

/// (column, value written, value read back).
fn accepted() -> Vec<(&'static str, Value, Value)> {
    let same = |column, v: Value| (column, v.clone(), v);
    vec![
        same("title", json!("plain text")),
        same("notes", json!("line 1\nline 2\ttabbed")),
        same("rich", json!("<p><b>bold</b> text</p>")),
        same("md", json!("# Title\n\n* item")),
        same("page", json!("<div class=\"x\">html</div>")),
        same("lang", json!("Hello")),
        same("count", json!(3)),
        same("count", json!(-2.25)),
        ("count", json!("4.5"), json!(4.5)),
        ("count", json!(" 17 "), json!(17)),
        ("count", json!("1e3"), json!(1000)),
        same("count", json!(0)),
        same("qty", json!(7)),
        ("qty", json!("12"), json!(12)),
        ("qty", json!(3.0), json!(3)),
        same("done", json!(true)),
        same("done", json!(false)),
        ("done", json!("true"), json!(true)),
        ("done", json!("false"), json!(false)),
        ("due", json!("2026-01-31T11:15:30+01:00"), json!("2026-01-31T10:15:30.000Z")),
        same("due", json!("2026-01-31T10:15:30.123Z")),
        same("due", json!("1969-12-31T23:59:59.999Z")),
        ("due", json!("2026-01-31T10:15:30.123456789Z"), json!("2026-01-31T10:15:30.123Z")),
        ("due", json!("2025-12-31T23:30:00-05:00"), json!("2026-01-01T04:30:00.000Z")),
        ("due", json!("2026-01-31"), json!("2026-01-31T00:00:00.000Z")),
        same("kind", json!("bug")),
        same("tags", json!(["x", "z"])),
        same("tags", json!(["y"])),
        same("files", json!(["a1b2c3d4e5f6g7.png", "h8i9j0k1l2m3n4.txt"])),
        ("meta", json!({"a": [1, 2], "b": null}), json!("{\"a\":[1,2],\"b\":null}")),
        ("meta", json!([1, "two"]), json!("[1,\"two\"]")),
        same("meta", json!("{\"kept\": \"as sent\"}")),
        same("meta", json!("[ 1, 2 ]")),
        same("conf", json!("a: 1\nb: [x, y]\n")),
        same("conf", json!("- one\n- two\n")),
    ]
}

/// (column, a value of the wrong shape or outside the column's rules).
fn refused() -> Vec<(&'static str, Value)> {
    vec![
        ("title", json!({"a": 1})),
        ("title", json!(["a"])),
        // A string type takes a string, not a number or boolean to be written out as one.
        ("title", json!(5)),
        ("lang", json!(true)),
        ("kind", json!(1)),
        ("count", json!("abc")),
        ("count", json!(true)),
        ("count", json!([1])),
        ("count", json!("NaN")),
        ("count", json!("Infinity")),
        ("count", json!("12abc")),
        ("qty", json!(2.5)),
        ("qty", json!("2.5")),
        ("done", json!("yes")),
        ("done", json!(1)),
        ("due", json!("31/01/2026")),
        ("due", json!("2026-02-30")),
        ("due", json!(1_769_817_600_000_i64)),
        ("kind", json!("feature")),
        ("kind", json!(["bug"])),
        ("tags", json!(["x", "nope"])),
        ("tags", json!(5)),
        // A list type takes an array, even of one (only a reference takes a lone id).
        ("tags", json!("x")),
        ("files", json!("a1b2c3d4e5f6g7.png")),
        ("files", json!(5)),
        ("files", json!([1, 2])),
        ("meta", json!("{bad")),
        ("meta", json!("not json")),
        ("conf", json!("a: [1, 2")),
        ("conf", json!(42)),
    ]
}

#[test]
fn each_type_reads_back_in_its_wire_format_on_add_and_on_update() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let cases = accepted();
    let records: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (column, written, _))| {
            json!({"id": format!("add{i}"), "cells": [{"columnId": column, "value": written}]})
        })
        .collect();
    let added = app.add_records(&view, json!(records));
    let blank: Vec<Value> = (0..cases.len()).map(|i| json!({"id": format!("upd{i}")})).collect();
    app.add_records(&view, json!(blank));
    let updates: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (column, written, _))| {
            json!({"id": format!("upd{i}"), "cells": [{"columnId": column, "value": written}]})
        })
        .collect();
    let res = app.patch(&format!("/v1/views/{view}/records"), &json!(updates));
    let updated = res.assert_status(200).as_array().expect("a list").clone();
    let listed = app.records(&view);
    assert_eq!(listed[..cases.len()], added[..]);
    assert_eq!(listed[cases.len()..], updated[..]);
    for (i, (column, written, read)) in cases.iter().enumerate() {
        assert_eq!(&cell(&added[i], column)["value"], read, "add {column} {written}");
        assert_eq!(&cell(&updated[i], column)["value"], read, "update {column} {written}");
    }
}

#[test]
fn a_value_of_the_wrong_shape_is_refused_and_names_the_column() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "t"}]}]));
    let before = app.records(&view);
    for (column, value) in refused() {
        let body = json!([{"id": "new", "cells": [{"columnId": column, "value": value}]}]);
        let res = app.post(&format!("/v1/views/{view}/records"), &body);
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
        let message = res.body["message"].as_str().expect("a message");
        assert!(message.contains(column) && message.contains("records[0]"), "{message}");
        let body = json!([{"id": "r1", "cells": [{"columnId": column, "value": value}]}]);
        let res = app.patch(&format!("/v1/views/{view}/records"), &body);
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
    }
}

#[test]
fn every_bad_value_of_a_request_is_listed() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let cases = refused();
    let mut records: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (column, value))| {
            json!({"id": format!("bad{i}"), "cells": [{"columnId": column, "value": value}]})
        })
        .collect();
    records.push(json!({"id": "good", "cells": [{"columnId": "title", "value": "fine"}]}));
    let res = app.post(&format!("/v1/views/{view}/records"), &json!(records));
    assert_refused(&app, &view, &res, 400, "badRequest", &[]);
    let messages = res.body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), cases.len(), "{}", res.text);
    for (i, message) in messages.iter().enumerate() {
        let message = message.as_str().expect("a string");
        assert!(message.contains(&format!("records[{i}]")), "{message}");
    }
}

#[test]
fn null_and_empty_string_empty_a_cell() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let full = json!([
        {"columnId": "title", "value": "t"}, {"columnId": "notes", "value": "n"},
        {"columnId": "rich", "value": "r"}, {"columnId": "md", "value": "m"},
        {"columnId": "page", "value": "p"}, {"columnId": "lang", "value": "l"},
        {"columnId": "count", "value": 1}, {"columnId": "qty", "value": 2},
        {"columnId": "done", "value": false}, {"columnId": "due", "value": "2026-01-31"},
        {"columnId": "kind", "value": "task"}, {"columnId": "tags", "value": ["x"]},
        {"columnId": "files", "value": ["f.png"]}, {"columnId": "meta", "value": "{}"},
        {"columnId": "conf", "value": "a: 1"},
    ]);
    app.add_records(&view, json!([{"id": "a", "cells": full}, {"id": "b", "cells": full}]));
    let emptied = |empty: Value| -> Vec<Value> {
        full.as_array()
            .expect("cells")
            .iter()
            .map(|c| json!({"columnId": c["columnId"], "value": empty}))
            .collect()
    };
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "a", "cells": emptied(Value::Null)}, {"id": "b", "cells": emptied(json!(""))}]),
    );
    res.assert_status(200);
    let listed = app.records(&view);
    assert_eq!(ids_of(&listed), ["a", "b"]);
    for record in &listed {
        for column in ["title", "notes", "rich", "md", "page", "lang", "kind", "meta", "conf"] {
            assert_eq!(cell(record, column)["value"], json!(""), "{column} {record}");
        }
        for column in ["tags", "files"] {
            assert_eq!(cell(record, column)["value"], json!([]), "{column} {record}");
        }
        for column in ["count", "qty", "done", "due"] {
            assert_eq!(cell(record, column)["value"], Value::Null, "{column} {record}");
        }
    }
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "a", "cells": [{"columnId": "tags", "value": ["y"]}]},
                {"id": "b", "cells": [{"columnId": "tags", "value": ["z"]}]}]),
    );
    res.assert_status(200);
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "a", "cells": [{"columnId": "tags", "value": []}]}]),
    )
    .assert_status(200);
    let listed = app.records(&view);
    assert_eq!(cell(&listed[0], "tags")["value"], json!([]));
    assert_eq!(cell(&listed[1], "tags")["value"], json!(["z"]));
}

#[test]
fn formula_cells_are_not_editable() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    app.create_column(
        &view,
        json!({"id": "calc", "name": "Calc", "type": "formula",
               "formula": {"formulaText": "[count] * 2"}}),
    );
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "count", "value": 2}]}]));
    let before = app.records(&view);
    assert!(before[0]["cells"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["columnId"] == "calc")));
    for value in [json!(5), json!("text"), Value::Null] {
        let body = json!([{"id": "r2", "cells": [{"columnId": "calc", "value": value}]}]);
        let res = app.post(&format!("/v1/views/{view}/records"), &body);
        assert_refused(&app, &view, &res, 400, "columnIsNotEditableInView", &before);
        let body = json!([{"id": "r1", "cells": [{"columnId": "calc", "value": value}]}]);
        let res = app.patch(&format!("/v1/views/{view}/records"), &body);
        assert_refused(&app, &view, &res, 400, "columnIsNotEditableInView", &before);
    }
}

#[test]
fn reference_cells_are_lists() {
    let app = spawn_app();
    let (other, other_view) = app.create_grid("Referenced");
    app.create_column(&other_view, json!({"id": "name", "name": "Name", "type": "singleLine"}));
    app.add_records(
        &other_view,
        json!([{"id": "t1", "cells": [{"columnId": "name", "value": "x"}]}]),
    );
    let (_, view) = app.create_grid("Referencing");
    app.create_column(
        &view,
        json!({"id": "ref", "name": "Ref", "type": "reference",
               "reference": {"gridId": other, "columnId": "name"}}),
    );
    let added = app.add_records(&view, json!([{"id": "empty"}]));
    assert_eq!(cell(&added[0], "ref")["value"], json!([]));
    let before = app.records(&view);
    for value in [json!(5), json!({"id": "t1"}), json!(true)] {
        let body = json!([{"id": "r", "cells": [{"columnId": "ref", "value": value}]}]);
        let res = app.post(&format!("/v1/views/{view}/records"), &body);
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
    }
    let added = app
        .add_records(&view, json!([{"id": "r", "cells": [{"columnId": "ref", "value": ["t1"]}]}]));
    assert!(
        cell(&added[0], "ref")["value"].as_array().is_some_and(|v| v.len() == 1),
        "{}",
        added[0]
    );
}

/// A number reads back as the number written, to the last bit: long decimals that a parser
/// rounding in two steps would move by one unit in the last place come back as they were sent.
#[test]
fn numbers_read_back_exactly_as_written() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let written = [
        "-1.8218816927580057e294",
        "-1.0729132283643165e-38",
        "-0.000000000000000000000000000000000000010729132283643165",
        "-5.791054108416719e-286",
        "0.30000000000000004",
        "1.7976931348623157e308",
        "5e-324",
        "123456789.125",
    ];
    let body: String = written
        .iter()
        .enumerate()
        .map(|(i, n)| format!(r#"{{"id":"n{i}","cells":[{{"columnId":"count","value":{n}}}]}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let path = format!("/v1/views/{view}/records");
    let res = app.raw(reqwest::Method::POST, &path, "application/json", format!("[{body}]").into());
    res.assert_status(201);
    let listed = app.get(&format!("{path}?columnIds=count"));
    for (i, n) in written.iter().enumerate() {
        let expected: f64 = n.parse().expect("a number");
        // Rust's own parser is exact; the answer must name the same f64.
        let record = listed
            .assert_status(200)
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["id"] == format!("n{i}")))
            .expect("the record")
            .clone();
        let text = serde_json::to_string(&cell(&record, "count")["value"]).expect("JSON");
        assert_eq!(text.parse::<f64>().ok(), Some(expected), "{n} read back as {text}");
        assert!(res.text.contains(&serde_json::to_string(&expected).expect("JSON")), "{n}");
    }
}
