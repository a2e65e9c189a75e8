//! The `Supervisor` actor: owns the catalogue in memory, makes every change set durable in the
//! WAL and then writes it to the `CatalogStore` (sled's materialized copy) before acknowledging
//! it, stores the catalogue's images (`journal`), starts and stops grid actors, and keeps the
//! route table and key ring that handlers read.
//!
//! Handlers send it `Exec` messages: a closure run on the supervisor's own thread with
//! exclusive access, so every catalogue change is serialized here.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, ArbiterHandle, AsyncContext, Context, Handler, Message, MessageResult};
use indexmap::IndexMap;

use super::error::{CatalogError, CatalogResult};
use super::model::{
    now_timestamp, Backup, Branch, Company, CompanyId, Database, FileMeta, Grid, MergeResolve,
    Project, ProjectId, Share, Task, TaskError, TaskStatus, Webhook,
};
use super::numbering::{self, Numbers, RawCatalog};
use super::routes::Routes;
use super::store::{load_all, CatalogChange, CatalogStore, EntityKind, StoreError};
use crate::auth::{ApiKey, KeyRing};
use crate::persist::durability::{wait_off_runtime, Durability, DurabilityError};

/// A catalogue image is stored after this many change sets (and on the snapshot interval, and
/// at shutdown).
const IMAGE_EVERY_CHANGES: u64 = 1000;

/// The blocking work of storing a catalogue image.
pub type ImageJob = Box<dyn FnOnce() -> Result<(), DurabilityError> + Send>;

/// The catalogue and everything the supervisor needs to change it.
pub struct Supervisor {
    pub(super) companies: IndexMap<CompanyId, Company>,
    pub(super) projects: IndexMap<ProjectId, Project>,
    /// The last company and project numbers handed out.
    pub(super) numbers: Numbers,
    pub(super) databases: IndexMap<String, Database>,
    pub(super) grids: IndexMap<String, Grid>,
    pub(super) branches: IndexMap<String, Branch>,
    pub(super) keys: IndexMap<String, ApiKey>,
    pub(super) tasks: IndexMap<String, Task>,
    pub(super) backups: IndexMap<String, Backup>,
    /// Share links by view id.
    pub(super) shares: IndexMap<String, Share>,
    /// The active share links' view ids by the SHA-256 of their token.
    pub(super) share_tokens: HashMap<[u8; 32], String>,
    /// Uploaded files by id.
    pub(super) files: IndexMap<String, FileMeta>,
    /// The last merge's cell choices by `MergeResolve::key`.
    pub(super) resolves: HashMap<String, MergeResolve>,
    /// Webhooks by id, in creation order.
    pub(super) webhooks: IndexMap<String, Webhook>,
    /// Each webhook's delivery log (the last `webhooks::LOG_LEN` attempts), oldest first.
    pub(super) webhook_logs:
        HashMap<String, std::collections::VecDeque<super::model::DeliveryAttempt>>,
    /// Translation memories by id, in creation order.
    pub(super) transmems: IndexMap<String, super::transmems::TransMem>,
    pub(super) store: Box<dyn CatalogStore>,
    pub(super) keyring: Arc<KeyRing>,
    pub(super) routes: Arc<Routes>,
    pub(super) durability: Arc<Durability>,
    /// Where uploaded files' bytes are (`files::files_dir`).
    pub(super) files_dir: PathBuf,
    arbiters: Vec<ArbiterHandle>,
    next_arbiter: usize,
    /// Change sets committed since the last catalogue image was taken.
    since_image: AtomicU64,
    /// Set when sled's copy missed a change set: no image is taken from it until a restart
    /// rebuilds it from the WAL.
    pub(super) tree_stale: AtomicBool,
    /// One catalogue image write at a time.
    image_lock: Arc<Mutex<()>>,
    /// An image started in the background has not ended: another is not queued behind it.
    image_pending: Arc<AtomicBool>,
    /// This node's cluster (`--cluster`); None when the server runs alone.
    pub(super) cluster: Option<Arc<crate::cluster::node::ClusterNode>>,
    /// This node's place in the cluster's catalogue log (`replica`); None when alone.
    pub(super) replica: Option<super::replica::Replica>,
}

/// Every stored entity of `kind`, by the key `key` gives it.
fn keyed<T: serde::de::DeserializeOwned, K, C: FromIterator<(K, T)>>(
    store: &dyn CatalogStore,
    kind: EntityKind,
    key: impl Fn(&T) -> K,
) -> Result<C, StoreError> {
    let all: Vec<T> = load_all(store, kind)?;
    Ok(all.into_iter().map(|entity| (key(&entity), entity)).collect())
}

