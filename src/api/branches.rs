//! `/v1/branches`: list a grid's branches, get one with its columns, create one as a copy of a
//! source branch (answered once the copy's position is durable), delete one; and the merges:
//! `POST /v1/branches/<id>/merge` and `POST /v1/views/<id>/merge` (decisions.md section 8),
//! which answer 202 with a task and run in the destination branch's actor.
//!
//! `mergeRecordOptions` and the destination id are read from the query string (repeated or
//! comma-separated) or from a JSON body `{"mergeRecordOptions": [...]}`.

use std::time::{Duration, Instant};

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::grids::{default_view_columns, identifier_str, status_str, GridBody};
use super::merge_request::{
    cell_choices, query_filters, with_last_resolve, FilterField, MergeRecordConflict,
};
use super::sized_json::JsonObject;
use super::tasks::{start_task, NewTask};
use super::{branch_route, created, exec, no_content, ok, query_pairs, view_route};
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::auth::{Principal, Privilege, Tier};
use crate::catalog::branches::PreparedBranch;
use crate::catalog::model::{Branch, Grid, GridStatus};
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{ApplyMerge, CopyBranch};
use crate::grid::merge::{MergeOptions, MergeScope};
use crate::grid::merge_resolve::{bind_query, CellChoice};
use crate::grid::query::RawFilter;
use crate::grid::render::ColumnBody;
use crate::ids;
use crate::state::AppState;

/// The task kind of a merge.
const TASK_KIND: &str = "merge";
/// The longest a branch deletion waits for the first snapshot of a branch copied from it.
const PIN_WAIT: Duration = Duration::from_secs(120);

/// A branch as the API shows it: a grid's shape with the branch's id, name, status and views.
fn branch_body(branch: &Branch, grid: &Grid, columns: Option<Vec<ColumnBody>>) -> GridBody {
    GridBody {
        id: branch.id.clone(),
        name: branch.name.clone(),
        status: status_str(branch.status),
        default_access_view_id: branch.default_access_view_id.clone(),
        record_identifier_type: identifier_str(grid.record_identifier_type),
        metadata: grid.metadata.clone(),
        description: Some(branch.description.clone()),
        is_master: Some(branch.is_master()),
        columns,
    }
}

fn branch_not_found(id: &str) -> impl Fn() -> ApiError + '_ {
    move || ApiError::not_found(ErrorCode::BranchIsNotFound, "Branch", id)
}

