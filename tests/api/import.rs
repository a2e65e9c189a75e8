//! `POST /v1/views/<viewId>/import` (decisions.md section 7): multipart `file` + `importRequest`,
//! checked at once (400/413/415, nothing started), then a task that writes every row or none.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::helpers::{cell, spawn_app, Resp, TestApp};

const BOUNDARY: &str = "gridd-import-test-boundary-7d1f";

/// A multipart body of `(name, filename, content)` parts.
fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, filename, content) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let disposition = match filename {
            Some(file) => format!("form-data; name=\"{name}\"; filename=\"{file}\""),
            None => format!("form-data; name=\"{name}\""),
        };
        body.extend_from_slice(format!("Content-Disposition: {disposition}\r\n").as_bytes());
        if filename.is_some() {
            body.extend_from_slice(b"Content-Type: text/csv\r\n");
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// Posts an import of `csv` with an optional `importRequest` part; `query` is appended.
pub(crate) fn import(
    app: &TestApp,
    view: &str,
    csv: &[u8],
    request: Option<&Value>,
    query: &str,
) -> Resp {
    let text = request.map(Value::to_string);
    let mut parts: Vec<(&str, Option<&str>, &[u8])> = vec![("file", Some("strings.csv"), csv)];
    if let Some(text) = &text {
        parts.push(("importRequest", None, text.as_bytes()));
    }
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let path = format!("/v1/views/{view}/import{query}");
    app.raw(Method::POST, &path, &content_type, multipart(&parts))
}

/// A CSV of `n` records `r0`, `r1`, ... with a text in column `t`.
pub(crate) fn rows_csv(n: usize) -> String {
    let mut csv = String::from("_recordId,t\n");
    for i in 0..n {
        csv.push_str(&format!("r{i},some text to import {i}\n"));
    }
    csv
}

/// Waits for the task of a 202 answer to end; returns its final body.
#[track_caller]
pub(crate) fn finish(app: &TestApp, res: &Resp) -> Value {
    let task = res.assert_status(202);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(task["type"], json!("import"));
    let id = task["id"].as_str().expect("task id").to_owned();
    for _ in 0..800 {
        let body = app.get(&format!("/v1/tasks/{id}")).assert_status(200).clone();
        if body["status"] != json!("running") {
            return body;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("import task {id} did not finish");
}

#[track_caller]
pub(crate) fn succeeds(app: &TestApp, res: &Resp) {
    let task = finish(app, res);
    assert_eq!(task["status"], json!("successful"), "{task}");
}

/// The task fails with `badRequest` and a message containing each of `parts`.
#[track_caller]
fn fails_naming(app: &TestApp, res: &Resp, parts: &[&str]) {
    let task = finish(app, res);
    assert_eq!(task["status"], json!("failed"), "{task}");
    assert_eq!(task["error"]["code"], json!("badRequest"), "{task}");
    let message = task["error"]["message"].as_str().expect("message");
    for part in parts {
        assert!(message.contains(part), "{message:?} does not name {part:?}");
    }
}

/// A grid with English (source), French (target of English), a number, a boolean, a datetime
/// and tags; returns its grid id and default view.
fn grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("import");
    for column in [
        json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS"}),
        json!({"id": "fr", "name": "French", "type": "language", "languageCode": "frFR",
               "localizationType": "targetLanguage"}),
        json!({"id": "n", "name": "Count", "type": "number"}),
        json!({"id": "ok", "name": "Final", "type": "boolean"}),
        json!({"id": "due", "name": "Due", "type": "datetime"}),
        json!({"id": "tags", "name": "Tags", "type": "multipleSelections",
               "selection": {"options": [{"value": "ui"}, {"value": "legal"}]}}),
    ] {
        app.create_column(&view, column);
    }
    let dependency = json!({"sourceColumnId": "en", "targetColumnId": "fr"});
    app.post(&format!("/v1/views/{view}/dependencies"), &dependency).assert_status(201);
    (grid, view)
}

fn find<'a>(records: &'a [Value], id: &str) -> &'a Value {
    records.iter().find(|r| r["id"] == json!(id)).unwrap_or_else(|| panic!("no record {id}"))
}

