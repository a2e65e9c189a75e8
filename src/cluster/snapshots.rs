//! Branch images in the JetStream object store (`<prefix>_snapshots`, replicated as the log):
//! one object per branch, named by the branch id, holding a whole image (format 6) and, in
//! its metadata, the sequence of the branch's log it covers. A put replaces the branch's
//! object (readers see the old or the new one whole); a takeover starts from it and replays
//! the log after that sequence.
//!
//! Owns the bucket; the bytes are opaque here (the grid layer encodes and decodes them).

use std::time::Duration;

use async_nats::jetstream::object_store::{self, ObjectMetadata, ObjectStore};
use bytes::Bytes;
use tokio::io::AsyncReadExt;

use super::{check_token, unavailable, ClusterError, ClusterLink};

/// The metadata key holding the log sequence an image covers.
const COVERS: &str = "covers";
/// Object chunks: well under NATS's default 1 MiB message limit.
const CHUNK_BYTES: usize = 512 * 1024;
/// A branch image larger than this is not read back (a bound on what a takeover allocates).
pub const MAX_IMAGE_BYTES: usize = 16 * 1024 * 1024 * 1024;

/// The object store of branch images.
#[derive(Clone)]
pub struct SnapshotBucket {
    store: ObjectStore,
}

impl std::fmt::Debug for SnapshotBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SnapshotBucket")
    }
}

/// A branch image read back: its bytes and the log sequence it covers.
#[derive(Debug)]
pub struct StoredImage {
    pub covers: u64,
    pub bytes: Vec<u8>,
}

impl SnapshotBucket {
    /// Opens the bucket, creating it when missing.
    pub async fn open(link: &ClusterLink) -> Result<SnapshotBucket, ClusterError> {
        let store = link.open_object_store("snapshots").await?;
        Ok(SnapshotBucket { store })
    }

    /// Stores `bytes` as the branch's image covering its log up to `covers`, unless the
    /// stored one covers as much already (a stale owner's late image never replaces a newer
    /// owner's).
    pub async fn put(&self, branch: &str, covers: u64, bytes: Bytes) -> Result<(), ClusterError> {
        check_token("branch", branch)?;
        if let Ok(info) = self.store.info(branch).await {
            let stored = info.metadata.get(COVERS).and_then(|c| c.parse::<u64>().ok());
            if !info.deleted && stored.is_some_and(|stored| stored >= covers) {
                return Ok(());
            }
        }
        let meta = ObjectMetadata {
            name: branch.to_string(),
            description: None,
            chunk_size: Some(CHUNK_BYTES),
            metadata: [(COVERS.to_string(), covers.to_string())].into_iter().collect(),
            headers: None,
        };
        let mut reader: &[u8] = &bytes;
        self.store.put(meta, &mut reader).await.map(drop).map_err(unavailable)
    }

    /// The branch's image, if it has one; each read waits at most `wait`.
    pub async fn latest(
        &self,
        branch: &str,
        wait: Duration,
    ) -> Result<Option<StoredImage>, ClusterError> {
        check_token("branch", branch)?;
        let info = match tokio::time::timeout(wait, self.store.info(branch)).await {
            Err(_) => return Err(ClusterError::Unavailable(format!("image of {branch}: timeout"))),
            Ok(Err(err)) if err.kind() == object_store::InfoErrorKind::NotFound => return Ok(None),
            Ok(Err(err)) => return Err(unavailable(err)),
            Ok(Ok(info)) => info,
        };
        if info.deleted {
            return Ok(None);
        }
        let covers =
            info.metadata.get(COVERS).and_then(|c| c.parse::<u64>().ok()).ok_or_else(|| {
                ClusterError::Unavailable(format!("image of {branch}: no log sequence"))
            })?;
        if info.size > MAX_IMAGE_BYTES {
            return Err(ClusterError::Unavailable(format!(
                "image of {branch}: {} bytes, more than a node reads",
                info.size
            )));
        }
        let mut object = self.store.get(branch).await.map_err(unavailable)?;
        let mut bytes = Vec::with_capacity(info.size);
        object.read_to_end(&mut bytes).await.map_err(unavailable)?;
        Ok(Some(StoredImage { covers, bytes }))
    }

    /// The log sequence the branch's image covers (None without an image), its bytes unread.
    pub async fn covers(&self, branch: &str, wait: Duration) -> Result<Option<u64>, ClusterError> {
        check_token("branch", branch)?;
        match tokio::time::timeout(wait, self.store.info(branch)).await {
            Err(_) => Err(ClusterError::Unavailable(format!("image of {branch}: timeout"))),
            Ok(Err(err)) if err.kind() == object_store::InfoErrorKind::NotFound => Ok(None),
            Ok(Err(err)) => Err(unavailable(err)),
            Ok(Ok(info)) if info.deleted => Ok(None),
            Ok(Ok(info)) => Ok(info.metadata.get(COVERS).and_then(|c| c.parse::<u64>().ok())),
        }
    }

    /// Removes the branch's image (its grid or branch was deleted).
    pub async fn remove(&self, branch: &str) -> Result<(), ClusterError> {
        check_token("branch", branch)?;
        match self.store.delete(branch).await {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == object_store::DeleteErrorKind::NotFound => Ok(()),
            Err(err) => Err(unavailable(err)),
        }
    }
}
