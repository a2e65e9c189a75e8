//! `GET /v1/views/<viewId>/export`: the view's records as a file, filtered and sorted by `query`
//! and `sort` like a listing, with the view's columns (or `columnIds`) (decisions.md section 7).
//! `type` is one of the OpenAPI's `FileType`s:
//! - `csv` (RFC 4180, UTF-8), `tsv` (the same rows with tabs), `xlsx` and `html` (one `<table>`
//!   of the same rows, every text escaped): Record ID, Path, Last modified by and Last
//!   modified time first, then the columns, headed as `fileHeader` says (`io::export`);
//! - `json`: an array of the records exactly as the record listing renders them (reference
//!   cells with their `referencedIds` and the referenced values), which an import with
//!   `type=json` reads back;
//! - `po`: a zip archive of one gettext file per target language column (`io::po`);
//! - `xls` (the old binary Excel format) is refused: 400 naming `xlsx`.
//!
//! The matching rows are found in the branch's published read view on the read pool
//! (`export_source`; the view shares storage until the actor changes it, and the actor's
//! mailbox is never asked but to publish one), so the file shows one instant however long it
//! takes to send. A file format is written on a blocking thread into chunks of about 64 KiB
//! sent through a small channel to the response stream: a large export holds a few chunks,
//! never the file. An XLSX file is written by rust_xlsxwriter in its constant-memory mode to a
//! temporary file (stopped once the client is gone), then streamed the same way and removed.
//! A JSON export is read `JSON_RECORDS_PER_CHUNK` records at a time off the HTTP worker, each
//! chunk rendered as a listing page is (reference cells resolved on the worker, as a
//! listing's are). Either way a refusal comes before the answer starts, never as a cut file:
//! the key's access to every referenced grid of a JSON export is checked first, and a written
//! file's first chunk (or its writer's error, such as an XLSX cell over Excel's limit) is
//! awaited before the answer's head is sent.

use std::ops::Range;
use std::sync::Arc;

use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::{get, web, HttpRequest, HttpResponse};
use tokio::sync::mpsc;
use utoipa_actix_web::service_config::ServiceConfig;

use super::listing::parse_list_params;
use super::records::{export_source, record_body, RecordBody};
use super::references::{check_reference_access, resolve_references, ReferenceReader};
use super::view_route;
use crate::auth::{Principal, Privilege};
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::reads::{ExportQuery, ExportSource};
use crate::grid::read::RecordOut;
use crate::grid::read_json::renders_alone;
use crate::grid::references::ReferenceColumns;
use crate::grid::schema::ColumnDef;
use crate::io::error::{FileError, FileResult};
use crate::io::export::{
    write_view_csv, write_view_html, write_view_xlsx, xlsx_rows_fit, FileHeader,
};
use crate::io::po::{po_files, write_view_po};
use crate::state::AppState;

/// Size of the chunks sent to the client.
const CHUNK_BYTES: usize = 64 * 1024;

/// Records read and rendered at a time by a JSON export.
const JSON_RECORDS_PER_CHUNK: usize = 200;

/// The file's type (the OpenAPI's `FileType`, but `xls`): JSON, rendered as the listing
/// renders records, or a file format written on a blocking thread.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FileType {
    Json,
    Written(Format),
}

/// A file format written by `io`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    Csv,
    /// CSV's layout with tabs between the fields.
    Tsv,
    Xlsx,
    Html,
    Po,
}

impl FileType {
    /// The type `type` names, in any case (absent: CSV).
    fn parse(text: Option<&str>) -> ApiResult<FileType> {
        match text.map(str::to_ascii_lowercase).as_deref() {
            None | Some("csv") => Ok(FileType::Written(Format::Csv)),
            Some("tsv") => Ok(FileType::Written(Format::Tsv)),
            Some("xlsx") => Ok(FileType::Written(Format::Xlsx)),
            Some("json") => Ok(FileType::Json),
            Some("html") => Ok(FileType::Written(Format::Html)),
            Some("po") => Ok(FileType::Written(Format::Po)),
            Some("xls") => Err(ApiError::bad_request(
                "type xls (the old binary Excel format) is not written; use type=xlsx, which \
                 every spreadsheet application reads.",
            )),
            Some(other) => Err(ApiError::bad_request(format!(
                "type \"{other}\" is invalid; expected csv, tsv, xlsx, json, html or po."
            ))),
        }
    }