#[test]
fn an_import_with_a_header_adds_and_updates_records() {
    let app = spawn_app();
    let (grid, view) = grid(&app);
    app.add_records(
        &view,
        json!([{"id": "menu.start", "cells": [
        {"columnId": "en", "value": "Start"}, {"columnId": "fr", "value": "Démarrer"}]}]),
    );
    let csv = "\u{feff}Record ID,English,Count,Final,Due,Tags,Notes\n\
               menu.start,Start game,3,true,2026-01-31,\"[\"\"ui\"\"]\",ignored\n\
               menu.quit,Quit,,false,,legal,ignored\n\
               ,Généré,7,,,,\n";
    succeeds(&app, &import(&app, &view, csv.as_bytes(), None, ""));
    let records = app.records(&view);
    assert_eq!(records.len(), 3, "{records:?}");
    let start = find(&records, "menu.start");
    assert_eq!(cell(start, "en")["value"], json!("Start game"));
    assert_eq!(cell(start, "fr")["value"], json!("Démarrer"), "a column not in the file stays");
    assert_eq!(
        cell(start, "fr")["dependencyStatus"],
        json!("outOfDate"),
        "the English change makes the French cell out of date"
    );
    assert_eq!(cell(start, "n")["value"], json!(3));
    assert_eq!(cell(start, "ok")["value"], json!(true));
    assert_eq!(cell(start, "due")["value"], json!("2026-01-31T00:00:00.000Z"));
    assert_eq!(cell(start, "tags")["value"], json!(["ui"]));
    let quit = find(&records, "menu.quit");
    assert_eq!(cell(quit, "n")["value"], Value::Null);
    assert_eq!(cell(quit, "tags")["value"], json!(["legal"]));
    let generated = records.iter().find(|r| cell(r, "en")["value"] == json!("Généré"));
    let generated = generated.expect("the row without an id was added");
    assert_eq!(generated["id"].as_str().map(str::len), Some(14), "a generated id");
    let grid_body = app.get(&format!("/v1/grids/{grid}")).assert_status(200).clone();
    assert_eq!(grid_body["status"], json!("active"), "importing is over");
}

/// A running import shows how far it has come: its progress never goes back, stays below 100
/// while it runs, and reads 100 once it ended.
#[test]
fn an_import_task_shows_its_progress() {
    let app = spawn_app();
    let (_, view) = grid(&app);
    let mut csv = String::from("Record ID,English,Count\n");
    for i in 0..30_000 {
        csv.push_str(&format!("r{i},Line number {i} of the script,{i}\n"));
    }
    let res = import(&app, &view, csv.as_bytes(), None, "");
    let id = res.assert_status(202)["id"].as_str().expect("task id").to_owned();
    assert_eq!(res.body["progress"], json!(0));
    let mut seen: Vec<u64> = vec![0];
    for _ in 0..4000 {
        let body = app.get(&format!("/v1/tasks/{id}")).assert_status(200).clone();
        let progress = body["progress"].as_u64().expect("progress");
        assert!(
            seen.iter().all(|p| *p <= progress),
            "progress went back: {seen:?} then {progress}"
        );
        seen.push(progress);
        if body["status"] != json!("running") {
            assert_eq!(body["status"], json!("successful"), "{body}");
            assert_eq!(progress, 100);
            assert!(seen[..seen.len() - 1].iter().all(|p| *p < 100), "{seen:?}");
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("import task {id} did not finish: {seen:?}");
}

#[test]
fn headers_match_names_then_ids_and_paths_are_imported() {
    let app = spawn_app();
    let (_, view) = grid(&app);
    let csv = "_recordId,_path,en,Count\nhud.hp,ui/hud,Health,100\n";
    succeeds(&app, &import(&app, &view, csv.as_bytes(), None, ""));
    let records = app.records(&view);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["path"], json!("ui/hud"));
    assert_eq!(cell(&records[0], "en")["value"], json!("Health"));
    assert_eq!(cell(&records[0], "n")["value"], json!(100));
}

#[test]
fn column_mappings_without_a_header_and_first_data_row() {
    let app = spawn_app();
    let (_, view) = grid(&app);
    let csv = "a title line,,\nk1,Hello,5\nk2,World,6\n";
    let request = json!({"withHeader": false, "firstDataRow": 2, "columnMappings": [
        {"columnId": "_recordId", "fileColumnIndex": 0},
        {"columnId": "en", "fileColumnIndex": 1},
        {"columnId": "n", "fileColumnIndex": 2}]});
    // importRequest as a query parameter, as in the OpenAPI.
    let query = format!(
        "?{}",
        serde_urlencoded::to_string([("importRequest", request.to_string())]).expect("encodes")
    );
    succeeds(&app, &import(&app, &view, csv.as_bytes(), None, &query));
    let records = app.records(&view);
    let ids: Vec<&Value> = records.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!("k1"), &json!("k2")]);
    assert_eq!(cell(find(&records, "k2"), "n")["value"], json!(6));

    // The same as a multipart part; a mapping replaces the header's match of that column.
    let csv = "Record ID,English,Count\nk1,ignored,1\n";
    let request = json!({"columnMappings": [{"columnId": "fr", "fileColumnIndex": 1}]});
    succeeds(&app, &import(&app, &view, csv.as_bytes(), Some(&request), ""));
    let k1 = find(&app.records(&view), "k1").clone();
    assert_eq!(cell(&k1, "fr")["value"], json!("ignored"));
    assert_eq!(cell(&k1, "en")["value"], json!("Hello"), "English was not mapped this time");
    assert_eq!(cell(&k1, "n")["value"], json!(5));
}

