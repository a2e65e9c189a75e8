//! The CDN file server (issue 22): a published CDN's files at `<public url>/cdn/<id>/...`,
//! outside `/v1`, for game builds fetching strings at run time.
//!
//! - `GET /cdn/<id>/<file>`: the latest published version's `manifest.json`, `<lang>.json` or
//!   `<lang>.csv` (`io::cdn_publish` describes them), with `Cache-Control: <scope>,
//!   max-age=60, must-revalidate` (a new publish shows within a minute where caches keep it).
//! - `GET /cdn/<id>/v/<version>/<file>`: a pinned version (one of the last
//!   `cdn_publish::KEEP_VERSIONS`): `Cache-Control: <scope>, max-age=31536000, immutable`.
//!
//! `<scope>` is `public` for a public CDN without an allow-list, else `private` (a shared cache
//! must not hand a file to a client the CDN would refuse). Every answer carries a strong `ETag`
//! (the content's SHA-256, first 16 bytes in hex; the manifest holds each file's) and
//! `X-Cdn-Version`; `If-None-Match` naming it answers 304.
//!
//! Checked in this order, each refusal a JSON error: the CDN exists and is published (404
//! cdnIsNotFound: unpublishing stops serving at once, as `Routes::cdns` shows it), the peer's
//! address is on its allow-list (403 accessDenied; `X-Forwarded-For` is not trusted), a private
//! CDN's key (401 unauthorized without a valid one; 404 cdnIsNotFound for a key of another
//! company or one that cannot reach the grid; 403 without read access), the window (403
//! accessDenied before `startTime` or from `endTime` on), the version (404 cdnIsNotFound when
//! not kept) and the file (404 fileIsNotFound unless the version's manifest lists it). A file
//! name is only looked up in the manifest, never joined to a path as given, so no request
//! reads outside the version's directory.

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::web::Bytes;
use actix_web::{get, web, FromRequest, HttpRequest, HttpResponse};
use tokio::io::AsyncReadExt;
use utoipa_actix_web::service_config::ServiceConfig;

use super::cdn_access::{window, AllowList, Window};
use super::conditional::{body_tag, if_none_match, with_tag};
use crate::auth::Principal;
use crate::catalog::cdns::{cdn_dir, Cdn, CdnPermission};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::io::cdn_publish::{Manifest, KEEP_VERSIONS, MANIFEST};
use crate::state::AppState;

/// Size of the chunks a file is sent in.
const CHUNK_BYTES: usize = 64 * 1024;
/// Longest `max-age` of the latest version's files, in seconds.
const LATEST_MAX_AGE: u32 = 60;

fn not_found(message: String) -> ApiError {
    ApiError::new(ErrorCode::CdnIsNotFound, message)
}

#[utoipa::path(tag = "cdn", params(
    ("cdnId" = String, Path, description = "the CDN"),
    ("file" = String, Path, description = "manifest.json, <lang>.json or <lang>.csv"),
), responses((status = 200, description = "the latest published version's file"), (status = 304)))]
#[get("/cdn/{cdnId}/{file}")]
async fn latest_file(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (id, file) = path.into_inner();
    serve(&state, &req, &id, None, &file).await
}

#[utoipa::path(tag = "cdn", params(
    ("cdnId" = String, Path, description = "the CDN"),
    ("version" = u64, Path, description = "one of the last versions published"),
    ("file" = String, Path, description = "manifest.json, <lang>.json or <lang>.csv"),
), responses(
    (status = 200, description = "the pinned version's file (immutable)"),
    (status = 304),
))]
#[get("/cdn/{cdnId}/v/{version}/{file}")]
async fn pinned_file(
    state: web::Data<AppState>,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (id, version, file) = path.into_inner();
    let version = version.parse::<u64>().ok().filter(|v| *v >= 1).ok_or_else(|| {
        not_found(format!(
            "CDN \"{id}\" has no version \"{}\".",
            crate::io::csv_import::clip(&version, 32)
        ))
    })?;
    serve(&state, &req, &id, Some(version), &file).await
}

/// The CDN `id` if this request may read its files now.
async fn admitted(state: &AppState, req: &HttpRequest, id: &str) -> ApiResult<Arc<Cdn>> {
    let cdn = state.routes.cdns.get(id).map(|c| c.value().clone());
    let cdn = cdn.ok_or_else(|| not_found(format!("CDN \"{id}\" could not be found.")))?;
    if !cdn.published || cdn.version == 0 {
        return Err(not_found(format!("CDN \"{id}\" is not published.")));
    }
    if let Some(list) = &cdn.white_list_ip {
        let list = AllowList::parse(list).ok().flatten();
        let peer = req.peer_addr().map(|a| a.ip());
        if !list.zip(peer).is_some_and(|(list, ip)| list.allows(ip)) {
            let shown = peer.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
            return Err(ApiError::access_denied(format!(
                "Your address {shown} is not on the allow-list of CDN \"{id}\"."
            )));
        }
    }
    match cdn.permission {
        CdnPermission::Public => state.limiter.check_client(req)?,
        CdnPermission::Private => {
            let p = Principal::extract(req).await?;
            cdn.readable_by(&p)?;
        }
    }
    match window(cdn.start_time.as_deref(), cdn.end_time.as_deref(), chrono::Utc::now()) {
        Window::Open => Ok(cdn),
        Window::NotYet(start) => {
            Err(ApiError::access_denied(format!("CDN \"{id}\" serves its files from {start} on.")))
        }
        Window::Over(end) => Err(ApiError::access_denied(format!(
            "CDN \"{id}\" stopped serving its files at {end}."
        ))),
    }
}

