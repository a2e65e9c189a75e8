//! Page reads off the grid actor (issue 18): plain pages come from a view the actor publishes
//! and withdraws before every change. A read after an acknowledged write sees it; a read while
//! a large write commits sees all of it or none of it; every kind of change (records, columns,
//! a heavy schema change) shows in the next page.

use serde_json::{json, Value};

use crate::helpers::{cell, page_query, spawn_app, TestApp};

fn page(app: &TestApp, view: &str, offset: usize, limit: usize) -> (Vec<Value>, usize) {
    let res = app.get(&format!("/v1/views/{view}/records?{}", page_query(offset, limit)));
    let records = res.assert_status(200).as_array().expect("records").clone();
    let total = res.header("x-total-count").expect("a count").parse().expect("a number");
    (records, total)
}

#[test]
fn a_page_read_after_an_acknowledged_write_sees_it() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Reads");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "en", "value": "v0"}]}]));
    for i in 1..=40 {
        // The first read of each round publishes a view; the write withdraws it.
        let (before, _) = page(&app, &view, 0, 10);
        assert_eq!(cell(&before[0], "en")["value"], format!("v{}", i - 1));
        let res = app.patch(
            &format!("/v1/views/{view}/records"),
            &json!([{"id": "r1", "cells": [{"columnId": "en", "value": format!("v{i}")}]}]),
        );
        res.assert_status(200);
        let (after, total) = page(&app, &view, 0, 10);
        assert_eq!(cell(&after[0], "en")["value"], format!("v{i}"), "round {i}");
        assert_eq!(total, 1);
    }
    // Adds, deletes, a new column and a heavy schema change show at once too.
    page(&app, &view, 0, 10);
    app.add_records(&view, json!([{"id": "r2", "cells": [{"columnId": "en", "value": "two"}]}]));
    assert_eq!(page(&app, &view, 0, 10).1, 2);
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r1"]}))
        .assert_status(204);
    let (records, total) = page(&app, &view, 0, 10);
    assert_eq!((records[0]["id"].clone(), total), (json!("r2"), 1));
    app.create_column(&view, json!({"id": "de", "name": "German", "type": "singleLine"}));
    let (records, _) = page(&app, &view, 0, 10);
    assert!(records[0]["cells"].as_array().expect("cells").iter().any(|c| c["columnId"] == "de"));
    let res = app.patch(&format!("/v1/views/{view}/columns/en"), &json!({"type": "multipleLines"}));
    res.assert_status(200);
    let (records, _) = page(&app, &view, 0, 10);
    assert_eq!(cell(&records[0], "en")["value"], "two");
    // Columns named by columnIds, and unknown ones refused as before.
    let res = app.get(&format!("/v1/views/{view}/records?columnIds=de"));
    let cells = res.assert_status(200)[0]["cells"].as_array().expect("cells").clone();
    assert_eq!(cells.len(), 1);
    page(&app, &view, 0, 10);
    let res = app.get(&format!("/v1/views/{view}/records?columnIds=nosuch"));
    res.assert_error(404, "columnNotFoundInView");
}

/// A page from the published view is the page the actor answers, byte for byte, headers
/// included: the first read after a write is the actor's, the next one the view's.
#[test]
fn a_page_from_the_view_is_the_page_the_actor_answers() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    app.create_column(&view, json!({"id": "d", "name": "D", "type": "datetime"}));
    let records: Vec<Value> = (0..40)
        .map(|i| {
            json!({"id": format!("r{i}"), "cells": [
                {"columnId": "en", "value": format!("Say \"hi\" {i}\n")},
                {"columnId": "fr", "value": format!("Salut {i}")},
                {"columnId": "n", "value": i * 7},
                {"columnId": "d", "value": "2026-11-25T10:00:00Z"}]})
        })
        .collect();
    app.add_records(&view, Value::Array(records));
    let queries = [
        page_query(0, 10),
        page_query(35, 10),
        page_query(100, 10),
        format!("{}&columnIds=fr,n", page_query(3, 5)),
    ];
    for query in queries {
        let path = format!("/v1/views/{view}/records?{query}");
        // A write withdraws the view: the next read is the actor's, the one after the view's.
        app.patch(
            &format!("/v1/views/{view}/records"),
            &json!([{"id": "r0", "cells": [{"columnId": "n", "value": 1}]}]),
        )
        .assert_status(200);
        let (by_actor, from_view) = (app.get(&path), app.get(&path));
        assert_eq!(by_actor.text, from_view.text, "{query}");
        for header in ["x-total-count", "link", "content-type"] {
            assert_eq!(by_actor.header(header), from_view.header(header), "{query}: {header}");
        }
    }
}

