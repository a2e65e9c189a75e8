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
    assert_eq!(
        browser.eval("document.querySelector('.head-cell[aria-sort]').textContent"),
        "Record ID"
    );
    // A click on a column's name sorts by it alone, ascending.
    browser.eval("document.querySelectorAll('.head-name')[2].click()");
    browser.wait_for(
        "document.querySelector('.head-cell[aria-sort=ascending]')?.textContent === 'English'",
        WAIT,
    );
    let english = app.listing_ids(
        &view,
        &[("query", r#"{"en":{"endsWith":"1"}}"#), ("sort", r#"{"en":"asc"}"#)],
    );
    browser.wait_for(&format!("document.querySelector('.grid-row[aria-rowindex=\"2\"] .t-_recordId')?.textContent === '{}'", english[0]), WAIT);
    assert_eq!(shown_ids(&mut browser), english);
    let hash = browser.eval("decodeURIComponent(location.hash)");
    assert!(
        hash.as_str()
            .is_some_and(|h| h.contains("\"op\":\"endsWith\"") && h.contains("\"dir\":\"asc\"")),
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
    assert_eq!(browser.eval("document.querySelector('.cell.active').textContent"), "TEXT 1");
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
    // The toolbar's "Go to row" takes row numbers as people count them.
    browser.eval("document.querySelector('#go-to-row').focus()");
    browser.type_text("1234");
    browser.press("Enter", 0);
    browser
        .wait_for("document.querySelector('#cell-1233-0.active')?.textContent === 'k1233'", WAIT);
    assert_eq!(browser.eval("document.activeElement.classList.contains('grid')"), true);
    // Shift+arrows grow a range; Esc shrinks it back to the active cell.
    browser.press("ArrowDown", 8);
    browser.press("ArrowRight", 8);
    browser.wait_for("document.querySelectorAll('.cell.sel').length === 4", WAIT);
    browser.press("Escape", 0);
    browser.wait_for("document.querySelectorAll('.cell.sel').length === 1", WAIT);
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
    browser.eval(
        "(() => { const dt = new DataTransfer(); dt.setData('text/plain', 'x'.repeat(6000000)); \
         document.querySelector('.grid').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true})); })()",
    );
    browser.wait_for("[...document.querySelectorAll('.toast.error')].some(t => t.textContent.includes('characters'))", WAIT);
    assert_eq!(app.records(&view), before);
    // Clearing more rows than a paste may write is refused too.
    let more: Vec<Value> =
        (30..600).map(|i| json!({"id": format!("k{i:03}"), "cells": []})).collect();
    app.add_records(&view, Value::Array(more));
    let before_clear = app.records(&view);
    browser.eval("griddGrid.source.reload()");
    browser.wait_for("griddGrid.source.total === 600", WAIT);
    go_to(&mut browser, 0, "note");
    browser.press("ArrowDown", 2 | 8);
    browser.press("Delete", 0);
    browser.wait_for("[...document.querySelectorAll('.toast.error')].some(t => t.textContent.includes('to clear them'))", WAIT);
    assert_eq!(app.records(&view), before_clear);

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

/// Opens the editor of (row, column), sets its control with `set` (JS given `box`, the editor
/// element) and saves with Enter, waiting for the write.
fn edit_with(browser: &mut crate::browser::Browser, row: usize, column: &str, set: &str) {
    go_to(browser, row, column);
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('.cell-editor')", WAIT);
    browser.eval(&format!(
        "(() => {{ const box = document.querySelector('.cell-editor'); {set} }})()"
    ));
    browser.eval("document.querySelector('.cell-editor input, .cell-editor select, .cell-editor textarea').focus()");
    browser.press("Enter", 0);
    browser.wait_for("!document.querySelector('.cell-editor')", WAIT);
    // Saved, the active cell moves down.
    browser.wait_for(&format!("griddGrid.table.active.row === {}", row + 1), WAIT);
}

#[test]
fn each_column_type_has_its_editor() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    // The option colors are shown.
    assert_eq!(browser.eval("document.querySelector('#cell-0-6 .chip').className"), "chip opt-sun");
    edit_with(&mut browser, 0, "state", "box.querySelector('select').value = 'final';");
    edit_with(&mut browser, 0, "tags", "box.querySelector('input[value=menu]').checked = false;");
    edit_with(&mut browser, 0, "chars", "box.querySelector('input').value = '42.5';");
    edit_with(&mut browser, 0, "due", "box.querySelector('input').value = '2026-12-24T18:30';");
    edit_with(&mut browser, 0, "doc", "const a = box.querySelector('textarea'); a.value = '# Title\\n- **item**'; \
        a.dispatchEvent(new Event('input')); if (!box.querySelector('.md-preview h3')) throw new Error('no preview');");
    go_to(&mut browser, 0, "done");
    browser.press(" ", 0);
    browser.wait_for("document.querySelector('#cell-0-8 .check.on') === null", WAIT);
    let record = app.record_by_id(&view, "k00");
    assert_eq!(cell(&record, "state")["value"], "final");
    assert_eq!(cell(&record, "tags")["value"], json!(["ui"]));
    assert_eq!(cell(&record, "chars")["value"], json!(42.5));
    assert!(cell(&record, "due")["value"]
        .as_str()
        .is_some_and(|d| d.starts_with("2026-12-24T18:30:00")));
    assert_eq!(cell(&record, "doc")["value"], "# Title\n- **item**");
    assert_eq!(cell(&record, "done")["value"], json!(false));
    no_page_errors(&browser);
}

#[test]
fn a_link_opens_the_same_row_and_columns_resize_by_keyboard() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let records: Vec<Value> = (30..2000)
        .map(|i| json!({"id": format!("k{i:04}"), "cells": [{"columnId": "en", "value": format!("Text {i}")}]}))
        .collect();
    for chunk in records.chunks(1000) {
        app.add_records(&view, Value::Array(chunk.to_vec()));
    }
    let mut browser = signed_in(&app, &app.key);
    browser.eval(&format!("location.hash = '#/views/{view}?row=1500'"));
    browser.wait_for(
        "document.querySelector('.grid-row[aria-rowindex=\"1502\"]:not(.loading)')",
        WAIT,
    );
    assert_eq!(browser.eval("griddGrid.table.firstVisible().first"), 1500);
    let width =
        browser.eval("document.querySelectorAll('.head-cell')[2].getBoundingClientRect().width");
    browser.eval("document.querySelectorAll('.head-cell .resize')[2].focus()");
    browser.press("ArrowRight", 0);
    browser.press("ArrowRight", 0);
    let wider =
        browser.eval("document.querySelectorAll('.head-cell')[2].getBoundingClientRect().width");
    assert_eq!(wider.as_f64().unwrap_or(0.0), width.as_f64().unwrap_or(0.0) + 32.0);
    // The rows follow at the next frame.
    browser.wait_for(
        &format!(
            "document.querySelector('.grid-row .cell[data-col=\"2\"]').getBoundingClientRect().width === {wider}"
        ),
        WAIT,
    );
    no_page_errors(&browser);
}

#[test]
fn a_refused_query_is_reported_once_without_a_request_storm() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    let filters = r#"[{"field":"en","op":"regexp","value":"("}]"#;
    let hash = format!(
        "#/views/{view}?filters={}",
        filters
            .replace('"', "%22")
            .replace('[', "%5B")
            .replace(']', "%5D")
            .replace('{', "%7B")
            .replace('}', "%7D")
    );
    browser.eval(&format!("location.hash = '{hash}'"));
    browser.wait_for("document.querySelector('.toast.error')", WAIT);
    let message = browser.eval("document.querySelector('.toast.error').textContent");
    assert!(message.as_str().is_some_and(|m| !m.is_empty()), "{message}");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let asked = browser.eval(
        "performance.getEntriesByType('resource').filter(e => e.name.includes('/records')).length",
    );
    assert!(asked.as_u64().is_some_and(|n| n <= 4), "{asked} record requests in 2.5 s");
    assert_eq!(browser.eval("document.querySelectorAll('.toast.error').length"), 1);
}

