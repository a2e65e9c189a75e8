//! `/v1/views/<viewId>/columns`: get, create (added to the grid and the view), update, delete,
//! and add to or remove from a view.

use actix_web::{delete, get, patch, post, web, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use super::{created, no_content, ok, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{ChangeSchema, ReadSchema, SchemaChanged};
use crate::grid::columns::ColumnRequest;
use crate::grid::planner::{column_in_view, SchemaChange};
use crate::grid::render::{column_body, ColumnBody};
use crate::grid::schema::Schema;
use crate::state::AppState;

fn render_column(schema: &Schema, view_id: &str, column_id: &str) -> ApiResult<ColumnBody> {
    let view = schema
        .view(view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", view_id))?;
    let (column, editable) = column_in_view(schema, view, column_id)?;
    Ok(column_body(schema, column, editable))
}

async fn change(
    state: &AppState,
    p: &Principal,
    view_id: &str,
    needed_tier: Tier,
    change: SchemaChange,
) -> ApiResult<SchemaChanged> {
    p.require_tier(needed_tier)?;
    let route = view_route(state, p, view_id, Privilege::Manage)?;
    route.addr.send(ChangeSchema { view_id: view_id.to_owned(), change }).await?
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
    let schema = route.addr.send(ReadSchema).await?;
    ok(&render_column(&schema, &view_id, &column_id)?)
}

#[utoipa::path(tag = "columns", request_body = ColumnRequest, responses((status = 201, body = ColumnBody)))]
#[post("/v1/views/{viewId}/columns")]
async fn create_column(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: web::Json<ColumnRequest>,
) -> ApiResult<HttpResponse> {
    let changed =
        change(&state, &p, &view_id, Tier::Team, SchemaChange::CreateColumn(body.into_inner()))
            .await?;
    created(&render_column(&changed.schema, &view_id, &changed.subject)?)
}

#[utoipa::path(tag = "columns", request_body = ColumnRequest, responses((status = 200, body = ColumnBody)))]
#[patch("/v1/views/{viewId}/columns/{id}")]
async fn update_column(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    body: web::Json<ColumnRequest>,
) -> ApiResult<HttpResponse> {
    let (view_id, column_id) = path.into_inner();
    let request = body.into_inner();
    let changed =
        change(&state, &p, &view_id, Tier::Team, SchemaChange::UpdateColumn { column_id, request })
            .await?;
    ok(&render_column(&changed.schema, &view_id, &changed.subject)?)
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
    ok(&render_column(&changed.schema, &view_id, &changed.subject)?)
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
        .service(update_column)
        .service(delete_column)
        .service(add_column_to_view)
        .service(remove_column_from_view);
}
