//! `GET /v1/views/<viewId>/export` of the OpenAPI's other `FileType`s: `json` (the records as
//! the listing renders them, read back by an import with `type=json`), `html` (one table, every
//! text escaped), `po` (a zip of one gettext file per target language) and `xls` (refused,
//! naming xlsx); a large export of each streams every record.

use std::io::Read;

use reqwest::Method;
use serde_json::{json, Value};

use crate::files::{multipart, post_multipart};
use crate::helpers::{spawn_app, TestApp};

/// An export's answer: its content type and disposition checked, and its body.
fn export(app: &TestApp, view: &str, query: &str, content_type: &str, name: &str) -> Vec<u8> {
    let path = format!("/v1/views/{view}/export{query}");
    let res = app.request(Method::GET, &path, Some(&app.key)).send().expect("export");
    assert_eq!(res.status().as_u16(), 200, "{path}");
    let header = |name: &str| {
        res.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    };
    assert_eq!(header("content-type"), content_type, "{path}");
    assert_eq!(
        header("content-disposition"),
        format!("attachment; filename=\"{name}\"; filename*=UTF-8''{name}"),
        "{path}"
    );
    res.bytes().expect("body").to_vec()
}

fn json_export(app: &TestApp, view: &str, query: &str) -> Value {
    let bytes = export(app, view, query, "application/json", &format!("{view}.json"));
    serde_json::from_slice(&bytes).expect("a JSON document")
}

/// A grid of every kind of cell a round trip must keep: text, number, boolean, datetime,
/// selections, a source and a target language column (with statuses), a reference to another
/// grid, and a formula; with three records. Its view.
fn rich_grid(app: &TestApp) -> String {
    let (_, glossary) = app.create_grid("Glossary");
    app.create_column(&glossary, json!({"id": "term", "name": "Term", "type": "singleLine"}));
    let glossary_grid = app.get(&format!("/v1/views/{glossary}")).body["gridId"].clone();
    app.add_records(
        &glossary,
        json!([{"id": "g1", "cells": [{"columnId": "term", "value": "zebra"}]},
               {"id": "g2", "cells": [{"columnId": "term", "value": "apple"}]}]),
    );
    let (_, view) = app.language_grid(&[("fr", "French", "frFR")], true);
    for column in [
        json!({"id": "count", "name": "Count", "type": "number"}),
        json!({"id": "flag", "name": "Flag", "type": "boolean"}),
        json!({"id": "due", "name": "Due", "type": "datetime"}),
        json!({"id": "tags", "name": "Tags", "type": "multipleSelections",
               "selection": {"options": [{"value": "ui"}, {"value": "legal"}]}}),
        json!({"id": "terms", "name": "Terms", "type": "reference",
               "reference": {"gridId": glossary_grid, "columnId": "term", "type": "row"}}),
        json!({"id": "size", "name": "Size", "type": "formula",
               "formula": {"formulaText": "LEN([note])"}}),
    ] {
        app.create_column(&view, column);
    }
    app.add_records(
        &view,
        json!([
            {"id": "r1", "path": "menu", "cells": [
                {"columnId": "en", "value": "Save, \"all\"\n<now>"},
                {"columnId": "fr", "value": "Tout enregistrer"},
                {"columnId": "note", "value": "a & b"},
                {"columnId": "count", "value": 3},
                {"columnId": "flag", "value": true},
                {"columnId": "due", "value": "2024-05-01T12:30:00.000Z"},
                {"columnId": "tags", "value": ["ui", "legal"]},
                {"columnId": "terms", "value": ["g2", "g1"]}]},
            {"id": "r2", "cells": [{"columnId": "en", "value": "Quit"},
                                   {"columnId": "count", "value": 2.5}]},
            {"id": "r3", "cells": [{"columnId": "note", "value": "no text"}]}
        ]),
    );
    // The source changes: the French cell is outOfDate.
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "en", "value": "Save all\n<now>"}]}]),
    )
    .assert_status(200);
    view
}

