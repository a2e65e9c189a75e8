//! Branches and merges (decisions.md section 8): `/v1/branches` create (from master by grid id or
//! from any branch), list, get, delete with their errors, tiers and privileges; a branch holds a
//! copy of its source's records and is independent of it; branch merge with each option
//! combination over one scenario (same-cell conflict, different cells changed on each side, adds
//! and deletes on both sides), merging twice, master -> branch, view merge limited to the view's
//! columns, options repeated or in a JSON body, the destination's dependency rules, the record
//! history and a restart. The destination is always checked cell by cell.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{cell, spawn_app, Resp, TestApp};

/// A grid's records as a plain model: record id -> column id -> text value.
pub type Model = BTreeMap<String, BTreeMap<String, String>>;

/// The records of a view as a model (every column must hold text).
#[track_caller]
pub fn model(app: &TestApp, view: &str) -> Model {
    let records = app.records(view);
    let model: Model = records
        .iter()
        .map(|r| {
            let id = r["id"].as_str().expect("record id").to_owned();
            let cells = r["cells"]
                .as_array()
                .expect("cells")
                .iter()
                .map(|c| {
                    let column = c["columnId"].as_str().expect("column id").to_owned();
                    let value = c["value"].as_str().unwrap_or_else(|| panic!("text cell: {c}"));
                    (column, value.to_owned())
                })
                .collect();
            (id, cells)
        })
        .collect();
    assert_eq!(model.len(), records.len(), "a record id is listed twice: {records:?}");
    model
}

/// Asserts `actual` has exactly the records of `expected`, then compares them cell by cell.
#[track_caller]
pub fn assert_records(actual: &Model, expected: &Model, what: &str) {
    let ids = |m: &Model| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(ids(actual), ids(expected), "{what}: record ids");
    for (id, cells) in expected {
        let got = &actual[id];
        for (column, value) in cells {
            assert_eq!(got.get(column), Some(value), "{what}: record {id}, column {column}");
        }
        assert_eq!(got.len(), cells.len(), "{what}: the columns of record {id}: {got:?}");
    }
}

/// The expected records of a grid with columns a, b and c: id -> [a, b, c].
fn rows(list: &[(&str, [&str; 3])]) -> Model {
    list.iter()
        .map(|(id, values)| {
            let cells = ["a", "b", "c"]
                .iter()
                .zip(values)
                .map(|(c, v)| ((*c).to_owned(), (*v).to_owned()))
                .collect();
            ((*id).to_owned(), cells)
        })
        .collect()
}

/// A grid with single-line columns a, b and c and the records `ids`, each record's cells holding
/// `<id><column>` (r1 -> r1a, r1b, r1c): (grid id, default view id).
pub fn abc_grid(app: &TestApp, ids: &[&str]) -> (String, String) {
    let (grid, view) = app.create_grid("Branching");
    for id in ["a", "b", "c"] {
        app.create_column(
            &view,
            json!({"id": id, "name": id.to_uppercase(), "type": "singleLine"}),
        );
    }
    if !ids.is_empty() {
        let records: Vec<Value> = ids
            .iter()
            .map(|id| {
                let cells: Vec<Value> = ["a", "b", "c"]
                    .iter()
                    .map(|c| json!({"columnId": c, "value": format!("{id}{c}")}))
                    .collect();
                json!({"id": id, "cells": cells})
            })
            .collect();
        app.add_records(&view, Value::Array(records));
    }
    (grid, view)
}

/// Creates a branch of `source` (a branch id; a grid id names its master), asserting 201.
pub fn create_branch(app: &TestApp, source: &str, name: &str) -> Value {
    let res = app.post(&format!("/v1/branches?branchId={source}"), &json!({ "name": name }));
    res.assert_status(201).clone()
}

/// The id and the default view id of a created branch.
pub fn branch_ids(branch: &Value) -> (String, String) {
    (
        branch["id"].as_str().expect("branch id").to_owned(),
        branch["defaultAccessViewId"].as_str().expect("branch view id").to_owned(),
    )
}

/// Writes one cell of one record through `view`.
pub fn set(app: &TestApp, view: &str, id: &str, column: &str, value: &str) {
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": id, "cells": [{"columnId": column, "value": value}]}]),
    )
    .assert_status(200);
}

/// Deletes records by id through `view`.
pub fn delete_records(app: &TestApp, view: &str, ids: &[&str]) {
    let res = app.delete_with(&format!("/v1/views/{view}/records"), &json!({ "ids": ids }));
    assert_eq!(res.status, 204, "{}", res.text);
}

/// Asserts a merge answer is 202 with a task, then polls the task until it is successful and
/// returns it.
#[track_caller]
pub fn wait_task(app: &TestApp, res: &Resp) -> Value {
    let task = res.assert_status(202);
    assert_eq!(res.header("content-type"), Some("application/json"));
    let id = task["id"].as_str().expect("task id").to_owned();
    assert!(matches!(task["status"].as_str(), Some("running" | "successful")), "{task}");
    for _ in 0..800 {
        let res = app.get(&format!("/v1/tasks/{id}"));
        let body = res.assert_status(200);
        match body["status"].as_str() {
            Some("successful") => {
                assert_eq!(body["id"], json!(id));
                return body.clone();
            }
            Some("running") => std::thread::sleep(Duration::from_millis(25)),
            other => panic!("merge task ended {other:?}: {}", res.text),
        }
    }
    panic!("merge task {id} did not finish");
}

/// POSTs without a body (the merge parameters are in the query string).
fn post_query(app: &TestApp, path: &str) -> Resp {
    app.call(Method::POST, path, Some(&app.key), None)
}

