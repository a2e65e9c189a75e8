//! The console's panels (issue 23, `console/panels/*.js`) driven in a real headless Chromium
//! (`browser::Browser`) from the page's own buttons: a merge through the dialog after its
//! preview, a column and a dependency added, a CSV imported through the mapping preview, a
//! share link made and disabled, a key created and revoked by an owner (and what a key that is
//! not an owner's is not offered), a record's history, and a change made over the API reaching
//! the open page without a reload. Each test checks over the API what the page did, and a
//! refused step (a bad mapping, a duplicate column id) changes nothing. The panels' parsers
//! have their unit tests in `console_panels_unit.js`, run inside the page.

use std::time::Duration;

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::helpers::{cell, find_record, spawn_app, TestApp};

/// The longest any one step of the page may take.
const WAIT: Duration = Duration::from_secs(15);

/// A browser on the console signed in with `key` (put in sessionStorage, as the sign-in form
/// does), showing `hash` once the key is known.
fn console_at(app: &TestApp, key: &str, hash: &str) -> Browser {
    let mut browser = Browser::launch(1280, 900);
    browser.goto(&format!("{}/", app.base));
    browser.wait_for("document.querySelector('form.signin')", WAIT);
    browser.eval(&format!(
        "sessionStorage.setItem('gridd.apiKey', {}); location.hash = {}; true",
        json!(key),
        json!(hash)
    ));
    browser.wait_for("document.querySelector('#who .user')", WAIT);
    browser
}

/// A browser on the view page of `view`, its toolbar shown.
fn view_page(app: &TestApp, key: &str, view: &str) -> Browser {
    let mut browser = console_at(app, key, &format!("#/views/{view}"));
    browser.wait_for("document.querySelector('.toolbar[role=toolbar] #search')", WAIT);
    browser
}

/// Clicks the page's button `#id` (a toolbar or company page entry) once it is there.
fn press_button(browser: &mut Browser, id: &str) {
    browser.wait_for(&format!("document.querySelector('#{id}')"), WAIT);
    browser.eval(&format!("document.querySelector('#{id}').click(); true"));
}

/// The ids of the page's buttons whose id starts with `prefix`.
fn buttons(browser: &mut Browser, prefix: &str) -> Value {
    browser
        .eval(&format!("[...document.querySelectorAll('button[id^={prefix}]')].map((b) => b.id)"))
}

/// Clicks the element `selector` inside the open dialog once it is there and enabled.
fn click(browser: &mut Browser, selector: &str) {
    let selector = json!(format!("dialog {selector}"));
    browser.wait_for(
        &format!(
            "document.querySelector({selector}) && !document.querySelector({selector}).disabled"
        ),
        WAIT,
    );
    browser.eval(&format!("document.querySelector({selector}).click(); true"));
}

/// Clicks the button of the open dialog whose text is `text`.
fn click_text(browser: &mut Browser, text: &str) {
    let text = json!(text);
    let find = format!("[...document.querySelectorAll('dialog button')].reverse().find((b) => b.textContent === {text} && !b.disabled)");
    browser.wait_for(&find, WAIT);
    browser.eval(&format!("{find}.click(); true"));
}

/// Sets the control `selector` of the open dialog to `value` (input and change events fire).
fn set(browser: &mut Browser, selector: &str, value: &str) {
    let selector = json!(format!("dialog {selector}"));
    browser.wait_for(&format!("document.querySelector({selector})"), WAIT);
    browser.eval(&format!(
        "(() => {{ const c = document.querySelector({selector}); c.value = {}; c.dispatchEvent(new Event('input', {{bubbles: true}})); c.dispatchEvent(new Event('change', {{bubbles: true}})); return true; }})()",
        json!(value)
    ));
}

/// The control labelled `label` in the open dialog, as a selector usable by `set`.
fn labelled(browser: &mut Browser, label: &str) -> String {
    let label = json!(label);
    let id = browser.wait_for(
        &format!("[...document.querySelectorAll('dialog label')].reverse().find((l) => l.textContent === {label}).htmlFor"),
        WAIT,
    );
    format!("#{}", id.as_str().expect("a label names its control"))
}

