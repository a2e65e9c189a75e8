//! On-disk layout of the write-ahead log: how one record is framed and how a segment file is named.
//!
//! Owns the byte format only (encode, decode, file names, directory listing and directory fsync).
//! It must not decide policy: what to do with a damaged record is up to `recovery`, when to roll a
//! segment is up to `writer`.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Bytes before the payload: u32 LE length, u32 LE crc32c, u64 LE LSN.
pub(super) const HEADER_LEN: usize = 16;

const SEGMENT_PREFIX: &str = "wal-";
const SEGMENT_SUFFIX: &str = ".log";
const SEGMENT_DIGITS: usize = 20;

/// Why recovery stopped reading a segment before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DamageReason {
    /// Fewer than the 16 header bytes remain in the file.
    ShortHeader {
        /// Bytes left in the file at the record's offset.
        available: usize,
    },
    /// The length field exceeds `WalOptions::max_record_len`.
    LengthTooLarge {
        /// The length found in the header.
        len: u32,
        /// The configured limit.
        max: u32,
    },
    /// The length field points past the end of the file.
    LengthBeyondEnd {
        /// The length found in the header.
        len: u32,
        /// Payload bytes actually left in the file.
        available: usize,
    },
    /// The checksum over length and payload does not match.
    CrcMismatch {
        /// Checksum stored in the header.
        stored: u32,
        /// Checksum computed from the bytes read.
        computed: u32,
    },
    /// The record is intact but does not carry the next LSN.
    UnexpectedLsn {
        /// The LSN that should come next.
        expected: u64,
        /// The LSN found in the header.
        found: u64,
    },
    /// A segment's file name does not continue the LSN sequence of the segment before it.
    SegmentOutOfSequence {
        /// The first LSN the segment should start with.
        expected: u64,
        /// The first LSN its file name claims.
        found: u64,
    },
}

impl fmt::Display for DamageReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShortHeader { available } => {
                write!(f, "short record header ({available} of {HEADER_LEN} bytes)")
            }
            Self::LengthTooLarge { len, max } => {
                write!(f, "record length {len} exceeds the limit {max}")
            }
            Self::LengthBeyondEnd { len, available } => {
                write!(f, "record length {len} runs past end of file ({available} bytes left)")
            }
            Self::CrcMismatch { stored, computed } => {
                write!(f, "crc mismatch (stored {stored:#010x}, computed {computed:#010x})")
            }
            Self::UnexpectedLsn { expected, found } => {
                write!(f, "record has LSN {found}, expected {expected}")
            }
            Self::SegmentOutOfSequence { expected, found } => {
                write!(f, "segment starts at LSN {found}, expected {expected}")
            }
        }
    }
}

/// What `decode_record` found at an offset.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Decoded<'a> {
    /// A valid record; the next one starts at `next`.
    Record { lsn: u64, payload: &'a [u8], next: usize },
    /// The offset is exactly the end of the buffer.
    End,
    /// The bytes at the offset are not a valid next record.
    Damaged(DamageReason),
}

/// Appends one framed record to `out`. The caller has checked the payload fits in a u32.
pub(super) fn encode_record(out: &mut Vec<u8>, lsn: u64, payload: &[u8]) {
    encode_record_with(out, lsn, payload.len(), |out| out.extend_from_slice(payload));
}

/// Appends one framed record whose payload `write` appends to `out` (for a deferred payload,
/// written here on the writer thread rather than by whoever appended it). Its header holds
/// the length `write` wrote; `len` is the length the append declared and was checked for
/// (they agree, and a debug build asserts it). The payload must fit in a u32.
pub(super) fn encode_record_with(
    out: &mut Vec<u8>,
    lsn: u64,
    len: usize,
    write: impl FnOnce(&mut Vec<u8>),
) {
    out.reserve(HEADER_LEN + len);
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    write(out);
    let payload = &out[start + HEADER_LEN..];
    debug_assert_eq!(payload.len(), len, "a deferred payload is as long as it was declared");
    let len = u32::try_from(payload.len())
        .expect("WalHandle::append rejects payloads longer than max_record_len (a u32)");
    let len_bytes = len.to_le_bytes();
    let crc = record_crc(&len_bytes, payload).to_le_bytes();
    let header = &mut out[start..start + HEADER_LEN];
    header[..4].copy_from_slice(&len_bytes);
    header[4..8].copy_from_slice(&crc);
    header[8..].copy_from_slice(&lsn.to_le_bytes());
}

