//! Supervisor operations on backups: the copies of a branch kept before an import (their
//! records are images in the snapshot store, see `Durability::store_backup`), listed per grid
//! and looked up for a restore.

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, Backup};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege};
use crate::ids;

/// The backups one branch keeps: recording another retires the oldest past this many (each
/// is a whole image of the branch, so imports must not pile them up without end).
pub const MAX_BACKUPS_PER_BRANCH: usize = 20;

impl Supervisor {
    /// Records a backup of `branch_id` (its image is already stored under the returned id's key
    /// by the caller, who chose `id`), retiring the branch's oldest past
    /// `MAX_BACKUPS_PER_BRANCH`.
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
        // Oldest first: the map keeps the order backups were recorded in.
        let mut retired: Vec<String> = (self.backups.values())
            .filter(|b| b.branch_id == branch_id)
            .map(|b| b.id.clone())
            .collect();
        retired.truncate((retired.len() + 1).saturating_sub(MAX_BACKUPS_PER_BRANCH));
        let mut changes = vec![CatalogChange::put(EntityKind::Backup, &backup.id, &backup)];
        changes.extend(retired.iter().map(|id| CatalogChange::delete(EntityKind::Backup, id)));
        self.commit(&changes)?;
        self.backups.insert(backup.id.clone(), backup.clone());
        for id in retired {
            self.backups.shift_remove(&id);
            self.durability.delete_backup(&id);
        }
        Ok(backup)
    }

    /// Forgets backup `id` and removes its image (an import that failed keeps none: it changed
    /// nothing). A backup already gone is no error.
    pub fn forget_backup(&mut self, id: &str) -> CatalogResult<()> {
        if !self.backups.contains_key(id) {
            return Ok(());
        }
        self.commit(&[CatalogChange::delete(EntityKind::Backup, id)])?;
        self.backups.shift_remove(id);
        self.durability.delete_backup(id);
        Ok(())
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
