//! What one WAL record holds: a batch of ops of one branch, applied together, or one
//! catalogue change set. Encoded with bincode; a record that does not decode is reported and
//! skipped by recovery.
//!
//! A branch record is written in the compact layout: [`COMPACT_MARKER`], then the `WalEntry`
//! with bincode's variable-length integers (a length or an enum's tag takes one byte where the
//! original layout took four or eight: a bulk add's record is about a quarter smaller). Records
//! of the original layout (the `WalEntry` with fixed-length integers, which starts with the
//! branch id's length as a u64) still decode. A catalogue record starts with
//! [`CATALOG_MARKER`]. Both markers read as a branch id length no record can have.

use serde::{Deserialize, Serialize};

use crate::grid::ops::GridOp;

mod write;

/// The first 8 bytes of a catalogue record (as a branch id length: u64::MAX, impossible).
pub const CATALOG_MARKER: [u8; 8] = [0xff; 8];
/// The first 8 bytes of a branch record in the compact layout (as a branch id length of the
/// original layout: u64::MAX - 1, impossible).
pub const COMPACT_MARKER: [u8; 8] = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

/// The compact layout's bincode options: variable-length integers, every byte used.
fn compact() -> impl bincode::Options {
    use bincode::Options;
    bincode::DefaultOptions::new().with_varint_encoding().reject_trailing_bytes()
}

/// The ops one message applied to one branch, in order, and when they were committed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WalEntry {
    pub branch_id: String,
    pub ops: Vec<GridOp>,
    /// When the entry was committed (Unix milliseconds); 0 for entries written before times
    /// were logged. A point-in-time restore stops at the first entry after its time.
    pub time_ms: i64,
}

/// A branch record as written before entries carried their time.
#[derive(Deserialize)]
struct UntimedEntry {
    branch_id: String,
    ops: Vec<GridOp>,
}

impl WalEntry {
    /// An entry committed now.
    pub fn now(branch_id: String, ops: Vec<GridOp>) -> WalEntry {
        WalEntry { branch_id, ops, time_ms: chrono::Utc::now().timestamp_millis() }
    }

    /// The entry in the compact layout, into a buffer sized first (a bulk add's entry is
    /// most of a megabyte: growing a buffer to it copied it about once more). The records of
    /// adds and updates are written directly in bincode's layout (`write`), the rest by bincode.
    pub fn encode(&self) -> Vec<u8> {
        write::encode(self)
    }

    /// The length `encode` gives, without writing the bytes.
    pub fn encoded_len(&self) -> usize {
        write::encoded_len(self)
    }

    /// Appends what `encode` gives to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        write::encode_into(self, out)
    }

    /// Reads an entry of any layout: the compact one, or the original with or without a
    /// time (an entry written before times were logged ends where the time would start, so the
    /// timed layout fails on it and the untimed one reads it).
    pub fn decode(bytes: &[u8]) -> Result<WalEntry, bincode::Error> {
        use bincode::Options;
        if let Some(compact_bytes) = bytes.strip_prefix(&COMPACT_MARKER) {
            return compact().deserialize(compact_bytes);
        }
        bincode::deserialize(bytes).or_else(|timed_error| {
            // The untimed layout must take every byte: a timed entry cut short is not one.
            let exact =
                bincode::DefaultOptions::new().with_fixint_encoding().reject_trailing_bytes();
            let untimed: UntimedEntry = exact.deserialize(bytes).map_err(|_| timed_error)?;
            Ok(WalEntry { branch_id: untimed.branch_id, ops: untimed.ops, time_ms: 0 })
        })
    }
}

/// Any WAL record: a branch's ops, or a catalogue change set in the catalogue's own encoding
/// (`catalog::journal::decode_changes`), after the marker.
#[derive(Debug, Clone, PartialEq)]
pub enum WalRecord<'a> {
    Branch(WalEntry),
    Catalog(&'a [u8]),
}

/// The branch id a branch record names, read without decoding its ops (bincode writes the id
/// first: its length, then its bytes); `None` for a catalogue record or bytes that are not a
/// branch record's start.
pub fn branch_id_of(bytes: &[u8]) -> Option<&str> {
    let (len, rest) = match bytes.strip_prefix(&COMPACT_MARKER) {
        Some(compact_bytes) => varint(compact_bytes)?,
        None => (u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?), bytes.get(8..)?),
    };
    std::str::from_utf8(rest.get(..usize::try_from(len).ok()?)?).ok()
}

