//! `AppState`: what every handler can reach — the supervisor's address, the route table, the
//! key ring, the server's own description, and the long-lived tasks' shared parts (change feeds,
//! webhook deliveries). Read-only for handlers.

use std::sync::{Arc, Weak};

use actix::Addr;
use actix_web::dev::ResourceDef;

use crate::auth::{KeyRing, RateLimiter};
use crate::catalog::{Routes, Supervisor};
use crate::grid::actor::reads::ReadsAnswered;
use crate::grid::read_pool::ReadPool;
use crate::metrics::RequestMetrics;
use crate::persist::durability::Durability;

#[derive(Clone)]
pub struct AppState {
    pub supervisor: Addr<Supervisor>,
    pub routes: Arc<Routes>,
    pub keys: Arc<KeyRing>,
    /// Base URL for absolute links (`Link` headers, share links), without a trailing slash.
    pub public_url: Arc<str>,
    /// The OpenAPI description, serialized once at start.
    pub openapi_json: Arc<str>,
    /// Every registered path pattern, to tell an unknown route (404) from a wrong method (405).
    pub path_patterns: Arc<Vec<ServedPath>>,
    /// The WAL and snapshot store, read for their metrics. Weak: handler state outlives a
    /// stopping node in actix's workers, and must not keep the data directory's locks.
    pub durability: Weak<Durability>,
    /// Request latency by route, method and status (`GET /metrics`).
    pub requests: Arc<RequestMetrics>,
    /// The per-key request rate limit (off unless configured).
    pub limiter: Arc<RateLimiter>,
    /// The data directory (uploads under `files/`, history exports under `exports/`).
    pub data_dir: Arc<std::path::Path>,
    /// Most bytes a zip upload may unpack to (`Config::zip_unpacked_limit`).
    pub zip_unpacked_limit: u64,
    /// Where filtered, sorted and cursor pages run (`grid::read_pool`).
    pub read_pool: Arc<ReadPool>,
    /// Record reads by who answered them (`GET /metrics`).
    pub reads_answered: Arc<ReadsAnswered>,
    /// True once the server is stopping: change feeds end.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// The change feeds' last batch per view, shared by consumers at one position.
    pub feeds: Arc<crate::api::changes::FeedMemo>,
    /// The webhooks' delivery tasks, their client and settings.
    pub webhooks: Arc<crate::api::webhooks::delivery::Deliveries>,
    /// The translation memories' segments and feeding tasks.
    pub transmems: Arc<crate::api::transmems::TransMems>,
    /// This node's cluster (`--cluster`); None when the server runs alone.
    pub cluster: Option<Arc<crate::cluster::node::ClusterNode>>,
    /// What this node asks the others about the branches they serve (`--cluster`).
    pub remote: Option<Arc<crate::api::remote::Remote>>,
}

/// A path the API serves, and the methods it answers there (the `Allow` header of a 405):
/// its operations' methods, and HEAD wherever GET is (`api::head`).
pub struct ServedPath {
    pub pattern: ResourceDef,
    pub methods: Vec<&'static str>,
}
