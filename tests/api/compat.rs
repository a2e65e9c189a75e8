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
    // Nor one written with a space, a sign, or nothing at all.
    for written in ["", "%201", "1%20", "+1", "-1"] {
        app.get(&format!("/v1/databases?projectId={written}")).assert_error(400, "badRequest");
    }
    app.get("/v1/projects/%201").assert_error(400, "badRequest");
    app.get("/v1/projects/+1").assert_error(400, "badRequest");
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

/// A share link's `companyId` is the integer id written as a string: the contract's "Shared
/// link" and the OpenAPI's `ShareView` declare a string, and the generated SDKs refuse a
/// number there.
#[test]
fn share_bodies_carry_the_company_id_as_a_string() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let share = app.put(&format!("/v1/views/{view}/shares"), &json!({}));
    assert_eq!(share.assert_status(200)["companyId"], json!("1"));
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
    assert_eq!(share.assert_status(200)["companyId"], json!("1"));
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

/// A grid with columns `title` (text) and `n` (number) and `count` records r0.. with n = i % 7.
fn numbered_grid(app: &TestApp, count: usize) -> String {
    let (_, view) = app.create_grid("numbers");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    let records: Vec<Value> = (0..count)
        .map(|i| {
            json!({"id": format!("r{i}"), "cells": [
                {"columnId": "title", "value": format!("t{i}")},
                {"columnId": "n", "value": i % 7}]})
        })
        .collect();
    app.add_records(&view, Value::Array(records));
    view
}

