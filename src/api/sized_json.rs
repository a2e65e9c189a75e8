//! `SizedJson<T>`: actix's `web::Json<T>` for large bodies. actix's extractor reads a body into
//! a buffer of 8 KiB that doubles as chunks arrive, so a 1 MB bulk write is copied seven more
//! times on its way in; this one sizes the buffer from `Content-Length` at the start (up to
//! `MAX_RESERVE`, so a client announcing a large body that never comes ties up little memory) and
//! otherwise behaves the same: the same content-type check, limit (`JsonLimit`, app data set to
//! `JsonConfig`'s), decompression of `Content-Encoding`, deadline errors and error responses
//! (`errors::json_config`'s handler).

use actix_web::dev::{Decompress, Payload};
use actix_web::error::JsonPayloadError;
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::web::{Bytes, BytesMut};
use actix_web::{mime, FromRequest, HttpMessage, HttpRequest};
use futures_util::future::LocalBoxFuture;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::errors::json_payload_error;
use crate::error::{ApiError, ErrorCode};
use crate::grid::records::{parse_records, RecordInput, RecordsBody};

/// The most bytes reserved for a body before any of it arrived; a larger body grows the buffer
/// as it comes.
const MAX_RESERVE: usize = 4 << 20;

/// The body limit `SizedJson` applies (app data; 2 MiB when absent, as actix's default).
#[derive(Debug, Clone, Copy)]
pub struct JsonLimit(pub usize);

/// A JSON request body read into a buffer sized up front. See the module doc.
#[derive(Debug)]
pub struct SizedJson<T>(pub T);

impl<T> SizedJson<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// A body `SizedJson` reads: parsed from JSON text as serde parses it, which a type may do
/// faster by itself as long as it answers the same.
pub trait JsonBody: DeserializeOwned {
    fn from_json(text: &str) -> serde_json::Result<Self> {
        serde_json::from_str(text)
    }
}

/// One record (`PATCH /records/<id>`): an object, as every object body.
impl JsonBody for RecordInput {
    fn from_json(text: &str) -> serde_json::Result<Self> {
        object_from_slice(text.as_bytes())
    }
}

/// A bulk write's records, read by `parse_records` when they have the usual shape (serde's
/// reading of them was a quarter of the server's CPU in a bulk load), by serde otherwise.
impl JsonBody for RecordsBody {
    fn from_json(text: &str) -> serde_json::Result<Self> {
        parse_records(text).map_or_else(|| serde_json::from_str(text), Ok)
    }
}

impl<T: JsonBody + 'static> FromRequest for SizedJson<T> {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let limit = req.app_data::<JsonLimit>().map_or(2 << 20, |l| l.0);
        let is_json = is_json(&req);
        let length = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        let payload = Decompress::from_headers(payload.take(), req.headers());
        Box::pin(async move {
            let body = read(is_json, length, limit, payload)
                .await
                .map_err(|err| json_payload_error(err, &req))?;
            check_values(&body)?;
            parse(&body)
                .map(SizedJson)
                .map_err(|err| json_payload_error(JsonPayloadError::Deserialize(err), &req))
        })
    }
}

