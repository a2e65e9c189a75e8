//! `Durability`: what grid actors share to make their state durable — the WAL, the snapshot
//! store, the snapshot policy, and each branch's WAL floor (the LSN below which its records are
//! covered by both snapshot generations), from which old WAL segments are deleted.
//!
//! Snapshot writing (image, rkyv, sled) is blocking work: callers run it off the actor thread.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;

use super::history::{History, Target};
use super::image_formats::decode_any;
use super::memory::available_memory;
use super::snapshot::{
    Generation, GenerationInfo, LoadedSnapshot, Payload, SnapshotError, SnapshotImage,
    SnapshotStore,
};
use super::wal::{WalError, WalHandle};
use crate::error::{Coded, ErrorCode};
use crate::grid::damage::{Damaged, LoadResult};
use crate::grid::image::{ImageIndex, PartLimits, SectionSource, IMAGE_FORMAT_VERSION};
use crate::grid::ops::GridState;
use crate::histogram::{Histogram, LATENCY_BOUNDS};

/// When branches write snapshots.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPolicy {
    /// After this many records written (added, updated, deleted) by a branch...
    pub every_records: u64,
    /// ...or this many bytes of its WAL records, whichever comes first: replaying the WAL
    /// after a crash costs about what it holds.
    pub every_bytes: u64,
    /// And at least this often while a branch has changes (or its WAL floor lags).
    pub every: Duration,
}

impl SnapshotPolicy {
    /// WAL records (of any branch) past a branch's or the catalogue's floor after which an
    /// idle one snapshots at its next interval, so that it does not hold the WAL back.
    pub fn floor_lag(&self) -> u64 {
        self.every_records.min(50_000)
    }

    /// WAL bytes kept for a floor past which it lags as well: a bulk load writes a thousand
    /// records in one WAL record, so records alone let an idle floor hold gigabytes.
    pub fn floor_lag_bytes(&self) -> u64 {
        self.every_bytes.saturating_mul(2)
    }
}

/// The WAL, the snapshot store and the floors.
pub struct Durability {
    pub wal: WalHandle,
    pub snapshots: Arc<dyn SnapshotStore>,
    pub policy: SnapshotPolicy,
    floors: DashMap<String, u64>,
    /// Per branch, the branches copied from it that have no snapshot yet (see `pin`).
    pins: DashMap<String, Vec<String>>,
    /// Time to encode and store one snapshot, in seconds.
    pub snapshot_seconds: Histogram,
    /// Per branch, the newest whole image this process wrote, which later snapshots borrow
    /// unchanged sections from.
    bases: DashMap<String, SnapshotBase>,
    /// Bytes of snapshot sections written, and borrowed from earlier images of the chain instead.
    pub snapshot_bytes_written: AtomicU64,
    pub snapshot_bytes_borrowed: AtomicU64,
    /// Per branch, held while one of its snapshots is written, over the WAL position of the
    /// newest one this process stored: a branch's snapshots are written one at a time (a
    /// shutdown's snapshot may meet the one a burst of writes started), never an older over a
    /// newer.
    writing: DashMap<String, Arc<Mutex<Option<u64>>>>,
    /// The bases and archived WAL point-in-time restores read (`--retain-history`), if kept.
    history: Option<History>,
}

/// A branch's newest image this process stored (`Durability::bases`), and its chain.
struct SnapshotBase {
    generation: Generation,
    /// Where its sections and its chain's lie; `chain()` starts with `generation`.
    index: ImageIndex,
    /// Bytes the images of the chain wrote (what a load of the newest reads; what the load
    /// uses is `index.referenced()`).
    stored: u64,
}

impl SnapshotBase {
    /// Whether the next image should borrow from this one rather than be whole: while the
    /// chain has fewer than `MAX_DELTAS` images on its whole one, and sections no image of it
    /// uses any more are at most a third of what a load reads.
    fn worth_borrowing(&self) -> bool {
        self.index.chain().len() <= MAX_DELTAS
            && self.stored.saturating_mul(2) <= self.index.referenced().saturating_mul(3)
    }
}

/// Images on one whole image at most (each writes what changed since the one before). The WAL
/// is kept from the newest image before that whole one (see `floor_from_store`), so this bounds
/// the WAL a branch keeps to about `MAX_DELTAS + 1` snapshot intervals.
const MAX_DELTAS: usize = 16;

/// A branch state loaded from its newest intact snapshot, and the LSN the snapshot covers.
pub struct LoadedBranch {
    pub state: GridState,
    pub wal_lsn: u64,
}

/// The snapshot-store key of backup `id`'s image.
pub fn backup_image_key(id: &str) -> String {
    format!("backup:{id}")
}

impl Durability {
    pub fn new(
        wal: WalHandle,
        snapshots: Arc<dyn SnapshotStore>,
        policy: SnapshotPolicy,
    ) -> Durability {
        Durability {
            wal,
            snapshots,
            policy,
            floors: DashMap::new(),
            pins: DashMap::new(),
            snapshot_seconds: Histogram::new(LATENCY_BOUNDS),
            bases: DashMap::new(),
            snapshot_bytes_written: AtomicU64::new(0),
            snapshot_bytes_borrowed: AtomicU64::new(0),
            writing: DashMap::new(),
            history: None,
        }
    }

    /// Keeps point-in-time history (bases and archived WAL) in `history`.
    pub fn with_history(mut self, history: History) -> Durability {
        self.history = Some(history);
        self
    }

    /// The kept history, when the server keeps one.
    pub fn history(&self) -> Option<&History> {
        self.history.as_ref()
    }

    /// Registers a live branch (at recovery or creation) with its current floor; only a
    /// registered (or pinned) branch's snapshots are written.
    pub fn track(&self, branch_id: &str) {
        let floor = self.floor_from_store(branch_id);
        self.floors.insert(branch_id.to_owned(), floor);
    }

    /// Registers a branch copied from `source` at a WAL position, before it has a snapshot:
    /// until then recovery rebuilds it from `source`'s snapshot and WAL records up to that
    /// position, so `source` must not store a snapshot past it (`is_pinned`), and the WAL is
    /// kept from `source`'s floor.
    pub fn pin(&self, source: &str, branch: &str) {
        self.pins.entry(source.to_owned()).or_default().push(branch.to_owned());
        let floor = self.floor(source);
        self.floors.insert(branch.to_owned(), floor);
    }

