//! Compression of large answers, when the client asks for it (`Accept-Encoding`).
//!
//! A record page of 100 is about 130 KB of JSON that compresses five to tenfold; a client
//! across a network gets it sooner compressed. On loopback, or for a small answer, compressing
//! only costs CPU, and many clients (python-requests, OkHttp) ask for gzip on every request by
//! default: so only whole textual answers (JSON, CSV, text, YAML) of at least `MIN_BYTES` are
//! compressed, on the worker thread in one go with the fastest setting of each codec (zstd
//! level 1, brotli quality 1, gzip level 1), and sent with their length in one write; zstd
//! first, then brotli, then gzip among those the client accepts (a `q` of 0 refuses one).
//! (actix-http's streaming encoder compressed a page on a blocking thread and sent it chunked,
//! and the chunk ending it waited out the client's delayed ACK: 40 ms a page.) Streamed answers
//! (exports: files), archives and spreadsheets, and answers that already carry a
//! `Content-Encoding`, go out as they are. A compressible answer says `Vary: Accept-Encoding`,
//! whatever the request asked. Unlike actix-web's `Compress`, a
//! request that accepts none of the codecs gets the answer uncompressed, never 406.

use actix_web::body::{BodySize, BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::Error;
use futures_util::future::LocalBoxFuture;

/// The smallest answer compressed, in bytes.
pub const MIN_BYTES: u64 = 4096;

/// The codecs offered, best first.
const OFFERED: [Codec; 3] = [Codec::Zstd, Codec::Brotli, Codec::Gzip];

/// An answer on its way out, compressed when `compress_large` finds it worth it.
pub type Compressed<B> = LocalBoxFuture<'static, Result<ServiceResponse<EitherBody<B>>, Error>>;

/// Middleware (`wrap_fn`) compressing large textual answers; see the module doc.
pub fn compress_large<S, B>() -> impl Fn(ServiceRequest, &S) -> Compressed<B> + Clone
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    S::Future: 'static,
    B: MessageBody + 'static,
{
    |req: ServiceRequest, srv: &S| {
        let wanted = req.headers().get(header::ACCEPT_ENCODING).and_then(negotiate);
        let answer = srv.call(req);
        Box::pin(async move {
            let res = answer.await?;
            Ok(res.map_body(|head, body| {
                if !compressible(head.status, &head.headers, body.size()) {
                    return EitherBody::left(body);
                }
                head.headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
                let Some(codec) = wanted else { return EitherBody::left(body) };
                let bytes = match body.try_into_bytes() {
                    Ok(bytes) => bytes,
                    Err(body) => return EitherBody::left(body),
                };
                match compress(codec, &bytes) {
                    Ok(packed) => {
                        let name = HeaderValue::from_static(codec.name());
                        head.headers.insert(header::CONTENT_ENCODING, name);
                        EitherBody::right(BoxBody::new(packed))
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "an answer went out uncompressed");
                        EitherBody::right(BoxBody::new(bytes))
                    }
                }
            }))
        })
    }
}

/// A codec gridd compresses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Zstd,
    Brotli,
    Gzip,
}

impl Codec {
    /// Its name in `Accept-Encoding` and `Content-Encoding`.
    fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Brotli => "br",
            Codec::Gzip => "gzip",
        }
    }
}

/// `bytes` compressed whole with the fastest setting of `codec`.
pub fn compress(codec: Codec, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    match codec {
        Codec::Zstd => zstd::bulk::compress(bytes, 1),
        Codec::Brotli => {
            let mut out = Vec::with_capacity(bytes.len() / 4);
            {
                let mut writer = brotli::CompressorWriter::new(&mut out, 64 * 1024, 1, 22);
                writer.write_all(bytes)?;
                writer.flush()?;
            }
            Ok(out)
        }
        Codec::Gzip => {
            let out = Vec::with_capacity(bytes.len() / 4);
            let mut writer = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
            writer.write_all(bytes)?;
            writer.finish()
        }
    }
}

