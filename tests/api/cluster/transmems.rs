//! Translation memories in a cluster (three gridd processes on a 3-server JetStream cluster):
//! segments written through one node are looked up through the others at once, a batch larger
//! than one NATS message lands whole, a restarted node rebuilds every memory from the log, and
//! a cleanup and a delete through one node are seen by all.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::gridd_nodes::until;
use super::nats::NatsCluster;
use super::nodes::GriddCluster;

fn segment(source: &str, target: &str) -> Value {
    json!({"sourceLanguage": "en-US", "source": source, "targetLanguage": "fr-FR", "target": target})
}

/// The targets node `node` finds for `text`, best first (None when the lookup is not 200).
async fn found(cluster: &GriddCluster, node: usize, tm: &str, text: &str) -> Option<Vec<String>> {
    let body = json!({"text": text, "sourceLanguage": "en-US", "targetLanguage": "fr-FR"});
    let path = format!("/v1/transmems/{tm}/lookup");
    let (status, answer) = cluster.call(node, Method::POST, &path, Some(&body)).await.ok()?;
    (status == 200).then(|| {
        answer
            .as_array()
            .map(|ms| ms.iter().filter_map(|m| m["target"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    })
}

/// Waits until `nodes` know memory `tm`: the memory itself is a catalogue entity, which
/// another node than the one that made it knows once its follower applied the change set (the
/// catalogue's visibility), and a busy machine can take a while to do that.
async fn known_to(cluster: &GriddCluster, tm: &str, nodes: std::ops::Range<usize>) {
    let path = format!("/v1/transmems/{tm}");
    for node in nodes {
        until(Duration::from_secs(20), "the memory known to the node", || async {
            let answer = cluster.call(node, Method::GET, &path, None).await.ok()?;
            (answer.0 == 200).then_some(())
        })
        .await;
    }
}

#[tokio::test]
async fn a_memory_written_through_one_node_is_read_through_every_node() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let (status, tm) = until(Duration::from_secs(20), "a memory made", || async {
        let answer = cluster
            .call(0, Method::POST, "/v1/transmems", Some(&json!({"name": "UI"})))
            .await
            .ok()?;
        (answer.0 == 201).then_some(answer)
    })
    .await;
    assert_eq!(status, 201, "{tm}");
    let tm = tm["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/transmems/{tm}/segments");
    known_to(&cluster, &tm, 1..3).await;

    // Written through node 1, found through every node right after the answer.
    let batch = json!([segment("Save game", "Sauvegarder"), segment("Quit", "Quitter")]);
    let (status, written) = cluster.must(1, Method::POST, &path, Some(&batch)).await;
    assert_eq!((status, written.clone()), (200, json!({"added": 2, "updated": 0})), "{written}");
    for node in 0..3 {
        let targets = found(&cluster, node, &tm, "Save game").await.expect("a lookup");
        assert_eq!(targets.first().map(String::as_str), Some("Sauvegarder"), "node {node}");
    }
    // The same source again through node 2: an update, as every node counts it.
    let again = json!([segment("Save game", "Enregistrer la partie")]);
    let (status, written) = cluster.must(2, Method::POST, &path, Some(&again)).await;
    assert_eq!((status, written), (200, json!({"added": 0, "updated": 1})));

    // A batch of 1000 long segments (about 1.4 MB of JSON: two NATS messages) lands whole.
    let long: Vec<Value> = (0..1000)
        .map(|i| segment(&format!("Line {i} {}", "lorem ipsum ".repeat(50)), &format!("Ligne {i}")))
        .collect();
    let (status, written) = cluster.must(0, Method::POST, &path, Some(&Value::Array(long))).await;
    assert_eq!((status, written.clone()), (200, json!({"added": 1000, "updated": 0})), "{written}");
    let text = format!("Line 999 {}", "lorem ipsum ".repeat(50));
    let targets = found(&cluster, 2, &tm, &text).await.expect("a lookup");
    assert_eq!(targets.first().map(String::as_str), Some("Ligne 999"));

    // A node killed and restarted rebuilds the memory from the log.
    cluster.nodes[2].kill();
    cluster.restart(2).await;
    let targets =
        until(Duration::from_secs(20), "the restarted node finds the segments", || async {
            found(&cluster, 2, &tm, "Save game").await.filter(|t| !t.is_empty())
        })
        .await;
    assert_eq!(targets[0], "Enregistrer la partie");
    let targets = found(&cluster, 2, &tm, &text).await.expect("a lookup");
    assert_eq!(targets.first().map(String::as_str), Some("Ligne 999"));

    // A cleanup through node 2 empties the memory on every node.
    let (status, body) =
        cluster.must(2, Method::PUT, &format!("/v1/transmems/{tm}/cleanup"), None).await;
    assert_eq!(status, 204, "{body}");
    for node in 0..3 {
        let targets = found(&cluster, node, &tm, "Save game").await.expect("a lookup");
        assert!(targets.is_empty(), "node {node}: {targets:?}");
    }

    // A delete through node 1: gone on every node.
    let (status, body) =
        cluster.must(1, Method::DELETE, &format!("/v1/transmems/{tm}"), None).await;
    assert_eq!(status, 200, "{body}");
    for node in 0..3 {
        let gone = until(Duration::from_secs(10), "the memory gone", || async {
            let (status, _) =
                cluster.call(node, Method::GET, &format!("/v1/transmems/{tm}"), None).await.ok()?;
            (status == 404).then_some(())
        })
        .await;
        assert_eq!(gone, ());
    }
}

#[tokio::test]
async fn a_grid_feeds_its_projects_memory_from_the_node_that_serves_it() {
    let nats = NatsCluster::start().await;
    let cluster = GriddCluster::start(nats.urls(), 3).await;
    let dbs = until(Duration::from_secs(20), "the bootstrap database", || async {
        let (status, body) = cluster.call(0, Method::GET, "/v1/databases", None).await.ok()?;
        (status == 200).then_some(body)
    })
    .await;
    let (db, project) =
        (dbs[0]["id"].as_str().expect("db").to_owned(), dbs[0]["projectId"].clone());
    let (status, grid) = cluster
        .must(0, Method::POST, &format!("/v1/grids?dbId={db}"), Some(&json!({"name": "ui"})))
        .await;
    assert_eq!(status, 201, "{grid}");
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    let columns = format!("/v1/views/{view}/columns");
    for (id, code, kind) in [("en", "enUS", "sourceLanguage"), ("fr", "frFR", "targetLanguage")] {
        let column = json!({"id": id, "name": id, "type": "language", "languageCode": code,
                            "localizationType": kind});
        let (status, body) = cluster.must(1, Method::POST, &columns, Some(&column)).await;
        assert_eq!(status, 201, "{body}");
    }
    let dependency = json!({"sourceColumnId": "en", "targetColumnId": "fr"});
    let (status, body) = cluster
        .must(2, Method::POST, &format!("/v1/views/{view}/dependencies"), Some(&dependency))
        .await;
    assert_eq!(status, 201, "{body}");
    // A memory linked to the project, made through another node than the grid's.
    let (status, tm) = cluster
        .must(
            2,
            Method::POST,
            "/v1/transmems",
            Some(&json!({"name": "Fed", "projectIds": [project]})),
        )
        .await;
    assert_eq!(status, 201, "{tm}");
    let tm = tm["id"].as_str().expect("id").to_owned();
    let records = json!([{"id": "r1", "cells": [
        {"columnId": "en", "value": "The settings were saved."},
        {"columnId": "fr", "value": "Les paramètres ont été enregistrés.", "dependencyStatus": "upToDate"}]}]);
    let (status, body) =
        cluster.must(1, Method::POST, &format!("/v1/views/{view}/records"), Some(&records)).await;
    assert_eq!(status, 201, "{body}");
    for node in 0..3 {
        let body = json!({"text": "The settings were saved.", "sourceLanguage": "enUS",
                          "targetLanguage": "frFR"});
        let path = format!("/v1/transmems/{tm}/lookup");
        let found = until(Duration::from_secs(20), "the translation fed and found", || async {
            let (status, answer) =
                cluster.call(node, Method::POST, &path, Some(&body)).await.ok()?;
            (status == 200 && answer.as_array().is_some_and(|a| !a.is_empty())).then_some(answer)
        })
        .await;
        assert_eq!(found[0]["target"], json!("Les paramètres ont été enregistrés."), "node {node}");
    }
}

/// How many entries the memories' stream holds.
async fn logged_entries(nats: &NatsCluster) -> u64 {
    let client = async_nats::connect(nats.urls()).await.expect("a NATS client");
    let mut stream =
        async_nats::jetstream::new(client).get_stream("GRIDD_tm").await.expect("the stream");
    stream.info().await.expect("the stream's state").state.messages
}

#[tokio::test]
async fn a_memorys_log_is_compacted_and_a_node_that_slept_through_it_catches_up() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let (status, tm) = until(Duration::from_secs(20), "a memory made", || async {
        let made = json!({"name": "Busy"});
        let answer = cluster.call(0, Method::POST, "/v1/transmems", Some(&made)).await.ok()?;
        (answer.0 == 201).then_some(answer)
    })
    .await;
    assert_eq!(status, 201, "{tm}");
    let tm = tm["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/transmems/{tm}/segments");
    known_to(&cluster, &tm, 1..3).await;

    // Node 2 sleeps (SIGSTOP) through more than IMAGE_EVERY updates of the same few segments,
    // written through the other two: an image is published and the entries before it purged.
    cluster.nodes[2].pause();
    let changes = gridd::api::transmems::replica::IMAGE_EVERY as usize + 150;
    let workers = 6;
    futures_util::future::join_all((0..workers).map(|worker| {
        let (cluster, path) = (&cluster, path.clone());
        async move {
            for n in (worker..changes).step_by(workers) {
                let batch = json!([segment(&format!("Source {worker}"), &format!("Cible {n}"))]);
                let (status, body) =
                    cluster.must(worker % 2, Method::POST, &path, Some(&batch)).await;
                assert_eq!(status, 200, "{body}");
            }
        }
    }))
    .await;
    // The last target each worker wrote.
    let last = |worker: usize| (worker..changes).step_by(workers).next_back().expect("a change");
    let logged = until(Duration::from_secs(30), "the memory's log compacted", || async {
        let logged = logged_entries(&nats).await;
        (logged < changes as u64 / 2).then_some(logged)
    })
    .await;
    eprintln!("the memories' log holds {logged} entries after {changes} changes");
    let purged = "a memory's log purged before its image";
    assert!(cluster.nodes.iter().any(|n| n.log_text().contains(purged)), "{}", cluster.logs());

    cluster.nodes[2].resume();
    for node in 0..3 {
        for worker in 0..workers {
            let text = format!("Source {worker}");
            let want = format!("Cible {}", last(worker));
            until(Duration::from_secs(20), "the latest target found", || async {
                let targets = found(&cluster, node, &tm, &text).await?;
                (targets.first() == Some(&want)).then_some(())
            })
            .await;
        }
    }

    // A node restarted now starts from the image and the changes after it.
    cluster.nodes[0].kill();
    cluster.restart(0).await;
    for worker in 0..workers {
        let text = format!("Source {worker}");
        let want = format!("Cible {}", last(worker));
        until(Duration::from_secs(20), "the restarted node finds the latest target", || async {
            let targets = found(&cluster, 0, &tm, &text).await?;
            (targets.first() == Some(&want)).then_some(())
        })
        .await;
    }
}
