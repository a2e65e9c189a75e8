//! `GET /v1/views/<viewId>/records/<recordId>/histories`: a record's history, newest first
//! (or oldest), paged, filtered by column, user, time and what each entry wrote.

use actix_web::http::StatusCode;
use actix_web::{get, web, HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::Value;
use utoipa_actix_web::service_config::ServiceConfig;

use super::listing::{offset_links, parse_page, set_page_headers, DEFAULT_LIMIT};
use super::{json_response, query_pairs, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::ReadHistory;
use crate::grid::codec::{format_timestamp, render_value};
use crate::grid::history::HistoryEntry;
use crate::grid::query::{parse_query, parse_sort, RawFilter};
use crate::state::AppState;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HistoryBody {
    last_modified_by: String,
    last_modified_time: String,
    path: String,
    cells: Vec<HistoryCellBody>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryCellBody {
    column_id: String,
    value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    dependency_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_status: Option<&'static str>,
}

pub(super) fn history_body(
    entry: &HistoryEntry,
    types: &std::collections::HashMap<String, crate::grid::schema::ColumnType>,
) -> HistoryBody {
    HistoryBody {
        last_modified_by: entry.user.clone(),
        last_modified_time: format_timestamp(entry.time_ms),
        path: entry.path.clone(),
        cells: entry
            .cells
            .iter()
            .map(|c| HistoryCellBody {
                column_id: c.column_id.clone(),
                value: types
                    .get(&c.column_id)
                    .map(|t| render_value(*t, &c.value))
                    .unwrap_or(Value::Null),
                dependency_status: c.statuses.map(|(d, _)| d.as_str()),
                source_status: c.statuses.map(|(_, s)| s.as_str()),
            })
            .collect(),
    }
}

/// The hosted `FetchRecordHistoryRequest` (its fields as query parameters) and `path`.
struct HistoryParams {
    page: (usize, usize),
    path: Option<String>,
    column_ids: Option<Vec<String>>,
    oldest_first: bool,
    query: Vec<RawFilter>,
}

/// Reads the history listing's parameters: `page`, `path`, `columnIds` (repeated or
/// comma-separated), `sort` (`{"_lastModifiedTime": "asc" | "desc"}`), `includeSystemUser`
/// (gridd records every change under the user of the key that made it, so no entry is a
/// system user's: either value is honoured), `query` (the listing's conditions, on what each
/// entry recorded: `_recordId`, `_path`, `_lastModifiedBy` and `_lastModifiedTime` are the
/// record's and the entry's user and time, a column's condition reads the value or status the
/// entry wrote there and fails on an entry that did not write that column). `groupBy` and
/// `fetchOptions` are refused with a 400 naming them unless blank.
fn history_params(pairs: Vec<(String, String)>) -> ApiResult<HistoryParams> {
    let mut params = HistoryParams {
        page: (0, DEFAULT_LIMIT),
        path: None,
        column_ids: None,
        oldest_first: false,
        query: Vec::new(),
    };
    let blank = |v: &str| matches!(v.trim(), "" | "{}" | "[]" | "null");
    for (key, value) in pairs {
        match key.as_str() {
            "page" => params.page = parse_page(&value)?,
            "path" => params.path = Some(value),
            "columnIds" | "columnIds[]" => params.column_ids.get_or_insert_with(Vec::new).extend(
                value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned),
            ),
            "sort" => params.oldest_first = history_sort(&value)?,
            "includeSystemUser" if !matches!(value.as_str(), "true" | "false") => {
                return Err(ApiError::bad_request(format!(
                    "includeSystemUser \"{}\" is invalid; expected true or false.",
                    crate::io::csv_import::clip(&value, 64)
                )))
            }
            "query" if !blank(&value) => params.query = parse_query(&value)?,
            "groupBy" | "groupBy[]" | "fetchOptions" if !blank(&value) => {
                return Err(ApiError::bad_request(format!(
                    "{key} is not supported on the record history by this server."
                )))
            }
            _ => {}
        }
    }
    Ok(params)
}

/// The parameters with a `fetchRequest` unfolded: the OpenAPI names the history's parameters
/// as members of one `fetchRequest` object, which some of the service's SDKs send whole as JSON
/// (`?fetchRequest={"page":"{\"limit\":1}","columnIds":["a"]}`) and others spread out as
/// parameters of their own. Each member becomes the parameter of its name (a string as it is,
/// an array's items each, any other value as its JSON). One that is not a JSON object carries
/// nothing this server can read (the Go SDK writes the struct in Go's own notation) and is
/// left out, as an unknown parameter is.
fn unfold_fetch_request(pairs: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut unfolded = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        if key != "fetchRequest" {
            unfolded.push((key, value));
            continue;
        }
        let Ok(serde_json::Value::Object(members)) = serde_json::from_str(&value) else {
            continue;
        };
        for (name, member) in members {
            let items = match member {
                serde_json::Value::Array(items) => items,
                other => vec![other],
            };
            for item in items {
                let text = match item {
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                };
                unfolded.push((name.clone(), text));
            }
        }
    }
    unfolded
}

/// A history `sort`: blank, or `{"_lastModifiedTime": "asc" | "desc"}`; true for oldest first.
fn history_sort(text: &str) -> ApiResult<bool> {
    let keys = parse_sort(text)?;
    match keys.as_slice() {
        [] => Ok(false),
        [key] if key.field == "_lastModifiedTime" => Ok(!key.descending),
        _ => Err(ApiError::new(
            ErrorCode::InvalidSortField,
            "the record history sorts only by {\"_lastModifiedTime\": \"asc\" | \"desc\"}.",
        )),
    }
}

#[utoipa::path(tag = "records", params(
    ("page" = Option<String>, Query, description = "JSON {offset, limit}"),
    ("columnIds" = Option<Vec<String>>, Query, description = "only these columns' cells, and only entries that changed one of them"),
    ("sort" = Option<String>, Query, description = "JSON {\"_lastModifiedTime\": \"asc\" | \"desc\"} (default newest first)"),
    ("includeSystemUser" = Option<bool>, Query, description = "accepted: every entry is a key's user's"),
    ("query" = Option<String>, Query, description = "the listing's JSON conditions, on what each entry recorded (its user and time as _lastModifiedBy / _lastModifiedTime)"),
), responses((status = 200, description = "history entries, newest first; X-Total-Count")))]
#[get("/v1/views/{viewId}/records/{recordId}/histories")]
async fn record_history(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Enterprise)?;
    let (view_id, record_id) = path.into_inner();
    let pairs = unfold_fetch_request(query_pairs(&req)?);
    // The other parameters, kept in the `Link` URLs of the next and previous pages.
    let others: Vec<(String, String)> =
        pairs.iter().filter(|(k, _)| k != "page").cloned().collect();
    let fetch = history_params(pairs)?;
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let schema = route.schema().await?;
    let types = schema.columns.iter().map(|c| (c.id.clone(), c.column_type)).collect();
    let msg = ReadHistory {
        view_id,
        record_id,
        path: fetch.path,
        offset: fetch.page.0,
        limit: fetch.page.1,
        column_ids: fetch.column_ids,
        oldest_first: fetch.oldest_first,
        query: fetch.query,
    };
    let page = fetch.page;
    let (entries, total) = route.addr.send(msg).await??;
    let body: Vec<HistoryBody> = entries.iter().map(|e| history_body(e, &types)).collect();
    let mut response = json_response(StatusCode::OK, &body);
    // Paged like records (decisions 9): `Link` to the next and previous pages where they exist.
    set_page_headers(&mut response, total, offset_links(&state, req.path(), &others, page, total));
    Ok(response)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(record_history);
}
