//! This server as a node of a cluster (`--cluster`): its connection to NATS, the runtime the
//! cluster's tasks run on, and the cluster objects every part of the server shares (membership,
//! the lease bucket, the branch log).
//!
//! The NATS client lives on a runtime of its own (two threads, `cluster-*`), apart from actix's
//! arbiters: the supervisor and grid actors block or poll on their own threads and never on the
//! client's I/O. `run` waits for a cluster future from any thread but the cluster's own.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::branch_log::BranchLog;
use super::cdn_files::CdnBucket;
use super::files::FileBucket;
use super::lease::LeaseTable;
use super::membership::{Membership, NodeInfo};
use super::snapshots::SnapshotBucket;
use super::{check_token, ClusterError, ClusterLink, ClusterSettings};
use crate::config::Config;

/// Times a node tries to open the cluster's buckets and stream at start (250 ms apart).
const JOIN_ATTEMPTS: u32 = 20;

/// The cluster objects a node opens, creating those missing, and its first heartbeat.
/// What a node opens when it joins.
struct Parts {
    membership: Arc<Membership>,
    leases: LeaseTable,
    log: BranchLog,
    images: SnapshotBucket,
    files: FileBucket,
    cdn: CdnBucket,
}

async fn open_parts(link: &ClusterLink, me: &NodeInfo) -> Result<Parts, ClusterError> {
    let membership = Arc::new(Membership::open(link, me.clone()).await?);
    membership.heartbeat().await?;
    Ok(Parts {
        membership,
        leases: LeaseTable::open(link, &me.id).await?,
        log: BranchLog::open(link).await?,
        images: SnapshotBucket::open(link).await?,
        files: FileBucket::open(link).await?,
        cdn: CdnBucket::open(link).await?,
    })
}

/// How long a leaving node waits for its publishers to finish.
const DRAIN_WITHIN: Duration = Duration::from_secs(60);

/// The cluster as this node sees it; shared as `Arc<ClusterNode>`.
#[derive(Debug)]
pub struct ClusterNode {
    pub me: NodeInfo,
    pub link: ClusterLink,
    pub membership: Arc<Membership>,
    /// Grid leases (the lease bucket's keys are grid ids: a grid's branches move together).
    pub leases: LeaseTable,
    pub log: BranchLog,
    /// Branch images (the object store).
    pub images: SnapshotBucket,
    /// Uploaded files' bytes (the object store).
    pub files: FileBucket,
    /// Published CDN versions (the object store).
    pub cdn: CdnBucket,
    /// The grids this node owns.
    pub owned: super::owned::Owned,
    /// The live nodes as the owner loop last listed them (sorted ids).
    live: std::sync::Mutex<Vec<String>>,
    /// Set by `leave`: the owner loop takes nothing more.
    leaving: std::sync::atomic::AtomicBool,
    /// The membership heartbeat (stopped by `leave`).
    heartbeat: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Always Some until dropped (taken then to shut it down without blocking).
    runtime: Option<tokio::runtime::Runtime>,
}

/// The cluster settings a configuration asks for; None when it does not run in a cluster.
pub fn settings_of(config: &Config) -> Option<ClusterSettings> {
    if config.cluster.is_empty() {
        return None;
    }
    let mut settings = ClusterSettings::new(config.cluster.clone());
    settings.replicas = config.cluster_replicas.clamp(1, 5);
    settings.prefix = config.cluster_prefix.clone();
    let ttl = Duration::from_millis(config.lease_ttl_ms.clamp(500, 600_000));
    settings.lease_ttl = ttl;
    settings.node_ttl = ttl;
    // Creating a replicated stream on a fresh NATS cluster takes seconds: not tied to the TTL.
    settings.request_timeout = Duration::from_secs(5);
    Some(settings)
}

