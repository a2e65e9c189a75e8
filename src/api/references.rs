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

use actix::Addr;

use crate::auth::{KeyKind, Principal, Privilege};
use crate::catalog::model::CompanyId;
use crate::catalog::routes::{BranchRoute, Routes};
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::GridActor;
use crate::grid::error::{GridError, GridResult};
use crate::grid::read::RecordOut;
use crate::grid::references::{ReadReferenced, ReferenceColumns, ReferenceLookup, Referenced};
use crate::grid::render::ReferenceTargets;
use crate::grid::schema::{ColumnType, ReferenceSetting};
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

/// Whether `p` may read the grid `route` belongs to through a reference: a company key needs
/// read access to it, a view key reads what its view shows.
pub fn may_read_target(p: &Principal, route: &BranchRoute) -> bool {
    match &p.key.kind {
        KeyKind::View { .. } => route.company_id == p.company_id(),
        KeyKind::Company { .. } => {
            p.authorize(&route.scope(None), Privilege::Read, || ApiError::internal("")).is_ok()
        }
    }
}

/// The refusal (403 accessDenied) of a reference to a grid the key may not read.
fn unreadable(setting: &ReferenceSetting) -> GridError {
    GridError::ReferenceUnreadable { grid_id: setting.grid_id.clone() }
}

/// Refuses (403 accessDenied) when `p` may not read a grid one of `columns` points at.
pub fn check_reference_access(
    state: &AppState,
    p: &Principal,
    columns: &ReferenceColumns,
) -> ApiResult<()> {
    for (_, setting) in columns {
        if let Some(route) = target(&state.routes, p.company_id(), setting) {
            if !may_read_target(p, &route) {
                return Err(unreadable(setting).into());
            }
        }
    }
    Ok(())
}

/// The branch a reference points at, if it exists and belongs to `company_id`.
fn target(
    routes: &Routes,
    company_id: CompanyId,
    r: &ReferenceSetting,
) -> Option<Arc<BranchRoute>> {
    let route = routes.branch(ReferenceTargets::branch_of(r))?;
    (route.company_id == company_id && route.grid_id == r.grid_id).then_some(route)
}

/// The branches a key's write finds its referenced records in (`references::check_written`,
/// run by the writing branch's actor): the company's own, and only those the key may read.
pub struct KeyLookup {
    routes: Arc<Routes>,
    principal: Principal,
}

impl KeyLookup {
    pub fn boxed(state: &AppState, p: &Principal) -> Box<dyn ReferenceLookup> {
        Box::new(KeyLookup { routes: state.routes.clone(), principal: p.clone() })
    }
}

impl ReferenceLookup for KeyLookup {
    fn branch(&self, setting: &ReferenceSetting) -> GridResult<Option<Addr<GridActor>>> {
        let company = self.principal.company_id();
        match target(&self.routes, company, setting) {
            Some(route) if !may_read_target(&self.principal, &route) => Err(unreadable(setting)),
            Some(route) => Ok(Some(route.addr.clone())),
            None => Ok(None),
        }
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
        let Some(target) = target(&state.routes, branch.company_id, setting) else { continue };
        match reader {
            ReferenceReader::Share => {}
            ReferenceReader::Refuse(p) if !may_read_target(p, &target) => {
                return Err(unreadable(setting).into())
            }
            ReferenceReader::Hide(p) if !may_read_target(p, &target) => continue,
            ReferenceReader::Refuse(_) | ReferenceReader::Hide(_) => {}
        }
        targets.push((columns, target));
    }
    let asks = targets.into_iter().map(|(columns, target)| {
        let requests: Vec<(String, Vec<String>)> = columns
            .iter()
            .map(|&at| (wanted[at].setting.column_id.clone(), wanted[at].ids.clone()))
            .collect();
        async move { (columns, target.addr.send(ReadReferenced { requests }).await) }
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
        if cell.column_type != ColumnType::Reference {
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
