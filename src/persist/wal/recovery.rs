//! Start-up scan of the write-ahead log: reads every segment (a segment at a time on each core),
//! finds the valid records in LSN order, and repairs a damaged tail (truncate the damaged
//! segment, delete every later segment). The records themselves are not kept: `WalRecords`
//! reads them again, one segment at a time, when the catalogue and the branches are replayed,
//! so a start never holds the whole log in memory.
//!
//! Owns the repair decision at open time only. It must not be called while a writer thread is
//! running on the same directory (`Wal::open` holds the directory lock before calling it).

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use super::frame::{self, DamageReason, Decoded};
use super::{TailDamage, WalError};

/// Everything `Wal::open` needs from the scan.
#[derive(Debug)]
pub(super) struct RecoveryOutcome {
    pub(super) records: WalRecords,
    pub(super) damage: Option<TailDamage>,
    /// The segment the writer continues appending to (already cut to its valid length);
    /// `None` when the directory held no segment at all.
    pub(super) active: Option<PathBuf>,
    pub(super) next_lsn: u64,
}

/// Result of scanning one segment's bytes.
struct SegmentScan {
    valid_len: usize,
    next_lsn: u64,
    damage: Option<DamageReason>,
}

/// Scans and repairs the log in `dir`.
pub(super) fn recover(
    dir: &Path,
    max_record_len: u32,
    marked: fn(&[u8]) -> bool,
) -> Result<RecoveryOutcome, WalError> {
    let segments = frame::list_segments(dir).map_err(|e| WalError::io(dir, e))?;
    let mut outcome = RecoveryOutcome {
        records: WalRecords { source: Source::Segments(Vec::new()), max_record_len, count: 0 },
        damage: None,
        active: None,
        next_lsn: segments.first().map_or(1, |(first, _)| *first),
    };
    let mut scans = scan_all(&segments, max_record_len, marked).into_iter();
    for (index, (first_lsn, path)) in segments.iter().enumerate() {
        if *first_lsn != outcome.next_lsn {
            let reason = DamageReason::SegmentOutOfSequence {
                expected: outcome.next_lsn,
                found: *first_lsn,
            };
            let deleted = delete_segments(dir, &segments[index..])?;
            outcome.damage = Some(report(path, 0, reason, deleted));
            break;
        }
        let (scan, holds_marked) = match scans.next() {
            Some(scanned) => scanned.map_err(|e| WalError::io(path, e))?,
            None => return Err(WalError::io(path, io::Error::other("a segment was not scanned"))),
        };
        let first = outcome.next_lsn;
        outcome.next_lsn = scan.next_lsn;
        let len = scan.valid_len as u64;
        outcome.records.count += (scan.next_lsn - first) as usize;
        if let Source::Segments(spans) = &mut outcome.records.source {
            spans.push(SegmentSpan {
                path: path.clone(),
                first_lsn: first,
                end_lsn: scan.next_lsn,
                valid_len: scan.valid_len,
                holds_marked,
            });
        }
        outcome.active = Some(path.clone());
        if let Some(reason) = scan.damage {
            truncate(path, len)?;
            let deleted = delete_segments(dir, &segments[index + 1..])?;
            outcome.damage = Some(report(path, len, reason, deleted));
            break;
        }
    }
    Ok(outcome)
}

/// Scans every segment from the first LSN its name gives, a segment at a time on each core
/// (a start after a large load reads gigabytes of log; `recover` then checks that they follow
/// each other). Each scan says whether a record of the segment is one `marked` notes.
fn scan_all(
    segments: &[(u64, PathBuf)],
    max_record_len: u32,
    marked: fn(&[u8]) -> bool,
) -> Vec<io::Result<(SegmentScan, bool)>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let scan = || {
        let mut bytes = Vec::new();
        let mut done = Vec::new();
        loop {
            let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some((first, path)) = segments.get(index) else { return done };
            let scanned = read_into(path, &mut bytes).map(|()| {
                let mut holds_marked = false;
                let scan = scan_segment(&bytes, *first, max_record_len, |_, payload| {
                    holds_marked = holds_marked || marked(payload);
                });
                (scan, holds_marked)
            });
            done.push((index, scanned));
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let mut results: Vec<(usize, io::Result<(SegmentScan, bool)>)> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(segments.len()))
            .filter_map(|_| {
                std::thread::Builder::new().name("wal-scan".into()).spawn_scoped(s, scan).ok()
            })
            .collect();
        let mut all = scan();
        for helper in helpers {
            // A helper that panicked leaves its segments unscanned: `recover` reports them.
            all.extend(helper.join().unwrap_or_default());
        }
        all
    });
    results.sort_by_key(|(index, _)| *index);
    let mut ordered = Vec::with_capacity(segments.len());
    for (index, scanned) in results {
        if index != ordered.len() {
            break;
        }
        ordered.push(scanned);
    }
    ordered
}

/// The valid records a WAL held when it was opened, in LSN order, read from disk on demand.
#[derive(Debug)]
pub struct WalRecords {
    source: Source,
    max_record_len: u32,
    count: usize,
}

#[derive(Debug)]
enum Source {
    /// The valid part of each segment, as found at open.
    Segments(Vec<SegmentSpan>),
    /// Records held in memory (tests of the replay).
    Memory(Vec<(u64, Vec<u8>)>),
}

#[derive(Debug)]
struct SegmentSpan {
    path: PathBuf,
    first_lsn: u64,
    /// The LSN after its last valid record.
    end_lsn: u64,
    valid_len: usize,
    /// Whether a record of it is one `WalOptions::marked` notes.
    holds_marked: bool,
}

