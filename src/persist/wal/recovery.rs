//! Start-up scan of the write-ahead log: reads every segment (a segment at a time on each core),
//! finds the valid records in LSN order, and repairs a damaged tail (truncates the last
//! segment after its last valid record). Damage with valid records after it (in the same
//! segment, or later segments) is not a tail: a crash tears only the last writes, so those
//! records were acknowledged. The scan steps over such damage to the next valid record
//! (`resync`) and reports the LSNs it could not read (`WalGap`); nothing after it is dropped.
//! An intact record whose LSN field alone is damaged is read as the LSN between its
//! neighbours. The records themselves are not kept: `WalRecords` reads them again, one
//! segment at a time, when the catalogue and the branches are replayed, so a start never
//! holds the whole log in memory.
//!
//! Owns the repair decision at open time only. It must not be called while a writer thread is
//! running on the same directory (`Wal::open` holds the directory lock before calling it).

use std::fs::{self, OpenOptions};
use std::io;
use std::ops::Range;
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
    /// Records that could not be read in the middle of the log (valid records follow them).
    pub(super) gaps: Vec<WalGap>,
}

/// Records of the log that could not be read, with valid records after them: damaged bytes
/// inside a segment, or a segment missing between two others. They had been acknowledged;
/// the changes they held are lost unless a snapshot covers them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalGap {
    /// The segment holding the damage (for a missing segment, the one after the hole).
    pub segment: PathBuf,
    /// Byte offset of the damage in `segment`.
    pub offset: u64,
    /// The LSNs not read.
    pub lsns: Range<u64>,
    /// What was wrong at `offset`.
    pub reason: String,
}

/// Result of scanning one segment's bytes.
struct SegmentScan {
    valid_len: usize,
    next_lsn: u64,
    /// Records read.
    records: usize,
    /// Damage that ends the segment's valid records (none may follow it in the segment).
    damage: Option<DamageReason>,
    /// Damage stepped over: its offset, the LSNs it held and what was wrong.
    gaps: Vec<(usize, Range<u64>, DamageReason)>,
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
        gaps: Vec::new(),
    };
    let mut scans = scan_all(&segments, max_record_len, marked).into_iter();
    // The reason the segment before ended early, when it did: the LSNs up to this segment's
    // first are a gap, not the start of a torn tail (this segment's records follow them).
    let mut ended_early: Option<(PathBuf, u64, DamageReason)> = None;
    for (index, (first_lsn, path)) in segments.iter().enumerate() {
        if *first_lsn < outcome.next_lsn {
            let reason = DamageReason::SegmentOutOfSequence {
                expected: outcome.next_lsn,
                found: *first_lsn,
            };
            let deleted = delete_segments(dir, &segments[index..])?;
            outcome.damage = Some(report(path, 0, reason, deleted));
            break;
        }
        if *first_lsn > outcome.next_lsn {
            // The segment before ended in damage, or a whole segment is missing.
            let (segment, offset, reason) = match ended_early.take() {
                Some((segment, offset, reason)) => (segment, offset, reason.to_string()),
                None => (path.clone(), 0, "the segment before it is missing".to_string()),
            };
            outcome.gaps.push(gap(segment, offset, outcome.next_lsn..*first_lsn, reason));
            outcome.next_lsn = *first_lsn;
        }
        ended_early = None;
        let (scan, holds_marked) = match scans.next() {
            Some(scanned) => scanned.map_err(|e| WalError::io(path, e))?,
            None => return Err(WalError::io(path, io::Error::other("a segment was not scanned"))),
        };
        let first = outcome.next_lsn;
        outcome.next_lsn = scan.next_lsn;
        let len = scan.valid_len as u64;
        outcome.records.count += scan.records;
        for (offset, lsns, reason) in scan.gaps {
            outcome.gaps.push(gap(path.clone(), offset as u64, lsns, reason.to_string()));
        }
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
            if index + 1 < segments.len() {
                // Later segments hold records written after this one was whole: not a tail.
                ended_early = Some((path.clone(), len, reason));
                continue;
            }
            truncate(path, len)?;
            outcome.damage = Some(report(path, len, reason, Vec::new()));
            break;
        }
    }
    Ok(outcome)
}

