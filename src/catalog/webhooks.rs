//! Supervisor operations on webhooks (`api::webhooks`): create, list, look up, delete and
//! resume a hook, and record each delivery attempt, which moves the hook's delivered position
//! (on a 2xx that completes a commit) or pauses it (failing for the whole pause period), in the
//! same durable change set as the attempt's entry in the hook's delivery log.
//!
//! Owns the rules on the catalogue's side: how many hooks a company may have, how long a log
//! is, who may see a hook. It knows nothing of HTTP, URLs or the view's columns (the API checks
//! those before `create_webhook`), and it starts no delivery.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, DeliveryAttempt, Webhook, WebhookState};
use super::store::{load_all, CatalogChange, CatalogStore, EntityKind, StoreError};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege, Scope};

/// Hooks a company may have.
pub const MAX_WEBHOOKS_PER_COMPANY: usize = 100;
/// Attempts each hook's delivery log keeps (the oldest goes when a new one comes).
pub const LOG_LEN: usize = 100;

/// What one attempt came to, as the delivery task reports it.
#[derive(Debug, Clone)]
pub struct AttemptReport {
    /// The attempt as the log keeps it (`hook_id`, `sequence` and `time` are filled in here).
    pub attempt: DeliveryAttempt,
    /// On a 2xx: the commit this delivery completes, which becomes the hook's position.
    pub completes: Option<u32>,
    /// A hook failing this long without a success is paused.
    pub pause_after: Duration,
}

/// The delivery logs of every hook, loaded from the catalogue, oldest attempt first.
pub(super) fn load_logs(
    store: &dyn CatalogStore,
) -> Result<HashMap<String, VecDeque<DeliveryAttempt>>, StoreError> {
    let mut attempts: Vec<DeliveryAttempt> = load_all(store, EntityKind::WebhookAttempt)?;
    attempts.sort_by(|a, b| (&a.hook_id, a.sequence).cmp(&(&b.hook_id, b.sequence)));
    let mut logs: HashMap<String, VecDeque<DeliveryAttempt>> = HashMap::new();
    for attempt in attempts {
        logs.entry(attempt.hook_id.clone()).or_default().push_back(attempt);
    }
    Ok(logs)
}

fn scope(hook: &Webhook) -> Scope<'_> {
    Scope {
        company: hook.company_id,
        project: Some(hook.project_id),
        database: Some(&hook.database_id),
        grid: Some(&hook.grid_id),
        view: Some(&hook.view_id),
    }
}

/// The reason a hook failing since `since_ms` is paused at `now_ms`, if it is.
fn pause_reason(
    since_ms: i64,
    now_ms: i64,
    pause_after: Duration,
    last: &DeliveryAttempt,
) -> Option<String> {
    let failing = u64::try_from(now_ms.saturating_sub(since_ms)).unwrap_or(0);
    if u128::from(failing) < pause_after.as_millis() {
        return None;
    }
    let why = match (&last.error, last.status) {
        (Some(error), _) => error.clone(),
        (None, Some(status)) => format!("the receiver answered {status}"),
        (None, None) => "no answer".to_owned(),
    };
    Some(format!(
        "Every delivery attempt failed for {} s ({} attempts of delivery {}); the last: {why}.",
        failing / 1000,
        last.attempt,
        last.delivery_id
    ))
}

impl Supervisor {
    /// Records a new hook (the API checked its URL, view and columns, and the key's right to
    /// manage the view); 400 past `MAX_WEBHOOKS_PER_COMPANY`.
    pub fn create_webhook(&mut self, hook: Webhook) -> CatalogResult<Webhook> {
        let company = hook.company_id;
        if self.webhooks.values().filter(|h| h.company_id == company).count()
            >= MAX_WEBHOOKS_PER_COMPANY
        {
            return Err(CatalogError::invalid(format!(
                "A company has at most {MAX_WEBHOOKS_PER_COMPANY} webhooks; delete one first."
            )));
        }
        self.commit(&[CatalogChange::put(EntityKind::Webhook, &hook.id, &hook)])?;
        self.webhooks.insert(hook.id.clone(), hook.clone());
        Ok(hook)
    }

