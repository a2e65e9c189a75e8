//! A listing's parameters (`page`, `columnIds`, `fetchFileOption`, `query`, `sort`, the
//! cursors) as every listing reads them, and the `Link` header of its pages.

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::HttpResponse;
use serde_json::Value;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::query::{parse_query, parse_sort, Direction, RawFilter, RawSort};
use crate::grid::read::RecordPage;
use crate::state::AppState;

/// Default and largest page sizes (decisions.md section 6).
pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;

/// The longest `search` of a listing that takes one (glossary entries, databases), in
/// characters.
pub const MAX_SEARCH_CHARS: usize = 200;

/// The listing parameters of a request's query string.
#[derive(Debug, Default)]
pub struct ListParams {
    pub offset: usize,
    pub limit: usize,
    pub column_ids: Option<Vec<String>>,
    pub fetch_file_option: Option<String>,
    /// Conditions of `query`.
    pub filters: Vec<RawFilter>,
    /// Keys of `sort`.
    pub sort: Vec<RawSort>,
    /// `afterRecordId` / `beforeRecordId`.
    pub cursor: Option<(Direction, String)>,
    /// Every pair except `page`, kept for `Link` URLs.
    pub others: Vec<(String, String)>,
}

/// Parses `page` (`{"offset":0,"limit":100}`), `columnIds`, `fetchFileOption`, `query` and
/// `sort` (their columns are checked by the grid actor).
pub fn parse_list_params(query: &str) -> ApiResult<ListParams> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|e| ApiError::bad_request(format!("The query string is invalid: {e}")))?;
    let mut params = ListParams { limit: DEFAULT_LIMIT, ..ListParams::default() };
    for (key, value) in pairs {
        match key.as_str() {
            "page" => (params.offset, params.limit) = parse_page(&value)?,
            "columnIds" => {
                let ids = params.column_ids.get_or_insert_with(Vec::new);
                ids.extend(
                    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned),
                );
                params.others.push((key, value));
            }
            "fetchFileOption" => {
                if !matches!(value.as_str(), "id" | "name" | "all") {
                    return Err(ApiError::bad_request(format!(
                        "fetchFileOption \"{value}\" is invalid; expected id, name or all."
                    )));
                }
                params.fetch_file_option = Some(value.clone());
                params.others.push((key, value));
            }
            "query" => {
                params.filters = parse_query(&value)?;
                params.others.push((key, value));
            }
            "sort" => {
                params.sort = parse_sort(&value)?;
                params.others.push((key, value));
            }
            "afterRecordId" | "beforeRecordId" if value.is_empty() => {}
            "afterRecordId" | "beforeRecordId" => {
                if params.cursor.is_some() {
                    return Err(ApiError::bad_request(
                        "Give one of afterRecordId and beforeRecordId, once.",
                    ));
                }
                let direction =
                    if key == "afterRecordId" { Direction::After } else { Direction::Before };
                params.cursor = Some((direction, value));
            }
            _ => params.others.push((key, value)),
        }
    }
    if params.cursor.is_some() && params.offset != 0 {
        return Err(ApiError::new(
            ErrorCode::InvalidPaging,
            "page.offset must be 0 or absent with afterRecordId or beforeRecordId.",
        ));
    }
    Ok(params)
}

/// `(offset, limit)` of a `page` parameter; a limit over the maximum is served as the maximum.
pub fn parse_page(text: &str) -> ApiResult<(usize, usize)> {
    let invalid = |why: &str| {
        ApiError::new(ErrorCode::InvalidPaging, format!("page {text} is invalid: {why}"))
    };
    if text.trim().is_empty() {
        return Ok((0, DEFAULT_LIMIT));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|_| invalid("it must be a JSON object"))?;
    let object = value.as_object().ok_or_else(|| invalid("it must be a JSON object"))?;
    let offset = match object.get("offset") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| invalid("offset must be an integer >= 0"))? as usize,
    };
    let limit = match object.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => (n as usize).min(MAX_LIMIT),
            _ => return Err(invalid("limit must be an integer >= 1")),
        },
    };
    Ok((offset, limit))
}

/// `Link` of a cursor page: `next` (after its last record) when more follow it, `prev` (before
/// its first) when more precede it, as far as the page's direction tells.
fn cursor_links(
    state: &AppState,
    path: &str,
    params: &ListParams,
    page: &RecordPage,
) -> Option<String> {
    let (first, last) = page.ends.as_ref()?;
    let mut header = String::new();
    let page_json = format!("{{\"limit\":{}}}", params.limit);
    let after = matches!(params.cursor, Some((Direction::After, _)));
    let mut link = |cursor: (&str, &str), rel: &str| {
        let pairs = [("page", page_json.as_str()), cursor];
        push_link(&mut header, (&state.public_url, path), &params.others, &pairs, rel);
    };
    if !after || page.more {
        link(("afterRecordId", last), "next");
    }
    if after || page.more {
        link(("beforeRecordId", first), "prev");
    }
    (!header.is_empty()).then_some(header)
}

