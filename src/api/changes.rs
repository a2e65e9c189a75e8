//! `GET /v1/views/<viewId>/changes`: a view's change feed as server-sent events
//! (`text/event-stream`), read from the branch's state by `grid::feed`.
//!
//! Events, in commit order, each commit once it is durable:
//! - `records` (`id`: the commit's position, the branch clock value that stamped it), data
//!   `{"position": n, "records": [...], "deleted": [{"id", "path"}]}`: the records the commit
//!   left as the view shows them now (the view's columns only) and the keys it deleted. A
//!   large commit comes in several events, the `id` on the last: a consumer that resumes from
//!   an `id` has all of that commit.
//! - `schema`, data `{"position": n, "columns": [{"id", "name", "type"}]}`: the view's
//!   columns changed.
//! - `resync`, data `{"position": n, "reason": ...}`: the position asked for is not one of this
//!   branch (ahead of it); read the view again, the stream goes on from now.
//! - `closed`, data `{"reason": ...}`: the view, its grid or branch was deleted (a grid's at
//!   the next heartbeat), the server is stopping, or the consumer fell behind (its buffer
//!   stayed full for `STALLED`); the stream ends.
//!
//! A comment opens the stream (its headers go at once) and one every `heartbeat` seconds (default 15, `?heartbeat=` 1 to 60) keeps proxies
//! open. `Last-Event-ID` or `?after=` resumes right after that position; without either the
//! feed starts now. The key needs read access to the view (a view key: its own view only).
//!
//! Each consumer is one task holding its position and a channel of `BUFFER` events; it reads
//! a batch (at most about `BATCH` records) only when there is room, so a stalled consumer
//! holds no more than that, and the scan runs on the blocking pool. Consumers at one position
//! share one read of a batch (`FeedMemo`): after a commit they all ask for the same.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{get, web, HttpRequest, HttpResponse};
use dashmap::DashMap;
use serde_json::json;
use tokio::sync::mpsc;
use utoipa_actix_web::service_config::ServiceConfig;

use super::feed_render::{commit_parts, same_columns, schema_data};
use super::{query_pairs, view_route};
use crate::auth::{Principal, Privilege};
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::reads::{PublishView, ReadView};
use crate::grid::feed::{changes_since, position_now, Batch, Commit};
use crate::grid::schema::ColumnDef;
use crate::state::AppState;

/// Events a consumer's channel holds before the feed waits for it.
const BUFFER: usize = 16;
/// Records (and deleted keys) per batch read, and per event.
const BATCH: usize = 500;
/// How long a full buffer may stay full before the consumer is closed.
const STALLED: Duration = Duration::from_secs(30);

#[utoipa::path(tag = "views", params(
    ("after" = Option<u32>, Query, description = "resume right after this position (as Last-Event-ID)"),
    ("heartbeat" = Option<u64>, Query, description = "seconds between keep-alive comments, 1 to 60 (default 15)"),
), responses((status = 200, description = "text/event-stream of the view's changes")))]
#[get("/v1/views/{viewId}/changes")]
async fn changes(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let view_id = view_id.into_inner();
    let query = query_pairs(&req)?;
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let heartbeat = match param("heartbeat") {
        None => 15,
        Some(text) => {
            text.parse::<u64>().ok().filter(|s| (1..=60).contains(s)).ok_or_else(|| {
                ApiError::bad_request("heartbeat is a number of seconds from 1 to 60.")
            })?
        }
    };
    let last_event = req.headers().get("last-event-id").and_then(|v| v.to_str().ok());
    let after = match param("after").or(last_event).map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(text.parse::<u32>().map_err(|_| {
            ApiError::bad_request(format!(
                "\"{}\" is not a position of the change feed (an event's id).",
                crate::io::csv_import::clip(text, 64)
            ))
        })?),
    };
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let view = current_view(&route).await?;
    if view.state.schema.view(&view_id).is_none() {
        return Err(ApiError::from(crate::grid::error::GridError::ViewNotFound(view_id)));
    }
    // "Now" is when the request is handled, not when the feed's task first runs: the client
    // may see the headers, and write, before that.
    let now = position_now(*route.reads.durable_clock().borrow());
    let (tx, mut rx) = mpsc::channel::<Bytes>(BUFFER);
    let stopping = state.stopping.clone();
    let heartbeat = Duration::from_secs(heartbeat);
    let memo = state.feeds.clone();
    let feed = Feed { route, view_id, heartbeat, tx, stopping, memo };
    actix_web::rt::spawn(feed.run(after, now));
    let body = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|chunk| chunk.map(Ok::<Bytes, actix_web::Error>))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body))
}

