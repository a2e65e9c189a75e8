//! Webhook deliveries: one task per active hook, a durable cursor over its view's change feed.
//!
//! The task waits on the branch's durable clock (`ReadViews::durable_clock`), reads the commits
//! after its position from a published view with `grid::feed::changes_since` (on the blocking
//! pool; over the hook's columns only when it names some, and keeping only the records with a
//! cell in one of its statuses when it names some), and POSTs each commit, rendered as the change
//! feed's `records` event data (`api::feed_render`), in parts of at most `PART` records. A part
//! is retried until the receiver answers 2xx, waiting `retry_base` and twice as long after each
//! failure, at most `MAX_BACKOFF`; the 2xx of a commit's last part moves the hook's position in
//! the catalogue, durably, before the next delivery. So deliveries are in commit order per
//! view and at least once (a part answered 2xx but not yet recorded when the server stops is
//! sent again). Every attempt is recorded in the hook's delivery log with the same step
//! (`Supervisor::record_attempt`), which pauses the hook once it failed for `pause_after`.
//! When the hook's columns change while it runs, a `schema` delivery (the feed's `schema` event
//! data) comes before the next records.
//!
//! A request carries `Content-Type: application/json`, `X-Gridd-Hook` (the hook's id),
//! `X-Gridd-Delivery` (`<hookId>-<position>-<part>`, or `<hookId>-<position>-schema`: the same on
//! every attempt of a delivery, across restarts too), `X-Gridd-Event` (`records` or `schema`),
//! `X-Gridd-Position` (the commit's position) and, for a hook with a secret,
//! `X-Gridd-Signature: sha256=<hex HMAC-SHA256 of the body with the secret>`. Redirects are not
//! followed (a 3xx is a failure); a receiver has `timeout` to answer.
//!
//! A task ends when its hook is deleted (`Deliveries::stop`, or a deletion of its view, branch
//! or grid, which takes the hook with it), paused, or when the server stops
//! (`AppState::stopping`). It never touches the branch: it reads published views only.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::web::{self, Bytes};
use dashmap::DashMap;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::watch;
use tracing::Instrument;

use super::target::{parse_target, GuardedResolver};
use crate::api::changes::current_view;
use crate::api::feed_render::{commit_parts, same_columns, schema_data};
use crate::catalog::model::{DeliveryAttempt, Webhook, WebhookState};
use crate::catalog::webhooks::AttemptReport;
use crate::catalog::{BranchRoute, Exec, Missing};
use crate::config::Config;
use crate::grid::actor::reads::ReadView;
use crate::grid::feed::{changes_since, Commit};
use crate::grid::ops::GridState;
use crate::grid::schema::{ColumnDef, Schema, ViewColumn, ViewDef};
use crate::grid::value::DependencyStatus;
use crate::state::AppState;

/// Longest wait between two attempts of a delivery.
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);
/// Records (or deleted keys) per delivery, as per change feed event.
const PART: usize = 500;
/// How often an idle hook looks again whether its view is still routed.
const CHECK_EVERY: Duration = Duration::from_secs(2);

/// How deliveries behave (`Config`'s webhook flags).
#[derive(Debug, Clone, Copy)]
pub struct WebhookSettings {
    pub allow_loopback: bool,
    pub retry_base: Duration,
    pub pause_after: Duration,
    pub timeout: Duration,
}

impl WebhookSettings {
    pub fn of(config: &Config) -> WebhookSettings {
        WebhookSettings {
            allow_loopback: config.allow_loopback_webhooks,
            retry_base: Duration::from_millis(config.webhook_retry_base_ms.max(1)),
            pause_after: Duration::from_secs(config.webhook_pause_after_secs),
            timeout: Duration::from_millis(config.webhook_timeout_ms.max(1)),
        }
    }
}

/// The running delivery tasks, by hook id, and what they share.
pub struct Deliveries {
    settings: WebhookSettings,
    client: reqwest::Client,
    /// Each running task's generation and the sender that stops it.
    running: DashMap<String, (u64, watch::Sender<bool>)>,
    generations: AtomicU64,
}

