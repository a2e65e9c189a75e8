//! Files (decisions.md section 10): upload into a files cell, download with content type and
//! name, delete from the cell, `fetchFileOption` on listings; hostile and oversized uploads.

use reqwest::Method;
use serde_json::{json, Value};

use super::helpers::{cell, spawn_app, Resp, TestApp};

const BOUNDARY: &str = "gridd-files-test-boundary-93ab";

/// One multipart part: its name, the file name and content type of a file part, its content.
type Part<'a> = (&'a str, Option<(&'a str, &'a str)>, &'a [u8]);

/// A multipart body of `parts`.
fn multipart(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file, content) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        match file {
            Some((filename, content_type)) => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n").as_bytes(),
            ),
            None => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
            ),
        }
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn post_multipart(app: &TestApp, path: &str, body: Vec<u8>) -> Resp {
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    app.raw(Method::POST, path, &content_type, body)
}

/// Uploads `content` as `name` into the files cell `shots` of `record`.
fn upload(app: &TestApp, view: &str, record: &str, name: &str, content: &[u8]) -> Resp {
    let body = multipart(&[
        ("recordId", None, record.as_bytes()),
        ("columnId", None, b"shots"),
        ("file", Some((name, "image/png")), content),
    ]);
    post_multipart(app, &format!("/v1/views/{view}/files"), body)
}

/// A grid with a files column `shots` and a text column `en`, and record `menu.start`.
fn grid(app: &TestApp) -> String {
    let (_, view) = app.create_grid("files");
    app.create_column(&view, json!({"id": "shots", "name": "Screenshots", "type": "files"}));
    app.create_column(&view, json!({"id": "en", "name": "English", "type": "singleLine"}));
    app.add_records(
        &view,
        json!([{"id": "menu.start", "cells": [{"columnId": "en", "value": "Start"}]}]),
    );
    view
}

/// The files in the data directory's `files/` (none left over after a refused upload).
fn stored_files(app: &TestApp) -> usize {
    std::fs::read_dir(app.data_dir.join("files")).map(|d| d.count()).unwrap_or(0)
}

fn record(app: &TestApp, view: &str) -> Value {
    app.records(view).into_iter().find(|r| r["id"] == json!("menu.start")).expect("record")
}

#[test]
fn a_file_is_uploaded_into_its_cell_and_downloaded_with_its_name_and_type() {
    let app = spawn_app();
    let view = grid(&app);
    let png = b"\x89PNG\r\n\x1a\n fake image bytes \x00\x01\x02";
    let res = upload(&app, &view, "menu.start", "start screen é.PNG", png);
    let file = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let id = file["id"].as_str().expect("id").to_owned();
    assert!(id.len() == 18 && id.ends_with(".png"), "{id}");
    assert_eq!(file["originalName"], json!("start screen é.PNG"));
    assert_eq!(file["contentType"], json!("image/png"));
    assert_eq!(file["size"], json!(png.len()));
    assert_eq!(cell(&record(&app, &view), "shots")["value"], json!([id]));

    let res = app.get(&format!("/v1/views/{view}/files/{id}"));
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("image/png"));
    let disposition = res.header("content-disposition").expect("a disposition");
    assert!(disposition.contains("filename*=UTF-8''start%20screen%20%C3%A9.PNG"), "{disposition}");
    assert_eq!(res.bytes, png.to_vec());

    // Query parameters work as well as form fields; a second file joins the list.
    let body = multipart(&[("file", Some(("notes.txt", "text/plain")), b"hello")]);
    let query = format!("/v1/views/{view}/files?recordId=menu.start&columnId=shots");
    let second = post_multipart(&app, &query, body).assert_status(201).clone();
    let second_id = second["id"].as_str().expect("id").to_owned();
    assert_eq!(cell(&record(&app, &view), "shots")["value"], json!([id, second_id]));

    let names = app.get(&format!("/v1/views/{view}/records?fetchFileOption=name"));
    let names = names.assert_status(200).clone();
    assert_eq!(names[0]["cells"][0]["value"], json!(["start screen é.PNG", "notes.txt"]));
    let all = app.get(&format!("/v1/views/{view}/records?fetchFileOption=all"));
    let all = all.assert_status(200).clone();
    assert_eq!(
        all[0]["cells"][0]["value"][1],
        json!({"id": second_id, "originalName": "notes.txt", "size": 5, "contentType": "text/plain"})
    );
    let ids =
        app.get(&format!("/v1/views/{view}/records?fetchFileOption=id")).assert_status(200).clone();
    assert_eq!(ids[0]["cells"][0]["value"], json!([id, second_id]));

    // Delete takes the id out of the cell.
    let path = format!("/v1/views/{view}/files?recordId=menu.start&columnId=shots");
    let res = app.delete_with(&path, &json!({"ids": [id]}));
    assert_eq!((res.status, res.text.as_str()), (204, ""));
    assert_eq!(cell(&record(&app, &view), "shots")["value"], json!([second_id]));
    app.delete_with(&path, &json!([second_id])).assert_status(204);
    assert_eq!(cell(&record(&app, &view), "shots")["value"], json!([]));

    let app = app.restart();
    assert_eq!(app.get(&format!("/v1/views/{view}/files/{id}")).bytes, png.to_vec());
}

