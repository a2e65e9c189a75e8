//! Fencing: once a new owner has fenced a branch's log, the stale owner's publishes are
//! refused, and every entry JetStream acknowledged to either owner is in the log, in order.

use std::time::Duration;

use bytes::Bytes;
use gridd::cluster::branch_log::{BranchLog, EntryKind, LogEntry};
use gridd::cluster::lease::LeaseTable;
use gridd::cluster::ClusterError;

use super::nats::NatsCluster;
use super::{acquire_when_free, link, TTL};

const WAIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_stale_owner_cannot_write_and_no_acknowledged_entry_is_lost() {
    let cluster = NatsCluster::start().await;
    let link_a = link(vec![cluster.url(0)], "node-a").await;
    let link_b = link(vec![cluster.url(2)], "node-b").await;
    let (leases_a, leases_b) = (
        LeaseTable::open(&link_a, "node-a").await.expect("open"),
        LeaseTable::open(&link_b, "node-b").await.expect("open"),
    );
    let (log_a, log_b) = (
        BranchLog::open(&link_a).await.expect("open"),
        BranchLog::open(&link_b).await.expect("open"),
    );
    let lease_a = leases_a.acquire("grid1").await.expect("acquire").expect("free");
    let mut writer_a = log_a.fence(&lease_a).await.expect("first fence");
    // A writes under load; it never renews, so its lease expires while it writes.
    let writing = tokio::spawn(async move {
        let mut acked = Vec::new();
        for i in 0u32.. {
            match log_a.append(&mut writer_a, Bytes::from(format!("a{i}"))).await {
                Ok(sequence) => acked.push(sequence),
                Err(ClusterError::Fenced { .. }) => return (acked, writer_a, log_a),
                Err(err) => panic!("unexpected: {err}"),
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        unreachable!()
    });
    let (lease_b, _) = acquire_when_free(&leases_b, "grid1", TTL * 4).await;
    assert!(lease_b.epoch > lease_a.epoch);
    let mut writer_b = log_b.fence(&lease_b).await.expect("B fences");
    let b_fence = writer_b.last;
    let (acked_a, mut writer_a, log_a) =
        tokio::time::timeout(WAIT, writing).await.expect("A is refused soon").expect("task");
    assert!(acked_a.len() > 10, "A wrote under load: {}", acked_a.len());
    // Refused again however often A tries, and A cannot fence back with its old epoch.
    let refused = log_a.append(&mut writer_a, Bytes::from_static(b"late")).await;
    assert_eq!(refused, Err(ClusterError::Fenced { branch: "grid1".into() }));
    assert!(matches!(log_a.fence(&lease_a).await, Err(ClusterError::Fenced { .. })));
    let b_entry = log_b.append(&mut writer_b, Bytes::from_static(b"b0")).await.expect("B writes");
    let entries = log_b.replay("grid1", 0, b_entry, WAIT).await.expect("replay");
    check_log(&entries, &acked_a, (lease_a.epoch, lease_b.epoch), b_fence);
    // Each entry is on three servers: the stream's leader and two replicas.
    let mut stream = link_b.jetstream.get_stream("GRIDD_log").await.expect("stream");
    let info = stream.info().await.expect("info");
    assert_eq!(info.config.num_replicas, 3);
    assert_eq!(info.cluster.as_ref().map_or(0, |c| c.replicas.len()), 2);
    measure_appends(&leases_b, &log_b).await;
}

/// The log: A's fence, every entry acknowledged to A in order, B's fence (at `b_fence`), B's
/// entry `b0`; nothing else.
fn check_log(entries: &[LogEntry], acked_a: &[u64], (epoch_a, epoch_b): (u64, u64), b_fence: u64) {
    let ops_a: Vec<u64> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Ops && e.epoch == epoch_a)
        .map(|e| e.sequence)
        .collect();
    assert_eq!(ops_a, acked_a, "every acknowledged entry of A, in order");
    let fences: Vec<(u64, u64)> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Fence)
        .map(|e| (e.sequence, e.epoch))
        .collect();
    assert_eq!(fences, vec![(fences[0].0, epoch_a), (b_fence, epoch_b)]);
    assert!(acked_a.iter().all(|seq| *seq < b_fence), "A's entries precede B's fence");
    let last = entries.last().expect("entries");
    assert_eq!((last.sequence, last.payload.as_ref()), (b_fence + 1, &b"b0"[..]));
    assert_eq!(entries.len(), acked_a.len() + 3);
}

/// Prints the latency of fenced appends (256-byte entries, R3, loopback): one branch writing
/// serially, then 8 branches at once. A figure for docs/CLUSTER.md, not an assertion:
/// `cargo test --test api cluster::fencing -- --nocapture`.
async fn measure_appends(leases: &LeaseTable, log: &BranchLog) {
    let payload = Bytes::from(vec![b'x'; 256]);
    let mut writers = Vec::new();
    for i in 0..8 {
        let lease = leases.acquire(&format!("bench{i}")).await.expect("acquire").expect("free");
        writers.push(log.fence(&lease).await.expect("fence"));
    }
    let mut times = Vec::new();
    let serial = std::time::Instant::now();
    for _ in 0..300 {
        let start = std::time::Instant::now();
        log.append(&mut writers[0], payload.clone()).await.expect("append");
        times.push(start.elapsed());
    }
    let serial = serial.elapsed();
    times.sort();
    let parallel = std::time::Instant::now();
    let appends = writers.iter_mut().map(|writer| {
        let payload = payload.clone();
        async move {
            for _ in 0..100 {
                log.append(writer, payload.clone()).await.expect("append");
            }
        }
    });
    futures_util::future::join_all(appends).await;
    let parallel = parallel.elapsed();
    eprintln!(
        "fenced append, R3 on loopback: one branch p50 {:?} p99 {:?} ({:.0}/s); \
         8 branches at once {:.0} appends/s",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        300.0 / serial.as_secs_f64(),
        800.0 / parallel.as_secs_f64()
    );
}