#[test]
fn a_bad_request_is_refused_at_once_and_starts_nothing() {
    let app = spawn_app();
    let (_, view) = grid(&app);
    app.add_records(&view, json!([{"id": "a", "cells": [{"columnId": "en", "value": "A"}]}]));
    let before = app.snapshot(&format!("/v1/views/{view}/records"));
    let csv = b"Record ID,English\na,changed\n";
    let no_header = json!({"withHeader": false});
    import(&app, &view, csv, Some(&no_header), "").assert_error(400, "badRequest");
    let unknown = json!({"columnMappings": [{"columnId": "nope", "fileColumnIndex": 0}]});
    import(&app, &view, csv, Some(&unknown), "").assert_error(400, "badRequest");
    let mistyped = json!({"withHeader": "yes"});
    import(&app, &view, csv, Some(&mistyped), "").assert_error(400, "badRequest");
    import(&app, &view, b"Nothing,Matches\n1,2\n", None, "").assert_error(400, "badRequest");
    import(&app, &view, csv, None, "?importRequest=%7Bnot%20json").assert_error(400, "badRequest");
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let only_request = multipart(&[("importRequest", None, b"{}")]);
    let path = format!("/v1/views/{view}/import");
    app.raw(Method::POST, &path, &content_type, only_request).assert_error(400, "badRequest");
    app.raw(Method::POST, &path, &content_type, b"--garbage".to_vec())
        .assert_error(400, "badRequest");
    app.raw(Method::POST, &path, "application/json", b"{}".to_vec())
        .assert_error(415, "unsupportedMediaType");
    import(&app, "nosuchview", csv, None, "").assert_error(404, "viewIsNotFound");
    let reader = app.create_key(&["read"], json!({"all": true}));
    let req = app
        .request(Method::POST, &path, Some(&reader))
        .header("Content-Type", content_type.as_str())
        .body(multipart(&[("file", Some("a.csv"), csv)]));
    app.send(req).assert_error(403, "accessDenied");
    app.assert_unchanged(&format!("/v1/views/{view}/records"), &before);
}

