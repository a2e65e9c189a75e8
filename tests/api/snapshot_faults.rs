//! Fault injection into the snapshot store of the real binary. Three sessions leave two
//! generations of the grid's snapshot and of the catalogue's image as files under
//! `<data>/snapshots/` plus acknowledged writes after them (records, a schema change, keys, a
//! project and a grid that live only in the WAL); then SIGKILL, damage, restart. The damage is
//! done to the generation files (flipped, cut, emptied of their payload, a garbage header,
//! removed; only gridd's checksums catch it) or to sled's file on disk (the catalogue's tree;
//! sled's checksums catch it). Every acknowledged write must come back, the damage must be
//! logged, and nothing may panic; a start that cannot serve everything refuses loudly.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::faults::{listed, restart_damaged, Server, KEY};
use crate::helpers::copy_dir;

/// A branch snapshot after every 3 of its WAL records.
const SMALL_SNAPSHOTS: [&str; 2] = ["--snapshot-every-records", "3"];
/// The snapshot store key of the catalogue's images.
const CATALOG: &str = "~catalog";

/// What was acknowledged before the kill.
struct Acked {
    /// The first grid's default view and its records: id, `t` and `u` values.
    view: String,
    records: Vec<(String, String, Option<String>)>,
    /// Keys made in each session (the last one after the newest catalogue image).
    keys: Vec<String>,
    /// A project made after the newest catalogue image.
    project: String,
    /// A grid made after the newest catalogue image, and its one record.
    late_view: String,
}

/// Adds record `i` (one request, acknowledged).
fn add(
    server: &Server,
    view: &str,
    i: usize,
    u: bool,
    acked: &mut Vec<(String, String, Option<String>)>,
) {
    let (id, t) = (format!("r{i:02}"), format!("t{i}"));
    let u = u.then(|| format!("u{i}"));
    let mut cells = vec![json!({"columnId": "t", "value": t})];
    if let Some(u) = &u {
        cells.push(json!({"columnId": "u", "value": u}));
    }
    let body = json!([{"id": id, "cells": cells}]);
    server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(body), KEY);
    acked.push((id, t, u));
}

fn new_key(server: &Server, name: &str) -> String {
    let body =
        json!({"name": name, "kind": "company", "privileges": ["read"], "access": {"all": true}});
    let made = server.call(Method::POST, "/admin/v1/api-keys", Some(body), KEY);
    made["key"].as_str().expect("key").to_owned()
}

