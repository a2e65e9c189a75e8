//! Who changed a record and when: `lastModifiedBy` (the key's user) and `lastModifiedTime` on
//! every record, and the record history (`GET .../records/<id>/histories`: newest first, paged,
//! one entry per change, Enterprise only).

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{cell, follow, link, page_query, spawn_app, Resp, TestApp};
use crate::records::simple_grid;

fn millis(time: &Value) -> i64 {
    let text = time.as_str().expect("a timestamp");
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text} is not RFC 3339: {e}"))
        .timestamp_millis()
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn histories(app: &TestApp, view: &str, id: &str, query: &str) -> Resp {
    app.get(&format!("/v1/views/{view}/records/{id}/histories?{query}"))
}

fn entries(res: &Resp) -> Vec<Value> {
    res.assert_status(200).as_array().expect("a list of entries").clone()
}

/// The title each entry wrote (null where an entry did not write it).
fn titles(entries: &[Value]) -> Vec<Value> {
    entries
        .iter()
        .map(|e| {
            let cells = e["cells"].as_array().expect("cells");
            cells
                .iter()
                .find(|c| c["columnId"] == "title")
                .map_or(Value::Null, |c| c["value"].clone())
        })
        .collect()
}

fn set_title(app: &TestApp, view: &str, key: &str, id: &str, title: &str) -> Value {
    let res = app.call(
        Method::PATCH,
        &format!("/v1/views/{view}/records"),
        Some(key),
        Some(&json!([{"id": id, "cells": [{"columnId": "title", "value": title}]}])),
    );
    res.assert_status(200)[0].clone()
}

#[test]
fn last_modified_by_is_the_key_user_and_the_time_is_set() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    let bot = app.create_user_key("ci-bot");
    let start = now_ms();
    let res = app.call(
        Method::POST,
        &format!("/v1/views/{view}/records"),
        Some(&bot),
        Some(&json!([{"id": "r1"}, {"id": "r2"}])),
    );
    let added = res.assert_status(201).as_array().expect("a list").clone();
    let end = now_ms();
    for record in &added {
        assert_eq!(record["lastModifiedBy"], "ci-bot");
        let t = millis(&record["lastModifiedTime"]);
        assert!(start <= t && t <= end, "{start} <= {t} <= {end}");
    }
    assert_eq!(app.records(&view), added);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let updated = set_title(&app, &view, &app.key, "r2", "by owner");
    let owner = updated["lastModifiedBy"].as_str().expect("a user").to_owned();
    assert!(!owner.is_empty() && owner != "ci-bot", "{owner}");
    assert!(millis(&updated["lastModifiedTime"]) > millis(&added[1]["lastModifiedTime"]));
    let listed = app.records(&view);
    assert_eq!(listed[0], added[0], "an update of r2 touched r1");
    assert_eq!(listed[1], updated);
}

