//! Glossaries (issue 22): `/v1/glossaries` CRUD with the OpenAPI's shapes, entries under
//! `/terms`, import and export (TBX, CSV, XLSX; `importOption`, `fields`, `langs`), the term
//! lookup, access by key, persistence across a restart, and every route's bad cases. The
//! sample files are under `tests/api/fixtures/` (a TBX-Basic file as a terminology tool
//! writes it, a CSV as a spreadsheet does).

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, Resp, TestApp};

const BOUNDARY: &str = "gridd-glossary-test-boundary-3e9a";
const TBX: &[u8] = include_bytes!("fixtures/game_terms.tbx");
const CSV: &[u8] = include_bytes!("fixtures/game_terms.csv");

fn multipart(name: &str, filename: &str, content: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn import(app: &TestApp, id: &str, file: &[u8], query: &str) -> Resp {
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let path = format!("/v1/glossaries/{id}/import{query}");
    app.raw(Method::POST, &path, &content_type, multipart("file", "terms.tbx", file))
}

fn create(app: &TestApp, body: Value) -> String {
    let res = app.post("/v1/glossaries", &body);
    res.assert_status(201)["id"].as_str().expect("a string id").to_owned()
}

fn export(app: &TestApp, id: &str, query: &str) -> Resp {
    app.get(&format!("/v1/glossaries/{id}/export{query}"))
}

/// Every entry of a glossary (paged through), without ids.
fn entries(app: &TestApp, id: &str) -> Vec<Value> {
    let mut all = Vec::new();
    loop {
        let page = format!("{{\"offset\":{},\"limit\":2}}", all.len());
        let res = app.get(&format!("/v1/glossaries/{id}/terms?page={}", urlencode(&page)));
        let body = res.assert_status(200).as_array().expect("a list").clone();
        if body.is_empty() {
            return all;
        }
        for mut entry in body {
            entry.as_object_mut().expect("an entry").remove("id");
            all.push(entry);
        }
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn glossaries_are_created_read_updated_listed_and_deleted() {
    let app = spawn_app();
    let project = app.get("/v1/projects").body[0]["id"].clone();
    let db = app.default_db();
    let body = json!({"name": "UI terms", "description": "Menus", "langs": ["en_us", "ja"],
        "projects": [{"projectId": project, "databaseIds": [db]}]});
    let res = app.post("/v1/glossaries", &body);
    let created = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let id = created["id"].as_str().expect("id is a string").to_owned();
    assert!(id.parse::<u64>().is_ok(), "{id}");
    assert_eq!(
        created,
        json!({"id": id, "name": "UI terms", "description": "Menus", "langs": ["en-US", "ja"],
            "projects": [{"projectId": project, "databaseIds": [db]}]})
    );
    assert_eq!(app.get(&format!("/v1/glossaries/{id}")).assert_status(200), &created);
    let second = create(&app, json!({"name": "Lore"}));
    assert_ne!(second, id);
    // The service's own column language codes (`frFR`) are read as BCP 47 ones.
    let third = app.post("/v1/glossaries", &json!({"name": "Columns", "langs": ["enUS", "frFR"]}));
    assert_eq!(third.assert_status(201)["langs"], json!(["en-US", "fr-FR"]));
    app.delete(&format!("/v1/glossaries/{}", third.body["id"].as_str().expect("id")))
        .assert_status(204);
    let listed = app.get("/v1/glossaries");
    let names: Vec<&str> =
        listed.body.as_array().expect("list").iter().filter_map(|g| g["name"].as_str()).collect();
    assert_eq!(names, ["UI terms", "Lore"]);
    let only = app.get(&format!("/v1/glossaries?projectId={project}"));
    assert_eq!(only.assert_status(200).as_array().map(Vec::len), Some(1));

    let res = app.put(&format!("/v1/glossaries/{id}"), &json!({"name": "UI", "projects": []}));
    assert_eq!(res.assert_status(200)["name"], "UI");
    assert_eq!(res.body["description"], "Menus");
    assert_eq!(res.body["projects"], json!([]));

    let res = app.delete(&format!("/v1/glossaries/{id}"));
    assert_eq!((res.status, res.text.as_str()), (204, ""));
    app.get(&format!("/v1/glossaries/{id}")).assert_error(404, "glossaryIsNotFound");
    app.delete(&format!("/v1/glossaries/{id}")).assert_error(404, "glossaryIsNotFound");
    // Ids are never reused.
    let third = create(&app, json!({"name": "Again"}));
    assert!(third.parse::<u64>().expect("int") > second.parse::<u64>().expect("int"));
}

#[test]
fn glossary_requests_with_bad_fields_are_refused_and_change_nothing() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "G", "langs": ["en"]}));
    let before = app.get("/v1/glossaries").body;
    let project = app.get("/v1/projects").body[0]["id"].clone();
    let long = "n".repeat(101);
    for body in [
        json!({}),
        json!({"name": "   "}),
        json!({"name": long}),
        json!({"name": 5}),
        json!({"name": "x", "colour": "red"}),
        json!({"name": "x", "langs": ["english language"]}),
        json!({"name": "x", "projects": [{"databaseIds": []}]}),
        json!({"name": "x", "projects": [{"projectId": project}, {"projectId": project}]}),
        json!({"name": "x", "projects": [{"projectId": "one"}]}),
    ] {
        app.post("/v1/glossaries", &body).assert_error(400, "badRequest");
    }
    app.raw(Method::POST, "/v1/glossaries", "application/json", Vec::new())
        .assert_error(400, "requestBodyMissing");
    app.raw(Method::POST, "/v1/glossaries", "application/json", b"{\"name\":".to_vec())
        .assert_error(400, "badRequest");
    let missing = json!({"name": "x", "projects": [{"projectId": 999_999}]});
    app.post("/v1/glossaries", &missing).assert_error(404, "projectIsNotFound");
    let foreign_db =
        json!({"name": "x", "projects": [{"projectId": project, "databaseIds": ["nodb"]}]});
    app.post("/v1/glossaries", &foreign_db).assert_error(404, "databaseIsNotFound");
    app.put(&format!("/v1/glossaries/{id}"), &json!({"name": ""})).assert_error(400, "badRequest");
    app.put("/v1/glossaries/abc", &json!({"name": "y"})).assert_error(400, "badRequest");
    app.get("/v1/glossaries/abc").assert_error(400, "badRequest");
    app.get("/v1/glossaries/77777").assert_error(404, "glossaryIsNotFound");
    app.put("/v1/glossaries/77777", &json!({"name": "y"})).assert_error(404, "glossaryIsNotFound");
    app.get("/v1/glossaries?projectId=x").assert_error(400, "badRequest");
    app.call(Method::PATCH, &format!("/v1/glossaries/{id}"), Some(&app.key), Some(&json!({})))
        .assert_error(405, "methodNotAllowed");
    app.assert_unchanged("/v1/glossaries", &before);
}

