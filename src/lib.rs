//! gridd: a self-hosted data grid server that speaks the Gridly REST API.
//!
//! `Node::start` opens a data directory and starts the actors (supervisor and one grid actor
//! per branch); `Application::build` puts the HTTP API in front of a node. Both work with
//! port 0 and a temporary directory, which is how the tests run them.

pub mod api;
pub mod auth;
pub mod catalog;
pub mod cluster;
pub mod config;
pub mod error;
pub mod grid;
pub mod histogram;
pub mod ids;
pub mod io;
pub mod json_object;
pub mod metrics;
pub mod persist;
pub mod state;
pub mod tm;
pub mod worker_memory;

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, Arbiter};
use actix_web::dev::{ResourceDef, Server, ServerHandle};
use actix_web::{web, App, HttpServer};
use utoipa_actix_web::AppExt;

use crate::auth::KeyRing;
use crate::catalog::journal::{self, JournalError};
use crate::catalog::store::{SledCatalogStore, StoreError};
use crate::catalog::{Routes, Supervisor};
pub use crate::config::Config;
use crate::persist::durability::{Durability, DurabilityError, SnapshotPolicy};
use crate::persist::history::History;
use crate::persist::recovery::recover;
use crate::persist::snapshot::{FileSnapshotStore, SledSnapshotStore, SnapshotError};
use crate::persist::wal::{Recovered, Wal, WalError, WalHandle, WalOptions, WalRecords};
use crate::state::AppState;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot use data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    #[error("cannot open the catalogue: {0}")]
    Catalogue(#[from] StoreError),
    #[error("cannot recover the catalogue: {0}")]
    CatalogueRecovery(#[from] JournalError),
    #[error(
        "cannot open the embedded store {path}: another gridd uses this data directory ({source})"
    )]
    SledLocked { path: String, source: sled::Error },
    #[error(
        "cannot open the catalogue's store {path}: {source}. It holds a copy of the catalogue, \
         which a start rebuilds from snapshots/~catalog and the WAL when the store is moved \
         aside (`mv {path} {path}.damaged`; snapshots an older gridd kept in it go with it)"
    )]
    CatalogueStoreDamaged { path: String, source: sled::Error },
    #[error("cannot open the translation memories' store {path}: {source}")]
    SegmentStore { path: String, source: sled::Error },
    #[error("cannot open the embedded store {path}: {source}")]
    SledIo { path: String, source: sled::Error },
    #[error("cannot open the write-ahead log: {0}")]
    Wal(#[from] WalError),
    #[error("cannot open the snapshot store: {0}")]
    Snapshots(#[from] SnapshotError),
    #[error("bootstrap failed: {0}")]
    Bootstrap(String),
    #[error("cannot make the WAL continue past the snapshots: {0}")]
    WalPadding(#[from] DurabilityError),
    #[error("cannot join the cluster: {0}")]
    Cluster(#[from] cluster::ClusterError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// Opens the WAL, waiting up to 5 s for a stopping node of this process or a stopping server
/// to release its lock (the WAL writer thread drains its queue before it lets go).
fn open_wal(dir: &std::path::Path) -> Result<(WalHandle, Recovered), WalError> {
    let mut attempts = 0;
    loop {
        let options = WalOptions {
            marked: crate::persist::entry::is_catalog_record,
            ..WalOptions::default()
        };
        match Wal::open(dir, options) {
            Err(WalError::Locked(_)) if attempts < 100 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// sled's page cache. sled keeps up to this many bytes of the pages it read or wrote; its
/// default (1 GiB) kept every snapshot written or loaded resident. The catalogue is small and
/// snapshots are written once and read once at start, so a small cache costs no speed.
const SLED_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Opens the embedded store, waiting up to 5 s for a previous node of this process or a
/// stopping server to release its lock (sled releases it from a background thread).
fn open_sled(path: &std::path::Path) -> Result<sled::Db, sled::Error> {
    let mut attempts = 0;
    loop {
        match sled::Config::new().path(path).cache_capacity(SLED_CACHE_BYTES).open() {
            Err(sled::Error::Io(err)) if is_lock_conflict(&err) && attempts < 100 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// The two sled stores of a data directory.
#[derive(Clone, Copy)]
enum SledStore {
    /// `db/`: sled's copy of the catalogue (rebuilt from its image and the WAL when lost).
    Catalogue,
    /// `transmems/`: the translation memories' segments.
    Segments,
}

/// `open_sled`, its failure told apart: another process holds the store, the file system
/// refused, or its files are damaged (or of another sled version).
fn open_store(path: &std::path::Path, store: SledStore) -> Result<sled::Db, StartupError> {
    open_sled(path).map_err(|source| {
        let path = path.display().to_string();
        match (&source, store) {
            (sled::Error::Io(e), _) if is_lock_conflict(e) => {
                StartupError::SledLocked { path, source }
            }
            (sled::Error::Io(_), _) => StartupError::SledIo { path, source },
            (_, SledStore::Catalogue) => StartupError::CatalogueStoreDamaged { path, source },
            (_, SledStore::Segments) => StartupError::SegmentStore { path, source },
        }
    })
}

/// Whether sled could not open its file because another handle holds the lock. sled 0.34
/// reports that as `ErrorKind::Other` with the lock error's text ("could not acquire lock on
/// ...: ... WouldBlock ..."), not as `WouldBlock`.
fn is_lock_conflict(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::WouldBlock
        || err.to_string().starts_with("could not acquire lock on")
}

/// What the supervisor is made of besides its catalogue.
struct SupervisorParts {
    keys: Arc<KeyRing>,
    routes: Arc<Routes>,
    arbiters: Vec<actix::ArbiterHandle>,
    durability: Arc<Durability>,
    files_dir: std::path::PathBuf,
}

/// Recovers the catalogue (sled's copy brought up to date from its image and the WAL, or
/// rebuilt from them when it holds an unreadable entry), loads the supervisor, and pads the WAL
/// past every position in use, so the change sets the start itself makes get fresh LSNs.
fn recover_catalogue(
    store: &SledCatalogStore,
    parts: SupervisorParts,
    records: &WalRecords,
) -> Result<Supervisor, StartupError> {
    let durability = &parts.durability;
    durability.track(journal::CATALOG_IMAGE_KEY);
    let mut catalog_lsn = journal::recover(store, durability, records)?;
    let load = || {
        Supervisor::load(
            Box::new(store.clone()),
            parts.keys.clone(),
            parts.routes.clone(),
            parts.arbiters.clone(),
            durability.clone(),
            parts.files_dir.clone(),
        )
    };
    let mut supervisor = match load() {
        Err(StoreError::Corrupt { key, source }) => {
            tracing::error!(%key, error = %source, "sled's catalogue holds an unreadable entry");
            catalog_lsn = catalog_lsn.max(journal::rebuild_from_image(store, durability, records)?);
            load()?
        }
        other => other?,
    };
    let mut keys_in_use: Vec<String> =
        supervisor.branch_seeds().into_iter().map(|s| s.branch_id).collect();
    keys_in_use.push(journal::CATALOG_IMAGE_KEY.to_owned());
    durability.pad_wal_past_snapshots(&keys_in_use, catalog_lsn)?;
    supervisor.fail_interrupted_tasks()?;
    Ok(supervisor)
}

/// The actors of one data directory, without HTTP.
pub struct Node {
    pub supervisor: Addr<Supervisor>,
    pub routes: Arc<Routes>,
    pub keys: Arc<KeyRing>,
    /// The bootstrap owner key when this start created it and no key was configured.
    pub generated_key: Option<String>,
    /// The WAL, snapshot store and policy every grid actor shares.
    pub durability: Arc<Durability>,
    /// The translation memories' segments (`<data dir>/transmems`).
    pub segments: Arc<tm::store::SegmentStore>,
    /// This node's cluster (`--cluster`); None when the server runs alone.
    pub cluster: Option<Arc<cluster::node::ClusterNode>>,
    arbiters: Vec<Arbiter>,
    wal: WalHandle,
}

impl Node {
    /// Opens (or creates) the data directory, recovers the catalogue and every branch, and starts
    /// the supervisor and grid actors. Must run inside an actix system.
    pub fn start(config: &Config) -> Result<Node, StartupError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|source| StartupError::DataDir {
            path: config.data_dir.display().to_string(),
            source,
        })?;
        let cluster = cluster::node::ClusterNode::join(config)?;
        if cluster.is_some() {
            cluster::node::clear_local_state(&config.data_dir).map_err(|source| {
                StartupError::DataDir { path: config.data_dir.display().to_string(), source }
            })?;
        }
        // Packed history goes to anonymous files here (before the branches load and spill theirs).
        grid::history::spill_to(&config.data_dir);
        let db = open_store(&config.data_dir.join("db"), SledStore::Catalogue)?;
        let store = SledCatalogStore::open(db.clone())?;
        let legacy = SledSnapshotStore::open(&db)?;
        let snapshots = FileSnapshotStore::open(&config.data_dir.join("snapshots"), Some(legacy))?;
        let keys = Arc::new(KeyRing::default());
        let routes = Arc::new(Routes {
            heavy_turns: grid::actor::HeavyTurns::new(config.heavy_writes_per_company),
            ..Routes::default()
        });
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let grid_threads = config.grid_threads.unwrap_or(cores).clamp(1, 1024);
        let arbiters: Vec<Arbiter> = (0..=grid_threads).map(|_| Arbiter::new()).collect();
        let grid_arbiters: Vec<_> = arbiters[1..].iter().map(Arbiter::handle).collect();
        let (wal, recovered) = open_wal(&config.data_dir.join("wal"))?;
        if let Some(damage) = &recovered.dropped_tail {
            tracing::warn!(
                ?damage,
                "the WAL's last records were torn or damaged and were dropped (a write torn by \
                 the crash was never acknowledged; damage since may have taken acknowledged ones)"
            );
        }
        let policy = SnapshotPolicy {
            every_records: config.snapshot_every_records.max(1),
            every_bytes: config.snapshot_every_bytes.max(1),
            every: Duration::from_secs(config.snapshot_interval_secs.max(1)),
        };
        let mut durability = Durability::new(wal.clone(), Arc::new(snapshots), policy);
        if !config.retain_history.is_zero() {
            let history = History::open(&config.data_dir, config.retain_history)
                .map_err(StartupError::Snapshots)?;
            durability = durability.with_history(history);
        }
        let durability = Arc::new(durability);
        let parts = SupervisorParts {
            keys: keys.clone(),
            routes: routes.clone(),
            arbiters: grid_arbiters,
            durability: durability.clone(),
            files_dir: crate::catalog::files::files_dir(&config.data_dir),
        };
        let mut supervisor = recover_catalogue(&store, parts, &recovered.records)?;
        if let Some(cluster) = &cluster {
            // The whole catalogue from the cluster's log before the bootstrap looks at it.
            supervisor.join_cluster(cluster.clone())?;
        }
        let generated = supervisor
            .bootstrap_retried(config.api_key.as_deref())
            .map_err(|e| StartupError::Bootstrap(e.to_string()))?;
        supervisor.sweep_stray_files(&config.data_dir);
        let seeds = supervisor.branch_seeds();
        let states = recover(&seeds, &durability, &recovered.records, &recovered.gaps)?;
        drop(recovered);
        if cluster.is_none() {
            supervisor.start_branches(states.states, &states.forked);
        }
        // A cluster node runs no actor for the branches its catalogue read from the log: grid
        // ownership (issue 24, part 3) starts those of the grids it owns.
        let follower = supervisor.follower();
        let addr = Supervisor::start_in_arbiter(&arbiters[0].handle(), move |_| supervisor);
        if let Some(follower) = follower {
            follower.start(addr.clone());
        }
        if let Some(cluster) = &cluster {
            catalog::cluster_grids::start_owner_loop(addr.clone(), cluster);
        }
        let generated_key = generated.filter(|_| config.api_key.is_none());
        let tm_db = open_store(&config.data_dir.join("transmems"), SledStore::Segments)?;
        let segments = Arc::new(tm::store::SegmentStore::new(tm_db));
        Ok(Node {
            supervisor: addr,
            routes,
            keys,
            generated_key,
            durability,
            segments,
            cluster,
            arbiters,
            wal,
        })
    }

    /// Writes a snapshot of every branch and an image of the catalogue (graceful shutdown), so
    /// the next start replays little.
    pub async fn snapshot_all(&self) {
        self.snapshot_branches().await;
        match self.supervisor.send(crate::catalog::Exec::new(|s| s.image_job())).await {
            Ok(Some(job)) => {
                if let Err(err) = actix_web::rt::task::spawn_blocking(job).await {
                    tracing::error!(error = %err, "shutdown catalogue image failed");
                }
            }
            Ok(None) => {}
            Err(err) => tracing::warn!(error = %err, "supervisor gone before the catalogue image"),
        }
    }

    async fn snapshot_branches(&self) {
        let routes: Vec<_> = self.routes.branches.iter().map(|r| r.value().clone()).collect();
        for route in routes {
            match route.addr.send(crate::grid::actor::TakeSnapshot).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    tracing::error!(branch = %route.branch_id, error = %err, "shutdown snapshot failed")
                }
                Err(err) => {
                    tracing::warn!(branch = %route.branch_id, error = %err, "branch gone before its snapshot")
                }
            }
        }
    }

    /// Stops every actor thread and closes the WAL (everything appended is made durable); a
    /// cluster node first gives its grids' leases back and leaves, so others take them at once.
    pub fn stop(self) {
        if let Some(cluster) = &self.cluster {
            cluster.leave();
        }
        for arbiter in self.arbiters {
            arbiter.stop();
            let _ = arbiter.join();
        }
        if let Err(err) = self.wal.shutdown() {
            tracing::error!(error = %err, "WAL shutdown failed");
        }
    }
}

/// A running HTTP server in front of a node.
pub struct Application {
    node: Node,
    server: Server,
    addr: SocketAddr,
    /// Set when the server starts stopping: long-lived answers (change feeds) end then, so a
    /// graceful stop does not wait for them.
    stopping: Arc<tokio::sync::watch::Sender<bool>>,
}

/// Stops a server: tells long-lived answers first (`Application::stopping`), then stops
/// taking requests and finishes those in flight (`graceful`) or drops them.
#[derive(Clone)]
pub struct StopHandle {
    server: ServerHandle,
    stopping: Arc<tokio::sync::watch::Sender<bool>>,
}

impl StopHandle {
    pub async fn stop(&self, graceful: bool) {
        self.stopping.send_replace(true);
        self.server.stop(graceful).await;
    }
}

/// The OpenAPI description of every route `api::configure` registers.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, mut api) = App::new().into_utoipa_app().configure(api::configure).split_for_parts();
    api.info = utoipa::openapi::InfoBuilder::new()
        .title("gridd")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some("A self-hosted data grid server speaking the Gridly REST API."))
        .build();
    let mut components = api.components.take().unwrap_or_default();
    components.add_security_scheme(
        "ApiKey",
        utoipa::openapi::security::SecurityScheme::ApiKey(
            utoipa::openapi::security::ApiKey::Header(
                utoipa::openapi::security::ApiKeyValue::with_description(
                    "Authorization",
                    "ApiKey <key>",
                ),
            ),
        ),
    );
    api.components = Some(components);
    // Every route but /healthz, /v1/openapi.json and the share pages needs the key; declared
    // once for all, so that generated clients and fuzzers send it.
    api.security = Some(vec![utoipa::openapi::security::SecurityRequirement::new(
        "ApiKey",
        Vec::<String>::new(),
    )]);
    api
}

/// What every handler shares: the node's actors, tables and durability (weakly), the API's
/// description, the limits and pools.
fn app_state(
    node: &Node,
    config: &Config,
    public_url: &str,
    stopping: tokio::sync::watch::Receiver<bool>,
    remote: Option<Arc<api::remote::Remote>>,
) -> Result<AppState, StartupError> {
    let api_doc = openapi();
    let path_patterns = api_doc
        .paths
        .paths
        .iter()
        .map(|(path, item)| {
            let operations = [
                ("GET", &item.get),
                ("PUT", &item.put),
                ("POST", &item.post),
                ("DELETE", &item.delete),
                ("PATCH", &item.patch),
            ];
            let mut methods = Vec::new();
            for (method, _) in operations.iter().filter(|(_, o)| o.is_some()) {
                methods.push(*method);
                // Every GET route answers HEAD too (`api::head`).
                if *method == "GET" {
                    methods.push("HEAD");
                }
            }
            state::ServedPath { pattern: ResourceDef::new(path.as_str()), methods }
        })
        .collect();
    let openapi_json = api_doc.to_json().map_err(|e| StartupError::Bootstrap(e.to_string()))?;
    Ok(AppState {
        supervisor: node.supervisor.clone(),
        routes: node.routes.clone(),
        keys: node.keys.clone(),
        public_url: public_url.trim_end_matches('/').into(),
        openapi_json: openapi_json.into(),
        path_patterns: Arc::new(path_patterns),
        durability: Arc::downgrade(&node.durability),
        requests: Arc::default(),
        limiter: Arc::new(auth::RateLimiter::new(config.rate_limit, config.rate_burst)),
        read_pool: Arc::new(grid::read_pool::ReadPool::per_core()),
        reads_answered: Arc::default(),
        data_dir: Arc::from(config.data_dir.as_path()),
        zip_unpacked_limit: config.zip_unpacked_limit,
        stopping,
        feeds: Arc::default(),
        webhooks: Arc::new(
            api::webhooks::delivery::Deliveries::new(api::webhooks::delivery::WebhookSettings::of(
                config,
            ))
            .map_err(|e| StartupError::Bootstrap(format!("webhook client: {e}")))?,
        ),
        transmems: Arc::new(api::transmems::TransMems::new(
            node.segments.clone(),
            config.tmx_upload_limit,
            match &node.cluster {
                Some(cluster) => {
                    Some(api::transmems::replica::TmReplica::start(cluster, node.segments.clone())?)
                }
                None => None,
            },
        )),
        cluster: node.cluster.clone(),
        remote,
    })
}

impl Application {
    /// Starts the node and serves the API on `config.bind` (port 0 picks a free port).
    pub async fn build(config: Config) -> Result<Application, StartupError> {
        let node = Node::start(&config)?;
        if let Some(key) = &node.generated_key {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "gridd: bootstrap owner API key (shown once): {key}");
        }
        let listener = TcpListener::bind(config.bind)
            .map_err(|source| StartupError::Bind { addr: config.bind, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| StartupError::Bind { addr: config.bind, source })?;
        let public_url = config.public_url.clone().unwrap_or_else(|| format!("http://{addr}"));
        let stopping = Arc::new(tokio::sync::watch::Sender::new(false));
        let forwarder = match &node.cluster {
            Some(cluster) => Some(Arc::new(api::forward::Forwarder::start(
                cluster.clone(),
                node.routes.clone(),
                config.max_json_bytes,
            )?)),
            None => None,
        };
        let remote = match (&node.cluster, &forwarder) {
            (Some(cluster), Some(forwarder)) => Some(Arc::new(api::remote::Remote::start(
                cluster,
                forwarder.locator(),
                node.routes.clone(),
            )?)),
            _ => None,
        };
        let state = app_state(&node, &config, &public_url, stopping.subscribe(), remote)?;
        let collector = catalog::collector::Collector {
            supervisor: state.supervisor.clone(),
            routes: state.routes.clone(),
        };
        catalog::collector::run_collector(
            collector,
            Duration::from_secs(config.file_gc_interval_secs),
            Duration::from_secs(config.file_gc_grace_secs),
        );
        actix_web::rt::spawn(api::webhooks::delivery::start_all(state.clone()));
        actix_web::rt::spawn(api::transmems::feed::start_all(state.clone()));
        let max_json = config.max_json_bytes;
        let body_timeout = Duration::from_millis(config.body_timeout_ms);
        let server = HttpServer::new(move || {
            worker_memory::start_on_this_worker();
            let (app, _) = App::new().into_utoipa_app().configure(api::configure).split_for_parts();
            app.app_data(web::Data::new(state.clone()))
                .app_data(api::errors::json_config(max_json))
                .app_data(api::sized_json::JsonLimit(max_json))
                .app_data(api::errors::query_config())
                .app_data(api::errors::path_config())
                .app_data(web::PayloadConfig::new(max_json))
                .default_service(web::to(api::errors::fallback))
                .wrap(actix_web::middleware::Condition::new(
                    forwarder.is_some(),
                    api::forward::Forwarding(forwarder.clone()),
                ))
                .wrap_fn(api::errors::render_errors)
                .wrap_fn(api::compression::compress_large())
                .wrap_fn(api::head::answer_head)
                .wrap_fn(api::body_deadline::body_deadline(body_timeout))
                .wrap_fn(api::request_timing::track)
                .wrap(tracing_actix_web::TracingLogger::<api::request_span::RequestSpan>::new())
        })
        .workers(
            config.workers.unwrap_or_else(|| {
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
            }),
        )
        .client_request_timeout(Duration::from_millis(config.request_timeout_ms))
        // Each answer leaves in whole writes; no write waits for the ACK of the one before.
        .tcp_nodelay(true)
        .disable_signals()
        .listen(listener)
        .map_err(|source| StartupError::Bind { addr: config.bind, source })?
        .run();
        tracing::info!(%addr, data_dir = %config.data_dir.display(), "gridd listening");
        Ok(Application { node, server, addr, stopping })
    }

    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle that stops the server.
    pub fn handle(&self) -> StopHandle {
        StopHandle { server: self.server.handle(), stopping: self.stopping.clone() }
    }

    /// Serves until stopped (SIGTERM, Ctrl-C or `handle().stop()`); on a signal, stops taking
    /// requests, finishes those in flight, writes a snapshot of every branch and stops.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let handle = self.handle();
        actix_web::rt::spawn(async move {
            shutdown_signal().await;
            tracing::info!("shutdown requested");
            handle.stop(true).await;
        });
        let result = self.server.await;
        tracing::info!("server stopped; writing snapshots");
        self.node.snapshot_all().await;
        self.node.stop();
        tracing::info!("gridd stopped");
        result
    }
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = term.recv() => {},
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "cannot listen for SIGTERM; only Ctrl-C stops gracefully");
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_store_lock_is_recognised_and_waited_for() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db");
        let first = sled::open(&path).expect("first open");
        match sled::open(&path) {
            Err(sled::Error::Io(err)) => assert!(is_lock_conflict(&err), "{err}"),
            Err(other) => panic!("unexpected error: {other}"),
            Ok(_) => panic!("a second handle on a locked store"),
        }
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(first);
        });
        open_sled(&path).expect("opens once the first handle lets go");
        release.join().expect("release thread");
    }
}
