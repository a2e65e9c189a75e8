//! `GET /v1/views/<viewId>/export` (decisions.md section 7): CSV and XLSX files of a view's
//! records, Record ID and Path first, headers by name, id or none, `columnIds`, `query` and
//! `sort`, values written as stored; a multi-chunk export arrives whole.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};
use crate::reads::answered;

fn typed_grid(app: &TestApp) -> String {
    let (_, view) = app.create_grid("export");
    for column in [
        json!({"id": "title", "name": "Title", "type": "singleLine"}),
        json!({"id": "count", "name": "Count", "type": "number"}),
        json!({"id": "flag", "name": "Flag", "type": "boolean"}),
        json!({"id": "due", "name": "Due", "type": "datetime"}),
        json!({"id": "tags", "name": "Tags", "type": "multipleSelections",
               "selection": {"options": [{"value": "ui"}, {"value": "legal"}]}}),
    ] {
        app.create_column(&view, column);
    }
    app.add_records(
        &view,
        json!([
            {"id": "r1", "path": "menu", "cells": [
                {"columnId": "title", "value": "Save, \"all\""},
                {"columnId": "count", "value": 3},
                {"columnId": "flag", "value": true},
                {"columnId": "due", "value": "2024-05-01T12:30:00.000Z"},
                {"columnId": "tags", "value": ["ui", "legal"]}]},
            {"id": "r2", "cells": [{"columnId": "title", "value": "Quit"},
                                   {"columnId": "count", "value": 2.5}]},
            {"id": "r3", "cells": [{"columnId": "count", "value": 7}]}
        ]),
    );
    view
}

/// The body of an export, with its headers checked.
fn export(app: &TestApp, view: &str, query: &str, extension: &str) -> Vec<u8> {
    let path = format!("/v1/views/{view}/export{query}");
    let res = app.request(Method::GET, &path, Some(&app.key)).send().expect("export");
    assert_eq!(res.status().as_u16(), 200, "{path}");
    let header = |name: &str| {
        res.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    };
    assert_eq!(header("content-type"), "application/octet-stream");
    assert_eq!(
        header("content-disposition"),
        format!("attachment; filename=\"{view}.{extension}\"; filename*=UTF-8''{view}.{extension}")
    );
    res.bytes().expect("body").to_vec()
}

fn all_csv_rows(bytes: &[u8]) -> Vec<Vec<String>> {
    let mut reader =
        csv::ReaderBuilder::new().has_headers(false).flexible(false).from_reader(bytes);
    reader.records().map(|r| r.expect("RFC 4180").iter().map(str::to_owned).collect()).collect()
}

/// The rows without the Last modified by / time fields (the third and fourth), which
/// `the_predefined_columns_come_first` checks.
fn csv_rows(bytes: &[u8]) -> Vec<Vec<String>> {
    let mut rows = all_csv_rows(bytes);
    for row in &mut rows {
        row.drain(2..4);
    }
    rows
}

#[test]
fn the_predefined_columns_come_first() {
    let app = spawn_app();
    let view = typed_grid(&app);
    let listed = app.records(&view);
    let rows = all_csv_rows(&export(&app, &view, "", "csv"));
    assert_eq!(
        rows[0][..5],
        ["Record ID", "Path", "Last modified by", "Last modified time", "Title"]
    );
    for (row, record) in rows[1..].iter().zip(&listed) {
        assert_eq!(row[0], record["id"].as_str().expect("id"));
        assert_eq!(row[1], record["path"].as_str().expect("path"));
        assert_eq!(row[2], record["lastModifiedBy"].as_str().expect("user"));
        assert_eq!(row[3], record["lastModifiedTime"].as_str().expect("time"));
    }
    let by_id = all_csv_rows(&export(&app, &view, "?fileHeader=columnId", "csv"));
    assert_eq!(by_id[0][..4], ["_recordId", "_path", "_lastModifiedBy", "_lastModifiedTime"]);
}

