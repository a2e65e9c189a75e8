//! CSV import (decisions.md section 7): `POST /v1/views/<viewId>/import`, multipart `file` (UTF-8
//! CSV, BOM tolerated) and `importRequest` (a JSON part, or a query parameter).
//!
//! The request is checked at once, before anything starts: the multipart body, the import
//! request, and how the file's columns map to the view (a header row matched by column name,
//! then id, then `_recordId`/`Record ID` and `_path`/`Path`; `columnMappings` by file column
//! index). A bad request is a 400 and starts nothing; a file over `MAX_IMPORT_BYTES` is 413.
//! Then a task (202) reads every row on a blocking thread and sends them to the branch's actor,
//! which checks them all and commits them as one WAL entry: an existing record id updates that
//! record, a new or absent id adds one. Any bad row (ragged, invalid UTF-8, a value of the
//! wrong type) fails the task with an error naming the row and column, and changes nothing. The
//! grid shows `importing` meanwhile.
//!
//! With `backup` (the default), the task first stores a copy of the branch (an image in the
//! snapshot store, recorded in the catalogue): `GET /v1/grids/<id>/backups` lists them and
//! `POST /v1/grids/<id>/backups/<backupId>/restore` (a task) puts the records back as they were,
//! as ordinary record ops in one WAL entry (`grid::merge::plan_restore`).

use std::path::{Path, PathBuf};

use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa_actix_web::service_config::ServiceConfig;

use super::multipart::{bad_multipart, part_text, part_to_file};
use super::references::{check_reference_access, check_written_references};
use super::tasks::{end_task, task_body};
use super::{exec, json_response, query_pairs, view_route};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::{Backup, GridStatus, TaskError};
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{CopyBranch, ImportRecords, ReadSchema, RestoreRecords};
use crate::grid::records::{CellInput, RecordInput};
use crate::grid::references::reference_columns;
use crate::grid::schema::{ColumnDef, ColumnType};
use crate::grid::value::StorageKind;
use crate::ids;
use crate::state::AppState;

/// The task kind of an import.
const TASK_KIND: &str = "import";
/// The largest CSV file accepted.
pub const MAX_IMPORT_BYTES: u64 = 100 * 1024 * 1024;
/// The largest `importRequest` part.
const MAX_REQUEST_PART: usize = 64 * 1024;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImportRequest {
    with_header: Option<bool>,
    backup: Option<bool>,
    column_mappings: Option<Vec<ColumnMapping>>,
    first_data_row: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ColumnMapping {
    column_id: String,
    file_column_index: usize,
}

/// Where a file column goes.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    RecordId,
    Path,
    /// A view column: its id and whether its cells are lists (written as JSON arrays).
    Column {
        id: String,
        list: bool,
    },
    Ignored,
}

/// How the file's rows become records.
#[derive(Debug, Clone)]
struct Layout {
    /// Per file column.
    targets: Vec<Target>,
    /// The 1-based row of the first data row.
    first_data_row: usize,
}