/// Branch snapshots the server has stored (`gridd_snapshot_seconds_count`).
fn snapshots_stored(server: &Server) -> u64 {
    let text = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", server.base))
        .header("Authorization", format!("ApiKey {KEY}"))
        .send()
        .and_then(|r| r.text())
        .unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("gridd_snapshot_seconds_count "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// Waits (bounded) until the server has stored at least `count` branch snapshots; panics with
/// the server's log when it does not.
fn await_snapshots(server: &mut Server, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while snapshots_stored(server) < count {
        if Instant::now() >= deadline {
            let log = server.log().join("\n");
            panic!("{count} snapshots were not stored in 30 s; log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A grid "g" in the first database with a single-line column `t`: (database id, its view).
fn grid_with_text_column(server: &Server) -> (String, String) {
    let dbs = server.call(Method::GET, "/v1/databases", None, KEY);
    let db = dbs[0]["id"].as_str().expect("database").to_owned();
    let grid =
        server.call(Method::POST, &format!("/v1/grids?dbId={db}"), Some(json!({"name": "g"})), KEY);
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    let column = json!({"id": "t", "name": "T", "type": "singleLine"});
    server.call(Method::POST, &format!("/v1/views/{view}/columns"), Some(column), KEY);
    (db, view)
}

/// Session 1 (small snapshots): a grid, records (a snapshot during the writes), a key; a
/// graceful stop stores the grid's snapshot and the catalogue's first image. Session 2: more
/// records (another snapshot), a new column, a key; graceful stop: second catalogue image.
/// Session 3 (default policy, no snapshot): records using the new column, a key, a project, a
/// grid with a record; SIGKILL.
fn acknowledged_writes(dir: &Path) -> Acked {
    let mut records = Vec::new();
    let mut keys = Vec::new();
    let mut server = Server::start_with(dir, &SMALL_SNAPSHOTS);
    let (db, view) = grid_with_text_column(&server);
    (0..4).for_each(|i| add(&server, &view, i, false, &mut records));
    await_snapshots(&mut server, 1);
    keys.push(new_key(&server, "k1"));
    server.terminate();

    let mut server = Server::start_with(dir, &SMALL_SNAPSHOTS);
    (4..8).for_each(|i| add(&server, &view, i, false, &mut records));
    await_snapshots(&mut server, 1);
    let column = json!({"id": "u", "name": "U", "type": "singleLine"});
    server.call(Method::POST, &format!("/v1/views/{view}/columns"), Some(column), KEY);
    keys.push(new_key(&server, "k2"));
    server.terminate();

    let server = Server::start(dir);
    (8..11).for_each(|i| add(&server, &view, i, true, &mut records));
    keys.push(new_key(&server, "k3"));
    let project = server.call(Method::POST, "/v1/projects", Some(json!({"name": "late"})), KEY);
    let project = project["id"].to_string().trim_matches('"').to_owned();
    let late = server.call(
        Method::POST,
        &format!("/v1/grids?dbId={db}"),
        Some(json!({"name": "late"})),
        KEY,
    );
    let late_view = late["defaultAccessViewId"].as_str().expect("view").to_owned();
    let column = json!({"id": "t", "name": "T", "type": "singleLine"});
    server.call(Method::POST, &format!("/v1/views/{late_view}/columns"), Some(column), KEY);
    let body = json!([{"id": "late", "cells": [{"columnId": "t", "value": "late"}]}]);
    server.call(Method::POST, &format!("/v1/views/{late_view}/records"), Some(body), KEY);
    server.kill();
    Acked { view, records, keys, project, late_view }
}

/// The records a view lists: id, `t` and `u` values (an empty cell is `None`).
fn contents(server: &Server, view: &str) -> Vec<(String, String, Option<String>)> {
    let listed = server.call(Method::GET, &format!("/v1/views/{view}/records"), None, KEY);
    let rows = listed.as_array().expect("records");
    let cell = |row: &Value, column: &str| {
        let cells = row["cells"].as_array()?;
        let found = cells.iter().find(|c| c["columnId"] == column)?;
        found["value"].as_str().filter(|v| !v.is_empty()).map(str::to_owned)
    };
    rows.iter()
        .map(|row| {
            let id = row["id"].as_str().expect("id").to_owned();
            (id, cell(row, "t").unwrap_or_default(), cell(row, "u"))
        })
        .collect()
}

/// Every acknowledged write is served.
fn assert_all_back(server: &Server, acked: &Acked, case: &str) {
    assert_eq!(contents(server, &acked.view), acked.records, "{case}: the records");
    for key in &acked.keys {
        assert!(listed(server, &acked.view, key).is_some(), "{case}: key {key}");
    }
    let projects = server.call(Method::GET, "/v1/projects", None, KEY);
    let found = projects.as_array().expect("projects").iter();
    let ids: Vec<String> =
        found.map(|p| p["id"].to_string().trim_matches('"').to_owned()).collect();
    assert!(ids.contains(&acked.project), "{case}: the late project in {ids:?}");
    let late = listed(server, &acked.late_view, KEY).expect("the late grid");
    assert_eq!(late, ["late"], "{case}: the late grid's record");
}

/// Store key -> generation -> its file (`<data>/snapshots/<key>/<generation:020>.snap`; the
/// keys used here need no escaping).
type Layout = BTreeMap<String, BTreeMap<u64, PathBuf>>;

fn layout(dir: &Path) -> Layout {
    let mut out = Layout::new();
    for key_dir in std::fs::read_dir(dir.join("snapshots")).expect("snapshots").flatten() {
        let key = key_dir.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(key_dir.path()).expect("key directory").flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let Some(generation) = name.strip_suffix(".snap").and_then(|g| g.parse().ok()) else {
                continue;
            };
            out.entry(key.clone()).or_default().insert(generation, file.path());
        }
    }
    out
}

/// What is done to one stored generation's file.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// A flipped byte in the payload.
    FlipPayload,
    /// The file cut to a third.
    Truncate,
    /// The file cut to its header (the payload is gone).
    PayloadGone,
    /// The 36-byte header overwritten.
    GarbageHeader,
    /// The file removed.
    Remove,
}

fn damage(file: &Path, what: Damage) {
    let bytes = std::fs::read(file).expect("a generation file");
    match what {
        Damage::FlipPayload => {
            let mut bytes = bytes;
            let at = 36 + (bytes.len() - 36) / 2;
            bytes[at] ^= 0x42;
            std::fs::write(file, bytes).expect("written");
        }
        Damage::Truncate => std::fs::write(file, &bytes[..bytes.len() / 3]).expect("written"),
        Damage::PayloadGone => std::fs::write(file, &bytes[..36]).expect("written"),
        Damage::GarbageHeader => {
            let mut bytes = bytes;
            bytes[..36].fill(0xa5);
            std::fs::write(file, bytes).expect("written");
        }
        Damage::Remove => std::fs::remove_file(file).expect("removed"),
    }
}

/// Damages the newest generation (or, with `both`, the two newest) of the store keys `pick`
/// selects; every such key must have at least two generations (a branch keeps the newest with
/// its chain of the images it borrows from, and an older one with its own).
fn damage_store(dir: &Path, pick: impl Fn(&str) -> bool, what: Damage, both: bool) {
    let mut damaged = 0;
    for (key, generations) in layout(dir).into_iter().filter(|(k, _)| pick(k)) {
        assert!(generations.len() >= 2, "two generations of {key}: {generations:?}");
        for file in generations.values().rev().take(if both { 2 } else { 1 }) {
            damage(file, what);
            damaged += 1;
        }
    }
    assert!(damaged > 0, "something was damaged");
}

/// Damage to the grid's snapshot generations: the start falls back to
/// the older generation or replays the whole WAL, logs the damage, and serves every write. A
/// graceful stop then retires the damaged generation, so the next start finds no damage.
#[test]
fn damaged_branch_snapshots_fall_back_and_lose_no_acknowledged_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let cases = [
        (Damage::FlipPayload, false),
        (Damage::Truncate, false),
        (Damage::PayloadGone, false),
        (Damage::GarbageHeader, false),
        (Damage::Remove, false),
        (Damage::FlipPayload, true),
        (Damage::GarbageHeader, true),
    ];
    for (what, both) in cases {
        let case = format!("{what:?}, both generations: {both}");
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(dir.path(), copy.path());
        damage_store(copy.path(), |k| k != CATALOG, what, both);
        let server = restart_damaged(copy.path(), true);
        assert_all_back(&server, &acked, &case);
        if !both && matches!(what, Damage::FlipPayload) {
            // The next snapshot keeps the intact older generation, not the damaged one.
            let mut more = acked.records.clone();
            add(&server, &acked.view, 11, true, &mut more);
            server.terminate();
            let mut again = Server::start(copy.path());
            let log = again.log().join("\n");
            assert!(!log.contains("damaged"), "{case}: damage left behind:\n{log}");
            assert_eq!(contents(&again, &acked.view), more, "{case}: after the next snapshot");
            again.kill();
        } else {
            server.kill();
        }
    }
}

/// The generation a generation file borrows sections from (its header's base), if any.
fn base_of(file: &Path) -> Option<u64> {
    let bytes = std::fs::read(file).expect("a generation file");
    (bytes.len() >= 44 && &bytes[..8] == b"GRIDDSN2")
        .then(|| u64::from_le_bytes(bytes[32..40].try_into().expect("eight bytes")))
}

/// A branch's snapshot borrows from an older image, its base; damage to that base makes that
/// snapshot unusable too: the start loads another generation (a newer whole one, or one under
/// the damage) and the WAL, and every acknowledged write is back.
#[test]
fn damage_to_the_image_a_snapshot_borrows_from_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let branch_key = |k: &str| k != CATALOG;
    let bases: Vec<(PathBuf, u64)> = layout(dir.path())
        .into_iter()
        .filter(|(k, _)| branch_key(k))
        .filter_map(|(_, generations)| {
            // The newest generation that borrows from a base.
            let base = generations.values().rev().find_map(|file| base_of(file))?;
            Some((generations.get(&base)?.clone(), base))
        })
        .collect();
    assert!(!bases.is_empty(), "a branch's snapshot borrows from a base");
    for what in [Damage::FlipPayload, Damage::Remove] {
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(dir.path(), copy.path());
        for (file, _) in &bases {
            let relative = file.strip_prefix(dir.path()).expect("inside the data directory");
            damage(&copy.path().join(relative), what);
        }
        let server = restart_damaged(copy.path(), true);
        assert_all_back(&server, &acked, &format!("base {what:?}"));
        server.kill();
    }
}

/// Damage to the catalogue's images, alone or with sled's catalogue
/// tree set back to an empty one: the keys, project and grid made after the newest image come
/// back from the older image or the tree, and the WAL.
#[test]
fn damaged_catalogue_images_lose_no_acknowledged_change() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let cases = [
        (Damage::FlipPayload, false, false),
        (Damage::GarbageHeader, false, false),
        (Damage::FlipPayload, false, true),
        (Damage::PayloadGone, true, false),
        (Damage::Truncate, true, true),
    ];
    for (what, both, tree_lost) in cases {
        let case = format!("{what:?}, both images: {both}, tree lost: {tree_lost}");
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(dir.path(), copy.path());
        damage_store(copy.path(), |k| k == CATALOG, what, both);
        if tree_lost {
            let db = sled::open(copy.path().join("db")).expect("sled");
            db.open_tree("catalog").expect("tree").clear().expect("cleared");
            db.flush().expect("flushed");
        }
        let server = restart_damaged(copy.path(), true);
        assert_all_back(&server, &acked, &case);
        server.kill();
    }
}

/// Flipped bytes in sled's own files (sled's checksums catch them and it drops its log from
/// there): the start serves every acknowledged write, or refuses with an error; never a panic.
#[test]
fn flipped_bytes_in_sled_files_with_snapshots_never_lose_a_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let acked = acknowledged_writes(dir.path());
    let file = dir.path().join("db").join("db");
    let original = std::fs::read(&file).expect("sled's file");
    for k in 1..8 {
        let at = original.len() * k / 8;
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(dir.path(), copy.path());
        let mut bytes = original.clone();
        bytes[at] ^= 0x5a;
        std::fs::write(copy.path().join("db").join("db"), &bytes).expect("damaged");
        match Server::try_start(copy.path()) {
            Ok(mut server) => {
                let log = server.log().join("\n");
                assert!(!log.contains("panicked"), "flip at {at}: a panic:\n{log}");
                assert_all_back(&server, &acked, &format!("flip at {at}"));
                server.kill();
            }
            Err((status, log)) => {
                assert!(!log.contains("panicked"), "flip at {at}: a panic:\n{log}");
                assert_ne!(status, Some(101), "flip at {at}: {log}");
                assert!(log.contains("ERROR"), "flip at {at}: refused silently:\n{log}");
            }
        }
    }
}

