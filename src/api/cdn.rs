//! CDN publishing (issue 22): the routes that manage a grid's CDNs. The files are served by
//! `cdn_serve`; who and when by `cdn_access`; the files written by `io::cdn_publish`.
//!
//! Routes (a company key with the `manage` privilege on the CDN's grid; view keys never):
//! - `POST /v1/cdns` `{"gridId", "name", "description"?, "permission"?, "whiteListIP"?,
//!   "startTime"?, "endTime"?}`: 201 with the CDN (`readyToPublish`, nothing served yet).
//! - `GET /v1/cdns?gridId=` (required) `[&offset=&limit=&ids=&published=]`: the grid's CDNs,
//!   oldest first, `X-Total-Count` before paging; `ids` repeated or comma-separated.
//! - `GET /v1/cdns/<id>`, `DELETE /v1/cdns/<id>` (204; its files go too).
//! - `PUT /v1/cdns/<id>/publish`: writes the next version from the grid's master branch as one
//!   instant, on a blocking thread, and answers once it is durable and served (`published`);
//!   409 taskIsRunning while another publish of the same CDN runs.
//! - `PUT /v1/cdns/<id>/unpublish`: stops serving at once (`readyToPublish`); the files stay
//!   until the next publish replaces them.
//!
//! A CDN is checked here before the catalogue records it (`CdnRefused`, 400 badRequest): its
//! name (1 to `MAX_NAME_CHARS` characters, not blank), description (at most
//! `MAX_DESCRIPTION_CHARS`), permission (`public`, the default, or `private`), allow-list
//! (`cdn_access`) and times (RFC 3339, `startTime` before `endTime`).

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{delete, get, post, put, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::cdn_access::{ordered, parse_time, AllowList};
use super::records::read_view;
use super::{created, exec, no_content, ok, query_pairs};
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::auth::Principal;
use crate::catalog::cdns::{cdn_dir, remove_files, Cdn, CdnPermission, NewCdn, PublishTicket};
use crate::catalog::model::{now_timestamp, RecordIdentifierType};
use crate::error::{ApiError, ApiResult, Coded, ErrorCode};
use crate::io::cdn_publish::{write_version, PublishSpec};
use crate::state::AppState;

/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 255;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Most ids a listing's `ids` may name.
pub const MAX_IDS: usize = 1000;
/// Largest `limit` of a listing (and its default, as the OpenAPI's).
pub const MAX_LIMIT: usize = 1000;
const DEFAULT_LIMIT: usize = 128;

/// A CDN request the API refuses before the catalogue sees it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CdnRefused {
    #[error("The request body is invalid: {0}")]
    Body(String),
    #[error("The request body is missing.")]
    NoBody,
    #[error("{0} is required.")]
    Missing(&'static str),
    #[error("name must be 1 to {MAX_NAME_CHARS} characters long and not blank.")]
    Name,
    #[error("description is at most {MAX_DESCRIPTION_CHARS} characters long.")]
    Description,
    #[error("permission \"{0}\" is invalid; expected public or private.")]
    Permission(String),
    /// A bad allow-list or time (the message says which).
    #[error("{0}")]
    Field(String),
    #[error("startTime must come before endTime.")]
    Window,
}

impl Coded for CdnRefused {
    fn code(&self) -> ErrorCode {
        match self {
            CdnRefused::NoBody => ErrorCode::RequestBodyMissing,
            CdnRefused::Body(_)
            | CdnRefused::Missing(_)
            | CdnRefused::Name
            | CdnRefused::Description
            | CdnRefused::Permission(_)
            | CdnRefused::Field(_)
            | CdnRefused::Window => ErrorCode::BadRequest,
        }
    }
}

/// `POST /v1/cdns`'s body: the OpenAPI's CDN fields a client sets.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CdnRequest {
    grid_id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    /// `public` (default) or `private` (an API key of the grid's company that may read it).
    permission: Option<String>,
    /// Addresses or networks (CIDR) allowed, separated by commas; none: every address.
    #[serde(rename = "whiteListIP")]
    white_list_ip: Option<String>,
    /// RFC 3339; files are served from then on.
    start_time: Option<String>,
    /// RFC 3339; files are served until then.
    end_time: Option<String>,
}

