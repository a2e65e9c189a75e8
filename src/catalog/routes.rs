//! The route table: branch id -> grid actor, view id -> grid actor, with where each sits in the
//! tenancy tree; and the published glossaries (`glossaries::index`). Read lock-free by every
//! handler; written only by the supervisor.

use std::sync::Arc;

use actix::Addr;
use dashmap::DashMap;

use super::model::{CompanyId, ProjectId};
use crate::auth::Scope;
use crate::grid::actor::reads::ReadViews;
use crate::grid::actor::ReadSchema;
use crate::grid::schema::DateTimeFormat;
use crate::grid::schema::Schema;
use crate::grid::value::SourceStatus;
use crate::grid::GridActor;

/// Where a branch lives: its actor and its place in the tenancy tree.
#[derive(Debug, Clone)]
pub struct BranchRoute {
    pub addr: Addr<GridActor>,
    /// The view its page reads use without a round trip through the actor.
    pub reads: Arc<ReadViews>,
    pub company_id: CompanyId,
    pub project_id: ProjectId,
    pub database_id: String,
    pub grid_id: String,
    pub branch_id: String,
}

impl BranchRoute {
    /// The access scope of this branch, seen through `view` when given.
    pub fn scope<'a>(&'a self, view: Option<&'a str>) -> Scope<'a> {
        Scope::of_grid((self.company_id, self.project_id), &self.database_id, &self.grid_id, view)
    }

    pub fn is_master(&self) -> bool {
        self.branch_id == self.grid_id
    }

    /// The branch's schema: from its published view when one is held (no round trip through
    /// the actor), else from the actor, which then publishes one.
    pub async fn schema(&self) -> Result<Schema, actix::MailboxError> {
        if let Some(view) = self.reads.current() {
            return Ok(view.state.schema.clone());
        }
        self.addr.send(ReadSchema).await
    }
}

/// What a grid's settings make the default for what is created in it afterwards (see
/// `model::GridSettings`), read by the handlers that add records and create columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GridDefaults {
    /// The source status of source-language cells an add writes without one.
    pub source_status: SourceStatus,
    /// The format of datetime columns created without one.
    pub date_time_format: Option<DateTimeFormat>,
}

/// Branch and view routes. The master branch's route is found under the grid's id.
#[derive(Debug, Default)]
pub struct Routes {
    pub branches: DashMap<String, Arc<BranchRoute>>,
    pub views: DashMap<String, Arc<BranchRoute>>,
    /// By grid id, for grids whose settings are not the defaults.
    pub grid_defaults: DashMap<String, Arc<GridDefaults>>,
    /// The glossaries as last committed (`glossaries::index`), read by handlers directly.
    pub glossaries: Arc<super::glossaries::index::GlossaryIndex>,
    /// Every CDN by id, for the file server (`cdns`; unpublished ones too).
    pub cdns: DashMap<String, Arc<super::cdns::Cdn>>,
    /// Each company's turns for heavy writes, taken by its branches' actors.
    pub heavy_turns: crate::grid::actor::HeavyTurns,
}

impl Routes {
    pub fn branch(&self, id: &str) -> Option<Arc<BranchRoute>> {
        self.branches.get(id).map(|r| r.value().clone())
    }

    pub fn view(&self, id: &str) -> Option<Arc<BranchRoute>> {
        self.views.get(id).map(|r| r.value().clone())
    }

    /// The defaults of grid `id`'s settings.
    pub fn grid_defaults(&self, id: &str) -> Option<Arc<GridDefaults>> {
        self.grid_defaults.get(id).map(|d| d.value().clone())
    }

    /// The source status grid `id` gives source-language cells added without one.
    pub fn source_default(&self, id: &str) -> SourceStatus {
        self.grid_defaults(id).map(|d| d.source_status).unwrap_or_default()
    }

    /// Removes a branch and every view routed to it, returning the removed route.
    pub fn remove_branch(&self, branch_id: &str) -> Option<Arc<BranchRoute>> {
        self.views.retain(|_, r| r.branch_id != branch_id);
        self.branches.remove(branch_id).map(|(_, r)| r)
    }
}
