//! `/v1/views`: list by grid or branch, get with columns, create with columns and editable
//! flags, delete; tiers, privileges, view keys and tenancy.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// A grid with columns a, b and c: (grid id, default view id).
fn grid_with_columns(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Strings");
    for id in ["a", "b", "c"] {
        app.create_column(
            &view,
            json!({"id": id, "name": id.to_uppercase(), "type": "singleLine"}),
        );
    }
    (grid, view)
}

fn column_ids(view: &Value) -> Vec<(String, bool)> {
    view["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| {
            (c["id"].as_str().expect("id").to_owned(), c["editable"].as_bool().expect("editable"))
        })
        .collect()
}

fn pairs(list: &[(&str, bool)]) -> Vec<(String, bool)> {
    list.iter().map(|(id, e)| ((*id).to_owned(), *e)).collect()
}

#[test]
fn list_views_by_grid_or_branch() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("Strings");
    let res = app.get(&format!("/v1/views?gridId={grid}"));
    let list = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["id"], json!(view));
    assert!(list[0]["name"].is_string());
    assert_eq!(app.snapshot(&format!("/v1/views?branchId={grid}")), list);
    app.get("/v1/views").assert_error(400, "requestParameterMissing");
    app.get("/v1/views?gridId=").assert_error(400, "requestParameterMissing");
    app.get("/v1/views?gridId=nosuchgrid0001").assert_error(404, "gridIsNotFound");
    app.get("/v1/views?branchId=nosuchbranch01").assert_error(404, "branchIsNotFound");
}

/// `type` keeps the views of one OpenAPI view type: the default view is the `defaultView`, a
/// view made with `POST /v1/views` an `accessView`; the types gridd never makes list nothing,
/// and an unknown one is refused.
#[test]
fn list_views_of_one_type() {
    let app = spawn_app();
    let (grid, default) = grid_with_columns(&app);
    let res =
        app.post("/v1/views", &json!({"name": "QA", "gridId": grid, "columns": [{"id": "a"}]}));
    let made = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let ids = |query: &str| -> Vec<String> {
        let list = app.get(&format!("/v1/views?gridId={grid}{query}"));
        (list.assert_status(200).as_array().expect("a list").iter())
            .map(|v| v["id"].as_str().expect("id").to_owned())
            .collect()
    };
    assert_eq!(ids(""), [default.as_str(), made.as_str()]);
    assert_eq!(ids("&type="), [default.as_str(), made.as_str()]);
    assert_eq!(ids("&type=defaultView"), [default.as_str()]);
    assert_eq!(ids("&type=accessView"), [made.as_str()]);
    for kind in ["userView", "workflowView", "widgetView"] {
        assert_eq!(ids(&format!("&type={kind}")), Vec::<String>::new(), "{kind}");
    }
    let by_branch = app.get(&format!("/v1/views?branchId={grid}&type=accessView"));
    assert_eq!(by_branch.assert_status(200)[0]["id"], json!(made));
    let full = app.snapshot(&format!("/v1/views?gridId={grid}&type=accessView"));
    assert_eq!(full[0], app.snapshot(&format!("/v1/views/{made}")), "the same body as a get");

    for bad in ["personalView", "DEFAULTVIEW", "default"] {
        let res = app.get(&format!("/v1/views?gridId={grid}&type={bad}"));
        res.assert_error(400, "badRequest");
        let message = res.body["message"].as_str().expect("message");
        assert!(message.contains(bad) && message.contains("accessView"), "{message}");
    }
}

#[test]
fn get_a_view_with_its_columns() {
    let app = spawn_app();
    let (grid, view) = grid_with_columns(&app);
    let res = app.get(&format!("/v1/views/{view}"));
    let body = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(body["id"], json!(view));
    assert_eq!(body["gridId"], json!(grid));
    assert_eq!(body["gridStatus"], json!("active"));
    assert!(body["name"].is_string());
    assert_eq!(column_ids(&body), pairs(&[("a", true), ("b", true), ("c", true)]));
    assert_eq!(body["columns"][1]["name"], json!("B"));
    assert_eq!(body["columns"][1]["type"], json!("singleLine"));
    app.get("/v1/views/nosuchview0001").assert_error(404, "viewIsNotFound");
}