#[test]
fn keys_reach_only_the_glossaries_of_their_company_and_projects() {
    let app = spawn_app();
    let project = app.get("/v1/projects").body[0]["id"].clone();
    let linked = create(&app, json!({"name": "Linked", "projects": [{"projectId": project}]}));
    let company_wide = create(&app, json!({"name": "Company"}));
    let reader = app.create_key(&["read"], json!({"all": true}));
    app.get_as(&reader, &format!("/v1/glossaries/{linked}")).assert_status(200);
    app.post_as(&reader, "/v1/glossaries", &json!({"name": "x"})).assert_error(403, "accessDenied");
    let term = json!({"terms": {"en": "x"}});
    let path = format!("/v1/glossaries/{linked}/terms");
    app.post_as(&reader, &path, &term).assert_error(403, "accessDenied");
    app.delete_as(&reader, &format!("/v1/glossaries/{linked}")).assert_error(403, "accessDenied");

    let other_project = app.post("/v1/projects", &json!({"name": "Other"})).body["id"].clone();
    let narrow = app.create_key(&["read", "write", "manage"], json!({"projects": [other_project]}));
    app.get_as(&narrow, &format!("/v1/glossaries/{linked}"))
        .assert_error(404, "glossaryIsNotFound");
    let seen = app.get_as(&narrow, "/v1/glossaries");
    assert_eq!(seen.assert_status(200).as_array().map(Vec::len), Some(1), "{}", seen.text);
    // A company-wide glossary is seen by every key, managed only by a key reaching everything.
    app.put_as(&narrow, &format!("/v1/glossaries/{company_wide}"), &json!({"name": "y"}))
        .assert_error(403, "accessDenied");
    app.post_as(&narrow, "/v1/glossaries", &json!({"name": "x"})).assert_error(403, "accessDenied");
    let own = json!({"name": "Mine", "projects": [{"projectId": other_project}]});
    app.post_as(&narrow, "/v1/glossaries", &own).assert_status(201);
    let theirs = json!({"name": "x", "projects": [{"projectId": project}]});
    app.post_as(&narrow, "/v1/glossaries", &theirs).assert_error(403, "accessDenied");

    let (owner, _, _) = app.create_company("team");
    app.get_as(&owner, &format!("/v1/glossaries/{linked}")).assert_error(404, "glossaryIsNotFound");
    assert_eq!(app.get_as(&owner, "/v1/glossaries").body, json!([]));
    let (_, view) = app.create_grid("g");
    let view_key = app.create_view_key(&view);
    app.get_as(&view_key, "/v1/glossaries").assert_error(403, "accessDenied");
    app.get_as(&view_key, &format!("/v1/glossaries/{company_wide}"))
        .assert_error(404, "glossaryIsNotFound");
}

