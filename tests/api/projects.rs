//! `/v1/projects`: list and get for every company key, create, rename and delete for owner keys;
//! another company's projects are invisible (404).

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

fn project_ids(app: &TestApp, key: &str) -> Vec<Value> {
    let res = app.get_as(key, "/v1/projects");
    res.assert_status(200).as_array().expect("a list").iter().map(|p| p["id"].clone()).collect()
}

#[test]
fn list_shows_the_bootstrap_project() {
    let app = spawn_app();
    let res = app.get("/v1/projects");
    let body = res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    let projects = body.as_array().expect("a list");
    assert_eq!(projects.len(), 1);
    let project = &projects[0];
    assert_eq!(project["name"], json!("Default project"));
    assert_eq!(project["id"], json!(1), "an integer id, as the hosted service's");
    assert_eq!(project["companyId"], json!(1));
    assert!(project["description"].is_array(), "description is a list: {project}");
}

/// A project as listed, with `databases` added: what `GET /v1/projects/<id>` answers.
fn detail(project: &Value, databases: Value) -> Value {
    let mut detail = project.clone();
    detail["databases"] = databases;
    detail
}

#[test]
fn get_answers_the_project_and_404_for_unknown_ids() {
    let app = spawn_app();
    let listed = app.get("/v1/projects").body[0].clone();
    assert_eq!(listed["type"], json!("DEFAULT"));
    let id = listed["id"].clone();
    let res = app.get(&format!("/v1/projects/{id}"));
    let databases = app.snapshot("/v1/databases");
    assert_eq!(res.assert_status(200), &detail(&listed, databases));
    assert_eq!(res.header("content-type"), Some("application/json"));
    app.get("/v1/projects/999999").assert_error(404, "projectIsNotFound");
}

/// `GET /v1/projects/<id>` is the OpenAPI's ProjectDetail: the project with its databases as
/// `GET /v1/databases?projectId=` lists them. A project has the OpenAPI's `type`, chosen when
/// it is made (`DEFAULT` when not given) and kept through renames and restarts.
#[test]
fn a_project_is_read_with_its_databases_and_its_type() {
    let app = spawn_app();
    let res = app.post("/v1/projects", &json!({"name": "Localization", "type": "TMS"}));
    let created = res.assert_status(200).clone();
    assert_eq!(created["type"], json!("TMS"));
    let id = created["id"].clone();
    let path = format!("/v1/projects/{id}");
    assert_eq!(app.snapshot(&path), detail(&created, json!([])));
    for name in ["Strings", "Audio"] {
        app.post(&format!("/v1/databases?projectId={id}"), &json!({"name": name}))
            .assert_status(200);
    }
    let databases = app.snapshot(&format!("/v1/databases?projectId={id}"));
    assert_eq!(databases.as_array().map(Vec::len), Some(2));
    let read = app.snapshot(&path);
    assert_eq!(read, detail(&created, databases.clone()));
    assert_eq!(read["databases"][0]["name"], json!("Strings"));
    assert_eq!(read["databases"][0]["projectId"], id);

    // UpdateProject has no type: a project read and written back keeps its own.
    let mut written = read.clone();
    written["type"] = json!("INTERNAL");
    written["name"] = json!("L10n");
    let put = app.put(&path, &written);
    assert_eq!(put.assert_status(200)["type"], json!("TMS"));
    let internal = app.post("/v1/projects", &json!({"name": "Tools", "type": "INTERNAL"}));
    assert_eq!(internal.assert_status(200)["type"], json!("INTERNAL"));
    let null = app.post("/v1/projects", &json!({"name": "Other", "type": null}));
    assert_eq!(null.assert_status(200)["type"], json!("DEFAULT"));
    let listed = app.snapshot("/v1/projects");
    let types: Vec<&Value> = listed.as_array().expect("list").iter().map(|p| &p["type"]).collect();
    assert_eq!(types, [&json!("DEFAULT"), &json!("TMS"), &json!("INTERNAL"), &json!("DEFAULT")]);

    let app = app.restart();
    let after = app.snapshot(&path);
    assert_eq!(after["type"], json!("TMS"));
    assert_eq!(after["name"], json!("L10n"));
    assert_eq!(after["databases"], databases);
}