#[test]
fn create_a_view_with_columns_and_editable_flags() {
    let app = spawn_app();
    let (grid, _) = grid_with_columns(&app);
    let res = app.post(
        "/v1/views",
        &json!({"name": "Translators", "gridId": grid,
                "columns": [{"id": "c"}, {"id": "a", "editable": false}]}),
    );
    let created = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(id.len(), 14);
    assert_eq!(created["name"], json!("Translators"));
    assert_eq!(created["gridId"], json!(grid));
    assert_eq!(column_ids(&created), pairs(&[("c", true), ("a", false)]));
    assert_eq!(app.snapshot(&format!("/v1/views/{id}")), created);
    let list = app.snapshot(&format!("/v1/views?gridId={grid}"));
    let ids: Vec<&Value> = list.as_array().expect("list").iter().map(|v| &v["id"]).collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[1], &json!(id));

    let empty = app.post("/v1/views", &json!({"name": "Empty", "gridId": grid}));
    assert_eq!(empty.assert_status(200)["columns"], json!([]));
}

/// A column's `editable` changed through a view keeps the column where the view shows it,
/// and so the order of its records' cells; the order holds after a restart (the log replayed).
#[test]
fn a_columns_editable_flag_changes_in_place() {
    let app = spawn_app();
    let (grid, _) = grid_with_columns(&app);
    let body =
        json!({"name": "T", "gridId": grid, "columns": [{"id": "a"}, {"id": "b"}, {"id": "c"}]});
    let view =
        app.post("/v1/views", &body).assert_status(200)["id"].as_str().expect("id").to_owned();
    app.patch(&format!("/v1/views/{view}/columns/a"), &json!({"editable": false}))
        .assert_status(200);
    app.patch(&format!("/v1/views/{view}/columns/b"), &json!({"editable": false, "name": "B2"}))
        .assert_status(200);
    let expected = pairs(&[("a", false), ("b", false), ("c", true)]);
    assert_eq!(column_ids(&app.snapshot(&format!("/v1/views/{view}"))), expected);
    app.patch(&format!("/v1/views/{view}/columns/a"), &json!({"editable": true}))
        .assert_status(200);
    let expected = pairs(&[("a", true), ("b", false), ("c", true)]);
    assert_eq!(column_ids(&app.snapshot(&format!("/v1/views/{view}"))), expected);
    let app = app.restart();
    assert_eq!(column_ids(&app.snapshot(&format!("/v1/views/{view}"))), expected);
}

#[test]
fn bad_view_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let (grid, _) = grid_with_columns(&app);
    let list = format!("/v1/views?gridId={grid}");
    let before = app.snapshot(&list);
    for body in [
        json!({"gridId": grid}),
        json!({"name": "", "gridId": grid}),
        json!({"name": "v"}),
        json!({"name": "v", "gridId": grid, "columns": [{"id": "nosuchcolumn"}]}),
        json!({"name": "v", "gridId": grid, "columns": [{"id": "a"}, {"id": "a"}]}),
        json!({"name": "v", "gridId": grid, "columns": [{"editable": true}]}),
        json!({"name": "v", "gridId": grid, "columns": "a"}),
        json!({"name": 5, "gridId": grid}),
    ] {
        app.post("/v1/views", &body).assert_error(400, "badRequest");
    }
    app.raw(Method::POST, "/v1/views", "application/json", b"{\"name\"".to_vec())
        .assert_error(400, "badRequest");
    app.call(Method::POST, "/v1/views", Some(&app.key), None)
        .assert_error(400, "requestBodyMissing");
    app.post("/v1/views", &json!({"name": "v", "gridId": "nosuchgrid0001"}))
        .assert_error(404, "gridIsNotFound");
    app.assert_unchanged(&list, &before);
}

