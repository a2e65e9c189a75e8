//! Linked projects feed their memories: one task per memory follows the master branches of the
//! grids of its linked projects, a durable cursor per branch over its change feed.
//!
//! **The status rule.** A record's target-language cell feeds a segment when the column is the
//! target of a dependency, its dependency status is `upToDate` and its value is non-empty text:
//! source = the record's cell of the dependency's source column (non-empty text, in that
//! column's language), target = the cell (in its column's language), by the record's last
//! editor at its last change, origin `grid`. The segment is added, or updated when the memory
//! holds that source in that language pair. So a translation confirmed in a grid (a write that
//! sets `upToDate`, or a value written into a target cell, which the grid marks `upToDate`)
//! lands in the memory; a source edit, which makes its targets `outOfDate`, feeds nothing until
//! the target is confirmed again.
//!
//! **How.** Every `POLL` (at once while a batch was cut short) the task compares each branch's
//! durable clock (`ReadViews::durable_clock`) with its position in the memory
//! (`Memory::position`; 0 for a branch never read: a newly linked grid feeds what it holds),
//! reads the commits after the position from a published view with `grid::feed::changes_since`
//! on the blocking pool (at most `BATCH` records a pass), and writes their segments with the new
//! position in one flushed batch (`Memory::write`): a restart resumes from there, and a record
//! read twice is written twice to the same effect. A memory disabled or with
//! `isPausedConsuming` reads nothing. The task never touches a grid actor's write path: it
//! reads published views only. It ends when the memory is deleted (`TransMems::stop`) or the
//! server stops.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use dashmap::DashMap;
use tokio::sync::watch;
use tracing::Instrument;

use super::replica::{apply, TmChange, TmReplica};
use crate::api::changes::current_view;
use crate::catalog::Exec;
use crate::error::ApiResult;
use crate::grid::actor::reads::ReadView;
use crate::grid::feed::changes_since;
use crate::grid::value::{CellValue, DependencyStatus};
use crate::state::AppState;
use crate::tm::segment::{Origin, Segment, Side};
use crate::tm::store::{Memory, SegmentStore, TmStoreError, Written};

/// How often a task looks for new changes.
const POLL: Duration = Duration::from_millis(500);
/// Most records one pass reads from a branch.
const BATCH: usize = 2000;

/// The memories' segments, their feeding tasks and the upload limit (in `AppState`).
#[derive(Debug)]
pub struct TransMems {
    pub segments: Arc<SegmentStore>,
    /// Largest TMX file an upload or import takes, in bytes.
    pub upload_limit: u64,
    running: DashMap<String, watch::Sender<bool>>,
    /// In a cluster: the memories' log every change goes through (`replica`).
    replica: Option<Arc<TmReplica>>,
}

impl TransMems {
    pub fn new(
        segments: Arc<SegmentStore>,
        upload_limit: u64,
        replica: Option<Arc<TmReplica>>,
    ) -> TransMems {
        TransMems { segments, upload_limit, running: DashMap::new(), replica }
    }

    /// Applies `change` to memory `id`: here, or in a cluster through the memories' log (then
    /// every node applies it; answered once this node has).
    pub async fn change(&self, id: &str, change: TmChange) -> ApiResult<Written> {
        match &self.replica {
            Some(replica) => replica.change(id, &change).await,
            None => {
                let (store, id) = (self.segments.clone(), id.to_owned());
                super::blocking(move || apply(&store, &id, change)).await?
            }
        }
    }

    /// Waits until this node holds every change of memory `id` acknowledged before the call
    /// (a cluster; at once alone).
    pub async fn caught_up(&self, id: &str) -> ApiResult<()> {
        match &self.replica {
            Some(replica) => replica.caught_up(id).await,
            None => Ok(()),
        }
    }

    /// Purges a deleted memory's log (a cluster; nothing alone).
    pub async fn purge(&self, id: &str) {
        if let Some(replica) = &self.replica {
            replica.purge(id).await;
        }
    }

