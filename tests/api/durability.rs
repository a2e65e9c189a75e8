//! Durability end to end: every recovery path runs to the end on the first start after the
//! damage it handles (a torn WAL tail, a WAL ending before a snapshot's position, a damaged
//! newest snapshot generation, a branch without a snapshot rebuilt from its source, a WAL record
//! that does not decode), and every acknowledged write it can rebuild comes back.

use serde_json::{json, Value};

use crate::helpers::{copy_dir, spawn_app, start, TestApp, OWNER_KEY};

/// The byte offset where the last record of a WAL segment starts (frames are
/// `len u32 | crc u32 | lsn u64 | payload`).
fn last_record_start(bytes: &[u8]) -> usize {
    let mut at = 0;
    let mut last = 0;
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        if at + 16 + len > bytes.len() {
            break;
        }
        last = at;
        at += 16 + len;
    }
    last
}

fn wal_segment(dir: &std::path::Path) -> std::path::PathBuf {
    let mut segments: Vec<_> = std::fs::read_dir(dir.join("wal"))
        .expect("wal dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    segments.pop().expect("a WAL segment")
}

#[test]
fn a_damaged_last_wal_record_is_dropped_and_earlier_records_survive() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Durable");
    app.create_column(&view, json!({"id": "t", "name": "Text", "type": "singleLine"}));
    for i in 0..5 {
        let res = app.post(&format!("/v1/views/{view}/records"), &json!([{"id": format!("r{i}"), "cells": [{"columnId": "t", "value": format!("value {i} ✓")}]}]));
        res.assert_status(201);
    }
    // Stop like a crash (no shutdown snapshot), so recovery depends on the WAL alone.
    let (dir, _guard) = app.kill();
    let segment = wal_segment(&dir);
    let original = std::fs::read(&segment).expect("segment readable");
    let start_of_last = last_record_start(&original);
    assert!(start_of_last > 0, "several records in the WAL");

    let offsets: Vec<usize> =
        (start_of_last..original.len()).step_by(5).chain([original.len() - 1]).collect();
    for (n, cut) in offsets.iter().enumerate() {
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(&dir, copy.path());
        let damaged = wal_segment(copy.path());
        if n % 2 == 0 {
            std::fs::write(&damaged, &original[..*cut]).expect("truncated");
        } else {
            let mut bytes = original.clone();
            bytes[*cut] ^= 0x10;
            std::fs::write(&damaged, &bytes).expect("bit flipped");
        }
        // The last WAL record is r4's add: r0..r3 must survive and r4, damaged, is dropped.
        let app = start(copy.path(), OWNER_KEY);
        let res = app.get(&format!("/v1/views/{view}/records"));
        let records = res.assert_status(200).as_array().expect("records").clone();
        let ids: Vec<&str> = records.iter().filter_map(|r| r["id"].as_str()).collect();
        assert_eq!(
            ids,
            ["r0", "r1", "r2", "r3"],
            "cut/flip at {cut}: earlier records survive, the damaged one is dropped"
        );
        for (i, r) in records.iter().enumerate() {
            assert_eq!(r["cells"][0]["value"], json!(format!("value {i} ✓")), "cut at {cut}");
        }
        // The server keeps working after recovering from the damage.
        app.post(&format!("/v1/views/{view}/records"), &json!([{"id": "after"}]))
            .assert_status(201);
        let app = app.restart();
        let total =
            app.get(&format!("/v1/views/{view}/records")).body.as_array().map_or(0, Vec::len);
        assert_eq!(total, 5, "cut at {cut}: the write after recovery survives another restart");
    }
}

/// The frames of a WAL segment as `(offset, lsn)`.
fn frames(bytes: &[u8]) -> Vec<(usize, u64)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        if at + 16 + len > bytes.len() {
            break;
        }
        out.push((at, u64::from_le_bytes(bytes[at + 8..at + 16].try_into().expect("8 bytes"))));
        at += 16 + len;
    }
    out
}

/// The LSN of the last record of the newest WAL segment.
fn last_lsn(dir: &std::path::Path) -> u64 {
    let bytes = std::fs::read(wal_segment(dir)).expect("segment readable");
    frames(&bytes).last().map_or(0, |(_, lsn)| *lsn)
}

/// A grid with one text column `t` and records `r0..r{n}`; returns its view.
fn grid_with_records(app: &TestApp, n: usize) -> String {
    let (_, view) = app.create_grid("Recovery");
    app.create_column(&view, json!({"id": "t", "name": "Text", "type": "singleLine"}));
    add(app, &view, 0..n);
    view
}

