//! Record-history export (decisions.md section 9): `POST /v1/views/<viewId>/record-histories/export`
//! checks the request, reads the rows from the branch's actor, records a task and answers 202;
//! the file (CSV, or XLSX through rust_xlsxwriter) is written off the workers into
//! `<data dir>/exports/<taskId>.<csv|xlsx>` (temporary file, fsync, rename) and the task ends
//! successful or failed. `GET .../record-histories/export/<taskId>` and its alias
//! `.../export/<taskId>` serve the file; 409 `taskIsRunning` until it is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use actix_web::http::header;
use actix_web::{get, post, web, HttpResponse};
use serde::Deserialize;
use utoipa_actix_web::service_config::ServiceConfig;

use super::tasks::{require_successful, start_task, NewTask};
use super::{exec, view_route};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::TaskError;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::ExportHistory;
use crate::grid::codec::{export_text, format_timestamp, parse_datetime};
use crate::grid::history::ExportRow;
use crate::state::AppState;

/// The task kind of a history export.
const TASK_KIND: &str = "recordHistoryExport";
/// The longest span between `fromTime` and `toTime`.
const MAX_SPAN_MS: i64 = 60 * 86_400_000;

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
    body: web::Json<ExportRequest>,
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
        showing: Vec::new(),
        status: None,
    };
    let (task, ()) = start_task(&state, &p, new, |_| Ok(())).await?;
    let path = export_path(&state.data_dir, task.id(), plan.format);
    Ok(task.run(|_| async move {
        web::block(move || write_export(&path, &plan, &history.rows()))
            .await
            .unwrap_or_else(|e| Err(format!("the writer stopped: {e}")))
            .map_err(|message| TaskError { code: "exportFailed".to_owned(), message })
    }))
}

fn export_path(data_dir: &Path, task_id: &str, format: FileFormat) -> PathBuf {
    data_dir.join("exports").join(format!("{task_id}.{}", format.extension()))
}

/// The header of an export's rows.
fn header(enhanced: bool) -> Vec<&'static str> {
    let mut names = vec![
        "Record ID",
        "Path",
        "Column",
        "Value",
        "Dependency status",
        "Source status",
        "Last modified by",
        "Last modified time",
    ];
    if enhanced {
        names.push("Previous value");
    }
    names
}

/// The text fields of a row, in header order (the time last but one, before the previous value).
fn row_texts(row: &ExportRow, enhanced: bool) -> Vec<String> {
    let (dependency, source) = match row.statuses {
        Some((d, s)) => (d.as_str().to_owned(), s.as_str().to_owned()),
        None => (String::new(), String::new()),
    };
    let mut fields = vec![
        row.record_id.clone(),
        row.path.clone(),
        row.column_id.clone(),
        export_text(&row.value),
        dependency,
        source,
        row.user.clone(),
        format_timestamp(row.time_ms),
    ];
    if enhanced {
        fields.push(row.previous.as_ref().map(export_text).unwrap_or_default());
    }
    fields
}

/// Writes the file next to its final name, syncs it and renames it into place.
fn write_export(path: &Path, plan: &ExportPlan, rows: &[ExportRow]) -> Result<(), String> {
    let dir = path.parent().ok_or("an export path has a directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let temp = path.with_extension("partial");
    match plan.format {
        FileFormat::Csv => write_csv(&temp, plan.enhanced, rows)?,
        FileFormat::Xlsx => write_xlsx(&temp, plan.enhanced, rows)?,
    }
    std::fs::File::open(&temp)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("syncing {}: {e}", temp.display()))?;
    std::fs::rename(&temp, path).map_err(|e| format!("renaming {}: {e}", temp.display()))
}

fn write_csv(path: &Path, enhanced: bool, rows: &[ExportRow]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = csv::Writer::from_writer(std::io::BufWriter::new(file));
    let failed = |e: csv::Error| format!("writing {}: {e}", path.display());
    out.write_record(header(enhanced)).map_err(failed)?;
    for row in rows {
        out.write_record(row_texts(row, enhanced)).map_err(failed)?;
    }
    let mut inner = out.into_inner().map_err(|e| format!("writing {}: {e}", path.display()))?;
    inner.flush().map_err(|e| format!("writing {}: {e}", path.display()))
}

/// A spreadsheet with a bold, frozen header row, set column widths, and the modification time
/// as a date cell.
fn write_xlsx(path: &Path, enhanced: bool, rows: &[ExportRow]) -> Result<(), String> {
    use rust_xlsxwriter::{Format, Workbook};
    let failed = |e: rust_xlsxwriter::XlsxError| format!("writing {}: {e}", path.display());
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.set_name("Record histories").map_err(failed)?;
    let bold = Format::new().set_bold();
    let date = Format::new().set_num_format("yyyy-mm-dd hh:mm:ss.000");
    const TIME_COLUMN: u16 = 7;
    for (col, name) in header(enhanced).iter().enumerate() {
        let col = col as u16;
        sheet.write_string_with_format(0, col, *name, &bold).map_err(failed)?;
        let width = match col {
            3 | 8 => 48.0,
            TIME_COLUMN => 24.0,
            _ => 18.0,
        };
        sheet.set_column_width(col, width).map_err(failed)?;
    }
    sheet.set_freeze_panes(1, 0).map_err(failed)?;
    for (at, row) in rows.iter().enumerate() {
        let line = u32::try_from(at + 1).map_err(|_| "too many rows for a spreadsheet")?;
        for (col, text) in row_texts(row, enhanced).into_iter().enumerate() {
            let col = col as u16;
            if col == TIME_COLUMN {
                // Excel's serial date: days since 1899-12-30, with the time as a fraction.
                let serial = row.time_ms as f64 / 86_400_000.0 + 25_569.0;
                sheet.write_number_with_format(line, col, serial, &date).map_err(failed)?;
            } else {
                sheet.write_string(line, col, text).map_err(failed)?;
            }
        }
    }
    workbook.save(path).map_err(failed)
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
        if let Ok(bytes) = tokio::fs::read(&path).await {
            let name = format!("record-histories-{task_id}.{}", format.extension());
            return Ok(HttpResponse::Ok()
                .content_type("application/octet-stream")
                .insert_header((
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{name}\""),
                ))
                .body(bytes));
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
