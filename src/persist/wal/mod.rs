//! The write-ahead log: the source of truth for every acknowledged write.
//!
//! Records live in segment files `wal-<first lsn, 20 digits>.log` under one directory, each framed
//! as `u32 LE payload length | u32 LE crc32c(length bytes ++ payload) | u64 LE LSN | payload`.
//! LSNs start at 1 and grow by one per record. [`Wal::open`] recovers the valid prefix and repairs
//! a damaged tail; [`WalHandle::append`] assigns the LSN at once and a dedicated writer thread makes
//! batches durable with one `fdatasync` each (group commit). [`WalHandle::append_deferred`] takes
//! a payload's length and a function writing it, which the writer thread calls as it frames the
//! record, so the appender spends nothing copying a large payload (it still cannot interpret
//! it: the function is the appender's).
//!
//! This module owns the files in its directory (segments and a `LOCK` file) and nothing else: it
//! must not interpret payloads, and nothing outside it may write into that directory.

mod frame;
mod recovery;
mod retained;
mod writer;

#[cfg(test)]
mod tests;

use crate::histogram::Histogram;
use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

pub use frame::DamageReason;
pub use recovery::{WalGap, WalRecords};
pub use retained::{prune_archive, read_retained, RetainedError};
pub use writer::{abort_on_io_failure, WritePayload};

use writer::{Command, Payload, StatsCells, WalWriter};

const LOCK_FILE: &str = "LOCK";

/// Errors the WAL reports to its callers. Write and sync failures are not among them: those abort
/// the process (see [`abort_on_io_failure`]).
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// Opening, reading, repairing or listing the log failed.
    #[error("WAL I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Another `Wal` (in this or another process) has the directory open.
    #[error("WAL directory {0} is locked by another writer")]
    Locked(PathBuf),
    /// The payload is longer than `WalOptions::max_record_len`; no LSN was assigned.
    #[error("WAL record of {len} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Payload length.
        len: usize,
        /// The configured limit.
        max: u32,
    },
    /// `WalOptions` are unusable.
    #[error("invalid WAL options: {0}")]
    InvalidOptions(&'static str),
    /// The log was shut down (or its writer thread is gone); nothing was appended.
    #[error("the WAL is shut down")]
    Closed,
    /// The writer thread panicked; records it had not synced are not durable.
    #[error("the WAL writer thread panicked")]
    WriterPanicked,
    /// Replaying the records found at open failed.
    #[error("replaying the WAL: {0}")]
    ReadAgain(String),
    /// In a cluster: the cluster's log did not store the record (NATS unreachable, or another
    /// node took the branch over); the write is not acknowledged.
    #[error("the cluster did not store the write: {0}")]
    NotReplicated(String),
}

impl WalError {
    fn io(path: &Path, source: io::Error) -> Self {
        Self::Io { path: path.to_path_buf(), source }
    }
}

/// Tuning of one log.
#[derive(Debug, Clone, Copy)]
pub struct WalOptions {
    /// Roll to a new segment once the active one would exceed this many bytes (a record larger
    /// than this gets a segment of its own). Default 64 MiB.
    pub segment_size: u64,
    /// Longest payload accepted by `append`; a longer length on disk counts as corruption.
    /// Default 256 MiB.
    pub max_record_len: u32,
    /// Records the open scan notes segment by segment, so that a pass over them
    /// (`WalRecords::for_each_marked_after`) reads only the segments that hold one (the
    /// catalogue's few change sets among a bulk load's records). Default: none.
    pub marked: fn(&[u8]) -> bool,
}

impl Default for WalOptions {
    fn default() -> Self {
        Self {
            segment_size: 64 * 1024 * 1024,
            max_record_len: 256 * 1024 * 1024,
            marked: |_| false,
        }
    }
}

/// Where recovery stopped and what it removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailDamage {
    /// The segment holding the first damaged record (it was truncated to `offset`), or the
    /// out-of-sequence segment (it was deleted).
    pub segment: PathBuf,
    /// Byte offset of the first record that was dropped.
    pub offset: u64,
    /// What was wrong there.
    pub reason: DamageReason,
    /// Later segments deleted because they could no longer be replayed in order.
    pub deleted_segments: Vec<PathBuf>,
}

