//! Supervisor operations on uploaded files' metadata (the bytes are files under the data
//! directory, written by `api::files`).

use super::model::FileMeta;
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::error::{ApiError, ApiResult, ErrorCode};

impl Supervisor {
    /// Records an uploaded file (its bytes are already durable).
    pub fn record_file(&mut self, meta: FileMeta) -> ApiResult<()> {
        self.commit(&[CatalogChange::put(EntityKind::File, &meta.id, &meta)])?;
        self.files.insert(meta.id.clone(), meta);
        Ok(())
    }

    /// Forgets a file whose upload did not reach its cell.
    pub fn forget_file(&mut self, id: &str) -> ApiResult<()> {
        self.commit(&[CatalogChange::delete(EntityKind::File, id)])?;
        self.files.shift_remove(id);
        Ok(())
    }

    /// A file of `grid_id` (404 fileIsNotFound for another grid's or an unknown id).
    pub fn file(&self, grid_id: &str, id: &str) -> ApiResult<FileMeta> {
        self.files
            .get(id)
            .filter(|f| f.grid_id == grid_id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(ErrorCode::FileIsNotFound, "File", id))
    }

    /// The metadata of the files of `grid_id` among `ids` (unknown ids are left out).
    pub fn files_of(&self, grid_id: &str, ids: &[String]) -> Vec<FileMeta> {
        ids.iter()
            .filter_map(|id| self.files.get(id))
            .filter(|f| f.grid_id == grid_id)
            .cloned()
            .collect()
    }
}
