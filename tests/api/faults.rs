//! Fault injection against the real binary: acknowledged writes (records, an API key, grids),
//! SIGKILL, then damage to the WAL (torn tail, flipped bits in the middle, garbage appended) or
//! to sled's catalogue, and a restart. Every write acknowledged before the damage comes back,
//! or, where the damage destroyed the only copy, the server says so at WARN/ERROR level; it
//! never panics and always serves.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::{json, Value};

use crate::helpers::copy_dir;

pub(super) const KEY: &str = "faults-test-owner-key-0123456789";

/// A `gridd` process; SIGKILLed when dropped.
pub(super) struct Server {
    pub(super) child: Child,
    pub(super) base: String,
    lines: mpsc::Receiver<String>,
    log: Vec<String>,
}

impl Server {
    pub(super) fn start(dir: &Path) -> Server {
        Server::start_with(dir, &[])
    }

    /// Starts the binary with `extra` command-line arguments.
    pub(super) fn start_with(dir: &Path, extra: &[&str]) -> Server {
        match Server::try_start_with(dir, extra) {
            Ok(server) => server,
            Err((status, log)) => panic!("gridd did not listen (exit {status:?}); log:\n{log}"),
        }
    }

    /// Starts the binary; when it exits instead of listening, its exit code and log.
    pub(super) fn try_start(dir: &Path) -> Result<Server, (Option<i32>, String)> {
        Server::try_start_with(dir, &[])
    }

    fn try_start_with(dir: &Path, extra: &[&str]) -> Result<Server, (Option<i32>, String)> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gridd"))
            .args(["--bind", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .args(["--api-key", KEY, "--log-level", "info"])
            .args(extra)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gridd starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server { child, base: String::new(), lines, log: Vec::new() };
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.base.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match server.lines.recv_timeout(left) {
                Ok(line) => {
                    if line.contains("gridd listening") {
                        let at = line.find("127.0.0.1:").expect("address logged");
                        let port: String =
                            line[at + 10..].chars().take_while(char::is_ascii_digit).collect();
                        server.base = format!("http://127.0.0.1:{port}");
                    }
                    server.log.push(line);
                }
                Err(_) => {
                    let _ = server.child.kill();
                    let status = server.child.wait().ok().and_then(|s| s.code());
                    server.log.extend(server.lines.try_iter());
                    return Err((status, server.log.join("\n")));
                }
            }
        }
        Ok(server)
    }

    /// Every stderr line so far.
    pub(super) fn log(&mut self) -> &[String] {
        self.log.extend(self.lines.try_iter());
        &self.log
    }

    /// SIGKILL; returns the log.
    pub(super) fn kill(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log.extend(self.lines.try_iter());
        std::mem::take(&mut self.log)
    }

