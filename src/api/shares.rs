//! Share links (decisions.md section 10): `PUT/GET/DELETE /v1/views/<viewId>/shares` (Enterprise
//! plan, `manage`), and the public read-only views of a shared view, reached by its token with
//! no key:
//! - `GET /share/<token>`: an HTML page of the view's records, 50 per page (`?page=<n>`, 1-based),
//!   with a history page per record (`/share/<token>/records/<recordId>/history`) when the link
//!   includes grid history;
//! - `GET /share/<token>/records`: the same records as JSON, paged like the API's listing
//!   (`page`, `query`, `sort`; `X-Total-Count`), and `.../records/<recordId>/histories` as JSON
//!   when history is included.
//!
//! A disabled or unknown link answers 404 `shareIsNotFound`. With `--rate-limit` set, the public
//! routes are limited per client address like a key (429 with `Retry-After`). Every value on the page is HTML-
//! escaped, and the page is served with a content security policy that allows no script.

use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::{delete, get, put, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa_actix_web::service_config::ServiceConfig;

use super::listing::parse_list_params;
use super::record_history::history_body;
use super::records::{read_records, record_body, RecordBody};
use super::references::{resolve_references, ReferenceReader};
use super::{exec, json_response, no_content, ok, percent_encode, view_route};
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::auth::{Principal, Privilege, Tier};
use crate::catalog::model::Share;
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{ReadHistory, ReadRecords};
use crate::grid::read::RecordOut;
use crate::grid::value::CellValue;
use crate::io::export::escape_html;
use crate::state::AppState;

/// Records per HTML page.
const PAGE_ROWS: usize = 50;

/// A share link as the API answers it. Its `companyId` is the company's integer id written as a
/// string: gridly-api.md's "Shared link" and the OpenAPI's `ShareView` declare a string, and the
/// service's generated SDKs refuse a number there (unlike `Project.companyId`, decisions 2).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ShareBody<'a> {
    company_id: String,
    link: String,
    active: bool,
    view_id: &'a str,
    include_grid_history: bool,
    created_date: &'a str,
    last_modified_date: &'a str,
}

fn share_body<'a>(state: &AppState, share: &'a Share) -> ShareBody<'a> {
    ShareBody {
        company_id: share.company_id.to_string(),
        link: format!("{}/share/{}", state.public_url, share.token),
        active: share.active,
        view_id: &share.view_id,
        include_grid_history: share.include_grid_history,
        created_date: &share.created_date,
        last_modified_date: &share.last_modified_date,
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShareRequest {
    include_grid_history: Option<bool>,
}

#[utoipa::path(tag = "views", request_body = Object, responses((status = 200, description = "the share link, enabled")))]
#[put("/v1/views/{viewId}/shares")]
async fn enable_share(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Enterprise)?;
    let view_id = view_id.into_inner();
    view_route(&state, &p, &view_id, Privilege::Manage)?;
    let request: ShareRequest = if body.iter().all(u8::is_ascii_whitespace) {
        ShareRequest::default()
    } else {
        object_from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("The request body is invalid: {e}")))?
    };
    let share =
        exec(&state, move |s| s.enable_share(&p, &view_id, request.include_grid_history)).await??;
    ok(&share_body(&state, &share))
}

#[utoipa::path(tag = "views", responses((status = 200, description = "the share link")))]
#[get("/v1/views/{viewId}/shares")]
async fn get_share(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Enterprise)?;
    let view_id = view_id.into_inner();
    view_route(&state, &p, &view_id, Privilege::Manage)?;
    let share = exec(&state, move |s| s.share(&view_id)).await??;
    ok(&share_body(&state, &share))
}

#[utoipa::path(tag = "views", responses((status = 204)))]
#[delete("/v1/views/{viewId}/shares")]
async fn disable_share(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Enterprise)?;
    let view_id = view_id.into_inner();
    view_route(&state, &p, &view_id, Privilege::Manage)?;
    exec(&state, move |s| s.disable_share(&view_id)).await??;
    no_content()
}

/// The active link with `token` and its view's route (404 shareIsNotFound otherwise).
/// Every public request is rate-limited by its client's address when a limit is set.
async fn shared(
    state: &AppState,
    req: &HttpRequest,
    token: String,
) -> ApiResult<(Share, std::sync::Arc<BranchRoute>)> {
    state.limiter.check_client(req)?;
    let not_found = || {
        ApiError::new(ErrorCode::ShareIsNotFound, "This share link does not exist or is disabled.")
    };
    let share = exec(state, move |s| s.share_by_token(&token)).await?.ok_or_else(not_found)?;
    let route = state.routes.view(&share.view_id).ok_or_else(not_found)?;
    Ok((share, route))
}

