//! Deleted means deleted: the file collector and the startup sweep of `<data dir>/files` and
//! `<data dir>/imports`.
//!
//! The collector (`collect_files`, run every `--file-gc-interval-secs` by `run_collector`, and
//! callable on its own) is a mark and sweep: the candidates are files uploaded more than the
//! grace period ago (an upload in flight records its metadata before its id reaches a cell)
//! whose grid has no backup taken at or after their upload (a backup may hold them); every
//! branch actor then reports the ids its records and history hold (`HeldFiles`, scanned off the
//! actor's thread), new branches included until no new one appears; the candidates none holds
//! lose their metadata (one catalogue write) and then their bytes.
//!
//! The startup sweep (`Supervisor::sweep_stray_files`) runs before any request: it removes
//! partial uploads (`files/*.partial`), bytes whose metadata is gone (a grid deleted, or an
//! upload refused, just before a crash) and every import temp file (`imports/*`: an import does
//! not survive a restart).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, MailboxError};
use chrono::{DateTime, Utc};

use super::error::{CatalogError, CatalogResult};
use super::routes::Routes;
use super::store::{CatalogChange, EntityKind};
use super::supervisor::{Exec, Supervisor};
use crate::grid::actor::HeldFiles;
use crate::grid::error::{GridError, GridResult};

/// Why a run of the collector stopped before it removed anything (the run's error is only
/// logged; nothing answers it to a client).
#[derive(Debug, thiserror::Error)]
pub enum CollectStopped {
    /// A branch could not say which files it holds.
    #[error("a branch did not list its files: {0}")]
    Branch(#[from] GridError),
    /// The catalogue did not remove the files' metadata.
    #[error("the catalogue: {0}")]
    Catalog(#[from] CatalogError),
    /// The supervisor is gone: the server is stopping.
    #[error("the supervisor stopped: {0}")]
    Supervisor(#[from] MailboxError),
}

/// What the collector works with: the supervisor (the files' metadata) and the route table
/// (every branch's actor).
#[derive(Clone)]
pub struct Collector {
    pub supervisor: Addr<Supervisor>,
    pub routes: Arc<Routes>,
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

/// Removes `path`, logging any failure but a missing file; true when it was removed.
fn remove_logged(path: &Path, what: &str) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "removing {what} failed");
            false
        }
    }
}

impl Supervisor {
    /// The ids of files the collector may remove if no branch holds them: uploaded before
    /// `now - grace`, with no backup of their grid taken at or after their upload.
    pub fn collectable_files(&self, now: DateTime<Utc>, grace: Duration) -> Vec<String> {
        let grace = chrono::Duration::from_std(grace).unwrap_or(chrono::Duration::MAX);
        let cutoff = now.checked_sub_signed(grace).unwrap_or(DateTime::<Utc>::MIN_UTC);
        self.files
            .values()
            // A settings category's file is held by its category, never by cells.
            .filter(|f| f.category_id.is_none())
            .filter(|f| parse_time(&f.created_time).is_some_and(|t| t < cutoff))
            // In a cluster, only files of grids this node runs whole: another node's grids'
            // holdings are not asked here.
            .filter(|f| self.grid_epoch_here(&f.grid_id).is_some())
            .filter(|f| {
                let uploaded = parse_time(&f.created_time);
                !self.backups.values().any(|b| {
                    b.grid_id == f.grid_id
                        && match (parse_time(&b.created_time), uploaded) {
                            (Some(taken), Some(uploaded)) => taken >= uploaded,
                            _ => true,
                        }
                })
            })
            .map(|f| f.id.clone())
            .collect()
    }

    /// In a cluster: the lease epoch of `grid_id` while this node owns it and runs all its
    /// branches (`Some(0)` alone: every grid is here); None otherwise.
    pub fn grid_epoch_here(&self, grid_id: &str) -> Option<u64> {
        let Some(cluster) = &self.cluster else { return Some(0) };
        let epoch = cluster.owned.lease(grid_id)?.epoch;
        let mut branches = self.branches.values().filter(|b| b.grid_id == grid_id);
        branches.all(|b| self.routes.branch(&b.id).is_some()).then_some(epoch)
    }

    /// The grids of `ids`' files with their epoch here now (see `grid_epoch_here`).
    pub fn epochs_of_files(&self, ids: &[String]) -> Vec<(String, Option<u64>)> {
        ids.iter()
            .filter_map(|id| self.files.get(id))
            .map(|f| (f.grid_id.clone(), self.grid_epoch_here(&f.grid_id)))
            .collect()
    }