/// Schema reads (a view, a grid, a column) come from the published view too, and see every
/// schema change acknowledged before them.
#[test]
fn a_schema_read_after_a_schema_change_sees_it() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("Schema");
    for i in 0..15 {
        // Publishes a view (the records page and the view read both may).
        page(&app, &view, 0, 10);
        app.get(&format!("/v1/views/{view}")).assert_status(200);
        app.create_column(
            &view,
            json!({"id": format!("c{i}"), "name": format!("C{i}"), "type": "singleLine"}),
        );
        let shown = app.snapshot(&format!("/v1/views/{view}"));
        let ids: Vec<&str> = shown["columns"]
            .as_array()
            .expect("columns")
            .iter()
            .filter_map(|c| c["id"].as_str())
            .collect();
        assert!(ids.contains(&format!("c{i}").as_str()), "round {i}: {ids:?}");
        app.get(&format!("/v1/views/{view}/columns/c{i}")).assert_status(200);
        let renamed = format!("Renamed {i}");
        app.patch(&format!("/v1/views/{view}/columns/c{i}"), &json!({"name": renamed}))
            .assert_status(200);
        let column = app.snapshot(&format!("/v1/views/{view}/columns/c{i}"));
        assert_eq!(column["name"], renamed.as_str());
        let grid_body = app.snapshot(&format!("/v1/grids/{grid}"));
        assert_eq!(grid_body["columns"].as_array().map(Vec::len), Some(i + 1));
    }
}

#[test]
fn a_read_while_a_large_write_commits_sees_all_of_it_or_none() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Atomic");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    let batches = 20;
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for b in 0..batches {
                let records: Vec<Value> = (0..1000)
                    .map(|i| json!({"id": format!("b{b}r{i}"), "cells": [{"columnId": "en", "value": format!("{b}/{i}")}]}))
                    .collect();
                app.add_records(&view, Value::Array(records));
            }
        });
        let mut seen = Vec::new();
        while !writer.is_finished() {
            let (records, total) = page(&app, &view, 0, 1);
            assert_eq!(total % 1000, 0, "a page saw part of a 1000-record add: {total}");
            assert_eq!(records.is_empty(), total == 0);
            // The last page: the last record of a whole batch.
            if total > 0 {
                let (last, _) = page(&app, &view, total - 1, 1);
                if let Some(id) = last.first().and_then(|r| r["id"].as_str()) {
                    assert!(id.ends_with("r999"), "{id} ends a batch");
                }
            }
            seen.push(total);
        }
        writer.join().expect("the writer");
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "counts only grow: {seen:?}");
    });
    assert_eq!(page(&app, &view, 0, 1).1, batches * 1000);
}

/// The ids and total of a filtered, sorted listing.
fn listing(app: &TestApp, view: &str, query: &str) -> (Vec<String>, usize) {
    let res = app.get(&format!("/v1/views/{view}/records?{query}"));
    let records = res.assert_status(200).as_array().expect("records").clone();
    let total = res.header("x-total-count").expect("a count").parse().expect("a number");
    let ids = records.iter().map(|r| r["id"].as_str().expect("an id").to_owned()).collect();
    (ids, total)
}

