//! Share links (decisions.md section 10): `PUT/GET/DELETE /v1/views/<viewId>/shares` and the
//! public read-only page and JSON of a shared view, including a headless Chromium that loads
//! the page (`chromium`, Debian's package, which `.ci/run` installs when missing).

use std::process::Command;

use reqwest::Method;
use serde_json::{json, Value};

use super::helpers::{spawn_app, Resp, TestApp};

/// A grid with English and a count, `n` records `rec.000`.., and its view.
fn shared_grid(app: &TestApp, n: usize) -> String {
    let (_, view) = app.create_grid("shared");
    app.create_column(
        &view,
        json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS"}),
    );
    app.create_column(&view, json!({"id": "n", "name": "Count", "type": "number"}));
    for start in (0..n).step_by(500) {
        let records: Vec<Value> = (start..(start + 500).min(n))
            .map(|i| {
                json!({"id": format!("rec.{i:03}"), "cells": [
                {"columnId": "en", "value": format!("String number {i}")},
                {"columnId": "n", "value": i}]})
            })
            .collect();
        app.add_records(&view, Value::Array(records));
    }
    view
}

fn shares(view: &str) -> String {
    format!("/v1/views/{view}/shares")
}

/// The path part of a share link.
fn link_path(app: &TestApp, share: &Value) -> String {
    let link = share["link"].as_str().expect("link");
    link.strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{link} is not under {}", app.base))
        .to_owned()
}

/// GET without an API key.
fn public(app: &TestApp, path: &str) -> Resp {
    app.call(Method::GET, path, None, None)
}

#[test]
fn a_share_link_is_enabled_read_disabled_and_enabled_again() {
    let app = spawn_app();
    let view = shared_grid(&app, 3);
    app.get(&shares(&view)).assert_error(404, "shareIsNotFound");
    let res = app.put(&shares(&view), &json!({}));
    let share = res.assert_status(200).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(share["active"], json!(true));
    assert_eq!(share["viewId"], json!(view));
    assert_eq!(share["includeGridHistory"], json!(false));
    // A string, as the contract's "Shared link" and the OpenAPI's ShareView declare it.
    let company = share["companyId"].as_str().and_then(|c| c.parse::<i64>().ok());
    assert!(company.is_some_and(|c| c >= 1), "{share}");
    assert!(
        share["createdDate"].as_str().is_some() && share["lastModifiedDate"].as_str().is_some()
    );
    let path = link_path(&app, &share);
    assert!(path.starts_with("/share/"), "{path}");
    assert_eq!(app.get(&shares(&view)).assert_status(200), &share);
    assert_eq!(public(&app, &path).status, 200);

    let res = app.delete(&shares(&view));
    assert_eq!((res.status, res.text.as_str()), (204, ""));
    let disabled = app.get(&shares(&view)).assert_status(200).clone();
    assert_eq!(disabled["active"], json!(false));
    public(&app, &path).assert_error(404, "shareIsNotFound");
    public(&app, &format!("{path}/records")).assert_error(404, "shareIsNotFound");

    let again =
        app.put(&shares(&view), &json!({"includeGridHistory": true})).assert_status(200).clone();
    assert_eq!(again["active"], json!(true));
    assert_ne!(again["link"], share["link"], "a re-enabled link has a new token");
    assert_eq!(again["includeGridHistory"], json!(true));
    public(&app, &path).assert_error(404, "shareIsNotFound");
    let new_path = link_path(&app, &again);
    assert_eq!(public(&app, &new_path).status, 200);
    let kept = app.put(&shares(&view), &json!({})).assert_status(200).clone();
    assert_eq!(kept["link"], again["link"], "enabling an active link keeps it");
    public(&app, "/share/notarealtoken").assert_error(404, "shareIsNotFound");
    app.put(&shares("nosuchview"), &json!({})).assert_error(404, "viewIsNotFound");
}

#[test]
fn share_links_need_the_enterprise_plan_and_manage() {
    let app = spawn_app();
    let (_, owner, grid) = app.tier_grid("team");
    let view = grid["defaultAccessViewId"].as_str().expect("view");
    let res = app.call(Method::PUT, &shares(view), Some(&owner), Some(&json!({})));
    res.assert_error(403, "accessDenied");
    assert!(res.text.contains("Enterprise"), "{}", res.text);
    app.get_as(&owner, &shares(view)).assert_error(403, "accessDenied");
    app.delete_as(&owner, &shares(view)).assert_error(403, "accessDenied");
    let view = shared_grid(&app, 1);
    let writer = app.create_key(&["read", "write"], json!({"all": true}));
    app.call(Method::PUT, &shares(&view), Some(&writer), Some(&json!({})))
        .assert_error(403, "accessDenied");
}

