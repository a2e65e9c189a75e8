//! Page reads off the grid actor: `ReadViews` holds an immutable copy of the branch (its
//! storage chunks shared with the actor's state, a clone costing microseconds) that request
//! handlers read from on their own threads, without a round trip through the actor's mailbox.
//!
//! The actor stays the only writer. It publishes a view lazily, when it answers a read itself
//! and none is held, and withdraws it before it changes the branch in any way (`commit`,
//! a heavy write's swap, shutdown), so the chunks a write then changes are shared with no view
//! (no copy-on-write of them) unless a read is rendering from it that very moment. Since the
//! withdrawal comes before the write is applied, and so before it is acknowledged, a read that
//! starts after an acknowledged write finds either no view (and asks the actor) or one published
//! after the write: reads see their writes. A view is a whole state: a read from it sees a write
//! entirely or not at all.
//!
//! What reads from a view (`read_from_view`): any page, sorted, filtered or from a cursor, with
//! the view's snapshot of the query indexes (`QueryEngine::snapshot`, taken with the state).
//! When no view is held, the handler asks the actor for one (`PublishView`). A query that wants
//! an index the snapshot lacks is asked of the actor, which builds it; the views after have it.
//! Exports and counts read every matching row of a view the same way (`export_rows`), never
//! through the actor's mailbox.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};

use actix::{Context, Handler, Message};
use tokio::sync::watch;

use super::{GridActor, WrittenRecords};
use crate::grid::error::{GridError, GridResult};
use crate::grid::ops::GridState;
use crate::grid::preconditions::record_version;
use crate::grid::query::{bind_filters, bind_sort, Direction, QueryEngine, RawFilter, RawSort};
use crate::grid::read::RecordPage;
use crate::grid::read_json::renders_alone;
use crate::grid::schema::{distinct_column_ids, ColumnDef, Schema, ViewDef, PREDEFINED_COLUMNS};
use crate::grid::store::{ColumnStore, RecordIdentity, RowId};

/// An immutable copy of a branch for readers: the state, and the query indexes as they were
/// for exactly that state.
pub struct ReadView {
    pub state: GridState,
    query: QueryEngine,
}

impl ReadView {
    /// A view of `state` as it is now, with a snapshot of `query` brought up to date first.
    fn of(state: &mut GridState, query: &mut QueryEngine) -> Arc<ReadView> {
        let query = query.snapshot(&mut state.store);
        Arc::new(ReadView { state: state.clone(), query })
    }
}

/// The published view of one branch, if any (see the module doc), and how far the branch's
/// changes are durable (`durable`: the change feed reads no further).
pub struct ReadViews {
    view: RwLock<Option<Arc<ReadView>>>,
    /// The branch clock up to which every change is durable in the WAL: a change stamped `v`
    /// is durable once this is at least `v`. Set when the actor starts and after each durable
    /// write.
    durable: watch::Sender<u32>,
}

impl Default for ReadViews {
    fn default() -> Self {
        ReadViews { view: RwLock::default(), durable: watch::Sender::new(0) }
    }
}

impl std::fmt::Debug for ReadViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadViews").field("published", &self.current().is_some()).finish()
    }
}

