//! Supervisor operations on grids and their branches: create (starting the grid actor), rename,
//! metadata, delete (stopping actors, dropping routes, removing uploaded files), and view route
//! registration.

use std::collections::HashMap;
use std::sync::Arc;

use actix::Actor;
use indexmap::IndexMap;

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, Branch, Grid, GridStatus, RecordIdentifierType};
use super::routes::BranchRoute;
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use super::tenancy::check_client_id;
use crate::auth::{Principal, Privilege};
use crate::cluster::publisher::BranchPublisher;
use crate::grid::actor::reads::ReadViews;
use crate::grid::actor::Shutdown;
use crate::grid::ops::{GridOp, GridState};
use crate::grid::schema::{ColumnDef, Dependency, ViewDef};
use crate::grid::store::RecordIdentity;
use crate::grid::GridActor;
use crate::ids;
use crate::persist::entry::WalEntry;
use crate::persist::recovery::BranchSeed;
use crate::persist::wal::Durable;

/// The most metadata keys a grid may carry.
pub const MAX_METADATA_KEYS: usize = 50;

/// The grid metadata key that lists a grid in `GET /v1/template-grids` (value `"true"`).
pub const TEMPLATE_KEY: &str = "template";

/// What a new grid starts with.
#[derive(Debug, Clone, Default)]
pub struct NewGrid {
    /// The id the client chose (`^\w+$`), else a random one.
    pub id: Option<String>,
    pub name: String,
    pub metadata: IndexMap<String, String>,
    pub record_identifier_type: RecordIdentifierType,
    pub columns: Vec<ColumnDef>,
    /// A template's dependencies between those columns (given new ids here).
    pub dependencies: Vec<Dependency>,
    /// A template's views other than its default one (given new ids here).
    pub views: Vec<ViewDef>,
}

/// Refuses metadata with more than `MAX_METADATA_KEYS` keys.
pub(super) fn check_metadata(metadata: &IndexMap<String, String>) -> CatalogResult<()> {
    if metadata.len() > MAX_METADATA_KEYS {
        return Err(CatalogError::TooManyMetadataKeys { keys: metadata.len() });
    }
    Ok(())
}

impl Supervisor {
    pub fn list_grids(&self, p: &Principal, db_id: &str) -> CatalogResult<Vec<Grid>> {
        self.database(p, db_id, Privilege::Read)?;
        Ok(self
            .grids
            .values()
            .filter(|g| g.database_id == db_id)
            .filter(|g| p.sees(&grid_scope(g)))
            .cloned()
            .collect())
    }

    /// The template grids the key sees: grids whose metadata marks them `"template": "true"`
    /// (`TEMPLATE_KEY`), newest first; any of them (or any grid the key reads) can be the
    /// `templateGridId` of a new grid.
    pub fn template_grids(&self, p: &Principal) -> Vec<Grid> {
        let mut grids: Vec<Grid> = self
            .grids
            .values()
            .filter(|g| g.metadata.get(TEMPLATE_KEY).is_some_and(|v| v == "true"))
            .filter(|g| p.sees(&grid_scope(g)))
            .cloned()
            .collect();
        grids.sort_by(|a, b| b.created_time.cmp(&a.created_time).then_with(|| a.id.cmp(&b.id)));
        grids
    }

    pub fn grid(&self, p: &Principal, id: &str, needed: Privilege) -> CatalogResult<&Grid> {
        let not_found = || CatalogError::not_found(Missing::Grid, id);
        let grid = self.grids.get(id).ok_or_else(not_found)?;
        p.authorize(&grid_scope(grid), needed, not_found)?;
        Ok(grid)
    }

    pub fn branch_record(&self, id: &str) -> Option<&Branch> {
        self.branches.get(id)
    }

