//! `/v1/grids/<gridId>/settings`: a grid's settings (the defaults it gives new source cells and
//! datetime columns, whether translators see automations, metadata) and its file categories
//! with their files, as the hosted OpenAPI's grid settings operations. Reading needs `read` on
//! the grid; every change needs `manage`. The catalogue side is `catalog::settings`.

use actix_multipart::Multipart;
use actix_web::{delete, get, patch, post, put, web, HttpRequest, HttpResponse};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::files::{file_body, file_id, receive, store_received, FileBody, FilePart};
use super::sized_json::JsonObject;
use super::{exec, no_content, ok, query_pairs};
use crate::auth::Principal;
use crate::catalog::model::{now_timestamp, FileCategory, FileMeta, Grid};
use crate::catalog::settings::SettingsPatch;
use crate::error::{ApiError, ApiResult};
use crate::grid::columns::DateTimeFormatRequest;
use crate::grid::schema::DateTimeFormat;
use crate::state::AppState;

/// A grid's settings as the API shows them (the OpenAPI's `GridSetting`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GridSettingBody<'a> {
    pub default_source_language_status: &'a str,
    pub translator_can_view_automations: bool,
    #[schema(value_type = Vec<CategoryBody>)]
    pub categories: &'a [FileCategory],
    #[schema(value_type = Object)]
    pub metadata: &'a IndexMap<String, String>,
    pub created_time: &'a str,
    pub last_modified_time: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified_by: Option<&'a str>,
}

fn settings_body(grid: &Grid) -> GridSettingBody<'_> {
    let settings = &grid.settings;
    GridSettingBody {
        default_source_language_status: &settings.default_source_language_status,
        translator_can_view_automations: settings.translator_can_view_automations,
        categories: &settings.categories,
        metadata: &settings.metadata,
        created_time: &grid.created_time,
        last_modified_time: settings.last_modified_time.as_deref().unwrap_or(&grid.created_time),
        created_by: settings.created_by.as_deref(),
        last_modified_by: settings.last_modified_by.as_deref(),
    }
}

/// A file category (the OpenAPI's `FileCategory`).
#[derive(Debug, Serialize, ToSchema)]
pub struct CategoryBody {
    pub id: String,
    pub name: String,
}

/// A category with its files (the OpenAPI's `SettingFile`).
#[derive(Debug, Serialize)]
pub struct SettingFileBody<'a> {
    pub category: &'a FileCategory,
    pub files: Vec<FileBody<'a>>,
}

/// The body of a settings change (the OpenAPI's `UpdateGridSetting`); absent fields are kept.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateGridSettingRequest {
    /// One of unset, doNotTranslate, notReadyForTranslation, readyForTranslation, locked,
    /// lockAllLanguages: the source status of source-language cells added afterwards without one.
    pub default_source_language_status: Option<String>,
    /// The `dateTimeFormat` of datetime columns created afterwards without one.
    #[serde(default, deserialize_with = "crate::json_object::optional_object")]
    pub default_date_time_format: Option<DateTimeFormatRequest>,
    pub translator_can_view_automations: Option<bool>,
    /// A null value removes that key.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<IndexMap<String, Option<String>>>,
}

/// The body of a category's creation or renaming (`CreateFileCategory`, `UpdateCategory`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct CategoryRequest {
    pub name: Option<String>,
}

fn category_name(req: &CategoryRequest) -> ApiResult<&str> {
    req.name.as_deref().ok_or_else(|| ApiError::bad_request("The field name is required."))
}

#[utoipa::path(tag = "grids", responses((status = 200, body = GridSettingBody)))]
#[get("/v1/grids/{gridId}/settings")]
async fn get_settings(
    state: web::Data<AppState>,
    p: Principal,
    grid_id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let grid = exec(&state, move |s| s.grid_settings(&p, &grid_id)).await??;
    ok(&settings_body(&grid))
}

#[utoipa::path(tag = "grids", request_body = UpdateGridSettingRequest, responses((status = 200, body = GridSettingBody)))]
#[patch("/v1/grids/{gridId}/settings")]
async fn update_settings(
    state: web::Data<AppState>,
    p: Principal,
    grid_id: web::Path<String>,
    body: JsonObject<UpdateGridSettingRequest>,
) -> ApiResult<HttpResponse> {
    let req = body.into_inner();
    let patch = SettingsPatch {
        default_source_language_status: req.default_source_language_status,
        default_date_time_format: req.default_date_time_format.map(|f| DateTimeFormat {
            date_format: f.date_format,
            time_format: f.time_format,
            zone_offset: f.zone_offset,
            show_time_zone: f.show_time_zone,
        }),
        translator_can_view_automations: req.translator_can_view_automations,
        metadata: req.metadata,
    };
    let grid = exec(&state, move |s| s.update_settings(&p, &grid_id, patch)).await??;
    ok(&settings_body(&grid))
}

