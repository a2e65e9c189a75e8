//! `/v1/grids`: list by database, get with columns, create (from a template or with columns),
//! rename and edit metadata, delete.

use actix_web::{delete, get, patch, post, web, HttpResponse};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::columns::{check_reference, reference_targets};
use super::references::target_branch;
use super::sized_json::JsonObject;
use super::{created, exec, no_content, ok, required};
use crate::auth::{Principal, Privilege, Tier};
use crate::catalog::grids::NewGrid;
use crate::catalog::model::{Grid, GridStatus, RecordIdentifierType};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::columns::{build_column, ColumnRequest};
use crate::grid::render::{view_columns, ColumnBody};
use crate::grid::schema::Schema;
use crate::state::AppState;

/// A grid as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GridBody {
    pub id: String,
    pub name: String,
    pub status: &'static str,
    pub default_access_view_id: String,
    pub record_identifier_type: &'static str,
    #[schema(value_type = Object)]
    pub metadata: IndexMap<String, String>,
    /// A branch's description (branches only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a branch is its grid's master branch (branches only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_master: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<ColumnBody>>,
}

pub fn status_str(status: GridStatus) -> &'static str {
    match status {
        GridStatus::Active => "active",
        GridStatus::Importing => "importing",
        GridStatus::Merging => "merging",
        GridStatus::Restoring => "restoring",
        GridStatus::Branching => "branching",
    }
}

pub fn identifier_str(t: RecordIdentifierType) -> &'static str {
    match t {
        RecordIdentifierType::RecordId => "recordId",
        RecordIdentifierType::PathTagRecordId => "pathTagRecordId",
    }
}

/// The columns of a grid (its default access view), with what reference columns point at.
async fn grid_columns(
    state: &AppState,
    p: &Principal,
    grid: &Grid,
    schema: &Schema,
) -> ApiResult<Vec<ColumnBody>> {
    default_view_columns(state, p, &grid.default_access_view_id, schema).await
}

/// The columns of a branch's default access view, with what reference columns point at.
pub async fn default_view_columns(
    state: &AppState,
    p: &Principal,
    view_id: &str,
    schema: &Schema,
) -> ApiResult<Vec<ColumnBody>> {
    let Some(view) = schema.view(view_id) else { return Ok(Vec::new()) };
    let targets = reference_targets(state, p, &schema.columns).await?;
    Ok(view_columns(schema, view, &targets))
}

