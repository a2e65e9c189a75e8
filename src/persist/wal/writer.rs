//! The WAL writer thread: takes every append that has arrived, writes the batch, makes it durable
//! with one `fdatasync`, then tells every waiter in the batch (group commit). Rolls segments.
//!
//! Owns the active segment file and the directory lock for as long as the thread runs. It must not
//! assign LSNs (the handle does, in call order) and must never report a record durable before the
//! sync that covers it. Any write or sync failure ends the process through `abort_on_io_failure`.

use crate::histogram::{Histogram, COUNT_BOUNDS, LATENCY_BOUNDS};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::frame::{self, HEADER_LEN};
use super::WalStats;

/// Stop adding to a batch once this many bytes are staged, so one sync never waits on a huge write.
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;

/// A message from a `WalHandle` to the writer thread.
pub(super) enum Command {
    /// Write this record; signal `done` once it is durable.
    Append { lsn: u64, payload: Payload, done: oneshot::Sender<()> },
    /// Signal `done` once everything sent before it is durable.
    Barrier { done: oneshot::Sender<()> },
}

/// A record's payload as appended: its bytes, or a function writing them (`len` of them) that
/// the writer thread calls as it frames the record, so that the appender does not spend its
/// own time copying them.
pub(super) enum Payload {
    Bytes(Vec<u8>),
    Deferred { len: usize, write: WritePayload },
}

/// Appends a deferred payload's bytes to the buffer it is given (`WalHandle::append_deferred`).
pub type WritePayload = Box<dyn FnOnce(&mut Vec<u8>) + Send>;

impl Payload {
    /// The payload's length in bytes.
    pub(super) fn len(&self) -> usize {
        match self {
            Payload::Bytes(bytes) => bytes.len(),
            Payload::Deferred { len, .. } => *len,
        }
    }
}

/// The one policy for a failed WAL write or sync: log it and abort the process.
///
/// After a failed `fdatasync` the kernel may already have dropped the dirty pages and cleared the
/// error, so a retry can "succeed" without the data being on disk. Nothing acknowledged can be
/// trusted past that point; the only safe path is to stop and let recovery read the log again.
pub fn abort_on_io_failure(action: &str, path: &Path, error: &io::Error) -> ! {
    tracing::error!(action, path = %path.display(), %error, "WAL I/O failed; aborting the process");
    std::process::abort()
}

/// Counters shared between the writer thread and every handle.
#[derive(Debug)]
pub(super) struct StatsCells {
    syncs: AtomicU64,
    records: AtomicU64,
    bytes: AtomicU64,
    last_batch_records: AtomicU64,
    max_sync_micros: AtomicU64,
    total_sync_micros: AtomicU64,
    durable_lsn: AtomicU64,
    /// `fdatasync` latency, in seconds.
    pub(super) sync_seconds: Histogram,
    /// Records per group commit.
    pub(super) batch_records: Histogram,
}

impl Default for StatsCells {
    fn default() -> Self {
        StatsCells {
            syncs: AtomicU64::new(0),
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            last_batch_records: AtomicU64::new(0),
            max_sync_micros: AtomicU64::new(0),
            total_sync_micros: AtomicU64::new(0),
            durable_lsn: AtomicU64::new(0),
            sync_seconds: Histogram::new(LATENCY_BOUNDS),
            batch_records: Histogram::new(COUNT_BOUNDS),
        }
    }
}

impl StatsCells {
    /// Starts the durable LSN at what recovery found on disk.
    pub(super) fn new(durable_lsn: u64) -> Self {
        let cells = Self::default();
        cells.durable_lsn.store(durable_lsn, Ordering::Relaxed);
        cells
    }

    /// A consistent-enough copy of the counters for export.
    pub(super) fn read(&self) -> WalStats {
        let syncs = self.syncs.load(Ordering::Relaxed);
        let total = self.total_sync_micros.load(Ordering::Relaxed);
        WalStats {
            syncs,
            records: self.records.load(Ordering::Relaxed),
            bytes_written: self.bytes.load(Ordering::Relaxed),
            last_batch_records: self.last_batch_records.load(Ordering::Relaxed),
            max_sync_micros: self.max_sync_micros.load(Ordering::Relaxed),
            avg_sync_micros: total.checked_div(syncs).unwrap_or(0),
            durable_lsn: self.durable_lsn.load(Ordering::Relaxed),
        }
    }

