//! Webhooks (issue 21): a view's changes POSTed to a URL as they become durable.
//!
//! Routes (a company key with the `manage` privilege on the hook's view; view keys never):
//! - `POST /v1/webhooks` `{"url", "viewId", "secret"?, "columnIds"?, "statuses"?}`: 201 with
//!   the hook (its `id`); it delivers the changes made after its creation.
//! - `GET /v1/webhooks[?viewId=]`: the company's hooks the key reaches, oldest first.
//! - `GET /v1/webhooks/<id>`, `DELETE /v1/webhooks/<id>` (204).
//! - `POST /v1/webhooks/<id>/resume`: a paused hook delivers again from where it stopped.
//! - `GET /v1/webhooks/<id>/deliveries`: its last `LOG_LEN` attempts, newest first.
//!
//! A hook is checked here before the catalogue records it: its URL (`target`), its view (404
//! viewIsNotFound, 403 without `manage`), its columns (each shown by the view, else 400
//! invalidColumnId; at most `MAX_COLUMN_IDS`), its statuses (dependency statuses: `unset`,
//! `outOfDate`, `upToDate`) and its secret (1 to `MAX_SECRET_LEN` bytes, never shown: a hook
//! answers `hasSecret`). The catalogue bounds the hooks of a company (`webhooks::
//! MAX_WEBHOOKS_PER_COMPANY`) and each delivery log (`LOG_LEN`). Deliveries are `delivery`'s.

pub mod delivery;
pub mod target;

use actix_web::{delete, get, post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::changes::current_view;
use super::{created, exec, no_content, ok, view_route};
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::{DeliveryAttempt, Webhook, WebhookState};
use crate::error::{ApiResult, Coded, ErrorCode};
use crate::grid::error::GridError;
use crate::grid::feed::position_now;
use crate::grid::value::DependencyStatus;
use crate::state::AppState;
use target::{parse_target, TargetError};

pub use crate::catalog::webhooks::LOG_LEN;

/// Longest secret accepted, in bytes.
pub const MAX_SECRET_LEN: usize = 256;
/// Most columns a hook may name.
pub const MAX_COLUMN_IDS: usize = crate::grid::columns::MAX_COLUMNS;

/// A hook request the API refuses before the catalogue sees it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HookRefused {
    #[error("The request body is invalid: {0}")]
    Body(String),
    #[error("{0} is required.")]
    Missing(&'static str),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("secret must be 1 to {MAX_SECRET_LEN} bytes long.")]
    SecretLength,
    #[error("columnIds, when given, lists 1 to {MAX_COLUMN_IDS} distinct columns of the view.")]
    ColumnCount,
    #[error("Column \"{0}\" is not a column of the view.")]
    UnknownColumn(String),
    #[error("\"{0}\" is not a dependency status (unset, outOfDate or upToDate).")]
    UnknownStatus(String),
    #[error("statuses, when given, lists 1 to 3 distinct dependency statuses.")]
    StatusCount,
}

impl Coded for HookRefused {
    fn code(&self) -> ErrorCode {
        match self {
            HookRefused::Target(target) => target.code(),
            HookRefused::UnknownColumn(_) => ErrorCode::InvalidColumnId,
            HookRefused::Body(_)
            | HookRefused::Missing(_)
            | HookRefused::SecretLength
            | HookRefused::ColumnCount
            | HookRefused::UnknownStatus(_)
            | HookRefused::StatusCount => ErrorCode::BadRequest,
        }
    }
}

/// `POST /v1/webhooks`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookRequest {
    /// Where to POST: `http` or `https`.
    url: Option<String>,
    view_id: Option<String>,
    /// The key of `X-Gridd-Signature` (HMAC-SHA256 of the body).
    secret: Option<String>,
    /// Only these columns of the view (default: all).
    column_ids: Option<Vec<String>>,
    /// Only records with a cell in one of these dependency statuses (default: all records).
    statuses: Option<Vec<String>>,
}

