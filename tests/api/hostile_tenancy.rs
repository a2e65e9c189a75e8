//! Hostile tenancy (issue 16): keys stay within the scope of the key that made them, reference
//! columns and files answer only through what the caller may read, tasks are checked like their
//! grid and view, and deleted data is gone. Every refused request is checked for its status,
//! its code and that nothing changed.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp, OWNER_KEY};

/// A second project in the default company (with a database): (project id, database id).
fn second_project(app: &TestApp) -> (i64, String) {
    let project = app.post("/v1/projects", &json!({"name": "second"}));
    let project = project.assert_status(200)["id"].as_i64().expect("project id");
    let db = app.post(&format!("/v1/databases?projectId={project}"), &json!({"name": "db2"}));
    let db = db.assert_status(200)["id"].as_str().expect("database id").to_owned();
    (project, db)
}

fn default_project(app: &TestApp) -> i64 {
    app.snapshot("/v1/projects")[0]["id"].as_i64().expect("project id")
}

/// An owner key limited to the default project: (secret, key id).
fn limited_owner(app: &TestApp) -> (String, String) {
    let project = default_project(app);
    let res = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "limited", "privileges": ["owner"], "access": {"projects": [project]}}),
    );
    let body = res.assert_status(201);
    (body["key"].as_str().expect("secret").to_owned(), body["id"].as_str().expect("id").to_owned())
}

fn key_count(app: &TestApp) -> usize {
    app.snapshot("/admin/v1/api-keys").as_array().expect("keys").len()
}

#[test]
fn a_limited_owner_key_cannot_mint_wider_keys() {
    let app = spawn_app();
    let (_, other_db) = second_project(&app);
    let (other_project, _) = second_project(&app);
    let (limited, _) = limited_owner(&app);
    let project = default_project(&app);
    let before = app.snapshot("/admin/v1/api-keys");
    for access in [
        json!({"all": true}),
        json!({"projects": [other_project]}),
        json!({"projects": [project, other_project]}),
        json!({"databases": [other_db]}),
        json!({"grids": ["unknowngrid123"]}),
    ] {
        let res = app.post_as(
            &limited,
            "/admin/v1/api-keys",
            &json!({"name": "wide", "privileges": ["owner"], "access": access}),
        );
        res.assert_error(403, "accessDenied");
    }
    // A key without an access object asks for all access.
    let res =
        app.post_as(&limited, "/admin/v1/api-keys", &json!({"name": "x", "privileges": ["read"]}));
    res.assert_error(403, "accessDenied");
    app.assert_unchanged("/admin/v1/api-keys", &before);
    // Within its project it may.
    let db = app.default_db();
    for access in [json!({"projects": [project]}), json!({"databases": [db]})] {
        let res = app.post_as(
            &limited,
            "/admin/v1/api-keys",
            &json!({"name": "narrow", "privileges": ["read"], "access": access}),
        );
        res.assert_status(201);
    }
}

#[test]
fn a_key_cannot_mint_higher_privileges_or_keys_for_views_out_of_reach() {
    let app = spawn_app();
    let (_, other_db) = second_project(&app);
    let grid = app.post(&format!("/v1/grids?dbId={other_db}"), &json!({"name": "far"}));
    let far_view = grid.assert_status(201)["defaultAccessViewId"].as_str().expect("v").to_owned();
    let (limited, _) = limited_owner(&app);
    let before = key_count(&app);
    let res = app.post_as(
        &limited,
        "/admin/v1/api-keys",
        &json!({"name": "view", "kind": "view", "viewId": far_view}),
    );
    res.assert_error(403, "accessDenied");
    assert_eq!(key_count(&app), before);
    // A manage key is refused key management at all; an owner key of all access may do both.
    let manage = app.create_key(&["manage"], json!({"all": true}));
    let res = app.post_as(
        &manage,
        "/admin/v1/api-keys",
        &json!({"name": "up", "privileges": ["owner"], "access": {"all": true}}),
    );
    res.assert_error(403, "accessDenied");
    assert_eq!(key_count(&app), before + 1);
    let res = app
        .post("/admin/v1/api-keys", &json!({"name": "view", "kind": "view", "viewId": far_view}));
    res.assert_status(201);
}