/// What [`Wal::open`] found on disk.
#[derive(Debug)]
pub struct Recovered {
    /// Every valid record as `(lsn, payload)`, in LSN order, read on demand.
    pub records: WalRecords,
    /// `Some` when a torn or corrupt record ended recovery early.
    pub dropped_tail: Option<TailDamage>,
    /// Records that could not be read in the middle of the log, each with valid records after
    /// it (kept and replayed).
    pub gaps: Vec<WalGap>,
}

/// Counters for metrics export; read with [`WalHandle::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WalStats {
    /// `fdatasync` calls since open.
    pub syncs: u64,
    /// Records made durable since open.
    pub records: u64,
    /// Framed bytes written since open.
    pub bytes_written: u64,
    /// Records in the most recent group commit.
    pub last_batch_records: u64,
    /// Slowest `fdatasync`, in microseconds.
    pub max_sync_micros: u64,
    /// Mean `fdatasync` time, in microseconds.
    pub avg_sync_micros: u64,
    /// Highest LSN known to be on disk (0 when the log is empty).
    pub durable_lsn: u64,
}

/// Resolves once the record (or, for [`WalHandle::sync_now`], everything before it) is durable.
///
/// Await it in async code, or call [`Durable::wait`] from a plain thread.
#[must_use = "a write is only acknowledged once Durable resolves"]
#[derive(Debug)]
pub struct Durable {
    done: Done,
}

/// Who says a record is durable: the WAL's writer, or (in a cluster) whoever also waits for
/// the cluster to store it.
#[derive(Debug)]
enum Done {
    Wal(oneshot::Receiver<()>),
    Joined(oneshot::Receiver<Result<(), WalError>>),
}

impl Durable {
    /// A durability that another party resolves: `Ok` once the record is durable wherever it
    /// must be (the WAL and the cluster's log), or why not; dropping the sender is `Closed`.
    pub fn joined() -> (oneshot::Sender<Result<(), WalError>>, Durable) {
        let (send, receive) = oneshot::channel();
        (send, Durable { done: Done::Joined(receive) })
    }

    /// Blocks the current thread until durable. Must not be called from inside an async runtime.
    pub fn wait(self) -> Result<(), WalError> {
        match self.done {
            Done::Wal(done) => done.blocking_recv().map_err(|_| WalError::Closed),
            Done::Joined(done) => done.blocking_recv().map_err(|_| WalError::Closed)?,
        }
    }
}

impl Future for Durable {
    type Output = Result<(), WalError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.done {
            Done::Wal(done) => {
                Pin::new(done).poll(cx).map(|done| done.map_err(|_| WalError::Closed))
            }
            Done::Joined(done) => {
                Pin::new(done).poll(cx).map(|done| done.map_err(|_| WalError::Closed)?)
            }
        }
    }
}

/// A record accepted by [`WalHandle::append`]: its position now, its durability later.
#[derive(Debug)]
pub struct Appended {
    /// The LSN assigned to the record.
    pub lsn: u64,
    /// Resolves after the `fdatasync` that covers the record.
    pub durable: Durable,
}

/// Entry point: opens (and recovers) a log directory.
#[derive(Debug)]
pub struct Wal;

impl Wal {
    /// Locks `dir` (creating it if needed), recovers every valid record, repairs a damaged tail,
    /// and starts the writer thread. Blocking; call it before serving requests.
    pub fn open(
        dir: impl AsRef<Path>,
        options: WalOptions,
    ) -> Result<(WalHandle, Recovered), WalError> {
        let dir = dir.as_ref().to_path_buf();
        validate(&options)?;
        let lock = lock_dir(&dir)?;
        let outcome = recovery::recover(&dir, options.max_record_len, options.marked)?;
        let active_path = match outcome.active {
            Some(path) => path,
            None => create_first_segment(&dir, outcome.next_lsn)?,
        };
        let last_lsn = outcome.next_lsn - 1;
        let stats = Arc::new(StatsCells::new(last_lsn));
        let writer = WalWriter::new(
            dir.clone(),
            options.segment_size,
            active_path.clone(),
            Arc::clone(&stats),
            lock,
        )
        .map_err(|e| WalError::io(&active_path, e))?;
        let (sender, commands) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("wal-writer".to_owned())
            .spawn(move || writer.run(commands))
            .map_err(|e| WalError::io(&dir, e))?;
        let handle = WalHandle {
            shared: Arc::new(Shared {
                dir,
                max_record_len: options.max_record_len,
                sequencer: Mutex::new(Sequencer {
                    next_lsn: outcome.next_lsn,
                    sender: Some(sender),
                }),
                thread: Mutex::new(Some(thread)),
                removal: Mutex::new(()),
                stats,
            }),
        };
        let recovered = Recovered {
            records: outcome.records,
            dropped_tail: outcome.damage,
            gaps: outcome.gaps,
        };
        Ok((handle, recovered))
    }
}