impl ReadViews {
    /// The view readers may use now, if one is published.
    pub fn current(&self) -> Option<Arc<ReadView>> {
        self.view.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Publishes a copy of `state` (with a snapshot of `query`, brought up to date first)
    /// unless a view is already held; the view held after. The copy is taken outside the lock
    /// (only the actor publishes), so readers asking for the view never wait on it.
    pub(super) fn publish(&self, state: &mut GridState, query: &mut QueryEngine) -> Arc<ReadView> {
        if let Some(view) = self.current() {
            return view;
        }
        let view = ReadView::of(state, query);
        self.view.write().unwrap_or_else(|e| e.into_inner()).get_or_insert(view).clone()
    }

    /// Publishes a fresh copy in place of the view held (after the actor built an index a
    /// view lacked, so that the reads after find it); the view replaced is handed back to be
    /// dropped outside the lock.
    pub(super) fn republish(
        &self,
        state: &mut GridState,
        query: &mut QueryEngine,
    ) -> Option<Arc<ReadView>> {
        let view = ReadView::of(state, query);
        self.view.write().unwrap_or_else(|e| e.into_inner()).replace(view)
    }

    /// Follows the durable clock (`durable`): a change feed waits on it.
    pub fn durable_clock(&self) -> watch::Receiver<u32> {
        self.durable.subscribe()
    }

    /// Notes that every change stamped at or below `clock` is durable.
    pub(super) fn note_durable(&self, clock: u32) {
        self.durable.send_if_modified(|at| {
            let later = clock > *at;
            *at = (*at).max(clock);
            later
        });
    }

    /// Withdraws the view before the branch changes; returns it so that the caller drops it
    /// (outside the lock).
    pub(super) fn withdraw(&self) -> Option<Arc<ReadView>> {
        self.view.write().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// How many record reads a published view answered and how many the actor did (`GET
/// /metrics`): the actor answers only a query wanting an index no view has yet.
#[derive(Debug, Default)]
pub struct ReadsAnswered {
    pub by_view: AtomicU64,
    pub by_actor: AtomicU64,
}

/// Asks the actor for a view of its branch (published now unless one is held), so that a page
/// is read on the asking thread rather than on the actor's.
#[derive(Debug, Message)]
#[rtype(result = "Arc<ReadView>")]
pub struct PublishView;

impl Handler<PublishView> for GridActor {
    type Result = actix::MessageResult<PublishView>;

    fn handle(&mut self, _: PublishView, _: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.reads.publish(&mut self.state, &mut self.query))
    }
}

/// Whether a read is a plain page (no filter, sort or cursor): cheap enough to read on the
/// request's own thread; other reads run on the read pool.
pub fn plain(msg: &ReadRecords) -> bool {
    msg.filters.is_empty() && msg.sort.is_empty() && msg.cursor.is_none()
}

/// A page read from a published view: `None` when the read needs the actor (an index the
/// view's snapshot lacks, an unknown view); an error for what the actor would refuse the same
/// way.
pub fn read_from_view(view: &ReadView, msg: &ReadRecords) -> Option<GridResult<RecordPage>> {
    let def = view.state.schema.view(&msg.view_id)?;
    let mut query = view.query.clone();
    read_page(&view.state, def, &mut query, msg).transpose()
}

/// Answers `msg` from `state` with `query`, an engine in step with it (the actor's after
/// `sync`, or a view's snapshot): `None` when a snapshot lacked an index.
pub(super) fn read_page(
    state: &GridState,
    view: &ViewDef,
    query: &mut QueryEngine,
    msg: &ReadRecords,
) -> GridResult<Option<RecordPage>> {
    let columns = picked_columns(&state.schema, view, msg.column_ids.as_deref())?;
    let filters = bind_filters(state, view, &msg.filters)?;
    let sort = bind_sort(state, view, &msg.sort)?;
    let store = &state.store;
    let (page, more) = match &msg.cursor {
        None => (query.query(store, &filters, &sort, msg.offset, msg.limit), false),
        Some((direction, id)) => {
            let row = cursor_row(store, id)?;
            let wanted = msg.limit.saturating_add(1);
            let mut page = query.query_from(store, &filters, &sort, row, *direction, wanted);
            let more = page.rows.len() > msg.limit;
            if more && *direction == Direction::Before {
                page.rows.remove(0);
            }
            page.rows.truncate(msg.limit);
            (page, more)
        }
    };
    if query.missed() {
        return Ok(None);
    }
    let ends = page.rows.first().zip(page.rows.last());
    let ends = ends.map(|(first, last)| (store.id(*first).to_owned(), store.id(*last).to_owned()));
    let (records, rendered) = if msg.rendered && renders_alone(&columns) {
        (Vec::new(), Some(state.render_rows(&columns, page.rows.into_iter())))
    } else {
        (state.read_rows(&columns, page.rows.into_iter()), None)
    };
    Ok(Some(RecordPage { records, rendered, ends, total: page.total, more }))
}

/// What an export or a count reads: the rows of a view a listing's query matches, in its
/// order, and the columns asked for (`columnIds`, else the view's).
#[derive(Debug)]
pub struct ExportQuery {
    pub view_id: String,
    pub column_ids: Option<Vec<String>>,
    pub filters: Vec<RawFilter>,
    pub sort: Vec<RawSort>,
}

/// The rows of an export: the view they are read from (one instant of the branch, however
/// long the file takes to send), the columns, and every matching row in order.
pub struct ExportSource {
    pub view: Arc<ReadView>,
    pub columns: Vec<ColumnDef>,
    pub rows: Vec<RowId>,
}

impl std::fmt::Debug for ExportSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportSource").field("rows", &self.rows.len()).finish_non_exhaustive()
    }
}

/// Every row of `view` that `query` matches, in order (blocking: run it on the read pool).
/// The view's snapshot of the indexes answers; when it lacks one, a fresh engine over a copy
/// of the view builds its own: an export is one query, not worth an index the actor would
/// build on its thread and keep up to date.
pub fn export_rows(view: Arc<ReadView>, query: &ExportQuery) -> GridResult<ExportSource> {
    let state = &view.state;
    let def = state.schema.view(&query.view_id);
    let def = def.ok_or_else(|| GridError::ViewNotFound(query.view_id.clone()))?;
    let columns: Vec<ColumnDef> = picked_columns(&state.schema, def, query.column_ids.as_deref())?
        .into_iter()
        .cloned()
        .collect();
    let filters = bind_filters(state, def, &query.filters)?;
    let sort = bind_sort(state, def, &query.sort)?;
    let mut engine = view.query.clone();
    let mut rows = engine.query(&state.store, &filters, &sort, 0, usize::MAX).rows;
    if engine.missed() {
        let mut copy = state.clone();
        rows = QueryEngine::default().run(&mut copy.store, &filters, &sort, 0, usize::MAX).rows;
    }
    Ok(ExportSource { view, columns, rows })
}

