//! CDN publishing (issue 22): `/v1/cdns` (create, list, get, delete, publish, unpublish) and
//! the file server at `/cdn/<id>/...`: each language's JSON and CSV, versions that never change,
//! entity tags and caching, unpublishing at once, private CDNs, the allow-list and the window,
//! refused requests that change nothing, and a restart.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

fn text(column: &str, value: &str) -> Value {
    json!({"columnId": column, "value": value})
}

/// The localized grid with three records: (grid id, view id).
fn strings_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.localized_grid(false);
    app.add_records(
        &view,
        json!([
            {"id": "r1", "cells": [text("en", "Hello"), text("fr", "Bonjour")]},
            {"id": "r2", "cells": [
                text("en", "Bye \"now\""), text("fr", "Au revoir"), text("de", "Tschüss")]},
            {"id": "r3", "cells": [text("note", "no text")]},
        ]),
    );
    (grid, view)
}

fn create(app: &TestApp, body: Value) -> Value {
    app.post("/v1/cdns", &body).assert_status(201).clone()
}

fn id_of(cdn: &Value) -> String {
    cdn["id"].as_str().expect("a CDN id").to_owned()
}

fn publish(app: &TestApp, id: &str) -> Value {
    app.put(&format!("/v1/cdns/{id}/publish"), &json!({})).assert_status(200).clone()
}

/// A file of the CDN without a key.
fn fetch(app: &TestApp, path: &str) -> crate::helpers::Resp {
    app.call(Method::GET, path, None, None)
}

fn fetch_if_none_match(app: &TestApp, path: &str, tag: &str) -> crate::helpers::Resp {
    app.send(app.request(Method::GET, path, None).header("If-None-Match", tag))
}

/// The status line and head of a GET of `path` sent byte for byte.
fn raw_get(app: &TestApp, path: &str) -> String {
    use std::io::Write;
    let addr = app.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
        .expect("sent");
    crate::helpers::read_answer(&mut stream, std::time::Duration::from_secs(5))
}

#[test]
fn cdns_are_created_listed_fetched_and_deleted() {
    let app = spawn_app();
    let (grid, _) = strings_grid(&app);
    let first = create(
        &app,
        json!({"gridId": grid, "name": "Game", "description": "strings", "permission": "private",
               "whiteListIP": "10.0.0.1, 192.168.0.0/16",
               "startTime": "2026-01-01T10:00:00+02:00"}),
    );
    let id = id_of(&first);
    assert_eq!(first["gridId"], json!(grid));
    assert_eq!(first["status"], "readyToPublish");
    assert_eq!(first["permission"], "private");
    assert_eq!(first["type"], "grid");
    assert_eq!(first["whiteListIP"], "10.0.0.1,192.168.0.0/16");
    assert_eq!(first["startTime"], "2026-01-01T08:00:00.000+00:00");
    // Not set: left out, not null (the OpenAPI declares these strings, not nullable).
    for absent in ["endTime", "version", "lastGeneratedTime", "lastPublishedTime"] {
        assert!(first.get(absent).is_none(), "{absent} in {first}");
    }
    assert!(first["url"].as_str().expect("url").ends_with(&format!("/cdn/{id}")));
    assert!(first["createdTime"].is_string() && first["lastModifiedBy"].is_string());
    let second = create(&app, json!({"gridId": grid, "name": "Web"}));
    assert_eq!(second["permission"], "public");
    assert_eq!(app.get(&format!("/v1/cdns/{id}")).assert_status(200), &first);

    let list = app.get(&format!("/v1/cdns?gridId={grid}"));
    assert_eq!(list.assert_status(200), &json!([first, second]));
    assert_eq!(list.header("x-total-count"), Some("2"));
    let page = app.get(&format!("/v1/cdns?gridId={grid}&offset=1&limit=1"));
    assert_eq!(page.assert_status(200), &json!([second]));
    assert_eq!(page.header("x-total-count"), Some("2"));
    let by_id = app.get(&format!("/v1/cdns?gridId={grid}&ids={id}"));
    assert_eq!(by_id.assert_status(200), &json!([first]));
    let unpublished = app.get(&format!("/v1/cdns?gridId={grid}&published=false"));
    assert_eq!(unpublished.assert_status(200).as_array().map(Vec::len), Some(2));
    let published = app.get(&format!("/v1/cdns?gridId={grid}&published=true"));
    assert_eq!(published.assert_status(200), &json!([]));

    app.get("/v1/cdns").assert_error(400, "requestParameterMissing");
    app.get("/v1/cdns?gridId=nosuchgrid").assert_error(404, "gridIsNotFound");
    app.get(&format!("/v1/cdns?gridId={grid}&limit=5000")).assert_error(400, "invalidPaging");
    app.get(&format!("/v1/cdns?gridId={grid}&offset=-1")).assert_error(400, "invalidPaging");
    app.get(&format!("/v1/cdns?gridId={grid}&published=maybe")).assert_error(400, "badRequest");

    assert_eq!(app.delete(&format!("/v1/cdns/{id}")).status, 204);
    app.get(&format!("/v1/cdns/{id}")).assert_error(404, "cdnIsNotFound");
    app.delete(&format!("/v1/cdns/{id}")).assert_error(404, "cdnIsNotFound");
    app.put(&format!("/v1/cdns/{id}/publish"), &json!({})).assert_error(404, "cdnIsNotFound");
    app.put(&format!("/v1/cdns/{id}/unpublish"), &json!({})).assert_error(404, "cdnIsNotFound");
    assert_eq!(app.get(&format!("/v1/cdns?gridId={grid}")).assert_status(200), &json!([second]));
}