    /// The company's hooks the key reaches (of view `view_id` when given), oldest first; the
    /// key needs the manage privilege.
    pub fn list_webhooks(
        &self,
        p: &Principal,
        view_id: Option<&str>,
    ) -> CatalogResult<Vec<Webhook>> {
        p.require_company_privilege(Privilege::Manage)?;
        Ok(self
            .webhooks
            .values()
            .filter(|h| view_id.is_none_or(|v| h.view_id == v) && p.sees(&scope(h)))
            .cloned()
            .collect())
    }

    /// Hook `id`, for a key that may manage its view (404 webhookIsNotFound when unknown or
    /// out of the key's sight, 403 without the privilege).
    pub fn webhook(&self, p: &Principal, id: &str) -> CatalogResult<Webhook> {
        let not_found = || CatalogError::not_found(Missing::Webhook, id);
        let hook = self.webhooks.get(id).ok_or_else(not_found)?;
        if !p.sees(&scope(hook)) {
            return Err(not_found());
        }
        p.authorize(&scope(hook), Privilege::Manage, not_found)?;
        Ok(hook.clone())
    }

    /// Hook `id` as stored, for its delivery task (`None` once deleted).
    pub fn stored_webhook(&self, id: &str) -> Option<Webhook> {
        self.webhooks.get(id).cloned()
    }

    /// The hooks to deliver at start.
    pub fn active_webhooks(&self) -> Vec<Webhook> {
        self.webhooks.values().filter(|h| h.state == WebhookState::Active).cloned().collect()
    }

    /// Deletes hook `id` and its delivery log.
    pub fn delete_webhook(&mut self, p: &Principal, id: &str) -> CatalogResult<()> {
        self.webhook(p, id)?;
        self.drop_webhooks(|h| h.id == id)
    }

    /// Deletes the hooks of view `view_id` (the view was deleted).
    pub fn delete_view_webhooks(&mut self, view_id: &str) -> CatalogResult<()> {
        self.drop_webhooks(|h| h.view_id == view_id)
    }

    /// The deletions of the hooks `doomed` picks and their logs (for a grid's or branch's
    /// deletion, which commits them with its own).
    pub(super) fn webhooks_deletion(
        &self,
        doomed: impl Fn(&Webhook) -> bool,
    ) -> Vec<CatalogChange> {
        let mut changes = Vec::new();
        for hook in self.webhooks.values().filter(|h| doomed(h)) {
            changes.push(CatalogChange::delete(EntityKind::Webhook, &hook.id));
            let log = self.webhook_logs.get(&hook.id).into_iter().flatten();
            changes
                .extend(log.map(|a| CatalogChange::delete(EntityKind::WebhookAttempt, &a.key())));
        }
        changes
    }

    /// Forgets the hooks `doomed` picks once their deletion is committed.
    pub(super) fn forget_webhooks(&mut self, doomed: impl Fn(&Webhook) -> bool) {
        let ids: Vec<String> =
            self.webhooks.values().filter(|h| doomed(h)).map(|h| h.id.clone()).collect();
        for id in ids {
            self.webhooks.shift_remove(&id);
            self.webhook_logs.remove(&id);
        }
    }

    fn drop_webhooks(&mut self, doomed: impl Fn(&Webhook) -> bool) -> CatalogResult<()> {
        let changes = self.webhooks_deletion(&doomed);
        if changes.is_empty() {
            return Ok(());
        }
        self.commit(&changes)?;
        self.forget_webhooks(doomed);
        Ok(())
    }

    /// Makes hook `id` active again (its failures forgotten); an active hook is unchanged.
    pub fn resume_webhook(&mut self, p: &Principal, id: &str) -> CatalogResult<Webhook> {
        let mut hook = self.webhook(p, id)?;
        if hook.state == WebhookState::Active {
            return Ok(hook);
        }
        hook.state = WebhookState::Active;
        hook.paused_reason = None;
        hook.paused_time = None;
        hook.failing_since_ms = None;
        self.put_webhook(hook)
    }

    /// Pauses hook `id` for `reason` (its view is gone); `None` when it was deleted.
    pub fn pause_webhook(&mut self, id: &str, reason: &str) -> CatalogResult<Option<Webhook>> {
        let Some(mut hook) = self.stored_webhook(id) else { return Ok(None) };
        hook.state = WebhookState::Paused;
        hook.paused_reason = Some(reason.to_owned());
        hook.paused_time = Some(now_timestamp());
        self.put_webhook(hook).map(Some)
    }

