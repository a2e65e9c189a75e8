//! The catalogue in cluster mode (`--cluster`): every node holds the whole catalogue, kept in
//! step through the cluster's catalogue log (`cluster::catalog_log`, one JetStream subject whose
//! entries are change sets encoded as `journal::encode_changes`).
//!
//! **Commit** (`Supervisor::commit` calls `publish_change_set`): the change set is published expecting the
//! log's last sequence to be the one this node has applied. Acknowledged, the applied sequence
//! moves to the ack's, and the local WAL and sled's copy are written as on a single server.
//! Refused because other nodes' change sets landed first, the node catches up (reads them,
//! writes them to sled's copy, keeps them to apply to memory once the running operation is
//! done, `apply_pending`) and publishes again when `conflicts` says they do not collide with
//! its own; otherwise the operation fails with `ChangedElsewhere` (503, Retry-After 1) and
//! memory is unchanged. NATS unreachable: `Cluster(Unavailable)` (503, Retry-After 1).
//!
//! **Following**: a task on the cluster's runtime (`Follower::start`) reads the log from the
//! sequence applied at start and sends each entry to the supervisor (`Exec`), which skips what
//! it has applied already (its own commits, what a catch-up read) and applies the rest:
//! sled's copy, then memory with the side effects a start has (`apply`).
//!
//! **Start**: `Supervisor::join_cluster` reads the cluster's catalogue image, then the log after
//! it (blocking), before the bootstrap, which then sees every company the cluster has;
//! `bootstrap_retried` retries once when its publish is refused, so two nodes bootstrapping at
//! once make one owner company.
//!
//! **Images and purges**: once the log has grown by `IMAGE_EVERY` entries past the newest image
//! a node knows, it stores an image of the whole catalogue, then purges the log below the
//! sequence the stored image and every live node have reached (each node's heartbeat carries
//! the sequence it has applied, `cluster::membership::Beat`), less `PURGE_KEEP` entries, so
//! the log holds a bounded tail. A node whose next entries were purged all the same (one
//! that dropped out of the membership while it went on running, or a start that raced a purge)
//! starts again from the image (`resync`): its entities are put and what the node holds that
//! the image lacks is deleted, in sled's copy and in memory.
//!
//! **Visibility**: a change set is visible on the node that committed it when the request
//! answers (that node changed its memory); another node sees it once its follower applied it
//! (milliseconds on a healthy cluster). A remote put of a grid or branch only records it: the
//! grid's actors run where grid ownership (part 3 of issue 24) puts them.

mod apply;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Addr;
use bytes::Bytes;

use super::error::{CatalogError, CatalogResult};
use super::journal::{decode_changes, encode_changes};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::{Exec, Supervisor};
use crate::cluster::catalog_log::{CatalogEntry, CatalogLog, Published, MAX_READ};
use crate::cluster::membership::{Beat, Membership};
use crate::cluster::node::ClusterNode;
use crate::cluster::snapshots::{SnapshotBucket, StoredImage};
use crate::cluster::ClusterError;
use crate::persist::entry::WalRecord;

/// A node stores the catalogue's image in the cluster once the log has grown by this many
/// entries past the newest image it knows.
pub const IMAGE_EVERY: u64 = 1000;
/// The catalogue image's name in the cluster's image bucket (branch ids never start with `_`).
const IMAGE_NAME: &str = "_catalog";
/// How long a start waits for the catalogue's image.
const IMAGE_WAIT: Duration = Duration::from_secs(20);

/// A refused publish is tried again at most this many times (each after a catch-up that found
/// no collision).
const PUBLISH_ATTEMPTS: usize = 5;
/// How long one read of the log may wait for its next entry.
const READ_WAIT: Duration = Duration::from_secs(5);
/// Entries kept below the point the log could be purged to.
const PURGE_KEEP: u64 = IMAGE_EVERY / 10;
/// How often each node looks whether the catalogue's log can be purged.
const PURGE_EVERY: Duration = Duration::from_secs(5);
/// The longest one step of the catalogue's upkeep or stall watch may take (a request to the
/// cluster, or a message to the supervisor) before its tick gives up on it.
const UPKEEP_STEP: Duration = Duration::from_secs(25);
/// A catch-up starts again from the image at most this many times (each time the log was
/// purged past what it had read).
const RESYNC_ATTEMPTS: usize = 3;

