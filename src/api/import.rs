//! CSV import (decisions.md section 7): `POST /v1/views/<viewId>/import`, multipart `file` (UTF-8
//! CSV, BOM tolerated) and `importRequest` (a JSON part, or a query parameter).
//!
//! The request is checked at once, before anything starts: the multipart body, the import
//! request, and how the file's columns map to the view (`io::csv_import::plan_layout`: a
//! header row matched by column name, then id, then `_recordId`/`Record ID` and
//! `_path`/`Path`; `columnMappings` by file column index; two file columns with one target
//! are refused). A bad request is a 400 and starts nothing; a file over `MAX_IMPORT_BYTES` is
//! 413. Then a task (202) reads the rows on a blocking thread (`io::csv_import::read_rows`,
//! streaming, under its limits on field, row, column, row and cell counts) and sends them to
//! the branch's actor, which checks them all and commits them as one WAL entry: an existing
//! record id updates that record, a new or absent id adds one. Any bad row (ragged, invalid
//! UTF-8, over a limit, a value of the wrong type) fails the task with an error naming the
//! row and column, and changes nothing. The task's error lists at most `MAX_PROBLEMS`
//! problems in at most `MAX_ERROR_BYTES` (`... and N more problems`); the log gets its first
//! `MAX_LOGGED_BYTES`. The grid shows `importing` meanwhile.
//!
//! With `backup` (the default), the task stores a copy once the file is read of the branch (an image in the
//! snapshot store, recorded in the catalogue): `GET /v1/grids/<id>/backups` lists them and
//! `POST /v1/grids/<id>/backups/<backupId>/restore` (a task) puts the records back as they were,
//! as ordinary record ops in one WAL entry (`grid::merge::plan_restore`).

use std::path::{Path, PathBuf};

use actix_multipart::Multipart;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;

use super::multipart::{bad_multipart, part_to_file, skip_part, Budget};
use super::references::{check_reference_access, KeyLookup};
use super::tasks::{refuse_past, start_task, NewTask, Progress};
use super::{exec, query_pairs, view_route};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::{Backup, GridStatus, TaskError};
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, Coded, ErrorCode};
use crate::grid::actor::{CopyBranch, ImportRecords, ImportedReferences, RestoreRecords};
use crate::grid::error::GridError;
use crate::grid::records::{RecordInput, MAX_PROBLEMS};
use crate::grid::references::reference_columns;
use crate::grid::schema::ColumnDef;
use crate::grid::write_error::WriteError;
use crate::ids;
use crate::io::csv_import::{clip, plan_layout, ImportRequest, Layout};
use crate::io::error::FileError;
use crate::io::import_format::{header_hint, read_head, read_rows, Format, Head};
use crate::io::json_import::skip_computed_cells;
use crate::state::AppState;

/// The task kind of an import.
const TASK_KIND: &str = "import";