#[test]
fn the_page_shows_the_records_paged_and_escaped() {
    let app = spawn_app();
    let view = shared_grid(&app, 120);
    let hostile = "<script>alert('x')</script> & \"quoted\"";
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "rec.000", "cells": [{"columnId": "en", "value": hostile}]}]),
    )
    .assert_status(200);
    let share = app.put(&shares(&view), &json!({})).assert_status(200).clone();
    let path = link_path(&app, &share);
    let res = public(&app, &path);
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(res
        .header("content-security-policy")
        .is_some_and(|c| c.contains("default-src 'none'")));
    let html = &res.text;
    assert_eq!(html.matches("<tr data-record-id=").count(), 50);
    assert!(html.contains("120 records · page 1 of 3"), "{html}");
    assert!(html.contains("<th data-column-id=\"en\">English</th>"));
    assert!(html.contains("String number 49") && !html.contains("String number 50<"));
    assert!(!html.contains("<script>"), "cell text is escaped");
    assert!(
        html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;")
    );
    assert!(html.contains("rel=\"next\" href=\"?page=2\""));
    let last = public(&app, &format!("{path}?page=3"));
    assert_eq!(last.text.matches("<tr data-record-id=").count(), 20);
    assert!(last.text.contains("rec.119") && last.text.contains("rel=\"prev\""));
    public(&app, &format!("{path}?page=0")).assert_error(400, "invalidPaging");

    let json_page = public(&app, &format!("{path}/records"));
    let records = json_page.assert_status(200).as_array().expect("records").clone();
    assert_eq!(json_page.header("x-total-count"), Some("120"));
    assert_eq!(records.len(), 100);
    assert_eq!(records[1]["id"], json!("rec.001"));
    assert_eq!(records[1]["cells"][1]["value"], json!(1));
}

#[test]
fn history_is_shown_only_when_the_link_includes_it() {
    let app = spawn_app();
    let view = shared_grid(&app, 2);
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "rec.001", "cells": [{"columnId": "en", "value": "Edited once"}]}]),
    )
    .assert_status(200);
    let share = app.put(&shares(&view), &json!({})).assert_status(200).clone();
    let path = link_path(&app, &share);
    assert!(!public(&app, &path).text.contains("/history\""));
    public(&app, &format!("{path}/records/rec.001/history")).assert_error(404, "shareIsNotFound");
    public(&app, &format!("{path}/records/rec.001/histories")).assert_error(404, "shareIsNotFound");

    app.put(&shares(&view), &json!({"includeGridHistory": true})).assert_status(200);
    assert!(public(&app, &path).text.contains(&format!("{path}/records/rec.001/history\"")));
    let page = public(&app, &format!("{path}/records/rec.001/history"));
    assert_eq!(page.status, 200);
    assert_eq!(page.text.matches("<tr class=\"history\">").count(), 2);
    assert!(page.text.contains("English: Edited once"));
    let entries =
        public(&app, &format!("{path}/records/rec.001/histories")).assert_status(200).clone();
    assert_eq!(entries.as_array().map(Vec::len), Some(2));
    assert_eq!(entries[0]["cells"][0]["value"], json!("Edited once"));
}

/// The DOM of `url` after a headless Chromium loaded it.
fn chromium_dom(url: &str) -> String {
    let binary = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("the browser test needs Chromium: apt-get install chromium (.ci/run does)");
    let profile = tempfile::tempdir().expect("a profile directory");
    let output = Command::new(binary)
        .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=5000", "--dump-dom", url])
        .output()
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the DOM is UTF-8")
}

#[test]
fn a_browser_shows_the_shared_records_until_the_link_is_disabled() {
    let app = spawn_app();
    let view = shared_grid(&app, 60);
    let share = app.put(&shares(&view), &json!({})).assert_status(200).clone();
    let link = share["link"].as_str().expect("link").to_owned();
    let dom = chromium_dom(&link);
    assert!(dom.contains("<h1>Default view</h1>"), "{dom}");
    assert_eq!(dom.matches("<tr data-record-id=").count(), 50, "{dom}");
    assert!(dom.contains("<td>rec.000</td>") && dom.contains("String number 49"), "{dom}");
    let second = chromium_dom(&format!("{link}?page=2"));
    assert_eq!(second.matches("<tr data-record-id=").count(), 10);
    assert!(second.contains("String number 59"));

    app.delete(&shares(&view));
    let gone = chromium_dom(&link);
    assert!(!gone.contains("<tr data-record-id="), "{gone}");
    assert!(gone.contains("shareIsNotFound"), "{gone}");
}
