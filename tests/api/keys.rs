//! Keys and tenancy (decisions.md section 11): the admin API for keys and companies, company
//! key privileges and accesses, view keys, revocation and plan tiers.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp, OWNER_KEY};

fn key_ids(app: &TestApp) -> Vec<String> {
    let list = app.snapshot("/admin/v1/api-keys");
    list.as_array()
        .expect("list")
        .iter()
        .map(|k| k["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn create_a_company_key() {
    let app = spawn_app();
    let res = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "ci", "user": "ci-bot", "kind": "company",
                "privileges": ["read", "write"], "access": {"all": true}}),
    );
    let body = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(body["name"], json!("ci"));
    assert_eq!(body["user"], json!("ci-bot"));
    assert_eq!(body["kind"], json!("company"));
    assert_eq!(body["privileges"], json!(["read", "write"]));
    assert_eq!(body["access"]["all"], json!(true));
    assert!(body["id"].as_str().is_some_and(|id| id.len() == 14), "{body}");
    assert!(body["createdTime"].as_str().is_some_and(|t| t.ends_with("+00:00")), "{body}");
    let secret = body["key"].as_str().expect("the secret is returned once");
    assert!(secret.len() >= 32, "a long random secret");
    assert_ne!(secret, OWNER_KEY);
    app.get_as(secret, "/v1/projects").assert_status(200);

    let listed = app.snapshot("/admin/v1/api-keys");
    let listed = listed.as_array().expect("list");
    assert_eq!(listed.len(), 2, "the owner key and the new one");
    let mine = listed.iter().find(|k| k["id"] == body["id"]).expect("listed");
    assert!(mine.get("key").is_none(), "no secret in the list: {mine}");
    assert_eq!(mine["user"], json!("ci-bot"));
    assert_eq!(mine["privileges"], json!(["read", "write"]));
    assert!(!app.snapshot("/admin/v1/api-keys").to_string().contains(secret));
}

#[test]
fn user_defaults_to_the_key_name() {
    let app = spawn_app();
    let res = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "deploy", "privileges": ["read"], "access": {"all": true}}),
    );
    let body = res.assert_status(201);
    assert_eq!(body["user"], json!("deploy"));
    assert_eq!(body["kind"], json!("company"));
}

#[test]
fn a_revoked_key_is_refused_at_once() {
    let app = spawn_app();
    let res = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "tmp", "privileges": ["read"], "access": {"all": true}}),
    );
    let body = res.assert_status(201).clone();
    let (id, secret) = (body["id"].as_str().expect("id"), body["key"].as_str().expect("key"));
    app.get_as(secret, "/v1/projects").assert_status(200);
    let res = app.delete(&format!("/admin/v1/api-keys/{id}"));
    res.assert_status(204);
    assert_eq!(res.text, "");
    let refused = app.get_as(secret, "/v1/projects");
    refused.assert_error(401, "unauthorized");
    // RFC 9110: a 401 names the scheme that authenticates.
    assert_eq!(refused.header("www-authenticate"), Some("ApiKey"));
    assert!(!key_ids(&app).contains(&id.to_owned()));
    app.delete(&format!("/admin/v1/api-keys/{id}")).assert_error(404, "keyIsNotFound");
    app.delete("/admin/v1/api-keys/nosuchkey00001").assert_error(404, "keyIsNotFound");
}

#[test]
fn a_view_key_is_bound_to_its_view() {
    let app = spawn_app();
    let (grid, default) = app.create_grid("g");
    app.create_column(&default, json!({"id": "a", "name": "A", "type": "singleLine"}));
    let res =
        app.post("/v1/views", &json!({"name": "v", "gridId": grid, "columns": [{"id": "a"}]}));
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let res =
        app.post("/admin/v1/api-keys", &json!({"name": "vk", "kind": "view", "viewId": view}));
    let body = res.assert_status(201).clone();
    assert_eq!(body["kind"], json!("view"));
    assert_eq!(body["viewId"], json!(view));
    let key = body["key"].as_str().expect("secret");
    app.get_as(key, &format!("/v1/views/{view}")).assert_status(200);
    app.get_as(key, &format!("/v1/views/{view}/columns/a")).assert_status(200);
    app.get_as(key, &format!("/v1/views/{view}/dependencies")).assert_status(200);
    app.get_as(key, &format!("/v1/views/{default}")).assert_error(403, "accessDenied");
    app.get_as(key, &format!("/v1/views/{default}/columns/a")).assert_error(403, "accessDenied");
    app.get_as(key, &format!("/v1/grids/{grid}")).assert_error(403, "accessDenied");
    app.get_as(key, "/v1/projects").assert_error(403, "accessDenied");
    app.get_as(key, "/admin/v1/api-keys").assert_error(403, "accessDenied");
    let (_, other_view) = app.create_grid("other");
    app.get_as(key, &format!("/v1/views/{other_view}")).assert_error(403, "accessDenied");
}

