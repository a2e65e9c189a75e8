//! `GET /v1/views/<viewId>/export`: the view's records as a CSV (RFC 4180, UTF-8) or XLSX file,
//! Record ID, Path, Last modified by and Last modified time first, then the view's columns (or
//! `columnIds`), filtered and sorted by `query` and `sort` like a listing (decisions.md
//! section 7).
//!
//! The matching rows are found in the branch's published read view on the read pool
//! (`export_source`; the view shares storage until the actor changes it, and the actor's
//! mailbox is never asked but to publish one), so the file shows one instant however long it
//! takes to send. A blocking thread renders 1000 rows at a time into
//! chunks of about 64 KiB sent through a small channel to the response stream: a large export
//! holds a few chunks, never the file. An XLSX file is written by rust_xlsxwriter in its
//! constant-memory mode to a temporary file, then streamed the same way and removed.

use std::path::PathBuf;

use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::{get, web, HttpRequest, HttpResponse};
use tokio::sync::mpsc;
use utoipa_actix_web::service_config::ServiceConfig;

use super::listing::parse_list_params;
use super::records::export_source;
use super::view_route;
use crate::auth::{Principal, Privilege};
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::reads::{ExportQuery, ExportSource};
use crate::grid::codec::{export_text, format_timestamp};
use crate::grid::schema::ColumnDef;
use crate::grid::value::CellValue;
use crate::state::AppState;

/// Rows read from the branch copy at a time.
const ROWS_PER_READ: usize = 1000;
/// Size of the chunks sent to the client.
const CHUNK_BYTES: usize = 64 * 1024;

/// The header row of the file.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FileHeader {
    ColumnName,
    ColumnId,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum FileType {
    Csv,
    Xlsx,
}

impl FileHeader {
    fn names(self, columns: &[ColumnDef]) -> Option<Vec<String>> {
        let predefined = match self {
            FileHeader::ColumnName => {
                ["Record ID", "Path", "Last modified by", "Last modified time"]
            }
            FileHeader::ColumnId => ["_recordId", "_path", "_lastModifiedBy", "_lastModifiedTime"],
            FileHeader::None => return None,
        };
        let mut names: Vec<String> = predefined.iter().map(|n| (*n).to_owned()).collect();
        names.extend(columns.iter().map(|c| match self {
            FileHeader::ColumnId => c.id.clone(),
            FileHeader::ColumnName | FileHeader::None => c.name.clone(),
        }));
        Some(names)
    }
}

#[utoipa::path(tag = "records", params(
    ("fileHeader" = Option<String>, Query, description = "columnName (default), columnId or none"),
    ("columnIds" = Option<String>, Query, description = "comma-separated column ids"),
    ("query" = Option<String>, Query, description = "as for listing records"),
    ("sort" = Option<String>, Query, description = "as for listing records"),
    ("type" = Option<String>, Query, description = "csv (default) or xlsx"),
), responses((status = 200, description = "the file")))]
#[get("/v1/views/{viewId}/export")]
async fn export_view(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let params = parse_list_params(req.query_string())?;
    let option = |name: &str| params.others.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let file_header = match option("fileHeader").map(String::as_str) {
        None | Some("columnName") => FileHeader::ColumnName,
        Some("columnId") => FileHeader::ColumnId,
        Some("none") => FileHeader::None,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fileHeader \"{other}\" is invalid; expected columnName, columnId or none."
            )))
        }
    };
    let file_type = match option("type").map(|t| t.to_ascii_lowercase()).as_deref() {
        None | Some("csv") => FileType::Csv,
        Some("xlsx") => FileType::Xlsx,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "type \"{other}\" is invalid; expected csv or xlsx."
            )))
        }
    };
    let view_id = view_id.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let query = ExportQuery {
        view_id: view_id.clone(),
        column_ids: params.column_ids,
        filters: params.filters,
        sort: params.sort,
    };
    let source = export_source(&state, &route, query).await?;
    let (tx, mut rx) = mpsc::channel::<Bytes>(4);
    let temp_dir = state.data_dir.join("exports");
    let extension = match file_type {
        FileType::Csv => "csv",
        FileType::Xlsx => "xlsx",
    };
    tokio::task::spawn_blocking(move || {
        let written = match file_type {
            FileType::Csv => write_csv(&source, file_header, &tx),
            FileType::Xlsx => write_xlsx(&source, file_header, &temp_dir, &tx),
        };
        if let Err(message) = written {
            tracing::warn!(%message, "view export stopped");
        }
    });
    let body = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|chunk| chunk.map(Ok::<Bytes, actix_web::Error>))
    });
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{view_id}.{extension}\""),
        ))
        .streaming(body))
}

/// The predefined columns the file starts with: record id, path, last modified by and time.
const PREDEFINED: usize = 4;

