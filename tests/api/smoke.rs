//! The walk-through of the README works end to end.

use serde_json::json;

use crate::helpers::spawn_app;

#[test]
fn empty_server_to_grid_with_columns() {
    let app = spawn_app();
    assert_eq!(app.call(reqwest::Method::GET, "/healthz", None, None).status, 200);
    let (grid, view) = app.create_grid("Strings");
    app.create_column(
        &view,
        json!({"id": "enUS", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    app.create_column(
        &view,
        json!({"id": "frFR", "name": "French", "type": "language", "languageCode": "frFR",
               "localizationType": "targetLanguage"}),
    );
    let dep = app.post(
        &format!("/v1/views/{view}/dependencies"),
        &json!({"sourceColumnId": "enUS", "targetColumnId": "frFR"}),
    );
    dep.assert_status(201);
    let grid_body = app.get(&format!("/v1/grids/{grid}"));
    let columns = grid_body.assert_status(200)["columns"].as_array().expect("columns").clone();
    assert_eq!(columns.len(), 2);
    assert_eq!(columns[1]["dependsOn"], json!("enUS"));
    assert_eq!(columns[1]["isTarget"], json!(true));
}

#[test]
fn catalogue_survives_a_restart() {
    let app = spawn_app();
    let (grid, _) = app.create_grid("Kept");
    let app = app.restart();
    let res = app.get(&format!("/v1/grids/{grid}"));
    assert_eq!(res.assert_status(200)["name"], json!("Kept"));
}
