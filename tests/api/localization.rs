//! Localization statuses of decisions.md section 5 over HTTP: dependencyStatus computed on add,
//! update, dependency create and delete; explicit statuses overriding it; locked cells; the
//! machine-translation flag; which cells carry statuses at all.

use serde_json::{json, Value};

use crate::helpers::{cell, spawn_app, TestApp};
use crate::records::assert_refused;

fn text(column: &str, value: &str) -> Value {
    json!({"columnId": column, "value": value})
}

/// The dependencyStatus of a cell.
#[track_caller]
fn dep(record: &Value, column: &str) -> String {
    cell(record, column)["dependencyStatus"].as_str().expect("a dependencyStatus").to_owned()
}

#[track_caller]
fn src(record: &Value, column: &str) -> String {
    cell(record, column)["sourceStatus"].as_str().expect("a sourceStatus").to_owned()
}

fn is_mt(record: &Value, column: &str) -> bool {
    cell(record, column)["isMT"].as_bool().unwrap_or(false)
}

/// The record `id` as the listing shows it.
#[track_caller]
fn record(app: &TestApp, view: &str, id: &str) -> Value {
    app.records(view).into_iter().find(|r| r["id"] == id).expect("the record is listed")
}

fn update(app: &TestApp, view: &str, records: Value) -> Vec<Value> {
    let res = app.patch(&format!("/v1/views/{view}/records"), &records);
    res.assert_status(200).as_array().expect("a list").clone()
}

#[test]
fn add_computes_dependency_statuses_from_the_values() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    let added = app.add_records(
        &view,
        json!([
            {"id": "both", "cells": [text("en", "Hi"), text("fr", "Salut")]},
            {"id": "source", "cells": [text("en", "Hi")]},
            {"id": "none", "cells": [text("note", "n")]},
            {"id": "target", "cells": [text("fr", "Salut")]},
        ]),
    );
    let expected = [
        ("both", "upToDate", "outOfDate"),
        ("source", "outOfDate", "outOfDate"),
        ("none", "unset", "unset"),
        ("target", "upToDate", "unset"),
    ];
    let listed = app.records(&view);
    assert_eq!(listed, added);
    for (record, (id, fr, de)) in listed.iter().zip(expected) {
        assert_eq!(record["id"], id);
        assert_eq!(dep(record, "fr"), fr, "{id}");
        assert_eq!(dep(record, "de"), de, "{id}");
        assert_eq!(dep(record, "en"), "unset", "{id}");
    }
}

#[test]
fn language_cells_show_both_statuses_and_other_cells_neither() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(false);
    let added = app.add_records(&view, json!([{"id": "r", "cells": [text("note", "n")]}]));
    for column in ["en", "fr", "de"] {
        let c = cell(&added[0], column);
        assert_eq!(c["dependencyStatus"], "unset", "{column}");
        assert_eq!(c["sourceStatus"], "unset", "{column}");
        assert_eq!(c["value"], "", "{column}");
    }
    let note = cell(&added[0], "note").as_object().expect("a cell");
    assert!(
        !note.contains_key("dependencyStatus") && !note.contains_key("sourceStatus"),
        "{note:?}"
    );
    assert_eq!(app.records(&view), added);
}

