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
//! a deleted memory's entries are purged.
//!
//! **Compaction.** Once a memory has had `IMAGE_EVERY` changes since its last image, the node
//! that wrote the last of them publishes the memory's whole state as one change
//! (`TmChange::Image`), read right after that change (at sequence `base`) was applied, before
//! the next. Other writes may land between `base` and the image. Every node applies the image
//! as that state (`Memory::replace`) and then applies again the memory's changes that landed
//! between `base` and the image, read back from the log (images among them skipped: they add
//! nothing). A node that applied everything reaches the state it held; one that missed entries
//! (a start after a purge, a node frozen meanwhile) reaches it too. The node that published
//! the image then purges the memory's entries below `base + 1`, or below the first part of a
//! change still unfinished at `base`. So a memory's log holds its last image, the changes
//! after it and those it must replay.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};

use crate::cluster::node::ClusterNode;
use crate::cluster::tm_log::{TmEntry, TmLog, MAX_PARTS, PART_BYTES};
use crate::cluster::ClusterError;
use crate::error::{ApiError, ApiResult};
use crate::tm::segment::Segment;
use crate::tm::store::{SegmentStore, Written};

/// How long a change waits for this node to apply it once published.
const APPLY_WAIT: Duration = Duration::from_secs(60);
/// How long a read waits for this node to catch up with a memory's log.
const CATCH_UP_WAIT: Duration = Duration::from_secs(10);
/// A memory's state is published as an image (and its log purged before it) once it has had
/// this many changes since its last one.
pub const IMAGE_EVERY: u64 = 1000;
/// An image that was due is tried again after this many more changes, until one is applied.
const IMAGE_RETRY_AFTER: u64 = 16;
/// How long one read of the log behind an image may wait.
const REPLAY_WAIT: Duration = Duration::from_secs(5);
/// Times the changes behind an image are read before the node gives up on them.
const REPLAY_ATTEMPTS: u32 = 3;

/// One change of one memory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TmChange {
    /// Segments added or updated, with the feed position of a branch they move.
    Write { segments: Vec<Segment>, position: Option<(String, u32)> },
    /// Every segment erased (`cleanup`).
    Clear,
    /// The memory's segments and feed positions dropped (it was deleted).
    Drop,
    /// The memory's whole state once the change at log sequence `base` was applied: exactly
    /// these segments and feed positions (compaction). `held_from`: the first part of the
    /// memory's changes unfinished at `base`.
    Image {
        base: u64,
        held_from: Option<u64>,
        segments: Vec<Segment>,
        positions: Vec<(String, u32)>,
    },
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
        TmChange::Image { segments, positions, .. } => {
            store.memory(memory)?.replace(&segments, &positions)?;
            Ok(Written::default())
        }
    }
}

/// Memory `memory`'s whole state, after the change `base` (see `TmChange::Image`), as an image
/// change, encoded (blocking).
fn image_of(
    store: &SegmentStore,
    memory: &str,
    base: u64,
    held_from: Option<u64>,
) -> ApiResult<Bytes> {
    let held = store.memory(memory)?;
    let mut segments = Vec::with_capacity(held.len());
    for scanned in held.scan() {
        segments.push(scanned?.1);
    }
    let positions = held.positions()?;
    let image = TmChange::Image { base, held_from, segments, positions };
    let encoded = serde_json::to_vec(&image)
        .map_err(|err| ApiError::internal(format!("encoding a memory's image: {err}")))?;
    Ok(Bytes::from(encoded))
}

/// This node's end of the memories' log.
pub struct TmReplica {
    log: TmLog,
    handle: tokio::runtime::Handle,
    /// How far this node has read the log (every change ending there applied).
    read: watch::Sender<u64>,
    /// The changes this node published, waiting for their apply's answer, by change id.
    waiting: Mutex<HashMap<String, oneshot::Sender<ApiResult<Written>>>>,
    /// Changes applied per memory since its last image.
    since_image: Mutex<HashMap<String, u64>>,
    /// The images this node published and has not applied yet, by change id.
    images: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for TmReplica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TmReplica").field("read", &*self.read.borrow()).finish_non_exhaustive()
    }
}

/// Where a memory's entries must be kept from for an image at `base` (see `TmChange::Image`):
/// what follows `base`, and the parts of changes unfinished there.
fn kept_from(base: u64, held_from: Option<u64>) -> u64 {
    held_from.map_or(base + 1, |held| held.min(base + 1))
}

/// `apply` on the blocking pool.
async fn apply_blocking(
    store: &Arc<SegmentStore>,
    memory: &str,
    change: TmChange,
) -> ApiResult<Written> {
    let (store, memory) = (store.clone(), memory.to_owned());
    tokio::task::spawn_blocking(move || apply(&store, &memory, change))
        .await
        .unwrap_or_else(|err| Err(ApiError::internal(format!("an apply stopped: {err}"))))
}

