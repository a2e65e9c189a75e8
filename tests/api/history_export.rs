//! Record-history export as a task (decisions.md section 9): the rows of the file match the
//! edits made, in CSV and XLSX (read back with calamine), standard and enhanced mode, filtered
//! by columns and editors; the 60-day rule and other bad requests; both download paths.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// A grid with an English source, a French target depending on it, and a note column; record
/// r1 written twice by the owner, r2 once by "vendor".
fn edited_grid(app: &TestApp) -> String {
    let (_, view) = app.create_grid("history");
    app.create_column(
        &view,
        json!({"id": "en", "name": "English", "type": "language",
        "languageCode": "enUS", "localizationType": "sourceLanguage"}),
    );
    app.create_column(
        &view,
        json!({"id": "fr", "name": "French", "type": "language",
        "languageCode": "frFR", "localizationType": "targetLanguage"}),
    );
    app.create_column(&view, json!({"id": "note", "name": "Note", "type": "singleLine"}));
    app.post(
        &format!("/v1/views/{view}/dependencies"),
        &json!({"sourceColumnId": "en", "targetColumnId": "fr"}),
    )
    .assert_status(201);
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "en", "value": "Save"},
                                       {"columnId": "fr", "value": "Enregistrer"}]}]),
    );
    app.patch(
        &format!("/v1/views/{view}/records/r1"),
        &json!({"cells": [{"columnId": "en", "value": "Save all"}]}),
    )
    .assert_status(200);
    let vendor = app.create_user_key("vendor");
    app.post_as(
        &vendor,
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r2", "cells": [{"columnId": "note", "value": "check length"}]}]),
    )
    .assert_status(201);
    view
}

fn span() -> (String, String) {
    let now = chrono::Utc::now();
    let day = chrono::Duration::days(1);
    ((now - day).to_rfc3339(), (now + day).to_rfc3339())
}

/// Starts an export and waits for its task to succeed; returns the task id.
fn export(app: &TestApp, view: &str, extra: Value) -> String {
    let (from, to) = span();
    let mut body = json!({"fromTime": from, "toTime": to});
    body.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
    let res = app.post(&format!("/v1/views/{view}/record-histories/export"), &body);
    let task = res.assert_status(202);
    assert_eq!(res.header("content-type"), Some("application/json"));
    let id = task["id"].as_str().expect("task id").to_owned();
    assert!(matches!(task["status"].as_str(), Some("running" | "successful")), "{task}");
    succeeded(app, id)
}

/// Waits for export task `id` to succeed; returns the id.
fn succeeded(app: &TestApp, id: String) -> String {
    for _ in 0..800 {
        let task = app.get(&format!("/v1/tasks/{id}"));
        match task.assert_status(200)["status"].as_str() {
            Some("successful") => return id,
            Some("running") => std::thread::sleep(Duration::from_millis(25)),
            other => panic!("export task ended {other:?}: {}", task.text),
        }
    }
    panic!("export task {id} did not finish");
}

/// The file of a finished export, by the main path or the alias, with its headers checked.
fn download(app: &TestApp, path: &str, extension: &str) -> Vec<u8> {
    let res = app.request(Method::GET, path, Some(&app.key)).send().expect("download");
    assert_eq!(res.status().as_u16(), 200);
    let header = |name: &str| {
        res.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    };
    assert_eq!(header("content-type"), "application/octet-stream");
    let disposition = header("content-disposition");
    assert!(
        disposition.starts_with("attachment; filename=\"record-histories-")
            && disposition.contains(&format!(".{extension}\"; filename*=UTF-8''record-histories-"))
            && disposition.ends_with(&format!(".{extension}")),
        "{disposition}"
    );
    res.bytes().expect("body").to_vec()
}

fn csv_rows(bytes: &[u8]) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(bytes);
    reader.records().map(|r| r.expect("valid CSV").iter().map(str::to_owned).collect()).collect()
}

