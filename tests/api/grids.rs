//! `/v1/grids`: list by database, get with columns, create (name, template, metadata), update
//! (rename, metadata with null removing a key), delete; the 50-key metadata limit; tiers,
//! privileges and tenancy.

use reqwest::Method;
use serde_json::{json, Map, Value};

use crate::helpers::{spawn_app, TestApp};

fn metadata(n: usize) -> Value {
    let map: Map<String, Value> =
        (0..n).map(|i| (format!("key{i}"), Value::String(format!("value {i}")))).collect();
    Value::Object(map)
}

fn grids_in(app: &TestApp, db: &str) -> Value {
    app.snapshot(&format!("/v1/grids?dbId={db}"))
}

#[test]
fn create_and_get_a_grid() {
    let app = spawn_app();
    let db = app.default_db();
    let res = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "Strings", "metadata": {"team": "loc", "owner": "ana"}}),
    );
    let created = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let id = created["id"].as_str().expect("id");
    assert_eq!(id.len(), 14);
    assert_eq!(created["name"], json!("Strings"));
    assert_eq!(created["metadata"], json!({"team": "loc", "owner": "ana"}));
    let view = created["defaultAccessViewId"].as_str().expect("defaultAccessViewId");
    assert_eq!(view.len(), 14);

    let res = app.get(&format!("/v1/grids/{id}"));
    let got = res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(got["id"], json!(id));
    assert_eq!(got["name"], json!("Strings"));
    assert_eq!(got["status"], json!("active"));
    assert_eq!(got["defaultAccessViewId"], json!(view));
    assert_eq!(got["metadata"], json!({"team": "loc", "owner": "ana"}));
    assert_eq!(got["columns"], json!([]));
    app.get("/v1/grids/nosuchgrid0001").assert_error(404, "gridIsNotFound");
}

#[test]
fn list_grids_of_a_database() {
    let app = spawn_app();
    let db = app.default_db();
    assert_eq!(grids_in(&app, &db), json!([]));
    let (a, _) = app.create_grid("A");
    let (b, _) = app.create_grid("B");
    let res = app.get(&format!("/v1/grids?dbId={db}"));
    let list = res.assert_status(200).as_array().expect("list").clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let pairs: Vec<(Value, Value)> =
        list.iter().map(|g| (g["id"].clone(), g["name"].clone())).collect();
    assert_eq!(pairs, vec![(json!(a), json!("A")), (json!(b), json!("B"))]);
    app.get("/v1/grids").assert_error(400, "requestParameterMissing");
    app.get("/v1/grids?dbId=").assert_error(400, "requestParameterMissing");
    app.get("/v1/grids?dbId=nosuchdatabase").assert_error(404, "databaseIsNotFound");
}

#[test]
fn a_grid_without_a_name_gets_one() {
    let app = spawn_app();
    let db = app.default_db();
    let res = app.post(&format!("/v1/grids?dbId={db}"), &json!({}));
    let name = res.assert_status(201)["name"].as_str().expect("name");
    assert!(!name.is_empty());
}

#[test]
fn fifty_metadata_keys_are_accepted_and_fifty_one_refused_on_create() {
    let app = spawn_app();
    let db = app.default_db();
    let path = format!("/v1/grids?dbId={db}");
    let res = app.post(&path, &json!({"name": "fifty", "metadata": metadata(50)}));
    assert_eq!(res.assert_status(201)["metadata"], metadata(50));
    let before = grids_in(&app, &db);
    let res = app.post(&path, &json!({"name": "too many", "metadata": metadata(51)}));
    res.assert_error(400, "metadataExceedMaximumKey");
    app.assert_unchanged(&format!("/v1/grids?dbId={db}"), &before);
}

