//! gridd processes as nodes of one cluster (`gridd --cluster ... --node-id ... --advertise ...`),
//! each with its own data directory and port, all with the same API key: started, SIGKILLed,
//! paused (SIGSTOP/SIGCONT) and restarted by the tests, and reached over HTTP.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The key every node is started with.
pub const KEY: &str = "cluster-test-key";
/// The lease TTL the nodes run with (the server's default is 10 s).
pub const LEASE_TTL_MS: u64 = 2000;

/// One gridd process.
pub struct GriddNode {
    pub id: String,
    pub url: String,
    port: u16,
    data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// Several gridd processes on one NATS cluster.
pub struct GriddCluster {
    pub nodes: Vec<GriddNode>,
    nats: Vec<String>,
    _dir: TempDir,
    pub http: reqwest::Client,
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
    listener.local_addr().expect("addr").port()
}

impl GriddNode {
    fn spawn(&mut self, nats: &[String]) {
        let log = std::fs::File::create(&self.log).expect("node log");
        let child = Command::new(env!("CARGO_BIN_EXE_gridd"))
            .args(["--bind", &format!("127.0.0.1:{}", self.port)])
            .args(["--data-dir", &self.data.display().to_string()])
            .args(["--api-key", KEY])
            .args(["--cluster", &nats.join(",")])
            .args(["--node-id", &self.id])
            .args(["--advertise", &self.url])
            .args(["--lease-ttl-ms", &LEASE_TTL_MS.to_string()])
            .args(["--log-level", "info"])
            .arg("--allow-loopback-webhooks")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("gridd starts");
        self.child = Some(child);
    }

    /// SIGKILLs the process.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().expect("kill runs");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// SIGSTOP: the process stays, frozen (no renewals, no answers).
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// The node's log's last lines.
    /// The whole log of the node's current run.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for GriddNode {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A paused process must be resumed to die of SIGKILL promptly.
            let _ = Command::new("kill").args(["-CONT", &child.id().to_string()]).status();
        }
        self.kill();
    }
}

/// Node `i` of a cluster whose files are under `dir` (not started).
fn node_in(dir: &std::path::Path, i: usize) -> GriddNode {
    let port = free_port();
    GriddNode {
        id: format!("node{i}"),
        url: format!("http://127.0.0.1:{port}"),
        port,
        data: dir.join(format!("node{i}")),
        log: dir.join(format!("node{i}.log")),
        child: None,
    }
}

impl GriddCluster {
    /// Starts `count` nodes on the NATS cluster at `nats` and waits until each answers.
    pub async fn start(nats: Vec<String>, count: usize) -> GriddCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut nodes: Vec<GriddNode> = (0..count).map(|i| node_in(dir.path(), i)).collect();
        for node in &mut nodes {
            node.spawn(&nats);
        }
        let http =
            reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("client");
        let cluster = GriddCluster { nodes, nats, _dir: dir, http };
        for i in 0..count {
            cluster.wait_ready(i).await;
        }
        cluster
    }

    async fn wait_ready(&self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let answered = self.http.get(format!("{}/healthz", self.nodes[i].url)).send().await;
            if answered.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("node {i} did not start:\n{}", self.nodes[i].log_tail());
    }

    /// Starts one more node (`node<n>`, the next index) and waits until it answers.
    pub async fn add_node(&mut self) -> usize {
        let i = self.nodes.len();
        let mut node = node_in(self._dir.path(), i);
        node.spawn(&self.nats);
        self.nodes.push(node);
        self.wait_ready(i).await;
        i
    }

    /// Starts a killed node again on its port and data directory.
    pub async fn restart(&mut self, i: usize) {
        let nats = self.nats.clone();
        self.nodes[i].spawn(&nats);
        self.wait_ready(i).await;
    }

    /// Sends a request with the key to node `i`: (status, body as JSON or Null).
    pub async fn call(
        &self,
        i: usize,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), reqwest::Error> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.nodes[i].url))
            .header("Authorization", format!("ApiKey {KEY}"));
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await?;
        Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    }

    /// Sends a raw body with its content type to node `i`: (status, body bytes).
    pub async fn raw(
        &self,
        i: usize,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), reqwest::Error> {
        let response = self
            .http
            .post(format!("{}{path}", self.nodes[i].url))
            .header("Authorization", format!("ApiKey {KEY}"))
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.bytes().await?.to_vec()))
    }

    /// A GET's status and body bytes from node `i`.
    pub async fn bytes(&self, i: usize, path: &str) -> Result<(u16, Vec<u8>), reqwest::Error> {
        let response = self
            .http
            .get(format!("{}{path}", self.nodes[i].url))
            .header("Authorization", format!("ApiKey {KEY}"))
            .send()
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.bytes().await?.to_vec()))
    }

    /// `call` that must answer: panics on a transport error.
    pub async fn must(
        &self,
        i: usize,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        match self.call(i, method, path, body).await {
            Ok(answer) => answer,
            Err(err) => panic!("node {i} {path}: {err}\n{}", self.nodes[i].log_tail()),
        }
    }

    /// Every node's log's last lines, for failure messages.
    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("--- {} ---\n{}", n.id, n.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
