//! Translation memories (issue 22), as the hosted OpenAPI's `transmem` tag has them, plus
//! gridd's fuzzy lookup:
//! - `GET /v1/transmems[?projectId=]`: the company's memories (linked to the project); 200.
//!   As the hosted service, a company with none gets a default one first (when the key may
//!   create one).
//! - `POST /v1/transmems` (`CreateTransMem`): 201 with the `TransMem`.
//! - `POST /v1/transmems/upload` (multipart `file`, a TMX): a new memory named after the file,
//!   holding its segments; 201 (`files`).
//! - `GET`, `PUT` (`UpdateTransMem`), `DELETE /v1/transmems/<tmId>`: 200 with the `TransMem`
//!   (the deleted one for `DELETE`, as the OpenAPI says).
//! - `PUT /v1/transmems/<tmId>/cleanup`: erases the memory's segments; 204.
//! - `GET /v1/transmems/<tmId>/export?format=tmx|csv|xlsx&sourceLang=&targetLangs=`: a file
//!   (`files`).
//! - `POST /v1/transmems/<tmId>/import` (multipart `file`): adds or updates segments; 200
//!   (`files`).
//! - `POST /v1/transmems/<tmId>/segments` (gridd's extension): a JSON batch of segments added
//!   or updated, origin `api`; 200 `{"added", "updated"}` (`segments`).
//! - `POST /v1/transmems/<tmId>/lookup` `{"text", "sourceLanguage", "targetLanguage",
//!   "minScore"?, "limit"?}`: the best matches `[{"source", "target", "score"}]` (gridd's
//!   extension; `tm::index` has the algorithm, `tm::text` the score).
//!
//! Company keys only: `read` to list, get, export and look up, `manage` for the rest. Linked
//! grids feed their memories (`feed`); record pages show matches with `tmMatches` (`matches`).

pub mod feed;
pub mod files;
pub mod matches;
pub mod replica;
pub mod segments;

use actix_web::{delete, get, post, put, web, HttpMessage, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::head::AnsweringHead;
use super::{created, exec, no_content, ok};
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::auth::{Principal, Privilege};
use crate::catalog::transmems::{TransMem, TransMemFields};
use crate::error::{ApiError, ApiResult, Coded, ErrorCode};
use crate::ids::ProjectId;
use crate::state::AppState;
use crate::tm::text::valid_language;

pub use feed::TransMems;

/// Runs `f` on the blocking pool (a memory's store and index calls block).
pub(crate) async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> ApiResult<R> {
    web::block(f).await.map_err(|e| ApiError::internal(format!("a blocking task stopped: {e}")))
}

/// Memory `id` as the key may act on it with `needed` (404, 403), then `f` on its segments,
/// on the blocking pool (the store's calls block).
pub(crate) async fn on_segments<R: Send + 'static>(
    state: &AppState,
    p: Principal,
    id: String,
    needed: Privilege,
    f: impl FnOnce(&crate::tm::store::Memory) -> ApiResult<R> + Send + 'static,
) -> ApiResult<R> {
    let memory = exec(state, move |s| s.transmem(&p, &id, needed)).await??;
    state.transmems.caught_up(&memory.id).await?;
    let store = state.transmems.segments.clone();
    blocking(move || f(&*store.memory(&memory.id)?)).await?
}

/// Longest text a lookup takes, in bytes.
pub const MAX_LOOKUP_TEXT: usize = 10_000;
/// Most matches a lookup answers.
pub const MAX_LIMIT: usize = 50;
/// Matches answered when `limit` is absent.
pub const DEFAULT_LIMIT: usize = 5;
/// Lowest score answered when `minScore` is absent.
pub const DEFAULT_MIN_SCORE: u8 = 70;

/// A request the API refuses before the catalogue or the store sees it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TmRefused {
    #[error("The request body is invalid: {0}")]
    Body(String),
    #[error("The request body is missing.")]
    NoBody,
    #[error("{0} is required.")]
    Missing(&'static str),
    #[error("\"{0}\" is not a language code (2 to 35 letters, digits, - or _).")]
    Language(String),
    #[error("text has at most {MAX_LOOKUP_TEXT} bytes.")]
    TextTooLong,
    #[error("minScore is an integer from 1 to 100.")]
    MinScore,
    #[error("limit is an integer from 1 to {MAX_LIMIT}.")]
    Limit,
    #[error("format \"{0}\" is invalid; expected tmx, csv or xlsx.")]
    Format(String),
}