#[test]
fn bad_key_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let before = app.snapshot("/admin/v1/api-keys");
    for body in [
        json!({"privileges": ["read"]}),
        json!({"name": "", "privileges": ["read"]}),
        json!({"name": "x", "privileges": ["admin"]}),
        json!({"name": "x", "privileges": []}),
        json!({"name": "x", "kind": "robot", "privileges": ["read"]}),
        json!({"name": "x", "kind": "view"}),
        json!({"name": "x", "privileges": "read"}),
    ] {
        app.post("/admin/v1/api-keys", &body).assert_error(400, "badRequest");
    }
    app.post(
        "/admin/v1/api-keys",
        &json!({"name": "x", "kind": "view", "viewId": "nosuchview0001"}),
    )
    .assert_error(404, "viewIsNotFound");
    let (other, _, their_db) = app.create_company("enterprise");
    let res = app.post_as(&other, &format!("/v1/grids?dbId={their_db}"), &json!({"name": "t"}));
    let their_view = res.assert_status(201)["defaultAccessViewId"].as_str().expect("v").to_owned();
    app.post("/admin/v1/api-keys", &json!({"name": "x", "kind": "view", "viewId": their_view}))
        .assert_error(404, "viewIsNotFound");
    app.raw(Method::POST, "/admin/v1/api-keys", "application/json", b"{".to_vec())
        .assert_error(400, "badRequest");
    app.assert_unchanged("/admin/v1/api-keys", &before);
}

#[test]
fn only_owner_keys_manage_keys() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let before = app.snapshot("/admin/v1/api-keys");
    let owner_id = before[0]["id"].as_str().expect("id").to_owned();
    let manage = app.create_key(&["manage"], json!({"all": true}));
    let view_key = app.create_view_key(&view);
    let before = app.snapshot("/admin/v1/api-keys");
    for key in [&manage, &view_key] {
        app.get_as(key, "/admin/v1/api-keys").assert_error(403, "accessDenied");
        app.post_as(key, "/admin/v1/api-keys", &json!({"name": "x", "privileges": ["owner"]}))
            .assert_error(403, "accessDenied");
        app.delete_as(key, &format!("/admin/v1/api-keys/{owner_id}"))
            .assert_error(403, "accessDenied");
    }
    for key in [None, Some("wrong-key")] {
        app.call(Method::GET, "/admin/v1/api-keys", key, None).assert_error(401, "unauthorized");
        app.call(Method::POST, "/admin/v1/api-keys", key, Some(&json!({"name": "x"})))
            .assert_error(401, "unauthorized");
    }
    app.assert_unchanged("/admin/v1/api-keys", &before);
    let owner = app.create_key(&["owner"], json!({"all": true}));
    app.get_as(&owner, "/admin/v1/api-keys").assert_status(200);
}

#[test]
fn keys_of_another_company_are_invisible() {
    let app = spawn_app();
    let before = app.snapshot("/admin/v1/api-keys");
    let ours = before[0]["id"].as_str().expect("id").to_owned();
    let (other, _, _) = app.create_company("enterprise");
    let theirs = app.get_as(&other, "/admin/v1/api-keys");
    let theirs = theirs.assert_status(200).as_array().expect("list").clone();
    assert_eq!(theirs.len(), 1);
    assert_ne!(theirs[0]["id"], json!(ours));
    app.delete_as(&other, &format!("/admin/v1/api-keys/{ours}")).assert_error(404, "keyIsNotFound");
    app.assert_unchanged("/admin/v1/api-keys", &before);
    app.get("/v1/projects").assert_status(200);
}

#[test]
fn each_privilege_includes_the_ones_before_it() {
    let app = spawn_app();
    let db = app.default_db();
    let (grid, _) = app.create_grid("g");
    let read = app.create_key(&["read"], json!({"all": true}));
    let manage = app.create_key(&["manage"], json!({"all": true}));
    let owner = app.create_key(&["owner"], json!({"all": true}));
    for key in [&read, &manage, &owner] {
        app.get_as(key, &format!("/v1/grids/{grid}")).assert_status(200);
        app.get_as(key, &format!("/v1/grids?dbId={db}")).assert_status(200);
        app.get_as(key, "/v1/projects").assert_status(200);
    }
    app.post_as(&read, &format!("/v1/grids?dbId={db}"), &json!({"name": "r"}))
        .assert_error(403, "accessDenied");
    app.post_as(&manage, &format!("/v1/grids?dbId={db}"), &json!({"name": "m"})).assert_status(201);
    app.post_as(&manage, "/v1/projects", &json!({"name": "m"})).assert_error(403, "accessDenied");
    app.post_as(&owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "o"})).assert_status(201);
    app.post_as(&owner, "/v1/projects", &json!({"name": "o"})).assert_status(200);
}