/// This node's place in the catalogue's log.
pub struct Replica {
    cluster: Arc<ClusterNode>,
    log: CatalogLog,
    /// The sequence of the last log entry written to sled's copy; this node's heartbeats carry
    /// it (`Membership::catalog_read`), so that no purge drops what it has yet to read.
    applied: Arc<AtomicU64>,
    /// Change sets read by a catch-up during an operation, in log order, to apply to memory
    /// once the operation is done.
    pending: Mutex<Vec<Vec<CatalogChange>>>,
    /// The log sequence the newest catalogue image this node knows covers.
    imaged: AtomicU64,
}

impl Replica {
    pub fn applied(&self) -> u64 {
        self.applied.load(Ordering::SeqCst)
    }
}

/// Whether our change set may be published after theirs (other nodes' sets that landed since
/// it was prepared): not when one of theirs touches an entity (kind and id) ours touches, nor
/// when either side hands out numbers (a `Sequence` or `GlossarySequence` put), since ours was
/// computed from numbers theirs may have taken.
pub fn conflicts(ours: &[CatalogChange], theirs: &[Vec<CatalogChange>]) -> bool {
    let theirs: Vec<&CatalogChange> = theirs.iter().flatten().collect();
    if theirs.is_empty() {
        return false;
    }
    if ours.iter().chain(theirs.iter().copied()).any(allocates_numbers) {
        return true;
    }
    let touched: HashSet<(EntityKind, &str)> = ours.iter().map(entity).collect();
    theirs.into_iter().any(|change| touched.contains(&entity(change)))
}

fn entity(change: &CatalogChange) -> (EntityKind, &str) {
    match change {
        CatalogChange::Put { kind, id, .. } | CatalogChange::Delete { kind, id } => (*kind, id),
    }
}

fn allocates_numbers(change: &CatalogChange) -> bool {
    matches!(
        change,
        CatalogChange::Put { kind: EntityKind::Sequence | EntityKind::GlossarySequence, .. }
    )
}

