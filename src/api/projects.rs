//! `/v1/projects`: list and get (every key with read; a get answers the OpenAPI's
//! ProjectDetail, the project with its databases), create (with a type), rename and delete
//! (owner keys).

use actix_web::{delete, get, patch, post, put, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::databases::DatabaseBody;
use super::sized_json::JsonObject;
use super::{exec, ok};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::{CompanyId, Project, ProjectId, ProjectType};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// An integer id parameter (`projectId`, a company id): anything but an integer is 400
/// badRequest naming the parameter.
pub fn integer_id(text: &str, name: &str) -> ApiResult<i64> {
    // Digits only: `i64::from_str` also takes a sign, and a space was trimmed before; an id
    // written any other way is not the id (decisions 2).
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| text.parse::<i64>().ok()).flatten().ok_or_else(|| {
        ApiError::bad_request(format!("{name} must be an integer; \"{text}\" is not one."))
    })
}

/// A project as the API shows it: integer ids (JSON numbers, as the hosted service's), and
/// `description` a list, as the contract declares it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectBody {
    #[schema(value_type = i64)]
    pub id: ProjectId,
    #[schema(value_type = i64)]
    pub company_id: CompanyId,
    pub name: String,
    pub description: Vec<String>,
    #[serde(rename = "type")]
    pub project_type: ProjectType,
}

impl From<&Project> for ProjectBody {
    fn from(p: &Project) -> ProjectBody {
        ProjectBody {
            id: p.id,
            company_id: p.company_id,
            name: p.name.clone(),
            description: if p.description.is_empty() {
                Vec::new()
            } else {
                vec![p.description.clone()]
            },
            project_type: p.project_type,
        }
    }
}

/// A project as `GET /v1/projects/<id>` answers it (the OpenAPI's ProjectDetail): its fields
/// and its databases the key sees, as `GET /v1/databases?projectId=` lists them.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectDetailBody {
    #[serde(flatten)]
    pub project: ProjectBody,
    pub databases: Vec<DatabaseBody>,
}

/// `POST /v1/projects`'s body (the OpenAPI's CreateProject).
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateProjectRequest {
    pub name: String,
    /// Text, or a list of lines as a project is read (`ProjectBody`), joined by line breaks.
    #[serde(default, deserialize_with = "description_text")]
    #[schema(value_type = Option<String>)]
    pub description: Option<String>,
    /// `DEFAULT` when absent or null.
    #[serde(default, rename = "type", deserialize_with = "project_type")]
    #[schema(value_type = Option<ProjectType>)]
    pub project_type: Option<ProjectType>,
}

/// A project type written by its OpenAPI name; anything else is refused naming the three.
fn project_type<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ProjectType>, D::Error> {
    let written = Option::<serde_json::Value>::deserialize(d)?;
    let Some(written) = written.filter(|v| !v.is_null()) else { return Ok(None) };
    serde_json::from_value(written.clone()).map(Some).map_err(|_| {
        serde::de::Error::custom(format!(
            "type must be DEFAULT, INTERNAL or TMS; {written} is not one"
        ))
    })
}

/// `PUT`/`PATCH /v1/projects/<id>`'s body (the OpenAPI's UpdateProject, which has no `type`:
/// a project keeps the type it was made with, whatever such a body holds).
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateProjectRequest {
    pub name: String,
    /// Text, or a list of lines as a project is read (`ProjectBody`), joined by line breaks:
    /// what a client read it may write back.
    #[serde(default, deserialize_with = "description_text")]
    #[schema(value_type = Option<String>)]
    pub description: Option<String>,
}

/// A description written as text or as the list a project is read with.
fn description_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Text(String),
        Lines(Vec<String>),
    }
    Ok(Option::<Written>::deserialize(d)?.map(|written| match written {
        Written::Text(text) => text,
        Written::Lines(lines) => lines.join("\n"),
    }))
}

#[utoipa::path(tag = "projects", responses((status = 200, body = [ProjectBody])))]
#[get("/v1/projects")]
async fn list_projects(state: web::Data<AppState>, p: Principal) -> ApiResult<HttpResponse> {
    let projects = exec(&state, move |s| s.list_projects(&p)).await??;
    ok(&projects.iter().map(ProjectBody::from).collect::<Vec<_>>())
}

#[utoipa::path(tag = "projects", params(("id" = i64, Path, description = "the project's integer id")), responses((status = 200, body = ProjectDetailBody)))]
#[get("/v1/projects/{id}")]
async fn get_project(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = integer_id(&id, "projectId")?;
    let (project, databases) = exec(&state, move |s| {
        let project = s.project(&p, id, Privilege::Read)?.clone();
        Ok::<_, ApiError>((project, s.list_databases(&p, Some(id))?))
    })
    .await??;
    ok(&ProjectDetailBody {
        project: ProjectBody::from(&project),
        databases: databases.iter().map(DatabaseBody::from).collect(),
    })
}

#[utoipa::path(tag = "projects", request_body = CreateProjectRequest, responses((status = 200, body = ProjectBody)))]
#[post("/v1/projects")]
async fn create_project(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonObject<CreateProjectRequest>,
) -> ApiResult<HttpResponse> {
    let body = body.into_inner();
    let project_type = body.project_type.unwrap_or_default();
    let project =
        exec(&state, move |s| s.create_project(&p, &body.name, body.description, project_type))
            .await??;
    ok(&ProjectBody::from(&project))
}

async fn rename(
    state: web::Data<AppState>,
    p: Principal,
    id: String,
    body: UpdateProjectRequest,
) -> ApiResult<HttpResponse> {
    let id = integer_id(&id, "projectId")?;
    let project =
        exec(&state, move |s| s.rename_project(&p, id, &body.name, body.description)).await??;
    ok(&ProjectBody::from(&project))
}

#[utoipa::path(tag = "projects", params(("id" = i64, Path, description = "the project's integer id")), request_body = UpdateProjectRequest, responses((status = 200, body = ProjectBody)))]
#[put("/v1/projects/{id}")]
async fn put_project(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<UpdateProjectRequest>,
) -> ApiResult<HttpResponse> {
    rename(state, p, id.into_inner(), body.into_inner()).await
}

#[utoipa::path(tag = "projects", params(("id" = i64, Path, description = "the project's integer id")), request_body = UpdateProjectRequest, responses((status = 200, body = ProjectBody)))]
#[patch("/v1/projects/{id}")]
async fn patch_project(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<UpdateProjectRequest>,
) -> ApiResult<HttpResponse> {
    rename(state, p, id.into_inner(), body.into_inner()).await
}

/// Deletes a project with its databases and grids: 200 with an empty body (decisions.md 3).
#[utoipa::path(tag = "projects", params(("id" = i64, Path, description = "the project's integer id")), responses((status = 200, description = "deleted, empty body")))]
#[delete("/v1/projects/{id}")]
async fn delete_project(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = integer_id(&id, "projectId")?;
    exec(&state, move |s| s.delete_project(&p, id)).await??;
    Ok(HttpResponse::Ok().finish())
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_projects)
        .service(get_project)
        .service(create_project)
        .service(put_project)
        .service(patch_project)
        .service(delete_project);
}