#[test]
fn a_limited_owner_key_lists_and_revokes_only_keys_within_its_access() {
    let app = spawn_app();
    let (other_project, _) = second_project(&app);
    let (limited, limited_id) = limited_owner(&app);
    let project = default_project(&app);
    let far = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "far", "privileges": ["read"], "access": {"projects": [other_project]}}),
    );
    let far_id = far.assert_status(201)["id"].as_str().expect("id").to_owned();
    let near = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "near", "privileges": ["write"], "access": {"projects": [project]}}),
    );
    let near_id = near.assert_status(201)["id"].as_str().expect("id").to_owned();
    let listed = app.get_as(&limited, "/admin/v1/api-keys");
    let ids: Vec<&str> = listed
        .assert_status(200)
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["id"].as_str().expect("id"))
        .collect();
    assert!(ids.contains(&near_id.as_str()) && ids.contains(&limited_id.as_str()), "{ids:?}");
    assert!(!ids.contains(&far_id.as_str()), "a key beyond its access is listed: {ids:?}");
    assert_eq!(ids.len(), 2, "the all-access owner keys are not listed either: {ids:?}");

    let before = app.snapshot("/admin/v1/api-keys");
    app.delete_as(&limited, &format!("/admin/v1/api-keys/{far_id}"))
        .assert_error(403, "accessDenied");
    app.assert_unchanged("/admin/v1/api-keys", &before);
    app.delete_as(&limited, &format!("/admin/v1/api-keys/{near_id}")).assert_status(204);
}

#[test]
fn a_tenant_key_cannot_revoke_the_admin_key() {
    let app = spawn_app();
    let keys = app.snapshot("/admin/v1/api-keys");
    let admin_id = keys[0]["id"].as_str().expect("admin key id").to_owned();
    // Another owner key of the default company, with all access.
    let owner = app.create_key(&["owner"], json!({"all": true}));
    let before = app.snapshot("/admin/v1/api-keys");
    app.delete_as(&owner, &format!("/admin/v1/api-keys/{admin_id}"))
        .assert_error(403, "accessDenied");
    app.assert_unchanged("/admin/v1/api-keys", &before);
    // Another company's owner key does not even see it.
    let (tenant, _, _) = app.create_company("enterprise");
    app.delete_as(&tenant, &format!("/admin/v1/api-keys/{admin_id}"))
        .assert_error(404, "keyIsNotFound");
    app.get("/v1/projects").assert_status(200);
}

#[test]
fn a_new_api_key_at_restart_joins_the_default_company() {
    let mut app = spawn_app();
    let default_projects = app.snapshot("/v1/projects");
    // Companies whose ids sort before and after the default company's.
    for _ in 0..6 {
        app.create_company("free");
    }
    app.key = "a-new-operator-key-9876543210".to_owned();
    let mut app = app.restart();
    assert_eq!(app.snapshot("/v1/projects"), default_projects);
    let res = app.post("/admin/v1/companies", &json!({"name": "more", "tier": "free"}));
    res.assert_status(201);
    app.key = OWNER_KEY.to_owned();
    let app = app.restart();
    assert_eq!(app.snapshot("/v1/projects"), default_projects);
    let keys: Value = app.snapshot("/admin/v1/api-keys");
    assert_eq!(keys.as_array().expect("keys").len(), 2, "{keys}");
}

// ----- references -----

