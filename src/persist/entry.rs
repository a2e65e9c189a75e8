//! What one WAL record holds: a batch of ops of one branch, applied together. Encoded with
//! bincode; a record that does not decode is reported and skipped by recovery.

use serde::{Deserialize, Serialize};

use crate::grid::ops::GridOp;

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