    fn record_sync(&self, started: Instant) {
        let elapsed = started.elapsed();
        self.sync_seconds.observe_duration(elapsed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.total_sync_micros.fetch_add(micros, Ordering::Relaxed);
        self.max_sync_micros.fetch_max(micros, Ordering::Relaxed);
    }
}

/// Records and waiters gathered from the channel for one group commit.
#[derive(Default)]
struct Batch {
    waiters: Vec<oneshot::Sender<()>>,
    records: u64,
    last_lsn: Option<u64>,
}

/// The state owned by the writer thread.
pub(super) struct WalWriter {
    dir: PathBuf,
    segment_size: u64,
    file: File,
    path: PathBuf,
    /// Bytes already written to the active segment.
    written: u64,
    /// Framed records not yet written.
    staged: Vec<u8>,
    stats: Arc<StatsCells>,
    /// Held (and so locked) until the thread ends.
    _lock: File,
}

impl WalWriter {
    /// Takes over the active segment at `path`, whose valid length is `len`.
    pub(super) fn new(
        dir: PathBuf,
        segment_size: u64,
        path: PathBuf,
        stats: Arc<StatsCells>,
        lock: File,
    ) -> io::Result<Self> {
        let file = OpenOptions::new().append(true).open(&path)?;
        let written = file.metadata()?.len();
        Ok(Self { dir, segment_size, file, path, written, staged: Vec::new(), stats, _lock: lock })
    }

    /// Runs until every handle is gone and the channel is drained; every batch is synced before
    /// the next receive, so returning means everything received is durable.
    pub(super) fn run(mut self, commands: Receiver<Command>) {
        while let Ok(first) = commands.recv() {
            let mut batch = Batch::default();
            self.accept(first, &mut batch);
            while self.staged.len() < MAX_BATCH_BYTES {
                match commands.try_recv() {
                    Ok(command) => self.accept(command, &mut batch),
                    Err(_) => break,
                }
            }
            self.commit(batch);
        }
    }

    fn accept(&mut self, command: Command, batch: &mut Batch) {
        match command {
            Command::Append { lsn, payload, done } => {
                self.stage(lsn, payload);
                batch.waiters.push(done);
                batch.records += 1;
                batch.last_lsn = Some(lsn);
            }
            Command::Barrier { done } => batch.waiters.push(done),
        }
    }

    /// Frames one record, rolling to a new segment first if it would overflow the active one.
    fn stage(&mut self, lsn: u64, payload: Payload) {
        let pending = self.written + self.staged.len() as u64;
        let record_len = (HEADER_LEN + payload.len()) as u64;
        if pending > 0 && pending + record_len > self.segment_size {
            self.roll(lsn);
        }
        match payload {
            Payload::Bytes(bytes) => frame::encode_record(&mut self.staged, lsn, &bytes),
            Payload::Deferred { len, write } => {
                frame::encode_record_with(&mut self.staged, lsn, len, write)
            }
        }
    }

    /// Writes and syncs what is staged, then tells the batch's waiters.
    fn commit(&mut self, batch: Batch) {
        if let Some(last_lsn) = batch.last_lsn {
            self.write_staged();
            self.sync();
            self.stats.records.fetch_add(batch.records, Ordering::Relaxed);
            self.stats.last_batch_records.store(batch.records, Ordering::Relaxed);
            self.stats.batch_records.observe(batch.records as f64);
            self.stats.durable_lsn.store(last_lsn, Ordering::Relaxed);
        }
        for done in batch.waiters {
            // A waiter that dropped its receiver no longer cares; that is not an error.
            let _ = done.send(());
        }
    }

    /// Finishes the active segment (durably) and starts `wal-<first_lsn>.log`.
    fn roll(&mut self, first_lsn: u64) {
        // Earlier batches were synced when they committed; only this batch's bytes need a sync.
        if !self.staged.is_empty() {
            self.write_staged();
            self.sync();
        }
        let path = self.dir.join(frame::segment_file_name(first_lsn));
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .unwrap_or_else(|e| abort_on_io_failure("create segment", &path, &e));
        frame::sync_dir(&self.dir)
            .unwrap_or_else(|e| abort_on_io_failure("sync directory", &self.dir, &e));
        tracing::debug!(segment = %path.display(), "WAL rolled to a new segment");
        self.file = file;
        self.path = path;
        self.written = 0;
    }

    fn write_staged(&mut self) {
        if self.staged.is_empty() {
            return;
        }
        self.file
            .write_all(&self.staged)
            .unwrap_or_else(|e| abort_on_io_failure("write", &self.path, &e));
        let len = self.staged.len() as u64;
        self.written += len;
        self.stats.bytes.fetch_add(len, Ordering::Relaxed);
        self.staged.clear();
    }

    fn sync(&mut self) {
        let started = Instant::now();
        self.file.sync_data().unwrap_or_else(|e| abort_on_io_failure("fdatasync", &self.path, &e));
        self.stats.record_sync(started);
    }
}