impl Supervisor {
    /// Loads the catalogue from the store. Grid actors are started by `start_branches`.
    pub fn load(
        store: Box<dyn CatalogStore>,
        keyring: Arc<KeyRing>,
        routes: Arc<Routes>,
        arbiters: Vec<ArbiterHandle>,
        durability: Arc<Durability>,
        files_dir: PathBuf,
    ) -> Result<Supervisor, StoreError> {
        migrate_ids(store.as_ref())?;
        let companies: Vec<Company> = load_all(store.as_ref(), EntityKind::Company)?;
        let projects: Vec<Project> = load_all(store.as_ref(), EntityKind::Project)?;
        let keys: Vec<ApiKey> = load_all(store.as_ref(), EntityKind::Key)?;
        let stored: Vec<Numbers> = load_all(store.as_ref(), EntityKind::Sequence)?;
        let numbers = Numbers::new(
            stored.into_iter().next(),
            companies.iter().map(|c| c.id),
            projects.iter().map(|p| p.id),
        );
        for company in &companies {
            keyring.set_tier(company.id, company.tier);
        }
        for key in &keys {
            keyring.insert(key.clone());
        }
        let mut supervisor = Supervisor {
            companies: companies.into_iter().map(|c| (c.id, c)).collect(),
            projects: projects.into_iter().map(|p| (p.id, p)).collect(),
            numbers,
            databases: keyed(store.as_ref(), EntityKind::Database, |d: &Database| d.id.clone())?,
            grids: keyed(store.as_ref(), EntityKind::Grid, |g: &Grid| g.id.clone())?,
            branches: keyed(store.as_ref(), EntityKind::Branch, |b: &Branch| b.id.clone())?,
            keys: keys.into_iter().map(|k| (k.id.clone(), k)).collect(),
            tasks: keyed(store.as_ref(), EntityKind::Task, |t: &Task| t.id.clone())?,
            backups: keyed(store.as_ref(), EntityKind::Backup, |b: &Backup| b.id.clone())?,
            shares: keyed(store.as_ref(), EntityKind::Share, |s: &Share| s.view_id.clone())?,
            share_tokens: HashMap::new(),
            files: keyed(store.as_ref(), EntityKind::File, |f: &FileMeta| f.id.clone())?,
            resolves: keyed(store.as_ref(), EntityKind::MergeResolve, |r: &MergeResolve| {
                MergeResolve::key(&r.source_branch_id, &r.destination_branch_id)
            })?,
            webhooks: keyed(store.as_ref(), EntityKind::Webhook, |h: &Webhook| h.id.clone())?,
            webhook_logs: super::webhooks::load_logs(store.as_ref())?,
            transmems: keyed(
                store.as_ref(),
                EntityKind::TransMem,
                |m: &super::transmems::TransMem| m.id.clone(),
            )?,
            store,
            keyring,
            routes,
            durability,
            files_dir,
            arbiters,
            next_arbiter: 0,
            since_image: AtomicU64::new(0),
            tree_stale: AtomicBool::new(false),
            image_lock: Arc::default(),
            image_pending: Arc::default(),
            cluster: None,
            replica: None,
        };
        super::glossaries::load(supervisor.store.as_ref(), &supervisor.routes.glossaries)?;
        super::cdns::load_cdns(supervisor.store.as_ref(), &supervisor.routes)?;
        if let Some(data_dir) = supervisor.files_dir.parent() {
            super::cdns::sweep_files(data_dir, &supervisor.routes);
        }
        supervisor.sort_by_creation();
        supervisor.index_share_tokens();
        supervisor.grids.values().for_each(|g| supervisor.routes.publish_defaults(g));
        // A status such as `merging` belongs to a task the restart cut off.
        supervisor.grids.values_mut().for_each(|g| g.status = Default::default());
        supervisor.branches.values_mut().for_each(|b| b.status = Default::default());
        Ok(supervisor)
    }

    /// Tasks still running when the server stopped were cut off: they read failed. Called once
    /// the WAL is ready for new records (after any padding).
    pub fn fail_interrupted_tasks(&mut self) -> Result<(), StoreError> {
        self.fail_running_tasks(|_| true, "The server stopped while the task was running.")
            .map_err(|e| StoreError::Journal(e.to_string()))
    }

    /// In a cluster: fails the running tasks of other nodes that are not in `live` (they left
    /// the cluster, or were killed, while the task ran). Tasks of earlier versions, which do
    /// not name their node, are left.
    pub fn fail_orphaned_tasks(&mut self, live: &[String]) -> CatalogResult<()> {
        let Some(me) = self.cluster.as_ref().map(|c| c.id().to_owned()) else { return Ok(()) };
        self.fail_running_tasks(
            |task| orphaned(task, &me, live),
            "The node running the task stopped while the task was running.",
        )
    }