    /// Ends memory `id`'s task.
    pub fn stop(&self, id: &str) {
        if let Some((_, stop)) = self.running.remove(id) {
            stop.send_replace(true);
        }
    }
}

/// Starts memory `id`'s feeding task unless it runs.
pub fn start(state: &AppState, id: &str) {
    let (stop, stopped) = watch::channel(false);
    match state.transmems.running.entry(id.to_owned()) {
        dashmap::Entry::Occupied(_) => return,
        dashmap::Entry::Vacant(slot) => slot.insert(stop),
    };
    let span = tracing::info_span!("transmem_feed", memory = %id);
    actix_web::rt::spawn(run(state.clone(), id.to_owned(), stopped).instrument(span));
}

/// At server start: sweeps the trees of memories no longer in the catalogue, opens every
/// memory (its index built) and starts its task.
pub async fn start_all(state: AppState) {
    let Ok(all) = state.supervisor.send(Exec::new(|s| s.all_transmems())).await else { return };
    let ids: Vec<String> = all.into_iter().map(|m| m.id).collect();
    let (store, known) = (state.transmems.segments.clone(), ids.clone());
    let opened = web::block(move || {
        store.sweep(&|id| known.iter().any(|k| k == id));
        for id in &known {
            if let Err(err) = store.memory(id) {
                tracing::error!(memory = %id, error = %err, "opening a translation memory failed");
            }
        }
    });
    if opened.await.is_err() {
        tracing::error!("opening the translation memories failed");
    }
    for id in ids {
        start(&state, &id);
    }
    if state.cluster.is_some() {
        adopt_new_memories(state).await;
    }
}

/// How often a cluster node looks for memories other nodes made.
const ADOPT_EVERY: Duration = Duration::from_secs(2);

/// In a cluster: starts the task of each memory another node made (the catalogue's follower
/// records it here; the grids this node serves feed it too), until the server stops.
async fn adopt_new_memories(state: AppState) {
    let mut stopping = state.stopping.clone();
    while crate::api::tick_until_stopping(&mut stopping, ADOPT_EVERY).await {
        let Ok(all) = state.supervisor.send(Exec::new(|s| s.all_transmems())).await else {
            return;
        };
        for memory in all {
            if !state.transmems.running.contains_key(&memory.id) {
                start(&state, &memory.id);
            }
        }
    }
}

/// What one pass found.
#[derive(Debug, PartialEq, Eq)]
enum Pass {
    /// Read everything durable.
    Idle,
    /// A branch has more to read at once.
    More,
    /// The memory is gone.
    Gone,
}

async fn run(state: AppState, id: String, mut stop: watch::Receiver<bool>) {
    let mut stopping = state.stopping.clone();
    loop {
        let wait = match pass(&state, &id).await {
            Pass::Gone => break,
            Pass::More => Duration::ZERO,
            Pass::Idle => POLL,
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => break,
            _ = stopping.wait_for(|s| *s) => break,
        }
    }
    tracing::debug!("translation memory feed ended");
}

async fn pass(state: &AppState, id: &str) -> Pass {
    let key = id.to_owned();
    let Ok(Some(tm)) = state.supervisor.send(Exec::new(move |s| s.stored_transmem(&key))).await
    else {
        return Pass::Gone;
    };
    if tm.is_disabled || tm.is_paused_consuming || tm.project_ids.is_empty() {
        return Pass::Idle;
    }
    let projects = tm.project_ids.clone();
    let Ok(branches) =
        state.supervisor.send(Exec::new(move |s| s.project_masters(&projects))).await
    else {
        return Pass::Gone;
    };
    // Only the branches this node serves (in a cluster, each node feeds from its own grids).
    let branches: Vec<String> =
        branches.into_iter().filter(|b| state.routes.branch(b).is_some()).collect();
    if branches.is_empty() || state.transmems.caught_up(&tm.id).await.is_err() {
        return Pass::Idle;
    }
    let store = state.transmems.segments.clone();
    let memory_id = tm.id.clone();
    let Ok(Ok(memory)) = web::block(move || store.memory(&memory_id)).await else {
        return Pass::Idle;
    };
    let mut result = Pass::Idle;
    for branch in branches {
        let Some(route) = state.routes.branch(&branch) else { continue };
        let durable = *route.reads.durable_clock().borrow();
        let Ok(view) = current_view(&route).await else { continue };
        let memory = memory.clone();
        let fed = web::block(move || feed_of(&memory, &view, &branch, durable)).await;
        let fed = match fed.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string())) {
            Ok(fed) => fed,
            Err(err) => {
                tracing::warn!(error = %err, "feeding a translation memory failed");
                continue;
            }
        };
        let Some(Fed { change, more }) = fed else { continue };
        match state.transmems.change(&tm.id, change).await {
            Ok(_) if more => result = Pass::More,
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err.message, "feeding a translation memory failed"),
        }
    }
    result
}

