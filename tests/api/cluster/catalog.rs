//! Catalogue replication (issue 24, part 1): gridd nodes in this process, each with its own
//! data directory and HTTP port, on one 3-server NATS cluster. What one node writes (companies,
//! projects, databases, grids, keys, renames, deletes) every other lists within moments;
//! concurrent creates through two nodes get distinct numbers and none is lost (a collision is
//! a 503 the client retries); a restarted node rebuilds the whole catalogue from the log; two
//! nodes bootstrapping at once make one owner company.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::nats::NatsCluster;
use crate::helpers::{start_with, TestApp, OWNER_KEY};

/// How long a change may take to show on another node before the test fails (it takes
/// milliseconds; the bound leaves room for a loaded 2-core machine).
const SHOWS_WITHIN: Duration = Duration::from_secs(10);

/// The NATS cluster, started on a runtime of its own (the tests' HTTP client is blocking).
fn nats() -> (tokio::runtime::Runtime, NatsCluster) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let cluster = runtime.block_on(NatsCluster::start());
    (runtime, cluster)
}

/// A node's configuration: a free port it advertises, the cluster's servers, short TTLs.
fn node_config(nats: &NatsCluster, dir: &Path, id: &str, prefix: &str) -> gridd::Config {
    let addr = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port");
    let mut config = gridd::Config::for_data_dir(dir, OWNER_KEY);
    config.bind = addr;
    config.cluster = nats.urls();
    config.node_id = Some(id.to_owned());
    config.advertise = Some(format!("http://{addr}"));
    config.lease_ttl_ms = 2000;
    config.cluster_prefix = prefix.to_owned();
    config
}

/// Polls `check` on `app` until it holds; panics with `what` past `SHOWS_WITHIN`.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < SHOWS_WITHIN {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what}: not within {SHOWS_WITHIN:?}");
}