impl Coded for TmRefused {
    fn code(&self) -> ErrorCode {
        match self {
            TmRefused::Missing(_) => ErrorCode::RequestParameterMissing,
            TmRefused::NoBody => ErrorCode::RequestBodyMissing,
            TmRefused::Body(_)
            | TmRefused::Language(_)
            | TmRefused::TextTooLong
            | TmRefused::MinScore
            | TmRefused::Limit
            | TmRefused::Format(_) => ErrorCode::BadRequest,
        }
    }
}

/// `CreateTransMem` and `UpdateTransMem` (every field optional here; a create needs `name`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransMemRequest {
    name: Option<String>,
    description: Option<String>,
    project_ids: Option<Vec<ProjectId>>,
    fuzzy_match: Option<bool>,
    is_disabled: Option<bool>,
    is_paused_consuming: Option<bool>,
    context_lookup: Option<bool>,
    /// `upToDate`, `outOfDate` or `unset`.
    populate_translation_status: Option<String>,
    allow_alternative: Option<bool>,
    allow_alternative_has_same_record_id: Option<bool>,
}

impl TransMemRequest {
    fn parse(body: &[u8]) -> Result<TransMemFields, TmRefused> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(TmRefused::NoBody);
        }
        let r: TransMemRequest =
            object_from_slice(body).map_err(|e| TmRefused::Body(e.to_string()))?;
        Ok(TransMemFields {
            name: r.name,
            description: r.description,
            project_ids: r.project_ids,
            fuzzy_match: r.fuzzy_match,
            is_disabled: r.is_disabled,
            is_paused_consuming: r.is_paused_consuming,
            context_lookup: r.context_lookup,
            populate_translation_status: r.populate_translation_status,
            allow_alternative: r.allow_alternative,
            allow_alternative_has_same_record_id: r.allow_alternative_has_same_record_id,
        })
    }
}

/// The OpenAPI's `TransMem`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransMemBody {
    id: String,
    project_ids: Vec<ProjectId>,
    is_disabled: bool,
    is_paused_consuming: bool,
    /// Left out when unset: the OpenAPI's enum is not nullable, and its SDKs refuse `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    populate_translation_status: Option<String>,
    context_lookup: bool,
    name: String,
    description: String,
    fuzzy_match: bool,
    allow_alternative: bool,
    allow_alternative_has_same_record_id: bool,
}

pub(crate) fn transmem_body(m: TransMem) -> TransMemBody {
    TransMemBody {
        id: m.id,
        project_ids: m.project_ids,
        is_disabled: m.is_disabled,
        is_paused_consuming: m.is_paused_consuming,
        populate_translation_status: m.populate_translation_status,
        context_lookup: m.context_lookup,
        name: m.name,
        description: m.description,
        fuzzy_match: m.fuzzy_match,
        allow_alternative: m.allow_alternative,
        allow_alternative_has_same_record_id: m.allow_alternative_has_same_record_id,
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    /// Only the memories linked to this project.
    project_id: Option<ProjectId>,
}

#[utoipa::path(tag = "transmem", params(ListQuery), responses((status = 200, body = [TransMemBody])))]
#[get("/v1/transmems")]
async fn list_transmems(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<ListQuery>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let project = query.into_inner().project_id;
    // HEAD is safe (RFC 9110 section 9.2.1): it answers the memories there are and makes none.
    let (list, made) = if req.extensions().contains::<AnsweringHead>() {
        (exec(&state, move |s| s.list_transmems(&p, project)).await??, None)
    } else {
        exec(&state, move |s| s.list_transmems_or_default(&p, project)).await??
    };
    if let Some(made) = made {
        feed::start(&state, &made.id);
    }
    ok(&list.into_iter().map(transmem_body).collect::<Vec<_>>())
}

#[utoipa::path(tag = "transmem", request_body = TransMemRequest, responses((status = 201, body = TransMemBody)))]
#[post("/v1/transmems")]
async fn create_transmem(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let fields = TransMemRequest::parse(&body)?;
    if fields.name.is_none() {
        return Err(TmRefused::Missing("name").into());
    }
    let memory = exec(&state, move |s| s.create_transmem(&p, fields)).await??;
    feed::start(&state, &memory.id);
    created(&transmem_body(memory))
}

#[utoipa::path(tag = "transmem", responses((status = 200, body = TransMemBody)))]
#[get("/v1/transmems/{tmId}")]
async fn get_transmem(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let memory = exec(&state, move |s| s.transmem(&p, &id, Privilege::Read)).await??;
    ok(&transmem_body(memory))
}

#[utoipa::path(tag = "transmem", request_body = TransMemRequest, responses((status = 200, body = TransMemBody)))]
#[put("/v1/transmems/{tmId}")]
async fn update_transmem(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let fields = TransMemRequest::parse(&body)?;
    let memory = exec(&state, move |s| s.update_transmem(&p, &id, fields)).await??;
    ok(&transmem_body(memory))
}

#[utoipa::path(tag = "transmem", responses((status = 200, body = TransMemBody)))]
#[delete("/v1/transmems/{tmId}")]
async fn delete_transmem(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let deleted = id.clone();
    let memory = exec(&state, move |s| s.delete_transmem(&p, &deleted)).await??;
    state.transmems.stop(&id);
    // The entry is gone: a failure here leaves trees the next start sweeps.
    if let Err(err) = state.transmems.change(&id, replica::TmChange::Drop).await {
        tracing::warn!(error = %err.message, "dropping a deleted memory's segments failed");
    }
    state.transmems.purge(&id).await;
    ok(&transmem_body(memory))
}

#[utoipa::path(tag = "transmem", responses((status = 204)))]
#[put("/v1/transmems/{tmId}/cleanup")]
async fn cleanup_transmem(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let memory = exec(&state, move |s| s.transmem(&p, &id, Privilege::Manage)).await??;
    state.transmems.change(&memory.id, replica::TmChange::Clear).await?;
    no_content()
}

/// `POST /v1/transmems/<tmId>/lookup`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LookupRequest {
    text: Option<String>,
    source_language: Option<String>,
    target_language: Option<String>,
    /// 1 to 100; default 70.
    min_score: Option<i64>,
    /// 1 to 50; default 5.
    limit: Option<i64>,
}

