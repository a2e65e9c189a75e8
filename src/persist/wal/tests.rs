//! Tests of the write-ahead log: round trips, group commit, and recovery from every kind of damage.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::frame::{self, HEADER_LEN};
use super::*;

/// Every test payload has this length, so record offsets are easy to compute.
const PAYLOAD_LEN: usize = 30;
const RECORD_LEN: u64 = (HEADER_LEN + PAYLOAD_LEN) as u64;

fn payload(i: u64) -> Vec<u8> {
    format!("{:0>width$}", format!("record-{i}"), width = PAYLOAD_LEN).into_bytes()
}

/// Options that put `per_segment` test records in each segment.
fn options(per_segment: u64) -> WalOptions {
    WalOptions { segment_size: per_segment * RECORD_LEN, ..WalOptions::default() }
}

fn open(dir: &Path, options: WalOptions) -> (WalHandle, Recovered) {
    Wal::open(dir, options).expect("open WAL")
}

/// Appends `payload(i)` for every `i` in `range`, waits until all are durable, returns the LSNs.
fn append_durably(wal: &WalHandle, range: std::ops::RangeInclusive<u64>) -> Vec<u64> {
    let appended: Vec<Appended> = range.map(|i| wal.append(payload(i)).expect("append")).collect();
    appended
        .into_iter()
        .map(|a| {
            a.durable.wait().expect("durable");
            a.lsn
        })
        .collect()
}

/// A closed log in `dir` holding records 1..=count.
fn write_log(dir: &Path, per_segment: u64, count: u64) {
    let (wal, _) = open(dir, options(per_segment));
    assert_eq!(append_durably(&wal, 1..=count), (1..=count).collect::<Vec<_>>());
    wal.shutdown().expect("shutdown");
}

fn expected_records(range: std::ops::RangeInclusive<u64>) -> Vec<(u64, Vec<u8>)> {
    range.map(|i| (i, payload(i))).collect()
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    frame::list_segments(dir).expect("list segments").into_iter().map(|(_, path)| path).collect()
}

fn copy_log(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().expect("tempdir");
    for path in segments(from) {
        let name = path.file_name().expect("segment has a name");
        fs::copy(&path, to.path().join(name)).expect("copy segment");
    }
    to
}

fn set_len(path: &Path, len: u64) {
    let file = OpenOptions::new().write(true).open(path).expect("open");
    file.set_len(len).expect("set_len");
}

fn xor_byte(path: &Path, offset: u64, mask: u8) {
    let mut bytes = fs::read(path).expect("read");
    bytes[usize::try_from(offset).expect("small offset")] ^= mask;
    fs::write(path, bytes).expect("write");
}

/// Reopens a damaged copy and checks: records 1..=kept come back, damage is reported at `offset`
/// of `segment` iff `damaged`, and new appends continue at kept + 1 and survive a reopen.
fn check_recovery(dir: &Path, kept: u64, damaged: bool, segment: &Path, offset: u64) {
    let (wal, recovered) = open(dir, options(2));
    assert_eq!(recovered.records.to_vec(), expected_records(1..=kept));
    match &recovered.dropped_tail {
        Some(damage) => {
            assert!(damaged, "unexpected damage report {damage:?}");
            assert_eq!(damage.segment.file_name(), segment.file_name());
            assert_eq!(damage.offset, offset);
        }
        None => assert!(!damaged, "damage was not reported"),
    }
    assert_eq!(wal.last_lsn(), kept);
    assert_eq!(append_durably(&wal, kept + 1..=kept + 2), vec![kept + 1, kept + 2]);
    wal.shutdown().expect("shutdown");
    let (wal, recovered) = open(dir, options(2));
    assert_eq!(recovered.records.to_vec(), expected_records(1..=kept + 2));
    assert_eq!(recovered.dropped_tail, None);
    wal.shutdown().expect("shutdown");
}

