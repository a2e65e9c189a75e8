//! A cluster node's grids (`--cluster`, docs/CLUSTER.md): which grids this node runs, and how
//! it comes to run them.
//!
//! A node runs the actors of exactly the grids whose lease it holds (`cluster::owned`), each
//! branch with a publisher to its fenced log (`cluster::publisher`):
//! - a grid created here: its lease is taken before the catalogue records it (a fresh id, so
//!   nobody holds it) and its master fenced before its first entry;
//! - a branch created here (a copy, a restore): fenced, and its first image stored in the
//!   object store before the branch is acknowledged (its log starts after that copy);
//! - a grid taken over (`owner_loop`): the node placement ranks first among the live ones takes
//!   a free lease, fences each branch, loads its image and replays its log after it.
//!
//! The owner loop runs on the cluster's runtime every third of the lease TTL: it renews the
//! leases, drops a grid whose lease was lost, whose renewal is overdue (self-fencing), or whose
//! publisher failed (its actors stop; the log tells the next owner what was stored), and takes
//! over free grids.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use actix::Addr;
use bytes::BytesMut;

use super::error::CatalogResult;
use super::grids::identity;
use super::supervisor::{Exec, Supervisor};
use crate::cluster::branch_log::EntryKind;
use crate::cluster::lease::Lease;
use crate::cluster::node::ClusterNode;
use crate::cluster::placement;
use crate::cluster::publisher::{unframe, BranchPublisher, PublisherParts};
use crate::cluster::ClusterError;
use crate::grid::image::PartLimits;
use crate::grid::ops::GridState;
use crate::grid::store::RecordIdentity;
use crate::persist::entry::WalEntry;

/// What a takeover needs to know of one branch.
#[derive(Debug, Clone)]
pub struct BranchToLoad {
    pub branch_id: String,
    pub default_view_id: String,
    pub identity: RecordIdentity,
    /// A copy of another branch: it cannot start empty (its log starts after an image).
    pub copied: bool,
}

/// A grid and its branches, as the catalogue holds them.
#[derive(Debug, Clone)]
pub struct GridToLoad {
    pub grid_id: String,
    pub branches: Vec<BranchToLoad>,
}

/// A branch loaded by a takeover, ready for its actor.
pub struct LoadedBranch {
    pub branch_id: String,
    pub state: GridState,
    pub publisher: BranchPublisher,
}

/// Grids a node tries to take per round at most (each costs a lease create).
const TAKES_PER_ROUND: usize = 32;

impl Supervisor {
    /// In a cluster: takes a new grid's lease (nobody holds a fresh id's).
    pub(super) fn claim_new_grid(&self, grid_id: &str) -> CatalogResult<()> {
        let Some(cluster) = &self.cluster else { return Ok(()) };
        let (node, id) = (cluster.clone(), grid_id.to_owned());
        let lease = cluster.run(async move { node.leases.acquire(&id).await })??;
        let lease = lease.ok_or_else(|| {
            ClusterError::Unavailable(format!("the lease of new grid {grid_id} is held"))
        })?;
        cluster.owned.insert(grid_id, lease);
        Ok(())
    }

    /// In a cluster: fences a branch of a grid this node owns and starts its publisher.
    pub(super) fn branch_publisher(
        &self,
        grid_id: &str,
        branch_id: &str,
    ) -> CatalogResult<Option<BranchPublisher>> {
        let Some(cluster) = &self.cluster else { return Ok(None) };
        let lease = cluster
            .owned
            .lease(grid_id)
            .ok_or_else(|| ClusterError::LeaseLost { branch: grid_id.to_owned() })?;
        let (node, grid, branch) = (cluster.clone(), grid_id.to_owned(), branch_id.to_owned());
        let publisher =
            cluster.run(async move { start_publisher(&node, &grid, &branch, &lease).await })??;
        cluster.owned.add_publisher(grid_id, publisher.clone());
        Ok(Some(publisher))
    }

    /// In a cluster: queues a new branch's first image (its log starts after it) on its
    /// publisher; the answer tells when it is stored.
    fn queue_first_image(publisher: &BranchPublisher, state: &GridState) -> FirstImage {
        let image = state.clone();
        publisher.store_image(Box::new(move || image.encode_image(PartLimits::DEFAULT)))
    }