impl CdnRequest {
    fn parse(body: &[u8]) -> Result<CdnRequest, CdnRefused> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(CdnRefused::NoBody);
        }
        object_from_slice(body).map_err(|e| CdnRefused::Body(e.to_string()))
    }

    fn check(self) -> Result<NewCdn, CdnRefused> {
        let grid_id =
            self.grid_id.filter(|g| !g.is_empty()).ok_or(CdnRefused::Missing("gridId"))?;
        let name = self.name.ok_or(CdnRefused::Missing("name"))?;
        if name.trim().is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(CdnRefused::Name);
        }
        let description = self.description.unwrap_or_default();
        if description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(CdnRefused::Description);
        }
        let permission = match self.permission.as_deref() {
            None => CdnPermission::Public,
            Some(text) => CdnPermission::parse(text).ok_or_else(|| {
                CdnRefused::Permission(crate::io::csv_import::clip(text, 64).to_owned())
            })?,
        };
        let white_list_ip = match self.white_list_ip.as_deref() {
            None => None,
            Some(text) => AllowList::parse(text).map_err(CdnRefused::Field)?.map(|l| l.render()),
        };
        let time = |name, text: Option<String>| {
            text.map(|t| parse_time(name, &t).map_err(CdnRefused::Field)).transpose()
        };
        let start_time = time("startTime", self.start_time)?;
        let end_time = time("endTime", self.end_time)?;
        if let (Some(start), Some(end)) = (&start_time, &end_time) {
            if !ordered(start, end) {
                return Err(CdnRefused::Window);
            }
        }
        Ok(NewCdn { grid_id, name, description, permission, white_list_ip, start_time, end_time })
    }
}

/// A CDN as the API shows it: the OpenAPI's `CDN`, and gridd's `version`. A time or allow-list
/// not set is left out rather than `null`: the OpenAPI declares them strings, not nullable.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CdnBody {
    id: String,
    name: String,
    description: String,
    /// Where its files are: `<url>/manifest.json`, `<url>/<lang>.json`, `<url>/<lang>.csv`.
    url: String,
    grid_id: String,
    /// `readyToPublish`, `processing` or `published`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_generated_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_published_time: Option<String>,
    /// `public` or `private`.
    permission: &'static str,
    /// What is published: always `grid`.
    #[serde(rename = "type")]
    kind: &'static str,
    created_time: String,
    last_modified_time: String,
    created_by: String,
    last_modified_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_time: Option<String>,
    #[serde(rename = "whiteListIP", skip_serializing_if = "Option::is_none")]
    white_list_ip: Option<String>,
    /// The last version published (`<url>/v/<version>/...`), none before the first publish.
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
}

fn status(cdn: &Cdn) -> &'static str {
    if cdn.processing {
        "processing"
    } else if cdn.published {
        "published"
    } else {
        "readyToPublish"
    }
}

fn cdn_body(state: &AppState, cdn: Cdn) -> CdnBody {
    CdnBody {
        url: format!("{}/cdn/{}", state.public_url, cdn.id),
        status: status(&cdn),
        permission: match cdn.permission {
            CdnPermission::Public => "public",
            CdnPermission::Private => "private",
        },
        kind: "grid",
        last_generated_time: cdn.last_published_time.clone(),
        last_published_time: cdn.last_published_time,
        version: (cdn.version > 0).then_some(cdn.version),
        id: cdn.id,
        name: cdn.name,
        description: cdn.description,
        grid_id: cdn.grid_id,
        created_time: cdn.created_time,
        last_modified_time: cdn.last_modified_time,
        created_by: cdn.created_by,
        last_modified_by: cdn.last_modified_by,
        start_time: cdn.start_time,
        end_time: cdn.end_time,
        white_list_ip: cdn.white_list_ip,
    }
}

#[utoipa::path(tag = "cdn", request_body = CdnRequest, responses((status = 201, body = CdnBody)))]
#[post("/v1/cdns")]
async fn create_cdn(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let new = CdnRequest::parse(&body)?.check()?;
    let cdn = exec(&state, move |s| s.create_cdn(&p, new)).await??;
    created(&cdn_body(&state, cdn))
}

/// A listing's parameters.
#[derive(Debug, PartialEq)]
struct ListQuery {
    grid_id: String,
    offset: usize,
    limit: usize,
    ids: Option<Vec<String>>,
    published: Option<bool>,
}

fn paging(name: &str, text: &str, max: usize) -> ApiResult<usize> {
    text.parse::<usize>().ok().filter(|n| *n <= max).ok_or_else(|| {
        let shown = crate::io::csv_import::clip(text, 32);
        ApiError::new(
            ErrorCode::InvalidPaging,
            format!("{name} \"{shown}\" is not a number from 0 to {max}."),
        )
    })
}

