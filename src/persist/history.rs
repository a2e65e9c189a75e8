//! Point-in-time history (`--retain-history`): what a restore of a branch as it was at a time
//! or position is rebuilt from.
//!
//! A branch's history is a few *bases* (whole images of the branch, each under a key of its own
//! in a snapshot store rooted at `<data dir>/history`: `<branch>~<clock>~<WAL LSN>~<taken ms>`,
//! so a listing says what each holds without reading it) and the WAL after the oldest one:
//! segments every snapshot covers are moved to `<data dir>/wal-archive` instead of deleted
//! (`WalHandle::archive_segments_below`) while a base needs them. A restore loads the newest
//! base at or before its target and applies the branch's WAL entries after the base up to the
//! target (`rebuild`): the ops and clocks are those the branch applied, so the result is the
//! branch as it was, stamps and all.
//!
//! A base is written with a snapshot of the branch when its newest base is older than the
//! retention period (or it has none), and each new base retires all but the one before it. So
//! at any time the older kept base is at least one period old (bases come a period apart), and
//! every time within the period has a base at or before it; the archive holds about two
//! periods of WAL.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use super::durability::DurabilityError;
use super::entry::{branch_id_of, WalEntry};
use super::image_formats::decode_any;
use super::memory::available_memory;
use super::snapshot::{FileSnapshotStore, SnapshotError, SnapshotStore};
use super::wal::{prune_archive, read_retained, RetainedError, WalHandle};
use crate::error::{Coded, ErrorCode};
use crate::grid::image::{PartLimits, IMAGE_FORMAT_VERSION};
use crate::grid::ops::GridState;

/// Memory a rebuild leaves for everything else.
const REBUILD_HEADROOM: u64 = 256 << 20;

/// One kept base of a branch: its state at WAL LSN `wal_lsn` (branch clock `clock`), written at
/// `taken_ms` (Unix milliseconds; every entry it holds was committed before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseInfo {
    pub branch_id: String,
    pub clock: u32,
    pub wal_lsn: u64,
    pub taken_ms: i64,
}

impl BaseInfo {
    fn key(&self) -> String {
        format!("{}~{}~{}~{}", self.branch_id, self.clock, self.wal_lsn, self.taken_ms)
    }

    fn parse(key: &str) -> Option<BaseInfo> {
        let mut parts = key.rsplitn(4, '~');
        let taken_ms = parts.next()?.parse().ok()?;
        let wal_lsn = parts.next()?.parse().ok()?;
        let clock = parts.next()?.parse().ok()?;
        let branch_id = parts.next()?.to_owned();
        Some(BaseInfo { branch_id, clock, wal_lsn, taken_ms })
    }
}

/// What a restore rebuilds the branch as of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Every entry committed at or before this time (Unix milliseconds).
    At(i64),
    /// Every entry whose ops began at or before this branch clock value (a change-feed
    /// position): an entry is applied whole or not at all.
    Position(u32),
}

impl Target {
    /// Whether a base holds nothing past the target.
    fn fits(&self, base: &BaseInfo) -> bool {
        match *self {
            Target::At(ms) => base.taken_ms <= ms,
            Target::Position(position) => base.clock <= position,
        }
    }
}

/// Why a restore cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("History is not kept: the server runs with --retain-history 0.")]
    NotRetained,
    #[error("{asked} is outside the retained history of this branch ({kept}).")]
    Outside { asked: String, kept: String },
    #[error("The base image of the restore: {0}")]
    Base(#[from] DurabilityError),
    #[error("{0}")]
    Log(#[from] RetainedError),
    #[error("The log's record {lsn} does not decode: {reason}")]
    Undecodable { lsn: u64, reason: String },
    #[error("Not enough memory to rebuild the branch now: about {} MiB needed, {} MiB available; try again later.", .needed >> 20, .available >> 20)]
    NoMemory { needed: u64, available: u64 },
}

impl Coded for RestoreError {
    fn code(&self) -> ErrorCode {
        match self {
            RestoreError::NotRetained | RestoreError::Outside { .. } => ErrorCode::BadRequest,
            RestoreError::Base(_) | RestoreError::Log(_) | RestoreError::Undecodable { .. } => {
                ErrorCode::InternalServerError
            }
            RestoreError::NoMemory { .. } => ErrorCode::ServiceUnavailable,
        }
    }
}

/// The kept bases and archived WAL of every branch.
pub struct History {
    store: FileSnapshotStore,
    archive: PathBuf,
    period: Duration,
    /// Held shared by restores while they read the archive, exclusively by pruning (which
    /// skips its turn rather than wait).
    reading: RwLock<()>,
    /// Held by the one rebuild that runs at a time: each holds a whole branch in memory.
    rebuilding: Mutex<()>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("archive", &self.archive)
            .field("period", &self.period)
            .finish()
    }
}

