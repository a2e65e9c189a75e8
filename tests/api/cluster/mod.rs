//! Cluster foundation (issue 24) against real nats-server processes (`nats`: 3 servers as one
//! JetStream cluster): leases (one owner at a time, expiry after the owner stops, an owner process SIGKILLed under
//! write load and taken over without losing an acknowledged entry), fencing (a
//! stale owner's publish refused, every acknowledged entry kept), membership and placement, and
//! a NATS server lost and back. Nothing is mocked. gridd's HTTP server does not join a cluster
//! yet (see docs/CLUSTER.md), so these tests drive `gridd::cluster` directly.

mod catalog;
mod catalog_image;
mod cdn;
mod cross_grid;
mod fencing;
mod forward;
mod gridd_nodes;
mod killed_owner;
mod leases;
mod membership;
mod nats;
mod node_loss;
mod nodes;
mod task_results;
mod transmems;
mod webhooks;

use std::time::Duration;

use gridd::cluster::lease::{Lease, LeaseTable};
use gridd::cluster::{ClusterLink, ClusterSettings};

/// Short TTLs so that expiry tests stay quick (the server's defaults are 10 s).
pub const TTL: Duration = Duration::from_secs(2);

/// Settings for the cluster at `urls`, with 3 replicas and the short TTLs.
pub fn settings(urls: Vec<String>) -> ClusterSettings {
    let mut settings = ClusterSettings::new(urls);
    settings.node_ttl = TTL;
    settings.lease_ttl = TTL;
    settings.request_timeout = Duration::from_secs(5);
    settings
}

/// A node's connection, through the server(s) at `urls`.
pub async fn link(urls: Vec<String>, node: &str) -> ClusterLink {
    ClusterLink::connect(settings(urls), node).await.expect("connects to the NATS cluster")
}

/// Polls `check` every 100 ms until it holds or `within` passes; returns how long it took.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = std::time::Instant::now();
    while start.elapsed() < within {
        if check().await {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within {within:?}");
}

/// Takes `branch`'s lease as soon as it is free (tried every 100 ms, panics past `within`);
/// returns it and how long that took. The bucket's replicas expire a key each on its own timer,
/// so a read may see a lease gone before the leader does: what counts is a create succeeding.
pub async fn acquire_when_free(
    table: &LeaseTable,
    branch: &str,
    within: Duration,
) -> (Lease, Duration) {
    let start = std::time::Instant::now();
    while start.elapsed() < within {
        if let Some(lease) = table.acquire(branch).await.expect("acquire") {
            return (lease, start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{branch}: lease not free within {within:?}");
}