/// The body of a branch with the columns of its default view.
async fn full_body(
    state: &AppState,
    p: &Principal,
    branch: &Branch,
    grid: &Grid,
) -> ApiResult<GridBody> {
    let route = branch_route(state, p, &branch.id, Privilege::Read, branch_not_found(&branch.id))?;
    let schema = route.schema().await?;
    let columns = default_view_columns(state, p, &branch.default_access_view_id, &schema).await?;
    Ok(branch_body(branch, grid, Some(columns)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct BranchQuery {
    /// The grid (its master branch).
    pub grid_id: Option<String>,
    /// The source branch of a new branch.
    pub branch_id: Option<String>,
}

#[utoipa::path(tag = "branches", params(BranchQuery), responses((status = 200, body = [GridBody])))]
#[get("/v1/branches")]
async fn list_branches(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<BranchQuery>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let grid_id = super::required(&query.grid_id, "gridId")?.to_owned();
    let (pc, gid) = (p.clone(), grid_id.clone());
    let (grid, branches) = exec(&state, move |s| {
        let branches = s.list_branches(&pc, &gid)?;
        let grid = s.grid(&pc, &gid, Privilege::Read)?.clone();
        Ok::<_, ApiError>((grid, branches))
    })
    .await??;
    ok(&branches.iter().map(|b| branch_body(b, &grid, None)).collect::<Vec<_>>())
}

#[utoipa::path(tag = "branches", responses((status = 200, body = GridBody)))]
#[get("/v1/branches/{id}")]
async fn get_branch(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let id = id.into_inner();
    let (pc, idc) = (p.clone(), id.clone());
    let (branch, grid) = exec(&state, move |s| {
        s.branch(&pc, &idc, Privilege::Read).map(|(b, g)| (b.clone(), g.clone()))
    })
    .await??;
    ok(&full_body(&state, &p, &branch, &grid).await?)
}

/// `PATCH /v1/branches/<id>`'s body (gridd's extension: the hosted API has no branch update).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBranchRequest {
    /// 1 to 255 characters; master keeps its name.
    name: Option<String>,
    description: Option<String>,
}

#[utoipa::path(tag = "branches", request_body = UpdateBranchRequest, responses((status = 200, body = GridBody)))]
#[patch("/v1/branches/{id}")]
async fn update_branch(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<UpdateBranchRequest>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let (id, req) = (id.into_inner(), body.into_inner());
    if req.name.is_none() && req.description.is_none() {
        return Err(ApiError::missing_parameter("name"));
    }
    let pc = p.clone();
    let (branch, grid) = exec(&state, move |s| {
        let branch = s.update_branch(&pc, &id, req.name.as_deref(), req.description.as_deref())?;
        let grid = s.branch(&pc, &branch.id, Privilege::Read).map(|(_, g)| g.clone())?;
        Ok::<_, crate::catalog::CatalogError>((branch, grid))
    })
    .await??;
    ok(&full_body(&state, &p, &branch, &grid).await?)
}

/// The OpenAPI's CreateBranch. gridd has no groups or automations, so `inheritGroupAccess`
/// and `inheritAutomation` have nothing to inherit; `viewId` must be a view of the source
/// branch (every view of it is copied); `customProperties` are not kept and refused when
/// non-empty.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateBranchRequest {
    pub name: Option<String>,
    pub description: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub custom_properties: Option<serde_json::Map<String, serde_json::Value>>,
    pub inherit_group_access: Option<bool>,
    pub inherit_automation: Option<bool>,
    pub view_id: Option<String>,
}

/// The name and description of a new branch, checked (400 naming the field).
fn branch_fields(req: CreateBranchRequest) -> ApiResult<(String, String, Option<String>)> {
    let name = req.name.map(|n| n.trim().to_owned()).unwrap_or_default();
    if name.is_empty() || name.chars().count() > 255 {
        return Err(ApiError::bad_request("The branch name must be 1 to 255 characters."));
    }
    if req.custom_properties.is_some_and(|c| !c.is_empty()) {
        return Err(ApiError::bad_request("customProperties are not supported by this server."));
    }
    let description =
        crate::catalog::tenancy::check_description(req.description.as_deref().unwrap_or(""))?;
    Ok((name, description, req.view_id.filter(|v| !v.is_empty())))
}

#[utoipa::path(tag = "branches", params(BranchQuery), request_body = CreateBranchRequest, responses((status = 201, body = GridBody)))]
#[post("/v1/branches")]
async fn create_branch(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<BranchQuery>,
    body: JsonObject<CreateBranchRequest>,
) -> ApiResult<HttpResponse> {
    let query = query.into_inner();
    let source = match (
        query.branch_id.filter(|s| !s.is_empty()),
        query.grid_id.filter(|s| !s.is_empty()),
    ) {
        (Some(branch), _) => branch,
        (None, Some(grid)) => grid,
        (None, None) => return Err(ApiError::missing_parameter("branchId")),
    };
    let (name, description, view_id) = branch_fields(body.into_inner())?;
    let route = branch_route(&state, &p, &source, Privilege::Manage, branch_not_found(&source))?;
    if let Some(view_id) = view_id {
        let in_source = view_route(&state, &p, &view_id, Privilege::Read)
            .is_ok_and(|view| view.branch_id == route.branch_id);
        if !in_source {
            return Err(ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &view_id));
        }
    }
    let id = ids::generate();
    // The copy pins the source until the new branch exists (or its creation is refused, which
    // unpins it): run both steps on their own task, so a client that goes away between them
    // cannot leave the source pinned.
    let (pc, sc, state2) = (p.clone(), source.clone(), state.clone());
    let made = actix_web::rt::spawn(async move {
        let copy = route.addr.send(CopyBranch { pin_for: Some(id.clone()) }).await?;
        let preparer = pc.clone();
        let prepared =
            exec(&state2, move |s| s.prepare_branch(&preparer, &sc, id, (name, description), copy))
                .await??;
        let branch = made_branch(&state2, &pc, prepared).await?;
        exec(&state2, move |s| {
            let grid = s.grid(&pc, &branch.grid_id, Privilege::Read)?.clone();
            Ok::<_, ApiError>((branch, grid))
        })
        .await?
    })
    .await
    .map_err(|e| ApiError::internal(format!("branch creation stopped: {e}")))?;
    let (branch, grid) = made?;
    // The copy holds the source's records up to its position: acknowledge once they are durable.
    let unavailable = |m: String| ApiError::new(ErrorCode::ServiceUnavailable, m);
    let durability =
        state.durability.upgrade().ok_or_else(|| unavailable("The server is stopping.".into()))?;
    let synced = durability
        .wal
        .sync_now()
        .map_err(|err| unavailable(format!("The WAL is closed: {err}")))?;
    drop(durability);
    synced.await.map_err(|err| {
        ApiError::new(ErrorCode::ServiceUnavailable, format!("The WAL did not sync: {err}"))
    })?;
    created(&full_body(&state, &p, &branch, &grid).await?)
}

