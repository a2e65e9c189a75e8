//! Grid settings (`/v1/grids/<id>/settings`, the hosted OpenAPI's grid settings operations):
//! read and change them, the defaults they give new source cells and datetime columns, file
//! categories and their files (upload, list, delete, kept by the collector, gone with their
//! category), privileges, and every refusal changing nothing.

use serde_json::{json, Value};

use crate::files::{multipart, post_multipart};
use crate::helpers::{cell, spawn_app, spawn_app_with, TestApp};
use crate::hostile_tenancy::eventually;

fn settings_path(grid: &str) -> String {
    format!("/v1/grids/{grid}/settings")
}

/// Creates category `name` in `grid`; returns its id.
fn create_category(app: &TestApp, grid: &str, name: &str) -> String {
    let res = app.post(&format!("/v1/grids/{grid}/settings/categories"), &json!({"name": name}));
    let body = res.assert_status(200);
    assert_eq!(body["name"], name);
    body["id"].as_str().expect("category id").to_owned()
}

fn upload(app: &TestApp, grid: &str, category: &str, name: &str, content: &[u8]) -> Value {
    let body = multipart(&[("file", Some((name, "text/plain")), content)]);
    let res = post_multipart(
        app,
        &format!("/v1/grids/{grid}/settings/categories/{category}/files"),
        body,
    );
    res.assert_status(200).clone()
}

fn file_names(app: &TestApp) -> Vec<String> {
    std::fs::read_dir(app.data_dir.join("files"))
        .map(|dir| dir.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default()
}

#[test]
fn settings_start_at_the_defaults_and_change_field_by_field() {
    let app = spawn_app();
    let (grid, _) = app.create_grid("Strings");
    let res = app.get(&settings_path(&grid));
    let body = res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert_eq!(body["defaultSourceLanguageStatus"], "unset");
    assert_eq!(body["translatorCanViewAutomations"], false);
    assert_eq!(body["categories"], json!([]));
    assert_eq!(body["metadata"], json!({}));
    assert!(body["createdTime"].is_string() && body["lastModifiedTime"].is_string(), "{body}");
    // Only the fields the OpenAPI's GridSetting names.
    let allowed = [
        "defaultSourceLanguageStatus",
        "translatorCanViewAutomations",
        "categories",
        "metadata",
        "createdTime",
        "lastModifiedTime",
        "createdBy",
        "lastModifiedBy",
    ];
    for key in body.as_object().expect("object").keys() {
        assert!(allowed.contains(&key.as_str()), "{key} is not a GridSetting field");
    }

    let res = app.patch(
        &settings_path(&grid),
        &json!({"defaultSourceLanguageStatus": "readyForTranslation",
                "translatorCanViewAutomations": true,
                "metadata": {"team": "loc", "owner": "ana"}}),
    );
    let body = res.assert_status(200);
    assert_eq!(body["defaultSourceLanguageStatus"], "readyForTranslation");
    assert_eq!(body["translatorCanViewAutomations"], true);
    assert_eq!(body["metadata"], json!({"team": "loc", "owner": "ana"}));
    assert!(body["lastModifiedBy"].is_string(), "{body}");
    // Absent fields are kept; a null metadata value removes its key.
    let res = app.patch(&settings_path(&grid), &json!({"metadata": {"owner": null}}));
    let body = res.assert_status(200);
    assert_eq!(body["defaultSourceLanguageStatus"], "readyForTranslation");
    assert_eq!(body["metadata"], json!({"team": "loc"}));
    assert_eq!(app.get(&settings_path(&grid)).assert_status(200), body);
    // Kept across a restart.
    let app = app.restart();
    let after = app.get(&settings_path(&grid));
    assert_eq!(after.assert_status(200), body);
}

#[test]
fn bad_settings_are_refused_and_change_nothing() {
    let app = spawn_app();
    let (grid, _) = app.create_grid("Strings");
    app.patch(&settings_path(&grid), &json!({"defaultSourceLanguageStatus": "locked"}))
        .assert_status(200);
    let before = app.snapshot(&settings_path(&grid));
    let bad = [
        json!({"defaultSourceLanguageStatus": "final", "translatorCanViewAutomations": true}),
        json!({"defaultSourceLanguageStatus": 3}),
        json!({"translatorCanViewAutomations": "yes"}),
        json!({"metadata": {"k": 1}}),
        json!({"defaultDateTimeFormat": {"dateFormat": "y".repeat(65)}}),
        json!([]),
    ];
    for body in bad {
        app.patch(&settings_path(&grid), &body).assert_error(400, "badRequest");
    }
    let many: serde_json::Map<String, Value> =
        (0..200).map(|i| (format!("k{i}"), json!("v"))).collect();
    let res = app.patch(&settings_path(&grid), &json!({"metadata": many}));
    assert_eq!(res.status, 400, "{:?}", res.body);
    app.assert_unchanged(&settings_path(&grid), &before);
    app.get(&settings_path("nosuchgrid")).assert_error(404, "gridIsNotFound");
    app.patch(&settings_path("nosuchgrid"), &json!({})).assert_error(404, "gridIsNotFound");
}

#[test]
fn the_default_source_status_applies_to_source_cells_added_afterwards() {
    let app = spawn_app();
    // Source `en`, targets `fr` and `de`.
    let (grid, view) = app.localized_grid(false);
    let before =
        app.add_records(&view, json!([{"id": "a", "cells": [{"columnId": "en", "value": "Hi"}]}]));
    assert_eq!(cell(&before[0], "en")["sourceStatus"], "unset");
    app.patch(
        &settings_path(&grid),
        &json!({"defaultSourceLanguageStatus": "notReadyForTranslation"}),
    )
    .assert_status(200);
    let added = app.add_records(
        &view,
        json!([
            {"id": "b", "cells": [{"columnId": "en", "value": "Yes"}, {"columnId": "fr", "value": "Oui"}]},
            {"id": "c", "cells": [{"columnId": "en", "value": "No", "sourceStatus": "readyForTranslation"}]}
        ]),
    );
    assert_eq!(cell(&added[0], "en")["sourceStatus"], "notReadyForTranslation");
    assert_eq!(
        cell(&added[1], "en")["sourceStatus"],
        "readyForTranslation",
        "an explicit one wins"
    );
    assert_eq!(cell(&added[0], "fr")["sourceStatus"], "unset", "a target cell keeps none");
    // Records added before, and updates, are left alone.
    assert_eq!(cell(&app.record_by_id(&view, "a"), "en")["sourceStatus"], "unset");
    let res = app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "a", "cells": [{"columnId": "en", "value": "Hello"}]}]),
    );
    res.assert_status(200);
    assert_eq!(cell(&app.record_by_id(&view, "a"), "en")["sourceStatus"], "unset");
}

