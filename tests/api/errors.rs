//! Every failure is the JSON error body of decisions.md section 3 with `Content-Type:
//! application/json` exactly, including actix's own errors: unknown route, wrong method, bad
//! JSON, wrong content type, body too large, missing body.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, Resp};

/// The whole error body: status, code, message, path (the request's) and an ISO 8601 UTC
/// timestamp with milliseconds.
#[track_caller]
fn assert_error_body(res: &Resp, status: u16, code: &str, path: &str) {
    res.assert_error(status, code);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(res.body["path"], json!(path), "{}", res.text);
    let message = res.body["message"].as_str().expect("message");
    assert!(!message.is_empty());
    let timestamp = res.body["timestamp"].as_str().expect("timestamp");
    let parsed = chrono::DateTime::parse_from_rfc3339(timestamp);
    assert!(parsed.is_ok(), "timestamp {timestamp} is ISO 8601");
    assert_eq!(timestamp.len(), "2026-01-31T14:25:13.293+00:00".len(), "{timestamp}");
    let fields = res.body.as_object().expect("an object");
    for name in fields.keys() {
        assert!(
            ["status", "code", "message", "messages", "path", "timestamp"].contains(&name.as_str()),
            "unexpected field {name}"
        );
    }
    if let Some(messages) = fields.get("messages") {
        assert!(messages.as_array().is_some_and(|m| m.iter().all(|s| s.is_string())));
    }
}

#[test]
fn an_unknown_route_is_404_not_found() {
    let app = spawn_app();
    // `/` is the web console's page (tests/api/console.rs).
    for path in ["/v1", "/v1/nothing", "/v2/projects", "/v1/grids/a/b/c", "/admin/v1/other"] {
        assert_error_body(&app.get(path), 404, "notFound", path);
        let res = app.call(Method::GET, path, None, None);
        assert_error_body(&res, 404, "notFound", path);
    }
    let res = app.post("/v1/nothing", &json!({}));
    assert_error_body(&res, 404, "notFound", "/v1/nothing");
}

#[test]
fn a_wrong_method_is_405_method_not_allowed() {
    let app = spawn_app();
    for (method, path) in [
        (Method::PUT, "/v1/grids/abc"),
        (Method::DELETE, "/v1/projects"),
        (Method::PATCH, "/v1/views"),
        (Method::PUT, "/v1/views/abc/columns/x"),
        (Method::GET, "/v1/views/abc/columns"),
        (Method::PATCH, "/v1/views/abc/dependencies/x"),
        (Method::GET, "/v1/views/abc/columns/x/add"),
        (Method::POST, "/healthz"),
        (Method::DELETE, "/v1/openapi.json"),
        (Method::PUT, "/admin/v1/api-keys"),
        (Method::POST, "/v1/tasks/x"),
    ] {
        let res = app.call(method.clone(), path, Some(&app.key), Some(&json!({})));
        assert_error_body(&res, 405, "methodNotAllowed", path);
        let res = app.call(method, path, None, None);
        assert_error_body(&res, 405, "methodNotAllowed", path);
    }
    // `Allow` names the methods the path takes (RFC 9110), HEAD wherever GET.
    let res = app.call(Method::PUT, "/v1/grids/abc", Some(&app.key), None);
    let mut allowed: Vec<&str> =
        res.header("allow").expect("an Allow header").split(", ").collect();
    allowed.sort_unstable();
    assert_eq!(allowed, ["DELETE", "GET", "HEAD", "PATCH"]);
    let res = app.call(Method::DELETE, "/v1/projects", Some(&app.key), None);
    assert_eq!(res.header("allow"), Some("GET, HEAD, POST"));
}