/// The records of a listing without their modification user and time (an import sets its own).
fn unstamped(records: &[Value]) -> Vec<Value> {
    (records.iter())
        .map(|r| {
            let mut r = r.clone();
            let object = r.as_object_mut().expect("a record object");
            object.remove("lastModifiedBy");
            object.remove("lastModifiedTime");
            r
        })
        .collect()
}

/// `type=json` answers an array of the records exactly as the listing renders them (query,
/// sort and columnIds as for any export), and an import with `type=json` reads the file back:
/// changed and deleted records come back as they were.
#[test]
fn a_json_export_is_the_listing_and_imports_back() {
    let app = spawn_app();
    let view = rich_grid(&app);
    let listed = app.records(&view);
    let exported = json_export(&app, &view, "?type=json");
    assert_eq!(exported, json!(listed));
    let params = serde_urlencoded::to_string([
        ("type", "JSON"),
        ("fileHeader", "none"),
        ("sort", r#"{"count": "desc"}"#),
        ("query", r#"{"count": {">": 1}}"#),
        ("columnIds", "count,en"),
    ])
    .expect("encodes");
    let picked = app.get(&format!("/v1/views/{view}/records?{params}")).assert_status(200).clone();
    assert_eq!(picked.as_array().map(Vec::len), Some(2));
    assert_eq!(json_export(&app, &view, &format!("?{params}")), picked);

    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [{"columnId": "note", "value": "changed"},
                                       {"columnId": "terms", "value": ["g1"]}]}]),
    )
    .assert_status(200);
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": ["r2"]}))
        .assert_status(204);
    let file = serde_json::to_vec(&exported).expect("bytes");
    let body = multipart(&[("file", Some(("records.json", "application/json")), &file)]);
    let res = post_multipart(&app, &format!("/v1/views/{view}/import?type=json"), body);
    let task = app.wait_task(res.assert_status(202)["id"].as_str().expect("task id"));
    assert_eq!(task["status"], json!("successful"), "{task}");
    let mut back = unstamped(&app.records(&view));
    let mut before = unstamped(&listed);
    let order = |r: &Value| r["id"].as_str().expect("id").to_owned();
    back.sort_by_key(order);
    before.sort_by_key(order);
    assert_eq!(back, before);
}

/// `type=html` is one table: a header row of the column names (as `fileHeader` says), then a
/// row per record of the CSV's fields, every text escaped.
#[test]
fn an_html_export_is_one_escaped_table() {
    let app = spawn_app();
    let view = rich_grid(&app);
    let html =
        export(&app, &view, "?type=html", "text/html; charset=utf-8", &format!("{view}.html"));
    let html = String::from_utf8(html).expect("UTF-8");
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert_eq!(html.matches("<table>").count(), 1, "{html}");
    assert_eq!(html.matches("</table>").count(), 1, "{html}");
    assert!(
        html.contains(
            "<thead>\n<tr><th>Record ID</th><th>Path</th><th>Last modified by</th>\
             <th>Last modified time</th><th>English</th><th>French</th><th>Note</th>"
        ),
        "{html}"
    );
    assert!(html.contains("<tr><td>r1</td><td>menu</td>"), "{html}");
    assert!(
        html.contains("<td>Save all\n&lt;now&gt;</td><td>Tout enregistrer</td><td>a &amp; b</td>"),
        "{html}"
    );
    assert!(html.contains("<td>[&quot;ui&quot;,&quot;legal&quot;]</td>"), "{html}");
    assert!(!html.contains("<now>"), "text is never markup: {html}");
    assert_eq!(html.matches("<tr>").count(), 4, "a header and three records");
    let bare = export(
        &app,
        &view,
        "?type=html&fileHeader=none&columnIds=en",
        "text/html; charset=utf-8",
        &format!("{view}.html"),
    );
    let bare = String::from_utf8(bare).expect("UTF-8");
    assert!(!bare.contains("<th>"), "{bare}");
    assert_eq!(bare.matches("<tr>").count(), 3, "{bare}");
    let res = app.get(&format!("/v1/views/{view}/export?type=html"));
    assert_eq!(res.header("content-security-policy"), Some("default-src 'none'"));
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
}

