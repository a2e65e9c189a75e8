//! Heavy writes run off the grid actors' threads (issue 16): with every grid actor on one
//! thread (`--grid-threads 1`), a schema change or an import that touches every record of one
//! grid must not hold up another grid's reads and writes, reads of the grid itself keep being
//! answered, and its own writes sent meanwhile are applied after it, in order.
//!
//! No timings are asserted: each test checks that requests to other grids completed while the
//! heavy request was still unanswered, which cannot happen when the heavy work blocks the one
//! thread the grids share.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Value};

use super::files::{multipart, post_multipart};
use super::helpers::{cell, page_query, spawn_app_with, TestApp};
use super::metrics::value_of;

/// Records in the heavy grid: enough that a change of all of them takes a while in a debug
/// build, so the other grids get asked many times meanwhile.
const RECORDS: usize = 40_000;

/// A server whose grid actors all share one thread, a grid `big` of `RECORDS` records with a
/// text column `t`, and a small grid; returns the app and the two views.
fn two_grids() -> (TestApp, String, String) {
    let app = spawn_app_with(|c| c.grid_threads = Some(1));
    let big = big_grid(&app);
    let (_, small) = app.create_grid("small");
    app.create_column(&small, json!({"id": "s", "name": "S", "type": "singleLine"}));
    app.add_records(&small, json!([{"id": "a", "cells": [{"columnId": "s", "value": "x"}]}]));
    (app, big, small)
}

/// A grid `big` of `RECORDS` records with a text column `t`; its default view.
fn big_grid(app: &TestApp) -> String {
    let (_, big) = app.create_grid("big");
    app.create_column(&big, json!({"id": "t", "name": "T", "type": "singleLine"}));
    for batch in 0..RECORDS / 1000 {
        let records: Vec<Value> = (0..1000)
            .map(|i| json!({"id": format!("r{}", batch * 1000 + i),
                            "cells": [{"columnId": "t", "value": format!("texte numéro {i} — 文字列")}]}))
            .collect();
        app.add_records(&big, Value::Array(records));
    }
    big
}

/// Runs `heavy` on one thread and, until it answers, reads and writes the small grid on this
/// one; returns the heavy answer and how many small-grid round trips completed meanwhile.
fn while_heavy<T: Send>(
    app: &TestApp,
    small: &str,
    heavy: impl FnOnce() -> T + Send,
) -> (T, usize) {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let answer = heavy();
            done.store(true, Ordering::SeqCst);
            answer
        });
        let mut trips = 0;
        while !done.load(Ordering::SeqCst) {
            app.get(&format!("/v1/views/{small}/records")).assert_status(200);
            let update =
                json!([{"id": "a", "cells": [{"columnId": "s", "value": format!("v{trips}")}]}]);
            app.patch(&format!("/v1/views/{small}/records"), &update).assert_status(200);
            if !done.load(Ordering::SeqCst) {
                trips += 1;
            }
        }
        (worker.join().expect("the heavy request"), trips)
    })
}

#[test]
fn a_formula_column_over_every_record_does_not_hold_up_another_grid() {
    let (app, big, small) = two_grids();
    let column = json!({"id": "f", "name": "F", "type": "formula",
                        "formula": {"formulaText": "CONCAT(UPPER([t]), \" / \", LOWER([t]))"}});
    let path = format!("/v1/views/{big}/columns");
    let (answer, trips) = while_heavy(&app, &small, || app.post(&path, &column));
    answer.assert_status(201);
    eprintln!("trips during the change: {trips}");
    assert!(trips >= 3, "only {trips} requests to another grid were answered during the change");
    let record = app.record_by_id(&big, "r39999");
    assert_eq!(
        cell(&record, "f")["value"],
        json!("TEXTE NUMÉRO 999 — 文字列 / texte numéro 999 — 文字列")
    );
}

#[test]
fn writes_sent_during_a_schema_change_are_applied_after_it_in_order() {
    let (app, big, _small) = two_grids();
    let column = json!({"id": "f", "name": "F", "type": "formula",
                        "formula": {"formulaText": "CONCAT([t], \"!\")"}});
    let path = format!("/v1/views/{big}/columns");
    let records = format!("/v1/views/{big}/records");
    let (answer, written) = std::thread::scope(|scope| {
        let heavy = scope.spawn(|| app.post(&path, &column));
        // Sent while the column is (most likely) being computed: whenever it lands, the record
        // must come out with the formula's value, never without it or half-applied.
        let mut written = Vec::new();
        for i in 0..5 {
            let body = json!([{"id": format!("new{i}"), "cells": [{"columnId": "t", "value": format!("n{i}")}]}]);
            written.push(app.post(&records, &body));
        }
        (heavy.join().expect("the heavy request"), written)
    });
    answer.assert_status(201);
    for (i, res) in written.iter().enumerate() {
        res.assert_status(201);
        let record = app.record_by_id(&big, &format!("new{i}"));
        assert_eq!(cell(&record, "f")["value"], json!(format!("n{i}!")));
    }
    let view = app.get(&format!("/v1/views/{big}/records?{}", page_query(0, 1)));
    assert_eq!(view.header("x-total-count"), Some(&*format!("{}", RECORDS + 5)));
}

