//! The admin API of decisions.md section 11: API keys (owner keys of a company) and companies
//! (the server's admin key only).

use actix_web::{delete, get, patch, post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::projects::integer_id;
use super::sized_json::JsonObject;
use super::{created, exec, no_content, ok};
use crate::auth::{Access, ApiKey, KeyKind, Principal, Privilege, Tier};
use crate::catalog::model::{Company, CompanyId, ProjectId};
use crate::catalog::tenancy::{KeySpec, NewCompany};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessRequest {
    #[serde(default)]
    pub all: bool,
    /// Project ids: integers (numeric strings are accepted too).
    #[serde(default)]
    #[schema(value_type = Vec<i64>)]
    pub projects: Vec<serde_json::Value>,
    #[serde(default)]
    pub databases: Vec<String>,
    #[serde(default)]
    pub grids: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateKeyRequest {
    pub name: Option<String>,
    pub user: Option<String>,
    /// `company` (default) or `view`.
    pub kind: Option<String>,
    #[serde(default)]
    pub privileges: Vec<String>,
    #[serde(default, deserialize_with = "crate::json_object::optional_object")]
    pub access: Option<AccessRequest>,
    pub view_id: Option<String>,
}

/// A key as listed: never the secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyBody {
    pub id: String,
    pub name: String,
    pub user: String,
    pub kind: &'static str,
    pub privileges: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub access: Option<Access>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_id: Option<String>,
    pub created_time: String,
    /// The secret: only in the answer to the create call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl KeyBody {
    pub fn new(key: &ApiKey, secret: Option<String>) -> KeyBody {
        let (kind, privileges, access, view_id) = match &key.kind {
            KeyKind::Company { privileges, access } => (
                "company",
                privileges.iter().map(|p| p.as_str()).collect(),
                Some(access.clone()),
                None,
            ),
            KeyKind::View { view_id } => {
                ("view", vec!["read", "write"], None, Some(view_id.clone()))
            }
        };
        KeyBody {
            id: key.id.clone(),
            name: key.name.clone(),
            user: key.user.clone(),
            kind,
            privileges,
            access,
            view_id,
            created_time: key.created_time.clone(),
            key: secret,
        }
    }
}

/// The project ids of an access request: integers, or strings holding one; anything else is
/// 400 badRequest.
fn access_projects(values: &[serde_json::Value]) -> ApiResult<Vec<ProjectId>> {
    values
        .iter()
        .map(|v| match v {
            serde_json::Value::Number(n) => n.as_i64().ok_or_else(|| {
                ApiError::bad_request(format!("access.projects: {n} is not an integer id."))
            }),
            serde_json::Value::String(s) => integer_id(s, "access.projects"),
            other => Err(ApiError::bad_request(format!(
                "access.projects: {other} is not an integer project id."
            ))),
        })
        .collect()
}

fn key_spec(req: CreateKeyRequest) -> ApiResult<KeySpec> {
    let name = req
        .name
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("name is required."))?;
    let kind = match req.kind.as_deref().unwrap_or("company") {
        "company" => {
            if req.privileges.is_empty() {
                return Err(ApiError::bad_request(
                    "privileges must list at least one of read, write, manage, owner.",
                ));
            }
            let privileges = req
                .privileges
                .iter()
                .map(|p| {
                    Privilege::parse(p).ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "Unknown privilege \"{p}\"; expected read, write, manage or owner."
                        ))
                    })
                })
                .collect::<ApiResult<Vec<_>>>()?;
            let access = match req.access {
                None => Access::everything(),
                Some(a) => Access {
                    all: a.all,
                    projects: access_projects(&a.projects)?,
                    databases: a.databases,
                    grids: a.grids,
                },
            };
            KeyKind::Company { privileges, access }
        }
        "view" => {
            let view_id = req
                .view_id
                .filter(|v| !v.is_empty())
                .ok_or_else(|| ApiError::bad_request("A view key needs viewId."))?;
            KeyKind::View { view_id }
        }
        other => {
            return Err(ApiError::bad_request(format!(
                "Unknown key kind \"{other}\"; expected company or view."
            )))
        }
    };
    Ok(KeySpec { name, user: req.user, kind, view_grid: None })
}