#[test]
fn entries_are_added_listed_searched_replaced_and_deleted() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "G", "langs": ["en"]}));
    let path = format!("/v1/glossaries/{id}/terms");
    let res = app.post(
        &path,
        &json!({"terms": {"en": ["save game", "savegame"], "ja": "セーブデータ"},
            "definition": "Stored progress.", "note": " ",
            "categories": [{"element": "termNote", "type": "partOfSpeech", "value": "noun",
                "lang": "en", "term": "savegame"}]}),
    );
    let entry = res.assert_status(201).clone();
    let term_id = entry["id"].as_str().expect("string id").to_owned();
    assert_eq!(
        entry,
        json!({"id": term_id, "terms": {"en": ["save game", "savegame"], "ja": ["セーブデータ"]},
            "definition": "Stored progress.", "note": null,
            "categories": [{"element": "termNote", "type": "partOfSpeech", "value": "noun",
                "lang": "en", "term": "savegame"}]})
    );
    let tbx = export(&app, &id, "").text;
    assert!(
        tbx.contains(
            "<tig><term>savegame</term><termNote type=\"partOfSpeech\">noun</termNote></tig>"
        ),
        "{tbx}"
    );
    assert_eq!(app.get(&format!("/v1/glossaries/{id}")).body["langs"], json!(["en", "ja"]));
    for n in 0..5 {
        app.post(&path, &json!({"terms": {"en": format!("quest {n}")}})).assert_status(201);
    }
    let res = app.get(&format!("{path}?page={}", urlencode(r#"{"offset":1,"limit":2}"#)));
    assert_eq!(res.assert_status(200).as_array().map(Vec::len), Some(2));
    assert_eq!(res.header("x-total-count"), Some("6"));
    let res = app.get(&format!("{path}?search=QUEST%203"));
    assert_eq!(res.header("x-total-count"), Some("1"));
    let res = app.get(&format!("{path}?lang=ja-JP"));
    assert_eq!(res.header("x-total-count"), Some("1"));
    assert_eq!(app.get(&format!("{path}/{term_id}")).assert_status(200), &entry);

    let replaced = app.put(&format!("{path}/{term_id}"), &json!({"terms": {"fr": "sauvegarde"}}));
    assert_eq!(replaced.assert_status(200)["terms"], json!({"fr": ["sauvegarde"]}));
    assert_eq!(replaced.body["definition"], Value::Null);
    assert_eq!(
        replaced.body["categories"],
        json!([]),
        "a replaced entry keeps only what it is given"
    );
    let res = app.delete(&format!("{path}/{term_id}"));
    assert_eq!((res.status, res.text.as_str()), (204, ""));
    app.get(&format!("{path}/{term_id}")).assert_error(404, "termIsNotFound");
    app.delete(&format!("{path}/{term_id}")).assert_error(404, "termIsNotFound");
    app.put(&format!("{path}/{term_id}"), &json!({"terms": {"en": "x"}}))
        .assert_error(404, "termIsNotFound");
    assert_eq!(app.get(&path).header("x-total-count"), Some("5"));
}

#[test]
fn bad_entries_are_refused_and_change_nothing() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "G"}));
    let path = format!("/v1/glossaries/{id}/terms");
    app.post(&path, &json!({"terms": {"en": "keep"}})).assert_status(201);
    let before = app.get(&path).body;
    let synonyms: Vec<String> = (0..21).map(|n| format!("t{n}")).collect();
    let langs: serde_json::Map<String, Value> =
        (0..101).map(|n| (format!("x{}", crate_lang(n)), json!("t"))).collect();
    for body in [
        json!({}),
        json!({"terms": {}}),
        json!({"terms": {"en": ""}}),
        json!({"terms": {"en": [" "]}}),
        json!({"terms": {"en": []}}),
        json!({"terms": {"not a language": "x"}}),
        json!({"terms": {"en": 5}}),
        json!({"terms": {"en": "x".repeat(501)}}),
        json!({"terms": {"en": synonyms}}),
        json!({"terms": langs}),
        json!({"terms": {"en": "x"}, "definition": "d".repeat(4001)}),
        json!({"terms": {"en": "x"}, "colour": 1}),
        json!({"terms": {"en": "x"}, "categories": [{"element": "termNote", "type": "partOfSpeech", "value": "noun", "lang": "en", "term": "y"}]}),
        json!({"terms": {"en": "x"}, "categories": [{"element": "termNote", "type": "partOfSpeech", "value": "noun", "lang": "fr"}]}),
        json!({"terms": {"en": "x"}, "categories": [{"element": "termNote", "type": "partOfSpeech", "value": "noun", "term": "x"}]}),
        json!({"terms": {"en": "x"}, "categories": [{"element": "script", "type": "a", "value": "b"}]}),
        json!({"terms": {"en": "x"}, "categories": [{"element": "admin", "type": "", "value": "b"}]}),
        json!({"terms": {"en": "x"}, "categories": [{"element": "admin", "type": "source", "value": " "}]}),
        json!({"terms": {"en": "x"}, "categories": vec![json!({"element": "admin", "type": "source", "value": "b"}); 201]}),
    ] {
        app.post(&path, &body).assert_error(400, "badRequest");
    }
    app.raw(Method::POST, &path, "application/json", Vec::new())
        .assert_error(400, "requestBodyMissing");
    app.get(&format!("{path}/abc")).assert_error(400, "badRequest");
    app.get(&format!("{path}/424242")).assert_error(404, "termIsNotFound");
    app.post("/v1/glossaries/999/terms", &json!({"terms": {"en": "x"}}))
        .assert_error(404, "glossaryIsNotFound");
    app.get(&format!("{path}?page=%7Bbad")).assert_error(400, "invalidPaging");
    app.get(&format!("{path}?lang=+")).assert_error(400, "badRequest");
    app.get(&format!("{path}?search={}", "s".repeat(201))).assert_error(400, "badRequest");
    app.assert_unchanged(&path, &before);
}