fn validate(options: &WalOptions) -> Result<(), WalError> {
    if options.segment_size == 0 {
        return Err(WalError::InvalidOptions("segment_size must be positive"));
    }
    if options.max_record_len == 0 {
        return Err(WalError::InvalidOptions("max_record_len must be positive"));
    }
    Ok(())
}

/// Creates `dir` if needed and takes an exclusive lock on `dir/LOCK`.
fn lock_dir(dir: &Path) -> Result<File, WalError> {
    if !dir.exists() {
        fs::create_dir_all(dir).map_err(|e| WalError::io(dir, e))?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            frame::sync_dir(parent).map_err(|e| WalError::io(parent, e))?;
        }
    }
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| WalError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(WalError::Locked(dir.to_path_buf())),
        Err(fs::TryLockError::Error(e)) => Err(WalError::io(&path, e)),
    }
}

fn create_first_segment(dir: &Path, first_lsn: u64) -> Result<PathBuf, WalError> {
    let path = dir.join(frame::segment_file_name(first_lsn));
    File::create_new(&path).map_err(|e| WalError::io(&path, e))?;
    frame::sync_dir(dir).map_err(|e| WalError::io(dir, e))?;
    Ok(path)
}

/// Assigns LSNs; the lock makes "take the next LSN" and "queue the record" one step, so the
/// writer receives records in LSN order.
struct Sequencer {
    next_lsn: u64,
    /// `None` after `shutdown`.
    sender: Option<Sender<Command>>,
}

struct Shared {
    dir: PathBuf,
    max_record_len: u32,
    sequencer: Mutex<Sequencer>,
    /// Joined by `shutdown`; when the last handle drops without it, the thread finishes the queued
    /// records on its own (detached) so that dropping never blocks.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Serialises `remove_segments_below` calls.
    removal: Mutex<()>,
    stats: Arc<StatsCells>,
}

