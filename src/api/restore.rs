//! `POST /v1/grids/<gridId>/restore`: point-in-time restore. A task makes a new branch of the
//! grid holding one of its branches (master unless `branchId` names another) exactly as it was
//! at a time (`at`) or a change-feed position (`position`), rebuilt from the history the server
//! keeps (`persist::history`, `--retain-history`). The grid itself is not changed; the new
//! branch can be read, exported or merged back like any branch.
//!
//! Everything that can be known at once is checked before the task starts (400 naming it): the
//! request's fields, the branch, that history is kept and covers the target. The task answers
//! 202 with its `branchId`, the id the branch has once the task is successful.

use std::sync::Arc;

use actix_web::{post, web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::sized_json::JsonObject;
use super::tasks::{refuse_past, start_task, NewTask};
use super::{branch_route, exec};
use crate::auth::{Principal, Privilege};
use crate::catalog::branches::new_view_ids;
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::ids;
use crate::persist::durability::Durability;
use crate::persist::history::{format_ms, BaseInfo, RestoreError, Target};
use crate::state::AppState;

/// Body of a restore: exactly one of `at` and `position`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreRequest {
    /// The time to restore to (RFC 3339, e.g. `2026-11-27T09:30:00Z`): every change committed
    /// at or before it.
    at: Option<String>,
    /// The change-feed position to restore to (an event `id` of `GET /v1/views/<id>/changes`).
    position: Option<u32>,
    /// The branch of the grid to restore (default: master).
    branch_id: Option<String>,
    /// The new branch's name (default: the source's name and the target).
    name: Option<String>,
    description: Option<String>,
}

/// The task's kind, as `GET /v1/tasks/<id>` shows it.
const TASK_KIND: &str = "pointInTimeRestore";

/// What a restore asks for, checked.
struct Asked {
    target: Target,
    name: Option<String>,
    description: String,
}

fn asked(req: RestoreRequest) -> ApiResult<Asked> {
    let target = match (req.at, req.position) {
        (Some(at), None) => {
            let time = chrono::DateTime::parse_from_rfc3339(at.trim()).map_err(|_| {
                ApiError::bad_request(format!(
                    "at must be a time such as 2026-11-27T09:30:00Z, not {at:?}."
                ))
            })?;
            let ms = time.timestamp_millis();
            if ms > chrono::Utc::now().timestamp_millis() {
                return Err(ApiError::bad_request(format!("at ({at}) is in the future.")));
            }
            Target::At(ms)
        }
        (None, Some(position)) => Target::Position(position),
        _ => {
            return Err(ApiError::bad_request(
                "Give either at (a time) or position (a change-feed position), not both.",
            ))
        }
    };
    let name = req.name.map(|n| n.trim().to_owned());
    if name.as_ref().is_some_and(|n| n.is_empty() || n.chars().count() > 255) {
        return Err(ApiError::bad_request("The branch name must be 1 to 255 characters."));
    }
    let description =
        crate::catalog::tenancy::check_description(req.description.as_deref().unwrap_or(""))?;
    Ok(Asked { target, name, description })
}

/// The branch to restore: `branch_id` if given (a branch of the grid), else the grid's master.
fn source_route(
    state: &AppState,
    p: &Principal,
    grid_id: &str,
    branch_id: Option<&str>,
) -> ApiResult<Arc<BranchRoute>> {
    let grid_missing = || ApiError::not_found(ErrorCode::GridIsNotFound, "Grid", grid_id);
    let master = branch_route(state, p, grid_id, Privilege::Manage, grid_missing)?;
    let Some(branch_id) = branch_id.filter(|b| !b.is_empty()) else { return Ok(master) };
    let branch_missing = || ApiError::not_found(ErrorCode::BranchIsNotFound, "Branch", branch_id);
    let route = branch_route(state, p, branch_id, Privilege::Manage, branch_missing)?;
    if route.grid_id != master.grid_id {
        return Err(branch_missing());
    }
    Ok(route)
}

/// The base the restore starts from, or the 400 saying why there is none: no history kept,
/// a position the branch has not reached, a target outside what is kept.
fn checked_base(
    durability: &Durability,
    route: &BranchRoute,
    target: Target,
) -> ApiResult<BaseInfo> {
    let history = durability.history().ok_or(RestoreError::NotRetained)?;
    if let Target::Position(position) = target {
        let now = *route.reads.durable_clock().borrow();
        if position > now {
            return Err(ApiError::bad_request(format!(
                "Position {position} is past the branch's position now ({now})."
            )));
        }
    }
    Ok(history.base_for(&route.branch_id, target)?)
}

