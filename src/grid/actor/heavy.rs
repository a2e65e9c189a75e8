//! Heavy writes: schema changes, imports, merges and restores, whose planning and applying can
//! take seconds on a large branch. They run on a blocking thread against a copy of the branch
//! (`GridState` clones share their storage chunks), so the grid actor's thread, which other
//! branches share, only does the bounded parts: taking the copy, appending the WAL record and
//! swapping the new state in.
//!
//! While a heavy write runs, reads of the branch are answered from the state before it, and
//! every later write of the branch is held back (`hold`) and run in arrival order once the heavy
//! write is installed or refused, so a write is never planned against a state the heavy write
//! is about to replace. Held writes are capped (`MAX_HELD`): past that a write is refused with
//! 503 rather than queued without bound.
//!
//! A heavy write's job takes memory in proportion to its branch (a column type change over 1M
//! records peaks about 260 MiB above the branch), so the branches of one company take turns:
//! at most `--heavy-writes-per-company` jobs of a company run at once (`HeavyTurns`), the rest
//! wait for a turn before their copy is worked on. One tenant's many large grids then cannot
//! take the server's memory and cores from the others, and another company's heavy write never
//! waits behind them.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use actix::{ActorFutureExt, AsyncContext, Context, ResponseFuture, WrapFuture};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use super::GridActor;
use crate::grid::error::{GridError, GridResult};
use crate::grid::ops::{GridOp, GridState};
use crate::ids::CompanyId;
use crate::persist::entry::WalEntry;
use crate::persist::wal::Durable;

/// Most writes one branch holds back while a heavy write runs.
pub const MAX_HELD: usize = 4096;

/// The heavy-write turns of every company (`--heavy-writes-per-company` each), handed to each
/// branch's actor when it starts.
#[derive(Debug)]
pub struct HeavyTurns {
    per_company: usize,
    companies: Mutex<HashMap<CompanyId, Arc<CompanyTurns>>>,
}

/// One company's heavy-write turns, shared by the actors of all its branches.
#[derive(Debug)]
pub struct CompanyTurns {
    permits: Arc<Semaphore>,
    running: AtomicUsize,
    waiting: AtomicUsize,
}

/// A company's heavy writes: how many run and how many wait for a turn (`GET /metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnCounts {
    pub running: usize,
    pub waiting: usize,
}

impl HeavyTurns {
    /// Turns for `per_company` heavy writes at once in each company (at least one).
    pub fn new(per_company: usize) -> HeavyTurns {
        HeavyTurns { per_company: per_company.max(1), companies: Mutex::default() }
    }

    /// Company `id`'s turns, made on first use. Companies are few and made by admins, so the
    /// map holds one small entry per company that ever had a branch.
    pub fn company(&self, id: CompanyId) -> Arc<CompanyTurns> {
        let mut companies = self.companies.lock().unwrap_or_else(|e| e.into_inner());
        companies
            .entry(id)
            .or_insert_with(|| {
                Arc::new(CompanyTurns {
                    permits: Arc::new(Semaphore::new(self.per_company)),
                    running: AtomicUsize::new(0),
                    waiting: AtomicUsize::new(0),
                })
            })
            .clone()
    }

    /// Each company's running and waiting heavy writes, for those that ever had one.
    pub fn counts(&self) -> Vec<(CompanyId, TurnCounts)> {
        let companies = self.companies.lock().unwrap_or_else(|e| e.into_inner());
        let mut counts: Vec<(CompanyId, TurnCounts)> =
            companies.iter().map(|(id, turns)| (*id, turns.counts())).collect();
        counts.sort_unstable_by_key(|(id, _)| *id);
        counts
    }
}

impl Default for HeavyTurns {
    /// Two heavy writes at once per company: the default of `--heavy-writes-per-company`.
    fn default() -> HeavyTurns {
        HeavyTurns::new(2)
    }
}

impl CompanyTurns {
    pub fn counts(&self) -> TurnCounts {
        TurnCounts {
            running: self.running.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
        }
    }

    /// Waits for one of the company's turns; the turn ends when the answer is dropped. Counted
    /// as waiting meanwhile, also when the wait is given up (the branch's actor stopped).
    async fn turn(self: Arc<Self>) -> GridResult<Turn> {
        let waiting = Counted::new(&self, |t| &t.waiting);
        let permit = self.permits.clone().acquire_owned().await.map_err(|_| GridError::Closed)?;
        drop(waiting);
        let running = Counted::new(&self, |t| &t.running);
        Ok(Turn { _permit: permit, _running: running })
    }
}

/// A heavy write's turn: its permit, and its place in the running count.
struct Turn {
    _permit: OwnedSemaphorePermit,
    _running: Counted,
}

/// One in a company's count (`running` or `waiting`) while held.
struct Counted {
    turns: Arc<CompanyTurns>,
    count: fn(&CompanyTurns) -> &AtomicUsize,
}

impl Counted {
    fn new(turns: &Arc<CompanyTurns>, count: fn(&CompanyTurns) -> &AtomicUsize) -> Counted {
        count(turns).fetch_add(1, Ordering::Relaxed);
        Counted { turns: turns.clone(), count }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        (self.count)(&self.turns).fetch_sub(1, Ordering::Relaxed);
    }
}

/// A write held back until the running heavy write is done.
pub(super) type HeldWrite = Box<dyn FnOnce(&mut GridActor, &mut Context<GridActor>)>;

/// Writes waiting for the branch's heavy write, oldest first.
#[derive(Default)]
pub(super) struct Gate {
    /// Whether a heavy write is running.
    pub(super) busy: bool,
    pub(super) held: VecDeque<HeldWrite>,
}

