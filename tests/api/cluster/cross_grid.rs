//! What one request needs of a grid another node serves (three gridd processes on a 3-server
//! JetStream cluster): a reference column pointing there (made, written with ids checked
//! there, read with the values found there), a template grid there, a view key for a view
//! there, and a database duplicated with a grid there. The two grids are on different nodes,
//! as the lease bucket says.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::gridd_nodes::{branched, grid_on, owner_of, record, until, Branched};
use super::nats::NatsCluster;
use super::nodes::GriddCluster;

/// The ids and values of reference cell `column` of record `id` among `records`.
fn refs(records: &Value, id: &str, column: &str) -> (Value, Value) {
    let record = records
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["id"] == json!(id)))
        .unwrap_or_else(|| panic!("record {id} in {records}"));
    let cell = record["cells"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["columnId"] == json!(column)))
        .unwrap_or_else(|| panic!("cell {column} in {record}"));
    (cell["referencedIds"].clone(), cell["value"].clone())
}

#[tokio::test]
async fn a_grid_served_elsewhere_is_referenced_templated_keyed_and_duplicated() {
    let nats = NatsCluster::start().await;
    let cluster = GriddCluster::start(nats.urls(), 3).await;
    // Grid A made through node 0, grid B through the others until their owners differ.
    let (grid_a, view_a) = grid_on(&cluster, 0).await;
    let owner_a = owner_of(&nats, &grid_a).await;
    let mut b = None;
    for attempt in 0..6 {
        let (grid, view) = grid_on(&cluster, 1 + attempt % 2).await;
        let owner = owner_of(&nats, &grid).await;
        if owner != owner_a {
            b = Some((grid, view, owner));
            break;
        }
    }
    let (grid_b, view_b, owner_b) = b.expect("a grid on another node than A's");
    let third = (0..3).find(|i| *i != owner_a && *i != owner_b).expect("a third node");
    let records_b = format!("/v1/views/{view_b}/records");
    for id in ["b1", "b2"] {
        let (status, body) = cluster.must(third, Method::POST, &records_b, Some(&record(id))).await;
        assert_eq!(status, 201, "{body}");
    }

    // A reference column on A (served by A's owner) pointing at B (served by B's owner),
    // made through B's owner: the column's target is checked on B's node.
    let columns_a = format!("/v1/views/{view_a}/columns");
    let column = json!({"id": "ref", "name": "Ref", "type": "reference",
                        "reference": {"gridId": grid_b, "columnId": "title", "type": "row"}});
    let (status, body) = cluster.must(owner_b, Method::POST, &columns_a, Some(&column)).await;
    assert_eq!(status, 201, "{body}\n{}", cluster.logs());
    let missing = json!({"id": "bad", "name": "Bad", "type": "reference",
                         "reference": {"gridId": grid_b, "columnId": "nosuch", "type": "row"}});
    let (status, body) = cluster.must(third, Method::POST, &columns_a, Some(&missing)).await;
    assert_eq!(status, 400, "a column B lacks: {body}");

    // Writes into A's reference column: ids B has are taken, an id it lacks is refused.
    let records_a = format!("/v1/views/{view_a}/records");
    let good = json!([{"id": "a1", "cells": [{"columnId": "ref", "value": ["b2", "b1"]}]}]);
    let (status, body) = cluster.must(third, Method::POST, &records_a, Some(&good)).await;
    assert_eq!(status, 201, "{body}\n{}", cluster.logs());
    assert_eq!(refs(&body, "a1", "ref"), (json!(["b2", "b1"]), json!(["T b2", "T b1"])));
    let bad = json!([{"id": "a2", "cells": [{"columnId": "ref", "value": "nope"}]}]);
    let (status, body) = cluster.must(owner_b, Method::POST, &records_a, Some(&bad)).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], json!("referenceRecordNotFound"), "{body}");

    // Reads through every node show B's current values.
    let renamed = json!([{"id": "b1", "cells": [{"columnId": "title", "value": "renamed"}]}]);
    let (status, body) = cluster.must(owner_a, Method::PATCH, &records_b, Some(&renamed)).await;
    assert_eq!(status, 200, "{body}");
    for node in 0..3 {
        let (status, body) = cluster.must(node, Method::GET, &records_a, None).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body.as_array().map(Vec::len), Some(1), "node {node}: {body}");
        assert_eq!(
            refs(&body, "a1", "ref"),
            (json!(["b2", "b1"]), json!(["T b2", "renamed"])),
            "node {node}"
        );
    }

    // B as the template of a grid made through A's owner.
    let (_, dbs) = cluster.must(owner_a, Method::GET, "/v1/databases", None).await;
    let db = dbs[0]["id"].as_str().expect("db id").to_owned();
    let project = dbs[0]["projectId"].clone();
    let from_template = json!({"name": "from B", "templateGridId": grid_b});
    let (status, made) = cluster
        .must(owner_a, Method::POST, &format!("/v1/grids?dbId={db}"), Some(&from_template))
        .await;
    assert_eq!(status, 201, "{made}\n{}", cluster.logs());
    let made_view = made["defaultAccessViewId"].as_str().expect("view").to_owned();
    let (status, view) =
        cluster.must(third, Method::GET, &format!("/v1/views/{made_view}"), None).await;
    assert_eq!(status, 200, "{view}");
    let ids: Vec<&str> = view["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(ids.contains(&"title"), "the template's column: {view}");

    // A view key for a view of B, made and used through A's owner.
    let view_body = json!({"name": "Titles", "gridId": grid_b, "columns": [{"id": "title"}]});
    let (status, titles) = cluster.must(owner_a, Method::POST, "/v1/views", Some(&view_body)).await;
    assert_eq!(status, 200, "{titles}");
    let titles = titles["id"].as_str().expect("view id").to_owned();
    let key_body = json!({"name": "titles", "kind": "view", "viewId": titles});
    let (status, key) =
        cluster.must(owner_a, Method::POST, "/admin/v1/api-keys", Some(&key_body)).await;
    assert_eq!(status, 201, "{key}\n{}", cluster.logs());
    let secret = key["key"].as_str().expect("secret").to_owned();
    let key_id = key["id"].clone();
    for node in 0..3 {
        let (status, keys) = cluster.must(node, Method::GET, "/admin/v1/api-keys", None).await;
        assert_eq!(status, 200, "{keys}");
        let listed = keys.as_array().is_some_and(|ks| ks.iter().any(|k| k["id"] == key_id));
        assert!(listed, "node {node} lists the view key: {keys}");
    }
    let read = until(Duration::from_secs(10), "the view key reads B", || async {
        let answer = cluster
            .http
            .get(format!("{}/v1/views/{titles}/records", cluster.nodes[owner_a].url))
            .header("Authorization", format!("ApiKey {secret}"))
            .send()
            .await
            .ok()?;
        (answer.status() == 200).then_some(())?;
        answer.json::<Value>().await.ok()
    })
    .await;
    assert_eq!(read.as_array().map(Vec::len), Some(2), "{read}");

    // The database duplicated through A's owner: B's copy is read from the cluster.
    let (status, copy) = cluster
        .must(
            owner_a,
            Method::POST,
            &format!("/v1/databases/{db}/duplicate?projectId={project}"),
            Some(&json!({"name": "Copy"})),
        )
        .await;
    assert_eq!(status, 200, "{copy}\n{}", cluster.logs());
    let copy_db = copy["id"].as_str().expect("copy id");
    let (status, grids) =
        cluster.must(third, Method::GET, &format!("/v1/grids?dbId={copy_db}"), None).await;
    assert_eq!(status, 200, "{grids}");
    let copy_of_b = grids
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["name"] == json!("g") && g["id"] != json!(grid_a)))
        .map(|g| g["defaultAccessViewId"].as_str().unwrap_or_default().to_owned());
    let mut seen = BTreeSet::new();
    for g in grids.as_array().expect("grids") {
        let view = g["defaultAccessViewId"].as_str().expect("view");
        let (status, records) =
            cluster.must(third, Method::GET, &format!("/v1/views/{view}/records"), None).await;
        assert_eq!(status, 200, "{records}");
        for r in records.as_array().expect("records") {
            seen.insert(r["id"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert!(copy_of_b.is_some(), "{grids}");
    for id in ["a1", "b1", "b2"] {
        assert!(seen.contains(id), "{id} copied: {seen:?}");
    }
}

#[tokio::test]
async fn a_branch_made_through_another_node_outlives_its_owner() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let Branched { owner, others, branch_view, .. } = branched(&nats, &cluster).await;
    let path = format!("/v1/views/{branch_view}/records");

    cluster.nodes[owner].kill();
    let ids = until(Duration::from_secs(30), "the branch served after the takeover", || async {
        let (status, records) = cluster.call(others[1], Method::GET, &path, None).await.ok()?;
        (status == 200).then_some(())?;
        let ids: BTreeSet<String> = records
            .as_array()?
            .iter()
            .filter_map(|r| r["id"].as_str().map(str::to_owned))
            .collect();
        Some(ids)
    })
    .await;
    assert_eq!(ids, BTreeSet::from(["m1".to_owned(), "b1".to_owned()]), "{}", cluster.logs());
}
