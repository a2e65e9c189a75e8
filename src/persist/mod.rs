//! Durability: the write-ahead log (source of truth for every acknowledged write), what its
//! records hold, and snapshot images of grid branches in sled.

pub mod durability;
pub mod entry;
pub mod history;
pub mod image_formats;
mod memory;
pub mod recovery;
pub mod snapshot;
pub mod wal;
