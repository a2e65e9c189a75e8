//! Request forwarding in cluster mode (`--cluster`): any node accepts any request, and one about
//! a grid, branch or view that another node serves is streamed to that node.
//!
//! For each request the middleware (`Forwarding`, registered by `Application::build` only in
//! cluster mode, inside `errors::render_errors` so that its errors render as every other one):
//! 1. finds the id it is about (`subject::target_of`, then `resolve`: `POST /v1/views` and
//!    `POST /v1/webhooks` read their JSON body, up to the JSON limit, for `gridId` / `viewId`;
//!    a share token, a diffcheck's task and a CDN are looked up in the catalogue or the route
//!    table); a request about none, or about an id unknown here, is served here;
//! 2. serves it here when this node's route table holds the id;
//! 3. a request that another node forwarded (`Gridd-Forwarded-By`) is never forwarded again:
//!    503 `serviceUnavailable`, `Retry-After: 1` (a handover in flight);
//! 4. asks which node serves the id (`cluster::locate`): another node -> forwarded there
//!    (`proxy`); nobody -> served here (an unknown id gets its usual 404), unless the local
//!    catalogue knows the id as a grid, a branch or a branch's default view (the catalogue
//!    knows no other views): then it is between two owners, 503.
//!
//! The key is checked once, by the node that serves the request (every node holds every key).
//! A forward that cannot reach its node is a 503 and drops what the locator remembers of that
//! node; a 503 from the node drops the id's entry (it may have handed the grid over), and so
//! does a DELETE it answered with success (the id may be gone: the next request asks again).

pub mod proxy;
pub mod subject;

use std::fmt;
use std::future::{ready, Ready};
use std::rc::Rc;
use std::sync::Arc;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{Error, HttpMessage};
use futures_util::future::LocalBoxFuture;
use futures_util::StreamExt;

use crate::cluster::locate::Locator;
use crate::cluster::membership::NodeInfo;
use crate::cluster::node::ClusterNode;
use crate::cluster::ClusterError;
use crate::error::{ApiError, Coded, ErrorCode};
use crate::state::AppState;
use subject::{Kind, Subject, Target};

/// Why a request about a grid, branch or view could not be served or forwarded.
#[derive(Debug)]
pub enum ForwardError {
    /// A forwarded request for an id this node does not serve (it moved meanwhile).
    NotServedHere { id: String },
    /// A grid or branch the catalogue knows that no node serves now (being taken over).
    Unserved { id: String },
    /// The node that serves the id could not be reached.
    Unreachable { node: String, why: String },
    /// The exchange with the node broke before its answer began.
    Failed { node: String, why: String },
    /// Asking who serves the id failed (NATS unreachable).
    Locate(ClusterError),
    /// The catalogue could not be asked (the server is stopping).
    ShuttingDown,
    /// A body read to find its subject (`POST /v1/views`, `/v1/webhooks`) is larger than the
    /// JSON limit.
    BodyTooLarge { limit: usize },
    /// That body could not be read.
    BodyUnreadable { why: String },
    /// The client's body did not arrive within the body deadline while it was forwarded.
    BodyTimedOut,
}

impl fmt::Display for ForwardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForwardError::NotServedHere { id } => write!(
                f,
                "This node no longer serves \"{id}\" (it is being handed over); retry the request."
            ),
            ForwardError::Unserved { id } => {
                write!(f, "No node serves \"{id}\" right now (it is being taken over); retry.")
            }
            ForwardError::Unreachable { node, why } => {
                write!(f, "Node {node} that serves this request cannot be reached ({why}); retry.")
            }
            ForwardError::Failed { node, why } => {
                write!(f, "Forwarding to node {node} failed ({why}); retry.")
            }
            ForwardError::Locate(err) => err.fmt(f),
            ForwardError::ShuttingDown => write!(f, "The server is shutting down."),
            ForwardError::BodyTooLarge { limit } => {
                write!(f, "The request body is larger than {limit} bytes.")
            }
            ForwardError::BodyUnreadable { why } => {
                write!(f, "The request body could not be read: {why}")
            }
            ForwardError::BodyTimedOut => write!(f, "The request body was not received in time."),
        }
    }
}

impl Coded for ForwardError {
    fn code(&self) -> ErrorCode {
        match self {
            ForwardError::NotServedHere { .. }
            | ForwardError::Unserved { .. }
            | ForwardError::Unreachable { .. }
            | ForwardError::Failed { .. }
            | ForwardError::ShuttingDown => ErrorCode::ServiceUnavailable,
            ForwardError::Locate(err) => err.code(),
            ForwardError::BodyTooLarge { .. } => ErrorCode::PayloadTooLarge,
            ForwardError::BodyUnreadable { .. } => ErrorCode::BadRequest,
            ForwardError::BodyTimedOut => ErrorCode::RequestTimeout,
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            ForwardError::NotServedHere { .. }
            | ForwardError::Unserved { .. }
            | ForwardError::Unreachable { .. }
            | ForwardError::Failed { .. }
            | ForwardError::ShuttingDown => Some(1),
            ForwardError::Locate(err) => err.retry_after(),
            ForwardError::BodyTooLarge { .. }
            | ForwardError::BodyUnreadable { .. }
            | ForwardError::BodyTimedOut => None,
        }
    }
}

