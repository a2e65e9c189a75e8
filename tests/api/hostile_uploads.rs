//! Hostile uploads (issue 16): CSV imports, multipart bodies and zips built to exhaust memory
//! or time. Each test sends the hostile request and checks its status and code, that
//! `/healthz` still answers quickly, and that nothing changed: no records, no files under the
//! data directory's `files/` and `imports/`, no backups or file metadata in the catalogue.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::files::{multipart, post_multipart, Part, BOUNDARY};
use super::helpers::{spawn_app, spawn_app_with, Resp, TestApp};

/// A grid with text columns `c0`..`c<n>` (named `C0`..), no records: (grid id, view id).
fn text_grid(app: &TestApp, columns: usize) -> (String, String) {
    let (grid, view) = app.create_grid("hostile");
    for i in 0..columns {
        let column = json!({"id": format!("c{i}"), "name": format!("C{i}"), "type": "singleLine"});
        app.create_column(&view, column);
    }
    (grid, view)
}

/// The current resident set of this process (the server runs inside it), in bytes.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The entries of `<data dir>/<dir>` (none after a refused upload).
fn entries(app: &TestApp, dir: &str) -> Vec<String> {
    std::fs::read_dir(app.data_dir.join(dir))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into()).collect())
        .unwrap_or_default()
}

/// Nothing changed: no records in `view`, no backups of `grid`, nothing under `files/` and
/// `imports/`, and the server still answers.
#[track_caller]
fn assert_untouched(app: &TestApp, grid: &str, view: &str) {
    app.assert_healthy();
    assert_eq!(app.records(view), Vec::<Value>::new(), "no records were written");
    let backups = app.get(&format!("/v1/grids/{grid}/backups")).assert_status(200).clone();
    assert_eq!(backups, json!([]), "no backup was stored");
    assert_eq!(entries(app, "files"), Vec::<String>::new(), "nothing under files/");
    assert_eq!(entries(app, "imports"), Vec::<String>::new(), "nothing under imports/");
}

/// Posts an import of `csv` with an optional `importRequest`.
fn import(app: &TestApp, view: &str, csv: &[u8], request: Option<&Value>) -> Resp {
    let text = request.map(Value::to_string).unwrap_or_default();
    let mut parts: Vec<Part<'_>> =
        vec![("file", Some(("hostile.csv", "application/octet-stream")), csv)];
    if request.is_some() {
        parts.push(("importRequest", None, text.as_bytes()));
    }
    post_multipart(app, &format!("/v1/views/{view}/import"), multipart(&parts))
}

/// The import was refused at request time with 400 naming each of `needles`.
#[track_caller]
fn refused(res: &Resp, needles: &[&str]) {
    res.assert_error(400, "badRequest");
    let message = res.body["message"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(message.contains(needle), "{message:?} does not name {needle:?}");
    }
}

/// The import's task failed; its error message.
#[track_caller]
fn task_failed(app: &TestApp, res: &Resp) -> String {
    res.assert_status(202);
    let task = app.wait_task(res.body["id"].as_str().expect("task id"));
    assert_eq!(task["status"], json!("failed"), "{task}");
    assert_eq!(task["error"]["code"], json!("badRequest"), "{task}");
    task["error"]["message"].as_str().expect("message").to_owned()
}

#[test]
fn two_file_columns_mapped_to_one_target_are_refused_at_request_time() {
    let app = spawn_app();
    let (grid, view) = text_grid(&app, 2);
    // By name and by id: both are c0.
    let res = import(&app, &view, b"C0,c0\na,b\n", None);
    refused(&res, &["file column 1 (\"C0\")", "file column 2 (\"c0\")", "column \"c0\""]);
    assert_untouched(&app, &grid, &view);
    // The record id twice.
    let res = import(&app, &view, b"_recordId,C1,Record ID\nr1,a,r2\n", None);
    refused(&res, &["file column 1", "file column 3", "record id"]);
    assert_untouched(&app, &grid, &view);
    // Two mappings to one column.
    let mappings = json!({"withHeader": false, "columnMappings": [
        {"columnId": "c1", "fileColumnIndex": 0}, {"columnId": "c1", "fileColumnIndex": 4}]});
    let res = import(&app, &view, b"a,b,c,d,e\n", Some(&mappings));
    refused(&res, &["file column 1", "file column 5", "column \"c1\""]);
    // A hostile header: one column a hundred thousand times.
    let header = vec!["C0"; 100_000].join(",");
    let res = import(&app, &view, format!("{header}\n").as_bytes(), None);
    res.assert_error(400, "badRequest");
    assert!(res.text.len() < 4096, "the refusal is short: {} bytes", res.text.len());
    assert_untouched(&app, &grid, &view);
    // One of each imports.
    let res = import(&app, &view, b"C0,c1\na,b\n", None);
    res.assert_status(202);
    let task = app.wait_task(res.body["id"].as_str().expect("task id"));
    assert_eq!(task["status"], json!("successful"), "{task}");
    assert_eq!(app.records(&view).len(), 1);
}

