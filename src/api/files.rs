//! Files (decisions.md section 10): `POST /v1/views/<viewId>/files` (multipart `file`, with
//! `recordId`, `columnId` and optional `path` as form fields or query parameters) stores the
//! bytes under `<data dir>/files/<id>` (temporary file, fsync, rename), records the metadata in
//! the catalogue, and appends the id to the record's files cell through the WAL; `GET
//! .../files/<id>` streams the bytes from disk with their content type and original name;
//! `DELETE .../files?recordId=&columnId=` with `{"ids": [...]}` takes ids out of the cell. The
//! zip upload (`api::files_zip`) shares the receiving and storing helpers here.
//!
//! A file over `MAX_FILE_BYTES` is 413 and leaves nothing behind; a column that is not of type
//! files is 400 `columnIsNotFilesType`. A download is served only while a live record of the
//! view's branch holds the id in a files column the view shows (else 404 `fileIsNotFound`). The
//! bytes of a removed id stay on disk while another branch, a backup or a history entry may
//! still hold the id; the collector (`catalog::collector`) removes them once none does, and
//! every file of a grid goes when the grid is deleted (`catalog::files`).

use std::path::{Path, PathBuf};

use actix::Addr;
use actix_multipart::Multipart;
use actix_web::body::SizedStream;
use actix_web::http::header;
use actix_web::{delete, get, mime, post, web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use utoipa_actix_web::service_config::ServiceConfig;

use super::multipart::{bad_multipart, part_to_file, skip_part, Budget};
use super::{created, exec, no_content, percent_encode, query_pairs, storage_error, view_route};
use crate::api::sized_json::JsonBytes;
use crate::auth::{Principal, Privilege};
use crate::catalog::files::files_dir;
use crate::catalog::model::{now_timestamp, FileMeta};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{ChangeFiles, FilesChange, HoldsFile};
use crate::grid::error::GridError;
use crate::grid::read::RecordOut;
use crate::grid::GridActor;
use crate::ids;
use crate::state::AppState;

/// The largest file accepted.
pub const MAX_FILE_BYTES: u64 = 100 * 1024 * 1024;
/// The largest form field (record id, column id, path).
const MAX_FIELD: usize = 4096;
/// The form fields an upload reads.
const FIELDS: [&str; 3] = ["recordId", "columnId", "path"];
/// The size of the chunks a download is read and sent in.
const DOWNLOAD_CHUNK: usize = 64 * 1024;

/// A file as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileBody<'a> {
    pub id: &'a str,
    pub original_name: &'a str,
    pub content_type: &'a str,
    pub size: u64,
}

pub fn file_body(meta: &FileMeta) -> FileBody<'_> {
    FileBody {
        id: &meta.id,
        original_name: &meta.original_name,
        content_type: &meta.content_type,
        size: meta.size,
    }
}

/// A new file id: 14 random characters and the original name's extension (letters and digits
/// only, at most 10), as decisions.md section 2 and 10 say.
pub(super) fn file_id(original: &str) -> String {
    format!(
        "{}{}",
        ids::generate(),
        extension(original).map(|e| format!(".{e}")).unwrap_or_default()
    )
}

/// A name's extension, lowercased, when it is plain (letters and digits, at most 10).
fn extension(name: &str) -> Option<String> {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| !e.is_empty() && e.len() <= 10 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(str::to_ascii_lowercase)
}

/// The content type of a file that came without one (a zip entry), from its extension;
/// `application/octet-stream` for the rest.
pub(super) fn content_type_for(name: &str) -> &'static str {
    match extension(name).as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("bmp") => "image/bmp",
        Some("ico") => "image/vnd.microsoft.icon",
        Some("tif" | "tiff") => "image/tiff",
        Some("txt") => "text/plain",
        Some("csv") => "text/csv",
        Some("md") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("xml") => "application/xml",
        Some("json") => "application/json",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        Some("mp3") => "audio/mpeg",
        Some("wav") => "audio/wav",
        Some("ogg") => "audio/ogg",
        Some("mp4") => "video/mp4",
        Some("webm") => "video/webm",
        Some("ttf") => "font/ttf",
        Some("otf") => "font/otf",
        Some("woff") => "font/woff",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// A file on its way into `<data dir>/files`: removed on drop unless kept.
pub(super) struct Incoming {
    pub(super) path: PathBuf,
    kept: bool,
}

impl Incoming {
    /// A new temporary name under `files_dir`.
    pub(super) fn partial(files_dir: &Path) -> Incoming {
        Incoming { path: files_dir.join(format!("{}.partial", ids::generate())), kept: false }
    }

