//! Three gridd processes on a 3-server JetStream cluster, as users run them: requests to any
//! node; the owner of a grid SIGKILLed under write load, then every acknowledged write present
//! and the grid served by another node; the old owner paused past its lease and resumed cannot
//! write; a restarted node serves again.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use super::nats::NatsCluster;
use super::nodes::{GriddCluster, LEASE_TTL_MS};

/// Polls `check` until it gives a value, at most `within`.
pub(super) async fn until<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    while start.elapsed() < within {
        if let Some(value) = check().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within {within:?}");
}

/// A grid created through `node` with a `title` column: (grid id, view id).
pub(super) async fn grid_on(cluster: &GriddCluster, node: usize) -> (String, String) {
    let db = until(Duration::from_secs(20), "the bootstrap database", || async {
        let (status, body) = cluster.call(node, Method::GET, "/v1/databases", None).await.ok()?;
        (status == 200).then(|| body[0]["id"].as_str().map(str::to_owned)).flatten()
    })
    .await;
    let (status, grid) = cluster
        .must(node, Method::POST, &format!("/v1/grids?dbId={db}"), Some(&json!({"name": "g"})))
        .await;
    assert_eq!(status, 201, "{grid}\n{}", cluster.logs());
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    let column = json!({"id": "title", "name": "Title", "type": "singleLine"});
    let (status, body) =
        cluster.must(node, Method::POST, &format!("/v1/views/{view}/columns"), Some(&column)).await;
    assert_eq!(status, 201, "{body}");
    // The tests write through any node right after; a read through each also leaves every
    // node's locate cache naming the owner (an owner paused after it must still lose the grid).
    known_everywhere(cluster, &view).await;
    (grid["id"].as_str().expect("grid id").to_owned(), view)
}

/// Waits until every node knows `view`: a grid made through one node is known to another once
/// that node's catalogue follower applied its creation.
async fn known_everywhere(cluster: &GriddCluster, view: &str) {
    let path = format!("/v1/views/{view}");
    for node in 0..cluster.nodes.len() {
        until(Duration::from_secs(20), "the view known to every node", || async {
            let answer = cluster.call(node, Method::GET, &path, None).await.ok()?;
            (answer.0 == 200).then_some(())
        })
        .await;
    }
}

pub(super) fn record(id: &str) -> Value {
    json!([{"id": id, "cells": [{"columnId": "title", "value": format!("T {id}")}]}])
}

/// A grid made through node 0 with a branch: record `m1` written to the grid and `b1` to the
/// branch, the branch made and both written through the two nodes that do not own the grid.
pub(super) struct Branched {
    pub view: String,
    pub owner: usize,
    /// The other two nodes.
    pub others: Vec<usize>,
    pub branch_view: String,
}

pub(super) async fn branched(nats: &NatsCluster, cluster: &GriddCluster) -> Branched {
    let (grid, view) = grid_on(cluster, 0).await;
    let owner = owner_of(nats, &grid).await;
    let others: Vec<usize> = (0..3).filter(|i| *i != owner).collect();
    let path = format!("/v1/views/{view}/records");
    let (status, body) = cluster.must(others[0], Method::POST, &path, Some(&record("m1"))).await;
    assert_eq!(status, 201, "{body}");
    // Made through another node (forwarded to the owner, which stores its first image in the
    // cluster before it answers), then written through the third.
    let branches = format!("/v1/branches?gridId={grid}");
    let made = json!({"name": "release"});
    let (status, branch) = cluster.must(others[1], Method::POST, &branches, Some(&made)).await;
    assert_eq!(status, 201, "{branch}\n{}", cluster.logs());
    let branch_view = branch["defaultAccessViewId"].as_str().expect("view").to_owned();
    let path = format!("/v1/views/{branch_view}/records");
    let (status, body) = cluster.must(others[0], Method::POST, &path, Some(&record("b1"))).await;
    assert_eq!(status, 201, "{body}");
    Branched { view, owner, others, branch_view }
}

