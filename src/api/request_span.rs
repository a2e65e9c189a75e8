//! `RequestSpan`: the root span each request runs in (`tracing_actix_web::TracingLogger`).
//!
//! tracing-actix-web's default builder works out the route's pattern (`match_pattern`, a regex
//! walk over every route, before the router's own), the connection info and the user agent
//! before it knows whether the span is recorded at all: measured on a page of one record, a
//! tenth of the request's CPU, spent whatever the log level. This one names the method, the path
//! and the request id, evaluated only when the span is enabled (under the same target as the
//! default one's, `tracing_actix_web`), and records the outcome as the default builder does.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{Error, HttpMessage};
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RequestId, RootSpanBuilder};

/// The root span of a request. See the module doc.
#[derive(Debug)]
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        // tracing-actix-web's target, so a log filter picks request spans as it did.
        tracing::info_span!(
            target: "tracing_actix_web",
            "HTTP request",
            http.method = %request.method(),
            http.target = %request.path(),
            request_id = ?request.extensions().get::<RequestId>().copied(),
            http.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            exception.message = tracing::field::Empty,
            exception.details = tracing::field::Empty,
        )
    }

    fn on_request_end<B: MessageBody>(span: Span, outcome: &Result<ServiceResponse<B>, Error>) {
        DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}