#[test]
fn bad_cdn_requests_are_refused_and_change_nothing() {
    let app = spawn_app();
    let (grid, _) = strings_grid(&app);
    let list = format!("/v1/cdns?gridId={grid}");
    let before = app.snapshot(&list);
    let with = |field: &str, value: Value| {
        let mut body = json!({"gridId": grid, "name": "Game"});
        body[field] = value;
        body
    };
    let refused = [
        json!({"name": "Game"}),
        json!({"gridId": grid}),
        with("name", json!("   ")),
        with("name", json!("n".repeat(256))),
        with("name", json!(7)),
        with("description", json!("d".repeat(2001))),
        with("permission", json!("everyone")),
        with("whiteListIP", json!("10.0.0.0/33")),
        with("whiteListIP", json!("localhost")),
        with("whiteListIP", json!(vec!["10.0.0.1"; 101].join(","))),
        with("startTime", json!("tomorrow")),
        with("endTime", json!("2026-02-30T00:00:00Z")),
        json!({"gridId": grid, "name": "Game", "startTime": "2026-02-01T00:00:00Z",
               "endTime": "2026-01-01T00:00:00Z"}),
        with("status", json!("published")),
    ];
    for body in refused {
        let res = app.post("/v1/cdns", &body);
        res.assert_error(400, "badRequest");
        assert!(!res.body["message"].as_str().unwrap_or("").is_empty(), "{body}");
    }
    app.raw(Method::POST, "/v1/cdns", "application/json", b"{not json".to_vec())
        .assert_error(400, "badRequest");
    app.raw(Method::POST, "/v1/cdns", "application/json", Vec::new())
        .assert_error(400, "requestBodyMissing");
    app.post("/v1/cdns", &json!({"gridId": "nosuchgrid", "name": "Game"}))
        .assert_error(404, "gridIsNotFound");
    let ok = app.post("/v1/cdns", &with("name", json!("n".repeat(255))));
    ok.assert_status(201);
    app.delete(&format!("/v1/cdns/{}", id_of(&ok.body)));
    app.assert_unchanged(&list, &before);
}