#[test]
fn malformed_json_is_400_bad_request() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    for body in ["{", "{\"name\": }", "[1, 2", "nul", "{\"name\": \"x\"} trailing", "\u{0}"] {
        let res =
            app.raw(Method::POST, "/v1/projects", "application/json", body.as_bytes().to_vec());
        assert_error_body(&res, 400, "badRequest", "/v1/projects");
    }
    let res = app.raw(Method::POST, "/v1/projects", "application/json", vec![0xff, 0xfe, 0x7b]);
    assert_error_body(&res, 400, "badRequest", "/v1/projects");
    app.assert_unchanged("/v1/projects", &before);
}

#[test]
fn json_of_the_wrong_shape_is_400_bad_request() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    for body in [json!([]), json!("name"), json!({"name": ["x"]}), json!(12)] {
        let res = app.post("/v1/projects", &body);
        assert_error_body(&res, 400, "badRequest", "/v1/projects");
    }
    app.assert_unchanged("/v1/projects", &before);
}

/// An array holding an object body's fields in order (which serde's derive would read as the
/// object) is refused like any body of the wrong shape, and changes nothing.
#[test]
fn an_array_where_an_object_is_expected_is_400_bad_request() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("Strings");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    app.add_records(&view, json!([{"id": "r1"}]));
    let branch = app.post(&format!("/v1/branches?branchId={grid}"), &json!({"name": "b"}));
    let branch = branch.body["id"].as_str().expect("a branch id").to_string();
    let grid_path = format!("/v1/grids/{grid}");
    let before = (app.snapshot(&grid_path), app.snapshot(&format!("/v1/views/{view}")));
    let db = app.default_db();
    // Each array holds exactly its struct's fields, in order: serde's derive reads it.
    let writes = [
        (
            Method::POST,
            format!("/v1/grids?dbId={db}"),
            json!([null, "Named by position", null, null, [], null]),
        ),
        (Method::PATCH, grid_path.clone(), json!(["Renamed", null])),
        (Method::DELETE, format!("/v1/views/{view}/records"), json!([["r1"], null])),
        (
            Method::POST,
            "/admin/v1/api-keys".to_string(),
            json!(["k", null, null, ["read"], null, null]),
        ),
        (Method::POST, "/v1/projects".to_string(), json!(["By position", null, null])),
        (
            Method::PATCH,
            format!("/v1/views/{view}/records/r1"),
            json!([null, null, [{"columnId": "title", "value": "X"}], null, null]),
        ),
        (Method::PUT, format!("/v1/views/{view}/shares"), json!([true])),
        (Method::POST, "/v1/glossaries".to_string(), json!(["g", null, null, null])),
        // Inside bodies too: a bulk write's records, a column's settings, a bulk create's
        // columns, a new grid's columns.
        (
            Method::POST,
            format!("/v1/views/{view}/records"),
            json!([["t5", null, [{"columnId": "title", "value": "X"}], null, null]]),
        ),
        (
            Method::PATCH,
            format!("/v1/views/{view}/records"),
            json!([["r1", null, [{"columnId": "title", "value": "X"}], null, null]]),
        ),
        (
            Method::POST,
            format!("/v1/views/{view}/columns"),
            json!({"id": "c3", "name": "C3", "type": "number", "numberFormat": ["integer", 0]}),
        ),
        (
            Method::POST,
            format!("/v1/views/{view}/columns/bulk"),
            json!([[null, null, "C4", null, "singleLine"]]),
        ),
        (
            Method::POST,
            format!("/v1/grids?dbId={db}"),
            json!({"name": "Cols", "columns": [[null, null, "C5", null, "singleLine"]]}),
        ),
        // And the structs nested deeper: a key's access, a glossary's projects, a delete's
        // identifiers, a new view's columns, a selection's options, the grid settings' date
        // format, a merge's conflicts and query.
        (
            Method::POST,
            "/admin/v1/api-keys".to_string(),
            json!({"name": "k2", "privileges": ["read"], "access": [false, [1], [], []]}),
        ),
        (Method::POST, "/v1/glossaries".to_string(), json!({"name": "g2", "projects": [[1, []]]})),
        (Method::DELETE, format!("/v1/views/{view}/records"), json!({"identifiers": [["r1", ""]]})),
        (
            Method::POST,
            "/v1/views".to_string(),
            json!({"name": "Positional", "gridId": grid, "columns": [["title", true]]}),
        ),
        (
            Method::POST,
            format!("/v1/views/{view}/columns"),
            json!({"id": "c6", "name": "C6", "type": "singleSelection",
                   "selection": {"options": [["a", null]]}}),
        ),
        (
            Method::PATCH,
            format!("{grid_path}/settings"),
            json!({"defaultDateTimeFormat": ["yyyy-MM-dd", null, null, null]}),
        ),
        (
            Method::POST,
            format!("/v1/branches/{branch}/merge?destinationBranchId={grid}"),
            json!({"mergeRecordConflicts": [["r1", null, []]]}),
        ),
        (
            Method::POST,
            format!("/v1/branches/{branch}/merge?destinationBranchId={grid}"),
            json!({"query": [["title", "=", ["X"], null, null, null, null]]}),
        ),
        (
            Method::POST,
            format!("/v1/branches/{branch}/merge?destinationBranchId={grid}"),
            json!({"mergeRecordConflicts": [{"recordId": "r1", "cells": [["title", "child"]]}]}),
        ),
    ];
    for (method, path, body) in writes {
        let res = app.call(method.clone(), &path, Some(&app.key), Some(&body));
        assert_eq!(res.status, 400, "{method} {path}: {}", res.text);
        assert_eq!(res.body["code"], json!("badRequest"), "{method} {path}: {}", res.text);
    }
    let after = (app.snapshot(&grid_path), app.snapshot(&format!("/v1/views/{view}")));
    assert_eq!(after, before);
    let keys = app.snapshot("/admin/v1/api-keys");
    assert!(!keys.to_string().contains("k2"), "{keys}");
    let views = app.snapshot(&format!("/v1/views?gridId={grid}"));
    assert!(!views.to_string().contains("Positional"), "{views}");
    let projects = app.snapshot("/v1/projects");
    assert!(!projects.to_string().contains("By position"), "{projects}");
    app.get(&format!("/v1/views/{view}/shares")).assert_error(404, "shareIsNotFound");
    assert_eq!(app.snapshot("/v1/glossaries"), json!([]));
}

