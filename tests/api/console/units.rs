//! Unit tests of the console's parsers and pure functions, run in Chromium on the served
//! modules (the TSV parser and writer, clipboard text to cell values, the URL state read from
//! hostile parameters, the listing's query, the Markdown preview), and text that looks like
//! HTML shown as text in the grid.

use serde_json::{json, Value};

use super::e2e::{no_page_errors, open_view, signed_in, strings_grid, WAIT};
use crate::helpers::spawn_app;

/// Imports the modules the page loaded and runs the checks; the failures.
const CHECKS: &str = r#"(async () => {
  const base = document.querySelector('script[type=module]').src.replace(/app\.js$/, '');
  const { parseTsv, formatTsv } = await import(base + 'grid/clipboard.js');
  const { fromText, toText } = await import(base + 'grid/cells.js');
  const { stateFromParams, toListing, operatorsFor } = await import(base + 'grid/query.js');
  const { markdownPreview } = await import(base + 'grid/markdown.js');
  const fails = [];
  const eq = (name, a, b) => {
    if (JSON.stringify(a) !== JSON.stringify(b)) fails.push(`${name}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`);
  };
  eq('plain', parseTsv('a\tb\nc\td\n'), [['a', 'b'], ['c', 'd']]);
  eq('quoted newline and tab', parseTsv('"a\nb"\t"c\td"'), [['a\nb', 'c\td']]);
  eq('doubled quotes', parseTsv('"say ""hi"""\tx'), [['say "hi"', 'x']]);
  eq('CRLF and CR', parseTsv('a\r\nb\rc'), [['a'], ['b'], ['c']]);
  eq('empty cells', parseTsv('\t\n'), [['', '']]);
  eq('no final newline', parseTsv('a\tb'), [['a', 'b']]);
  eq('unterminated quote', parseTsv('"abc\tdef'), [['abc\tdef']]);
  eq('quote inside a cell', parseTsv('a"b\tc'), [['a"b', 'c']]);
  eq('bounded rows', parseTsv('x\n'.repeat(100000), 10).length, 10);
  eq('empty', parseTsv(''), []);
  const cells = [['tab\there', 'line\nbreak', 'quote"d', 'plain', '']];
  eq('round trip', parseTsv(formatTsv(cells)), cells);
  eq('number', fromText({ type: 'number' }, ' 1,234.5 '), 1234.5);
  eq('not a number', fromText({ type: 'number' }, 'abc') === undefined, true);
  eq('empty number', fromText({ type: 'number' }, ''), null);
  eq('boolean', [fromText({ type: 'boolean' }, 'TRUE'), fromText({ type: 'boolean' }, 'no')], [true, false]);
  eq('not a boolean', fromText({ type: 'boolean' }, 'maybe') === undefined, true);
  eq('selections', fromText({ type: 'multipleSelections' }, 'a, b;c'), ['a', 'b', 'c']);
  eq('files are not pasted', fromText({ type: 'files' }, 'x.png') === undefined, true);
  eq('text kept as is', fromText({ type: 'singleLine' }, ' a '), ' a ');
  eq('list to text', toText({ type: 'multipleSelections' }, { value: ['a', 'b'] }), 'a, b');
  eq('references to text', toText({ type: 'reference' }, { value: ['A'], referencedIds: ['r1'] }), 'r1');
  const hostile = new URLSearchParams();
  hostile.set('filters', '{not json');
  hostile.set('sort', '[{"field":"a","dir":"sideways"},{"field":"b","dir":"asc"}]');
  hostile.set('status', 'fr:bogus');
  hostile.set('row', '-5');
  hostile.set('search', 'x'.repeat(5000));
  const st = stateFromParams(hostile);
  eq('hostile state', [st.filters, st.sort, st.status, st.row, st.search.length],
    [[], [{ field: 'b', dir: 'asc' }], null, 0, 200]);
  const many = new URLSearchParams({ filters: JSON.stringify(Array(1000).fill({ field: 'a', op: '=' })) });
  eq('filters bounded', stateFromParams(many).filters.length, 50);
  eq('listing', toListing({ filters: [{ field: 'en', op: 'in', value: 'a, b' }, { field: 'n', op: 'isEmpty', value: 'x' }],
    sort: [{ field: 'en', dir: 'desc' }], status: { column: 'fr', value: 'upToDate' } }),
    { query: { en: { in: ['a', 'b'] }, n: { isEmpty: null }, 'fr._dependencyStatus': { '=': 'upToDate' } }, sort: { en: 'desc' } });
  eq('empty listing', toListing({ filters: [], sort: [], status: null }), {});
  eq('number operators', operatorsFor('number').includes('between'), true);
  eq('no regexp on paths', operatorsFor('path').includes('regexp'), false);
  const md = markdownPreview('# Title\n<img src=x onerror=alert(1)>\n- **bold** and `code`\n1. one');
  eq('markdown makes no HTML', md.querySelector('img'), null);
  eq('markdown text', md.querySelector('p').textContent, '<img src=x onerror=alert(1)>');
  eq('markdown blocks', [...md.children].map((e) => e.tagName), ['H3', 'P', 'UL', 'OL']);
  return fails;
})()"#;

#[test]
fn the_parsers_and_pure_functions_hold() {
    let app = spawn_app();
    let mut browser = signed_in(&app, &app.key);
    let fails = browser.eval(CHECKS);
    assert_eq!(fails, json!([]), "{fails:#}");
    no_page_errors(&browser);
}

#[test]
fn text_that_looks_like_html_is_shown_as_text() {
    let app = spawn_app();
    let (_, view) = strings_grid(&app);
    let hostile = "<img src=x onerror=\"window.owned=1\"><b>bold</b>";
    app.patch(
        &format!("/v1/views/{view}/records/k00"),
        &json!({"cells": [{"columnId": "note", "value": hostile}]}),
    )
    .assert_status(200);
    let mut browser = signed_in(&app, &app.key);
    open_view(&mut browser, &app, &view);
    browser.wait_for("document.querySelector('#cell-0-4')?.textContent.length > 0", WAIT);
    assert_eq!(browser.eval("document.querySelector('#cell-0-4').textContent"), hostile);
    assert_eq!(browser.eval("document.querySelector('.grid img, .grid b')"), Value::Null);
    assert_eq!(browser.eval("window.owned === undefined"), true);
    no_page_errors(&browser);
}
