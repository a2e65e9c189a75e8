//! Translation memories (issue 22): the `transmem` routes of the hosted OpenAPI with their bad
//! cases, TMX files from other tools (inline tags, several languages) round-tripped, hostile
//! files refused, the fuzzy lookup, linked grids feeding their memories, `tmMatches` on record
//! pages, and segments surviving a restart.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{records_path, spawn_app, spawn_app_with, Resp, TestApp};

const TRADOS: &[u8] = include_bytes!("tmx/trados-ui.tmx");
const OMEGAT: &[u8] = include_bytes!("tmx/omegat-game.tmx");
const BILLION_LAUGHS: &[u8] = include_bytes!("tmx/billion-laughs.tmx");
const XXE: &[u8] = include_bytes!("tmx/xxe.tmx");
const BOUNDARY: &str = "gridd-transmem-test-boundary-51c2";

/// A multipart body with a `file` part named `filename` holding `content`.
fn multipart(part: &str, filename: &str, content: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{part}\"; filename=\"{filename}\"\r\nContent-Type: application/x-tmx+xml\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn send_file(app: &TestApp, path: &str, filename: &str, content: &[u8]) -> Resp {
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    app.raw(Method::POST, path, &content_type, multipart("file", filename, content))
}

fn upload(app: &TestApp, filename: &str, content: &[u8]) -> Resp {
    send_file(app, "/v1/transmems/upload", filename, content)
}

fn lookup(app: &TestApp, tm: &str, body: Value) -> Resp {
    app.post(&format!("/v1/transmems/{tm}/lookup"), &body)
}

fn matches(app: &TestApp, tm: &str, text: &str, from: &str, into: &str) -> Vec<Value> {
    let res =
        lookup(app, tm, json!({"text": text, "sourceLanguage": from, "targetLanguage": into}));
    res.assert_status(200).as_array().expect("a list").clone()
}

fn export(app: &TestApp, tm: &str, query: &str) -> Resp {
    app.get(&format!("/v1/transmems/{tm}/export{query}"))
}

/// The units of a TMX file, read with gridd's reader.
fn units(bytes: &[u8]) -> Vec<gridd::tm::tmx::Unit> {
    let mut units = Vec::new();
    let read = gridd::tm::tmx::read_tmx(bytes, |_, unit| {
        units.push(unit);
        Ok(())
    });
    match read {
        Ok(_) | Err(gridd::tm::tmx::TmxError::Empty) => units,
        Err(err) => panic!("not a TMX file: {err}"),
    }
}

fn first_project(app: &TestApp) -> i64 {
    app.get("/v1/projects").assert_status(200)[0]["id"].as_i64().expect("a project id")
}

fn create(app: &TestApp, body: Value) -> String {
    let res = app.post("/v1/transmems", &body);
    res.assert_status(201)["id"].as_str().expect("an id").to_owned()
}

#[test]
fn memories_are_created_listed_read_updated_and_deleted_as_the_openapi_says() {
    let app = spawn_app();
    let project = first_project(&app);
    let reader = app.create_key(&["read"], json!({"all": true}));
    assert_eq!(app.get_as(&reader, "/v1/transmems").assert_status(200), &json!([]));
    let res = app.post(
        "/v1/transmems",
        &json!({"name": "Game UI", "description": "menus", "projectIds": [project],
                "fuzzyMatch": true, "populateTranslationStatus": null, "isPausedConsuming": false}),
    );
    let body = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let id = body["id"].as_str().expect("id").to_owned();
    // An unset populateTranslationStatus is left out (the OpenAPI's enum is not nullable).
    let expected = json!({"id": id, "projectIds": [project], "isDisabled": false,
        "isPausedConsuming": false, "contextLookup": false,
        "name": "Game UI", "description": "menus", "fuzzyMatch": true,
        "allowAlternative": false, "allowAlternativeHasSameRecordId": false});
    assert_eq!(body, expected);
    let other = create(&app, json!({"name": "Legal"}));
    let all = app.get("/v1/transmems").assert_status(200).clone();
    assert_eq!(all.as_array().map(Vec::len), Some(2));
    let linked = app.get(&format!("/v1/transmems?projectId={project}")).assert_status(200).clone();
    assert_eq!(linked, json!([expected]));
    assert_eq!(app.get(&format!("/v1/transmems/{id}")).assert_status(200), &expected);
    let res =
        app.put(&format!("/v1/transmems/{id}"), &json!({"name": "Game UI v2", "isDisabled": true}));
    let updated = res.assert_status(200).clone();
    assert_eq!(
        (updated["name"].clone(), updated["isDisabled"].clone()),
        (json!("Game UI v2"), json!(true))
    );
    assert_eq!(updated["description"], json!("menus"), "fields not given are kept");
    let res = app.delete(&format!("/v1/transmems/{other}"));
    assert_eq!(res.assert_status(200)["name"], json!("Legal"));
    app.get(&format!("/v1/transmems/{other}")).assert_error(404, "transMemIsNotFound");
    app.delete(&format!("/v1/transmems/{other}")).assert_error(404, "transMemIsNotFound");
}