#[test]
fn a_source_change_puts_its_targets_out_of_date() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    app.add_records(
        &view,
        json!([{"id": "r", "cells": [text("en", "Hi"), text("fr", "Salut"), text("de", "Hallo")]}]),
    );
    let r = record(&app, &view, "r");
    assert_eq!((dep(&r, "fr"), dep(&r, "de")), ("upToDate".into(), "upToDate".into()));
    let same = update(&app, &view, json!([{"id": "r", "cells": [text("en", "Hi")]}]));
    assert_eq!((dep(&same[0], "fr"), dep(&same[0], "de")), ("upToDate".into(), "upToDate".into()));
    let changed = update(&app, &view, json!([{"id": "r", "cells": [text("en", "Hello")]}]));
    assert_eq!(
        (dep(&changed[0], "fr"), dep(&changed[0], "de")),
        ("outOfDate".into(), "outOfDate".into())
    );
    let translated = update(&app, &view, json!([{"id": "r", "cells": [text("fr", "Bonjour")]}]));
    assert_eq!(dep(&translated[0], "fr"), "upToDate");
    assert_eq!(dep(&translated[0], "de"), "outOfDate");
    let together =
        update(&app, &view, json!([{"id": "r", "cells": [text("en", "Hey"), text("de", "He")]}]));
    assert_eq!(dep(&together[0], "de"), "upToDate");
    assert_eq!(dep(&together[0], "fr"), "outOfDate");
    let note = update(&app, &view, json!([{"id": "r", "cells": [text("note", "x")]}]));
    assert_eq!(dep(&note[0], "de"), "upToDate");
    assert_eq!(record(&app, &view, "r"), note[0]);
}

#[test]
fn creating_a_dependency_computes_statuses_and_deleting_it_unsets_them() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(false);
    app.add_records(
        &view,
        json!([
            {"id": "both", "cells": [text("en", "Hi"), text("fr", "Salut")]},
            {"id": "source", "cells": [text("en", "Hi")]},
            {"id": "none"},
            {"id": "target", "cells": [text("fr", "Salut")]},
        ]),
    );
    assert!(app.records(&view).iter().all(|r| dep(r, "fr") == "unset"));
    let dependency = app.add_dependency(&view, "fr");
    let statuses: Vec<String> = app.records(&view).iter().map(|r| dep(r, "fr")).collect();
    assert_eq!(statuses, ["upToDate", "outOfDate", "unset", "upToDate"]);
    assert!(app.records(&view).iter().all(|r| dep(r, "de") == "unset"));
    let res = app.delete(&format!("/v1/views/{view}/dependencies/{dependency}"));
    assert_eq!(res.status, 204, "{}", res.text);
    let listed = app.records(&view);
    assert!(listed.iter().all(|r| dep(r, "fr") == "unset"), "{listed:?}");
    let changed = update(&app, &view, json!([{"id": "both", "cells": [text("en", "Other")]}]));
    assert_eq!(dep(&changed[0], "fr"), "unset");
}

#[test]
fn explicit_statuses_in_a_write_override_the_computed_ones() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    let added = app.add_records(
        &view,
        json!([{"id": "r", "cells": [
            {"columnId": "en", "value": "Hi", "sourceStatus": "readyForTranslation"},
            {"columnId": "fr", "value": "Salut", "dependencyStatus": "outOfDate"},
            {"columnId": "de", "dependencyStatus": "upToDate", "sourceStatus": "doNotTranslate"}]}]),
    );
    assert_eq!(src(&added[0], "en"), "readyForTranslation");
    assert_eq!(dep(&added[0], "fr"), "outOfDate");
    assert_eq!(dep(&added[0], "de"), "upToDate");
    assert_eq!(src(&added[0], "de"), "doNotTranslate");
    let updated = update(
        &app,
        &view,
        json!([{"id": "r", "cells": [
            {"columnId": "en", "value": "Hello", "sourceStatus": "notReadyForTranslation"},
            {"columnId": "fr", "dependencyStatus": "upToDate"}]}]),
    );
    assert_eq!(src(&updated[0], "en"), "notReadyForTranslation");
    assert_eq!(dep(&updated[0], "fr"), "upToDate");
    assert_eq!(dep(&updated[0], "de"), "outOfDate");
    assert_eq!(record(&app, &view, "r"), updated[0]);
    let before = app.records(&view);
    for cell in [
        json!({"columnId": "fr", "value": "x", "dependencyStatus": "stale"}),
        json!({"columnId": "en", "value": "x", "sourceStatus": "frozen"}),
    ] {
        let res =
            app.patch(&format!("/v1/views/{view}/records"), &json!([{"id": "r", "cells": [cell]}]));
        assert_refused(&app, &view, &res, 400, "badRequest", &before);
    }
}

