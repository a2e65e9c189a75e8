//! Record-history export (decisions.md section 9): `POST /v1/views/<viewId>/record-histories/export`
//! checks the request, reads the rows from the branch's actor, records a task and answers 202;
//! the file (CSV, or XLSX through rust_xlsxwriter) is written off the workers into
//! `<data dir>/exports/<taskId>.<csv|xlsx>` (temporary file, fsync, rename; in a cluster also
//! stored in the cluster's files, so that the node serving the grid after a takeover serves it)
//! and the task ends successful or failed. `GET .../record-histories/export/<taskId>` and its alias
//! `.../export/<taskId>` serve the file; 409 `taskIsRunning` until it is written.

use std::path::{Path, PathBuf};

use actix_web::{get, post, web, HttpResponse};
use serde::Deserialize;
use utoipa_actix_web::service_config::ServiceConfig;

use super::sized_json::JsonObject;
use super::tasks::{refuse_past, require_successful, start_task, NewTask};
use super::{exec, view_route};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::TaskError;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::ExportHistory;
use crate::grid::codec::parse_datetime;
use crate::grid::history::ExportRow;
use crate::io::error::{FileError, FileResult};
use crate::io::export::{write_history_csv, write_history_xlsx};
use crate::state::AppState;

/// The task kind of a history export.
const TASK_KIND: &str = "recordHistoryExport";
/// The longest span between `fromTime` and `toTime`.
const MAX_SPAN_MS: i64 = 60 * 86_400_000;
/// The most rows (changed cells) one export holds: its rows are gathered and sorted in memory
/// (some 300 bytes each), so a span covering a large grid's whole history would take gigabytes.
/// Past it the task fails, naming the ways to narrow the export.
pub const MAX_EXPORT_ROWS: usize = 1_000_000;
/// History exports a company may run at once (each holds up to `MAX_EXPORT_ROWS` rows).
const MAX_RUNNING_EXPORTS: usize = 2;

/// Body of a history export: a window of at most 60 days, optional filters, the file format.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct ExportRequest {
    from_time: Option<String>,
    to_time: Option<String>,
    column_ids: Option<Vec<String>>,
    last_modified_by_users: Option<Vec<String>>,
    format: Option<String>,
    mode: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum FileFormat {
    Csv,
    Xlsx,
}

impl FileFormat {
    fn extension(self) -> &'static str {
        match self {
            FileFormat::Csv => "csv",
            FileFormat::Xlsx => "xlsx",
        }
    }
}

/// A checked request: the span in milliseconds, the format, and whether rows carry the
/// previous value (enhanced mode).
#[derive(Debug)]
struct ExportPlan {
    from_ms: i64,
    to_ms: i64,
    format: FileFormat,
    enhanced: bool,
}

fn plan(req: &ExportRequest) -> ApiResult<ExportPlan> {
    let time = |name: &str, value: &Option<String>| -> ApiResult<i64> {
        let text = value.as_deref().ok_or_else(|| {
            ApiError::new(ErrorCode::RequestParameterMissing, format!("{name} is required."))
        })?;
        parse_datetime(text).ok_or_else(|| {
            ApiError::bad_request(format!("{name} \"{text}\" is not an ISO 8601 date or time."))
        })
    };
    let (from_ms, to_ms) = (time("fromTime", &req.from_time)?, time("toTime", &req.to_time)?);
    if to_ms < from_ms {
        return Err(ApiError::bad_request("toTime is before fromTime."));
    }
    if to_ms - from_ms > MAX_SPAN_MS {
        return Err(ApiError::bad_request("fromTime and toTime must be at most 60 days apart."));
    }
    let format = match req.format.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("csv") => FileFormat::Csv,
        Some("xlsx") => FileFormat::Xlsx,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format \"{other}\" is not supported; use csv or xlsx."
            )))
        }
    };
    let enhanced = match req.mode.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("standard") => false,
        Some("enhanced") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "mode \"{other}\" is not supported; use standard or enhanced."
            )))
        }
    };
    Ok(ExportPlan { from_ms, to_ms, format, enhanced })
}