/// The branch as it is now (a published view, asked of the actor when none is held).
pub(crate) async fn current_view(route: &BranchRoute) -> ApiResult<Arc<ReadView>> {
    match route.reads.current() {
        Some(view) => Ok(view),
        None => route
            .addr
            .send(PublishView)
            .await
            .map_err(|e| ApiError::from(crate::grid::error::GridError::ShuttingDown(e))),
    }
}

/// A batch as read for a view: the batch, the view's columns and the events; `None` when the
/// view is gone.
type BatchRead = Option<(Batch, Vec<ColumnDef>, Vec<Bytes>)>;

/// A view's last batch read, with the (position, durable clock) it was read for; locked while
/// it is read, so that the other consumers wait for it rather than read it again.
type LastRead = Arc<tokio::sync::Mutex<Option<((u32, u32), Arc<BatchRead>)>>>;

/// The last batch read of each view with a feed, by view id: consumers at one position share
/// one read.
#[derive(Default)]
pub struct FeedMemo {
    views: DashMap<String, LastRead>,
}

impl std::fmt::Debug for FeedMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedMemo").field("views", &self.views.len()).finish()
    }
}

/// One consumer's feed.
struct Feed {
    route: Arc<BranchRoute>,
    view_id: String,
    heartbeat: Duration,
    tx: mpsc::Sender<Bytes>,
    /// The server's stopping flag: the feed ends when it is set.
    stopping: tokio::sync::watch::Receiver<bool>,
    memo: Arc<FeedMemo>,
}