impl std::fmt::Debug for Deliveries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliveries").field("running", &self.running.len()).finish()
    }
}

impl Deliveries {
    /// The deliveries' HTTP client: no redirects, the settings' timeout, the guarded resolver.
    pub fn new(settings: WebhookSettings) -> Result<Deliveries, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .dns_resolver(Arc::new(GuardedResolver { allow_loopback: settings.allow_loopback }))
            .user_agent(concat!("gridd-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Deliveries { settings, client, running: DashMap::new(), generations: AtomicU64::new(0) })
    }

    pub fn settings(&self) -> &WebhookSettings {
        &self.settings
    }

    /// Stops hook `id`'s task (it was deleted).
    pub fn stop(&self, id: &str) {
        if let Some((_, (_, stop))) = self.running.remove(id) {
            stop.send_replace(true);
        }
    }
}

/// Starts delivering `hook` unless it is paused or its task runs already.
pub fn start(state: &AppState, hook: Webhook) {
    if hook.state != WebhookState::Active {
        return;
    }
    let deliveries = &state.webhooks;
    let generation = deliveries.generations.fetch_add(1, Ordering::SeqCst);
    let (stop_tx, stop) = watch::channel(false);
    match deliveries.running.entry(hook.id.clone()) {
        dashmap::mapref::entry::Entry::Occupied(_) => return,
        dashmap::mapref::entry::Entry::Vacant(slot) => {
            slot.insert((generation, stop_tx));
        }
    }
    let span = tracing::info_span!("webhook", hook = %hook.id, view = %hook.view_id);
    let task = HookTask {
        filter: Arc::new(HookFilter::of(&hook)),
        position: hook.position,
        hook,
        columns: None,
        stop,
        stopping: state.stopping.clone(),
        state: state.clone(),
        waited: false,
    };
    actix_web::rt::spawn(task.run(generation).instrument(span));
}

/// Starts the deliveries of every active hook (at server start); in a cluster, then also every
/// `ADOPT_EVERY` those of hooks other nodes made or resumed (a task waits while another node
/// owns its grid, so a takeover finds it here).
pub async fn start_all(state: AppState) {
    match state.supervisor.send(Exec::new(|s| s.active_webhooks())).await {
        Ok(hooks) => hooks.into_iter().for_each(|hook| start(&state, hook)),
        Err(err) => tracing::error!(error = %err, "webhooks not started: supervisor gone"),
    }
    if state.cluster.is_none() {
        return;
    }
    let mut stopping = state.stopping.clone();
    while crate::api::tick_until_stopping(&mut stopping, ADOPT_EVERY).await {
        let Ok(hooks) = state.supervisor.send(Exec::new(|s| s.active_webhooks())).await else {
            return;
        };
        for hook in hooks {
            if !state.webhooks.running.contains_key(&hook.id) {
                start(&state, hook);
            }
        }
    }
}

/// How often a cluster node looks for hooks other nodes made or resumed.
const ADOPT_EVERY: Duration = Duration::from_secs(2);

/// `X-Gridd-Signature` of `body` with `secret`: `sha256=<hex HMAC-SHA256>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The wait before attempt `attempt + 1` of a delivery: `base` doubled after each failure.
pub fn backoff(base: Duration, attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(30);
    base.saturating_mul(1u32 << doublings).min(MAX_BACKOFF)
}

/// Which changes of its view a hook delivers.
#[derive(Debug)]
struct HookFilter {
    view_id: String,
    column_ids: Option<Vec<String>>,
    statuses: Option<Vec<DependencyStatus>>,
}

impl HookFilter {
    fn of(hook: &Webhook) -> HookFilter {
        let statuses = hook
            .statuses
            .as_ref()
            .map(|names| names.iter().filter_map(|name| DependencyStatus::parse(name)).collect());
        HookFilter { view_id: hook.view_id.clone(), column_ids: hook.column_ids.clone(), statuses }
    }

