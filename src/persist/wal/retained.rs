//! The retained log: with history retention on, segments every snapshot covers are moved to an
//! archive directory instead of being deleted (`WalHandle::archive_segments_below`), and a
//! point-in-time restore reads the records after its base from the archive and the live
//! directory as one sequence (`read_retained`). A start reads the archive only to rebuild a
//! branch none of whose snapshots loads (`Durability::load_from_history`), so what it keeps
//! costs no restart time otherwise, and damage to it touches no branch but those rebuilds and
//! the restores that need it. `prune_archive` deletes what no base needs any more.

use std::fs;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::frame::{self, DamageReason, Decoded};
use super::recovery::read_into;

/// Why the retained log could not be read up to where a restore needs it.
#[derive(Debug, thiserror::Error)]
pub enum RetainedError {
    /// The records from `needed` on are not kept (pruned, or a segment is missing).
    #[error("the log's record {needed} is no longer kept (the kept log resumes at {kept})")]
    Gone { needed: u64, kept: u64 },
    /// A record before the end the restore reads to is damaged.
    #[error("the retained log is damaged at record {lsn} in {}: {reason}", path.display())]
    Damaged { path: PathBuf, lsn: u64, reason: DamageReason },
    /// The log ends before the record the restore reads to.
    #[error("the log ends at record {ends}, before record {up_to}")]
    Short { ends: u64, up_to: u64 },
    #[error("reading the retained log at {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> RetainedError + '_ {
    move |source| RetainedError::Io { path: path.to_path_buf(), source }
}

/// One segment by its first LSN, and where it may be: the live directory first (it may be moved
/// to the archive while it is read), then the archive.
type Segment = (u64, Vec<PathBuf>);

/// The segments of both directories, oldest first. The live directory is listed first, so a
/// segment moved between the two listings is seen twice (and read once), never missed.
fn segments(archive: &Path, live: &Path) -> Result<Vec<Segment>, RetainedError> {
    let mut found: Vec<Segment> = Vec::new();
    for dir in [live, archive] {
        let listed = match frame::list_segments(dir) {
            Ok(listed) => listed,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error(dir)(e)),
        };
        for (first, path) in listed {
            match found.iter_mut().find(|(f, _)| *f == first) {
                Some((_, paths)) => paths.push(path),
                None => found.push((first, vec![path])),
            }
        }
    }
    found.sort_by_key(|(first, _)| *first);
    Ok(found)
}

/// Reads the first of `paths` that exists into `bytes`.
fn read_segment(paths: &[PathBuf], bytes: &mut Vec<u8>) -> Result<(), RetainedError> {
    for path in paths {
        match read_into(path, bytes) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_error(path)(e)),
        }
    }
    let path = paths.first().cloned().unwrap_or_default();
    Err(RetainedError::Io { path, source: io::ErrorKind::NotFound.into() })
}

/// Calls `each` with every record after LSN `after` up to `up_to` (durable), in order, from the
/// archive and the live log, until it breaks. Every record in that span must be there and
/// intact: a hole or damage is an error, never a silent gap.
pub fn read_retained(
    (archive, live): (&Path, &Path),
    (after, up_to): (u64, u64),
    max_record_len: u32,
    mut each: impl FnMut(u64, &[u8]) -> ControlFlow<()>,
) -> Result<(), RetainedError> {
    let mut expected = after.saturating_add(1);
    if expected > up_to {
        return Ok(());
    }
    let segments = segments(archive, live)?;
    let start = segments.partition_point(|(first, _)| *first <= expected);
    if start == 0 {
        let kept = segments.first().map_or(up_to.saturating_add(1), |(first, _)| *first);
        return Err(RetainedError::Gone { needed: expected, kept });
    }
    let mut bytes = Vec::new();
    for (first, paths) in &segments[start - 1..] {
        if *first > expected {
            return Err(RetainedError::Gone { needed: expected, kept: *first });
        }
        read_segment(paths, &mut bytes)?;
        let (mut offset, mut lsn) = (0, *first);
        loop {
            match frame::decode_record(&bytes, offset, lsn, max_record_len) {
                Decoded::Record { lsn: at, payload, next } => {
                    if at > up_to {
                        return Ok(());
                    }
                    if at >= expected {
                        if each(at, payload).is_break() {
                            return Ok(());
                        }
                        expected = at + 1;
                    }
                    (offset, lsn) = (next, at + 1);
                }
                Decoded::End => break,
                // The live segment's tail past `up_to` may be mid-write.
                Decoded::Damaged(_) if lsn > up_to => return Ok(()),
                Decoded::Damaged(reason) => {
                    let path = paths.first().cloned().unwrap_or_default();
                    return Err(RetainedError::Damaged { path, lsn, reason });
                }
            }
        }
    }
    if expected <= up_to {
        return Err(RetainedError::Short { ends: expected - 1, up_to });
    }
    Ok(())
}

/// Deletes, oldest first, the archived segments whose records are all at or below
/// `keep_after` (no restore needs them); `first_live` is the first LSN of the live log's oldest
/// segment (where the archive's newest segment ends). Returns how many were deleted.
pub fn prune_archive(archive: &Path, keep_after: u64, first_live: u64) -> io::Result<usize> {
    let listed = match frame::list_segments(archive) {
        Ok(listed) => listed,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let nexts = listed.iter().skip(1).map(|(first, _)| *first).chain([first_live]);
    let mut removed = 0;
    for ((_, path), next_first) in listed.iter().zip(nexts) {
        if next_first > keep_after.saturating_add(1) {
            break;
        }
        match fs::remove_file(path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    if removed > 0 {
        frame::sync_dir(archive)?;
    }
    Ok(removed)
}