impl From<ClusterError> for ForwardError {
    fn from(err: ClusterError) -> ForwardError {
        ForwardError::Locate(err)
    }
}

/// What every forward shares: the cluster node, its locator and the HTTP client.
pub struct Forwarder {
    node: Arc<ClusterNode>,
    locator: Arc<Locator>,
    client: reqwest::Client,
    /// The JSON body limit (`--max-json-bytes`): `POST /v1/views` bodies are read up to it.
    max_json: usize,
}

impl Forwarder {
    /// A forwarder for `node`, answering locate requests for what `routes` holds from now on.
    pub fn start(
        node: Arc<ClusterNode>,
        routes: Arc<crate::catalog::Routes>,
        max_json: usize,
    ) -> Result<Forwarder, ClusterError> {
        let locator = Locator::new(&node);
        locator.answer(&node, move |id| {
            routes.views.contains_key(id) || routes.branches.contains_key(id)
        })?;
        let client = proxy::client()
            .map_err(|err| ClusterError::Setup(format!("forwarding client: {err}")))?;
        Ok(Forwarder { node, locator: Arc::new(locator), client, max_json })
    }

    /// The locator, shared with what else asks where an id is served (`api::remote`).
    pub fn locator(&self) -> Arc<Locator> {
        self.locator.clone()
    }
}

/// Where a request is served.
enum Route {
    Here,
    There(NodeInfo),
}

/// The middleware: see the module doc. `Condition`-wrapped by the application, so that a
/// server without `--cluster` has none of it.
#[derive(Clone)]
pub struct Forwarding(pub Option<Arc<Forwarder>>);

impl<S, B> Transform<S, ServiceRequest> for Forwarding
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = Error;
    type Transform = ForwardingService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(ForwardingService { inner: Rc::new(service), forwarder: self.0.clone() }))
    }
}

/// `Forwarding` around one worker's services.
pub struct ForwardingService<S> {
    inner: Rc<S>,
    forwarder: Option<Arc<Forwarder>>,
}

impl<S, B> Service<ServiceRequest> for ForwardingService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Error>>;

    actix_web::dev::forward_ready!(inner);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        let inner = self.inner.clone();
        let target = target_of_request(&req);
        let (Some(forwarder), Some(target)) = (self.forwarder.clone(), target) else {
            return Box::pin(async move { Ok(inner.call(req).await?.map_into_left_body()) });
        };
        Box::pin(async move {
            match route_request(&forwarder, req, target).await {
                Ok(Routed::Local(req)) => Ok(inner.call(req).await?.map_into_left_body()),
                Ok(Routed::Answered(res)) => Ok(res.map_into_right_body()),
                Err(err) => Err(ApiError::from(err).into()),
            }
        })
    }
}

fn target_of_request(req: &ServiceRequest) -> Option<Target> {
    subject::target_of(req.method(), req.path(), req.query_string())
}

/// A request to serve here, or the answer another node gave.
enum Routed {
    Local(ServiceRequest),
    Answered(ServiceResponse),
}

/// Decides where `req` is served and forwards it when it is elsewhere.
async fn route_request(
    forwarder: &Forwarder,
    mut req: ServiceRequest,
    target: Target,
) -> Result<Routed, ForwardError> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(Routed::Local(req));
    };
    let Some((subject, body)) = resolve(forwarder, &state, &mut req, target).await? else {
        return Ok(Routed::Local(req));
    };
    let forwarded = req.headers().contains_key(proxy::FORWARDED_BY);
    let node = match decide(forwarder, &state, &subject, forwarded).await? {
        Route::Here => return Ok(Routed::Local(req)),
        Route::There(node) => node,
    };
    let hop = proxy::Hop {
        client: &forwarder.client,
        me: forwarder.node.id(),
        to: &node,
        stopping: state.stopping.clone(),
    };
    let mut answer = match proxy::send(hop, &mut req, body).await {
        Ok(answer) => answer,
        Err(err) => {
            if matches!(err, ForwardError::Unreachable { .. } | ForwardError::Failed { .. }) {
                forwarder.locator.forget_node(&node.id);
            }
            return Err(err);
        }
    };
    let deleted = req.method() == Method::DELETE && answer.status().is_success();
    if deleted || answer.status() == StatusCode::SERVICE_UNAVAILABLE {
        forwarder.locator.forget(&subject.id);
    }
    if let Ok(served_by) = HeaderValue::from_str(&node.id) {
        answer.headers_mut().insert(HeaderName::from_static(proxy::SERVED_BY), served_by);
    }
    Ok(Routed::Answered(req.into_response(answer)))
}

