//! Task results in a cluster: a record-history export and a merge preview (diffcheck) are
//! computed by the node that serves their grid and stored in the cluster as well, so that they
//! are still served through any node after that node is SIGKILLed and another takes the grid.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::gridd_nodes::{branched, grid_on, owner_of, until, Branched};
use super::nats::NatsCluster;
use super::nodes::GriddCluster;

/// Waits (at most `within`) until task `id`, read through `node`, is no longer running; its
/// body.
async fn ended(cluster: &GriddCluster, node: usize, id: &str, within: Duration) -> Value {
    let path = format!("/v1/tasks/{id}");
    until(within, "the task ended", || async {
        let (status, task) = cluster.call(node, Method::GET, &path, None).await.ok()?;
        (status == 200 && task["status"] != json!("running")).then_some(task)
    })
    .await
}

/// Waits until task `id` succeeded (through `node`).
async fn succeeded(cluster: &GriddCluster, node: usize, id: &str) {
    let task = ended(cluster, node, id, Duration::from_secs(30)).await;
    assert_eq!(task["status"], json!("successful"), "{task}");
}

#[tokio::test]
async fn an_export_and_a_merge_preview_outlive_the_node_that_made_them() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let Branched { view, owner, others, branch_view, .. } = branched(&nats, &cluster).await;

    // Both tasks asked through other nodes: they run on the grid's owner.
    let now = chrono::Utc::now();
    let span = json!({"fromTime": (now - chrono::Duration::days(1)).to_rfc3339(),
                      "toTime": (now + chrono::Duration::days(1)).to_rfc3339()});
    let export_path = format!("/v1/views/{view}/record-histories/export");
    let (status, export) = cluster.must(others[0], Method::POST, &export_path, Some(&span)).await;
    assert_eq!(status, 202, "{export}");
    let export = export["id"].as_str().expect("task id").to_owned();
    let preview_path =
        format!("/v1/branches/diffcheck?sourceViewId={branch_view}&destinationViewId={view}");
    let (status, preview) =
        cluster.must(others[1], Method::POST, &preview_path, Some(&json!({}))).await;
    assert_eq!(status, 202, "{preview}");
    let preview = preview["id"].as_str().expect("task id").to_owned();
    succeeded(&cluster, others[0], &export).await;
    succeeded(&cluster, others[1], &preview).await;

    // The owner dies; the grid's next node serves both results.
    cluster.nodes[owner].kill();
    let file = format!("{export_path}/{export}");
    let bytes = until(Duration::from_secs(30), "the export served after the takeover", || async {
        let (status, bytes) = cluster.bytes(others[1], &file).await.ok()?;
        (status == 200).then_some(bytes)
    })
    .await;
    let text = String::from_utf8(bytes).expect("CSV text");
    assert!(text.contains("m1"), "{text}");
    let listed = format!("/v1/branches/diffcheck/{preview}");
    let listed =
        until(Duration::from_secs(30), "the preview served after the takeover", || async {
            let (status, body) = cluster.call(others[0], Method::GET, &listed, None).await.ok()?;
            (status == 200).then_some(body)
        })
        .await;
    let ids: Vec<&str> =
        listed.as_array().expect("a list").iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, ["b1"], "{listed}");
}

#[tokio::test]
async fn a_task_whose_node_dies_fails_instead_of_running_for_ever() {
    let nats = NatsCluster::start().await;
    let mut cluster = GriddCluster::start(nats.urls(), 3).await;
    let (grid, view) = grid_on(&cluster, 0).await;
    let owner = owner_of(&nats, &grid).await;
    let other = (0..3).find(|i| *i != owner).expect("another node");
    // An import long enough to be cut off: asked through another node, run on the owner.
    let mut csv = String::from("_recordId,title\n");
    for i in 0..200_000 {
        csv.push_str(&format!("r{i},Imported title number {i}\n"));
    }
    let boundary = crate::files::BOUNDARY;
    let body = crate::files::multipart(&[("file", Some(("big.csv", "text/csv")), csv.as_bytes())]);
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let path = format!("/v1/views/{view}/import");
    let (status, task) = cluster.raw(other, &path, &content_type, body).await.expect("an import");
    let task: Value = serde_json::from_slice(&task).expect("a task");
    assert_eq!(status, 202, "{task}");
    let id = task["id"].as_str().expect("task id").to_owned();
    let (_, running) = cluster.must(owner, Method::GET, &format!("/v1/tasks/{id}"), None).await;
    assert_eq!(running["status"], json!("running"), "the import ended before the kill");
    cluster.nodes[owner].kill();

    // Another node fails it once the owner has left the membership (one node TTL).
    let task = ended(&cluster, other, &id, Duration::from_secs(40)).await;
    assert_eq!(task["status"], json!("failed"), "{task}");
    assert_eq!(task["error"]["code"], json!("interrupted"), "{task}");
}
