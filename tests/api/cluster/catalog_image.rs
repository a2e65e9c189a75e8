//! The catalogue's image in the cluster (three gridd processes on a 3-server JetStream
//! cluster): once the catalogue's log has grown by `IMAGE_EVERY` entries a node stores an image
//! of the whole catalogue, and a node restarted afterwards starts from it (then reads only the
//! log after it), listing everything made before and after it.

use std::collections::BTreeSet;
use std::time::Duration;

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
    let made = futures_util::future::join_all((0..6).map(|worker| {
        let (cluster, path) = (&cluster, path.clone());
        async move {
            let mut ids = Vec::new();
            for n in (worker..count).step_by(6) {
                let body = json!({"name": format!("db {n}")});
                let id = until(Duration::from_secs(20), "a database made", || async {
                    let (status, made) =
                        cluster.call(worker % 3, Method::POST, &path, Some(&body)).await.ok()?;
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
    until(Duration::from_secs(20), "a node stores the catalogue's image", || async {
        cluster
            .nodes
            .iter()
            .any(|n| n.log_text().contains("the catalogue's image stored"))
            .then_some(())
    })
    .await;

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
}
