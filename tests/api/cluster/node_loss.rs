//! A NATS server lost and back: with one of three servers killed (SIGKILL), leases and fenced
//! writes go on through the other two (the quorum); the server restarted catches up and serves
//! the same log.

use std::time::{Duration, Instant};

use bytes::Bytes;
use gridd::cluster::branch_log::{BranchLog, EntryKind, FencedWriter};
use gridd::cluster::lease::{Lease, LeaseTable};
use gridd::cluster::ClusterError;

use super::nats::NatsCluster;
use super::{eventually, link};

const WAIT: Duration = Duration::from_secs(5);
/// How long the cluster may take to carry on without the lost server (new Raft leaders: 5 to
/// 10 s measured on 2 busy cores).
const RECOVERY: Duration = Duration::from_secs(25);

#[tokio::test]
async fn a_nats_server_lost_and_back() {
    let mut cluster = NatsCluster::start().await;
    // The node talks to servers 1 and 2 only; server 0 is the one lost.
    let urls = vec![cluster.url(1), cluster.url(2)];
    let link = link(urls, "node-a").await;
    let leases = LeaseTable::open(&link, "node-a").await.expect("open");
    let log = BranchLog::open(&link).await.expect("open");
    let lease = leases.acquire("grid1").await.expect("acquire").expect("free");
    let mut writer = log.fence(&lease).await.expect("fence");
    for i in 0..20 {
        log.append(&mut writer, Bytes::from(format!("before{i}"))).await.expect("append");
    }
    cluster.kill(0);
    let killed = Instant::now();
    let mut acked: Vec<String> = (0..20).map(|i| format!("before{i}")).collect();
    let failed = write_through(&cluster, &log, (&lease, &mut writer), &mut acked, killed).await;
    eprintln!(
        "writes carried on {:?} after the kill ({failed} failed meanwhile)",
        killed.elapsed()
    );
    // The lease bucket answers without server 0 too (a create taken or refused: not an error).
    eventually(RECOVERY, "leases work without server 0", || async {
        leases.acquire("grid2").await.is_ok()
    })
    .await;
    cluster.restart(0).await;
    // Server 0 catches up: a client of it alone reads the same tail and every entry.
    let restarted = super::link(vec![cluster.url(0)], "node-b").await;
    let log_0 = BranchLog::open(&restarted).await.expect("open through server 0");
    let tail = writer.last;
    eventually(RECOVERY, "server 0 serves the log again", || async {
        matches!(log_0.tail("grid1").await, Ok(Some(t)) if t.sequence == tail)
    })
    .await;
    let entries = log_0.replay("grid1", 0, tail, WAIT).await.expect("replay through server 0");
    let ops: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Ops)
        .map(|e| String::from_utf8_lossy(&e.payload).into_owned())
        .collect();
    // Every acknowledged entry, in order; an unanswered one may be there too.
    let mut rest = ops.iter();
    for want in &acked {
        assert!(rest.any(|got| got == want), "{want} missing from {ops:?}");
    }
    log.append(&mut writer, Bytes::from_static(b"after")).await.expect("writes after");
}

/// Appends until 40 entries are acknowledged, within `RECOVERY` of `killed`; returns how many
/// appends failed meanwhile. Writes go on once the stream has a leader among the two servers
/// left. An append without an answer leaves the writer uncertain: it fences again (same lease)
/// and goes on.
async fn write_through(
    cluster: &NatsCluster,
    log: &BranchLog,
    (lease, writer): (&Lease, &mut FencedWriter),
    acked: &mut Vec<String>,
    killed: Instant,
) -> usize {
    let mut failed = 0;
    while acked.len() < 40 {
        assert!(killed.elapsed() < RECOVERY, "no quorum after {RECOVERY:?}:\n{}", cluster.logs());
        let payload = format!("during{}", acked.len());
        match log.append(writer, Bytes::from(payload.clone())).await {
            Ok(_) => acked.push(payload),
            Err(ClusterError::Fenced { .. }) => panic!("nobody else writes"),
            Err(_) => {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                if let Ok(again) = log.fence(lease).await {
                    *writer = again;
                }
            }
        }
    }
    failed
}
