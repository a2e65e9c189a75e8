//! `Damaged`: why stored state (a snapshot image, the history or columns built from one) could
//! not be loaded. This build never writes such state, so it is damage on disk or a bug; the
//! caller never panics on it: recovery replays the WAL instead, an API request answers 500.

use std::io;

/// Stored state that cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum Damaged {
    /// A section of an image could not be read from its file.
    #[error("reading {what}: {source}")]
    Read { what: &'static str, source: io::Error },
    /// The bytes read are not consistent: lengths, offsets or counts that do not add up, a
    /// value of another kind than its column's, a schema that does not parse.
    #[error("{0}")]
    Inconsistent(String),
    /// A thread loading part of an image (`what`) panicked.
    #[error("loading {0} panicked")]
    Panicked(&'static str),
}

/// What loading stored state gives.
pub type LoadResult<T> = Result<T, Damaged>;

impl From<String> for Damaged {
    fn from(message: String) -> Damaged {
        Damaged::Inconsistent(message)
    }
}

impl From<&str> for Damaged {
    fn from(message: &str) -> Damaged {
        Damaged::Inconsistent(message.to_owned())
    }
}
