//! CDN publishing on the catalogue's side (issue 22, `api::cdn`): the `Cdn` entity (a grid's
//! published strings, served at `<public url>/cdn/<id>/...`), and the supervisor operations that
//! create, list, look up, delete, publish and unpublish one.
//!
//! Every CDN lives in `Routes::cdns` (read lock-free by the file server, `api::cdn_serve`, and
//! written only here, after each change set is durable), so unpublishing stops serving as soon
//! as its commit returns. A publish is two steps around the file write, which runs off the
//! supervisor (`io::cdn_publish`): `begin_cdn_publish` marks the CDN `processing` (in memory
//! only: a restart forgets a write it cut off) and hands out the next version number;
//! `finish_cdn_publish` records that version durably. Owns the rules on the catalogue's side:
//! who may manage a CDN (the grid's `manage` privilege), how many a grid may have, one publish
//! at a time. It knows nothing of HTTP, files or the request's field formats (the API checks
//! those before `create_cdn`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, CompanyId, ProjectId, RecordIdentifierType};
use super::routes::Routes;
use super::store::{load_all, CatalogChange, CatalogStore, EntityKind, StoreError};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege, Scope};

/// CDNs a grid may have.
pub const MAX_CDNS_PER_GRID: usize = 50;

/// Who may fetch a CDN's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CdnPermission {
    /// Anyone (within the allow-list and the window).
    Public,
    /// A key of the grid's company that may read the grid.
    Private,
}

impl CdnPermission {
    pub fn parse(text: &str) -> Option<CdnPermission> {
        match text {
            "public" => Some(CdnPermission::Public),
            "private" => Some(CdnPermission::Private),
            _ => None,
        }
    }
}

/// A grid's strings published as immutable, versioned files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cdn {
    pub id: String,
    pub company_id: CompanyId,
    pub project_id: ProjectId,
    pub database_id: String,
    pub grid_id: String,
    pub name: String,
    pub description: String,
    pub permission: CdnPermission,
    /// The allow-list as checked by `api::cdn_access::AllowList` (normalized), `None`: anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub white_list_ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    pub created_time: String,
    pub created_by: String,
    pub last_modified_time: String,
    pub last_modified_by: String,
    /// Whether its files are served.
    pub published: bool,
    /// The last version written and recorded (0: never published); versions only grow.
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_published_time: Option<String>,
    /// A version is being written (memory only).
    #[serde(skip)]
    pub processing: bool,
}

impl Cdn {
    fn scope(&self) -> Scope<'_> {
        Scope {
            company: self.company_id,
            project: Some(self.project_id),
            database: Some(&self.database_id),
            grid: Some(&self.grid_id),
            view: None,
        }
    }

    /// Whether a client with key `p` may read its files (a private CDN's check).
    pub fn readable_by(&self, p: &Principal) -> Result<(), CatalogError> {
        let not_found = || CatalogError::not_found(Missing::Cdn, &self.id);
        if !p.sees(&self.scope()) {
            return Err(not_found());
        }
        p.authorize(&self.scope(), Privilege::Read, not_found)
    }
}

/// What the API checked of a new CDN.
#[derive(Debug, Clone)]
pub struct NewCdn {
    pub grid_id: String,
    pub name: String,
    pub description: String,
    pub permission: CdnPermission,
    pub white_list_ip: Option<String>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
}

/// A publish begun: the CDN, the version to write and how its records are keyed.
#[derive(Debug, Clone)]
pub struct PublishTicket {
    pub cdn: Cdn,
    pub version: u64,
    pub record_identifier_type: RecordIdentifierType,
}

/// Where CDN `id`'s versions are written under the data directory.
pub fn cdn_dir(data_dir: &Path, id: &str) -> PathBuf {
    data_dir.join("cdn").join(id)
}

/// Puts every stored CDN into the route table (at start).
pub(super) fn load_cdns(store: &dyn CatalogStore, routes: &Routes) -> Result<(), StoreError> {
    let all: Vec<Cdn> = load_all(store, EntityKind::Cdn)?;
    for cdn in all {
        routes.cdns.insert(cdn.id.clone(), Arc::new(cdn));
    }
    Ok(())
}