/// The subject `target` names, and the body when it was read to find it; None when it names
/// nothing this node does not know (served here: the handler answers as it does alone).
async fn resolve(
    forwarder: &Forwarder,
    state: &AppState,
    req: &mut ServiceRequest,
    target: Target,
) -> Result<Option<(Subject, Option<Bytes>)>, ForwardError> {
    let subject = |kind, id| Subject { kind, id };
    let found = match target {
        Target::Named(named) => return Ok(Some((named, None))),
        Target::InBody { kind, field } => {
            let body = read_body(req, forwarder.max_json).await?;
            req.set_payload(actix_web::dev::Payload::from(body.clone()));
            return Ok(id_in(&body, field).map(|id| (subject(kind, id), Some(body))));
        }
        Target::CdnGrid(id) => state.routes.cdns.get(&id).map(|cdn| cdn.grid_id.clone()),
        Target::TaskGrid(id) => catalogue(state, move |s| s.task_grid(&id)).await?,
        Target::SharedView(token) => {
            let view = catalogue(state, move |s| s.share_by_token(&token).map(|s| s.view_id));
            return Ok(view.await?.map(|id| (subject(Kind::View, id), None)));
        }
    };
    Ok(found.map(|id| (subject(Kind::Grid, id), None)))
}

/// Runs a lookup on the supervisor (503 when it is gone: the server is stopping).
async fn catalogue<R: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&mut crate::catalog::Supervisor) -> R + Send + 'static,
) -> Result<R, ForwardError> {
    super::exec(state, f).await.map_err(|_| ForwardError::ShuttingDown)
}

/// Where a request about `subject` is served (see the module doc, steps 2 to 4).
async fn decide(
    forwarder: &Forwarder,
    state: &AppState,
    subject: &Subject,
    forwarded: bool,
) -> Result<Route, ForwardError> {
    let held = match subject.kind {
        Kind::View => state.routes.views.contains_key(&subject.id),
        Kind::Branch | Kind::Grid => state.routes.branches.contains_key(&subject.id),
    };
    if held {
        return Ok(Route::Here);
    }
    if forwarded {
        return Err(ForwardError::NotServedHere { id: subject.id.clone() });
    }
    match forwarder.locator.locate(&subject.id).await? {
        Some(node) if node.id != forwarder.node.id() => Ok(Route::There(node)),
        Some(_) => Ok(Route::Here),
        None => {
            let (id, kind) = (subject.id.clone(), subject.kind);
            let known = catalogue(state, move |s| match kind {
                Kind::View => s.is_default_view(&id),
                Kind::Branch | Kind::Grid => s.branch_record(&id).is_some(),
            })
            .await?;
            if known {
                Err(ForwardError::Unserved { id: subject.id.clone() })
            } else {
                Ok(Route::Here)
            }
        }
    }
}

/// The whole body of `req`, at most `limit` bytes.
async fn read_body(req: &mut ServiceRequest, limit: usize) -> Result<Bytes, ForwardError> {
    let mut payload = req.take_payload();
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|err| match err {
            actix_web::error::PayloadError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                ForwardError::BodyTimedOut
            }
            other => ForwardError::BodyUnreadable { why: other.to_string() },
        })?;
        if body.len() + chunk.len() > limit {
            return Err(ForwardError::BodyTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The value of `field` (`gridId` or `viewId`) in a JSON object body, when it is a non-empty
/// string (the body's other members are skipped, not kept).
fn id_in(body: &[u8], field: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Ids {
        grid_id: Option<String>,
        view_id: Option<String>,
    }
    let ids: Ids = serde_json::from_slice(body).ok()?;
    let id = if field == "viewId" { ids.view_id } else { ids.grid_id };
    id.filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_a_body_names() {
        let grid = |body: &[u8]| id_in(body, "gridId");
        assert_eq!(
            grid(br#"{"name":"v","gridId":"g1","columns":[{"id":"a"}]}"#),
            Some("g1".into())
        );
        assert_eq!(grid(br#"{"name":"v","gridId":""}"#), None);
        assert_eq!(grid(br#"{"name":"v"}"#), None);
        assert_eq!(grid(b"not json"), None);
        assert_eq!(grid(br#"{"gridId":5}"#), None);
        assert_eq!(grid(br#"[1,2]"#), None);
        let hook = br#"{"viewId":"v1","url":"http://x","gridId":"g"}"#;
        assert_eq!(id_in(hook, "viewId"), Some("v1".into()));
    }

    #[test]
    fn every_failure_is_retryable_or_the_clients() {
        let unreachable = ForwardError::Unreachable { node: "a".into(), why: "refused".into() };
        assert_eq!(unreachable.code(), ErrorCode::ServiceUnavailable);
        assert_eq!(unreachable.retry_after(), Some(1));
        let moved = ForwardError::NotServedHere { id: "v".into() };
        assert_eq!(moved.code().status(), StatusCode::SERVICE_UNAVAILABLE);
        let big = ForwardError::BodyTooLarge { limit: 10 };
        assert_eq!((big.code(), big.retry_after()), (ErrorCode::PayloadTooLarge, None));
    }
}
