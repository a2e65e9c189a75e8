//! Zip upload (T+E, decisions.md section 10): `POST /v1/views/<viewId>/files/zip` with the
//! multipart parts `file` (the zip, at most `MAX_FILE_BYTES`), `columnId` and `fileMappings`
//! (form fields or query parameters; `{"<record id>": ["<name in the zip>", ...]}`) and an
//! optional `path`. Each mapped entry becomes a stored file exactly like a single upload (id,
//! bytes under `<data dir>/files`, metadata in the catalogue, content type from its
//! extension), and the ids join the records' files cells in one write of the grid actor.
//! Answers 201 with each updated record holding only that cell.
//!
//! Everything is checked before a file is written: the parameters, the column and the records
//! (the actor checks them without writing), then the archive on a blocking thread: it must be
//! a zip (400); no entry anywhere in it may escape it (a `..` component, an absolute name, a
//! symbolic link: 400 naming the entry); every mapped name must be a file in it (400), stored
//! or deflated and not encrypted; the mapped entries' declared sizes must stay within
//! `Config::zip_unpacked_limit` and pass the ratio rule (413). Then the entries are streamed
//! to temporary files while the bytes are counted, since a header may lie: past the limit or
//! the ratio the copy stops (413). Any failure removes every file extracted so far and writes
//! nothing else.
//!
//! The ratio rule: an entry that unpacks to more than `RATIO_FLOOR` bytes may be at most
//! `MAX_RATIO` times its compressed size. Ordinary files (text, images, documents) stay far
//! below 200:1; zip bombs are far above it (a deflated run of zeros is about 1000:1).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use actix_multipart::Multipart;
use actix_web::{post, web, HttpRequest, HttpResponse};
use indexmap::IndexMap;
use utoipa_actix_web::service_config::ServiceConfig;
use zip::read::ZipFile;
use zip::result::ZipError;
use zip::{CompressionMethod, ZipArchive};