/// Merges branch `source` into branch `dest` with comma-separated `options` in the query and
/// waits for the task.
pub fn merge(app: &TestApp, source: &str, dest: &str, options: &str) -> Value {
    let res = post_query(
        app,
        &format!(
            "/v1/branches/{source}/merge?destinationBranchId={dest}&mergeRecordOptions={options}"
        ),
    );
    wait_task(app, &res)
}

/// A master and a branch that both changed since the branch was created.
struct Scenario {
    grid: String,
    master: String,
    branch: String,
    branch_view: String,
}

/// Records r1..r6 (cells `r1a`, ...), then a branch with, in the branch (source): r1.a and r1.b,
/// r2.a and r6.c changed, `s-new` added (path "folder"), r3 deleted; and in master
/// (destination): r1.a (the conflict) and r2.c changed, `d-new` added, r4 deleted.
fn conflict_scenario(app: &TestApp) -> Scenario {
    let (grid, master) = abc_grid(app, &["r1", "r2", "r3", "r4", "r5", "r6"]);
    let (branch, branch_view) = branch_ids(&create_branch(app, &grid, "rel-1"));
    set(app, &branch_view, "r1", "a", "src-r1a");
    set(app, &branch_view, "r1", "b", "src-r1b");
    set(app, &branch_view, "r2", "a", "src-r2a");
    set(app, &branch_view, "r6", "c", "src-r6c");
    app.add_records(
        &branch_view,
        json!([{"id": "s-new", "path": "folder", "cells": [
            {"columnId": "a", "value": "sn-a"}, {"columnId": "b", "value": "sn-b"},
            {"columnId": "c", "value": "sn-c"}]}]),
    );
    delete_records(app, &branch_view, &["r3"]);
    set(app, &master, "r1", "a", "dst-r1a");
    set(app, &master, "r2", "c", "dst-r2c");
    app.add_records(
        &master,
        json!([{"id": "d-new", "cells": [
            {"columnId": "a", "value": "dn-a"}, {"columnId": "b", "value": "dn-b"},
            {"columnId": "c", "value": "dn-c"}]}]),
    );
    delete_records(app, &master, &["r4"]);
    Scenario { grid, master, branch, branch_view }
}

