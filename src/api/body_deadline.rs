//! The body-read deadline: a request that announces a body (`Content-Length` above 0 or
//! chunked) must deliver all of it within `--body-timeout-ms` of its head. The payload stream is
//! wrapped so that reading past the deadline fails with a timed-out I/O error, which the body
//! extractors turn into 408 `requestTimeout` (see `errors::json_error`); the handler never runs,
//! so nothing is written. This stops clients that trickle a body from holding a worker
//! connection forever. Reading the head has its own timeout (actix's client request timeout).
//!
//! A request another cluster node forwards (`gridd-forwarded-by`) gets twice the deadline: the
//! forwarding node holds the client to the deadline and answers its 408 itself; had this
//! node's deadline fired first, it would have answered and closed while the forwarder was still
//! sending, and the forwarder, its send broken, would have answered 503. The doubled deadline
//! stays a bound on a forwarder that stalls (and on a client that sends the header itself).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::dev::{Payload, Service, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::{Error, HttpMessage};
use futures_util::Stream;

/// The message of the I/O error a late body fails with.
pub const BODY_TIMEOUT_MESSAGE: &str = "request body not received in time";

/// Middleware (`wrap_fn`) that puts a deadline of `timeout` on the request body; a zero
/// `timeout` leaves the body alone.
pub fn body_deadline<S, B>(timeout: Duration) -> impl Fn(ServiceRequest, &S) -> S::Future + Clone
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
{
    move |mut req: ServiceRequest, srv: &S| {
        if !timeout.is_zero() && has_body(&req) {
            let forwarded = req.headers().contains_key(super::forward::proxy::FORWARDED_BY);
            let timeout = if forwarded { timeout.saturating_mul(2) } else { timeout };
            let inner = req.take_payload();
            let deadline = Box::pin(tokio::time::sleep(timeout));
            let stream: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> =
                Box::pin(DeadlinePayload { inner, deadline, expired: false });
            req.set_payload(Payload::from(stream));
        }
        srv.call(req)
    }
}

fn has_body(req: &ServiceRequest) -> bool {
    let headers = req.headers();
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

/// A payload that fails once its deadline has passed.
struct DeadlinePayload {
    inner: Payload,
    deadline: Pin<Box<tokio::time::Sleep>>,
    expired: bool,
}

impl Stream for DeadlinePayload {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.expired {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = Pin::new(&mut self.inner).poll_next(cx) {
            return Poll::Ready(item);
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.expired = true;
            let error = std::io::Error::new(std::io::ErrorKind::TimedOut, BODY_TIMEOUT_MESSAGE);
            return Poll::Ready(Some(Err(PayloadError::Io(error))));
        }
        Poll::Pending
    }
}