#[test]
fn rows_and_headers_over_the_read_limits_are_refused() {
    let app = spawn_app();
    let (grid, view) = text_grid(&app, 2);
    // More fields than the view's columns + 64: at request time, in the header.
    let wide = ",".repeat(2 + 64);
    refused(&import(&app, &view, format!("C0{wide}\n").as_bytes(), None), &["row 1", "66 fields"]);
    assert_untouched(&app, &grid, &view);
    // A field over 1 MiB in the header, then in a data row (the task fails naming it).
    let big = "x".repeat(1024 * 1024 + 1);
    refused(&import(&app, &view, format!("C0,{big}\n").as_bytes(), None), &["row 1, column 2"]);
    assert_untouched(&app, &grid, &view);
    let csv = format!("C0,C1\na,b\nc,\"{big}\"\n");
    let message = task_failed(&app, &import(&app, &view, csv.as_bytes(), None));
    assert!(message.contains("row 3, column 2") && message.contains("1048576"), "{message}");
    assert_untouched(&app, &grid, &view);
    // A row over 8 MiB of quoted text (a runaway quote).
    let mut csv = b"C0,C1\na,\"".to_vec();
    csv.extend(std::iter::repeat_n(b'y', 9 * 1024 * 1024));
    let message = task_failed(&app, &import(&app, &view, &csv, None));
    assert!(message.contains("row 2 is longer than 8388608 bytes"), "{message}");
    assert_untouched(&app, &grid, &view);
    // More than a million data rows (2 MB of file).
    let mut csv = b"C0\n".to_vec();
    csv.extend(b"a\n".repeat(1_000_001));
    let message = task_failed(&app, &import(&app, &view, &csv, None));
    assert!(message.contains("more than 1000000 data rows"), "{message}");
    assert_untouched(&app, &grid, &view);
}

#[test]
fn a_failed_import_keeps_its_first_hundred_problems_in_a_bounded_message() {
    let app = spawn_app();
    let (grid, view) = text_grid(&app, 0);
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    // 20,000 rows with a bad number and a long text each.
    let long = "z".repeat(2000);
    let mut csv = String::from("N,_recordId\n");
    for i in 0..20_000 {
        csv.push_str(&format!("not a number {long},r{i}\n"));
    }
    // Without a backup: the rows are checked by the grid after the backup would be stored.
    let request = json!({"backup": false});
    let message = task_failed(&app, &import(&app, &view, csv.as_bytes(), Some(&request)));
    assert!(message.len() <= 64 * 1024, "{} bytes", message.len());
    assert!(message.starts_with("20000 problems were found"), "{}", &message[..200]);
    assert!(message.contains("row 2, column \"n\""), "{}", &message[..400]);
    assert!(!message.contains("row 103,"), "at most 100 problems are listed");
    assert!(message.ends_with(" more problems"), "{}", &message[message.len() - 200..]);
    let tail = message.rsplit("... and ").next().unwrap_or_default();
    let more: usize = tail.trim_end_matches(" more problems").parse().expect("a count");
    let listed = message.matches("; row ").count();
    assert_eq!(listed + more, 20_000, "{listed} listed");
    assert_untouched(&app, &grid, &view);
}

// ---- multipart ----

/// A grid with a files column `shots` and record `r1`: (grid id, view id).
fn files_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("files");
    app.create_column(&view, json!({"id": "shots", "name": "Shots", "type": "files"}));
    (grid, view)
}

