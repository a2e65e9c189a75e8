//! The catalogue's image in the cluster (three gridd processes on a 3-server JetStream
//! cluster): once the catalogue's log has grown by `IMAGE_EVERY` entries a node stores an image
//! of the whole catalogue and purges the log below it, and a node restarted afterwards starts
//! from it (then reads only the log after it), listing everything made before and after it.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{json, Value};

use super::gridd_nodes::until;
use super::nats::NatsCluster;
use super::nodes::GriddCluster;

/// The ids of the databases node `node` lists in project `project`.
async fn databases(
    cluster: &GriddCluster,
    node: usize,
    project: &Value,
) -> Option<BTreeSet<String>> {
    let path = format!("/v1/databases?projectId={project}");
    let (status, body) = cluster.call(node, Method::GET, &path, None).await.ok()?;
    (status == 200).then_some(())?;
    Some(body.as_array()?.iter().filter_map(|d| d["id"].as_str().map(str::to_owned)).collect())
}

/// Makes `count` databases named `{label} n` in `project`, through `via` (several requests at
/// once, each retried on 503); their ids.
async fn make_databases(
    cluster: &GriddCluster,
    via: &[usize],
    project: &Value,
    count: usize,
    label: &str,
) -> BTreeSet<String> {
    let path = format!("/v1/databases?projectId={project}");
    let made = futures_util::future::join_all((0..6).map(|worker| {
        let (path, node) = (path.clone(), via[worker % via.len()]);
        async move {
            let mut ids = Vec::new();
            for n in (worker..count).step_by(6) {
                let body = json!({"name": format!("{label} {n}")});
                let id = until(Duration::from_secs(20), "a database made", || async {
                    let (status, made) =
                        cluster.call(node, Method::POST, &path, Some(&body)).await.ok()?;
                    assert!(status == 200 || status == 503, "{status} {made}");
                    (status == 200).then(|| made["id"].as_str().map(str::to_owned)).flatten()
                })
                .await;
                ids.push(id);
            }
            ids
        }
    }))
    .await;
    let made: BTreeSet<String> = made.into_iter().flatten().collect();
    assert_eq!(made.len(), count);
    made
}

/// The catalogue stream under the cluster prefix `prefix`.
async fn catalog_stream(nats: &NatsCluster, prefix: &str) -> async_nats::jetstream::stream::Stream {
    let client = async_nats::connect(nats.urls()).await.expect("a NATS client");
    let jetstream = async_nats::jetstream::new(client);
    jetstream.get_stream(format!("{prefix}_catalog")).await.expect("the stream")
}

/// The names of the catalogue stream's consumers.
async fn consumer_names(nats: &NatsCluster, prefix: &str) -> Vec<String> {
    let names: Vec<_> = catalog_stream(nats, prefix).await.consumer_names().collect().await;
    names.into_iter().map(|name| name.unwrap_or_else(|err| format!("({err})"))).collect()
}

/// The catalogue stream's first and last sequences.
async fn log_bounds(nats: &NatsCluster) -> (u64, u64) {
    let mut stream = catalog_stream(nats, "GRIDD").await;
    let state = stream.info().await.expect("the stream's state").state.clone();
    (state.first_sequence, state.last_sequence)
}