#[test]
fn delete_a_view() {
    let app = spawn_app();
    let (grid, default) = grid_with_columns(&app);
    let res =
        app.post("/v1/views", &json!({"name": "v", "gridId": grid, "columns": [{"id": "a"}]}));
    let id = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let grid_before = app.snapshot(&format!("/v1/grids/{grid}"));
    let res = app.delete(&format!("/v1/views/{id}"));
    res.assert_status(204);
    assert_eq!(res.text, "");
    app.get(&format!("/v1/views/{id}")).assert_error(404, "viewIsNotFound");
    app.delete(&format!("/v1/views/{id}")).assert_error(404, "viewIsNotFound");
    let list = app.snapshot(&format!("/v1/views?gridId={grid}"));
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &grid_before);

    let before = app.snapshot(&format!("/v1/views/{default}"));
    app.delete(&format!("/v1/views/{default}")).assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/views/{default}"), &before);
}

#[test]
fn view_writes_need_the_team_plan() {
    let app = spawn_app();
    let (company, owner, grid) = app.tier_grid("team");
    let grid = grid["id"].as_str().expect("id").to_owned();
    let res = app.post_as(&owner, "/v1/views", &json!({"name": "v", "gridId": grid}));
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let company_id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": "free"}))
        .assert_status(200);
    let list = format!("/v1/views?gridId={grid}");
    let before = app.get_as(&owner, &list).assert_status(200).clone();
    for res in [
        app.post_as(&owner, "/v1/views", &json!({"name": "w", "gridId": grid})),
        app.delete_as(&owner, &format!("/v1/views/{view}")),
    ] {
        res.assert_error(403, "accessDenied");
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains("Team")), "{}", res.text);
    }
    app.get_as(&owner, &format!("/v1/views/{view}")).assert_status(200);
    assert_eq!(app.get_as(&owner, &list).assert_status(200), &before);
}

#[test]
fn view_writes_need_the_manage_privilege() {
    let app = spawn_app();
    let (grid, _) = grid_with_columns(&app);
    let res = app.post("/v1/views", &json!({"name": "v", "gridId": grid}));
    let view = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let list = format!("/v1/views?gridId={grid}");
    let before = app.snapshot(&list);
    let write = app.create_key(&["read", "write"], json!({"all": true}));
    assert_eq!(app.get_as(&write, &list).assert_status(200), &before);
    app.get_as(&write, &format!("/v1/views/{view}")).assert_status(200);
    app.post_as(&write, "/v1/views", &json!({"name": "w", "gridId": grid}))
        .assert_error(403, "accessDenied");
    app.delete_as(&write, &format!("/v1/views/{view}")).assert_error(403, "accessDenied");
    app.assert_unchanged(&list, &before);
    let manage = app.create_key(&["manage"], json!({"all": true}));
    app.post_as(&manage, "/v1/views", &json!({"name": "w", "gridId": grid})).assert_status(200);
    app.delete_as(&manage, &format!("/v1/views/{view}")).assert_status(204);
}

#[test]
fn a_view_key_reads_its_own_view_only() {
    let app = spawn_app();
    let (grid, default) = grid_with_columns(&app);
    let res =
        app.post("/v1/views", &json!({"name": "v", "gridId": grid, "columns": [{"id": "b"}]}));
    let view = res.assert_status(200).clone();
    let view_id = view["id"].as_str().expect("id");
    let key = app.create_view_key(view_id);
    assert_eq!(app.get_as(&key, &format!("/v1/views/{view_id}")).assert_status(200), &view);
    app.get_as(&key, &format!("/v1/views/{default}")).assert_error(403, "accessDenied");
    app.get_as(&key, &format!("/v1/views?gridId={grid}")).assert_error(403, "accessDenied");
    app.post_as(&key, "/v1/views", &json!({"name": "w", "gridId": grid}))
        .assert_error(403, "accessDenied");
    app.delete_as(&key, &format!("/v1/views/{view_id}")).assert_error(403, "accessDenied");
    app.delete_as(&key, &format!("/v1/views/{default}")).assert_error(403, "accessDenied");
    app.assert_unchanged(&format!("/v1/views/{view_id}"), &view);
}

