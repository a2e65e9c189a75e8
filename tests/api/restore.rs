//! Point-in-time restore (issue 21): `POST /v1/grids/<id>/restore` with `at` or `position`
//! makes, as a task, a new branch holding the grid as it was then, rebuilt from the history
//! the server keeps (`--retain-history`); a target outside it, or a malformed request, is a
//! clear 400 and starts nothing.

use std::thread::sleep;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{find_record, records_path, spawn_app, spawn_app_with, TestApp};
use crate::records::{ids_of, simple_grid, titled};

fn restore_path(grid: &str) -> String {
    format!("/v1/grids/{grid}/restore")
}

/// The server's idea of now, as the API writes times (a record's write time is one).
fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A time strictly between two writes made around it: the writes are 50 ms apart from it.
fn pause_mark() -> String {
    sleep(Duration::from_millis(50));
    let mark = now_rfc3339();
    sleep(Duration::from_millis(50));
    mark
}

/// Starts a restore, waits for it, and answers the new branch's default view and body.
#[track_caller]
fn restored(app: &TestApp, grid: &str, body: &Value) -> (String, Value) {
    // A new branch's first base is its first snapshot's, dated when the branch was created
    // and written at once: until it is stored, the branch has no history to restore from.
    let mut started = app.post(&restore_path(grid), body);
    for _ in 0..400 {
        if !started.text.contains("none is kept yet") {
            break;
        }
        sleep(Duration::from_millis(25));
        started = app.post(&restore_path(grid), body);
    }
    let task = started.assert_status(202).clone();
    assert_eq!(task["type"], json!("pointInTimeRestore"), "{task}");
    let branch_id = task["branchId"].as_str().expect("the new branch's id").to_owned();
    let done = app.wait_task(task["id"].as_str().expect("task id"));
    assert_eq!(done["status"], json!("successful"), "{done}");
    assert_eq!(done["branchId"], json!(branch_id));
    let branch = app.get(&format!("/v1/branches/{branch_id}")).assert_status(200).clone();
    let view = branch["defaultAccessViewId"].as_str().expect("the branch's view").to_owned();
    (view, branch)
}

fn title_of(app: &TestApp, view: &str, id: &str) -> Value {
    find_record(&app.records(view), id)["cells"][0]["value"].clone()
}

#[test]
fn a_restore_to_a_time_between_two_writes_shows_exactly_the_first() {
    let app = spawn_app();
    let (grid, view) = simple_grid(&app);
    app.add_records(&view, titled(["a".to_owned(), "gone".to_owned()]));
    let mark = pause_mark();
    let patch = json!([{"id": "a", "cells": [{"columnId": "title", "value": "second"}]}]);
    app.patch(&records_path(&view), &patch).assert_status(200);
    app.add_records(&view, titled(["b".to_owned()]));
    app.delete_with(&records_path(&view), &json!({"ids": ["gone"]})).assert_status(204);

    let (restored_view, branch) = restored(&app, &grid, &json!({ "at": mark }));
    assert!(branch["name"].as_str().is_some_and(|n| n.contains("restored to")), "{branch}");
    assert_eq!(ids_of(&app.records(&restored_view)), ["a", "gone"]);
    assert_eq!(title_of(&app, &restored_view, "a"), json!("T a"));
    // The grid itself is as it was left.
    assert_eq!(ids_of(&app.records(&view)), ["a", "b"]);
    assert_eq!(title_of(&app, &view, "a"), json!("second"));

    // The restored branch is a branch like any: it takes writes and survives a restart.
    let edit = json!([{"id": "gone", "cells": [{"columnId": "title", "value": "kept"}]}]);
    app.patch(&records_path(&restored_view), &edit).assert_status(200);
    let app = app.restart();
    assert_eq!(ids_of(&app.records(&restored_view)), ["a", "gone"]);
    assert_eq!(title_of(&app, &restored_view, "gone"), json!("kept"));
    assert_eq!(title_of(&app, &view, "a"), json!("second"));
}