impl History {
    /// Opens (creating) the bases under `<data_dir>/history` and the archive
    /// `<data_dir>/wal-archive`, keeping `period` of history.
    pub fn open(data_dir: &Path, period: Duration) -> Result<History, SnapshotError> {
        let store = FileSnapshotStore::open(&data_dir.join("history"), None)?;
        let archive = data_dir.join("wal-archive");
        Ok(History { store, archive, period, reading: RwLock::new(()), rebuilding: Mutex::new(()) })
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    pub fn archive(&self) -> &Path {
        &self.archive
    }

    /// Every kept base, oldest first per branch.
    fn all_bases(&self) -> Vec<BaseInfo> {
        let keys = self.store.keys().unwrap_or_else(|err| {
            tracing::warn!(error = %err, "listing history bases failed");
            Vec::new()
        });
        let mut bases: Vec<BaseInfo> = keys.iter().filter_map(|k| BaseInfo::parse(k)).collect();
        bases.sort_by(|a, b| (&a.branch_id, a.wal_lsn).cmp(&(&b.branch_id, b.wal_lsn)));
        bases
    }

    /// The kept bases of a branch, oldest first.
    pub fn bases(&self, branch_id: &str) -> Vec<BaseInfo> {
        let mut bases = self.all_bases();
        bases.retain(|b| b.branch_id == branch_id);
        bases
    }

    /// Whether a snapshot of the branch taken now should also be a base: it has none, or its
    /// newest is a period old.
    pub fn due(&self, branch_id: &str, now_ms: i64) -> bool {
        let period = i64::try_from(self.period.as_millis()).unwrap_or(i64::MAX);
        self.bases(branch_id).last().is_none_or(|b| b.taken_ms <= now_ms.saturating_sub(period))
    }

    /// Stores `state` (covering the WAL up to `wal_lsn`) as the branch's newest base, then
    /// deletes its bases older than the one before it. Blocking.
    pub fn put(
        &self,
        branch_id: &str,
        wal_lsn: u64,
        state: &GridState,
        now_ms: i64,
    ) -> Result<(), DurabilityError> {
        let clock = state.store.clock();
        let base = BaseInfo { branch_id: branch_id.to_owned(), clock, wal_lsn, taken_ms: now_ms };
        self.store
            .put_streamed(&base.key(), IMAGE_FORMAT_VERSION, wal_lsn, None, &mut |out| {
                state.write_image(PartLimits::DEFAULT, None, out).map(drop)
            })
            .map_err(|source| DurabilityError::Store { doing: "storing a history base", source })?;
        let kept = self.bases(branch_id);
        let retired = kept.len().saturating_sub(2);
        for retired in &kept[..retired] {
            self.delete(retired);
        }
        tracing::debug!(branch = branch_id, clock, wal_lsn, "history base stored");
        Ok(())
    }

    fn delete(&self, base: &BaseInfo) {
        if let Err(err) = self.store.delete(&base.key()) {
            tracing::warn!(branch = %base.branch_id, error = %err, "deleting a history base failed");
        }
    }

    /// Deletes every base of a deleted branch.
    pub fn forget(&self, branch_id: &str) {
        for base in self.bases(branch_id) {
            self.delete(&base);
        }
    }

    /// Deletes the bases of branches not in `live` (deleted while the server was down, or a
    /// creation that never became durable), which would hold the archive for ever.
    pub fn retain_branches(&self, live: &dyn Fn(&str) -> bool) {
        for base in self.all_bases() {
            if !live(&base.branch_id) {
                self.delete(&base);
            }
        }
    }

    /// Deletes the archived WAL no kept base needs: the segments whose records are all at or
    /// below every base's LSN. Skipped while a restore reads the archive.
    pub fn prune(&self, first_live: u64) {
        let Ok(_alone) = self.reading.try_write() else { return };
        let oldest = self.all_bases().iter().map(|b| b.wal_lsn).min().unwrap_or(first_live);
        match prune_archive(&self.archive, oldest, first_live) {
            Ok(0) => {}
            Ok(n) => tracing::info!(segments = n, "deleted archived WAL no history base needs"),
            Err(err) => tracing::warn!(error = %err, "pruning the WAL archive failed"),
        }
    }

    /// Refuses a rebuild the memory left cannot hold: the branch takes about twice its image,
    /// and snapshots keep their own headroom.
    fn check_memory(&self, base: &BaseInfo) -> Result<(), RestoreError> {
        let generations = self.store.generations(&base.key()).unwrap_or_default();
        let image: u64 = generations.iter().filter_map(|g| g.header).map(|h| h.payload_len).sum();
        let needed = image.saturating_mul(2).saturating_add(REBUILD_HEADROOM);
        match available_memory() {
            Some(available) if available < needed => {
                Err(RestoreError::NoMemory { needed, available })
            }
            _ => Ok(()),
        }
    }

    /// The newest base of the branch at or before `target`, or why there is none.
    pub fn base_for(&self, branch_id: &str, target: Target) -> Result<BaseInfo, RestoreError> {
        let bases = self.bases(branch_id);
        if let Some(base) = bases.iter().rev().find(|b| target.fits(b)) {
            return Ok(base.clone());
        }
        let kept = match bases.first() {
            Some(oldest) => format!(
                "it starts at {} (position {}) and the server keeps {} of history",
                format_ms(oldest.taken_ms),
                oldest.clock,
                describe_period(self.period)
            ),
            None => "none is kept yet".to_owned(),
        };
        let asked = match target {
            Target::At(ms) => format_ms(ms),
            Target::Position(position) => format!("Position {position}"),
        };
        Err(RestoreError::Outside { asked, kept })
    }

    /// The branch as it was at `target`: `base` (from `base_for`) with the branch's WAL entries
    /// after it applied, up to the target and never past WAL LSN `up_to` (durable). Blocking.
    pub fn rebuild(
        &self,
        wal: &WalHandle,
        base: &BaseInfo,
        target: Target,
        up_to: u64,
    ) -> Result<GridState, RestoreError> {
        let _alone = self.rebuilding.lock().unwrap_or_else(|e| e.into_inner());
        self.check_memory(base)?;
        let loaded = self
            .store
            .load_latest(&base.key())
            .map_err(|source| DurabilityError::Store { doing: "reading a history base", source })?
            .ok_or(DurabilityError::MissingBackup)?;
        let mut state = decode_any(loaded.format_version, &loaded.bytes, &loaded.chain)
            .map_err(DurabilityError::Image)?;
        drop(loaded);
        let _reading = self.reading.read().unwrap_or_else(|e| e.into_inner());
        let mut undecodable = None;
        let dirs = (self.archive.as_path(), wal.dir());
        read_retained(dirs, (base.wal_lsn, up_to), wal.max_record_len(), |lsn, bytes| {
            if branch_id_of(bytes) != Some(base.branch_id.as_str()) {
                return ControlFlow::Continue(());
            }
            let entry = match WalEntry::decode(bytes) {
                Ok(entry) => entry,
                Err(err) => {
                    undecodable = Some(RestoreError::Undecodable { lsn, reason: err.to_string() });
                    return ControlFlow::Break(());
                }
            };
            let past = match target {
                Target::At(ms) => entry.time_ms > ms,
                Target::Position(position) => state.store.clock() >= position,
            };
            if past {
                return ControlFlow::Break(());
            }
            for op in &entry.ops {
                state.apply(op);
            }
            ControlFlow::Continue(())
        })?;
        match undecodable {
            Some(err) => Err(err),
            None => Ok(state),
        }
    }
}

/// A time as the API writes it.
pub fn format_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

/// A period as `--retain-history` takes it.
pub fn describe_period(period: Duration) -> String {
    let seconds = period.as_secs();
    match seconds {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::grid::columns::{build_column, ColumnRequest};
    use crate::grid::ops::{CellWrite, GridOp, RecordWrite};
    use crate::grid::store::RecordIdentity;
    use crate::grid::value::CellValue;
    use crate::persist::durability::{Durability, SnapshotPolicy};
    use crate::persist::wal::{Wal, WalOptions};

    const HOUR: Duration = Duration::from_secs(3600);
    /// A period no base written now is due after: the tests' bases are at times they choose.
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);

    fn durability(dir: &Path, period: Duration) -> Durability {
        let options = WalOptions { segment_size: 1000, ..WalOptions::default() };
        let (wal, _) = Wal::open(dir.join("wal"), options).expect("wal");
        let policy = SnapshotPolicy { every_records: 1, every_bytes: 1, every: HOUR };
        let store = FileSnapshotStore::open(&dir.join("snapshots"), None).expect("store");
        let history = History::open(dir, period).expect("history");
        let durability = Durability::new(wal, Arc::new(store), policy).with_history(history);
        durability.track("b");
        durability
    }

    fn first_state() -> GridState {
        let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        let body = serde_json::json!({"id": "text", "name": "Text", "type": "singleLine"});
        let req: ColumnRequest = serde_json::from_value(body).expect("valid column");
        let column = build_column(&state.schema, &req).expect("valid column");
        state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
        state
    }

    /// The i-th write: adds record `r<i/2>` on even i, rewrites it on odd i.
    fn op(i: usize) -> GridOp {
        let record = RecordWrite {
            id: format!("r{}", i / 2),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells: vec![CellWrite {
                column_id: "text".into(),
                value: Some(CellValue::Text(format!("write {i} with some text to fill"))),
                dependency_status: None,
                source_status: None,
            }],
            mark_mt: false,
        };
        let (time_ms, user) = (i as i64, "u".to_owned());
        match i % 2 {
            0 => GridOp::AddRecords { time_ms, user, records: vec![record] },
            _ => GridOp::UpdateRecords { time_ms, user, records: vec![record] },
        }
    }

    fn append(durability: &Durability, entry: &WalEntry) -> u64 {
        let appended = durability.wal.append(entry.encode()).expect("append");
        appended.durable.wait().expect("durable");
        appended.lsn
    }

    /// What a branch holds, to compare two.
    fn image(state: &GridState) -> crate::grid::image::BranchImage {
        state.to_image().expect("image")
    }

    /// A branch's writes (with another branch's between them) through snapshots that move the
    /// log into the archive: a rebuild at any time or position is the branch as it was then.
    #[test]
    fn a_rebuild_is_the_branch_as_it_was_at_every_time_and_position() {
        let dir = tempfile::tempdir().expect("tempdir");
        let durability = durability(dir.path(), HOUR);
        let history = durability.history().expect("kept");
        let mut state = first_state();
        history.put("b", 0, &state, 0).expect("first base");
        let mut seen = vec![(0i64, state.store.clock(), state.clone())];
        for i in 0..60 {
            let time_ms = 1000 + 10 * i as i64;
            let other = WalEntry { branch_id: "other".into(), ops: vec![op(i)], time_ms };
            append(&durability, &other);
            let entry = WalEntry { branch_id: "b".into(), ops: vec![op(i)], time_ms };
            let lsn = append(&durability, &entry);
            state.apply(&entry.ops[0]);
            seen.push((time_ms, state.store.clock(), state.clone()));
            if i % 10 == 9 {
                durability.write_snapshot("b", lsn, &state).expect("snapshot");
            }
        }
        let archived = std::fs::read_dir(history.archive()).expect("archive").count();
        assert!(archived > 3, "segments went to the archive: {archived}");
        let up_to = durability.wal.last_lsn();
        for (time_ms, clock, expected) in seen.iter().step_by(7).chain(seen.last()) {
            for target in [Target::At(*time_ms), Target::At(time_ms + 5), Target::Position(*clock)]
            {
                let base = history.base_for("b", target).expect("covered");
                let rebuilt =
                    history.rebuild(&durability.wal, &base, target, up_to).expect("rebuilt");
                assert_eq!(image(&rebuilt), image(expected), "{target:?}");
                assert_eq!(rebuilt.store.clock(), *clock);
            }
        }
        assert!(matches!(history.base_for("b", Target::At(-1)), Err(RestoreError::Outside { .. })));
        assert!(matches!(history.base_for("x", Target::At(5)), Err(RestoreError::Outside { .. })));
    }

    /// A base is due a period after the newest; each keeps the one before it and retires the
    /// rest, and the archive keeps what the oldest kept base needs, no more.
    #[test]
    fn bases_come_a_period_apart_and_the_archive_follows_the_oldest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let durability = durability(dir.path(), CENTURY);
        let history = durability.history().expect("kept");
        let mut state = first_state();
        let hour = CENTURY.as_millis() as i64;
        assert!(history.due("b", 0), "no base yet");
        let mut lsn = 0;
        for k in 0..4i64 {
            history.put("b", lsn, &state, k * hour).expect("base");
            assert!(!history.due("b", (k + 1) * hour - 1));
            assert!(history.due("b", (k + 1) * hour));
            for i in 0..20 {
                let entry = WalEntry::now("b".into(), vec![op(40 * k as usize + i)]);
                lsn = append(&durability, &entry);
                state.apply(&entry.ops[0]);
            }
            durability.write_snapshot("b", lsn, &state).expect("snapshot");
        }
        let kept: Vec<i64> = history.bases("b").iter().map(|b| b.taken_ms).collect();
        assert_eq!(kept, [2 * hour, 3 * hour], "the newest and the one before it");
        let oldest = history.bases("b")[0].wal_lsn;
        let mut archived: Vec<u64> = std::fs::read_dir(history.archive())
            .expect("archive")
            .filter_map(|e| {
                let name = e.expect("entry").file_name().into_string().expect("utf-8");
                name.strip_prefix("wal-")?.strip_suffix(".log")?.parse().ok()
            })
            .collect();
        archived.sort_unstable();
        let live = durability.wal.oldest_segment().expect("listed").expect("a live segment");
        let kept: Vec<u64> = archived.iter().copied().chain([live]).collect();
        assert!(kept[0] > 1, "the log before the oldest base went: {kept:?}");
        assert!(kept[0] <= oldest + 1, "the oldest base's next record is kept: {kept:?}");
        assert!(kept.get(1).is_none_or(|next| *next > oldest + 1), "no more: {kept:?}");
        let base = history.base_for("b", Target::At(2 * hour)).expect("covered");
        let rebuilt = history.rebuild(&durability.wal, &base, Target::At(i64::MAX), lsn);
        assert_eq!(image(&rebuilt.expect("rebuilt")), image(&state));
        assert!(matches!(
            history.base_for("b", Target::At(hour)),
            Err(RestoreError::Outside { .. })
        ));

        history.retain_branches(&|id| id != "b");
        assert!(history.bases("b").is_empty(), "bases of a branch gone");
    }

