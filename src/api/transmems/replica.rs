//! Where a translation memory's changes go: straight to this node's segment store when gridd
//! runs alone; in a cluster (`--cluster`) through the memories' log (`cluster::tm_log`), which
//! every node follows and applies in the same order, so any node answers for any memory.
//!
//! A change (`TmChange`: segments written with the feed position they move, a cleanup, a
//! memory dropped) is published, and the request that made it is answered once this node has
//! applied it, with what the apply did (`Written`, or its refusal: the same on every node,
//! since every node applies the same changes in the same order to the same state). A read
//! first waits until this node has read the memory's log as far as it went when the read came
//! (`caught_up`), so a read through one node sees every write acknowledged through another.
//! At start a node reads the whole log (its segment store was cleared, `clear_local_state`);
//! a deleted memory's entries are purged. The log is not compacted: images of memories, as
//! branches have, are not taken yet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};

use crate::cluster::node::ClusterNode;
use crate::cluster::tm_log::{TmEntry, TmLog};
use crate::cluster::ClusterError;
use crate::error::{ApiError, ApiResult};
use crate::tm::segment::Segment;
use crate::tm::store::{SegmentStore, Written};

/// How long a change waits for this node to apply it once published.
const APPLY_WAIT: Duration = Duration::from_secs(60);
/// How long a read waits for this node to catch up with a memory's log.
const CATCH_UP_WAIT: Duration = Duration::from_secs(10);

/// One change of one memory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TmChange {
    /// Segments added or updated, with the feed position of a branch they move.
    Write { segments: Vec<Segment>, position: Option<(String, u32)> },
    /// Every segment erased (`cleanup`).
    Clear,
    /// The memory's segments and feed positions dropped (it was deleted).
    Drop,
}

/// Applies `change` to memory `memory` in `store` (blocking).
pub fn apply(store: &SegmentStore, memory: &str, change: TmChange) -> ApiResult<Written> {
    match change {
        TmChange::Write { segments, position } => {
            let position = position.as_ref().map(|(branch, at)| (branch.as_str(), *at));
            Ok(store.memory(memory)?.write(segments, position)?)
        }
        TmChange::Clear => {
            store.memory(memory)?.clear()?;
            Ok(Written::default())
        }
        TmChange::Drop => {
            store.drop_memory(memory)?;
            Ok(Written::default())
        }
    }
}

/// This node's end of the memories' log.
pub struct TmReplica {
    log: TmLog,
    handle: tokio::runtime::Handle,
    /// How far this node has read the log (every change ending there applied).
    read: watch::Sender<u64>,
    /// The changes this node published, waiting for their apply's answer, by change id.
    waiting: Mutex<HashMap<String, oneshot::Sender<ApiResult<Written>>>>,
}

impl std::fmt::Debug for TmReplica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TmReplica").field("read", &*self.read.borrow()).finish_non_exhaustive()
    }
}

fn unavailable(err: impl std::fmt::Display) -> ApiError {
    ApiError::retry_soon(format!("The translation memories' log is unavailable: {err}"))
}

impl TmReplica {
    /// Opens the log and follows it from its start, applying every change to `store`. Must not
    /// run on a cluster thread.
    pub fn start(
        node: &ClusterNode,
        store: Arc<SegmentStore>,
    ) -> Result<Arc<TmReplica>, ClusterError> {
        let link = node.link.clone();
        let log = node.run(async move { TmLog::open(&link).await })??;
        let replica = Arc::new(TmReplica {
            log: log.clone(),
            handle: node.handle(),
            read: watch::Sender::new(0),
            waiting: Mutex::new(HashMap::new()),
        });
        let follower = replica.clone();
        let _following = node.spawn(async move {
            let passed = follower.clone();
            log.follow(
                |entry: TmEntry| {
                    let (store, replica) = (store.clone(), follower.clone());
                    async move { replica.applied(entry, store).await }
                },
                move |sequence| {
                    passed.read.send_replace(sequence);
                },
            )
            .await;
        });
        Ok(replica)
    }

    /// Applies one whole change read from the log and answers its writer if it waits here.
    async fn applied(&self, entry: TmEntry, store: Arc<SegmentStore>) {
        let result = match serde_json::from_slice::<TmChange>(&entry.payload) {
            Ok(change) => {
                let memory = entry.memory.clone();
                tokio::task::spawn_blocking(move || apply(&store, &memory, change))
                    .await
                    .unwrap_or_else(|err| {
                        Err(ApiError::internal(format!("an apply stopped: {err}")))
                    })
            }
            Err(err) => {
                tracing::warn!(sequence = entry.sequence, error = %err, "an unreadable memory change skipped");
                Err(ApiError::internal(format!("an unreadable change: {err}")))
            }
        };
        if let Err(err) = &result {
            tracing::debug!(memory = %entry.memory, error = %err.message, "a memory change refused");
        }
        let waiter = self.lock().remove(&entry.op);
        if let Some(waiter) = waiter {
            let _ = waiter.send(result);
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<ApiResult<Written>>>> {
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Publishes `change` of `memory` and answers what its apply on this node did.
    pub async fn change(&self, memory: &str, change: &TmChange) -> ApiResult<Written> {
        let payload = serde_json::to_vec(change)
            .map_err(|err| ApiError::internal(format!("encoding a memory change: {err}")))?;
        let op = crate::ids::generate();
        let (answer, answered) = oneshot::channel();
        self.lock().insert(op.clone(), answer);
        let (log, memory_id, op_id) = (self.log.clone(), memory.to_owned(), op.clone());
        let published = self
            .handle
            .spawn(async move { log.publish(&memory_id, &op_id, Bytes::from(payload)).await })
            .await;
        if let Err(err) = published.map_err(unavailable).and_then(|p| p.map_err(unavailable)) {
            self.lock().remove(&op);
            return Err(err);
        }
        match tokio::time::timeout(APPLY_WAIT, answered).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) | Err(_) => {
                self.lock().remove(&op);
                Err(unavailable("the change was stored but not applied here in time"))
            }
        }
    }

    /// Waits until this node has applied every change of `memory` written before the call.
    pub async fn caught_up(&self, memory: &str) -> ApiResult<()> {
        let (log, memory_id) = (self.log.clone(), memory.to_owned());
        let tail = self.handle.spawn(async move { log.tail(&memory_id).await }).await;
        let tail = tail.map_err(unavailable)?.map_err(unavailable)?;
        let mut read = self.read.subscribe();
        let reached = tokio::time::timeout(CATCH_UP_WAIT, read.wait_for(|at| *at >= tail)).await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            _ => Err(unavailable("this node is still reading the memories' log")),
        }
    }

    /// Purges a deleted memory's entries (after its drop was applied here).
    pub async fn purge(&self, memory: &str) {
        let (log, memory_id) = (self.log.clone(), memory.to_owned());
        let purged = self.handle.spawn(async move { log.purge(&memory_id).await }).await;
        let purged = purged.map_err(|e| ClusterError::Unavailable(e.to_string())).and_then(|p| p);
        if let Err(err) = purged {
            tracing::warn!(memory, error = %err, "purging a deleted memory's log failed");
        }
    }
}
