//! A memory's files: `POST /v1/transmems/upload` (a new memory from a TMX file),
//! `POST /v1/transmems/<tmId>/import` (a TMX file's segments added or updated) and
//! `GET /v1/transmems/<tmId>/export` (TMX, CSV or XLSX).
//!
//! An upload's `file` part is streamed to `<data dir>/imports` under the TMX size limit
//! (`--tmx-upload-limit`, 413 past it), then read on the blocking pool (`tm::tmx`: no DTDs or
//! entities, bounded nesting and sizes; 400 for a file that is not TMX) into segments, all of
//! them before anything is written: a refused file changes nothing. Then one flushed write.
//! An export is written on the blocking pool into the response as it streams.

use std::io::{BufReader, Write};
use std::path::PathBuf;

use actix_multipart::Multipart;
use actix_web::web::{self, Bytes};
use actix_web::{get, post, HttpRequest, HttpResponse};
use tokio::sync::mpsc;

use super::{exec, transmem_body, TmRefused};
use crate::api::multipart::{bad_multipart, part_to_file, skip_part, Budget};
use crate::api::view_export::ChunkSender;
use crate::api::{created, ok, query_pairs, storage_error};
use crate::auth::{Principal, Privilege};
use crate::catalog::transmems::{TransMemFields, MAX_NAME_CHARS};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::tm::segment::Segment;
use crate::tm::store::{TmStoreError, MAX_SEGMENTS};
use crate::tm::text::{language_key, valid_language};
use crate::tm::tmx::{read_tmx, write_tmx, TmxError};
use crate::tm::{export_units, unit_segments, ExportFilter};
use futures_util::StreamExt;

