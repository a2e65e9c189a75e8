//! Durability end to end: a damaged WAL tail is dropped on restart and every earlier record
//! survives; the server never panics on it.

use serde_json::json;

use crate::helpers::{copy_dir, spawn_app, start, OWNER_KEY};

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