/// What a branch feeds a memory in one step.
struct Fed {
    /// The segments, with the branch's new position.
    change: TmChange,
    /// Whether more changes of the branch wait.
    more: bool,
}

/// The segments of the changes of `branch` after its position in the memory up to `durable`
/// (at most `BATCH`); None when there are none.
fn feed_of(
    memory: &Memory,
    view: &ReadView,
    branch: &str,
    durable: u32,
) -> Result<Option<Fed>, TmStoreError> {
    let after = memory.position(branch)?.unwrap_or(0);
    let state = &view.state;
    let durable = durable.min(state.store.clock());
    if durable <= after {
        return Ok(None);
    }
    let Some(def) = state.schema.views.iter().find(|v| v.is_default) else { return Ok(None) };
    let batch = changes_since(state, def, after, durable, BATCH);
    let segments = segments_of(view, batch.commits.iter().flat_map(|c| c.rows.iter().copied()));
    let change = TmChange::Write { segments, position: Some((branch.to_owned(), batch.after)) };
    Ok(Some(Fed { change, more: batch.after < durable }))
}

/// The segments the status rule takes from these rows.
fn segments_of(
    view: &ReadView,
    rows: impl Iterator<Item = crate::grid::store::RowId>,
) -> Vec<Segment> {
    let schema = &view.state.schema;
    let pairs: Vec<_> = schema
        .dependencies
        .iter()
        .filter_map(|d| {
            Some((schema.column(&d.source_column_id)?, schema.column(&d.target_column_id)?))
        })
        .filter_map(|(s, t)| Some((s, t, s.language_code.clone()?, t.language_code.clone()?)))
        .collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    let mut columns: Vec<_> = pairs.iter().flat_map(|(s, t, _, _)| [*s, *t]).collect();
    columns.sort_by(|a, b| a.id.cmp(&b.id));
    columns.dedup_by(|a, b| a.id == b.id);
    let mut segments = Vec::new();
    for record in view.state.read_rows(&columns, rows) {
        let cell = |id: &str| record.cells.iter().find(|c| &*c.column_id == id);
        for (source, target, source_lang, target_lang) in &pairs {
            let (Some(s), Some(t)) = (cell(&source.id), cell(&target.id)) else { continue };
            let (CellValue::Text(source_text), CellValue::Text(target_text)) = (&s.value, &t.value)
            else {
                continue;
            };
            let up_to_date = t.statuses.is_some_and(|(d, _)| d == DependencyStatus::UpToDate);
            if !up_to_date || source_text.trim().is_empty() || target_text.trim().is_empty() {
                continue;
            }
            let side = |lang: &str, text: &str| Side {
                lang: lang.to_owned(),
                text: text.to_owned(),
                markup: None,
            };
            segments.push(Segment {
                source: side(source_lang, source_text),
                target: side(target_lang, target_text),
                created_ms: record.time_ms,
                created_by: record.user.clone(),
                changed_ms: record.time_ms,
                changed_by: record.user.clone(),
                origin: Origin::Grid,
                props: Vec::new(),
                notes: Vec::new(),
            });
        }
    }
    segments
}
