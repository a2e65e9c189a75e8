//! The file work of the store that has to be gentle with the disk the WAL shares: an image
//! written with a sync every MiB and a pause after each (`PayloadWriter`), an old one removed in
//! steps (`remove_gently`), a payload's checksum read back, a directory synced.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use super::CHECK_BUFFER;

/// Bytes of an image written between two syncs of its file.
///
/// A whole image is a gigabyte at a million records. Left to the kernel's writeback, all of it
/// would be dirty at once when the WAL's next `fdatasync` comes, and on ext4 (ordered data) that
/// sync waits for the pile to reach the disk: every acknowledged write would stall for seconds.
/// Syncing the image as it goes keeps at most this much of it unwritten, and paces the snapshot
/// at the disk's speed.
///
/// Measured here with a writer of 800 MB images and a WAL-like writer (600 bytes and an
/// `fdatasync` every 2 ms) on the same disk: WAL syncs p90 2.2 ms while images are synced every
/// 8 MiB, 0.6 ms every 1 MiB, the images written as fast; with a pause after each sync as long
/// as it took, p90 0.4-0.5 ms and p99 4-6 ms instead of 6-12 (`MAX_PAUSE`).
pub(super) const SYNC_EVERY: u64 = 1 << 20;

/// The longest pause after one of an image's syncs (`PayloadWriter::write`), which leaves the
/// disk to the WAL's syncs about half the time. Bounded: during a bulk load the syncs are long,
/// and pauses as long as them (50 ms at most) left 1 of a 1M load's 5 snapshots written; at 2 ms,
/// 4-5 of 5.
pub(super) const MAX_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// Bytes an old image loses per step on its way out (`remove_gently`).
pub(super) const REMOVE_STEP: u64 = 32 << 20;

/// Removes a file, shortening it first a step at a time, each step synced.
///
/// Unlinking a gigabyte image frees its blocks in one ext4 journal transaction, and the WAL's
/// next `fdatasync` waits for that commit: measured here, 36 ms of stall against 7 ms in 32 MiB
/// steps, for the same 0.23 s of work. A crash halfway leaves an image whose header is intact
/// and whose payload is short: it fails its checksum and loads as damaged, and it is the oldest
/// one, only tried after every newer one.
pub(super) fn remove_gently(path: &Path) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    let mut len = file.metadata()?.len();
    while len > REMOVE_STEP {
        len -= REMOVE_STEP;
        file.set_len(len)?;
        file.sync_all()?;
    }
    drop(file);
    fs::remove_file(path)
}

/// A payload on its way to a file, with its length and crc32c so far, and the bytes written
/// since the file was last synced.
pub(super) struct PayloadWriter {
    pub(super) file: BufWriter<File>,
    pub(super) crc: u32,
    pub(super) len: u64,
    pub(super) unsynced: u64,
}

impl Write for PayloadWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.len += n as u64;
        self.unsynced += n as u64;
        if self.unsynced >= SYNC_EVERY {
            self.file.flush()?;
            let started = std::time::Instant::now();
            self.file.get_ref().sync_data()?;
            self.unsynced = 0;
            std::thread::sleep(started.elapsed().min(MAX_PAUSE));
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The crc32c of `len` bytes of `file` from `start`, read in pieces of `CHECK_BUFFER` on up to
/// one thread per core (payloads of a few MiB on this one), the shares' checksums combined;
/// `None` when the file ends early.
pub(super) fn payload_crc(file: &File, start: u64, len: u64) -> io::Result<Option<u32>> {
    use std::os::unix::fs::FileExt;
    let share_crc = |from: u64, len: u64| -> io::Result<Option<u32>> {
        let mut buffer = vec![0u8; CHECK_BUFFER.min(usize::try_from(len).unwrap_or(CHECK_BUFFER))];
        let (mut crc, mut done) = (0u32, 0u64);
        while done < len {
            let want = usize::try_from((len - done).min(buffer.len() as u64)).unwrap_or(0);
            let read = file.read_at(&mut buffer[..want], from + done)?;
            if read == 0 {
                return Ok(None);
            }
            crc = crc32c::crc32c_append(crc, &buffer[..read]);
            done += read as u64;
        }
        Ok(Some(crc))
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let shares = cores.min(len / (4 * CHECK_BUFFER as u64)).max(1);
    if shares == 1 {
        return share_crc(start, len);
    }
    let per = len.div_ceil(shares);
    let ranges: Vec<(u64, u64)> =
        (0..shares).map(|k| (k * per, per.min(len.saturating_sub(k * per)))).collect();
    let crcs: Vec<io::Result<Option<u32>>> = std::thread::scope(|scope| {
        let others: Vec<_> = ranges[1..]
            .iter()
            .map(|&(from, len)| scope.spawn(move || share_crc(start + from, len)))
            .collect();
        let mut crcs = vec![share_crc(start + ranges[0].0, ranges[0].1)];
        for other in others {
            crcs.push(
                other
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("a checksum thread panicked"))),
            );
        }
        crcs
    });
    let mut whole = 0u32;
    for (crc, &(_, len)) in crcs.into_iter().zip(&ranges) {
        let Some(crc) = crc? else { return Ok(None) };
        whole = crc32c::crc32c_combine(whole, crc, usize::try_from(len).unwrap_or(usize::MAX));
    }
    Ok(Some(whole))
}

/// Reads until `buf` is full or the file ends; returns how many bytes were read.
pub(super) fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