    /// In a cluster, at start: fails the tasks this node was running before it restarted.
    pub(super) fn fail_own_interrupted_tasks(&mut self) {
        let Some(me) = self.cluster.as_ref().map(|c| c.id().to_owned()) else { return };
        let failed = self.fail_running_tasks(
            |task| task.node.as_deref() == Some(me.as_str()),
            "The node running the task restarted while the task was running.",
        );
        if let Err(err) = failed {
            tracing::warn!(error = %err, "this node's interrupted tasks were not failed");
        }
    }

    /// Fails every running task `cut_off` picks, with code `interrupted` and `message`.
    fn fail_running_tasks(
        &mut self,
        cut_off: impl Fn(&Task) -> bool,
        message: &str,
    ) -> CatalogResult<()> {
        let failed: Vec<Task> = self
            .tasks
            .values()
            .filter(|t| t.status == TaskStatus::Running && cut_off(t))
            .map(|task| Task {
                status: TaskStatus::Failed,
                finished_time: Some(now_timestamp()),
                error: Some(TaskError {
                    code: "interrupted".to_owned(),
                    message: message.to_owned(),
                }),
                ..task.clone()
            })
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        let changes: Vec<CatalogChange> =
            failed.iter().map(|t| CatalogChange::put(EntityKind::Task, &t.id, t)).collect();
        self.commit(&changes)?;
        for task in failed {
            self.tasks.insert(task.id.clone(), task);
        }
        Ok(())
    }

    /// sled scans in key order; the API lists in creation order (ids for companies and
    /// projects, numbered in it).
    pub(super) fn sort_by_creation(&mut self) {
        self.companies.sort_keys();
        self.projects.sort_keys();
        self.projects.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.databases.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.grids.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.branches.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.keys.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.tasks.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.backups.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.webhooks.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.transmems.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
    }

    /// Makes a change set durable in the WAL, then writes it to sled's copy; memory is changed
    /// by the caller only after this succeeds. Blocks the supervisor for one WAL sync. In
    /// cluster mode the change set is first published to the catalogue's log (`replica`).
    pub(super) fn commit(&self, changes: &[CatalogChange]) -> CatalogResult<()> {
        if let Some(replica) = &self.replica {
            self.publish_change_set(replica, changes)?;
        }
        let appended =
            self.durability.wal.append(super::journal::encode_changes(changes)).map_err(|err| {
                tracing::error!(error = %err, "catalogue change refused by the WAL");
                CatalogError::NotLogged { what: "catalogue change", reason: err.to_string() }
            })?;
        let lsn = appended.lsn;
        wait_off_runtime(appended.durable).map_err(|err| {
            tracing::error!(error = %err, lsn, "catalogue change not made durable");
            CatalogError::NotWritten
        })?;
        if let Err(err) = self.store.apply_at(changes, lsn) {
            // The WAL holds the change: it is acknowledged, and the next start rebuilds sled's
            // copy; until then no image is taken from the stale copy.
            tracing::error!(error = %err, lsn, "writing sled's copy of the catalogue failed");
            self.tree_stale.store(true, Ordering::SeqCst);
        }
        if self.since_image.fetch_add(1, Ordering::SeqCst) + 1 >= IMAGE_EVERY_CHANGES {
            self.store_image_in_background();
        }
        Ok(())
    }

    /// Takes the catalogue's image (its entries and position, read on this thread, the only
    /// writer) and returns the blocking work (it must not run inside the async runtime) that
    /// stores it; `None` while sled's copy is stale.
    pub fn image_job(&self) -> Option<ImageJob> {
        if self.tree_stale.load(Ordering::SeqCst) {
            tracing::error!("sled's catalogue copy is stale; no catalogue image until a restart");
            return None;
        }
        // No catalogue change lies between the tree's position and the WAL's end (this thread
        // is the catalogue's only writer), so the image may cover up to the WAL's end and its
        // floor move with the branches' records.
        let wal_end = self.durability.wal.last_lsn();
        if let Err(err) = self.store.apply_at(&[], wal_end) {
            tracing::error!(error = %err, "moving sled's catalogue position failed");
            return None;
        }
        let (bytes, lsn) = match super::journal::image_payload(self.store.as_ref()) {
            Ok(payload) => payload,
            Err(err) => {
                tracing::error!(error = %err, "reading the catalogue for its image failed");
                return None;
            }
        };
        self.since_image.store(0, Ordering::SeqCst);
        let (durability, lock) = (self.durability.clone(), self.image_lock.clone());
        Some(Box::new(move || {
            let _one_at_a_time = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Only what is durable in the WAL may be covered by an image.
            durability.wal.sync_now()?.wait()?;
            let stored = super::journal::store_image(&durability, bytes, lsn);
            match &stored {
                Ok(()) => tracing::debug!(lsn, "catalogue image stored"),
                Err(err) => {
                    tracing::error!(lsn, error = %err, "storing the catalogue image failed")
                }
            }
            stored
        }))
    }

