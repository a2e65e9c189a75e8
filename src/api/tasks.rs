//! Tasks: long-running operations (merge, import, restore, history export, diffcheck). This
//! module is their one home: [`start_task`] records one, [`StartedTask::run`] runs its work off
//! the HTTP workers with a [`Progress`] to report through, then ends it and records a failure;
//! `GET /v1/tasks/<id>` answers its state.

use std::future::Future;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

use super::{exec, json_response, ok};
use crate::auth::Principal;
use crate::catalog::model::{GridStatus, Task, TaskError, TaskStatus};
use crate::catalog::{BranchRoute, CatalogError, CatalogResult, Supervisor};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::io::csv_import::clip;
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
    /// The branch the task makes (a point-in-time restore), once it is successful.
    #[serde(skip_serializing_if = "Option::is_none")]
    branch_id: Option<&'a str>,
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
        branch_id: task.creates_branch.as_deref(),
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

/// A task to start: its kind, the branch it works on, the view it was asked through, and
/// the status (`merging`, `importing` ...) some branches show until it ends, if any.
pub struct NewTask {
    pub kind: &'static str,
    pub route: Arc<BranchRoute>,
    pub view_id: Option<String>,
    pub shows: Option<(GridStatus, Vec<String>)>,
    /// The id of the branch the task makes, if it makes one (shown as the task's `branchId`).
    pub creates_branch: Option<String>,
}

/// A recorded task not yet running: [`StartedTask::run`] runs it, once.
#[must_use = "a started task reads running until it is run"]
pub struct StartedTask {
    task: Task,
    state: AppState,
    showing: Vec<String>,
}

/// Refuses (409 `taskIsRunning`, saying `why`) a task of `kind` when the principal's company
/// already runs `max` of them: for the tasks that hold a whole file or branch in memory, checked
/// in `start_task`'s `also` step so that two requests cannot both pass it.
pub fn refuse_past(
    s: &Supervisor,
    p: &Principal,
    kind: &str,
    max: usize,
    why: impl Into<std::borrow::Cow<'static, str>>,
) -> CatalogResult<()> {
    if s.running_tasks(p, kind) >= max {
        return Err(CatalogError::TaskRunning(why.into()));
    }
    Ok(())
}

/// Records a task (and shows its branches' status) in one step of the supervisor, together
/// with `also`, which runs first in the same step: what the task must see no change come
/// between (a merge's fork point). Nothing is recorded when `also` fails.
pub async fn start_task<T: Send + 'static>(
    state: &AppState,
    p: &Principal,
    new: NewTask,
    also: impl FnOnce(&mut Supervisor) -> CatalogResult<T> + Send + 'static,
) -> ApiResult<(StartedTask, T)> {
    let NewTask { kind, route, view_id, shows, creates_branch } = new;
    let showing: Vec<String> = shows.as_ref().map(|(_, ids)| ids.clone()).unwrap_or_default();
    let pc = p.clone();
    let (task, with) = exec(state, move |s| {
        let with = also(s)?;
        let task = s.start_task(&pc, kind, &route, view_id, creates_branch)?;
        if let Some((status, ids)) = shows {
            s.set_status(&ids.iter().map(String::as_str).collect::<Vec<_>>(), status);
        }
        Ok::<_, CatalogError>((task, with))
    })
    .await??;
    Ok((StartedTask { task, state: state.clone(), showing }, with))
}

/// How a running task shows how far it has come.
#[derive(Clone)]
pub struct Progress {
    state: AppState,
    task_id: Arc<str>,
}

impl Progress {
    /// Shows `percent` (0-99) done; a failure to show it is only logged.
    pub async fn set(&self, percent: u8) {
        let id = self.task_id.clone();
        let shown = exec(&self.state, move |s| s.set_task_progress(&id, percent)).await;
        if let Err(err) = shown {
            tracing::warn!(task = %self.task_id, error = %err.message, "could not show a task's progress");
        }
    }
}

/// How a task failed, as its record shows it.
impl From<ApiError> for TaskError {
    fn from(err: ApiError) -> Self {
        TaskError { code: err.code.as_str().to_owned(), message: err.message }
    }
}

/// Most bytes of a failure's message a log line holds.
const MAX_LOGGED_BYTES: usize = 1024;

impl StartedTask {
    pub fn id(&self) -> &str {
        &self.task.id
    }

    /// Runs `work` on the server's runtime, off the HTTP worker that started it, and answers
    /// 202 with the task. When the work ends the task ends: successful, or failed with the
    /// work's error (logged); its branches show `active` again.
    pub fn run<F, T, E>(self, work: impl FnOnce(Progress) -> F) -> HttpResponse
    where
        F: Future<Output = Result<T, E>> + 'static,
        E: Into<TaskError>,
    {
        let response = json_response(StatusCode::ACCEPTED, &task_body(&self.task));
        let StartedTask { task, state, showing } = self;
        let task_id: Arc<str> = task.id.into();
        let work = work(Progress { state: state.clone(), task_id: task_id.clone() });
        let kind = task.kind;
        actix_web::rt::spawn(async move {
            let ended = work.await.map(drop).map_err(Into::into);
            match &ended {
                Ok(()) => tracing::info!(task = %task_id, %kind, "task done"),
                Err(e) => {
                    let message = clip(&e.message, MAX_LOGGED_BYTES);
                    tracing::warn!(task = %task_id, %kind, code = %e.code, error = %message, "task failed");
                }
            }
            end_task(&state, &task_id, showing, ended.err()).await;
        });
        response
    }
}

/// Ends a task (successful, or failed with `error`) and clears the status its work showed on
/// `branches`; a failure to record it is logged (the task's work is done either way).
async fn end_task(
    state: &AppState,
    task_id: &str,
    branches: Vec<String>,
    error: Option<TaskError>,
) {
    let id = task_id.to_owned();
    let finished = exec(state, move |s| {
        let ids: Vec<&str> = branches.iter().map(String::as_str).collect();
        s.set_status(&ids, GridStatus::Active);
        s.finish_task(&id, error)
    })
    .await;
    if let Err(err) = finished.and_then(|r| r.map_err(ApiError::from)) {
        tracing::error!(task = %task_id, error = %err.message, "could not record the end of a task");
    }
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_task);
}