/// An id as text (projects' are JSON numbers, most others strings).
fn id_text(id: &Value) -> String {
    match id {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn ids(list: &Value) -> BTreeSet<String> {
    list.as_array().expect("a list").iter().map(|item| id_text(&item["id"])).collect()
}

/// The body of a create's answer (200 or 201, as the hosted API answers each).
fn made(res: &crate::helpers::Resp) -> &Value {
    assert!(matches!(res.status, 200 | 201), "{}", res.text);
    &res.body
}

fn lists(app: &TestApp, path: &str, id: &str) -> bool {
    let res = app.get(path);
    res.status == 200 && ids(&res.body).contains(id)
}

/// Creates `name` through `path` on `app`, retrying the 503s a collision with another node's
/// change answers (with Retry-After); returns the new id and how many 503s it took.
fn create_retrying(app: &TestApp, path: &str, body: &Value) -> (String, usize) {
    let mut refused = 0;
    loop {
        let res = app.post(path, body);
        if res.status == 503 {
            res.assert_error(503, "serviceUnavailable");
            assert_eq!(res.header("retry-after"), Some("1"), "{}", res.text);
            refused += 1;
            assert!(refused < 50, "refused 50 times");
            continue;
        }
        assert!(matches!(res.status, 200 | 201), "{}", res.text);
        return (id_text(&res.body["id"]), refused);
    }
}

#[test]
fn what_one_node_writes_every_node_serves() {
    let (runtime, mut nats) = nats();
    runtime.block_on(create_cluster_objects(&nats, "CATREP"));
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().expect("temp dir")).collect();
    let configs: Vec<_> = ["a", "b", "c"]
        .iter()
        .zip(&dirs)
        .map(|(id, dir)| node_config(&nats, dir.path(), id, "CATREP"))
        .collect();
    let a = start_with(configs[0].clone());
    let b = start_with(configs[1].clone());
    let c = start_with(configs[2].clone());
    // One bootstrap: every node accepts the configured key and lists its one project.
    for node in [&a, &b, &c] {
        assert_eq!(ids(node.get("/v1/projects").assert_status(200)).len(), 1);
    }

    let (owner, company_project, _) = a.create_company("free");
    let project =
        a.post("/v1/projects", &json!({"name": "Game"})).assert_status(200)["id"].to_string();
    let db = a.post(&format!("/v1/databases?projectId={project}"), &json!({"name": "db"}));
    let db = made(&db)["id"].as_str().expect("db id").to_owned();
    let grid = a.post(&format!("/v1/grids?dbId={db}"), &json!({"name": "g"}));
    let grid = made(&grid)["id"].as_str().expect("grid id").to_owned();
    let key = a.post(
        "/admin/v1/api-keys",
        &json!({"name": "k", "kind": "company", "privileges": ["read"], "access": {}}),
    );
    let key_id = made(&key)["id"].as_str().expect("key id").to_owned();
    for node in [&b, &c] {
        eventually("the company's owner key and project", || {
            let res = node.get_as(&owner, "/v1/projects");
            res.status == 200 && ids(&res.body).contains(&company_project)
        });
        eventually("the project", || lists(node, "/v1/projects", &project));
        eventually("the database", || lists(node, "/v1/databases", &db));
        eventually("the grid", || lists(node, &format!("/v1/grids?dbId={db}"), &grid));
        eventually("the key", || lists(node, "/admin/v1/api-keys", &key_id));
    }

    // A key made on B authenticates on A.
    let secret = b.create_key(&["read"], json!({}));
    eventually("B's key on A", || a.get_as(&secret, "/v1/projects").status == 200);
    // A rename on C shows on A; a delete on B disappears from A.
    c.patch(&format!("/v1/projects/{project}"), &json!({"name": "Renamed"})).assert_status(200);
    eventually("the rename", || {
        a.get(&format!("/v1/projects/{project}")).body["name"] == "Renamed"
    });
    b.delete(&format!("/v1/databases/{db}")).assert_status(204);
    eventually("the delete", || a.get(&format!("/v1/databases/{db}")).status == 404);
    a.get(&format!("/v1/grids/{grid}")).assert_error(404, "gridIsNotFound");

    glossary_entries_follow(&a, &c);
    concurrent_creates_all_land(&a, &b, &c);

    // C restarted on the same data directory rebuilds the whole catalogue from the log.
    let before = ids(a.get("/v1/projects").assert_status(200));
    let keys_before = ids(a.get("/admin/v1/api-keys").assert_status(200));
    drop(c);
    let restarted = Instant::now();
    let c = start_with(configs[2].clone());
    eprintln!("node C restarted, catalogue read from the log, in {:?}", restarted.elapsed());
    assert_eq!(ids(c.get("/v1/projects").assert_status(200)), before);
    assert_eq!(ids(c.get("/admin/v1/api-keys").assert_status(200)), keys_before);
    assert_eq!(c.get_as(&secret, "/v1/projects").status, 200);
    // And it goes on following: a project made on A after the restart shows on C.
    let later =
        a.post("/v1/projects", &json!({"name": "Later"})).assert_status(200)["id"].to_string();
    eventually("a project made after the restart", || lists(&c, "/v1/projects", &later));

    // NATS gone: a catalogue change is a 503 (Retry-After 1) and changes nothing.
    for server in 0..3 {
        nats.kill(server);
    }
    let refused = b.post("/v1/projects", &json!({"name": "Unlogged"}));
    refused.assert_error(503, "serviceUnavailable");
    assert_eq!(refused.header("retry-after"), Some("1"));
    let names = b.get("/v1/projects");
    assert!(!names.text.contains("Unlogged"), "{}", names.text);
}

/// A glossary made on A, with entries added there, is served with its entries by C, and an
/// entry deleted on C is gone from A (a glossary's entries are stored in chunks).
fn glossary_entries_follow(a: &TestApp, c: &TestApp) {
    let glossary = a.post("/v1/glossaries", &json!({"name": "G", "langs": ["en"]}));
    let id = made(&glossary)["id"].as_str().expect("glossary id").to_owned();
    let terms = format!("/v1/glossaries/{id}/terms");
    let mut entries = Vec::new();
    for word in ["save", "load", "quit"] {
        let entry = a.post(&terms, &json!({"terms": {"en": word}}));
        entries.push(id_text(&made(&entry)["id"]));
    }
    let count = |node: &TestApp| node.get(&terms).body.as_array().map_or(0, Vec::len);
    eventually("the glossary's entries on C", || count(c) == 3);
    let lookup =
        c.post(&format!("/v1/glossaries/{id}/lookup"), &json!({"text": "quit now", "lang": "en"}));
    assert!(lookup.text.contains("quit"), "{}", lookup.text);
    c.delete(&format!("{terms}/{}", entries[1])).assert_status(204);
    eventually("the entry deleted on C, on A", || count(a) == 2);
}

/// Projects (numbered: every create hands out a number) and databases (ids of their own)
/// created through A and B at once: every 201 is listed on all three nodes, numbers distinct.
fn concurrent_creates_all_land(a: &TestApp, b: &TestApp, c: &TestApp) {
    let project = a.get("/v1/projects").body[0]["id"].to_string();
    let (mut made, mut refused) = (Vec::new(), 0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = [a, b]
            .into_iter()
            .enumerate()
            .map(|(n, node)| {
                let project = project.clone();
                scope.spawn(move || {
                    let mut out = (Vec::new(), Vec::new(), 0);
                    for i in 0..10 {
                        let (id, r) = create_retrying(
                            node,
                            "/v1/projects",
                            &json!({"name": format!("p{n}-{i}")}),
                        );
                        out.0.push(id);
                        let path = format!("/v1/databases?projectId={project}");
                        let (db, r2) =
                            create_retrying(node, &path, &json!({"name": format!("d{n}-{i}")}));
                        out.1.push(db);
                        out.2 += r + r2;
                    }
                    out
                })
            })
            .collect();
        for worker in workers {
            let (projects, dbs, r) = worker.join().expect("worker");
            made.push((projects, dbs));
            refused += r;
        }
    });
    let projects: BTreeSet<String> = made.iter().flat_map(|m| m.0.clone()).collect();
    let dbs: BTreeSet<String> = made.iter().flat_map(|m| m.1.clone()).collect();
    assert_eq!(projects.len(), 20, "project numbers are distinct");
    assert_eq!(dbs.len(), 20);
    eprintln!("concurrent creates: 40 made through 2 nodes, {refused} answered 503 and retried");
    for node in [a, b, c] {
        eventually("every project made", || {
            ids(&node.get("/v1/projects").body).is_superset(&projects)
        });
        eventually("every database made", || {
            ids(&node.get("/v1/databases").body).is_superset(&dbs)
        });
    }
}