/// The entries of a zip archive: (name, text).
fn unzip(bytes: &[u8]) -> Vec<(String, String)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip archive");
    (0..archive.len())
        .map(|i| {
            let mut entry = archive.by_index(i).expect("an entry");
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("UTF-8 text");
            (entry.name().to_owned(), text)
        })
        .collect()
}

/// `type=po` is a zip of one gettext file per target language column: msgctxt the record id,
/// msgid the source text, msgstr the target's, fuzzy where the target is outOfDate; records
/// without source text are left out; `columnIds` picks the languages.
#[test]
fn a_po_export_is_a_zip_of_a_gettext_file_per_target_language() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    app.add_records(
        &view,
        json!([
            {"id": "save", "path": "menu", "cells": [{"columnId": "en", "value": "Save \"all\""},
                                                     {"columnId": "fr", "value": "Tout enregistrer"},
                                                     {"columnId": "de", "value": "Alles speichern"}]},
            {"id": "quit", "cells": [{"columnId": "en", "value": "Quit\nnow"}]},
            {"id": "blank", "cells": [{"columnId": "fr", "value": "orphelin"}]}
        ]),
    );
    // The source changes (both translations outOfDate), then German is translated again.
    for cell in [
        json!({"columnId": "en", "value": "Save everything"}),
        json!({"columnId": "de", "value": "Alles sichern"}),
    ] {
        app.patch(&format!("/v1/views/{view}/records"), &json!([{"id": "save", "cells": [cell]}]))
            .assert_status(200);
    }
    let bytes = export(&app, &view, "?type=po", "application/zip", &format!("{view}.po.zip"));
    let files = unzip(&bytes);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["frFR.po", "deDE.po"]);
    let fr = &files[0].1;
    assert!(
        fr.contains(
            "msgid \"\"\nmsgstr \"\"\n\"Language: fr_FR\\n\"\n\"X-Source-Language: en_US\\n\"\n"
        ),
        "{fr}"
    );
    assert!(fr.contains("\"Content-Type: text/plain; charset=UTF-8\\n\"\n"), "{fr}");
    assert!(
        fr.contains("\n#, fuzzy\nmsgctxt \"save\"\nmsgid \"Save everything\"\nmsgstr \"Tout enregistrer\"\n"),
        "an outOfDate translation is fuzzy: {fr}"
    );
    assert!(
        fr.contains("\nmsgctxt \"quit\"\nmsgid \"\"\n\"Quit\\n\"\n\"now\"\nmsgstr \"\"\n"),
        "lines split, untranslated empty: {fr}"
    );
    assert!(!fr.contains("blank") && !fr.contains("orphelin"), "no source text, no entry: {fr}");
    assert_eq!(fr.matches("msgctxt").count(), 2, "{fr}");

    let only_de =
        export(&app, &view, "?type=po&columnIds=de", "application/zip", &format!("{view}.po.zip"));
    let only_de = unzip(&only_de);
    assert_eq!(only_de.len(), 1);
    assert_eq!(only_de[0].0, "deDE.po");
    let de = &only_de[0].1;
    assert!(
        de.contains("\nmsgctxt \"save\"\nmsgid \"Save everything\"\nmsgstr \"Alles sichern\"\n"),
        "{de}"
    );
    assert!(!de.contains("fuzzy"), "an upToDate translation is not fuzzy: {de}");
    assert!(de.contains("\"Language: de_DE\\n\"\n"), "{de}");
}

