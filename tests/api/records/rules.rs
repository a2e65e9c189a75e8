//! The rules of a records write (issue 3): request size, id length, duplicate and existing ids,
//! missing and unknown ids, unknown and non-editable columns. Every refused write is checked to
//! change nothing.

use serde_json::{json, Value};

use super::{assert_refused, ids_of, simple_grid, titled, typed_grid};
use crate::helpers::{cell, spawn_app, TestApp};

/// A server with a one-column grid holding record "r1": (app, view id, records before).
fn one_record() -> (TestApp, String, Vec<Value>) {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, titled(["r1".to_owned()]));
    let before = app.records(&view);
    (app, view, before)
}

fn many(prefix: &str, n: usize) -> Value {
    titled((0..n).map(|i| format!("{prefix}{i:04}")))
}

#[test]
fn a_request_of_1000_records_passes_and_one_of_1001_is_refused() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let added = app.add_records(&view, many("a", 1000));
    assert_eq!(added.len(), 1000);
    let before = app.records(&view);
    let res = app.post(&format!("/v1/views/{view}/records"), &many("b", 1001));
    assert_refused(&app, &view, &res, 400, "requestRecordsExceedLimitation", &before);
    let updates: Vec<Value> = (0..1000)
        .map(|i| json!({"id": format!("a{i:04}"), "cells": [{"columnId": "title", "value": "u"}]}))
        .collect();
    let res = app.patch(&format!("/v1/views/{view}/records"), &json!(updates));
    assert_eq!(res.assert_status(200).as_array().map(Vec::len), Some(1000));
    let before = app.records(&view);
    assert!(before.iter().all(|r| cell(r, "title")["value"] == "u"));
    let mut updates = updates;
    updates.push(json!({"id": "a0000", "cells": [{"columnId": "title", "value": "v"}]}));
    let res = app.patch(&format!("/v1/views/{view}/records"), &json!(updates));
    assert_refused(&app, &view, &res, 400, "requestRecordsExceedLimitation", &before);
}

#[test]
fn a_record_id_is_at_most_500_characters() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let longest = "é".repeat(500);
    let added = app.add_records(&view, json!([{"id": longest}]));
    assert_eq!(added[0]["id"].as_str(), Some(longest.as_str()));
    let before = app.records(&view);
    let res = app.post(&format!("/v1/views/{view}/records"), &json!([{"id": "x".repeat(501)}]));
    assert_refused(&app, &view, &res, 400, "invalidLengthRecordId", &before);
    let res = app.patch(&format!("/v1/views/{view}/records"), &json!([{"id": "y".repeat(501)}]));
    assert_refused(&app, &view, &res, 400, "invalidLengthRecordId", &before);
}

#[test]
fn a_record_id_twice_in_one_request_is_refused() {
    let (app, view, before) = one_record();
    let res =
        app.post(&format!("/v1/views/{view}/records"), &titled(["n", "m", "n"].map(String::from)));
    assert_refused(&app, &view, &res, 400, "duplicateRecordId", &before);
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "title", "value": "a"}]},
                {"id": "r1", "cells": [{"columnId": "title", "value": "b"}]}]),
    );
    assert_refused(&app, &view, &res, 400, "duplicateRecordId", &before);
}

#[test]
fn adding_an_existing_id_is_a_conflict() {
    let (app, view, before) = one_record();
    let res = app.post(&format!("/v1/views/{view}/records"), &titled(["r1".to_owned()]));
    assert_refused(&app, &view, &res, 409, "recordIdAlreadyExists", &before);
    let res =
        app.post(&format!("/v1/views/{view}/records"), &json!([{"id": "r1", "path": "elsewhere"}]));
    assert_refused(&app, &view, &res, 409, "recordIdAlreadyExists", &before);
}

#[test]
fn patch_without_an_id_is_refused() {
    let (app, view, before) = one_record();
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"cells": [{"columnId": "title", "value": "x"}]}]),
    );
    assert_refused(&app, &view, &res, 400, "nullRecordId", &before);
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": null, "cells": [{"columnId": "title", "value": "x"}]}]),
    );
    assert_refused(&app, &view, &res, 400, "nullRecordId", &before);
}

#[test]
fn an_unknown_record_is_not_found() {
    let (app, view, before) = one_record();
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "title", "value": "x"}]},
                {"id": "ghost", "cells": [{"columnId": "title", "value": "x"}]}]),
    );
    assert_refused(&app, &view, &res, 404, "nonexistentRecordId", &before);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("ghost")), "{}", res.text);
    let res = app.patch(
        &format!("/v1/views/{view}/records/ghost"),
        &json!({"cells": [{"columnId": "title", "value": "x"}]}),
    );
    assert_refused(&app, &view, &res, 404, "nonexistentRecordId", &before);
}

