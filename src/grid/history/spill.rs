//! Packed history chunks held on disk instead of on the heap.
//!
//! History is written once and read rarely, so a sealed chunk's packed bytes are written to a
//! spill segment (`spill`) and the chunk keeps only where they lie. Segments are anonymous files
//! in the data directory (`configure`): created unlinked (`tempfile`), so nothing is left behind
//! by a crash or a stop, and a segment's disk space is freed when the last chunk in it is
//! dropped. They are a cache, not a store: snapshots still write each chunk's bytes into the
//! branch's image, and a start spills the chunks it loads again. A segment takes
//! `SEGMENT_BYTES` before the next starts, so a deleted branch frees its history's disk space
//! unless chunks of branches still alive share its segments (at most a segment each).
//!
//! Without a configured directory, or when a write fails (the disk full), chunks stay on the
//! heap.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes a segment takes before the next one starts.
const SEGMENT_BYTES: u64 = 16 << 20;

/// One anonymous file chunks are appended to.
#[derive(Debug)]
struct Segment {
    file: File,
}

/// Where new segments are made and the segment being filled (with its length).
struct Spiller {
    dir: Option<PathBuf>,
    current: Option<(Arc<Segment>, u64)>,
}

static SPILLER: Mutex<Spiller> = Mutex::new(Spiller { dir: None, current: None });

/// Spilled bytes still held by some chunk.
static HELD: AtomicU64 = AtomicU64::new(0);

/// Bytes written to a segment, read back on demand.
#[derive(Debug)]
pub(super) struct Spilled {
    segment: Arc<Segment>,
    offset: u64,
    len: usize,
}

impl Drop for Spilled {
    fn drop(&mut self) {
        HELD.fetch_sub(self.len as u64, Ordering::Relaxed);
    }
}

/// Spills later chunks to anonymous files in `dir` (the data directory; a server calls it on
/// start). The segment being filled is let go, so a later spill starts one in `dir`.
pub fn configure(dir: &Path) {
    let mut spiller = SPILLER.lock().unwrap_or_else(|e| e.into_inner());
    spiller.dir = Some(dir.to_path_buf());
    spiller.current = None;
}

/// Bytes of history held in spill segments (`/metrics`).
pub fn held_bytes() -> u64 {
    HELD.load(Ordering::Relaxed)
}

/// Writes `bytes` to the current segment; `None` when spilling is not configured or the write
/// fails (the caller keeps them on the heap).
pub(super) fn spill(bytes: &[u8]) -> Option<Spilled> {
    let len = bytes.len() as u64;
    let (segment, offset) = {
        let mut spiller = SPILLER.lock().unwrap_or_else(|e| e.into_inner());
        let dir = spiller.dir.clone()?;
        let full = spiller.current.as_ref().is_none_or(|(_, used)| used + len > SEGMENT_BYTES);
        if full {
            match tempfile::tempfile_in(&dir) {
                Ok(file) => spiller.current = Some((Arc::new(Segment { file }), 0)),
                Err(error) => {
                    tracing::warn!(%error, dir = %dir.display(), "history stays on the heap: \
                        no spill segment could be made");
                    spiller.current = None;
                    return None;
                }
            }
        }
        let (segment, used) = spiller.current.as_mut()?;
        let offset = *used;
        *used += len;
        (Arc::clone(segment), offset)
    };
    if let Err(error) = segment.file.write_all_at(bytes, offset) {
        tracing::warn!(%error, "history stays on the heap: a spill write failed");
        return None;
    }
    HELD.fetch_add(len, Ordering::Relaxed);
    Some(Spilled { segment, offset, len: bytes.len() })
}

impl Spilled {
    /// Bytes `start..end` of what was spilled.
    pub(super) fn read(&self, start: usize, end: usize) -> io::Result<Vec<u8>> {
        if start > end || end > self.len {
            return Err(io::Error::other("a read past a spilled chunk's end"));
        }
        let mut out = vec![0; end - start];
        self.segment.file.read_exact_at(&mut out, self.offset + start as u64)?;
        Ok(out)
    }

    /// How many bytes were spilled.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Spills of the unit tests go to one directory that is never removed (tests run in
    /// parallel; a removed directory would leave later spills on the heap).
    pub(in crate::grid::history) fn test_dir() -> PathBuf {
        let dir = std::env::temp_dir().join("gridd-history-spill-tests");
        std::fs::create_dir_all(&dir).expect("spill test dir");
        configure(&dir);
        dir
    }

    #[test]
    fn spilled_bytes_read_back_by_range_and_are_counted_while_held() {
        let dir = test_dir();
        let a: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let b = b"Einstellungen speichern".to_vec();
        let spilled_a = spill(&a).expect("spills");
        let spilled_b = spill(&b).expect("spills");
        assert_eq!(spilled_a.read(0, a.len()).expect("reads"), a);
        assert_eq!(spilled_a.read(100, 200).expect("reads"), &a[100..200]);
        assert_eq!(spilled_b.read(0, b.len()).expect("reads"), b);
        assert!(spilled_b.read(3, b.len() + 1).is_err(), "past the end");
        assert!(held_bytes() >= (a.len() + b.len()) as u64);
        assert_eq!(
            std::fs::read_dir(&dir).expect("dir").count(),
            0,
            "segments leave no file behind"
        );
    }
}