#[test]
fn a_restore_to_a_position_takes_every_commit_up_to_it_and_history_survives_restarts() {
    let app = spawn_app();
    let (grid, view) = simple_grid(&app);
    app.add_records(&view, titled(["a".to_owned()]));
    let first = app.get(&format!("/v1/views/{view}/records/a"));
    let position: u32 =
        first.header("etag").expect("a version").trim_matches('"').parse().expect("a number");
    let patch = json!([{"id": "a", "cells": [{"columnId": "title", "value": "later"}]}]);
    app.patch(&records_path(&view), &patch).assert_status(200);
    let mark = pause_mark();
    app.add_records(&view, titled(["after-restart".to_owned()]));

    // The bases and the log outlive the process that wrote them.
    let app = app.restart();
    let (at_position, _) = restored(&app, &grid, &json!({ "position": position }));
    assert_eq!(ids_of(&app.records(&at_position)), ["a"]);
    assert_eq!(title_of(&app, &at_position, "a"), json!("T a"));
    let (at_mark, _) = restored(&app, &grid, &json!({ "at": mark, "name": "before the import" }));
    assert_eq!(ids_of(&app.records(&at_mark)), ["a"]);
    assert_eq!(title_of(&app, &at_mark, "a"), json!("later"));
    let branches = app.get(&format!("/v1/branches?gridId={grid}")).assert_status(200).clone();
    let names: Vec<&str> =
        branches.as_array().expect("branches").iter().filter_map(|b| b["name"].as_str()).collect();
    assert!(names.contains(&"before the import"), "{names:?}");
}

#[test]
fn a_branch_other_than_master_restores_too() {
    let app = spawn_app();
    let (grid, view) = simple_grid(&app);
    app.add_records(&view, titled(["a".to_owned()]));
    let res = app.post(&format!("/v1/branches?gridId={grid}"), &json!({"name": "dev"}));
    let dev = res.assert_status(201).clone();
    let dev_id = dev["id"].as_str().expect("branch id").to_owned();
    let dev_view = dev["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.add_records(&dev_view, titled(["on-dev".to_owned()]));
    let mark = pause_mark();
    app.add_records(&dev_view, titled(["later".to_owned()]));

    let (restored_view, branch) = restored(&app, &grid, &json!({ "at": mark, "branchId": dev_id }));
    assert!(branch["name"].as_str().is_some_and(|n| n.starts_with("dev restored to")), "{branch}");
    assert_eq!(ids_of(&app.records(&restored_view)), ["a", "on-dev"]);
}

#[test]
fn restores_outside_the_history_or_malformed_are_refused_with_nothing_started() {
    let app = spawn_app();
    let before_grid = now_rfc3339();
    sleep(Duration::from_millis(20));
    let (grid, view) = simple_grid(&app);
    app.add_records(&view, titled(["a".to_owned()]));
    let tasks_before = app.get(&format!("/v1/branches?gridId={grid}")).assert_status(200).clone();
    let path = restore_path(&grid);

    let refused = app.post(&path, &json!({ "at": before_grid }));
    refused.assert_error(400, "badRequest");
    assert!(refused.text.contains("outside the retained history"), "{}", refused.text);
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    assert!(app.post(&path, &json!({ "at": future })).text.contains("in the future"));
    app.post(&path, &json!({ "at": future })).assert_error(400, "badRequest");
    app.post(&path, &json!({ "position": 1_000_000 })).assert_error(400, "badRequest");
    app.post(&path, &json!({})).assert_error(400, "badRequest");
    app.post(&path, &json!({ "at": now_rfc3339(), "position": 1 })).assert_error(400, "badRequest");
    app.post(&path, &json!({ "at": "yesterday" })).assert_error(400, "badRequest");
    app.post(&path, &json!({ "position": -1 })).assert_error(400, "badRequest");
    app.post(&path, &json!({ "position": 1, "when": 2 })).assert_error(400, "badRequest");
    app.post(&path, &json!({ "position": 1, "name": "" })).assert_error(400, "badRequest");
    app.post(&path, &json!({ "position": 1, "branchId": "nope" }))
        .assert_error(404, "branchIsNotFound");
    app.post(&restore_path("nope"), &json!({ "position": 1 })).assert_error(404, "gridIsNotFound");
    let reader = app.create_key(&["read"], json!({"all": true}));
    app.post_as(&reader, &path, &json!({ "position": 1 })).assert_error(403, "accessDenied");
    app.assert_unchanged(&format!("/v1/branches?gridId={grid}"), &tasks_before);

    let other = app.create_grid("Other").0;
    let other_branch = app.get(&format!("/v1/branches?gridId={other}")).body[0]["id"].clone();
    let wrong = json!({ "position": 1, "branchId": other_branch });
    app.post(&path, &wrong).assert_error(404, "branchIsNotFound");
}

#[test]
fn a_server_keeping_no_history_says_so() {
    let app = spawn_app_with(|config| config.retain_history = Duration::ZERO);
    let (grid, view) = simple_grid(&app);
    app.add_records(&view, titled(["a".to_owned()]));
    let refused = app.post(&restore_path(&grid), &json!({ "at": now_rfc3339() }));
    refused.assert_error(400, "badRequest");
    assert!(refused.text.contains("--retain-history 0"), "{}", refused.text);
}