    /// Creates a grid and its master branch; the returned future resolves when the branch's
    /// initial state is durable in the WAL.
    pub fn create_grid(
        &mut self,
        p: &Principal,
        db_id: &str,
        spec: NewGrid,
    ) -> CatalogResult<(Grid, Durable)> {
        let db = self.database(p, db_id, Privilege::Manage)?.clone();
        check_metadata(&spec.metadata)?;
        let name = spec.name.trim();
        if name.chars().count() > 255 {
            return Err(CatalogError::invalid("The grid name is longer than 255 characters."));
        }
        let now = now_timestamp();
        let id = match &spec.id {
            // A master branch has its grid's id: it must be free among branches too.
            Some(id) => check_client_id(
                id,
                "grid",
                self.grids.contains_key(id) || self.branches.contains_key(id),
            )?,
            None => match &self.cluster {
                Some(cluster) => cluster.grid_id_placed_here(ids::generate),
                None => ids::generate(),
            },
        };
        let grid = Grid {
            id: id.clone(),
            company_id: db.company_id,
            project_id: db.project_id,
            database_id: db.id.clone(),
            name: if name.is_empty() { "Untitled grid".to_owned() } else { name.to_owned() },
            metadata: spec.metadata,
            record_identifier_type: spec.record_identifier_type,
            default_access_view_id: ids::generate(),
            created_time: now.clone(),
            status: GridStatus::Active,
            settings: Default::default(),
        };
        let master = Branch::master_of(&grid, now);
        // In a cluster the grid's lease and its master's log come first: nobody else may
        // take the grid once the catalogue shows it.
        self.claim_new_grid(&grid.id)?;
        let claimed = self.branch_publisher(&grid.id, &master.id).and_then(|publisher| {
            self.commit(&[
                CatalogChange::put(EntityKind::Grid, &grid.id, &grid),
                CatalogChange::put(EntityKind::Branch, &master.id, &master),
            ])?;
            Ok(publisher)
        });
        let publisher = claimed.inspect_err(|_| {
            self.forget_in_cluster(&grid.id, std::slice::from_ref(&master.id), true)
        })?;
        let ops = initial_ops(
            &master.default_access_view_id,
            spec.columns,
            spec.dependencies,
            spec.views,
        );
        let durable = self.start_master(&grid, &master, ops, publisher)?;
        self.grids.insert(grid.id.clone(), grid.clone());
        self.branches.insert(master.id.clone(), master);
        Ok((grid, durable))
    }

    /// Logs a new grid's master branch with its first `ops` and starts its actor; the future
    /// resolves when they are durable.
    fn start_master(
        &mut self,
        grid: &Grid,
        master: &Branch,
        ops: Vec<GridOp>,
        publisher: Option<BranchPublisher>,
    ) -> CatalogResult<Durable> {
        let entry = WalEntry::now(master.id.clone(), ops);
        let payload = entry.encode();
        let copy = publisher.as_ref().map(|_| payload.clone());
        let appended = self
            .durability
            .wal
            .append(payload)
            .map_err(|err| CatalogError::NotLogged { what: "new grid", reason: err.to_string() })?;
        let durable = match (&publisher, copy) {
            (Some(publisher), Some(copy)) => publisher.publish(copy, appended.durable),
            _ => appended.durable,
        };
        let mut state = GridState::empty(identity(grid.record_identifier_type));
        // The first base is the branch before its first entry, which is not durable yet: a
        // base must never claim a position the log may lose.
        self.durability.store_first_base(&master.id, appended.lsn - 1, &state);
        for op in &entry.ops {
            state.apply(op);
        }
        self.durability.track(&master.id);
        self.start_branch_forked(grid, master, state, None, publisher);
        Ok(durable)
    }

    /// Renames a grid and merges metadata (a `None` value removes that key).
    pub fn update_grid(
        &mut self,
        p: &Principal,
        id: &str,
        name: Option<String>,
        metadata: Option<IndexMap<String, Option<String>>>,
    ) -> CatalogResult<Grid> {
        let mut grid = self.grid(p, id, Privilege::Manage)?.clone();
        if let Some(name) = name {
            let name = name.trim();
            if name.is_empty() || name.chars().count() > 255 {
                return Err(CatalogError::invalid("The grid name must be 1 to 255 characters."));
            }
            grid.name = name.to_owned();
        }
        if let Some(patch) = metadata {
            for (key, value) in patch {
                match value {
                    Some(value) => {
                        grid.metadata.insert(key, value);
                    }
                    None => {
                        grid.metadata.shift_remove(&key);
                    }
                }
            }
            check_metadata(&grid.metadata)?;
        }
        self.commit(&[CatalogChange::put(EntityKind::Grid, id, &grid)])?;
        self.grids.insert(id.to_owned(), grid.clone());
        Ok(grid)
    }