#[test]
fn bad_memory_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let bad = [
        (json!({}), 400, "requestParameterMissing"),
        (json!({"name": "   "}), 400, "badRequest"),
        (json!({"name": "x".repeat(101)}), 400, "badRequest"),
        (json!({"name": "a", "projectIds": ["one"]}), 400, "badRequest"),
        (json!({"name": "a", "projectIds": [999]}), 404, "projectIsNotFound"),
        (json!({"name": "a", "populateTranslationStatus": "done"}), 400, "badRequest"),
        (json!({"name": 5}), 400, "badRequest"),
        (json!([1, 2]), 400, "badRequest"),
    ];
    for (body, status, code) in bad {
        app.post("/v1/transmems", &body).assert_error(status, code);
    }
    app.raw(Method::POST, "/v1/transmems", "application/json", b"{not json".to_vec())
        .assert_error(400, "badRequest");
    app.raw(Method::POST, "/v1/transmems", "application/json", Vec::new())
        .assert_error(400, "requestBodyMissing");
    let reader = app.create_key(&["read"], json!({"all": true}));
    assert_eq!(app.get_as(&reader, "/v1/transmems").assert_status(200), &json!([]));
    app.get("/v1/transmems?projectId=abc").assert_error(400, "badRequest");
    app.get("/v1/transmems?projectId=999").assert_error(404, "projectIsNotFound");
    let id = create(&app, json!({"name": "A"}));
    let before = app.get(&format!("/v1/transmems/{id}")).assert_status(200).clone();
    app.put(&format!("/v1/transmems/{id}"), &json!({"name": ""})).assert_error(400, "badRequest");
    app.put(&format!("/v1/transmems/{id}"), &json!({"projectIds": [12345]}))
        .assert_error(404, "projectIsNotFound");
    assert_eq!(app.get(&format!("/v1/transmems/{id}")).assert_status(200), &before);
    app.get("/v1/transmems/nope").assert_error(404, "transMemIsNotFound");
    app.put("/v1/transmems/nope", &json!({"name": "x"})).assert_error(404, "transMemIsNotFound");
    app.put("/v1/transmems/nope/cleanup", &json!({})).assert_error(404, "transMemIsNotFound");
}

#[test]
fn keys_see_only_their_company_and_need_their_privileges() {
    let app = spawn_app();
    let id = create(&app, json!({"name": "Ours"}));
    let (other_owner, _, _) = app.create_company("enterprise");
    app.get_as(&other_owner, &format!("/v1/transmems/{id}"))
        .assert_error(404, "transMemIsNotFound");
    let theirs = app.get_as(&other_owner, "/v1/transmems").assert_status(200).clone();
    let names: Vec<&Value> =
        theirs.as_array().expect("a list").iter().map(|m| &m["name"]).collect();
    assert_eq!(names, [&json!("Default translation memory")], "only their own default");
    let reader = app.create_key(&["read"], json!({"all": true}));
    app.get_as(&reader, &format!("/v1/transmems/{id}")).assert_status(200);
    let body = json!({"text": "x", "sourceLanguage": "en", "targetLanguage": "fr"});
    app.post_as(&reader, &format!("/v1/transmems/{id}/lookup"), &body).assert_status(200);
    app.post_as(&reader, "/v1/transmems", &json!({"name": "B"})).assert_error(403, "accessDenied");
    app.delete_as(&reader, &format!("/v1/transmems/{id}")).assert_error(403, "accessDenied");
    let (_, view) = app.create_grid("G");
    let view_key = app.create_view_key(&view);
    app.get_as(&view_key, "/v1/transmems").assert_error(403, "accessDenied");
}

