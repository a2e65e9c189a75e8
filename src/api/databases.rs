//! `/v1/databases`: list (optionally by project) and get; create (with a description and an id
//! of the client's choosing), rename and describe, delete and duplicate (owner keys).

use actix_web::{delete, get, patch, post, put, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::projects::integer_id;
use super::{exec, no_content, ok, required};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::{Database, ProjectId};
use crate::catalog::tenancy::NewDatabase;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseBody {
    pub id: String,
    pub name: String,
    pub description: String,
    #[schema(value_type = i64)]
    pub project_id: ProjectId,
}

impl From<&Database> for DatabaseBody {
    fn from(d: &Database) -> DatabaseBody {
        DatabaseBody {
            id: d.id.clone(),
            name: d.name.clone(),
            description: d.description.clone(),
            project_id: d.project_id,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct ProjectQuery {
    /// The project's integer id; anything else is 400 badRequest.
    #[param(value_type = Option<i64>)]
    pub project_id: Option<String>,
}

/// The OpenAPI's CreateDatabase: `id` (`^\w+$`) chooses the new database's id;
/// `enableGuidRecord` is refused when true (gridd's record ids are the client's or random).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseRequest {
    pub name: String,
    pub description: Option<String>,
    pub id: Option<String>,
    pub enable_guid_record: Option<bool>,
}

/// The OpenAPI's UpdateDatabase: `name` required, `description` replaced when given.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateDatabaseRequest {
    pub name: String,
    pub description: Option<String>,
}

/// A create or duplicate request as the catalogue takes it (400 for `enableGuidRecord: true`).
pub(super) fn new_database(req: DatabaseRequest) -> ApiResult<NewDatabase> {
    if req.enable_guid_record == Some(true) {
        return Err(ApiError::bad_request(
            "enableGuidRecord is not supported: record ids are the client's or random.",
        ));
    }
    Ok(NewDatabase { name: req.name, description: req.description, id: req.id })
}

#[utoipa::path(tag = "databases", params(ProjectQuery), responses((status = 200, body = [DatabaseBody])))]
#[get("/v1/databases")]
async fn list_databases(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<ProjectQuery>,
) -> ApiResult<HttpResponse> {
    // Given empty, it is no integer either (400), rather than absent.
    let project =
        query.into_inner().project_id.map(|text| integer_id(&text, "projectId")).transpose()?;
    let dbs = exec(&state, move |s| s.list_databases(&p, project)).await??;
    ok(&dbs.iter().map(DatabaseBody::from).collect::<Vec<_>>())
}

#[utoipa::path(tag = "databases", responses((status = 200, body = DatabaseBody)))]
#[get("/v1/databases/{id}")]
async fn get_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let db = exec(&state, move |s| s.database(&p, &id, Privilege::Read).cloned()).await??;
    ok(&DatabaseBody::from(&db))
}

#[utoipa::path(tag = "databases", params(ProjectQuery), request_body = DatabaseRequest, responses((status = 200, body = DatabaseBody)))]
#[post("/v1/databases")]
async fn create_database(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<ProjectQuery>,
    body: web::Json<DatabaseRequest>,
) -> ApiResult<HttpResponse> {
    let project = integer_id(required(&query.project_id, "projectId")?, "projectId")?;
    let spec = new_database(body.into_inner())?;
    let db = exec(&state, move |s| s.create_database(&p, project, spec)).await??;
    ok(&DatabaseBody::from(&db))
}

async fn rename(
    state: web::Data<AppState>,
    p: Principal,
    id: String,
    req: UpdateDatabaseRequest,
) -> ApiResult<HttpResponse> {
    let db =
        exec(&state, move |s| s.update_database(&p, &id, &req.name, req.description.as_deref()))
            .await??;
    ok(&DatabaseBody::from(&db))
}

#[utoipa::path(tag = "databases", request_body = UpdateDatabaseRequest, responses((status = 200, body = DatabaseBody)))]
#[put("/v1/databases/{id}")]
async fn put_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: web::Json<UpdateDatabaseRequest>,
) -> ApiResult<HttpResponse> {
    rename(state, p, id.into_inner(), body.into_inner()).await
}

#[utoipa::path(tag = "databases", request_body = UpdateDatabaseRequest, responses((status = 200, body = DatabaseBody)))]
#[patch("/v1/databases/{id}")]
async fn patch_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: web::Json<UpdateDatabaseRequest>,
) -> ApiResult<HttpResponse> {
    rename(state, p, id.into_inner(), body.into_inner()).await
}

#[utoipa::path(tag = "databases", responses((status = 204)))]
#[delete("/v1/databases/{id}")]
async fn delete_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    exec(&state, move |s| s.delete_database(&p, &id)).await??;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_databases)
        .service(get_database)
        .service(create_database)
        .service(put_database)
        .service(patch_database)
        .service(delete_database);
}