#[test]
fn history_has_one_entry_per_change_newest_first() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.create_column(&view, json!({"id": "count", "name": "Count", "type": "number"}));
    let bot = app.create_user_key("ci-bot");
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "title", "value": "v1"}]},
               {"id": "other", "cells": [{"columnId": "title", "value": "o"}]}]),
    );
    set_title(&app, &view, &app.key, "r1", "v2");
    set_title(&app, &view, &app.key, "other", "o2");
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "count", "value": 5}]}]),
    )
    .assert_status(200);
    set_title(&app, &view, &bot, "r1", "v3");
    let res = histories(&app, &view, "r1", "");
    let all = entries(&res);
    assert_eq!(res.header("x-total-count"), Some("4"));
    assert_eq!(all.len(), 4);
    assert_eq!(titles(&all), [json!("v3"), Value::Null, json!("v2"), json!("v1")]);
    assert_eq!(cell(&all[1], "count")["value"], 5);
    assert_eq!(all[0]["lastModifiedBy"], "ci-bot");
    assert_ne!(all[1]["lastModifiedBy"], "ci-bot");
    let times: Vec<i64> = all.iter().map(|e| millis(&e["lastModifiedTime"])).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    for entry in &all {
        assert_eq!(entry["path"], "");
        assert!(entry["cells"].is_array(), "{entry}");
    }
    let res = histories(&app, &view, "r1", &page_query(1, 2));
    let page = entries(&res);
    assert_eq!(page, all[1..3]);
    assert_eq!(res.header("x-total-count"), Some("4"));
    // Paged like records: `Link` leads to the next and previous pages.
    let next = link(&res, "next").expect("a next page");
    assert_eq!(entries(&follow(&app, &next)), all[3..]);
    let prev = link(&res, "prev").expect("a previous page");
    assert_eq!(entries(&follow(&app, &prev)), all[..2]);
    let last = histories(&app, &view, "r1", &page_query(2, 2));
    assert_eq!(link(&last, "next"), None);
    let other = entries(&histories(&app, &view, "other", ""));
    assert_eq!(titles(&other), ["o2", "o"]);
    // The OpenAPI's fetchRequest sent whole, as JSON (the JS SDK): its page and columnIds read
    // as the parameters of their names; one in another notation (the Go SDK's) is left out.
    let fetch = json!({"page": "{\"offset\":1,\"limit\":2}", "columnIds": ["title"]});
    let query =
        serde_urlencoded::to_string([("fetchRequest", fetch.to_string())]).expect("encodes");
    let res = histories(&app, &view, "r1", &query);
    assert_eq!(titles(&entries(&res)), [json!("v2"), json!("v1")]);
    assert_eq!(res.header("x-total-count"), Some("3"));
    let fetch = json!({"page": {"limit": 1}});
    let query =
        serde_urlencoded::to_string([("fetchRequest", fetch.to_string())]).expect("encodes");
    assert_eq!(entries(&histories(&app, &view, "r1", &query)), all[..1]);
    let go =
        serde_urlencoded::to_string([("fetchRequest", "{[] <nil> <nil> [] 0xc0 <nil> <nil>}")])
            .expect("encodes");
    assert_eq!(entries(&histories(&app, &view, "r1", &go)), all);
}

#[test]
fn history_follows_a_renamed_record_and_refuses_bad_requests() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "a"}]}]));
    let res = app.patch(
        &format!("/v1/views/{view}/records/r1"),
        &json!({"id": "r9", "path": "moved", "cells": [{"columnId": "title", "value": "b"}]}),
    );
    res.assert_status(200);
    let all = entries(&histories(&app, &view, "r9", ""));
    assert_eq!(titles(&all), ["b", "a"]);
    assert_eq!(all[0]["path"], "moved");
    assert_eq!(all[1]["path"], "");
    histories(&app, &view, "r1", "").assert_error(404, "nonexistentRecordId");
    let bad = serde_urlencoded::to_string([("page", "{\"offset\":-1}")]).expect("encodes");
    histories(&app, &view, "r9", &bad).assert_error(400, "invalidPaging");
    histories(&app, "nosuchview", "r9", "").assert_error(404, "viewIsNotFound");
}

#[test]
fn history_is_an_enterprise_feature() {
    let app = spawn_app();
    let (team_key, _, db) = app.create_company("team");
    let call = |method: Method, path: &str, body: Option<&Value>| {
        app.call(method, path, Some(&team_key), body)
    };
    let res = call(Method::POST, &format!("/v1/grids?dbId={db}"), Some(&json!({"name": "T"})));
    let view = res.assert_status(201)["defaultAccessViewId"].as_str().expect("view").to_owned();
    call(
        Method::POST,
        &format!("/v1/views/{view}/columns"),
        Some(&json!({"id": "title", "name": "Title", "type": "singleLine"})),
    )
    .assert_status(201);
    call(Method::POST, &format!("/v1/views/{view}/records"), Some(&json!([{"id": "r1"}])))
        .assert_status(201);
    let res = call(Method::GET, &format!("/v1/views/{view}/records/r1/histories"), None);
    res.assert_error(403, "accessDenied");
    let message = res.body["message"].as_str().expect("a message");
    assert!(message.contains("Enterprise"), "{message}");
}

#[test]
fn history_survives_a_restart() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "a"}]}]));
    set_title(&app, &view, &app.key, "r1", "b");
    let before = entries(&histories(&app, &view, "r1", ""));
    assert_eq!(titles(&before), ["b", "a"]);
    let app = app.restart();
    assert_eq!(entries(&histories(&app, &view, "r1", "")), before);
}