/// A two-letter language subtag for `n` (aa, ab, ...).
fn crate_lang(n: usize) -> String {
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    format!("{}{}", letters[n / 26 % 26] as char, letters[n % 26] as char)
}

#[test]
fn a_tbx_file_from_another_tool_round_trips_through_every_format() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "Starfall"}));
    let res = import(&app, &id, TBX, "");
    assert_eq!(res.assert_status(201), &json!({"added": 4, "updated": 0, "skipped": 0}));
    let imported = entries(&app, &id);
    assert_eq!(imported.len(), 4);
    assert_eq!(
        imported[0],
        json!({"terms": {"en-US": ["save game", "savegame"], "de-DE": ["Spielstand"],
            "ja-JP": ["セーブデータ"], "ru-RU": ["сохранение"]},
            "definition": "A stored copy of the player's progress that can be loaded later.",
            "note": null,
            "categories": [
                {"element": "descrip", "type": "subjectField", "value": "User interface"},
                {"element": "termNote", "type": "partOfSpeech", "value": "noun",
                 "lang": "en-US", "term": "save game"},
                {"element": "termNote", "type": "administrativeStatus",
                 "value": "preferredTerm-admn-sts", "lang": "en-US", "term": "save game"},
                {"element": "termNote", "type": "administrativeStatus",
                 "value": "admittedTerm-admn-sts", "lang": "en-US", "term": "savegame"},
                {"element": "termNote", "type": "grammaticalGender", "value": "masculine",
                 "lang": "de-DE", "term": "Spielstand"}]})
    );
    assert_eq!(imported[2]["categories"][0]["term"], "HP", "a term's category stays with it");
    assert_eq!(imported[2]["terms"]["ar"], json!(["نقاط الصحة"]));
    assert_eq!(
        imported[2]["definition"],
        "The points a character loses when hit; at zero the character is defeated."
    );
    assert_eq!(imported[3]["definition"], "The in-game shop where items are bought & sold.");
    let langs = app.get(&format!("/v1/glossaries/{id}")).body["langs"].clone();
    assert_eq!(langs, json!(["en-US", "de-DE", "ja-JP", "ru-RU", "zh-CN", "ar", "ko-KR"]));

    for format in ["tbx", "csv", "xlsx"] {
        let res = export(&app, &id, &format!("?format={format}"));
        res.assert_status(200);
        assert_eq!(res.header("content-type"), Some("application/octet-stream"));
        let disposition = res.header("content-disposition").expect("a disposition");
        assert!(disposition.starts_with("attachment; filename=\"Starfall."), "{disposition}");
        let copy = create(&app, json!({"name": format!("copy {format}")}));
        let res = import(&app, &copy, &res.bytes, "");
        assert_eq!(res.assert_status(201)["added"], 4, "{format}");
        // A table has no column for data categories: TBX keeps them, CSV and XLSX do not.
        let mut expected = imported.clone();
        if format != "tbx" {
            expected.iter_mut().for_each(|e| e["categories"] = json!([]));
        }
        assert_eq!(entries(&app, &copy), expected, "{format}");
        // Importing its own export again updates every entry by id and adds none.
        let again =
            import(&app, &copy, &export(&app, &copy, &format!("?format={format}")).bytes, "");
        assert_eq!(again.body, json!({"added": 0, "updated": 4, "skipped": 0}), "{format}");
    }
    let default = export(&app, &id, "");
    assert!(default.text.contains("<martif type=\"TBX-Basic\""), "{}", default.text);
    assert!(
        default.text.contains(
            "<tig><term>HP</term><termNote type=\"termType\">abbreviation</termNote></tig>"
        ),
        "{}",
        default.text
    );
    let plain = export(&app, &id, "?fields=definition");
    assert!(!plain.text.contains("termNote"), "categories only when asked: {}", plain.text);
    let asked = export(&app, &id, "?fields=categories");
    assert!(
        asked.text.contains("<termNote type=\"partOfSpeech\">noun</termNote>"),
        "{}",
        asked.text
    );
    assert!(!asked.text.contains("descrip type=\"definition\""), "{}", asked.text);
    assert!(default.text.contains("<term>セーブデータ</term>"));
}

