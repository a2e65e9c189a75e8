//! More of the console in Chromium: browse CRUD with the keyboard only, the filter and sort
//! builders and the search box against the API's own answers, read-only cells (locked,
//! formula), keyboard travel to the last of thousands of rows, and refused input (a paste over
//! the bound, a wrong key) that writes nothing.

use serde_json::{json, Value};

use super::e2e::{go_to, no_page_errors, open_view, shown_ids, signed_in, strings_grid, WAIT};
use crate::helpers::{cell, spawn_app};

#[test]
fn projects_are_created_renamed_and_deleted_with_the_keyboard() {
    let app = spawn_app();
    let mut browser = signed_in(&app, &app.key);
    browser.wait_for("document.querySelector('#new-project')", WAIT);
    browser.eval("document.querySelector('#new-project').focus()");
    browser.press("Enter", 0);
    browser.wait_for(
        "document.activeElement?.closest('dialog') && document.activeElement.tagName === 'INPUT'",
        WAIT,
    );
    browser.type_text("Localization");
    browser.press("Enter", 0);
    browser.wait_for(
        "[...document.querySelectorAll('.entry-name')].some(a => a.textContent === 'Localization')",
        WAIT,
    );
    let projects = app.get("/v1/projects").body;
    let made =
        projects.as_array().and_then(|p| p.iter().find(|p| p["name"] == "Localization")).cloned();
    let id = made.expect("the project was created")["id"].clone();

    // Esc closes a dialog without doing anything, and the focus goes back to its button.
    browser.eval("document.querySelector('[aria-label=\"Rename Localization\"]').focus()");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('dialog input')", WAIT);
    browser.press("Escape", 0);
    browser.wait_for("!document.querySelector('dialog')", WAIT);
    assert_eq!(
        browser.eval("document.activeElement.getAttribute('aria-label')"),
        "Rename Localization"
    );
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('dialog input')", WAIT);
    browser.eval("document.querySelector('dialog input').select()");
    browser.type_text("L10n");
    browser.press("Enter", 0);
    browser.wait_for(
        "[...document.querySelectorAll('.entry-name')].some(a => a.textContent === 'L10n')",
        WAIT,
    );
    assert_eq!(app.get(&format!("/v1/projects/{id}")).body["name"], "L10n");

    browser.eval("document.querySelector('[aria-label=\"Delete L10n\"]').focus()");
    browser.press("Enter", 0);
    browser.wait_for(
        "document.querySelector('dialog [data-action=Delete]') === document.activeElement",
        WAIT,
    );
    browser.press("Enter", 0);
    browser.wait_for(
        "![...document.querySelectorAll('.entry-name')].some(a => a.textContent === 'L10n')",
        WAIT,
    );
    app.get(&format!("/v1/projects/{id}")).assert_error(404, "projectIsNotFound");
    no_page_errors(&browser);
}

