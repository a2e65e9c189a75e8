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

/// The names of a listing's databases, in order.
fn names(res: &crate::helpers::Resp) -> Vec<String> {
    (res.assert_status(200).as_array().expect("a list").iter())
        .map(|db| db["name"].as_str().expect("name").to_owned())
        .collect()
}

/// `/v1/databases?<params>`, URL-encoded.
fn listing(params: &[(&str, &str)]) -> String {
    format!("/v1/databases?{}", serde_urlencoded::to_string(params).expect("params encode"))
}

/// `search` keeps the names containing it in any case; `sort` orders by the database's
/// fields (text by code point, ties in creation order); `page` pages with X-Total-Count and
/// Link, as the record listing does; with `projectId` too.
#[test]
fn databases_are_searched_sorted_and_paged() {
    let app = spawn_app();
    let project = default_project(&app);
    let other = app.post("/v1/projects", &json!({"name": "Other"})).body["id"].clone();
    create_db(&app, &project, "Games");
    create_db(&app, &other, "apps");
    create_db(&app, &project, "Game assets");
    create_db(&app, &other, "Tools");
    let all = ["Default database", "Games", "apps", "Game assets", "Tools"];
    assert_eq!(names(&app.get("/v1/databases")), all);
    assert_eq!(names(&app.get(&listing(&[("search", "GAME")]))), ["Games", "Game assets"]);
    assert_eq!(names(&app.get(&listing(&[("search", "")]))), all);
    assert_eq!(names(&app.get(&listing(&[("search", "nothing")]))), Vec::<String>::new());
    assert_eq!(
        names(&app.get(&listing(&[("sort", r#"{"name": "asc"}"#)]))),
        ["Default database", "Game assets", "Games", "Tools", "apps"]
    );
    assert_eq!(
        names(&app.get(&listing(&[("sort", r#"{"name": "desc"}"#)]))),
        ["apps", "Tools", "Games", "Game assets", "Default database"]
    );
    assert_eq!(
        names(&app.get(&listing(&[("sort", r#"{"projectId": "desc", "name": "asc"}"#)]))),
        ["Tools", "apps", "Default database", "Game assets", "Games"]
    );
    for blank in ["", "{}"] {
        assert_eq!(names(&app.get(&listing(&[("sort", blank)]))), all);
    }
    let in_other = listing(&[("projectId", &other.to_string()), ("sort", r#"{"name":"asc"}"#)]);
    assert_eq!(names(&app.get(&in_other)), ["Tools", "apps"]);

    let sorted = r#"{"name":"asc"}"#;
    let res = app.get(&listing(&[("sort", sorted), ("page", r#"{"offset":1,"limit":2}"#)]));
    assert_eq!(names(&res), ["Game assets", "Games"]);
    assert_eq!(res.header("x-total-count"), Some("5"));
    let next = crate::helpers::follow(&app, &crate::helpers::link(&res, "next").expect("next"));
    assert_eq!(names(&next), ["Tools", "apps"]);
    assert_eq!(crate::helpers::link(&next, "next"), None);
    let prev = crate::helpers::follow(&app, &crate::helpers::link(&res, "prev").expect("prev"));
    assert_eq!(names(&prev), ["Default database", "Game assets"]);
    let searched = app.get(&listing(&[("search", "game"), ("page", r#"{"limit":1}"#)]));
    assert_eq!(names(&searched), ["Games"]);
    assert_eq!(searched.header("x-total-count"), Some("2"));
    let past = app.get(&listing(&[("page", r#"{"offset":10}"#)]));
    assert_eq!(names(&past), Vec::<String>::new());
    assert_eq!(past.header("x-total-count"), Some("5"));
}

/// `expand=grid` adds each database's grids as `GET /v1/grids?dbId=` lists them,
/// `expand=view` the views of its grids as `GET /v1/views?gridId=` lists them; a key limited
/// to one database lists it alone, with all of it.
#[test]
fn databases_are_listed_with_their_grids_and_views() {
    let app = spawn_app();
    let db = app.default_db();
    let (first, _) = app.create_grid("First");
    let (second, second_view) = app.create_grid("Second");
    app.create_column(&second_view, json!({"id": "a", "name": "A", "type": "singleLine"}));
    let res =
        app.post("/v1/views", &json!({"name": "QA", "gridId": second, "columns": [{"id": "a"}]}));
    res.assert_status(200);
    let project = default_project(&app);
    let empty = create_db(&app, &project, "Empty");

    let plain = app.snapshot("/v1/databases");
    assert!(plain[0].get("grids").is_none() && plain[0].get("views").is_none(), "{plain}");
    let grids = app.snapshot(&format!("/v1/grids?dbId={db}"));
    let mut views =
        app.snapshot(&format!("/v1/views?gridId={first}")).as_array().expect("views").clone();
    views.extend(
        app.snapshot(&format!("/v1/views?gridId={second}")).as_array().expect("views").clone(),
    );
    assert_eq!(views.len(), 3);

    let with_grids = app.snapshot("/v1/databases?expand=grid");
    assert_eq!(with_grids[0]["grids"], grids);
    assert!(with_grids[0].get("views").is_none());
    assert_eq!(with_grids[1]["id"], json!(empty));
    assert_eq!(with_grids[1]["grids"], json!([]));
    let with_views = app.snapshot("/v1/databases?expand=view");
    assert_eq!(with_views[0]["views"], json!(views));
    assert!(with_views[0].get("grids").is_none());
    for both in ["/v1/databases?expand=grid&expand=view", "/v1/databases?expand=view,grid"] {
        let body = app.snapshot(both);
        assert_eq!(body[0]["grids"], grids, "{both}");
        assert_eq!(body[0]["views"], json!(views), "{both}");
        assert_eq!(body[0]["id"], plain[0]["id"]);
        assert_eq!(body[0]["name"], plain[0]["name"]);
    }

    let key = app.create_key(&["read"], json!({"databases": [db]}));
    let seen = app.get_as(&key, "/v1/databases?expand=grid,view");
    let seen = seen.assert_status(200);
    assert_eq!(seen.as_array().map(Vec::len), Some(1), "{seen}");
    assert_eq!(seen[0]["grids"], grids);
    assert_eq!(seen[0]["views"], json!(views));
}

/// Without `page` (or with an empty one) the listing holds every database, as it did before it
/// took `page` (the web console reads it so); with one, a page of at most 1000.
#[test]
fn without_page_every_database_is_listed() {
    let app = spawn_app();
    let project = default_project(&app);
    for n in 0..120 {
        create_db(&app, &project, &format!("db {n:03}"));
    }
    for path in ["/v1/databases", "/v1/databases?page=", &listing(&[("search", "db ")])] {
        let res = app.get(path);
        let count = if path.contains("search") { 120 } else { 121 };
        assert_eq!(names(&res).len(), count, "{path}");
        assert_eq!(res.header("x-total-count"), Some(count.to_string().as_str()), "{path}");
        assert_eq!(res.header("link"), None, "{path}");
    }
    let res = app.get(&listing(&[("page", r#"{"offset": 0}"#)]));
    assert_eq!(names(&res).len(), 100, "a page's limit is 100 by default");
    assert_eq!(res.header("x-total-count"), Some("121"));
    assert!(crate::helpers::link(&res, "next").is_some());
}

#[test]
fn bad_database_listing_parameters_are_refused() {
    let app = spawn_app();
    let long = "x".repeat(201);
    let longest = "é".repeat(200);
    for (params, status, code) in [
        (vec![("search", long.as_str())], 400, "badRequest"),
        (vec![("expand", "grids")], 400, "badRequest"),
        (vec![("expand", "grid,column")], 400, "badRequest"),
        (vec![("sort", r#"{"createdTime": "asc"}"#)], 400, "invalidSortField"),
        (vec![("sort", r#"{"name": "up"}"#)], 400, "invalidSortDirection"),
        (vec![("sort", "name")], 400, "invalidSortField"),
        (vec![("page", r#"{"limit": 0}"#)], 400, "invalidPaging"),
        (vec![("page", r#"{"offset": -1}"#)], 400, "invalidPaging"),
        (vec![("page", "5")], 400, "invalidPaging"),
        (vec![("projectId", "one")], 400, "badRequest"),
    ] {
        let res = app.get(&listing(&params));
        res.assert_error(status, code);
        assert!(!res.body["message"].as_str().unwrap_or("").is_empty());
    }
    let message = app.get(&listing(&[("expand", "grids")])).body["message"].clone();
    assert!(
        message.as_str().is_some_and(|m| m.contains("grids") && m.contains("view")),
        "{message}"
    );
    let message =
        app.get(&listing(&[("sort", r#"{"createdTime":"asc"}"#)])).body["message"].clone();
    assert!(message.as_str().is_some_and(|m| m.contains("createdTime")), "{message}");
    assert_eq!(names(&app.get(&listing(&[("search", &longest)]))), Vec::<String>::new());
    let res = app.get(&listing(&[("page", r#"{"limit": 5000}"#)]));
    assert_eq!(names(&res), ["Default database"]);
}