/// A gap of the log, reported as an error when found (bytes holding no record, the next
/// record right after them, as a warning).
fn gap(segment: PathBuf, offset: u64, lsns: Range<u64>, reason: String) -> WalGap {
    if lsns.is_empty() {
        tracing::warn!(
            segment = %segment.display(),
            offset,
            %reason,
            "WAL damaged in the middle: bytes holding no record were stepped over; no record is \
             missing"
        );
        return WalGap { segment, offset, lsns, reason };
    }
    tracing::error!(
        segment = %segment.display(),
        offset,
        first_lsn = lsns.start,
        last_lsn = lsns.end - 1,
        %reason,
        "WAL damaged in the middle: records written before the last ones could not be read \
         and were skipped; the records after them are kept"
    );
    WalGap { segment, offset, lsns, reason }
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

/// Decodes records from the start of `bytes`, passing each to `each`, until the end or damage
/// no valid record follows. Damage that valid records follow is stepped over (`resync`) and
/// listed in `gaps`; an intact record whose LSN field alone is wrong (the record after it
/// carries the LSN after the expected one) is read as the expected record. Deterministic: the
/// replay reads each segment again with it and must meet the records the open found.
fn scan_segment(
    bytes: &[u8],
    first_lsn: u64,
    max_record_len: u32,
    mut each: impl FnMut(u64, &[u8]),
) -> SegmentScan {
    let mut offset = 0;
    let mut expected = first_lsn;
    let mut records = 0;
    let mut gaps = Vec::new();
    loop {
        match frame::decode_record(bytes, offset, expected, max_record_len) {
            Decoded::Record { lsn, payload, next } => {
                each(lsn, payload);
                records += 1;
                expected += 1;
                offset = next;
            }
            Decoded::End => {
                let next_lsn = expected;
                return SegmentScan { valid_len: offset, next_lsn, records, damage: None, gaps };
            }
            Decoded::Damaged(reason) => {
                if let DamageReason::UnexpectedLsn { found, .. } = reason {
                    // The record is whole (its checksum matched); only its LSN is not the
                    // expected one. When a record carrying the next LSN follows it, it is the
                    // expected record with a damaged LSN field.
                    if let Decoded::Record { payload, next, .. } =
                        frame::decode_record(bytes, offset, found, max_record_len)
                    {
                        let after = frame::decode_record(bytes, next, expected + 1, max_record_len);
                        if matches!(after, Decoded::Record { .. }) {
                            each(expected, payload);
                            records += 1;
                            expected += 1;
                            offset = next;
                            continue;
                        }
                    }
                }
                match resync(bytes, offset + 1, expected, max_record_len) {
                    Some((at, lsn)) => {
                        gaps.push((offset, expected..lsn, reason));
                        offset = at;
                        expected = lsn;
                    }
                    None => {
                        let (valid_len, next_lsn, damage) = (offset, expected, Some(reason));
                        return SegmentScan { valid_len, next_lsn, records, damage, gaps };
                    }
                }
            }
        }
    }
}

/// Whether the bytes at `offset` are the end of the segment or a valid record carrying `lsn`.
fn follows(bytes: &[u8], offset: usize, lsn: u64, max_record_len: u32) -> bool {
    matches!(
        frame::decode_record(bytes, offset, lsn, max_record_len),
        Decoded::End | Decoded::Record { .. }
    )
}

/// The first offset from `from` holding a valid record with an LSN of at least `expected`
/// (and no more than the records the rest of the segment could hold), itself followed by the
/// segment's end or the record with the next LSN; with that LSN. Two records in a row, each
/// with a matching checksum and consecutive LSNs, do not occur in damaged bytes by chance.
/// The header fields are checked before the checksum, so a scan over junk stays linear.
fn resync(bytes: &[u8], from: usize, expected: u64, max_record_len: u32) -> Option<(usize, u64)> {
    let last_start = bytes.len().checked_sub(frame::HEADER_LEN)?;
    let most = expected.saturating_add((bytes.len() / frame::HEADER_LEN) as u64);
    (from..=last_start).find_map(|at| {
        let header = &bytes[at..at + frame::HEADER_LEN];
        let len = u32::from_le_bytes(header[..4].try_into().ok()?);
        if len > max_record_len || at + frame::HEADER_LEN + len as usize > bytes.len() {
            return None;
        }
        let lsn = u64::from_le_bytes(header[8..].try_into().ok()?);
        if lsn < expected || lsn > most {
            return None;
        }
        match frame::decode_record(bytes, at, lsn, max_record_len) {
            Decoded::Record { next, .. } if follows(bytes, next, lsn + 1, max_record_len) => {
                Some((at, lsn))
            }
            _ => None,
        }
    })
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