    /// The view narrowed to the hook's columns (those it still shows).
    fn narrow(&self, schema: &Schema, view: &ViewDef) -> ViewDef {
        let Some(ids) = &self.column_ids else { return view.clone() };
        let columns = schema
            .view_columns(view)
            .into_iter()
            .filter(|(column, _)| ids.contains(&column.id))
            .map(|(column, editable)| ViewColumn { id: column.id.clone(), editable })
            .collect();
        ViewDef { columns, is_default: false, ..view.clone() }
    }

    /// The commit less the records with no cell in one of the hook's statuses.
    fn keep(&self, state: &GridState, columns: &[&ColumnDef], commit: &Commit) -> Commit {
        let Some(statuses) = &self.statuses else { return commit.clone() };
        let read = state.read_rows(columns, commit.rows.iter().copied());
        let rows = commit
            .rows
            .iter()
            .zip(read)
            .filter(|(_, record)| {
                record.cells.iter().any(|c| c.statuses.is_some_and(|(d, _)| statuses.contains(&d)))
            })
            .map(|(row, _)| *row)
            .collect();
        Commit { version: commit.version, rows, deleted: commit.deleted.clone() }
    }
}

/// One request to make, attempted until answered 2xx.
#[derive(Debug)]
struct Delivery {
    id: String,
    event: &'static str,
    position: u32,
    body: Bytes,
    /// The commit whose last part this is.
    completes: Option<u32>,
}

/// What a hook delivers next: the deliveries of one batch of changes.
struct HookBatch {
    after: u32,
    columns: Vec<ColumnDef>,
    deliveries: Vec<Delivery>,
}

/// The deliveries of the changes after `after` up to `durable`; `None` when the view is gone.
fn read_changes(
    view: &ReadView,
    hook_id: &str,
    filter: &HookFilter,
    after: u32,
    durable: u32,
) -> Option<HookBatch> {
    let state = &view.state;
    let def = filter.narrow(&state.schema, state.schema.view(&filter.view_id)?);
    let batch = changes_since(state, &def, after, durable.min(state.store.clock()), PART);
    let columns: Vec<&ColumnDef> =
        state.schema.view_columns(&def).into_iter().map(|(c, _)| c).collect();
    let mut deliveries = Vec::new();
    for commit in &batch.commits {
        let commit = filter.keep(state, &columns, commit);
        let parts = commit_parts(view, &columns, &commit, PART);
        let last = parts.len().saturating_sub(1);
        for (i, body) in parts.into_iter().enumerate() {
            deliveries.push(Delivery {
                id: format!("{hook_id}-{}-{i}", commit.version),
                event: "records",
                position: commit.version,
                body: Bytes::from(body),
                completes: (i == last).then_some(commit.version),
            });
        }
    }
    let columns = columns.into_iter().cloned().collect();
    Some(HookBatch { after: batch.after, columns, deliveries })
}

/// Why a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Told to stop (the hook deleted) or the server is stopping.
    Stopped,
    /// The hook is paused.
    Paused,
    /// The hook is no longer in the catalogue.
    Deleted,
}

/// One hook's delivery task.
struct HookTask {
    state: AppState,
    hook: Webhook,
    filter: Arc<HookFilter>,
    /// Every change at or below it was delivered or is not the hook's.
    position: u32,
    /// The hook's columns as last delivered (`None` until the first batch).
    columns: Option<Vec<ColumnDef>>,
    stop: watch::Receiver<bool>,
    stopping: watch::Receiver<bool>,
    /// In a cluster: the task waited while another node owned the hook's grid, which moved the
    /// hook's position on meanwhile (read again from the catalogue once this node owns it).
    waited: bool,
}