/// The snapshot policy counts WAL bytes as well as records: a branch that wrote few records but
/// more bytes than `--snapshot-every-bytes` snapshots; below both limits it does not.
#[test]
fn a_branch_snapshots_once_its_wal_bytes_pass_the_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ["--snapshot-every-records", "1000000", "--snapshot-every-bytes", "200000"];
    let mut server = Server::start_with(dir.path(), &args);
    let (_, view) = grid_with_text_column(&server);
    let write = |id: &str, bytes: usize| {
        let body = json!([{"id": id, "cells": [{"columnId": "t", "value": "x".repeat(bytes)}]}]);
        server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(body), KEY);
    };
    (0..5).for_each(|i| write(&format!("small{i}"), 1000));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(snapshots_stored(&server), 0, "5 records of 1 KB are below both limits");
    write("large", 250_000);
    await_snapshots(&mut server, 1);
    server.terminate();
}

/// Writes that arrive while a snapshot is being written, and are due by themselves, get their
/// own snapshot once it is stored, not at the next periodic check (75 s here). The branch is
/// made large first (by a server that never snapshots by count), so that its first snapshot
/// after a restart is still being written when the second round of records comes.
#[test]
fn writes_made_while_a_snapshot_runs_get_the_next_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start_with(dir.path(), &["--snapshot-every-records", "1000000"]);
    let (_, view) = grid_with_text_column(&server);
    for round in 0..40 {
        let records = round_of_records(round, 'l');
        server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(records), KEY);
    }
    server.terminate();
    let args = ["--snapshot-every-records", "300", "--snapshot-every-bytes", "1000000000"];
    let mut server = Server::start_with(dir.path(), &args);
    for round in 40..42 {
        let records = round_of_records(round, 'n');
        server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(records), KEY);
    }
    await_snapshots(&mut server, 2);
    server.kill();
}