/// No file was stored: nothing under `files/`, the record `r1` (if any) has no files.
#[track_caller]
fn assert_no_files(app: &TestApp, view: &str) {
    app.assert_healthy();
    assert_eq!(entries(app, "files"), Vec::<String>::new(), "nothing under files/");
    assert_eq!(entries(app, "imports"), Vec::<String>::new(), "nothing under imports/");
    for record in app.records(view) {
        let cells = record["cells"].as_array().cloned().unwrap_or_default();
        let empty = |v: &Value| v.is_null() || v.as_array().is_some_and(Vec::is_empty);
        assert!(cells.iter().all(|c| empty(&c["value"])), "{record}");
    }
}

#[test]
fn multipart_bodies_with_too_many_or_too_large_text_parts_are_refused() {
    let app = spawn_app();
    let (grid, view) = text_grid(&app, 1);
    let import_path = format!("/v1/views/{view}/import");
    // 65 parts, each tiny and unknown.
    let names: Vec<String> = (0..65).map(|i| format!("junk{i}")).collect();
    let mut parts: Vec<Part<'_>> = names.iter().map(|n| (n.as_str(), None, &b"x"[..])).collect();
    parts.push(("file", Some(("a.csv", "application/octet-stream")), b"C0\na\n"));
    let res = post_multipart(&app, &import_path, multipart(&parts));
    res.assert_error(400, "badRequest");
    assert!(res.text.contains("more than 64 multipart parts"), "{}", res.text);
    assert_untouched(&app, &grid, &view);
    // Twenty importRequest parts of 60 KiB each: over 1 MiB of text parts together.
    let padded = format!("{{\"withHeader\": true}}{}", " ".repeat(60 * 1024));
    let mut parts: Vec<Part<'_>> =
        vec![("file", Some(("a.csv", "application/octet-stream")), b"C0\na\n")];
    parts.extend((0..20).map(|_| ("importRequest", None, padded.as_bytes())));
    let res = post_multipart(&app, &import_path, multipart(&parts));
    res.assert_error(413, "payloadTooLarge");
    assert!(res.text.contains("1048576 bytes together"), "{}", res.text);
    assert_untouched(&app, &grid, &view);
    // The same through a zip upload: a 1 MiB fileMappings and a path.
    let (_, files_view) = files_grid(&app);
    let mappings = format!("{{\"r1\": [\"a\"]}}{}", " ".repeat(1024 * 1024 - 12));
    let parts: Vec<Part<'_>> = vec![
        ("columnId", None, b"shots"),
        ("fileMappings", None, mappings.as_bytes()),
        ("path", None, b"somewhere"),
        ("file", Some(("a.zip", "application/octet-stream")), b"PK\x05\x06"),
    ];
    let res = post_multipart(&app, &format!("/v1/views/{files_view}/files/zip"), multipart(&parts));
    res.assert_error(413, "payloadTooLarge");
    assert_no_files(&app, &files_view);
}

#[test]
fn unknown_parts_are_skipped_without_being_kept() {
    let app = spawn_app();
    let (_, view) = files_grid(&app);
    app.add_records(&view, json!([{"id": "r1"}]));
    let junk = vec![b'j'; 5 * 1024 * 1024];
    let parts: Vec<Part<'_>> = vec![
        ("comment", None, &junk),
        ("recordId", None, b"r1"),
        ("columnId", None, b"shots"),
        ("file", Some(("a.txt", "application/octet-stream")), b"hello"),
        ("other", Some(("b.bin", "application/octet-stream")), &junk),
    ];
    let res = post_multipart(&app, &format!("/v1/views/{view}/files"), multipart(&parts));
    res.assert_status(201);
    assert_eq!(entries(&app, "files").len(), 1, "only the file part was stored");
    let (_, text_view) = text_grid(&app, 1);
    let parts: Vec<Part<'_>> = vec![
        ("comment", None, &junk),
        ("file", Some(("a.csv", "application/octet-stream")), b"C0\nhello\n"),
    ];
    let res = post_multipart(&app, &format!("/v1/views/{text_view}/import"), multipart(&parts));
    let task = app.wait_task(res.assert_status(202)["id"].as_str().expect("task id"));
    assert_eq!(task["status"], json!("successful"), "{task}");
    assert_eq!(app.records(&text_view).len(), 1);
}