fn add(app: &TestApp, view: &str, ids: std::ops::Range<usize>) {
    for i in ids {
        let body = json!([{"id": format!("r{i}"), "cells": [{"columnId": "t", "value": format!("value {i}")}]}]);
        app.post(&format!("/v1/views/{view}/records"), &body).assert_status(201);
    }
}

/// The ids and `t` values of a view's records, in order.
fn contents(app: &TestApp, view: &str) -> Vec<(String, Value)> {
    let res = app.get(&format!("/v1/views/{view}/records?page=%7B%22limit%22%3A1000%7D"));
    let records = res.assert_status(200).as_array().expect("records").clone();
    records
        .iter()
        .map(|r| (r["id"].as_str().unwrap_or("").to_owned(), r["cells"][0]["value"].clone()))
        .collect()
}

fn expected(ids: std::ops::Range<usize>) -> Vec<(String, Value)> {
    ids.map(|i| (format!("r{i}"), json!(format!("value {i}")))).collect()
}

/// A data directory copied from a killed server, so the damage never meets a live handle.
fn killed_copy(app: TestApp) -> tempfile::TempDir {
    let (dir, _guard) = app.kill();
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(&dir, copy.path());
    copy
}

/// The WAL loses records a snapshot already covers: the first start pads the WAL past the
/// snapshot's position (it used to panic inside the runtime), serves every record, and a
/// later write gets a fresh LSN above the snapshot's.
#[test]
fn a_wal_ending_before_a_snapshot_is_padded_on_the_first_start() {
    let app = spawn_app();
    let view = grid_with_records(&app, 5);
    // A graceful stop snapshots every branch at the WAL's end.
    let app = app.restart();
    let copy = killed_copy(app);
    let segment = wal_segment(copy.path());
    let mut bytes = std::fs::read(&segment).expect("segment");
    let covered = last_lsn(copy.path());
    let (offset, _) = *frames(&bytes).last().expect("records");
    bytes[offset + 20] ^= 0x40;
    std::fs::write(&segment, &bytes).expect("damaged");

    let app = start(copy.path(), OWNER_KEY);
    assert_eq!(contents(&app, &view), expected(0..5), "the snapshot serves every record");
    add(&app, &view, 5..6);
    let app = app.restart();
    assert_eq!(contents(&app, &view), expected(0..6), "the write after padding survives");
    drop(app);
    assert!(last_lsn(copy.path()) > covered, "LSNs below the snapshot's position are not reused");
}

/// Every snapshot key's generation files (`<data>/snapshots/<key>/<generation>.snap`), oldest
/// first.
fn generations(dir: &std::path::Path) -> Vec<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for key in std::fs::read_dir(dir.join("snapshots")).expect("snapshots").flatten() {
        let mut files: Vec<_> = std::fs::read_dir(key.path())
            .expect("key directory")
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.extension().is_some_and(|e| e == "snap"))
            .collect();
        files.sort();
        out.push(files);
    }
    out
}

/// A data directory of a build that kept snapshots in sled: with the snapshot files moved into
/// sled's `snapshot_chunks` tree (as that build wrote them) and the WAL gone (as when its
/// segments below the snapshots were deleted), every record comes back from sled's images,
/// and the next snapshots are files.
#[test]
fn snapshots_kept_in_sled_by_earlier_builds_still_load() {
    use gridd::persist::snapshot::{SledSnapshotStore, SnapshotImage, SnapshotStore};
    let app = spawn_app();
    let view = grid_with_records(&app, 4);
    // A graceful stop snapshots every branch and the catalogue.
    let app = app.restart();
    let copy = killed_copy(app);
    {
        let db = sled::open(copy.path().join("db")).expect("sled");
        let legacy = SledSnapshotStore::open(&db).expect("store");
        let mut moved = 0;
        for key in std::fs::read_dir(copy.path().join("snapshots")).expect("snapshots").flatten() {
            let name = key.file_name().to_string_lossy().into_owned();
            let mut files: Vec<_> = std::fs::read_dir(key.path())
                .expect("key directory")
                .flatten()
                .map(|f| f.path())
                .collect();
            files.sort();
            for file in files {
                let bytes = std::fs::read(&file).expect("generation file");
                let field = |at: usize, n: usize| bytes[at..at + n].to_vec();
                let image = SnapshotImage {
                    format_version: u32::from_le_bytes(field(8, 4).try_into().expect("4 bytes")),
                    wal_lsn: u64::from_le_bytes(field(12, 8).try_into().expect("8 bytes")),
                    bytes: bytes[36..].to_vec(),
                };
                legacy.put(&name, &image).expect("stored in sled");
                moved += 1;
            }
        }
        assert!(moved >= 2, "the branch's and the catalogue's images");
        legacy.flush().expect("flushed");
        std::fs::remove_dir_all(copy.path().join("snapshots")).expect("files removed");
        for segment in std::fs::read_dir(copy.path().join("wal")).expect("wal").flatten() {
            if segment.file_name().to_string_lossy().ends_with(".log") {
                std::fs::remove_file(segment.path()).expect("segment removed");
            }
        }
    }
    let app = start(copy.path(), OWNER_KEY);
    assert_eq!(contents(&app, &view), expected(0..4), "sled's images serve every record");
    add(&app, &view, 4..5);
    let app = app.restart();
    assert_eq!(contents(&app, &view), expected(0..5));
    drop(app);
    assert!(!generations(copy.path()).is_empty(), "the next snapshots are files");
}