#[test]
fn round_trip_across_segments() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 3, 20);
    let names: Vec<_> = segments(dir.path())
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 7);
    assert_eq!(names[0], "wal-00000000000000000001.log");
    assert_eq!(names[1], "wal-00000000000000000004.log");
    assert_eq!(names[6], "wal-00000000000000000019.log");

    let (wal, recovered) = open(dir.path(), options(3));
    assert_eq!(recovered.records.to_vec(), expected_records(1..=20));
    assert_eq!(recovered.dropped_tail, None);
    assert_eq!(wal.last_lsn(), 20);
    assert_eq!(wal.stats().durable_lsn, 20);
    assert_eq!(append_durably(&wal, 21..=22), vec![21, 22]);
    wal.shutdown().expect("shutdown");
    let (_wal, recovered) = open(dir.path(), options(3));
    assert_eq!(recovered.records.to_vec(), expected_records(1..=22));
}

#[test]
fn empty_log_starts_at_lsn_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, recovered) = open(&dir.path().join("fresh"), WalOptions::default());
    assert!(recovered.records.is_empty());
    assert_eq!(wal.last_lsn(), 0);
    assert_eq!(wal.append(Vec::new()).expect("append").lsn, 1);
    wal.shutdown().expect("shutdown");
}

#[test]
fn group_commit_batches_concurrent_appends() {
    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 250;
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, _) = open(dir.path(), WalOptions::default());
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let wal = wal.clone();
            scope.spawn(move || {
                let pending: Vec<Appended> = (0..PER_THREAD)
                    .map(|i| wal.append(format!("t{t}-{i}").into_bytes()).expect("append"))
                    .collect();
                assert!(pending.windows(2).all(|w| w[0].lsn < w[1].lsn));
                for appended in pending {
                    appended.durable.wait().expect("every waiter resolves");
                }
            });
        }
    });
    let total = THREADS * PER_THREAD;
    let stats = wal.stats();
    assert_eq!(stats.records, total);
    assert_eq!(stats.durable_lsn, total);
    assert!(stats.syncs < total, "no batching: {stats:?}");
    assert!(stats.max_sync_micros >= stats.avg_sync_micros);
    wal.shutdown().expect("shutdown");

    let (_wal, recovered) = open(dir.path(), WalOptions::default());
    let lsns: Vec<u64> = recovered.records.to_vec().iter().map(|(lsn, _)| *lsn).collect();
    assert_eq!(lsns, (1..=total).collect::<Vec<_>>());
    for t in 0..THREADS {
        let prefix = format!("t{t}-");
        let own: Vec<u64> = recovered
            .records
            .to_vec()
            .iter()
            .filter_map(|(_, p)| std::str::from_utf8(p).ok()?.strip_prefix(&prefix)?.parse().ok())
            .collect();
        assert_eq!(own, (0..PER_THREAD).collect::<Vec<_>>(), "thread {t} in call order");
    }
}

#[test]
fn group_commit_batches_writers_that_wait_for_each_write() {
    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 40;
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, _) = open(dir.path(), WalOptions::default());
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let wal = wal.clone();
            scope.spawn(move || {
                for i in 0..PER_THREAD {
                    let appended = wal.append(payload(t * 1000 + i)).expect("append");
                    appended.durable.wait().expect("durable");
                    assert!(wal.stats().durable_lsn >= appended.lsn);
                }
            });
        }
    });
    let stats = wal.stats();
    assert_eq!(stats.records, THREADS * PER_THREAD);
    assert!(stats.syncs < stats.records, "no batching: {stats:?}");
    wal.shutdown().expect("shutdown");
}

#[tokio::test]
async fn durable_and_sync_now_are_futures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, _) = open(dir.path(), WalOptions::default());
    let first = wal.append(b"one".to_vec()).expect("append");
    let second = wal.append(b"two".to_vec()).expect("append");
    assert_eq!((first.lsn, second.lsn), (1, 2));
    second.durable.await.expect("durable");
    wal.sync_now().expect("barrier").await.expect("synced");
    assert_eq!(wal.stats().durable_lsn, 2);
    first.durable.await.expect("earlier record is durable too");
    wal.shutdown().expect("shutdown");
}

