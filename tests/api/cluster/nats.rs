//! A real 3-server NATS JetStream cluster on loopback for the cluster tests.
//!
//! Each server has its own store directory under one temp dir and listens on free loopback
//! ports (`free_port`: below the ephemeral range, each handed out once; cluster routes need
//! fixed ports: every server names the others'), retried with new ports when one was taken
//! meanwhile. `start`
//! returns once the cluster has a JetStream meta leader; `kill` SIGKILLs one server, `restart`
//! starts it again on its ports and store. Everything is bounded in time and every process is
//! killed and reaped on drop. At most `MAX_CLUSTERS` clusters run at once in the test binary
//! (2 cores: more make Raft elections time out).
//!
//! The binary: `GRIDD_NATS_SERVER`, else `target/nats/venv/bin/nats-server` (where
//! `scripts/install-nats.sh` installs it), else `nats-server` on PATH; missing, the test fails
//! saying to run the script.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;

const SERVERS: usize = 3;
const MAX_CLUSTERS: usize = 2;
const START_ATTEMPTS: usize = 3;
const READY_WITHIN: Duration = Duration::from_secs(20);

static RUNNING: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// A slot among the `MAX_CLUSTERS`, given back on drop.
struct Slot;

impl Slot {
    fn take() -> Slot {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        while *running >= MAX_CLUSTERS {
            running = FREED.wait(running).unwrap_or_else(|e| e.into_inner());
        }
        *running += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        FREED.notify_one();
    }
}

/// The nats-server binary, or a failure that says how to install it.
pub fn nats_server_binary() -> PathBuf {
    if let Ok(path) = std::env::var("GRIDD_NATS_SERVER") {
        let path = PathBuf::from(path);
        assert!(
            path.exists(),
            "GRIDD_NATS_SERVER={} does not exist: run scripts/install-nats.sh",
            path.display()
        );
        return path;
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/nats/venv/bin/nats-server");
    if local.exists() {
        return local;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|candidate| candidate.exists())
    });
    on_path.unwrap_or_else(|| {
        panic!(
            "nats-server not found (GRIDD_NATS_SERVER, {}, PATH): run scripts/install-nats.sh",
            local.display()
        )
    })
}

/// The ports NATS servers are given: below Linux's ephemeral range (32768 and up), so that no
/// port the kernel hands out (a test's HTTP server on port 0, a connection's local end) lands
/// on one, and each handed out once per test binary, so that a server killed and restarted on
/// its ports never finds one given meanwhile to another cluster.
const PORTS: std::ops::Range<u16> = 20_000..32_000;