/// The newest snapshot generation of the master is damaged: the first start falls back to the
/// older one and replays the WAL from its position, so writes from before, between and after
/// the two snapshots all come back.
#[test]
fn a_damaged_newest_snapshot_falls_back_to_the_older_generation() {
    let app = spawn_app();
    let view = grid_with_records(&app, 3);
    let app = app.restart();
    add(&app, &view, 3..6);
    let app = app.restart();
    add(&app, &view, 6..9);
    let copy = killed_copy(app);
    {
        let mut damaged = 0;
        for gens in generations(copy.path()) {
            let [.., newest] = gens.as_slice() else { continue };
            if gens.len() < 2 {
                continue;
            }
            let mut bytes = std::fs::read(newest).expect("generation file");
            let middle = 36 + (bytes.len() - 36) / 2;
            bytes[middle] ^= 0x01;
            std::fs::write(newest, bytes).expect("damaged");
            damaged += 1;
        }
        assert!(damaged > 0, "two generations were stored");
    }
    let app = start(copy.path(), OWNER_KEY);
    assert_eq!(contents(&app, &view), expected(0..9));
    let app = app.restart();
    assert_eq!(contents(&app, &view), expected(0..9), "the next snapshot is intact");
}

/// A branch whose snapshot is missing is rebuilt from its source's state at the copy's WAL
/// position plus its own records; the source's later writes stay out of it.
#[test]
fn a_branch_without_a_snapshot_is_rebuilt_from_its_source() {
    let app = spawn_app();
    let view = grid_with_records(&app, 3);
    let grid = app.get(&format!("/v1/views/{view}")).assert_status(200)["gridId"]
        .as_str()
        .expect("grid id")
        .to_owned();
    let branch = app.post(&format!("/v1/branches?branchId={grid}"), &json!({"name": "b"}));
    let branch = branch.assert_status(201).clone();
    let branch_id = branch["id"].as_str().expect("branch id").to_owned();
    let branch_view = branch["defaultAccessViewId"].as_str().expect("view").to_owned();
    // The branch stores its first snapshot in the background: wait for it (bounded).
    let branch_dir = app.data_dir.join("snapshots").join(&branch_id);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let stored = |dir: &std::path::Path| {
        std::fs::read_dir(dir).is_ok_and(|files| {
            files.flatten().any(|f| f.path().extension().is_some_and(|e| e == "snap"))
        })
    };
    while !stored(&branch_dir) {
        assert!(std::time::Instant::now() < deadline, "the branch stored no snapshot");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    add(&app, &view, 3..4);
    let body = json!([{"id": "b0", "cells": [{"columnId": "t", "value": "branch"}]}]);
    app.post(&format!("/v1/views/{branch_view}/records"), &body).assert_status(201);
    let copy = killed_copy(app);
    {
        let root = copy.path().join("snapshots");
        let store = gridd::persist::snapshot::FileSnapshotStore::open(&root, None).expect("store");
        use gridd::persist::snapshot::SnapshotStore;
        assert!(!store.generations(&branch_id).expect("generations").is_empty());
        store.delete(&branch_id).expect("delete");
        store.flush().expect("flush");
    }
    let app = start(copy.path(), OWNER_KEY);
    assert_eq!(contents(&app, &view), expected(0..4));
    let mut in_branch = expected(0..3);
    in_branch.push(("b0".to_owned(), json!("branch")));
    assert_eq!(contents(&app, &branch_view), in_branch);
    let app = app.restart();
    assert_eq!(contents(&app, &branch_view), in_branch, "the rebuilt branch is snapshotted");
}

/// A WAL record whose frame is intact but whose payload does not decode is reported and
/// skipped; the records around it are replayed and new writes go on after it.
#[test]
fn an_undecodable_wal_record_is_skipped() {
    let app = spawn_app();
    let view = grid_with_records(&app, 3);
    let copy = killed_copy(app);
    let segment = wal_segment(copy.path());
    let lsn = last_lsn(copy.path()) + 1;
    let payload = [0xffu8; 12];
    let len = (payload.len() as u32).to_le_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&len), &payload);
    let mut bytes = std::fs::read(&segment).expect("segment");
    bytes.extend_from_slice(&len);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes.extend_from_slice(&lsn.to_le_bytes());
    bytes.extend_from_slice(&payload);
    std::fs::write(&segment, &bytes).expect("appended");

    let app = start(copy.path(), OWNER_KEY);
    assert_eq!(contents(&app, &view), expected(0..3));
    add(&app, &view, 3..4);
    let app = app.restart();
    assert_eq!(contents(&app, &view), expected(0..4));
}