/// A request whose fields are each well-formed (the view and columns not yet looked up).
#[derive(Debug)]
struct CheckedRequest {
    url: String,
    view_id: String,
    secret: Option<String>,
    column_ids: Option<Vec<String>>,
    statuses: Option<Vec<String>>,
}

/// Whether a list has no item twice.
fn distinct(items: &[String]) -> bool {
    items.iter().enumerate().all(|(i, item)| !items[..i].contains(item))
}

impl HookRequest {
    fn parse(body: &[u8]) -> Result<HookRequest, HookRefused> {
        object_from_slice(body).map_err(|e| HookRefused::Body(e.to_string()))
    }

    fn check(self, allow_loopback: bool) -> Result<CheckedRequest, HookRefused> {
        let url = self.url.ok_or(HookRefused::Missing("url"))?;
        parse_target(&url, allow_loopback)?;
        let view_id =
            self.view_id.filter(|v| !v.is_empty()).ok_or(HookRefused::Missing("viewId"))?;
        if self.secret.as_ref().is_some_and(|s| s.is_empty() || s.len() > MAX_SECRET_LEN) {
            return Err(HookRefused::SecretLength);
        }
        if let Some(ids) = &self.column_ids {
            if ids.is_empty() || ids.len() > MAX_COLUMN_IDS || !distinct(ids) {
                return Err(HookRefused::ColumnCount);
            }
        }
        if let Some(statuses) = &self.statuses {
            if let Some(bad) = statuses.iter().find(|s| DependencyStatus::parse(s).is_none()) {
                return Err(HookRefused::UnknownStatus(
                    crate::io::csv_import::clip(bad, 64).into(),
                ));
            }
            if statuses.is_empty() || !distinct(statuses) {
                return Err(HookRefused::StatusCount);
            }
        }
        let (secret, column_ids, statuses) = (self.secret, self.column_ids, self.statuses);
        Ok(CheckedRequest { url, view_id, secret, column_ids, statuses })
    }
}

/// A hook as the API shows it (never its secret).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookBody {
    id: String,
    view_id: String,
    grid_id: String,
    branch_id: String,
    url: String,
    has_secret: bool,
    column_ids: Option<Vec<String>>,
    statuses: Option<Vec<String>>,
    /// `active` or `paused`.
    #[schema(value_type = String)]
    state: WebhookState,
    paused_reason: Option<String>,
    paused_time: Option<String>,
    /// The position (branch clock) of the last commit delivered.
    position: u32,
    /// Since when every attempt failed, while they do.
    failing_since: Option<String>,
    created_time: String,
}

fn hook_body(hook: Webhook) -> HookBody {
    let failing_since = hook.failing_since_ms.and_then(chrono::DateTime::from_timestamp_millis);
    HookBody {
        has_secret: hook.secret.is_some(),
        failing_since: failing_since.map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string()),
        id: hook.id,
        view_id: hook.view_id,
        grid_id: hook.grid_id,
        branch_id: hook.branch_id,
        url: hook.url,
        column_ids: hook.column_ids,
        statuses: hook.statuses,
        state: hook.state,
        paused_reason: hook.paused_reason,
        paused_time: hook.paused_time,
        position: hook.position,
        created_time: hook.created_time,
    }
}

/// One attempt of the delivery log as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptBody {
    delivery_id: String,
    /// `records` or `schema`.
    event: String,
    position: u32,
    attempt: u32,
    time: String,
    /// The receiver's status, when it answered.
    status: Option<u16>,
    /// Why there was no answer.
    error: Option<String>,
    duration_ms: u64,
    succeeded: bool,
}