#[test]
fn a_csv_file_imports_with_synonym_columns_and_round_trips() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "RPG"}));
    let res = import(&app, &id, CSV, "");
    assert_eq!(res.assert_status(201)["added"], 3);
    let imported = entries(&app, &id);
    assert_eq!(imported[0]["terms"]["en-US"], json!(["ally", "companion"]));
    assert_eq!(imported[1]["note"], "Keep \"tree\" even where the UI shows a grid.");
    let csv = export(&app, &id, "?format=csv");
    assert!(csv.text.starts_with("id,en-US,en-US,fr-FR,ja-JP,definition,note\n"), "{}", csv.text);
    let copy = create(&app, json!({"name": "copy"}));
    import(&app, &copy, &csv.bytes, "").assert_status(201);
    assert_eq!(entries(&app, &copy), imported);
}

#[test]
fn export_takes_fields_and_langs() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "Starfall"}));
    import(&app, &id, TBX, "").assert_status(201);
    let res = export(&app, &id, "?format=csv&fields=definition&langs=ja-JP&langs=de-DE");
    let header = res.text.lines().next().expect("a header");
    assert_eq!(header, "ja-JP,de-DE,de-DE,definition");
    assert_eq!(res.text.lines().count(), 4, "{}", res.text);
    let res = export(&app, &id, "?format=tbx&fields=note&langs=zh-CN");
    assert!(res.text.contains("<term>任务</term>") && !res.text.contains("save game"));
    assert!(res.text.contains("<note>") && !res.text.contains("definition"));
    assert!(!res.text.contains("id=\"c"));
    let res = export(&app, &id, "?format=xlsx&langs=en-US,ko-KR");
    assert!(res.bytes.starts_with(b"PK"));
    export(&app, &id, "?format=xls").assert_error(400, "badRequest");
    export(&app, &id, "?format=pdf").assert_error(400, "badRequest");
    export(&app, &id, "?fields=colour").assert_error(400, "badRequest");
    export(&app, &id, "?langs=fr").assert_error(400, "badRequest");
    export(&app, &id, "?langs=!!").assert_error(400, "badRequest");
    export(&app, "abc", "").assert_error(400, "badRequest");
    export(&app, "4242", "").assert_error(404, "glossaryIsNotFound");
}