#[test]
fn a_csv_export_has_one_row_per_changed_cell_with_statuses_editors_and_times() {
    let app = spawn_app();
    let view = edited_grid(&app);
    let task = export(&app, &view, json!({}));
    let bytes = download(&app, &format!("/v1/views/{view}/record-histories/export/{task}"), "csv");
    let rows = csv_rows(&bytes);
    assert_eq!(
        rows[0],
        [
            "Record ID",
            "Path",
            "Column",
            "Value",
            "Dependency status",
            "Source status",
            "Last modified by",
            "Last modified time"
        ]
    );
    let cells: Vec<(&str, &str, &str)> =
        rows[1..].iter().map(|r| (r[0].as_str(), r[2].as_str(), r[3].as_str())).collect();
    assert_eq!(
        cells,
        vec![
            ("r1", "en", "Save"),
            ("r1", "fr", "Enregistrer"),
            ("r1", "en", "Save all"),
            ("r2", "note", "check length")
        ]
    );
    assert_eq!(rows[2][4], "upToDate", "the target's status as the add left it: {:?}", rows[2]);
    assert_eq!(rows[4][6], "vendor");
    assert!(rows[1][7].ends_with("+00:00") && rows[1][7].len() == 29, "{:?}", rows[1]);
    let alias = download(&app, &format!("/v1/views/{view}/export/{task}"), "csv");
    assert_eq!(alias, bytes, "the alias serves the same file");
}

#[test]
fn enhanced_mode_adds_the_previous_value_and_filters_narrow_the_rows() {
    let app = spawn_app();
    let view = edited_grid(&app);
    let task = export(
        &app,
        &view,
        json!({"mode": "enhanced", "columnIds": ["en"], "lastModifiedByUsers": ["owner"]}),
    );
    let rows = csv_rows(&download(
        &app,
        &format!("/v1/views/{view}/record-histories/export/{task}"),
        "csv",
    ));
    assert_eq!(rows[0].last().map(String::as_str), Some("Previous value"));
    let cells: Vec<(&str, &str, &str)> =
        rows[1..].iter().map(|r| (r[2].as_str(), r[3].as_str(), r[8].as_str())).collect();
    assert_eq!(cells, vec![("en", "Save", ""), ("en", "Save all", "Save")]);
    let vendor_only = export(&app, &view, json!({"lastModifiedByUsers": ["vendor"]}));
    let rows = csv_rows(&download(&app, &format!("/v1/views/{view}/export/{vendor_only}"), "csv"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1][0], "r2");
}

#[test]
fn an_xlsx_export_reads_back_with_a_header_dates_and_the_same_rows() {
    use calamine::{Data, Reader, Xlsx};
    let app = spawn_app();
    let view = edited_grid(&app);
    let task = export(&app, &view, json!({"format": "xlsx"}));
    let bytes = download(&app, &format!("/v1/views/{view}/record-histories/export/{task}"), "xlsx");
    let mut workbook: Xlsx<_> =
        calamine::open_workbook_from_rs(std::io::Cursor::new(bytes)).expect("an xlsx file");
    let sheet = workbook.worksheet_range("Record histories").expect("the sheet");
    let rows: Vec<&[Data]> = sheet.rows().collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0][0], Data::String("Record ID".into()));
    assert_eq!(rows[3][3], Data::String("Save all".into()));
    assert_eq!(rows[4][6], Data::String("vendor".into()));
    match &rows[1][7] {
        Data::DateTime(date) => {
            let now = chrono::Utc::now().naive_utc();
            let written = date.as_datetime().expect("a date");
            assert!((now - written).num_minutes().abs() < 5, "{written} vs {now}");
        }
        other => panic!("the modification time is a date cell, not {other:?}"),
    }
}

