//! One request sent on to the node that serves it, and its answer streamed back.
//!
//! The request goes out with its method, path and query, its headers but the hop-by-hop ones
//! (RFC 9110 7.6.1, `Expect` and `Host`) and `Gridd-Forwarded-By: <this node>`; its body is read from the
//! client chunk by chunk and handed to the HTTP client through a channel of
//! `BODY_CHUNKS_IN_FLIGHT` chunks (actix's payload cannot leave its worker thread), so at most
//! that many chunks are held whatever the body's size. The answer comes back with its status
//! and headers (hop-by-hop ones dropped; `Content-Length` kept as the body's size) and its body
//! as a stream, ended early only when this server starts stopping (so that a forwarded change
//! feed does not hold up a graceful stop). Nothing is buffered whole and nothing bounds the
//! time of an answer but the owner; the connection is bounded by `CONNECT_TIMEOUT`.

use std::time::Duration;

use actix_web::body::SizedStream;
use actix_web::dev::{Payload, ServiceRequest};
use actix_web::error::PayloadError;
use actix_web::http::{header, StatusCode};
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpResponse, HttpResponseBuilder};
use futures_util::StreamExt;

use crate::cluster::membership::NodeInfo;

use super::ForwardError;

/// The header a forwarded request carries: the id of the node that forwarded it.
pub const FORWARDED_BY: &str = "gridd-forwarded-by";

/// The header a forwarded answer carries back to the client: the id of the node that served it.
pub const SERVED_BY: &str = "gridd-served-by";

/// How long connecting to the owner may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Request body chunks held between the client and the owner.
const BODY_CHUNKS_IN_FLIGHT: usize = 4;

/// Headers that belong to one connection (and `Expect`, which this node already answered),
/// never passed on.
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "expect",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The client forwards go through: no proxy from the environment, no redirects followed, no
/// overall timeout (answers may be long-lived), a bounded connect.
pub fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
}

/// What a forward needs besides the request.
pub struct Hop<'a> {
    pub client: &'a reqwest::Client,
    pub me: &'a str,
    pub to: &'a NodeInfo,
    /// Set when this server starts stopping.
    pub stopping: tokio::sync::watch::Receiver<bool>,
}

/// Sends `req` (with `body` when it was read already, else its payload) to `hop.to` and
/// returns its answer, streaming.
pub async fn send(
    hop: Hop<'_>,
    req: &mut ServiceRequest,
    body: Option<Bytes>,
) -> Result<HttpResponse, ForwardError> {
    let path = req.uri().path_and_query().map_or(req.path(), |p| p.as_str());
    let url = format!("{}{path}", hop.to.advertise);
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes())
        .map_err(|err| ForwardError::Failed { node: hop.to.id.clone(), why: err.to_string() })?;
    let mut out = hop.client.request(method, url).header(FORWARDED_BY, hop.me);
    for (name, value) in req.headers() {
        if !is_hop_by_hop(name.as_str()) && name != header::HOST {
            out = out.header(name.as_str(), value.as_bytes());
        }
    }
    out = match body {
        Some(bytes) => out.body(bytes),
        None if has_body(req) => out.body(pump(req.take_payload())),
        None => out,
    };
    let answer = out.send().await.map_err(|err| sent_error(hop.to, err))?;
    Ok(answer_of(answer, hop.stopping))
}

/// Whether the client announced a body.
fn has_body(req: &ServiceRequest) -> bool {
    let headers = req.headers();
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok());
    length.is_some_and(|n| n.trim() != "0") || headers.contains_key(header::TRANSFER_ENCODING)
}

/// The client's body as a stream the HTTP client can send from any thread: a task on this
/// worker reads it and hands on at most `BODY_CHUNKS_IN_FLIGHT` chunks at a time.
fn pump(payload: Payload) -> reqwest::Body {
    let (tx, rx) =
        tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(BODY_CHUNKS_IN_FLIGHT);
    actix_web::rt::spawn(async move {
        let mut payload = payload;
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|err| match err {
                PayloadError::Io(io) => io,
                other => std::io::Error::other(other.to_string()),
            });
            let failed = chunk.is_err();
            if tx.send(chunk).await.is_err() || failed {
                break;
            }
        }
    });
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    reqwest::Body::wrap_stream(chunks)
}

/// Why a request did not get an answer: the owner unreachable (refused, timed out connecting),
/// the client's body late (this server's body deadline), or the exchange broken.
fn sent_error(to: &NodeInfo, err: reqwest::Error) -> ForwardError {
    let why = err.to_string();
    if err.is_connect() {
        ForwardError::Unreachable { node: to.id.clone(), why }
    } else if body_timed_out(&err) {
        ForwardError::BodyTimedOut
    } else {
        ForwardError::Failed { node: to.id.clone(), why }
    }
}

/// Whether the client's body was cut by this server's body deadline (`body_deadline`), found
/// among the error's sources.
fn body_timed_out(err: &reqwest::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    for _ in 0..8 {
        let Some(err) = next else { return false };
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        next = err.source();
    }
    false
}

/// The owner's answer as this server's: status, headers, body streamed.
fn answer_of(
    answer: reqwest::Response,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> HttpResponse {
    let status =
        StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut out = HttpResponseBuilder::new(status);
    for (name, value) in answer.headers() {
        if is_hop_by_hop(name.as_str()) || name.as_str() == "content-length" {
            continue;
        }
        let name = header::HeaderName::from_bytes(name.as_str().as_bytes());
        let value = header::HeaderValue::from_bytes(value.as_bytes());
        if let (Ok(name), Ok(value)) = (name, value) {
            out.append_header((name, value));
        }
    }
    if matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED) {
        return out.finish();
    }
    let length = answer.content_length();
    let body = answer.bytes_stream().take_until(stopped(stopping));
    match length {
        Some(length) => out.body(SizedStream::new(length, Box::pin(body))),
        None => out.streaming(body),
    }
}

/// Resolves when the server starts stopping (never when the flag's sender is gone).
async fn stopped(mut stopping: tokio::sync::watch::Receiver<bool>) {
    if stopping.wait_for(|stopping| *stopping).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|hop| name.eq_ignore_ascii_case(hop))
}