/// Sends the head of a multipart upload and `sent` of its body, then stalls; the answer.
fn stall(app: &TestApp, path: &str, body: &[u8], sent: usize) -> String {
    use std::io::Write;
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: ApiKey {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        app.key,
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("writes the head");
    stream.write_all(&body[..sent]).expect("writes part of the body");
    crate::helpers::read_answer(&mut stream, Duration::from_secs(10))
}

#[test]
fn a_multipart_body_that_stalls_is_answered_408_and_changes_nothing() {
    let app = spawn_app_with(|config| config.body_timeout_ms = 300);
    let (grid, view) = text_grid(&app, 1);
    let csv = b"C0\na\n".repeat(1000);
    let body = multipart(&[
        ("importRequest", None, b"{}"),
        ("file", Some(("a.csv", "application/octet-stream")), &csv),
    ]);
    // Stalled inside the file part, then inside the text part.
    for sent in [body.len() / 2, 60] {
        let started = Instant::now();
        let text = stall(&app, &format!("/v1/views/{view}/import"), &body, sent);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("\"requestTimeout\""), "{text}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_untouched(&app, &grid, &view);
    }
    let (_, files_view) = files_grid(&app);
    app.add_records(&files_view, json!([{"id": "r1"}]));
    let body = multipart(&[
        ("recordId", None, b"r1"),
        ("columnId", None, b"shots"),
        ("file", Some(("a.bin", "application/octet-stream")), &csv),
    ]);
    let text = stall(&app, &format!("/v1/views/{files_view}/files"), &body, body.len() - 100);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert_no_files(&app, &files_view);
}

// ---- zip uploads ----

/// A zip of deflated `(name, content)` entries.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, content) in entries {
        zip.start_file(*name, options).expect("entry starts");
        zip.write_all(content).expect("entry written");
    }
    zip.finish().expect("zip finished").into_inner()
}

fn upload_zip(app: &TestApp, view: &str, mappings: &str, zip: &[u8]) -> Resp {
    let body = multipart(&[
        ("columnId", None, b"shots"),
        ("fileMappings", None, mappings.as_bytes()),
        ("file", Some(("files.zip", "application/octet-stream")), zip),
    ]);
    post_multipart(app, &format!("/v1/views/{view}/files/zip"), body)
}

#[track_caller]
fn zip_refused(res: &Resp, status: u16, code: &str, needle: &str) {
    res.assert_error(status, code);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains(needle)), "{}", res.text);
}

#[test]
fn zip_mappings_naming_an_entry_twice_or_too_many_names_are_refused() {
    let app = spawn_app();
    let (_, view) = files_grid(&app);
    app.add_records(&view, json!([{"id": "r1"}, {"id": "r2"}]));
    let zip = zip_of(&[("a.txt", b"a"), ("b.txt", b"b")]);
    let twice = json!({"r1": ["a.txt", "b.txt", "a.txt"]}).to_string();
    zip_refused(
        &upload_zip(&app, &view, &twice, &zip),
        400,
        "badRequest",
        "\"a.txt\" more than once",
    );
    assert_no_files(&app, &view);
    let names: Vec<String> = (0..10_001).map(|i| format!("f{i}")).collect();
    let many = json!({"r1": names[..5000], "r2": names[5000..]}).to_string();
    zip_refused(&upload_zip(&app, &view, &many, &zip), 400, "badRequest", "more than 10000 files");
    assert_no_files(&app, &view);
    // Each record may take the same entry once.
    let shared = json!({"r1": ["a.txt"], "r2": ["a.txt"]}).to_string();
    upload_zip(&app, &view, &shared, &zip).assert_status(201);
    assert_eq!(entries(&app, "files").len(), 2);
}