impl HookTask {
    async fn run(mut self, generation: u64) {
        tracing::debug!(position = self.position, "webhook deliveries started");
        let end = loop {
            if let Err(end) = self.step().await {
                break end;
            }
        };
        tracing::info!(?end, position = self.position, "webhook deliveries ended");
        let deliveries = &self.state.webhooks;
        deliveries.running.remove_if(&self.hook.id, |_, (running, _)| *running == generation);
        if end == End::Paused {
            // A resume between the pause and the removal above found this task running.
            let id = self.hook.id.clone();
            let stored = self.state.supervisor.send(Exec::new(move |s| s.stored_webhook(&id)));
            if let Ok(Some(hook)) = stored.await {
                start(&self.state, hook);
            }
        }
    }

    /// Delivers what is waiting, or waits for more.
    async fn step(&mut self) -> Result<(), End> {
        let Some(route) = self.state.routes.view(&self.hook.view_id) else {
            // In a cluster only the grid's owner runs its actors and delivers its hooks; the
            // other nodes' tasks wait (one of them delivers if its grid moves there).
            if self.state.cluster.as_ref().is_some_and(|c| !c.owned.owns(&self.hook.grid_id)) {
                self.waited = true;
                return self.wait(std::future::pending(), CHECK_EVERY).await;
            }
            return self.view_gone().await;
        };
        if std::mem::take(&mut self.waited) {
            let id = self.hook.id.clone();
            let stored = self.state.supervisor.send(Exec::new(move |s| s.stored_webhook(&id)));
            if let Ok(Some(hook)) = stored.await {
                self.position = self.position.max(hook.position);
            }
        }
        let mut durable = route.reads.durable_clock();
        let at = *durable.borrow_and_update();
        if at > self.position {
            return self.catch_up(&route, at).await;
        }
        let changed = async move {
            if durable.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        self.wait(changed, CHECK_EVERY).await
    }

    /// Waits for `wake` or `at_most`, whichever comes first; `Err` when told to stop.
    async fn wait(&mut self, wake: impl Future<Output = ()>, at_most: Duration) -> Result<(), End> {
        tokio::select! {
            () = wake => Ok(()),
            () = tokio::time::sleep(at_most) => Ok(()),
            _ = self.stop.wait_for(|stop| *stop) => Err(End::Stopped),
            _ = self.stopping.wait_for(|stopping| *stopping) => Err(End::Stopped),
        }
    }

    /// The view is not routed: deleted with its branch or grid (which took the hook with it),
    /// or on its own; a hook still stored is paused.
    async fn view_gone(&mut self) -> Result<(), End> {
        let id = self.hook.id.clone();
        let reason = "The view was deleted.";
        let paused = self.state.supervisor.send(Exec::new(move |s| s.pause_webhook(&id, reason)));
        match paused.await {
            Ok(Ok(Some(_))) => Err(End::Paused),
            Ok(Ok(None)) => Err(End::Deleted),
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "pausing a webhook whose view is gone failed");
                self.wait(std::future::pending(), CHECK_EVERY).await
            }
            Err(_) => Err(End::Stopped),
        }
    }

    /// Delivers the changes after the position up to `durable`.
    async fn catch_up(&mut self, route: &BranchRoute, durable: u32) -> Result<(), End> {
        let Ok(view) = current_view(route).await else {
            return self.wait(std::future::pending(), CHECK_EVERY).await;
        };
        let (filter, hook_id, after) = (self.filter.clone(), self.hook.id.clone(), self.position);
        let read = web::block(move || read_changes(&view, &hook_id, &filter, after, durable)).await;
        let batch = match read {
            Ok(Some(batch)) => batch,
            Ok(None) => return self.view_gone().await,
            Err(err) => {
                tracing::error!(error = %err, "reading a webhook's changes failed");
                return self.wait(std::future::pending(), CHECK_EVERY).await;
            }
        };
        if self.columns.as_ref().is_some_and(|seen| !same_columns(seen, &batch.columns)) {
            let schema = Delivery {
                id: format!("{}-{}-schema", self.hook.id, batch.after),
                event: "schema",
                position: batch.after,
                body: Bytes::from(schema_data(batch.after, &batch.columns)),
                completes: None,
            };
            self.deliver(&schema).await?;
        }
        self.columns = Some(batch.columns);
        for delivery in &batch.deliveries {
            self.deliver(delivery).await?;
        }
        self.position = batch.after;
        Ok(())
    }

    /// Attempts `delivery` until the receiver answers 2xx (recorded), backing off between
    /// attempts; `Err` when the hook is paused, deleted or stopped meanwhile.
    async fn deliver(&mut self, delivery: &Delivery) -> Result<(), End> {
        let settings = *self.state.webhooks.settings();
        for attempt in 1u32.. {
            let outcome = self.attempt(delivery, attempt).await;
            let succeeded = outcome.succeeded();
            let report = AttemptReport {
                attempt: outcome,
                completes: delivery.completes.filter(|_| succeeded),
                pause_after: settings.pause_after,
            };
            let recorded = self.state.supervisor.send(Exec::new(move |s| s.record_attempt(report)));
            match recorded.await {
                Ok(Ok(_)) if succeeded => return Ok(()),
                Ok(Ok(hook)) if hook.state == WebhookState::Paused => return Err(End::Paused),
                Ok(Ok(_)) => {}
                Ok(Err(err)) if err.is_missing(Missing::Webhook) => return Err(End::Deleted),
                // Not recorded: attempted again (at least once), as after a failure.
                Ok(Err(err)) => tracing::warn!(error = %err, "a webhook attempt was not recorded"),
                Err(_) => return Err(End::Stopped),
            }
            let delay = backoff(settings.retry_base, attempt);
            self.wait(std::future::pending(), delay).await?;
        }
        Err(End::Stopped)
    }

    /// One attempt, as the delivery log keeps it.
    async fn attempt(&self, delivery: &Delivery, attempt: u32) -> DeliveryAttempt {
        let started = Instant::now();
        let (status, error) = match self.send(delivery).await {
            Ok(status) => (Some(status), None),
            Err(error) => (None, Some(error)),
        };
        if let Some(error) = &error {
            tracing::debug!(delivery = %delivery.id, attempt, %error, "webhook attempt failed");
        }
        DeliveryAttempt {
            hook_id: self.hook.id.clone(),
            sequence: 0,
            delivery_id: delivery.id.clone(),
            event: delivery.event.to_owned(),
            position: delivery.position,
            attempt,
            time: String::new(),
            status,
            error,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// POSTs the delivery; the receiver's status, or why there was none.
    async fn send(&self, delivery: &Delivery) -> Result<u16, String> {
        let deliveries = &self.state.webhooks;
        let url = parse_target(&self.hook.url, deliveries.settings.allow_loopback)
            .map_err(|e| e.to_string())?;
        let mut request = deliveries
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Gridd-Hook", &self.hook.id)
            .header("X-Gridd-Delivery", &delivery.id)
            .header("X-Gridd-Event", delivery.event)
            .header("X-Gridd-Position", delivery.position.to_string())
            .body(delivery.body.clone());
        if let Some(secret) = &self.hook.secret {
            request = request.header("X-Gridd-Signature", signature(secret, &delivery.body));
        }
        let response = request.send().await.map_err(|e| error_text(&e))?;
        Ok(response.status().as_u16())
    }
}

/// An error and its causes, on one line, at most 300 characters.
fn error_text(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(err) = cause {
        text.push_str(": ");
        text.push_str(&err.to_string());
        cause = err.source();
    }
    crate::io::csv_import::clip(&text, 300).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_hmac_sha256_in_hex() {
        // RFC 4231 test case 2.
        let sig = signature("Jefe", b"what do ya want for nothing?");
        assert_eq!(sig, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn backoff_doubles_from_the_base_up_to_ten_minutes() {
        let base = Duration::from_secs(1);
        let waits: Vec<u64> = (1..=5).map(|a| backoff(base, a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16]);
        assert_eq!(backoff(base, 11), MAX_BACKOFF);
        assert_eq!(backoff(base, u32::MAX), MAX_BACKOFF);
    }
}