/// Whether a branch snapshot of the kind `magic` names is being written: a `.partial` file
/// whose provisional header starts with it (`GRIDDSNP` whole, `GRIDDSN2` on a base).
fn snapshot_being_written(dir: &Path, magic: &[u8; 8]) -> bool {
    let Ok(keys) = std::fs::read_dir(dir.join("snapshots")) else { return false };
    keys.flatten().any(|key| {
        std::fs::read_dir(key.path()).is_ok_and(|files| {
            files.flatten().any(|f| {
                let partial = f.file_name().to_string_lossy().ends_with(".partial");
                let mut head = [0u8; 8];
                partial
                    && std::fs::File::open(f.path())
                        .and_then(|mut file| file.read_exact(&mut head))
                        .is_ok()
                    && &head == magic
            })
        })
    })
}

/// SIGKILL while a whole branch snapshot is being written (its `.partial` file on disk): the
/// next start ignores the partial file, starts from the previous generation and the WAL, and
/// every acknowledged record is there with its value.
#[test]
fn a_kill_during_a_whole_snapshot_loses_no_acknowledged_write() {
    kill_during_a_snapshot(b"GRIDDSNP");
}

/// The same while a snapshot that borrows from a whole one is being written.
#[test]
fn a_kill_during_an_incremental_snapshot_loses_no_acknowledged_write() {
    kill_during_a_snapshot(b"GRIDDSN2");
}