#[test]
fn update_renames_and_merges_metadata_with_null_removing_a_key() {
    let app = spawn_app();
    let db = app.default_db();
    let res = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "Strings", "metadata": {"a": "1", "b": "2"}}),
    );
    let created = res.assert_status(201).clone();
    let id = created["id"].as_str().expect("id");
    let path = format!("/v1/grids/{id}");
    let res = app.patch(&path, &json!({"name": "Texts", "metadata": {"b": null, "c": "3"}}));
    let updated = res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(updated["id"], json!(id));
    assert_eq!(updated["name"], json!("Texts"));
    assert_eq!(updated["defaultAccessViewId"], created["defaultAccessViewId"]);
    assert_eq!(updated["metadata"], json!({"a": "1", "c": "3"}));
    let got = app.snapshot(&path);
    assert_eq!(got["name"], json!("Texts"));
    assert_eq!(got["metadata"], json!({"a": "1", "c": "3"}));

    let res = app.patch(&path, &json!({"metadata": {"a": "one"}}));
    assert_eq!(res.assert_status(200)["name"], json!("Texts"), "a missing name is kept");
    assert_eq!(res.body["metadata"], json!({"a": "one", "c": "3"}));
    let listed = grids_in(&app, &db);
    assert_eq!(listed[0]["name"], json!("Texts"));
}

#[test]
fn update_beyond_fifty_metadata_keys_is_refused_and_changes_nothing() {
    let app = spawn_app();
    let db = app.default_db();
    let res = app.post(&format!("/v1/grids?dbId={db}"), &json!({"metadata": metadata(50)}));
    let id = res.assert_status(201)["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/grids/{id}");
    let before = app.snapshot(&path);
    app.patch(&path, &json!({"name": "renamed", "metadata": {"one more": "x"}}))
        .assert_error(400, "metadataExceedMaximumKey");
    app.assert_unchanged(&path, &before);
    let res = app.patch(&path, &json!({"metadata": {"key0": null, "one more": "x"}}));
    let metadata = res.assert_status(200)["metadata"].as_object().expect("map").clone();
    assert_eq!(metadata.len(), 50, "removing one key makes room for another");
    assert!(!metadata.contains_key("key0"));
    assert_eq!(metadata["one more"], json!("x"));
}

#[test]
fn bad_grid_bodies_are_refused_and_change_nothing() {
    let app = spawn_app();
    let db = app.default_db();
    let (id, _) = app.create_grid("Strings");
    let path = format!("/v1/grids/{id}");
    let before_list = grids_in(&app, &db);
    let before = app.snapshot(&path);
    let create = format!("/v1/grids?dbId={db}");
    app.post("/v1/grids", &json!({"name": "x"})).assert_error(400, "requestParameterMissing");
    app.post(&create, &json!({"name": "x".repeat(256)})).assert_error(400, "badRequest");
    app.post(&create, &json!({"name": "x", "metadata": ["a"]})).assert_error(400, "badRequest");
    app.post(&create, &json!({"name": "x", "metadata": {"a": 1}})).assert_error(400, "badRequest");
    app.post(&create, &json!({"name": 7})).assert_error(400, "badRequest");
    app.post(&create, &json!({"name": "x", "columns": [{"name": "c", "type": "lookup"}]}))
        .assert_error(400, "badRequest");
    app.raw(Method::POST, &create, "application/json", b"{\"name\": \"x\"".to_vec())
        .assert_error(400, "badRequest");
    app.post("/v1/grids?dbId=nosuchdatabase", &json!({"name": "x"}))
        .assert_error(404, "databaseIsNotFound");
    app.assert_unchanged(&format!("/v1/grids?dbId={db}"), &before_list);

    app.patch(&path, &json!({"name": ""})).assert_error(400, "badRequest");
    app.patch(&path, &json!({"name": "x".repeat(256)})).assert_error(400, "badRequest");
    app.patch(&path, &json!({"metadata": "nope"})).assert_error(400, "badRequest");
    app.raw(Method::PATCH, &path, "application/json", b"[".to_vec())
        .assert_error(400, "badRequest");
    app.patch("/v1/grids/nosuchgrid0001", &json!({"name": "x"}))
        .assert_error(404, "gridIsNotFound");
    app.assert_unchanged(&path, &before);
}