#[test]
fn truncating_the_last_record_at_every_offset() {
    let template = tempfile::tempdir().expect("tempdir");
    write_log(template.path(), 2, 5);
    let last = segments(template.path()).pop().expect("a segment");
    assert_eq!(fs::metadata(&last).expect("stat").len(), RECORD_LEN);
    for cut in 0..RECORD_LEN {
        let dir = copy_log(template.path());
        let segment = dir.path().join(last.file_name().expect("name"));
        set_len(&segment, cut);
        check_recovery(dir.path(), 4, cut > 0, &segment, 0);
        assert!(fs::metadata(&segment).is_ok(), "cut {cut}");
    }
}

#[test]
fn flipping_any_bit_of_the_last_record() {
    let template = tempfile::tempdir().expect("tempdir");
    write_log(template.path(), 3, 6);
    let last = segments(template.path()).pop().expect("a segment");
    let start = 2 * RECORD_LEN;
    for bit in 0..RECORD_LEN * 8 {
        let dir = copy_log(template.path());
        let segment = dir.path().join(last.file_name().expect("name"));
        xor_byte(&segment, start + bit / 8, 1 << (bit % 8));
        check_recovery(dir.path(), 5, true, &segment, start);
    }
}

/// The records a reopened log passes, as (LSN, payload).
fn records_of(recovered: &Recovered) -> Vec<(u64, Vec<u8>)> {
    recovered.records.to_vec()
}

/// Records `range` without those in `lost`.
fn expected_without(range: std::ops::RangeInclusive<u64>, lost: &[u64]) -> Vec<(u64, Vec<u8>)> {
    expected_records(range).into_iter().filter(|(lsn, _)| !lost.contains(lsn)).collect()
}

#[test]
fn a_corrupt_record_in_an_older_segment_is_skipped_and_the_records_after_it_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 3, 12);
    let all = segments(dir.path());
    assert_eq!(all.len(), 4);
    // Record 5 sits in the middle of the second segment (records 4, 5, 6).
    xor_byte(&all[1], RECORD_LEN + HEADER_LEN as u64 + 3, 0x40);
    let (wal, recovered) = open(dir.path(), options(3));
    assert_eq!(records_of(&recovered), expected_without(1..=12, &[5]));
    assert_eq!(recovered.dropped_tail, None);
    let [gap] = recovered.gaps.as_slice() else { panic!("one gap: {:?}", recovered.gaps) };
    assert_eq!(
        (gap.segment.as_path(), gap.offset, gap.lsns.clone()),
        (all[1].as_path(), RECORD_LEN, 5..6)
    );
    assert!(gap.reason.contains("crc mismatch"), "{}", gap.reason);
    assert_eq!(segments(dir.path()), all, "no segment deleted");
    assert_eq!(wal.last_lsn(), 12);
    assert_eq!(append_durably(&wal, 13..=14), vec![13, 14]);
    wal.shutdown().expect("shutdown");
    let (_wal, recovered) = open(dir.path(), options(3));
    assert_eq!(records_of(&recovered), expected_without(1..=14, &[5]));
    assert_eq!(recovered.gaps.len(), 1, "the same gap, found again");
}

#[test]
fn damage_running_to_the_end_of_an_older_segment_is_a_gap_up_to_the_next_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 3, 9);
    let all = segments(dir.path());
    // Records 5 and 6 (the second segment's last two) zeroed.
    let mut bytes = fs::read(&all[1]).expect("read");
    bytes[RECORD_LEN as usize..].fill(0);
    fs::write(&all[1], bytes).expect("write");
    let (wal, recovered) = open(dir.path(), options(3));
    assert_eq!(records_of(&recovered), expected_without(1..=9, &[5, 6]));
    let [gap] = recovered.gaps.as_slice() else { panic!("one gap: {:?}", recovered.gaps) };
    assert_eq!(
        (gap.segment.as_path(), gap.offset, gap.lsns.clone()),
        (all[1].as_path(), RECORD_LEN, 5..7)
    );
    assert_eq!(recovered.dropped_tail, None);
    assert_eq!(append_durably(&wal, 10..=10), vec![10]);
    wal.shutdown().expect("shutdown");
}

