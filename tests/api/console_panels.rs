//! The console's panels (issue 23, `console/panels/*.js`) driven in a real headless Chromium
//! (`browser::Browser`): a merge through the dialog after its preview, a column and a
//! dependency added, a CSV imported through the mapping preview, a share link made and
//! disabled, a key created and revoked by an owner, a record's history, and a change made over
//! the API reaching the open page. Each test checks over the API what the page did, and a
//! refused step (a bad mapping, a duplicate column id) changes nothing. The panels' parsers
//! have their unit tests in `console_panels_unit.js`, run inside the page.

use std::time::Duration;

use serde_json::{json, Value};

use super::browser::Browser;
use super::helpers::{cell, find_record, spawn_app, TestApp};

/// The longest any one step of the page may take.
const WAIT: Duration = Duration::from_secs(15);

/// A browser signed in with `key` (kept in sessionStorage, as the sign-in page does) on the
/// console, with the panels' entry points bound to `view` (of `branch`) as `window.ctx` and
/// `window.panels`, the way the view page builds them.
fn open_console(app: &TestApp, key: &str, view: &str, branch: &str) -> Browser {
    let mut browser = Browser::launch(1280, 900);
    browser.goto(&format!("{}/", app.base));
    browser.wait_for("document.querySelector('script[type=module]') && document.readyState === 'complete'", WAIT);
    browser.eval(&format!("sessionStorage.setItem('gridd.apiKey', {}); true", json!(key)));
    let setup = format!(
        "(async () => {{
          const base = document.querySelector('script[type=module]').src.replace(/app\\.js$/, '');
          const panels = await import(`${{base}}panels/index.js`);
          const {{ api }} = await import(`${{base}}api.js`);
          const key = await api.get('/admin/v1/api-keys/current');
          const view = await api.get('/v1/views/{view}');
          window.reloads = 0;
          window.ctx = {{ api, key, can: (p) => key.privileges.includes(p),
            route: {{ viewId: '{view}', gridId: view.gridId, branchId: '{branch}' }},
            view, columns: view.columns, grid: {{ id: view.gridId }},
            reload: async () => {{ window.reloads += 1; }}, navigate: (hash) => {{ window.navigated = hash; }} }};
          window.panels = panels;
          return true;
        }})()"
    );
    browser.eval(&setup);
    browser
}

/// Runs the toolbar entry `id` (or another entry point's, by `list`), as a click on it would.
fn open_entry(browser: &mut Browser, list: &str, id: &str) {
    let found = browser.eval(&format!(
        "(() => {{ const item = {list}.find((i) => i.id === '{id}'); if (!item) return false; item.run(); return true; }})()"
    ));
    assert_eq!(found, json!(true), "{list} offers no {id}");
}

