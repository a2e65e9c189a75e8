//! Whole-branch messages: a copy (a new branch, or a merge's source), a merge into this branch
//! and a restore from a backup; the last two as heavy writes.

use actix::{Context, Handler, Message, MessageResult, ResponseFuture};

use super::GridActor;
use crate::grid::error::GridResult;
use crate::grid::merge::{merge_base, plan_merge, plan_restore, MergeCounts, MergeScope};
use crate::grid::ops::GridState;

/// A copy of the branch (its storage chunks are shared until either side changes them) and
/// the WAL position it covers: the start of a new branch, or the source side of a merge.
#[derive(Debug, Message)]
#[rtype(result = "BranchCopy")]
pub struct CopyBranch {
    /// The id of the new branch the copy starts: this branch is pinned for it in the same
    /// step, so no snapshot of it can pass the copy's position before the new branch has its
    /// own (`Durability::pin`).
    pub pin_for: Option<String>,
}

/// The answer to `CopyBranch`.
pub struct BranchCopy {
    pub state: GridState,
    /// The WAL's last position when the copy was taken: the copy holds every record of this
    /// branch up to it (and none after).
    pub wal_lsn: u64,
}

impl std::fmt::Debug for BranchCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BranchCopy").field("wal_lsn", &self.wal_lsn).finish_non_exhaustive()
    }
}

impl Handler<CopyBranch> for GridActor {
    type Result = MessageResult<CopyBranch>;

    fn handle(&mut self, msg: CopyBranch, _: &mut Context<Self>) -> Self::Result {
        if let Some(branch) = &msg.pin_for {
            self.durability.pin(&self.branch_id, branch);
        }
        MessageResult(BranchCopy {
            state: self.state.clone(),
            wal_lsn: self.durability.wal.last_lsn(),
        })
    }
}

/// Merges a copy of another branch into this one (see `grid::merge`), as one WAL entry.
#[derive(Message)]
#[rtype(result = "GridResult<MergeCounts>")]
pub struct ApplyMerge {
    pub source_branch_id: String,
    pub source: GridState,
    /// The clock where the two branches' lineages parted, used when they never merged.
    pub fork_clock: u32,
    pub scope: MergeScope,
    pub user: String,
}

impl Handler<ApplyMerge> for GridActor {
    type Result = ResponseFuture<GridResult<MergeCounts>>;

    fn handle(&mut self, msg: ApplyMerge, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            let branch_id = act.branch_id.clone();
            act.run_heavy(ctx, move |staged| {
                let base = merge_base(
                    &msg.source_branch_id,
                    &msg.source,
                    &branch_id,
                    staged.state(),
                    msg.fork_clock,
                );
                let now = chrono::Utc::now().timestamp_millis();
                let (ops, counts) = plan_merge(
                    &msg.source_branch_id,
                    &msg.source,
                    staged.state(),
                    base,
                    &msg.scope,
                    (&msg.user, now),
                );
                staged.apply(ops);
                Ok(counts)
            })
        })
    }
}

/// Puts the branch's records back as a backup holds them (see `grid::merge::plan_restore`),
/// as one WAL entry; answers how many ops it took.
#[derive(Message)]
#[rtype(result = "GridResult<usize>")]
pub struct RestoreRecords {
    pub backup: GridState,
    pub user: String,
}

impl Handler<RestoreRecords> for GridActor {
    type Result = ResponseFuture<GridResult<usize>>;

    fn handle(&mut self, msg: RestoreRecords, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            act.run_heavy(ctx, move |staged| {
                let now = chrono::Utc::now().timestamp_millis();
                let ops = plan_restore(&msg.backup, staged.state(), (&msg.user, now));
                let count = ops.len();
                staged.apply(ops);
                Ok(count)
            })
        })
    }
}