#[test]
fn listing_makes_a_default_memory_for_a_company_with_none_as_the_hosted_service() {
    let app = spawn_app();
    let reader = app.create_key(&["read"], json!({"all": true}));
    assert_eq!(app.get_as(&reader, "/v1/transmems").assert_status(200), &json!([]));
    let project = first_project(&app);
    let linked = app.get(&format!("/v1/transmems?projectId={project}")).assert_status(200).clone();
    assert_eq!(linked, json!([]), "the default is linked to no project");
    let listed = app.get("/v1/transmems").assert_status(200).clone();
    let default = listed[0].clone();
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    assert_eq!(default["name"], json!("Default translation memory"));
    assert_eq!(default["projectIds"], json!([]));
    assert_eq!(app.get_as(&reader, "/v1/transmems").assert_status(200), &listed);
    assert_eq!(app.get("/v1/transmems").assert_status(200), &listed, "made once");
    let id = default["id"].as_str().expect("id");
    app.delete(&format!("/v1/transmems/{id}")).assert_status(200);
    create(&app, json!({"name": "Mine"}));
    let names = app.get("/v1/transmems").assert_status(200).clone();
    assert_eq!(names.as_array().map(Vec::len), Some(1), "no default beside a memory");
}

#[test]
fn head_of_the_listing_makes_no_default_memory() {
    let app = spawn_app();
    let head = app.send(app.request(Method::HEAD, "/v1/transmems", Some(&app.key)));
    assert_eq!(head.status, 200);
    assert!(head.bytes.is_empty(), "{}", head.text);
    create(&app, json!({"name": "Mine"}));
    let names = app.get("/v1/transmems").assert_status(200).clone();
    assert_eq!(names.as_array().map(Vec::len), Some(1), "HEAD made no default: {names}");
    assert_eq!(names[0]["name"], json!("Mine"));
}

#[test]
fn segments_are_written_through_the_api_with_origin_api() {
    let app = spawn_app();
    let tm = create(&app, json!({"name": "Scripted"}));
    let path = format!("/v1/transmems/{tm}/segments");
    let one = |source: &str, target: &str| json!({"sourceLanguage": "en-US", "source": source, "targetLanguage": "fr-FR", "target": target});
    let res = app.post(&path, &json!([one("Save game", "Sauvegarder"), one("Quit", "Quitter")]));
    assert_eq!(res.assert_status(200), &json!({"added": 2, "updated": 0}));
    let res = app.post(&path, &json!([one("Save game", "Enregistrer la partie")]));
    assert_eq!(res.assert_status(200), &json!({"added": 0, "updated": 1}));
    let found = matches(&app, &tm, "Save game", "en-US", "fr-FR");
    assert_eq!(found[0]["target"], json!("Enregistrer la partie"));
    assert_eq!(found[0]["score"], json!(100));
    let exported = String::from_utf8(export(&app, &tm, "").bytes).expect("UTF-8");
    assert!(exported.contains("Quitter"), "{exported}");
    let before = export(&app, &tm, "").bytes;
    let bad = [
        (json!([]), 400, "badRequest"),
        (json!({"source": "x"}), 400, "badRequest"),
        (
            json!([one("Ok", "D'accord"), {"sourceLanguage": "en-US", "source": "Load"}]),
            400,
            "requestParameterMissing",
        ),
        (json!([one("Ok", "D'accord"), one("   ", "vide")]), 400, "badRequest"),
        (
            json!([{"sourceLanguage": "en", "source": "a", "targetLanguage": "EN", "target": "b"}]),
            400,
            "badRequest",
        ),
        (
            json!([{"sourceLanguage": "<x>", "source": "a", "targetLanguage": "fr", "target": "b"}]),
            400,
            "badRequest",
        ),
        (json!([one("Ok", &"é".repeat(40_000))]), 400, "badRequest"),
        (json!(vec![one("a", "b"); 1001]), 400, "badRequest"),
    ];
    for (body, status, code) in bad {
        app.post(&path, &body).assert_error(status, code);
    }
    assert_eq!(
        units(&before),
        units(&export(&app, &tm, "").bytes),
        "refused batches write nothing"
    );
    app.post("/v1/transmems/nope/segments", &json!([one("a", "b")]))
        .assert_error(404, "transMemIsNotFound");
    let reader = app.create_key(&["read"], json!({"all": true}));
    app.post_as(&reader, &path, &json!([one("a", "b")])).assert_error(403, "accessDenied");
}