use super::files::{content_type_for, file_id, link_files, param, receive, Incoming};
use super::records::record_body;
use super::{created, query_pairs, storage_error, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::catalog::files::files_dir;
use crate::catalog::model::{now_timestamp, CompanyId, FileMeta};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{ChangeFiles, FilesChange};
use crate::state::AppState;

/// An entry unpacking to more than this many bytes is held to `MAX_RATIO`.
pub const RATIO_FLOOR: u64 = 1024 * 1024;
/// The most an entry over `RATIO_FLOOR` may unpack to per compressed byte.
pub const MAX_RATIO: u64 = 200;
/// The largest text part (`fileMappings` is the long one).
const MAX_FIELD: usize = 1024 * 1024;
/// The size of the chunks an entry is copied in.
const COPY_CHUNK: usize = 64 * 1024;
/// The mode bits of a symbolic link in a unix `st_mode` (`S_IFLNK` under `S_IFMT`).
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

/// Record id to the names of its files in the zip, in the request's order.
type Mappings = IndexMap<String, Vec<String>>;

/// A mapped entry of the archive.
struct Entry {
    index: usize,
    name: String,
    compressed: u64,
}

/// A file extracted from the zip, its bytes under its id (removed if dropped unkept).
type Extracted = (FileMeta, Incoming);

/// The files cell a zip upload changes.
struct Target {
    view_id: String,
    path: Option<String>,
    column_id: String,
    user: String,
}

impl Target {
    fn change(&self, records: Vec<FilesChange>, check_only: bool) -> ChangeFiles {
        ChangeFiles {
            view_id: self.view_id.clone(),
            path: self.path.clone(),
            column_id: self.column_id.clone(),
            records,
            user: self.user.clone(),
            check_only,
        }
    }
}

#[utoipa::path(tag = "records", responses((status = 201, description = "the updated records")))]
#[post("/v1/views/{viewId}/files/zip")]
async fn upload_zip(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let view_id = view_id.into_inner();
    let route = view_route(&state, &p, &view_id, Privilege::Write)?;
    let query = query_pairs(&req)?;
    let upload =
        receive(&state.data_dir, Multipart::new(req.headers(), payload), MAX_FIELD).await?;
    let column_id = param(&upload, &query, "columnId")
        .ok_or_else(|| ApiError::missing_parameter("columnId"))?;
    let mappings = param(&upload, &query, "fileMappings")
        .ok_or_else(|| ApiError::missing_parameter("fileMappings"))?;
    let mappings = parse_mappings(&mappings)?;
    let path = param(&upload, &query, "path");
    let Some(zip) = upload.file else {
        return Err(ApiError::bad_request("The multipart part file (the zip) is required."));
    };
    let target = Target { view_id, path, column_id, user: p.user().to_owned() };
    let unchanged = mappings
        .keys()
        .map(|id| FilesChange { record_id: id.clone(), add: Vec::new(), remove: Vec::new() })
        .collect();
    route.addr.send(target.change(unchanged, true)).await??;

    let (zip_path, dir) = (zip.incoming.path.clone(), files_dir(&state.data_dir));
    let limit = state.zip_unpacked_limit;
    let owner = (route.company_id, route.grid_id.clone());
    let extracted = web::block(move || extract(&zip_path, &dir, &mappings, limit, &owner))
        .await
        .map_err(|e| ApiError::internal(format!("the zip reader stopped: {e}")))??;
    drop(zip);
    let records = extracted
        .iter()
        .map(|(record_id, files)| FilesChange {
            record_id: record_id.clone(),
            add: files.iter().map(|(meta, _)| meta.id.clone()).collect(),
            remove: Vec::new(),
        })
        .collect();
    let files = extracted.into_iter().flat_map(|(_, files)| files).collect();
    let records =
        link_files(&state, route.addr.clone(), files, target.change(records, false)).await?;
    created(&records.iter().map(record_body).collect::<Vec<_>>())
}

/// `fileMappings`: a JSON object of record id to a non-empty list of names in the zip.
fn parse_mappings(text: &str) -> ApiResult<Mappings> {
    let mappings: Mappings = serde_json::from_str(text).map_err(|e| {
        ApiError::bad_request(format!(
            "fileMappings must be a JSON object of record id to a list of file names in the zip: {e}"
        ))
    })?;
    if mappings.is_empty() {
        return Err(ApiError::bad_request("fileMappings maps no record."));
    }
    if let Some((record, _)) = mappings.iter().find(|(_, names)| names.is_empty()) {
        return Err(ApiError::bad_request(format!("fileMappings[\"{record}\"] names no file.")));
    }
    Ok(mappings)
}

/// Checks the archive and extracts every mapped entry into `dir` (see the module doc): each
/// record id with its files, in the mappings' order. Runs on a blocking thread.
fn extract(
    zip: &Path,
    dir: &Path,
    mappings: &Mappings,
    limit: u64,
    (company_id, grid_id): &(CompanyId, String),
) -> ApiResult<Vec<(String, Vec<Extracted>)>> {
    let file = File::open(zip).map_err(|e| storage_error("opening the zip", e))?;
    let mut archive = ZipArchive::new(BufReader::new(file)).map_err(|e| not_a_zip(&e))?;
    check_entry_names(&mut archive)?;
    let planned = plan(&mut archive, mappings, limit)?;
    let mut unpacked = 0u64;
    let mut extracted = Vec::with_capacity(planned.len());
    for (record_id, entries) in planned {
        let mut files = Vec::with_capacity(entries.len());
        for entry in entries {
            let original = entry.name.rsplit(['/', '\\']).next().unwrap_or(&entry.name).to_owned();
            let meta = FileMeta {
                id: file_id(&original),
                company_id: *company_id,
                grid_id: grid_id.clone(),
                content_type: content_type_for(&original).to_owned(),
                original_name: original,
                size: 0,
                created_time: now_timestamp(),
            };
            let mut incoming = Incoming::partial(dir);
            let mut reader = archive.by_index(entry.index).map_err(|e| damaged(&entry.name, &e))?;
            let size = copy_counted(&mut reader, &incoming.path, &entry, limit, &mut unpacked)?;
            let target = dir.join(&meta.id);
            std::fs::rename(&incoming.path, &target)
                .map_err(|e| storage_error("storing a file of the zip", e))?;
            incoming.path = target;
            files.push((FileMeta { size, ..meta }, incoming));
        }
        extracted.push((record_id, files));
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| storage_error("syncing the files directory", e))?;
    Ok(extracted)
}

/// 400 for a file that is not a readable zip archive.
fn not_a_zip(err: &ZipError) -> ApiError {
    ApiError::bad_request(format!("The file is not a valid zip archive: {err}."))
}

/// 400 for an entry that cannot be read.
fn damaged(name: &str, err: &dyn std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("The zip entry \"{name}\" cannot be read: {err}."))
}