#[test]
fn a_grid_created_from_a_template_copies_its_columns() {
    let app = spawn_app();
    let db = app.default_db();
    let (template, view) = app.create_grid("Template");
    let source = app.create_column(
        &view,
        json!({"id": "enUS", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    let selection = app.create_column(
        &view,
        json!({"id": "state", "name": "State", "type": "singleSelection",
               "selection": {"options": [{"value": "new", "color": "sun"}]}}),
    );
    let res = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "Copy", "templateGridId": template}),
    );
    let copy = res.assert_status(201).clone();
    assert_ne!(copy["id"], json!(template));
    assert_ne!(copy["defaultAccessViewId"], json!(view));
    let copy_id = copy["id"].as_str().expect("id");
    let got = app.snapshot(&format!("/v1/grids/{copy_id}"));
    assert_eq!(got["name"], json!("Copy"));
    assert_eq!(got["columns"], json!([source, selection]));
    let copy_view = copy["defaultAccessViewId"].as_str().expect("view");
    let column = app.snapshot(&format!("/v1/views/{copy_view}/columns/state"));
    assert_eq!(column, selection);

    let template_view = app.snapshot(&format!("/v1/views/{view}"));
    app.create_column(copy_view, json!({"id": "extra", "name": "Extra", "type": "singleLine"}));
    app.assert_unchanged(&format!("/v1/views/{view}"), &template_view);
}

#[test]
fn an_unknown_or_foreign_template_is_not_found() {
    let app = spawn_app();
    let db = app.default_db();
    let before = grids_in(&app, &db);
    app.post(&format!("/v1/grids?dbId={db}"), &json!({"templateGridId": "nosuchgrid0001"}))
        .assert_error(404, "gridIsNotFound");
    let (other, _, their_db) = app.create_company("enterprise");
    let res = app.post_as(&other, &format!("/v1/grids?dbId={their_db}"), &json!({"name": "t"}));
    let theirs = res.assert_status(201)["id"].as_str().expect("id").to_owned();
    app.post(&format!("/v1/grids?dbId={db}"), &json!({"templateGridId": theirs}))
        .assert_error(404, "gridIsNotFound");
    app.assert_unchanged(&format!("/v1/grids?dbId={db}"), &before);
}

#[test]
fn delete_a_grid() {
    let app = spawn_app();
    let db = app.default_db();
    let (keep, _) = app.create_grid("Keep");
    let (id, view) = app.create_grid("Doomed");
    app.create_column(&view, json!({"name": "c", "type": "singleLine"}));
    let res = app.delete(&format!("/v1/grids/{id}"));
    res.assert_status(204);
    assert_eq!(res.text, "");
    app.get(&format!("/v1/grids/{id}")).assert_error(404, "gridIsNotFound");
    app.get(&format!("/v1/views/{view}")).assert_error(404, "viewIsNotFound");
    app.get(&format!("/v1/views?gridId={id}")).assert_error(404, "gridIsNotFound");
    let list = grids_in(&app, &db);
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["id"], json!(keep));
    app.delete(&format!("/v1/grids/{id}")).assert_error(404, "gridIsNotFound");
    app.patch(&format!("/v1/grids/{id}"), &json!({"name": "x"}))
        .assert_error(404, "gridIsNotFound");
}

#[test]
fn grid_writes_need_the_team_plan() {
    let app = spawn_app();
    let company = app.create_company_body("free");
    let owner = company["ownerKey"].as_str().expect("owner key").to_owned();
    let company_id = company["id"].clone();
    let db = company["databaseId"].as_str().expect("db").to_owned();
    let create = format!("/v1/grids?dbId={db}");
    let res = app.post_as(&owner, &create, &json!({"name": "x"}));
    res.assert_error(403, "accessDenied");
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("Team")), "{}", res.text);
    assert_eq!(app.get_as(&owner, &create).assert_status(200), &json!([]));

    let set_tier = |tier: &str| {
        let res = app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": tier}));
        assert_eq!(res.assert_status(200)["tier"], json!(tier));
    };
    set_tier("team");
    let grid = app.post_as(&owner, &create, &json!({"name": "x"}));
    let grid = grid.assert_status(201)["id"].as_str().expect("id").to_owned();
    set_tier("free");
    let path = format!("/v1/grids/{grid}");
    let before = app.get_as(&owner, &path).assert_status(200).clone();
    for res in [
        app.patch_as(&owner, &path, &json!({"name": "y"})),
        app.delete_as(&owner, &path),
        app.post_as(&owner, &create, &json!({"name": "z"})),
    ] {
        res.assert_error(403, "accessDenied");
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains("Team")), "{}", res.text);
    }
    assert_eq!(app.get_as(&owner, &path).assert_status(200), &before);
    assert_eq!(app.get_as(&owner, &create).body.as_array().map(Vec::len), Some(1));
}