#[test]
fn a_company_has_at_most_100_memories() {
    let app = spawn_app();
    for n in 0..100 {
        create(&app, json!({"name": format!("tm {n}")}));
    }
    app.post("/v1/transmems", &json!({"name": "one more"})).assert_error(400, "badRequest");
}

#[test]
fn an_uploaded_tmx_round_trips_with_inline_tags_props_and_three_languages() {
    let app = spawn_app();
    let res = upload(&app, "trados-ui.tmx", TRADOS);
    let tm = res.assert_status(201)["id"].as_str().expect("id").to_owned();
    assert_eq!(res.body["name"], json!("trados-ui"));
    let found = matches(&app, &tm, "Your changes were saved.", "en-US", "de-DE");
    assert_eq!(
        found[0],
        json!({"source": "Your changes were saved.", "target": "Ihre Änderungen wurden gespeichert.", "score": 100})
    );
    let found = matches(&app, &tm, "Click Save to keep & apply your settings.", "enUS", "fr_FR");
    assert_eq!(found[0]["score"], json!(100));
    assert!(found[0]["target"].as_str().is_some_and(|t| t.starts_with("Cliquez sur Enregistrer")));
    let res = export(&app, &tm, "");
    res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/octet-stream"));
    assert_eq!(
        res.header("content-disposition"),
        Some(format!("attachment; filename=\"{tm}.tmx\"; filename*=UTF-8''{tm}.tmx").as_str())
    );
    let original = units(TRADOS);
    let exported = units(&res.bytes);
    assert_eq!(exported.len(), original.len());
    for unit in &original {
        let source = &unit.variants[0];
        let back = exported
            .iter()
            .find(|u| u.variants[0].text == source.text)
            .expect("the unit is exported");
        let langs = |u: &gridd::tm::tmx::Unit| {
            let mut v: Vec<_> = u
                .variants
                .iter()
                .map(|v| (v.lang.clone(), v.text.clone(), v.markup.clone()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(langs(back), langs(unit), "same variants, inline tags kept");
        assert_eq!(back.props, unit.props);
        assert_eq!(back.notes, unit.notes);
        if unit.creation_ms.is_some() {
            assert_eq!(back.creation_ms, unit.creation_ms);
            assert_eq!(back.creation_id, unit.creation_id);
        }
    }
    let text = String::from_utf8_lossy(&res.bytes);
    assert!(
        text.contains(
            r#"<bpt i="1" type="bold" x="1">&lt;b&gt;</bpt>Save<ept i="1">&lt;/b&gt;</ept>"#
        ),
        "{text}"
    );
    // The export imports again into a new memory to the same segments.
    let again = upload(&app, "again.tmx", &res.bytes);
    let again = again.assert_status(201)["id"].as_str().expect("id").to_owned();
    assert_eq!(units(&export(&app, &again, "").bytes).len(), original.len());
}

#[test]
fn omegat_files_with_tmx_1_1_lang_hi_it_and_cjk_import_and_match() {
    let app = spawn_app();
    let tm = create(&app, json!({"name": "Game"}));
    let res = send_file(&app, &format!("/v1/transmems/{tm}/import"), "omegat-game.tmx", OMEGAT);
    assert_eq!(res.assert_status(200), &json!({"added": 4, "updated": 0}));
    let found = matches(&app, &tm, "The file could not be opened!", "en", "ja");
    assert_eq!(found[0]["target"], json!("ファイルを開けませんでした。"));
    assert_eq!(found[0]["score"], json!(99));
    let found = matches(&app, &tm, "Press Start to continue", "EN", "ZH-CN");
    assert_eq!(found[0]["target"], json!("按开始继续。"));
    let res = send_file(&app, &format!("/v1/transmems/{tm}/import"), "omegat-game.tmx", OMEGAT);
    assert_eq!(res.assert_status(200), &json!({"added": 0, "updated": 4}));
    let exported = export(&app, &tm, "?sourceLang=EN&targetLangs=ZH-CN");
    exported.assert_status(200);
    let only = units(&exported.bytes);
    assert_eq!(only.len(), 1);
    assert!(only[0].variants[1]
        .markup
        .as_deref()
        .is_some_and(|m| m.contains("<hi type=\"emphasis\">继续</hi>")));
}

#[test]
fn hostile_and_broken_uploads_are_refused_and_create_nothing() {
    let app = spawn_app_with(|c| c.tmx_upload_limit = 4096);
    upload(&app, "bomb.tmx", BILLION_LAUGHS).assert_error(400, "badRequest");
    upload(&app, "xxe.tmx", XXE).assert_error(400, "badRequest");
    upload(&app, "page.tmx", b"<html><body>hi</body></html>").assert_error(400, "badRequest");
    upload(&app, "cut.tmx", &TRADOS[..TRADOS.len() / 2]).assert_error(400, "badRequest");
    upload(&app, "empty.tmx", b"").assert_error(400, "badRequest");
    let deep = format!("<tmx>{}", "<x>".repeat(200));
    upload(&app, "deep.tmx", deep.as_bytes()).assert_error(400, "badRequest");
    upload(&app, "big.tmx", &vec![b' '; 5000]).assert_error(413, "payloadTooLarge");
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    app.raw(
        Method::POST,
        "/v1/transmems/upload",
        &content_type,
        multipart("other", "a.tmx", OMEGAT),
    )
    .assert_error(400, "requestParameterMissing");
    app.raw(Method::POST, "/v1/transmems/upload", "application/json", b"{}".to_vec())
        .assert_error(415, "unsupportedMediaType");
    let reader = app.create_key(&["read"], json!({"all": true}));
    assert_eq!(app.get_as(&reader, "/v1/transmems").assert_status(200), &json!([]));
    let tm = create(&app, json!({"name": "Kept"}));
    send_file(&app, &format!("/v1/transmems/{tm}/import"), "ok.tmx", OMEGAT).assert_status(200);
    let before = export(&app, &tm, "").bytes;
    send_file(&app, &format!("/v1/transmems/{tm}/import"), "bomb.tmx", BILLION_LAUGHS)
        .assert_error(400, "badRequest");
    send_file(&app, "/v1/transmems/nope/import", "ok.tmx", OMEGAT)
        .assert_error(404, "transMemIsNotFound");
    let after = export(&app, &tm, "").bytes;
    assert_eq!(units(&before), units(&after), "a refused import changes nothing");
    let leftovers = std::fs::read_dir(app.data_dir.join("imports")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(leftovers, 0, "uploads are removed");
}

#[test]
fn exports_come_as_tmx_csv_or_xlsx_and_bad_options_are_refused() {
    let app = spawn_app();
    let tm =
        upload(&app, "ui.tmx", TRADOS).assert_status(201)["id"].as_str().expect("id").to_owned();
    let csv = export(&app, &tm, "?format=csv");
    csv.assert_status(200);
    let text = String::from_utf8(csv.bytes.clone()).expect("utf-8");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("sourceLang,source,targetLang,target,createdTime,createdBy,changedTime,changedBy,origin"));
    assert_eq!(lines.count(), 5, "one line per segment");
    let xlsx = export(&app, &tm, "?format=xlsx");
    assert!(xlsx.assert_status(200).is_null() && xlsx.bytes.starts_with(b"PK"));
    let de = units(&export(&app, &tm, "?targetLangs=de-DE").bytes);
    assert_eq!(de.len(), 2);
    assert!(de.iter().all(|u| u.variants.len() == 2 && u.variants[1].lang == "de-DE"));
    let both = units(&export(&app, &tm, "?targetLangs=de-DE&targetLangs=fr-FR").bytes);
    assert_eq!(both.len(), 3);
    assert!(units(&export(&app, &tm, "?sourceLang=ja").bytes).is_empty());
    export(&app, &tm, "?format=pdf").assert_error(400, "badRequest");
    export(&app, &tm, "?sourceLang=e%20n").assert_error(400, "badRequest");
    export(&app, &tm, "?targetLangs=%3Cx%3E").assert_error(400, "badRequest");
    export(&app, "nope", "").assert_error(404, "transMemIsNotFound");
}

#[test]
fn cleanup_erases_the_segments_but_keeps_the_memory() {
    let app = spawn_app();
    let tm =
        upload(&app, "ui.tmx", TRADOS).assert_status(201)["id"].as_str().expect("id").to_owned();
    let res = app.put(&format!("/v1/transmems/{tm}/cleanup"), &json!({}));
    assert_eq!(res.status, 204);
    assert!(res.text.is_empty());
    assert!(matches(&app, &tm, "Your changes were saved.", "en-US", "fr-FR").is_empty());
    assert!(units(&export(&app, &tm, "").bytes).is_empty());
    app.get(&format!("/v1/transmems/{tm}")).assert_status(200);
}

#[test]
fn lookups_score_fuzzy_matches_and_refuse_bad_requests() {
    let app = spawn_app();
    let tm =
        upload(&app, "ui.tmx", TRADOS).assert_status(201)["id"].as_str().expect("id").to_owned();
    // A placeholder (`ph`) is not text: the stored source's tokens are "you have unread
    // messages", 4 tokens, one substituted -> 75.
    let found = matches(&app, &tm, "You have new messages.", "en-US", "fr-FR");
    assert_eq!(found[0]["score"], json!(75));
    assert_eq!(found[0]["target"], json!("Vous avez  messages non lus."));
    let strict = lookup(
        &app,
        &tm,
        json!({"text": "You have new messages.", "sourceLanguage": "en-US",
        "targetLanguage": "fr-FR", "minScore": 76}),
    );
    assert_eq!(strict.assert_status(200), &json!([]));
    let loose = lookup(
        &app,
        &tm,
        json!({"text": "your changes were saved", "sourceLanguage": "en-US",
        "targetLanguage": "fr-FR", "minScore": 1, "limit": 1}),
    );
    assert_eq!(loose.assert_status(200).as_array().map(Vec::len), Some(1));
    let ok = json!({"text": "x", "sourceLanguage": "en", "targetLanguage": "fr"});
    let with = |field: &str, value: Value| {
        let mut body = ok.clone();
        body[field] = value;
        body
    };
    let bad = [
        (json!({"sourceLanguage": "en", "targetLanguage": "fr"}), 400, "requestParameterMissing"),
        (json!({"text": "x", "targetLanguage": "fr"}), 400, "requestParameterMissing"),
        (with("sourceLanguage", json!("e n")), 400, "badRequest"),
        (with("targetLanguage", json!("x".repeat(40))), 400, "badRequest"),
        (with("minScore", json!(0)), 400, "badRequest"),
        (with("minScore", json!(101)), 400, "badRequest"),
        (with("minScore", json!("high")), 400, "badRequest"),
        (with("limit", json!(0)), 400, "badRequest"),
        (with("limit", json!(51)), 400, "badRequest"),
        (with("text", json!("a".repeat(10_001))), 400, "badRequest"),
        (with("surprise", json!(1)), 400, "badRequest"),
    ];
    for (body, status, code) in bad {
        lookup(&app, &tm, body).assert_error(status, code);
    }
    lookup(&app, "nope", ok).assert_error(404, "transMemIsNotFound");
}

/// Polls `check` for up to 15 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < Duration::from_secs(15), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn translated_cells_of_linked_projects_feed_the_memory_and_pages_show_matches() {
    let app = spawn_app();
    let (_, view) = app.localized_grid(true);
    let project = first_project(&app);
    app.add_records(&view, json!([
        {"id": "r1", "cells": [{"columnId": "en", "value": "The settings were saved."},
            {"columnId": "fr", "value": "Les paramètres ont été enregistrés.", "dependencyStatus": "upToDate"},
            {"columnId": "de", "value": "Entwurf", "dependencyStatus": "outOfDate"}]},
        {"id": "r2", "cells": [{"columnId": "en", "value": "Delete this file?"}]},
    ]));
    let tm = create(&app, json!({"name": "Fed", "projectIds": [project]}));
    eventually("the translated cell to feed the memory", || {
        !matches(&app, &tm, "The settings were saved.", "enUS", "frFR").is_empty()
    });
    assert!(
        matches(&app, &tm, "The settings were saved.", "enUS", "deDE").is_empty(),
        "outOfDate feeds nothing"
    );
    app.add_records(
        &view,
        json!([{"id": "r3", "cells": [{"columnId": "en", "value": "Delete this file?"},
        {"columnId": "fr", "value": "Supprimer ce fichier ?", "dependencyStatus": "upToDate"}]}]),
    );
    eventually("a later translation to feed the memory", || {
        matches(&app, &tm, "Delete this file?", "enUS", "frFR")
            .first()
            .is_some_and(|m| m["score"] == 100)
    });
    let page = app.get(&format!("{}?tmMatches=fr", records_path(&view)));
    let records = page.assert_status(200).as_array().expect("records").clone();
    let r2 = records.iter().find(|r| r["id"] == "r2").expect("r2");
    assert_eq!(
        r2["tmMatches"],
        json!({"fr": {"source": "Delete this file?", "target": "Supprimer ce fichier ?", "score": 100}})
    );
    assert_eq!(page.header("x-total-count"), Some("3"));
    let plain = app.get(&records_path(&view));
    assert!(plain
        .assert_status(200)
        .as_array()
        .expect("records")
        .iter()
        .all(|r| r.get("tmMatches").is_none()));
    app.get(&format!("{}?tmMatches=zz", records_path(&view))).assert_error(400, "invalidColumnId");
    app.get(&format!("{}?tmMatches=note", records_path(&view))).assert_error(400, "badRequest");
    app.get(&format!("{}?tmMatches=fr&tmMatches=de", records_path(&view)))
        .assert_error(400, "badRequest");
    // Paused: nothing more is fed.
    app.put(&format!("/v1/transmems/{tm}"), &json!({"isPausedConsuming": true})).assert_status(200);
    app.add_records(
        &view,
        json!([{"id": "r4", "cells": [{"columnId": "en", "value": "Quit now"},
        {"columnId": "fr", "value": "Quitter", "dependencyStatus": "upToDate"}]}]),
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(matches(&app, &tm, "Quit now", "enUS", "frFR").is_empty());
}

#[test]
fn segments_survive_a_restart_and_deleted_memories_stay_gone() {
    let app = spawn_app();
    let tm =
        upload(&app, "ui.tmx", TRADOS).assert_status(201)["id"].as_str().expect("id").to_owned();
    let gone =
        upload(&app, "gone.tmx", OMEGAT).assert_status(201)["id"].as_str().expect("id").to_owned();
    app.delete(&format!("/v1/transmems/{gone}")).assert_status(200);
    let app = app.restart();
    let found = matches(&app, &tm, "Your changes were saved.", "en-US", "fr-FR");
    assert_eq!(found[0]["score"], json!(100));
    app.get(&format!("/v1/transmems/{gone}")).assert_error(404, "transMemIsNotFound");
    assert_eq!(units(&export(&app, &tm, "").bytes).len(), 3);
}