#[test]
fn accesses_limit_a_key_to_listed_projects_databases_or_grids() {
    let app = spawn_app();
    let project = app.get("/v1/projects").body[0]["id"].clone();
    let (grid_a, _) = app.create_grid("A");
    let (grid_b, _) = app.create_grid("B");
    let other_project = app.post("/v1/projects", &json!({"name": "Other"})).body["id"].clone();
    let other_db =
        app.post(&format!("/v1/databases?projectId={other_project}"), &json!({"name": "d"}));
    let other_db = other_db.assert_status(200)["id"].as_str().expect("id").to_owned();
    let res = app.post(&format!("/v1/grids?dbId={other_db}"), &json!({"name": "C"}));
    let grid_c = res.assert_status(201)["id"].as_str().expect("id").to_owned();

    let by_project = app.create_key(&["manage"], json!({"projects": [project]}));
    let by_db = app.create_key(&["manage"], json!({"databases": [other_db]}));
    let by_grid = app.create_key(&["manage"], json!({"grids": [grid_b]}));
    let expect = |key: &str, grid: &str, reachable: bool| {
        let res = app.get_as(key, &format!("/v1/grids/{grid}"));
        if reachable {
            res.assert_status(200);
        } else {
            res.assert_error(403, "accessDenied");
        }
    };
    expect(&by_project, &grid_a, true);
    expect(&by_project, &grid_b, true);
    expect(&by_project, &grid_c, false);
    expect(&by_db, &grid_a, false);
    expect(&by_db, &grid_c, true);
    expect(&by_grid, &grid_a, false);
    expect(&by_grid, &grid_b, true);
    expect(&by_grid, &grid_c, false);
    app.post_as(&by_db, &format!("/v1/grids?dbId={other_db}"), &json!({"name": "D"}))
        .assert_status(201);
    app.post_as(&by_db, &format!("/v1/grids?dbId={}", app.default_db()), &json!({"name": "E"}))
        .assert_error(403, "accessDenied");
    app.delete_as(&by_grid, &format!("/v1/grids/{grid_a}")).assert_error(403, "accessDenied");
    app.get(&format!("/v1/grids/{grid_a}")).assert_status(200);
}

#[test]
fn create_update_and_delete_a_company() {
    let app = spawn_app();
    let res = app.post("/admin/v1/companies", &json!({"name": "Acme", "tier": "team"}));
    let company = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(company["name"], json!("Acme"));
    assert_eq!(company["tier"], json!("team"));
    let id = company["id"].clone();
    let owner = company["ownerKey"].as_str().expect("owner key").to_owned();
    let project = company["projectId"].clone();
    let db = company["databaseId"].as_str().expect("database");
    let projects = app.get_as(&owner, "/v1/projects").assert_status(200).clone();
    assert_eq!(projects.as_array().map(Vec::len), Some(1));
    assert_eq!(projects[0]["id"], project);
    let dbs = app.get_as(&owner, "/v1/databases").assert_status(200).clone();
    assert_eq!(dbs[0]["id"], json!(db));
    app.post_as(&owner, "/v1/projects", &json!({"name": "More"})).assert_status(200);
    assert_eq!(app.get("/v1/projects").body.as_array().map(Vec::len), Some(1));

    let res = app.patch(&format!("/admin/v1/companies/{id}"), &json!({"tier": "enterprise"}));
    let updated = res.assert_status(200);
    assert_eq!(updated["id"], json!(id));
    assert_eq!(updated["tier"], json!("enterprise"));
    assert_eq!(updated["name"], json!("Acme"));

    let res = app.delete(&format!("/admin/v1/companies/{id}"));
    res.assert_status(204);
    assert_eq!(res.text, "");
    app.get_as(&owner, "/v1/projects").assert_error(401, "unauthorized");
    app.get(&format!("/v1/projects/{project}")).assert_error(404, "projectIsNotFound");
    app.get("/v1/projects").assert_status(200);
    app.delete(&format!("/admin/v1/companies/{id}")).assert_error(404, "companyIsNotFound");
    app.patch(&format!("/admin/v1/companies/{id}"), &json!({"tier": "free"}))
        .assert_error(404, "companyIsNotFound");
}