/// A catch-up read (`CatalogLog::read_after`) deletes its consumer when done, rather than
/// leaving it to the server's 30 s inactivity limit: a burst of catch-ups leaves none behind.
#[tokio::test]
async fn a_catch_up_read_leaves_no_consumer_behind() {
    use gridd::cluster::catalog_log::{CatalogLog, Published};
    let nats = NatsCluster::start().await;
    let mut settings = super::settings(nats.urls());
    settings.prefix = "CATCHUP".to_owned();
    let link = gridd::cluster::ClusterLink::connect(settings, "reader").await.expect("connects");
    let log = CatalogLog::open(&link, "reader").await.expect("the catalogue's log");
    for expected in 0..3u64 {
        let published = log.publish(format!("change {expected}").into(), expected).await;
        assert_eq!(published.expect("published"), Published::At(expected + 1));
    }
    for after in 0..3u64 {
        let read = log.read_after(after, Duration::from_secs(5)).await.expect("read");
        let sequences: Vec<u64> = read.iter().map(|entry| entry.sequence).collect();
        assert_eq!(sequences, (after + 1..=3).collect::<Vec<_>>());
    }
    // Within 20 s: a busy machine (the whole suite at once) can take a few seconds to answer,
    // and 20 s is still short of the 30 s after which the server would drop them itself.
    until(Duration::from_secs(20), "the catch-ups' consumers deleted", || async {
        consumer_names(&nats, "CATCHUP").await.is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_restarted_node_starts_from_the_catalogues_image() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let project = until(Duration::from_secs(20), "the bootstrap project", || async {
        let (status, body) = cluster.call(0, Method::GET, "/v1/databases", None).await.ok()?;
        (status == 200).then(|| body[0]["projectId"].clone())
    })
    .await;
    // More than IMAGE_EVERY catalogue changes, through all three nodes at once.
    let count = gridd::catalog::replica::IMAGE_EVERY as usize + 50;
    let path = format!("/v1/databases?projectId={project}");
    let made = make_databases(&cluster, &[0, 1, 2], &project, count, "db").await;
    until(Duration::from_secs(20), "a node stores the catalogue's image", || async {
        cluster
            .nodes
            .iter()
            .any(|n| n.log_text().contains("the catalogue's image stored"))
            .then_some(())
    })
    .await;

    // The log is purged below the image (less a margin): a start reads the image, not the
    // entries it covers.
    until(Duration::from_secs(20), "a node purges the catalogue's log", || async {
        cluster
            .nodes
            .iter()
            .any(|n| n.log_text().contains("the catalogue's log purged"))
            .then_some(())
    })
    .await;
    let (first, last) = log_bounds(&nats).await;
    eprintln!("the catalogue's log after {count} changes holds {first}..={last}");
    assert!(first > 1 && first <= last, "nothing purged: {first}..={last}");

    cluster.nodes[2].kill();
    let restarted = std::time::Instant::now();
    cluster.restart(2).await;
    let log = cluster.nodes[2].log_text();
    assert!(log.contains("the catalogue's image read"), "{log}");
    let caught_up = log.lines().find(|l| l.contains("caught up with the catalogue's log"));
    eprintln!("restarted from the catalogue's image in {:?}: {caught_up:?}", restarted.elapsed());
    let listed = databases(&cluster, 2, &project).await.expect("a listing");
    assert!(
        listed.is_superset(&made),
        "{} of {} listed",
        listed.intersection(&made).count(),
        count
    );
    // It goes on following the log after the image.
    let (status, later) =
        cluster.must(0, Method::POST, &path, Some(&json!({"name": "after the restart"}))).await;
    assert_eq!(status, 200, "{later}");
    let later = later["id"].as_str().expect("id").to_owned();
    until(Duration::from_secs(10), "the later database on the restarted node", || async {
        databases(&cluster, 2, &project).await.filter(|ids| ids.contains(&later))
    })
    .await;

    // A node that drops out of the membership while it runs (frozen past its TTL), and whose
    // next entries are purged meanwhile, starts again from the image when it wakes: it lists
    // what the others made since and not what they deleted.
    let deleted = made.iter().next().expect("a database").clone();
    cluster.nodes[1].pause();
    let (status, body) = cluster
        .call(0, Method::DELETE, &format!("/v1/databases/{deleted}"), None)
        .await
        .expect("delete");
    assert_eq!(status, 204, "{body}");
    let (_, paused_at) = log_bounds(&nats).await;
    let more = make_databases(&cluster, &[0, 2], &project, count, "while frozen").await;
    until(Duration::from_secs(40), "the log purged past the frozen node", || async {
        let (first, _) = log_bounds(&nats).await;
        (first > paused_at + 1).then_some(())
    })
    .await;
    // What the stream's consumers are when the node wakes (printed to read a failure by):
    // each node's follower, ordered consumers re-created (`_1`), and what is left to expire.
    let consumers = consumer_names(&nats, "GRIDD").await;
    eprintln!(
        "the catalogue's stream has {} consumers before the node wakes: {consumers:?}",
        consumers.len()
    );
    cluster.nodes[1].resume();
    let woken = std::time::Instant::now();
    loop {
        let listed = databases(&cluster, 1, &project).await;
        if listed.as_ref().is_some_and(|ids| ids.is_superset(&more) && !ids.contains(&deleted)) {
            break;
        }
        assert!(
            woken.elapsed() < Duration::from_secs(20),
            "the woken node does not list the catalogue as it is within 20 s ({:?} of {} listed, \
             the deleted one {}); its log:\n{}",
            listed.as_ref().map(|ids| ids.intersection(&more).count()),
            more.len(),
            if listed.is_some_and(|ids| ids.contains(&deleted)) { "listed" } else { "not listed" },
            cluster.nodes[1].log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = cluster.nodes[1].log_text();
    assert!(log.contains("starting again from its image"), "{}", cluster.nodes[1].log_tail());
    eprintln!(
        "woken in {:?}; caught up by the upkeep's stall watch: {}",
        woken.elapsed(),
        log.contains("the catalogue's follower delivered nothing")
    );
}