    /// Releases `source` from `branch` (its first snapshot is stored, or it was deleted).
    pub fn unpin(&self, source: &str, branch: &str) {
        let emptied = match self.pins.get_mut(source) {
            Some(mut children) => {
                children.retain(|c| c != branch);
                children.is_empty()
            }
            None => false,
        };
        if emptied {
            self.pins.remove_if(source, |_, children| children.is_empty());
        }
    }

    /// True while a branch copied from `branch` has no snapshot of its own.
    pub fn is_pinned(&self, branch: &str) -> bool {
        self.pins.get(branch).is_some_and(|children| !children.is_empty())
    }

    /// Forgets a deleted branch and its snapshots. A snapshot of it still on its way is not
    /// stored, or deleted once stored (`write_snapshot` writes only tracked branches).
    pub fn forget(&self, branch_id: &str) {
        self.floors.remove(branch_id);
        self.bases.remove(branch_id);
        self.writing.remove(branch_id);
        if let Err(err) = self.snapshots.delete(branch_id) {
            tracing::warn!(branch = branch_id, error = %err, "deleting snapshots of a deleted branch failed");
        }
        if let Some(history) = &self.history {
            history.forget(branch_id);
        }
    }

    /// The floor of a branch: once two whole generations are kept and every header is intact,
    /// the oldest position of a kept generation that is no kept generation's base (the store
    /// keeps, besides the newest generation and its chain, an older generation and its chain,
    /// so whichever one image is damaged, an image at or after the floor still loads); else 0.
    fn floor_from_store(&self, branch_id: &str) -> u64 {
        match self.snapshots.generations(branch_id) {
            Ok(gens)
                if whole_generations(&gens) >= 2 && gens.iter().all(|g| g.header.is_some()) =>
            {
                let bases: HashSet<u64> =
                    gens.iter().filter_map(|g| g.header.and_then(|h| h.base)).collect();
                gens.iter()
                    .filter(|g| !bases.contains(&g.generation.0))
                    .filter_map(|g| g.header.as_ref().map(|h| h.wal_lsn))
                    .min()
                    .unwrap_or(0)
            }
            Ok(_) => 0,
            Err(err) => {
                tracing::warn!(branch = branch_id, error = %err, "reading snapshot generations failed");
                0
            }
        }
    }

    /// True when `key`'s floor holds the WAL back: more than `floor_lag` records, or more than
    /// `floor_lag_bytes` of segments a floor at the WAL's end would let go.
    pub fn floor_lags(&self, key: &str) -> bool {
        let floor = self.floor(key);
        let records = self.wal.last_lsn().saturating_sub(floor) > self.policy.floor_lag();
        records
            || self
                .wal
                .bytes_held_by_floor(floor)
                .is_ok_and(|bytes| bytes > self.policy.floor_lag_bytes())
    }

    /// Makes sure the WAL's next LSN is above every LSN a snapshot covers. A snapshot is written
    /// only after the WAL is durable up to its position, so this pads only after damage to
    /// durable WAL records; without it, new records could reuse LSNs that recovery skips.
    /// `at_least` is a position known to be used otherwise (the catalogue tree's last change).
    pub fn pad_wal_past_snapshots(
        &self,
        keys: &[String],
        at_least: u64,
    ) -> Result<(), DurabilityError> {
        let highest = keys
            .iter()
            .filter_map(|b| self.snapshots.generations(b).ok())
            .flatten()
            .filter_map(|g| g.header.map(|h| h.wal_lsn))
            .max()
            .unwrap_or(0)
            .max(at_least);
        let last = self.wal.last_lsn();
        if highest <= last {
            return Ok(());
        }
        // Records up to `highest` were durable before that snapshot was written: the log was
        // cut short after the crash, and the records after its new end may have held
        // acknowledged changes that no snapshot covers.
        tracing::error!(
            wal_last = last,
            snapshot_lsn = highest,
            "the WAL ends before a snapshot's position: it lost durable records (changes after \
             the newest snapshots may be lost); padding"
        );
        let filler = super::entry::WalEntry::now(String::new(), Vec::new()).encode();
        while self.wal.last_lsn() < highest {
            self.wal.append(filler.clone())?;
        }
        wait_off_runtime(self.wal.sync_now()?)
    }

    pub fn floor(&self, branch_id: &str) -> u64 {
        self.floors.get(branch_id).map_or(0, |f| *f)
    }

    /// Writes a snapshot of `state` covering the WAL up to `wal_lsn`, then deletes the WAL
    /// segments every branch's snapshots cover. Blocking.
    pub fn write_snapshot(
        &self,
        branch_id: &str,
        wal_lsn: u64,
        state: &GridState,
    ) -> Result<(), SnapshotFailure> {
        let now = chrono::Utc::now().timestamp_millis();
        self.write_snapshot_copied(branch_id, (wal_lsn, now), state)
    }

    /// `write_snapshot` of a state copied at `copied_ms` (Unix milliseconds): every entry it
    /// holds was committed by then, so a history base made of it serves restores from then.
    pub fn write_snapshot_copied(
        &self,
        branch_id: &str,
        (wal_lsn, copied_ms): (u64, i64),
        state: &GridState,
    ) -> Result<(), SnapshotFailure> {
        let started = std::time::Instant::now();
        // The image is streamed to its file a section at a time; what a snapshot holds besides
        // the branch is the chunks writers copy meanwhile and one section. With less than that
        // left, it is postponed (the WAL keeps every write) rather than risk the OOM killer.
        if let Some(available) = available_memory().filter(|&a| a < SNAPSHOT_HEADROOM) {
            return Err(SnapshotFailure::Postponed { needed: SNAPSHOT_HEADROOM, available });
        }
        let lock = self.writing.entry(branch_id.to_owned()).or_default().clone();
        let mut newest = lock.lock().unwrap_or_else(|e| e.into_inner());
        if newest.is_some_and(|newest| newest >= wal_lsn) {
            // A snapshot at this position or later was stored while this one waited.
            return Ok(());
        }
        if !self.floors.contains_key(branch_id) {
            // The branch was deleted (`forget`) after this snapshot was asked for.
            return Ok(());
        }
        self.store_streamed(branch_id, wal_lsn, state)?;
        *newest = Some(wal_lsn);
        self.store_history_base(branch_id, (wal_lsn, copied_ms), state);
        if !self.floors.contains_key(branch_id) {
            // Deleted while it was written: what `forget` deleted may not have held it yet.
            self.snapshots.delete(branch_id).map_err(DurabilityError::store("deleting"))?;
        }
        self.snapshot_seconds.observe_duration(started.elapsed());
        Ok(())
    }