/// A grid in `db` with a singleLine `secret` column and record `s1` holding "classified":
/// (grid id, default view id).
fn secret_grid(app: &TestApp, db: &str) -> (String, String) {
    let res = app.post(&format!("/v1/grids?dbId={db}"), &json!({"name": "vault"}));
    let body = res.assert_status(201);
    let grid = body["id"].as_str().expect("grid id").to_owned();
    let view = body["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.create_column(&view, json!({"id": "secret", "name": "Secret", "type": "singleLine"}));
    app.add_records(
        &view,
        json!([{"id": "s1", "cells": [{"columnId": "secret", "value": "classified"}]}]),
    );
    (grid, view)
}

fn reference_to(id: &str, grid: &str) -> Value {
    json!({"id": id, "name": id, "type": "reference",
           "reference": {"gridId": grid, "columnId": "secret", "type": "row"}})
}

/// A key with `privileges` limited to grid `grid`.
fn grid_key(app: &TestApp, privileges: &[&str], grid: &str) -> String {
    app.create_key(privileges, json!({"grids": [grid]}))
}

#[test]
fn a_key_limited_to_one_grid_cannot_reference_another() {
    let app = spawn_app();
    let (_, other_db) = second_project(&app);
    let (vault, _) = secret_grid(&app, &other_db);
    let (mine, view) = app.create_grid("mine");
    let key = grid_key(&app, &["manage"], &mine);
    let columns = format!("/v1/views/{view}/columns");
    let before = app.snapshot(&format!("/v1/grids/{mine}"));
    let res = app.post_as(&key, &columns, &reference_to("peek", &vault));
    res.assert_error(403, "accessDenied");
    app.assert_unchanged(&format!("/v1/grids/{mine}"), &before);
    // Nor make a grid with such a column.
    let db = app.default_db();
    let res = app.post_as(
        &key,
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "sneaky", "columns": [reference_to("peek", &vault)]}),
    );
    assert!(matches!(res.status, 403), "{}", res.text);
    // The all-access owner may, and then the limited key cannot read it nor write into it.
    app.create_column(&view, reference_to("peek", &vault));
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "peek", "value": "s1"}]}]));
    let records = format!("/v1/views/{view}/records");
    let reader = grid_key(&app, &["write"], &mine);
    let res = app.get_as(&reader, &records);
    res.assert_error(403, "accessDenied");
    assert!(!res.text.contains("classified"));
    // A JSON export is refused before it starts, whatever record first holds such a cell
    // (here the 201st, past the export's first chunk), never cut short.
    let filler: Vec<Value> = (0..200).map(|i| json!({"id": format!("f{i:03}")})).collect();
    app.add_records(&view, Value::Array(filler));
    app.add_records(&view, json!([{"id": "r9", "cells": [{"columnId": "peek", "value": "s1"}]}]));
    app.delete_with(&records, &json!({"ids": ["r1"]}));
    let res = app.get_as(&reader, &format!("/v1/views/{view}/export?type=json"));
    res.assert_error(403, "accessDenied");
    assert!(!res.text.contains("classified"));
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "peek", "value": "s1"}]}]));
    app.delete_with(&records, &json!({"ids": ["r9"]}));
    let filler: Vec<Value> = (0..200).map(|i| json!(format!("f{i:03}"))).collect();
    app.delete_with(&records, &json!({"ids": filler}));
    let before = app.snapshot(&records);
    let res = app.post_as(
        &reader,
        &records,
        &json!([{"id": "r2", "cells": [{"columnId": "peek", "value": "s1"}]}]),
    );
    res.assert_error(403, "accessDenied");
    let res = app.patch_as(
        &reader,
        &records,
        &json!([{"id": "r1", "cells": [{"columnId": "peek", "value": "nosuch"}]}]),
    );
    res.assert_error(403, "accessDenied");
    app.assert_unchanged(&records, &before);
    // A write not touching the reference is answered without the referenced values.
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    let res = app.patch_as(
        &reader,
        &records,
        &json!([{"id": "r1", "cells": [{"columnId": "title", "value": "t"}]}]),
    );
    res.assert_status(200);
    assert!(!res.text.contains("classified"), "{}", res.text);
    // Leaving the reference column out reads fine.
    let res = app.get_as(&reader, &format!("{records}?columnIds=title"));
    res.assert_status(200);
    assert!(app.snapshot(&records).to_string().contains("classified"));
}

// ----- tasks -----