/// An added record's entry is written only once something changes the record or the columns
/// (`GridState::settle_creation`): before that it reads the same as after, through a restart,
/// a new column, an update by another user and a second restart.
#[test]
fn an_added_records_entry_reads_the_same_before_and_after_it_is_written() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.create_column(&view, json!({"id": "note", "name": "Note", "type": "singleLine"}));
    let adder = app.create_user_key("adder");
    app.call(
        Method::POST,
        &format!("/v1/views/{view}/records"),
        Some(&adder),
        Some(&json!([
            {"id": "r1", "cells": [{"columnId": "title", "value": "a"}, {"columnId": "note", "value": "n"}]},
            {"id": "r2", "cells": [{"columnId": "note", "value": "m"}, {"columnId": "title", "value": "z"}]}
        ])),
    )
    .assert_status(201);
    let added = entries(&histories(&app, &view, "r1", ""));
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(added[0]["lastModifiedBy"], "adder", "{added:?}");
    let columns: Vec<&Value> =
        added[0]["cells"].as_array().expect("cells").iter().map(|c| &c["columnId"]).collect();
    assert_eq!(columns, ["title", "note"]);
    let app = app.restart();
    assert_eq!(entries(&histories(&app, &view, "r1", "")), added);
    app.create_column(&view, json!({"id": "extra", "name": "Extra", "type": "number"}));
    assert_eq!(entries(&histories(&app, &view, "r1", "")), added);
    app.create_column(&view, json!({"id": "gone", "name": "Gone", "type": "singleLine"}));
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r2", "cells": [{"columnId": "gone", "value": "g"}]}]),
    )
    .assert_status(200);
    app.delete(&format!("/v1/views/{view}/columns/extra")).assert_status(204);
    assert_eq!(entries(&histories(&app, &view, "r1", "")), added);
    set_title(&app, &view, &app.key, "r1", "b");
    let changed = entries(&histories(&app, &view, "r1", ""));
    assert_eq!(titles(&changed), ["b", "a"]);
    assert_eq!(changed[1], added[0], "the entry written at the change is the one read before");
    let app = app.restart();
    assert_eq!(entries(&histories(&app, &view, "r1", "")), changed);
    let other = entries(&histories(&app, &view, "r2", ""));
    assert_eq!(
        titles(&other),
        [Value::Null, json!("z")],
        "r2's add was out of order, then changed"
    );
}

#[test]
fn a_write_that_changes_nothing_adds_no_entry() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "a"}]}]));
    set_title(&app, &view, &app.key, "r1", "b");
    set_title(&app, &view, &app.key, "r1", "b");
    app.patch(&format!("/v1/views/{view}/records/r1"), &json!({"id": "r1", "cells": []}))
        .assert_status(200);
    let res = histories(&app, &view, "r1", "");
    assert_eq!(titles(&entries(&res)), ["b", "a"]);
    assert_eq!(res.header("x-total-count"), Some("2"));
}

#[test]
fn a_deleted_and_re_added_record_starts_a_new_history() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "title", "value": "old"}]},
                                  {"id": "r2", "cells": [{"columnId": "title", "value": "two"}]}]),
    );
    set_title(&app, &view, &app.key, "r1", "older");
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r1"]}))
        .assert_status(204);
    histories(&app, &view, "r1", "").assert_error(404, "nonexistentRecordId");
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "new"}]}]));
    assert_eq!(titles(&entries(&histories(&app, &view, "r1", ""))), ["new"]);
    app.patch(&format!("/v1/views/{view}/records/r2"), &json!({"id": "r3"})).assert_status(200);
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r3"]}))
        .assert_status(204);
    app.patch(&format!("/v1/views/{view}/records/r1"), &json!({"id": "r3"})).assert_status(200);
    let renamed = entries(&histories(&app, &view, "r3", ""));
    assert_eq!(titles(&renamed), [Value::Null, json!("new")]);
    let app = app.restart();
    assert_eq!(entries(&histories(&app, &view, "r3", "")), renamed);
}

#[test]
fn history_through_a_view_shows_only_its_columns() {
    let app = spawn_app();
    let (grid, view) = simple_grid(&app);
    app.create_column(&view, json!({"id": "count", "name": "Count", "type": "number"}));
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "title", "value": "a"},
                                      {"columnId": "count", "value": 1}]}]),
    );
    let res = app.post(
        "/v1/views",
        &json!({"name": "Counts", "gridId": grid, "columns": [{"id": "count"}]}),
    );
    let counts = res.assert_status(200)["id"].as_str().expect("view id").to_owned();
    let all = entries(&histories(&app, &counts, "r1", ""));
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["cells"], json!([{"columnId": "count", "value": 1}]));
}