#[test]
fn a_project_type_not_in_the_openapi_is_refused_and_makes_nothing() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    for bad in [json!("tms"), json!("PERSONAL"), json!(""), json!(1), json!(["TMS"])] {
        let res = app.post("/v1/projects", &json!({"name": "x", "type": bad}));
        res.assert_error(400, "badRequest");
        let message = res.body["message"].as_str().expect("message");
        assert!(message.contains("DEFAULT, INTERNAL or TMS"), "{message}");
    }
    app.assert_unchanged("/v1/projects", &before);
}

#[test]
fn create_rename_and_delete_a_project() {
    let app = spawn_app();
    let res = app.post("/v1/projects", &json!({"name": "Games", "description": "All games"}));
    let created = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(created["name"], json!("Games"));
    assert_eq!(created["description"], json!(["All games"]));
    let id = created["id"].clone();
    assert_eq!(app.snapshot(&format!("/v1/projects/{id}")), detail(&created, json!([])));
    assert_eq!(project_ids(&app, &app.key).len(), 2);

    let put = app.put(&format!("/v1/projects/{id}"), &json!({"name": "Apps"}));
    assert_eq!(put.assert_status(200)["name"], json!("Apps"));
    assert_eq!(put.body["description"], json!(["All games"]), "PUT without description keeps it");
    // A project read may be written back as it reads: its description a list.
    let mut read = app.snapshot(&format!("/v1/projects/{id}"));
    read["description"] = json!(["All games", "and apps"]);
    let put = app.put(&format!("/v1/projects/{id}"), &read);
    assert_eq!(put.assert_status(200)["description"], json!(["All games\nand apps"]));
    let put = app.put(&format!("/v1/projects/{id}"), &json!({"name": "Apps", "description": 5}));
    put.assert_error(400, "badRequest");
    // A description is at most 10,000 characters, as a database's, in either form.
    let before = app.snapshot("/v1/projects");
    let long = "d".repeat(10_001);
    let halves = json!([&long[..5_000], &long[5_000..]]);
    for description in [json!(long), halves] {
        let body = json!({"name": "Apps", "description": description});
        app.put(&format!("/v1/projects/{id}"), &body).assert_error(400, "badRequest");
        app.post("/v1/projects", &body).assert_error(400, "badRequest");
    }
    app.assert_unchanged("/v1/projects", &before);
    let patch = app.patch(&format!("/v1/projects/{id}"), &json!({"name": "Tools"}));
    assert_eq!(patch.assert_status(200)["name"], json!("Tools"));
    assert_eq!(app.snapshot(&format!("/v1/projects/{id}"))["name"], json!("Tools"));

    let del = app.delete(&format!("/v1/projects/{id}"));
    del.assert_status(200);
    assert_eq!(del.text, "", "DELETE project answers an empty body");
    app.get(&format!("/v1/projects/{id}")).assert_error(404, "projectIsNotFound");
    assert_eq!(project_ids(&app, &app.key).len(), 1);
    app.delete(&format!("/v1/projects/{id}")).assert_error(404, "projectIsNotFound");
}

#[test]
fn deleting_a_project_deletes_its_databases_and_grids() {
    let app = spawn_app();
    let project = app.post("/v1/projects", &json!({"name": "Doomed"})).body["id"].clone();
    let db = app.post(&format!("/v1/databases?projectId={project}"), &json!({"name": "db"}));
    let db = db.assert_status(200)["id"].as_str().expect("id").to_owned();
    let grid = app.post(&format!("/v1/grids?dbId={db}"), &json!({"name": "g"}));
    let grid = grid.assert_status(201).clone();
    let (grid_id, view_id) = (grid["id"].as_str().expect("id"), &grid["defaultAccessViewId"]);
    app.delete(&format!("/v1/projects/{project}")).assert_status(200);
    app.get(&format!("/v1/databases/{db}")).assert_error(404, "databaseIsNotFound");
    app.get(&format!("/v1/grids/{grid_id}")).assert_error(404, "gridIsNotFound");
    let view_id = view_id.as_str().expect("view id");
    app.get(&format!("/v1/views/{view_id}")).assert_error(404, "viewIsNotFound");
}

#[test]
fn project_writes_need_an_owner_key() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    let id = before[0]["id"].clone();
    for privileges in [&["read"][..], &["read", "write"], &["manage"]] {
        let key = app.create_key(privileges, json!({"all": true}));
        assert_eq!(project_ids(&app, &key), vec![id.clone()], "{privileges:?} keys read");
        app.get_as(&key, &format!("/v1/projects/{id}")).assert_status(200);
        app.post_as(&key, "/v1/projects", &json!({"name": "x"})).assert_error(403, "accessDenied");
        app.put_as(&key, &format!("/v1/projects/{id}"), &json!({"name": "x"}))
            .assert_error(403, "accessDenied");
        app.patch_as(&key, &format!("/v1/projects/{id}"), &json!({"name": "x"}))
            .assert_error(403, "accessDenied");
        app.delete_as(&key, &format!("/v1/projects/{id}")).assert_error(403, "accessDenied");
        app.assert_unchanged("/v1/projects", &before);
    }
}