#[test]
fn import_options_add_update_and_update_only() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "G"}));
    import(&app, &id, b"en,fr,definition\nquest,quete,old\n", "").assert_status(201);
    let file = b"en,de,definition\nQuest,Quest,new\nloot,Beute,\n";
    let res = import(&app, &id, file, "?importOption=ADD");
    assert_eq!(res.body, json!({"added": 1, "updated": 0, "skipped": 1}));
    assert_eq!(entries(&app, &id)[0]["definition"], "old");
    let file = b"en,de\nquest,Auftrag\nnew one,neu\n";
    let res = import(&app, &id, file, "?importOption=UPDATE_ONLY");
    assert_eq!(res.body, json!({"added": 0, "updated": 1, "skipped": 1}));
    let all = entries(&app, &id);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["terms"], json!({"en": ["quest"], "fr": ["quete"], "de": ["Auftrag"]}));
    let res = import(&app, &id, b"en,definition\nquest,newer\nnew one,\n", "?importOption=UPDATE");
    assert_eq!(res.body, json!({"added": 1, "updated": 1, "skipped": 0}));
    assert_eq!(entries(&app, &id)[0]["definition"], "newer");
    import(&app, &id, CSV, "?importOption=MERGE").assert_error(400, "badRequest");
}

#[test]
fn hostile_and_bad_glossary_files_are_refused_and_change_nothing() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "G"}));
    import(&app, &id, b"en\nkeep\n", "").assert_status(201);
    let path = format!("/v1/glossaries/{id}/terms");
    let before = app.get(&path).body;
    let glossary_before = app.get(&format!("/v1/glossaries/{id}")).body;
    let laughs = br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><martif><text><body><termEntry><langSet xml:lang="en"><tig><term>&lol1;</term></tig></langSet></termEntry></body></text></martif>"#;
    let xxe = br#"<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]><martif><text><body><termEntry><langSet xml:lang="en"><tig><term>&x;</term></tig></langSet></termEntry></body></text></martif>"#;
    let deep = format!("<martif>{}{}</martif>", "<x>".repeat(200), "</x>".repeat(200));
    let bad_lang = br#"<martif><text><body><termEntry><langSet xml:lang="english please"><tig><term>a</term></tig></langSet></termEntry></body></text></martif>"#;
    let long_term = format!(
        "<martif><text><body><termEntry><langSet xml:lang=\"en\"><tig><term>{}</term></tig></langSet></termEntry></body></text></martif>",
        "x".repeat(600)
    );
    let files: Vec<&[u8]> = vec![
        laughs,
        xxe,
        deep.as_bytes(),
        bad_lang,
        long_term.as_bytes(),
        b"<martif><text><body><termEntry>",
        b"<html><body>not tbx</body></html>",
        b"",
        b"colour,size\nred,5\n",
        b"en,en\n\xff\xfe\n",
        b"PK\x03\x04 not really a workbook",
        &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1],
    ];
    for (n, file) in files.into_iter().enumerate() {
        let res = import(&app, &id, file, "");
        assert_eq!((n, res.status, res.code()), (n, 400, "badRequest"), "{}", res.text);
    }
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let other_part = multipart("notfile", "x.csv", b"en\nx\n");
    let import_path = format!("/v1/glossaries/{id}/import");
    app.raw(Method::POST, &import_path, &content_type, other_part).assert_error(400, "badRequest");
    app.raw(Method::POST, &import_path, "application/json", b"{}".to_vec())
        .assert_error(415, "unsupportedMediaType");
    import(&app, "9999", b"en\nx\n", "").assert_error(404, "glossaryIsNotFound");
    app.assert_unchanged(&path, &before);
    app.assert_unchanged(&format!("/v1/glossaries/{id}"), &glossary_before);
}