#[utoipa::path(tag = "admin", request_body = CreateKeyRequest, responses((status = 201, body = KeyBody)))]
#[post("/admin/v1/api-keys")]
async fn create_key(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonObject<CreateKeyRequest>,
) -> ApiResult<HttpResponse> {
    let mut spec = key_spec(body.into_inner())?;
    if let (KeyKind::View { view_id }, Some(remote)) = (&spec.kind, &state.remote) {
        if state.routes.view(view_id).is_none() {
            // Served by another node: the catalogue knows its grid, not the view.
            spec.view_grid = remote.route(view_id).await?.map(|route| route.grid_id);
        }
    }
    let (key, secret) = exec(&state, move |s| s.create_key(&p, spec)).await??;
    created(&KeyBody::new(&key, Some(secret)))
}

#[utoipa::path(tag = "admin", responses((status = 200, body = [KeyBody])))]
#[get("/admin/v1/api-keys")]
async fn list_keys(state: web::Data<AppState>, p: Principal) -> ApiResult<HttpResponse> {
    let keys = exec(&state, move |s| s.list_keys(&p)).await??;
    ok(&keys.iter().map(|k| KeyBody::new(k, None)).collect::<Vec<_>>())
}

#[utoipa::path(tag = "admin", responses((status = 204)))]
#[delete("/admin/v1/api-keys/{id}")]
async fn revoke_key(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    exec(&state, move |s| s.revoke_key(&p, &id)).await??;
    no_content()
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CompanyRequest {
    pub name: Option<String>,
    pub tier: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompanyBody {
    #[schema(value_type = i64)]
    pub id: CompanyId,
    pub name: String,
    pub tier: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub project_id: Option<ProjectId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_key: Option<String>,
}

fn tier_str(t: Tier) -> &'static str {
    match t {
        Tier::Free => "free",
        Tier::Team => "team",
        Tier::Enterprise => "enterprise",
    }
}

fn company_body(c: &Company) -> CompanyBody {
    CompanyBody {
        id: c.id,
        name: c.name.clone(),
        tier: tier_str(c.tier),
        project_id: None,
        database_id: None,
        owner_key: None,
    }
}

fn parse_tier(text: Option<&str>) -> ApiResult<Tier> {
    let text =
        text.ok_or_else(|| ApiError::bad_request("tier is required: free, team or enterprise."))?;
    Tier::parse(text).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Unknown tier \"{text}\"; expected free, team or enterprise."
        ))
    })
}

#[utoipa::path(tag = "admin", request_body = CompanyRequest, responses((status = 201, body = CompanyBody)))]
#[post("/admin/v1/companies")]
async fn create_company(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonObject<CompanyRequest>,
) -> ApiResult<HttpResponse> {
    let req = body.into_inner();
    let tier = parse_tier(req.tier.as_deref())?;
    let name = req.name.unwrap_or_default();
    let made: NewCompany = exec(&state, move |s| s.create_company(&p, &name, tier)).await??;
    let mut body = company_body(&made.company);
    body.project_id = Some(made.project_id);
    body.database_id = Some(made.database_id);
    body.owner_key = Some(made.owner_key);
    created(&body)
}

#[utoipa::path(tag = "admin", params(("id" = i64, Path, description = "the company's integer id")), request_body = CompanyRequest, responses((status = 200, body = CompanyBody)))]
#[patch("/admin/v1/companies/{id}")]
async fn update_company(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<CompanyRequest>,
) -> ApiResult<HttpResponse> {
    let tier = parse_tier(body.tier.as_deref())?;
    let id = integer_id(&id, "companyId")?;
    let company = exec(&state, move |s| s.set_company_tier(&p, id, tier)).await??;
    ok(&company_body(&company))
}

#[utoipa::path(tag = "admin", params(("id" = i64, Path, description = "the company's integer id")), responses((status = 204)))]
#[delete("/admin/v1/companies/{id}")]
async fn delete_company(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = integer_id(&id, "companyId")?;
    exec(&state, move |s| s.delete_company(&p, id)).await??;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(create_key)
        .service(list_keys)
        .service(revoke_key)
        .service(create_company)
        .service(update_company)
        .service(delete_company);
}