/// Removes the files of CDNs the catalogue no longer has (at start: a crash between a CDN's
/// deletion and the removal of its files leaves them behind).
pub(super) fn sweep_files(data_dir: &Path, routes: &Routes) {
    let Ok(dirs) = std::fs::read_dir(data_dir.join("cdn")) else { return };
    for dir in dirs.flatten() {
        let name = dir.file_name();
        let known = name.to_str().is_some_and(|id| routes.cdns.contains_key(id));
        if !known && dir.path().is_dir() {
            tracing::info!(dir = %dir.path().display(), "removing the files of a deleted CDN");
            remove_files(&dir.path());
        }
    }
}

impl Supervisor {
    /// Records a new CDN of a grid the key may manage (404 gridIsNotFound, 403); 400 past
    /// `MAX_CDNS_PER_GRID`.
    pub fn create_cdn(&mut self, p: &Principal, new: NewCdn) -> CatalogResult<Cdn> {
        let grid = self.grid(p, &new.grid_id, Privilege::Manage)?.clone();
        let count = self.routes.cdns.iter().filter(|c| c.grid_id == grid.id).count();
        if count >= MAX_CDNS_PER_GRID {
            return Err(CatalogError::invalid(format!(
                "A grid has at most {MAX_CDNS_PER_GRID} CDNs; delete one first."
            )));
        }
        let now = now_timestamp();
        let cdn = Cdn {
            id: crate::ids::generate(),
            company_id: grid.company_id,
            project_id: grid.project_id,
            database_id: grid.database_id,
            grid_id: grid.id,
            name: new.name,
            description: new.description,
            permission: new.permission,
            white_list_ip: new.white_list_ip,
            start_time: new.start_time,
            end_time: new.end_time,
            created_time: now.clone(),
            created_by: p.user().to_owned(),
            last_modified_time: now,
            last_modified_by: p.user().to_owned(),
            published: false,
            version: 0,
            last_published_time: None,
            processing: false,
        };
        self.put_cdn(cdn)
    }

    /// The CDNs of grid `grid_id` (the key must manage it), oldest first.
    pub fn list_cdns(&self, p: &Principal, grid_id: &str) -> CatalogResult<Vec<Cdn>> {
        self.grid(p, grid_id, Privilege::Manage)?;
        let mut cdns: Vec<Cdn> = self
            .routes
            .cdns
            .iter()
            .filter(|c| c.grid_id == grid_id)
            .map(|c| c.value().as_ref().clone())
            .collect();
        cdns.sort_by(|a, b| (&a.created_time, &a.id).cmp(&(&b.created_time, &b.id)));
        Ok(cdns)
    }

    /// CDN `id`, for a key that may manage its grid (404 cdnIsNotFound when unknown or out of
    /// the key's sight, 403 without the privilege).
    pub fn cdn(&self, p: &Principal, id: &str) -> CatalogResult<Cdn> {
        let not_found = || CatalogError::not_found(Missing::Cdn, id);
        let cdn = self.routes.cdns.get(id).map(|c| c.value().clone()).ok_or_else(not_found)?;
        if !p.sees(&cdn.scope()) {
            return Err(not_found());
        }
        p.authorize(&cdn.scope(), Privilege::Manage, not_found)?;
        Ok(cdn.as_ref().clone())
    }

    /// Deletes CDN `id`; answers it (its files are the caller's to remove).
    pub fn delete_cdn(&mut self, p: &Principal, id: &str) -> CatalogResult<Cdn> {
        let cdn = self.cdn(p, id)?;
        self.commit(&[CatalogChange::delete(EntityKind::Cdn, id)])?;
        self.routes.cdns.remove(id);
        Ok(cdn)
    }

