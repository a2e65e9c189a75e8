//! The web console (issue 23): the files under `console/`, embedded in the binary by `build.rs`,
//! served at `/` (the page) and `/console/<path>` (ES modules, CSS), never touching the API's
//! state. The console is a client of the public API like any other; this module only serves its
//! files.
//!
//! Caching: the page names its modules under `/console/<version>/...`, where `<version>` is a
//! digest of every embedded file, so a module at a versioned path never changes and is served
//! `immutable` for a year, and the page itself (`no-cache`, with an `ETag`) picks up a new
//! binary at once. The same file under `/console/<path>` (unversioned) is served `no-cache` with
//! its `ETag`; `If-None-Match` answers 304.
//!
//! Every answer carries the strict Content-Security-Policy of [`CSP`] (no inline script or
//! style, no other origin), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.

use std::collections::HashMap;
use std::sync::OnceLock;

use actix_web::http::header::{self, HeaderValue};
use actix_web::web::Bytes;
use actix_web::{get, web, HttpRequest, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use super::conditional::{body_tag, if_none_match};
use crate::error::{ApiResult, Coded, ErrorCode};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/console_assets.rs"));
}

/// The console's Content-Security-Policy: its own modules, styles, images and API only.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

/// What the page's `__VERSION__` placeholders are replaced with.
const VERSION_MARK: &str = "__VERSION__";

/// Why a console request found nothing.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("The console has no file \"{0}\".")]
    UnknownAsset(String),
}

impl Coded for ConsoleError {
    fn code(&self) -> ErrorCode {
        match self {
            ConsoleError::UnknownAsset(_) => ErrorCode::FileIsNotFound,
        }
    }
}

/// One embedded file, with its type and tag.
#[derive(Debug)]
struct Asset {
    /// Shared, so an answer does not copy the file.
    bytes: Bytes,
    content_type: &'static str,
    etag: String,
}

/// The embedded files by path, the page with its version filled in, and the version.
#[derive(Debug)]
struct Catalogue {
    version: String,
    assets: HashMap<&'static str, Asset>,
    page: Asset,
}

/// The `Content-Type` of a file, by its extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

fn asset(path: &str, bytes: Bytes) -> Asset {
    let etag = body_tag(&bytes);
    Asset { content_type: content_type(path), etag, bytes }
}

/// Builds the catalogue once: the version is a digest of every file's path and tag.
fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let assets: HashMap<&'static str, Asset> = embedded::ASSETS
            .iter()
            .map(|(path, bytes)| (*path, asset(path, Bytes::from_static(bytes))))
            .collect();
        let mut listing: Vec<String> =
            assets.iter().map(|(path, a)| format!("{path} {}\n", a.etag)).collect();
        listing.sort();
        let version = body_tag(listing.concat().as_bytes());
        let page_text = embedded::ASSETS
            .iter()
            .find(|(path, _)| *path == "index.html")
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).replace(VERSION_MARK, &version))
            .unwrap_or_default();
        let page = asset("index.html", Bytes::from(page_text.into_bytes()));
        Catalogue { version, assets, page }
    })
}

/// How long a browser may keep an answer.
#[derive(Debug, Clone, Copy)]
enum Caching {
    /// Revalidate every time (the page, unversioned paths).
    Revalidate,
    /// Never changes (a versioned path).
    Immutable,
}

/// The answer for `asset`: 304 when the request's `If-None-Match` names its tag.
fn serve(req: &HttpRequest, asset: &Asset, caching: Caching) -> HttpResponse {
    // A malformed If-None-Match is ignored: the file is sent.
    let condition = if_none_match(req.headers()).ok().flatten();
    let fresh = condition.is_some_and(|c| c.matches_weakly(&asset.etag));
    let mut builder = if fresh { HttpResponse::NotModified() } else { HttpResponse::Ok() };
    builder
        .insert_header((header::ETAG, format!("\"{}\"", asset.etag)))
        .insert_header((
            header::CACHE_CONTROL,
            match caching {
                Caching::Revalidate => "no-cache",
                Caching::Immutable => "public, max-age=31536000, immutable",
            },
        ))
        .insert_header((header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
    if fresh {
        return builder.finish();
    }
    builder.content_type(asset.content_type).body(asset.bytes.clone())
}

#[utoipa::path(tag = "console", security(()), responses((status = 200, description = "the web console's page (HTML)")))]
#[get("/")]
async fn console_page(req: HttpRequest) -> HttpResponse {
    serve(&req, &catalogue().page, Caching::Revalidate)
}

#[utoipa::path(tag = "console", security(()), params(("path" = String, Path, description = "a console file, optionally under the console's version")), responses((status = 200, description = "a console module, style sheet or image"), (status = 404, description = "no such file")))]
#[get("/console/{path:.*}")]
async fn console_asset(req: HttpRequest, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let catalogue = catalogue();
    let (path, caching) = match path.split_once('/') {
        Some((version, rest)) if version == catalogue.version => (rest, Caching::Immutable),
        _ => (path.as_str(), Caching::Revalidate),
    };
    let asset = catalogue
        .assets
        .get(path)
        .filter(|_| path != "index.html")
        .ok_or_else(|| ConsoleError::UnknownAsset(path.to_owned()))?;
    Ok(serve(&req, asset, caching))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(console_page).service(console_asset);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_modules_are_embedded() {
        let catalogue = catalogue();
        assert!(catalogue.assets.contains_key("app.js"));
        assert!(catalogue.assets.contains_key("api.js"));
        let page = String::from_utf8_lossy(&catalogue.page.bytes);
        assert!(page.contains(&format!("/console/{}/app.js", catalogue.version)));
        assert!(!page.contains(VERSION_MARK));
    }

    #[test]
    fn types_follow_extensions() {
        assert_eq!(content_type("grid/table.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("style.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("README"), "application/octet-stream");
    }
}