#[test]
fn a_bad_row_fails_the_task_naming_row_and_column_and_changes_nothing() {
    let app = spawn_app();
    let (_, view) = grid(&app);
    app.add_records(&view, json!([{"id": "a", "cells": [{"columnId": "en", "value": "A"}]}]));
    let path = format!("/v1/views/{view}/records");
    let before = app.snapshot(&path);
    let cases: [(&[u8], &[&str]); 6] = [
        (b"Record ID,English,Count\na,changed,1\nb,new,many\n", &["row 3", "\"n\""]),
        (b"Record ID,English,Final\nb,new,maybe\n", &["row 2", "\"ok\""]),
        (b"Record ID,English,Tags\nb,new,\"[\"\"nope\"\"]\"\n", &["row 2", "\"tags\""]),
        (b"Record ID,English,Tags\nb,new,[broken\n", &["row 2", "\"tags\""]),
        (b"Record ID,English\na,changed\nb,x,extra\n", &["row 3", "fields"]),
        (b"Record ID,English\nb,ok\nc,\xff\xfe bad\n", &["row 3", "column 2", "UTF-8"]),
    ];
    for (csv, parts) in cases {
        fails_naming(&app, &import(&app, &view, csv, None, ""), parts);
        app.assert_unchanged(&path, &before);
    }
    let twice = b"Record ID,English\nb,one\nb,two\n";
    let task = finish(&app, &import(&app, &view, twice, None, ""));
    assert_eq!(task["status"], json!("failed"));
    assert_eq!(task["error"]["code"], json!("duplicateRecordId"), "{task}");
    assert!(task["error"]["message"].as_str().is_some_and(|m| m.contains("row 3")), "{task}");
    app.assert_unchanged(&path, &before);
}

#[test]
fn a_file_over_the_limit_is_refused_with_413() {
    let app = spawn_app();
    let (_, view) = grid(&app);
    let path = format!("/v1/views/{view}/records");
    let before = app.snapshot(&path);
    let mut csv = b"Record ID,English\n".to_vec();
    let row = b"k,0123456789012345678901234567890123456789012345678901234567890123456789\n";
    while csv.len() <= 100 * 1024 * 1024 {
        csv.extend_from_slice(row);
    }
    csv.truncate(100 * 1024 * 1024 + 1);
    import(&app, &view, &csv, None, "").assert_error(413, "payloadTooLarge");
    app.assert_unchanged(&path, &before);
    let imports = app.data_dir.join("imports");
    let left = std::fs::read_dir(&imports).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "the partial upload was removed");
}

#[test]
fn an_exported_file_imports_back_as_the_same_records() {
    let app = spawn_app();
    let (grid_id, view) = grid(&app);
    app.add_records(
        &view,
        json!([
            {"id": "menu.start", "path": "ui/menu", "cells": [
                {"columnId": "en", "value": "Start, \"quoted\"\nand a new line"},
                {"columnId": "fr", "value": "Démarrer"},
                {"columnId": "n", "value": 2.5}, {"columnId": "ok", "value": true},
                {"columnId": "due", "value": "2026-03-01T10:15:30.123Z"},
                {"columnId": "tags", "value": ["ui", "legal"]}]},
            {"id": "menu.quit", "cells": [{"columnId": "en", "value": "Quit 終了"}]}
        ]),
    );
    let exported = app.get(&format!("/v1/views/{view}/export"));
    assert_eq!(exported.status, 200);
    let file = exported.text.into_bytes();
    let before = app.records(&view);

    // Into the same grid: nothing changes.
    succeeds(&app, &import(&app, &view, &file, None, ""));
    assert_eq!(app.records(&view), before);

    // Into a new grid with the same columns: the same records.
    let copy = app.post(
        &format!("/v1/grids?dbId={}", app.default_db()),
        &json!({"name": "copy", "templateGridId": grid_id}),
    );
    let copy_view =
        copy.assert_status(201)["defaultAccessViewId"].as_str().expect("view").to_owned();
    succeeds(&app, &import(&app, &copy_view, &file, None, ""));
    let strip = |records: Vec<Value>| -> Vec<Value> {
        records
            .into_iter()
            .map(|r| {
                let cells: Vec<Value> = r["cells"]
                    .as_array()
                    .expect("cells")
                    .iter()
                    .map(|c| json!([c["columnId"], c["value"]]))
                    .collect();
                json!({"id": r["id"], "path": r["path"], "cells": cells})
            })
            .collect()
    };
    assert_eq!(strip(app.records(&copy_view)), strip(before));
}

