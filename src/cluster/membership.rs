//! Which nodes are live: each node's heartbeat in the `<prefix>_nodes` KV bucket.
//!
//! A node puts its `NodeInfo` (id, advertised URL) under its id every third of the node TTL;
//! the bucket's max age is the TTL, so a node that stops (killed, cut off) disappears from the
//! bucket one TTL after its last heartbeat, with nothing left to clean up. A node that leaves
//! cleanly deletes its key. The live-node list is the bucket's keys; `watch` streams joins and
//! clean leaves as they happen (an expiry is not an event: it is seen by listing again, which
//! callers do on every heartbeat). Owns the bucket; knows nothing of branches.
//!
//! A heartbeat also carries how far the node has read the catalogue's log (`Beat`), so that
//! the log is purged only below what every live node has read (`catalog::replica`). A node's
//! first heartbeat, put before it reads anything, says 0: nothing is purged while it starts.

use std::sync::atomic::{AtomicU64, Ordering};
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

/// A heartbeat as stored: the node and how far it has read the catalogue's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Beat {
    #[serde(flatten)]
    pub node: NodeInfo,
    /// The last catalogue log sequence the node has applied (0: not known yet, or a node that
    /// does not say; either holds every purge back).
    #[serde(default)]
    pub catalog_read: u64,
}

/// This node's place in the membership bucket.
#[derive(Debug, Clone)]
pub struct Membership {
    kv: kv::Store,
    me: NodeInfo,
    ttl: Duration,
    /// What this node's heartbeats say it has read of the catalogue's log.
    catalog_read: Arc<AtomicU64>,
}

impl Membership {
    /// Opens the membership bucket for `me` (no heartbeat yet: see `heartbeat`).
    pub async fn open(link: &ClusterLink, me: NodeInfo) -> Result<Membership, ClusterError> {
        check_token("node", &me.id)?;
        let ttl = link.settings.node_ttl;
        let kv = link.open_bucket("nodes", ttl).await?;
        Ok(Membership { kv, me, ttl, catalog_read: Arc::default() })
    }

    pub fn me(&self) -> &NodeInfo {
        &self.me
    }

    /// The position this node's heartbeats carry for the catalogue's log: the catalogue keeps
    /// it as the sequence it has applied.
    pub fn catalog_read(&self) -> Arc<AtomicU64> {
        self.catalog_read.clone()
    }

    /// Says this node is live for one more TTL.
    pub async fn heartbeat(&self) -> Result<(), ClusterError> {
        let beat =
            Beat { node: self.me.clone(), catalog_read: self.catalog_read.load(Ordering::SeqCst) };
        let value = serde_json::to_vec(&beat).expect("a Beat serializes");
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
        Ok(self.beats().await?.into_iter().map(|beat| beat.node).collect())
    }

    /// The live nodes' latest heartbeats, sorted by node id (at most `MAX_NODES`).
    pub async fn beats(&self) -> Result<Vec<Beat>, ClusterError> {
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
            match serde_json::from_slice::<Beat>(&value) {
                Ok(beat) if beat.node.id == id => nodes.push(beat),
                Ok(_) | Err(_) => tracing::warn!(key = %id, "membership entry ignored: not a node"),
            }
        }
        nodes.sort_by(|a, b| a.node.id.cmp(&b.node.id));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_without_a_position_holds_purges_back() {
        let old = br#"{"id":"n1","advertise":"http://127.0.0.1:1"}"#;
        let beat: Beat = serde_json::from_slice(old).expect("an earlier version's heartbeat");
        assert_eq!(beat.node.id, "n1");
        assert_eq!(beat.catalog_read, 0);
        let now = Beat { node: beat.node.clone(), catalog_read: 42 };
        let json = serde_json::to_value(&now).expect("serializes");
        assert_eq!(json["id"], "n1");
        assert_eq!(json["catalog_read"], 42);
        assert_eq!(serde_json::from_value::<NodeInfo>(json).expect("still a NodeInfo"), now.node);
    }
}
