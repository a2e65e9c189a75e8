//! `/healthz` (no key: 200 once the server is ready) and `/v1/openapi.json`.

use actix_web::{get, web, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::state::AppState;

#[utoipa::path(tag = "server", responses((status = 200, description = "the server is ready")))]
#[get("/healthz")]
async fn healthz(state: web::Data<AppState>) -> HttpResponse {
    if state.supervisor.connected() {
        super::json_response(actix_web::http::StatusCode::OK, &serde_json::json!({"status": "ok"}))
    } else {
        super::json_response(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({"status": "unavailable"}),
        )
    }
}

#[utoipa::path(tag = "server", responses((status = 200, description = "this server's OpenAPI 3 description")))]
#[get("/v1/openapi.json")]
async fn openapi(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(state.openapi_json.to_string())
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(healthz).service(openapi);
}
