//! `/v1/views`: list by grid or branch (optionally by view type), get with columns, create with
//! columns and editable flags, delete.

use std::sync::Arc;

use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::columns::reference_targets;
use super::conditional::tagged_json;
use super::grids::status_str;
use super::listing::parse_list_params;
use super::records::{read_view, records_value};
use super::sized_json::JsonObject;
use super::{branch_route, exec, no_content, ok, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::reads::{export_rows, ExportQuery};
use crate::grid::actor::ChangeSchema;
use crate::grid::planner::{SchemaChange, ViewColumnRequest};
use crate::grid::read_pool::ReadKind;
use crate::grid::render::{view_columns, ViewBody};
use crate::grid::schema::{Schema, ViewDef};
use crate::grid::statistic::{view_statistic, ViewStatistic};
use crate::ids;
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct ViewListQuery {
    pub grid_id: Option<String>,
    pub branch_id: Option<String>,
    /// Only the views of this type; absent or empty: every view.
    // Read as text, so that an unknown value is refused naming the known ones (`ViewType::parse`).
    #[param(value_type = Option<ViewType>, inline)]
    pub r#type: Option<String>,
}

/// The OpenAPI's view types (`GET /v1/views?type=`). A branch's default view (every column,
/// made with the branch) is a `defaultView`; a view made with `POST /v1/views` is an
/// `accessView` (a subset of the columns to give access to). gridd makes no views of the
/// other three types (personal, workflow and widget views of the hosted service's web app),
/// so asking for them lists nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
#[schema(rename_all = "camelCase")]
pub enum ViewType {
    DefaultView,
    AccessView,
    UserView,
    WorkflowView,
    WidgetView,
}

impl ViewType {
    const ALL: [(&'static str, ViewType); 5] = [
        ("defaultView", ViewType::DefaultView),
        ("accessView", ViewType::AccessView),
        ("userView", ViewType::UserView),
        ("workflowView", ViewType::WorkflowView),
        ("widgetView", ViewType::WidgetView),
    ];

    /// The type named `text` (exactly, as the OpenAPI spells it); another name is 400
    /// badRequest listing the known ones.
    fn parse(text: &str) -> ApiResult<ViewType> {
        Self::ALL.iter().find(|(name, _)| *name == text).map(|(_, t)| *t).ok_or_else(|| {
            ApiError::bad_request(format!(
                "type \"{text}\" is invalid; expected defaultView, accessView, userView, \
                 workflowView or widgetView."
            ))
        })
    }

    /// The type of `view`.
    fn of(view: &ViewDef) -> ViewType {
        if view.is_default {
            ViewType::DefaultView
        } else {
            ViewType::AccessView
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateViewRequest {
    pub name: Option<String>,
    pub grid_id: Option<String>,
    #[serde(default, deserialize_with = "crate::json_object::objects_only")]
    pub columns: Vec<ViewColumnRequest>,
}

/// The grid status shown with a view.
pub async fn grid_status(state: &AppState, route: &BranchRoute) -> ApiResult<&'static str> {
    let branch_id = route.branch_id.clone();
    let status = exec(state, move |s| s.branch_record(&branch_id).map(|b| b.status)).await?;
    Ok(status_str(status.unwrap_or_default()))
}

/// Renders a view of `schema` with its columns (naming what reference columns point at) and
/// the grid's status.
pub async fn view_body(
    state: &AppState,
    p: &Principal,
    schema: &Schema,
    view: &ViewDef,
    route: &BranchRoute,
) -> ApiResult<ViewBody> {
    let status = grid_status(state, route).await?;
    view_body_with(state, p, schema, view, &route.branch_id, status).await
}

/// `view_body` of a view of branch `branch_id` with the grid status already known (a listing
/// asks for it once).
async fn view_body_with(
    state: &AppState,
    p: &Principal,
    schema: &Schema,
    view: &ViewDef,
    branch_id: &str,
    grid_status: &'static str,
) -> ApiResult<ViewBody> {
    let shown = schema.view_columns(view).into_iter().map(|(c, _)| c);
    let targets = reference_targets(state, p, shown).await?;
    Ok(ViewBody {
        id: view.id.clone(),
        name: view.name.clone(),
        grid_id: branch_id.to_owned(),
        grid_status,
        columns: view_columns(schema, view, &targets),
    })
}

/// The views of branch `branch_id` (whose schema is `schema`), only those of type `wanted`
/// when given, each as `GET /v1/views/<id>` shows it.
pub(super) async fn branch_views(
    state: &AppState,
    p: &Principal,
    (schema, branch_id): (&Schema, &str),
    grid_status: &'static str,
    wanted: Option<ViewType>,
) -> ApiResult<Vec<ViewBody>> {
    let mut views = Vec::with_capacity(schema.views.len());
    for view in schema.views.iter().filter(|v| wanted.is_none_or(|t| t == ViewType::of(v))) {
        views.push(view_body_with(state, p, schema, view, branch_id, grid_status).await?);
    }
    Ok(views)
}

fn grid_not_found(id: &str) -> impl Fn() -> ApiError + '_ {
    move || ApiError::not_found(ErrorCode::GridIsNotFound, "Grid", id)
}

/// The views of a grid or branch (those of one `type` when it is given), each with its columns
/// as `GET /v1/views/<id>` shows them.
#[utoipa::path(tag = "views", params(ViewListQuery), responses((status = 200, body = [ViewBody])))]
#[get("/v1/views")]
async fn list_views(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<ViewListQuery>,
) -> ApiResult<HttpResponse> {
    let query = query.into_inner();
    let wanted = match query.r#type.as_deref() {
        None | Some("") => None,
        Some(text) => Some(ViewType::parse(text)?),
    };
    let route = match (
        query.branch_id.filter(|s| !s.is_empty()),
        query.grid_id.filter(|s| !s.is_empty()),
    ) {
        (Some(branch), _) => branch_route(&state, &p, &branch, Privilege::Read, || {
            ApiError::not_found(ErrorCode::BranchIsNotFound, "Branch", &branch)
        })?,
        (None, Some(grid)) => {
            branch_route(&state, &p, &grid, Privilege::Read, grid_not_found(&grid))?
        }
        (None, None) => return Err(ApiError::missing_parameter("gridId")),
    };
    let schema = route.schema().await?;
    let status = grid_status(&state, &route).await?;
    ok(&branch_views(&state, &p, (&schema, &route.branch_id), status, wanted).await?)
}

/// Whether `include` (repeated or comma-separated) asks for the records; any other value is
/// 400 badRequest naming it.
fn include_records(pairs: &[(String, String)]) -> ApiResult<bool> {
    let mut records = false;
    for value in pairs.iter().filter(|(k, _)| k == "include").map(|(_, v)| v) {
        for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item != "records" {
                return Err(ApiError::bad_request(format!(
                    "include \"{item}\" is not supported; the only value is records."
                )));
            }
            records = true;
        }
    }
    Ok(records)
}

/// A view with its columns; with `include=records`, also a page of its records (`records`),
/// read with the record listing's `columnIds`, `fetchFileOption`, `page`, `query`, `sort`,
/// `afterRecordId` and `beforeRecordId`.
#[utoipa::path(tag = "views", params(
    ("include" = Option<Vec<String>>, Query, description = "records: add the first page of records"),
    ("page" = Option<String>, Query, description = "with include=records: JSON {offset, limit}"),
    ("columnIds" = Option<String>, Query, description = "with include=records"),
    ("query" = Option<String>, Query, description = "with include=records"),
    ("sort" = Option<String>, Query, description = "with include=records"),
), responses((status = 200, body = ViewBody)))]
#[get("/v1/views/{id}")]
async fn get_view(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let params = parse_list_params(req.query_string())?;
    let with_records = include_records(&params.others)?;
    let route = view_route(&state, &p, &id, Privilege::Read)?;
    let schema = route.schema().await?;
    let view = schema
        .view(&id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &id))?;
    let body = view_body(&state, &p, &schema, view, &route).await?;
    if !with_records {
        return tagged_json(req.headers(), &body);
    }
    let records = records_value(&state, &p, &route, &id, &params).await?;
    let mut value = serde_json::to_value(&body)
        .map_err(|e| ApiError::internal(format!("rendering the view: {e}")))?;
    if let Some(object) = value.as_object_mut() {
        object.insert("records".to_owned(), records);
    }
    tagged_json(req.headers(), &value)
}

