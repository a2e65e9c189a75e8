//! Conditional requests (RFC 9110 section 13) on records and views: the `ETag` a record or a
//! view is answered with, `If-Match` on a record write (412 `preconditionFailed` when the
//! record changed since, nothing written) and `If-None-Match` on a read (304 when the client's
//! copy is current).
//!
//! A record's entity tag is its version (`grid::preconditions::record_version`, the branch
//! clock of its last change) in quotes: `"1042"`. A view's is a digest of its JSON body. Tags
//! are strong; `W/` tags are compared weakly, as RFC 9110 says, so they never satisfy
//! `If-Match`.

use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::HttpResponse;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};

/// What an `If-Match` or `If-None-Match` header asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `*`: any current representation.
    Any,
    /// A list of entity tags, each with whether it is weak (`W/"..."`), unquoted.
    Tags(Vec<(bool, String)>),
}

impl Condition {
    /// Whether `current` (a strong tag, unquoted) satisfies `If-Match` (strong comparison).
    pub fn matches_strongly(&self, current: &str) -> bool {
        match self {
            Condition::Any => true,
            Condition::Tags(tags) => tags.iter().any(|(weak, tag)| !weak && tag == current),
        }
    }

    /// Whether `current` satisfies `If-None-Match`'s weak comparison (the client has it).
    pub fn matches_weakly(&self, current: &str) -> bool {
        match self {
            Condition::Any => true,
            Condition::Tags(tags) => tags.iter().any(|(_, tag)| tag == current),
        }
    }

    /// The one record version a write's `If-Match` names: `None` for `*` (the record must only
    /// exist). A list of several tags, a weak tag or a tag that is not a version is a 400:
    /// a write compares with one version.
    pub fn version(&self) -> ApiResult<Option<u32>> {
        match self {
            Condition::Any => Ok(None),
            Condition::Tags(tags) => match tags.as_slice() {
                [(false, tag)] => parse_version(tag).map(Some),
                _ => Err(ApiError::bad_request(
                    "If-Match names one strong entity tag of the record, as its ETag gave it.",
                )),
            },
        }
    }
}

/// The `If-Match` header, if the request has one (a malformed one is a 400).
pub fn if_match(headers: &HeaderMap) -> ApiResult<Option<Condition>> {
    parse_header(headers, header::IF_MATCH)
}

/// The `If-None-Match` header, if the request has one (a malformed one is a 400).
pub fn if_none_match(headers: &HeaderMap) -> ApiResult<Option<Condition>> {
    parse_header(headers, header::IF_NONE_MATCH)
}

fn parse_header(headers: &HeaderMap, name: header::HeaderName) -> ApiResult<Option<Condition>> {
    let mut values = headers.get_all(&name).peekable();
    if values.peek().is_none() {
        return Ok(None);
    }
    let mut tags = Vec::new();
    for value in values {
        let text = value.to_str().map_err(|_| malformed(&name))?;
        if text.trim() == "*" {
            return Ok(Some(Condition::Any));
        }
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            tags.push(parse_tag(item).ok_or_else(|| malformed(&name))?);
        }
    }
    if tags.is_empty() {
        return Err(malformed(&name));
    }
    Ok(Some(Condition::Tags(tags)))
}

/// One entity tag, `"x"` or `W/"x"`: whether it is weak, and its text.
fn parse_tag(item: &str) -> Option<(bool, String)> {
    let (weak, quoted) = match item.strip_prefix("W/") {
        Some(rest) => (true, rest),
        None => (false, item),
    };
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    // etagc: any visible character but the quote (RFC 9110 section 8.8.3).
    let valid = inner.bytes().all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80);
    valid.then(|| (weak, inner.to_owned()))
}

fn malformed(name: &header::HeaderName) -> ApiError {
    ApiError::bad_request(format!(
        "The {name} header is not a list of entity tags (\"...\" or W/\"...\") or *."
    ))
}

/// A record version from an entity tag's text, or from a bulk write's `ifMatch` field (with
/// or without the quotes).
pub fn parse_version(tag: &str) -> ApiResult<u32> {
    let text = tag.trim();
    let text = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text);
    text.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "\"{}\" is not a record's entity tag (its ETag, a number in quotes).",
            crate::io::csv_import::clip(tag, 64)
        ))
    })
}

/// The entity tag of a record at `version`, unquoted.
pub fn record_tag(version: u32) -> String {
    version.to_string()
}

/// The entity tag of a representation: the first 16 bytes of its SHA-256, in hex, unquoted.
pub fn body_tag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Sets `ETag` on `response` to `tag` (unquoted).
pub fn with_tag(mut response: HttpResponse, tag: &str) -> HttpResponse {
    if let Ok(value) = HeaderValue::from_str(&format!("\"{tag}\"")) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

/// A JSON answer tagged with a digest of its bytes (`body_tag`), or 304 when the request's
/// `If-None-Match` names that tag.
pub fn tagged_json<T: Serialize + ?Sized>(
    headers: &HeaderMap,
    body: &T,
) -> ApiResult<HttpResponse> {
    let cached = if_none_match(headers)?;
    let bytes = serde_json::to_vec(body)
        .map_err(|e| ApiError::internal(format!("rendering the answer: {e}")))?;
    let tag = body_tag(&bytes);
    if cached.is_some_and(|c| c.matches_weakly(&tag)) {
        return Ok(not_modified(&tag));
    }
    let response = HttpResponse::Ok().content_type("application/json").body(bytes);
    Ok(with_tag(response, &tag))
}

/// 304 Not Modified with the current `tag`.
pub fn not_modified(tag: &str) -> HttpResponse {
    with_tag(HttpResponse::NotModified().finish(), tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderName;

    fn headers(name: HeaderName, values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(name.clone(), HeaderValue::from_str(value).expect("a header value"));
        }
        map
    }

    #[test]
    fn entity_tags_are_parsed_and_compared_as_rfc_9110_says() {
        let none = if_match(&HeaderMap::new()).expect("no header");
        assert_eq!(none, None);
        let any = if_match(&headers(header::IF_MATCH, &["*"])).expect("star").expect("some");
        assert!(any.matches_strongly("7") && any.version().expect("any").is_none());
        let list = headers(header::IF_NONE_MATCH, &["\"3\", W/\"7\"", "\"9\""]);
        let list = if_none_match(&list).expect("a list").expect("some");
        assert!(list.matches_weakly("7") && list.matches_weakly("9") && !list.matches_weakly("8"));
        assert!(!list.matches_strongly("7"), "a weak tag never matches strongly");
        assert!(list.version().is_err(), "a write compares with one version");
        let one = if_match(&headers(header::IF_MATCH, &["\"42\""])).expect("one").expect("some");
        assert_eq!(one.version().expect("a version"), Some(42));
        for bad in ["42", "\"4\"2\"", "W/", "\"open", ""] {
            assert!(if_match(&headers(header::IF_MATCH, &[bad])).is_err(), "{bad}");
        }
        let word = if_match(&headers(header::IF_MATCH, &["\"abc\""])).expect("a tag");
        assert!(word.expect("some").version().is_err(), "not a record version");
    }

    #[test]
    fn versions_read_with_or_without_quotes_and_tags_are_stable() {
        assert_eq!(parse_version("\"12\"").expect("quoted"), 12);
        assert_eq!(parse_version("12").expect("bare"), 12);
        assert!(parse_version("-1").is_err() && parse_version("x").is_err());
        assert_eq!(body_tag(b"{}"), body_tag(b"{}"));
        assert_ne!(body_tag(b"{}"), body_tag(b"[]"));
        assert_eq!(body_tag(b"").len(), 32);
    }
}