#[test]
fn many_small_entries_cannot_add_up_to_a_bomb() {
    let app = spawn_app();
    let (_, view) = files_grid(&app);
    app.add_records(&view, json!([{"id": "r1"}]));
    // 40 entries of 1 MiB of zeros: each under the per-entry ratio floor, about 40 KiB packed.
    let zeros = vec![0u8; 1024 * 1024];
    let names: Vec<String> = (0..40).map(|i| format!("z{i}.bin")).collect();
    let items: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &zeros[..])).collect();
    let zip = zip_of(&items);
    assert!(zip.len() < 100 * 1024, "{} bytes", zip.len());
    let mappings = json!({"r1": names}).to_string();
    let res = upload_zip(&app, &view, &mappings, &zip);
    zip_refused(&res, 413, "payloadTooLarge", "200 times the upload");
    assert_no_files(&app, &view);
    // Two of them stay under 200 times the upload (and the 1 MiB floor).
    let mappings = json!({"r1": ["z0.bin"]}).to_string();
    upload_zip(&app, &view, &mappings, &zip).assert_status(201);
}

#[test]
fn a_zip_declaring_more_entries_than_allowed_is_refused_before_its_directory_is_read() {
    let app = spawn_app();
    let (_, view) = files_grid(&app);
    app.add_records(&view, json!([{"id": "r1"}]));
    let mappings = json!({"r1": ["a.txt"]}).to_string();
    // An end record claiming 65,535 entries in 22 bytes.
    let mut eocd = b"PK\x05\x06\0\0\0\0".to_vec();
    eocd.extend_from_slice(&u16::MAX.to_le_bytes());
    eocd.extend_from_slice(&u16::MAX.to_le_bytes());
    eocd.extend_from_slice(&[0; 10]);
    let started = Instant::now();
    zip_refused(
        &upload_zip(&app, &view, &mappings, &eocd),
        413,
        "payloadTooLarge",
        "65535 entries",
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_no_files(&app, &view);
    // A zip64 end record claiming 2^40 entries.
    let mut zip = vec![0u8; 100];
    zip[..4].copy_from_slice(b"PK\x06\x06");
    zip[32..40].copy_from_slice(&(1u64 << 40).to_le_bytes());
    zip.extend_from_slice(b"PK\x06\x07\0\0\0\0");
    zip.extend_from_slice(&0u64.to_le_bytes());
    zip.extend_from_slice(&1u32.to_le_bytes());
    zip.extend_from_slice(&eocd);
    zip_refused(
        &upload_zip(&app, &view, &mappings, &zip),
        413,
        "payloadTooLarge",
        "1099511627776 entries",
    );
    assert_no_files(&app, &view);
    // A real zip still uploads.
    upload_zip(&app, &view, &mappings, &zip_of(&[("a.txt", b"fine")])).assert_status(201);
}

/// Peak RSS of a 100 MB hostile CSV import: 10 mapped one-letter columns per row (5 million
/// rows, 50 million cells). Run by hand:
/// `cargo test --test api hostile_uploads::peak_rss -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, run by hand"]
fn peak_rss_of_a_100_mb_hostile_import() {
    let app = spawn_app();
    let (_, view) = text_grid(&app, 10);
    let header = (0..10).map(|i| format!("C{i}")).collect::<Vec<_>>().join(",");
    let mut csv = format!("{header}\n").into_bytes();
    while csv.len() < 100 * 1024 * 1024 - 64 {
        csv.extend_from_slice(b"a,a,a,a,a,a,a,a,a,a\n");
    }
    let body = multipart(&[("file", Some(("hostile.csv", "application/octet-stream")), &csv)]);
    drop(csv);
    let before = rss_bytes();
    let limit = 6u64 << 30;
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let watch = peak.clone();
    let started = Instant::now();
    std::thread::spawn(move || loop {
        let now = rss_bytes();
        watch.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
        if now > limit {
            eprintln!("RSS passed {limit} bytes after {:?}: stopping", started.elapsed());
            std::process::exit(2);
        }
        std::thread::sleep(Duration::from_millis(10));
    });
    let res = post_multipart(&app, &format!("/v1/views/{view}/import"), body);
    let task = if res.status == 202 {
        app.wait_task(res.body["id"].as_str().expect("task id"))
    } else {
        res.body.clone()
    };
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    let message = task["error"]["message"].as_str().unwrap_or_default();
    eprintln!(
        "status {} task {} ({}...), {:?}; RSS before {} MiB, peak {} MiB, added {} MiB",
        res.status,
        task["status"],
        message.chars().take(200).collect::<String>(),
        started.elapsed(),
        before >> 20,
        peak >> 20,
        (peak - before) >> 20
    );
}
