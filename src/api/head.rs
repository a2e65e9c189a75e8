//! HEAD requests (RFC 9110 section 9.3.2): every GET route answers HEAD with the status and
//! headers its GET answer has, and no body.
//!
//! actix-web routes `#[get]` handlers for GET only, so this middleware routes a HEAD request as
//! GET (marking it `AnsweringHead`, for the 405 of a path without GET, which names the method
//! asked) and swaps the answer's body for an empty one of the same announced size (`HeadBody`):
//! `Content-Length` (or chunked transfer) is what the GET's would be, and the body is never
//! produced. Dropping the body stops what was making it: an export's writer finds its channel
//! closed, a change feed ends. It runs outside compression, so `Content-Encoding`, `Vary` and
//! the length are the GET's, and inside request timing and tracing, which see the request as
//! HEAD. An error that escapes as an error (rendered by actix further out) keeps its body in
//! the answer, which actix-http's HTTP/1 encoder does not send for a HEAD request.
//!
//! `Allow` on a 405 names HEAD wherever it names GET (`lib::app_state`'s served paths).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, EitherBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::web::Bytes;
use actix_web::{Error, HttpMessage};

/// A request extension: this request came as HEAD and is routed as GET.
#[derive(Debug, Clone, Copy)]
pub struct AnsweringHead;

/// Middleware body (use with `wrap_fn`): routes HEAD as GET and answers without the body.
pub fn answer_head<S, B>(
    mut req: ServiceRequest,
    srv: &S,
) -> impl Future<Output = Result<ServiceResponse<EitherBody<B, HeadBody>>, Error>>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let head = req.method() == Method::HEAD;
    if head {
        req.head_mut().method = Method::GET;
        req.extensions_mut().insert(AnsweringHead);
    }
    let answer = srv.call(req);
    async move {
        let res = answer.await?;
        Ok(res.map_body(|_, body| {
            if head {
                EitherBody::right(HeadBody { size: body.size() })
            } else {
                EitherBody::left(body)
            }
        }))
    }
}

/// The body of a HEAD answer: announces the size of the GET answer's body, holds nothing.
#[derive(Debug, Clone, Copy)]
pub struct HeadBody {
    size: BodySize,
}

impl MessageBody for HeadBody {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        self.size
    }

    fn poll_next(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Poll::Ready(None)
    }
}
