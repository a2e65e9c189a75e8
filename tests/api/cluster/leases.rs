//! Branch leases: one owner at a time, renew and release by revision, expiry after the owner
//! stops renewing, epochs that only grow, ids refused before NATS sees them.

use std::time::Duration;

use gridd::cluster::lease::LeaseTable;
use gridd::cluster::ClusterError;

use super::nats::NatsCluster;
use super::{acquire_when_free, link, TTL};

#[tokio::test]
async fn one_owner_at_a_time() {
    let cluster = NatsCluster::start().await;
    let a = LeaseTable::open(&link(vec![cluster.url(0)], "node-a").await, "node-a")
        .await
        .expect("open");
    let b = LeaseTable::open(&link(vec![cluster.url(1)], "node-b").await, "node-b")
        .await
        .expect("open");
    let branches: Vec<String> = (0..20).map(|i| format!("branch{i:02}")).collect();
    // Both nodes race for every branch at once, through different NATS servers.
    let races = branches.iter().map(|branch| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            let (won_a, won_b) = tokio::join!(a.acquire(branch), b.acquire(branch));
            (
                won_a.unwrap_or_else(|e| panic!("acquire: {e:?}")),
                won_b.unwrap_or_else(|e| panic!("acquire: {e:?}")),
            )
        }
    });
    let results = futures_util::future::join_all(races).await;
    for (branch, (won_a, won_b)) in branches.iter().zip(results) {
        assert!(won_a.is_some() != won_b.is_some(), "{branch}: exactly one owner");
        let lease = won_a.or(won_b).expect("one won");
        let holder = a.holder(branch).await.expect("holder").expect("held");
        assert_eq!(holder.node, lease.node);
        assert_eq!(holder.revision, lease.revision);
    }
    let mut lease = a.acquire("solo").await.expect("acquire").expect("free");
    assert!(b.acquire("solo").await.expect("acquire").is_none());
    let first = lease.clone();
    a.renew(&mut lease).await.expect("the owner renews");
    assert!(lease.revision > first.revision);
    assert_eq!(lease.epoch, first.epoch, "renewal keeps the epoch");
    assert_eq!(b.holder("solo").await.expect("holder").expect("held").epoch, lease.epoch);
    // A renewal with an old revision is refused, so is a release.
    let mut stale = first.clone();
    assert_eq!(a.renew(&mut stale).await, Err(ClusterError::LeaseLost { branch: "solo".into() }));
    assert!(matches!(a.release(first).await, Err(ClusterError::LeaseLost { .. })));
    a.release(lease.clone()).await.expect("release");
    let taken = b.acquire("solo").await.expect("acquire").expect("free after release");
    assert!(taken.epoch > lease.epoch, "epochs grow");
    hostile_ids_are_refused(&a).await;
}

/// Ids that cannot be KV keys or subject tokens are refused before NATS sees them.
async fn hostile_ids_are_refused(table: &LeaseTable) {
    let long = "x".repeat(65);
    for bad in ["", "a.b", "a*", ">", "a b", "é", long.as_str()] {
        assert!(matches!(table.acquire(bad).await, Err(ClusterError::InvalidId { .. })), "{bad:?}");
        assert!(matches!(table.holder(bad).await, Err(ClusterError::InvalidId { .. })), "{bad:?}");
    }
}

#[tokio::test]
async fn a_stopped_owners_lease_expires() {
    let cluster = NatsCluster::start().await;
    let b = LeaseTable::open(&link(cluster.urls(), "node-b").await, "node-b").await.expect("open");
    let lease = {
        // Node A takes the lease, then stops (its connection dropped, nothing renews: as a
        // killed process leaves it).
        let a =
            LeaseTable::open(&link(cluster.urls(), "node-a").await, "node-a").await.expect("open");
        a.acquire("orphan").await.expect("acquire").expect("free")
    };
    assert!(b.acquire("orphan").await.expect("acquire").is_none(), "held until it expires");
    let (taken, took) = acquire_when_free(&b, "orphan", TTL * 4).await;
    assert!(took <= TTL + Duration::from_secs(2), "taken after {took:?} (TTL {TTL:?})");
    assert!(taken.epoch > lease.epoch);
    assert!(!lease.is_valid(), "the old owner counts its lease as expired too");
}