fn wait_task(app: &TestApp, id: &str) -> Value {
    for _ in 0..200 {
        let task = app.snapshot(&format!("/v1/tasks/{id}"));
        if task["status"] != json!("running") {
            return task;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("task {id} did not finish");
}

#[test]
fn a_task_is_seen_only_by_keys_that_reach_its_grid_and_view() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("exported");
    let (other, other_view) = app.create_grid("other");
    let now = chrono::Utc::now();
    let day = chrono::Duration::days(1);
    let body = json!({"fromTime": (now - day).to_rfc3339(), "toTime": (now + day).to_rfc3339()});
    let res = app.post(&format!("/v1/views/{view}/record-histories/export"), &body);
    let id = res.assert_status(202)["id"].as_str().expect("task id").to_owned();
    let task = wait_task(&app, &id);
    let path = format!("/v1/tasks/{id}");
    let outsider = grid_key(&app, &["manage"], &other);
    app.get_as(&outsider, &path).assert_error(404, "taskIsNotFound");
    let other_view_key = app.create_view_key(&other_view);
    app.get_as(&other_view_key, &path).assert_error(404, "taskIsNotFound");
    let (tenant, _, _) = app.create_company("enterprise");
    app.get_as(&tenant, &path).assert_error(404, "taskIsNotFound");
    let insider = grid_key(&app, &["read"], &grid);
    assert_eq!(app.get_as(&insider, &path).assert_status(200), &task);
    let view_key = app.create_view_key(&view);
    assert_eq!(app.get_as(&view_key, &path).assert_status(200), &task);
    assert_eq!(app.snapshot(&path), task);
}

// ----- files -----

#[test]
fn a_view_key_cannot_fetch_files_of_a_column_its_view_hides() {
    let app = spawn_app();
    let view = crate::files::grid(&app);
    let res = crate::files::upload(&app, &view, "menu.start", "a.png", b"hidden bytes");
    let id = res.assert_status(201)["id"].as_str().expect("file id").to_owned();
    let grid = app.snapshot(&format!("/v1/views/{view}"))["gridId"].as_str().expect("g").to_owned();
    let res = app.post(
        "/v1/views",
        &json!({"name": "text only", "gridId": grid, "columns": [{"id": "en"}]}),
    );
    let narrow = res.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let key = app.create_view_key(&narrow);
    let res = app.get_as(&key, &format!("/v1/views/{narrow}/files/{id}"));
    res.assert_error(404, "fileIsNotFound");
    assert!(!res.text.contains("hidden bytes"));
    let before = app.snapshot(&format!("/v1/views/{view}/records"));
    let res = app.call(
        reqwest::Method::DELETE,
        &format!("/v1/views/{narrow}/files?recordId=menu.start&columnId=shots"),
        Some(&key),
        Some(&json!({"ids": [id]})),
    );
    assert!(matches!(res.status, 400 | 403 | 404), "{}", res.text);
    app.assert_unchanged(&format!("/v1/views/{view}/records"), &before);
    // Through the view that shows the column it is served.
    let res = app.get(&format!("/v1/views/{view}/files/{id}"));
    assert_eq!(res.assert_status(200), &Value::Null);
    assert_eq!(res.bytes, b"hidden bytes".to_vec());
}

#[test]
fn a_file_taken_out_of_its_cell_is_served_only_where_a_branch_still_holds_it() {
    let app = spawn_app();
    let view = crate::files::grid(&app);
    let res = crate::files::upload(&app, &view, "menu.start", "a.png", b"branch bytes");
    let id = res.assert_status(201)["id"].as_str().expect("file id").to_owned();
    let grid = app.snapshot(&format!("/v1/views/{view}"))["gridId"].as_str().expect("g").to_owned();
    let branch = crate::branches::create_branch(&app, &grid, "copy");
    let (_, branch_view) = crate::branches::branch_ids(&branch);
    let path = format!("/v1/views/{view}/files?recordId=menu.start&columnId=shots");
    app.delete_with(&path, &json!({"ids": [id]})).assert_status(204);
    app.get(&format!("/v1/views/{view}/files/{id}")).assert_error(404, "fileIsNotFound");
    let res = app.get(&format!("/v1/views/{branch_view}/files/{id}"));
    assert_eq!(res.assert_status(200), &Value::Null);
    assert_eq!(res.bytes, b"branch bytes".to_vec());
}

// ----- deleted means deleted -----

fn file_names(app: &TestApp) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(app.data_dir.join("files"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_restart_sweeps_partial_uploads_import_temps_and_orphaned_bytes() {
    let app = spawn_app();
    let view = crate::files::grid(&app);
    let res = crate::files::upload(&app, &view, "menu.start", "a.png", b"live bytes");
    let id = res.assert_status(201)["id"].as_str().expect("file id").to_owned();
    let files = app.data_dir.join("files");
    let imports = app.data_dir.join("imports");
    std::fs::create_dir_all(&imports).expect("imports dir");
    let strays = [
        files.join("abandoned0000001.partial"),
        files.join("orphanedbytes01.png"),
        imports.join("halfimport00001.csv"),
    ];
    for stray in &strays {
        std::fs::write(stray, b"left by a crash").expect("stray written");
    }
    let app = app.restart();
    for stray in &strays {
        assert!(!stray.exists(), "{} survived the restart", stray.display());
    }
    assert_eq!(file_names(&app), vec![id.clone()]);
    let res = app.get(&format!("/v1/views/{view}/files/{id}"));
    res.assert_status(200);
    assert_eq!(res.bytes, b"live bytes".to_vec());
}

/// Waits (up to 10 s) until `done` holds.
pub(crate) fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn the_collector_removes_bytes_no_branch_or_history_holds() {
    let app = crate::helpers::spawn_app_with(|c| {
        c.file_gc_interval_secs = 1;
        c.file_gc_grace_secs = 0;
    });
    let view = crate::files::grid(&app);
    let kept = crate::files::upload(&app, &view, "menu.start", "kept.png", b"kept");
    let kept = kept.assert_status(201)["id"].as_str().expect("id").to_owned();
    // A file held only by a record's history stays; so does one in a cell.
    let gone = crate::files::upload(&app, &view, "menu.start", "gone.png", b"gone");
    let gone = gone.assert_status(201)["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/views/{view}/files?recordId=menu.start&columnId=shots");
    app.delete_with(&path, &json!({"ids": [gone]})).assert_status(204);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let names = file_names(&app);
    assert!(names.contains(&kept), "{names:?}");
    assert!(names.contains(&gone), "history still holds it: {names:?}");
    // A file uploaded on a branch goes once the branch (records and history) is deleted.
    let grid = app.snapshot(&format!("/v1/views/{view}"))["gridId"].as_str().expect("g").to_owned();
    let branch = crate::branches::create_branch(&app, &grid, "scratch");
    let (branch_id, branch_view) = crate::branches::branch_ids(&branch);
    let res = crate::files::upload(&app, &branch_view, "menu.start", "b.png", b"branch only");
    let on_branch = res.assert_status(201)["id"].as_str().expect("id").to_owned();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(file_names(&app).contains(&on_branch), "a held file was collected");
    app.delete(&format!("/v1/branches/{branch_id}")).assert_status(204);
    assert!(eventually(|| !file_names(&app).contains(&on_branch)), "{:?}", file_names(&app));
    let names = file_names(&app);
    assert!(names.contains(&kept) && names.contains(&gone), "{names:?}");
    app.get(&format!("/v1/views/{view}/files/{kept}")).assert_status(200);
}

#[test]
fn the_last_admin_key_cannot_be_revoked() {
    let app = spawn_app();
    let before = app.snapshot("/admin/v1/api-keys");
    // A fresh server holds only the bootstrap admin key.
    let keys = before.as_array().expect("keys");
    assert_eq!(keys.len(), 1, "{before}");
    let id = keys[0]["id"].as_str().expect("id").to_owned();
    let res = app.delete(&format!("/admin/v1/api-keys/{id}"));
    res.assert_error(400, "badRequest");
    app.assert_unchanged("/admin/v1/api-keys", &before);
    // The admin routes still answer to it.
    app.get("/admin/v1/api-keys").assert_status(200);
}