/// Records a branch `Supervisor::prepare_branch` (or `prepare_restored_branch`) made: in a
/// cluster its first image is stored first, awaited here rather than on the catalogue's actor
/// (a large branch's image takes seconds); a failed store abandons it (503).
pub(crate) async fn made_branch(
    state: &AppState,
    p: &Principal,
    mut prepared: PreparedBranch,
) -> ApiResult<Branch> {
    if let Some(image) = prepared.image.take() {
        let failed = match image.await {
            Ok(Ok(_)) => None,
            Ok(Err(err)) => Some(err.to_string()),
            Err(_) => Some("the branch's cluster writer stopped".to_owned()),
        };
        if let Some(why) = failed {
            exec(state, move |s| s.abandon_prepared(prepared)).await?;
            return Err(ApiError::retry_soon(format!(
                "The new branch's first image was not stored: {why}"
            )));
        }
    }
    let p = p.clone();
    Ok(exec(state, move |s| s.record_prepared(&p, prepared)).await??)
}

#[utoipa::path(tag = "branches", responses((status = 204)))]
#[delete("/v1/branches/{id}")]
async fn delete_branch(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    // A branch copied from this one is rebuilt from this one's records until it has its own
    // snapshot, which a new branch writes at once: wait for it.
    let started = Instant::now();
    loop {
        let idc = id.clone();
        if !exec(&state, move |s| s.branch_is_pinned(&idc)).await? {
            break;
        }
        if started.elapsed() > PIN_WAIT {
            return Err(ApiError::new(
                ErrorCode::ServiceUnavailable,
                "A branch copied from this one is still being saved; try again shortly.",
            ));
        }
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    exec(&state, move |s| s.delete_branch(&p, &id)).await??;
    no_content()
}

/// The merge parameters of a request: from the query string (repeated or comma-separated)
/// and, when present, a JSON body `{"mergeRecordOptions": [...]}` (options from both count).
struct MergeParams {
    destination: Option<String>,
    options: Vec<String>,
    /// `mergeRecordConflicts` as cell choices (body only).
    choices: Vec<CellChoice>,
    /// `query` as listing filters (body only).
    query: Vec<RawFilter>,
    /// `useLastMergeResolve: true` (body only): the last merge's choices count too.
    use_last: bool,
}

/// Body of a merge (each field may be given as a query parameter instead; the query wins).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MergeBody {
    #[serde(default)]
    merge_record_options: Option<Vec<String>>,
    destination_branch_id: Option<String>,
    destination_view_id: Option<String>,
    #[serde(default, deserialize_with = "crate::json_object::optional_objects")]
    merge_record_conflicts: Option<Vec<MergeRecordConflict>>,
    use_last_merge_resolve: Option<bool>,
    /// Cells of columns whose types differ between the branches are never merged (skipped),
    /// so either value is honoured.
    check_mismatched_column_type: Option<bool>,
    #[serde(default, deserialize_with = "crate::json_object::optional_objects")]
    query: Option<Vec<FilterField>>,
}