/// The change set `payload` encodes (a log entry's or an image's).
fn decode_payload(payload: &[u8]) -> Result<Vec<CatalogChange>, String> {
    match WalRecord::decode(payload) {
        Ok(WalRecord::Catalog(body)) => decode_changes(body).map_err(|e| e.to_string()),
        Ok(WalRecord::Branch(_)) => Err("a branch record".to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

/// A log entry's change set; an entry that does not decode is logged and counts as empty.
fn decode_entry(entry: &CatalogEntry) -> Vec<CatalogChange> {
    decode_payload(&entry.payload).unwrap_or_else(|err| {
        tracing::error!(sequence = entry.sequence, node = %entry.node, error = %err,
            "a catalogue log entry does not decode; skipped");
        Vec::new()
    })
}

fn not_replicated(err: ClusterError) -> CatalogError {
    tracing::warn!(error = %err, "the catalogue's log is unavailable");
    CatalogError::Cluster(err)
}

impl Supervisor {
    /// Makes this supervisor a cluster node's (once at start, before any change): opens the
    /// catalogue's log and applies all of it (blocking).
    pub fn join_cluster(&mut self, cluster: Arc<ClusterNode>) -> Result<(), ClusterError> {
        let link = cluster.link.clone();
        let node = cluster.id().to_owned();
        let log = cluster.run(async move {
            // A fresh NATS cluster may time out creating the stream for several nodes at once.
            let mut attempt = 0;
            loop {
                attempt += 1;
                match CatalogLog::open(&link, &node).await {
                    Err(err) if attempt < 5 => {
                        tracing::info!(attempt, error = %err, "opening the catalogue's log: retried");
                        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                    }
                    other => return other,
                }
            }
        })??;
        let applied = cluster.membership.catalog_read();
        applied.store(0, Ordering::SeqCst);
        self.replica = Some(Replica {
            cluster: cluster.clone(),
            log,
            applied,
            pending: Mutex::default(),
            imaged: AtomicU64::new(0),
        });
        self.cluster = Some(cluster);
        let started = std::time::Instant::now();
        self.load_image()?;
        let read = self.catch_up().map_err(|e| ClusterError::Unavailable(e.to_string()))?;
        self.apply_pending();
        self.fail_own_interrupted_tasks();
        tracing::info!(
            change_sets = read.len(),
            applied = self.replica_applied(),
            took_ms = started.elapsed().as_millis() as u64,
            "caught up with the catalogue's log"
        );
        Ok(())
    }

    /// `bootstrap`, tried once more when another node's change sets landed first (it then
    /// finds the company the other node made, and the key when it is the same).
    pub fn bootstrap_retried(&mut self, secret: Option<&str>) -> CatalogResult<Option<String>> {
        match self.bootstrap(secret) {
            Err(CatalogError::ChangedElsewhere) => {
                self.apply_pending();
                tracing::info!("bootstrap raced another node's; trying again");
                self.bootstrap(secret)
            }
            other => other,
        }
    }

    /// Starts from the cluster's catalogue image when there is one (`take_image`), then reads
    /// the log from the sequence it covers. An image read while another node replaces it may be
    /// newer than the sequence it is taken for, which replaying the entries after that sequence
    /// over it makes no difference to (each is a whole entity's put or delete).
    fn load_image(&mut self) -> Result<(), ClusterError> {
        let Some(replica) = &self.replica else { return Ok(()) };
        match self.read_image() {
            Ok(Some(image)) => match self.take_image(image) {
                Ok(changes) => replica
                    .pending
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(changes),
                Err(err) => {
                    tracing::error!(error = %err, "the catalogue's image does not decode; reading the log")
                }
            },
            Ok(None) => {}
            // The image only saves reading, unless the log was purged below it: the catch-up
            // then finds out and fails the start.
            Err(err) => {
                tracing::warn!(error = %err, "the catalogue's image could not be read; reading the log")
            }
        }
        Ok(())
    }

    /// The cluster's newest catalogue image, if it has one.
    fn read_image(&self) -> Result<Option<StoredImage>, ClusterError> {
        let Some(replica) = &self.replica else { return Ok(None) };
        let images = replica.cluster.images.clone();
        replica.cluster.run(async move { images.latest(IMAGE_NAME, IMAGE_WAIT).await })?
    }

    /// Makes sled's copy hold what `image` holds: its entities put, and a delete for each
    /// entity sled's copy holds that the image lacks (none at a start, which begins empty).
    /// The applied sequence becomes the one the image covers. Returns the change set, for the
    /// caller to apply to memory; an image that does not decode changes nothing.
    fn take_image(&self, image: StoredImage) -> Result<Vec<CatalogChange>, String> {
        let Some(replica) = &self.replica else { return Ok(Vec::new()) };
        let puts = decode_payload(&image.bytes)?;
        let mut changes = self.deletes_missing_from(&puts);
        let removed = changes.len();
        changes.extend(puts);
        tracing::info!(
            covers = image.covers,
            entities = changes.len() - removed,
            removed,
            "the catalogue's image read"
        );
        self.store_remote(&changes);
        replica.applied.store(image.covers, Ordering::SeqCst);
        replica.imaged.fetch_max(image.covers, Ordering::SeqCst);
        Ok(changes)
    }

    /// A delete for each entity sled's copy holds that `image` does not put.
    fn deletes_missing_from(&self, image: &[CatalogChange]) -> Vec<CatalogChange> {
        let kept: HashSet<(EntityKind, &str)> = image.iter().map(entity).collect();
        let mut held = Vec::new();
        for kind in EntityKind::ALL {
            match self.store.scan(kind) {
                Ok(entities) => held.extend(entities.into_iter().map(|(id, _)| (kind, id))),
                Err(err) => {
                    tracing::error!(error = %err, ?kind, "reading sled's catalogue copy failed")
                }
            }
        }
        deletes_for(held, &kept)
    }

    /// Starts again from the cluster's image once the log after the applied sequence has been
    /// purged up to `first`; the image must cover the log up to it.
    fn resync(&self, first: u64) -> CatalogResult<Vec<CatalogChange>> {
        let image = self.read_image().map_err(not_replicated)?;
        let Some(image) = image.filter(|image| image.covers + 1 >= first) else {
            return Err(not_replicated(ClusterError::Unavailable(format!(
                "the catalogue's log starts at {first} and no image reaches it"
            ))));
        };
        tracing::warn!(
            applied = self.replica_applied(),
            first,
            "the catalogue's log was purged past what this node had read: starting again from its image"
        );
        self.take_image(image).map_err(|err| {
            not_replicated(ClusterError::Unavailable(format!(
                "the catalogue's image does not decode: {err}"
            )))
        })
    }

    /// Stores the catalogue's image in the cluster (in the background, off this actor) when the
    /// log has grown by `IMAGE_EVERY` entries past the newest image this node knows: every
    /// entity of sled's copy, which then holds the log up to the applied sequence (read later,
    /// on another thread, it may hold a little more, which replaying the log after that
    /// sequence over it does not change).
    fn maybe_store_image(&self) {
        let Some(replica) = &self.replica else { return };
        let applied = replica.applied();
        if applied < replica.imaged.load(Ordering::SeqCst) + IMAGE_EVERY {
            return;
        }
        replica.imaged.store(applied, Ordering::SeqCst);
        let scan = self.store.scanner();
        let images = replica.cluster.images.clone();
        let (log, membership) = (replica.log.clone(), replica.cluster.membership.clone());
        replica.cluster.spawn(async move {
            let encoded = tokio::task::spawn_blocking(move || {
                let mut changes = Vec::new();
                for kind in EntityKind::ALL {
                    let entities = scan(kind)?;
                    changes.extend(entities.into_iter().map(|(id, json)| CatalogChange::Put {
                        kind,
                        id,
                        json,
                    }));
                }
                Ok::<_, super::store::StoreError>(Bytes::from(encode_changes(&changes)))
            })
            .await;
            let encoded =
                encoded.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string()));
            let bytes = match encoded {
                Ok(bytes) => bytes,
                Err(err) => {
                    tracing::warn!(error = %err, "the catalogue's image was not made");
                    return;
                }
            };
            match images.put(IMAGE_NAME, applied, bytes).await {
                Ok(()) => tracing::info!(covers = applied, "the catalogue's image stored"),
                Err(err) => {
                    tracing::warn!(error = %err, "the catalogue's image was not stored");
                    return;
                }
            }
            let purged = match membership.beats().await {
                Ok(beats) => purge_below_image(&log, &beats, &images).await,
                Err(err) => Err(err),
            };
            if let Err(err) = purged {
                tracing::warn!(error = %err, "the catalogue's log was not purged");
            }
        });
    }

    fn replica_applied(&self) -> u64 {
        self.replica.as_ref().map_or(0, Replica::applied)
    }

    /// Cluster mode's part of `commit`: publishes the change set (see the module doc). Memory
    /// is not touched here; sets read by a catch-up wait in `pending`.
    pub(super) fn publish_change_set(
        &self,
        replica: &Replica,
        changes: &[CatalogChange],
    ) -> CatalogResult<()> {
        let payload = Bytes::from(encode_changes(changes));
        for attempt in 1..=PUBLISH_ATTEMPTS {
            let expected = replica.applied();
            let log = replica.log.clone();
            let sent = payload.clone();
            let published = replica
                .cluster
                .run(async move { log.publish(sent, expected).await })
                .and_then(|r| r)
                .map_err(not_replicated)?;
            match published {
                Published::At(sequence) => {
                    replica.applied.store(sequence, Ordering::SeqCst);
                    return Ok(());
                }
                Published::Behind => {
                    let theirs = self.catch_up()?;
                    if conflicts(changes, &theirs) {
                        tracing::info!(attempt, "a catalogue change collided with another node's");
                        return Err(CatalogError::ChangedElsewhere);
                    }
                }
            }
        }
        Err(CatalogError::ChangedElsewhere)
    }

    /// Reads the log after the applied sequence, writes each change set to sled's copy and
    /// keeps it in `pending`; returns the change sets read.
    fn catch_up(&self) -> CatalogResult<Vec<Vec<CatalogChange>>> {
        let Some(replica) = &self.replica else { return Ok(Vec::new()) };
        let mut read = Vec::new();
        let mut resyncs = 0;
        loop {
            let (log, after) = (replica.log.clone(), replica.applied());
            let entries =
                replica.cluster.run(async move { log.read_after(after, READ_WAIT).await });
            let entries = match entries.and_then(|r| r) {
                Err(ClusterError::Purged { first, .. }) if resyncs < RESYNC_ATTEMPTS => {
                    resyncs += 1;
                    read.push(self.resync(first)?);
                    continue;
                }
                other => other.map_err(not_replicated)?,
            };
            let full = entries.len() >= MAX_READ;
            for entry in entries {
                let changes = decode_entry(&entry);
                self.store_remote(&changes);
                replica.applied.store(entry.sequence, Ordering::SeqCst);
                read.push(changes);
            }
            if !full {
                break;
            }
        }
        let mut pending = replica.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pending.extend(read.iter().cloned());
        Ok(read)
    }

    /// Applies to memory the change sets a catch-up read (after the operation that read them).
    pub(super) fn apply_pending(&mut self) {
        let Some(replica) = &self.replica else { return };
        let sets = std::mem::take(
            &mut *replica.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for changes in &sets {
            self.apply_to_memory(changes);
        }
    }

    /// Applies an entry the follower read, unless it is applied already; one that is ahead
    /// of the next expected sequence makes the node catch up first.
    fn apply_followed(&mut self, entry: CatalogEntry) {
        self.maybe_store_image();
        let Some(replica) = &self.replica else { return };
        let applied = replica.applied();
        if entry.sequence <= applied {
            return;
        }
        if entry.sequence > applied + 1 {
            if let Err(err) = self.catch_up_and_apply() {
                tracing::error!(error = %err, "catching up with the catalogue's log failed");
            }
            return;
        }
        let changes = decode_entry(&entry);
        self.store_remote(&changes);
        replica.applied.store(entry.sequence, Ordering::SeqCst);
        self.apply_to_memory(&changes);
    }

    /// Catches up with the log when the follower has stalled behind it (`Follower::start`).
    fn catch_up_stalled(&mut self) {
        let before = self.replica_applied();
        match self.catch_up_and_apply() {
            Ok(read) => tracing::warn!(
                before,
                read,
                "the catalogue's follower delivered nothing while the log was ahead: caught up"
            ),
            Err(err) => tracing::error!(
                before,
                error = %err,
                "the catalogue's follower delivered nothing while the log was ahead: catching up failed"
            ),
        }
    }

    /// `catch_up`, then what it read (and what an earlier operation left pending) applied to
    /// memory, whether or not the catch-up ended well; how many change sets it read.
    fn catch_up_and_apply(&mut self) -> CatalogResult<usize> {
        let read = self.catch_up().map(|read| read.len());
        self.apply_pending();
        read
    }

    /// What starts the follower once the supervisor actor runs; None on a single server.
    pub fn follower(&self) -> Option<Follower> {
        let replica = self.replica.as_ref()?;
        Some(Follower {
            runtime: replica.cluster.handle(),
            log: replica.log.clone(),
            after: replica.applied(),
            membership: replica.cluster.membership.clone(),
            images: replica.cluster.images.clone(),
        })
    }
}

/// Purges the catalogue's log below what the stored image and every live node have reached,
/// less `PURGE_KEEP` entries kept as a margin (an older image another node stores at the same
/// moment stays usable, and a reader that finds its entries gone starts again from the image). Nothing is purged while a live node says 0 (it is starting or does
/// not say). `beats`: the live nodes' heartbeats. Run after each image a node stores and every
/// `PURGE_EVERY` (heartbeats lag).
async fn purge_below_image(
    log: &CatalogLog,
    beats: &[Beat],
    images: &SnapshotBucket,
) -> Result<(), ClusterError> {
    let Some(stored) = images.covers(IMAGE_NAME, IMAGE_WAIT).await? else { return Ok(()) };
    let slowest = beats.iter().map(|beat| beat.catalog_read).min().unwrap_or(0);
    let below = purge_floor(stored, slowest);
    let (first, _) = log.bounds().await?;
    if below <= first {
        return Ok(());
    }
    log.purge_below(below).await?;
    tracing::info!(below, nodes = beats.len(), "the catalogue's log purged");
    Ok(())
}

/// The sequence the catalogue's log may be purged below: what the image covers and the slowest
/// live node has read, less `PURGE_KEEP`; 0 (nothing) when a node has read nothing.
fn purge_floor(image_covers: u64, slowest_read: u64) -> u64 {
    if slowest_read == 0 {
        return 0;
    }
    image_covers.min(slowest_read).saturating_sub(PURGE_KEEP)
}

/// Deletes for the `held` entities that `kept` lacks, children's kinds first (the reverse of
/// `EntityKind::ALL`).
fn deletes_for(
    held: Vec<(EntityKind, String)>,
    kept: &HashSet<(EntityKind, &str)>,
) -> Vec<CatalogChange> {
    let mut gone: Vec<(EntityKind, String)> =
        held.into_iter().filter(|(kind, id)| !kept.contains(&(*kind, id.as_str()))).collect();
    let rank = |kind: &EntityKind| EntityKind::ALL.iter().position(|k| k == kind);
    gone.sort_by_key(|(kind, _)| std::cmp::Reverse(rank(kind)));
    gone.into_iter().map(|(kind, id)| CatalogChange::delete(kind, &id)).collect()
}

/// The task that hands the catalogue's log to the supervisor as it grows.
pub struct Follower {
    runtime: tokio::runtime::Handle,
    log: CatalogLog,
    after: u64,
    membership: Arc<Membership>,
    images: SnapshotBucket,
}

impl Follower {
    /// Starts following on the cluster's runtime, with two tasks beside it, each ticking every
    /// `PURGE_EVERY`:
    /// - the stall watch: it catches up when the node's applied sequence has not moved for a
    ///   whole tick while the log is ahead (a safety net for a follower whose consumer is gone
    ///   and not re-created);
    /// - the upkeep: it purges the log and fails the running tasks of nodes that left the
    ///   cluster.
    ///
    /// Each step of either waits at most `UPKEEP_STEP` (one stuck request skips a tick, it
    /// never stops the task). All three end when the supervisor stops. They hold the log and
    /// buckets, not the cluster node, so they never keep the node (and its runtime) alive.
    pub fn start(self, supervisor: Addr<Supervisor>) {
        let Follower { runtime, log, after, membership, images } = self;
        let (watched_log, watched) = (log.clone(), supervisor.clone());
        let applied = membership.catalog_read();
        runtime.spawn(async move {
            let mut tick = upkeep_interval();
            let mut read_before = None;
            while watched.connected() {
                tick.tick().await;
                let read = applied.load(Ordering::SeqCst);
                let last = bounded("the log's bounds", watched_log.last_sequence()).await;
                let behind = matches!(last, Some(Ok(last)) if last > read);
                if behind && read_before == Some(read) {
                    let stalled = watched.send(Exec::new(|s| s.catch_up_stalled()));
                    bounded("a stalled follower's catch-up", stalled).await;
                }
                read_before = Some(read);
            }
        });
        let (purged, upkept) = (log.clone(), supervisor.clone());
        runtime.spawn(async move {
            let mut tick = upkeep_interval();
            while upkept.connected() {
                tick.tick().await;
                let Some(Ok(beats)) = bounded("the membership", membership.beats()).await else {
                    continue;
                };
                let purge = purge_below_image(&purged, &beats, &images);
                if let Some(Err(err)) = bounded("a purge", purge).await {
                    tracing::debug!(error = %err, "the catalogue's log was not purged");
                }
                let live: Vec<String> = beats.into_iter().map(|beat| beat.node.id).collect();
                let failed = upkept.send(Exec::new(move |s| s.fail_orphaned_tasks(&live)));
                if let Some(Ok(Err(err))) = bounded("failing orphaned tasks", failed).await {
                    tracing::debug!(error = %err, "the tasks of nodes gone were not failed");
                }
            }
        });
        runtime.spawn(async move {
            log.follow(after, |entry| {
                let supervisor = supervisor.clone();
                async move { supervisor.send(Exec::new(move |s| s.apply_followed(entry))).await.is_ok() }
            })
            .await;
        });
    }
}

/// The stall watch's and the upkeep's tick: every `PURGE_EVERY`, a late tick delaying the next.
fn upkeep_interval() -> tokio::time::Interval {
    let mut tick = tokio::time::interval(PURGE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// `step`'s outcome, or None (logged) when it takes longer than `UPKEEP_STEP`.
async fn bounded<T>(what: &'static str, step: impl std::future::Future<Output = T>) -> Option<T> {
    let outcome = tokio::time::timeout(UPKEEP_STEP, step).await.ok();
    if outcome.is_none() {
        tracing::warn!(step = what, "a step of the catalogue's upkeep timed out");
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(kind: EntityKind, id: &str) -> CatalogChange {
        CatalogChange::put(kind, id, &serde_json::json!({}))
    }

    #[test]
    fn distinct_entities_do_not_conflict() {
        let ours = vec![put(EntityKind::Database, "d1"), put(EntityKind::Grid, "g1")];
        let theirs = vec![vec![put(EntityKind::Database, "d2")], vec![put(EntityKind::Key, "g1")]];
        assert!(!conflicts(&ours, &theirs));
        assert!(!conflicts(&ours, &[]));
        assert!(!conflicts(&ours, &[Vec::new()]));
    }

    #[test]
    fn the_same_entity_conflicts_put_or_delete() {
        let ours = vec![put(EntityKind::Project, "7")];
        assert!(conflicts(&ours, &[vec![put(EntityKind::Project, "7")]]));
        assert!(conflicts(&ours, &[vec![CatalogChange::delete(EntityKind::Project, "7")]]));
        let ours = vec![CatalogChange::delete(EntityKind::Grid, "g")];
        assert!(conflicts(
            &ours,
            &[vec![put(EntityKind::Key, "k")], vec![put(EntityKind::Grid, "g")]]
        ));
    }

    #[test]
    fn the_log_is_purged_only_below_what_the_image_and_every_node_reached() {
        // A node that has read nothing (starting, or an earlier version) holds purges back.
        assert_eq!(purge_floor(5000, 0), 0);
        // The image and the slowest node bound it, less PURGE_KEEP entries kept.
        assert_eq!(purge_floor(5000, 9000), 5000 - PURGE_KEEP);
        assert_eq!(purge_floor(5000, 4500), 4500 - PURGE_KEEP);
        assert_eq!(purge_floor(PURGE_KEEP / 2, 9000), 0);
    }

    #[test]
    fn starting_again_from_an_image_deletes_what_it_lacks_children_first() {
        let image = [put(EntityKind::Company, "c"), put(EntityKind::Grid, "g1")];
        let kept: HashSet<(EntityKind, &str)> = image.iter().map(entity).collect();
        let held = vec![
            (EntityKind::Company, "c".to_owned()),
            (EntityKind::Grid, "g1".to_owned()),
            (EntityKind::Grid, "g2".to_owned()),
            (EntityKind::Branch, "g2b".to_owned()),
            (EntityKind::Database, "d".to_owned()),
        ];
        assert_eq!(
            deletes_for(held, &kept),
            vec![
                CatalogChange::delete(EntityKind::Branch, "g2b"),
                CatalogChange::delete(EntityKind::Grid, "g2"),
                CatalogChange::delete(EntityKind::Database, "d"),
            ]
        );
        assert!(deletes_for(Vec::new(), &kept).is_empty());
    }

    #[test]
    fn handing_out_numbers_on_either_side_conflicts() {
        let numbers = put(EntityKind::Sequence, "ids");
        let glossary_numbers = put(EntityKind::GlossarySequence, "last");
        let plain = vec![put(EntityKind::Database, "d1")];
        assert!(conflicts(std::slice::from_ref(&numbers), std::slice::from_ref(&plain)));
        assert!(conflicts(&plain, &[vec![numbers]]));
        assert!(conflicts(&plain, &[vec![glossary_numbers.clone()]]));
        assert!(conflicts(&[glossary_numbers], std::slice::from_ref(&plain)));
        // A deletion of the numbers (never made) hands nothing out.
        assert!(!conflicts(&plain, &[vec![CatalogChange::delete(EntityKind::Sequence, "ids")]]));
    }
}