#[test]
fn a_team_company_manages_grids() {
    let app = spawn_app();
    let (owner, _, db) = app.create_company("team");
    let res = app.post_as(&owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "T"}));
    let id = res.assert_status(201)["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/grids/{id}");
    app.patch_as(&owner, &path, &json!({"name": "U"})).assert_status(200);
    app.delete_as(&owner, &path).assert_status(204);
}

#[test]
fn grid_writes_need_the_manage_privilege() {
    let app = spawn_app();
    let db = app.default_db();
    let (id, _) = app.create_grid("Strings");
    let path = format!("/v1/grids/{id}");
    let before = app.snapshot(&path);
    let list = grids_in(&app, &db);
    for privileges in [&["read"][..], &["write"]] {
        let key = app.create_key(privileges, json!({"all": true}));
        assert_eq!(app.get_as(&key, &path).assert_status(200), &before);
        assert_eq!(app.get_as(&key, &format!("/v1/grids?dbId={db}")).assert_status(200), &list);
        app.post_as(&key, &format!("/v1/grids?dbId={db}"), &json!({"name": "x"}))
            .assert_error(403, "accessDenied");
        app.patch_as(&key, &path, &json!({"name": "x"})).assert_error(403, "accessDenied");
        app.delete_as(&key, &path).assert_error(403, "accessDenied");
    }
    app.assert_unchanged(&path, &before);
    app.assert_unchanged(&format!("/v1/grids?dbId={db}"), &list);
    let manage = app.create_key(&["manage"], json!({"all": true}));
    app.post_as(&manage, &format!("/v1/grids?dbId={db}"), &json!({"name": "x"})).assert_status(201);
    app.patch_as(&manage, &path, &json!({"name": "y"})).assert_status(200);
    app.delete_as(&manage, &path).assert_status(204);
}

#[test]
fn grid_calls_need_a_valid_key() {
    let app = spawn_app();
    let db = app.default_db();
    let (id, _) = app.create_grid("Strings");
    let path = format!("/v1/grids/{id}");
    let before = app.snapshot(&path);
    for key in [None, Some("wrong-key")] {
        app.call(Method::GET, &format!("/v1/grids?dbId={db}"), key, None)
            .assert_error(401, "unauthorized");
        app.call(Method::GET, &path, key, None).assert_error(401, "unauthorized");
        app.call(Method::POST, &format!("/v1/grids?dbId={db}"), key, Some(&json!({})))
            .assert_error(401, "unauthorized");
        app.call(Method::PATCH, &path, key, Some(&json!({"name": "x"})))
            .assert_error(401, "unauthorized");
        app.call(Method::DELETE, &path, key, None).assert_error(401, "unauthorized");
    }
    app.assert_unchanged(&path, &before);
}

#[test]
fn another_company_cannot_see_or_touch_our_grids() {
    let app = spawn_app();
    let db = app.default_db();
    let (id, _) = app.create_grid("Strings");
    let path = format!("/v1/grids/{id}");
    let before = app.snapshot(&path);
    let (other, _, their_db) = app.create_company("enterprise");
    app.get_as(&other, &path).assert_error(404, "gridIsNotFound");
    app.patch_as(&other, &path, &json!({"name": "x"})).assert_error(404, "gridIsNotFound");
    app.delete_as(&other, &path).assert_error(404, "gridIsNotFound");
    app.get_as(&other, &format!("/v1/grids?dbId={db}")).assert_error(404, "databaseIsNotFound");
    app.post_as(&other, &format!("/v1/grids?dbId={db}"), &json!({"name": "x"}))
        .assert_error(404, "databaseIsNotFound");
    assert_eq!(app.get_as(&other, &format!("/v1/grids?dbId={their_db}")).body, json!([]));
    app.assert_unchanged(&path, &before);
}