/// A copy of the branch that a heavy write changes: only through `apply`, so the ops it
/// records are exactly the ones the copy went through, and replaying them rebuilds it.
pub struct Staged {
    state: GridState,
    ops: Vec<GridOp>,
}

impl Staged {
    /// The copy as the ops applied so far left it.
    pub fn state(&self) -> &GridState {
        &self.state
    }

    /// Applies `ops` to the copy and records them for the WAL.
    pub fn apply(&mut self, ops: Vec<GridOp>) {
        for op in &ops {
            self.state.apply(op);
        }
        self.ops.extend(ops);
    }
}

/// A finished heavy write: the new state, its WAL record (none when it changed nothing) and
/// the reply.
struct Finished<T> {
    state: GridState,
    payload: Option<Vec<u8>>,
    reply: T,
}

impl GridActor {
    /// Runs `job` against a copy of the branch on a blocking thread, once the company has a
    /// turn for it (`HeavyTurns`), then logs its ops and installs the copy; the returned future
    /// resolves once the write is durable. Writes that arrive meanwhile wait (`hold`).
    pub(super) fn run_heavy<T, J>(
        &mut self,
        ctx: &mut Context<Self>,
        job: J,
    ) -> ResponseFuture<GridResult<T>>
    where
        T: Send + 'static,
        J: FnOnce(&mut Staged) -> GridResult<T> + Send + 'static,
    {
        self.gate.busy = true;
        // The copy starts with an empty change journal, so after the swap the query indexes
        // catch up with exactly what the heavy write changed.
        self.query.sync(&mut self.state.store);
        let staged = Staged { state: self.state.clone(), ops: Vec::new() };
        let branch_id = self.branch_id.clone();
        let turns = self.turns.clone();
        let work = async move {
            let _turn = turns.turn().await?;
            tokio::task::spawn_blocking(move || {
                let mut staged = staged;
                let reply = job(&mut staged)?;
                let Staged { state, ops } = staged;
                let payload = (!ops.is_empty()).then(|| WalEntry::now(branch_id, ops).encode());
                Ok(Finished { state, payload, reply })
            })
            .await
            .unwrap_or_else(|source| Err(GridError::TaskStopped { what: "a heavy write", source }))
        };
        let (done, answer) = oneshot::channel();
        ctx.spawn(work.into_actor(self).map(move |finished: GridResult<Finished<T>>, act, ctx| {
            let installed = finished.and_then(|f| Ok((act.install(f.state, f.payload)?, f.reply)));
            act.gate.busy = false;
            let _ = done.send(act.reply_when_durable(ctx, installed));
            act.release_held(ctx);
        }));
        Box::pin(async move { answer.await.map_err(|_| GridError::Closed)?.await })
    }

    /// Logs a heavy write's record and swaps its state in. The old state is dropped on a
    /// blocking thread: freeing a large branch's chunks is not bounded work.
    fn install(
        &mut self,
        state: GridState,
        payload: Option<Vec<u8>>,
    ) -> GridResult<Option<Durable>> {
        let Some(payload) = payload else { return Ok(None) };
        // A heavy write (an import, a schema change over every record) counts by its bytes.
        let durable = self.log(payload, 1)?;
        let mut state = state;
        if state.store.is_tracking() != self.state.store.is_tracking() {
            // A read built the first index while the write ran: the copy did not journal its
            // changes for it, so the indexes are rebuilt on next use.
            self.query.clear();
            state.store.set_tracking(false);
        }
        let withdrawn = self.reads.withdraw();
        let old = std::mem::replace(&mut self.state, state);
        tokio::task::spawn_blocking(move || drop((old, withdrawn)));
        Ok(Some(durable))
    }

    /// Runs the held writes in order until one of them starts another heavy write.
    fn release_held(&mut self, ctx: &mut Context<Self>) {
        while !self.gate.busy {
            let Some(next) = self.gate.held.pop_front() else { break };
            next(self, ctx);
        }
    }

    /// Runs `check` (which may ask other actors: it runs on this actor's context, so this
    /// actor answers messages meanwhile) while the branch holds its other writes back, then
    /// `then` with what the check gave: nothing of the branch changes between the two. A
    /// failed check is the answer.
    pub(super) fn after_check<C: 'static, T: 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        check: impl Future<Output = GridResult<C>> + 'static,
        then: impl FnOnce(&mut GridActor, &mut Context<GridActor>, C) -> ResponseFuture<GridResult<T>>
            + 'static,
    ) -> ResponseFuture<GridResult<T>> {
        self.gate.busy = true;
        let (done, answer) = oneshot::channel();
        ctx.spawn(check.into_actor(self).map(move |checked, act, ctx| {
            act.gate.busy = false;
            let reply = match checked {
                Ok(checked) => then(act, ctx, checked),
                Err(err) => Box::pin(async move { Err(err) }),
            };
            let _ = done.send(reply);
            act.release_held(ctx);
        }));
        Box::pin(async move { answer.await.map_err(|_| GridError::Closed)?.await })
    }

    /// `run` now, or once the running heavy write is done (503 past `MAX_HELD` waiting).
    pub(super) fn hold<T: 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        run: impl FnOnce(&mut GridActor, &mut Context<GridActor>) -> ResponseFuture<GridResult<T>>
            + 'static,
    ) -> ResponseFuture<GridResult<T>> {
        if !self.gate.busy {
            return run(self, ctx);
        }
        if self.gate.held.len() >= MAX_HELD {
            return Box::pin(async { Err(GridError::TooManyHeld) });
        }
        let (done, answer) = oneshot::channel();
        self.gate.held.push_back(Box::new(move |act, ctx| {
            let _ = done.send(run(act, ctx));
        }));
        Box::pin(async move { answer.await.map_err(|_| GridError::Closed)?.await })
    }
}
