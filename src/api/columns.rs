//! `/v1/views/<viewId>/columns`: get, create (added to the grid and the view), update, delete,
//! and add to or remove from a view. Also what reference columns point at: checked when a
//! column is written, looked up (names and types) when one is shown.

use actix_web::{delete, get, patch, post, web, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use super::references::{may_read_target, target, target_branch};
use super::sized_json::JsonObject;
use super::{created, exec, no_content, ok, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{ChangeSchema, SchemaChanged};
use crate::grid::columns::{ColumnRequest, DateTimeFormatRequest, ReferenceRequest, MAX_COLUMNS};
use crate::grid::planner::{column_in_view, SchemaChange};
use crate::grid::render::{column_body, ColumnBody, ReferenceTarget, ReferenceTargets};
use crate::grid::schema::{ColumnDef, Schema};
use crate::json_object::ObjectOnly;
use crate::state::AppState;

/// Looks up the branches the reference columns among `columns` point at, so their bodies can
/// name the grid, branch and column. Only the caller's company's grids are named.
pub async fn reference_targets<'a>(
    state: &AppState,
    p: &Principal,
    columns: impl IntoIterator<Item = &'a ColumnDef>,
) -> ApiResult<ReferenceTargets> {
    let mut targets = ReferenceTargets::default();
    for reference in columns.into_iter().filter_map(|c| c.reference.as_ref()) {
        let branch_id = ReferenceTargets::branch_of(reference).to_owned();
        if targets.contains(&branch_id) {
            continue;
        }
        let remote = state.remote.as_ref();
        let found = target(&state.routes, remote, p.company_id(), reference).await?;
        let Some(found) = found.filter(|found| may_read_target(p, &found.scope())) else {
            continue;
        };
        let (pc, grid_id, bid) = (p.clone(), found.grid_id().to_owned(), branch_id.clone());
        let names = exec(state, move |s| s.reference_names(&pc, &grid_id, &bid)).await?;
        let Some((grid_name, branch_name)) = names else { continue };
        let columns = found.schema().await?.columns;
        targets.insert(branch_id, ReferenceTarget { grid_name, branch_name, columns });
    }
    Ok(targets)
}

/// Refuses (400) a reference to a grid, branch or column the caller's company does not have,
/// and (403 accessDenied) one to a grid the caller may not read. Missing fields are left to the
/// column checks, which name them.
pub async fn check_reference(
    state: &AppState,
    p: &Principal,
    reference: Option<&ReferenceRequest>,
) -> ApiResult<()> {
    let Some(r) = reference else { return Ok(()) };
    let non_empty = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    let (Some(grid_id), Some(column_id)) = (non_empty(&r.grid_id), non_empty(&r.column_id)) else {
        return Ok(());
    };
    let branch_id = non_empty(&r.branch_id).unwrap_or_else(|| grid_id.clone());
    let missing = || {
        ApiError::bad_request(format!(
            "reference: column \"{column_id}\" of grid \"{grid_id}\" (branch \"{branch_id}\") \
             could not be found."
        ))
    };
    let remote = state.remote.as_ref();
    let found = target_branch(&state.routes, remote, p.company_id(), &grid_id, &branch_id)
        .await?
        .ok_or_else(missing)?;
    if !may_read_target(p, &found.scope()) {
        return Err(ApiError::access_denied(format!(
            "reference: this key has no read access to grid \"{grid_id}\"."
        )));
    }
    let schema = found.schema().await?;
    schema.column(&column_id).map(|_| ()).ok_or_else(missing)
}

async fn render_column(
    state: &AppState,
    p: &Principal,
    schema: &Schema,
    view_id: &str,
    column_id: &str,
) -> ApiResult<ColumnBody> {
    let view = schema
        .view(view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", view_id))?;
    let (column, editable) = column_in_view(schema, view, column_id)?;
    let targets = reference_targets(state, p, [column]).await?;
    Ok(column_body(schema, column, editable, &targets))
}

/// A datetime column created without a `dateTimeFormat` takes its grid settings' default.
fn with_default_format(state: &AppState, grid_id: &str, request: &mut ColumnRequest) {
    if request.column_type.as_deref() != Some("datetime") || request.date_time_format.is_some() {
        return;
    }
    let defaults = state.routes.grid_defaults(grid_id);
    if let Some(format) = defaults.as_ref().and_then(|d| d.date_time_format.as_ref()) {
        request.date_time_format = Some(DateTimeFormatRequest {
            date_format: format.date_format.clone(),
            time_format: format.time_format.clone(),
            zone_offset: format.zone_offset.clone(),
            show_time_zone: format.show_time_zone,
        });
    }
}

/// Checks the plan and the key, then any reference the request names, then makes the change.
async fn change(
    state: &AppState,
    p: &Principal,
    view_id: &str,
    needed_tier: Tier,
    change: SchemaChange,
) -> ApiResult<SchemaChanged> {
    p.require_tier(needed_tier)?;
    let route = view_route(state, p, view_id, Privilege::Manage)?;
    let mut change = change;
    if let SchemaChange::CreateColumn(request) = &mut change {
        with_default_format(state, &route.grid_id, request);
    }
    if let SchemaChange::CreateColumn(request) | SchemaChange::UpdateColumn { request, .. } =
        &change
    {
        check_reference(state, p, request.reference.as_ref()).await?;
    }
    Ok(route.addr.send(ChangeSchema { view_id: view_id.to_owned(), change }).await??)
}

#[utoipa::path(tag = "columns", responses((status = 200, body = ColumnBody)))]
#[get("/v1/views/{viewId}/columns/{id}")]
async fn get_column(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (view_id, column_id) = path.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let schema = route.schema().await?;
    ok(&render_column(&state, &p, &schema, &view_id, &column_id).await?)
}

#[utoipa::path(tag = "columns", request_body = ColumnRequest, responses((status = 201, body = ColumnBody)))]
#[post("/v1/views/{viewId}/columns")]
async fn create_column(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonObject<ColumnRequest>,
) -> ApiResult<HttpResponse> {
    let changed =
        change(&state, &p, &view_id, Tier::Team, SchemaChange::CreateColumn(body.into_inner()))
            .await?;
    created(&render_column(&state, &p, &changed.schema, &view_id, &changed.subject).await?)
}

#[utoipa::path(tag = "columns", request_body = Vec<ColumnRequest>, responses((status = 201, body = [ColumnBody])))]
#[post("/v1/views/{viewId}/columns/bulk")]
async fn create_columns(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: web::Json<Vec<ObjectOnly<ColumnRequest>>>,
) -> ApiResult<HttpResponse> {
    let requests: Vec<ColumnRequest> = body.into_inner().into_iter().map(|c| c.0).collect();
    if requests.is_empty() || requests.len() > MAX_COLUMNS {
        return Err(ApiError::bad_request(format!(
            "A bulk create takes between 1 and {MAX_COLUMNS} columns."
        )));
    }
    p.require_tier(Tier::Team)?;
    let route = view_route(&state, &p, &view_id, Privilege::Manage)?;
    let mut requests = requests;
    for request in &mut requests {
        with_default_format(&state, &route.grid_id, request);
        check_reference(&state, &p, request.reference.as_ref()).await?;
    }
    let change = SchemaChange::CreateColumns(requests);
    let changed = route.addr.send(ChangeSchema { view_id: view_id.to_string(), change }).await??;
    let view = changed
        .schema
        .view(&view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &view_id))?;
    let columns = changed
        .subject
        .split(',')
        .map(|id| column_in_view(&changed.schema, view, id))
        .collect::<Result<Vec<_>, _>>()?;
    let targets = reference_targets(&state, &p, columns.iter().map(|(c, _)| *c)).await?;
    let bodies: Vec<ColumnBody> = columns
        .iter()
        .map(|(column, editable)| column_body(&changed.schema, column, *editable, &targets))
        .collect();
    created(&bodies)
}

#[utoipa::path(tag = "columns", request_body = ColumnRequest, responses((status = 200, body = ColumnBody)))]
#[patch("/v1/views/{viewId}/columns/{id}")]
async fn update_column(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    body: JsonObject<ColumnRequest>,
) -> ApiResult<HttpResponse> {
    let (view_id, column_id) = path.into_inner();
    let request = body.into_inner();
    let changed =
        change(&state, &p, &view_id, Tier::Team, SchemaChange::UpdateColumn { column_id, request })
            .await?;
    ok(&render_column(&state, &p, &changed.schema, &view_id, &changed.subject).await?)
}

#[utoipa::path(tag = "columns", responses((status = 204)))]
#[delete("/v1/views/{viewId}/columns/{id}")]
async fn delete_column(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (view_id, column_id) = path.into_inner();
    change(&state, &p, &view_id, Tier::Team, SchemaChange::DeleteColumn { column_id }).await?;
    no_content()
}

#[utoipa::path(tag = "columns", responses((status = 200, body = ColumnBody)))]
#[post("/v1/views/{viewId}/columns/{id}/add")]
async fn add_column_to_view(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (view_id, column_id) = path.into_inner();
    let changed =
        change(&state, &p, &view_id, Tier::Enterprise, SchemaChange::AddColumnToView { column_id })
            .await?;
    ok(&render_column(&state, &p, &changed.schema, &view_id, &changed.subject).await?)
}

#[utoipa::path(tag = "columns", responses((status = 200, description = "removed from the view, empty body")))]
#[post("/v1/views/{viewId}/columns/{id}/remove")]
async fn remove_column_from_view(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (view_id, column_id) = path.into_inner();
    change(
        &state,
        &p,
        &view_id,
        Tier::Enterprise,
        SchemaChange::RemoveColumnFromView { column_id },
    )
    .await?;
    Ok(HttpResponse::Ok().finish())
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_column)
        .service(create_column)
        .service(create_columns)
        .service(update_column)
        .service(delete_column)
        .service(add_column_to_view)
        .service(remove_column_from_view);
}
