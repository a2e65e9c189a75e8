//! Supervisor operations on branches: list, look up, create from a copy of a source branch
//! (with new view ids), delete, the common point of two branches' lineages for merges, and
//! the `merging` status shown while a merge runs.
//!
//! A branch's records are not in the catalogue: a new branch's actor starts with a copy of its
//! source's state (copy-on-write, so a fresh branch costs almost no memory), and the catalogue
//! records where the copy was taken (`ForkPoint`). Until the branch's first snapshot is stored,
//! recovery rebuilds it from that point (`persist::recovery`), and the source is pinned so that
//! its own snapshots cannot pass the point.

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, Branch, ForkPoint, Grid, GridStatus, MergeResolve};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege};
use crate::grid::actor::BranchCopy;
use crate::grid::merge_resolve::CellChoice;
use crate::grid::ops::GridState;
use crate::ids;

fn branch_not_found(id: &str) -> CatalogError {
    CatalogError::not_found(Missing::Branch, id)
}

impl Supervisor {
    /// A branch and its grid, checked for this principal (404 branchIsNotFound otherwise).
    pub fn branch(
        &self,
        p: &Principal,
        id: &str,
        needed: Privilege,
    ) -> CatalogResult<(&Branch, &Grid)> {
        let branch = self.branches.get(id).ok_or_else(|| branch_not_found(id))?;
        let grid = self.grid(p, &branch.grid_id, needed).map_err(|e| {
            if e.is_missing(Missing::Grid) {
                branch_not_found(id)
            } else {
                e
            }
        })?;
        Ok((branch, grid))
    }

    /// The branches of a grid, master first.
    pub fn list_branches(&self, p: &Principal, grid_id: &str) -> CatalogResult<Vec<Branch>> {
        self.grid(p, grid_id, Privilege::Read)?;
        let mut branches: Vec<Branch> =
            self.branches.values().filter(|b| b.grid_id == grid_id).cloned().collect();
        branches.sort_by_key(|b| !b.is_master());
        Ok(branches)
    }

    /// Records a new branch started from `copy` of `source_id` (taken with the source pinned
    /// for `id`) and starts its actor. The copy's views get new ids.
    pub fn create_branch(
        &mut self,
        p: &Principal,
        source_id: &str,
        id: String,
        (name, description): (String, String),
        copy: BranchCopy,
    ) -> CatalogResult<Branch> {
        let created = self.record_branch(p, source_id, &id, (name, description), copy);
        if created.is_err() {
            self.durability.unpin(source_id, &id);
        }
        created
    }

    fn record_branch(
        &mut self,
        p: &Principal,
        source_id: &str,
        id: &str,
        (name, description): (String, String),
        copy: BranchCopy,
    ) -> CatalogResult<Branch> {
        let (source, grid) = self.branch(p, source_id, Privilege::Manage)?;
        let grid = grid.clone();
        let source = source.clone();
        let mut state = copy.state;
        let (views, default_view) = new_view_ids(&mut state)?;
        let fork = ForkPoint { wal_lsn: copy.wal_lsn, clock: state.store.clock(), views };
        let branch =
            forked_branch(id.to_owned(), (&grid, &source), (name, description), default_view, fork);
        let publisher = self.first_logged(&grid.id, &branch.id, &state)?;
        self.commit(&[CatalogChange::put(EntityKind::Branch, &branch.id, &branch)])?;
        self.start_branch_forked(&grid, &branch, state, Some(&source.id), publisher);
        self.branches.insert(branch.id.clone(), branch.clone());
        Ok(branch)
    }

