//! Glossaries (issue 22), the OpenAPI's `glossary` tag and gridd's extensions:
//! - `GET /v1/glossaries[?projectId=]`, `POST /v1/glossaries` (201), `GET`, `PUT` and
//!   `DELETE /v1/glossaries/{id}` (204): the `Glossary` / `CreateGlossary` / `UpdateGlossary`
//!   shapes; `id` is an integer in paths and a string of it in bodies, as the OpenAPI has them.
//! - `GET /v1/glossaries/{id}/export?format=tbx|csv|xlsx&fields=&langs=` and `POST
//!   /v1/glossaries/{id}/import?importOption=ADD|UPDATE|UPDATE_ONLY` (multipart `file`): `files`.
//! - gridd's own: entries under `/v1/glossaries/{id}/terms` (`terms`), and the term lookup
//!   `POST /v1/glossaries/{id}/lookup`, `POST /v1/glossaries/lookup` (`lookup`).
//!
//! Privileges: reading (list, get, terms, export, lookup) needs `read`, changing entries
//! (terms, import) `write`, creating, updating and deleting a glossary `manage`; view keys
//! reach no glossary; who sees which glossary is `catalog::glossaries::access`'s rule. Handlers
//! parse and call one catalogue operation; reads take the published glossary
//! (`Routes::glossaries`) without a round trip through the supervisor.

mod files;
mod lookup;
mod terms;

use actix_web::{delete, get, post, put, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::{created, exec, no_content, ok, query_pairs};
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::auth::{Principal, Privilege};
use crate::catalog::glossaries::index::Published;
use crate::catalog::glossaries::{visible, Glossary, GlossaryFields, GlossaryProject};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The OpenAPI's `GlossaryProject`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectLink {
    #[schema(value_type = i64)]
    project_id: Option<crate::ids::ProjectId>,
    #[serde(default)]
    database_ids: Vec<String>,
}

/// The OpenAPI's `Glossary`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlossaryBody {
    id: String,
    name: String,
    description: String,
    langs: Vec<String>,
    projects: Vec<ProjectLink>,
}

fn glossary_body(g: &Glossary) -> GlossaryBody {
    GlossaryBody {
        id: g.id.to_string(),
        name: g.name.clone(),
        description: g.description.clone(),
        langs: g.langs.iter().map(ToString::to_string).collect(),
        projects: g
            .projects
            .iter()
            .map(|l| ProjectLink {
                project_id: Some(l.project_id),
                database_ids: l.database_ids.clone(),
            })
            .collect(),
    }
}

/// The OpenAPI's `CreateGlossary` and `UpdateGlossary` (`name` is required on create).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GlossaryRequest {
    name: Option<String>,
    description: Option<String>,
    langs: Option<Vec<String>>,
    #[serde(default, deserialize_with = "crate::json_object::optional_objects")]
    projects: Option<Vec<ProjectLink>>,
}

impl GlossaryRequest {
    fn parse(body: &[u8]) -> ApiResult<GlossaryFields> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::new(
                crate::error::ErrorCode::RequestBodyMissing,
                "A JSON body is required.",
            ));
        }
        let request: GlossaryRequest = object_from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("The request body is invalid: {e}")))?;
        let projects = match request.projects {
            None => None,
            Some(links) => Some(
                links
                    .into_iter()
                    .map(|l| {
                        let project_id = l.project_id.ok_or_else(|| {
                            ApiError::bad_request("projects[].projectId is required.")
                        })?;
                        Ok(GlossaryProject { project_id, database_ids: l.database_ids })
                    })
                    .collect::<ApiResult<Vec<_>>>()?,
            ),
        };
        Ok(GlossaryFields {
            name: request.name,
            description: request.description,
            langs: request.langs,
            projects,
        })
    }
}

/// A glossary (or entry) id of a path: an integer, else 400.
pub(crate) fn parse_id(text: &str, what: &str) -> ApiResult<u64> {
    text.parse().map_err(|_| {
        let shown = crate::io::csv_import::clip(text, 40);
        ApiError::bad_request(format!("The {what} id \"{shown}\" is not an integer."))
    })
}

/// Glossary `id` as published, for a key that may act on it with `needed`.
pub(crate) fn published(
    state: &AppState,
    p: &Principal,
    id: &str,
    needed: Privilege,
) -> ApiResult<std::sync::Arc<Published>> {
    let id = parse_id(id, "glossary")?;
    Ok(crate::catalog::glossaries::find(&state.routes.glossaries, p, id, needed)?)
}

#[utoipa::path(tag = "glossary", params(
    ("projectId" = Option<i64>, Query, description = "only the glossaries linked to this project (gridd's extension)"),
), responses((status = 200, body = [GlossaryBody])))]
#[get("/v1/glossaries")]
async fn list_glossaries(
    state: web::Data<AppState>,
    p: Principal,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    p.require_company_privilege(Privilege::Read)?;
    let mut project = None;
    for (key, value) in query_pairs(&req)? {
        if key == "projectId" {
            let shown = crate::io::csv_import::clip(&value, 40);
            let id = value.parse::<crate::ids::ProjectId>().map_err(|_| {
                ApiError::bad_request(format!("projectId \"{shown}\" is not an integer."))
            })?;
            project = Some(id);
        }
    }
    let all = state.routes.glossaries.all();
    let shown = all
        .iter()
        .map(|g| &g.glossary)
        .filter(|g| visible(&p, g))
        .filter(|g| project.is_none_or(|id| g.projects.iter().any(|l| l.project_id == id)));
    ok(&shown.map(glossary_body).collect::<Vec<_>>())
}

#[utoipa::path(tag = "glossary", request_body = GlossaryRequest, responses((status = 201, body = GlossaryBody)))]
#[post("/v1/glossaries")]
async fn create_glossary(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let fields = GlossaryRequest::parse(&body)?;
    if fields.name.is_none() {
        return Err(ApiError::bad_request("name is required."));
    }
    let glossary = exec(&state, move |s| s.create_glossary(&p, fields)).await??;
    created(&glossary_body(&glossary))
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path)), responses((status = 200, body = GlossaryBody)))]
#[get("/v1/glossaries/{id}")]
async fn get_glossary(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let glossary = published(&state, &p, &id, Privilege::Read)?;
    ok(&glossary_body(&glossary.glossary))
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path)), request_body = GlossaryRequest, responses((status = 200, body = GlossaryBody)))]
#[put("/v1/glossaries/{id}")]
async fn update_glossary(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let id = parse_id(&id, "glossary")?;
    let fields = GlossaryRequest::parse(&body)?;
    let glossary = exec(&state, move |s| s.update_glossary(&p, id, fields)).await??;
    ok(&glossary_body(&glossary))
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path)), responses((status = 204)))]
#[delete("/v1/glossaries/{id}")]
async fn delete_glossary(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = parse_id(&id, "glossary")?;
    exec(&state, move |s| s.delete_glossary(&p, id)).await??;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    lookup::configure(cfg);
    cfg.service(list_glossaries)
        .service(create_glossary)
        .service(get_glossary)
        .service(update_glossary)
        .service(delete_glossary);
    files::configure(cfg);
    terms::configure(cfg);
}
