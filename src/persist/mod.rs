//! Durability: the write-ahead log (source of truth for every acknowledged write) and
//! snapshot images of grid branches in sled.

pub mod snapshot;
pub mod wal;