fn attempt_body(attempt: DeliveryAttempt) -> AttemptBody {
    AttemptBody {
        succeeded: attempt.succeeded(),
        delivery_id: attempt.delivery_id,
        event: attempt.event,
        position: attempt.position,
        attempt: attempt.attempt,
        time: attempt.time,
        status: attempt.status,
        error: attempt.error,
        duration_ms: attempt.duration_ms,
    }
}

#[utoipa::path(tag = "webhooks", request_body = HookRequest, responses((status = 201, body = HookBody)))]
#[post("/v1/webhooks")]
async fn create_webhook(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let request = HookRequest::parse(&body)?.check(state.webhooks.settings().allow_loopback)?;
    let route = view_route(&state, &p, &request.view_id, Privilege::Manage)?;
    let view = current_view(&route).await?;
    let schema = &view.state.schema;
    let def = schema
        .view(&request.view_id)
        .ok_or_else(|| GridError::ViewNotFound(request.view_id.clone()))?;
    for id in request.column_ids.iter().flatten() {
        if schema.view_column(def, id).is_none() {
            let id = crate::io::csv_import::clip(id, 100).to_owned();
            return Err(HookRefused::UnknownColumn(id).into());
        }
    }
    let hook = Webhook {
        id: crate::ids::generate(),
        company_id: route.company_id,
        project_id: route.project_id,
        database_id: route.database_id.clone(),
        grid_id: route.grid_id.clone(),
        branch_id: route.branch_id.clone(),
        view_id: request.view_id,
        url: request.url,
        secret: request.secret,
        column_ids: request.column_ids,
        statuses: request.statuses,
        created_time: crate::catalog::model::now_timestamp(),
        state: WebhookState::Active,
        paused_reason: None,
        paused_time: None,
        position: position_now(*route.reads.durable_clock().borrow()),
        failing_since_ms: None,
    };
    let hook = exec(&state, move |s| s.create_webhook(hook)).await??;
    delivery::start(&state, hook.clone());
    created(&hook_body(hook))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct HookQuery {
    /// Only the hooks of this view.
    view_id: Option<String>,
}

#[utoipa::path(tag = "webhooks", params(HookQuery), responses((status = 200, body = [HookBody])))]
#[get("/v1/webhooks")]
async fn list_webhooks(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<HookQuery>,
) -> ApiResult<HttpResponse> {
    let view_id = query.into_inner().view_id;
    let hooks = exec(&state, move |s| s.list_webhooks(&p, view_id.as_deref())).await??;
    ok(&hooks.into_iter().map(hook_body).collect::<Vec<_>>())
}

#[utoipa::path(tag = "webhooks", responses((status = 200, body = HookBody)))]
#[get("/v1/webhooks/{id}")]
async fn get_webhook(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let hook = exec(&state, move |s| s.webhook(&p, &id)).await??;
    ok(&hook_body(hook))
}

#[utoipa::path(tag = "webhooks", responses((status = 204)))]
#[delete("/v1/webhooks/{id}")]
async fn delete_webhook(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let deleted = id.clone();
    exec(&state, move |s| s.delete_webhook(&p, &deleted)).await??;
    state.webhooks.stop(&id);
    no_content()
}

#[utoipa::path(tag = "webhooks", responses((status = 200, body = HookBody)))]
#[post("/v1/webhooks/{id}/resume")]
async fn resume_webhook(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let hook = exec(&state, move |s| s.resume_webhook(&p, &id)).await??;
    delivery::start(&state, hook.clone());
    ok(&hook_body(hook))
}

#[utoipa::path(tag = "webhooks", responses((status = 200, body = [AttemptBody])))]
#[get("/v1/webhooks/{id}/deliveries")]
async fn list_deliveries(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let log = exec(&state, move |s| s.delivery_log(&p, &id)).await??;
    ok(&log.into_iter().map(attempt_body).collect::<Vec<_>>())
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(create_webhook)
        .service(list_webhooks)
        .service(get_webhook)
        .service(delete_webhook)
        .service(resume_webhook)
        .service(list_deliveries);
}