#[test]
fn a_key_limited_to_one_grid_reaches_only_it() {
    let app = spawn_app();
    let (a, _) = app.create_grid("A");
    let (b, _) = app.create_grid("B");
    let key = app.create_key(&["manage"], json!({"grids": [a]}));
    app.get_as(&key, &format!("/v1/grids/{a}")).assert_status(200);
    app.patch_as(&key, &format!("/v1/grids/{a}"), &json!({"name": "A2"})).assert_status(200);
    app.get_as(&key, &format!("/v1/grids/{b}")).assert_error(403, "accessDenied");
    app.delete_as(&key, &format!("/v1/grids/{b}")).assert_error(403, "accessDenied");
    app.get(&format!("/v1/grids/{b}")).assert_status(200);
}

#[test]
fn a_view_key_cannot_read_or_change_grids() {
    let app = spawn_app();
    let db = app.default_db();
    let (id, view) = app.create_grid("Strings");
    let key = app.create_view_key(&view);
    let path = format!("/v1/grids/{id}");
    let before = app.snapshot(&path);
    app.get_as(&key, &path).assert_error(403, "accessDenied");
    app.patch_as(&key, &path, &json!({"name": "x"})).assert_error(403, "accessDenied");
    app.delete_as(&key, &path).assert_error(403, "accessDenied");
    app.post_as(&key, &format!("/v1/grids?dbId={db}"), &json!({"name": "x"}))
        .assert_error(403, "accessDenied");
    app.assert_unchanged(&path, &before);
}

/// A template's dependencies and views come with its columns (issue 19), under new ids, and
/// the copy is independent of the template.
#[test]
fn a_grid_created_from_a_template_copies_its_dependencies_and_views() {
    let app = spawn_app();
    let db = app.default_db();
    let (template, view) = app.create_grid("Template");
    let language = |id: &str, code: &str| json!({"id": id, "name": id, "type": "language", "languageCode": code});
    app.create_column(&view, language("enUS", "enUS"));
    app.create_column(&view, language("deDE", "deDE"));
    let dep = app.post(
        &format!("/v1/views/{view}/dependencies"),
        &json!({"sourceColumnId": "enUS", "targetColumnId": "deDE"}),
    );
    let dep = dep.assert_status(201).clone();
    let translators = app.post(
        "/v1/views",
        &json!({"name": "Translators", "gridId": template,
                "columns": [{"id": "deDE"}, {"id": "enUS", "editable": false}]}),
    );
    let translators = translators.assert_status(200).clone();

    let res = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "Copy", "templateGridId": template}),
    );
    let copy = res.assert_status(201).clone();
    let copy_id = copy["id"].as_str().expect("id");
    let copy_view = copy["defaultAccessViewId"].as_str().expect("view");
    let deps = app.snapshot(&format!("/v1/views/{copy_view}/dependencies"));
    let deps = deps.as_array().expect("a list");
    assert_eq!(deps.len(), 1, "{deps:?}");
    assert_eq!(
        (&deps[0]["sourceColumnId"], &deps[0]["targetColumnId"]),
        (&json!("enUS"), &json!("deDE"))
    );
    assert_ne!(deps[0]["id"], dep["id"], "a new dependency id");
    let views = app.snapshot(&format!("/v1/views?gridId={copy_id}"));
    let views = views.as_array().expect("a list");
    assert_eq!(views.len(), 2, "{views:?}");
    let copied = views.iter().find(|v| v["name"] == "Translators").expect("the view is copied");
    assert_ne!(copied["id"], translators["id"], "a new view id");
    assert_eq!(copied["columns"].as_array().map(Vec::len), Some(2));
    let copied_id = copied["id"].as_str().expect("id");
    // The copied view works on its own and survives a restart.
    app.add_records(
        copied_id,
        json!([{"id": "k1", "cells": [{"columnId": "deDE", "value": "Hallo"}]}]),
    );
    let app = app.restart();
    assert_eq!(app.records(copied_id).len(), 1);
    assert_eq!(app.records(&view).len(), 0, "the template is untouched");
}