/// The index of the node holding the grid's lease (as the lease bucket says).
pub(super) async fn owner_of(nats: &NatsCluster, grid: &str) -> usize {
    let link = super::link(nats.urls(), "observer").await;
    let leases = gridd::cluster::lease::LeaseTable::open(&link, "observer").await.expect("leases");
    let holder = until(Duration::from_secs(20), "the grid's owner", || async {
        leases.holder(grid).await.ok().flatten()
    })
    .await;
    holder.node.trim_start_matches("node").parse().expect("a node index")
}

/// The record ids node `node` lists for the view, page by page (None when a page does not
/// answer 200).
async fn listed(cluster: &GriddCluster, node: usize, view: &str) -> Option<BTreeSet<String>> {
    let mut ids = BTreeSet::new();
    for page in 0.. {
        let query = format!("%7B%22offset%22%3A{}%2C%22limit%22%3A1000%7D", page * 1000);
        let path = format!("/v1/views/{view}/records?page={query}");
        let (status, body) = cluster.call(node, Method::GET, &path, None).await.ok()?;
        if status != 200 {
            return None;
        }
        let records = body.as_array()?;
        ids.extend(records.iter().filter_map(|r| r["id"].as_str().map(str::to_owned)));
        if records.len() < 1000 {
            break;
        }
    }
    Some(ids)
}

