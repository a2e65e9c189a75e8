//! Drop-in compatibility with clients of the hosted service (issue 19): integer company and
//! project ids (and the migration of data directories written with string ids), view listings
//! with columns, views with their records, and cursor paging.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::*;

const FIXTURE_KEY: &str = "fixture-owner-key";

/// Starts a server on a copy of a fixture data directory (kept while the returned directory
/// lives) and reads the fixture's `ids.json`.
fn start_fixture(name: &str) -> (TestApp, Value, tempfile::TempDir) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture.join("data"), dir.path());
    let ids: Value = serde_json::from_slice(&std::fs::read(fixture.join("ids.json")).expect("ids"))
        .expect("ids.json");
    (start(dir.path(), FIXTURE_KEY), ids, dir)
}

fn ids_of(list: &Value) -> Vec<Value> {
    list.as_array().expect("a list").iter().map(|x| x["id"].clone()).collect()
}

#[test]
fn projects_and_companies_have_integer_ids_increasing_from_one() {
    let app = spawn_app();
    let projects = app.get("/v1/projects");
    let first = &projects.assert_status(200)[0];
    assert_eq!((first["id"].clone(), first["companyId"].clone()), (json!(1), json!(1)));
    let made = app.post("/v1/projects", &json!({"name": "second"}));
    assert_eq!(made.assert_status(200)["id"], json!(2));
    let db = app.post("/v1/databases?projectId=2", &json!({"name": "d"}));
    assert_eq!(db.assert_status(200)["projectId"], json!(2));
    let listed = app.get("/v1/databases?projectId=2");
    assert_eq!(ids_of(listed.assert_status(200)), vec![db.body["id"].clone()]);
    assert_eq!(app.get("/v1/projects/2").assert_status(200)["name"], "second");
    // A deleted project's number is never handed out again, even after a restart.
    app.delete("/v1/projects/2").assert_status(200);
    let app = app.restart();
    let again = app.post("/v1/projects", &json!({"name": "third"}));
    assert_eq!(again.assert_status(200)["id"], json!(3));
    let company = app.create_company_body("team");
    assert_eq!((company["id"].clone(), company["projectId"].clone()), (json!(2), json!(4)));
}

#[test]
fn a_project_id_that_is_not_an_integer_is_a_bad_request() {
    let app = spawn_app();
    let before = app.snapshot("/v1/databases");
    app.get("/v1/databases?projectId=abc").assert_error(400, "badRequest");
    app.get("/v1/databases?projectId=1.5").assert_error(400, "badRequest");
    app.post("/v1/databases?projectId=x1", &json!({"name": "d"})).assert_error(400, "badRequest");
    app.get("/v1/projects/abc").assert_error(400, "badRequest");
    app.put("/v1/projects/abc", &json!({"name": "n"})).assert_error(400, "badRequest");
    app.delete("/v1/projects/abc").assert_error(400, "badRequest");
    app.patch("/admin/v1/companies/abc", &json!({"tier": "free"})).assert_error(400, "badRequest");
    app.delete("/admin/v1/companies/abc").assert_error(400, "badRequest");
    app.assert_unchanged("/v1/databases", &before);
    app.get("/v1/projects/99").assert_error(404, "projectIsNotFound");
    app.get("/v1/databases?projectId=99").assert_error(404, "projectIsNotFound");
    app.post("/v1/databases?projectId=99", &json!({"name": "d"}))
        .assert_error(404, "projectIsNotFound");
    app.delete("/admin/v1/companies/99").assert_error(404, "companyIsNotFound");
    app.assert_unchanged("/v1/databases", &before);
}

#[test]
fn key_access_lists_take_integer_project_ids() {
    let app = spawn_app();
    let project = app.post("/v1/projects", &json!({"name": "p"})).assert_status(200)["id"].clone();
    let res = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "k", "privileges": ["read"], "access": {"projects": [project]}}),
    );
    let body = res.assert_status(201);
    assert_eq!(body["access"]["projects"], json!([project]));
    let key = body["key"].as_str().expect("secret");
    assert_eq!(ids_of(app.get_as(key, "/v1/projects").assert_status(200)), vec![project]);
    let before = app.snapshot("/admin/v1/api-keys");
    for bad in [json!(["abc"]), json!([1.5]), json!([true])] {
        let res = app.post(
            "/admin/v1/api-keys",
            &json!({"name": "k", "privileges": ["read"], "access": {"projects": bad}}),
        );
        res.assert_error(400, "badRequest");
    }
    app.assert_unchanged("/admin/v1/api-keys", &before);
}

#[test]
fn share_bodies_carry_the_integer_company_id() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let share = app.put(&format!("/v1/views/{view}/shares"), &json!({}));
    assert_eq!(share.assert_status(200)["companyId"], json!(1));
}

#[test]
fn a_data_directory_with_string_ids_is_migrated_on_start() {
    let (app, old, _dir) = start_fixture("string_ids_v1");
    let projects = app.get("/v1/projects");
    let projects = projects.assert_status(200);
    assert_eq!(ids_of(projects), vec![json!(1), json!(2)]);
    assert_eq!(projects[1]["name"], "Fixture project");
    assert_eq!(projects[1]["companyId"], json!(1));
    let dbs = app.get("/v1/databases?projectId=2");
    let dbs = dbs.assert_status(200);
    assert_eq!(ids_of(dbs), vec![old["database"].clone()]);
    assert_eq!(dbs[0]["projectId"], json!(2));
    let view = old["view"].as_str().expect("view id");
    let records = app.records(view);
    let titles: Vec<&str> =
        records.iter().filter_map(|r| cell(r, "title")["value"].as_str()).collect();
    assert_eq!(titles, vec!["one", "two", "three"]);
    let share = app.get(&format!("/v1/views/{view}/shares"));
    assert_eq!(share.assert_status(200)["companyId"], json!(1));
    let keys = app.get("/admin/v1/api-keys");
    let limited = keys.body.as_array().expect("keys").iter().find(|k| k["name"] == "limited");
    assert_eq!(limited.expect("limited key")["access"]["projects"], json!([2]));

    // The limited key still works, on its project only.
    let limited = old["limitedKey"].as_str().expect("limited key");
    assert_eq!(ids_of(app.get_as(limited, "/v1/projects").assert_status(200)), vec![json!(2)]);
    app.get_as(limited, &format!("/v1/views/{view}/records")).assert_status(200);
    app.get_as(limited, "/v1/databases?projectId=1").assert_error(403, "accessDenied");
    // The second company: number 2, its project 3, its owner key working.
    let second = old["company"]["ownerKey"].as_str().expect("owner key");
    let theirs = app.get_as(second, "/v1/projects");
    let theirs = theirs.assert_status(200);
    assert_eq!((theirs[0]["id"].clone(), theirs[0]["companyId"].clone()), (json!(3), json!(2)));
    app.patch("/admin/v1/companies/2", &json!({"tier": "enterprise"})).assert_status(200);

    // Migrated once: the same ids after a restart, and new ones continue the numbering.
    let app = app.restart();
    assert_eq!(ids_of(app.get("/v1/projects").assert_status(200)), vec![json!(1), json!(2)]);
    assert_eq!(app.records(view).len(), 3);
    let made = app.post("/v1/projects", &json!({"name": "new"}));
    assert_eq!(made.assert_status(200)["id"], json!(4));
    assert_eq!(app.create_company_body("free")["id"], json!(3));
}