#[test]
fn a_csv_export_has_record_id_path_and_every_column_written_as_stored() {
    let app = spawn_app();
    let view = typed_grid(&app);
    let rows = csv_rows(&export(&app, &view, "", "csv"));
    assert_eq!(rows[0], ["Record ID", "Path", "Title", "Count", "Flag", "Due", "Tags"]);
    assert_eq!(
        rows[1],
        [
            "r1",
            "menu",
            "Save, \"all\"",
            "3",
            "true",
            "2024-05-01T12:30:00.000Z",
            r#"["ui","legal"]"#
        ]
    );
    assert_eq!(rows[2], ["r2", "", "Quit", "2.5", "", "", ""]);
    assert_eq!(rows.len(), 4);
}

/// `type=tsv` writes the same rows as CSV with tabs between the fields.
#[test]
fn a_tsv_export_is_the_csv_with_tabs() {
    let app = spawn_app();
    let view = typed_grid(&app);
    let csv = all_csv_rows(&export(&app, &view, "", "csv"));
    let tsv = export(&app, &view, "?type=tsv", "tsv");
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(false)
        .delimiter(b'\t')
        .from_reader(&tsv[..]);
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.expect("tab separated").iter().map(str::to_owned).collect())
        .collect();
    assert_eq!(rows, csv);
    assert!(tsv.starts_with(b"Record ID\tPath\t"), "{}", String::from_utf8_lossy(&tsv));
}