    pub fn delete_grid(&mut self, p: &Principal, id: &str) -> CatalogResult<()> {
        self.grid(p, id, Privilege::Manage)?;
        let changes = self.grid_deletion(id);
        self.commit(&changes)?;
        self.forget_grid(id);
        Ok(())
    }

    pub(super) fn grid_deletion(&self, id: &str) -> Vec<CatalogChange> {
        let mut changes = vec![CatalogChange::delete(EntityKind::Grid, id)];
        for branch in self.branches.values().filter(|b| b.grid_id == id) {
            changes.push(CatalogChange::delete(EntityKind::Branch, &branch.id));
        }
        for backup in self.backups.values().filter(|b| b.grid_id == id) {
            changes.push(CatalogChange::delete(EntityKind::Backup, &backup.id));
        }
        changes.extend(self.grid_files_deletion(id));
        let branches: Vec<&str> =
            self.branches.values().filter(|b| b.grid_id == id).map(|b| b.id.as_str()).collect();
        changes.extend(self.resolves_of(&branches));
        changes.extend(self.webhooks_deletion(|h| h.grid_id == id));
        changes.extend(self.cdns_deletion(id));
        changes
    }

    pub(super) fn forget_grid(&mut self, id: &str) {
        self.forget_webhooks(|h| h.grid_id == id);
        self.forget_cdns(id);
        let branch_ids: Vec<String> =
            self.branches.values().filter(|b| b.grid_id == id).map(|b| b.id.clone()).collect();
        self.forget_resolves(&branch_ids.iter().map(String::as_str).collect::<Vec<_>>());
        self.forget_in_cluster(id, &branch_ids, true);
        for branch_id in branch_ids {
            if let Some(route) = self.routes.remove_branch(&branch_id) {
                route.addr.do_send(Shutdown);
            }
            self.durability.forget(&branch_id);
            self.branches.shift_remove(&branch_id);
        }
        let backups: Vec<String> =
            self.backups.values().filter(|b| b.grid_id == id).map(|b| b.id.clone()).collect();
        for backup in backups {
            self.durability.delete_backup(&backup);
            self.backups.shift_remove(&backup);
        }
        self.forget_grid_files(id);
        self.routes.grid_defaults.remove(id);
        self.grids.shift_remove(id);
    }

    /// Starts a branch's actor on the next arbiter and routes the branch and its views to it.
    /// `fork_source` names the branch it was copied from while it has no snapshot of its own
    /// (that branch is pinned for it; the actor writes its first snapshot at once).
    pub(super) fn start_branch_forked(
        &mut self,
        grid: &Grid,
        branch: &Branch,
        state: GridState,
        fork_source: Option<&str>,
        publisher: Option<BranchPublisher>,
    ) -> Arc<BranchRoute> {
        let view_ids: Vec<String> = state.schema.views.iter().map(|v| v.id.clone()).collect();
        let (grid_id, branch_id) = (grid.id.clone(), branch.id.clone());
        let arbiter = self.next_arbiter();
        let durability = self.durability.clone();
        let fork_source = fork_source.map(str::to_owned);
        let reads = Arc::new(ReadViews::default());
        let actor_reads = reads.clone();
        let turns = self.routes.heavy_turns.company(grid.company_id);
        let addr = GridActor::start_in_arbiter(&arbiter, move |_| {
            let actor = GridActor::with_state(&grid_id, &branch_id, state, durability, turns)
                .with_reads(actor_reads)
                .with_publisher(publisher);
            match fork_source {
                Some(source) => actor.forked(&source),
                None => actor,
            }
        });
        let route = Arc::new(BranchRoute {
            addr,
            reads,
            company_id: grid.company_id,
            project_id: grid.project_id,
            database_id: grid.database_id.clone(),
            grid_id: grid.id.clone(),
            branch_id: branch.id.clone(),
        });
        self.routes.branches.insert(branch.id.clone(), route.clone());
        for view_id in view_ids {
            self.routes.views.insert(view_id, route.clone());
        }
        route
    }

