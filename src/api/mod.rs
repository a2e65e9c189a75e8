//! The HTTP API: one module per resource, each ending in `configure`, chained here. Handlers
//! are thin: authenticate, look up the route, send a message, render the reply.

pub mod admin;
mod authenticate;
pub mod body_deadline;
pub mod branches;
pub mod cdn;
pub mod cdn_access;
pub mod cdn_replica;
pub mod cdn_serve;
pub mod changes;
pub mod columns;
pub mod compression;
pub mod conditional;
pub mod console;
pub mod current_key;
pub mod databases;
pub mod dependencies;
pub mod diffcheck;
pub mod duplicate;
pub mod errors;
pub mod feed_render;
pub mod files;
pub mod files_zip;
pub mod forward;
pub mod glossaries;
pub mod grid_settings;
pub mod grids;
pub mod head;
pub mod health;
pub mod history_export;
pub mod import;
pub mod listing;
pub mod merge_request;
pub mod metrics;
pub mod multipart;
pub mod paths;
pub mod projects;
pub mod record;
pub mod record_history;
pub mod records;
pub mod references;
pub mod remote;
pub mod request_span;
pub mod request_timing;
pub mod restore;
pub mod shares;
pub mod sized_json;
pub mod tasks;
pub mod transmems;
pub mod view_export;
pub mod views;
pub mod webhooks;

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, HttpResponseBuilder};
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::auth::{Principal, Privilege};
use crate::catalog::{BranchRoute, Exec, Supervisor};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;

/// Registers every route of the API.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    // First: the router tries routes in this order, one regex each for a route with a
    // parameter, and record reads and writes are most of the traffic. No other route's pattern
    // matches theirs.
    records::configure(cfg);
    changes::configure(cfg);
    record::configure(cfg);
    record_history::configure(cfg);
    health::configure(cfg);
    metrics::configure(cfg);
    projects::configure(cfg);
    databases::configure(cfg);
    duplicate::configure(cfg);
    grids::configure(cfg);
    grid_settings::configure(cfg);
    // Before branches: `/v1/branches/diffcheck` is not a branch id.
    diffcheck::configure(cfg);
    branches::configure(cfg);
    views::configure(cfg);
    paths::configure(cfg);
    columns::configure(cfg);
    dependencies::configure(cfg);
    files::configure(cfg);
    files_zip::configure(cfg);
    shares::configure(cfg);
    tasks::configure(cfg);
    history_export::configure(cfg);
    import::configure(cfg);
    restore::configure(cfg);
    view_export::configure(cfg);
    webhooks::configure(cfg);
    glossaries::configure(cfg);
    cdn::configure(cfg);
    cdn_serve::configure(cfg);
    transmems::configure(cfg);
    current_key::configure(cfg);
    admin::configure(cfg);
    console::configure(cfg);
}

/// A JSON response with exactly `Content-Type: application/json`.
pub fn json_response<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> HttpResponse {
    json_response_sized(status, body, 128)
}

/// [`json_response`] into a buffer of `capacity` bytes to start with: a close guess of a large
/// body's size saves the copies of growing the buffer.
pub fn json_response_sized<T: Serialize + ?Sized>(
    status: StatusCode,
    body: &T,
    capacity: usize,
) -> HttpResponse {
    let mut bytes = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut bytes, body) {
        Ok(()) => HttpResponseBuilder::new(status).content_type("application/json").body(bytes),
        Err(err) => {
            tracing::error!(error = %err, "response serialization failed");
            HttpResponseBuilder::new(StatusCode::INTERNAL_SERVER_ERROR)
                .content_type("application/json")
                .body(r#"{"status":500,"code":"internalServerError","message":"response serialization failed"}"#)
        }
    }
}

pub fn ok<T: Serialize + ?Sized>(body: &T) -> ApiResult<HttpResponse> {
    Ok(json_response(StatusCode::OK, body))
}

pub fn created<T: Serialize + ?Sized>(body: &T) -> ApiResult<HttpResponse> {
    Ok(json_response(StatusCode::CREATED, body))
}

pub fn no_content() -> ApiResult<HttpResponse> {
    Ok(HttpResponse::NoContent().finish())
}

/// Runs `f` on the supervisor with exclusive access to the catalogue.
pub async fn exec<R: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&mut Supervisor) -> R + Send + 'static,
) -> ApiResult<R> {
    Ok(state.supervisor.send(Exec::new(f)).await?)
}

/// Waits `every` for a periodic task's next round; false once the server is stopping.
pub(crate) async fn tick_until_stopping(
    stopping: &mut tokio::sync::watch::Receiver<bool>,
    every: std::time::Duration,
) -> bool {
    tokio::select! {
        () = tokio::time::sleep(every) => true,
        _ = stopping.wait_for(|s| *s) => false,
    }
}

/// The branch behind a view, checked for this principal: 404 viewIsNotFound when unknown or
/// another company's, 403 when the key may not act on it with `needed`.
pub fn view_route(
    state: &AppState,
    p: &Principal,
    view_id: &str,
    needed: Privilege,
) -> ApiResult<Arc<BranchRoute>> {
    let not_found = || ApiError::not_found(ErrorCode::ViewIsNotFound, "View", view_id);
    let route = state.routes.view(view_id).ok_or_else(not_found)?;
    p.authorize(&route.scope(Some(view_id)), needed, not_found)?;
    Ok(route)
}

/// The actor of a branch (a grid's id names its master branch), checked for this principal.
pub fn branch_route(
    state: &AppState,
    p: &Principal,
    branch_id: &str,
    needed: Privilege,
    not_found: impl Fn() -> ApiError,
) -> ApiResult<Arc<BranchRoute>> {
    let route = state.routes.branch(branch_id).ok_or_else(&not_found)?;
    p.authorize(&route.scope(None), needed, &not_found)?;
    Ok(route)
}

/// An upload the data directory could not take (disk full, I/O error): 503, since the request
/// may succeed later, never a 500.
pub fn storage_error(what: &str, err: std::io::Error) -> ApiError {
    tracing::error!(error = %err, "{what} failed");
    ApiError::new(ErrorCode::ServiceUnavailable, format!("{what} failed: {err}"))
}

/// The query string's pairs in order (repeated keys kept), or 400.
pub fn query_pairs(req: &actix_web::HttpRequest) -> ApiResult<Vec<(String, String)>> {
    serde_urlencoded::from_str(req.query_string())
        .map_err(|e| ApiError::bad_request(format!("The query string is invalid: {e}")))
}

/// Percent-encodes text for a URL path segment or an RFC 5987 `filename*` (unreserved bytes
/// kept).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// A required query parameter, or 400 requestParameterMissing naming it.
pub fn required<'a>(value: &'a Option<String>, name: &str) -> ApiResult<&'a str> {
    value.as_deref().filter(|v| !v.is_empty()).ok_or_else(|| ApiError::missing_parameter(name))
}
