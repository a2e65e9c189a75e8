//! `/v1/databases`: list (all or by project) and get; create, rename and delete for owner keys.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

fn default_project(app: &TestApp) -> Value {
    app.get("/v1/projects").body[0]["id"].clone()
}

fn create_db(app: &TestApp, project: &Value, name: &str) -> String {
    let res = app.post(&format!("/v1/databases?projectId={project}"), &json!({"name": name}));
    res.assert_status(200)["id"].as_str().expect("db id").to_owned()
}

#[test]
fn list_and_get_databases() {
    let app = spawn_app();
    let project = default_project(&app);
    let res = app.get("/v1/databases");
    let list = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["name"], json!("Default database"));
    assert_eq!(list[0]["projectId"], json!(project));
    let id = list[0]["id"].as_str().expect("id");
    assert_eq!(id.len(), 14);
    let one = app.get(&format!("/v1/databases/{id}"));
    assert_eq!(one.assert_status(200), &list[0]);
    assert_eq!(one.header("content-type"), Some("application/json"));
    app.get("/v1/databases/nosuchdatabase").assert_error(404, "databaseIsNotFound");
}

#[test]
fn list_by_project() {
    let app = spawn_app();
    let default = default_project(&app);
    let other = app.post("/v1/projects", &json!({"name": "Other"})).body["id"].clone();
    let db = create_db(&app, &other, "Strings");
    let in_other = app.get(&format!("/v1/databases?projectId={other}"));
    let in_other = in_other.assert_status(200).as_array().expect("list").clone();
    assert_eq!(in_other.len(), 1);
    assert_eq!(in_other[0]["id"], json!(db));
    assert_eq!(in_other[0]["name"], json!("Strings"));
    let in_default = app.get(&format!("/v1/databases?projectId={default}"));
    assert_eq!(in_default.assert_status(200).as_array().map(Vec::len), Some(1));
    assert_ne!(in_default.body[0]["id"], json!(db));
    assert_eq!(app.get("/v1/databases").body.as_array().map(Vec::len), Some(2));
    app.get("/v1/databases?projectId=999999").assert_error(404, "projectIsNotFound");
}

#[test]
fn create_rename_and_delete_a_database() {
    let app = spawn_app();
    let project = default_project(&app);
    let res = app.post(&format!("/v1/databases?projectId={project}"), &json!({"name": "Games"}));
    let created = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(created["name"], json!("Games"));
    assert_eq!(created["projectId"], json!(project));
    let id = created["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/databases/{id}");
    assert_eq!(app.snapshot(&path), created);

    assert_eq!(app.put(&path, &json!({"name": "Apps"})).assert_status(200)["name"], json!("Apps"));
    assert_eq!(
        app.patch(&path, &json!({"name": "Tools"})).assert_status(200)["name"],
        json!("Tools")
    );
    assert_eq!(app.snapshot(&path)["name"], json!("Tools"));

    let grid = app.post(&format!("/v1/grids?dbId={id}"), &json!({"name": "g"}));
    let grid = grid.assert_status(201)["id"].as_str().expect("grid id").to_owned();
    let del = app.delete(&path);
    del.assert_status(204);
    assert_eq!(del.text, "");
    app.get(&path).assert_error(404, "databaseIsNotFound");
    app.get(&format!("/v1/grids/{grid}")).assert_error(404, "gridIsNotFound");
    app.delete(&path).assert_error(404, "databaseIsNotFound");
    assert_eq!(app.get("/v1/databases").body.as_array().map(Vec::len), Some(1));
}