#[test]
fn an_unknown_column_is_not_found_in_the_view() {
    let (app, view, before) = one_record();
    let body = json!([{"id": "r2", "cells": [{"columnId": "nope", "value": "x"}]}]);
    let res = app.post(&format!("/v1/views/{view}/records"), &body);
    assert_refused(&app, &view, &res, 404, "columnNotFoundInView", &before);
    let body = json!([{"id": "r1", "cells": [{"columnId": "title", "value": "changed"},
                                              {"columnId": "nope", "value": "x"}]}]);
    let res = app.patch(&format!("/v1/views/{view}/records"), &body);
    assert_refused(&app, &view, &res, 404, "columnNotFoundInView", &before);
}

#[test]
fn a_non_editable_column_of_a_view_refuses_writes() {
    let app = spawn_app();
    let (grid, view) = typed_grid(&app);
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "t"}]}]));
    let res = app.post(
        "/v1/views",
        &json!({"name": "Counting", "gridId": grid,
                "columns": [{"id": "title", "editable": false}, {"id": "count"}]}),
    );
    let limited = res.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let before = app.records(&limited);
    assert_eq!(before[0]["cells"].as_array().map(Vec::len), Some(2));
    let res = app.post(
        &format!("/v1/views/{limited}/records"),
        &json!([{"id": "r2", "cells": [{"columnId": "title", "value": "x"}]}]),
    );
    assert_refused(&app, &limited, &res, 400, "columnIsNotEditableInView", &before);
    let res = app.patch(
        &format!("/v1/views/{limited}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "count", "value": 1},
                                       {"columnId": "title", "value": "x"}]}]),
    );
    assert_refused(&app, &limited, &res, 400, "columnIsNotEditableInView", &before);
    let res = app.patch(
        &format!("/v1/views/{limited}/records/r1"),
        &json!({"cells": [{"columnId": "title", "value": "x"}]}),
    );
    assert_refused(&app, &limited, &res, 400, "columnIsNotEditableInView", &before);
    let res = app.patch(
        &format!("/v1/views/{limited}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "notes", "value": "x"}]}]),
    );
    assert_refused(&app, &limited, &res, 404, "columnNotFoundInView", &before);
    let res = app.patch(
        &format!("/v1/views/{limited}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "count", "value": 5}]}]),
    );
    let updated = res.assert_status(200).as_array().expect("a list").clone();
    assert_eq!(
        updated[0]["cells"],
        json!([{"columnId": "title", "value": "t"}, {"columnId": "count", "value": 5}])
    );
}

#[test]
fn a_request_with_several_bad_records_lists_every_problem_and_changes_nothing() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    app.add_records(&view, json!([{"id": "old", "cells": [{"columnId": "title", "value": "o"}]}]));
    let before = app.records(&view);
    let res = app.post(
        &format!("/v1/views/{view}/records"),
        &json!([
            {"id": "ok1", "cells": [{"columnId": "title", "value": "fine"}]},
            {"id": "a", "cells": [{"columnId": "nope", "value": "x"}]},
            {"id": "b", "cells": [{"columnId": "count", "value": "abc"}]},
            {"id": "x".repeat(501)},
            {"id": "old"},
            {"id": "ok2"},
        ]),
    );
    assert_refused(&app, &view, &res, 404, "columnNotFoundInView", &before);
    let messages: Vec<&str> = res.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m.as_str().expect("a string"))
        .collect();
    assert_eq!(messages.len(), 4, "{messages:?}");
    for (message, at) in
        messages.iter().zip(["records[1]", "records[2]", "records[3]", "records[4]"])
    {
        assert!(message.contains(at), "{message}");
    }
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([
            {"id": "old", "cells": [{"columnId": "title", "value": "changed"}]},
            {"cells": []},
            {"id": "ghost"},
            {"id": "old", "cells": [{"columnId": "done", "value": "maybe"}]},
        ]),
    );
    assert_refused(&app, &view, &res, 400, "nullRecordId", &before);
    assert_eq!(res.body["messages"].as_array().map(Vec::len), Some(3), "{}", res.text);
    assert_eq!(ids_of(&app.records(&view)), ["old"]);
}

#[test]
fn malformed_records_are_refused() {
    let (app, view, before) = one_record();
    let path = format!("/v1/views/{view}/records");
    let res = app.post(&path, &json!([{"id": ""}]));
    assert_refused(&app, &view, &res, 400, "invalidRecordId", &before);
    let res = app.patch(&format!("{path}/r1"), &json!({"id": ""}));
    assert_refused(&app, &view, &res, 400, "invalidRecordId", &before);
    for body in [
        json!({"id": "r2"}),
        json!([{"id": "r2", "cells": {"title": "x"}}]),
        json!([{"id": 7}]),
        json!([{"id": "r2", "cells": [{"value": "x"}]}]),
        json!([{"id": "r2", "cells": [{"columnId": "title", "value": "a"},
                                      {"columnId": "title", "value": "b"}]}]),
    ] {
        let res = app.post(&path, &body);
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
    }
    let res = app.send(
        app.request(reqwest::Method::POST, &path, Some(&app.key))
            .header("Content-Type", "application/json")
            .body("[{\"id\": \"r2\""),
    );
    assert_refused(&app, &view, &res, 400, "badRequest", &before);
}