/// A cheap, cloneable handle to an open log. Every method is safe to call from any thread.
#[derive(Clone)]
pub struct WalHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WalHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalHandle")
            .field("dir", &self.shared.dir)
            .field("last_lsn", &self.last_lsn())
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded sections cannot panic half-way, so a poisoned lock still holds consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WalHandle {
    /// Queues `payload` and returns its LSN at once. LSNs follow the order of calls across all
    /// clones. The write is acknowledged only when `durable` resolves.
    pub fn append(&self, payload: Vec<u8>) -> Result<Appended, WalError> {
        self.append_payload(Payload::Bytes(payload))
    }

    /// `append` of a payload of `len` bytes that `write` appends to the buffer it is given,
    /// called on the writer thread in the record's turn: the caller pays only for knowing the
    /// length. Refused as `append` refuses.
    pub fn append_deferred(&self, len: usize, write: WritePayload) -> Result<Appended, WalError> {
        self.append_payload(Payload::Deferred { len, write })
    }

    fn append_payload(&self, payload: Payload) -> Result<Appended, WalError> {
        let max = self.shared.max_record_len;
        if u32::try_from(payload.len()).map_or(true, |len| len > max) {
            return Err(WalError::RecordTooLarge { len: payload.len(), max });
        }
        let (done, receiver) = oneshot::channel();
        let mut sequencer = lock(&self.shared.sequencer);
        let lsn = sequencer.next_lsn;
        let sender = sequencer.sender.as_ref().ok_or(WalError::Closed)?;
        sender.send(Command::Append { lsn, payload, done }).map_err(|_| WalError::Closed)?;
        sequencer.next_lsn += 1;
        Ok(Appended { lsn, durable: Durable { done: Done::Wal(receiver) } })
    }

    /// The LSN most recently assigned (0 for an empty log). It may not be durable yet.
    pub fn last_lsn(&self) -> u64 {
        lock(&self.shared.sequencer).next_lsn - 1
    }

    /// A barrier: resolves once every record appended before this call is durable.
    pub fn sync_now(&self) -> Result<Durable, WalError> {
        let (done, receiver) = oneshot::channel();
        let sequencer = lock(&self.shared.sequencer);
        let sender = sequencer.sender.as_ref().ok_or(WalError::Closed)?;
        sender.send(Command::Barrier { done }).map_err(|_| WalError::Closed)?;
        Ok(Durable { done: Done::Wal(receiver) })
    }

    /// Deletes, oldest first, every segment whose records all have LSN < `lsn`; never the newest
    /// segment. Returns how many were deleted. Blocking (one directory sync per deletion).
    pub fn remove_segments_below(&self, lsn: u64) -> Result<usize, WalError> {
        self.retire_segments_below(lsn, None)
    }

    /// `remove_segments_below`, moving the segments into `archive` (created if needed, on the
    /// same file system) instead of deleting them: the log a point-in-time restore reads
    /// (`retained::read_retained`). A start reads the archive only to rebuild what its snapshots
    /// and the live log no longer hold (`Durability::load_from_history`, `journal::recover`).
    pub fn archive_segments_below(&self, lsn: u64, archive: &Path) -> Result<usize, WalError> {
        fs::create_dir_all(archive).map_err(|e| WalError::io(archive, e))?;
        self.retire_segments_below(lsn, Some(archive))
    }

    fn retire_segments_below(&self, lsn: u64, archive: Option<&Path>) -> Result<usize, WalError> {
        let _one_at_a_time = lock(&self.shared.removal);
        let dir = &self.shared.dir;
        let segments = frame::list_segments(dir).map_err(|e| WalError::io(dir, e))?;
        let mut removed = 0;
        for ((_, path), (next_first, _)) in segments.iter().zip(segments.iter().skip(1)) {
            if *next_first > lsn {
                break;
            }
            let gone = match (archive, path.file_name()) {
                (Some(archive), Some(name)) => {
                    let moved = fs::rename(path, archive.join(name));
                    if moved.is_ok() {
                        frame::sync_dir(archive).map_err(|e| WalError::io(archive, e))?;
                    }
                    moved
                }
                _ => fs::remove_file(path),
            };
            match gone {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(WalError::io(path, e)),
            }
            // Sync each removal so a crash can only leave a contiguous suffix of segments.
            frame::sync_dir(dir).map_err(|e| WalError::io(dir, e))?;
        }
        Ok(removed)
    }

    /// The first LSN of the oldest segment in the log's directory.
    pub fn oldest_segment(&self) -> Result<Option<u64>, WalError> {
        let dir = &self.shared.dir;
        let segments = frame::list_segments(dir).map_err(|e| WalError::io(dir, e))?;
        Ok(segments.first().map(|(first, _)| *first))
    }

    /// The directory of the log's segments.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The longest payload a record may have (`WalOptions::max_record_len`).
    pub fn max_record_len(&self) -> u32 {
        self.shared.max_record_len
    }

    /// Bytes a floor at `lsn` holds: the sizes of the segments `remove_segments_below(lsn)`
    /// would leave but a floor at the log's end would not (never the newest segment).
    pub fn bytes_held_by_floor(&self, lsn: u64) -> Result<u64, WalError> {
        let dir = &self.shared.dir;
        let segments = frame::list_segments(dir).map_err(|e| WalError::io(dir, e))?;
        let end = self.last_lsn();
        let mut held = 0;
        for ((_, path), (next_first, _)) in segments.iter().zip(segments.iter().skip(1)) {
            if *next_first > lsn && *next_first <= end {
                held += match fs::metadata(path) {
                    Ok(meta) => meta.len(),
                    // Removed meanwhile (a concurrent `remove_segments_below`).
                    Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
                    Err(e) => return Err(WalError::io(path, e)),
                };
            }
        }
        Ok(held)
    }

    /// Current counters.
    pub fn stats(&self) -> WalStats {
        self.shared.stats.read()
    }

    /// Histograms of `fdatasync` latency (seconds) and of records per group commit.
    pub fn histograms(&self) -> (&Histogram, &Histogram) {
        (&self.shared.stats.sync_seconds, &self.shared.stats.batch_records)
    }

    /// Stops accepting appends, waits until the writer has written and synced everything queued,
    /// and joins it. Later calls on any clone return [`WalError::Closed`] (or `Ok` for `shutdown`).
    pub fn shutdown(&self) -> Result<(), WalError> {
        drop(lock(&self.shared.sequencer).sender.take());
        let thread = lock(&self.shared.thread).take();
        match thread {
            Some(thread) => thread.join().map_err(|_| WalError::WriterPanicked),
            None => Ok(()),
        }
    }
}