#[test]
fn a_wrong_content_type_is_415() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    for content_type in ["text/plain", "application/xml", "multipart/form-data; boundary=x"] {
        let res = app.raw(Method::POST, "/v1/projects", content_type, br#"{"name": "x"}"#.to_vec());
        assert_error_body(&res, 415, "unsupportedMediaType", "/v1/projects");
    }
    app.assert_unchanged("/v1/projects", &before);
}

/// The endpoints that read their JSON body by hand (or take it optional) check its content
/// type as the others do: a body labelled otherwise is 415 and changes nothing.
#[test]
fn a_wrong_content_type_is_415_where_the_body_is_read_by_hand_too() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    let cdns = format!("/v1/cdns?gridId={grid}");
    let lists = ["/v1/transmems", "/v1/glossaries", "/v1/webhooks", &cdns];
    let before: Vec<_> = lists.iter().map(|path| app.snapshot(path)).collect();
    let cases = [
        (Method::POST, "/v1/transmems".to_owned(), String::new(), json!({"name": "m"})),
        (Method::PUT, "/v1/transmems/1".to_owned(), String::new(), json!({"name": "m"})),
        (Method::POST, "/v1/glossaries".to_owned(), String::new(), json!({"name": "g"})),
        (Method::POST, "/v1/webhooks".to_owned(), String::new(), json!({"url": "http://x/h"})),
        (Method::POST, "/v1/cdns".to_owned(), String::new(), json!({"name": "c", "gridId": grid})),
        (Method::DELETE, format!("/v1/views/{view}/files"), String::new(), json!({"ids": ["x"]})),
        (Method::PUT, format!("/v1/views/{view}/shares"), String::new(), json!({})),
        (
            Method::POST,
            format!("/v1/branches/{grid}/merge"),
            format!("?destinationBranchId={grid}"),
            json!({}),
        ),
    ];
    for (method, path, query, body) in cases {
        let body = body.to_string().into_bytes();
        let res = app.raw(method, &format!("{path}{query}"), "text/plain", body);
        assert_error_body(&res, 415, "unsupportedMediaType", &path);
    }
    for (path, before) in lists.iter().zip(&before) {
        app.assert_unchanged(path, before);
    }
}