#[test]
fn project_calls_need_a_valid_key() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    let id = before[0]["id"].clone();
    for key in [None, Some("not-a-key"), Some("")] {
        app.call(Method::GET, "/v1/projects", key, None).assert_error(401, "unauthorized");
        app.call(Method::GET, &format!("/v1/projects/{id}"), key, None)
            .assert_error(401, "unauthorized");
        app.call(Method::POST, "/v1/projects", key, Some(&json!({"name": "x"})))
            .assert_error(401, "unauthorized");
        app.call(Method::DELETE, &format!("/v1/projects/{id}"), key, None)
            .assert_error(401, "unauthorized");
    }
    let bearer = app.request(Method::GET, "/v1/projects", None).bearer_auth(&app.key);
    app.send(bearer).assert_error(401, "unauthorized");
    app.assert_unchanged("/v1/projects", &before);
}

#[test]
fn bad_project_bodies_are_refused_and_change_nothing() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    let id = before[0]["id"].clone();
    app.post("/v1/projects", &json!({})).assert_error(400, "badRequest");
    app.post("/v1/projects", &json!({"name": ""})).assert_error(400, "badRequest");
    app.post("/v1/projects", &json!({"name": "   "})).assert_error(400, "badRequest");
    app.post("/v1/projects", &json!({"name": "x".repeat(256)})).assert_error(400, "badRequest");
    app.post("/v1/projects", &json!({"name": 42})).assert_error(400, "badRequest");
    app.raw(Method::POST, "/v1/projects", "application/json", b"{\"name\": ".to_vec())
        .assert_error(400, "badRequest");
    app.call(Method::POST, "/v1/projects", Some(&app.key), None)
        .assert_error(400, "requestBodyMissing");
    app.put(&format!("/v1/projects/{id}"), &json!({"name": ""})).assert_error(400, "badRequest");
    app.put(&format!("/v1/projects/{id}"), &json!({})).assert_error(400, "badRequest");
    app.put("/v1/projects/999999", &json!({"name": "x"})).assert_error(404, "projectIsNotFound");
    app.assert_unchanged("/v1/projects", &before);
}

#[test]
fn another_company_cannot_see_or_touch_our_projects() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    let ours = before[0]["id"].clone();
    let (other, their_project, _) = app.create_company("enterprise");
    assert_eq!(project_ids(&app, &other), vec![json!(their_project.parse::<i64>().expect("int"))]);
    assert_eq!(project_ids(&app, &app.key), vec![ours.clone()]);
    let path = format!("/v1/projects/{ours}");
    app.get_as(&other, &path).assert_error(404, "projectIsNotFound");
    app.put_as(&other, &path, &json!({"name": "x"})).assert_error(404, "projectIsNotFound");
    app.delete_as(&other, &path).assert_error(404, "projectIsNotFound");
    app.get(&format!("/v1/projects/{their_project}")).assert_error(404, "projectIsNotFound");
    app.assert_unchanged("/v1/projects", &before);
}

#[test]
fn a_view_key_cannot_reach_projects() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let key = app.create_view_key(&view);
    let id = app.get("/v1/projects").body[0]["id"].clone();
    app.get_as(&key, "/v1/projects").assert_error(403, "accessDenied");
    app.get_as(&key, &format!("/v1/projects/{id}")).assert_error(403, "accessDenied");
    app.post_as(&key, "/v1/projects", &json!({"name": "x"})).assert_error(403, "accessDenied");
}

#[test]
fn a_key_limited_to_one_project_sees_only_that_project() {
    let app = spawn_app();
    let default: Value = app.get("/v1/projects").body[0].clone();
    let default_id = default["id"].clone();
    let other = app.post("/v1/projects", &json!({"name": "Other"})).body["id"].clone();
    let key = app.create_key(&["read"], json!({"projects": [other]}));
    assert_eq!(project_ids(&app, &key), vec![other.clone()]);
    app.get_as(&key, &format!("/v1/projects/{other}")).assert_status(200);
    app.get_as(&key, &format!("/v1/projects/{default_id}")).assert_error(403, "accessDenied");
}
