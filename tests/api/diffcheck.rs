//! `POST /v1/branches/diffcheck` + `GET /v1/branches/diffcheck/<taskId>` (issue 19,
//! decisions.md section 8): a task previewing what merging one view's branch into another's
//! would change (added, updated, deleted records; conflicted cells), filtered by
//! `mergeRecordOptions` and paged; it changes nothing. And its bad requests.

use serde_json::{json, Value};

use crate::branches::{abc_grid, branch_ids, create_branch, delete_records, merge, model, set};
use crate::helpers::{page_query, spawn_app, Resp, TestApp};

/// Starts a preview of merging `source` (a view) into `destination`, waits for it to succeed;
/// the task id.
fn preview(app: &TestApp, source: &str, destination: &str) -> String {
    let path =
        format!("/v1/branches/diffcheck?sourceViewId={source}&destinationViewId={destination}");
    let res = app.post(&path, &json!({}));
    let id = res.assert_status(202)["id"].as_str().expect("task id").to_owned();
    let task = app.wait_task(&id);
    assert_eq!(task["status"], json!("successful"), "{task}");
    assert_eq!(task["type"], json!("diffcheck"));
    id
}

fn listed(app: &TestApp, task: &str, query: &str) -> Resp {
    app.get(&format!("/v1/branches/diffcheck/{task}{query}"))
}

/// One cell of a preview: column, cell status, source value, destination value.
type Cell = (String, String, Value, Value);

/// The records of a preview by id: (id, status, cells by column).
fn by_id(list: &Value) -> Vec<(String, String, Vec<Cell>)> {
    let mut out: Vec<_> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            let mut cells: Vec<_> = r["cells"]
                .as_array()
                .expect("cells")
                .iter()
                .map(|c| {
                    let text = |k: &str| c[k].as_str().expect("text").to_owned();
                    (
                        text("columnId"),
                        text("status"),
                        c["sourceValue"].clone(),
                        c["destinationValue"].clone(),
                    )
                })
                .collect();
            cells.sort_by(|a, b| a.0.cmp(&b.0));
            (
                r["id"].as_str().expect("id").to_owned(),
                r["status"].as_str().expect("status").to_owned(),
                cells,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn a_preview_lists_what_a_merge_would_change_and_changes_nothing() {
    let app = spawn_app();
    let (grid, view) = abc_grid(&app, &["r1", "r2", "r3"]);
    let (_, branch_view) = branch_ids(&create_branch(&app, &grid, "release"));
    set(&app, &branch_view, "r1", "a", "source only");
    set(&app, &branch_view, "r2", "b", "both: source");
    set(&app, &view, "r2", "b", "both: master");
    delete_records(&app, &branch_view, &["r3"]);
    app.add_records(
        &branch_view,
        json!([{"id": "r4", "cells": [{"columnId": "a", "value": "new"}]}]),
    );
    let (master_before, branch_before) = (model(&app, &view), model(&app, &branch_view));

    let task = preview(&app, &branch_view, &view);
    let all = listed(&app, &task, "");
    let records = by_id(all.assert_status(200));
    let ids: Vec<(&str, &str)> =
        records.iter().map(|(id, s, _)| (id.as_str(), s.as_str())).collect();
    assert_eq!(ids, [("r1", "updated"), ("r2", "updated"), ("r3", "deleted"), ("r4", "added")]);
    assert_eq!(
        records[0].2,
        [("a".to_owned(), "ahead".to_owned(), json!("source only"), json!("r1a"))]
    );
    assert_eq!(
        records[1].2,
        [("b".to_owned(), "conflicted".to_owned(), json!("both: source"), json!("both: master"))]
    );
    assert!(all.body[0]["lastModifiedTime"].is_string(), "{}", all.text);

    // mergeRecordOptions picks the records shown; page pages them.
    let added = by_id(listed(&app, &task, "?mergeRecordOptions=add").assert_status(200));
    assert_eq!(added.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), ["r4"]);
    let some =
        listed(&app, &task, &format!("?mergeRecordOptions=update,delete&{}", page_query(1, 1)));
    assert_eq!(by_id(some.assert_status(200)).len(), 1);

    assert_eq!(model(&app, &view), master_before, "the preview changed nothing");
    assert_eq!(model(&app, &branch_view), branch_before);
}

#[test]
fn bad_previews_are_refused() {
    let app = spawn_app();
    let (grid, view) = abc_grid(&app, &["r1"]);
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "release"));
    let post = |q: &str| app.post(&format!("/v1/branches/diffcheck{q}"), &json!({}));
    post(&format!("?destinationViewId={view}")).assert_error(400, "requestParameterMissing");
    post(&format!("?sourceViewId={branch_view}")).assert_error(400, "requestParameterMissing");
    post(&format!("?sourceViewId=nosuchview1&destinationViewId={view}"))
        .assert_error(404, "viewIsNotFound");
    let (_, other) = app.create_grid("other");
    let res = post(&format!("?sourceViewId={branch_view}&destinationViewId={other}"));
    assert_eq!(res.status, 422, "{}", res.text);

    let task = preview(&app, &branch_view, &view);
    listed(&app, &task, "?mergeRecordOptions=sideways").assert_error(400, "badRequest");
    let query = serde_urlencoded::to_string([("query", r#"{"a":{"=":"x"}}"#)]).expect("encoded");
    listed(&app, &task, &format!("?{query}")).assert_error(400, "badRequest");
    listed(&app, "nosuchtask01", "").assert_error(404, "taskIsNotFound");
    // Another kind of task is not a preview.
    let merged = merge(&app, &branch, &grid, "update");
    let merge_task = merged["id"].as_str().expect("task id");
    listed(&app, merge_task, "").assert_error(404, "taskIsNotFound");
    // Another company cannot read the preview.
    let (stranger, _, _) = app.create_company("enterprise");
    let res = app.get_as(&stranger, &format!("/v1/branches/diffcheck/{task}"));
    res.assert_error(404, "taskIsNotFound");
}