#[test]
fn lookup_finds_terms_in_texts_with_their_translations() {
    let app = spawn_app();
    let project = app.get("/v1/projects").body[0]["id"].clone();
    let id = create(&app, json!({"name": "Starfall", "projects": [{"projectId": project}]}));
    import(&app, &id, TBX, "").assert_status(201);
    let other = create(&app, json!({"name": "RPG", "projects": [{"projectId": project}]}));
    import(&app, &other, CSV, "").assert_status(201);
    let text = "Your Save Games and quests: 3 HP left. Allies wait at the marketplace!";
    let res =
        app.post(&format!("/v1/glossaries/{id}/lookup"), &json!({"lang": "en", "text": text}));
    let matches =
        res.assert_status(200)["results"][0]["matches"].as_array().expect("matches").clone();
    let found: Vec<(&str, &str)> = matches
        .iter()
        .map(|m| (m["text"].as_str().unwrap_or(""), m["term"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        found,
        [
            ("Save Games", "save game"),
            ("quests", "quest"),
            ("HP", "HP"),
            ("marketplace", "marketplace")
        ]
    );
    let first = &matches[0];
    assert_eq!((first["start"].clone(), first["end"].clone()), (json!(5), json!(15)));
    assert_eq!(first["glossaryId"], json!(id));
    assert_eq!(first["lang"], "en-US");
    assert_eq!(first["terms"]["ja-JP"], json!(["セーブデータ"]));
    assert!(first["definition"].as_str().is_some_and(|d| d.starts_with("A stored copy")));

    let texts = json!({"lang": "ja", "texts": ["このクエストの報酬", "nothing here", "仲間と戦利品"], "projectId": project});
    let res = app.post("/v1/glossaries/lookup", &texts);
    let results = res.assert_status(200)["results"].as_array().expect("results").clone();
    let terms = |i: usize| -> Vec<String> {
        results[i]["matches"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["text"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(
        (terms(0), terms(1), terms(2)),
        (vec!["クエスト".to_owned()], vec![], vec!["仲間".to_owned(), "戦利品".to_owned()])
    );
    let by_ids = json!({"lang": "en", "text": "allies", "glossaryIds": [other, id.parse::<u64>().expect("int")]});
    let res = app.post("/v1/glossaries/lookup", &by_ids);
    assert_eq!(res.assert_status(200)["results"][0]["matches"][0]["term"], "ally");
}

#[test]
fn bad_lookups_are_refused() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "G"}));
    let path = format!("/v1/glossaries/{id}/lookup");
    let many: Vec<String> = vec!["x".into(); 1001];
    for body in [
        json!({"text": "x"}),
        json!({"lang": "english please", "text": "x"}),
        json!({"lang": "en"}),
        json!({"lang": "en", "text": "x", "texts": ["y"]}),
        json!({"lang": "en", "texts": many}),
        json!({"lang": "en", "text": "x".repeat(65 * 1024)}),
        json!({"lang": "en", "text": "x", "projectId": 1}),
        json!({"lang": "en", "text": "x", "colour": 1}),
    ] {
        app.post(&path, &body).assert_error(400, "badRequest");
    }
    app.post("/v1/glossaries/lookup", &json!({"lang": "en", "text": "x"}))
        .assert_error(400, "badRequest");
    let ids: Vec<u64> = (0..51).collect();
    app.post("/v1/glossaries/lookup", &json!({"lang": "en", "text": "x", "glossaryIds": ids}))
        .assert_error(400, "badRequest");
    app.post("/v1/glossaries/lookup", &json!({"lang": "en", "text": "x", "glossaryIds": ["nope"]}))
        .assert_error(400, "badRequest");
    app.post("/v1/glossaries/lookup", &json!({"lang": "en", "text": "x", "glossaryIds": [9999]}))
        .assert_error(404, "glossaryIsNotFound");
    app.post("/v1/glossaries/9999/lookup", &json!({"lang": "en", "text": "x"}))
        .assert_error(404, "glossaryIsNotFound");
    let empty = app.post(&path, &json!({"lang": "en", "text": "anything"}));
    assert_eq!(empty.assert_status(200), &json!({"results": [{"matches": []}]}));
}

#[test]
fn glossaries_and_entries_survive_a_restart() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "Starfall", "langs": ["en-US"]}));
    import(&app, &id, TBX, "").assert_status(201);
    let path = format!("/v1/glossaries/{id}/terms");
    let added =
        app.post(&path, &json!({"terms": {"en-US": "loot box"}})).assert_status(201).clone();
    let doomed = app.get(&path).body[1]["id"].as_str().expect("id").to_owned();
    app.delete(&format!("{path}/{doomed}")).assert_status(204);
    let gone = create(&app, json!({"name": "gone"}));
    app.delete(&format!("/v1/glossaries/{gone}")).assert_status(204);
    let before = (app.get(&format!("/v1/glossaries/{id}")).body, app.get(&path).body);
    let app = app.restart();
    let after = (app.get(&format!("/v1/glossaries/{id}")).body, app.get(&path).body);
    assert_eq!(after, before);
    app.get(&format!("/v1/glossaries/{gone}")).assert_error(404, "glossaryIsNotFound");
    let next = create(&app, json!({"name": "next"}));
    assert!(next.parse::<u64>().expect("int") > gone.parse::<u64>().expect("int"));
    let entry = app.post(&path, &json!({"terms": {"en-US": "gacha"}})).assert_status(201).clone();
    let ids: BTreeSet<u64> = [&added, &entry]
        .iter()
        .map(|e| e["id"].as_str().and_then(|i| i.parse().ok()).expect("id"))
        .collect();
    assert_eq!(ids.len(), 2, "entry ids are not reused");
    let res = app
        .post(&format!("/v1/glossaries/{id}/lookup"), &json!({"lang": "en", "text": "a loot box"}));
    assert_eq!(res.assert_status(200)["results"][0]["matches"][0]["term"], "loot box");
}

