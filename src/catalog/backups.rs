//! Supervisor operations on backups: the copies of a branch kept before an import (their
//! records are images in the snapshot store, see `Durability::store_backup`), listed per grid
//! and looked up for a restore.

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, Backup};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege};
use crate::ids;

impl Supervisor {
    /// Records a backup of `branch_id` (its image is already stored under the returned id's key
    /// by the caller, who chose `id`).
    pub fn record_backup(
        &mut self,
        id: String,
        branch_id: &str,
        records: usize,
    ) -> CatalogResult<Backup> {
        let branch = self
            .branch_record(branch_id)
            .ok_or_else(|| CatalogError::not_found(Missing::Branch, branch_id))?;
        let grid = (self.grids.get(&branch.grid_id))
            .ok_or_else(|| CatalogError::not_found(Missing::Grid, &branch.grid_id))?;
        let backup = Backup {
            id,
            company_id: grid.company_id,
            grid_id: grid.id.clone(),
            branch_id: branch_id.to_owned(),
            created_time: now_timestamp(),
            records,
        };
        self.commit(&[CatalogChange::put(EntityKind::Backup, &backup.id, &backup)])?;
        self.backups.insert(backup.id.clone(), backup.clone());
        Ok(backup)
    }

    /// A new backup id.
    pub fn new_backup_id() -> String {
        ids::generate()
    }

    /// The backups of a grid, oldest first.
    pub fn list_backups(&self, p: &Principal, grid_id: &str) -> CatalogResult<Vec<Backup>> {
        self.grid(p, grid_id, Privilege::Read)?;
        Ok(self.backups.values().filter(|b| b.grid_id == grid_id).cloned().collect())
    }

    /// A backup of a grid, for a restore (`write` privilege on the grid).
    pub fn backup(&self, p: &Principal, grid_id: &str, id: &str) -> CatalogResult<Backup> {
        self.grid(p, grid_id, Privilege::Write)?;
        self.backups
            .get(id)
            .filter(|b| b.grid_id == grid_id)
            .cloned()
            .ok_or_else(|| CatalogError::not_found(Missing::Backup, id))
    }
}