    /// With history kept: stores the snapshot's state as the branch's next base too when its
    /// newest is a retention period old (or it has none). A failure is logged: the bases kept
    /// still serve restores, and the next snapshot tries again.
    fn store_history_base(
        &self,
        branch_id: &str,
        (wal_lsn, copied_ms): (u64, i64),
        state: &GridState,
    ) {
        let Some(history) = &self.history else { return };
        if !self.floors.contains_key(branch_id) || !history.due(branch_id, copied_ms) {
            return;
        }
        if let Err(err) = history.put(branch_id, wal_lsn, state, copied_ms) {
            tracing::warn!(branch = branch_id, error = %err, "storing a history base failed");
        }
        // The new base may retire an older one, and with it archived log no base needs.
        self.truncate_wal();
    }

    /// Stores the first snapshot of a branch made from a state of its own (a point-in-time
    /// restore), covering the WAL up to `wal_lsn` (the log's end: the branch has no records in
    /// it yet), and its first history base. The branch is registered (`track`) after, so a
    /// start that finds it in the catalogue finds this image. Blocking.
    pub fn store_new_branch(
        &self,
        branch_id: &str,
        wal_lsn: u64,
        state: &GridState,
    ) -> Result<(), DurabilityError> {
        self.store_streamed(branch_id, wal_lsn, state)?;
        self.store_first_base(branch_id, wal_lsn, state);
        Ok(())
    }

    /// With history kept: stores a new branch's first state (covering the WAL up to
    /// `wal_lsn`) as its first base, so that it can be restored to any time after its creation
    /// rather than only after its first snapshot. Blocking, but the state is small.
    pub fn store_first_base(&self, branch_id: &str, wal_lsn: u64, state: &GridState) {
        let Some(history) = &self.history else { return };
        let now = chrono::Utc::now().timestamp_millis();
        if let Err(err) = history.put(branch_id, wal_lsn, state, now) {
            tracing::warn!(branch = branch_id, error = %err, "storing a first history base failed");
        }
    }

    /// Stores `state` as the newest image of `key` covering the WAL up to `wal_lsn`, written to
    /// the store as it is encoded, then `stored`. The image borrows the sections of unchanged
    /// chunks from the key's base (the newest image this process stored) and its chain while
    /// that is worth it and the store keeps two whole images; else it is whole.
    fn store_streamed(
        &self,
        key: &str,
        wal_lsn: u64,
        state: &GridState,
    ) -> Result<(), DurabilityError> {
        let wholes = if self.snapshots.keeps_bases() {
            self.snapshots.generations(key).map_or(0, |g| whole_generations(&g))
        } else {
            0
        };
        let base = self
            .bases
            .remove(key)
            .map(|(_, base)| base)
            .filter(|base| base.worth_borrowing() && wholes >= 2 && base.index.fits(state));
        let mut written = None;
        let generation = self
            .snapshots
            .put_streamed(
                key,
                IMAGE_FORMAT_VERSION,
                wal_lsn,
                base.as_ref().map(|b| b.generation),
                &mut |out| {
                    let index = base.as_ref().map(|b| &b.index);
                    written = Some(state.write_image(PartLimits::DEFAULT, index, out)?);
                    Ok(())
                },
            )
            .map_err(DurabilityError::store("storing"))?;
        let written = written.ok_or(DurabilityError::Unwritten("it was not written"))?;
        if written.on_base && base.is_none() {
            return Err(DurabilityError::Unwritten("an image without a base borrowed sections"));
        }
        // A load reads the chain its header names, whether or not the image borrowed from it.
        let chain_bytes = base.as_ref().map_or(0, |b| b.stored);
        let next = SnapshotBase {
            generation,
            index: written.index.stored_as(generation.0),
            stored: chain_bytes + written.written,
        };
        self.snapshot_bytes_written.fetch_add(written.written, Ordering::Relaxed);
        self.snapshot_bytes_borrowed.fetch_add(written.borrowed, Ordering::Relaxed);
        tracing::debug!(
            key,
            generation = generation.0,
            written = written.written,
            borrowed = written.borrowed,
            chain = next.index.chain().len(),
            "snapshot image stored"
        );
        self.bases.insert(key.to_owned(), next);
        self.stored(key)
    }

    /// Stores `bytes` as the newest image of `key` covering the WAL up to `wal_lsn`, then
    /// `stored`. Blocking; one caller per key at a time.
    pub fn store_image(
        &self,
        key: &str,
        format_version: u32,
        wal_lsn: u64,
        bytes: Vec<u8>,
    ) -> Result<(), DurabilityError> {
        let image = SnapshotImage { format_version, wal_lsn, bytes };
        self.snapshots.put(key, &image).map_err(DurabilityError::store("storing"))?;
        self.stored(key)
    }

    /// After a new image of `key`: flushes the store, moves the key's floor, and deletes the
    /// WAL segments every floor covers.
    fn stored(&self, key: &str) -> Result<(), DurabilityError> {
        self.snapshots.flush().map_err(DurabilityError::store("flushing"))?;
        let floor = self.floor_from_store(key);
        if self.floors.contains_key(key) {
            self.floors.insert(key.to_owned(), floor);
        }
        self.truncate_wal();
        Ok(())
    }

