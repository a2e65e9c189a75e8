//! The `Principal` extractor: the key behind a request's `Authorization: ApiKey <key>` header,
//! after the rate limits (a request without a valid key is limited by the client's address).

use std::future::{ready, Ready};
use std::sync::Arc;

use actix_web::{dev::Payload, web, FromRequest, HttpRequest};

use crate::auth::{ApiKey, Principal};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;

/// The secret of an `ApiKey <key>` header value; the scheme is case-insensitive (RFC 9110).
fn api_key_secret(header: &str) -> Option<&str> {
    let (scheme, secret) = header.trim_start().split_once(' ')?;
    let secret = secret.trim();
    (scheme.eq_ignore_ascii_case("ApiKey") && !secret.is_empty()).then_some(secret)
}

fn authenticate(req: &HttpRequest) -> ApiResult<Principal> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::internal("application state is missing"))?;
    let key = match find_key(state, req) {
        Ok(key) => key,
        Err(unauthorized) => {
            // No valid key: the client's address pays for the attempt.
            state.limiter.check_client(req)?;
            return Err(unauthorized);
        }
    };
    state.limiter.check(&key.id)?;
    let tier = state.keys.tier(key.company_id);
    Ok(Principal { key, tier })
}

/// The key the request's `Authorization` header names (401 unauthorized otherwise).
fn find_key(state: &AppState, req: &HttpRequest) -> ApiResult<Arc<ApiKey>> {
    let header = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "Missing Authorization header."))?;
    let secret = api_key_secret(header).ok_or_else(|| {
        ApiError::new(ErrorCode::Unauthorized, "The Authorization header must be 'ApiKey <key>'.")
    })?;
    state
        .keys
        .find(secret)
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "The API key is invalid."))
}

impl FromRequest for Principal {
    type Error = ApiError;
    type Future = Ready<Result<Principal, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(authenticate(req))
    }
}
