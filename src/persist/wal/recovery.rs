//! Start-up scan of the write-ahead log: reads every segment in LSN order, returns the valid records,
//! and repairs a damaged tail (truncate the damaged segment, delete every later segment).
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
    pub(super) records: Vec<(u64, Vec<u8>)>,
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
pub(super) fn recover(dir: &Path, max_record_len: u32) -> Result<RecoveryOutcome, WalError> {
    let segments = frame::list_segments(dir).map_err(|e| WalError::io(dir, e))?;
    let mut outcome = RecoveryOutcome {
        records: Vec::new(),
        damage: None,
        active: None,
        next_lsn: segments.first().map_or(1, |(first, _)| *first),
    };
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
        let bytes = fs::read(path).map_err(|e| WalError::io(path, e))?;
        let scan = scan_segment(&bytes, outcome.next_lsn, max_record_len, &mut outcome.records);
        outcome.next_lsn = scan.next_lsn;
        let len = scan.valid_len as u64;
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

/// Decodes records from the start of `bytes` until the end or the first damaged record.
fn scan_segment(
    bytes: &[u8],
    first_lsn: u64,
    max_record_len: u32,
    records: &mut Vec<(u64, Vec<u8>)>,
) -> SegmentScan {
    let mut offset = 0;
    let mut expected = first_lsn;
    loop {
        match frame::decode_record(bytes, offset, expected, max_record_len) {
            Decoded::Record { lsn, payload, next } => {
                records.push((lsn, payload.to_vec()));
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
