//! The console driven in a real headless Chromium (`browser::Browser`): sign in, browse, open a
//! grid, edit a cell, filter by status, paste a TSV range, upload a file, an edit conflict,
//! and what a read-only key is not offered; each checked over the API. Screenshots of the main
//! screens go to `docs/console/` when `GRIDD_CONSOLE_SCREENSHOTS=1`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::helpers::{cell, find_record, spawn_app, TestApp};

pub(super) const WAIT: Duration = Duration::from_secs(10);

/// A grid "Strings": en (source) -> fr (target), a note, a files column, 30 records.
pub(super) fn strings_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.language_grid(&[("fr", "French", "frFR")], true);
    app.create_column(&view, json!({"id": "shots", "name": "Shots", "type": "files"}));
    app.create_column(&view, json!({"id": "state", "name": "State", "type": "singleSelection",
        "selection": {"options": [{"value": "draft", "color": "sun"}, {"value": "final", "color": "seaGreen"}]}}));
    app.create_column(&view, json!({"id": "tags", "name": "Tags", "type": "multipleSelections",
        "selection": {"options": [{"value": "ui", "color": "dodgerBlue"}, {"value": "menu", "color": "froly"}]}}));
    app.create_column(&view, json!({"id": "done", "name": "Done", "type": "boolean"}));
    app.create_column(&view, json!({"id": "chars", "name": "Max length", "type": "number"}));
    app.create_column(&view, json!({"id": "due", "name": "Due", "type": "datetime"}));
    app.create_column(&view, json!({"id": "doc", "name": "Notes (markdown)", "type": "markdown"}));
    let records: Vec<Value> = (0..30)
        .map(|i| {
            let mut cells = vec![
                json!({"columnId": "en", "value": format!("Text {i}")}),
                json!({"columnId": "state", "value": if i % 2 == 0 { "draft" } else { "final" }}),
                json!({"columnId": "tags", "value": if i % 4 == 0 { json!(["ui", "menu"]) } else { json!(["ui"]) }}),
                json!({"columnId": "done", "value": i % 5 == 0}),
                json!({"columnId": "chars", "value": 20 + i}),
            ];
            if i % 3 == 0 {
                cells.push(json!({"columnId": "fr", "value": format!("Texte {i}")}));
            }
            json!({"id": format!("k{i:02}"), "cells": cells})
        })
        .collect();
    app.add_records(&view, Value::Array(records));
    // Translated after the source: up to date.
    let done: Vec<Value> = (0..30)
        .step_by(3)
        .map(|i| {
            json!({"id": format!("k{i:02}"),
                "cells": [{"columnId": "fr", "value": format!("Texte {i}"), "dependencyStatus": "upToDate"}]})
        })
        .collect();
    app.patch(&format!("/v1/views/{view}/records"), &Value::Array(done)).assert_status(200);
    (grid, view)
}

/// Opens the console and signs in with `key`.
pub(super) fn signed_in(app: &TestApp, key: &str) -> Browser {
    let mut browser = Browser::launch(1280, 800);
    browser.goto(&format!("{}/", app.base));
    browser.wait_for("document.querySelector('form.signin input[name=key]')", WAIT);
    browser.docs_screenshot("signin.png");
    browser.eval("document.querySelector('form.signin input[name=key]').focus()");
    browser.type_text(key);
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('#who .user')", WAIT);
    browser
}

/// Opens view `view` and waits for its first rows.
pub(super) fn open_view(browser: &mut Browser, app: &TestApp, view: &str) {
    browser.eval(&format!("location.hash = '#/views/{view}'"));
    browser.wait_for("document.querySelector('.grid-row:not(.loading) .cell.t-_recordId')", WAIT);
    let _ = app;
}

/// The record ids the grid shows, top to bottom.
pub(super) fn shown_ids(browser: &mut Browser) -> Vec<String> {
    let ids = browser.eval(
        "[...document.querySelectorAll('.grid-row')].sort((a, b) => a.ariaRowIndex - b.ariaRowIndex)\
         .map(r => r.querySelector('.t-_recordId')?.textContent || '')",
    );
    serde_json::from_value(ids).expect("ids")
}