#[test]
fn a_locked_cell_refuses_value_changes_unless_the_write_unlocks_it() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    app.add_records(
        &view,
        json!([{"id": "r", "cells": [text("en", "Hi"), text("fr", "Salut")]},
               {"id": "s", "cells": [text("en", "Yo")]}]),
    );
    let locked = update(
        &app,
        &view,
        json!([{"id": "r", "cells": [{"columnId": "en", "sourceStatus": "locked"},
                                     {"columnId": "fr", "sourceStatus": "locked"}]}]),
    );
    assert_eq!((src(&locked[0], "en"), src(&locked[0], "fr")), ("locked".into(), "locked".into()));
    let before = app.records(&view);
    for body in [
        json!([{"id": "r", "cells": [text("en", "Hello")]}]),
        json!([{"id": "r", "cells": [text("fr", "Bonjour")]}]),
        json!([{"id": "r", "cells": [{"columnId": "en", "value": ""}]}]),
        json!([{"id": "r", "cells": [{"columnId": "en", "value": "Hello", "sourceStatus": "locked"}]}]),
        json!([{"id": "s", "cells": [text("en", "Yes")]}, {"id": "r", "cells": [text("en", "Hello")]}]),
    ] {
        let res = app.patch(&format!("/v1/views/{view}/records"), &body);
        assert_refused(&app, &view, &res, 409, "cellIsLocked", &before);
    }
    let res =
        app.patch(&format!("/v1/views/{view}/records/r"), &json!({"cells": [text("fr", "B")]}));
    assert_refused(&app, &view, &res, 409, "cellIsLocked", &before);
    let unchanged =
        update(&app, &view, json!([{"id": "r", "cells": [text("en", "Hi"), text("note", "n")]}]));
    assert_eq!(cell(&unchanged[0], "note")["value"], "n");
    let unlocked = update(
        &app,
        &view,
        json!([{"id": "r", "cells": [{"columnId": "en", "value": "Hello",
                                      "sourceStatus": "readyForTranslation"}]}]),
    );
    assert_eq!(cell(&unlocked[0], "en")["value"], "Hello");
    assert_eq!(src(&unlocked[0], "en"), "readyForTranslation");
    assert_eq!(src(&unlocked[0], "fr"), "locked");
    assert_eq!(cell(&unlocked[0], "fr")["value"], "Salut");
}

#[test]
fn lock_all_languages_locks_the_source_and_its_targets_in_that_record() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    app.add_records(
        &view,
        json!([{"id": "r", "cells": [text("en", "Hi"), text("fr", "Salut"), text("note", "n")]},
               {"id": "s", "cells": [text("en", "Yo"), text("fr", "Ouais")]}]),
    );
    let locked = update(
        &app,
        &view,
        json!([{"id": "r", "cells": [{"columnId": "en", "sourceStatus": "lockAllLanguages"}]}]),
    );
    assert_eq!(src(&locked[0], "en"), "lockAllLanguages");
    let before = app.records(&view);
    for body in [
        json!([{"id": "r", "cells": [text("en", "Hello")]}]),
        json!([{"id": "r", "cells": [text("fr", "Bonjour")]}]),
        json!([{"id": "r", "cells": [text("de", "Hallo")]}]),
        json!([{"id": "r", "cells": [{"columnId": "fr", "value": "B", "sourceStatus": "unset"}]}]),
        json!([{"id": "r", "cells": [text("fr", "B"),
               {"columnId": "en", "sourceStatus": "lockAllLanguages"}]}]),
    ] {
        let res = app.patch(&format!("/v1/views/{view}/records"), &body);
        assert_refused(&app, &view, &res, 409, "cellIsLocked", &before);
    }
    // Other records and columns outside the dependencies stay writable.
    let other = update(
        &app,
        &view,
        json!([{"id": "s", "cells": [text("fr", "Oui")]}, {"id": "r", "cells": [text("note", "m")]}]),
    );
    assert_eq!(cell(&other[0], "fr")["value"], "Oui");
    assert_eq!(cell(&other[1], "note")["value"], "m");
    // A write that sets another status on the source unlocks the whole record at once.
    let unlocked = update(
        &app,
        &view,
        json!([{"id": "r", "cells": [text("fr", "Bonjour"),
               {"columnId": "en", "sourceStatus": "readyForTranslation"}]}]),
    );
    assert_eq!(cell(&unlocked[0], "fr")["value"], "Bonjour");
    assert_eq!(src(&unlocked[0], "en"), "readyForTranslation");
}

