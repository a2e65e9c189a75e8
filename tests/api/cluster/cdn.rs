//! CDNs in a cluster (three gridd processes on a 3-server JetStream cluster): a version
//! published through one node is served by every node (an allow-listed CDN too, checked
//! against the client's own address), and by the survivors after the node that wrote it is
//! SIGKILLed; the grid's new owner publishes the next version.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use super::gridd_nodes::{owner_of, until};
use super::nats::NatsCluster;
use super::nodes::GriddCluster;

/// A GET's status and bytes from node `node`, without a key (CDN files are public).
async fn fetch(cluster: &GriddCluster, node: usize, path: &str) -> Option<(u16, Vec<u8>)> {
    let url = format!("{}{path}", cluster.nodes[node].url);
    let answer = cluster.http.get(url).send().await.ok()?;
    let status = answer.status().as_u16();
    Some((status, answer.bytes().await.ok()?.to_vec()))
}

#[tokio::test]
async fn a_published_version_is_served_by_every_node_and_outlives_its_writer() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let db = until(Duration::from_secs(20), "the bootstrap database", || async {
        let (status, body) = cluster.call(0, Method::GET, "/v1/databases", None).await.ok()?;
        (status == 200).then(|| body[0]["id"].as_str().map(str::to_owned)).flatten()
    })
    .await;
    let (status, grid) = cluster
        .must(0, Method::POST, &format!("/v1/grids?dbId={db}"), Some(&json!({"name": "s"})))
        .await;
    assert_eq!(status, 201, "{grid}");
    let grid_id = grid["id"].as_str().expect("grid").to_owned();
    let view = grid["defaultAccessViewId"].as_str().expect("view").to_owned();
    let column = json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS",
                        "localizationType": "sourceLanguage"});
    let (status, body) =
        cluster.must(1, Method::POST, &format!("/v1/views/{view}/columns"), Some(&column)).await;
    assert_eq!(status, 201, "{body}");
    let records = json!([{"id": "r1", "cells": [{"columnId": "en", "value": "Hello"}]}]);
    let (status, body) =
        cluster.must(2, Method::POST, &format!("/v1/views/{view}/records"), Some(&records)).await;
    assert_eq!(status, 201, "{body}");

    let owner = owner_of(&nats, &grid_id).await;
    let others: Vec<usize> = (0..3).filter(|i| *i != owner).collect();
    let mut cdns = Vec::new();
    for (name, allow) in [("open", None), ("listed", Some("127.0.0.1"))] {
        let mut body = json!({"gridId": grid_id, "name": name});
        if let Some(allow) = allow {
            body["whiteListIP"] = json!(allow);
        }
        let (status, cdn) = cluster.must(others[0], Method::POST, "/v1/cdns", Some(&body)).await;
        assert_eq!(status, 201, "{cdn}");
        let id = cdn["id"].as_str().expect("id").to_owned();
        // Through another node, which may learn of the CDN a moment later (503 meanwhile).
        let path = format!("/v1/cdns/{id}/publish");
        let (status, published) = until(Duration::from_secs(20), "a publish", || async {
            let answer =
                cluster.call(others[1], Method::PUT, &path, Some(&json!({}))).await.ok()?;
            (answer.0 != 503).then_some(answer)
        })
        .await;
        assert_eq!(status, 200, "{published}\n{}", cluster.logs());
        cdns.push(id);
    }
    // Served through the writer (the grid's owner) and one other node; the third node is first
    // asked after the writer is gone.
    let mut served = Vec::new();
    for id in &cdns {
        let path = format!("/cdn/{id}/enUS.json");
        let (status, bytes) = fetch(&cluster, owner, &path).await.expect("an answer");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        assert!(String::from_utf8_lossy(&bytes).contains("Hello"));
        assert_eq!(fetch(&cluster, others[0], &path).await, Some((200, bytes.clone())));
        served.push(bytes);
    }

    cluster.nodes[owner].kill();
    for (id, bytes) in cdns.iter().zip(&served) {
        for path in [format!("/cdn/{id}/enUS.json"), format!("/cdn/{id}/v/1/enUS.json")] {
            let answer = fetch(&cluster, others[1], &path).await;
            assert_eq!(answer, Some((200, bytes.clone())), "{path}\n{}", cluster.logs());
        }
    }

    // The grid's new owner publishes version 2 of the first CDN; every survivor serves it.
    let (status, published) =
        until(Duration::from_secs(30), "a publish after the takeover", || {
            let path = format!("/v1/cdns/{}/publish", cdns[0]);
            let cluster = &cluster;
            let node = others[0];
            async move {
                let answer = cluster.call(node, Method::PUT, &path, Some(&json!({}))).await.ok()?;
                (answer.0 == 200).then_some(answer)
            }
        })
        .await;
    assert_eq!(status, 200, "{published}");
    for node in others.iter().copied() {
        let (status, bytes) =
            fetch(&cluster, node, &format!("/cdn/{}/v/2/manifest.json", cdns[0])).await.expect("2");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    }
}