/// Decodes the record at `offset`, expecting it to carry `expected_lsn`. Never panics.
pub(super) fn decode_record(
    buf: &[u8],
    offset: usize,
    expected_lsn: u64,
    max_len: u32,
) -> Decoded<'_> {
    let rest = buf.get(offset..).unwrap_or_default();
    if rest.is_empty() {
        return Decoded::End;
    }
    let Some((header, body)) = rest.split_first_chunk::<HEADER_LEN>() else {
        return Decoded::Damaged(DamageReason::ShortHeader { available: rest.len() });
    };
    let len_bytes = field::<4>(header, 0);
    let len = u32::from_le_bytes(len_bytes);
    if len > max_len {
        return Decoded::Damaged(DamageReason::LengthTooLarge { len, max: max_len });
    }
    let Some(payload) = body.get(..len as usize) else {
        let available = body.len();
        return Decoded::Damaged(DamageReason::LengthBeyondEnd { len, available });
    };
    let stored = u32::from_le_bytes(field(header, 4));
    let computed = record_crc(&len_bytes, payload);
    if stored != computed {
        return Decoded::Damaged(DamageReason::CrcMismatch { stored, computed });
    }
    let lsn = u64::from_le_bytes(field(header, 8));
    if lsn != expected_lsn {
        let expected = expected_lsn;
        return Decoded::Damaged(DamageReason::UnexpectedLsn { expected, found: lsn });
    }
    let next = offset + HEADER_LEN + payload.len();
    Decoded::Record { lsn, payload, next }
}

/// The `N` header bytes starting at `at` (constant offsets inside the fixed-size header).
fn field<const N: usize>(header: &[u8; HEADER_LEN], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&header[at..at + N]);
    out
}

fn record_crc(len_bytes: &[u8; 4], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(len_bytes), payload)
}

/// `wal-<first lsn, 20 digits>.log`.
pub(super) fn segment_file_name(first_lsn: u64) -> String {
    format!("{SEGMENT_PREFIX}{first_lsn:0width$}{SEGMENT_SUFFIX}", width = SEGMENT_DIGITS)
}

/// The first LSN encoded in a segment file name, or `None` for any other file (LSN 0 is invalid).
pub(super) fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(SEGMENT_PREFIX)?.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != SEGMENT_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|lsn| *lsn > 0)
}

/// Every segment in `dir` as `(first lsn, path)`, ordered by first LSN.
pub(super) fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut segments = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if let Some(first) = name.to_str().and_then(parse_segment_file_name) {
            segments.push((first, entry.path()));
        }
    }
    segments.sort_unstable_by_key(|(first, _)| *first);
    Ok(segments)
}

/// Makes creations, renames and removals of entries in `dir` durable.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_round_trip_and_reject_strangers() {
        let name = segment_file_name(42);
        assert_eq!(name, "wal-00000000000000000042.log");
        assert_eq!(parse_segment_file_name(&name), Some(42));
        for bad in [
            "LOCK",
            "wal-42.log",
            "wal-00000000000000000000.log",
            "wal-0000000000000000004x.log",
            "wal-00000000000000000042.log.tmp",
            "wal-+0000000000000000042.log",
        ] {
            assert_eq!(parse_segment_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn decode_reads_back_what_encode_wrote() {
        let mut buf = Vec::new();
        encode_record(&mut buf, 7, b"hello");
        encode_record(&mut buf, 8, b"");
        let Decoded::Record { lsn, payload, next } = decode_record(&buf, 0, 7, 1024) else {
            panic!("first record must decode");
        };
        assert_eq!((lsn, payload), (7, &b"hello"[..]));
        let Decoded::Record { lsn, payload, next } = decode_record(&buf, next, 8, 1024) else {
            panic!("second record must decode");
        };
        assert_eq!((lsn, payload), (8, &b""[..]));
        assert_eq!(decode_record(&buf, next, 9, 1024), Decoded::End);
    }

    #[test]
    fn decode_reports_each_kind_of_damage() {
        let mut buf = Vec::new();
        encode_record(&mut buf, 1, b"abc");
        let damaged = |d: Decoded<'_>| match d {
            Decoded::Damaged(reason) => reason,
            other => panic!("expected damage, got {other:?}"),
        };
        assert!(matches!(
            damaged(decode_record(&buf[..5], 0, 1, 1024)),
            DamageReason::ShortHeader { available: 5 }
        ));
        assert!(matches!(
            damaged(decode_record(&buf, 0, 1, 2)),
            DamageReason::LengthTooLarge { len: 3, max: 2 }
        ));
        assert!(matches!(
            damaged(decode_record(&buf[..18], 0, 1, 1024)),
            DamageReason::LengthBeyondEnd { len: 3, available: 2 }
        ));
        assert!(matches!(
            damaged(decode_record(&buf, 0, 2, 1024)),
            DamageReason::UnexpectedLsn { expected: 2, found: 1 }
        ));
        let mut flipped = buf.clone();
        flipped[HEADER_LEN] ^= 1;
        assert!(matches!(
            damaged(decode_record(&flipped, 0, 1, 1024)),
            DamageReason::CrcMismatch { .. }
        ));
    }
}
