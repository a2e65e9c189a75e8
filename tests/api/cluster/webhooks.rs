//! Webhooks in a cluster (three gridd processes on a 3-server JetStream cluster): a hook made
//! through another node than its grid's owner delivers the grid's changes, and goes on
//! delivering from the node that takes the grid over when the owner is SIGKILLed.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use super::gridd_nodes::{grid_on, owner_of, record, until};
use super::nats::NatsCluster;
use super::nodes::GriddCluster;
use crate::webhooks::Receiver;

/// The record ids delivered with success so far.
fn delivered(receiver: &Receiver) -> BTreeSet<String> {
    receiver
        .received()
        .iter()
        .filter(|r| r.ok() && r.header("x-gridd-event") == "records")
        .flat_map(|r| {
            let body = r.json();
            let ids: Vec<String> = body["records"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|record| record["id"].as_str().map(str::to_owned))
                .collect();
            ids
        })
        .collect()
}

#[tokio::test]
async fn a_hook_delivers_from_whichever_node_owns_its_grid() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let (grid, view) = grid_on(&cluster, 0).await;
    let owner = owner_of(&nats, &grid).await;
    let others: Vec<usize> = (0..3).filter(|i| *i != owner).collect();
    let receiver = Receiver::failing_first(0);
    let body = json!({"url": receiver.url(), "viewId": view});
    let (status, hook) = cluster.must(others[0], Method::POST, "/v1/webhooks", Some(&body)).await;
    assert_eq!(status, 201, "{hook}");
    let records = format!("/v1/views/{view}/records");
    let (status, body) = cluster.must(others[1], Method::POST, &records, Some(&record("r1"))).await;
    assert_eq!(status, 201, "{body}");
    until(Duration::from_secs(20), "r1 delivered", || async {
        delivered(&receiver).contains("r1").then_some(())
    })
    .await;

    cluster.nodes[owner].kill();
    until(Duration::from_secs(30), "a write after the takeover", || async {
        let (status, _) =
            cluster.call(others[0], Method::POST, &records, Some(&record("r2"))).await.ok()?;
        (status == 201).then_some(())
    })
    .await;
    until(Duration::from_secs(30), "r2 delivered by the new owner", || async {
        delivered(&receiver).contains("r2").then_some(())
    })
    .await;
}