fn merge_params(req: &HttpRequest, body: &[u8], destination_key: &str) -> ApiResult<MergeParams> {
    let pairs = query_pairs(req)?;
    let mut params = MergeParams {
        destination: None,
        options: Vec::new(),
        choices: Vec::new(),
        query: Vec::new(),
        use_last: false,
    };
    for (key, value) in pairs {
        if key == destination_key {
            params.destination = Some(value).filter(|v| !v.is_empty());
        } else if key == "mergeRecordOptions" || key == "mergeRecordOptions[]" {
            params.options.push(value);
        }
    }
    if body.iter().any(|b| !b.is_ascii_whitespace()) {
        let parsed: MergeBody = object_from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("The request body is invalid: {e}")))?;
        params.options.extend(parsed.merge_record_options.unwrap_or_default());
        params.use_last = parsed.use_last_merge_resolve == Some(true);
        let _ = parsed.check_mismatched_column_type;
        params.choices = cell_choices(parsed.merge_record_conflicts.unwrap_or_default())?;
        params.query = query_filters(parsed.query.unwrap_or_default())?;
        let from_body = if destination_key == "destinationBranchId" {
            parsed.destination_branch_id
        } else {
            parsed.destination_view_id
        };
        if params.destination.is_none() {
            params.destination = from_body.filter(|v| !v.is_empty());
        }
    }
    Ok(params)
}

/// Refuses (400, the listing's codes) a merge query that does not bind to the source branch's
/// columns, before a task starts.
async fn check_query(source: &BranchRoute, query: &[RawFilter]) -> ApiResult<()> {
    if query.is_empty() {
        return Ok(());
    }
    let copy = source.addr.send(CopyBranch { pin_for: None }).await?;
    bind_query(&copy.state, query)?;
    Ok(())
}

/// Records a merge task, shows both branches `merging`, and runs the merge: a copy of the
/// source, merged in the destination's actor as one WAL entry; the task then ends.
async fn start_merge(
    state: &AppState,
    p: &Principal,
    source: std::sync::Arc<BranchRoute>,
    destination: std::sync::Arc<BranchRoute>,
    scope: MergeScope,
    use_last: bool,
    view_id: Option<String>,
) -> ApiResult<HttpResponse> {
    if source.grid_id != destination.grid_id {
        return Err(ApiError::new(
            ErrorCode::Unprocessable,
            "The two branches belong to different grids.",
        ));
    }
    let mut scope = scope;
    if use_last {
        let (s_id, d_id) = (source.branch_id.clone(), destination.branch_id.clone());
        let last = exec(state, move |s| s.last_resolve(&s_id, &d_id)).await?;
        scope.choices = with_last_resolve(last, std::mem::take(&mut scope.choices))?;
    }
    let choices = scope.choices.clone();
    let (s_id, d_id) = (source.branch_id.clone(), destination.branch_id.clone());
    let new = NewTask {
        kind: TASK_KIND,
        route: destination.clone(),
        view_id,
        shows: Some((
            GridStatus::Merging,
            vec![source.branch_id.clone(), destination.branch_id.clone()],
        )),
        creates_branch: None,
    };
    let (task, fork_clock) =
        start_task(state, p, new, move |s| s.lineage_point(&s_id, &d_id)).await?;
    let (user, state) = (p.user().to_owned(), state.clone());
    let task_id = task.id().to_owned();
    Ok(task.run(|_| async move {
        let copy = source.addr.send(CopyBranch { pin_for: None }).await?;
        let msg = ApplyMerge {
            source_branch_id: source.branch_id.clone(),
            source: copy.state,
            fork_clock,
            scope,
            user,
        };
        let counts = destination.addr.send(msg).await??;
        tracing::info!(task = %task_id, ?counts, "merge done");
        // The choices it was made with are the ones a later `useLastMergeResolve` takes.
        let (s_id, d_id) = (source.branch_id.clone(), destination.branch_id.clone());
        let kept = exec(&state, move |s| s.remember_resolve(&s_id, &d_id, choices)).await;
        if let Err(err) = kept.and_then(|r| r.map_err(ApiError::from)) {
            // The merge itself is durable: the task reads successful.
            tracing::error!(task = %task_id, error = %err.message, "the merge's choices were not kept");
        }
        Ok::<_, ApiError>(())
    }))
}