fn listing_ids(res: &Resp) -> Vec<String> {
    let body = res.assert_status(200);
    body.as_array()
        .expect("records")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn view_listings_carry_each_views_columns() {
    let app = spawn_app();
    let view = numbered_grid(&app, 1);
    let grid =
        app.get(&format!("/v1/views/{view}")).body["gridId"].as_str().expect("grid").to_owned();
    let res =
        app.post("/v1/views", &json!({"name": "second", "gridId": grid, "columns": [{"id": "n"}]}));
    res.assert_status(200);
    for query in [format!("gridId={grid}"), format!("branchId={grid}")] {
        let list = app.get(&format!("/v1/views?{query}"));
        let list = list.assert_status(200).as_array().expect("views").clone();
        assert_eq!(list.len(), 2);
        for listed in &list {
            let id = listed["id"].as_str().expect("view id");
            assert_eq!(listed, app.get(&format!("/v1/views/{id}")).assert_status(200));
            assert!(listed["columns"].as_array().is_some_and(|c| !c.is_empty()), "{listed}");
        }
    }
}

#[test]
fn a_view_with_include_records_carries_a_page_of_them() {
    let app = spawn_app();
    let view = numbered_grid(&app, 12);
    let plain = app.get(&format!("/v1/views/{view}")).assert_status(200).clone();
    assert!(plain.get("records").is_none());
    let query = r#"query={"n":{">=":3}}&sort={"n":"desc"}&columnIds=n&page={"offset":1,"limit":4}"#;
    let with = app.get(&format!("/v1/views/{view}?include=records&{query}"));
    let with = with.assert_status(200).clone();
    let listed = app.get(&format!("/v1/views/{view}/records?{query}"));
    assert_eq!(with["records"], *listed.assert_status(200));
    assert_eq!(with["records"].as_array().map(Vec::len), Some(4));
    let mut without_records = with.clone();
    without_records.as_object_mut().expect("object").remove("records");
    assert_eq!(without_records, plain);
    app.get(&format!("/v1/views/{view}?include=history")).assert_error(400, "badRequest");
    app.get(&format!("/v1/views/{view}?include=records&page=x")).assert_error(400, "invalidPaging");
    app.get(&format!("/v1/views/{view}?include=records&sort={{\"nope\":\"asc\"}}"))
        .assert_error(400, "sortColumnNotFound");
}

#[test]
fn cursor_pages_follow_the_listing_order() {
    let app = spawn_app();
    let view = numbered_grid(&app, 30);
    let base = format!("/v1/views/{view}/records");
    for extra in [
        "",
        r#"&sort={"n":"asc"}"#,
        r#"&sort={"n":"desc","title":"asc"}"#,
        r#"&query={"n":{"!=":2}}&sort={"n":"desc"}"#,
    ] {
        let all = listing_ids(&app.get(&format!("{base}?page={{\"limit\":1000}}{extra}")));
        for at in [0, 5, all.len() - 1] {
            let after =
                app.get(&format!("{base}?page={{\"limit\":4}}&afterRecordId={}{extra}", all[at]));
            let expected: Vec<String> = all.iter().skip(at + 1).take(4).cloned().collect();
            assert_eq!(listing_ids(&after), expected, "after {} {extra}", all[at]);
            assert_eq!(after.header("x-total-count"), Some(all.len().to_string().as_str()));
            let before =
                app.get(&format!("{base}?page={{\"limit\":4}}&beforeRecordId={}{extra}", all[at]));
            let expected: Vec<String> = all[at.saturating_sub(4)..at].to_vec();
            assert_eq!(listing_ids(&before), expected, "before {} {extra}", all[at]);
        }
    }
    // A cursor record that does not match the query still places the page.
    let matching = listing_ids(&app.get(&format!("{base}?query={{\"n\":{{\"=\":3}}}}")));
    let after = app.get(&format!("{base}?query={{\"n\":{{\"=\":3}}}}&afterRecordId=r4"));
    let expected: Vec<String> =
        matching.iter().filter(|id| id[1..].parse::<usize>().expect("n") > 4).cloned().collect();
    assert_eq!(listing_ids(&after), expected);
}

#[test]
fn bad_cursors_are_refused_and_change_nothing() {
    let app = spawn_app();
    let view = numbered_grid(&app, 5);
    let base = format!("/v1/views/{view}/records");
    let before = app.snapshot(&base);
    app.get(&format!("{base}?afterRecordId=nosuchrecord")).assert_error(404, "nonexistentRecordId");
    app.get(&format!("{base}?beforeRecordId=nosuchrecord"))
        .assert_error(404, "nonexistentRecordId");
    app.get(&format!("{base}?afterRecordId=r1&page={{\"offset\":2,\"limit\":2}}"))
        .assert_error(400, "invalidPaging");
    app.get(&format!("{base}?afterRecordId=r1&beforeRecordId=r3")).assert_error(400, "badRequest");
    app.get(&format!("{base}?afterRecordId=r1&sort={{\"nope\":\"asc\"}}"))
        .assert_error(400, "sortColumnNotFound");
    app.assert_unchanged(&base, &before);
    // Offset 0 is fine with a cursor.
    let res = app.get(&format!("{base}?afterRecordId=r1&page={{\"offset\":0,\"limit\":2}}"));
    assert_eq!(listing_ids(&res), vec!["r2", "r3"]);
}

/// A small deterministic generator (the test must be reproducible).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// Property: a client walking every record by cursor (small pages) while others add, update and
/// delete records between its pages sees each record that exists throughout the walk exactly
/// once, and no record twice; for several seeds, unsorted and sorted by a key the writes keep.
#[test]
fn a_cursor_walk_under_concurrent_writes_sees_every_lasting_record_once() {
    let app = spawn_app();
    for (seed, extra) in [
        (1u64, ""),
        (2, r#"&sort={"n":"desc"}"#),
        (3, r#"&query={"n":{"!=":5}}"#),
        (4, r#"&sort={"n":"asc"}"#),
    ] {
        let view = numbered_grid(&app, 60);
        let base = format!("/v1/views/{view}/records");
        let mut rng = Lcg(seed);
        let mut alive: Vec<String> = (0..60).map(|i| format!("r{i}")).collect();
        let mut deleted: Vec<String> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut added = 0;
        loop {
            let at = cursor.as_ref().map(|c| format!("&afterRecordId={c}")).unwrap_or_default();
            let page = listing_ids(&app.get(&format!("{base}?page={{\"limit\":7}}{at}{extra}")));
            let Some(last) = page.last().cloned() else { break };
            seen.extend(page);
            cursor = Some(last.clone());
            for _ in 0..3 {
                match rng.below(3) {
                    0 => {
                        added += 1;
                        let id = format!("new{added}");
                        let record = json!([{"id": id, "cells": [{"columnId": "n", "value": rng.below(7)}]}]);
                        app.add_records(&view, record);
                        alive.push(id);
                    }
                    1 => {
                        let id = alive[rng.below(alive.len())].clone();
                        let cells = json!([{"id": id, "cells": [{"columnId": "title", "value": format!("u{}", rng.below(99))}]}]);
                        app.patch(&format!("/v1/views/{view}/records"), &cells).assert_status(200);
                    }
                    _ => {
                        let candidates: Vec<&String> =
                            alive.iter().filter(|id| **id != last).collect();
                        let id = candidates[rng.below(candidates.len())].clone();
                        app.delete_with(
                            &format!("/v1/views/{view}/records"),
                            &json!({"ids": [id]}),
                        )
                        .assert_status(204);
                        alive.retain(|x| *x != id);
                        deleted.push(id);
                    }
                }
            }
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), seen.len(), "seed {seed}: a record was seen twice");
        let excluded = |id: &String| extra.contains("!=") && app_n(&app, &view, id) == Some(5);
        for i in 0..60 {
            let id = format!("r{i}");
            if deleted.contains(&id) || excluded(&id) {
                continue;
            }
            assert!(seen.contains(&id), "seed {seed} {extra}: {id} was never seen");
        }
    }
}

/// The `n` of a record, if it exists.
fn app_n(app: &TestApp, view: &str, id: &str) -> Option<i64> {
    let res =
        app.get(&format!("/v1/views/{view}/records?query={{\"_recordId\":{{\"=\":\"{id}\"}}}}"));
    res.body.as_array()?.first().and_then(|r| cell(r, "n")["value"].as_i64())
}

#[test]
fn the_openapi_description_declares_integer_project_ids() {
    let app = spawn_app();
    let doc = app.call(reqwest::Method::GET, "/v1/openapi.json", None, None);
    let doc = doc.assert_status(200);
    let param_type = |path: &str, method: &str, name: &str| {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .map(|p| match &p["schema"]["type"] {
                // An optional parameter is ["integer", "null"] in OpenAPI 3.1.
                Value::Array(types) => types[0].clone(),
                other => other.clone(),
            })
    };
    assert_eq!(param_type("/v1/projects/{id}", "get", "id"), Some(json!("integer")));
    assert_eq!(param_type("/v1/databases", "get", "projectId"), Some(json!("integer")));
    assert_eq!(
        param_type("/v1/views/{viewId}/records", "get", "afterRecordId"),
        Some(json!("string"))
    );
    let project = &doc["components"]["schemas"]["ProjectBody"]["properties"];
    assert_eq!(project["id"]["type"], json!("integer"), "{project}");
    assert_eq!(project["companyId"]["type"], json!("integer"));
}