#[test]
fn bad_uploads_are_refused_and_leave_nothing() {
    let app = spawn_app();
    let view = grid(&app);
    let before = app.snapshot(&format!("/v1/views/{view}/records"));
    let path = format!("/v1/views/{view}/files");
    let to_text = multipart(&[
        ("recordId", None, b"menu.start"),
        ("columnId", None, b"en"),
        ("file", Some(("a.png", "image/png")), b"x"),
    ]);
    post_multipart(&app, &path, to_text).assert_error(400, "columnIsNotFilesType");
    upload(&app, &view, "nope", "a.png", b"x").assert_error(404, "nonexistentRecordId");
    let no_record =
        multipart(&[("columnId", None, b"shots"), ("file", Some(("a.png", "image/png")), b"x")]);
    post_multipart(&app, &path, no_record).assert_error(400, "requestParameterMissing");
    let no_file = multipart(&[("recordId", None, b"menu.start"), ("columnId", None, b"shots")]);
    post_multipart(&app, &path, no_file).assert_error(400, "badRequest");
    app.raw(Method::POST, &path, "application/json", b"{}".to_vec())
        .assert_error(415, "unsupportedMediaType");
    let mut big = vec![b'x'; 100 * 1024 * 1024 + 1];
    big[0] = b'y';
    upload(&app, &view, "menu.start", "big.bin", &big).assert_error(413, "payloadTooLarge");
    drop(big);
    assert_eq!(stored_files(&app), 0, "nothing written");
    app.assert_unchanged(&format!("/v1/views/{view}/records"), &before);

    app.get(&format!("/v1/views/{view}/files/nosuchfile.png")).assert_error(404, "fileIsNotFound");
    let delete = format!("/v1/views/{view}/files?recordId=menu.start&columnId=shots");
    app.call(Method::DELETE, &delete, Some(&app.key), None).assert_error(400, "requestBodyMissing");
    app.delete_with(&format!("/v1/views/{view}/files?columnId=shots"), &json!({"ids": []}))
        .assert_error(400, "requestParameterMissing");
}

#[test]
fn a_file_is_not_served_through_another_grid() {
    let app = spawn_app();
    let view = grid(&app);
    let file = upload(&app, &view, "menu.start", "a.png", b"bytes").assert_status(201).clone();
    let other = grid(&app);
    let id = file["id"].as_str().expect("id");
    app.get(&format!("/v1/views/{other}/files/{id}")).assert_error(404, "fileIsNotFound");
    let reader = app.create_key(&["read"], json!({"all": true}));
    let body = multipart(&[
        ("recordId", None, b"menu.start"),
        ("columnId", None, b"shots"),
        ("file", Some(("a.png", "image/png")), b"x"),
    ]);
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let req = app
        .request(Method::POST, &format!("/v1/views/{view}/files"), Some(&reader))
        .header("Content-Type", content_type.as_str())
        .body(body);
    app.send(req).assert_error(403, "accessDenied");
}