impl Layout {
    /// The view columns the rows write, in the order of their cells.
    fn columns(&self) -> Vec<&str> {
        self.targets
            .iter()
            .filter_map(|t| match t {
                Target::Column { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// An uploaded file on disk, removed when dropped.
struct Upload {
    path: PathBuf,
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads the multipart body: the `file` part into a file under `<data dir>/imports/`, the
/// `importRequest` part (if any) as text. Other parts are skipped.
async fn receive(
    data_dir: &Path,
    mut body: Multipart,
) -> ApiResult<(Option<Upload>, Option<String>)> {
    let (mut upload, mut request) = (None, None);
    while let Some(field) = body.next().await {
        let mut field = field.map_err(bad_multipart)?;
        match field.name().unwrap_or_default() {
            "file" => {
                let file = Upload {
                    path: data_dir.join("imports").join(format!("{}.csv", ids::generate())),
                };
                part_to_file(&mut field, &file.path, MAX_IMPORT_BYTES).await?;
                upload = Some(file);
            }
            "importRequest" => {
                request = Some(part_text(&mut field, "importRequest", MAX_REQUEST_PART).await?);
            }
            _ => while field.next().await.is_some() {},
        }
    }
    Ok((upload, request))
}

fn parse_request(text: Option<&str>) -> ApiResult<ImportRequest> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(ImportRequest::default()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("importRequest is invalid: {e}"))),
    }
}

/// What a header cell names: a view column (by name, then id), the record id or the path.
fn header_target(header: &str, columns: &[&ColumnDef]) -> Target {
    let header = header.trim();
    let column = columns
        .iter()
        .find(|c| c.name == header)
        .or_else(|| columns.iter().find(|c| c.id == header));
    match (column, header) {
        // Formula cells are computed: an exported formula column is read back as nothing.
        (Some(c), _) if c.column_type == ColumnType::Formula => Target::Ignored,
        (Some(c), _) => column_target(c),
        (None, "_recordId" | "Record ID") => Target::RecordId,
        (None, "_path" | "Path") => Target::Path,
        _ => Target::Ignored,
    }
}

fn column_target(column: &ColumnDef) -> Target {
    Target::Column {
        id: column.id.clone(),
        list: column.column_type.storage() == StorageKind::List,
    }
}

/// The layout of an import: from the header row and the mappings. 400 when nothing maps.
fn plan_layout(
    request: &ImportRequest,
    columns: &[&ColumnDef],
    header: Option<Vec<String>>,
) -> ApiResult<Layout> {
    let with_header = request.with_header.unwrap_or(true);
    let mut targets: Vec<Target> = match (&header, with_header) {
        (Some(names), true) => names.iter().map(|h| header_target(h, columns)).collect(),
        _ => Vec::new(),
    };
    if let Some(mappings) = &request.column_mappings {
        // Mapped columns replace the header's matches; its record id and path columns stay.
        for target in &mut targets {
            if matches!(target, Target::Column { .. }) {
                *target = Target::Ignored;
            }
        }
        for mapping in mappings {
            let target = match mapping.column_id.as_str() {
                "_recordId" => Target::RecordId,
                "_path" => Target::Path,
                id => match columns.iter().find(|c| c.id == id) {
                    Some(c) if c.column_type == ColumnType::Formula => {
                        return Err(ApiError::bad_request(format!(
                            "columnMappings: column \"{id}\" is a formula column; its values \
                             are computed."
                        )))
                    }
                    Some(c) => column_target(c),
                    None => {
                        return Err(ApiError::bad_request(format!(
                            "columnMappings: column \"{id}\" is not in the view."
                        )))
                    }
                },
            };
            let at = mapping.file_column_index;
            if at >= 10_000 {
                return Err(ApiError::bad_request(format!(
                    "columnMappings: fileColumnIndex {at} is out of range."
                )));
            }
            if targets.len() <= at {
                targets.resize(at + 1, Target::Ignored);
            }
            targets[at] = target;
        }
    } else if !with_header {
        return Err(ApiError::bad_request("An import without a header row needs columnMappings."));
    }
    if !targets.iter().any(|t| matches!(t, Target::Column { .. })) {
        return Err(ApiError::bad_request(
            "No column of the file maps to a column of the view (match the header to column \
             names or ids, or give columnMappings).",
        ));
    }
    let first_data_row = match request.first_data_row {
        Some(0) => return Err(ApiError::bad_request("firstDataRow is 1-based.")),
        Some(row) => row,
        None if with_header => 2,
        None => 1,
    };
    Ok(Layout { targets, first_data_row })
}

fn csv_reader(path: &Path) -> Result<csv::Reader<std::fs::File>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("opening the upload: {e}"))?;
    Ok(csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(file))
}

/// A field as text; `row`/`column` name it in the error.
fn field_text(bytes: &[u8], row: usize, column: usize, first: bool) -> Result<String, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| format!("row {row}, column {}: the text is not valid UTF-8.", column + 1))?;
    let text = if first && row == 1 { text.trim_start_matches('\u{feff}') } else { text };
    Ok(text.to_owned())
}