#[test]
fn a_missing_segment_is_a_gap_and_the_later_ones_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 3, 12);
    let all = segments(dir.path());
    fs::remove_file(&all[1]).expect("remove");
    let (wal, recovered) = open(dir.path(), options(3));
    assert_eq!(records_of(&recovered), expected_without(1..=12, &[4, 5, 6]));
    let [gap] = recovered.gaps.as_slice() else { panic!("one gap: {:?}", recovered.gaps) };
    assert_eq!((gap.segment.as_path(), gap.lsns.clone()), (all[2].as_path(), 4..7));
    assert_eq!(recovered.dropped_tail, None);
    assert_eq!(append_durably(&wal, 13..=13), vec![13]);
    wal.shutdown().expect("shutdown");
    let (_wal, recovered) = open(dir.path(), options(3));
    assert_eq!(records_of(&recovered), expected_without(1..=13, &[4, 5, 6]));
}

#[test]
fn damage_in_the_middle_of_the_last_segment_skips_only_what_it_hit() {
    let template = tempfile::tempdir().expect("tempdir");
    write_log(template.path(), 10, 8);
    let last = segments(template.path()).pop().expect("a segment");
    // Every single bit of record 4: its length, checksum, LSN or payload.
    for bit in 0..RECORD_LEN * 8 {
        let dir = copy_log(template.path());
        let segment = dir.path().join(last.file_name().expect("name"));
        xor_byte(&segment, 3 * RECORD_LEN + bit / 8, 1 << (bit % 8));
        let (wal, recovered) = open(dir.path(), options(10));
        let in_lsn_field = (8 * 8..16 * 8).contains(&bit);
        let lost: &[u64] = if in_lsn_field { &[] } else { &[4] };
        assert_eq!(records_of(&recovered), expected_without(1..=8, lost), "bit {bit}");
        assert_eq!(recovered.gaps.len(), lost.len(), "bit {bit}: {:?}", recovered.gaps);
        assert_eq!(recovered.dropped_tail, None, "bit {bit}");
        assert_eq!(append_durably(&wal, 9..=9), vec![9], "bit {bit}");
        wal.shutdown().expect("shutdown");
        let (_wal, recovered) = open(dir.path(), options(10));
        assert_eq!(records_of(&recovered), expected_without(1..=9, lost), "bit {bit}");
    }
}

#[test]
fn junk_spliced_into_the_middle_of_a_segment_is_stepped_over() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 10, 6);
    let last = segments(dir.path()).pop().expect("a segment");
    let mut bytes = fs::read(&last).expect("read");
    let at = 2 * RECORD_LEN as usize;
    bytes.splice(at..at, [0xa5u8; 37]);
    fs::write(&last, bytes).expect("write");
    let (_wal, recovered) = open(dir.path(), options(10));
    // Nothing was lost: the junk held no record, and record 3 follows it.
    assert_eq!(records_of(&recovered), expected_records(1..=6));
    let [gap] = recovered.gaps.as_slice() else { panic!("one gap: {:?}", recovered.gaps) };
    assert!(gap.lsns.is_empty(), "{gap:?}");
}

#[test]
fn remove_segments_below_keeps_everything_at_or_above() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 3, 30);
    let (wal, _) = open(dir.path(), options(3));
    // Segments start at 1, 4, 7, 10, 13, ...; LSN 14 lives in the segment starting at 13.
    assert_eq!(wal.remove_segments_below(14).expect("remove"), 4);
    assert_eq!(wal.remove_segments_below(14).expect("remove again"), 0);
    wal.shutdown().expect("shutdown");
    let (wal, recovered) = open(dir.path(), options(3));
    assert_eq!(recovered.records.to_vec(), expected_records(13..=30));

    assert_eq!(wal.remove_segments_below(u64::MAX).expect("remove"), 5);
    assert_eq!(segments(dir.path()).len(), 1, "the active segment stays");
    assert_eq!(append_durably(&wal, 31..=31), vec![31]);
    wal.shutdown().expect("shutdown");
    let (_wal, recovered) = open(dir.path(), options(3));
    assert_eq!(recovered.records.to_vec(), expected_records(28..=31));
}

/// `payload(i)` appended as a deferred payload: written by the writer thread.
fn deferred(i: u64) -> (usize, WritePayload) {
    (PAYLOAD_LEN, Box::new(move |out: &mut Vec<u8>| out.extend_from_slice(&payload(i))))
}

