//! Membership: heartbeats make the live-node list, a clean leave shows at once, a stopped node
//! drops out one TTL after its last beat, joins are watched, and placement over the live list
//! moves only the branches of the node that went.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use gridd::cluster::membership::{Membership, NodeInfo};
use gridd::cluster::placement;

use super::nats::NatsCluster;
use super::{eventually, link, TTL};

async fn member(cluster: &NatsCluster, server: usize, id: &str) -> Arc<Membership> {
    let me = NodeInfo { id: id.to_string(), advertise: format!("http://127.0.0.1:1/{id}") };
    let link = link(vec![cluster.url(server)], id).await;
    Arc::new(Membership::open(&link, me).await.expect("open membership"))
}

async fn live_ids(member: &Membership) -> Vec<String> {
    member.live().await.expect("live").into_iter().map(|n| n.id).collect()
}

#[tokio::test]
async fn live_nodes_joins_leaves_and_expiry() {
    let cluster = NatsCluster::start().await;
    let a = member(&cluster, 0, "node-a").await;
    let b = member(&cluster, 1, "node-b").await;
    let c = member(&cluster, 2, "node-c").await;
    let mut joins = a.watch().await.expect("watch");
    let beats: Vec<_> = [&a, &b, &c].iter().map(|m| Arc::clone(m).spawn_heartbeat()).collect();
    let all = ["node-a", "node-b", "node-c"];
    for m in [&a, &b, &c] {
        eventually(TTL, "every node sees the three", || async { live_ids(m).await == all }).await;
    }
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let entry = tokio::time::timeout(TTL, joins.next()).await.expect("a join").expect("open");
        let key = entry.expect("entry").key;
        if !seen.contains(&key) {
            seen.push(key);
        }
    }
    seen.sort();
    assert_eq!(seen, all);
    let branches: Vec<String> = (0..300).map(|i| format!("g{i:05}")).collect();
    let before: Vec<String> =
        branches.iter().map(|g| placement::owner(g, &all).expect("owner").to_string()).collect();
    // A clean leave shows at once.
    beats[2].abort();
    c.leave().await.expect("leave");
    let left = eventually(TTL, "node-c's leave seen", || async {
        live_ids(&a).await == ["node-a", "node-b"]
    })
    .await;
    assert!(left < Duration::from_secs(1), "a leave is seen at once, not at expiry: {left:?}");
    // A node that stops beating drops out within a TTL (plus the server's expiry tick).
    beats[1].abort();
    let took =
        eventually(TTL * 3, "node-b drops out", || async { live_ids(&a).await == ["node-a"] })
            .await;
    assert!(took <= TTL + Duration::from_secs(2), "{took:?}");
    // Read through another server (whose replica expires keys on its own timer): the same,
    // node-a still live past the TTL since it beats.
    eventually(TTL, "node-b's server agrees", || async { live_ids(&b).await == ["node-a"] }).await;
    let live = ["node-a"];
    for (branch, was) in branches.iter().zip(&before) {
        let now = placement::owner(branch, &live).expect("owner");
        if was == "node-a" {
            assert_eq!(now, &"node-a", "a surviving owner keeps its branches");
        }
    }
    beats[0].abort();
}
