//! Files (decisions.md section 10): upload into a files cell, download with content type and
//! name, delete from the cell, `fetchFileOption` on listings; hostile and oversized uploads;
//! zip uploads (zip slip, zip bombs, lying headers, bad mappings), each refusal checked to
//! leave no bytes, no metadata and no cell change; a deleted grid's files removed.

use reqwest::Method;
use serde_json::{json, Value};

use super::helpers::{cell, copy_dir, spawn_app, spawn_app_with, Resp, TestApp};

pub const BOUNDARY: &str = "gridd-files-test-boundary-93ab";

/// One multipart part: its name, the file name and content type of a file part, its content.
pub type Part<'a> = (&'a str, Option<(&'a str, &'a str)>, &'a [u8]);

/// A multipart body of `parts`.
pub fn multipart(parts: &[Part<'_>]) -> Vec<u8> {
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

pub fn post_multipart(app: &TestApp, path: &str, body: Vec<u8>) -> Resp {
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    app.raw(Method::POST, path, &content_type, body)
}

/// Uploads `content` as `name` into the files cell `shots` of `record`.
pub(crate) fn upload(app: &TestApp, view: &str, record: &str, name: &str, content: &[u8]) -> Resp {
    let body = multipart(&[
        ("recordId", None, record.as_bytes()),
        ("columnId", None, b"shots"),
        ("file", Some((name, "image/png")), content),
    ]);
    post_multipart(app, &format!("/v1/views/{view}/files"), body)
}

/// A grid with a files column `shots` and a text column `en`, and record `menu.start`.
pub(crate) fn grid(app: &TestApp) -> String {
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
    // A client that takes only octet streams (the service's generated SDKs) gets the bytes
    // labelled so; one that takes the file's type, or anything, gets that type.
    let path = format!("/v1/views/{view}/files/{id}");
    for (accept, served) in [
        ("application/octet-stream", "application/octet-stream"),
        ("application/json, application/octet-stream", "application/octet-stream"),
        ("image/png, application/octet-stream", "image/png"),
        ("image/*", "image/png"),
        ("*/*", "image/png"),
        ("text/html", "image/png"),
        ("image/png;q=0, application/octet-stream", "application/octet-stream"),
    ] {
        let req = app.request(Method::GET, &path, Some(&app.key)).header("Accept", accept);
        let res = app.send(req);
        assert_eq!((res.status, res.header("content-type")), (200, Some(served)), "{accept}");
        assert_eq!(res.bytes, png.to_vec(), "{accept}");
    }

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
    // An id written by a client with no file behind it keeps the shape each option gives.
    let unknown =
        json!([{"id": "menu.quit", "cells": [{"columnId": "shots", "value": ["x1.png"]}]}]);
    app.post(&format!("/v1/views/{view}/records"), &unknown).assert_status(201);
    let all = app.get(&format!("/v1/views/{view}/records?fetchFileOption=all"));
    assert_eq!(
        all.assert_status(200)[1]["cells"][0]["value"],
        json!([{"id": "x1.png", "originalName": "x1.png", "size": 0,
                "contentType": "application/octet-stream"}])
    );
    let names = app.get(&format!("/v1/views/{view}/records?fetchFileOption=name"));
    assert_eq!(names.assert_status(200)[1]["cells"][0]["value"], json!(["x1.png"]));

    // Delete takes the id out of the cell.
    let path = format!("/v1/views/{view}/files?recordId=menu.start&columnId=shots");
    let res = app.delete_with(&path, &json!({"ids": [id]}));
    assert_eq!((res.status, res.text.as_str()), (204, ""));
    assert_eq!(cell(&record(&app, &view), "shots")["value"], json!([second_id]));
    app.delete_with(&path, &json!([second_id])).assert_status(204);
    assert_eq!(cell(&record(&app, &view), "shots")["value"], json!([]));

    // Taken out of its cell, a file is no longer served (issue 16: deleted means deleted).
    let app = app.restart();
    app.get(&format!("/v1/views/{view}/files/{id}")).assert_error(404, "fileIsNotFound");
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

// ---- zip uploads ----

/// An entry of a test zip.
enum Item<'a> {
    Deflated(&'a str, &'a [u8]),
    Stored(&'a str, &'a [u8]),
    Symlink(&'a str, &'a str),
    Dir(&'a str),
}

/// A zip archive of `items`, written with the zip crate.
fn zip_of(items: &[Item<'_>]) -> Vec<u8> {
    use std::io::Write;
    use zip::write::SimpleFileOptions;
    use zip::CompressionMethod::{Deflated, Stored};
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default();
    for item in items {
        match item {
            Item::Deflated(name, content) | Item::Stored(name, content) => {
                let method = if matches!(item, Item::Deflated(..)) { Deflated } else { Stored };
                zip.start_file(*name, options.compression_method(method)).expect("entry starts");
                zip.write_all(content).expect("entry written");
            }
            Item::Symlink(name, target) => zip.add_symlink(*name, *target, options).expect("link"),
            Item::Dir(name) => zip.add_directory(*name, options).expect("directory"),
        }
    }
    zip.finish().expect("zip finished").into_inner()
}

/// `zip` with its first entry's uncompressed size set to `size` in its local and central
/// headers: a header that lies.
fn lie_about_size(mut zip: Vec<u8>, size: u32) -> Vec<u8> {
    assert_eq!(&zip[..4], b"PK\x03\x04", "the first entry's local header starts the zip");
    zip[22..26].copy_from_slice(&size.to_le_bytes());
    let end = zip.len() - 22;
    assert_eq!(&zip[end..end + 4], b"PK\x05\x06", "the end record closes the zip");
    let field: [u8; 4] = zip[end + 16..end + 20].try_into().expect("4 bytes");
    let central = u32::from_le_bytes(field) as usize;
    assert_eq!(&zip[central..central + 4], b"PK\x01\x02", "the central directory starts there");
    zip[central + 24..central + 28].copy_from_slice(&size.to_le_bytes());
    zip
}

/// `len` bytes that do not compress (xorshift).
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Posts `zip` with these `fileMappings` into the files column `shots`.
fn upload_zip(app: &TestApp, view: &str, mappings: &str, zip: &[u8]) -> Resp {
    let body = multipart(&[
        ("columnId", None, b"shots"),
        ("fileMappings", None, mappings.as_bytes()),
        ("file", Some(("files.zip", "application/zip")), zip),
    ]);
    post_multipart(app, &format!("/v1/views/{view}/files/zip"), body)
}

/// `grid` with a second record, `menu.quit`.
fn zip_grid(app: &TestApp) -> String {
    let view = grid(app);
    app.add_records(
        &view,
        json!([{"id": "menu.quit", "cells": [{"columnId": "en", "value": "Quit"}]}]),
    );
    view
}

/// The file metadata in the catalogue. Stops the server, and reads a copy of its data
/// directory (a killed server keeps its locks).
fn catalogued_files(app: TestApp) -> Vec<gridd::catalog::model::FileMeta> {
    use gridd::catalog::store::{load_all, EntityKind, SledCatalogStore};
    // sled's copy of the catalogue is written after the WAL and flushed lazily: a graceful stop
    // flushes it (after a crash the WAL would restore it at the next start).
    let (dir, _keep) = app.shut_down();
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(&dir, copy.path());
    let store = SledCatalogStore::open(sled::open(copy.path().join("db")).expect("sled opens"))
        .expect("the catalogue opens");
    load_all(&store, EntityKind::File).expect("files load")
}

/// Asserts that a refused zip upload answered `status`/`code` with `needle` in its message.
#[track_caller]
fn assert_refused(res: &Resp, status: u16, code: &str, needle: &str) {
    res.assert_error(status, code);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains(needle)), "{}", res.text);
}

#[test]
fn a_zip_puts_several_files_into_several_records() {
    let app = spawn_app();
    let view = zip_grid(&app);
    let earlier = upload(&app, &view, "menu.start", "old.png", b"old").assert_status(201).clone();
    let png = b"\x89PNG\r\n\x1a\n start screen".repeat(1000);
    let big = noise(300 * 1024);
    let zip = zip_of(&[
        Item::Dir("shots/"),
        Item::Deflated("shots/start.png", &png),
        Item::Stored("shots/quit.PNG", b"quit screen"),
        Item::Deflated("notes/big.bin", &big),
        Item::Deflated("notes/readme.txt", b"read me"),
        Item::Deflated("unmapped.txt", b"not asked for"),
    ]);
    let mappings = json!({
        "menu.start": ["shots/start.png", "notes/readme.txt", "notes/big.bin"],
        "menu.quit": ["shots/quit.PNG"],
    });
    let res = upload_zip(&app, &view, &mappings.to_string(), &zip);
    let body = res.assert_status(201).clone();
    assert_eq!(res.header("content-type"), Some("application/json"));
    let records = body.as_array().expect("a list of records");
    assert_eq!(records.len(), 2, "{body}");
    assert_eq!((&records[0]["id"], &records[1]["id"]), (&json!("menu.start"), &json!("menu.quit")));
    for record in records {
        assert_eq!(record["cells"].as_array().map(Vec::len), Some(1), "{record}");
        assert_eq!(record["cells"][0]["columnId"], json!("shots"));
    }
    let start = cell(&records[0], "shots")["value"].as_array().expect("ids").clone();
    let quit = cell(&records[1], "shots")["value"].as_array().expect("ids").clone();
    assert_eq!((start.len(), quit.len()), (4, 1), "{body}");
    assert_eq!(start[0], earlier["id"], "the new ids follow the ones already there");
    let id = |v: &Value| v.as_str().expect("an id").to_owned();
    let (png_id, txt_id, bin_id, quit_id) =
        (id(&start[1]), id(&start[2]), id(&start[3]), id(&quit[0]));
    assert!(png_id.len() == 18 && png_id.ends_with(".png"), "{png_id}");
    assert!(txt_id.ends_with(".txt") && bin_id.ends_with(".bin") && quit_id.ends_with(".png"));
    let listed = app.records(&view);
    assert_eq!(cell(&listed[0], "shots")["value"], json!(start));
    assert_eq!(cell(&listed[1], "shots")["value"], json!(quit));

    let download = |id: &str| app.get(&format!("/v1/views/{view}/files/{id}"));
    let res = download(&png_id);
    assert_eq!((res.status, res.header("content-type")), (200, Some("image/png")));
    assert_eq!(res.bytes, png);
    let disposition = res.header("content-disposition").expect("a disposition");
    assert!(disposition.contains("filename=\"start.png\""), "{disposition}");
    let res = download(&bin_id);
    assert_eq!(res.header("content-type"), Some("application/octet-stream"));
    assert_eq!(res.header("content-length"), Some(big.len().to_string().as_str()));
    assert!(res.bytes == big, "a file of several chunks streams whole");
    assert_eq!(download(&txt_id).header("content-type"), Some("text/plain"));
    assert_eq!(download(&quit_id).bytes, b"quit screen");
    let all = app.get(&format!("/v1/views/{view}/records?fetchFileOption=all"));
    assert_eq!(
        all.assert_status(200)[1]["cells"][0]["value"][0],
        json!({"id": quit_id, "originalName": "quit.PNG", "size": 11, "contentType": "image/png"})
    );
    assert_eq!(stored_files(&app), 5, "the four files and the earlier one; no zip, no partials");
    let metas = catalogued_files(app);
    assert_eq!(metas.len(), 5);
    let meta = metas.iter().find(|m| m.id == txt_id).expect("catalogued");
    assert_eq!((meta.original_name.as_str(), meta.size), ("readme.txt", 7));
}

/// Asserts a refused upload left no bytes in `files/` and no change in the records; the
/// catalogue is checked by the caller at the end (`catalogued_files`).
#[track_caller]
fn assert_nothing_written(app: &TestApp, view: &str, before: &Value) {
    assert_eq!(stored_files(app), 0, "no file bytes are left");
    app.assert_unchanged(&format!("/v1/views/{view}/records"), before);
}

#[test]
fn zip_entries_that_escape_the_archive_are_refused() {
    let app = spawn_app();
    let view = zip_grid(&app);
    let before = app.snapshot(&format!("/v1/views/{view}/records"));
    let mappings = json!({"menu.start": ["ok.txt"]}).to_string();
    let ok = Item::Deflated("ok.txt", b"fine");
    for (bad, name) in [
        (Item::Deflated("../evil.txt", b"x"), "../evil.txt"),
        (Item::Deflated("shots/../../evil.txt", b"x"), "shots/../../evil.txt"),
        (Item::Deflated("/abs.txt", b"x"), "/abs.txt"),
        (Item::Deflated("\\abs.txt", b"x"), "\\abs.txt"),
        (Item::Deflated("C:\\abs.txt", b"x"), "C:\\abs.txt"),
        (Item::Symlink("link.txt", "/etc/passwd"), "link.txt"),
    ] {
        let zip = zip_of(&[Item::Deflated("ok.txt", b"fine"), bad]);
        let res = upload_zip(&app, &view, &mappings, &zip);
        assert_refused(&res, 400, "badRequest", &format!("\"{name}\""));
        assert_nothing_written(&app, &view, &before);
    }
    // Mapping the link itself is refused the same way.
    let zip = zip_of(&[ok, Item::Symlink("link.txt", "ok.txt")]);
    let res = upload_zip(&app, &view, &json!({"menu.start": ["link.txt"]}).to_string(), &zip);
    assert_refused(&res, 400, "badRequest", "symbolic link");
    assert_nothing_written(&app, &view, &before);
    assert_eq!(catalogued_files(app), Vec::new());
}

#[test]
fn zips_over_the_unpacked_limit_are_refused_even_when_their_headers_lie() {
    let app = spawn_app_with(|c| c.zip_unpacked_limit = 1024 * 1024);
    let view = zip_grid(&app);
    let before = app.snapshot(&format!("/v1/views/{view}/records"));
    let part = noise(600 * 1024);
    let two = zip_of(&[Item::Deflated("a.bin", &part), Item::Deflated("b.bin", &part)]);
    let mappings = json!({"menu.start": ["a.bin"], "menu.quit": ["b.bin"]}).to_string();
    assert_refused(&upload_zip(&app, &view, &mappings, &two), 413, "payloadTooLarge", "unpack");
    assert_nothing_written(&app, &view, &before);
    // The same entry for two records counts twice.
    let one = zip_of(&[Item::Deflated("a.bin", &part)]);
    let twice = json!({"menu.start": ["a.bin"], "menu.quit": ["a.bin"]}).to_string();
    assert_refused(&upload_zip(&app, &view, &twice, &one), 413, "payloadTooLarge", "unpack");
    assert_nothing_written(&app, &view, &before);

    // Headers that say 10 bytes for 2 MiB: caught by counting while extracting, after `ok.txt`
    // was extracted (and then removed).
    let liar = zip_of(&[
        Item::Stored("liar.bin", &noise(2 * 1024 * 1024)),
        Item::Deflated("ok.txt", b"fine"),
    ]);
    let liar = lie_about_size(liar, 10);
    let mappings = json!({"menu.start": ["ok.txt"], "menu.quit": ["liar.bin"]}).to_string();
    let res = upload_zip(&app, &view, &mappings, &liar);
    assert_refused(&res, 413, "payloadTooLarge", "more than the 1048576 bytes allowed");
    assert_nothing_written(&app, &view, &before);
    assert_eq!(catalogued_files(app), Vec::new());
}

#[test]
fn zip_entries_over_the_compression_ratio_are_refused() {
    let app = spawn_app();
    let view = zip_grid(&app);
    let before = app.snapshot(&format!("/v1/views/{view}/records"));
    let zeros = vec![0; 4 * 1024 * 1024];
    let mappings = json!({"menu.start": ["ok.txt", "zeros.bin"]}).to_string();
    let bomb = zip_of(&[Item::Deflated("ok.txt", b"fine"), Item::Deflated("zeros.bin", &zeros)]);
    assert_refused(&upload_zip(&app, &view, &mappings, &bomb), 413, "payloadTooLarge", "zip bomb");
    assert_nothing_written(&app, &view, &before);
    // Declared as 1000 bytes, so only the count while extracting sees the ratio.
    let liar = lie_about_size(zip_of(&[Item::Deflated("zeros.bin", &zeros)]), 1000);
    let mappings = json!({"menu.start": ["zeros.bin"]}).to_string();
    assert_refused(&upload_zip(&app, &view, &mappings, &liar), 413, "payloadTooLarge", "zip bomb");
    assert_nothing_written(&app, &view, &before);
    // 1 MiB of zeros is under the ratio rule's floor, and within the default limit.
    let small = zip_of(&[Item::Deflated("zeros.bin", &zeros[..1024 * 1024])]);
    upload_zip(&app, &view, &mappings, &small).assert_status(201);
    assert_eq!(stored_files(&app), 1);
}

#[test]
fn bad_zip_uploads_are_refused_and_leave_nothing() {
    let app = spawn_app();
    let view = zip_grid(&app);
    let before = app.snapshot(&format!("/v1/views/{view}/records"));
    let zip = zip_of(&[Item::Deflated("a.txt", b"a"), Item::Dir("dir/")]);
    let mappings = json!({"menu.start": ["a.txt"]}).to_string();
    let refused = |mappings: &str, zip: &[u8], status: u16, code: &str, needle: &str| {
        assert_refused(&upload_zip(&app, &view, mappings, zip), status, code, needle);
        assert_nothing_written(&app, &view, &before);
    };
    refused(&mappings, b"PK\x03\x04 this is no zip", 400, "badRequest", "not a valid zip");
    refused(&mappings, &zip[..zip.len() / 2], 400, "badRequest", "not a valid zip");
    refused(
        &json!({"menu.start": ["b.txt", "dir/"]}).to_string(),
        &zip,
        400,
        "badRequest",
        "\"b.txt\"",
    );
    refused(&json!({"nope": ["a.txt"]}).to_string(), &zip, 404, "nonexistentRecordId", "nope");
    refused("not json", &zip, 400, "badRequest", "fileMappings");
    refused(r#"{"menu.start": "a.txt"}"#, &zip, 400, "badRequest", "fileMappings");
    refused("{}", &zip, 400, "badRequest", "fileMappings");

    let path = format!("/v1/views/{view}/files/zip");
    let send = |parts: &[Part<'_>]| post_multipart(&app, &path, multipart(parts));
    let file = ("file", Some(("f.zip", "application/zip")), zip.as_slice());
    let mapped = ("fileMappings", None, mappings.as_bytes());
    send(&[("columnId", None, b"shots"), file]).assert_error(400, "requestParameterMissing");
    send(&[mapped, file]).assert_error(400, "requestParameterMissing");
    send(&[("columnId", None, b"shots"), mapped]).assert_error(400, "badRequest");
    send(&[("columnId", None, b"en"), mapped, file]).assert_error(400, "columnIsNotFilesType");
    send(&[("columnId", None, b"nope"), mapped, file]).assert_error(404, "columnNotFoundInView");
    app.raw(Method::POST, &path, "application/json", b"{}".to_vec())
        .assert_error(415, "unsupportedMediaType");
    let mut big = vec![b'x'; 100 * 1024 * 1024 + 1];
    big[..4].copy_from_slice(b"PK\x03\x04");
    upload_zip(&app, &view, &mappings, &big).assert_error(413, "payloadTooLarge");
    drop(big);
    assert_nothing_written(&app, &view, &before);

    // Write privilege, and the Team or Enterprise plan.
    let reader = app.create_key(&["read"], json!({"all": true}));
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let body = multipart(&[("columnId", None, b"shots"), mapped, file]);
    let req = app.request(Method::POST, &path, Some(&reader));
    let req = req.header("Content-Type", content_type.as_str()).body(body.clone());
    app.send(req).assert_error(403, "accessDenied");
    let (company, owner, team) = app.tier_grid("team");
    let team_view = team["defaultAccessViewId"].as_str().expect("view");
    let column = json!({"id": "shots", "name": "Screenshots", "type": "files"});
    app.post_as(&owner, &format!("/v1/views/{team_view}/columns"), &column).assert_status(201);
    let record = json!([{"id": "menu.start"}]);
    app.post_as(&owner, &format!("/v1/views/{team_view}/records"), &record).assert_status(201);
    let company_id = company["id"].clone();
    app.patch(&format!("/admin/v1/companies/{company_id}"), &json!({"tier": "free"}))
        .assert_status(200);
    let req = app.request(Method::POST, &format!("/v1/views/{team_view}/files/zip"), Some(&owner));
    let res = app.send(req.header("Content-Type", content_type.as_str()).body(body));
    assert_refused(&res, 403, "accessDenied", "Team");
    assert_nothing_written(&app, &view, &before);
    assert_eq!(catalogued_files(app), Vec::new());
}

#[test]
fn deleting_a_grid_removes_its_files() {
    let app = spawn_app();
    let (grid_id, view) = app.create_grid("doomed");
    app.create_column(&view, json!({"id": "shots", "name": "Screenshots", "type": "files"}));
    app.add_records(&view, json!([{"id": "menu.start"}]));
    upload(&app, &view, "menu.start", "a.png", b"a").assert_status(201);
    let zip = zip_of(&[Item::Deflated("b.txt", b"b"), Item::Deflated("c.txt", b"c")]);
    let mappings = json!({"menu.start": ["b.txt", "c.txt"]}).to_string();
    upload_zip(&app, &view, &mappings, &zip).assert_status(201);
    let kept_view = grid(&app);
    let kept =
        upload(&app, &kept_view, "menu.start", "kept.png", b"kept").assert_status(201).clone();
    assert_eq!(stored_files(&app), 4);

    assert_eq!(app.delete(&format!("/v1/grids/{grid_id}")).status, 204);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while stored_files(&app) > 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(stored_files(&app), 1, "only the other grid's file is left");
    let id = kept["id"].as_str().expect("id");
    assert_eq!(app.get(&format!("/v1/views/{kept_view}/files/{id}")).bytes, b"kept");
    let metas = catalogued_files(app);
    assert_eq!(metas.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), [id]);
}