#[test]
fn only_the_admin_key_manages_companies() {
    let app = spawn_app();
    let company = app.create_company_body("enterprise");
    let id = company["id"].clone();
    let their_owner = company["ownerKey"].as_str().expect("key").to_owned();
    let our_owner = app.create_key(&["owner"], json!({"all": true}));
    for key in [&their_owner, &our_owner] {
        app.post_as(key, "/admin/v1/companies", &json!({"name": "x", "tier": "free"}))
            .assert_error(403, "accessDenied");
        app.patch_as(key, &format!("/admin/v1/companies/{id}"), &json!({"tier": "free"}))
            .assert_error(403, "accessDenied");
        app.delete_as(key, &format!("/admin/v1/companies/{id}")).assert_error(403, "accessDenied");
    }
    app.call(
        Method::POST,
        "/admin/v1/companies",
        None,
        Some(&json!({"name": "x", "tier": "free"})),
    )
    .assert_error(401, "unauthorized");
    app.get_as(&their_owner, "/v1/projects").assert_status(200);
}

#[test]
fn bad_company_requests_are_refused() {
    let app = spawn_app();
    for body in [
        json!({"name": "x"}),
        json!({"name": "x", "tier": "gold"}),
        json!({"name": "", "tier": "free"}),
        json!({"tier": "free"}),
    ] {
        app.post("/admin/v1/companies", &body).assert_error(400, "badRequest");
    }
    let company = app.create_company_body("free");
    let id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{id}"), &json!({"tier": "platinum"}))
        .assert_error(400, "badRequest");
    app.patch("/admin/v1/companies/999999", &json!({"tier": "team"}))
        .assert_error(404, "companyIsNotFound");
    let owner = company["ownerKey"].as_str().expect("key");
    let db = company["databaseId"].as_str().expect("db");
    app.post_as(owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "x"}))
        .assert_error(403, "accessDenied");
}

#[test]
fn the_admin_company_cannot_be_deleted() {
    let app = spawn_app();
    let project: Value = app.get("/v1/projects").body[0].clone();
    let company = project["companyId"].clone();
    app.delete(&format!("/admin/v1/companies/{company}")).assert_error(400, "badRequest");
    app.get("/v1/projects").assert_status(200);
}

#[test]
fn tiers_gate_team_and_enterprise_calls() {
    let app = spawn_app();
    let company = app.create_company_body("free");
    let id = company["id"].clone();
    let owner = company["ownerKey"].as_str().expect("key").to_owned();
    let db = company["databaseId"].as_str().expect("db").to_owned();
    let set_tier = |tier: &str| {
        app.patch(&format!("/admin/v1/companies/{id}"), &json!({"tier": tier})).assert_status(200);
    };
    let create_grid =
        || app.post_as(&owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "g"}));

    let res = create_grid();
    res.assert_error(403, "accessDenied");
    let message = res.body["message"].as_str().expect("message");
    assert!(message.contains("Team"), "the T+E message names the Team plan: {message}");

    set_tier("team");
    let grid = create_grid().assert_status(201).clone();
    let view = grid["defaultAccessViewId"].as_str().expect("view");
    let res = app.post_as(
        &owner,
        &format!("/v1/views/{view}/columns"),
        &json!({"id": "a", "name": "A", "type": "singleLine"}),
    );
    res.assert_status(201);
    let res = app.post_as(&owner, "/v1/views", &json!({"name": "v", "gridId": grid["id"]}));
    let second = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let add = format!("/v1/views/{second}/columns/a/add");
    let res = app.call(Method::POST, &add, Some(&owner), None);
    res.assert_error(403, "accessDenied");
    let message = res.body["message"].as_str().expect("message");
    assert!(message.contains("Enterprise"), "the E message names the Enterprise plan: {message}");
    assert!(!message.contains("Team or"), "{message}");

    set_tier("enterprise");
    app.call(Method::POST, &add, Some(&owner), None).assert_status(200);
}

#[test]
fn keys_created_with_the_owner_key_of_a_new_company_belong_to_it() {
    let app = spawn_app();
    let (owner, project, _) = app.create_company("team");
    let res = app.post_as(
        &owner,
        "/admin/v1/api-keys",
        &json!({"name": "reader", "privileges": ["read"], "access": {"all": true}}),
    );
    let reader = res.assert_status(201)["key"].as_str().expect("key").to_owned();
    let projects = app.get_as(&reader, "/v1/projects").assert_status(200).clone();
    assert_eq!(projects.as_array().map(Vec::len), Some(1));
    assert_eq!(projects[0]["id"].to_string(), project);
    assert_eq!(app.get_as(&owner, "/admin/v1/api-keys").body.as_array().map(Vec::len), Some(2));
    assert_eq!(app.snapshot("/admin/v1/api-keys").as_array().map(Vec::len), Some(1));
}