    /// The downloaded file's name: `<viewId>.<extension>`.
    fn file_name(self, view_id: &str) -> String {
        let extension = match self {
            FileType::Json => "json",
            FileType::Written(Format::Csv) => "csv",
            FileType::Written(Format::Tsv) => "tsv",
            FileType::Written(Format::Xlsx) => "xlsx",
            FileType::Written(Format::Html) => "html",
            FileType::Written(Format::Po) => "po.zip",
        };
        format!("{view_id}.{extension}")
    }

    /// The answer's head: an attachment, with the type's content type. The spreadsheets and
    /// delimited files are `application/octet-stream` (decisions.md section 3); the JSON is
    /// JSON, the HTML is HTML (that may load nothing, should a browser show it), the archive
    /// a zip.
    fn response(self, view_id: &str) -> actix_web::HttpResponseBuilder {
        let mut response = super::files::attachment(&self.file_name(view_id));
        match self {
            FileType::Written(Format::Csv | Format::Tsv | Format::Xlsx) => {}
            FileType::Json => {
                response.content_type("application/json");
            }
            FileType::Written(Format::Html) => {
                response
                    .content_type("text/html; charset=utf-8")
                    .insert_header((header::CONTENT_SECURITY_POLICY, "default-src 'none'"))
                    .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
            }
            FileType::Written(Format::Po) => {
                response.content_type("application/zip");
            }
        }
        response
    }
}

#[utoipa::path(tag = "records", params(
    ("fileHeader" = Option<String>, Query, description = "columnName (default), columnId or none"),
    ("columnIds" = Option<String>, Query, description = "comma-separated column ids"),
    ("query" = Option<String>, Query, description = "as for listing records"),
    ("sort" = Option<String>, Query, description = "as for listing records"),
    ("type" = Option<String>, Query, description = "csv (default), tsv, xlsx, json (the records as listed), html (one table) or po (a zip of a gettext file per target language); xls is refused"),
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
    let (mut chunks, mut first) = match file_type {
        FileType::Json => (stream_json(state.into_inner(), p, route, source).await?, None),
        FileType::Written(format) => {
            let writer = file_writer(&state, format, file_header, &source, &view_id)?;
            let (mut chunks, failed) = write_in_background(source, writer);
            // The first chunk (or the writer's refusal) before the answer starts: a file that
            // cannot be written (an XLSX cell over Excel's limit) is an error, not a 200 cut
            // short. A HEAD waits for it too, so that it answers the GET's status; then its body
            // is dropped, which stops the writer.
            match chunks.recv().await {
                Some(chunk) => (chunks, Some(chunk)),
                None => match failed.await {
                    Ok(err) => return Err(err.into()),
                    Err(_) => (chunks, None),
                },
            }
        }
    };
    let body = futures_util::stream::poll_fn(move |cx| match first.take() {
        Some(chunk) => std::task::Poll::Ready(Some(Ok(chunk))),
        None => chunks.poll_recv(cx).map(|chunk| chunk.map(Ok::<Bytes, actix_web::Error>)),
    });
    Ok(file_type.response(&view_id).streaming(body))
}

/// Writes a file of an export into the sink it is given (on a blocking thread).
type FileWriter = Box<dyn FnOnce(&ExportSource, ChunkSender<'_>) -> FileResult<()> + Send>;

/// The writer of a file of `format`. A PO export's files are planned here, so that a view
/// they do not fit is refused before the answer starts.
fn file_writer(
    state: &AppState,
    format: Format,
    file_header: FileHeader,
    source: &ExportSource,
    view_id: &str,
) -> ApiResult<FileWriter> {
    let schema = &source.view.state.schema;
    let view = schema.view(view_id);
    Ok(match format {
        Format::Csv => Box::new(move |s, sink| write_view_csv(s, file_header, b',', sink)),
        Format::Tsv => Box::new(move |s, sink| write_view_csv(s, file_header, b'\t', sink)),
        Format::Xlsx => {
            let header_rows = usize::from(file_header.names(&source.columns).is_some());
            xlsx_rows_fit(source.rows.len(), header_rows)?;
            let temp_dir = state.data_dir.join("exports");
            Box::new(move |s, mut sink| {
                let gone = sink.watcher();
                write_view_xlsx(s, file_header, &temp_dir, &gone, &mut sink)
            })
        }
        Format::Html => {
            let title = view.map_or_else(|| view_id.to_owned(), |v| v.name.clone());
            Box::new(move |s, sink| write_view_html(s, file_header, &title, sink))
        }
        Format::Po => {
            let view = view.ok_or_else(|| ApiError::internal("the exported view is missing"))?;
            let files = po_files(schema, view, &source.columns)?;
            Box::new(move |s, sink| write_view_po(s, &files, sink))
        }
    })
}

/// Runs `writer` over `source` on a blocking thread: the chunks it writes, in order, and why
/// it stopped if it failed.
fn write_in_background(
    source: ExportSource,
    writer: FileWriter,
) -> (mpsc::Receiver<Bytes>, tokio::sync::oneshot::Receiver<FileError>) {
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let (failed, failure) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        if let Err(err) = writer(&source, ChunkSender::new(&tx)) {
            tracing::warn!(message = %err, "view export stopped");
            let _ = failed.send(err);
        }
    });
    (rx, failure)
}