fn kill_during_a_snapshot(magic: &[u8; 8]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ["--snapshot-every-records", "300", "--snapshot-every-bytes", "1000000000"];
    let server = Server::start_with(dir.path(), &args);
    let (_, view) = grid_with_text_column(&server);
    let mut acked = 0usize;
    let mut caught = false;
    // Each round adds 300 records of 2 KB, after which a snapshot of the growing branch starts
    // (the first two whole, then each on the one before); the kill lands while one of the
    // wanted kind is being written.
    for round in 0..80 {
        let records = round_of_records(round, 'y');
        server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(records), KEY);
        acked += 300;
        let deadline = Instant::now() + Duration::from_millis(500);
        while !caught && Instant::now() < deadline {
            caught = snapshot_being_written(dir.path(), magic);
            std::thread::sleep(Duration::from_micros(100));
        }
        if caught {
            break;
        }
    }
    server.kill();
    assert!(caught, "no snapshot was caught being written in 80 rounds");

    let server = Server::start(dir.path());
    let (total, last) = count_and_last(&server, &view);
    assert_eq!(total, acked, "every acknowledged record is back");
    let last_round = acked / 300 - 1;
    assert_eq!(last["id"], json!(format!("r{last_round}-299")));
    let value = last["cells"][0]["value"].as_str().unwrap_or_default();
    assert!(value.starts_with(&format!("{last_round}.299 ")), "the last record's value: {value}");
    server.terminate();
}

/// Round `round` of 300 records `r<round>-<i>` whose text cell `t` holds 2 KB of `fill`.
fn round_of_records(round: usize, fill: char) -> Value {
    let filler: String = std::iter::repeat_n(fill, 2000).collect();
    (0..300)
        .map(|i| {
            let value = format!("{round}.{i} {filler}");
            json!({"id": format!("r{round}-{i}"), "cells": [{"columnId": "t", "value": value}]})
        })
        .collect()
}

/// The chain of a generation file: its base, that one's base, ... (by their headers).
fn chain_of(generations: &BTreeMap<u64, PathBuf>, newest: u64) -> Vec<u64> {
    let mut chain = Vec::new();
    let mut at = newest;
    while let Some(base) = generations.get(&at).and_then(|file| base_of(file)) {
        chain.push(base);
        at = base;
    }
    chain
}

