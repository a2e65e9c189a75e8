//! `/v1/tasks/<id>`: the state of a long-running operation.

use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

use super::{exec, ok};
use crate::auth::Principal;
use crate::catalog::model::{Task, TaskError, TaskStatus};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;

/// A task as answered: id, status, type, progress, times and, when it failed, the error.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskBody<'a> {
    id: &'a str,
    status: TaskStatus,
    #[serde(rename = "type")]
    kind: &'a str,
    progress: u8,
    created_time: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    finished_time: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a TaskError>,
}

/// Refuses a task whose result is not there to serve: 409 `taskIsRunning` while it runs
/// (`doing` says what it is doing), 404 `fileIsNotFound` naming why when it failed.
pub fn require_successful(task: &Task, doing: &str) -> ApiResult<()> {
    match task.status {
        TaskStatus::Running => Err(ApiError::new(
            ErrorCode::TaskIsRunning,
            format!("Task \"{}\" is still {doing}.", task.id),
        )),
        TaskStatus::Failed => {
            let why = task.error.as_ref().map(|e| e.message.as_str()).unwrap_or_default();
            Err(ApiError::new(
                ErrorCode::FileIsNotFound,
                format!("Task \"{}\" failed: {why}", task.id),
            ))
        }
        TaskStatus::Successful => Ok(()),
    }
}

pub fn task_body(task: &Task) -> TaskBody<'_> {
    TaskBody {
        id: &task.id,
        status: task.status,
        kind: &task.kind,
        progress: task.progress,
        created_time: &task.created_time,
        finished_time: task.finished_time.as_deref(),
        error: task.error.as_ref(),
    }
}

#[utoipa::path(tag = "tasks", responses((status = 200, description = "the task: id, status, type, progress, times, error")))]
#[get("/v1/tasks/{id}")]
async fn get_task(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let task = exec(&state, move |s| s.task(&p, &id)).await??;
    ok(&task_body(&task))
}

/// Ends a task (successful, or failed with `error`) and clears the status its work showed on
/// `branches`; a failure to record it is logged (the task's work is done either way).
pub async fn end_task(
    state: &AppState,
    task_id: String,
    branches: Vec<String>,
    error: Option<TaskError>,
) {
    let finished = exec(state, move |s| {
        let ids: Vec<&str> = branches.iter().map(String::as_str).collect();
        s.set_status(&ids, crate::catalog::model::GridStatus::Active);
        s.finish_task(&task_id, error)
    })
    .await;
    if let Err(err) = finished.and_then(|r| r) {
        tracing::error!(error = %err.message, "could not record the end of a task");
    }
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_task);
}