    /// Stops serving CDN `id` (its files stay, for the next publish to replace).
    pub fn unpublish_cdn(&mut self, p: &Principal, id: &str) -> CatalogResult<Cdn> {
        let mut cdn = self.cdn(p, id)?;
        cdn.published = false;
        cdn.last_modified_time = now_timestamp();
        cdn.last_modified_by = p.user().to_owned();
        self.put_cdn(cdn)
    }

    /// Marks CDN `id` processing and hands out the next version (409 taskIsRunning while
    /// another publish of it runs).
    pub fn begin_cdn_publish(&mut self, p: &Principal, id: &str) -> CatalogResult<PublishTicket> {
        let mut cdn = self.cdn(p, id)?;
        if cdn.processing {
            return Err(CatalogError::TaskRunning(
                "This CDN is being published; try again.".into(),
            ));
        }
        let grid = self.grids.get(&cdn.grid_id).ok_or(CatalogError::Internal("CDN's grid"))?;
        let record_identifier_type = grid.record_identifier_type;
        cdn.processing = true;
        self.routes.cdns.insert(cdn.id.clone(), Arc::new(cdn.clone()));
        let version = cdn.version + 1;
        Ok(PublishTicket { cdn, version, record_identifier_type })
    }

    /// Records `version` of CDN `id` as written and published by `user` (404 when the CDN was
    /// deleted meanwhile).
    pub fn finish_cdn_publish(&mut self, id: &str, version: u64, user: &str) -> CatalogResult<Cdn> {
        let stored = self.routes.cdns.get(id).map(|c| c.value().clone());
        let mut cdn =
            stored.ok_or_else(|| CatalogError::not_found(Missing::Cdn, id))?.as_ref().clone();
        let now = now_timestamp();
        cdn.version = cdn.version.max(version);
        cdn.published = true;
        cdn.processing = false;
        cdn.last_published_time = Some(now.clone());
        cdn.last_modified_time = now;
        cdn.last_modified_by = user.to_owned();
        let result = self.put_cdn(cdn);
        if result.is_err() {
            self.abort_cdn_publish(id);
        }
        result
    }

    /// Clears CDN `id`'s processing mark (its write failed).
    pub fn abort_cdn_publish(&mut self, id: &str) {
        if let Some(mut entry) = self.routes.cdns.get_mut(id) {
            Arc::make_mut(entry.value_mut()).processing = false;
        }
    }

    /// Commits `cdn` and shows it to the file server (its `processing` mark as given).
    fn put_cdn(&mut self, cdn: Cdn) -> CatalogResult<Cdn> {
        self.commit(&[CatalogChange::put(EntityKind::Cdn, &cdn.id, &cdn)])?;
        self.routes.cdns.insert(cdn.id.clone(), Arc::new(cdn.clone()));
        Ok(cdn)
    }

    /// The deletions of grid `grid_id`'s CDNs (committed with the grid's).
    pub(super) fn cdns_deletion(&self, grid_id: &str) -> Vec<CatalogChange> {
        let doomed = self.routes.cdns.iter().filter(|c| c.grid_id == grid_id);
        doomed.map(|c| CatalogChange::delete(EntityKind::Cdn, &c.id)).collect()
    }

    /// Forgets grid `grid_id`'s CDNs once their deletion is committed, and removes their files.
    pub(super) fn forget_cdns(&mut self, grid_id: &str) {
        let ids: Vec<String> = self
            .routes
            .cdns
            .iter()
            .filter(|c| c.grid_id == grid_id)
            .map(|c| c.id.clone())
            .collect();
        let data_dir = self.files_dir.parent().map(Path::to_path_buf);
        for id in ids {
            self.routes.cdns.remove(&id);
            if let Some(data_dir) = &data_dir {
                remove_files(&cdn_dir(data_dir, &id));
            }
        }
    }
}

/// Removes a CDN's files (best effort: a leftover directory is only disk space).
pub fn remove_files(dir: &Path) {
    if let Err(err) = std::fs::remove_dir_all(dir) {
        if err.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(error = %err, dir = %dir.display(), "removing a CDN's files failed");
        }
    }
}