/// A page of records in insertion order, with the view's (or the listed) columns.
#[derive(Debug, Message)]
#[rtype(result = "GridResult<RecordPage>")]
pub struct ReadRecords {
    pub view_id: String,
    pub offset: usize,
    pub limit: usize,
    pub column_ids: Option<Vec<String>>,
    /// Conditions of the `query` parameter, ANDed.
    pub filters: Vec<RawFilter>,
    /// Keys of the `sort` parameter, in order.
    pub sort: Vec<RawSort>,
    /// `afterRecordId` / `beforeRecordId`: the page starts right after (ends right before) this
    /// record in the listing's order; `offset` is then 0.
    pub cursor: Option<(Direction, String)>,
    /// The page wanted as JSON (`RecordPage::rendered`) rather than as records, when the
    /// columns allow it (`renders_alone`).
    pub rendered: bool,
}

impl Handler<ReadRecords> for GridActor {
    type Result = GridResult<RecordPage>;

    fn handle(&mut self, msg: ReadRecords, _: &mut Context<Self>) -> Self::Result {
        let view = self.view(&msg.view_id)?;
        self.query.sync(&mut self.state.store);
        let page = read_page(&self.state, &view, &mut self.query, &msg);
        self.query.resume_tracking(&mut self.state.store);
        // The next reads come from a view of this state, with any index this read built, until
        // the branch changes.
        let _replaced = self.reads.republish(&mut self.state, &mut self.query);
        // The actor is asked only for a read needing an index no view holds, and building it
        // (sort keys, row sets) freed as much as it kept: give that back to the OS now, not at
        // mimalloc's delayed purge (a busy actor's thread reached it seconds later, an idle one
        // never). 0.1-3 ms after builds of 25-545 ms at 1M records; resident memory after the
        // scale example's queries 671-689 MiB instead of 717-742.
        alloc_release::release_freed();
        page?.ok_or(GridError::Internal("the branch's own query engine lacked an index"))
    }
}

/// One record as the view shows it, with its version (`preconditions::record_version`, its
/// `ETag`). `at_path` (`?path=`) picks the record in a grid identified by path and id; in other
/// grids the record must be at that path.
#[derive(Debug, Message)]
#[rtype(result = "GridResult<(WrittenRecords, u32)>")]
pub struct ReadRecord {
    pub view_id: String,
    pub record_id: String,
    pub at_path: Option<String>,
}

impl Handler<ReadRecord> for GridActor {
    type Result = GridResult<(WrittenRecords, u32)>;

    fn handle(&mut self, msg: ReadRecord, _: &mut Context<Self>) -> Self::Result {
        let view = self.view(&msg.view_id)?;
        let store = &self.state.store;
        let path = msg.at_path.as_deref().unwrap_or_default();
        let row = store
            .find(path, &msg.record_id)
            .filter(|&row| msg.at_path.is_none() || store.path(row) == path)
            .ok_or_else(|| GridError::nonexistent(&msg.record_id))?;
        let columns: Vec<&ColumnDef> =
            self.state.schema.view_columns(&view).into_iter().map(|(c, _)| c).collect();
        let record = WrittenRecords::of(&self.state, &columns, vec![row]);
        Ok((record, record_version(&self.state, row)))
    }
}

/// The row of a cursor record (404 nonexistentRecordId for an unknown one). In a grid whose
/// records are identified by path and id, the first record with that id.
fn cursor_row(store: &ColumnStore, id: &str) -> GridResult<RowId> {
    let found = store.find("", id).or_else(|| match store.identity() {
        RecordIdentity::PathAndId => {
            (store.scan_ids(|x| x == id) & store.live()).min().map(RowId::from_raw)
        }
        RecordIdentity::RecordId => None,
    });
    found.ok_or_else(|| GridError::nonexistent(id))
}

/// The columns a read shows: the view's, or those of `ids` in that order, each once (each must
/// be in the view: 404 `columnNotFoundInView`; the predefined columns are always shown).
pub(super) fn picked_columns<'a>(
    schema: &'a Schema,
    view: &'a ViewDef,
    ids: Option<&[String]>,
) -> GridResult<Vec<&'a ColumnDef>> {
    let shown = schema.view_columns(view);
    let Some(ids) = ids else { return Ok(shown.into_iter().map(|(c, _)| c).collect()) };
    let ids = distinct_column_ids(ids, shown.len())?;
    let by_id: HashMap<&str, &ColumnDef> = shown.iter().map(|(c, _)| (c.id.as_str(), *c)).collect();
    ids.into_iter()
        .filter(|id| !PREDEFINED_COLUMNS.contains(id))
        .map(|id| by_id.get(id).copied().ok_or_else(|| GridError::not_in_view(id, &view.id)))
        .collect()
}
