//! Paths (issue 22, decisions.md section 13): a view's folder tree from its records' paths and
//! kept folders, folders created, deleted (with their records), moved and renamed (their
//! records with them, in one WAL entry), in grids identified by id and by path and id.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

fn tree(app: &TestApp, view: &str, root: Option<&str>) -> Vec<(String, String)> {
    let query = root.map(|r| format!("?rootPath={}", urlencode(r))).unwrap_or_default();
    let res = app.get(&format!("/v1/views/{view}/paths/tree{query}"));
    let nodes = res.assert_status(200).as_array().expect("a list of nodes").clone();
    nodes
        .iter()
        .map(|n| {
            let field = |k: &str| n[k].as_str().expect("a string").to_owned();
            (field("parentPath"), field("name"))
        })
        .collect()
}

fn urlencode(text: &str) -> String {
    serde_urlencoded::to_string([("x", text)]).expect("encodes")[2..].to_owned()
}

fn node(parent: &str, name: &str) -> (String, String) {
    (parent.to_owned(), name.to_owned())
}

/// (id, path) of every record, in order.
fn placed(app: &TestApp, view: &str) -> Vec<(String, String)> {
    app.records(view)
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (field("id"), field("path"))
        })
        .collect()
}

fn grid(app: &TestApp, identity: &str) -> String {
    let db = app.default_db();
    let body = json!({"name": "Strings", "recordIdentifierType": identity});
    let res = app.post(&format!("/v1/grids?dbId={db}"), &body);
    let view = res.assert_status(201)["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.create_column(&view, json!({"id": "text", "name": "Text", "type": "singleLine"}));
    let records = json!([
        {"id": "save", "path": "ui/menu", "cells": [{"columnId": "text", "value": "Save"}]},
        {"id": "quit", "path": "ui/menu"},
        {"id": "ok", "path": "/ui//dialogs/"},
        {"id": "boom", "path": "audio"},
        {"id": "title"},
    ]);
    app.add_records(&view, records);
    view
}

#[test]
fn the_tree_lists_every_folder_of_the_records_depth_first() {
    let app = spawn_app();
    let view = grid(&app, "recordId");
    let all = [node("", "ui"), node("ui", "menu"), node("ui", "dialogs"), node("", "audio")];
    assert_eq!(tree(&app, &view, None), all);
    assert_eq!(tree(&app, &view, Some("")), all);
    assert_eq!(tree(&app, &view, Some("ui")), [node("ui", "menu"), node("ui", "dialogs")]);
    assert_eq!(tree(&app, &view, Some("/ui/menu/")), []);
    let res = app.get(&format!("/v1/views/{view}/paths/tree?rootPath=nowhere"));
    res.assert_error(404, "pathIsNotFound");
    app.get("/v1/views/nope/paths/tree").assert_error(404, "viewIsNotFound");
}

#[test]
fn folders_are_created_kept_and_deleted_with_their_records() {
    let app = spawn_app();
    let view = grid(&app, "recordId");
    let path = format!("/v1/views/{view}/paths");
    let res = app.post(&path, &json!({"parentPath": "ui", "paths": ["empty", "later"]}));
    assert_eq!(res.assert_status(200), &json!({"paths": ["ui/empty", "ui/later"]}));
    assert_eq!(
        tree(&app, &view, Some("ui")),
        [node("ui", "menu"), node("ui", "dialogs"), node("ui", "empty"), node("ui", "later")]
    );
    let top = app.post(&path, &json!({"paths": ["fonts"]}));
    assert_eq!(top.assert_status(200), &json!({"paths": ["fonts"]}));

    // Refused, changing nothing.
    let before = tree(&app, &view, None);
    app.post(&path, &json!({"parentPath": "ui", "paths": ["menu"]}))
        .assert_error(409, "idAlreadyExists");
    app.post(&path, &json!({"parentPath": "ui", "paths": ["a", "a"]}))
        .assert_error(409, "idAlreadyExists");
    app.post(&path, &json!({"parentPath": "nope", "paths": ["x"]}))
        .assert_error(404, "pathIsNotFound");
    for bad in [
        json!({"paths": ["a/b"]}),
        json!({"paths": [""]}),
        json!({"paths": []}),
        json!({"paths": ["x".repeat(256)]}),
    ] {
        app.post(&path, &bad).assert_error(400, "badRequest");
    }
    app.post(&path, &json!({"paths": "ui"})).assert_error(400, "badRequest");
    assert_eq!(tree(&app, &view, None), before);

    // A folder stays when its last record goes; deleting a folder deletes what is in it.
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["boom"]}))
        .assert_status(204);
    assert!(tree(&app, &view, None).contains(&node("", "audio")), "kept once paths changed");
    app.delete_with(&path, &json!({"paths": ["ui"]})).assert_status(204);
    assert_eq!(tree(&app, &view, None), [node("", "audio"), node("", "fonts")]);
    assert_eq!(placed(&app, &view), [("title".to_owned(), String::new())]);
    app.delete_with(&path, &json!({"paths": ["ui"]})).assert_error(404, "pathIsNotFound");
    app.delete_with(&path, &json!({"paths": [""]})).assert_error(400, "badRequest");

    let app = app.restart();
    assert_eq!(tree(&app, &view, None), [node("", "audio"), node("", "fonts")]);
}