#[test]
fn the_mt_flag_marks_written_targets_until_a_write_without_it() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    app.add_records(&view, json!([{"id": "r", "cells": [text("en", "Hi")]}, {"id": "s"}]));
    let flagged = update(
        &app,
        &view,
        json!([{"id": "r", "markUpdatedCellsWithMTFlag": true,
                "cells": [text("en", "Hello"), text("fr", "Bonjour"), text("de", "Hallo"),
                          text("note", "n")]},
               {"id": "s", "cells": [text("fr", "Oui")]}]),
    );
    assert_eq!(cell(&flagged[0], "fr")["isMT"], true);
    assert_eq!(cell(&flagged[0], "de")["isMT"], true);
    assert!(!is_mt(&flagged[0], "en") && !is_mt(&flagged[0], "note"), "{}", flagged[0]);
    assert!(!is_mt(&flagged[1], "fr"), "{}", flagged[1]);
    let r = record(&app, &view, "r");
    assert!(is_mt(&r, "fr") && is_mt(&r, "de"), "{r}");
    update(&app, &view, json!([{"id": "r", "cells": [text("en", "Hey")]}]));
    let r = record(&app, &view, "r");
    assert!(is_mt(&r, "fr") && is_mt(&r, "de"), "a source write cleared the flag: {r}");
    let res =
        app.patch(&format!("/v1/views/{view}/records/r"), &json!({"cells": [text("de", "Hey")]}));
    assert!(!is_mt(res.assert_status(200), "de"));
    let r = record(&app, &view, "r");
    assert!(is_mt(&r, "fr") && !is_mt(&r, "de"), "{r}");
    let res = app.patch(
        &format!("/v1/views/{view}/records/s"),
        &json!({"markUpdatedCellsWithMTFlag": true, "cells": [text("de", "Ja")]}),
    );
    assert!(is_mt(res.assert_status(200), "de"));
    assert!(is_mt(&record(&app, &view, "s"), "de"));
}

#[test]
fn the_view_statistic_counts_records_and_source_words_by_target_status() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    app.add_records(
        &view,
        json!([{"id": "a", "cells": [text("en", "Press start to play"), text("fr", "Appuyez")]},
               {"id": "b", "cells": [text("en", "Quit"), text("fr", "Quitter")]},
               {"id": "c", "cells": [text("en", "Load the saved game")]},
               {"id": "d"}]),
    );
    update(&app, &view, json!([{"id": "b", "cells": [text("en", "Quit now")]}]));
    let res = app.get(&format!("/v1/views/{view}/statistic"));
    let body = res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(body["recordCount"], json!(4));
    assert_eq!(
        body["translations"]["fr"],
        json!({"recordCount": {"all": 4, "upToDate": 1, "outOfDate": 2, "unset": 1},
               "wordCount": {"all": 10, "upToDate": 4, "outOfDate": 6, "unset": 0}})
    );
    assert_eq!(body["translations"]["de"]["recordCount"]["outOfDate"], json!(3));
    assert!(body["translations"].get("en").is_none(), "a source is not a translation");
    assert!(body["translations"].get("note").is_none());

    let only_fr = app.get(&format!("/v1/views/{view}/statistic?columnIds=fr"));
    let keys: Vec<&String> =
        only_fr.assert_status(200)["translations"].as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["fr"]);
    app.get(&format!("/v1/views/{view}/statistic?columnIds=nosuch"))
        .assert_error(404, "columnNotFoundInView");
    app.get("/v1/views/nosuchview/statistic").assert_error(404, "viewIsNotFound");
}