#[utoipa::path(tag = "records", request_body = ExportRequest, responses((status = 202, description = "a task writing the export")))]
#[post("/v1/views/{viewId}/record-histories/export")]
async fn start_export(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonObject<ExportRequest>,
) -> ApiResult<HttpResponse> {
    let view_id = view_id.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Manage)?;
    let plan = plan(&body)?;
    let body = body.into_inner();
    let history = route
        .addr
        .send(ExportHistory {
            view_id: view_id.clone(),
            from_ms: plan.from_ms,
            to_ms: plan.to_ms,
            columns: body.column_ids,
            users: body.last_modified_by_users,
        })
        .await??;
    let new = NewTask {
        kind: TASK_KIND,
        route: route.clone(),
        view_id: Some(view_id),
        shows: None,
        creates_branch: None,
    };
    let pc = p.clone();
    let why = format!(
        "This company runs as many history exports as it may at once ({MAX_RUNNING_EXPORTS}); \
         start the next one when one ends."
    );
    let (task, ()) = start_task(&state, &p, new, move |s| {
        refuse_past(s, &pc, TASK_KIND, MAX_RUNNING_EXPORTS, why)
    })
    .await?;
    let path = export_path(&state.data_dir, task.id(), plan.format);
    let (name, kept) = (cluster_name(task.id(), plan.format), path.clone());
    let failed = |message: String| TaskError { code: "exportFailed".to_owned(), message };
    Ok(task.run(|_| async move {
        web::block(move || {
            let rows = history.rows(MAX_EXPORT_ROWS).map_err(|too_many| {
                FileError::Request(format!(
                    "the export holds more than {} changed cells; narrow it with fromTime and \
                     toTime, columnIds or lastModifiedByUsers",
                    too_many.max_rows
                ))
            })?;
            write_export(&path, &plan, &rows)
        })
        .await
        .unwrap_or_else(|e| Err(FileError::Write(format!("the writer stopped: {e}"))))
        .map_err(|e| failed(e.to_string()))?;
        // In a cluster the file follows the grid to the node that serves it next.
        super::files::replicate_result(&state, &name, &kept).await.map_err(|e| failed(e.message))
    }))
}

/// The export's name in a cluster's file store.
fn cluster_name(task_id: &str, format: FileFormat) -> String {
    format!("export-{task_id}.{}", format.extension())
}

fn export_path(data_dir: &Path, task_id: &str, format: FileFormat) -> PathBuf {
    data_dir.join("exports").join(format!("{task_id}.{}", format.extension()))
}

/// Writes the file next to its final name, syncs it and renames it into place.
fn write_export(path: &Path, plan: &ExportPlan, rows: &[ExportRow]) -> FileResult<()> {
    let failed = |doing: &str, at: &Path, e: std::io::Error| {
        FileError::Write(format!("{doing} {}: {e}", at.display()))
    };
    let dir = path.parent().ok_or(FileError::Write("an export path has a directory".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| failed("creating", dir, e))?;
    let temp = path.with_extension("partial");
    match plan.format {
        FileFormat::Csv => write_history_csv(&temp, plan.enhanced, rows)?,
        FileFormat::Xlsx => write_history_xlsx(&temp, plan.enhanced, rows)?,
    }
    std::fs::File::open(&temp)
        .and_then(|f| f.sync_all())
        .map_err(|e| failed("syncing", &temp, e))?;
    std::fs::rename(&temp, path).map_err(|e| failed("renaming", &temp, e))
}

#[utoipa::path(tag = "records", responses((status = 200, description = "the export file")))]
#[get("/v1/views/{viewId}/record-histories/export/{taskId}")]
async fn download_export(
    state: web::Data<AppState>,
    p: Principal,
    ids: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    serve(state, p, ids.into_inner()).await
}

#[utoipa::path(tag = "records", responses((status = 200, description = "the export file")))]
#[get("/v1/views/{viewId}/export/{taskId}")]
async fn download_export_alias(
    state: web::Data<AppState>,
    p: Principal,
    ids: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    serve(state, p, ids.into_inner()).await
}

async fn serve(
    state: web::Data<AppState>,
    p: Principal,
    (view_id, task_id): (String, String),
) -> ApiResult<HttpResponse> {
    view_route(&state, &p, &view_id, Privilege::Read)?;
    let lookup = task_id.clone();
    let task = exec(&state, move |s| s.task(&p, &lookup)).await??;
    if task.kind != TASK_KIND || task.view_id.as_deref() != Some(view_id.as_str()) {
        return Err(ApiError::not_found(ErrorCode::TaskIsNotFound, "Task", &task_id));
    }
    require_successful(&task, "writing the export")?;
    for format in [FileFormat::Csv, FileFormat::Xlsx] {
        let path = export_path(&state.data_dir, &task_id, format);
        let name = cluster_name(&task_id, format);
        if let Some(bytes) = super::files::read_result(&state, &name, &path).await {
            let name = format!("record-histories-{task_id}.{}", format.extension());
            return Ok(super::files::attachment(&name).body(bytes));
        }
    }
    Err(ApiError::new(
        ErrorCode::FileIsNotFound,
        format!("The file of export \"{task_id}\" is no longer there."),
    ))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(start_export).service(download_export).service(download_export_alias);
}