/// Reads the body as `web::Json` does, into a buffer of the announced length.
async fn read(
    is_json: bool,
    length: Option<usize>,
    limit: usize,
    mut payload: Decompress<Payload>,
) -> Result<BytesMut, JsonPayloadError> {
    if !is_json {
        return Err(JsonPayloadError::ContentType);
    }
    if let Some(length) = length.filter(|&length| length > limit) {
        return Err(JsonPayloadError::OverflowKnownLength { length, limit });
    }
    let mut buf = BytesMut::with_capacity(length.unwrap_or(8192).min(limit).min(MAX_RESERVE));
    while let Some(chunk) = payload.next().await {
        let chunk: actix_web::web::Bytes = chunk.map_err(JsonPayloadError::Payload)?;
        if buf.len() + chunk.len() > limit {
            return Err(JsonPayloadError::Overflow { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// The most JSON values a request body may hold, as `json_values` counts them (each `{`, `[`
/// and `,`: an empty object in an array counts 2). Parsed, such an object takes up to about
/// 110 bytes (a `serde_json::Value` in its vector, grown by doubling), 35 times the 3 bytes of
/// `{},`: a 32 MiB body of empty objects in a cell's value held 1.2 GiB while it was parsed.
/// This bounds one body's parse to about 110 MiB; bodies clients send hold far fewer (a bulk
/// add of 1000 records of 12 cells about 60,000).
pub const MAX_JSON_VALUES: usize = 2_000_000;

/// Refuses (413 payloadTooLarge) a body holding more than `MAX_JSON_VALUES` values, before it
/// is parsed. A body of at most that many bytes cannot, and is not read.
fn check_values(body: &[u8]) -> Result<(), ApiError> {
    if body.len() <= MAX_JSON_VALUES || json_values(body, MAX_JSON_VALUES) <= MAX_JSON_VALUES {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!(
            "The request body holds more than {MAX_JSON_VALUES} JSON values (array items and \
             object fields); send them in smaller requests."
        ),
    ))
}

/// The values of JSON text `body` as `check_values` counts them: each `{`, `[` and `,` outside
/// strings (an array of n items counts n + 1), counted until past `stop`. Strings, most of a
/// body's bytes, are stepped over with `memchr` (to their closing quote, past escapes).
fn json_values(body: &[u8], stop: usize) -> usize {
    let mut count = 0usize;
    let mut at = 0;
    while at < body.len() {
        // Outside a string: up to the next one.
        let end = memchr::memchr(b'"', &body[at..]).map_or(body.len(), |i| at + i);
        count += body[at..end].iter().filter(|&&b| matches!(b, b'{' | b'[' | b',')).count();
        if count > stop {
            break;
        }
        // Inside the string: up to its closing quote, stepping over each escaped byte.
        at = end + 1;
        loop {
            let Some(i) = memchr::memchr2(b'"', b'\\', body.get(at..).unwrap_or_default()) else {
                // A string left open: the rest is its text.
                return count;
            };
            at += i;
            if body[at] == b'"' {
                break;
            }
            at += 2;
        }
        at += 1;
    }
    count
}

/// Parses a JSON body as `serde_json::from_slice` does. A body of valid UTF-8 (checked whole,
/// with SIMD) is parsed as text, so serde_json does not check each string's bytes again; any
/// other goes to `from_slice`, which gives the same error as before.
fn parse<T: JsonBody>(body: &[u8]) -> serde_json::Result<T> {
    match simdutf8::basic::from_utf8(body) {
        Ok(text) => T::from_json(text),
        Err(_) => serde_json::from_slice(body),
    }
}

/// A JSON body that must be an object, parsed into `T` (read as `SizedJson` reads). serde's
/// derive also takes an array holding a struct's fields in order (`["name", "desc"]` for
/// `{"name", "description"}`), which no client of the API means: such a body is refused (400)
/// as any body of the wrong type is.
#[derive(Debug)]
pub struct JsonObject<T>(pub T);

impl<T> JsonObject<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for JsonObject<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// `T` read from a JSON object only (`JsonObject`).
#[derive(Debug, serde::Deserialize)]
#[serde(transparent)]
struct Object<T>(T);

impl<T: DeserializeOwned> JsonBody for Object<T> {
    fn from_json(text: &str) -> serde_json::Result<Self> {
        object_from_slice(text.as_bytes())
    }
}

/// `T` read from a JSON body that must be an object (see `JsonObject`), for the handlers that
/// parse their body themselves: an array is refused as a value of the wrong type.
pub fn object_from_slice<T: DeserializeOwned>(body: &[u8]) -> serde_json::Result<T> {
    if body.trim_ascii_start().starts_with(b"[") {
        return Err(serde::de::Error::invalid_type(serde::de::Unexpected::Seq, &"a JSON object"));
    }
    serde_json::from_slice(body)
}

impl<T: DeserializeOwned + 'static> FromRequest for JsonObject<T> {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = SizedJson::<Object<T>>::from_request(req, payload);
        Box::pin(async move { Ok(JsonObject(body.await?.0 .0)) })
    }
}

/// A JSON body taken as bytes, for the handlers that parse it themselves or take it optional:
/// a body that is there must be labelled JSON (415 unsupportedMediaType otherwise, as
/// `SizedJson` answers, decisions 3); an absent or blank one is the handler's to judge.
#[derive(Debug)]
pub struct JsonBytes(pub Bytes);

impl std::ops::Deref for JsonBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl FromRequest for JsonBytes {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let is_json = is_json(req);
        let body = Bytes::from_request(req, payload);
        Box::pin(async move {
            let body = body.await?;
            if !is_json && !body.iter().all(u8::is_ascii_whitespace) {
                return Err(ApiError::new(
                    ErrorCode::UnsupportedMediaType,
                    "The request body must be JSON with Content-Type: application/json.",
                )
                .into());
            }
            check_values(&body)?;
            Ok(JsonBytes(body))
        })
    }
}

/// Whether the request says its body is JSON (`application/json`, or a `+json` type).
fn is_json(req: &HttpRequest) -> bool {
    matches!(
        req.mime_type(),
        Ok(Some(mime)) if mime.subtype() == mime::JSON || mime.suffix() == Some(mime::JSON)
    )
}

#[cfg(test)]
mod tests {
    use super::{check_values, json_values, parse, JsonBody, Object, MAX_JSON_VALUES};
    use proptest::prelude::*;
    use serde_json::Value;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Named {
        name: String,
        description: Option<String>,
    }

    #[test]
    fn an_object_body_is_read_from_an_object_only() {
        let named = parse::<Object<Named>>(br#" {"name": "a"}"#).expect("an object").0;
        assert_eq!(named, Named { name: "a".into(), description: None });
        for body in [&br#"["a", "b"]"#[..], b" \n[\"a\"]", b"[]"] {
            let err = parse::<Object<Named>>(body).expect_err("an array is refused");
            assert!(err.to_string().contains("expected a JSON object"), "{err}");
        }
        assert!(serde_json::from_slice::<Named>(br#"["a", "b"]"#).is_ok(), "serde takes it");
    }

    #[test]
    fn values_are_counted_outside_strings_and_a_body_over_the_limit_is_refused() {
        let body = br#"[{"a": [1, 2, {}]}, "x, {[\"y,"]"#;
        // `[`, `{`, `[`, two commas and `{` in the first record, the comma before "x".
        assert_eq!(json_values(body, usize::MAX), 7);
        assert!(json_values(b"[1,2,3,4]", 2) > 2, "counting stops past the limit");
        assert_eq!(json_values(br#"[1, "2, {\"", 3, "open, [{"#, usize::MAX), 4, "an open string");
        let items = |n: usize| {
            let mut body = b"[".to_vec();
            body.extend(std::iter::repeat_n(&b"{},"[..], n).flatten());
            body.extend_from_slice(b"{}]");
            body
        };
        // n + 1 empty objects count 2n + 2: each `{` and each `,`, with the array's `[`.
        assert!(check_values(&items(MAX_JSON_VALUES / 2 - 1)).is_ok());
        let over = check_values(&items(MAX_JSON_VALUES / 2)).expect_err("over the limit");
        assert_eq!(over.code, crate::error::ErrorCode::PayloadTooLarge);
        let text: Vec<u8> = [&b"[\""[..], &b", ".repeat(MAX_JSON_VALUES), b"\"]"].concat();
        assert!(check_values(&text).is_ok(), "commas in a string are text");
    }

    /// The count `json_values` gives, from the value's tree: each array and object, and each
    /// item or field after its first (the commas between them).
    fn tree_values(value: &Value) -> usize {
        match value {
            Value::Array(items) => {
                1 + items.len().saturating_sub(1) + items.iter().map(tree_values).sum::<usize>()
            }
            Value::Object(fields) => {
                1 + fields.len().saturating_sub(1) + fields.values().map(tree_values).sum::<usize>()
            }
            _ => 0,
        }
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            // Text full of what counts outside strings, quotes and backslashes included.
            "[,{\\[\\]}\"\\\\a\\PC]{0,12}".prop_map(Value::String),
        ];
        scalar.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec(("[,{\\[\"\\\\a]{0,6}", inner), 0..6)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn values_are_counted_as_the_tree_holds_them(value in any_json(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_vec_pretty(&value)
            } else {
                serde_json::to_vec(&value)
            };
            let text = text.expect("serializes");
            prop_assert_eq!(json_values(&text, usize::MAX), tree_values(&value));
        }
    }

    impl JsonBody for Value {}

    #[test]
    fn parse_answers_as_from_slice_does() {
        let bodies: [&[u8]; 9] = [
            r#"[{"cells": [{"columnId": "a", "value": "Grüße, 世界 \u00e9\n"}]}]"#.as_bytes(),
            b"[\"ab\xc3\x28\"]",
            b"[\"ab\xff\"]",
            b"[\"truncated \xe4\xb8\"]",
            b"\xef\xbb\xbf[]",
            b"[1, 2] \xff",
            b"[\"\\ud800\"]",
            b"{\"k\": -1.8218816927580057e294}",
            b"",
        ];
        for body in bodies {
            let ours = parse::<Value>(body).map_err(|e| e.to_string());
            let theirs = serde_json::from_slice::<Value>(body).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(body));
        }
    }
}
