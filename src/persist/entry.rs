//! What one WAL record holds: a batch of ops of one branch, applied together, or one
//! catalogue change set. Encoded with bincode; a record that does not decode is reported and
//! skipped by recovery.
//!
//! A branch record keeps the original layout (`WalEntry`, which starts with the branch id's
//! length as a u64); a catalogue record starts with [`CATALOG_MARKER`], a length no branch
//! record can have, so records written before catalogue records existed still decode.

use serde::{Deserialize, Serialize};

use crate::catalog::store::CatalogChange;
use crate::grid::ops::GridOp;

/// The first 8 bytes of a catalogue record (as a branch id length: u64::MAX, impossible).
pub const CATALOG_MARKER: [u8; 8] = [0xff; 8];

/// The ops one message applied to one branch, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WalEntry {
    pub branch_id: String,
    pub ops: Vec<GridOp>,
}

impl WalEntry {
    pub fn encode(&self) -> Vec<u8> {
        bincode::serialize(self).expect("ops always serialize")
    }

    pub fn decode(bytes: &[u8]) -> Result<WalEntry, bincode::Error> {
        bincode::deserialize(bytes)
    }
}

/// Any WAL record.
#[derive(Debug, Clone, PartialEq)]
pub enum WalRecord {
    Branch(WalEntry),
    Catalog(Vec<CatalogChange>),
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

impl WalRecord {
    /// A catalogue change set as a WAL payload.
    pub fn encode_catalog(changes: &[CatalogChange]) -> Vec<u8> {
        let mut out = CATALOG_MARKER.to_vec();
        bincode::serialize_into(&mut out, changes).expect("catalogue changes always serialize");
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<WalRecord, bincode::Error> {
        match bytes.strip_prefix(&CATALOG_MARKER) {
            Some(rest) => bincode::deserialize(rest).map(WalRecord::Catalog),
            None => WalEntry::decode(bytes).map(WalRecord::Branch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::store::EntityKind;

    #[test]
    fn both_kinds_round_trip_and_old_branch_records_still_decode() {
        let entry = WalEntry { branch_id: "b1".into(), ops: Vec::new() };
        assert_eq!(WalRecord::decode(&entry.encode()).ok(), Some(WalRecord::Branch(entry)));
        let changes = vec![
            CatalogChange::put(EntityKind::Grid, "g1", &serde_json::json!({"name": "x"})),
            CatalogChange::delete(EntityKind::Key, "k1"),
        ];
        let bytes = WalRecord::encode_catalog(&changes);
        assert_eq!(WalRecord::decode(&bytes).ok(), Some(WalRecord::Catalog(changes)));
        assert!(WalRecord::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(WalRecord::decode(&CATALOG_MARKER).is_err());
    }

    #[test]
    fn the_branch_id_is_read_without_decoding_the_ops() {
        let entry = WalEntry { branch_id: "brånch-1".into(), ops: Vec::new() };
        assert_eq!(branch_id_of(&entry.encode()), Some("brånch-1"));
        assert_eq!(branch_id_of(&WalRecord::encode_catalog(&[])), None);
        assert_eq!(branch_id_of(&[3, 0, 0, 0, 0, 0, 0, 0, b'a']), None, "cut short");
        assert_eq!(branch_id_of(&[]), None);
    }
}
