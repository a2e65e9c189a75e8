//! Supervisor operations on uploaded files' metadata. The bytes are files under
//! `<data dir>/files/`, written by `api::files`; the supervisor only removes them, in the
//! background, once the deletion of their grid is durable.

use std::path::{Path, PathBuf};

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::FileMeta;
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;

/// `<data dir>/files`, where every uploaded file's bytes are (`<id>`) and arrive
/// (`<random>.partial`).
pub fn files_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("files")
}

impl Supervisor {
    /// Records uploaded files (their bytes are already durable), all in one catalogue write.
    /// 404 gridIsNotFound when their grid was deleted meanwhile.
    pub fn record_files(&mut self, metas: Vec<FileMeta>) -> CatalogResult<()> {
        if let Some(meta) = metas.iter().find(|m| !self.grids.contains_key(&m.grid_id)) {
            return Err(CatalogError::not_found(Missing::Grid, &meta.grid_id));
        }
        let changes: Vec<CatalogChange> =
            metas.iter().map(|m| CatalogChange::put(EntityKind::File, &m.id, m)).collect();
        self.commit(&changes)?;
        self.files.extend(metas.into_iter().map(|m| (m.id.clone(), m)));
        Ok(())
    }

    /// Forgets files whose upload did not reach its cells.
    pub fn forget_files(&mut self, ids: &[String]) -> CatalogResult<()> {
        let changes: Vec<CatalogChange> =
            ids.iter().map(|id| CatalogChange::delete(EntityKind::File, id)).collect();
        self.commit(&changes)?;
        for id in ids {
            self.files.shift_remove(id);
        }
        self.remove_from_cluster(ids.to_vec());
        Ok(())
    }

    /// A file of `grid_id` (404 fileIsNotFound for another grid's or an unknown id).
    pub fn file(&self, grid_id: &str, id: &str) -> CatalogResult<FileMeta> {
        self.files
            .get(id)
            .filter(|f| f.grid_id == grid_id)
            .cloned()
            .ok_or_else(|| CatalogError::not_found(Missing::File, id))
    }

    /// The metadata of the files of `grid_id` among `ids` (unknown ids are left out).
    pub fn files_of(&self, grid_id: &str, ids: &[String]) -> Vec<FileMeta> {
        ids.iter()
            .filter_map(|id| self.files.get(id))
            .filter(|f| f.grid_id == grid_id)
            .cloned()
            .collect()
    }

    /// The catalogue deletions of the files of a grid being deleted.
    pub(super) fn grid_files_deletion(&self, grid_id: &str) -> Vec<CatalogChange> {
        self.files
            .values()
            .filter(|f| f.grid_id == grid_id)
            .map(|f| CatalogChange::delete(EntityKind::File, &f.id))
            .collect()
    }

    /// Forgets the files of a grid whose deletion is durable and removes their bytes on a
    /// thread of their own; a file that cannot be removed is logged and left behind.
    pub(super) fn forget_grid_files(&mut self, grid_id: &str) {
        let mut removed = Vec::new();
        let mut ids = Vec::new();
        self.files.retain(|id, f| {
            let keep = f.grid_id != grid_id;
            if !keep {
                removed.push(self.files_dir.join(id));
                ids.push(id.clone());
            }
            keep
        });
        remove_in_background(removed, format!("grid {grid_id}"));
        self.remove_from_cluster(ids);
    }

    /// In a cluster: removes deleted files' bytes from the cluster's store too, in the
    /// background (every node that forgets them asks; a removal is idempotent).
    pub(super) fn remove_from_cluster(&self, ids: Vec<String>) {
        let Some(cluster) = &self.cluster else { return };
        if ids.is_empty() {
            return;
        }
        let bucket = cluster.files.clone();
        cluster.spawn(async move {
            for id in ids {
                if let Err(err) = bucket.remove(&id).await {
                    tracing::warn!(file = %id, error = %err, "removing a deleted file from the cluster failed");
                }
            }
        });
    }
}

/// Removes files' bytes on a thread of its own (unlinking many files is not work for the
/// supervisor's thread); a file that cannot be removed is logged, naming `whose`, and left.
pub(super) fn remove_in_background(paths: Vec<PathBuf>, whose: String) {
    if paths.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new().name("file-remover".to_owned()).spawn({
        let whose = whose.clone();
        move || {
            for path in paths {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                    Err(err) => tracing::warn!(
                        files = %whose, path = %path.display(), error = %err,
                        "removing a deleted file failed"
                    ),
                }
            }
        }
    });
    if let Err(err) = spawned {
        tracing::warn!(files = %whose, error = %err, "the deleted files were not removed");
    }
}
