//! Reference cells across branches (decisions.md section 4): a write's referenced record ids
//! are checked against the referenced branch by the writing branch's actor (404
//! referenceRecordNotFound; `grid::references::check_written`), through the branches a key may
//! read (`KeyLookup`), and a read's reference cells get the referenced column's current
//! values. Both ask each referenced branch once per request, never once per cell, and only
//! branches of the same company.
//!
//! A reference is no way around access: a company key writes ids into a reference cell, or
//! reads its referenced values, only when it may read the referenced grid (403 accessDenied
//! otherwise, before anything is written). A view key reads and writes what its view shows (the
//! view is its boundary, as for share pages). A write's answer hides (empty values) what the
//! key may not read, so an accepted write is never answered with an error.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::remote::{Remote, RemoteRoute};
use crate::auth::{KeyKind, Principal, Privilege, Scope};
use crate::catalog::model::CompanyId;
use crate::catalog::routes::{BranchRoute, Routes};
use crate::error::{ApiError, ApiResult};
use crate::grid::error::{GridError, GridResult};
use crate::grid::read::RecordOut;
use crate::grid::references::{
    FindMissing, ReadReferenced, ReferenceColumns, ReferenceLookup, Referenced,
};
use crate::grid::render::ReferenceTargets;
use crate::grid::schema::{ColumnType, ReferenceSetting, Schema};
use crate::grid::value::CellValue;
use crate::state::AppState;

/// Who reads referenced values, and what happens to a referenced grid they may not read.
#[derive(Clone, Copy)]
pub enum ReferenceReader<'a> {
    /// A public share page: its view decides what it shows.
    Share,
    /// A key whose read is refused (403) when it may not read a referenced grid.
    Refuse(&'a Principal),
    /// A key for which the values of grids it may not read are left empty.
    Hide(&'a Principal),
}

/// Whether `p` may read the grid of a branch with access scope `scope` through a reference: a
/// company key needs read access to it, a view key reads what its view shows.
pub fn may_read_target(p: &Principal, scope: &Scope<'_>) -> bool {
    match &p.key.kind {
        KeyKind::View { .. } => scope.company == p.company_id(),
        KeyKind::Company { .. } => {
            p.authorize(scope, Privilege::Read, || ApiError::internal("")).is_ok()
        }
    }
}

/// The refusal (403 accessDenied) of a reference to a grid the key may not read.
fn unreadable(setting: &ReferenceSetting) -> GridError {
    GridError::ReferenceUnreadable { grid_id: setting.grid_id.clone() }
}

/// Refuses (403 accessDenied) when `p` may not read a grid one of `columns` points at.
pub async fn check_reference_access(
    state: &AppState,
    p: &Principal,
    columns: &ReferenceColumns,
) -> ApiResult<()> {
    for (_, setting) in columns {
        let remote = state.remote.as_ref();
        if let Some(found) = target(&state.routes, remote, p.company_id(), setting).await? {
            if !may_read_target(p, &found.scope()) {
                return Err(unreadable(setting).into());
            }
        }
    }
    Ok(())
}

/// A branch a reference points at: served by this node, or (in a cluster) by another.
#[derive(Debug, Clone)]
pub enum TargetBranch {
    Here(Arc<BranchRoute>),
    /// Another node's, with this node's way of asking it.
    There(RemoteRoute, Arc<Remote>),
}

impl TargetBranch {
    /// The branch's access scope.
    pub fn scope(&self) -> Scope<'_> {
        match self {
            TargetBranch::Here(route) => route.scope(None),
            TargetBranch::There(route, _) => route.scope(None),
        }
    }

    pub fn grid_id(&self) -> &str {
        match self {
            TargetBranch::Here(route) => &route.grid_id,
            TargetBranch::There(route, _) => &route.grid_id,
        }
    }

    fn company_id(&self) -> CompanyId {
        match self {
            TargetBranch::Here(route) => route.company_id,
            TargetBranch::There(route, _) => route.company_id,
        }
    }

    fn branch_id(&self) -> &str {
        match self {
            TargetBranch::Here(route) => &route.branch_id,
            TargetBranch::There(route, _) => &route.branch_id,
        }
    }

    /// The branch's schema.
    pub async fn schema(&self) -> GridResult<Schema> {
        match self {
            TargetBranch::Here(route) => Ok(route.schema().await?),
            TargetBranch::There(route, remote) => remote.schema(route).await,
        }
    }

    /// The ids among `ids` that name no record of the branch.
    async fn find_missing(&self, ids: Vec<String>) -> GridResult<Vec<String>> {
        match self {
            TargetBranch::Here(route) => Ok(route.addr.send(FindMissing { ids }).await?),
            TargetBranch::There(route, remote) => remote.find_missing(route, ids).await,
        }
    }

    /// Per (column, ids) request, the column's values for those ids.
    async fn read_referenced(
        &self,
        requests: Vec<(String, Vec<String>)>,
    ) -> GridResult<Vec<Option<Referenced>>> {
        match self {
            TargetBranch::Here(route) => Ok(route.addr.send(ReadReferenced { requests }).await?),
            TargetBranch::There(route, remote) => remote.read_referenced(route, requests).await,
        }
    }
}