#[test]
fn imported_records_survive_a_restart() {
    let app = spawn_app();
    let (_, view) = grid(&app);
    let csv = "Record ID,English,Count\nk1,One,1\nk2,Two,2\n";
    succeeds(&app, &import(&app, &view, csv.as_bytes(), None, ""));
    let before = app.records(&view);
    let app = app.restart();
    assert_eq!(app.records(&view), before);
}

/// Waits for the restore task of a 202 answer to end successful.
#[track_caller]
fn restored(app: &TestApp, res: &Resp) {
    let task = res.assert_status(202).clone();
    assert_eq!(task["type"], json!("restore"));
    let id = task["id"].as_str().expect("task id").to_owned();
    for _ in 0..800 {
        let body = app.get(&format!("/v1/tasks/{id}")).assert_status(200).clone();
        if body["status"] != json!("running") {
            assert_eq!(body["status"], json!("successful"), "{body}");
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("restore task {id} did not finish");
}

#[test]
fn an_import_keeps_a_backup_that_restores_the_records_from_before_it() {
    let app = spawn_app();
    let (grid_id, view) = grid(&app);
    app.add_records(&view, json!([
        {"id": "a", "path": "p", "cells": [{"columnId": "en", "value": "A"}, {"columnId": "n", "value": 1}]},
        {"id": "b", "cells": [{"columnId": "en", "value": "B"}, {"columnId": "fr", "value": "Bé"}]}
    ]));
    let before = app.records(&view);
    let csv = "Record ID,English,Count\na,A changed,2\nc,New,3\n";
    succeeds(&app, &import(&app, &view, csv.as_bytes(), None, ""));
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["b"]}));
    assert_ne!(app.records(&view), before);
    let backups = app.get(&format!("/v1/grids/{grid_id}/backups")).assert_status(200).clone();
    let backups = backups.as_array().expect("a list").clone();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(backups[0]["records"], json!(2));
    assert_eq!(backups[0]["gridId"], json!(grid_id));
    let id = backups[0]["id"].as_str().expect("id");
    let restore = format!("/v1/grids/{grid_id}/backups/{id}/restore");
    restored(&app, &app.call(Method::POST, &restore, Some(&app.key), None));
    let strip = |records: Vec<Value>| -> Vec<Value> {
        let mut out: Vec<Value> = records
            .into_iter()
            .map(|r| json!({"id": r["id"], "path": r["path"], "cells": r["cells"]}))
            .collect();
        out.sort_by_key(|r| r["id"].as_str().map(str::to_owned));
        out
    };
    assert_eq!(
        strip(app.records(&view)),
        strip(before.clone()),
        "the records from before the import"
    );
    let grid_body = app.get(&format!("/v1/grids/{grid_id}")).assert_status(200).clone();
    assert_eq!(grid_body["status"], json!("active"));
    let app = app.restart();
    assert_eq!(strip(app.records(&view)), strip(before), "the restore is durable");
}

/// A failed import changed nothing, so it keeps no backup; a branch keeps its 20 newest
/// backups, a new one retiring the oldest.
#[test]
fn a_failed_import_keeps_no_backup_and_a_branch_keeps_twenty() {
    let app = spawn_app();
    let (grid_id, view) = grid(&app);
    let list = format!("/v1/grids/{grid_id}/backups");
    let bad = b"Record ID,Count\na,not a number\n";
    for _ in 0..3 {
        let task = finish(&app, &import(&app, &view, bad, None, ""));
        assert_eq!(task["status"], json!("failed"), "{task}");
    }
    assert_eq!(app.snapshot(&list), json!([]));
    let mut ids = Vec::new();
    for i in 0..21 {
        let csv = format!("Record ID,English\na,A{i}\n");
        succeeds(&app, &import(&app, &view, csv.as_bytes(), None, ""));
        let listed = app.snapshot(&list);
        let last = listed.as_array().and_then(|l| l.last()).expect("a backup");
        ids.push(last["id"].clone());
    }
    let listed = app.snapshot(&list);
    let kept: Vec<Value> =
        listed.as_array().expect("a list").iter().map(|b| b["id"].clone()).collect();
    assert_eq!(kept, ids[1..]);
    let first = ids[0].as_str().expect("id");
    let restore = format!("{list}/{first}/restore");
    app.call(Method::POST, &restore, Some(&app.key), None).assert_error(404, "backupIsNotFound");
    let app = app.restart();
    assert_eq!(app.snapshot(&list), listed);
}