/// What a response sends: the manifest's bytes, or a file of the version.
enum Content {
    Bytes(Vec<u8>),
    File(std::path::PathBuf),
}

async fn serve(
    state: &AppState,
    req: &HttpRequest,
    id: &str,
    pinned: Option<u64>,
    file: &str,
) -> ApiResult<HttpResponse> {
    let cdn = admitted(state, req, id).await?;
    let version = pinned.unwrap_or(cdn.version);
    let kept = version <= cdn.version && version + KEEP_VERSIONS > cdn.version;
    let missing_version = || not_found(format!("CDN \"{id}\" does not keep version {version}."));
    if !kept {
        return Err(missing_version());
    }
    let dir = cdn_dir(&state.data_dir, id).join(version.to_string());
    if !super::cdn_replica::ensure_version(state, id, version, &dir).await? {
        return Err(missing_version());
    }
    let manifest = match tokio::fs::read(dir.join(MANIFEST)).await {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(missing_version()),
        Err(err) => return Err(super::storage_error("reading a CDN manifest", err)),
    };
    let (tag, content_type, content) = if file == MANIFEST {
        (body_tag(&manifest), "application/json".to_owned(), Content::Bytes(manifest))
    } else {
        let parsed: Manifest = serde_json::from_slice(&manifest)
            .map_err(|e| ApiError::internal(format!("CDN manifest unreadable: {e}")))?;
        let entry = parsed.files.get(file).ok_or_else(|| {
            let shown = crate::io::csv_import::clip(file, 64);
            ApiError::new(
                ErrorCode::FileIsNotFound,
                format!("CDN \"{id}\" has no file \"{shown}\" (see its {MANIFEST})."),
            )
        })?;
        (entry.etag.clone(), entry.content_type.clone(), Content::File(dir.join(file)))
    };
    let response = answer(req, &tag, &content_type, content).await?;
    Ok(with_caching(response, &cdn, pinned.is_some(), version))
}

/// 304 when `If-None-Match` names `tag`, else 200 with the content (a file streamed).
async fn answer(
    req: &HttpRequest,
    tag: &str,
    content_type: &str,
    content: Content,
) -> ApiResult<HttpResponse> {
    if if_none_match(req.headers())?.is_some_and(|c| c.matches_weakly(tag)) {
        return Ok(with_tag(HttpResponse::NotModified().finish(), tag));
    }
    let mut ok = HttpResponse::Ok();
    ok.content_type(content_type);
    let response = match content {
        Content::Bytes(bytes) => ok.body(bytes),
        Content::File(path) => {
            let file = tokio::fs::File::open(&path)
                .await
                .map_err(|e| super::storage_error("opening a CDN file", e))?;
            let length = file.metadata().await.map(|m| m.len()).ok();
            let stream = futures_util::stream::unfold(file, |mut file| async move {
                let mut buf = vec![0u8; CHUNK_BYTES];
                match file.read(&mut buf).await {
                    Ok(0) => None,
                    Ok(n) => {
                        buf.truncate(n);
                        Some((Ok::<Bytes, actix_web::Error>(Bytes::from(buf)), file))
                    }
                    Err(err) => Some((Err(actix_web::error::ErrorInternalServerError(err)), file)),
                }
            });
            match length {
                Some(length) => ok.no_chunking(length).streaming(stream),
                None => ok.streaming(stream),
            }
        }
    };
    Ok(with_tag(response, tag))
}

/// Adds `Cache-Control` and `X-Cdn-Version` (see the module doc).
fn with_caching(mut response: HttpResponse, cdn: &Cdn, pinned: bool, version: u64) -> HttpResponse {
    let shared = cdn.permission == CdnPermission::Public && cdn.white_list_ip.is_none();
    let scope = if shared { "public" } else { "private" };
    let control = if pinned {
        format!("{scope}, max-age=31536000, immutable")
    } else {
        format!("{scope}, max-age={LATEST_MAX_AGE}, must-revalidate")
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&control) {
        headers.insert(header::CACHE_CONTROL, value);
    }
    headers.insert(header::HeaderName::from_static("x-cdn-version"), HeaderValue::from(version));
    response
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(pinned_file).service(latest_file);
}
