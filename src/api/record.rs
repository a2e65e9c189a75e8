//! One record: `GET /v1/views/<viewId>/records/<recordId>` with its `ETag` (304 to a current
//! `If-None-Match`), and the versions a records write must find (`If-Match` on a write naming
//! one record, each record's `ifMatch` in a bulk write), checked by the grid's actor right
//! before it plans the write (`grid::preconditions`).

use actix_web::http::StatusCode;
use actix_web::{get, web, HttpRequest, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use super::conditional::{
    if_match, if_none_match, not_modified, parse_version, record_tag, with_tag,
};
use super::query_pairs;
use super::records::{record_response, view_record};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::{ReadRecord, RecordsWrite};
use crate::grid::preconditions::Expected;
use crate::state::AppState;

#[utoipa::path(tag = "records", params(
    ("path" = Option<String>, Query, description = "the record's path: picks the record in a path and id grid, must be the record's own elsewhere"),
), responses(
    (status = 200, description = "the record, with its ETag"),
    (status = 304, description = "If-None-Match named the record's current ETag"),
))]
#[get("/v1/views/{viewId}/records/{id}")]
async fn read_record(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (view_id, record_id) = path.into_inner();
    let at_path = query_pairs(&req)?.into_iter().find(|(k, _)| k == "path").map(|(_, v)| v);
    let cached = if_none_match(req.headers())?;
    let msg = ReadRecord { view_id, record_id, at_path };
    let (record, version) = view_record(&state, &p, msg).await?;
    let tag = record_tag(version);
    if cached.is_some_and(|c| c.matches_weakly(&tag)) {
        return Ok(not_modified(&tag));
    }
    Ok(with_tag(record_response(StatusCode::OK, record)?, &tag))
}

/// The records `write` must find at the versions their writers read: the `If-Match` header
/// (only on a write naming one record) and each record's `ifMatch`. An add names no existing
/// record, so either is a 400 there.
pub fn expected_versions(req: &HttpRequest, write: &RecordsWrite) -> ApiResult<Vec<Expected>> {
    let header = if_match(req.headers())?;
    // (id, path, its ifMatch) of each record the write names.
    let named: Vec<(&str, &str, Option<&str>)> = match write {
        RecordsWrite::Add(inputs) => {
            if header.is_some() || inputs.iter().any(|r| r.if_match.is_some()) {
                return Err(ApiError::bad_request(
                    "If-Match and ifMatch name the version of a record that exists; an add \
                     creates records.",
                ));
            }
            return Ok(Vec::new());
        }
        RecordsWrite::Update(inputs) => inputs
            .iter()
            .map(|r| {
                let id = r.id.as_deref().unwrap_or_default();
                (id, r.path.as_deref().unwrap_or_default(), r.if_match.as_deref())
            })
            .collect(),
        RecordsWrite::UpdateOne { record_id, at_path, input } => {
            let path = at_path.as_deref().or(input.path.as_deref()).unwrap_or_default();
            vec![(record_id.as_str(), path, input.if_match.as_deref())]
        }
        RecordsWrite::Delete(input) => {
            let ids = input.ids.iter().flatten().map(|id| (id.as_str(), "", None));
            let identifiers = input.identifiers.iter().flatten();
            let identifiers =
                identifiers.map(|r| (r.id.as_str(), r.path.as_str(), r.if_match.as_deref()));
            ids.chain(identifiers).collect()
        }
    };
    // A record without an id is refused by the write itself (`nullRecordId`), not here.
    let named: Vec<_> = named.into_iter().filter(|(id, _, _)| !id.is_empty()).collect();
    let mut expected = Vec::new();
    if let Some(header) = header {
        let [(id, path, _)] = named.as_slice() else {
            return Err(ApiError::bad_request(
                "If-Match applies to a write naming one record; give each record's ifMatch \
                 instead.",
            ));
        };
        let (id, path) = (id.to_string(), path.to_string());
        expected.push(Expected { id, path, version: header.version()? });
    }
    for (id, path, tag) in named {
        if let Some(tag) = tag {
            let version = Some(parse_version(tag)?);
            expected.push(Expected { id: id.to_owned(), path: path.to_owned(), version });
        }
    }
    Ok(expected)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(read_record);
}