#[test]
fn a_view_key_opens_its_view_and_edits_it() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let view_key = app.create_view_key(&view);
    let mut browser = signed_in(&app, &view_key);
    browser.wait_for("document.querySelector('.grid-row:not(.loading) .cell.t-_recordId')", WAIT);
    assert!(browser.eval("location.hash").as_str().is_some_and(|h| h.contains(&view)));
    browser.eval("location.hash = '#/'");
    browser.wait_for("document.querySelector('.grid-row:not(.loading)')", WAIT);
    go_to(&mut browser, 3, "note");
    browser.press("o", 0);
    browser.wait_for("document.querySelector('.cell-editor input')", WAIT);
    browser.type_text("k");
    browser.press("Enter", 0);
    browser.wait_for("griddGrid.table.active.row === 4", WAIT);
    assert_eq!(cell(&app.record_by_id(&view, "k03"), "note")["value"], "ok");
    no_page_errors(&browser);
}

#[test]
fn records_are_added_and_deleted_from_the_keyboard() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    browser.eval("document.querySelector('#add-record').focus()");
    browser.press("Enter", 0);
    browser.wait_for(
        "document.activeElement?.closest('dialog') && document.activeElement.tagName === 'INPUT'",
        WAIT,
    );
    browser.type_text("new.key");
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('.count')?.textContent.startsWith('31 ')", WAIT);
    assert!(app.records(&view).iter().any(|r| r["id"] == "new.key"));

    go_to(&mut browser, 5, "note");
    browser.press("F10", 8);
    browser.wait_for("document.querySelector('#menu-delete-record')", WAIT);
    browser.eval("document.querySelector('#menu-delete-record').click()");
    browser.wait_for(
        "document.querySelector('dialog [data-action=Delete]') === document.activeElement",
        WAIT,
    );
    browser.press("Enter", 0);
    browser.wait_for("document.querySelector('.count')?.textContent.startsWith('30 ')", WAIT);
    assert!(!app.records(&view).iter().any(|r| r["id"] == "k05"));
    no_page_errors(&browser);
}

