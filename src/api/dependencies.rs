//! `/v1/views/<viewId>/dependencies`: translation dependencies between language columns.

use actix_web::{delete, get, post, put, web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::sized_json::JsonObject;
use super::{created, no_content, ok, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{ChangeSchema, SchemaChanged};
use crate::grid::columns::MAX_COLUMNS;
use crate::grid::planner::{DependencyRequest, SchemaChange};
use crate::grid::render::DependencyBody;
use crate::grid::schema::{Dependency, Schema};
use crate::state::AppState;

/// Dependency `id` as view `view_id` shows it: one linking a column the view hides is not
/// found there.
fn render(schema: &Schema, view_id: &str, id: &str) -> ApiResult<DependencyBody> {
    shown(schema, view_id)?
        .find(|d| d.id == id)
        .map(DependencyBody::from)
        .ok_or_else(|| ApiError::not_found(ErrorCode::DependencyIsNotFound, "Dependency", id))
}

/// The dependencies view `view_id` shows (`Schema::view_dependencies`).
fn shown<'a>(
    schema: &'a Schema,
    view_id: &str,
) -> ApiResult<impl Iterator<Item = &'a Dependency> + 'a> {
    let view = schema
        .view(view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", view_id))?;
    Ok(schema.view_dependencies(view))
}

async fn change(
    state: &AppState,
    p: &Principal,
    view_id: &str,
    change: SchemaChange,
) -> ApiResult<SchemaChanged> {
    p.require_tier(Tier::Team)?;
    let route = view_route(state, p, view_id, Privilege::Manage)?;
    Ok(route.addr.send(ChangeSchema { view_id: view_id.to_owned(), change }).await??)
}

#[utoipa::path(tag = "dependencies", responses((status = 200, body = [DependencyBody])))]
#[get("/v1/views/{viewId}/dependencies")]
async fn list_dependencies(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let schema = route.schema().await?;
    let listed: Vec<DependencyBody> = shown(&schema, &view_id)?.map(DependencyBody::from).collect();
    ok(&listed)
}

#[utoipa::path(tag = "dependencies", responses((status = 200, body = DependencyBody)))]
#[get("/v1/views/{viewId}/dependencies/{id}")]
async fn get_dependency(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (view_id, id) = path.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let schema = route.schema().await?;
    ok(&render(&schema, &view_id, &id)?)
}

#[utoipa::path(tag = "dependencies", request_body = DependencyRequest, responses((status = 201, body = DependencyBody)))]
#[post("/v1/views/{viewId}/dependencies")]
async fn create_dependency(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonObject<DependencyRequest>,
) -> ApiResult<HttpResponse> {
    let changed =
        change(&state, &p, &view_id, SchemaChange::CreateDependency(body.into_inner())).await?;
    created(&render(&changed.schema, &view_id, &changed.subject)?)
}

#[utoipa::path(tag = "dependencies", request_body = DependencyRequest, responses((status = 200, body = DependencyBody)))]
#[put("/v1/views/{viewId}/dependencies/{id}")]
async fn update_dependency(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    body: JsonObject<DependencyRequest>,
) -> ApiResult<HttpResponse> {
    let (view_id, dependency_id) = path.into_inner();
    let request = body.into_inner();
    let changed =
        change(&state, &p, &view_id, SchemaChange::UpdateDependency { dependency_id, request })
            .await?;
    ok(&render(&changed.schema, &view_id, &changed.subject)?)
}

#[utoipa::path(tag = "dependencies", responses((status = 204)))]
#[delete("/v1/views/{viewId}/dependencies/{id}")]
async fn delete_dependency(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (view_id, dependency_id) = path.into_inner();
    change(&state, &p, &view_id, SchemaChange::DeleteDependency { dependency_id }).await?;
    no_content()
}

/// The body of a bulk delete (the OpenAPI's `DeleteDependency`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteDependencies {
    /// The ids of the dependencies to delete, at least one.
    ids: Vec<String>,
}

#[utoipa::path(tag = "dependencies", request_body = DeleteDependencies, responses((status = 204)))]
#[delete("/v1/views/{viewId}/dependencies")]
async fn delete_dependencies(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonObject<DeleteDependencies>,
) -> ApiResult<HttpResponse> {
    let ids = body.into_inner().ids;
    if ids.is_empty() || ids.len() > MAX_COLUMNS {
        return Err(ApiError::bad_request(format!(
            "ids must name between 1 and {MAX_COLUMNS} dependencies."
        )));
    }
    change(&state, &p, &view_id, SchemaChange::DeleteDependencies { ids }).await?;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_dependencies)
        .service(get_dependency)
        .service(create_dependency)
        .service(update_dependency)
        .service(delete_dependency)
        .service(delete_dependencies);
}