/// Moves the active cell with the keyboard to (row, column id).
pub(super) fn go_to(browser: &mut Browser, row: usize, column: &str) {
    browser.eval("document.querySelector('.grid').focus()");
    browser.press("Home", 2);
    for _ in 0..row {
        browser.press("ArrowDown", 0);
    }
    let col = browser.eval(&format!("griddGrid.table.columns.findIndex(c => c.id === '{column}')"));
    for _ in 0..col.as_u64().expect("a column") {
        browser.press("ArrowRight", 0);
    }
    browser.wait_for(&format!("document.querySelector('#cell-{row}-{col}.active')"), WAIT);
}

pub(super) fn no_page_errors(browser: &Browser) {
    assert!(browser.errors().is_empty(), "page errors: {:?}", browser.errors());
}

#[test]
fn sign_in_browse_and_edit_a_cell_read_back_over_the_api() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    browser.wait_for("document.querySelector('#new-project')", WAIT);
    browser.eval("document.querySelector('.entry-name').click()");
    browser.wait_for("document.querySelector('#new-database')", WAIT);
    browser.eval("document.querySelector('.entry-name').click()");
    browser.wait_for("document.querySelector('#new-grid')", WAIT);
    browser.docs_screenshot("browse.png");
    browser.eval("document.querySelector('.entry-name').click()");
    browser.wait_for("document.querySelector('.views .entry-name')", WAIT);
    browser.eval("document.querySelector('.views .entry-name').click()");
    browser.wait_for("document.querySelector('.grid-row:not(.loading) .cell.t-_recordId')", WAIT);
    assert_eq!(shown_ids(&mut browser)[..3], ["k00", "k01", "k02"]);
    browser.docs_screenshot("grid.png");
    // Scrolled right (the id and path columns stay), a selection editor open.
    go_to(&mut browser, 2, "tags");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('.cell-editor .multi')", WAIT);
    browser.docs_screenshot("grid-editor.png");
    browser.press("Escape", 0);
    browser.wait_for("!document.querySelector('.cell-editor')", WAIT);

    go_to(&mut browser, 1, "en");
    browser.press("H", 0);
    browser.wait_for("document.querySelector('.cell-editor input, .cell-editor textarea')", WAIT);
    browser.type_text("ello there");
    browser.press("Enter", 0);
    browser.wait_for("!document.querySelector('.cell-editor')", WAIT);
    browser.wait_for("document.querySelector('#cell-1-2')?.textContent === 'Hello there'", WAIT);
    let record = app.record_by_id(&view, "k01");
    assert_eq!(cell(&record, "en")["value"], "Hello there");
    // The target is now out of date; shown by its color.
    assert_eq!(cell(&record, "fr")["dependencyStatus"], "outOfDate");
    no_page_errors(&browser);
}