#[test]
fn the_filter_and_sort_builders_and_the_search_match_the_api() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    browser.eval("document.querySelector('#filter-button').click()");
    browser.wait_for("document.querySelector('#add-condition')", WAIT);
    browser.eval(
        "(() => { document.querySelector('#add-condition').click(); \
         const row = document.querySelector('.builder-row'); const [field, op] = row.querySelectorAll('select'); \
         field.value = 'en'; field.dispatchEvent(new Event('change')); op.value = 'endsWith'; \
         row.querySelector('input').value = '1'; \
         document.querySelector('dialog [data-action=Apply]').click(); })()",
    );
    browser.wait_for("document.querySelectorAll('.grid-row').length === 3", WAIT);
    let expected = app.listing_ids(&view, &[("query", r#"{"en":{"endsWith":"1"}}"#)]);
    assert_eq!(shown_ids(&mut browser), expected);
    browser.eval("document.querySelector('#sort-button').click()");
    browser.wait_for("document.querySelector('dialog .builder')", WAIT);
    browser.eval(
        "(() => { [...document.querySelectorAll('dialog button')].find(b => b.textContent === 'Add sort key').click(); \
         const [field, dir] = document.querySelectorAll('dialog .builder-row select'); \
         field.value = '_recordId'; dir.value = 'desc'; \
         document.querySelector('dialog [data-action=Apply]').click(); })()",
    );
    browser.wait_for("document.querySelector('.grid-row[aria-rowindex=\"2\"] .t-_recordId')?.textContent === 'k21'", WAIT);
    assert_eq!(shown_ids(&mut browser), ["k21", "k11", "k01"]);
    let hash = browser.eval("decodeURIComponent(location.hash)");
    assert!(
        hash.as_str()
            .is_some_and(|h| h.contains("\"op\":\"endsWith\"") && h.contains("\"dir\":\"desc\"")),
        "{hash}"
    );

    // The search looks in every visible text column (en, fr, note): the union of its matches.
    browser.eval("(() => { griddGrid.state.filters = []; griddGrid.state.sort = []; \
                  const s = document.querySelector('#search'); s.value = 'texte 2'; s.dispatchEvent(new Event('input')); })()");
    browser.wait_for("decodeURIComponent(location.hash).includes('search=texte')", WAIT);
    browser.wait_for("document.querySelectorAll('.grid-row').length === 3", WAIT);
    let mut shown = shown_ids(&mut browser);
    shown.sort();
    assert_eq!(shown, ["k21", "k24", "k27"]);
    no_page_errors(&browser);
}

#[test]
fn locked_and_formula_cells_are_read_only() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    app.create_column(
        &view,
        json!({"id": "label", "name": "Label", "type": "formula",
        "formula": {"formulaText": "UPPER([en])"}}),
    );
    app.patch(
        &format!("/v1/views/{view}/records/k00"),
        &json!({"cells": [{"columnId": "en", "value": "Text 0", "sourceStatus": "locked"}]}),
    )
    .assert_status(200);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    assert!(browser
        .eval("document.querySelector('#cell-0-2').classList.contains('locked')")
        .as_bool()
        .unwrap_or(false));
    go_to(&mut browser, 0, "en");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('.toast')?.textContent.includes('read-only')", WAIT);
    assert_eq!(browser.eval("document.querySelector('.cell-editor')"), Value::Null);
    go_to(&mut browser, 1, "label");
    assert_eq!(browser.eval("document.querySelector('#cell-1-6').textContent"), "TEXT 1");
    browser.press("x", 0);
    browser.wait_for(
        "[...document.querySelectorAll('.toast')].some(t => t.textContent.includes('Formula'))",
        WAIT,
    );
    assert_eq!(browser.eval("document.querySelector('.cell-editor')"), Value::Null);
    assert_eq!(cell(&app.record_by_id(&view, "k00"), "en")["value"], "Text 0");
    no_page_errors(&browser);
}

#[test]
fn the_keyboard_reaches_the_last_of_thousands_of_rows() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    for start in (30..3000).step_by(1000) {
        let records: Vec<Value> = (start..(start + 1000).min(3000))
            .map(|i| json!({"id": format!("k{i:04}"), "cells": [{"columnId": "en", "value": format!("Text {i}")}]}))
            .collect();
        app.add_records(&view, Value::Array(records));
    }
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    browser.eval("document.querySelector('.grid').focus()");
    browser.press("ArrowDown", 2);
    browser
        .wait_for("document.querySelector('#cell-2999-0.active')?.textContent === 'k2999'", WAIT);
    browser.press("ArrowUp", 0);
    browser.press("PageUp", 0);
    browser.wait_for(
        "document.querySelector('.cell.active') && griddGrid.table.active.row < 2998",
        WAIT,
    );
    let row = browser.eval("griddGrid.table.active.row").as_u64().expect("a row");
    let id = browser.eval(&format!("document.querySelector('#cell-{row}-0').textContent"));
    assert_eq!(id, json!(format!("k{row:04}")));
    no_page_errors(&browser);
}

#[test]
fn refused_input_writes_nothing() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let before = app.records(&view);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    go_to(&mut browser, 0, "note");
    browser.eval(
        "(() => { const dt = new DataTransfer(); dt.setData('text/plain', 'x\\n'.repeat(600)); \
         document.querySelector('.grid').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true})); })()",
    );
    browser.wait_for(
        "document.querySelector('.toast.error')?.textContent.includes('at most 500 rows')",
        WAIT,
    );
    assert_eq!(app.records(&view), before);

    // A wrong key is refused at sign-in and nothing of it is kept.
    browser.eval("document.querySelector('#signout').click()");
    browser.wait_for("document.querySelector('form.signin input[name=key]')", WAIT);
    assert_eq!(browser.eval("sessionStorage.length"), 0);
    browser.eval("document.querySelector('form.signin input[name=key]').focus()");
    browser.type_text("not-a-key");
    browser.press("Enter", 0);
    browser
        .wait_for("document.querySelector('.form-error')?.textContent.includes('not valid')", WAIT);
    assert_eq!(browser.eval("sessionStorage.length"), 0);
}