#[test]
fn moves_and_renames_take_the_records_and_keep_the_order_asked() {
    let app = spawn_app();
    let view = grid(&app, "recordId");
    let move_path = format!("/v1/views/{view}/paths/move");
    let res = app.post(
        &move_path,
        &json!({"names": ["menu"], "fromParentPath": "ui", "toParentPath": "", "moveBefore": "ui"}),
    );
    assert_eq!(res.assert_status(200), &json!({"paths": ["menu"]}));
    assert_eq!(
        tree(&app, &view, None),
        [node("", "menu"), node("", "ui"), node("ui", "dialogs"), node("", "audio")]
    );
    assert_eq!(
        placed(&app, &view)[..2],
        [("save".into(), "menu".into()), ("quit".into(), "menu".into())]
    );
    let first = &app.records(&view)[0];
    assert_eq!(first["cells"][0]["value"], json!("Save"), "the cells move with the record");

    // Reorder among siblings only.
    let res = app.post(&move_path, &json!({"names": ["audio"], "moveAfter": "menu"}));
    assert_eq!(res.assert_status(200), &json!({"paths": ["audio"]}));
    assert_eq!(
        tree(&app, &view, None),
        [node("", "menu"), node("", "audio"), node("", "ui"), node("ui", "dialogs")]
    );

    // Rename, with the path in the URL (its slash encoded or not).
    let renamed =
        app.put(&format!("/v1/views/{view}/paths/ui%2Fdialogs"), &json!({"newName": "popups"}));
    assert_eq!(renamed.assert_status(200), &json!({"path": "ui/popups"}));
    let renamed = app.put(&format!("/v1/views/{view}/paths/ui"), &json!({"newName": "screens"}));
    assert_eq!(renamed.assert_status(200), &json!({"path": "screens"}));
    assert_eq!(
        tree(&app, &view, None),
        [node("", "menu"), node("", "audio"), node("", "screens"), node("screens", "popups")]
    );
    assert!(placed(&app, &view).contains(&("ok".into(), "screens/popups".into())));

    // Refused, changing nothing.
    let before = (tree(&app, &view, None), placed(&app, &view));
    let refusals = [
        (json!({"names": ["screens"], "toParentPath": "screens/popups"}), 400, "badRequest"),
        (json!({"names": ["menu"], "toParentPath": "nope"}), 404, "pathIsNotFound"),
        (json!({"names": ["nope"]}), 404, "pathIsNotFound"),
        (
            json!({"names": ["menu"], "moveBefore": "audio", "moveAfter": "audio"}),
            400,
            "badRequest",
        ),
        (json!({"names": ["menu"], "moveBefore": "menu"}), 400, "badRequest"),
        (json!({"names": []}), 400, "badRequest"),
    ];
    for (body, status, code) in refusals {
        app.post(&move_path, &body).assert_error(status, code);
    }
    app.post(
        &format!("/v1/views/{view}/paths"),
        &json!({"parentPath": "screens", "paths": ["menu"]}),
    )
    .assert_status(200);
    let clash = json!({"names": ["menu"], "toParentPath": "screens"});
    app.post(&move_path, &clash).assert_error(409, "idAlreadyExists");
    app.put(&format!("/v1/views/{view}/paths/audio"), &json!({"newName": "menu"}))
        .assert_error(409, "idAlreadyExists");
    app.put(&format!("/v1/views/{view}/paths/nope"), &json!({"newName": "x"}))
        .assert_error(404, "pathIsNotFound");
    app.put(&format!("/v1/views/{view}/paths/audio"), &json!({"newName": "a/b"}))
        .assert_error(400, "badRequest");
    let mut now = tree(&app, &view, None);
    now.retain(|n| *n != node("screens", "menu"));
    assert_eq!((now, placed(&app, &view)), before);

    let app = app.restart();
    assert!(placed(&app, &view).contains(&("ok".into(), "screens/popups".into())));
}

#[test]
fn paths_move_records_identified_by_path_and_id() {
    let app = spawn_app();
    let view = grid(&app, "pathTagRecordId");
    app.add_records(&view, json!([{"id": "save", "path": "audio"}]));
    let move_path = format!("/v1/views/{view}/paths/move");
    let res = app.post(
        &move_path,
        &json!({"names": ["menu"], "fromParentPath": "ui", "toParentPath": "audio"}),
    );
    res.assert_status(200);
    let records = placed(&app, &view);
    assert!(records.contains(&("save".into(), "audio/menu".into())), "{records:?}");
    assert!(records.contains(&("save".into(), "audio".into())), "{records:?}");
    let one = app.get(&format!("/v1/views/{view}/records/save?path=audio%2Fmenu"));
    assert_eq!(one.assert_status(200)["cells"][0]["value"], json!("Save"));
}

#[test]
fn path_changes_need_write_access_to_the_view() {
    let app = spawn_app();
    let view = grid(&app, "recordId");
    let reader = app.create_key(&["read"], json!({"all": true}));
    let before: Value = json!(tree(&app, &view, None));
    app.post_as(&reader, &format!("/v1/views/{view}/paths"), &json!({"paths": ["x"]}))
        .assert_error(403, "accessDenied");
    let body = json!({"names": ["ui"], "toParentPath": "audio"});
    app.post_as(&reader, &format!("/v1/views/{view}/paths/move"), &body)
        .assert_error(403, "accessDenied");
    app.get_as(&reader, &format!("/v1/views/{view}/paths/tree")).assert_status(200);
    assert_eq!(json!(tree(&app, &view, None)), before);
}