/// The branch of `conflict_scenario` as it stands (it must not change by merging it).
fn scenario_source() -> Model {
    rows(&[
        ("r1", ["src-r1a", "src-r1b", "r1c"]),
        ("r2", ["src-r2a", "r2b", "r2c"]),
        ("r4", ["r4a", "r4b", "r4c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "src-r6c"]),
        ("s-new", ["sn-a", "sn-b", "sn-c"]),
    ])
}

/// Merges the scenario's branch into master with `options` and returns master's records,
/// checking that the merge left the branch as it was.
fn merge_scenario(app: &TestApp, s: &Scenario, options: &str) -> Model {
    assert_records(&model(app, &s.branch_view), &scenario_source(), "the branch before merging");
    merge(app, &s.branch, &s.grid, options);
    assert_records(&model(app, &s.branch_view), &scenario_source(), "the branch after merging");
    model(app, &s.master)
}

// ---------------------------------------------------------------------------------------------
// Create, list, get, delete
// ---------------------------------------------------------------------------------------------

fn column_ids(body: &Value) -> Vec<String> {
    body["columns"]
        .as_array()
        .unwrap_or_else(|| panic!("columns: {body}"))
        .iter()
        .map(|c| c["id"].as_str().expect("column id").to_owned())
        .collect()
}

/// (id, name) of every listed branch, sorted.
fn listed(app: &TestApp, grid: &str) -> Vec<(String, String)> {
    let res = app.get(&format!("/v1/branches?gridId={grid}"));
    let list = res.assert_status(200).as_array().expect("a list of branches").clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let mut pairs: Vec<(String, String)> = list
        .iter()
        .map(|b| {
            (
                b["id"].as_str().expect("branch id").to_owned(),
                b["name"].as_str().expect("branch name").to_owned(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

fn sorted_pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> =
        list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect();
    pairs.sort();
    pairs
}

#[test]
fn create_a_branch_from_master_by_branch_id_or_grid_id_then_list_and_get_it() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2"]);
    let grid_body = app.snapshot(&format!("/v1/grids/{grid}"));
    let res = app.post(&format!("/v1/branches?branchId={grid}"), &json!({"name": "rel-1"}));
    let created = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let (first, first_view) = branch_ids(&created);
    assert_eq!(first.len(), 14, "{created}");
    assert_ne!(first, grid);
    assert_eq!(created["name"], "rel-1");
    assert_eq!(created["status"], "active");
    assert_eq!(created["recordIdentifierType"], grid_body["recordIdentifierType"], "{created}");
    assert!(created["metadata"].is_object(), "{created}");
    assert_eq!(column_ids(&created), ["a", "b", "c"]);
    assert_eq!(first_view.len(), 14);
    assert_ne!(first_view, master);

    let res = app.post(&format!("/v1/branches?gridId={grid}"), &json!({"name": "rel-2"}));
    let (second, second_view) = branch_ids(res.assert_status(201));
    assert_ne!(second, first);
    assert_ne!(second_view, first_view);
    assert_records(&model(&app, &second_view), &model(&app, &master), "a branch by gridId");

    let res = app.get(&format!("/v1/branches/{first}"));
    let got = res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(got["id"], json!(first));
    assert_eq!(got["name"], "rel-1");
    assert_eq!(column_ids(got), ["a", "b", "c"]);

    assert_eq!(
        listed(&app, &grid),
        sorted_pairs(&[(&grid, "master"), (&first, "rel-1"), (&second, "rel-2")])
    );
    let (other_grid, _) = abc_grid(&app, &[]);
    assert_eq!(listed(&app, &other_grid), sorted_pairs(&[(&other_grid, "master")]));
}

#[test]
fn a_branch_of_a_branch_copies_that_branch() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2"]);
    let (first, first_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    set(&app, &first_view, "r1", "a", "in rel-1");
    let (second, second_view) = branch_ids(&create_branch(&app, &first, "rel-1-fix"));
    let expected = rows(&[("r1", ["in rel-1", "r1b", "r1c"]), ("r2", ["r2a", "r2b", "r2c"])]);
    assert_records(&model(&app, &second_view), &expected, "the branch of rel-1");
    assert_records(
        &model(&app, &master),
        &rows(&[("r1", ["r1a", "r1b", "r1c"]), ("r2", ["r2a", "r2b", "r2c"])]),
        "master",
    );
    assert_eq!(
        listed(&app, &grid),
        sorted_pairs(&[(&grid, "master"), (&first, "rel-1"), (&second, "rel-1-fix")])
    );
}

#[test]
fn bad_branch_requests_are_refused() {
    let app = spawn_app();
    let (grid, _) = abc_grid(&app, &["r1"]);
    let name = json!({"name": "rel"});
    app.post("/v1/branches", &name).assert_error(400, "requestParameterMissing");
    app.post("/v1/branches?branchId=", &name).assert_error(400, "requestParameterMissing");
    app.post("/v1/branches?branchId=nosuchbranch01", &name).assert_error(404, "branchIsNotFound");
    let path = format!("/v1/branches?branchId={grid}");
    app.post(&path, &json!({})).assert_error(400, "badRequest");
    app.post(&path, &json!({"name": ""})).assert_error(400, "badRequest");
    assert_eq!(listed(&app, &grid), sorted_pairs(&[(&grid, "master")]), "a refusal created one");
    app.get("/v1/branches").assert_error(400, "requestParameterMissing");
    app.get("/v1/branches/nosuchbranch01").assert_error(404, "branchIsNotFound");
    app.delete("/v1/branches/nosuchbranch01").assert_error(404, "branchIsNotFound");
}

#[test]
fn delete_a_branch_and_its_views_but_never_master() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2"]);
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    let master_records = app.records(&master);
    let res = app.delete(&format!("/v1/branches/{branch}"));
    assert_eq!(res.status, 204, "{}", res.text);
    assert_eq!(res.text, "");
    app.get(&format!("/v1/branches/{branch}")).assert_error(404, "branchIsNotFound");
    app.get(&format!("/v1/views/{branch_view}")).assert_error(404, "viewIsNotFound");
    app.get(&format!("/v1/views/{branch_view}/records")).assert_error(404, "viewIsNotFound");
    app.get(&format!("/v1/views?branchId={branch}")).assert_error(404, "branchIsNotFound");
    app.delete(&format!("/v1/branches/{branch}")).assert_error(404, "branchIsNotFound");
    assert_eq!(listed(&app, &grid), sorted_pairs(&[(&grid, "master")]));
    assert_eq!(app.records(&master), master_records);

    let grid_body = app.snapshot(&format!("/v1/grids/{grid}"));
    app.delete(&format!("/v1/branches/{grid}")).assert_error(400, "badRequest");
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &grid_body);
    assert_eq!(app.records(&master), master_records);
    assert_eq!(listed(&app, &grid), sorted_pairs(&[(&grid, "master")]));
}

#[test]
fn listing_and_getting_branches_need_the_team_plan() {
    let app = spawn_app();
    let (company, owner, grid) = app.tier_grid("team");
    let grid = grid["id"].as_str().expect("grid id").to_owned();
    let res = app.post_as(&owner, &format!("/v1/branches?branchId={grid}"), &json!({"name": "r"}));
    let branch = res.assert_status(201)["id"].as_str().expect("branch id").to_owned();
    let list = format!("/v1/branches?gridId={grid}");
    let get = format!("/v1/branches/{branch}");
    assert_eq!(app.get_as(&owner, &list).assert_status(200).as_array().map(Vec::len), Some(2));
    app.get_as(&owner, &get).assert_status(200);
    let company_id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": "free"}))
        .assert_status(200);
    for res in [app.get_as(&owner, &list), app.get_as(&owner, &get)] {
        res.assert_error(403, "accessDenied");
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains("Team")), "{}", res.text);
    }
}

#[test]
fn view_merge_needs_the_enterprise_plan() {
    let app = spawn_app();
    let (_, owner, grid) = app.tier_grid("team");
    let (grid, view) = (grid["id"].as_str().expect("grid id"), grid["defaultAccessViewId"].clone());
    let view = view.as_str().expect("view id").to_owned();
    let res = app.post_as(&owner, &format!("/v1/branches?branchId={grid}"), &json!({"name": "r"}));
    let branch_view =
        res.assert_status(201)["defaultAccessViewId"].as_str().expect("view id").to_owned();
    let path =
        format!("/v1/views/{branch_view}/merge?destinationViewId={view}&mergeRecordOptions=add");
    let res = app.call(Method::POST, &path, Some(&owner), None);
    res.assert_error(403, "accessDenied");
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("Enterprise")), "{}", res.text);
    let status = app.get_as(&owner, &format!("/v1/grids/{grid}")).body["status"].clone();
    assert_ne!(status, json!("merging"), "a refused merge starts nothing");
}