#[test]
fn deferred_payloads_are_framed_as_the_bytes_would_be_in_their_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, _) = open(dir.path(), options(3));
    // Bytes and deferred payloads interleaved, across segments.
    let appended: Vec<Appended> = (1..=10)
        .map(|i| match i % 3 {
            0 => wal.append(payload(i)),
            _ => {
                let (len, write) = deferred(i);
                wal.append_deferred(len, write)
            }
        })
        .map(|a| a.expect("append"))
        .collect();
    for a in appended {
        a.durable.wait().expect("durable");
    }
    wal.shutdown().expect("shutdown");
    let bytes_log = tempfile::tempdir().expect("tempdir");
    write_log(bytes_log.path(), 3, 10);
    for (ours, theirs) in segments(dir.path()).iter().zip(segments(bytes_log.path())) {
        assert_eq!(fs::read(ours).expect("read"), fs::read(theirs).expect("read"));
    }
    let (_wal, recovered) = open(dir.path(), options(3));
    assert_eq!(recovered.records.to_vec(), expected_records(1..=10));
    // Refused as `append` refuses: too long, or once shut down.
    let small = tempfile::tempdir().expect("tempdir");
    let (wal, _) = open(small.path(), WalOptions { max_record_len: 8, ..WalOptions::default() });
    let refused = wal.append_deferred(9, Box::new(|out: &mut Vec<u8>| out.extend([0; 9])));
    assert!(matches!(refused, Err(WalError::RecordTooLarge { len: 9, max: 8 })));
    wal.shutdown().expect("shutdown");
    let closed = wal.append_deferred(1, Box::new(|out: &mut Vec<u8>| out.push(1)));
    assert!(matches!(closed, Err(WalError::Closed)));
}

#[test]
fn second_open_of_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, _) = open(dir.path(), WalOptions::default());
    assert!(matches!(Wal::open(dir.path(), WalOptions::default()), Err(WalError::Locked(_))));
    wal.shutdown().expect("shutdown");
    let (_wal, _) = open(dir.path(), WalOptions::default());
}

#[test]
fn appends_after_shutdown_and_oversized_records_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = WalOptions { max_record_len: 8, ..WalOptions::default() };
    let (wal, _) = open(dir.path(), small);
    assert!(matches!(wal.append(vec![0; 9]), Err(WalError::RecordTooLarge { len: 9, max: 8 })));
    assert_eq!(wal.append(vec![0; 8]).expect("fits").lsn, 1);
    wal.shutdown().expect("shutdown");
    assert!(matches!(wal.append(vec![1]), Err(WalError::Closed)));
    assert!(matches!(wal.sync_now(), Err(WalError::Closed)));
    wal.shutdown().expect("second shutdown is a no-op");
    assert!(matches!(
        Wal::open(dir.path(), WalOptions { segment_size: 0, ..WalOptions::default() }),
        Err(WalError::InvalidOptions(_))
    ));
}