#[test]
fn publishing_serves_each_language_and_old_versions_never_change() {
    let app = spawn_app();
    let (grid, view) = strings_grid(&app);
    let id = id_of(&create(&app, json!({"gridId": grid, "name": "Game"})));
    let base = format!("/cdn/{id}");
    fetch(&app, &format!("{base}/manifest.json")).assert_error(404, "cdnIsNotFound");

    let published = publish(&app, &id);
    assert_eq!(published["status"], "published");
    assert_eq!(published["version"], 1);
    assert!(published["lastPublishedTime"].is_string());
    let manifest = fetch(&app, &format!("{base}/manifest.json"));
    let body = manifest.assert_status(200).clone();
    assert_eq!(manifest.header("content-type"), Some("application/json"));
    assert_eq!(manifest.header("cache-control"), Some("public, max-age=60, must-revalidate"));
    assert_eq!(manifest.header("x-cdn-version"), Some("1"));
    assert_eq!((body["version"].clone(), body["recordCount"].clone()), (json!(1), json!(3)));
    let names: Vec<&str> = body["languages"]
        .as_array()
        .expect("languages")
        .iter()
        .map(|l| l["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["enUS", "frFR", "deDE"]);
    assert_eq!(body["languages"][1]["strings"], 2);
    assert_eq!(body["languages"][1]["csv"], "frFR.csv");

    let en = fetch(&app, &format!("{base}/enUS.json"));
    assert_eq!(en.assert_status(200), &json!({"r1": "Hello", "r2": "Bye \"now\""}));
    assert_eq!(en.header("content-type"), Some("application/json"));
    let de = fetch(&app, &format!("{base}/deDE.json"));
    assert_eq!(de.assert_status(200), &json!({"r2": "Tschüss"}));
    let fr = fetch(&app, &format!("{base}/frFR.csv"));
    assert_eq!(fr.status, 200);
    assert_eq!(fr.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(fr.text, "recordId,path,text\nr1,,Bonjour\nr2,,Au revoir\n");

    let tag = en.header("etag").expect("an ETag").to_owned();
    assert!(tag.starts_with('"') && tag.len() == 34, "{tag}");
    let cached = fetch_if_none_match(&app, &format!("{base}/enUS.json"), &tag);
    assert_eq!(cached.status, 304);
    assert_eq!(cached.header("etag"), Some(tag.as_str()));
    assert_eq!(fetch_if_none_match(&app, &format!("{base}/enUS.json"), "\"other\"").status, 200);
    let pinned = fetch(&app, &format!("{base}/v/1/enUS.json"));
    assert_eq!(pinned.bytes, en.bytes);
    assert_eq!(pinned.header("etag"), Some(tag.as_str()));
    assert_eq!(pinned.header("cache-control"), Some("public, max-age=31536000, immutable"));

    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "r1", "cells": [text("en", "Hi")]}]),
    )
    .assert_status(200);
    assert_eq!(publish(&app, &id)["version"], 2);
    let en2 = fetch(&app, &format!("{base}/enUS.json"));
    assert_eq!(en2.assert_status(200), &json!({"r1": "Hi", "r2": "Bye \"now\""}));
    assert_ne!(en2.header("etag"), Some(tag.as_str()));
    assert_eq!(fetch_if_none_match(&app, &format!("{base}/enUS.json"), &tag).status, 200);
    let old = fetch(&app, &format!("{base}/v/1/enUS.json"));
    assert_eq!((old.bytes.clone(), old.header("etag")), (en.bytes.clone(), Some(tag.as_str())));
    assert_eq!(fetch(&app, &format!("{base}/v/2/enUS.json")).bytes, en2.bytes);
}

#[test]
fn unknown_files_versions_and_hostile_paths_read_nothing() {
    let app = spawn_app();
    let (grid, _) = strings_grid(&app);
    let id = id_of(&create(&app, json!({"gridId": grid, "name": "Game"})));
    publish(&app, &id);
    let base = format!("/cdn/{id}");
    for file in [
        "itIT.json",
        "enUS.xml",
        "enUS",
        "..%2Fmanifest.json",
        "..%2F..%2Fcatalog",
        "%2E%2E",
        "enUS.json%00",
    ] {
        let res = fetch(&app, &format!("{base}/{file}"));
        assert_eq!(res.status, 404, "{file}: {}", res.text);
        assert!(res.code() == "fileIsNotFound" || res.code() == "notFound", "{file}: {}", res.text);
    }
    for version in ["0", "2", "abc", "99999999999999999999999", "-1"] {
        let res = fetch(&app, &format!("{base}/v/{version}/manifest.json"));
        assert_eq!(res.status, 404, "{version}: {}", res.text);
    }
    fetch(&app, &format!("{base}/v/2/manifest.json")).assert_error(404, "cdnIsNotFound");
    // Dot segments sent as they are (an HTTP client library would resolve them first).
    for raw in [
        "v/../manifest.json",
        "v/%2E%2E/manifest.json",
        "..%2F..%2Fcatalog%2Fconf",
        "v/1/..%2F1%2Fmanifest.json",
        "v/1/%2E%2E",
    ] {
        let answer = raw_get(&app, &format!("{base}/{raw}"));
        assert!(answer.starts_with("HTTP/1.1 404"), "{raw}: {answer}");
    }
    fetch(&app, "/cdn/nosuchcdn/manifest.json").assert_error(404, "cdnIsNotFound");
    let bad_tag = app.send(
        app.request(Method::GET, &format!("{base}/enUS.json"), None)
            .header("If-None-Match", "nope"),
    );
    bad_tag.assert_error(400, "badRequest");

    for _ in 0..3 {
        publish(&app, &id);
    }
    fetch(&app, &format!("{base}/v/1/enUS.json")).assert_error(404, "cdnIsNotFound");
    assert_eq!(fetch(&app, &format!("{base}/v/2/enUS.json")).status, 200);
    assert_eq!(fetch(&app, &format!("{base}/v/4/enUS.json")).status, 200);
    let kept: Vec<String> = std::fs::read_dir(app.data_dir.join("cdn").join(&id))
        .expect("the CDN's directory")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    let mut kept = kept;
    kept.sort();
    assert_eq!(kept, ["2", "3", "4"], "older versions are pruned");
}

