//! Files (decisions.md section 10): `POST /v1/views/<viewId>/files` (multipart `file`, with
//! `recordId`, `columnId` and optional `path` as form fields or query parameters) stores the
//! bytes under `<data dir>/files/<id>` (temporary file, fsync, rename), records the metadata in
//! the catalogue, and appends the id to the record's files cell through the WAL; `GET
//! .../files/<id>` serves the bytes with their content type and original name; `DELETE
//! .../files?recordId=&columnId=` with `{"ids": [...]}` takes ids out of the cell.
//!
//! A file over `MAX_FILE_BYTES` is 413 and leaves nothing behind; a column that is not of type
//! files is 400 `columnIsNotFilesType`. The bytes of a removed id stay on disk: branches copy
//! cells, so another branch may still hold the id.

use std::path::{Path, PathBuf};

use actix_multipart::Multipart;
use actix_web::http::header;
use actix_web::{delete, get, post, web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use utoipa_actix_web::service_config::ServiceConfig;

use super::multipart::{bad_multipart, part_text, part_to_file};
use super::{created, exec, no_content, percent_encode, query_pairs, view_route};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::{now_timestamp, FileMeta};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::ChangeFiles;
use crate::ids;
use crate::state::AppState;

/// The largest file accepted.
pub const MAX_FILE_BYTES: u64 = 100 * 1024 * 1024;
/// The largest form field (record id, column id, path).
const MAX_FIELD: usize = 4096;

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

/// `<data dir>/files`, where every file's bytes are.
fn files_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("files")
}

/// A new file id: 14 random characters and the original name's extension (letters and digits
/// only, at most 10), as decisions.md section 2 and 10 say.
fn file_id(original: &str) -> String {
    let extension = Path::new(original)
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| !e.is_empty() && e.len() <= 10 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(|e| format!(".{}", e.to_ascii_lowercase()))
        .unwrap_or_default();
    format!("{}{extension}", ids::generate())
}

/// A file being received: removed on drop unless kept.
struct Incoming {
    path: PathBuf,
    kept: bool,
}

impl Drop for Incoming {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What an upload carried.
#[derive(Default)]
struct Upload {
    /// (temporary file, original name, content type, size)
    file: Option<(Incoming, String, String, u64)>,
    fields: Vec<(String, String)>,
}

async fn receive(data_dir: &Path, mut body: Multipart) -> ApiResult<Upload> {
    let mut upload = Upload::default();
    while let Some(field) = body.next().await {
        let mut field = field.map_err(bad_multipart)?;
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
            let incoming = Incoming {
                path: files_dir(data_dir).join(format!("{}.partial", ids::generate())),
                kept: false,
            };
            let size = part_to_file(&mut field, &incoming.path, MAX_FILE_BYTES).await?;
            upload.file = Some((incoming, original, content_type, size));
        } else {
            let text = part_text(&mut field, &name, MAX_FIELD).await?;
            upload.fields.push((name, text));
        }
    }
    Ok(upload)
}

/// A parameter from the form fields, else the query string.
fn param(upload: &Upload, query: &[(String, String)], name: &str) -> Option<String> {
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
    let upload = receive(&state.data_dir, Multipart::new(req.headers(), payload)).await?;
    let record_id = param(&upload, &query, "recordId")
        .ok_or_else(|| ApiError::missing_parameter("recordId"))?;
    let column_id = param(&upload, &query, "columnId")
        .ok_or_else(|| ApiError::missing_parameter("columnId"))?;
    let path = param(&upload, &query, "path");
    let Some((mut incoming, original, content_type, size)) = upload.file else {
        return Err(ApiError::bad_request("The multipart part file is required."));
    };
    let meta = FileMeta {
        id: file_id(&original),
        company_id: route.company_id.clone(),
        grid_id: route.grid_id.clone(),
        original_name: original,
        content_type,
        size,
        created_time: now_timestamp(),
    };
    let target = files_dir(&state.data_dir).join(&meta.id);
    let from = incoming.path.clone();
    let dir = files_dir(&state.data_dir);
    web::block(move || -> std::io::Result<()> {
        std::fs::rename(&from, &target)?;
        std::fs::File::open(&dir)?.sync_all()
    })
    .await
    .map_err(|e| ApiError::internal(format!("the file writer stopped: {e}")))?
    .map_err(|e| ApiError::internal(format!("storing the file: {e}")))?;
    incoming.path = files_dir(&state.data_dir).join(&meta.id);
    let recorded = meta.clone();
    exec(&state, move |s| s.record_file(recorded)).await??;
    let change = ChangeFiles {
        view_id,
        record_id,
        path,
        column_id,
        add: vec![meta.id.clone()],
        remove: Vec::new(),
        user: p.user().to_owned(),
    };
    if let Err(err) = route.addr.send(change).await.map_err(ApiError::from).and_then(|r| r) {
        let id = meta.id.clone();
        exec(&state, move |s| s.forget_file(&id)).await??;
        return Err(err);
    }
    incoming.kept = true;
    created(&file_body(&meta))
}

/// `filename="..."` (ASCII, quotes and controls replaced) and `filename*` (UTF-8).
fn disposition(name: &str) -> String {
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
) -> ApiResult<HttpResponse> {
    let (view_id, id) = path.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let grid = route.grid_id.clone();
    let meta = exec(&state, move |s| s.file(&grid, &id)).await??;
    let file = files_dir(&state.data_dir).join(&meta.id);
    let bytes = web::block(move || std::fs::read(file))
        .await
        .map_err(|e| ApiError::internal(format!("the file reader stopped: {e}")))?
        .map_err(|_| ApiError::not_found(ErrorCode::FileIsNotFound, "File", &meta.id))?;
    Ok(HttpResponse::Ok()
        .content_type(meta.content_type.as_str())
        .insert_header((header::CONTENT_DISPOSITION, disposition(&meta.original_name)))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(bytes))
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
    body: web::Bytes,
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
        record_id,
        path: find("path"),
        column_id,
        add: Vec::new(),
        remove: ids,
        user: p.user().to_owned(),
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
        assert_eq!(
            disposition("a\"b\n é.txt"),
            "attachment; filename=\"a_b_ _.txt\"; filename*=UTF-8''a%22b%0A%20%C3%A9.txt"
        );
    }
}