#[utoipa::path(tag = "branches", params(
    ("destinationBranchId" = Option<String>, Query, description = "the branch to merge into (or in the body)"),
    ("mergeRecordOptions" = Option<String>, Query, description = "add, update, delete, override (repeatable or comma-separated)"),
), request_body(content = Option<MergeBody>, description = "optional; the same fields as the query"),
responses((status = 202, description = "a merge task")))]
#[post("/v1/branches/{id}/merge")]
async fn merge_branch(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let params = merge_params(&req, &body, "destinationBranchId")?;
    let destination_id =
        params.destination.ok_or_else(|| ApiError::missing_parameter("destinationBranchId"))?;
    let options = MergeOptions::parse(&params.options)?;
    let source = branch_route(&state, &p, &id, Privilege::Manage, branch_not_found(&id))?;
    let destination = branch_route(
        &state,
        &p,
        &destination_id,
        Privilege::Manage,
        branch_not_found(&destination_id),
    )?;
    check_query(&source, &params.query).await?;
    let scope = MergeScope { options, columns: None, query: params.query, choices: params.choices };
    start_merge(&state, &p, source, destination, scope, params.use_last, None).await
}

#[utoipa::path(tag = "views", params(
    ("destinationViewId" = Option<String>, Query, description = "the view to merge into (or in the body)"),
    ("mergeRecordOptions" = Option<String>, Query, description = "add, update, delete, override (repeatable or comma-separated)"),
), request_body(content = Option<MergeBody>, description = "optional; the same fields as the query"),
responses((status = 202, description = "a merge task")))]
#[post("/v1/views/{viewId}/merge")]
async fn merge_view(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Enterprise)?;
    let view_id = view_id.into_inner();
    let params = merge_params(&req, &body, "destinationViewId")?;
    let destination_view =
        params.destination.ok_or_else(|| ApiError::missing_parameter("destinationViewId"))?;
    let options = MergeOptions::parse(&params.options)?;
    let source = view_route(&state, &p, &view_id, Privilege::Manage)?;
    let destination = view_route(&state, &p, &destination_view, Privilege::Manage)?;
    let schema = source.schema().await?;
    let view = schema
        .view(&view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &view_id))?;
    let columns = schema.view_columns(view).into_iter().map(|(c, _)| c.id.clone()).collect();
    check_query(&source, &params.query).await?;
    let scope = MergeScope {
        options,
        columns: Some(columns),
        query: params.query,
        choices: params.choices,
    };
    start_merge(&state, &p, source, destination, scope, params.use_last, Some(view_id)).await
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_branches)
        .service(get_branch)
        .service(create_branch)
        .service(update_branch)
        .service(delete_branch)
        .service(merge_branch)
        .service(merge_view);
}