/// The next free port of `PORTS` (this process's share of it starts at a place its id picks).
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let span = u32::from(PORTS.end - PORTS.start);
    let start = (u64::from(std::process::id()) * 7919 % u64::from(span)) as u32;
    for _ in 0..span {
        let offset = (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let port = PORTS.start + offset as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {PORTS:?}");
}

struct Server {
    config: PathBuf,
    log: PathBuf,
    client_port: u16,
    child: Option<Child>,
}

impl Server {
    fn spawn(&mut self) {
        let log = std::fs::File::create(&self.log).expect("server log file");
        let child = Command::new(nats_server_binary())
            .arg("-c")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server starts");
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process exited (e.g. its port was taken).
    fn exited(&mut self) -> bool {
        match self.child.as_mut().map(|child| child.try_wait()) {
            Some(Ok(Some(_))) | None => true,
            Some(Ok(None)) => false,
            Some(Err(_)) => true,
        }
    }

    fn accepts(&self) -> bool {
        let addr = ("127.0.0.1", self.client_port);
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&addr)
            .expect("loopback address")
            .next()
            .expect("one address");
        TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
    }
}

/// Three nats-server processes forming one JetStream cluster.
pub struct NatsCluster {
    servers: Vec<Server>,
    dir: TempDir,
    _slot: Slot,
}

fn write_config(dir: &Path, index: usize, clients: &[u16], routes: &[u16]) -> PathBuf {
    let store = dir.join(format!("n{index}"));
    std::fs::create_dir_all(&store).expect("store dir");
    let others: Vec<String> =
        routes.iter().map(|port| format!("\"nats-route://127.0.0.1:{port}\"")).collect();
    let text = format!(
        "server_name: n{index}\nlisten: \"127.0.0.1:{client}\"\n\
         jetstream {{ store_dir: \"{store}\", max_memory_store: 64MB, max_file_store: 1GB }}\n\
         cluster {{ name: gridd-test, listen: \"127.0.0.1:{route}\", routes: [{routes}] }}\n",
        client = clients[index],
        store = store.display(),
        route = routes[index],
        routes = others.join(", "),
    );
    let path = dir.join(format!("n{index}.conf"));
    std::fs::write(&path, text).expect("write config");
    path
}

impl NatsCluster {
    /// Starts the cluster and waits for its meta leader (panics past the bound).
    pub async fn start() -> NatsCluster {
        let slot = Slot::take();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cluster = NatsCluster { servers: Vec::new(), dir, _slot: slot };
        for attempt in 1..=START_ATTEMPTS {
            cluster.spawn_all();
            if cluster.wait_ready().await {
                return cluster;
            }
            eprintln!("nats cluster attempt {attempt} failed:\n{}", cluster.logs());
            cluster.kill_all();
        }
        panic!("the NATS cluster did not start in {START_ATTEMPTS} attempts");
    }

    fn spawn_all(&mut self) {
        let clients: Vec<u16> = (0..SERVERS).map(|_| free_port()).collect();
        let routes: Vec<u16> = (0..SERVERS).map(|_| free_port()).collect();
        self.servers = (0..SERVERS)
            .map(|index| Server {
                config: write_config(self.dir.path(), index, &clients, &routes),
                log: self.dir.path().join(format!("n{index}.log")),
                client_port: clients[index],
                child: None,
            })
            .collect();
        for server in &mut self.servers {
            server.spawn();
        }
    }

    /// Every server accepts clients and JetStream answers an account query (a meta leader).
    async fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + READY_WITHIN;
        while Instant::now() < deadline {
            if self.servers.iter_mut().any(|server| server.exited()) {
                return false;
            }
            if self.servers.iter().all(|server| server.accepts()) && self.has_meta_leader().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    async fn has_meta_leader(&self) -> bool {
        let Ok(Ok(client)) =
            tokio::time::timeout(Duration::from_secs(2), async_nats::connect(self.urls())).await
        else {
            return false;
        };
        let jetstream = async_nats::jetstream::new(client);
        matches!(
            tokio::time::timeout(Duration::from_secs(2), jetstream.query_account()).await,
            Ok(Ok(_))
        )
    }

    /// The client URLs of all servers.
    pub fn urls(&self) -> Vec<String> {
        self.servers.iter().map(|s| format!("nats://127.0.0.1:{}", s.client_port)).collect()
    }

    /// The client URL of one server.
    pub fn url(&self, index: usize) -> String {
        format!("nats://127.0.0.1:{}", self.servers[index].client_port)
    }

    /// SIGKILLs one server.
    pub fn kill(&mut self, index: usize) {
        self.servers[index].kill();
    }

    /// Starts a killed server again on its ports and store, and waits until the cluster has a
    /// meta leader again with it accepting clients.
    pub async fn restart(&mut self, index: usize) {
        self.servers[index].spawn();
        let deadline = Instant::now() + READY_WITHIN;
        while Instant::now() < deadline {
            if self.servers[index].accepts() && self.has_meta_leader().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("nats server {index} did not come back:\n{}", self.logs());
    }

    fn kill_all(&mut self) {
        for server in &mut self.servers {
            server.kill();
        }
    }

    /// The servers' logs' last lines, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for server in &self.servers {
            let text = std::fs::read_to_string(&server.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(15)..];
            out.push_str(&format!("--- {}\n{}\n", server.log.display(), tail.join("\n")));
        }
        out
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        self.kill_all();
    }
}
