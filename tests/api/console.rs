//! The web console (issue 23): its files served at `/` and `/console/...` with the strict CSP
//! and cache headers, and the key introspection route it signs in with. The page itself is
//! driven in a real headless Chromium (`crate::browser`) by the submodules: `e2e` and
//! `e2e_more` (what a user does, checked over the API), `units` (the modules' parsers run in
//! the page) and `scale` (the ignored 1M-record measure).

use reqwest::Method;
use serde_json::json;

use super::helpers::{spawn_app, Resp, TestApp};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

fn fetch(app: &TestApp, path: &str, if_none_match: Option<&str>) -> Resp {
    let mut req = app.request(Method::GET, path, None);
    if let Some(tag) = if_none_match {
        req = req.header("If-None-Match", tag);
    }
    app.send(req)
}

/// The version the page names its modules under (`/console/<version>/app.js`).
fn page_version(page: &str) -> String {
    let start = page.find("/console/").expect("the page loads modules") + "/console/".len();
    page[start..].split('/').next().expect("a version").to_owned()
}

#[test]
fn the_page_is_html_with_the_csp_and_revalidated() {
    let app = spawn_app();
    let page = fetch(&app, "/", None);
    page.assert_status(200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(page.header("content-security-policy"), Some(CSP));
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert!(page.text.contains("<script type=\"module\""));
    assert!(!page.text.contains("__VERSION__"));
    let tag = page.header("etag").expect("an ETag").to_owned();
    let again = fetch(&app, "/", Some(&tag));
    assert_eq!(again.status, 304);
    assert!(again.text.is_empty());
    assert_eq!(again.header("etag"), Some(tag.as_str()));
    assert_eq!(fetch(&app, "/", Some("\"other\"")).status, 200);
}

#[test]
fn modules_are_javascript_and_versioned_paths_immutable() {
    let app = spawn_app();
    let version = page_version(&fetch(&app, "/", None).text);
    let module = fetch(&app, &format!("/console/{version}/app.js"), None);
    module.assert_status(200);
    assert_eq!(module.header("content-type"), Some("text/javascript; charset=utf-8"));
    assert_eq!(module.header("cache-control"), Some("public, max-age=31536000, immutable"));
    assert_eq!(module.header("content-security-policy"), Some(CSP));
    let plain = fetch(&app, "/console/ui.js", None);
    plain.assert_status(200);
    assert_eq!(plain.header("cache-control"), Some("no-cache"));
    let tag = plain.header("etag").expect("an ETag").to_owned();
    assert_eq!(fetch(&app, "/console/ui.js", Some(&tag)).status, 304);
    let css = fetch(&app, &format!("/console/{version}/style.css"), None);
    assert_eq!(css.header("content-type"), Some("text/css; charset=utf-8"));
}

#[test]
fn unknown_files_are_404_and_the_api_is_unaffected() {
    let app = spawn_app();
    for path in [
        "/console/nope.js",
        "/console/",
        "/console/..%2fCargo.toml",
        "/console/index.html",
        "/console/0123456789abcdef/nope.js",
    ] {
        fetch(&app, path, None).assert_error(404, "fileIsNotFound");
    }
    // The client resolves `..` (also encoded) itself: no route.
    fetch(&app, "/console/../Cargo.toml", None).assert_error(404, "notFound");
    fetch(&app, "/console/%2e%2e/Cargo.toml", None).assert_error(404, "notFound");
    let listed = app.get("/v1/projects");
    listed.assert_status(200);
    assert_eq!(listed.header("content-type"), Some("application/json"));
    assert!(listed.header("content-security-policy").is_none());
    fetch(&app, "/v1/nothing", None).assert_error(404, "notFound");
    // A malformed If-None-Match is ignored.
    fetch(&app, "/", Some("W/\"x\", garbage")).assert_status(200);
    fetch(&app, "/console/app.js", Some("no quotes")).assert_status(200);
}

#[test]
fn the_current_key_says_what_it_may_do_without_its_secret() {
    let app = spawn_app();
    let owner = app.get("/admin/v1/api-keys/current");
    let body = owner.assert_status(200);
    assert_eq!(body["kind"], "company");
    assert_eq!(body["privileges"], json!(["read", "write", "manage", "owner"]));
    assert_eq!(body["companyId"], json!(1));
    assert_eq!(body["access"]["all"], json!(true));
    assert!(body.get("key").is_none() && body.get("hash").is_none());
    assert!(!owner.text.contains(&app.key));

    let writer = app.create_key(&["write"], json!({"all": true}));
    let body = app.get_as(&writer, "/admin/v1/api-keys/current").body;
    assert_eq!(body["privileges"], json!(["read", "write"]));
    assert_eq!(body["admin"], json!(false));

    let (_, view) = app.create_grid("keys");
    let view_key = app.create_view_key(&view);
    let body = app.get_as(&view_key, "/admin/v1/api-keys/current").body;
    assert_eq!(body["kind"], "view");
    assert_eq!(body["viewId"], json!(view));
    assert!(body.get("access").is_none());

    app.call(Method::GET, "/admin/v1/api-keys/current", None, None)
        .assert_error(401, "unauthorized");
    app.call(Method::GET, "/admin/v1/api-keys/current", Some("wrong"), None)
        .assert_error(401, "unauthorized");
}

mod e2e;
mod e2e_more;
mod in_firefox;
mod scale;
mod units;
