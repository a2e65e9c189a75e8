//! Published CDN versions in the JetStream object store (`<prefix>_cdn`, replicated as the log),
//! so that any node serves a CDN's files, and they outlive the node that wrote them.
//!
//! A version's files are objects named `<cdn id>/<version>/<file>`, its manifest stored last:
//! a version whose manifest is in the bucket is whole. The publishing node stores a version
//! before the catalogue records it (`put_version`), and removes the one that falls out of the
//! kept versions; a node asked for a version it lacks on disk copies it from the bucket into
//! its CDN directory (`fetch_version`), through a temporary directory renamed when whole. What
//! the files hold is the caller's; the manifest's file list is read with `files_of`.

use std::path::Path;

use async_nats::jetstream::object_store::{self, ObjectMetadata, ObjectStore};
use tokio::io::AsyncReadExt;

use super::{check_token, unavailable, ClusterError, ClusterLink};

/// Object chunks: well under NATS's default 1 MiB message limit.
const CHUNK_BYTES: usize = 512 * 1024;
/// The largest manifest read back.
const MAX_MANIFEST_BYTES: usize = 16 << 20;

fn check_file(name: &str) -> Result<(), ClusterError> {
    super::files::check_file_name("CDN file", name)
}

/// The object store of published CDN versions.
#[derive(Clone)]
pub struct CdnBucket {
    store: ObjectStore,
}

impl std::fmt::Debug for CdnBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CdnBucket")
    }
}

fn object(cdn: &str, version: u64, file: &str) -> Result<String, ClusterError> {
    check_token("CDN", cdn)?;
    check_file(file)?;
    Ok(format!("{cdn}/{version}/{file}"))
}

impl CdnBucket {
    /// Opens the bucket, creating it when missing.
    pub async fn open(link: &ClusterLink) -> Result<CdnBucket, ClusterError> {
        let store = link.open_object_store("cdn").await?;
        Ok(CdnBucket { store })
    }

    /// Stores version `version` of CDN `cdn` from `dir`: `files` (the manifest's list), then
    /// the manifest `manifest` itself.
    pub async fn put_version(
        &self,
        cdn: &str,
        version: u64,
        dir: &Path,
        files: &[String],
        manifest: &str,
    ) -> Result<(), ClusterError> {
        for name in files.iter().map(String::as_str).chain(std::iter::once(manifest)) {
            let mut file = tokio::fs::File::open(dir.join(name)).await.map_err(unavailable)?;
            let meta = ObjectMetadata {
                name: object(cdn, version, name)?,
                chunk_size: Some(CHUNK_BYTES),
                ..Default::default()
            };
            self.store.put(meta, &mut file).await.map_err(unavailable)?;
        }
        Ok(())
    }

    /// The manifest of version `version` of CDN `cdn` (None when the bucket lacks it).
    pub async fn manifest(
        &self,
        cdn: &str,
        version: u64,
        manifest: &str,
    ) -> Result<Option<Vec<u8>>, ClusterError> {
        let mut object = match self.store.get(object(cdn, version, manifest)?).await {
            Ok(object) => object,
            Err(err) if err.kind() == object_store::GetErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(unavailable(err)),
        };
        let mut bytes = Vec::new();
        let read = (&mut object).take(MAX_MANIFEST_BYTES as u64 + 1).read_to_end(&mut bytes).await;
        read.map_err(unavailable)?;
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(ClusterError::Unavailable(format!("CDN {cdn} manifest too large")));
        }
        Ok(Some(bytes))
    }

    /// Copies version `version` of CDN `cdn` into `dir` (created through `<dir>.partial-<n>`,
    /// renamed when whole): `files` then the manifest bytes `manifest_bytes` as `manifest`.
    pub async fn fetch_version(
        &self,
        cdn: &str,
        version: u64,
        dir: &Path,
        files: &[String],
        (manifest, manifest_bytes): (&str, &[u8]),
    ) -> Result<(), ClusterError> {
        let partial = dir.with_extension(format!("partial-{}", crate::ids::generate()));
        tokio::fs::create_dir_all(&partial).await.map_err(unavailable)?;
        let copied =
            self.copy_files(cdn, version, &partial, files, (manifest, manifest_bytes)).await;
        let renamed = match copied {
            Ok(()) => tokio::fs::rename(&partial, dir).await.map_err(unavailable),
            Err(err) => Err(err),
        };
        if renamed.is_err() {
            let _ = tokio::fs::remove_dir_all(&partial).await;
            // Another request may have fetched the same version meanwhile.
            if tokio::fs::metadata(dir.join(manifest)).await.is_ok() {
                return Ok(());
            }
        }
        renamed
    }

    async fn copy_files(
        &self,
        cdn: &str,
        version: u64,
        into: &Path,
        files: &[String],
        (manifest, manifest_bytes): (&str, &[u8]),
    ) -> Result<(), ClusterError> {
        for name in files {
            let mut source = match self.store.get(object(cdn, version, name)?).await {
                Ok(object) => object,
                Err(err) => return Err(unavailable(err)),
            };
            let mut out = tokio::fs::File::create(into.join(name)).await.map_err(unavailable)?;
            tokio::io::copy(&mut source, &mut out).await.map_err(unavailable)?;
            out.sync_all().await.map_err(unavailable)?;
        }
        let name = into.join(manifest);
        tokio::fs::write(&name, manifest_bytes).await.map_err(unavailable)?;
        Ok(())
    }

    /// Removes version `version` of CDN `cdn`: its manifest first (no node starts copying it
    /// then), then `files`.
    pub async fn remove_version(
        &self,
        cdn: &str,
        version: u64,
        files: &[String],
        manifest: &str,
    ) -> Result<(), ClusterError> {
        for name in std::iter::once(manifest).chain(files.iter().map(String::as_str)) {
            match self.store.delete(object(cdn, version, name)?).await {
                Ok(()) => {}
                Err(err) if err.kind() == object_store::DeleteErrorKind::NotFound => {}
                Err(err) => return Err(unavailable(err)),
            }
        }
        Ok(())
    }
}
