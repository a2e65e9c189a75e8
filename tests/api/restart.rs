//! The catalogue survives a restart: projects, databases, grids with metadata, companies with
//! their tier, keys (and revocations), and each grid's columns, views and dependencies.

use serde_json::json;

use crate::helpers::spawn_app;

#[test]
fn projects_databases_and_grids_survive_a_restart() {
    let app = spawn_app();
    let res = app.post("/v1/projects", &json!({"name": "Games", "description": "All games"}));
    let project = res.assert_status(200)["id"].clone();
    app.put(&format!("/v1/projects/{project}"), &json!({"name": "Games 2"})).assert_status(200);
    let res = app.post(&format!("/v1/databases?projectId={project}"), &json!({"name": "Strings"}));
    let db = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let res = app.post(
        &format!("/v1/grids?dbId={db}"),
        &json!({"name": "UI", "metadata": {"a": "1", "b": "2"}}),
    );
    let grid = res.assert_status(201)["id"].as_str().expect("id").to_owned();
    app.patch(&format!("/v1/grids/{grid}"), &json!({"name": "UI texts", "metadata": {"a": null}}))
        .assert_status(200);
    let (gone, _) = app.create_grid("Deleted");
    app.delete(&format!("/v1/grids/{gone}")).assert_status(204);
    let projects = app.snapshot("/v1/projects");
    let databases = app.snapshot("/v1/databases");
    let grids = app.snapshot(&format!("/v1/grids?dbId={db}"));
    let grid_body = app.snapshot(&format!("/v1/grids/{grid}"));

    let app = app.restart();
    app.assert_unchanged("/v1/projects", &projects);
    app.assert_unchanged("/v1/databases", &databases);
    app.assert_unchanged(&format!("/v1/grids?dbId={db}"), &grids);
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &grid_body);
    assert_eq!(grid_body["name"], json!("UI texts"));
    assert_eq!(grid_body["metadata"], json!({"b": "2"}));
    app.get(&format!("/v1/grids/{gone}")).assert_error(404, "gridIsNotFound");
}

#[test]
fn keys_and_companies_survive_a_restart() {
    let app = spawn_app();
    let reader = app.create_key(&["read"], json!({"all": true}));
    let res = app.post(
        "/admin/v1/api-keys",
        &json!({"name": "revoked", "privileges": ["read"], "access": {"all": true}}),
    );
    let revoked = res.assert_status(201).clone();
    let revoked_id = revoked["id"].as_str().expect("id");
    app.delete(&format!("/admin/v1/api-keys/{revoked_id}")).assert_status(204);
    let company = app.create_company_body("free");
    let company_id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": "team"}))
        .assert_status(200);
    let (_, view) = app.create_grid("g");
    let view_key = app.create_view_key(&view);
    let keys = app.snapshot("/admin/v1/api-keys");

    let app = app.restart();
    app.assert_unchanged("/admin/v1/api-keys", &keys);
    app.get_as(&reader, "/v1/projects").assert_status(200);
    let secret = revoked["key"].as_str().expect("secret");
    app.get_as(secret, "/v1/projects").assert_error(401, "unauthorized");
    app.get_as(&view_key, &format!("/v1/views/{view}")).assert_status(200);
    let owner = company["ownerKey"].as_str().expect("key");
    let db = company["databaseId"].as_str().expect("db");
    app.post_as(owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "t"})).assert_status(201);
}

#[test]
fn columns_views_and_dependencies_survive_a_restart() {
    let app = spawn_app();
    let (grid, default) = app.create_grid("Strings");
    app.create_column(
        &default,
        json!({"id": "enUS", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    app.create_column(
        &default,
        json!({"id": "frFR", "name": "French", "type": "language", "languageCode": "frFR",
               "localizationType": "targetLanguage"}),
    );
    app.create_column(
        &default,
        json!({"id": "state", "name": "State", "type": "singleSelection",
               "selection": {"options": [{"value": "new", "color": "sun"}]}}),
    );
    app.post(
        &format!("/v1/views/{default}/dependencies"),
        &json!({"sourceColumnId": "enUS", "targetColumnId": "frFR"}),
    )
    .assert_status(201);
    let res = app.post(
        "/v1/views",
        &json!({"name": "v", "gridId": grid, "columns": [{"id": "frFR", "editable": false}]}),
    );
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    app.create_column(&view, json!({"id": "gone", "name": "Gone", "type": "number"}));
    app.patch(&format!("/v1/views/{default}/columns/state"), &json!({"name": "Status"}))
        .assert_status(200);
    app.delete(&format!("/v1/views/{view}/columns/gone")).assert_status(204);
    let res = app.post("/v1/views", &json!({"name": "doomed", "gridId": grid}));
    let doomed = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    app.delete(&format!("/v1/views/{doomed}")).assert_status(204);
    let grid_body = app.snapshot(&format!("/v1/grids/{grid}"));
    let view_body = app.snapshot(&format!("/v1/views/{view}"));
    let deps = app.snapshot(&format!("/v1/views/{default}/dependencies"));
    let views = app.snapshot(&format!("/v1/views?gridId={grid}"));

    let app = app.restart();
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &grid_body);
    app.assert_unchanged(&format!("/v1/views/{view}"), &view_body);
    app.assert_unchanged(&format!("/v1/views/{default}/dependencies"), &deps);
    app.assert_unchanged(&format!("/v1/views?gridId={grid}"), &views);
    app.get(&format!("/v1/views/{doomed}")).assert_error(404, "viewIsNotFound");
    assert_eq!(grid_body["columns"].as_array().map(Vec::len), Some(3));
}
