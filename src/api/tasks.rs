//! `/v1/tasks/<id>`: the state of a long-running operation.

use actix_web::{get, web, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use super::{exec, ok};
use crate::auth::Principal;
use crate::error::ApiResult;
use crate::state::AppState;

#[utoipa::path(tag = "tasks", responses((status = 200, description = "the task: id, status, type, progress, times, error")))]
#[get("/v1/tasks/{id}")]
async fn get_task(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let task = exec(&state, move |s| s.task(&p, &id)).await??;
    ok(&task)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_task);
}