impl ClusterNode {
    /// Connects to NATS, opens the cluster's buckets and stream and says this node is live.
    /// Blocks the calling thread (which may be inside another runtime) until done.
    pub fn join(config: &Config) -> Result<Option<Arc<ClusterNode>>, ClusterError> {
        let Some(settings) = settings_of(config) else { return Ok(None) };
        let id = config.node_id.clone().unwrap_or_default();
        check_token("node", &id)?;
        let advertise = config.advertise.clone().unwrap_or_default();
        if !(advertise.starts_with("http://") || advertise.starts_with("https://")) {
            return Err(ClusterError::Setup(format!(
                "--advertise {advertise:?} is not an http:// or https:// URL"
            )));
        }
        let me = NodeInfo { id: id.clone(), advertise: advertise.trim_end_matches('/').into() };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cluster")
            .enable_all()
            .build()
            .map_err(|err| ClusterError::Setup(format!("cluster runtime: {err}")))?;
        let opened = run_on(&runtime, {
            let me = me.clone();
            async move {
                let link = ClusterLink::connect(settings, &me.id).await?;
                // A bucket or stream just created (by this node or another one starting at the
                // same moment) may answer "no stream found" for a moment: tried again.
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    match open_parts(&link, &me).await {
                        Err(err) if attempt < JOIN_ATTEMPTS => {
                            tracing::info!(attempt, error = %err, "joining the cluster: retried");
                            tokio::time::sleep(Duration::from_millis(250)).await;
                        }
                        Err(err) => return Err(err),
                        Ok(parts) => return Ok((link, parts)),
                    }
                }
            }
        });
        // Dropping a runtime blocks, which panics inside the caller's runtime: shut it down
        // in the background instead.
        let (link, parts) = match opened {
            Ok(opened) => opened,
            Err(err) => {
                runtime.shutdown_background();
                return Err(err);
            }
        };
        let Parts { membership, leases, log, images, files, cdn } = parts;
        let node = ClusterNode {
            me,
            link,
            membership,
            leases,
            log,
            images,
            files,
            cdn,
            owned: Default::default(),
            heartbeat: Default::default(),
            leaving: Default::default(),
            live: Default::default(),
            runtime: Some(runtime),
        };
        let beating = {
            let _inside = node.runtime().enter();
            node.membership.clone().spawn_heartbeat()
        };
        *node.heartbeat.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(beating);
        tracing::info!(node = %node.me.id, advertise = %node.me.advertise, "joined the cluster");
        Ok(Some(Arc::new(node)))
    }

    /// Runs `future` on the cluster's runtime and waits for it. Must not be called from a
    /// cluster thread (it would wait for itself).
    pub fn run<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, ClusterError> {
        run_on(self.runtime(), async move { Ok(future.await) })
    }

    /// Starts `future` on the cluster's runtime without waiting for it.
    pub fn spawn<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        self.runtime().spawn(future)
    }

    /// The runtime's handle, for tasks that start more tasks.
    pub fn handle(&self) -> tokio::runtime::Handle {
        self.runtime().handle().clone()
    }

    /// Leaves the cluster (a graceful stop): lets every branch's publisher finish what it has
    /// queued (the images the shutdown snapshots queued: the next owner replays little), at most
    /// `DRAIN_WITHIN`, then releases every grid lease this node holds and its membership entry,
    /// so other nodes take its grids at their next round.
    pub fn leave(&self) {
        let drained: Vec<_> = self.owned.publishers().iter().map(|p| p.drained()).collect();
        let waited = self.run(async move {
            let all = futures_util::future::join_all(drained);
            tokio::time::timeout(DRAIN_WITHIN, all).await.is_ok()
        });
        if !waited.unwrap_or(false) {
            tracing::warn!("the cluster writers did not finish before leaving");
        }
        self.leaving.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(beating) =
            self.heartbeat.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
        {
            beating.abort();
        }
        let leases: Vec<_> = self.owned.leases();
        let (table, membership) = (self.leases.clone(), self.membership.clone());
        let left = self.run(async move {
            for lease in leases {
                let _ = table.release(lease).await;
            }
            membership.leave().await
        });
        if let Err(err) = left.and_then(|left| left) {
            tracing::warn!(error = %err, "leaving the cluster failed; leases expire instead");
        }
    }

    /// Keeps the live nodes' ids the owner loop listed.
    pub fn set_live(&self, live: Vec<String>) {
        *self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = live;
    }

    /// A new grid id that placement puts on this node among the live nodes last listed (a
    /// grid created here then stays here), else any: at most 64 tries.
    pub fn grid_id_placed_here(&self, generate: impl Fn() -> String) -> String {
        let live = self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut id = generate();
        for _ in 0..64 {
            if !live.iter().any(|n| n == self.id())
                || super::placement::owner(&id, &live).is_some_and(|n| n == self.id())
            {
                break;
            }
            id = generate();
        }
        id
    }

    /// Whether this node is leaving the cluster (`leave`).
    pub fn is_leaving(&self) -> bool {
        self.leaving.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn id(&self) -> &str {
        &self.me.id
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the cluster runtime lives as long as its node")
    }
}

impl Drop for ClusterNode {
    /// Stops the cluster's tasks without waiting (a drop may happen inside another runtime).
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// What a cluster node keeps in its data directory between starts: only what is not
/// replicated (uploaded files' local copies, CDN files, exports). The catalogue, every branch
/// and the translation memories' segments are rebuilt from the cluster at each start, so the
/// local WAL, sled's catalogue copy, snapshots, history and segment store of an earlier start
/// are removed: a branch this node owned before may have been written by another node since.
pub fn clear_local_state(data_dir: &std::path::Path) -> std::io::Result<()> {
    for part in ["wal", "db", "snapshots", "history", "wal-archive", "transmems"] {
        match std::fs::remove_dir_all(data_dir.join(part)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
    }
    Ok(())
}

/// Runs `future` on `runtime` and blocks this thread until it ends.
fn run_on<T: Send + 'static>(
    runtime: &tokio::runtime::Runtime,
    future: impl Future<Output = Result<T, ClusterError>> + Send + 'static,
) -> Result<T, ClusterError> {
    let (done, result) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = done.send(future.await);
    });
    result.recv().map_err(|_| ClusterError::Unavailable("the cluster runtime stopped".into()))?
}