/// Filtered, sorted and cursor reads run over the published view with its snapshot of the
/// query indexes: each one after an acknowledged write sees it, through every kind of index
/// (equality, text search, regexp, number ranges, sort order) the earlier reads built.
#[test]
fn a_query_after_an_acknowledged_write_sees_it() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Queries");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    let records: Vec<Value> = (0..300)
        .map(|i| {
            json!({"id": format!("r{i}"), "cells": [
                {"columnId": "en", "value": format!("word {}", i % 7)},
                {"columnId": "n", "value": i},
            ]})
        })
        .collect();
    app.add_records(&view, Value::Array(records));
    for round in 0..25 {
        let id = format!("r{}", round * 11);
        let text = format!("edited {round}");
        // Reads before the write build the indexes and leave a view holding them.
        listing(&app, &view, r#"query={"en":{"=":"word 1"}}"#);
        listing(&app, &view, r#"query={"en":{"contains":"edited"}}"#);
        listing(&app, &view, r#"sort={"n":"desc"}&page={"offset":0,"limit":3}"#);
        let res = app.patch(
            &format!("/v1/views/{view}/records"),
            &json!([{"id": id, "cells": [
                {"columnId": "en", "value": text},
                {"columnId": "n", "value": 1000 + round},
            ]}]),
        );
        res.assert_status(200);
        let (ids, total) = listing(&app, &view, &format!(r#"query={{"en":{{"=":"{text}"}}}}"#));
        assert_eq!((ids, total), (vec![id.clone()], 1), "round {round}: equality");
        let (ids, total) = listing(&app, &view, r#"query={"en":{"contains":"edited"}}"#);
        assert_eq!(total, round + 1, "round {round}: contains");
        assert!(ids.contains(&id), "round {round}: contains");
        let pattern = format!(r#"query={{"en":{{"regexp":"^edited {round}$"}}}}"#);
        assert_eq!(listing(&app, &view, &pattern).0, vec![id.clone()], "round {round}: regexp");
        let (ids, _) = listing(&app, &view, r#"sort={"n":"desc"}&page={"offset":0,"limit":3}"#);
        assert_eq!(ids[0], id, "round {round}: sort");
        let (ids, total) = listing(&app, &view, r#"query={"n":{">=":1000}}&sort={"n":"asc"}"#);
        assert_eq!((ids.last(), total), (Some(&id), round + 1), "round {round}: range");
        let cursor = format!(r#"sort={{"n":"desc"}}&afterRecordId={id}&page={{"limit":1}}"#);
        let expected =
            if round == 0 { "r299".to_owned() } else { format!("r{}", (round - 1) * 11) };
        assert_eq!(listing(&app, &view, &cursor).0, vec![expected], "round {round}: cursor");
    }
}

/// A filtered read while large adds commit counts whole adds only.
#[test]
fn a_query_while_a_large_write_commits_sees_all_of_it_or_none() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Atomic queries");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    let batches = 12;
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for b in 0..batches {
                let records: Vec<Value> = (0..1000)
                    .map(|i| json!({"id": format!("b{b}r{i}"), "cells": [{"columnId": "en", "value": format!("{b}/{}", i % 2)}]}))
                    .collect();
                app.add_records(&view, Value::Array(records));
            }
        });
        let mut seen = Vec::new();
        while !writer.is_finished() {
            let (ids, odd) =
                listing(&app, &view, r#"query={"en":{"contains":"/1"}}&sort={"en":"desc"}"#);
            assert_eq!(odd % 500, 0, "a query saw part of a 1000-record add: {odd}");
            assert_eq!(ids.len(), odd.min(100));
            seen.push(odd);
        }
        writer.join().expect("the writer");
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "counts only grow: {seen:?}");
    });
    let (_, odd) = listing(&app, &view, r#"query={"en":{"regexp":"/1$"}}"#);
    assert_eq!(odd, batches * 500);
}

/// Who answered the record reads so far: (a view, the actor), from `GET /metrics`.
pub fn answered(app: &TestApp) -> (u64, u64) {
    let res = app.get("/metrics");
    res.assert_status(200);
    let text = res.text;
    let count = |by: &str| {
        let series = format!("gridd_record_reads_total{{answered_by=\"{by}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(series.as_str()))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{series} in {text}"))
    };
    (count("view"), count("actor"))
}

/// Only the first query wanting an index is answered by the actor, which builds the index and
/// publishes a view holding it: the same query after, and after an edit (the next view's
/// snapshot brings the index up to date), comes from a view, as plain pages do.
#[test]
fn the_actor_answers_a_query_only_until_a_view_holds_its_index() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Answered");
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    let records: Vec<Value> = (0..50)
        .map(|i| json!({"id": format!("r{i}"), "cells": [{"columnId": "en", "value": format!("word {}", i % 5)}]}))
        .collect();
    app.add_records(&view, Value::Array(records));
    let sorted = r#"sort={"en":"desc"}"#;
    let before = answered(&app);
    assert_eq!(listing(&app, &view, sorted).1, 50);
    assert_eq!(answered(&app), (before.0, before.1 + 1), "the first sorted read builds the index");
    for _ in 0..3 {
        listing(&app, &view, sorted);
    }
    page(&app, &view, 0, 10);
    assert_eq!(answered(&app), (before.0 + 4, before.1 + 1), "the view holds the index now");
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r3", "cells": [{"columnId": "en", "value": "zzz last"}]}]),
    );
    res.assert_status(200);
    let (ids, _) = listing(&app, &view, sorted);
    assert_eq!(ids[0], "r3");
    assert_eq!(answered(&app), (before.0 + 5, before.1 + 1), "an edit keeps the index in views");
}