#[utoipa::path(tag = "views", request_body = CreateViewRequest, responses((status = 200, body = ViewBody)))]
#[post("/v1/views")]
async fn create_view(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonObject<CreateViewRequest>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let req = body.into_inner();
    let grid_id = req
        .grid_id
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::bad_request("gridId is required."))?;
    let name = req.name.ok_or_else(|| ApiError::bad_request("The view name is required."))?;
    let route: Arc<BranchRoute> =
        branch_route(&state, &p, &grid_id, Privilege::Manage, grid_not_found(&grid_id))?;
    let view_id = ids::generate();
    let change = SchemaChange::CreateView { id: view_id.clone(), name, columns: req.columns };
    let changed = route.addr.send(ChangeSchema { view_id: view_id.clone(), change }).await??;
    let (branch, vid) = (route.branch_id.clone(), view_id.clone());
    exec(&state, move |s| s.register_view(&branch, &vid)).await?;
    let view = changed
        .schema
        .view(&view_id)
        .ok_or_else(|| ApiError::internal("the new view is missing"))?;
    ok(&view_body(&state, &p, &changed.schema, view, &route).await?)
}

/// `PATCH /v1/views/<id>`'s body (gridd's extension: the hosted API has no view update).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateViewRequest {
    /// 1 to 255 characters.
    name: Option<String>,
}