/// Calls `emit` with each row's predefined fields (record id, path, last modified by, last
/// modified time) and the values of the export's columns.
fn for_each_row(
    source: &ExportSource,
    mut emit: impl FnMut([&str; PREDEFINED], &mut dyn Iterator<Item = &CellValue>) -> Result<(), String>,
) -> Result<(), String> {
    let columns: Vec<&ColumnDef> = source.columns.iter().collect();
    for rows in source.rows.chunks(ROWS_PER_READ) {
        for record in source.view.state.read_rows(&columns, rows.iter().copied()) {
            let time = format_timestamp(record.time_ms);
            let predefined =
                [record.id.as_str(), record.path.as_str(), record.user.as_str(), &time];
            emit(predefined, &mut record.cells.iter().map(|c| &c.value))?;
        }
    }
    Ok(())
}

/// A writer that sends what it is given in chunks of about [`CHUNK_BYTES`]; writing fails once
/// the client has gone.
struct ChunkSender<'a> {
    buf: Vec<u8>,
    tx: &'a mpsc::Sender<Bytes>,
}

impl<'a> ChunkSender<'a> {
    fn new(tx: &'a mpsc::Sender<Bytes>) -> ChunkSender<'a> {
        ChunkSender { buf: Vec::with_capacity(CHUNK_BYTES + 4096), tx }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk =
            Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES + 4096)));
        self.tx.blocking_send(chunk).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
        })
    }
}

impl std::io::Write for ChunkSender<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

fn write_csv(
    source: &ExportSource,
    file_header: FileHeader,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), String> {
    let mut out = csv::Writer::from_writer(ChunkSender::new(tx));
    let failed = |e: csv::Error| format!("CSV: {e}");
    if let Some(names) = file_header.names(&source.columns) {
        out.write_record(&names).map_err(failed)?;
    }
    for_each_row(source, |predefined, cells| {
        let mut fields: Vec<String> = predefined.iter().map(|f| (*f).to_owned()).collect();
        fields.extend(cells.map(export_text));
        out.write_record(&fields).map_err(failed)
    })?;
    out.flush().map_err(|e| format!("CSV: {e}"))
}

/// The XLSX file in rust_xlsxwriter's constant-memory mode, then streamed from disk.
fn write_xlsx(
    source: &ExportSource,
    file_header: FileHeader,
    temp_dir: &std::path::Path,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), String> {
    use rust_xlsxwriter::{Format, Workbook};
    std::fs::create_dir_all(temp_dir).map_err(|e| format!("{}: {e}", temp_dir.display()))?;
    let path = TempFile(temp_dir.join(format!("view-export-{}.xlsx", crate::ids::generate())));
    let failed = |e: rust_xlsxwriter::XlsxError| format!("XLSX: {e}");
    let mut workbook = Workbook::new();
    workbook.set_tempdir(temp_dir).map_err(failed)?;
    let sheet = workbook.add_worksheet_with_constant_memory();
    let bold = Format::new().set_bold();
    let mut line = 0u32;
    if let Some(names) = file_header.names(&source.columns) {
        for (col, name) in names.iter().enumerate() {
            sheet.write_string_with_format(0, col as u16, name, &bold).map_err(failed)?;
            sheet
                .set_column_width(col as u16, if col < PREDEFINED { 24.0 } else { 32.0 })
                .map_err(failed)?;
        }
        sheet.set_freeze_panes(1, 0).map_err(failed)?;
        line = 1;
    }
    for_each_row(source, |predefined, cells| {
        for (col, field) in predefined.iter().enumerate() {
            sheet.write_string(line, col as u16, *field).map_err(failed)?;
        }
        for (at, value) in cells.enumerate() {
            let col = (at + PREDEFINED) as u16;
            match value {
                CellValue::Empty => {}
                CellValue::Number(n) if n.is_finite() => {
                    sheet.write_number(line, col, *n).map_err(failed)?;
                }
                CellValue::Boolean(b) => {
                    sheet.write_boolean(line, col, *b).map_err(failed)?;
                }
                other => {
                    sheet.write_string(line, col, export_text(other)).map_err(failed)?;
                }
            }
        }
        line = line.checked_add(1).ok_or("too many rows for a spreadsheet")?;
        Ok(())
    })?;
    workbook.save(&path.0).map_err(failed)?;
    let mut file =
        std::fs::File::open(&path.0).map_err(|e| format!("{}: {e}", path.0.display()))?;
    let mut out = ChunkSender::new(tx);
    std::io::copy(&mut file, &mut out).map_err(|e| format!("{}: {e}", path.0.display()))?;
    std::io::Write::flush(&mut out).map_err(|e| format!("XLSX: {e}"))
}

/// A file removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(export_view);
}