    /// The file stays: its id is in a cell.
    pub(super) fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The file part of an upload, received.
pub(super) struct FilePart {
    /// The temporary file holding the bytes.
    pub(super) incoming: Incoming,
    /// The client's file name, without directories.
    pub(super) original: String,
    pub(super) content_type: String,
    pub(super) size: u64,
}

/// What an upload carried.
#[derive(Default)]
pub(super) struct Upload {
    pub(super) file: Option<FilePart>,
    pub(super) fields: Vec<(String, String)>,
}

/// Receives a multipart upload within the body's `Budget`: the `file` part streamed to a
/// temporary file under `<data dir>/files` (413 past `MAX_FILE_BYTES`), the parts named in
/// `fields` as text of at most `text_limit` bytes each; other parts are drained unkept.
pub(super) async fn receive(
    data_dir: &Path,
    mut body: Multipart,
    fields: &[&str],
    text_limit: usize,
) -> ApiResult<Upload> {
    let mut upload = Upload::default();
    let mut budget = Budget::default();
    while let Some(field) = body.next().await {
        let mut field = field.map_err(bad_multipart)?;
        budget.part()?;
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            let original = field
                .content_disposition()
                .and_then(|d| d.get_filename())
                .map(|n| n.rsplit(['/', '\\']).next().unwrap_or(n).to_owned())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "file".to_owned());
            let content_type = field
                .content_type()
                .map(|m| m.essence_str().to_owned())
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            let incoming = Incoming::partial(&files_dir(data_dir));
            let size = part_to_file(&mut field, &incoming.path, MAX_FILE_BYTES).await?;
            upload.file = Some(FilePart { incoming, original, content_type, size });
        } else if fields.contains(&name.as_str()) {
            let text = budget.text(&mut field, &name, text_limit).await?;
            upload.fields.push((name, text));
        } else {
            skip_part(&mut field).await?;
        }
    }
    Ok(upload)
}

/// A parameter from the form fields, else the query string.
pub(super) fn param(upload: &Upload, query: &[(String, String)], name: &str) -> Option<String> {
    upload
        .fields
        .iter()
        .chain(query)
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.clone())
}

#[utoipa::path(tag = "records", responses((status = 201, description = "the uploaded file")))]
#[post("/v1/views/{viewId}/files")]
async fn upload_file(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    let view_id = view_id.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Write)?;
    let query = query_pairs(&req)?;
    let upload =
        receive(&state.data_dir, Multipart::new(req.headers(), payload), &FIELDS, MAX_FIELD)
            .await?;
    let record_id = param(&upload, &query, "recordId")
        .ok_or_else(|| ApiError::missing_parameter("recordId"))?;
    let column_id = param(&upload, &query, "columnId")
        .ok_or_else(|| ApiError::missing_parameter("columnId"))?;
    let path = param(&upload, &query, "path");
    let Some(FilePart { mut incoming, original, content_type, size }) = upload.file else {
        return Err(ApiError::bad_request("The multipart part file is required."));
    };
    let meta = FileMeta {
        id: file_id(&original),
        company_id: route.company_id,
        grid_id: route.grid_id.clone(),
        original_name: original,
        content_type,
        size,
        created_time: now_timestamp(),
        category_id: None,
    };
    store_received(&state.data_dir, &mut incoming, &meta.id).await?;
    let change = ChangeFiles {
        view_id,
        path,
        column_id,
        records: vec![FilesChange { record_id, add: vec![meta.id.clone()], remove: Vec::new() }],
        user: p.user().to_owned(),
        check_only: false,
    };
    link_files(&state, route.addr.clone(), vec![(meta.clone(), incoming)], change).await?;
    created(&file_body(&meta))
}

/// In a cluster: stores the files' bytes in the cluster before any cell refers to them, so
/// that they follow their grid to another node (503 when the cluster does not take them).
async fn replicate_files(state: &AppState, files: &[(FileMeta, Incoming)]) -> ApiResult<()> {
    let Some(cluster) = &state.cluster else { return Ok(()) };
    for (meta, incoming) in files {
        let (bucket, id, path) = (cluster.files.clone(), meta.id.clone(), incoming.path.clone());
        cluster.spawn(async move { bucket.put(&id, &path).await }).await.map_err(|err| {
            ApiError::from(crate::cluster::ClusterError::Unavailable(err.to_string()))
        })??;
    }
    Ok(())
}

/// Opens a file's bytes; in a cluster, fetches them first when this node does not have them
/// (the file was uploaded while another node owned the grid).
async fn open_file(state: &AppState, id: &str) -> Option<tokio::fs::File> {
    let path = files_dir(&state.data_dir).join(id);
    if let Ok(file) = tokio::fs::File::open(&path).await {
        return Some(file);
    }
    fetch_from_cluster(state, id, &path).await.then_some(())?;
    tokio::fs::File::open(&path).await.ok()
}