/// Waits until the open dialog's status line says something containing `text`; its text.
fn status_says(browser: &mut Browser, text: &str) -> String {
    let text = json!(text);
    let value = browser.wait_for(
        &format!("[...document.querySelectorAll('dialog .panel-status')].map((s) => s.textContent).find((t) => t.includes({text}))"),
        WAIT,
    );
    value.as_str().unwrap_or_default().to_owned()
}

/// A grid with a source `en` and `n` records `k0`.. ("Text i"): (grid, view).
fn strings_grid(app: &TestApp, n: usize) -> (String, String) {
    let (grid, view) = app.create_grid("Strings");
    app.create_column(
        &view,
        json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS",
               "localizationType": "sourceLanguage"}),
    );
    let records: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("k{i}"), "cells": [{"columnId": "en", "value": format!("Text {i}")}]}))
        .collect();
    if n > 0 {
        app.add_records(&view, json!(records));
    }
    (grid, view)
}

#[test]
fn the_panels_parsers_pass_their_unit_tests_in_the_page() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 0);
    let mut browser = view_page(&app, &app.key, &view);
    let failures = browser.eval(include_str!("console_panels_unit.js"));
    assert_eq!(failures, json!("[]"));
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_branch_merges_through_the_dialog_after_its_preview() {
    let app = spawn_app();
    let (grid, view) = strings_grid(&app, 2);
    let branch = app.post(&format!("/v1/branches?branchId={grid}"), &json!({"name": "release"}));
    let branch = branch.assert_status(201).clone();
    let branch_view = branch["defaultAccessViewId"].as_str().expect("a view").to_owned();
    app.patch(
        &format!("/v1/views/{branch_view}/records/k0"),
        &json!({"cells": [{"columnId": "en", "value": "Changed"}]}),
    )
    .assert_status(200);
    app.add_records(
        &branch_view,
        json!([{"id": "k9", "cells": [{"columnId": "en", "value": "New"}]}]),
    );

    let mut browser = view_page(&app, &app.key, &view);
    browser.eval("window.samePage = true");
    press_button(&mut browser, "panel-branches");
    browser.wait_for("document.querySelector('dialog li[data-branch-id]')", WAIT);
    click(&mut browser, "[data-panel=open-merge]");
    // The merge dialog opens on top, from the other branch into the master.
    browser.wait_for("document.querySelector('dialog [data-panel=merge-source]')", WAIT);
    let source = browser.eval("document.querySelector('dialog [data-panel=merge-source]').value");
    assert_eq!(source, branch["id"]);
    click(&mut browser, "[data-panel=merge-preview]");
    browser.wait_for("document.querySelector('dialog tr[data-record-id=k9]')", WAIT);
    let preview = browser.eval("[...document.querySelectorAll('dialog tr[data-record-id]')].map((r) => r.dataset.recordId + ':' + r.children[1].textContent).sort()");
    assert_eq!(preview, json!(["k0:updated", "k9:added"]));
    browser.docs_screenshot("merge.png");
    let diff =
        browser.eval("document.querySelector('dialog tr[data-record-id=k0] ins').textContent");
    assert_eq!(diff, json!("Changed"));
    // Nothing moved yet.
    assert_eq!(cell(find_record(&app.records(&view), "k0"), "en")["value"], json!("Text 0"));

    click(&mut browser, "[data-panel=merge-run]");
    status_says(&mut browser, "Merged");
    let records = app.records(&view);
    assert_eq!(cell(find_record(&records, "k0"), "en")["value"], json!("Changed"));
    assert_eq!(cell(find_record(&records, "k9"), "en")["value"], json!("New"));
    // The open master view shows the merged records once the dialogs are closed.
    browser.press("Escape", 0);
    browser.press("Escape", 0);
    browser.wait_for("[...document.querySelectorAll('.grid-row .cell')].some((c) => c.textContent === 'Changed')", WAIT);
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_column_and_a_dependency_are_added_in_the_columns_panel() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    let mut browser = view_page(&app, &app.key, &view);
    press_button(&mut browser, "panel-columns");
    browser.wait_for("document.querySelector('dialog li[data-column-id=en]')", WAIT);

    let name = labelled(&mut browser, "Name");
    set(&mut browser, &name, "French");
    let id = labelled(&mut browser, "Id");
    set(&mut browser, &id, "fr");
    let kind = labelled(&mut browser, "Type");
    set(&mut browser, &kind, "language");
    let code = labelled(&mut browser, "Language code");
    set(&mut browser, &code, "frFR");
    let role = labelled(&mut browser, "Role");
    set(&mut browser, &role, "targetLanguage");
    click(&mut browser, "[data-panel=save-column]");
    browser.wait_for("document.querySelector('dialog li[data-column-id=fr]')", WAIT);
    let column = app.get(&format!("/v1/views/{view}/columns/fr"));
    let column = column.assert_status(200);
    assert_eq!(column["name"], json!("French"));
    assert_eq!(column["type"], json!("language"));
    assert_eq!(column["languageCode"], json!("frFR"));
    assert_eq!(column["localizationType"], json!("targetLanguage"));

    // The dependency form offers the source and the new target.
    click_text(&mut browser, "Add dependency");
    browser.wait_for("document.querySelector('dialog li[data-dependency-id]')", WAIT);
    browser.docs_screenshot("columns.png");
    let deps = app.get(&format!("/v1/views/{view}/dependencies"));
    assert_eq!(deps.body[0]["sourceColumnId"], json!("en"));
    assert_eq!(deps.body[0]["targetColumnId"], json!("fr"));

    // A second column with the same id is refused with the API's code; nothing changes.
    let before = app.snapshot(&format!("/v1/views/{view}"));
    let name = labelled(&mut browser, "Name");
    set(&mut browser, &name, "French again");
    let id = labelled(&mut browser, "Id");
    set(&mut browser, &id, "fr");
    click(&mut browser, "[data-panel=save-column]");
    let said = status_says(&mut browser, "(");
    assert!(said.contains("already exists") && said.contains("(invalidColumnId)"), "{said}");
    app.assert_unchanged(&format!("/v1/views/{view}"), &before);
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

/// Puts `path` into the file input `selector` of the open dialog (as a user picking it).
fn pick_file(browser: &mut Browser, selector: &str, path: &std::path::Path) {
    let selector = json!(format!("dialog {selector}"));
    browser.wait_for(&format!("document.querySelector({selector})"), WAIT);
    let found = browser.call(
        "Runtime.evaluate",
        json!({"expression": format!("document.querySelector({selector})")}),
    );
    let object = found["result"]["objectId"].as_str().expect("the input").to_owned();
    browser.call(
        "DOM.setFileInputFiles",
        json!({"files": [path.display().to_string()], "objectId": object}),
    );
}

#[test]
fn a_csv_is_imported_through_the_mapping_preview() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("strings.csv");
    std::fs::write(&file, "key,Texte source,notes\nk0,Bonjour,x\nk5,\"Deux, \"\"trois\"\"\",y\n")
        .expect("the file is written");
    let mut browser = view_page(&app, &app.key, &view);
    press_button(&mut browser, "panel-import");
    pick_file(&mut browser, "[data-panel=import-file]", &file);
    browser.wait_for(
        "document.querySelectorAll('dialog select[data-file-column]').length === 3",
        WAIT,
    );
    let cells = browser.eval("[...document.querySelectorAll('dialog .panel-preview tbody tr')].map((r) => [...r.children].map((c) => c.textContent))");
    assert_eq!(cells[2], json!(["k5", "Deux, \"trois\"", "y"]));
    // No header matches a column: every target starts as "ignore".
    let guessed = browser.eval(
        "[...document.querySelectorAll('dialog select[data-file-column]')].map((s) => s.value)",
    );
    assert_eq!(guessed, json!(["", "", ""]));

    // Two file columns into one column are refused before anything is sent.
    set(&mut browser, "select[data-file-column='0']", "en");
    set(&mut browser, "select[data-file-column='1']", "en");
    click(&mut browser, "[data-panel=import-run]");
    status_says(&mut browser, "both go to en");
    assert_eq!(app.records(&view).len(), 1);

    set(&mut browser, "select[data-file-column='0']", "_recordId");
    browser.docs_screenshot("import.png");
    click(&mut browser, "[data-panel=import-run]");
    status_says(&mut browser, "Imported strings.csv");
    let records = app.records(&view);
    assert_eq!(records.len(), 2);
    assert_eq!(cell(find_record(&records, "k0"), "en")["value"], json!("Bonjour"));
    assert_eq!(cell(find_record(&records, "k5"), "en")["value"], json!("Deux, \"trois\""));

    // A file named .xlsx that is not a workbook gets no preview and imports nothing.
    let fake = dir.path().join("fake.xlsx");
    std::fs::write(&fake, "key,en\nk7,x\n").expect("the file is written");
    pick_file(&mut browser, "[data-panel=import-file]", &fake);
    status_says(&mut browser, "not an XLSX file");
    click(&mut browser, "[data-panel=import-run]");
    status_says(&mut browser, "no preview");
    assert_eq!(app.records(&view).len(), 2);
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_share_link_is_made_copied_and_disabled() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    let shares = format!("/v1/views/{view}/shares");
    app.get(&shares).assert_error(404, "shareIsNotFound");
    let mut browser = view_page(&app, &app.key, &view);
    press_button(&mut browser, "panel-share");
    click(&mut browser, "[data-panel=share-enable]");
    let link =
        browser.wait_for("document.querySelector('dialog [data-panel=share-link]').value", WAIT);
    let share = app.get(&shares);
    let share = share.assert_status(200);
    assert_eq!(share["active"], json!(true));
    assert_eq!(&share["link"], &link);
    assert_eq!(share["includeGridHistory"], json!(false));

    click(&mut browser, "[data-panel=share-disable]");
    status_says(&mut browser, "disabled");
    assert_eq!(app.get(&shares).body["active"], json!(false));
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn an_owner_creates_a_key_sees_its_secret_once_and_revokes_it() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    // A key that is not an owner's is not offered the keys panel.
    let writer = app.create_key(&["read", "write"], json!({"all": true}));
    let mut browser = view_page(&app, &writer, &view);
    assert_eq!(buttons(&mut browser, "panel-"), json!(["panel-import", "panel-export"]));
    drop(browser);
    let mut browser = console_at(&app, &writer, "#/");
    browser.wait_for("document.querySelector('main a[href^=\"#/projects/\"]')", WAIT);
    assert_eq!(buttons(&mut browser, "company-"), json!([]));
    drop(browser);

    let mut browser = console_at(&app, &app.key, "#/");
    press_button(&mut browser, "company-keys");
    let name = labelled(&mut browser, "Name");
    set(&mut browser, &name, "translator");
    let privilege = labelled(&mut browser, "Privilege (includes the ones before it)");
    set(&mut browser, &privilege, "write");
    click(&mut browser, "[data-panel=key-create]");
    let secret =
        browser.wait_for("document.querySelector('dialog [data-panel=key-secret]').value", WAIT);
    let secret = secret.as_str().expect("the secret").to_owned();
    browser.docs_screenshot("keys.png");
    let listed = app.get("/admin/v1/api-keys");
    let key =
        listed.body.as_array().expect("keys").iter().find(|k| k["name"] == "translator").cloned();
    let key = key.expect("the new key is listed");
    assert_eq!(key["privileges"], json!(["read", "write"]));
    assert!(key.get("key").is_none(), "a listing never shows a secret");
    app.get_as(&secret, "/v1/projects").assert_status(200);
    app.post_as(&secret, "/v1/projects", &json!({"name": "no"})).assert_error(403, "accessDenied");

    let revoke = format!("[data-key-id='{}'] button", key["id"].as_str().expect("an id"));
    click(&mut browser, &revoke);
    click(&mut browser, &revoke);
    status_says(&mut browser, "Revoked");
    app.get_as(&secret, "/v1/projects").assert_error(401, "unauthorized");
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_records_history_lists_its_changes_newest_first() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    for text in ["One", "<b>Two</b><img src=x onerror=alert(1)>"] {
        app.patch(
            &format!("/v1/views/{view}/records/k0"),
            &json!({"cells": [{"columnId": "en", "value": text}]}),
        )
        .assert_status(200);
    }
    let mut browser = view_page(&app, &app.key, &view);
    // The record's menu (a right click on its row), then its history.
    let cell = "document.querySelector('.grid-row:not(.loading) .cell.t-_recordId')";
    browser.wait_for(cell, WAIT);
    browser.eval(&format!(
        "(() => {{ const c = {cell}; const r = c.getBoundingClientRect();
           c.dispatchEvent(new MouseEvent('contextmenu', {{bubbles: true, cancelable: true, button: 2,
             clientX: r.x + 4, clientY: r.y + 4}})); return true; }})()"
    ));
    press_button(&mut browser, "menu-history");
    browser.wait_for("document.querySelectorAll('dialog .panel-history-entry').length === 3", WAIT);
    let values = browser.eval("[...document.querySelectorAll('dialog .panel-history-entry dd')].map((d) => d.firstChild.textContent)");
    assert_eq!(values, json!(["<b>Two</b><img src=x onerror=alert(1)>", "One", "Text 0"]));
    // Values are text, never markup.
    assert_eq!(browser.eval("document.querySelectorAll('dialog b, dialog img').length"), json!(0));
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_change_made_over_the_api_reaches_the_open_page() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 2);
    let mut browser = view_page(&app, &app.key, &view);
    browser.wait_for("document.querySelector('.grid-row:not(.loading) .cell.t-_recordId')", WAIT);
    browser.eval("window.samePage = true");
    let shows = |text: &str| {
        format!(
            "[...document.querySelectorAll('.grid-row .cell')].some((c) => c.textContent === {})",
            json!(text)
        )
    };
    // The feed is open once the page has painted; a write elsewhere then shows up.
    std::thread::sleep(Duration::from_millis(300));
    app.patch(
        &format!("/v1/views/{view}/records/k1"),
        &json!({"cells": [{"columnId": "en", "value": "Live"}]}),
    )
    .assert_status(200);
    browser.wait_for(&shows("Live"), WAIT);
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["k0"]}))
        .assert_status(204);
    browser.wait_for(&format!("!({})", shows("Text 0")), WAIT);
    assert_eq!(browser.eval("window.samePage === true"), json!(true), "no reload");
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn the_feed_reader_reports_records_deletions_and_schema_changes() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 2);
    let mut browser = view_page(&app, &app.key, &view);
    browser.eval(&format!(
        "(async () => {{
           const base = document.querySelector('script[type=module]').src.replace(/app\\.js$/, '');
           const {{ startLive }} = await import(`${{base}}panels/live.js`);
           const {{ api }} = await import(`${{base}}api.js`);
           window.changes = [];
           window.stopFeed = startLive({{ api, route: {{ viewId: '{view}' }} }}, (c) => window.changes.push(c));
           return true;
         }})()"
    ));
    std::thread::sleep(Duration::from_millis(300));
    app.patch(
        &format!("/v1/views/{view}/records/k1"),
        &json!({"cells": [{"columnId": "en", "value": "Live"}]}),
    )
    .assert_status(200);
    let ids = browser.wait_for("window.changes.length && window.changes[0].ids", WAIT);
    assert_eq!(ids, json!(["k1"]));
    let value =
        browser.eval("window.changes[0].records[0].cells.find((c) => c.columnId === 'en').value");
    assert_eq!(value, json!("Live"));
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["k0"]}))
        .assert_status(204);
    let kinds = browser.wait_for(
        "window.changes.length === 2 && window.changes.map((c) => c.kind + ':' + c.ids.join())",
        WAIT,
    );
    assert_eq!(kinds, json!(["records:k1", "records:k0"]));
    app.post(&format!("/v1/views/{view}/columns"), &json!({"name": "Note", "type": "singleLine"}))
        .assert_status(201);
    browser.wait_for("window.changes.some((c) => c.kind === 'schema')", WAIT);
    browser.eval("window.stopFeed(); true");
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