    /// SIGTERM (a graceful stop: every branch's snapshot and the catalogue's image are
    /// written); waits for the exit, which must be a clean one. Returns the log.
    pub(super) fn terminate(mut self) -> Vec<String> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(sent.success(), "SIGTERM sent");
        let status = self.child.wait().expect("gridd exits");
        let mut log = std::mem::take(&mut self.log);
        log.extend(self.lines.iter());
        assert!(status.success(), "graceful stop: {status:?}\n{}", log.join("\n"));
        log
    }

    pub(super) fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        key: &str,
    ) -> Value {
        let client = Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
        let mut req = client
            .request(method, format!("{}{path}", self.base))
            .header("Authorization", format!("ApiKey {key}"));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().expect("request");
        let status = res.status().as_u16();
        let text = res.text().expect("body");
        assert!((200..300).contains(&status), "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What was acknowledged before the kill.
struct Acked {
    view: String,
    records: Vec<String>,
    key: String,
}

/// A grid with records written one request each, and a key, all acknowledged; then SIGKILL.
fn acknowledged_writes(dir: &Path) -> Acked {
    let server = Server::start(dir);
    let dbs = server.call(reqwest::Method::GET, "/v1/databases", None, KEY);
    let db = dbs[0]["id"].as_str().expect("database").to_owned();
    let grid = server.call(
        reqwest::Method::POST,
        &format!("/v1/grids?dbId={db}"),
        Some(json!({"name": "faults"})),
        KEY,
    );
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    let column = json!({"id": "t", "name": "T", "type": "singleLine"});
    server.call(reqwest::Method::POST, &format!("/v1/views/{view}/columns"), Some(column), KEY);
    let mut records = Vec::new();
    for i in 0..8 {
        let id = format!("r{i}");
        let body = json!([{"id": id, "cells": [{"columnId": "t", "value": format!("v{i}")}]}]);
        server.call(reqwest::Method::POST, &format!("/v1/views/{view}/records"), Some(body), KEY);
        records.push(id);
    }
    let body =
        json!({"name": "k", "kind": "company", "privileges": ["read"], "access": {"all": true}});
    let key = server.call(reqwest::Method::POST, "/admin/v1/api-keys", Some(body), KEY)["key"]
        .as_str()
        .expect("key")
        .to_owned();
    server.kill();
    Acked { view, records, key }
}

fn newest_segment(dir: &Path) -> PathBuf {
    let mut segments: Vec<_> = std::fs::read_dir(dir.join("wal"))
        .expect("wal dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    segments.pop().expect("a segment")
}

/// The offsets at which the segment's records start.
fn record_starts(bytes: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut out = Vec::new();
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        if at + 16 + len > bytes.len() {
            break;
        }
        out.push(at);
        at += 16 + len;
    }
    out
}

/// The record ids a view lists, as `key` sees them (None when refused).
pub(super) fn listed(server: &Server, view: &str, key: &str) -> Option<Vec<String>> {
    let client = Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let res = client
        .get(format!("{}/v1/views/{view}/records", server.base))
        .header("Authorization", format!("ApiKey {key}"))
        .send()
        .expect("list");
    if !res.status().is_success() {
        return None;
    }
    let body: Value = res.json().expect("records");
    Some(body.as_array()?.iter().filter_map(|r| r["id"].as_str().map(str::to_owned)).collect())
}

/// Restarts on a damaged copy: no panic, `/healthz` answers, and the log names the damage
/// when `loud`.
pub(super) fn restart_damaged(dir: &Path, loud: bool) -> Server {
    let started = Instant::now();
    let mut server = Server::start(dir);
    let log = server.log().to_vec();
    assert!(!log.iter().any(|l| l.contains("panicked")), "a panic:\n{}", log.join("\n"));
    if loud {
        assert!(
            log.iter().any(|l| l.contains(" WARN ") || l.contains(" ERROR ")),
            "the damage is reported:\n{}",
            log.join("\n")
        );
    }
    assert!(started.elapsed() < Duration::from_secs(30), "recovery is bounded");
    server
}

#[test]
fn wal_damage_after_sigkill_keeps_every_write_before_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let original = std::fs::read(newest_segment(dir.path())).expect("segment");
    let starts = record_starts(&original);
    let last = *starts.last().expect("records");
    // The records: bootstrap and set-up, 8 adds, then the key's change set (last). Where the
    // damage takes the key's WAL record, sled's copy may or may not have been flushed before
    // the kill, so the key may or may not survive.
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: [(&str, Damage, usize, Option<bool>); 3] = [
        ("garbage appended", Box::new(|b| b.extend_from_slice(&[0xa5; 999])), 8, Some(true)),
        ("torn tail", Box::new(move |b| b.truncate(last + 9)), 8, None),
        ("flipped bits in the middle", Box::new(move |b| b[last - 3] ^= 0x24), 7, None),
    ];
    for (name, damage, kept, key_survives) in cases {
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(dir.path(), copy.path());
        let segment = newest_segment(copy.path());
        let mut bytes = original.clone();
        damage(&mut bytes);
        std::fs::write(&segment, &bytes).expect("damaged");
        let server = restart_damaged(copy.path(), true);
        let ids = listed(&server, &acked.view, KEY).expect("the owner key works");
        assert_eq!(ids, acked.records[..kept], "{name}");
        let key_works = listed(&server, &acked.view, &acked.key).is_some();
        if let Some(expected) = key_survives {
            assert_eq!(key_works, expected, "{name}: the key");
        }
        // The server goes on taking writes after the damage.
        let body = json!([{"id": "after", "cells": [{"columnId": "t", "value": "after"}]}]);
        let path = format!("/v1/views/{}/records", acked.view);
        server.call(reqwest::Method::POST, &path, Some(body), KEY);
        server.kill();
    }
}

/// Damage in the middle of the log (a record with acknowledged records after it) is not a torn
/// tail: the damaged record is lost, loudly, and every record after it is kept. The damaged
/// record here is the third add: its branch's snapshot (none yet) does not cover it, so the log
/// names the branch as having lost changes.
#[test]
fn wal_damage_in_the_middle_loses_only_the_damaged_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let segment = newest_segment(dir.path());
    let mut bytes = std::fs::read(&segment).expect("segment");
    let starts = record_starts(&bytes);
    // The 8 adds are the records before the key's (the last).
    let third_add = starts[starts.len() - 9 + 2];
    bytes[third_add + 20] ^= 0x10;
    std::fs::write(&segment, &bytes).expect("damaged");
    let server = restart_damaged(dir.path(), true);
    let ids = listed(&server, &acked.view, KEY).expect("the owner key works");
    let mut expected = acked.records.clone();
    expected.remove(2);
    assert_eq!(ids, expected);
    // The key, created after the damaged record, is there.
    assert!(listed(&server, &acked.view, &acked.key).is_some(), "the later key works");
    let log = server.kill();
    let named = |needle: &str| log.iter().any(|l| l.contains(" ERROR ") && l.contains(needle));
    assert!(named("WAL damaged in the middle"), "the gap is reported:\n{}", log.join("\n"));
    assert!(named("the changes they held are lost"), "the loss is named:\n{}", log.join("\n"));
    // A second start finds the same and keeps the writes made since.
    let server = restart_damaged(dir.path(), true);
    assert_eq!(listed(&server, &acked.view, KEY).expect("listed"), expected);
    server.kill();
}