/// A JSON export's chunks: `[`, the records rendered `JSON_RECORDS_PER_CHUNK` at a time
/// (`json_chunk`) with commas between, `]`. The first chunk is read before this answers.
async fn stream_json(
    state: Arc<AppState>,
    p: Principal,
    route: Arc<BranchRoute>,
    source: ExportSource,
) -> ApiResult<mpsc::Receiver<Bytes>> {
    // Every chunk resolves its reference cells as the key may: a key that may not read a grid
    // an exported column points at is refused (403) here, before the answer starts, rather
    // than at the first chunk holding such a cell, which would cut the file short.
    let referenced: ReferenceColumns = (source.columns.iter())
        .filter(|c| c.shows_referenced())
        .filter_map(|c| Some((c.id.clone(), c.reference.clone()?)))
        .collect();
    check_reference_access(&state, &p, &referenced).await?;
    let source = Arc::new(source);
    let total = source.rows.len();
    let mut ranges = (0..total)
        .step_by(JSON_RECORDS_PER_CHUNK)
        .map(move |start| start..(start + JSON_RECORDS_PER_CHUNK).min(total));
    let first = match ranges.next() {
        Some(range) => Some(json_chunk(&state, &p, &route, &source, range).await?),
        None => None,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let Some(first) = first else {
        // An empty channel takes a chunk at once.
        let _ = tx.try_send(Bytes::from_static(b"[]"));
        return Ok(rx);
    };
    actix_web::rt::spawn(async move {
        let mut chunk = first;
        if tx.send(Bytes::from_static(b"[")).await.is_err() {
            return;
        }
        loop {
            if tx.send(chunk).await.is_err() {
                return;
            }
            let Some(range) = ranges.next() else { break };
            chunk = match json_chunk(&state, &p, &route, &source, range).await {
                Ok(chunk) => chunk,
                Err(err) => {
                    tracing::warn!(message = %err.message, "view export stopped");
                    return;
                }
            };
            if tx.send(Bytes::from_static(b",")).await.is_err() {
                return;
            }
        }
        let _ = tx.send(Bytes::from_static(b"]")).await;
    });
    Ok(rx)
}

/// Records read for a chunk of a JSON export, off the HTTP worker.
enum JsonChunk {
    /// Rendered straight from the columns (`GridState::render_rows`), a JSON array.
    Rendered(Vec<u8>),
    /// Read as records, whose reference cells are resolved before they are rendered.
    Records(Vec<RecordOut>),
}

/// The records at `range` of `source` as the record listing renders a page of them, without
/// the array's brackets (the range is never empty).
async fn json_chunk(
    state: &AppState,
    p: &Principal,
    route: &BranchRoute,
    source: &Arc<ExportSource>,
    range: Range<usize>,
) -> ApiResult<Bytes> {
    let read = source.clone();
    let chunk = web::block(move || {
        let columns: Vec<&ColumnDef> = read.columns.iter().collect();
        let rows = read.rows[range].iter().copied();
        if renders_alone(&columns) {
            JsonChunk::Rendered(read.view.state.render_rows(&columns, rows).into_array())
        } else {
            JsonChunk::Records(read.view.state.read_rows(&columns, rows))
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("the export's reader stopped: {e}")))?;
    let array = match chunk {
        JsonChunk::Rendered(json) => json,
        JsonChunk::Records(mut records) => {
            resolve_references(state, ReferenceReader::Refuse(p), route, &mut records).await?;
            let body: Vec<RecordBody<'_>> = records.iter().map(record_body).collect();
            serde_json::to_vec(&body)
                .map_err(|e| ApiError::internal(format!("rendering records: {e}")))?
        }
    };
    let array = Bytes::from(array);
    Ok(array.slice(1..array.len() - 1))
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
    Ok((file_header, FileType::parse(option("type").map(String::as_str))?))
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

    /// Whether the client reading the chunks went away, as a function a writer can call while
    /// it holds the sender.
    pub(crate) fn watcher(&self) -> impl Fn() -> bool {
        let tx = self.tx.clone();
        move || tx.is_closed()
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
