//! A NATS server lost and back: with one of three servers killed (SIGKILL), leases and fenced
//! writes go on through the other two (the quorum); the server restarted catches up and serves
//! the same log.

use std::time::{Duration, Instant};

use bytes::Bytes;
use gridd::cluster::branch_log::BranchLog;
use gridd::cluster::lease::LeaseTable;

use super::nats::NatsCluster;
use super::{eventually, link};

const WAIT: Duration = Duration::from_secs(5);
/// How long the cluster may take to carry on without the lost server (new Raft leaders).
const RECOVERY: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_nats_server_lost_and_back() {
    let mut cluster = NatsCluster::start().await;
    // The node talks to servers 1 and 2 only; server 0 is the one lost.
    let urls = vec![cluster.url(1), cluster.url(2)];
    let link = link(urls, "node-a").await;
    let leases = LeaseTable::open(&link, "node-a").await.expect("open");
    let log = BranchLog::open(&link).await.expect("open");
    let mut lease = leases.acquire("grid1").await.expect("acquire").expect("free");
    let mut writer = log.fence(&lease).await.expect("fence");
    for i in 0..20 {
        log.append(&mut writer, Bytes::from(format!("before{i}"))).await.expect("append");
    }
    cluster.kill(0);
    let killed = Instant::now();
    // Writes go on once the stream and buckets have leaders among the two left.
    let mut acked = 0;
    let mut refused = 0;
    while acked < 20 {
        assert!(killed.elapsed() < RECOVERY, "no quorum after {RECOVERY:?}:\n{}", cluster.logs());
        match log.append(&mut writer, Bytes::from(format!("during{acked}"))).await {
            Ok(_) => acked += 1,
            Err(_) => {
                refused += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    eprintln!("writes carried on {:?} after the kill ({refused} refused meanwhile)", killed.elapsed());
    leases.renew(&mut lease).await.expect("the lease renews without server 0");
    cluster.restart(0).await;
    // Server 0 catches up: a client of it alone reads the same tail.
    let restarted = super::link(vec![cluster.url(0)], "node-b").await;
    let log_0 = BranchLog::open(&restarted).await.expect("open through server 0");
    let tail = writer.last;
    eventually(RECOVERY, "server 0 serves the log again", || async {
        matches!(log_0.tail("grid1").await, Ok(Some(t)) if t.sequence == tail)
    })
    .await;
    let entries = log_0.replay("grid1", 0, tail, WAIT).await.expect("replay through server 0");
    assert_eq!(entries.len(), 41, "the fence and 40 entries");
    log.append(&mut writer, Bytes::from_static(b"after")).await.expect("writes after");
}
