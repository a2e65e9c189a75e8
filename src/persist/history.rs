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
use std::sync::RwLock;
use std::time::Duration;

use super::durability::DurabilityError;
use super::entry::{branch_id_of, WalEntry};
use super::image_formats::decode_any;
use super::snapshot::{FileSnapshotStore, SnapshotError, SnapshotStore};
use super::wal::{prune_archive, read_retained, RetainedError, WalHandle};
use crate::error::{Coded, ErrorCode};
use crate::grid::image::{PartLimits, IMAGE_FORMAT_VERSION};
use crate::grid::ops::GridState;

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
}

impl Coded for RestoreError {
    fn code(&self) -> ErrorCode {
        match self {
            RestoreError::NotRetained | RestoreError::Outside { .. } => ErrorCode::BadRequest,
            RestoreError::Base(_) | RestoreError::Log(_) | RestoreError::Undecodable { .. } => {
                ErrorCode::InternalServerError
            }
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
        Ok(History { store, archive, period, reading: RwLock::new(()) })
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