#[utoipa::path(tag = "grids", request_body = CategoryRequest, responses((status = 200, body = CategoryBody)))]
#[post("/v1/grids/{gridId}/settings/categories")]
async fn create_category(
    state: web::Data<AppState>,
    p: Principal,
    grid_id: web::Path<String>,
    body: JsonObject<CategoryRequest>,
) -> ApiResult<HttpResponse> {
    let name = category_name(&body)?.to_owned();
    let category = exec(&state, move |s| s.create_category(&p, &grid_id, &name)).await??;
    ok(&category)
}

#[utoipa::path(tag = "grids", request_body = CategoryRequest, responses((status = 200, body = CategoryBody)))]
#[put("/v1/grids/{gridId}/settings/categories/{categoryId}")]
async fn update_category(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    body: JsonObject<CategoryRequest>,
) -> ApiResult<HttpResponse> {
    let (grid_id, category_id) = path.into_inner();
    let name = category_name(&body)?.to_owned();
    let category =
        exec(&state, move |s| s.rename_category(&p, &grid_id, &category_id, &name)).await??;
    ok(&category)
}

#[utoipa::path(tag = "grids", responses((status = 204)))]
#[delete("/v1/grids/{gridId}/settings/categories/{categoryId}")]
async fn delete_category(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (grid_id, category_id) = path.into_inner();
    exec(&state, move |s| s.delete_category(&p, &grid_id, &category_id)).await??;
    no_content()
}

/// Multipart `file`: stored under `<data dir>/files` (temporary file, fsync, rename), then
/// recorded in the category; refused (and its bytes removed) when the category went meanwhile.
#[utoipa::path(tag = "grids", responses((status = 200, description = "the uploaded file: id, originalName, contentType, size")))]
#[post("/v1/grids/{gridId}/settings/categories/{categoryId}/files")]
async fn upload_category_file(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    let (grid_id, category_id) = path.into_inner();
    // The grid, the category and the privilege are checked before the bytes are taken in.
    let (pc, gc, cc) = (p.clone(), grid_id.clone(), category_id.clone());
    let company_id = exec(&state, move |s| s.category_upload(&pc, &gc, &cc)).await??;
    let upload = receive(&state.data_dir, Multipart::new(req.headers(), payload), &[], 0).await?;
    let Some(FilePart { mut incoming, original, content_type, size }) = upload.file else {
        return Err(ApiError::bad_request("The multipart part file is required."));
    };
    let meta = FileMeta {
        id: file_id(&original),
        company_id,
        grid_id,
        original_name: original,
        content_type,
        size,
        created_time: now_timestamp(),
        category_id: Some(category_id),
    };
    store_received(&state.data_dir, &mut incoming, &meta.id).await?;
    let recorded = meta.clone();
    exec(&state, move |s| s.add_category_file(&p, recorded)).await??;
    incoming.keep();
    ok(&file_body(&meta))
}

#[utoipa::path(tag = "grids", responses((status = 204)))]
#[delete("/v1/grids/{gridId}/settings/categories/{categoryId}/files/{fileId}")]
async fn delete_category_file(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String, String)>,
) -> ApiResult<HttpResponse> {
    let (grid_id, category_id, file_id) = path.into_inner();
    exec(&state, move |s| s.delete_category_file(&p, &grid_id, &category_id, &file_id)).await??;
    no_content()
}

/// `categoryId` (repeatable, or comma-separated) picks categories; all of them when absent.
#[utoipa::path(tag = "grids", params(("categoryId" = Option<Vec<String>>, Query, description = "the categories to list (all when absent)")), responses((status = 200, description = "each category with its files")))]
#[get("/v1/grids/{gridId}/settings/files")]
async fn list_category_files(
    state: web::Data<AppState>,
    p: Principal,
    grid_id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let mut categories = Vec::new();
    for (key, value) in query_pairs(&req)? {
        if key == "categoryId" {
            categories.extend(value.split(',').filter(|v| !v.is_empty()).map(str::to_owned));
        }
        if categories.len() > crate::catalog::settings::MAX_CATEGORIES {
            return Err(ApiError::bad_request(format!(
                "categoryId names more than {} categories.",
                crate::catalog::settings::MAX_CATEGORIES
            )));
        }
    }
    let listing = exec(&state, move |s| s.category_listing(&p, &grid_id, &categories)).await??;
    let body: Vec<SettingFileBody<'_>> = listing
        .iter()
        .map(|(category, files)| SettingFileBody {
            category,
            files: files.iter().map(file_body).collect(),
        })
        .collect();
    ok(&body)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_settings)
        .service(update_settings)
        .service(create_category)
        .service(update_category)
        .service(delete_category)
        .service(upload_category_file)
        .service(delete_category_file)
        .service(list_category_files);
}