pub(super) fn grid_body(grid: &Grid, columns: Option<Vec<ColumnBody>>) -> GridBody {
    GridBody {
        id: grid.id.clone(),
        name: grid.name.clone(),
        status: status_str(grid.status),
        default_access_view_id: grid.default_access_view_id.clone(),
        record_identifier_type: identifier_str(grid.record_identifier_type),
        metadata: grid.metadata.clone(),
        description: None,
        is_master: None,
        columns,
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct DbQuery {
    pub db_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateGridRequest {
    /// The new grid's id (`^\w+$`, at most 64 characters); random when absent.
    pub id: Option<String>,
    pub name: Option<String>,
    pub template_grid_id: Option<String>,
    pub record_identifier_type: Option<String>,
    #[serde(default, deserialize_with = "crate::json_object::objects_only")]
    pub columns: Vec<ColumnRequest>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<IndexMap<String, Option<String>>>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateGridRequest {
    pub name: Option<String>,
    /// A null value removes that key.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<IndexMap<String, Option<String>>>,
}

#[utoipa::path(tag = "grids", params(DbQuery), responses((status = 200, body = [GridBody])))]
#[get("/v1/grids")]
async fn list_grids(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<DbQuery>,
) -> ApiResult<HttpResponse> {
    let db = required(&query.db_id, "dbId")?.to_owned();
    let grids = exec(&state, move |s| s.list_grids(&p, &db)).await??;
    ok(&grids.iter().map(|g| grid_body(g, None)).collect::<Vec<_>>())
}

#[utoipa::path(tag = "grids", responses((status = 200, body = [GridBody], description = "the grids whose metadata has \"template\": \"true\"")))]
#[get("/v1/template-grids")]
async fn list_template_grids(state: web::Data<AppState>, p: Principal) -> ApiResult<HttpResponse> {
    let grids = exec(&state, move |s| Ok::<_, ApiError>(s.template_grids(&p))).await??;
    ok(&grids.iter().map(|g| grid_body(g, None)).collect::<Vec<_>>())
}

async fn master_schema(state: &AppState, p: &Principal, grid_id: &str) -> ApiResult<Schema> {
    let not_found = || ApiError::not_found(ErrorCode::GridIsNotFound, "Grid", grid_id);
    let remote = state.remote.as_ref();
    let found = target_branch(&state.routes, remote, p.company_id(), grid_id, grid_id).await?;
    let found = found.ok_or_else(not_found)?;
    p.authorize(&found.scope(), Privilege::Read, not_found)?;
    Ok(found.schema().await?)
}

#[utoipa::path(tag = "grids", responses((status = 200, body = GridBody)))]
#[get("/v1/grids/{id}")]
async fn get_grid(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let (pc, idc) = (p.clone(), id.clone());
    let grid = exec(&state, move |s| s.grid(&pc, &idc, Privilege::Read).cloned()).await??;
    let schema = master_schema(&state, &p, &id).await?;
    ok(&grid_body(&grid, Some(grid_columns(&state, &p, &grid, &schema).await?)))
}

/// The schema a new grid starts with: the template's columns, dependencies and views, then
/// the request's own columns.
async fn initial_columns(
    state: &AppState,
    p: &Principal,
    req: &CreateGridRequest,
) -> ApiResult<Schema> {
    let mut schema = match &req.template_grid_id {
        // The template's columns, dependencies and other views (its default view's columns
        // become the new grid's default view).
        Some(template) => master_schema(state, p, template).await?,
        None => Schema::default(),
    };
    for (i, column) in req.columns.iter().enumerate() {
        let in_request =
            |e: ApiError| ApiError::new(e.code, format!("columns[{i}]: {}", e.message));
        check_reference(state, p, column.reference.as_ref()).await.map_err(in_request)?;
        let built = build_column(&schema, column).map_err(|e| in_request(e.into()))?;
        schema.push_column(built);
    }
    Ok(schema)
}

fn parse_identifier_type(text: Option<&str>) -> ApiResult<RecordIdentifierType> {
    match text {
        None | Some("recordId") => Ok(RecordIdentifierType::RecordId),
        Some("pathTagRecordId") => Ok(RecordIdentifierType::PathTagRecordId),
        Some(other) => Err(ApiError::bad_request(format!(
            "recordIdentifierType \"{other}\" is invalid; expected recordId or pathTagRecordId."
        ))),
    }
}

#[utoipa::path(tag = "grids", params(DbQuery), request_body = CreateGridRequest, responses((status = 201, body = GridBody)))]
#[post("/v1/grids")]
async fn create_grid(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<DbQuery>,
    body: JsonObject<CreateGridRequest>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let db = required(&query.db_id, "dbId")?.to_owned();
    let req = body.into_inner();
    let record_identifier_type = parse_identifier_type(req.record_identifier_type.as_deref())?;
    let schema = initial_columns(&state, &p, &req).await?;
    let spec = NewGrid {
        id: req.id.clone(),
        name: req.name.clone().unwrap_or_default(),
        metadata: req
            .metadata
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect(),
        record_identifier_type,
        columns: schema.columns,
        dependencies: schema.dependencies,
        views: schema.views,
    };
    let pc = p.clone();
    let (grid, durable) = exec(&state, move |s| s.create_grid(&pc, &db, spec)).await??;
    durable.await.map_err(|err| {
        ApiError::new(ErrorCode::ServiceUnavailable, format!("The new grid was not logged: {err}"))
    })?;
    let schema = master_schema(&state, &p, &grid.id).await?;
    created(&grid_body(&grid, Some(grid_columns(&state, &p, &grid, &schema).await?)))
}

#[utoipa::path(tag = "grids", request_body = UpdateGridRequest, responses((status = 200, body = GridBody)))]
#[patch("/v1/grids/{id}")]
async fn update_grid(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<UpdateGridRequest>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let id = id.into_inner();
    let req = body.into_inner();
    let (pc, idc) = (p.clone(), id.clone());
    let grid = exec(&state, move |s| s.update_grid(&pc, &idc, req.name, req.metadata)).await??;
    let schema = master_schema(&state, &p, &id).await?;
    ok(&grid_body(&grid, Some(grid_columns(&state, &p, &grid, &schema).await?)))
}

#[utoipa::path(tag = "grids", responses((status = 204)))]
#[delete("/v1/grids/{id}")]
async fn delete_grid(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    exec(&state, move |s| s.delete_grid(&p, &id)).await??;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_grids)
        .service(list_template_grids)
        .service(get_grid)
        .service(create_grid)
        .service(update_grid)
        .service(delete_grid);
}
