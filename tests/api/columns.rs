//! `/v1/views/<viewId>/columns`: every column type with its settings, ids, views (create
//! through a view, add, remove), update, delete, and the bad cases.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{column_path, spawn_app, TestApp};

fn view_column_ids(app: &TestApp, view: &str) -> Vec<String> {
    let body = app.snapshot(&format!("/v1/views/{view}"));
    body["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect()
}

/// One request per column type, with its settings, and what the answer must contain.
fn every_type(reference_grid: &str) -> Vec<(Value, Value)> {
    vec![
        (json!({"id": "line", "name": "Line", "type": "singleLine"}), json!({})),
        (json!({"id": "lines", "name": "Lines", "type": "multipleLines"}), json!({})),
        (json!({"id": "rich", "name": "Rich", "type": "richText"}), json!({})),
        (json!({"id": "md", "name": "Markdown", "type": "markdown"}), json!({})),
        (json!({"id": "page", "name": "Page", "type": "html"}), json!({})),
        (
            json!({"id": "state", "name": "State", "type": "singleSelection",
                   "selection": {"options": [{"value": "new", "color": "atlantis"},
                                             {"value": "done", "color": "seaGreen"}]}}),
            json!({"selection": {"options": [{"value": "new", "color": "atlantis"},
                                             {"value": "done", "color": "seaGreen"}]},
                   "selectionOptions": ["new", "done"]}),
        ),
        (
            json!({"id": "tags", "name": "Tags", "type": "multipleSelections",
                   "selection": {"options": [{"value": "ui", "color": "lightLavender"},
                                             {"value": "legal", "color": "brightRed"},
                                             {"value": "misc"}]}}),
            json!({"selection": {"options": [{"value": "ui", "color": "lightLavender"},
                                             {"value": "legal", "color": "brightRed"},
                                             {"value": "misc"}]},
                   "selectionOptions": ["ui", "legal", "misc"]}),
        ),
        (json!({"id": "done", "name": "Done", "type": "boolean"}), json!({})),
        (
            json!({"id": "price", "name": "Price", "type": "number",
                   "numberFormat": {"type": "decimal", "decimalPlaces": 2,
                                    "currencySymbol": "€", "use1000Separator": true}}),
            json!({"numberFormat": {"type": "decimal", "decimalPlaces": 2,
                                    "currencySymbol": "€", "use1000Separator": true}}),
        ),
        (
            json!({"id": "count", "name": "Count", "type": "number",
                   "numberFormat": {"type": "integer"}}),
            json!({"numberFormat": {"type": "integer"}}),
        ),
        (json!({"id": "due", "name": "Due", "type": "datetime"}), json!({})),
        (json!({"id": "shots", "name": "Screenshots", "type": "files"}), json!({})),
        (
            json!({"id": "link", "name": "Link", "type": "reference",
                   "reference": {"gridId": reference_grid, "columnId": "title", "type": "row"}}),
            json!({"reference": {"gridId": reference_grid, "columnId": "title", "type": "row"}}),
        ),
        (
            json!({"id": "enUS", "name": "English", "type": "language", "languageCode": "enUS",
                   "localizationType": "sourceLanguage"}),
            json!({"languageCode": "enUS", "localizationType": "sourceLanguage",
                   "isSource": true, "isTarget": false}),
        ),
        (
            json!({"id": "frFR", "name": "French", "type": "language", "languageCode": "frFR",
                   "localizationType": "targetLanguage"}),
            json!({"languageCode": "frFR", "localizationType": "targetLanguage",
                   "isSource": false, "isTarget": true}),
        ),
        (
            json!({"id": "total", "name": "Total", "type": "formula",
                   "formula": {"formulaText": "[price] * [count]"}}),
            json!({"formula": {"formulaText": "[price] * [count]"}}),
        ),
        (json!({"id": "meta", "name": "Meta", "type": "json"}), json!({})),
        (json!({"id": "conf", "name": "Conf", "type": "yaml"}), json!({})),
        (json!({"id": "owner", "name": "Owner", "type": "user"}), json!({})),
    ]
}

/// Asserts that every field of `expected` is in `actual` with the same value (objects are
/// compared field by field, so the answer may carry more).
#[track_caller]
fn assert_contains(actual: &Value, expected: &Value) {
    match expected {
        Value::Object(fields) => {
            for (name, value) in fields {
                assert_contains(&actual[name], value);
            }
        }
        other => assert_eq!(actual, other),
    }
}

#[test]
fn every_column_type_is_created_with_its_settings_and_read_back() {
    let app = spawn_app();
    let (target, target_view) = app.create_grid("Glossary");
    app.create_column(&target_view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    let (grid, view) = app.create_grid("Everything");
    let mut created = Vec::new();
    let types = every_type(&target);
    for (request, expected) in &types {
        let res = app.post(&format!("/v1/views/{view}/columns"), request);
        let body = res.assert_status(201).clone();
        assert_eq!(res.header("content-type"), Some("application/json"));
        assert_eq!(body["id"], request["id"]);
        assert_eq!(body["name"], request["name"]);
        assert_eq!(body["type"], request["type"]);
        assert_contains(&body, expected);
        if request["type"] != json!("language") {
            assert_eq!(body["isSource"], json!(false), "{body}");
            assert_eq!(body["isTarget"], json!(false), "{body}");
        }
        let id = body["id"].as_str().expect("id");
        assert_eq!(app.snapshot(&column_path(&view, id)), body, "GET column {id}");
        created.push(body);
    }
    let kinds: std::collections::BTreeSet<&str> =
        types.iter().map(|(r, _)| r["type"].as_str().expect("type")).collect();
    assert_eq!(kinds.len(), 17, "all seventeen column types");
    let grid_body = app.snapshot(&format!("/v1/grids/{grid}"));
    assert_eq!(grid_body["columns"], Value::Array(created.clone()));
    let view_body = app.snapshot(&format!("/v1/views/{view}"));
    assert_eq!(view_body["columns"], Value::Array(created));
}

/// A user column (decisions 12) holds a company user's name or a list of them: a name is
/// read back as a list of one, an empty cell as `[]`; anything but names is refused.
#[test]
fn a_user_column_holds_user_names() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Owners");
    app.create_column(&view, json!({"id": "owner", "name": "Owner", "type": "user"}));
    let records = json!([
        {"id": "a", "cells": [{"columnId": "owner", "value": "alice@studio.example"}]},
        {"id": "b", "cells": [{"columnId": "owner", "value": ["bob", "chloé"]}]},
        {"id": "c", "cells": [{"columnId": "owner", "value": null}]},
    ]);
    app.post(&format!("/v1/views/{view}/records"), &records).assert_status(201);
    let values = |app: &TestApp| -> Vec<Value> {
        let listed = app.get(&format!("/v1/views/{view}/records")).assert_status(200).clone();
        listed.as_array().expect("records").iter().map(|r| r["cells"][0]["value"].clone()).collect()
    };
    let expected = vec![json!(["alice@studio.example"]), json!(["bob", "chloé"]), json!([])];
    assert_eq!(values(&app), expected);
    for bad in [json!(5), json!(true), json!({"name": "x"}), json!([1])] {
        let body = json!([{"id": "a", "cells": [{"columnId": "owner", "value": bad}]}]);
        app.patch(&format!("/v1/views/{view}/records"), &body).assert_error(400, "badRequest");
    }
    let query = serde_urlencoded::to_string([("query", r#"{"owner": {"contains": "bob"}}"#)])
        .expect("encodes");
    let found = app.get(&format!("/v1/views/{view}/records?{query}"));
    assert_eq!(found.assert_status(200).as_array().map(Vec::len), Some(1));
    let app = app.restart();
    assert_eq!(values(&app), expected);
}

#[test]
fn the_deprecated_selection_options_list_is_accepted() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let body = app.create_column(
        &view,
        json!({"id": "s", "name": "S", "type": "singleSelection", "selectionOptions": ["a", "b"]}),
    );
    assert_eq!(body["selectionOptions"], json!(["a", "b"]));
    let values: Vec<&Value> = body["selection"]["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| &o["value"])
        .collect();
    assert_eq!(values, vec!["a", "b"]);
}

#[test]
fn a_reference_column_names_its_target() {
    let app = spawn_app();
    let (target, target_view) = app.create_grid("Glossary");
    app.create_column(&target_view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    let (_, view) = app.create_grid("Strings");
    let body = app.create_column(
        &view,
        json!({"id": "link", "name": "Link", "type": "reference",
               "reference": {"gridId": target, "columnId": "title", "type": "cell"}}),
    );
    assert_eq!(body["reference"]["gridId"], json!(target));
    assert_eq!(body["reference"]["columnId"], json!("title"));
    assert_eq!(body["reference"]["type"], json!("cell"));
    assert_eq!(body["reference"]["grid"]["name"], json!("Glossary"));
    assert_eq!(body["reference"]["column"]["name"], json!("Title"));
    assert_eq!(body["reference"]["column"]["type"], json!("singleLine"));
}

#[test]
fn reference_names_are_shown_in_grids_and_views() {
    let app = spawn_app();
    let (target, target_view) = app.create_grid("Glossary");
    app.create_column(&target_view, json!({"id": "term", "name": "Term", "type": "markdown"}));
    let (grid, view) = app.create_grid("Strings");
    app.create_column(
        &view,
        json!({"id": "link", "name": "Link", "type": "reference",
               "reference": {"gridId": target, "columnId": "term"}}),
    );
    let from_grid = app.snapshot(&format!("/v1/grids/{grid}"))["columns"][0]["reference"].clone();
    let from_view = app.snapshot(&format!("/v1/views/{view}"))["columns"][0]["reference"].clone();
    for reference in [&from_grid, &from_view] {
        assert_eq!(reference["gridId"], json!(target));
        assert_eq!(reference["type"], json!("row"), "row is the default reference type");
        assert_eq!(reference["grid"]["name"], json!("Glossary"));
        assert_eq!(reference["column"]["name"], json!("Term"));
        assert_eq!(reference["column"]["type"], json!("markdown"));
    }
    app.patch(&format!("/v1/grids/{target}"), &json!({"name": "Terms"})).assert_status(200);
    let renamed = app.snapshot(&column_path(&view, "link"));
    assert_eq!(renamed["reference"]["grid"]["name"], json!("Terms"), "names are looked up live");
}

#[test]
fn a_reference_to_a_missing_or_foreign_target_is_refused() {
    let app = spawn_app();
    let db = app.default_db();
    let (target, target_view) = app.create_grid("Glossary");
    app.create_column(&target_view, json!({"id": "term", "name": "Term", "type": "singleLine"}));
    let (other, _, their_db) = app.create_company("enterprise");
    let res = app.post_as(&other, &format!("/v1/grids?dbId={their_db}"), &json!({"name": "t"}));
    let theirs = res.assert_status(201).clone();
    let their_view = theirs["defaultAccessViewId"].as_str().expect("view");
    app.post_as(
        &other,
        &format!("/v1/views/{their_view}/columns"),
        &json!({"id": "term", "name": "T", "type": "singleLine"}),
    )
    .assert_status(201);
    let (grid, view) = app.create_grid("Strings");
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    for reference in [
        json!({"gridId": "nosuchgrid0001", "columnId": "term"}),
        json!({"gridId": target, "columnId": "nosuchcolumn"}),
        json!({"gridId": target, "branchId": grid, "columnId": "term"}),
        json!({"gridId": theirs["id"], "columnId": "term"}),
    ] {
        let body =
            json!({"id": "link", "name": "Link", "type": "reference", "reference": reference});
        app.post(&format!("/v1/views/{view}/columns"), &body).assert_error(400, "badRequest");
        let create = json!({"name": "with a bad reference", "columns": [body]});
        app.post(&format!("/v1/grids?dbId={db}"), &create).assert_error(400, "badRequest");
    }
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
    assert_eq!(app.snapshot(&format!("/v1/grids?dbId={db}")).as_array().map(Vec::len), Some(2));
    app.create_column(&view, json!({"id": "line", "name": "Line", "type": "singleLine"}));
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    app.patch(
        &column_path(&view, "line"),
        &json!({"type": "reference", "reference": {"gridId": target, "columnId": "nosuchcolumn"}}),
    )
    .assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
    let res = app.patch(
        &column_path(&view, "line"),
        &json!({"type": "reference", "reference": {"gridId": target, "columnId": "term"}}),
    );
    assert_eq!(res.assert_status(200)["reference"]["column"]["name"], json!("Term"));
}

#[test]
fn generated_and_given_column_ids() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let generated = app.create_column(&view, json!({"name": "Anon", "type": "singleLine"}));
    let id = generated["id"].as_str().expect("id");
    assert_eq!(id.len(), 14);
    assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    let given =
        app.create_column(&view, json!({"id": "Key_1", "name": "Key", "type": "singleLine"}));
    assert_eq!(given["id"], json!("Key_1"));
    app.snapshot(&column_path(&view, "Key_1"));
}

#[test]
fn duplicate_or_invalid_column_ids_are_refused() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    let long = "a".repeat(101);
    for id in ["title", "_recordId", "_x", "a-b", "a b", "é", "", long.as_str()] {
        let res = app.post(
            &format!("/v1/views/{view}/columns"),
            &json!({"id": id, "name": "X", "type": "singleLine"}),
        );
        res.assert_error(400, "invalidColumnId");
        app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
    }
    app.create_column(&view, json!({"id": "other", "name": "Other", "type": "number"}));
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    app.patch(&column_path(&view, "other"), &json!({"id": "title"}))
        .assert_error(400, "invalidColumnId");
    app.patch(&column_path(&view, "other"), &json!({"id": "bad id"}))
        .assert_error(400, "invalidColumnId");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
}

#[test]
fn invalid_column_settings_are_refused_and_change_nothing() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    let before_view = app.snapshot(&format!("/v1/views/{view}"));
    let bad = [
        json!({"name": "x", "type": "lookup"}),
        // A setting the type does not use is still refused when no column takes its value.
        json!({"name": "x", "type": "singleLine",
               "selection": {"options": [{"value": "a", "color": "bad"}]}}),
        json!({"name": "x", "type": "singleLine", "numberFormat": {"type": "zzz"}}),
        json!({"name": "x", "type": "singleLine", "localizationType": "bogus"}),
        json!({"name": "x", "type": "SingleLine"}),
        json!({"name": "x", "type": 3}),
        json!({"name": "x"}),
        json!({"type": "singleLine"}),
        json!({"name": "", "type": "singleLine"}),
        json!({"name": "x".repeat(256), "type": "singleLine"}),
        json!({"name": "x", "type": "singleSelection",
               "selection": {"options": [{"value": "a", "color": "pink"}]}}),
        json!({"name": "x", "type": "multipleSelections",
               "selection": {"options": [{"value": "a", "color": "red"}]}}),
        json!({"name": "x", "type": "singleSelection",
               "selection": {"options": [{"value": "a"}, {"value": "a"}]}}),
        json!({"name": "x", "type": "language"}),
        json!({"name": "x", "type": "language", "languageCode": "enUS",
               "localizationType": "pivotLanguage"}),
        json!({"name": "x", "type": "language", "languageCode": "en-US"}),
        json!({"name": "x", "type": "language", "languageCode": ""}),
        json!({"name": "x", "type": "number", "numberFormat": {"type": "float"}}),
        json!({"name": "x", "type": "formula"}),
        json!({"name": "x", "type": "formula", "formula": {"formulaText": "[missing] + 1"}}),
        json!({"name": "x", "type": "formula", "formula": {"formulaText": ""}}),
        json!({"name": "x", "type": "reference"}),
        json!({"name": "x", "type": "reference", "reference": {"columnId": "c"}}),
        json!({"name": "x", "type": "reference", "reference": {"gridId": grid}}),
        json!({"name": "x", "type": "reference",
               "reference": {"gridId": grid, "columnId": "c", "type": "table"}}),
    ];
    for body in bad {
        let res = app.post(&format!("/v1/views/{view}/columns"), &body);
        assert_eq!(res.status, 400, "{body} -> {}", res.text);
        res.assert_error(400, "badRequest");
    }
    app.raw(Method::POST, &format!("/v1/views/{view}/columns"), "application/json", b"{".to_vec())
        .assert_error(400, "badRequest");
    app.call(Method::POST, &format!("/v1/views/{view}/columns"), Some(&app.key), None)
        .assert_error(400, "requestBodyMissing");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
    app.assert_unchanged(&format!("/v1/views/{view}"), &before_view);
    // Likewise on an update: the rename given beside a bad color is not made.
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    let bad = json!({"name": "T2", "selection": {"options": [{"value": "a", "color": "bad"}]}});
    app.patch(&column_path(&view, "t"), &bad).assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
}

#[test]
fn a_column_created_through_a_view_is_in_that_view_and_the_grid() {
    let app = spawn_app();
    let (grid, default) = app.create_grid("g");
    app.create_column(&default, json!({"id": "a", "name": "A", "type": "singleLine"}));
    let make_view = |name: &str| {
        let res =
            app.post("/v1/views", &json!({"name": name, "gridId": grid, "columns": [{"id": "a"}]}));
        res.assert_status(200)["id"].as_str().expect("id").to_owned()
    };
    let (one, two) = (make_view("one"), make_view("two"));
    let created = app.create_column(&one, json!({"id": "b", "name": "B", "type": "number"}));
    assert_eq!(created["editable"], json!(true));
    assert_eq!(view_column_ids(&app, &one), vec!["a", "b"]);
    assert_eq!(view_column_ids(&app, &default), vec!["a", "b"]);
    assert_eq!(view_column_ids(&app, &two), vec!["a"], "other views are not changed");
    let grid_columns = app.snapshot(&format!("/v1/grids/{grid}"))["columns"].clone();
    assert_eq!(grid_columns[1], created);
    app.get(&column_path(&two, "b")).assert_error(404, "columnNotFoundInView");

    let locked = app.create_column(
        &one,
        json!({"id": "c", "name": "C", "type": "singleLine", "editable": false}),
    );
    assert_eq!(locked["editable"], json!(false));
    assert_eq!(app.snapshot(&column_path(&default, "c"))["editable"], json!(true));
}

#[test]
fn add_and_remove_a_column_from_a_view() {
    let app = spawn_app();
    let (grid, default) = app.create_grid("g");
    for id in ["a", "b"] {
        app.create_column(&default, json!({"id": id, "name": id, "type": "singleLine"}));
    }
    let res =
        app.post("/v1/views", &json!({"name": "v", "gridId": grid, "columns": [{"id": "a"}]}));
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();

    let res =
        app.call(Method::POST, &format!("{}/add", column_path(&view, "b")), Some(&app.key), None);
    let added = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(added["id"], json!("b"));
    assert_eq!(added["type"], json!("singleLine"));
    assert_eq!(view_column_ids(&app, &view), vec!["a", "b"]);
    assert_eq!(app.snapshot(&column_path(&view, "b")), added);

    let res = app.call(
        Method::POST,
        &format!("{}/remove", column_path(&view, "a")),
        Some(&app.key),
        None,
    );
    res.assert_status(200);
    assert_eq!(view_column_ids(&app, &view), vec!["b"]);
    assert_eq!(view_column_ids(&app, &default), vec!["a", "b"], "the grid keeps the column");
    app.get(&column_path(&view, "a")).assert_error(404, "columnNotFoundInView");

    let before = app.snapshot(&format!("/v1/views/{view}"));
    let post = |path: String| app.call(Method::POST, &path, Some(&app.key), None);
    post(format!("{}/remove", column_path(&view, "a"))).assert_error(404, "columnNotFoundInView");
    post(format!("{}/add", column_path(&view, "nosuchcolumn")))
        .assert_error(404, "columnNotFoundInView");
    post(format!("{}/add", column_path("nosuchview0001", "a"))).assert_error(404, "viewIsNotFound");
    app.assert_unchanged(&format!("/v1/views/{view}"), &before);
    let default_before = app.snapshot(&format!("/v1/views/{default}"));
    post(format!("{}/remove", column_path(&default, "a"))).assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/views/{default}"), &default_before);
}

#[test]
fn adding_and_removing_view_columns_needs_the_enterprise_plan() {
    let app = spawn_app();
    let (company, owner, grid) = app.tier_grid("team");
    let (grid_id, default) =
        (grid["id"].as_str().expect("id"), grid["defaultAccessViewId"].as_str().expect("view"));
    for id in ["a", "b"] {
        app.post_as(
            &owner,
            &format!("/v1/views/{default}/columns"),
            &json!({"id": id, "name": id, "type": "singleLine"}),
        )
        .assert_status(201);
    }
    let res = app.post_as(
        &owner,
        "/v1/views",
        &json!({"name": "v", "gridId": grid_id, "columns": [{"id": "a"}]}),
    );
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let before = app.get_as(&owner, &format!("/v1/views/{view}")).assert_status(200).clone();
    for action in ["b/add", "a/remove"] {
        let res = app.call(
            Method::POST,
            &format!("/v1/views/{view}/columns/{action}"),
            Some(&owner),
            None,
        );
        res.assert_error(403, "accessDenied");
        assert!(
            res.body["message"].as_str().is_some_and(|m| m.contains("Enterprise")),
            "{}",
            res.text
        );
    }
    assert_eq!(app.get_as(&owner, &format!("/v1/views/{view}")).assert_status(200), &before);
    let company_id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": "enterprise"}))
        .assert_status(200);
    app.call(Method::POST, &format!("/v1/views/{view}/columns/b/add"), Some(&owner), None)
        .assert_status(200);
}

#[test]
fn column_writes_need_the_team_plan() {
    let app = spawn_app();
    let (company, owner, grid) = app.tier_grid("team");
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.post_as(
        &owner,
        &format!("/v1/views/{view}/columns"),
        &json!({"id": "a", "name": "A", "type": "singleLine"}),
    )
    .assert_status(201);
    let company_id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": "free"}))
        .assert_status(200);
    let before = app.get_as(&owner, &format!("/v1/views/{view}")).assert_status(200).clone();
    for res in [
        app.post_as(
            &owner,
            &format!("/v1/views/{view}/columns"),
            &json!({"name": "B", "type": "singleLine"}),
        ),
        app.patch_as(&owner, &column_path(&view, "a"), &json!({"name": "A2"})),
        app.delete_as(&owner, &column_path(&view, "a")),
        app.call(Method::POST, &format!("{}/add", column_path(&view, "a")), Some(&owner), None),
    ] {
        res.assert_error(403, "accessDenied");
        let message = res.body["message"].as_str().unwrap_or_default();
        assert!(message.contains("Team") || message.contains("Enterprise"), "{}", res.text);
    }
    app.get_as(&owner, &column_path(&view, "a")).assert_status(200);
    assert_eq!(app.get_as(&owner, &format!("/v1/views/{view}")).assert_status(200), &before);
}

#[test]
fn update_a_column() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    app.create_column(
        &view,
        json!({"id": "price", "name": "Price", "type": "number", "numberFormat": {"type": "decimal", "decimalPlaces": 2}}),
    );
    let res = app.patch(
        &column_path(&view, "price"),
        &json!({"name": "Cost", "numberFormat": {"type": "integer"}, "description": "in cents"}),
    );
    let updated = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(updated["name"], json!("Cost"));
    assert_eq!(updated["type"], json!("number"));
    assert_eq!(updated["numberFormat"]["type"], json!("integer"));
    assert_eq!(updated["description"], json!("in cents"));
    assert_eq!(app.snapshot(&column_path(&view, "price")), updated);

    let res = app.patch(&column_path(&view, "price"), &json!({"id": "cost"}));
    assert_eq!(res.assert_status(200)["id"], json!("cost"));
    app.get(&column_path(&view, "price")).assert_error(404, "columnNotFoundInView");
    assert_eq!(app.snapshot(&column_path(&view, "cost"))["name"], json!("Cost"));

    app.create_column(
        &view,
        json!({"id": "state", "name": "State", "type": "singleSelection",
               "selection": {"options": [{"value": "a", "color": "sun"}]}}),
    );
    let res = app.patch(
        &column_path(&view, "state"),
        &json!({"selection": {"options": [{"value": "a", "color": "sun"}, {"value": "b", "color": "froly"}]}}),
    );
    assert_eq!(res.assert_status(200)["selectionOptions"], json!(["a", "b"]));

    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    for body in [
        json!({"name": ""}),
        json!({"type": "lookup"}),
        json!({"selection": {"options": [{"value": "c", "color": "beige"}]}}),
        json!({"numberFormat": {"type": "real"}}),
    ] {
        let column = if body.get("selection").is_some() { "state" } else { "cost" };
        app.patch(&column_path(&view, column), &body).assert_error(400, "badRequest");
    }
    app.patch(&column_path(&view, "nosuchcolumn"), &json!({"name": "x"}))
        .assert_error(404, "columnNotFoundInView");
    app.patch(&column_path("nosuchview0001", "cost"), &json!({"name": "x"}))
        .assert_error(404, "viewIsNotFound");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
}

#[test]
fn delete_a_column_removes_it_from_views_and_dependencies() {
    let app = spawn_app();
    let (grid, default) = app.create_grid("g");
    app.create_column(
        &default,
        json!({"id": "enUS", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    app.create_column(
        &default,
        json!({"id": "frFR", "name": "French", "type": "language", "languageCode": "frFR", "localizationType": "targetLanguage"}),
    );
    app.create_column(&default, json!({"id": "note", "name": "Note", "type": "singleLine"}));
    app.post(
        &format!("/v1/views/{default}/dependencies"),
        &json!({"sourceColumnId": "enUS", "targetColumnId": "frFR"}),
    )
    .assert_status(201);
    let res = app.post(
        "/v1/views",
        &json!({"name": "v", "gridId": grid, "columns": [{"id": "enUS"}, {"id": "note"}]}),
    );
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();

    let res = app.delete(&column_path(&view, "enUS"));
    res.assert_status(204);
    assert_eq!(res.text, "");
    assert_eq!(view_column_ids(&app, &view), vec!["note"]);
    assert_eq!(view_column_ids(&app, &default), vec!["frFR", "note"]);
    assert_eq!(app.snapshot(&format!("/v1/views/{default}/dependencies")), json!([]));
    let target = app.snapshot(&column_path(&default, "frFR"));
    assert!(target.get("dependsOn").is_none_or(Value::is_null), "{target}");
    app.get(&column_path(&default, "enUS")).assert_error(404, "columnNotFoundInView");

    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    app.delete(&column_path(&view, "enUS")).assert_error(404, "columnNotFoundInView");
    app.delete(&column_path(&view, "frFR")).assert_error(404, "columnNotFoundInView");
    app.delete(&column_path("nosuchview0001", "note")).assert_error(404, "viewIsNotFound");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
    app.delete(&column_path(&default, "frFR")).assert_status(204);
    assert_eq!(view_column_ids(&app, &default), vec!["note"]);
}

#[test]
fn get_a_column_of_a_view() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let created = app.create_column(&view, json!({"id": "a", "name": "A", "type": "markdown"}));
    let res = app.get(&column_path(&view, "a"));
    assert_eq!(res.assert_status(200), &created);
    assert_eq!(res.header("content-type"), Some("application/json"));
    app.get(&column_path(&view, "nosuchcolumn")).assert_error(404, "columnNotFoundInView");
    app.get(&column_path("nosuchview0001", "a")).assert_error(404, "viewIsNotFound");
}

#[test]
fn column_writes_need_the_manage_privilege_and_view_keys_stay_in_their_view() {
    let app = spawn_app();
    let (grid, default) = app.create_grid("g");
    app.create_column(&default, json!({"id": "a", "name": "A", "type": "singleLine"}));
    let res =
        app.post("/v1/views", &json!({"name": "v", "gridId": grid, "columns": [{"id": "a"}]}));
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    let write = app.create_key(&["read", "write"], json!({"all": true}));
    let view_key = app.create_view_key(&view);
    for key in [&write, &view_key] {
        app.get_as(key, &column_path(&view, "a")).assert_status(200);
        app.post_as(
            key,
            &format!("/v1/views/{view}/columns"),
            &json!({"name": "B", "type": "singleLine"}),
        )
        .assert_error(403, "accessDenied");
        app.patch_as(key, &column_path(&view, "a"), &json!({"name": "x"}))
            .assert_error(403, "accessDenied");
        app.delete_as(key, &column_path(&view, "a")).assert_error(403, "accessDenied");
        app.call(Method::POST, &format!("{}/remove", column_path(&view, "a")), Some(key), None)
            .assert_error(403, "accessDenied");
    }
    app.get_as(&view_key, &column_path(&default, "a")).assert_error(403, "accessDenied");
    app.post_as(
        &view_key,
        &format!("/v1/views/{default}/columns"),
        &json!({"name": "B", "type": "singleLine"}),
    )
    .assert_error(403, "accessDenied");
    for key in [None, Some("wrong-key")] {
        app.call(Method::GET, &column_path(&view, "a"), key, None)
            .assert_error(401, "unauthorized");
        app.call(
            Method::POST,
            &format!("/v1/views/{view}/columns"),
            key,
            Some(&json!({"name": "B", "type": "singleLine"})),
        )
        .assert_error(401, "unauthorized");
        app.call(Method::DELETE, &column_path(&view, "a"), key, None)
            .assert_error(401, "unauthorized");
    }
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
}

#[test]
fn another_company_cannot_see_or_touch_our_columns() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    app.create_column(&view, json!({"id": "a", "name": "A", "type": "singleLine"}));
    let before = app.snapshot(&format!("/v1/grids/{grid}"));
    let (other, _, _) = app.create_company("enterprise");
    app.get_as(&other, &column_path(&view, "a")).assert_error(404, "viewIsNotFound");
    app.post_as(
        &other,
        &format!("/v1/views/{view}/columns"),
        &json!({"name": "B", "type": "singleLine"}),
    )
    .assert_error(404, "viewIsNotFound");
    app.patch_as(&other, &column_path(&view, "a"), &json!({"name": "x"}))
        .assert_error(404, "viewIsNotFound");
    app.delete_as(&other, &column_path(&view, "a")).assert_error(404, "viewIsNotFound");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &before);
}

#[test]
fn columns_are_created_in_bulk_all_or_none() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("Bulk");
    let bulk = format!("/v1/views/{view}/columns/bulk");
    let res = app.post(
        &bulk,
        &json!([
            {"id": "en", "name": "English", "type": "language", "languageCode": "enUS"},
            {"name": "Count", "type": "number"},
            {"id": "shout", "name": "Shout", "type": "formula",
             "formula": {"formulaText": "UPPER([en])"}},
        ]),
    );
    let created = res.assert_status(201).as_array().expect("columns").clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(created.len(), 3);
    assert_eq!(created[0]["id"], json!("en"));
    assert_eq!(created[1]["name"], json!("Count"));
    assert_eq!(created[2]["type"], json!("formula"));
    let count_id = created[1]["id"].as_str().expect("a generated id").to_owned();
    assert_eq!(
        app.snapshot(&column_path(&view, &count_id))["type"],
        json!("number"),
        "a bulk column reads back like any other"
    );
    let ids = view_column_ids(&app, &view);
    let grid_before = app.snapshot(&format!("/v1/grids/{grid}"));
    for bad in [
        json!([]),
        json!({"name": "x", "type": "singleLine"}),
        json!([{"name": "ok", "type": "singleLine"}, {"name": "bad", "type": "nosuchtype"}]),
        json!([{"id": "dup", "name": "a", "type": "singleLine"},
               {"id": "dup", "name": "b", "type": "singleLine"}]),
        json!([{"id": "en", "name": "again", "type": "singleLine"}]),
        json!([{"name": "f", "type": "formula", "formula": {"formulaText": "[nosuch]"}}]),
    ] {
        let res = app.post(&bulk, &bad);
        assert_eq!(res.status, 400, "{bad}: {}", res.text);
        assert!(["badRequest", "invalidColumnId"].contains(&res.code()), "{bad}: {}", res.text);
    }
    let too_many: Vec<Value> =
        (0..1001).map(|i| json!({"name": format!("c{i}"), "type": "singleLine"})).collect();
    app.post(&bulk, &Value::Array(too_many)).assert_error(400, "badRequest");
    assert_eq!(view_column_ids(&app, &view), ids, "a refused bulk create adds nothing");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &grid_before);
    let message = app
        .post(&bulk, &json!([{"name": "ok", "type": "singleLine"}, {"name": "bad", "type": "x"}]));
    assert!(message.text.contains("columns[1]"), "the refusal names its index: {}", message.text);
}