/// The codec to answer with, from an `Accept-Encoding` value: the offered one with the
/// highest `q` above 0, the better one on a tie; `None` when none is accepted.
pub fn negotiate(accept: &HeaderValue) -> Option<Codec> {
    let accept = accept.to_str().ok()?;
    let mut best: Option<(f32, usize)> = None;
    let mut wildcard: Option<f32> = None;
    let mut named = [false; OFFERED.len()];
    for part in accept.split(',') {
        let mut fields = part.split(';');
        let name = fields.next().unwrap_or("").trim();
        let q = fields
            .filter_map(|f| f.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if name == "*" {
            wildcard = Some(q);
            continue;
        }
        let Some(rank) = OFFERED.iter().position(|c| c.name().eq_ignore_ascii_case(name)) else {
            continue;
        };
        named[rank] = true;
        consider(&mut best, q, rank);
    }
    if let Some(q) = wildcard {
        for rank in (0..OFFERED.len()).filter(|&r| !named[r]) {
            consider(&mut best, q, rank);
        }
    }
    best.map(|(_, rank)| OFFERED[rank])
}

fn consider(best: &mut Option<(f32, usize)>, q: f32, rank: usize) {
    if q.is_nan() || q <= 0.0 {
        return;
    }
    let better = match *best {
        None => true,
        Some((best_q, best_rank)) => q > best_q || (q == best_q && rank < best_rank),
    };
    if better {
        *best = Some((q, rank));
    }
}

/// Whether an answer is worth compressing: textual, large (or streamed), not already encoded,
/// with a body a client reads whole.
fn compressible(status: StatusCode, headers: &HeaderMap, size: BodySize) -> bool {
    // A streamed answer (an export) is left alone: it is a file, and compressing it whole
    // would hold it in memory.
    let large = matches!(size, BodySize::Sized(n) if n >= MIN_BYTES);
    let plain_status = !matches!(
        status,
        StatusCode::SWITCHING_PROTOCOLS | StatusCode::NO_CONTENT | StatusCode::PARTIAL_CONTENT
    );
    large
        && plain_status
        && !headers.contains_key(header::CONTENT_ENCODING)
        && headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(textual)
}

/// JSON, CSV, YAML, XML and other text; not event streams (each event must leave at once).
fn textual(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if mime == "text/event-stream" {
        return false;
    }
    mime.starts_with("text/")
        || mime.ends_with("/json")
        || mime.ends_with("+json")
        || mime.ends_with("/yaml")
        || mime.ends_with("/x-yaml")
        || mime.ends_with("/xml")
        || mime == "application/javascript"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(accept: &str) -> Option<Codec> {
        negotiate(&HeaderValue::from_str(accept).expect("a header value"))
    }

    #[test]
    fn the_best_accepted_codec_is_picked() {
        assert_eq!(pick("gzip, deflate"), Some(Codec::Gzip));
        assert_eq!(pick("gzip, deflate, br, zstd"), Some(Codec::Zstd));
        assert_eq!(pick("br;q=1.0, gzip;q=0.8, *;q=0.1"), Some(Codec::Brotli));
        assert_eq!(pick("GZIP;q=0.5, br;q=0.4"), Some(Codec::Gzip));
        assert_eq!(pick("*"), Some(Codec::Zstd));
        assert_eq!(pick("zstd;q=0, *"), Some(Codec::Brotli));
        assert_eq!(pick("identity"), None);
        assert_eq!(pick("gzip;q=0"), None);
        assert_eq!(pick("deflate, compress"), None);
        assert_eq!(pick(""), None);
        assert_eq!(pick("gzip;q=nonsense"), Some(Codec::Gzip));
        assert_eq!(pick("gzip;q=NaN"), None);
    }

    #[test]
    fn every_codec_round_trips() {
        let text = "Die Datei konnte nicht gespeichert werden. ".repeat(500);
        let zstd = compress(Codec::Zstd, text.as_bytes()).expect("zstd");
        assert_eq!(zstd::decode_all(&zstd[..]).expect("zstd"), text.as_bytes());
        let gzip = compress(Codec::Gzip, text.as_bytes()).expect("gzip");
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzip[..]), &mut out)
            .expect("gzip");
        assert_eq!(out, text.as_bytes());
        let brotli = compress(Codec::Brotli, text.as_bytes()).expect("brotli");
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut brotli::Decompressor::new(&brotli[..], 4096), &mut out)
            .expect("brotli");
        assert_eq!(out, text.as_bytes());
        assert!(zstd.len() * 10 < text.len() && brotli.len() * 10 < text.len());
    }

    #[test]
    fn only_large_textual_answers_are_compressed() {
        let with_type = |t: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(t).expect("a value"));
            headers
        };
        let json = with_type("application/json");
        assert!(compressible(StatusCode::OK, &json, BodySize::Sized(MIN_BYTES)));
        assert!(!compressible(StatusCode::OK, &json, BodySize::Sized(MIN_BYTES - 1)));
        let large = BodySize::Sized(1 << 20);
        assert!(!compressible(StatusCode::OK, &json, BodySize::Stream));
        assert!(!compressible(StatusCode::NO_CONTENT, &json, large));
        assert!(compressible(StatusCode::OK, &with_type("text/csv; charset=utf-8"), large));
        assert!(compressible(StatusCode::OK, &with_type("application/problem+json"), large));
        assert!(!compressible(StatusCode::OK, &with_type("application/zip"), large));
        assert!(!compressible(StatusCode::OK, &with_type("text/event-stream"), large));
        assert!(!compressible(StatusCode::OK, &HeaderMap::new(), large));
        let mut encoded = json.clone();
        encoded.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        assert!(!compressible(StatusCode::OK, &encoded, large));
    }
}