#[tokio::test]
async fn any_node_serves_and_a_killed_owner_loses_no_acknowledged_write() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let (grid, view) = grid_on(&cluster, 1).await;
    let path = format!("/v1/views/{view}/records");

    // Requests to any node: written through 0 and 2, read through all three.
    for (i, node) in [0usize, 2, 1].into_iter().enumerate() {
        let id = format!("first{i}");
        let (status, body) = until(Duration::from_secs(10), "a write through any node", || async {
            let answer = cluster.call(node, Method::POST, &path, Some(&record(&id))).await.ok()?;
            (answer.0 == 201).then_some(answer)
        })
        .await;
        assert_eq!(status, 201, "{body}");
    }
    for node in 0..3 {
        let ids = listed(&cluster, node, &view).await.expect("listed");
        assert_eq!(ids.len(), 3, "node {node}: {ids:?}");
    }

    // Write load through the two other nodes while the owner is SIGKILLed.
    let owner = owner_of(&nats, &grid).await;
    let others: Vec<usize> = (0..3).filter(|i| *i != owner).collect();
    // A file uploaded through another node (forwarded) must follow the grid too.
    let shots = json!({"id": "shots", "name": "Shots", "type": "files"});
    let (status, _) =
        cluster.must(owner, Method::POST, &format!("/v1/views/{view}/columns"), Some(&shots)).await;
    assert_eq!(status, 201);
    let png = b"\x89PNG\r\n\x1a\n bytes that must survive the owner".to_vec();
    let body = crate::files::multipart(&[
        ("recordId", None, b"first0"),
        ("columnId", None, b"shots"),
        ("file", Some(("shot.png", "image/png")), &png),
    ]);
    let content_type = format!("multipart/form-data; boundary={}", crate::files::BOUNDARY);
    let upload = format!("/v1/views/{view}/files");
    let (status, file) =
        cluster.raw(others[0], &upload, &content_type, body).await.expect("upload answers");
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&file));
    let file: Value = serde_json::from_slice(&file).expect("file json");
    let file_id = file["id"].as_str().expect("file id").to_owned();
    let mut acknowledged = BTreeSet::from(["first0".to_owned(), "first1".into(), "first2".into()]);
    let (mut killed_at, mut back_at) = (None, None);
    let started = Instant::now();
    let mut failures = 0;
    for n in 0.. {
        let id = format!("w{n}");
        let node = others[n % 2];
        let answer = cluster.call(node, Method::POST, &path, Some(&record(&id))).await;
        match answer {
            Ok((201, _)) => {
                acknowledged.insert(id);
                if killed_at.is_some() && back_at.is_none() {
                    back_at = Some(Instant::now());
                }
            }
            Ok((status, body)) => {
                failures += 1;
                assert!(status == 503, "write refused with {status}: {body}");
            }
            Err(_) => failures += 1,
        }
        if killed_at.is_none() && started.elapsed() > Duration::from_millis(1500) {
            cluster.nodes[owner].kill();
            killed_at = Some(Instant::now());
        }
        if back_at.is_some_and(|at| at.elapsed() > Duration::from_secs(1)) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no takeover:\n{}", cluster.logs());
    }
    let takeover = back_at.expect("back") - killed_at.expect("killed");
    eprintln!(
        "owner SIGKILLed: writes through other nodes back after {takeover:?} \
         (lease TTL {LEASE_TTL_MS} ms); {} acknowledged, {failures} refused meanwhile",
        acknowledged.len()
    );
    assert!(takeover < Duration::from_millis(LEASE_TTL_MS * 10), "takeover took {takeover:?}");
    for node in others.iter().copied() {
        let ids = listed(&cluster, node, &view).await.expect("listed after the takeover");
        let lost: Vec<_> = acknowledged.difference(&ids).collect();
        assert!(lost.is_empty(), "node {node} lost acknowledged writes {lost:?}");
    }

    let download = format!("/v1/views/{view}/files/{file_id}");
    for node in others.iter().copied() {
        let (status, bytes) = cluster.bytes(node, &download).await.expect("download answers");
        assert_eq!(
            (status, bytes),
            (200, png.clone()),
            "the file through node {node}\n{}",
            cluster.logs()
        );
    }

    // The killed node restarted serves the grid again (through its owner).
    cluster.restart(owner).await;
    let ids = until(Duration::from_secs(20), "the restarted node lists the grid", || async {
        listed(&cluster, owner, &view).await.filter(|ids| ids.is_superset(&acknowledged))
    })
    .await;
    assert!(ids.is_superset(&acknowledged));
    let (status, body) =
        until(Duration::from_secs(20), "a write through the restarted node", || async {
            let answer =
                cluster.call(owner, Method::POST, &path, Some(&record("after"))).await.ok()?;
            (answer.0 == 201).then_some(answer)
        })
        .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn an_owner_paused_past_its_lease_cannot_write_when_it_wakes() {
    let nats = NatsCluster::start().await;
    let cluster = GriddCluster::start(nats.urls(), 3).await;
    let (grid, view) = grid_on(&cluster, 0).await;
    let path = format!("/v1/views/{view}/records");
    let owner = owner_of(&nats, &grid).await;
    let other = (owner + 1) % 3;
    let (status, _) = cluster.must(owner, Method::POST, &path, Some(&record("before"))).await;
    assert_eq!(status, 201);

    // The owner frozen past its lease: another node takes the grid and writes to it.
    cluster.nodes[owner].pause();
    let taken =
        until(Duration::from_secs(30), "a write through another node after the pause", || {
            let path = path.clone();
            let cluster = &cluster;
            async move {
                let answer =
                    cluster.call(other, Method::POST, &path, Some(&record("taken"))).await.ok()?;
                (answer.0 == 201).then_some(())
            }
        })
        .await;
    let () = taken;

    // Woken, node 0 still has the grid's actor; its write must not land.
    cluster.nodes[owner].resume();
    let answer = cluster.call(owner, Method::POST, &path, Some(&record("stale"))).await;
    let stale_status = answer.as_ref().map(|a| a.0).unwrap_or(0);
    // Either refused (its publish fenced: 503), or served by the new owner after node 0 saw
    // its lease gone and forwarded (201): what must never be is a write only node 0 has.
    let ids = until(Duration::from_secs(10), "the grid listed through node 1", || async {
        listed(&cluster, other, &view).await
    })
    .await;
    assert!(ids.contains("before") && ids.contains("taken"), "{ids:?}");
    if stale_status == 201 {
        assert!(ids.contains("stale"), "a 201 from the woken owner must be in the cluster");
    } else {
        assert!(!ids.contains("stale"), "a refused write landed: {ids:?}");
    }
    // And the woken node serves the cluster's grid afterwards.
    let ids0 = until(Duration::from_secs(20), "node 0 lists the cluster's grid", || async {
        listed(&cluster, owner, &view).await.filter(|got| got.contains("taken"))
    })
    .await;
    assert!(ids0.contains("before"));
}

