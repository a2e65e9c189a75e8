//! The rest of the hosted OpenAPI's surface: databases' `description` and client-chosen `id`,
//! branches' `description` and `isMaster`, grids' client-chosen `id`, template grids. Each with
//! its bad cases and, for what is persisted, a restart.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

fn project(app: &TestApp) -> Value {
    app.get("/v1/projects").body[0]["id"].clone()
}

#[test]
fn a_database_keeps_its_description_and_chosen_id_across_a_restart() {
    let app = spawn_app();
    let project = project(&app);
    let path = format!("/v1/databases?projectId={project}");
    let body = json!({"name": "Games", "description": "All the games", "id": "games_db"});
    let created = app.post(&path, &body).assert_status(200).clone();
    assert_eq!(created["id"], json!("games_db"));
    assert_eq!(created["description"], json!("All the games"));
    // No description: an empty one.
    let plain = app.post(&path, &json!({"name": "Plain"})).assert_status(200).clone();
    assert_eq!(plain["description"], json!(""));
    // PUT renames; its description replaces the old one only when given.
    let renamed = app.put("/v1/databases/games_db", &json!({"name": "Games 2"}));
    assert_eq!(renamed.assert_status(200)["description"], json!("All the games"));
    let described =
        app.put("/v1/databases/games_db", &json!({"name": "Games 2", "description": "New"}));
    assert_eq!(described.assert_status(200)["description"], json!("New"));
    let before = app.snapshot("/v1/databases");
    let app = app.restart();
    app.assert_unchanged("/v1/databases", &before);
    let one = app.get("/v1/databases/games_db");
    assert_eq!(one.assert_status(200)["description"], json!("New"));
    assert_eq!(one.body["name"], json!("Games 2"));
}

#[test]
fn bad_database_ids_and_fields_are_refused_and_change_nothing() {
    let app = spawn_app();
    let project = project(&app);
    let path = format!("/v1/databases?projectId={project}");
    app.post(&path, &json!({"name": "A", "id": "taken"})).assert_status(200);
    let before = app.snapshot("/v1/databases");
    for bad in ["has space", "dash-ed", "", "é", &"x".repeat(65)] {
        let res = app.post(&path, &json!({"name": "B", "id": bad}));
        res.assert_error(400, "badRequest");
        assert!(res.body["message"].as_str().unwrap_or("").contains("id"), "{}", res.body);
    }
    app.post(&path, &json!({"name": "B", "id": "taken"})).assert_error(409, "idAlreadyExists");
    let guid = app.post(&path, &json!({"name": "B", "enableGuidRecord": true}));
    guid.assert_error(400, "badRequest");
    assert!(guid.body["message"].as_str().unwrap_or("").contains("enableGuidRecord"));
    let long = "d".repeat(10_001);
    app.post(&path, &json!({"name": "B", "description": long})).assert_error(400, "badRequest");
    app.put("/v1/databases/taken", &json!({"name": "A", "description": long}))
        .assert_error(400, "badRequest");
    app.put("/v1/databases/nosuch", &json!({"name": "A", "description": "x"}))
        .assert_error(404, "databaseIsNotFound");
    app.assert_unchanged("/v1/databases", &before);
    // enableGuidRecord false is what gridd does anyway.
    app.post(&path, &json!({"name": "C", "enableGuidRecord": false})).assert_status(200);
}

#[test]
fn branches_show_description_and_is_master() {
    let app = spawn_app();
    let (grid, _) = app.create_grid("g");
    let body = json!({"name": "dev", "description": "Work in progress"});
    let res = app.post(&format!("/v1/branches?gridId={grid}"), &body);
    let branch = res.assert_status(201).clone();
    assert_eq!(branch["description"], json!("Work in progress"));
    assert_eq!(branch["isMaster"], json!(false));
    let id = branch["id"].as_str().expect("id").to_owned();
    let master = app.get(&format!("/v1/branches/{grid}"));
    assert_eq!(master.assert_status(200)["isMaster"], json!(true));
    assert_eq!(master.body["description"], json!(""));
    let list = app.get(&format!("/v1/branches?gridId={grid}"));
    let flags: Vec<&Value> =
        list.assert_status(200).as_array().expect("list").iter().map(|b| &b["isMaster"]).collect();
    assert_eq!(flags, vec![&json!(true), &json!(false)]);
    let app = app.restart();
    let again = app.get(&format!("/v1/branches/{id}"));
    assert_eq!(again.assert_status(200)["description"], json!("Work in progress"));
    assert_eq!(again.body["isMaster"], json!(false));
}