    /// Records a branch restored from `source_id`'s history (`api::restore`): `state` is the
    /// source as it was, its views renamed (`new_view_ids`), and already stored as the new
    /// branch's snapshot covering WAL LSN `wal_lsn`, so it needs no pin. Its fork is the restored
    /// clock, where the two branches' lineages part for a merge back.
    pub fn create_restored_branch(
        &mut self,
        p: &Principal,
        source_id: &str,
        id: String,
        (name, description): (String, String),
        (state, wal_lsn, views): (GridState, u64, Vec<(String, String)>),
    ) -> CatalogResult<Branch> {
        let (source, grid) = self.branch(p, source_id, Privilege::Manage)?;
        let (source, grid) = (source.clone(), grid.clone());
        let default_view =
            state
                .schema
                .views
                .iter()
                .find(|v| v.is_default)
                .map(|v| v.id.clone())
                .ok_or(CatalogError::Internal("the restored branch has no default view"))?;
        let fork = ForkPoint { wal_lsn, clock: state.store.clock(), views };
        let branch = forked_branch(id, (&grid, &source), (name, description), default_view, fork);
        let publisher = self.first_logged(&grid.id, &branch.id, &state)?;
        self.commit(&[CatalogChange::put(EntityKind::Branch, &branch.id, &branch)])?;
        self.durability.track(&branch.id);
        self.start_branch_forked(&grid, &branch, state, None, publisher);
        self.branches.insert(branch.id.clone(), branch.clone());
        Ok(branch)
    }

    /// Renames a branch other than master and, when `description` is given, replaces its
    /// description (gridd's `PATCH /v1/branches/<id>`; master keeps its name).
    pub fn update_branch(
        &mut self,
        p: &Principal,
        id: &str,
        name: Option<&str>,
        description: Option<&str>,
    ) -> CatalogResult<Branch> {
        let (branch, _) = self.branch(p, id, Privilege::Manage)?;
        let mut branch = branch.clone();
        if let Some(name) = name {
            if branch.is_master() {
                return Err(CatalogError::invalid("The master branch keeps its name."));
            }
            branch.name = super::tenancy::check_name(name, "branch")?;
        }
        if let Some(description) = description {
            branch.description = super::tenancy::check_description(description)?;
        }
        self.commit(&[CatalogChange::put(EntityKind::Branch, &branch.id, &branch)])?;
        self.branches.insert(branch.id.clone(), branch.clone());
        Ok(branch)
    }

    /// Deletes a branch other than master: its actor stops, its routes and snapshots go.
    pub fn delete_branch(&mut self, p: &Principal, id: &str) -> CatalogResult<()> {
        let (branch, _) = self.branch(p, id, Privilege::Manage)?;
        if branch.is_master() {
            return Err(CatalogError::invalid(
                "The master branch cannot be deleted; delete the grid instead.",
            ));
        }
        let source = branch.source_branch_id.clone();
        let mut changes = vec![CatalogChange::delete(EntityKind::Branch, id)];
        changes.extend(self.resolves_of(&[id]));
        changes.extend(self.webhooks_deletion(|h| h.branch_id == id));
        self.commit(&changes)?;
        self.forget_resolves(&[id]);
        self.forget_webhooks(|h| h.branch_id == id);
        if let Some(route) = self.routes.remove_branch(id) {
            route.addr.do_send(crate::grid::actor::Shutdown);
        }
        if let Some(grid_id) = self.branches.get(id).map(|b| b.grid_id.clone()) {
            self.forget_in_cluster(&grid_id, &[id.to_owned()], false);
        }
        if let Some(source) = source {
            self.durability.unpin(&source, id);
        }
        self.durability.forget(id);
        self.branches.shift_remove(id);
        Ok(())
    }

    /// True while a branch copied from `id` has no snapshot yet (deleting `id` must wait).
    pub fn branch_is_pinned(&self, id: &str) -> bool {
        self.durability.is_pinned(id)
    }

    /// The clock where the lineages of two branches of one grid part: below their nearest
    /// common ancestor, the earlier of the two forks from it. 422 for branches of different
    /// grids or a branch merged into itself.
    pub fn lineage_point(&self, source_id: &str, destination_id: &str) -> CatalogResult<u32> {
        if source_id == destination_id {
            return Err(CatalogError::MergeIntoItself);
        }
        let chain = |start: &str| -> Vec<&Branch> {
            let mut chain = Vec::new();
            let mut at = self.branches.get(start);
            while let Some(branch) = at {
                if chain.iter().any(|b: &&Branch| b.id == branch.id) {
                    break;
                }
                chain.push(branch);
                at = branch.source_branch_id.as_deref().and_then(|s| self.branches.get(s));
            }
            chain
        };
        let (from, to) = (chain(source_id), chain(destination_id));
        let Some(common) = from.iter().position(|b| to.iter().any(|t| t.id == b.id)) else {
            return Err(CatalogError::UnrelatedBranches);
        };
        let ancestor = &from[common].id;
        let below = |chain: &[&Branch]| -> Option<u32> {
            let at = chain.iter().position(|b| &b.id == ancestor)?;
            let child = chain.get(at.checked_sub(1)?)?;
            child.fork.as_ref().map(|f| f.clock)
        };
        [below(&from), below(&to)]
            .into_iter()
            .flatten()
            .min()
            .ok_or(CatalogError::UnrelatedBranches)
    }

