//! Folder changes (`grid::paths`): planned on a staged copy off the actor's thread (a move
//! rewrites every record under the folders it moves) and committed as one WAL entry.

use actix::{Context, Handler, Message, ResponseFuture};

use super::GridActor;
use crate::grid::error::{GridError, GridResult};
use crate::grid::paths::{plan, PathChange};

/// A change of the folder tree through a view; answers the folders it made or moved.
#[derive(Debug, Message)]
#[rtype(result = "GridResult<Vec<String>>")]
pub struct ChangePaths {
    pub view_id: String,
    pub user: String,
    pub change: PathChange,
}

impl Handler<ChangePaths> for GridActor {
    type Result = ResponseFuture<GridResult<Vec<String>>>;

    fn handle(&mut self, msg: ChangePaths, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            act.run_heavy(ctx, move |staged| {
                let state = staged.state();
                if state.schema.view(&msg.view_id).is_none() {
                    return Err(GridError::ViewNotFound(msg.view_id));
                }
                let now = chrono::Utc::now().timestamp_millis();
                let planned = plan(state, msg.change, (&msg.user, now))?;
                staged.apply(planned.ops);
                Ok(planned.paths)
            })
        })
    }
}