fn parse_list_query(pairs: Vec<(String, String)>) -> ApiResult<ListQuery> {
    let (mut grid_id, mut offset, mut limit, mut ids, mut published) =
        (None, 0, DEFAULT_LIMIT, None, None);
    for (name, value) in pairs {
        match name.as_str() {
            "gridId" => grid_id = Some(value),
            "offset" => offset = paging("offset", &value, u32::MAX as usize)?,
            "limit" => limit = paging("limit", &value, MAX_LIMIT)?,
            "ids" => {
                let list: &mut Vec<String> = ids.get_or_insert_with(Vec::new);
                list.extend(value.split(',').filter(|v| !v.is_empty()).map(str::to_owned));
                if list.len() > MAX_IDS {
                    return Err(ApiError::bad_request(format!(
                        "ids names at most {MAX_IDS} CDNs."
                    )));
                }
            }
            "published" => {
                published = Some(
                    value
                        .parse::<bool>()
                        .map_err(|_| ApiError::bad_request("published is true or false."))?,
                )
            }
            _ => {}
        }
    }
    let grid_id = super::required(&grid_id, "gridId")?.to_owned();
    Ok(ListQuery { grid_id, offset, limit, ids, published })
}

#[utoipa::path(tag = "cdn", params(
    ("gridId" = String, Query, description = "the grid whose CDNs to list"),
    ("offset" = Option<usize>, Query, description = "CDNs to skip (default 0)"),
    ("limit" = Option<usize>, Query, description = "CDNs to answer (default 128, at most 1000)"),
    ("ids" = Option<Vec<String>>, Query, description = "only these CDNs"),
    ("published" = Option<bool>, Query, description = "only published (true) or unpublished CDNs"),
), responses((status = 200, body = [CdnBody], description = "X-Total-Count: CDNs before paging")))]
#[get("/v1/cdns")]
async fn list_cdns(
    state: web::Data<AppState>,
    p: Principal,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let query = parse_list_query(query_pairs(&req)?)?;
    let grid_id = query.grid_id.clone();
    let cdns = exec(&state, move |s| s.list_cdns(&p, &grid_id)).await??;
    let picked: Vec<Cdn> = cdns
        .into_iter()
        .filter(|c| query.ids.as_ref().is_none_or(|ids| ids.contains(&c.id)))
        .filter(|c| query.published.is_none_or(|p| c.published == p))
        .collect();
    let total = picked.len();
    let page: Vec<CdnBody> = picked
        .into_iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|c| cdn_body(&state, c))
        .collect();
    let mut response = ok(&page)?;
    response
        .headers_mut()
        .insert(HeaderName::from_static("x-total-count"), HeaderValue::from(total));
    Ok(response)
}

#[utoipa::path(tag = "cdn", responses((status = 200, body = CdnBody)))]
#[get("/v1/cdns/{cdnId}")]
async fn get_cdn(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let cdn = exec(&state, move |s| s.cdn(&p, &id)).await??;
    ok(&cdn_body(&state, cdn))
}

#[utoipa::path(tag = "cdn", responses((status = 204)))]
#[delete("/v1/cdns/{cdnId}")]
async fn delete_cdn(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let cdn = exec(&state, move |s| s.delete_cdn(&p, &id)).await??;
    let dir = cdn_dir(&state.data_dir, &cdn.id);
    tokio::task::spawn_blocking(move || remove_files(&dir));
    super::cdn_replica::remove_cdn(&state, &cdn.id, cdn.version).await;
    no_content()
}

#[utoipa::path(tag = "cdn", responses((status = 200, body = CdnBody)))]
#[put("/v1/cdns/{cdnId}/publish")]
async fn publish_cdn(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let user = p.user().to_owned();
    let ticket = exec(&state, move |s| s.begin_cdn_publish(&p, &id)).await??;
    let cleared = ticket.cdn.id.clone();
    // Its own task: a client going away does not cut the publish off halfway.
    let publishing = state.clone();
    let task = actix_web::rt::spawn(async move { publish(&publishing, ticket, user).await });
    match task.await {
        Ok(published) => ok(&cdn_body(&state, published?)),
        Err(_) => {
            // A panic in the task: the CDN must not stay `processing`.
            exec(&state, move |s| s.abort_cdn_publish(&cleared)).await?;
            Err(ApiError::internal("the publish stopped"))
        }
    }
}

/// Writes the ticket's version and records it, or clears the CDN's processing mark.
async fn publish(state: &AppState, ticket: PublishTicket, user: String) -> ApiResult<Cdn> {
    let (id, version) = (ticket.cdn.id.clone(), ticket.version);
    if let Err(err) = write(state, ticket).await {
        let cleared = id.clone();
        exec(state, move |s| s.abort_cdn_publish(&cleared)).await?;
        return Err(err);
    }
    let dir = cdn_dir(&state.data_dir, &id);
    let finished = exec(state, move |s| s.finish_cdn_publish(&id, version, &user)).await?;
    if finished.as_ref().is_err_and(|e| e.is_missing(crate::catalog::Missing::Cdn)) {
        // Deleted while its files were written.
        tokio::task::spawn_blocking(move || remove_files(&dir));
    }
    Ok(finished?)
}