#[test]
fn two_nodes_bootstrapping_at_once_make_one_owner_company() {
    let (runtime, nats) = nats();
    runtime.block_on(create_cluster_objects(&nats, "CATBOOT"));
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().expect("temp dir")).collect();
    let configs: Vec<_> = ["x", "y"]
        .iter()
        .zip(&dirs)
        .map(|(id, dir)| node_config(&nats, dir.path(), id, "CATBOOT"))
        .collect();
    let nodes: Vec<TestApp> = std::thread::scope(|scope| {
        let starting: Vec<_> =
            configs.iter().map(|config| scope.spawn(|| start_with(config.clone()))).collect();
        starting.into_iter().map(|s| s.join().expect("node starts")).collect()
    });
    // One company (numbered 1), its one project and one owner key, on both nodes; no
    // company 2.
    for node in &nodes {
        eventually("one company", || {
            ids(&node.get("/v1/projects").body) == BTreeSet::from(["1".to_owned()])
        });
        let keys = node.get("/admin/v1/api-keys").assert_status(200).clone();
        assert_eq!(keys.as_array().map(Vec::len), Some(1), "one owner key: {keys}");
        let second = node.patch("/admin/v1/companies/2", &json!({"tier": "free"}));
        second.assert_error(404, "companyIsNotFound");
    }
}

/// Creates the cluster's buckets and streams under `prefix` before any node joins: a node
/// joining a NATS cluster for the very first time can fail to join (`ClusterNode::join`'s first
/// heartbeat into the membership bucket it just created: "no stream found"), which is not what
/// these tests are about.
async fn create_cluster_objects(nats: &NatsCluster, prefix: &str) {
    use gridd::cluster::membership::{Membership, NodeInfo};
    use gridd::cluster::{branch_log::BranchLog, catalog_log::CatalogLog, lease::LeaseTable};
    let mut settings = super::settings(nats.urls());
    settings.prefix = prefix.to_owned();
    let link = gridd::cluster::ClusterLink::connect(settings, "setup").await.expect("connects");
    let me = NodeInfo { id: "setup".to_owned(), advertise: "http://127.0.0.1:1".to_owned() };
    Membership::open(&link, me).await.expect("membership bucket");
    LeaseTable::open(&link, "setup").await.expect("lease bucket");
    BranchLog::open(&link).await.expect("branch log");
    CatalogLog::open(&link, "setup").await.expect("catalogue log");
}