/// The hosted `FetchRecordHistoryRequest` fields (issue 19): `columnIds` narrows the cells and
/// the entries, `sort` by `_lastModifiedTime` orders them, `includeSystemUser` is accepted;
/// `query` is tested below; `groupBy`, `fetchOptions`, other sort keys and bad values are
/// refused naming them.
#[test]
fn history_takes_the_fetch_request_fields() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.create_column(&view, json!({"id": "count", "name": "Count", "type": "number"}));
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "v1"}]}]));
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "count", "value": 5}]}]),
    )
    .assert_status(200);
    set_title(&app, &view, &app.key, "r1", "v2");

    let res = histories(&app, &view, "r1", "columnIds=title");
    let narrowed = entries(&res);
    assert_eq!(titles(&narrowed), [json!("v2"), json!("v1")], "only entries that changed title");
    assert_eq!(res.header("x-total-count"), Some("2"));
    for entry in &narrowed {
        let columns: Vec<&Value> =
            entry["cells"].as_array().expect("cells").iter().map(|c| &c["columnId"]).collect();
        assert_eq!(columns, [&json!("title")]);
    }
    let counts = entries(&histories(&app, &view, "r1", "columnIds=count&columnIds=count"));
    assert_eq!(counts.len(), 1);

    let sort = |dir: &str| {
        let text = format!("{{\"_lastModifiedTime\":\"{dir}\"}}");
        serde_urlencoded::to_string([("sort", text)]).expect("encoded")
    };
    let oldest = entries(&histories(&app, &view, "r1", &sort("asc")));
    assert_eq!(titles(&oldest), [json!("v1"), Value::Null, json!("v2")]);
    let newest = entries(&histories(&app, &view, "r1", &sort("desc")));
    assert_eq!(titles(&newest), [json!("v2"), Value::Null, json!("v1")]);
    let with_system = entries(&histories(&app, &view, "r1", "includeSystemUser=false"));
    assert_eq!(with_system.len(), 3);

    histories(&app, &view, "r1", "columnIds=nosuch").assert_error(404, "columnNotFoundInView");
    histories(&app, &view, "r1", "includeSystemUser=maybe").assert_error(400, "badRequest");
    let res = histories(&app, &view, "r1", "groupBy=title");
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("groupBy"), "{}", res.text);
    let by_title = serde_urlencoded::to_string([("sort", r#"{"title":"asc"}"#)]).expect("s");
    histories(&app, &view, "r1", &by_title).assert_error(400, "invalidSortField");
}

/// `query` takes the listing's conditions, on what each entry recorded: a column's value as
/// the entry wrote it (an entry that did not write the column does not match), the entry's
/// user and time, the record's id; bad queries get the listing's errors.
#[test]
fn history_query_selects_the_entries_whose_recorded_values_match() {
    let app = spawn_app();
    let (_, view) = simple_grid(&app);
    app.create_column(&view, json!({"id": "count", "name": "Count", "type": "number"}));
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "title", "value": "draft one"}]}]),
    );
    let bot = app.create_user_key("ci-bot");
    set_title(&app, &view, &bot, "r1", "final one");
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "count", "value": 7}]}]),
    )
    .assert_status(200);
    set_title(&app, &view, &app.key, "r1", "draft two");
    let select = |query: &str| {
        let q = serde_urlencoded::to_string([("query", query)]).expect("q");
        let res = histories(&app, &view, "r1", &q);
        let found = entries(&res);
        let total: usize = res.header("x-total-count").expect("count").parse().expect("number");
        assert_eq!(total, found.len(), "{query}");
        found
    };
    assert_eq!(
        titles(&select(r#"{"title":{"startsWith":"draft"}}"#)),
        [json!("draft two"), json!("draft one")]
    );
    assert_eq!(titles(&select(r#"{"title":{"=":"final one"}}"#)), [json!("final one")]);
    // Not written there: no match, even for a negated condition.
    let not_final = select(r#"{"title":{"!=":"final one"}}"#);
    assert_eq!(titles(&not_final), [json!("draft two"), json!("draft one")]);
    let counted = select(r#"{"count":{">":5}}"#);
    assert_eq!(counted.len(), 1);
    assert_eq!(cell(&counted[0], "count")["value"], 7);
    let by_bot = select(r#"{"_lastModifiedBy":{"=":"ci-bot"}}"#);
    assert_eq!(titles(&by_bot), [json!("final one")]);
    assert_eq!(select(r#"{"_recordId":{"=":"r1"}}"#).len(), 4);
    assert!(select(r#"{"_recordId":{"=":"r2"}}"#).is_empty());
    // Conditions combine with columnIds and paging.
    let q = serde_urlencoded::to_string([("query", r#"{"title":{"contains":"one"}}"#)]).expect("q");
    let res = histories(&app, &view, "r1", &format!("{q}&columnIds=title&{}", page_query(0, 1)));
    assert_eq!(titles(&entries(&res)), [json!("final one")]);
    assert_eq!(res.header("x-total-count"), Some("2"));
    // The listing's errors.
    let bad = |query: &str, code: &str| {
        let q = serde_urlencoded::to_string([("query", query)]).expect("q");
        histories(&app, &view, "r1", &q).assert_error(400, code);
    };
    bad(r#"{"title":{"hasTag":"x"}}"#, "invalidFilterOperator");
    bad("not json", "invalidFilterField");
    let q = serde_urlencoded::to_string([("query", r#"{"nosuch":{"=":"x"}}"#)]).expect("q");
    assert!(histories(&app, &view, "r1", &q).status >= 400);
}

/// History past a chunk (1 MiB) is packed and held on disk, not on the heap: the branch's
/// history part in `/metrics` stays near one open chunk while megabytes were written, and every
/// entry reads back, also after a restart (which loads the chunks from the snapshot and spills
/// them again).
#[test]
fn history_past_a_chunk_is_held_on_disk_and_reads_back_after_a_restart() {
    let app = spawn_app();
    let (grid, view) = simple_grid(&app);
    // Words in an order that does not repeat, so the text packs about 3x, not 30x.
    let words = [
        "Einstellungen",
        "speichern",
        "設定を保存",
        "Сохранить",
        "настройки",
        "guardar",
        "paramètres",
        "저장",
        "opslaan",
        "salvare",
        "impostazioni",
        "保存",
    ];
    let text = |round: usize, i: usize| {
        let mut seed = (round * 1000 + i) as u64 + 1;
        let mut out = format!("{round}/{i}");
        while out.len() < 3000 {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            out.push(' ');
            out.push_str(words[(seed >> 33) as usize % words.len()]);
        }
        out
    };
    for round in 0..5 {
        let records: Vec<Value> = (0..300)
            .map(|i| {
                json!({"id": format!("r{i}"), "cells": [
                    {"columnId": "title", "value": text(round, i)}
                ]})
            })
            .collect();
        let path = format!("/v1/views/{view}/records");
        let res = if round == 0 {
            app.post(&path, &json!(records))
        } else {
            app.patch(&path, &json!(records))
        };
        assert!(res.status == 200 || res.status == 201, "{}", res.text);
    }
    let written = 5.0 * 300.0 * text(0, 0).len() as f64;
    let series =
        format!("gridd_branch_heap_bytes{{grid=\"{grid}\",branch=\"{grid}\",part=\"history\"}}");
    let held = |app: &TestApp| {
        // The packer works in the background: wait (bounded) for it to reach the full chunks.
        let mut held = f64::MAX;
        for _ in 0..200 {
            let metrics = app.get("/metrics").text;
            held = metrics
                .lines()
                .find_map(|l| l.strip_prefix(series.as_str()).and_then(|v| v.trim().parse().ok()))
                .unwrap_or_else(|| panic!("no {series}: {metrics}"));
            if held < 1.3 * 1024.0 * 1024.0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        held
    };
    let on_heap = held(&app);
    assert!(on_heap < 1.3 * 1024.0 * 1024.0, "{on_heap} of {written} bytes of history on the heap");
    let expected: Vec<Value> = (0..5).rev().map(|round| json!(text(round, 7))).collect();
    assert_eq!(titles(&entries(&histories(&app, &view, "r7", "limit=10"))), expected);
    let app = app.restart();
    let on_heap = held(&app);
    assert!(
        on_heap < 1.3 * 1024.0 * 1024.0,
        "{on_heap} bytes of history on the heap after a restart"
    );
    assert_eq!(titles(&entries(&histories(&app, &view, "r7", "limit=10"))), expected);
    let expected: Vec<Value> = (0..5).rev().map(|round| json!(text(round, 299))).collect();
    assert_eq!(titles(&entries(&histories(&app, &view, "r299", "limit=10"))), expected);
}
