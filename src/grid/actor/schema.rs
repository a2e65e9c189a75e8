//! Reading and changing a branch's schema (columns, dependencies, views) through the actor.

use actix::{Context, Handler, Message, ResponseFuture};

use super::GridActor;
use crate::grid::error::GridResult;
use crate::grid::planner::{plan, SchemaChange};
use crate::grid::schema::Schema;

/// A copy of the branch's schema (columns, dependencies, views).
#[derive(Debug, Message)]
#[rtype(result = "Schema")]
pub struct ReadSchema;

impl Handler<ReadSchema> for GridActor {
    type Result = actix::MessageResult<ReadSchema>;

    fn handle(&mut self, _: ReadSchema, _: &mut Context<Self>) -> Self::Result {
        // The next schema and page reads come from a view until the branch changes.
        let _ = self.reads.publish(&mut self.state, &mut self.query);
        actix::MessageResult(self.state.schema.clone())
    }
}

/// A schema change made through a view (or a new view).
#[derive(Debug, Message)]
#[rtype(result = "GridResult<SchemaChanged>")]
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
    type Result = ResponseFuture<GridResult<SchemaChanged>>;

    fn handle(&mut self, msg: ChangeSchema, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            // A new formula column or a type change touches every record: off this thread.
            act.run_heavy(ctx, move |staged| {
                let planned = plan(&staged.state().schema, &msg.view_id, msg.change)?;
                staged.apply(planned.ops);
                Ok(SchemaChanged {
                    schema: staged.state().schema.clone(),
                    subject: planned.subject,
                })
            })
        })
    }
}