/// In a cluster: writes the cluster's file `name` to `path`; false when there is no cluster,
/// the cluster lacks it or it cannot be read (logged).
async fn fetch_from_cluster(state: &AppState, name: &str, path: &Path) -> bool {
    let Some(cluster) = &state.cluster else { return false };
    let (bucket, name, target) = (cluster.files.clone(), name.to_owned(), path.to_owned());
    match cluster.spawn(async move { bucket.fetch(&name, &target).await }).await {
        Ok(Ok(found)) => found,
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "fetching a file from the cluster failed");
            false
        }
        Err(err) => {
            tracing::warn!(error = %err, "fetching a file from the cluster stopped");
            false
        }
    }
}

/// In a cluster: stores a task's result (an export, a merge preview), written at `path`, in
/// the cluster as `name`, so that the node serving its grid after a takeover serves it too.
pub(super) async fn replicate_result(state: &AppState, name: &str, path: &Path) -> ApiResult<()> {
    let Some(cluster) = &state.cluster else { return Ok(()) };
    let (bucket, name, path) = (cluster.files.clone(), name.to_owned(), path.to_owned());
    cluster
        .spawn(async move { bucket.put(&name, &path).await })
        .await
        .map_err(|err| ApiError::from(crate::cluster::ClusterError::Unavailable(err.to_string())))?
        .map_err(ApiError::from)
}

/// A task's result at `path`; in a cluster, fetched first from the cluster's file `name` when
/// this node lacks it. None when it is nowhere.
pub(super) async fn read_result(state: &AppState, name: &str, path: &Path) -> Option<Vec<u8>> {
    if let Ok(bytes) = tokio::fs::read(path).await {
        return Some(bytes);
    }
    fetch_from_cluster(state, name, path).await.then_some(())?;
    tokio::fs::read(path).await.ok()
}

/// Moves a received file to its place under `id` in `<data dir>/files` (rename, directory
/// synced); `incoming` then names it there, and still removes it on drop unless kept.
pub(super) async fn store_received(
    data_dir: &Path,
    incoming: &mut Incoming,
    id: &str,
) -> ApiResult<()> {
    let dir = files_dir(data_dir);
    let (from, target) = (incoming.path.clone(), dir.join(id));
    let placed = target.clone();
    web::block(move || -> std::io::Result<()> {
        std::fs::rename(&from, &target)?;
        std::fs::File::open(&dir)?.sync_all()
    })
    .await
    .map_err(|e| ApiError::internal(format!("the file writer stopped: {e}")))?
    .map_err(|e| storage_error("storing the file", e))?;
    incoming.path = placed;
    Ok(())
}

/// Records stored files in the catalogue, then sends `change`, which puts their ids in cells;
/// if the change is refused, forgets the metadata and removes the bytes. Runs on a task of its
/// own, so a client going away midway cannot leave ids in cells without their bytes.
pub(super) async fn link_files(
    state: &AppState,
    grid: Addr<GridActor>,
    files: Vec<(FileMeta, Incoming)>,
    change: ChangeFiles,
) -> ApiResult<Vec<RecordOut>> {
    let state = state.clone();
    actix_web::rt::spawn(async move {
        let metas: Vec<FileMeta> = files.iter().map(|(meta, _)| meta.clone()).collect();
        let ids: Vec<String> = metas.iter().map(|meta| meta.id.clone()).collect();
        replicate_files(&state, &files).await?;
        exec(&state, move |s| s.record_files(metas)).await??;
        match grid.send(change).await.map_err(GridError::from).and_then(|r| r) {
            Ok(records) => {
                files.into_iter().for_each(|(_, incoming)| incoming.keep());
                Ok(records)
            }
            Err(err) => {
                exec(&state, move |s| s.forget_files(&ids)).await??;
                Err(err.into())
            }
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("storing the files stopped: {e}")))?
}

/// The head of an export's answer: 200 `application/octet-stream`, downloaded as `name`
/// (every export, decisions.md section 3).
pub(crate) fn attachment(name: &str) -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response
        .content_type("application/octet-stream")
        .insert_header((actix_web::http::header::CONTENT_DISPOSITION, disposition(name)));
    response
}