#[test]
fn view_calls_need_a_valid_key() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    for key in [None, Some("wrong-key")] {
        app.call(Method::GET, &format!("/v1/views?gridId={grid}"), key, None)
            .assert_error(401, "unauthorized");
        app.call(Method::GET, &format!("/v1/views/{view}"), key, None)
            .assert_error(401, "unauthorized");
        app.call(Method::POST, "/v1/views", key, Some(&json!({"name": "v", "gridId": grid})))
            .assert_error(401, "unauthorized");
        app.call(Method::DELETE, &format!("/v1/views/{view}"), key, None)
            .assert_error(401, "unauthorized");
    }
    assert_eq!(app.snapshot(&format!("/v1/views?gridId={grid}")).as_array().map(Vec::len), Some(1));
}

#[test]
fn another_company_cannot_see_or_touch_our_views() {
    let app = spawn_app();
    let (grid, view) = grid_with_columns(&app);
    let before = app.snapshot(&format!("/v1/views/{view}"));
    let (other, _, _) = app.create_company("enterprise");
    app.get_as(&other, &format!("/v1/views/{view}")).assert_error(404, "viewIsNotFound");
    app.get_as(&other, &format!("/v1/views?gridId={grid}")).assert_error(404, "gridIsNotFound");
    app.post_as(&other, "/v1/views", &json!({"name": "v", "gridId": grid}))
        .assert_error(404, "gridIsNotFound");
    app.delete_as(&other, &format!("/v1/views/{view}")).assert_error(404, "viewIsNotFound");
    app.assert_unchanged(&format!("/v1/views/{view}"), &before);
    assert_eq!(app.snapshot(&format!("/v1/views?gridId={grid}")).as_array().map(Vec::len), Some(1));
}

#[test]
fn a_view_is_renamed_and_keeps_its_name_across_a_crash() {
    let app = spawn_app();
    let (grid, default) = grid_with_columns(&app);
    let res =
        app.post("/v1/views", &json!({"name": "QA", "gridId": grid, "columns": [{"id": "a"}]}));
    let id = res.assert_status(200)["id"].as_str().expect("id").to_owned();
    let res = app.patch(&format!("/v1/views/{id}"), &json!({"name": "  QA (French)  "}));
    assert_eq!(res.assert_status(200)["name"], "QA (French)");
    assert_eq!(column_ids(&res.body), pairs(&[("a", true)]), "columns untouched");
    let renamed_default =
        app.patch(&format!("/v1/views/{default}"), &json!({"name": "Everything"}));
    assert_eq!(renamed_default.assert_status(200)["name"], "Everything");

    let before = app.snapshot(&format!("/v1/views/{id}"));
    for (body, status, code) in [
        (json!({}), 400, "requestParameterMissing"),
        (json!({"name": "   "}), 400, "badRequest"),
        (json!({"name": "x".repeat(256)}), 400, "badRequest"),
        (json!({"name": 5}), 400, "badRequest"),
        (json!({"name": "a", "columns": []}), 400, "badRequest"),
    ] {
        app.patch(&format!("/v1/views/{id}"), &body).assert_error(status, code);
    }
    app.assert_unchanged(&format!("/v1/views/{id}"), &before);
    app.patch("/v1/views/nope", &json!({"name": "x"})).assert_error(404, "viewIsNotFound");
    let writer = app.create_key(&["read", "write"], json!({"all": true}));
    app.call(Method::PATCH, &format!("/v1/views/{id}"), Some(&writer), Some(&json!({"name": "x"})))
        .assert_error(403, "accessDenied");
    let (_, other_owner, _) = app.tier_grid("enterprise");
    app.call(
        Method::PATCH,
        &format!("/v1/views/{id}"),
        Some(&other_owner),
        Some(&json!({"name": "x"})),
    )
    .assert_error(404, "viewIsNotFound");

    // Killed (no shutdown snapshot): the names come back from the WAL.
    let key = app.key.clone();
    let (dir, _guard) = app.kill();
    // A copy: the killed server's store lock lives on in this process.
    let copy = tempfile::tempdir().expect("temp dir");
    crate::helpers::copy_dir(&dir, copy.path());
    let app = crate::helpers::start(copy.path(), &key);
    assert_eq!(app.get(&format!("/v1/views/{id}")).assert_status(200)["name"], "QA (French)");
    assert_eq!(app.get(&format!("/v1/views/{default}")).assert_status(200)["name"], "Everything");
}