/// Reads the grid's master branch as one instant and writes its files on a blocking thread.
async fn write(state: &AppState, ticket: PublishTicket) -> ApiResult<()> {
    let grid_id = &ticket.cdn.grid_id;
    let route = state.routes.branch(grid_id).ok_or_else(|| {
        if state.cluster.is_some() {
            // Another node serves the grid: this node's catalogue learnt of the CDN after the
            // request was routed. Its retry is forwarded there.
            ApiError::retry_soon(format!("Grid \"{grid_id}\" is served by another node; retry."))
        } else {
            ApiError::not_found(ErrorCode::GridIsNotFound, "Grid", grid_id)
        }
    })?;
    let view = read_view(&route).await?;
    let dir = cdn_dir(&state.data_dir, &ticket.cdn.id);
    let written = tokio::task::spawn_blocking(move || {
        let published_time = now_timestamp();
        let spec = PublishSpec {
            cdn_id: &ticket.cdn.id,
            grid_id: &ticket.cdn.grid_id,
            version: ticket.version,
            published_time: &published_time,
            keyed_by_path: ticket.record_identifier_type == RecordIdentifierType::PathTagRecordId,
        };
        write_version(&view.state, &spec, &dir)
    });
    let manifest =
        written.await.map_err(|_| ApiError::internal("the CDN's file writer stopped"))??;
    let version_dir = cdn_dir(&state.data_dir, &manifest.cdn_id).join(manifest.version.to_string());
    super::cdn_replica::store_version(state, &manifest, &version_dir).await?;
    let (cdn, version, records) = (&manifest.cdn_id, manifest.version, manifest.record_count);
    tracing::info!(%cdn, version, records, "CDN version written");
    Ok(())
}

#[utoipa::path(tag = "cdn", responses((status = 200, body = CdnBody)))]
#[put("/v1/cdns/{cdnId}/unpublish")]
async fn unpublish_cdn(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = id.into_inner();
    let cdn = exec(&state, move |s| s.unpublish_cdn(&p, &id)).await??;
    ok(&cdn_body(&state, cdn))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(create_cdn)
        .service(list_cdns)
        .service(get_cdn)
        .service(delete_cdn)
        .service(publish_cdn)
        .service(unpublish_cdn);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn listing_parameters_parse_and_are_bounded() {
        let q = parse_list_query(pairs(&[
            ("gridId", "g"),
            ("ids", "a,b"),
            ("ids", "c"),
            ("limit", "2"),
        ]))
        .expect("ok");
        assert_eq!(q.ids, Some(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!((q.offset, q.limit, q.published), (0, 2, None));
        assert_eq!(
            parse_list_query(pairs(&[("ids", "a")])).expect_err("no grid").code,
            ErrorCode::RequestParameterMissing
        );
        for bad in [("limit", "1001"), ("offset", "-1"), ("limit", "x")] {
            let err = parse_list_query(pairs(&[("gridId", "g"), bad])).expect_err("bad paging");
            assert_eq!(err.code, ErrorCode::InvalidPaging);
        }
        assert!(parse_list_query(pairs(&[("gridId", "g"), ("published", "yes")])).is_err());
    }

    #[test]
    fn requests_are_checked_field_by_field() {
        let check = |body: &str| CdnRequest::parse(body.as_bytes()).and_then(CdnRequest::check);
        let ok = check(concat!(
            r#"{"gridId":"g","name":"n","whiteListIP":"10.0.0.1, 10.1.0.0/16","#,
            r#""startTime":"2026-01-01T00:00:00Z"}"#
        ))
        .expect("valid");
        assert_eq!(ok.white_list_ip.as_deref(), Some("10.0.0.1,10.1.0.0/16"));
        assert_eq!(ok.permission, CdnPermission::Public);
        assert_eq!(check(r#"{"name":"n"}"#).expect_err("grid"), CdnRefused::Missing("gridId"));
        assert_eq!(check(r#"{"gridId":"g","name":" "}"#).expect_err("blank"), CdnRefused::Name);
        assert!(matches!(
            check(r#"{"gridId":"g","name":"n","permission":"open"}"#),
            Err(CdnRefused::Permission(_))
        ));
        assert!(matches!(
            check(r#"{"gridId":"g","name":"n","unknown":1}"#),
            Err(CdnRefused::Body(_))
        ));
        let window = concat!(
            r#"{"gridId":"g","name":"n","startTime":"2026-01-02T00:00:00Z","#,
            r#""endTime":"2026-01-01T00:00:00Z"}"#
        );
        assert_eq!(check(window).expect_err("window"), CdnRefused::Window);
    }
}