    /// Deletes the WAL segments below the lowest floor of all live branches.
    fn truncate_wal(&self) {
        let Some(lowest) = self.floors.iter().map(|f| *f.value()).min() else { return };
        if lowest == 0 {
            return;
        }
        let retired = match &self.history {
            Some(history) => self.wal.archive_segments_below(lowest, history.archive()),
            None => self.wal.remove_segments_below(lowest),
        };
        match retired {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                segments = n,
                below = lowest,
                archived = self.history.is_some(),
                "retired WAL segments covered by snapshots"
            ),
            Err(err) => tracing::warn!(error = %err, "retiring old WAL segments failed"),
        }
        if let (Some(history), Ok(Some(first_live))) = (&self.history, self.wal.oldest_segment()) {
            history.prune(first_live);
        }
    }

    /// Stores `state` as the image of backup `id` (its own key in the snapshot store, not a
    /// branch's), flushed. Blocking.
    pub fn store_backup(&self, id: &str, state: &GridState) -> Result<(), DurabilityError> {
        let key = backup_image_key(id);
        self.snapshots
            .put_streamed(&key, IMAGE_FORMAT_VERSION, 0, None, &mut |out| {
                state.write_image(PartLimits::DEFAULT, None, out).map(drop)
            })
            .map_err(DurabilityError::store("storing"))?;
        self.snapshots.flush().map_err(DurabilityError::store("flushing"))
    }

    /// The state backup `id` holds. Blocking.
    pub fn load_backup(&self, id: &str) -> Result<GridState, DurabilityError> {
        let key = backup_image_key(id);
        let loaded = self
            .snapshots
            .load_latest(&key)
            .map_err(DurabilityError::store("reading"))?
            .ok_or(DurabilityError::MissingBackup)?;
        decode_any(loaded.format_version, &loaded.bytes, &loaded.chain)
            .map_err(DurabilityError::Image)
    }

    /// Removes backup `id`'s image.
    pub fn delete_backup(&self, id: &str) {
        let key = backup_image_key(id);
        if let Err(err) = self.snapshots.delete(&key) {
            tracing::warn!(backup = id, error = %err, "deleting a backup's image failed");
        }
    }

    /// The newest intact snapshot of a branch, decoded (validated rkyv access), if any.
    pub fn load(&self, branch_id: &str) -> Option<LoadedBranch> {
        let loaded = match self.snapshots.load_latest(branch_id) {
            Ok(Some(loaded)) => loaded,
            Ok(None) => return None,
            Err(err) => {
                tracing::error!(branch = branch_id, error = %err, "no intact snapshot; replaying the whole WAL");
                return None;
            }
        };
        let decoded =
            if loaded.format_version == IMAGE_FORMAT_VERSION && self.snapshots.keeps_bases() {
                self.decode_as_base(branch_id, &loaded)
            } else {
                decode_any(loaded.format_version, &loaded.bytes, &loaded.chain)
            };
        match decoded {
            Ok(state) => Some(LoadedBranch { state, wal_lsn: loaded.wal_lsn }),
            Err(err) => {
                tracing::error!(branch = branch_id, error = %err, "snapshot does not decode; replaying the whole WAL");
                None
            }
        }
    }

    /// A branch no snapshot of which loads (`load` answered `None`), from its history when the
    /// live WAL alone cannot rebuild it: it had snapshots (all now damaged or gone with their
    /// files still listed), or its oldest history base lies before the live WAL's first record
    /// (older records were archived once snapshots covered them). Then its newest base that
    /// loads, with the branch's archived records between that base and the live WAL applied
    /// (`History::rebuild`), covering the WAL up to just before its first live record; the
    /// replay goes on from there. `None` for a branch the live WAL holds whole (a new one that
    /// has no snapshot yet), without a kept history, or when no base serves (logged: what
    /// came before the live WAL is lost).
    pub fn load_from_history(&self, branch_id: &str) -> Option<LoadedBranch> {
        let history = self.history.as_ref()?;
        let bases = history.bases(branch_id);
        let oldest = bases.first()?.wal_lsn;
        let first_live = match self.wal.oldest_segment() {
            Ok(Some(first)) => first,
            Ok(None) => self.wal.last_lsn().saturating_add(1),
            Err(err) => {
                tracing::error!(branch = branch_id, error = %err, "listing the WAL failed");
                return None;
            }
        };
        let had_snapshots = self.snapshots.generations(branch_id).is_ok_and(|g| !g.is_empty());
        if !had_snapshots && oldest.saturating_add(1) >= first_live {
            return None;
        }
        for base in bases.iter().rev() {
            let up_to = first_live.saturating_sub(1).max(base.wal_lsn);
            match history.rebuild(&self.wal, base, Target::At(i64::MAX), up_to) {
                Ok(state) => {
                    tracing::warn!(
                        branch = branch_id,
                        base_lsn = base.wal_lsn,
                        up_to,
                        "no snapshot of the branch loads: it was rebuilt from a history base and \
                         the archived WAL, then the live WAL is replayed onto it"
                    );
                    return Some(LoadedBranch { state, wal_lsn: up_to });
                }
                Err(err) => tracing::error!(
                    branch = branch_id,
                    base_lsn = base.wal_lsn,
                    error = %err,
                    "a history base could not rebuild the branch"
                ),
            }
        }
        tracing::error!(
            branch = branch_id,
            first_live,
            "no snapshot or history base rebuilds the branch: its changes before the live \
             WAL's first record are lost"
        );
        None
    }
}

impl Durability {
    /// Decodes a branch's snapshot of the current format and makes it the branch's base: the
    /// branch's next snapshot borrows from it and its chain every chunk not written since the
    /// start, instead of being whole.
    fn decode_as_base(&self, branch_id: &str, loaded: &LoadedSnapshot) -> LoadResult<GridState> {
        let chain: Vec<&dyn SectionSource> =
            loaded.chain.iter().map(|p| p as &dyn SectionSource).collect();
        let generations: Vec<u64> = std::iter::once(loaded.generation)
            .chain(loaded.links.iter().copied())
            .map(|g| g.0)
            .collect();
        let (state, index) = GridState::decode_indexed(&loaded.bytes, &chain, Some(&generations))?;
        if let Some(index) = index {
            let stored = loaded.bytes.len() + loaded.chain.iter().map(Payload::len).sum::<u64>();
            let base = SnapshotBase { generation: loaded.generation, index, stored };
            self.bases.insert(branch_id.to_owned(), base);
        }
        Ok(state)
    }
}

/// Waits for a WAL barrier on a thread of its own: start-up runs inside the actix runtime,
/// where a blocking wait on the current thread panics.
pub fn wait_off_runtime(durable: super::wal::Durable) -> Result<(), DurabilityError> {
    std::thread::scope(|scope| {
        scope
            .spawn(move || durable.wait().map_err(DurabilityError::Wal))
            .join()
            .unwrap_or(Err(DurabilityError::WaitPanicked))
    })
}

