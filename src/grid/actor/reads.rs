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
//! What reads from a view (`read_from_view`): a page with no filter, sort or cursor, rendered
//! whole from the columns (`renders_alone`); when no view is held, the handler asks the actor
//! for one (`PublishView`, a clone) and renders the page itself. Everything else still asks the
//! actor, whose query indexes it needs.

use std::sync::{Arc, RwLock};

use actix::{Context, Handler, Message};

use super::{picked_columns, GridActor, ReadRecords};
use crate::error::ApiResult;
use crate::grid::ops::GridState;
use crate::grid::read::RecordPage;
use crate::grid::read_json::renders_alone;
use crate::grid::store::RowId;

/// The published view of one branch, if any. See the module doc.
#[derive(Default)]
pub struct ReadViews {
    view: RwLock<Option<Arc<GridState>>>,
}

impl std::fmt::Debug for ReadViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadViews").field("published", &self.current().is_some()).finish()
    }
}

impl ReadViews {
    /// The view readers may use now, if one is published.
    pub fn current(&self) -> Option<Arc<GridState>> {
        self.view.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Publishes a copy of `state` unless a view is already held; the view held after.
    pub(super) fn publish(&self, state: &GridState) -> Arc<GridState> {
        let mut slot = self.view.write().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert_with(|| Arc::new(state.clone())).clone()
    }

    /// Withdraws the view before the branch changes; returns it so that the caller drops it
    /// (outside the lock).
    pub(super) fn withdraw(&self) -> Option<Arc<GridState>> {
        self.view.write().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Asks the actor for a view of its branch (published now unless one is held), so that a page
/// is rendered on the asking thread rather than on the actor's.
#[derive(Debug, Message)]
#[rtype(result = "Arc<GridState>")]
pub struct PublishView;

impl Handler<PublishView> for GridActor {
    type Result = actix::MessageResult<PublishView>;

    fn handle(&mut self, _: PublishView, _: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.reads.publish(&self.state))
    }
}

/// Whether `read_from_view` may answer `msg` (it still refuses columns that do not render
/// alone, or an unknown view).
pub fn plain(msg: &ReadRecords) -> bool {
    msg.filters.is_empty() && msg.sort.is_empty() && msg.cursor.is_none() && msg.rendered
}

/// A page read from a published view: `None` when the read needs the actor (a filter, a sort, a
/// cursor, records rather than rendered JSON, columns that do not render alone, an unknown
/// view); an error only for what the actor would refuse the same way (unknown `columnIds`).
pub fn read_from_view(state: &GridState, msg: &ReadRecords) -> Option<ApiResult<RecordPage>> {
    if !plain(msg) {
        return None;
    }
    let view = state.schema.view(&msg.view_id)?;
    let columns = match picked_columns(&state.schema, view, msg.column_ids.as_deref()) {
        Ok(columns) => columns,
        Err(err) => return Some(Err(err)),
    };
    if !renders_alone(&columns) {
        return None;
    }
    let store = &state.store;
    let rows: Vec<RowId> = store.page(msg.offset, msg.limit).collect();
    let ends = rows.first().zip(rows.last());
    let ends = ends.map(|(first, last)| (store.id(*first).to_owned(), store.id(*last).to_owned()));
    let rendered = state.render_rows(&columns, rows.into_iter());
    Some(Ok(RecordPage {
        records: Vec::new(),
        rendered: Some(rendered),
        ends,
        total: store.len(),
        more: false,
    }))
}
