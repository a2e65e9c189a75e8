//! The request timing middleware: every request's latency filed under its route pattern,
//! method and status in `AppState::requests` (`metrics::RequestMetrics`).

use std::future::Future;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::{web, Error};

/// Middleware body (use with `wrap_fn`, outside the error renderer so the final status is
/// seen): times every request and files it under its route pattern (`unmatched` for none).
pub fn track<S, B>(
    req: ServiceRequest,
    srv: &S,
) -> impl Future<Output = Result<ServiceResponse<B>, Error>>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let started = Instant::now();
    let state = req.app_data::<web::Data<crate::state::AppState>>().cloned();
    let method = req.method().to_string();
    let path = req.path().to_owned();
    let fut = srv.call(req);
    async move {
        let result = fut.await;
        // Still on the worker the request came to (actix runs it there).
        crate::worker_memory::note_served(Instant::now());
        if let Some(state) = state {
            let (route, status) = match &result {
                Ok(res) => (res.request().match_pattern(), res.status()),
                // An error is rendered further out; its route is found from the path.
                Err(err) => (None, err.as_response_error().status_code()),
            };
            let route = route
                .or_else(|| {
                    let served = state.path_patterns.iter().find(|p| p.pattern.is_match(&path))?;
                    served.pattern.pattern().map(str::to_owned)
                })
                .unwrap_or_else(|| "unmatched".to_owned());
            state.requests.observe(&route, &method, status.as_u16(), started.elapsed());
        }
        result
    }
}
