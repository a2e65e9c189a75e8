//! `/v1/views/<viewId>/dependencies`: list, get, create, update, delete; one dependency per
//! target, no cycles, language columns only.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// A grid with language columns enUS (source), frFR, deDE and esES (targets) and a singleLine
/// `note`: (grid id, default view id).
fn localization_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Strings");
    app.create_column(
        &view,
        json!({"id": "enUS", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    for code in ["frFR", "deDE", "esES"] {
        app.create_column(
            &view,
            json!({"id": code, "name": code, "type": "language", "languageCode": code,
                   "localizationType": "targetLanguage"}),
        );
    }
    app.create_column(&view, json!({"id": "note", "name": "Note", "type": "singleLine"}));
    (grid, view)
}

fn link(app: &TestApp, view: &str, source: &str, target: &str) -> Value {
    let res = app.post(
        &format!("/v1/views/{view}/dependencies"),
        &json!({"sourceColumnId": source, "targetColumnId": target}),
    );
    res.assert_status(201).clone()
}

fn depends_on(app: &TestApp, view: &str, column: &str) -> Value {
    let body = app.snapshot(&format!("/v1/views/{view}/columns/{column}"));
    body.get("dependsOn").cloned().unwrap_or(Value::Null)
}

#[test]
fn create_list_get_update_and_delete_a_dependency() {
    let app = spawn_app();
    let (grid, view) = localization_grid(&app);
    let list = format!("/v1/views/{view}/dependencies");
    let res = app.get(&list);
    assert_eq!(res.assert_status(200), &json!([]));
    assert_eq!(res.header("content-type"), Some("application/json"));

    let res = app.post(&list, &json!({"sourceColumnId": "enUS", "targetColumnId": "frFR"}));
    let created = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(created["sourceColumnId"], json!("enUS"));
    assert_eq!(created["targetColumnId"], json!("frFR"));
    let id = created["id"].as_str().expect("id").to_owned();
    assert!(!id.is_empty());
    assert_eq!(app.snapshot(&list), json!([created]));
    let one = format!("{list}/{id}");
    let res = app.get(&one);
    assert_eq!(res.assert_status(200), &created);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(depends_on(&app, &view, "frFR"), json!("enUS"));
    let columns = app.snapshot(&format!("/v1/grids/{grid}"))["columns"].clone();
    assert_eq!(columns[1]["dependsOn"], json!("enUS"));
    assert_eq!(columns[1]["isTarget"], json!(true));

    let res = app.put(&one, &json!({"sourceColumnId": "deDE"}));
    let updated = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(updated["id"], json!(id));
    assert_eq!(updated["sourceColumnId"], json!("deDE"));
    assert_eq!(updated["targetColumnId"], json!("frFR"));
    assert_eq!(app.snapshot(&one), updated);
    assert_eq!(depends_on(&app, &view, "frFR"), json!("deDE"));

    let res = app.delete(&one);
    res.assert_status(204);
    assert_eq!(res.text, "");
    app.get(&one).assert_error(404, "dependencyIsNotFound");
    assert_eq!(app.snapshot(&list), json!([]));
    assert_eq!(depends_on(&app, &view, "frFR"), Value::Null);
    app.delete(&one).assert_error(404, "dependencyIsNotFound");
    app.put(&one, &json!({"sourceColumnId": "enUS"})).assert_error(404, "dependencyIsNotFound");
}

/// A view shows the dependencies between columns it shows both, and only those: a view key
/// learns nothing of the columns its view hides, and a dependency written through a view names
/// columns it shows.
#[test]
fn a_view_shows_the_dependencies_between_its_columns() {
    let app = spawn_app();
    let (grid, view) = localization_grid(&app);
    let dep = link(&app, &view, "enUS", "frFR");
    let id = dep["id"].as_str().expect("id");
    let res = app.post(
        "/v1/views",
        &json!({"name": "fr", "gridId": grid, "columns": [{"id": "enUS"}, {"id": "frFR"}]}),
    );
    let both = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    assert_eq!(app.snapshot(&format!("/v1/views/{both}/dependencies")), json!([dep]));
    let res = app.post(
        "/v1/views",
        &json!({"name": "en", "gridId": grid, "columns": [{"id": "enUS"}, {"id": "deDE"}]}),
    );
    let source_only = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let list = format!("/v1/views/{source_only}/dependencies");
    assert_eq!(app.snapshot(&list), json!([]));
    let view_key = app.create_view_key(&source_only);
    assert_eq!(app.get_as(&view_key, &list).assert_status(200), &json!([]));
    app.get_as(&view_key, &format!("{list}/{id}")).assert_error(404, "dependencyIsNotFound");
    let before = app.snapshot(&format!("/v1/views/{view}/dependencies"));
    let res = app.post(&list, &json!({"sourceColumnId": "enUS", "targetColumnId": "esES"}));
    res.assert_error(404, "columnNotFoundInView");
    assert!(res.text.contains("esES"), "{}", res.text);
    app.put(&format!("{list}/{id}"), &json!({"sourceColumnId": "enUS"}))
        .assert_error(404, "dependencyIsNotFound");
    app.delete(&format!("{list}/{id}")).assert_error(404, "dependencyIsNotFound");
    app.delete_with(&list, &json!({"ids": [id]})).assert_error(404, "dependencyIsNotFound");
    app.assert_unchanged(&format!("/v1/views/{view}/dependencies"), &before);
    let res = app.post(&list, &json!({"sourceColumnId": "enUS", "targetColumnId": "deDE"}));
    let shown = res.assert_status(201).clone();
    assert_eq!(app.snapshot(&list), json!([shown]));
}

#[test]
fn a_cycle_is_unprocessable_and_changes_nothing() {
    let app = spawn_app();
    let (_, view) = localization_grid(&app);
    link(&app, &view, "enUS", "frFR");
    link(&app, &view, "frFR", "deDE");
    let list = format!("/v1/views/{view}/dependencies");
    let before = app.snapshot(&list);
    for (source, target) in [("deDE", "enUS"), ("frFR", "enUS"), ("esES", "esES")] {
        app.post(&list, &json!({"sourceColumnId": source, "targetColumnId": target}))
            .assert_error(422, "unprocessable");
    }
    let last = before[1]["id"].as_str().expect("id");
    app.put(&format!("{list}/{last}"), &json!({"sourceColumnId": "deDE"}))
        .assert_error(422, "unprocessable");
    app.assert_unchanged(&list, &before);
    assert_eq!(depends_on(&app, &view, "enUS"), Value::Null);
}

#[test]
fn a_second_dependency_on_a_target_conflicts() {
    let app = spawn_app();
    let (_, view) = localization_grid(&app);
    link(&app, &view, "enUS", "frFR");
    let second = link(&app, &view, "enUS", "deDE");
    let list = format!("/v1/views/{view}/dependencies");
    let before = app.snapshot(&list);
    app.post(&list, &json!({"sourceColumnId": "esES", "targetColumnId": "frFR"}))
        .assert_error(409, "dependencyAlreadyExists");
    let id = second["id"].as_str().expect("id");
    app.put(&format!("{list}/{id}"), &json!({"targetColumnId": "frFR"}))
        .assert_error(409, "dependencyAlreadyExists");
    app.assert_unchanged(&list, &before);
    assert_eq!(depends_on(&app, &view, "frFR"), json!("enUS"));
}

#[test]
fn bad_dependency_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let (grid, view) = localization_grid(&app);
    let dep = link(&app, &view, "enUS", "frFR");
    let list = format!("/v1/views/{view}/dependencies");
    let before = app.snapshot(&list);
    let grid_before = app.snapshot(&format!("/v1/grids/{grid}"));
    for body in [
        json!({"sourceColumnId": "enUS", "targetColumnId": "note"}),
        json!({"sourceColumnId": "note", "targetColumnId": "deDE"}),
        json!({"targetColumnId": "deDE"}),
        json!({"sourceColumnId": "enUS"}),
        json!({"sourceColumnId": 1, "targetColumnId": "deDE"}),
    ] {
        app.post(&list, &body).assert_error(400, "badRequest");
    }
    app.post(&list, &json!({"sourceColumnId": "enUS", "targetColumnId": "nosuchcolumn"}))
        .assert_error(404, "columnNotFoundInView");
    app.post(&list, &json!({"sourceColumnId": "nosuchcolumn", "targetColumnId": "deDE"}))
        .assert_error(404, "columnNotFoundInView");
    app.raw(Method::POST, &list, "application/json", b"{\"sourceColumnId\":".to_vec())
        .assert_error(400, "badRequest");
    app.call(Method::POST, &list, Some(&app.key), None).assert_error(400, "requestBodyMissing");
    let id = dep["id"].as_str().expect("id");
    app.put(&format!("{list}/{id}"), &json!({"sourceColumnId": "note"}))
        .assert_error(400, "badRequest");
    app.get(&format!("{list}/nosuchdependency")).assert_error(404, "dependencyIsNotFound");
    app.get("/v1/views/nosuchview0001/dependencies").assert_error(404, "viewIsNotFound");
    app.post(
        "/v1/views/nosuchview0001/dependencies",
        &json!({"sourceColumnId": "enUS", "targetColumnId": "deDE"}),
    )
    .assert_error(404, "viewIsNotFound");
    app.assert_unchanged(&list, &before);
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &grid_before);
}