#[test]
fn branch_writes_and_merges_need_the_manage_privilege() {
    let app = spawn_app();
    let (grid, _) = abc_grid(&app, &["r1"]);
    let (branch, _) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    let write = app.create_key(&["read", "write"], json!({"all": true}));
    app.get_as(&write, &format!("/v1/branches?gridId={grid}")).assert_status(200);
    app.get_as(&write, &format!("/v1/branches/{branch}")).assert_status(200);
    app.post_as(&write, &format!("/v1/branches?branchId={grid}"), &json!({"name": "x"}))
        .assert_error(403, "accessDenied");
    app.delete_as(&write, &format!("/v1/branches/{branch}")).assert_error(403, "accessDenied");
    app.call(
        Method::POST,
        &format!("/v1/branches/{branch}/merge?destinationBranchId={grid}&mergeRecordOptions=add"),
        Some(&write),
        None,
    )
    .assert_error(403, "accessDenied");
    assert_eq!(listed(&app, &grid), sorted_pairs(&[(&grid, "master"), (&branch, "rel-1")]));
    let manage = app.create_key(&["manage"], json!({"all": true}));
    let res = app.post_as(&manage, &format!("/v1/branches?branchId={grid}"), &json!({"name": "y"}));
    let made = res.assert_status(201)["id"].as_str().expect("branch id").to_owned();
    let res = app.delete_as(&manage, &format!("/v1/branches/{made}"));
    assert_eq!(res.status, 204, "{}", res.text);
}

#[test]
fn another_company_cannot_see_or_branch_our_grid() {
    let app = spawn_app();
    let (grid, _) = abc_grid(&app, &["r1"]);
    let (branch, _) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    let (other, _, _) = app.create_company("enterprise");
    app.get_as(&other, &format!("/v1/branches/{branch}")).assert_error(404, "branchIsNotFound");
    app.post_as(&other, &format!("/v1/branches?branchId={grid}"), &json!({"name": "x"}))
        .assert_error(404, "branchIsNotFound");
    app.delete_as(&other, &format!("/v1/branches/{branch}")).assert_error(404, "branchIsNotFound");
    assert_eq!(listed(&app, &grid), sorted_pairs(&[(&grid, "master"), (&branch, "rel-1")]));
}

// ---------------------------------------------------------------------------------------------
// What a branch holds
// ---------------------------------------------------------------------------------------------

/// Id, path and cells of each record, sorted by id.
fn contents(records: &[Value]) -> Vec<Value> {
    let mut list: Vec<Value> = records
        .iter()
        .map(|r| json!({"id": r["id"], "path": r["path"], "cells": r["cells"]}))
        .collect();
    list.sort_by_key(|r| r["id"].as_str().unwrap_or_default().to_owned());
    list
}