/// The header row of the file (its first row), or `None` for an empty file.
fn read_header(path: &Path) -> ApiResult<Option<Vec<String>>> {
    let mut reader = csv_reader(path).map_err(ApiError::internal)?;
    let mut record = csv::ByteRecord::new();
    match reader.read_byte_record(&mut record) {
        Ok(false) => Ok(None),
        Ok(true) => record
            .iter()
            .enumerate()
            .map(|(i, field)| field_text(field, 1, i, i == 0))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
            .map_err(ApiError::bad_request),
        Err(err) => Err(ApiError::bad_request(format!("The header row is not valid CSV: {err}"))),
    }
}

/// A field as the JSON value the records API takes for its column.
fn cell_value(text: String, list: bool, row: usize, column: &str) -> Result<Value, String> {
    if text.is_empty() {
        return Ok(Value::Null);
    }
    if !list {
        return Ok(Value::String(text));
    }
    if text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Array(_)) => Ok(value),
            _ => Err(format!(
                "row {row}, column \"{column}\": a list is a JSON array of strings, like [\"a\",\"b\"]."
            )),
        };
    }
    Ok(Value::Array(vec![Value::String(text)]))
}

/// Every data row of the file as a record write, labelled `row <n>`. Blocking.
fn read_rows(path: &Path, layout: &Layout) -> Result<Vec<(String, RecordInput)>, String> {
    let mut reader = csv_reader(path)?;
    let mut record = csv::ByteRecord::new();
    let mut rows = Vec::new();
    let mut width = None;
    let mut row = 0usize;
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(err) => {
                let at = err.position().map_or(row + 1, |p| p.record() as usize + 1);
                return Err(format!("row {at}: the CSV is malformed: {err}"));
            }
        }
        row += 1;
        let expected = *width.get_or_insert(record.len());
        if record.len() != expected {
            return Err(format!(
                "row {row} has {} fields where the rows before it have {expected}.",
                record.len()
            ));
        }
        if row < layout.first_data_row {
            continue;
        }
        let mut input = RecordInput::default();
        for (i, field) in record.iter().enumerate() {
            let target = layout.targets.get(i).unwrap_or(&Target::Ignored);
            if matches!(target, Target::Ignored) {
                continue;
            }
            let text = field_text(field, row, i, i == 0)?;
            match target {
                Target::RecordId => input.id = Some(text).filter(|t| !t.is_empty()),
                Target::Path => input.path = Some(text),
                Target::Column { id, list } => input.cells.push(CellInput {
                    column_id: Some(id.clone()),
                    value: Some(cell_value(text, *list, row, id)?),
                    dependency_status: None,
                    source_status: None,
                }),
                Target::Ignored => {}
            }
        }
        rows.push((format!("row {row}"), input));
    }
    Ok(rows)
}

/// Names the column in the actor's messages about `row <n>.cells[<j>]`.
fn name_columns(message: &str, columns: &[&str]) -> String {
    let Some(start) = message.find(".cells[") else { return message.to_owned() };
    let rest = &message[start + ".cells[".len()..];
    let Some(end) = rest.find(']') else { return message.to_owned() };
    match rest[..end].parse::<usize>().ok().and_then(|j| columns.get(j)) {
        Some(column) => {
            format!("{}, column \"{column}\"{}", &message[..start], &rest[end + 1..])
        }
        None => message.to_owned(),
    }
}