#[test]
fn a_reference_is_picked_from_suggestions_and_text_spans_lines() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let (glossary, glossary_view) = app.create_grid("Glossary");
    app.create_column(&glossary_view, json!({"id": "term", "name": "Term", "type": "singleLine"}));
    app.add_records(
        &glossary_view,
        json!([
        {"id": "g.start", "cells": [{"columnId": "term", "value": "Start"}]},
        {"id": "g.stop", "cells": [{"columnId": "term", "value": "Stop"}]},
        {"id": "g.quit", "cells": [{"columnId": "term", "value": "Quit"}]}]),
    );
    app.create_column(
        &view,
        json!({"id": "gloss", "name": "Glossary", "type": "reference",
        "reference": {"gridId": glossary, "columnId": "term", "type": "row"}}),
    );
    app.create_column(&view, json!({"id": "long", "name": "Long text", "type": "multipleLines"}));
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    go_to(&mut browser, 0, "gloss");
    browser.press("Enter", 0);
    browser.wait_for(
        "document.querySelector('.cell-editor .reference-picker input') === document.activeElement",
        WAIT,
    );
    browser.type_text("sto");
    browser.wait_for("document.querySelectorAll('.suggestion').length === 1", WAIT);
    assert_eq!(browser.eval("document.querySelector('.suggestion').textContent"), "g.stop Stop");
    browser.eval("document.querySelector('.suggestion').click()");
    browser.press("Enter", 0);
    browser.wait_for("griddGrid.table.active.row === 1", WAIT);
    let record = app.record_by_id(&view, "k00");
    assert_eq!(cell(&record, "gloss")["referencedIds"], json!(["g.stop"]));
    assert_eq!(cell(&record, "gloss")["value"], json!(["Stop"]));

    go_to(&mut browser, 0, "long");
    browser.press("Enter", 0);
    browser.wait_for(
        "document.querySelector('.cell-editor textarea') === document.activeElement",
        WAIT,
    );
    browser.type_text("first line");
    browser.press("Enter", 1);
    browser.type_text("second line");
    browser.press("Enter", 0);
    browser.wait_for("griddGrid.table.active.row === 1", WAIT);
    assert_eq!(cell(&app.record_by_id(&view, "k00"), "long")["value"], "first line\nsecond line");
    no_page_errors(&browser);
}

/// Clicks the `New <kind>` button, names the entity and waits for it in the list.
fn create_named(browser: &mut crate::browser::Browser, kind: &str, name: &str) {
    browser.eval(&format!("document.querySelector('#new-{kind}').click()"));
    browser.wait_for(
        "document.activeElement?.closest('dialog') && document.activeElement.tagName === 'INPUT'",
        WAIT,
    );
    browser.type_text(name);
    browser.press("Enter", 0);
    browser.wait_for(
        &format!(
            "[...document.querySelectorAll('.entry-name')].some(a => a.textContent === '{name}')"
        ),
        WAIT,
    );
}

/// Clicks `Rename <name>`, types `new_name` and waits for it in the list.
fn rename_named(browser: &mut crate::browser::Browser, name: &str, new_name: &str) {
    browser.eval(&format!("document.querySelector('[aria-label=\"Rename {name}\"]').click()"));
    browser.wait_for("document.querySelector('dialog input')", WAIT);
    browser.eval("document.querySelector('dialog input').select()");
    browser.type_text(new_name);
    browser.press("Enter", 0);
    browser.wait_for(
        &format!(
            "[...document.querySelectorAll('.entry-name')].some(a => a.textContent === '{new_name}')"
        ),
        WAIT,
    );
}