    /// A hole in the kept log or damage in it fails the rebuild, never a silent gap.
    #[test]
    fn a_missing_or_damaged_archived_segment_fails_the_rebuild() {
        let dir = tempfile::tempdir().expect("tempdir");
        let durability = durability(dir.path(), CENTURY);
        let history = durability.history().expect("kept");
        let mut state = first_state();
        history.put("b", 0, &state, 0).expect("base");
        let mut lsn = 0;
        for i in 0..120 {
            let entry = WalEntry::now("b".into(), vec![op(i)]);
            lsn = append(&durability, &entry);
            state.apply(&entry.ops[0]);
            if i % 10 == 9 {
                durability.write_snapshot("b", lsn, &state).expect("snapshot");
            }
        }
        let base = history.base_for("b", Target::At(i64::MAX)).expect("covered");
        let mut segments: Vec<_> = std::fs::read_dir(history.archive())
            .expect("archive")
            .map(|e| e.expect("entry").path())
            .collect();
        segments.sort();
        let bytes = std::fs::read(&segments[1]).expect("segment");
        let mut flipped = bytes.clone();
        flipped[30] ^= 0x40;
        std::fs::write(&segments[1], &flipped).expect("damage");
        let damaged = history.rebuild(&durability.wal, &base, Target::At(i64::MAX), lsn);
        assert!(matches!(damaged, Err(RestoreError::Log(RetainedError::Damaged { .. }))));
        std::fs::remove_file(&segments[1]).expect("remove");
        let missing = history.rebuild(&durability.wal, &base, Target::At(i64::MAX), lsn);
        assert!(matches!(missing, Err(RestoreError::Log(RetainedError::Gone { .. }))));
        // Up to the hole, the rebuild still works.
        let early = history.rebuild(&durability.wal, &base, Target::Position(base.clock + 2), lsn);
        assert_eq!(early.expect("before the hole").store.clock(), 2 + base.clock);
    }

    #[test]
    fn base_keys_round_trip_whatever_the_branch_id() {
        for branch_id in ["b", "with~tilde", "ünï", ""] {
            let base = BaseInfo { branch_id: branch_id.into(), clock: 7, wal_lsn: 9, taken_ms: -3 };
            assert_eq!(BaseInfo::parse(&base.key()), Some(base));
        }
        assert_eq!(BaseInfo::parse("b~x~1~2"), None);
        assert_eq!(BaseInfo::parse("b~1~2"), None);
    }
}
