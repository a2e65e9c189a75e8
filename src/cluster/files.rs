//! Uploaded files' bytes in the JetStream object store (`<prefix>_files`, replicated as the
//! log), so that a grid's files follow it to whichever node owns it: stored when uploaded
//! (before any cell refers to them), fetched by a node that does not have them on disk when
//! one is downloaded. Named by the file id; the bytes are opaque here.

use std::path::Path;

use async_nats::jetstream::object_store::{self, ObjectMetadata, ObjectStore};

use super::{unavailable, ClusterError, ClusterLink};

/// Object chunks: well under NATS's default 1 MiB message limit.
const CHUNK_BYTES: usize = 512 * 1024;

/// A file name as gridd makes them (an uploaded file's id `<14 alphanumerics>.<extension>`, a
/// CDN version's `<lang>.json`): 1 to 80 of `[A-Za-z0-9_.-]`, not starting with a dot.
pub(super) fn check_file_name(kind: &'static str, id: &str) -> Result<(), ClusterError> {
    let valid = !id.is_empty()
        && id.len() <= 80
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(ClusterError::InvalidId { kind, id: id.chars().take(80).collect() })
    }
}

fn check_file_id(id: &str) -> Result<(), ClusterError> {
    check_file_name("file", id)
}

/// The object store of uploaded files.
#[derive(Clone)]
pub struct FileBucket {
    store: ObjectStore,
}

impl std::fmt::Debug for FileBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileBucket")
    }
}

impl FileBucket {
    /// Opens the bucket, creating it when missing.
    pub async fn open(link: &ClusterLink) -> Result<FileBucket, ClusterError> {
        let store = link.open_object_store("files").await?;
        Ok(FileBucket { store })
    }

    /// Stores the file at `path` as `id`.
    pub async fn put(&self, id: &str, path: &Path) -> Result<(), ClusterError> {
        check_file_id(id)?;
        let mut file = tokio::fs::File::open(path).await.map_err(unavailable)?;
        let meta = ObjectMetadata {
            name: id.to_string(),
            chunk_size: Some(CHUNK_BYTES),
            ..Default::default()
        };
        self.store.put(meta, &mut file).await.map(drop).map_err(unavailable)
    }

    /// Writes the file `id` to `path` (through `<path>.partial`, renamed when whole); false
    /// when the bucket does not have it.
    pub async fn fetch(&self, id: &str, path: &Path) -> Result<bool, ClusterError> {
        check_file_id(id)?;
        let mut object = match self.store.get(id).await {
            Ok(object) => object,
            Err(err) if err.kind() == object_store::GetErrorKind::NotFound => return Ok(false),
            Err(err) => return Err(unavailable(err)),
        };
        let partial = path.with_extension("partial");
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await.map_err(unavailable)?;
        }
        let mut out = tokio::fs::File::create(&partial).await.map_err(unavailable)?;
        let copied = tokio::io::copy(&mut object, &mut out).await;
        let synced = match copied {
            Ok(_) => out.sync_all().await,
            Err(err) => Err(err),
        };
        if let Err(err) = synced {
            let _ = tokio::fs::remove_file(&partial).await;
            return Err(unavailable(err));
        }
        tokio::fs::rename(&partial, path).await.map_err(unavailable)?;
        Ok(true)
    }

    /// Removes the file `id` (its metadata was deleted).
    pub async fn remove(&self, id: &str) -> Result<(), ClusterError> {
        check_file_id(id)?;
        match self.store.delete(id).await {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == object_store::DeleteErrorKind::NotFound => Ok(()),
            Err(err) => Err(unavailable(err)),
        }
    }
}