    /// `ids` less the files whose grid is no longer here with the epoch it had in `before`
    /// (a cluster node handed it over or lost it meanwhile: its branches were not all asked).
    pub fn still_here(&self, ids: Vec<String>, before: &[(String, Option<u64>)]) -> Vec<String> {
        ids.into_iter()
            .filter(|id| {
                let Some(file) = self.files.get(id) else { return false };
                let then = before.iter().find(|(grid, _)| *grid == file.grid_id);
                then.is_some_and(|(_, epoch)| {
                    epoch.is_some() && *epoch == self.grid_epoch_here(&file.grid_id)
                })
            })
            .collect()
    }

    /// Forgets the files among `ids` that still exist (one catalogue write), then removes their
    /// bytes. Returns how many were removed.
    pub fn remove_files(&mut self, ids: &[String]) -> CatalogResult<usize> {
        let gone: Vec<&String> = ids.iter().filter(|id| self.files.contains_key(*id)).collect();
        let changes: Vec<CatalogChange> =
            gone.iter().map(|id| CatalogChange::delete(EntityKind::File, id)).collect();
        self.commit(&changes)?;
        for id in &gone {
            self.files.shift_remove(*id);
            remove_logged(&self.files_dir.join(id), "an unreferenced file");
        }
        self.remove_from_cluster(gone.iter().map(|id| (*id).clone()).collect());
        Ok(gone.len())
    }

    /// The startup sweep (see the module doc), which also deletes the history bases of
    /// branches the catalogue does not hold. Returns how many files it removed.
    pub fn sweep_stray_files(&self, data_dir: &Path) -> usize {
        let mut removed = 0;
        if let Ok(entries) = std::fs::read_dir(&self.files_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let stray = name.ends_with(".partial") || !self.files.contains_key(name.as_ref());
                if stray && entry.path().is_file() && remove_logged(&entry.path(), "a stray file") {
                    removed += 1;
                }
            }
        }
        if let Ok(entries) = std::fs::read_dir(data_dir.join("imports")) {
            for entry in entries.flatten() {
                if entry.path().is_file() && remove_logged(&entry.path(), "an import temp file") {
                    removed += 1;
                }
            }
        }
        if removed > 0 {
            tracing::info!(removed, "removed stray files left by an earlier run");
        }
        if let Some(history) = self.durability.history() {
            history.retain_branches(&|id| self.branches.contains_key(id));
        }
        removed
    }
}

/// The file ids every branch holds, asking branches that appear meanwhile too. A branch that
/// cannot answer stops the run (its files must not be taken for unreferenced) unless it is
/// gone from the route table (deleted: its files are no longer held by it).
/// Its error is the grid's: what a branch answers `HeldFiles` with, or its closed mailbox.
async fn held_everywhere(state: &Collector) -> GridResult<HashSet<String>> {
    let mut asked: HashSet<String> = HashSet::new();
    let mut held = HashSet::new();
    loop {
        let routes: Vec<_> = state
            .routes
            .branches
            .iter()
            .filter(|r| !asked.contains(r.key()))
            .map(|r| r.value().clone())
            .collect();
        if routes.is_empty() {
            return Ok(held);
        }
        for route in routes {
            asked.insert(route.branch_id.clone());
            match route.addr.send(HeldFiles).await {
                Ok(ids) => held.extend(ids?),
                Err(_) if state.routes.branch(&route.branch_id).is_none() => {}
                Err(err) => return Err(GridError::from(err)),
            }
        }
    }
}

/// One run of the collector (see the module doc): returns how many files it removed.
pub async fn collect_files(state: &Collector, grace: Duration) -> Result<usize, CollectStopped> {
    let collectable = Exec::new(move |s: &mut Supervisor| {
        let candidates = s.collectable_files(Utc::now(), grace);
        let epochs = s.epochs_of_files(&candidates);
        (candidates, epochs)
    });
    let (candidates, epochs) = state.supervisor.send(collectable).await?;
    if candidates.is_empty() {
        return Ok(0);
    }
    let held = held_everywhere(state).await?;
    let unreferenced: Vec<String> =
        candidates.into_iter().filter(|id| !held.contains(id)).collect();
    if unreferenced.is_empty() {
        return Ok(0);
    }
    let remove = Exec::new(move |s: &mut Supervisor| {
        let unreferenced = s.still_here(unreferenced, &epochs);
        s.remove_files(&unreferenced)
    });
    Ok(state.supervisor.send(remove).await??)
}

/// Runs the collector every `interval` (never when it is zero) on the current actix system.
pub fn run_collector(state: Collector, interval: Duration, grace: Duration) {
    if interval.is_zero() {
        return;
    }
    actix_web::rt::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            match collect_files(&state, grace).await {
                Ok(0) => {}
                Ok(removed) => tracing::info!(removed, "removed unreferenced files"),
                Err(err) => tracing::warn!(error = %err, "the file collector stopped a run"),
            }
        }
    });
}