/// Clicks `Delete <name>` and confirms.
fn delete_named(browser: &mut crate::browser::Browser, name: &str) {
    browser.eval(&format!("document.querySelector('[aria-label=\"Delete {name}\"]').click()"));
    browser.wait_for(
        "document.querySelector('dialog [data-action=Delete]') === document.activeElement",
        WAIT,
    );
    browser.press("Enter", 0);
    browser.wait_for(
        &format!(
            "![...document.querySelectorAll('.entry-name')].some(a => a.textContent === '{name}')"
        ),
        WAIT,
    );
}

#[test]
fn branches_and_views_are_created_renamed_and_deleted_in_the_browse_pages() {
    let app = spawn_app();
    let (grid, _) = strings_grid(&app);
    let mut browser = signed_in(&app, &app.key);
    browser.eval(&format!("location.hash = '#/grids/{grid}'"));
    browser.wait_for("document.querySelector('#new-branch')", WAIT);
    // The master branch can be neither deleted nor renamed.
    for action in ["Delete", "Rename"] {
        let button = format!("document.querySelector('[aria-label=\"{action} master\"]')");
        assert_eq!(browser.eval(&button), Value::Null, "{action}");
    }
    create_named(&mut browser, "branch", "release-1");
    let branches = app.get(&format!("/v1/branches?gridId={grid}")).body;
    let branch =
        branches.as_array().and_then(|b| b.iter().find(|b| b["name"] == "release-1")).cloned();
    let branch_id =
        branch.expect("the branch was created")["id"].as_str().expect("an id").to_owned();

    create_named(&mut browser, "view", "Review");
    let views = app.get(&format!("/v1/views?gridId={grid}")).body;
    let review = views.as_array().and_then(|v| v.iter().find(|v| v["name"] == "Review")).cloned();
    let review = review.expect("the view was created");
    assert_eq!(review["columns"].as_array().map(Vec::len), Some(10), "{review}");
    rename_named(&mut browser, "Review", "Review FR");
    let renamed = app.get(&format!("/v1/views/{}", review["id"].as_str().expect("id"))).body;
    assert_eq!(renamed["name"], "Review FR");
    delete_named(&mut browser, "Review FR");
    let views = app.get(&format!("/v1/views?gridId={grid}")).body;
    assert!(!views.as_array().is_some_and(|v| v
        .iter()
        .any(|v| v["name"].as_str().is_some_and(|n| n.starts_with("Review")))));

    rename_named(&mut browser, "release-1", "release-1.1");
    assert_eq!(app.get(&format!("/v1/branches/{branch_id}")).body["name"], "release-1.1");
    delete_named(&mut browser, "release-1.1");
    app.get(&format!("/v1/branches/{branch_id}")).assert_error(404, "branchIsNotFound");
    no_page_errors(&browser);
}

#[test]
fn machine_translated_cells_are_flagged_and_the_flag_is_set_and_cleared() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "k03", "markUpdatedCellsWithMTFlag": true,
            "cells": [{"columnId": "fr", "value": "Texte trois"}]}]),
    )
    .assert_status(200);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    let col = browser.eval("griddGrid.table.columns.findIndex(c => c.id === 'fr')");
    let flagged = |browser: &mut crate::browser::Browser, row: usize| {
        browser
            .eval(&format!("document.querySelector('#cell-{row}-{col}').classList.contains('mt')"))
            .as_bool()
            .unwrap_or(false)
    };
    assert!(flagged(&mut browser, 3) && !flagged(&mut browser, 6));
    let is_mt = |id: &str| cell(&app.record_by_id(&view, id), "fr")["isMT"] == json!(true);

    // k06 is a human translation: the record menu marks it machine-translated.
    go_to(&mut browser, 6, "fr");
    browser.press("F10", 8);
    browser.wait_for("document.querySelector('#menu-mt-mark')", WAIT);
    browser.eval("document.querySelector('#menu-mt-mark').click()");
    browser.wait_for(&format!("document.querySelector('#cell-6-{col}.mt')"), WAIT);
    assert!(is_mt("k06"));
    assert_eq!(cell(&app.record_by_id(&view, "k06"), "fr")["value"], "Texte 6", "value kept");

    // k03's flag is cleared (a reviewer took the machine's text as it is).
    go_to(&mut browser, 3, "fr");
    browser.press("F10", 8);
    browser.wait_for("document.querySelector('#menu-mt-clear')", WAIT);
    browser.eval("document.querySelector('#menu-mt-clear').click()");
    browser.wait_for(&format!("!document.querySelector('#cell-3-{col}.mt')"), WAIT);
    assert!(!is_mt("k03"));
    assert_eq!(cell(&app.record_by_id(&view, "k03"), "fr")["value"], "Texte trois");
    no_page_errors(&browser);
}