/// Why storing or reading an image (a branch's, a backup's, the catalogue's) failed.
#[derive(Debug, thiserror::Error)]
pub enum DurabilityError {
    /// The WAL refused a record or a sync, or closed.
    #[error("the WAL: {0}")]
    Wal(#[from] WalError),
    /// The snapshot store failed at `doing` (storing, reading, flushing).
    #[error("{doing}: {source}")]
    Store { doing: &'static str, source: SnapshotError },
    /// An image did not decode.
    #[error("the image: {0}")]
    Image(#[from] Damaged),
    /// Encoding an image did not give what was stored (a bug, never the data's fault).
    #[error("the image: {0}")]
    Unwritten(&'static str),
    /// A backup's image is not in the store.
    #[error("the backup's image is missing")]
    MissingBackup,
    /// The thread waiting for the WAL stopped.
    #[error("waiting for the WAL panicked")]
    WaitPanicked,
}

impl DurabilityError {
    fn store(doing: &'static str) -> impl FnOnce(SnapshotError) -> DurabilityError {
        move |source| DurabilityError::Store { doing, source }
    }
}

impl Coded for DurabilityError {
    fn code(&self) -> ErrorCode {
        match self {
            DurabilityError::Wal(_) | DurabilityError::WaitPanicked => {
                ErrorCode::ServiceUnavailable
            }
            DurabilityError::Store { .. }
            | DurabilityError::Image(_)
            | DurabilityError::Unwritten(_) => ErrorCode::InternalServerError,
            DurabilityError::MissingBackup => ErrorCode::BackupIsNotFound,
        }
    }
}

/// Why `write_snapshot` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotFailure {
    /// Encoding would not fit in the memory left; the WAL keeps every write.
    #[error("postponed: encoding needs about {} MiB, {} MiB are available", .needed >> 20, .available >> 20)]
    Postponed { needed: u64, available: u64 },
    /// The WAL, the snapshot store or the image refused it.
    #[error("{0}")]
    Failed(#[from] DurabilityError),
    /// No thread could be started to write it.
    #[error("no snapshot thread: {0}")]
    NoThread(std::io::Error),
    /// The thread writing it stopped without an answer.
    #[error("the snapshot thread stopped")]
    ThreadStopped,
}

/// Memory a snapshot needs left: one section (at most about `PartLimits::DEFAULT.bytes`, its
/// encoding twice that), the write buffer, and room for the chunks writers copy meanwhile.
const SNAPSHOT_HEADROOM: u64 = 256 << 20;

/// How many of `generations` are whole images (their header intact and without a base).
fn whole_generations(generations: &[GenerationInfo]) -> usize {
    generations.iter().filter(|g| g.header.is_some_and(|h| h.base.is_none())).count()
}

#[cfg(test)]
mod fixture_tests {
    //! `snapshots/` holds one image per format version; each must still load. Regenerate the
    //! current one with `GRIDD_WRITE_SNAPSHOT_FIXTURE=1 cargo test --lib fixture`.

    use super::Payload;
    use crate::grid::columns::{build_column, ColumnRequest};
    use crate::grid::image::PartLimits;
    use crate::grid::image::IMAGE_FORMAT_VERSION;
    use crate::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
    use crate::grid::schema::Dependency;
    use crate::grid::store::RecordIdentity;
    use crate::grid::value::{CellValue, SourceStatus};
    use crate::persist::image_formats::{
        decode_any, decode_image_v1, decode_image_v2, decode_image_v3, decode_image_v4,
    };

    fn fixture_state() -> GridState {
        let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        for body in [
            serde_json::json!({"id":"enUS","name":"English","type":"language","languageCode":"enUS"}),
            serde_json::json!({"id":"jaJP","name":"Japanese","type":"language","languageCode":"jaJP","localizationType":"targetLanguage"}),
            serde_json::json!({"id":"n","name":"Count","type":"number"}),
            serde_json::json!({"id":"tags","name":"Tags","type":"multipleSelections","selection":{"options":[{"value":"ui"},{"value":"legal"}]}}),
        ] {
            let req: ColumnRequest = serde_json::from_value(body).expect("valid column");
            let column = build_column(&state.schema, &req).expect("valid column");
            state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
        }
        state.apply(&GridOp::CreateDependency(Dependency {
            id: "dep1".into(),
            source_column_id: "enUS".into(),
            target_column_id: "jaJP".into(),
        }));
        let cell = |c: &str, v: CellValue| CellWrite {
            column_id: c.into(),
            value: Some(v),
            dependency_status: None,
            source_status: None,
        };
        let records = vec![
            RecordWrite {
                id: "menu.start".into(),
                path: "ui/menu".into(),
                new_id: None,
                new_path: None,
                cells: vec![
                    cell("enUS", CellValue::Text("Start game".into())),
                    cell("jaJP", CellValue::Text("ゲームを開始".into())),
                    cell("n", CellValue::Number(3.0)),
                    cell("tags", CellValue::List(vec!["ui".into()])),
                ],
                mark_mt: true,
            },
            RecordWrite {
                id: "legal.tos".into(),
                path: String::new(),
                new_id: None,
                new_path: None,
                cells: vec![CellWrite {
                    column_id: "enUS".into(),
                    value: Some(CellValue::Text("Terms 🌍 مرحبا".into())),
                    dependency_status: None,
                    source_status: Some(SourceStatus::Locked),
                }],
                mark_mt: false,
            },
        ];
        state.apply(&GridOp::AddRecords {
            time_ms: 1_769_854_530_000,
            user: "fixture".into(),
            records,
        });
        // The fixtures were written when an add wrote its records' history entries at once.
        state.settle_creations();
        state.apply(&GridOp::MergeMark { source_branch_id: "branch1".into(), source_clock: 7 });
        state.apply(&GridOp::AddRecords {
            time_ms: 1_769_854_540_000,
            user: "fixture".into(),
            records: vec![RecordWrite {
                id: "tmp".into(),
                path: "scratch".into(),
                new_id: None,
                new_path: None,
                cells: vec![cell("n", CellValue::Number(1.0))],
                mark_mt: false,
            }],
        });
        state.apply(&GridOp::DeleteRecords { keys: vec![("scratch".into(), "tmp".into())] });
        state
    }

    fn fixture_path(version: u32) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("snapshots")
            .join(format!("v{version}.img"))
    }

    fn to_image_bytes(s: &GridState) -> Vec<u8> {
        rkyv::to_bytes::<rkyv::rancor::Error>(&s.to_image().expect("reads history"))
            .expect("encodes")
            .to_vec()
    }

    #[test]
    fn every_fixture_format_still_loads() {
        let path = fixture_path(IMAGE_FORMAT_VERSION);
        if std::env::var_os("GRIDD_WRITE_SNAPSHOT_FIXTURE").is_some() {
            let bytes = fixture_state().encode_image(PartLimits::DEFAULT).expect("encodes");
            std::fs::write(&path, bytes).expect("fixture written");
        }
        let raw = std::fs::read(&path).expect("the fixture of the current format exists");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&raw);
        let state = decode_any(IMAGE_FORMAT_VERSION, &Payload::Memory(aligned), &[])
            .expect("the fixture decodes");
        let expected = fixture_state();
        assert_eq!(state.schema, expected.schema);
        assert_eq!(
            to_image_bytes(&state),
            to_image_bytes(&expected),
            "the fixture holds what the fixture state holds"
        );
        let stored = state.encode_image(PartLimits::DEFAULT).expect("encodes");
        assert_eq!(stored, raw, "this build writes the fixture's format byte for byte");
        let row = state.store.find("", "legal.tos").expect("record present");
        let slot = state.slots["enUS"];
        assert_eq!(state.store.source_status(row, slot), SourceStatus::Locked);
        assert_eq!(state.store.clock(), expected.store.clock());
        assert_eq!(state.store.created_at(row), expected.store.created_at(row));
        assert_eq!(state.merge_bases, expected.merge_bases);
        let gone: Vec<_> = state.store.gone_since(0).collect();
        assert_eq!(gone, expected.store.gone_since(0).collect::<Vec<_>>());
        assert_eq!((gone.len(), gone[0].id.as_str()), (1, "tmp"));
    }

    /// Format 5 (a column part holds its cells, statuses and versions together) loads with
    /// everything the fixture state holds.
    #[test]
    fn the_format_5_fixture_loads() {
        let raw = std::fs::read(fixture_path(5)).expect("the format 5 fixture exists");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&raw);
        let state =
            decode_any(5, &Payload::Memory(aligned), &[]).expect("the format 5 fixture decodes");
        assert_eq!(state.schema, fixture_state().schema);
        assert_eq!(to_image_bytes(&state), to_image_bytes(&fixture_state()));
    }

    /// Format 4 (one archive for the whole branch) loads with everything the fixture state
    /// holds.
    #[test]
    fn the_format_4_fixture_loads() {
        let raw = std::fs::read(fixture_path(4)).expect("the format 4 fixture exists");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&raw);
        let state = decode_image_v4(&aligned).expect("the fixture decodes");
        let expected = fixture_state();
        assert_eq!(to_image_bytes(&state), to_image_bytes(&expected));
        assert_eq!(to_image_bytes(&state), raw, "format 4 is `to_image` archived");
        assert_eq!(state.history.all().count(), expected.history.all().count());
    }