/// Clicks the element `selector` inside the open dialog once it is there and enabled.
fn click(browser: &mut Browser, selector: &str) {
    let selector = json!(format!("dialog {selector}"));
    browser.wait_for(&format!("document.querySelector({selector}) && !document.querySelector({selector}).disabled"), WAIT);
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
    let mut browser = open_console(&app, &app.key, &view, "");
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
    app.patch(&format!("/v1/views/{branch_view}/records/k0"), &json!({"cells": [{"columnId": "en", "value": "Changed"}]}))
        .assert_status(200);
    app.add_records(&branch_view, json!([{"id": "k9", "cells": [{"columnId": "en", "value": "New"}]}]));

    let mut browser = open_console(&app, &app.key, &view, &grid);
    open_entry(&mut browser, "panels.viewToolbar(ctx)", "branches");
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
    let diff = browser.eval("document.querySelector('dialog tr[data-record-id=k0] ins').textContent");
    assert_eq!(diff, json!("Changed"));
    // Nothing moved yet.
    assert_eq!(cell(find_record(&app.records(&view), "k0"), "en")["value"], json!("Text 0"));

    click(&mut browser, "[data-panel=merge-run]");
    status_says(&mut browser, "Merged");
    let records = app.records(&view);
    assert_eq!(cell(find_record(&records, "k0"), "en")["value"], json!("Changed"));
    assert_eq!(cell(find_record(&records, "k9"), "en")["value"], json!("New"));
    assert_eq!(browser.eval("window.reloads"), json!(1), "the open master view reloads");
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_column_and_a_dependency_are_added_in_the_columns_panel() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    let mut browser = open_console(&app, &app.key, &view, "");
    open_entry(&mut browser, "panels.viewToolbar(ctx)", "columns");
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
    let mut browser = open_console(&app, &app.key, &view, "");
    open_entry(&mut browser, "panels.viewToolbar(ctx)", "import");
    pick_file(&mut browser, "[data-panel=import-file]", &file);
    browser.wait_for("document.querySelectorAll('dialog select[data-file-column]').length === 3", WAIT);
    let cells = browser.eval("[...document.querySelectorAll('dialog .panel-preview tbody tr')].map((r) => [...r.children].map((c) => c.textContent))");
    assert_eq!(cells[2], json!(["k5", "Deux, \"trois\"", "y"]));
    // No header matches a column: every target starts as "ignore".
    let guessed = browser.eval("[...document.querySelectorAll('dialog select[data-file-column]')].map((s) => s.value)");
    assert_eq!(guessed, json!(["", "", ""]));

    // Two file columns into one column are refused before anything is sent.
    set(&mut browser, "select[data-file-column='0']", "en");
    set(&mut browser, "select[data-file-column='1']", "en");
    click(&mut browser, "[data-panel=import-run]");
    status_says(&mut browser, "both go to en");
    assert_eq!(app.records(&view).len(), 1);

    set(&mut browser, "select[data-file-column='0']", "_recordId");
    click(&mut browser, "[data-panel=import-run]");
    status_says(&mut browser, "Imported strings.csv");
    let records = app.records(&view);
    assert_eq!(records.len(), 2);
    assert_eq!(cell(find_record(&records, "k0"), "en")["value"], json!("Bonjour"));
    assert_eq!(cell(find_record(&records, "k5"), "en")["value"], json!("Deux, \"trois\""));
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_share_link_is_made_copied_and_disabled() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 1);
    let shares = format!("/v1/views/{view}/shares");
    app.get(&shares).assert_error(404, "shareIsNotFound");
    let mut browser = open_console(&app, &app.key, &view, "");
    open_entry(&mut browser, "panels.viewToolbar(ctx)", "share");
    click(&mut browser, "[data-panel=share-enable]");
    let link = browser.wait_for("document.querySelector('dialog [data-panel=share-link]').value", WAIT);
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
    let mut browser = open_console(&app, &writer, &view, "");
    assert_eq!(browser.eval("panels.companyMenu(ctx).length"), json!(0));
    assert_eq!(browser.eval("panels.viewToolbar(ctx).map((i) => i.id)"), json!(["import", "export"]));
    drop(browser);

    let mut browser = open_console(&app, &app.key, &view, "");
    open_entry(&mut browser, "panels.companyMenu(ctx)", "keys");
    let name = labelled(&mut browser, "Name");
    set(&mut browser, &name, "translator");
    let privilege = labelled(&mut browser, "Privilege (includes the ones before it)");
    set(&mut browser, &privilege, "write");
    click(&mut browser, "[data-panel=key-create]");
    let secret = browser.wait_for("document.querySelector('dialog [data-panel=key-secret]').value", WAIT);
    let secret = secret.as_str().expect("the secret").to_owned();
    let listed = app.get("/admin/v1/api-keys");
    let key = listed.body.as_array().expect("keys").iter().find(|k| k["name"] == "translator").cloned();
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
    for text in ["One", "Two"] {
        app.patch(&format!("/v1/views/{view}/records/k0"), &json!({"cells": [{"columnId": "en", "value": text}]}))
            .assert_status(200);
    }
    let mut browser = open_console(&app, &app.key, &view, "");
    open_entry(&mut browser, "panels.recordMenu(ctx, {id: 'k0', path: ''})", "history");
    browser.wait_for("document.querySelectorAll('dialog .panel-history-entry').length === 3", WAIT);
    let values = browser.eval("[...document.querySelectorAll('dialog .panel-history-entry dd')].map((d) => d.firstChild.textContent)");
    assert_eq!(values, json!(["Two", "One", "Text 0"]));
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}

#[test]
fn a_change_made_over_the_api_reaches_the_open_page() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app, 2);
    let mut browser = open_console(&app, &app.key, &view, "");
    browser.eval(
        "window.changes = []; window.states = [];
         window.stopLive = panels.startLive(ctx, (change) => window.changes.push(change)); true",
    );
    // The stream is open once the server counts its consumer; a write then arrives as an event.
    std::thread::sleep(Duration::from_millis(300));
    app.patch(&format!("/v1/views/{view}/records/k1"), &json!({"cells": [{"columnId": "en", "value": "Live"}]}))
        .assert_status(200);
    let ids = browser.wait_for("window.changes.length && window.changes[0].ids", WAIT);
    assert_eq!(ids, json!(["k1"]));
    let value = browser.eval("window.changes[0].records[0].cells.find((c) => c.columnId === 'en').value");
    assert_eq!(value, json!("Live"));
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["k0"]})).assert_status(204);
    let kinds = browser.wait_for("window.changes.length === 2 && window.changes.map((c) => c.kind + ':' + c.ids.join())", WAIT);
    assert_eq!(kinds, json!(["records:k1", "records:k0"]));
    app.post(&format!("/v1/views/{view}/columns"), &json!({"name": "Note", "type": "singleLine"}))
        .assert_status(201);
    browser.wait_for("window.changes.some((c) => c.kind === 'schema')", WAIT);
    browser.eval("window.stopLive(); true");
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
}