/// (id, name) of the views of a branch (a grid id for master).
fn views_of(app: &TestApp, branch: &str) -> Vec<(String, String)> {
    let list = app.snapshot(&format!("/v1/views?branchId={branch}"));
    list.as_array()
        .expect("a list of views")
        .iter()
        .map(|v| {
            (
                v["id"].as_str().expect("view id").to_owned(),
                v["name"].as_str().expect("view name").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_branch_copies_records_paths_statuses_columns_and_views_under_new_ids() {
    let app = spawn_app();
    let (grid, master) = app.language_grid(&[("fr", "French", "frFR")], true);
    app.add_records(
        &master,
        json!([
            {"id": "r1", "path": "ui/menu", "cells": [{"columnId": "en", "value": "Save"},
                                                      {"columnId": "fr", "value": "Enregistrer"}]},
            {"id": "r2", "path": "ui", "cells": [{"columnId": "en", "value": "Open",
                                                  "sourceStatus": "readyForTranslation"}]},
            {"id": "r3", "cells": [{"columnId": "note", "value": "n"}]},
            {"id": "r4", "cells": [{"columnId": "en", "value": "Yes"},
                                   {"columnId": "fr", "value": "Oui"}]},
        ]),
    );
    set(&app, &master, "r4", "en", "Yes!");
    let res = app.post(
        "/v1/views",
        &json!({"name": "French only", "gridId": grid, "columns": [{"id": "fr"}]}),
    );
    let subset = res.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let before = app.records(&master);
    assert_eq!(cell(&before[3], "fr")["dependencyStatus"], "outOfDate", "{}", before[3]);
    assert_eq!(cell(&before[1], "en")["sourceStatus"], "readyForTranslation");

    let created = create_branch(&app, &grid, "rel-1");
    let (branch, branch_view) = branch_ids(&created);
    assert_eq!(column_ids(&created), ["en", "fr", "note"]);
    assert_eq!(contents(&app.records(&branch_view)), contents(&before));
    assert_eq!(app.records(&master), before, "branching changed master");

    let master_views = views_of(&app, &grid);
    let branch_views = views_of(&app, &branch);
    let names = |views: &[(String, String)]| {
        let mut names: Vec<String> = views.iter().map(|(_, n)| n.clone()).collect();
        names.sort();
        names
    };
    assert_eq!(names(&branch_views), names(&master_views));
    for (id, _) in &branch_views {
        assert!(master_views.iter().all(|(m, _)| m != id), "view {id} is shared with master");
    }
    assert!(branch_views.iter().any(|(id, _)| *id == branch_view), "{branch_views:?}");
    let (copy, _) =
        branch_views.iter().find(|(_, n)| n == "French only").expect("the subset view is copied");
    let copied = app.snapshot(&format!("/v1/views/{copy}"));
    assert_eq!(column_ids(&copied), ["fr"]);
    assert_eq!(column_ids(&app.snapshot(&format!("/v1/views/{subset}"))), ["fr"]);
    let through_copy = app.records(copy);
    assert_eq!(through_copy.len(), 4);
    assert_eq!(cell(&through_copy[0], "fr")["value"], "Enregistrer");
}

#[test]
fn writes_in_a_branch_and_in_its_source_do_not_cross() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2", "r3"]);
    let (_, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    let base = model(&app, &master);
    set(&app, &branch_view, "r1", "a", "in-branch");
    app.add_records(
        &branch_view,
        json!([{"id": "b-only", "cells": [{"columnId": "a", "value": "b"}]}]),
    );
    delete_records(&app, &branch_view, &["r2"]);
    assert_records(&model(&app, &master), &base, "master after branch writes");

    set(&app, &master, "r1", "b", "in-master");
    app.add_records(&master, json!([{"id": "m-only", "cells": [{"columnId": "a", "value": "m"}]}]));
    delete_records(&app, &master, &["r3"]);
    assert_records(
        &model(&app, &branch_view),
        &rows(&[
            ("r1", ["in-branch", "r1b", "r1c"]),
            ("r3", ["r3a", "r3b", "r3c"]),
            ("b-only", ["b", "", ""]),
        ]),
        "the branch",
    );
    assert_records(
        &model(&app, &master),
        &rows(&[
            ("r1", ["r1a", "in-master", "r1c"]),
            ("r2", ["r2a", "r2b", "r2c"]),
            ("m-only", ["m", "", ""]),
        ]),
        "master",
    );
}

// ---------------------------------------------------------------------------------------------
// Branch merge: options
// ---------------------------------------------------------------------------------------------

#[test]
fn merge_answers_202_with_a_task_that_ends_successful() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let res = post_query(
        &app,
        &format!(
            "/v1/branches/{}/merge?destinationBranchId={}&mergeRecordOptions=update",
            s.branch, s.grid
        ),
    );
    let started = res.assert_status(202).clone();
    let task = wait_task(&app, &res);
    assert_eq!(task["id"], started["id"]);
    assert_eq!(task["status"], "successful");
}

#[test]
fn merge_update_only_brings_source_only_cell_changes_and_keeps_conflicts() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let master = merge_scenario(&app, &s, "update");
    let expected = rows(&[
        ("r1", ["dst-r1a", "src-r1b", "r1c"]),
        ("r2", ["src-r2a", "r2b", "dst-r2c"]),
        ("r3", ["r3a", "r3b", "r3c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "src-r6c"]),
        ("d-new", ["dn-a", "dn-b", "dn-c"]),
    ]);
    assert_records(&master, &expected, "master after update");
}

#[test]
fn merge_update_with_override_lets_the_source_win_conflicts() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let master = merge_scenario(&app, &s, "update,override");
    let expected = rows(&[
        ("r1", ["src-r1a", "src-r1b", "r1c"]),
        ("r2", ["src-r2a", "r2b", "dst-r2c"]),
        ("r3", ["r3a", "r3b", "r3c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "src-r6c"]),
        ("d-new", ["dn-a", "dn-b", "dn-c"]),
    ]);
    assert_records(&master, &expected, "master after update,override");
}

#[test]
fn merge_add_only_brings_new_records_and_no_cell_change() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let master = merge_scenario(&app, &s, "add");
    let expected = rows(&[
        ("r1", ["dst-r1a", "r1b", "r1c"]),
        ("r2", ["r2a", "r2b", "dst-r2c"]),
        ("r3", ["r3a", "r3b", "r3c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "r6c"]),
        ("d-new", ["dn-a", "dn-b", "dn-c"]),
        ("s-new", ["sn-a", "sn-b", "sn-c"]),
    ]);
    assert_records(&master, &expected, "master after add (r4, deleted in master, stays deleted)");
    let added = app.records(&s.master).into_iter().find(|r| r["id"] == "s-new").expect("s-new");
    assert_eq!(added["path"], "folder");
}

#[test]
fn merge_delete_only_removes_records_deleted_in_the_source() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let master = merge_scenario(&app, &s, "delete");
    let expected = rows(&[
        ("r1", ["dst-r1a", "r1b", "r1c"]),
        ("r2", ["r2a", "r2b", "dst-r2c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "r6c"]),
        ("d-new", ["dn-a", "dn-b", "dn-c"]),
    ]);
    assert_records(&master, &expected, "master after delete");
}

#[test]
fn merge_with_all_four_options() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let master = merge_scenario(&app, &s, "add,update,delete,override");
    let expected = rows(&[
        ("r1", ["src-r1a", "src-r1b", "r1c"]),
        ("r2", ["src-r2a", "r2b", "dst-r2c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "src-r6c"]),
        ("d-new", ["dn-a", "dn-b", "dn-c"]),
        ("s-new", ["sn-a", "sn-b", "sn-c"]),
    ]);
    assert_records(&master, &expected, "master after add,update,delete,override");
}

#[test]
fn merge_options_may_be_repeated_or_sent_in_a_json_body() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let res = post_query(
        &app,
        &format!(
            "/v1/branches/{}/merge?destinationBranchId={}&mergeRecordOptions=add\
             &mergeRecordOptions=update",
            s.branch, s.grid
        ),
    );
    wait_task(&app, &res);
    let expected = rows(&[
        ("r1", ["dst-r1a", "src-r1b", "r1c"]),
        ("r2", ["src-r2a", "r2b", "dst-r2c"]),
        ("r3", ["r3a", "r3b", "r3c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "src-r6c"]),
        ("d-new", ["dn-a", "dn-b", "dn-c"]),
        ("s-new", ["sn-a", "sn-b", "sn-c"]),
    ]);
    assert_records(&model(&app, &s.master), &expected, "master after repeated add and update");

    let s = conflict_scenario(&app);
    let res = app.post(
        &format!("/v1/branches/{}/merge?destinationBranchId={}", s.branch, s.grid),
        &json!({"mergeRecordOptions": ["delete", "update", "override"]}),
    );
    wait_task(&app, &res);
    let expected = rows(&[
        ("r1", ["src-r1a", "src-r1b", "r1c"]),
        ("r2", ["src-r2a", "r2b", "dst-r2c"]),
        ("r5", ["r5a", "r5b", "r5c"]),
        ("r6", ["r6a", "r6b", "src-r6c"]),
        ("d-new", ["dn-a", "dn-b", "dn-c"]),
    ]);
    assert_records(&model(&app, &s.master), &expected, "master after a JSON-body merge");
}

#[test]
fn bad_merge_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let s = conflict_scenario(&app);
    let (other_grid, _) = abc_grid(&app, &["r1"]);
    let (other_branch, _) = branch_ids(&create_branch(&app, &other_grid, "other"));
    let before = model(&app, &s.master);
    let (b, g) = (&s.branch, &s.grid);
    let cases = [
        (format!("/v1/branches/{b}/merge?mergeRecordOptions=add"), 400, "requestParameterMissing"),
        (format!("/v1/branches/{b}/merge?destinationBranchId={g}"), 400, "requestParameterMissing"),
        (
            format!("/v1/branches/{b}/merge?destinationBranchId={g}&mergeRecordOptions=add,merge"),
            400,
            "badRequest",
        ),
        (
            format!("/v1/branches/{b}/merge?destinationBranchId={b}&mergeRecordOptions=add"),
            422,
            "unprocessable",
        ),
        (
            format!("/v1/branches/{g}/merge?destinationBranchId={g}&mergeRecordOptions=update"),
            422,
            "unprocessable",
        ),
        (
            format!(
                "/v1/branches/{b}/merge?destinationBranchId={other_grid}&mergeRecordOptions=add"
            ),
            422,
            "unprocessable",
        ),
        (
            format!(
                "/v1/branches/{other_branch}/merge?destinationBranchId={g}\
                     &mergeRecordOptions=add,update,delete"
            ),
            422,
            "unprocessable",
        ),
        (
            format!(
                "/v1/branches/nosuchbranch01/merge?destinationBranchId={g}\
                     &mergeRecordOptions=add"
            ),
            404,
            "branchIsNotFound",
        ),
        (
            format!(
                "/v1/branches/{b}/merge?destinationBranchId=nosuchbranch01\
                     &mergeRecordOptions=add"
            ),
            404,
            "branchIsNotFound",
        ),
    ];
    for (path, status, code) in cases {
        let res = post_query(&app, &path);
        assert_eq!(res.status, status, "{path}: {}", res.text);
        res.assert_error(status, code);
    }
    assert_records(&model(&app, &s.master), &before, "master after refused merges");
    assert_records(&model(&app, &s.branch_view), &scenario_source(), "the branch");
}

// ---------------------------------------------------------------------------------------------
// Branch merge: common point, direction, dependencies, history, restart
// ---------------------------------------------------------------------------------------------

#[test]
fn a_second_merge_brings_only_the_changes_made_since_the_first() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2", "r3"]);
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    set(&app, &branch_view, "r1", "a", "s1");
    set(&app, &branch_view, "r1", "c", "sc");
    set(&app, &master, "r1", "c", "dc");
    app.add_records(
        &branch_view,
        json!([{"id": "n1", "cells": [{"columnId": "a", "value": "n"}]}]),
    );
    merge(&app, &branch, &grid, "add,update,delete");
    assert_records(
        &model(&app, &master),
        &rows(&[
            ("r1", ["s1", "r1b", "dc"]),
            ("r2", ["r2a", "r2b", "r2c"]),
            ("r3", ["r3a", "r3b", "r3c"]),
            ("n1", ["n", "", ""]),
        ]),
        "master after the first merge",
    );

    // Since the first merge: master changes r1.a and deletes n1; the branch changes r1.b and r2.a
    // and adds n2.
    set(&app, &master, "r1", "a", "d2");
    delete_records(&app, &master, &["n1"]);
    set(&app, &branch_view, "r1", "b", "s2");
    set(&app, &branch_view, "r2", "a", "s2a");
    app.add_records(
        &branch_view,
        json!([{"id": "n2", "cells": [{"columnId": "b", "value": "m"}]}]),
    );
    merge(&app, &branch, &grid, "add,update,delete,override");
    assert_records(
        &model(&app, &master),
        &rows(&[
            ("r1", ["d2", "s2", "dc"]),
            ("r2", ["s2a", "r2b", "r2c"]),
            ("r3", ["r3a", "r3b", "r3c"]),
            ("n2", ["", "m", ""]),
        ]),
        "master after the second merge (r1.a, r1.c and n1 were not changed in the branch since)",
    );
}

#[test]
fn merge_from_master_into_a_branch_whose_records_were_deleted() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2", "r3", "r4", "r5"]);
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    delete_records(&app, &branch_view, &["r1", "r2"]);
    set(&app, &branch_view, "r5", "b", "in-branch");
    set(&app, &master, "r3", "a", "m-r3a");
    app.add_records(&master, json!([{"id": "m-new", "cells": [{"columnId": "c", "value": "mc"}]}]));
    delete_records(&app, &master, &["r4"]);
    let master_before = model(&app, &master);
    merge(&app, &grid, &branch, "add,update,delete");
    assert_records(
        &model(&app, &branch_view),
        &rows(&[
            ("r3", ["m-r3a", "r3b", "r3c"]),
            ("r5", ["r5a", "in-branch", "r5c"]),
            ("m-new", ["", "", "mc"]),
        ]),
        "the branch after merging master into it (r1 and r2 stay deleted)",
    );
    assert_records(&model(&app, &master), &master_before, "master, the merge source");
}

/// Two branches of master merge from where their lineages part: the first branch's fork.
/// A master change made between the two forks is in the second branch only, so it counts as
/// the destination's change and stays.
#[test]
fn sibling_branches_merge_from_where_their_lineages_part() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2", "r3"]);
    let (first, first_view) = branch_ids(&create_branch(&app, &grid, "vendor-a"));
    set(&app, &master, "r1", "a", "master-between-forks");
    let (second, second_view) = branch_ids(&create_branch(&app, &grid, "vendor-b"));
    set(&app, &first_view, "r2", "b", "first-r2b");
    set(&app, &first_view, "r1", "c", "first-r1c");
    app.add_records(
        &first_view,
        json!([{"id": "f-new", "cells": [{"columnId": "a", "value": "fa"}]}]),
    );
    delete_records(&app, &first_view, &["r3"]);
    set(&app, &second_view, "r2", "c", "second-r2c");
    merge(&app, &first, &second, "add,update,delete");
    assert_records(
        &model(&app, &second_view),
        &rows(&[
            ("r1", ["master-between-forks", "r1b", "first-r1c"]),
            ("r2", ["r2a", "first-r2b", "second-r2c"]),
            ("f-new", ["fa", "", ""]),
        ]),
        "the second branch after merging the first into it",
    );
    let first_model = model(&app, &first_view);
    assert_eq!(first_model.len(), 3, "the source branch is unchanged: {first_model:?}");
}

#[test]
fn merged_source_cells_follow_the_destination_dependency_rules() {
    let app = spawn_app();
    let (grid, master) = app.create_grid("Strings");
    for column in [
        json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS",
               "localizationType": "sourceLanguage"}),
        json!({"id": "fr", "name": "French", "type": "language", "languageCode": "frFR",
               "localizationType": "targetLanguage"}),
    ] {
        app.create_column(&master, column);
    }
    app.add_records(
        &master,
        json!([
            {"id": "r1", "cells": [{"columnId": "en", "value": "Hi"},
                                   {"columnId": "fr", "value": "Salut"}]},
            {"id": "r2", "cells": [{"columnId": "en", "value": "Bye"},
                                   {"columnId": "fr", "value": "Au revoir"}]},
            {"id": "r3", "cells": [{"columnId": "en", "value": "Yes"},
                                   {"columnId": "fr", "value": "Oui"}]},
        ]),
    );
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    // Only master gets the dependency: the branch's own writes put nothing out of date.
    app.post(
        &format!("/v1/views/{master}/dependencies"),
        &json!({"sourceColumnId": "en", "targetColumnId": "fr"}),
    )
    .assert_status(201);
    assert!(app.records(&master).iter().all(|r| cell(r, "fr")["dependencyStatus"] == "upToDate"));
    set(&app, &branch_view, "r1", "en", "Hello");
    app.patch(
        &format!("/v1/views/{branch_view}/records"),
        &json!([{"id": "r2", "cells": [{"columnId": "en", "value": "Goodbye",
                                        "sourceStatus": "readyForTranslation"}]}]),
    )
    .assert_status(200);
    let in_branch = app.records(&branch_view);
    assert_eq!(cell(&in_branch[0], "fr")["dependencyStatus"], "unset", "{}", in_branch[0]);

    merge(&app, &branch, &grid, "update");
    let merged = app.records(&master);
    let by_id = |id: &str| merged.iter().find(|r| r["id"] == id).expect("record").clone();
    let (r1, r2, r3) = (by_id("r1"), by_id("r2"), by_id("r3"));
    assert_eq!(cell(&r1, "en")["value"], "Hello");
    assert_eq!(cell(&r1, "fr")["value"], "Salut");
    assert_eq!(cell(&r1, "fr")["dependencyStatus"], "outOfDate", "{r1}");
    assert_eq!(cell(&r2, "en")["value"], "Goodbye");
    assert_eq!(cell(&r2, "en")["sourceStatus"], "readyForTranslation", "{r2}");
    assert_eq!(cell(&r2, "fr")["value"], "Au revoir");
    assert_eq!(cell(&r2, "fr")["dependencyStatus"], "outOfDate", "{r2}");
    assert_eq!(cell(&r3, "en")["value"], "Yes");
    assert_eq!(cell(&r3, "fr")["dependencyStatus"], "upToDate", "{r3}");
}

/// The value each history entry wrote in column `a` (null where it did not write it).
fn written_a(entries: &[Value]) -> Vec<Value> {
    entries
        .iter()
        .map(|e| {
            let cells = e["cells"].as_array().expect("cells");
            cells.iter().find(|c| c["columnId"] == "a").map_or(Value::Null, |c| c["value"].clone())
        })
        .collect()
}

fn history(app: &TestApp, view: &str, id: &str) -> Vec<Value> {
    let res = app.get(&format!("/v1/views/{view}/records/{id}/histories"));
    res.assert_status(200).as_array().expect("a list of entries").clone()
}

#[test]
fn a_merge_appears_in_the_destination_record_history() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2"]);
    assert_eq!(written_a(&history(&app, &master, "r1")), ["r1a"]);
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    assert_eq!(history(&app, &master, "r1").len(), 1, "branching wrote master's history");
    set(&app, &branch_view, "r1", "a", "two");
    app.add_records(
        &branch_view,
        json!([{"id": "n1", "cells": [{"columnId": "a", "value": "nine"}]}]),
    );
    merge(&app, &branch, &grid, "add,update");
    let entries = history(&app, &master, "r1");
    assert_eq!(written_a(&entries), ["two", "r1a"], "{entries:?}");
    assert!(entries[0]["lastModifiedTime"].is_string(), "{}", entries[0]);
    let added = history(&app, &master, "n1");
    assert_eq!(written_a(&added), ["nine"], "{added:?}");
    assert_eq!(history(&app, &master, "r2").len(), 1, "an unmerged record got an entry");
}

#[test]
fn a_branch_and_its_merge_point_survive_a_restart() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2"]);
    let res = app.post(
        "/v1/views",
        &json!({"name": "Sub", "gridId": grid, "columns": [{"id": "a"}, {"id": "b"}]}),
    );
    res.assert_status(200);
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    set(&app, &branch_view, "r1", "a", "s1");
    merge(&app, &branch, &grid, "update");
    set(&app, &branch_view, "r2", "a", "s2");
    app.add_records(
        &branch_view,
        json!([{"id": "n1", "cells": [{"columnId": "c", "value": "x"}]}]),
    );
    let branch_body = app.snapshot(&format!("/v1/branches/{branch}"));
    let list = app.snapshot(&format!("/v1/branches?gridId={grid}"));
    let views = app.snapshot(&format!("/v1/views?branchId={branch}"));
    let branch_records = app.records(&branch_view);
    let master_records = app.records(&master);
    let view_bodies: Vec<(String, Value)> = views_of(&app, &branch)
        .into_iter()
        .map(|(id, _)| {
            let body = app.snapshot(&format!("/v1/views/{id}"));
            (id, body)
        })
        .collect();
    assert_eq!(view_bodies.len(), 2, "{views}");

    let app = app.restart();
    app.assert_unchanged(&format!("/v1/branches/{branch}"), &branch_body);
    app.assert_unchanged(&format!("/v1/branches?gridId={grid}"), &list);
    app.assert_unchanged(&format!("/v1/views?branchId={branch}"), &views);
    for (id, body) in &view_bodies {
        app.assert_unchanged(&format!("/v1/views/{id}"), body);
    }
    assert_eq!(app.records(&branch_view), branch_records);
    assert_eq!(app.records(&master), master_records);

    // The first merge is still the common point: master's later change of r1.a stays.
    set(&app, &master, "r1", "a", "d1");
    merge(&app, &branch, &grid, "add,update,override");
    assert_records(
        &model(&app, &master),
        &rows(&[("r1", ["d1", "r1b", "r1c"]), ("r2", ["s2", "r2b", "r2c"]), ("n1", ["", "", "x"])]),
        "master after a merge following the restart",
    );
}

// ---------------------------------------------------------------------------------------------
// View merge
// ---------------------------------------------------------------------------------------------

#[test]
fn a_view_merge_is_limited_to_the_source_view_columns() {
    let app = spawn_app();
    let (grid, master) = abc_grid(&app, &["r1", "r2"]);
    let res = app.post(
        "/v1/views",
        &json!({"name": "Sub", "gridId": grid, "columns": [{"id": "a"}, {"id": "b"}]}),
    );
    let master_sub = res.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let (branch, branch_view) = branch_ids(&create_branch(&app, &grid, "rel-1"));
    let (sub, _) = views_of(&app, &branch)
        .into_iter()
        .find(|(_, name)| name == "Sub")
        .expect("the branch has its copy of Sub");
    assert_ne!(sub, master_sub);
    set(&app, &branch_view, "r1", "a", "sa");
    set(&app, &branch_view, "r1", "c", "sc");
    set(&app, &branch_view, "r2", "b", "sb");
    app.add_records(
        &branch_view,
        json!([{"id": "n1", "cells": [{"columnId": "a", "value": "na"},
                                      {"columnId": "b", "value": "nb"}]}]),
    );
    let source = model(&app, &branch_view);

    app.call(
        Method::POST,
        &format!("/v1/views/{sub}/merge?mergeRecordOptions=update"),
        Some(&app.key),
        None,
    )
    .assert_error(400, "requestParameterMissing");
    app.call(
        Method::POST,
        &format!("/v1/views/{sub}/merge?destinationViewId=nosuchview0001&mergeRecordOptions=add"),
        Some(&app.key),
        None,
    )
    .assert_error(404, "viewIsNotFound");

    let res = post_query(
        &app,
        &format!("/v1/views/{sub}/merge?destinationViewId={master}&mergeRecordOptions=add,update"),
    );
    wait_task(&app, &res);
    assert_records(
        &model(&app, &master),
        &rows(&[
            ("r1", ["sa", "r1b", "r1c"]),
            ("r2", ["r2a", "sb", "r2c"]),
            ("n1", ["na", "nb", ""]),
        ]),
        "master after merging the Sub view (c is not in it)",
    );
    assert_records(&model(&app, &branch_view), &source, "the branch, the merge source");
}

#[test]
fn a_branch_is_renamed_and_master_keeps_its_name() {
    let app = spawn_app();
    let (grid, _) = abc_grid(&app, &["r1"]);
    let res = app.post(&format!("/v1/branches?branchId={grid}"), &json!({"name": "rel-1"}));
    let (branch, _) = branch_ids(res.assert_status(201));
    let res = app.patch(&format!("/v1/branches/{branch}"), &json!({"name": "release 1.0"}));
    assert_eq!(res.assert_status(200)["name"], "release 1.0");
    assert_eq!(res.header("content-type"), Some("application/json"));
    let res = app.patch(&format!("/v1/branches/{branch}"), &json!({"description": "for QA"}));
    assert_eq!(res.assert_status(200)["name"], "release 1.0", "a name not given is kept");

    let before = app.snapshot(&format!("/v1/branches/{branch}"));
    for (body, status, code) in [
        (json!({}), 400, "requestParameterMissing"),
        (json!({"name": " "}), 400, "badRequest"),
        (json!({"name": "x".repeat(256)}), 400, "badRequest"),
        (json!({"name": "a", "viewId": "v"}), 400, "badRequest"),
    ] {
        app.patch(&format!("/v1/branches/{branch}"), &body).assert_error(status, code);
    }
    app.assert_unchanged(&format!("/v1/branches/{branch}"), &before);
    app.patch(&format!("/v1/branches/{grid}"), &json!({"name": "main"}))
        .assert_error(400, "badRequest");
    app.patch("/v1/branches/nope", &json!({"name": "x"})).assert_error(404, "branchIsNotFound");
    let writer = app.create_key(&["read", "write"], json!({"all": true}));
    app.call(
        Method::PATCH,
        &format!("/v1/branches/{branch}"),
        Some(&writer),
        Some(&json!({"name": "x"})),
    )
    .assert_error(403, "accessDenied");

    let app = app.restart();
    assert_eq!(
        app.get(&format!("/v1/branches/{branch}")).assert_status(200)["name"],
        "release 1.0"
    );
    let names = listed(&app, &grid);
    assert!(names.contains(&(grid.clone(), "master".to_owned())), "{names:?}");
}