#[utoipa::path(tag = "records", responses((status = 202, description = "an import task")))]
#[post("/v1/views/{viewId}/import")]
async fn import(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    let view_id = view_id.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Write)?;
    let query = query_pairs(&req)?;
    let body = Multipart::new(req.headers(), payload);
    let (upload, part) = receive(&state.data_dir, body).await?;
    let upload =
        upload.ok_or_else(|| ApiError::bad_request("The multipart part file is required."))?;
    let from_query = query.into_iter().find(|(k, _)| k == "importRequest").map(|(_, v)| v);
    let request = parse_request(part.as_deref().or(from_query.as_deref()))?;
    let schema = route.addr.send(ReadSchema).await?;
    let view = schema
        .view(&view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &view_id))?;
    let columns: Vec<&ColumnDef> = schema.view_columns(view).into_iter().map(|(c, _)| c).collect();
    let header = read_header(&upload.path)?;
    let layout = plan_layout(&request, &columns, header)?;
    let references = reference_columns(&schema, &view_id);
    let imported = layout.columns();
    let written: Vec<_> =
        references.iter().filter(|(id, _)| imported.contains(&id.as_str())).cloned().collect();
    check_reference_access(&state, &p, &written)?;
    let backup = request.backup.unwrap_or(true);
    let (pc, vid, branch) = (p.clone(), view_id.clone(), route.branch_id.clone());
    let task_route = route.clone();
    let task = exec(&state, move |s| {
        let task = s.start_task(&pc, TASK_KIND, &task_route, Some(vid))?;
        s.set_status(&[&branch], GridStatus::Importing);
        Ok::<_, ApiError>(task)
    })
    .await??;
    let (task_id, user, state2) = (task.id.clone(), p.user().to_owned(), state.clone());
    let p2 = p.clone();
    actix_web::rt::spawn(async move {
        let columns: Vec<String> = layout.columns().into_iter().map(str::to_owned).collect();
        let imported = async {
            if backup {
                keep_backup(&state2, &route).await?;
            }
            let read = web::block(move || {
                let rows = read_rows(&upload.path, &layout);
                drop(upload);
                rows
            })
            .await
            .map_err(|e| ApiError::internal(format!("the reader stopped: {e}")))?
            .map_err(ApiError::bad_request)?;
            let labelled: Vec<(String, &RecordInput)> =
                read.iter().map(|(at, r)| (at.clone(), r)).collect();
            check_written_references(&state2, &p2, &route, &references, &labelled).await?;
            route.addr.send(ImportRecords { view_id, rows: read, user }).await?
        }
        .await;
        let error = match imported {
            Ok(count) => {
                tracing::info!(task = %task_id, records = count, "import done");
                None
            }
            Err(err) => {
                let names: Vec<&str> = columns.iter().map(String::as_str).collect();
                let mut message = name_columns(&err.message, &names);
                for line in &err.messages {
                    message.push_str("; ");
                    message.push_str(&name_columns(line, &names));
                }
                tracing::info!(task = %task_id, error = %message, "import refused");
                Some(TaskError { code: err.code.as_str().to_owned(), message })
            }
        };
        end_task(&state2, task_id, vec![route.branch_id.clone()], error).await;
    });
    Ok(json_response(StatusCode::ACCEPTED, &task_body(&task)))
}

/// Stores a copy of the branch as it is before the import, and records it as a backup.
async fn keep_backup(state: &AppState, route: &BranchRoute) -> ApiResult<()> {
    let copy = route.addr.send(CopyBranch { pin_for: None }).await?;
    let records = copy.state.store.len();
    let id = crate::catalog::Supervisor::new_backup_id();
    let durability = state
        .durability
        .upgrade()
        .ok_or_else(|| ApiError::new(ErrorCode::ServiceUnavailable, "The server is stopping."))?;
    let image_id = id.clone();
    web::block(move || durability.store_backup(&image_id, &copy.state))
        .await
        .map_err(|e| ApiError::internal(format!("the backup writer stopped: {e}")))?
        .map_err(|e| ApiError::internal(format!("The backup could not be stored: {e}")))?;
    let branch = route.branch_id.clone();
    exec(state, move |s| s.record_backup(id, &branch, records)).await??;
    Ok(())
}