    /// Stores an image on a blocking thread, not holding up the supervisor.
    fn store_image_in_background(&self) {
        if self.image_pending.swap(true, Ordering::SeqCst) {
            return;
        }
        match self.image_job() {
            Some(job) => {
                // Cleared when the job ends, panics included.
                let pending = ClearOnDrop(Arc::clone(&self.image_pending));
                tokio::task::spawn_blocking(move || {
                    let _pending = pending;
                    job()
                });
            }
            None => self.image_pending.store(false, Ordering::SeqCst),
        }
    }

    /// The arbiter the next grid actor runs on (round robin, one per core).
    pub(super) fn next_arbiter(&mut self) -> ArbiterHandle {
        let handle = self.arbiters[self.next_arbiter % self.arbiters.len()].clone();
        self.next_arbiter += 1;
        handle
    }

    pub fn keyring(&self) -> &Arc<KeyRing> {
        &self.keyring
    }
}

/// Brings a catalogue written with string company and project ids to integer ids, in one
/// atomic write (`numbering::migrate`); a current catalogue is left untouched.
fn migrate_ids(store: &dyn CatalogStore) -> Result<(), StoreError> {
    let mut raw = RawCatalog::new();
    for kind in std::iter::once(EntityKind::Company).chain(numbering::OWNED_KINDS) {
        raw.insert(kind, store.scan(kind)?);
    }
    if let Some(changes) = numbering::migrate(&raw) {
        store.apply(&changes)?;
        tracing::info!(changes = changes.len(), "migrated company and project ids to integers");
    }
    Ok(())
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let policy = self.durability.policy;
        ctx.run_interval(policy.every, |act, _| {
            if act.since_image.load(Ordering::SeqCst) > 0 {
                act.store_image_in_background();
            }
        });
        // Also when only branches wrote: the catalogue's floor must not hold the WAL back. An
        // image is small, so its lag is checked often (a bulk load writes 25 MB/s of WAL).
        let check = (policy.every / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
        ctx.run_interval(check, |act, _| {
            if act.durability.floor_lags(super::journal::CATALOG_IMAGE_KEY) {
                act.store_image_in_background();
            }
        });
    }
}

/// Clears its flag when dropped.
struct ClearOnDrop(Arc<AtomicBool>);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// A closure run on the supervisor with exclusive access to the catalogue.
pub struct Exec<R>(Box<dyn FnOnce(&mut Supervisor) -> R + Send>);

impl<R> Exec<R> {
    pub fn new(f: impl FnOnce(&mut Supervisor) -> R + Send + 'static) -> Exec<R> {
        Exec(Box::new(f))
    }
}

impl<R: Send + 'static> Message for Exec<R> {
    type Result = R;
}

impl<R: Send + 'static> Handler<Exec<R>> for Supervisor {
    type Result = MessageResult<Exec<R>>;

    fn handle(&mut self, msg: Exec<R>, _: &mut Context<Self>) -> Self::Result {
        let result = (msg.0)(self);
        // Other nodes' change sets a commit of this operation caught up with.
        self.apply_pending();
        MessageResult(result)
    }
}

/// Whether `task` runs on a node other than `me` that is not `live`.
fn orphaned(task: &Task, me: &str, live: &[String]) -> bool {
    task.node.as_deref().is_some_and(|node| node != me && !live.iter().any(|l| l == node))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(node: Option<&str>) -> Task {
        Task {
            id: "t".into(),
            company_id: 1,
            view_id: None,
            project_id: None,
            database_id: None,
            grid_id: None,
            kind: "import".into(),
            status: TaskStatus::Running,
            progress: 0,
            created_time: now_timestamp(),
            finished_time: None,
            error: None,
            creates_branch: None,
            node: node.map(str::to_owned),
        }
    }

    #[test]
    fn a_task_is_orphaned_when_its_node_is_another_that_is_gone() {
        let live = vec!["a".to_owned(), "b".to_owned()];
        assert!(orphaned(&task(Some("c")), "a", &live));
        assert!(!orphaned(&task(Some("b")), "a", &live));
        // This node's own tasks are its own business (failed at its start), and tasks that do
        // not name a node are left.
        assert!(!orphaned(&task(Some("a")), "a", &[]));
        assert!(!orphaned(&task(None), "a", &[]));
    }
}
