//! Which nodes are live: each node's heartbeat in the `<prefix>_nodes` KV bucket.
//!
//! A node puts its `NodeInfo` (id, advertised URL) under its id every third of the node TTL;
//! the bucket's max age is the TTL, so a node that stops (killed, cut off) disappears from the
//! bucket one TTL after its last heartbeat, with nothing left to clean up. A node that leaves
//! cleanly deletes its key. The live-node list is the bucket's keys; `watch` streams joins and
//! clean leaves as they happen (an expiry is not an event: it is seen by listing again, which
//! callers do on every heartbeat). Owns the bucket; knows nothing of branches.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::{check_token, unavailable, ClusterError, ClusterLink};

/// At most this many nodes are read from the bucket (a bound on a listing's work).
pub const MAX_NODES: usize = 1024;

/// What a node tells the others about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub id: String,
    /// Where other nodes reach its HTTP API (`--advertise`), for forwarding.
    pub advertise: String,
}

/// This node's place in the membership bucket.
#[derive(Debug, Clone)]
pub struct Membership {
    kv: kv::Store,
    me: NodeInfo,
    ttl: Duration,
}

impl Membership {
    /// Opens the membership bucket for `me` (no heartbeat yet: see `heartbeat`).
    pub async fn open(link: &ClusterLink, me: NodeInfo) -> Result<Membership, ClusterError> {
        check_token("node", &me.id)?;
        let ttl = link.settings.node_ttl;
        let kv = link.open_bucket("nodes", ttl).await?;
        Ok(Membership { kv, me, ttl })
    }

    pub fn me(&self) -> &NodeInfo {
        &self.me
    }

    /// Says this node is live for one more TTL.
    pub async fn heartbeat(&self) -> Result<(), ClusterError> {
        let value = serde_json::to_vec(&self.me).expect("a NodeInfo serializes");
        self.kv.put(&self.me.id, value.into()).await.map(|_| ()).map_err(unavailable)
    }

    /// Heartbeats every third of the TTL until the returned handle is aborted; a failed beat
    /// is logged and retried at the next tick (the node drops out only after a whole TTL).
    pub fn spawn_heartbeat(self: Arc<Self>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(self.ttl / 3);
            loop {
                tick.tick().await;
                if let Err(err) = self.heartbeat().await {
                    tracing::warn!(node = %self.me.id, %err, "cluster heartbeat failed");
                }
            }
        })
    }

    /// The live nodes, sorted by id (at most `MAX_NODES`).
    pub async fn live(&self) -> Result<Vec<NodeInfo>, ClusterError> {
        let mut keys = self.kv.keys().await.map_err(unavailable)?;
        let mut ids = Vec::new();
        while let Some(key) = keys.next().await {
            ids.push(key.map_err(unavailable)?);
            if ids.len() == MAX_NODES {
                break;
            }
        }
        let mut nodes = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(value) = self.kv.get(&id).await.map_err(unavailable)? else {
                continue;
            };
            match serde_json::from_slice::<NodeInfo>(&value) {
                Ok(info) if info.id == id => nodes.push(info),
                Ok(_) | Err(_) => tracing::warn!(key = %id, "membership entry ignored: not a node"),
            }
        }
        nodes.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(nodes)
    }

    /// Leaves the cluster at once (the others see it gone on their next listing).
    pub async fn leave(&self) -> Result<(), ClusterError> {
        self.kv.delete(&self.me.id).await.map_err(unavailable)
    }

    /// Joins and clean leaves, as they happen (not expiries: list again for those).
    pub async fn watch(&self) -> Result<kv::Watch, ClusterError> {
        self.kv.watch_all().await.map_err(unavailable)
    }
}