/// HTML-escapes text for element content and quoted attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_html(&mut out, text);
    out
}

/// A cell's value as page text: lists joined with commas, the rest as exported.
fn display(value: &CellValue) -> String {
    match value {
        CellValue::List(items) => items.join(", "),
        other => crate::grid::codec::export_text(other),
    }
}

fn html_page(title: &str, body: &str) -> HttpResponse {
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>\
         body{{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}}\
         table{{border-collapse:collapse;width:100%}}\
         th,td{{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top;white-space:pre-wrap}}\
         th{{background:#f3f3f3}} nav a{{margin-right:1rem}}\
         </style></head><body>{body}</body></html>\n",
        title = escape(title)
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'",
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .body(page)
}

#[derive(Debug, Deserialize)]
struct PageQuery {
    page: Option<String>,
}

#[utoipa::path(tag = "views", responses((status = 200, description = "an HTML page of the shared view")))]
#[get("/share/{token}")]
async fn share_page(
    state: web::Data<AppState>,
    token: web::Path<String>,
    query: web::Query<PageQuery>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let token = token.into_inner();
    let (share, route) = shared(&state, &req, token.clone()).await?;
    let page = match query.page.as_deref() {
        None => 1,
        Some(text) => {
            text.parse::<usize>().ok().filter(|p| *p >= 1 && *p <= 1_000_000).ok_or_else(|| {
                ApiError::new(ErrorCode::InvalidPaging, "page is a number from 1.")
            })?
        }
    };
    let schema = route.schema().await?;
    let view = schema
        .view(&share.view_id)
        .ok_or_else(|| ApiError::new(ErrorCode::ShareIsNotFound, "The shared view is gone."))?;
    let msg = ReadRecords {
        view_id: share.view_id.clone(),
        offset: (page - 1) * PAGE_ROWS,
        limit: PAGE_ROWS,
        column_ids: None,
        filters: Vec::new(),
        sort: Vec::new(),
        cursor: None,
        rendered: false,
    };
    let mut records = read_records(&state, &route, msg).await?;
    resolve_references(&state, ReferenceReader::Share, &route, &mut records.records).await?;
    let pages = records.total.div_ceil(PAGE_ROWS).max(1);
    let columns = schema.view_columns(view);
    let mut body = format!(
        "<h1>{}</h1><p id=\"summary\">{} records · page {page} of {pages}</p><table><thead><tr>\
         <th>Record ID</th><th>Path</th>",
        escape(&view.name),
        records.total
    );
    body.push_str(&head_cells(&columns, share.include_grid_history));
    body.push_str("</tr></thead><tbody>");
    for record in &records.records {
        body.push_str(&row_html(record, &token, share.include_grid_history));
    }
    body.push_str("</tbody></table>");
    body.push_str(&page_links(page, pages));
    Ok(html_page(&view.name, &body))
}

/// The header cells of the view's columns (and of the history, when the share shows it).
fn head_cells(columns: &[(&crate::grid::schema::ColumnDef, bool)], history: bool) -> String {
    let mut cells = String::new();
    for (column, _) in columns {
        cells.push_str(&format!(
            "<th data-column-id=\"{}\">{}</th>",
            escape(&column.id),
            escape(&column.name)
        ));
    }
    if history {
        cells.push_str("<th>History</th>");
    }
    cells
}

/// The links to the previous and the next page, where there is one.
fn page_links(page: usize, pages: usize) -> String {
    let mut nav = "<nav>".to_owned();
    if page > 1 {
        nav.push_str(&format!("<a rel=\"prev\" href=\"?page={}\">Previous</a>", page - 1));
    }
    if page < pages {
        nav.push_str(&format!("<a rel=\"next\" href=\"?page={}\">Next</a>", page + 1));
    }
    nav.push_str("</nav>");
    nav
}

fn row_html(record: &RecordOut, token: &str, history: bool) -> String {
    let mut row = format!(
        "<tr data-record-id=\"{}\"><td>{}</td><td>{}</td>",
        escape(&record.id),
        escape(&record.id),
        escape(&record.path)
    );
    for cell in &record.cells {
        let shown = match &cell.referenced {
            Some(r) => r.values.iter().map(display).collect::<Vec<_>>().join(", "),
            None => display(&cell.value),
        };
        row.push_str(&format!("<td>{}</td>", escape(&shown)));
    }
    if history {
        row.push_str(&format!(
            "<td><a href=\"/share/{}/records/{}/history\">History</a></td>",
            percent_encode(token),
            percent_encode(&record.id)
        ));
    }
    row.push_str("</tr>");
    row
}

#[utoipa::path(tag = "views", responses((status = 200, description = "the shared view's records as JSON")))]
#[get("/share/{token}/records")]
async fn share_records(
    state: web::Data<AppState>,
    token: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (share, route) = shared(&state, &req, token.into_inner()).await?;
    let params = parse_list_params(req.query_string())?;
    let msg = ReadRecords {
        view_id: share.view_id.clone(),
        offset: params.offset,
        limit: params.limit,
        column_ids: params.column_ids,
        filters: params.filters,
        sort: params.sort,
        cursor: None,
        rendered: false,
    };
    let mut page = read_records(&state, &route, msg).await?;
    resolve_references(&state, ReferenceReader::Share, &route, &mut page.records).await?;
    let body: Vec<RecordBody> = page.records.iter().map(record_body).collect();
    let mut response = json_response(StatusCode::OK, &body);
    if let Ok(v) = page.total.to_string().parse() {
        response.headers_mut().insert(header::HeaderName::from_static("x-total-count"), v);
    }
    Ok(response)
}

/// A record's history through a link that includes grid history (404 otherwise).
async fn shared_history(
    state: &AppState,
    req: &HttpRequest,
    token: String,
    record_id: String,
) -> ApiResult<(Vec<crate::grid::history::HistoryEntry>, crate::grid::schema::Schema)> {
    let (share, route) = shared(state, req, token).await?;
    if !share.include_grid_history {
        return Err(ApiError::new(
            ErrorCode::ShareIsNotFound,
            "This share link does not include grid history.",
        ));
    }
    let schema = route.schema().await?;
    let msg = ReadHistory {
        view_id: share.view_id,
        record_id,
        path: None,
        offset: 0,
        limit: 1000,
        column_ids: None,
        oldest_first: false,
        query: Vec::new(),
    };
    let (entries, _) = route.addr.send(msg).await??;
    Ok((entries, schema))
}

#[utoipa::path(tag = "views", responses((status = 200, description = "a record's history as JSON, when the link includes it")))]
#[get("/share/{token}/records/{recordId}/histories")]
async fn share_history_json(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (token, record_id) = path.into_inner();
    let (entries, schema) = shared_history(&state, &req, token, record_id).await?;
    let types = schema.columns.iter().map(|c| (c.id.clone(), c.column_type)).collect();
    ok(&entries.iter().map(|e| history_body(e, &types)).collect::<Vec<_>>())
}

#[utoipa::path(tag = "views", responses((status = 200, description = "an HTML page of a record's history, when the link includes it")))]
#[get("/share/{token}/records/{recordId}/history")]
async fn share_history_page(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let (token, record_id) = path.into_inner();
    let (entries, schema) = shared_history(&state, &req, token.clone(), record_id.clone()).await?;
    let name = |id: &str| schema.column(id).map_or(id.to_owned(), |c| c.name.clone());
    let mut body = format!(
        "<h1>History of {}</h1><p><a href=\"/share/{}\">Back to the view</a></p><table><thead><tr>\
         <th>When</th><th>Who</th><th>Path</th><th>Changes</th></tr></thead><tbody>",
        escape(&record_id),
        percent_encode(&token)
    );
    for entry in &entries {
        let changes: Vec<String> = entry
            .cells
            .iter()
            .map(|c| format!("{}: {}", escape(&name(&c.column_id)), escape(&display(&c.value))))
            .collect();
        body.push_str(&format!(
            "<tr class=\"history\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&crate::grid::codec::format_timestamp(entry.time_ms)),
            escape(&entry.user),
            escape(&entry.path),
            changes.join("<br>")
        ));
    }
    body.push_str("</tbody></table>");
    Ok(html_page(&format!("History of {record_id}"), &body))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(enable_share)
        .service(get_share)
        .service(disable_share)
        .service(share_page)
        .service(share_records)
        .service(share_history_json)
        .service(share_history_page);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_text_is_escaped() {
        assert_eq!(
            escape("<script>alert(\"x\")</script> & 'y'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(percent_encode("a b/é"), "a%20b%2F%C3%A9");
    }
}
