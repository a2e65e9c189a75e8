//! Zip upload (T+E, decisions.md section 10): `POST /v1/views/<viewId>/files/zip` with the
//! multipart parts `file` (the zip, at most `MAX_FILE_BYTES`), `columnId` and `fileMappings`
//! (form fields or query parameters; `{"<record id>": ["<name in the zip>", ...]}`) and an
//! optional `path`. Each mapped entry becomes a stored file exactly like a single upload (id,
//! bytes under `<data dir>/files`, metadata in the catalogue, content type from its
//! extension), and the ids join the records' files cells in one write of the grid actor.
//! Answers 201 with each updated record holding only that cell.
//!
//! Everything is checked before a file is written: the parameters (`fileMappings` names at
//! most `MAX_MAPPED_NAMES` files in all, no record the same name twice), the column and the
//! records (the actor checks them without writing), then the archive on a blocking thread
//! (`io::zip`: the entry count before the directory is read, names that stay inside the
//! archive, mapped names that are readable files, declared sizes within the budget: 400 or
//! 413). Then the entries are streamed to temporary files while the bytes are counted, since
//! a header may lie: past the budget or the ratio the copy stops (413). Any failure removes
//! every file extracted so far and writes nothing else. The budget of the mapped entries
//! together is `Config::zip_unpacked_limit` and `io::zip::MAX_RATIO` times the upload's size.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use actix_multipart::Multipart;
use actix_web::{post, web, HttpRequest, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use super::files::{content_type_for, file_id, link_files, param, receive, Incoming};
use super::records::record_body;
use super::{created, query_pairs, storage_error, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::catalog::files::files_dir;
use crate::catalog::model::{now_timestamp, CompanyId, FileMeta};
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::{ChangeFiles, FilesChange};
use crate::io::zip::{copy_counted, damaged, open_checked, plan, Budget, Mappings};
use crate::state::AppState;

/// The largest text part (`fileMappings` is the long one).
const MAX_FIELD: usize = 1024 * 1024;
/// The form fields a zip upload reads.
const FIELDS: [&str; 3] = ["columnId", "fileMappings", "path"];
/// The most names `fileMappings` may map, over all records.
pub const MAX_MAPPED_NAMES: usize = 10_000;

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
        receive(&state.data_dir, Multipart::new(req.headers(), payload), &FIELDS, MAX_FIELD)
            .await?;
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
    let budget = Budget::new(state.zip_unpacked_limit, zip.size);
    let owner = (route.company_id, route.grid_id.clone());
    let extracted = web::block(move || extract(&zip_path, &dir, &mappings, budget, &owner))
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
    let mut total = 0usize;
    for (record, names) in &mappings {
        if names.is_empty() {
            return Err(ApiError::bad_request(format!(
                "fileMappings[\"{record}\"] names no file."
            )));
        }
        total += names.len();
        if total > MAX_MAPPED_NAMES {
            return Err(ApiError::bad_request(format!(
                "fileMappings names more than {MAX_MAPPED_NAMES} files."
            )));
        }
        let mut seen = std::collections::HashSet::with_capacity(names.len());
        if let Some(name) = names.iter().find(|name| !seen.insert(name.as_str())) {
            return Err(ApiError::bad_request(format!(
                "fileMappings[\"{record}\"] names \"{name}\" more than once."
            )));
        }
    }
    Ok(mappings)
}

/// Checks the archive and extracts every mapped entry into `dir` (see the module doc): each
/// record id with its files, in the mappings' order. Runs on a blocking thread.
fn extract(
    zip: &Path,
    dir: &Path,
    mappings: &Mappings,
    mut budget: Budget,
    (company_id, grid_id): &(CompanyId, String),
) -> ApiResult<Vec<(String, Vec<Extracted>)>> {
    let file = File::open(zip).map_err(|e| storage_error("opening the zip", e))?;
    let mut archive = open_checked(BufReader::new(file), budget.upload)?;
    let planned = plan(&mut archive, mappings, &budget)?;
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
                category_id: None,
            };
            let mut incoming = Incoming::partial(dir);
            let mut reader = archive.by_index(entry.index).map_err(|e| damaged(&entry.name, &e))?;
            let mut out = File::create(&incoming.path)
                .map_err(|e| storage_error("creating a file of the zip", e))?;
            let on_write = |e| storage_error("writing a file of the zip", e);
            let size = copy_counted(&mut reader, &mut out, &entry, &mut budget, on_write)?;
            out.sync_all().map_err(|e| storage_error("syncing a file of the zip", e))?;
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

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(upload_zip);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_an_object_of_non_empty_name_lists() {
        let parsed = parse_mappings(r#"{"b": ["x.png", "y.png"], "a": ["z"]}"#).expect("valid");
        assert_eq!(parsed.keys().collect::<Vec<_>>(), ["b", "a"]);
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"a": "x"}"#,
            r#"{"a": [1]}"#,
            r#"{"a": []}"#,
            r#"{"a": ["x", "x"]}"#,
        ] {
            assert!(parse_mappings(bad).is_err(), "{bad}");
        }
    }
}