/// `filename="..."` (ASCII, quotes and controls replaced) and `filename*` (UTF-8).
pub(crate) fn disposition(name: &str) -> String {
    let ascii: String =
        name.chars()
            .map(|c| {
                if c.is_ascii() && !c.is_ascii_control() && c != '"' && c != '\\' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{}", percent_encode(name))
}

#[utoipa::path(tag = "records", responses((status = 200, description = "the file's bytes")))]
#[get("/v1/views/{viewId}/files/{id}")]
async fn download_file(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (view_id, id) = path.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let grid = route.grid_id.clone();
    let file_id = id.clone();
    let meta = exec(&state, move |s| s.file(&grid, &id)).await??;
    let not_found = || ApiError::not_found(ErrorCode::FileIsNotFound, "File", &meta.id);
    // Served only while a record of the view's branch holds it in a column the view shows.
    if !route.addr.send(HoldsFile { view_id, file_id }).await?? {
        return Err(not_found());
    }
    let file = open_file(&state, &meta.id).await.ok_or_else(not_found)?;
    let size = file.metadata().await.map_err(|_| not_found())?.len();
    Ok(HttpResponse::Ok()
        .content_type(served_type(&req, &meta.content_type))
        .insert_header((header::CONTENT_DISPOSITION, disposition(&meta.original_name)))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(SizedStream::new(size, chunks(file))))
}

/// The content type a download is labelled with: the file's own (decisions 3), unless the
/// request's `Accept` does not take it but takes `application/octet-stream`, as the service's
/// generated SDKs send (they refuse any other type for a download).
fn served_type<'a>(req: &HttpRequest, own: &'a str) -> &'a str {
    const OCTETS: &str = "application/octet-stream";
    let Ok(accept) = <header::Accept as header::Header>::parse(req) else { return own };
    let ranges: Vec<&mime::Mime> = accept
        .iter()
        .filter(|item| item.quality > header::Quality::ZERO)
        .map(|item| &item.item)
        .collect();
    let takes = |wanted: &str| {
        let Ok(wanted) = wanted.parse::<mime::Mime>() else { return false };
        ranges.iter().any(|range| {
            range.type_() == mime::STAR
                || (range.type_() == wanted.type_()
                    && (range.subtype() == mime::STAR || range.subtype() == wanted.subtype()))
        })
    };
    if ranges.is_empty() || takes(own) || !takes(OCTETS) {
        own
    } else {
        OCTETS
    }
}

/// A file's bytes as a stream of chunks, read as the client takes them.
fn chunks(
    file: tokio::fs::File,
) -> impl futures_util::Stream<Item = std::io::Result<web::Bytes>> + 'static {
    futures_util::stream::try_unfold(file, |mut file| async move {
        let mut chunk = vec![0; DOWNLOAD_CHUNK];
        let read = file.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        chunk.truncate(read);
        Ok(Some((web::Bytes::from(chunk), file)))
    })
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DeleteBody {
    Ids { ids: Vec<String> },
    List(Vec<String>),
}

#[utoipa::path(tag = "records", request_body = Object, responses((status = 204)))]
#[delete("/v1/views/{viewId}/files")]
async fn delete_files(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let view_id = view_id.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Write)?;
    let query = query_pairs(&req)?;
    let find =
        |name: &str| query.iter().find(|(k, v)| k == name && !v.is_empty()).map(|(_, v)| v.clone());
    let record_id = find("recordId").ok_or_else(|| ApiError::missing_parameter("recordId"))?;
    let column_id = find("columnId").ok_or_else(|| ApiError::missing_parameter("columnId"))?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(ErrorCode::RequestBodyMissing, "The file ids are required."));
    }
    let ids = match serde_json::from_slice::<DeleteBody>(&body) {
        Ok(DeleteBody::Ids { ids } | DeleteBody::List(ids)) => ids,
        Err(_) => return Err(ApiError::bad_request("The body is {\"ids\": [file ids]}.")),
    };
    let change = ChangeFiles {
        view_id,
        path: find("path"),
        column_id,
        records: vec![FilesChange { record_id, add: Vec::new(), remove: ids }],
        user: p.user().to_owned(),
        check_only: false,
    };
    route.addr.send(change).await??;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(upload_file).service(download_file).service(delete_files);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_ids_keep_a_plain_extension_and_names_are_safe_in_headers() {
        let id = file_id("screen shot.PNG");
        assert!(id.ends_with(".png") && id.len() == 18, "{id}");
        assert_eq!(file_id("noext").len(), 14);
        assert_eq!(file_id("evil.p;hp").len(), 14);
        assert_eq!(content_type_for("shots/Title.JPEG"), "image/jpeg");
        assert_eq!(content_type_for("notes"), "application/octet-stream");
        assert_eq!(
            disposition("a\"b\n é.txt"),
            "attachment; filename=\"a_b_ _.txt\"; filename*=UTF-8''a%22b%0A%20%C3%A9.txt"
        );
    }
}