/// The ids of the columns `view` shows, in order, as the API lists them.
fn view_columns(app: &TestApp, view: &str) -> Vec<String> {
    let body = app.get(&format!("/v1/views/{view}"));
    let columns = body.assert_status(200)["columns"].as_array().expect("columns").clone();
    columns.iter().map(|c| c["id"].as_str().expect("an id").to_owned()).collect()
}

#[test]
fn columns_are_hidden_shown_and_moved_in_a_view_but_not_in_the_default_one() {
    let app = spawn_app();
    let (grid, view) = strings_grid(&app, 1);
    app.create_column(&view, json!({"id": "note", "name": "Note", "type": "singleLine"}));
    app.create_column(
        &view,
        json!({"id": "fr", "name": "French", "type": "language", "languageCode": "frFR"}),
    );
    let review = app.post(
        "/v1/views",
        &json!({"name": "Review", "gridId": grid, "columns": [{"id": "en"}, {"id": "note"}, {"id": "fr"}]}),
    );
    let review = review.assert_status(200)["id"].as_str().expect("a view").to_owned();

    // The default view shows every column: nothing to hide or move there.
    let mut browser = view_page(&app, &app.key, &view);
    press_button(&mut browser, "panel-columns");
    let fixed = browser.wait_for(
        "document.querySelector(\"dialog [aria-label='Hide Note in this view']\")?.disabled === true \
         && document.querySelector(\"dialog [aria-label='Move Note up']\").disabled",
        WAIT,
    );
    assert_eq!(fixed, json!(true));
    drop(browser);

    let mut browser = view_page(&app, &app.key, &review);
    press_button(&mut browser, "panel-columns");
    click(&mut browser, "[aria-label='Hide Note in this view']");
    browser
        .wait_for("document.querySelector(\"dialog [aria-label='Show Note in this view']\")", WAIT);
    assert_eq!(view_columns(&app, &review), ["en", "fr"]);
    click(&mut browser, "[aria-label='Show Note in this view']");
    browser
        .wait_for("document.querySelector(\"dialog [aria-label='Hide Note in this view']\")", WAIT);
    assert_eq!(view_columns(&app, &review), ["en", "fr", "note"]);
    click(&mut browser, "[aria-label='Move Note up']");
    status_says(&mut browser, "Moved");
    assert_eq!(view_columns(&app, &review), ["en", "note", "fr"]);
    // The grid's own columns never changed.
    assert_eq!(view_columns(&app, &view), ["en", "note", "fr"]);
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_panel_is_used_by_keyboard_only_and_gives_the_focus_back() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    let mut browser = view_page(&app, &app.key, &view);
    browser.wait_for("document.querySelector('#panel-share')", WAIT);
    browser.eval("document.querySelector('#panel-share').focus(); true");
    browser.press("Enter", 0);
    // The dialog takes the focus (its first control), Tab reaches "Create link", Enter runs it.
    browser.wait_for(
        "document.activeElement && document.activeElement.id === 'share-include-history'",
        WAIT,
    );
    browser.press(" ", 0);
    browser.press("Tab", 0);
    browser.wait_for("document.activeElement.dataset.panel === 'share-enable'", WAIT);
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('dialog [data-panel=share-link]')", WAIT);
    let share = app.get(&format!("/v1/views/{view}/shares"));
    assert_eq!(share.body["active"], json!(true));
    assert_eq!(share.body["includeGridHistory"], json!(true));
    // Every control of the panel has a name a screen reader reads.
    let unnamed = browser.eval(
        "[...document.querySelectorAll('dialog input, dialog select, dialog button')]\
           .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.textContent.trim())\
           .map((c) => c.outerHTML)",
    );
    assert_eq!(unnamed, json!([]));
    browser.press("Escape", 0);
    browser.wait_for(
        "!document.querySelector('dialog') && document.activeElement.id === 'panel-share'",
        WAIT,
    );
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_refused_key_says_why_and_creates_nothing() {
    let app = spawn_app();
    let before = app.get("/admin/v1/api-keys").body.as_array().expect("keys").len();
    let mut browser = console_at(&app, &app.key, "#/");
    press_button(&mut browser, "company-keys");
    // No name: the API's 400 is shown; a view key for a view that does not exist: its 404.
    click(&mut browser, "[data-panel=key-create]");
    status_says(&mut browser, "(badRequest)");
    let name = labelled(&mut browser, "Name");
    set(&mut browser, &name, "reviewer");
    let kind = labelled(&mut browser, "Kind");
    set(&mut browser, &kind, "view");
    let view = labelled(&mut browser, "View id");
    set(&mut browser, &view, "nosuchview0000");
    click(&mut browser, "[data-panel=key-create]");
    let said = status_says(&mut browser, "IsNotFound)");
    assert!(said.contains("viewIsNotFound"), "{said}");
    assert_eq!(app.get("/admin/v1/api-keys").body.as_array().expect("keys").len(), before);
    assert_eq!(
        browser.eval("document.querySelector('dialog [data-panel=key-secret]')"),
        Value::Null
    );
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn the_feed_reader_resumes_after_its_last_event_and_falls_back_to_polling() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 2);
    let mut browser = view_page(&app, &app.key, &view);
    // A feed that ends after one event, then refuses: the reader asks again from position 41,
    // backing off, and after three failures in a row polls the records instead.
    let outcome = browser.eval(&format!(
        "(async () => {{
           const base = document.querySelector('script[type=module]').src.replace(/app\\.js$/, '');
           const live = await import(`${{base}}panels/live.js`);
           const {{ api }} = await import(`${{base}}api.js`);
           const paths = [];
           const states = [];
           const changes = [];
           const feed = {{ ...api, raw: async (method, path, init) => {{
             paths.push(path);
             if (paths.length === 1) {{
               return new Response('event: records\\nid: 41\\ndata: {{\"position\":41,\"records\":[{{\"id\":\"a\"}}],\"deleted\":[]}}\\n\\n',
                 {{ status: 200 }});
             }}
             throw Object.assign(new Error('down'), {{ status: 503 }});
           }} }};
           const stop = live.startLive({{ api: feed, route: {{ viewId: '{view}' }} }},
             (c) => changes.push(c), {{ onState: (s) => states.push(s), backoffMinMs: 100, pollMs: 500 }});
           const until = async (test) => {{ while (!test()) await new Promise((r) => setTimeout(r, 50)); }};
           await until(() => states.includes('polling'));
           await new Promise((r) => setTimeout(r, 300));
           await api.send('PATCH', '/v1/views/{view}/records/k1', {{ cells: [{{ columnId: 'en', value: 'Polled' }}] }});
           await until(() => changes.some((c) => c.kind === 'resync'));
           stop();
           return {{ paths, states, kinds: changes.map((c) => c.kind) }};
         }})()"
    ));
    let feed = format!("/v1/views/{view}/changes");
    assert_eq!(
        outcome["paths"],
        json!([
            feed,
            format!("{feed}?after=41"),
            format!("{feed}?after=41"),
            format!("{feed}?after=41")
        ])
    );
    assert_eq!(
        outcome["states"],
        json!(["live", "reconnecting", "reconnecting", "reconnecting", "polling"])
    );
    assert_eq!(outcome["kinds"], json!(["records", "resync"]));
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_view_is_exported_as_csv_and_xlsx_files() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 2);
    let mut browser = view_page(&app, &app.key, &view);
    // The download is a Blob behind an object URL; the test keeps its bytes.
    browser.eval(
        "window.saved = []; const create = URL.createObjectURL;
         URL.createObjectURL = (blob) => { window.saved.push(blob); return create(blob); }; true",
    );
    press_button(&mut browser, "panel-export");
    click(&mut browser, "[data-panel=export-run]");
    let said = status_says(&mut browser, "Downloaded");
    assert!(said.ends_with(".csv."), "{said}");
    let text = browser.eval("window.saved[0].text()");
    let text = text.as_str().expect("the CSV");
    assert!(text.contains("k1,") && text.contains("Text 1"), "{text}");
    set(&mut browser, "[data-panel=export-type]", "xlsx");
    click(&mut browser, "[data-panel=export-run]");
    browser.wait_for("window.saved.length === 2", WAIT);
    let head = browser
        .eval("window.saved[1].arrayBuffer().then((b) => [...new Uint8Array(b).slice(0, 2)])");
    assert_eq!(head, json!([80, 75]), "an XLSX is a zip");
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn an_export_keeps_to_the_records_the_filtered_grid_shows() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 3);
    let filters = r#"[{"field":"en","op":"=","value":"Text 1"}]"#;
    let encoded: String = url::form_urlencoded::byte_serialize(filters.as_bytes()).collect();
    let hash = format!("#/views/{view}?filters={encoded}");
    let mut browser = console_at(&app, &app.key, &hash);
    browser.wait_for("document.querySelectorAll('.grid-row .cell.t-_recordId').length === 1", WAIT);
    browser.eval(
        "window.saved = []; const create = URL.createObjectURL;
         URL.createObjectURL = (blob) => { window.saved.push(blob); return create(blob); }; true",
    );
    press_button(&mut browser, "panel-export");
    browser
        .wait_for("document.querySelector('dialog [data-panel=export-filtered]')?.checked", WAIT);
    click(&mut browser, "[data-panel=export-run]");
    status_says(&mut browser, "Downloaded");
    let filtered = browser.eval("window.saved[0].text()");
    let filtered = filtered.as_str().expect("the CSV");
    assert!(filtered.contains("Text 1") && !filtered.contains("Text 2"), "{filtered}");
    // Unticked: the whole view.
    browser.eval("document.querySelector('dialog [data-panel=export-filtered]').click(); true");
    click(&mut browser, "[data-panel=export-run]");
    browser.wait_for("window.saved.length === 2", WAIT);
    let whole = browser.eval("window.saved[1].text()");
    let whole = whole.as_str().expect("the CSV");
    assert!(whole.contains("Text 0") && whole.contains("Text 2"), "{whole}");
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_conflicted_cell_is_merged_as_the_dialog_chose() {
    let app = spawn_app();
    let (grid, view) = strings_grid(&app, 2);
    let branch = app.post(&format!("/v1/branches?branchId={grid}"), &json!({"name": "release"}));
    let branch_view =
        branch.assert_status(201)["defaultAccessViewId"].as_str().expect("a view").to_owned();
    // Both sides change k0 and k1 since the fork: two conflicts.
    for (target, value) in [(&branch_view, "Branch"), (&view, "Master")] {
        for id in ["k0", "k1"] {
            app.patch(
                &format!("/v1/views/{target}/records/{id}"),
                &json!({"cells": [{"columnId": "en", "value": format!("{value} {id}")}]}),
            )
            .assert_status(200);
        }
    }
    let mut browser = view_page(&app, &app.key, &view);
    press_button(&mut browser, "panel-branches");
    browser.wait_for("document.querySelector('dialog li[data-branch-id]')", WAIT);
    click(&mut browser, "[data-panel=open-merge]");
    browser.wait_for("document.querySelector('dialog [data-panel=merge-source]')", WAIT);
    click(&mut browser, "[data-panel=merge-preview]");
    browser.wait_for(
        "document.querySelectorAll('dialog [data-panel=merge-choice]').length === 2",
        WAIT,
    );
    // Without override the destination's cell is kept by default; k1's is taken from the source.
    set(&mut browser, "tr[data-record-id=k1] [data-panel=merge-choice]", "source");
    click(&mut browser, "[data-panel=merge-run]");
    status_says(&mut browser, "Merged");
    let records = app.records(&view);
    assert_eq!(cell(find_record(&records, "k0"), "en")["value"], json!("Master k0"));
    assert_eq!(cell(find_record(&records, "k1"), "en")["value"], json!("Branch k1"));

    // Both sides change k0 and k1 again; merged with the last merge's choices only (no
    // preview): k0 keeps the destination's, k1 takes the source's, as chosen before.
    for (target, value) in [(&branch_view, "Branch"), (&view, "Master")] {
        for id in ["k0", "k1"] {
            app.patch(
                &format!("/v1/views/{target}/records/{id}"),
                &json!({"cells": [{"columnId": "en", "value": format!("{value} {id} again")}]}),
            )
            .assert_status(200);
        }
    }
    assert_eq!(
        browser.eval("document.querySelectorAll('dialog [data-panel=merge-choice]').length"),
        json!(0),
        "a merge drops the preview it was made from"
    );
    click(&mut browser, "[data-panel=merge-last-resolve]");
    click(&mut browser, "[data-panel=merge-run]");
    // The status already says "Merged" from the first merge: wait for the records instead.
    let deadline = std::time::Instant::now() + WAIT;
    let merged = |app: &TestApp| {
        cell(find_record(&app.records(&view), "k1"), "en")["value"] == json!("Branch k1 again")
    };
    while !merged(&app) {
        assert!(std::time::Instant::now() < deadline, "the second merge took k1 from the source");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    status_says(&mut browser, "Merged");
    let records = app.records(&view);
    assert_eq!(cell(find_record(&records, "k0"), "en")["value"], json!("Master k0 again"));
    assert_eq!(cell(find_record(&records, "k1"), "en")["value"], json!("Branch k1 again"));
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}
