//! Supervisor operations on branches: list, look up, create from a copy of a source branch
//! (with new view ids), delete, the common point of two branches' lineages for merges, and
//! the `merging` status shown while a merge runs.
//!
//! A branch's records are not in the catalogue: a new branch's actor starts with a copy of its
//! source's state (copy-on-write, so a fresh branch costs almost no memory), and the catalogue
//! records where the copy was taken (`ForkPoint`). Until the branch's first snapshot is stored,
//! recovery rebuilds it from that point (`persist::recovery`), and the source is pinned so that
//! its own snapshots cannot pass the point.

use super::cluster_grids::FirstImage;
use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, Branch, ForkPoint, Grid, GridStatus, MergeResolve};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege};
use crate::cluster::publisher::BranchPublisher;
use crate::grid::actor::BranchCopy;
use crate::grid::merge_resolve::CellChoice;
use crate::grid::ops::GridState;
use crate::ids;

/// A branch made from a copy or a restore but not recorded yet (`Supervisor::prepare_branch`).
pub struct PreparedBranch {
    branch: Branch,
    source_id: String,
    state: GridState,
    publisher: Option<BranchPublisher>,
    /// In a cluster: the store of the branch's first image, which the caller awaits (off the
    /// supervisor) before `record_prepared`; its log starts after it.
    pub image: Option<FirstImage>,
    /// Made by a restore (tracked, no pin) rather than from a copy.
    restored: bool,
}

impl std::fmt::Debug for PreparedBranch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedBranch").field("branch", &self.branch.id).finish_non_exhaustive()
    }
}

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

    /// Makes a new branch from `copy` of `source_id` (taken with the source pinned for `id`;
    /// its views get new ids), not recorded yet: in a cluster its log is fenced and its first
    /// image queued (`PreparedBranch::image`, which the caller awaits off this actor before
    /// `record_prepared`). A refusal unpins the source.
    pub fn prepare_branch(
        &mut self,
        p: &Principal,
        source_id: &str,
        id: String,
        (name, description): (String, String),
        copy: BranchCopy,
    ) -> CatalogResult<PreparedBranch> {
        let prepared = self.prepare_copy(p, source_id, &id, (name, description), copy);
        if prepared.is_err() {
            self.durability.unpin(source_id, &id);
        }
        prepared
    }

    fn prepare_copy(
        &mut self,
        p: &Principal,
        source_id: &str,
        id: &str,
        (name, description): (String, String),
        copy: BranchCopy,
    ) -> CatalogResult<PreparedBranch> {
        let (source, grid) = self.branch(p, source_id, Privilege::Manage)?;
        let (source, grid) = (source.clone(), grid.clone());
        let mut state = copy.state;
        let (views, default_view) = new_view_ids(&mut state)?;
        let fork = ForkPoint { wal_lsn: copy.wal_lsn, clock: state.store.clock(), views };
        let branch =
            forked_branch(id.to_owned(), (&grid, &source), (name, description), default_view, fork);
        let (publisher, image) = self.first_logged(&grid.id, &branch.id, &state)?;
        Ok(PreparedBranch {
            branch,
            source_id: source.id,
            state,
            publisher,
            image,
            restored: false,
        })
    }

    /// Makes a branch restored from `source_id`'s history (`api::restore`), not recorded yet
    /// (see `prepare_branch`): `state` is the source as it was, its views renamed
    /// (`new_view_ids`), and already stored as the new branch's snapshot covering WAL LSN
    /// `wal_lsn`, so it needs no pin. Its fork is the restored clock, where the two branches'
    /// lineages part for a merge back.
    pub fn prepare_restored_branch(
        &mut self,
        p: &Principal,
        source_id: &str,
        id: String,
        (name, description): (String, String),
        (state, wal_lsn, views): (GridState, u64, Vec<(String, String)>),
    ) -> CatalogResult<PreparedBranch> {
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
        let (publisher, image) = self.first_logged(&grid.id, &branch.id, &state)?;
        Ok(PreparedBranch { branch, source_id: source.id, state, publisher, image, restored: true })
    }

    /// Records a prepared branch (its first image stored, in a cluster) and starts its actor.
    /// The grid and the source must still be there; a refusal abandons the branch.
    pub fn record_prepared(
        &mut self,
        p: &Principal,
        prepared: PreparedBranch,
    ) -> CatalogResult<Branch> {
        let grid = match self.branch(p, &prepared.source_id, Privilege::Manage) {
            Ok((_, grid)) => grid.clone(),
            Err(err) => {
                self.abandon_prepared(prepared);
                return Err(err);
            }
        };
        let PreparedBranch { branch, source_id, state, publisher, restored, .. } = prepared;
        let put = CatalogChange::put(EntityKind::Branch, &branch.id, &branch);
        if let Err(err) = self.commit(&[put]) {
            self.forget_in_cluster(&grid.id, std::slice::from_ref(&branch.id), false);
            if !restored {
                self.durability.unpin(&source_id, &branch.id);
            }
            return Err(err);
        }
        if restored {
            self.durability.track(&branch.id);
        }
        let fork_source = (!restored).then_some(source_id.as_str());
        self.start_branch_forked(&grid, &branch, state, fork_source, publisher);
        self.branches.insert(branch.id.clone(), branch.clone());
        Ok(branch)
    }

    /// Gives a prepared branch up (its first image was not stored, or it was refused): its
    /// publisher stops, its log and image go, the source is unpinned.
    pub fn abandon_prepared(&mut self, prepared: PreparedBranch) {
        let branch = &prepared.branch;
        self.forget_in_cluster(&branch.grid_id, std::slice::from_ref(&branch.id), false);
        if !prepared.restored {
            self.durability.unpin(&prepared.source_id, &branch.id);
        }
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
        let mut changes = vec![CatalogChange::delete(EntityKind::Branch, id)];
        changes.extend(self.resolves_of(&[id]));
        changes.extend(self.webhooks_deletion(|h| h.branch_id == id));
        self.commit(&changes)?;
        self.forget_branch(id);
        Ok(())
    }

    /// Forgets a branch (its deletion is durable): its actor stops, its routes, merge choices,
    /// webhooks and snapshots go.
    pub(super) fn forget_branch(&mut self, id: &str) {
        let source = self.branches.get(id).and_then(|b| b.source_branch_id.clone());
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