    /// Shows a status (`merging`, `importing`, ...) on branches and, for a master branch, its
    /// grid; `Active` clears it. Not persisted: a task cut off by a restart leaves nothing in
    /// that status.
    pub fn set_status(&mut self, branch_ids: &[&str], status: GridStatus) {
        for id in branch_ids {
            if let Some(branch) = self.branches.get_mut(*id) {
                branch.status = status;
                if branch.is_master() {
                    if let Some(grid) = self.grids.get_mut(&branch.grid_id) {
                        grid.status = status;
                    }
                }
            }
        }
    }
}

/// The last merge's cell choices between two branches (`useLastMergeResolve`).
impl Supervisor {
    /// The cell choices of the last successful merge from `source` into `destination` (none
    /// when they were never merged, or merged without choices).
    pub fn last_resolve(&self, source: &str, destination: &str) -> Vec<CellChoice> {
        let key = MergeResolve::key(source, destination);
        self.resolves.get(&key).map(|r| r.choices.clone()).unwrap_or_default()
    }

    /// Keeps `choices` as the last merge's from `source` into `destination`.
    pub fn remember_resolve(
        &mut self,
        source: &str,
        destination: &str,
        choices: Vec<CellChoice>,
    ) -> CatalogResult<()> {
        let key = MergeResolve::key(source, destination);
        let resolve = MergeResolve {
            source_branch_id: source.to_owned(),
            destination_branch_id: destination.to_owned(),
            choices,
            created_time: now_timestamp(),
        };
        self.commit(&[CatalogChange::put(EntityKind::MergeResolve, &key, &resolve)])?;
        self.resolves.insert(key, resolve);
        Ok(())
    }

    /// The deletions of the kept choices of merges from or into `branches`.
    pub(super) fn resolves_of(&self, branches: &[&str]) -> Vec<CatalogChange> {
        self.resolves
            .iter()
            .filter(|(_, r)| {
                branches.iter().any(|b| r.source_branch_id == *b || r.destination_branch_id == *b)
            })
            .map(|(key, _)| CatalogChange::delete(EntityKind::MergeResolve, key))
            .collect()
    }

    /// Forgets the kept choices of merges from or into `branches` (their deletion is durable).
    pub(super) fn forget_resolves(&mut self, branches: &[&str]) {
        self.resolves.retain(|_, r| {
            !branches.iter().any(|b| r.source_branch_id == *b || r.destination_branch_id == *b)
        });
    }
}

/// A new active branch of `grid` forked from `source` at `fork`.
fn forked_branch(
    id: String,
    (grid, source): (&Grid, &Branch),
    (name, description): (String, String),
    default_access_view_id: String,
    fork: ForkPoint,
) -> Branch {
    Branch {
        id,
        grid_id: grid.id.clone(),
        name,
        description,
        source_branch_id: Some(source.id.clone()),
        default_access_view_id,
        created_time: now_timestamp(),
        status: GridStatus::Active,
        fork: Some(fork),
    }
}

/// Gives a branch copy's views new ids (each branch has its own views): the pairs (old, new)
/// and the new id of the default view.
pub fn new_view_ids(state: &mut GridState) -> CatalogResult<(Vec<(String, String)>, String)> {
    let views: Vec<(String, String)> =
        state.schema.views.iter().map(|v| (v.id.clone(), ids::generate())).collect();
    let default_view = state
        .schema
        .views
        .iter()
        .zip(&views)
        .find(|(v, _)| v.is_default)
        .map(|(_, (_, new))| new.clone())
        .ok_or(CatalogError::Internal("the source branch has no default view"))?;
    state.rename_views(&views);
    Ok((views, default_view))
}