/// The branch a reference points at, if it exists and belongs to `company_id`: from this
/// node's routes, else from the node of the cluster that serves it.
pub async fn target(
    routes: &Routes,
    remote: Option<&Arc<Remote>>,
    company_id: CompanyId,
    r: &ReferenceSetting,
) -> GridResult<Option<TargetBranch>> {
    target_branch(routes, remote, company_id, &r.grid_id, ReferenceTargets::branch_of(r)).await
}

/// Branch `branch_id` of grid `grid_id`, if it exists and belongs to `company_id`: from this
/// node's routes, else from the node of the cluster that serves it.
pub async fn target_branch(
    routes: &Routes,
    remote: Option<&Arc<Remote>>,
    company_id: CompanyId,
    grid_id: &str,
    branch_id: &str,
) -> GridResult<Option<TargetBranch>> {
    let found = match (routes.branch(branch_id), remote) {
        (Some(route), _) => Some(TargetBranch::Here(route)),
        (None, Some(remote)) => {
            remote.route(branch_id).await?.map(|route| TargetBranch::There(route, remote.clone()))
        }
        (None, None) => None,
    };
    Ok(found.filter(|t| {
        t.company_id() == company_id && t.grid_id() == grid_id && t.branch_id() == branch_id
    }))
}

/// The branches a key's write finds its referenced records in (`references::check_written`,
/// run by the writing branch's actor): the company's own, and only those the key may read.
pub struct KeyLookup {
    routes: Arc<Routes>,
    remote: Option<Arc<Remote>>,
    principal: Principal,
}

impl KeyLookup {
    pub fn boxed(state: &AppState, p: &Principal) -> Box<dyn ReferenceLookup> {
        Box::new(KeyLookup {
            routes: state.routes.clone(),
            remote: state.remote.clone(),
            principal: p.clone(),
        })
    }
}

impl ReferenceLookup for KeyLookup {
    fn find_missing(
        &self,
        setting: &ReferenceSetting,
        ids: Vec<String>,
    ) -> BoxFuture<'static, GridResult<Vec<String>>> {
        let (routes, remote) = (self.routes.clone(), self.remote.clone());
        let (principal, setting) = (self.principal.clone(), setting.clone());
        Box::pin(async move {
            let company = principal.company_id();
            match target(&routes, remote.as_ref(), company, &setting).await? {
                Some(found) if !may_read_target(&principal, &found.scope()) => {
                    Err(unreadable(&setting))
                }
                Some(found) => found.find_missing(ids).await,
                None => Ok(ids),
            }
        })
    }
}

/// The reference cells of one column on a page: what they point at, and every id they hold,
/// sorted and each once.
struct Wanted {
    column: Arc<str>,
    setting: Arc<ReferenceSetting>,
    ids: Vec<String>,
}