#[test]
fn a_language_column_in_a_dependency_cannot_change_type() {
    let app = spawn_app();
    let (grid, view) = localization_grid(&app);
    link(&app, &view, "enUS", "frFR");
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    app.patch(&format!("/v1/views/{view}/columns/frFR"), &json!({"type": "singleLine"}))
        .assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
}

#[test]
fn dependency_writes_need_the_team_plan() {
    let app = spawn_app();
    let (company, owner, grid) = app.tier_grid("team");
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    let columns = format!("/v1/views/{view}/columns");
    for (id, kind) in [("en", "sourceLanguage"), ("fr", "targetLanguage"), ("de", "targetLanguage")]
    {
        app.post_as(
            &owner,
            &columns,
            &json!({"id": id, "name": id, "type": "language", "languageCode": id,
                    "localizationType": kind}),
        )
        .assert_status(201);
    }
    let list = format!("/v1/views/{view}/dependencies");
    let res = app.post_as(&owner, &list, &json!({"sourceColumnId": "en", "targetColumnId": "fr"}));
    let id = res.assert_status(201)["id"].as_str().expect("id").to_owned();
    let company_id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": "free"}))
        .assert_status(200);
    let before = app.get_as(&owner, &list).assert_status(200).clone();
    for res in [
        app.post_as(&owner, &list, &json!({"sourceColumnId": "en", "targetColumnId": "de"})),
        app.put_as(&owner, &format!("{list}/{id}"), &json!({"targetColumnId": "de"})),
        app.delete_as(&owner, &format!("{list}/{id}")),
    ] {
        res.assert_error(403, "accessDenied");
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains("Team")), "{}", res.text);
    }
    app.get_as(&owner, &format!("{list}/{id}")).assert_status(200);
    assert_eq!(app.get_as(&owner, &list).assert_status(200), &before);
}