    /// Starts every branch of the catalogue with its recovered state (a branch without one
    /// starts empty with its default view). `forked` lists the branches recovered from their
    /// source's state (no snapshot of their own yet): their sources are pinned before any
    /// actor starts.
    pub fn start_branches(
        &mut self,
        mut states: HashMap<String, GridState>,
        forked: &std::collections::HashSet<String>,
    ) {
        let branches: Vec<Branch> = self.branches.values().cloned().collect();
        for branch in branches.iter().filter(|b| forked.contains(&b.id)) {
            if let Some(source) = &branch.source_branch_id {
                self.durability.pin(source, &branch.id);
            }
        }
        for branch in branches {
            let Some(grid) = self.grids.get(&branch.grid_id).cloned() else {
                tracing::warn!(branch = %branch.id, "branch without a grid ignored");
                continue;
            };
            let state = states.remove(&branch.id).unwrap_or_else(|| {
                GridState::new(
                    &branch.default_access_view_id,
                    Vec::new(),
                    identity(grid.record_identifier_type),
                )
            });
            let fork_source =
                branch.source_branch_id.as_deref().filter(|_| forked.contains(&branch.id));
            self.start_branch_forked(&grid, &branch, state, fork_source, None);
        }
    }

    /// Routes a view the branch's actor just created.
    pub fn register_view(&mut self, branch_id: &str, view_id: &str) {
        if let Some(route) = self.routes.branch(branch_id) {
            self.routes.views.insert(view_id.to_owned(), route);
        }
    }

    pub fn unregister_view(&mut self, view_id: &str) {
        self.routes.views.remove(view_id);
    }

    /// What recovery needs to rebuild each branch.
    pub fn branch_seeds(&self) -> Vec<BranchSeed> {
        self.branches
            .values()
            .filter_map(|b| {
                let grid = self.grids.get(&b.grid_id)?;
                Some(BranchSeed {
                    branch_id: b.id.clone(),
                    identity: identity(grid.record_identifier_type),
                    default_view_id: b.default_access_view_id.clone(),
                    fork: b.source_branch_id.clone().zip(b.fork.clone()),
                })
            })
            .collect()
    }
}

/// How the store identifies records of a grid of this type.
pub fn identity(t: RecordIdentifierType) -> RecordIdentity {
    match t {
        RecordIdentifierType::RecordId => RecordIdentity::RecordId,
        RecordIdentifierType::PathTagRecordId => RecordIdentity::PathAndId,
    }
}

fn grid_scope(grid: &Grid) -> crate::auth::Scope<'_> {
    crate::auth::Scope {
        company: grid.company_id,
        project: Some(grid.project_id),
        database: Some(&grid.database_id),
        grid: Some(&grid.id),
        view: None,
    }
}

/// A new branch's first ops: its default view `view_id`, then the columns, dependencies and
/// (other) views it starts with, each dependency and view under a new id.
fn initial_ops(
    view_id: &str,
    columns: Vec<ColumnDef>,
    dependencies: Vec<Dependency>,
    views: Vec<ViewDef>,
) -> Vec<GridOp> {
    let mut ops = vec![GridOp::CreateView(ViewDef {
        id: view_id.to_owned(),
        name: "Default view".to_owned(),
        is_default: true,
        columns: Vec::new(),
    })];
    ops.extend(columns.into_iter().map(|column| GridOp::CreateColumn {
        column,
        view_id: None,
        editable: true,
    }));
    ops.extend(dependencies.into_iter().map(|dependency| {
        GridOp::CreateDependency(Dependency { id: ids::generate(), ..dependency })
    }));
    ops.extend(views.into_iter().filter(|v| !v.is_default).map(|view| {
        GridOp::CreateView(ViewDef { id: ids::generate(), is_default: false, ..view })
    }));
    ops
}