#[tokio::test]
async fn writes_go_on_through_a_nats_server_lost_and_back() {
    let mut nats = NatsCluster::start().await;
    let cluster = GriddCluster::start(nats.urls(), 3).await;
    let (_grid, view) = grid_on(&cluster, 2).await;
    let path = format!("/v1/views/{view}/records");
    let mut acknowledged = BTreeSet::new();
    let (mut refused, mut after_kill) = (0, 0);
    let started = Instant::now();
    let (mut killed, mut restarted) = (false, false);
    // Writes through every node; one NATS server SIGKILLed at 2 s, back at 7 s; on until 30
    // writes were acknowledged after the restart (the streams' Raft leaders may have been on
    // the killed server: JetStream elects new ones in seconds, and an owner whose appends
    // failed meanwhile gives its grid up to be loaded again from the log).
    let (mut back_at, mut after_restart) = (None, 0);
    for n in 0.. {
        let id = format!("n{n}");
        match cluster.call(n % 3, Method::POST, &path, Some(&record(&id))).await {
            Ok((201, _)) => {
                acknowledged.insert(id);
                after_kill += usize::from(killed);
                after_restart += usize::from(restarted);
                if restarted && back_at.is_none() {
                    back_at = Some(started.elapsed());
                }
            }
            Ok((503, _)) | Err(_) => {
                refused += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok((status, body)) => panic!("write refused with {status}: {body}"),
        }
        let at = started.elapsed();
        if !killed && at > Duration::from_secs(2) {
            nats.kill(0);
            killed = true;
        }
        if !restarted && at > Duration::from_secs(7) {
            nats.restart(0).await;
            restarted = true;
        }
        if after_restart >= 30 {
            break;
        }
        assert!(at < Duration::from_secs(90), "writes did not resume:\n{}", cluster.logs());
    }
    eprintln!(
        "{} writes acknowledged ({after_kill} after the kill), {refused} refused; \
         the first after the restart at {back_at:?} (kill at 2 s, restart at 7 s)",
        acknowledged.len()
    );
    let ids =
        until(Duration::from_secs(20), "every node lists every acknowledged write", || async {
            let mut all = Vec::new();
            for node in 0..3 {
                all.push(listed(&cluster, node, &view).await?);
            }
            all.iter().all(|ids| ids.is_superset(&acknowledged)).then_some(all)
        })
        .await;
    assert_eq!(ids.len(), 3);
}

#[tokio::test]
async fn a_joining_node_is_handed_its_share_of_the_grids() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 2).await;
    // Grids with a record each, made through both nodes (placed on the two of them), until
    // three of them would be placed on a third node (a third of them are, by placement).
    let live = ["node0".to_owned(), "node1".to_owned(), "node2".to_owned()];
    let on_node2 = |grid: &str| {
        gridd::cluster::placement::owner(grid, &live).map(String::as_str) == Some("node2")
    };
    let mut moving = Vec::new();
    for i in 0..60 {
        let (grid, view) = grid_on(&cluster, i % 2).await;
        let path = format!("/v1/views/{view}/records");
        let (status, body) = cluster.must(i % 2, Method::POST, &path, Some(&record("r"))).await;
        assert_eq!(status, 201, "{body}");
        if on_node2(&grid) {
            moving.push((grid, view));
            if moving.len() == 3 {
                break;
            }
        }
    }
    assert!(!moving.is_empty(), "sixty grids and none placed on a third node");
    let link = super::link(nats.urls(), "observer").await;
    let leases = gridd::cluster::lease::LeaseTable::open(&link, "observer").await.expect("leases");

    let joined = cluster.add_node().await;
    for (grid, view) in &moving {
        until(Duration::from_secs(30), "the grid handed over to the new node", || async {
            let holder = leases.holder(grid).await.ok().flatten()?;
            (holder.node == "node2").then_some(())
        })
        .await;
        // Served by the newcomer with what was written before the handover, through any node.
        for node in [0, 1, joined] {
            let ids = until(Duration::from_secs(20), "the moved grid listed", || async {
                listed(&cluster, node, view).await.filter(|ids| ids.contains("r"))
            })
            .await;
            assert_eq!(ids.len(), 1, "node {node}: {ids:?}");
        }
        let path = format!("/v1/views/{view}/records");
        let (status, body) = cluster.must(joined, Method::POST, &path, Some(&record("s"))).await;
        assert_eq!(status, 201, "{body}");
    }
}