#[test]
fn dependency_writes_need_the_manage_privilege_and_view_keys_stay_in_their_view() {
    let app = spawn_app();
    let (grid, view) = localization_grid(&app);
    let dep = link(&app, &view, "enUS", "frFR");
    let id = dep["id"].as_str().expect("id");
    let list = format!("/v1/views/{view}/dependencies");
    let before = app.snapshot(&list);
    let res = app.post("/v1/views", &json!({"name": "v", "gridId": grid}));
    let other = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let write = app.create_key(&["read", "write"], json!({"all": true}));
    let view_key = app.create_view_key(&view);
    for key in [&write, &view_key] {
        assert_eq!(app.get_as(key, &list).assert_status(200), &before);
        app.get_as(key, &format!("{list}/{id}")).assert_status(200);
        app.post_as(key, &list, &json!({"sourceColumnId": "enUS", "targetColumnId": "deDE"}))
            .assert_error(403, "accessDenied");
        app.put_as(key, &format!("{list}/{id}"), &json!({"targetColumnId": "deDE"}))
            .assert_error(403, "accessDenied");
        app.delete_as(key, &format!("{list}/{id}")).assert_error(403, "accessDenied");
    }
    app.get_as(&view_key, &format!("/v1/views/{other}/dependencies"))
        .assert_error(403, "accessDenied");
    for key in [None, Some("wrong-key")] {
        app.call(Method::GET, &list, key, None).assert_error(401, "unauthorized");
        app.call(Method::DELETE, &format!("{list}/{id}"), key, None)
            .assert_error(401, "unauthorized");
    }
    let (stranger, _, _) = app.create_company("enterprise");
    app.get_as(&stranger, &list).assert_error(404, "viewIsNotFound");
    app.delete_as(&stranger, &format!("{list}/{id}")).assert_error(404, "viewIsNotFound");
    app.assert_unchanged(&list, &before);
}

#[test]
fn dependencies_are_deleted_in_bulk_all_or_none() {
    let app = spawn_app();
    let (_, view) = localization_grid(&app);
    let list = format!("/v1/views/{view}/dependencies");
    let fr = link(&app, &view, "enUS", "frFR")["id"].as_str().expect("id").to_owned();
    let de = link(&app, &view, "enUS", "deDE")["id"].as_str().expect("id").to_owned();
    let es = link(&app, &view, "enUS", "esES")["id"].as_str().expect("id").to_owned();
    let before = app.snapshot(&list);

    let res = app.delete_with(&list, &json!({"ids": [fr, "nosuchdependency"]}));
    res.assert_error(404, "dependencyIsNotFound");
    for bad in [json!({"ids": []}), json!({"ids": "x"}), json!({}), json!({"ids": [fr], "x": 1})] {
        app.delete_with(&list, &bad).assert_error(400, "badRequest");
    }
    let too_many: Vec<String> = (0..1001).map(|i| format!("d{i}")).collect();
    app.delete_with(&list, &json!({ "ids": too_many })).assert_error(400, "badRequest");
    app.assert_unchanged(&list, &before);

    let res = app.delete_with(&list, &json!({"ids": [fr, de, fr]}));
    assert_eq!(res.status, 204, "{}", res.text);
    assert!(res.text.is_empty());
    let left = app.snapshot(&list);
    assert_eq!(left.as_array().map(Vec::len), Some(1), "{left}");
    assert_eq!(left[0]["id"], json!(es));
    assert_eq!(depends_on(&app, &view, "frFR"), Value::Null);
    assert_eq!(depends_on(&app, &view, "esES"), json!("enUS"));
}