    /// Format 2 (history kept per record key) loads with the same records, stamps and history as
    /// the fixture state: its entries become chains, the deleted record's a retired one.
    #[test]
    fn the_format_2_fixture_loads_with_its_history() {
        let raw = std::fs::read(fixture_path(2)).expect("the format 2 fixture exists");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&raw);
        let state = decode_image_v2(&aligned).expect("the fixture decodes");
        let expected = fixture_state();
        assert_eq!(state.schema, expected.schema);
        assert_eq!(state.store.clock(), expected.store.clock());
        assert_eq!(state.merge_bases, expected.merge_bases);
        let history_of = |s: &GridState, id: &str| {
            let row = s.store.find("", id).expect("record present");
            s.history.page_where(s.store.history_head(row), (0, 10), false, |_| true)
        };
        for id in ["menu.start", "legal.tos"] {
            assert_eq!(history_of(&state, id), history_of(&expected, id), "history of {id}");
        }
        assert_eq!(state.history.len(), 3, "two records added, one added and deleted");
        assert_eq!(state.history.retired().count(), 1);
    }

    /// Format 3 (history chunks plain) loads with the same records, stamps and history, and
    /// writes back as the current format does.
    #[test]
    fn the_format_3_fixture_loads_with_its_history() {
        let raw = std::fs::read(fixture_path(3)).expect("the format 3 fixture exists");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&raw);
        let state = decode_image_v3(&aligned).expect("the fixture decodes");
        let expected = fixture_state();
        assert_eq!(
            to_image_bytes(&state),
            to_image_bytes(&expected),
            "format 3 holds what format 4 does"
        );
        assert_eq!(state.history.all().count(), expected.history.all().count());
    }

    /// Format 1 (before merge stamps) loads with its records, statuses and cell versions, and
    /// a clock at the highest version, so later changes are stamped above every cell.
    #[test]
    fn the_format_1_fixture_loads() {
        let raw = std::fs::read(fixture_path(1)).expect("the format 1 fixture exists");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&raw);
        let state = decode_image_v1(&aligned).expect("the fixture decodes");
        let expected = fixture_state();
        assert_eq!(state.schema, expected.schema);
        assert_eq!(state.store.len(), 2);
        let row = state.store.find("", "legal.tos").expect("record present");
        let slot = state.slots["enUS"];
        assert_eq!(state.store.source_status(row, slot), SourceStatus::Locked);
        let start = state.store.find("", "menu.start").expect("record present");
        assert_eq!(state.store.value(start, state.slots["n"]), CellValue::Number(3.0));
        let highest = state
            .slots
            .values()
            .flat_map(|&slot| [row, start].map(|r| state.store.version(r, slot)))
            .max()
            .unwrap_or(0);
        assert!(highest > 0);
        assert_eq!(state.store.clock(), highest);
        assert_eq!(state.history.all().count(), 2, "one history entry per record added");
        let start_row = state.store.find("", "menu.start").expect("record present");
        let (entries, total) =
            state.history.page_where(state.store.history_head(start_row), (0, 10), false, |_| true);
        assert_eq!((total, entries[0].cells.len()), (1, 4), "the record's chain holds its entry");
    }

    #[test]
    fn a_damaged_image_is_an_error_not_a_panic() {
        let state = fixture_state();
        let images = [
            (4, to_image_bytes(&state)),
            (5, state.encode_image(PartLimits::DEFAULT).expect("ok")),
        ];
        for (format, bytes) in images {
            for i in (0..bytes.len()).step_by(7) {
                let mut damaged = rkyv::util::AlignedVec::<16>::new();
                damaged.extend_from_slice(&bytes);
                damaged[i] ^= 0x5a;
                let _ = decode_any(format, &Payload::Memory(damaged), &[]);
            }
            let mut short = rkyv::util::AlignedVec::<16>::new();
            short.extend_from_slice(&bytes[..bytes.len() / 2]);
            assert!(decode_any(format, &Payload::Memory(short), &[]).is_err());
        }
    }
}