#[test]
fn the_default_date_time_format_applies_to_datetime_columns_created_afterwards() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("Dates");
    let format = json!({"dateFormat": "dd/MM/yyyy", "timeFormat": "HH:mm", "zoneOffset": "+02:00",
                        "showTimeZone": true});
    app.patch(&settings_path(&grid), &json!({"defaultDateTimeFormat": format})).assert_status(200);
    let made = app.create_column(&view, json!({"id": "due", "name": "Due", "type": "datetime"}));
    assert_eq!(made["dateTimeFormat"], format, "{made}");
    let own = json!({"dateFormat": "yyyy-MM-dd"});
    let made = app.create_column(
        &view,
        json!({"id": "sent", "name": "Sent", "type": "datetime", "dateTimeFormat": own}),
    );
    assert_eq!(made["dateTimeFormat"]["dateFormat"], "yyyy-MM-dd", "{made}");
    let text = app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    assert!(text.get("dateTimeFormat").is_none_or(Value::is_null), "{text}");
    let bulk = app.post(
        &format!("/v1/views/{view}/columns/bulk"),
        &json!([{"id": "seen", "name": "Seen", "type": "datetime"}]),
    );
    assert_eq!(bulk.assert_status(201)[0]["dateTimeFormat"], format);
}

#[test]
fn categories_hold_files_that_are_listed_and_deleted() {
    let app = spawn_app_with(|c| {
        c.file_gc_interval_secs = 1;
        c.file_gc_grace_secs = 0;
    });
    let (grid, _) = app.create_grid("Assets");
    let fonts = create_category(&app, &grid, "Fonts");
    let guides = create_category(&app, &grid, "Style guides");
    let body = app.snapshot(&settings_path(&grid));
    assert_eq!(
        body["categories"],
        json!([{"id": fonts, "name": "Fonts"}, {"id": guides, "name": "Style guides"}])
    );
    let font = upload(&app, &grid, &fonts, "Noto.ttf", b"font bytes");
    assert_eq!(font["originalName"], "Noto.ttf");
    assert_eq!(font["size"], 10);
    assert_eq!(font["contentType"], "text/plain");
    let font_id = font["id"].as_str().expect("id").to_owned();
    let guide = upload(&app, &grid, &guides, "guide.md", b"# Tone");
    let guide_id = guide["id"].as_str().expect("id").to_owned();

    let all = app.snapshot(&format!("/v1/grids/{grid}/settings/files"));
    assert_eq!(all.as_array().expect("list").len(), 2, "{all}");
    assert_eq!(all[0]["category"], json!({"id": fonts, "name": "Fonts"}));
    assert_eq!(all[0]["files"][0]["id"], font_id.as_str());
    assert_eq!(all[1]["files"][0]["id"], guide_id.as_str());
    let one = app.snapshot(&format!("/v1/grids/{grid}/settings/files?categoryId={guides}"));
    assert_eq!(one.as_array().expect("list").len(), 1);
    assert_eq!(one[0]["category"]["id"], guides.as_str());
    app.get(&format!("/v1/grids/{grid}/settings/files?categoryId=nope"))
        .assert_error(404, "categoryIsNotFound");

    // The collector leaves a category's files alone: no cell holds them.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let names = file_names(&app);
    assert!(names.contains(&font_id) && names.contains(&guide_id), "{names:?}");

    // Renamed; a file deleted; a category deleted with its files.
    let res =
        app.put(&format!("/v1/grids/{grid}/settings/categories/{fonts}"), &json!({"name": "Type"}));
    assert_eq!(res.assert_status(200), &json!({"id": fonts, "name": "Type"}));
    let file_path = format!("/v1/grids/{grid}/settings/categories/{guides}/files/{font_id}");
    app.delete(&file_path).assert_error(404, "fileIsNotFound");
    app.delete(&format!("/v1/grids/{grid}/settings/categories/{fonts}/files/{font_id}"))
        .assert_status(204);
    assert!(eventually(|| !file_names(&app).contains(&font_id)), "the file's bytes stay");
    app.delete(&format!("/v1/grids/{grid}/settings/categories/{guides}")).assert_status(204);
    assert!(eventually(|| !file_names(&app).contains(&guide_id)), "the category's file stays");
    let body = app.snapshot(&settings_path(&grid));
    assert_eq!(body["categories"], json!([{"id": fonts, "name": "Type"}]));
    let listed = app.snapshot(&format!("/v1/grids/{grid}/settings/files"));
    assert_eq!(listed, json!([{"category": {"id": fonts, "name": "Type"}, "files": []}]));
    // Kept across a restart.
    let app = app.restart();
    assert_eq!(app.snapshot(&format!("/v1/grids/{grid}/settings/files")), listed);
}