#[test]
fn bad_export_requests_are_refused_before_any_task() {
    let app = spawn_app();
    let view = edited_grid(&app);
    let path = format!("/v1/views/{view}/record-histories/export");
    let now = chrono::Utc::now();
    let days = |n: i64| (now + chrono::Duration::days(n)).to_rfc3339();
    app.post(&path, &json!({"fromTime": days(-61), "toTime": days(0)}))
        .assert_error(400, "badRequest");
    app.post(&path, &json!({"fromTime": days(-60), "toTime": days(0)})).assert_status(202);
    app.post(&path, &json!({"fromTime": days(0), "toTime": days(-1)}))
        .assert_error(400, "badRequest");
    app.post(&path, &json!({"toTime": days(0)})).assert_error(400, "requestParameterMissing");
    app.post(&path, &json!({"fromTime": "yesterday", "toTime": days(0)}))
        .assert_error(400, "badRequest");
    let (from, to) = span();
    let with = |extra: Value| {
        let mut body = json!({"fromTime": from, "toTime": to});
        body.as_object_mut().expect("object").extend(extra.as_object().expect("obj").clone());
        body
    };
    app.post(&path, &with(json!({"format": "pdf"}))).assert_error(400, "badRequest");
    app.post(&path, &with(json!({"mode": "verbose"}))).assert_error(400, "badRequest");
    app.post(&path, &with(json!({"columnIds": ["nope"]}))).assert_error(400, "invalidColumnId");
    let many: Vec<String> = (0..100).map(|i| format!("c{i}")).collect();
    app.post(&path, &with(json!({"columnIds": many}))).assert_error(400, "badRequest");
    app.post(&path, &with(json!({"columnIds": vec!["en"; 500]}))).assert_status(202);
    let reader = app.create_key(&["read", "write"], json!({"all": true}));
    app.post_as(&reader, &path, &with(json!({}))).assert_error(403, "accessDenied");
    app.get(&format!("/v1/views/{view}/record-histories/export/nosuchtask"))
        .assert_error(404, "taskIsNotFound");
    let (_, other_view) = app.create_grid("other");
    let task = export(&app, &view, json!({}));
    app.get(&format!("/v1/views/{other_view}/record-histories/export/{task}"))
        .assert_error(404, "taskIsNotFound");
}

#[test]
fn a_task_cut_off_by_a_restart_reads_failed() {
    use gridd::catalog::model::{Task, TaskStatus};
    use gridd::catalog::store::{load_all, CatalogChange, CatalogStore, EntityKind};
    let app = spawn_app();
    let view = edited_grid(&app);
    let task_id = export(&app, &view, json!({}));
    let key = app.key.clone();
    let (killed, _keep) = app.kill();
    // The killed server keeps its locks (its process lives on): work on a copy.
    let copy = tempfile::tempdir().expect("temp dir");
    let dir = copy.path().join("data");
    crate::helpers::copy_dir(&killed, &dir);
    {
        // Put the task back to running, as if the server had died while it ran.
        let db = sled::open(dir.join("db")).expect("the catalogue opens");
        let store = gridd::catalog::store::SledCatalogStore::open(db).expect("store");
        let mut task = load_all::<Task>(&store, EntityKind::Task)
            .expect("tasks load")
            .into_iter()
            .find(|t| t.id == task_id)
            .expect("the export task is persisted");
        task.status = TaskStatus::Running;
        task.finished_time = None;
        // The catalogue's truth is the WAL, replayed after sled's position: the edit gets a
        // position past every change set the WAL holds (the start pads the WAL up to it).
        let lsn = store.applied_lsn().expect("position") + 1_000;
        let change = CatalogChange::put(EntityKind::Task, &task_id, &task);
        store.apply_at(&[change], lsn).expect("written");
    }
    let app = crate::helpers::start(&dir, &key);
    let task = app.get(&format!("/v1/tasks/{task_id}"));
    let body = task.assert_status(200);
    assert_eq!(body["status"], "failed", "{body}");
    assert_eq!(body["error"]["code"], "interrupted");
    app.get(&format!("/v1/views/{view}/record-histories/export/{task_id}"))
        .assert_error(404, "fileIsNotFound");
    drop(app);
}

/// A company runs at most two history exports at once (each gathers and sorts its rows in
/// memory): a third is 409 `taskIsRunning`; once they end, the next one runs.
#[test]
fn a_company_runs_at_most_two_history_exports_at_once() {
    let app = spawn_app();
    let (_, view) = app.create_grid("many");
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    let csv = crate::import::rows_csv(60_000);
    let imported = crate::import::import(&app, &view, csv.as_bytes(), None, "");
    crate::import::succeeds(&app, &imported);
    let (from, to) = span();
    let body = json!({"fromTime": from, "toTime": to});
    let path = format!("/v1/views/{view}/record-histories/export");
    let first = app.post(&path, &body).assert_status(202)["id"].clone();
    let second = app.post(&path, &body).assert_status(202)["id"].clone();
    let third = app.post(&path, &body);
    third.assert_error(409, "taskIsRunning");
    assert!(third.text.contains("as many history exports as it may at once (2)"), "{}", third.text);
    for id in [first, second] {
        succeeded(&app, id.as_str().expect("task id").to_owned());
    }
    export(&app, &view, json!({}));
}