/// Why a feed ended.
enum End {
    /// The consumer went away.
    Gone,
    /// The consumer is told why (a `closed` event) before the stream ends.
    Closed(&'static str),
}

impl Feed {
    /// Sends the changes after `after` (after `now`, the position when the request came, when
    /// `None`) as they become durable, until the consumer goes or is closed.
    async fn run(self, after: Option<u32>, now: u32) {
        let mut stopping = self.stopping.clone();
        let mut durable = self.route.reads.durable_clock();
        durable.borrow_and_update();
        let mut position = match after {
            Some(after) if after <= now => after,
            Some(_) => {
                let data =
                    json!({"position": now, "reason": "the position is ahead of this branch"});
                if self.send(event("resync", Some(now), &data.to_string())).await.is_err() {
                    return;
                }
                now
            }
            None => now,
        };
        // A first comment sends the headers at once (proxies and clients see the stream open).
        let opened = format!(": changes of view {} after position {position}\n\n", self.view_id);
        if self.send(Bytes::from(opened)).await.is_err() {
            return;
        }
        let mut columns = None;
        let ended = loop {
            let at = *durable.borrow();
            match self.catch_up(at, &mut position, &mut columns).await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(end) => break end,
            }
            tokio::select! {
                changed = durable.changed() => {
                    if changed.is_err() {
                        break End::Closed("the grid or branch was deleted");
                    }
                }
                () = tokio::time::sleep(self.heartbeat) => {
                    // A deleted grid or branch stops its actor and commits nothing more.
                    if !self.route.addr.connected() {
                        break End::Closed("the grid or branch was deleted");
                    }
                    if self.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                        break End::Gone;
                    }
                }
                () = self.tx.closed() => break End::Gone,
                _ = stopping.wait_for(|stopping| *stopping) => {
                    break End::Closed("the server is stopping");
                }
            }
        };
        if let End::Closed(reason) = ended {
            let data = json!({"reason": reason});
            let _ = self.tx.try_send(event("closed", None, &data.to_string()));
        }
        // The view's last read goes with its consumers (one still reading keeps it; the others
        // read the next batch again): the memo holds reads of views being followed only.
        self.memo.views.remove_if(&self.view_id, |_, slot| Arc::strong_count(slot) == 1);
    }

    /// Sends the next batch after `position` up to the `durable` clock (and a `schema` event
    /// when the view's columns changed); true when more is waiting.
    async fn catch_up(
        &self,
        durable: u32,
        position: &mut u32,
        columns: &mut Option<Vec<ColumnDef>>,
    ) -> Result<bool, End> {
        if durable <= *position {
            return Ok(false);
        }
        let read = self.shared_batch(*position, durable).await?;
        let Some((batch, now, events)) = read.as_ref() else {
            self.memo.views.remove(&self.view_id);
            return Err(End::Closed("the view was deleted"));
        };
        if columns.as_ref().is_some_and(|seen| !same_columns(seen, now)) {
            self.send(event("schema", None, &schema_data(batch.after, now))).await?;
        }
        if !columns.as_ref().is_some_and(|seen| same_columns(seen, now)) {
            *columns = Some(now.clone());
        }
        for event in events {
            self.send(event.clone()).await?;
        }
        let more = batch.after < durable && !batch.commits.is_empty();
        *position = batch.after;
        Ok(more)
    }

    /// The batch after `after` up to `durable`, read once for every consumer of the view at
    /// that position (after a commit they all ask for the same one): the first to ask reads
    /// it while the others wait for it.
    async fn shared_batch(&self, after: u32, durable: u32) -> Result<Arc<BatchRead>, End> {
        let slot = self.memo.views.entry(self.view_id.clone()).or_default().clone();
        let mut last = slot.lock().await;
        if let Some((at, read)) = last.as_ref() {
            if *at == (after, durable) {
                return Ok(read.clone());
            }
        }
        let view =
            current_view(&self.route).await.map_err(|_| End::Closed("the server is stopping"))?;
        let view_id = self.view_id.clone();
        let read = web::block(move || read_batch(&view, &view_id, after, durable))
            .await
            .map_err(|_| End::Closed("reading the changes stopped"))?;
        let read = Arc::new(read);
        *last = Some(((after, durable), read.clone()));
        Ok(read)
    }

    /// Queues `chunk`, waiting at most `STALLED` for room.
    async fn send(&self, chunk: Bytes) -> Result<(), End> {
        match tokio::time::timeout(STALLED, self.tx.send(chunk)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(End::Gone),
            Err(_) => Err(End::Closed("the consumer fell behind: its buffer stayed full")),
        }
    }
}

/// The next batch of view `view_id` after `after`, the view's columns, and its events;
/// `None` when the view is gone.
fn read_batch(
    view: &ReadView,
    view_id: &str,
    after: u32,
    durable: u32,
) -> Option<(Batch, Vec<ColumnDef>, Vec<Bytes>)> {
    let state = &view.state;
    let def = state.schema.view(view_id)?;
    let batch = changes_since(state, def, after, durable.min(state.store.clock()), BATCH);
    let columns: Vec<&ColumnDef> =
        state.schema.view_columns(def).into_iter().map(|(c, _)| c).collect();
    let mut events = Vec::new();
    for commit in &batch.commits {
        events.extend(commit_events(view, &columns, commit));
    }
    Some((batch, columns.into_iter().cloned().collect(), events))
}

/// A commit's events: its records and deleted keys in parts of at most `BATCH`, the id on
/// the last part.
fn commit_events(view: &ReadView, columns: &[&ColumnDef], commit: &Commit) -> Vec<Bytes> {
    let parts = commit_parts(view, columns, commit, BATCH);
    let last = parts.len().saturating_sub(1);
    parts
        .iter()
        .enumerate()
        .map(|(i, data)| event("records", (i == last).then_some(commit.version), data))
        .collect()
}

/// One event in the event-stream format; `data` is one line of JSON.
fn event(name: &str, id: Option<u32>, data: &str) -> Bytes {
    let id = id.map_or(String::new(), |id| format!("id: {id}\n"));
    Bytes::from(format!("event: {name}\n{id}data: {data}\n\n"))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(changes);
}