/// An uploaded file, removed when dropped.
struct Upload {
    path: PathBuf,
    name: Option<String>,
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Streams the body's `file` part to disk (other parts drained); 400 requestParameterMissing
/// without one.
async fn receive(state: &AppState, req: &HttpRequest, payload: web::Payload) -> ApiResult<Upload> {
    let mut body = Multipart::new(req.headers(), payload);
    let mut budget = Budget::default();
    let mut upload = None;
    while let Some(field) = body.next().await {
        let mut field = field.map_err(bad_multipart)?;
        budget.part()?;
        if field.name() == Some("file") && upload.is_none() {
            let name =
                field.content_disposition().and_then(|d| d.get_filename()).map(str::to_owned);
            let path =
                state.data_dir.join("imports").join(format!("{}.tmx", crate::ids::generate()));
            let file = Upload { path, name };
            part_to_file(&mut field, &file.path, state.transmems.upload_limit).await?;
            upload = Some(file);
        } else {
            skip_part(&mut field).await?;
        }
    }
    upload.ok_or_else(|| ApiError::missing_parameter("file"))
}

/// Why an uploaded file's segments could not be read.
#[derive(Debug, thiserror::Error)]
enum ReadRefused {
    #[error(transparent)]
    Tmx(#[from] TmxError),
    #[error(transparent)]
    Store(#[from] TmStoreError),
    #[error("reading the upload failed: {0}")]
    Io(#[from] std::io::Error),
}

impl From<ReadRefused> for ApiError {
    fn from(err: ReadRefused) -> ApiError {
        match err {
            ReadRefused::Tmx(e) => e.into(),
            ReadRefused::Store(e) => e.into(),
            ReadRefused::Io(e) => storage_error("reading the upload", e),
        }
    }
}

/// Every segment of an uploaded TMX file (at most `MAX_SEGMENTS`).
fn read_segments(upload: &Upload, user: &str) -> Result<Vec<Segment>, ReadRefused> {
    let file = std::fs::File::open(&upload.path)?;
    let now = chrono::Utc::now().timestamp_millis();
    let mut segments = Vec::new();
    read_tmx(BufReader::new(file), |header, unit| {
        segments.extend(unit_segments(header, &unit, user, now));
        if segments.len() > MAX_SEGMENTS {
            return Err(TmxError::TooMany {
                unit: 0,
                what: "segments in the file",
                limit: MAX_SEGMENTS,
            });
        }
        Ok(())
    })?;
    Ok(segments)
}

/// A memory's name from an uploaded file's name (its stem), else a default.
fn name_of(file: Option<&str>) -> String {
    let stem = file
        .map(|f| f.rsplit(['/', '\\']).next().unwrap_or(f))
        .map(|f| f.rsplit_once('.').map_or(f, |(stem, _)| stem).trim())
        .filter(|s| !s.is_empty());
    let name: String = stem.unwrap_or("Translation memory").chars().take(MAX_NAME_CHARS).collect();
    name
}

#[utoipa::path(tag = "transmem", responses((status = 201, body = super::TransMemBody)))]
#[post("/v1/transmems/upload")]
pub(super) async fn upload_transmem(
    state: web::Data<AppState>,
    p: Principal,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    p.require_company_privilege(Privilege::Manage)?;
    let upload = receive(&state, &req, payload).await?;
    let user = p.user().to_owned();
    let (upload, segments) = super::blocking(move || {
        let segments = read_segments(&upload, &user);
        (upload, segments)
    })
    .await?;
    let segments = segments?;
    let fields =
        TransMemFields { name: Some(name_of(upload.name.as_deref())), ..TransMemFields::default() };
    let creator = p.clone();
    let memory = exec(&state, move |s| s.create_transmem(&creator, fields)).await??;
    let change = super::replica::TmChange::Write { segments, position: None };
    if let Err(err) = state.transmems.change(&memory.id, change).await {
        let id = memory.id.clone();
        exec(&state, move |s| s.delete_transmem(&p, &id)).await??;
        return Err(err);
    }
    super::feed::start(&state, &memory.id);
    created(&transmem_body(memory))
}

#[utoipa::path(tag = "transmem", responses((status = 200, description = "the segments added and updated")))]
#[post("/v1/transmems/{tmId}/import")]
pub(super) async fn import_transmem(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let checker = p.clone();
    let memory = exec(&state, move |s| s.transmem(&checker, &id, Privilege::Manage)).await??;
    let upload = receive(&state, &req, payload).await?;
    let user = p.user().to_owned();
    let segments = super::blocking(move || read_segments(&upload, &user)).await??;
    let change = super::replica::TmChange::Write { segments, position: None };
    ok(&state.transmems.change(&memory.id, change).await?)
}

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Tmx,
    Csv,
    Xlsx,
}

fn export_options(req: &HttpRequest) -> ApiResult<(Format, ExportFilter, Option<String>)> {
    let mut format = Format::Tmx;
    let mut filter = ExportFilter::default();
    let mut source = None;
    for (key, value) in query_pairs(req)? {
        match key.as_str() {
            "format" => {
                format = match value.to_ascii_lowercase().as_str() {
                    "tmx" => Format::Tmx,
                    "csv" => Format::Csv,
                    "xlsx" => Format::Xlsx,
                    _ => {
                        return Err(TmRefused::Format(
                            crate::io::csv_import::clip(&value, 32).into(),
                        )
                        .into())
                    }
                }
            }
            "sourceLang" if !value.is_empty() => {
                if !valid_language(&value) {
                    return Err(TmRefused::Language(
                        crate::io::csv_import::clip(&value, 64).into(),
                    )
                    .into());
                }
                filter.source_lang = Some(language_key(&value));
                source = Some(value);
            }
            "targetLangs" => {
                for lang in value.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                    if !valid_language(lang) {
                        return Err(TmRefused::Language(
                            crate::io::csv_import::clip(lang, 64).into(),
                        )
                        .into());
                    }
                    filter.target_langs.get_or_insert_with(Vec::new).push(language_key(lang));
                }
            }
            _ => {}
        }
    }
    Ok((format, filter, source))
}

#[utoipa::path(tag = "transmem", params(
    ("format" = Option<String>, Query, description = "tmx (default), csv or xlsx"),
    ("sourceLang" = Option<String>, Query, description = "only segments from this language"),
    ("targetLangs" = Option<Vec<String>>, Query, description = "only segments into these languages"),
), responses((status = 200, content_type = "application/octet-stream")))]
#[get("/v1/transmems/{tmId}/export")]
pub(super) async fn export_transmem(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (format, filter, source) = export_options(&req)?;
    let id = id.into_inner();
    let memory = exec(&state, move |s| s.transmem(&p, &id, Privilege::Read)).await??;
    state.transmems.caught_up(&memory.id).await?;
    let store = state.transmems.segments.clone();
    let id = memory.id.clone();
    let segments = super::blocking(move || store.memory(&id)).await??;
    let (tx, mut rx) = mpsc::channel::<Bytes>(4);
    let temp_dir = state.data_dir.join("exports");
    tokio::task::spawn_blocking(move || {
        let mut sink = ChunkSender::new(&tx);
        let written = match format {
            Format::Tmx => {
                let units = export_units(segments.scan(), filter).map_while(Result::ok);
                write_tmx(&mut sink, source.as_deref(), units).map_err(|e| e.to_string())
            }
            Format::Csv => crate::tm::table::write_csv(&segments, &filter, &mut sink),
            Format::Xlsx => crate::tm::table::write_xlsx(&segments, &filter, &temp_dir, &mut sink),
        };
        if let Err(message) = written.and_then(|()| sink.flush().map_err(|e| e.to_string())) {
            tracing::warn!(%message, "translation memory export stopped");
        }
    });
    let body = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|chunk| chunk.map(Ok::<Bytes, actix_web::Error>))
    });
    let extension = match format {
        Format::Tmx => "tmx",
        Format::Csv => "csv",
        Format::Xlsx => "xlsx",
    };
    Ok(crate::api::files::attachment(&format!("{}.{extension}", memory.id)).streaming(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_are_named_after_the_file_stem() {
        assert_eq!(name_of(Some("game-ui.tmx")), "game-ui");
        assert_eq!(name_of(Some("C:\\tm\\legal.v2.tmx")), "legal.v2");
        assert_eq!(name_of(Some(".tmx")), "Translation memory");
        assert_eq!(name_of(None), "Translation memory");
        assert_eq!(name_of(Some(&"x".repeat(300))).chars().count(), MAX_NAME_CHARS);
    }
}
