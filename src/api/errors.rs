//! Every error leaves the server as the JSON body of decisions.md section 3: this middleware
//! renders `ApiError`s with the request path, maps actix's own errors (bad JSON, wrong content
//! type, body too large, bad query) to codes, and turns a panic into a logged 500.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::error::{JsonPayloadError, PathError as BadPath, PayloadError, QueryPayloadError};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use futures_util::FutureExt;

use super::head::AnsweringHead;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;

/// Middleware body (use with `wrap_fn`).
pub fn render_errors<S, B>(
    req: ServiceRequest,
    srv: &S,
) -> impl Future<Output = Result<ServiceResponse<BoxBody>, actix_web::Error>>
where
    S: actix_web::dev::Service<
        ServiceRequest,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody + 'static,
{
    let path = req.path().to_owned();
    let fut = srv.call(req);
    async move {
        match AssertUnwindSafe(fut).catch_unwind().await {
            Ok(Ok(res)) => Ok(rewrite(res.map_into_boxed_body(), &path)),
            Ok(Err(err)) => Err(PathError(to_api_error(&err), path).into()),
            Err(_) => {
                tracing::error!(%path, "request handler panicked");
                let api = ApiError::internal("An unexpected error occurred; it has been logged.");
                Err(PathError(api, path).into())
            }
        }
    }
}

/// An error that already knows the request path, for failures that escape the handler.
#[derive(Debug)]
struct PathError(ApiError, String);

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl actix_web::ResponseError for PathError {
    fn status_code(&self) -> StatusCode {
        self.0.status()
    }

    fn error_response(&self) -> HttpResponse {
        error_response(&self.0, &self.1)
    }
}

fn rewrite(res: ServiceResponse<BoxBody>, path: &str) -> ServiceResponse<BoxBody> {
    let Some(err) = res.response().error() else {
        return res;
    };
    let api = to_api_error(err);
    let mut response = error_response(&api, path);
    if let Some(retry) = res.response().headers().get(actix_web::http::header::RETRY_AFTER) {
        response.headers_mut().insert(actix_web::http::header::RETRY_AFTER, retry.clone());
    }
    res.into_response(response)
}

/// The full error response for `path`.
pub fn error_response(err: &ApiError, path: &str) -> HttpResponse {
    if err.code == ErrorCode::InternalServerError {
        tracing::error!(%path, message = %err.message, "internal server error");
    }
    let mut response = super::json_response(err.status(), &err.body(path));
    if err.code == ErrorCode::Unauthorized {
        // RFC 9110: a 401 names the scheme that authenticates (`Authorization: ApiKey <key>`).
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("ApiKey"));
    }
    if let Some(seconds) = err.retry_after {
        response.headers_mut().insert(
            actix_web::http::header::RETRY_AFTER,
            actix_web::http::header::HeaderValue::from(seconds),
        );
    }
    response
}

fn to_api_error(err: &actix_web::Error) -> ApiError {
    if let Some(api) = err.as_error::<ApiError>() {
        return api.clone();
    }
    if let Some(json) = err.as_error::<JsonPayloadError>() {
        return json_error(json);
    }
    if let Some(query) = err.as_error::<QueryPayloadError>() {
        return ApiError::bad_request(format!("Invalid query parameters: {query}"));
    }
    if let Some(path) = err.as_error::<BadPath>() {
        return ApiError::bad_request(format!("Invalid path: {path}"));
    }
    let status = err.as_response_error().status_code();
    let code = match status {
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::AccessDenied,
        StatusCode::TOO_MANY_REQUESTS => ErrorCode::TooManyRequests,
        s if s.is_client_error() => ErrorCode::BadRequest,
        _ => ErrorCode::InternalServerError,
    };
    ApiError::new(code, err.to_string())
}

fn json_error(err: &JsonPayloadError) -> ApiError {
    match err {
        JsonPayloadError::ContentType => ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "The request body must be JSON with Content-Type: application/json.",
        ),
        JsonPayloadError::Overflow { limit }
        | JsonPayloadError::OverflowKnownLength { limit, .. } => ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("The request body is larger than {limit} bytes."),
        ),
        JsonPayloadError::Deserialize(e) if e.is_eof() && e.line() == 1 && e.column() == 0 => {
            ApiError::new(ErrorCode::RequestBodyMissing, "The request body is missing.")
        }
        JsonPayloadError::Deserialize(e) => {
            ApiError::bad_request(format!("The request body is invalid: {e}"))
        }
        JsonPayloadError::Payload(PayloadError::Io(e))
            if e.kind() == std::io::ErrorKind::TimedOut =>
        {
            ApiError::new(ErrorCode::RequestTimeout, "The request body was not received in time.")
        }
        other => ApiError::bad_request(format!("The request body could not be read: {other}")),
    }
}

/// `JsonConfig` error handler: keeps the actix error typed so the middleware maps it.
pub fn json_config(limit: usize) -> web::JsonConfig {
    web::JsonConfig::default().limit(limit).error_handler(json_payload_error)
}

/// The error a JSON body extractor answers with: a body missing (no content type and no
/// length) or else what `json_error` makes of it.
pub fn json_payload_error(err: JsonPayloadError, req: &HttpRequest) -> actix_web::Error {
    let empty = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v == "0");
    let api = match &err {
        JsonPayloadError::ContentType if empty => {
            ApiError::new(ErrorCode::RequestBodyMissing, "The request body is missing.")
        }
        other => json_error(other),
    };
    api.into()
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _| {
        ApiError::bad_request(format!("Invalid query parameters: {err}")).into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default()
        .error_handler(|err, _| ApiError::bad_request(format!("Invalid path: {err}")).into())
}

/// The default service: 405 for a known path with another method, with the methods it takes
/// there in `Allow` (RFC 9110; HEAD wherever GET); 404 otherwise.
pub async fn fallback(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let path = req.path();
    let mut allowed: Vec<&str> = Vec::new();
    for served in state.path_patterns.iter().filter(|p| p.pattern.is_match(path)) {
        for &method in &served.methods {
            if !allowed.contains(&method) {
                allowed.push(method);
            }
        }
    }
    if allowed.is_empty() {
        return Err(ApiError::new(ErrorCode::NotFound, format!("No route matches {path}.")));
    }
    // A HEAD request is routed as GET (`head::answer_head`): name the method asked.
    let method = match req.extensions().get::<AnsweringHead>() {
        Some(_) => "HEAD",
        None => req.method().as_str(),
    };
    let refused = ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("Method {method} is not allowed on {path}."),
    );
    let mut response = error_response(&refused, path);
    if let Ok(allow) = HeaderValue::from_str(&allowed.join(", ")) {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    Ok(response)
}