/// The number of records a view lists (`x-total-count`) and the last one.
fn count_and_last(server: &Server, view: &str) -> (usize, Value) {
    let client = reqwest::blocking::Client::new();
    let get = |page: String| {
        client
            .get(format!("{}/v1/views/{view}/records", server.base))
            .query(&[("page", page)])
            .header("Authorization", format!("ApiKey {KEY}"))
            .send()
            .expect("listing")
    };
    let first = get(r#"{"limit":1}"#.to_owned());
    let total = first.headers().get("x-total-count").and_then(|v| v.to_str().ok());
    let total: usize = total.and_then(|t| t.parse().ok()).expect("a total count");
    let last: Value =
        get(format!(r#"{{"offset":{},"limit":1}}"#, total.max(1) - 1)).json().expect("records");
    (total, last[0].clone())
}

/// A growing branch's snapshots form a chain (each on the one before, writing only the chunks
/// written since): after SIGKILL the newest loads with its whole chain and the WAL after it;
/// with a link in the middle of the chain damaged, the start falls back under it and replays
/// the WAL from there. Every acknowledged record is back either way.
#[test]
fn a_chain_of_snapshots_loads_and_survives_a_damaged_link() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ["--snapshot-every-records", "300", "--snapshot-every-bytes", "1000000000"];
    let mut server = Server::start_with(dir.path(), &args);
    let (_, view) = grid_with_text_column(&server);
    let branch = |dir: &Path| {
        layout(dir).into_iter().find(|(k, _)| k != CATALOG).map(|(_, g)| g).unwrap_or_default()
    };
    let mut rounds = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let records = round_of_records(rounds, 'c');
        server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(records), KEY);
        rounds += 1;
        await_snapshots(&mut server, rounds as u64);
        let generations = branch(dir.path());
        let newest = generations.keys().next_back().copied().unwrap_or(0);
        if chain_of(&generations, newest).len() >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "no chain of three links in {rounds} rounds");
    }
    // Writes after the newest snapshot live only in the WAL.
    let late = round_of_records(rounds, 'w');
    server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(late), KEY);
    server.kill();
    let expected = ((rounds + 1) * 300, json!(format!("r{rounds}-299")));

    let generations = branch(dir.path());
    let newest = *generations.keys().next_back().expect("a generation");
    let chain = chain_of(&generations, newest);
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(dir.path(), copy.path());
    let server = Server::start(dir.path());
    let (total, last) = count_and_last(&server, &view);
    assert_eq!((total, last["id"].clone()), expected, "from the chain and the WAL");
    server.kill();

    let middle = &generations[&chain[1]];
    let relative = middle.strip_prefix(dir.path()).expect("inside the data directory");
    damage(&copy.path().join(relative), Damage::FlipPayload);
    let server = restart_damaged(copy.path(), true);
    let (total, last) = count_and_last(&server, &view);
    assert_eq!((total, last["id"].clone()), expected, "past a damaged link");
    server.kill();
}

/// Snapshots after the first two whole ones borrow the sections of unchanged chunks (here the
/// sealed history chunks) and `/metrics` counts the bytes written and borrowed.
#[test]
fn incremental_snapshots_borrow_and_metrics_count_the_bytes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ["--snapshot-every-records", "300", "--snapshot-every-bytes", "1000000000"];
    let server = Server::start_with(dir.path(), &args);
    let (_, view) = grid_with_text_column(&server);
    let metric = |kind: &str| -> f64 {
        let text = reqwest::blocking::Client::new()
            .get(format!("{}/metrics", server.base))
            .header("Authorization", format!("ApiKey {KEY}"))
            .send()
            .and_then(|r| r.text())
            .expect("metrics");
        let series = format!("gridd_snapshot_bytes_total{{kind=\"{kind}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {series}in {text}"))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut round = 0;
    while metric("borrowed") == 0.0 {
        assert!(Instant::now() < deadline, "no snapshot borrowed in {round} rounds");
        let records = round_of_records(round, 'z');
        server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(records), KEY);
        round += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(metric("written") > metric("borrowed"), "whole images were written first");
    let on_base = layout(dir.path())
        .values()
        .flat_map(|g| g.values().cloned())
        .any(|f| base_of(&f).is_some());
    assert!(on_base, "a stored generation borrows from a base");
    server.terminate();
}