#[cfg(test)]
mod base_tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use std::sync::atomic::Ordering;

    use super::{decode_any, Durability, SnapshotPolicy, MAX_DELTAS};
    use crate::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
    use crate::grid::store::RecordIdentity;
    use crate::grid::value::CellValue;
    use crate::persist::snapshot::{FileSnapshotStore, SledSnapshotStore, SnapshotStore};
    use crate::persist::wal::{Wal, WalOptions};

    fn durability(dir: &Path, snapshots: Arc<dyn SnapshotStore>) -> Durability {
        let (wal, _) = Wal::open(dir.join("wal"), WalOptions::default()).expect("wal");
        let policy =
            SnapshotPolicy { every_records: 1, every_bytes: 1, every: Duration::from_secs(3600) };
        let durability = Durability::new(wal, snapshots, policy);
        durability.track("branch");
        durability
    }

    /// A floor lags once the WAL keeps more than `floor_lag_bytes` for it, however few records
    /// that is (a bulk load's thousand records are one WAL record).
    #[test]
    fn a_floor_lags_by_the_bytes_the_wal_keeps_for_it_as_well_as_by_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = WalOptions { segment_size: 1000, ..WalOptions::default() };
        let (wal, _) = Wal::open(dir.path().join("wal"), options).expect("wal");
        let policy = SnapshotPolicy {
            every_records: 1_000_000,
            every_bytes: 2000,
            every: Duration::from_secs(3600),
        };
        let store = FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("store");
        let durability = Durability::new(wal, Arc::new(store), policy);
        durability.track("branch");
        let append = |len: usize| {
            let appended = durability.wal.append(vec![7; len]).expect("append");
            appended.durable.wait().expect("durable");
        };
        append(500);
        append(500);
        assert!(!durability.floor_lags("branch"), "two records, 1 KB kept");
        for _ in 0..8 {
            append(500);
        }
        assert!(durability.wal.last_lsn() < policy.floor_lag());
        assert!(durability.floor_lags("branch"), "ten records, 4.5 KB held for a 4 KB limit");

        // The newest segment is never held by a floor, however large it is.
        let dir = tempfile::tempdir().expect("tempdir");
        let (wal, _) = Wal::open(dir.path().join("wal"), options).expect("wal");
        let store = FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("store");
        let durability = Durability::new(wal, Arc::new(store), policy);
        durability.track("branch");
        let appended = durability.wal.append(vec![7; 9000]).expect("append");
        appended.durable.wait().expect("durable");
        assert!(!durability.floor_lags("branch"), "one 9 KB segment, the newest");
    }

    /// The bases each of four snapshots of a branch names, its state growing between them.
    fn bases_of_four(durability: &Durability) -> Vec<Option<u64>> {
        let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        for lsn in 1..=4 {
            state
                .apply(&GridOp::MergeMark { source_branch_id: format!("b{lsn}"), source_clock: 1 });
            durability.write_snapshot("branch", lsn, &state).expect("stored");
        }
        let generations = durability.snapshots.generations("branch").expect("listed");
        generations.iter().map(|g| g.header.expect("intact").base).collect()
    }

    /// After two whole images the file store's snapshots borrow from the newest one (here whole
    /// again at the fourth, the branch being all head); a store that keeps no bases (sled, of
    /// older data directories) gets whole images only.
    #[test]
    fn snapshots_borrow_only_where_the_store_keeps_bases() {
        let dir = tempfile::tempdir().expect("temp dir");
        let files = FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("store");
        let with_files = durability(dir.path(), Arc::new(files));
        // 1 and 2 whole, 3 on 2; 4 whole again, as 3 rewrote about all of 2 (the branch is
        // all head: a load of a 4 on 3 would read twice what it uses); 1 retired, 3 kept with
        // its chain.
        assert_eq!(bases_of_four(&with_files), [None, Some(2), None]);

        let dir = tempfile::tempdir().expect("temp dir");
        let db = sled::Config::new().temporary(true).open().expect("sled");
        let sled = SledSnapshotStore::open(&db).expect("store");
        let with_sled = durability(dir.path(), Arc::new(sled));
        assert_eq!(bases_of_four(&with_sled), [None, None], "two whole generations kept");
    }

    /// A branch of `n` records with one text column.
    fn branch_of(n: usize) -> GridState {
        use crate::grid::columns::{build_column, ColumnRequest};
        let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        let body = serde_json::json!({"id": "text", "name": "Text", "type": "singleLine"});
        let req: ColumnRequest = serde_json::from_value(body).expect("valid column");
        let column = build_column(&state.schema, &req).expect("valid column");
        state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
        let records = (0..n).map(|i| record(i, &format!("text of record {i}"))).collect();
        state.apply(&GridOp::AddRecords { time_ms: 1, user: "u".into(), records });
        state
    }

    fn record(i: usize, text: &str) -> RecordWrite {
        RecordWrite {
            id: format!("r{i}"),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells: vec![CellWrite {
                column_id: "text".into(),
                value: Some(CellValue::Text(text.into())),
                dependency_status: None,
                source_status: None,
            }],
            mark_mt: false,
        }
    }

    /// Each snapshot on a chain writes what changed since the one before (not since the whole
    /// one) and loads as the branch it was taken of; after `MAX_DELTAS` of them the next one is
    /// whole; the WAL floor is the position of the newest image under the newest whole one.
    #[test]
    fn snapshots_form_chains_of_at_most_max_deltas() {
        let dir = tempfile::tempdir().expect("temp dir");
        let files = FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("store");
        let durability = durability(dir.path(), Arc::new(files));
        // Three of the store's 8,192-row chunks.
        let mut state = branch_of(20_000);
        let written = || durability.snapshot_bytes_written.load(Ordering::Relaxed);
        durability.write_snapshot("branch", 1, &state).expect("stored");
        let whole = written();
        durability.write_snapshot("branch", 2, &state).expect("stored");
        let mut lsn = 2;
        for k in 0..MAX_DELTAS {
            lsn += 1;
            // One record edited in a chunk the snapshot before did not write.
            let row = (k % 3) * 8_192 + k;
            let edit = GridOp::UpdateRecords {
                time_ms: 2,
                user: "u".into(),
                records: vec![record(row, &format!("edited before snapshot {lsn}"))],
            };
            state.apply(&edit);
            let before = written();
            durability.write_snapshot("branch", lsn, &state).expect("stored");
            assert!(written() - before < whole / 2, "snapshot {lsn} wrote {}", written() - before);
            // Read back as a start would (`load` would also make it the base).
            let loaded = durability.snapshots.load_latest("branch").expect("loads").expect("one");
            assert_eq!(loaded.wal_lsn, lsn);
            let back = decode_any(loaded.format_version, &loaded.bytes, &loaded.chain);
            let back = back.expect("decodes");
            let found = back.store.find("", &format!("r{row}")).expect("present");
            let text = back.store.value(found, back.slots["text"]);
            assert_eq!(text, CellValue::Text(format!("edited before snapshot {lsn}")));
            assert_eq!(back.store.len(), 20_000);
        }
        let bases = |d: &Durability| -> Vec<Option<u64>> {
            let generations = d.snapshots.generations("branch").expect("listed");
            generations.iter().map(|g| g.header.expect("intact").base).collect()
        };
        let chain: Vec<Option<u64>> = [None, None].into_iter().chain((2..lsn).map(Some)).collect();
        assert_eq!(bases(&durability), chain, "generation n is on n - 1");
        assert_eq!(durability.floor("branch"), 1, "the floor is the image under the whole one");
        lsn += 1;
        durability.write_snapshot("branch", lsn, &state).expect("stored");
        let mut kept = chain[1..].to_vec();
        kept.push(None);
        assert_eq!(bases(&durability), kept, "a whole image after MAX_DELTAS on one");
        assert_eq!(durability.floor("branch"), lsn - 1);
    }

    /// A branch loaded at a start is indexed as its snapshot: its next snapshot, after an edit,
    /// writes the edited chunk only, names the loaded generation as its base, and loads as the
    /// branch.
    #[test]
    fn the_first_snapshot_after_a_start_borrows_from_the_loaded_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn SnapshotStore> =
            Arc::new(FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("store"));
        let mut state = branch_of(20_000);
        state.store.compact();
        let whole = {
            let before = durability(&dir.path().join("one"), store.clone());
            before.write_snapshot("branch", 1, &state).expect("stored");
            before.write_snapshot("branch", 2, &state).expect("stored");
            before.snapshot_bytes_written.load(Ordering::Relaxed) / 2
        };
        // A second process on the same store: its start loads generation 2.
        let after = durability(&dir.path().join("two"), store.clone());
        let mut loaded = after.load("branch").expect("loads").state;
        let edit = GridOp::UpdateRecords {
            time_ms: 2,
            user: "u".into(),
            records: vec![record(19_000, "edited after the start")],
        };
        loaded.apply(&edit);
        after.write_snapshot("branch", 3, &loaded).expect("stored");
        let written = after.snapshot_bytes_written.load(Ordering::Relaxed);
        assert!(written < whole / 3, "wrote {written} of {whole}");
        let generations = store.generations("branch").expect("listed");
        let newest = generations.last().and_then(|g| g.header).expect("intact");
        assert_eq!(newest.base, Some(2));
        let back = store.load_latest("branch").expect("loads").expect("one");
        let back = decode_any(back.format_version, &back.bytes, &back.chain).expect("decodes");
        let row = back.store.find("", "r19000").expect("present");
        let text = back.store.value(row, back.slots["text"]);
        assert_eq!(text, CellValue::Text("edited after the start".into()));
        assert_eq!(back.store.len(), 20_000);
    }

    /// Snapshots of one branch started together (a shutdown's and the one a burst of writes
    /// started) are written one after the other, and one older than the stored one is skipped.
    #[test]
    fn snapshots_of_a_branch_are_written_one_at_a_time_never_older_over_newer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let files = FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("store");
        let durability = durability(dir.path(), Arc::new(files));
        let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        for n in 0..2000 {
            state.apply(&GridOp::MergeMark { source_branch_id: format!("b{n}"), source_clock: 1 });
        }
        std::thread::scope(|scope| {
            for lsn in [7, 9, 8, 9] {
                let (durability, state) = (&durability, &state);
                scope.spawn(move || durability.write_snapshot("branch", lsn, state).expect("ok"));
            }
        });
        let generations = durability.snapshots.generations("branch").expect("listed");
        let newest = generations.last().and_then(|g| g.header.as_ref()).expect("intact");
        assert_eq!(newest.wal_lsn, 9);
        let lsns: Vec<u64> =
            generations.iter().filter_map(|g| g.header.as_ref().map(|h| h.wal_lsn)).collect();
        assert!(lsns.windows(2).all(|w| w[0] < w[1]), "generations go forward: {lsns:?}");
        durability.write_snapshot("branch", 3, &state).expect("skipped");
        let after = durability.snapshots.generations("branch").expect("listed");
        assert_eq!(after.len(), generations.len(), "an older snapshot is not stored");
    }

    /// A deleted branch's snapshot still on its way is not stored, nor one asked for after.
    #[test]
    fn a_forgotten_branch_gets_no_more_snapshots() {
        let dir = tempfile::tempdir().expect("temp dir");
        let files = FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("store");
        let durability = durability(dir.path(), Arc::new(files));
        let state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        durability.write_snapshot("branch", 1, &state).expect("stored");
        assert_eq!(durability.snapshots.generations("branch").expect("listed").len(), 1);
        durability.forget("branch");
        durability.write_snapshot("branch", 2, &state).expect("skipped");
        assert!(durability.snapshots.generations("branch").expect("listed").is_empty());
        assert!(!dir.path().join("snapshots").join("branch").exists(), "no directory is left");
    }
}