#[test]
fn a_refused_schema_change_releases_the_writes_held_behind_it() {
    let (app, big, _small) = two_grids();
    // A column type the server refuses: planned off the actor, refused, and nothing changed.
    let before = app.snapshot(&format!("/v1/views/{big}"));
    let bad = json!({"id": "f", "name": "F", "type": "formula", "formula": {"formulaText": "[missing] + 1"}});
    app.post(&format!("/v1/views/{big}/columns"), &bad).assert_status(400);
    app.assert_unchanged(&format!("/v1/views/{big}"), &before);
    let body = json!([{"id": "after", "cells": [{"columnId": "t", "value": "still writable"}]}]);
    app.add_records(&big, body);
}

#[test]
fn an_import_of_every_record_does_not_hold_up_another_grid() {
    let (app, big, small) = two_grids();
    let mut csv = String::from("_recordId,t\n");
    for i in 0..RECORDS {
        csv.push_str(&format!("r{i},réimporté {i}\n"));
    }
    let path = format!("/v1/views/{big}/import");
    let (task, trips) = while_heavy(&app, &small, || {
        let body = multipart(&[("file", Some(("strings.csv", "text/csv")), csv.as_bytes())]);
        let res = post_multipart(&app, &path, body);
        let id = res.assert_status(202)["id"].as_str().expect("a task id").to_owned();
        app.wait_task(&id)
    });
    assert_eq!(task["status"], json!("successful"), "{task}");
    assert!(trips >= 3, "only {trips} requests to another grid were answered during the import");
    let record = app.record_by_id(&big, "r123");
    assert_eq!(cell(&record, "t")["value"], json!("réimporté 123"));
}

/// The value of `series` (its whole name with labels) in a `/metrics` text.
fn metric(app: &TestApp, series: &str) -> Option<f64> {
    value_of(&app.get("/metrics").text, series)
}

/// Polls `/metrics` until `series` reads `want` while `running` holds; whether it did.
fn seen_while(app: &TestApp, series: &str, want: f64, running: &AtomicBool) -> bool {
    while running.load(Ordering::SeqCst) {
        if metric(app, series) == Some(want) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

/// With `--heavy-writes-per-company 1`, a second heavy write of the same company, on another
/// grid, waits for the first one's turn to end (seen in `/metrics` as waiting while the first
/// runs) and is then applied; another company's heavy write meanwhile does not wait.
#[test]
fn one_company_s_heavy_writes_take_turns_and_another_company_s_do_not_wait() {
    let app = spawn_app_with(|c| c.heavy_writes_per_company = 1);
    let big = big_grid(&app);
    let (_, second) = app.create_grid("second");
    app.create_column(&second, json!({"id": "t", "name": "T", "type": "singleLine"}));
    app.add_records(&second, json!([{"id": "a", "cells": [{"columnId": "t", "value": "x"}]}]));
    let (owner, _, db) = app.create_company("enterprise");
    let other = app.post_as(&owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "other"}));
    let other = other.assert_status(201)["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.post_as(
        &owner,
        &format!("/v1/views/{other}/columns"),
        &json!({"id": "t", "name": "T", "type": "singleLine"}),
    )
    .assert_status(201);

    let formula = |text: &str| json!({"id": "f", "name": "F", "type": "formula", "formula": {"formulaText": text}});
    let running = AtomicBool::new(true);
    std::thread::scope(|scope| {
        let first = scope.spawn(|| {
            let body = formula(
                "CONCAT(UPPER([t]), \" / \", LOWER([t]), \" / \", [t], \" / \", UPPER([t]), \" / \", \
                 LOWER([t]), \" / \", [t])",
            );
            let started = std::time::Instant::now();
            let answer = app.post(&format!("/v1/views/{big}/columns"), &body);
            running.store(false, Ordering::SeqCst);
            eprintln!("the first heavy write took {:?}", started.elapsed());
            answer
        });
        assert!(
            seen_while(&app, "gridd_heavy_writes_running{company=\"1\"}", 1.0, &running),
            "the first heavy write was never seen running"
        );
        let waiting = scope
            .spawn(|| app.post(&format!("/v1/views/{second}/columns"), &formula("[t] & \"!\"")));
        assert!(
            seen_while(&app, "gridd_heavy_writes_waiting{company=\"1\"}", 1.0, &running),
            "the second heavy write of the company did not wait for a turn"
        );
        // Another company's heavy write is answered while the first still runs.
        let path = format!("/v1/views/{other}/columns");
        app.post_as(&owner, &path, &formula("[t] & \"?\"")).assert_status(201);
        let answered_during = running.load(Ordering::SeqCst);
        first.join().expect("the first heavy write").assert_status(201);
        waiting.join().expect("the second heavy write").assert_status(201);
        assert!(answered_during, "the other company's heavy write waited for this company's");
    });
    let record = app.record_by_id(&second, "a");
    assert_eq!(cell(&record, "f")["value"], json!("x!"));
    assert_eq!(metric(&app, "gridd_heavy_writes_running{company=\"1\"}"), Some(0.0));
    assert_eq!(metric(&app, "gridd_heavy_writes_waiting{company=\"1\"}"), Some(0.0));
}