/// Fills in the referenced values of the reference cells of `records` (read from `branch`),
/// asking every referenced branch at once. A reference to a branch that is gone (or not the
/// company's) shows empty values.
pub async fn resolve_references(
    state: &AppState,
    reader: ReferenceReader<'_>,
    branch: &BranchRoute,
    records: &mut [RecordOut],
) -> ApiResult<()> {
    let wanted = wanted_columns(records);
    // One request per referenced branch, holding every column that points there.
    let mut by_branch: Vec<(&str, Vec<usize>)> = Vec::new();
    for (at, w) in wanted.iter().enumerate() {
        let branch_id = ReferenceTargets::branch_of(&w.setting);
        match by_branch.iter_mut().find(|(b, _)| *b == branch_id) {
            Some((_, columns)) => columns.push(at),
            None => by_branch.push((branch_id, vec![at])),
        }
    }
    let mut targets = Vec::with_capacity(by_branch.len());
    for (_, columns) in by_branch {
        let setting = &wanted[columns[0]].setting;
        let remote = state.remote.as_ref();
        let Some(target) = target(&state.routes, remote, branch.company_id, setting).await? else {
            continue;
        };
        match reader {
            ReferenceReader::Share => {}
            ReferenceReader::Refuse(p) if !may_read_target(p, &target.scope()) => {
                return Err(unreadable(setting).into())
            }
            ReferenceReader::Hide(p) if !may_read_target(p, &target.scope()) => continue,
            ReferenceReader::Refuse(_) | ReferenceReader::Hide(_) => {}
        }
        targets.push((columns, target));
    }
    let asks = targets.into_iter().map(|(columns, target)| {
        let requests: Vec<(String, Vec<String>)> = columns
            .iter()
            .map(|&at| (wanted[at].setting.column_id.clone(), wanted[at].ids.clone()))
            .collect();
        async move { (columns, target.read_referenced(requests).await) }
    });
    let mut found: Vec<Option<Referenced>> = vec![None; wanted.len()];
    for (columns, answers) in futures_util::future::join_all(asks).await {
        for (at, answer) in columns.into_iter().zip(answers?) {
            found[at] = answer;
        }
    }
    fill(records, &wanted, &found);
    Ok(())
}

/// The reference columns of `records` with every id their cells hold, sorted and each once.
fn wanted_columns(records: &[RecordOut]) -> Vec<Wanted> {
    let mut wanted: Vec<Wanted> = Vec::new();
    for cell in records.iter().flat_map(|r| &r.cells) {
        let (Some(setting), CellValue::List(ids)) = (&cell.reference, &cell.value) else {
            continue;
        };
        let at = match wanted.iter().position(|w| w.column == cell.column_id) {
            Some(at) => at,
            None => {
                wanted.push(Wanted {
                    column: Arc::clone(&cell.column_id),
                    setting: Arc::clone(setting),
                    ids: Vec::new(),
                });
                wanted.len() - 1
            }
        };
        wanted[at].ids.extend(ids.iter().cloned());
    }
    for w in &mut wanted {
        w.ids.sort_unstable();
        w.ids.dedup();
    }
    wanted
}

/// Sets every reference cell's referenced values from `found` (per wanted column, the value of
/// each of its ids); a column not found shows empty values.
fn fill(records: &mut [RecordOut], wanted: &[Wanted], found: &[Option<Referenced>]) {
    for cell in records.iter_mut().flat_map(|r| &mut r.cells) {
        if !matches!(cell.column_type, ColumnType::Reference | ColumnType::Lookup) {
            continue;
        }
        let ids: &[String] = match &cell.value {
            CellValue::List(ids) => ids,
            _ => &[],
        };
        let column = wanted.iter().position(|w| w.column == cell.column_id);
        let referenced = match column.and_then(|at| Some((&wanted[at], found[at].as_ref()?))) {
            Some((w, Referenced { column_type, values })) => Referenced {
                column_type: *column_type,
                values: ids
                    .iter()
                    .map(|id| match w.ids.binary_search(id) {
                        Ok(at) => values.get(at).cloned().unwrap_or(CellValue::Empty),
                        Err(_) => CellValue::Empty,
                    })
                    .collect(),
            },
            None => Referenced {
                column_type: ColumnType::SingleLine,
                values: vec![CellValue::Empty; ids.len()],
            },
        };
        cell.referenced = Some(referenced);
    }
}