#[test]
fn dropping_the_last_handle_does_not_block_and_keeps_queued_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, _) = open(dir.path(), WalOptions::default());
    for i in 1..=100 {
        drop(wal.append(payload(i)).expect("append"));
    }
    drop(wal);
    let deadline = Instant::now() + Duration::from_secs(10);
    let recovered = loop {
        match Wal::open(dir.path(), WalOptions::default()) {
            Ok((_wal, recovered)) => break recovered,
            Err(WalError::Locked(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("reopen failed: {e}"),
        }
    };
    assert_eq!(recovered.records.to_vec(), expected_records(1..=100));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn garbage_after_valid_records_is_dropped(garbage in proptest::collection::vec(any::<u8>(), 1..200)) {
        let dir = tempfile::tempdir().expect("tempdir");
        write_log(dir.path(), 2, 4);
        let last = segments(dir.path()).pop().expect("a segment");
        let mut bytes = fs::read(&last).expect("read");
        bytes.extend_from_slice(&garbage);
        fs::write(&last, bytes).expect("write");
        check_recovery(dir.path(), 4, true, &last, 2 * RECORD_LEN);
    }

    #[test]
    fn overwriting_bytes_of_the_last_record_drops_only_it(
        edits in proptest::collection::vec((0..RECORD_LEN, 1..=255u8), 1..6),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        write_log(dir.path(), 2, 3);
        let last = segments(dir.path()).pop().expect("a segment");
        for (offset, mask) in edits.iter().copied() {
            xor_byte(&last, offset, mask);
        }
        let untouched = fs::read(&last).expect("read") == {
            let (_, tail) = expected_records(3..=3).remove(0);
            let mut framed = Vec::new();
            frame::encode_record(&mut framed, 3, &tail);
            framed
        };
        check_recovery(dir.path(), if untouched { 3 } else { 2 }, !untouched, &last, 0);
    }

    #[test]
    fn arbitrary_segment_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(frame::segment_file_name(1)), &bytes).expect("write");
        let (wal, recovered) = open(dir.path(), WalOptions::default());
        let next = recovered.records.len() as u64 + 1;
        prop_assert_eq!(wal.append(b"after".to_vec()).expect("append").lsn, next);
        wal.shutdown().expect("shutdown");
    }
}

#[test]
fn handles_can_be_shared_across_threads() {
    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
    fn assert_sendable<T: Send + 'static>() {}
    assert_shareable::<WalHandle>();
    assert_sendable::<Durable>();
    assert_sendable::<Appended>();
}

/// A pass after a position skips the segments that end before it, and a pass over marked
/// records reads only the segments holding one: deleting every other segment file after the
/// open scan leaves both passes whole, while a full pass fails on the missing files.
#[test]
fn passes_skip_segments_below_their_floor_or_without_a_marked_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 4, 20);
    fn ninth(bytes: &[u8]) -> bool {
        bytes == payload(9).as_slice()
    }
    let marked = WalOptions { marked: ninth, ..options(4) };
    let (wal, recovered) = open(dir.path(), marked);
    let all = segments(dir.path());
    assert_eq!(all.len(), 5, "4 records a segment");
    type Pass<'a> = &'a dyn Fn(&mut dyn FnMut(u64, &[u8])) -> Result<(), WalError>;
    let passed = |read: Pass<'_>| {
        let mut seen = Vec::new();
        read(&mut |lsn, bytes| seen.push((lsn, bytes.to_vec()))).map(|()| seen)
    };
    fs::remove_file(&all[0]).expect("remove the first segment");
    let after = passed(&|each| recovered.records.for_each_after(6, each)).expect("reads");
    assert_eq!(after, expected_records(7..=20));
    assert!(passed(&|each| recovered.records.for_each(each)).is_err(), "a full pass reads it");
    fs::remove_file(&all[1]).expect("remove the second segment");
    fs::remove_file(&all[3]).expect("remove the fourth segment");
    let marked = passed(&|each| recovered.records.for_each_marked_after(9, each)).expect("reads");
    assert_eq!(marked, expected_records(10..=12), "the rest of the ninth record's segment");
    wal.shutdown().expect("shutdown");
}

#[test]
fn a_floor_holds_the_segments_only_it_keeps() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_log(dir.path(), 3, 10);
    let (wal, _) = open(dir.path(), options(3));
    // Segments start at 1, 4, 7 and 10: a floor at 3 keeps the first (records 1 to 3 are not
    // all below it) and every later one; one at the end keeps only the newest.
    assert_eq!(wal.bytes_held_by_floor(0).expect("held"), 9 * RECORD_LEN);
    assert_eq!(wal.bytes_held_by_floor(3).expect("held"), 9 * RECORD_LEN);
    assert_eq!(wal.bytes_held_by_floor(4).expect("held"), 6 * RECORD_LEN);
    assert_eq!(wal.bytes_held_by_floor(9).expect("held"), 3 * RECORD_LEN);
    assert_eq!(wal.bytes_held_by_floor(10).expect("held"), 0, "the newest always stays");
    assert_eq!(wal.remove_segments_below(4).expect("remove"), 1);
    assert_eq!(wal.bytes_held_by_floor(0).expect("held"), 6 * RECORD_LEN);
}