    /// In a cluster: a deleted grid or branch is no longer this node's; its lease is released
    /// (a grid) and its log and image removed, in the background, by its owner (every node
    /// forgets a deleted grid; only the owner cleans up after it).
    pub(super) fn forget_in_cluster(&self, grid_id: &str, branch_ids: &[String], whole: bool) {
        let Some(cluster) = &self.cluster else { return };
        if !cluster.owned.owns(grid_id) {
            return;
        }
        let lease = if whole {
            cluster.owned.remove(grid_id).map(|owned| owned.lease)
        } else {
            branch_ids.iter().for_each(|b| cluster.owned.remove_publisher(grid_id, b));
            None
        };
        let (node, branches) = (cluster.clone(), branch_ids.to_vec());
        cluster.spawn(async move {
            if let Some(lease) = lease {
                let _ = node.leases.release(lease).await;
            }
            for branch in branches {
                let purged = node.log.purge_all(&branch).await;
                let removed = node.images.remove(&branch).await;
                if let Err(err) = purged.and(removed) {
                    tracing::warn!(%branch, error = %err, "removing a deleted branch's log or image failed");
                }
            }
        });
    }

    /// Every grid of the catalogue with its branches (what a takeover would load).
    pub fn grids_to_load(&self) -> Vec<GridToLoad> {
        let mut by_grid: HashMap<&str, Vec<BranchToLoad>> = HashMap::new();
        for branch in self.branches.values() {
            let Some(grid) = self.grids.get(&branch.grid_id) else { continue };
            by_grid.entry(grid.id.as_str()).or_default().push(BranchToLoad {
                branch_id: branch.id.clone(),
                default_view_id: branch.default_access_view_id.clone(),
                identity: identity(grid.record_identifier_type),
                copied: branch.source_branch_id.is_some(),
            });
        }
        let mut grids: Vec<GridToLoad> = by_grid
            .into_iter()
            .map(|(id, branches)| GridToLoad { grid_id: id.to_owned(), branches })
            .collect();
        grids.sort_by(|a, b| a.grid_id.cmp(&b.grid_id));
        grids
    }

    /// Starts the actors of a grid this node just took over (the grid or a branch may have
    /// been deleted meanwhile: those are not started); false when the grid is gone.
    pub fn start_taken_grid(&mut self, grid_id: &str, loaded: Vec<LoadedBranch>) -> bool {
        let Some(grid) = self.grids.get(grid_id).cloned() else {
            tracing::info!(grid = grid_id, "a grid taken over was deleted meanwhile");
            return false;
        };
        for branch in loaded {
            let Some(record) = self.branches.get(&branch.branch_id).cloned() else { continue };
            self.durability.track(&record.id);
            let route = self.start_branch_forked(
                &grid,
                &record,
                branch.state,
                None,
                Some(branch.publisher),
            );
            tracing::debug!(branch = %route.branch_id, "branch taken over");
        }
        tracing::info!(grid = grid_id, "grid taken over");
        true
    }

    /// Stops the actors of a grid this node no longer owns (its catalogue entries stay).
    pub fn drop_owned_grid(&mut self, grid_id: &str) {
        for route in self.unroute_grid(grid_id) {
            route.addr.do_send(crate::grid::actor::Shutdown);
        }
    }

    /// Removes the routes of a grid's branches and views; their actors run on until told.
    pub fn unroute_grid(&mut self, grid_id: &str) -> Vec<Arc<super::routes::BranchRoute>> {
        let branch_ids: Vec<String> =
            self.branches.values().filter(|b| b.grid_id == grid_id).map(|b| b.id.clone()).collect();
        branch_ids.iter().filter_map(|id| self.routes.remove_branch(id)).collect()
    }
}

/// Fences `branch` with the grid's lease and starts its publisher.
async fn start_publisher(
    node: &Arc<ClusterNode>,
    grid: &str,
    branch: &str,
    lease: &Lease,
) -> Result<BranchPublisher, ClusterError> {
    let writer = node.log.fence(&branch_lease(lease, branch)).await?;
    Ok(publisher_for(node, grid, writer))
}

/// The grid lease as the lease of one of its branches' logs (the same epoch fences them all).
fn branch_lease(lease: &Lease, branch: &str) -> Lease {
    Lease { branch: branch.to_owned(), ..lease.clone() }
}

fn publisher_for(
    node: &Arc<ClusterNode>,
    grid: &str,
    writer: crate::cluster::branch_log::FencedWriter,
) -> BranchPublisher {
    let (weak, grid) = (Arc::downgrade(node), grid.to_owned());
    let on_failure: crate::cluster::publisher::OnFailure = Arc::new(move |_, _| {
        if let Some(node) = weak.upgrade() {
            node.owned.mark_failed(&grid);
        }
    });
    let parts =
        PublisherParts { log: node.log.clone(), writer, images: node.images.clone(), on_failure };
    BranchPublisher::start(&node.handle(), parts)
}