#[test]
fn bad_branch_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    let (_, other_view) = app.create_grid("other");
    let list = format!("/v1/branches?gridId={grid}");
    let before = app.snapshot(&list);
    let long = "d".repeat(10_001);
    let cases = [
        (json!({"name": "b", "description": long}), 400, "badRequest"),
        (json!({"name": "b", "customProperties": {"k": 1}}), 400, "badRequest"),
        (json!({"name": "b", "viewId": other_view}), 404, "viewIsNotFound"),
        (json!({"name": "b", "viewId": "nosuchview"}), 404, "viewIsNotFound"),
        (json!({"description": "no name"}), 400, "badRequest"),
    ];
    for (body, status, code) in cases {
        app.post(&list, &body).assert_error(status, code);
    }
    app.assert_unchanged(&list, &before);
    // The source's own view and empty extras are fine.
    let ok = json!({"name": "b", "viewId": view, "customProperties": {},
        "inheritGroupAccess": true, "inheritAutomation": false});
    app.post(&list, &ok).assert_status(201);
}

#[test]
fn a_grid_keeps_its_chosen_id_across_a_restart() {
    let app = spawn_app();
    let db = app.default_db();
    let res = app.post(&format!("/v1/grids?dbId={db}"), &json!({"name": "g", "id": "my_grid"}));
    assert_eq!(res.assert_status(201)["id"], json!("my_grid"));
    let view = res.body["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.create_column(&view, json!({"id": "a", "name": "A", "type": "singleLine"}));
    app.post(&format!("/v1/views/{view}/records"), &json!([{"id": "r1", "cells": []}]))
        .assert_status(201);
    let app = app.restart();
    let grid = app.get("/v1/grids/my_grid");
    assert_eq!(grid.assert_status(200)["id"], json!("my_grid"));
    assert_eq!(
        app.get(&format!("/v1/views/{view}/records")).body.as_array().map(Vec::len),
        Some(1)
    );
    let master = app.get("/v1/branches/my_grid");
    assert_eq!(master.assert_status(200)["isMaster"], json!(true));
}

#[test]
fn bad_grid_ids_are_refused_and_change_nothing() {
    let app = spawn_app();
    let db = app.default_db();
    let path = format!("/v1/grids?dbId={db}");
    let (grid, _) = app.create_grid("g");
    let branch = app.post(&format!("/v1/branches?gridId={grid}"), &json!({"name": "dev"}));
    let branch = branch.assert_status(201)["id"].as_str().expect("id").to_owned();
    let before = app.snapshot(&format!("/v1/grids?dbId={db}"));
    for bad in ["a b", "a/b", "", "~x", &"g".repeat(65)] {
        let res = app.post(&path, &json!({"name": "x", "id": bad}));
        res.assert_error(400, "badRequest");
    }
    // A grid's id, and a branch's (a master branch has its grid's id), are taken.
    app.post(&path, &json!({"name": "x", "id": grid})).assert_error(409, "idAlreadyExists");
    app.post(&path, &json!({"name": "x", "id": branch})).assert_error(409, "idAlreadyExists");
    app.assert_unchanged(&format!("/v1/grids?dbId={db}"), &before);
}

/// `GET /v1/template-grids`: the grids whose metadata says `"template": "true"`, as the key
/// sees them; a new grid can be made from one (`templateGridId`).
#[test]
fn template_grids_are_the_grids_marked_as_templates() {
    let app = spawn_app();
    let db = app.default_db();
    let made = |name: &str, metadata: Value| {
        let res =
            app.post(&format!("/v1/grids?dbId={db}"), &json!({"name": name, "metadata": metadata}));
        res.assert_status(201)["id"].as_str().expect("grid id").to_owned()
    };
    let template = made("Strings template", json!({"template": "true"}));
    made("Not a template", json!({"template": "no"}));
    made("Plain", json!({}));
    let listed = app.get("/v1/template-grids");
    let names: Vec<&str> = listed
        .assert_status(200)
        .as_array()
        .expect("a list")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["Strings template"]);
    assert_eq!(listed.body[0]["id"], json!(template));
    let from = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "From it", "templateGridId": template}),
    );
    from.assert_status(201);
    let (stranger, _, _) = app.create_company("enterprise");
    let theirs = app.get_as(&stranger, "/v1/template-grids");
    assert_eq!(theirs.assert_status(200), &json!([]), "another company's templates are not listed");
}