#[test]
fn json_with_a_charset_is_accepted() {
    let app = spawn_app();
    let res = app.raw(
        Method::POST,
        "/v1/projects",
        "application/json; charset=utf-8",
        br#"{"name": "x"}"#.to_vec(),
    );
    res.assert_status(200);
}

#[test]
fn a_body_over_the_limit_is_413() {
    let app = spawn_app_with(|config| config.max_json_bytes = 1024);
    let before = app.snapshot("/v1/projects");
    let big = json!({"name": "x", "description": "y".repeat(4096)});
    let res = app.post("/v1/projects", &big);
    assert_error_body(&res, 413, "payloadTooLarge", "/v1/projects");
    let db = app.default_db();
    let res =
        app.post(&format!("/v1/grids?dbId={db}"), &json!({"metadata": {"k": "v".repeat(2000)}}));
    assert_error_body(&res, 413, "payloadTooLarge", "/v1/grids");
    app.assert_unchanged("/v1/projects", &before);
    app.post("/v1/projects", &json!({"name": "small"})).assert_status(200);
}

#[test]
fn a_missing_body_is_400_request_body_missing() {
    let app = spawn_app();
    let before = app.snapshot("/v1/projects");
    let res = app.call(Method::POST, "/v1/projects", Some(&app.key), None);
    assert_error_body(&res, 400, "requestBodyMissing", "/v1/projects");
    let res = app.raw(Method::POST, "/v1/projects", "application/json", Vec::new());
    assert_error_body(&res, 400, "requestBodyMissing", "/v1/projects");
    app.assert_unchanged("/v1/projects", &before);
}

#[test]
fn missing_or_unknown_keys_are_401_with_the_error_body() {
    let app = spawn_app();
    let res = app.call(Method::GET, "/v1/projects", None, None);
    assert_error_body(&res, 401, "unauthorized", "/v1/projects");
    let res = app.call(Method::GET, "/v1/projects", Some("nope"), None);
    assert_error_body(&res, 401, "unauthorized", "/v1/projects");
    let almost = format!("{}x", app.key);
    let res = app.call(Method::GET, "/v1/projects", Some(&almost), None);
    assert_error_body(&res, 401, "unauthorized", "/v1/projects");
    let res = app.send(
        app.request(Method::GET, "/v1/projects", None).header("Authorization", app.key.clone()),
    );
    assert_error_body(&res, 401, "unauthorized", "/v1/projects");
}

#[test]
fn the_key_scheme_is_case_insensitive_and_required() {
    let app = spawn_app();
    let with = |value: String| {
        app.send(app.request(Method::GET, "/v1/projects", None).header("Authorization", value))
    };
    with(format!("apikey {}", app.key)).assert_status(200);
    with(format!("APIKEY  {} ", app.key)).assert_status(200);
    for value in [format!("Bearer {}", app.key), "ApiKey".to_owned(), "ApiKey    ".to_owned()] {
        with(value).assert_error(401, "unauthorized");
    }
}

#[test]
fn error_paths_are_the_request_paths() {
    let app = spawn_app();
    let path = "/v1/views/nosuchview0001/columns/abc";
    assert_error_body(&app.get(path), 404, "viewIsNotFound", path);
    let res = app.get("/v1/grids?dbId=nosuchdatabase");
    assert_error_body(&res, 404, "databaseIsNotFound", "/v1/grids");
    let res = app.get("/v1/tasks/nosuchtask00001");
    assert_error_body(&res, 404, "taskIsNotFound", "/v1/tasks/nosuchtask00001");
}