/// A backup as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BackupBody<'a> {
    id: &'a str,
    grid_id: &'a str,
    branch_id: &'a str,
    created_time: &'a str,
    records: usize,
}

fn backup_body(b: &Backup) -> BackupBody<'_> {
    BackupBody {
        id: &b.id,
        grid_id: &b.grid_id,
        branch_id: &b.branch_id,
        created_time: &b.created_time,
        records: b.records,
    }
}

#[utoipa::path(tag = "grids", responses((status = 200, description = "the grid's backups, oldest first")))]
#[get("/v1/grids/{id}/backups")]
async fn list_backups(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let backups = exec(&state, move |s| s.list_backups(&p, &id)).await??;
    super::ok(&backups.iter().map(backup_body).collect::<Vec<_>>())
}

#[utoipa::path(tag = "grids", responses((status = 202, description = "a restore task")))]
#[post("/v1/grids/{id}/backups/{backupId}/restore")]
async fn restore_backup(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (grid_id, backup_id) = path.into_inner();
    let pc = p.clone();
    let backup = exec(&state, move |s| s.backup(&pc, &grid_id, &backup_id)).await??;
    let route = state.routes.branch(&backup.branch_id).ok_or_else(|| {
        ApiError::not_found(ErrorCode::BranchIsNotFound, "Branch", &backup.branch_id)
    })?;
    let (pc, branch) = (p.clone(), backup.branch_id.clone());
    let task_route = route.clone();
    let task = exec(&state, move |s| {
        let task = s.start_task(&pc, "restore", &task_route, None)?;
        s.set_status(&[&branch], GridStatus::Restoring);
        Ok::<_, ApiError>(task)
    })
    .await??;
    let (task_id, user, state2) = (task.id.clone(), p.user().to_owned(), state.clone());
    actix_web::rt::spawn(async move {
        let restored = async {
            let durability = state2.durability.upgrade().ok_or_else(|| {
                ApiError::new(ErrorCode::ServiceUnavailable, "The server is stopping.")
            })?;
            let id = backup.id.clone();
            let saved = web::block(move || durability.load_backup(&id))
                .await
                .map_err(|e| ApiError::internal(format!("the backup reader stopped: {e}")))?
                .map_err(|e| ApiError::internal(format!("The backup could not be read: {e}")))?;
            route.addr.send(RestoreRecords { backup: saved, user }).await?
        }
        .await;
        let error = restored.err().map(|err| {
            tracing::warn!(task = %task_id, error = %err.message, "restore failed");
            TaskError { code: err.code.as_str().to_owned(), message: err.message }
        });
        end_task(&state2, task_id, vec![backup.branch_id.clone()], error).await;
    });
    Ok(json_response(StatusCode::ACCEPTED, &task_body(&task)))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(import).service(list_backups).service(restore_backup);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_about_cells_name_their_column() {
        let columns = ["enUS", "count"];
        assert_eq!(
            name_columns("row 7.cells[1]: value must be a number", &columns),
            "row 7, column \"count\": value must be a number"
        );
        assert_eq!(
            name_columns("row 7: the record id is empty.", &columns),
            "row 7: the record id is empty."
        );
        assert_eq!(name_columns("row 7.cells[9]: x", &columns), "row 7.cells[9]: x");
    }

    #[test]
    fn list_cells_are_json_arrays_or_one_item() {
        assert_eq!(cell_value(String::new(), true, 2, "tags"), Ok(Value::Null));
        assert_eq!(
            cell_value("[\"ui\",\"legal\"]".into(), true, 2, "tags"),
            Ok(serde_json::json!(["ui", "legal"]))
        );
        assert_eq!(cell_value("ui".into(), true, 2, "tags"), Ok(serde_json::json!(["ui"])));
        let err = cell_value("[oops".into(), true, 3, "tags").expect_err("not JSON");
        assert!(err.starts_with("row 3, column \"tags\""), "{err}");
        assert_eq!(cell_value("12".into(), false, 2, "n"), Ok(Value::String("12".into())));
    }
}