#[test]
fn unpublishing_stops_serving_at_once() {
    let app = spawn_app();
    let (grid, _) = strings_grid(&app);
    let id = id_of(&create(&app, json!({"gridId": grid, "name": "Game"})));
    publish(&app, &id);
    let base = format!("/cdn/{id}");
    assert_eq!(fetch(&app, &format!("{base}/enUS.json")).status, 200);
    let res = app.put(&format!("/v1/cdns/{id}/unpublish"), &json!({}));
    assert_eq!(res.assert_status(200)["status"], "readyToPublish");
    for path in ["enUS.json", "manifest.json", "v/1/enUS.json"] {
        fetch(&app, &format!("{base}/{path}")).assert_error(404, "cdnIsNotFound");
    }
    assert_eq!(app.get(&format!("/v1/cdns?gridId={grid}&published=true")).body, json!([]));
    assert_eq!(publish(&app, &id)["version"], 2);
    assert_eq!(fetch(&app, &format!("{base}/enUS.json")).status, 200);
}

#[test]
fn a_private_cdn_needs_a_key_of_the_grid_s_company() {
    let app = spawn_app();
    let (grid, view) = strings_grid(&app);
    let id = id_of(&create(&app, json!({"gridId": grid, "name": "Game", "permission": "private"})));
    publish(&app, &id);
    let path = format!("/cdn/{id}/enUS.json");
    fetch(&app, &path).assert_error(401, "unauthorized");
    app.call(Method::GET, &path, Some("not-a-key"), None).assert_error(401, "unauthorized");
    let res = app.get(&path);
    assert_eq!(res.assert_status(200)["r1"], "Hello");
    assert_eq!(res.header("cache-control"), Some("private, max-age=60, must-revalidate"));
    let reader = app.create_key(&["read"], json!({"all": true}));
    assert_eq!(app.get_as(&reader, &path).status, 200);
    let view_key = app.create_view_key(&view);
    app.get_as(&view_key, &path).assert_error(404, "cdnIsNotFound");
    let (other, _, _) = app.create_company("enterprise");
    app.get_as(&other, &path).assert_error(404, "cdnIsNotFound");
    app.get_as(&other, &format!("/v1/cdns/{id}")).assert_error(404, "cdnIsNotFound");
    app.put_as(&other, &format!("/v1/cdns/{id}/publish"), &json!({}))
        .assert_error(404, "cdnIsNotFound");
    app.delete_as(&other, &format!("/v1/cdns/{id}")).assert_error(404, "cdnIsNotFound");
    app.get_as(&other, &format!("/v1/cdns?gridId={grid}")).assert_error(404, "gridIsNotFound");
    app.post_as(&other, "/v1/cdns", &json!({"gridId": grid, "name": "x"}))
        .assert_error(404, "gridIsNotFound");
    // Managing a CDN takes the grid's manage privilege.
    app.post_as(&reader, "/v1/cdns", &json!({"gridId": grid, "name": "x"}))
        .assert_error(403, "accessDenied");
    app.put_as(&reader, &format!("/v1/cdns/{id}/unpublish"), &json!({}))
        .assert_error(403, "accessDenied");
    assert_eq!(app.get(&format!("/v1/cdns/{id}")).body["status"], "published");
}

