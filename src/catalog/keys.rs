//! Supervisor operations on API keys: create, list, revoke, each kept within the calling key's
//! own reach. A key never makes, sees or revokes a key that could do more than itself: higher
//! privileges, or access to a project, database, grid or view it cannot reach. The server's
//! admin key is revoked only by an admin key.

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, CompanyId, ProjectId};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use super::tenancy::{check_name, KeySpec};
use crate::auth::{hash_secret, Access, ApiKey, KeyKind, Principal, Privilege};
use crate::ids;

impl Supervisor {
    /// Whether `holder` reaches the project `id` (an unknown id only when listed by name).
    fn reaches_project(holder: &Access, id: ProjectId) -> bool {
        holder.all || holder.projects.contains(&id)
    }

    /// Whether `holder` reaches the database `id`, directly or through its project.
    fn reaches_database(&self, holder: &Access, id: &str) -> bool {
        match self.databases.get(id) {
            Some(db) => holder.reaches(db.project_id, Some(id), None),
            None => holder.all || holder.databases.iter().any(|d| d == id),
        }
    }

    /// Whether `holder` reaches the grid `id`, directly or through its database or project.
    fn reaches_grid(&self, holder: &Access, id: &str) -> bool {
        match self.grids.get(id) {
            Some(g) => holder.reaches(g.project_id, Some(&g.database_id), Some(id)),
            None => holder.all || holder.grids.iter().any(|g| g == id),
        }
    }

    /// Whether everything `wanted` reaches is reachable by `holder`.
    fn access_covers(&self, holder: &Access, wanted: &Access) -> bool {
        if holder.all {
            return true;
        }
        !wanted.all
            && wanted.projects.iter().all(|p| Self::reaches_project(holder, *p))
            && wanted.databases.iter().all(|d| self.reaches_database(holder, d))
            && wanted.grids.iter().all(|g| self.reaches_grid(holder, g))
    }

    /// Whether a key of `kind` can do nothing the principal `p` cannot: privileges no higher,
    /// access no wider, a view the principal reaches.
    fn within_reach(&self, p: &Principal, kind: &KeyKind, view_grid: Option<&str>) -> bool {
        let KeyKind::Company { access: holder, .. } = &p.key.kind else {
            return false;
        };
        match kind {
            KeyKind::Company { privileges, access } => {
                privileges.iter().all(|x| *x <= p.key.privilege())
                    && self.access_covers(holder, access)
            }
            KeyKind::View { view_id } => {
                self.view_place(view_id, view_grid).is_some_and(|(company, project, db, grid)| {
                    company == p.company_id() && holder.reaches(project, Some(db), Some(grid))
                })
            }
        }
    }

    /// Where view `view_id` is: its company, project, database and grid. From the route table
    /// when this node serves it, else from `view_grid` (a view key's recorded grid) in the
    /// catalogue.
    fn view_place<'a>(
        &'a self,
        view_id: &str,
        view_grid: Option<&str>,
    ) -> Option<(CompanyId, ProjectId, &'a str, &'a str)> {
        if let Some(route) = self.routes.view(view_id) {
            let grid = self.grids.get(&route.grid_id)?;
            return Some((grid.company_id, grid.project_id, &grid.database_id, &grid.id));
        }
        let grid = self.grids.get(view_grid?)?;
        Some((grid.company_id, grid.project_id, &grid.database_id, &grid.id))
    }

    pub fn create_key(&mut self, p: &Principal, spec: KeySpec) -> CatalogResult<(ApiKey, String)> {
        p.require_company_privilege(Privilege::Owner)?;
        let name = check_name(&spec.name, "key")?;
        let view_grid = spec.view_grid.as_deref();
        if let KeyKind::View { view_id } = &spec.kind {
            let place = self.view_place(view_id, view_grid);
            if place.filter(|(company, ..)| *company == p.company_id()).is_none() {
                return Err(CatalogError::not_found(Missing::View, view_id));
            }
        }
        if !self.within_reach(p, &spec.kind, view_grid) {
            return Err(CatalogError::KeyRefused(
                "A key can only create keys within its own privileges and access.",
            ));
        }
        let secret = ids::generate_secret();
        let key = ApiKey {
            id: ids::generate(),
            company_id: p.company_id().to_owned(),
            user: spec.user.filter(|u| !u.trim().is_empty()).unwrap_or_else(|| name.clone()),
            name,
            hash: hex::encode(hash_secret(&secret)),
            created_time: now_timestamp(),
            admin: false,
            view_grid: match &spec.kind {
                KeyKind::View { view_id } => {
                    self.view_place(view_id, spec.view_grid.as_deref()).map(|(.., g)| g.to_owned())
                }
                KeyKind::Company { .. } => None,
            },
            kind: spec.kind,
        };
        self.commit(&[CatalogChange::put(EntityKind::Key, &key.id, &key)])?;
        self.keyring.insert(key.clone());
        self.keys.insert(key.id.clone(), key.clone());
        Ok((key, secret))
    }

    /// The company's keys within the caller's reach (a limited owner key sees only those).
    pub fn list_keys(&self, p: &Principal) -> CatalogResult<Vec<ApiKey>> {
        p.require_company_privilege(Privilege::Owner)?;
        Ok(self
            .keys
            .values()
            .filter(|k| k.company_id == p.company_id())
            .filter(|k| k.id == p.key.id || self.within_reach(p, &k.kind, k.view_grid.as_deref()))
            .cloned()
            .collect())
    }

    /// Revokes a key of the caller's company: 404 for an unknown or another company's key, 403
    /// for one beyond the caller's reach or the server's admin key asked by a non-admin key;
    /// 400 badRequest for the last admin key (revoking it would lock everyone out of /admin).
    pub fn revoke_key(&mut self, p: &Principal, id: &str) -> CatalogResult<()> {
        p.require_company_privilege(Privilege::Owner)?;
        let key = self
            .keys
            .get(id)
            .filter(|k| k.company_id == p.company_id())
            .cloned()
            .ok_or_else(|| CatalogError::not_found(Missing::Key, id))?;
        if key.admin && !p.key.admin {
            return Err(CatalogError::KeyRefused(
                "The server's admin key can only be revoked by an admin key.",
            ));
        }
        if key.admin && !self.keys.values().any(|k| k.admin && k.id != key.id) {
            return Err(CatalogError::invalid(
                "The last admin key cannot be revoked: create another admin key first.",
            ));
        }
        if key.id != p.key.id && !self.within_reach(p, &key.kind, key.view_grid.as_deref()) {
            return Err(CatalogError::KeyRefused(
                "This key can only revoke keys within its own privileges and access.",
            ));
        }
        self.commit(&[CatalogChange::delete(EntityKind::Key, id)])?;
        self.keyring.remove(&key.hash);
        self.keys.shift_remove(id);
        Ok(())
    }
}
