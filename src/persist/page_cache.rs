//! Giving the page cache back the pages of a file's bytes once they are on disk.
//!
//! Every byte the WAL writes goes through a page of the page cache, and a fresh page is not
//! cheap where the host takes back the memory a virtual machine has not used lately: the first
//! write to such a page faults into the host. Measured on this project's 2-core machine,
//! `dd if=/dev/zero of=F bs=1M count=2000` ran at 387 MB/s on a quiet machine and at 4.1 GB/s
//! right after, into the pages the first file's deletion had freed; during a 1M-record bulk load
//! the kernel's copy of the WAL's bytes into fresh pages was 11% of the machine's time. Pages
//! dropped once synced go back to the free list and take the next write, already mapped.
//!
//! What is dropped is read from the disk when it is read again: the WAL only by a start's replay
//! (of what the newest snapshot does not cover) and a restore.

use std::fs::File;
use std::num::NonZeroU64;

/// Bytes of a file that must have piled up since the last drop before the next (one system call
/// per commit of a few hundred bytes would cost more than the pages).
const DROP_STEP: u64 = 256 << 10;

/// The size of a page: only whole pages are dropped (a partial last page is written again).
const PAGE: u64 = 4096;

/// Where a file's dropped pages end: the file's bytes before it are no longer cached.
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    up_to: u64,
}

impl Dropped {
    /// Drops the cached pages of `file` from where the last drop ended up to the last whole page
    /// before `synced`, once `DROP_STEP` bytes have piled up. Every byte before `synced` must be
    /// on disk (a dirty page is not dropped, only queued for writeback).
    ///
    /// Advice only: a failure leaves the pages cached and is logged.
    pub(crate) fn after_sync(&mut self, file: &File, synced: u64) {
        let end = synced / PAGE * PAGE;
        if end < self.up_to.saturating_add(DROP_STEP) {
            return;
        }
        self.drop_range(file, end);
    }

    /// Drops every cached page of `file` before `synced`, however few (a file written for the
    /// last time).
    pub(crate) fn all(&mut self, file: &File, synced: u64) {
        self.drop_range(file, synced.next_multiple_of(PAGE));
    }

    fn drop_range(&mut self, file: &File, end: u64) {
        let Some(len) = NonZeroU64::new(end.saturating_sub(self.up_to)) else { return };
        let advice = rustix::fs::Advice::DontNeed;
        if let Err(error) = rustix::fs::fadvise(file, self.up_to, Some(len), advice) {
            tracing::debug!(%error, "dropping a file's synced pages from the page cache failed");
        }
        self.up_to = end;
    }
}

#[cfg(test)]
mod tests {
    use super::{Dropped, DROP_STEP, PAGE};
    use std::io::Write;

    /// Drops wait for a step's worth of bytes, end on a page, and move on from where the last
    /// ended; the file's bytes read back the same.
    #[test]
    fn drops_go_a_step_at_a_time_by_whole_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut file = std::fs::File::create(&path).unwrap();
        let bytes: Vec<u8> = (0..DROP_STEP * 3).map(|i| (i % 251) as u8).collect();
        file.write_all(&bytes).unwrap();
        file.sync_data().unwrap();
        let mut dropped = Dropped::default();
        dropped.after_sync(&file, DROP_STEP - 1);
        assert_eq!(dropped.up_to, 0, "less than a step");
        dropped.after_sync(&file, DROP_STEP + 100);
        assert_eq!(dropped.up_to, DROP_STEP);
        dropped.after_sync(&file, DROP_STEP * 2 - 1);
        assert_eq!(dropped.up_to, DROP_STEP, "less than a step since the last drop");
        dropped.all(&file, DROP_STEP * 2 + 1);
        assert_eq!(dropped.up_to, DROP_STEP * 2 + PAGE);
        dropped.all(&file, DROP_STEP * 2 + 1);
        assert_eq!(dropped.up_to, DROP_STEP * 2 + PAGE, "nothing new to drop");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}
