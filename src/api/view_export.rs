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

use actix_web::web::Bytes;
use actix_web::{get, web, HttpRequest, HttpResponse};
use tokio::sync::mpsc;
use utoipa_actix_web::service_config::ServiceConfig;

use super::listing::parse_list_params;
use super::records::export_source;
use super::view_route;
use crate::auth::{Principal, Privilege};
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::reads::ExportQuery;
use crate::io::export::{write_view_csv, write_view_xlsx, FileHeader};
use crate::state::AppState;

/// Size of the chunks sent to the client.
const CHUNK_BYTES: usize = 64 * 1024;

/// The file's type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FileType {
    Csv,
    /// CSV's layout with tabs between the fields (the OpenAPI's `FileType` `tsv`).
    Tsv,
    Xlsx,
}

#[utoipa::path(tag = "records", params(
    ("fileHeader" = Option<String>, Query, description = "columnName (default), columnId or none"),
    ("columnIds" = Option<String>, Query, description = "comma-separated column ids"),
    ("query" = Option<String>, Query, description = "as for listing records"),
    ("sort" = Option<String>, Query, description = "as for listing records"),
    ("type" = Option<String>, Query, description = "csv (default), tsv or xlsx"),
), responses((status = 200, description = "the file")))]
#[get("/v1/views/{viewId}/export")]
async fn export_view(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let params = parse_list_params(req.query_string())?;
    let (file_header, file_type) = file_options(&params.others)?;
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
        FileType::Tsv => "tsv",
        FileType::Xlsx => "xlsx",
    };
    tokio::task::spawn_blocking(move || {
        let written = match file_type {
            FileType::Csv => write_view_csv(&source, file_header, b',', ChunkSender::new(&tx)),
            FileType::Tsv => write_view_csv(&source, file_header, b'\t', ChunkSender::new(&tx)),
            FileType::Xlsx => {
                write_view_xlsx(&source, file_header, &temp_dir, &mut ChunkSender::new(&tx))
            }
        };
        if let Err(message) = written {
            tracing::warn!(%message, "view export stopped");
        }
    });
    let body = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|chunk| chunk.map(Ok::<Bytes, actix_web::Error>))
    });
    Ok(super::files::attachment(&format!("{view_id}.{extension}")).streaming(body))
}

/// The `fileHeader` and `type` options of an export (defaults: column names, CSV).
fn file_options(others: &[(String, String)]) -> ApiResult<(FileHeader, FileType)> {
    let option = |name: &str| others.iter().find(|(k, _)| k == name).map(|(_, v)| v);
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
        Some("tsv") => FileType::Tsv,
        Some("xlsx") => FileType::Xlsx,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "type \"{other}\" is invalid; expected csv, tsv or xlsx."
            )))
        }
    };
    Ok((file_header, file_type))
}

/// A writer that sends what it is given in chunks of about [`CHUNK_BYTES`]; writing fails once
/// the client has gone. Every streamed export writes through it (views, translation memories).
pub(crate) struct ChunkSender<'a> {
    buf: Vec<u8>,
    tx: &'a mpsc::Sender<Bytes>,
}

impl<'a> ChunkSender<'a> {
    pub(crate) fn new(tx: &'a mpsc::Sender<Bytes>) -> ChunkSender<'a> {
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

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(export_view);
}