/// A data directory whose WAL was cut past its older records (each segment every snapshot
/// covered moved to `wal-archive`), killed, then robbed of what the live WAL cannot replace:
/// - the branch's snapshots: the start rebuilds it from its history base and the archived
///   records, then the live WAL;
/// - sled's catalogue and the catalogue's images: the start rebuilds the catalogue from the
///   archived change sets and the live ones;
///
/// and every acknowledged record is back. With the archive gone too, the start says the
/// branch's older changes are lost, and refuses to start without a catalogue (rather than
/// bootstrap an empty one over the grids).
#[test]
fn what_the_live_wal_no_longer_holds_is_rebuilt_from_the_archive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (view, added) = cut_wal(dir.path());
    let branch_snapshots: Vec<PathBuf> = layout(dir.path())
        .into_iter()
        .filter(|(key, _)| key != CATALOG)
        .flat_map(|(_, generations)| generations.into_values())
        .collect();
    assert!(!branch_snapshots.is_empty(), "the branch had snapshots");
    let count_and_last_id = |server: &Server| {
        let (count, last) = count_and_last(server, &view);
        (count, last["id"].clone())
    };
    let remove = |copy: &Path, file: &Path| {
        let relative = file.strip_prefix(dir.path()).expect("inside the data directory");
        std::fs::remove_file(copy.join(relative)).expect("removed");
    };

    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(dir.path(), copy.path());
    for file in &branch_snapshots {
        remove(copy.path(), file);
    }
    let mut server = restart_damaged(copy.path(), true);
    assert_eq!(count_and_last_id(&server), (added, json!("r0-299")), "branch rebuilt");
    let log = server.log().join("\n");
    assert!(log.contains("rebuilt from a history base"), "{log}");
    server.kill();

    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(dir.path(), copy.path());
    std::fs::remove_dir_all(copy.path().join("db")).expect("db removed");
    std::fs::remove_dir_all(copy.path().join("snapshots").join(CATALOG)).expect("images removed");
    let mut server = restart_damaged(copy.path(), true);
    assert_eq!(count_and_last_id(&server), (added, json!("r0-299")), "catalogue rebuilt");
    let log = server.log().join("\n");
    assert!(log.contains("rebuilt from the archived WAL"), "{log}");
    assert!(!log.contains("bootstrapped"), "{log}");
    server.kill();

    std::fs::remove_dir_all(dir.path().join("wal-archive")).expect("archive removed");
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(dir.path(), copy.path());
    for file in &branch_snapshots {
        remove(copy.path(), file);
    }
    let mut server = restart_damaged(copy.path(), true);
    let log = server.log().join("\n");
    assert!(log.contains("changes before the live WAL's first record are lost"), "{log}");
    let (count, _) = count_and_last(&server, &view);
    assert!(count < added, "{count} of {added}");
    server.kill();

    std::fs::remove_dir_all(dir.path().join("db")).expect("db removed");
    std::fs::remove_dir_all(dir.path().join("snapshots").join(CATALOG)).expect("images removed");
    match Server::try_start(dir.path()) {
        Ok(server) => panic!("started without a catalogue:\n{}", server.kill().join("\n")),
        Err((status, log)) => {
            assert_ne!(status, Some(0), "{log}");
            assert!(log.contains("the catalogue is lost"), "{log}");
        }
    }
}

/// A grid of 1 MB records with snapshots every 4 MB of WAL, written until a WAL segment was
/// archived, then 300 small records; SIGKILL. Its view and how many records it holds.
fn cut_wal(dir: &Path) -> (String, usize) {
    let mut server = Server::start_with(dir, &["--snapshot-every-bytes", "4000000"]);
    let (_, view) = grid_with_text_column(&server);
    let archived = || {
        std::fs::read_dir(dir.join("wal-archive"))
            .map(|entries| entries.flatten().any(|e| e.path().extension() == Some("log".as_ref())))
            .unwrap_or(false)
    };
    // Ten records to a request: a WAL segment (64 MiB) fills in seven requests.
    let big: String = "x".repeat(1 << 20);
    let mut added = 0usize;
    for round in 0..40 {
        let records: Vec<Value> = (0..10)
            .map(|i| {
                json!({"id": format!("b{round:02}-{i}"), "cells": [{"columnId": "t", "value": big}]})
            })
            .collect();
        server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(json!(records)), KEY);
        added += 10;
        if round >= 7 && archived() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(archived(), "a WAL segment was archived:\n{}", server.log().join("\n"));
    let small = round_of_records(0, 'a');
    server.call(Method::POST, &format!("/v1/views/{view}/records"), Some(small), KEY);
    server.kill();
    (view, added + 300)
}