impl WalRecords {
    /// Records held in memory, as if a WAL held them.
    pub fn from_vec(records: Vec<(u64, Vec<u8>)>) -> WalRecords {
        let count = records.len();
        WalRecords { source: Source::Memory(records), max_record_len: u32::MAX, count }
    }

    /// Calls `each` with every record, in LSN order, reading one segment at a time. A segment
    /// that cannot be read again is an error; its records up to then were passed.
    pub fn for_each(&self, each: impl FnMut(u64, &[u8])) -> Result<(), WalError> {
        self.read(0, false, each)
    }

    /// `for_each` for the records after LSN `after`; segments that end at or before it are
    /// not read.
    pub fn for_each_after(&self, after: u64, each: impl FnMut(u64, &[u8])) -> Result<(), WalError> {
        self.read(after, false, each)
    }

    /// `for_each_after` reading only the segments that hold a record `WalOptions::marked`
    /// noted (records in memory are all passed).
    pub fn for_each_marked_after(
        &self,
        after: u64,
        each: impl FnMut(u64, &[u8]),
    ) -> Result<(), WalError> {
        self.read(after, true, each)
    }

    fn read(
        &self,
        after: u64,
        only_marked: bool,
        mut each: impl FnMut(u64, &[u8]),
    ) -> Result<(), WalError> {
        let mut after_floor = |lsn: u64, bytes: &[u8]| {
            if lsn > after {
                each(lsn, bytes);
            }
        };
        match &self.source {
            Source::Memory(records) => {
                records.iter().for_each(|(lsn, bytes)| after_floor(*lsn, bytes))
            }
            Source::Segments(spans) => {
                let wanted = |s: &&SegmentSpan| {
                    s.end_lsn.saturating_sub(1) > after && (s.holds_marked || !only_marked)
                };
                let mut bytes = Vec::new();
                for span in spans.iter().filter(wanted) {
                    read_into(&span.path, &mut bytes).map_err(|e| WalError::io(&span.path, e))?;
                    bytes.truncate(span.valid_len);
                    scan_segment(&bytes, span.first_lsn, self.max_record_len, &mut after_floor);
                }
            }
        }
        Ok(())
    }

    /// The first record's LSN.
    pub fn first_lsn(&self) -> Option<u64> {
        match &self.source {
            Source::Memory(records) => records.first().map(|(lsn, _)| *lsn),
            Source::Segments(spans) => {
                spans.first().filter(|_| self.count > 0).map(|s| s.first_lsn)
            }
        }
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Every record, copied (tests).
    pub fn to_vec(&self) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.count);
        let _ = self.for_each(|lsn, bytes| out.push((lsn, bytes.to_vec())));
        out
    }
}

/// Reads a whole segment into `buf`, reusing its memory: segments are tens of MiB, and fresh
/// pages for each would be zeroed by the kernel first.
pub(super) fn read_into(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    use std::io::Read;
    buf.clear();
    let mut file = fs::File::open(path)?;
    let len = file.metadata().map_or(0, |m| m.len());
    buf.reserve(usize::try_from(len).unwrap_or(0));
    file.read_to_end(buf)?;
    Ok(())
}

/// Decodes records from the start of `bytes` until the end or the first damaged record,
/// passing each to `each`.
fn scan_segment(
    bytes: &[u8],
    first_lsn: u64,
    max_record_len: u32,
    mut each: impl FnMut(u64, &[u8]),
) -> SegmentScan {
    let mut offset = 0;
    let mut expected = first_lsn;
    loop {
        match frame::decode_record(bytes, offset, expected, max_record_len) {
            Decoded::Record { lsn, payload, next } => {
                each(lsn, payload);
                expected += 1;
                offset = next;
            }
            Decoded::End => {
                return SegmentScan { valid_len: offset, next_lsn: expected, damage: None }
            }
            Decoded::Damaged(reason) => {
                return SegmentScan { valid_len: offset, next_lsn: expected, damage: Some(reason) }
            }
        }
    }
}

/// Cuts `path` to `len` bytes and makes the new length durable.
fn truncate(path: &Path, len: u64) -> Result<(), WalError> {
    let file = OpenOptions::new().write(true).open(path).map_err(|e| WalError::io(path, e))?;
    file.set_len(len).map_err(|e| WalError::io(path, e))?;
    file.sync_all().map_err(|e| WalError::io(path, e))
}

/// Deletes `segments` newest first, so an interrupted repair never leaves a hole in the sequence.
fn delete_segments(dir: &Path, segments: &[(u64, PathBuf)]) -> Result<Vec<PathBuf>, WalError> {
    let mut deleted = Vec::with_capacity(segments.len());
    for (_, path) in segments.iter().rev() {
        match fs::remove_file(path) {
            Ok(()) => deleted.push(path.clone()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(WalError::io(path, e)),
        }
        frame::sync_dir(dir).map_err(|e| WalError::io(dir, e))?;
    }
    deleted.reverse();
    Ok(deleted)
}

fn report(path: &Path, offset: u64, reason: DamageReason, deleted: Vec<PathBuf>) -> TailDamage {
    tracing::warn!(
        segment = %path.display(),
        offset,
        %reason,
        deleted_segments = deleted.len(),
        "WAL damaged: records from this point on were dropped"
    );
    TailDamage { segment: path.to_path_buf(), offset, reason, deleted_segments: deleted }
}
