//! `GridActor`: the one owner of a grid branch's state. Every read and write of the branch's
//! schema, views and records is a message to it; nothing else touches its data.
//!
//! Handlers send messages and render replies on their own threads; the actor validates,
//! applies ops and answers with plain data.

use actix::{Actor, Context, Handler, Message};

use super::ops::{GridOp, GridState};
use super::planner::{plan, SchemaChange};
use super::schema::Schema;
use crate::error::ApiResult;

/// The actor of one branch (the master branch has the grid's id).
pub struct GridActor {
    grid_id: String,
    branch_id: String,
    state: GridState,
}

impl GridActor {
    /// The actor of a branch whose state was created or recovered by the caller.
    pub fn with_state(grid_id: &str, branch_id: &str, state: GridState) -> Self {
        GridActor {
            grid_id: grid_id.to_owned(),
            branch_id: branch_id.to_owned(),
            state,
        }
    }

    fn apply_all(&mut self, ops: &[GridOp]) {
        for op in ops {
            self.state.apply(op);
        }
    }
}

impl Actor for GridActor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(grid = %self.grid_id, branch = %self.branch_id, "grid actor started");
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(grid = %self.grid_id, branch = %self.branch_id, "grid actor stopped");
    }
}

/// A copy of the branch's schema (columns, dependencies, views).
#[derive(Debug, Message)]
#[rtype(result = "Schema")]
pub struct ReadSchema;

impl Handler<ReadSchema> for GridActor {
    type Result = actix::MessageResult<ReadSchema>;

    fn handle(&mut self, _: ReadSchema, _: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.state.schema.clone())
    }
}

/// A schema change made through a view (or a new view).
#[derive(Debug, Message)]
#[rtype(result = "ApiResult<SchemaChanged>")]
pub struct ChangeSchema {
    pub view_id: String,
    pub change: SchemaChange,
}

/// The schema after an accepted change and the id of the thing changed.
#[derive(Debug)]
pub struct SchemaChanged {
    pub schema: Schema,
    pub subject: String,
}

impl Handler<ChangeSchema> for GridActor {
    type Result = ApiResult<SchemaChanged>;

    fn handle(&mut self, msg: ChangeSchema, _: &mut Context<Self>) -> Self::Result {
        let planned = plan(&self.state.schema, &msg.view_id, msg.change)?;
        self.apply_all(&planned.ops);
        Ok(SchemaChanged {
            schema: self.state.schema.clone(),
            subject: planned.subject,
        })
    }
}

/// Stops the actor (its grid or branch was deleted).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for GridActor {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) {
        use actix::ActorContext;
        ctx.stop();
    }
}