    fn put_webhook(&mut self, hook: Webhook) -> CatalogResult<Webhook> {
        self.commit(&[CatalogChange::put(EntityKind::Webhook, &hook.id, &hook)])?;
        self.webhooks.insert(hook.id.clone(), hook.clone());
        Ok(hook)
    }

    /// Hook `id`'s delivery log, newest attempt first.
    pub fn delivery_log(&self, p: &Principal, id: &str) -> CatalogResult<Vec<DeliveryAttempt>> {
        self.webhook(p, id)?;
        let log = self.webhook_logs.get(id).into_iter().flatten();
        Ok(log.rev().cloned().collect())
    }

    /// Records an attempt in the hook's log and what it means for the hook, in one change set:
    /// a 2xx forgets the failures and moves the position to the commit it completes; a failure
    /// starts (or continues) the failing period, and pauses the hook once that lasts
    /// `pause_after`. Answers the hook as it is now (404 once deleted).
    pub fn record_attempt(&mut self, report: AttemptReport) -> CatalogResult<Webhook> {
        let id = report.attempt.hook_id.clone();
        let mut hook = self
            .stored_webhook(&id)
            .ok_or_else(|| CatalogError::not_found(Missing::Webhook, &id))?;
        let log = self.webhook_logs.get(&id);
        let mut attempt = report.attempt;
        attempt.sequence = log.and_then(|l| l.back()).map_or(1, |last| last.sequence + 1);
        attempt.time = now_timestamp();
        let mut changes =
            vec![CatalogChange::put(EntityKind::WebhookAttempt, &attempt.key(), &attempt)];
        if let Some(oldest) = log.filter(|l| l.len() >= LOG_LEN).and_then(|l| l.front()) {
            changes.push(CatalogChange::delete(EntityKind::WebhookAttempt, &oldest.key()));
        }
        let now_ms = chrono::Utc::now().timestamp_millis();
        if attempt.succeeded() {
            hook.failing_since_ms = None;
            if let Some(position) = report.completes {
                hook.position = hook.position.max(position);
            }
        } else {
            let since = *hook.failing_since_ms.get_or_insert(now_ms);
            if let Some(reason) = pause_reason(since, now_ms, report.pause_after, &attempt) {
                hook.state = WebhookState::Paused;
                hook.paused_reason = Some(reason);
                hook.paused_time = Some(now_timestamp());
            }
        }
        changes.push(CatalogChange::put(EntityKind::Webhook, &id, &hook));
        self.commit(&changes)?;
        let log = self.webhook_logs.entry(id.clone()).or_default();
        if log.len() >= LOG_LEN {
            log.pop_front();
        }
        log.push_back(attempt);
        self.webhooks.insert(id, hook.clone());
        Ok(hook)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(status: Option<u16>, error: Option<&str>) -> DeliveryAttempt {
        DeliveryAttempt {
            hook_id: "h".into(),
            sequence: 0,
            delivery_id: "h-5-0".into(),
            event: "records".into(),
            position: 5,
            attempt: 7,
            time: String::new(),
            status,
            error: error.map(str::to_owned),
            duration_ms: 3,
        }
    }

    #[test]
    fn a_hook_is_paused_only_once_it_failed_for_the_whole_period() {
        let day = Duration::from_secs(86_400);
        let failed = attempt(Some(500), None);
        assert_eq!(pause_reason(0, 86_399_999, day, &failed), None);
        let reason = pause_reason(0, 86_400_000, day, &failed).expect("paused");
        assert!(reason.contains("86400 s") && reason.contains("answered 500"), "{reason}");
        let refused = attempt(None, Some("connection refused"));
        let reason = pause_reason(0, 90_000_000, day, &refused).expect("paused");
        assert!(reason.contains("connection refused") && reason.contains("h-5-0"), "{reason}");
    }

    #[test]
    fn attempt_keys_sort_as_their_sequence() {
        let mut a = attempt(Some(200), None);
        a.sequence = 9;
        let mut b = a.clone();
        b.sequence = 10;
        assert!(a.key() < b.key());
        assert!(a.succeeded() && !attempt(Some(302), None).succeeded());
    }
}