#[test]
fn headers_columns_query_and_sort_shape_the_file() {
    let app = spawn_app();
    let view = typed_grid(&app);
    let by_id = csv_rows(&export(&app, &view, "?fileHeader=columnId", "csv"));
    assert_eq!(by_id[0], ["_recordId", "_path", "title", "count", "flag", "due", "tags"]);
    let bare = csv_rows(&export(&app, &view, "?fileHeader=none&columnIds=count,title", "csv"));
    assert_eq!(bare[0], ["r1", "menu", "3", "Save, \"all\""]);
    assert_eq!(bare.len(), 3);
    let query = serde_urlencoded::to_string([
        ("query", r#"{"count": {">": 2.6}}"#),
        ("sort", r#"{"count": "desc"}"#),
        ("columnIds", "count"),
    ])
    .expect("encodes");
    let picked = csv_rows(&export(&app, &view, &format!("?{query}"), "csv"));
    let ids: Vec<&str> = picked[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(ids, ["r3", "r1"]);
}

/// An export finds its rows in the published view: with an index the view lacks (a query
/// engine of its own over a copy), with the indexes a listing had the actor build, and after an
/// acknowledged edit; a view answers each (`GET /metrics`), the actor only the listing that
/// wanted new indexes.
#[test]
fn an_export_reads_the_published_view_and_sees_acknowledged_writes() {
    let app = spawn_app();
    let view = typed_grid(&app);
    let query = serde_urlencoded::to_string([
        ("query", r#"{"count": {">": 2}}"#),
        ("sort", r#"{"count": "desc"}"#),
        ("columnIds", "count"),
        ("fileHeader", "none"),
    ])
    .expect("encodes");
    let ids = |app: &TestApp| -> Vec<String> {
        let rows = csv_rows(&export(app, &view, &format!("?{query}"), "csv"));
        rows.into_iter().map(|r| r[0].clone()).collect()
    };
    let before = answered(&app);
    assert_eq!(ids(&app), ["r3", "r1", "r2"], "no index yet");
    assert_eq!(answered(&app), (before.0 + 1, before.1), "a view answered the export");
    let listed = app.get(&format!("/v1/views/{view}/records?{query}"));
    listed.assert_status(200);
    assert_eq!(answered(&app).1, before.1 + 1, "the listing had the actor build the indexes");
    assert_eq!(ids(&app), ["r3", "r1", "r2"], "from the view's indexes");
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r2", "cells": [{"columnId": "count", "value": 10}]}]),
    );
    res.assert_status(200);
    assert_eq!(ids(&app), ["r2", "r3", "r1"], "the edit is in the next export");
    assert_eq!(answered(&app), (before.0 + 3, before.1 + 1), "views answered the exports");
}

#[test]
fn an_xlsx_export_keeps_numbers_and_booleans_typed() {
    use calamine::{Data, Reader, Xlsx};
    let app = spawn_app();
    let view = typed_grid(&app);
    let bytes = export(&app, &view, "?type=xlsx", "xlsx");
    let mut workbook: Xlsx<_> =
        calamine::open_workbook_from_rs(std::io::Cursor::new(bytes)).expect("an xlsx file");
    let sheet = workbook.worksheet_range_at(0).expect("a sheet").expect("readable");
    let rows: Vec<&[Data]> = sheet.rows().collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0][4], Data::String("Title".into()));
    assert_eq!(rows[1][0], Data::String("r1".into()));
    assert_eq!(rows[1][5], Data::Float(3.0));
    assert_eq!(rows[1][6], Data::Bool(true));
    assert_eq!(rows[1][8], Data::String(r#"["ui","legal"]"#.into()));
    assert_eq!(rows[2][5], Data::Float(2.5));
}

/// A cell longer than an XLSX cell takes (32,767 characters) refuses the XLSX export with 400
/// before it starts, instead of a 200 with no file; the same grid exports as CSV, and a HEAD
/// of the XLSX export answers the GET's 400.
#[test]
fn a_cell_over_excels_limit_refuses_the_xlsx_export_before_it_starts() {
    let app = spawn_app();
    let view = typed_grid(&app);
    let long = "é".repeat(32_768);
    app.add_records(
        &view,
        json!([{"id": "long", "cells": [{"columnId": "title", "value": long}]}]),
    );
    let res = app.get(&format!("/v1/views/{view}/export?type=xlsx"));
    res.assert_error(400, "badRequest");
    let message = res.body["message"].as_str().unwrap_or_default();
    assert!(message.contains("32768 characters") && message.contains("csv"), "{message}");
    let csv = export(&app, &view, "?type=csv", "csv");
    assert!(String::from_utf8_lossy(&csv).contains(&"é".repeat(100)));
    let head =
        app.call(Method::HEAD, &format!("/v1/views/{view}/export?type=xlsx"), Some(&app.key), None);
    assert_eq!(head.status, 400);
    assert!(head.bytes.is_empty());
}

#[test]
fn a_large_export_streams_every_record_in_order() {
    let app = spawn_app();
    let (_, view) = app.create_grid("large");
    app.create_column(&view, json!({"id": "text", "name": "Text", "type": "multipleLines"}));
    for batch in 0..4 {
        let records: Vec<Value> = (0..1000)
            .map(|n| {
                let n = batch * 1000 + n;
                json!({"id": format!("k{n:05}"), "cells": [{"columnId": "text",
                    "value": format!("line one of {n}\nline two, with \"quotes\" — ünïcödé {n}")}]})
            })
            .collect();
        app.add_records(&view, Value::Array(records));
    }
    let bytes = export(&app, &view, "", "csv");
    assert!(bytes.len() > 3 * 64 * 1024, "several chunks: {} bytes", bytes.len());
    let rows = csv_rows(&bytes);
    assert_eq!(rows.len(), 4001);
    assert_eq!(rows[4000][0], "k03999");
    assert_eq!(rows[1234][2], "line one of 1233\nline two, with \"quotes\" — ünïcödé 1233");
}

#[test]
fn bad_export_parameters_are_refused() {
    let app = spawn_app();
    let view = typed_grid(&app);
    let base = format!("/v1/views/{view}/export");
    app.get(&format!("{base}?fileHeader=names")).assert_error(400, "badRequest");
    app.get(&format!("{base}?type=pdf")).assert_error(400, "badRequest");
    app.get(&format!("{base}?columnIds=nope")).assert_error(404, "columnNotFoundInView");
    app.get(&format!("{base}?query=%7B%22nope%22%3A%7B%22%3D%22%3A1%7D%7D"))
        .assert_error(400, "filterColumnNotFound");
    app.get("/v1/views/nosuchview/export").assert_error(404, "viewIsNotFound");
}