/// Starts the owner loops of this node (on the cluster's runtime): renewals, and takeovers,
/// apart so that a long takeover never delays a renewal.
pub fn start_owner_loop(supervisor: Addr<Supervisor>, node: &Arc<ClusterNode>) {
    node.spawn(renewal_loop(supervisor.clone(), Arc::downgrade(node)));
    node.spawn(takeover_loop(supervisor, Arc::downgrade(node)));
}

/// A tick every third of the lease TTL (None when the node is gone).
fn third_of_ttl(node: &Weak<ClusterNode>) -> Option<tokio::time::Interval> {
    let ttl = node.upgrade()?.leases.ttl();
    let mut tick = tokio::time::interval(ttl / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    Some(tick)
}

/// Waits for the next tick; the node while it lives and is not leaving.
async fn next_round(
    tick: &mut tokio::time::Interval,
    node: &Weak<ClusterNode>,
) -> Option<Arc<ClusterNode>> {
    tick.tick().await;
    node.upgrade().filter(|node| !node.is_leaving())
}

async fn renewal_loop(supervisor: Addr<Supervisor>, node: Weak<ClusterNode>) {
    let Some(mut tick) = third_of_ttl(&node) else { return };
    while let Some(node) = next_round(&mut tick, &node).await {
        renew_all(&supervisor, &node).await;
    }
}

async fn takeover_loop(supervisor: Addr<Supervisor>, node: Weak<ClusterNode>) {
    let Some(mut tick) = third_of_ttl(&node) else { return };
    let mut held_elsewhere = HashMap::new();
    let mut free_since = FreeGrids::default();
    let mut live_before: Vec<String> = Vec::new();
    while let Some(node) = next_round(&mut tick, &node).await {
        let live = match node.membership.live().await {
            Ok(live) => live.into_iter().map(|n| n.id).collect::<Vec<_>>(),
            Err(err) => {
                tracing::warn!(error = %err, "listing the live nodes failed");
                continue;
            }
        };
        node.set_live(live.clone());
        // Grids are handed over only to nodes live for two rounds in a row (a node that
        // flickers does not make grids move back and forth).
        let steady: Vec<String> =
            live.iter().filter(|n| live_before.contains(n)).cloned().collect();
        hand_over_misplaced(&supervisor, &node, &steady).await;
        let seen = (&mut held_elsewhere, &mut free_since);
        if let Err(err) = take_free(&supervisor, &node, &live, seen).await {
            tracing::warn!(error = %err, "looking for grids to take over failed");
        }
        live_before = live;
    }
}

/// Grids handed over per round at most (each stops its grid's writes for a moment).
const HANDOVERS_PER_ROUND: usize = 4;

/// Hands over the owned grids that placement now puts on another steady node (a node joined):
/// at most `HANDOVERS_PER_ROUND` a round.
async fn hand_over_misplaced(
    supervisor: &Addr<Supervisor>,
    node: &Arc<ClusterNode>,
    steady: &[String],
) {
    if !steady.iter().any(|n| n == node.id()) {
        return;
    }
    let misplaced: Vec<String> = node
        .owned
        .leases()
        .into_iter()
        .map(|lease| lease.branch)
        .filter(|grid| placement::owner(grid, steady).is_some_and(|n| n != node.id()))
        .take(HANDOVERS_PER_ROUND)
        .collect();
    for grid in misplaced {
        hand_over(supervisor, node, &grid).await;
    }
}

/// Gives a grid up cleanly: its routes go (new requests wait for the next owner), each branch
/// stores an image behind what it logged and stops, its publishers finish, and its lease is
/// released for the node placement prefers, which takes it at its next round.
async fn hand_over(supervisor: &Addr<Supervisor>, node: &Arc<ClusterNode>, grid: &str) {
    let id = grid.to_owned();
    let Ok(routes) = supervisor.send(Exec::new(move |s| s.unroute_grid(&id))).await else {
        return;
    };
    for route in routes {
        let _ = route.addr.send(crate::grid::actor::TakeSnapshot).await;
        route.addr.do_send(crate::grid::actor::Shutdown);
    }
    let drained: Vec<_> = node.owned.publishers_of(grid).iter().map(|p| p.drained()).collect();
    let _ = tokio::time::timeout(Duration::from_secs(60), futures_util::future::join_all(drained))
        .await;
    if let Some(owned) = node.owned.remove(grid) {
        let released = node.leases.release(owned.lease).await;
        tracing::info!(%grid, ok = released.is_ok(), "grid handed over");
    }
}

/// Renews every owned grid's lease; drops the grids whose lease is lost or overdue, and those
/// whose publisher failed (their leases released so another round, here or elsewhere, loads
/// them again from the log).
async fn renew_all(supervisor: &Addr<Supervisor>, node: &Arc<ClusterNode>) {
    for grid in node.owned.take_failed() {
        if let Some(owned) = drop_grid(supervisor, node, &grid).await {
            let _ = node.leases.release(owned.lease).await;
        }
    }
    for mut lease in node.owned.leases() {
        let grid = lease.branch.clone();
        if !lease.is_valid() {
            tracing::error!(%grid, "lease not renewed in time: the grid's actors stop");
            drop_grid(supervisor, node, &grid).await;
            continue;
        }
        match node.leases.renew(&mut lease).await {
            Ok(()) => node.owned.renewed(lease),
            Err(ClusterError::LeaseLost { .. }) => {
                tracing::error!(%grid, "lease lost: the grid's actors stop");
                drop_grid(supervisor, node, &grid).await;
            }
            Err(err) => tracing::warn!(%grid, error = %err, "lease renewal failed; retried"),
        }
    }
}

async fn drop_grid(
    supervisor: &Addr<Supervisor>,
    node: &Arc<ClusterNode>,
    grid: &str,
) -> Option<crate::cluster::owned::OwnedGrid> {
    let owned = node.owned.remove(grid);
    let id = grid.to_owned();
    if let Err(err) = supervisor.send(Exec::new(move |s| s.drop_owned_grid(&id))).await {
        tracing::warn!(%grid, error = %err, "supervisor gone while dropping a grid");
    }
    owned
}

/// What the takeover loop knows of free grids: when it last listed the lease bucket (and the
/// grids held then), and since when it has seen each grid free.
#[derive(Default)]
struct FreeGrids {
    listed: Option<(Instant, std::collections::HashSet<String>)>,
    since: HashMap<String, Instant>,
}

/// How long a grid must stay free before the node placement ranks second for it takes it (the
/// third waits twice as long, and so on): the first choice is live but has not taken it (its
/// loads fail, it is stuck), and the grid must not stay unserved.
fn second_choice_grace(ttl: Duration) -> Duration {
    ttl * 3
}

/// Whether a node placement ranks `rank` (0: first) for a grid free for `free_for` takes it.
fn due(rank: usize, free_for: Duration, grace: Duration) -> bool {
    let waits = u32::try_from(rank).map_or(Duration::MAX, |rank| grace.saturating_mul(rank));
    free_for >= waits
}

/// Takes the free grids placement ranks this node first for among the live nodes, and those it
/// ranks lower for that have stayed free for `second_choice_grace` per rank. `held_elsewhere`
/// remembers grids a take found held (for two TTLs); `free_since` when each grid not held was
/// first seen free.
async fn take_free(
    supervisor: &Addr<Supervisor>,
    node: &Arc<ClusterNode>,
    live: &[String],
    (held_elsewhere, free): (&mut HashMap<String, Instant>, &mut FreeGrids),
) -> Result<(), ClusterError> {
    let grids = supervisor
        .send(Exec::new(|s| s.grids_to_load()))
        .await
        .map_err(|err| ClusterError::Unavailable(format!("supervisor: {err}")))?;
    let now = Instant::now();
    held_elsewhere.retain(|_, until| *until > now);
    let grace = second_choice_grace(node.leases.ttl());
    // Only grids placed elsewhere first need the lease bucket's listing.
    let placed_elsewhere = grids.iter().any(|grid| {
        !node.owned.owns(&grid.grid_id)
            && placement::owner(&grid.grid_id, live).map(String::as_str) != Some(node.id())
    });
    // The bucket is listed once a lease TTL at most: grace is three of them.
    let stale = free.listed.as_ref().is_none_or(|(at, _)| now.duration_since(*at) >= grace / 3);
    if placed_elsewhere && stale {
        free.listed = Some((now, node.leases.held().await?));
    }
    let held = free.listed.as_ref().map(|(_, held)| held);
    let free_since = &mut free.since;
    free_since.retain(|grid, _| grids.iter().any(|g| &g.grid_id == grid));
    let mut tried = 0;
    for grid in grids {
        if node.owned.owns(&grid.grid_id) || held_elsewhere.contains_key(&grid.grid_id) {
            continue;
        }
        let rank = placement::ranked(&grid.grid_id, live, live.len())
            .iter()
            .position(|n| n.as_str() == node.id());
        let Some(rank) = rank else { continue };
        if rank > 0 {
            if held.is_some_and(|held| held.contains(&grid.grid_id)) {
                free_since.remove(&grid.grid_id);
                continue;
            }
            let since = *free_since.entry(grid.grid_id.clone()).or_insert(now);
            if !due(rank, now.duration_since(since), grace) {
                continue;
            }
            tracing::warn!(grid = %grid.grid_id, rank, "a grid its first choice has not taken: taking it");
        }
        tried += 1;
        if tried > TAKES_PER_ROUND {
            break;
        }
        free_since.remove(&grid.grid_id);
        match node.leases.acquire(&grid.grid_id).await? {
            Some(lease) => take_over(supervisor, node, grid, lease).await,
            None => {
                held_elsewhere.insert(grid.grid_id, now + node.leases.ttl() * 2);
            }
        }
    }
    Ok(())
}

/// Loads every branch of a grid whose lease this node just took, then starts its actors; on
/// a failure the lease is given back (another round tries again).
async fn take_over(
    supervisor: &Addr<Supervisor>,
    node: &Arc<ClusterNode>,
    grid: GridToLoad,
    lease: Lease,
) {
    let started = Instant::now();
    node.owned.insert(&grid.grid_id, lease.clone());
    let mut loaded = Vec::with_capacity(grid.branches.len());
    for branch in &grid.branches {
        match load_branch(node, &grid.grid_id, &lease, branch).await {
            Ok(branch) => loaded.push(branch),
            Err(err) => {
                tracing::error!(grid = %grid.grid_id, branch = %branch.branch_id, error = %err, "takeover failed; the lease is given back");
                node.owned.remove(&grid.grid_id);
                let _ = node.leases.release(lease).await;
                return;
            }
        }
    }
    for branch in &loaded {
        node.owned.add_publisher(&grid.grid_id, branch.publisher.clone());
    }
    let id = grid.grid_id.clone();
    match supervisor.send(Exec::new(move |s| s.start_taken_grid(&id, loaded))).await {
        Ok(true) => {}
        Ok(false) => {
            // Deleted while it loaded: nothing to own.
            if let Some(owned) = node.owned.remove(&grid.grid_id) {
                let _ = node.leases.release(owned.lease).await;
            }
            return;
        }
        Err(err) => {
            tracing::warn!(grid = %grid.grid_id, error = %err, "supervisor gone during a takeover");
            return;
        }
    }
    tracing::info!(grid = %grid.grid_id, ms = started.elapsed().as_millis() as u64, "takeover done");
}

/// Fences a branch, loads its image and replays its log up to the fence.
async fn load_branch(
    node: &Arc<ClusterNode>,
    grid: &str,
    lease: &Lease,
    branch: &BranchToLoad,
) -> Result<LoadedBranch, ClusterError> {
    let writer = node.log.fence(&branch_lease(lease, &branch.branch_id)).await?;
    let wait = node.link.settings.request_timeout;
    let image = node.images.latest(&branch.branch_id, wait * 4).await?;
    if image.is_none() && branch.copied {
        return Err(ClusterError::Unavailable(format!(
            "branch {} is a copy without an image in the cluster",
            branch.branch_id
        )));
    }
    let after = image.as_ref().map_or(0, |image| image.covers);
    let batches = logged_batches(node, &branch.branch_id, (after, writer.last)).await?;
    let to_build = branch.clone();
    let state =
        tokio::task::spawn_blocking(move || rebuild(&to_build, image, &batches))
            .await
            .map_err(|err| ClusterError::Unavailable(format!("rebuilding a branch: {err}")))??;
    Ok(LoadedBranch {
        branch_id: branch.branch_id.clone(),
        state,
        publisher: publisher_for(node, grid, writer),
    })
}

/// The whole batches a branch's log holds after sequence `after` up to `upto`; a batch cut short
/// by a fence (a takeover) was never acknowledged and is left out, as is one still being
/// written at `upto`.
async fn logged_batches(
    node: &ClusterNode,
    branch: &str,
    (after, upto): (u64, u64),
) -> Result<Vec<bytes::Bytes>, ClusterError> {
    let wait = node.link.settings.request_timeout;
    let mut batches = Vec::new();
    let mut pending = BytesMut::new();
    node.log
        .replay_each(branch, (after, upto), wait, |entry| match entry.kind {
            EntryKind::Fence => pending.clear(),
            EntryKind::Ops => {
                pending.extend_from_slice(&entry.payload);
                if !entry.more {
                    batches.push(pending.split().freeze());
                }
            }
        })
        .await?;
    Ok(batches)
}

/// How many times `read_copy` starts again when a newer image was stored while it read.
const READ_COPY_ATTEMPTS: usize = 4;

/// A copy of a branch another node serves, read from the cluster without its lease: its latest
/// image and the log after it, up to the log's last entry, so every write acknowledged before
/// the call is in it. The owner may store a newer image (and purge the log below it) while
/// this reads: the image's sequence is read again at the end and the read starts over when it
/// moved.
pub async fn read_copy(
    node: &ClusterNode,
    branch: &BranchToLoad,
) -> Result<GridState, ClusterError> {
    let wait = node.link.settings.request_timeout * 4;
    for _ in 0..READ_COPY_ATTEMPTS {
        let image = node.images.latest(&branch.branch_id, wait).await?;
        let after = image.as_ref().map_or(0, |image| image.covers);
        let upto = node.log.tail(&branch.branch_id).await?.map_or(0, |tail| tail.sequence);
        let batches = logged_batches(node, &branch.branch_id, (after, upto)).await?;
        if node.images.covers(&branch.branch_id, wait).await?.unwrap_or(0) != after {
            continue;
        }
        let to_build = branch.clone();
        return tokio::task::spawn_blocking(move || rebuild(&to_build, image, &batches))
            .await
            .map_err(|err| ClusterError::Unavailable(format!("rebuilding a branch: {err}")))?;
    }
    Err(ClusterError::Unavailable(format!(
        "branch {}: its image kept changing while it was read",
        branch.branch_id
    )))
}

/// The branch from its image (or empty) with the logged batches applied in order.
fn rebuild(
    branch: &BranchToLoad,
    image: Option<crate::cluster::snapshots::StoredImage>,
    batches: &[bytes::Bytes],
) -> Result<GridState, ClusterError> {
    let damaged =
        |what: String| ClusterError::Unavailable(format!("branch {}: {what}", branch.branch_id));
    let mut state = match image {
        Some(image) => {
            // Images are read in place: they want a 16-byte aligned buffer.
            let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(image.bytes.len());
            aligned.extend_from_slice(&image.bytes);
            drop(image);
            GridState::decode_image(&aligned, &[]).map_err(|e| damaged(format!("image: {e}")))?
        }
        None => GridState::empty(branch.identity),
    };
    for batch in batches {
        for entry in unframe(batch).map_err(damaged)? {
            let entry = WalEntry::decode(entry).map_err(|e| damaged(format!("entry: {e}")))?;
            for op in &entry.ops {
                state.apply(op);
            }
        }
    }
    crate::persist::recovery::ensure_default_view(&mut state, &branch.default_view_id);
    Ok(state)
}

/// The store of a new branch's first image: the log sequence it covers, or why it failed.
pub type FirstImage = tokio::sync::oneshot::Receiver<Result<u64, ClusterError>>;

impl Supervisor {
    /// In a cluster: a new copy's publisher (its log fenced) and the store of its first image,
    /// queued on it; nothing alone.
    pub(super) fn first_logged(
        &self,
        grid_id: &str,
        branch_id: &str,
        state: &GridState,
    ) -> CatalogResult<(Option<BranchPublisher>, Option<FirstImage>)> {
        let Some(publisher) = self.branch_publisher(grid_id, branch_id)? else {
            return Ok((None, None));
        };
        let image = Self::queue_first_image(&publisher, state);
        Ok((Some(publisher), Some(image)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_choices_wait_a_grace_per_rank() {
        let grace = Duration::from_secs(30);
        assert!(due(0, Duration::ZERO, grace));
        assert!(!due(1, Duration::from_secs(29), grace));
        assert!(due(1, Duration::from_secs(30), grace));
        assert!(!due(2, Duration::from_secs(59), grace));
        assert!(due(2, Duration::from_secs(60), grace));
        assert!(!due(usize::MAX, Duration::from_secs(1 << 40), grace));
    }
}