/// A checked lookup.
#[derive(Debug, Clone)]
pub struct Lookup {
    pub text: String,
    pub source_language: String,
    pub target_language: String,
    pub min_score: u8,
    pub limit: usize,
}

pub(crate) fn language(value: Option<String>, name: &'static str) -> Result<String, TmRefused> {
    let code = value.filter(|v| !v.is_empty()).ok_or(TmRefused::Missing(name))?;
    if !valid_language(&code) {
        return Err(TmRefused::Language(crate::io::csv_import::clip(&code, 64).into()));
    }
    Ok(code)
}

impl LookupRequest {
    fn check(body: &[u8]) -> Result<Lookup, TmRefused> {
        let r: LookupRequest =
            object_from_slice(body).map_err(|e| TmRefused::Body(e.to_string()))?;
        let text = r.text.ok_or(TmRefused::Missing("text"))?;
        if text.len() > MAX_LOOKUP_TEXT {
            return Err(TmRefused::TextTooLong);
        }
        let min_score = match r.min_score {
            None => DEFAULT_MIN_SCORE,
            Some(s) => {
                u8::try_from(s).ok().filter(|s| (1..=100).contains(s)).ok_or(TmRefused::MinScore)?
            }
        };
        let limit = match r.limit {
            None => DEFAULT_LIMIT,
            Some(l) => usize::try_from(l)
                .ok()
                .filter(|l| (1..=MAX_LIMIT).contains(l))
                .ok_or(TmRefused::Limit)?,
        };
        Ok(Lookup {
            text,
            source_language: language(r.source_language, "sourceLanguage")?,
            target_language: language(r.target_language, "targetLanguage")?,
            min_score,
            limit,
        })
    }
}

/// One match as a lookup answers it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MatchBody {
    pub source: String,
    pub target: String,
    /// 100 for the same normalized text, else the token-level fuzzy score.
    pub score: u8,
}

#[utoipa::path(tag = "transmem", request_body = LookupRequest, responses((status = 200, body = [MatchBody])))]
#[post("/v1/transmems/{tmId}/lookup")]
async fn lookup(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let r = LookupRequest::check(&body)?;
    let found = on_segments(&state, p, id.into_inner(), Privilege::Read, move |memory| {
        Ok(memory.lookup(&r.text, &r.source_language, &r.target_language, r.min_score, r.limit))
    })
    .await?;
    let body: Vec<MatchBody> = found
        .into_iter()
        .map(|m| MatchBody { source: m.source, target: m.target, score: m.score })
        .collect();
    ok(&body)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    // `upload` before `{tmId}`: it is not a memory's id.
    cfg.service(files::upload_transmem)
        .service(list_transmems)
        .service(create_transmem)
        .service(get_transmem)
        .service(update_transmem)
        .service(delete_transmem)
        .service(cleanup_transmem)
        .service(files::export_transmem)
        .service(files::import_transmem)
        .service(segments::write_segments)
        .service(lookup);
}