#[utoipa::path(tag = "views", request_body = UpdateViewRequest, responses((status = 200, body = ViewBody)))]
#[patch("/v1/views/{id}")]
async fn update_view(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<UpdateViewRequest>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let name = body.into_inner().name.ok_or_else(|| ApiError::missing_parameter("name"))?;
    let id = id.into_inner();
    let route = view_route(&state, &p, &id, Privilege::Manage)?;
    let change = SchemaChange::RenameView { name };
    let changed = route.addr.send(ChangeSchema { view_id: id.clone(), change }).await??;
    let view = (changed.schema.view(&id))
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &id))?;
    ok(&view_body(&state, &p, &changed.schema, view, &route).await?)
}

#[utoipa::path(tag = "views", responses((status = 204)))]
#[delete("/v1/views/{id}")]
async fn delete_view(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let id = id.into_inner();
    let route = view_route(&state, &p, &id, Privilege::Manage)?;
    route
        .addr
        .send(ChangeSchema { view_id: id.clone(), change: SchemaChange::DeleteView })
        .await??;
    // The view's webhooks go with it, in the same supervisor step as its route.
    exec(&state, move |s| {
        s.unregister_view(&id);
        s.delete_view_webhooks(&id)
    })
    .await??;
    no_content()
}

#[utoipa::path(tag = "views", params(
    ("columnIds" = Option<String>, Query, description = "the target columns to count (default: the view's)"),
), responses((status = 200, body = ViewStatistic)))]
#[get("/v1/views/{id}/statistic")]
async fn get_statistic(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let params = parse_list_params(req.query_string())?;
    let route = view_route(&state, &p, &id, Privilege::Read)?;
    let query = ExportQuery {
        view_id: id.into_inner(),
        column_ids: params.column_ids,
        filters: Vec::new(),
        sort: Vec::new(),
    };
    // The count reads every record: background work on the read pool, over the published view.
    let view = read_view(&route).await?;
    let count = move || {
        let source = export_rows(view, &query)?;
        Ok::<_, ApiError>(view_statistic(&source.view.state, &source.columns, &source.rows))
    };
    let statistic = state.read_pool.run(route.company_id, ReadKind::Scan, count).await??;
    ok(&statistic)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_views)
        .service(get_view)
        .service(get_statistic)
        .service(create_view)
        .service(update_view)
        .service(delete_view);
}