#[test]
fn deleting_a_project_unlinks_its_glossaries() {
    let app = spawn_app();
    let other = app.post("/v1/projects", &json!({"name": "Other"})).body["id"].clone();
    let id = create(&app, json!({"name": "G", "projects": [{"projectId": other}]}));
    app.delete(&format!("/v1/projects/{other}")).assert_status(200);
    assert_eq!(app.get(&format!("/v1/glossaries/{id}")).body["projects"], json!([]));
    let app = app.restart();
    assert_eq!(app.get(&format!("/v1/glossaries/{id}")).body["projects"], json!([]));
}

#[test]
fn an_import_file_over_the_limit_is_refused() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "G"}));
    let mut file = b"en\n".to_vec();
    file.resize(64 * 1024 * 1024 + 1, b'x');
    import(&app, &id, &file, "").assert_error(413, "payloadTooLarge");
    assert_eq!(app.get(&format!("/v1/glossaries/{id}/terms")).body, json!([]));
}

#[test]
fn entries_written_while_a_large_import_merges_are_all_kept() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "Busy"}));
    let rows = 20_000;
    let mut csv = String::from("en,fr\n");
    for n in 0..rows {
        csv.push_str(&format!("imported term {n},terme importé {n}\n"));
    }
    let path = format!("/v1/glossaries/{id}/terms");
    let (imported, written) = std::thread::scope(|scope| {
        let import = scope.spawn(|| import(&app, &id, csv.as_bytes(), ""));
        let mut written = 0;
        // Entries keep coming while the file is received, read and merged.
        while !import.is_finished() && written < 5_000 {
            app.post(&path, &json!({"terms": {"en": format!("hand {written}")}}))
                .assert_status(201);
            written += 1;
        }
        (import.join().expect("the import thread"), written)
    });
    assert_eq!(imported.assert_status(201)["added"], rows);
    let total = app.get(&path).header("x-total-count").map(str::to_owned);
    assert_eq!(total, Some((rows + written).to_string()), "no write is lost to the merge");
}