fn stopping() -> ApiError {
    ApiError::new(ErrorCode::ServiceUnavailable, "The server is stopping.")
}

#[utoipa::path(tag = "grids", request_body = RestoreRequest, responses((status = 202, description = "a restore task; its branchId is the new branch once it is successful")))]
#[post("/v1/grids/{gridId}/restore")]
async fn restore_grid(
    state: web::Data<AppState>,
    p: Principal,
    grid_id: web::Path<String>,
    body: JsonObject<RestoreRequest>,
) -> ApiResult<HttpResponse> {
    let mut req = body.into_inner();
    let branch_id = req.branch_id.take();
    let asked = asked(req)?;
    let route = source_route(&state, &p, &grid_id, branch_id.as_deref())?;
    let durability = state.durability.upgrade().ok_or_else(stopping)?;
    let base = checked_base(&durability, &route, asked.target)?;
    drop(durability);
    let id = ids::generate();
    let new = NewTask {
        kind: TASK_KIND,
        route: route.clone(),
        view_id: None,
        shows: None,
        creates_branch: Some(id.clone()),
    };
    let (pc, source) = (p.clone(), route.branch_id.clone());
    let (task, source_name) = start_task(&state, &p, new, move |s| {
        // Each restore holds a whole branch in memory while it runs: one per company at a time.
        let why = "A restore of this company is running; start the next one when it ends.";
        refuse_past(s, &pc, TASK_KIND, 1, why)?;
        Ok(s.branch(&pc, &source, Privilege::Manage)?.0.name.clone())
    })
    .await?;
    let name = asked.name.unwrap_or_else(|| default_name(&source_name, asked.target));
    let state = state.get_ref().clone();
    Ok(task.run(move |progress| async move {
        let work = Restore { state, p, route, base, target: asked.target, id };
        work.run((name, asked.description), progress).await
    }))
}

/// The new branch's name when the request gives none.
fn default_name(source: &str, target: Target) -> String {
    let at = match target {
        Target::At(ms) => format_ms(ms),
        Target::Position(position) => format!("position {position}"),
    };
    let name = format!("{source} restored to {at}");
    name.chars().take(255).collect()
}

/// One restore's work, run by its task.
struct Restore {
    state: AppState,
    p: Principal,
    route: Arc<BranchRoute>,
    base: BaseInfo,
    target: Target,
    id: String,
}

impl Restore {
    /// Rebuilds the branch as it was, stores it as the new branch's snapshot, then records the
    /// branch and starts it (its snapshot and bases are deleted again if that is refused).
    async fn run(self, names: (String, String), progress: super::tasks::Progress) -> ApiResult<()> {
        let durability = self.state.durability.upgrade().ok_or_else(stopping)?;
        // Everything the branch committed before the task started is read: up to the log's
        // end now, once it is durable.
        let up_to = durability.wal.last_lsn();
        let synced = durability.wal.sync_now().map_err(|e| {
            ApiError::new(ErrorCode::ServiceUnavailable, format!("The WAL is closed: {e}"))
        })?;
        synced.await.map_err(|e| {
            ApiError::new(ErrorCode::ServiceUnavailable, format!("The WAL did not sync: {e}"))
        })?;
        progress.set(10).await;
        let (base, target, id) = (self.base.clone(), self.target, self.id.clone());
        let d = durability.clone();
        let built = web::block(move || {
            let history = d.history().ok_or(RestoreError::NotRetained)?;
            let mut state = history.rebuild(&d.wal, &base, target, up_to)?;
            let (views, _) = new_view_ids(&mut state).map_err(ApiError::from)?;
            let wal_lsn = d.wal.last_lsn();
            d.store_new_branch(&id, wal_lsn, &state)?;
            Ok::<_, ApiError>((state, wal_lsn, views))
        })
        .await
        .map_err(|e| ApiError::internal(format!("the restore stopped: {e}")))??;
        progress.set(90).await;
        let (p, source, id) = (self.p, self.route.branch_id.clone(), self.id.clone());
        let preparer = p.clone();
        let prepared = exec(&self.state, move |s| {
            s.prepare_restored_branch(&preparer, &source, id, names, built)
        })
        .await
        .and_then(|r| r.map_err(ApiError::from));
        let made = match prepared {
            Ok(prepared) => super::branches::made_branch(&self.state, &p, prepared).await.map(drop),
            Err(err) => Err(err),
        };
        if made.is_err() {
            durability.forget(&self.id);
        }
        made
    }
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(restore_grid);
}