/// Appends `<url>; rel="rel"` to a `Link` header: `public_url` + `path` with the query
/// `others` then `extra`, form-encoded as `serde_urlencoded` encodes them.
fn push_link(
    header: &mut String,
    (public_url, path): (&str, &str),
    others: &[(String, String)],
    extra: &[(&str, &str)],
    rel: &str,
) {
    if !header.is_empty() {
        header.push_str(", ");
    }
    // Room for a link with a page parameter and a few short others: no regrowth.
    header.reserve(public_url.len() + path.len() + 96);
    header.push('<');
    header.push_str(public_url);
    header.push_str(path);
    header.push('?');
    let start = header.len();
    let mut query = url::form_urlencoded::Serializer::for_suffix(std::mem::take(header), start);
    query.extend_pairs(others).extend_pairs(extra);
    *header = query.finish();
    header.push_str(">; rel=\"");
    header.push_str(rel);
    header.push('"');
}

/// `Link` header with absolute `next` / `prev` URLs where such pages exist.
pub(super) fn link_header(
    state: &AppState,
    path: &str,
    params: &ListParams,
    page: &RecordPage,
) -> Option<String> {
    if params.cursor.is_some() {
        return cursor_links(state, path, params, page);
    }
    offset_links(state, path, &params.others, (params.offset, params.limit), page.total)
}

/// A page's headers, as the record listing and a record's history answer them: `X-Total-Count`,
/// and `Link` (`link_header`, `offset_links`) when there is a page before or after it.
pub(super) fn set_page_headers(response: &mut HttpResponse, total: usize, link: Option<String>) {
    let headers = response.headers_mut();
    headers.insert(HeaderName::from_static("x-total-count"), HeaderValue::from(total));
    if let Some(link) = link.and_then(|link| HeaderValue::from_str(&link).ok()) {
        headers.insert(header::LINK, link);
    }
}

/// `Link` of a page at `(offset, limit)` of `total` items (records, a record's history), with
/// absolute `next` / `prev` URLs where such pages exist; `others`: the request's other query
/// parameters, kept in each URL.
pub(super) fn offset_links(
    state: &AppState,
    path: &str,
    others: &[(String, String)],
    (offset, limit): (usize, usize),
    total: usize,
) -> Option<String> {
    let mut header = String::new();
    let mut link = |offset: usize, rel: &str| {
        let page = format!("{{\"offset\":{offset},\"limit\":{limit}}}");
        push_link(&mut header, (&state.public_url, path), others, &[("page", &page)], rel);
    };
    // Saturating: an offset near the largest integer has no next page and never wraps to 0.
    let next = offset.saturating_add(limit);
    if next < total {
        link(next, "next");
    }
    if offset > 0 {
        link(offset.saturating_sub(limit), "prev");
    }
    (!header.is_empty()).then_some(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A `Link` header as it was built before `push_link`: pairs cloned, serde_urlencoded.
    fn link_by_serde(others: &[(String, String)], extra: &[(&str, &str)]) -> String {
        let mut pairs = others.to_vec();
        pairs.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let query = serde_urlencoded::to_string(&pairs).expect("pairs of strings encode");
        format!("<http://127.0.0.1:8080/v1/views/v1/records?{query}>; rel=\"next\"")
    }

    proptest! {
        #[test]
        fn push_link_encodes_as_serde_urlencoded(
            others in proptest::collection::vec(("\\PC{0,12}", "\\PC{0,24}"), 0..4),
            value in "\\PC{0,24}",
        ) {
            let extra = [("page", "{\"offset\":100,\"limit\":100}"), ("afterRecordId", value.as_str())];
            let mut header = String::new();
            push_link(&mut header, ("http://127.0.0.1:8080", "/v1/views/v1/records"), &others, &extra, "next");
            prop_assert_eq!(&header, &link_by_serde(&others, &extra));
            push_link(&mut header, ("http://127.0.0.1:8080", "/v1/views/v1/records"), &others, &extra, "prev");
            let again = link_by_serde(&others, &extra).replace("rel=\"next\"", "rel=\"prev\"");
            prop_assert_eq!(header, format!("{}, {again}", link_by_serde(&others, &extra)));
        }
    }
}