#[test]
fn odd_paths_and_ids_never_fail_the_server() {
    let app = spawn_app();
    for path in [
        "/v1/views/%FF%FE/columns/x",
        "/v1/grids/%00",
        "/v1/grids/..%2F..%2Fetc",
        "/v1/views/%E2%9C%93/dependencies",
        "/v1/projects/\u{00e9}t\u{00e9}",
    ] {
        let res = app.get(path);
        assert!(res.status == 404 || res.status == 400, "{path}: {} {}", res.status, res.text);
        assert_eq!(res.header("content-type"), Some("application/json"), "{path}");
        assert!(res.body["code"].is_string(), "{path}: {}", res.text);
    }
    let long = format!("/v1/grids/{}", "a".repeat(4000));
    app.get(&long).assert_error(404, "gridIsNotFound");
}

#[test]
fn success_answers_carry_exactly_application_json() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    for path in [
        "/healthz".to_owned(),
        "/v1/projects".to_owned(),
        "/v1/databases".to_owned(),
        format!("/v1/grids/{grid}"),
        format!("/v1/views/{view}"),
        format!("/v1/views/{view}/dependencies"),
        "/admin/v1/api-keys".to_owned(),
        "/v1/openapi.json".to_owned(),
    ] {
        let res = app.get(&path);
        res.assert_status(200);
        assert_eq!(res.header("content-type"), Some("application/json"), "{path}");
    }
}

#[test]
fn healthz_needs_no_key() {
    let app = spawn_app();
    let res = app.call(Method::GET, "/healthz", None, None);
    res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
}

#[test]
fn a_key_over_its_rate_limit_gets_429_with_retry_after() {
    let app = crate::helpers::spawn_app_with(|config| {
        config.rate_limit = 0.5;
        config.rate_burst = 2;
    });
    let other = app.create_key(&["read"], serde_json::json!({"all": true}));
    // The key creation above took one of the owner key's two tokens.
    app.get("/v1/projects").assert_status(200);
    let res = app.get("/v1/projects");
    res.assert_error(429, "tooManyRequests");
    let retry: u64 = res.header("retry-after").expect("Retry-After").parse().expect("seconds");
    assert!((1..=2).contains(&retry), "{retry}");
    app.get_as(&other, "/v1/projects").assert_status(200);
    assert_eq!(app.call(reqwest::Method::GET, "/healthz", None, None).status, 200);
}

#[test]
fn without_a_configured_limit_requests_are_not_limited() {
    let app = crate::helpers::spawn_app();
    for _ in 0..120 {
        app.get("/v1/projects").assert_status(200);
    }
}

#[test]
fn a_client_that_never_finishes_its_request_head_is_dropped() {
    use std::io::{Read, Write};
    let app = crate::helpers::spawn_app_with(|config| config.request_timeout_ms = 300);
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").expect("writes");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    assert!(read.is_ok(), "the server kept the half-sent request open: {read:?}");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
}

#[test]
fn a_body_that_does_not_arrive_in_time_is_answered_408_and_changes_nothing() {
    use std::io::Write;
    let app = crate::helpers::spawn_app_with(|config| config.body_timeout_ms = 300);
    let before = app.snapshot("/v1/projects");
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    let body = br#"{"name": "never finished"}"#;
    let head = format!(
        "POST /v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: ApiKey {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        app.key,
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("writes the head");
    stream.write_all(&body[..10]).expect("writes part of the body");
    let text = crate::helpers::read_answer(&mut stream, std::time::Duration::from_secs(5));
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"requestTimeout\""), "{text}");
    app.assert_unchanged("/v1/projects", &before);
    // A body sent in time still works.
    app.post("/v1/projects", &serde_json::json!({"name": "in time"})).assert_status(200);
}