#[test]
fn sled_losing_catalogue_entries_after_sigkill_keeps_every_acknowledged_change() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    {
        let db = sled::open(dir.path().join("db")).expect("sled");
        let tree = db.open_tree("catalog").expect("tree");
        let gone: Vec<_> = tree
            .iter()
            .keys()
            .map(|k| k.expect("key"))
            .filter(|k| {
                k.starts_with(b"grid/") || k.starts_with(b"key/") || k.starts_with(b"meta/")
            })
            .collect();
        for k in gone {
            tree.remove(k).expect("removed");
        }
        db.flush().expect("flush");
    }
    let server = restart_damaged(dir.path(), true);
    assert_eq!(listed(&server, &acked.view, KEY).expect("the grid is back"), acked.records);
    assert!(listed(&server, &acked.view, &acked.key).is_some(), "the key is back");
    server.kill();
}

/// sled's configuration file damaged: sled cannot open the store at all. The start refuses,
/// naming the store and how to rebuild it; moved aside, the catalogue comes back from its
/// image and the WAL and every acknowledged write is served.
#[test]
fn an_unopenable_catalogue_store_is_named_and_rebuilt_once_moved_aside() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let conf = dir.path().join("db").join("conf");
    let mut bytes = std::fs::read(&conf).expect("sled's conf");
    bytes[0] ^= 0x20;
    std::fs::write(&conf, &bytes).expect("damaged");
    let Err((status, log)) = Server::try_start(dir.path()) else {
        panic!("a store sled cannot open was opened")
    };
    assert!(!log.contains("panicked"), "a panic:\n{log}");
    assert_ne!(status, Some(0), "{log}");
    assert!(log.contains("cannot open the catalogue's store"), "{log}");
    assert!(log.contains(".damaged"), "the way out is named: {log}");
    std::fs::rename(dir.path().join("db"), dir.path().join("db.damaged")).expect("moved aside");
    let server = restart_damaged(dir.path(), true);
    assert_eq!(listed(&server, &acked.view, KEY).expect("listed"), acked.records);
    assert!(listed(&server, &acked.view, &acked.key).is_some(), "the key came back");
    server.kill();
}

/// Flipped bytes in sled's file (its checksums catch them): the start either serves every
/// acknowledged write (the WAL holds them all) or refuses with an error; it never panics.
#[test]
fn flipped_bytes_in_sled_after_sigkill_never_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let file = dir.path().join("db").join("db");
    let original = std::fs::read(&file).expect("sled's file");
    for k in 1..6 {
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(dir.path(), copy.path());
        let mut bytes = original.clone();
        let at = bytes.len() * k / 6;
        bytes[at] ^= 0x11;
        std::fs::write(copy.path().join("db").join("db"), &bytes).expect("damaged");
        match Server::try_start(copy.path()) {
            Ok(mut server) => {
                let log = server.log().to_vec();
                assert!(!log.iter().any(|l| l.contains("panicked")), "{}", log.join("\n"));
                let ids = listed(&server, &acked.view, KEY).expect("the grid is served");
                assert_eq!(ids, acked.records, "flip at {at}");
                assert!(listed(&server, &acked.view, &acked.key).is_some(), "flip at {at}: key");
                server.kill();
            }
            Err((status, log)) => {
                assert!(!log.contains("panicked"), "flip at {at}: a panic:\n{log}");
                assert_ne!(status, Some(101), "flip at {at}: {log}");
                assert!(log.contains("ERROR") || log.contains("Error"), "flip at {at}: {log}");
            }
        }
    }
}