/// Every entry of the archive, mapped or not, must stay inside it: 400 naming the first that
/// has a `..` component, an absolute name (`/x`, `\x`, `C:\x`), a NUL byte, or is a symbolic
/// link.
fn check_entry_names<R: Read + std::io::Seek>(archive: &mut ZipArchive<R>) -> ApiResult<()> {
    for index in 0..archive.len() {
        let entry = archive.by_index_raw(index).map_err(|e| not_a_zip(&e))?;
        let name = entry.name();
        let reason = if name.contains('\0') {
            Some("has a NUL byte in its name")
        } else if name.starts_with(['/', '\\']) || is_drive_path(name) {
            Some("has an absolute name")
        } else if name.split(['/', '\\']).any(|part| part == "..") {
            Some("has a \"..\" component")
        } else if entry.unix_mode().is_some_and(|mode| mode & S_IFMT == S_IFLNK) {
            Some("is a symbolic link")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(ApiError::bad_request(format!(
                "The zip entry \"{name}\" {reason}; entries must stay inside the archive. Nothing was written."
            )));
        }
    }
    Ok(())
}

/// `C:...`: a name starting with a drive letter.
fn is_drive_path(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// The entries each record gets: 400 when a mapped name is not a file in the zip, or one that
/// cannot be read (encrypted, another compression than stored or deflate); 413 when the
/// declared sizes go over `limit` or an entry's over the ratio rule.
fn plan<R: Read + std::io::Seek>(
    archive: &mut ZipArchive<R>,
    mappings: &Mappings,
    limit: u64,
) -> ApiResult<Vec<(String, Vec<Entry>)>> {
    let mut missing = Vec::new();
    let mut declared = 0u64;
    let mut planned = Vec::with_capacity(mappings.len());
    for (record_id, names) in mappings {
        let mut entries = Vec::with_capacity(names.len());
        for name in names {
            let Some(index) = archive.index_for_name(name) else {
                missing.push(format!("\"{name}\""));
                continue;
            };
            let entry = archive.by_index_raw(index).map_err(|e| not_a_zip(&e))?;
            if entry.is_dir() {
                missing.push(format!("\"{name}\" (a directory)"));
                continue;
            }
            check_readable(&entry)?;
            check_ratio(name, entry.size(), entry.compressed_size())?;
            declared = declared.saturating_add(entry.size());
            let compressed = entry.compressed_size();
            entries.push(Entry { index, name: name.clone(), compressed });
        }
        planned.push((record_id.clone(), entries));
    }
    if !missing.is_empty() {
        return Err(ApiError::bad_request(format!(
            "fileMappings names what is not a file in the zip: {}.",
            missing.join(", ")
        )));
    }
    if declared > limit {
        return Err(too_large(format!(
            "The mapped files unpack to {declared} bytes, more than the {limit} allowed."
        )));
    }
    Ok(planned)
}

/// 400 for an entry this server cannot unpack.
fn check_readable<R: Read>(entry: &ZipFile<'_, R>) -> ApiResult<()> {
    let name = entry.name();
    if entry.encrypted() {
        return Err(ApiError::bad_request(format!("The zip entry \"{name}\" is encrypted.")));
    }
    if !matches!(entry.compression(), CompressionMethod::Stored | CompressionMethod::Deflated) {
        return Err(ApiError::bad_request(format!(
            "The zip entry \"{name}\" uses the compression {}; only stored and deflate are supported.",
            entry.compression()
        )));
    }
    Ok(())
}

/// 413 for an entry over `RATIO_FLOOR` bytes unpacked that is more than `MAX_RATIO` times its
/// compressed size.
fn check_ratio(name: &str, unpacked: u64, compressed: u64) -> ApiResult<()> {
    if unpacked > RATIO_FLOOR && unpacked > compressed.saturating_mul(MAX_RATIO) {
        return Err(too_large(format!(
            "The zip entry \"{name}\" unpacks to more than {MAX_RATIO} times its compressed size ({compressed} bytes); it looks like a zip bomb."
        )));
    }
    Ok(())
}

fn too_large(message: String) -> ApiError {
    ApiError::new(ErrorCode::PayloadTooLarge, message)
}

/// Copies an entry into a new synced file at `to`, counting the bytes as they come (headers
/// may lie): stops with 413 before writing past `limit` for the whole upload (`unpacked`
/// counts what earlier entries took) or past the ratio rule. Returns the entry's size.
fn copy_counted(
    reader: &mut impl Read,
    to: &Path,
    entry: &Entry,
    limit: u64,
    unpacked: &mut u64,
) -> ApiResult<u64> {
    let mut out = File::create(to).map_err(|e| storage_error("creating a file of the zip", e))?;
    let mut chunk = vec![0; COPY_CHUNK];
    let mut size = 0u64;
    loop {
        let read = reader.read(&mut chunk).map_err(|e| damaged(&entry.name, &e))?;
        if read == 0 {
            break;
        }
        size += read as u64;
        *unpacked += read as u64;
        if *unpacked > limit {
            return Err(too_large(format!(
                "The mapped files unpack to more than the {limit} bytes allowed."
            )));
        }
        check_ratio(&entry.name, size, entry.compressed)?;
        out.write_all(&chunk[..read]).map_err(|e| storage_error("writing a file of the zip", e))?;
    }
    out.sync_all().map_err(|e| storage_error("syncing a file of the zip", e))?;
    Ok(size)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(upload_zip);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_rule_spares_small_and_ordinary_entries() {
        assert!(check_ratio("a", RATIO_FLOOR, 1).is_ok(), "small entries are never held to it");
        assert!(check_ratio("a", 200 * 100_000, 100_000).is_ok(), "200:1 is allowed");
        let err = check_ratio("a", 200 * 100_000 + 1, 100_000).expect_err("over 200:1");
        assert_eq!(err.code, ErrorCode::PayloadTooLarge);
        assert!(check_ratio("a", u64::MAX, 0).is_err());
    }

    #[test]
    fn drive_letters_are_absolute() {
        assert!(is_drive_path("C:\\x") && is_drive_path("c:x"));
        assert!(!is_drive_path("c") && !is_drive_path("1:x") && !is_drive_path("dir/C:x"));
    }

    #[test]
    fn mappings_are_an_object_of_non_empty_name_lists() {
        let parsed = parse_mappings(r#"{"b": ["x.png", "y.png"], "a": ["z"]}"#).expect("valid");
        assert_eq!(parsed.keys().collect::<Vec<_>>(), ["b", "a"]);
        for bad in ["", "[]", "{}", r#"{"a": "x"}"#, r#"{"a": [1]}"#, r#"{"a": []}"#] {
            assert!(parse_mappings(bad).is_err(), "{bad}");
        }
    }
}