#[test]
fn the_status_filter_shows_the_records_the_api_finds_and_the_url_keeps_it() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    browser.eval(
        "const s = document.querySelector('#status-filter'); s.value = 'upToDate'; \
         s.dispatchEvent(new Event('change'))",
    );
    browser.wait_for("document.querySelectorAll('.grid-row').length === 10", WAIT);
    let expected =
        app.listing_ids(&view, &[("query", r#"{"fr._dependencyStatus":{"=":"upToDate"}}"#)]);
    assert_eq!(shown_ids(&mut browser), expected);
    assert!(browser
        .eval("document.querySelector('.cell.st-upToDate') !== null")
        .as_bool()
        .unwrap_or(false));
    let hash = browser.eval("location.hash");
    assert!(hash.as_str().is_some_and(|h| h.contains("status=fr%3AupToDate")), "{hash}");
    // A link opens the same place.
    browser.eval("location.reload()");
    browser.wait_for("document.querySelector('.grid-row:not(.loading)')", WAIT);
    browser.wait_for("document.querySelectorAll('.grid-row').length === 10", WAIT);
    assert_eq!(browser.eval("document.querySelector('#status-filter').value"), "upToDate");
    no_page_errors(&browser);
}

#[test]
fn a_pasted_tsv_range_is_one_conditional_write() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    go_to(&mut browser, 2, "fr");
    browser.eval(
        "(() => { const dt = new DataTransfer(); dt.setData('text/plain', 'Deux\\tnote 2\\r\\n\"Trois\\tavec tab\"\\tnote 3\\r\\n'); \
         document.querySelector('.grid').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true})); })()",
    );
    browser
        .wait_for("document.querySelector('#cell-3-3')?.textContent === 'Trois\\tavec tab'", WAIT);
    let k02 = app.record_by_id(&view, "k02");
    let k03 = app.record_by_id(&view, "k03");
    assert_eq!(cell(&k02, "fr")["value"], "Deux");
    assert_eq!(cell(&k02, "note")["value"], "note 2");
    assert_eq!(cell(&k03, "fr")["value"], "Trois\tavec tab");
    assert_eq!(cell(&k03, "note")["value"], "note 3");
    // Copy gives the same TSV back.
    let copied = browser.eval(
        "(() => { griddGrid.table.anchor = {row: 2, col: 3}; griddGrid.table.active = {row: 3, col: 4}; \
         const dt = new DataTransfer(); \
         document.querySelector('.grid').dispatchEvent(new ClipboardEvent('copy', {clipboardData: dt, bubbles: true})); \
         return dt.getData('text/plain'); })()",
    );
    assert_eq!(copied, "Deux\tnote 2\n\"Trois\tavec tab\"\tnote 3");
    no_page_errors(&browser);
}

#[test]
fn an_edit_that_conflicts_says_so_and_writes_nothing() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    go_to(&mut browser, 4, "note");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('.cell-editor input')", WAIT);
    app.patch(
        &format!("/v1/views/{view}/records/k04"),
        &json!({"cells": [{"columnId": "note", "value": "written elsewhere"}]}),
    )
    .assert_status(200);
    browser.type_text("mine");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('dialog h2')?.textContent === 'Edit conflict'", WAIT);
    let dialog = browser.eval("document.querySelector('dialog').textContent");
    assert!(dialog.as_str().is_some_and(|t| t.contains("written elsewhere")), "{dialog}");
    browser.press("Escape", 0);
    browser.wait_for("!document.querySelector('dialog')", WAIT);
    assert_eq!(cell(&app.record_by_id(&view, "k04"), "note")["value"], "written elsewhere");
    no_page_errors(&browser);
}

#[test]
fn a_file_uploaded_into_a_files_cell_is_stored() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    go_to(&mut browser, 0, "shots");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('dialog #upload-file')", WAIT);
    browser.eval(
        "(() => { const dt = new DataTransfer(); dt.items.add(new File(['hello file'], 'hello.txt', {type: 'text/plain'})); \
         document.querySelector('#upload-file').files = dt.files; \
         document.querySelector('dialog [data-action=Upload]').click(); })()",
    );
    browser.wait_for("!document.querySelector('dialog')", WAIT);
    browser
        .wait_for("document.querySelector('#cell-0-5 .file')?.textContent === 'hello.txt'", WAIT);
    let listed = app.get(&format!("/v1/views/{view}/records?fetchFileOption=all"));
    let record = find_record(listed.body.as_array().expect("records"), "k00");
    let files = cell(record, "shots")["value"].as_array().cloned().unwrap_or_default();
    assert_eq!(files.len(), 1, "{}", listed.text);
    assert_eq!(files[0]["originalName"], "hello.txt");
    // Its link downloads the bytes (with the key).
    let downloaded = browser.eval(
        "(async () => { let blob = null; const make = URL.createObjectURL;            URL.createObjectURL = (b) => { blob = b; return make(b); };            document.querySelector('#cell-0-5 .file').click();            for (let i = 0; i < 100 && !blob; i += 1) await new Promise((r) => setTimeout(r, 50));            URL.createObjectURL = make; return blob ? await blob.text() : null; })()",
    );
    assert_eq!(downloaded, "hello file");
    no_page_errors(&browser);
}

#[test]
fn a_read_only_key_is_not_offered_what_it_may_not_do() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let reader = app.create_key(&["read"], json!({"all": true}));
    let mut browser = signed_in(&app, &reader);
    browser.wait_for("document.querySelector('.entry-name')", WAIT);
    assert_eq!(browser.eval("document.querySelector('#new-project')"), Value::Null);
    assert_eq!(browser.eval("document.querySelectorAll('.entry-actions button').length"), 0);
    open_view(&mut browser, &app, &view);
    assert_eq!(browser.eval("document.querySelector('#add-record')"), Value::Null);
    go_to(&mut browser, 0, "note");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('.toast')", WAIT);
    assert_eq!(browser.eval("document.querySelector('.cell-editor')"), Value::Null);
    no_page_errors(&browser);
}
