//! Import of every file type the hosted OpenAPI names (issue 19): `type=csv` (the default),
//! `tsv`, `xlsx` (the first sheet) and `json` (an array of records as the records API takes
//! them) go through the same mapping and limits; a file whose content does not match `type`,
//! an unknown type, and the types gridd does not read (`xls`, `po`, `html`) are refused with
//! a 400 at once, naming the problem, and nothing is imported.

use reqwest::Method;
use rust_xlsxwriter::Workbook;
use serde_json::{json, Value};

use super::files::{multipart, post_multipart};
use super::helpers::{cell, spawn_app, Resp, TestApp};

/// A grid with `en`, `de` (single line) and `count` (number) columns; its view.
fn grid(app: &TestApp) -> String {
    let (_, view) = app.create_grid("formats");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "de", "name": "German", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "count", "name": "Count", "type": "number"}));
    view
}

/// Posts `bytes` as an import of `type` (none: the parameter is left out).
fn import(app: &TestApp, view: &str, kind: Option<&str>, bytes: &[u8]) -> Resp {
    let query = kind.map(|k| format!("?type={k}")).unwrap_or_default();
    let body = multipart(&[("file", Some(("upload.bin", "application/octet-stream")), bytes)]);
    post_multipart(app, &format!("/v1/views/{view}/import{query}"), body)
}

/// The import's task ends successfully.
#[track_caller]
fn succeeds(app: &TestApp, res: &Resp) {
    let id = res.assert_status(202)["id"].as_str().expect("a task id").to_owned();
    let task = app.wait_task(&id);
    assert_eq!(task["status"], json!("successful"), "{task}");
}

/// The record's value in `column`.
fn value(app: &TestApp, view: &str, id: &str, column: &str) -> Value {
    cell(&app.record_by_id(view, id), column)["value"].clone()
}

/// Refused with a 400 whose message contains each of `needles`, and nothing changed.
#[track_caller]
fn refused(app: &TestApp, view: &str, res: &Resp, needles: &[&str]) {
    res.assert_error(400, "badRequest");
    let message = res.body["message"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(message.contains(needle), "{needle:?} not in {message:?}");
    }
    assert!(app.records(view).is_empty(), "nothing was imported");
}

fn workbook(rows: &[&[&str]]) -> Vec<u8> {
    let mut book = Workbook::new();
    let sheet = book.add_worksheet();
    for (r, row) in rows.iter().enumerate() {
        for (c, text) in row.iter().enumerate() {
            let (r, c) = (r as u32, c as u16);
            match text.parse::<f64>() {
                Ok(n) if r > 0 => sheet.write_number(r, c, n).map(|_| ()),
                _ => sheet.write_string(r, c, *text).map(|_| ()),
            }
            .expect("cell written");
        }
    }
    book.save_to_buffer().expect("workbook")
}

#[test]
fn tsv_imports_tab_separated_rows_with_the_csv_mapping() {
    let app = spawn_app();
    let view = grid(&app);
    let tsv = "_recordId\tEnglish\tGerman\tcount\nk1\tStart, now\tJetzt starten\t3\nk2\t\"Tab\tinside\"\tTab\t4.5\n";
    succeeds(&app, &import(&app, &view, Some("tsv"), tsv.as_bytes()));
    assert_eq!(value(&app, &view, "k1", "en"), json!("Start, now"));
    assert_eq!(value(&app, &view, "k1", "de"), json!("Jetzt starten"));
    assert_eq!(value(&app, &view, "k2", "en"), json!("Tab\tinside"));
    assert_eq!(value(&app, &view, "k2", "count"), json!(4.5));
}

#[test]
fn xlsx_imports_the_first_sheet_with_typed_cells() {
    let app = spawn_app();
    let view = grid(&app);
    let book = workbook(&[
        &["_recordId", "English", "German", "count"],
        &["k1", "Quest log", "Questbuch", "12"],
        &["k2", "日本語のテキスト", "", "0.25"],
    ]);
    succeeds(&app, &import(&app, &view, Some("xlsx"), &book));
    assert_eq!(value(&app, &view, "k1", "de"), json!("Questbuch"));
    assert_eq!(value(&app, &view, "k1", "count"), json!(12));
    assert_eq!(value(&app, &view, "k2", "en"), json!("日本語のテキスト"));
    assert_eq!(value(&app, &view, "k2", "count"), json!(0.25));
    assert_eq!(app.records(&view).len(), 2);
}