/// An unsigned integer in bincode's variable-length form (one byte below 251, else a tag
/// byte saying 2, 4 or 8 little-endian bytes follow), and the bytes after it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (&first, rest) = bytes.split_first()?;
    let width = match first {
        0..=250 => return Some((u64::from(first), rest)),
        251 => 2,
        252 => 4,
        253 => 8,
        _ => return None,
    };
    let mut le = [0u8; 8];
    le[..width].copy_from_slice(rest.get(..width)?);
    Some((u64::from_le_bytes(le), &rest[width..]))
}

/// Whether a WAL payload is a catalogue change set (`WalOptions::marked` of gridd's WAL).
pub fn is_catalog_record(bytes: &[u8]) -> bool {
    bytes.starts_with(&CATALOG_MARKER)
}

impl<'a> WalRecord<'a> {
    pub fn decode(bytes: &'a [u8]) -> Result<WalRecord<'a>, bincode::Error> {
        match bytes.strip_prefix(&CATALOG_MARKER) {
            Some(rest) => Ok(WalRecord::Catalog(rest)),
            None => WalEntry::decode(bytes).map(WalRecord::Branch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_round_trip_and_old_branch_records_still_decode() {
        let entry = WalEntry { branch_id: "b1".into(), ops: Vec::new(), time_ms: 17 };
        assert_eq!(WalRecord::decode(&entry.encode()).ok(), Some(WalRecord::Branch(entry)));
        let bytes = [&CATALOG_MARKER[..], b"changes"].concat();
        assert_eq!(WalRecord::decode(&bytes).ok(), Some(WalRecord::Catalog(b"changes")));
        assert!(WalRecord::decode(&entry_bytes_cut()).is_err());
    }

    fn entry_bytes_cut() -> Vec<u8> {
        let bytes = WalEntry { branch_id: "b1".into(), ops: Vec::new(), time_ms: 1 }.encode();
        bytes[..bytes.len() - 1].to_vec()
    }

    #[test]
    fn entries_written_before_times_were_logged_decode_with_time_zero() {
        #[derive(Serialize)]
        struct Untimed {
            branch_id: String,
            ops: Vec<GridOp>,
        }
        let ops = vec![GridOp::DeleteRecords { keys: vec![("".into(), "r1".into())] }];
        let old = bincode::serialize(&Untimed { branch_id: "b1".into(), ops: ops.clone() })
            .expect("serializes");
        let decoded = WalEntry::decode(&old).expect("the old layout decodes");
        assert_eq!(decoded, WalEntry { branch_id: "b1".into(), ops, time_ms: 0 });
        let now = WalEntry::now("b1".into(), Vec::new());
        assert!(now.time_ms > 1_700_000_000_000);
        assert_eq!(WalEntry::decode(&now.encode()).ok(), Some(now));
        assert!(WalEntry::decode(&old[..old.len() - 1]).is_err(), "cut short");
    }

    /// A bulk add as the API writes one: 50 records of 12 cells.
    fn bulk_add() -> WalEntry {
        use crate::grid::ops::{CellWrite, RecordWrite};
        use crate::grid::value::{CellValue, SourceStatus};
        let records = (0..50)
            .map(|r| RecordWrite {
                id: format!("rec{r}"),
                path: String::new(),
                new_id: None,
                new_path: None,
                cells: (0..12)
                    .map(|c| CellWrite {
                        column_id: format!("column{c}").into(),
                        value: Some(CellValue::Text(format!("Näher am Ziel {r} {c}"))),
                        dependency_status: None,
                        source_status: (c == 0).then_some(SourceStatus::Unset),
                    })
                    .collect(),
                mark_mt: false,
            })
            .collect();
        let ops =
            vec![GridOp::AddRecords { time_ms: 1_780_000_000_000, user: "u".into(), records }];
        WalEntry { branch_id: "b1".into(), ops, time_ms: 1_780_000_000_001 }
    }

    #[test]
    fn entries_are_written_compact_and_the_original_layout_still_decodes() {
        let entry = bulk_add();
        let compact = entry.encode();
        assert!(compact.starts_with(&COMPACT_MARKER));
        assert_eq!(WalEntry::decode(&compact).ok(), Some(entry.clone()));
        assert_eq!(WalRecord::decode(&compact).ok(), Some(WalRecord::Branch(entry.clone())));
        assert!(!is_catalog_record(&compact));
        let original = bincode::serialize(&entry).expect("serializes");
        assert_eq!(WalEntry::decode(&original).ok(), Some(entry.clone()));
        assert!(
            compact.len() * 4 < original.len() * 3,
            "compact {} bytes, original {}",
            compact.len(),
            original.len()
        );
        // Cut short or with bytes after it, a compact record is refused.
        assert!(WalEntry::decode(&compact[..compact.len() - 1]).is_err());
        assert!(WalEntry::decode(&[&compact[..], &[0]].concat()).is_err());
        assert!(WalEntry::decode(&COMPACT_MARKER).is_err());
    }

    #[test]
    fn the_branch_id_is_read_without_decoding_the_ops() {
        let entry = WalEntry { branch_id: "brånch-1".into(), ops: Vec::new(), time_ms: 0 };
        assert_eq!(branch_id_of(&entry.encode()), Some("brånch-1"));
        assert_eq!(branch_id_of(&CATALOG_MARKER), None);
        assert_eq!(branch_id_of(&[3, 0, 0, 0, 0, 0, 0, 0, b'a']), None, "cut short");
        assert_eq!(branch_id_of(&[]), None);
        // The original layout.
        let original = bincode::serialize(&entry).expect("serializes");
        assert_eq!(branch_id_of(&original), Some("brånch-1"));
        // Compact: the id's length in one byte, or a tag and two bytes from 251 on.
        let long = "b".repeat(300);
        let entry = WalEntry { branch_id: long.clone(), ops: Vec::new(), time_ms: 0 };
        assert_eq!(branch_id_of(&entry.encode()), Some(long.as_str()));
        assert_eq!(branch_id_of(&[&COMPACT_MARKER[..], &[251, 44]].concat()), None, "cut short");
        assert_eq!(branch_id_of(&[&COMPACT_MARKER[..], &[255]].concat()), None, "no such tag");
        assert_eq!(branch_id_of(&[&COMPACT_MARKER[..], &[3, b'a']].concat()), None);
    }

    /// Bytes of the compact layout as it was first written: a later change of the layout or
    /// of the ops must still read them (a WAL outlives the binary that wrote it).
    #[test]
    fn compact_records_of_the_first_version_still_decode() {
        let entry = WalEntry {
            branch_id: "b1".into(),
            ops: vec![
                GridOp::DeleteRecords { keys: vec![("p".into(), "r1".into())] },
                GridOp::MergeMark { source_branch_id: "b2".into(), source_clock: 300 },
            ],
            time_ms: 1_780_000_000_001,
        };
        let written = [
            &COMPACT_MARKER[..],
            // The branch id; two ops: DeleteRecords (variant 12) of one key, MergeMark (13)
            // with its clock in three bytes (251: two bytes follow).
            &[2, b'b', b'1', 2, 12, 1, 1, b'p', 2, b'r', b'1', 13, 2, b'b', b'2', 251, 44, 1],
            // The time, zigzagged (253: eight bytes follow).
            &[253, 2, 16, 137, 224, 60, 3, 0, 0],
        ]
        .concat();
        assert_eq!(WalEntry::decode(&written).ok(), Some(entry.clone()));
        assert_eq!(entry.encode(), written);
    }

    proptest::proptest! {
        /// Any bytes after the compact marker give an error or an entry, never a panic, and
        /// `branch_id_of` never panics on them either.
        #[test]
        fn damaged_compact_records_are_refused_without_panics(
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            cut in 0usize..400,
        ) {
            let bytes = [&COMPACT_MARKER[..], &tail].concat();
            let _ = WalEntry::decode(&bytes);
            let _ = branch_id_of(&bytes);
            let whole = bulk_add().encode();
            let cut = whole.len().saturating_sub(cut + 1);
            proptest::prop_assert!(WalEntry::decode(&whole[..cut]).is_err());
        }
    }
}