#[test]
fn the_allow_list_and_the_window_refuse_clients() {
    let app = spawn_app();
    let (grid, _) = strings_grid(&app);
    let served = |body: Value| {
        let mut body = body;
        body["gridId"] = json!(grid);
        body["name"] = json!("Game");
        let id = id_of(&create(&app, body));
        publish(&app, &id);
        fetch(&app, &format!("/cdn/{id}/enUS.json"))
    };
    let elsewhere = served(json!({"whiteListIP": "10.1.2.3, 192.168.0.0/16"}));
    elsewhere.assert_error(403, "accessDenied");
    assert!(elsewhere.text.contains("127.0.0.1"), "{}", elsewhere.text);
    let local = served(json!({"whiteListIP": "10.1.2.3,127.0.0.0/8"}));
    assert_eq!(local.status, 200);
    assert_eq!(local.header("cache-control"), Some("private, max-age=60, must-revalidate"));
    let future = served(json!({"startTime": "2999-01-01T00:00:00Z"}));
    future.assert_error(403, "accessDenied");
    assert!(future.text.contains("2999-01-01T00:00:00.000+00:00"), "{}", future.text);
    served(json!({"endTime": "2001-01-01T00:00:00Z"})).assert_error(403, "accessDenied");
    let open =
        served(json!({"startTime": "2001-01-01T00:00:00Z", "endTime": "2999-01-01T00:00:00Z"}));
    assert_eq!(open.status, 200);
}

#[test]
fn published_cdns_survive_a_restart_and_go_with_their_grid() {
    let app = spawn_app();
    let (grid, _) = strings_grid(&app);
    let id = id_of(&create(&app, json!({"gridId": grid, "name": "Game"})));
    let quiet = id_of(&create(&app, json!({"gridId": grid, "name": "Quiet"})));
    publish(&app, &id);
    publish(&app, &quiet);
    app.put(&format!("/v1/cdns/{quiet}/unpublish"), &json!({})).assert_status(200);
    // The port (in `url`) changes with the restart.
    let listed = |app: &TestApp| {
        let mut list = app.snapshot(&format!("/v1/cdns?gridId={grid}"));
        list.as_array_mut().into_iter().flatten().for_each(|c| c["url"] = Value::Null);
        list
    };
    let before = listed(&app);
    let file = fetch(&app, &format!("/cdn/{id}/enUS.json"));
    // As a crash between a CDN's deletion and the removal of its files leaves them.
    let orphan = app.data_dir.join("cdn").join("deleted-before-the-crash");
    std::fs::create_dir_all(orphan.join("1")).expect("a leftover directory");
    std::fs::write(orphan.join("1").join("enUS.json"), "{}").expect("a leftover file");
    let app = app.restart();
    assert!(!orphan.exists(), "a start removes the files of CDNs the catalogue lost");
    assert!(app.data_dir.join("cdn").join(&id).exists(), "and keeps those of known ones");
    assert_eq!(listed(&app), before);
    let again = fetch(&app, &format!("/cdn/{id}/enUS.json"));
    assert_eq!(
        (again.bytes.clone(), again.header("etag")),
        (file.bytes.clone(), file.header("etag"))
    );
    fetch(&app, &format!("/cdn/{quiet}/enUS.json")).assert_error(404, "cdnIsNotFound");
    assert_eq!(publish(&app, &id)["version"], 2);

    assert_eq!(app.delete(&format!("/v1/grids/{grid}")).status, 204);
    app.get(&format!("/v1/cdns/{id}")).assert_error(404, "cdnIsNotFound");
    fetch(&app, &format!("/cdn/{id}/enUS.json")).assert_error(404, "cdnIsNotFound");
    assert!(!app.data_dir.join("cdn").join(&id).exists(), "the grid's CDN files are removed");
}