#[test]
fn json_imports_records_as_the_records_api_takes_them() {
    let app = spawn_app();
    let view = grid(&app);
    app.add_records(
        &view,
        json!([{"id": "old", "cells": [{"columnId": "en", "value": "before"}]}]),
    );
    let file = json!([
        {"id": "old", "cells": [{"columnId": "en", "value": "after"}]},
        {"id": "new", "cells": [{"columnId": "de", "value": "Neu"}, {"columnId": "count", "value": 7}]}
    ]);
    succeeds(&app, &import(&app, &view, Some("json"), file.to_string().as_bytes()));
    assert_eq!(value(&app, &view, "old", "en"), json!("after"));
    assert_eq!(value(&app, &view, "new", "de"), json!("Neu"));
    assert_eq!(value(&app, &view, "new", "count"), json!(7));
}

#[test]
fn unknown_and_unread_types_are_refused_naming_them() {
    let app = spawn_app();
    let view = grid(&app);
    let csv = b"_recordId,English\nk1,x\n";
    refused(&app, &view, &import(&app, &view, Some("docx"), csv), &["docx"]);
    refused(&app, &view, &import(&app, &view, Some("xls"), csv), &["xls", "xlsx"]);
    refused(&app, &view, &import(&app, &view, Some("po"), csv), &["po"]);
    // The default is csv, and the type is case-insensitive.
    succeeds(&app, &import(&app, &view, Some("CSV"), csv));
    succeeds(&app, &import(&app, &view, None, csv));
}

#[test]
fn content_that_does_not_match_the_type_is_refused_never_misread() {
    let app = spawn_app();
    let view = grid(&app);
    let book = workbook(&[&["_recordId", "English"], &["k1", "x"]]);
    let csv = b"_recordId,English\nk1,x\n".to_vec();
    let json = json!([{"id": "k1"}]).to_string().into_bytes();
    let cases: [(&str, &[u8]); 6] = [
        ("csv", &book),
        ("tsv", &book),
        ("csv", &json),
        ("xlsx", &csv),
        ("xlsx", b"PK\x03\x04 not really a zip archive"),
        ("json", &csv),
    ];
    for (kind, bytes) in cases {
        let res = import(&app, &view, Some(kind), bytes);
        refused(&app, &view, &res, &[]);
        assert!(
            res.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{kind}: {}",
            res.text
        );
    }
    let shapes = [json!({"id": "k1"}), json!([1, 2]), json!([{"cells": "no"}])];
    for shape in shapes {
        let res = import(&app, &view, Some("json"), shape.to_string().as_bytes());
        refused(&app, &view, &res, &[]);
    }
    let trailing = b"[{\"id\": \"k1\"}] trailing";
    refused(&app, &view, &import(&app, &view, Some("json"), trailing), &[]);
}

#[test]
fn every_format_keeps_the_import_limits() {
    let app = spawn_app();
    let view = grid(&app);
    // A sheet declaring far more columns than the view has is refused before it is read.
    let mut book = Workbook::new();
    let sheet = book.add_worksheet();
    sheet.write_string(0, 0, "_recordId").expect("cell");
    sheet.write_string(1, 10_000, "far").expect("cell");
    let wide = book.save_to_buffer().expect("workbook");
    refused(&app, &view, &import(&app, &view, Some("xlsx"), &wide), &["columns"]);
    // A json value over the field limit (1 MiB) is refused naming its record.
    let long = "x".repeat(1024 * 1024 + 1);
    let file = json!([{"id": "k1", "cells": [{"columnId": "en", "value": long}]}]);
    let res = import(&app, &view, Some("json"), file.to_string().as_bytes());
    refused(&app, &view, &res, &["record 1"]);
    assert_eq!(app.call(Method::GET, "/healthz", None, None).status, 200);
}