/// `POST /v1/databases/<id>/duplicate`: a new database with a copy of every grid (schema,
/// views, records with statuses); the source is untouched; bad requests create nothing.
#[test]
fn a_database_duplicate_copies_its_grids_and_records() {
    let app = spawn_app();
    let db = app.default_db();
    let (grid, view) = app.create_grid("Strings");
    let language = |id: &str| json!({"id": id, "name": id, "type": "language", "languageCode": id});
    app.create_column(&view, language("enUS"));
    app.create_column(&view, language("deDE"));
    app.post(
        &format!("/v1/views/{view}/dependencies"),
        &json!({"sourceColumnId": "enUS", "targetColumnId": "deDE"}),
    )
    .assert_status(201);
    app.post(
        "/v1/views",
        &json!({"name": "Translators", "gridId": grid, "columns": [{"id": "deDE"}]}),
    )
    .assert_status(200);
    app.add_records(
        &view,
        json!([{"id": "k1", "cells": [{"columnId": "enUS", "value": "Start"},
                                      {"columnId": "deDE", "value": "Starten", "dependencyStatus": "upToDate"}]},
               {"id": "k2", "cells": [{"columnId": "enUS", "value": "日本語"}]}]),
    );
    let project = project(&app);
    let before = app.records(&view);

    let res = app.post(
        &format!("/v1/databases/{db}/duplicate?projectId={project}"),
        &json!({"name": "Copy", "description": "release 2"}),
    );
    let copy = res.assert_status(200).clone();
    assert_eq!(copy["name"], json!("Copy"));
    assert_eq!(copy["description"], json!("release 2"));
    let copy_db = copy["id"].as_str().expect("id");
    assert_ne!(copy_db, db);
    let grids = app.snapshot(&format!("/v1/grids?dbId={copy_db}"));
    let grids = grids.as_array().expect("a list");
    assert_eq!(grids.len(), 1);
    assert_eq!(grids[0]["name"], json!("Strings"));
    let copy_view = grids[0]["defaultAccessViewId"].as_str().expect("view").to_owned();
    let strip = |records: Vec<Value>| -> Vec<Value> {
        records.into_iter().map(|r| json!({"id": r["id"], "cells": r["cells"]})).collect()
    };
    assert_eq!(strip(app.records(&copy_view)), strip(before.clone()));
    let views = app.snapshot(&format!("/v1/views?gridId={}", grids[0]["id"].as_str().expect("id")));
    assert_eq!(views.as_array().map(Vec::len), Some(2));
    // The copy is independent of the source.
    app.add_records(&copy_view, json!([{"id": "k3"}]));
    assert_eq!(app.records(&view), before);

    let dbs_before = app.snapshot(&format!("/v1/databases?projectId={project}"));
    app.post(&format!("/v1/databases/{db}/duplicate"), &json!({"name": "x"}))
        .assert_error(400, "requestParameterMissing");
    let res = app.post(
        &format!("/v1/databases/nosuchdb0001/duplicate?projectId={project}"),
        &json!({"name": "x"}),
    );
    assert_eq!(res.status, 404, "{}", res.text);
    app.post(
        &format!("/v1/databases/{db}/duplicate?projectId={project}"),
        &json!({"name": "x", "enableGuidRecord": true}),
    )
    .assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/databases?projectId={project}"), &dbs_before);
}