#[test]
fn a_path_tagged_grid_keys_its_strings_by_path_and_id() {
    let app = spawn_app();
    let db = app.default_db();
    let body = json!({"name": "Paths", "recordIdentifierType": "pathTagRecordId"});
    let grid = app.post(&format!("/v1/grids?dbId={db}"), &body).assert_status(201).clone();
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.create_column(
        &view,
        json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    app.add_records(
        &view,
        json!([{"id": "title", "path": "menu", "cells": [text("en", "Menu")]},
               {"id": "title", "path": "shop", "cells": [text("en", "Shop, \"now\"")]},
               {"id": "quit", "cells": [text("en", "Quit")]},
               {"id": "menu/title", "cells": [text("en", "Not the menu's title")]}]),
    );
    let id = id_of(&create(&app, json!({"gridId": grid["id"], "name": "Paths"})));
    publish(&app, &id);
    let en = fetch(&app, &format!("/cdn/{id}/enUS.json"));
    assert_eq!(
        en.assert_status(200),
        &json!({"menu/title": "Menu", "shop/title": "Shop, \"now\"", "quit": "Quit",
                "menu%2Ftitle": "Not the menu's title"}),
        "an id holding `/` is escaped, so it keys its own record"
    );
    let csv = fetch(&app, &format!("/cdn/{id}/enUS.csv"));
    assert_eq!(
        csv.text,
        "recordId,path,text\ntitle,menu,Menu\ntitle,shop,\"Shop, \"\"now\"\"\"\nquit,,Quit\n\
         menu/title,,Not the menu's title\n"
    );
}

/// Figures: how long publishing a grid of `CDN_FIGURE_RECORDS` records (default 50,000) with
/// three languages takes, and how large its files are. Run with
/// `cargo test --test api cdn::publish_figures -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn publish_figures() {
    let records: usize =
        std::env::var("CDN_FIGURE_RECORDS").ok().and_then(|n| n.parse().ok()).unwrap_or(50_000);
    let app = spawn_app();
    let (grid, view) = app.localized_grid(false);
    for start in (0..records).step_by(1000) {
        let batch: Vec<Value> = (start..(start + 1000).min(records))
            .map(|i| {
                json!({"id": format!("string_{i:06}"), "cells": [
                    text("en", &format!("English text number {i}, of a typical length")),
                    text("fr", &format!("Texte français numéro {i}, d'une longueur typique")),
                    text("de", &format!("Deutscher Text Nummer {i}, von typischer Länge"))]})
            })
            .collect();
        app.post(&format!("/v1/views/{view}/records"), &json!(batch)).assert_status(201);
    }
    let id = id_of(&create(&app, json!({"gridId": grid, "name": "Figures"})));
    for _ in 0..3 {
        let started = std::time::Instant::now();
        publish(&app, &id);
        eprintln!("publish of {records} records x 3 languages: {:?}", started.elapsed());
    }
    let started = std::time::Instant::now();
    let en = fetch(&app, &format!("/cdn/{id}/enUS.json"));
    eprintln!("GET enUS.json ({} bytes): {:?}", en.bytes.len(), started.elapsed());
}

#[test]
fn concurrent_publishes_of_one_cdn_are_refused_not_mixed() {
    let app = spawn_app();
    let (grid, view) = strings_grid(&app);
    for start in (0..5000).step_by(1000) {
        let batch: Vec<Value> = (start..start + 1000)
            .map(|i| json!({"id": format!("s{i}"), "cells": [text("en", &format!("text {i}"))]}))
            .collect();
        app.post(&format!("/v1/views/{view}/records"), &json!(batch)).assert_status(201);
    }
    let id = id_of(&create(&app, json!({"gridId": grid, "name": "Game"})));
    let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let res = app.put(&format!("/v1/cdns/{id}/publish"), &json!({}));
                    (res.status, res.code().to_owned())
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().expect("a call")).collect()
    });
    let published = answers.iter().filter(|(status, _)| *status == 200).count();
    for answer in &answers {
        assert!(
            *answer == (200, String::new()) || *answer == (409, "taskIsRunning".into()),
            "{answer:?}"
        );
    }
    assert!(published >= 1, "{answers:?}");
    let cdn = app.get(&format!("/v1/cdns/{id}")).assert_status(200).clone();
    assert_eq!(cdn["version"], json!(published), "one version per publish answered 200");
    assert_eq!(cdn["status"], "published");
    let manifest = fetch(&app, &format!("/cdn/{id}/manifest.json"));
    assert_eq!(manifest.assert_status(200)["recordCount"], 5003);
    assert_eq!(manifest.body["version"], json!(published));
}
