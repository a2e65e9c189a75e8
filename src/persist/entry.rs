//! What one WAL record holds: a batch of ops of one branch, applied together, or one
//! catalogue change set. Encoded with bincode; a record that does not decode is reported and
//! skipped by recovery.
//!
//! A branch record keeps the original layout (`WalEntry`, which starts with the branch id's
//! length as a u64); a catalogue record starts with [`CATALOG_MARKER`], a length no branch
//! record can have, so records written before catalogue records existed still decode.

use serde::{Deserialize, Serialize};

use crate::grid::ops::GridOp;

/// The first 8 bytes of a catalogue record (as a branch id length: u64::MAX, impossible).
pub const CATALOG_MARKER: [u8; 8] = [0xff; 8];

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

    pub fn encode(&self) -> Vec<u8> {
        bincode::serialize(self).expect("ops always serialize")
    }

    /// Reads an entry of either layout: an entry written before times were logged ends
    /// where the time would start, so the timed layout fails on it and the untimed one reads it.
    pub fn decode(bytes: &[u8]) -> Result<WalEntry, bincode::Error> {
        use bincode::Options;
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
/// first: a u64 length, then its bytes); `None` for a catalogue record or bytes that are not a
/// branch record's start.
pub fn branch_id_of(bytes: &[u8]) -> Option<&str> {
    let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let end = usize::try_from(len).ok()?.checked_add(8)?;
    std::str::from_utf8(bytes.get(8..end)?).ok()
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

    #[test]
    fn the_branch_id_is_read_without_decoding_the_ops() {
        let entry = WalEntry { branch_id: "brånch-1".into(), ops: Vec::new(), time_ms: 0 };
        assert_eq!(branch_id_of(&entry.encode()), Some("brånch-1"));
        assert_eq!(branch_id_of(&CATALOG_MARKER), None);
        assert_eq!(branch_id_of(&[3, 0, 0, 0, 0, 0, 0, 0, b'a']), None, "cut short");
        assert_eq!(branch_id_of(&[]), None);
    }
}