#[test]
fn bad_database_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let project = default_project(&app);
    let before = app.snapshot("/v1/databases");
    let id = before[0]["id"].as_str().expect("id").to_owned();
    app.post("/v1/databases", &json!({"name": "x"})).assert_error(400, "requestParameterMissing");
    app.post("/v1/databases?projectId=", &json!({"name": "x"}))
        .assert_error(400, "requestParameterMissing");
    app.post("/v1/databases?projectId=999999", &json!({"name": "x"}))
        .assert_error(404, "projectIsNotFound");
    let create = format!("/v1/databases?projectId={project}");
    app.post(&create, &json!({})).assert_error(400, "badRequest");
    app.post(&create, &json!({"name": ""})).assert_error(400, "badRequest");
    app.raw(Method::POST, &create, "application/json", b"{name:1}".to_vec())
        .assert_error(400, "badRequest");
    app.put(&format!("/v1/databases/{id}"), &json!({"name": " "})).assert_error(400, "badRequest");
    app.put("/v1/databases/nosuchdatabase", &json!({"name": "x"}))
        .assert_error(404, "databaseIsNotFound");
    app.delete("/v1/databases/nosuchdatabase").assert_error(404, "databaseIsNotFound");
    app.assert_unchanged("/v1/databases", &before);
}

#[test]
fn database_writes_need_an_owner_key_and_reads_a_valid_key() {
    let app = spawn_app();
    let project = default_project(&app);
    let before = app.snapshot("/v1/databases");
    let id = before[0]["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/databases/{id}");
    let manage = app.create_key(&["manage"], json!({"all": true}));
    assert_eq!(app.get_as(&manage, "/v1/databases").assert_status(200), &before);
    app.get_as(&manage, &path).assert_status(200);
    app.post_as(&manage, &format!("/v1/databases?projectId={project}"), &json!({"name": "x"}))
        .assert_error(403, "accessDenied");
    app.put_as(&manage, &path, &json!({"name": "x"})).assert_error(403, "accessDenied");
    app.delete_as(&manage, &path).assert_error(403, "accessDenied");
    for key in [None, Some("wrong-key")] {
        app.call(Method::GET, "/v1/databases", key, None).assert_error(401, "unauthorized");
        app.call(Method::GET, &path, key, None).assert_error(401, "unauthorized");
        app.call(Method::DELETE, &path, key, None).assert_error(401, "unauthorized");
    }
    app.assert_unchanged("/v1/databases", &before);
}

#[test]
fn another_company_cannot_see_or_touch_our_databases() {
    let app = spawn_app();
    let project = default_project(&app);
    let before = app.snapshot("/v1/databases");
    let id = before[0]["id"].as_str().expect("id").to_owned();
    let (other, _, their_db) = app.create_company("enterprise");
    let theirs = app.get_as(&other, "/v1/databases");
    let theirs = theirs.assert_status(200).as_array().expect("list").clone();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["id"], json!(their_db));
    let path = format!("/v1/databases/{id}");
    app.get_as(&other, &path).assert_error(404, "databaseIsNotFound");
    app.put_as(&other, &path, &json!({"name": "x"})).assert_error(404, "databaseIsNotFound");
    app.delete_as(&other, &path).assert_error(404, "databaseIsNotFound");
    app.get_as(&other, &format!("/v1/databases?projectId={project}"))
        .assert_error(404, "projectIsNotFound");
    app.post_as(&other, &format!("/v1/databases?projectId={project}"), &json!({"name": "x"}))
        .assert_error(404, "projectIsNotFound");
    app.get(&format!("/v1/databases/{their_db}")).assert_error(404, "databaseIsNotFound");
    app.assert_unchanged("/v1/databases", &before);
}

#[test]
fn a_key_limited_to_one_database_lists_only_it() {
    let app = spawn_app();
    let project = default_project(&app);
    let second = create_db(&app, &project, "Second");
    let key = app.create_key(&["read"], json!({"databases": [second]}));
    let list = app.get_as(&key, "/v1/databases");
    let list = list.assert_status(200).as_array().expect("list").clone();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], json!(second));
    let first = app.default_db();
    app.get_as(&key, &format!("/v1/databases/{first}")).assert_error(403, "accessDenied");
    app.get_as(&key, &format!("/v1/databases/{second}")).assert_status(200);
}