fn lock_set(set: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    set.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
            since_image: Mutex::default(),
            images: Arc::default(),
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

    /// Applies one whole change read from the log and answers its writer if it waits here;
    /// then compacts the memory's log when it is due (see the module doc).
    async fn applied(&self, entry: TmEntry, store: Arc<SegmentStore>) {
        let change = serde_json::from_slice::<TmChange>(&entry.payload);
        let image = match &change {
            Ok(TmChange::Image { base, held_from, .. }) => Some((*base, *held_from)),
            _ => None,
        };
        let dropped = matches!(change, Ok(TmChange::Drop));
        let result = match change {
            Ok(change) => apply_blocking(&store, &entry.memory, change).await,
            Err(err) => {
                tracing::warn!(sequence = entry.sequence, error = %err, "an unreadable memory change skipped");
                Err(ApiError::internal(format!("an unreadable change: {err}")))
            }
        };
        if let Err(err) = &result {
            tracing::debug!(memory = %entry.memory, error = %err.message, "a memory change refused");
        }
        if let Some((base, held_from)) = image.filter(|_| result.is_ok()) {
            self.replay_behind(&entry, base, held_from, &store).await;
        }
        let waiter = self.lock().remove(&entry.op);
        let mine = waiter.is_some();
        let applied = result.is_ok();
        if let Some(waiter) = waiter {
            let _ = waiter.send(result);
        }
        if dropped {
            self.counts().remove(&entry.memory);
        } else if let Some((base, held_from)) = image {
            self.image_applied(&entry, base, held_from);
        } else if applied && self.count_change(&entry.memory) && mine {
            // Every node counts every change; the one that wrote the change the count comes due
            // at publishes (counts agree once an image has been applied everywhere).
            self.publish_image(&entry, store).await;
        }
    }

    /// After `image` (the memory's state at `base`) was applied: applies again the memory's
    /// changes whose last part lies between `base` and the image, read back from the log.
    async fn replay_behind(
        &self,
        image: &TmEntry,
        base: u64,
        held_from: Option<u64>,
        store: &Arc<SegmentStore>,
    ) {
        let from = kept_from(base, held_from);
        let mut attempt = 0;
        let changes = loop {
            attempt += 1;
            let read =
                self.log.read_changes(&image.memory, from, base, image.sequence, REPLAY_WAIT);
            match read.await {
                Ok(changes) => break changes,
                Err(err) if attempt < REPLAY_ATTEMPTS => {
                    tracing::warn!(memory = %image.memory, error = %err, "reading the changes behind a memory's image: retrying");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(err) => {
                    tracing::error!(memory = %image.memory, error = %err, "the changes behind a memory's image could not be read: this node's copy may miss them until the next image");
                    return;
                }
            }
        };
        for change in changes {
            match serde_json::from_slice::<TmChange>(&change.payload) {
                Ok(TmChange::Image { .. }) | Err(_) => {}
                Ok(change) => {
                    let _ = apply_blocking(store, &image.memory, change).await;
                }
            }
        }
    }

    /// The changes per memory since its last image.
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.since_image.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a change of `memory`; true when an image is due (then again `IMAGE_RETRY_AFTER`
    /// changes later, until an image is applied and the count starts over).
    fn count_change(&self, memory: &str) -> bool {
        let mut since = self.counts();
        let count = since.entry(memory.to_owned()).or_default();
        *count += 1;
        if *count < IMAGE_EVERY {
            return false;
        }
        *count = IMAGE_EVERY - IMAGE_RETRY_AFTER;
        true
    }

    /// Publishes the memory's state as it is right after `after` was applied. The state is
    /// read here, before the follower applies anything else; the publish runs on its own.
    async fn publish_image(&self, after: &TmEntry, store: Arc<SegmentStore>) {
        let (memory, base, held_from) = (after.memory.clone(), after.sequence, after.held_from);
        let read =
            tokio::task::spawn_blocking(move || image_of(&store, &memory, base, held_from)).await;
        let payload = match read {
            Ok(Ok(payload)) => payload,
            Ok(Err(err)) => {
                tracing::warn!(memory = %after.memory, error = %err.message, "a memory's image was not made");
                return;
            }
            Err(err) => {
                tracing::warn!(memory = %after.memory, error = %err, "a memory's image was not made");
                return;
            }
        };
        if payload.len() > MAX_PARTS * PART_BYTES {
            // Never publishable: tried again only after another IMAGE_EVERY changes.
            tracing::warn!(memory = %after.memory, bytes = payload.len(), "a memory's image is larger than one change may be: its log is not compacted");
            self.counts().insert(after.memory.clone(), 0);
            return;
        }
        let op = crate::ids::generate();
        lock_set(&self.images).insert(op.clone());
        let (log, images, memory) = (self.log.clone(), self.images.clone(), after.memory.clone());
        self.handle.spawn(async move {
            if let Err(err) = log.publish(&memory, &op, payload).await {
                tracing::warn!(%memory, error = %err, "a memory's image was not published");
                lock_set(&images).remove(&op);
            }
        });
    }

    /// After an image is applied: the count starts over, and the node that published it purges
    /// the memory's entries up to its `base` (keeping the parts of changes unfinished there).
    fn image_applied(&self, image: &TmEntry, base: u64, held_from: Option<u64>) {
        self.counts().remove(&image.memory);
        if !lock_set(&self.images).remove(&image.op) {
            return;
        }
        let below = kept_from(base, held_from);
        let (log, memory) = (self.log.clone(), image.memory.clone());
        self.handle.spawn(async move {
            match log.purge_below(&memory, below).await {
                Ok(()) => tracing::info!(%memory, below, "a memory's log purged before its image"),
                Err(err) => tracing::warn!(%memory, error = %err, "a memory's log was not purged"),
            }
        });
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