/// A target without a dependency takes the view's only source; with two sources it has none,
/// and a view without a target language column has nothing to write: both 400, naming why.
#[test]
fn a_po_export_needs_each_target_to_have_a_source() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(false);
    app.add_records(
        &view,
        json!([{"id": "k", "cells": [{"columnId": "en", "value": "Yes"},
                                                        {"columnId": "fr", "value": "Oui"}]}]),
    );
    let files =
        unzip(&export(&app, &view, "?type=po", "application/zip", &format!("{view}.po.zip")));
    assert_eq!(files.len(), 2);
    assert!(
        files[0].1.contains("msgctxt \"k\"\nmsgid \"Yes\"\nmsgstr \"Oui\"\n"),
        "{}",
        files[0].1
    );

    app.create_column(
        &view,
        json!({"id": "es", "name": "Spanish", "type": "language", "languageCode": "esES",
               "localizationType": "sourceLanguage"}),
    );
    let res = app.get(&format!("/v1/views/{view}/export?type=po"));
    res.assert_error(400, "badRequest");
    let message = res.body["message"].as_str().expect("message");
    assert!(message.contains("\"fr\"") && message.contains("dependency"), "{message}");
    let res = app.get(&format!("/v1/views/{view}/export?type=po&columnIds=en,note"));
    res.assert_error(400, "badRequest");
    assert!(
        res.body["message"].as_str().is_some_and(|m| m.contains("target language")),
        "{}",
        res.text
    );
}

/// `xls` is refused with a message that names xlsx; the other types name every known type.
#[test]
fn xls_and_unknown_types_are_refused() {
    let app = spawn_app();
    let (_, view) = app.create_grid("g");
    let res = app.get(&format!("/v1/views/{view}/export?type=xls"));
    res.assert_error(400, "badRequest");
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("xlsx")), "{}", res.text);
    let res = app.get(&format!("/v1/views/{view}/export?type=docx"));
    res.assert_error(400, "badRequest");
    let message = res.body["message"].as_str().expect("message");
    for known in ["csv", "tsv", "xlsx", "json", "html", "po"] {
        assert!(message.contains(known), "{message}");
    }
    assert_eq!(json_export(&app, &view, "?type=json"), json!([]), "an empty view is []");
}

/// Thousands of records stream whole, in order, in every type.
#[test]
fn large_json_html_and_po_exports_stream_every_record() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    for batch in 0..3 {
        let records: Vec<Value> = (0..1000)
            .map(|n| {
                let n = batch * 1000 + n;
                json!({"id": format!("k{n:05}"), "cells": [
                    {"columnId": "en", "value": format!("source text {n}, with \"quotes\" & <tags>")},
                    {"columnId": "fr", "value": format!("texte {n}")}]})
            })
            .collect();
        app.add_records(&view, Value::Array(records));
    }
    let listed = json_export(&app, &view, "?type=json");
    let listed = listed.as_array().expect("an array");
    assert_eq!(listed.len(), 3000);
    assert_eq!(listed[2999]["id"], json!("k02999"));
    let page =
        app.get(&format!("/v1/views/{view}/records?{}", crate::helpers::page_query(1000, 1000)));
    assert_eq!(&listed[1000..2000], page.assert_status(200).as_array().expect("a page").as_slice());

    let html =
        export(&app, &view, "?type=html", "text/html; charset=utf-8", &format!("{view}.html"));
    let html = String::from_utf8(html).expect("UTF-8");
    assert!(html.len() > 3 * 64 * 1024, "several chunks: {}", html.len());
    assert_eq!(html.matches("<tr>").count(), 3001);
    assert!(html.ends_with("</tbody>\n</table>\n</body>\n</html>\n"));

    let files =
        unzip(&export(&app, &view, "?type=po", "application/zip", &format!("{view}.po.zip")));
    assert_eq!(files[0].1.matches("msgctxt").count(), 3000);
    assert!(files[0].1.contains("msgctxt \"k02999\"\nmsgid \"source text 2999, with \\\"quotes\\\" & <tags>\"\nmsgstr \"texte 2999\"\n"));
}
