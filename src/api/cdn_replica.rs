//! CDN versions in a cluster (`--cluster`): a published version's files are stored in the
//! cluster's object store (`cluster::cdn_files`) before the catalogue records the version, so
//! that any node serves them (a node asked for a version it lacks on disk copies it first) and
//! they outlive the node that wrote them. The version that falls out of the kept ones is
//! removed from the store at the next publish, and a deleted CDN's kept versions with it.
//! Alone, every call here does nothing: the files are on this node's disk.

use std::path::{Path, PathBuf};

use crate::cluster::node::ClusterNode;
use crate::error::{ApiError, ApiResult};
use crate::io::cdn_publish::{Manifest, KEEP_VERSIONS, MANIFEST};
use crate::state::AppState;

fn unavailable(err: impl std::fmt::Display) -> ApiError {
    ApiError::retry_soon(format!("The cluster's CDN store is unavailable: {err}"))
}

/// Runs `work` with the cluster node on its runtime; None alone.
async fn on_cluster<T, F, Fut>(state: &AppState, work: F) -> Option<ApiResult<T>>
where
    T: Send + 'static,
    F: FnOnce(std::sync::Arc<ClusterNode>) -> Fut,
    Fut: std::future::Future<Output = ApiResult<T>> + Send + 'static,
{
    let node = state.cluster.clone()?;
    let handle = node.handle();
    Some(handle.spawn(work(node)).await.unwrap_or_else(|err| Err(unavailable(err))))
}

/// Stores the version `manifest` describes, written in `dir` (its version directory), and
/// removes from the store the version it pushes out of the kept ones.
pub async fn store_version(state: &AppState, manifest: &Manifest, dir: &Path) -> ApiResult<()> {
    let (cdn, version) = (manifest.cdn_id.clone(), manifest.version);
    let files: Vec<String> = manifest.files.keys().cloned().collect();
    let dir = dir.to_owned();
    let stored = on_cluster(state, move |node| async move {
        node.cdn.put_version(&cdn, version, &dir, &files, MANIFEST).await.map_err(unavailable)?;
        if version > KEEP_VERSIONS {
            let dropped = version - KEEP_VERSIONS;
            if let Err(err) = remove_version(&node, &cdn, dropped).await {
                tracing::warn!(%cdn, version = dropped, error = %err.message, "an old CDN version stays in the cluster's store");
            }
        }
        Ok(())
    })
    .await;
    stored.unwrap_or(Ok(()))
}

async fn remove_version(node: &ClusterNode, cdn: &str, version: u64) -> ApiResult<()> {
    let Some(bytes) = node.cdn.manifest(cdn, version, MANIFEST).await.map_err(unavailable)? else {
        return Ok(());
    };
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(unavailable)?;
    let files: Vec<String> = manifest.files.keys().cloned().collect();
    node.cdn.remove_version(cdn, version, &files, MANIFEST).await.map_err(unavailable)
}

/// Makes sure version `version` of CDN `cdn` is in `dir` (its version directory), copying it
/// from the cluster's store when this node lacks it. False when neither has it (alone: when
/// the directory has no manifest).
pub async fn ensure_version(
    state: &AppState,
    cdn: &str,
    version: u64,
    dir: &Path,
) -> ApiResult<bool> {
    if tokio::fs::metadata(dir.join(MANIFEST)).await.is_ok() {
        return Ok(true);
    }
    let (cdn, dir): (String, PathBuf) = (cdn.to_owned(), dir.to_owned());
    let fetched = on_cluster(state, move |node| async move {
        let Some(bytes) = node.cdn.manifest(&cdn, version, MANIFEST).await.map_err(unavailable)?
        else {
            return Ok(false);
        };
        let manifest: Manifest = serde_json::from_slice(&bytes).map_err(unavailable)?;
        let files: Vec<String> = manifest.files.keys().cloned().collect();
        if let Some(parent) = dir.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(unavailable)?;
        }
        let copied = node.cdn.fetch_version(&cdn, version, &dir, &files, (MANIFEST, &bytes)).await;
        copied.map_err(unavailable)?;
        Ok(true)
    })
    .await;
    fetched.unwrap_or(Ok(false))
}

/// Removes a deleted CDN's kept versions (up to `newest`) from the cluster's store.
pub async fn remove_cdn(state: &AppState, cdn: &str, newest: u64) {
    let cdn = cdn.to_owned();
    let removed = on_cluster(state, move |node| async move {
        let oldest = newest.saturating_sub(KEEP_VERSIONS - 1).max(1);
        for version in oldest..=newest {
            remove_version(&node, &cdn, version).await?;
        }
        Ok(())
    })
    .await;
    if let Some(Err(err)) = removed {
        tracing::warn!(error = %err.message, "a deleted CDN's versions stay in the cluster's store");
    }
}