/// Imports a company may run at once. An import holds its whole file's writes in memory until
/// the grid applies them (about six times the file's bytes: some 570 MiB at the mapped-cells
/// limit), so a company starting imports on many grids at once would take the server's memory
/// from every other: past this, 409 `taskIsRunning` until one ends.
pub const MAX_RUNNING_IMPORTS: usize = 2;
/// The largest file accepted, of any type.
pub const MAX_IMPORT_BYTES: u64 = 100 * 1024 * 1024;
/// The largest `importRequest` part.
const MAX_REQUEST_PART: usize = 64 * 1024;
/// The largest task error message of a failed import, in bytes.
pub const MAX_ERROR_BYTES: usize = 64 * 1024;

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
/// `importRequest` part (if any) as text, within the body's `Budget`. Other parts are drained.
async fn receive(
    data_dir: &Path,
    mut body: Multipart,
) -> ApiResult<(Option<Upload>, Option<String>)> {
    let (mut upload, mut request) = (None, None);
    let mut budget = Budget::default();
    while let Some(field) = body.next().await {
        let mut field = field.map_err(bad_multipart)?;
        budget.part()?;
        match field.name().unwrap_or_default() {
            "file" => {
                let file = Upload {
                    path: data_dir.join("imports").join(format!("{}.upload", ids::generate())),
                };
                part_to_file(&mut field, &file.path, MAX_IMPORT_BYTES).await?;
                upload = Some(file);
            }
            "importRequest" => {
                let text = budget.text(&mut field, "importRequest", MAX_REQUEST_PART).await?;
                request = Some(text);
            }
            _ => skip_part(&mut field).await?,
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

/// What the import task reads: a table file under its layout, or a json file's records, read
/// (and checked) before the task started.
enum Source {
    Table { upload: Upload, format: Format, layout: Layout },
    Records(Vec<(String, RecordInput)>),
}

impl Source {
    /// The view columns the rows write.
    fn columns(&self) -> Vec<String> {
        match self {
            Source::Table { layout, .. } => {
                layout.columns().into_iter().map(str::to_owned).collect()
            }
            Source::Records(rows) => {
                let ids =
                    rows.iter().flat_map(|(_, r)| &r.cells).filter_map(|c| c.column_id.as_ref());
                let ids: std::collections::BTreeSet<&str> = ids.map(|id| id.as_str()).collect();
                ids.into_iter().map(str::to_owned).collect()
            }
        }
    }

    /// The columns a task message's `row <n>.cells[<j>]` names: a table's, in the order of
    /// every row's cells (a json record's cells are its own).
    fn message_columns(&self) -> Vec<String> {
        match self {
            Source::Table { .. } => self.columns(),
            Source::Records(_) => Vec::new(),
        }
    }

    /// The record writes, read off the HTTP workers; the upload is removed after.
    async fn rows(self) -> ApiResult<Vec<(String, RecordInput)>> {
        let (upload, format, layout) = match self {
            Source::Records(rows) => return Ok(rows),
            Source::Table { upload, format, layout } => (upload, format, layout),
        };
        web::block(move || {
            let rows = std::fs::File::open(&upload.path)
                .map_err(|e| FileError::Content(format!("opening the upload: {e}")))
                .and_then(|file| read_rows(format, file, &layout));
            drop(upload);
            rows
        })
        .await
        .map_err(|e| ApiError::internal(format!("the reader stopped: {e}")))?
        .map_err(ApiError::from)
    }
}

/// Reads what is checked before the task starts, off the HTTP worker (`read_head`: the content
/// against `format`, the header row of a table, every record of a json file), and plans a
/// table's layout. A refusal is a 400.
async fn plan_source(
    upload: Upload,
    format: Format,
    request: &ImportRequest,
    columns: &[&ColumnDef],
) -> ApiResult<Source> {
    let limits = crate::io::csv_import::limits(columns.len());
    let (path, checked) = (upload.path.clone(), request.clone());
    let head = web::block(move || {
        let mut file = std::fs::File::open(&path)
            .map_err(|e| ApiError::internal(format!("opening the upload: {e}")))?;
        let size = file
            .metadata()
            .map_err(|e| ApiError::internal(format!("reading the upload: {e}")))?
            .len();
        read_head(format, &mut file, size, limits, &checked).map_err(ApiError::from)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the reader stopped: {e}")))??;
    match head {
        Head::Records(mut rows) => {
            skip_computed_cells(&mut rows, columns);
            Ok(Source::Records(rows))
        }
        Head::Table(header) => {
            let layout = plan_layout(request, columns, header.as_deref()).map_err(|e| {
                ApiError::bad_request(format!("{e}{}", header_hint(format, header.as_deref())))
            })?;
            Ok(Source::Table { upload, format, layout })
        }
    }
}

#[utoipa::path(
    tag = "records",
    params(
        ("viewId" = String, Path, description = "the view to import into"),
        ("type" = Option<String>, Query, description = "the file's type: csv (the default), tsv, xlsx (the first sheet) or json (an array of records as the records API takes them, or as a JSON export gives them); xls, po, html and others are refused"),
        ("importRequest" = Option<String>, Query, description = "JSON: withHeader, backup, columnMappings, firstDataRow (or a multipart part of that name)"),
    ),
    responses((status = 202, description = "an import task"))
)]
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
    let format = query.iter().find(|(k, _)| k == "type").map(|(_, v)| v.as_str());
    let format = Format::parse(format)?;
    let body = Multipart::new(req.headers(), payload);
    let (upload, part) = receive(&state.data_dir, body).await?;
    let upload =
        upload.ok_or_else(|| ApiError::bad_request("The multipart part file is required."))?;
    let from_query = query.into_iter().find(|(k, _)| k == "importRequest").map(|(_, v)| v);
    let request = parse_request(part.as_deref().or(from_query.as_deref()))?;
    let schema = route.schema().await?;
    let view = schema
        .view(&view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &view_id))?;
    let columns: Vec<&ColumnDef> = schema.view_columns(view).into_iter().map(|(c, _)| c).collect();
    let source = plan_source(upload, format, &request, &columns).await?;
    let references = reference_columns(&schema, &view_id);
    let imported = source.columns();
    let written: Vec<_> =
        references.iter().filter(|(id, _)| imported.contains(id)).cloned().collect();
    check_reference_access(&state, &p, &written).await?;
    let backup = request.backup.unwrap_or(true);
    let new = NewTask {
        kind: TASK_KIND,
        route: route.clone(),
        view_id: Some(view_id.clone()),
        shows: Some((GridStatus::Importing, vec![route.branch_id.clone()])),
        creates_branch: None,
    };
    let pc = p.clone();
    let why = format!(
        "This company runs as many imports as it may at once ({MAX_RUNNING_IMPORTS}); start the \
         next one when one ends."
    );
    let (task, ()) = start_task(&state, &p, new, move |s| {
        refuse_past(s, &pc, TASK_KIND, MAX_RUNNING_IMPORTS, why)
    })
    .await?;
    let run = Run { state: state.clone(), p, route, view_id, backup };
    let task_id = task.id().to_owned();
    Ok(task.run(|progress| run.task(task_id, source, progress)))
}

/// An import task's context.
struct Run {
    state: web::Data<AppState>,
    p: Principal,
    route: std::sync::Arc<BranchRoute>,
    view_id: String,
    backup: bool,
}

impl Run {
    /// Reads the rows, keeps the backup and imports (the grid checks the references); a failure names
    /// the file's columns and keeps no backup.
    async fn task(
        self,
        task_id: String,
        source: Source,
        progress: Progress,
    ) -> Result<(), TaskError> {
        let columns = source.message_columns();
        let user = self.p.user().to_owned();
        let read = source.rows().await.map_err(task_error)?;
        progress.set(40).await;
        let backup = match self.backup {
            true => Some(keep_backup(&self.state, &self.route).await.map_err(task_error)?),
            false => None,
        };
        progress.set(50).await;
        let imported = self.import(&task_id, read, user, &columns).await;
        // An import that failed changed nothing: the copy of the branch before it is not kept.
        if let (Err(_), Some(id)) = (&imported, backup) {
            let forgotten = exec(&self.state, move |s| s.forget_backup(&id)).await;
            if let Err(err) = forgotten.and_then(|r| r.map_err(ApiError::from)) {
                tracing::warn!(task = %task_id, error = %err.message, "a failed import's backup stays");
            }
        }
        imported
    }

    /// Imports the rows read; a refusal names the file's columns.
    async fn import(
        &self,
        task_id: &str,
        read: Vec<(String, RecordInput)>,
        user: String,
        columns: &[String],
    ) -> Result<(), TaskError> {
        let msg = ImportRecords {
            view_id: self.view_id.clone(),
            rows: read,
            user,
            source_default: self.state.routes.source_default(&self.route.grid_id),
            references: ImportedReferences::Checked(KeyLookup::boxed(&self.state, &self.p)),
        };
        match self.route.addr.send(msg).await.map_err(GridError::from).and_then(|r| r) {
            Ok(count) => {
                tracing::info!(task = %task_id, records = count, "import done");
                Ok(())
            }
            Err(GridError::Write(err)) => {
                let names: Vec<&str> = columns.iter().map(String::as_str).collect();
                let message = task_message(&err, &names);
                Err(TaskError { code: err.code().as_str().to_owned(), message })
            }
            Err(other) => Err(task_error(other.into())),
        }
    }
}

/// A failed import's task error when the rows were not what the grid refused (the file could
/// not be read, the backup not kept, the branch not reached): the failure's code and message,
/// clipped as a refusal's summary is.
fn task_error(err: ApiError) -> TaskError {
    let message = clip(&err.message, MAX_ERROR_BYTES / 2).to_owned();
    TaskError { code: err.code.as_str().to_owned(), message }
}

/// A failed import's task message: the refusal's summary, then its problems (`; `-separated),
/// the file's columns named where a problem is a cell's, at most `MAX_PROBLEMS` of them and
/// `MAX_ERROR_BYTES` in all, ending with `... and N more problems` when some were left out.
fn task_message(err: &WriteError, columns: &[&str]) -> String {
    let mut message = clip(&err.summary_naming(columns), MAX_ERROR_BYTES / 2).to_owned();
    if !err.lists_problems() {
        return message;
    }
    let mut listed = 0usize;
    for line in err.messages(Some(columns)).take(MAX_PROBLEMS) {
        let line = clip(&line, MAX_ERROR_BYTES / 4);
        if message.len() + line.len() + 2 > MAX_ERROR_BYTES - 64 {
            break;
        }
        message.push_str("; ");
        message.push_str(line);
        listed += 1;
    }
    if listed < err.found {
        message.push_str(&format!("; ... and {} more problems", err.found - listed));
    }
    message
}

/// Stores a copy of the branch as it is before the import, and records it as a backup; its id.
async fn keep_backup(state: &AppState, route: &BranchRoute) -> ApiResult<String> {
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
        .map_err(|e| ApiError::new(e.code(), format!("The backup could not be stored: {e}")))?;
    let branch = route.branch_id.clone();
    let kept = id.clone();
    exec(state, move |s| s.record_backup(kept, &branch, records)).await??;
    Ok(id)
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
    let new = NewTask {
        kind: "restore",
        route: route.clone(),
        view_id: None,
        shows: Some((GridStatus::Restoring, vec![backup.branch_id.clone()])),
        creates_branch: None,
    };
    let (task, ()) = start_task(&state, &p, new, |_| Ok(())).await?;
    let (user, state) = (p.user().to_owned(), state.clone());
    Ok(task.run(|_| async move {
        let durability = state.durability.upgrade().ok_or_else(|| {
            ApiError::new(ErrorCode::ServiceUnavailable, "The server is stopping.")
        })?;
        let id = backup.id.clone();
        let saved = web::block(move || durability.load_backup(&id))
            .await
            .map_err(|e| ApiError::internal(format!("the backup reader stopped: {e}")))?
            .map_err(|e| ApiError::new(e.code(), format!("The backup could not be read: {e}")))?;
        Ok::<_, ApiError>(route.addr.send(RestoreRecords { backup: saved, user }).await??)
    }))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(import).service(list_backups).service(restore_backup);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::write_error::{At, Problems};

    #[test]
    fn a_task_message_names_the_files_columns_and_counts_what_it_leaves_out() {
        let mut problems = Problems::default();
        for row in 0..MAX_PROBLEMS + 3 {
            let at = At::cell(&format!("row {}", row + 2), 1);
            problems.add(ErrorCode::BadRequest, at, "value must be a number");
        }
        let err = problems.into_result().expect_err("refused");
        let message = task_message(&err, &["Record ID", "Count"]);
        assert!(message.starts_with(&format!("{} problems were found", MAX_PROBLEMS + 3)));
        assert!(message.contains("; row 2, column \"Count\": value must be a number; row 3,"));
        assert!(message.ends_with("; ... and 3 more problems"), "{message}");
        let mut one = Problems::default();
        one.add(ErrorCode::BadRequest, At::cell("row 7", 9), "x");
        let one = one.into_result().expect_err("refused");
        assert_eq!(task_message(&one, &["Record ID"]), "row 7.cells[9]: x");
    }
}