/// Edits sled's catalogue tree of a stopped server's data directory.
fn edit_catalogue(dir: &std::path::Path, edit: impl FnOnce(&sled::Tree)) {
    let db = sled::open(dir.join("db")).expect("sled");
    let tree = db.open_tree("catalog").expect("catalogue tree");
    edit(&tree);
    db.flush().expect("flush");
}

/// A key, a grid and its records created after the catalogue's last image, with sled's copy
/// of the catalogue set back to before them (as when sled drops the end of its log): the WAL
/// brings the key, the grid and its records back.
#[test]
fn catalogue_changes_lost_by_sled_come_back_from_the_wal() {
    let app = spawn_app();
    let before = grid_with_records(&app, 2);
    // A graceful stop stores the catalogue's image.
    let app = app.restart();
    let key = app.create_key(&["read"], json!({"all": true}));
    let view = grid_with_records(&app, 3);
    app.get_as(&key, &format!("/v1/views/{view}/records")).assert_status(200);
    let copy = killed_copy(app);
    edit_catalogue(copy.path(), |tree| {
        let keys: Vec<_> = tree.iter().keys().map(|k| k.expect("key")).collect();
        let mut removed = 0;
        for k in keys {
            let text = String::from_utf8_lossy(&k).into_owned();
            if text.starts_with("key/") || text.starts_with("grid/") || text.starts_with("meta/") {
                tree.remove(&k).expect("remove");
                removed += 1;
            }
        }
        assert!(removed >= 3, "the key, the grids and the position were in the tree");
    });
    let app = start(copy.path(), OWNER_KEY);
    assert_eq!(contents(&app, &before), expected(0..2));
    assert_eq!(contents(&app, &view), expected(0..3), "the grid and its records are back");
    app.get_as(&key, &format!("/v1/views/{view}/records")).assert_status(200);
    let app = app.restart();
    app.get_as(&key, &format!("/v1/views/{view}/records")).assert_status(200);
}

/// An entry of sled's catalogue that no longer decodes (a flipped bit its checksum did not
/// catch): the catalogue is rebuilt from its image and the WAL, and nothing is lost.
#[test]
fn an_unreadable_catalogue_entry_is_rebuilt_from_the_image_and_the_wal() {
    let app = spawn_app();
    let view = grid_with_records(&app, 2);
    let app = app.restart();
    let key = app.create_key(&["read"], json!({"all": true}));
    let copy = killed_copy(app);
    edit_catalogue(copy.path(), |tree| {
        for entry in tree.iter() {
            let (k, mut value) = entry.map(|(k, v)| (k, v.to_vec())).expect("entry");
            if k.starts_with(b"grid/") || k.starts_with(b"key/") {
                value[0] ^= 0x20;
                tree.insert(k, value).expect("insert");
            }
        }
    });
    let app = start(copy.path(), OWNER_KEY);
    assert_eq!(contents(&app, &view), expected(0..2));
    app.get_as(&key, &format!("/v1/views/{view}/records")).assert_status(200);
}