#[test]
fn bad_category_calls_are_refused_and_change_nothing() {
    let app = spawn_app();
    let (grid, _) = app.create_grid("Assets");
    let kept = create_category(&app, &grid, "Kept");
    let before = app.snapshot(&settings_path(&grid));
    let categories = format!("/v1/grids/{grid}/settings/categories");
    for body in
        [json!({}), json!({"name": ""}), json!({"name": "  "}), json!({"name": "x".repeat(256)})]
    {
        app.post(&categories, &body).assert_error(400, "badRequest");
        app.put(&format!("{categories}/{kept}"), &body).assert_error(400, "badRequest");
    }
    app.put(&format!("{categories}/nope"), &json!({"name": "n"}))
        .assert_error(404, "categoryIsNotFound");
    app.delete(&format!("{categories}/nope")).assert_error(404, "categoryIsNotFound");
    let body = multipart(&[("file", Some(("a.txt", "text/plain")), b"a")]);
    post_multipart(&app, &format!("{categories}/nope/files"), body)
        .assert_error(404, "categoryIsNotFound");
    // An upload without a file part.
    let body = multipart(&[("other", None, b"a")]);
    post_multipart(&app, &format!("{categories}/{kept}/files"), body)
        .assert_error(400, "badRequest");
    app.assert_unchanged(&settings_path(&grid), &before);
    assert_eq!(app.snapshot(&format!("/v1/grids/{grid}/settings/files"))[0]["files"], json!([]));
    assert!(file_names(&app).is_empty(), "{:?}", file_names(&app));
    // At most 100 categories.
    for i in 1..100 {
        create_category(&app, &grid, &format!("c{i}"));
    }
    app.post(&categories, &json!({"name": "one too many"})).assert_error(400, "badRequest");
}

#[test]
fn settings_need_read_to_see_and_manage_to_change() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("Assets");
    let category = create_category(&app, &grid, "Fonts");
    let reader = app.create_user_key("reader");
    let view_key = app.create_view_key(&view);
    app.get_as(&reader, &settings_path(&grid)).assert_status(200);
    app.get_as(&reader, &format!("/v1/grids/{grid}/settings/files")).assert_status(200);
    let before = app.snapshot(&settings_path(&grid));
    app.patch_as(&reader, &settings_path(&grid), &json!({"translatorCanViewAutomations": true}))
        .assert_error(403, "accessDenied");
    let categories = format!("/v1/grids/{grid}/settings/categories");
    app.post_as(&reader, &categories, &json!({"name": "n"})).assert_error(403, "accessDenied");
    app.delete_as(&reader, &format!("{categories}/{category}")).assert_error(403, "accessDenied");
    let res = app.send(
        app.request(
            reqwest::Method::POST,
            &format!("{categories}/{category}/files"),
            Some(&reader),
        )
        .header("Content-Type", format!("multipart/form-data; boundary={}", crate::files::BOUNDARY))
        .body(multipart(&[("file", Some(("a.txt", "text/plain")), b"a")])),
    );
    res.assert_error(403, "accessDenied");
    app.assert_unchanged(&settings_path(&grid), &before);
    assert!(file_names(&app).is_empty(), "{:?}", file_names(&app));
    // Another company's key does not see the grid at all.
    let (other, _, _) = app.create_company("team");
    app.get_as(&other, &settings_path(&grid)).assert_error(404, "gridIsNotFound");
    // A view key reaches records, not grid settings.
    let res = app.get_as(&view_key, &settings_path(&grid));
    assert!(res.status == 403 || res.status == 404, "{:?}", res.body);
}