#[test]
fn backups_are_optional_and_unknown_ones_are_404() {
    let app = spawn_app();
    let (grid_id, view) = grid(&app);
    let csv = b"Record ID,English\na,A\n";
    succeeds(&app, &import(&app, &view, csv, Some(&json!({"backup": false})), ""));
    let backups = app.get(&format!("/v1/grids/{grid_id}/backups")).assert_status(200).clone();
    assert_eq!(backups, json!([]));
    let restore = format!("/v1/grids/{grid_id}/backups/nosuchbackup/restore");
    app.call(Method::POST, &restore, Some(&app.key), None).assert_error(404, "backupIsNotFound");
    app.get("/v1/grids/nosuchgrid/backups").assert_error(404, "gridIsNotFound");
}

#[test]
fn an_imported_reference_to_an_unknown_record_fails_the_task_and_imports_nothing() {
    let app = spawn_app();
    let (glossary, glossary_view) = app.create_grid("glossary");
    app.create_column(&glossary_view, json!({"id": "term", "name": "Term", "type": "singleLine"}));
    app.add_records(
        &glossary_view,
        json!([{"id": "g1", "cells": [{"columnId": "term", "value": "Sword"}]}]),
    );
    let (_, view) = app.create_grid("strings");
    app.create_column(
        &view,
        json!({"id": "ref", "name": "Term", "type": "reference",
               "reference": {"gridId": glossary, "columnId": "term"}}),
    );
    let res = import(&app, &view, b"_recordId,Term\ns1,g1\ns2,nope\n", None, "");
    let task = finish(&app, &res);
    assert_eq!(task["status"], json!("failed"), "{task}");
    assert_eq!(task["error"]["code"], json!("referenceRecordNotFound"), "{task}");
    let message = task["error"]["message"].as_str().expect("message");
    assert!(message.contains("nope"), "{message}");
    assert!(app.records(&view).is_empty(), "nothing imported");

    let res = import(&app, &view, b"_recordId,Term\ns1,g1\n", None, "");
    succeeds(&app, &res);
    let records = app.records(&view);
    assert_eq!(cell(&records[0], "ref")["referencedIds"], json!(["g1"]));
    assert_eq!(cell(&records[0], "ref")["value"], json!(["Sword"]));
}

/// A company runs at most two imports at once (each holds its file's writes in memory until
/// the grid applies them): a third, on another grid, is 409 `taskIsRunning`, starts nothing
/// and leaves its grid as it was; once one ends, the next import runs.
#[test]
fn a_company_runs_at_most_two_imports_at_once() {
    let app = spawn_app();
    let csv = rows_csv(60_000);
    let views: Vec<String> = (0..3)
        .map(|i| {
            let (_, view) = app.create_grid(&format!("import {i}"));
            app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
            view
        })
        .collect();
    let request = json!({"backup": false});
    let first = import(&app, &views[0], csv.as_bytes(), Some(&request), "");
    let second = import(&app, &views[1], csv.as_bytes(), Some(&request), "");
    first.assert_status(202);
    second.assert_status(202);
    // A small file, so that the refusal comes while the two large imports still run.
    let third = import(&app, &views[2], b"_recordId,t\nx,y\n", Some(&request), "");
    third.assert_error(409, "taskIsRunning");
    assert!(third.text.contains("as many imports as it may at once (2)"), "{}", third.text);
    succeeds(&app, &first);
    succeeds(&app, &second);
    let listed = app.get(&format!("/v1/views/{}/records", views[2]));
    assert_eq!(listed.assert_status(200), &json!([]), "the refused import wrote nothing");
    let again = import(&app, &views[2], csv.as_bytes(), Some(&request), "");
    succeeds(&app, &again);
    let page = app.get(&format!("/v1/views/{}/records?page={{\"limit\":1}}", views[2]));
    assert_eq!(page.header("x-total-count"), Some("60000"));
}
